// Device-side failure: the first failure a device call detects is recorded in the device-error
// record (GpuStates::error) so that the host can print it, then the kernel traps. On the host
// backend the trap carries the same message, so the launch fails with it.
#pragma once

#include <cstdint>
#include <type_traits>

#include "mori/core/text.hpp"
#include "mori/platform.hpp"
#include "mori/state/access.hpp"

namespace mori::state {

using Message = Text<sizeof(DeviceError::message)>;

struct FailureInfo {
  DeviceErrorCode code;
  int pe = -1;
  uint64_t address = 0;
  uint64_t observed = 0;
  bool has_queue = false;
  QueueNote queue{};
};

// Whether failures carry a text. Release GPU builds record only the structured fields (code, PE,
// address, observed value), so that no hot path carries a message buffer or its formatting code;
// the host prints those.
inline constexpr bool kDescribeFailures = MORI_DEVICE_CHECKS || platform::kOnHost;

namespace detail {
// Writes the record unless an earlier failure already did (the first one wins). One CAS and a few
// stores: this is inlined at every failure site of a hot path. The record starts zeroed (init), so
// an empty text (release GPU builds) needs no store.
MORI_DEVICE MORI_COLD_INLINE void record_failure(const FailureInfo& info, const char* text,
                                                 int length) {
  DeviceError* record = gpu_states().error;
  using platform::MemOrder;
  using platform::MemScope;
  // Every job has a record (init allocates it; finalize clears the state). Outside a job, where
  // failures are described, the trap still carries the message; a release GPU build does not test
  // for that case at each of an entry point's failure sites, and a call outside a job faults at the
  // record's null address instead of trapping.
  if constexpr (kDescribeFailures)
    if (!record) return;
  if (platform::atomic_compare_swap<MemOrder::Relaxed, MemScope::System>(
          &record->code, 0u, static_cast<uint32_t>(info.code)) != 0)
    return;
  record->pe = info.pe;
  record->address = info.address;
  record->observed = info.observed;
  if (info.has_queue) record->queue = info.queue;
  if (length > 0) {
    for (int i = 0; i < length; ++i) record->message[i] = text[i];
    record->message[length] = '\0';
  }
  // The host reads the record after the kernel has died: publish it before trapping. Release is
  // enough (nothing is read after it): on amdgcn an L2 writeback and a wait, without the
  // seq_cst fence's cache invalidate (one instruction at every failure site).
  platform::fence<MemOrder::Release, MemScope::System>();
}
}  // namespace detail

namespace detail {
// Records the failure, runs `then`, then traps: with platform::trap, or (kInLine)
// platform::trap_in_line.
template <bool kInLine, typename Describe, typename Then>
MORI_DEVICE MORI_COLD_INLINE void record_and_trap(const FailureInfo& info, Describe&& describe,
                                                  Then&& then) {
  auto trap = [](const char* text) {
    if constexpr (kInLine)
      platform::trap_in_line(text);
    else
      platform::trap(text);
  };
  if constexpr (kDescribeFailures) {
    Message message;
    describe(message);
    record_failure(info, message.data, message.length);
    then();
    trap(message.data);
  } else {
    record_failure(info, "", 0);
    then();
    trap("");
  }
}
}  // namespace detail

// Records the failure and traps. `describe(Message&)` writes the one-line reason; it runs only
// where failures are described (kDescribeFailures). Never returns.
template <typename Describe>
[[noreturn]] MORI_DEVICE MORI_COLD_INLINE void fail(const FailureInfo& info, Describe&& describe) {
  detail::record_and_trap<false>(info, describe, [] {});
  __builtin_unreachable();
}

// fail() as a site the compiler takes to fall through (platform::trap_in_line), for a failure
// inside a loop on a hot path (a wait's timeout): a site that never returns is a second exit of
// the loop, which the structurizer joins with exec-mask bookkeeping on every pass. The wave still
// ends in the trap.
//
// `then` runs once the record is written, before the trap: a site that holds a lock other lanes
// wait on releases it there, so that the record names this failure and not one that a waiter finds
// after it (an RDMA poll: the flush completions behind an error completion).
template <typename Describe, typename Then>
MORI_DEVICE MORI_COLD_INLINE void fail_in_line(const FailureInfo& info, Describe&& describe,
                                               Then&& then) {
  return detail::record_and_trap<true>(info, describe, then);
}
template <typename Describe>
MORI_DEVICE MORI_COLD_INLINE void fail_in_line(const FailureInfo& info, Describe&& describe) {
  return detail::record_and_trap<true>(info, describe, [] {});
}

// fail() in the lanes where `bad` holds, for a check on a hot path. The failure site is entered
// by a branch the whole wave takes or skips together (a ballot and a scalar branch) and ends in
// platform::trap_in_line, which the compiler takes to fall through: `if (bad) fail(...)` in
// divergent code saved, flipped and restored the exec mask around the site, and kept the lanes
// that "left" out of the code after it with a mask of their own (P2P int32_p: 71 -> 62
// instructions). The wave still ends in the trap; the code after the site never runs for it.
//
// `info` is the record's fields, or a callable that returns them, for fields that take loads or
// tests to find: they then run at the failure site only, where a FailureInfo argument is computed
// on the hot path.
template <typename Info, typename Describe>
  requires std::is_invocable_r_v<FailureInfo, const Info&>
MORI_DEVICE void fail_if(bool bad, const Info& info, Describe&& describe) {
  if (platform::ballot(bad) == 0) [[likely]]
    return;
  if (bad) fail_in_line(info(), describe);
}
template <typename Describe>
MORI_DEVICE void fail_if(bool bad, const FailureInfo& info, Describe&& describe) {
  fail_if(bad, [&] { return info; }, describe);
}

}  // namespace mori::state
