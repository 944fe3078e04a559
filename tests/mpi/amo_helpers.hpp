// Helpers of the atomic suites (test_device_atomics.cpp, device_atomics_nbi_lock.cpp): values as
// the bits the transports update, and contention, every thread of a grid on every PE running one
// operation, with the results gathered by thread and checked as a permutation.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "wait_helpers.hpp"

namespace mori::test {

// A value's bits, as the unsigned integer of its width: what the transports update, and what the
// checks compare (a NaN equals nothing, and -0.0 equals 0.0).
template <typename T>
using Bits = shmem::detail::AmoBits<T>;
template <typename T>
Bits<T> bits(T v) {
  return std::bit_cast<Bits<T>>(v);
}
template <typename T>
T from_bits(uint64_t b) {
  return std::bit_cast<T>(static_cast<Bits<T>>(b));
}

// Calls the named function of `op`, as its row of MORI_FOR_EACH_AMO says; non-fetching ones give 0.
// With `landing`, a fetching `op` calls its nbi form instead (atomic_<op>_nbi), whose old value
// lands there by the next quiet, and gives 0.
template <typename T, typename F>
T result_of(F&& f) {
  if constexpr (std::is_void_v<decltype(f())>) {
    f();
    return T{};
  } else {
    return f();
  }
}
template <typename T>
T call_named(shmem::atomicType op, T* d, T v, T c, int pe, T* landing = nullptr) {
  switch (op) {  // only the operations OpenSHMEM defines on T compile
#define MORI_TEST_NBI_0(api, ...)
#define MORI_TEST_NBI_1(api, ...)           \
  if (landing) {                            \
    shmem::api##_nbi(landing, __VA_ARGS__); \
    return T{};                             \
  }
#define MORI_TEST_NAMED_CASE(code, f, api, ...)                                                    \
  case shmem::code:                                                                                \
    if constexpr (shmem::amo_accepts<T>(shmem::code)) {                                            \
      MORI_TEST_NBI_##f(api,                                                                       \
                        __VA_ARGS__) return result_of<T>([&] { return shmem::api(__VA_ARGS__); }); \
    }                                                                                              \
    break;
#define MORI_TEST_NAMED_VALUE(code, f, api) MORI_TEST_NAMED_CASE(code, f, api, d, v, pe)
#define MORI_TEST_NAMED_UNIT(code, f, api) MORI_TEST_NAMED_CASE(code, f, api, d, pe)
#define MORI_TEST_NAMED_READ(code, f, api) \
  MORI_TEST_NAMED_CASE(code, f, api, static_cast<const T*>(d), pe)
#define MORI_TEST_NAMED_COMPARE(code, f, api) MORI_TEST_NAMED_CASE(code, f, api, d, c, v, pe)
#define MORI_TEST_NAMED_NONE(code, f, api)
#define MORI_TEST_NAMED(code, number, kind, arg, fetch, form, api, ...) \
  MORI_TEST_NAMED_##form(code, fetch, api)
    MORI_FOR_EACH_AMO(MORI_TEST_NAMED)
#undef MORI_TEST_NAMED
#undef MORI_TEST_NAMED_NONE
#undef MORI_TEST_NAMED_COMPARE
#undef MORI_TEST_NAMED_READ
#undef MORI_TEST_NAMED_UNIT
#undef MORI_TEST_NAMED_VALUE
#undef MORI_TEST_NAMED_CASE
#undef MORI_TEST_NBI_1
#undef MORI_TEST_NBI_0
    default:
      break;
  }
  throw std::logic_error("no named function for atomic code " + std::to_string(op));
}

inline constexpr unsigned kBlockThreads = 64;
// 4 x 64 threads per PE; over RDMA 1 x 64: on the host backend the software NIC is one thread
// among all the lanes on two cores, and the emulated 32-bit atomics of BNXT and Ionic turn each
// operation into compare-swap round trips, so 256 contending lanes per PE took minutes.
inline unsigned blocks() { return over_rdma() ? 1 : 4; }
inline unsigned threads() { return blocks() * kBlockThreads; }

// Runs op(g) on every thread of a blocks() x 64 grid on every PE, g being the thread's number among
// all the PEs' threads (interleaved, so that neighbouring g come from different PEs). Returns this
// PE's results, indexed by thread.
template <typename Op>
std::vector<uint64_t> hammer(const Session& s, Op op) {
  std::vector<uint64_t> out(threads());
  launch({blocks()}, {kBlockThreads}, [&] {
    const size_t t = platform::block_rank() * kBlockThreads + platform::thread_rank();
    out[t] = static_cast<uint64_t>(op(t * s.n + s.me));
    shmem::quiet();
  });
  REQUIRE(shmem::barrier_all() == 0);
  return out;
}
// Every PE's results on `root`, by g (empty elsewhere).
inline std::vector<uint64_t> gather_by_g(const Session& s, const std::vector<uint64_t>& mine,
                                         int root) {
  std::vector<uint64_t> by_pe(s.me == root ? threads() * s.n : 0), by_g(by_pe.size());
  MPI_Gather(mine.data(), threads(), MPI_UINT64_T, by_pe.data(), threads(), MPI_UINT64_T, root,
             MPI_COMM_WORLD);
  for (int pe = 0; pe < static_cast<int>(by_pe.size() / threads()); ++pe)
    for (size_t t = 0; t < threads(); ++t) by_g[t * s.n + pe] = by_pe[pe * threads() + t];
  return by_g;
}
// "" if `values` are exactly first, first + 1, ..., first + size - 1 in some order.
inline std::string permutation_error(std::vector<uint64_t> values, uint64_t first) {
  std::sort(values.begin(), values.end());
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i] != first + i)
      return "sorted value " + std::to_string(i) + " is " + std::to_string(values[i]);
  return "";
}

}  // namespace mori::test
