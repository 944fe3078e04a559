// The software NIC's BNXT codec: reads the SQ doorbell, parses send WQEs back into work requests,
// checks their MSN entries and writes requester CQEs as a bnxt_re NIC in variable WQE mode (Thor2,
// BNXT_RE P7) does. Layouts: include/mori/provider/bnxt_defs.hpp; the queue's behaviour is taken
// from rdma-core's providers/bnxt_re (and the kernel's bnxt_re where rdma-core is silent), not from
// provider::Bnxt, which is what this codec checks:
//   - the SQ is a ring of 16-byte slots; a WQE fills the slots its header's ws field names, and
//     the doorbell carries the producer's slot index and an epoch that flips at every wrap
//     (verbs.c bnxt_re_alloc_queues: que->dbtail = &que->tail; memory.h bnxt_re_incr_tail);
//   - the MSN table follows the slots, roundup_pow_of_two(slots) / 2 entries indexed by a message
//     count from 0, each naming its WQE's first slot (bnxt_re_alloc_queues, bnxt_re_fill_psns_for_
//     msntbl);
//   - a success CQE's con_indx counts WQEs, modulo the SQ's size in slots
//     (bnxt_re_poll_success_scqe reduces it modulo max_swr, the slot count); an error CQE's is the
//     failed WQE's first slot (the kernel's bnxt_qplib_get_cqe_sq_cons).
// The model's one restriction: every WQE spans exactly 3 slots (SEND_SGE_MIN_SLOTS: the header,
// the RDMA or atomic extension, and one SGE or up to 16 bytes of inline data), the only shape the
// runtime's QPs carry; a WQE whose ws says otherwise is refused before anything after it is read.
// So the NIC's slot cursor after n WQEs is 3n modulo the 3W slots of a W-WQE ring, WQE n starts at
// slot 3 (n mod W), and no WQE crosses the ring's end: the core's entry of Codec::wqe_bytes = 48
// bytes at (n mod W) is exactly that WQE.
//
// The WQE bytes are untrusted: every field is checked before it is used, and nothing is read
// outside the WQE's 3 slots.
#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <string>

#include "backend/host/softnic/bnxt_status.hpp"
#include "backend/host/softnic/codec.hpp"
#include "mori/provider/bnxt.hpp"

namespace mori::softnic {

namespace {

using namespace provider::bnxt;
using provider::Bnxt;
using provider::Opcode;
using provider::WorkRequest;

// The slot, and the one WQE size this NIC takes (see the top).
constexpr uint32_t kSlotBytes = sizeof(bnxt_re_sge);
constexpr uint32_t kWqeSlots = SEND_SGE_MIN_SLOTS;
constexpr uint32_t kInlineBytes = (kWqeSlots - BNXT_RE_SQE_HDR_SLOTS) * kSlotBytes;
static_assert(kWqeSlots * kSlotBytes == Bnxt::kWqeBytes && kInlineBytes == Bnxt::kMaxInlineBytes,
              "the software NIC and the provider agree on the WQE's size");

// The SQ's size in slots: the runtime creates a W-WQE ring of 3-slot WQEs (sq_slots of
// bnxt_re_qp_req; Bnxt::sq_bytes). 64-bit: the fuzzers hand in any depth.
uint64_t sq_slots(const state::RdmaEndpoint& ep) { return uint64_t{kWqeSlots} * ep.sq_wqes; }

// Flag bits a WQE may carry; the rest of the byte is reserved.
constexpr uint32_t kKnownFlags = BNXT_RE_WR_FLAGS_INLINE | BNXT_RE_WR_FLAGS_SE |
                                 BNXT_RE_WR_FLAGS_UC_FENCE | BNXT_RE_WR_FLAGS_RD_FENCE |
                                 BNXT_RE_WR_FLAGS_SIGNALED;
// InfiniBand's largest message (IBTA: 2^31 bytes).
constexpr uint64_t kMaxMessageBytes = uint64_t{1} << 31;

// Says why a WQE is refused; printf-checked at every call.
__attribute__((format(printf, 2, 3))) bool reject(std::string* why, const char* format, ...) {
  char text[160];
  va_list args;
  va_start(args, format);
  std::vsnprintf(text, sizeof(text), format, args);
  va_end(args);
  if (why) *why = text;
  return false;
}

template <typename Segment>
Segment slot(const uint8_t* wqe, uint32_t index) {
  static_assert(sizeof(Segment) == kSlotBytes, "a WQE segment fills one slot");
  Segment s;
  std::memcpy(&s, wqe + index * kSlotBytes, sizeof(s));  // the bytes may be unaligned
  return s;
}

// The SQ doorbell carries the producer's slot index (the slot after the last announced WQE) and
// the parity of its passes over the 3W slots, so it names the producer modulo 2 * 3W slots. The NIC
// has consumed up to slot 3 * last (modulo the same period), and the announced WQEs are the 3-slot
// WQEs in between: at most a ring's worth (the engine never reserves more than W past the
// completed index, which trails `last`). A value that is not this QP's valid SQ doorbell, names a
// slot past the ring or inside a WQE, or lies outside that window (older than `last`) announces
// nothing new.
uint64_t announced(const state::RdmaEndpoint& ep, uint64_t last) {
  if (ep.db == nullptr) return last;
  const uint64_t value = std::atomic_ref<uint64_t>(*ep.db).load(std::memory_order_acquire);
  const bnxt_re_db_hdr hdr = db_hdr_from_value(value);
  const uint64_t slots = sq_slots(ep), producer = db_index(hdr);
  if (!db_valid(hdr) || db_type(hdr) != BNXT_RE_QUE_TYPE_SQ || db_qid(hdr) != ep.qpn ||
      producer >= slots || producer % kWqeSlots != 0)
    return last;
  const uint64_t period = 2 * slots;
  const uint64_t position = uint64_t{db_epoch(hdr)} * slots + producer;
  const uint64_t consumed = kWqeSlots * (last % (uint64_t{2} * ep.sq_wqes));  // 3 last mod period
  const uint64_t ahead = (position + period - consumed) % period;             // slots
  return ahead <= slots ? last + ahead / kWqeSlots : last;
}

bool decode_sge(const bnxt_re_sge& sge, uint64_t length, WorkRequest* wr, std::string* why) {
  if (length > kMaxMessageBytes)
    return reject(why, "message length %" PRIu64 " beyond 2^31", length);
  if (sge.length.get() != length)
    return reject(why, "SGE length %u differs from the message length %" PRIu64, sge.length.get(),
                  length);
  wr->local_addr = sge.pa.get();
  wr->lkey = sge.lkey.get();
  wr->bytes = static_cast<uint32_t>(length);
  return true;
}

bool decode(const void* entry, uint64_t index, WorkRequest* wr, std::string* why) {
  const auto* wqe = static_cast<const uint8_t*>(entry);
  const bnxt_re_bsqe hdr = slot<bnxt_re_bsqe>(wqe, 0);
  const uint32_t opcode = bsqe_opcode(hdr), flags = bsqe_flags(hdr), slots = bsqe_slots(hdr);
  *wr = WorkRequest{};
  wr->index = index;
  wr->signaled = (flags & BNXT_RE_WR_FLAGS_SIGNALED) != 0;
  wr->fence = (flags & (BNXT_RE_WR_FLAGS_UC_FENCE | BNXT_RE_WR_FLAGS_RD_FENCE)) != 0;

  // ws is where the NIC finds the next WQE: anything but this QP's 3 slots is refused here, before
  // a byte past the header is read (and so no WQE ever runs past the ring's end).
  if (slots != kWqeSlots)
    return reject(why, "wqe size field %u, not the %u slots of this QP's WQEs", slots, kWqeSlots);
  if ((flags & ~kKnownFlags) != 0)
    return reject(why, "reserved flag bits 0x%02x set", flags & ~kKnownFlags);
  const bool is_inline = (flags & BNXT_RE_WR_FLAGS_INLINE) != 0;
  if (is_inline && opcode != BNXT_RE_WR_OPCD_RDMA_WRITE)
    return reject(why, "inline flag on opcode 0x%02x", opcode);

  switch (opcode) {
    case BNXT_RE_WR_OPCD_RDMA_WRITE:
    case BNXT_RE_WR_OPCD_RDMA_READ: {
      const bnxt_re_rdma rdma = slot<bnxt_re_rdma>(wqe, 1);
      wr->remote_addr = rdma.rva.get();
      wr->rkey = rdma.rkey.get();
      const uint64_t length = hdr.lhdr.qkey_len.get();
      if (is_inline) {
        wr->opcode = Opcode::kWriteInline;
        // The data fills slots from the third on, rounded up to a whole slot (bnxt_re_put_inline,
        // bnxt_re_required_slots): at most the one slot a 3-slot WQE has (an empty write leaves it
        // as padding).
        if (length > kInlineBytes)
          return reject(why, "inline length %" PRIu64 " beyond the WQE's %u bytes", length,
                        kInlineBytes);
        wr->bytes = static_cast<uint32_t>(length);
        wr->inline_data = wqe + BNXT_RE_SQE_HDR_SLOTS * kSlotBytes;
        return true;
      }
      // The slots after the header hold the SGEs (bnxt_re_put_tx_sge): 3 slots, one SGE.
      wr->opcode = opcode == BNXT_RE_WR_OPCD_RDMA_READ ? Opcode::kRead : Opcode::kWrite;
      return decode_sge(slot<bnxt_re_sge>(wqe, 2), length, wr, why);
    }
    case BNXT_RE_WR_OPCD_ATOMIC_CS:
    case BNXT_RE_WR_OPCD_ATOMIC_FA: {
      const bool cas = opcode == BNXT_RE_WR_OPCD_ATOMIC_CS;
      wr->opcode = cas ? Opcode::kCompareSwap : Opcode::kFetchAdd;
      const bnxt_re_atomic operands = slot<bnxt_re_atomic>(wqe, 1);
      const bnxt_re_sge sge = slot<bnxt_re_sge>(wqe, 2);
      if (sge.length.get() == 4) return reject(why, "32-bit atomic (BNXT atomics are 64-bit)");
      if (sge.length.get() != 8)
        return reject(why, "atomic SGE length %u (must be 8)", sge.length.get());
      wr->width = 8;
      wr->rkey = hdr.key_immd.get();
      wr->remote_addr = hdr.lhdr.rva.get();
      wr->operand = operands.swp_dt.get();
      wr->compare = cas ? operands.cmp_dt.get() : 0;
      wr->local_addr = sge.pa.get();
      wr->lkey = sge.lkey.get();
      return true;
    }
    default:
      return reject(why, "unknown opcode 0x%02x", opcode);
  }
}

// The MSN entry of WQE `index` is the table's entry at the WQE's message number, counted from 0 at
// the QP's creation and wrapping at the table's roundup_pow_of_two(slots) / 2 entries (rdma-core
// que->msn and msn_tbl_sz, bnxt_re_alloc_queues and bnxt_re_fill_psns_for_msntbl; the table starts
// right after the SQ's slots, que->pad). It must give the WQE's first slot as start_idx (the NIC's
// slot cursor, 3 * (index mod W)), the start PSN the NIC's own count has reached (from the
// QP's initial send PSN) and the next PSN after the WQE's packets: ceil(bytes / path MTU), at least
// one, 8 bytes for an atomic. The hardware resolves retransmissions through these entries, so a
// wrong PSN there would resend the wrong WQE.
bool check_sequence(const state::RdmaEndpoint& ep, uint64_t index, const WorkRequest& wr,
                    uint32_t* next_psn, std::string* why) {
  const uint64_t slots = sq_slots(ep);
  const uint64_t msn = index % var_msn_tbl_sz(slots);
  const uint32_t first_slot = static_cast<uint32_t>(kWqeSlots * (index % ep.sq_wqes));
  const auto* table = reinterpret_cast<const bnxt_re_msns*>(ep.sq + slots * kSlotBytes);
  const uint64_t entry = table[msn].start_idx_next_psn_start_psn.get();
  const uint32_t start = entry & BNXT_RE_SQ_MSN_SEARCH_START_PSN_MASK;
  const uint32_t next = (entry & BNXT_RE_SQ_MSN_SEARCH_NEXT_PSN_MASK) >> 24;
  const uint32_t idx = static_cast<uint32_t>(entry >> BNXT_RE_SQ_MSN_SEARCH_START_IDX_SHIFT);
  const uint64_t mtu = ep.provider_word[Bnxt::kWordMtu];
  const bool atomic = wr.opcode == Opcode::kFetchAdd || wr.opcode == Opcode::kCompareSwap;
  const uint64_t bytes = atomic ? 8 : wr.bytes;
  const uint64_t packets = mtu ? std::max<uint64_t>(1, (bytes + mtu - 1) / mtu) : 1;
  const uint32_t want_next = static_cast<uint32_t>((*next_psn + packets) & 0xFFFFFF);
  if (idx != first_slot || start != *next_psn || next != want_next)
    return reject(why,
                  "MSN entry %" PRIu64
                  " {start_idx %u, start_psn 0x%06x, next_psn 0x%06x}, expected {%u, 0x%06x, "
                  "0x%06x} (%" PRIu64 " packets)",
                  msn, idx, start, next, first_slot, *next_psn, want_next, packets);
  *next_psn = want_next;
  return true;
}

// A requester CQE as the NIC writes it. Its con_indx (16 valid bits): on success the WQE count
// after this WQE, modulo the SQ's size in slots (rdma-core bnxt_re_poll_success_scqe and the
// kernel's bnxt_qplib_cq_process_req reduce it so, max_swr / max_sw_wqe being the slot count in
// variable mode); on any error, flushes included, the failed WQE's first slot (the kernel's
// bnxt_qplib_get_cqe_sq_cons looks the slot up among the outstanding WQEs). The phase word goes
// last, with release ordering, so a poller that sees the new phase sees the whole CQE. The
// qp_handle the hardware echoes (the driver's create_qp cookie) is stood in for by the QP number.
void complete(state::RdmaEndpoint& ep, uint64_t* cq_produced, uint64_t index,
              const WorkRequest& /*wr*/, CompletionStatus status) {
  const uint64_t n = *cq_produced;
  uint8_t* cqe = ep.cq + (n & (ep.cq_entries - 1)) * Bnxt::kCqeBytes;
  bnxt_re_req_cqe req{};
  req.qp_handle = provider::le64::from(ep.qpn);
  const uint64_t slots = sq_slots(ep);
  const uint64_t con_indx =
      status == CompletionStatus::kSuccess ? (index + 1) % slots : kWqeSlots * (index % ep.sq_wqes);
  req.con_indx = provider::le32::from(static_cast<uint32_t>(con_indx & 0xFFFF));
  std::memcpy(cqe, &req, sizeof(req));
  auto* base = reinterpret_cast<bnxt_re_bcqe*>(cqe + sizeof(req));
  base->qphi_rwrid = provider::le32::from(0);
  const uint32_t flg =
      bcqe_flg_st_typ_ph(bnxt_status(status), BNXT_RE_WC_TYPE_SEND, cq_phase(n, ep.cq_entries));
  std::atomic_ref<uint32_t>(base->flg_st_typ_ph.raw).store(flg, std::memory_order_release);
  *cq_produced = n + 1;
}

}  // namespace

const Codec& bnxt_codec() {
  static const Codec codec{Bnxt::kName, Bnxt::kWqeBytes, Bnxt::kCqeBytes, announced,
                           decode,      complete,        false,           check_sequence};
  return codec;
}

}  // namespace mori::softnic
