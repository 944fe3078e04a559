// The team table's collective steps: making teams (the predefined ones at init, the splits' later)
// and freeing them. The host API over them is in teams.cpp.
#pragma once

#include <memory>
#include <vector>

#include "bootstrap/bootstrap.hpp"
#include "mori/state/team.hpp"
#include "runtime/runtime.hpp"

namespace mori::runtime {

// Collective over `parent`, the bootstrap of a team every caller belongs to. Each caller passes
// the team it joins, in world PEs (size 0: none), and gets its index in *out (kTeamInvalid when it
// joins none). The callers that pass the same descriptor form one team. Its index is `fixed` when
// that is not kTeamInvalid (the predefined teams), else the lowest index at or above
// kPredefinedTeams that is free on every member. The step fails on every caller, before any team
// is made, when some new team finds no such index.
Status join_team(Runtime& rt, const std::shared_ptr<bootstrap::Bootstrap>& parent,
                 const state::TeamDescriptor& want, state::Team fixed, state::Team* out);

// This PE's entry for `team` cleared (locally: the caller has made sure no member uses it).
Status clear_team(Runtime& rt, state::Team team);

// Allocates the table and makes the predefined teams: collective over the world, at init, after
// the transports and rt.local_rank are known.
Status init_teams(Runtime& rt);

}  // namespace mori::runtime
