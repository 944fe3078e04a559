// The host API under mpirun (2 and 4 ranks): init from MPI, queries, symmetric allocation in both
// heap modes, calloc and realloc, ptr_p2p round trips, accessibility queries, barrier ordering,
// registration, and every bad input with its error text.
#include <doctest/doctest.h>
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "heap_env.hpp"
#include "mori/shmem.hpp"
#include "mori/version.hpp"

namespace shmem = mori::shmem;

namespace {

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
int world_size() {
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}
std::string error() { return shmem::last_error(); }

// The heap environment for the next init (2 MiB VMM chunks); restored by the destructor.
struct HeapEnv : mori::test::HeapEnv {
  HeapEnv(const char* mode, const char* size) : mori::test::HeapEnv(mode, size, "2M") {}
};

// Offsets of `p` from the heap base of every PE must agree: compare what every rank computed.
void check_symmetric(const void* p, const void* first) {
  const uint64_t mine = static_cast<const char*>(p) - static_cast<const char*>(first);
  std::vector<uint64_t> all(world_size());
  MPI_Allgather(&mine, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD);
  for (uint64_t o : all) CHECK(o == mine);
}

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

TEST_CASE("bad input: each failure names its cause and loses nothing") {
  HeapEnv env("static_heap", "8M");
  REQUIRE(shmem::init() == 0);
  CHECK(shmem::init() != 0);
  CHECK(error() == "init: already initialised (call finalize first)");

  void* keep = shmem::malloc(1024);
  REQUIRE(keep);
  CHECK(shmem::malloc(16ull << 20) == nullptr);  // larger than the heap
  CHECK(error().rfind("malloc: symmetric heap exhausted: 16777216 bytes requested", 0) == 0);
  CHECK(shmem::malloc_align(3, 64) == nullptr);
  CHECK(error() == "malloc_align: alignment 3 is not a power of two");
  CHECK(shmem::ext_malloc_with_flags(64, 7) == nullptr);
  CHECK(error() == "ext_malloc_with_flags: flags 7 are not supported (use 0)");
  CHECK(shmem::malloc(0) == nullptr);

  int not_heap = 0;
  CHECK(shmem::free(&not_heap) != 0);
  CHECK(error().find("is not in the symmetric heap [") != std::string::npos);
  CHECK(shmem::free(static_cast<char*>(keep) + 8) != 0);
  CHECK(error().find("is not the start of a live symmetric allocation") != std::string::npos);
  CHECK(shmem::ptr_p2p(reinterpret_cast<uint64_t>(keep), shmem::my_pe(), 99) == 0);
  CHECK(error() == "ptr_p2p: PE 99 is not in [0, " + std::to_string(shmem::n_pes()) + ")");

  // A PE that allocates out of order is named; every PE gets nullptr and the heap is unchanged.
  void* odd = shmem::malloc(shmem::my_pe() == 1 ? 8192 : 4096);
  CHECK(odd == nullptr);
  CHECK(error().find("every PE must allocate and free in the same order") != std::string::npos);
  CHECK(error().find("PE 1 made allocation #") != std::string::npos);
  void* next = shmem::malloc(1024);  // the mismatch left nothing behind: the offsets still agree
  REQUIRE(next);
  check_symmetric(next, keep);

  CHECK(shmem::free(next) == 0);
  CHECK(shmem::free(keep) == 0);
  REQUIRE(shmem::finalize() == 0);
  CHECK(shmem::finalize() != 0);
  CHECK(error() == "finalize: not initialised (call init or init_attr first)");
}

// VMM heap with 2 MiB chunks, so that a grown object reaches chunks not yet mapped.
TEST_CASE("calloc and realloc: zeroed, preserved, symmetric; a failure keeps the old object") {
  HeapEnv env("vmm_heap", "16M");
  REQUIRE(shmem::init() == 0);
  const int me = shmem::my_pe(), n = shmem::n_pes(), next = (me + 1) % n;
  void* anchor = shmem::malloc(256);  // offsets are compared from it
  REQUIRE(anchor);

  // calloc zeroes what an earlier object left there.
  const size_t bytes = 1 << 20;
  auto* dirty = static_cast<unsigned char*>(shmem::malloc(bytes));
  REQUIRE(dirty);
  std::memset(dirty, 0xAB, bytes);
  REQUIRE(shmem::free(dirty) == 0);
  auto* zeroed = static_cast<unsigned char*>(shmem::calloc(bytes / 8, 8));
  REQUIRE(zeroed);
  CHECK(zeroed ==
        dirty);  // first fit gives the dirtied block back: the check below means something
  CHECK(std::count(zeroed, zeroed + bytes, 0) == static_cast<std::ptrdiff_t>(bytes));
  check_symmetric(zeroed, anchor);
  CHECK(shmem::calloc(0, 8) == nullptr);
  CHECK(shmem::calloc(8, 0) == nullptr);
  CHECK(error() == "");
  CHECK(shmem::calloc(SIZE_MAX / 2, 3) == nullptr);
  CHECK(error() ==
        "calloc: " + std::to_string(SIZE_MAX / 2) + " objects of 3 bytes overflow size_t");
  REQUIRE(shmem::free(zeroed) == 0);

  // Grow past the mapped chunks, then shrink: the kept prefix survives each move, the new object
  // is at the same offset on every PE, and the next PE reads this PE's values in it.
  const size_t kept = 1000;
  auto* p = static_cast<uint32_t*>(shmem::malloc(kept * sizeof(uint32_t)));
  REQUIRE(p);
  for (size_t i = 0; i < kept; ++i) p[i] = (uint32_t(me) << 24) | uint32_t(i);
  auto expect_prefix = [&](const uint32_t* q, int pe, size_t count) {
    size_t wrong = 0;
    for (size_t i = 0; i < count; ++i) wrong += q[i] != ((uint32_t(pe) << 24) | uint32_t(i));
    CHECK(wrong == 0);
  };
  auto* grown = static_cast<uint32_t*>(shmem::realloc(p, 6 << 20));
  REQUIRE(grown);
  CHECK(grown != p);  // p stayed live while grown was placed: it cannot be in the same place
  check_symmetric(grown, anchor);
  expect_prefix(grown, me, kept);
  const auto* peer_grown = reinterpret_cast<const uint32_t*>(
      shmem::ptr_p2p(reinterpret_cast<uint64_t>(grown), me, next));
  REQUIRE(peer_grown);
  expect_prefix(peer_grown, next, kept);
  grown[(6 << 20) / sizeof(uint32_t) - 1] = 7;  // the whole new size is usable

  auto* shrunk = static_cast<uint32_t*>(shmem::realloc(grown, 400 * sizeof(uint32_t)));
  REQUIRE(shrunk);
  check_symmetric(shrunk, anchor);
  expect_prefix(shrunk, me, 400);
  const auto* peer_shrunk = reinterpret_cast<const uint32_t*>(
      shmem::ptr_p2p(reinterpret_cast<uint64_t>(shrunk), me, next));
  REQUIRE(peer_shrunk);
  expect_prefix(peer_shrunk, next, 400);

  // Larger than the heap: null, the reason, and the old object still live with its contents.
  CHECK(shmem::realloc(shrunk, 64 << 20) == nullptr);
  CHECK(error().rfind("realloc: symmetric heap exhausted: 67108864 bytes requested", 0) == 0);
  expect_prefix(shrunk, me, 400);
  int on_stack = 0;
  CHECK(shmem::realloc(&on_stack, 8) == nullptr);
  CHECK(error().find("realloc: ") == 0);
  CHECK(error().find("is not in the symmetric heap [") != std::string::npos);
  // PEs that move different objects: named, and both objects stay live with their contents.
  auto* other = static_cast<uint32_t*>(shmem::malloc(400 * sizeof(uint32_t)));
  REQUIRE(other);
  std::memcpy(other, shrunk, 400 * sizeof(uint32_t));
  CHECK(shmem::realloc(me == 1 ? other : shrunk, 8192) == nullptr);
  CHECK(error().find("every PE must allocate and free in the same order") != std::string::npos);
  expect_prefix(shrunk, me, 400);
  expect_prefix(other, me, 400);
  CHECK(shmem::free(other) == 0);
  void* after = shmem::malloc(1024);  // the failures left the heap symmetric
  REQUIRE(after);
  check_symmetric(after, anchor);
  CHECK(shmem::free(after) == 0);

  // nullptr acts as malloc; size 0 frees.
  void* fresh = shmem::realloc(nullptr, 4096);
  REQUIRE(fresh);
  check_symmetric(fresh, anchor);
  CHECK(shmem::realloc(nullptr, 0) == nullptr);
  CHECK(shmem::realloc(fresh, 0) == nullptr);
  CHECK(error() == "");
  CHECK(shmem::free(fresh) != 0);  // already freed by realloc(fresh, 0)
  CHECK(error().find("is not the start of a live symmetric allocation") != std::string::npos);

  CHECK(shmem::free(shrunk) == 0);
  CHECK(shmem::free(anchor) == 0);
  REQUIRE(shmem::finalize() == 0);
}

TEST_CASE("pe_accessible and addr_accessible: heap and registered addresses, valid PEs only") {
  HeapEnv env("static_heap", "8M");
  REQUIRE(shmem::init() == 0);
  const int n = shmem::n_pes();
  auto* obj = static_cast<char*>(shmem::malloc(4096));
  REQUIRE(obj);
  int on_stack = 0;
  std::vector<char> buf(1 << 12);
  for (int pe = 0; pe < n; ++pe) {
    CHECK(shmem::pe_accessible(pe) == 1);
    CHECK(shmem::addr_accessible(obj, pe) == 1);
    CHECK(shmem::addr_accessible(obj + 4095, pe) == 1);
    CHECK(shmem::addr_accessible(&on_stack, pe) == 0);
    CHECK(shmem::addr_accessible(buf.data(), pe) == 0);
  }
  for (int pe : {-1, n, INT_MAX}) {
    CHECK(shmem::free(&on_stack) != 0);  // leaves an error behind: a 0 answer must clear it
    CHECK(shmem::pe_accessible(pe) == 0);
    CHECK(error() == "");
    CHECK(shmem::free(&on_stack) != 0);
    CHECK(shmem::addr_accessible(obj, pe) == 0);
    CHECK(error() == "");
  }
  REQUIRE(shmem::buffer_register(buf.data(), buf.size()) == 0);
  // Another PE reached over P2P has no mapping of a plain registered buffer (its transfers trap):
  // 0 there, 1 for this PE and for PEs reached over RDMA.
  for (int pe = 0; pe < n; ++pe) {
    const bool p2p = shmem::ptr_p2p(reinterpret_cast<uint64_t>(obj), shmem::my_pe(), pe) != 0;
    CHECK(shmem::addr_accessible(buf.data() + 100, pe) == (pe == shmem::my_pe() || !p2p ? 1 : 0));
  }
  REQUIRE(shmem::buffer_deregister(buf.data(), buf.size()) == 0);
  CHECK(shmem::addr_accessible(buf.data() + 100, 0) == 0);
  CHECK(shmem::free(obj) == 0);
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

TEST_CASE("buffer_register: same size on every PE, overlap and unknown buffers refused") {
  HeapEnv env("static_heap", "8M");
  REQUIRE(shmem::init() == 0);
  std::vector<char> buf(1 << 16);
  CHECK(shmem::buffer_register(buf.data(), buf.size()) == 0);
  CHECK(shmem::ptr_p2p(reinterpret_cast<uint64_t>(buf.data() + 10), shmem::my_pe(),
                       shmem::my_pe()) == reinterpret_cast<uint64_t>(buf.data() + 10));
  CHECK(shmem::buffer_register(buf.data() + 100, 10) != 0);
  CHECK(error().find("overlaps the registered buffer") != std::string::npos);
  CHECK(shmem::buffer_register(nullptr, 10) != 0);
  CHECK(error() == "buffer_register: ptr is null");
  std::vector<char> other(shmem::my_pe() == 0 ? 100 : 200);
  CHECK(shmem::buffer_register(other.data(), other.size()) != 0);
  CHECK(error().find("every PE registers the same size") != std::string::npos);
  CHECK(shmem::buffer_deregister(buf.data(), 5) != 0);
  CHECK(error().find("was registered with 65536 bytes, not 5") != std::string::npos);
  CHECK(shmem::buffer_deregister(buf.data(), buf.size()) == 0);
  CHECK(shmem::buffer_deregister(buf.data(), buf.size()) != 0);
  CHECK(error().find("is not a registered buffer") != std::string::npos);
  REQUIRE(shmem::finalize() == 0);
}

TEST_CASE(
    "buffer_register_symmetric: only ext_alloc_shareable memory, refused on every PE, nothing "
    "lost") {
  HeapEnv env("static_heap", "8M");
  REQUIRE(shmem::init() == 0);
  const int me = shmem::my_pe(), n = shmem::n_pes();
  CHECK(shmem::ext_alloc_shareable(0) == nullptr);
  CHECK(error() == "ext_alloc_shareable: size is 0");
  CHECK(shmem::ext_free_shareable(nullptr) == 0);
  std::vector<char> plain(4096);
  CHECK(shmem::ext_free_shareable(plain.data()) != 0);
  CHECK(error().find("is not the start of memory from ext_alloc_shareable") != std::string::npos);

  constexpr size_t kBytes = 8192;
  char* buf = static_cast<char*>(shmem::ext_alloc_shareable(kBytes));
  REQUIRE_MESSAGE(buf != nullptr, error());
  // The last PE offers private memory: it names why, every other PE names it.
  void* offered = me == n - 1 ? static_cast<void*>(plain.data()) : buf;
  CHECK(shmem::buffer_register_symmetric(offered, 4096) != 0);
  if (me == n - 1)
    CHECK(error().find("is not memory from mori::shmem::ext_alloc_shareable, the only memory that "
                       "same-node peers can map on the host backend") != std::string::npos);
  else
    CHECK(error() == "buffer_register_symmetric: it failed on PE " + std::to_string(n - 1));
  // A range running past its allocation.
  CHECK(shmem::buffer_register_symmetric(buf + 4096, 4097) != 0);
  CHECK(error().find("runs past the end of its ext_alloc_shareable allocation of 8192 bytes") !=
        std::string::npos);
  // Nothing was left registered: the whole allocation registers now, and is then in use.
  REQUIRE_MESSAGE(shmem::buffer_register_symmetric(buf, kBytes) == 0, error());
  CHECK(shmem::addr_accessible(buf + 100, (me + 1) % n) == 1);
  CHECK(shmem::ext_free_shareable(buf) != 0);
  CHECK(error().find(": buffer_deregister it first") != std::string::npos);
  REQUIRE(shmem::buffer_deregister(buf, kBytes) == 0);
  CHECK(shmem::ext_free_shareable(buf) == 0);
  REQUIRE(shmem::finalize() == 0);
}
