// Two PEs as two threads of one process, each opening VerbsNetwork on its own device of the verbs
// double (test_network.cpp for MLX5, test_ionic.cpp for Ionic), then registering and deregistering
// a buffer (collective), then destroying the network; and the checks both families' tests share.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "mori/state/rdma_endpoint.hpp"
#include "mori/status.hpp"
#include "rdma/verbs_network.hpp"
#include "verbs_double.hpp"

namespace verbs_double {

struct PeOutcome {
  mori::Status status;
  bool no_devices = false;
  bool network = false;
  std::vector<mori::state::RdmaEndpoint> endpoints;  // as exported, [pe * qps + q]
  mori::Status region;                               // register_region, then deregister_region
  std::vector<uint32_t> region_rkeys;
  std::vector<mori::state::RdmaEndpoint> nic_view;  // filled by TwoPes::while_open, if it wants
  std::string nic_view_error;
};

struct TwoPes {
  std::string nic = "mlx5";  // VerbsConfig::nic; PE r opens device local_rank % 2 = r
  std::string dv_library;    // VerbsConfig::dv_library
  int qps_per_pe = 1;
  uint32_t sq_wqes = 256;
  uint8_t traffic_class = 0, service_level = 0;  // VerbsConfig's MORI_RDMA_TC, MORI_RDMA_SL
  bool relaxed_ordering = false;                 // VerbsConfig's MORI_RDMA_RELAXED_ORDERING
  bool loopback = false;  // needs_rdma for the PE itself too: QPs connected to themselves
  mori::rdma::QueueMemory queue_memory;  // VerbsConfig::queue_memory (both PEs)
  // Called on each PE's thread while its network is open, after the export.
  std::function<void(int rank, mori::rdma::VerbsNetwork& net, PeOutcome& out)> while_open;
};

// A while_open that fills PeOutcome::nic_view with `view` (nic_endpoint_ionic, _bnxt) of each of
// this PE's QPs, in creation order, and nic_view_error with the reasons it gives.
using NicView = bool (*)(uint32_t qpn, mori::state::RdmaEndpoint* out, std::string* why);
std::function<void(int rank, mori::rdma::VerbsNetwork& net, PeOutcome& out)> record_nic_view(
    NicView view);

// Both PEs call VerbsNetwork::open at once, reaching each other over RDMA (ibuf_slots 16).
std::vector<PeOutcome> open_two_pes(const TwoPes& how);

// The double's records of the QPs created on `device`, in creation order (QP q of the peer).
std::vector<QpRecord> records_of(const std::string& device);

// A PE's open succeeded with a network, and its region registered and deregistered, with a key
// from each of the 2 PEs.
void check_opened(const PeOutcome& o);

// RESET -> INIT -> RTR -> RTS with the masks the kernel requires of an RC QP, ending destroyed.
void check_transitions(const QpRecord& r);

// Every refusal since reset(), one per line ("" when none).
std::string all_refusals();

// Nothing alive in the fabric.
void check_nothing_alive();

}  // namespace verbs_double
