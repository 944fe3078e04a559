// A host-backend module as Triton would load one: its own globalGpuStates, which module_init fills
// (test_api.py reads it back through mori_test_module_pes).
#include <cstdint>

#include "mori/state/gpu_states.hpp"

namespace mori::shmem {
state::GpuStates globalGpuStates{};
}  // namespace mori::shmem

extern "C" const uint32_t mori_shmem_gpu_states_abi_version = mori::state::kGpuStatesAbiVersion;

// This module's view: rank * 1000 + n_pes, or 0 before module_init.
extern "C" int32_t mori_test_module_pes() {
  return mori::shmem::globalGpuStates.rank * 1000 + mori::shmem::globalGpuStates.n_pes;
}
