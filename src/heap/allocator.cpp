// First fit over [0, capacity). Nothing here depends on time or randomness, and the one address
// it reads, the origin, matters only modulo the alignment asked for, which is the same on every PE
// (allocator.hpp): the offsets are a function of the call sequence alone, which is what keeps the
// heap symmetric across PEs.
#include "heap/allocator.hpp"

#include <cstdio>
#include <string>

namespace mori::heap {

SymmetricAllocator::SymmetricAllocator(size_t capacity, uintptr_t origin, size_t max_alignment)
    : capacity_(capacity), max_alignment_(max_alignment), free_(origin) {
  free_.add(0, capacity);
}

Status SymmetricAllocator::check_alignment(size_t alignment) const {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0)
    return Status::error("alignment " + std::to_string(alignment) + " is not a power of two");
  if (alignment > max_alignment_) {
    return Status::error("alignment " + std::to_string(alignment) + " exceeds " +
                         std::to_string(max_alignment_) +
                         ", the largest supported (every PE's heap base is a multiple of it)");
  }
  return {};
}

Status SymmetricAllocator::allocate(size_t size, size_t alignment, size_t* offset) {
  MORI_TRY(check_alignment(alignment));
  // A zero-size block still takes room, so that it has an offset no other live block shares.
  const size_t reserved = size ? size : alignment;
  const std::optional<size_t> at = free_.take_first_fit(reserved, alignment);
  if (!at) {
    return Status::error("symmetric heap exhausted: " + std::to_string(size) +
                         " bytes requested (alignment " + std::to_string(alignment) +
                         "), largest free block is " + std::to_string(free_.largest()) +
                         " bytes of " + std::to_string(capacity_) + "; raise MORI_SHMEM_HEAP_SIZE");
  }
  live_.emplace(*at, reserved);
  used_ += reserved;
  *offset = *at;
  return {};
}

Status SymmetricAllocator::release(size_t offset) {
  const auto it = live_.find(offset);
  if (it == live_.end()) {
    char text[96];
    std::snprintf(text, sizeof text, "offset 0x%zx is not the start of a live allocation", offset);
    return Status::error(text);
  }
  free_.add(it->first, it->second);
  used_ -= it->second;
  live_.erase(it);
  return {};
}

size_t SymmetricAllocator::high_water() const {
  if (live_.empty()) return 0;
  const auto& [offset, size] = *live_.rbegin();
  return offset + size;
}

size_t SymmetricAllocator::allocation_size(size_t offset) const {
  const auto it = live_.find(offset);
  return it == live_.end() ? 0 : it->second;
}

}  // namespace mori::heap
