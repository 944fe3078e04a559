// Teams on the device, over P2P and over RDMA: the queries read the same table as the host's, a
// team barrier or sync orders its members' writes, two disjoint teams sync at once without waiting
// for each other's PEs, split_2d's axes sync in one kernel, and a sync on an invalid team traps
// naming it, as a sync that times out does. Run at 2, 3 and 4 PEs (tests/mpi/CMakeLists.txt).
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "device_harness.hpp"
#include "halves.hpp"

namespace shmem = mori::shmem;
using namespace mori::test;
using mori::Block, mori::Thread, mori::Warp;
using shmem::Team;

namespace {

constexpr int kMaxPes = 8;

uint64_t stamp(uint64_t round, int writer) { return round << 16 | static_cast<uint64_t>(writer); }

// The device's answers for `team` match the host's, for every PE of the world.
void check_device_queries(Team team) {
  const int n = shmem::n_pes();
  launch({1}, {1}, [&] {
    CHECK(shmem::detail::device_team_my_pe(team) == shmem::team_my_pe(team));
    CHECK(shmem::detail::device_team_n_pes(team) == shmem::team_n_pes(team));
    for (int pe = -1; pe <= n; ++pe) {
      CHECK(shmem::detail::device_team_translate_pe(shmem::kTeamWorld, pe, team) ==
            shmem::team_translate_pe(shmem::kTeamWorld, pe, team));
      CHECK(shmem::detail::device_team_translate_pe(team, pe, shmem::kTeamWorld) ==
            shmem::team_translate_pe(team, pe, shmem::kTeamWorld));
    }
  });
}

// Symmetric (GuardedSlots, which allocates and frees them): slots[w] is written by world PE w (put
// from `src`, a registered buffer as RDMA needs); own is this PE's word, read by peers with get
// into `fetched`.
struct Buffers {
  GuardedSlots<uint64_t> slot_words{1, kMaxPes}, own_word{1, 1};
  uint64_t* slots = slot_words.slot(0);
  uint64_t* own = own_word.slot(0);
  Registered<uint64_t> src{1}, fetched{kMaxPes};
};

// `rounds` rounds on `team`: each member puts a round stamp to every member and team_barrier<S>;
// then stores one to its own word, team_sync<S>, and gets every member's. Each member checks that
// it saw this round's stamp of every member, then syncs again so nobody overwrites it early.
// Returns the mismatches.
template <typename S>
uint64_t rounds_on(Team team, Buffers& b, int rounds) {
  const int me = shmem::my_pe(), size = shmem::team_n_pes(team);
  REQUIRE(size <= kMaxPes);
  std::vector<int> members(size);
  for (int i = 0; i < size; ++i) members[i] = shmem::team_translate_pe(team, i, shmem::kTeamWorld);
  std::atomic<uint64_t> bad{0};
  launch({1}, block_for<S>(), [&] {
    for (int r = 1; r <= rounds; ++r) {
      if (S::leader()) b.src[0] = stamp(r, me);
      S::sync();
      for (int pe : members) shmem::put_nbi<S>(b.slots + me, b.src.data(), 1, pe);
      shmem::team_barrier<S>(team);
      for (int pe : members) bad += b.slots[pe] != stamp(r, pe);
      if (S::leader()) *b.own = stamp(r, me);
      shmem::team_sync<S>(team);
      for (int i = 0; i < size; ++i) shmem::get_nbi<S>(b.fetched.data() + i, b.own, 1, members[i]);
      if (S::leader()) shmem::quiet();
      S::sync();
      for (int i = 0; i < size; ++i) bad += b.fetched[i] != stamp(r, members[i]);
      shmem::team_sync<S>(team);
    }
  });
  return bad.load();
}

// A copy of the world, as a team of its own index.
Team split_world(int n) {
  Team t = shmem::kTeamInvalid;
  REQUIRE_MESSAGE(shmem::team_split_strided(shmem::kTeamWorld, 0, 1, n, nullptr, 0, &t) == 0,
                  shmem::last_error());
  return t;
}

template <typename S>
constexpr int kRounds = std::is_same_v<S, Thread> ? 100 : 20;

}  // namespace

TEST_CASE("team queries: the device's table answers as the host's") {
  Session s;
  for (Team t : {shmem::kTeamWorld, shmem::kTeamShared, shmem::kTeamSameLocalIndex})
    check_device_queries(t);
  Halves h;
  check_device_queries(h.evens);
  check_device_queries(h.odds);
  check_device_queries(shmem::kTeamInvalid);
  REQUIRE(shmem::barrier_all() == 0);
}

TEST_CASE_TEMPLATE("team_barrier and team_sync order the members' writes", S, Thread, Warp, Block) {
  Session s;
  Buffers b;
  CHECK(rounds_on<S>(shmem::kTeamWorld, b, kRounds<S>) == 0);
  // Two disjoint teams at once: each waits for its own members only (waiting for the other
  // team's PEs would time out, since they never arrive at this team's counts).
  Halves h;
  if (shmem::team_n_pes(h.mine()) > 0) CHECK(rounds_on<S>(h.mine(), b, kRounds<S>) == 0);
  REQUIRE(shmem::barrier_all() == 0);
}

TEST_CASE("team_barrier: a PE outside the team is not waited for") {
  Session s;
  Buffers b;
  Team rest = shmem::kTeamInvalid;  // every PE but PE 0, which launches nothing meanwhile
  REQUIRE(shmem::team_split_strided(shmem::kTeamWorld, 1, 1, s.n - 1, nullptr, 0, &rest) == 0);
  if (s.me != 0) {
    CHECK(rounds_on<Block>(rest, b, 10) == 0);
    CHECK(shmem::team_destroy(rest) == 0);
  }
  REQUIRE(shmem::barrier_all() == 0);
}

TEST_CASE("team_split_2d: the row and the column sync in one kernel") {
  Session s;
  Team row = shmem::kTeamInvalid, column = shmem::kTeamInvalid;
  REQUIRE_MESSAGE(
      shmem::team_split_2d(shmem::kTeamWorld, 2, nullptr, 0, &row, nullptr, 0, &column) == 0,
      shmem::last_error());
  Buffers b;
  CHECK(rounds_on<Thread>(row, b, 20) == 0);
  CHECK(rounds_on<Thread>(column, b, 20) == 0);
  launch({1}, {1}, [&] {
    for (int r = 0; r < 20; ++r) {
      shmem::team_barrier(row);
      shmem::team_sync(column);
    }
  });
  CHECK(shmem::team_destroy(row) == 0);
  CHECK(shmem::team_destroy(column) == 0);
}

TEST_CASE("team_barrier on a team that is not valid here traps, naming it") {
  Session s;
  const Team destroyed = split_world(s.n);
  REQUIRE(shmem::team_destroy(destroyed) == 0);
  for (Team t : {shmem::kTeamInvalid, destroyed, Team{1000}}) {
    const std::string err = launch_error({1}, {1}, [&] { shmem::team_barrier(t); });
    const std::string want = "team_barrier: team " + std::to_string(t) +
                             " is not a valid team on PE " + std::to_string(s.me);
    CHECK_MESSAGE(err.find(want) != std::string::npos, err);
    shmem::globalGpuStates.error->code = 0;
  }
  REQUIRE(shmem::barrier_all() == 0);
}

TEST_CASE("team_sync that one member never reaches times out on the others, naming the team") {
  ScopedEnv timeout("MORI_SHMEM_TIMEOUT_MS", "300");
  Session s;
  const Team team = split_world(s.n);
  if (s.me != 0) {  // PE 0 skips the sync: it launches nothing
    const std::string err = launch_error({1}, {1}, [&] { shmem::team_sync(team); });
    const std::string want = "team_sync timed out after 300 ms: ";
    const std::string names = "PEs of team " + std::to_string(team) + " arrived (epoch 1, PE " +
                              std::to_string(s.me) + ")";
    CHECK_MESSAGE(err.find(want) != std::string::npos, err);
    CHECK_MESSAGE(err.find(names) != std::string::npos, err);
    shmem::globalGpuStates.error->code = 0;
  }
  // The team's counts are out of step now: this session ends here.
  MPI_Barrier(MPI_COMM_WORLD);
}
