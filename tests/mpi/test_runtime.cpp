// The host API under mpirun (2 and 4 ranks), the init side of mpi.runtime: every call before init,
// the library's version, init from MPI in both heap modes with symmetric offsets and ptr_p2p round
// trips, init_attr with a communicator, barrier ordering, and bad environment values. The suite's
// other files: runtime_memory.cpp, runtime_registration.cpp, runtime_openshmem15.cpp.
#include <doctest/doctest.h>
#include <mpi.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "mori/shmem.hpp"
#include "mori/version.hpp"
#include "runtime_common.hpp"

namespace shmem = mori::shmem;
using namespace mori::test::runtime;  // NOLINT(google-build-using-namespace): the suite's helpers

namespace {

void run_heap_round_trips() {
  const int me = shmem::my_pe(), n = shmem::n_pes();
  REQUIRE(me == world_rank());
  REQUIRE(n == world_size());
  CHECK(shmem::num_qp_per_pe() == 4);

  // Several objects, including one that reaches past the first VMM chunks.
  auto* a = static_cast<uint64_t*>(shmem::malloc(4096));
  auto* b = static_cast<uint64_t*>(shmem::malloc_align(1 << 20, 3 << 20));
  auto* c = static_cast<uint32_t*>(shmem::ext_malloc_with_flags(100, 0));
  REQUIRE(a);
  REQUIRE(b);
  REQUIRE(c);
  CHECK(reinterpret_cast<uintptr_t>(a) % 256 == 0);
  CHECK(reinterpret_cast<uintptr_t>(b) % (1 << 20) == 0);
  check_symmetric(b, a);
  check_symmetric(c, a);

  // Every PE writes its slot in every peer's copy through ptr_p2p; after the barrier each owner
  // checks all.
  const size_t words = (3 << 20) / sizeof(uint64_t);
  for (int pe = 0; pe < n; ++pe) {
    auto* peer_a =
        reinterpret_cast<uint64_t*>(shmem::ptr_p2p(reinterpret_cast<uint64_t>(a), me, pe));
    auto* peer_b =
        reinterpret_cast<uint64_t*>(shmem::ptr_p2p(reinterpret_cast<uint64_t>(b), me, pe));
    REQUIRE(peer_a);
    REQUIRE(peer_b);
    if (pe == me) CHECK(peer_a == a);
    peer_a[me] = 1000 * pe + me;
    for (size_t i = me; i < words; i += n) peer_b[i] = (uint64_t(pe) << 32) | i;
  }
  REQUIRE(shmem::barrier_all() == 0);
  for (int src = 0; src < n; ++src) CHECK(a[src] == uint64_t(1000 * me + src));
  size_t wrong = 0;
  for (size_t i = 0; i < words; ++i) wrong += b[i] != ((uint64_t(me) << 32) | i);
  CHECK(wrong == 0);

  // ptr_p2p of a non-symmetric pointer, and of an interior pointer.
  uint64_t local = 0;
  CHECK(shmem::ptr_p2p(reinterpret_cast<uint64_t>(&local), me, (me + 1) % n) == 0);
  const uint64_t interior = reinterpret_cast<uint64_t>(a + 7);
  const uint64_t peer_interior = shmem::ptr_p2p(interior, me, (me + 1) % n);
  CHECK(peer_interior == shmem::ptr_p2p(reinterpret_cast<uint64_t>(a), me, (me + 1) % n) + 56);

  CHECK(shmem::free(c) == 0);
  CHECK(shmem::free(b) == 0);
  CHECK(shmem::free(a) == 0);
  // Freed space is reused at the same offsets everywhere.
  auto* again = shmem::malloc(4096);
  CHECK(again == static_cast<void*>(a));
  CHECK(shmem::free(again) == 0);
}

}  // namespace

TEST_CASE("before init every call fails with the reason") {
  CHECK(shmem::my_pe() == -1);
  CHECK(error() == "my_pe: not initialised (call init or init_attr first)");
  CHECK(shmem::n_pes() == -1);
  CHECK(shmem::malloc(8) == nullptr);
  CHECK(error() == "malloc: not initialised (call init or init_attr first)");
  CHECK(shmem::barrier_all() != 0);
  CHECK(error() == "barrier_all: not initialised (call init or init_attr first)");
  CHECK(shmem::finalize() != 0);
  CHECK(error() == "finalize: not initialised (call init or init_attr first)");
  CHECK(shmem::calloc(1, 8) == nullptr);
  CHECK(error() == "calloc: not initialised (call init or init_attr first)");
  CHECK(shmem::realloc(nullptr, 8) == nullptr);
  CHECK(error() == "realloc: not initialised (call init or init_attr first)");
  CHECK(shmem::pe_accessible(0) == 0);
  CHECK(error() == "pe_accessible: not initialised (call init or init_attr first)");
  int local = 0;
  CHECK(shmem::addr_accessible(&local, 0) == 0);
  CHECK(error() == "addr_accessible: not initialised (call init or init_attr first)");
}

TEST_CASE("info_get_version and info_get_name: OpenSHMEM 1.5 and the library, before init too") {
  int major = 0, minor = 0;
  shmem::info_get_version(&major, &minor);
  CHECK(major == 1);
  CHECK(minor == 5);
  CHECK(error() == "");
  char name[shmem::kMaxNameLen];
  std::memset(name, 'x', sizeof name);
  shmem::info_get_name(name);
  CHECK(error() == "");
  REQUIRE(std::memchr(name, '\0', sizeof name) != nullptr);
  CHECK(std::string(name) == std::string("mori ") + mori::version());

  shmem::info_get_version(nullptr, &minor);
  CHECK(error() == "info_get_version: major is null");
  shmem::info_get_version(&major, nullptr);
  CHECK(error() == "info_get_version: minor is null");
  shmem::info_get_name(nullptr);
  CHECK(error() == "info_get_name: name is null");
}

TEST_CASE("static heap: init from MPI, symmetric offsets, ptr_p2p round trips") {
  HeapEnv env("static_heap", "64M");
  REQUIRE(shmem::init() == 0);
  run_heap_round_trips();
  REQUIRE(shmem::finalize() == 0);
}

TEST_CASE("vmm heap: chunks mapped on demand, same round trips") {
  HeapEnv env("vmm_heap", "64M");
  REQUIRE(shmem::init() == 0);
  run_heap_round_trips();
  REQUIRE(shmem::finalize() == 0);
}

TEST_CASE("init_attr with an MPI communicator: a split communicator makes its own PE numbering") {
  MPI_Comm reversed;
  MPI_Comm_split(MPI_COMM_WORLD, 0, world_size() - world_rank(), &reversed);
  shmem::InitAttr attr;
  attr.mpi_comm = &reversed;
  HeapEnv env("static_heap", "8M");
  REQUIRE(shmem::init_attr(shmem::MORI_SHMEM_INIT_WITH_MPI_COMM, &attr) == 0);
  CHECK(shmem::my_pe() == world_size() - 1 - world_rank());
  REQUIRE(shmem::finalize() == 0);
  MPI_Comm_free(&reversed);
}

TEST_CASE("barrier_all orders writes: no PE reads a round's value before every PE wrote it") {
  HeapEnv env("static_heap", "8M");
  REQUIRE(shmem::init() == 0);
  const int me = shmem::my_pe(), n = shmem::n_pes();
  auto* slots = static_cast<uint64_t*>(shmem::malloc(n * sizeof(uint64_t)));
  REQUIRE(slots);
  int stale = 0;
  for (uint64_t round = 1; round <= 200; ++round) {
    for (int pe = 0; pe < n; ++pe) {
      auto* peer =
          reinterpret_cast<uint64_t*>(shmem::ptr_p2p(reinterpret_cast<uint64_t>(slots), me, pe));
      peer[me] = round;
    }
    REQUIRE(shmem::barrier_all() == 0);
    for (int pe = 0; pe < n; ++pe) stale += slots[pe] != round;
    REQUIRE(shmem::barrier_all() == 0);
  }
  CHECK(stale == 0);
  CHECK(shmem::free(slots) == 0);
  REQUIRE(shmem::finalize() == 0);
}

TEST_CASE("invalid environment values fail init with the value quoted") {
  setenv("MORI_SHMEM_HEAP_SIZE", "6X", 1);
  CHECK(shmem::init() != 0);
  CHECK(error().find("MORI_SHMEM_HEAP_SIZE=\"6X\"") != std::string::npos);
  setenv("MORI_SHMEM_HEAP_SIZE", "8M", 1);
  setenv("MORI_SHMEM_MODE", "dynamic", 1);
  CHECK(shmem::init() != 0);
  CHECK(error().find("MORI_SHMEM_MODE=\"dynamic\"") != std::string::npos);
  unsetenv("MORI_SHMEM_MODE");
  setenv("MORI_NUM_QP_PER_PE", "0", 1);
  CHECK(shmem::init() != 0);
  CHECK(error().find("MORI_NUM_QP_PER_PE=\"0\"") != std::string::npos);
  unsetenv("MORI_NUM_QP_PER_PE");
  unsetenv("MORI_SHMEM_HEAP_SIZE");
  CHECK(shmem::my_pe() == -1);  // nothing was left half-initialised
}
