// RcQp (rc_qp.hpp): one reliable-connection QP on the wire. This file checks each received
// datagram as the NIC does before the transport sees it (ICRC, addresses, destination QP) and
// hands requests to the responder half and responses to the requester half (rc_requester.cpp,
// rc_responder.cpp).
#include <algorithm>
#include <string>

#include "backend/host/wire/rc_qp_state.hpp"

namespace mori::wire {
namespace {

class RcQpImpl final : public RcQp {
 public:
  RcQpImpl(const QpAttributes& attributes, ResponderMemory& memory, Link& link)
      : port_(attributes, link), requester_(port_), responder_(port_, memory) {}

  void post(const Request& request, Clock::time_point now) override {
    requester_.post(request, now);
  }

  void receive(std::span<const uint8_t> datagram, Clock::time_point now) override {
    ++port_.stats.packets_received;
    Packet p;
    std::string why;
    // A packet the NIC cannot parse (bad ICRC, truncated, ...) is silently dropped (IBTA
    // 9.6.1.1; A17.8 for the ICRC): the sender's timer recovers.
    if (!parse(datagram, &p, &why)) {
      ++port_.stats.dropped;
      return;
    }
    // The connection's addresses and this QP (IBTA 9.6.1.5: a packet for another QP or from
    // another source is not this connection's, and is dropped). In the error state the QP takes
    // nothing (IBTA 10.3.1).
    const QpAttributes& a = port_.attr;
    if (p.dst_ip != a.sgid_ipv4 || p.src_ip != a.dgid_ipv4 || p.dest_qp != (a.qp_num & 0xFFFFFF) ||
        port_.error) {
      ++port_.stats.dropped;
      return;
    }
    if (is_request(p.opcode)) {
      responder_.on_request(p, now);
    } else {
      requester_.on_response(p, now);
    }
  }

  void progress(Clock::time_point now) override {
    if (port_.error) return;
    responder_.progress(now);
    requester_.progress(now);
  }

  bool poll(Completion* out) override { return requester_.poll(out); }
  size_t outstanding() const override { return requester_.outstanding(); }
  Clock::time_point next_deadline() const override {
    if (port_.error) return Clock::time_point::max();
    return std::min(requester_.deadline(), responder_.deadline());
  }
  bool in_error() const override { return port_.error; }
  const QpStats& stats() const override { return port_.stats; }
  const QpAttributes& attributes() const override { return port_.attr; }

 private:
  rc::Port port_;
  rc::Requester requester_;
  rc::Responder responder_;
};

}  // namespace

std::unique_ptr<RcQp> RcQp::create(const QpAttributes& attributes, ResponderMemory& memory,
                                   Link& link) {
  return std::make_unique<RcQpImpl>(attributes, memory, link);
}

}  // namespace mori::wire
