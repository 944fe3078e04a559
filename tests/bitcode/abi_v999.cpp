// A module built for another device-state ABI: the right globalGpuStates, but ABI version 999.
// module_init must refuse it (test_host_module.cpp).
#include <cstdint>

#include "mori/state/gpu_states.hpp"

namespace mori::shmem {
state::GpuStates globalGpuStates{};
}  // namespace mori::shmem

extern "C" const uint32_t mori_shmem_gpu_states_abi_version = 999;
