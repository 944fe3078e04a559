// moe_bench: MoE expert-parallel dispatch and combine (examples/moe) timed on mori's device API,
// beside the same exchange written with MPI (moe_mpi.hpp) and a memcpy of the same bytes, in one
// run:
//
//   mpirun -np 2 build/bench/moe_bench                       # 128..8192 tokens, both modes
//   mpirun -np 2 build/bench/moe_bench -b 4096 -e 4096 --mode normal --fp8 --json
//
// For each mode and token count (tokens per PE, powers of 2) every PE makes its tokens and uniform
// top-k routing (moe::make_inputs), allocates a moe::Moe for that count, and runs --reps
// repetitions, each of them in turn: mori, MPI, memcpy.
//   mori    one launch of --warmup then --iters iterations, each three phases
//             meet | [Quantize, grid_sync] dispatch, grid_sync | meet | expert, grid_sync |
//             meet | combine, grid_sync |
//           where "meet" is barrier_all by one thread and a grid_sync: every lane of every PE
//           starts the phase together. clock_ns() is taken by thread 0 of block 0 at each "|",
//           so a phase's time is its own: neither host thread creation nor a PE's wait for
//           another PE still in the phase before (the stand-in expert's time differs by PE by up
//           to 2%, which is up to 9 ms at 4096 tokens) is counted. The epoch goes up by one each
//           iteration.
//   MPI     the same phases as moe_mpi.hpp writes them, each after an MPI_Barrier, MPI_Wtime
//           around each phase after its barrier.
//   memcpy  a memcpy of each phase's bytes between two local buffers on each PE at once.
// A repetition's figure per phase is the slowest PE's mean per iteration; the table shows the
// median over the repetitions (the JSON adds the fastest and slowest), and the median over the
// repetitions of mori's time over MPI's in the same repetition. After the repetitions both
// implementations' outputs of their last iteration must equal the host reference
// (moe::check_out, moe::expected_out), or the program exits 1 with the first difference.
//
// Bytes (GB/s = 10^9 bytes/s): the payload bytes a PE sends in the phase, the mean over PEs.
// Dispatch sends a token's payload (hidden x 2 bytes in bf16, hidden in fp8) once per destination
// PE it is routed to in normal mode, this PE included (the put to itself is a copy as any other),
// and once per routed expert in low latency; combine returns one bf16 row (hidden x 2 bytes) for
// each of those it received (over P2P the token's PE loads it where the expert wrote it). Metadata
// (top-k ids, weights, fp8 scales, counts) are not counted.
//
// Low latency (--mode ll) runs up to --ll-max-tokens (1024): it is the mode for small batches
// (DeepEP uses its low-latency kernels for decoding, at up to a few hundred tokens per rank), and
// its receive buffers hold every expert's worst case, experts x PEs x capacity records, and as many
// rows twice over for the combine: at 1024 tokens, hidden 4096 and 8 experts per PE that is 400 MiB
// per PE of the symmetric heap, where normal mode at 8192 tokens needs 550 MiB.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "checks.hpp"
#include "moe_mpi.hpp"
#include "mpi_cli.hpp"
#include "shmem_bench.hpp"

namespace shmem = mori::shmem;
namespace platform = mori::platform;
namespace bench = mori::bench;

namespace {

struct Options {
  int min_tokens = 128, max_tokens = 8192, ll_max_tokens = 1024;
  int hidden = 4096, experts = 8, topk = 8;
  bool fp8 = false, json = false, pin = false;
  std::string mode = "both";
  int iters = 20, warmup = 3, reps = 5;
  // One lane per PE: with 2 PEs on 2 cores every lane more waits in futex barriers for a core
  // (docs/benchmarks.md, "MoE dispatch and combine"); --blocks 0 is one block per PE.
  moe::Launch launch{1, 1, 1};
};

enum Phase { kDispatch, kExpert, kCombine, kPhases };
const char* const kPhaseNames[kPhases] = {"dispatch", "expert", "combine"};

using Times = std::array<double, kPhases>;  // seconds per iteration

// The timed launch's body: every lane runs every phase; thread 0 of block 0 adds each phase's
// nanoseconds to `ns` over the timed iterations.
struct TimedLoop {
  moe::Buffers b;
  moe::Shape s;
  bool ll;
  uint32_t epoch;  // of the first warmup iteration
  int warmup, iters;
  bool pin;
  uint64_t* ns;

  // Every lane of every PE starts the next phase together; returns the clock on thread 0 of
  // block 0 when `clock`.
  MORI_DEVICE uint64_t meet(bool clock) const {
    if (platform::block_rank() == 0 && platform::thread_rank() == 0) shmem::barrier_all();
    moe::grid_sync(b.grid);
    return clock ? platform::clock_ns() : 0;
  }

  // One iteration; adds each phase's nanoseconds to ns[] (thread 0 of block 0, when ns is set).
  MORI_DEVICE void iteration(uint32_t e, uint64_t* ns) const {
    const bool clock = ns && platform::block_rank() == 0 && platform::thread_rank() == 0;
    uint64_t t = meet(clock);
    if (ll) {
      moe::LlDispatch{b, s, e}();
    } else {
      if (s.format == moe::Format::kFp8) moe::Quantize{b, s}(), moe::grid_sync(b.grid);
      moe::NormalDispatch{b, s, e}();
    }
    moe::grid_sync(b.grid);
    if (clock) ns[kDispatch] += platform::clock_ns() - t;
    t = meet(clock);
    ll ? moe::LlExpert{b, s}() : moe::NormalExpert{b, s}();
    moe::grid_sync(b.grid);
    if (clock) ns[kExpert] += platform::clock_ns() - t;
    t = meet(clock);
    ll ? moe::LlCombine{b, s, e}() : moe::NormalCombine{b, s, e}();
    moe::grid_sync(b.grid);
    if (clock) ns[kCombine] += platform::clock_ns() - t;
  }

  MORI_DEVICE void operator()() const {
    if (pin)
      bench::pin_lane(unsigned(s.me * platform::grid_blocks() * platform::block_threads() +
                               platform::block_rank() * platform::block_threads() +
                               platform::thread_rank()));
    for (int i = 0; i < warmup; ++i) iteration(epoch + i, nullptr);
    for (int i = 0; i < iters; ++i) iteration(epoch + warmup + i, ns);
  }
};

// A phase's figures: the repetitions' per-iteration seconds (slowest PE) of mori, MPI and memcpy.
struct Samples {
  std::vector<double> mori, mpi, copy;
};

// The slowest PE's seconds for each phase.
Times slowest(Times t) {
  MPI_Allreduce(MPI_IN_PLACE, t.data(), kPhases, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return t;
}

// Payload bytes this PE's dispatch sends (moe_bench's definition, above): sizes --iters.
size_t dispatch_bytes(const moe::Shape& s, const moe::Inputs& in, bool ll) {
  size_t units = 0;
  for (int t = 0; t < in.tokens; ++t)
    if (ll)
      units += size_t(s.topk);
    else
      for (int d = 0; d < s.npes; ++d) units += moe::routed(s, in, t, d);
  return units * s.payload_bytes();
}

// The symmetric heap a moe::Moe of this shape takes (Moe::allocate's buffers), with room to spare.
size_t heap_bytes(const moe::Shape& s, bool ll) {
  const size_t n = size_t(s.npes), cap = size_t(s.capacity), H = size_t(s.hidden);
  const size_t k = size_t(s.topk), E = size_t(s.experts), pb = s.payload_bytes();
  size_t b = cap * (2 * H + k * 8 + H + 4 + 2 * H) + (size_t(moe::kMaxWarps) << 8);
  if (ll)
    b += cap * s.record_bytes() * (1 + E * n) + cap * k * 4 + 2 * E * n * cap * H * 2;
  else
    b += n * cap * (pb + 4 + k * 8 + 2 * H * 2 + 4) + n * (moe::kMaxThreads + 1) * 4;
  return b + b / 16 + (size_t{64} << 20);
}

struct Case {
  bool ll;
  int tokens;
};

class Bench {
 public:
  Bench(const Options& o, int me, int npes) : o_(o), me_(me), npes_(npes) {}

  // One mode at one token count; false if a check failed (the message is printed).
  bool run(const Case& c) {
    moe::Shape s;
    s.tokens = s.capacity = c.tokens;
    s.hidden = o_.hidden, s.experts = o_.experts, s.topk = o_.topk;
    s.npes = npes_, s.me = me_;
    s.format = o_.fp8 ? moe::Format::kFp8 : moe::Format::kBf16;
    const moe::Inputs in = moe::make_inputs(s, me_, c.tokens, moe::Routing::kUniform, 1);
    moe::Moe m(s, c.ll ? moe::kLowLatency : moe::kNormal);
    if (!m.error().empty()) return fail(c, m.error());
    m.set_inputs(in);
    moe_bench::MpiMoe mpi(s, c.ll, in);

    // Enough iterations for a stable figure, at most 512 MiB dispatched per repetition.
    size_t sizing = dispatch_bytes(s, in, c.ll);
    MPI_Allreduce(MPI_IN_PLACE, &sizing, 1, MPI_UNSIGNED_LONG, MPI_MAX, MPI_COMM_WORLD);
    const int iters = int(std::clamp<size_t>((size_t{512} << 20) / sizing, 3, size_t(o_.iters)));

    std::array<Samples, kPhases> samples;
    uint32_t epoch = 1;
    size_t bytes[kPhases] = {0, 0, 0};
    for (int r = 0; r < o_.reps; ++r) {
      bench::rendezvous();
      if (r == o_.reps - 1) m.poison();  // the check below sees what the last repetition wrote
      bench::rendezvous();
      Times t{};
      if (std::string e = time_mori(m, c.ll, epoch, iters, &t); !e.empty()) return fail(c, e);
      epoch += uint32_t(o_.warmup + iters);
      t = slowest(t);
      for (int p = 0; p < kPhases; ++p) samples[p].mori.push_back(t[p]);

      t = slowest(time_mpi(mpi, iters));
      for (int p = 0; p < kPhases; ++p) samples[p].mpi.push_back(t[p]);
      bytes[kDispatch] = mpi.dispatched_bytes(), bytes[kCombine] = mpi.combined_bytes();

      bench::rendezvous();
      t = slowest(time_copy(bytes, iters));
      for (int p = 0; p < kPhases; ++p) samples[p].copy.push_back(t[p]);
    }
    bench::rendezvous();
    const std::vector<moe::bf16> want = moe::expected_out(s, in, c.ll);
    std::string bad = moe::check_out(m, in, c.ll);
    if (bad.empty())
      bad = moe::compare_rows(c.ll ? "MPI low-latency combine" : "MPI normal combine",
                              mpi.out().data(), want, s.hidden);
    int failed = !bad.empty();
    MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (!bad.empty()) return fail(c, bad, false);
    if (failed) return false;  // another PE said why
    for (int p = 0; p < kPhases; ++p) {
      double mean = double(bytes[p]) / npes_;
      MPI_Allreduce(MPI_IN_PLACE, &mean, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      if (me_ == 0) print(c, Phase(p), iters, mean, samples[p]);
    }
    return true;
  }

  void header() const {
    if (me_ != 0 || o_.json) return;
    std::printf(
        "# moe_bench: %d PEs, hidden %d, %d experts per PE, top-%d, %s, launch %d x %d lanes "
        "(warp %d), %d reps: median per iteration, slowest PE\n",
        npes_, o_.hidden, o_.experts, o_.topk, o_.fp8 ? "fp8" : "bf16",
        o_.launch.blocks > 0 ? o_.launch.blocks : npes_, o_.launch.threads, o_.launch.warp,
        o_.reps);
    std::printf("%-7s %7s %9s %6s %12s %12s %9s %12s %10s %10s %12s\n", "mode", "tokens", "phase",
                "iters", "mori us", "MPI us", "mori/MPI", "MB/PE", "mori GB/s", "MPI GB/s",
                "memcpy us");
  }

 private:
  std::string time_mori(moe::Moe& m, bool ll, uint32_t epoch, int iters, Times* t) {
    uint64_t ns[kPhases] = {0, 0, 0};
    const TimedLoop body{m.buffers(), m.shape(), ll, epoch, o_.warmup, iters, o_.pin, ns};
    const mori::Status st = m.launch(o_.launch, body);
    if (!st.ok()) return st.message();
    for (int p = 0; p < kPhases; ++p) (*t)[p] = 1e-9 * double(ns[p]) / iters;
    return "";
  }

  Times time_mpi(moe_bench::MpiMoe& mpi, int iters) {
    for (int i = 0; i < o_.warmup; ++i) mpi.dispatch(), mpi.expert(), mpi.combine();
    Times t{};
    auto timed = [](auto&& phase) {
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = MPI_Wtime();
      phase();
      return MPI_Wtime() - t0;
    };
    for (int i = 0; i < iters; ++i) {
      t[kDispatch] += timed([&] { mpi.dispatch(); });
      t[kExpert] += timed([&] { mpi.expert(); });
      t[kCombine] += timed([&] { mpi.combine(); });
    }
    for (double& x : t) x /= iters;
    return t;
  }

  Times time_copy(const size_t* bytes, int iters) {
    Times t{};
    copy_from_.resize(std::max({copy_from_.size(), bytes[kDispatch], bytes[kCombine]}), 1);
    copy_to_.resize(copy_from_.size());
    for (int p : {kDispatch, kCombine}) {
      std::memcpy(copy_to_.data(), copy_from_.data(), bytes[p]);  // warm
      const uint64_t t0 = platform::clock_ns();
      for (int i = 0; i < iters; ++i) std::memcpy(copy_to_.data(), copy_from_.data(), bytes[p]);
      t[p] = 1e-9 * double(platform::clock_ns() - t0) / iters;
    }
    return t;
  }

  // A check's failure: the caller's PEs all return. Any other (an allocation, a launch) leaves the
  // PEs out of step: abort.
  bool fail(const Case& c, const std::string& why, bool abort = true) const {
    std::fprintf(stderr, "moe_bench: PE %d: %s %d tokens: failed: %s\n", me_,
                 c.ll ? "low-latency" : "normal", c.tokens, why.c_str());
    if (abort) MPI_Abort(MPI_COMM_WORLD, 1);
    return false;
  }

  void print(const Case& c, Phase p, int iters, double bytes, const Samples& s) const {
    const bench::Stats mori = bench::stats_of(s.mori), mpi = bench::stats_of(s.mpi);
    const bench::Stats copy = bench::stats_of(s.copy);
    const bool moves = p != kExpert;
    // Within each repetition, then the median: on a shared machine whole repetitions run slower
    // or faster for both alike (bench/compare/compare_coll.py takes its ratios so too).
    std::vector<double> ratios;
    for (size_t r = 0; r < s.mori.size(); ++r) ratios.push_back(s.mori[r] / s.mpi[r]);
    const double ratio = bench::stats_of(ratios).median;
    const double gbps = bytes / mori.median / 1e9, mpi_gbps = bytes / mpi.median / 1e9;
    const char* mode = c.ll ? "ll" : "normal";
    if (o_.json) {
      nlohmann::json row = {{"bench", "moe_bench"},
                            {"mode", mode},
                            {"format", o_.fp8 ? "fp8" : "bf16"},
                            {"tokens", c.tokens},
                            {"hidden", o_.hidden},
                            {"experts", o_.experts},
                            {"topk", o_.topk},
                            {"npes", npes_},
                            {"phase", kPhaseNames[p]},
                            {"iters", iters},
                            {"reps", o_.reps},
                            {"mori_us", 1e6 * mori.median},
                            {"mori_min_us", 1e6 * mori.min},
                            {"mori_max_us", 1e6 * mori.max},
                            {"mpi_us", 1e6 * mpi.median},
                            {"mpi_min_us", 1e6 * mpi.min},
                            {"mpi_max_us", 1e6 * mpi.max},
                            {"ratio", ratio},
                            {"blocks", o_.launch.blocks > 0 ? o_.launch.blocks : npes_},
                            {"threads", o_.launch.threads},
                            {"warp", o_.launch.warp}};
      if (moves) {
        row["bytes"] = bytes;
        row["gbps"] = gbps;
        row["mpi_gbps"] = mpi_gbps;
        row["memcpy_us"] = 1e6 * copy.median;
      }
      std::printf("%s\n", row.dump().c_str());
    } else if (moves) {
      std::printf("%-7s %7d %9s %6d %12.1f %12.1f %9.2f %12.2f %10.2f %10.2f %12.1f\n", mode,
                  c.tokens, kPhaseNames[p], iters, 1e6 * mori.median, 1e6 * mpi.median, ratio,
                  bytes / 1e6, gbps, mpi_gbps, 1e6 * copy.median);
    } else {
      std::printf("%-7s %7d %9s %6d %12.1f %12.1f %9.2f %12s %10s %10s %12s\n", mode, c.tokens,
                  kPhaseNames[p], iters, 1e6 * mori.median, 1e6 * mpi.median, ratio, "-", "-", "-",
                  "-");
    }
    std::fflush(stdout);
  }

  const Options& o_;
  int me_, npes_;
  std::vector<char> copy_from_, copy_to_;
};

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  Options o;
  CLI::App app{"moe_bench: MoE dispatch and combine, mori against MPI (mpirun -np 2)"};
  app.add_option("-b,--min-tokens", o.min_tokens, "fewest tokens per PE (powers of 2 from it)")
      ->check(CLI::PositiveNumber);
  app.add_option("-e,--max-tokens", o.max_tokens, "most tokens per PE")->check(CLI::PositiveNumber);
  app.add_option("--ll-max-tokens", o.ll_max_tokens,
                 "most tokens per PE in low-latency mode (its buffers scale with experts x PEs)")
      ->check(CLI::PositiveNumber);
  app.add_option("--hidden", o.hidden, "values per token")->check(CLI::PositiveNumber);
  app.add_option("--experts", o.experts, "experts per PE")->check(CLI::PositiveNumber);
  app.add_option("--topk", o.topk, "experts per token")->check(CLI::Range(1, moe::kMaxTopk));
  app.add_flag("--fp8", o.fp8, "dispatch fp8 e4m3 payloads with a scale per token (else bf16)");
  app.add_option("--mode", o.mode, "normal, ll (low latency) or both")
      ->check(CLI::IsMember({"normal", "ll", "both"}));
  app.add_option("--iters", o.iters, "timed iterations per repetition (fewer for large sizes)")
      ->check(CLI::PositiveNumber);
  app.add_option("--warmup", o.warmup, "untimed iterations before them")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--reps", o.reps, "repetitions; the median is reported")
      ->check(CLI::PositiveNumber);
  app.add_option("--blocks", o.launch.blocks, "blocks per launch; 0: one per PE")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--threads", o.launch.threads, "lanes per block")->check(CLI::Range(1, 1024));
  app.add_option("--warp", o.launch.warp, "lanes per warp")->check(CLI::Range(1, 64));
  app.add_flag("--pin", o.pin, "pin lane i of PE p to CPU (p x lanes + i) mod CPUs");
  app.add_flag("--json", o.json, "one JSON object per line");
  if (const auto rc = bench::parse_mpi_cli(app, argc, argv, [&] {
        if (o.max_tokens < o.min_tokens) throw CLI::ValidationError("tokens", "need -b <= -e");
      }))
    return *rc;
  int npes = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &npes);
  std::vector<Case> cases;
  for (bool ll : {false, true}) {
    if ((ll && o.mode == "normal") || (!ll && o.mode == "ll")) continue;
    for (long t = o.min_tokens; t <= (ll ? std::min(o.max_tokens, o.ll_max_tokens) : o.max_tokens);
         t *= 2)
      cases.push_back({ll, int(t)});
  }
  moe::Shape big;
  big.hidden = o.hidden, big.experts = o.experts, big.topk = o.topk, big.npes = npes;
  big.format = o.fp8 ? moe::Format::kFp8 : moe::Format::kBf16;
  size_t heap = 0;
  for (const Case& c : cases) {
    big.capacity = c.tokens;
    heap = std::max(heap, heap_bytes(big, c.ll));
    if (std::string e = moe::routing_error(big, moe::Routing::kUniform); !e.empty()) {
      std::fprintf(stderr, "moe_bench: %s\n", e.c_str());
      MPI_Finalize();
      return 1;
    }
  }
  setenv("MORI_SHMEM_HEAP_SIZE", (std::to_string(heap >> 20) + "M").c_str(), 0);
  if (shmem::init() != 0) {
    std::fprintf(stderr, "moe_bench: init failed: %s\n", shmem::last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  Bench b(o, shmem::my_pe(), shmem::n_pes());
  b.header();
  int status = 0;
  for (const Case& c : cases)
    if (!b.run(c)) {
      status = 1;
      break;
    }
  shmem::finalize();
  MPI_Finalize();
  return status;
}
