// PLACEHOLDER for the stream API's device side (the stream API's own stream_op_run.hpp replaces
// this file at merge): runs one StreamOp in the calling scope. Here only kPut and kGet, over P2P
// (globalGpuStates.peer_bases), and kQuiet; any other kind traps.
#pragma once

#include "mori/core/copy.hpp"
#include "mori/core/scope.hpp"
#include "mori/platform.hpp"
#include "mori/state/gpu_states.hpp"
#include "runtime/stream_op.hpp"

namespace mori::runtime {

template <Scope S>
MORI_DEVICE void run_stream_op(const StreamOp& op) {
  const state::GpuStates& st = shmem::globalGpuStates;
  const bool moves = op.kind == StreamOpKind::kPut || op.kind == StreamOpKind::kGet;
  if (moves) {
    const uint64_t peer = st.peer_bases[op.pe];
    if (!peer) platform::trap("stream op: the target PE is not P2P-reachable");
    const bool put = op.kind == StreamOpKind::kPut;
    const uint64_t remote = peer + ((put ? op.dest : op.source) - st.heap_base);
    char* dst = reinterpret_cast<char*>(put ? remote : op.dest);
    const char* src = reinterpret_cast<const char*>(put ? op.source : remote);
    detail::for_each_share<S>(op.count, [&](size_t i) { dst[i] = src[i]; });
  }
  if (!moves && op.kind != StreamOpKind::kQuiet) platform::trap("stream op: kind not implemented");
  S::sync();
}

}  // namespace mori::runtime
