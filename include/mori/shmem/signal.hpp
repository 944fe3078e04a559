// Put-with-signal, signal updates and signal waits (OpenSHMEM 1.5 "signaling operations", and
// NVSHMEM's signal_op).
//
//   putmem_signal_nbi<S>(dest, source, bytes, sig_addr, signal, sig_op, pe)
//   put_signal_nbi<S>(dest, source, nelems, sig_addr, signal, sig_op, pe)     (typed, T deduced)
//       put `bytes` (or nelems elements) to PE `pe` as put_nbi does, then update the 64-bit signal
//       at sig_addr on that PE: sig_op SIGNAL_SET stores `signal`, SIGNAL_ADD adds it atomically.
//       The put and the signal are complete at the next quiet; the source must not change until
//       then. Scope S as for put_nbi: every participant makes the same call.
//   putmem_signal<S>(...), put_signal<S>(...)               the same, blocking: they return once
//       the data and the signal are delivered (the _nbi form, then quiet of that PE and QP, as
//       put is put_nbi + quiet; over RDMA the wait for its own WQEs, as put's), so the source may
//       be reused at once.
//   signal_op(sig_addr, signal, sig_op, pe)                 the signal update alone (NVSHMEM's
//       nvshmemx_signal_op): SIGNAL_SET stores, SIGNAL_ADD adds atomically, at sig_addr on PE pe.
//       Thread scope. It is ordered as an AMO (atomic.hpp): atomic with respect to every other AMO
//       and signal update of the word, complete at the next quiet, and ordered after earlier puts
//       to the PE only by fence(pe).
//   signal_wait_until(sig_addr, cmp, value) -> uint64_t    waits on this PE's signal; returns the
//                                                          value that satisfied the condition
//   signal_fetch(sig_addr) -> uint64_t                     this PE's signal, now
//
// Checked builds trap on a sig_op other than SIGNAL_SET or SIGNAL_ADD, and nothing is sent.
//
// Ordering: a peer that observes the signal update of a put-with-signal also observes all the data
// of the same call, whatever the scope: the transport issues a system-scope release fence after the
// scope's data and before the signal. Nothing else is ordered (the data of earlier calls is ordered
// only by fence or quiet). signal_wait_until and signal_fetch read the signal with an acquire load
// at system scope, so the data of the call whose signal they return is visible to the caller after
// they return.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mori/core/scope.hpp"
#include "mori/shmem/atomic.hpp"
#include "mori/shmem/checks.hpp"
#include "mori/shmem/rma.hpp"
#include "mori/shmem/vocabulary.hpp"
#include "mori/shmem/wait.hpp"
#include "mori/transport/dispatch.hpp"

namespace mori::shmem {

namespace detail {

// With checks: a signal update is SIGNAL_SET or SIGNAL_ADD.
MORI_DEVICE void check_signal_code(const char* call, atomicType sig_op, int pe,
                                   const uint64_t* sig_addr) {
  check_amo_code(call, sig_op, sig_op == SIGNAL_SET || sig_op == SIGNAL_ADD,
                 "a signal operation: use SIGNAL_SET or SIGNAL_ADD", pe, sig_addr);
}

// One put-with-signal; the blocking forms then complete it as blocking put does.
template <Scope S, bool kBlocking>
MORI_DEVICE void put_signal(const char* call, void* dest, const void* source, uint64_t bytes,
                            uint64_t* sig_addr, uint64_t signal, atomicType sig_op, int pe,
                            int qp) {
  check_signal_code(call, sig_op, pe, sig_addr);
  check_aligned(call, sig_addr, sizeof(uint64_t), pe);
  const state::RemoteTarget data = resolve(call, dest, bytes, pe, qp);
  const state::RemoteTarget sig = resolve(call, sig_addr, sizeof(uint64_t), pe, qp);
  transport::with_transport(call, pe, [&]<typename Tr>() {
    constexpr bool kAwait = kAwaitInPost<Tr, kBlocking>;
    Tr::template put_signal<S, kAwait>(call, data, source, bytes, sig, signal, sig_op);
    if constexpr (kBlocking) complete<S, Tr, kAwait>(pe, qp);
  });
}
template <Scope S, bool kBlocking, typename T>
MORI_DEVICE void typed_put_signal(const char* call, T* dest, const T* source, size_t nelems,
                                  uint64_t* sig_addr, uint64_t signal, atomicType sig_op, int pe,
                                  int qp) {
  put_signal<S, kBlocking>(call, dest, source, byte_count(call, dest, nelems, sizeof(T), pe),
                           sig_addr, signal, sig_op, pe, qp);
}

}  // namespace detail

template <Scope S = Thread>
MORI_DEVICE void putmem_signal_nbi(void* dest, const void* source, size_t bytes, uint64_t* sig_addr,
                                   uint64_t signal, atomicType sig_op, int pe, int qp = 0) {
  detail::put_signal<S, false>("putmem_signal_nbi", dest, source, bytes, sig_addr, signal, sig_op,
                               pe, qp);
}
template <Scope S = Thread>
MORI_DEVICE void putmem_signal(void* dest, const void* source, size_t bytes, uint64_t* sig_addr,
                               uint64_t signal, atomicType sig_op, int pe, int qp = 0) {
  detail::put_signal<S, true>("putmem_signal", dest, source, bytes, sig_addr, signal, sig_op, pe,
                              qp);
}
template <Scope S = Thread, typename T>
MORI_DEVICE void put_signal_nbi(T* dest, const T* source, size_t nelems, uint64_t* sig_addr,
                                uint64_t signal, atomicType sig_op, int pe, int qp = 0) {
  detail::typed_put_signal<S, false>("put_signal_nbi", dest, source, nelems, sig_addr, signal,
                                     sig_op, pe, qp);
}
template <Scope S = Thread, typename T>
MORI_DEVICE void put_signal(T* dest, const T* source, size_t nelems, uint64_t* sig_addr,
                            uint64_t signal, atomicType sig_op, int pe, int qp = 0) {
  detail::typed_put_signal<S, true>("put_signal", dest, source, nelems, sig_addr, signal, sig_op,
                                    pe, qp);
}

MORI_DEVICE void signal_op(uint64_t* sig_addr, uint64_t signal, atomicType sig_op, int pe,
                           int qp = 0) {
  detail::check_signal_code("signal_op", sig_op, pe, sig_addr);
  detail::amo<uint64_t>("signal_op", sig_op, sig_addr, signal, 0, pe, qp);
}

MORI_DEVICE uint64_t signal_wait_until(uint64_t* sig_addr, Cmp cmp, uint64_t value) {
  return detail::wait_all(
      detail::wait_set("signal_wait_until", sig_addr, 1, nullptr, cmp, value, false));
}
MORI_DEVICE uint64_t signal_fetch(const uint64_t* sig_addr) {
  return platform::atomic_load<platform::MemOrder::Acquire, platform::MemScope::System>(sig_addr);
}

}  // namespace mori::shmem
