// Device collectives on a team (OpenSHMEM 1.5 section 9.9, with NVSHMEM's reducescatter), in
// Thread, Warp or Block scope: every member of the team makes the same call, each with one scope
// instance (one thread, one warp, or one block), as for team_sync.
//
//   broadcast(team, dest, source, nelems, root)  root's source to dest on every member (root too)
//   fcollect(team, dest, source, nelems)         member i's source at dest + i * nelems everywhere
//   collect(team, dest, source, nelems)          the same with each member's own nelems: member
//                                                i's block follows those of members 0 .. i - 1
//   alltoall(team, dest, source, nelems)         block j of member i's source (source + j * nelems)
//                                                at dest + i * nelems on member j
//   alltoalls(team, dest, source, dst, sst, nelems)  alltoall with element strides dst and sst
//   <op>_reduce(team, dest, source, nreduce)     dest[k] = source[k] of every member combined by
//                                                op: and, or, xor (integers), min, max, sum, prod
//   <op>_reducescatter(team, dest, source, nreduce)  member i gets block i (nreduce elements) of
//                                                the reduction of the members' size * nreduce
//   The *mem forms (broadcastmem, fcollectmem, collectmem, alltoallmem) count bytes.
//
// As OpenSHMEM requires: source and dest are symmetric (the heap, or buffers registered on every
// PE); every member's dest is ready to be written when any member calls (a collective may write a
// member's dest before that member has called); dest and source do not overlap, except that a
// reduce may be in place (dest == source). On return this PE's dest holds the result and its source
// may be reused. Elements are counted per call; reductions take the 11 element types of the typed
// RMA, the bitwise ones only the integer types.
//
// Algorithms: on a team whose members are all reached over P2P ("direct"), payloads up to 1 KiB per
// member go "flagged" (each member stores payload and flag into every member's mailbox; no meeting
// of the team), larger ones are pushed or pulled around a barrier; with RDMA members, pushes and a
// barrier, and reductions in staged rounds through the team's staging area. docs/collectives.md
// has the table per collective, the meetings each takes, and the staging area's sizes.
//
// Collectives count in the team's sync words, as team_sync does: on a PE one collective or sync
// per team at a time, every member making the same calls in the same order. Collectives of
// different teams may run at once. Each wait has the MORI_SHMEM_TIMEOUT_MS deadline.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "mori/shmem/coll/move.hpp"
#include "mori/shmem/coll/reduce.hpp"

namespace mori::shmem {

// ---- data movement, in elements of T (deduced) and in bytes ------------------------------------
template <Scope S = Thread, typename T>
MORI_DEVICE void broadcast(Team team, T* dest, const T* source, size_t nelems, int root) {
  detail::coll::broadcast<S>("broadcast", team, dest, source, nelems, root);
}
template <Scope S = Thread, typename T>
MORI_DEVICE void fcollect(Team team, T* dest, const T* source, size_t nelems) {
  detail::coll::fcollect<S>("fcollect", team, dest, source, nelems);
}
template <Scope S = Thread, typename T>
MORI_DEVICE void collect(Team team, T* dest, const T* source, size_t nelems) {
  detail::coll::collect<S>("collect", team, dest, source, nelems);
}
template <Scope S = Thread, typename T>
MORI_DEVICE void alltoall(Team team, T* dest, const T* source, size_t nelems) {
  detail::coll::alltoall<S>("alltoall", team, dest, source, nelems);
}
template <Scope S = Thread, typename T>
MORI_DEVICE void alltoalls(Team team, T* dest, const T* source, ptrdiff_t dst, ptrdiff_t sst,
                           size_t nelems) {
  detail::coll::alltoalls<S>("alltoalls", team, dest, source, dst, sst, nelems);
}

namespace detail::coll {
MORI_DEVICE char* as_bytes(void* p) { return static_cast<char*>(p); }
MORI_DEVICE const char* as_bytes(const void* p) { return static_cast<const char*>(p); }
}  // namespace detail::coll

template <Scope S = Thread>
MORI_DEVICE void broadcastmem(Team team, void* dest, const void* source, size_t bytes, int root) {
  using detail::coll::as_bytes;
  detail::coll::broadcast<S>("broadcastmem", team, as_bytes(dest), as_bytes(source), bytes, root);
}
template <Scope S = Thread>
MORI_DEVICE void fcollectmem(Team team, void* dest, const void* source, size_t bytes) {
  using detail::coll::as_bytes;
  detail::coll::fcollect<S>("fcollectmem", team, as_bytes(dest), as_bytes(source), bytes);
}
template <Scope S = Thread>
MORI_DEVICE void collectmem(Team team, void* dest, const void* source, size_t bytes) {
  using detail::coll::as_bytes;
  detail::coll::collect<S>("collectmem", team, as_bytes(dest), as_bytes(source), bytes);
}
template <Scope S = Thread>
MORI_DEVICE void alltoallmem(Team team, void* dest, const void* source, size_t bytes) {
  using detail::coll::as_bytes;
  detail::coll::alltoall<S>("alltoallmem", team, as_bytes(dest), as_bytes(source), bytes);
}

// ---- reductions: reduce<Op, S> and reducescatter<Op, S>, and the named forms of each op --------
template <ReduceOp Op, Scope S = Thread, typename T>
MORI_DEVICE void reduce(Team team, T* dest, const T* source, size_t nreduce) {
  detail::coll::reduce<S>("reduce", detail::coll::Fixed<Op>{}, team, dest, source, nreduce);
}
template <ReduceOp Op, Scope S = Thread, typename T>
MORI_DEVICE void reducescatter(Team team, T* dest, const T* source, size_t nreduce) {
  detail::coll::reducescatter<S>("reducescatter", detail::coll::Fixed<Op>{}, team, dest, source,
                                 nreduce);
}

// and_reduce<S>(team, dest, source, nreduce), ... (MORI_FOR_EACH_REDUCE_OP, reduce_op.hpp).
#define MORI_REDUCE_NAMED(reduce_name, scatter_name, op)                               \
  template <Scope S = Thread, typename T>                                              \
  MORI_DEVICE void reduce_name(Team team, T* dest, const T* source, size_t nreduce) {  \
    reduce<ReduceOp::op, S>(team, dest, source, nreduce);                              \
  }                                                                                    \
  template <Scope S = Thread, typename T>                                              \
  MORI_DEVICE void scatter_name(Team team, T* dest, const T* source, size_t nreduce) { \
    reducescatter<ReduceOp::op, S>(team, dest, source, nreduce);                       \
  }
MORI_FOR_EACH_REDUCE_OP(MORI_REDUCE_NAMED)
#undef MORI_REDUCE_NAMED

// The operator as a value (the ABI's form): traps on a code outside ReduceOp, and on a bitwise
// operator for a floating-point type; then one instantiation of the algorithms serves every
// operator (coll/reduce.hpp, ByCode).
namespace detail::coll {
template <bool kScatter, Scope S, typename T>
MORI_DEVICE void reduce_by_code(const char* call, Team team, T* dest, const T* source, size_t n,
                                int op) {
  if (op < 0 || op >= kReduceOps) {
    state::fail(
        {state::DeviceErrorCode::kBadArgument, state::this_pe(), 0, static_cast<uint64_t>(op)},
        [&](state::Message& m) {
          m << call << ": " << op << " is not a reduction operator (0-" << kReduceOps - 1
            << ": and, or, xor, min, max, sum, prod)";
        });
  }
  if (!std::is_integral_v<T> && is_bitwise(static_cast<ReduceOp>(op))) {
    state::fail(
        {state::DeviceErrorCode::kBadArgument, state::this_pe(), 0, static_cast<uint64_t>(op)},
        [&](state::Message& m) {
          m << call << ": operator " << op
            << " (and, or, xor) takes integer types only, not floating point";
        });
  }
  const ByCode c{static_cast<ReduceOp>(op)};
  if constexpr (kScatter)
    reducescatter<S>(call, c, team, dest, source, n);
  else
    reduce<S>(call, c, team, dest, source, n);
}
}  // namespace detail::coll

template <Scope S = Thread, typename T>
MORI_DEVICE void reduce(Team team, T* dest, const T* source, size_t nreduce, int op) {
  detail::coll::reduce_by_code<false, S>("reduce", team, dest, source, nreduce, op);
}
template <Scope S = Thread, typename T>
MORI_DEVICE void reducescatter(Team team, T* dest, const T* source, size_t nreduce, int op) {
  detail::coll::reduce_by_code<true, S>("reducescatter", team, dest, source, nreduce, op);
}

}  // namespace mori::shmem
