// Over the unique-ID bootstrap, with PEs as forked processes: the thread level mori gives
// (kThreadMultiple), held to by threads that call the host API while the main thread makes
// collective calls; and global_exit, which must end every PE with its status, whatever each is
// doing (a barrier the caller never joins, a kernel spinning on a word nobody writes).
#include <doctest/doctest.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "fork_children.hpp"
#include "mori/host/launch.hpp"
#include "mori/shmem.hpp"
#include "uid_pe.hpp"

namespace shmem = mori::shmem;
using mori::test::attr_for;
using mori::test::run_ranks;

namespace {

constexpr int kThreads = 4;
constexpr int kRounds = 300;

// One thread's share: non-collective calls, each checked, while other threads make theirs.
// `held` has one flag per QP: a context handed to two threads at once sets a flag already set.
std::string hammer(int rank, int n, const uint64_t* obj, std::atomic<int>* held) {
  for (int i = 0; i < kRounds; ++i) {
    shmem::Ctx ctx{};
    const bool world = i % 2 == 0;
    PE_CHECK((world ? shmem::ctx_create(0, &ctx)
                    : shmem::team_create_ctx(shmem::kTeamWorld, 0,
                                             &ctx)) == 0 ||
             ctx == shmem::kCtxInvalid);  // every QP taken by the other threads: a fair answer
    if (ctx != shmem::kCtxInvalid) {
      PE_CHECK(held[ctx.qp].exchange(1) == 0);
      shmem::Team team = shmem::kTeamInvalid;
      PE_CHECK(shmem::ctx_get_team(ctx, &team) == 0);
      PE_CHECK(team == shmem::kTeamWorld);
      held[ctx.qp].store(0);
      PE_CHECK(shmem::ctx_destroy(ctx) == 0);
    }
    const int pe = (rank + 1 + i) % n;
    PE_CHECK(shmem::addr_accessible(obj + 1, pe) == 1);
    const uint64_t p = shmem::ptr_p2p(reinterpret_cast<uint64_t>(obj), rank, pe);
    PE_CHECK(p != 0);
    PE_CHECK(shmem::team_ptr(shmem::kTeamWorld, obj, pe) == reinterpret_cast<void*>(p));
    PE_CHECK(shmem::team_my_pe(shmem::kTeamWorld) == rank);
    PE_CHECK(shmem::my_pe() == rank);
    int level = -1;
    PE_CHECK(shmem::query_thread(&level) == 0 && level == shmem::kThreadMultiple);
  }
  return "";
}

std::string threads_and_collectives(const shmem::UniqueId& id, int rank, int n) {
  shmem::InitAttr attr = attr_for(id, rank, n);
  PE_CHECK(shmem::init_attr(shmem::MORI_SHMEM_INIT_WITH_UNIQUEID, &attr) == 0);
  int level = -1;
  PE_CHECK(shmem::query_thread(&level) == 0);
  PE_CHECK(level == shmem::kThreadMultiple);
  auto* obj = static_cast<uint64_t*>(shmem::malloc(4096));
  PE_CHECK(obj != nullptr);
  std::vector<std::atomic<int>> held(shmem::num_qp_per_pe());
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] { failures[t] = hammer(rank, n, obj, held.data()); });
  // Meanwhile the collective calls, in the same order on every PE.
  std::vector<char> buf(8192);
  for (int i = 0; i < 20; ++i) {
    PE_CHECK(shmem::buffer_register(buf.data(), buf.size()) == 0);
    void* more = shmem::malloc_with_hints(1024, shmem::kMallocSignalRemote);
    PE_CHECK(more != nullptr);
    PE_CHECK(shmem::barrier_all() == 0);
    PE_CHECK(shmem::free(more) == 0);
    PE_CHECK(shmem::buffer_deregister(buf.data(), buf.size()) == 0);
  }
  for (auto& t : threads) t.join();
  for (const std::string& f : failures)
    if (!f.empty()) return f;
  PE_CHECK(shmem::free(obj) == 0);
  PE_CHECK(shmem::finalize() == 0);
  return "";
}

// Rank `exiter` calls global_exit(status) once every PE is initialised; the others wait where
// only the exit can end them, and report reaching the line after it as a failure.
std::string exit_while_others_wait(const shmem::UniqueId& id, int rank, int n, int exiter,
                                   int status) {
  shmem::InitAttr attr = attr_for(id, rank, n);
  PE_CHECK(shmem::init_attr(shmem::MORI_SHMEM_INIT_WITH_UNIQUEID, &attr) == 0);
  auto* word = static_cast<uint64_t*>(shmem::malloc(sizeof(uint64_t)));
  PE_CHECK(word != nullptr);
  *word = 0;
  PE_CHECK(shmem::barrier_all() == 0);
  if (rank == exiter) shmem::global_exit(status);
  if (rank % 2 == 0) {
    // A kernel waiting for a value nobody writes (no MORI_SHMEM_TIMEOUT_MS: forever).
    const mori::Status s =
        mori::host::launch({1}, {1}, [&] { shmem::wait_until(word, shmem::CMP_EQ, uint64_t{1}); });
    return "rank " + std::to_string(rank) + ": the kernel returned: " + s.message();
  }
  shmem::barrier_all();  // the exiting PE never joins it
  return "rank " + std::to_string(rank) + ": barrier_all returned: " + shmem::last_error();
}

}  // namespace

TEST_CASE("thread level: kThreadMultiple over the unique ID, with threads beside collectives") {
  setenv("MORI_SHMEM_HEAP_SIZE", "16M", 1);
  shmem::UniqueId id;
  REQUIRE(shmem::get_unique_id(&id) == 0);
  auto run = run_ranks(
      2, [&](int rank) { return threads_and_collectives(id, rank, 2); }, std::chrono::seconds(60));
  for (const auto& r : run.children) {
    CAPTURE(r.rank);
    CHECK(r.text == "");
    CHECK(r.exit_code == 0);
  }
}

TEST_CASE("global_exit: every PE ends with its status, in a kernel or a barrier, and none hangs") {
  setenv("MORI_SHMEM_HEAP_SIZE", "16M", 1);
  setenv("MORI_SHMEM_TIMEOUT_MS", "0", 1);           // device waits without a deadline
  setenv("MORI_SHMEM_BOOTSTRAP_TIMEOUT", "120", 1);  // and barriers past the run's limit
  for (int exiter : {1, 0}) {                        // a rank, and the TCP bootstrap's hub
    CAPTURE(exiter);
    shmem::UniqueId id;
    REQUIRE(shmem::get_unique_id(&id) == 0);
    auto run = run_ranks(
        3, [&](int rank) { return exit_while_others_wait(id, rank, 3, exiter, 7); },
        std::chrono::seconds(30));
    for (const auto& r : run.children) {
      CAPTURE(r.rank);
      CHECK(r.text == "");
      CHECK_FALSE(r.timed_out);
      CHECK(r.exit_code == 7);
    }
    CHECK(run.elapsed < std::chrono::seconds(10));
  }
  unsetenv("MORI_SHMEM_TIMEOUT_MS");
  unsetenv("MORI_SHMEM_BOOTSTRAP_TIMEOUT");
}
