// The BNXT provider (Broadcom NetXtreme-E, bnxt_re): writes one work request into an SQ entry,
// rings the SQ doorbell, and turns requester completions into completion progress. Stateless and
// free of concurrency logic: every function is a pure function of its arguments and the endpoint's
// fixed fields, except that poll_cq advances ep.cq_consumed (its caller holds the CQ).
//
// Derived from rdma-core providers/bnxt_re/verbs.c (bnxt_re_post_send, bnxt_re_poll_one and the
// functions they call) and db.c; layouts in bnxt_defs.hpp, which cites each one.
//
// Queue model: static WQE mode. Every work request takes one 128-byte entry (STATIC_WQE_NUM_SLOTS,
// 8 slots of 16 bytes): slot 0 the header, slot 1 the RDMA or atomic extension, slot 2 the one SGE
// or slots 2..7 the inline data (96 bytes, BNXT_RE_MAX_INLINE_SIZE). In this mode rdma-core's
// doorbell index is the WQE index (que->dbtail = &jsqq->start_idx, bnxt_re_alloc_queues) and a
// requester CQE's con_indx counts WQEs, so the engine's 64-bit index maps to both directly.
//
// Endpoint fields: sq holds sq_wqes * kWqeBytes (sq_wqes a power of two, at most 65536, since
// con_indx has 16 valid bits), then the MSN table (sq_wqes entries of 8 bytes, see post_msn).
// db is the DPI doorbell page. The SQ doorbell's qid is ep.qpn; the CQ doorbell's is ep.cqn.
// dbr is unused: BNXT has no doorbell record. cq_dbr, when not null, is the 64-bit doorbell the
// CQ consumer index is rung through (on hardware the same DPI page as db, as bnxt_re_ring_cq_db
// does; the software NIC leaves it null so that a CQ doorbell never overwrites an SQ one).
// provider_word[kWordMtu] is the path MTU in bytes (a power of two), for psn_packets().
//
// Atomics are 64-bit only: InfiniBand atomics are 8 bytes and bnxt_re has no extended (32-bit or
// masked) ones (bnxt_re_build_atomic_sqe carries no width). So kNativeAtomic32 is false: the engine
// emulates a 32-bit operation with a 64-bit compare-swap loop on the aligned word that holds it (a
// 64-bit fetch-add would carry into the neighbour). post_atomic never runs a 32-bit request as 64.
#pragma once

#include <cstdint>

#include "mori/platform.hpp"
#include "mori/provider/bnxt_defs.hpp"
#include "mori/provider/concepts.hpp"
#include "mori/provider/work_request.hpp"
#include "mori/state/rdma_endpoint.hpp"

namespace mori::provider {

struct Bnxt {
  static constexpr const char* kName = "bnxt";
  static constexpr uint32_t kSlotBytes = sizeof(bnxt::bnxt_re_sge);  // the SQ's stride
  static constexpr uint32_t kWqeBytes = bnxt::STATIC_WQE_NUM_SLOTS * kSlotBytes;
  static constexpr uint32_t kMaxInlineBytes = bnxt::BNXT_RE_MAX_INLINE_SIZE;
  static constexpr uint32_t kCqeBytes = sizeof(bnxt::bnxt_re_req_cqe) + sizeof(bnxt::bnxt_re_bcqe);
  static constexpr bool kNativeAtomic32 = false;
  // Bytes of an SQ of `wqes` entries, as the runtime allocates it (the ring, then the MSN table).
  static constexpr uint64_t sq_bytes(uint32_t wqes) {
    return uint64_t{wqes} * (kWqeBytes + sizeof(bnxt::bnxt_re_msns));
  }
  // A new CQ ring as the driver hands it over: zeroed (for the software NIC, tests and benches).
  static void init_cq(uint8_t* cq, uint32_t entries) {
    for (uint64_t b = 0; b < uint64_t{entries} * kCqeBytes; ++b) cq[b] = 0;
  }

  // The old value of a fetching atomic from its landing slot: 8-byte atomics only, in host order
  // (the transport never posts a 4-byte one: kNativeAtomic32 is false).
  MORI_DEVICE static constexpr uint64_t atomic_result(uint64_t raw, uint8_t width) {
    return width == 4 ? raw & 0xffffffffull : raw;
  }
  // Header, extension and one SGE: the size (in slots) of every non-inline WQE we write.
  static constexpr uint32_t kSgeWqeSlots = 3;
  // poll_cq's status for a CQE that is not a requester completion: this value | its type.
  static constexpr uint32_t kStatusNotRequester = 0x100;
  static constexpr int kWordMtu = 0;  // provider_word index of the path MTU

  static_assert(kWqeBytes == 128 && kCqeBytes == 32, "static-mode WQE 128 bytes, CQE 32 bytes");
  static_assert(kWqeBytes == 2 * kSlotBytes + kMaxInlineBytes,
                "inline data fills the entry after the header and the extension");

  // RDMA write (IsRead false) or read of wr.bytes between local_addr/lkey and remote_addr/rkey.
  // wqe: the entry for wr.index, 16-byte aligned. Writes slots 0..2; the rest is not read.
  template <bool IsRead>
  MORI_DEVICE static void post_read_write(void* wqe, const WorkRequest& wr) {
    constexpr uint32_t kOpcode =
        IsRead ? bnxt::BNXT_RE_WR_OPCD_RDMA_READ : bnxt::BNXT_RE_WR_OPCD_RDMA_WRITE;
    uint8_t* slot = static_cast<uint8_t*>(wqe);
    put_slot(slot, header(kOpcode, wr, 0, kSgeWqeSlots, 0, wr.bytes));
    put_slot(slot + kSlotBytes, rdma(wr));
    put_slot(slot + 2 * kSlotBytes, sge(wr.local_addr, wr.lkey, wr.bytes));
  }

  // RDMA write of wr.bytes (at most kMaxInlineBytes) copied from wr.inline_data into the entry,
  // zero-padded to a whole slot. ws counts the slots used (bnxt_re_required_slots). Past the
  // limit: a trap with MORI_DEVICE_CHECKS; without, the copy stops at the entry's end and the
  // length field keeps wr.bytes, so the NIC rejects the WQE instead of writing past it.
  MORI_DEVICE static void post_inline_write(void* wqe, const WorkRequest& wr) {
    if constexpr (MORI_DEVICE_CHECKS) {
      if (wr.bytes > kMaxInlineBytes) platform::trap("mori bnxt: inline write beyond 96 bytes");
    }
    const uint32_t n = wr.bytes < kMaxInlineBytes ? wr.bytes : kMaxInlineBytes;
    const uint32_t padded = (n + kSlotBytes - 1) & ~(kSlotBytes - 1);
    uint8_t* slot = static_cast<uint8_t*>(wqe);
    put_slot(slot, header(bnxt::BNXT_RE_WR_OPCD_RDMA_WRITE, wr, bnxt::BNXT_RE_WR_FLAGS_INLINE,
                          2 + padded / kSlotBytes, 0, wr.bytes));
    put_slot(slot + kSlotBytes, rdma(wr));
    __builtin_memcpy(slot + 2 * kSlotBytes, wr.inline_data, n);
    __builtin_memset(slot + 2 * kSlotBytes + n, 0, padded - n);
  }

  // 64-bit fetch-add (wr.operand is the addend) or compare-swap (wr.compare expected, wr.operand
  // swapped in) at remote_addr/rkey; the old value lands at local_addr/lkey (bnxt_re_build_fna_sqe,
  // bnxt_re_build_cns_sqe). Precondition: wr.width == 8 (a trap with MORI_DEVICE_CHECKS). The SGE
  // length is wr.width, so a 4-byte request that slips through fails at the NIC, never runs as 64.
  MORI_DEVICE static void post_atomic(void* wqe, const WorkRequest& wr) {
    if constexpr (MORI_DEVICE_CHECKS) {
      if (wr.width != 8) platform::trap("mori bnxt: atomics are 64-bit only (kNativeAtomic32)");
    }
    const bool cas = wr.opcode == Opcode::kCompareSwap;
    uint8_t* slot = static_cast<uint8_t*>(wqe);
    put_slot(slot, header(cas ? bnxt::BNXT_RE_WR_OPCD_ATOMIC_CS : bnxt::BNXT_RE_WR_OPCD_ATOMIC_FA,
                          wr, 0, kSgeWqeSlots, wr.rkey, wr.remote_addr));
    const bnxt::bnxt_re_atomic operands{le64::from(wr.operand), le64::from(cas ? wr.compare : 0)};
    put_slot(slot + kSlotBytes, operands);
    put_slot(slot + 2 * kSlotBytes, sge(wr.local_addr, wr.lkey, wr.width));
  }

  // The SQ doorbell announcing entries [.., next_index): the ring position and the epoch of the
  // producer index, as bnxt_re_ring_sq_db builds it (type SQ, qid = the QP number).
  MORI_DEVICE static bnxt::bnxt_re_db_hdr sq_doorbell(const state::RdmaEndpoint& ep,
                                                      uint64_t next_index) {
    return bnxt::bnxt_re_init_db_hdr(bnxt::db_index_epoch(next_index, ep.sq_wqes), ep.qpn, 0,
                                     bnxt::BNXT_RE_QUE_TYPE_SQ);
  }

  // Makes entries [.., next_index) visible to the NIC. BNXT has no doorbell record, and no
  // BlueFlame-style copy of the last WQE, so only the register is written.
  MORI_DEVICE static void ring_doorbell(state::RdmaEndpoint& ep, uint64_t next_index,
                                        const void* /*last_wqe*/) {
    ring(ep.db, sq_doorbell(ep, next_index));
  }

  // Consumes the valid CQEs from ep.cq_consumed on (at most one pass), stopping after an error.
  // Returns the highest completed index: WQEs [.., completed_through) are done. On an error,
  // completed_through - 1 is the WQE that failed (con_indx points past it, as on success).
  // Precondition: ep.completed includes every completed_through returned before; the caller
  // holds the CQ. When it consumed anything and ep.cq_dbr is set, rings the CQ doorbell.
  MORI_DEVICE static CqPoll poll_cq(state::RdmaEndpoint& ep) {
    CqPoll poll{};
    poll.completed_through = ep.completed;
    poll.status_text = bnxt::req_status_text(bnxt::BNXT_RE_REQ_ST_OK);
    uint64_t consumed = ep.cq_consumed;
    for (uint32_t n = 0; n < ep.cq_entries; ++n) {
      uint8_t* cqe = ep.cq + (consumed & (ep.cq_entries - 1)) * kCqeBytes;
      const auto* req = reinterpret_cast<const bnxt::bnxt_re_req_cqe*>(cqe);
      const auto* base =
          reinterpret_cast<const bnxt::bnxt_re_bcqe*>(cqe + sizeof(bnxt::bnxt_re_req_cqe));
      // bnxt_re_is_cqe_valid: the phase word first, then udma_from_device_barrier so that the
      // rest of the CQE is read after it (here: one acquire load, at system scope for the NIC).
      const uint32_t flg =
          platform::atomic_load<platform::MemOrder::Acquire, platform::MemScope::System>(
              &base->flg_st_typ_ph.raw);
      if (bnxt::bcqe_phase(flg) != bnxt::cq_phase(consumed, ep.cq_entries)) break;
      ++consumed;
      poll.advanced = 1;
      if (bnxt::bcqe_type(flg) != bnxt::BNXT_RE_WC_TYPE_SEND) {
        poll.error = 1;
        poll.status = kStatusNotRequester | bnxt::bcqe_type(flg);
        poll.status_text = "unexpected CQE type";
        break;
      }
      poll.completed_through = extend(poll.completed_through, req->con_indx.get(), ep.sq_wqes);
      const uint32_t status = bnxt::bcqe_status(flg);
      if (status != bnxt::BNXT_RE_REQ_ST_OK) {
        poll.error = 1;
        poll.status = status;
        poll.status_text = bnxt::req_status_text(status);
        break;
      }
    }
    if (consumed != ep.cq_consumed) {
      ep.cq_consumed = consumed;
      // bnxt_re_ring_cq_db: hands the consumed slots back, or the NIC reports a CQ overflow.
      if (ep.cq_dbr != nullptr)
        ring(reinterpret_cast<uint64_t*>(ep.cq_dbr),
             bnxt::bnxt_re_init_db_hdr(bnxt::db_index_epoch(consumed, ep.cq_entries), ep.cqn, 0,
                                       bnxt::BNXT_RE_QUE_TYPE_CQ));
    }
    return poll;
  }

  // ---- per-WQE PSN bookkeeping (MSN table) ------------------------------------------------------
  // With BNXT_RE_COMP_MASK_UCNTX_MSN_TABLE_ENABLED the NIC finds a WQE by PSN through one 8-byte
  // entry per WQE after the SQ ring (que->pad; bnxt_re_fill_psns_for_msntbl). A WQE's start PSN is
  // the sum of the packets of every WQE before it, which needs shared state: the engine reserves
  // PSNs together with the WQE index, writes the entry with post_msn and then rings the doorbell.

  // Packets the WQE sends: ceil(bytes / MTU), at least 1 (bnxt_re_fill_psns_for_msntbl).
  MORI_DEVICE static uint32_t psn_packets(const state::RdmaEndpoint& ep, uint32_t bytes) {
    const uint32_t mtu = ep.provider_word[kWordMtu];
    const uint32_t packets = (bytes >> __builtin_ctz(mtu)) + ((bytes & (mtu - 1)) != 0 ? 1 : 0);
    return packets == 0 ? 1 : packets;
  }

  // Writes the MSN entry of WQE `index`: ring position, next PSN and start PSN (24 bits each).
  MORI_DEVICE static void post_msn(state::RdmaEndpoint& ep, uint64_t index, uint32_t start_psn,
                                   uint32_t packets) {
    const uint32_t position = static_cast<uint32_t>(index & (ep.sq_wqes - 1));
    msn_table(ep)[position].start_idx_next_psn_start_psn =
        bnxt::bnxt_re_update_msn_tbl(position, start_psn + packets, start_psn);
  }
  MORI_DEVICE static bnxt::bnxt_re_msns* msn_table(state::RdmaEndpoint& ep) {
    return reinterpret_cast<bnxt::bnxt_re_msns*>(ep.sq + uint64_t{ep.sq_wqes} * kWqeBytes);
  }

  // The engine's hooks (rdma_engine.hpp). A WQE's start PSN depends on every WQE before it, so
  // the lane that writes a WQE parks its packet count in the WQE's MSN entry (the NIC reads an
  // entry only after the doorbell announces it), and the in-order submitter turns the batch's
  // counts into entries, carrying the next PSN in ep.provider_state (24 bits). The runtime seeds
  // it with the QP's initial send PSN, the sq_psn of its RTS transition (rdma-core seeds its
  // count from attr->sq_psn in bnxt_re_modify_qp), and the NIC checks every entry against it.
  MORI_DEVICE static void note_wqe(state::RdmaEndpoint& ep, const WorkRequest& wr) {
    const uint32_t bytes =
        wr.opcode == Opcode::kFetchAdd || wr.opcode == Opcode::kCompareSwap ? 8u : wr.bytes;
    msn_table(ep)[wr.index & (ep.sq_wqes - 1)].start_idx_next_psn_start_psn =
        le64::from(psn_packets(ep, bytes));
  }
  MORI_DEVICE static void prepare_submit(state::RdmaEndpoint& ep, uint64_t base, uint64_t next) {
    uint32_t psn = ep.provider_state;
    for (uint64_t i = base; i < next; ++i) {
      const uint32_t packets = static_cast<uint32_t>(
          msn_table(ep)[i & (ep.sq_wqes - 1)].start_idx_next_psn_start_psn.get());
      post_msn(ep, i, psn, packets);
      psn = (psn + packets) & 0xffffff;
    }
    ep.provider_state = psn;
  }

 private:
  MORI_DEVICE static bnxt::bnxt_re_bsqe header(uint32_t opcode, const WorkRequest& wr,
                                               uint32_t flags, uint32_t slots, uint32_t key,
                                               uint64_t lhdr) {
    // bnxt_re_set_hdr_flags: IBV_SEND_SIGNALED -> SIGNALED, IBV_SEND_FENCE -> UC_FENCE.
    flags |= (wr.signaled ? bnxt::BNXT_RE_WR_FLAGS_SIGNALED : 0) |
             (wr.fence ? bnxt::BNXT_RE_WR_FLAGS_UC_FENCE : 0);
    bnxt::bnxt_re_bsqe h;
    h.rsv_ws_fl_wt = le32::from(bnxt::bsqe_rsv_ws_fl_wt(opcode, flags, slots));
    h.key_immd = le32::from(key);
    h.lhdr.qkey_len = le64::from(lhdr);
    return h;
  }
  MORI_DEVICE static bnxt::bnxt_re_rdma rdma(const WorkRequest& wr) {
    return {le64::from(wr.remote_addr), le32::from(wr.rkey), le32::from(0)};
  }
  MORI_DEVICE static bnxt::bnxt_re_sge sge(uint64_t addr, uint32_t lkey, uint32_t length) {
    return {le64::from(addr), le32::from(lkey), le32::from(length)};
  }
  template <typename Segment>
  MORI_DEVICE static void put_slot(uint8_t* slot, const Segment& segment) {
    static_assert(sizeof(Segment) == kSlotBytes, "a WQE segment fills one 16-byte slot");
    platform::store16_global(slot, __builtin_bit_cast(platform::Vec16, segment));
  }
  // bnxt_re_ring_db: mmio_wc_start(), one 64-bit store, mmio_flush_writes(). The fence keeps the
  // WQE (or CQE) accesses before the doorbell for the NIC, which reads entries by DMA;
  // mmio_flush_writes has nothing to do here, as the doorbell page is uncached on the GPU.
  MORI_DEVICE static void ring(uint64_t* reg, const bnxt::bnxt_re_db_hdr& hdr) {
    platform::fence<platform::MemOrder::Release, platform::MemScope::System>();
    platform::atomic_store<platform::MemOrder::Relaxed, platform::MemScope::System>(
        reg, bnxt::db_hdr_value(hdr));
  }
  // con_indx has 16 valid bits: the SQ consumer index after the completed WQE, in WQEs
  // (bnxt_re_poll_success_scqe compares it, modulo the SQ depth, with the next WQE to retire).
  // The 64-bit index t it stands for satisfies base < t <= base + sq_wqes, as at most sq_wqes
  // WQEs are outstanding, so its low bits (modulo min(sq_wqes, 2^16)) choose t.
  MORI_DEVICE static uint64_t extend(uint64_t base, uint32_t con_indx, uint32_t sq_wqes) {
    const uint64_t mask = (sq_wqes < 65536u ? sq_wqes : 65536u) - 1;
    return base + ((con_indx - base - 1) & mask) + 1;
  }
};
static_assert(NicProvider<Bnxt>);

}  // namespace mori::provider
