// The names of the device state (layer 3, state/) that the device API speaks in, under the device
// API's namespace: users write mori::shmem::AMO_ADD, mori::shmem::CMP_EQ and
// mori::shmem::GpuStates, as the user guide and the extern "C" ABI name them. The internals of the
// state layer (failure records, addressing, the spin loop) stay in mori::state.
#pragma once

#include "mori/state/amo.hpp"
#include "mori/state/gpu_states.hpp"

namespace mori::shmem {

using state::atomicType;
using enum state::atomicType;
using state::AMO_SIGNAL_ADD;
using state::AMO_SIGNAL_SET;
using state::Cmp;
using enum state::Cmp;
using state::is_fetching;

using state::GpuStates;
using state::kGpuStatesAbiVersion;

}  // namespace mori::shmem
