// The virtual memory management API of the stand-in libamdhip64: physical allocations are memfds,
// reservations are PROT_NONE address space, a mapping is mmap MAP_FIXED of the memfd, and access
// is mprotect. Shareable handles are descriptors (hipMemHandleTypePosixFileDescriptor), as ROCm's
// dmabuf descriptors are.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <mutex>

#include "standin.hpp"

struct ihipMemGenericAllocationHandle {
  int fd;
  size_t size;
};

using standin::ret;

namespace {

// The stand-in's HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_GRANULE (MORI_HIP_STANDIN_VMM_GRANULARITY).
size_t granularity() {
  static const size_t g = [] {
    const char* v = std::getenv("MORI_HIP_STANDIN_VMM_GRANULARITY");
    return v && *v ? std::strtoull(v, nullptr, 0) : size_t{2} << 20;
  }();
  return g;
}

bool on_device(const hipMemLocation& l) {
  return l.type == hipMemLocationTypeDevice && l.id >= 0 && l.id < standin::device_count();
}

std::mutex mu;
std::map<uintptr_t, size_t>& reservations() {
  static std::map<uintptr_t, size_t> m;
  return m;
}
bool inside_reservation(const void* p, size_t size) {
  const auto at = reinterpret_cast<uintptr_t>(p);
  std::lock_guard lock(mu);
  auto it = reservations().upper_bound(at);
  if (it == reservations().begin()) return false;
  --it;
  return at + size <= it->first + it->second && at + size > at;
}

}  // namespace

extern "C" {

// clr hip_vm.cpp, hipMemGetAllocationGranularity: only pinned device memory, and only the minimum
// or recommended granularity (else hipErrorInvalidValue); both are the pool's allocation granule.
hipError_t hipMemGetAllocationGranularity(size_t* out, const hipMemAllocationProp* prop,
                                          hipMemAllocationGranularity_flags option) {
  if (!out || !prop || prop->type != hipMemAllocationTypePinned || !on_device(prop->location) ||
      (option != hipMemAllocationGranularityMinimum &&
       option != hipMemAllocationGranularityRecommended))
    return ret(hipErrorInvalidValue);
  *out = granularity();
  return hipSuccess;
}

// clr hip_vm.cpp, hipMemCreate: pinned device memory with flags 0 (else hipErrorInvalidValue);
// handle types other than none and POSIX descriptors are hipErrorNotSupported; a size that is not
// a multiple of the device's allocation alignment is hipErrorInvalidValue (here the granularity).
hipError_t hipMemCreate(hipMemGenericAllocationHandle_t* handle, size_t size,
                        const hipMemAllocationProp* prop, unsigned long long flags) {
  if (!handle || size == 0 || flags != 0 || !prop || prop->type != hipMemAllocationTypePinned ||
      !on_device(prop->location))
    return ret(hipErrorInvalidValue);
  if (prop->requestedHandleType != hipMemHandleTypeNone &&
      prop->requestedHandleType != hipMemHandleTypePosixFileDescriptor)
    return ret(hipErrorNotSupported);
  if (size % granularity() != 0) return ret(hipErrorInvalidValue);
  if (hipError_t e = standin::capture_violation(hipErrorStreamCaptureUnsupported)) return e;
  const int fd = memfd_create("hip.vmm", MFD_CLOEXEC);
  if (fd < 0) return ret(hipErrorOutOfMemory);
  if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
    close(fd);
    return ret(hipErrorOutOfMemory);
  }
  *handle = new ihipMemGenericAllocationHandle{fd, size};
  return hipSuccess;
}

hipError_t hipMemRelease(hipMemGenericAllocationHandle_t handle) {
  if (!handle) return ret(hipErrorInvalidValue);
  close(handle->fd);  // mappings keep the memory
  delete handle;
  return hipSuccess;
}

// clr hip_vm.cpp, hipMemExportToShareableHandle; rocclr rocdevice.cpp ExportShareableVMMHandle
// writes the descriptor as an int at shareableHandle.
hipError_t hipMemExportToShareableHandle(void* shareable, hipMemGenericAllocationHandle_t handle,
                                         hipMemAllocationHandleType type,
                                         unsigned long long flags) {
  if (flags != 0 || !handle || !shareable || type != hipMemHandleTypePosixFileDescriptor)
    return ret(hipErrorInvalidValue);
  const int fd = dup(handle->fd);
  if (fd < 0) return ret(hipErrorInvalidValue);
  *static_cast<int*>(shareable) = fd;
  return hipSuccess;
}

// clr hip_vm.cpp, hipMemImportFromShareableHandle; rocclr rocdevice.cpp ImportShareableHSAHandle
// reads the descriptor as an int at osHandle (a pointer to it, not its value).
hipError_t hipMemImportFromShareableHandle(hipMemGenericAllocationHandle_t* handle, void* os_handle,
                                           hipMemAllocationHandleType type) {
  if (!handle || !os_handle || type != hipMemHandleTypePosixFileDescriptor)
    return ret(hipErrorInvalidValue);
  const int fd = dup(*static_cast<int*>(os_handle));
  if (fd < 0) return ret(hipErrorInvalidValue);
  const off_t size = lseek(fd, 0, SEEK_END);
  if (size <= 0) {
    close(fd);
    return ret(hipErrorInvalidValue);
  }
  *handle = new ihipMemGenericAllocationHandle{fd, static_cast<size_t>(size)};
  return hipSuccess;
}

// clr hip_vm.cpp, hipMemAddressReserve: flags 0 and a size that is a multiple of the granularity
// (else hipErrorInvalidValue).
hipError_t hipMemAddressReserve(void** ptr, size_t size, size_t alignment, void* addr,
                                unsigned long long flags) {
  if (!ptr || flags != 0 || size == 0 || size % granularity() != 0)
    return ret(hipErrorInvalidValue);
  const size_t align = alignment > granularity() ? alignment : granularity();
  void* range =
      mmap(addr, size + align, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (range == MAP_FAILED) return ret(hipErrorOutOfMemory);
  const auto at = reinterpret_cast<uintptr_t>(range);
  const uintptr_t start = (at + align - 1) / align * align;
  if (start > at) munmap(range, start - at);
  if (start + size < at + size + align)
    munmap(reinterpret_cast<void*>(start + size), at + size + align - (start + size));
  std::lock_guard lock(mu);
  reservations()[start] = size;
  *ptr = reinterpret_cast<void*>(start);
  return hipSuccess;
}

hipError_t hipMemAddressFree(void* ptr, size_t size) {
  std::lock_guard lock(mu);
  auto it = reservations().find(reinterpret_cast<uintptr_t>(ptr));
  if (!ptr || size == 0 || it == reservations().end() || it->second != size)
    return ret(hipErrorInvalidValue);
  munmap(ptr, size);
  reservations().erase(it);
  return hipSuccess;
}

// clr hip_vm.cpp, hipMemMap: offset and flags 0 (else hipErrorInvalidValue). The mapping is not
// accessible until hipMemSetAccess.
hipError_t hipMemMap(void* ptr, size_t size, size_t offset, hipMemGenericAllocationHandle_t handle,
                     unsigned long long flags) {
  if (!ptr || !handle || size == 0 || offset != 0 || flags != 0 || size > handle->size ||
      !inside_reservation(ptr, size))
    return ret(hipErrorInvalidValue);
  if (mmap(ptr, size, PROT_NONE, MAP_SHARED | MAP_FIXED, handle->fd, 0) == MAP_FAILED)
    return ret(hipErrorOutOfMemory);
  return hipSuccess;
}

hipError_t hipMemUnmap(void* ptr, size_t size) {
  if (!ptr || size == 0 || !inside_reservation(ptr, size)) return ret(hipErrorInvalidValue);
  // Back to reserved address space.
  if (mmap(ptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0) ==
      MAP_FAILED)
    return ret(hipErrorInvalidValue);
  return hipSuccess;
}

// clr hip_vm.cpp, hipMemSetAccess: each descriptor names a device (else hipErrorInvalidValue), and
// its flags go to hsa_amd_vmem_set_access as permissions (rocdevice.cpp SetMemAccess), which
// knows none, read and read-write: any other value fails there, and hipMemSetAccess returns
// hipErrorInvalidValue.
hipError_t hipMemSetAccess(void* ptr, size_t size, const hipMemAccessDesc* desc, size_t count) {
  if (!ptr || size == 0 || !desc || count == 0 || !inside_reservation(ptr, size))
    return ret(hipErrorInvalidValue);
  int prot = PROT_NONE;
  for (size_t i = 0; i < count; ++i) {
    if (!on_device(desc[i].location)) return ret(hipErrorInvalidValue);
    switch (desc[i].flags) {
      case hipMemAccessFlagsProtNone:
        break;
      case hipMemAccessFlagsProtRead:
        prot |= PROT_READ;
        break;
      case hipMemAccessFlagsProtReadWrite:
        prot |= PROT_READ | PROT_WRITE;
        break;
      default:
        return ret(hipErrorInvalidValue);
    }
  }
  // One address space serves every device of the process here, so the widest access wins.
  if (mprotect(ptr, size, prot) != 0) return ret(hipErrorInvalidValue);
  return hipSuccess;
}

}  // extern "C"
