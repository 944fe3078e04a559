// VerbsNetwork::open on the verbs double: two PEs as two threads, each on its own fake RoCE mlx5
// device, with 1 and 2 QPs per peer, then a collective register_region / deregister_region and
// the teardown. Checked against what the double recorded: the QP transitions and their masks, the
// read/atomic depths, the cross-matched QPNs and PSNs, the exported endpoints (the CQ ring and its
// doorbell record), and that the teardown leaves no object alive.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "two_pes.hpp"
#include "verbs_double.hpp"

namespace vd = verbs_double;

namespace {

void open_and_check(int qps_per_pe) {
  vd::reset({vd::roce_mlx5("mlx5_0", 1), vd::roce_mlx5("mlx5_1", 2)});

  vd::TwoPes how;
  how.qps_per_pe = qps_per_pe;
  const std::vector<vd::PeOutcome> outcome = vd::open_two_pes(how);

  // No call was refused: every mask and value passed the kernel's checks.
  const std::string refused = vd::all_refusals();
  CHECK_MESSAGE(refused.empty(), refused);
  for (int pe = 0; pe < 2; ++pe) {
    CAPTURE(pe);
    const std::vector<vd::QpRecord> mine = vd::records_of("mlx5_" + std::to_string(pe));
    const std::vector<vd::QpRecord> theirs = vd::records_of("mlx5_" + std::to_string(1 - pe));
    REQUIRE(mine.size() == static_cast<size_t>(qps_per_pe));
    REQUIRE(theirs.size() == mine.size());
    CHECK_FALSE(outcome[pe].no_devices);
    vd::check_opened(outcome[pe]);
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
      // rdma-core's SQ for 256 WQEs of 128 bytes (48 bytes of segments before 28 inline bytes,
      // for the send ops the runtime names): 512 WQEBBs (providers/mlx5/verbs.c).
      CHECK(ep.sq_wqes == 512);
      CHECK(mine[q].sq_wqebbs == 512);
      CHECK(mine[q].send_ops ==
            (IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_READ |
             IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD));
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
      vd::check_transitions(r);
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
  vd::check_nothing_alive();
}

}  // namespace

TEST_CASE("open: 2 PEs x 1 QP connect through the double, export, register and tear down") {
  open_and_check(1);
}

TEST_CASE("open: 2 PEs x 2 QPs connect through the double, export, register and tear down") {
  open_and_check(2);
}

// B1 (reviews/2026-12-01-bringup.md): the QP the runtime asked for, made with plain ibv_create_qp,
// gets rdma-core's default send-op set, whose bind-MW and local-invalidate make each WQE a UMR's
// 256 bytes and the SQ 1024 WQEBBs, while ibv_create_cq(256) is a ring of 512: export_mlx5 would
// refuse it. With the send ops named, the same caps give 512 WQEBBs.
TEST_CASE("open: rdma-core sizes a plain RC QP for bind-MW, so the runtime names its send ops") {
  vd::reset({vd::roce_mlx5("mlx5_0", 1)});
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  REQUIRE(n == 1);
  ibv_context* ctx = ibv_open_device(list[0]);
  ibv_pd* pd = ibv_alloc_pd(ctx);
  ibv_cq* cq = ibv_create_cq(ctx, 256, nullptr, nullptr, 0);
  REQUIRE(cq);
  ibv_qp_init_attr plain{};
  plain.send_cq = plain.recv_cq = cq;
  plain.qp_type = IBV_QPT_RC;
  plain.cap.max_send_wr = 256;
  plain.cap.max_send_sge = 1;
  plain.cap.max_recv_sge = 1;
  plain.cap.max_inline_data = 28;
  ibv_qp* a = ibv_create_qp(pd, &plain);
  REQUIRE(a);
  ibv_qp_init_attr_ex named{};
  std::memcpy(&named, &plain, sizeof(plain));
  named.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
  named.pd = pd;
  named.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_READ |
                         IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
  ibv_qp* b = ibv_create_qp_ex(ctx, &named);
  REQUIRE(b);
  const std::vector<vd::QpRecord> r = vd::records_of("mlx5_0");
  REQUIRE(r.size() == 2);
  CHECK(r[0].cq_entries == 512);
  CHECK(r[0].sq_wqebbs == 1024);
  CHECK(r[1].sq_wqebbs == 512);
  CHECK(ibv_destroy_qp(a) == 0);
  CHECK(ibv_destroy_qp(b) == 0);
  CHECK(ibv_destroy_cq(cq) == 0);
  CHECK(ibv_dealloc_pd(pd) == 0);
  CHECK(ibv_close_device(ctx) == 0);
  ibv_free_device_list(list);
  vd::check_nothing_alive();
}

// B9: MORI_RDMA_TC and MORI_RDMA_SL reach every QP's address vector at RTR, and relaxed ordering
// is on the heap's and the buffers' MRs only when asked for (never on the ibufs, which the engine
// reads after their completion).
TEST_CASE("open: the traffic class, service level and relaxed ordering the settings name") {
  for (const bool relaxed : {false, true}) {
    CAPTURE(relaxed);
    vd::reset({vd::roce_mlx5("mlx5_0", 1), vd::roce_mlx5("mlx5_1", 2)});
    vd::TwoPes how;
    how.traffic_class = 104;  // DSCP 26
    how.service_level = 3;
    how.relaxed_ordering = relaxed;
    const std::vector<vd::PeOutcome> outcome = vd::open_two_pes(how);
    for (const vd::PeOutcome& o : outcome) vd::check_opened(o);
    const std::vector<vd::QpRecord> all = vd::qp_history();
    REQUIRE(all.size() == 2);
    for (const vd::QpRecord& r : all) {
      CHECK(r.traffic_class == 104);
      CHECK(r.sl == 3);
    }
    int relaxed_mrs = 0, remote_mrs = 0;
    for (const int access : vd::mr_access_history()) {
      if (access & IBV_ACCESS_REMOTE_WRITE) ++remote_mrs;
      if (access & IBV_ACCESS_RELAXED_ORDERING) ++relaxed_mrs;
    }
    CHECK(remote_mrs == 4);  // each PE's heap and its registered buffer
    CHECK(relaxed_mrs == (relaxed ? 4 : 0));
  }
}

// B4: a device that reports no atomics opens, connects and registers as any other, and the
// network records the capability for the runtime (which logs it and traps RDMA AMOs).
TEST_CASE("open: a device with atomic_cap IBV_ATOMIC_NONE opens and records it") {
  vd::DeviceSpec none = vd::roce_mlx5("mlx5_0", 1);
  none.atomic_cap = IBV_ATOMIC_NONE;
  vd::DeviceSpec glob = vd::roce_mlx5("mlx5_1", 2);
  glob.atomic_cap = IBV_ATOMIC_GLOB;
  vd::reset({none, glob});
  vd::TwoPes how;
  std::vector<mori::runtime::AtomicCap> caps(2, mori::runtime::AtomicCap::kHca);
  how.while_open = [&](int rank, mori::rdma::VerbsNetwork& net, vd::PeOutcome&) {
    caps[rank] = net.atomic_cap();
  };
  const std::vector<vd::PeOutcome> outcome = vd::open_two_pes(how);
  for (int pe = 0; pe < 2; ++pe) {
    CAPTURE(pe);
    CHECK_MESSAGE(outcome[pe].status.ok(), outcome[pe].status.message());
    vd::check_opened(outcome[pe]);
  }
  CHECK(caps[0] == mori::runtime::AtomicCap::kNone);
  CHECK(caps[1] == mori::runtime::AtomicCap::kGlob);
  vd::check_nothing_alive();
}

// The runtime asks for a QP to the PE itself where its AMOs on its own memory must go through its
// NIC (runtime/amo_route.hpp, B12): that QP is connected to itself, its destination its own QPN
// and its receive PSN its own send PSN, and its GID its own port's, so that the HCA loops its
// requests back to itself. Each PE's other QP still pairs with the peer's.
TEST_CASE("open: a QP to the PE itself is connected to itself") {
  vd::reset({vd::roce_mlx5("mlx5_0", 1), vd::roce_mlx5("mlx5_1", 2)});
  vd::TwoPes how;
  how.loopback = true;
  const std::vector<vd::PeOutcome> outcome = vd::open_two_pes(how);
  const std::string refused = vd::all_refusals();
  CHECK_MESSAGE(refused.empty(), refused);
  for (int pe = 0; pe < 2; ++pe) {
    CAPTURE(pe);
    vd::check_opened(outcome[pe]);
    const std::vector<mori::state::RdmaEndpoint>& eps = outcome[pe].endpoints;
    REQUIRE(eps.size() == 2);
    REQUIRE(eps[pe].sq != nullptr);  // the QP to itself
    REQUIRE(eps[1 - pe].sq != nullptr);
    const std::vector<vd::QpRecord> mine = vd::records_of("mlx5_" + std::to_string(pe));
    REQUIRE(mine.size() == 2);
    for (const vd::QpRecord& r : mine) {
      vd::check_transitions(r);
      if (r.qpn == eps[pe].qpn) {
        CHECK(r.dest_qpn == r.qpn);
        CHECK(r.rq_psn == r.sq_psn);
      } else {
        CHECK(r.qpn == eps[1 - pe].qpn);
        CHECK(r.dest_qpn != r.qpn);
      }
    }
  }
  std::string problems;
  for (const std::string& p : vd::connection_problems()) problems += p + "\n";
  CHECK_MESSAGE(problems.empty(), problems);
  vd::check_nothing_alive();
}
