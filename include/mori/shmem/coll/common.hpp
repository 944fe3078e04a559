// What every device collective (collectives.hpp) builds on: the team as the collective sees it,
// the two ways its members meet (a sync, or a barrier that also completes puts), a member's copy
// of a symmetric array for direct loads, and the team's staging area.
//
// Every member must pick the same algorithm, since the algorithms sync a different number of
// times. The choice reads only what is the same on every member: the call's element count (for
// collect, which has none in common, there is a single algorithm), the team, and whether every
// member is reached over P2P (`direct`). P2P is decided per node pair at init and is symmetric, so
// `direct` agrees across members unless MORI_DISABLE_P2P is set on some PEs and not others, which
// the runtime does not support.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mori/core/scope.hpp"
#include "mori/shmem/barrier.hpp"
#include "mori/shmem/checks.hpp"
#include "mori/shmem/team.hpp"
#include "mori/transport/dispatch.hpp"

namespace mori::shmem::detail::coll {

struct TeamView {
  SyncGroup group;  // the team's sync words, members and this PE's index
  bool direct;      // every member is reached over P2P: its memory is loaded and stored directly
  int team;
  MORI_DEVICE int size() const { return group.size; }
  MORI_DEVICE int me() const { return group.my_index; }
  // The world PE of member i.
  MORI_DEVICE int pe(int i) const { return group.start + i * group.stride; }
  // The i-th member counting from this PE's successor, so that the members of a push do not all
  // write to member 0 first; i == size() - 1 is this PE.
  MORI_DEVICE int rotated(int i) const { return (group.my_index + 1 + i) % group.size; }
};

MORI_DEVICE TeamView team_view(const char* call, Team team) {
  TeamView v{team_group(call, team), true, team};
  for (int i = 0; i < v.size(); ++i) {
    const state::Transport t = state::transport_to(v.pe(i));
    v.direct = v.direct && (t == state::Transport::kP2P || t == state::Transport::kSdma);
  }
  return v;
}

// The team's sync (kQuiet false: orders the members' stores) or barrier (kQuiet true: also
// completes every put this PE issued), in scope S. Collectives count in the team's own sync words,
// so they and team_sync/team_barrier on one team must not overlap (as two syncs must not).
template <Scope S, bool kQuiet>
MORI_DEVICE void meet(const char* call, const TeamView& v) {
  scoped_sync<S>([&] { sync_leader<kQuiet>(call, v.group); });
}

// Member i's copy of the symmetric array at `local` (this PE's copy), as this PE loads and stores
// it over P2P. Only for a direct team.
template <typename T>
MORI_DEVICE T* member_copy(const char* call, const TeamView& v, T* local, size_t nelems, int i) {
  const int pe = v.pe(i);
  const state::RemoteTarget t =
      resolve(call, local, byte_count(call, local, nelems, sizeof(T), pe), pe, 0);
  return reinterpret_cast<T*>(transport::P2p::address(call, t));
}

// A root, or other member number, that must name a member of the team.
MORI_DEVICE void check_member(const char* call, const char* what, int index, const TeamView& v) {
  if constexpr (MORI_DEVICE_CHECKS) {
    if (index < 0 || index >= v.size()) {
      state::fail(
          {state::DeviceErrorCode::kBadArgument, state::this_pe(), 0, static_cast<uint64_t>(index)},
          [&](state::Message& m) {
            m << call << ": " << what << " " << index << " is not a PE of team " << v.team
              << ", which has " << v.size() << " PEs";
          });
    }
  }
}

// The team's staging area (GpuStates::team_scratch): MORI_SHMEM_TEAM_SCRATCH_SIZE bytes at the
// same heap offset on every PE, owned by the team's index. Each algorithm that stages lays it out
// itself and leaves it free for the next collective on the team before it returns.
MORI_DEVICE uint8_t* team_scratch(const TeamView& v) {
  const state::GpuStates& s = state::gpu_states();
  return s.team_scratch + static_cast<uint64_t>(v.team) * s.team_scratch_bytes;
}
MORI_DEVICE uint64_t team_scratch_bytes() { return state::gpu_states().team_scratch_bytes; }

// Traps when a staging area of `need` bytes does not fit the team's scratch (fail() does not
// return).
MORI_DEVICE void check_staging(const char* call, const TeamView& v, uint64_t need) {
  if (need <= team_scratch_bytes()) return;
  state::fail({state::DeviceErrorCode::kBadArgument, state::this_pe(), 0, need},
              [&](state::Message& m) {
                m << call << ": team " << v.team << " of " << v.size() << " PEs needs " << need
                  << " bytes of staging, more than MORI_SHMEM_TEAM_SCRATCH_SIZE ("
                  << team_scratch_bytes() << ")";
              });
}

}  // namespace mori::shmem::detail::coll
