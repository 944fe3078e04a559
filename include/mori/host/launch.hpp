// mori::host::launch: runs a kernel on the host backend. Every lane of every block is a CPU thread,
// so block and warp barriers, divergent branches and spin waits on other PEs behave as they do on
// the GPU.
//
//   auto status = mori::host::launch({2}, {128}, my_kernel, dst, src, n);
//   if (!status.ok()) fprintf(stderr, "%s\n", status.message().c_str());
//
// The kernel is any callable; it reads its indices through mori::platform (thread_idx(),
// block_idx(), ...).
#pragma once

#include <functional>
#include <utility>

#include "mori/platform/common.hpp"
#include "mori/status.hpp"

namespace mori::host {

struct LaunchConfig {
  platform::Dim3 grid;
  platform::Dim3 block;
  int warp_size = platform::kMaxWarpSize;  // lanes per warp: 1 to 64; the GPU targets use 64
};

// The outcome of a launch: ok, or the first failure's one-line reason (which lane trapped, and its
// message).
using Status = mori::Status;

// Why `config` cannot be launched (an empty grid or block, too many threads, a bad warp size), or
// ok. launch_lanes checks it first; an asynchronous launch (host/stream.hpp) checks it at the call.
Status check_launch(const LaunchConfig& config);

// Runs body() once per lane and returns when every lane has finished. A lane that traps or throws
// fails the launch: the other lanes are unwound at their next barrier or relax(), and all threads
// are joined before return.
Status launch_lanes(const LaunchConfig& config, const std::function<void()>& body);

template <typename Kernel, typename... Args>
Status launch(const LaunchConfig& config, Kernel&& kernel, Args&&... args) {
  return launch_lanes(config, [&] { kernel(args...); });
}

template <typename Kernel, typename... Args>
Status launch(platform::Dim3 grid, platform::Dim3 block, Kernel&& kernel, Args&&... args) {
  return launch(LaunchConfig{grid, block}, std::forward<Kernel>(kernel),
                std::forward<Args>(args)...);
}

}  // namespace mori::host
