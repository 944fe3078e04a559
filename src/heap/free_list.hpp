// The free holes of the symmetric allocator: disjoint, coalesced, ordered by offset.
//
// Offsets count from an origin, the address where offset 0 lives (this PE's heap base), and
// alignment is asked of that address plus the offset: malloc_align promises an aligned address,
// and an aligned offset is one only when the base happens to be aligned as well.
//
// They live in a treap whose every node also records the largest hole in its subtree. That one
// extra field lets a first-fit search skip any subtree with no hole large enough, so finding,
// splitting and merging holes all cost O(log n) expected, where a plain ordered map would walk
// every hole below the first fit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace mori::heap {

class FreeList {
 public:
  struct Hole {
    size_t offset;
    size_t size;
  };
  struct Node;  // defined in free_list.cpp

  // `origin`: the address of offset 0. Only its residue modulo the alignments asked for matters.
  explicit FreeList(uintptr_t origin = 0);
  ~FreeList();
  FreeList(FreeList&&) noexcept;
  FreeList& operator=(FreeList&&) noexcept;
  FreeList(const FreeList&) = delete;
  FreeList& operator=(const FreeList&) = delete;

  // Gives [offset, offset + size) back, merged with the holes it touches. The range must not
  // overlap a hole (the allocator only returns what it took).
  void add(size_t offset, size_t size);
  // Takes `size` bytes at the lowest offset where they fit inside one hole and origin + offset is
  // a multiple of `alignment`, and returns that offset, or nothing if no hole can hold them.
  // `alignment` is a power of two. The search is O(log n) plus one step per hole that holds `size`
  // but not its alignment padding.
  std::optional<size_t> take_first_fit(size_t size, size_t alignment);
  // The size of the largest hole, 0 when there is none.
  size_t largest() const;
  size_t count() const { return count_; }
  // Every hole in offset order: for tests and diagnostics.
  std::vector<Hole> holes() const;

 private:
  uintptr_t origin_;
  std::unique_ptr<Node> root_;
  size_t count_ = 0;
};

}  // namespace mori::heap
