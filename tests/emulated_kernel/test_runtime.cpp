// The runtime's RDMA setup (src/rdma, compiled here as the verbs double's tests compile it) on
// rdma-core's real libibverbs and libmlx5, over the emulated kernel: two PEs as threads open
// VerbsNetwork on the emulated ConnectX-7 (both on mlx5_0, one HCA, as two GPUs sharing a NIC),
// move their QPs to RTS, export them through mlx5dv_init_obj, then (traffic) the device code
// posts through RdmaEngine<Mlx5> on the exported endpoints and the emulated NIC executes the
// WQEs from the rings rdma-core allocated; then teardown. Run by ctest through
// scripts/with-emulated-nic.sh.
//
// B1 (reviews/2026-12-01-bringup.md): rdma-core sizes a plain ibv_create_qp RC QP's WQEs for a
// UMR, so export_mlx5 refused every QP ("CQ has 512 entries for 1024 WQEBBs"); both cases
// failed with that text until src/rdma/verbs_qp.cpp named the QP's send operations.
#include <doctest/doctest.h>

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "../unit/device_state_guard.hpp"
#include "mori/host/launch.hpp"
#include "mori/provider/mlx5.hpp"
#include "mori/transport/rdma_engine.hpp"
#include "rdma/verbs_network.hpp"
#include "thread_bootstrap.hpp"

// This executable links no runtime (backend_host.cpp would define the device state).
namespace mori::shmem {
state::GpuStates globalGpuStates{};
}  // namespace mori::shmem

namespace {

namespace rdma = mori::rdma;
namespace mp = mori::provider;
namespace vd = verbs_double;
using mori::transport::RdmaEngine;
using mp::Opcode;
using mp::WorkRequest;
using Engine = RdmaEngine<mp::Mlx5>;

constexpr int kPes = 2, kLanes = 2, kIters = 16;
constexpr size_t kN = size_t{kLanes} * kIters;
// Each PE's heap, in words: the peer writes [kDst, +kN) and inline-writes [kInl, +kN), reads
// [kReadSrc, +kN) and adds to kCounter; this PE's own side is kSrc, kReadDst and kOld.
constexpr size_t kDst = 0, kInl = kN, kReadSrc = 2 * kN, kCounter = 3 * kN, kSrc = 3 * kN + 1;
constexpr size_t kReadDst = kSrc + kN, kOld = kReadDst + kN, kHeapWords = kOld + kN;

uint64_t pattern(int pe, size_t i) { return (uint64_t(pe) + 1) * 0x9e3779b97f4a7c15ull ^ i; }

struct Pe {
  mori::Status status;
  std::vector<mori::state::RdmaEndpoint> eps;
  std::vector<uint64_t> heap = std::vector<uint64_t>(kHeapWords, 0);
  std::vector<uint64_t> fetched = std::vector<uint64_t>(kLanes, ~uint64_t{0});
  std::string failure;  // the kernel's
};

// One PE's kernel: each lane writes, inline-writes, reads and fetch-adds on the peer, then one
// fetch-add whose old value comes back through the ibuf, then quiet.
std::string kernel(Pe& pe, rdma::VerbsNetwork& net, int me) {
  const int peer = 1 - me;
  const uint64_t base = net.remote_heap_bases()[peer];
  const uint32_t rkey = net.heap_rkeys()[peer], lkey = net.heap_lkey();
  const mori::Status s = mori::host::launch({1}, {kLanes}, [&] {
    const int lane = mori::platform::thread_rank();
    mori::state::RdmaEndpoint& ep = pe.eps[peer];
    for (int k = 0; k < kIters; ++k) {
      const size_t i = size_t(lane) * kIters + k;
      WorkRequest w{};
      w.rkey = rkey, w.lkey = lkey;
      WorkRequest wr = w;
      wr.opcode = Opcode::kWrite, wr.remote_addr = base + (kDst + i) * 8, wr.bytes = 8;
      wr.local_addr = reinterpret_cast<uint64_t>(&pe.heap[kSrc + i]);
      Engine::post(ep, wr, peer);
      const uint64_t word = pattern(me, i) + 7;
      WorkRequest inl = w;
      inl.opcode = Opcode::kWriteInline, inl.remote_addr = base + (kInl + i) * 8;
      inl.bytes = 8, inl.inline_data = &word;
      Engine::post(ep, inl, peer);
      WorkRequest rd = w;
      rd.opcode = Opcode::kRead, rd.remote_addr = base + (kReadSrc + i) * 8, rd.bytes = 8;
      rd.local_addr = reinterpret_cast<uint64_t>(&pe.heap[kReadDst + i]);
      Engine::post(ep, rd, peer);
      WorkRequest add = w;
      add.opcode = Opcode::kFetchAdd, add.remote_addr = base + kCounter * 8, add.width = 8;
      add.operand = 1, add.local_addr = reinterpret_cast<uint64_t>(&pe.heap[kOld + i]);
      Engine::post(ep, add, peer);
    }
    WorkRequest add{};
    add.opcode = Opcode::kFetchAdd, add.remote_addr = base + kCounter * 8, add.rkey = rkey;
    add.width = 8, add.operand = 1000;
    pe.fetched[lane] = Engine::fetch(ep, add, peer);
    Engine::quiet(ep, peer);
  });
  return s.ok() ? std::string{} : s.message();
}

// Changes a PE's configuration before open; looks at its open network (test_queue_memory.cpp).
using Configure = std::function<void(int rank, rdma::VerbsConfig& c)>;
using Inspect = std::function<void(int rank, const rdma::VerbsNetwork& net)>;

// Both PEs open, check what they exported, optionally run the kernel, and tear down.
std::vector<Pe> run(bool traffic, const Configure& configure = {}, const Inspect& inspect = {}) {
  vd::ThreadHub hub(kPes, std::chrono::seconds(30));
  std::vector<Pe> pes(kPes);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < kPes; ++rank)
    threads.emplace_back([&, rank] {
      vd::ThreadBootstrap boot(hub, rank);
      Pe& pe = pes[rank];
      for (size_t i = 0; i < kN; ++i) {
        pe.heap[kSrc + i] = pattern(rank, i);
        pe.heap[kReadSrc + i] = ~pattern(rank, i);
      }
      rdma::VerbsConfig c;
      c.nic = "mlx5";
      c.rank = rank;
      c.n_pes = kPes;
      c.local_rank = rank;
      c.ibuf_slots = 4;
      c.needs_rdma = {rank != 0, rank != 1};
      c.heap_base = pe.heap.data();
      c.heap_bytes = kHeapWords * 8;
      if (configure) configure(rank, c);
      std::unique_ptr<rdma::VerbsNetwork> net;
      bool none = false;
      pe.status = rdma::VerbsNetwork::open(c, boot, &net, &none);
      if (!pe.status.ok()) return;
      pe.eps = net->endpoints();
      if (inspect) inspect(rank, *net);
      if (traffic) {
        if (!(pe.status = boot.barrier()).ok()) return;
        pe.failure = kernel(pe, *net, rank);
        if (!(pe.status = boot.barrier()).ok()) return;  // the peer is done with our memory
      }
      net.reset();
    });
  for (std::thread& t : threads) t.join();
  return pes;
}

// What the traffic kernel must have done on both PEs.
void check_traffic(const std::vector<Pe>& pes) {
  for (int me = 0; me < kPes; ++me) {
    CAPTURE(me);
    const Pe& pe = pes[me];
    REQUIRE_MESSAGE(pe.status.ok(), pe.status.message());
    CHECK_MESSAGE(pe.failure.empty(), pe.failure);
    size_t bad = 0;
    for (size_t i = 0; i < kN; ++i) {
      bad += pe.heap[kDst + i] != pattern(1 - me, i);
      bad += pe.heap[kInl + i] != pattern(1 - me, i) + 7;
      bad += pe.heap[kReadDst + i] != ~pattern(1 - me, i);
      bad += pe.heap[kReadSrc + i] != ~pattern(me, i);
    }
    CHECK(bad == 0);
    CHECK(pe.heap[kCounter] == kN + 1000 * kLanes);
    // The old values this PE fetched are the peer's counter's successive values, each once.
    std::vector<int> seen(kN + 1000 * kLanes, 0);
    for (size_t i = 0; i < kN; ++i)
      if (pe.heap[kOld + i] < seen.size()) ++seen[pe.heap[kOld + i]];
    for (uint64_t f : pe.fetched)
      if (f < seen.size()) ++seen[f];
    size_t once = 0;
    for (int n : seen) once += n == 1;
    CHECK(once == kN + kLanes);
  }
}

}  // namespace

TEST_CASE("emulated_kernel: VerbsNetwork opens, exports and tears down on rdma-core's mlx5") {
  const std::vector<Pe> pes = run(false);
  for (int me = 0; me < kPes; ++me) {
    CAPTURE(me);
    const Pe& pe = pes[me];
    REQUIRE_MESSAGE(pe.status.ok(), pe.status.message());
    REQUIRE(pe.eps.size() == 2);
    const mori::state::RdmaEndpoint& ep = pe.eps[1 - me];
    // rdma-core's sizes (providers/mlx5/verbs.c): with the four operations the overhead is
    // ctrl + raddr + atomic = 48 bytes (sq_overhead), the inline segment for 28 bytes makes it
    // 48 + align(4 + 28, 16) = 80, a 128-byte WQE (mlx5_calc_send_wqe), so 256 WQEs take
    // roundup_pow2(256 * 128) / 64 = 512 WQEBBs (mlx5_calc_sq_size); the CQ is
    // align_queue_size(256 + 1) = 512 (mlx5_create_cq).
    CHECK(ep.sq_wqes == 512);
    CHECK(ep.cq_entries == 512);
    CHECK(ep.qpn >= 0x100);
    CHECK(ep.sq != nullptr);
    CHECK(ep.dbr != nullptr);
    CHECK(ep.db != nullptr);
    CHECK(pe.eps[me].sq == nullptr);  // no QP to itself
  }
  CHECK(pes[0].eps[1].qpn != pes[1].eps[0].qpn);
}

TEST_CASE("emulated_kernel: writes, reads and fetch-adds between 2 PEs through rdma-core's rings") {
  mori::test::DeviceStateGuard state(20'000'000'000);
  check_traffic(run(true));
}
