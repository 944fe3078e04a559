// Sockets for the TCP bootstrap: an owning fd, a deadline, and send/receive/connect on non-blocking
// sockets that wait with poll() for at most the deadline's remaining time. Nothing here blocks
// without a deadline.
#pragma once

#include <poll.h>
#include <sys/socket.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "bootstrap/unique_id.hpp"
#include "mori/status.hpp"

namespace mori::bootstrap {

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd(Fd&& other) noexcept : fd_(other.release()) {}
  Fd& operator=(Fd&& other) noexcept;
  ~Fd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release();
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;
  explicit Deadline(std::chrono::milliseconds budget) : end_(Clock::now() + budget) {}
  Deadline later_by(std::chrono::milliseconds extra) const { return Deadline(end_ + extra); }
  bool expired() const { return Clock::now() >= end_; }
  // For poll(): the remaining time rounded up to whole milliseconds, 0 once expired.
  int poll_ms() const;

 private:
  explicit Deadline(Clock::time_point end) : end_(end) {}
  Clock::time_point end_;
};

// How one socket operation ended. kClosed covers an orderly close and a reset, which both mean the
// peer is gone.
enum class Io { kOk, kTimeout, kClosed, kError };
struct IoResult {
  Io kind = Io::kOk;
  int error = 0;  // errno, for kError
  bool ok() const { return kind == Io::kOk; }
};

// poll() that restarts after EINTR with the time that remains. Returns poll's result; 0 means the
// deadline passed.
int poll_until(pollfd* fds, nfds_t count, const Deadline& deadline);

IoResult send_all(int fd, const void* data, size_t n, const Deadline& deadline);
IoResult recv_all(int fd, void* data, size_t n, const Deadline& deadline);
// One non-blocking receive: adds what is available now to *got (possibly nothing).
IoResult recv_some(int fd, void* data, size_t n, size_t* got);

// The socket address a unique ID names.
struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;
};
SocketAddress to_socket_address(const UniqueIdFields& where);

// A non-blocking listener on `where` (port 0 picks a free port); *port receives the bound port.
Status listen_on(const UniqueIdFields& where, Fd* out, uint16_t* port);

// One connection attempt, waiting at most until `deadline`. On kError, `error` is the reason the
// attempt failed (ECONNREFUSED while rank 0 is not yet listening), which the caller may retry.
IoResult connect_once(const SocketAddress& address, const Deadline& deadline, Fd* out);

// Accepts one pending connection, non-blocking. Leaves *out invalid when none is pending.
IoResult accept_one(int listener, Fd* out);

}  // namespace mori::bootstrap
