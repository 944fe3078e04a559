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
#include "mori/shmem/order.hpp"
#include "mori/state/internal_area.hpp"
#include "mori/state/spin.hpp"
#include "mori/state/team.hpp"
#include "mori/transport/dispatch.hpp"

namespace mori::shmem {

namespace detail {

// The internal area's words: state/internal_area.hpp.

MORI_DEVICE uint64_t* internal_word(int word) { return state::gpu_states().internal + word; }

// Word `word` of the internal area on PE `pe`, as a transport addresses it.
MORI_DEVICE state::RemoteTarget internal_target(int word, int pe) {
  const uint64_t offset =
      reinterpret_cast<uint64_t>(internal_word(word)) - state::gpu_states().heap_base;
  return {{-1, offset}, pe, 0};
}

// Who takes part in a sync and where it counts: the world PEs start, start + stride, ... (size of
// them, this PE the my_index-th), counting in three words of the internal area. `team` names them
// in messages: kTeamInvalid for barrier_all, which names no team.
struct SyncGroup {
  int start, stride, size, my_index;
  int arrivals_word, epoch_word, rdma_arrivals_word;
  int team;
};

// The cross-PE half of barrier_all and of the team syncs and barriers, run by one thread per PE.
// kQuiet: a barrier, which completes this PE's puts and AMOs first; else a sync, which orders
// only memory stores (OpenSHMEM's shmem_sync).
//
// Each PE's arrival counter only grows: every call adds 1 to it on every member, and the caller
// of the e-th call waits until its own counter reaches e * size. That count cannot come early:
// a PE adds for call e + 1 only after it has left call e, so the first PE to leave call e saw size
// arrivals from each of the e calls. Nothing is reset while the group lives, so back-to-back calls
// have no reset race, and a later launch carries on from the counts in the heap.
template <bool kQuiet>
MORI_DEVICE void sync_leader(const char* call, const SyncGroup& g) {
  using platform::MemOrder;
  using platform::MemScope;
  const int me = state::this_pe();
  // Prevents a peer from passing the barrier while this PE's puts and AMOs are still in flight:
  // quiet completes them, and on P2P its release fence also orders them (and every earlier store)
  // before the arrival AMOs below, which the waiters' acquire loads pair with. A sync orders the
  // stores alone.
  if constexpr (kQuiet)
    quiet();
  else
    platform::fence<MemOrder::Release, MemScope::System>();
  uint64_t* epoch_word = internal_word(g.epoch_word);
  const uint64_t epoch = *epoch_word + 1;
  *epoch_word = epoch;
  // Peers first, from the next one on, to spread the AMOs. The index wraps by a subtraction: a
  // `%` by the runtime size would be an integer division, which amdgcn does in software.
  for (int i = 1, k = g.my_index + 1; i <= g.size; ++i, ++k) {
    if (k >= g.size) k -= g.size;
    const int pe = g.start + k * g.stride;
    const bool rdma = state::transport_to(pe) == state::Transport::kRdma;
    const state::RemoteTarget t =
        internal_target(rdma ? g.rdma_arrivals_word : g.arrivals_word, pe);
    transport::with_transport(call, pe, [&]<typename Tr>() {
      Tr::template amo<uint64_t>(call, AMO_SIGNAL_ADD, t, 1, 0);
    });
  }
  const uint64_t* arrivals = internal_word(g.arrivals_word);
  const uint64_t* rdma_arrivals = internal_word(g.rdma_arrivals_word);
  const uint64_t pes = static_cast<uint64_t>(g.size), target = epoch * pes;
  // Acquire: pairs with each PE's release before its arrival AMO, so that what every PE wrote
  // before the barrier is visible here after it (an AMO add continues the release sequence).
  auto count = [&] {
    return platform::atomic_load<MemOrder::Acquire, MemScope::System>(arrivals) +
           platform::atomic_load<MemOrder::Acquire, MemScope::System>(rdma_arrivals);
  };
  state::spin_until(
      [&] { return count() >= target; },
      [&] {
        const uint64_t seen = count(), before = target - pes;
        state::fail_in_line(
            {state::DeviceErrorCode::kTimeout, me, reinterpret_cast<uint64_t>(arrivals), seen},
            [&](state::Message& m) {
              state::timeout_prefix(m, call);
              m << (seen > before ? seen - before : 0) << " of " << g.size << " PEs";
              if (g.team >= 0) m << " of team " << g.team;
              m << " arrived (epoch " << epoch << ", PE " << me << ")";
            });
      });
}

// A collective of scope S whose cross-PE half `leader` runs on the scope's leader.
template <Scope S, typename Leader>
MORI_DEVICE void scoped_sync(Leader&& leader) {
  using platform::MemOrder;
  using platform::MemScope;
  constexpr bool kShared = !std::is_same_v<S, Thread>;
  // Prevents a peer from missing a store this participant made before the barrier: the leader's
  // fence and AMOs order its own stores only, and the scope's sync orders at the scope's level.
  if constexpr (kShared) platform::fence<MemOrder::Release, MemScope::System>();
  S::sync();
  if (S::leader()) leader();
  S::sync();
  // Prevents this participant from reading peers' memory from before the barrier: the leader's
  // acquire covers the leader; this extends it to every participant at system scope.
  if constexpr (kShared) platform::fence<MemOrder::Acquire, MemScope::System>();
}

}  // namespace detail

template <Scope S = Thread>
MORI_DEVICE void barrier_all() {
  detail::scoped_sync<S>([] {
    detail::sync_leader<true>(
        "barrier_all", {0, 1, state::pe_count(), state::this_pe(), state::kBarrierArrivals,
                        state::kBarrierEpoch, state::kBarrierRdmaArrivals, state::kTeamInvalid});
  });
}

}  // namespace mori::shmem
