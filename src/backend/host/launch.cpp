// The host backend's launcher: one pthread per lane, block and warp barriers from
// platform/host_context.hpp, and failure propagation that never leaves a thread behind.
#include "mori/host/launch.hpp"

#include <pthread.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "mori/platform/host_context.hpp"

namespace mori::host {
namespace {

using platform::Dim3;
using platform::host::BlockState;
using platform::host::LaunchAborted;
using platform::host::LaunchContext;
using platform::host::LaunchState;
using platform::host::WarpState;

// Limits of the GPU targets, kept here so that a kernel that runs on the host also fits a gfx9
// launch.
constexpr unsigned kMaxBlockThreads = 1024;
// Each lane is an OS thread; beyond this a launch would exhaust the process rather than emulate a
// GPU.
constexpr unsigned kMaxLaunchThreads = 16384;
constexpr size_t kLaneStackBytes = size_t{4} << 20;

std::string describe(const Dim3& d) {
  return "(" + std::to_string(d.x) + "," + std::to_string(d.y) + "," + std::to_string(d.z) + ")";
}

struct Launch {
  LaunchState state;
  std::deque<BlockState> blocks;  // deque: stable addresses, no copies of the mutex-holding states
  std::deque<WarpState> warps;
  std::vector<LaunchContext> lanes;
  const std::function<void()>* body = nullptr;
  std::mutex failure_mu;
  std::string failure;

  void fail(const LaunchContext& lane, const char* what) {
    {
      std::lock_guard lock(failure_mu);
      if (failure.empty()) {
        failure = std::string(what) + " [block " + describe(lane.block_idx) + " thread " +
                  describe(lane.thread_idx) + "]";
      }
    }
    state.failed.store(true);
    for (auto& b : blocks) b.barrier.wake_all();
    for (auto& w : warps) w.barrier.wake_all();
  }

  void run_lane(LaunchContext& lane) {
    platform::host::tls_context = &lane;
    try {
      (*body)();
    } catch (const LaunchAborted&) {
      // another lane failed first; its message is the launch's
    } catch (const std::exception& e) {
      fail(lane, e.what());
    } catch (...) {
      fail(lane, "unknown exception");
    }
    platform::host::tls_context = nullptr;
    lane.warp->barrier.drop();
    lane.block->barrier.drop();
  }
};

void* lane_main(void* arg) {
  auto* pair = static_cast<std::pair<Launch*, LaunchContext*>*>(arg);
  pair->first->run_lane(*pair->second);
  return nullptr;
}

}  // namespace

Status check_launch(const LaunchConfig& c) {
  const Dim3& g = c.grid;
  const Dim3& b = c.block;
  if (g.count() == 0 || b.count() == 0)
    return Status::error("mori::host::launch: empty grid " + describe(g) + " or block " +
                         describe(b));
  if (b.count() > kMaxBlockThreads)
    return Status::error("mori::host::launch: block " + describe(b) + " has more than " +
                         std::to_string(kMaxBlockThreads) + " threads");
  if (c.warp_size < 1 || c.warp_size > platform::kMaxWarpSize)
    return Status::error("mori::host::launch: warp size " + std::to_string(c.warp_size) +
                         " is outside [1, " + std::to_string(platform::kMaxWarpSize) + "]");
  if (static_cast<unsigned long long>(g.count()) * b.count() > kMaxLaunchThreads)
    return Status::error("mori::host::launch: grid " + describe(g) + " x block " + describe(b) +
                         " exceeds the host backend's " + std::to_string(kMaxLaunchThreads) +
                         " lanes");
  return {};
}

Status launch_lanes(const LaunchConfig& config, const std::function<void()>& body) {
  if (Status s = check_launch(config); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.message().c_str());
    return s;
  }
  const Dim3 g = config.grid, b = config.block;
  const int ws = config.warp_size;
  const int block_threads = static_cast<int>(b.count());
  const int warps_per_block = (block_threads + ws - 1) / ws;

  Launch launch;
  launch.body = &body;
  launch.lanes.resize(static_cast<size_t>(g.count()) * block_threads);
  size_t next = 0;
  for (unsigned bz = 0; bz < g.z; ++bz)
    for (unsigned by = 0; by < g.y; ++by)
      for (unsigned bx = 0; bx < g.x; ++bx) {
        BlockState& block = launch.blocks.emplace_back(block_threads);
        const size_t first_warp = launch.warps.size();
        for (int w = 0; w < warps_per_block; ++w)
          launch.warps.emplace_back(std::min(ws, block_threads - w * ws));
        for (int rank = 0; rank < block_threads; ++rank) {
          LaunchContext& lane = launch.lanes[next++];
          lane.grid_dim = g;
          lane.block_dim = b;
          lane.block_idx = Dim3(bx, by, bz);
          lane.thread_idx = Dim3(rank % b.x, (rank / b.x) % b.y, rank / (b.x * b.y));
          lane.warp_size = ws;
          lane.lane = rank % ws;
          lane.warp_id = rank / ws;
          lane.warp_lanes = std::min(ws, block_threads - lane.warp_id * ws);
          lane.warp = &launch.warps[first_warp + lane.warp_id];
          lane.block = &block;
          lane.launch = &launch.state;
        }
      }

  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, kLaneStackBytes);
  std::vector<std::pair<Launch*, LaunchContext*>> args(launch.lanes.size());
  std::vector<pthread_t> threads;
  threads.reserve(launch.lanes.size());
  std::string spawn_error;
  for (size_t i = 0; i < launch.lanes.size(); ++i) {
    args[i] = {&launch, &launch.lanes[i]};
    pthread_t t;
    if (int rc = pthread_create(&t, &attr, lane_main, &args[i]); rc != 0) {
      spawn_error = "mori::host::launch: cannot start lane thread " + std::to_string(i) + " of " +
                    std::to_string(launch.lanes.size()) + ": " + std::strerror(rc);
      // Lanes already running must not wait for the ones that never start.
      launch.state.failed.store(true);
      for (size_t j = i; j < launch.lanes.size(); ++j) {
        launch.lanes[j].warp->barrier.drop();
        launch.lanes[j].block->barrier.drop();
      }
      for (auto& bs : launch.blocks) bs.barrier.wake_all();
      for (auto& w : launch.warps) w.barrier.wake_all();
      break;
    }
    threads.push_back(t);
  }
  pthread_attr_destroy(&attr);
  for (pthread_t t : threads) pthread_join(t, nullptr);

  std::string message = !spawn_error.empty() ? spawn_error : launch.failure;
  if (message.empty()) return {};
  if (spawn_error.empty()) message = "mori::host::launch: lane failed: " + message;
  std::fprintf(stderr, "%s\n", message.c_str());
  return Status::error(message);
}

}  // namespace mori::host
