// The software NIC's mlx5 codec: the send counter of the doorbell record, the 64-byte WQEBB parsed
// back into a WorkRequest, and completions written into the CQ ring as a ConnectX writes them
// (provider/mlx5_defs.hpp for the layouts and their rdma-core sources).
//
// decode() parses untrusted bytes: it reads exactly one WQEBB (a local copy), never past it, and
// rejects anything the provider never writes and the hardware would not execute, with the reason.
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string>

#include "backend/host/softnic/codec.hpp"
#include "mori/platform.hpp"
#include "mori/provider/mlx5.hpp"

namespace mori::softnic {
namespace {

using namespace mori::provider;  // the vendor's MLX5_* names and segment structs
using platform::MemOrder;
using platform::MemScope;
using state::RdmaEndpoint;

constexpr uint32_t kSegBytes = 16;  // ds counts these
constexpr uint32_t kMaxDs = MLX5_SEND_WQE_BB / kSegBytes;

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
  const uint16_t counter = static_cast<uint16_t>(be32{raw}.get());
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
  Mlx5InlineWqe inl;
  std::memcpy(&inl, wqe, sizeof(inl));
  const char* name = opcode_name(opcode);
  wr->opcode = opcode == MLX5_OPCODE_RDMA_READ ? Opcode::kRead : Opcode::kWrite;
  wr->remote_addr = inl.raddr.raddr.get();
  wr->rkey = inl.raddr.rkey.get();
  if (ds == 2) return true;  // nothing to move
  const uint32_t byte_count = inl.inl.byte_count.get();
  if (byte_count & MLX5_INLINE_SEG) {
    if (opcode != MLX5_OPCODE_RDMA_WRITE)
      return reject(why, "opcode %s cannot carry inline data", name);
    const uint32_t n = byte_count & ~MLX5_INLINE_SEG;
    if (n > Mlx5::kMaxInlineBytes)
      return reject(why, "inline length %u beyond the entry (at most %u bytes)", n,
                    Mlx5::kMaxInlineBytes);
    if (!check_ds(ds, static_cast<uint8_t>(2 + (4 + n + 15) / 16), name, why)) return false;
    wr->opcode = Opcode::kWriteInline;
    wr->bytes = n;
    wr->inline_data = wqe + offsetof(Mlx5InlineWqe, data);
    return true;
  }
  if (!check_ds(ds, 3, name, why)) return false;
  Mlx5RdmaWqe rw;
  std::memcpy(&rw, wqe, sizeof(rw));
  if (byte_count == 0) return reject(why, "data segment of 0 bytes (an empty transfer omits it)");
  wr->bytes = byte_count;
  wr->lkey = rw.data.lkey.get();
  wr->local_addr = rw.data.addr.get();
  return true;
}

// Atomics: ctrl, raddr, the operation's segment, the data segment for the old value (ds 4).
bool decode_atomic(const uint8_t* wqe, uint8_t opcode, uint8_t opmod, uint8_t ds, WorkRequest* wr,
                   std::string* why) {
  const char* name = opcode_name(opcode);
  if (!check_ds(ds, 4, name, why)) return false;
  const bool masked =
      opcode == MLX5_OPCODE_ATOMIC_MASKED_CS || opcode == MLX5_OPCODE_ATOMIC_MASKED_FA;
  const uint8_t want_opmod = masked ? kMlx5OpmodExtAtomic32 : 0;
  if (opmod != want_opmod) {
    return reject(why, "bad atomic operand size: %s with opmod 0x%02x (expected 0x%02x)", name,
                  unsigned{opmod}, unsigned{want_opmod});
  }
  Mlx5AtomicWqe<mlx5_wqe_atomic_seg> a;
  std::memcpy(&a, wqe, sizeof(a));
  wr->width = masked ? 4 : 8;
  const uint32_t byte_count = a.data.byte_count.get();
  if (byte_count != wr->width) {
    return reject(why, "bad atomic operand size: %s with a data segment of %u bytes (expected %u)",
                  name, byte_count, unsigned{wr->width});
  }
  const bool cas = opcode == MLX5_OPCODE_ATOMIC_CS || opcode == MLX5_OPCODE_ATOMIC_MASKED_CS;
  wr->opcode = cas ? Opcode::kCompareSwap : Opcode::kFetchAdd;
  wr->remote_addr = a.raddr.raddr.get();
  wr->rkey = a.raddr.rkey.get();
  wr->lkey = a.data.lkey.get();
  wr->local_addr = a.data.addr.get();
  if (!masked) {
    wr->operand = a.op.swap_add.get();
    wr->compare = cas ? a.op.compare.get() : 0;
  } else if (cas) {
    mlx5_atomic_masked_cswap32_seg s;
    std::memcpy(&s, &a.op, sizeof(s));
    if (s.swap_mask.get() != ~0u || s.compare_mask.get() != ~0u) {
      return reject(why, "masked compare-swap with partial masks (swap 0x%08x, compare 0x%08x)",
                    s.swap_mask.get(), s.compare_mask.get());
    }
    wr->operand = s.swap.get();
    wr->compare = s.compare.get();
  } else {
    mlx5_atomic_masked_fadd32_seg s;
    std::memcpy(&s, &a.op, sizeof(s));
    if (s.field_boundary.get() != 0) {
      return reject(why, "masked fetch-add with field_boundary 0x%08x (mori posts 0)",
                    s.field_boundary.get());
    }
    wr->operand = s.add.get();
  }
  return true;
}

bool decode(const void* wqe, uint64_t index, WorkRequest* wr, std::string* why) {
  const uint8_t* bytes = static_cast<const uint8_t*>(wqe);
  mlx5_wqe_ctrl_seg c;
  std::memcpy(&c, bytes, sizeof(c));
  *wr = WorkRequest{};
  wr->index = index;
  const uint8_t ds = mlx5_ctrl_ds(c);
  if (ds > kMaxDs)
    return reject(why, "ds %u larger than one WQEBB (%u units of 16 bytes)", unsigned{ds}, kMaxDs);
  const uint16_t wqe_index = mlx5_ctrl_wqe_index(c);
  if (wqe_index != static_cast<uint16_t>(index)) {
    return reject(why, "wqe index 0x%04x does not match SQ index 0x%04x", unsigned{wqe_index},
                  unsigned{static_cast<uint16_t>(index)});
  }
  const uint8_t opcode = mlx5_ctrl_opcode(c), opmod = mlx5_ctrl_opmod(c);
  const char* name = opcode_name(opcode);
  if (name == nullptr) return reject(why, "unknown opcode 0x%02x", unsigned{opcode});
  wr->qpn = mlx5_ctrl_qpn(c);
  wr->signaled = (c.fm_ce_se & MLX5_WQE_CTRL_CQ_UPDATE) ? 1 : 0;
  wr->fence = mlx5_ctrl_fm(c) != 0 ? 1 : 0;
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
    default:  // kGeneral (fault injection): the responder could not complete the operation
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
  uint8_t image[sizeof(mlx5_cqe64)] = {};
  if (status == CompletionStatus::kSuccess) {
    mlx5_cqe64 cqe{};
    // handle_good_req reads byte_cnt for reads; atomics report their width
    const bool atomic = wr.opcode == Opcode::kFetchAdd || wr.opcode == Opcode::kCompareSwap;
    cqe.byte_cnt = be32::from(wr.opcode == Opcode::kRead ? wr.bytes : atomic ? wr.width : 0);
    cqe.sop_drop_qpn = be32::from(opcode_qpn);
    cqe.wqe_counter = be16::from(static_cast<uint16_t>(index));
    cqe.op_own = mlx5_cqe_op_own(MLX5_CQE_REQ, owner);
    std::memcpy(image, &cqe, sizeof(cqe));
  } else {
    mlx5_err_cqe cqe{};
    cqe.syndrome = syndrome_of(status);
    cqe.s_wqe_opcode_qpn = be32::from(opcode_qpn);
    cqe.wqe_counter = be16::from(static_cast<uint16_t>(index));
    cqe.op_own = mlx5_cqe_op_own(MLX5_CQE_REQ_ERR, owner);
    std::memcpy(image, &cqe, sizeof(cqe));
  }
  // The NIC writes a CQE as one burst; a thread writes it word by word, so a reader must never
  // take a half-written entry for a whole one: first the tail word marked invalid (poll_cq re-reads
  // the tail after the syndromes and sees the change), then the body, then the tail, released.
  uint32_t words[sizeof(image) / 4];
  std::memcpy(words, image, sizeof(image));
  constexpr uint32_t kTail = kMlx5CqeTailOffset / 4;
  auto* slot = reinterpret_cast<uint32_t*>(ep.cq + (n & (ep.cq_entries - 1)) * Mlx5::kCqeBytes);
  const Mlx5CqeTail invalid{be16::from(0), 0, mlx5_cqe_op_own(MLX5_CQE_INVALID, owner)};
  platform::atomic_store<MemOrder::Relaxed, MemScope::System>(
      &slot[kTail], __builtin_bit_cast(uint32_t, invalid));
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
