// barrier_all: the device-side OpenSHMEM shmem_barrier_all across every PE.
//
//   barrier_all<Thread>()  one thread per PE calls it.
//   barrier_all<Block>()   every thread of one block per PE calls it; the block's leader does the
//                          cross-PE work. (Warp works the same way: every lane of one warp.)
//
// Ordering guarantee. On return from barrier_all on any PE:
//   - every put, AMO and signal that any participant of any PE issued before its barrier_all is
//     complete (each PE quiets before it arrives), and
//   - every memory write that any participant of any PE made before its barrier_all (local stores,
//     P2P stores, completed RMA) is visible to every participant that has returned (acquire).
// No PE returns before every PE has called it.
//
// Exactly one scope instance per PE may be inside barrier_all at a time: the epoch word (below) is
// kept by the caller alone. The barrier's state lives in the symmetric heap and persists across
// kernel launches, so any sequence of launches may call it as long as every PE calls it the same
// number of times. The host's barrier_all does not touch that state, and the two may be mixed
// freely between launches. A device barrier that times out leaves the PEs' counts out of step:
// finalize and init again before the next one.
#pragma once

#include <cstdint>
#include <type_traits>

#include "mori/core/scope.hpp"
#include "mori/shmem/sync.hpp"
#include "mori/state/spin.hpp"
#include "mori/transport/dispatch.hpp"

namespace mori::shmem {

namespace detail {

// The runtime's internal area (GpuStates::internal): 64 KiB at the same heap offset on every PE,
// zeroed at init, in 64-bit words. Symmetric words are updated by other PEs through the
// transports; local ones only by this PE. A later user takes a reserved word and adds its row.
//
//   word  name              kind       written by                         holds
//   0     kBarrierArrivals  symmetric  each PE's barrier_all (AMO add 1)  arrivals since init
//   1     kBarrierEpoch     local      this PE's barrier_all caller       its calls since init
//   2-7   reserved          -          nobody yet (0): signals, teams     -
//   8-    free
inline constexpr int kBarrierArrivals = 0;
inline constexpr int kBarrierEpoch = 1;
inline constexpr int kInternalLaidOutWords = 8;  // words 0-7: this table

MORI_DEVICE uint64_t* internal_word(int word) { return state::gpu_states().internal + word; }

// Word `word` of the internal area on PE `pe`, as a transport addresses it.
MORI_DEVICE state::RemoteTarget internal_target(int word, int pe) {
  const uint64_t offset =
      reinterpret_cast<uint64_t>(internal_word(word)) - state::gpu_states().heap_base;
  return {{-1, offset}, pe, 0};
}

// The cross-PE half of barrier_all, run by one thread per PE.
//
// Each PE's arrival counter only grows: every barrier_all adds 1 to it on every PE, and the caller
// of the e-th barrier waits until its own counter reaches e * n_pes. That count cannot come early:
// a PE adds for barrier e + 1 only after it has left barrier e, so the first PE to leave barrier e
// saw n_pes arrivals from each of the e barriers. Nothing is ever reset, so back-to-back barriers
// have no reset race, and a later launch carries on from the counts in the heap.
MORI_DEVICE void barrier_all_leader() {
  using platform::MemOrder;
  using platform::MemScope;
  constexpr const char* kCall = "barrier_all";
  const int n = state::pe_count(), me = state::this_pe();
  // Prevents a peer from passing the barrier while this PE's puts and AMOs are still in flight:
  // quiet completes them, and on P2P its release fence also orders them (and every earlier store)
  // before the arrival AMOs below, which the waiters' acquire loads pair with.
  quiet();
  uint64_t* epoch_word = internal_word(kBarrierEpoch);
  const uint64_t epoch = *epoch_word + 1;
  *epoch_word = epoch;
  for (int i = 1; i <= n; ++i) {  // peers first, from the next PE on, so PEs spread their AMOs
    const int pe = (me + i) % n;
    const state::RemoteTarget t = internal_target(kBarrierArrivals, pe);
    transport::with_transport(kCall, pe, [&]<typename Tr>() {
      Tr::template amo<uint64_t>(kCall, AMO_SIGNAL_ADD, t, 1, 0);
    });
  }
  const uint64_t* arrivals = internal_word(kBarrierArrivals);
  const uint64_t pes = static_cast<uint64_t>(n), target = epoch * pes;
  // Acquire: pairs with each PE's release before its arrival AMO, so that what every PE wrote
  // before the barrier is visible here after it (an AMO add continues the release sequence).
  auto count = [&] { return platform::atomic_load<MemOrder::Acquire, MemScope::System>(arrivals); };
  state::spin_until([&] { return count() >= target; },
                    [&] {
                      const uint64_t seen = count(), before = target - pes;
                      state::fail({state::DeviceErrorCode::kTimeout, me,
                                   reinterpret_cast<uint64_t>(arrivals), seen},
                                  [&](state::Message& m) {
                                    state::timeout_prefix(m, kCall);
                                    m << (seen > before ? seen - before : 0) << " of " << n
                                      << " PEs arrived (epoch " << epoch << ", PE " << me << ")";
                                  });
                    });
}

}  // namespace detail

template <Scope S = Thread>
MORI_DEVICE void barrier_all() {
  using platform::MemOrder;
  using platform::MemScope;
  constexpr bool kShared = !std::is_same_v<S, Thread>;
  // Prevents a peer from missing a store this participant made before the barrier: the leader's
  // fence and AMOs order its own stores only, and the scope's sync orders at the scope's level.
  if constexpr (kShared) platform::fence<MemOrder::Release, MemScope::System>();
  S::sync();
  if (S::leader()) detail::barrier_all_leader();
  S::sync();
  // Prevents this participant from reading peers' memory from before the barrier: the leader's
  // acquire covers the leader; this extends it to every participant at system scope.
  if constexpr (kShared) platform::fence<MemOrder::Acquire, MemScope::System>();
}

}  // namespace mori::shmem
