// Runs one stream operation (runtime/stream_op.hpp) with the device API, in scope S: every
// participant of the scope calls it with the same op. The hip backend's stream kernel and the host
// backend's stream worker both run this, so an _on_stream call does on each backend what the
// device call of the same name does in a kernel, with the device API's checks and deadlines.
#pragma once

#include <cstdint>
#include <utility>

#include "mori/core/types.hpp"
#include "mori/shmem/device_api.hpp"
#include "mori/shmem/stream_api.hpp"
#include "runtime/stream_op.hpp"

namespace mori::runtime {

namespace detail {

// MORI_STREAM_REDUCE_ONE_TYPE (cmake/MoriStreamKernel.cmake): the stream kernel runs the reductions
// of float alone. The reductions are nine tenths of the kernel's code and of its compile (about 20
// s of clang-19 codegen per element type for gfx942); the CI's hip sub-build, whose stand-in
// records launches and runs none, builds it so (docs/testing.md). Every product build compiles all
// types.
#ifdef MORI_STREAM_REDUCE_ONE_TYPE
inline constexpr int kOnlyReduceType = shmem::detail::element_type_index<float>();
#else
inline constexpr int kOnlyReduceType = -1;
#endif

// The reduction of element type number I of MORI_FOR_EACH_TYPE, if `op` names it. An entry that is
// another name of an earlier type (signed char is int8_t) compiles nothing: element_type_index
// never gives its number, so no _on_stream call sends it.
template <Scope S, bool kScatter, typename T, int I>
MORI_DEVICE bool reduce_if(const StreamOp& op) {
  if constexpr (shmem::detail::element_type_index<T>() != I ||
                (kOnlyReduceType >= 0 && I != kOnlyReduceType)) {
    return false;
  } else {
    if (op.type != I) return false;
    auto* dest = reinterpret_cast<T*>(op.dest);
    auto* source = reinterpret_cast<const T*>(op.source);
    if constexpr (kScatter)
      shmem::reducescatter<S>(op.team, dest, source, op.count, op.op);
    else
      shmem::reduce<S>(op.team, dest, source, op.count, op.op);
    return true;
  }
}

// Over mori::ElementTypes (core/types.hpp), MORI_FOR_EACH_TYPE's list in its order.
template <Scope S, bool kScatter, typename... T>
MORI_DEVICE bool reduce_any(const StreamOp& op, TypeList<T...>) {
  return [&]<int... I>(std::integer_sequence<int, I...>) {
    return (reduce_if<S, kScatter, T, I>(op) || ...);
  }(std::make_integer_sequence<int, sizeof...(T)>{});
}

// reduce or reducescatter of element type number `type` of MORI_FOR_EACH_TYPE (the host API
// checked the number and the operator; the device call checks them again).
template <Scope S, bool kScatter>
MORI_DEVICE void run_reduction(const StreamOp& op) {
  if (reduce_any<S, kScatter>(op, mori::ElementTypes{})) return;
  state::fail(
      {state::DeviceErrorCode::kBadArgument, state::this_pe(), 0, static_cast<uint64_t>(op.type)},
      [&](state::Message& m) {
        m << "reduce_on_stream: element type " << op.type
          << " is not one this stream kernel runs (MORI_FOR_EACH_TYPE's numbers, as "
             "element_type_index gives them"
          << (kOnlyReduceType >= 0 ? "; built with MORI_STREAM_REDUCE_ONE_TYPE: float only)" : ")");
      });
}

}  // namespace detail

template <Scope S>
MORI_DEVICE void run_stream_op(const StreamOp& op) {
  using K = StreamOpKind;
  void* dest = reinterpret_cast<void*>(op.dest);
  const void* source = reinterpret_cast<const void*>(op.source);
  auto* sig_addr = reinterpret_cast<uint64_t*>(op.sig_addr);
  const auto sig_op = static_cast<shmem::atomicType>(op.op);
  switch (op.kind) {
    case K::kPut:
      shmem::putmem<S>(dest, source, op.count, op.pe);
      return;
    case K::kGet:
      shmem::getmem<S>(dest, source, op.count, op.pe);
      return;
    case K::kPutSignal:
      shmem::putmem_signal<S>(dest, source, op.count, sig_addr, op.value, sig_op, op.pe);
      return;
    // Thread-scope calls: the leader makes them, and the scope leaves together.
    case K::kSignalOp:
      if (S::leader()) {
        shmem::signal_op(sig_addr, op.value, sig_op, op.pe);
        // Complete, as the other _on_stream calls are when the stream moves on (NVSHMEM's
        // signal_op_on_stream is ordered before the stream's later work).
        shmem::quiet(op.pe);
      }
      S::sync();
      return;
    case K::kSignalWait:
      if (S::leader()) shmem::signal_wait_until(sig_addr, static_cast<shmem::Cmp>(op.op), op.value);
      S::sync();
      return;
    case K::kQuiet:
      if (S::leader()) shmem::quiet();
      S::sync();
      return;
    case K::kBarrierAll:
      shmem::barrier_all<S>();
      return;
    case K::kSyncAll:
      shmem::team_sync<S>(shmem::kTeamWorld);
      return;
    case K::kTeamSync:
      shmem::team_sync<S>(op.team);
      return;
    case K::kTeamBarrier:
      shmem::team_barrier<S>(op.team);
      return;
    case K::kBroadcast:
      shmem::broadcastmem<S>(op.team, dest, source, op.count, op.root);
      return;
    case K::kFcollect:
      shmem::fcollectmem<S>(op.team, dest, source, op.count);
      return;
    case K::kAlltoall:
      shmem::alltoallmem<S>(op.team, dest, source, op.count);
      return;
    case K::kReduce:
      detail::run_reduction<S, false>(op);
      return;
    case K::kReducescatter:
      detail::run_reduction<S, true>(op);
      return;
  }
  state::fail(
      {state::DeviceErrorCode::kBadArgument, state::this_pe(), 0, static_cast<uint64_t>(op.kind)},
      [&](state::Message& m) {
        m << "stream operation " << static_cast<uint32_t>(op.kind) << " is unknown";
      });
}

}  // namespace mori::runtime
