// The MLX5 provider's bytes held to rdma-core's own structs and helpers (mlx5dv.h, header-only
// here): WQEs, the doorbell, atomic results and the CQE syndromes poll_cq names.
#include <doctest/doctest.h>
#include <infiniband/mlx5dv.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "mlx5_wqe_helpers.hpp"

namespace mp = mori::provider;
using namespace mori::test::mlx5_wqe;

// No layout is asserted against mlx5dv.h here: every test below compares whole WQEs and CQEs,
// byte for byte, with rdma-core's structs and helpers.

namespace {

// ---- the oracle: rdma-core's structs and helpers, filled as qp.c fills them ---------------------
uint8_t oracle_fm_ce_se(const WorkRequest& wr) {
  return (wr.fence ? MLX5_WQE_CTRL_FENCE : 0) | (wr.signaled ? MLX5_WQE_CTRL_CQ_UPDATE : 0);
}
void oracle_ctrl_raddr(Wqebb& w, const WorkRequest& wr, uint8_t opcode, uint8_t opmod, uint8_t ds) {
  auto* ctrl = reinterpret_cast<::mlx5_wqe_ctrl_seg*>(w.b);
  mlx5dv_set_ctrl_seg(ctrl, static_cast<uint16_t>(wr.index), opcode, opmod, wr.qpn,
                      oracle_fm_ce_se(wr), ds, 0, 0);
  auto* raddr = reinterpret_cast<::mlx5_wqe_raddr_seg*>(w.b + 16);
  raddr->raddr = htobe64(wr.remote_addr);  // set_raddr_seg
  raddr->rkey = htobe32(wr.rkey);
  raddr->reserved = 0;
}
Wqebb oracle_rdma(const WorkRequest& wr, uint8_t opcode) {
  Wqebb w;
  oracle_ctrl_raddr(w, wr, opcode, 0, wr.bytes ? 3 : 2);
  if (wr.bytes)
    mlx5dv_set_data_seg(reinterpret_cast<::mlx5_wqe_data_seg*>(w.b + 32), wr.bytes, wr.lkey,
                        wr.local_addr);
  return w;
}
Wqebb oracle_inline(const WorkRequest& wr) {
  Wqebb w;
  oracle_ctrl_raddr(w, wr, MLX5_OPCODE_RDMA_WRITE, 0, 2 + (4 + wr.bytes + 15) / 16);
  auto* inl = reinterpret_cast<::mlx5_wqe_inl_data_seg*>(w.b + 32);
  inl->byte_count = htobe32(wr.bytes | MLX5_INLINE_SEG);  // set_data_inl_seg
  std::memcpy(w.b + 36, wr.inline_data, wr.bytes);
  return w;
}
Wqebb oracle_atomic64(const WorkRequest& wr, uint8_t opcode) {
  Wqebb w;
  oracle_ctrl_raddr(w, wr, opcode, 0, 4);
  auto* a = reinterpret_cast<::mlx5_wqe_atomic_seg*>(w.b + 32);
  a->swap_add = htobe64(wr.operand);  // _set_atomic_seg
  a->compare = htobe64(opcode == MLX5_OPCODE_ATOMIC_CS ? wr.compare : 0);
  mlx5dv_set_data_seg(reinterpret_cast<::mlx5_wqe_data_seg*>(w.b + 48), 8, wr.lkey, wr.local_addr);
  return w;
}
// The extended 32-bit atomic segment as UCX lays it out (uct_ib_mlx5_atomic_masked_*32_seg):
// opmod 8 | (log2(4) - 2), operands big-endian, all-ones masks, field boundary 0.
Wqebb oracle_atomic32(const WorkRequest& wr, uint8_t opcode) {
  Wqebb w;
  oracle_ctrl_raddr(w, wr, opcode, 0x08, 4);
  const bool cas = opcode == MLX5_OPCODE_ATOMIC_MASKED_CS;
  const uint32_t seg[4] = {htobe32(static_cast<uint32_t>(wr.operand)),
                           cas ? htobe32(static_cast<uint32_t>(wr.compare)) : 0,
                           cas ? 0xffffffffu : 0, cas ? 0xffffffffu : 0};
  std::memcpy(w.b + 32, seg, sizeof(seg));
  mlx5dv_set_data_seg(reinterpret_cast<::mlx5_wqe_data_seg*>(w.b + 48), 4, wr.lkey, wr.local_addr);
  return w;
}

#define CHECK_BYTES(x, y) CHECK(hex((x).b, 64) == hex((y).b, 64))

}  // namespace

// Non-empty, then empty: ds 2, no data segment (an empty transfer as UCX posts it).
void check_rdma(Opcode op, uint8_t opcode) {
  for (uint64_t index : {0ull, 7ull, 0x1234ull}) {
    WorkRequest wr = request(op, index);
    CHECK_BYTES(post(wr), oracle_rdma(wr, opcode));
    wr.bytes = 0;
    CHECK_BYTES(post(wr), oracle_rdma(wr, opcode));
  }
}

TEST_CASE("mlx5 WQE bytes: RDMA write") { check_rdma(Opcode::kWrite, MLX5_OPCODE_RDMA_WRITE); }

TEST_CASE("mlx5 WQE bytes: RDMA read") { check_rdma(Opcode::kRead, MLX5_OPCODE_RDMA_READ); }

TEST_CASE("mlx5 WQE bytes: inline write of 0 to 28 bytes") {
  CHECK(Mlx5::kMaxInlineBytes == 28);
  for (uint32_t n = 0; n <= Mlx5::kMaxInlineBytes; ++n) {
    WorkRequest wr = request(Opcode::kWriteInline, 3);
    wr.bytes = n;
    CAPTURE(n);
    CHECK_BYTES(post(wr), oracle_inline(wr));
  }
}

TEST_CASE("mlx5 WQE bytes: fetch-add, 64-bit and 32-bit") {
  const WorkRequest fa64 = request(Opcode::kFetchAdd, 9, 8),
                    fa32 = request(Opcode::kFetchAdd, 9, 4);
  CHECK_BYTES(post(fa64), oracle_atomic64(fa64, MLX5_OPCODE_ATOMIC_FA));
  CHECK_BYTES(post(fa32), oracle_atomic32(fa32, MLX5_OPCODE_ATOMIC_MASKED_FA));
}

TEST_CASE("mlx5 atomic results: a 4-byte one lands big-endian, an 8-byte one in host order") {
  // The landing slot's bytes, as the NIC writes them, and the value the transport must return.
  const uint8_t be4[8] = {0x12, 0x34, 0x56, 0x78, 0xde, 0xad, 0xbe, 0xef};  // 4 stale bytes after
  uint64_t raw;
  std::memcpy(&raw, be4, 8);
  CHECK(Mlx5::atomic_result(raw, 4) == 0x12345678u);
  const uint64_t host8 = 0x1122334455667788ull;
  CHECK(Mlx5::atomic_result(host8, 8) == host8);
}

TEST_CASE("mlx5 WQE bytes: compare-swap, 64-bit and 32-bit") {
  const WorkRequest cs64 = request(Opcode::kCompareSwap, 10, 8);
  const WorkRequest cs32 = request(Opcode::kCompareSwap, 10, 4);
  CHECK_BYTES(post(cs64), oracle_atomic64(cs64, MLX5_OPCODE_ATOMIC_CS));
  CHECK_BYTES(post(cs32), oracle_atomic32(cs32, MLX5_OPCODE_ATOMIC_MASKED_CS));
}

TEST_CASE("mlx5 WQE bytes: the fence flag is rdma-core's IBV_SEND_FENCE mode") {
  for (Opcode op : {Opcode::kWrite, Opcode::kRead, Opcode::kWriteInline, Opcode::kFetchAdd}) {
    WorkRequest wr = request(op, 5, op == Opcode::kFetchAdd ? 8 : 0);
    wr.fence = 1;
    const Wqebb w = post(wr);
    CHECK(w.b[11] == (MLX5_WQE_CTRL_FENCE | MLX5_WQE_CTRL_CQ_UPDATE));
  }
  WorkRequest wr = request(Opcode::kWrite, 5);
  wr.fence = 1;
  CHECK_BYTES(post(wr), oracle_rdma(wr, MLX5_OPCODE_RDMA_WRITE));
}

TEST_CASE("mlx5 WQE bytes: signaled and unsignaled") {
  WorkRequest wr = request(Opcode::kRead, 6);
  CHECK(post(wr).b[11] == MLX5_WQE_CTRL_CQ_UPDATE);
  wr.signaled = 0;
  CHECK(post(wr).b[11] == 0);
  CHECK_BYTES(post(wr), oracle_rdma(wr, MLX5_OPCODE_RDMA_READ));
}

TEST_CASE("mlx5 WQE bytes: the WQE index wraps at 0xffff") {
  for (uint64_t index : {0xfffeull, 0xffffull, 0x10000ull, 0x10001ull, 0x3'0000'ffffull}) {
    const WorkRequest wr = request(Opcode::kFetchAdd, index, 4);
    const Wqebb w = post(wr);
    CHECK_BYTES(w, oracle_atomic32(wr, MLX5_OPCODE_ATOMIC_MASKED_FA));
    const uint16_t pi = static_cast<uint16_t>(w.b[1] << 8 | w.b[2]);  // opmod_idx_opcode, BE
    CHECK(pi == (index & 0xffff));
  }
}

TEST_CASE("mlx5 doorbell: record = next index & 0xffff (BE), register = the WQE's first 8 bytes") {
  Qp qp;
  const WorkRequest wr = request(Opcode::kWrite, 0x1ffff);
  Mlx5::post_read_write<false>(qp.sq, wr);
  Mlx5::ring_doorbell(qp.ep, wr.index + 1, qp.sq);
  CHECK(qp.dbr[MLX5_SND_DBR] == htobe32(0x0000));  // 0x20000 & 0xffff
  CHECK(qp.dbr[0] == 0);                           // the receive counter is untouched
  CHECK(std::memcmp(&qp.db, qp.sq, 8) == 0);       // mmio_write64_be(bf, *(__be64*)ctrl)
  Mlx5::ring_doorbell(qp.ep, 0x1234, qp.sq);
  CHECK(qp.dbr[MLX5_SND_DBR] == htobe32(0x1234));
  uint64_t last = 0x1000;
  CHECK(codec().announced(qp.ep, last) == 0x1234);
  last = 0x1'fff0;
  CHECK(codec().announced(qp.ep, last) == 0x2'1234);  // the 16-bit counter wrapped once
}

TEST_CASE("mlx5 syndrome names: every rdma-core syndrome, vendor syndrome in status bits 15:8") {
  struct Name {
    uint8_t syndrome;
    const char* text;
  };
  for (Name n :
       {Name{0x01, "local length error"}, Name{0x02, "local QP operation error"},
        Name{0x04, "local protection error"}, Name{0x05, "work request flushed"},
        Name{0x06, "memory window bind error"}, Name{0x10, "bad response error"},
        Name{0x11, "local access error"}, Name{0x12, "remote invalid request error"},
        Name{0x13, "remote access error"}, Name{0x14, "remote operation error"},
        Name{0x15, "transport retry counter exceeded"}, Name{0x16, "RNR retry counter exceeded"},
        Name{0x22, "aborted error"}, Name{0x7f, "general error"}}) {
    Qp qp;
    auto* e = reinterpret_cast<::mlx5_err_cqe*>(qp.cq);  // as the hardware writes it
    e->syndrome = n.syndrome;
    e->vendor_err_synd = 0x88;
    e->wqe_counter = htobe16(3);
    e->op_own = MLX5_CQE_REQ_ERR << 4;
    const mp::CqPoll p = Mlx5::poll_cq(qp.ep);
    CHECK(std::string(p.status_text) == n.text);
    CHECK(p.status == (0x8800u | n.syndrome));
    CHECK(p.completed_through == 4);
  }
  Qp qp;
  qp.cq[63] = MLX5_CQE_RESP_SEND << 4;  // never on a send CQ
  const mp::CqPoll p = Mlx5::poll_cq(qp.ep);
  CHECK(p.error == 1);
  CHECK(p.status == (Mlx5::kStatusUnexpectedCqe | MLX5_CQE_RESP_SEND));
  CHECK(std::string(p.status_text) == "unexpected CQE opcode");
}
