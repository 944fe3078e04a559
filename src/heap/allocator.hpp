// The symmetric allocator: hands out offsets in [0, capacity). It is deterministic, so PEs that
// make the same calls in the same order get the same offsets, which is what makes the heap
// symmetric.
//
// Alignment is of the address, origin + offset, where origin is this PE's heap base. The PEs' bases
// differ, so the offsets stay the same on every PE only if every base has the same residue modulo
// each alignment asked for: the runtime makes every base a multiple of max_alignment and refuses
// larger alignments (check_alignment).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>

#include "heap/free_list.hpp"
#include "mori/status.hpp"

namespace mori::heap {

class SymmetricAllocator {
 public:
  static constexpr size_t kNoAlignmentLimit = ~(~size_t{0} >> 1);  // the largest power of two

  // `origin`: the address of offset 0. `max_alignment`: a power of two, the largest alignment
  // allocate() accepts.
  explicit SymmetricAllocator(size_t capacity, uintptr_t origin = 0,
                              size_t max_alignment = kNoAlignmentLimit);
  // Whether allocate() would accept `alignment`: a power of two no larger than max_alignment().
  // The reasons are the ones malloc_align reports.
  Status check_alignment(size_t alignment) const;
  // First fit: the lowest offset where origin + offset is a multiple of `alignment`, which must
  // pass check_alignment. A zero size is given a distinct offset of its own (minimum one alignment
  // unit), as malloc(0) may. On failure *offset is untouched and the reason says how much was asked
  // for and how much is free in the largest hole.
  Status allocate(size_t size, size_t alignment, size_t* offset);
  // `offset` must have come from allocate() and not been released since.
  Status release(size_t offset);
  size_t capacity() const { return capacity_; }
  size_t max_alignment() const { return max_alignment_; }
  size_t used() const { return used_; }
  // One past the highest allocated byte: what must be mapped.
  size_t high_water() const;
  // The size allocated at `offset`, or 0 if none is.
  size_t allocation_size(size_t offset) const;

 private:
  size_t capacity_;
  size_t max_alignment_;
  size_t used_ = 0;
  FreeList free_;                  // the holes, coalesced
  std::map<size_t, size_t> live_;  // offset -> size as reserved
};

}  // namespace mori::heap
