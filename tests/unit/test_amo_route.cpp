// The AMO table's rule (runtime/amo_route.hpp) on small jobs: which PEs' AMOs go over RDMA for
// each NIC atomic capability, which queue pairs that needs, and when the job's NIC atomics are
// unavailable.
#include <doctest/doctest.h>

#include <vector>

#include "runtime/amo_route.hpp"

namespace {

using mori::runtime::AtomicCap;
constexpr uint8_t P = 1, R = 2;  // state::Transport::kP2P, kRdma

// Two nodes of two PEs (0, 1 | 2, 3): P2P within a node, RDMA between.
const std::vector<uint8_t> kTwoNodes = {P, P, R, R,  //
                                        P, P, R, R,  //
                                        R, R, P, P,  //
                                        R, R, P, P};

std::vector<AtomicCap> all(AtomicCap c) { return std::vector<AtomicCap>(4, c); }

}  // namespace

TEST_CASE("amo route: HCA NICs route every P2P AMO on NIC-updated memory over RDMA") {
  const auto route = mori::runtime::route_amos(kTwoNodes, all(AtomicCap::kHca), 4, 0);
  CHECK(route.transports == std::vector<uint8_t>{R, R, R, R});
  CHECK_FALSE(route.no_nic_atomics);
  CHECK(mori::runtime::rdma_queue_needs(kTwoNodes, 4, 0) == std::vector<bool>{1, 1, 1, 1});
}

TEST_CASE("amo route: GLOB NICs keep P2P AMOs") {
  const auto route = mori::runtime::route_amos(kTwoNodes, all(AtomicCap::kGlob), 4, 1);
  CHECK(route.transports == std::vector<uint8_t>{P, P, R, R});
  CHECK_FALSE(route.no_nic_atomics);
}

TEST_CASE("amo route: per target, by the target's NIC") {
  std::vector<AtomicCap> caps = all(AtomicCap::kGlob);
  caps[1] = AtomicCap::kHca;  // only PE 1's NIC is HCA: AMOs on PE 1 go over its NIC
  const auto route = mori::runtime::route_amos(kTwoNodes, caps, 4, 0);
  CHECK(route.transports == std::vector<uint8_t>{P, R, R, R});
}

TEST_CASE("amo route: a NIC without atomics keeps P2P and marks the job") {
  std::vector<AtomicCap> caps = all(AtomicCap::kHca);
  caps[3] = AtomicCap::kNone;
  const auto route = mori::runtime::route_amos(kTwoNodes, caps, 4, 2);
  CHECK(route.transports == std::vector<uint8_t>{R, R, R, P});
  CHECK(route.no_nic_atomics);
}

TEST_CASE("amo route: a P2P-only job keeps P2P and opens no queue pair") {
  const std::vector<uint8_t> p2p(4, P);
  const auto route = mori::runtime::route_amos(std::vector<uint8_t>(p2p.begin(), p2p.end()),
                                               std::vector<AtomicCap>(2, AtomicCap::kHca), 2, 0);
  CHECK(route.transports == std::vector<uint8_t>{P, P});
  CHECK(mori::runtime::rdma_queue_needs(p2p, 2, 1) == std::vector<bool>{0, 0});
}
