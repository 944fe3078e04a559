// The flagged algorithm of the small collectives on a direct team (every member over P2P): no
// meeting of the team at all. Each member stores its payload for member j straight into j's
// mailbox for it, then a flag word before it holding the call's number; each member waits until
// the flag of every member that sends it something holds the number, then reads those mailboxes.
// One one-way trip between PEs, where a push and a barrier take three (the payload, the arrival,
// and the other arrivals). This is the low-latency ("LL") protocol of NCCL and NVSHMEM; here a flag
// is one word per mailbox rather than one in every 8 bytes, so the writer orders the two with a
// release fence.
//
// The mailboxes are the second half of the team's staging area (a staged algorithm, on teams that
// are not direct, uses the rest): kMailboxSets sets, taken in turn by the call's number, of one
// mailbox per member, each `slot` bytes: the flag word first, the payload after it. A small payload
// shares the flag's cache line, so the reader fetches one line per member; and the flag's word
// never holds payload, which could pass for a call's number.
//
// Lagged acknowledgements. Every member sends every member a flag in every call (an empty payload
// where it has nothing to send), after it has finished its previous call: member j's flag of call
// a in this PE's mailboxes says that j has read its mailboxes of every call before a. Call c reuses
// the set of call c - kMailboxSets, so before writing j's mailbox in call c a member must know that
// j has flagged c - kMailboxSets + 1. It checks once every kAckEvery = kMailboxSets / 2 calls: in
// call c, a multiple of kAckEvery, it waits until every member has flagged c - kAckEvery + 1,
// which covers calls c .. c + kAckEvery - 1 (at once true after an all-to-all call, which waited
// for every flag of call c - 1). A member that receives from one member only (broadcast) waits for
// that one: the root never waits for the others' flags of its call and runs up to
// kMailboxSets - 1 calls ahead, as OpenSHMEM's broadcast may. A flag in a set only grows (a,
// a + kMailboxSets, ...), hence the check's "at least"; and a member writes a + kMailboxSets
// there only after this PE has flagged a + 1, so a wait for a call's own flag never misses it.
//
// Run-ahead and the user's dest: after a flagged call, a member may still be copying its mailboxes
// into its dest while another has returned. A following algorithm that stores into other members'
// dest before meeting them (a push) meets them first (settle()); the call word's top bit says
// that the team's last collective was flagged. The call number and the bit are a local word per
// team (barrier.hpp's table); team creation zeroes it and the mailboxes, so that no flag is stale.
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
// Mailbox sets: a member may run kMailboxSets - 1 calls ahead of a member it does not wait for.
inline constexpr uint64_t kMailboxSets = 16;
inline constexpr uint64_t kAckEvery = kMailboxSets / 2;
inline constexpr uint64_t kFlagBytes = 8;
// The call word's top bit: the team's last collective was flagged (settle()).
inline constexpr uint64_t kFlaggedLast = uint64_t{1} << 63;

struct Mailboxes {
  uint8_t* half;  // this PE's mailboxes: set s, member i's at half + (s * members + i) * slot
  uint64_t slot;  // bytes per mailbox: the flag, then the payload
  uint64_t call;  // this call's number, 1 for the team's first flagged call
  MORI_DEVICE uint8_t* box(int members, uint64_t of_call, int i) const {
    return half + ((of_call % kMailboxSets) * members + i) * slot;
  }
};

// Bytes per mailbox on this team: the second half of the staging area split into the sets, a
// mailbox per member in each, in whole words.
MORI_DEVICE uint64_t mailbox_bytes(const TeamView& v) {
  return team_scratch_bytes() / 2 / kMailboxSets / v.size() / 8 * 8;
}

// Whether `bytes` of payload per member (after `header` bytes of the algorithm's own) fit a mailbox
// and go flagged: the same answer on every member.
MORI_DEVICE bool flagged(const TeamView& v, uint64_t bytes, uint64_t header = 0) {
  return v.direct && bytes <= kFlaggedMaxBytes && kFlagBytes + header + bytes <= mailbox_bytes(v);
}

MORI_DEVICE uint64_t* call_word(const TeamView& v) {
  return internal_word(v.group.arrivals_word + state::kTeamCollCallWord);
}

// Takes this call's number. Every participant reads the word; the leader writes the next number
// after the scope has read it (the scope meets again before the call ends).
template <Scope S>
MORI_DEVICE Mailboxes open_mailboxes(const TeamView& v) {
  uint64_t* word = call_word(v);
  const uint64_t call = (*word & ~kFlaggedLast) + 1;
  S::sync();
  if (S::leader()) *word = call | kFlaggedLast;
  return {team_scratch(v) + team_scratch_bytes() / 2, mailbox_bytes(v), call};
}

// Before an algorithm that stores into other members' dest without meeting them first: meets them
// when the team's last collective was flagged (a member may still be filling its dest from its
// mailboxes). Every member reads the same bit: they made the same calls.
template <Scope S>
MORI_DEVICE void settle(const char* call, const TeamView& v) {
  uint64_t* word = call_word(v);
  if (!(*word & kFlaggedLast)) return;
  meet<S, false>(call, v);  // also orders every participant's read before the leader's write
  if (S::leader()) *word &= ~kFlaggedLast;
}

// Waits (the leader) until flag `flag` holds `want` (exactly, or at least: kAtLeast); names what
// was awaited on a timeout.
template <bool kAtLeast>
MORI_DEVICE void wait_flag(const char* call, const TeamView& v, const uint64_t* flag, int member,
                           uint64_t want) {
  using platform::MemOrder;
  using platform::MemScope;
  auto seen = [&] { return platform::atomic_load<MemOrder::Acquire, MemScope::System>(flag); };
  state::spin_until([&] { return kAtLeast ? seen() >= want : seen() == want; },
                    [&] {
                      state::fail_in_line({state::DeviceErrorCode::kTimeout, state::this_pe(),
                                           reinterpret_cast<uint64_t>(flag), seen()},
                                          [&](state::Message& msg) {
                                            state::timeout_prefix(msg, call);
                                            msg << "member " << member << " of team " << v.team
                                                << " did not send call " << want
                                                << " (its flag holds " << seen() << ", PE "
                                                << state::this_pe() << ")";
                                          });
                    });
}

// This PE's mailbox in member i's set, as this PE stores to it over P2P: the staging area lies in
// the heap, at the same offset on every PE, so no address lookup is needed.
MORI_DEVICE uint8_t* outbox(const TeamView& v, const Mailboxes& m, int i) {
  const state::GpuStates& s = state::gpu_states();
  const uint64_t offset = reinterpret_cast<uint64_t>(m.box(v.size(), m.call, v.me())) - s.heap_base;
  return reinterpret_cast<uint8_t*>(s.peer_bases[v.pe(i)] + offset);
}

// Sends every member (as the team numbers it) its payload: fill(i, to) stores, in scope S, what
// member i gets at `to`, its mailbox's payload. First, every kAckEvery calls, waits until every
// member has read the sets the next kAckEvery calls reuse; the flags go after every payload.
template <Scope S, typename Fill>
MORI_DEVICE void send_all(const char* call, const TeamView& v, const Mailboxes& m, Fill&& fill) {
  using platform::MemOrder;
  using platform::MemScope;
  if (S::leader() && m.call % kAckEvery == 0 && m.call > kAckEvery) {
    const uint64_t acked = m.call - (kAckEvery - 1);
    for (int i = 0; i < v.size(); ++i)
      wait_flag<true>(call, v, reinterpret_cast<const uint64_t*>(m.box(v.size(), acked, i)), i,
                      acked);
  }
  S::sync();
  for (int k = 0; k < v.size(); ++k) {
    const int i = v.rotated(k);
    fill(i, outbox(v, m, i) + kFlagBytes);
  }
  // Every participant's payload stores before the leader's flags.
  platform::fence<MemOrder::Release, MemScope::System>();
  S::sync();
  if (!S::leader()) return;
  for (int k = 0; k < v.size(); ++k) {
    uint8_t* box = outbox(v, m, v.rotated(k));
    platform::atomic_store<MemOrder::Release, MemScope::System>(reinterpret_cast<uint64_t*>(box),
                                                                m.call);
  }
}

// Waits until the flag of every member (`only` < 0) or of member `only` in this PE's set holds
// this call's number; then every participant of the scope may read those mailboxes.
template <Scope S>
MORI_DEVICE void wait_all(const char* call, const TeamView& v, const Mailboxes& m, int only = -1) {
  using platform::MemOrder;
  using platform::MemScope;
  const int first = only < 0 ? 0 : only, last = only < 0 ? v.size() - 1 : only;
  if (S::leader()) {
    for (int i = first; i <= last; ++i)
      wait_flag<false>(call, v, reinterpret_cast<const uint64_t*>(m.box(v.size(), m.call, i)), i,
                       m.call);
  }
  S::sync();
  platform::fence<MemOrder::Acquire, MemScope::System>();
}

// Member i's mailbox payload in this PE's set, as T.
template <typename T>
MORI_DEVICE const T* mailbox(const TeamView& v, const Mailboxes& m, int i) {
  return reinterpret_cast<const T*>(m.box(v.size(), m.call, i) + kFlagBytes);
}

}  // namespace mori::shmem::detail::coll
