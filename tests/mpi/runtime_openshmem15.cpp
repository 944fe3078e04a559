// More cases of mpi.runtime: the rest of OpenSHMEM 1.5's host API (init_thread and query_thread,
// team_ptr, team_create_ctx and ctx_get_team, malloc_with_hints), and addr_accessible answering
// what a device transfer to the address does.
#include <doctest/doctest.h>
#include <mpi.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "heap_env.hpp"
#include "mori/host/launch.hpp"
#include "mori/shmem.hpp"

namespace shmem = mori::shmem;

namespace {

std::string error() { return shmem::last_error(); }

struct Heap : mori::test::HeapEnv {
  Heap() : mori::test::HeapEnv("static_heap", "8M", "2M") {}
};

// The level mori gives over MPI: MPI's own below MPI_THREAD_SERIALIZED, else kThreadMultiple.
int expected_level() {
  int level = 0;
  MPI_Query_thread(&level);
  if (level >= MPI_THREAD_SERIALIZED) return shmem::kThreadMultiple;
  return level == MPI_THREAD_FUNNELED ? shmem::kThreadFunneled : shmem::kThreadSingle;
}

}  // namespace

TEST_CASE("init_thread and query_thread: the level over MPI, and every bad argument") {
  Heap env;
  int provided = -7;
  CHECK(shmem::query_thread(&provided) == -1);
  CHECK(error() == "query_thread: not initialised (call init or init_attr first)");
  CHECK(shmem::init_thread(shmem::kThreadMultiple, nullptr) == -1);
  CHECK(error() == "init_thread: provided is null");
  CHECK(shmem::init_thread(4, &provided) == -1);
  CHECK(error() ==
        "init_thread: requested level 4 is none of kThreadSingle (0), kThreadFunneled (1), "
        "kThreadSerialized (2) and kThreadMultiple (3)");
  CHECK(provided == -7);
  REQUIRE_MESSAGE(shmem::init_thread(shmem::kThreadMultiple, &provided) == 0, error());
  CHECK(provided == expected_level());
  int again = -7;
  CHECK(shmem::query_thread(&again) == 0);
  CHECK(again == provided);
  CHECK(shmem::query_thread(nullptr) == -1);
  CHECK(error() == "query_thread: provided is null");
  REQUIRE(shmem::finalize() == 0);
}

TEST_CASE("malloc_with_hints: every hint is symmetric memory, unknown bits refused on every PE") {
  Heap env;
  REQUIRE(shmem::init() == 0);
  const int me = shmem::my_pe(), n = shmem::n_pes();
  for (long hints :
       {0L, shmem::kMallocAtomicsRemote, shmem::kMallocSignalRemote, shmem::kMallocHints}) {
    CAPTURE(hints);
    auto* p = static_cast<uint64_t*>(shmem::malloc_with_hints(64 * sizeof(uint64_t), hints));
    REQUIRE_MESSAGE(p != nullptr, error());
    CHECK(reinterpret_cast<uintptr_t>(p) % 256 == 0);
    // Symmetric: the next PE's copy is reachable here, and what this PE writes there lands.
    auto* next = reinterpret_cast<uint64_t*>(
        shmem::ptr_p2p(reinterpret_cast<uint64_t>(p), me, (me + 1) % n));
    REQUIRE(next != nullptr);
    next[me] = 1000 + me;
    REQUIRE(shmem::barrier_all() == 0);
    CHECK(p[(me + n - 1) % n] == uint64_t(1000 + (me + n - 1) % n));
    CHECK(shmem::free(p) == 0);
  }
  CHECK(shmem::malloc_with_hints(64, 4) == nullptr);
  CHECK(error() ==
        "malloc_with_hints: hints 4 has bits other than kMallocAtomicsRemote (1) and "
        "kMallocSignalRemote (2)");
  CHECK(shmem::malloc_with_hints(0, shmem::kMallocAtomicsRemote) == nullptr);
  CHECK(error() == "");
  REQUIRE(shmem::finalize() == 0);
}

TEST_CASE("team_ptr: a team's PE numbers, as ptr_p2p gives for their world PEs") {
  Heap env;
  REQUIRE(shmem::init() == 0);
  const int me = shmem::my_pe(), n = shmem::n_pes();
  auto* obj = static_cast<uint64_t*>(shmem::malloc(4096));
  REQUIRE(obj);
  // The odd world PEs, numbered 0, 1, ... in the team.
  shmem::Team odd = shmem::kTeamInvalid;
  REQUIRE_MESSAGE(shmem::team_split_strided(shmem::kTeamWorld, 1, 2, n / 2, nullptr, 0, &odd) == 0,
                  error());
  for (int pe = 0; pe < n; ++pe) {
    const uint64_t want = shmem::ptr_p2p(reinterpret_cast<uint64_t>(obj + 3), me, pe);
    CHECK(reinterpret_cast<uint64_t>(shmem::team_ptr(shmem::kTeamWorld, obj + 3, pe)) == want);
  }
  CHECK(shmem::team_ptr(shmem::kTeamWorld, obj, me) == obj);
  CHECK(shmem::team_ptr(shmem::kTeamWorld, obj, n) == nullptr);
  int on_stack = 0;
  CHECK(shmem::team_ptr(shmem::kTeamWorld, &on_stack, me) == nullptr);
  if (me % 2 == 1) {
    for (int t = 0; t < n / 2; ++t) {
      auto* peer = static_cast<uint64_t*>(shmem::team_ptr(odd, obj, t));
      CHECK(reinterpret_cast<uint64_t>(peer) ==
            shmem::ptr_p2p(reinterpret_cast<uint64_t>(obj), me, 1 + 2 * t));
      if (peer) peer[me] = 77 + me;  // lands in world PE 1 + 2t's copy
    }
    CHECK(shmem::team_ptr(odd, obj, n / 2) == nullptr);
  } else {
    CHECK(shmem::team_ptr(odd, obj, 0) == nullptr);  // not a member: the team is invalid here
  }
  REQUIRE(shmem::barrier_all() == 0);
  if (me % 2 == 1)
    for (int w = 1; w < n; w += 2) CHECK(obj[w] == uint64_t(77 + w));
  REQUIRE(shmem::team_destroy(odd) == 0);
  CHECK(shmem::free(obj) == 0);
  REQUIRE(shmem::finalize() == 0);
}

TEST_CASE("team_create_ctx and ctx_get_team: each context's team, and after its team is gone") {
  Heap env;
  REQUIRE(shmem::init() == 0);
  const int me = shmem::my_pe(), n = shmem::n_pes();
  shmem::Team team = shmem::kTeamInvalid;
  shmem::Team got = 99;
  CHECK(shmem::ctx_get_team(shmem::kCtxDefault, &got) == 0);
  CHECK(got == shmem::kTeamWorld);
  CHECK(shmem::ctx_get_team(shmem::kCtxDefault, nullptr) == -1);
  CHECK(error() == "ctx_get_team: team is null");
  CHECK(shmem::ctx_get_team(shmem::kCtxInvalid, &got) == -1);
  CHECK(got == shmem::kTeamInvalid);
  CHECK(error() == "ctx_get_team: ctx is kCtxInvalid");
  // The first half of the world.
  REQUIRE(shmem::team_split_strided(shmem::kTeamWorld, 0, 1, n / 2, nullptr, 0, &team) == 0);
  shmem::Ctx world_ctx{}, team_ctx{};
  REQUIRE(shmem::ctx_create(0, &world_ctx) == 0);
  CHECK(shmem::ctx_get_team(world_ctx, &got) == 0);
  CHECK(got == shmem::kTeamWorld);
  if (me < n / 2) {
    REQUIRE_MESSAGE(shmem::team_create_ctx(team, shmem::kCtxPrivate, &team_ctx) == 0, error());
    CHECK(team_ctx != world_ctx);
    CHECK(shmem::ctx_get_team(team_ctx, &got) == 0);
    CHECK(got == team);
  } else {
    CHECK(shmem::team_create_ctx(team, 0, &team_ctx) == -1);
    CHECK(team_ctx == shmem::kCtxInvalid);
    CHECK(error() == "team_create_ctx: team -1 is not a valid team on PE " + std::to_string(me) +
                         " (invalid, destroyed, or this PE is not a member)");
  }
  shmem::Ctx refused{};
  CHECK(shmem::team_create_ctx(shmem::kTeamWorld, 8, &refused) == -1);
  CHECK(refused == shmem::kCtxInvalid);
  CHECK(error().find("team_create_ctx: options 8 has bits other than") == 0);
  REQUIRE(shmem::team_destroy(team) == 0);
  if (me < n / 2) {
    // Still live, but its team is gone.
    CHECK(shmem::ctx_get_team(team_ctx, &got) == 0);
    CHECK(got == shmem::kTeamInvalid);
    CHECK(shmem::ctx_destroy(team_ctx) == 0);
    CHECK(shmem::ctx_get_team(team_ctx, &got) == -1);
    CHECK(error() == "ctx_get_team: context " + std::to_string(team_ctx.qp) +
                         " is not live on PE " + std::to_string(me) +
                         " (destroyed, or never created)");
  }
  CHECK(shmem::ctx_destroy(world_ctx) == 0);
  REQUIRE(shmem::finalize() == 0);
}

TEST_CASE("addr_accessible: 1 exactly where a device put to the address succeeds") {
  Heap env;
  REQUIRE(shmem::init() == 0);
  const int me = shmem::my_pe(), n = shmem::n_pes();
  std::vector<uint64_t> plain(512);
  REQUIRE(shmem::buffer_register(plain.data(), plain.size() * sizeof(uint64_t)) == 0);
  auto* obj = static_cast<uint64_t*>(shmem::malloc(512 * sizeof(uint64_t)));
  REQUIRE(obj);
  for (int pe = 0; pe < n; ++pe) {
    CAPTURE(pe);
    // Reached over P2P, another PE's plain registered buffer is not mapped here.
    const bool p2p = shmem::ptr_p2p(reinterpret_cast<uint64_t>(obj), me, pe) != 0;
    const int want = pe == me || !p2p ? 1 : 0;
    CHECK(shmem::addr_accessible(plain.data() + 9, pe) == want);
    CHECK(shmem::addr_accessible(obj + 9, pe) == 1);
    const uint64_t value = 5;
    uint64_t* dest = plain.data() + 9;
    const mori::Status put =
        mori::host::launch({1}, {1}, [&] { shmem::putmem(dest, obj, sizeof value, pe); });
    CHECK_MESSAGE(put.ok() == (want == 1), put.message());
    if (!put.ok()) {
      CHECK(put.message().find("not mapped into this PE") != std::string::npos);
      shmem::globalGpuStates.error->code = 0;
    }
  }
  REQUIRE(shmem::barrier_all() == 0);
  REQUIRE(shmem::buffer_deregister(plain.data(), plain.size() * sizeof(uint64_t)) == 0);
  CHECK(shmem::free(obj) == 0);
  REQUIRE(shmem::finalize() == 0);
}
