// The host backend's launch context: what a CPU thread standing in for a GPU lane knows about its
// place in the launch, and the barriers it shares with its warp and block. Filled by
// mori::host::launch (src/backend/host).
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <stdexcept>

#include "mori/platform/common.hpp"

namespace mori::platform::host {

// What trap() throws in device code on the host backend; the launcher turns it into a failed
// launch.
class TrapError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Thrown in lanes still running after another lane of the same launch failed, so that they unwind
// and exit instead of waiting at a barrier or spinning on a flag that will never be set.
class LaunchAborted : public std::exception {
 public:
  const char* what() const noexcept override { return "launch aborted: another lane failed"; }
};

struct LaunchState {
  std::atomic<bool> failed{false};
};

// A reusable barrier. A participant that exits leaves it for good (drop), as a finished GPU wave no
// longer holds back s_barrier; when the launch fails every waiter wakes and unwinds.
//
// `count_` packs (participants << 32 | arrived) so that an arrival and a concurrent drop agree,
// through one CAS, on which of them completes the phase. Waiters spin briefly, then sleep in the
// kernel on `phase_` (a futex); completing a phase adds 1 to it, and a failed launch sets kAborted
// in it, which wakes everyone.
class Barrier {
 public:
  explicit Barrier(int count) : count_(uint64_t(count) << 32) {}
  Barrier(const Barrier&) = delete;
  Barrier& operator=(const Barrier&) = delete;

  void arrive_and_wait() {
    const uint64_t phase = phase_.load(std::memory_order_acquire);
    if (phase & kAborted) throw LaunchAborted{};
    uint64_t c = count_.load(std::memory_order_relaxed);
    for (;;) {
      const uint64_t arrived = (c & 0xffffffffu) + 1;
      const bool last = arrived == (c >> 32);
      const uint64_t next = last ? (c >> 32) << 32 : (c & ~uint64_t{0xffffffffu}) | arrived;
      if (count_.compare_exchange_weak(c, next, std::memory_order_acq_rel)) {
        if (last) return complete_phase();
        break;
      }
    }
    for (int spin = 0; spin < kSpins && phase_.load(std::memory_order_acquire) == phase; ++spin) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
    uint64_t now;
    while ((now = phase_.load(std::memory_order_acquire)) == phase)
      phase_.wait(phase, std::memory_order_acquire);
    if ((now & kAborted) && (now & ~kAborted) == (phase & ~kAborted)) throw LaunchAborted{};
  }
  void drop() {
    uint64_t c = count_.load(std::memory_order_relaxed);
    for (;;) {
      const uint64_t participants = (c >> 32) - 1, arrived = c & 0xffffffffu;
      const bool completes = participants > 0 && arrived == participants;
      const uint64_t next = (participants << 32) | (completes ? 0 : arrived);
      if (count_.compare_exchange_weak(c, next, std::memory_order_acq_rel)) {
        if (completes) complete_phase();
        return;
      }
    }
  }
  void wake_all() {
    phase_.fetch_or(kAborted, std::memory_order_acq_rel);
    phase_.notify_all();
  }

 private:
  static constexpr uint64_t kAborted = uint64_t{1} << 63;
  static constexpr int kSpins = 200;
  void complete_phase() {
    phase_.fetch_add(1, std::memory_order_acq_rel);
    phase_.notify_all();
  }
  std::atomic<uint64_t> count_;
  std::atomic<uint64_t> phase_{0};
};

struct WarpState {
  explicit WarpState(int lanes) : barrier(lanes) {}
  Barrier barrier;
  uint64_t slots[kMaxWarpSize] = {};  // one word per lane for whole-warp collectives
};

struct BlockState {
  explicit BlockState(int threads) : barrier(threads) {}
  Barrier barrier;
};

// One per lane thread, for the duration of the launch.
struct LaunchContext {
  Dim3 grid_dim, block_dim;
  Dim3 block_idx{0, 0, 0}, thread_idx{0, 0, 0};
  int warp_size = kMaxWarpSize;
  int lane = 0;        // index within the warp
  int warp_id = 0;     // index of the warp within the block
  int warp_lanes = 1;  // live lanes of this warp (the last warp of a block may be partial)
  WarpState* warp = nullptr;
  BlockState* block = nullptr;
  LaunchState* launch = nullptr;
};

// Null outside a launch: device code called from a plain host thread acts as the only lane of a 1x1
// launch.
inline thread_local const LaunchContext* tls_context = nullptr;

inline const LaunchContext& context() {
  static const LaunchContext kSolo{};
  const LaunchContext* c = tls_context;
  return c ? *c : kSolo;
}

}  // namespace mori::platform::host
