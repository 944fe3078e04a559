// runtime_bench: how long init and finalize take, and how many symmetric malloc/free pairs per
// second the heap serves, across all PEs (the slowest PE's time counts, as a collective's does).
//
//   mpirun -np 2 build/bench/runtime_bench            # table
//   mpirun -np 4 build/bench/runtime_bench --json
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "mori/shmem.hpp"
#include "mpi_cli.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The slowest rank's time: a collective is as fast as its last participant.
double slowest(double mine) {
  double all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return all;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

bool ok(int rc, const char* what) {
  if (rc == 0) return true;
  std::fprintf(stderr, "runtime_bench: %s failed: %s\n", what, mori::shmem::last_error());
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  CLI::App app{"init/finalize time and malloc/free throughput (host backend, under mpirun)"};
  int reps = 5, pairs = 2000;
  std::string heap = "256M";
  bool json = false;
  app.add_option("--reps", reps, "init/finalize repetitions (medians are reported)");
  app.add_option("--pairs", pairs, "malloc/free pairs per measurement");
  app.add_option("--heap", heap, "MORI_SHMEM_HEAP_SIZE");
  app.add_flag("--json", json, "one JSON object per line");
  if (const auto rc = mori::bench::parse_mpi_cli(app, argc, argv)) return *rc;
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  setenv("MORI_SHMEM_HEAP_SIZE", heap.c_str(), 1);

  std::vector<nlohmann::json> rows;
  for (const char* mode : {"static_heap", "vmm_heap"}) {
    setenv("MORI_SHMEM_MODE", mode, 1);
    std::vector<double> init_s, fin_s;
    for (int r = 0; r < reps; ++r) {
      MPI_Barrier(MPI_COMM_WORLD);
      auto t0 = Clock::now();
      if (!ok(mori::shmem::init(), "init")) MPI_Abort(MPI_COMM_WORLD, 1);
      init_s.push_back(slowest(seconds_since(t0)));
      MPI_Barrier(MPI_COMM_WORLD);
      t0 = Clock::now();
      if (!ok(mori::shmem::finalize(), "finalize")) MPI_Abort(MPI_COMM_WORLD, 1);
      fin_s.push_back(slowest(seconds_since(t0)));
    }
    rows.push_back(
        {{"bench", "init"}, {"mode", mode}, {"pes", size}, {"ms", 1e3 * median(init_s)}});
    rows.push_back(
        {{"bench", "finalize"}, {"mode", mode}, {"pes", size}, {"ms", 1e3 * median(fin_s)}});

    for (const char* check : {"0", "1"}) {
      setenv("MORI_SHMEM_CHECK_SYMMETRY", check, 1);
      if (!ok(mori::shmem::init(), "init")) MPI_Abort(MPI_COMM_WORLD, 1);
      for (size_t bytes : {size_t{256}, size_t{1} << 20}) {
        MPI_Barrier(MPI_COMM_WORLD);
        const auto t0 = Clock::now();
        for (int i = 0; i < pairs; ++i) {
          void* p = mori::shmem::malloc(bytes);
          if (!p || mori::shmem::free(p) != 0) {
            std::fprintf(stderr, "runtime_bench: malloc/free failed: %s\n",
                         mori::shmem::last_error());
            MPI_Abort(MPI_COMM_WORLD, 1);
          }
        }
        const double s = slowest(seconds_since(t0));
        rows.push_back({{"bench", "malloc_free"},
                        {"mode", mode},
                        {"pes", size},
                        {"bytes", bytes},
                        {"check_symmetry", check[0] == '1'},
                        {"pairs_per_s", pairs / s},
                        {"us_per_pair", 1e6 * s / pairs}});
      }
      if (!ok(mori::shmem::finalize(), "finalize")) MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  if (rank == 0) {
    if (json) {
      for (const auto& r : rows) std::printf("%s\n", r.dump().c_str());
    } else {
      std::printf(
          "# runtime_bench: %d PEs, heap %s, medians of %d init/finalize, %d malloc/free pairs\n",
          size, heap.c_str(), reps, pairs);
      std::printf("%-12s %-12s %-10s %-8s %14s\n", "what", "mode", "bytes", "check", "result");
      for (const auto& r : rows) {
        if (r["bench"] == "malloc_free") {
          std::printf("%-12s %-12s %-10zu %-8s %10.0f /s (%.1f us)\n", "malloc+free",
                      r["mode"].get<std::string>().c_str(), r["bytes"].get<size_t>(),
                      r["check_symmetry"].get<bool>() ? "on" : "off",
                      r["pairs_per_s"].get<double>(), r["us_per_pair"].get<double>());
        } else {
          std::printf("%-12s %-12s %-10s %-8s %11.2f ms\n", r["bench"].get<std::string>().c_str(),
                      r["mode"].get<std::string>().c_str(), "", "", r["ms"].get<double>());
        }
      }
    }
  }
  MPI_Finalize();
  return 0;
}
