// mori::host::Stream: order, asynchrony to the caller, launches with copied arguments, events
// across streams, the failure rules (sticky until synchronize reports it) and draining destruction.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "mori/core.hpp"
#include "mori/host/stream.hpp"

namespace plat = mori::platform;
using mori::Status;
using mori::host::Event;
using mori::host::LaunchConfig;
using mori::host::Stream;

namespace {
// A gate the test opens: items that wait on it hold their stream.
struct Gate {
  std::promise<void> promise;
  std::shared_future<void> opened = promise.get_future().share();
  void open() { promise.set_value(); }
  Stream::Work hold() {
    return [f = opened] {
      f.wait();
      return Status{};
    };
  }
};
}  // namespace

TEST_CASE("a stream runs host items and launches in the order they were enqueued") {
  Stream stream;
  std::vector<int> seen;  // written by the worker only, one item at a time
  for (int i = 0; i < 40; ++i) {
    if (i % 4 == 0) {
      // A launch of 8 lanes: lane 0 records; the others check that it runs as one item.
      REQUIRE(mori::host::launch(&stream, LaunchConfig{{2}, {4}}, [&seen, i] {
                if (plat::block_rank() == 0 && plat::thread_rank() == 0) seen.push_back(i);
              }).ok());
    } else {
      stream.enqueue([&seen, i] {
        seen.push_back(i);
        return Status{};
      });
    }
  }
  REQUIRE(stream.synchronize().ok());
  REQUIRE(seen.size() == 40);
  for (int i = 0; i < 40; ++i) CHECK(seen[i] == i);
}

TEST_CASE("enqueue and launch return before the work runs; synchronize waits for it") {
  Stream stream;
  Gate gate;
  std::atomic<int> ran{0};
  stream.enqueue(gate.hold());
  REQUIRE(mori::host::launch(&stream, LaunchConfig{{1}, {3}}, [&ran] { ran.fetch_add(1); }).ok());
  // The caller is back while the first item still holds the stream.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK(ran.load() == 0);
  CHECK_FALSE(stream.idle());
  gate.open();
  REQUIRE(stream.synchronize().ok());
  CHECK(ran.load() == 3);
  CHECK(stream.idle());
}

TEST_CASE("a launch on a stream copies its kernel's arguments at the call") {
  Stream stream;
  Gate gate;
  stream.enqueue(gate.hold());
  int value = 7, seen = 0;
  REQUIRE(
      mori::host::launch(&stream, {1}, {1}, [](int v, int* out) { *out = v; }, value, &seen).ok());
  value = 8;  // after the call: the launch keeps 7
  gate.open();
  REQUIRE(stream.synchronize().ok());
  CHECK(seen == 7);
}

TEST_CASE("a launch that cannot be configured fails at the call and queues nothing") {
  Stream stream;
  Status s = mori::host::launch(&stream, LaunchConfig{{1}, {2048}}, [] {});
  REQUIRE_FALSE(s.ok());
  CHECK(s.message().find("more than 1024 threads") != std::string::npos);
  CHECK(stream.idle());
  CHECK(stream.synchronize().ok());
}

TEST_CASE("a failure skips the work behind it until synchronize reports it, once") {
  Stream stream;
  std::atomic<int> ran{0};
  REQUIRE(mori::host::launch(&stream, LaunchConfig{{1}, {4}}, [] {
            if (plat::thread_rank() == 2) plat::trap("lane 2 gave up");
          }).ok());
  stream.enqueue([&ran] {
    ran.fetch_add(1);
    return Status{};
  });
  REQUIRE(mori::host::launch(&stream, LaunchConfig{{1}, {1}}, [&ran] { ran.fetch_add(1); }).ok());
  // Unreported, the failure also fails the device-wide synchronize, which leaves it in place.
  Status all = mori::host::synchronize_all();
  REQUIRE_FALSE(all.ok());
  CHECK(all.message().find("lane 2 gave up") != std::string::npos);
  Status s = stream.synchronize();
  REQUIRE_FALSE(s.ok());
  CHECK(s.message().find("lane 2 gave up") != std::string::npos);
  CHECK(ran.load() == 0);
  // Reported: later work runs again.
  CHECK(stream.synchronize().ok());
  CHECK(mori::host::synchronize_all().ok());
  stream.enqueue([&ran] {
    ran.fetch_add(1);
    return Status{};
  });
  CHECK(stream.synchronize().ok());
  CHECK(ran.load() == 1);
}

TEST_CASE("destroying a stream runs what is queued on it first") {
  std::atomic<int> ran{0};
  Gate gate;
  std::thread opener;
  {
    Stream stream;
    stream.enqueue(gate.hold());
    for (int i = 0; i < 5; ++i)
      REQUIRE(mori::host::launch(&stream, {1}, {2}, [&ran] { ran.fetch_add(1); }).ok());
    opener = std::thread([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      gate.open();
    });
  }
  CHECK(ran.load() == 10);
  opener.join();
}

TEST_CASE("nullptr is the default stream, and synchronize_all waits for every stream") {
  std::atomic<int> ran{0};
  Gate gate;
  Stream other;
  other.enqueue(gate.hold());
  REQUIRE(mori::host::launch(&other, {1}, {1}, [&ran] { ran.fetch_add(1); }).ok());
  REQUIRE(mori::host::launch(nullptr, {1}, {1}, [&ran] { ran.fetch_add(10); }).ok());
  REQUIRE(mori::host::default_stream()->synchronize().ok());
  CHECK(ran.load() == 10);
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    gate.open();
  });
  REQUIRE(mori::host::synchronize_all().ok());
  CHECK(ran.load() == 11);
  opener.join();
}

TEST_CASE("an event orders work across streams, as hipStreamWaitEvent") {
  Stream a, b;
  Gate gate;
  std::atomic<int> step{0};
  int a_saw = -1, b_saw = -1;
  Event never;
  mori::host::stream_wait_event(&b, never);  // never recorded: no wait
  CHECK(never.query());
  a.enqueue(gate.hold());
  a.enqueue([&] {
    a_saw = step.fetch_add(1);
    return Status{};
  });
  Event done;
  done.record(&a);
  CHECK_FALSE(done.query());
  mori::host::stream_wait_event(&b, done);
  b.enqueue([&] {
    b_saw = step.fetch_add(1);
    return Status{};
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK(b_saw == -1);  // b waits for a's record, which waits for the gate
  gate.open();
  done.synchronize();
  CHECK(done.query());
  REQUIRE(b.synchronize().ok());
  REQUIRE(a.synchronize().ok());
  CHECK(a_saw == 0);
  CHECK(b_saw == 1);
}

TEST_CASE("an event recorded behind a failure still completes, so other streams do not hang") {
  Stream a, b;
  a.enqueue([] { return Status::error("first item failed"); });
  Event e;
  e.record(&a);
  mori::host::stream_wait_event(&b, e);
  std::atomic<bool> ran{false};
  b.enqueue([&] {
    ran = true;
    return Status{};
  });
  REQUIRE(b.synchronize().ok());
  CHECK(ran.load());
  Status s = a.synchronize();
  REQUIRE_FALSE(s.ok());
  CHECK(s.message() == "first item failed");
}
