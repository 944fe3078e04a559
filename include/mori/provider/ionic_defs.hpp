// Hardware layouts of the AMD Pensando Ionic RDMA NIC (the provider is `Ionic`,
// provider/ionic.hpp): the send WQE, the CQE, the doorbell value and the completion status names.
//
// Sources (rdma-core, linux-rdma/rdma-core at 691953d8):
//   providers/ionic/ionic_fw_types.h (8a6fdc2a)  ionic_sge, ionic_v1_base_hdr, ionic_v1_common_bdy,
//       ionic_v2_atomic_bdy, ionic_v1_wqe, ionic_v1_cqe, enum ionic_v1_op (flags), ionic_v2_op,
//       ionic_status, ionic_v1_cqe_qtf_bits
//   providers/ionic/ionic_fw.h (6d82ac7b)      ionic_v1_cqe_color/_error/_qtf*, ionic_to_ibv_status
//   providers/ionic/ionic_queue.h (6d82ac7b)   IONIC_QID_MASK, IONIC_DBELL_QID_SHIFT,
//       ionic_queue_dbell_init / ionic_queue_dbell_val, ionic_color_wrap
//   libibverbs/enum_strs.c                      ibv_wc_status_str: the status texts
// Names, widths and byte order are the vendor's; each field's endianness is part of its type.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mori/platform/macros.hpp"
#include "mori/provider/endian.hpp"

namespace mori::provider {

// ---- send WQE (ionic_fw_types.h) ----------------------------------------------------------------

// wqe scatter gather element
struct ionic_sge {
  be64 va;
  be32 len;
  be32 lkey;
};

// v1 base wqe header
struct ionic_v1_base_hdr {
  le64 wqe_idx;         // echoed (low 16 bits) by NPG completions; mori writes the 64-bit SQ index
  uint8_t op;           // enum ionic_v2_op on this device generation (Ionic's header explains why)
  uint8_t num_sge_key;  // SGEs in the payload; 0 for inline data
  be16 flags;           // IONIC_V1_FLAG_*
  be32 imm_data_key;
};

// data payload part of v1 wqe
union ionic_v1_pld {
  ionic_sge sgl[2];
  be32 spec32[8];
  be16 spec16[16];
  uint8_t data[32];  // inline data: the whole payload, hence kMaxInlineBytes = 32
};

// v1 send/rdma wqe body (common, has sgl); rdma-core's `send` arm of the union (UD) is omitted
struct ionic_v1_common_bdy {
  struct {
    be32 remote_va_high;
    be32 remote_va_low;
    be32 remote_rkey;
  } rdma;
  be32 length;  // total message bytes: <= 2^31 (ionic_v1_prep_pld: "greater than 2GB is invalid")
  ionic_v1_pld pld;
};

// v2 atomic wqe body: no length field, so every atomic is 8 bytes (ionic_v1_prep_atomic rejects
// any other sg length)
struct ionic_v2_atomic_bdy {
  be32 remote_va_high;
  be32 remote_va_low;
  be32 remote_rkey;
  be32 swap_add_high;  // compare-swap: the swap value; fetch-add: the addend
  be32 swap_add_low;
  be32 compare_high;
  be32 compare_low;
  be32 lkey;  // lkey and local_va: where the old value lands
  be64 local_va;
  uint8_t rsvd_expdb[8];
};

// v1 send wqe. The recv, v1 atomic and bind_mw arms of rdma-core's union are omitted: the engine
// posts none of them.
struct ionic_v1_wqe {
  ionic_v1_base_hdr base;
  union {
    ionic_v1_common_bdy common;
    ionic_v2_atomic_bdy atomic_v2;
  };
};

// enum ionic_v1_op, its flag bits (be16 base.flags)
enum : uint16_t {
  IONIC_V1_FLAG_FENCE = 1u << 0,  // start after earlier reads and atomics completed
  IONIC_V1_FLAG_SOL = 1u << 1,
  IONIC_V1_FLAG_INL = 1u << 2,    // payload is inline data
  IONIC_V1_FLAG_SIG = 1u << 3,    // write a completion for this request
  IONIC_V1_FLAG_COLOR = 1u << 4,  // the SQ pass: set on even passes (qp->sq.color starts true)
  IONIC_V1_FLAG_SPEC32 = 1u << 12,
  IONIC_V1_FLAG_SPEC16 = 2u << 12,
};

// queue pair v2 send opcodes
enum ionic_v2_op : uint8_t {
  IONIC_V2_OPSL_OUT = 0x20,
  IONIC_V2_OP_RDMA_WRITE = 0x1 | IONIC_V2_OPSL_OUT,
  IONIC_V2_OP_RDMA_READ = 0x2,
  IONIC_V2_OP_ATOMIC_CS = 0x4,
  IONIC_V2_OP_ATOMIC_FA = 0x5,
};

static_assert(sizeof(ionic_v1_base_hdr) == 16 && sizeof(ionic_v1_pld) == 32);
static_assert(offsetof(ionic_v1_wqe, common.pld) == 32 && sizeof(ionic_v1_wqe) == 64,
              "ionic_v1_wqe: 16-byte header, 48-byte body (ionic_v1_send_wqe_min_size)");
static_assert(offsetof(ionic_v1_wqe, atomic_v2.local_va) == 48);

// ---- CQE (ionic_fw_types.h, ionic_fw.h) ---------------------------------------------------------

// completion queue v1 cqe, send arm (the recv arm is omitted: the engine posts no receives)
struct ionic_v1_cqe {
  struct {
    uint8_t rsvd[4];
    be32 msg_msn;  // SEND_MSN: messages completed on the QP, 24 bits (IB MSN width; rocSHMEM's
                   // ionic_quiet_internal compares it as a 24-bit field)
    uint8_t rsvd2[8];
    le64 npg_wqe_idx_timestamp;  // bits 0..15: the WQE's base.wqe_idx; 16..63: timestamp
  } send;
  be32 status_length;   // enum ionic_status when IONIC_V1_CQE_ERROR is set, else a length
  be32 qid_type_flags;  // qid: 24 | type: 3 | 2 unused | error: 1 | color: 1; written last by NIC
};
static_assert(sizeof(ionic_v1_cqe) == 32 && offsetof(ionic_v1_cqe, qid_type_flags) == 28);

// The queue geometry the Ionic provider posts with and the runtime creates QPs for: 64-byte SQ
// entries with a 32-byte inline payload (QPs of max_inline_data 32 and one SGE, for which
// rdma-core's ionic provider makes 64-byte entries: ionic_v1_send_wqe_min_size; the export refuses
// any other size), 32-byte CQEs.
struct IonicGeometry {
  static constexpr uint32_t kWqeBytes = sizeof(ionic_v1_wqe);
  static constexpr uint32_t kMaxInlineBytes = sizeof(ionic_v1_pld::data);
  static constexpr uint32_t kCqeBytes = sizeof(ionic_v1_cqe);
};

// bits for cqe wqe_idx and timestamp; msn width (see msg_msn)
enum : uint32_t { IONIC_V1_CQE_WQE_IDX_MASK = 0xffff, IONIC_V1_CQE_MSN_MASK = 0xffffff };

// bits for cqe qid_type_flags
enum ionic_v1_cqe_qtf_bits : uint32_t {
  IONIC_V1_CQE_COLOR = 1u << 0,
  IONIC_V1_CQE_ERROR = 1u << 1,
  IONIC_V1_CQE_TYPE_SHIFT = 5,
  IONIC_V1_CQE_TYPE_MASK = 0x7,
  IONIC_V1_CQE_QID_SHIFT = 8,
  IONIC_V1_CQE_TYPE_RECV = 1,
  IONIC_V1_CQE_TYPE_SEND_MSN = 2,  // remote completion: every message before msg_msn is done
  IONIC_V1_CQE_TYPE_SEND_NPG = 3,  // local completion of the WQE named by npg_wqe_idx
};

// cqe status indicated in status_length field when err bit is set
enum ionic_status : uint32_t {
  IONIC_STS_OK,
  IONIC_STS_LOCAL_LEN_ERR,
  IONIC_STS_LOCAL_QP_OPER_ERR,
  IONIC_STS_LOCAL_PROT_ERR,
  IONIC_STS_WQE_FLUSHED_ERR,
  IONIC_STS_MEM_MGMT_OPER_ERR,
  IONIC_STS_BAD_RESP_ERR,
  IONIC_STS_LOCAL_ACC_ERR,
  IONIC_STS_REMOTE_INV_REQ_ERR,
  IONIC_STS_REMOTE_ACC_ERR,
  IONIC_STS_REMOTE_OPER_ERR,
  IONIC_STS_RETRY_EXCEEDED,
  IONIC_STS_RNR_RETRY_EXCEEDED,
  IONIC_STS_XRC_VIO_ERR,
};

// The CQE accessors of ionic_fw.h, on the host-order qid_type_flags word.
MORI_DEVICE uint32_t ionic_v1_cqe_qtf(const ionic_v1_cqe& cqe) { return cqe.qid_type_flags.get(); }
MORI_DEVICE bool ionic_v1_cqe_color(uint32_t qtf) { return qtf & IONIC_V1_CQE_COLOR; }
MORI_DEVICE bool ionic_v1_cqe_error(uint32_t qtf) { return qtf & IONIC_V1_CQE_ERROR; }
MORI_DEVICE uint8_t ionic_v1_cqe_qtf_type(uint32_t qtf) {
  return (qtf >> IONIC_V1_CQE_TYPE_SHIFT) & IONIC_V1_CQE_TYPE_MASK;
}
MORI_DEVICE uint32_t ionic_v1_cqe_qtf_qid(uint32_t qtf) { return qtf >> IONIC_V1_CQE_QID_SHIFT; }
MORI_DEVICE uint32_t ionic_v1_cqe_qtf_make(uint32_t qid, uint8_t type, bool error, bool color) {
  return (qid << IONIC_V1_CQE_QID_SHIFT) | (uint32_t{type} << IONIC_V1_CQE_TYPE_SHIFT) |
         (error ? IONIC_V1_CQE_ERROR : 0u) | (color ? IONIC_V1_CQE_COLOR : 0u);
}

// The color of ring position `pos` (a 64-bit count) in a ring of `depth` entries (a power of two):
// true on passes 0, 2, 4, ... -- ionic_color_wrap flips it each time the position wraps to 0, from
// true (qp->sq.color and cq->color start true; a fresh, zeroed CQ therefore reads as empty).
MORI_DEVICE bool ionic_color(uint64_t pos, uint32_t depth) { return (pos & depth) == 0; }

// ---- doorbell (ionic_queue.h) -------------------------------------------------------------------

inline constexpr uint64_t IONIC_QID_MASK = (uint64_t{1} << 24) - 1;
inline constexpr int IONIC_DBELL_QID_SHIFT = 24;
inline constexpr uint64_t IONIC_DBELL_POS_MASK = 0xffff;  // below IONIC_DBELL_RING_ARM (bit 16)

// The doorbell value for queue `qid` whose producer (SQ) or consumer (CQ) position is the 64-bit
// count `pos` in a ring of `depth` entries (a power of two, <= 65536): ionic_queue_dbell_init's
// qid << 24, or'ed with the position wrapped to the ring as ionic_queue_dbell_val does. Written
// little-endian to the queue type's register, dbpage[qtype] (ionic_dbell_ring).
MORI_DEVICE uint64_t ionic_dbell_val(uint32_t qid, uint64_t pos, uint32_t depth) {
  return ((uint64_t{qid} & IONIC_QID_MASK) << IONIC_DBELL_QID_SHIFT) | (pos & (depth - 1));
}
MORI_DEVICE uint32_t ionic_dbell_qid(uint64_t val) {
  return static_cast<uint32_t>((val >> IONIC_DBELL_QID_SHIFT) & IONIC_QID_MASK);
}
MORI_DEVICE uint32_t ionic_dbell_pos(uint64_t val) {
  return static_cast<uint32_t>(val & IONIC_DBELL_POS_MASK);
}

// ---- status names -------------------------------------------------------------------------------

// mori's own codes for CQEs that carry no ionic_status: outside the enum's range.
enum : uint32_t {
  IONIC_MORI_STS_UNEXPECTED_CQE = 0x100,  // not a send completion of this QP
  IONIC_MORI_STS_UNPOSTED_WQE = 0x101,    // names a WQE the engine has not reserved
};

// ibv_wc_status_str(ionic_to_ibv_status(sts)): the words rdma-core users see (lower case).
MORI_DEVICE const char* ionic_status_str(uint32_t sts) {
  switch (sts) {
    case IONIC_STS_OK:
      return "success";
    case IONIC_STS_LOCAL_LEN_ERR:
      return "local length error";
    case IONIC_STS_LOCAL_QP_OPER_ERR:
      return "local QP operation error";
    case IONIC_STS_LOCAL_PROT_ERR:
      return "local protection error";
    case IONIC_STS_WQE_FLUSHED_ERR:
      return "work request flushed";   // libibverbs: "Work Request Flushed Error"
    case IONIC_STS_MEM_MGMT_OPER_ERR:  // IBV_WC_MW_BIND_ERR
      return "memory management operation error";
    case IONIC_STS_BAD_RESP_ERR:
      return "bad response error";
    case IONIC_STS_LOCAL_ACC_ERR:
      return "local access error";
    case IONIC_STS_REMOTE_INV_REQ_ERR:
      return "remote invalid request error";
    case IONIC_STS_REMOTE_ACC_ERR:
      return "remote access error";
    case IONIC_STS_REMOTE_OPER_ERR:
      return "remote operation error";
    case IONIC_STS_RETRY_EXCEEDED:
      return "transport retry counter exceeded";
    case IONIC_STS_RNR_RETRY_EXCEEDED:
      return "RNR retry counter exceeded";
    case IONIC_MORI_STS_UNEXPECTED_CQE:
      return "unexpected completion (not a send completion of this queue pair)";
    case IONIC_MORI_STS_UNPOSTED_WQE:
      return "completion for a WQE that was never posted";
    default:  // IONIC_STS_XRC_VIO_ERR and unknown values: IBV_WC_GENERAL_ERR
      return "general error";
  }
}

}  // namespace mori::provider
