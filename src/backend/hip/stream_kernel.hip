// The hip backend's stream kernel: one launch per stream-ordered operation (backend::stream_enqueue),
// the StreamOp passed by value as the kernel's only argument, so that enqueueing allocates nothing
// and a HIP graph can capture it. Compiled for each GPU_TARGETS arch into a code object that
// libmori_shmem embeds (stream_kernel_images.cpp.in) and loads at open_device.
#include "backend/hip/stream_kernel_images.hpp"
#include "mori/state/gpu_states.hpp"
#include "runtime/stream_op_run.hpp"

MORI_SHMEM_DEFINE_GPU_STATES();

// The module's device-state ABI, which publish_to_module checks.
extern "C" __attribute__((visibility("default"))) __attribute__((device))
const uint32_t mori_shmem_gpu_states_abi_version = mori::state::kGpuStatesAbiVersion;

// The block stream_enqueue launches, as the compiler's bound (stream_kernel_images.hpp).
#define MORI_STREAM_KERNEL_BLOCK \
  __attribute__((amdgpu_flat_work_group_size(1, mori::backend::kStreamKernelThreads)))

MORI_KERNEL MORI_STREAM_KERNEL_BLOCK void mori_stream_op(mori::runtime::StreamOp op) {
  mori::runtime::run_stream_op<mori::Block>(op);
}
