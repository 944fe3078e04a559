// Point-to-point synchronization (OpenSHMEM 1.5 wait_until / test families) on this PE's own
// symmetric memory, which other PEs update with puts, p and AMOs. Thread scope: each calling thread
// waits or tests for itself. T is any integer type (OpenSHMEM defines these calls for integers
// only), deduced from the pointer; the comparison value converts to it.
//
//   wait_until(ivar, cmp, value) -> T         blocks until *ivar cmp value; returns the value seen
//   test(ivar, cmp, value) -> int             1 if *ivar cmp value now, else 0
//   wait_until_all / test_all                 every entry of the set (test_all: 1 or 0)
//   wait_until_any / test_any -> size_t       the lowest index of an entry that satisfies it
//   wait_until_some / test_some -> size_t     how many satisfy it; their indices, ascending, in
//                                             `indices`
//   wait_until_all_vector, _any_vector, _some_vector, test_all_vector, _any_vector, _some_vector
//                                             the same, but entry i is compared with its own
//                                             cmp_values[i] (one comparison for all entries)
//   wait_until_equals(addr, v) -> int (0), wait_until_greater_than(addr, v) -> T  (the ABI's pair)
//
// The set of the array forms is ivars[0, n) less every entry whose `status` is nonzero; status may
// be null. The vector forms read cmp_values[i] (any memory the caller can read, with plain loads)
// only for watched entries. An empty set (n == 0, or every entry excluded) is vacuously "all"
// (wait_until_all returns at once, test_all returns 1) and never "any" or "some" (wait_until_any
// and test_any return SIZE_MAX, wait_until_some and test_some return 0), as in OpenSHMEM 1.5. The
// _any forms always report the lowest satisfying index; to serve every entry, exclude the ones
// already handled through `status`, as OpenSHMEM's own example of test_any does.
//
// Ordering: every read of an ivar is an acquire load at system scope. A call that reports the
// condition met (a wait returning, test returning 1, an index returned) therefore also makes
// visible everything the updating PE delivered before that update, e.g. a put followed by
// fence(pe) and the flag's p or AMO. A test that fails orders nothing.
//
// Every wait honours MORI_SHMEM_TIMEOUT_MS: past the deadline it records, and traps with,
//   "wait_until timed out after 200 ms: *0x7f12... is 5, waiting for == 7 (PE 0)"
// (the array forms add "(entry i of n)" after the address: the first unmet entry for _all, the
// first watched one for _any and _some; the vector forms print that entry's own value). Checked
// builds also trap on a comparison outside CMP_EQ..CMP_GE and on ivars that are misaligned or
// outside this PE's symmetric memory (nobody else could ever write them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "mori/shmem/atomic.hpp"
#include "mori/shmem/checks.hpp"
#include "mori/shmem/vocabulary.hpp"
#include "mori/state/spin.hpp"

namespace mori::shmem {

namespace detail {

MORI_DEVICE bool is_cmp(Cmp cmp) { return cmp >= CMP_EQ && cmp <= CMP_GE; }
MORI_DEVICE const char* cmp_text(Cmp cmp) {
  constexpr const char* kText[] = {"==", "!=", ">", "<=", "<", ">="};
  return is_cmp(cmp) ? kText[cmp] : "?";
}
// Branch-free: the comparison picks a 3-bit set of the outcomes it accepts (bit 0: less, bit 1:
// equal, bit 2: greater), so a wait's loop carries no switch and its exec-mask bookkeeping.
template <typename T>
MORI_DEVICE bool satisfies(Cmp cmp, T seen, T value) {
  constexpr uint32_t kAccepts = 0b010u << 3 * CMP_EQ | 0b101u << 3 * CMP_NE | 0b100u << 3 * CMP_GT |
                                0b011u << 3 * CMP_LE | 0b001u << 3 * CMP_LT | 0b110u << 3 * CMP_GE;
  const uint32_t outcome = seen < value ? 0u : seen == value ? 1u : 2u;
  return is_cmp(cmp) && ((kAccepts >> (3u * static_cast<uint32_t>(cmp) + outcome)) & 1u) != 0;
}
// Integers print as numbers, whatever their width (a char-sized T would otherwise print a glyph).
template <typename T>
MORI_DEVICE auto as_number(T v) {
  return static_cast<std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>(v);
}

// The entries a wait or test watches: ivars[i] for every i that `status` does not exclude.
template <typename T>
struct WaitSet {
  const char* call;
  T* ivars;
  size_t n;
  const int* status;
  Cmp cmp;
  T value;
  bool array;       // an array form: messages name the entry
  const T* values;  // a vector form: entry i is compared with values[i], not with `value`

  MORI_DEVICE bool watched(size_t i) const { return !status || status[i] == 0; }
  MORI_DEVICE T value_of(size_t i) const { return values ? values[i] : value; }
  MORI_DEVICE bool ready(size_t i, T* seen) const {
    *seen =
        platform::atomic_load<platform::MemOrder::Acquire, platform::MemScope::System>(ivars + i);
    return satisfies(cmp, *seen, value_of(i));
  }
  // Moves *cursor past the entries that are excluded or satisfied; true once none is left. *seen
  // is the last value read.
  MORI_DEVICE bool all_ready(size_t* cursor, T* seen) const {
    while (*cursor < n && (!watched(*cursor) || ready(*cursor, seen))) ++*cursor;
    return *cursor == n;
  }
  // The lowest watched index in [from, n) whose entry satisfies the condition, n if none.
  MORI_DEVICE size_t next_ready(size_t from) const {
    T seen;
    while (from < n && !(watched(from) && ready(from, &seen))) ++from;
    return from;
  }
  MORI_DEVICE size_t first_watched() const {
    size_t i = 0;
    while (i < n && !watched(i)) ++i;
    return i;
  }
  // Writes the satisfying indices, ascending, to `indices`; returns how many.
  MORI_DEVICE size_t collect(size_t* indices) const {
    size_t count = 0;
    for (size_t i = next_ready(0); i < n; i = next_ready(i + 1)) indices[count++] = i;
    return count;
  }

  MORI_DEVICE void timed_out(size_t i) const {
    T seen;
    ready(i, &seen);
    state::fail_in_line({state::DeviceErrorCode::kTimeout, state::this_pe(),
                         reinterpret_cast<uint64_t>(ivars + i), static_cast<uint64_t>(seen)},
                        [&](state::Message& m) {
                          state::timeout_prefix(m, call);
                          m << "*" << hex(ivars + i);
                          if (array) m << " (entry " << i << " of " << n << ")";
                          m << " is " << as_number(seen) << ", waiting for " << cmp_text(cmp) << " "
                            << as_number(value_of(i)) << " (PE " << state::this_pe() << ")";
                        });
  }
};

// The set of a call, checked (with checks) for a known comparison and naturally aligned ivars in
// this PE's symmetric memory.
template <typename T>
MORI_DEVICE WaitSet<T> wait_set(const char* call, T* ivars, size_t n, const int* status, Cmp cmp,
                                T value, bool array) {
  static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>,
                "wait and test compare integers: OpenSHMEM defines point-to-point synchronization "
                "for integer types only");
  static_assert(!std::is_const_v<T>, "an ivar is updated by other PEs: pass a non-const pointer");
  if constexpr (MORI_DEVICE_CHECKS) {
    const int me = state::this_pe();
    if (!is_cmp(cmp)) {
      state::fail({state::DeviceErrorCode::kBadArgument, me, reinterpret_cast<uint64_t>(ivars)},
                  [&](state::Message& m) {
                    m << call << ": " << static_cast<int>(cmp)
                      << " is not a comparison: use CMP_EQ..CMP_GE (PE " << me << ")";
                  });
    }
    if (n) {
      check_aligned(call, ivars, sizeof(T), me);
      resolve(call, ivars, byte_count(call, ivars, n, sizeof(T), me), me, 0);
    }
  }
  return {call, ivars, n, status, cmp, value, array, nullptr};
}
// The set of a vector form: entry i is compared with values[i].
template <typename T>
MORI_DEVICE WaitSet<T> wait_set(const char* call, T* ivars, size_t n, const int* status, Cmp cmp,
                                const T* values) {
  WaitSet<T> s = wait_set(call, ivars, n, status, cmp, T{}, true);
  s.values = values;
  return s;
}

// Blocks until every watched entry satisfies the condition; returns the last value read (for a
// single ivar, the one that satisfied it).
template <typename T>
MORI_DEVICE T wait_all(const WaitSet<T>& s) {
  size_t cursor = 0;
  T seen{};
  state::spin_until([&] { return s.all_ready(&cursor, &seen); }, [&] { s.timed_out(cursor); });
  return seen;
}
template <typename T>
MORI_DEVICE size_t wait_any(const WaitSet<T>& s) {
  const size_t first = s.first_watched();
  if (first == s.n) return SIZE_MAX;
  size_t found = s.n;
  state::spin_until([&] { return (found = s.next_ready(first)) < s.n; },
                    [&] { s.timed_out(first); });
  return found;
}
template <typename T>
MORI_DEVICE size_t wait_some(const WaitSet<T>& s, size_t* indices) {
  const size_t first = s.first_watched();
  if (first == s.n) return 0;
  size_t count = 0;
  state::spin_until([&] { return (count = s.collect(indices)) > 0; }, [&] { s.timed_out(first); });
  return count;
}
template <typename T>
MORI_DEVICE int test_all(const WaitSet<T>& s) {
  size_t cursor = 0;
  T seen;
  return s.all_ready(&cursor, &seen) ? 1 : 0;
}
template <typename T>
MORI_DEVICE size_t test_any(const WaitSet<T>& s) {
  const size_t i = s.next_ready(0);
  return i < s.n ? i : SIZE_MAX;
}

}  // namespace detail

// The value's type follows the pointer: wait_until(flag, CMP_EQ, 1) for a uint64_t* flag.
template <typename T>
using WaitValue = std::type_identity_t<T>;

// ---- one ivar -----------------------------------------------------------------------------------
template <typename T>
MORI_DEVICE T wait_until(T* ivar, Cmp cmp, WaitValue<T> value) {
  return detail::wait_all(detail::wait_set("wait_until", ivar, 1, nullptr, cmp, value, false));
}
template <typename T>
MORI_DEVICE int test(T* ivar, Cmp cmp, WaitValue<T> value) {
  return detail::test_all(detail::wait_set("test", ivar, 1, nullptr, cmp, value, false));
}
template <typename T>
MORI_DEVICE int wait_until_equals(T* addr, WaitValue<T> value) {
  detail::wait_all(detail::wait_set("wait_until_equals", addr, 1, nullptr, CMP_EQ, value, false));
  return 0;
}
template <typename T>
MORI_DEVICE T wait_until_greater_than(T* addr, WaitValue<T> value) {
  return detail::wait_all(
      detail::wait_set("wait_until_greater_than", addr, 1, nullptr, CMP_GT, value, false));
}

// ---- arrays of ivars ----------------------------------------------------------------------------
template <typename T>
MORI_DEVICE void wait_until_all(T* ivars, size_t n, const int* status, Cmp cmp,
                                WaitValue<T> value) {
  detail::wait_all(detail::wait_set("wait_until_all", ivars, n, status, cmp, value, true));
}
template <typename T>
MORI_DEVICE size_t wait_until_any(T* ivars, size_t n, const int* status, Cmp cmp,
                                  WaitValue<T> value) {
  return detail::wait_any(detail::wait_set("wait_until_any", ivars, n, status, cmp, value, true));
}
template <typename T>
MORI_DEVICE size_t wait_until_some(T* ivars, size_t n, size_t* indices, const int* status, Cmp cmp,
                                   WaitValue<T> value) {
  return detail::wait_some(detail::wait_set("wait_until_some", ivars, n, status, cmp, value, true),
                           indices);
}
template <typename T>
MORI_DEVICE int test_all(T* ivars, size_t n, const int* status, Cmp cmp, WaitValue<T> value) {
  return detail::test_all(detail::wait_set("test_all", ivars, n, status, cmp, value, true));
}
template <typename T>
MORI_DEVICE size_t test_any(T* ivars, size_t n, const int* status, Cmp cmp, WaitValue<T> value) {
  return detail::test_any(detail::wait_set("test_any", ivars, n, status, cmp, value, true));
}
template <typename T>
MORI_DEVICE size_t test_some(T* ivars, size_t n, size_t* indices, const int* status, Cmp cmp,
                             WaitValue<T> value) {
  return detail::wait_set("test_some", ivars, n, status, cmp, value, true).collect(indices);
}

// ---- arrays of ivars, each with its own comparison value ----------------------------------------
template <typename T>
MORI_DEVICE void wait_until_all_vector(T* ivars, size_t n, const int* status, Cmp cmp,
                                       const WaitValue<T>* cmp_values) {
  detail::wait_all(detail::wait_set("wait_until_all_vector", ivars, n, status, cmp, cmp_values));
}
template <typename T>
MORI_DEVICE size_t wait_until_any_vector(T* ivars, size_t n, const int* status, Cmp cmp,
                                         const WaitValue<T>* cmp_values) {
  return detail::wait_any(
      detail::wait_set("wait_until_any_vector", ivars, n, status, cmp, cmp_values));
}
template <typename T>
MORI_DEVICE size_t wait_until_some_vector(T* ivars, size_t n, size_t* indices, const int* status,
                                          Cmp cmp, const WaitValue<T>* cmp_values) {
  return detail::wait_some(
      detail::wait_set("wait_until_some_vector", ivars, n, status, cmp, cmp_values), indices);
}
template <typename T>
MORI_DEVICE int test_all_vector(T* ivars, size_t n, const int* status, Cmp cmp,
                                const WaitValue<T>* cmp_values) {
  return detail::test_all(detail::wait_set("test_all_vector", ivars, n, status, cmp, cmp_values));
}
template <typename T>
MORI_DEVICE size_t test_any_vector(T* ivars, size_t n, const int* status, Cmp cmp,
                                   const WaitValue<T>* cmp_values) {
  return detail::test_any(detail::wait_set("test_any_vector", ivars, n, status, cmp, cmp_values));
}
template <typename T>
MORI_DEVICE size_t test_some_vector(T* ivars, size_t n, size_t* indices, const int* status, Cmp cmp,
                                    const WaitValue<T>* cmp_values) {
  return detail::wait_set("test_some_vector", ivars, n, status, cmp, cmp_values).collect(indices);
}

}  // namespace mori::shmem
