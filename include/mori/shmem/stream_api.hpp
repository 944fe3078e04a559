// The stream-ordered host API (NVSHMEM's nvshmemx_*_on_stream, rocSHMEM's *_on_stream): each call
// enqueues one operation on a stream, after the kernels and operations already on it, and returns
// at once. The operation then runs on the device as the device call of the same name does in a
// kernel (one thread of a runtime kernel on hip, one lane of a launch on the host backend), with
// the device call's checks and MORI_SHMEM_TIMEOUT_MS deadline. docs/runtime.md, "Stream-ordered
// calls".
//
// A stream is a hipStream_t on the hip backend and a mori::host::Stream* (mori/host/stream.hpp) on
// the host backend; nullptr is the default stream. On hip no call synchronizes the host,
// allocates or blocks, so each can be captured in a HIP graph.
//
// Each call returns 0 once the operation is enqueued, or -1 and the reason (last_error(), one line
// on stderr) when an argument is wrong: a PE outside [0, n_pes()), an address that is not
// symmetric (in the heap or a registered buffer) for its whole size, a team invalid on this PE, a
// root outside the team, an unknown signal or comparison operator, a bitwise reduction of a
// floating-point type. Nothing is then enqueued. A failure while the operation runs (a timed-out
// wait) is the stream's: its synchronize reports it (hipStreamSynchronize,
// mori::host::Stream::synchronize, or stream_synchronize below).
//
// Collective calls (barrier_all_on_stream, sync_all_on_stream, team_sync_on_stream,
// barrier_on_stream and the collectives) follow the device calls' rules: every member makes the
// same calls in the same order, on whichever stream, and they count in the same sync words as the
// device calls, so device and stream-ordered collectives of a team must not overlap.
//
// The host-initiated putmem, getmem, p and g at the end are blocking: each is the _on_stream
// operation on the default stream followed by a wait for it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "mori/core/types.hpp"
#include "mori/shmem/host_api.hpp"
#include "mori/shmem/reduce_op.hpp"
#include "mori/shmem/vocabulary.hpp"
#include "mori/state/team.hpp"

#if defined(MORI_BACKEND_HOST)
namespace mori::host {
class Stream;
}  // namespace mori::host
#else
struct ihipStream_t;  // hipStream_t, without HIP's headers
#endif

namespace mori::shmem {

#if defined(MORI_BACKEND_HOST)
using stream_t = host::Stream*;
#else
using stream_t = ihipStream_t*;
#endif

// ---- one-sided, in stream order -----------------------------------------------------------------
// putmem: `bytes` from source (this PE's memory) to dest (symmetric) on `pe`, delivered when the
// stream moves on (NVSHMEM's nvshmemx_putmem_on_stream is blocking in stream order, as this).
int putmem_on_stream(void* dest, const void* source, size_t bytes, int pe, stream_t stream);
// getmem: `bytes` from source (symmetric) on `pe` into dest (this PE's memory).
int getmem_on_stream(void* dest, const void* source, size_t bytes, int pe, stream_t stream);
// putmem, then sig_op (SIGNAL_SET or SIGNAL_ADD) of `signal` on sig_addr (symmetric) at `pe`; a PE
// that sees the signal sees the data.
int putmem_signal_on_stream(void* dest, const void* source, size_t bytes, uint64_t* sig_addr,
                            uint64_t signal, atomicType sig_op, int pe, stream_t stream);
// The signal update alone (nvshmemx_signal_op_on_stream), complete when the stream moves on.
int signal_op_on_stream(uint64_t* sig_addr, uint64_t signal, atomicType sig_op, int pe,
                        stream_t stream);
// The stream waits until this PE's sig_addr (symmetric) compares to cmp_value by cmp
// (nvshmemx_signal_wait_until_on_stream); the host does not.
int signal_wait_until_on_stream(uint64_t* sig_addr, Cmp cmp, uint64_t cmp_value, stream_t stream);

// ---- ordering and synchronisation --------------------------------------------------------------
// Every put, AMO and signal issued before it (by kernels or stream calls) is complete.
int quiet_on_stream(stream_t stream);
// The device barrier_all: quiet, then every PE's stream meets.
int barrier_all_on_stream(stream_t stream);
// The world team's sync: every PE's stream meets; stores before it are visible after it.
int sync_all_on_stream(stream_t stream);
int team_sync_on_stream(Team team, stream_t stream);
// team_barrier: quiet + team_sync.
int barrier_on_stream(Team team, stream_t stream);

// ---- collectives on a team (collectives.hpp), in bytes and in elements of T --------------------
int broadcastmem_on_stream(Team team, void* dest, const void* source, size_t bytes, int root,
                           stream_t stream);
int fcollectmem_on_stream(Team team, void* dest, const void* source, size_t bytes, stream_t stream);
int alltoallmem_on_stream(Team team, void* dest, const void* source, size_t bytes, stream_t stream);

namespace detail {
// The element type's index in MORI_FOR_EACH_TYPE (its first entry for int8_t, which is also
// signed char), -1 for a type outside it.
template <typename T>
constexpr int element_type_index() {
  int index = 0, found = -1;
#define MORI_ELEMENT_INDEX_(type, name)                    \
  if (found < 0 && std::is_same_v<T, type>) found = index; \
  ++index;
  MORI_FOR_EACH_TYPE(MORI_ELEMENT_INDEX_)
#undef MORI_ELEMENT_INDEX_
  return found;
}

enum class StreamCollective { kBroadcast, kFcollect, kAlltoall };
// The typed data movers: `nelems` elements of `elem_size` bytes.
int collective_on_stream(StreamCollective kind, Team team, void* dest, const void* source,
                         size_t nelems, size_t elem_size, int root, stream_t stream);
// reduce or reducescatter of `nreduce` elements of MORI_FOR_EACH_TYPE's type number `type`.
int reduction_on_stream(bool scatter, Team team, void* dest, const void* source, size_t nreduce,
                        int type, ReduceOp op, stream_t stream);

template <typename T>
constexpr int checked_type_index() {
  constexpr int kIndex = element_type_index<std::remove_cv_t<T>>();
  static_assert(kIndex >= 0, "the collectives take the 11 element types of MORI_FOR_EACH_TYPE");
  return kIndex;
}
}  // namespace detail

template <typename T>
int broadcast_on_stream(Team team, T* dest, const T* source, size_t nelems, int root,
                        stream_t stream) {
  return detail::collective_on_stream(detail::StreamCollective::kBroadcast, team, dest, source,
                                      nelems, sizeof(T), root, stream);
}
template <typename T>
int fcollect_on_stream(Team team, T* dest, const T* source, size_t nelems, stream_t stream) {
  return detail::collective_on_stream(detail::StreamCollective::kFcollect, team, dest, source,
                                      nelems, sizeof(T), 0, stream);
}
template <typename T>
int alltoall_on_stream(Team team, T* dest, const T* source, size_t nelems, stream_t stream) {
  return detail::collective_on_stream(detail::StreamCollective::kAlltoall, team, dest, source,
                                      nelems, sizeof(T), 0, stream);
}

// dest[k] = source[k] of every member combined by op (and, or, xor: integer types only).
template <typename T>
int reduce_on_stream(Team team, T* dest, const T* source, size_t nreduce, ReduceOp op,
                     stream_t stream) {
  return detail::reduction_on_stream(false, team, dest, source, nreduce,
                                     detail::checked_type_index<T>(), op, stream);
}
// Member i gets block i (nreduce elements) of the reduction of the members' size * nreduce.
template <typename T>
int reducescatter_on_stream(Team team, T* dest, const T* source, size_t nreduce, ReduceOp op,
                            stream_t stream) {
  return detail::reduction_on_stream(true, team, dest, source, nreduce,
                                     detail::checked_type_index<T>(), op, stream);
}
// sum_reduce_on_stream(team, dest, source, nreduce, stream), sum_reducescatter_on_stream, ...
#define MORI_REDUCE_ON_STREAM(reduce_name, scatter_name, op)                           \
  template <typename T>                                                                \
  int reduce_name##_on_stream(Team team, T* dest, const T* source, size_t nreduce,     \
                              stream_t stream) {                                       \
    return reduce_on_stream(team, dest, source, nreduce, ReduceOp::op, stream);        \
  }                                                                                    \
  template <typename T>                                                                \
  int scatter_name##_on_stream(Team team, T* dest, const T* source, size_t nreduce,    \
                               stream_t stream) {                                      \
    return reducescatter_on_stream(team, dest, source, nreduce, ReduceOp::op, stream); \
  }
MORI_FOR_EACH_REDUCE_OP(MORI_REDUCE_ON_STREAM)
#undef MORI_REDUCE_ON_STREAM

// Waits for everything enqueued on `stream` so far; 0, or -1 and the first failure of that work
// (the stream's synchronize, for code that is the same on both backends).
int stream_synchronize(stream_t stream);

// ---- host-initiated, blocking ------------------------------------------------------------------
// As OpenSHMEM's shmem_putmem / shmem_getmem / shmem_<type>_p / shmem_<type>_g called from host
// code (NVSHMEM and rocSHMEM have them): each returns once the data is delivered (put, p) or here
// (get, g), after the work already on the default stream. p returns 0 or -1; g returns the value
// (0 on failure, with the reason in last_error()).
//
// These share their names with the device API's putmem<S>, getmem<S>, p and g. Device code that
// calls them without a scope (putmem(d, s, n, pe)) picks these functions on the host backend, where
// device code is host code: called from a kernel they act as the device call does (putmem<Thread>,
// ...), as clang's host/device overloading picks the device one in a HIP kernel.
int putmem(void* dest, const void* source, size_t bytes, int pe);
int getmem(void* dest, const void* source, size_t bytes, int pe);
#define MORI_HOST_P_G(type, name)        \
  int p(type* dest, type value, int pe); \
  type g(const type* source, int pe);
MORI_FOR_EACH_P_C_TYPE(MORI_HOST_P_G)
#undef MORI_HOST_P_G

}  // namespace mori::shmem
