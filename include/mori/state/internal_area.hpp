// The runtime's internal area of the symmetric heap (GpuStates::internal): its size and every
// word's place. The runtime reserves and zeroes it (src/runtime/init.cpp), barrier_all and the team
// syncs count in it (shmem/barrier.hpp, shmem/team.hpp), and the flagged collectives number their
// calls in it (shmem/coll/flags.hpp); each takes its words from here.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mori::state {

// Bytes of the heap the runtime keeps for itself at offset 0.
inline constexpr size_t kInternalBytes = size_t{128} << 10;

// The layout: 128 KiB at the same heap offset on every PE, zeroed at init, in 64-bit words.
// Symmetric words are updated by other PEs through the transports; local ones only by this PE. A
// later user takes a reserved word and adds its row here, the area's one layout.
//
//   word  name                  kind       written by                      holds
//   0     kBarrierArrivals      symmetric  barrier_all of each PE reached  arrivals since init
//                                          over P2P (AMO add 1)
//   1     kBarrierEpoch         local      this PE's barrier_all caller    its calls since init
//   2     kBarrierRdmaArrivals  symmetric  barrier_all of each PE reached  arrivals since init
//                                          over RDMA (AMO add 1)
//   3-7   reserved              -          nobody yet (they stay 0)        -
//   8-63  free
//   64-   team syncs            both       team_sync, team_barrier, the    per team index t: words
//                                          collectives (team.hpp)          64 + 5t, 65 + 5t and
//                                          66 + 5t as words 0, 1 and 2 (team_words(t)),
//                                          67 + 5t and 68 + 5t (local) the team's flagged
//                                          collectives so far in boxes and in lines
//                                          (coll/flags.hpp); up to MORI_SHMEM_MAX_TEAMS
//
// Arrivals count in two words, one per kind of atomic, because a NIC's atomics and a GPU's are not
// atomic with respect to each other: the NIC reads, adds and writes back over PCIe, and an
// XGMI/P2P atomic on the same word in between is lost (the software NIC behaves the same way: its
// atomics hold a lock that P2P atomics do not take). Each word takes one kind only, and the waiter
// adds the two.
inline constexpr int kBarrierArrivals = 0;
inline constexpr int kBarrierEpoch = 1;
inline constexpr int kBarrierRdmaArrivals = 2;

// A team's words: five per team index, from kTeamSyncFirstWord on: P2P arrivals, epoch and RDMA
// arrivals (its syncs, as barrier_all's words 0-2), then the numbers of its flagged collectives
// in boxes (kTeamCollCallWord, with the last-was-flagged bit) and in lines
// (kTeamCollLineCallWord), both local (mori/shmem/coll/flags.hpp).
inline constexpr int kTeamSyncFirstWord = 64;
inline constexpr int kTeamSyncWordsPerTeam = 5;
inline constexpr int kTeamCollCallWord = 3;
inline constexpr int kTeamCollLineCallWord = 4;

// The first of team index `team`'s five words.
constexpr int team_words(int team) { return kTeamSyncFirstWord + team * kTeamSyncWordsPerTeam; }

// The team indices the area has words for.
inline constexpr int kInternalTeams = static_cast<int>(
    (kInternalBytes / sizeof(uint64_t) - kTeamSyncFirstWord) / kTeamSyncWordsPerTeam);

}  // namespace mori::state
