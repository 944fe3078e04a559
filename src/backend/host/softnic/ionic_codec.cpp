// The software NIC's Ionic codec: the SQ doorbell, the 64-byte ionic_v1_wqe parsed back into a
// WorkRequest, and send completions written as an Ionic NIC writes them (provider/ionic_defs.hpp
// for the layouts and their rdma-core sources).
//
// decode() parses untrusted bytes: it reads exactly one entry (a local copy) and rejects anything
// the provider never writes and the hardware would not execute, with the reason.
#include <atomic>
#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <string>

#include "backend/host/softnic/codec.hpp"
#include "mori/provider/ionic_defs.hpp"

namespace mori::softnic {
namespace {

using provider::Opcode;
using provider::WorkRequest;
using state::RdmaEndpoint;

// The flags the provider may set; SOL and the SPEC formats are never posted by the engine (and
// rdma-core rejects SOL on RDMA and atomic requests).
constexpr uint16_t kKnownFlags = provider::IONIC_V1_FLAG_FENCE | provider::IONIC_V1_FLAG_INL |
                                 provider::IONIC_V1_FLAG_SIG | provider::IONIC_V1_FLAG_COLOR;
// ionic_v1_prep_pld: a message of more than 2 GiB is invalid.
constexpr uint32_t kMaxMessageBytes = uint32_t{1} << 31;
constexpr uint32_t kInlineBytes = sizeof(provider::ionic_v1_pld::data);

// Says why a WQE is garbage ("ionic: " + the formatted reason); returns false for the caller.
[[gnu::format(printf, 2, 3)]] bool reject(std::string* why, const char* format, ...) {
  char text[160];
  va_list args;
  va_start(args, format);
  std::vsnprintf(text, sizeof(text), format, args);
  va_end(args);
  *why = std::string("ionic: ") + text;
  return false;
}

uint64_t join(provider::be32 high, provider::be32 low) {
  return (uint64_t{high.get()} << 32) | low.get();
}

// ionic_dbell_val's position is the SQ producer wrapped to the ring; the engine keeps fewer than a
// ring of entries outstanding, so the forward distance from `last` is exact. A doorbell for
// another queue (or none yet) announces nothing.
uint64_t announced(const RdmaEndpoint& ep, uint64_t last) {
  const uint64_t val = std::atomic_ref<uint64_t>(*ep.db).load(std::memory_order_acquire);
  if (val == 0 || provider::ionic_dbell_qid(val) != (ep.qpn & provider::IONIC_QID_MASK))
    return last;
  return last + ((provider::ionic_dbell_pos(val) - last) & (ep.sq_wqes - 1));
}

bool decode_rdma(const provider::ionic_v1_wqe& w, uint16_t flags, const void* wqe, WorkRequest* wr,
                 std::string* why) {
  const uint32_t length = w.common.length.get();
  const uint8_t num_sge = w.base.num_sge_key;
  wr->remote_addr = join(w.common.rdma.remote_va_high, w.common.rdma.remote_va_low);
  wr->rkey = w.common.rdma.remote_rkey.get();
  wr->bytes = length;
  if (flags & provider::IONIC_V1_FLAG_INL) {
    if (wr->opcode != Opcode::kWrite) return reject(why, "inline data on an RDMA read");
    if (num_sge != 0) return reject(why, "inline write with an SGE count of %u", unsigned{num_sge});
    if (length > kInlineBytes)
      return reject(why, "inline length %u beyond the entry's %u bytes", length, kInlineBytes);
    wr->opcode = Opcode::kWriteInline;
    wr->inline_data =
        static_cast<const uint8_t*>(wqe) + offsetof(provider::ionic_v1_wqe, common.pld);
    return true;
  }
  if (length > kMaxMessageBytes) return reject(why, "message length %u beyond 2 GiB", length);
  if (num_sge > 1)
    return reject(why, "SGE count %u (the engine posts at most 1)", unsigned{num_sge});
  if (num_sge == 0) {
    if (length != 0) return reject(why, "message length %u with no SGE", length);
    return true;
  }
  const provider::ionic_sge& sge = w.common.pld.sgl[0];
  if (sge.len.get() != length)
    return reject(why, "SGE length %u differs from message length %u", sge.len.get(), length);
  wr->local_addr = sge.va.get();
  wr->lkey = sge.lkey.get();
  return true;
}

bool decode_atomic(const provider::ionic_v1_wqe& w, uint16_t flags, WorkRequest* wr,
                   std::string* why) {
  if (flags & provider::IONIC_V1_FLAG_INL) return reject(why, "inline data on an atomic");
  if (w.base.num_sge_key != 1)
    return reject(why, "atomic with an SGE count of %u (needs 1)", unsigned{w.base.num_sge_key});
  const provider::ionic_v2_atomic_bdy& a = w.atomic_v2;
  wr->width = 8;  // the v2 atomic body has no width: every Ionic atomic is 8 bytes
  wr->remote_addr = join(a.remote_va_high, a.remote_va_low);
  wr->rkey = a.remote_rkey.get();
  wr->operand = join(a.swap_add_high, a.swap_add_low);
  wr->compare = wr->opcode == Opcode::kCompareSwap ? join(a.compare_high, a.compare_low) : 0;
  wr->local_addr = a.local_va.get();
  wr->lkey = a.lkey.get();
  return true;
}

bool decode(const void* wqe, uint64_t index, WorkRequest* wr, std::string* why) {
  provider::ionic_v1_wqe w;
  std::memcpy(&w, wqe, sizeof(w));
  *wr = WorkRequest{};
  wr->index = index;
  const uint64_t wqe_idx = w.base.wqe_idx.get();
  if (wqe_idx != index) {
    return reject(why, "WQE index %llu where %llu was expected (a stale or unwritten entry)",
                  static_cast<unsigned long long>(wqe_idx), static_cast<unsigned long long>(index));
  }
  const uint16_t flags = w.base.flags.get();
  if (flags & ~kKnownFlags) return reject(why, "unsupported flags 0x%04x", unsigned{flags});
  wr->signaled = (flags & provider::IONIC_V1_FLAG_SIG) ? 1 : 0;
  wr->fence = (flags & provider::IONIC_V1_FLAG_FENCE) ? 1 : 0;
  switch (w.base.op) {
    case provider::IONIC_V2_OP_RDMA_WRITE:
      wr->opcode = Opcode::kWrite;
      return decode_rdma(w, flags, wqe, wr, why);
    case provider::IONIC_V2_OP_RDMA_READ:
      wr->opcode = Opcode::kRead;
      return decode_rdma(w, flags, wqe, wr, why);
    case provider::IONIC_V2_OP_ATOMIC_FA:
      wr->opcode = Opcode::kFetchAdd;
      return decode_atomic(w, flags, wr, why);
    case provider::IONIC_V2_OP_ATOMIC_CS:
      wr->opcode = Opcode::kCompareSwap;
      return decode_atomic(w, flags, wr, why);
    default:
      return reject(why, "unknown opcode 0x%02x", unsigned{w.base.op});
  }
}

// The ionic_status of each CompletionStatus; kGeneral (a failure of the QP itself) is a local QP
// operation error.
uint32_t ionic_status_of(CompletionStatus status) {
  switch (status) {
    case CompletionStatus::kSuccess:
      return provider::IONIC_STS_OK;
    case CompletionStatus::kLocalProtection:
      return provider::IONIC_STS_LOCAL_PROT_ERR;
    case CompletionStatus::kRemoteAccess:
      return provider::IONIC_STS_REMOTE_ACC_ERR;
    case CompletionStatus::kRemoteInvalidRequest:
      return provider::IONIC_STS_REMOTE_INV_REQ_ERR;
    case CompletionStatus::kLocalLength:
      return provider::IONIC_STS_LOCAL_LEN_ERR;
    case CompletionStatus::kFlushed:
      return provider::IONIC_STS_WQE_FLUSHED_ERR;
    case CompletionStatus::kRetryExceeded:
      return provider::IONIC_STS_RETRY_EXCEEDED;
    case CompletionStatus::kRemoteOperation:
      return provider::IONIC_STS_REMOTE_OPER_ERR;
    case CompletionStatus::kBadResponse:
      return provider::IONIC_STS_BAD_RESP_ERR;
    default:
      return provider::IONIC_STS_LOCAL_QP_OPER_ERR;
  }
}

// Locally detected errors and flushes complete as NPG (the WQE by its index: no message went out,
// which is why ionic_comp_npg clears meta->remote); the rest as SEND_MSN, the coalesced remote
// completion that covers every message through this one.
void complete(RdmaEndpoint& ep, uint64_t* cq_produced, uint64_t index, const WorkRequest& wr,
              CompletionStatus status) {
  const uint64_t pos = (*cq_produced)++;
  const bool error = status != CompletionStatus::kSuccess;
  const bool local = status == CompletionStatus::kLocalProtection ||
                     status == CompletionStatus::kLocalLength ||
                     status == CompletionStatus::kFlushed;
  const uint8_t type =
      local ? provider::IONIC_V1_CQE_TYPE_SEND_NPG : provider::IONIC_V1_CQE_TYPE_SEND_MSN;
  provider::ionic_v1_cqe cqe{};
  if (!local)
    cqe.send.msg_msn = provider::be32::from((index + 1) & provider::IONIC_V1_CQE_MSN_MASK);
  cqe.send.npg_wqe_idx_timestamp =
      provider::le64::from(index & provider::IONIC_V1_CQE_WQE_IDX_MASK);
  const bool atomic = wr.opcode == Opcode::kFetchAdd || wr.opcode == Opcode::kCompareSwap;
  cqe.status_length = provider::be32::from(error ? ionic_status_of(status) : atomic ? 8 : wr.bytes);
  const uint32_t qtf = provider::ionic_v1_cqe_qtf_make(
      ep.qpn & provider::IONIC_QID_MASK, type, error, provider::ionic_color(pos, ep.cq_entries));
  auto* slot = reinterpret_cast<provider::ionic_v1_cqe*>(
      ep.cq + (pos & (ep.cq_entries - 1)) * sizeof(provider::ionic_v1_cqe));
  std::memcpy(slot, &cqe, offsetof(provider::ionic_v1_cqe, qid_type_flags));
  // The color word last, with release: a poller that sees the new color sees the whole CQE.
  std::atomic_ref<uint32_t>(slot->qid_type_flags.raw)
      .store(provider::be32::from(qtf).raw, std::memory_order_release);
}

}  // namespace

const Codec& ionic_codec() {
  static const Codec codec{"ionic",
                           sizeof(provider::ionic_v1_wqe),
                           sizeof(provider::ionic_v1_cqe),
                           announced,
                           decode,
                           complete,
                           false};
  return codec;
}

}  // namespace mori::softnic
