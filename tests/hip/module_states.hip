// A separately loaded module as a HIP user builds it: its own globalGpuStates and device-state ABI
// version, and one kernel, for module_init through the stand-in's hipModuleLoad.
#include "mori/state/gpu_states.hpp"

MORI_SHMEM_DEFINE_GPU_STATES();

extern "C" __attribute__((visibility("default"))) __attribute__((device))
const uint32_t mori_shmem_gpu_states_abi_version = mori::state::kGpuStatesAbiVersion;

MORI_KERNEL void mori_test_my_pe(int* out, long scale) {
  *out = static_cast<int>(scale) * mori::shmem::globalGpuStates.rank;
}
