// backend::stream_enqueue on hip: one launch of mori_stream_op (stream_kernel.hip) per operation,
// its StreamOp passed by value through kernelParams. hipModuleLaunchKernel copies the argument at
// launch, so nothing here allocates or waits, and a stream being captured records the launch as a
// graph node.
#include "backend/hip/stream_hip.hpp"

#include <hip/hip_runtime_api.h>

#include <cstring>
#include <string>

#include "backend/hip/stream_kernel_images.hpp"
#include "runtime/backend.hpp"

namespace mori::backend {

namespace {

constexpr unsigned kStreamThreads = kStreamKernelThreads;

hipModule_t module = nullptr;
hipFunction_t kernel = nullptr;
std::string arch;  // of the loaded module, for errors

Status check(hipError_t e, const std::string& what) {
  if (e == hipSuccess) return {};
  return Status::error(what + " failed: " + hipGetErrorName(e));
}

}  // namespace

Status open_stream_kernel(int device) {
  hipDeviceProp_t prop;
  MORI_TRY(check(hipGetDeviceProperties(&prop, device), "hipGetDeviceProperties"));
  // "gfx942:sramecc+:xnack-": the code objects are built for the plain target.
  arch.assign(prop.gcnArchName, strcspn(prop.gcnArchName, ":"));
  for (const StreamKernelImage* i = kStreamKernelImages; i->arch; ++i) {
    if (arch != i->arch) continue;
    MORI_TRY(check(hipModuleLoadData(&module, i->image), "hipModuleLoadData(stream kernel)"));
    Status s = check(hipModuleGetFunction(&kernel, module, "mori_stream_op"),
                     "hipModuleGetFunction(mori_stream_op)");
    if (!s.ok()) close_stream_kernel();
    return s;
  }
  return {};  // no kernel for this arch: stream_enqueue says so
}

void close_stream_kernel() {
  if (module) (void)hipModuleUnload(module);
  module = nullptr;
  kernel = nullptr;
}

Status publish_to_stream_kernel(const state::GpuStates& states) {
  return module ? publish_to_module(module, states) : Status{};
}

void* stream_kernel_module() { return module; }

Status stream_enqueue(void* stream, const runtime::StreamOp& op) {
  if (!kernel) {
    return Status::error("the hip backend has no stream kernel for " +
                         (arch.empty() ? std::string("this device") : arch) +
                         ": libmori_shmem was built for GPU_TARGETS without it");
  }
  void* params[] = {const_cast<runtime::StreamOp*>(&op)};
  return check(hipModuleLaunchKernel(kernel, 1, 1, 1, kStreamThreads, 1, 1, 0,
                                     static_cast<hipStream_t>(stream), params, nullptr),
               "hipModuleLaunchKernel(mori_stream_op)");
}

Status stream_synchronize(void* stream) {
  return check(hipStreamSynchronize(static_cast<hipStream_t>(stream)), "hipStreamSynchronize");
}

}  // namespace mori::backend
