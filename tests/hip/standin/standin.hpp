// The stand-in libamdhip64's shared state: the HIP runtime API over host memory, for running the hip
// build of libmori_shmem where there is no GPU (docs/testing.md, "The HIP stand-in"). Each rule that
// refuses a call cites the ROCm/clr function whose behaviour it follows.
#pragma once

#include <hip/hip_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>

namespace standin {

// Records `e` as the thread's last error (hipGetLastError) and returns it.
hipError_t ret(hipError_t e);

// Devices: MORI_HIP_STANDIN_DEVICES (default 8) of MORI_HIP_STANDIN_ARCH (default gfx942).
int device_count();
const char* device_arch();
// The calling thread's current device: 0 until it calls hipSetDevice (clr hip_internal.hpp,
// HIP_INIT_API: tls.device_ starts as g_devices[0]).
int current_device();

// Host memory standing in for device memory: memfd-backed so that other processes can map it.
struct Allocation {
  char* base;
  size_t size;
  int fd;       // the memfd, kept open for IPC handles; -1 for imported mappings
  bool device;  // hipMalloc (IPC-exportable) rather than hipHostMalloc
};
hipError_t allocate(size_t bytes, bool device, void** out);
hipError_t release(void* base);
// The allocation containing p, or false.
bool find_allocation(const void* p, Allocation* out);

// Stream capture: true while any stream is being captured.
bool capture_active();
// A call that capture forbids (clr hip_internal.hpp CHECK_STREAM_CAPTURE_SUPPORTED,
// CHECK_SUPPORTED_DURING_CAPTURE, CHECK_STREAM_CAPTURING): while any stream is captured, marks
// every capture invalidated (hipStreamEndCapture then fails) and returns `refusal`; else
// hipSuccess.
hipError_t capture_violation(hipError_t refusal);
// Appends `work` to the stream's queue (nullptr is the null stream), or to its graph while captured.
void enqueue(hipStream_t stream, std::function<void()> work);
// Waits until every stream has run what was queued on it.
void drain_all();
void drain(hipStream_t stream);

}  // namespace standin
