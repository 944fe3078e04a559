// The software NIC's BNXT codec (src/backend/host/softnic/bnxt_codec.cpp) held to the golden bytes
// of variable WQE mode (bnxt_golden.hpp, written out from rdma-core): it decodes the golden WQEs,
// reads the golden doorbells, accepts the golden MSN entry and writes the golden CQEs. Then the
// whole path, engine and provider through the software NIC, over several passes of a small ring.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backend/host/softnic/softnic.hpp"
#include "bnxt_golden.hpp"
#include "device_state_guard.hpp"
#include "mori/host/launch.hpp"
#include "mori/provider/bnxt.hpp"
#include "mori/transport/rdma_engine.hpp"

namespace {

namespace golden = mori::test::bnxt_golden;
namespace sn = mori::softnic;
using mori::provider::Bnxt;
using mori::provider::Opcode;
using mori::provider::WorkRequest;
using mori::state::RdmaEndpoint;
using mori::transport::RdmaEngine;

const sn::Codec& codec() { return sn::bnxt_codec(); }

// A W-WQE SQ (its slots and MSN table), a CQ of W entries and the doorbell word, as the runtime
// lays them out for the software NIC.
struct Queue {
  std::vector<uint8_t> sq, cq;
  uint64_t db = 0;
  RdmaEndpoint ep{};
  explicit Queue(uint32_t wqes) : sq(Bnxt::sq_bytes(wqes)), cq(uint64_t{wqes} * Bnxt::kCqeBytes) {
    ep.sq = sq.data(), ep.cq = cq.data(), ep.db = &db;
    ep.sq_wqes = wqes, ep.cq_entries = wqes, ep.qpn = golden::kQpn;
    ep.provider_word[Bnxt::kWordMtu] = 1024;
  }
};

WorkRequest decoded(const uint8_t (&wqe)[48], uint64_t index) {
  WorkRequest wr{};
  std::string why;
  CHECK_MESSAGE(codec().decode(wqe, index, &wr, &why), why);
  return wr;
}

}  // namespace

TEST_CASE("softnic bnxt golden: decodes a 3-slot RDMA write") {
  const WorkRequest wr = decoded(golden::kRdmaWriteWqe, 21);
  CHECK(wr.opcode == Opcode::kWrite);
  CHECK(wr.index == 21);
  CHECK(wr.signaled == 1);
  CHECK(wr.fence == 0);
  CHECK(wr.remote_addr == golden::kRemoteAddr);
  CHECK(wr.rkey == golden::kRkey);
  CHECK(wr.local_addr == golden::kLocalAddr);
  CHECK(wr.lkey == golden::kLkey);
  CHECK(wr.bytes == golden::kWriteBytes);
}

TEST_CASE("softnic bnxt golden: decodes an inline write of 5 bytes, whatever the padding holds") {
  uint8_t wqe[48];
  std::memcpy(wqe, golden::kInlineWrite5Wqe, 48);
  std::memset(wqe + 37, 0xEE, 11);  // rdma-core leaves the rest of the slot as it was
  WorkRequest wr{};
  std::string why;
  REQUIRE_MESSAGE(codec().decode(wqe, 3, &wr, &why), why);
  CHECK(wr.opcode == Opcode::kWriteInline);
  CHECK(wr.signaled == 1);
  CHECK(wr.remote_addr == golden::kRemoteAddr);
  CHECK(wr.rkey == golden::kRkey);
  CHECK(wr.bytes == 5);
  CHECK(static_cast<const uint8_t*>(wr.inline_data) == wqe + 32);
  CHECK(std::memcmp(wr.inline_data, golden::kInlineData, 5) == 0);
}

TEST_CASE("softnic bnxt golden: decodes a fetch-add") {
  const WorkRequest wr = decoded(golden::kFetchAddWqe, 7);
  CHECK(wr.opcode == Opcode::kFetchAdd);
  CHECK(wr.width == 8);
  CHECK(wr.remote_addr == golden::kRemoteAddr);
  CHECK(wr.rkey == golden::kRkey);
  CHECK(wr.operand == golden::kAddend);
  CHECK(wr.local_addr == golden::kLocalAddr);
  CHECK(wr.lkey == golden::kLkey);
}

TEST_CASE("softnic bnxt golden: reads SQ doorbells at and after wraps") {
  Queue q(golden::kSqWqes);
  std::memcpy(&q.db, golden::kDoorbellAfter16Bytes, 8);
  CHECK(codec().announced(q.ep, 0) == 16);  // a full ring: the epoch tells it from an empty one
  CHECK(codec().announced(q.ep, 10) == 16);
  CHECK(codec().announced(q.ep, 16) == 16);
  std::memcpy(&q.db, golden::kDoorbellAfter21Bytes, 8);
  CHECK(codec().announced(q.ep, 16) == 21);
  CHECK(codec().announced(q.ep, 5) == 21);
  q.db = golden::kDoorbellAfter47;
  CHECK(codec().announced(q.ep, 40) == 47);
  CHECK(codec().announced(q.ep, 31) == 47);
  CHECK(codec().announced(q.ep, 47) == 47);
}

TEST_CASE("softnic bnxt golden: accepts the MSN entry of WQE 21, and names a wrong one") {
  Queue q(golden::kSqWqes);
  std::memcpy(q.sq.data() + golden::kMsnOffset, golden::kMsnEntry21, 8);
  WorkRequest wr{};
  wr.opcode = Opcode::kWrite, wr.bytes = 2100;  // 3 packets at MTU 1024
  uint32_t psn = golden::kMsnStartPsn;
  std::string why;
  CHECK_MESSAGE(codec().check_sequence(q.ep, golden::kMsnWqe, wr, &psn, &why), why);
  CHECK(psn == 0x000001);
  // WQE 53 (21 + 32) uses the same entry and the same first slot (53 mod 16 = 5).
  psn = golden::kMsnStartPsn;
  CHECK(codec().check_sequence(q.ep, golden::kMsnWqe + 32, wr, &psn, &why));
  // WQE 37 would use entry 5, which is empty.
  psn = golden::kMsnStartPsn;
  CHECK_FALSE(codec().check_sequence(q.ep, golden::kMsnWqe + 16, wr, &psn, &why));
  CHECK(why ==
        "MSN entry 5 {start_idx 0, start_psn 0x000000, next_psn 0x000000}, expected {15, "
        "0xfffffe, 0x000001} (3 packets)");
}

TEST_CASE("softnic bnxt golden: writes requester CQEs, success in WQEs and error in slots") {
  Queue q(golden::kSqWqes);
  uint64_t produced = 0;
  WorkRequest wr{};
  codec().complete(q.ep, &produced, 21, wr, sn::CompletionStatus::kSuccess);
  CHECK(std::memcmp(q.cq.data(), golden::kCqeSuccess21, 32) == 0);
  codec().complete(q.ep, &produced, 50, wr, sn::CompletionStatus::kSuccess);
  CHECK(std::memcmp(q.cq.data() + 32 + 8, golden::kCqeSuccess50ConIndx, 4) == 0);
  codec().complete(q.ep, &produced, 21, wr, sn::CompletionStatus::kRemoteAccess);
  CHECK(std::memcmp(q.cq.data() + 64, golden::kCqeError21, 32) == 0);
  CHECK(produced == 3);
}

// 3.5 passes of a 16-WQE ring (48 slots), each WQE checked at its target: SGE writes, inline writes
// of 0..16 bytes, reads and fetch-adds, one lane and then several at once, so that the slot index
// and the epoch wrap several times, every MSN entry is checked by the NIC, and the completions'
// con_indx crosses the 48-slot count.
TEST_CASE("softnic bnxt: 3.5 passes of a 16-WQE ring, data exact") {
  constexpr uint32_t kW = 16, kWqes = kW * 7 / 2;  // 56
  constexpr uint64_t kRemoteBase = 0x7f0000000000;
  constexpr uint32_t kRkey = 0x1234, kLkey = 0x55;
  constexpr int kPe = 1;
  Queue q(kW);
  std::vector<uint64_t> heap(4096, 0), local(4096, 0);
  for (size_t i = 0; i < 2048; ++i) local[i] = 0x5151'0000'0000'0000ull * (i + 1);
  for (size_t i = 2048; i < 3000; ++i) heap[i] = 0xEEEE'0000'0000'0000ull + i;
  sn::MemoryTable table;
  table.remote.push_back({kPe, kRemoteBase, heap.size() * 8, kRkey, heap.data()});
  table.local.push_back({reinterpret_cast<uint64_t>(local.data()), local.size() * 8, kLkey});
  sn::SoftNicOptions options;
  options.read_env = false;
  sn::SoftNic nic(codec(), {{&q.ep, kPe, 0x0FFFF0}}, table, options);
  q.ep.provider_state = 0x0FFFF0;
  REQUIRE(nic.start().ok());
  mori::test::DeviceStateGuard state(10'000'000'000);
  using Engine = RdmaEngine<Bnxt>;

  // WQE k (of one lane's sequence starting at `first`): its kind follows k mod 4.
  auto post = [&](uint32_t k) {
    WorkRequest wr{};
    wr.rkey = kRkey, wr.lkey = kLkey;
    switch (k % 4) {
      case 0:  // an SGE write of 8 + k % 24 bytes
        wr.opcode = Opcode::kWrite, wr.bytes = 8 + k % 24;
        wr.remote_addr = kRemoteBase + 8 * (4 * k);
        wr.local_addr = reinterpret_cast<uint64_t>(&local[4 * k]);
        break;
      case 1: {  // an inline write of k % 17 bytes
        static thread_local uint8_t data[16];
        for (uint32_t b = 0; b < 16; ++b) data[b] = static_cast<uint8_t>(k * 16 + b);
        wr.opcode = Opcode::kWriteInline, wr.bytes = k % 17, wr.inline_data = data;
        wr.remote_addr = kRemoteBase + 8 * (4 * k);
        break;
      }
      case 2:  // an 8-byte read
        wr.opcode = Opcode::kRead, wr.bytes = 8;
        wr.remote_addr = kRemoteBase + 8 * (2048 + k);
        wr.local_addr = reinterpret_cast<uint64_t>(&local[2048 + k]);
        break;
      default:  // a fetch-add of 1
        wr.opcode = Opcode::kFetchAdd, wr.width = 8, wr.operand = 1;
        wr.remote_addr = kRemoteBase + 8 * 3000;
        wr.local_addr = reinterpret_cast<uint64_t>(&local[3000 + k]);
        break;
    }
    return Engine::post(q.ep, wr, kPe);
  };

  // One lane, 3.5 passes, then four lanes each another 3.5 passes (k offset per lane).
  uint32_t misplaced = 0;
  auto status = mori::host::launch({1}, {1}, [&] {
    for (uint32_t k = 0; k < kWqes; ++k) misplaced += post(k) != k;
    Engine::quiet(q.ep, kPe);
  });
  REQUIRE_MESSAGE(status.ok(), status.message());
  CHECK(misplaced == 0);
  status = mori::host::launch({1}, {4}, [&] {
    const uint32_t lane = static_cast<uint32_t>(mori::platform::thread_rank());
    for (uint32_t k = 0; k < kWqes; ++k) post(kWqes * (lane + 1) + k);
    Engine::quiet(q.ep, kPe);
  });
  REQUIRE_MESSAGE(status.ok(), status.message());
  CHECK(nic.qp_error(0).empty());
  constexpr uint32_t kTotal = 5 * kWqes;
  CHECK(nic.executed() == kTotal);
  CHECK(q.ep.completed == kTotal);
  CHECK(q.ep.submitted == kTotal);

  size_t bad = 0, adds = 0;
  const auto* target = reinterpret_cast<const uint8_t*>(heap.data());
  const auto* source = reinterpret_cast<const uint8_t*>(local.data());
  for (uint32_t k = 0; k < kTotal; ++k) {
    switch (k % 4) {
      case 0:
        for (uint32_t b = 0; b < 32; ++b)
          bad += target[32 * k + b] != (b < 8 + k % 24 ? source[32 * k + b] : 0);
        break;
      case 1:
        for (uint32_t b = 0; b < 32; ++b)
          bad += target[32 * k + b] != (b < k % 17 ? static_cast<uint8_t>(k * 16 + b) : 0);
        break;
      case 2:
        bad += local[2048 + k] != heap[2048 + k];
        break;
      default:
        ++adds;
        bad += local[3000 + k] >= kTotal / 4;  // an old value of the counter
        break;
    }
  }
  CHECK(bad == 0);
  CHECK(heap[3000] == adds);
  nic.stop();
}

// An error in the ring's fourth pass: the error CQE names the failed WQE by its first slot, and the
// engine reports that WQE's 64-bit index.
TEST_CASE("softnic bnxt: an error CQE in a later pass names its WQE") {
  constexpr uint32_t kW = 16;
  constexpr uint64_t kRemoteBase = 0x7f0000000000;
  Queue q(kW);
  std::vector<uint64_t> heap(64, 0), local(64, 7);
  sn::MemoryTable table;
  table.remote.push_back({1, kRemoteBase, heap.size() * 8, 0x1234, heap.data()});
  table.local.push_back({reinterpret_cast<uint64_t>(local.data()), local.size() * 8, 0x55});
  sn::SoftNicOptions options;
  options.read_env = false;
  options.faults.error_at = 3 * kW + 13;  // WQE 61: slot 39
  sn::SoftNic nic(codec(), {{&q.ep, 1, 0}}, table, options);
  REQUIRE(nic.start().ok());
  mori::test::DeviceStateGuard state(5'000'000'000);
  const auto status = mori::host::launch({1}, {1}, [&] {
    for (uint32_t k = 0; k < 4 * kW; ++k) {
      WorkRequest wr{};
      wr.opcode = Opcode::kWrite, wr.bytes = 8, wr.rkey = 0x1234, wr.lkey = 0x55;
      wr.remote_addr = kRemoteBase + 8 * (k % 64);
      wr.local_addr = reinterpret_cast<uint64_t>(&local[k % 64]);
      RdmaEngine<Bnxt>::post(q.ep, wr, 1);
    }
    RdmaEngine<Bnxt>::quiet(q.ep, 1);
  });
  REQUIRE_FALSE(status.ok());
  MESSAGE(status.message());
  CHECK(status.message().find("RDMA bnxt error completion: remote operation (status 0x8) on WQE "
                              "61, ") != std::string::npos);
  nic.stop();
  CHECK(nic.qp_error(0) == "WQE 61: injected error (MORI_SOFTNIC_FAULT error:61)");
}
