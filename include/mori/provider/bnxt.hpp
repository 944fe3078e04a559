// The BNXT provider (Broadcom NetXtreme-E, bnxt_re): writes one work request into an SQ entry,
// rings the SQ doorbell, and turns requester completions into completion progress. Stateless and
// free of concurrency logic: every function is a pure function of its arguments and the endpoint's
// fixed fields, except that poll_cq advances ep.cq_consumed (its caller holds the CQ).
//
// Derived from rdma-core providers/bnxt_re/verbs.c (bnxt_re_post_send, bnxt_re_poll_one and the
// functions they call) and db.c; layouts in bnxt_defs.hpp, which cites each one.
//
// Queue model: variable WQE mode, which Thor2 (BNXT_RE P7) runs; static mode (Thor, P5) is not
// modelled. In variable mode rdma-core counts the SQ in 16-byte slots: its doorbell carries the
// producer's slot index (que->dbtail = &que->tail, bnxt_re_alloc_queues) and a WQE fills the slots
// its header's ws field names. The engine hands out WQE indices, and a lane writes its WQE at a
// place known when the index is reserved, so every WQE here has one size: 3 slots (kWqeSlots,
// rdma-core's SEND_SGE_MIN_SLOTS), the header, the RDMA or atomic extension and one SGE or one slot
// of inline data (kMaxInlineBytes = 16; longer puts take the SGE path). With a ring of
// W = ep.sq_wqes WQEs (a power of two) the SQ has 3W slots, WQE i starts at slot 3 * (i mod W),
// and the slot index wraps exactly when the WQE index does: the doorbell's slot index is
// 3 * (i mod W) and its epoch the parity of i / W, no division needed.
//
// Completions: a success CQE's con_indx counts WQEs (after the completed one), an error CQE's the
// failed WQE's first slot (bnxt_defs.hpp, bnxt_re_req_cqe). Both have 16 valid bits, and an error's
// slot index must name every slot: 3W <= 65536, so W <= kMaxSqWqes = 16384. rdma-core rounds its
// slot count up to a multiple of 256 (BNXT_VAR_MAX_SLOT_ALIGN), which 3W is whenever W >= 256, as
// on the GPU.
//
// Flow control: the engine keeps at most W - 1 WQEs outstanding (3W - 3 slots). rdma-core's user
// library keeps 128 WQEs more free (BNXT_RE_FULL_FLAG_DELTA), but the kernel keeps no gap for
// variable-mode QPs and tests only that a WQE's own slots are free (bnxt_defs.hpp), so the
// hardware needs none and this provider asks the engine for none.
//
// Endpoint fields: sq holds the 3W slots (W * kWqeBytes bytes), then the MSN table
// (bnxt::var_msn_tbl_sz(3W) = 2W entries of 8 bytes, see post_msn): sq_bytes(W) = 64 W bytes.
// db is the DPI doorbell page. The SQ doorbell's qid is ep.qpn; the CQ doorbell's is ep.cqn.
// dbr is unused: BNXT has no doorbell record. cq_dbr, when not null, is the 64-bit doorbell the
// CQ consumer index is rung through (on hardware the same DPI page as db, as bnxt_re_ring_cq_db
// does; the software NIC leaves it null so that a CQ doorbell never overwrites an SQ one).
// provider_word[kWordMtu] is the path MTU in bytes (a power of two), for psn_packets().
//
// Atomics are 64-bit only: InfiniBand atomics are 8 bytes and bnxt_re has no extended (32-bit or
// masked) ones (bnxt_re_build_atomic_sqe carries no width). So kNativeAtomic32 is false: the
// transport (transport/rdma.hpp) emulates a 32-bit operation with a 64-bit compare-swap loop on the
// aligned word that holds it (a 64-bit fetch-add would carry into the neighbour), and the engine
// refuses a 32-bit atomic request. post_atomic never runs a 32-bit request as 64.
#pragma once

#include <cstdint>

#include "mori/platform.hpp"
#include "mori/provider/bnxt_defs.hpp"
#include "mori/provider/concepts.hpp"
#include "mori/provider/inline_data.hpp"
#include "mori/provider/queue_memory.hpp"
#include "mori/provider/work_request.hpp"
#include "mori/state/rdma_endpoint.hpp"

namespace mori::provider {

struct Bnxt : BnxtGeometry {
  static constexpr const char* kName = "bnxt";
  static constexpr bool kNativeAtomic32 = false;
  // Bytes of an SQ of `wqes` WQEs, as the runtime allocates it: the 3 * wqes slots, then the MSN
  // table of var_msn_tbl_sz(3 * wqes) = 2 * wqes entries.
  static constexpr uint64_t sq_bytes(uint32_t wqes) {
    return uint64_t{wqes} * kWqeBytes +
           bnxt::var_msn_tbl_sz(uint64_t{wqes} * kWqeSlots) * kMsnEntryBytes;
  }
  // A new CQ ring as the driver hands it over: zeroed (for the software NIC, tests and benches).
  static void init_cq(uint8_t* cq, uint32_t entries) { zero_cq(cq, entries, kCqeBytes); }

  // The old value of a fetching atomic from its landing slot (queue_memory.hpp).
  MORI_DEVICE static constexpr uint64_t atomic_result(uint64_t raw, uint8_t width) {
    return atomic_result_8(raw, width);
  }
  // poll_cq's status for a CQE that is not a requester completion: this value | its type.
  static constexpr uint32_t kStatusNotRequester = 0x100;
  static constexpr int kWordMtu = 0;  // provider_word index of the path MTU

  static_assert(kWqeBytes == 48 && kCqeBytes == 32, "variable-mode WQE 3 slots, CQE 32 bytes");
  static_assert(kWqeBytes == bnxt::BNXT_RE_SQE_HDR_SLOTS * kSlotBytes + kMaxInlineBytes,
                "inline data fills the WQE's last slot, after the header and the extension");
  static_assert(uint64_t{kMaxSqWqes} * kWqeSlots <= 65536,
                "an error CQE's 16-bit con_indx names every slot of the deepest ring");

  // RDMA write (IsRead false) or read of wr.bytes between local_addr/lkey and remote_addr/rkey.
  // wqe: the WQE's 3 slots (slot 3 * (wr.index mod W)), 16-byte aligned.
  template <bool IsRead>
  MORI_DEVICE static void post_read_write(void* wqe, const WorkRequest& wr) {
    constexpr uint32_t kOpcode =
        IsRead ? bnxt::BNXT_RE_WR_OPCD_RDMA_READ : bnxt::BNXT_RE_WR_OPCD_RDMA_WRITE;
    uint8_t* slot = static_cast<uint8_t*>(wqe);
    put_slot(slot, header(kOpcode, wr, 0, kWqeSlots, 0, wr.bytes));
    put_slot(slot + kSlotBytes, rdma(wr));
    put_slot(slot + 2 * kSlotBytes, sge(wr.local_addr, wr.lkey, wr.bytes));
  }

  // RDMA write of wr.bytes (at most kMaxInlineBytes) copied from wr.inline_data into the WQE's last
  // slot, zero-padded. ws is 3 whatever the length: bnxt_re_required_slots would give an empty
  // write 2 slots, but every WQE here spans 3, and ws is where the NIC finds the next one. Past the
  // limit: a trap with MORI_DEVICE_CHECKS; without, the copy stops at the WQE's end and the length
  // field keeps wr.bytes, so the NIC rejects the WQE instead of writing past it.
  MORI_DEVICE static void post_inline_write(void* wqe, const WorkRequest& wr) {
#if MORI_DEVICE_CHECKS
    if (wr.bytes > kMaxInlineBytes) platform::trap("bnxt: inline write beyond 16 bytes");
#endif
    uint8_t* slot = static_cast<uint8_t*>(wqe);
    put_slot(slot, header(bnxt::BNXT_RE_WR_OPCD_RDMA_WRITE, wr, bnxt::BNXT_RE_WR_FLAGS_INLINE,
                          kWqeSlots, 0, wr.bytes));
    put_slot(slot + kSlotBytes, rdma(wr));
    put_slot(slot + 2 * kSlotBytes, inline_payload<kMaxInlineBytes>(wr));  // zero-padded
  }

  // 64-bit fetch-add (wr.operand is the addend) or compare-swap (wr.compare expected, wr.operand
  // swapped in) at remote_addr/rkey; the old value lands at local_addr/lkey (bnxt_re_build_fna_sqe,
  // bnxt_re_build_cns_sqe). Precondition: wr.width == 8 (a trap with MORI_DEVICE_CHECKS). The SGE
  // length is wr.width, so a 4-byte request that slips through fails at the NIC, never runs as 64.
  MORI_DEVICE static void post_atomic(void* wqe, const WorkRequest& wr) {
#if MORI_DEVICE_CHECKS
    if (wr.width != 8) platform::trap("bnxt: atomics are 64-bit only (kNativeAtomic32)");
#endif
    const bool cas = wr.opcode == Opcode::kCompareSwap;
    uint8_t* slot = static_cast<uint8_t*>(wqe);
    put_slot(slot, header(cas ? bnxt::BNXT_RE_WR_OPCD_ATOMIC_CS : bnxt::BNXT_RE_WR_OPCD_ATOMIC_FA,
                          wr, 0, kWqeSlots, wr.rkey, wr.remote_addr));
    const bnxt::bnxt_re_atomic operands{le64::from(wr.operand), le64::from(cas ? wr.compare : 0)};
    put_slot(slot + kSlotBytes, operands);
    put_slot(slot + 2 * kSlotBytes, sge(wr.local_addr, wr.lkey, wr.width));
  }

  // The SQ doorbell announcing WQEs [.., next_index): the producer's slot index, 3 * (next_index
  // mod W), and its epoch, which flips whenever the slot index wraps the 3W slots, that is whenever
  // the WQE index wraps W (bnxt_re_ring_sq_db with que->tail; type SQ, qid = the QP number).
  MORI_DEVICE static bnxt::bnxt_re_db_hdr sq_doorbell(const state::RdmaEndpoint& ep,
                                                      uint64_t next_index) {
    const uint32_t slot = kWqeSlots * static_cast<uint32_t>(next_index & (ep.sq_wqes - 1));
    const uint32_t epoch = (next_index & ep.sq_wqes) != 0 ? 1u : 0u;
    return bnxt::bnxt_re_init_db_hdr(bnxt::db_indx(slot, epoch), ep.qpn, 0,
                                     bnxt::BNXT_RE_QUE_TYPE_SQ);
  }

  // Makes WQEs [.., next_index) visible to the NIC. BNXT has no doorbell record, and no
  // BlueFlame-style copy of the last WQE, so only the register is written.
  MORI_DEVICE static void ring_doorbell(state::RdmaEndpoint& ep, uint64_t next_index,
                                        const void* /*last_wqe*/) {
    ring(ep.db, sq_doorbell(ep, next_index));
  }

  // Consumes the valid CQEs from ep.cq_consumed on (at most one pass), stopping after an error.
  // Returns the highest completed index: WQEs [.., completed_through) are done. On an error,
  // completed_through - 1 is the WQE that failed (whose first slot the CQE's con_indx names).
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
      const uint32_t status = bnxt::bcqe_status(flg);
      poll.completed_through =
          extend(poll.completed_through, consumer_index(req->con_indx.get(), status), ep.sq_wqes);
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
  // With BNXT_RE_COMP_MASK_UCNTX_MSN_TABLE_ENABLED the NIC finds a WQE by PSN through the MSN
  // table after the SQ's slots (que->pad; bnxt_re_fill_psns_for_msntbl): one 8-byte entry per WQE,
  // at the WQE's message number modulo the table's 2W entries (rdma-core's que->msn, which counts
  // WQEs from 0 and wraps at msn_tbl_sz), holding the WQE's first slot and its PSNs. A WQE's start
  // PSN is the sum of the packets of every WQE before it, which needs shared state: the engine
  // reserves PSNs together with the WQE index, writes the entry with post_msn and then rings the
  // doorbell.

  // Packets the WQE sends: ceil(bytes / MTU), at least 1 (bnxt_re_fill_psns_for_msntbl).
  MORI_DEVICE static uint32_t psn_packets(const state::RdmaEndpoint& ep, uint32_t bytes) {
    const uint32_t mtu = ep.provider_word[kWordMtu];
    const uint32_t packets = (bytes >> __builtin_ctz(mtu)) + ((bytes & (mtu - 1)) != 0 ? 1 : 0);
    return packets == 0 ? 1 : packets;
  }

  // Writes the MSN entry of WQE `index`: its first slot, next PSN and start PSN (24 bits each).
  MORI_DEVICE static void post_msn(state::RdmaEndpoint& ep, uint64_t index, uint32_t start_psn,
                                   uint32_t packets) {
    const uint32_t slot = kWqeSlots * static_cast<uint32_t>(index & (ep.sq_wqes - 1));
    msn_entry(ep, index).start_idx_next_psn_start_psn =
        bnxt::bnxt_re_update_msn_tbl(slot, start_psn + packets, start_psn);
  }
  // WQE `index`'s entry: the table has 2W entries (var_msn_tbl_sz of the 3W slots).
  MORI_DEVICE static bnxt::bnxt_re_msns& msn_entry(state::RdmaEndpoint& ep, uint64_t index) {
    auto* table = reinterpret_cast<bnxt::bnxt_re_msns*>(ep.sq + uint64_t{ep.sq_wqes} * kWqeBytes);
    return table[index & (2 * uint64_t{ep.sq_wqes} - 1)];
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
    msn_entry(ep, wr.index).start_idx_next_psn_start_psn = le64::from(psn_packets(ep, bytes));
  }
  MORI_DEVICE static void prepare_submit(state::RdmaEndpoint& ep, uint64_t base, uint64_t next) {
    uint32_t psn = ep.provider_state;
    for (uint64_t i = base; i < next; ++i) {
      const uint32_t packets =
          static_cast<uint32_t>(msn_entry(ep, i).start_idx_next_psn_start_psn.get());
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
  // The consumer index a CQE's con_indx (16 valid bits) stands for: the WQE count after the
  // completed (or failed) WQE, modulo some multiple of W. A success's con_indx is that count, which
  // the NIC reduces modulo the SQ's size (rdma-core bnxt_re_poll_success_scqe takes it modulo
  // max_swr, the slot count 3W in variable mode), or at least modulo 2^16. An error's is the failed
  // WQE f's first slot, 3 * (f mod W): a third of it, plus one, is f + 1 modulo W. (The division
  // of a 16-bit value by 3 compiles to a multiply and a shift; a select, not a branch, picks the
  // case.)
  MORI_DEVICE static uint32_t consumer_index(uint32_t con_indx, uint32_t status) {
    return status == bnxt::BNXT_RE_REQ_ST_OK ? con_indx : (con_indx & 0xffffu) / kWqeSlots + 1;
  }
  // The 64-bit index t of a consumer index known modulo a multiple of W: W divides both 3W and
  // 2^16, so its low bits (modulo W) are t's. And base < t <= base + W - 1, as at most W - 1 WQEs
  // are outstanding (for an error, the failed WQE was announced and is not complete), so those bits
  // choose t.
  MORI_DEVICE static uint64_t extend(uint64_t base, uint32_t consumer, uint32_t sq_wqes) {
    return base + ((consumer - base - 1) & (sq_wqes - 1)) + 1;
  }
};
static_assert(NicProvider<Bnxt>);
static_assert(Bnxt::sq_bytes(16) == 16 * 48 + 32 * 8, "16 WQEs: 48 slots, then 32 MSN entries");

}  // namespace mori::provider
