// RcQp (backend/host/wire/rc_qp.hpp) between two QPs over wire_test_link.hpp's in-memory links:
// every byte at the target, exact packet and completion counts, and the failures a wrong
// attribute causes on hardware.
#include <doctest/doctest.h>

#include <cstring>
#include <random>
#include <vector>

#include "wire_test_link.hpp"

namespace mori::wire::test {
namespace {

uint32_t mtu_of(uint8_t path_mtu) { return 128u << path_mtu; }
uint64_t packets(uint64_t bytes, uint32_t mtu) { return bytes == 0 ? 1 : (bytes + mtu - 1) / mtu; }

}  // namespace

TEST_CASE("wire rc_qp: a put lands every byte, in ceil(N/MTU) packets") {
  for (uint8_t path_mtu : {uint8_t{1}, uint8_t{5}}) {
    const uint32_t mtu = mtu_of(path_mtu);
    for (uint32_t n : {1u, mtu - 1, mtu, mtu + 1, 10 * mtu + 3, 0u}) {
      CAPTURE(path_mtu);
      CAPTURE(n);
      TestPair t(path_mtu);
      t.memory_b.fill(0xEE);
      std::vector<uint8_t> src = pattern(n + 1, n);
      t.a->post(t.write(7, src.data(), n, 64), t.now);
      REQUIRE(t.run(1));
      check_all_success(t, 1);
      CHECK(t.done[0].id == 7);
      CHECK(std::memcmp(t.memory_b.bytes() + 64, src.data(), n) == 0);
      for (size_t i = 0; i < 64; ++i) CHECK(t.memory_b.bytes()[i] == 0xEE);
      for (size_t i = 64 + n; i < 64 + n + 300; ++i) REQUIRE(t.memory_b.bytes()[i] == 0xEE);
      CHECK(t.a->stats().packets_sent == packets(n, mtu));
      CHECK(t.a->stats().retransmitted == 0);
      CHECK(t.b->stats().acks_sent == 1);
      CHECK(t.b->stats().packets_received == packets(n, mtu));
      CHECK(t.a->outstanding() == 0);
      CHECK(t.a->next_deadline() == Clock::time_point::max());
    }
  }
}

TEST_CASE("wire rc_qp: a get returns every byte; its responses take the request's PSNs") {
  for (uint8_t path_mtu : {uint8_t{1}, uint8_t{5}}) {
    const uint32_t mtu = mtu_of(path_mtu);
    for (uint32_t n : {1u, mtu - 1, mtu, mtu + 1, 10 * mtu + 3, 0u}) {
      CAPTURE(path_mtu);
      CAPTURE(n);
      TestPair t(path_mtu);
      std::vector<uint8_t> remote = pattern(n + 1, n + 99);
      std::memcpy(t.memory_b.bytes() + 128, remote.data(), n);
      std::vector<uint8_t> dst(n + 16, 0xEE);
      t.a->post(t.read(3, dst.data(), n, 128), t.now);
      // then a write: its PSN follows the read's response PSNs at B
      std::vector<uint8_t> src = pattern(5, 1);
      t.a->post(t.write(4, src.data(), 5, 0), t.now);
      REQUIRE(t.run(2));
      check_all_success(t, 2);
      CHECK(t.done[0].id == 3);
      CHECK(t.done[1].id == 4);
      CHECK(std::memcmp(dst.data(), remote.data(), n) == 0);
      for (size_t i = n; i < n + 16; ++i) CHECK(dst[i] == 0xEE);
      CHECK(std::memcmp(t.memory_b.bytes(), src.data(), 5) == 0);
      CHECK(t.a->stats().packets_sent == 2);
      CHECK(t.b->stats().packets_sent == packets(n, mtu) + 1);  // the responses and one ACK
      CHECK(t.b->stats().naks_sent == 0);
    }
  }
}

TEST_CASE("wire rc_qp: fetch-add and compare-swap, 8 and 4 bytes") {
  TestPair t;
  const uint64_t w8 = 0x1122334455667788ull;
  std::memcpy(t.memory_b.bytes() + 8, &w8, 8);
  const uint32_t w4 = 0xA0000005u;
  std::memcpy(t.memory_b.bytes() + 16, &w4, 4);
  std::memset(t.memory_b.bytes() + 20, 0x5A, 4);  // the neighbour of the 4-byte word
  uint64_t r[6] = {};
  t.a->post(t.fetch_add(1, reinterpret_cast<uint8_t*>(&r[0]), 8, 8, 0x10), t.now);
  t.a->post(
      t.compare_swap(2, reinterpret_cast<uint8_t*>(&r[1]), 8, 8, 0x1122334455667798ull, 0xCAFE),
      t.now);
  t.a->post(t.compare_swap(3, reinterpret_cast<uint8_t*>(&r[2]), 8, 8, 1, 2), t.now);  // fails
  r[3] = r[4] = r[5] = ~0ull;
  t.a->post(t.fetch_add(4, reinterpret_cast<uint8_t*>(&r[3]), 4, 16, 0x7FFFFFFFu), t.now);
  t.a->post(t.compare_swap(5, reinterpret_cast<uint8_t*>(&r[4]), 4, 16, 0x20000004u, 77), t.now);
  t.a->post(t.compare_swap(6, reinterpret_cast<uint8_t*>(&r[5]), 4, 16, 5, 99), t.now);  // fails
  REQUIRE(t.run(6));
  check_all_success(t, 6);
  for (size_t i = 0; i < 6; ++i) CHECK(t.done[i].id == i + 1);
  CHECK(r[0] == 0x1122334455667788ull);
  CHECK(r[1] == 0x1122334455667798ull);
  CHECK(r[2] == 0xCAFE);
  CHECK(t.memory_b.word(8) == 0xCAFE);
  // the 4-byte results land in 4 bytes; the other 4 of each uint64 stay
  uint32_t lo[3], hi[3];
  for (int i = 0; i < 3; ++i) {
    std::memcpy(&lo[i], reinterpret_cast<uint8_t*>(&r[3 + i]), 4);
    std::memcpy(&hi[i], reinterpret_cast<uint8_t*>(&r[3 + i]) + 4, 4);
    CHECK(hi[i] == 0xFFFFFFFFu);
  }
  CHECK(lo[0] == 0xA0000005u);
  CHECK(lo[1] == 0x20000004u);  // 0xA0000005 + 0x7FFFFFFF wraps in 32 bits
  CHECK(lo[2] == 77);
  uint32_t now4;
  std::memcpy(&now4, t.memory_b.bytes() + 16, 4);
  CHECK(now4 == 77);
  for (int i = 20; i < 24; ++i) CHECK(t.memory_b.bytes()[i] == 0x5A);
  CHECK(t.a->stats().packets_sent == 6);
  CHECK(t.b->stats().packets_sent == 6);  // one atomic ACK each
}

namespace {

// 500 mixed requests (writes of 0..3 MTUs, reads of 0..3 MTUs, fetch-adds) under `faults` in both
// directions; every byte and the counter checked.
void mixed(const Faults& faults, uint64_t seed, size_t count, QpStats* a_stats, QpStats* b_stats) {
  QpAttributes attr_a, attr_b;
  connected_attributes(&attr_a, &attr_b, 1);
  attr_a.timeout = attr_b.timeout = 6;  // 262 us: the fake clock's loop stays short
  TestPair t(attr_a, attr_b, seed);
  t.ab.faults = t.ba.faults = faults;
  const uint32_t mtu = 256;
  std::mt19937 rng(static_cast<uint32_t>(seed));
  const uint64_t read_area = 512 * 1024, counter = 1000 * 1024;
  std::vector<uint8_t> remote = pattern(256 * 1024, 5);
  std::memcpy(t.memory_b.bytes() + read_area, remote.data(), remote.size());
  struct Op {
    RequestOp op;
    uint32_t bytes;
    uint64_t offset;
    std::vector<uint8_t> buf;
  };
  std::vector<Op> ops(count);
  uint64_t write_at = 0, read_at = 0, adds = 0;
  for (size_t i = 0; i < count; ++i) {
    Op& o = ops[i];
    const uint32_t kind = rng() % 3;
    o.bytes = rng() % (3 * mtu + 1);
    if (kind == 0) {
      o.op = RequestOp::kWrite;
      o.offset = write_at;
      write_at += o.bytes;
      o.buf = pattern(o.bytes + 1, static_cast<uint32_t>(i));  // never empty: data() != null
      t.a->post(t.write(i, o.buf.data(), o.bytes, o.offset), t.now);
    } else if (kind == 1) {
      o.op = RequestOp::kRead;
      o.offset = read_at;
      read_at = (read_at + o.bytes) % (remote.size() - 3 * mtu);
      o.buf.assign(o.bytes + 1, 0);
      t.a->post(t.read(i, o.buf.data(), o.bytes, read_area + o.offset), t.now);
    } else {
      o.op = RequestOp::kFetchAdd;
      o.buf.assign(8, 0);
      t.a->post(t.fetch_add(i, o.buf.data(), 8, counter, 1), t.now);
      ++adds;
    }
  }
  REQUIRE(write_at < read_area);
  REQUIRE(t.run(count, 60s));
  check_all_success(t, count);
  std::vector<bool> seen(adds, false);
  for (size_t i = 0; i < count; ++i) {
    const Op& o = ops[i];
    CHECK(t.done[i].id == i);
    if (o.op == RequestOp::kWrite) {
      REQUIRE(std::memcmp(t.memory_b.bytes() + o.offset, o.buf.data(), o.bytes) == 0);
    } else if (o.op == RequestOp::kRead) {
      REQUIRE(std::memcmp(remote.data() + o.offset, o.buf.data(), o.bytes) == 0);
    } else {
      uint64_t old;
      std::memcpy(&old, o.buf.data(), 8);
      REQUIRE(old < adds);
      CHECK(!seen[old]);  // each fetch-add saw a distinct value: executed once each
      seen[old] = true;
    }
  }
  CHECK(t.memory_b.word(counter) == adds);
  *a_stats = t.a->stats();
  *b_stats = t.b->stats();
}

}  // namespace

TEST_CASE("wire rc_qp: 500 mixed requests without faults, then under loss") {
  QpStats a, b;
  mixed({}, 1, 500, &a, &b);
  CHECK(a.retransmitted == 0);
  CHECK(a.timeouts == 0);
  CHECK(b.duplicates_received == 0);
  CHECK(b.naks_sent == 0);
  for (double loss : {0.01, 0.10, 0.30}) {
    CAPTURE(loss);
    Faults f;
    f.loss = loss;
    // At 30% loss each way, 8 timer periods without progress happen: about one seed in ten
    // exhausts retry_cnt 7 in 500 requests, as hardware would. This seed does not.
    mixed(f, 2, 500, &a, &b);
    CHECK(a.retransmitted > 0);
    CHECK(b.naks_sent > 0);
    CHECK(a.naks_received > 0);
    CHECK(b.duplicates_received > 0);
  }
}

TEST_CASE("wire rc_qp: duplication, reordering and delay") {
  QpStats a, b;
  Faults dup;
  dup.duplicate = 0.2;
  mixed(dup, 3, 500, &a, &b);
  CHECK(b.duplicates_received > 0);
  CHECK(b.atomics_replayed > 0);  // duplicated atomics answered from the saved results
  Faults reorder;
  reorder.reorder = 0.2;
  mixed(reorder, 4, 500, &a, &b);
  CHECK(b.naks_sent > 0);  // a packet overtaken is a gap at the responder
  CHECK(a.retransmitted > 0);
  Faults slow;
  slow.delay = 150us;  // more than half the timeout (262 us) round trip: some timeouts
  mixed(slow, 5, 200, &a, &b);
  Faults all;
  all.loss = 0.05;
  all.duplicate = 0.05;
  all.reorder = 0.05;
  mixed(all, 6, 500, &a, &b);
  CHECK(a.retransmitted > 0);
  CHECK(b.duplicates_received > 0);
}

TEST_CASE("wire rc_qp: a lost atomic ACK is answered from the saved result, not re-executed") {
  TestPair t;
  int atomic_acks = 0;
  t.ba.filter = [&](std::vector<uint8_t>& d, uint64_t) {
    if (opcode_of(d) != static_cast<uint8_t>(BthOpcode::kAtomicAcknowledge)) return true;
    return atomic_acks++ != 0;  // the first atomic ACK is lost
  };
  uint64_t word = 40;
  std::memcpy(t.memory_b.bytes(), &word, 8);
  uint64_t old = 0;
  t.a->post(t.fetch_add(1, reinterpret_cast<uint8_t*>(&old), 8, 0, 2), t.now);
  REQUIRE(t.run(1));
  check_all_success(t, 1);
  CHECK(old == 40);
  CHECK(t.memory_b.word(0) == 42);  // executed once
  CHECK(t.b->stats().atomics_replayed == 1);
  CHECK(t.a->stats().timeouts == 1);
  CHECK(t.a->stats().retransmitted == 1);
  CHECK(atomic_acks == 2);
}

TEST_CASE("wire rc_qp: 1000 fetch-adds of 1 under 10% loss give exactly 1000") {
  QpAttributes attr_a, attr_b;
  connected_attributes(&attr_a, &attr_b);
  attr_a.timeout = attr_b.timeout = 6;
  TestPair t(attr_a, attr_b, 11);
  t.ab.faults.loss = t.ba.faults.loss = 0.10;
  std::vector<uint64_t> old(1000);
  for (size_t i = 0; i < 1000; ++i) {
    t.a->post(t.fetch_add(i, reinterpret_cast<uint8_t*>(&old[i]), 8, 64, 1), t.now);
  }
  REQUIRE(t.run(1000, 60s));
  check_all_success(t, 1000);
  CHECK(t.memory_b.word(64) == 1000);
  // in order, each saw the one before: the responder executes atomics in PSN order
  for (size_t i = 0; i < 1000; ++i) REQUIRE(old[i] == i);
  CHECK(t.b->stats().atomics_replayed > 0);
}

TEST_CASE("wire rc_qp: ACKs are coalesced") {
  TestPair t;
  std::vector<uint8_t> src = pattern(8 * 100, 3);
  for (size_t i = 0; i < 100; ++i) t.a->post(t.write(i, src.data() + 8 * i, 8, 8 * i), t.now);
  REQUIRE(t.run(100));
  check_all_success(t, 100);
  CHECK(std::memcmp(t.memory_b.bytes(), src.data(), 800) == 0);
  CHECK(t.b->stats().packets_received == 100);
  CHECK(t.b->stats().acks_sent < 100);
  CHECK(t.b->stats().acks_sent == 1);  // one batch, one ACK
}

TEST_CASE("wire rc_qp: one lost middle packet: one NAK, go-back-N") {
  TestPair t(1);
  t.ab.filter = [](std::vector<uint8_t>&, uint64_t i) { return i != 10; };
  std::vector<uint8_t> src = pattern(20 * 256, 9);
  t.a->post(t.write(1, src.data(), 20 * 256, 0), t.now);
  REQUIRE(t.run(1));
  check_all_success(t, 1);
  CHECK(std::memcmp(t.memory_b.bytes(), src.data(), src.size()) == 0);
  CHECK(t.b->stats().naks_sent == 1);  // once for ePSN, though 9 packets arrived past it
  CHECK(t.a->stats().naks_received == 1);
  CHECK(t.a->stats().retransmitted == 10);  // PSNs 10..19 again
  CHECK(t.a->stats().timeouts == 0);
  CHECK(t.b->stats().duplicates_received == 0);
}

TEST_CASE("wire rc_qp: retries exhausted after retry_cnt + 1 timer periods, the rest flushed") {
  for (uint8_t retry_cnt : {uint8_t{7}, uint8_t{0}}) {
    CAPTURE(retry_cnt);
    QpAttributes attr_a, attr_b;
    connected_attributes(&attr_a, &attr_b);
    attr_a.retry_cnt = retry_cnt;
    TestPair t(attr_a, attr_b);
    t.ab.faults.loss = 1.0;
    std::vector<uint8_t> src(100, 1);
    const Clock::time_point start = t.now;
    t.a->post(t.write(1, src.data(), 100, 0), t.now);
    t.a->post(t.read(2, src.data(), 10, 0), t.now);
    t.a->post(t.write(3, src.data(), 100, 0), t.now);
    REQUIRE(t.run(3));
    const auto period = std::chrono::nanoseconds(4096 << 10);  // timeout 10: 4.194 ms
    CHECK(t.now - start == (retry_cnt + 1) * period);
    REQUIRE(t.done.size() == 3);
    CHECK(t.done[0].id == 1);
    CHECK(t.done[0].status == WcStatus::kRetryExceeded);
    CHECK(t.done[0].why ==
          "no ACK for PSN 0x000100 after " + std::to_string(retry_cnt) + " retries of 4.19 ms");
    CHECK(t.done[1].id == 2);
    CHECK(t.done[1].status == WcStatus::kFlushed);
    CHECK(t.done[2].id == 3);
    CHECK(t.done[2].status == WcStatus::kFlushed);
    CHECK(t.a->in_error());
    CHECK(t.a->stats().timeouts == retry_cnt + 1u);
    CHECK(t.a->stats().retransmitted == 3u * retry_cnt);
    CHECK(t.a->next_deadline() == Clock::time_point::max());
    // posted in the error state: flushed at once
    t.a->post(t.write(4, src.data(), 100, 0), t.now);
    CHECK(t.a->outstanding() == 1);
    Completion c;
    REQUIRE(t.a->poll(&c));
    CHECK(c.id == 4);
    CHECK(c.status == WcStatus::kFlushed);
    CHECK(t.a->outstanding() == 0);
  }
}

TEST_CASE("wire rc_qp: the default timeout's text") {
  QpAttributes attr_a, attr_b;
  connected_attributes(&attr_a, &attr_b);
  attr_a.timeout = 14;
  TestPair t(attr_a, attr_b);
  t.ab.faults.loss = 1.0;
  uint8_t byte = 1;
  t.a->post(t.write(1, &byte, 1, 0), t.now);
  REQUIRE(t.run(1, 10s));
  CHECK(t.done[0].why == "no ACK for PSN 0x000100 after 7 retries of 67.1 ms");
}

namespace {

// A write of `n` bytes from A with attributes changed by `change`; B's memory must stay.
void expect_failure(void (*change)(QpAttributes& a, QpAttributes& b), WcStatus status,
                    uint32_t n = 100) {
  QpAttributes attr_a, attr_b;
  connected_attributes(&attr_a, &attr_b);
  change(attr_a, attr_b);
  TestPair t(attr_a, attr_b);
  t.memory_b.fill(0xEE);
  std::vector<uint8_t> src = pattern(n, 1);
  t.a->post(t.write(1, src.data(), n, 0), t.now);
  t.a->post(t.write(2, src.data(), n, 0), t.now);
  REQUIRE(t.run(2));
  CHECK(t.done[0].status == status);
  CHECK(t.done[1].status == WcStatus::kFlushed);
  CHECK(t.a->in_error());
  for (size_t i = 0; i < 4 * n; ++i) REQUIRE(t.memory_b.bytes()[i] == 0xEE);
}

}  // namespace

TEST_CASE("wire rc_qp: wrong attributes fail as on hardware") {
  SUBCASE("wrong dest_qp_num: B drops everything") {
    expect_failure([](QpAttributes& a, QpAttributes&) { a.dest_qp_num = 0x23; },
                   WcStatus::kRetryExceeded);
  }
  SUBCASE("sq_psn ahead of the peer's rq_psn: B NAKs a gap A cannot place") {
    expect_failure([](QpAttributes& a, QpAttributes&) { a.sq_psn += 5; }, WcStatus::kRetryExceeded);
  }
  SUBCASE("sq_psn behind the peer's rq_psn: B takes duplicates and ACKs a PSN A never sent") {
    expect_failure([](QpAttributes& a, QpAttributes&) { a.sq_psn -= 1000; },
                   WcStatus::kRetryExceeded, 3 * 1024);
  }
  SUBCASE("wrong dgid") {
    expect_failure([](QpAttributes& a, QpAttributes&) { a.dgid_ipv4 = 0x0300000A; },
                   WcStatus::kRetryExceeded);
  }
  SUBCASE("A's path MTU larger than B's") {
    expect_failure([](QpAttributes& a, QpAttributes&) { a.path_mtu = 5; },
                   WcStatus::kRemoteInvalidRequest, 4096);
  }
}

TEST_CASE("wire rc_qp: remote NAKs complete the request and flush the rest") {
  TestPair t;
  t.memory_b.fill(0xEE);
  std::vector<uint8_t> src = pattern(64, 1);
  uint64_t old = 0;
  SUBCASE("bad rkey") {
    Request r = t.write(1, src.data(), 64, 0);
    r.rkey = 0x999;
    t.a->post(r, t.now);
    t.a->post(t.write(2, src.data(), 64, 0), t.now);
    t.a->post(t.read(3, src.data(), 64, 0), t.now);
    REQUIRE(t.run(3));
    CHECK(t.done[0].status == WcStatus::kRemoteAccess);
    CHECK(t.done[0].why == "NAK remote access error for PSN 0x000100 (write)");
  }
  SUBCASE("misaligned atomic") {
    t.a->post(t.fetch_add(1, reinterpret_cast<uint8_t*>(&old), 8, 4, 1), t.now);
    t.a->post(t.write(2, src.data(), 64, 0), t.now);
    t.a->post(t.read(3, src.data(), 64, 0), t.now);
    REQUIRE(t.run(3));
    CHECK(t.done[0].status == WcStatus::kRemoteInvalidRequest);
    CHECK(t.done[0].why == "NAK invalid request for PSN 0x000100 (fetch-add)");
  }
  CHECK(t.done[0].id == 1);
  CHECK(t.done[1].status == WcStatus::kFlushed);
  CHECK(t.done[2].status == WcStatus::kFlushed);
  CHECK(t.done[1].id == 2);
  CHECK(t.done[2].id == 3);
  CHECK(t.a->stats().naks_received == 1);
  // B: the NAK, then (its ePSN unmoved) one PSN sequence error NAK for the next request, which
  // A, in the error state, drops
  CHECK(t.b->stats().naks_sent == 2);
  CHECK(t.a->stats().dropped == 1);
  for (size_t i = 0; i < 256; ++i) REQUIRE(t.memory_b.bytes()[i] == 0xEE);
}

TEST_CASE("wire rc_qp: PSNs wrap around 2^24") {
  QpAttributes attr_a, attr_b;
  connected_attributes(&attr_a, &attr_b, 1);
  attr_a.sq_psn = attr_b.rq_psn = 0xFFFFF0;
  TestPair t(attr_a, attr_b, 3);
  std::vector<uint8_t> src = pattern(100 * 256, 4);
  t.a->post(t.write(1, src.data(), 100 * 256, 0), t.now);
  std::vector<uint8_t> back(100 * 256);
  t.a->post(t.read(2, back.data(), 100 * 256, 0), t.now);
  REQUIRE(t.run(2));
  check_all_success(t, 2);
  CHECK(std::memcmp(t.memory_b.bytes(), src.data(), src.size()) == 0);
  CHECK(back == src);
  CHECK(t.a->stats().retransmitted == 0);
  // and under loss across the wrap
  TestPair u(attr_a, attr_b, 4);
  u.ab.faults.loss = u.ba.faults.loss = 0.05;
  u.a->post(u.write(1, src.data(), 100 * 256, 0), u.now);
  u.a->post(u.read(2, back.data(), 100 * 256, 0), u.now);
  std::fill(back.begin(), back.end(), 0);
  REQUIRE(u.run(2));
  check_all_success(u, 2);
  CHECK(std::memcmp(u.memory_b.bytes(), src.data(), src.size()) == 0);
  CHECK(back == src);
  CHECK(u.a->stats().retransmitted > 0);
}

TEST_CASE("wire rc_qp: a corrupted packet is dropped and recovered") {
  TestPair t(1);
  t.ab.filter = [](std::vector<uint8_t>& d, uint64_t i) {
    if (i == 1) d[d.size() - 10] ^= 0x01;  // a payload byte of the second packet
    return true;
  };
  std::vector<uint8_t> src = pattern(3 * 256, 8);
  t.a->post(t.write(1, src.data(), 3 * 256, 0), t.now);
  REQUIRE(t.run(1));
  check_all_success(t, 1);
  CHECK(std::memcmp(t.memory_b.bytes(), src.data(), src.size()) == 0);
  CHECK(t.b->stats().dropped == 1);
  CHECK(t.b->stats().naks_sent == 1);  // the third packet shows the gap
  CHECK(t.a->stats().retransmitted == 2);
}

TEST_CASE("wire rc_qp: at most max_rd_atomic reads and atomics outstanding") {
  QpAttributes attr_a, attr_b;
  connected_attributes(&attr_a, &attr_b, 1);
  attr_a.max_rd_atomic = 2;
  TestPair t(attr_a, attr_b);
  int in_flight = 0, most = 0;
  t.ab.filter = [&](std::vector<uint8_t>& d, uint64_t) {
    const uint8_t op = opcode_of(d);
    if (op == static_cast<uint8_t>(BthOpcode::kReadRequest) ||
        op == static_cast<uint8_t>(BthOpcode::kFetchAdd)) {
      most = std::max(most, ++in_flight);
    }
    return true;
  };
  t.ba.filter = [&](std::vector<uint8_t>& d, uint64_t) {
    const uint8_t op = opcode_of(d);
    if (op == static_cast<uint8_t>(BthOpcode::kReadResponseLast) ||
        op == static_cast<uint8_t>(BthOpcode::kReadResponseOnly) ||
        op == static_cast<uint8_t>(BthOpcode::kAtomicAcknowledge)) {
      --in_flight;
    }
    return true;
  };
  std::vector<uint8_t> dst(10 * 600);
  uint64_t old[10];
  for (int i = 0; i < 10; ++i) {
    t.a->post(t.read(2 * i, dst.data() + 600 * i, 600, 0), t.now);
    t.a->post(t.fetch_add(2 * i + 1, reinterpret_cast<uint8_t*>(&old[i]), 8, 8192, 1), t.now);
  }
  CHECK(t.a->stats().packets_sent == 2);
  REQUIRE(t.run(20));
  check_all_success(t, 20);
  CHECK(most == 2);
  CHECK(t.memory_b.word(8192) == 10);
}

}  // namespace mori::wire::test
