// malloc_align under mpirun (2 and 4 ranks), in both heap modes: every alignment from 8 bytes to
// kMaxAlignment gives an address that is a multiple of it on every PE, and in every PE's P2P view,
// with the same offset everywhere, also once odd-sized objects and frees have fragmented the heap.
// An alignment above the limit is refused with the limit in the reason.
//
// A regression: the allocator once aligned the offset inside the heap, so a 4 MiB request came back
// 2 MiB aligned whenever the heap was mapped at a 2 MiB boundary.
#include <doctest/doctest.h>
#include <mpi.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "heap_env.hpp"
#include "mori/shmem.hpp"

namespace shmem = mori::shmem;

namespace {

constexpr size_t kMiB = size_t{1} << 20;

// The heap environment for the next init; restored by the destructor. 512 MiB leaves room for
// several 64 MiB-aligned objects after the runtime's own block at offset 0; the memory is only
// touched where the test writes.
struct HeapEnv : mori::test::HeapEnv {
  explicit HeapEnv(const char* mode) : mori::test::HeapEnv(mode, "512M", "16M") {}
};

uintptr_t address(const void* p) { return reinterpret_cast<uintptr_t>(p); }
std::string error() { return shmem::last_error(); }

// Every PE must have placed `p` at the same distance from `anchor`, an object all PEs share.
void check_same_offset(const void* p, const void* anchor) {
  const uint64_t mine = address(p) - address(anchor);
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  std::vector<uint64_t> all(n);
  MPI_Allgather(&mine, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD);
  for (int pe = 0; pe < n; ++pe) {
    CAPTURE(pe);
    CHECK(all[pe] == mine);
  }
}

struct Object {
  void* p;
  size_t alignment;
  size_t size;
};

// The object's first and last bytes name their owner and the object; each PE writes them into the
// next PE's copy through ptr_p2p, so a view at the wrong offset fails the owner's check.
uint64_t tag(int pe, size_t index) { return (uint64_t(pe) << 32) | index; }

void run(const char* mode) {
  HeapEnv env(mode);
  REQUIRE(shmem::init() == 0);
  const int me = shmem::my_pe(), n = shmem::n_pes();
  void* anchor = shmem::malloc(64);
  REQUIRE(anchor);

  std::vector<Object> live, odd;
  for (int round = 0; round < 2; ++round) {
    for (size_t alignment = 8; alignment <= shmem::kMaxAlignment; alignment *= 2) {
      CAPTURE(alignment);
      const size_t size = (8 + 977 * alignment % 12289) | 1;  // odd, at least 9 bytes
      void* p = shmem::malloc_align(alignment, size);
      REQUIRE_MESSAGE(p, shmem::last_error());
      CHECK(address(p) % alignment == 0);
      check_same_offset(p, anchor);
      for (int pe = 0; pe < n; ++pe) {
        const uint64_t view = shmem::ptr_p2p(address(p), me, pe);
        REQUIRE(view != 0);
        CHECK(view % alignment == 0);  // every view of a heap starts on a kMaxAlignment boundary
      }
      live.push_back({p, alignment, size});
      // An odd-sized malloc between aligned ones, and every other one freed again: the next
      // aligned request starts its search in a heap full of holes that begin off every boundary.
      void* q = shmem::malloc(size * 3 + 1);
      REQUIRE(q);
      check_same_offset(q, anchor);
      odd.push_back({q, 256, size * 3 + 1});
      if (odd.size() % 2 == 0) {
        CHECK(shmem::free(odd[odd.size() - 2].p) == 0);
        odd.erase(odd.end() - 2);
      }
    }
  }

  const int next = (me + 1) % n, prev = (me + n - 1) % n;
  for (size_t i = 0; i < live.size(); ++i) {
    char* view = reinterpret_cast<char*>(shmem::ptr_p2p(address(live[i].p), me, next));
    const uint64_t word = tag(me, i);
    std::memcpy(view, &word, 8);
    std::memcpy(view + live[i].size - 8, &word, 8);
  }
  REQUIRE(shmem::barrier_all() == 0);
  size_t wrong = 0;
  for (size_t i = 0; i < live.size(); ++i) {
    uint64_t head = 0, tail = 0;
    std::memcpy(&head, live[i].p, 8);
    std::memcpy(&tail, static_cast<char*>(live[i].p) + live[i].size - 8, 8);
    wrong += head != tag(prev, i) || tail != tag(prev, i);
  }
  CHECK(wrong == 0);
  REQUIRE(shmem::barrier_all() == 0);

  for (const Object& o : live) CHECK(shmem::free(o.p) == 0);
  for (const Object& o : odd) CHECK(shmem::free(o.p) == 0);
  CHECK(shmem::free(anchor) == 0);
  REQUIRE(shmem::finalize() == 0);
}

}  // namespace

TEST_CASE("malloc_align: the limit is 64 MiB") { CHECK(shmem::kMaxAlignment == 64 * kMiB); }

TEST_CASE("malloc_align: a static heap gives addresses aligned as asked, 8 B to the limit") {
  run("static_heap");
}

TEST_CASE("malloc_align: a VMM heap gives addresses aligned as asked, 8 B to the limit") {
  run("vmm_heap");
}

TEST_CASE("malloc_align: an alignment above the limit is refused, naming it, and loses nothing") {
  HeapEnv env("static_heap");
  REQUIRE(shmem::init() == 0);
  void* before = shmem::malloc(100);
  REQUIRE(before);
  for (size_t alignment : {shmem::kMaxAlignment * 2, size_t{1} << 40}) {
    CAPTURE(alignment);
    CHECK(shmem::malloc_align(alignment, 64) == nullptr);
    CHECK(error() == "malloc_align: alignment " + std::to_string(alignment) +
                         " exceeds 67108864, the largest supported (every PE's heap "
                         "base is a multiple of it)");
  }
  // The bad alignments of before stay as they were.
  CHECK(shmem::malloc_align(3, 64) == nullptr);
  CHECK(error() == "malloc_align: alignment 3 is not a power of two");
  CHECK(shmem::malloc_align(0, 64) == nullptr);
  CHECK(error() == "malloc_align: alignment 0 is not a power of two");
  // The limit itself works, and the refusals took nothing: the next object sits where it would
  // have anyway, right after the first.
  void* max = shmem::malloc_align(shmem::kMaxAlignment, 64);
  REQUIRE(max);
  CHECK(address(max) % shmem::kMaxAlignment == 0);
  check_same_offset(max, before);
  void* after = shmem::malloc(100);
  REQUIRE(after);
  CHECK(address(after) == address(before) + 256);
  CHECK(shmem::free(after) == 0);
  CHECK(shmem::free(max) == 0);
  CHECK(shmem::free(before) == 0);
  REQUIRE(shmem::finalize() == 0);
}
