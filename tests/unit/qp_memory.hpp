// One QP's queue memory as the driver hands it over, for the code that serves a QP without a
// driver: the software NIC rigs of the unit tests (softnic_rig.hpp, softnic_wire_rig.hpp) and
// bench/rdma_post.cpp. Free of doctest, so that a bench can include it.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "mori/state/rdma_endpoint.hpp"

namespace mori::test {

// The tests' SQ depth: small, so that a few hundred posts wrap the ring.
constexpr uint32_t kSqWqes = 64;

// A zeroed, 64-byte aligned SQ of sq_wqes entries (P::sq_bytes: BNXT's holds its MSN table too),
// a CQ ring of one CQE per entry in its initial state (P::init_cq), the doorbell record and
// register, and the endpoint naming them. BNXT's engine reads the path MTU (provider_word[0]) and
// its next PSN (the QP's initial send PSN) from the endpoint, as the runtime seeds them; the other
// providers ignore both.
template <typename P>
struct QueueMemory {
  uint8_t* sq;
  std::vector<uint8_t> cq;
  uint32_t dbr[2] = {};
  uint64_t db = 0;
  state::RdmaEndpoint ep{};

  QueueMemory(uint32_t qpn, uint32_t path_mtu_bytes, uint32_t initial_psn,
              uint32_t sq_wqes = kSqWqes)
      : sq(static_cast<uint8_t*>(std::aligned_alloc(64, P::sq_bytes(sq_wqes)))),
        cq(uint64_t{sq_wqes} * P::kCqeBytes, 0) {
    std::memset(sq, 0, P::sq_bytes(sq_wqes));
    P::init_cq(cq.data(), sq_wqes);
    ep.sq = sq, ep.cq = cq.data(), ep.dbr = dbr, ep.db = &db;
    ep.sq_wqes = sq_wqes, ep.cq_entries = sq_wqes, ep.qpn = qpn, ep.cqn = 0x42;
    ep.provider_word[0] = path_mtu_bytes;
    ep.provider_state = initial_psn;
  }
  ~QueueMemory() { std::free(sq); }
  QueueMemory(const QueueMemory&) = delete;
  QueueMemory& operator=(const QueueMemory&) = delete;
};

}  // namespace mori::test
