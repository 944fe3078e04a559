// coll_bench: latency and bandwidth of the device collectives (mori/shmem/collectives.hpp) on the
// world team, every PE running the same loop:
//
//   mpirun -np 4 build/bench/coll_bench -b 8 -e 16M -f 8 --memcpy
//   mpirun -np 2 build/bench/coll_bench --coll fcollect,reduce --json
//
// `size` is the bytes of one member's block: broadcast's message, fcollect's, collect's and
// alltoall's block per member, reduce's array (float, summed) and reducescatter's block of the
// result. Each repetition is one launch per PE in which one scope instance runs the warmup calls,
// then times --iters calls; the repetition's figure is the slowest PE's time per call, and the
// median over repetitions is reported with the fastest and slowest. Bandwidth is the collective's
// volume (volume_of below) per call.
// --memcpy also times std::memcpy of that volume between two local buffers in the same program,
// repetition by repetition: the bound for moving that volume on one CPU.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "mori/host/launch.hpp"
#include "mori/shmem.hpp"
#include "mori/shmem/device_api.hpp"
#include "mpi_cli.hpp"
#include "shmem_bench.hpp"

namespace shmem = mori::shmem;
namespace bench = mori::bench;
using mori::Scope;

namespace {

// The collectives, in the order of their names in kColls.
enum class Coll { kBroadcast, kFcollect, kCollect, kAlltoall, kReduce, kReducescatter };
const std::vector<std::string> kColls = {"broadcast", "fcollect", "collect",
                                         "alltoall",  "reduce",   "reducescatter"};

// A call's data volume per PE, whose memcpy is the bound the bandwidth is held to: the bytes it
// writes into each PE's dest (fcollect, collect and alltoall: a block from every member, this PE's
// own included, since the call copies that one too), except reducescatter's, which is the array it
// reduces: a block for every member. nccl-tests counts a reduce-scatter the same way (its size and
// algorithm bandwidth are nranks times the received count: ReduceScatterGetCollByteCount in
// src/reduce_scatter.cu, doc/PERFORMANCE.md); a block per PE would hold a call that must read
// `npes` blocks per block it writes to a copy of one.
size_t volume_of(const std::string& coll, size_t size, int npes) {
  if (coll == "broadcast" || coll == "reduce") return size;
  return size * npes;
}

struct Buffers {
  char* src;  // symmetric, npes * max_size (alltoall's and reducescatter's blocks)
  char* dst;  // symmetric, npes * max_size (fcollect's, collect's, alltoall's result)
  std::vector<char> copy_from, copy_to;  // --memcpy's, local
};

// One call of `coll` (looked up by name once before the timed loop, so that the loop compares no
// strings) at `size` bytes per block, in scope S, on the world.
template <typename S>
MORI_DEVICE void call(Coll coll, const Buffers& b, size_t size) {
  const shmem::Team w = shmem::kTeamWorld;
  auto* fsrc = reinterpret_cast<float*>(b.src);
  auto* fdst = reinterpret_cast<float*>(b.dst);
  switch (coll) {
    case Coll::kBroadcast:
      return shmem::broadcastmem<S>(w, b.dst, b.src, size, 0);
    case Coll::kFcollect:
      return shmem::fcollectmem<S>(w, b.dst, b.src, size);
    case Coll::kCollect:
      return shmem::collectmem<S>(w, b.dst, b.src, size);
    case Coll::kAlltoall:
      return shmem::alltoallmem<S>(w, b.dst, b.src, size);
    case Coll::kReduce:
      return shmem::sum_reduce<S>(w, fdst, fsrc, size / sizeof(float));
    case Coll::kReducescatter:
      return shmem::sum_reducescatter<S>(w, fdst, fsrc, size / sizeof(float));
  }
}

// This PE's seconds for `iters` calls after `warmup` untimed ones (or memcpys of `volume`).
template <typename S>
double timed(const std::string& coll, Buffers& b, size_t size, size_t volume, int iters, int warmup,
             bool memcpy_ref, unsigned lanes, bool pin) {
  const Coll which =
      static_cast<Coll>(std::find(kColls.begin(), kColls.end(), coll) - kColls.begin());
  uint64_t start = 0, end = 0;
  auto status = mori::host::launch({1}, {lanes}, [&] {
    if (pin) bench::pin_lane(shmem::my_pe() * lanes + mori::platform::thread_rank());
    auto one = [&] {
      if (memcpy_ref) {
        if (S::leader()) std::memcpy(b.copy_to.data(), b.copy_from.data(), volume);
      } else {
        call<S>(which, b, size);
      }
    };
    for (int i = 0; i < warmup; ++i) one();
    if (!memcpy_ref) shmem::team_sync<S>(shmem::kTeamWorld);  // start together
    if (S::leader()) start = mori::platform::clock_ns();
    for (int i = 0; i < iters; ++i) one();
    if (S::leader()) end = mori::platform::clock_ns();
  });
  if (!status.ok()) throw std::runtime_error(status.message());
  return 1e-9 * static_cast<double>(end - start);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  std::string b = "8", e = "16M", scope = "thread", colls = "all";
  double factor = 8;
  int iters = 1000, warmup = 20, reps = 5;
  bool json = false, memcpy_ref = false, pin = true;
  CLI::App app{"coll_bench: mori device collectives on the world team (mpirun -np 2 or 4)"};
  app.add_option("-b,--min-size", b, "smallest block, bytes (suffix K, M, G), a multiple of 8");
  app.add_option("-e,--max-size", e, "largest block, bytes");
  app.add_option("-f,--factor", factor, "size step factor")->check(CLI::Range(1.01, 1e6));
  app.add_option("--iters", iters, "timed calls per repetition (fewer for large sizes)")
      ->check(CLI::PositiveNumber);
  app.add_option("--warmup", warmup, "untimed calls before them")->check(CLI::NonNegativeNumber);
  app.add_option("--reps", reps, "repetitions; the median is reported")->check(CLI::PositiveNumber);
  app.add_option("--scope", scope, "thread, warp or block")
      ->check(CLI::IsMember({"thread", "warp", "block"}));
  app.add_option("--coll", colls, "comma-separated collectives, or all");
  app.add_flag("--json", json, "one JSON object per line");
  app.add_flag("--memcpy", memcpy_ref, "also time memcpy of each call's volume");
  app.add_flag("!--no-pin", pin, "leave lanes unpinned");
  size_t min_size = 0, max_size = 0;
  std::vector<std::string> chosen;
  if (const auto rc = bench::parse_mpi_cli(app, argc, argv, [&] {
        min_size = bench::parse_size(b), max_size = bench::parse_size(e);
        if (min_size == 0 || min_size % 8 || max_size < min_size)
          throw CLI::ValidationError("sizes", "need 0 < -b <= -e, -b a multiple of 8");
        std::stringstream list(colls == "all" ? "" : colls);
        for (std::string c; std::getline(list, c, ',');) {
          if (std::find(kColls.begin(), kColls.end(), c) == kColls.end())
            throw CLI::ValidationError("--coll", "\"" + c + "\" is not a collective of this bench");
          chosen.push_back(c);
        }
        if (chosen.empty()) chosen = kColls;
      }))
    return *rc;
  int npes = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &npes);
  setenv("MORI_SHMEM_HEAP_SIZE", (std::to_string((2 * npes * max_size >> 20) + 64) + "M").c_str(),
         0);
  if (shmem::init() != 0) {
    std::fprintf(stderr, "coll_bench: init failed: %s\n", shmem::last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  const int me = shmem::my_pe();
  Buffers buf{static_cast<char*>(shmem::malloc(npes * max_size)),
              static_cast<char*>(shmem::malloc(npes * max_size)),
              {},
              {}};
  if (!buf.src || !buf.dst) {
    std::fprintf(stderr, "coll_bench: malloc failed: %s\n", shmem::last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  std::memset(buf.src, 1, npes * max_size);
  if (memcpy_ref) buf.copy_from.assign(npes * max_size, 1), buf.copy_to.assign(npes * max_size, 0);
  const unsigned lanes = scope == "thread" ? 1 : 64;
  if (me == 0 && !json)
    std::printf(
        "# coll_bench: %d PEs, %s scope, %d reps: median (min - max), volume per PE\n%14s "
        "%10s %8s %24s %10s%s\n",
        npes, scope.c_str(), reps, "collective", "size(B)", "iters", "lat us (min - max)", "GB/s",
        memcpy_ref ? "  memcpy GB/s  ratio" : "");
  for (const std::string& coll : chosen) {
    for (size_t size = min_size; size <= max_size;) {
      const size_t volume = volume_of(coll, size, npes);
      const int n = static_cast<int>(std::clamp<size_t>((size_t{256} << 20) / volume, 3, iters));
      std::vector<double> lib, ref;
      for (int r = 0; r < reps; ++r) {
        for (int m = 0; m <= (memcpy_ref ? 1 : 0); ++m) {
          bench::rendezvous();
          double s = bench::with_scope(scope, [&]<typename S>() {
            return timed<S>(coll, buf, size, volume, n, std::min(warmup, n), m == 1, lanes, pin);
          });
          MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
          (m ? ref : lib).push_back(1e6 * s / n);
        }
      }
      const bench::Stats l = bench::stats_of(lib);
      const double gbps = volume / (l.median * 1e3);
      if (me == 0) {
        const bench::Stats c = memcpy_ref ? bench::stats_of(ref) : bench::Stats{0, 0, 0};
        if (json) {
          nlohmann::json row = {{"bench", "coll_bench"}, {"coll", coll},   {"lib", "mori"},
                                {"npes", npes},          {"scope", scope}, {"size", size},
                                {"volume", volume},      {"iters", n},     {"lat_us", l.median},
                                {"min", l.min},          {"max", l.max},   {"gbps", gbps},
                                {"reps", reps}};
          if (memcpy_ref) row["memcpy_us"] = c.median;
          std::printf("%s\n", row.dump().c_str());
        } else {
          std::printf("%14s %10zu %8d %10.2f (%.2f - %.2f) %10.2f", coll.c_str(), size, n, l.median,
                      l.min, l.max, gbps);
          if (memcpy_ref)
            std::printf("  %11.2f  %5.2f", volume / (c.median * 1e3), c.median / l.median);
          std::printf("\n");
        }
        std::fflush(stdout);
      }
      const size_t next = static_cast<size_t>(size * factor) / 8 * 8;
      size = next > size ? next : size + 8;
    }
  }
  shmem::free(buf.dst);
  shmem::free(buf.src);
  shmem::finalize();
  MPI_Finalize();
  return 0;
}
