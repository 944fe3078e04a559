// The harness of the shmem benchmarks (put_bw, get_bw, put_latency, get_latency, p_pingpong,
// atomic_latency, signal_pingpong), run under mpirun with 2 PEs:
//
//   mpirun -np 2 build/bench/put_bw -b 8 -e 4M -f 4 --scope warp
//   mpirun -np 2 build/bench/put_latency --transport rdma --provider bnxt --json
//
// A program is a Spec (what it measures, how its figure is formed) and a kernel body per scope. The
// harness parses the options, sets the environment init reads (MORI_DISABLE_P2P, MORI_DEVICE_NIC,
// MORI_NUM_QP_PER_PE, the heap size), allocates the symmetric buffers, and for every size runs
// --reps repetitions of one launch each. Inside that launch every lane runs the warmup iterations,
// meets the other lanes of the launch, then times the measured iterations with clock_ns(): thread
// creation and the rendezvous are outside the timed span. The figure is the median over the
// repetitions; the JSON lines add the minimum and maximum.
//
// Between nodes (network namespaces, scripts/netns.sh; scripts/bench-nodes.sh runs them so): with
// MORI_TEST_NETNS=<prefix> and MORI_TEST_PES_PER_NODE=1, rank r enters node <prefix><r> as the MPI
// tests do (tests/netns/join.hpp) and init bootstraps by unique ID over the nodes' eth0; with
// --transport rdma the pair's software NICs then talk RoCEv2 over the veths.
//
//   MORI_TEST_NETNS=mori-bench MORI_TEST_PES_PER_NODE=1 mpirun -np 2 build/bench/put_latency \
//       --transport rdma
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "mori/core.hpp"
#include "mori/host/launch.hpp"
#include "mori/shmem.hpp"
#include "mori/shmem/device_api.hpp"

namespace mori::bench {

struct Options {
  size_t min_size = 8, max_size = 1 << 20;
  double factor = 2;
  int iters = 1000, warmup = 100, reps = 5;
  std::string scope = "thread";
  unsigned grid = 1, block = 0;  // block 0: the scope's natural size (1 lane, one warp, 64)
  int qps = 0;                   // 0: the library's default MORI_NUM_QP_PER_PE
  std::string transport = "p2p", provider = "mlx5";
  bool bidir = false, json = false, memcpy_ref = false, pin = true;
};

enum class Figure {
  kLatency,    // µs per iteration of one unit: a call and its completion
  kHalfTrip,   // µs per half round trip: two PEs answer each other, one message per iteration each
  kBandwidth,  // GB/s (10^9 bytes/s) of all units of the sending PEs, and Mops (messages/s per PE)
};

// What the last repetition leaves behind, checked after each size: the peer's src in this PE's dst
// (a put from an active peer, or a get by this active PE).
enum class Moves { kNothing, kPut, kGet };

struct Spec {
  const char* name;
  Figure figure;
  Moves moves = Moves::kNothing;
  size_t fixed_size = 0;    // nonzero: the message size is fixed (p: 4 bytes, fetch_add: 8 bytes)
  bool memcpy_ref = false;  // --memcpy times memcpy through the peer's P2P mapping alongside
};

// One repetition at one size, as this PE sees it. Units are the scope instances of the launch
// (every lane for Thread, every warp for Warp, every block for Block); each unit has its own slot
// of `size` bytes in src and dst, and its own QP (unit mod qps).
struct Run {
  const Options* opt;
  int me, npes, peer;  // peer: this PE's partner, me ^ 1
  size_t size;
  int iters, warmup;
  unsigned block;  // lanes per block of the launch (grid: opt->grid)
  int units, qps;
  bool memcpy_ref;  // time memcpy instead of the library's call (P2P only)
  char* src;        // symmetric, units slots of `size` bytes
  char* dst;        // symmetric, units slots of `size` bytes
  uint64_t* flags;  // symmetric, one 64-byte line per unit (ping-pong flags and signals)
  char* peer_src;   // src and dst as mapped from the peer (P2P only; null over RDMA)
  char* peer_dst;
  // The PEs that issue in a one-way test: the first of each pair (0, 2, ...), or all with --bidir.
  bool active(int pe) const { return pe % 2 == 0 || opt->bidir; }
};

// This lane's unit and QP.
template <Scope S>
MORI_DEVICE int unit_index() {
  const int block = static_cast<int>(platform::block_idx().x);
  if constexpr (std::is_same_v<S, Thread>)
    return block * platform::block_threads() + platform::thread_rank();
  else if constexpr (std::is_same_v<S, Warp>)
    return block *
               ((platform::block_threads() + platform::warp_size() - 1) / platform::warp_size()) +
           platform::warp_id();
  else
    return block;
}

struct Lane {
  int unit, qp;
  uint64_t* flag;  // this unit's flag line in the symmetric flags
  char* src;       // this unit's slots
  char* dst;
};

// Runs one timed launch on this PE and returns the timed span in seconds: the earliest lane's
// start to the latest lane's end. body(lane, i) is one iteration (i counts warmup iterations too,
// from 0); finish(lane) completes what the iterations left outstanding (a quiet), and is timed.
using LaneMain =
    std::function<void(std::atomic<int>* arrived, uint64_t* start_ns, uint64_t* end_ns)>;
double timed_launch(const Run& run, const LaneMain& lane_main);

template <Scope S, typename Body, typename Finish>
double timed_loop(const Run& run, Body&& body, Finish&& finish) {
  return timed_launch(run, [&](std::atomic<int>* arrived, uint64_t* start_ns, uint64_t* end_ns) {
    const int unit = unit_index<S>();
    Lane lane{unit, unit % run.qps, run.flags + 8 * unit, run.src + unit * run.size,
              run.dst + unit * run.size};
    for (int i = 0; i < run.warmup; ++i) body(lane, i);
    finish(lane);
    // Every lane of the launch meets here, so that none starts its clock while another is
    // still being created or warming up.
    const int lanes = static_cast<int>(platform::grid_dim().count() * platform::block_threads());
    arrived->fetch_add(1, std::memory_order_acq_rel);
    while (arrived->load(std::memory_order_acquire) < lanes) platform::relax();
    const int me = static_cast<int>(platform::block_idx().x) * platform::block_threads() +
                   platform::thread_rank();
    start_ns[me] = platform::clock_ns();
    for (int i = 0; i < run.iters; ++i) body(lane, run.warmup + i);
    finish(lane);
    end_ns[me] = platform::clock_ns();
  });
}

// Calls f.template operator()<S>() with the scope named by --scope.
template <typename F>
double with_scope(const std::string& scope, F&& f) {
  if (scope == "warp") return f.template operator()<Warp>();
  if (scope == "block") return f.template operator()<Block>();
  return f.template operator()<Thread>();
}

// Shared with coll_bench: "64K" -> 65536 (suffixes K, M, G: powers of 1024; throws
// CLI::ValidationError otherwise); every PE meets, sleeping while it waits; pins the calling lane
// to the n-th CPU this process may use.
size_t parse_size(const std::string& text);
// The median, fastest and slowest of a program's repetitions.
struct Stats {
  double median, min, max;
};
Stats stats_of(std::vector<double> v);
void rendezvous();
void pin_lane(unsigned n);

// A program's measurement: the seconds of one repetition on this PE (0 if this PE only serves).
using Measure = std::function<double(const Run&)>;

// Parses argv, initialises MPI and shmem, runs every size, prints, finalises. The exit status.
int run_main(int argc, char** argv, const Spec& spec, const Measure& measure);

}  // namespace mori::bench
