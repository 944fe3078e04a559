// An RDMA endpoint's queue as a failure reports it, for every provider (RdmaEngine's failure
// paths): one snapshot of its counters (state::QueueNote), which the device-error record keeps and
// the message prints, so the two agree while other lanes go on posting; and a timeout that
// reports it.
#pragma once

#include <cstdint>

#include "mori/platform.hpp"
#include "mori/state/device_error.hpp"
#include "mori/state/rdma_endpoint.hpp"
#include "mori/state/spin.hpp"

namespace mori::transport::rdma_queue {

// snapshot()'s default: the WQEs completed are ep.completed.
inline constexpr uint64_t kFromEndpoint = ~uint64_t{0};

MORI_DEVICE uint64_t load(const uint64_t* p) {
  return platform::atomic_load<platform::MemOrder::Relaxed, platform::MemScope::System>(p);
}

// The queue's counters, read once. `completed`: the WQEs known complete (ep.completed unless an
// error CQE says more).
MORI_DEVICE MORI_COLD_INLINE state::QueueNote snapshot(const state::RdmaEndpoint& ep,
                                                       uint64_t completed = kFromEndpoint) {
  return {ep.qpn, static_cast<uint32_t>(load(&ep.submitted)),
          static_cast<uint32_t>(completed == kFromEndpoint ? load(&ep.completed) : completed),
          static_cast<uint32_t>(load(&ep.cq_consumed))};
}

// "qp 7 posted 12, completed 10, cq consumed 3 (PE 1)"
MORI_DEVICE void describe(state::Message& m, const state::QueueNote& q, int pe) {
  m << "qp " << q.qp << " posted " << q.posted << ", completed " << q.completed << ", cq consumed "
    << q.consumed << " (PE " << pe << ")";
}

// A wait on the queue passed MORI_SHMEM_TIMEOUT_MS: fails naming `call` and the queue.
MORI_DEVICE MORI_COLD_INLINE void time_out(const state::RdmaEndpoint& ep, int pe,
                                           const char* call) {
  const state::QueueNote q = snapshot(ep);
  state::fail_in_line({state::DeviceErrorCode::kTimeout, pe, 0, q.completed, true, q},
                      [&](state::Message& m) {
                        state::timeout_prefix(m, call);
                        describe(m, q, pe);
                      });
}

}  // namespace mori::transport::rdma_queue
