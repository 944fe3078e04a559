// What both MLX5 test files post and poll with: one work request per operation, the provider's
// bytes for it, a QP as the runtime hands it to the engine, and the software NIC's mlx5 codec.
#pragma once

#include <infiniband/mlx5dv.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "backend/host/softnic/codec.hpp"
#include "mori/provider/mlx5.hpp"
#include "provider_test_names.hpp"

namespace mori::test::mlx5_wqe {

using namespace mori::test::provider_names;
using mori::provider::Mlx5;

inline constexpr uint32_t kQpn = 0x12345;
inline constexpr uint8_t kInline[28] = {0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa};

inline WorkRequest request(Opcode op, uint64_t index, uint8_t width = 0) {
  WorkRequest wr{};
  wr.opcode = op;
  wr.signaled = 1;
  wr.width = width;
  wr.qpn = kQpn;
  wr.index = index;
  wr.remote_addr = 0x7f00'1234'5678'9ab0;
  wr.rkey = 0xa1b2c3d4;
  if (op != Opcode::kWriteInline) {
    wr.lkey = 0x0badf00d;
    wr.local_addr = 0x5500'0000'1000;
  }
  if (op == Opcode::kWrite || op == Opcode::kRead) wr.bytes = 4096;
  if (op == Opcode::kWriteInline) wr.bytes = 28, wr.inline_data = kInline;
  if (op == Opcode::kFetchAdd || op == Opcode::kCompareSwap)
    wr.operand = width == 4 ? 0x89abcdef : 0x0123'4567'89ab'cdef;
  if (op == Opcode::kCompareSwap) wr.compare = width == 4 ? 0x13572468 : 0xfedc'ba98'7654'3210;
  return wr;
}

struct Wqebb {
  alignas(64) uint8_t b[64] = {};
};

// The provider's bytes for `wr`, through the entry points the engine calls.
inline Wqebb post(const WorkRequest& wr) {
  Wqebb w;
  std::memset(w.b, 0xee, sizeof(w.b));  // every byte must be written
  if (wr.opcode == Opcode::kWrite) Mlx5::post_read_write<false>(w.b, wr);
  if (wr.opcode == Opcode::kRead) Mlx5::post_read_write<true>(w.b, wr);
  if (wr.opcode == Opcode::kWriteInline) Mlx5::post_inline_write(w.b, wr);
  if (wr.opcode == Opcode::kFetchAdd || wr.opcode == Opcode::kCompareSwap)
    Mlx5::post_atomic(w.b, wr);
  return w;
}

inline std::string hex(const uint8_t* p, size_t n) {
  std::string s;
  char buf[4];
  for (size_t i = 0; i < n; ++i) {
    std::snprintf(buf, sizeof(buf), "%02x%s", p[i], (i % 16 == 15) ? "|" : "");
    s += buf;
  }
  return s;
}

// A QP as the runtime hands it to the engine: one SQ slot, a CQ ring of kCqEntries initialised
// invalid, and the CQ's doorbell record.
inline constexpr uint32_t kCqEntries = 4;
struct Qp {
  alignas(64) uint8_t sq[64] = {};
  alignas(64) uint8_t cq[64 * kCqEntries] = {};
  uint32_t dbr[2] = {};
  uint32_t cq_dbr[2] = {};
  uint64_t db = 0;
  uint64_t produced = 0;
  mori::state::RdmaEndpoint ep{};
  Qp() {
    Mlx5::init_cq(cq, kCqEntries);  // mlx5_alloc_cq_buf
    ep.sq = sq, ep.cq = cq, ep.dbr = dbr, ep.db = &db, ep.cq_dbr = cq_dbr;
    ep.sq_wqes = 1, ep.cq_entries = kCqEntries, ep.qpn = kQpn;
  }
  // The consumer index in the CQ's doorbell record (rdma-core update_cons_index).
  uint32_t ci() const { return be32toh(cq_dbr[0]); }
};

inline const mori::softnic::Codec& codec() { return mori::softnic::mlx5_codec(); }

}  // namespace mori::test::mlx5_wqe
