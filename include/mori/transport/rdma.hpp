// The RDMA transport (IBGDA): device API families as work requests on the queue pairs of
// GpuStates::rdma_endpoints, posted through RdmaEngine<Provider>. Written once; the provider
// (provider/mlx5.hpp, bnxt.hpp, ionic.hpp) only encodes bytes.
//
//   put        the scope's leader posts one RDMA write (an inline write up to the provider's
//              inline limit, else a write from the source's registered memory); blocking
//              (kAwait), it then waits for that write's completion (kAwaitsPosts)
//   get        the leader posts one RDMA read into the destination's registered memory; blocking,
//              it then waits for the read's completion
//   p          an inline write of the value
//   g          a read into an ibuf slot, awaited
//   atomics    fetch-add and compare-swap are NIC atomics; every other operation is a
//              compare-swap loop (a NIC has no atomic and/or/xor/swap/set); a 32-bit operation on
//              a NIC without 32-bit atomics is a 64-bit compare-swap loop on the aligned 8 bytes
//              that hold it (a 64-bit add would carry into the neighbour)
//   iput/iget  one write / read per element, the elements shared over the scope's lanes
//   amo_nbi    a nbi fetching atomic that is one NIC atomic lands the old value in the caller's
//              `fetch` itself, completed by quiet; the others run blocking (see amo_nbi)
//   put_signal the data write and the signal (inline write or fetch-add) in one reservation, so
//              that they are consecutive WQEs of the QP: the QP executes them in order
//   quiet      every QP of the PE (or of every RDMA PE, or one QP) drained up to its submit index
//   fence      the provider's fence flag on each QP's next WQE (RdmaEngine::fence)
//
// Local memory: a write's source and a read's destination are reached through a memory key, so
// they must lie in the symmetric heap or a registered buffer (buffer_register), as with NVSHMEM's
// remote transports. Inline writes carry their bytes in the WQE and need no key, so small puts
// and p work from any memory. A put_nbi's source must stay unchanged until the next quiet.
#pragma once

#include <cstdint>
#include <type_traits>

#include "mori/core/copy.hpp"
#include "mori/core/scope.hpp"
#include "mori/platform/path_mark.hpp"
#include "mori/provider/concepts.hpp"
#include "mori/state/address.hpp"
#include "mori/state/amo.hpp"
#include "mori/state/device_error.hpp"
#include "mori/transport/rdma_engine.hpp"
#include "mori/transport/reach.hpp"

namespace mori::transport {

using state::RemoteTarget;

template <provider::NicProvider Provider>
struct Rdma {
  using Engine = RdmaEngine<Provider>;
  using WorkRequest = provider::WorkRequest;
  using Opcode = provider::Opcode;
  static constexpr const char* kName = Provider::kName;
  // A blocking put, get or put-with-signal is put<S, true>, get<S, true> or put_signal<S, true>:
  // the leader's post waits for its batch in the engine's one wait loop, where a quiet after the
  // post was a second inlined wait (CQ poll and timeout site). The QP completes in order, so that
  // also completes everything it took before the batch, as the quiet of that PE and QP did.
  static constexpr bool kAwaitsPosts = true;

  template <Scope S, bool kAwait = false>
  MORI_DEVICE static void put(const char* call, const RemoteTarget& dst, const void* src,
                              uint64_t bytes) {
    if (!S::leader() || bytes == 0) return;
    RdmaEndpoint& ep = endpoint(call, dst.pe, dst.qp);
    Engine::template post_span<Engine::kMaxMessage, kAwait>(
        ep, write_request(call, dst, src, bytes), bytes, dst.pe, call);
  }

  template <Scope S, bool kAwait = false>
  MORI_DEVICE static void get(const char* call, void* dst, const RemoteTarget& src,
                              uint64_t bytes) {
    if (!S::leader() || bytes == 0) return;
    RdmaEndpoint& ep = endpoint(call, src.pe, src.qp);
    WorkRequest wr = remote(src);
    wr.opcode = Opcode::kRead;
    wr.lkey = local_key(call, dst, bytes, src.pe, "destination");
    wr.local_addr = reinterpret_cast<uint64_t>(dst);
    Engine::template post_span<Engine::kMaxMessage, kAwait>(ep, wr, bytes, src.pe, call);
  }

  // Strided: one work request per element, the elements shared over the scope's participants;
  // the lanes of a warp post theirs as one batch (RdmaEngine::post). iput's are writes (inline up
  // to the provider's limit), iget's reads into the destination's registered memory. Strides count
  // elements and are positive (the caller checks them, and sends contiguous runs through put/get).
  template <Scope S, typename T>
  MORI_DEVICE static void iput(const char* call, const RemoteTarget& dst, const T* src,
                               size_t dst_stride, size_t src_stride, size_t nelems) {
    if (nelems == 0) return;
    RdmaEndpoint& ep = endpoint(call, dst.pe, dst.qp);
    mori::detail::for_each_share<S>(nelems, [&](size_t i) {
      RemoteTarget element = dst;
      element.ref.offset += i * dst_stride * sizeof(T);
      Engine::post(ep, write_request(call, element, src + i * src_stride, sizeof(T)), dst.pe);
    });
  }
  template <Scope S, typename T>
  MORI_DEVICE static void iget(const char* call, T* dst, const RemoteTarget& src, size_t dst_stride,
                               size_t src_stride, size_t nelems) {
    if (nelems == 0) return;
    RdmaEndpoint& ep = endpoint(call, src.pe, src.qp);
    WorkRequest wr = remote(src);
    wr.opcode = Opcode::kRead;
    wr.bytes = sizeof(T);
    wr.lkey =
        local_key(call, dst, ((nelems - 1) * dst_stride + 1) * sizeof(T), src.pe, "destination");
    const uint64_t remote_base = wr.remote_addr;
    mori::detail::for_each_share<S>(nelems, [&](size_t i) {
      WorkRequest element = wr;
      element.local_addr = reinterpret_cast<uint64_t>(dst + i * dst_stride);
      element.remote_addr = remote_base + i * src_stride * sizeof(T);
      Engine::post(ep, element, src.pe);
    });
  }

  template <typename T>
  MORI_DEVICE static void p(const char* call, const RemoteTarget& dst, T value) {
    RdmaEndpoint& ep = endpoint(call, dst.pe, dst.qp);
    WorkRequest wr = remote(dst);
    static_assert(sizeof(T) <= sizeof(wr.operand), "p writes at most 8 bytes");
    wr.opcode = Opcode::kWriteInline;
    wr.inline_operand = true;
    __builtin_memcpy(&wr.operand, &value, sizeof(T));
    wr.bytes = sizeof(T);
    Engine::post(ep, wr, dst.pe);
  }

  template <typename T>
  MORI_DEVICE static T g(const char* call, const RemoteTarget& src) {
    static_assert(sizeof(T) <= 8, "g fetches at most one 8-byte ibuf slot");
    RdmaEndpoint& ep = endpoint(call, src.pe, src.qp);
    WorkRequest wr = remote(src);
    wr.opcode = Opcode::kRead;
    wr.bytes = sizeof(T);
    const uint64_t raw = Engine::fetch(ep, wr, src.pe);
    T value;
    __builtin_memcpy(&value, &raw, sizeof(T));  // the slot's low bytes (little-endian)
    return value;
  }

  // Any code of the ABI's atomicType on a 32- or 64-bit integer. Non-fetching codes return 0.
  template <typename T>
  MORI_DEVICE static T amo(const char* call, state::atomicType op, const RemoteTarget& dst, T value,
                           T compare) {
    static_assert(sizeof(T) == 4 || sizeof(T) == 8, "NIC atomics are 4 or 8 bytes");
    using U = std::make_unsigned_t<T>;
    check_nic_atomics(call, dst.pe);
    RdmaEndpoint& ep = endpoint(call, dst.pe, dst.qp);
    const U c = static_cast<U>(compare);
    const state::AmoRow row = state::amo_row(op);
    const U operand = state::amo_operand(row, static_cast<U>(value));
    constexpr bool kNative = sizeof(T) == 8 || Provider::kNativeAtomic32;
    switch (row.kind) {
      case state::AmoKind::kAdd:
      case state::AmoKind::kLoad:  // a fetch-add of 0
        if constexpr (kNative) {
          WorkRequest wr = atomic(dst, Opcode::kFetchAdd, operand, 0, sizeof(T));
          if (state::is_fetching(op))
            return static_cast<T>(
                Provider::atomic_result(Engine::fetch(ep, wr, dst.pe), sizeof(T)));
          Engine::discard_result(ep, wr);
          Engine::post(ep, wr, dst.pe);
          return 0;
        }
        break;  // emulated below
      case state::AmoKind::kCompareSwap:
        if constexpr (kNative)
          return static_cast<T>(Provider::atomic_result(
              Engine::fetch(ep, atomic(dst, Opcode::kCompareSwap, operand, c, sizeof(T)), dst.pe),
              sizeof(T)));
        break;
      case state::AmoKind::kSet:  // a NIC has no atomic set, swap, and, or or xor
      case state::AmoKind::kAnd:
      case state::AmoKind::kOr:
      case state::AmoKind::kXor:
        break;
      default:
        state::fail({state::DeviceErrorCode::kBadArgument, dst.pe, 0}, [&](state::Message& m) {
          m << call << ": " << static_cast<int>(op) << " is not an atomic operation code (PE "
            << dst.pe << ")";
        });
    }
    const U old = compare_swap_loop<U>(
        ep, dst, [&](U current) { return state::amo_apply(row.kind, current, operand, c); });
    return state::is_fetching(op) ? static_cast<T>(old) : T{0};
  }

  // A fetching code whose old value lands in local `fetch` by the next quiet (the nbi AMOs). When
  // the NIC has the operation at T's width (fetch-add, fetch-inc, fetch, compare-swap), lands its
  // result in host order (8 bytes on every provider; mlx5's 4-byte results land big-endian) and
  // `fetch` has a key (heap or buffer_register memory), the WQE lands the result in `fetch` itself
  // and is only posted: quiet's wait for the QP's completions covers it, with no staging step to
  // finish. Otherwise `fetch` is written before return, by the blocking operation: a compare-swap
  // loop (swap, and, or, xor, the 4-byte ones of BNXT and Ionic) needs each old value before its
  // next step, a byte-swapped result needs the CPU or GPU after the NIC, and the NIC cannot write
  // memory that has no key.
  template <typename T>
  MORI_DEVICE static void amo_nbi(const char* call, state::atomicType op, const RemoteTarget& dst,
                                  T value, T compare, T* fetch) {
    using U = std::make_unsigned_t<T>;
    constexpr uint64_t kProbe = sizeof(T) == 8 ? 0x0102030405060708 : 0x01020304;
    constexpr bool kLandsAsIs = (sizeof(T) == 8 || Provider::kNativeAtomic32) &&
                                Provider::atomic_result(kProbe, sizeof(T)) == kProbe;
    const state::AmoRow row = state::amo_row(op);
    const bool native = row.kind == state::AmoKind::kAdd || row.kind == state::AmoKind::kLoad ||
                        row.kind == state::AmoKind::kCompareSwap;
    uint32_t lkey = 0;
    check_nic_atomics(call, dst.pe);
    if (kLandsAsIs && native && row.fetch && find_local_key(fetch, sizeof(T), &lkey)) {
      const Opcode code =
          row.kind == state::AmoKind::kCompareSwap ? Opcode::kCompareSwap : Opcode::kFetchAdd;
      WorkRequest wr = atomic(dst, code, state::amo_operand(row, static_cast<U>(value)),
                              static_cast<U>(compare), sizeof(T));
      wr.local_addr = reinterpret_cast<uint64_t>(fetch);
      wr.lkey = lkey;
      Engine::post(endpoint(call, dst.pe, dst.qp), wr, dst.pe);
      return;
    }
    *fetch = amo<T>(call, op, dst, value, compare);
  }

  // The data, then the signal, as two consecutive WQEs of one reservation. Both are writes, or a
  // write and a fetch-add; the QP executes them in order, so the signal lands after the data.
  // Blocking (kAwait), the leader waits for the pair's completion, which follows the bulk's.
  template <Scope S, bool kAwait = false>
  MORI_DEVICE static void put_signal(const char* call, const RemoteTarget& dst, const void* src,
                                     uint64_t bytes, const RemoteTarget& signal, uint64_t value,
                                     state::atomicType op) {
    if (!S::leader()) return;
    RdmaEndpoint& ep = endpoint(call, dst.pe, dst.qp);
    RemoteTarget tail = dst;
    if (bytes >
        Engine::kMaxMessage) {  // the bulk first, then the last chunk together with the signal
      const uint64_t head = bytes - Engine::kMaxMessage;
      put<Thread>(call, dst, src, head);
      tail.ref.offset += head;
      src = static_cast<const char*>(src) + head;
      bytes = Engine::kMaxMessage;
    }
    const WorkRequest data = write_request(call, tail, src, bytes);
    WorkRequest sig = remote(signal);
    if (op == state::AMO_SIGNAL_ADD) {
      sig = atomic(signal, Opcode::kFetchAdd, value, 0, 8);
      Engine::discard_result(ep, sig);
    } else {  // AMO_SIGNAL_SET: the NIC has no atomic store; an 8-byte write is one
      sig.opcode = Opcode::kWriteInline;
      sig.inline_operand = true;
      sig.operand = value;
      sig.bytes = sizeof(value);
    }
    const WorkRequest pair[2] = {data, sig};
    Engine::template post_n<2, kAwait>(ep, pair, dst.pe, call);
  }

  // pe < 0: every PE reached over RDMA; qp < 0: every QP of the PE.
  MORI_DEVICE static void quiet(int pe, int qp) {
    for_each_endpoint(pe, qp, [&](RdmaEndpoint& ep, int p) { Engine::quiet(ep, p); });
  }
  MORI_DEVICE static void fence(int pe, int qp) {
    for_each_endpoint(pe, qp, [&](RdmaEndpoint& ep, int) { Engine::fence(ep); });
  }

 private:
  // Traps when the job's NICs have no atomics (GpuStates::flags, kNoNicAtomics): the NIC would
  // fail the WQE with an error completion that does not say why.
  MORI_DEVICE static void check_nic_atomics(const char* call, int pe) {
    state::fail_if((state::gpu_states().flags & state::kNoNicAtomics) != 0,
                   {state::DeviceErrorCode::kNotReachable, pe, 0, 0}, [&](state::Message& m) {
                     m << call << ": PE " << pe
                       << " is reached over RDMA, and this job's NICs have no atomics "
                          "(atomic_cap IBV_ATOMIC_NONE, see the init log)";
                   });
  }

  MORI_DEVICE static RdmaEndpoint& endpoint(const char* call, int pe, int qp) {
    const state::GpuStates& s = state::gpu_states();
    // One unsigned compare: a negative qp wraps past every count. QP 0 always exists: the runtime
    // admits 1 to 256 QPs per PE (MORI_NUM_QP_PER_PE). Told so, the compiler drops the check where
    // it knows the qp is 0 (the barrier, the syncs and the collectives name it); a qp the caller
    // passes keeps the compare.
    MORI_ASSUME(s.num_qp_per_pe > 0);
    state::fail_if(static_cast<uint32_t>(qp) >= static_cast<uint32_t>(s.num_qp_per_pe),
                   {state::DeviceErrorCode::kBadArgument, pe, 0, static_cast<uint64_t>(qp)},
                   [&](state::Message& m) {
                     m << call << ": qp " << qp << " is out of range [0, " << s.num_qp_per_pe
                       << ") (PE " << pe << ", MORI_NUM_QP_PER_PE)";
                   });
    return s.rdma_endpoints[pe * s.num_qp_per_pe + qp];
  }

  // The remote address and key of `t` (RDMA names the target in its own PE's address space).
  MORI_DEVICE static WorkRequest remote(const RemoteTarget& t) {
    const state::RegisteredRegion& r = state::region_of(t.ref);  // the heap's or the buffer's
    WorkRequest wr{};
    wr.remote_addr = r.remote_bases[t.pe] + t.ref.offset;
    wr.rkey = r.rkeys[t.pe];
    return wr;
  }

  // An RDMA write of [src, src + bytes) to `dst`: inline up to the provider's limit (no key
  // needed), else from the source's registered memory. Its bytes are the low 32 bits of `bytes`:
  // a put posts it with Engine::post_span, which sets each message's; a signal's data, at most
  // Engine::kMaxMessage, with post_n.
  MORI_DEVICE static WorkRequest write_request(const char* call, const RemoteTarget& dst,
                                               const void* src, uint64_t bytes) {
    WorkRequest wr = remote(dst);
    wr.bytes = static_cast<uint32_t>(bytes);
    if (bytes <= Provider::kMaxInlineBytes) {
      MORI_PATH_MARK("rdma.put.inline");
      wr.opcode = Opcode::kWriteInline;
      wr.inline_data = src;
    } else {
      wr.opcode = Opcode::kWrite;
      wr.lkey = local_key(call, src, bytes, dst.pe, "source");
      wr.local_addr = reinterpret_cast<uint64_t>(src);
    }
    return wr;
  }

  MORI_DEVICE static WorkRequest atomic(const RemoteTarget& t, Opcode op, uint64_t operand,
                                        uint64_t compare, uint8_t width) {
    WorkRequest wr = remote(t);
    wr.opcode = op;
    wr.width = width;
    wr.operand = operand;
    wr.compare = compare;
    return wr;
  }

  // The lkey of local [addr, addr + bytes) in *key, if that memory has one (heap or registered).
  MORI_DEVICE static bool find_local_key(const void* addr, uint64_t bytes, uint32_t* key) {
    state::SymmetricRef ref;
    if (!state::locate(reinterpret_cast<uint64_t>(addr), bytes, &ref)) return false;
    *key = state::region_of(ref).lkey;
    return true;
  }

  // The lkey of local [addr, addr + bytes); fails naming the call when that memory has none.
  MORI_DEVICE static uint32_t local_key(const char* call, const void* addr, uint64_t bytes, int pe,
                                        const char* role) {
    uint32_t key = 0;
    const uint64_t a = reinterpret_cast<uint64_t>(addr);
    state::fail_if(!find_local_key(addr, bytes, &key), {state::DeviceErrorCode::kBadAddress, pe, a},
                   [&](state::Message& m) {
                     m << call << ": local " << role << " " << hex(a) << " (" << bytes
                       << " bytes) has no RDMA key: use heap or buffer_register memory (PE " << pe
                       << ")";
                   });
    return key;
  }

  // Atomically replaces the value U at `t` with next(old) by NIC compare-swaps; returns old. A
  // 4-byte U on a NIC without 4-byte atomics swaps the aligned 8 bytes that hold it, keeping the
  // neighbouring 4 bytes as they are.
  template <typename U, typename Next>
  MORI_DEVICE static U compare_swap_loop(RdmaEndpoint& ep, const RemoteTarget& t, Next&& next) {
    constexpr bool kWide = sizeof(U) == 4 && !Provider::kNativeAtomic32;
    RemoteTarget word = t;
    uint32_t shift = 0;
    if constexpr (kWide) {
      const uint64_t addr = state::remote_address(t);
      shift = static_cast<uint32_t>(addr & 4) * 8;  // little-endian: the high half at +4
      word.ref.offset -= addr & 4;
    }
    constexpr uint8_t kWidth = kWide ? 8 : sizeof(U);
    auto post = [&](Opcode op, uint64_t operand, uint64_t compare) {
      const WorkRequest wr = atomic(word, op, operand, compare, kWidth);
      // A 4-byte NIC atomic writes 4 bytes (the slot's other 4 are stale), in the provider's order.
      return Provider::atomic_result(Engine::fetch(ep, wr, t.pe), kWidth);
    };
    auto narrow = [&](uint64_t w) { return static_cast<U>(kWide ? w >> shift : w); };
    auto widen = [&](uint64_t w, U value) {
      if constexpr (!kWide) return static_cast<uint64_t>(value);
      const uint64_t mask = uint64_t{0xffffffff} << shift;
      return (w & ~mask) | (static_cast<uint64_t>(value) << shift);
    };
    uint64_t seen = post(Opcode::kFetchAdd, 0, 0);  // the current value
    for (;;) {
      const U old = narrow(seen);
      const uint64_t got = post(Opcode::kCompareSwap, widen(seen, next(old)), seen);
      if (got == seen) return old;
      seen = got;
    }
  }

  template <typename F>
  MORI_DEVICE static void for_each_endpoint(int pe, int qp, F&& f) {
    const state::GpuStates& s = state::gpu_states();
    if (s.rdma_endpoints == nullptr) return;
    RdmaEndpoint* eps = s.rdma_endpoints;
    const int first = pe < 0 ? 0 : pe, end = pe < 0 ? s.n_pes : pe + 1;
    for (int p = first; p < end; ++p) {
      // RDMA PEs of a family this code carries, those reached for AMOs alone included (the AMO
      // table is the data table plus those: state/gpu_states.hpp).
      if (!rdma_reaches_amo(p)) continue;
      for (int q = qp < 0 ? 0 : qp; q < (qp < 0 ? s.num_qp_per_pe : qp + 1); ++q)
        f(eps[p * s.num_qp_per_pe + q], p);
    }
  }
};

}  // namespace mori::transport
