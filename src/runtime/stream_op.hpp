// One stream-ordered operation of the host API's _on_stream family (shmem/stream_api.hpp), as the
// runtime hands it to the backend: plain data, the same on both backends. On hip it is the kernel
// argument of the runtime's stream kernel (passed by value, so that enqueueing allocates nothing
// and a HIP graph can capture it); on the host backend a stream's worker runs it in a launch.
#pragma once

#include <cstdint>
#include <type_traits>

namespace mori::runtime {

enum class StreamOpKind : uint32_t {
  kPut,            // putmem: count bytes from source (local) to dest (symmetric) on pe
  kGet,            // getmem: count bytes from source (symmetric) on pe to dest (local)
  kPutSignal,      // putmem_signal: kPut, then sig_op of value on sig_addr at pe
  kSignalOp,       // signal_op: sig_op of value on sig_addr at pe
  kSignalWait,     // signal_wait_until: sig_addr (local) compared by cmp with value
  kQuiet,          // quiet
  kBarrierAll,     // barrier_all
  kSyncAll,        // sync_all
  kTeamSync,       // team_sync(team)
  kTeamBarrier,    // barrier(team)
  kBroadcast,      // broadcastmem(team, dest, source, count bytes, root)
  kFcollect,       // fcollectmem(team, dest, source, count bytes)
  kAlltoall,       // alltoallmem(team, dest, source, count bytes per PE)
  kReduce,         // reduce(team, dest, source, count elements, op) of element type `type`
  kReducescatter,  // reducescatter, as kReduce
};

struct StreamOp {
  StreamOpKind kind;
  int32_t pe;    // target PE of put, get and signal
  int32_t team;  // team of team ops and collectives
  int32_t root;  // broadcast root (a PE number in team)
  int32_t type;  // reductions: the element type's index in MORI_FOR_EACH_TYPE (core/types.hpp)
  int32_t op;    // reductions: ReduceOp; signals: atomicType (sig_op); kSignalWait: Cmp
  uint64_t dest;
  uint64_t source;
  uint64_t count;  // bytes, or elements for reductions
  uint64_t sig_addr;
  uint64_t value;  // signal value, or the value a wait compares with
};
static_assert(std::is_trivially_copyable_v<StreamOp>);
static_assert(sizeof(StreamOp) == 64);

}  // namespace mori::runtime
