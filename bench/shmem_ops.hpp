// The operations the shmem benchmarks time, one function per kind of program (shmem_bench.hpp runs
// them). Every function returns this PE's timed seconds for one repetition, or 0 when this PE only
// serves (the passive side of a one-way test launches nothing and sleeps in the harness).
#pragma once

#include <cstring>

#include "shmem_bench.hpp"

namespace mori::bench {

// Completes this unit's outstanding operations: one quiet by the unit's leader, then the unit
// waits for it.
template <Scope S>
MORI_DEVICE void complete() {
  if (S::leader()) shmem::quiet();
  S::sync();
}

// memcpy through the peer's P2P mapping, each participant taking its share as copy<S> does: the
// physical reference for put_bw and get_bw.
template <Scope S, bool kGet>
MORI_DEVICE void memcpy_share(const Run& r, const Lane& l) {
  const size_t chunk = (r.size + S::size() - 1) / S::size();
  const size_t begin = std::min(r.size, chunk * S::rank());
  const size_t bytes = std::min(r.size - begin, chunk);
  const size_t slot = static_cast<size_t>(l.unit) * r.size + begin;
  if constexpr (kGet)
    std::memcpy(l.dst + begin, r.peer_src + slot, bytes);
  else
    std::memcpy(r.peer_dst + slot, l.src + begin, bytes);
  S::sync();
}

// put (kGet false) or get of r.size bytes per iteration between this unit's slots and the peer's.
// kBlocking: each iteration completes (latency: put + quiet, get + quiet); otherwise the
// iterations are a window of _nbi calls completed once at the end (bandwidth).
template <bool kGet, bool kBlocking>
double rma(const Run& r) {
  if (!r.active(r.me)) return 0;
  return with_scope(r.opt->scope, [&]<typename S>() {
    return timed_loop<S>(
        r,
        [&](const Lane& l, int) {
          if (r.memcpy_ref) return memcpy_share<S, kGet>(r, l);
          if constexpr (kGet)
            shmem::getmem_nbi<S>(l.dst, l.src, r.size, r.peer, l.qp);
          else
            shmem::putmem_nbi<S>(l.dst, l.src, r.size, r.peer, l.qp);
          if constexpr (kBlocking) complete<S>();
        },
        [&](const Lane&) { complete<S>(); });
  });
}

// Ping-pong between the two PEs of a pair, unit by unit on the unit's flag line: the first PE
// sends value i + 1 and waits for the same value back; its partner waits, then answers. send(l, v)
// sends v to the partner's flag line; wait(l, v) waits until this PE's line holds v. Only the
// unit's leader communicates.
template <typename Send, typename Wait>
double ping_pong(const Run& r, Send&& send, Wait&& wait) {
  return with_scope(r.opt->scope, [&]<typename S>() {
    const bool first = r.me % 2 == 0;
    return timed_loop<S>(
        r,
        [&](const Lane& l, int i) {
          const uint64_t v = static_cast<uint64_t>(i) + 1;
          if (!first && S::leader()) wait(l, v);
          S::sync();
          send.template operator()<S>(l, v);
          if (first && S::leader()) wait(l, v);
          S::sync();
        },
        [&](const Lane&) { complete<S>(); });
  });
}

// fetch-and-add of 1 to the partner's 8-byte flag word, one per iteration, by each unit's leader.
inline double fetch_add_latency(const Run& r) {
  if (!r.active(r.me)) return 0;
  return with_scope(r.opt->scope, [&]<typename S>() {
    return timed_loop<S>(
        r,
        [&](const Lane& l, int) {
          if (S::leader())
            (void)shmem::atomic_fetch_add(reinterpret_cast<int64_t*>(l.flag), 1, r.peer, l.qp);
          S::sync();
        },
        [&](const Lane&) { complete<S>(); });
  });
}

}  // namespace mori::bench
