// AMOs from every PE, the owner of the memory included, on one location (bringup review B12), and
// RDMA AMOs over NICs without atomics (B4).
//
// Over RDMA (mpi.rdma_<nic>.device_amo_owner) every other PE's AMOs reach a PE's memory through the
// NIC while its own reach it directly; the software NIC reports IBV_ATOMIC_HCA, so the runtime
// routes the owner's AMOs through its NIC too (runtime/amo_route.hpp). Without that the owner's CPU
// atomics raced with the NIC's locked read-modify-writes on a registered buffer and lost updates,
// and set_lock on PE 0 timed out. Each case checks exact counts on every PE, on the heap and, over
// RDMA, on a registered buffer (symmetric: every PE registers the same size in the same order).
#include <memory>
#include <string>
#include <vector>

#include "amo_helpers.hpp"

namespace shmem = mori::shmem;
using namespace mori::test;

namespace {

// Where the counters live: the heap, or a registered (non-heap) buffer.
template <typename T>
class Words {
 public:
  Words(bool registered, size_t n) {
    if (registered)
      reg_ = std::make_unique<Registered<T>>(n);
    else
      heap_ = std::make_unique<GuardedSlots<T>>(1, n);
    for (size_t i = 0; i < n; ++i) data()[i] = T{};
  }
  T* data() { return reg_ ? reg_->data() : heap_->slot(0); }

 private:
  std::unique_ptr<Registered<T>> reg_;
  std::unique_ptr<GuardedSlots<T>> heap_;
};

// Every thread of every PE increments word 0 and fetch-adds 1 to word 1 of every PE, itself
// included: each PE's words end at exactly threads * n, and the fetched values on each PE are a
// permutation of 0 .. threads * n - 1 (all distinct).
template <typename T>
std::string run_counting(const Session& s, bool registered) {
  Words<T> words(registered, 2);
  T* inc = words.data();
  T* add = inc + 1;
  REQUIRE(shmem::barrier_all() == 0);
  std::vector<std::vector<uint64_t>> fetched(s.n);
  std::vector<uint64_t> mine(threads() * s.n);
  hammer(s, [&](size_t g) {
    const size_t t = g / s.n;
    for (int k = 0; k < s.n; ++k) {
      const int pe = (s.me + k) % s.n;  // spread: not every thread on PE 0 first
      shmem::atomic_inc(inc, pe);
      mine[t * s.n + pe] = static_cast<uint64_t>(shmem::atomic_fetch_add(add, T{1}, pe));
    }
    return 0;
  });
  std::string bad;
  const uint64_t total = uint64_t{threads()} * s.n;
  if (static_cast<uint64_t>(*inc) != total)
    bad += "atomic_inc: " + std::to_string(static_cast<uint64_t>(*inc)) + " of " +
           std::to_string(total) + "; ";
  if (static_cast<uint64_t>(*add) != total)
    bad += "atomic_fetch_add: " + std::to_string(static_cast<uint64_t>(*add)) + " of " +
           std::to_string(total) + "; ";
  for (int pe = 0; pe < s.n; ++pe) {
    std::vector<uint64_t> by_thread(threads());
    for (size_t t = 0; t < threads(); ++t) by_thread[t] = mine[t * s.n + pe];
    const std::vector<uint64_t> all = gather_by_g(s, by_thread, pe);
    if (s.me == pe) {
      const std::string e = permutation_error(all, 0);
      if (!e.empty()) bad += "fetched values: " + e + "; ";
    }
  }
  REQUIRE(shmem::barrier_all() == 0);
  return bad;
}

// Threads of every PE take one lock (its home is PE 0, which takes part) and increment a counter
// on PE 0 with a plain g and p inside the critical section: exactly threads * n at the end.
std::string run_lock(const Session& s, bool registered) {
  Words<long> lock_word(registered, 1);
  Words<uint64_t> counter(registered, 1);
  long* lock = lock_word.data();
  uint64_t* count = counter.data();
  REQUIRE(shmem::barrier_all() == 0);
  constexpr int kRounds = 4;
  hammer(s, [&](size_t) {
    for (int r = 0; r < kRounds; ++r) {
      shmem::set_lock(lock);
      shmem::p(count, shmem::g(count, 0) + 1, 0);
      shmem::clear_lock(lock);
    }
    return 0;
  });
  const uint64_t expect = uint64_t{threads()} * s.n * kRounds;
  std::string bad;
  if (s.me == 0 && *count != expect)
    bad = "lock counter " + std::to_string(*count) + " of " + std::to_string(expect);
  REQUIRE(shmem::barrier_all() == 0);
  return bad;
}

}  // namespace

TEST_CASE_TEMPLATE("AMOs from every PE, the owner included: exact counts, distinct fetches", T,
                   uint32_t, uint64_t, int64_t) {
  Session s;
  // A peer's registered buffer is private memory of its process: only RDMA reaches it.
  for (bool registered : {false, over_rdma()}) {
    CAPTURE(registered);
    const std::string bad = run_counting<T>(s, registered);
    CHECK_MESSAGE(bad.empty(), bad);
    REQUIRE(all_ranks(bad.empty()));
  }
}

TEST_CASE("set_lock / clear_lock with the home PE contending: exact count") {
  Session s;
  // A peer's registered buffer is private memory of its process: only RDMA reaches it.
  for (bool registered : {false, over_rdma()}) {
    CAPTURE(registered);
    const std::string bad = run_lock(s, registered);
    CHECK_MESSAGE(bad.empty(), bad);
    REQUIRE(all_ranks(bad.empty()));
  }
}

// B4: a NIC that reports atomic_cap IBV_ATOMIC_NONE (the software NIC, told so) is opened; puts
// still work, and an AMO over RDMA traps at the call saying why. The PE's own AMOs stay P2P.
TEST_CASE("a NIC without atomics: puts work, RDMA AMOs trap with the reason") {
  if (!over_rdma()) return;
  ScopedEnv cap("MORI_SOFTNIC_ATOMIC_CAP", "none");
  Session s;
  GuardedSlots<uint64_t> slot(1, 1);
  uint64_t* word = slot.slot(0);
  *word = 0;
  REQUIRE(shmem::barrier_all() == 0);
  const int peer = (s.me + 1) % s.n;
  launch({1}, {1}, [&] { shmem::atomic_add(word, uint64_t{5}, s.me); });  // its own: P2P
  CHECK(*word == 5);
  REQUIRE(shmem::barrier_all() == 0);
  launch({1}, {1}, [&] {
    shmem::p(word, uint64_t(100 + s.me), peer);
    shmem::quiet();
  });
  REQUIRE(shmem::barrier_all() == 0);
  CHECK(*word == uint64_t(100 + (s.me + s.n - 1) % s.n));
  expect_device_failure([&] { shmem::atomic_add(word, uint64_t{1}, peer); },
                        "atomic_add: PE " + std::to_string(peer) +
                            " is reached over RDMA, and this job's NICs have no atomics "
                            "(atomic_cap IBV_ATOMIC_NONE, see the init log)",
                        state::DeviceErrorCode::kNotReachable, peer, nullptr);
  expect_device_failure([&] { shmem::atomic_fetch_inc(word, peer); },
                        "atomic_fetch_inc: PE " + std::to_string(peer) +
                            " is reached over RDMA, and this job's NICs have no atomics "
                            "(atomic_cap IBV_ATOMIC_NONE, see the init log)",
                        state::DeviceErrorCode::kNotReachable, peer, nullptr);
  REQUIRE(shmem::barrier_all() == 0);
}
