// The software NIC's BNXT codec: reads the SQ doorbell, parses static-mode send WQEs back into work
// requests, and writes requester CQEs as a bnxt_re NIC does. Layouts:
// include/mori/provider/bnxt_defs.hpp (rdma-core providers/bnxt_re). The WQE bytes are untrusted:
// every field is checked before it is used, and nothing is read outside the entry's
// Bnxt::kWqeBytes.
#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <string>

#include "backend/host/softnic/codec.hpp"
#include "mori/provider/bnxt.hpp"

namespace mori::softnic {

namespace {

using namespace provider::bnxt;
using provider::Bnxt;
using provider::Opcode;
using provider::WorkRequest;

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
  static_assert(sizeof(Segment) == Bnxt::kSlotBytes, "a WQE segment fills one slot");
  Segment s;
  std::memcpy(&s, wqe + index * Bnxt::kSlotBytes, sizeof(s));  // the bytes may be unaligned
  return s;
}

// The SQ doorbell carries the producer index modulo sq_wqes and the parity of its passes, so it
// names the index modulo 2 * sq_wqes. The announced index n lies in [last, last + sq_wqes]: the
// engine never reserves more than sq_wqes past the completed index, which trails `last`. A value
// outside that window (not a valid SQ doorbell of this QP, or one older than `last`) announces
// nothing new.
uint64_t announced(const state::RdmaEndpoint& ep, uint64_t last) {
  if (ep.db == nullptr) return last;
  const uint64_t value = std::atomic_ref<uint64_t>(*ep.db).load(std::memory_order_acquire);
  const bnxt_re_db_hdr hdr = db_hdr_from_value(value);
  if (!db_valid(hdr) || db_type(hdr) != BNXT_RE_QUE_TYPE_SQ || db_qid(hdr) != ep.qpn ||
      db_index(hdr) >= ep.sq_wqes)
    return last;
  const uint64_t period = uint64_t{2} * ep.sq_wqes;
  const uint64_t position = uint64_t{db_epoch(hdr)} * ep.sq_wqes + db_index(hdr);
  const uint64_t ahead = (position + period - last % period) % period;
  return ahead <= ep.sq_wqes ? last + ahead : last;
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

  if (slots < 2 || slots > STATIC_WQE_NUM_SLOTS)
    return reject(why, "wqe size field %u outside 2..%u slots", slots, STATIC_WQE_NUM_SLOTS);
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
        if (length > Bnxt::kMaxInlineBytes)
          return reject(why, "inline length %" PRIu64 " beyond the entry (%u bytes)", length,
                        Bnxt::kMaxInlineBytes);
        const uint32_t expected =
            2 + static_cast<uint32_t>(length + Bnxt::kSlotBytes - 1) / Bnxt::kSlotBytes;
        if (slots != expected)
          return reject(
              why, "wqe size field %u inconsistent with %" PRIu64 " inline bytes (expected %u)",
              slots, length, expected);
        wr->bytes = static_cast<uint32_t>(length);
        wr->inline_data = wqe + 2 * Bnxt::kSlotBytes;
        return true;
      }
      wr->opcode = opcode == BNXT_RE_WR_OPCD_RDMA_READ ? Opcode::kRead : Opcode::kWrite;
      if (slots != Bnxt::kSgeWqeSlots)
        return reject(why, "SGE count %u unsupported (one SGE per WQE)", slots - 2);
      return decode_sge(slot<bnxt_re_sge>(wqe, 2), length, wr, why);
    }
    case BNXT_RE_WR_OPCD_ATOMIC_CS:
    case BNXT_RE_WR_OPCD_ATOMIC_FA: {
      const bool cas = opcode == BNXT_RE_WR_OPCD_ATOMIC_CS;
      wr->opcode = cas ? Opcode::kCompareSwap : Opcode::kFetchAdd;
      if (slots != Bnxt::kSgeWqeSlots)
        return reject(why, "wqe size field %u inconsistent with an atomic (expected %u)", slots,
                      Bnxt::kSgeWqeSlots);
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

// The MSN entry of WQE `index` must give the start PSN the NIC's own count has reached (from the
// QP's initial send PSN) and the next PSN after the WQE's packets: ceil(bytes / path MTU), at least
// one, 8 bytes for an atomic (rdma-core providers/bnxt_re/verbs.c, bnxt_re_fill_psns_for_msntbl),
// and its ring position as start_idx. The hardware resolves retransmissions through these entries,
// so a wrong PSN there would resend the wrong WQE.
bool check_sequence(const state::RdmaEndpoint& ep, uint64_t index, const WorkRequest& wr,
                    uint32_t* next_psn, std::string* why) {
  const uint32_t position = static_cast<uint32_t>(index & (ep.sq_wqes - 1));
  const auto* table =
      reinterpret_cast<const bnxt_re_msns*>(ep.sq + uint64_t{ep.sq_wqes} * Bnxt::kWqeBytes);
  const uint64_t entry = table[position].start_idx_next_psn_start_psn.get();
  const uint32_t start = entry & BNXT_RE_SQ_MSN_SEARCH_START_PSN_MASK;
  const uint32_t next = (entry & BNXT_RE_SQ_MSN_SEARCH_NEXT_PSN_MASK) >> 24;
  const uint32_t idx = static_cast<uint32_t>(entry >> BNXT_RE_SQ_MSN_SEARCH_START_IDX_SHIFT);
  const uint64_t mtu = ep.provider_word[Bnxt::kWordMtu];
  const bool atomic = wr.opcode == Opcode::kFetchAdd || wr.opcode == Opcode::kCompareSwap;
  const uint64_t bytes = atomic ? 8 : wr.bytes;
  const uint64_t packets = mtu ? std::max<uint64_t>(1, (bytes + mtu - 1) / mtu) : 1;
  const uint32_t want_next = static_cast<uint32_t>((*next_psn + packets) & 0xFFFFFF);
  if (idx != position || start != *next_psn || next != want_next)
    return reject(why,
                  "MSN entry {start_idx %u, start_psn 0x%06x, next_psn 0x%06x}, expected {%u, "
                  "0x%06x, 0x%06x} (%" PRIu64 " packets)",
                  idx, start, next, position, *next_psn, want_next, packets);
  *next_psn = want_next;
  return true;
}

uint32_t bnxt_status(CompletionStatus status) {
  switch (status) {
    case CompletionStatus::kSuccess:
      return BNXT_RE_REQ_ST_OK;
    case CompletionStatus::kLocalProtection:
      return BNXT_RE_REQ_ST_PROT;
    case CompletionStatus::kRemoteAccess:
      return BNXT_RE_REQ_ST_REM_ACC;
    case CompletionStatus::kRemoteInvalidRequest:
      return BNXT_RE_REQ_ST_REM_INVAL;
    case CompletionStatus::kLocalLength:
      return BNXT_RE_REQ_ST_LOC_LEN;
    case CompletionStatus::kFlushed:
      return BNXT_RE_REQ_ST_WR_FLUSH;
    default:
      // bnxt_re has no general requester status: the responder's failure stands in for it.
      return BNXT_RE_REQ_ST_REM_OP;
  }
}

// A requester CQE as the NIC writes it. con_indx points past the WQE, on success and on error
// alike (the kernel's bnxt_qplib_cq_process_req retires WQEs up to it). The phase word goes last,
// with release ordering, so a poller that sees the new phase sees the whole CQE. The qp_handle
// the hardware echoes (the driver's create_qp cookie) is stood in for by the QP number.
void complete(state::RdmaEndpoint& ep, uint64_t* cq_produced, uint64_t index,
              const WorkRequest& /*wr*/, CompletionStatus status) {
  const uint64_t n = *cq_produced;
  uint8_t* cqe = ep.cq + (n & (ep.cq_entries - 1)) * Bnxt::kCqeBytes;
  bnxt_re_req_cqe req{};
  req.qp_handle = provider::le64::from(ep.qpn);
  req.con_indx = provider::le32::from(static_cast<uint32_t>((index + 1) & 0xFFFF));
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
