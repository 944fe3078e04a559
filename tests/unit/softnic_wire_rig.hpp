// Two software NICs on one in-memory wire (test_softnic_wire.cpp): "PE 0" posts through
// RdmaEngine<P> on its QP, whose requests travel as RoCEv2 datagrams to "PE 1"'s NIC, which
// executes them on PE 1's memory and answers. The wire can lose and duplicate datagrams, or take
// none at all, with a seeded RNG. Addresses are RFC 2544's and never leave this process.
#pragma once

#include <arpa/inet.h>

#include <deque>
#include <mutex>
#include <random>

#include "softnic_rig.hpp"

namespace mori::test::softnic_wire_rig {

using namespace mori::test::softnic_rig;

constexpr uint32_t kQpnA = 7, kQpnB = 9, kPsnA = 0xFFFFF0, kPsnB = 0x200;

// The two directions of a wire, each a queue of datagrams, shared by both NICs' threads.
struct MemoryWire {
  std::mutex mutex;
  std::deque<std::vector<uint8_t>> to[2];
  double loss = 0, duplication = 0;
  bool down = false;
  std::mt19937_64 rng{42};
  uint64_t sent = 0, lost = 0;

  void send(int to_side, std::span<const uint8_t> d) {
    std::lock_guard<std::mutex> lock(mutex);
    ++sent;
    std::uniform_real_distribution<double> u(0, 1);
    if (down || u(rng) < loss) {
      ++lost;
      return;
    }
    to[to_side].emplace_back(d.begin(), d.end());
    if (u(rng) < duplication) to[to_side].emplace_back(d.begin(), d.end());
  }
  size_t receive(int side, std::span<uint8_t> buffer) {
    std::lock_guard<std::mutex> lock(mutex);
    if (to[side].empty()) return 0;
    std::vector<uint8_t> d = std::move(to[side].front());
    to[side].pop_front();
    const size_t n = std::min(d.size(), buffer.size());
    std::memcpy(buffer.data(), d.data(), n);
    return n;
  }
};

class MemoryPort final : public sn::WirePort {
 public:
  MemoryPort(MemoryWire& wire, int side) : wire_(wire), side_(side) {}
  void send(std::span<const uint8_t> d) override { wire_.send(1 - side_, d); }
  size_t receive(std::span<uint8_t> buffer) override { return wire_.receive(side_, buffer); }

 private:
  MemoryWire& wire_;
  int side_;
};

// One PE's side: its QP to the other PE, its memory (heap: remote access under kRkey; local:
// kLkey) and its NIC.
template <typename P>
struct Side : QueueMemory<P> {
  std::vector<uint64_t> heap = std::vector<uint64_t>(kHeapWords, 0);
  std::vector<uint64_t> local = std::vector<uint64_t>(kLocalWords, 0);
  std::unique_ptr<MemoryPort> port;
  std::unique_ptr<sn::SoftNic> nic;

  Side(MemoryWire& wire, int side, const wire::QpAttributes& attributes)
      : QueueMemory<P>(attributes.qp_num, 128u << attributes.path_mtu, attributes.sq_psn) {
    sn::MemoryTable table;
    table.local.push_back({reinterpret_cast<uint64_t>(local.data()), kLocalWords * 8, kLkey});
    table.local.push_back({reinterpret_cast<uint64_t>(heap.data()), kHeapWords * 8, kRkey});
    port = std::make_unique<MemoryPort>(wire, side);
    sn::SoftNicOptions options;
    options.read_env = false;
    options.port = port.get();
    nic = std::make_unique<sn::SoftNic>(
        sn::codec_for<P>(),
        std::vector<sn::ServedEndpoint>{{&this->ep, 1 - side, attributes.sq_psn, attributes}},
        table, options);
  }
  ~Side() { nic->stop(); }
};

inline uint32_t ip(const char* text) {
  uint32_t a = 0;
  inet_pton(AF_INET, text, &a);
  return a;
}

// The attributes of A's QP and B's, connected as the runtime connects them.
inline void connected(uint8_t path_mtu, uint8_t timeout, uint8_t retry_cnt, wire::QpAttributes* a,
                      wire::QpAttributes* b) {
  a->qp_num = kQpnA, b->qp_num = kQpnB;
  a->dest_qp_num = kQpnB, b->dest_qp_num = kQpnA;
  a->sq_psn = kPsnA, b->rq_psn = kPsnA;
  b->sq_psn = kPsnB, a->rq_psn = kPsnB;
  a->sgid_ipv4 = b->dgid_ipv4 = ip("198.19.0.1");
  b->sgid_ipv4 = a->dgid_ipv4 = ip("198.19.1.1");
  a->path_mtu = b->path_mtu = path_mtu;
  a->timeout = b->timeout = timeout;
  a->retry_cnt = b->retry_cnt = retry_cnt;
}

template <typename P>
struct WireRig {
  MemoryWire wire;
  wire::QpAttributes attr_a, attr_b;
  std::unique_ptr<Side<P>> a, b;

  explicit WireRig(uint8_t path_mtu = 1, uint8_t timeout = 10, uint8_t retry_cnt = 7) {
    connected(path_mtu, timeout, retry_cnt, &attr_a, &attr_b);
    a = std::make_unique<Side<P>>(wire, 0, attr_a);
    b = std::make_unique<Side<P>>(wire, 1, attr_b);
  }
  void start() {
    REQUIRE(a->nic->start().ok());
    REQUIRE(b->nic->start().ok());
  }
  // PE 1's heap word `w`, as PE 0's WQEs name it (the address in PE 1's address space).
  uint64_t remote(size_t w) const { return reinterpret_cast<uint64_t>(&b->heap[w]); }
  WorkRequest rdma(Opcode op, uint64_t remote_addr, size_t local_word, uint32_t bytes) {
    WorkRequest wr{};
    wr.opcode = op, wr.remote_addr = remote_addr, wr.rkey = kRkey, wr.lkey = kLkey;
    wr.local_addr = reinterpret_cast<uint64_t>(&a->local[local_word]), wr.bytes = bytes;
    return wr;
  }
  WorkRequest atomic(Opcode op, size_t remote_word, size_t old_word, uint8_t width, uint64_t v,
                     uint64_t compare = 0) {
    WorkRequest wr = rdma(op, remote(remote_word), old_word, 0);
    wr.width = width, wr.operand = v, wr.compare = compare;
    return wr;
  }
  // Lanes post on A's QP, then quiet; the launch's message ("" when it succeeded).
  template <typename Body>
  std::string run(int blocks, int threads, Body body) {
    auto status = launch({static_cast<unsigned>(blocks)}, {static_cast<unsigned>(threads)}, [&] {
      body(plat::block_rank() * threads + plat::thread_rank());
      RdmaEngine<P>::quiet(a->ep, 1);
    });
    return status.ok() ? std::string{} : status.message();
  }
};

}  // namespace mori::test::softnic_wire_rig
