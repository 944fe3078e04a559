// Golden bytes of BNXT variable WQE mode (Thor2, BNXT_RE P7), written out by hand from rdma-core's
// providers/bnxt_re (linux-rdma/rdma-core) and, for an error CQE, the kernel's bnxt_re. Neither
// provider::Bnxt nor the software NIC's codec produced them: test_provider_bnxt.cpp holds the
// writer (and poll_cq) to them, test_softnic_bnxt.cpp the decoder (and the CQE writer).
//
// Layouts (bnxt_re-abi.h): bnxt_re_bsqe {rsv_ws_fl_wt: wt 8 | fl 8 | ws 8 | rsv 8; key_immd;
// lhdr 8 bytes}, bnxt_re_rdma {rva, rkey, rsvd}, bnxt_re_atomic {swp_dt, cmp_dt}, bnxt_re_sge {pa,
// lkey, length}, bnxt_re_db_hdr {indx: index 24 | epoch << 24; typ_qid: qid 20 | valid << 26 |
// typ << 28}, bnxt_re_msns {start_psn 24 | next_psn 24 << 24 | start_idx 16 << 48},
// bnxt_re_req_cqe {qp_handle, con_indx, rsvd1, rsvd2} + bnxt_re_bcqe {flg_st_typ_ph: ph 1 |
// typ 4 << 1 | status 8 << 8; qphi_rwrid}. Every field is little-endian.
#pragma once

#include <cstdint>

namespace mori::test::bnxt_golden {

// The work request behind the WQEs.
constexpr uint64_t kRemoteAddr = 0x7F00112233445560ull;
constexpr uint32_t kRkey = 0xA1B2C3D4u;
constexpr uint64_t kLocalAddr = 0x0000556677889900ull;
constexpr uint32_t kLkey = 0x01020304u;
constexpr uint32_t kWriteBytes = 0x12345u;
constexpr uint64_t kAddend = 0x0102030405060708ull;
constexpr uint8_t kInlineData[5] = {0x11, 0x22, 0x33, 0x44, 0x55};

// A signalled RDMA write of kWriteBytes from one SGE: 3 slots (bnxt_re_required_slots:
// bnxt_re_calc_wqe_sz(1) = 16 + 32 bytes). verbs.c bnxt_re_post_send: header
// (bnxt_re_set_hdr_flags: wt RDMA_WRITE 0x04, fl SIGNALED 0x01, ws 3; lhdr.qkey_len = the byte
// count), slot 1 the bnxt_re_rdma extension (rva, rkey), slot 2 the SGE (bnxt_re_put_tx_sge).
constexpr uint8_t kRdmaWriteWqe[48] = {
    0x04, 0x01, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00,  // wt fl ws rsv | key_immd 0
    0x45, 0x23, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00,  // lhdr.qkey_len = 0x12345
    0x60, 0x55, 0x44, 0x33, 0x22, 0x11, 0x00, 0x7F,  // rva
    0xD4, 0xC3, 0xB2, 0xA1, 0x00, 0x00, 0x00, 0x00,  // rkey | rsvd2
    0x00, 0x99, 0x88, 0x77, 0x66, 0x55, 0x00, 0x00,  // sge.pa
    0x04, 0x03, 0x02, 0x01, 0x45, 0x23, 0x01, 0x00,  // sge.lkey | sge.length
};

// A signalled inline RDMA write of kInlineData: fl SIGNALED | INLINE (0x11), ws 3 (the 5 bytes
// round up to one slot: bnxt_re_required_slots), lhdr.qkey_len 5, the data from slot 2
// (bnxt_re_put_inline). rdma-core leaves the slot's other 11 bytes as they were; the NIC reads only
// qkey_len of them, and mori's writer zeroes them.
constexpr uint8_t kInlineWrite5Wqe[48] = {
    0x04, 0x11, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00,  // wt fl ws rsv | key_immd 0
    0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // lhdr.qkey_len = 5
    0x60, 0x55, 0x44, 0x33, 0x22, 0x11, 0x00, 0x7F,  // rva
    0xD4, 0xC3, 0xB2, 0xA1, 0x00, 0x00, 0x00, 0x00,  // rkey | rsvd2
    0x11, 0x22, 0x33, 0x44, 0x55, 0x00, 0x00, 0x00,  // the data, then padding
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
};

// A signalled 64-bit fetch-add of kAddend at kRemoteAddr, the old value to kLocalAddr: wt
// ATOMIC_FA 0x0B, ws 3; bnxt_re_build_fna_sqe puts the rkey in key_immd and the remote address in
// lhdr (the union's rva, over the qkey_len bnxt_re_post_send wrote), the addend in
// bnxt_re_atomic.swp_dt; cmp_dt, which a fetch-add does not use, is left alone by rdma-core and
// written as zero by mori. The SGE: 8 bytes.
constexpr uint8_t kFetchAddWqe[48] = {
    0x0B, 0x01, 0x03, 0x00, 0xD4, 0xC3, 0xB2, 0xA1,  // wt fl ws rsv | key_immd = rkey
    0x60, 0x55, 0x44, 0x33, 0x22, 0x11, 0x00, 0x7F,  // lhdr.rva
    0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,  // swp_dt = the addend
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // cmp_dt
    0x00, 0x99, 0x88, 0x77, 0x66, 0x55, 0x00, 0x00,  // sge.pa
    0x04, 0x03, 0x02, 0x01, 0x08, 0x00, 0x00, 0x00,  // sge.lkey | sge.length = 8
};

// The QP of the queue vectors below: W = 16 WQEs of 3 slots, 48 slots (bnxt_re_get_sq_slots in
// variable mode counts the ring in slots), qid 0x1234.
constexpr uint32_t kSqWqes = 16;
constexpr uint32_t kQpn = 0x1234;

// SQ doorbells (db.c bnxt_re_ring_sq_db: indx = *dbtail | epoch, where variable mode's dbtail is
// que->tail, the producer's slot index, and the epoch flips when bnxt_re_incr_tail wraps it; typ SQ
// 0, valid, qid; bnxt_re_ring_db stores the 8 bytes as one little-endian word).
// After WQEs 0..15, the first wrap: slot 0, epoch 1.
constexpr uint64_t kDoorbellAfter16 = 0x04001234'01000000ull;
constexpr uint8_t kDoorbellAfter16Bytes[8] = {0x00, 0x00, 0x00, 0x01, 0x34, 0x12, 0x00, 0x04};
// After WQEs 0..20: 21 WQEs are 63 slots, one wrap of 48, slot 15, epoch 1.
constexpr uint64_t kDoorbellAfter21 = 0x04001234'0100000Full;
constexpr uint8_t kDoorbellAfter21Bytes[8] = {0x0F, 0x00, 0x00, 0x01, 0x34, 0x12, 0x00, 0x04};
// After WQEs 0..46: 141 slots, two wraps, slot 45, epoch 0 again.
constexpr uint64_t kDoorbellAfter47 = 0x04001234'0000002Dull;

// The MSN entry of WQE 21 (verbs.c bnxt_re_fill_psns_for_msntbl, verbs.h bnxt_re_update_msn_tbl):
// the table follows the 48 slots (que->pad, at byte 768) and has roundup_pow_of_two(48) / 2 = 32
// entries (bnxt_re_alloc_queues, msn_tbl_sz); the WQE is message 21 (que->msn counts WQEs from 0,
// modulo 32), so its entry is the 22nd, at byte 768 + 21 * 8 = 936. start_idx is the WQE's first
// slot, *dbtail before the WQE: 21 * 3 mod 48 = 15. Its 3 packets start at PSN 0xFFFFFE and end
// before 0x000001 (the next PSN masked to 24 bits by the table's field).
constexpr uint32_t kMsnWqe = 21;
constexpr uint64_t kMsnOffset = 936;
constexpr uint32_t kMsnStartPsn = 0xFFFFFE, kMsnPackets = 3;
constexpr uint8_t kMsnEntry21[8] = {0xFE, 0xFF, 0xFF, 0x01, 0x00, 0x00, 0x0F, 0x00};

// Requester CQEs, on the CQ's first pass (phase 1, BNXT_QPLIB_QUEUE_START_PERIOD), type SEND 0. The
// software NIC's qp_handle is the QP number.
// WQE 21 completed: con_indx 22, the WQEs consumed so far (bnxt_re_poll_success_scqe compares it,
// modulo the SQ's size in slots, 48, with its one-per-WQE shadow index).
constexpr uint8_t kCqeSuccess21[32] = {
    0x34, 0x12, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // qp_handle
    0x16, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // con_indx = 22 | rsvd1
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // rsvd2
    0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // flg_st_typ_ph: ph 1 | qphi_rwrid
};
// WQE 50 completed: 51 WQEs, modulo 48 slots, con_indx 3.
constexpr uint8_t kCqeSuccess50ConIndx[4] = {0x03, 0x00, 0x00, 0x00};
// WQE 21 failed with a remote access error (status 0x07): con_indx is its first slot, 15 (the
// kernel's bnxt_qplib_cq_process_req, for an error CQE of a variable-mode QP, looks the slot up
// among its outstanding WQEs' slot_idx, bnxt_qplib_get_cqe_sq_cons).
constexpr uint8_t kCqeError21[32] = {
    0x34, 0x12, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // qp_handle
    0x0F, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // con_indx = slot 15 | rsvd1
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // rsvd2
    0x01, 0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // ph 1, status 0x07 << 8 | qphi_rwrid
};

}  // namespace mori::test::bnxt_golden
