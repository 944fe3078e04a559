// Strided put and get (OpenSHMEM 1.5's shmem_iput, shmem_iget and their <SIZE> forms), in Thread,
// Warp or Block scope (every participant of the scope makes the same call):
//
//   iput(dest, source, dst, sst, nelems, pe)   source[i * sst] goes to dest[i * dst] on `pe`
//   iget(dest, source, dst, sst, nelems, pe)   `pe`'s source[i * sst] comes to dest[i * dst]
//
// for i in [0, nelems). Strides count elements and must be 1 or more, as OpenSHMEM requires; a
// checked build (the host backend, debug GPU builds) traps on a smaller one. Both are blocking, as
// put and get are: iput returns once the data is delivered (so the source may be reused), iget with
// the data in the destination. The typed forms deduce T (any T, as put does); iput<SIZE> and
// iget<SIZE> (SIZE 8, 16, 32, 64 or 128 bits) move elements of that width from untyped memory.
//
// How the elements move:
//   - a contiguous call (both strides 1, or at most one element) is one put or get (rma.hpp): one
//     scope copy over P2P, one work request over RDMA;
//   - otherwise, over P2P, each participant loads and stores its share of the elements directly,
//     one access of the element's width each;
//   - otherwise, over RDMA, one work request per element (an inline write, or a read into the
//     destination's registered memory), the elements shared over the scope's lanes so that a warp
//     posts 64 at once. A NIC has no scatter-gather that spans remote addresses, so a strided
//     remote side is one request per element; a strided local side with a contiguous remote one
//     could be one request with a gather list, which the providers do not encode (a kernel that
//     needs it can pack its elements and put them). Runs of contiguous elements are not merged
//     either: with strides above 1 there are none.
// Local memory over RDMA is as for put and get (rma.hpp): iget's destination must be in the heap
// or a registered buffer; iput's elements of up to the provider's inline limit need no key.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "mori/core/scope.hpp"
#include "mori/shmem/checks.hpp"
#include "mori/shmem/rma.hpp"
#include "mori/transport/dispatch.hpp"

namespace mori::shmem {

namespace detail {

// The element of iput<SIZE> and iget<SIZE>: an unsigned integer of SIZE bits, or 16 bytes.
struct Bits128 {
  uint64_t word[2];
};
template <size_t kBits>
struct Sized {
  static_assert(kBits == 8 || kBits == 16 || kBits == 32 || kBits == 64 || kBits == 128,
                "iput<SIZE>, iget<SIZE>: SIZE is 8, 16, 32, 64 or 128 bits");
  using type = std::conditional_t<
      kBits == 8, uint8_t,
      std::conditional_t<kBits == 16, uint16_t,
                         std::conditional_t<kBits == 32, uint32_t,
                                            std::conditional_t<kBits == 64, uint64_t, Bits128>>>>;
};
template <size_t kBits>
using SizedElement = typename Sized<kBits>::type;

template <Scope S, bool kGet, typename T>
MORI_DEVICE void strided_rma(const char* call, T* dest, const T* source, ptrdiff_t dst,
                             ptrdiff_t sst, size_t nelems, int pe, int qp) {
  static_assert(!std::is_void_v<T>,
                "iput and iget move typed elements: for untyped memory use iput<SIZE>/iget<SIZE>");
  check_stride(call, "dst", dst, pe);
  check_stride(call, "sst", sst, pe);
  if (nelems <= 1 || (dst == 1 && sst == 1)) {
    typed_rma<S, kGet, true>(call, dest, source, nelems, pe, qp);
    return;
  }
  const size_t dst_stride = static_cast<size_t>(dst), src_stride = static_cast<size_t>(sst);
  const void* remote = kGet ? static_cast<const void*>(source) : dest;
  const void* local = kGet ? static_cast<const void*>(dest) : source;
  const size_t remote_stride = kGet ? src_stride : dst_stride;
  strided_bytes(call, local, nelems, kGet ? dst_stride : src_stride, sizeof(T), pe);
  const state::RemoteTarget t = resolve(
      call, remote, strided_bytes(call, remote, nelems, remote_stride, sizeof(T), pe), pe, qp);
  transport::with_transport(call, pe, [&]<typename Tr>() {
    if constexpr (kGet)
      Tr::template iget<S>(call, dest, t, dst_stride, src_stride, nelems);
    else
      Tr::template iput<S>(call, t, source, dst_stride, src_stride, nelems);
    complete<S, Tr>(pe, qp);
  });
}

}  // namespace detail

// ---- typed, in elements of T ------------------------------------------------------------------
template <Scope S = Thread, typename T>
MORI_DEVICE void iput(T* dest, const T* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe,
                      int qp = 0) {
  detail::strided_rma<S, false>("iput", dest, source, dst, sst, nelems, pe, qp);
}
template <Scope S = Thread, typename T>
MORI_DEVICE void iget(T* dest, const T* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe,
                      int qp = 0) {
  detail::strided_rma<S, true>("iget", dest, source, dst, sst, nelems, pe, qp);
}

// ---- sized, in elements of kBits bits: iput<32, Warp>(dest, source, dst, sst, nelems, pe) ------
namespace detail {
template <size_t kBits, Scope S, bool kGet>
MORI_DEVICE void sized_strided_rma(const char* call, void* dest, const void* source, ptrdiff_t dst,
                                   ptrdiff_t sst, size_t nelems, int pe, int qp) {
  using E = SizedElement<kBits>;
  strided_rma<S, kGet>(call, static_cast<E*>(dest), static_cast<const E*>(source), dst, sst, nelems,
                       pe, qp);
}
}  // namespace detail

template <size_t kBits, Scope S = Thread>
MORI_DEVICE void iput(void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,
                      int pe, int qp = 0) {
  detail::sized_strided_rma<kBits, S, false>("iput", dest, source, dst, sst, nelems, pe, qp);
}
template <size_t kBits, Scope S = Thread>
MORI_DEVICE void iget(void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,
                      int pe, int qp = 0) {
  detail::sized_strided_rma<kBits, S, true>("iget", dest, source, dst, sst, nelems, pe, qp);
}

}  // namespace mori::shmem
