// The BNXT provider (variable WQE mode) and its software-NIC codec. The expected bytes are
// independent oracles: golden vectors written out from rdma-core (bnxt_golden.hpp), and fields
// placed by hand at the byte offset and shift rdma-core's providers/bnxt_re/bnxt_re-abi.h gives
// them (struct bnxt_re_bsqe, bnxt_re_rdma, bnxt_re_atomic, bnxt_re_sge, bnxt_re_req_cqe,
// bnxt_re_bcqe, bnxt_re_db_hdr, bnxt_re_msns), with the enum values written out as numbers.
#include <doctest/doctest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/host/softnic/codec.hpp"
#include "bnxt_golden.hpp"
#include "mori/platform.hpp"
#include "mori/provider/bnxt.hpp"
#include "mori/transport/rdma_engine.hpp"

namespace {

using mori::provider::Bnxt;
using mori::provider::CqPoll;
using mori::provider::Opcode;
using mori::provider::WorkRequest;
using mori::softnic::CompletionStatus;
namespace golden = mori::test::bnxt_golden;
using Entry = std::array<uint8_t, 48>;  // one WQE: 3 slots

// bnxt_re-abi.h values, as numbers.
constexpr uint8_t kWrite = 0x04, kRead = 0x06, kCompareSwap = 0x08, kFetchAdd = 0x0B;
constexpr uint8_t kSignaled = 0x01, kUcFence = 0x04, kInline = 0x10;
constexpr uint8_t kPoison = 0xA5;

void put(uint8_t* b, size_t offset, uint64_t value, int bytes) {  // little-endian
  for (int i = 0; i < bytes; ++i) b[offset + i] = static_cast<uint8_t>(value >> (8 * i));
}

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

WorkRequest request(Opcode op, uint8_t signaled = 1, uint8_t fence = 0) {
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
Entry post(const WorkRequest& wr) {
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

const mori::softnic::Codec& codec() { return mori::softnic::bnxt_codec(); }

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
  CHECK_THROWS_WITH(post(wr), "mori bnxt: inline write beyond 16 bytes");
}

TEST_CASE("bnxt: a 32-bit atomic traps, BNXT atomics are 64-bit") {
  static_assert(!Bnxt::kNativeAtomic32, "the engine emulates 32-bit atomics on BNXT");
  for (Opcode op : {Opcode::kFetchAdd, Opcode::kCompareSwap}) {
    WorkRequest wr = request(op);
    wr.width = 4;
    CHECK_THROWS_WITH(post(wr), "mori bnxt: atomics are 64-bit only (kNativeAtomic32)");
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

TEST_CASE("bnxt: codec announced follows slot index and epoch across wraps") {
  TestQp qp(16, 8);
  CHECK(codec().announced(qp.ep, 0) == 0);  // no doorbell yet: the word is zero, not valid
  std::mt19937_64 rng(6);
  uint64_t last = 0;
  for (int step = 0; step < 2000; ++step) {
    const uint64_t next = last + rng() % 17;  // 0..16: up to a full ring
    Bnxt::ring_doorbell(qp.ep, next, nullptr);
    REQUIRE(codec().announced(qp.ep, last) == next);
    last = next;
  }
  qp.db = 0x04009999'00000003ull;  // another QP's doorbell
  CHECK(codec().announced(qp.ep, last) == last);
  // This QP's, but naming a slot inside a WQE, or past the ring's 48 slots: nothing new.
  for (uint64_t indx : {uint64_t{4}, uint64_t{47}, uint64_t{48}, uint64_t{0x01000030}}) {
    qp.db = 0x04001234'00000000ull | indx;
    CHECK(codec().announced(qp.ep, 0) == 0);
  }
  qp.db = 0x04001234'00000006ull;  // slot 6: WQEs 0 and 1
  CHECK(codec().announced(qp.ep, 0) == 2);
}

TEST_CASE("bnxt: codec round trip for every op") {
  std::array<uint8_t, 16> data;
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(255 - i);
  for (Opcode op : {Opcode::kWrite, Opcode::kRead, Opcode::kWriteInline, Opcode::kFetchAdd,
                    Opcode::kCompareSwap}) {
    for (uint8_t signaled : {0, 1}) {
      for (uint8_t fence : {0, 1}) {
        WorkRequest wr = request(op, signaled, fence);
        if (op == Opcode::kWriteInline) wr.bytes = 13, wr.inline_data = data.data();
        const Entry e = post(wr);
        WorkRequest back;
        std::string why;
        REQUIRE_MESSAGE(codec().decode(e.data(), wr.index, &back, &why), why);
        // What the bytes carry: never the QP number, and per opcode only its own fields.
        const bool atomic = op == Opcode::kFetchAdd || op == Opcode::kCompareSwap;
        WorkRequest want = wr;
        want.qpn = 0;
        if (op == Opcode::kWriteInline) want.local_addr = 0, want.lkey = 0;
        if (op == Opcode::kWriteInline) want.inline_data = e.data() + 32;
        if (!atomic) want.operand = 0, want.compare = 0;
        if (atomic) want.bytes = 0;
        if (op == Opcode::kFetchAdd) want.compare = 0;
        CHECK(std::memcmp(&back, &want, sizeof(want)) == 0);
        if (op == Opcode::kWriteInline) CHECK(std::memcmp(back.inline_data, data.data(), 13) == 0);
      }
    }
  }
}

TEST_CASE("bnxt: codec complete and poll_cq across CQ, ring and slot-count wraps") {
  for (uint64_t start : {0ull, 65536ull - 40, 49152ull * 3 - 40}) {
    CAPTURE(start);
    TestQp qp(16, 4);
    qp.ep.completed = start;
    uint64_t produced = 0, posted = start;
    while (posted < start + 300) {
      // A burst of up to 15 WQEs (at most W - 1 outstanding), the last one signalled, then drain
      // its CQE.
      const uint64_t burst = 1 + (posted * 7) % 15;
      posted += burst;
      const uint8_t before = qp.ep.cq[(produced % 4) * 32 + 24];
      codec().complete(qp.ep, &produced, posted - 1, request(Opcode::kWrite),
                       CompletionStatus::kSuccess);
      // The CQE's bytes: qp_handle, con_indx (WQEs, modulo the 48 slots), then flg_st_typ_ph.
      const uint8_t* cqe = qp.ep.cq + ((produced - 1) % 4) * 32;
      CHECK(cqe[8] == posted % 48);
      CHECK(cqe[9] == 0);
      CHECK(cqe[24] == (((produced - 1) / 4) % 2 == 0 ? 1 : 0));  // ph, type 0, status 0
      CHECK(cqe[24] != before);
      const CqPoll poll = Bnxt::poll_cq(qp.ep);
      REQUIRE(poll.advanced == 1);
      REQUIRE(poll.error == 0);
      REQUIRE(poll.completed_through == posted);
      CHECK(qp.ep.cq_consumed == produced);
      // The CQ doorbell: the consumer index modulo 4, its epoch, qid = cqn, type CQ (4).
      CHECK(qp.cq_db == (uint64_t{0x44000567} << 32 | (produced / 4 % 2) << 24 | produced % 4));
      qp.ep.completed = poll.completed_through;
      CHECK(Bnxt::poll_cq(qp.ep).advanced == 0);  // nothing new: the next slot's phase is stale
    }
  }
}

TEST_CASE("bnxt: poll_cq drains several CQEs and stops after an error") {
  TestQp qp(64, 8);
  uint64_t produced = 0;
  for (uint64_t i : {2ull, 5ull, 9ull})
    codec().complete(qp.ep, &produced, i, request(Opcode::kRead), CompletionStatus::kSuccess);
  codec().complete(qp.ep, &produced, 12, request(Opcode::kRead), CompletionStatus::kRemoteAccess);
  CHECK(qp.ep.cq[3 * 32 + 8] == 36);  // the error's con_indx: WQE 12's first slot
  codec().complete(qp.ep, &produced, 13, request(Opcode::kRead), CompletionStatus::kSuccess);
  const CqPoll poll = Bnxt::poll_cq(qp.ep);
  CHECK(poll.advanced == 1);
  CHECK(poll.error == 1);
  CHECK(poll.completed_through == 13);  // WQE 12 failed
  CHECK(poll.status == 0x07);
  CHECK(std::string(poll.status_text) == "remote access");
  CHECK(qp.ep.cq_consumed == 4);
}

TEST_CASE("bnxt: codec statuses through poll_cq") {
  struct Case {
    CompletionStatus status;
    uint32_t code;  // bnxt_re_req_wc_status
    const char* text;
  };
  const Case cases[] = {{CompletionStatus::kLocalProtection, 0x04, "local protection"},
                        {CompletionStatus::kRemoteAccess, 0x07, "remote access"},
                        {CompletionStatus::kRemoteInvalidRequest, 0x06, "remote invalid request"},
                        {CompletionStatus::kLocalLength, 0x02, "local length"},
                        {CompletionStatus::kGeneral, 0x08, "remote operation"}};
  TestQp qp(16, 2);
  uint64_t produced = 0;
  for (int round = 0; round < 3; ++round) {  // 15 CQEs through a 2-entry CQ
    for (const Case& c : cases) {
      CAPTURE(c.text);
      codec().complete(qp.ep, &produced, qp.ep.completed, request(Opcode::kWrite), c.status);
      const CqPoll poll = Bnxt::poll_cq(qp.ep);
      REQUIRE(poll.error == 1);
      CHECK(poll.status == c.code);
      CHECK(std::string(poll.status_text) == c.text);
      CHECK(poll.completed_through == qp.ep.completed + 1);
      qp.ep.completed = poll.completed_through;
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

TEST_CASE("bnxt: codec rejects garbage") {
  // A valid WQE with `bytes` bytes at `offset` overwritten by `value` (little-endian).
  struct Case {
    Opcode op;
    size_t offset;
    int bytes;
    uint64_t value;
    const char* why;
  };
  const Case cases[] = {
      {Opcode::kWrite, 0, 1, 0x00, "unknown opcode 0x00"},
      {Opcode::kWrite, 0, 1, 0x42, "unknown opcode 0x42"},
      {Opcode::kWrite, 2, 1, 9, "wqe size field 9, not the 3 slots of this QP's WQEs"},
      {Opcode::kWrite, 2, 1, 1, "wqe size field 1, not the 3 slots of this QP's WQEs"},
      {Opcode::kWrite, 2, 1, 4, "wqe size field 4, not the 3 slots of this QP's WQEs"},
      {Opcode::kRead, 2, 1, 2, "wqe size field 2, not the 3 slots of this QP's WQEs"},
      {Opcode::kWriteInline, 2, 1, 2, "wqe size field 2, not the 3 slots of this QP's WQEs"},
      {Opcode::kFetchAdd, 2, 1, 5, "wqe size field 5, not the 3 slots of this QP's WQEs"},
      {Opcode::kWrite, 1, 1, kSignaled | 0x40, "reserved flag bits 0x40 set"},
      {Opcode::kRead, 1, 1, kSignaled | kInline, "inline flag on opcode 0x06"},
      {Opcode::kWrite, 44, 4, 100, "SGE length 100 differs from the message length 74565"},
      {Opcode::kWrite, 8, 8, 1ull << 32, "message length 4294967296 beyond 2^31"},
      {Opcode::kWriteInline, 8, 8, 17, "inline length 17 beyond the WQE's 16 bytes"},
      {Opcode::kWriteInline, 8, 8, 40, "inline length 40 beyond the WQE's 16 bytes"},
      {Opcode::kCompareSwap, 44, 4, 4, "32-bit atomic (BNXT atomics are 64-bit)"},
      {Opcode::kFetchAdd, 44, 4, 16, "atomic SGE length 16 (must be 8)"}};
  std::array<uint8_t, 16> data{};
  for (const Case& c : cases) {
    CAPTURE(c.why);
    WorkRequest wr = request(c.op);
    if (c.op == Opcode::kWriteInline) wr.bytes = 11, wr.inline_data = data.data();
    Entry e = post(wr);
    put(e.data(), c.offset, c.value, c.bytes);
    WorkRequest back;
    std::string why;
    CHECK_FALSE(codec().decode(e.data(), 0, &back, &why));
    CHECK(why == c.why);
  }
}

TEST_CASE("bnxt: codec decode of random bytes stays inside the WQE") {
  // The WQE ends at an inaccessible page: a read past it faults.
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  auto* base = static_cast<uint8_t*>(
      mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  REQUIRE(base != MAP_FAILED);
  mprotect(base + page, page, PROT_NONE);
  uint8_t* entry = base + page - Bnxt::kWqeBytes;
  std::mt19937_64 rng(0xB17);
  int accepted = 0;
  for (int i = 0; i < 200000; ++i) {
    for (uint32_t j = 0; j < Bnxt::kWqeBytes; ++j) entry[j] = static_cast<uint8_t>(rng());
    // Bias the header toward plausible values so that the deeper checks run too.
    const uint8_t opcodes[] = {kWrite, kRead, kCompareSwap, kFetchAdd};
    if (i % 2) entry[0] = opcodes[rng() % 4], entry[1] &= 0x1F, entry[2] = rng() % 8 ? 3 : rng();
    if (i % 4 == 1) put(entry, 8, rng() % 24, 8), put(entry, 44, rng() % 2 ? 8 : entry[8], 4);
    WorkRequest wr;
    std::string why;
    if (!codec().decode(entry, i, &wr, &why)) {
      CHECK_FALSE(why.empty());
      continue;
    }
    ++accepted;
    if (wr.opcode == Opcode::kWriteInline) {
      CHECK(wr.bytes <= Bnxt::kMaxInlineBytes);
      CHECK(static_cast<const uint8_t*>(wr.inline_data) + wr.bytes <= entry + Bnxt::kWqeBytes);
    }
  }
  CHECK(accepted > 1000);
  munmap(base, 2 * page);
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
