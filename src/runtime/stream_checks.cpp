#include "runtime/stream_checks.hpp"

#include <string>

#include "mori/state/team.hpp"
#include "runtime/hex.hpp"

namespace mori::runtime {

Status check_stream_pe(const Runtime& rt, int pe) {
  if (pe < 0 || pe >= rt.n_pes)
    return Status::error("PE " + std::to_string(pe) + " is not in [0, " + std::to_string(rt.n_pes) +
                         ")");
  if (!reachable(rt, pe))
    return Status::error("PE " + std::to_string(pe) + " is not reachable from PE " +
                         std::to_string(rt.rank));
  return {};
}

Status check_local(const char* what, const void* p, uint64_t bytes) {
  if (!p && bytes != 0) return Status::error(std::string(what) + " is null");
  return {};
}

Status check_symmetric(const Runtime& rt, const char* what, const void* p, uint64_t bytes) {
  if (bytes == 0) return {};
  MORI_TRY(check_local(what, p, bytes));
  const uint64_t a = reinterpret_cast<uint64_t>(p);
  const SymmetricRange range = find_symmetric(rt, a);
  if (!range.peer_bases)
    return Status::error(std::string(what) + " " + hex(a) +
                         " is not symmetric (in the heap or a registered buffer)");
  const uint64_t end = range.base + range.size;
  if (bytes > end - a)
    return Status::error(std::string(what) + " " + hex(a) + " + " + std::to_string(bytes) +
                         " bytes runs past the end of its symmetric range at " + hex(end));
  return {};
}

Status check_team(const Runtime& rt, int team, const state::TeamDescriptor** out) {
  *out = state::team_entry(rt.teams.data(), static_cast<int>(rt.teams.size()), team);
  if (*out) return {};
  return Status::error("team " + std::to_string(team) + " is not a valid team on PE " +
                       std::to_string(rt.rank));
}

}  // namespace mori::runtime
