// spin_until: the one wait loop of the device API. Every wait in mori goes through it, so every
// wait calls relax() and honours MORI_SHMEM_TIMEOUT_MS (GpuStates::timeout_ns): past the deadline,
// on_timeout() records what was awaited and traps (it must not return).
#pragma once

#include <cstdint>

#include "mori/platform.hpp"
#include "mori/shmem/device_error.hpp"

namespace mori::shmem::detail {

template <typename Done, typename OnTimeout>
MORI_DEVICE void spin_until(Done&& done, OnTimeout&& on_timeout) {
  if (done()) return;
  const uint64_t timeout = gpu_states().timeout_ns;
  const uint64_t start = timeout ? platform::clock_ns() : 0;
  for (;;) {
    platform::relax();
    if (done()) return;
    if (timeout && platform::clock_ns() - start > timeout) on_timeout();
  }
}

// The start of a timeout message: "<call> timed out after <ms> ms: ".
MORI_DEVICE void timeout_prefix(Message& m, const char* call) {
  m << call << " timed out after " << gpu_states().timeout_ns / 1000000 << " ms: ";
}

}  // namespace mori::shmem::detail
