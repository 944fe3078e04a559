// RcQp's insides (rc_qp.hpp), shared by its three files: rc_qp.cpp (the QP, demultiplexing a
// datagram to its requester or responder half), rc_requester.cpp and rc_responder.cpp. Not a
// contract: nothing outside src/backend/host/wire/rc_*.cpp includes it.
//
// The IBTA sections cited in these files (Vol 1 release 1.4 numbering) name the rule, from the
// structure of chapter 9 as rdma-core, Linux rxe and the hfi1/ipath drivers describe it; the
// sub-section numbers below 9.7.x were not checked against the spec's own text here.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "backend/host/wire/rc_qp.hpp"
#include "backend/host/wire/roce.hpp"

namespace mori::wire::rc {

// PSNs are 24 bits and compare modulo 2^24 within a window of 2^23 (IBTA 9.7.1).
constexpr uint32_t kPsnMask = 0xFFFFFF;
constexpr int32_t psn_diff(uint32_t a, uint32_t b) {  // a - b, in [-2^23, 2^23)
  const uint32_t d = (a - b) & kPsnMask;
  return d >= 0x800000 ? static_cast<int32_t>(d) - 0x1000000 : static_cast<int32_t>(d);
}

// The path MTU's payload bytes: ibv_mtu 1..5 is 256..4096 (IBTA 9.5 / enum ibv_mtu); out of range
// values are clamped there, as the NIC would refuse them at modify_qp.
constexpr uint32_t mtu_bytes(uint8_t path_mtu) {
  return 128u << (path_mtu < 1 ? 1 : path_mtu > 5 ? 5 : path_mtu);
}
// PSNs a message of `bytes` takes: a zero-length one is still one packet (IBTA 9.4.3, 9.7.2).
constexpr uint32_t packets_for(uint64_t bytes, uint32_t mtu) {
  return bytes == 0 ? 1 : static_cast<uint32_t>((bytes + mtu - 1) / mtu);
}

// What both halves of the QP share: the attributes, the link, the counters and the state.
struct Port {
  Port(const QpAttributes& attributes, Link& l) : attr(attributes), link(&l) {}
  QpAttributes attr;
  Link* link = nullptr;
  QpStats stats;
  bool error = false;  // the QP's error state (IBTA 10.3.1): no sends, incoming dropped
  uint16_t ip_id = 0;
  std::vector<uint8_t> buffer;  // reused for every datagram built

  // A packet to the peer QP with this QP's IPv4/UDP fields and BTH opcode and PSN.
  Packet header(BthOpcode op, uint32_t psn) {
    Packet p;
    p.src_ip = attr.sgid_ipv4;
    p.dst_ip = attr.dgid_ipv4;
    p.tos = attr.traffic_class;
    p.ttl = attr.hop_limit;
    if (++ip_id == 0) ip_id = 1;  // nonzero: the ICRC covers it (roce.hpp)
    p.ip_id = ip_id;
    p.udp_sport = attr.udp_sport;
    p.opcode = op;
    p.dest_qp = attr.dest_qp_num & kPsnMask;
    p.psn = psn & kPsnMask;
    return p;
  }
  void send(const Packet& p) {
    buffer.clear();
    build(p, &buffer);
    link->send(buffer);
    ++stats.packets_sent;
  }
};

// The requester half (IBTA 9.7.x, requester side): packetizes requests, keeps the retransmission
// state and retires requests on ACKs and responses. PSNs are kept as 64-bit absolute numbers
// (the wire's 24 bits plus the wraps seen), so that windows and searches are plain comparisons.
class Requester {
 public:
  explicit Requester(Port& port);
  void post(const Request& request, Clock::time_point now);
  void on_response(const Packet& p, Clock::time_point now);
  void progress(Clock::time_point now);
  bool poll(Completion* out);
  size_t outstanding() const { return queue_.size(); }
  Clock::time_point deadline() const { return deadline_; }

 private:
  struct Pending {
    Request request;
    uint64_t first = 0;     // absolute PSN of its first packet (or its read response)
    uint32_t count = 0;     // PSNs it takes
    uint64_t acked = 0;     // writes: the absolute PSN of its first unacknowledged packet
    uint32_t received = 0;  // reads: response packets received in sequence
    bool done = false;
    bool sent = false;  // reads, atomics: counted in reads_outstanding_ until head_ passes
    Completion completion;
    uint64_t end() const { return first + count; }
  };
  bool reads_or_atomic(const Pending& e) const { return e.request.op != RequestOp::kWrite; }
  long find(uint64_t psn) const;  // index of the request whose PSNs hold `psn`, or -1
  uint64_t una();                 // the oldest unacknowledged absolute PSN (or high_)
  void pump(Clock::time_point now);
  uint32_t transmit(Pending& e, uint64_t psn);
  void acknowledge_through(uint64_t psn);
  void retransmit_from(uint64_t psn);
  void note_progress(Clock::time_point now);
  void complete(Pending& e, WcStatus status, std::string why);
  void fail(long index, WcStatus status, std::string why);
  void on_read_response(const Packet& p, uint64_t psn);
  void on_atomic_ack(const Packet& p, uint64_t psn);
  void on_nak(const Packet& p, uint64_t psn);

  Port& port_;
  uint32_t mtu_;
  Clock::duration period_;      // the local ACK timeout; zero: infinite
  std::deque<Pending> queue_;   // posted and not polled, in posting order
  size_t head_ = 0;             // queue_ index of the oldest request not done
  uint64_t next_ = 0;           // the absolute PSN the next posted request takes
  uint64_t send_ = 0;           // the next absolute PSN to transmit (< high_ while retransmitting)
  uint64_t high_ = 0;           // one past the highest absolute PSN ever transmitted
  uint64_t progress_mark_ = 0;  // the highest una() seen: forward progress is moving past it
  uint32_t reads_outstanding_ = 0;
  uint32_t retries_ = 0;
  uint64_t implied_psn_ = ~0ull, implied_until_ = 0;  // the last implied NAK's go-back
  Clock::time_point deadline_ = Clock::time_point::max();
};

// The responder half (IBTA 9.7.x, responder side): checks each request's PSN against ePSN,
// executes writes, reads and atomics on ResponderMemory, and acknowledges (coalesced, 9.7.5.1.1).
class Responder {
 public:
  Responder(Port& port, ResponderMemory& memory);
  void on_request(const Packet& p, Clock::time_point now);
  void progress(Clock::time_point now);
  Clock::time_point deadline() const {
    return ack_pending_ ? ack_since_ : Clock::time_point::max();
  }
  const std::string& last_error() const { return last_error_; }

 private:
  struct SavedAtomic {
    uint32_t psn = 0;
    uint64_t original = 0;
    bool valid = false;
  };
  void execute(const Packet& p, Clock::time_point now);
  void duplicate(const Packet& p, Clock::time_point now);
  bool write_segment(const Packet& p);
  void read(const Packet& p);
  bool atomic(const Packet& p, uint64_t* original);
  void send_atomic_ack(uint32_t psn, uint64_t original);
  void nak(NakCode code, uint32_t psn, std::string why);
  void advance(uint32_t psns);
  void mark_ack(Clock::time_point now);

  Port& port_;
  ResponderMemory& memory_;
  uint32_t mtu_;
  uint32_t epsn_;
  uint32_t msn_ = 0;
  bool ack_pending_ = false;
  Clock::time_point ack_since_{};
  bool sequence_nak_sent_ = false;  // a PSN sequence error NAK went out for this ePSN
  // The write message in progress (after its First packet)
  bool in_write_ = false;
  uint8_t* write_base_ = nullptr;
  uint32_t write_length_ = 0, write_done_ = 0;
  std::vector<SavedAtomic> atomics_;  // the last max_dest_rd_atomic atomics' results
  size_t next_atomic_ = 0;
  std::string last_error_;
};

}  // namespace mori::wire::rc
