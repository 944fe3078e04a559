// The queries that host code and device code share by name: my_pe, n_pes, ptr_p2p, team_my_pe,
// team_n_pes and team_translate_pe. The host API (host_api.hpp) defines them in the runtime. On the
// GPU the device API defines its own, with the same results, as __device__ functions (query.hpp,
// team.hpp). On the host backend, where device code is host code, these declarations are the only
// ones: a kernel lane calls the runtime's, which answer from the device state as the GPU's do. So
// the device API includes this header, not the host API.
#pragma once

#include <cstdint>

#include "mori/shmem/vocabulary.hpp"

namespace mori::shmem {

int my_pe();  // -1 before init
int n_pes();  // -1 before init

// Where this process reaches `dest_pe`'s copy of the symmetric object at `ptr` (an address in
// my_pe's heap), or 0 when dest_pe is not P2P-reachable (another node, MORI_DISABLE_P2P) or ptr is
// not symmetric.
uint64_t ptr_p2p(uint64_t ptr, int my_pe, int dest_pe);

// This PE's number in `team`, its size, and src_team's PE src_pe as a PE of dest_team: -1 for a
// team that is invalid on this PE (or a PE not in dest_team), and before init.
int team_my_pe(Team team);
int team_n_pes(Team team);
int team_translate_pe(Team src_team, int src_pe, Team dest_team);

}  // namespace mori::shmem
