// A job that reaches a PE over RDMA with a NIC family this code was not compiled for: every call
// to that PE fails with kNotBuilt, naming the family, at the one failure site of P2P's path
// (transport/reach.hpp, rdma_reaches; P2p::unreachable), and quiet over every PE leaves RDMA
// alone (no call of this code can have posted a WQE). This file is its own executable, compiled
// with MLX5 alone as the default build is (tests/unit/nic_family/CMakeLists.txt); the job's state
// is written by hand: PE 0 (this one) over P2P, PE 1 over RDMA on a BNXT NIC, PE 2 unreachable.
#undef MORI_RDMA_MLX5
#undef MORI_RDMA_BNXT
#undef MORI_RDMA_IONIC
#define MORI_RDMA_MLX5 1
#define MORI_RDMA_BNXT 0
#define MORI_RDMA_IONIC 0

#include <doctest/doctest.h>

#include <cstdint>
#include <string>

#include "mori/host/launch.hpp"
#include "mori/shmem.hpp"

namespace state = mori::state;
namespace shmem = mori::shmem;
using state::DeviceErrorCode;
using state::Transport;

namespace {

// globalGpuStates for the three PEs, put back when the case ends.
struct FakeJob {
  alignas(64) int heap[16] = {};
  uint8_t transports[3] = {state::transport_entry(Transport::kP2P, state::Nic::kBnxt),
                           state::transport_entry(Transport::kRdma, state::Nic::kBnxt),
                           state::transport_entry(Transport::kUnreachable, state::Nic::kBnxt)};
  uint64_t peer_bases[3] = {reinterpret_cast<uint64_t>(heap), 0, 0};
  uint64_t remote_bases[3] = {reinterpret_cast<uint64_t>(heap), reinterpret_cast<uint64_t>(heap),
                              0};
  uint32_t rkeys[3] = {0, 7, 0};
  state::RegisteredRegion regions[1] = {};  // regions[-1] is the heap: the table starts past it
  // PE 1's endpoint looks busy (one WQE submitted, none complete, the CQ held by another poller):
  // a quiet that waited on it would time out.
  state::RdmaEndpoint endpoints[3] = {};
  state::DeviceError record = {};
  state::GpuStates saved;

  FakeJob() : saved(shmem::globalGpuStates) {
    regions[0] = {
        reinterpret_cast<uint64_t>(heap), sizeof heap, peer_bases, remote_bases, rkeys, 0, 0};
    endpoints[1].submitted = 1;
    endpoints[1].poll_lock = 1;
    state::GpuStates& s = shmem::globalGpuStates;
    s.rank = 0;
    s.n_pes = 3;
    s.num_qp_per_pe = 1;
    s.heap_base = reinterpret_cast<uint64_t>(heap);
    s.heap_size = sizeof heap;
    s.transports = transports;
    s.amo_transports = transports;  // no PE's AMOs are routed apart from its data
    s.regions = regions + 1;
    s.n_regions = 0;
    s.rdma_endpoints = endpoints;
    s.error = &record;
    // 300 ms: a wait that should not happen fails instead of hanging.
    s.timeout_ticks = 300'000'000 / mori::platform::kClockTickNs;
    s.nic = static_cast<uint8_t>(state::Nic::kBnxt);
  }
  ~FakeJob() { shmem::globalGpuStates = saved; }

  // Runs `kernel` on one lane; returns the launch's failure text ("" when it succeeded).
  template <typename K>
  std::string run(K&& kernel) {
    record = {};
    const mori::Status status = mori::host::launch({1}, {1}, kernel);
    return status.ok() ? std::string() : status.message();
  }
};

std::string lane_failed(const std::string& message) {
  return "mori::host::launch: lane failed: " + message + " [block (0,0,0) thread (0,0,0)]";
}

const std::string kNotBuiltText =
    ": PE 1 is reached over RDMA, but NIC family 2 is not compiled into this code "
    "(MORI_RDMA_PROVIDERS)";

}  // namespace

TEST_CASE("dispatch: an RDMA PE of a NIC family not compiled in fails every call with kNotBuilt") {
  FakeJob job;
  int* word = &job.heap[3];
  const int value = 41;
  CHECK(job.run([&] { shmem::p<int>(word, 5, 1); }) == lane_failed("p" + kNotBuiltText));
  CHECK(job.record.code == static_cast<uint32_t>(DeviceErrorCode::kNotBuilt));
  CHECK(job.record.pe == 1);
  CHECK(job.record.observed == static_cast<uint64_t>(state::Nic::kBnxt));
  CHECK(std::string(job.record.message) == "p" + kNotBuiltText);

  CHECK(job.run([&] { shmem::putmem_nbi<mori::Thread>(word, &value, sizeof value, 1); }) ==
        lane_failed("putmem_nbi" + kNotBuiltText));
  CHECK(job.record.code == static_cast<uint32_t>(DeviceErrorCode::kNotBuilt));
  CHECK(job.run([&] { (void)shmem::g<int>(word, 1); }) == lane_failed("g" + kNotBuiltText));
  CHECK(job.run([&] { shmem::quiet(1); }) == lane_failed("quiet" + kNotBuiltText));
  CHECK(job.record.code == static_cast<uint32_t>(DeviceErrorCode::kNotBuilt));
  CHECK(job.record.observed == static_cast<uint64_t>(state::Nic::kBnxt));
  // Nothing reached the heap, and the busy endpoint was never touched.
  for (int v : job.heap) CHECK(v == 0);
  CHECK(job.endpoints[1].submitted == 1);
  CHECK(job.endpoints[1].poll_lock == 1);
}

TEST_CASE("dispatch: with the family not compiled in, P2P still serves and quiet skips RDMA") {
  FakeJob job;
  int* word = &job.heap[5];
  CHECK(job.run([&] {
    shmem::p<int>(word, 17, 0);
    shmem::quiet();  // over every PE: would time out on PE 1's busy endpoint
  }) == "");
  CHECK(job.heap[5] == 17);
  CHECK(job.record.code == 0);
}

TEST_CASE("dispatch: a PE no transport reaches fails with kNotReachable, not kNotBuilt") {
  FakeJob job;
  CHECK(job.run([&] { shmem::p<int>(&job.heap[0], 1, 2); }) ==
        lane_failed("p: PE 2 is unreachable from PE 0"));
  CHECK(job.record.code == static_cast<uint32_t>(DeviceErrorCode::kNotReachable));
  CHECK(job.record.pe == 2);
  CHECK(job.record.observed == 0);
  CHECK(job.run([&] { shmem::quiet(2); }) == lane_failed("quiet: PE 2 is unreachable from PE 0"));
  CHECK(job.record.code == static_cast<uint32_t>(DeviceErrorCode::kNotReachable));
}
