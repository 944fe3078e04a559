// The host API initialised from a unique ID, with PEs as forked processes and no MPI: queries,
// symmetric allocation, ptr_p2p round trips and barriers; and the failures: a PE that never
// arrives, a PE killed during bootstrap, a garbage ID.
#include <doctest/doctest.h>
#include <signal.h>
#include <stdlib.h>

#include <chrono>
#include <cstring>
#include <regex>
#include <string>

#include "fork_children.hpp"
#include "mori/shmem.hpp"
#include "uid_pe.hpp"

namespace shmem = mori::shmem;
using mori::test::attr_for;
using mori::test::run_children;
using mori::test::run_ranks;

namespace {

std::string round_trip(const shmem::UniqueId& id, int rank, int n) {
  shmem::InitAttr attr = attr_for(id, rank, n);
  PE_CHECK(shmem::init_attr(shmem::MORI_SHMEM_INIT_WITH_UNIQUEID, &attr) == 0);
  PE_CHECK(shmem::my_pe() == rank);
  PE_CHECK(shmem::n_pes() == n);
  auto* slots = static_cast<uint64_t*>(shmem::malloc_align(256, n * sizeof(uint64_t)));
  PE_CHECK(slots != nullptr);
  PE_CHECK(reinterpret_cast<uintptr_t>(slots) % 256 == 0);
  for (int pe = 0; pe < n; ++pe) {
    auto* peer =
        reinterpret_cast<uint64_t*>(shmem::ptr_p2p(reinterpret_cast<uint64_t>(slots), rank, pe));
    PE_CHECK(peer != nullptr);
    peer[rank] = 100 * pe + rank;
  }
  PE_CHECK(shmem::barrier_all() == 0);
  for (int src = 0; src < n; ++src) PE_CHECK(slots[src] == uint64_t(100 * rank + src));
  PE_CHECK(shmem::free(slots) == 0);
  PE_CHECK(shmem::finalize() == 0);
  return "";
}

std::string init_error(const shmem::UniqueId& id, int rank, int n) {
  shmem::InitAttr attr = attr_for(id, rank, n);
  if (shmem::init_attr(shmem::MORI_SHMEM_INIT_WITH_UNIQUEID, &attr) == 0) return "joined";
  return shmem::last_error();
}

}  // namespace

TEST_CASE(
    "unique ID init with 1, 2 and 4 forked PEs: queries, symmetric memory, ptr_p2p, barrier") {
  setenv("MORI_SHMEM_HEAP_SIZE", "16M", 1);
  for (int n : {1, 2, 4}) {
    CAPTURE(n);
    shmem::UniqueId id;
    REQUIRE(shmem::get_unique_id(&id) == 0);
    auto run =
        run_ranks(n, [&](int rank) { return round_trip(id, rank, n); }, std::chrono::seconds(60));
    for (const auto& r : run.children) {
      CAPTURE(r.rank);
      CHECK(r.text == "");
      CHECK(r.exit_code == 0);
    }
  }
}

TEST_CASE("unique ID init in VMM mode") {
  setenv("MORI_SHMEM_HEAP_SIZE", "16M", 1);
  setenv("MORI_SHMEM_MODE", "vmm_heap", 1);
  setenv("MORI_SHMEM_VMM_CHUNK_SIZE", "2M", 1);
  shmem::UniqueId id;
  REQUIRE(shmem::get_unique_id(&id) == 0);
  auto run =
      run_ranks(2, [&](int rank) { return round_trip(id, rank, 2); }, std::chrono::seconds(60));
  for (const auto& r : run.children) CHECK(r.text == "");
  unsetenv("MORI_SHMEM_MODE");
  unsetenv("MORI_SHMEM_VMM_CHUNK_SIZE");
}

TEST_CASE("a PE that never arrives: the others fail init within the deadline, naming it") {
  setenv("MORI_SHMEM_HEAP_SIZE", "16M", 1);
  setenv("MORI_SHMEM_BOOTSTRAP_TIMEOUT", "2", 1);
  shmem::UniqueId id;
  REQUIRE(shmem::get_unique_id(&id) == 0);
  auto run = run_children(
      {0, 1}, [&](int rank) { return init_error(id, rank, 3); }, std::chrono::seconds(30));
  CHECK(run.elapsed < std::chrono::seconds(15));
  for (const auto& r : run.children) {
    CAPTURE(r.text);
    CHECK(r.exit_code == 1);
    CHECK(r.text.find("init_attr: ") == 0);
    CHECK(r.text.find("rank(s) 2") != std::string::npos);
  }
  unsetenv("MORI_SHMEM_BOOTSTRAP_TIMEOUT");
}

TEST_CASE("a PE killed during bootstrap: the survivors report it within the deadline") {
  setenv("MORI_SHMEM_HEAP_SIZE", "16M", 1);
  setenv("MORI_SHMEM_BOOTSTRAP_TIMEOUT", "3", 1);
  shmem::UniqueId id;
  REQUIRE(shmem::get_unique_id(&id) == 0);
  auto run = run_ranks(
      3,
      [&](int rank) -> std::string {
        // Rank 1 dies a millisecond into init, wherever it is by then.
        if (rank == 1) {
          signal(SIGALRM, SIG_DFL);
          ualarm(1000, 0);
        }
        shmem::InitAttr attr = attr_for(id, rank, 3);
        if (shmem::init_attr(shmem::MORI_SHMEM_INIT_WITH_UNIQUEID, &attr) != 0)
          return shmem::last_error();
        // Init may have completed before the alarm: then its death must still not hang the others.
        if (shmem::barrier_all() != 0) return shmem::last_error();
        return "";
      },
      std::chrono::seconds(30));
  CHECK(run.children[1].signal == SIGALRM);
  for (int r : {0, 2}) {
    CAPTURE(run.children[r].text);
    CHECK(run.children[r].exit_code == 1);
    CHECK(std::regex_search(run.children[r].text, std::regex(R"(rank(\(s\))? 1\b)")));
  }
  CHECK(run.elapsed < std::chrono::seconds(20));
  unsetenv("MORI_SHMEM_BOOTSTRAP_TIMEOUT");
}

TEST_CASE("a garbage unique ID is refused with the reason, and nothing is left initialised") {
  shmem::UniqueId id;
  std::memset(id.bytes, 0x5a, sizeof id.bytes);
  shmem::InitAttr attr = attr_for(id, 0, 2);
  CHECK(shmem::init_attr(shmem::MORI_SHMEM_INIT_WITH_UNIQUEID, &attr) != 0);
  CHECK(std::string(shmem::last_error()).find("init_attr: not a mori unique ID") == 0);
  attr.rank = 5;
  CHECK(shmem::init_attr(shmem::MORI_SHMEM_INIT_WITH_UNIQUEID, &attr) != 0);
  CHECK(std::string(shmem::last_error()) == "init_attr: rank 5 is not in [0, n_ranks = 2)");
  CHECK(shmem::init_attr(7, &attr) != 0);
  CHECK(std::string(shmem::last_error()) ==
        "init_attr: unknown flags 7 (MORI_SHMEM_INIT_WITH_MPI_COMM = 0, "
        "MORI_SHMEM_INIT_WITH_UNIQUEID = 1)");
  CHECK(shmem::my_pe() == -1);
}
