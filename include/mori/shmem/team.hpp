// Teams on the device (OpenSHMEM 1.5, section 9.4; the scoped forms as NVSHMEM's nvshmemx_*_warp
// and _block): the queries, and a team's sync and barrier. Teams are made and destroyed by the host
// API (host_api.hpp); a team handle is an index into this PE's team table (state/team.hpp).
//
//   team_my_pe(team), team_n_pes(team)   -1 for a team that is not valid on this PE
//   team_translate_pe(src, src_pe, dest) src's PE src_pe as a PE of dest; -1 if it is none
//   team_sync<S>(team)     returns once every member has called it; memory stores made before it
//                          by any participant of any member are visible after it (shmem_team_sync)
//   team_barrier<S>(team)  the same, and every put, AMO and signal issued before it by any member
//                          is complete: quiet + sync, as barrier_all is for the world
//
// Only the team's members take part, and only they are waited for. Per team, the rules of
// barrier_all hold: one scope instance per PE inside team_sync or team_barrier at a time, every
// member calling the same number of times (the two count together), the state persisting across
// launches, and a timeout leaving the team's counts out of step. Different teams have separate
// counts, so a PE may be in syncs of several teams at once. Calling them with a team that is
// invalid on this PE traps, naming the team (with MORI_DEVICE_CHECKS, as the other checks).
#pragma once

#include "mori/shmem/barrier.hpp"
#include "mori/shmem/shared_queries.hpp"
#include "mori/state/access.hpp"
#include "mori/state/device_error.hpp"
#include "mori/state/internal_area.hpp"
#include "mori/state/team.hpp"

namespace mori::shmem {

namespace detail {

MORI_DEVICE const state::TeamDescriptor* device_team(Team team) {
  const state::GpuStates& s = state::gpu_states();
  return state::team_entry(s.teams, s.max_teams, team);
}
MORI_DEVICE int device_team_my_pe(Team team) {
  const state::TeamDescriptor* t = device_team(team);
  return t ? t->my_pe : -1;
}
MORI_DEVICE int device_team_n_pes(Team team) {
  const state::TeamDescriptor* t = device_team(team);
  return t ? t->size : -1;
}
MORI_DEVICE int device_team_translate_pe(Team src_team, int src_pe, Team dest_team) {
  const state::GpuStates& s = state::gpu_states();
  return state::team_translate(s.teams, s.max_teams, src_team, src_pe, dest_team);
}

// The sync group of `team`, which must be valid on this PE.
MORI_DEVICE SyncGroup team_group(const char* call, Team team) {
  const state::GpuStates& s = state::gpu_states();
  if constexpr (MORI_DEVICE_CHECKS) {
    if (!device_team(team)) {
      state::fail({state::DeviceErrorCode::kBadArgument, s.rank, 0, static_cast<uint64_t>(team)},
                  [&](state::Message& m) {
                    m << call << ": team " << team << " is not a valid team on PE " << s.rank
                      << " (invalid, destroyed, or this PE is not a member)";
                  });
    }
  }
  const state::TeamDescriptor& t = s.teams[team];
  const int words = state::team_words(team);
  return {t.start, t.stride, t.size, t.my_pe, words, words + 1, words + 2, team};
}

template <Scope S, bool kQuiet>
MORI_DEVICE void team_collective(const char* call, Team team) {
  scoped_sync<S>([&] { sync_leader<kQuiet>(call, team_group(call, team)); });
}

}  // namespace detail

// On the host backend device code is host code, and the runtime's queries (shared_queries.hpp, with
// the same results) are the only definitions, as for my_pe (query.hpp): from a kernel lane they run
// the device_team_* forms.
#if defined(MORI_ON_AMDGCN)
MORI_DEVICE int team_my_pe(Team team) { return detail::device_team_my_pe(team); }
MORI_DEVICE int team_n_pes(Team team) { return detail::device_team_n_pes(team); }
MORI_DEVICE int team_translate_pe(Team src_team, int src_pe, Team dest_team) {
  return detail::device_team_translate_pe(src_team, src_pe, dest_team);
}
#endif

template <Scope S = Thread>
MORI_DEVICE void team_sync(Team team) {
  detail::team_collective<S, false>("team_sync", team);
}

template <Scope S = Thread>
MORI_DEVICE void team_barrier(Team team) {
  detail::team_collective<S, true>("team_barrier", team);
}

}  // namespace mori::shmem
