// SCM_RIGHTS over Unix-domain SEQPACKET sockets. Every descriptor made here is close-on-exec, and
// received ones too (MSG_CMSG_CLOEXEC), so a child the application forks keeps no heap segment.
#include "backend/host/fd_passing.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace mori::backend::host {
namespace {

Status errno_error(const char* call) {
  return Status::error(std::string(call) + ": " + std::strerror(errno));
}

// The address of an abstract socket: sun_path starts with a NUL and the length, not a terminator,
// ends the name.
Status abstract_address(const std::string& name, sockaddr_un* addr, socklen_t* length) {
  *addr = {};
  addr->sun_family = AF_UNIX;
  if (name.size() + 1 > sizeof addr->sun_path)
    return Status::error("socket name \"" + name + "\" is too long");
  std::memcpy(addr->sun_path + 1, name.data(), name.size());
  *length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  return {};
}

// Waits for `events` on `fd` until `deadline`.
Status wait_for(int fd, short events, Deadline deadline) {
  for (;;) {
    const auto left =
        std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return Status::error("timed out");
    pollfd p{fd, events, 0};
    const int n = poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1 << 30)));
    if (n < 0 && errno != EINTR) return errno_error("poll");
    if (n > 0) return {};  // readiness includes POLLHUP and POLLERR: the next call reports them
  }
}

Status new_socket(UniqueFd* out) {
  const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno_error("socket");
  out->reset(fd);
  return {};
}

}  // namespace

void UniqueFd::reset(int fd) {
  if (fd_ >= 0) close(fd_);
  fd_ = fd;
}

Status listen_abstract(const std::string& name, int backlog, UniqueFd* out) {
  sockaddr_un addr;
  socklen_t length = 0;
  MORI_TRY(abstract_address(name, &addr, &length));
  UniqueFd fd;
  MORI_TRY(new_socket(&fd));
  if (bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), length) != 0)
    return errno_error("bind");
  if (listen(fd.get(), backlog) != 0) return errno_error("listen");
  *out = std::move(fd);
  return {};
}

Status connect_abstract(const std::string& name, UniqueFd* out) {
  sockaddr_un addr;
  socklen_t length = 0;
  MORI_TRY(abstract_address(name, &addr, &length));
  UniqueFd fd;
  MORI_TRY(new_socket(&fd));
  // A listener with room in its backlog completes the connection before accepting it, so this
  // does not wait for the peer.
  int rc;
  do {
    rc = connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), length);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) return errno_error("connect");
  *out = std::move(fd);
  return {};
}

Status accept_before(int listener, Deadline deadline, UniqueFd* out) {
  for (;;) {
    MORI_TRY(wait_for(listener, POLLIN, deadline));
    const int fd = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) {
      out->reset(fd);
      return {};
    }
    if (errno != EINTR && errno != EAGAIN && errno != ECONNABORTED) return errno_error("accept");
  }
}

Status send_message(int socket, const void* data, size_t bytes, int fd, Deadline deadline) {
  iovec iov{const_cast<void*>(data), bytes};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (fd >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(cmsg), &fd, sizeof fd);
  }
  for (;;) {
    MORI_TRY(wait_for(socket, POLLOUT, deadline));
    const ssize_t n = sendmsg(socket, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n == static_cast<ssize_t>(bytes)) return {};
    if (n >= 0) return Status::error("sendmsg sent a partial message");
    if (errno == EPIPE || errno == ECONNRESET) return Status::error("connection closed");
    if (errno != EINTR && errno != EAGAIN) return errno_error("sendmsg");
  }
}

Status recv_message(int socket, void* data, size_t bytes, Deadline deadline, UniqueFd* fd) {
  fd->reset();
  iovec iov{data, bytes};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  for (;;) {
    MORI_TRY(wait_for(socket, POLLIN, deadline));
    n = recvmsg(socket, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (n >= 0) break;
    if (errno == ECONNRESET) return Status::error("connection closed");
    if (errno != EINTR && errno != EAGAIN) return errno_error("recvmsg");
  }
  // Take ownership of whatever arrived before judging the message, so that nothing leaks.
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int received;
      std::memcpy(&received, CMSG_DATA(c) + i * sizeof(int), sizeof received);
      if (!*fd) {
        fd->reset(received);
      } else {
        close(received);
      }
    }
  }
  if (n == 0) return Status::error("connection closed");
  if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) return Status::error("message too long");
  if (n != static_cast<ssize_t>(bytes)) {
    return Status::error("message of " + std::to_string(n) + " bytes, expected " +
                         std::to_string(bytes));
  }
  return {};
}

}  // namespace mori::backend::host
