// The symmetric allocator: hands out offsets in [0, capacity). It is deterministic, so PEs that
// make the same calls in the same order get the same offsets, which is what makes the heap
// symmetric.
#pragma once

#include <cstddef>
#include <map>

#include "heap/free_list.hpp"
#include "mori/status.hpp"

namespace mori::heap {

class SymmetricAllocator {
 public:
  explicit SymmetricAllocator(size_t capacity);
  // First fit. `alignment` is a power of two. A zero size is given a distinct offset of its own
  // (minimum one alignment unit), as malloc(0) may. On failure *offset is untouched and the reason
  // says how much was asked for and how much is free in the largest hole.
  Status allocate(size_t size, size_t alignment, size_t* offset);
  // `offset` must have come from allocate() and not been released since.
  Status release(size_t offset);
  size_t capacity() const { return capacity_; }
  size_t used() const { return used_; }
  // One past the highest allocated byte: what must be mapped.
  size_t high_water() const;
  // The size allocated at `offset`, or 0 if none is.
  size_t allocation_size(size_t offset) const;

 private:
  size_t capacity_;
  size_t used_ = 0;
  FreeList free_;                  // the holes, coalesced
  std::map<size_t, size_t> live_;  // offset -> size as reserved
};

}  // namespace mori::heap
