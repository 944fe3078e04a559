// The flagged algorithm of the small collectives on a direct team (every member over P2P): no
// meeting of the team. Each member stores its payload for member j into j's mailbox for it, then a
// flag word holding the call's number; a member waits until the flag of every member that sends it
// something holds the number, then reads those mailboxes (NCCL's and NVSHMEM's LL protocol, one
// flag word per mailbox). Mailboxes are rings of sets, reused once every member has flagged a later
// call (lagged acknowledgements). docs/collectives.md, "The flagged protocol", gives the mailbox
// kinds, the acknowledgement rule and why a run-ahead root never overwrites an unread mailbox.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mori/core/copy.hpp"
#include "mori/shmem/coll/common.hpp"
#include "mori/state/internal_area.hpp"
#include "mori/state/spin.hpp"

namespace mori::shmem::detail::coll {

// The largest payload per member that goes flagged: beyond it the copies dominate and the push
// (with its barrier) moves the data in larger stores.
inline constexpr uint64_t kFlaggedMaxBytes = 1024;
inline constexpr uint64_t kFlagBytes = 8;
// Lines: a GPU cache line per mailbox, in a power-of-two number of sets from kMinLineSets (fewer
// than the boxes' would gain nothing) to kMaxLineSets.
inline constexpr uint64_t kLineBytes = 128;
inline constexpr uint64_t kMinLineSets = 16;
inline constexpr uint64_t kMaxLineSets = 128;
// Boxes: the staging area's second half in kBoxSets sets.
inline constexpr uint64_t kBoxSets = 16;
// The box call word's top bit: the team's last collective was flagged, of either kind (settle()).
inline constexpr uint64_t kFlaggedLast = uint64_t{1} << 63;

// The two kinds of mailbox; kNone: the call does not go flagged.
enum class Mail { kNone, kLines, kBoxes };

// Sets of lines on a team of `members` with a staging area of `scratch` bytes: as many as fit its
// first half, rounded down to a power of two, at most kMaxLineSets; 0 when fewer than kMinLineSets
// fit (the team then has boxes only).
constexpr uint64_t line_sets(uint64_t scratch, int members) {
  const uint64_t fit = scratch / 2 / kLineBytes / static_cast<uint64_t>(members);
  if (fit < kMinLineSets) return 0;
  uint64_t sets = kMaxLineSets;
  while (sets > fit) sets /= 2;
  return sets;
}
// Bytes per box: the second half split into the sets, a box per member in each, in whole words.
constexpr uint64_t box_bytes(uint64_t scratch, int members) {
  return scratch / 2 / kBoxSets / static_cast<uint64_t>(members) / 8 * 8;
}
// A team with lines has boxes that hold a count and its flag (collect's), so collect's staged
// fallback, whose counts lie in the first half, never runs on a team whose first half holds lines.
static_assert(kMinLineSets * kLineBytes / kBoxSets >= kFlagBytes + sizeof(uint64_t));

// This PE's mailboxes of one kind: member i's of set s at base + (s * members + i) * slot.
struct Mailboxes {
  uint8_t* base;
  uint64_t slot;  // bytes per mailbox: the flag, then the payload
  uint64_t sets;  // a power of two
  uint64_t call;  // this call's number among the kind's calls, 1 for the team's first
  MORI_DEVICE uint8_t* box(int members, uint64_t of_call, int i) const {
    return base + ((of_call & (sets - 1)) * members + i) * slot;
  }
  // Every how many calls a sender checks that the sets it is about to reuse have been read.
  MORI_DEVICE uint64_t ack_every() const { return sets / 2; }
};

// Whether `bytes` of payload per member, after `header` bytes of the algorithm's own, fit a box.
MORI_DEVICE bool fits_box(const TeamView& v, uint64_t bytes, uint64_t header = 0) {
  return v.direct && bytes <= kFlaggedMaxBytes &&
         kFlagBytes + header + bytes <= box_bytes(team_scratch_bytes(), v.size());
}

// The mailbox that `bytes` of payload per member, the same on every member, go in: the same
// answer on every member.
MORI_DEVICE Mail mail_for(const TeamView& v, uint64_t bytes) {
  if (v.direct && kFlagBytes + bytes <= kLineBytes &&
      line_sets(team_scratch_bytes(), v.size()) != 0)
    return Mail::kLines;
  return fits_box(v, bytes) ? Mail::kBoxes : Mail::kNone;
}

// The kind's call number (local; for boxes, with the kFlaggedLast bit).
MORI_DEVICE uint64_t* call_word(const TeamView& v, Mail kind) {
  return internal_word(v.group.arrivals_word + (kind == Mail::kLines ? state::kTeamCollLineCallWord
                                                                     : state::kTeamCollCallWord));
}

// Takes this call's number among the kind's and marks the team's last collective as flagged.
// Every participant reads the word; the leader writes the next number after the scope has read it
// (the scope meets again before the call ends).
template <Scope S>
MORI_DEVICE Mailboxes open_mailboxes(const TeamView& v, Mail kind) {
  uint64_t* word = call_word(v, kind);
  uint64_t* last = call_word(v, Mail::kBoxes);
  const uint64_t call = (*word & ~kFlaggedLast) + 1;
  S::sync();
  if (S::leader()) {
    *word = call;
    *last |= kFlaggedLast;
  }
  const uint64_t scratch = team_scratch_bytes();
  if (kind == Mail::kLines)
    return {team_scratch(v), kLineBytes, line_sets(scratch, v.size()), call};
  return {team_scratch(v) + scratch / 2, box_bytes(scratch, v.size()), kBoxSets, call};
}

// Before an algorithm that stores into other members' dest without meeting them first: meets them
// when the team's last collective was flagged (a member may still be filling its dest from its
// mailboxes). Every member reads the same bit: they made the same calls.
template <Scope S>
MORI_DEVICE void settle(const char* call, const TeamView& v) {
  uint64_t* word = call_word(v, Mail::kBoxes);
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
  return reinterpret_cast<uint8_t*>(s.regions[-1].peer_bases[v.pe(i)] + offset);
}

// Sends every member (as the team numbers it) its payload: fill(i, to) stores, in scope S, what
// member i gets at `to`, its mailbox's payload. First, every ack_every() calls, waits until every
// member has read the sets the next ack_every calls reuse; the flags go after every payload.
template <Scope S, typename Fill>
MORI_DEVICE void send_all(const char* call, const TeamView& v, const Mailboxes& m, Fill&& fill) {
  using platform::MemOrder;
  using platform::MemScope;
  const uint64_t every = m.ack_every();
  if (S::leader() && (m.call & (every - 1)) == 0 && m.call > every) {
    const uint64_t acked = m.call - (every - 1);
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
