// mori::host::launch: indices and sizes, barriers, warp collectives, divergence, and failure
// propagation.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "mori/core.hpp"
#include "mori/host/launch.hpp"

namespace plat = mori::platform;
using mori::host::launch;
using mori::host::LaunchConfig;

namespace {
struct LaneRecord {
  plat::Dim3 thread, block, block_dim, grid_dim;
  int lane, warp, warp_lanes, rank, block_rank;
  int seen = 0;
};
bool operator==(const plat::Dim3& a, const plat::Dim3& b) {
  return a.x == b.x && a.y == b.y && a.z == b.z;
}
}  // namespace

TEST_CASE(
    "launch gives every lane its own indices, in 3-D grids and blocks with a partial last warp") {
  for (int warp_size : {64, 16, 7}) {
    CAPTURE(warp_size);
    const plat::Dim3 grid(3, 2, 2), block(5, 4, 3);  // 60 threads per block
    const int block_threads = 60, blocks = 12;
    std::vector<LaneRecord> rec(blocks * block_threads);
    auto status = launch(LaunchConfig{grid, block, warp_size}, [&] {
      const int index = plat::block_rank() * block_threads + plat::thread_rank();
      LaneRecord& r = rec[index];
      r = {plat::thread_idx(), plat::block_idx(),   plat::block_dim(),
           plat::grid_dim(),   plat::lane_id(),     plat::warp_id(),
           plat::warp_lanes(), plat::thread_rank(), plat::block_rank()};
      r.seen++;
    });
    REQUIRE(status.ok());
    for (int b = 0; b < blocks; ++b) {
      for (int t = 0; t < block_threads; ++t) {
        const LaneRecord& r = rec[b * block_threads + t];
        CHECK(r.seen == 1);
        CHECK(r.thread == plat::Dim3(t % 5, (t / 5) % 4, t / 20));
        CHECK(r.block == plat::Dim3(b % 3, (b / 3) % 2, b / 6));
        CHECK(r.block_dim == block);
        CHECK(r.grid_dim == grid);
        CHECK(r.lane == t % warp_size);
        CHECK(r.warp == t / warp_size);
        const int full = (t / warp_size + 1) * warp_size <= block_threads;
        CHECK(r.warp_lanes == (full ? warp_size : block_threads % warp_size));
      }
    }
  }
}

TEST_CASE("device code called outside a launch acts as the only lane of a 1x1 launch") {
  CHECK(plat::thread_rank() == 0);
  CHECK(plat::block_threads() == 1);
  CHECK(plat::warp_lanes() == 1);
  CHECK(plat::grid_blocks() == 1);
  mori::Block::sync();  // a barrier of one returns at once
  mori::Warp::sync();
  CHECK(plat::warp_ballot(true) == 1);
  CHECK(plat::warp_broadcast(42, 0) == 42);
}

TEST_CASE("block barrier: no thread enters phase k+1 before every thread has finished phase k") {
  constexpr int kThreads = 96, kPhases = 50;
  std::atomic<int> arrived{0};
  std::atomic<int> violations{0};
  auto status = launch({2}, {kThreads}, [&] {
    for (int phase = 1; phase <= kPhases; ++phase) {
      arrived.fetch_add(1);
      mori::Block::sync();
      // Both blocks count into `arrived`, so at least this block's threads must be in for every
      // phase so far.
      if (arrived.load() < phase * kThreads) violations.fetch_add(1);
      mori::Block::sync();
    }
  });
  REQUIRE(status.ok());
  CHECK(violations.load() == 0);
  CHECK(arrived.load() == 2 * kThreads * kPhases);
}

TEST_CASE("warp barrier and whole-warp collectives") {
  constexpr int kWarp = 16, kThreads = 40;  // warps of 16, 16 and 8 lanes
  std::vector<std::atomic<int>> counters(3);
  std::atomic<int> bad{0};
  auto status = launch(LaunchConfig{{1}, {kThreads}, kWarp}, [&] {
    const int w = plat::warp_id(), lane = plat::lane_id(), lanes = plat::warp_lanes();
    for (int phase = 1; phase <= 20; ++phase) {
      counters[w].fetch_add(1);
      mori::Warp::sync();
      if (counters[w].load() < phase * lanes) bad.fetch_add(1);
      mori::Warp::sync();
    }
    const uint64_t odd = plat::warp_ballot(lane % 2 == 1);
    uint64_t expect = 0;
    for (int i = 1; i < lanes; i += 2) expect |= uint64_t{1} << i;
    if (odd != expect) bad.fetch_add(1);
    const long from = plat::warp_broadcast(1000L * w + lane, lanes - 1);
    if (from != 1000L * w + lanes - 1) bad.fetch_add(1);
  });
  REQUIRE(status.ok());
  CHECK(bad.load() == 0);
}

TEST_CASE(
    "active-mask collectives see the calling lane alone, so divergent thread-scope code works") {
  std::vector<uint64_t> mask(64), vote(64);
  std::vector<int> value(64);
  std::atomic<int> leaders{0};
  auto status = launch({1}, {64}, [&] {
    const int lane = plat::lane_id();
    mask[lane] = plat::active_mask();
    vote[lane] = plat::ballot(true);
    value[lane] = plat::broadcast(lane * 3, lane);
    if (lane == 0) leaders.fetch_add(1);  // `if (lane == 0) put(...)`: runs once, waits for nobody
  });
  REQUIRE(status.ok());
  for (int i = 0; i < 64; ++i) {
    CHECK(mask[i] == uint64_t{1} << i);
    CHECK(vote[i] == uint64_t{1} << i);
    CHECK(value[i] == i * 3);
  }
  CHECK(leaders.load() == 1);
}

TEST_CASE("a trap in one lane fails the launch with its message while others wait at a barrier") {
  auto status = launch({2}, {64}, [&] {
    if (plat::block_rank() == 1 && plat::thread_rank() == 37)
      plat::trap("lane 37 saw a bad header");
    mori::Block::sync();
    mori::Block::sync();
  });
  REQUIRE_FALSE(status.ok());
  CHECK(
      status.message() ==
      "mori::host::launch: lane failed: lane 37 saw a bad header [block (1,0,0) thread (37,0,0)]");
}

TEST_CASE("a trap fails the launch while other lanes spin on a flag that never comes") {
  int flag = 0;
  const auto start = std::chrono::steady_clock::now();
  auto status = launch({4}, {32}, [&] {
    if (plat::block_rank() == 3 && plat::thread_rank() == 0) {
      plat::trap("giving up");
    }
    while (plat::atomic_load<plat::MemOrder::Acquire, plat::MemScope::System>(&flag) == 0)
      plat::relax();
  });
  CHECK_FALSE(status.ok());
  CHECK(status.message().find("giving up") != std::string::npos);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(20));
}

TEST_CASE("an exception thrown in a lane, and one in a warp collective, fail the launch") {
  auto status = launch({1}, {8}, [&] {
    if (plat::thread_rank() == 5) throw std::runtime_error("bad argument");
    mori::Warp::sync();
  });
  CHECK_FALSE(status.ok());
  CHECK(status.message().find("bad argument [block (0,0,0) thread (5,0,0)]") != std::string::npos);

  status = launch({1}, {8}, [&] { (void)plat::broadcast(1, (plat::lane_id() + 1) % 8); });
  CHECK_FALSE(status.ok());
  CHECK(status.message().find("broadcast from a lane that is not active") != std::string::npos);
}

TEST_CASE("bad launch configurations are refused with the reason") {
  auto noop = [] {};
  auto s = launch({1}, {2048}, noop);
  CHECK(s.message() == "mori::host::launch: block (2048,1,1) has more than 1024 threads");
  s = launch({0}, {1}, noop);
  CHECK(s.message() == "mori::host::launch: empty grid (0,1,1) or block (1,1,1)");
  s = launch(LaunchConfig{{1}, {64}, 65}, noop);
  CHECK(s.message() == "mori::host::launch: warp size 65 is outside [1, 64]");
  s = launch({64}, {1024}, noop);
  CHECK(s.message() ==
        "mori::host::launch: grid (64,1,1) x block (1024,1,1) exceeds the host backend's 16384 "
        "lanes");
}

TEST_CASE("launches run back to back and a failed launch leaves the next one unaffected") {
  for (int i = 0; i < 20; ++i) {
    std::atomic<int> n{0};
    auto fail = launch({1}, {16}, [&] {
      if (plat::thread_rank() == i % 16) plat::trap("x");
      mori::Block::sync();
    });
    CHECK_FALSE(fail.ok());
    auto ok = launch({2}, {16}, [&] {
      mori::Block::sync();
      n.fetch_add(1);
    });
    CHECK(ok.ok());
    CHECK(n.load() == 32);
  }
}
