// The host API of teams: the queries, team_split_strided, team_split_2d and team_destroy
// (OpenSHMEM 1.5, section 9.4). The collective steps are in team_table.cpp.
#include <algorithm>
#include <cstdint>
#include <string>

#include "mori/shmem/host_api.hpp"
#include "runtime/backend.hpp"
#include "runtime/error.hpp"
#include "runtime/host_only.hpp"
#include "runtime/runtime.hpp"
#include "runtime/team_table.hpp"

namespace mori::shmem {

using runtime::report;
using runtime::Runtime;
using state::TeamDescriptor;

namespace {

// The queries read the host's copy of the table, which the device's mirrors. They take no lock: an
// entry changes only in the collective calls that make or destroy its team, which no call naming
// that team may overlap (a kernel's calls run the device form, runtime/host_only.hpp).
const TeamDescriptor* entry(Runtime* rt, Team team) {
  return rt ? state::team_entry(rt->teams.data(), static_cast<int>(rt->teams.size()), team)
            : nullptr;
}

// A split's team as this PE sees it: the parent's PEs start, start + stride, ... (size of them),
// in world PEs, with this PE's number in it; size 0 when this PE is not one of them.
TeamDescriptor strided_child(const TeamDescriptor& parent, int start, int stride, int size) {
  const TeamDescriptor child{parent.start + start * parent.stride, parent.stride * stride, size, 0};
  const int mine = state::team_pe_of(child, parent.start + parent.my_pe * parent.stride);
  return mine < 0 ? TeamDescriptor{} : TeamDescriptor{child.start, child.stride, size, mine};
}

Status check_config(const char* axis, const TeamConfig* config, long mask) {
  if ((mask & ~kTeamNumContexts) != 0) {
    return Status::error(std::string(axis) + "config_mask " + std::to_string(mask) +
                         " has bits other than kTeamNumContexts (" +
                         std::to_string(kTeamNumContexts) + ")");
  }
  if (mask && !config)
    return Status::error(std::string(axis) + "config is null but " + axis + "config_mask is not 0");
  return {};
}

// What team_get_config reports for a team made with (config, mask): 0 unless the mask selects it.
void keep_config(Runtime& rt, Team team, const TeamConfig* config, long mask) {
  if (team != kTeamInvalid)
    rt.team_host[team].num_contexts = mask & kTeamNumContexts ? config->num_contexts : 0;
}

// The parent's table entry, or an error naming why it cannot be split.
Status parent_of(Runtime& rt, Team parent, const TeamDescriptor** out) {
  *out = entry(&rt, parent);
  if (*out) return {};
  return Status::error("parent team " + std::to_string(parent) + " is not a valid team on PE " +
                       std::to_string(rt.rank));
}

// Refuses a (start, stride, size) that does not name PEs of a parent of `parent_size` PEs.
Status check_strided(int start, int stride, int size, int parent_size) {
  const std::string within = " (the parent team has " + std::to_string(parent_size) + " PEs)";
  if (start < 0 || start >= parent_size)
    return Status::error("start " + std::to_string(start) + " is not a PE of the parent" + within);
  if (stride < 1) return Status::error("stride " + std::to_string(stride) + " is not positive");
  if (size < 1) return Status::error("size " + std::to_string(size) + " is not positive");
  const int64_t last = start + int64_t{size - 1} * stride;
  if (last >= parent_size) {
    return Status::error("the last PE, start + (size - 1) * stride = " + std::to_string(last) +
                         ", is past the parent's end" + within);
  }
  return {};
}

}  // namespace

int team_my_pe(Team team) {
  MORI_LANE_FORM(team_my_pe(team));
  const TeamDescriptor* t = entry(runtime::require("team_my_pe"), team);
  return t ? t->my_pe : -1;
}

int team_n_pes(Team team) {
  MORI_LANE_FORM(team_n_pes(team));
  const TeamDescriptor* t = entry(runtime::require("team_n_pes"), team);
  return t ? t->size : -1;
}

int team_translate_pe(Team src_team, int src_pe, Team dest_team) {
  MORI_LANE_FORM(team_translate_pe(src_team, src_pe, dest_team));
  Runtime* rt = runtime::require("team_translate_pe");
  if (!rt) return -1;
  return state::team_translate(rt->teams.data(), static_cast<int>(rt->teams.size()), src_team,
                               src_pe, dest_team);
}

int team_split_strided(Team parent, int start, int stride, int size, const TeamConfig* config,
                       long mask, Team* new_team) {
  runtime::host_only("team_split_strided");
  std::lock_guard lock(runtime::api_mutex());
  runtime::clear_error();
  constexpr const char* kApi = "team_split_strided";
  Runtime* rt = runtime::require_device(kApi);
  if (!new_team) return report(kApi, "new_team is null");
  *new_team = kTeamInvalid;
  if (!rt) return -1;
  const TeamDescriptor* p = nullptr;
  Status s = parent_of(*rt, parent, &p);
  if (s.ok()) s = check_strided(start, stride, size, p->size);
  if (s.ok()) s = check_config("", config, mask);
  if (s.ok()) {
    s = runtime::join_team(*rt, rt->team_host[parent].boot, strided_child(*p, start, stride, size),
                           kTeamInvalid, new_team);
  }
  if (s.ok()) keep_config(*rt, *new_team, config, mask);
  return s.ok() ? 0 : report(kApi, s);
}

int team_split_2d(Team parent, int xrange, const TeamConfig* xaxis_config, long xaxis_mask,
                  Team* xaxis_team, const TeamConfig* yaxis_config, long yaxis_mask,
                  Team* yaxis_team) {
  runtime::host_only("team_split_2d");
  std::lock_guard lock(runtime::api_mutex());
  runtime::clear_error();
  constexpr const char* kApi = "team_split_2d";
  Runtime* rt = runtime::require_device(kApi);
  if (!xaxis_team || !yaxis_team) return report(kApi, "xaxis_team or yaxis_team is null");
  *xaxis_team = *yaxis_team = kTeamInvalid;
  if (!rt) return -1;
  const TeamDescriptor* p = nullptr;
  Status s = parent_of(*rt, parent, &p);
  if (s.ok() && xrange < 1)
    s = Status::error("xrange " + std::to_string(xrange) + " is not positive");
  if (s.ok()) s = check_config("xaxis_", xaxis_config, xaxis_mask);
  if (s.ok()) s = check_config("yaxis_", yaxis_config, yaxis_mask);
  if (!s.ok()) return report(kApi, s);
  // OpenSHMEM 1.5: an xrange past the parent's size is the parent's size. This PE is at
  // (x, y) = (my_pe % xrange, my_pe / xrange); its row starts at y * xrange, its column at x.
  const int n = p->size, xr = xrange < n ? xrange : n;
  const int x = p->my_pe % xr, y = p->my_pe / xr;
  const TeamDescriptor row = strided_child(*p, y * xr, 1, std::min(xr, n - y * xr));
  const TeamDescriptor column = strided_child(*p, x, xr, (n - x + xr - 1) / xr);
  const std::shared_ptr<bootstrap::Bootstrap> boot = rt->team_host[parent].boot;
  s = runtime::join_team(*rt, boot, row, kTeamInvalid, xaxis_team);
  if (s.ok()) s = runtime::join_team(*rt, boot, column, kTeamInvalid, yaxis_team);
  if (!s.ok() && *xaxis_team != kTeamInvalid) {
    // Every PE of the parent failed the column step, so no row was used: undo it here alone.
    (void)runtime::clear_team(*rt, *xaxis_team);
    *xaxis_team = kTeamInvalid;
  }
  if (!s.ok()) return report(kApi, s);
  keep_config(*rt, *xaxis_team, xaxis_config, xaxis_mask);
  keep_config(*rt, *yaxis_team, yaxis_config, yaxis_mask);
  return 0;
}

int team_get_config(Team team, long config_mask, TeamConfig* config) {
  runtime::host_only("team_get_config");
  runtime::clear_error();
  constexpr const char* kApi = "team_get_config";
  Runtime* rt = runtime::require(kApi);
  if (!rt) return -1;
  if (Status s = check_config("", config, config_mask); !s.ok()) return report(kApi, s);
  if (!entry(rt, team)) {
    return report(kApi, "team " + std::to_string(team) + " is not a valid team on PE " +
                            std::to_string(rt->rank));
  }
  if (config_mask & kTeamNumContexts) config->num_contexts = rt->team_host[team].num_contexts;
  return 0;
}

int team_destroy(Team team) {
  runtime::host_only("team_destroy");
  std::lock_guard lock(runtime::api_mutex());
  runtime::clear_error();
  constexpr const char* kApi = "team_destroy";
  Runtime* rt = runtime::require_device(kApi);
  if (!rt) return -1;
  if (team == kTeamInvalid) return 0;
  if (team >= 0 && team < state::kPredefinedTeams) {
    return report(kApi, "team " + std::to_string(team) +
                            " is predefined (world, shared or same-local-index) and cannot be "
                            "destroyed");
  }
  if (!entry(rt, team))
    return report(kApi, "team " + std::to_string(team) + " is not a valid team on PE " +
                            std::to_string(rt->rank));
  // The index may be reused as soon as every member is through here: every member's device work,
  // and the arrivals its team syncs still had in flight, must have landed first.
  Status s = backend::synchronize();
  if (s.ok() && rt->rdma) s = rt->rdma->drain();
  if (s.ok()) s = rt->team_host[team].boot->barrier();
  if (s.ok()) s = runtime::clear_team(*rt, team);
  // Its contexts stay live (their QPs are this PE's), but belong to no team now.
  if (s.ok()) std::replace(rt->ctx_teams.begin(), rt->ctx_teams.end(), team, kTeamInvalid);
  return s.ok() ? 0 : report(kApi, s);
}

}  // namespace mori::shmem
