// The software NIC's mlx5 codec: the send counter of the doorbell record, the 64-byte WQEBB parsed
// back into a WorkRequest, and completions written into the CQ ring as a ConnectX writes them.
//
// It reads and writes with rdma-core's own definitions (<infiniband/mlx5dv.h>: the segment and
// CQE structs, MLX5_* opcodes, flags and syndromes, mlx5dv_set_cqe_owner), not with the
// provider's (provider/mlx5_defs.hpp), so a layout the provider got wrong is a decode failure
// here instead of a mistake both sides share. Only the 32-bit masked atomic segments, which
// rdma-core does not define, come from the provider's header (their source: UCX, cited there).
//
// decode() parses untrusted bytes: it reads exactly one WQEBB (a local copy), never past it, and
// rejects anything the provider never writes and the hardware would not execute, with the reason.
#include <endian.h>
#include <infiniband/mlx5dv.h>

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string>

#include "backend/host/softnic/codec.hpp"
#include "mori/platform.hpp"
#include "mori/provider/mlx5.hpp"

namespace mori::softnic {
namespace {

using platform::MemOrder;
using platform::MemScope;
using provider::Mlx5;
using provider::Opcode;
using provider::WorkRequest;
using state::RdmaEndpoint;

constexpr uint32_t kSegBytes = 16;  // ds counts these
constexpr uint32_t kMaxDs = MLX5_SEND_WQE_BB / kSegBytes;
// The PRM's extended-atomic opmod for 4-byte operands: 8 | (log2(4) - 2) (UCX ib_mlx5.h,
// UCT_IB_MLX5_OPMOD_EXT_ATOMIC); rdma-core posts no extended atomics.
constexpr uint8_t kOpmodExtAtomic32 = 0x08;

// The WQEBB's segments at their byte offsets, as rdma-core's structs lay them out.
template <typename Seg>
Seg segment(const uint8_t* wqe, uint32_t offset) {
  Seg s;
  std::memcpy(&s, wqe + offset, sizeof(s));
  return s;
}
constexpr uint32_t kRaddrAt = sizeof(::mlx5_wqe_ctrl_seg);
constexpr uint32_t kThirdAt = kRaddrAt + sizeof(::mlx5_wqe_raddr_seg);
constexpr uint32_t kFourthAt = kThirdAt + kSegBytes;

// Says why a WQE is garbage ("mlx5: " + the formatted reason); returns false for the caller.
template <typename... Args>
bool reject(std::string* why, const char* format, Args... args) {
  char text[160] = {};
  if constexpr (sizeof...(Args) > 0) std::snprintf(text, sizeof(text), format, args...);
  why->assign("mlx5: ").append(sizeof...(Args) > 0 ? text : format);
  return false;
}

const char* opcode_name(uint8_t opcode) {
  switch (opcode) {
    case MLX5_OPCODE_RDMA_WRITE:
      return "RDMA_WRITE";
    case MLX5_OPCODE_RDMA_READ:
      return "RDMA_READ";
    case MLX5_OPCODE_ATOMIC_CS:
      return "ATOMIC_CS";
    case MLX5_OPCODE_ATOMIC_FA:
      return "ATOMIC_FA";
    case MLX5_OPCODE_ATOMIC_MASKED_CS:
      return "ATOMIC_MASKED_CS";
    case MLX5_OPCODE_ATOMIC_MASKED_FA:
      return "ATOMIC_MASKED_FA";
    default:
      return nullptr;
  }
}

// The record holds the low 16 bits of the next SQ index (post_send_db); the engine keeps fewer
// than 65536 WQEs outstanding, so the forward distance from `last` is exact.
uint64_t announced(const RdmaEndpoint& ep, uint64_t last) {
  // Acquire: pairs with ring_doorbell's release, so the WQEs it announces are visible.
  const uint32_t raw =
      platform::atomic_load<MemOrder::Acquire, MemScope::System>(&ep.dbr[MLX5_SND_DBR]);
  const uint16_t counter = static_cast<uint16_t>(be32toh(raw));
  return last + static_cast<uint16_t>(counter - last);
}

bool check_ds(uint8_t ds, uint8_t expected, const char* name, std::string* why) {
  if (ds == expected) return true;
  return reject(why, "ds %u inconsistent with opcode %s (expected %u)", unsigned{ds}, name,
                unsigned{expected});
}

// RDMA write (plain or inline) and read: ctrl, raddr, then a data segment, an inline header and
// its data, or nothing (an empty transfer, ds 2).
bool decode_rdma(const uint8_t* wqe, uint8_t opcode, uint8_t ds, WorkRequest* wr,
                 std::string* why) {
  const char* name = opcode_name(opcode);
  const auto raddr = segment<::mlx5_wqe_raddr_seg>(wqe, kRaddrAt);
  wr->opcode = opcode == MLX5_OPCODE_RDMA_READ ? Opcode::kRead : Opcode::kWrite;
  wr->remote_addr = be64toh(raddr.raddr);
  wr->rkey = be32toh(raddr.rkey);
  if (ds == 2) return true;  // nothing to move
  const uint32_t byte_count = be32toh(segment<::mlx5_wqe_inl_data_seg>(wqe, kThirdAt).byte_count);
  if (byte_count & MLX5_INLINE_SEG) {
    if (opcode != MLX5_OPCODE_RDMA_WRITE)
      return reject(why, "opcode %s cannot carry inline data", name);
    const uint32_t n = byte_count & ~uint32_t{MLX5_INLINE_SEG};
    constexpr uint32_t kInlineAt = kThirdAt + sizeof(::mlx5_wqe_inl_data_seg);
    if (n > MLX5_SEND_WQE_BB - kInlineAt)
      return reject(why, "inline length %u beyond the entry (at most %u bytes)", n,
                    MLX5_SEND_WQE_BB - kInlineAt);
    if (!check_ds(ds, static_cast<uint8_t>(2 + (4 + n + 15) / 16), name, why)) return false;
    wr->opcode = Opcode::kWriteInline;
    wr->bytes = n;
    wr->inline_data = wqe + kInlineAt;
    return true;
  }
  if (!check_ds(ds, 3, name, why)) return false;
  const auto data = segment<::mlx5_wqe_data_seg>(wqe, kThirdAt);
  if (byte_count == 0) return reject(why, "data segment of 0 bytes (an empty transfer omits it)");
  wr->bytes = byte_count;
  wr->lkey = be32toh(data.lkey);
  wr->local_addr = be64toh(data.addr);
  return true;
}

// Atomics: ctrl, raddr, the operation's segment, the data segment for the old value (ds 4).
bool decode_atomic(const uint8_t* wqe, uint8_t opcode, uint8_t opmod, uint8_t ds, WorkRequest* wr,
                   std::string* why) {
  const char* name = opcode_name(opcode);
  if (!check_ds(ds, 4, name, why)) return false;
  const bool masked =
      opcode == MLX5_OPCODE_ATOMIC_MASKED_CS || opcode == MLX5_OPCODE_ATOMIC_MASKED_FA;
  const uint8_t want_opmod = masked ? kOpmodExtAtomic32 : 0;
  if (opmod != want_opmod) {
    return reject(why, "bad atomic operand size: %s with opmod 0x%02x (expected 0x%02x)", name,
                  unsigned{opmod}, unsigned{want_opmod});
  }
  const auto data = segment<::mlx5_wqe_data_seg>(wqe, kFourthAt);
  wr->width = masked ? 4 : 8;
  const uint32_t byte_count = be32toh(data.byte_count);
  if (byte_count != wr->width) {
    return reject(why, "bad atomic operand size: %s with a data segment of %u bytes (expected %u)",
                  name, byte_count, unsigned{wr->width});
  }
  const bool cas = opcode == MLX5_OPCODE_ATOMIC_CS || opcode == MLX5_OPCODE_ATOMIC_MASKED_CS;
  const auto raddr = segment<::mlx5_wqe_raddr_seg>(wqe, kRaddrAt);
  wr->opcode = cas ? Opcode::kCompareSwap : Opcode::kFetchAdd;
  wr->remote_addr = be64toh(raddr.raddr);
  wr->rkey = be32toh(raddr.rkey);
  wr->lkey = be32toh(data.lkey);
  wr->local_addr = be64toh(data.addr);
  if (!masked) {
    const auto op = segment<::mlx5_wqe_atomic_seg>(wqe, kThirdAt);
    wr->operand = be64toh(op.swap_add);
    wr->compare = cas ? be64toh(op.compare) : 0;
  } else if (cas) {
    const auto s = segment<provider::mlx5_atomic_masked_cswap32_seg>(wqe, kThirdAt);
    if (s.swap_mask.get() != ~0u || s.compare_mask.get() != ~0u) {
      return reject(why, "masked compare-swap with partial masks (swap 0x%08x, compare 0x%08x)",
                    s.swap_mask.get(), s.compare_mask.get());
    }
    wr->operand = s.swap.get();
    wr->compare = s.compare.get();
  } else {
    const auto s = segment<provider::mlx5_atomic_masked_fadd32_seg>(wqe, kThirdAt);
    if (s.field_boundary.get() != 0) {
      return reject(why, "masked fetch-add with field_boundary 0x%08x (mori posts 0)",
                    s.field_boundary.get());
    }
    wr->operand = s.add.get();
  }
  return true;
}

// The control segment as mlx5dv_set_ctrl_seg writes it: opmod_idx_opcode = opmod << 24 |
// wqe index << 8 | opcode, qpn_ds = qpn << 8 | ds, fm_ce_se's fence mode in bits 7:5.
bool decode(const void* wqe, uint64_t index, WorkRequest* wr, std::string* why) {
  const uint8_t* bytes = static_cast<const uint8_t*>(wqe);
  const auto c = segment<::mlx5_wqe_ctrl_seg>(bytes, 0);
  *wr = WorkRequest{};
  wr->index = index;
  const uint32_t opmod_idx_opcode = be32toh(c.opmod_idx_opcode), qpn_ds = be32toh(c.qpn_ds);
  const uint8_t ds = qpn_ds & 0xff;
  if (ds > kMaxDs)
    return reject(why, "ds %u larger than one WQEBB (%u units of 16 bytes)", unsigned{ds}, kMaxDs);
  const uint16_t wqe_index = static_cast<uint16_t>(opmod_idx_opcode >> 8);
  if (wqe_index != static_cast<uint16_t>(index)) {
    return reject(why, "wqe index 0x%04x does not match SQ index 0x%04x", unsigned{wqe_index},
                  unsigned{static_cast<uint16_t>(index)});
  }
  const uint8_t opcode = opmod_idx_opcode & 0xff, opmod = opmod_idx_opcode >> 24;
  const char* name = opcode_name(opcode);
  if (name == nullptr) return reject(why, "unknown opcode 0x%02x", unsigned{opcode});
  wr->qpn = qpn_ds >> 8;
  wr->signaled = (c.fm_ce_se & MLX5_WQE_CTRL_CQ_UPDATE) ? 1 : 0;
  wr->fence = (c.fm_ce_se & 0xe0) != 0 ? 1 : 0;  // MLX5_WQE_CTRL_FENCE and the other modes
  if (opcode == MLX5_OPCODE_RDMA_WRITE || opcode == MLX5_OPCODE_RDMA_READ) {
    if (opmod != 0) return reject(why, "opmod 0x%02x invalid for opcode %s", unsigned{opmod}, name);
    if (ds < 2) return check_ds(ds, 3, name, why);
    return decode_rdma(bytes, opcode, ds, wr, why);
  }
  return decode_atomic(bytes, opcode, opmod, ds, wr, why);
}

uint8_t syndrome_of(CompletionStatus status) {
  switch (status) {
    case CompletionStatus::kLocalProtection:
      return MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
    case CompletionStatus::kRemoteAccess:
      return MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR;
    case CompletionStatus::kRemoteInvalidRequest:
      return MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR;
    case CompletionStatus::kLocalLength:
      return MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR;
    case CompletionStatus::kFlushed:
      return MLX5_CQE_SYNDROME_WR_FLUSH_ERR;
    case CompletionStatus::kRetryExceeded:
      return MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR;
    case CompletionStatus::kBadResponse:
      return MLX5_CQE_SYNDROME_BAD_RESP_ERR;
    // kRemoteOperation, and kGeneral (fault injection): the responder could not complete it.
    default:
      return MLX5_CQE_SYNDROME_REMOTE_OP_ERR;
  }
}

// CQE number n goes to entry n mod cq_entries, its owner bit the parity of n / cq_entries
// (get_sw_cqe's test with cq.cqe = nent - 1).
void complete(RdmaEndpoint& ep, uint64_t* cq_produced, uint64_t index, const WorkRequest& wr,
              CompletionStatus status) {
  const uint64_t n = (*cq_produced)++;
  const uint8_t owner = (n & ep.cq_entries) ? 1 : 0;
  const uint32_t opcode_qpn = uint32_t{Mlx5::wqe_opcode(wr)} << 24 | (ep.qpn & 0xffffff);
  uint8_t image[sizeof(::mlx5_cqe64)] = {};
  if (status == CompletionStatus::kSuccess) {
    ::mlx5_cqe64 cqe{};
    // handle_good_req reads byte_cnt for reads; atomics report their width
    const bool atomic = wr.opcode == Opcode::kFetchAdd || wr.opcode == Opcode::kCompareSwap;
    cqe.byte_cnt = htobe32(wr.opcode == Opcode::kRead ? wr.bytes : atomic ? wr.width : 0);
    cqe.sop_drop_qpn = htobe32(opcode_qpn);
    cqe.wqe_counter = htobe16(static_cast<uint16_t>(index));
    cqe.op_own = MLX5_CQE_REQ << 4;
    mlx5dv_set_cqe_owner(&cqe, owner);
    std::memcpy(image, &cqe, sizeof(cqe));
  } else {
    ::mlx5_err_cqe cqe{};
    cqe.syndrome = syndrome_of(status);
    cqe.s_wqe_opcode_qpn = htobe32(opcode_qpn);
    cqe.wqe_counter = htobe16(static_cast<uint16_t>(index));
    cqe.op_own = static_cast<uint8_t>(MLX5_CQE_REQ_ERR << 4 | owner);
    std::memcpy(image, &cqe, sizeof(cqe));
  }
  // The NIC writes a CQE as one burst; a thread writes it word by word, so a reader must never
  // take a half-written entry for a whole one: first the tail word marked invalid (poll_cq re-reads
  // the tail after the syndromes and sees the change), then the body, then the tail, released.
  uint32_t words[sizeof(image) / 4];
  std::memcpy(words, image, sizeof(image));
  constexpr uint32_t kTail = offsetof(::mlx5_cqe64, wqe_counter) / 4;  // wqe_counter .. op_own
  auto* slot =
      reinterpret_cast<uint32_t*>(ep.cq + (n & (ep.cq_entries - 1)) * sizeof(::mlx5_cqe64));
  uint8_t invalid[4] = {0, 0, 0, static_cast<uint8_t>(MLX5_CQE_INVALID << 4 | owner)};
  uint32_t invalid_word;
  std::memcpy(&invalid_word, invalid, 4);
  platform::atomic_store<MemOrder::Relaxed, MemScope::System>(&slot[kTail], invalid_word);
  platform::fence<MemOrder::Release, MemScope::System>();
  for (uint32_t i = 0; i < kTail; ++i)
    platform::atomic_store<MemOrder::Relaxed, MemScope::System>(&slot[i], words[i]);
  platform::atomic_store<MemOrder::Release, MemScope::System>(&slot[kTail], words[kTail]);
}

}  // namespace

const Codec& mlx5_codec() {
  static const Codec codec{
      Mlx5::kName, Mlx5::kWqeBytes, Mlx5::kCqeBytes, announced, decode, complete, true};
  return codec;
}

}  // namespace mori::softnic
