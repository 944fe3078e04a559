// The software NIC's bnxt codec (src/backend/host/softnic/bnxt_codec.cpp): round trips, doorbells
// announced, complete() then poll_cq() with its statuses, and garbage or random WQEs rejected.
#include <doctest/doctest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>

#include "bnxt_wqe_helpers.hpp"

using namespace mori::test::bnxt_wqe;

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
