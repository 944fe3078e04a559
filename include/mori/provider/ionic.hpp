// The Ionic provider (AMD Pensando Pollara/"AINIC" RDMA NICs): writes one work request into a
// 64-byte SQ entry, rings the SQ doorbell, and parses send completions. No state, no concurrency:
// the IBGDA engine (transport/rdma.hpp) owns both. Layouts and their sources: ionic_defs.hpp.
//
// How rdma-core builds a send (providers/ionic/ionic_verbs.c, ionic_v1_prep_rdma / _atomic /
// _common / _base, ionic_post_send_common) and what this provider does the same or differently:
//  - Opcodes: IONIC_OP(version, ...) picks ionic_v2_op when the firmware reports RDMA version >= 2,
//    as the Pollara generation does; rocSHMEM's and ROCm mori's GPU paths for it post
//    IONIC_V2_OP_* with the ionic_v2_atomic_bdy. mori targets that generation only.
//  - Entry size: ionic_v1_send_wqe_min_size(max_sge <= 2, max_data <= 32, no express doorbell) is
//    64 bytes, so the runtime must create the QP with those caps and without IONIC_CMB_EXPDB.
//  - base.wqe_idx: rdma-core writes its wrapped producer index; mori writes the 64-bit SQ index,
//    as rocSHMEM writes its unwrapped position. Its low 16 bits (all that an NPG completion
//    echoes) equal the wrapped index for every ring of <= 65536 entries.
//  - Every byte of the entry is written (rdma-core memsets it first, ionic_prep_sq_wqe), so no
//    byte of the previous pass survives.
//  - 32-bit atomics: the atomic body has no length; the NIC does 8-byte atomics only
//    (kNativeAtomic32 = false). The transport (transport/rdma.hpp) emulates 4-byte operations on
//    the aligned 8 bytes around them (a compare-swap loop); post_atomic traps on width 4 rather
//    than widen silently.
//
// Engine obligations for this provider:
//  - WorkRequest::sq_wqes must carry the SQ depth (ep.sq_wqes): the COLOR flag of every entry is
//    its pass parity (ionic_color), which the work request does not otherwise tell. Checked on the
//    host backend and in debug GPU builds.
//  - At most sq_wqes - 1 entries outstanding: the doorbell carries the position wrapped to the
//    ring, so a full ring would read as empty (rdma-core's ionic_queue keeps the same hole).
//  - Only remote operations (those here) on an engine-driven QP, with indices starting at 0 when
//    the QP is created: a SEND_MSN completion counts messages, and it names WQE indices only
//    while every entry is one message.
//  - ep.db = &dbpage[ctx->sq_qtype] (ionic.c, ionic_post_send_common), ep.qpn the QP's qpid;
//    ep.cq_dbr, when not null, is the 64-bit CQ doorbell &dbpage[ctx->cq_qtype] (as in the BNXT
//    provider; null on the software NIC, so that a CQ doorbell never overwrites the SQ's); ep.cqn
//    is the send CQ's cqid. ep.dbr and provider_word are unused.
//  - The CQ ring is zeroed at creation (color 0 = empty on pass 0) and serves this QP's SQ only.
//  - Entries written by other threads are ordered before the ringer's doorbell by the engine;
//    ring_doorbell's release fence orders this thread's own writes.
#pragma once

#include <cstdint>

#include "mori/platform.hpp"
#include "mori/provider/concepts.hpp"
#include "mori/provider/inline_data.hpp"
#include "mori/provider/ionic_defs.hpp"
#include "mori/provider/queue_memory.hpp"
#include "mori/provider/work_request.hpp"
#include "mori/state/rdma_endpoint.hpp"

namespace mori::provider {

struct Ionic : IonicGeometry {
  static constexpr const char* kName = "ionic";
  static constexpr bool kNativeAtomic32 = false;
  // Bytes of an SQ of `wqes` entries, as the runtime allocates it.
  static constexpr uint64_t sq_bytes(uint32_t wqes) { return uint64_t{wqes} * (kWqeBytes); }
  // A new CQ ring as the driver hands it over: zeroed (for the software NIC, tests and benches).
  static void init_cq(uint8_t* cq, uint32_t entries) { zero_cq(cq, entries, kCqeBytes); }

  // The old value of a fetching atomic from its landing slot (queue_memory.hpp).
  MORI_DEVICE static constexpr uint64_t atomic_result(uint64_t raw, uint8_t width) {
    return atomic_result_8(raw, width);
  }

  // RDMA write (IsRead = false) or read of wr.bytes between wr.local_addr/lkey and
  // wr.remote_addr/rkey, one SGE (none when bytes == 0).
  template <bool IsRead>
  MORI_DEVICE static void post_read_write(void* wqe, const WorkRequest& wr) {
    constexpr uint8_t kOp = IsRead ? IONIC_V2_OP_RDMA_READ : IONIC_V2_OP_RDMA_WRITE;
    ionic_v1_wqe w = header(wr, kOp, wr.bytes ? 1 : 0, 0);
    set_rdma(w, wr);
    if (wr.bytes)
      w.common.pld.sgl[0] = {be64::from(wr.local_addr), be32::from(wr.bytes), be32::from(wr.lkey)};
    publish(wqe, w);
  }

  // RDMA write of wr.bytes (<= kMaxInlineBytes) from wr.inline_data, carried in the entry.
  MORI_DEVICE static void post_inline_write(void* wqe, const WorkRequest& wr) {
#if MORI_DEVICE_CHECKS
    if (wr.bytes > kMaxInlineBytes) platform::trap("ionic: inline write beyond 32 bytes");
#endif
    ionic_v1_wqe w = header(wr, IONIC_V2_OP_RDMA_WRITE, 0, IONIC_V1_FLAG_INL);
    set_rdma(w, wr);
    // At most kMaxInlineBytes, so that a release build never writes past the slot; the length
    // field keeps wr.bytes, which the software NIC rejects as garbage.
    const InlineWords<kMaxInlineBytes> data = inline_payload<kMaxInlineBytes>(wr);
    __builtin_memcpy(w.common.pld.data, data.word, kMaxInlineBytes);
    publish(wqe, w);
  }

  // 8-byte fetch-add (wr.operand is the addend) or compare-swap (wr.compare expected, wr.operand
  // swapped in) at wr.remote_addr; the old value lands at wr.local_addr/lkey.
  MORI_DEVICE static void post_atomic(void* wqe, const WorkRequest& wr) {
    if (wr.width != 8) platform::trap("ionic: the NIC has 8-byte atomics only (kNativeAtomic32)");
    const bool cas = wr.opcode == Opcode::kCompareSwap;
    ionic_v1_wqe w = header(wr, cas ? IONIC_V2_OP_ATOMIC_CS : IONIC_V2_OP_ATOMIC_FA, 1, 0);
    ionic_v2_atomic_bdy& a = w.atomic_v2;
    a.remote_va_high = be32::from(static_cast<uint32_t>(wr.remote_addr >> 32));
    a.remote_va_low = be32::from(static_cast<uint32_t>(wr.remote_addr));
    a.remote_rkey = be32::from(wr.rkey);
    a.swap_add_high = be32::from(static_cast<uint32_t>(wr.operand >> 32));
    a.swap_add_low = be32::from(static_cast<uint32_t>(wr.operand));
    if (cas) {
      a.compare_high = be32::from(static_cast<uint32_t>(wr.compare >> 32));
      a.compare_low = be32::from(static_cast<uint32_t>(wr.compare));
    }
    a.lkey = be32::from(wr.lkey);
    a.local_va = be64::from(wr.local_addr);
    publish(wqe, w);
  }

  // Announces entries [.., next_index) with one 64-bit write of ionic_dbell_val to the SQ's
  // register. `last_wqe` is unused: Ionic has no doorbell record and no BlueFlame copy.
  MORI_DEVICE static void ring_doorbell(state::RdmaEndpoint& ep, uint64_t next_index,
                                        const void* last_wqe) {
    (void)last_wqe;
    // Release: rdma-core's udma_to_device_barrier before ionic_dbell_ring. The NIC reads entries
    // only after the doorbell, so the entries this thread wrote must reach memory first.
    platform::atomic_store<platform::MemOrder::Release, platform::MemScope::System>(
        ep.db, le64::from(ionic_dbell_val(ep.qpn, next_index, ep.sq_wqes)).raw);
  }

  // Consumes every new CQE (at most a ring's worth) up to and including the first error, advances
  // ep.cq_consumed, and reports WQEs [.., completed_through) complete; advanced = 1 when that is
  // beyond ep.completed. On error the QP has failed and completed_through - 1 is the failing WQE,
  // except for a flush or a CQE that names no WQE, which leave it where the earlier CQEs put it.
  // 64-bit indices: a 24-bit msn or a 16-bit wqe_idx is extended as the nearest index at or after
  // ep.completed, which the engine's bound on outstanding WQEs makes exact. The caller holds the
  // CQ.
  MORI_DEVICE static CqPoll poll_cq(state::RdmaEndpoint& ep) {
    using platform::MemOrder, platform::MemScope;
    const uint64_t start =
        platform::atomic_load<MemOrder::Relaxed, MemScope::System>(&ep.cq_consumed);
    const uint64_t before =
        platform::atomic_load<MemOrder::Relaxed, MemScope::System>(&ep.completed);
    CqPoll out{};
    out.completed_through = before;
    out.status_text = ionic_status_str(IONIC_STS_OK);
    uint64_t pos = start;
    for (uint32_t n = 0; n < ep.cq_entries && !out.error; ++n, ++pos) {
      auto* slot = reinterpret_cast<ionic_v1_cqe*>(ep.cq + (pos & (ep.cq_entries - 1)) * kCqeBytes);
      // Acquire: the NIC writes qid_type_flags last; the rest of the CQE is read after it
      // (udma_from_device_barrier in ionic_next_cqe).
      const uint32_t qtf = be32{platform::atomic_load<MemOrder::Acquire, MemScope::System>(
                                    &slot->qid_type_flags.raw)}
                               .get();
      if (ionic_v1_cqe_color(qtf) != ionic_color(pos, ep.cq_entries)) break;
      read_cqe(ep, *slot, qtf, out);
    }
    out.advanced = out.completed_through > before;
    if (pos != start) {
      // Release (here and in the CQ doorbell): our reads of the consumed slots come before their
      // reuse, by a software NIC that reads cq_consumed or a NIC told through the doorbell.
      platform::atomic_store<MemOrder::Release, MemScope::System>(&ep.cq_consumed, pos);
      ring_cq_doorbell(ep, pos);
    }
    return out;
  }

  // The engine's hooks (provider/concepts.hpp): no per-WQE bookkeeping.
  MORI_DEVICE static void note_wqe(state::RdmaEndpoint&, const WorkRequest&) {}
  MORI_DEVICE static void prepare_submit(state::RdmaEndpoint&, uint64_t, uint64_t) {}

 private:
  // The entry's header: the SQ index, opcode, SGE count and flags (fence, signal, the pass color).
  MORI_DEVICE static ionic_v1_wqe header(const WorkRequest& wr, uint8_t op, uint8_t num_sge,
                                         uint16_t flags) {
    const uint32_t sq_wqes = wr.sq_wqes;  // see "Engine obligations" above
#if MORI_DEVICE_CHECKS
    if (sq_wqes == 0 || (sq_wqes & (sq_wqes - 1)))
      platform::trap("ionic: WorkRequest::sq_wqes must carry the SQ depth (ep.sq_wqes)");
#endif
    flags |= (wr.fence ? IONIC_V1_FLAG_FENCE : 0) | (wr.signaled ? IONIC_V1_FLAG_SIG : 0) |
             (ionic_color(wr.index, sq_wqes) ? IONIC_V1_FLAG_COLOR : 0);
    ionic_v1_wqe w{};
    w.base = {le64::from(wr.index), op, num_sge, be16::from(flags), be32::from(0)};
    return w;
  }

  MORI_DEVICE static void set_rdma(ionic_v1_wqe& w, const WorkRequest& wr) {
    w.common.rdma.remote_va_high = be32::from(static_cast<uint32_t>(wr.remote_addr >> 32));
    w.common.rdma.remote_va_low = be32::from(static_cast<uint32_t>(wr.remote_addr));
    w.common.rdma.remote_rkey = be32::from(wr.rkey);
    w.common.length = be32::from(wr.bytes);
  }

  // The composed entry (queue_memory.hpp). rocSHMEM additionally stores base.flags last with a
  // release atomic; rdma-core orders an entry only by the barrier before the doorbell, and mori
  // follows rdma-core.
  MORI_DEVICE static void publish(void* wqe, const ionic_v1_wqe& w) { store_wqe64(wqe, w); }

  // One valid CQE into `out`: progress, or the first error (ionic_comp_msn / ionic_comp_npg).
  MORI_DEVICE static void read_cqe(const state::RdmaEndpoint& ep, const ionic_v1_cqe& cqe,
                                   uint32_t qtf, CqPoll& out) {
    const uint8_t type = ionic_v1_cqe_qtf_type(qtf);
    const uint64_t ref = out.completed_through;
    uint64_t through = ref;
    uint32_t status = ionic_v1_cqe_error(qtf) ? cqe.status_length.get() : IONIC_STS_OK;
    if (ionic_v1_cqe_qtf_qid(qtf) != (ep.qpn & IONIC_QID_MASK) ||
        (type != IONIC_V1_CQE_TYPE_SEND_MSN && type != IONIC_V1_CQE_TYPE_SEND_NPG)) {
      status = IONIC_MORI_STS_UNEXPECTED_CQE;
    } else if (type == IONIC_V1_CQE_TYPE_SEND_MSN) {
      // Every message before msg_msn is complete; on error, msg_msn - 1 failed.
      through = ref + ((cqe.send.msg_msn.get() - ref) & IONIC_V1_CQE_MSN_MASK);
    } else if (status != IONIC_STS_OK && status != IONIC_STS_WQE_FLUSHED_ERR) {
      // An NPG error names its WQE. A flush names none ("Flush cqe does not consume a wqe"), and
      // a successful NPG completes a local operation, which the engine never posts.
      through =
          1 + ref + ((cqe.send.npg_wqe_idx_timestamp.get() - ref) & IONIC_V1_CQE_WQE_IDX_MASK);
    }
    // Read after the CQE's acquire, `reserved` covers every WQE the NIC can have completed.
    if (through > platform::atomic_load<platform::MemOrder::Relaxed, platform::MemScope::System>(
                      &ep.reserved)) {
      status = IONIC_MORI_STS_UNPOSTED_WQE;
      through = ref;
    }
    if (status != IONIC_STS_OK) {
      out.error = 1;
      out.status = status;
      out.status_text = ionic_status_str(status);
    }
    out.completed_through = through;
  }

  // Tells the NIC the CQ slots before `consumed` are free (ionic_reserve_sync_cq), or it reports
  // a CQ overflow; once per poll that consumed something.
  MORI_DEVICE static void ring_cq_doorbell(state::RdmaEndpoint& ep, uint64_t consumed) {
    if (ep.cq_dbr == nullptr) return;
    platform::atomic_store<platform::MemOrder::Release, platform::MemScope::System>(
        reinterpret_cast<uint64_t*>(ep.cq_dbr),
        le64::from(ionic_dbell_val(ep.cqn, consumed, ep.cq_entries)).raw);
  }
};
static_assert(NicProvider<Ionic>);

}  // namespace mori::provider
