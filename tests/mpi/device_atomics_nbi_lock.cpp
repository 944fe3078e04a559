// The nbi fetching AMOs under contention and in fenced chains, and the distributed locks (part of
// mori_mpi_device_atomics, so that it runs in every P2P and RDMA variant of that suite).
//
// nbi: every thread of every PE fetch-adds its own value to a counter on every PE and fetch-incs
// another, landing the old values in symmetric memory, and reads them after its quiet: the old
// values must form one serial order ending at the exact total. Chains of compare_swap_nbi (hits
// and misses), swap_nbi and fetch_nbi separated by fence() must fetch exactly the values that
// order implies.
//
// Locks: threads of every PE take one lock in turn and increment a counter record on the last PE
// with a plain get and put inside the critical section; the count must be exact, every value seen
// once, no record torn, and the i-th holder must hold ticket i (the lock is FIFO). test_lock takes
// a free lock and fails on a held one without queueing; a set_lock that cannot get the lock traps
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

// "" if `olds` (olds[g]: the value fetch_add(values[g]) returned) are a serial order of the adds
// from 0: sorted by old value, each is the previous one plus the previous adder's value, and the
// last plus its own value is `final_value`.
std::string chain_error(const std::vector<uint64_t>& olds, const std::vector<uint64_t>& values,
                        uint64_t final_value) {
  std::vector<std::pair<uint64_t, uint64_t>> order;
  for (size_t g = 0; g < olds.size(); ++g) order.emplace_back(olds[g], values[g]);
  std::sort(order.begin(), order.end());
  uint64_t expect = 0;
  for (const auto& [old, value] : order) {
    if (old != expect)
      return "old value " + std::to_string(old) + " where the order gives " +
             std::to_string(expect);
    expect += value;
  }
  return expect == final_value ? "" : "final value " + std::to_string(final_value);
}

// ---- nbi under contention -----------------------------------------------------------------------
template <typename T>
void run_nbi_contention(const Session& s) {
  GuardedSlots<T> counters(2, 1);
  T* add = counters.slot(0);
  T* inc = counters.slot(1);
  *add = *inc = T{};
  // landing[(t * n + pe) * 2 + k]: thread t's fetch_add (k = 0) and fetch_inc (k = 1) on PE pe.
  GuardedSlots<T> landing(1, threads() * s.n * 2);
  std::vector<uint64_t> olds(threads() * s.n * 2);
  REQUIRE(shmem::barrier_all() == 0);
  hammer(s, [&](size_t g) {
    const size_t t = g / s.n;
    T* f = landing.slot(0) + t * s.n * 2;
    for (int pe = 0; pe < s.n; ++pe) {
      shmem::atomic_fetch_add_nbi(&f[pe * 2], add, static_cast<T>(g + 1), pe);
      shmem::atomic_fetch_inc_nbi(&f[pe * 2 + 1], inc, pe);
    }
    shmem::quiet();  // the old values are in f now
    for (size_t i = 0; i < size_t(s.n) * 2; ++i) olds[t * s.n * 2 + i] = static_cast<Bits<T>>(f[i]);
    return 0;
  });
  std::string bad;
  const uint64_t total = uint64_t{threads()} * s.n;
  std::vector<uint64_t> values(total);
  for (uint64_t g = 0; g < total; ++g) values[g] = g + 1;
  for (int pe = 0; pe < s.n; ++pe) {  // what every thread fetched from PE pe, gathered there
    std::vector<uint64_t> by_add(threads()), by_inc(threads());
    for (size_t t = 0; t < threads(); ++t) {
      by_add[t] = olds[(t * s.n + pe) * 2];
      by_inc[t] = olds[(t * s.n + pe) * 2 + 1];
    }
    const std::vector<uint64_t> all_add = gather_by_g(s, by_add, pe);
    const std::vector<uint64_t> all_inc = gather_by_g(s, by_inc, pe);
    if (s.me != pe) continue;
    const std::string e = chain_error(all_add, values, static_cast<uint64_t>(*add));
    if (!e.empty() || static_cast<uint64_t>(*add) != total * (total + 1) / 2)
      bad += "fetch_add_nbi: " + (e.empty() ? std::string("total") : e) + "; ";
    const std::string i = permutation_error(all_inc, 0);
    if (!i.empty() || static_cast<uint64_t>(*inc) != total)
      bad += "fetch_inc_nbi: " + (i.empty() ? std::string("total") : i) + "; ";
  }
  CHECK_MESSAGE(bad.empty(), bad);
  REQUIRE(all_ranks(bad.empty()));
}

// ---- nbi chains, ordered by fence ---------------------------------------------------------------
// Each PE's thread for target PE pe runs, on its own two words there (both 0):
//   k = 0 .. kSteps-1:  compare_swap_nbi(k -> k + 1) (hits), fence, compare_swap_nbi(k -> 100 + k)
//                       (misses: the word holds k + 1), swap_nbi(k + 1) on the second word, fence
//   then fetch_nbi of the first word
// so it must fetch k, k + 1, k per step, then kSteps, and leave kSteps in both words.
template <typename T>
void run_nbi_chains(const Session& s) {
  constexpr int kSteps = 6, kPer = 3 * kSteps + 1;
  GuardedSlots<T> words(2 * s.n, 1);
  for (int w = 0; w < 2 * s.n; ++w) *words.slot(w) = T{};
  GuardedSlots<T> landing(1, kPer * s.n);
  std::vector<T> got(kPer * s.n);
  REQUIRE(shmem::barrier_all() == 0);
  launch({1}, {static_cast<unsigned>(s.n)}, [&] {
    const int pe = platform::thread_rank();
    T* f = landing.slot(0) + kPer * pe;
    T* cas = words.slot(2 * s.me);
    T* swap = words.slot(2 * s.me + 1);
    for (int k = 0; k < kSteps; ++k) {
      shmem::atomic_compare_swap_nbi(&f[3 * k], cas, T(k), T(k + 1), pe);
      shmem::fence(pe);
      shmem::atomic_compare_swap_nbi(&f[3 * k + 1], cas, T(k), T(100 + k), pe);
      shmem::atomic_swap_nbi(&f[3 * k + 2], swap, T(k + 1), pe);
      shmem::fence(pe);
    }
    shmem::atomic_fetch_nbi(&f[3 * kSteps], static_cast<const T*>(cas), pe);
    shmem::quiet();
    for (int i = 0; i < kPer; ++i) got[kPer * pe + i] = f[i];
  });
  REQUIRE(shmem::barrier_all() == 0);
  std::string bad;
  for (int pe = 0; pe < s.n; ++pe) {
    for (int k = 0; k < kSteps; ++k) {
      const T* g = &got[kPer * pe + 3 * k];
      if (g[0] != T(k) || g[1] != T(k + 1) || g[2] != T(k))
        bad += "step " + std::to_string(k) + " on PE " + std::to_string(pe) + "; ";
    }
    if (got[kPer * pe + 3 * kSteps] != T(kSteps)) bad += "fetch_nbi on PE " + std::to_string(pe);
  }
  for (int w = 0; w < 2 * s.n; ++w)
    if (*words.slot(w) != T(kSteps)) bad += "final word " + std::to_string(w) + "; ";
  CHECK_MESSAGE(bad.empty(), bad);
  REQUIRE(all_ranks(bad.empty()));
}

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

// A width each: 4-byte results run blocking over RDMA, 8-byte ones land by the NIC.
TEST_CASE_TEMPLATE("nbi contention (one serial order, exact totals) and fenced chains", T, uint32_t,
                   int64_t) {
  Session s;
  run_nbi_contention<T>(s);
  run_nbi_chains<T>(s);
}

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
