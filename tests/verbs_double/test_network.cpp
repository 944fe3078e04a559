// VerbsNetwork::open on the verbs double: two PEs as two threads, each on its own fake RoCE mlx5
// device, with 1 and 2 QPs per peer, then a collective register_region / deregister_region and
// the teardown. Checked against what the double recorded: the QP transitions and their masks, the
// read/atomic depths, the cross-matched QPNs and PSNs, the exported endpoints (the CQ ring and its
// doorbell record), and that the teardown leaves no object alive.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "rdma/verbs_network.hpp"
#include "thread_bootstrap.hpp"
#include "verbs_double.hpp"

namespace rdma = mori::rdma;
namespace vd = verbs_double;

namespace {

struct PeOutcome {
  mori::Status status;
  bool no_devices = false;
  bool network = false;
  std::vector<mori::state::RdmaEndpoint> endpoints;  // as exported, [pe * qps + q]
  mori::Status region;                               // register_region, then deregister_region
  std::vector<uint32_t> region_rkeys;
};

// Both PEs call VerbsNetwork::open at once, reaching each other over RDMA; then each registers and
// deregisters a buffer (collective), and the network is destroyed.
std::vector<PeOutcome> open_two_pes(int qps_per_pe) {
  constexpr int kPes = 2;
  vd::ThreadHub hub(kPes);
  std::vector<PeOutcome> out(kPes);
  std::vector<std::vector<uint8_t>> heaps(kPes, std::vector<uint8_t>(1 << 16));
  std::vector<std::vector<uint64_t>> buffers(kPes, std::vector<uint64_t>(64));
  std::vector<std::thread> threads;
  for (int rank = 0; rank < kPes; ++rank)
    threads.emplace_back([&, rank] {
      vd::ThreadBootstrap boot(hub, rank);
      rdma::VerbsConfig c;
      c.nic = "mlx5";
      c.rank = rank;
      c.n_pes = kPes;
      c.local_rank = rank;  // no GPU address: device local_rank % 2, so PE r gets mlx5_r
      c.num_qp_per_pe = qps_per_pe;
      c.sq_wqes = 256;
      c.ibuf_slots = 16;
      c.needs_rdma = {rank != 0, rank != 1};
      c.heap_base = heaps[rank].data();
      c.heap_bytes = heaps[rank].size();
      std::unique_ptr<rdma::VerbsNetwork> net;
      PeOutcome& o = out[rank];
      o.status = rdma::VerbsNetwork::open(c, boot, &net, &o.no_devices);
      o.network = net != nullptr;
      if (!net) return;
      o.endpoints = net->endpoints();
      uint32_t lkey = 0;
      o.region =
          net->register_region(buffers[rank].data(), 64 * sizeof(uint64_t), &lkey, &o.region_rkeys);
      if (o.region.ok()) o.region = net->deregister_region(buffers[rank].data());
    });
  for (std::thread& t : threads) t.join();
  return out;
}

std::vector<vd::QpRecord> records_of(const std::string& device) {
  std::vector<vd::QpRecord> out;
  for (const vd::QpRecord& r : vd::qp_history())
    if (r.device == device) out.push_back(r);
  return out;
}

// The masks the kernel requires of an RC QP (drivers/infiniband/core/verbs.c, qp_state_table),
// restated here so that the test does not trust the double's table.
constexpr int kInitRequired = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
constexpr int kRtrRequired = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                             IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
constexpr int kRtsRequired = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                             IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;

void check_transitions(const vd::QpRecord& r) {
  INFO("QP " << r.qpn << " of " << r.device);
  REQUIRE(r.transitions.size() == 3);
  const vd::Transition want[] = {{IBV_QPS_RESET, IBV_QPS_INIT, kInitRequired},
                                 {IBV_QPS_INIT, IBV_QPS_RTR, kRtrRequired},
                                 {IBV_QPS_RTR, IBV_QPS_RTS, kRtsRequired}};
  for (int i = 0; i < 3; ++i) {
    const vd::Transition& t = r.transitions[i];
    CHECK(t.from == want[i].from);
    CHECK(t.to == want[i].to);
    INFO("mask " << vd::mask_names(t.mask));
    CHECK((t.mask & want[i].mask) == want[i].mask);
  }
  CHECK(r.state == IBV_QPS_RTS);
  CHECK(r.destroyed);
}

void open_and_check(int qps_per_pe) {
  vd::reset({vd::roce_mlx5("mlx5_0", 1), vd::roce_mlx5("mlx5_1", 2)});

  const std::vector<PeOutcome> outcome = open_two_pes(qps_per_pe);

  // No call was refused: every mask and value passed the kernel's checks.
  std::string refused;
  for (const std::string& r : vd::refusals()) refused += r + "\n";
  CHECK_MESSAGE(refused.empty(), refused);
  for (int pe = 0; pe < 2; ++pe) {
    CAPTURE(pe);
    const std::vector<vd::QpRecord> mine = records_of("mlx5_" + std::to_string(pe));
    const std::vector<vd::QpRecord> theirs = records_of("mlx5_" + std::to_string(1 - pe));
    REQUIRE(mine.size() == static_cast<size_t>(qps_per_pe));
    REQUIRE(theirs.size() == mine.size());
    CHECK_FALSE(outcome[pe].no_devices);
    REQUIRE_MESSAGE(outcome[pe].status.ok(), outcome[pe].status.message());
    CHECK(outcome[pe].network);
    CHECK_MESSAGE(outcome[pe].region.ok(), outcome[pe].region.message());
    CHECK(outcome[pe].region_rkeys.size() == 2);
    // The exported endpoints: this PE's QPs to the peer, each with the CQ ring rdma-core's mlx5
    // provider makes for 256 entries (roundup_pow_of_two(256 + 1)) and its doorbell record; none
    // to itself.
    const std::vector<mori::state::RdmaEndpoint>& eps = outcome[pe].endpoints;
    REQUIRE(eps.size() == static_cast<size_t>(2 * qps_per_pe));
    for (int q = 0; q < qps_per_pe; ++q) {
      const mori::state::RdmaEndpoint& self = eps[pe * qps_per_pe + q];
      const mori::state::RdmaEndpoint& ep = eps[(1 - pe) * qps_per_pe + q];
      CHECK(self.sq == nullptr);
      CHECK(ep.qpn == mine[q].qpn);
      CHECK(ep.cq_entries == 512);
      CHECK(mine[q].cq_entries == 512);
      CHECK(ep.cq_entries >= ep.sq_wqes);
      CHECK(ep.cq_dbr != nullptr);
      CHECK(ep.sq != nullptr);
      CHECK(ep.dbr != nullptr);
      CHECK(ep.db != nullptr);
      CHECK(ep.ibuf != nullptr);
      CHECK(ep.ibuf_slots == 16);
      CHECK(ep.ibuf_lkey != 0);
    }
    for (size_t q = 0; q < mine.size(); ++q) {
      const vd::QpRecord& r = mine[q];
      check_transitions(r);
      CHECK(r.port == 1);
      // Depths within the fake device's limits: initiator 8 (max_qp_init_rd_atom), responder
      // 16 (max_qp_rd_atom). Swapped, the double refuses the RTS transition.
      CHECK(r.max_rd_atomic == 8);
      CHECK(r.max_dest_rd_atomic == 16);
      CHECK(r.path_mtu == IBV_MTU_4096);
      CHECK(r.sgid_index == 3);  // the IPv4-mapped RoCE v2 entry of roce_mlx5's table
      // QP q of this PE pairs with QP q of the peer, both ways, PSNs included.
      CHECK(r.dest_qpn == theirs[q].qpn);
      CHECK(theirs[q].dest_qpn == r.qpn);
      CHECK(r.rq_psn == theirs[q].sq_psn);
      CHECK(r.sq_psn == theirs[q].rq_psn);
    }
  }
  std::string problems;
  for (const std::string& p : vd::connection_problems()) problems += p + "\n";
  CHECK_MESSAGE(problems.empty(), problems);

  // Each network was destroyed at the end of its thread: nothing is left alive.
  const vd::Live live = vd::live();
  CHECK(live.device_lists == 0);
  CHECK(live.contexts == 0);
  CHECK(live.pds == 0);
  CHECK(live.mrs == 0);
  CHECK(live.cqs == 0);
  CHECK(live.qps == 0);
}

}  // namespace

TEST_CASE("open: 2 PEs x 1 QP connect through the double, export, register and tear down") {
  open_and_check(1);
}

TEST_CASE("open: 2 PEs x 2 QPs connect through the double, export, register and tear down") {
  open_and_check(2);
}
