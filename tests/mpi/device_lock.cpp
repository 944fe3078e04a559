// The distributed locks of shmem/lock.hpp (part of mori_mpi_device_atomics, so that it runs in
// every P2P and RDMA variant of that suite).
//
// Threads of every PE take one lock in turn and increment a counter record on the last PE with a
// plain get and put inside the critical section; the count must be exact, every value seen once,
// no record torn, and the i-th holder must hold ticket i (the lock is FIFO). test_lock takes a free
// lock and fails on a held one without queueing; a set_lock that cannot get the lock traps at the
// deadline.
// at the deadline.
#include <algorithm>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "amo_helpers.hpp"

namespace shmem = mori::shmem;
namespace platform = mori::platform;
using namespace mori::test;

namespace {

// ---- locks --------------------------------------------------------------------------------------
// The counter is a record of kWords equal words on the last PE, far larger than any provider's
// inline write, so that over RDMA each update is a write of registered memory whose bytes the
// adversarial NIC lands in 64-byte chunks, in random order, over several rounds: a holder that released before its put completed would let
// the next one read a stale or torn record. Inside the critical section a holder gets the record,
// reads the lock word on PE 0 (lock.hpp: the next ticket in the high half, the one served in the
// low), and puts the record back incremented with put_nbi, which clear_lock's quiet completes.
struct Acquisition {
  uint64_t seen;    // the count the holder read
  uint64_t served;  // the ticket the lock served then
  uint64_t torn;    // 1 if the record's words differed
};

void run_lock_counting(const Session& s) {
  constexpr unsigned kThreads = 4, kWords = 64;
  const unsigned kRounds = over_rdma() ? 4 : 16;
  GuardedSlots<long> lock_slot(1, 1);
  GuardedSlots<uint64_t> record_slot(1, kWords), scratch(kThreads, kWords);
  long* lock = lock_slot.slot(0);
  uint64_t* record = record_slot.slot(0);
  *lock = 0;
  std::fill(record, record + kWords, 0);
  const int target = s.n - 1;
  std::vector<Acquisition> mine(kThreads * kRounds);
  REQUIRE(shmem::barrier_all() == 0);
  launch({1}, {kThreads}, [&] {
    const unsigned t = platform::thread_rank();
    uint64_t* copy = scratch.slot(t);
    for (unsigned r = 0; r < kRounds; ++r) {
      shmem::set_lock(lock);
      shmem::get(copy, record, kWords, target);
      const uint64_t seen = copy[0];
      const bool torn = std::any_of(copy, copy + kWords, [&](uint64_t w) { return w != seen; });
      const uint64_t word = shmem::atomic_fetch(reinterpret_cast<uint64_t*>(lock), 0);
      std::this_thread::yield();  // widen the window a broken lock would let others into
      std::fill(copy, copy + kWords, seen + 1);
      shmem::put_nbi(record, copy, kWords, target);
      mine[t * kRounds + r] = {seen, word & 0xffffffffu, torn};
      shmem::clear_lock(lock);
    }
    shmem::quiet();  // the last release too is complete before the lock word is checked
  });
  REQUIRE(shmem::barrier_all() == 0);
  const uint64_t total = uint64_t{kThreads} * kRounds * s.n;
  constexpr int kFields = sizeof(Acquisition) / sizeof(uint64_t);
  std::vector<Acquisition> all(s.me == 0 ? total : 0);
  MPI_Gather(mine.data(), static_cast<int>(mine.size() * kFields), MPI_UINT64_T, all.data(),
             static_cast<int>(mine.size() * kFields), MPI_UINT64_T, 0, MPI_COMM_WORLD);
  std::string bad;
  if (s.me == 0) {
    std::vector<uint64_t> seen;
    for (const Acquisition& a : all) {
      seen.push_back(a.seen);
      if (a.torn && bad.empty()) bad = "holder " + std::to_string(a.seen) + " read a torn record";
      if (a.served != a.seen && bad.empty())  // FIFO: the i-th holder holds ticket i
        bad = "holder " + std::to_string(a.seen) + " held ticket " + std::to_string(a.served);
    }
    if (bad.empty()) bad = permutation_error(seen, 0);
    if (bad.empty() && *lock != static_cast<long>(total << 32 | total)) bad = "final lock word";
  }
  if (s.me == target && std::count(record, record + kWords, total) != kWords)
    bad += "final count " + std::to_string(record[0]);
  CHECK_MESSAGE(bad.empty(), bad);
  REQUIRE(all_ranks(bad.empty()));
}

// test_lock: 0 and the lock on a free lock; 1 on a held one, from every PE and from the holder,
// without taking a ticket (a queued ticket would leave the lock held forever).
void run_test_lock(const Session& s) {
  GuardedSlots<long> lock_slot(1, 1);
  long* lock = lock_slot.slot(0);
  *lock = 0;
  const int holder = s.n - 1;
  REQUIRE(shmem::barrier_all() == 0);
  int first = -1;
  if (s.me == holder) launch({1}, {1}, [&] { first = shmem::test_lock(lock); });
  REQUIRE(shmem::barrier_all() == 0);
  int busy[2] = {-1, -1};
  launch({1}, {2}, [&] { busy[platform::thread_rank()] = shmem::test_lock(lock); });
  REQUIRE(shmem::barrier_all() == 0);
  if (s.me == holder) launch({1}, {1}, [&] { shmem::clear_lock(lock); });
  REQUIRE(shmem::barrier_all() == 0);
  int again = -1;
  if (s.me == 0)
    launch({1}, {1}, [&] {
      again = shmem::test_lock(lock);
      shmem::clear_lock(lock);
    });
  REQUIRE(shmem::barrier_all() == 0);
  if (s.me == holder) CHECK(first == 0);
  CHECK(busy[0] == 1);
  CHECK(busy[1] == 1);
  if (s.me == 0) {
    CHECK(again == 0);
    CHECK(*lock == static_cast<long>(uint64_t{2} << 32 | 2));  // two tickets, both served
  }
  REQUIRE(all_ranks(true));
}

}  // namespace

TEST_CASE("set_lock / clear_lock: exact count under contention, tickets served in order") {
  Session s;
  run_lock_counting(s);
}
TEST_CASE("test_lock: takes a free lock, fails on a held one without queueing") {
  Session s;
  run_test_lock(s);
}
TEST_CASE("set_lock traps at the deadline with the tickets in its message") {
  ScopedTimeout timeout("200");
  Session s;
  GuardedSlots<long> lock_slot(1, 1);
  long* lock = lock_slot.slot(0);
  *lock = 0;
  REQUIRE(shmem::barrier_all() == 0);
  if (s.me == 0) launch({1}, {1}, [&] { shmem::set_lock(lock); });  // held, never cleared
  REQUIRE(shmem::barrier_all() == 0);
  if (s.me == s.n - 1)
    expect_device_failure(
        [&] { shmem::set_lock(lock); },
        "set_lock timed out after 200 ms: lock " + hex_text(lock) +
            " on PE 0 serves ticket 0, this thread holds ticket 1 (next ticket 2)",
        state::DeviceErrorCode::kTimeout, 0, lock, 0);
  REQUIRE(shmem::barrier_all() == 0);
}
