#include "bootstrap/socket.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

namespace mori::bootstrap {

Fd& Fd::operator=(Fd&& other) noexcept {
  if (this != &other) reset(other.release());
  return *this;
}

int Fd::release() {
  const int fd = fd_;
  fd_ = -1;
  return fd;
}

void Fd::reset(int fd) {
  // Linux closes the descriptor even when close() reports EINTR, so it is never retried.
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

int Deadline::poll_ms() const {
  const auto left = end_ - Clock::now();
  if (left <= Clock::duration::zero()) return 0;
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
  return static_cast<int>(std::min<decltype(ms)>(ms, INT_MAX));
}

int poll_until(pollfd* fds, nfds_t count, const Deadline& deadline) {
  for (;;) {
    const int ready = ::poll(fds, count, deadline.poll_ms());
    if (ready >= 0 || errno != EINTR) return ready;
  }
}

namespace {

bool is_disconnect(int error) {
  return error == ECONNRESET || error == EPIPE || error == ENOTCONN || error == ECONNABORTED;
}

IoResult wait_for(int fd, short events, const Deadline& deadline) {
  pollfd p{fd, events, 0};
  const int ready = poll_until(&p, 1, deadline);
  if (ready < 0) return {Io::kError, errno};
  if (ready == 0) return {Io::kTimeout, 0};
  // POLLHUP or POLLERR: the next send or recv reports what happened.
  return {};
}

}  // namespace

IoResult send_all(int fd, const void* data, size_t n, const Deadline& deadline) {
  auto* at = static_cast<const uint8_t*>(data);
  while (n > 0) {
    const ssize_t sent = ::send(fd, at, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent > 0) {
      at += sent;
      n -= static_cast<size_t>(sent);
      continue;
    }
    if (sent < 0 && errno == EINTR) continue;
    if (sent < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
      return {is_disconnect(errno) ? Io::kClosed : Io::kError, errno};
    }
    if (IoResult r = wait_for(fd, POLLOUT, deadline); !r.ok()) return r;
  }
  return {};
}

IoResult recv_some(int fd, void* data, size_t n, size_t* got) {
  for (;;) {
    const ssize_t read = ::recv(fd, data, n, MSG_DONTWAIT);
    if (read > 0) {
      *got += static_cast<size_t>(read);
      return {};
    }
    if (read == 0) return {Io::kClosed, 0};
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return {};
    return {is_disconnect(errno) ? Io::kClosed : Io::kError, errno};
  }
}

IoResult recv_all(int fd, void* data, size_t n, const Deadline& deadline) {
  auto* at = static_cast<uint8_t*>(data);
  size_t got = 0;
  while (got < n) {
    const size_t before = got;
    if (IoResult r = recv_some(fd, at + got, n - got, &got); !r.ok()) return r;
    if (got == before) {
      if (IoResult r = wait_for(fd, POLLIN, deadline); !r.ok()) return r;
    }
  }
  return {};
}

SocketAddress to_socket_address(const UniqueIdFields& where) {
  SocketAddress out;
  if (where.family == AddressFamily::kIpv4) {
    auto* in = reinterpret_cast<sockaddr_in*>(&out.storage);
    in->sin_family = AF_INET;
    in->sin_port = htons(where.port);
    std::memcpy(&in->sin_addr, where.address.data(), 4);
    out.length = sizeof(sockaddr_in);
  } else {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&out.storage);
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(where.port);
    std::memcpy(&in6->sin6_addr, where.address.data(), 16);
    out.length = sizeof(sockaddr_in6);
  }
  return out;
}

namespace {

Fd new_socket(const SocketAddress& address) {
  return Fd(::socket(address.storage.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
}

// The bootstrap sends small messages and waits for each answer; Nagle's delay would only add
// latency.
void set_nodelay(int fd) {
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

}  // namespace

Status listen_on(const UniqueIdFields& where, Fd* out, uint16_t* port) {
  const SocketAddress address = to_socket_address(where);
  auto failed = [&](const char* step) {
    return Status::error("bootstrap: cannot listen on " + format_endpoint(where) + ": " + step +
                         ": " + std::strerror(errno));
  };
  Fd fd = new_socket(address);
  if (!fd.valid()) return failed("socket");
  // Rank 0 may rebind the port of an ID whose creator has exited; TIME_WAIT must not block it.
  const int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&address.storage), address.length) != 0) {
    return failed("bind");
  }
  if (::listen(fd.get(), SOMAXCONN) != 0) return failed("listen");
  sockaddr_storage bound{};
  socklen_t length = sizeof(bound);
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&bound), &length) != 0) {
    return failed("getsockname");
  }
  *port = ntohs(bound.ss_family == AF_INET ? reinterpret_cast<sockaddr_in*>(&bound)->sin_port
                                           : reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port);
  *out = std::move(fd);
  return {};
}

IoResult connect_once(const SocketAddress& address, const Deadline& deadline, Fd* out) {
  Fd fd = new_socket(address);
  if (!fd.valid()) return {Io::kError, errno};
  const auto* sa = reinterpret_cast<const sockaddr*>(&address.storage);
  if (::connect(fd.get(), sa, address.length) != 0) {
    // After EINTR a non-blocking connect carries on in the background, as after EINPROGRESS.
    if (errno != EINPROGRESS && errno != EINTR) return {Io::kError, errno};
    if (IoResult r = wait_for(fd.get(), POLLOUT, deadline); !r.ok()) return r;
    int error = 0;
    socklen_t length = sizeof(error);
    if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &error, &length) != 0)
      return {Io::kError, errno};
    if (error != 0) return {Io::kError, error};
  }
  set_nodelay(fd.get());
  *out = std::move(fd);
  return {};
}

IoResult accept_one(int listener, Fd* out) {
  out->reset();
  for (;;) {
    const int fd = ::accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      set_nodelay(fd);
      out->reset(fd);
      return {};
    }
    // ECONNABORTED and EPROTO concern one connection that is already gone; look for the next.
    if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return {};
    return {Io::kError, errno};
  }
}

}  // namespace mori::bootstrap
