// Runs one stream operation (runtime/stream_op.hpp) with the device API, in scope S: every
// participant of the scope calls it with the same op. The hip backend's stream kernel and the host
// backend's stream worker both run this, so an _on_stream call does on each backend what the
// device call of the same name does in a kernel, with the device API's checks and deadlines.
#pragma once

#include <cstdint>

#include "mori/core/types.hpp"
#include "mori/shmem/device_api.hpp"
#include "runtime/stream_op.hpp"

namespace mori::runtime {

namespace detail {

// reduce or reducescatter of element type number `type` of MORI_FOR_EACH_TYPE (the host API
// checked the number and the operator; the device call checks them again).
template <Scope S, bool kScatter>
MORI_DEVICE void run_reduction(const StreamOp& op) {
  int index = 0;
#define MORI_STREAM_REDUCE_TYPE(elem, name)                            \
  if (op.type == index++) {                                            \
    auto* dest = reinterpret_cast<elem*>(op.dest);                     \
    auto* source = reinterpret_cast<const elem*>(op.source);           \
    if constexpr (kScatter)                                            \
      shmem::reducescatter<S>(op.team, dest, source, op.count, op.op); \
    else                                                               \
      shmem::reduce<S>(op.team, dest, source, op.count, op.op);        \
    return;                                                            \
  }
  MORI_FOR_EACH_TYPE(MORI_STREAM_REDUCE_TYPE)
#undef MORI_STREAM_REDUCE_TYPE
  state::fail(
      {state::DeviceErrorCode::kBadArgument, state::this_pe(), 0, static_cast<uint64_t>(op.type)},
      [&](state::Message& m) {
        m << "reduce_on_stream: element type " << op.type << " is not in MORI_FOR_EACH_TYPE";
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
