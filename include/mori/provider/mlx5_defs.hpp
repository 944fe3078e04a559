// Hardware layouts of NVIDIA/Mellanox ConnectX (mlx5) send queues and completion queues, for the
// Mlx5 provider (provider/mlx5.hpp) and the software NIC's mlx5 codec.
//
// Sources (rdma-core, linux-rdma/rdma-core at 691953d8; the same in rdma-core 44's installed
// /usr/include/infiniband/mlx5dv.h):
//   providers/mlx5/mlx5dv.h   MLX5_OPCODE_*, MLX5_CQE_* (opcodes, syndromes), MLX5_SND_DBR,
//       MLX5_WQE_CTRL_*, MLX5_SEND_WQE_BB, MLX5_INLINE_SEG, mlx5_wqe_ctrl_seg, mlx5_wqe_raddr_seg,
//       mlx5_wqe_atomic_seg, mlx5_wqe_data_seg, mlx5_cqe64, mlx5_err_cqe,
//       mlx5dv_get_cqe_opcode/_owner
//   providers/mlx5/wqe.h      mlx5_wqe_inline_seg (mlx5dv.h's mlx5_wqe_inl_data_seg, as __be32)
//   providers/mlx5/qp.c       _mlx5_post_send, set_data_inl_seg, post_send_db: how they are filled
//   providers/mlx5/cq.c       mlx5_handle_error_cqe (syndrome -> status), get_sw_cqe (owner bit),
//       update_cons_index (the CQ doorbell record); providers/mlx5/mlx5.h MLX5_CQ_SET_CI
//   libibverbs/enum_strs.c    ibv_wc_status_str: the status texts (mori's spellings: see below)
// 32-bit atomics are the PRM's "extended atomics", which rdma-core does not post. Their facts come
// from openucx/ucx src/uct/ib/mlx5/ib_mlx5.h (UCT_IB_MLX5_OPMOD_EXT_ATOMIC(log_size) =
// 8 | (log_size - 2), uct_ib_mlx5_atomic_masked_fadd32_seg / _cswap32_seg) and
// src/uct/ib/rc/accel/rc_mlx5.inl (uct_rc_mlx5_txqp_dptr_post); NVSHMEM's ibgda_device.cuh and
// DeepEP's ibgda_device.cuh post the same bytes, operands big-endian.
// Names, widths and byte order are the vendor's; each field's endianness is part of its type.
#pragma once

#include <cstdint>

#include "mori/platform/macros.hpp"
#include "mori/provider/endian.hpp"

namespace mori::provider {

// ---- constants (mlx5dv.h) -----------------------------------------------------------------------

enum : uint8_t {
  MLX5_OPCODE_RDMA_WRITE = 0x08,
  MLX5_OPCODE_RDMA_READ = 0x10,
  MLX5_OPCODE_ATOMIC_CS = 0x11,
  MLX5_OPCODE_ATOMIC_FA = 0x12,
  MLX5_OPCODE_ATOMIC_MASKED_CS = 0x14,
  MLX5_OPCODE_ATOMIC_MASKED_FA = 0x15,
};

// ctrl opmod of an extended (masked) atomic of 2^log_size bytes (UCX's
// UCT_IB_MLX5_OPMOD_EXT_ATOMIC)
constexpr uint8_t mlx5_opmod_ext_atomic(uint8_t log_size) { return 8 | (log_size - 2); }
inline constexpr uint8_t kMlx5OpmodExtAtomic32 = mlx5_opmod_ext_atomic(2);  // 0x08

enum : uint8_t {
  MLX5_WQE_CTRL_CQ_UPDATE = 2 << 2,  // CE = 2: a CQE for this WQE (IBV_SEND_SIGNALED)
  MLX5_WQE_CTRL_SOLICITED = 1 << 1,
  MLX5_WQE_CTRL_FENCE = 4 << 5,  // FM = 4: what qp.c writes for IBV_SEND_FENCE
  MLX5_WQE_CTRL_INITIATOR_SMALL_FENCE = 1 << 5,
};

enum : uint32_t {
  MLX5_SEND_WQE_BB = 64,          // one WQE basic block
  MLX5_INLINE_SEG = 0x80000000u,  // byte_count flag: the segment carries its data
  MLX5_SND_DBR = 1,               // index of the send counter in the QP's doorbell record
  // The CQ's doorbell record: the consumer index (24 bits, big-endian) at [MLX5_CQ_SET_CI]
  // (rdma-core providers/mlx5/mlx5.h, MLX5_CQ_SET_CI; cq.c, update_cons_index).
  MLX5_CQ_SET_CI = 0,
};

// mlx5_cqe64::op_own bits 7:4
enum : uint8_t {
  MLX5_CQE_OWNER_MASK = 1,
  MLX5_CQE_REQ = 0,
  MLX5_CQE_REQ_ERR = 13,
  MLX5_CQE_RESP_ERR = 14,
  MLX5_CQE_INVALID = 15,
};

// mlx5_err_cqe::syndrome
enum : uint8_t {
  MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR = 0x01,
  MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR = 0x02,
  MLX5_CQE_SYNDROME_LOCAL_PROT_ERR = 0x04,
  MLX5_CQE_SYNDROME_WR_FLUSH_ERR = 0x05,
  MLX5_CQE_SYNDROME_MW_BIND_ERR = 0x06,
  MLX5_CQE_SYNDROME_BAD_RESP_ERR = 0x10,
  MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR = 0x11,
  MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR = 0x12,
  MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR = 0x13,
  MLX5_CQE_SYNDROME_REMOTE_OP_ERR = 0x14,
  MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR = 0x15,
  MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR = 0x16,
  MLX5_CQE_SYNDROME_REMOTE_ABORTED_ERR = 0x22,
};

// ---- send WQE segments (16 bytes each, big-endian) ----------------------------------------------

struct mlx5_wqe_ctrl_seg {
  be32 opmod_idx_opcode;  // opmod: 8 | wqe_index: 16 (WQEBB number, wraps at 0xffff) | opcode: 8
  be32 qpn_ds;            // qpn: 24 | ds: 8 (WQE size in 16-byte units, this segment included)
  uint8_t signature;
  be16 dci_stream_channel_id;
  uint8_t fm_ce_se;  // fm: 3 (fence mode) | rsvd: 1 | ce: 2 (completion mode) | se: 1 | rsvd: 1
  be32 imm;
} __attribute__((packed, aligned(4)));

struct mlx5_wqe_raddr_seg {
  be64 raddr;
  be32 rkey;
  be32 reserved;
};

struct mlx5_wqe_atomic_seg {
  be64 swap_add;  // compare-swap: the swap value; fetch-add: the addend
  be64 compare;
};

struct mlx5_wqe_data_seg {
  be32 byte_count;  // bytes at addr; bit 31 (MLX5_INLINE_SEG) is never set here
  be32 lkey;
  be64 addr;
};

// The inline header: the data follows it directly, the pair padded to 16 bytes (set_data_inl_seg)
struct mlx5_wqe_inline_seg {
  be32 byte_count;  // MLX5_INLINE_SEG | bytes
};

// Extended atomic, 4-byte fetch-add (UCX uct_ib_mlx5_atomic_masked_fadd32_seg, whose spelling of
// the second field is "filed_boundary"). field_boundary 0: the operand is one 32-bit field.
struct mlx5_atomic_masked_fadd32_seg {
  be32 add;
  be32 field_boundary;
  be32 reserved[2];
};

// Extended atomic, 4-byte compare-swap (UCX uct_ib_mlx5_atomic_masked_cswap32_seg). All-ones masks
// make it a plain 32-bit compare-swap.
struct mlx5_atomic_masked_cswap32_seg {
  be32 swap;
  be32 compare;
  be32 swap_mask;
  be32 compare_mask;
};

static_assert(sizeof(mlx5_wqe_ctrl_seg) == 16 && sizeof(mlx5_wqe_raddr_seg) == 16 &&
                  sizeof(mlx5_wqe_atomic_seg) == 16 && sizeof(mlx5_wqe_data_seg) == 16 &&
                  sizeof(mlx5_atomic_masked_fadd32_seg) == 16 &&
                  sizeof(mlx5_atomic_masked_cswap32_seg) == 16,
              "mlx5 segments are 16 bytes (mlx5dv.h)");
static_assert(__builtin_offsetof(mlx5_wqe_ctrl_seg, fm_ce_se) == 11, "mlx5dv.h layout");

// ---- the WQEs mori posts: each fills exactly one WQEBB ------------------------------------------

// RDMA write or read: ctrl, raddr, and one data segment unless the transfer is empty (ds 3 or 2)
struct Mlx5RdmaWqe {
  mlx5_wqe_ctrl_seg ctrl;
  mlx5_wqe_raddr_seg raddr;
  mlx5_wqe_data_seg data;
  uint8_t unused[16];
};

// Inline RDMA write: ctrl, raddr, inline header, data (ds = 2 + ceil((4 + bytes) / 16))
struct Mlx5InlineWqe {
  mlx5_wqe_ctrl_seg ctrl;
  mlx5_wqe_raddr_seg raddr;
  mlx5_wqe_inline_seg inl;
  uint8_t data[MLX5_SEND_WQE_BB - 36];
};

// Atomic: ctrl, raddr, the operation's segment (Seg), the data segment for the old value (ds 4)
template <typename Seg>
struct Mlx5AtomicWqe {
  mlx5_wqe_ctrl_seg ctrl;
  mlx5_wqe_raddr_seg raddr;
  Seg op;
  mlx5_wqe_data_seg data;
};

static_assert(sizeof(Mlx5RdmaWqe) == MLX5_SEND_WQE_BB &&
                  sizeof(Mlx5InlineWqe) == MLX5_SEND_WQE_BB &&
                  sizeof(Mlx5AtomicWqe<mlx5_wqe_atomic_seg>) == MLX5_SEND_WQE_BB &&
                  __builtin_offsetof(Mlx5InlineWqe, data) == 36,
              "every mori WQE is one WQEBB");

// ---- ctrl segment: the one writer and its readers -----------------------------------------------

// Mirrors mlx5dv_set_ctrl_seg with signature 0 and imm 0. Units: `pi` is the WQEBB number of the
// WQE, wrapped at 0xffff whatever the queue size; `ds` counts 16-byte units; `qpn` is 24 bits.
MORI_DEVICE mlx5_wqe_ctrl_seg mlx5_ctrl_seg(uint16_t pi, uint8_t opcode, uint8_t opmod,
                                            uint32_t qpn, uint8_t fm_ce_se, uint8_t ds) {
  mlx5_wqe_ctrl_seg c{};
  c.opmod_idx_opcode = be32::from((uint32_t{opmod} << 24) | (uint32_t{pi} << 8) | opcode);
  c.qpn_ds = be32::from((qpn << 8) | ds);
  c.fm_ce_se = fm_ce_se;
  return c;
}
MORI_DEVICE uint8_t mlx5_ctrl_opcode(const mlx5_wqe_ctrl_seg& c) {
  return c.opmod_idx_opcode.get() & 0xff;
}
MORI_DEVICE uint16_t mlx5_ctrl_wqe_index(const mlx5_wqe_ctrl_seg& c) {
  return (c.opmod_idx_opcode.get() >> 8) & 0xffff;
}
MORI_DEVICE uint8_t mlx5_ctrl_opmod(const mlx5_wqe_ctrl_seg& c) {
  return c.opmod_idx_opcode.get() >> 24;
}
MORI_DEVICE uint32_t mlx5_ctrl_qpn(const mlx5_wqe_ctrl_seg& c) { return c.qpn_ds.get() >> 8; }
MORI_DEVICE uint8_t mlx5_ctrl_ds(const mlx5_wqe_ctrl_seg& c) { return c.qpn_ds.get() & 0xff; }
MORI_DEVICE uint8_t mlx5_ctrl_fm(const mlx5_wqe_ctrl_seg& c) { return c.fm_ce_se >> 5; }
MORI_DEVICE uint8_t mlx5_ctrl_ce(const mlx5_wqe_ctrl_seg& c) { return (c.fm_ce_se >> 2) & 3; }

// ---- completion queue entries (64 bytes) --------------------------------------------------------

// A requester's CQE. The first 32 bytes are responder fields, unused by a send queue.
struct mlx5_cqe64 {
  uint8_t rsvd0[2];
  be16 wqe_id;
  uint8_t rsvd4[13];
  uint8_t ml_path;
  uint8_t rsvd20[4];
  be16 slid;
  be32 flags_rqpn;
  uint8_t hds_ip_ext;
  uint8_t l4_hdr_type_etc;
  be16 vlan_info;
  be32 srqn_uidx;
  be32 imm_inval_pkey;
  uint8_t app;
  uint8_t app_op;
  be16 app_info;
  be32 byte_cnt;  // RDMA read: bytes read (handle_good_req)
  be64 timestamp;
  be32 sop_drop_qpn;  // requester: the WQE's opcode: 8 | qpn: 24
  be16 wqe_counter;   // the WQEBB number (16-bit, wrapped) of the WQE this CQE completes
  uint8_t signature;
  uint8_t op_own;  // opcode: 4 | format: 2 | se: 1 | owner: 1 (mlx5dv_get_cqe_*)
};

// The same 64 bytes when op_own's opcode is MLX5_CQE_REQ_ERR or _RESP_ERR. mlx5dv.h declares srqn,
// s_wqe_opcode_qpn and wqe_counter as plain integers; cq.c reads them with be32toh / be16toh.
struct mlx5_err_cqe {
  uint8_t rsvd0[32];
  be32 srqn;
  uint8_t rsvd1[18];
  uint8_t vendor_err_synd;
  uint8_t syndrome;
  be32 s_wqe_opcode_qpn;  // the failed WQE's opcode: 8 | qpn: 24
  be16 wqe_counter;
  uint8_t signature;
  uint8_t op_own;
};

static_assert(sizeof(mlx5_cqe64) == 64 && sizeof(mlx5_err_cqe) == 64 &&
                  __builtin_offsetof(mlx5_cqe64, byte_cnt) == 44 &&
                  __builtin_offsetof(mlx5_cqe64, sop_drop_qpn) == 56 &&
                  __builtin_offsetof(mlx5_cqe64, wqe_counter) == 60 &&
                  __builtin_offsetof(mlx5_err_cqe, syndrome) == 55,
              "mlx5dv.h layout");

// The CQE's last 4 bytes, which a reader loads as one 32-bit word: the owner/opcode byte is written
// last, so this word is the CQE's commit point.
struct Mlx5CqeTail {
  be16 wqe_counter;
  uint8_t signature;
  uint8_t op_own;
};
inline constexpr uint32_t kMlx5CqeTailOffset = __builtin_offsetof(mlx5_cqe64, wqe_counter);
// The 4 bytes holding the error syndromes, likewise read as one word.
struct Mlx5CqeSyndromes {
  uint8_t rsvd[2];
  uint8_t vendor_err_synd;
  uint8_t syndrome;
};
inline constexpr uint32_t kMlx5CqeSyndromesOffset = __builtin_offsetof(mlx5_err_cqe, syndrome) - 3;
static_assert(sizeof(Mlx5CqeTail) == 4 && sizeof(Mlx5CqeSyndromes) == 4);

// mlx5dv_get_cqe_opcode / mlx5dv_get_cqe_owner, and the op_own byte they read
MORI_DEVICE uint8_t mlx5_cqe_opcode(uint8_t op_own) { return op_own >> 4; }
MORI_DEVICE uint8_t mlx5_cqe_owner(uint8_t op_own) { return op_own & MLX5_CQE_OWNER_MASK; }
MORI_DEVICE uint8_t mlx5_cqe_op_own(uint8_t opcode, uint8_t owner) {
  return static_cast<uint8_t>((opcode << 4) | (owner & MLX5_CQE_OWNER_MASK));
}

// The name of an error syndrome: ibv_wc_status_str of the status mlx5_handle_error_cqe maps it to,
// in mori's spelling (lower case; "work request flushed", "memory window bind error").
MORI_DEVICE const char* mlx5_syndrome_str(uint8_t syndrome) {
  switch (syndrome) {
    case MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR:
      return "local length error";
    case MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR:
      return "local QP operation error";
    case MLX5_CQE_SYNDROME_LOCAL_PROT_ERR:
      return "local protection error";
    case MLX5_CQE_SYNDROME_WR_FLUSH_ERR:
      return "work request flushed";
    case MLX5_CQE_SYNDROME_MW_BIND_ERR:
      return "memory window bind error";
    case MLX5_CQE_SYNDROME_BAD_RESP_ERR:
      return "bad response error";
    case MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR:
      return "local access error";
    case MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR:
      return "remote invalid request error";
    case MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR:
      return "remote access error";
    case MLX5_CQE_SYNDROME_REMOTE_OP_ERR:
      return "remote operation error";
    case MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR:
      return "transport retry counter exceeded";
    case MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR:
      return "RNR retry counter exceeded";
    case MLX5_CQE_SYNDROME_REMOTE_ABORTED_ERR:
      return "aborted error";
    default:
      return "general error";  // mlx5_handle_error_cqe: IBV_WC_GENERAL_ERR
  }
}

// The queue geometry the Mlx5 provider posts with and the runtime creates QPs for: one WQEBB per
// WQE, inline writes up to the inline WQE's data (28 bytes; the QPs' max_inline_data, so that
// rdma-core sizes their WQEs for it), 64-byte CQEs.
struct Mlx5Geometry {
  static constexpr uint32_t kWqeBytes = MLX5_SEND_WQE_BB;
  static constexpr uint32_t kMaxInlineBytes = sizeof(Mlx5InlineWqe::data);
  static constexpr uint32_t kCqeBytes = sizeof(mlx5_cqe64);
};

}  // namespace mori::provider
