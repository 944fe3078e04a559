// put_signal_nbi / putmem_signal_nbi, signal_wait_until and signal_fetch over P2P and over RDMA,
// for every element type and every scope: in a ring and all-to-all, with SIGNAL_SET and
// SIGNAL_ADD, over several rounds, from a registered source buffer (as RDMA requires). The
// receiver checks the data inside the same kernel, right after its wait returns, so the test sees
// the signal-after-data ordering itself and not a later barrier's. The blocking put_signal /
// putmem_signal the same way, with the source overwritten as soon as the call returns; signal_op's
// exact counts and stores. Then the checks of a bad signal operation and the timeout of a signal
// that never comes.
#include <string>
#include <vector>

#include "wait_helpers.hpp"

namespace state = mori::state;

using namespace mori;  // shmem and the scope tags
using namespace mori::test;

namespace {

constexpr size_t kElems = 777;  // not a multiple of 16 bytes for any type: tails are exercised
constexpr int kRounds = 3;

enum class Pattern { kRing, kAllToAll };

// What PE `writer` sends in round `round`, element i.
template <typename T>
T sent(int writer, int round, size_t i) {
  return value_of<T>(writer, i + 13 * round);
}
// The signal a receiver expects from one writer after `round` (0-based): SET stores round + 1, ADD
// adds round + 1 each round.
uint64_t signal_after(shmem::atomicType op, int round) {
  return op == shmem::SIGNAL_SET ? round + 1 : (round + 1) * (round + 2) / 2;
}

// Every PE sends its slot to its targets with a signal in its own signal word there; then the
// leader waits for every writer's signal and checks that writer's data at once.
template <typename S, typename T>
void run_rounds(const Session& s, Pattern pattern, shmem::atomicType op) {
  GuardedSlots<T> data(s.n, kElems);
  GuardedSlots<uint64_t> signals(1, s.n);  // one word per writer, contiguous
  uint64_t* sig = signals.slot(0);
  for (int w = 0; w < s.n; ++w) sig[w] = 0;
  REQUIRE(shmem::barrier_all() == 0);
  std::vector<int> to, from;
  for (int pe = 0; pe < s.n; ++pe) {
    if (pattern == Pattern::kAllToAll || pe == (s.me + 1) % s.n) to.push_back(pe);
    if (pattern == Pattern::kAllToAll || pe == (s.me + s.n - 1) % s.n) from.push_back(pe);
  }
  Registered<T> src(kElems);  // over RDMA a put's source needs a memory key
  for (int round = 0; round < kRounds; ++round) {
    CAPTURE(round);
    for (size_t i = 0; i < kElems; ++i) src[i] = sent<T>(s.me, round, i);
    const uint64_t want = signal_after(op, round);
    std::string bad;
    launch({1}, block_for<S>(), [&] {
      for (int pe : to) {
        T* dst = data.slot(s.me);  // each writer has its own slot and signal word on the target
        if (round % 2)
          shmem::put_signal_nbi<S>(dst, src.data(), kElems, sig + s.me, round + 1, op, pe);
        else
          shmem::putmem_signal_nbi<S>(dst, src.data(), kElems * sizeof(T), sig + s.me, round + 1,
                                      op, pe);
      }
      if (!S::leader()) return;
      for (int w : from) {
        const uint64_t seen = shmem::signal_wait_until(sig + w, shmem::CMP_GE, want);
        if (seen != want)
          bad += "signal of PE " + std::to_string(w) + " is " + std::to_string(seen) + "; ";
        for (size_t i = 0; i < kElems; ++i)
          if (data.slot(w)[i] != sent<T>(w, round, i)) {
            bad += "element " + std::to_string(i) + " from PE " + std::to_string(w) + "; ";
            break;
          }
        if (shmem::signal_fetch(sig + w) != want) bad += "signal_fetch differs; ";
      }
      shmem::quiet();
    });
    CHECK_MESSAGE(bad.empty(), bad);
    REQUIRE(all_ranks(bad.empty()));
    REQUIRE(shmem::barrier_all() == 0);  // every receiver has checked before the next round
  }
  std::vector<size_t> used(s.n, 0);
  for (int w : from) used[w] = kElems;
  CHECK(data.check_guards(used).empty());
  CHECK(signals.check_guards({static_cast<size_t>(s.n)}).empty());
}

template <typename S, typename T>
void all_patterns(const Session& s) {
  for (Pattern pattern : {Pattern::kRing, Pattern::kAllToAll})
    for (shmem::atomicType op : {shmem::SIGNAL_SET, shmem::SIGNAL_ADD}) {
      CAPTURE(op);
      run_rounds<S, T>(s, pattern, op);
    }
}

// The blocking forms in a ring: the sender overwrites its source as soon as the call returns, so a
// receiver that waits for the signal and then reads anything but the original data shows a put
// that still read its source after returning.
template <typename S, typename T>
void run_blocking(const Session& s) {
  GuardedSlots<T> data(1, kElems);
  GuardedSlots<uint64_t> signals(1, 1);
  uint64_t* sig = signals.slot(0);
  *sig = 0;
  REQUIRE(shmem::barrier_all() == 0);
  const int next = (s.me + 1) % s.n, prev = (s.me + s.n - 1) % s.n;
  Registered<T> src(kElems);
  for (int round = 0; round < 2; ++round) {
    CAPTURE(round);
    for (size_t i = 0; i < kElems; ++i) src[i] = sent<T>(s.me, round, i);
    std::string bad;
    launch({1}, block_for<S>(), [&] {
      if (round == 0)  // the signal goes 0 -> 1 (SET) -> 2 (ADD)
        shmem::putmem_signal<S>(data.slot(0), src.data(), kElems * sizeof(T), sig, 1,
                                shmem::SIGNAL_SET, next);
      else
        shmem::put_signal<S>(data.slot(0), src.data(), kElems, sig, 1, shmem::SIGNAL_ADD, next);
      if (!S::leader()) return;
      for (size_t i = 0; i < kElems; ++i) src[i] = T{};  // value_of is never 0
      const uint64_t seen = shmem::signal_wait_until(sig, shmem::CMP_GE, round + 1);
      if (seen != static_cast<uint64_t>(round + 1)) bad += "signal " + std::to_string(seen) + "; ";
      for (size_t i = 0; i < kElems; ++i)
        if (data.slot(0)[i] != sent<T>(prev, round, i)) {
          bad += "element " + std::to_string(i) + "; ";
          break;
        }
    });
    CHECK_MESSAGE(bad.empty(), bad);
    REQUIRE(all_ranks(bad.empty()));
    REQUIRE(shmem::barrier_all() == 0);
  }
  CHECK(data.check_guards({kElems}).empty());
  CHECK(signals.check_guards({1}).empty());
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("put_signal_nbi: the receiver sees all the data once the signal is set",
                          T, put_signal_id) {
  Session s;
  mori::for_each_scope([&]<typename S>() { all_patterns<S, T>(s); });
}
TEST_CASE_TEMPLATE_APPLY(put_signal_id, ElementTuple);

TEST_CASE_TEMPLATE_DEFINE("put_signal / putmem_signal: the source is free again once they return",
                          T, blocking_id) {
  Session s;
  mori::for_each_scope([&]<typename S>() { run_blocking<S, T>(s); });
}
TEST_CASE_TEMPLATE_APPLY(blocking_id, ElementTuple);

TEST_CASE("signal_op: every PE's SIGNAL_ADD is counted exactly, SIGNAL_SET stores") {
  constexpr int kAdds = 5;
  Session s;
  GuardedSlots<uint64_t> signals(1, 2);
  uint64_t* sig = signals.slot(0);
  sig[0] = sig[1] = 0;
  REQUIRE(shmem::barrier_all() == 0);
  const int next = (s.me + 1) % s.n, prev = (s.me + s.n - 1) % s.n;
  launch({1}, {1}, [&] {
    for (int k = 0; k < kAdds; ++k)
      for (int pe = 0; pe < s.n; ++pe) shmem::signal_op(sig, s.me + 1, shmem::SIGNAL_ADD, pe);
    shmem::signal_op(sig + 1, 1000 + s.me, shmem::SIGNAL_SET, next);
    shmem::quiet();
  });
  REQUIRE(shmem::barrier_all() == 0);
  CHECK(sig[0] == static_cast<uint64_t>(kAdds * s.n * (s.n + 1) / 2));
  CHECK(sig[1] == static_cast<uint64_t>(1000 + prev));
  CHECK(signals.check_guards({2}).empty());
  REQUIRE(shmem::barrier_all() == 0);
}

TEST_CASE("signal_fetch reads this PE's signal as it is now") {
  Session s;
  GuardedSlots<uint64_t> sig(1, 1);
  *sig.slot(0) = 0x0123456789abcdefull;
  uint64_t fetched = 0;
  launch({1}, {1}, [&] { fetched = shmem::signal_fetch(sig.slot(0)); });
  CHECK(fetched == 0x0123456789abcdefull);
  REQUIRE(shmem::barrier_all() == 0);
}

TEST_CASE("a signal operation other than SIGNAL_SET or SIGNAL_ADD traps, and nothing is sent") {
  Session s;
  GuardedSlots<uint32_t> data(1, 8);
  GuardedSlots<uint64_t> sig(1, 1);
  *sig.slot(0) = 0;
  REQUIRE(shmem::barrier_all() == 0);
  const int pe = (s.me + 1) % s.n;
  const uint32_t src[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  const std::pair<int, const char*> kBad[] = {{0, "unknown"},        {3, "AMO_SET"},
                                              {4, "AMO_ADD"},        {8, "AMO_SIGNAL"},
                                              {14, "AMO_FETCH_ADD"}, {99, "unknown"}};
  for (const auto& [code, name] : kBad) {
    CAPTURE(code);
    const auto op = static_cast<shmem::atomicType>(code);
    auto want = [&](const char* call) {
      return std::string(call) + ": atomic code " + std::to_string(code) + " (" + name +
             ") is not a signal operation: use SIGNAL_SET or SIGNAL_ADD (PE " + std::to_string(pe) +
             ")";
    };
    expect_device_failure(
        [&] { shmem::putmem_signal_nbi(data.slot(0), src, sizeof(src), sig.slot(0), 1, op, pe); },
        want("putmem_signal_nbi"), state::DeviceErrorCode::kBadArgument, pe, sig.slot(0));
    expect_device_failure(
        [&] { shmem::put_signal_nbi<Warp>(data.slot(0), src, 8, sig.slot(0), 1, op, pe); },
        want("put_signal_nbi"), state::DeviceErrorCode::kBadArgument, pe, sig.slot(0));
    expect_device_failure(
        [&] {
          shmem::putmem_signal<Block>(data.slot(0), src, sizeof(src), sig.slot(0), 1, op, pe);
        },
        want("putmem_signal"), state::DeviceErrorCode::kBadArgument, pe, sig.slot(0));
    expect_device_failure([&] { shmem::put_signal(data.slot(0), src, 8, sig.slot(0), 1, op, pe); },
                          want("put_signal"), state::DeviceErrorCode::kBadArgument, pe,
                          sig.slot(0));
    expect_device_failure([&] { shmem::signal_op(sig.slot(0), 1, op, pe); }, want("signal_op"),
                          state::DeviceErrorCode::kBadArgument, pe, sig.slot(0));
  }
  REQUIRE(shmem::barrier_all() == 0);
  CHECK(data.check_guards({0}).empty());  // no byte of the data arrived
  CHECK(*sig.slot(0) == 0);
  REQUIRE(shmem::barrier_all() == 0);
}

TEST_CASE("signal_wait_until times out naming the signal, its value and the condition") {
  ScopedTimeout timeout("200");
  Session s;
  GuardedSlots<uint64_t> sig(1, 1);
  uint64_t* word = sig.slot(0);
  *word = 3;
  const uint64_t observed = 3;
  expect_device_failure([&] { shmem::signal_wait_until(word, shmem::CMP_EQ, 4); },
                        "signal_wait_until timed out after 200 ms: *" + hex_text(word) +
                            " is 3, waiting for == 4 (PE " + std::to_string(s.me) + ")",
                        state::DeviceErrorCode::kTimeout, s.me, word, observed);
  REQUIRE(shmem::barrier_all() == 0);  // the PE goes on after a timed-out wait
}
