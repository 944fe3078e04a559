// Helpers for the tests of the atomic, signal and wait families: the integer element types, a short
// device-wait deadline for a test's session, and a check that a launch failed with exactly the
// expected device-error record.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>

#include "device_harness.hpp"

namespace state = mori::state;

namespace mori::test {

// The integer types among the 11 element types (the wait and test families' domain), as a tuple
// for TEST_CASE_TEMPLATE_APPLY.
template <typename... Ts>
auto integers_of(std::tuple<Ts...>) -> decltype(std::tuple_cat(
    std::conditional_t<std::is_integral_v<Ts>, std::tuple<Ts>, std::tuple<>>{}...));
using IntegerTuple = decltype(integers_of(ElementTuple{}));

// Sets MORI_SHMEM_TIMEOUT_MS for the sessions made while it lives (construct it before the
// Session), and puts the previous value back afterwards.
struct ScopedTimeout : ScopedEnv {
  explicit ScopedTimeout(const char* ms) : ScopedEnv("MORI_SHMEM_TIMEOUT_MS", ms) {}
};

// An address as the device's messages print it: "0x" and lowercase hex digits.
inline std::string hex_text(const void* p) {
  char text[32];
  std::snprintf(text, sizeof(text), "0x%llx",
                static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(p)));
  return text;
}

// Runs `kernel` on one thread; it must fail with exactly `message`, which this PE's device-error
// record must hold too, with `code`, `pe` and `address` (and `observed`, when given). Clears the
// record afterwards, so that the session can go on and finalize.
template <typename F>
void expect_device_failure(F&& kernel, const std::string& message, state::DeviceErrorCode code,
                           int pe, const void* address,
                           std::optional<uint64_t> observed = std::nullopt) {
  const std::string err = launch_error({1}, {1}, kernel);
  CHECK(err == "mori::host::launch: lane failed: " + message + " [block (0,0,0) thread (0,0,0)]");
  state::DeviceError& record = *shmem::globalGpuStates.error;
  CHECK(record.code == static_cast<uint32_t>(code));
  CHECK(std::string(record.message) == message);
  CHECK(record.pe == pe);
  CHECK(record.address == reinterpret_cast<uint64_t>(address));
  if (observed) CHECK(record.observed == *observed);
  record.code = 0;
}

}  // namespace mori::test
