// p and g: one value to or from a symmetric location on another PE, in Thread scope (each calling
// thread moves its own value; any number of threads may call at once).
//
//   p   a relaxed, system-scope store of `value` into `pe`'s copy of *dest. It returns at once; the
//       store is complete and visible at `pe` after the next quiet, and ordered before later
//       operations to `pe` by fence. Like put_nbi, p orders nothing by itself.
//   g   a relaxed, system-scope load of `pe`'s copy of *source: it returns the value that copy
//       holds now, with no ordering against the caller's other operations (a write that a peer
//       made before a barrier both passed is seen).
//
// T is deduced from the pointer, so p(dest, v, pe) serves the 11 element types and every C type
// name of the `_p` family (the device ABI spec, docs/bitcode.md): int, long, long long, char,
// unsigned long, ... The value converts to T, as in OpenSHMEM's typed calls. `qp` picks one of the
// PE's RDMA queue pairs; P2P ignores it.
#pragma once

#include <cstdint>
#include <type_traits>

#include "mori/shmem/checks.hpp"
#include "mori/transport/dispatch.hpp"

namespace mori::shmem {

namespace detail {

// A single-value operation is one naturally sized access on every transport: a store or load
// instruction over P2P, an inline write or a read into an ibuf slot over RDMA.
template <typename T>
inline constexpr bool kSingleValue = std::is_arithmetic_v<T> && (sizeof(T) == 1 || sizeof(T) == 2 ||
                                                                 sizeof(T) == 4 || sizeof(T) == 8);

}  // namespace detail

template <typename T>
MORI_DEVICE void p(T* dest, std::type_identity_t<T> value, int pe, int qp = 0) {
  static_assert(detail::kSingleValue<T>,
                "p moves one 1-, 2-, 4- or 8-byte arithmetic value; use put for anything else");
  static_assert(!std::is_const_v<T>, "p stores into *dest: dest must not point to const");
  const state::RemoteTarget t = detail::resolve("p", dest, sizeof(T), pe, qp);
  transport::with_transport("p", pe, [&]<typename Tr>() { Tr::template p<T>("p", t, value); });
}

template <typename T>
MORI_DEVICE T g(const T* source, int pe, int qp = 0) {
  static_assert(detail::kSingleValue<T>,
                "g moves one 1-, 2-, 4- or 8-byte arithmetic value; use get for anything else");
  const state::RemoteTarget t = detail::resolve("g", source, sizeof(T), pe, qp);
  return transport::with_transport("g", pe,
                                   [&]<typename Tr>() { return Tr::template g<T>("g", t); });
}

}  // namespace mori::shmem
