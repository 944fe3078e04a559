// The emulated Thor2's WQE and CQE codec for what rdma-core 44's libbnxt_re writes. The host
// backend's BNXT codec (src/backend/host/softnic/bnxt_codec.cpp) cannot be reused: it reads what
// mori's GPU provider writes, and libbnxt_re 44 differs in every part it checks:
//   - WQEs are static: each takes 8 slots (128 bytes) of the ring whatever its ws field says
//     (verbs.c bnxt_re_post_send: slots = 8 in BNXT_RE_WQE_MODE_STATIC), where the codec expects
//     3-slot WQEs back to back;
//   - the doorbell (db.c bnxt_re_ring_sq_db) is {indx = tail / 8, the WQE index modulo the ring,
//     typ_qid} with no valid bit and no epoch, which the codec requires;
//   - there is no MSN table: libbnxt_re fills a PSN-search entry per WQE (bnxt_re_fill_psns)
//     for the firmware's retransmissions, which this NIC does not do;
//   - a fetch-add's addend is in the atomic slot's cmp_dt (rdma-core 44 bnxt_re_build_fna_sqe),
//     which this NIC reads so that Debian's perftest runs; the hardware reads swp_dt, where
//     rdma-core 61773a85f (v47) moved it and where mori's provider and the codec put it;
//   - the CQE's qp_handle must be the library's QP pointer (create_qp's qp_handle), which
//     bnxt_re_poll_one dereferences; the codec writes the QP number.
// What is shared: the byte layouts (mori/provider/bnxt_defs.hpp, from the same bnxt_re-abi.h).
// The WQE bytes are untrusted: every field is checked, nothing is read past the 128-byte WQE.
#include "bnxt_static_codec.hpp"

#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>

#include "backend/host/softnic/bnxt_status.hpp"
#include "mori/provider/bnxt_defs.hpp"

namespace mori::emulated_kernel::bnxt {
namespace {

using namespace provider::bnxt;
using provider::Opcode;
using provider::WorkRequest;
using softnic::CompletionStatus;

constexpr uint32_t kSlot = 16, kWqeSlots = 8, kWqeBytes = kSlot * kWqeSlots;
constexpr uint32_t kHdrSlots = 2;  // the base header and the RDMA / atomic extension
constexpr uint32_t kCqeBytes = 32;
constexpr uint32_t kKnownFlags = BNXT_RE_WR_FLAGS_INLINE | BNXT_RE_WR_FLAGS_SE |
                                 BNXT_RE_WR_FLAGS_UC_FENCE | BNXT_RE_WR_FLAGS_RD_FENCE |
                                 BNXT_RE_WR_FLAGS_SIGNALED;

bool reject(std::string* why, const std::string& text) {
  if (why) *why = text;
  return false;
}

template <typename T>
T slot(const uint8_t* wqe, uint32_t index) {
  static_assert(sizeof(T) == kSlot);
  T t;
  std::memcpy(&t, wqe + index * kSlot, sizeof(t));
  return t;
}

// The doorbell's index is the producer's WQE index modulo the ring (sq_wqes, a power of two); the
// WQEs announced are those between the NIC's count and it. A full ring cannot be announced: the
// library keeps BNXT_RE_FULL_FLAG_DELTA WQEs free (bnxt_re_is_que_full).
uint64_t announced(const state::RdmaEndpoint& ep, uint64_t last) {
  const uint64_t value = std::atomic_ref<uint64_t>(*ep.db).load(std::memory_order_acquire);
  if (value == 0) return last;
  const uint32_t qid = static_cast<uint32_t>(value >> 32) & 0xfffff;
  if (qid != ep.qpn) return last;
  const uint64_t index = value & 0xfffff & (ep.sq_wqes - 1);
  return last + ((index - last) & (ep.sq_wqes - 1));
}

bool decode(const void* entry, uint64_t index, WorkRequest* wr, std::string* why) {
  const auto* wqe = static_cast<const uint8_t*>(entry);
  const bnxt_re_bsqe hdr = slot<bnxt_re_bsqe>(wqe, 0);
  const uint32_t opcode = bsqe_opcode(hdr), flags = bsqe_flags(hdr), ws = bsqe_slots(hdr);
  *wr = WorkRequest{};
  wr->index = index;
  wr->signaled = flags & BNXT_RE_WR_FLAGS_SIGNALED;
  wr->fence = flags & (BNXT_RE_WR_FLAGS_UC_FENCE | BNXT_RE_WR_FLAGS_RD_FENCE);
  if (ws < kHdrSlots || ws > kWqeSlots)
    return reject(why, "wqe size field " + std::to_string(ws) + " outside 2..8 slots");
  if (flags & ~kKnownFlags) return reject(why, "reserved flag bits set");
  const bool is_inline = flags & BNXT_RE_WR_FLAGS_INLINE;
  const uint64_t length = hdr.lhdr.qkey_len.get() & 0xffffffff;
  switch (opcode) {
    case BNXT_RE_WR_OPCD_RDMA_WRITE:
    case BNXT_RE_WR_OPCD_RDMA_READ: {
      const bnxt_re_rdma rdma = slot<bnxt_re_rdma>(wqe, 1);
      wr->remote_addr = rdma.rva.get();
      wr->rkey = rdma.rkey.get();
      wr->bytes = static_cast<uint32_t>(length);
      if (is_inline) {
        if (opcode != BNXT_RE_WR_OPCD_RDMA_WRITE) return reject(why, "inline read");
        if (length > uint64_t{ws - kHdrSlots} * kSlot)
          return reject(why, "inline length beyond the WQE's ws");
        wr->opcode = Opcode::kWriteInline;
        wr->inline_data = wqe + kHdrSlots * kSlot;
        return true;
      }
      // bnxt_re_build_sge: one slot per SGE after the extension. The NIC moves one range.
      if (ws != kHdrSlots + 1) return reject(why, "not one SGE (" + std::to_string(ws) + " slots)");
      const bnxt_re_sge sge = slot<bnxt_re_sge>(wqe, kHdrSlots);
      if (sge.length.get() != length) return reject(why, "SGE length differs from the message's");
      wr->opcode = opcode == BNXT_RE_WR_OPCD_RDMA_READ ? Opcode::kRead : Opcode::kWrite;
      wr->local_addr = sge.pa.get();
      wr->lkey = sge.lkey.get();
      return true;
    }
    case BNXT_RE_WR_OPCD_ATOMIC_CS:
    case BNXT_RE_WR_OPCD_ATOMIC_FA: {
      const bool cas = opcode == BNXT_RE_WR_OPCD_ATOMIC_CS;
      if (ws != kHdrSlots + 1) return reject(why, "atomic without exactly one SGE");
      const bnxt_re_atomic operands = slot<bnxt_re_atomic>(wqe, 1);
      const bnxt_re_sge sge = slot<bnxt_re_sge>(wqe, kHdrSlots);
      if (sge.length.get() != 8) return reject(why, "atomic SGE length not 8");
      wr->opcode = cas ? Opcode::kCompareSwap : Opcode::kFetchAdd;
      wr->width = 8;
      wr->rkey = hdr.key_immd.get();
      wr->remote_addr = hdr.lhdr.rva.get();
      wr->operand = cas ? operands.swp_dt.get() : operands.cmp_dt.get();
      wr->compare = cas ? operands.cmp_dt.get() : 0;
      wr->local_addr = sge.pa.get();
      wr->lkey = sge.lkey.get();
      return true;
    }
    default:
      return reject(why, "opcode " + std::to_string(opcode) + " not executed");
  }
}

// A requester CQE where bnxt_re_poll_one looks: entry n of the ring, its phase the start period
// (1, from create_cq's response) flipped on every pass (bnxt_re_change_cq_phase), its con_indx the
// WQE index after the completed one (bnxt_re_poll_success_scqe masks it with max_swr - 1 and keeps
// completing unsignalled WQEs until its shadow index reaches it), its qp_handle the library's.
// The phase word last, with release ordering: a poller that sees the phase sees the whole CQE.
void complete(state::RdmaEndpoint& ep, uint64_t* produced, uint64_t index, const WorkRequest&,
              CompletionStatus status) {
  const uint64_t n = *produced;
  uint8_t* cqe = ep.cq + (n & (ep.cq_entries - 1)) * kCqeBytes;
  bnxt_re_req_cqe req{};
  req.qp_handle = provider::le64::from(uint64_t{ep.provider_word[kWordQpHandleLo]} |
                                       uint64_t{ep.provider_word[kWordQpHandleHi]} << 32);
  req.con_indx = provider::le32::from(static_cast<uint32_t>((index + 1) & 0xffff));
  std::memcpy(cqe, &req, sizeof(req));
  auto* base = reinterpret_cast<bnxt_re_bcqe*>(cqe + sizeof(req));
  base->qphi_rwrid = provider::le32::from(0);
  const uint32_t flg = bcqe_flg_st_typ_ph(softnic::bnxt_status(status), BNXT_RE_WC_TYPE_SEND,
                                          cq_phase(n, ep.cq_entries));
  std::atomic_ref<uint32_t>(base->flg_st_typ_ph.raw).store(flg, std::memory_order_release);
  *produced = n + 1;
}

}  // namespace

const softnic::Codec& static_codec() {
  static const softnic::Codec codec{"bnxt_re (rdma-core 44, static WQEs)",
                                    kWqeBytes,
                                    kCqeBytes,
                                    announced,
                                    decode,
                                    complete,
                                    false,
                                    nullptr};
  return codec;
}

}  // namespace mori::emulated_kernel::bnxt
