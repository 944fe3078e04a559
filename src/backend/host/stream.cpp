// The host backend's streams (mori/host/stream.hpp): one worker thread per stream, a queue under a
// mutex, and a registry of the live streams for synchronize_all.
#include "mori/host/stream.hpp"

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

namespace mori::host {

struct Stream::Impl {
  mutable std::mutex mu;
  std::condition_variable work_cv;          // the worker: an item was queued, or stop
  mutable std::condition_variable idle_cv;  // waiters: the queue ran dry
  // `marker`: run even behind a failure (an event's record, which other streams may be waiting
  // for).
  struct Item {
    Work work;
    bool marker = false;
  };
  std::deque<Item> queue;
  bool running = false;  // the worker is inside an item
  bool stop = false;
  Status failure;  // the first failure not yet reported by synchronize()
  std::thread worker;

  bool drained() const { return queue.empty() && !running; }

  void wait_idle(std::unique_lock<std::mutex>& lock) const {
    idle_cv.wait(lock, [&] { return drained(); });
  }

  void run() {
    std::unique_lock lock(mu);
    for (;;) {
      work_cv.wait(lock, [&] { return stop || !queue.empty(); });
      if (queue.empty()) return;
      Item item = std::move(queue.front());
      queue.pop_front();
      running = true;
      // Behind a failure nothing runs until it is reported: the item was ordered after it.
      const bool skip = !failure.ok() && !item.marker;
      lock.unlock();
      Status status = skip ? Status{} : item.work();
      item.work = nullptr;  // the captured arguments die outside the lock
      lock.lock();
      running = false;
      if (!status.ok() && failure.ok()) failure = std::move(status);
      if (queue.empty()) idle_cv.notify_all();
    }
  }

  void push(Work work, bool marker) {
    {
      std::lock_guard lock(mu);
      queue.push_back({std::move(work), marker});
    }
    work_cv.notify_one();
  }
};

namespace {

// The live streams, for synchronize_all.
std::mutex& registry_mutex() {
  static std::mutex mu;
  return mu;
}
std::vector<Stream::Impl*>& registry() {
  static std::vector<Stream::Impl*> live;
  return live;
}

}  // namespace

Stream::Stream() : impl_(std::make_unique<Impl>()) {
  impl_->worker = std::thread([impl = impl_.get()] { impl->run(); });
  std::lock_guard lock(registry_mutex());
  registry().push_back(impl_.get());
}

Stream::~Stream() {
  {
    std::lock_guard lock(registry_mutex());
    auto& live = registry();
    live.erase(std::find(live.begin(), live.end(), impl_.get()));
  }
  {
    std::unique_lock lock(impl_->mu);
    impl_->wait_idle(lock);
    impl_->stop = true;
  }
  impl_->work_cv.notify_one();
  impl_->worker.join();
}

void Stream::enqueue(Work work) { impl_->push(std::move(work), false); }

Status Stream::synchronize() {
  std::unique_lock lock(impl_->mu);
  impl_->wait_idle(lock);
  return std::exchange(impl_->failure, Status{});
}

bool Stream::idle() const {
  std::lock_guard lock(impl_->mu);
  return impl_->drained();
}

Stream* default_stream() {
  // Never destroyed: its worker may be waiting for work when the process exits.
  static Stream* const stream = new Stream;
  return stream;
}

Status synchronize_all() {
  std::lock_guard registry_lock(registry_mutex());
  Status first;
  for (Stream::Impl* impl : registry()) {
    std::unique_lock lock(impl->mu);
    impl->wait_idle(lock);
    if (first.ok() && !impl->failure.ok()) first = impl->failure;
  }
  return first;
}

// recorded: records made so far; reached: the latest record a stream has reached. A stream
// reaches its records in order, but an event may be recorded on several streams; `reached` keeps
// the largest, as HIP's event keeps only its last record.
struct Event::State {
  mutable std::mutex mu;
  mutable std::condition_variable cv;
  uint64_t recorded = 0, reached = 0;

  void wait_for(uint64_t record) const {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return reached >= record; });
  }
};

Event::Event() : state_(std::make_shared<State>()) {}
Event::~Event() = default;

void Event::record(Stream* stream) {
  uint64_t record;
  {
    std::lock_guard lock(state_->mu);
    record = ++state_->recorded;
  }
  resolve(stream)->impl_->push(
      [state = state_, record] {
        {
          std::lock_guard lock(state->mu);
          state->reached = std::max(state->reached, record);
        }
        state->cv.notify_all();
        return Status{};
      },
      true);
}

void Event::synchronize() const {
  uint64_t record;
  {
    std::lock_guard lock(state_->mu);
    record = state_->recorded;
  }
  state_->wait_for(record);
}

bool Event::query() const {
  std::lock_guard lock(state_->mu);
  return state_->reached >= state_->recorded;
}

void stream_wait_event(Stream* stream, const Event& event) {
  uint64_t record;
  {
    std::lock_guard lock(event.state_->mu);
    record = event.state_->recorded;
  }
  if (record == 0) return;
  resolve(stream)->enqueue([state = event.state_, record] {
    state->wait_for(record);
    return Status{};
  });
}

}  // namespace mori::host
