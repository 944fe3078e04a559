// Streams of the stand-in libamdhip64: each stream is an ordered queue that a worker thread runs,
// asynchronously to the caller; while a stream is captured its work goes into a graph instead.
#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

#include "standin.hpp"
#include "standin_control.h"

struct ihipGraph {
  std::vector<std::function<void()>> work;
};
struct hipGraphExec {
  std::vector<std::function<void()>> work;
};

struct ihipStream_t {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::function<void()>> queue;
  uint64_t queued = 0;  // work items ever queued
  uint64_t done = 0;    // of which run
  ihipGraph* capture = nullptr;
  bool invalidated = false;  // the capture broke a rule of capture
  bool stop = false;
  std::thread worker;
};

namespace standin {

namespace {

std::atomic<bool> held{false};
std::atomic<int> capturing{0};
std::mutex streams_mu;
std::vector<ihipStream_t*>& streams() {
  static std::vector<ihipStream_t*> s;
  return s;
}

void run(ihipStream_t* s) {
  std::unique_lock lock(s->mu);
  for (;;) {
    s->cv.wait(lock, [s] { return s->stop || (!s->queue.empty() && !held.load()); });
    if (s->queue.empty()) return;  // stopped and drained
    std::function<void()> work = std::move(s->queue.front());
    s->queue.pop_front();
    lock.unlock();
    work();
    lock.lock();
    ++s->done;
    s->cv.notify_all();
  }
}

// A forked child has only the forking thread: each stream gets a new worker there (the test
// harness forks PEs from a process that may have used streams).
void restart_workers_in_child() {
  new (&streams_mu) std::mutex;
  for (ihipStream_t* s : streams()) {
    new (&s->mu) std::mutex;
    new (&s->cv) std::condition_variable;
    new (&s->worker) std::thread(run, s);
    s->worker.detach();
  }
}

ihipStream_t* make_stream() {
  static const int registered = pthread_atfork(nullptr, nullptr, restart_workers_in_child);
  (void)registered;
  auto* s = new ihipStream_t;
  s->worker = std::thread(run, s);
  std::lock_guard lock(streams_mu);
  streams().push_back(s);
  return s;
}

// The null stream lives as long as the process: its worker is never joined.
ihipStream_t* resolve(hipStream_t stream) {
  static ihipStream_t* null_stream = [] {
    ihipStream_t* s = make_stream();
    s->worker.detach();
    return s;
  }();
  return stream ? stream : null_stream;
}

std::vector<ihipStream_t*> all_streams() {
  resolve(nullptr);
  std::lock_guard lock(streams_mu);
  return streams();
}

void wait_idle(ihipStream_t* s) {
  std::unique_lock lock(s->mu);
  // Held workers run nothing, so this wait would never end: the call under test waited for the
  // device, which is what holding the streams is there to catch.
  if (held.load() && s->done < s->queued) {
    std::fprintf(stderr, "HIP stand-in: a host wait for stream %p while its work is held\n",
                 static_cast<void*>(s));
    std::abort();
  }
  const uint64_t target = s->queued;
  s->cv.wait(lock, [&] { return s->done >= target; });
}

}  // namespace

bool capture_active() { return capturing.load() > 0; }

hipError_t capture_violation(hipError_t refusal) {
  if (!capture_active()) return hipSuccess;
  for (ihipStream_t* s : all_streams()) {
    std::lock_guard lock(s->mu);
    if (s->capture) s->invalidated = true;
  }
  return ret(refusal);
}

void enqueue(hipStream_t stream, std::function<void()> work) {
  ihipStream_t* s = resolve(stream);
  std::lock_guard lock(s->mu);
  if (s->capture) {
    s->capture->work.push_back(std::move(work));
    return;
  }
  s->queue.push_back(std::move(work));
  ++s->queued;
  s->cv.notify_all();
}

void drain(hipStream_t stream) {
  // The null stream waits for the other (blocking) streams as well, as HIP's legacy stream does.
  if (!stream) return drain_all();
  wait_idle(resolve(stream));
}

void drain_all() {
  for (ihipStream_t* s : all_streams()) wait_idle(s);
}

}  // namespace standin

using standin::ret;

extern "C" {

hipError_t hipStreamCreate(hipStream_t* stream) {
  if (!stream) return ret(hipErrorInvalidValue);
  *stream = standin::make_stream();
  return hipSuccess;
}
hipError_t hipStreamCreateWithFlags(hipStream_t* stream, unsigned int) {
  return hipStreamCreate(stream);
}
hipError_t hipStreamDestroy(hipStream_t stream) {
  if (!stream) return ret(hipErrorInvalidHandle);
  standin::wait_idle(stream);
  {
    std::lock_guard lock(standin::streams_mu);
    std::erase(standin::streams(), stream);
  }
  {
    std::lock_guard lock(stream->mu);
    stream->stop = true;
    stream->cv.notify_all();
  }
  // A worker started in a forked child is detached (restart_workers_in_child) and may still hold
  // the stream's mutex: that stream is left allocated.
  if (stream->worker.joinable()) {
    stream->worker.join();
    delete stream;
  }
  return hipSuccess;
}

// clr hip_stream.cpp, hipStreamSynchronize_common: a stream being captured cannot be waited for
// (hipErrorStreamCaptureUnsupported).
hipError_t hipStreamSynchronize(hipStream_t stream) {
  if (stream && stream->capture) return ret(hipErrorStreamCaptureUnsupported);
  if (!stream && standin::capture_active()) return ret(hipErrorStreamCaptureUnsupported);
  standin::drain(stream);
  return hipSuccess;
}

hipError_t hipStreamQuery(hipStream_t stream) {
  ihipStream_t* s = standin::resolve(stream);
  std::lock_guard lock(s->mu);
  return s->done >= s->queued ? hipSuccess : hipErrorNotReady;
}

// clr hip_graph.cpp, hipStreamBeginCapture: the null (legacy) stream cannot be captured
// (hipErrorStreamCaptureUnsupported), nor a stream already being captured (hipErrorIllegalState).
hipError_t hipStreamBeginCapture(hipStream_t stream, hipStreamCaptureMode) {
  if (!stream) return ret(hipErrorStreamCaptureUnsupported);
  std::lock_guard lock(stream->mu);
  if (stream->capture) return ret(hipErrorIllegalState);
  stream->capture = new ihipGraph;
  ++standin::capturing;
  return hipSuccess;
}

// clr hip_graph.cpp, hipStreamEndCapture_common: a stream not being captured is
// hipErrorIllegalState; an invalidated capture ends without a graph, hipErrorStreamCaptureInvalidated.
hipError_t hipStreamEndCapture(hipStream_t stream, hipGraph_t* graph) {
  if (!stream || !graph) return ret(hipErrorInvalidValue);
  std::lock_guard lock(stream->mu);
  if (!stream->capture) return ret(hipErrorIllegalState);
  const bool invalidated = stream->invalidated;
  *graph = invalidated ? nullptr : stream->capture;
  if (invalidated) delete stream->capture;
  stream->capture = nullptr;
  stream->invalidated = false;
  --standin::capturing;
  return invalidated ? ret(hipErrorStreamCaptureInvalidated) : hipSuccess;
}

hipError_t hipStreamIsCapturing(hipStream_t stream, hipStreamCaptureStatus* status) {
  if (!status) return ret(hipErrorInvalidValue);
  ihipStream_t* s = standin::resolve(stream);
  std::lock_guard lock(s->mu);
  *status = s->capture ? hipStreamCaptureStatusActive : hipStreamCaptureStatusNone;
  return hipSuccess;
}

hipError_t hipGraphInstantiate(hipGraphExec_t* exec, hipGraph_t graph, hipGraphNode_t*, char*,
                               size_t) {
  if (!exec || !graph) return ret(hipErrorInvalidValue);
  *exec = new hipGraphExec{graph->work};
  return hipSuccess;
}
hipError_t hipGraphLaunch(hipGraphExec_t exec, hipStream_t stream) {
  if (!exec) return ret(hipErrorInvalidValue);
  for (const auto& work : exec->work) standin::enqueue(stream, work);
  return hipSuccess;
}
hipError_t hipGraphExecDestroy(hipGraphExec_t exec) {
  delete exec;
  return hipSuccess;
}
hipError_t hipGraphDestroy(hipGraph_t graph) {
  delete graph;
  return hipSuccess;
}
// Nodes of a graph: one per captured work item.
hipError_t hipGraphGetNodes(hipGraph_t graph, hipGraphNode_t*, size_t* count) {
  if (!graph || !count) return ret(hipErrorInvalidValue);
  *count = graph->work.size();
  return hipSuccess;
}

void mori_hip_standin_hold_streams(int hold) {
  standin::held = hold != 0;
  if (hold) return;
  for (ihipStream_t* s : standin::all_streams()) {
    std::lock_guard lock(s->mu);
    s->cv.notify_all();
  }
}

size_t mori_hip_standin_pending(void) {
  size_t n = 0;
  for (ihipStream_t* s : standin::all_streams()) {
    std::lock_guard lock(s->mu);
    n += s->queued - s->done;
  }
  return n;
}

}  // extern "C"
