// One reliable-connection queue pair on the wire (IBTA Vol 1 chapter 9, RoCEv2 per Annex A17):
// the requester and the responder side of one QP of the software NIC, speaking RoCEv2 packets
// to its peer QP on another node. It knows nothing of providers or WQE bytes: the software NIC
// core (softnic.cpp) decodes a WQE, checks its local key, posts it here as a Request, and writes
// the provider's CQE for each Completion this QP retires (in order, as RC requires).
//
// The attributes are ibv_qp_attr's, as the runtime sets them at RTR and RTS: a wrong destination
// QPN, PSN, GID, path MTU, timeout or retry count changes what happens on the wire exactly as on
// hardware (a stalled or NAKed QP, then IBV_WC_RETRY_EXC_ERR), never silently.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace mori::wire {

using Clock = std::chrono::steady_clock;

// ibv_qp_attr's fields that decide the wire (ibv_modify_qp(3)). Addresses are IPv4 in network
// byte order (the IPv4-mapped GID's last 4 bytes, RoCEv2 over IPv4: IBTA A17.4.5.1).
struct QpAttributes {
  uint32_t qp_num = 0;              // this QP's number (24 bits)
  uint32_t dest_qp_num = 0;         // RTR: the peer QP
  uint32_t rq_psn = 0;              // RTR: the first PSN this QP's responder expects
  uint32_t sq_psn = 0;              // RTS: the first PSN this QP's requester sends
  uint8_t path_mtu = 3;             // RTR: enum ibv_mtu, 1 (256) .. 5 (4096)
  uint8_t timeout = 14;             // RTS: local ACK timeout 4.096 us * 2^timeout; 0: infinite
  uint8_t retry_cnt = 7;            // RTS: transport retries, 0..7
  uint8_t max_rd_atomic = 16;       // RTS: reads and atomics this requester keeps outstanding
  uint8_t max_dest_rd_atomic = 16;  // RTR: reads and atomics this responder keeps (and replays)
  uint8_t traffic_class = 0;        // RTR: ah_attr.grh.traffic_class, the IPv4 TOS byte
  uint8_t hop_limit = 64;           // RTR: ah_attr.grh.hop_limit, the IPv4 TTL
  uint32_t sgid_ipv4 = 0;           // this QP's GID (the port's GID at sgid_index)
  uint32_t dgid_ipv4 = 0;           // RTR: ah_attr.grh.dgid
  uint16_t udp_sport = 0xC000;      // the UDP source port (flow entropy, A17.4.5.2); dport is 4791
};

// A request as the requester executes it, after the NIC's local checks (lkey, bounds).
enum class RequestOp : uint8_t { kWrite, kRead, kFetchAdd, kCompareSwap };

struct Request {
  uint64_t id = 0;  // the SQ index; echoed in its Completion
  RequestOp op = RequestOp::kWrite;
  uint8_t width = 8;         // atomics: 8, or 4 (MLX5's masked atomics)
  uint8_t* local = nullptr;  // write: the source (read again on retransmission); read: where the
                             // data lands; atomic: where the old value lands, host order
  uint32_t bytes = 0;        // write/read length; atomics: width
  uint64_t remote_addr = 0;
  uint32_t rkey = 0;
  uint64_t operand = 0;  // fetch-add: the addend; compare-swap: the swap value
  uint64_t compare = 0;  // compare-swap
};

// ibv_wc_status values a requester can end a request with on the wire (ibv_poll_cq(3)).
enum class WcStatus : uint8_t {
  kSuccess,
  kRemoteAccess,          // NAK remote access error (IBV_WC_REM_ACCESS_ERR)
  kRemoteInvalidRequest,  // NAK invalid request (IBV_WC_REM_INV_REQ_ERR)
  kRemoteOperation,       // NAK remote operational error (IBV_WC_REM_OP_ERR)
  kRetryExceeded,         // retry_cnt exhausted (IBV_WC_RETRY_EXC_ERR)
  kBadResponse,           // an unexpected response opcode (IBV_WC_BAD_RESP_ERR)
  kFlushed,               // behind an error (IBV_WC_WR_FLUSH_ERR)
};

struct Completion {
  uint64_t id = 0;
  WcStatus status = WcStatus::kSuccess;
  std::string why;  // non-empty on an error, e.g. "no ACK for PSN 0x12 after 7 retries of 67 ms"
};

// Where the responder reaches its own PE's memory (the target's heap and registered buffers,
// in this process). Checks the key and the range; null with the reason when they fail.
class ResponderMemory {
 public:
  virtual ~ResponderMemory() = default;
  virtual uint8_t* resolve(uint32_t rkey, uint64_t addr, uint64_t bytes, std::string* why) = 0;
  // Around each atomic the responder executes at `at` (a resolved address): memory that other
  // NICs update with a locked read-modify-write rather than CPU atomics (the software NIC's
  // registered buffers, softnic/pe_locks.hpp) is locked here. False, with why: the atomic fails
  // with a remote operational error.
  virtual bool begin_atomic(const uint8_t* /*at*/, std::string* /*why*/) { return true; }
  virtual void end_atomic(const uint8_t* /*at*/) {}
};

// Where packets go: one whole IPv4 datagram (IPv4 header, UDP, BTH, ..., ICRC) per call.
// A datagram the link cannot take (too big for its MTU, the link down) is dropped, as a switch
// drops it: the QP's retransmission is what recovers, or not.
class Link {
 public:
  virtual ~Link() = default;
  virtual void send(std::span<const uint8_t> datagram) = 0;
};

// Counters, for tests and the closing diagnostics.
struct QpStats {
  uint64_t packets_sent = 0, packets_received = 0;
  uint64_t retransmitted = 0;  // packets sent again (timer or NAK)
  uint64_t timeouts = 0;       // retransmission timer expiries
  uint64_t naks_sent = 0, naks_received = 0;
  uint64_t acks_sent = 0;            // ACK packets (coalesced: fewer than requests)
  uint64_t duplicates_received = 0;  // requests with a PSN already executed
  uint64_t atomics_replayed = 0;     // duplicate atomics answered from the saved result
  uint64_t dropped = 0;              // received packets discarded (bad ICRC, wrong QP, ...)
};

class RcQp {
 public:
  // The QP in RTS with these attributes; its responder executes on `memory`, its packets go to
  // `link`. Both must outlive the QP.
  static std::unique_ptr<RcQp> create(const QpAttributes& attributes, ResponderMemory& memory,
                                      Link& link);
  virtual ~RcQp() = default;

  // Queues a request; it is sent when the window allows. Never fails: a request on a QP in the
  // error state completes kFlushed.
  virtual void post(const Request& request, Clock::time_point now) = 0;
  // One received datagram addressed to this QP (dest_qpn(datagram) == qp_num), whole, with its
  // IPv4 header: checked (ICRC, header), then handled as request or response.
  virtual void receive(std::span<const uint8_t> datagram, Clock::time_point now) = 0;
  // Sends what the window now allows, fires the retransmission timer. Call often.
  virtual void progress(Clock::time_point now) = 0;
  // The next retired request, in posting order, if any.
  virtual bool poll(Completion* out) = 0;
  // Requests posted and not yet retired.
  virtual size_t outstanding() const = 0;
  // When progress() next has timed work (the retransmission timer), or Clock::time_point::max().
  virtual Clock::time_point next_deadline() const = 0;
  virtual bool in_error() const = 0;
  virtual const QpStats& stats() const = 0;
  virtual const QpAttributes& attributes() const = 0;
};

// The destination QP (BTH DestQP, 24 bits) of a received datagram, for the NIC's demultiplexing;
// false when it is not a RoCEv2 packet (too short, not UDP to port 4791).
bool dest_qpn(std::span<const uint8_t> datagram, uint32_t* qpn);

// IBTA's path MTU for a netdev MTU, as Linux's iboe_get_mtu (include/rdma/ib_addr.h): the
// largest IB MTU (ibv_mtu 1..5) whose packets with every header fit; 0 if none does.
uint8_t path_mtu_for_netdev(uint32_t netdev_mtu);

}  // namespace mori::wire
