// The flagged algorithm of the small collectives on a direct team (every member over P2P): no
// meeting of the team at all. Each member stores its payload for member j straight into j's
// mailbox for it, then a flag word after it holding the call's number; each member waits until
// every member's flag holds the number, then reads its mailboxes. One one-way trip between PEs,
// where a push and a barrier take three (the payload, the arrival, and the other arrivals). This
// is the low-latency ("LL") protocol of NCCL and NVSHMEM; here a flag is one word after the payload
// rather than one in every 8 bytes, so the writer orders the two with a release fence.
//
// The mailboxes are the second half of the team's staging area (collect's counts use the first):
// two sets, taken in turn by the call's number, of one mailbox per member, each `slot` bytes: the
// flag word first, the payload after it. A small payload shares the flag's cache line, so the
// reader fetches one line per member; and the flag's word never holds payload, which could pass
// for a call's number. Every member sends every member a flag in every call (an empty payload
// where it has nothing to send), so no member runs ahead: a member's call e + 2 writes the set that
// call e used only after it has seen every member's flag of call e + 1, and each member sends that
// flag only after it has read its mailboxes of call e. The call number is a local word per team
// (barrier.hpp's table); team creation zeroes it and the mailboxes, so that no flag is stale.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mori/core/copy.hpp"
#include "mori/shmem/coll/common.hpp"
#include "mori/state/spin.hpp"

namespace mori::shmem::detail::coll {

// The largest payload per member that goes flagged: beyond it the copies dominate and the push
// (with its barrier) moves the data in larger stores.
inline constexpr uint64_t kFlaggedMaxBytes = 1024;

struct Mailboxes {
  uint8_t* base;  // this PE's set for this call: member i's mailbox at base + i * slot
  uint64_t slot;  // bytes per mailbox: the flag, then the payload
  uint64_t call;  // this call's number, 1 for the team's first flagged call
};
inline constexpr uint64_t kFlagBytes = 8;

// Bytes per mailbox on this team: a quarter of the staging area (the second half, two sets) per
// member, in whole words.
MORI_DEVICE uint64_t mailbox_bytes(const TeamView& v) {
  return team_scratch_bytes() / 4 / v.size() / 8 * 8;
}

// Whether a call with `bytes` of payload per member goes flagged: the same answer on every member.
MORI_DEVICE bool flagged(const TeamView& v, uint64_t bytes) {
  return v.direct && bytes <= kFlaggedMaxBytes && kFlagBytes + bytes <= mailbox_bytes(v);
}

// Takes this call's number and set. Every participant reads the word; the leader writes the next
// number after the scope has read it (the scope meets again before the call ends).
template <Scope S>
MORI_DEVICE Mailboxes open_mailboxes(const TeamView& v) {
  uint64_t* word = internal_word(v.group.arrivals_word + state::kTeamCollCallWord);
  const uint64_t call = *word + 1, slot = mailbox_bytes(v);
  S::sync();
  if (S::leader()) *word = call;
  uint8_t* half = team_scratch(v) + team_scratch_bytes() / 2;
  return {half + (call & 1) * slot * v.size(), slot, call};
}

// This PE's mailbox in member i's set, as this PE stores to it over P2P: the staging area lies in
// the heap, at the same offset on every PE, so no address lookup is needed.
MORI_DEVICE uint8_t* outbox(const TeamView& v, const Mailboxes& m, int i) {
  const state::GpuStates& s = state::gpu_states();
  const uint64_t offset = reinterpret_cast<uint64_t>(m.base + v.me() * m.slot) - s.heap_base;
  return reinterpret_cast<uint8_t*>(s.peer_bases[v.pe(i)] + offset);
}

// Sends member i (as the team numbers it) `bytes` from `from` into its mailbox for this PE, in
// scope S; payload(i) gives what member i gets and its bytes. The flags go after every payload.
template <Scope S, typename Payload>
MORI_DEVICE void send_all(const TeamView& v, const Mailboxes& m, Payload&& payload) {
  using platform::MemOrder;
  using platform::MemScope;
  for (int k = 0; k < v.size(); ++k) {
    const int i = v.rotated(k);
    const void* from = nullptr;
    const uint64_t bytes = payload(i, &from);
    uint8_t* box = outbox(v, m, i);
    if (bytes) copy<S>(box + kFlagBytes, from, bytes);
  }
  // Every participant's payload stores before the leader's flags.
  platform::fence<MemOrder::Release, MemScope::System>();
  S::sync();
  if (!S::leader()) return;
  for (int k = 0; k < v.size(); ++k) {
    const int i = v.rotated(k);
    uint8_t* box = outbox(v, m, i);
    platform::atomic_store<MemOrder::Release, MemScope::System>(reinterpret_cast<uint64_t*>(box),
                                                                m.call);
  }
}

// Waits until every member's flag in this PE's set holds this call's number; then every
// participant of the scope may read the mailboxes.
template <Scope S>
MORI_DEVICE void wait_all(const char* call, const TeamView& v, const Mailboxes& m) {
  using platform::MemOrder;
  using platform::MemScope;
  if (S::leader()) {
    for (int i = 0; i < v.size(); ++i) {
      const uint64_t* flag = reinterpret_cast<const uint64_t*>(m.base + i * m.slot);
      auto seen = [&] { return platform::atomic_load<MemOrder::Acquire, MemScope::System>(flag); };
      state::spin_until([&] { return seen() == m.call; },
                        [&] {
                          state::fail({state::DeviceErrorCode::kTimeout, state::this_pe(),
                                       reinterpret_cast<uint64_t>(flag), seen()},
                                      [&](state::Message& msg) {
                                        state::timeout_prefix(msg, call);
                                        msg << "member " << i << " of team " << v.team
                                            << " did not send call " << m.call
                                            << " (its flag holds " << seen() << ", PE "
                                            << state::this_pe() << ")";
                                      });
                        });
    }
  }
  S::sync();
  platform::fence<MemOrder::Acquire, MemScope::System>();
}

// Member i's mailbox in this PE's set, as T.
template <typename T>
MORI_DEVICE const T* mailbox(const Mailboxes& m, int i) {
  return reinterpret_cast<const T*>(m.base + i * m.slot + kFlagBytes);
}

}  // namespace mori::shmem::detail::coll
