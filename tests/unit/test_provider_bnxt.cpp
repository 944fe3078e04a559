// The BNXT provider's bytes (variable WQE mode) held to oracles it did not produce: WQEs, SQ
// doorbells, MSN entries and the requester CQEs poll_cq reads.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "bnxt_golden.hpp"
#include "bnxt_wqe_helpers.hpp"
#include "mori/platform.hpp"
#include "mori/provider/bnxt.hpp"
#include "mori/transport/rdma_engine.hpp"

using namespace mori::test::bnxt_wqe;

// The oracles: golden vectors written out from rdma-core (bnxt_golden.hpp), and fields placed by
// hand at the byte offset and shift rdma-core's providers/bnxt_re/bnxt_re-abi.h gives them (struct
// bnxt_re_bsqe, bnxt_re_rdma, bnxt_re_atomic, bnxt_re_sge, bnxt_re_req_cqe, bnxt_re_bcqe,
// bnxt_re_db_hdr, bnxt_re_msns), with the enum values written out as numbers.
namespace {

namespace golden = mori::test::bnxt_golden;

// bnxt_re_bsqe: wt at byte 0, flags at byte 1, ws at byte 2, rsv at byte 3, key_immd at 4, lhdr
// at 8. Every WQE spans 3 slots, all of which the provider writes.
Entry oracle_header(uint8_t opcode, uint8_t flags, uint32_t key, uint64_t lhdr) {
  Entry e{};
  e[0] = opcode, e[1] = flags, e[2] = 3;
  put(e.data(), 4, key, 4);
  put(e.data(), 8, lhdr, 8);
  return e;
}
void oracle_sge(Entry& e, uint64_t pa, uint32_t lkey, uint32_t length) {  // bnxt_re_sge, slot 2
  put(e.data(), 32, pa, 8), put(e.data(), 40, lkey, 4), put(e.data(), 44, length, 4);
}
Entry oracle_rdma(uint8_t opcode, uint8_t flags, const WorkRequest& wr) {
  Entry e = oracle_header(opcode, flags, 0, wr.bytes);
  put(e.data(), 16, wr.remote_addr, 8), put(e.data(), 24, wr.rkey, 4);  // bnxt_re_rdma
  oracle_sge(e, wr.local_addr, wr.lkey, wr.bytes);
  return e;
}
Entry oracle_atomic(uint8_t opcode, uint8_t flags, const WorkRequest& wr) {
  Entry e = oracle_header(opcode, flags, wr.rkey, wr.remote_addr);  // lhdr.rva
  put(e.data(), 16, wr.operand, 8);                                 // bnxt_re_atomic.swp_dt
  put(e.data(), 24, opcode == kCompareSwap ? wr.compare : 0, 8);    // .cmp_dt
  oracle_sge(e, wr.local_addr, wr.lkey, 8);
  return e;
}

Entry expected(const WorkRequest& wr, uint8_t flags) {  // the four opcodes with an SGE
  const Opcode op = wr.opcode;
  if (op == Opcode::kWrite || op == Opcode::kRead)
    return oracle_rdma(op == Opcode::kRead ? kRead : kWrite, flags, wr);
  return oracle_atomic(op == Opcode::kFetchAdd ? kFetchAdd : kCompareSwap, flags, wr);
}

// Every field of a signalled WQE for `op`, against the oracle.
void check_wqe_bytes(Opcode op) { CHECK(post(request(op)) == expected(request(op), kSignaled)); }

constexpr Opcode kSgeOps[] = {Opcode::kWrite, Opcode::kRead, Opcode::kFetchAdd,
                              Opcode::kCompareSwap};

}  // namespace

// ---- golden vectors (bnxt_golden.hpp): the writer and poll_cq held to rdma-core's bytes --------
WorkRequest golden_request(Opcode op) {
  WorkRequest wr{};
  wr.opcode = op, wr.signaled = 1, wr.qpn = golden::kQpn, wr.index = 21;
  wr.remote_addr = golden::kRemoteAddr, wr.rkey = golden::kRkey;
  wr.local_addr = golden::kLocalAddr, wr.lkey = golden::kLkey;
  return wr;
}

TEST_CASE("bnxt golden: a 3-slot RDMA write WQE") {
  WorkRequest wr = golden_request(Opcode::kWrite);
  wr.bytes = golden::kWriteBytes;
  CHECK(std::memcmp(post(wr).data(), golden::kRdmaWriteWqe, 48) == 0);
}

TEST_CASE("bnxt golden: an inline write of 5 bytes") {
  WorkRequest wr = golden_request(Opcode::kWriteInline);
  wr.bytes = 5, wr.inline_data = golden::kInlineData;
  CHECK(std::memcmp(post(wr).data(), golden::kInlineWrite5Wqe, 48) == 0);
}

TEST_CASE("bnxt golden: a fetch-add WQE") {
  WorkRequest wr = golden_request(Opcode::kFetchAdd);
  wr.width = 8, wr.operand = golden::kAddend;
  CHECK(std::memcmp(post(wr).data(), golden::kFetchAddWqe, 48) == 0);
}

TEST_CASE("bnxt golden: SQ doorbells at and after a wrap") {
  TestQp qp(golden::kSqWqes, 8);
  CHECK(mori::provider::bnxt::db_hdr_value(Bnxt::sq_doorbell(qp.ep, 16)) ==
        golden::kDoorbellAfter16);
  CHECK(mori::provider::bnxt::db_hdr_value(Bnxt::sq_doorbell(qp.ep, 47)) ==
        golden::kDoorbellAfter47);
  Bnxt::ring_doorbell(qp.ep, 16, nullptr);
  CHECK(std::memcmp(&qp.db, golden::kDoorbellAfter16Bytes, 8) == 0);
  Bnxt::ring_doorbell(qp.ep, 21, nullptr);
  CHECK(std::memcmp(&qp.db, golden::kDoorbellAfter21Bytes, 8) == 0);
}

TEST_CASE("bnxt golden: the MSN entry of WQE 21") {
  TestQp qp(golden::kSqWqes, 8);
  Bnxt::post_msn(qp.ep, golden::kMsnWqe, golden::kMsnStartPsn, golden::kMsnPackets);
  CHECK(std::memcmp(qp.ep.sq + golden::kMsnOffset, golden::kMsnEntry21, 8) == 0);
  // The same WQE index a table later (21 + 32) lands on the same entry, one ring later (21 + 16)
  // on entry 37 mod 32 = 5 with the same first slot.
  Bnxt::post_msn(qp.ep, golden::kMsnWqe + 16, golden::kMsnStartPsn, golden::kMsnPackets);
  CHECK(std::memcmp(qp.ep.sq + 768 + 5 * 8, golden::kMsnEntry21, 8) == 0);
}

TEST_CASE("bnxt golden: poll_cq reads requester CQEs, con_indx in WQEs and, on error, in slots") {
  {
    TestQp qp(golden::kSqWqes, 4);
    qp.ep.completed = 17;  // WQEs 17..21 outstanding
    std::memcpy(qp.ep.cq, golden::kCqeSuccess21, 32);
    const CqPoll poll = Bnxt::poll_cq(qp.ep);
    CHECK(poll.advanced == 1);
    CHECK(poll.error == 0);
    CHECK(poll.completed_through == 22);
  }
  {
    TestQp qp(golden::kSqWqes, 4);
    qp.ep.completed = 40;  // WQEs 40..50: con_indx 51 mod 48
    std::memcpy(qp.ep.cq, golden::kCqeSuccess21, 32);
    std::memcpy(qp.ep.cq + 8, golden::kCqeSuccess50ConIndx, 4);
    CHECK(Bnxt::poll_cq(qp.ep).completed_through == 51);
  }
  {
    TestQp qp(golden::kSqWqes, 4);
    qp.ep.completed = 18;  // WQEs 18..21 outstanding, 21 fails
    std::memcpy(qp.ep.cq, golden::kCqeError21, 32);
    const CqPoll poll = Bnxt::poll_cq(qp.ep);
    CHECK(poll.error == 1);
    CHECK(poll.status == 0x07);
    CHECK(std::string(poll.status_text) == "remote access");
    CHECK(poll.completed_through == 22);  // WQE 21 failed, 18..20 completed
  }
}

// The deepest ring: 16384 WQEs, 49152 slots. An error CQE's slot index near the top of the 16 bits
// and a success CQE's WQE count across the slot count's wrap both name the right 64-bit index, from
// any base, including when the NIC counts successes in 16 bits instead (W divides 2^16 too).
TEST_CASE("bnxt: con_indx to WQE index near 65536 slots") {
  constexpr uint32_t kW = Bnxt::kMaxSqWqes;
  static_assert(kW * 3 == 49152);
  mori::state::RdmaEndpoint ep{};
  ep.sq_wqes = kW;
  std::vector<uint8_t> cq(4 * 32);
  ep.cq = cq.data(), ep.cq_entries = 4;
  auto poll_one = [&](uint64_t completed, uint32_t con_indx, uint32_t status) {
    std::memset(cq.data(), 0, cq.size());
    ep.completed = completed, ep.cq_consumed = 0;
    put(cq.data(), 8, con_indx, 4);
    put(cq.data(), 24, status << 8 | 1, 4);  // phase 1, first pass
    return Bnxt::poll_cq(ep);
  };
  for (uint64_t pass : {uint64_t{0}, uint64_t{1}, uint64_t{2}, uint64_t{5}, uint64_t{1} << 30}) {
    for (uint64_t position : {uint64_t{0}, uint64_t{1}, uint64_t{kW - 2}, uint64_t{kW - 1}}) {
      const uint64_t failed = pass * kW + position;
      CAPTURE(failed);
      const uint32_t slot = static_cast<uint32_t>(3 * position);  // up to 49149
      for (uint64_t behind : {uint64_t{0}, uint64_t{1}, uint64_t{kW - 2}}) {
        if (behind > failed) continue;
        const CqPoll p = poll_one(failed - behind, slot, 0x07);
        CHECK(p.error == 1);
        CHECK(p.completed_through == failed + 1);
      }
      const uint64_t next = failed + 1;  // a success CQE after WQE `failed`
      for (uint64_t behind : {uint64_t{1}, uint64_t{2}, uint64_t{kW - 1}}) {
        if (behind > next) continue;
        CHECK(
            poll_one(next - behind, static_cast<uint32_t>(next % (3 * kW)), 0).completed_through ==
            next);
        CHECK(poll_one(next - behind, static_cast<uint32_t>(next % 65536), 0).completed_through ==
              next);
      }
    }
  }
}

// ---- the writer against field-by-field oracles --------------------------------------------------
TEST_CASE("bnxt: RDMA write WQE bytes") { check_wqe_bytes(Opcode::kWrite); }
TEST_CASE("bnxt: RDMA read WQE bytes") { check_wqe_bytes(Opcode::kRead); }
TEST_CASE("bnxt: fetch-add 64 WQE bytes") { check_wqe_bytes(Opcode::kFetchAdd); }
TEST_CASE("bnxt: compare-swap 64 WQE bytes") { check_wqe_bytes(Opcode::kCompareSwap); }

TEST_CASE("bnxt: inline write WQE bytes") {
  static_assert(Bnxt::kMaxInlineBytes == 16, "one slot of inline data");
  std::array<uint8_t, 16> data;
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 7 + 1);
  for (uint32_t n = 0; n <= 16; ++n) {
    CAPTURE(n);
    WorkRequest wr = request(Opcode::kWriteInline);
    wr.bytes = n, wr.inline_data = data.data();
    // ws 3 for every length: an empty write pads the slot rather than shrink the WQE.
    Entry e = oracle_header(kWrite, kSignaled | kInline, 0, n);
    put(e.data(), 16, wr.remote_addr, 8), put(e.data(), 24, wr.rkey, 4);
    std::memcpy(e.data() + 32, data.data(), n);  // inline data in slot 2, zero-padded
    CHECK(post(wr) == e);
  }
}

TEST_CASE("bnxt: inline write beyond 16 bytes traps") {
  std::array<uint8_t, 17> data{};
  WorkRequest wr = request(Opcode::kWriteInline);
  wr.bytes = 17, wr.inline_data = data.data();
  CHECK_THROWS_WITH(post(wr), "bnxt: inline write beyond 16 bytes");
}

TEST_CASE("bnxt: a 32-bit atomic traps, BNXT atomics are 64-bit") {
  static_assert(!Bnxt::kNativeAtomic32, "the engine emulates 32-bit atomics on BNXT");
  for (Opcode op : {Opcode::kFetchAdd, Opcode::kCompareSwap}) {
    WorkRequest wr = request(op);
    wr.width = 4;
    CHECK_THROWS_WITH(post(wr), "bnxt: atomics are 64-bit only (kNativeAtomic32)");
  }
}

TEST_CASE("bnxt: fence flag") {
  for (Opcode op : kSgeOps) {
    const WorkRequest wr = request(op, 1, 1);
    CHECK(post(wr) == expected(wr, kSignaled | kUcFence));
    CHECK(post(request(op, 0, 1)) == expected(request(op, 0, 1), kUcFence));
  }
}

TEST_CASE("bnxt: signaled and unsignaled") {
  for (Opcode op : kSgeOps) {
    CHECK(post(request(op, 1)) == expected(request(op, 1), kSignaled));
    CHECK(post(request(op, 0)) == expected(request(op, 0), 0));
  }
}

TEST_CASE("bnxt: doorbell value packing") {
  // bnxt_re_db_hdr: indx = slot index | epoch << 24; typ_qid = qid | valid (1 << 26) | typ << 28.
  TestQp qp(64, 8);
  CHECK(mori::provider::bnxt::db_hdr_value(Bnxt::sq_doorbell(qp.ep, 5)) == 0x04001234'0000000Full);
  CHECK(mori::provider::bnxt::db_hdr_value(Bnxt::sq_doorbell(qp.ep, 64 + 5)) ==
        0x04001234'0100000Full);
  CHECK(mori::provider::bnxt::db_hdr_value(Bnxt::sq_doorbell(qp.ep, 128)) ==
        0x04001234'00000000ull);
  Bnxt::ring_doorbell(qp.ep, 64 + 63, nullptr);
  const uint8_t bytes[8] = {0xBD, 0x00, 0x00, 0x01, 0x34, 0x12, 0x00, 0x04};  // slot 189, epoch 1
  CHECK(std::memcmp(&qp.db, bytes, 8) == 0);
}

TEST_CASE("bnxt: SQ doorbell slot index and epoch across wraps") {
  for (uint32_t wqes : {1u, 2u, 64u, 16384u, 65536u}) {
    mori::state::RdmaEndpoint ep{};  // the doorbell reads no SQ memory
    uint64_t db = 0;
    ep.db = &db, ep.qpn = 0x1234, ep.sq_wqes = wqes;
    const uint64_t w = wqes;
    for (uint64_t n : {uint64_t{0}, uint64_t{1}, w - 1, w, w + 1, 2 * w - 1, 2 * w, 7 * w + 3,
                       (uint64_t{1} << 40) + 1}) {
      CAPTURE(wqes);
      CAPTURE(n);
      Bnxt::ring_doorbell(ep, n, nullptr);
      // The slot after n WQEs of 3 slots, in a ring of 3W slots, and the parity of its passes.
      CHECK((db & 0xFFFFFF) == 3 * n % (3 * w));
      CHECK((db >> 24 & 1) == (3 * n / (3 * w)) % 2);
      CHECK((db >> 32) == 0x04001234u);
      CHECK(codec().announced(ep, n - std::min<uint64_t>(n, wqes)) == n);
    }
  }
}

TEST_CASE("bnxt: poll_cq names every requester status") {
  // bnxt_re_req_wc_status 0x00..0x0B (bnxt_re-abi.h), then an undefined one.
  const std::string names =
      "success|bad response|local length|local QP operation|local protection|memory window bind|"
      "remote invalid request|remote access|remote operation|RNR NAK retry count exceeded|"
      "transport retry count exceeded|work request flushed|unknown status|";
  std::string seen;
  TestQp qp(16, 4);
  for (uint32_t status = 0; status <= 0x0C; ++status) {
    CAPTURE(status);
    uint8_t* cqe = qp.ep.cq + (qp.ep.cq_consumed % 4) * 32;
    std::memset(cqe, 0, 32);
    // con_indx: the next WQE's count on success, its first slot on error.
    put(cqe, 8, status == 0 ? qp.ep.completed + 1 : 3 * (qp.ep.completed % 16), 4);
    put(cqe, 24, (status << 8) | (qp.ep.cq_consumed / 4 % 2 == 0), 4);  // status, typ 0, ph
    const CqPoll poll = Bnxt::poll_cq(qp.ep);
    REQUIRE(poll.advanced == 1);
    CHECK(poll.error == (status != 0));
    CHECK(poll.status == status);
    seen += std::string(poll.status_text) + "|";
    CHECK(poll.completed_through == qp.ep.completed + 1);
    qp.ep.completed = poll.completed_through;
  }
  CHECK(seen == names);
  uint8_t* cqe = qp.ep.cq + (qp.ep.cq_consumed % 4) * 32;  // a terminal CQE (typ 0x0E)
  put(cqe, 24, (0x0E << 1) | (qp.ep.cq_consumed / 4 % 2 == 0), 4);
  const CqPoll poll = Bnxt::poll_cq(qp.ep);
  CHECK(poll.error == 1);
  CHECK(poll.status == 0x10E);
  CHECK(std::string(poll.status_text) == "unexpected CQE type");
}

TEST_CASE("bnxt: MSN table entry and PSN packets") {
  TestQp qp(64, 8);
  const std::pair<uint32_t, uint32_t> packets[] = {
      {0, 1}, {1, 1}, {1024, 1}, {1025, 2}, {0xFFFFFFFF, 4194304}};  // MTU 1024
  for (const auto& [bytes, count] : packets) CHECK(Bnxt::psn_packets(qp.ep, bytes) == count);
  Bnxt::post_msn(qp.ep, 128 * 3 + 74, 0xFFFFFE, 3);
  // sq_msn_search: start_psn 24 | next_psn 24 << 24 | start_idx 16 << 48, after the 192 slots,
  // entry (WQE mod 128), start_idx the WQE's first slot 3 * (WQE mod 64).
  uint8_t bytes[8] = {};
  put(bytes, 0, 0xFFFFFEull | (0x000001ull << 24) | (30ull << 48), 8);
  CHECK(std::memcmp(qp.ep.sq + 64 * 48 + 74 * 8, bytes, 8) == 0);
}

// Through the engine: each WQE's MSN entry carries the PSNs of the WQEs before it, in posting
// order (Bnxt::note_wqe parks the packet count, Bnxt::prepare_submit turns the counts into entries
// before the doorbell), across the 24-bit PSN wrap, and over more WQEs than the table has entries.
TEST_CASE("bnxt: the engine writes every WQE's MSN entry with running PSNs before the doorbell") {
  TestQp qp(16, 16);
  qp.ep.provider_state = 0xFFFFF0;  // 16 PSNs before the 24-bit wrap
  uint64_t local = 0;
  uint32_t psn = 0xFFFFF0;
  const uint32_t sizes[] = {0, 8, 1024, 1025, 4096, 3000, 1, 2048, 5000, 777};
  for (uint32_t i = 0; i < 80; ++i) {
    WorkRequest wr{};
    const uint32_t bytes = sizes[i % 10];
    wr.opcode = i % 7 == 3 ? Opcode::kFetchAdd : i % 5 == 2 ? Opcode::kRead : Opcode::kWrite;
    wr.width = 8;
    wr.bytes = wr.opcode == Opcode::kFetchAdd ? 0 : bytes;
    wr.local_addr = reinterpret_cast<uint64_t>(&local);
    const uint64_t index = mori::transport::RdmaEngine<Bnxt>::post(qp.ep, wr, 1);
    REQUIRE(index == i);
    const uint32_t packets = Bnxt::psn_packets(qp.ep, wr.opcode == Opcode::kFetchAdd ? 8 : bytes);
    uint8_t expected[8] = {};
    put(expected, 0,
        uint64_t{psn} | (uint64_t{(psn + packets) & 0xFFFFFF} << 24) |
            (uint64_t{3 * (i % 16)} << 48),
        8);
    CHECK_MESSAGE(std::memcmp(qp.ep.sq + 16 * 48 + (i % 32) * 8, expected, 8) == 0, "WQE " << i);
    psn = (psn + packets) & 0xFFFFFF;
    // No NIC here: complete the WQE by hand so that the ring can wrap (a success CQE).
    uint64_t produced = qp.ep.cq_consumed;
    codec().complete(qp.ep, &produced, i, wr, CompletionStatus::kSuccess);
  }
  CHECK(qp.ep.provider_state == psn);
  CHECK(qp.ep.submitted == 80);
}
