// Devices and errors of the stand-in libamdhip64.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "standin.hpp"

namespace standin {

namespace {
thread_local hipError_t last_error = hipSuccess;
thread_local int thread_device = 0;

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}
}  // namespace

hipError_t ret(hipError_t e) {
  if (e != hipSuccess) last_error = e;
  return e;
}

int device_count() {
  static const int n = env_int("MORI_HIP_STANDIN_DEVICES", 8);
  return n;
}

// Read at each call, so that a forked child may choose another arch than its parent.
const char* device_arch() {
  const char* v = std::getenv("MORI_HIP_STANDIN_ARCH");
  return v && *v ? v : "gfx942";
}

int current_device() { return thread_device; }

}  // namespace standin

using standin::ret;

extern "C" {

hipError_t hipGetDeviceCount(int* count) {
  if (!count) return ret(hipErrorInvalidValue);
  *count = standin::device_count();
  // clr hip_device_runtime.cpp, hipGetDeviceCount: no device is hipErrorNoDevice.
  return *count > 0 ? hipSuccess : ret(hipErrorNoDevice);
}

// clr hip_device_runtime.cpp, hipSetDevice: an ordinal past the device count is
// hipErrorInvalidDevice (hipErrorNoDevice without devices); the choice is the calling thread's (tls.device_).
hipError_t hipSetDevice(int device) {
  if (standin::device_count() == 0) return ret(hipErrorNoDevice);
  if (device < 0 || device >= standin::device_count()) return ret(hipErrorInvalidDevice);
  standin::thread_device = device;
  return hipSuccess;
}

hipError_t hipGetDevice(int* device) {
  if (!device) return ret(hipErrorInvalidValue);
  if (standin::device_count() == 0) return ret(hipErrorNoDevice);
  *device = standin::current_device();
  return hipSuccess;
}

hipError_t hipGetDeviceProperties(hipDeviceProp_t* prop, int device) {
  if (!prop) return ret(hipErrorInvalidValue);
  if (device < 0 || device >= standin::device_count()) return ret(hipErrorInvalidDevice);
  *prop = {};
  std::snprintf(prop->name, sizeof prop->name, "mori HIP stand-in");
  // gcnArchName carries the target features, as ROCm reports them.
  std::snprintf(prop->gcnArchName, sizeof prop->gcnArchName, "%s:sramecc+:xnack-",
                standin::device_arch());
  prop->warpSize = 64;
  prop->maxThreadsPerBlock = 1024;
  prop->multiProcessorCount = 304;
  prop->pciBusID = device + 1;
  prop->totalGlobalMem = size_t{192} << 30;
  return hipSuccess;
}

hipError_t hipDeviceGetPCIBusId(char* pci_bus_id, int len, int device) {
  if (!pci_bus_id || len <= 0) return ret(hipErrorInvalidValue);
  if (device < 0 || device >= standin::device_count()) return ret(hipErrorInvalidDevice);
  std::snprintf(pci_bus_id, static_cast<size_t>(len), "0000:%02x:00.0", device + 1);
  return hipSuccess;
}

hipError_t hipGetLastError(void) {
  const hipError_t e = standin::last_error;
  standin::last_error = hipSuccess;
  return e;
}

// clr hip_device_runtime.cpp, hipDeviceSynchronize: CHECK_SUPPORTED_DURING_CAPTURE refuses it
// while a stream is captured.
hipError_t hipDeviceSynchronize(void) {
  if (hipError_t e = standin::capture_violation(hipErrorStreamCaptureUnsupported)) return e;
  standin::drain_all();
  return hipSuccess;
}

const char* hipGetErrorName(hipError_t e) {
  switch (e) {
#define MORI_STANDIN_ERROR(name) \
  case name:                     \
    return #name;
    MORI_STANDIN_ERROR(hipSuccess)
    MORI_STANDIN_ERROR(hipErrorInvalidValue)
    MORI_STANDIN_ERROR(hipErrorOutOfMemory)
    MORI_STANDIN_ERROR(hipErrorNoDevice)
    MORI_STANDIN_ERROR(hipErrorInvalidDevice)
    MORI_STANDIN_ERROR(hipErrorInvalidImage)
    MORI_STANDIN_ERROR(hipErrorInvalidContext)
    MORI_STANDIN_ERROR(hipErrorNoBinaryForGpu)
    MORI_STANDIN_ERROR(hipErrorInvalidHandle)
    MORI_STANDIN_ERROR(hipErrorNotFound)
    MORI_STANDIN_ERROR(hipErrorInvalidDevicePointer)
    MORI_STANDIN_ERROR(hipErrorNotSupported)
    MORI_STANDIN_ERROR(hipErrorStreamCaptureUnsupported)
    MORI_STANDIN_ERROR(hipErrorStreamCaptureImplicit)
    MORI_STANDIN_ERROR(hipErrorStreamCaptureInvalidated)
    MORI_STANDIN_ERROR(hipErrorIllegalState)
    MORI_STANDIN_ERROR(hipErrorLaunchFailure)
#undef MORI_STANDIN_ERROR
    default:
      return "hipErrorUnknown";
  }
}

const char* hipGetErrorString(hipError_t e) {
  return e == hipSuccess ? "no error" : "refused by the HIP stand-in (see its ROCm/clr citation)";
}

}  // extern "C"
