// The shmem benchmarks' harness: options, environment, buffers, repetitions, figures and output
// (shmem_bench.hpp).
#include "shmem_bench.hpp"

#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <thread>

#include "../tests/netns/join.hpp"
#include "../tests/netns/uid_init.hpp"
#include "mpi_cli.hpp"

namespace mori::bench {

// "64K" -> 65536; suffixes K, M, G (powers of 1024).
size_t parse_size(const std::string& text) {
  size_t pos = 0;
  const size_t n = std::stoull(text, &pos);
  const std::string suffix = text.substr(pos);
  if (suffix.empty()) return n;
  if (suffix.size() == 1) {
    switch (suffix[0]) {
      case 'K':
      case 'k':
        return n << 10;
      case 'M':
      case 'm':
        return n << 20;
      case 'G':
      case 'g':
        return n << 30;
    }
  }
  throw CLI::ValidationError("size", "\"" + text + "\": use a number with an optional K, M or G");
}

// Every PE reaches this point; waiting PEs sleep rather than spin, so that on a machine with few
// cores they do not take a core from the PE being timed (or from its software NIC).
void rendezvous() {
  MPI_Request request;
  MPI_Ibarrier(MPI_COMM_WORLD, &request);
  for (int done = 0;;) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done) return;
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

// Pins the calling lane to the n-th CPU (mod the CPUs this process may use). With --bind-to none
// the scheduler may otherwise put both PEs' spinning lanes on one core, where every hand-over of a
// ping-pong costs a context switch (microseconds instead of 100 ns), run to run at random. The
// software NIC's thread is not pinned: it takes whatever core is free.
void pin_lane(unsigned n) {
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return;
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
  if (cpus.empty()) return;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpus[n % cpus.size()], &one);
  pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
}

Stats stats_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v.front(), v.back()};
}

namespace {

unsigned lanes_per_block(const Options& opt) {
  if (opt.block) return opt.block;
  return opt.scope == "thread" ? 1 : 64;
}

int units_of(const Options& opt, unsigned block) {
  const int warps = static_cast<int>((block + platform::kMaxWarpSize - 1) / platform::kMaxWarpSize);
  if (opt.scope == "thread") return static_cast<int>(opt.grid * block);
  if (opt.scope == "warp") return static_cast<int>(opt.grid) * warps;
  return static_cast<int>(opt.grid);
}

unsigned char pattern(int pe, size_t i) { return static_cast<unsigned char>(i * 7 + pe * 13 + 1); }

// The figure of one repetition from every PE's seconds (rank 0 only).
double figure_of(const Spec& spec, const Run& run, const std::vector<double>& seconds,
                 double* mops) {
  if (spec.figure == Figure::kLatency) return 1e6 * seconds[0] / run.iters;
  if (spec.figure == Figure::kHalfTrip) return 1e6 * seconds[0] / (2.0 * run.iters);
  double slowest = 0;
  int active = 0;
  for (int pe = 0; pe < run.npes; ++pe)
    if (run.active(pe)) slowest = std::max(slowest, seconds[pe]), ++active;
  const double messages = static_cast<double>(run.units) * run.iters;
  *mops = messages / slowest / 1e6;
  return active * messages * run.size / slowest / 1e9;
}

}  // namespace

double timed_launch(const Run& run, const LaneMain& lane_main) {
  const unsigned lanes = run.opt->grid * run.block;
  std::vector<uint64_t> start(lanes), end(lanes);
  std::atomic<int> arrived{0};
  auto status = host::launch({run.opt->grid}, {run.block}, [&] {
    if (run.opt->pin)
      pin_lane(run.me + platform::block_idx().x * run.block + platform::thread_rank());
    lane_main(&arrived, start.data(), end.data());
  });
  if (!status.ok()) throw std::runtime_error(status.message());
  return 1e-9 * static_cast<double>(*std::max_element(end.begin(), end.end()) -
                                    *std::min_element(start.begin(), start.end()));
}

namespace {

// Whether this PE and its partner are on different nodes: their hostnames differ (mori's own test
// of a node also compares boot_id, which every network namespace shares).
bool partner_elsewhere(int me, int peer) {
  char host[65] = {};
  gethostname(host, sizeof(host) - 1);
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  std::vector<char> all(65 * static_cast<size_t>(n));
  MPI_Allgather(host, 65, MPI_CHAR, all.data(), 65, MPI_CHAR, MPI_COMM_WORLD);
  return std::strcmp(&all[65 * me], &all[65 * peer]) != 0;
}

}  // namespace

int run_main(int argc, char** argv, const Spec& spec, const Measure& measure) {
  MPI_Init(&argc, &argv);
  // Nodes as network namespaces (MORI_TEST_NETNS, tests/netns/join.hpp), as the MPI tests: with
  // MORI_TEST_PES_PER_NODE=1 the pair 0-1 is two nodes, and its software NICs talk RoCEv2.
  {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    std::string why;
    if (!netns::join(rank, &why)) {
      std::fprintf(stderr, "%s: rank %d: %s\n", spec.name, rank, why.c_str());
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  Options opt;
  std::string b = "8", e = "1M";
  CLI::App app{std::string(spec.name) + ": mori shmem benchmark (mpirun -np 2)"};
  app.add_option("-b,--min-size", b, "smallest message, bytes (suffix K, M, G)");
  app.add_option("-e,--max-size", e, "largest message, bytes (suffix K, M, G)");
  app.add_option("-f,--factor", opt.factor, "size step factor")->check(CLI::Range(1.01, 1e6));
  app.add_option("--iters", opt.iters, "timed iterations per repetition")
      ->check(CLI::PositiveNumber);
  app.add_option("--warmup", opt.warmup, "untimed iterations before them")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--reps", opt.reps, "repetitions; the median is reported")
      ->check(CLI::PositiveNumber);
  app.add_option("--scope", opt.scope, "thread, warp or block")
      ->check(CLI::IsMember({"thread", "warp", "block"}));
  app.add_option("--grid", opt.grid, "blocks per launch")->check(CLI::Range(1, 64));
  app.add_option("--block", opt.block, "lanes per block (default: 1 for thread, 64 otherwise)")
      ->check(CLI::Range(1, 1024));
  app.add_option("--qps", opt.qps, "MORI_NUM_QP_PER_PE; unit i uses QP i mod qps")
      ->check(CLI::Range(1, 64));
  app.add_option("--transport", opt.transport, "p2p, or rdma (the software NIC on the host)")
      ->check(CLI::IsMember({"p2p", "rdma"}));
  app.add_option("--provider", opt.provider, "NIC family for rdma")
      ->check(CLI::IsMember({"mlx5", "bnxt", "ionic"}));
  app.add_flag("--bidir", opt.bidir, "both PEs send at once (bandwidth)");
  app.add_flag("--json", opt.json, "one JSON object per line");
  app.add_flag("!--no-pin", opt.pin, "leave lanes unpinned (default: lane i of PE p on CPU p + i)");
  if (spec.memcpy_ref)
    app.add_flag("--memcpy", opt.memcpy_ref, "also time memcpy through the peer's P2P mapping");
  if (const auto rc = bench::parse_mpi_cli(app, argc, argv, [&] {
        opt.min_size = spec.fixed_size ? spec.fixed_size : parse_size(b);
        opt.max_size = spec.fixed_size ? spec.fixed_size : parse_size(e);
        if (opt.min_size == 0 || opt.max_size < opt.min_size)
          throw CLI::ValidationError("sizes", "need 0 < -b <= -e");
        if (opt.memcpy_ref && opt.transport != "p2p")
          throw CLI::ValidationError("--memcpy", "needs --transport p2p (the peer's mapping)");
      }))
    return *rc;

  // What init reads. An explicit environment wins over the defaults, not over the options.
  const unsigned block = lanes_per_block(opt);
  const int units = units_of(opt, block);
  if (opt.transport == "rdma") {
    setenv("MORI_DISABLE_P2P", "1", 1);
    setenv("MORI_DEVICE_NIC", opt.provider.c_str(), 1);
  } else {
    setenv("MORI_DISABLE_P2P", "0", 1);
  }
  if (opt.qps) setenv("MORI_NUM_QP_PER_PE", std::to_string(opt.qps).c_str(), 1);
  const size_t heap = ((2 * units * opt.max_size + 64 * units) >> 20) + 64;
  setenv("MORI_SHMEM_HEAP_SIZE", (std::to_string(heap) + "M").c_str(), 0);
  if (netns::init_in_node() != 0) {
    std::fprintf(stderr, "%s: init failed: %s\n", spec.name, shmem::last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }

  if (shmem::n_pes() % 2 != 0) {
    std::fprintf(stderr, "%s: needs an even number of PEs (pairs 0-1, 2-3, ...)\n", spec.name);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  Run run{};
  run.opt = &opt;
  run.me = shmem::my_pe(), run.npes = shmem::n_pes();
  run.peer = run.me ^ 1;  // PEs work in pairs: 0 with 1, 2 with 3, ...
  const bool between_nodes = partner_elsewhere(run.me, run.peer);
  run.block = block, run.units = units, run.qps = shmem::num_qp_per_pe();
  const size_t slots = units * opt.max_size;
  run.src = static_cast<char*>(shmem::malloc(slots));
  run.dst = static_cast<char*>(shmem::malloc(slots));
  run.flags = static_cast<uint64_t*>(shmem::malloc(64 * units));
  if (!run.src || !run.dst || !run.flags) {
    std::fprintf(stderr, "%s: malloc failed: %s\n", spec.name, shmem::last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  auto mapped = [&](char* p) {
    return reinterpret_cast<char*>(shmem::ptr_p2p(reinterpret_cast<uint64_t>(p), run.me, run.peer));
  };
  run.peer_src = mapped(run.src), run.peer_dst = mapped(run.dst);
  for (size_t i = 0; i < slots; ++i) run.src[i] = static_cast<char>(pattern(run.me, i));
  std::memset(run.dst, 0, slots);

  if (run.me == 0 && !opt.json) {
    std::printf(
        "# %s: %d PEs%s, %s%s, %s scope, grid %u x block %u (%d units), %d QPs, %d reps: "
        "median (min - max)\n",
        spec.name, run.npes, between_nodes ? " (PE 0 and PE 1 on two nodes)" : "",
        opt.transport.c_str(), opt.transport == "rdma" ? (" " + opt.provider).c_str() : "",
        opt.scope.c_str(), opt.grid, block, units, run.qps, opt.reps);
    const bool bw = spec.figure == Figure::kBandwidth;
    std::printf("%12s %8s %8s %12s %22s%s\n", "size(B)", "scope", "iters",
                bw ? "BW GB/s" : "lat us", "min - max", bw ? "       Mops/PE" : "");
  }
  int status = 0;
  for (size_t size = opt.min_size; size <= opt.max_size;) {
    run.size = size;
    // Large messages need fewer iterations for a stable figure: at most 256 MiB per unit and rep.
    run.iters = static_cast<int>(
        std::max<size_t>(4, std::min<size_t>(opt.iters, (size_t{256} << 20) / size)));
    run.warmup = std::min(opt.warmup, run.iters);
    std::vector<double> figures[2], mops[2];  // [0]: the library, [1]: memcpy
    for (int r = 0; r < opt.reps; ++r) {
      for (int ref = 0; ref <= (opt.memcpy_ref ? 1 : 0); ++ref) {
        run.memcpy_ref = ref == 1;
        std::memset(run.flags, 0, 64 * units);
        rendezvous();
        double seconds = 0;
        try {
          seconds = measure(run);
        } catch (const std::exception& ex) {
          std::fprintf(stderr, "%s: PE %d: %s\n", spec.name, run.me, ex.what());
          MPI_Abort(MPI_COMM_WORLD, 1);
        }
        std::vector<double> all(run.npes);
        MPI_Gather(&seconds, 1, MPI_DOUBLE, all.data(), 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        double m = 0;
        if (run.me == 0)
          figures[ref].push_back(figure_of(spec, run, all, &m)), mops[ref].push_back(m);
      }
    }
    rendezvous();
    const bool check = (spec.moves == Moves::kPut && run.active(run.peer)) ||
                       (spec.moves == Moves::kGet && run.active(run.me));
    // Unit u's slot is at u * size in both src and dst, so dst byte i is the peer's src byte i.
    for (size_t i = 0; check && i < units * size; ++i) {
      if (static_cast<unsigned char>(run.dst[i]) != pattern(run.peer, i)) {
        std::fprintf(stderr, "%s: PE %d: size %zu: byte %zu is %u, expected %u\n", spec.name,
                     run.me, size, i, static_cast<unsigned char>(run.dst[i]), pattern(run.peer, i));
        status = 1;
        break;
      }
    }
    for (int ref = 0; run.me == 0 && ref <= (opt.memcpy_ref ? 1 : 0); ++ref) {
      const Stats s = stats_of(figures[ref]);
      const Stats rate = stats_of(mops[ref]);
      const bool bw = spec.figure == Figure::kBandwidth;
      const std::string name = ref ? "memcpy" : spec.name;
      if (opt.json) {
        nlohmann::json row{{"bench", name},
                           {"transport", opt.transport},
                           {"provider", opt.transport == "rdma" ? opt.provider : "none"},
                           {"scope", opt.scope},
                           {"size", size},
                           {"iters", run.iters},
                           {"lat_us", bw ? 1e6 * size / (s.median * 1e9) : s.median},
                           {"gbps", bw ? s.median : size / (s.median * 1e3)},
                           {"min", s.min},
                           {"max", s.max},
                           {"reps", opt.reps},
                           {"grid", opt.grid},
                           {"block", block},
                           {"qps", run.qps},
                           {"bidir", opt.bidir}};
        if (bw) row["mops"] = rate.median;
        if (between_nodes) row["between_nodes"] = true;
        std::printf("%s\n", row.dump().c_str());
      } else {
        std::printf(
            bw ? "%12zu %8s %8d %12.3f %10.3f - %-10.3f" : "%12zu %8s %8d %12.4f %10.4f - %-10.4f",
            size, ref ? "memcpy" : opt.scope.c_str(), run.iters, s.median, s.min, s.max);
        if (bw) std::printf(" %12.3f", rate.median);
        std::printf("\n");
      }
      std::fflush(stdout);
    }
    const size_t next = static_cast<size_t>(size * opt.factor);
    size = next > size ? next : size + 1;
  }
  rendezvous();
  shmem::free(run.flags);
  shmem::free(run.dst);
  shmem::free(run.src);
  shmem::finalize();
  MPI_Finalize();
  return status;
}

}  // namespace mori::bench
