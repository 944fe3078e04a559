// spin_until: the one wait loop of the device API. Every wait in mori goes through it, so every
// wait calls relax() and honours MORI_SHMEM_TIMEOUT_MS (GpuStates::timeout_ticks): past the
// deadline, on_timeout() records what was awaited and traps (it must not return).
#pragma once

#include <cstdint>

#include "mori/platform.hpp"
#include "mori/state/device_error.hpp"

namespace mori::state {

template <typename Done, typename OnTimeout>
MORI_DEVICE void spin_until(Done&& done, OnTimeout&& on_timeout) {
  // One call site of done(): every copy of it is inlined code (an RDMA wait polls the CQ in it),
  // so the loop is written to have a single copy rather than a test before the loop and one in it.
  const uint64_t timeout = gpu_states().timeout_ticks;
  uint64_t deadline = ~uint64_t{0};
  for (uint32_t spin = 0;; ++spin) {
    if (done()) return;
    if (timeout) {
      const uint64_t now = platform::clock_ticks();
      if (deadline == ~uint64_t{0}) deadline = now + timeout;
      if (now > deadline) on_timeout();
    }
    platform::relax(spin);
  }
}

// The start of a timeout message: "<call> timed out after <ms> ms: ".
MORI_DEVICE void timeout_prefix(Message& m, const char* call) {
  m << call << " timed out after " << gpu_states().timeout_ticks * platform::kClockTickNs / 1000000
    << " ms: ";
}

}  // namespace mori::state
