// Init -> traffic -> finalize on the verbs double: two PEs as threads open VerbsNetwork (the hip
// code path's setup logic) on two fake devices, the double's software NICs carry what the device
// code posts through RdmaEngine<Provider> on the exported endpoints, and the networks are torn
// down. The NICs know each QP only as the double made it (NicBacking), so an export that names
// the wrong buffer, doorbell, key or PSN fails here. Checked on every PE: the bytes of writes,
// inline writes and reads, exact counts after fetch-adds (4- and 8-byte where the NIC has them)
// and compare-swaps, old values through the ibuf, a region registered while traffic runs, guard
// words around every target, and an error completion for an unregistered key.
#include <doctest/doctest.h>

#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "../unit/device_state_guard.hpp"
#include "mori/host/launch.hpp"
#include "mori/provider/bnxt.hpp"
#include "mori/provider/ionic.hpp"
#include "mori/provider/mlx5.hpp"
#include "mori/transport/rdma_engine.hpp"
#include "rdma/verbs_network.hpp"
#include "thread_bootstrap.hpp"
#include "verbs_double.hpp"

// The device state the engine reads (its error record and deadline): this executable links no
// runtime, which would define it (backend_host.cpp), so it defines it as a runtime would.
namespace mori::shmem {
state::GpuStates globalGpuStates{};
}  // namespace mori::shmem

namespace rdma = mori::rdma;
namespace vd = verbs_double;
namespace mp = mori::provider;
namespace plat = mori::platform;
using mori::transport::RdmaEngine;
using mp::Opcode;
using mp::WorkRequest;

namespace {

constexpr int kPes = 2, kLanes = 4, kIters = 24;
constexpr uint64_t kGuard = 0x5a5a5a5a5a5a5a5aull;
// Each PE's heap, in words. The peer writes [kDst, kInl + 2 * n), reads [kReadSrc, + n), adds to
// kCounter (8-byte) and kCounter + 1 (two 4-byte halves), swaps kCas + lane; every region is
// followed by a guard word. The PE's own side: kSrc (write sources), kReadDst (read results),
// kOld (fetch-add old values).
constexpr size_t kN = size_t{kLanes} * kIters;
constexpr size_t kDst = 0, kInl = kDst + kN + 1, kReadSrc = kInl + 2 * kN + 1;
constexpr size_t kCounter = kReadSrc + kN + 1, kCas = kCounter + 3;
constexpr size_t kSrc = kCas + kLanes + 1, kReadDst = kSrc + kN, kOld = kReadDst + kN;
constexpr size_t kHeapWords = kOld + kN + 1;
constexpr size_t kGuards[] = {kInl - 1, kReadSrc - 1, kCounter - 1, kCounter + 2, kCas + kLanes};
constexpr size_t kRegionWords = 64;

uint64_t pattern(int pe, size_t i) { return (uint64_t(pe) + 1) * 0x9e3779b97f4a7c15ull ^ i; }

struct Pe {
  std::unique_ptr<rdma::VerbsNetwork> net;
  std::vector<mori::state::RdmaEndpoint> eps;  // the device's copy, as the runtime makes it
  std::vector<uint64_t> heap = std::vector<uint64_t>(kHeapWords, 0);
  std::vector<uint64_t> region = std::vector<uint64_t>(kRegionWords + 1, 0);  // + a guard
  std::vector<uint32_t> region_rkeys;
  std::vector<uint64_t> fetched;  // old values read back through the ibuf (engine fetch)
  std::string failure;            // the kernel's, "" when it succeeded
  std::string bad_key_failure;
  mori::Status status;
};

template <typename P>
struct Run {
  std::vector<Pe> pes = std::vector<Pe>(kPes);
  std::unique_ptr<vd::NicBacking> nics;
  mori::Status nics_started;
  std::vector<std::string> qp_errors;
  uint64_t executed = 0;

  // One PE's kernel: kLanes lanes post writes, inline writes, reads and atomics to the peer, then
  // a fetch through the ibuf and a write into the peer's registered region, then quiet.
  std::string kernel(int me) {
    Pe& pe = pes[me];
    const int peer = 1 - me;
    const uint64_t base = pe.net->remote_heap_bases()[peer];
    const uint32_t rkey = pe.net->heap_rkeys()[peer], lkey = pe.net->heap_lkey();
    auto remote = [&](size_t word) { return base + word * 8; };
    auto local = [&](size_t word) { return reinterpret_cast<uint64_t>(&pe.heap[word]); };
    pe.fetched.assign(kLanes, ~uint64_t{0});
    const mori::Status launched = mori::host::launch({1}, {kLanes}, [&] {
      using Engine = RdmaEngine<P>;
      const int lane = plat::thread_rank();
      // Lane l uses QP l % qps of the peer's (with 2, QPs of one device share its UAR page).
      mori::state::RdmaEndpoint& ep = pe.eps[peer * qps + lane % qps];
      for (int k = 0; k < kIters; ++k) {
        const size_t s = size_t(lane) * kIters + k;
        WorkRequest w{};
        w.rkey = rkey, w.lkey = lkey;
        WorkRequest wr = w;
        wr.opcode = Opcode::kWrite, wr.remote_addr = remote(kDst + s);
        wr.local_addr = local(kSrc + s), wr.bytes = 8;
        Engine::post(ep, wr, peer);
        const uint64_t words[2] = {pattern(me, s) + 1, pattern(me, s) + 2};
        WorkRequest inl = w;
        inl.opcode = Opcode::kWriteInline, inl.remote_addr = remote(kInl + 2 * s);
        inl.bytes = 16, inl.inline_data = words;
        Engine::post(ep, inl, peer);
        WorkRequest rd = w;
        rd.opcode = Opcode::kRead, rd.remote_addr = remote(kReadSrc + s);
        rd.local_addr = local(kReadDst + s), rd.bytes = 8;
        Engine::post(ep, rd, peer);
        WorkRequest add = w;
        add.opcode = Opcode::kFetchAdd, add.remote_addr = remote(kCounter), add.width = 8;
        add.operand = 1, add.local_addr = local(kOld + s);
        Engine::post(ep, add, peer);
        if constexpr (P::kNativeAtomic32) {
          WorkRequest add32 = w;
          add32.opcode = Opcode::kFetchAdd, add32.width = 4, add32.operand = 3;
          add32.remote_addr = remote(kCounter + 1) + 4 * (k & 1);
          Engine::discard_result(ep, add32);
          Engine::post(ep, add32, peer);
        }
        WorkRequest cas = w;
        cas.opcode = Opcode::kCompareSwap, cas.remote_addr = remote(kCas + lane), cas.width = 8;
        cas.compare = k, cas.operand = k + 1;
        Engine::discard_result(ep, cas);
        Engine::post(ep, cas, peer);
      }
      // The ibuf path: the old value of one more fetch-add, waited for.
      WorkRequest add{};
      add.opcode = Opcode::kFetchAdd, add.remote_addr = remote(kCounter), add.rkey = rkey;
      add.width = 8, add.operand = 1000;
      pe.fetched[lane] = Engine::fetch(ep, add, peer);
      // The region the peer registered after the NICs started.
      WorkRequest reg{};
      reg.opcode = Opcode::kWrite, reg.local_addr = local(kSrc + lane), reg.lkey = lkey;
      reg.remote_addr = reinterpret_cast<uint64_t>(&pes[peer].region[lane]);
      reg.rkey = pe.region_rkeys[peer], reg.bytes = 8;
      Engine::post(ep, reg, peer);
      Engine::quiet(ep, peer);
    });
    return launched.ok() ? std::string{} : launched.message();
  }

  // A write with a key nobody registered: the kernel fails with the NIC's error completion.
  std::string bad_key(int me) {
    Pe& pe = pes[me];
    mori::state::RdmaEndpoint& ep = pe.eps[(1 - me) * qps];
    const mori::Status s = mori::host::launch({1}, {1}, [&] {
      WorkRequest wr{};
      wr.opcode = Opcode::kWrite, wr.remote_addr = pe.net->remote_heap_bases()[1 - me];
      wr.rkey = 0xdead00, wr.lkey = pe.net->heap_lkey(), wr.bytes = 8;
      wr.local_addr = reinterpret_cast<uint64_t>(&pe.heap[kSrc]);
      RdmaEngine<P>::post(ep, wr, 1 - me);
      RdmaEngine<P>::quiet(ep, 1 - me);
    });
    return s.ok() ? std::string{} : s.message();
  }

  int qps = 1;  // per peer

  void run(const std::string& nic, bool with_bad_key) {
    vd::ThreadHub hub(kPes);
    std::vector<std::thread> threads;
    for (int rank = 0; rank < kPes; ++rank)
      threads.emplace_back([&, rank] {
        vd::ThreadBootstrap boot(hub, rank);
        Pe& pe = pes[rank];
        for (size_t i = 0; i < kHeapWords; ++i) pe.heap[i] = kGuard;
        for (size_t i = 0; i < kN; ++i) {
          pe.heap[kSrc + i] = pattern(rank, i);
          pe.heap[kReadSrc + i] = ~pattern(rank, i);
          pe.heap[kDst + i] = pe.heap[kInl + 2 * i] = pe.heap[kInl + 2 * i + 1] = 0;
        }
        pe.heap[kCounter] = pe.heap[kCounter + 1] = 0;
        for (int l = 0; l < kLanes; ++l) pe.heap[kCas + l] = 0;
        pe.region[kRegionWords] = kGuard;
        rdma::VerbsConfig c;
        c.nic = nic;
        if (nic == "ionic") c.dv_library = MORI_VERBS_DOUBLE_IONIC;  // the double's direct verbs
        if (nic == "bnxt") c.dv_library = MORI_VERBS_DOUBLE_BNXT;
        c.rank = rank;
        c.n_pes = kPes;
        c.local_rank = rank;
        c.num_qp_per_pe = qps;
        c.sq_wqes = 64;  // small, so that the ring wraps several times
        c.ibuf_slots = 4;
        c.needs_rdma = {rank != 0, rank != 1};
        c.heap_base = pe.heap.data();
        c.heap_bytes = kHeapWords * 8;
        bool no_devices = false;
        pe.status = rdma::VerbsNetwork::open(c, boot, &pe.net, &no_devices);
        if (!pe.status.ok()) return;
        pe.eps = pe.net->endpoints();
        // A BNXT QP rings its SQ and its CQ doorbell in one word of the doorbell page (the export
        // sets ep.cq_dbr = ep.db, as on hardware, and test_bnxt checks it). A NIC sees every write;
        // a software NIC that polls the word loses an SQ doorbell that a CQ doorbell overwrites
        // before it looks (3 of 40 runs hung), so the kernels here ring no CQ doorbell, as on the
        // host backend's software NIC, whose CQs are never full.
        if (nic == "bnxt")
          for (mori::state::RdmaEndpoint& ep : pe.eps) ep.cq_dbr = nullptr;
        // A barrier that fails (a PE did not arrive) ends the PE; the checks then fail on it.
        auto step = [&](const char* what) {
          const mori::Status b = boot.barrier();
          if (!b.ok()) pe.status = mori::Status::error(std::string(what) + ": " + b.message());
          return b.ok();
        };
        if (!step("barrier after open")) return;
        if (rank == 0) nics_started = vd::NicBacking::start(&nics);
        if (!step("barrier after starting the NICs") || !nics_started.ok()) return;
        uint32_t region_lkey = 0;
        pe.status = pe.net->register_region(pe.region.data(), kRegionWords * 8, &region_lkey,
                                            &pe.region_rkeys);
        if (!pe.status.ok()) return;
        pe.failure = kernel(rank);
        if (!step("barrier after the kernel")) return;
        if (with_bad_key) pe.bad_key_failure = bad_key(rank);
        if (!step("barrier after the bad key")) return;
        if (rank == 0) {
          qp_errors = nics->qp_errors();
          executed = nics->executed();
          nics.reset();
        }
        if (!step("barrier after stopping the NICs")) return;
        if (!with_bad_key) pe.status = pe.net->deregister_region(pe.region.data());
        pe.net.reset();
      });
    for (std::thread& t : threads) t.join();
  }
};

template <typename P>
void traffic(const std::string& nic, std::vector<vd::DeviceSpec> devices, int qps) {
  vd::reset(std::move(devices));
  mori::test::DeviceStateGuard state(10'000'000'000);
  Run<P> run;
  run.qps = qps;
  run.run(nic, false);
  REQUIRE_MESSAGE(run.nics_started.ok(), run.nics_started.message());
  std::string refused;
  for (const std::string& r : vd::refusals()) refused += r + "\n";
  CHECK_MESSAGE(refused.empty(), refused);
  std::string errors;
  for (const std::string& e : run.qp_errors) errors += e + "\n";
  CHECK_MESSAGE(errors.empty(), errors);
  constexpr uint64_t kPerIter = P::kNativeAtomic32 ? 6 : 5;
  CHECK(run.executed == kPes * (kN * kPerIter + kLanes * 2));
  for (int me = 0; me < kPes; ++me) {
    CAPTURE(me);
    const Pe& pe = run.pes[me];
    REQUIRE_MESSAGE(pe.status.ok(), pe.status.message());
    CHECK_MESSAGE(pe.failure.empty(), pe.failure);
    size_t bad = 0;
    for (size_t s = 0; s < kN; ++s) {
      bad += pe.heap[kDst + s] != pattern(1 - me, s);  // the peer's write
      bad += pe.heap[kInl + 2 * s] != pattern(1 - me, s) + 1;
      bad += pe.heap[kInl + 2 * s + 1] != pattern(1 - me, s) + 2;
      bad += pe.heap[kReadDst + s] != ~pattern(1 - me, s);  // this PE's read of the peer
      bad += pe.heap[kReadSrc + s] != ~pattern(me, s);      // unchanged
    }
    CHECK(bad == 0);
    // The peer added 1 kN times and 1000 once per lane; this PE's old values of its own adds are a
    // permutation of what the counter held (the peer's adds to its counter, in some order).
    CHECK(pe.heap[kCounter] == kN + 1000 * kLanes);
    std::vector<int> seen(kN + 1000 * kLanes + 1, 0);
    for (size_t s = 0; s < kN; ++s)
      if (pe.heap[kOld + s] < seen.size()) ++seen[pe.heap[kOld + s]];
    for (uint64_t f : pe.fetched)
      if (f < seen.size()) ++seen[f];
    size_t distinct = 0;
    for (int n : seen) distinct += n == 1;
    CHECK(distinct == kN + kLanes);  // every old value seen exactly once
    if constexpr (P::kNativeAtomic32) {
      uint32_t halves[2];
      std::memcpy(halves, &pe.heap[kCounter + 1], 8);
      CHECK(halves[0] == 3u * kN / 2);  // 4-byte adds, alternating halves, no carry between
      CHECK(halves[1] == 3u * kN / 2);
    } else {
      CHECK(pe.heap[kCounter + 1] == 0);
    }
    for (int l = 0; l < kLanes; ++l) CHECK(pe.heap[kCas + l] == uint64_t(kIters));
    for (size_t g : kGuards) CHECK(pe.heap[g] == kGuard);
    CHECK(pe.heap[kHeapWords - 1] == kGuard);
    for (int l = 0; l < kLanes; ++l) CHECK(pe.region[l] == pattern(1 - me, l));
    for (size_t w = kLanes; w < kRegionWords; ++w) CHECK(pe.region[w] == 0);
    CHECK(pe.region[kRegionWords] == kGuard);
  }
  const vd::Live live = vd::live();
  CHECK(live.qps == 0);
  CHECK(live.cqs == 0);
  CHECK(live.mrs == 0);
  CHECK(live.pds == 0);
  CHECK(live.contexts == 0);
}

template <typename P>
void error_completion(const std::string& nic, std::vector<vd::DeviceSpec> devices,
                      const char* status_text) {
  vd::reset(std::move(devices));
  mori::test::DeviceStateGuard state(10'000'000'000);
  Run<P> run;
  run.run(nic, true);
  REQUIRE_MESSAGE(run.nics_started.ok(), run.nics_started.message());
  for (int me = 0; me < kPes; ++me) {
    CAPTURE(me);
    const Pe& pe = run.pes[me];
    CHECK_MESSAGE(pe.failure.empty(), pe.failure);
    CHECK(pe.bad_key_failure.find(std::string("error completion: ") + status_text) !=
          std::string::npos);
  }
  REQUIRE(run.qp_errors.size() == 2);
  for (const std::string& e : run.qp_errors) CHECK(e.find("rkey 0xdead00") != std::string::npos);
}

}  // namespace

TEST_CASE("traffic mlx5: init, writes, reads and atomics through the software NIC, finalize") {
  for (int qps : {1, 2}) {
    CAPTURE(qps);
    traffic<mp::Mlx5>("mlx5", {vd::roce_mlx5("mlx5_0", 1), vd::roce_mlx5("mlx5_1", 2)}, qps);
  }
}

TEST_CASE("traffic mlx5: a write with an unregistered rkey fails the kernel with the NIC's error") {
  error_completion<mp::Mlx5>("mlx5", {vd::roce_mlx5("mlx5_0", 1), vd::roce_mlx5("mlx5_1", 2)},
                             "remote access error");
}

// Ionic: the export through the double's ionic direct verbs (one QP per context, so no doorbell
// word is shared: verbs_double.hpp, nic_endpoint_ionic).
TEST_CASE("traffic ionic: init, writes, reads and atomics through the software NIC, finalize") {
  traffic<mp::Ionic>("ionic", {vd::roce_ionic("ionic_0", 1), vd::roce_ionic("ionic_1", 2)}, 1);
}

TEST_CASE(
    "traffic ionic: a write with an unregistered rkey fails the kernel with the NIC's error") {
  error_completion<mp::Ionic>("ionic", {vd::roce_ionic("ionic_0", 1), vd::roce_ionic("ionic_1", 2)},
                              "remote access error");
}

// BNXT: the export through the double's bnxt_re direct verbs, variable WQE mode on both sides (one
// QP per context, so no doorbell word is shared between QPs). No 4-byte NIC atomics: the engine
// emulates them, so the test posts 8-byte ones only.
TEST_CASE("traffic bnxt: init, writes, reads and atomics through the software NIC, finalize") {
  traffic<mp::Bnxt>("bnxt", {vd::roce_bnxt("bnxt_0", 1), vd::roce_bnxt("bnxt_1", 2)}, 1);
}

TEST_CASE("traffic bnxt: a write with an unregistered rkey fails the kernel with the NIC's error") {
  error_completion<mp::Bnxt>("bnxt", {vd::roce_bnxt("bnxt_0", 1), vd::roce_bnxt("bnxt_1", 2)},
                             "remote access");
}
