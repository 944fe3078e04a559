// The host API of teams on every PE: the predefined teams for one node and for several, strided
// splits of the world and of split teams, split_2d, translate_pe both ways and with the invalid
// team, the errors of bad arguments and of the team limit (MORI_SHMEM_MAX_TEAMS), and an index
// freed by team_destroy serving a new team. Run at 2, 3 and 4 PEs (tests/mpi/CMakeLists.txt).
#include <string>
#include <vector>

#include "device_harness.hpp"

namespace shmem = mori::shmem;
using namespace mori::test;
using shmem::Team;

namespace {

// `team` holds exactly the world PEs start, start + stride, ... (size of them), numbered in that
// order, on this PE; or, when this PE is not one of them, is invalid here.
void check_team(Team team, int start, int stride, int size) {
  const int me = shmem::my_pe(), n = shmem::n_pes();
  const bool member = me >= start && (me - start) % stride == 0 && (me - start) / stride < size;
  if (!member) {
    CHECK(team == shmem::kTeamInvalid);
    return;
  }
  REQUIRE(team != shmem::kTeamInvalid);
  CHECK(shmem::team_my_pe(team) == (me - start) / stride);
  CHECK(shmem::team_n_pes(team) == size);
  for (int i = -1; i <= size; ++i) {  // both ends out of range too
    const bool in = i >= 0 && i < size;
    CHECK(shmem::team_translate_pe(team, i, shmem::kTeamWorld) == (in ? start + i * stride : -1));
    CHECK(shmem::team_translate_pe(shmem::kTeamInvalid, i, team) == -1);
    CHECK(shmem::team_translate_pe(team, i, shmem::kTeamInvalid) == -1);
  }
  for (int pe = 0; pe < n; ++pe) {
    const bool in = pe >= start && (pe - start) % stride == 0 && (pe - start) / stride < size;
    CHECK(shmem::team_translate_pe(shmem::kTeamWorld, pe, team) ==
          (in ? (pe - start) / stride : -1));
  }
}

Team split(Team parent, int start, int stride, int size) {
  Team t = shmem::kTeamInvalid;
  REQUIRE_MESSAGE(shmem::team_split_strided(parent, start, stride, size, nullptr, 0, &t) == 0,
                  shmem::last_error());
  return t;
}

// A split that must fail on every PE with a reason containing `want`.
void check_refused(Team parent, int start, int stride, int size, const std::string& want) {
  Team t = 7;
  CHECK(shmem::team_split_strided(parent, start, stride, size, nullptr, 0, &t) != 0);
  CHECK(t == shmem::kTeamInvalid);
  const std::string err = shmem::last_error();
  CHECK_MESSAGE(err.find(want) != std::string::npos, err);
}

}  // namespace

TEST_CASE("teams: predefined on one node") {
  Session s;
  check_team(shmem::kTeamWorld, 0, 1, s.n);
  // Every PE is on this node, and its local index is its rank.
  if (over_rdma())
    check_team(shmem::kTeamShared, s.me, 1, 1);
  else
    check_team(shmem::kTeamShared, 0, 1, s.n);
  check_team(shmem::kTeamSameLocalIndex, s.me, 1, 1);
}

TEST_CASE("teams: predefined on nodes of 2 PEs") {
  ScopedEnv nodes("MORI_SHMEM_PES_PER_NODE", "2");
  ScopedEnv p2p("MORI_DISABLE_P2P", "0");    // the shared team is the node's
  ScopedEnv nic("MORI_DEVICE_NIC", "mlx5");  // the other nodes' PEs over the software NIC
  Session s;
  const int node_start = s.me / 2 * 2;
  check_team(shmem::kTeamShared, node_start, 1, std::min(2, s.n - node_start));
  check_team(shmem::kTeamSameLocalIndex, s.me % 2, 2, (s.n - s.me % 2 + 1) / 2);
}

TEST_CASE("team_split_strided: strided teams of the world and of a split team") {
  Session s;
  const int n = s.n;
  const Team evens = split(shmem::kTeamWorld, 0, 2, (n + 1) / 2);
  check_team(evens, 0, 2, (n + 1) / 2);
  const Team odds = split(shmem::kTeamWorld, 1, 2, n / 2);
  check_team(odds, 1, 2, n / 2);
  const Team last = split(shmem::kTeamWorld, n - 1, 1, 1);
  check_team(last, n - 1, 1, 1);
  const Team all_but_first = split(shmem::kTeamWorld, 1, 1, n - 1);
  check_team(all_but_first, 1, 1, n - 1);
  // A split of a split, over its members only: the evens but the first are world PEs 2, 4, ...
  if (evens != shmem::kTeamInvalid && shmem::team_n_pes(evens) > 1) {
    const Team sub = split(evens, 1, 1, shmem::team_n_pes(evens) - 1);
    check_team(sub, 2, 2, shmem::team_n_pes(evens) - 1);
    if (sub != shmem::kTeamInvalid) {  // its members translate between the two
      CHECK(shmem::team_translate_pe(sub, 0, evens) == 1);
      CHECK(shmem::team_translate_pe(evens, 0, sub) == -1);
      CHECK(shmem::team_translate_pe(evens, 1, sub) == 0);
    }
    CHECK(shmem::team_destroy(sub) == 0);
  }
  for (Team t : {evens, odds, last, all_but_first}) CHECK(shmem::team_destroy(t) == 0);
  REQUIRE(shmem::barrier_all() == 0);
}

TEST_CASE("team_split_2d: rows and columns, ragged, and an xrange past the parent") {
  Session s;
  Team x = shmem::kTeamInvalid, y = shmem::kTeamInvalid;
  REQUIRE_MESSAGE(shmem::team_split_2d(shmem::kTeamWorld, 2, nullptr, 0, &x, nullptr, 0, &y) == 0,
                  shmem::last_error());
  check_team(x, s.me / 2 * 2, 1, std::min(2, s.n - s.me / 2 * 2));
  check_team(y, s.me % 2, 2, (s.n - s.me % 2 + 1) / 2);
  CHECK(shmem::team_destroy(x) == 0);
  CHECK(shmem::team_destroy(y) == 0);
  REQUIRE(shmem::team_split_2d(shmem::kTeamWorld, s.n + 5, nullptr, 0, &x, nullptr, 0, &y) == 0);
  check_team(x, 0, 1, s.n);
  check_team(y, s.me, 1, 1);
  CHECK(shmem::team_destroy(x) == 0);
  CHECK(shmem::team_destroy(y) == 0);
}

TEST_CASE("teams: bad arguments fail on every PE, naming the cause") {
  Session s;
  check_refused(shmem::kTeamWorld, -1, 1, 1, "start -1 is not a PE of the parent");
  check_refused(shmem::kTeamWorld, s.n, 1, 1, "start " + std::to_string(s.n) + " is not a PE");
  check_refused(shmem::kTeamWorld, 0, 0, 1, "stride 0 is not positive");
  check_refused(shmem::kTeamWorld, 0, 1, 0, "size 0 is not positive");
  check_refused(shmem::kTeamWorld, 1, 1, s.n,
                "the last PE, start + (size - 1) * stride = " + std::to_string(s.n) +
                    ", is past the parent's end (the parent team has " + std::to_string(s.n) +
                    " PEs)");
  check_refused(shmem::kTeamInvalid, 0, 1, 1, "parent team -1 is not a valid team on PE");
  Team t = 0;
  CHECK(shmem::team_split_strided(shmem::kTeamWorld, 0, 1, 1, nullptr, 2, &t) != 0);
  CHECK(std::string(shmem::last_error()).find("config_mask 2") != std::string::npos);
  Team x = 0, y = 0;
  CHECK(shmem::team_split_2d(shmem::kTeamWorld, 0, nullptr, 0, &x, nullptr, 0, &y) != 0);
  CHECK(std::string(shmem::last_error()) == "team_split_2d: xrange 0 is not positive");
  CHECK((x == shmem::kTeamInvalid && y == shmem::kTeamInvalid));
  CHECK(shmem::team_destroy(shmem::kTeamWorld) != 0);
  CHECK(std::string(shmem::last_error()) ==
        "team_destroy: team 0 is predefined (world, shared or same-local-index) and cannot be "
        "destroyed");
  CHECK(shmem::team_destroy(shmem::kTeamInvalid) == 0);
  CHECK(shmem::team_destroy(40) != 0);
  CHECK(std::string(shmem::last_error()) ==
        "team_destroy: team 40 is not a valid team on PE " + std::to_string(s.me));
  REQUIRE(shmem::barrier_all() == 0);
}

TEST_CASE("teams: 64 live teams by default, then a clear error; destroy frees an index") {
  Session s;
  std::vector<Team> teams;
  for (int i = 0; i < 61; ++i) teams.push_back(split(shmem::kTeamWorld, 0, 1, s.n));
  CHECK(teams.back() == 63);
  check_refused(shmem::kTeamWorld, 0, 1, s.n,
                "team_split_strided: no more teams available (max = 64, set by "
                "MORI_SHMEM_MAX_TEAMS): PE 0 of the new team has 64 teams live");
  CHECK(shmem::team_destroy(teams[10]) == 0);
  const Team again = split(shmem::kTeamWorld, 1 % s.n, 1, s.n - 1 % s.n);
  CHECK(again == (s.me >= 1 % s.n ? teams[10] : shmem::kTeamInvalid));
  teams[10] = again;
  for (Team t : teams) CHECK(shmem::team_destroy(t) == 0);
}

TEST_CASE("MORI_SHMEM_MAX_TEAMS sets the limit; out of range, init refuses it") {
  {
    ScopedEnv limit("MORI_SHMEM_MAX_TEAMS", "4");
    Session s;
    const Team one = split(shmem::kTeamWorld, 0, 1, s.n);
    CHECK(one == 3);
    Team t = 0;
    CHECK(shmem::team_split_2d(shmem::kTeamWorld, 1, nullptr, 0, &t, nullptr, 0, &t) != 0);
    CHECK(std::string(shmem::last_error()).find("no more teams available (max = 4") !=
          std::string::npos);
    CHECK(shmem::team_destroy(one) == 0);
  }
  for (const char* bad : {"2", "3265", "x"}) {
    ScopedEnv limit("MORI_SHMEM_MAX_TEAMS", bad);
    CHECK(shmem::init() != 0);
    CHECK_MESSAGE(
        std::string(shmem::last_error())
                .find("MORI_SHMEM_MAX_TEAMS=\"" + std::string(bad) + "\"") != std::string::npos,
        shmem::last_error());
  }
}

TEST_CASE("team_get_config: the num_contexts a split kept; errors on a bad team or config") {
  Session s;
  shmem::TeamConfig config{5};
  Team t = shmem::kTeamInvalid;
  REQUIRE(shmem::team_split_strided(shmem::kTeamWorld, 0, 1, s.n, &config, shmem::kTeamNumContexts,
                                    &t) == 0);
  shmem::TeamConfig got{-1};
  CHECK(shmem::team_get_config(t, shmem::kTeamNumContexts, &got) == 0);
  CHECK(got.num_contexts == 5);
  got.num_contexts = -1;
  CHECK(shmem::team_get_config(shmem::kTeamWorld, 0, &got) == 0);  // nothing selected
  CHECK(got.num_contexts == -1);
  CHECK(shmem::team_get_config(shmem::kTeamWorld, shmem::kTeamNumContexts, &got) == 0);
  CHECK(got.num_contexts == 0);
  CHECK(shmem::team_get_config(shmem::kTeamInvalid, shmem::kTeamNumContexts, &got) != 0);
  CHECK(std::string(shmem::last_error()) ==
        "team_get_config: team -1 is not a valid team on PE " + std::to_string(s.me));
  CHECK(shmem::team_get_config(t, shmem::kTeamNumContexts, nullptr) != 0);
  CHECK(std::string(shmem::last_error()) ==
        "team_get_config: config is null but config_mask is not 0");
  Team refused = 0;
  CHECK(shmem::team_split_strided(shmem::kTeamWorld, 0, 1, 1, nullptr, shmem::kTeamNumContexts,
                                  &refused) != 0);
  CHECK(refused == shmem::kTeamInvalid);
  CHECK(std::string(shmem::last_error()) ==
        "team_split_strided: config is null but config_mask is not 0");
  CHECK(shmem::team_destroy(t) == 0);
  REQUIRE(shmem::barrier_all() == 0);
}
