// The nbi fetching AMOs under contention and in fenced chains (part of mori_mpi_device_atomics, so
// that it runs in every P2P and RDMA variant of that suite).
//
// Every thread of every PE fetch-adds its own value to a counter on every PE and fetch-incs
// another, landing the old values in symmetric memory, and reads them after its quiet: the old
// values must form one serial order ending at the exact total. Chains of compare_swap_nbi (hits
// and misses), swap_nbi and fetch_nbi separated by fence() must fetch exactly the values that
// order implies.
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

}  // namespace

// A width each: 4-byte results run blocking over RDMA, 8-byte ones land by the NIC.
TEST_CASE_TEMPLATE("nbi contention (one serial order, exact totals) and fenced chains", T, uint32_t,
                   int64_t) {
  Session s;
  run_nbi_contention<T>(s);
  run_nbi_chains<T>(s);
}
