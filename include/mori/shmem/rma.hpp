// Put and get: bulk RMA between this PE's memory and a symmetric location on another PE, in Thread,
// Warp or Block scope (every participant of the scope makes the same call), untyped (bytes) or
// typed (elements, the type deduced), addressed by a pure symmetric address or by a symmetric
// object and element offset.
//
//   put_nbi   delivery is complete at the next quiet; the source must not change until then (RDMA
//             reads it after the call returns, except inline-size puts).
//   put       returns once the data is delivered (put_nbi + quiet of that PE and QP; over RDMA, a
//             wait for its own WQEs, which the QP completes after everything it took before them).
//   get_nbi   the destination is valid after the next quiet.
//   get       returns with the data in the destination (get_nbi + quiet of that PE and QP, or, over
//             RDMA, the wait for its own WQEs).
//
// `qp` picks one of the PE's RDMA queue pairs (MORI_NUM_QP_PER_PE); P2P ignores it.
#pragma once

#include <cstddef>

#include "mori/core/scope.hpp"
#include "mori/shmem/checks.hpp"
#include "mori/shmem/symm_obj.hpp"
#include "mori/transport/dispatch.hpp"

namespace mori::shmem {

namespace detail {

// A blocking call's completion, once the scope has issued its share on transport Tr: one
// participant quiets the PE's QP, and none returns before it has (so the source may be reused).
// kAwaited: the call's post already waited for its own completion (Tr::kAwaitsPosts; only the
// leader posts), so the others need only wait for the leader.
template <Scope S, typename Tr, bool kAwaited = false>
MORI_DEVICE void complete(int pe, int qp) {
  if constexpr (!kAwaited) {
    S::sync();
    if (S::leader()) Tr::quiet(pe, qp);
  }
  S::sync();
}

// Whether a call of transport Tr awaits its own completion in its post (put<S, true>, ...): the
// blocking ones on a transport that can.
template <typename Tr, bool kBlocking>
inline constexpr bool kAwaitInPost = kBlocking && Tr::kAwaitsPosts;

// One call of the family: resolve the remote side, move the bytes on the PE's transport, and, for
// the blocking forms, complete them. Every participant returns only when the whole scope has
// finished its share.
template <Scope S, bool kGet, bool kBlocking>
MORI_DEVICE void rma(const char* call, void* local, const void* remote, uint64_t bytes, int pe,
                     int qp) {
  const state::RemoteTarget t = resolve(call, remote, bytes, pe, qp);
  transport::with_transport(call, pe, [&]<typename Tr>() {
    constexpr bool kAwait = kAwaitInPost<Tr, kBlocking>;
    if constexpr (kGet)
      Tr::template get<S, kAwait>(call, local, t, bytes);
    else
      Tr::template put<S, kAwait>(call, t, local, bytes);
    if constexpr (kBlocking)
      complete<S, Tr, kAwait>(pe, qp);
    else
      S::sync();
  });
}

}  // namespace detail

// ---- untyped, in bytes --------------------------------------------------------------------------
template <Scope S = Thread>
MORI_DEVICE void putmem_nbi(void* dest, const void* source, size_t bytes, int pe, int qp = 0) {
  detail::rma<S, false, false>("putmem_nbi", const_cast<void*>(source), dest, bytes, pe, qp);
}
template <Scope S = Thread>
MORI_DEVICE void putmem(void* dest, const void* source, size_t bytes, int pe, int qp = 0) {
  detail::rma<S, false, true>("putmem", const_cast<void*>(source), dest, bytes, pe, qp);
}
template <Scope S = Thread>
MORI_DEVICE void getmem_nbi(void* dest, const void* source, size_t bytes, int pe, int qp = 0) {
  detail::rma<S, true, false>("getmem_nbi", dest, source, bytes, pe, qp);
}
template <Scope S = Thread>
MORI_DEVICE void getmem(void* dest, const void* source, size_t bytes, int pe, int qp = 0) {
  detail::rma<S, true, true>("getmem", dest, source, bytes, pe, qp);
}

// ---- typed, in elements -------------------------------------------------------------------------
// T is deduced from the pointers, so put_nbi<Warp>(dst, src, n, pe) serves all 11 element types.
namespace detail {
template <Scope S, bool kGet, bool kBlocking, typename T>
MORI_DEVICE void typed_rma(const char* call, T* dest, const T* source, size_t nelems, int pe,
                           int qp) {
  const void* remote = kGet ? static_cast<const void*>(source) : dest;
  void* local = kGet ? static_cast<void*>(dest) : const_cast<T*>(source);
  rma<S, kGet, kBlocking>(call, local, remote, byte_count(call, remote, nelems, sizeof(T), pe), pe,
                          qp);
}
}  // namespace detail

template <Scope S = Thread, typename T>
MORI_DEVICE void put_nbi(T* dest, const T* source, size_t nelems, int pe, int qp = 0) {
  detail::typed_rma<S, false, false>("put_nbi", dest, source, nelems, pe, qp);
}
template <Scope S = Thread, typename T>
MORI_DEVICE void put(T* dest, const T* source, size_t nelems, int pe, int qp = 0) {
  detail::typed_rma<S, false, true>("put", dest, source, nelems, pe, qp);
}
template <Scope S = Thread, typename T>
MORI_DEVICE void get_nbi(T* dest, const T* source, size_t nelems, int pe, int qp = 0) {
  detail::typed_rma<S, true, false>("get_nbi", dest, source, nelems, pe, qp);
}
template <Scope S = Thread, typename T>
MORI_DEVICE void get(T* dest, const T* source, size_t nelems, int pe, int qp = 0) {
  detail::typed_rma<S, true, true>("get", dest, source, nelems, pe, qp);
}

// ---- symmetric object + element offset ----------------------------------------------------------
// put into a symmetric object at element `offset`.
template <Scope S = Thread, typename T>
MORI_DEVICE void put_nbi(SymmObj<T> dest, size_t offset, const T* source, size_t nelems, int pe,
                         int qp = 0) {
  put_nbi<S>(detail::element_range("put_nbi", dest, offset, nelems, pe), source, nelems, pe, qp);
}
template <Scope S = Thread, typename T>
MORI_DEVICE void put(SymmObj<T> dest, size_t offset, const T* source, size_t nelems, int pe,
                     int qp = 0) {
  put<S>(detail::element_range("put", dest, offset, nelems, pe), source, nelems, pe, qp);
}
// get from a symmetric object at element `offset`.
template <Scope S = Thread, typename T>
MORI_DEVICE void get_nbi(T* dest, SymmObj<T> source, size_t offset, size_t nelems, int pe,
                         int qp = 0) {
  get_nbi<S>(dest, detail::element_range("get_nbi", source, offset, nelems, pe), nelems, pe, qp);
}
template <Scope S = Thread, typename T>
MORI_DEVICE void get(T* dest, SymmObj<T> source, size_t offset, size_t nelems, int pe, int qp = 0) {
  get<S>(dest, detail::element_range("get", source, offset, nelems, pe), nelems, pe, qp);
}

}  // namespace mori::shmem
