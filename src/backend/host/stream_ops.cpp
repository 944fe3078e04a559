// The host backend's side of the stream API (runtime/backend.hpp): an operation is a one-lane
// launch on the caller's mori::host::Stream, running the device call (runtime/stream_op_run.hpp) on
// the stream's worker after the work queued before it.
#include "mori/host/stream.hpp"
#include "runtime/backend.hpp"
#include "runtime/stream_op_run.hpp"

namespace mori::backend {

namespace {
host::Stream* host_stream(void* stream) {
  return host::resolve(static_cast<host::Stream*>(stream));
}
}  // namespace

Status stream_enqueue(void* stream, const runtime::StreamOp& op) {
  // One lane, the Thread scope: a launch of one thread is the cheapest on this backend, and a
  // Thread-scope call moves the bytes of a Block-scope one.
  return host::launch(
      host_stream(stream), host::LaunchConfig{{1}, {1}},
      [](const runtime::StreamOp& o) { runtime::run_stream_op<Thread>(o); }, op);
}

Status stream_synchronize(void* stream) { return host_stream(stream)->synchronize(); }

}  // namespace mori::backend
