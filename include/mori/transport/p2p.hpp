// The P2P transport: peer memory is mapped into this PE (XGMI/PCIe peer mappings on GPUs, shared
// memory on the host backend), so a put is a scope copy and an atomic is an atomic instruction on
// the peer's address.
//
// Ordering: stores and atomics to peer memory are issued at system scope. A put is complete once
// its stores are visible to the peer, which a system-scope release fence guarantees for every
// earlier store of the calling thread: that fence is quiet and fence here.
#pragma once

#include <cstdint>

#include "mori/core/copy.hpp"
#include "mori/platform/path_mark.hpp"
#include "mori/state/address.hpp"
#include "mori/state/amo.hpp"
#include "mori/state/device_error.hpp"
#include "mori/transport/reach.hpp"

namespace mori::transport {

using platform::MemOrder;
using platform::MemScope;
using state::RemoteTarget;

struct P2p {
  static constexpr const char* kName = "p2p";
  // A blocking put or get completes with the scope's quiet (shmem/rma.hpp): every participant
  // stores, so the stores of all of them must precede it.
  static constexpr bool kAwaitsPosts = false;

  // Whether PE `pe` is reached through peer mappings (P2P, or SDMA, which is P2P until it is
  // native).
  MORI_DEVICE static bool serves(int pe) {
    const state::Transport tr = state::transport_to(pe);
    return tr == state::Transport::kP2P || tr == state::Transport::kSdma;
  }

  // The failure of a call to a PE that no transport of this code reaches: kNotBuilt (observed:
  // the job's NIC family) for an RDMA PE whose family is not compiled in, else kNotReachable.
  MORI_DEVICE static state::FailureInfo unreachable(int pe) {
    const auto nic = static_cast<uint64_t>(state::gpu_states().nic);
    return rdma_not_built(pe) ? state::FailureInfo{state::DeviceErrorCode::kNotBuilt, pe, 0, nic}
                              : state::FailureInfo{state::DeviceErrorCode::kNotReachable, pe};
  }

  // The message of a call to a PE that no transport of this code reaches.
  MORI_DEVICE static void say_unreachable(state::Message& m, const char* call, int pe) {
    if (rdma_not_built(pe))
      m << call << ": PE " << pe << " is reached over RDMA, but NIC family "
        << static_cast<int>(state::gpu_states().nic)
        << " is not compiled into this code (MORI_RDMA_PROVIDERS)";
    else
      m << call << ": PE " << pe << " is unreachable from PE " << state::this_pe();
  }

  // The address of `t` as mapped here; traps when P2P does not serve its PE (unreachable()), or
  // when that copy is not mapped (a peer's buffer that buffer_register registered: only
  // buffer_register_symmetric maps peers' copies). Both tests share one branch and one failure
  // site.
  MORI_DEVICE static char* address(const char* call, const RemoteTarget& t) {
    const uint64_t base = state::p2p_base(t);
    const bool served = serves(t.pe);
    state::fail_if(
        !base || !served,
        [&] {
          return served ? state::FailureInfo{state::DeviceErrorCode::kNotReachable, t.pe}
                        : unreachable(t.pe);
        },
        [&](state::Message& m) {
          if (!served)
            say_unreachable(m, call, t.pe);
          else
            m << call << ": PE " << t.pe << "'s copy of registered buffer " << t.ref.region
              << " is not mapped into this PE (P2P reaches a registered buffer only "
                 "when buffer_register_symmetric registered it)";
        });
    return reinterpret_cast<char*>(base + t.ref.offset);
  }

  template <Scope S, bool kAwait = false>
  MORI_DEVICE static void put(const char* call, const RemoteTarget& dst, const void* src,
                              uint64_t bytes) {
    static_assert(!kAwait, "P2P completes a blocking put with quiet (kAwaitsPosts)");
    char* to = address(call, dst);
    MORI_PATH_MARK("p2p.put");  // bench/isa_paths.txt: P2P put up to its first data store
    copy<S>(to, src, bytes);
  }
  template <Scope S, bool kAwait = false>
  MORI_DEVICE static void get(const char* call, void* dst, const RemoteTarget& src,
                              uint64_t bytes) {
    static_assert(!kAwait, "P2P completes a blocking get with quiet (kAwaitsPosts)");
    const char* from = address(call, src);
    MORI_PATH_MARK("p2p.get");
    copy<S>(dst, from, bytes);
  }
  // Strided: element i moves from src[i * src_stride] to element i * dst_stride of the target
  // (iget: the reverse), one load and one store of T per element, the elements shared over the
  // scope's participants. Strides count elements and are positive (the caller checks them).
  template <Scope S, typename T>
  MORI_DEVICE static void iput(const char* call, const RemoteTarget& dst, const T* src,
                               size_t dst_stride, size_t src_stride, size_t nelems) {
    T* to = reinterpret_cast<T*>(address(call, dst));
    mori::detail::for_each_share<S>(nelems,
                                    [&](size_t i) { to[i * dst_stride] = src[i * src_stride]; });
  }
  template <Scope S, typename T>
  MORI_DEVICE static void iget(const char* call, T* dst, const RemoteTarget& src, size_t dst_stride,
                               size_t src_stride, size_t nelems) {
    const T* from = reinterpret_cast<const T*>(address(call, src));
    mori::detail::for_each_share<S>(nelems,
                                    [&](size_t i) { dst[i * dst_stride] = from[i * src_stride]; });
  }
  template <typename T>
  MORI_DEVICE static void p(const char* call, const RemoteTarget& dst, T value) {
    T* to = reinterpret_cast<T*>(address(call, dst));
    MORI_PATH_MARK("p2p.p");
    platform::atomic_store<MemOrder::Relaxed, MemScope::System>(to, value);
  }
  template <typename T>
  MORI_DEVICE static T g(const char* call, const RemoteTarget& src) {
    return platform::atomic_load<MemOrder::Relaxed, MemScope::System>(
        reinterpret_cast<T*>(address(call, src)));
  }

  // Any code of the ABI's atomicType on a 32- or 64-bit integer. Non-fetching codes return 0. One
  // case per row of the AMO table, each a single instruction, so that a run-time code (the generic
  // calls, put_signal's signal) costs a jump table and no decoding of the row.
  template <typename T>
  MORI_DEVICE static T amo(const char* call, state::atomicType op, const RemoteTarget& dst, T value,
                           T compare) {
    T* p = reinterpret_cast<T*>(address(call, dst));
    MORI_PATH_MARK("p2p.amo");
    switch (op) {
#define MORI_P2P_AMO(code, number, kind, arg, fetch, ...)                                         \
  case state::code:                                                                               \
    if constexpr (state::AmoKind::kind != state::AmoKind::kNone)                                  \
      return apply<state::AmoRow{state::AmoKind::kind, state::AmoArg::arg, fetch != 0}>(p, value, \
                                                                                        compare); \
    break;
      MORI_FOR_EACH_AMO(MORI_P2P_AMO)
#undef MORI_P2P_AMO
      default:
        break;
    }
    state::fail({state::DeviceErrorCode::kBadArgument, dst.pe, reinterpret_cast<uint64_t>(p)},
                [&](state::Message& m) {
                  m << call << ": " << static_cast<int>(op)
                    << " is not an atomic operation code (PE " << dst.pe << ")";
                });
  }

  // A fetching code whose old value goes to local `fetch` (the nbi AMOs): a P2P atomic is complete
  // when its instruction returns, so `fetch` is written before this returns.
  template <typename T>
  MORI_DEVICE static void amo_nbi(const char* call, state::atomicType op, const RemoteTarget& dst,
                                  T value, T compare, T* fetch) {
    *fetch = amo<T>(call, op, dst, value, compare);
  }

  // The data, then the signal: the release fence keeps the peer from seeing the signal before the
  // data.
  template <Scope S, bool kAwait = false>
  MORI_DEVICE static void put_signal(const char* call, const RemoteTarget& dst, const void* src,
                                     uint64_t bytes, const RemoteTarget& signal, uint64_t value,
                                     state::atomicType op) {
    static_assert(!kAwait, "P2P completes a blocking put-with-signal with quiet (kAwaitsPosts)");
    put<S>(call, dst, src, bytes);
    S::sync();
    if (S::leader()) {
      platform::fence<MemOrder::Release, MemScope::System>();
      // SIGNAL_ADD adds, SIGNAL_SET sets (the device API admits no other code; as over RDMA, an
      // unchecked build treats any other as a set).
      uint64_t* word = reinterpret_cast<uint64_t*>(address(call, signal));
      if (op == state::SIGNAL_ADD)
        apply<state::amo_row(state::SIGNAL_ADD)>(word, value, uint64_t{0});
      else
        apply<state::amo_row(state::SIGNAL_SET)>(word, value, uint64_t{0});
    }
  }

  MORI_DEVICE static void quiet(int /*pe*/, int /*qp*/) {
    platform::fence<MemOrder::Release, MemScope::System>();
  }
  MORI_DEVICE static void fence(int /*pe*/, int /*qp*/) {
    platform::fence<MemOrder::Release, MemScope::System>();
  }

 private:
  // Row R of the AMO table on *p, as one relaxed system-scope instruction: OpenSHMEM AMOs order
  // nothing (fence and quiet do). A non-fetching row ignores the old value, so the compiler emits
  // the non-returning form.
  template <state::AmoRow R, typename T>
  MORI_DEVICE static T apply(T* p, T value, T compare) {
    constexpr MemOrder kO = MemOrder::Relaxed;
    constexpr MemScope kS = MemScope::System;
    const T operand = state::amo_operand(R, value);
    T old{};
    if constexpr (R.kind == state::AmoKind::kAdd) {
      old = platform::atomic_fetch_add<kO, kS>(p, operand);
    } else if constexpr (R.kind == state::AmoKind::kAnd) {
      old = platform::atomic_fetch_and<kO, kS>(p, operand);
    } else if constexpr (R.kind == state::AmoKind::kOr) {
      old = platform::atomic_fetch_or<kO, kS>(p, operand);
    } else if constexpr (R.kind == state::AmoKind::kXor) {
      old = platform::atomic_fetch_xor<kO, kS>(p, operand);
    } else if constexpr (R.kind == state::AmoKind::kSet && R.fetch) {  // a swap
      old = platform::atomic_exchange<kO, kS>(p, operand);
    } else if constexpr (R.kind == state::AmoKind::kSet) {
      platform::atomic_store<kO, kS>(p, operand);
    } else if constexpr (R.kind == state::AmoKind::kLoad) {
      old = platform::atomic_load<kO, kS>(p);
    } else if constexpr (R.kind == state::AmoKind::kCompareSwap) {
      old = platform::atomic_compare_swap<kO, kS>(p, compare, operand);
    }
    return R.fetch ? old : T{0};
  }
};

}  // namespace mori::transport
