// The two-PE harness of the verbs double's VerbsNetwork tests (two_pes.hpp).
#include "two_pes.hpp"

#include <doctest/doctest.h>

#include <memory>
#include <thread>

#include "thread_bootstrap.hpp"

namespace rdma = mori::rdma;

namespace verbs_double {

std::vector<PeOutcome> open_two_pes(const TwoPes& how) {
  constexpr int kPes = 2;
  ThreadHub hub(kPes);
  std::vector<PeOutcome> out(kPes);
  std::vector<std::vector<uint8_t>> heaps(kPes, std::vector<uint8_t>(1 << 16));
  std::vector<std::vector<uint64_t>> buffers(kPes, std::vector<uint64_t>(64));
  std::vector<std::thread> threads;
  for (int rank = 0; rank < kPes; ++rank)
    threads.emplace_back([&, rank] {
      ThreadBootstrap boot(hub, rank);
      rdma::VerbsConfig c;
      c.nic = how.nic;
      c.dv_library = how.dv_library;
      c.rank = rank;
      c.n_pes = kPes;
      c.local_rank = rank;  // no GPU address: device local_rank % 2, so PE r gets device r
      c.num_qp_per_pe = how.qps_per_pe;
      c.sq_wqes = how.sq_wqes;
      c.traffic_class = how.traffic_class;
      c.service_level = how.service_level;
      c.relaxed_ordering = how.relaxed_ordering;
      c.queue_memory = how.queue_memory;
      c.ibuf_slots = 16;
      c.needs_rdma = {how.loopback || rank != 0, how.loopback || rank != 1};
      c.heap_base = heaps[rank].data();
      c.heap_bytes = heaps[rank].size();
      std::unique_ptr<rdma::VerbsNetwork> net;
      PeOutcome& o = out[rank];
      o.status = rdma::VerbsNetwork::open(c, boot, &net, &o.no_devices);
      o.network = net != nullptr;
      if (!net) return;
      o.endpoints = net->endpoints();
      if (how.while_open) how.while_open(rank, *net, o);
      uint32_t lkey = 0;
      o.region =
          net->register_region(buffers[rank].data(), 64 * sizeof(uint64_t), &lkey, &o.region_rkeys);
      if (o.region.ok()) o.region = net->deregister_region(buffers[rank].data());
    });
  for (std::thread& t : threads) t.join();
  return out;
}

std::vector<QpRecord> records_of(const std::string& device) {
  std::vector<QpRecord> out;
  for (const QpRecord& r : qp_history())
    if (r.device == device) out.push_back(r);
  return out;
}

namespace {

// The masks the kernel requires of an RC QP (drivers/infiniband/core/verbs.c, qp_state_table),
// restated here so that the test does not trust the double's table.
constexpr int kInitRequired = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
constexpr int kRtrRequired = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                             IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
constexpr int kRtsRequired = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                             IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;

}  // namespace

void check_opened(const PeOutcome& o) {
  REQUIRE_MESSAGE(o.status.ok(), o.status.message());
  CHECK(o.network);
  CHECK_MESSAGE(o.region.ok(), o.region.message());
  CHECK(o.region_rkeys.size() == 2);
}

void check_transitions(const QpRecord& r) {
  INFO("QP " << r.qpn << " of " << r.device);
  REQUIRE(r.transitions.size() == 3);
  const Transition want[] = {{IBV_QPS_RESET, IBV_QPS_INIT, kInitRequired},
                             {IBV_QPS_INIT, IBV_QPS_RTR, kRtrRequired},
                             {IBV_QPS_RTR, IBV_QPS_RTS, kRtsRequired}};
  for (int i = 0; i < 3; ++i) {
    const Transition& t = r.transitions[i];
    CHECK(t.from == want[i].from);
    CHECK(t.to == want[i].to);
    INFO("mask " << mask_names(t.mask));
    CHECK((t.mask & want[i].mask) == want[i].mask);
  }
  CHECK(r.state == IBV_QPS_RTS);
  CHECK(r.destroyed);
}

std::string all_refusals() {
  std::string out;
  for (const std::string& r : refusals()) out += r + "\n";
  return out;
}

std::function<void(int, mori::rdma::VerbsNetwork&, PeOutcome&)> record_nic_view(NicView view) {
  return [view](int, mori::rdma::VerbsNetwork& net, PeOutcome& o) {
    for (const QpRecord& r : records_of(net.device_name())) {
      mori::state::RdmaEndpoint nic{};
      std::string why;
      if (!view(r.qpn, &nic, &why)) o.nic_view_error += why + "\n";
      o.nic_view.push_back(nic);
    }
  };
}

void check_nothing_alive() {
  const Live l = live();
  CHECK(l.device_lists == 0);
  CHECK(l.contexts == 0);
  CHECK(l.pds == 0);
  CHECK(l.mrs == 0);
  CHECK(l.cqs == 0);
  CHECK(l.qps == 0);
  CHECK(l.umems == 0);
}

}  // namespace verbs_double
