#include "runtime/team_table.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "runtime/backend.hpp"

namespace mori::runtime {

using state::Team;
using state::TeamDescriptor;

namespace {

// This PE's word `word` of the internal area.
uint64_t* internal_word(Runtime& rt, int word) {
  return reinterpret_cast<uint64_t*>(rt.memory->base() + rt.internal_offset) + word;
}

// Writes this PE's entry for `team` in both copies of the table and zeroes the team's sync words
// and staging area, which a destroyed team that had the index may have left counted up (a stale
// flag there would pass for one of the new team's calls: mori/shmem/coll/flags.hpp).
Status set_team(Runtime& rt, Team team, const TeamDescriptor& desc) {
  rt.teams[team] = desc;
  auto* device = static_cast<TeamDescriptor*>(rt.d_teams.ptr) + team;
  MORI_TRY(backend::copy_to_device(device, &desc, sizeof desc));
  uint64_t* words = internal_word(rt, state::team_words(team));
  MORI_TRY(backend::fill_device(words, 0, state::kTeamSyncWordsPerTeam * sizeof(uint64_t)));
  char* scratch = rt.memory->base() + rt.team_scratch_offset + team * rt.settings.team_scratch;
  return backend::fill_device(scratch, 0, rt.settings.team_scratch);
}

bool same_team(const TeamDescriptor& a, const TeamDescriptor& b) {
  return a.start == b.start && a.stride == b.stride && a.size == b.size;
}

// What each caller of join_team sends: the team it joins and the indices free on it (a bitmap).
struct Offer {
  TeamDescriptor want;
  std::vector<uint8_t> free;  // bit t: index t is free here
};

int live_teams(const Offer& offer, int max_teams) {
  int live = 0;
  for (int t = 0; t < max_teams; ++t) live += !(offer.free[t / 8] >> (t % 8) & 1);
  return live;
}

// The lowest index free on every caller whose offer joins the same team as offers[first], or
// kTeamInvalid; *busiest gets the member with the most live teams, for the error.
Team lowest_common_free(const std::vector<Offer>& offers, size_t first, int max_teams,
                        size_t* busiest) {
  std::vector<uint8_t> common(offers[first].free);
  for (size_t r = 0; r < offers.size(); ++r) {
    if (!same_team(offers[r].want, offers[first].want)) continue;
    for (size_t b = 0; b < common.size(); ++b) common[b] &= offers[r].free[b];
    if (live_teams(offers[r], max_teams) > live_teams(offers[*busiest], max_teams)) *busiest = r;
  }
  for (int t = state::kPredefinedTeams; t < max_teams; ++t)
    if (common[t / 8] >> (t % 8) & 1) return t;
  return state::kTeamInvalid;
}

}  // namespace

Status join_team(Runtime& rt, const std::shared_ptr<bootstrap::Bootstrap>& parent,
                 const TeamDescriptor& want, Team fixed, Team* out) {
  *out = state::kTeamInvalid;
  const int max_teams = static_cast<int>(rt.teams.size());
  const size_t bitmap = (static_cast<size_t>(max_teams) + 7) / 8;
  const size_t record = sizeof(TeamDescriptor) + bitmap;
  std::vector<uint8_t> mine(record, 0), all(record * parent->size());
  std::memcpy(mine.data(), &want, sizeof want);
  for (int t = 0; t < max_teams; ++t)
    if (!state::team_valid(rt.teams[t])) mine[sizeof want + t / 8] |= uint8_t(1u << (t % 8));
  MORI_TRY(parent->allgather(mine.data(), all.data(), record));
  std::vector<Offer> offers(parent->size());
  for (size_t r = 0; r < offers.size(); ++r) {
    std::memcpy(&offers[r].want, &all[r * record], sizeof(TeamDescriptor));
    offers[r].free.assign(all.begin() + r * record + sizeof(TeamDescriptor),
                          all.begin() + (r + 1) * record);
  }

  // Every caller computes every new team's index, so that all fail together or none does. A
  // team's color for the split is its first caller's parent rank: teams are disjoint, so colors
  // differ.
  Team index = state::kTeamInvalid;
  int color = -1;
  for (size_t first = 0; first < offers.size(); ++first) {
    const TeamDescriptor& w = offers[first].want;
    bool seen = false;
    for (size_t r = 0; r < first && !seen; ++r) seen = same_team(offers[r].want, w);
    if (w.size == 0 || seen) continue;
    size_t busiest = first;
    const Team t = fixed != state::kTeamInvalid
                       ? fixed
                       : lowest_common_free(offers, first, max_teams, &busiest);
    if (t == state::kTeamInvalid) {
      const TeamDescriptor& b = offers[busiest].want;
      return Status::error("no more teams available (max = " + std::to_string(max_teams) +
                           ", set by MORI_SHMEM_MAX_TEAMS): PE " +
                           std::to_string(b.start + b.my_pe * b.stride) + " of the new team has " +
                           std::to_string(live_teams(offers[busiest], max_teams)) +
                           " teams live and no index is free on all its PEs");
    }
    if (same_team(w, want)) index = t, color = static_cast<int>(first);
  }
  // One team of every caller, numbered as the parent: it can share the parent's bootstrap.
  bool parent_sized_group = true;
  for (size_t r = 0; r < offers.size(); ++r) {
    parent_sized_group = parent_sized_group && same_team(offers[r].want, offers[0].want) &&
                         offers[r].want.my_pe == static_cast<int>(r);
  }

  std::shared_ptr<bootstrap::Bootstrap> boot = parent;
  if (!parent_sized_group) {
    std::unique_ptr<bootstrap::Bootstrap> made;
    MORI_TRY(parent->split(color, want.my_pe, rt.settings.bootstrap_timeout, &made));
    boot = std::move(made);
  }
  if (index == state::kTeamInvalid) return {};
  MORI_TRY(set_team(rt, index, want));
  rt.team_host[index].boot = boot;
  // No member's sync may reach this PE's words before it has zeroed them.
  if (Status s = boot->barrier(); !s.ok()) {
    (void)clear_team(rt, index);
    return s;
  }
  *out = index;
  return {};
}

Status clear_team(Runtime& rt, Team team) {
  rt.team_host[team] = {};
  return set_team(rt, team, TeamDescriptor{});
}

namespace {

// The team of the world PEs in `members` (ascending, this PE among them) if they are equally
// spaced, else none (size 0): every team is strided.
TeamDescriptor strided_team(const std::vector<int>& members, int me) {
  const int stride = members.size() > 1 ? members[1] - members[0] : 1;
  for (size_t i = 1; i < members.size(); ++i)
    if (members[i] - members[i - 1] != stride) return {};
  const int size = static_cast<int>(members.size());
  return {members[0], stride, size, (me - members[0]) / stride};
}

}  // namespace

Status init_teams(Runtime& rt) {
  const int max_teams = rt.settings.max_teams;
  // join_team's bitmaps have the table's size: every PE must have the same.
  std::vector<int> limits(rt.n_pes);
  MORI_TRY(rt.boot->allgather(&max_teams, limits.data(), sizeof max_teams));
  for (int pe = 0; pe < rt.n_pes; ++pe) {
    if (limits[pe] != max_teams) {
      return Status::error("MORI_SHMEM_MAX_TEAMS differs between PEs: " +
                           std::to_string(max_teams) + " on PE " + std::to_string(rt.rank) + ", " +
                           std::to_string(limits[pe]) + " on PE " + std::to_string(pe));
    }
  }
  rt.teams.assign(max_teams, TeamDescriptor{});
  rt.team_host.assign(max_teams, {});
  MORI_TRY(rt.d_teams.upload(rt.teams.data(), rt.teams.size() * sizeof(TeamDescriptor)));

  // The world's bootstrap stays the runtime's: the team holds it without owning it.
  std::shared_ptr<bootstrap::Bootstrap> world(rt.boot.get(), [](bootstrap::Bootstrap*) {});
  MORI_TRY(set_team(rt, state::kTeamWorld, {0, 1, rt.n_pes, rt.rank}));
  rt.team_host[state::kTeamWorld].boot = world;

  std::vector<int> shared, local_ranks(rt.n_pes), same_index;
  for (int pe = 0; pe < rt.n_pes; ++pe)
    if (rt.transports[pe] == static_cast<uint8_t>(state::Transport::kP2P)) shared.push_back(pe);
  MORI_TRY(rt.boot->allgather(&rt.local_rank, local_ranks.data(), sizeof(int)));
  for (int pe = 0; pe < rt.n_pes; ++pe)
    if (local_ranks[pe] == rt.local_rank) same_index.push_back(pe);
  Team got = state::kTeamInvalid;
  MORI_TRY(join_team(rt, world, strided_team(shared, rt.rank), state::kTeamShared, &got));
  return join_team(rt, world, strided_team(same_index, rt.rank), state::kTeamSameLocalIndex, &got);
}

}  // namespace mori::runtime
