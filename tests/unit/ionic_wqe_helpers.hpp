// What both Ionic test files post and poll with: work requests, the provider's 64-byte WQEs, the
// golden WQEs written by hand from rdma-core, an endpoint with its doorbell page, the ionic codec.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <utility>
#include <vector>

#include "backend/host/softnic/codec.hpp"
#include "mori/provider/ionic.hpp"
#include "provider_test_names.hpp"

namespace mori::test::ionic_wqe {

using namespace mori::test::provider_names;
using mori::provider::Ionic;
using Bytes = std::vector<uint8_t>;

inline constexpr uint32_t kSqWqes = 64;
inline constexpr uint64_t kRemote = 0x00007f1234567800, kLocal = 0x00007e0000001000;
inline constexpr uint32_t kRkey = 0x11223344, kLkey = 0x55667788, kQpn = 0x123456;

inline WorkRequest request(Opcode op, uint64_t index, uint8_t signaled = 1, uint8_t fence = 0) {
  WorkRequest wr{};
  wr.opcode = op;
  wr.index = index;
  wr.signaled = signaled;
  wr.fence = fence;
  wr.sq_wqes = kSqWqes;  // the SQ depth (Ionic's engine obligation)
  wr.remote_addr = kRemote;
  wr.rkey = kRkey;
  wr.local_addr = kLocal;
  wr.lkey = kLkey;
  return wr;
}

// Posts into a slot full of 0xee (a previous pass's leftovers) and returns the 64 bytes.
inline Bytes post(const WorkRequest& wr) {
  alignas(64) uint8_t slot[64];
  std::memset(slot, 0xee, sizeof(slot));
  mori::provider::post_wqe<Ionic>(slot, wr);  // the entry point the engine calls
  return Bytes(slot, slot + 64);
}

// A 64-byte expectation from its non-zero runs: {offset, {bytes...}}.
inline Bytes expect(std::initializer_list<std::pair<int, Bytes>> runs) {
  Bytes b(64, 0);
  for (const auto& [at, bytes] : runs) std::memcpy(b.data() + at, bytes.data(), bytes.size());
  return b;
}

// ionic_v1_common_bdy.rdma for kRemote / kRkey, at offset 16.
inline const std::pair<int, Bytes> kRdmaBody{
    16, {0x00, 0x00, 0x7f, 0x12, 0x34, 0x56, 0x78, 0x00, 0x11, 0x22, 0x33, 0x44}};

// The golden WQEs: each work request below as rdma-core's ionic provider lays it out, written by
// hand from its providers/ionic layouts (ionic_fw_types.h: ionic_v1_wqe = 16-byte base header +
// 48-byte body, big-endian fields except the le64 wqe_idx), not computed with the provider's own
// structs. The writer tests hold Ionic::post_* to them and the decoder test holds the software
// NIC's codec to them, so neither is checked against the other.
inline Bytes golden_write() {  // request(kWrite, 5), 0x1000 bytes
  return expect({{0, {0x05}},
                 {8, {0x21, 0x01, 0x00, 0x18}},  // RDMA_WRITE v2, 1 SGE, SIG|COLOR
                 kRdmaBody,
                 {28, {0x00, 0x00, 0x10, 0x00}},
                 {32,
                  {0x00, 0x00, 0x7e, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x10, 0x00, 0x55,
                   0x66, 0x77, 0x88}}});
}
inline Bytes golden_read() {  // request(kRead, 6, unsignaled), 0x40 bytes
  return expect({{0, {0x06}},
                 {8, {0x02, 0x01, 0x00, 0x10}},  // RDMA_READ v2, 1 SGE, COLOR
                 kRdmaBody,
                 {28, {0x00, 0x00, 0x00, 0x40}},
                 {32,
                  {0x00, 0x00, 0x7e, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x40, 0x55,
                   0x66, 0x77, 0x88}}});
}
inline Bytes golden_inline_hello() {  // request(kWriteInline, 7), "hello"
  return expect({{0, {0x07}},
                 {8, {0x21, 0x00, 0x00, 0x1c}},  // no SGE; SIG|INL|COLOR
                 kRdmaBody,
                 {28, {0x00, 0x00, 0x00, 0x05}},
                 {32, {'h', 'e', 'l', 'l', 'o'}}});
}
inline Bytes golden_fetch_add() {  // request(kFetchAdd, 8), kRemote + 8, add 0x0000000100000002
  return expect({{0, {0x08}},
                 {8, {0x05, 0x01, 0x00, 0x18}},  // ATOMIC_FA v2, 1 SGE, SIG|COLOR
                 {16, {0x00, 0x00, 0x7f, 0x12, 0x34, 0x56, 0x78, 0x08, 0x11, 0x22, 0x33, 0x44}},
                 {28, {0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02}},  // swap_add high, low
                 {44, {0x55, 0x66, 0x77, 0x88, 0x00, 0x00, 0x7e, 0x00, 0x00, 0x00, 0x10, 0x00}}});
}
inline Bytes golden_compare_swap() {  // request(kCompareSwap, 9), swap 0x33..44 if 0x11..22
  return expect({{0, {0x09}},
                 {8, {0x04, 0x01, 0x00, 0x18}},  // ATOMIC_CS v2
                 kRdmaBody,
                 {28, {0x33, 0x33, 0x33, 0x33, 0x44, 0x44, 0x44, 0x44}},  // swap
                 {36, {0x11, 0x11, 0x11, 0x11, 0x22, 0x22, 0x22, 0x22}},  // compare
                 {44, {0x55, 0x66, 0x77, 0x88, 0x00, 0x00, 0x7e, 0x00, 0x00, 0x00, 0x10, 0x00}}});
}

struct Endpoint {
  std::array<uint64_t, 8> dbpage{};
  std::vector<uint8_t> cq;
  mori::state::RdmaEndpoint ep{};
  explicit Endpoint(uint32_t cq_entries) : cq(cq_entries * Ionic::kCqeBytes, 0) {
    ep.db = &dbpage[2];
    ep.cq = cq.data();
    ep.sq_wqes = kSqWqes;
    ep.cq_entries = cq_entries;
    ep.qpn = kQpn;
    ep.cqn = 0x42;
    ep.cq_dbr = reinterpret_cast<uint32_t*>(&dbpage[5]);  // dbpage[cq_qtype]
  }
  // What the engine does with a poll: the provider advanced cq_consumed itself.
  CqPoll poll() {
    CqPoll p = Ionic::poll_cq(ep);
    if (p.advanced) ep.completed = p.completed_through;
    return p;
  }
};

inline const mori::softnic::Codec& codec() { return mori::softnic::ionic_codec(); }

}  // namespace mori::test::ionic_wqe
