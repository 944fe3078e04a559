// The MLX5 provider (NVIDIA/Mellanox ConnectX): writes one work request into one 64-byte WQEBB of
// the send queue, rings the doorbell, and parses the completion queue ring. No state, no
// concurrency: the IBGDA engine (transport/rdma.hpp) owns both. Layouts and their sources:
// mlx5_defs.hpp.
//
// How rdma-core builds a send (providers/mlx5/qp.c, _mlx5_post_send) and what this provider does
// the same or differently:
//  - Segments: ctrl + raddr [+ data] for RDMA write/read, ctrl + raddr + atomic + data for atomics,
//    ctrl + raddr + inline header + data for inline writes, as qp.c builds them for an RC QP. An
//    empty transfer has no data segment (ds 2), as UCX posts it (uct_rc_mlx5_txqp_dptr_post).
//  - 32-bit atomics: the extended atomic opcodes with opmod 0x08 (4-byte operands), as UCX,
//    NVSHMEM and DeepEP post them; rdma-core has no 32-bit atomic. kNativeAtomic32 = true.
//  - Fence: MLX5_WQE_CTRL_FENCE, qp.c's translation of IBV_SEND_FENCE.
//  - Every byte of the WQEBB is written (the bytes past ds are zero), in four 16-byte stores.
//
// Runtime and engine obligations:
//  - The send CQ is a ring of ep.cq_entries (a power of two) 64-byte CQEs, as ibv_create_cq makes
//    it, every entry initialised with op_own = MLX5_CQE_INVALID << 4 (rdma-core cq.c,
//    mlx5_alloc_cq_buf). It serves this QP only and holds at least sq_wqes entries, which the
//    engine's flow control keeps from overflowing. docs/rdma-hardware.md says why a ring and not
//    ROCm/mori's collapsed CQ.
//  - At most 65535 WQEs outstanding (the 16-bit wqe_counter is extended from ep.completed), and
//    ep.completed advances only from what poll_cq reports.
//  - ep.dbr is the QP's doorbell record (mlx5dv_qp.dbrec), ep.db the BlueFlame register
//    (mlx5dv_qp.bf.reg), ep.cq_dbr the CQ's doorbell record (mlx5dv_cq.dbrec; null on the software
//    NIC, which reads ep.cq_consumed); provider_word is unused.
//  - Entries written by other threads are ordered before the ringer's doorbell by the engine;
//    ring_doorbell's release orders this thread's own writes.
#pragma once

#include <cstdint>

#include "mori/platform.hpp"
#include "mori/provider/concepts.hpp"
#include "mori/provider/inline_data.hpp"
#include "mori/provider/mlx5_defs.hpp"
#include "mori/provider/queue_memory.hpp"
#include "mori/provider/work_request.hpp"
#include "mori/state/rdma_endpoint.hpp"

namespace mori::provider {

struct Mlx5 : Mlx5Geometry {
  static constexpr const char* kName = "mlx5";
  static constexpr bool kNativeAtomic32 = true;
  // Bytes of an SQ of `wqes` entries, as the runtime allocates it.
  static constexpr uint64_t sq_bytes(uint32_t wqes) { return uint64_t{wqes} * (kWqeBytes); }
  // A new CQ ring of `entries` CQEs as the driver hands it over: every op_own INVALID, owner 0
  // (rdma-core cq.c, mlx5_alloc_cq_buf). For the software NIC, tests and benches.
  static void init_cq(uint8_t* cq, uint32_t entries) {
    for (uint32_t i = 0; i < entries; ++i) {
      for (uint32_t b = 0; b < kCqeBytes; ++b) cq[i * kCqeBytes + b] = 0;
      cq[i * kCqeBytes + kCqeBytes - 1] = MLX5_CQE_INVALID << 4;
    }
  }

  // The old value of a fetching atomic from its landing slot. A 4-byte (extended, masked) atomic's
  // result lands big-endian, an 8-byte one's in host order: NVSHMEM's IBGDA reads the ibuf slot and
  // byte-swaps exactly the 4-byte results (ibgda_device.cuh, nvshmemi_ibgda_amo_fetch_impl:
  // "if (sizeof(T) == 4) ret = BSWAP32(...)"), and UCX handles 32-bit extended atomic replies as
  // big-endian.
  MORI_DEVICE static constexpr uint64_t atomic_result(uint64_t raw, uint8_t width) {
    return width == 4 ? uint64_t{__builtin_bswap32(static_cast<uint32_t>(raw))} : raw;
  }
  // CqPoll::status: syndrome | vendor_err_synd << 8 for an error CQE; this bit | the CQE opcode for
  // a CQE a send queue never receives.
  static constexpr uint32_t kStatusUnexpectedCqe = 0x10000;

  // The mlx5 opcode that carries `wr` (also what a CQE's sop_drop_qpn names).
  MORI_DEVICE static constexpr uint8_t wqe_opcode(const WorkRequest& wr) {
    switch (wr.opcode) {
      case Opcode::kRead:
        return MLX5_OPCODE_RDMA_READ;
      case Opcode::kFetchAdd:
        return wr.width == 4 ? MLX5_OPCODE_ATOMIC_MASKED_FA : MLX5_OPCODE_ATOMIC_FA;
      case Opcode::kCompareSwap:
        return wr.width == 4 ? MLX5_OPCODE_ATOMIC_MASKED_CS : MLX5_OPCODE_ATOMIC_CS;
      default:
        return MLX5_OPCODE_RDMA_WRITE;
    }
  }

  // RDMA write (IsRead = false) or read of wr.bytes (< 2^31) between wr.local_addr/lkey and
  // wr.remote_addr/rkey. No data segment when bytes == 0: the NIC then moves nothing.
  template <bool IsRead>
  MORI_DEVICE static void post_read_write(void* wqe, const WorkRequest& wr) {
    constexpr uint8_t kOpcode = IsRead ? MLX5_OPCODE_RDMA_READ : MLX5_OPCODE_RDMA_WRITE;
#if MORI_DEVICE_CHECKS
    if (wr.bytes & MLX5_INLINE_SEG) platform::trap("mlx5: a transfer is at most 2^31 - 1 bytes");
#endif
    Mlx5RdmaWqe w{};
    w.ctrl = ctrl(wr, kOpcode, 0, wr.bytes ? 3 : 2);
    w.raddr = raddr(wr);
    if (wr.bytes) w.data = data(wr.bytes, wr);
    publish(wqe, w);
  }

  // RDMA write of wr.bytes (<= kMaxInlineBytes) from wr.inline_data, carried in the WQE.
  MORI_DEVICE static void post_inline_write(void* wqe, const WorkRequest& wr) {
#if MORI_DEVICE_CHECKS
    if (wr.bytes > kMaxInlineBytes) platform::trap("mlx5: inline write beyond 28 bytes");
#endif
    // Clamped, so that a release build never writes past the WQEBB.
    const uint32_t n = wr.bytes < kMaxInlineBytes ? wr.bytes : kMaxInlineBytes;
    Mlx5InlineWqe w{};
    // set_data_inl_seg: the header and the data, padded together to 16-byte units
    w.ctrl = ctrl(wr, MLX5_OPCODE_RDMA_WRITE, 0, static_cast<uint8_t>(2 + (4 + n + 15) / 16));
    w.raddr = raddr(wr);
    w.inl.byte_count = be32::from(MLX5_INLINE_SEG | n);
    const InlineWords<kMaxInlineBytes> data = inline_payload<kMaxInlineBytes>(wr);
    __builtin_memcpy(w.data, data.word, kMaxInlineBytes);
    publish(wqe, w);
  }

  // Fetch-add (wr.operand is the addend) or compare-swap (wr.compare expected, wr.operand swapped
  // in) of wr.width = 8 or 4 bytes at wr.remote_addr; the old value lands at wr.local_addr/lkey.
  // Width 4 is a 32-bit NIC atomic (extended atomic, opmod 0x08), never widened to 8 bytes.
  MORI_DEVICE static void post_atomic(void* wqe, const WorkRequest& wr) {
    const bool cas = wr.opcode == Opcode::kCompareSwap;
    if (wr.width == 8) {
      Mlx5AtomicWqe<mlx5_wqe_atomic_seg> w{};
      w.ctrl = ctrl(wr, wqe_opcode(wr), 0, 4);
      w.raddr = raddr(wr);
      w.op.swap_add = be64::from(wr.operand);  // _set_atomic_seg
      w.op.compare = be64::from(cas ? wr.compare : 0);
      w.data = data(8, wr);
      publish(wqe, w);
    } else if (wr.width == 4 && cas) {
      Mlx5AtomicWqe<mlx5_atomic_masked_cswap32_seg> w{};
      w.ctrl = ctrl(wr, MLX5_OPCODE_ATOMIC_MASKED_CS, kMlx5OpmodExtAtomic32, 4);
      w.raddr = raddr(wr);
      w.op = {be32::from(static_cast<uint32_t>(wr.operand)),
              be32::from(static_cast<uint32_t>(wr.compare)), be32::from(~0u), be32::from(~0u)};
      w.data = data(4, wr);
      publish(wqe, w);
    } else if (wr.width == 4) {
      Mlx5AtomicWqe<mlx5_atomic_masked_fadd32_seg> w{};
      w.ctrl = ctrl(wr, MLX5_OPCODE_ATOMIC_MASKED_FA, kMlx5OpmodExtAtomic32, 4);
      w.raddr = raddr(wr);
      w.op.add = be32::from(static_cast<uint32_t>(wr.operand));
      w.data = data(4, wr);
      publish(wqe, w);
    } else {
      platform::trap("mlx5: atomics are 4 or 8 bytes");
    }
  }

  // Announces WQEs [.., next_index) as post_send_db does. Units: next_index is the 64-bit SQ index
  // one past the last WQE; the doorbell record keeps its low 16 bits (rdma-core's
  // `cur_post & 0xffff`), big-endian. `last_wqe` is that last WQE (index next_index - 1): its
  // first 8 bytes are the doorbell value (mmio_write64_be of the ctrl segment).
  MORI_DEVICE static void ring_doorbell(state::RdmaEndpoint& ep, uint64_t next_index,
                                        const void* last_wqe) {
    using platform::MemOrder, platform::MemScope;
    // Release (udma_to_device_barrier): the NIC may fetch WQEs as soon as it sees the record, so
    // this thread's WQE writes must reach memory before the new counter does.
    platform::atomic_store<MemOrder::Release, MemScope::System>(
        &ep.dbr[MLX5_SND_DBR], be32::from(static_cast<uint32_t>(next_index & 0xffff)).raw);
    const auto* c = static_cast<const mlx5_wqe_ctrl_seg*>(last_wqe);
    const uint64_t value = uint64_t{c->opmod_idx_opcode.raw} | uint64_t{c->qpn_ds.raw} << 32;
    // Release (mmio_wc_start): the NIC reads the record when the doorbell arrives; a doorbell that
    // overtook the record would announce WQEs the record does not yet cover.
    platform::atomic_store<MemOrder::Release, MemScope::System>(ep.db, value);
    // mmio_flush_writes (two ringers' doorbells reaching the NIC out of order) is the engine's: its
    // release of the submitted index after this call orders this doorbell before the next ring.
  }

  // Consumes the next CQE of the ring, if the NIC has written it: advances ep.cq_consumed and the
  // CQ's consumer index in its doorbell record, and reports WQEs [.., completed_through) complete;
  // advanced = 1 when that is beyond ep.completed. On error completed_through - 1 is the failed
  // WQE. A CQE is new when its opcode is not INVALID and its owner bit is the parity of the ring's
  // pass (rdma-core cq.c, get_sw_cqe). One CQE per call keeps the hot path straight-line; the
  // engine's waiters call again while they wait. The caller holds the CQ.
  MORI_DEVICE static CqPoll poll_cq(state::RdmaEndpoint& ep) {
    using platform::MemOrder, platform::MemScope;
    const uint64_t pos =
        platform::atomic_load<MemOrder::Relaxed, MemScope::System>(&ep.cq_consumed);
    const uint64_t before =
        platform::atomic_load<MemOrder::Relaxed, MemScope::System>(&ep.completed);
    CqPoll out{};
    out.completed_through = before;
    out.status_text = "success";
    const uint8_t* cqe = ep.cq + (pos & (ep.cq_entries - 1)) * kCqeBytes;
    // Acquire: the NIC writes op_own last; what the CQE says is read after it (rdma-core's
    // udma_from_device_barrier after get_sw_cqe).
    const uint32_t raw = platform::atomic_load<MemOrder::Acquire, MemScope::System>(
        reinterpret_cast<const uint32_t*>(cqe + kMlx5CqeTailOffset));
    const Mlx5CqeTail tail = __builtin_bit_cast(Mlx5CqeTail, raw);
    const uint8_t opcode = mlx5_cqe_opcode(tail.op_own);
    bool stale = opcode == MLX5_CQE_INVALID;
    stale |= mlx5_cqe_owner(tail.op_own) != ((pos & ep.cq_entries) ? 1 : 0);
    if (stale) return out;  // not written yet in this pass
    // 16-bit wrap: N - (before - 1) is in [0, 0xffff] while fewer than 65536 WQEs are
    // outstanding. An error CQE names the failed WQE, a success the last one it completes.
    const uint16_t delta = static_cast<uint16_t>(tail.wqe_counter.get() - (before - 1));
    out.completed_through = before + delta;
    if (opcode != MLX5_CQE_REQ) {
      const Mlx5CqeSyndromes s = __builtin_bit_cast(
          Mlx5CqeSyndromes, *reinterpret_cast<const uint32_t*>(cqe + kMlx5CqeSyndromesOffset));
      out.error = 1;
      if (opcode == MLX5_CQE_REQ_ERR || opcode == MLX5_CQE_RESP_ERR) {
        out.status = s.syndrome | uint32_t{s.vendor_err_synd} << 8;
        out.status_text = mlx5_syndrome_str(s.syndrome);
      } else {
        out.status = kStatusUnexpectedCqe | opcode;
        out.status_text = "unexpected CQE opcode";
        out.completed_through = before;  // names no WQE
      }
    }
    out.advanced = out.completed_through > before;
    // Release (here and in the doorbell record): our reads of the entry come before its reuse, by
    // a software NIC that reads cq_consumed or a NIC that reads the record (rdma-core cq.c,
    // update_cons_index: dbrec[MLX5_CQ_SET_CI] = htobe32(ci & 0xffffff)).
    platform::atomic_store<MemOrder::Release, MemScope::System>(&ep.cq_consumed, pos + 1);
    if (ep.cq_dbr != nullptr)
      platform::atomic_store<MemOrder::Release, MemScope::System>(
          &ep.cq_dbr[MLX5_CQ_SET_CI], be32::from(static_cast<uint32_t>(pos + 1) & 0xffffff).raw);
    return out;
  }

  // The engine's hooks (provider/concepts.hpp): no per-WQE bookkeeping.
  MORI_DEVICE static void note_wqe(state::RdmaEndpoint&, const WorkRequest&) {}
  MORI_DEVICE static void prepare_submit(state::RdmaEndpoint&, uint64_t, uint64_t) {}

 private:
  MORI_DEVICE static mlx5_wqe_ctrl_seg ctrl(const WorkRequest& wr, uint8_t opcode, uint8_t opmod,
                                            uint8_t ds) {
    const uint8_t fm_ce_se = static_cast<uint8_t>((wr.fence ? MLX5_WQE_CTRL_FENCE : 0) |
                                                  (wr.signaled ? MLX5_WQE_CTRL_CQ_UPDATE : 0));
    return mlx5_ctrl_seg(static_cast<uint16_t>(wr.index), opcode, opmod, wr.qpn & 0xffffff,
                         fm_ce_se, ds);
  }
  MORI_DEVICE static mlx5_wqe_raddr_seg raddr(const WorkRequest& wr) {
    return {be64::from(wr.remote_addr), be32::from(wr.rkey), be32::from(0)};  // set_raddr_seg
  }
  MORI_DEVICE static mlx5_wqe_data_seg data(uint32_t bytes, const WorkRequest& wr) {
    return {be32::from(bytes), be32::from(wr.lkey), be64::from(wr.local_addr)};
  }

  // The composed WQEBB (queue_memory.hpp).
  template <typename Wqe>
  MORI_DEVICE static void publish(void* wqe, const Wqe& w) {
    static_assert(sizeof(Wqe) == kWqeBytes, "an mlx5 WQE is one WQEBB");
    store_wqe64(wqe, w);
  }
};
static_assert(NicProvider<Mlx5>);

}  // namespace mori::provider
