// RcQp (backend/host/wire/rc_qp.hpp) fed crafted datagrams: the requester's headers, each check
// of the responder (IBTA 9.7.4 / 9.7.5), and the requester's answer to ACKs and responses that
// do not fit its window or its requests. test_wire_rc_qp.cpp runs two QPs end to end.
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "wire_test_link.hpp"

namespace mori::wire::test {
namespace {

// A datagram as A would send it to B (or, with `to_a`, as B would send it to A).
std::vector<uint8_t> crafted(Packet p, bool to_a = false) {
  p.src_ip = to_a ? 0x0200000A : 0x0100000A;
  p.dst_ip = to_a ? 0x0100000A : 0x0200000A;
  p.dest_qp = to_a ? 0x11 : 0x22;
  p.ip_id = 1;
  std::vector<uint8_t> out;
  build(p, &out);
  return out;
}

Packet packet(BthOpcode op, uint32_t psn) {
  Packet p;
  p.opcode = op;
  p.psn = psn;
  return p;
}

// Every datagram a link carries, decoded (the bytes kept alive for the payload spans).
struct Capture {
  std::vector<std::vector<uint8_t>> bytes;
  std::vector<Packet> packets;
  void attach(TestLink& link) {
    link.filter = [this](std::vector<uint8_t>& d, uint64_t) {
      bytes.push_back(d);
      return true;
    };
  }
  void decode() {
    packets.clear();
    for (auto& b : bytes) {
      Packet p;
      std::string why;
      REQUIRE(parse(b, &p, &why));
      packets.push_back(p);
    }
  }
};

}  // namespace

TEST_CASE("wire rc_qp: the requester's headers") {
  QpAttributes attr_a, attr_b;
  connected_attributes(&attr_a, &attr_b, 1);
  attr_a.traffic_class = 0x68;
  attr_a.hop_limit = 9;
  TestPair t(attr_a, attr_b);
  Capture c;
  c.attach(t.ab);
  std::vector<uint8_t> src = pattern(600, 1);
  t.a->post(t.write(1, src.data(), 600, 32), t.now);
  uint64_t old;
  t.a->post(t.fetch_add(2, reinterpret_cast<uint8_t*>(&old), 8, 8, 1), t.now);
  REQUIRE(t.run(2));
  check_all_success(t, 2);
  c.decode();
  REQUIRE(c.packets.size() == 4);
  const BthOpcode ops[] = {BthOpcode::kWriteFirst, BthOpcode::kWriteMiddle, BthOpcode::kWriteLast,
                           BthOpcode::kFetchAdd};
  for (size_t i = 0; i < 4; ++i) {
    const Packet& p = c.packets[i];
    CHECK(p.opcode == ops[i]);
    CHECK(p.src_ip == attr_a.sgid_ipv4);
    CHECK(p.dst_ip == attr_a.dgid_ipv4);
    CHECK(p.tos == 0x68);
    CHECK(p.ttl == 9);
    CHECK(p.udp_sport == 0xC001);
    CHECK(p.dest_qp == 0x22);
    CHECK(p.psn == 0x100 + i);
    CHECK(p.ip_id == i + 1);  // a per-QP counter, nonzero
    CHECK(p.ack_request == (i >= 2));
  }
  CHECK(c.packets[0].va == kRemoteBase + 32);
  CHECK(c.packets[0].rkey == kRemoteKey);
  CHECK(c.packets[0].dma_length == 600);
  CHECK(c.packets[0].payload.size() == 256);
  CHECK(c.packets[1].payload.size() == 256);
  CHECK(c.packets[2].payload.size() == 88);
  CHECK(c.packets[3].va == kRemoteBase + 8);
  CHECK(c.packets[3].swap_add == 1);
}

TEST_CASE("wire rc_qp: the responder checks each request") {
  TestPair t(1);  // B's MTU 256; B expects PSN 0x100
  t.memory_b.fill(0xEE);
  Capture c;
  c.attach(t.ba);
  std::vector<uint8_t> data = pattern(1024, 2);
  auto payload = [&](size_t n) { return std::span<const uint8_t>(data.data(), n); };
  auto first = [&](uint32_t psn, size_t n, uint32_t dma) {
    Packet p = packet(BthOpcode::kWriteFirst, psn);
    p.va = kRemoteBase;
    p.rkey = kRemoteKey;
    p.dma_length = dma;
    p.payload = payload(n);
    return p;
  };
  auto last_nak = [&]() {
    c.decode();
    REQUIRE(!c.packets.empty());
    return c.packets.back();
  };
  SUBCASE("a First shorter than the MTU") {
    t.b->receive(crafted(first(0x100, 200, 400)), t.now);
    CHECK(last_nak().syndrome == nak_syndrome(NakCode::kInvalidRequest));
    CHECK(last_nak().psn == 0x100);
  }
  SUBCASE("an Only whose payload is not its DMA length") {
    Packet p = first(0x100, 10, 11);
    p.opcode = BthOpcode::kWriteOnly;
    t.b->receive(crafted(p), t.now);
    CHECK(last_nak().syndrome == nak_syndrome(NakCode::kInvalidRequest));
  }
  SUBCASE("a Middle without a First") {
    Packet p = packet(BthOpcode::kWriteMiddle, 0x100);
    p.payload = payload(256);
    t.b->receive(crafted(p), t.now);
    CHECK(last_nak().syndrome == nak_syndrome(NakCode::kInvalidRequest));
  }
  size_t untouched_from = 0;
  SUBCASE("a Last that does not end the DMA length") {
    t.b->receive(crafted(first(0x100, 256, 600)), t.now);
    untouched_from = 256;  // the First landed
    Packet p = packet(BthOpcode::kWriteLast, 0x101);
    p.payload = payload(100);
    t.b->receive(crafted(p), t.now);
    CHECK(last_nak().syndrome == nak_syndrome(NakCode::kInvalidRequest));
    CHECK(last_nak().psn == 0x101);
  }
  SUBCASE("a packet beyond the path MTU") {
    t.b->receive(crafted(first(0x100, 512, 1024)), t.now);
    CHECK(last_nak().syndrome == nak_syndrome(NakCode::kInvalidRequest));
  }
  SUBCASE("an unknown key") {
    Packet p = first(0x100, 256, 600);
    p.rkey = 5;
    t.b->receive(crafted(p), t.now);
    CHECK(last_nak().syndrome == nak_syndrome(NakCode::kRemoteAccessError));
    CHECK(last_nak().psn == 0x100);
  }
  CHECK(t.b->stats().naks_sent == 1);
  for (size_t i = untouched_from; i < 1024; ++i) REQUIRE(t.memory_b.bytes()[i] == 0xEE);
}

TEST_CASE("wire rc_qp: the responder drops what is not its connection's") {
  TestPair t(1);
  Packet p = packet(BthOpcode::kWriteOnly, 0x100);
  p.va = kRemoteBase;
  p.rkey = kRemoteKey;
  uint8_t byte = 7;
  p.dma_length = 1;
  p.payload = std::span<const uint8_t>(&byte, 1);
  p.ack_request = true;
  std::vector<uint8_t> d = crafted(p);
  d[40 + 16] ^= 1;  // a payload byte: the ICRC no longer matches
  {
    Packet q = p;
    q.dest_qp = 0x23;
    std::vector<uint8_t> other;
    q.src_ip = 0x0100000A;
    q.dst_ip = 0x0200000A;
    q.ip_id = 1;
    build(q, &other);
    t.b->receive(other, t.now);
  }
  t.b->receive(d, t.now);  // a bad ICRC
  Packet from_elsewhere = p;
  std::vector<uint8_t> e;
  from_elsewhere.src_ip = 0x0900000A;
  from_elsewhere.dst_ip = 0x0200000A;
  from_elsewhere.dest_qp = 0x22;
  from_elsewhere.ip_id = 1;
  build(from_elsewhere, &e);
  t.b->receive(e, t.now);
  CHECK(t.b->stats().dropped == 3);
  CHECK(t.b->stats().packets_received == 3);
  CHECK(t.b->stats().packets_sent == 0);
  CHECK(t.memory_b.bytes()[0] == 0);
  t.b->receive(crafted(p), t.now);  // the right one
  CHECK(t.memory_b.bytes()[0] == 7);
  CHECK(t.b->next_deadline() == t.now);  // its ACK is due
  t.b->progress(t.now);
  CHECK(t.b->stats().acks_sent == 1);
  CHECK(t.b->next_deadline() == Clock::time_point::max());
}

TEST_CASE("wire rc_qp: gaps and duplicates at the responder") {
  TestPair t(1);
  Capture c;
  c.attach(t.ba);
  uint8_t bytes[4] = {1, 2, 3, 4};
  auto only = [&](uint32_t psn, uint8_t n, uint64_t offset) {
    Packet p = packet(BthOpcode::kWriteOnly, psn);
    p.va = kRemoteBase + offset;
    p.rkey = kRemoteKey;
    p.dma_length = n;
    p.payload = std::span<const uint8_t>(bytes, n);
    p.ack_request = true;
    return crafted(p);
  };
  t.b->receive(only(0x102, 1, 0), t.now);  // a gap: NAK PSN sequence error with ePSN 0x100
  t.b->receive(only(0x103, 1, 0), t.now);  // the same gap: no second NAK
  c.decode();
  REQUIRE(c.packets.size() == 1);
  CHECK(c.packets[0].syndrome == nak_syndrome(NakCode::kPsnSequenceError));
  CHECK(c.packets[0].psn == 0x100);
  t.b->receive(only(0x100, 4, 0), t.now);
  t.b->receive(only(0x101, 2, 8), t.now);
  t.b->progress(t.now);  // one ACK for both
  c.decode();
  REQUIRE(c.packets.size() == 2);
  CHECK(c.packets[1].opcode == BthOpcode::kAcknowledge);
  CHECK(c.packets[1].syndrome == kAckSyndrome);
  CHECK(c.packets[1].psn == 0x101);
  CHECK(c.packets[1].msn == 2);
  bytes[0] = 9;
  t.b->receive(only(0x100, 4, 0), t.now);  // a duplicate: not written again, ACKed again
  t.b->progress(t.now);
  c.decode();
  REQUIRE(c.packets.size() == 3);
  CHECK(c.packets[2].psn == 0x101);
  CHECK(t.memory_b.bytes()[0] == 1);
  CHECK(t.b->stats().duplicates_received == 1);
  t.b->receive(only(0x104, 1, 0), t.now);  // a new gap once ePSN moved: NAKed again
  CHECK(t.b->stats().naks_sent == 2);
}

TEST_CASE("wire rc_qp: a duplicate atomic older than the saved results is NAKed") {
  QpAttributes attr_a, attr_b;
  connected_attributes(&attr_a, &attr_b);
  attr_b.max_dest_rd_atomic = 1;
  TestPair t(attr_a, attr_b);
  Capture c;
  c.attach(t.ba);
  auto add = [&](uint32_t psn) {
    Packet p = packet(BthOpcode::kFetchAdd, psn);
    p.va = kRemoteBase;
    p.rkey = kRemoteKey;
    p.swap_add = 1;
    return crafted(p);
  };
  t.b->receive(add(0x100), t.now);
  t.b->receive(add(0x101), t.now);
  t.b->receive(add(0x101), t.now);  // replayed: the saved result
  t.b->receive(add(0x100), t.now);  // too old: invalid request
  c.decode();
  REQUIRE(c.packets.size() == 4);
  CHECK(c.packets[0].original == 0);
  CHECK(c.packets[1].original == 1);
  CHECK(c.packets[2].opcode == BthOpcode::kAtomicAcknowledge);
  CHECK(c.packets[2].original == 1);
  CHECK(c.packets[2].psn == 0x101);
  CHECK(c.packets[3].syndrome == nak_syndrome(NakCode::kInvalidRequest));
  CHECK(t.memory_b.word(0) == 2);
  CHECK(t.b->stats().atomics_replayed == 1);
}

TEST_CASE("wire rc_qp: ghost ACKs are ignored; responses that make no sense fail the QP") {
  TestPair t;
  t.ab.faults.loss = 1.0;  // nothing reaches B: the responses are ours
  std::vector<uint8_t> src(100, 3);
  SUBCASE("ACKs outside the window, then the real one") {
    t.a->post(t.write(1, src.data(), 100, 0), t.now);
    Packet ack = packet(BthOpcode::kAcknowledge, 0x101);  // beyond what A sent
    ack.syndrome = kAckSyndrome;
    t.a->receive(crafted(ack, true), t.now);
    ack.psn = 0xFF;  // before it
    t.a->receive(crafted(ack, true), t.now);
    ack.psn = 0x100 + 0x800000;  // half the PSN space away: outside the window either way
    ack.syndrome = nak_syndrome(NakCode::kRemoteAccessError);
    t.a->receive(crafted(ack, true), t.now);
    CHECK(t.a->outstanding() == 1);
    Completion c;
    CHECK(!t.a->poll(&c));
    ack.syndrome = kAckSyndrome;
    ack.psn = 0x100;
    t.a->receive(crafted(ack, true), t.now);
    REQUIRE(t.a->poll(&c));
    CHECK(c.status == WcStatus::kSuccess);
    CHECK(!t.a->in_error());
  }
  SUBCASE("a read response for a write") {
    t.a->post(t.write(1, src.data(), 100, 0), t.now);
    t.a->post(t.write(2, src.data(), 100, 0), t.now);
    Packet r = packet(BthOpcode::kReadResponseOnly, 0x100);
    r.syndrome = kAckSyndrome;
    t.a->receive(crafted(r, true), t.now);
    REQUIRE(t.run(2));
    CHECK(t.done[0].status == WcStatus::kBadResponse);
    CHECK(t.done[0].why == "read response for PSN 0x000100, which is a write");
    CHECK(t.done[1].status == WcStatus::kFlushed);
    CHECK(t.a->in_error());
  }
  SUBCASE("an RNR NAK is no ACK") {
    t.a->post(t.write(1, src.data(), 100, 0), t.now);
    Packet ack = packet(BthOpcode::kAcknowledge, 0x100);
    ack.syndrome = 0x20 | 0x0E;  // RNR NAK (IBTA 9.3.5): not an acknowledgment
    t.a->receive(crafted(ack, true), t.now);
    CHECK(t.a->outstanding() == 1);
    Completion c;
    CHECK(!t.a->poll(&c));
    CHECK(!t.a->in_error());
  }
  SUBCASE("a read response whose opcode does not fit its place") {
    std::vector<uint8_t> dst(600);
    t.a->post(t.read(1, dst.data(), 600, 0), t.now);  // one response, Only: a Last starts nothing
    Packet r = packet(BthOpcode::kReadResponseLast, 0x100);
    r.syndrome = kAckSyndrome;
    r.payload = std::span<const uint8_t>(dst.data(), 600);
    t.a->receive(crafted(r, true), t.now);
    REQUIRE(t.run(1));
    CHECK(t.done[0].status == WcStatus::kBadResponse);
    CHECK(t.done[0].why == "read response for PSN 0x000100 is " +
                               std::string(opcode_name(r.opcode)) +
                               " with 600 bytes, packet 1 of 1 with 600 expected");
  }
  SUBCASE("an atomic ACK for a read") {
    std::vector<uint8_t> dst(10);
    t.a->post(t.read(1, dst.data(), 10, 0), t.now);
    Packet r = packet(BthOpcode::kAtomicAcknowledge, 0x100);
    r.syndrome = kAckSyndrome;
    t.a->receive(crafted(r, true), t.now);
    REQUIRE(t.run(1));
    CHECK(t.done[0].status == WcStatus::kBadResponse);
    CHECK(t.done[0].why == "atomic ACK for PSN 0x000100, which is a read");
  }
}

}  // namespace mori::wire::test

namespace mori::wire::test {

TEST_CASE("wire rc_qp: timeout 0 never retries; a write's source is read at each transmission") {
  SUBCASE("timeout 0: infinite") {
    QpAttributes attr_a, attr_b;
    connected_attributes(&attr_a, &attr_b);
    attr_a.timeout = 0;
    TestPair t(attr_a, attr_b);
    t.ab.faults.loss = 1.0;
    uint8_t byte = 1;
    t.a->post(t.write(1, &byte, 1, 0), t.now);
    CHECK(t.a->next_deadline() == Clock::time_point::max());
    CHECK(!t.run(1, 100s));  // nothing left to happen: no timer
    CHECK(t.a->outstanding() == 1);
    CHECK(t.a->stats().timeouts == 0);
    CHECK(!t.a->in_error());
  }
  SUBCASE("the retransmission carries the source's bytes as they are then") {
    TestPair t;
    t.ab.filter = [](std::vector<uint8_t>&, uint64_t i) { return i != 0; };
    std::vector<uint8_t> src(40, 1);
    const Clock::time_point start = t.now;
    t.a->post(t.write(1, src.data(), 40, 0), t.now);
    CHECK(t.a->next_deadline() == start + std::chrono::nanoseconds(4096 << 10));
    std::fill(src.begin(), src.end(), 2);  // not copied at post: read again when resent
    REQUIRE(t.run(1));
    check_all_success(t, 1);
    for (int i = 0; i < 40; ++i) REQUIRE(t.memory_b.bytes()[i] == 2);
    CHECK(t.a->stats().timeouts == 1);
    CHECK(t.now - start == std::chrono::nanoseconds(4096 << 10) + 2 * 2us);
  }
}

}  // namespace mori::wire::test
