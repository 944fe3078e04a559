#include "backend/common/peer_fd.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace mori::backend {

Status dup_peer_fd(pid_t pid, int fd, const std::string& what, int* out) {
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) return Status::error(what + ": pidfd_open: " + std::strerror(errno));
  const int copy = static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, fd, 0));
  const int err = errno;
  close(pidfd);
  if (copy < 0) return Status::error(what + ": pidfd_getfd: " + std::strerror(err));
  *out = copy;
  return {};
}

}  // namespace mori::backend
