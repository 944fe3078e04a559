// heap::SymmetricAllocator: determinism, alignment of the address (origin + offset) whatever the
// origin, the alignment limit, coalescing, error texts, and a seeded storm of allocations and
// releases checked against a brute-force model.
#include <doctest/doctest.h>

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "heap/allocator.hpp"

using mori::heap::SymmetricAllocator;

namespace {

constexpr size_t kMiB = size_t{1} << 20;
// A heap base that is aligned to nothing beyond 1 byte: origin + offset is aligned only if the
// allocator pads for the origin, not just for the offset.
constexpr uintptr_t kOddOrigin = 0x7f3a12345679;

size_t must_allocate(SymmetricAllocator& a, size_t size, size_t alignment) {
  size_t offset = ~size_t{0};
  const mori::Status s = a.allocate(size, alignment, &offset);
  REQUIRE_MESSAGE(s.ok(), s.message());
  return offset;
}

void must_release(SymmetricAllocator& a, size_t offset) {
  const mori::Status s = a.release(offset);
  REQUIRE_MESSAGE(s.ok(), s.message());
}

}  // namespace

TEST_CASE("allocator: two allocators fed the same calls hand out the same offsets") {
  SymmetricAllocator a(64 * kMiB), b(64 * kMiB);
  std::mt19937_64 rng(7);
  std::vector<size_t> live;
  for (int step = 0; step < 2000; ++step) {
    if (!live.empty() && rng() % 3 == 0) {
      const size_t pick = rng() % live.size();
      must_release(a, live[pick]);
      must_release(b, live[pick]);
      live.erase(live.begin() + static_cast<ptrdiff_t>(pick));
    } else {
      const size_t size = rng() % 20000, alignment = size_t{1} << (rng() % 13);
      const size_t offset = must_allocate(a, size, alignment);
      CHECK(must_allocate(b, size, alignment) == offset);
      live.push_back(offset);
    }
  }
  CHECK(a.used() == b.used());
  CHECK(a.high_water() == b.high_water());
}

TEST_CASE("allocator: offsets honour the alignment asked for") {
  for (size_t alignment : {size_t{256}, size_t{4096}, size_t{1} << 20}) {
    CAPTURE(alignment);
    SymmetricAllocator a(16 * kMiB);
    must_allocate(a, 1, 1);  // knock the next free byte off every boundary
    for (int i = 0; i < 5; ++i) {
      const size_t offset = must_allocate(a, 1000 + i, alignment);
      CHECK(offset % alignment == 0);
      CHECK(a.allocation_size(offset) == 1000 + static_cast<size_t>(i));
    }
  }
}

TEST_CASE("allocator: the address origin + offset honours the alignment, not just the offset") {
  for (size_t alignment :
       {size_t{8}, size_t{256}, size_t{4096}, size_t{1} << 16, size_t{1} << 20, size_t{4} << 20}) {
    CAPTURE(alignment);
    SymmetricAllocator a(64 * kMiB, kOddOrigin);
    // In an empty heap the first fit is the first aligned address: exactly this far in.
    const size_t first = must_allocate(a, 100, alignment);
    CHECK(first == (alignment - kOddOrigin % alignment) % alignment);
    CHECK((kOddOrigin + first) % alignment == 0);
    // Fragment the heap with odd-sized blocks, free every other one, and ask again: the holes now
    // start at arbitrary addresses, and the first fit must pad each from its own address.
    std::vector<size_t> odd;
    for (int i = 0; i < 40; ++i) odd.push_back(must_allocate(a, 1000 + 77 * i, 1));
    for (size_t i = 0; i < odd.size(); i += 2) must_release(a, odd[i]);
    for (int i = 0; i < 12; ++i) {
      const size_t offset = must_allocate(a, 333 + 1000 * i, alignment);
      CAPTURE(offset);
      CHECK((kOddOrigin + offset) % alignment == 0);
      CHECK(a.allocation_size(offset) == 333 + 1000 * static_cast<size_t>(i));
    }
  }
}

TEST_CASE("allocator: origins that differ by a multiple of the limit give the same offsets") {
  // Two PEs' heap bases, both multiples of 64 MiB, and a third that is not.
  SymmetricAllocator a(256 * kMiB, 0x7f0004000000, 64 * kMiB);
  SymmetricAllocator b(256 * kMiB, 0x7f1230000000, 64 * kMiB);
  SymmetricAllocator c(256 * kMiB, 0x7f1230000000 + 4096, 64 * kMiB);
  bool c_differs = false;
  for (int k = 3; k <= 26; ++k) {
    const size_t alignment = size_t{1} << k, size = 977 * static_cast<size_t>(k) + 1;
    CAPTURE(alignment);
    const size_t offset = must_allocate(a, size, alignment);
    CHECK(must_allocate(b, size, alignment) == offset);
    c_differs |= must_allocate(c, size, alignment) != offset;
  }
  CHECK(c_differs);  // the congruence is what keeps the heap symmetric
}

TEST_CASE("allocator: an alignment above max_alignment is refused, naming the limit") {
  SymmetricAllocator a(256 * kMiB, kOddOrigin, 64 * kMiB);
  CHECK(a.max_alignment() == 64 * kMiB);
  size_t offset = 12345;
  for (size_t alignment : {128 * kMiB, size_t{1} << 40}) {
    CAPTURE(alignment);
    const mori::Status s = a.allocate(64, alignment, &offset);
    REQUIRE_FALSE(s.ok());
    CHECK(s.message() == "alignment " + std::to_string(alignment) +
                             " exceeds 67108864, the largest supported (every PE's heap base is a "
                             "multiple of it)");
    CHECK(a.check_alignment(alignment).message() == s.message());
    CHECK(offset == 12345);
  }
  CHECK(a.used() == 0);
  CHECK(a.check_alignment(3).message() == "alignment 3 is not a power of two");
  // The limit itself is accepted.
  CHECK(a.check_alignment(64 * kMiB).ok());
  offset = must_allocate(a, 1, 64 * kMiB);
  CHECK((kOddOrigin + offset) % (64 * kMiB) == 0);
}

TEST_CASE("allocator: an alignment that is not a power of two is refused, naming it") {
  SymmetricAllocator a(kMiB);
  size_t offset = 12345;
  for (size_t alignment : {size_t{3}, size_t{0}, size_t{96}}) {
    const mori::Status s = a.allocate(64, alignment, &offset);
    REQUIRE_FALSE(s.ok());
    CHECK(s.message() == "alignment " + std::to_string(alignment) + " is not a power of two");
    CHECK(offset == 12345);
  }
}

TEST_CASE("allocator: exhaustion names the request and the largest free block") {
  SymmetricAllocator a(8 * kMiB);
  const size_t first = must_allocate(a, 8 * kMiB - 4096, 256);
  CHECK(first == 0);
  size_t offset = 777;
  mori::Status s = a.allocate(kMiB, 256, &offset);
  REQUIRE_FALSE(s.ok());
  CHECK(s.message() ==
        "symmetric heap exhausted: 1048576 bytes requested (alignment 256), largest free block is "
        "4096 bytes of 8388608; raise MORI_SHMEM_HEAP_SIZE");
  CHECK(offset == 777);

  // The hole is large enough, but not once the alignment padding is paid.
  must_release(a, first);
  must_allocate(a, 100, 1);
  s = a.allocate(8 * kMiB - 200, 4096, &offset);
  REQUIRE_FALSE(s.ok());
  CHECK(s.message() ==
        "symmetric heap exhausted: 8388408 bytes requested (alignment 4096), largest free block is "
        "8388508 bytes of 8388608; raise MORI_SHMEM_HEAP_SIZE");
}

TEST_CASE("allocator: released neighbours coalesce into one block") {
  SymmetricAllocator a(4 * kMiB);
  const size_t x = must_allocate(a, kMiB, 1);
  const size_t y = must_allocate(a, kMiB, 1);
  const size_t z = must_allocate(a, kMiB, 1);
  const size_t w = must_allocate(a, kMiB, 1);
  CHECK(a.used() == 4 * kMiB);

  // Middle first, then its neighbours from both sides: the three must merge into one hole.
  must_release(a, y);
  must_release(a, x);
  must_release(a, z);
  CHECK(must_allocate(a, 3 * kMiB, 1) == 0);
  must_release(a, 0);

  // Freed in the other order as well, down to an empty heap that holds the full capacity again.
  must_release(a, w);
  CHECK(a.used() == 0);
  CHECK(must_allocate(a, 4 * kMiB, 4096) == 0);
}

TEST_CASE("allocator: releasing an offset that is not a live allocation is refused") {
  SymmetricAllocator a(kMiB);
  mori::Status s = a.release(0x1234);
  REQUIRE_FALSE(s.ok());
  CHECK(s.message() == "offset 0x1234 is not the start of a live allocation");

  const size_t offset = must_allocate(a, 4096, 4096);
  s = a.release(offset + 16);
  REQUIRE_FALSE(s.ok());
  CHECK(s.message() == "offset 0x10 is not the start of a live allocation");
  must_release(a, offset);
  s = a.release(offset);  // twice
  REQUIRE_FALSE(s.ok());
  CHECK(s.message() == "offset 0x0 is not the start of a live allocation");
}

TEST_CASE("allocator: a zero-size allocation gets an offset of its own") {
  SymmetricAllocator a(kMiB);
  const size_t p = must_allocate(a, 0, 256);
  const size_t q = must_allocate(a, 0, 256);
  CHECK(p != q);
  CHECK(a.allocation_size(p) == 256);
  CHECK(a.used() == 512);
  must_release(a, p);
  must_release(a, q);
  CHECK(a.used() == 0);
}

TEST_CASE("allocator: high_water is one past the highest live byte") {
  SymmetricAllocator a(16 * kMiB);
  CHECK(a.high_water() == 0);
  const size_t p = must_allocate(a, 1000, 256);
  CHECK(a.high_water() == 1000);
  const size_t q = must_allocate(a, 5000, 4096);
  CHECK(q == 4096);
  CHECK(a.high_water() == 4096 + 5000);
  must_release(a, p);
  CHECK(a.high_water() == 4096 + 5000);
  must_release(a, q);
  CHECK(a.high_water() == 0);
}

// Every allocation is checked against a byte-range model: inside capacity, aligned, disjoint from
// every other live block, and placed at the lowest offset first fit allows.
TEST_CASE("allocator: a seeded storm of allocations and releases matches a reference model") {
  constexpr size_t kCapacity = 4 * kMiB;
  // (seed, origin): the storm over a base at 0 and over bases aligned to nothing.
  const std::pair<uint64_t, uintptr_t> runs[] = {
      {1, 0}, {2, 0}, {3, 0}, {4, kOddOrigin}, {5, kOddOrigin + 0x1000}};
  for (const auto& run : runs) {
    const uint64_t seed = run.first;
    const uintptr_t origin = run.second;
    CAPTURE(seed);
    CAPTURE(origin);
    SymmetricAllocator a(kCapacity, origin);
    std::map<size_t, size_t> model;  // live offset -> reserved size
    std::mt19937_64 rng(seed);
    size_t failures = 0;
    for (int step = 0; step < 6000; ++step) {
      if (!model.empty() && rng() % 100 < 45) {
        auto it = model.begin();
        std::advance(it, static_cast<ptrdiff_t>(rng() % model.size()));
        must_release(a, it->first);
        model.erase(it);
        continue;
      }
      const size_t size = rng() % 8 == 0 ? rng() % (512 * 1024) : rng() % 4096;
      const size_t alignment = size_t{1} << (rng() % 14);
      const size_t reserved = size ? size : alignment;
      // First fit by brute force: the lowest offset in a gap between live blocks whose address
      // (origin + offset) is aligned.
      size_t expected = ~size_t{0}, cursor = 0;
      auto consider = [&](size_t gap_end) {
        const size_t at = (origin + cursor + alignment - 1) / alignment * alignment - origin;
        if (expected == ~size_t{0} && at <= gap_end && reserved <= gap_end - at) expected = at;
      };
      for (const auto& [offset, bytes] : model) {
        consider(offset);
        cursor = offset + bytes;
      }
      consider(kCapacity);

      size_t offset = 0;
      const mori::Status s = a.allocate(size, alignment, &offset);
      if (expected == ~size_t{0}) {
        CHECK_FALSE(s.ok());
        ++failures;
        continue;
      }
      REQUIRE_MESSAGE(s.ok(), s.message());
      REQUIRE(offset == expected);
      REQUIRE(offset + reserved <= kCapacity);
      auto next = model.lower_bound(offset);
      if (next != model.end()) REQUIRE(offset + reserved <= next->first);
      if (next != model.begin())
        REQUIRE(std::prev(next)->first + std::prev(next)->second <= offset);
      model.emplace(offset, reserved);
    }
    size_t used = 0;
    for (const auto& [offset, bytes] : model) used += bytes;
    CHECK(a.used() == used);
    CHECK(a.high_water() == (model.empty() ? 0 : model.rbegin()->first + model.rbegin()->second));
    CHECK(failures > 0);  // the storm did reach exhaustion
  }
}
