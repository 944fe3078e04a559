// Device-side access to the job's state (GpuStates) and the queries built on it alone.
#pragma once

#include <cstdint>

#include "mori/platform.hpp"
#include "mori/shmem/gpu_states.hpp"
#include "mori/shmem/host_api.hpp"

namespace mori::shmem {

MORI_DEVICE const GpuStates& gpu_states() { return globalGpuStates; }

// This PE and the PE count as device code sees them (internal: no error reporting).
namespace detail {
MORI_DEVICE int this_pe() { return gpu_states().rank; }
MORI_DEVICE int pe_count() { return gpu_states().n_pes; }
}  // namespace detail

// my_pe() and n_pes() for kernels. On the host backend device code is host code, and the host API's
// my_pe() and n_pes() (host_api.hpp, -1 and an error before init) are the only definitions: one
// function, not two with the same signature.
#if defined(MORI_ON_AMDGCN)
MORI_DEVICE int my_pe() { return detail::this_pe(); }
MORI_DEVICE int n_pes() { return detail::pe_count(); }
#endif

MORI_DEVICE Transport transport_to(int pe) {
  return static_cast<Transport>(gpu_states().transports[pe]);
}

}  // namespace mori::shmem
