// Test rig for RcQp (backend/host/wire/rc_qp.hpp): two QPs joined by in-memory links with
// deterministic faults (loss, duplication, reordering, delay, drawn from a seeded RNG, plus a
// per-packet filter that may drop or corrupt), a fake clock, and a ResponderMemory over a byte
// vector with one key. Header-only; used by test_wire_rc_qp.cpp.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <queue>
#include <random>
#include <string>
#include <vector>

#include "backend/host/wire/rc_qp.hpp"
#include "backend/host/wire/roce.hpp"

namespace mori::wire::test {

using namespace std::chrono_literals;

// What a TestLink does to each datagram. Probabilities are per datagram.
struct Faults {
  double loss = 0;
  double duplicate = 0;
  double reorder = 0;                    // this share of datagrams gets an extra random delay
  Clock::duration delay = 2us;           // every datagram's latency
  Clock::duration reorder_delay = 20us;  // the extra delay's upper bound
};

// One direction of the wire. Datagrams are delivered in the order of their arrival times (ties
// in sending order).
class TestLink final : public Link {
 public:
  TestLink(const Clock::time_point* clock, uint64_t seed) : clock_(clock), rng_(seed) {}

  Faults faults;
  // Called with each datagram and its sending index (0, 1, ...); false drops it; it may modify
  // the bytes (a corruption on the wire).
  std::function<bool(std::vector<uint8_t>&, uint64_t)> filter;
  uint64_t sent = 0, dropped = 0, duplicated = 0, delivered = 0;

  void send(std::span<const uint8_t> datagram) override {
    std::vector<uint8_t> bytes(datagram.begin(), datagram.end());
    const uint64_t index = sent++;
    if (filter && !filter(bytes, index)) {
      ++dropped;
      return;
    }
    if (faults.loss > 0 && uniform() < faults.loss) {
      ++dropped;
      return;
    }
    const bool twice = faults.duplicate > 0 && uniform() < faults.duplicate;
    enqueue(bytes);
    if (twice) {
      ++duplicated;
      enqueue(bytes);
    }
  }

  // Delivers every datagram due by `now` to `to`; true if any was.
  bool deliver(RcQp& to, Clock::time_point now) {
    bool any = false;
    while (!queue_.empty() && queue_.top().at <= now) {
      Entry e = queue_.top();
      queue_.pop();
      ++delivered;
      any = true;
      to.receive(e.bytes, now);
    }
    return any;
  }
  Clock::time_point next() const {
    return queue_.empty() ? Clock::time_point::max() : queue_.top().at;
  }
  size_t in_flight() const { return queue_.size(); }

 private:
  struct Entry {
    Clock::time_point at;
    uint64_t order;
    std::vector<uint8_t> bytes;
    bool operator>(const Entry& o) const { return at != o.at ? at > o.at : order > o.order; }
  };
  double uniform() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }
  void enqueue(const std::vector<uint8_t>& bytes) {
    Clock::duration d = faults.delay;
    if (faults.reorder > 0 && uniform() < faults.reorder) {
      d += Clock::duration(static_cast<Clock::rep>(uniform() * faults.reorder_delay.count()));
    }
    queue_.push({*clock_ + d, order_++, bytes});
  }

  const Clock::time_point* clock_;
  std::mt19937_64 rng_;
  uint64_t order_ = 0;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> queue_;
};

// A responder's memory: `size` bytes at address `base`, reachable with `key` only.
class TestMemory final : public ResponderMemory {
 public:
  TestMemory(uint64_t base, size_t size, uint32_t key)
      : storage_((size + 7) / 8), base_(base), size_(size), key_(key) {}
  uint8_t* bytes() { return reinterpret_cast<uint8_t*>(storage_.data()); }
  uint64_t base() const { return base_; }
  uint32_t key() const { return key_; }
  void fill(uint8_t v) { std::memset(bytes(), v, size_); }
  uint64_t word(uint64_t offset) {
    uint64_t v;
    std::memcpy(&v, bytes() + offset, 8);
    return v;
  }
  uint8_t* resolve(uint32_t rkey, uint64_t addr, uint64_t bytes_, std::string* why) override {
    if (rkey != key_) {
      *why = "rkey " + std::to_string(rkey) + " is not registered";
      return nullptr;
    }
    if (addr < base_ || addr - base_ > size_ || bytes_ > size_ - (addr - base_)) {
      *why = "range outside the region";
      return nullptr;
    }
    return bytes() + (addr - base_);
  }

 private:
  std::vector<uint64_t> storage_;  // 8-byte aligned, for the atomics
  uint64_t base_;
  size_t size_;
  uint32_t key_;
};

// Two connected QPs' attributes: A (QPN 0x11, 10.0.0.1) and B (QPN 0x22, 10.0.0.2); A's send
// PSNs are B's expected ones and the other way round.
inline void connected_attributes(QpAttributes* a, QpAttributes* b, uint8_t path_mtu = 3) {
  *a = {};
  *b = {};
  a->qp_num = 0x11;
  b->qp_num = 0x22;
  a->dest_qp_num = b->qp_num;
  b->dest_qp_num = a->qp_num;
  a->sq_psn = b->rq_psn = 0x100;
  b->sq_psn = a->rq_psn = 0x5000;
  a->path_mtu = b->path_mtu = path_mtu;
  a->timeout = b->timeout = 10;              // 4.194 ms
  a->sgid_ipv4 = b->dgid_ipv4 = 0x0100000A;  // 10.0.0.1 in network byte order
  a->dgid_ipv4 = b->sgid_ipv4 = 0x0200000A;  // 10.0.0.2
  a->udp_sport = 0xC001;
  b->udp_sport = 0xC002;
}

constexpr uint64_t kRemoteBase = 0x10000000;
constexpr uint32_t kRemoteKey = 0xABCD;

// The rig: A posts, B is the target (both sides are whole QPs; B's memory is the target's).
struct TestPair {
  explicit TestPair(const QpAttributes& attr_a, const QpAttributes& attr_b, uint64_t seed = 1,
                    size_t memory = 1 << 20)
      : ab(&now, seed),
        ba(&now, seed * 7919 + 13),
        memory_a(kRemoteBase, memory, kRemoteKey),
        memory_b(kRemoteBase, memory, kRemoteKey) {
    a = RcQp::create(attr_a, memory_a, ab);
    b = RcQp::create(attr_b, memory_b, ba);
  }
  explicit TestPair(uint8_t path_mtu = 3, uint64_t seed = 1) : TestPair(pair(path_mtu), seed) {}

  Clock::time_point now = Clock::time_point{} + 1s;
  TestLink ab, ba;  // A to B, B to A
  TestMemory memory_a, memory_b;
  std::unique_ptr<RcQp> a, b;
  std::vector<Completion> done;  // A's completions, as run() polls them

  // Runs the clock until A has retired `count` requests in all, or `limit` of fake time passes,
  // or nothing is left to happen. True when A retired them.
  bool run(size_t count, Clock::duration limit = 10s) {
    const Clock::time_point end = now + limit;
    for (;;) {
      a->progress(now);
      b->progress(now);
      const bool moved = ab.deliver(*b, now) | ba.deliver(*a, now);
      Completion c;
      while (a->poll(&c)) done.push_back(std::move(c));
      if (done.size() >= count) return true;
      if (moved) continue;  // progress() again at this instant: the coalesced ACKs
      Clock::time_point next =
          std::min({ab.next(), ba.next(), a->next_deadline(), b->next_deadline()});
      if (next == Clock::time_point::max() || next > end) return false;
      now = std::max(next, now + 1ns);
    }
  }

  Request write(uint64_t id, uint8_t* local, uint32_t bytes, uint64_t offset) {
    return {id, RequestOp::kWrite, 8, local, bytes, kRemoteBase + offset, kRemoteKey, 0, 0};
  }
  Request read(uint64_t id, uint8_t* local, uint32_t bytes, uint64_t offset) {
    return {id, RequestOp::kRead, 8, local, bytes, kRemoteBase + offset, kRemoteKey, 0, 0};
  }
  Request fetch_add(uint64_t id, uint8_t* local, uint8_t width, uint64_t offset, uint64_t add) {
    return {id, RequestOp::kFetchAdd, width, local, width, kRemoteBase + offset, kRemoteKey, add,
            0};
  }
  Request compare_swap(uint64_t id, uint8_t* local, uint8_t width, uint64_t offset,
                       uint64_t compare, uint64_t swap) {
    return {id,     RequestOp::kCompareSwap, width,      local,
            width,  kRemoteBase + offset,    kRemoteKey, swap,
            compare};
  }

 private:
  struct Attrs {
    QpAttributes a, b;
  };
  static Attrs pair(uint8_t path_mtu) {
    Attrs x;
    connected_attributes(&x.a, &x.b, path_mtu);
    return x;
  }
  TestPair(Attrs x, uint64_t seed) : TestPair(x.a, x.b, seed) {}
};

// Deterministic bytes for a buffer.
inline std::vector<uint8_t> pattern(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  uint32_t x = seed * 2654435761u + 1;
  for (auto& b : v) {
    x = x * 1103515245u + 12345u;
    b = static_cast<uint8_t>(x >> 16);
  }
  return v;
}

// A's completions are all successes, in order; the first that is not, named.
inline void check_all_success(const TestPair& t, size_t count) {
  REQUIRE(t.done.size() == count);
  size_t bad = 0;
  while (bad < count && t.done[bad].status == WcStatus::kSuccess && t.done[bad].why.empty()) ++bad;
  CAPTURE(bad);
  REQUIRE_MESSAGE(bad == count, (bad < count ? t.done[bad].why : ""));
}

// The BTH opcode of a datagram in flight (IPv4 20 + UDP 8 bytes before the BTH), or 0.
inline uint8_t opcode_of(const std::vector<uint8_t>& datagram) {
  return datagram.size() > 28 ? datagram[28] : 0;
}

}  // namespace mori::wire::test
