// The names of the device state (layer 3, state/) that the device and host APIs speak in, under
// their namespace: users write mori::shmem::AMO_ADD, mori::shmem::CMP_EQ, mori::shmem::Team,
// mori::shmem::kCtxDefault and mori::shmem::GpuStates, as the user guide and the extern "C" ABI
// name them. This is the one place that re-exports them. The internals of the state layer (failure
// records, addressing, the spin loop) stay in mori::state.
#pragma once

#include "mori/state/amo.hpp"
#include "mori/state/context.hpp"
#include "mori/state/gpu_states.hpp"
#include "mori/state/team.hpp"

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

// Teams: a small index into this PE's team table. kTeamInvalid is the spec's SHMEM_TEAM_INVALID.
using state::kTeamInvalid;
using state::kTeamSameLocalIndex;
using state::kTeamShared;
using state::kTeamWorld;
using state::Team;

// Contexts: a QP index of this PE, and what ctx_create reports.
using state::Ctx;
using state::ctx_status_text;
using state::CtxStatus;
using enum state::CtxStatus;  // kCtxCreated, kCtxNoFreeQp, ...
using state::kCtxDefault;
using state::kCtxInvalid;
using state::kCtxNoStore;
using state::kCtxPrivate;
using state::kCtxSerialized;

}  // namespace mori::shmem
