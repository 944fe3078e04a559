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
#include "mori/state/address.hpp"
#include "mori/state/amo.hpp"
#include "mori/state/device_error.hpp"

namespace mori::transport {

using platform::MemOrder;
using platform::MemScope;
using state::RemoteTarget;

struct P2p {
  static constexpr const char* kName = "p2p";

  // The address of `t` as mapped here; traps when that copy is not mapped (a registered buffer of a
  // peer on the host backend, whose memory is private to its process).
  MORI_DEVICE static char* address(const char* call, const RemoteTarget& t) {
    const uint64_t a = state::p2p_address(t);
    if (!a) {
      state::fail({state::DeviceErrorCode::kNotReachable, t.pe}, [&](state::Message& m) {
        m << call << ": PE " << t.pe << "'s copy of registered buffer " << t.ref.region
          << " is not mapped into this PE (P2P reaches only the symmetric heap here)";
      });
    }
    return reinterpret_cast<char*>(a);
  }

  template <Scope S>
  MORI_DEVICE static void put(const char* call, const RemoteTarget& dst, const void* src,
                              uint64_t bytes) {
    copy<S>(address(call, dst), src, bytes);
  }
  template <Scope S>
  MORI_DEVICE static void get(const char* call, void* dst, const RemoteTarget& src,
                              uint64_t bytes) {
    copy<S>(dst, address(call, src), bytes);
  }
  template <typename T>
  MORI_DEVICE static void p(const char* call, const RemoteTarget& dst, T value) {
    platform::atomic_store<MemOrder::Relaxed, MemScope::System>(
        reinterpret_cast<T*>(address(call, dst)), value);
  }
  template <typename T>
  MORI_DEVICE static T g(const char* call, const RemoteTarget& src) {
    return platform::atomic_load<MemOrder::Relaxed, MemScope::System>(
        reinterpret_cast<T*>(address(call, src)));
  }

  // Any code of the ABI's atomicType on a 32- or 64-bit integer. Non-fetching codes return 0.
  template <typename T>
  MORI_DEVICE static T amo(const char* call, state::atomicType op, const RemoteTarget& dst, T value,
                           T compare) {
    T* p = reinterpret_cast<T*>(address(call, dst));
    constexpr MemOrder kO = MemOrder::Relaxed;  // OpenSHMEM AMOs order nothing; fence and quiet do
    constexpr MemScope kS = MemScope::System;
    const state::AmoRow row = state::amo_row(op);
    const T operand = state::amo_operand(row, value);
    // The instruction returns the old value; a non-fetching code gives 0 (and a constant one lets
    // the compiler drop the return).
    auto result = [&](T old) { return row.fetch ? old : T{0}; };
    switch (row.kind) {
      case state::AmoKind::kAdd:
        return result(platform::atomic_fetch_add<kO, kS>(p, operand));
      case state::AmoKind::kAnd:
        return result(platform::atomic_fetch_and<kO, kS>(p, operand));
      case state::AmoKind::kOr:
        return result(platform::atomic_fetch_or<kO, kS>(p, operand));
      case state::AmoKind::kXor:
        return result(platform::atomic_fetch_xor<kO, kS>(p, operand));
      case state::AmoKind::kSet:  // a fetching set is a swap
        if (row.fetch) return platform::atomic_exchange<kO, kS>(p, operand);
        platform::atomic_store<kO, kS>(p, operand);
        return T{0};
      case state::AmoKind::kLoad:
        return platform::atomic_load<kO, kS>(p);
      case state::AmoKind::kCompareSwap:
        return platform::atomic_compare_swap<kO, kS>(p, compare, operand);
      default:
        state::fail({state::DeviceErrorCode::kBadArgument, dst.pe, reinterpret_cast<uint64_t>(p)},
                    [&](state::Message& m) {
                      m << call << ": " << static_cast<int>(op)
                        << " is not an atomic operation code (PE " << dst.pe << ")";
                    });
    }
  }

  // The data, then the signal: the release fence keeps the peer from seeing the signal before the
  // data.
  template <Scope S>
  MORI_DEVICE static void put_signal(const char* call, const RemoteTarget& dst, const void* src,
                                     uint64_t bytes, const RemoteTarget& signal, uint64_t value,
                                     state::atomicType op) {
    put<S>(call, dst, src, bytes);
    S::sync();
    if (S::leader()) {
      platform::fence<MemOrder::Release, MemScope::System>();
      amo<uint64_t>(call, op, signal, value, 0);
    }
  }

  MORI_DEVICE static void quiet(int /*pe*/, int /*qp*/) {
    platform::fence<MemOrder::Release, MemScope::System>();
  }
  MORI_DEVICE static void fence(int /*pe*/, int /*qp*/) {
    platform::fence<MemOrder::Release, MemScope::System>();
  }
};

}  // namespace mori::transport
