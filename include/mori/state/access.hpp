// Device-side access to the job's state (GpuStates) and the facts read straight from it: this PE,
// the PE count, and the transport to each PE. The device API's my_pe() and n_pes() are built on
// these (shmem/query.hpp).
#pragma once

#include <cstdint>

#include "mori/platform.hpp"
#include "mori/state/gpu_states.hpp"

namespace mori::state {

MORI_DEVICE const GpuStates& gpu_states() { return shmem::globalGpuStates; }

MORI_DEVICE int this_pe() { return gpu_states().rank; }
MORI_DEVICE int pe_count() { return gpu_states().n_pes; }

// The table's entry for `pe`: transport_entry(), its NIC family included.
MORI_DEVICE uint8_t transport_entry_of(int pe) { return gpu_states().transports[pe]; }
// The AMO table's entry for `pe` (GpuStates::amo_transports).
MORI_DEVICE uint8_t amo_transport_entry_of(int pe) { return gpu_states().amo_transports[pe]; }
MORI_DEVICE Transport transport_to(int pe) {
  return static_cast<Transport>(transport_entry_of(pe) & 15);
}

}  // namespace mori::state
