// The device barrier_all over P2P and over RDMA in Thread, Warp and Block scope: many rounds in
// which every PE writes round-stamped data to every PE, passes barrier_all, and checks that it sees
// this round's data from all of them; across back-to-back launches and mixed with the host's
// barrier_all. Then a barrier that one PE never reaches, which must time out on the others and say
// so.
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "device_harness.hpp"

namespace state = mori::state;

namespace shmem = mori::shmem;
using namespace mori::test;
using mori::Block, mori::Thread, mori::Warp;

namespace {

constexpr size_t kWords = 37;  // per writer: odd, so Block shares are uneven
constexpr int kLaunches = 4;   // a host barrier_all follows the first; the rest run back to back

// Rounds per launch: the host backend runs a warp or a block as 64 or 96 threads on two cores, so
// those do fewer.
template <typename S>
constexpr int rounds_per_launch() {
  return std::is_same_v<S, Thread> ? 500 : 75;
}

uint64_t stamp(uint64_t round, int writer, size_t word) {
  return round << 32 | static_cast<uint64_t>(writer) << 16 | word;
}

// The first mismatch any participant saw, and how many there were.
struct Mismatches {
  std::atomic<uint64_t> count{0};
  std::mutex mu;
  std::string first;

  void expect(uint64_t got, uint64_t want, const char* what, int pe, size_t word) {
    if (got == want) return;
    if (count.fetch_add(1) == 0) {
      std::lock_guard lock(mu);
      first = std::string(what) + " of PE " + std::to_string(pe) + ", word " +
              std::to_string(word) + ": got " + std::to_string(got) + ", want " +
              std::to_string(want);
    }
  }
};

// Calls f(i) for this participant's share of [0, n).
template <typename S, typename F>
void share(size_t n, F&& f) {
  for (size_t i = S::rank(); i < n; i += S::size()) f(i);
}

// Symmetric: inbox[w] is written by PE w with put_nbi; own is written here with plain stores and
// read by peers with get. Local: src (the put's source) and fetched (the get's destination),
// registered buffers, which RDMA requires (registered collectively: every PE makes the same
// Buffers).
struct Buffers {
  explicit Buffers(int n)
      : inbox(static_cast<uint64_t*>(shmem::malloc(n * kWords * sizeof(uint64_t)))),
        own(static_cast<uint64_t*>(shmem::malloc(kWords * sizeof(uint64_t)))),
        src(kWords),
        fetched(n * kWords) {
    REQUIRE(inbox != nullptr);
    REQUIRE(own != nullptr);
  }
  ~Buffers() {
    CHECK(shmem::free(inbox) == 0);
    CHECK(shmem::free(own) == 0);
  }
  uint64_t* inbox;
  uint64_t* own;
  Registered<uint64_t> src, fetched;
};

// One round: write, barrier, check everything from everyone, barrier (so that nobody overwrites
// this round's data before every PE has checked it).
template <typename S>
void round_trip(const Session& s, Buffers& b, uint64_t round, Mismatches& bad) {
  share<S>(kWords, [&](size_t i) {
    b.src[i] = stamp(round, s.me, i);
    b.own[i] = stamp(round, s.me, i);
  });
  S::sync();
  for (int pe = 0; pe < s.n; ++pe)
    shmem::put_nbi<S>(b.inbox + s.me * kWords, b.src.data(), kWords, pe);
  shmem::barrier_all<S>();
  share<S>(s.n * kWords, [&](size_t i) {
    const int writer = static_cast<int>(i / kWords);
    bad.expect(b.inbox[i], stamp(round, writer, i % kWords), "put", writer, i % kWords);
  });
  for (int pe = 0; pe < s.n; ++pe)
    shmem::get_nbi<S>(b.fetched.data() + pe * kWords, b.own, kWords, pe);
  if (S::leader()) shmem::quiet();
  S::sync();
  share<S>(s.n * kWords, [&](size_t i) {
    const int owner = static_cast<int>(i / kWords);
    bad.expect(b.fetched[i], stamp(round, owner, i % kWords), "get", owner, i % kWords);
  });
  shmem::barrier_all<S>();
}

// A word of this PE's internal area (the layout is in barrier.hpp), read between launches.
uint64_t internal_word(int word) { return shmem::globalGpuStates.internal[word]; }

template <typename S>
void run_rounds(const Session& s, int rounds = rounds_per_launch<S>()) {
  Buffers b(s.n);
  Mismatches bad;
  const uint64_t epoch_before = internal_word(state::kBarrierEpoch);
  uint64_t round = 1;
  for (int l = 0; l < kLaunches; ++l) {
    launch({1}, block_for<S>(), [&] {
      for (int r = 0; r < rounds; ++r) round_trip<S>(s, b, round + r, bad);
    });
    round += rounds;
    if (l == 0) REQUIRE(shmem::barrier_all() == 0);
  }
  CHECK_MESSAGE(bad.count == 0, bad.count.load(), " mismatches, first: ", bad.first);
  REQUIRE(all_ranks(bad.count == 0));
  // The state persists in the heap: each launch went on from the previous counts, and once every
  // PE is through, the arrivals are exactly epoch * n_pes.
  REQUIRE(shmem::barrier_all() == 0);
  const uint64_t epoch = internal_word(state::kBarrierEpoch);
  CHECK(epoch - epoch_before == 2 * uint64_t{kLaunches} * rounds);
  CHECK(internal_word(state::kBarrierArrivals) + internal_word(state::kBarrierRdmaArrivals) ==
        epoch * s.n);
  // Each word counts one kind of atomic: the RDMA word the arrivals of the PEs this PE is reached
  // from over RDMA, the P2P word the rest (this PE's own among them).
  uint64_t rdma_peers = 0;
  for (int pe = 0; pe < s.n; ++pe)
    rdma_peers += (shmem::globalGpuStates.transports[pe] & 15) ==
                  static_cast<uint8_t>(mori::state::Transport::kRdma);
  CHECK(internal_word(state::kBarrierRdmaArrivals) == epoch * rdma_peers);
  REQUIRE(shmem::barrier_all() == 0);
}

// Sets MORI_SHMEM_TIMEOUT_MS for the sessions made in its lifetime, then restores the old value.
struct TimeoutEnv {
  explicit TimeoutEnv(const char* ms) {
    if (const char* v = std::getenv("MORI_SHMEM_TIMEOUT_MS")) old = v;
    setenv("MORI_SHMEM_TIMEOUT_MS", ms, 1);
  }
  ~TimeoutEnv() {
    if (old.empty())
      unsetenv("MORI_SHMEM_TIMEOUT_MS");
    else
      setenv("MORI_SHMEM_TIMEOUT_MS", old.c_str(), 1);
  }
  std::string old;
};

}  // namespace

TEST_CASE_TEMPLATE("barrier_all: every PE sees every PE's writes of this round, over launches", S,
                   Thread, Warp, Block) {
  Session s;
  run_rounds<S>(s);
}

TEST_CASE("barrier_all: scopes and host barriers mix in one session, in any order") {
  Session s;
  run_rounds<Block>(s, 10);
  run_rounds<Thread>(s);
  REQUIRE(shmem::barrier_all() == 0);
  run_rounds<Warp>(s, 10);
}

TEST_CASE_TEMPLATE("barrier_all: a barrier one PE never reaches times out on the others", S, Thread,
                   Block) {
  TimeoutEnv env("300");
  Session s;
  REQUIRE(shmem::barrier_all() == 0);
  if (s.me != 0) {  // PE 0 skips the barrier: it launches nothing
    const std::string err = launch_error({1}, block_for<S>(), [] { shmem::barrier_all<S>(); });
    state::DeviceError& record = *shmem::globalGpuStates.error;
    CHECK(record.code == 5);
    CHECK(record.pe == s.me);
    // observed is the arrival count: every PE but PE 0, unless one launched after the deadline.
    const uint64_t arrived = record.observed;
    CHECK(arrived >= 1);
    CHECK(arrived < static_cast<uint64_t>(s.n));
    const std::string want = "barrier_all timed out after 300 ms: " + std::to_string(arrived) +
                             " of " + std::to_string(s.n) + " PEs arrived (epoch 1, PE " +
                             std::to_string(s.me) + ")";
    CHECK(std::string(record.message) == want);
    CHECK_MESSAGE(err.find(want) != std::string::npos, err);
    record.code = 0;
  }
  // The counts are out of step now (PE 0 is an epoch behind): this session ends here.
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST_CASE("barrier_all: after a timed-out barrier, a new session starts in step") {
  Session s;
  CHECK(internal_word(state::kBarrierEpoch) == 0);
  run_rounds<Thread>(s);
}
