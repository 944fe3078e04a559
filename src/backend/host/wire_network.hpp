// The software NIC between nodes: this PE's port on the IP network (MORI_SOFTNIC_IFNAME names the
// netdev whose IPv4 address is the NIC's GID) and the RTR/RTS attributes of its queue pairs to the
// PEs of other nodes, exchanged through the bootstrap as VerbsNetwork exchanges its QPs'
// (rdma/verbs_qp.cpp). PEs of this node keep the shared-memory path (softnic_network.cpp).
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "backend/host/softnic/softnic.hpp"
#include "backend/host/wire/ip_port.hpp"
#include "runtime/runtime.hpp"

namespace mori::backend {

// One of this PE's QPs as its peer needs it at RTR.
struct WireQpAddress {
  int pe = 0;        // the peer
  int q = 0;         // the QP's index among those to that peer
  uint32_t qpn = 0;  // this QP's number
  uint32_t psn = 0;  // this QP's initial send PSN: the peer's rq_psn
};

class WireNetwork {
 public:
  // Collective. Null *out when MORI_SOFTNIC_IFNAME is unset on every PE; an error when it is set
  // on some only, or names no interface with an IPv4 address.
  static Status open(runtime::Runtime& rt, std::unique_ptr<WireNetwork>* out);

  // Collective among the PEs whose WireNetwork is open. `mine`: this PE's QPs to PEs of other
  // nodes. *attributes (one per entry of `mine`): each QP's attributes, from its peer's address.
  Status connect(const std::vector<WireQpAddress>& mine,
                 std::vector<wire::QpAttributes>* attributes);

  softnic::WirePort& port() { return *port_; }
  uint32_t address() const { return address_; }

 private:
  WireNetwork(runtime::Runtime& rt) : rt_(rt) {}
  runtime::Runtime& rt_;
  uint32_t address_ = 0;  // network byte order
  uint8_t path_mtu_ = 0;  // ibv_mtu of the netdev's MTU
  std::unique_ptr<wire::IpPort> ip_;
  std::unique_ptr<softnic::WirePort> port_;
};

}  // namespace mori::backend
