// Status: the outcome of a host-side operation, ok or a one-line reason. Host API calls never
// exit() or assert; they return a Status (or an error code whose reason mori::shmem::last_error()
// gives).
#pragma once

#include <string>
#include <utility>

namespace mori {

class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status error(std::string message) { return Status(std::move(message)); }
  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  const std::string& message() const { return message_; }

 private:
  explicit Status(std::string message) : failed_(true), message_(std::move(message)) {}
  bool failed_ = false;
  std::string message_;
};

// Returns early from the enclosing function when `expr` yields a failed Status.
#define MORI_TRY(expr)                         \
  do {                                         \
    ::mori::Status mori_try_s_ = expr;         \
    if (!mori_try_s_.ok()) return mori_try_s_; \
  } while (0)

}  // namespace mori
