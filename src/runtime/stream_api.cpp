// The stream-ordered host API (shmem/stream_api.hpp): each call checks its arguments on the host,
// describes the operation as a StreamOp and hands it to the backend's stream_enqueue.
#include "mori/shmem/stream_api.hpp"

#include <cstdint>
#include <limits>
#include <mutex>
#include <string>
#include <type_traits>

#include "runtime/backend.hpp"
#include "runtime/error.hpp"
#include "runtime/host_only.hpp"
#include "runtime/runtime.hpp"
#include "runtime/stream_checks.hpp"
#include "runtime/stream_op.hpp"

namespace mori::shmem {

using runtime::report;
using runtime::Runtime;
using runtime::StreamOp;
using runtime::StreamOpKind;

namespace {

StreamOp make_op(StreamOpKind kind, const void* dest = nullptr, const void* source = nullptr,
                 uint64_t count = 0) {
  StreamOp op{};
  op.kind = kind;
  op.dest = reinterpret_cast<uint64_t>(dest);
  op.source = reinterpret_cast<uint64_t>(source);
  op.count = count;
  return op;
}

// Checks the call with check(rt) under the API lock, then enqueues `op` on `stream`.
template <typename Check>
int submit(const char* api, stream_t stream, const StreamOp& op, Check&& check) {
  runtime::host_only(api);  // every *_on_stream call: a kernel lane has no stream to order on
  std::lock_guard lock(runtime::api_mutex());
  runtime::clear_error();
  Runtime* rt = runtime::require_device(api);
  if (!rt) return -1;
  if (Status s = check(*rt); !s.ok()) return report(api, s);
  if (Status s = backend::stream_enqueue(stream, op); !s.ok()) return report(api, s);
  return 0;
}
// A signal's operation: `code` is the sig_op (atomicType) or, for a wait, the Cmp.
StreamOp signal_record(StreamOpKind kind, const uint64_t* sig_addr, uint64_t value, int code,
                       int pe) {
  StreamOp op = make_op(kind);
  op.pe = pe;
  op.sig_addr = reinterpret_cast<uint64_t>(sig_addr);
  op.value = value;
  op.op = code;
  return op;
}

int submit(const char* api, stream_t stream, const StreamOp& op) {
  return submit(api, stream, op, [](const Runtime&) { return Status{}; });
}

Status check_signal(const Runtime& rt, const uint64_t* sig_addr) {
  MORI_TRY(runtime::check_symmetric(rt, "sig_addr", sig_addr, sizeof(uint64_t)));
  if (reinterpret_cast<uint64_t>(sig_addr) % alignof(uint64_t) != 0)
    return Status::error("sig_addr is not 8-byte aligned");
  return {};
}

Status check_signal_op(atomicType sig_op) {
  if (sig_op == SIGNAL_SET || sig_op == SIGNAL_ADD) return {};
  return Status::error("sig_op " + std::to_string(static_cast<int>(sig_op)) +
                       " is not a signal operation: use SIGNAL_SET or SIGNAL_ADD");
}

// a * b, or why it overflows.
Status multiply(const char* what, uint64_t a, uint64_t b, uint64_t* out) {
  if (b != 0 && a > std::numeric_limits<uint64_t>::max() / b)
    return Status::error(std::string(what) + ": " + std::to_string(a) + " x " + std::to_string(b) +
                         " bytes overflows");
  *out = a * b;
  return {};
}

// A collective's byte counts on this PE: per member (`block`), and of its dest and source.
struct Extent {
  uint64_t dest = 0, source = 0;
};

// The team, then dest and source symmetric for their extents.
Status check_collective(const Runtime& rt, Team team, const void* dest, const void* source,
                        uint64_t block, bool dest_per_member, bool source_per_member,
                        int root = 0) {
  const state::TeamDescriptor* t = nullptr;
  MORI_TRY(runtime::check_team(rt, team, &t));
  if (root < 0 || root >= t->size)
    return Status::error("root " + std::to_string(root) + " is not a PE of team " +
                         std::to_string(team) + " (" + std::to_string(t->size) + " PEs)");
  Extent e{block, block};
  if (dest_per_member) MORI_TRY(multiply("dest", block, t->size, &e.dest));
  if (source_per_member) MORI_TRY(multiply("source", block, t->size, &e.source));
  MORI_TRY(runtime::check_symmetric(rt, "dest", dest, e.dest));
  return runtime::check_symmetric(rt, "source", source, e.source);
}

// Size and integer-ness of each element type of MORI_FOR_EACH_TYPE, by index.
#define MORI_ELEMENT_SIZE_(type, name) sizeof(type),
constexpr size_t kElementSize[] = {MORI_FOR_EACH_TYPE(MORI_ELEMENT_SIZE_)};
#undef MORI_ELEMENT_SIZE_
#define MORI_ELEMENT_INTEGRAL_(type, name) std::is_integral_v<type>,
constexpr bool kElementIntegral[] = {MORI_FOR_EACH_TYPE(MORI_ELEMENT_INTEGRAL_)};
#undef MORI_ELEMENT_INTEGRAL_
// The number the stream kernel runs each type under: its first entry's (signed char is int8_t, and
// the kernel compiles one reduction per type, runtime/stream_op_run.hpp).
#define MORI_ELEMENT_INDEX_(type, name) mori::shmem::detail::element_type_index<type>(),
constexpr int kElementIndex[] = {MORI_FOR_EACH_TYPE(MORI_ELEMENT_INDEX_)};
#undef MORI_ELEMENT_INDEX_
constexpr int kElementTypes = static_cast<int>(std::size(kElementSize));

}  // namespace

int putmem_on_stream(void* dest, const void* source, size_t bytes, int pe, stream_t stream) {
  return runtime::rma_on_stream("putmem_on_stream", false, dest, source, bytes, pe, stream);
}
int getmem_on_stream(void* dest, const void* source, size_t bytes, int pe, stream_t stream) {
  return runtime::rma_on_stream("getmem_on_stream", true, dest, source, bytes, pe, stream);
}

int putmem_signal_on_stream(void* dest, const void* source, size_t bytes, uint64_t* sig_addr,
                            uint64_t signal, atomicType sig_op, int pe, stream_t stream) {
  StreamOp op = signal_record(StreamOpKind::kPutSignal, sig_addr, signal, sig_op, pe);
  op.dest = reinterpret_cast<uint64_t>(dest);
  op.source = reinterpret_cast<uint64_t>(source);
  op.count = bytes;
  return submit("putmem_signal_on_stream", stream, op, [&](const Runtime& rt) {
    MORI_TRY(runtime::check_stream_pe(rt, pe));
    MORI_TRY(check_signal_op(sig_op));
    MORI_TRY(check_signal(rt, sig_addr));
    MORI_TRY(runtime::check_symmetric(rt, "dest", dest, bytes));
    return runtime::check_local("source", source, bytes);
  });
}

int signal_op_on_stream(uint64_t* sig_addr, uint64_t signal, atomicType sig_op, int pe,
                        stream_t stream) {
  const StreamOp op = signal_record(StreamOpKind::kSignalOp, sig_addr, signal, sig_op, pe);
  return submit("signal_op_on_stream", stream, op, [&](const Runtime& rt) {
    MORI_TRY(runtime::check_stream_pe(rt, pe));
    MORI_TRY(check_signal_op(sig_op));
    return check_signal(rt, sig_addr);
  });
}

int signal_wait_until_on_stream(uint64_t* sig_addr, Cmp cmp, uint64_t cmp_value, stream_t stream) {
  const StreamOp op = signal_record(StreamOpKind::kSignalWait, sig_addr, cmp_value, cmp, 0);
  return submit("signal_wait_until_on_stream", stream, op, [&](const Runtime& rt) {
    if (cmp < CMP_EQ || cmp > CMP_GE)
      return Status::error("cmp " + std::to_string(static_cast<int>(cmp)) +
                           " is not a comparison (CMP_EQ .. CMP_GE)");
    return check_signal(rt, sig_addr);
  });
}

int quiet_on_stream(stream_t stream) {
  return submit("quiet_on_stream", stream, make_op(StreamOpKind::kQuiet));
}
int barrier_all_on_stream(stream_t stream) {
  return submit("barrier_all_on_stream", stream, make_op(StreamOpKind::kBarrierAll));
}
int sync_all_on_stream(stream_t stream) {
  return submit("sync_all_on_stream", stream, make_op(StreamOpKind::kSyncAll));
}

namespace {
int team_op(const char* api, StreamOpKind kind, Team team, stream_t stream) {
  StreamOp op = make_op(kind);
  op.team = team;
  return submit(api, stream, op, [&](const Runtime& rt) {
    const state::TeamDescriptor* t = nullptr;
    return runtime::check_team(rt, team, &t);
  });
}
}  // namespace

int team_sync_on_stream(Team team, stream_t stream) {
  return team_op("team_sync_on_stream", StreamOpKind::kTeamSync, team, stream);
}
int barrier_on_stream(Team team, stream_t stream) {
  return team_op("barrier_on_stream", StreamOpKind::kTeamBarrier, team, stream);
}

namespace {
// A data-moving collective of `nelems` elements of `elem_size` bytes, reported as `api`.
int collective(const char* api, detail::StreamCollective kind, Team team, void* dest,
               const void* source, size_t nelems, size_t elem_size, int root, stream_t stream) {
  using detail::StreamCollective;
  static constexpr StreamOpKind kKinds[] = {StreamOpKind::kBroadcast, StreamOpKind::kFcollect,
                                            StreamOpKind::kAlltoall};
  const int k = static_cast<int>(kind);
  uint64_t bytes = 0;
  Status size = multiply("nelems", nelems, elem_size, &bytes);
  StreamOp op = make_op(kKinds[k], dest, source, bytes);
  op.team = team;
  op.root = root;
  return submit(api, stream, op, [&](const Runtime& rt) {
    MORI_TRY(size);
    const bool all = kind == StreamCollective::kAlltoall;
    return check_collective(rt, team, dest, source, bytes, kind != StreamCollective::kBroadcast,
                            all, kind == StreamCollective::kBroadcast ? root : 0);
  });
}

}  // namespace

int broadcastmem_on_stream(Team team, void* dest, const void* source, size_t bytes, int root,
                           stream_t stream) {
  return collective("broadcastmem_on_stream", detail::StreamCollective::kBroadcast, team, dest,
                    source, bytes, 1, root, stream);
}
int fcollectmem_on_stream(Team team, void* dest, const void* source, size_t bytes,
                          stream_t stream) {
  return collective("fcollectmem_on_stream", detail::StreamCollective::kFcollect, team, dest,
                    source, bytes, 1, 0, stream);
}
int alltoallmem_on_stream(Team team, void* dest, const void* source, size_t bytes,
                          stream_t stream) {
  return collective("alltoallmem_on_stream", detail::StreamCollective::kAlltoall, team, dest,
                    source, bytes, 1, 0, stream);
}

namespace detail {

int collective_on_stream(StreamCollective kind, Team team, void* dest, const void* source,
                         size_t nelems, size_t elem_size, int root, stream_t stream) {
  static constexpr const char* kNames[] = {"broadcast_on_stream", "fcollect_on_stream",
                                           "alltoall_on_stream"};
  return collective(kNames[static_cast<int>(kind)], kind, team, dest, source, nelems, elem_size,
                    root, stream);
}

int reduction_on_stream(bool scatter, Team team, void* dest, const void* source, size_t nreduce,
                        int type, ReduceOp reduce_op, stream_t stream) {
  const char* api = scatter ? "reducescatter_on_stream" : "reduce_on_stream";
  StreamOp op = make_op(scatter ? StreamOpKind::kReducescatter : StreamOpKind::kReduce, dest,
                        source, nreduce);
  op.team = team;
  op.type = type >= 0 && type < kElementTypes ? kElementIndex[type] : type;
  op.op = static_cast<int>(reduce_op);
  return submit(api, stream, op, [&](const Runtime& rt) {
    const int code = static_cast<int>(reduce_op);
    if (type < 0 || type >= kElementTypes)
      return Status::error("element type " + std::to_string(type) +
                           " is not in MORI_FOR_EACH_TYPE");
    if (code < 0 || code >= kReduceOps)
      return Status::error("op " + std::to_string(code) +
                           " is not a reduction operator (0-6: and, or, xor, min, max, sum, prod)");
    if (!kElementIntegral[type] && is_bitwise(reduce_op))
      return Status::error("op " + std::to_string(code) +
                           " (and, or, xor) takes integer types only, not floating point");
    uint64_t bytes = 0;
    MORI_TRY(multiply("nreduce", nreduce, kElementSize[type], &bytes));
    return check_collective(rt, team, dest, source, bytes, false, scatter);
  });
}

}  // namespace detail

int stream_synchronize(stream_t stream) {
  runtime::host_only("stream_synchronize");
  runtime::clear_error();
  Status s = backend::stream_synchronize(stream);
  return s.ok() ? 0 : report("stream_synchronize", s);
}

}  // namespace mori::shmem

namespace mori::runtime {

int rma_on_stream(const char* api, bool get, void* dest, const void* source, size_t bytes, int pe,
                  void* stream) {
  StreamOp op = shmem::make_op(get ? StreamOpKind::kGet : StreamOpKind::kPut, dest, source, bytes);
  op.pe = pe;
  return shmem::submit(api, static_cast<shmem::stream_t>(stream), op, [&](const Runtime& rt) {
    MORI_TRY(check_stream_pe(rt, pe));
    MORI_TRY(check_symmetric(rt, get ? "source" : "dest", get ? source : dest, bytes));
    return check_local(get ? "dest" : "source", get ? dest : source, bytes);
  });
}

}  // namespace mori::runtime
