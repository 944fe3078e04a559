// PeLocks (pe_locks.hpp): byte-range OFD locks on one shared file.
#include "backend/host/softnic/pe_locks.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace mori::softnic {
namespace {

bool set_lock(int fd, int pe, short type, std::string* why) {
  struct flock fl{};
  fl.l_type = type;
  fl.l_whence = SEEK_SET;
  fl.l_start = pe;
  fl.l_len = 1;  // l_pid stays 0, as F_OFD_* requires
  while (fcntl(fd, F_OFD_SETLKW, &fl) != 0) {
    if (errno == EINTR) continue;
    if (why)
      *why = "locking PE " + std::to_string(pe) + "'s atomics failed: " + std::strerror(errno);
    return false;
  }
  return true;
}

}  // namespace

PeLocks::~PeLocks() {
  if (fd_ >= 0) ::close(fd_);
}

Status PeLocks::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0)
    return Status::error("software NIC: opening the atomics lock file " + path +
                         " failed: " + std::strerror(errno));
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
  return {};
}

bool PeLocks::lock(int pe, std::string* why) const { return set_lock(fd_, pe, F_WRLCK, why); }

void PeLocks::unlock(int pe) const { set_lock(fd_, pe, F_UNLCK, nullptr); }

}  // namespace mori::softnic
