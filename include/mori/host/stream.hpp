// mori::host::Stream: the host backend's stream, an ordered queue of launches and host operations
// that a worker thread runs one after the other, asynchronously to the threads that enqueue them,
// as a HIP stream runs kernels and copies on the GPU.
//
//   mori::host::Stream stream;
//   mori::host::launch(&stream, {{1}, {64}}, produce, buf, n);   // returns at once
//   mori::shmem::putmem_on_stream(dst, buf, bytes, pe, &stream);  // runs after produce
//   mori::Status s = stream.synchronize();                        // waits for both
//
// Ordering: work runs in the order it was enqueued, each item after the previous one has ended,
// whichever thread enqueued it. Different streams run concurrently; an Event orders work across
// them (stream_wait_event, as hipStreamWaitEvent).
//
// Errors: a failed item (a launch whose lane trapped, a stream operation whose wait timed out)
// makes the stream fail, as a kernel fault does on a GPU: the items queued behind it are not run
// (each was ordered after the failure and may depend on what failed), until the failure is
// reported. synchronize() reports it: it returns the first failure since the last synchronize()
// and clears it, so that later work runs again. Until then the failure also fails
// synchronize_all() (the device-wide synchronize behind shmem::barrier_all and finalize), which
// does not clear it. Work items must not synchronize or destroy their own stream.
//
// nullptr names the default stream (default_stream()), which lives until the process ends.
#pragma once

#include <functional>
#include <memory>
#include <utility>

#include "mori/host/launch.hpp"

namespace mori::host {

class Stream {
 public:
  using Work = std::function<Status()>;

  Stream();
  // Waits for every item already queued, then stops the worker.
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  // Queues `work` after everything already on the stream and returns at once.
  void enqueue(Work work);
  // Waits for every item queued so far; returns the first failure since the last synchronize (and
  // clears it), or ok.
  Status synchronize();
  // Whether every queued item has run (hipStreamQuery's hipSuccess); does not wait.
  bool idle() const;

  struct Impl;

 private:
  friend class Event;
  std::unique_ptr<Impl> impl_;
};

// The stream nullptr names: created at first use, never destroyed.
Stream* default_stream();
inline Stream* resolve(Stream* stream) { return stream ? stream : default_stream(); }

// Waits until every live stream has run what was queued on it; returns the first unreported
// failure of any of them (without clearing it), or ok.
Status synchronize_all();

// A marker in a stream's order, as hipEvent_t: record() places it after the work queued so far;
// it completes when the stream reaches it. An event never recorded counts as complete.
class Event {
 public:
  Event();
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  void record(Stream* stream);
  // Waits for the last record() to complete (at once if none).
  void synchronize() const;
  bool query() const;

  struct State;

 private:
  friend void stream_wait_event(Stream* stream, const Event& event);
  std::shared_ptr<State> state_;
};

// Work queued on `stream` after this call waits for `event`'s last record() made before it (none:
// no wait), as hipStreamWaitEvent. The event may be recorded again or destroyed meanwhile.
void stream_wait_event(Stream* stream, const Event& event);

// Launches `kernel(args...)` with `config` after the work already on `stream`, and returns at
// once: ok, or why the configuration cannot be launched. The kernel and its arguments are copied
// (a pointer argument must stay valid until the launch runs). A lane's failure is the stream's
// (synchronize reports it).
template <typename Kernel, typename... Args>
Status launch(Stream* stream, const LaunchConfig& config, Kernel kernel, Args... args) {
  MORI_TRY(check_launch(config));
  resolve(stream)->enqueue([config, kernel = std::move(kernel), ... args = std::move(args)] {
    return launch_lanes(config, [&] { kernel(args...); });
  });
  return {};
}
template <typename Kernel, typename... Args>
Status launch(Stream* stream, platform::Dim3 grid, platform::Dim3 block, Kernel kernel,
              Args... args) {
  return launch(stream, LaunchConfig{grid, block}, std::move(kernel), std::move(args)...);
}

}  // namespace mori::host
