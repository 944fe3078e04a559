// DeviceStateGuard: for in-process tests of device code that waits or fails. It points
// globalGpuStates at a local device-error record and a wait deadline for the guard's scope, and
// puts the previous values back when it ends (also when a REQUIRE leaves early).
#pragma once

#include <cstdint>

#include "mori/platform.hpp"
#include "mori/state/gpu_states.hpp"

namespace state = mori::state;

namespace mori::test {

struct DeviceStateGuard {
  state::DeviceError record{};
  uint64_t saved_timeout;
  state::DeviceError* saved_error;
  explicit DeviceStateGuard(uint64_t timeout_ns)
      : saved_timeout(shmem::globalGpuStates.timeout_ticks),
        saved_error(shmem::globalGpuStates.error) {
    shmem::globalGpuStates.timeout_ticks = timeout_ns / platform::kClockTickNs;
    shmem::globalGpuStates.error = &record;
  }
  ~DeviceStateGuard() {
    shmem::globalGpuStates.timeout_ticks = saved_timeout;
    shmem::globalGpuStates.error = saved_error;
  }
};

}  // namespace mori::test
