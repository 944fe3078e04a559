// What both BNXT test files post and poll with: a work request, the provider's 3-slot WQE for it,
// little-endian field writes, a QP laid out as for the software NIC, and the bnxt codec.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <vector>

#include "backend/host/softnic/codec.hpp"
#include "mori/provider/bnxt.hpp"
#include "provider_test_names.hpp"

namespace mori::test::bnxt_wqe {

using namespace mori::test::provider_names;
using mori::provider::Bnxt;
using Entry = std::array<uint8_t, 48>;  // one WQE: 3 slots

// bnxt_re-abi.h values, as numbers.
inline constexpr uint8_t kWrite = 0x04, kRead = 0x06, kCompareSwap = 0x08, kFetchAdd = 0x0B;
inline constexpr uint8_t kSignaled = 0x01, kUcFence = 0x04, kInline = 0x10;
inline constexpr uint8_t kPoison = 0xA5;

inline void put(uint8_t* b, size_t offset, uint64_t value, int bytes) {  // little-endian
  for (int i = 0; i < bytes; ++i) b[offset + i] = static_cast<uint8_t>(value >> (8 * i));
}

inline WorkRequest request(Opcode op, uint8_t signaled = 1, uint8_t fence = 0) {
  WorkRequest wr{};
  wr.opcode = op, wr.signaled = signaled, wr.fence = fence;
  wr.width = (op == Opcode::kFetchAdd || op == Opcode::kCompareSwap) ? 8 : 0;
  wr.qpn = 0x1234, wr.index = 77;
  wr.remote_addr = 0x7f00'1122'3344'5560, wr.rkey = 0xA1B2C3D4;
  wr.local_addr = 0x0000'5566'7788'9900, wr.lkey = 0x01020304;
  wr.bytes = 0x12345, wr.operand = 0x0102030405060708, wr.compare = 0x1112131415161718;
  return wr;
}

// Posts `wr` into a poisoned 16-byte-aligned WQE with the provider call for its opcode.
inline Entry post(const WorkRequest& wr) {
  alignas(16) Entry e;
  e.fill(kPoison);
  if (wr.opcode == Opcode::kWrite)
    Bnxt::post_read_write<false>(e.data(), wr);
  else if (wr.opcode == Opcode::kRead)
    Bnxt::post_read_write<true>(e.data(), wr);
  else if (wr.opcode == Opcode::kWriteInline)
    Bnxt::post_inline_write(e.data(), wr);
  else
    Bnxt::post_atomic(e.data(), wr);
  return e;
}

// A QP as the runtime lays it out for the software NIC: the SQ's 3W slots and its MSN table of 2W
// entries, the CQ ring, the doorbell word and (optionally) a separate CQ doorbell word.
struct alignas(16) Slot {
  uint8_t b[16];
};
struct TestQp {
  std::vector<Slot> sq, cq;
  uint64_t db = 0, cq_db = 0;
  mori::state::RdmaEndpoint ep{};
  TestQp(uint32_t wqes, uint32_t cqes) : sq(Bnxt::sq_bytes(wqes) / 16), cq(cqes * 2) {
    ep.sq = sq.front().b, ep.cq = cq.front().b, ep.db = &db;
    ep.cq_dbr = reinterpret_cast<uint32_t*>(&cq_db);
    ep.sq_wqes = wqes, ep.cq_entries = cqes, ep.qpn = 0x1234, ep.cqn = 0x567;
    ep.provider_word[Bnxt::kWordMtu] = 1024;
  }
};

inline const mori::softnic::Codec& codec() { return mori::softnic::bnxt_codec(); }

}  // namespace mori::test::bnxt_wqe
