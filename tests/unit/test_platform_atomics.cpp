// Atomics and fences of the host platform: exact counts under contention, fetched values as a
// permutation, and release/acquire message passing between lanes.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <numeric>
#include <vector>

#include "mori/core.hpp"
#include "mori/host/launch.hpp"

namespace plat = mori::platform;
using plat::MemOrder;
using plat::MemScope;

TEST_CASE_TEMPLATE("fetch_add under contention: exact total, fetched values are a permutation", T,
                   uint32_t, int32_t, uint64_t, int64_t) {
  constexpr int kLanes = 4 * 64, kPerLane = 200;
  T counter = 0;
  std::vector<T> fetched(kLanes * kPerLane);
  auto status = mori::host::launch({4}, {64}, [&] {
    const int id = plat::block_rank() * 64 + plat::thread_rank();
    for (int i = 0; i < kPerLane; ++i)
      fetched[id * kPerLane + i] =
          plat::atomic_fetch_add<MemOrder::Relaxed, MemScope::System>(&counter, T{1});
  });
  REQUIRE(status.ok());
  CHECK(counter == T(kLanes * kPerLane));
  std::sort(fetched.begin(), fetched.end());
  for (size_t i = 0; i < fetched.size(); ++i) REQUIRE(fetched[i] == T(i));
}

TEST_CASE("compare_swap, exchange and the bitwise atomics under contention") {
  constexpr int kLanes = 128;
  uint64_t cas_counter = 0, bits_or = 0, bits_and = ~uint64_t{0}, bits_xor = 0;
  uint32_t owner = 0;
  std::atomic<int> swaps_won{0};
  auto status = mori::host::launch({2}, {64}, [&] {
    const int id = plat::block_rank() * 64 + plat::thread_rank();
    // Increment through a CAS loop: every failed attempt returns the value that beat us.
    for (int i = 0; i < 100; ++i) {
      uint64_t seen = plat::atomic_load<MemOrder::Relaxed, MemScope::System>(&cas_counter);
      for (;;) {
        const uint64_t found = plat::atomic_compare_swap<MemOrder::AcqRel, MemScope::System>(
            &cas_counter, seen, seen + 1);
        if (found == seen) break;
        seen = found;
        plat::relax();
      }
    }
    plat::atomic_fetch_or<MemOrder::Relaxed, MemScope::System>(&bits_or, uint64_t{1} << (id % 64));
    plat::atomic_fetch_and<MemOrder::Relaxed, MemScope::System>(&bits_and,
                                                                ~(uint64_t{1} << (id % 64)));
    plat::atomic_fetch_xor<MemOrder::Relaxed, MemScope::System>(&bits_xor,
                                                                uint64_t{1} << (id % 64));
    if (plat::atomic_exchange<MemOrder::AcqRel, MemScope::Agent>(&owner, uint32_t(id + 1)) == 0)
      swaps_won.fetch_add(1);
  });
  REQUIRE(status.ok());
  CHECK(cas_counter == kLanes * 100);
  CHECK(bits_or == ~uint64_t{0});
  CHECK(bits_and == 0);
  CHECK(bits_xor == 0);  // every bit flipped by exactly two lanes (id and id + 64)
  CHECK(swaps_won.load() == 1);
  CHECK(owner >= 1);
  CHECK(owner <= kLanes);
}

TEST_CASE("release store / acquire load passes data between lanes of different blocks") {
  constexpr int kRounds = 2000;
  std::vector<uint64_t> data(64);
  uint64_t flag = 0;
  std::atomic<int> stale{0};
  auto status = mori::host::launch({2}, {1}, [&] {
    if (plat::block_rank() == 0) {
      for (uint64_t r = 1; r <= kRounds; ++r) {
        while (plat::atomic_load<MemOrder::Acquire, MemScope::System>(&flag) != 2 * r - 2)
          plat::relax();
        for (auto& d : data) d = r;  // plain stores, published by the release below
        plat::atomic_store<MemOrder::Release, MemScope::System>(&flag, 2 * r - 1);
      }
    } else {
      for (uint64_t r = 1; r <= kRounds; ++r) {
        while (plat::atomic_load<MemOrder::Acquire, MemScope::System>(&flag) != 2 * r - 1)
          plat::relax();
        for (auto d : data)
          if (d != r) stale.fetch_add(1);
        plat::fence<MemOrder::Release, MemScope::System>();
        plat::atomic_store<MemOrder::Relaxed, MemScope::System>(&flag, 2 * r);
      }
    }
  });
  REQUIRE(status.ok());
  CHECK(stale.load() == 0);
  CHECK(flag == 2 * kRounds);
}

TEST_CASE("system_fence and clock_ns") {
  const uint64_t t0 = plat::clock_ns();
  plat::system_fence();
  plat::fence<MemOrder::AcqRel, MemScope::Agent>();
  const uint64_t t1 = plat::clock_ns();
  CHECK(t1 >= t0);
}
