// WireNetwork (wire_network.hpp): the software NIC's port and its QPs' attributes between nodes.
#include "backend/host/wire_network.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace mori::backend {
namespace {

// As VerbsNetwork's RC QPs (rdma/verbs_qp.cpp): the GRH's hop limit 255; the reads and atomics
// kept outstanding, as many as mlx5 devices report (max_qp_rd_atom 16).
constexpr uint8_t kHopLimit = 255, kMaxRdAtomic = 16;

// What a QP's peer needs at RTR (QpWire's part that RoCEv2 over IPv4 uses).
struct WireAddress {
  uint32_t qpn = 0;  // 0: no QP (the peer is not on the wire from here)
  uint32_t psn = 0;
  uint32_t ipv4 = 0;
  uint8_t path_mtu = 0;
  uint8_t pad[3] = {};
};
static_assert(sizeof(WireAddress) == 16);

std::string ip_text(uint32_t address) {
  char text[INET_ADDRSTRLEN] = "?";
  inet_ntop(AF_INET, &address, text, sizeof text);
  return text;
}

// The IP port as the NIC's WirePort. A datagram the kernel refuses (bigger than the netdev's
// MTU, no route) is lost, as a switch drops it; the first refusal of a run is logged, since on
// hardware it is the sign of a path MTU above the network's.
class IpWirePort final : public softnic::WirePort {
 public:
  IpWirePort(wire::IpPort& ip, std::string prefix) : ip_(ip), prefix_(std::move(prefix)) {}
  void send(std::span<const uint8_t> datagram) override {
    std::string why;
    if (ip_.send(datagram, &why) || logged_) return;
    logged_ = true;
    std::fprintf(stderr,
                 "%sa datagram of %zu bytes was not sent (%s): lost, as any the network refuses "
                 "(logged once; the QP retransmits or fails with retry exceeded)\n",
                 prefix_.c_str(), datagram.size(), why.c_str());
  }
  size_t receive(std::span<uint8_t> buffer) override { return ip_.receive(buffer); }
  int fd() const override { return ip_.fd(); }

 private:
  wire::IpPort& ip_;
  std::string prefix_;
  bool logged_ = false;
};

}  // namespace

Status WireNetwork::open(runtime::Runtime& rt, std::unique_ptr<WireNetwork>* out) {
  const char* env = std::getenv("MORI_SOFTNIC_IFNAME");
  const std::string ifname = env ? env : "";
  const uint8_t mine = ifname.empty() ? 0 : 1;
  std::vector<uint8_t> all(rt.n_pes);
  MORI_TRY(rt.boot->allgather(&mine, all.data(), 1));
  for (int pe = 0; pe < rt.n_pes; ++pe)
    if (all[pe] != mine)
      return Status::error("MORI_SOFTNIC_IFNAME is set on PE " +
                           std::to_string(mine ? rt.rank : pe) + " but not on PE " +
                           std::to_string(mine ? pe : rt.rank) + ": set it on every PE or none");
  out->reset();
  if (!mine) return {};
  std::unique_ptr<WireNetwork> network(new WireNetwork(rt));
  std::vector<uint32_t> addresses;
  uint32_t mtu = 0;
  MORI_TRY(wire::interface_ipv4(ifname, &addresses, &mtu));
  network->address_ = addresses.front();
  network->path_mtu_ = wire::path_mtu_for_netdev(mtu);
  if (network->path_mtu_ == 0)
    return Status::error("MORI_SOFTNIC_IFNAME=\"" + ifname + "\": its MTU " + std::to_string(mtu) +
                         " is too small for a 256-byte RoCE path MTU");
  MORI_TRY(wire::IpPort::open(network->address_, &network->ip_));
  network->port_ = std::make_unique<IpWirePort>(
      *network->ip_, "mori: PE " + std::to_string(rt.rank) + " software NIC on " + ifname + " (" +
                         ip_text(network->address_) + "): ");
  *out = std::move(network);
  return {};
}

Status WireNetwork::connect(const std::vector<WireQpAddress>& mine,
                            std::vector<wire::QpAttributes>* attributes) {
  const int n = rt_.n_pes, nq = rt_.settings.num_qp_per_pe;
  // Send block j: this PE's QPs to PE j. Receive block j: PE j's QPs to this PE; its QP q pairs
  // with this PE's QP q to it.
  std::vector<WireAddress> send(static_cast<size_t>(n) * nq), recv(send.size());
  for (const WireQpAddress& m : mine) {
    WireAddress& w = send[static_cast<size_t>(m.pe) * nq + m.q];
    w.qpn = m.qpn;
    w.psn = m.psn & 0xFFFFFF;
    w.ipv4 = address_;
    w.path_mtu = path_mtu_;
  }
  MORI_TRY(rt_.boot->alltoall(send.data(), recv.data(), nq * sizeof(WireAddress)));
  attributes->clear();
  for (const WireQpAddress& m : mine) {
    const WireAddress& peer = recv[static_cast<size_t>(m.pe) * nq + m.q];
    if (peer.qpn == 0)
      return Status::error("software NIC: PE " + std::to_string(m.pe) + " has no wire QP to PE " +
                           std::to_string(rt_.rank) +
                           ": the PEs disagree on which nodes they share");
    wire::QpAttributes& a = attributes->emplace_back();
    a.qp_num = m.qpn;
    a.sq_psn = m.psn & 0xFFFFFF;
    a.dest_qp_num = peer.qpn;
    a.rq_psn = peer.psn;
    a.path_mtu = std::min(path_mtu_, peer.path_mtu);  // as VerbsNetwork: the smaller port MTU
    a.timeout = static_cast<uint8_t>(rt_.settings.rdma_timeout);
    a.retry_cnt = static_cast<uint8_t>(rt_.settings.rdma_retry_cnt);
    a.max_rd_atomic = kMaxRdAtomic;
    a.max_dest_rd_atomic = kMaxRdAtomic;
    a.traffic_class = static_cast<uint8_t>(rt_.settings.rdma_traffic_class);
    a.hop_limit = kHopLimit;
    a.sgid_ipv4 = address_;
    a.dgid_ipv4 = peer.ipv4;
    // Flow entropy from the QP number, as Linux rxe's rxe_qp_init_req: 0xC000 + a 14-bit hash.
    a.udp_sport = static_cast<uint16_t>(0xC000 | ((m.qpn * 0x9E370001u) >> 18));
  }
  return {};
}

}  // namespace mori::backend
