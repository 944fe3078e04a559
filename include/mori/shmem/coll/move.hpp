// The collectives that move data without combining it: broadcast, fcollect, collect, alltoall and
// alltoalls (collectives.hpp documents them and their algorithms). Each is a push, a pull or a
// strided push, followed by the team's barrier or sync:
//
//   push   this PE puts its block to every member (put_nbi: P2P stores, or RDMA writes all
//          in flight at once, which the NIC pipelines), then a team barrier completes every
//          member's puts.
//          One meeting of the team, and each member writes only what the others need.
//   pull   (broadcast over P2P, large) every member loads the root's source at once, between two
//          team syncs: the copies run in parallel instead of one after another on the root.
//
//   flagged (a direct team, at most kFlaggedMaxBytes per member) through the members' mailboxes,
//          without a meeting (coll/flags.hpp).
//
// OpenSHMEM requires each member's dest to be ready to receive when any member calls the
// collective, so a push needs no meeting before it, except right after a flagged call, when a
// member may still be filling its dest from its mailboxes (push_all settles the team first).
#pragma once

#include <cstddef>
#include <cstdint>

#include "mori/core/copy.hpp"
#include "mori/shmem/coll/common.hpp"
#include "mori/shmem/coll/flags.hpp"
#include "mori/shmem/rma.hpp"
#include "mori/shmem/single.hpp"
#include "mori/shmem/strided.hpp"

namespace mori::shmem::detail::coll {

// From this size on, a broadcast over P2P is a pull: below it the root's stores finish sooner than
// the members' extra sync costs.
inline constexpr uint64_t kBroadcastPullBytes = 16 << 10;

// Puts `nelems` elements of this PE's `source` to `dest` on member i (complete at the next quiet).
// Nothing for none (a block of a reduction smaller than the team).
template <Scope S, typename T>
MORI_DEVICE void push(const char* call, const TeamView& v, int i, T* dest, const T* source,
                      size_t nelems) {
  if (nelems == 0) return;
  const int pe = v.pe(i);
  rma<S, false, false>(call, const_cast<T*>(source), dest,
                       byte_count(call, dest, nelems, sizeof(T), pe), pe, 0);
}

// A push-first algorithm: settles the team after a flagged call (coll/flags.hpp), runs put(j) for
// every member j from this PE's successor on, then meets the team at a barrier that completes the
// puts.
template <Scope S, typename Put>
MORI_DEVICE void push_all(const char* call, const TeamView& v, Put&& put) {
  settle<S>(call, v);
  for (int i = 0; i < v.size(); ++i) put(v.rotated(i));
  meet<S, true>(call, v);
}

template <Scope S, typename T>
MORI_DEVICE void broadcast(const char* call, Team team, T* dest, const T* source, size_t nelems,
                           int root) {
  const TeamView v = team_view(call, team);
  check_member(call, "root", root, v);
  const uint64_t bytes = byte_count(call, dest, nelems, sizeof(T), state::this_pe());
  if (const Mail kind = mail_for(v, bytes); kind != Mail::kNone) {
    // The root sends, the others send an empty flag and wait for its.
    const Mailboxes m = open_mailboxes<S>(v, kind);
    const bool is_root = v.me() == root;
    send_all<S>(call, v, m, [&](int i, uint8_t* to) {
      if (is_root && i != root) copy<S>(to, source, bytes);
    });
    if (is_root) {
      copy<S>(dest, source, bytes);
    } else {
      wait_all<S>(call, v, m, root);
      copy<S>(dest, mailbox<T>(v, m, root), bytes);
    }
    S::sync();
    return;
  }
  if (v.direct && bytes >= kBroadcastPullBytes) {
    meet<S, false>(call, v);  // the root has its source ready
    copy<S>(dest, member_copy(call, v, const_cast<T*>(source), nelems, root), bytes);
    meet<S, false>(call, v);  // no member reads the root's source any more
    return;
  }
  push_all<S>(call, v, [&](int j) {
    if (v.me() == root) push<S>(call, v, j, dest, source, nelems);
  });
}

// Flagged fcollect and alltoall: member i gets block(i) of this PE's source, and this PE's dest
// gets member i's block for it at dest + i * nelems.
template <Scope S, typename T, typename Block>
MORI_DEVICE void exchange_flagged(const char* call, const TeamView& v, Mail kind, T* dest,
                                  size_t nelems, Block&& block) {
  const uint64_t bytes = nelems * sizeof(T);
  const Mailboxes m = open_mailboxes<S>(v, kind);
  send_all<S>(call, v, m, [&](int i, uint8_t* to) { copy<S>(to, block(i), bytes); });
  wait_all<S>(call, v, m);
  for (int i = 0; i < v.size(); ++i) copy<S>(dest + i * nelems, mailbox<T>(v, m, i), bytes);
  S::sync();
}

// Every member's `nelems` elements, in member order: member i's land at dest + i * nelems.
template <Scope S, typename T>
MORI_DEVICE void fcollect(const char* call, Team team, T* dest, const T* source, size_t nelems) {
  const TeamView v = team_view(call, team);
  const Mail kind = mail_for(v, byte_count(call, source, nelems, sizeof(T), state::this_pe()));
  if (kind != Mail::kNone)
    return exchange_flagged<S>(call, v, kind, dest, nelems, [&](int) { return source; });
  push_all<S>(call, v, [&](int j) { push<S>(call, v, j, dest + v.me() * nelems, source, nelems); });
}

// As fcollect with a count of each member's own. On a direct team the members first exchange
// their counts through the mailboxes, each with its block when the block fits (whether it does
// follows from the count, so every reader knows): when every block did, the call ends there, one
// trip like fcollect's; else each member pushes its block to where the counts before it end, and
// the team meets at a barrier. Elsewhere (or when a mailbox cannot hold a count: a large team on a
// small staging area) the counts go through the staging area's first half and a barrier.
template <Scope S, typename T>
MORI_DEVICE void collect(const char* call, Team team, T* dest, const T* source, size_t nelems) {
  const TeamView v = team_view(call, team);
  constexpr uint64_t kCount = sizeof(uint64_t);  // the count before a mailbox's block
  const uint64_t bytes = byte_count(call, source, nelems, sizeof(T), state::this_pe());
  uint64_t offset = 0;
  if (fits_box(v, 0, kCount)) {
    auto fits = [&](uint64_t count) { return fits_box(v, count * sizeof(T), kCount); };
    const Mailboxes m = open_mailboxes<S>(v, Mail::kBoxes);
    send_all<S>(call, v, m, [&](int, uint8_t* to) {
      if (S::leader()) *reinterpret_cast<uint64_t*>(to) = nelems;
      if (fits(nelems)) copy<S>(to + kCount, source, bytes);
    });
    wait_all<S>(call, v, m);
    auto count = [&](int i) { return *mailbox<uint64_t>(v, m, i); };
    bool all_fit = true;
    for (int i = 0; i < v.size(); ++i) all_fit = all_fit && fits(count(i));
    for (int i = 0; i < v.me(); ++i) offset += count(i);
    if (all_fit) {
      uint64_t at = 0;  // where member i's block starts
      for (int i = 0; i < v.size(); ++i) {
        copy<S>(dest + at, reinterpret_cast<const T*>(mailbox<uint8_t>(v, m, i) + kCount),
                count(i) * sizeof(T));
        at += count(i);
      }
      S::sync();
      return;
    }
  } else {
    check_staging(call, v, sizeof(uint64_t) * v.size());
    uint64_t* counts = reinterpret_cast<uint64_t*>(team_scratch(v));
    if (S::leader())
      for (int i = 0; i < v.size(); ++i) p(counts + v.me(), uint64_t{nelems}, v.pe(v.rotated(i)));
    meet<S, true>(call, v);
    for (int i = 0; i < v.me(); ++i) offset += counts[i];
    // Also the counts' release: a member's next collective writes them only after every member
    // has arrived at the barrier below, having read them.
  }
  for (int i = 0; i < v.size(); ++i) push<S>(call, v, v.rotated(i), dest + offset, source, nelems);
  meet<S, true>(call, v);
}

// Block j of this PE's source goes to member j, at dest + me * nelems there.
template <Scope S, typename T>
MORI_DEVICE void alltoall(const char* call, Team team, T* dest, const T* source, size_t nelems) {
  const TeamView v = team_view(call, team);
  const Mail kind = mail_for(v, byte_count(call, source, nelems, sizeof(T), state::this_pe()));
  if (kind != Mail::kNone)
    return exchange_flagged<S>(call, v, kind, dest, nelems,
                               [&](int j) { return source + j * nelems; });
  push_all<S>(call, v, [&](int j) {
    push<S>(call, v, j, dest + v.me() * nelems, source + j * nelems, nelems);
  });
}

// alltoall with strides (OpenSHMEM's shmem_alltoalls): block j is source[(j * nelems + k) * sst]
// for k < nelems, and lands at dest[(me * nelems + k) * dst] on member j. Each block is one
// strided put (strided.hpp), complete when it returns.
template <Scope S, typename T>
MORI_DEVICE void alltoalls(const char* call, Team team, T* dest, const T* source, ptrdiff_t dst,
                           ptrdiff_t sst, size_t nelems) {
  const TeamView v = team_view(call, team);
  push_all<S>(call, v, [&](int j) {
    strided_rma<S, false>(call, dest + v.me() * nelems * dst, source + j * nelems * sst, dst, sst,
                          nelems, v.pe(j), 0);
  });
}

}  // namespace mori::shmem::detail::coll
