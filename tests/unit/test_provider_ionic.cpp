// The Ionic provider's bytes held to arrays written by hand from rdma-core's providers/ionic: WQEs,
// SQ and CQ doorbells (ionic_queue.h: qid << 24 | position), and the CQEs that poll_cq reads.
#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "ionic_wqe_helpers.hpp"

using namespace mori::test::ionic_wqe;

TEST_CASE("ionic: RDMA write WQE bytes") {
  WorkRequest wr = request(Opcode::kWrite, 5);
  wr.bytes = 0x1000;
  CHECK(post(wr) == golden_write());
}

TEST_CASE("ionic: RDMA read WQE bytes") {
  WorkRequest wr = request(Opcode::kRead, 6, 0);
  wr.bytes = 0x40;
  CHECK(post(wr) == golden_read());
  wr.bytes = 0;  // no SGE at all
  CHECK(post(wr) == expect({{0, {0x06}}, {8, {0x02, 0x00, 0x00, 0x10}}, kRdmaBody}));
}

TEST_CASE("ionic: inline write WQE bytes, up to 32") {
  WorkRequest wr = request(Opcode::kWriteInline, 7);
  wr.inline_data = "hello";
  wr.bytes = 5;
  CHECK(post(wr) == golden_inline_hello());
  Bytes data(32);
  for (int i = 0; i < 32; ++i) data[i] = static_cast<uint8_t>(0xa0 + i);
  wr.inline_data = data.data();
  wr.bytes = Ionic::kMaxInlineBytes;
  CHECK(Ionic::kMaxInlineBytes == 32);
  CHECK(post(wr) == expect({{0, {0x07}},
                            {8, {0x21, 0x00, 0x00, 0x1c}},
                            kRdmaBody,
                            {28, {0x00, 0x00, 0x00, 0x20}},
                            {32, data}}));
  wr.bytes = 33;
  CHECK_THROWS_AS(post(wr), mori::platform::host::TrapError);
}

TEST_CASE("ionic: fetch-add WQE bytes (ionic_v2_atomic_bdy)") {
  WorkRequest wr = request(Opcode::kFetchAdd, 8);
  wr.width = 8;
  wr.remote_addr = kRemote + 8;
  wr.operand = 0x0000000100000002;
  wr.compare = 0x9999;  // not part of a fetch-add
  CHECK(post(wr) == golden_fetch_add());
}

TEST_CASE("ionic: compare-swap WQE bytes, and no 32-bit atomics") {
  WorkRequest wr = request(Opcode::kCompareSwap, 9);
  wr.width = 8;
  wr.operand = 0x3333333344444444;
  wr.compare = 0x1111111122222222;
  CHECK(post(wr) == golden_compare_swap());
  CHECK_FALSE(Ionic::kNativeAtomic32);
  wr.width = 4;  // the engine emulates these; the provider never widens one silently
  CHECK_THROWS_AS(post(wr), mori::platform::host::TrapError);
}

TEST_CASE("ionic: fence and signaled flags") {
  WorkRequest wr = request(Opcode::kWrite, 10);
  wr.bytes = 1;
  struct Case {
    uint8_t signaled, fence, flags_low;  // be16 flags: byte 10 stays 0
  };
  for (Case c : {Case{0, 1, 0x11}, Case{1, 1, 0x19}, Case{1, 0, 0x18}, Case{0, 0, 0x10}}) {
    wr.signaled = c.signaled;
    wr.fence = c.fence;
    const Bytes b = post(wr);
    CHECK(b[10] == 0x00);
    CHECK(b[11] == c.flags_low);  // FENCE 0x01, SIG 0x08, COLOR 0x10
  }
}

TEST_CASE("ionic: index wrap: the color flips each pass, wqe_idx keeps 64 bits") {
  WorkRequest wr = request(Opcode::kWrite, 63, 0);
  wr.bytes = 1;
  CHECK(post(wr)[11] == 0x10);  // pass 0
  wr.index = 64;
  Bytes b = post(wr);
  CHECK(b[0] == 0x40);
  CHECK(b[11] == 0x00);  // pass 1: no COLOR
  wr.index = 128;
  CHECK(post(wr)[11] == 0x10);
  wr.index = 0x100000041;  // pass 0x4000001
  b = post(wr);
  CHECK(Bytes(b.begin(), b.begin() + 8) == Bytes{0x41, 0, 0, 0, 1, 0, 0, 0});
  CHECK(b[11] == 0x00);
  wr.sq_wqes = 4;  // a 4-entry SQ
  for (uint64_t i = 0; i < 12; ++i) {
    wr.index = i;
    CHECK(post(wr)[11] == ((i / 4) % 2 == 0 ? 0x10 : 0x00));
  }
  wr.sq_wqes = 0;  // an engine that forgot the SQ depth
  CHECK_THROWS_AS(post(wr), mori::platform::host::TrapError);
}

TEST_CASE("ionic: doorbell values (ionic_queue_dbell_val)") {
  Endpoint e(8);
  e.ep.qpn = 0x7f000000 | kQpn;  // bits above the 24-bit qid are not the doorbell's
  Ionic::ring_doorbell(e.ep, 70, nullptr);
  Bytes reg(8);
  std::memcpy(reg.data(), &e.dbpage[2], 8);
  CHECK(reg == Bytes{0x06, 0x00, 0x00, 0x56, 0x34, 0x12, 0x00, 0x00});  // le64 0x123456'000006
  CHECK(e.dbpage[5] == 0);
  CHECK(mori::provider::ionic_dbell_val(1, 0xffff, 65536) == 0x100ffffu);
  CHECK(mori::provider::ionic_dbell_val(0xabcdef, 65536, 65536) == 0xabcdef000000u);
}

TEST_CASE("ionic: the CQ doorbell (ep.cq_dbr) is rung after a poll that consumed") {
  Endpoint e(8);
  e.ep.reserved = 100;
  CHECK_FALSE(Ionic::poll_cq(e.ep).advanced);
  CHECK(e.dbpage[5] == 0);  // nothing consumed, nothing rung
  uint64_t produced = 0;
  auto complete = [&](uint64_t n) {
    while (produced < n) {
      const uint64_t i = produced;
      codec().complete(e.ep, &produced, i, request(Opcode::kWrite, i), CompletionStatus::kSuccess);
    }
  };
  complete(8);  // a full ring
  CHECK(e.poll().completed_through == 8);
  CHECK(e.dbpage[5] == 0x42000000);  // cqn 0x42, position 8 & 7
  complete(10);
  CHECK(e.poll().completed_through == 10);
  CHECK(e.dbpage[5] == 0x42000002);
  CHECK(e.dbpage[2] == 0);  // the SQ register is untouched
  e.ep.cq_dbr = nullptr;    // the software NIC: no CQ doorbell
  complete(11);
  CHECK(e.poll().completed_through == 11);
  CHECK(e.dbpage[2] == 0);
}

// A CQE written byte by byte, independent of the codec: status, msn or wqe_idx, type, qid.
void write_cqe(Endpoint& e, uint64_t pos, uint8_t type, uint32_t status, uint32_t msn,
               uint16_t wqe_idx, uint32_t qid = kQpn) {
  uint8_t* c = e.cq.data() + 32 * (pos % e.ep.cq_entries);
  std::memset(c, 0, 32);
  const uint8_t msn_be[4] = {0, uint8_t(msn >> 16), uint8_t(msn >> 8), uint8_t(msn)};
  std::memcpy(c + 4, msn_be, 4);
  c[16] = uint8_t(wqe_idx), c[17] = uint8_t(wqe_idx >> 8);
  c[27] = uint8_t(status);
  const bool color = (pos / e.ep.cq_entries) % 2 == 0;
  c[28] = uint8_t(qid >> 16), c[29] = uint8_t(qid >> 8), c[30] = uint8_t(qid);
  c[31] = uint8_t(type << 5 | (status ? 2 : 0) | (color ? 1 : 0));
}

TEST_CASE("ionic: every ionic_status decodes to its ibv_wc_status_str text") {
  const char* texts[] = {"success",
                         "local length error",
                         "local QP operation error",
                         "local protection error",
                         "work request flushed",
                         "memory management operation error",
                         "bad response error",
                         "local access error",
                         "remote invalid request error",
                         "remote access error",
                         "remote operation error",
                         "transport retry counter exceeded",
                         "RNR retry counter exceeded",
                         "general error"};  // IONIC_STS_XRC_VIO_ERR -> IBV_WC_GENERAL_ERR
  Endpoint e(2);
  e.ep.reserved = 1 << 20;
  for (uint32_t s = 1; s <= 14; ++s) {  // 14: unknown, a general error too
    const uint64_t pos = e.ep.cq_consumed, failing = e.ep.completed + 5;
    write_cqe(e, pos, 2, s, static_cast<uint32_t>(failing + 1), 0);
    const CqPoll p = e.poll();
    CHECK(p.error == 1);
    CHECK(p.status == s);
    CHECK(std::string(p.status_text) == texts[s < 14 ? s : 13]);
    CHECK(p.completed_through == failing + 1);
    e.ep.completed = failing + 1;
  }
  // A flush comes as NPG and names no WQE.
  const uint64_t at = e.ep.completed;
  write_cqe(e, e.ep.cq_consumed, 3, 4, 0, 0x7777);
  const CqPoll p = e.poll();
  CHECK(std::string(p.status_text) == "work request flushed");
  CHECK(p.completed_through == at);
}

TEST_CASE("ionic: 24-bit msn and 16-bit wqe_idx extend to 64-bit indices") {
  Endpoint e(4);
  e.ep.completed = 0x12fffff0;  // msn wraps 24 bits in the next 0x10
  e.ep.reserved = e.ep.completed + 60;
  write_cqe(e, 0, 2, 0, 0x000005, 0);  // msn 0x13000005 & 0xffffff
  CHECK(e.poll().completed_through == 0x13000005);
  write_cqe(e, 1, 3, 3, 0, 0x0010);  // NPG error for WQE 0x13000010 (16-bit 0x0010)
  const CqPoll p = e.poll();
  CHECK(p.error == 1);
  CHECK(p.completed_through == 0x13000011);
}

TEST_CASE("ionic: CQEs of another queue, of receives or for unposted WQEs are errors") {
  Endpoint e(4);
  e.ep.reserved = 10;
  write_cqe(e, 0, 2, 0, 3, 0, kQpn + 1);
  CqPoll p = e.poll();
  CHECK(p.error == 1);
  CHECK(p.status == 0x100);
  CHECK(std::string(p.status_text) ==
        "unexpected completion (not a send completion of this queue pair)");
  write_cqe(e, 1, 1, 0, 3, 0);  // IONIC_V1_CQE_TYPE_RECV
  CHECK(e.poll().status == 0x100);
  write_cqe(e, 2, 2, 0, 11, 0);  // msn 11: WQE 10 was never reserved
  p = e.poll();
  CHECK(p.status == 0x101);
  CHECK(std::string(p.status_text) == "completion for a WQE that was never posted");
  CHECK(p.completed_through == 0);
  CHECK(e.ep.cq_consumed == 3);
}
