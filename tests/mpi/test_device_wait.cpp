// The wait and test families over P2P and over RDMA, for the integer element types: every
// comparison true and false (at the edges of each type's range too), waits satisfied by a peer's p
// and AMOs, data put before a flag visible once the wait returns, the array forms (one comparison
// value, and the _vector forms with one per entry) with status masks against a host reference and
// with peers' updates, and the checks: a bad comparison, an ivar
// outside symmetric memory, and waits that never come true timing out with their exact diagnostic.
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "wait_helpers.hpp"

namespace state = mori::state;

namespace shmem = mori::shmem;
namespace platform = mori::platform;
using namespace mori::test;
using shmem::Cmp;

namespace {

constexpr Cmp kCmps[] = {shmem::CMP_EQ, shmem::CMP_NE, shmem::CMP_GT,
                         shmem::CMP_GE, shmem::CMP_LT, shmem::CMP_LE};

// The host's reading of a comparison, written independently of the device's.
template <typename T>
bool holds(Cmp cmp, T seen, T value) {
  if (cmp == shmem::CMP_EQ) return seen == value;
  if (cmp == shmem::CMP_NE) return !(seen == value);
  if (cmp == shmem::CMP_GT) return value < seen;
  if (cmp == shmem::CMP_GE) return !(seen < value);
  if (cmp == shmem::CMP_LT) return seen < value;
  return !(value < seen);  // CMP_LE
}

template <typename T>
constexpr bool kIsAmo = shmem::amo_accepts<T>(shmem::AMO_ADD);  // atomic_add takes T

// ---- test and wait_until on one ivar ------------------------------------------------------------
// base + d, wrapping at the type's ends (in signed arithmetic INT_MIN - 1 would be undefined).
template <typename T>
T wrap_add(T base, int d) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(static_cast<U>(base) + static_cast<U>(d)));
}

template <typename T>
void run_compare_edges() {
  using L = std::numeric_limits<T>;
  GuardedSlots<T> ivar(1, 1);
  for (T base : {T{5}, L::min(), L::max(), static_cast<T>(L::max() / 2 + 1)}) {
    *ivar.slot(0) = base;
    for (T value : {wrap_add(base, -1), base, wrap_add(base, 1)}) {
      int got[6] = {};
      T waited = 0;
      launch({1}, {1}, [&] {
        for (int c = 0; c < 6; ++c) got[c] = shmem::test(ivar.slot(0), kCmps[c], value);
        for (Cmp cmp : kCmps)  // a wait already satisfied returns at once, with the value
          if (holds(cmp, base, value)) waited = shmem::wait_until(ivar.slot(0), cmp, value);
      });
      for (int c = 0; c < 6; ++c) {
        CAPTURE(kCmps[c]);
        CHECK(got[c] == (holds(kCmps[c], base, value) ? 1 : 0));
      }
      CHECK(waited == base);
    }
  }
  REQUIRE(shmem::barrier_all() == 0);
}

// Each PE's writer thread takes its successor's ivar from `start` to `stop` one step at a time
// (with p, or with an AMO for the AMO types) while the waiter thread waits for `cmp value` on its
// own ivar: only `stop` satisfies the condition (NE: any value after start).
struct Walk {
  Cmp cmp;
  int start, stop, value;
};
constexpr Walk kWalks[] = {{shmem::CMP_EQ, 0, 20, 20},  {shmem::CMP_GE, 0, 20, 20},
                           {shmem::CMP_GT, 0, 20, 19},  {shmem::CMP_NE, 0, 20, 0},
                           {shmem::CMP_LT, 40, 20, 21}, {shmem::CMP_LE, 40, 20, 20}};

template <typename T>
void run_peer_walks(const Session& s, bool with_amo) {
  GuardedSlots<T> ivar(1, 1);
  const int next = (s.me + 1) % s.n;
  for (const Walk& w : kWalks) {
    CAPTURE(w.cmp);
    *ivar.slot(0) = static_cast<T>(w.start);
    REQUIRE(shmem::barrier_all() == 0);
    T seen = 0;
    launch({1}, {2}, [&] {
      if (platform::thread_rank() == 0) {
        seen = shmem::wait_until(ivar.slot(0), w.cmp, static_cast<T>(w.value));
        return;
      }
      const int step = w.stop > w.start ? 1 : -1;
      for (int v = w.start + step; v != w.stop + step; v += step) {
        if constexpr (kIsAmo<T>) {
          if (with_amo) {
            shmem::atomic_add(ivar.slot(0), static_cast<T>(step), next);
            continue;
          }
        }
        shmem::p(ivar.slot(0), static_cast<T>(v), next);
        shmem::fence(next);  // the peer sees the values in order
      }
      shmem::quiet();
    });
    if (w.cmp == shmem::CMP_NE)
      CHECK((seen != T{} && seen <= T{20}));
    else
      CHECK(seen == static_cast<T>(w.stop));
    REQUIRE(shmem::barrier_all() == 0);
  }
}

// ---- the array forms ----------------------------------------------------------------------------
constexpr size_t kN = 8;
constexpr int kValues[kN] = {7, 3, 7, 9, 7, 0, 12, 7};
// The _vector forms' own values: against kValues each comparison holds for some entries only.
constexpr int kCmpValues[kN] = {7, 4, 6, 9, 8, 0, 11, 7};
constexpr int kMasks[][kN] = {
    {0, 1, 0, 0, 1, 0, 0, 0}, {1, 0, 1, 0, 1, 0, 1, 1}, {1, 1, 1, 1, 1, 1, 1, 1}};

// What the array forms must return, computed on the host.
struct Outcome {
  int all = 0;
  size_t any = SIZE_MAX;
  std::vector<size_t> some;
};
template <typename T>
Outcome reference(const T* values, const int* status, Cmp cmp, const T* cmp_values) {
  Outcome o;
  o.all = 1;
  for (size_t i = 0; i < kN; ++i) {
    if (status && status[i]) continue;
    if (!holds(cmp, values[i], cmp_values[i])) {
      o.all = 0;
      continue;
    }
    if (o.any == SIZE_MAX) o.any = i;
    o.some.push_back(i);
  }
  return o;
}

// vector: the _vector forms, each entry against its own kCmpValues[i]; otherwise every entry
// against 7.
template <typename T>
void run_masks(bool vector) {
  GuardedSlots<T> ivars(1, kN);
  T cmp_values[kN];
  for (size_t i = 0; i < kN; ++i) {
    ivars.slot(0)[i] = static_cast<T>(kValues[i]);
    cmp_values[i] = static_cast<T>(vector ? kCmpValues[i] : 7);
  }
  for (const int* status : {static_cast<const int*>(nullptr), kMasks[0], kMasks[1], kMasks[2]}) {
    for (Cmp cmp : kCmps) {
      CAPTURE(cmp);
      CAPTURE(status ? status - kMasks[0] : -1);
      const Outcome want = reference(ivars.slot(0), status, cmp, cmp_values);
      Outcome tested, waited;
      std::vector<size_t> indices(kN, SIZE_MAX), waited_indices(kN, SIZE_MAX);
      size_t some = 0, waited_some = 0;
      const bool empty_set = status == kMasks[2];
      const bool any_ends = want.any != SIZE_MAX || empty_set;  // only waits that end
      launch({1}, {1}, [&] {
        T* iv = ivars.slot(0);
        size_t* ix = indices.data();
        size_t* wix = waited_indices.data();
        if (vector) {
          tested.all = shmem::test_all_vector(iv, kN, status, cmp, cmp_values);
          tested.any = shmem::test_any_vector(iv, kN, status, cmp, cmp_values);
          some = shmem::test_some_vector(iv, kN, ix, status, cmp, cmp_values);
          if (want.all) shmem::wait_until_all_vector(iv, kN, status, cmp, cmp_values);
          if (any_ends) {
            waited.any = shmem::wait_until_any_vector(iv, kN, status, cmp, cmp_values);
            waited_some = shmem::wait_until_some_vector(iv, kN, wix, status, cmp, cmp_values);
          }
          return;
        }
        tested.all = shmem::test_all(iv, kN, status, cmp, 7);
        tested.any = shmem::test_any(iv, kN, status, cmp, 7);
        some = shmem::test_some(iv, kN, ix, status, cmp, 7);
        if (want.all) shmem::wait_until_all(iv, kN, status, cmp, 7);
        if (any_ends) {
          waited.any = shmem::wait_until_any(iv, kN, status, cmp, 7);
          waited_some = shmem::wait_until_some(iv, kN, wix, status, cmp, 7);
        }
      });
      indices.resize(some);
      waited_indices.resize(waited_some);
      CHECK(tested.all == want.all);
      CHECK(tested.any == want.any);
      CHECK(indices == want.some);
      if (any_ends) {
        CHECK(waited.any == want.any);
        CHECK(waited_indices == want.some);
      }
    }
  }
  REQUIRE(shmem::barrier_all() == 0);
}

// Every PE sets its entry of every other PE's array, except the entry its predecessor excludes;
// each PE waits for all, any and some of the entries it does not exclude.
template <typename T>
void run_peer_arrays(const Session& s) {
  GuardedSlots<T> ivars(1, s.n);
  for (int i = 0; i < s.n; ++i) ivars.slot(0)[i] = T{};
  std::vector<int> status(s.n, 0);
  const int excluded = (s.me + 1) % s.n;  // that PE never writes here
  if (s.n > 1) status[excluded] = 1;
  REQUIRE(shmem::barrier_all() == 0);
  size_t any = SIZE_MAX, some = 0;
  int all_without_status = -1;
  std::vector<size_t> indices(s.n);
  launch({1}, {static_cast<unsigned>(s.n + 1)}, [&] {
    T* iv = ivars.slot(0);
    const int t = platform::thread_rank();
    if (t == 0) {
      any = shmem::wait_until_any(iv, s.n, status.data(), shmem::CMP_EQ, 1);
      some = shmem::wait_until_some(iv, s.n, indices.data(), status.data(), shmem::CMP_NE, 0);
      shmem::wait_until_all(iv, s.n, status.data(), shmem::CMP_EQ, 1);
      all_without_status = shmem::test_all(iv, s.n, nullptr, shmem::CMP_EQ, 1);
      return;
    }
    const int target = t - 1;
    if (s.n > 1 && (target + 1) % s.n == s.me) return;  // this PE is the target's excluded entry
    shmem::p(iv + s.me, static_cast<T>(1), target);
    shmem::quiet();
  });
  CHECK(any < static_cast<size_t>(s.n));
  CHECK((s.n == 1 || any != static_cast<size_t>(excluded)));
  CHECK(some >= 1);
  for (size_t k = 0; k < some; ++k) CHECK((s.n == 1 || indices[k] != size_t(excluded)));
  CHECK(all_without_status == (s.n > 1 ? 0 : 1));
  REQUIRE(shmem::barrier_all() == 0);
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("test and wait_until: every comparison, true and false", T, edges_id) {
  Session s;
  run_compare_edges<T>();
}
TEST_CASE_TEMPLATE_DEFINE("wait_until: satisfied by a peer's p, step by step", T, peer_id) {
  Session s;
  run_peer_walks<T>(s, false);
  if constexpr (kIsAmo<T>) run_peer_walks<T>(s, true);
}
TEST_CASE_TEMPLATE_DEFINE("test_* and wait_until_*: status masks against a host reference", T,
                          masks_id) {
  Session s;
  run_masks<T>(false);
}
TEST_CASE_TEMPLATE_DEFINE("test_*_vector and wait_until_*_vector: a value per entry, status masks",
                          T, vector_masks_id) {
  Session s;
  run_masks<T>(true);
}
TEST_CASE_TEMPLATE_DEFINE("wait_until_all / _any / _some: satisfied by peers", T, peer_arrays_id) {
  Session s;
  run_peer_arrays<T>(s);
}
TEST_CASE_TEMPLATE_APPLY(edges_id, IntegerTuple);
TEST_CASE_TEMPLATE_APPLY(peer_id, IntegerTuple);
TEST_CASE_TEMPLATE_APPLY(masks_id, IntegerTuple);
TEST_CASE_TEMPLATE_APPLY(vector_masks_id, IntegerTuple);
TEST_CASE_TEMPLATE_APPLY(peer_arrays_id, IntegerTuple);

TEST_CASE("wait_until: data put before the flag (and a fence) is visible once the wait returns") {
  constexpr size_t kData = 4099;
  Session s;
  GuardedSlots<uint32_t> data(1, kData);
  GuardedSlots<uint64_t> flag(1, 1);
  *flag.slot(0) = 0;
  REQUIRE(shmem::barrier_all() == 0);
  const int next = (s.me + 1) % s.n, prev = (s.me + s.n - 1) % s.n;
  Registered<uint32_t> src(kData);  // over RDMA a put's source needs a memory key
  for (int round = 1; round <= 4; ++round) {
    for (size_t i = 0; i < kData; ++i) src[i] = value_of<uint32_t>(s.me, i + round);
    size_t wrong = 0;
    launch({1}, {2}, [&] {
      if (platform::thread_rank() == 1) {
        shmem::put_nbi(data.slot(0), src.data(), kData, next);
        shmem::fence(next);
        shmem::atomic_set(flag.slot(0), round, next);
        shmem::quiet();
        return;
      }
      shmem::wait_until(flag.slot(0), shmem::CMP_EQ, round);
      for (size_t i = 0; i < kData; ++i)
        wrong += data.slot(0)[i] != value_of<uint32_t>(prev, i + round);
    });
    CHECK(wrong == 0);
    REQUIRE(shmem::barrier_all() == 0);  // the receiver has checked before the next round's put
  }
}

TEST_CASE("a bad comparison, an ivar outside symmetric memory and a misaligned ivar trap") {
  Session s;
  GuardedSlots<uint64_t> ivars(1, 2);
  uint64_t* iv = ivars.slot(0);
  iv[0] = iv[1] = 0;
  const std::string pe = " (PE " + std::to_string(s.me) + ")";
  expect_device_failure([&] { shmem::wait_until(iv, static_cast<Cmp>(6), 0); },
                        "wait_until: 6 is not a comparison: use CMP_EQ..CMP_GE" + pe,
                        state::DeviceErrorCode::kBadArgument, s.me, iv);
  expect_device_failure([&] { shmem::test_any(iv, 2, nullptr, static_cast<Cmp>(-1), 0); },
                        "test_any: -1 is not a comparison: use CMP_EQ..CMP_GE" + pe,
                        state::DeviceErrorCode::kBadArgument, s.me, iv);
  uint64_t local = 0;  // satisfied, but not symmetric: nobody else could ever write it
  const state::GpuStates& st = shmem::globalGpuStates;
  expect_device_failure([&] { shmem::wait_until(&local, shmem::CMP_EQ, 0); },
                        "wait_until: address " + hex_text(&local) + " (8 bytes) for PE " +
                            std::to_string(s.me) + " is neither in the symmetric heap [" +
                            hex_text(reinterpret_cast<void*>(st.heap_base)) + ", +" +
                            std::to_string(st.heap_size) + ") nor in a registered buffer",
                        state::DeviceErrorCode::kBadAddress, s.me, &local);
  auto* odd = reinterpret_cast<uint32_t*>(reinterpret_cast<char*>(iv) + 2);
  expect_device_failure([&] { shmem::test_all(odd, 2, nullptr, shmem::CMP_EQ, 0); },
                        "test_all: address " + hex_text(odd) + " is not aligned to 4 bytes" + pe,
                        state::DeviceErrorCode::kBadAddress, s.me, odd);
  REQUIRE(shmem::barrier_all() == 0);
}

TEST_CASE("waits that never come true time out naming the ivar, its value and the condition") {
  ScopedTimeout timeout("200");
  Session s;
  GuardedSlots<int64_t> ivars(1, 4);
  GuardedSlots<uint8_t> bytes(1, 1);
  int64_t* iv = ivars.slot(0);
  for (int i = 0; i < 4; ++i) iv[i] = i - 5;  // -5 -4 -3 -2
  *bytes.slot(0) = 200;
  const int status[4] = {1, 0, 0, 0};
  const std::string head = " timed out after 200 ms: *", pe = " (PE " + std::to_string(s.me) + ")";
  auto expect_timeout = [&](auto kernel, const std::string& message, const void* at,
                            uint64_t observed) {
    expect_device_failure(kernel, message, state::DeviceErrorCode::kTimeout, s.me, at, observed);
    REQUIRE(shmem::barrier_all() == 0);  // the PE goes on: barriers and, at the end, finalize
  };
  expect_timeout([&] { shmem::wait_until(iv, shmem::CMP_EQ, 7); },
                 "wait_until" + head + hex_text(iv) + " is -5, waiting for == 7" + pe, iv,
                 static_cast<uint64_t>(-5));
  expect_timeout([&] { shmem::wait_until(bytes.slot(0), shmem::CMP_EQ, 201); },
                 "wait_until" + head + hex_text(bytes.slot(0)) + " is 200, waiting for == 201" + pe,
                 bytes.slot(0), 200);
  expect_timeout([&] { shmem::wait_until_equals(iv + 1, 9); },
                 "wait_until_equals" + head + hex_text(iv + 1) + " is -4, waiting for == 9" + pe,
                 iv + 1, static_cast<uint64_t>(-4));
  expect_timeout(
      [&] { shmem::wait_until_greater_than(iv + 2, 0); },
      "wait_until_greater_than" + head + hex_text(iv + 2) + " is -3, waiting for > 0" + pe, iv + 2,
      static_cast<uint64_t>(-3));
  expect_timeout(
      [&] { shmem::wait_until_all(iv, 4, status, shmem::CMP_LT, -2); },
      "wait_until_all" + head + hex_text(iv + 3) + " (entry 3 of 4) is -2, waiting for < -2" + pe,
      iv + 3, static_cast<uint64_t>(-2));
  expect_timeout(
      [&] { shmem::wait_until_any(iv, 4, status, shmem::CMP_GT, 100); },
      "wait_until_any" + head + hex_text(iv + 1) + " (entry 1 of 4) is -4, waiting for > 100" + pe,
      iv + 1, static_cast<uint64_t>(-4));
  size_t indices[4];
  expect_timeout(
      [&] { shmem::wait_until_some(iv, 4, indices, nullptr, shmem::CMP_GE, 100); },
      "wait_until_some" + head + hex_text(iv) + " (entry 0 of 4) is -5, waiting for >= 100" + pe,
      iv, static_cast<uint64_t>(-5));
  // The vector forms name the entry's own value.
  const int64_t cmp_values[4] = {-5, -4, -3, -3};
  expect_timeout([&] { shmem::wait_until_all_vector(iv, 4, status, shmem::CMP_LE, cmp_values); },
                 "wait_until_all_vector" + head + hex_text(iv + 3) +
                     " (entry 3 of 4) is -2, waiting for <= -3" + pe,
                 iv + 3, static_cast<uint64_t>(-2));
  expect_timeout([&] { shmem::wait_until_any_vector(iv, 4, status, shmem::CMP_LT, cmp_values); },
                 "wait_until_any_vector" + head + hex_text(iv + 1) +
                     " (entry 1 of 4) is -4, waiting for < -4" + pe,
                 iv + 1, static_cast<uint64_t>(-4));
  expect_timeout(
      [&] { shmem::wait_until_some_vector(iv, 4, indices, nullptr, shmem::CMP_LT, cmp_values); },
      "wait_until_some_vector" + head + hex_text(iv) + " (entry 0 of 4) is -5, waiting for < -5" +
          pe,
      iv, static_cast<uint64_t>(-5));
}
