// Device-side access to the job's state (GpuStates) and the queries built on it alone.
#pragma once

#include <cstdint>

#include "mori/platform.hpp"
#include "mori/shmem/gpu_states.hpp"

namespace mori::shmem {

MORI_DEVICE const GpuStates& gpu_states() { return globalGpuStates; }

MORI_DEVICE int my_pe() { return gpu_states().rank; }
MORI_DEVICE int n_pes() { return gpu_states().n_pes; }

MORI_DEVICE Transport transport_to(int pe) {
  return static_cast<Transport>(gpu_states().transports[pe]);
}

}  // namespace mori::shmem
