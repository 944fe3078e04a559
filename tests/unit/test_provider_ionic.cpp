// The Ionic provider's bytes and its software-NIC codec. Expected WQEs, CQEs and doorbells are byte
// arrays written out by hand from rdma-core's providers/ionic layouts (ionic_fw_types.h:
// ionic_v1_wqe = 16-byte base header + 48-byte body, big-endian fields except the le64 wqe_idx;
// ionic_queue.h: doorbell = qid << 24 | position), not computed with the provider's own structs.
#include <doctest/doctest.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "backend/host/softnic/codec.hpp"
#include "mori/provider/ionic.hpp"

using mori::provider::CqPoll;
using mori::provider::Ionic;
using mori::provider::Opcode;
using mori::provider::WorkRequest;
using mori::softnic::CompletionStatus;
using Bytes = std::vector<uint8_t>;

namespace {

constexpr uint32_t kSqWqes = 64;
constexpr uint64_t kRemote = 0x00007f1234567800, kLocal = 0x00007e0000001000;
constexpr uint32_t kRkey = 0x11223344, kLkey = 0x55667788, kQpn = 0x123456;

WorkRequest request(Opcode op, uint64_t index, uint8_t signaled = 1, uint8_t fence = 0) {
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
Bytes post(const WorkRequest& wr) {
  alignas(64) uint8_t slot[64];
  std::memset(slot, 0xee, sizeof(slot));
  switch (wr.opcode) {
    case Opcode::kWrite:
      Ionic::post_read_write<false>(slot, wr);
      break;
    case Opcode::kRead:
      Ionic::post_read_write<true>(slot, wr);
      break;
    case Opcode::kWriteInline:
      Ionic::post_inline_write(slot, wr);
      break;
    default:
      Ionic::post_atomic(slot, wr);
  }
  return Bytes(slot, slot + 64);
}

// A 64-byte expectation from its non-zero runs: {offset, {bytes...}}.
Bytes expect(std::initializer_list<std::pair<int, Bytes>> runs) {
  Bytes b(64, 0);
  for (const auto& [at, bytes] : runs) std::memcpy(b.data() + at, bytes.data(), bytes.size());
  return b;
}

// ionic_v1_common_bdy.rdma for kRemote / kRkey, at offset 16.
const std::pair<int, Bytes> kRdmaBody{
    16, {0x00, 0x00, 0x7f, 0x12, 0x34, 0x56, 0x78, 0x00, 0x11, 0x22, 0x33, 0x44}};

// The golden WQEs: each work request below as rdma-core's ionic provider lays it out, written by
// hand from ionic_fw_types.h (see the top). The writer tests hold Ionic::post_* to them and the
// decoder test holds the software NIC's codec to them, so neither is checked against the other.
Bytes golden_write() {  // request(kWrite, 5), 0x1000 bytes
  return expect({{0, {0x05}},
                 {8, {0x21, 0x01, 0x00, 0x18}},  // RDMA_WRITE v2, 1 SGE, SIG|COLOR
                 kRdmaBody,
                 {28, {0x00, 0x00, 0x10, 0x00}},
                 {32,
                  {0x00, 0x00, 0x7e, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x10, 0x00, 0x55,
                   0x66, 0x77, 0x88}}});
}
Bytes golden_read() {  // request(kRead, 6, unsignaled), 0x40 bytes
  return expect({{0, {0x06}},
                 {8, {0x02, 0x01, 0x00, 0x10}},  // RDMA_READ v2, 1 SGE, COLOR
                 kRdmaBody,
                 {28, {0x00, 0x00, 0x00, 0x40}},
                 {32,
                  {0x00, 0x00, 0x7e, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x40, 0x55,
                   0x66, 0x77, 0x88}}});
}
Bytes golden_inline_hello() {  // request(kWriteInline, 7), "hello"
  return expect({{0, {0x07}},
                 {8, {0x21, 0x00, 0x00, 0x1c}},  // no SGE; SIG|INL|COLOR
                 kRdmaBody,
                 {28, {0x00, 0x00, 0x00, 0x05}},
                 {32, {'h', 'e', 'l', 'l', 'o'}}});
}
Bytes golden_fetch_add() {  // request(kFetchAdd, 8), kRemote + 8, add 0x0000000100000002
  return expect({{0, {0x08}},
                 {8, {0x05, 0x01, 0x00, 0x18}},  // ATOMIC_FA v2, 1 SGE, SIG|COLOR
                 {16, {0x00, 0x00, 0x7f, 0x12, 0x34, 0x56, 0x78, 0x08, 0x11, 0x22, 0x33, 0x44}},
                 {28, {0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02}},  // swap_add high, low
                 {44, {0x55, 0x66, 0x77, 0x88, 0x00, 0x00, 0x7e, 0x00, 0x00, 0x00, 0x10, 0x00}}});
}
Bytes golden_compare_swap() {  // request(kCompareSwap, 9), swap 0x33..44 if 0x11..22
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

const mori::softnic::Codec& codec() { return mori::softnic::ionic_codec(); }

// What a WQE carries of a work request (not qpn, reserved or the inline pointer).
auto fields(const WorkRequest& w) {
  return std::tuple(w.opcode, w.signaled, w.fence, w.width, w.index, w.remote_addr, w.rkey,
                    w.local_addr, w.lkey, w.bytes, w.operand, w.compare);
}

}  // namespace

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
