// The RDMA engine under the software NIC's faults (MORI_SOFTNIC_FAULT) and a bad key: an error
// completion fails the kernel with the decoded syndrome, the PE and the queue indices in the
// device-error record; a dropped completion makes quiet time out with the queue indices; a
// delayed doorbell only delays; a QP in the error state flushes what later launches post, which
// fail at once. Nothing hangs, and finalize works after each. Run only as
// mpi.rdma_<nic>.rdma_faults.
#include <chrono>
#include <string>

#include "device_harness.hpp"
#include "rdma_env.hpp"

namespace state = mori::state;

namespace shmem = mori::shmem;
using namespace mori::test;
using state::DeviceErrorCode;

namespace {

constexpr int kWords = 16;

// The queue part of the engine's messages: "qp <n> posted <p>, completed <c>, cq consumed <k>
// (PE <pe>)"; cq consumed depends on the provider, so the text is matched up to it.
std::string queue_text(int peer, int qps, uint64_t posted, uint64_t completed) {
  return "qp " + std::to_string(softnic_qpn(peer, 0, qps)) + " posted " + std::to_string(posted) +
         ", completed " + std::to_string(completed) + ", cq consumed ";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// kWords zeroed symmetric words, freed at the end of the case.
struct Words {
  Words() {
    d = static_cast<uint64_t*>(shmem::malloc(kWords * sizeof(uint64_t)));
    REQUIRE(d != nullptr);
    for (int i = 0; i < kWords; ++i) d[i] = 0;
    REQUIRE(shmem::barrier_all() == 0);
  }
  ~Words() { CHECK(shmem::free(d) == 0); }
  uint64_t* d = nullptr;
};

}  // namespace

TEST_CASE("rdma faults: an error completion traps with the syndrome, PE and queue indices") {
  ScopedEnv fault("MORI_SOFTNIC_FAULT", "error:5");
  Session s;
  const int peer = (s.me + 1) % s.n;
  Words words;
  uint64_t* d = words.d;
  // WQEs 0..9 on qp 0 to the peer; the NIC fails WQE 5 and executes nothing after it.
  const std::string failure = launch_error({1}, {1}, [&] {
    for (int i = 0; i < 10; ++i) shmem::p(&d[i], uint64_t(100 + i), peer);
    shmem::quiet();
  });
  const std::string expected =
      "RDMA " + nic_name() + " error completion: " + injected_status_text() + " (status ";
  CHECK_MESSAGE(contains(failure, expected), failure);
  CHECK_MESSAGE(contains(failure, queue_text(peer, shmem::num_qp_per_pe(), 10, 5)), failure);
  CHECK_MESSAGE(contains(failure, "(PE " + std::to_string(peer) + ")"), failure);
  const state::DeviceError* record = shmem::globalGpuStates.error;
  CHECK(record->code == static_cast<uint32_t>(DeviceErrorCode::kCompletionError));
  CHECK(record->pe == peer);
  CHECK(record->queue.qp == softnic_qpn(peer, 0, shmem::num_qp_per_pe()));
  CHECK(record->queue.posted == 10);
  CHECK(record->queue.completed == 5);
  CHECK_MESSAGE(contains(failure, record->message), record->message);
  // The host API reads the record as one line, and clears it.
  const std::string read = shmem::device_error();
  CHECK_MESSAGE(read.rfind("RDMA error completion: " + expected, 0) == 0, read);
  CHECK(record->code == 0u);
  REQUIRE(shmem::barrier_all() == 0);
  // The peer's QP executed WQEs 0..4 in order and nothing from 5 on.
  bool ok = true;
  for (int i = 0; i < kWords; ++i) ok &= d[i] == (i < 5 ? uint64_t(100 + i) : 0);
  CHECK(ok);
  REQUIRE(all_ranks(ok && !failure.empty()));
}

TEST_CASE("rdma faults: a dropped completion makes quiet time out with the queue indices") {
  ScopedEnv fault("MORI_SOFTNIC_FAULT", "drop:3");
  ScopedEnv timeout("MORI_SHMEM_TIMEOUT_MS", "300");
  Session s;
  const int peer = (s.me + 1) % s.n;
  Words words;
  uint64_t* d = words.d;
  // Exactly WQEs 0..3: the completion of the last one is dropped, so none covers it.
  const auto start = std::chrono::steady_clock::now();
  const std::string failure = launch_error({1}, {1}, [&] {
    for (int i = 0; i < 4; ++i) shmem::p(&d[i], uint64_t(7), peer);
    shmem::quiet();
  });
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  CHECK_MESSAGE(contains(failure, "quiet timed out after 300 ms: " +
                                      queue_text(peer, shmem::num_qp_per_pe(), 4, 3)),
                failure);
  CHECK(shmem::globalGpuStates.error->code == static_cast<uint32_t>(DeviceErrorCode::kTimeout));
  CHECK(shmem::globalGpuStates.error->queue.completed == 3);
  CHECK(ms >= 300);
  CHECK(ms < 20000);
  const_cast<state::DeviceError*>(shmem::globalGpuStates.error)->code = 0;
  REQUIRE(all_ranks(!failure.empty()));
}

TEST_CASE("rdma faults: a delayed doorbell delays, and the data still arrives") {
  ScopedEnv fault("MORI_SOFTNIC_FAULT", "delay_ms:150");
  Session s;
  const int peer = (s.me + 1) % s.n, from = (s.me + s.n - 1) % s.n;
  Words words;
  uint64_t* d = words.d;
  const auto start = std::chrono::steady_clock::now();
  launch({1}, {1}, [&] {
    shmem::p(&d[0], uint64_t(1000 + s.me), peer);
    shmem::quiet();
  });
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  CHECK(ms >= 150);
  REQUIRE(shmem::barrier_all() == 0);
  CHECK(d[0] == uint64_t(1000 + from));
  REQUIRE(all_ranks(d[0] == uint64_t(1000 + from)));
}

TEST_CASE("rdma faults: a wrong rkey completes with a remote access error naming the key") {
  Session s;
  const int peer = (s.me + 1) % s.n;
  Words words;
  uint64_t* d = words.d;
  auto* rkeys = const_cast<uint32_t*>(shmem::globalGpuStates.regions[-1].rkeys);  // the heap's
  const uint32_t saved = rkeys[peer];
  rkeys[peer] = 0xdead;
  const std::string failure = launch_error({1}, {1}, [&] {
    shmem::p(&d[0], uint64_t(1), peer);
    shmem::quiet();
  });
  rkeys[peer] = saved;
  CHECK_MESSAGE(contains(failure, "RDMA " + nic_name() +
                                      " error completion: " + remote_access_text() + " (status "),
                failure);
  CHECK_MESSAGE(contains(failure, queue_text(peer, shmem::num_qp_per_pe(), 1, 0)), failure);
  CHECK(shmem::globalGpuStates.error->code ==
        static_cast<uint32_t>(DeviceErrorCode::kCompletionError));
  const_cast<state::DeviceError*>(shmem::globalGpuStates.error)->code = 0;
  REQUIRE(all_ranks(!failure.empty()));
}

TEST_CASE(
    "rdma faults: a QP in the error state flushes later work: the next launch fails at once") {
  Session s;
  const int peer = (s.me + 1) % s.n;
  Words words;
  auto* rkeys = const_cast<uint32_t*>(shmem::globalGpuStates.regions[-1].rkeys);  // the heap's
  const uint32_t saved = rkeys[peer];
  rkeys[peer] = 0xdead;
  // A fetching atomic with a bad key breaks the QP: its own error completion.
  std::string failure = launch_error(
      {1}, {1}, [&] { shmem::atomic_fetch_inc(reinterpret_cast<uint32_t*>(words.d), peer); });
  rkeys[peer] = saved;
  CHECK_MESSAGE(contains(failure, "RDMA " + nic_name() +
                                      " error completion: " + remote_access_text() + " (status "),
                failure);
  CHECK(std::string(shmem::device_error()).rfind("RDMA error completion", 0) == 0);
  // The next launch on the broken QP, with a good key: its WQEs are flushed, and both a fetching
  // atomic and a quiet fail at once with an error completion (MORI_SHMEM_TIMEOUT_MS is 20 s here).
  for (int round = 0; round < 2; ++round) {
    CAPTURE(round);
    const auto start = std::chrono::steady_clock::now();
    failure = launch_error({1}, {1}, [&] {
      if (round == 0) {
        shmem::atomic_fetch_inc(words.d, peer);
      } else {
        shmem::p(&words.d[1], uint64_t(5), peer);
        shmem::quiet();
      }
    });
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    CHECK_MESSAGE(contains(failure, "RDMA " + nic_name() +
                                        " error completion: work request flushed (status "),
                  failure);
    CHECK(ms < 5000);
    CHECK(std::string(shmem::device_error()).rfind("RDMA error completion", 0) == 0);
  }
  REQUIRE(shmem::barrier_all() == 0);
  CHECK(words.d[0] == 0);  // neither the failed nor the flushed atomics touched the target
  CHECK(words.d[1] == 0);
  REQUIRE(all_ranks(!failure.empty()));
}
