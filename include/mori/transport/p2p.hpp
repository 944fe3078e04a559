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
#include "mori/shmem/address.hpp"
#include "mori/shmem/amo.hpp"
#include "mori/shmem/device_error.hpp"

namespace mori::transport {

using platform::MemOrder;
using platform::MemScope;
using shmem::RemoteTarget;

struct P2p {
  static constexpr const char* kName = "p2p";

  // The address of `t` as mapped here; traps when that copy is not mapped (a registered buffer of a
  // peer on the host backend, whose memory is private to its process).
  MORI_DEVICE static char* address(const char* call, const RemoteTarget& t) {
    const uint64_t a = shmem::p2p_address(t);
    if (!a) {
      shmem::fail({shmem::DeviceErrorCode::kNotReachable, t.pe}, [&](shmem::Message& m) {
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
  MORI_DEVICE static T amo(const char* call, shmem::atomicType op, const RemoteTarget& dst, T value,
                           T compare) {
    T* p = reinterpret_cast<T*>(address(call, dst));
    constexpr MemOrder kO = MemOrder::Relaxed;  // OpenSHMEM AMOs order nothing; fence and quiet do
    constexpr MemScope kS = MemScope::System;
    switch (op) {
      case shmem::AMO_INC:
        platform::atomic_fetch_add<kO, kS>(p, T{1});
        return 0;
      case shmem::AMO_ADD:
      case shmem::AMO_SIGNAL_ADD:
        platform::atomic_fetch_add<kO, kS>(p, value);
        return 0;
      case shmem::AMO_SET:
      case shmem::AMO_SIGNAL:
      case shmem::AMO_SIGNAL_SET:
        platform::atomic_store<kO, kS>(p, value);
        return 0;
      case shmem::AMO_AND:
        platform::atomic_fetch_and<kO, kS>(p, value);
        return 0;
      case shmem::AMO_OR:
        platform::atomic_fetch_or<kO, kS>(p, value);
        return 0;
      case shmem::AMO_XOR:
        platform::atomic_fetch_xor<kO, kS>(p, value);
        return 0;
      case shmem::AMO_FETCH:
        return platform::atomic_load<kO, kS>(p);
      case shmem::AMO_FETCH_INC:
        return platform::atomic_fetch_add<kO, kS>(p, T{1});
      case shmem::AMO_FETCH_ADD:
        return platform::atomic_fetch_add<kO, kS>(p, value);
      case shmem::AMO_FETCH_AND:
        return platform::atomic_fetch_and<kO, kS>(p, value);
      case shmem::AMO_FETCH_OR:
        return platform::atomic_fetch_or<kO, kS>(p, value);
      case shmem::AMO_FETCH_XOR:
        return platform::atomic_fetch_xor<kO, kS>(p, value);
      case shmem::AMO_SWAP:
        return platform::atomic_exchange<kO, kS>(p, value);
      case shmem::AMO_COMPARE_SWAP:
        return platform::atomic_compare_swap<kO, kS>(p, compare, value);
      default: {
        shmem::fail({shmem::DeviceErrorCode::kBadArgument, dst.pe, reinterpret_cast<uint64_t>(p)},
                    [&](shmem::Message& m) {
                      m << call << ": " << static_cast<int>(op)
                        << " is not an atomic operation code (PE " << dst.pe << ")";
                    });
      }
    }
  }

  // The data, then the signal: the release fence keeps the peer from seeing the signal before the
  // data.
  template <Scope S>
  MORI_DEVICE static void put_signal(const char* call, const RemoteTarget& dst, const void* src,
                                     uint64_t bytes, const RemoteTarget& signal, uint64_t value,
                                     shmem::atomicType op) {
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
