// mpi.runtime's symmetric memory cases: every bad input of malloc, free and realloc with its error
// text (nothing lost), and calloc and realloc: zeroed, preserved, symmetric.
#include <doctest/doctest.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "mori/shmem.hpp"
#include "runtime_common.hpp"

namespace shmem = mori::shmem;
using namespace mori::test::runtime;  // NOLINT(google-build-using-namespace): the suite's helpers

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
