// IPC handles of the stand-in libamdhip64: a handle names the owner's process and the memfd of the
// allocation; a peer duplicates that descriptor with pidfd_getfd and maps it.
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <mutex>

#include "standin.hpp"

using standin::ret;

namespace {

constexpr uint32_t kMagic = 0x6869706d;  // "mpih"

struct Handle {
  uint32_t magic;
  int32_t pid;
  int32_t fd;
  uint32_t reserved;
  uint64_t size;    // of the allocation (clr's psize)
  uint64_t offset;  // of the pointer given to hipIpcGetMemHandle within it (clr's poffset)
};
static_assert(sizeof(Handle) <= sizeof(hipIpcMemHandle_t));

std::mutex mu;
// Imported mappings: the pointer returned -> (mapping start, length).
std::map<void*, std::pair<char*, size_t>>& opened() {
  static std::map<void*, std::pair<char*, size_t>> m;
  return m;
}

}  // namespace

extern "C" {

hipError_t hipIpcGetMemHandle(hipIpcMemHandle_t* handle, void* ptr) {
  // clr hip_memory.cpp, hipIpcGetMemHandle: null arguments, or memory IpcCreate does not know,
  // are hipErrorInvalidValue.
  if (!handle || !ptr) return ret(hipErrorInvalidValue);
  standin::Allocation a;
  if (!standin::find_allocation(ptr, &a) || !a.device) return ret(hipErrorInvalidValue);
  Handle h{kMagic, static_cast<int32_t>(getpid()),
           a.fd,   0,
           a.size, static_cast<uint64_t>(static_cast<char*>(ptr) - a.base)};
  std::memset(handle, 0, sizeof *handle);
  std::memcpy(handle, &h, sizeof h);
  return hipSuccess;
}

hipError_t hipIpcOpenMemHandle(void** ptr, hipIpcMemHandle_t handle, unsigned int flags) {
  // clr hip_memory.cpp, hipIpcOpenMemHandle: flags other than hipIpcMemLazyEnablePeerAccess and a
  // zero-sized handle are hipErrorInvalidValue; a handle of the calling process's own allocation
  // is hipErrorInvalidContext; a handle IpcAttach cannot map is hipErrorInvalidDevicePointer.
  if (!ptr || flags != hipIpcMemLazyEnablePeerAccess) return ret(hipErrorInvalidValue);
  Handle h;
  std::memcpy(&h, &handle, sizeof h);
  if (h.magic != kMagic || h.size == 0) return ret(hipErrorInvalidValue);
  if (h.pid == getpid()) return ret(hipErrorInvalidContext);
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, h.pid, 0));
  if (pidfd < 0) return ret(hipErrorInvalidDevicePointer);
  const int fd = static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, h.fd, 0));
  close(pidfd);
  if (fd < 0) return ret(hipErrorInvalidDevicePointer);
  void* p = mmap(nullptr, h.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return ret(hipErrorInvalidDevicePointer);
  *ptr = static_cast<char*>(p) + h.offset;
  std::lock_guard lock(mu);
  opened()[*ptr] = {static_cast<char*>(p), h.size};
  return hipSuccess;
}

hipError_t hipIpcCloseMemHandle(void* ptr) {
  std::lock_guard lock(mu);
  auto it = opened().find(ptr);
  if (it == opened().end()) return ret(hipErrorInvalidValue);
  munmap(it->second.first, it->second.second);
  opened().erase(it);
  return hipSuccess;
}

}  // extern "C"
