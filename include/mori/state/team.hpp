// Teams (OpenSHMEM 1.5, section 9.4): subsets of the world's PEs with their own numbering. A team
// handle is a small index, as NVSHMEM's int32 nvshmem_team_t, into a table that the runtime keeps
// on each PE and that GpuStates::teams points to. Every team is strided: its PEs are the world PEs
// start, start + stride, ..., start + (size - 1) * stride, numbered 0 .. size - 1 in that order.
// That covers every team OpenSHMEM's splits can make (a strided split of a strided team is
// strided, and so are split_2d's axes), so that translating a PE is arithmetic, not a lookup.
#pragma once

#include <cstdint>

namespace mori::state {

using Team = int32_t;

// The predefined teams, the same index on every PE. kTeamShared: the PEs this PE reaches over P2P
// (OpenSHMEM's SHMEM_TEAM_SHARED). kTeamSameLocalIndex: the PEs with this PE's local index on
// every node (NVSHMEM's NVSHMEMX_TEAM_SAME_MYPE_NODE, as DeepEP's RDMA path uses). Either is
// invalid on a PE where its members are not equally spaced in the world (nodes of different sizes,
// or ranks placed out of order), since every team is strided.
inline constexpr Team kTeamInvalid = -1;
inline constexpr Team kTeamWorld = 0;
inline constexpr Team kTeamShared = 1;
inline constexpr Team kTeamSameLocalIndex = 2;
inline constexpr int kPredefinedTeams = 3;

// One entry of the team table. size == 0: the index is free here, or the team is invalid on this
// PE. A PE's table holds only the teams it belongs to, so my_pe is always in [0, size) when size
// is not 0.
struct TeamDescriptor {
  int32_t start;   // world PE of team PE 0
  int32_t stride;  // world PEs between consecutive team PEs, 1 or more
  int32_t size;    // team PEs
  int32_t my_pe;   // this PE's number in the team
};
static_assert(sizeof(TeamDescriptor) == 16, "TeamDescriptor is part of the device-state ABI");

// The helpers are constexpr so that clang compiles them for the host and for amdgcn alike: the
// runtime's host queries and the device calls share them.
constexpr bool team_valid(const TeamDescriptor& t) { return t.size > 0; }

// The world PE of team PE `team_pe`, or -1 when it is not one.
constexpr int team_world_pe(const TeamDescriptor& t, int team_pe) {
  return team_valid(t) && team_pe >= 0 && team_pe < t.size ? t.start + team_pe * t.stride : -1;
}

// The team number of world PE `world_pe`, or -1 when it is not a member.
constexpr int team_pe_of(const TeamDescriptor& t, int world_pe) {
  if (!team_valid(t) || world_pe < t.start) return -1;
  const int offset = world_pe - t.start;
  if (offset % t.stride != 0 || offset / t.stride >= t.size) return -1;
  return offset / t.stride;
}

// The table entry of `team`, or null when it names no team of this PE (out of range, free, or
// invalid here).
constexpr const TeamDescriptor* team_entry(const TeamDescriptor* table, int max_teams, Team team) {
  if (team < 0 || team >= max_teams || !table) return nullptr;
  return team_valid(table[team]) ? &table[team] : nullptr;
}

// OpenSHMEM's shmem_team_translate_pe over one PE's table: src_team's PE src_pe as a PE of
// dest_team, or -1 when either team is not one of this PE's or that PE is not in dest_team.
constexpr int team_translate(const TeamDescriptor* table, int max_teams, Team src_team, int src_pe,
                             Team dest_team) {
  const TeamDescriptor* src = team_entry(table, max_teams, src_team);
  const TeamDescriptor* dest = team_entry(table, max_teams, dest_team);
  if (!src || !dest) return -1;
  const int world = team_world_pe(*src, src_pe);
  return world < 0 ? -1 : team_pe_of(*dest, world);
}

}  // namespace mori::state
