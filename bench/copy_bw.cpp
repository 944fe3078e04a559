// copy_bw: bandwidth of copy<Scope> on the host backend against memcpy, measured in one interleaved
// run.
//
//   build/bench/copy_bw                 # 16 MiB, Thread / Warp / Block against memcpy
//   build/bench/copy_bw --bytes 1M --reps 21 --json
//
// Each repetition times memcpy and each scope back to back on the same buffers, so that the ratios
// share the machine's noise; the figures are medians over the repetitions, and the spread is the
// interquartile range.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "mori/core.hpp"
#include "mori/host/launch.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Series {
  std::string name;
  std::vector<double> gbps;
  double quantile(double q) const {
    std::vector<double> v = gbps;
    std::sort(v.begin(), v.end());
    return v[static_cast<size_t>(q * (v.size() - 1) + 0.5)];
  }
};

// Times one copy<S> inside the kernel, between two barriers, so that thread start-up is not
// counted. Each lane records when it started: with more lanes than cores the leader may be
// scheduled only after the others have copied, so the clock starts at the earliest lane's start,
// not the leader's.
template <typename S>
double time_scope_copy(const mori::host::LaunchConfig& cfg, char* dst, const char* src,
                       size_t bytes) {
  std::vector<Clock::time_point> starts(cfg.block.count());
  double seconds = 0;
  auto status = mori::host::launch(cfg, [&] {
    S::sync();
    starts[S::rank()] = Clock::now();
    mori::copy<S>(dst, src, bytes);
    S::sync();
    if (S::leader()) {
      const auto first = *std::min_element(starts.begin(), starts.begin() + S::size());
      seconds = std::chrono::duration<double>(Clock::now() - first).count();
    }
  });
  if (!status.ok()) throw std::runtime_error(status.message());
  return seconds;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"copy<Scope> bandwidth against memcpy (host backend)"};
  std::string size_text = "16M";
  int reps = 15, block = 64;
  bool json = false;
  app.add_option("--bytes", size_text, "bytes per copy (suffix K, M or G)");
  app.add_option("--reps", reps, "repetitions; figures are medians")->check(CLI::PositiveNumber);
  app.add_option("--block", block, "threads of the Block scope")->check(CLI::Range(1, 1024));
  app.add_flag("--json", json, "one JSON object per line instead of a table");
  CLI11_PARSE(app, argc, argv);

  size_t bytes = std::stoull(size_text);
  switch (size_text.back()) {
    case 'K':
    case 'k':
      bytes <<= 10;
      break;
    case 'M':
    case 'm':
      bytes <<= 20;
      break;
    case 'G':
    case 'g':
      bytes <<= 30;
      break;
    default:
      break;
  }
  std::vector<char> src(bytes + 64, 1), dst(bytes + 64, 0);
  char* s = src.data();
  char* d = dst.data();
  std::memset(d, 2, bytes);  // fault the pages in before timing

  Series memcpy_s{"memcpy", {}}, thread_s{"copy<Thread>", {}}, warp_s{"copy<Warp>", {}},
      block_s{"copy<Block>", {}};
  auto gb = [&](double sec) { return bytes / sec / 1e9; };
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    std::memcpy(d, s, bytes);
    memcpy_s.gbps.push_back(gb(std::chrono::duration<double>(Clock::now() - t0).count()));
    thread_s.gbps.push_back(gb(time_scope_copy<mori::Thread>({{1}, {1}}, d, s, bytes)));
    warp_s.gbps.push_back(gb(time_scope_copy<mori::Warp>({{1}, {64}}, d, s, bytes)));
    block_s.gbps.push_back(
        gb(time_scope_copy<mori::Block>({{1}, {static_cast<unsigned>(block)}}, d, s, bytes)));
  }
  if (std::memcmp(d, s, bytes) != 0) {
    std::fprintf(stderr, "copy_bw: destination differs from source\n");
    return 1;
  }

  const double ref = memcpy_s.quantile(0.5);
  if (!json) {
    std::printf("# copy_bw: %zu bytes, %d repetitions, medians (interquartile range)\n", bytes,
                reps);
    std::printf("%-14s %12s %22s %12s\n", "copy", "GB/s", "IQR GB/s", "x memcpy");
  }
  for (const Series* ser : {&memcpy_s, &thread_s, &warp_s, &block_s}) {
    const double med = ser->quantile(0.5), lo = ser->quantile(0.25), hi = ser->quantile(0.75);
    if (json) {
      std::printf("%s\n", nlohmann::json{{"bench", "copy_bw"},
                                         {"copy", ser->name},
                                         {"size", bytes},
                                         {"reps", reps},
                                         {"gbps", med},
                                         {"gbps_q1", lo},
                                         {"gbps_q3", hi},
                                         {"ratio_memcpy", med / ref}}
                              .dump()
                              .c_str());
    } else {
      std::printf("%-14s %12.2f %10.2f - %-9.2f %12.2f\n", ser->name.c_str(), med, lo, hi,
                  med / ref);
    }
  }
  return 0;
}
