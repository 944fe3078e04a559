// BNXT (Broadcom NetXtreme-E, bnxt_re) hardware layouts: the send WQE's segments, the requester
// completion, the doorbell and the MSN table entry, with rdma-core's names, widths and byte order,
// and the named accessors every other file reaches their bit fields through.
//
// Sources (linux-rdma/rdma-core, providers/bnxt_re/):
//   bnxt_re-abi.h  every struct, opcode, flag and status value, and every MASK/SHIFT enum below;
//                  BNXT_RE_WQE_MODE_*, BNXT_RE_FULL_FLAG_DELTA;
//   main.h         SEND_SGE_MIN_SLOTS, bnxt_re_get_sqe_hdr_sz, bnxt_re_is_cqe_valid,
//                  bnxt_re_change_cq_phase;
//   memory.h       bnxt_re_incr_tail / bnxt_re_incr_head (the epoch flips when an index wraps);
//   db.c           bnxt_re_init_db_hdr and bnxt_re_ring_db (the doorbell's packing and its store);
//   verbs.h        bnxt_re_update_msn_tbl;
//   verbs.c        variable WQE mode: bnxt_re_get_sq_slots (BNXT_VAR_MAX_SLOT_ALIGN),
//                  bnxt_re_alloc_queues (the doorbell counts slots, the MSN table's size).
// The phase of a CQ's first pass is the kernel's BNXT_QPLIB_QUEUE_START_PERIOD (Linux
// drivers/infiniband/hw/bnxt_re/qplib_fp.h), which bnxt_re_create_cq hands rdma-core as
// bnxt_re_cq_resp.phase.
#pragma once

#include <cstdint>

#include "mori/platform/macros.hpp"
#include "mori/provider/endian.hpp"

namespace mori::provider::bnxt {

// ---- constants (bnxt_re-abi.h unless noted) -----------------------------------------------------
enum bnxt_re_wr_opcode : uint8_t {
  BNXT_RE_WR_OPCD_SEND = 0x00,
  BNXT_RE_WR_OPCD_SEND_IMM = 0x01,
  BNXT_RE_WR_OPCD_SEND_INVAL = 0x02,
  BNXT_RE_WR_OPCD_RDMA_WRITE = 0x04,
  BNXT_RE_WR_OPCD_RDMA_WRITE_IMM = 0x05,
  BNXT_RE_WR_OPCD_RDMA_READ = 0x06,
  BNXT_RE_WR_OPCD_ATOMIC_CS = 0x08,
  BNXT_RE_WR_OPCD_ATOMIC_FA = 0x0B,
  BNXT_RE_WR_OPCD_LOC_INVAL = 0x0C,
  BNXT_RE_WR_OPCD_BIND = 0x0E,
  BNXT_RE_WR_OPCD_RECV = 0x80,
  BNXT_RE_WR_OPCD_INVAL = 0xFF
};

enum bnxt_re_wr_flags : uint8_t {
  BNXT_RE_WR_FLAGS_INLINE = 0x10,
  BNXT_RE_WR_FLAGS_SE = 0x08,
  BNXT_RE_WR_FLAGS_UC_FENCE = 0x04,  // what rdma-core sets for IBV_SEND_FENCE
  BNXT_RE_WR_FLAGS_RD_FENCE = 0x02,
  BNXT_RE_WR_FLAGS_SIGNALED = 0x01
};

enum bnxt_re_wc_type : uint8_t {
  BNXT_RE_WC_TYPE_SEND = 0x00,  // a requester (send queue) completion: bnxt_re_req_cqe
  BNXT_RE_WC_TYPE_RECV_RC = 0x01,
  BNXT_RE_WC_TYPE_RECV_UD = 0x02,
  BNXT_RE_WC_TYPE_RECV_RAW = 0x03,
  BNXT_RE_WC_TYPE_TERM = 0x0E,
  BNXT_RE_WC_TYPE_COFF = 0x0F
};

enum bnxt_re_req_wc_status : uint8_t {
  BNXT_RE_REQ_ST_OK = 0x00,
  BNXT_RE_REQ_ST_BAD_RESP = 0x01,
  BNXT_RE_REQ_ST_LOC_LEN = 0x02,
  BNXT_RE_REQ_ST_LOC_QP_OP = 0x03,
  BNXT_RE_REQ_ST_PROT = 0x04,
  BNXT_RE_REQ_ST_MEM_OP = 0x05,
  BNXT_RE_REQ_ST_REM_INVAL = 0x06,
  BNXT_RE_REQ_ST_REM_ACC = 0x07,
  BNXT_RE_REQ_ST_REM_OP = 0x08,
  BNXT_RE_REQ_ST_RNR_NAK_XCED = 0x09,
  BNXT_RE_REQ_ST_TRNSP_XCED = 0x0A,
  BNXT_RE_REQ_ST_WR_FLUSH = 0x0B
};

enum bnxt_re_hdr_offset : uint32_t {
  BNXT_RE_HDR_WT_MASK = 0xFF,
  BNXT_RE_HDR_FLAGS_MASK = 0xFF,
  BNXT_RE_HDR_FLAGS_SHIFT = 0x08,
  BNXT_RE_HDR_WS_MASK = 0xFF,
  BNXT_RE_HDR_WS_SHIFT = 0x10
};

enum bnxt_re_db_que_type : uint32_t {
  BNXT_RE_QUE_TYPE_SQ = 0x00,
  BNXT_RE_QUE_TYPE_RQ = 0x01,
  BNXT_RE_QUE_TYPE_SRQ = 0x02,
  BNXT_RE_QUE_TYPE_SRQ_ARM = 0x03,
  BNXT_RE_QUE_TYPE_CQ = 0x04,
  BNXT_RE_QUE_TYPE_CQ_ARMSE = 0x05,
  BNXT_RE_QUE_TYPE_CQ_ARMALL = 0x06,
  BNXT_RE_QUE_TYPE_CQ_ARMENA = 0x07,
  BNXT_RE_QUE_TYPE_SRQ_ARMENA = 0x08,
  BNXT_RE_QUE_TYPE_CQ_CUT_ACK = 0x09,
  BNXT_RE_PUSH_TYPE_START = 0x0C,
  BNXT_RE_PUSH_TYPE_END = 0x0D,
  BNXT_RE_QUE_TYPE_NULL = 0x0F
};

enum bnxt_re_db_mask : uint32_t {
  BNXT_RE_DB_INDX_MASK = 0xFFFFFFUL,
  BNXT_RE_DB_PILO_MASK = 0x0FFUL,
  BNXT_RE_DB_PILO_SHIFT = 0x18,
  BNXT_RE_DB_QID_MASK = 0xFFFFFUL,
  BNXT_RE_DB_PIHI_MASK = 0xF00UL,
  BNXT_RE_DB_PIHI_SHIFT = 0x0C,
  BNXT_RE_DB_TYP_MASK = 0x0FUL,
  BNXT_RE_DB_TYP_SHIFT = 0x1C,
  BNXT_RE_DB_VALID_SHIFT = 0x1A,
  BNXT_RE_DB_EPOCH_SHIFT = 0x18,
  BNXT_RE_DB_TOGGLE_SHIFT = 0x19,
};

enum bnxt_re_bcqe_mask : uint32_t {
  BNXT_RE_BCQE_PH_MASK = 0x01,
  BNXT_RE_BCQE_TYPE_MASK = 0x0F,
  BNXT_RE_BCQE_TYPE_SHIFT = 0x01,
  BNXT_RE_BCQE_RESIZE_TOG_MASK = 0x03,
  BNXT_RE_BCQE_RESIZE_TOG_SHIFT = 0x05,
  BNXT_RE_BCQE_STATUS_MASK = 0xFF,
  BNXT_RE_BCQE_STATUS_SHIFT = 0x08,
  BNXT_RE_BCQE_FLAGS_MASK = 0xFFFFU,
  BNXT_RE_BCQE_FLAGS_SHIFT = 0x10,
  BNXT_RE_BCQE_RWRID_MASK = 0xFFFFFU,
  BNXT_RE_BCQE_SRCQP_MASK = 0xFF,
  BNXT_RE_BCQE_SRCQP_SHIFT = 0x18
};

enum bnxt_re_msns_mask : uint64_t {
  BNXT_RE_SQ_MSN_SEARCH_START_PSN_MASK = 0xFFFFFFUL,
  BNXT_RE_SQ_MSN_SEARCH_START_PSN_SHIFT = 0,
  BNXT_RE_SQ_MSN_SEARCH_NEXT_PSN_MASK = 0xFFFFFF000000ULL,
  BNXT_RE_SQ_MSN_SEARCH_NEXT_PSN_SHIFT = 0x18,
  BNXT_RE_SQ_MSN_SEARCH_START_IDX_MASK = 0xFFFF000000000000ULL,
  BNXT_RE_SQ_MSN_SEARCH_START_IDX_SHIFT = 0x30
};

// How a QP's send WQEs are sized (bnxt_re-abi.h; the kernel answers bnxt_re_alloc_context with the
// mode, bnxt_re_uctx_resp.mode). Static (Thor, P5): every WQE takes 8 slots of 16 bytes. Variable
// (Thor2, P7): a WQE takes the slots it fills, its header's ws field says how many, and the
// doorbell, the MSN table's start_idx and an error CQE's con_indx count 16-byte slots.
enum bnxt_re_wqe_mode : uint32_t {
  BNXT_RE_WQE_MODE_STATIC = 0x00,
  BNXT_RE_WQE_MODE_VARIABLE = 0x01
};
// The send WQE header, bnxt_re_bsqe + bnxt_re_send (or the RDMA / atomic extension): 2 slots
// (bnxt_re_get_sqe_hdr_sz); with one SGE, or up to 16 bytes of inline data, a WQE fills 3
// (SEND_SGE_MIN_SLOTS, main.h; bnxt_re_required_slots rounds inline data up to whole slots).
inline constexpr uint32_t BNXT_RE_SQE_HDR_SLOTS = 2;
inline constexpr uint32_t SEND_SGE_MIN_SLOTS = 3;
// Variable mode sizes the SQ in slots, rounded up to a multiple of this (bnxt_re_get_sq_slots).
inline constexpr uint32_t BNXT_VAR_MAX_SLOT_ALIGN = 256;
// rdma-core's own queue-full test keeps this many WQEs (of the QP's largest size) free between
// producer and consumer, in both modes (bnxt_re_get_sqmem_size adds them to the ring, and
// bnxt_re_alloc_queues turns them into que->diff slots for bnxt_re_is_que_full). The kernel keeps
// no such gap for a variable-mode QP (drivers/infiniband/hw/bnxt_re/ib_verbs.c,
// bnxt_re_init_sq_attr: diff 0, and qplib_fp.h bnxt_qplib_queue_full tests only the WQE's own
// slots): it is the user library's margin, not a hardware rule, and mori does not keep it.
inline constexpr uint32_t BNXT_RE_FULL_FLAG_DELTA = 0x80;
// The phase bit a valid CQE carries on a CQ's first pass (kernel qplib_fp.h).
inline constexpr uint32_t BNXT_QPLIB_QUEUE_START_PERIOD = 0x01;

// ---- send WQE segments: each is one 16-byte slot ------------------------------------------------
// union lower_shdr: the header's second 8 bytes.
union lower_shdr {
  le64 qkey_len;    // send, RDMA write/read: the message length in bytes
  le64 lkey_plkey;  // memory-window bind
  le64 rva;         // atomics: the remote address
};

// Slot 0 of every send WQE. rsv_ws_fl_wt: wt 8 (opcode) | fl 8 (flags) << 8 | ws 8 (the WQE's
// size in 16-byte slots) << 16 | rsv 8.
struct bnxt_re_bsqe {
  le32 rsv_ws_fl_wt;
  union {
    be32 imm_data;
    le32 key_immd;  // atomics: the rkey
  };
  lower_shdr lhdr;
};

// Slot 1 of an RDMA write or read.
struct bnxt_re_rdma {
  le64 rva;
  le32 rkey;
  le32 rsvd2;
};

// Slot 1 of an atomic: swp_dt is the swap value (compare-swap) or the addend (fetch-add): the
// adapters read a fetch-add's operand from the swap-data field (rdma-core 61773a85f, "bnxt_re/lib:
// Fix fetch and add verification failure"; rdma-core 44 still wrote it to cmp_dt).
struct bnxt_re_atomic {
  le64 swp_dt;
  le64 cmp_dt;
};

// A scatter/gather element: slot 2 onwards.
struct bnxt_re_sge {
  le64 pa;
  le32 lkey;
  le32 length;
};

// ---- completion: a CQE is bnxt_re_req_cqe followed by bnxt_re_bcqe (bnxt_re_get_cqe_sz) ---------
struct bnxt_re_req_cqe {
  le64 qp_handle;
  // 16 bits valid. A success: the consumer index after the completed WQE, counted in WQEs in both
  // modes (rdma-core bnxt_re_poll_success_scqe and the kernel's bnxt_qplib_cq_process_req compare
  // it, modulo the SQ's size, with a shadow index that advances by one per WQE). An error in
  // variable mode: the failed WQE's first slot (the kernel's bnxt_qplib_get_cqe_sq_cons, "RDMA/
  // bnxt_re: Get the WQE index from slot index while completing the WQEs").
  le32 con_indx;
  le32 rsvd1;
  le64 rsvd2;
};

// flg_st_typ_ph: ph 1 | typ 4 << 1 | (resize toggle 2 << 5) | status 8 << 8 | flags 16 << 16.
struct bnxt_re_bcqe {
  le32 flg_st_typ_ph;
  le32 qphi_rwrid;
};

// ---- doorbell and MSN table ---------------------------------------------------------------------
// indx: index 24 | epoch 1 << 24 | toggle 1 << 25. typ_qid: qid 20 | valid 1 << 26 | typ 4 << 28.
struct bnxt_re_db_hdr {
  le32 indx;
  le32 typ_qid;
};

// sq_msn_search: start_psn 24 | next_psn 24 << 24 | start_idx 16 << 48.
struct bnxt_re_msns {
  le64 start_idx_next_psn_start_psn;
};

static_assert(sizeof(bnxt_re_bsqe) == 16 && sizeof(bnxt_re_rdma) == 16 &&
                  sizeof(bnxt_re_atomic) == 16 && sizeof(bnxt_re_sge) == 16,
              "each send WQE segment is one 16-byte slot (bnxt_re-abi.h)");
static_assert(sizeof(bnxt_re_req_cqe) == 24 && sizeof(bnxt_re_bcqe) == 8,
              "a requester CQE is 24 + 8 bytes (bnxt_re_get_cqe_sz)");
static_assert(sizeof(bnxt_re_db_hdr) == 8 && sizeof(bnxt_re_msns) == 8,
              "the doorbell and an MSN entry are one 64-bit word each");

// ---- named accessors ----------------------------------------------------------------------------
// The base header's first word (bnxt_re_set_hdr_flags). ws counts 16-byte slots actually used.
MORI_DEVICE constexpr uint32_t bsqe_rsv_ws_fl_wt(uint32_t wt, uint32_t fl, uint32_t ws) {
  return (wt & BNXT_RE_HDR_WT_MASK) | (fl & BNXT_RE_HDR_FLAGS_MASK) << BNXT_RE_HDR_FLAGS_SHIFT |
         (ws & BNXT_RE_HDR_WS_MASK) << BNXT_RE_HDR_WS_SHIFT;
}
MORI_DEVICE uint32_t bsqe_opcode(const bnxt_re_bsqe& h) {
  return h.rsv_ws_fl_wt.get() & BNXT_RE_HDR_WT_MASK;
}
MORI_DEVICE uint32_t bsqe_flags(const bnxt_re_bsqe& h) {
  return h.rsv_ws_fl_wt.get() >> BNXT_RE_HDR_FLAGS_SHIFT & BNXT_RE_HDR_FLAGS_MASK;
}
MORI_DEVICE uint32_t bsqe_slots(const bnxt_re_bsqe& h) {
  return h.rsv_ws_fl_wt.get() >> BNXT_RE_HDR_WS_SHIFT & BNXT_RE_HDR_WS_MASK;
}

// The one doorbell constructor, as db.c's bnxt_re_init_db_hdr: `indx` already carries the epoch
// (db_indx, db_index_epoch); toggle is 0 for SQ and CQ doorbells (only arm doorbells set it).
MORI_DEVICE bnxt_re_db_hdr bnxt_re_init_db_hdr(uint32_t indx, uint32_t qid, uint32_t toggle,
                                               uint32_t typ) {
  return {
      le32::from(indx | toggle << BNXT_RE_DB_TOGGLE_SHIFT),
      le32::from((qid & BNXT_RE_DB_QID_MASK) | (typ & BNXT_RE_DB_TYP_MASK) << BNXT_RE_DB_TYP_SHIFT |
                 1u << BNXT_RE_DB_VALID_SHIFT)};
}
// A doorbell's indx field: a ring position (below 2^24) and the epoch bit, the parity of the ring's
// completed passes, which rdma-core keeps as BNXT_RE_FLAG_EPOCH_TAIL/HEAD and flips on every wrap
// (memory.h, bnxt_re_incr_tail). The epoch tells a full ring from an empty one when the position
// alone repeats.
MORI_DEVICE constexpr uint32_t db_indx(uint32_t position, uint32_t epoch) {
  return (position & BNXT_RE_DB_INDX_MASK) | (epoch & 1u) << BNXT_RE_DB_EPOCH_SHIFT;
}
// The same for a monotonic 64-bit index over a ring of `entries` (a power of two below 2^24).
MORI_DEVICE uint32_t db_index_epoch(uint64_t index, uint32_t entries) {
  return db_indx(static_cast<uint32_t>(index & (entries - 1)), (index & entries) != 0 ? 1u : 0u);
}
// The 64-bit value bnxt_re_ring_db stores: indx in the low half, typ_qid in the high half.
MORI_DEVICE uint64_t db_hdr_value(const bnxt_re_db_hdr& h) {
  return uint64_t{h.typ_qid.get()} << 32 | h.indx.get();
}
MORI_DEVICE bnxt_re_db_hdr db_hdr_from_value(uint64_t v) {
  return {le32::from(static_cast<uint32_t>(v)), le32::from(static_cast<uint32_t>(v >> 32))};
}
MORI_DEVICE uint32_t db_index(const bnxt_re_db_hdr& h) {
  return h.indx.get() & BNXT_RE_DB_INDX_MASK;
}
MORI_DEVICE uint32_t db_epoch(const bnxt_re_db_hdr& h) {
  return h.indx.get() >> BNXT_RE_DB_EPOCH_SHIFT & 1u;
}
MORI_DEVICE uint32_t db_qid(const bnxt_re_db_hdr& h) {
  return h.typ_qid.get() & BNXT_RE_DB_QID_MASK;
}
MORI_DEVICE uint32_t db_type(const bnxt_re_db_hdr& h) {
  return h.typ_qid.get() >> BNXT_RE_DB_TYP_SHIFT & BNXT_RE_DB_TYP_MASK;
}
MORI_DEVICE bool db_valid(const bnxt_re_db_hdr& h) {
  return (h.typ_qid.get() >> BNXT_RE_DB_VALID_SHIFT & 1u) != 0;
}

// flg_st_typ_ph from its parts (what the NIC writes), and its parts (bnxt_re_poll_one).
MORI_DEVICE constexpr uint32_t bcqe_flg_st_typ_ph(uint32_t status, uint32_t type, uint32_t ph) {
  return (ph & BNXT_RE_BCQE_PH_MASK) | (type & BNXT_RE_BCQE_TYPE_MASK) << BNXT_RE_BCQE_TYPE_SHIFT |
         (status & BNXT_RE_BCQE_STATUS_MASK) << BNXT_RE_BCQE_STATUS_SHIFT;
}
MORI_DEVICE uint32_t bcqe_phase(uint32_t flg_st_typ_ph) {
  return flg_st_typ_ph & BNXT_RE_BCQE_PH_MASK;
}
MORI_DEVICE uint32_t bcqe_type(uint32_t flg_st_typ_ph) {
  return flg_st_typ_ph >> BNXT_RE_BCQE_TYPE_SHIFT & BNXT_RE_BCQE_TYPE_MASK;
}
MORI_DEVICE uint32_t bcqe_status(uint32_t flg_st_typ_ph) {
  return flg_st_typ_ph >> BNXT_RE_BCQE_STATUS_SHIFT & BNXT_RE_BCQE_STATUS_MASK;
}
// The phase a valid CQE carries at CQ position `consumed` (monotonic): the start period, flipped on
// every pass over the ring (bnxt_re_change_cq_phase). `entries` is a power of two.
MORI_DEVICE uint32_t cq_phase(uint64_t consumed, uint32_t entries) {
  return BNXT_QPLIB_QUEUE_START_PERIOD ^ ((consumed & entries) != 0 ? 1u : 0u);
}

// verbs.h bnxt_re_update_msn_tbl: the MSN entry of the WQE whose first slot is st_idx (in
// variable mode; its WQE index in static mode).
MORI_DEVICE le64 bnxt_re_update_msn_tbl(uint32_t st_idx, uint32_t npsn, uint32_t start_psn) {
  return le64::from((uint64_t{st_idx} << BNXT_RE_SQ_MSN_SEARCH_START_IDX_SHIFT &
                     BNXT_RE_SQ_MSN_SEARCH_START_IDX_MASK) |
                    (uint64_t{npsn} << BNXT_RE_SQ_MSN_SEARCH_NEXT_PSN_SHIFT &
                     BNXT_RE_SQ_MSN_SEARCH_NEXT_PSN_MASK) |
                    (uint64_t{start_psn} << BNXT_RE_SQ_MSN_SEARCH_START_PSN_SHIFT &
                     BNXT_RE_SQ_MSN_SEARCH_START_PSN_MASK));
}

// The MSN table's entries for an SQ of `slots` 16-byte slots in variable mode: half the power of
// two at or above the slot count (bnxt_re_alloc_queues, msn_tbl_sz; the kernel's
// bnxt_qplib_create_qp sizes the table it maps the same way). rdma-core indexes it with a message
// count that starts at 0 and wraps at this size (que->msn, bnxt_re_fill_psns_for_msntbl).
constexpr uint64_t var_msn_tbl_sz(uint64_t slots) {
  uint64_t p = 1;
  while (p < slots) p <<= 1;
  return p / 2;
}

// The name of a bnxt_re_req_wc_status (0x00..0x0B, in order), after the ibv_wc_status that
// bnxt_re_to_ibv_wc_status (main.h) maps it to.
MORI_DEVICE const char* req_status_text(uint32_t status) {
  constexpr const char* kNames[] = {"success",
                                    "bad response",
                                    "local length",
                                    "local QP operation",
                                    "local protection",
                                    "memory window bind",
                                    "remote invalid request",
                                    "remote access",
                                    "remote operation",
                                    "RNR NAK retry count exceeded",
                                    "transport retry count exceeded",
                                    "work request flushed"};
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == BNXT_RE_REQ_ST_WR_FLUSH + 1,
                "one name per bnxt_re_req_wc_status");
  return status <= BNXT_RE_REQ_ST_WR_FLUSH ? kNames[status] : "unknown status";
}

}  // namespace mori::provider::bnxt

namespace mori::provider {
// The queue geometry the Bnxt provider posts with and the runtime creates QPs for. Every WQE takes
// a fixed 3 slots of 16 bytes (ROCm/mori bnxt.cpp, BNXT_RE_NUM_SLOT_PER_WQE): header, extension, and one SGE or one slot of inline data (so
// inline writes up to 16 bytes, the QPs' max_inline_data); a CQE is 32 bytes; the MSN table after
// the slots has 8-byte entries (sq_psn_sz). The deepest ring is 16384 WQEs: an error CQE's 16-bit
// con_indx must name each of the 3W slots.
struct BnxtGeometry {
  static constexpr uint32_t kSlotBytes = sizeof(bnxt::bnxt_re_sge);  // the SQ's stride
  static constexpr uint32_t kWqeSlots = bnxt::SEND_SGE_MIN_SLOTS;
  static constexpr uint32_t kWqeBytes = kWqeSlots * kSlotBytes;
  static constexpr uint32_t kMaxInlineBytes =
      (kWqeSlots - bnxt::BNXT_RE_SQE_HDR_SLOTS) * kSlotBytes;
  static constexpr uint32_t kCqeBytes = sizeof(bnxt::bnxt_re_req_cqe) + sizeof(bnxt::bnxt_re_bcqe);
  static constexpr uint32_t kMsnEntryBytes = sizeof(bnxt::bnxt_re_msns);
  static constexpr uint32_t kMaxSqWqes = 16384;
};
}  // namespace mori::provider
