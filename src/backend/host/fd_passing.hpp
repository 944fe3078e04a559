// Handing file descriptors to other processes of this node: Unix-domain SOCK_SEQPACKET sockets in
// the abstract namespace, with the descriptor attached as SCM_RIGHTS.
//
// The abstract namespace leaves no file behind when a process dies, and SEQPACKET keeps message
// boundaries, so every message arrives with exactly the descriptor sent with it. Each wait has a
// deadline; the errors are short ("timed out", "connection closed", a strerror) for the caller to
// put in context, such as which peer it was waiting for.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <utility>

#include "mori/status.hpp"

namespace mori::backend::host {

using Deadline = std::chrono::steady_clock::time_point;

// Owns one file descriptor and closes it when dropped.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    reset(std::exchange(other.fd_, -1));
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

// `name` is the abstract socket name without its leading NUL byte.
Status listen_abstract(const std::string& name, int backlog, UniqueFd* out);
Status connect_abstract(const std::string& name, UniqueFd* out);
Status accept_before(int listener, Deadline deadline, UniqueFd* out);

// One message of `bytes` from `data`, with `fd` attached unless it is negative.
Status send_message(int socket, const void* data, size_t bytes, int fd, Deadline deadline);
// One message of exactly `bytes` into `data`; *fd receives the attached descriptor, or is left
// empty when none came.
Status recv_message(int socket, void* data, size_t bytes, Deadline deadline, UniqueFd* fd);

}  // namespace mori::backend::host
