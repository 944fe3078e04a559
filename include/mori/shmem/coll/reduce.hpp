// The reductions: reduce (OpenSHMEM's shmem_<op>_reduce, every member gets the whole result) and
// reducescatter (NVSHMEM's, member i gets block i of it). collectives.hpp documents them; here are
// their two algorithms.
//
//   direct (every member over P2P) each member combines its own block of the result, loading the
//          members' sources directly, after a team sync, a chunk at a time (combine_chunks);
//          reduce stores each finished chunk from cache into every member's dest. Then a team
//          sync. Each member reads its 1/size of every source once and (reduce) writes its block
//          to each member: the traffic of a reduce-scatter plus an all-gather in one pass, in two
//          meetings of the team at any size.
//   staged (any member over RDMA) the members put their contributions into each other's staging
//          area (coll/common.hpp), chunk by chunk, and each combines what it received. The area
//          is split in two halves that take turns: round r puts chunk r into one half while this
//          PE combines chunk r - 1 from the other, with one barrier per round, so the RDMA writes
//          of one chunk overlap the arithmetic of the last. Small messages take one round: a put,
//          a barrier, a local combine and a sync (the one-shot algorithm).
//
//   flagged (a direct team, at most kFlaggedMaxBytes per member) every member sends its
//          contribution to every member's mailbox and combines what it receives, with no meeting
//          of the team (coll/flags.hpp).
//
// Every member combines in member order 0, 1, ..., size - 1 (staged, flagged), or every element of
// the result is combined by one member only (direct), so all members get the same bits, floating
// point included.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "mori/core/copy.hpp"
#include "mori/shmem/coll/common.hpp"
#include "mori/shmem/coll/move.hpp"
#include "mori/shmem/reduce_op.hpp"

namespace mori::shmem {

namespace detail::coll {

template <ReduceOp Op, typename T>
MORI_DEVICE T combine(T a, T b) {
  static_assert(!is_bitwise(Op) || std::is_integral_v<T>,
                "and, or and xor reductions take integer types (OpenSHMEM 9.9.7)");
  if constexpr (Op == ReduceOp::kAnd) return a & b;
  if constexpr (Op == ReduceOp::kOr) return a | b;
  if constexpr (Op == ReduceOp::kXor) return a ^ b;
  if constexpr (Op == ReduceOp::kMin) return b < a ? b : a;
  if constexpr (Op == ReduceOp::kMax) return a < b ? b : a;
  if constexpr (Op == ReduceOp::kSum) return a + b;
  if constexpr (Op == ReduceOp::kProd) return a * b;
}

// The operator as the algorithms apply it. Fixed<Op>: the device API's named and templated forms.
// ByCode: the ABI's, which names the operator by value; a switch in the element loop, so that each
// algorithm's transport code is compiled once for all seven operators rather than once for each.
template <ReduceOp Op>
struct Fixed {
  template <typename T>
  MORI_DEVICE T operator()(T a, T b) const {
    return static_cast<T>(combine<Op>(a, b));
  }
};
struct ByCode {
  ReduceOp op;  // one the type takes (reduce_by_code checks it first)
  template <typename T>
  MORI_DEVICE T operator()(T a, T b) const {
    switch (op) {
      case ReduceOp::kMin:
        return combine<ReduceOp::kMin>(a, b);
      case ReduceOp::kMax:
        return combine<ReduceOp::kMax>(a, b);
      case ReduceOp::kSum:
        return static_cast<T>(combine<ReduceOp::kSum>(a, b));
      case ReduceOp::kProd:
        return static_cast<T>(combine<ReduceOp::kProd>(a, b));
      default:
        break;
    }
    if constexpr (std::is_integral_v<T>) {
      if (op == ReduceOp::kAnd) return static_cast<T>(a & b);
      if (op == ReduceOp::kOr) return static_cast<T>(a | b);
      return static_cast<T>(a ^ b);
    }
    return a;
  }
};

// The host's loop of accumulate and combine_pair: d[k] = c(a[k], b[k]) over [0, n), or with
// kInto d[k] = c(d[k], b[k]) (a unused); b overlaps neither d nor a. In tiles of a fixed count, on
// restrict pointers: GCC's -O2 vectorizes a loop only when it needs no runtime alias check and no
// remainder of unknown count (measured: a plain loop ran one element per instruction; tiles
// through local arrays kept the arrays on the stack, a load and a store more per vector). In AVX2
// where the CPU has it (MORI_HOST_WIDE_VECTORS).
template <bool kInto, typename C, typename T>
MORI_HOST_WIDE_VECTORS MORI_DEVICE void combine_span(const C& c, T* __restrict d,
                                                     const T* __restrict a, const T* __restrict b,
                                                     size_t n) {
  constexpr size_t kTile = 64 / sizeof(T);
  auto at = [&](size_t k) { return c(kInto ? d[k] : a[k], b[k]); };
  size_t k = 0;
  for (; k + kTile <= n; k += kTile)
    for (size_t j = 0; j < kTile; ++j) d[k + j] = at(k + j);
  for (; k < n; ++k) d[k] = at(k);
}

// dest[k] = c(dest[k], from[k]) for this participant's share of [0, n); the first term (kFirst)
// is a copy, nothing when in place (dest == from: reduce on its own source). from never overlaps
// dest otherwise.
template <bool kFirst, Scope S, typename C, typename T>
MORI_DEVICE void accumulate(const C& c, T* dest, const T* from, size_t n) {
  if (kFirst && dest == from) return;
  if constexpr (platform::kLanesInterleave) {
    // By value: captured by reference, the pointers are reloaded after every store (which might
    // alias them).
    mori::detail::for_each_share<S>(n, [=](size_t k) {
      if constexpr (kFirst)
        dest[k] = from[k];
      else
        dest[k] = c(dest[k], from[k]);
    });
  } else {
    size_t k = 0, end = 0;
    mori::detail::share_span<S>(n, &k, &end);
    if constexpr (kFirst)
      std::memcpy(dest + k, from + k, (end - k) * sizeof(T));
    else
      combine_span<true>(c, dest + k, static_cast<const T*>(nullptr), from + k, end - k);
  }
}

// dest[k] = c(a[k], b[k]) for this participant's share of [0, n): the first two terms of a
// combine in one pass. dest may be a (in place); b overlaps neither.
template <Scope S, typename C, typename T>
MORI_DEVICE void combine_pair(const C& c, T* dest, const T* a, const T* b, size_t n) {
  if (dest == a) return accumulate<false, S>(c, dest, b, n);
  if constexpr (platform::kLanesInterleave) {
    mori::detail::for_each_share<S>(n, [=](size_t k) { dest[k] = c(a[k], b[k]); });
  } else {
    size_t k = 0, end = 0;
    mori::detail::share_span<S>(n, &k, &end);
    combine_span<false>(c, dest + k, a + k, b + k, end - k);
  }
}

// Member `me`'s block of [0, n) cut into `size` blocks, as [*begin, *end): the first n % size
// blocks have one element more.
MORI_DEVICE void block_of(size_t n, int size, int me, size_t* begin, size_t* end) {
  const size_t base = n / size, extra = n % size, i = static_cast<size_t>(me);
  *begin = i * base + (i < extra ? i : extra);
  *end = *begin + base + (i < extra ? 1 : 0);
}

// out[0, n) = the m arrays source(0), ..., source(m - 1) combined in that order, a chunk at a time:
// each chunk of out stays in cache while every array is added to it, so out is written to memory
// once and each array read once, where combining whole arrays would pass over out m times. Then
// after(begin, len) runs on the finished chunk, every participant of the scope having written its
// share (reduce stores it from cache into the other members' dest).
inline constexpr size_t kCombineChunkBytes = 8192;
template <Scope S, typename C, typename T, typename Source, typename After>
MORI_DEVICE void combine_chunks(const C& c, T* out, size_t n, int m, Source&& source,
                                After&& after) {
  constexpr size_t kChunk = kCombineChunkBytes / sizeof(T);
  for (size_t begin = 0; begin < n; begin += kChunk) {
    const size_t len = n - begin < kChunk ? n - begin : kChunk;
    if (m == 1)
      accumulate<true, S>(c, out + begin, source(0) + begin, len);
    else
      combine_pair<S>(c, out + begin, source(0) + begin, source(1) + begin, len);
    for (int i = 2; i < m; ++i) accumulate<false, S>(c, out + begin, source(i) + begin, len);
    after(begin, len);
  }
}
struct NothingAfter {
  MORI_DEVICE void operator()(size_t, size_t) const {}
};

// Direct: this PE's block of the result, combined into `out` from the members' copies of `block`
// (this PE's address of the n elements every member contributes to it). The own term goes first,
// so that out may be block (reduce in place): this PE's block of its own source is read by this
// PE alone.
template <Scope S, typename C, typename T, typename After>
MORI_DEVICE void combine_direct(const char* call, const C& c, const TeamView& v, T* out, T* block,
                                size_t n, After&& after) {
  combine_chunks<S>(
      c, out, n, v.size(),
      [&](int i) { return i == 0 ? block : member_copy(call, v, block, n, v.rotated(i - 1)); },
      after);
}

// Staged: `n` elements from every member through the staging area. contribution(j) is what this PE
// sends member j, as its address here; every member combines into `out`.
template <Scope S, typename C, typename T, typename Contribution>
MORI_DEVICE void combine_staged(const char* call, const C& c, const TeamView& v, T* out, size_t n,
                                Contribution&& contribution) {
  const uint64_t half = team_scratch_bytes() / 2, slot = half / v.size() / sizeof(T) * sizeof(T);
  check_staging(call, v, 2 * sizeof(T) * v.size());
  const size_t chunk = slot / sizeof(T), rounds = n == 0 ? 0 : (n + chunk - 1) / chunk;
  uint8_t* scratch = team_scratch(v);
  auto slot_of = [&](size_t round, int member) {
    return reinterpret_cast<T*>(scratch + (round & 1) * half + member * slot);
  };
  auto len = [&](size_t round) { return round * chunk + chunk <= n ? chunk : n - round * chunk; };
  auto combine_round = [&](size_t r) {
    combine_chunks<S>(
        c, out + r * chunk, len(r), v.size(), [&](int i) { return slot_of(r, i); }, NothingAfter{});
  };
  for (size_t r = 0; r < rounds; ++r) {
    for (int i = 0; i < v.size(); ++i) {
      const int j = v.rotated(i);
      push<S>(call, v, j, slot_of(r, v.me()), contribution(j) + r * chunk, len(r));
    }
    if (r > 0) combine_round(r - 1);
    // Delivers round r, and frees the other half: every member has combined round r - 1 (or
    // earlier) before arriving.
    meet<S, true>(call, v);
  }
  if (rounds > 0) combine_round(rounds - 1);
  meet<S, false>(call, v);  // the area is free for the team's next collective
}

// Flagged: contribution(j) (this PE's address) is what member j gets; `n` elements from every
// member are combined into `out`. `out` may be a contribution: each is sent before out is written.
template <Scope S, typename C, typename T, typename Contribution>
MORI_DEVICE void combine_flagged(const char* call, const C& c, const TeamView& v, Mail kind, T* out,
                                 size_t n, Contribution&& contribution) {
  const Mailboxes m = open_mailboxes<S>(v, kind);
  send_all<S>(call, v, m, [&](int j, uint8_t* to) { copy<S>(to, contribution(j), n * sizeof(T)); });
  wait_all<S>(call, v, m);
  combine_chunks<S>(
      c, out, n, v.size(), [&](int i) { return mailbox<T>(v, m, i); }, NothingAfter{});
  S::sync();
}

template <Scope S, typename C, typename T>
MORI_DEVICE void reduce(const char* call, const C& c, Team team, T* dest, const T* source,
                        size_t nreduce) {
  const TeamView v = team_view(call, team);
  const Mail kind = mail_for(v, byte_count(call, dest, nreduce, sizeof(T), state::this_pe()));
  if (kind != Mail::kNone)
    return combine_flagged<S>(call, c, v, kind, dest, nreduce, [&](int) { return source; });
  if (!v.direct) {
    combine_staged<S>(call, c, v, dest, nreduce, [&](int) { return source; });
    return;
  }
  size_t begin = 0, end = 0;
  block_of(nreduce, v.size(), v.me(), &begin, &end);
  meet<S, false>(call, v);  // every member's source is ready
  // Each finished chunk of this PE's block goes from cache into every other member's dest.
  T* mine = dest + begin;
  combine_direct<S>(call, c, v, mine, const_cast<T*>(source) + begin, end - begin,
                    [&](size_t at, size_t len) {
                      S::sync();  // copy<S> shares the chunk out differently from the combine
                      for (int i = 0; i < v.size() - 1; ++i)
                        copy<S>(member_copy(call, v, mine, end - begin, v.rotated(i)) + at,
                                mine + at, len * sizeof(T));
                    });
  meet<S, false>(call, v);  // every member's stores are done
}

template <Scope S, typename C, typename T>
MORI_DEVICE void reducescatter(const char* call, const C& c, Team team, T* dest, const T* source,
                               size_t nreduce) {
  const TeamView v = team_view(call, team);
  byte_count(call, source, nreduce * v.size(), sizeof(T), state::this_pe());
  auto block = [&](int member) { return const_cast<T*>(source) + member * nreduce; };
  if (const Mail kind = mail_for(v, nreduce * sizeof(T)); kind != Mail::kNone)
    return combine_flagged<S>(call, c, v, kind, dest, nreduce, block);
  if (!v.direct) {
    combine_staged<S>(call, c, v, dest, nreduce, block);
    return;
  }
  meet<S, false>(call, v);  // every member's source is ready
  combine_direct<S>(call, c, v, dest, block(v.me()), nreduce, NothingAfter{});
  meet<S, false>(call, v);  // no member reads this PE's source any more
}

}  // namespace detail::coll
}  // namespace mori::shmem
