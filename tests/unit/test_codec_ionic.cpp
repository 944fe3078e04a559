// The software NIC's ionic codec (softnic/ionic_codec.cpp): round trips, the golden WQEs decoded,
// doorbells announced, CQEs written and polled, and garbage or random WQEs rejected with a reason.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "ionic_wqe_helpers.hpp"

using namespace mori::test::ionic_wqe;

namespace {

// What a WQE carries of a work request (not qpn, reserved or the inline pointer).
auto fields(const WorkRequest& w) {
  return std::tuple(w.opcode, w.signaled, w.fence, w.width, w.index, w.remote_addr, w.rkey,
                    w.local_addr, w.lkey, w.bytes, w.operand, w.compare);
}

}  // namespace

TEST_CASE("ionic: codec announced() follows the doorbell across SQ wraps") {
  Endpoint e(8);
  e.ep.sq_wqes = 8;
  CHECK(codec().announced(e.ep, 0) == 0);
  uint64_t last = 0;
  for (uint64_t next : {3, 10, 11, 18, 25, 25, 31}) {
    Ionic::ring_doorbell(e.ep, next, nullptr);
    last = codec().announced(e.ep, last);
    CHECK(last == next);
  }
  e.dbpage[2] = mori::provider::ionic_dbell_val(kQpn + 1, 33, 8);  // another queue's doorbell
  CHECK(codec().announced(e.ep, last) == last);
}

TEST_CASE("ionic: codec round trip of every operation") {
  const char data[] = "0123456789abcdef0123456789abcdef";
  for (Opcode op : {Opcode::kWrite, Opcode::kRead, Opcode::kWriteInline, Opcode::kFetchAdd,
                    Opcode::kCompareSwap}) {
    for (uint8_t flags = 0; flags < 4; ++flags) {
      CAPTURE(static_cast<int>(op));
      WorkRequest wr = request(op, 1000 + flags, flags & 1, flags >> 1);
      const bool atomic = op == Opcode::kFetchAdd || op == Opcode::kCompareSwap;
      wr.bytes = atomic ? 0 : op == Opcode::kWriteInline ? 17 + flags : 0x12345 + flags;
      wr.width = atomic ? 8 : 0;
      wr.operand = atomic ? 0x0102030405060708 : 0;
      wr.compare = op == Opcode::kCompareSwap ? 0x1112131415161718 : 0;
      if (op == Opcode::kWriteInline) {
        wr.inline_data = data;
        wr.local_addr = 0;
        wr.lkey = 0;
      }
      const Bytes bytes = post(wr);
      WorkRequest got;
      std::string why;
      REQUIRE_MESSAGE(codec().decode(bytes.data(), wr.index, &got, &why), why);
      CHECK(fields(got) == fields(wr));
      if (op == Opcode::kWriteInline) {
        CHECK(got.inline_data == bytes.data() + 32);
        CHECK(std::memcmp(got.inline_data, data, wr.bytes) == 0);
      }
    }
  }
}

TEST_CASE("ionic: the codec decodes the golden WQEs into their work requests") {
  struct Case {
    Bytes wqe;
    WorkRequest want;
  };
  WorkRequest write = request(Opcode::kWrite, 5);
  write.bytes = 0x1000;
  WorkRequest read = request(Opcode::kRead, 6, 0);
  read.bytes = 0x40;
  WorkRequest inl = request(Opcode::kWriteInline, 7);
  inl.bytes = 5;
  inl.local_addr = 0, inl.lkey = 0;  // an inline write names no local memory
  WorkRequest add = request(Opcode::kFetchAdd, 8);
  add.width = 8, add.remote_addr = kRemote + 8, add.operand = 0x0000000100000002;
  WorkRequest cas = request(Opcode::kCompareSwap, 9);
  cas.width = 8, cas.operand = 0x3333333344444444, cas.compare = 0x1111111122222222;
  const Case cases[] = {{golden_write(), write},
                        {golden_read(), read},
                        {golden_inline_hello(), inl},
                        {golden_fetch_add(), add},
                        {golden_compare_swap(), cas}};
  for (const Case& c : cases) {
    CAPTURE(int(c.want.opcode));
    WorkRequest got{};
    std::string why;
    REQUIRE_MESSAGE(codec().decode(c.wqe.data(), c.want.index, &got, &why), why);
    CHECK(fields(got) == fields(c.want));
    if (c.want.opcode == Opcode::kWriteInline) {
      REQUIRE(got.inline_data != nullptr);
      CHECK(std::memcmp(got.inline_data, "hello", 5) == 0);
    }
  }
}

TEST_CASE("ionic: complete() writes CQEs as the NIC does (bytes)") {
  Endpoint e(4);
  uint64_t produced = 0;
  WorkRequest wr = request(Opcode::kWrite, 5);
  wr.bytes = 0x1000;
  auto cqe = [&](int slot) {
    return Bytes(e.cq.begin() + 32 * slot, e.cq.begin() + 32 * slot + 32);
  };
  auto expect32 = [](std::initializer_list<std::pair<int, Bytes>> runs) {
    Bytes b = expect(runs);
    return Bytes(b.begin(), b.begin() + 32);
  };
  // msg_msn = index + 1; npg_wqe_idx = index; status_length; qid << 8 | type << 5 | err | color
  codec().complete(e.ep, &produced, 5, wr, CompletionStatus::kSuccess);
  CHECK(cqe(0) == expect32({{7, {0x06}},
                            {16, {0x05}},
                            {24, {0x00, 0x00, 0x10, 0x00}},
                            {28, {0x12, 0x34, 0x56, 0x41}}}));  // SEND_MSN, color 1
  codec().complete(e.ep, &produced, 7, wr, CompletionStatus::kRemoteAccess);
  CHECK(cqe(1) == expect32({{7, {0x08}},
                            {16, {0x07}},
                            {27, {0x09}},                       // REMOTE_ACC_ERR
                            {28, {0x12, 0x34, 0x56, 0x43}}}));  // SEND_MSN, error
  produced = 4;  // the second pass of the ring: color 0
  codec().complete(e.ep, &produced, 9, wr, CompletionStatus::kLocalProtection);
  CHECK(produced == 5);
  CHECK(cqe(0) == expect32({{16, {0x09}},
                            {27, {0x03}},                       // LOCAL_PROT_ERR, no msn
                            {28, {0x12, 0x34, 0x56, 0x62}}}));  // SEND_NPG, error, color 0
}

TEST_CASE("ionic: complete() then poll_cq() across CQ wraps, success and every error") {
  Endpoint e(4);
  uint64_t produced = 0, index = 0;
  e.ep.reserved = 1000;
  for (int round = 0; round < 10; ++round) {  // 1..3 signalled completions per poll
    const uint64_t first = index;
    for (int k = 0; k <= round % 3; ++k) {
      index += 3;  // two unsignalled WQEs before each signalled one
      codec().complete(e.ep, &produced, index - 1, request(Opcode::kWrite, index - 1),
                       CompletionStatus::kSuccess);
    }
    const CqPoll p = e.poll();
    CHECK(p.advanced == 1);
    CHECK(p.error == 0);
    CHECK(std::string(p.status_text) == "success");
    CHECK(p.completed_through == index);
    CHECK(e.ep.cq_consumed == produced);
    CHECK(index > first);
  }
  CHECK(produced > 8);  // several passes of the 4-entry ring
  struct Case {
    CompletionStatus status;
    uint32_t code;
    const char* text;
  };
  for (const Case& c :
       {Case{CompletionStatus::kLocalProtection, 3, "local protection error"},
        Case{CompletionStatus::kRemoteAccess, 9, "remote access error"},
        Case{CompletionStatus::kRemoteInvalidRequest, 8, "remote invalid request error"},
        Case{CompletionStatus::kLocalLength, 1, "local length error"},
        Case{CompletionStatus::kGeneral, 2, "local QP operation error"}}) {
    for (int pass = 0; pass < 3; ++pass) {
      index += 2;
      codec().complete(e.ep, &produced, index - 1, request(Opcode::kRead, index - 1), c.status);
      const CqPoll p = e.poll();
      CHECK(p.error == 1);
      CHECK(p.advanced == 1);
      CHECK(p.status == c.code);
      CHECK(std::string(p.status_text) == c.text);
      CHECK(p.completed_through == index);  // the failing WQE is completed_through - 1
      e.ep.completed = index;
    }
  }
  CHECK_FALSE(Ionic::poll_cq(e.ep).advanced);
}

TEST_CASE("ionic: a software NIC thread completes while the engine polls (CQ reuse ordering)") {
  constexpr uint64_t kWqes = 20000;
  Endpoint e(4);
  e.ep.cq_dbr = nullptr;
  e.ep.reserved = kWqes;
  std::thread nic([&] {
    uint64_t produced = 0;
    for (uint64_t i = 0; i < kWqes; ++i) {
      // A slot is reused only after the poller released it through cq_consumed.
      while (produced -
                 std::atomic_ref<uint64_t>(e.ep.cq_consumed).load(std::memory_order_acquire) >=
             e.ep.cq_entries)
        std::this_thread::yield();
      codec().complete(e.ep, &produced, i, request(Opcode::kWrite, i), CompletionStatus::kSuccess);
    }
  });
  uint64_t polls = 0;
  while (e.ep.completed < kWqes) {
    const CqPoll p = e.poll();
    REQUIRE(p.error == 0);
    polls += p.advanced;
  }
  nic.join();
  CHECK(e.ep.completed == kWqes);
  CHECK(polls > 0);
}

TEST_CASE("ionic: garbage WQEs are rejected with a reason") {
  WorkRequest wr = request(Opcode::kWrite, 5);
  wr.bytes = 0x1000;
  const Bytes write = post(wr);
  wr.opcode = Opcode::kRead;
  const Bytes read = post(wr);
  wr = request(Opcode::kWriteInline, 5);
  wr.inline_data = "x";
  wr.bytes = 1;
  const Bytes inl = post(wr);
  wr = request(Opcode::kFetchAdd, 5);
  wr.width = 8;
  const Bytes fadd = post(wr);
  struct Case {
    const Bytes& base;
    std::initializer_list<std::pair<int, uint8_t>> edits;
    const char* why;
  };
  const Case cases[] = {
      {write, {{8, 0x07}}, "ionic: unknown opcode 0x07"},
      {write, {{8, 0x20}}, "ionic: unknown opcode 0x20"},  // SEND: never posted by the engine
      {write, {{0, 0x04}}, "ionic: WQE index 4 where 5 was expected (a stale or unwritten entry)"},
      {write, {{11, 0x1a}}, "ionic: unsupported flags 0x001a"},  // SOL
      {write, {{10, 0x10}}, "ionic: unsupported flags 0x1018"},  // SPEC32
      {write, {{9, 2}}, "ionic: SGE count 2 (the engine posts at most 1)"},
      {write, {{9, 255}}, "ionic: SGE count 255 (the engine posts at most 1)"},
      {write, {{43, 0xff}}, "ionic: SGE length 4351 differs from message length 4096"},
      {write, {{28, 0x80}, {31, 1}}, "ionic: message length 2147487745 beyond 2 GiB"},
      {write, {{9, 0}}, "ionic: message length 4096 with no SGE"},
      {read, {{11, 0x1c}}, "ionic: inline data on an RDMA read"},
      {inl, {{9, 1}}, "ionic: inline write with an SGE count of 1"},
      {inl, {{31, 33}}, "ionic: inline length 33 beyond the entry's 32 bytes"},
      {fadd, {{11, 0x1c}}, "ionic: inline data on an atomic"},
      {fadd, {{9, 0}}, "ionic: atomic with an SGE count of 0 (needs 1)"},
  };
  for (const Case& c : cases) {
    Bytes b = c.base;
    for (const auto& [at, value] : c.edits) b[at] = value;
    WorkRequest got;
    std::string why;
    CHECK_FALSE(codec().decode(b.data(), 5, &got, &why));
    CHECK(why == c.why);
  }
}

TEST_CASE("ionic: decode of mutated and random entries rejects or yields a fitting request") {
  std::vector<Bytes> valid;
  for (Opcode op : {Opcode::kWrite, Opcode::kRead, Opcode::kWriteInline, Opcode::kFetchAdd}) {
    WorkRequest wr = request(op, 7);
    wr.bytes = op == Opcode::kWriteInline ? 32 : 64;
    wr.width = 8;
    wr.inline_data = "0123456789abcdef0123456789abcdef";
    valid.push_back(post(wr));
  }
  std::mt19937_64 rng(20240607);
  int accepted = 0;
  for (int i = 0; i < 200000; ++i) {
    alignas(64) uint8_t b[64];
    if (i % 8 == 0) {
      for (auto& byte : b) byte = static_cast<uint8_t>(rng());  // wholly random
    } else {
      std::memcpy(b, valid[rng() % valid.size()].data(), 64);
      for (int k = rng() % 4; k > 0; --k) b[rng() % 64] = static_cast<uint8_t>(rng());
    }
    WorkRequest got;
    std::string why;
    if (!codec().decode(b, 7, &got, &why)) {
      CHECK(why.rfind("ionic: ", 0) == 0);
      continue;
    }
    ++accepted;
    CHECK(got.index == 7);
    if (got.opcode == Opcode::kWriteInline) {
      CHECK(got.bytes <= 32);
      CHECK(got.inline_data == b + 32);
    }
  }
  CHECK(accepted > 50000);
}
