// SymmObj<T>: a symmetric object, the second addressing form of the device API. It names an array
// of `count` elements that exists at the same offset on every PE (from shmem::malloc, or a
// registered buffer); calls take the object plus an element offset, and checked builds also check
// that offset + nelems stays inside it.
#pragma once

#include <cstddef>

#include "mori/state/device_error.hpp"

namespace mori::shmem {

template <typename T>
struct SymmObj {
  T* ptr = nullptr;  // this PE's copy
  size_t count = 0;  // elements
};

namespace detail {

// The address of elements [offset, offset + nelems) of `obj`, checked against the object's bounds.
template <typename T>
MORI_DEVICE T* element_range(const char* call, SymmObj<T> obj, size_t offset, size_t nelems,
                             int pe) {
  if constexpr (MORI_DEVICE_CHECKS) {
    if (offset > obj.count || nelems > obj.count - offset) {
      state::fail({state::DeviceErrorCode::kBadSize, pe, reinterpret_cast<uint64_t>(obj.ptr)},
                  [&](state::Message& m) {
                    m << call << ": elements [" << offset << ", +" << nelems
                      << ") are outside the symmetric object " << hex(obj.ptr) << " of "
                      << obj.count << " elements (PE " << pe << ")";
                  });
    }
  }
  return obj.ptr + offset;
}

}  // namespace detail
}  // namespace mori::shmem
