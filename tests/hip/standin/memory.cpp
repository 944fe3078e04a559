// Memory of the stand-in libamdhip64: "device" memory is host memory in a memfd (so that another
// process can map it through an IPC handle); copies and fills are memcpy and memset.
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <iterator>
#include <map>
#include <mutex>

#include "standin.hpp"

namespace standin {

namespace {
std::mutex mu;
std::map<uintptr_t, Allocation>& allocations() {
  static std::map<uintptr_t, Allocation> m;
  return m;
}
}  // namespace

hipError_t allocate(size_t bytes, bool device, void** out) {
  if (!out) return ret(hipErrorInvalidValue);
  // clr hip_memory.cpp, hipMalloc: CHECK_STREAM_CAPTURE_SUPPORTED refuses allocation during capture.
  if (hipError_t e = capture_violation(hipErrorStreamCaptureUnsupported)) return e;
  if (bytes == 0) {
    *out = nullptr;
    return hipSuccess;
  }
  const int fd = memfd_create(device ? "hip.device" : "hip.host", MFD_CLOEXEC);
  if (fd < 0) return ret(hipErrorOutOfMemory);
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    close(fd);
    return ret(hipErrorOutOfMemory);
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    close(fd);
    return ret(hipErrorOutOfMemory);
  }
  std::lock_guard lock(mu);
  allocations()[reinterpret_cast<uintptr_t>(p)] = {static_cast<char*>(p), bytes, fd, device};
  *out = p;
  return hipSuccess;
}

hipError_t release(void* base) {
  if (!base) return hipSuccess;
  std::lock_guard lock(mu);
  auto it = allocations().find(reinterpret_cast<uintptr_t>(base));
  if (it == allocations().end()) return ret(hipErrorInvalidValue);
  munmap(it->second.base, it->second.size);
  close(it->second.fd);
  allocations().erase(it);
  return hipSuccess;
}

bool find_allocation(const void* p, Allocation* out) {
  const auto at = reinterpret_cast<uintptr_t>(p);
  std::lock_guard lock(mu);
  auto it = allocations().upper_bound(at);
  if (it == allocations().begin()) return false;
  --it;
  if (at >= it->first + it->second.size) return false;
  *out = it->second;
  return true;
}

}  // namespace standin

using standin::ret;

namespace {
// Blocking copies and fills run after the work already on the null stream, as HIP's do; capture
// forbids them (clr hip_internal.hpp CHECK_STREAM_CAPTURING).
hipError_t blocking(std::function<void()> work) {
  if (hipError_t e = standin::capture_violation(hipErrorStreamCaptureImplicit)) return e;
  standin::drain(nullptr);
  work();
  return hipSuccess;
}
}  // namespace

extern "C" {

hipError_t hipMalloc(void** ptr, size_t bytes) { return standin::allocate(bytes, true, ptr); }
hipError_t hipExtMallocWithFlags(void** ptr, size_t bytes, unsigned int) {
  return standin::allocate(bytes, true, ptr);
}
hipError_t hipFree(void* ptr) {
  if (hipError_t e = standin::capture_violation(hipErrorStreamCaptureUnsupported)) return e;
  standin::drain_all();  // hipFree waits for the device, as clr's does
  return standin::release(ptr);
}
hipError_t hipHostMalloc(void** ptr, size_t bytes, unsigned int) {
  return standin::allocate(bytes, false, ptr);
}
hipError_t hipHostFree(void* ptr) { return standin::release(ptr); }

hipError_t hipMemcpy(void* dst, const void* src, size_t bytes, hipMemcpyKind) {
  if (bytes && (!dst || !src)) return ret(hipErrorInvalidValue);
  return blocking([=] { std::memmove(dst, src, bytes); });
}
hipError_t hipMemcpyHtoD(hipDeviceptr_t dst, void* src, size_t bytes) {
  return hipMemcpy(dst, src, bytes, hipMemcpyHostToDevice);
}
hipError_t hipMemcpyDtoH(void* dst, hipDeviceptr_t src, size_t bytes) {
  return hipMemcpy(dst, src, bytes, hipMemcpyDeviceToHost);
}
// A registered symbol's device copy is its host shadow: host memory is the device's here.
hipError_t hipMemcpyToSymbol(const void* symbol, const void* src, size_t bytes, size_t offset,
                             hipMemcpyKind kind) {
  if (!symbol) return ret(hipErrorInvalidValue);
  return hipMemcpy(static_cast<char*>(const_cast<void*>(symbol)) + offset, src, bytes, kind);
}
hipError_t hipMemcpyAsync(void* dst, const void* src, size_t bytes, hipMemcpyKind,
                          hipStream_t stream) {
  if (bytes && (!dst || !src)) return ret(hipErrorInvalidValue);
  standin::enqueue(stream, [=] { std::memmove(dst, src, bytes); });
  return hipSuccess;
}
hipError_t hipMemset(void* dst, int value, size_t bytes) {
  if (bytes && !dst) return ret(hipErrorInvalidValue);
  return blocking([=] { std::memset(dst, value, bytes); });
}
hipError_t hipMemsetAsync(void* dst, int value, size_t bytes, hipStream_t stream) {
  if (bytes && !dst) return ret(hipErrorInvalidValue);
  standin::enqueue(stream, [=] { std::memset(dst, value, bytes); });
  return hipSuccess;
}

// clr hip_memory.cpp, hipMemGetAddressRange: memory HIP did not allocate is hipErrorNotFound.
hipError_t hipMemGetAddressRange(hipDeviceptr_t* base, size_t* size, hipDeviceptr_t ptr) {
  if (!base || !size) return ret(hipErrorInvalidValue);
  standin::Allocation a;
  if (!standin::find_allocation(ptr, &a)) return ret(hipErrorNotFound);
  *base = a.base;
  *size = a.size;
  return hipSuccess;
}

// Host memory is device-visible as it is: registration hands back the same address.
hipError_t hipHostRegister(void* host, size_t bytes, unsigned int) {
  return host && bytes ? hipSuccess : ret(hipErrorInvalidValue);
}
hipError_t hipHostUnregister(void* host) { return host ? hipSuccess : ret(hipErrorInvalidValue); }
hipError_t hipHostGetDevicePointer(void** device, void* host, unsigned int) {
  if (!device || !host) return ret(hipErrorInvalidValue);
  *device = host;
  return hipSuccess;
}

}  // extern "C"
