// Remote atomics (OpenSHMEM 1.5 "AMO" routines), Thread scope, on OpenSHMEM's AMO types
// (section 9.8; the lists are in core/types.hpp). `dest` (or `source`) is a symmetric address of
// this PE; the operation acts on the same location at PE `pe`. T is deduced from that pointer
// alone, so atomic_add(counter, 1, pe) works for a uint64_t* counter.
//
//   non-fetching  atomic_inc, atomic_add, atomic_set, atomic_and, atomic_or, atomic_xor
//   fetching      atomic_fetch, atomic_fetch_inc, atomic_fetch_add, atomic_fetch_and,
//                 atomic_fetch_or, atomic_fetch_xor, atomic_swap, atomic_compare_swap
//   non-blocking  the same with _nbi, each with a first parameter `fetch` where the old value
//   fetching      lands, complete after the next quiet (P2P writes it at once; RDMA lets the NIC
//                 write it when the NIC does the operation in one atomic, see transport/rdma.hpp)
//   generic       atomic_nonfetch and atomic_fetch_op take an ABI atomicType code
//                 (state/amo.hpp), for the extern "C" layer
//
// Types, as OpenSHMEM defines them (amo_accepts<T>(op) says whether it does; a named call outside
// its class fails to compile, a generic call outside it traps in checked builds):
//   inc, add, compare_swap      the standard AMO types: int, long, long long, their unsigned
//                               forms, int32_t, int64_t, uint32_t, uint64_t, size_t, ptrdiff_t
//   fetch, set, swap            the extended AMO types: the standard ones, float and double
//   and, or, xor                the bitwise AMO types: unsigned int, unsigned long,
//                               unsigned long long, int32_t, int64_t, uint32_t, uint64_t
// Every transport operates on the value's bits, as the unsigned integer of its width (AmoBits):
// signed arithmetic wraps, and a float or double keeps its exact bits (-0.0, NaN payloads,
// denormals) through set, swap and fetch.
//
// Ordering: every AMO is atomic with respect to every other AMO on the same location, from any PE,
// the owner included, on every transport (the AMO table routes them so: docs/device-api.md,
// "Atomicity across transports"), and is otherwise relaxed at system scope. It orders nothing else:
// a thread that needs its earlier puts delivered before an AMO calls fence(pe) in between, and one
// that needs the AMO complete (for non-fetching AMOs) calls quiet(pe). Fetching AMOs return the
// value the location held just before the operation. This is OpenSHMEM's contract, and it lets P2P
// issue a single relaxed instruction.
//
// `qp` picks one of the PE's RDMA queue pairs (MORI_NUM_QP_PER_PE); P2P ignores it.
#pragma once

#include <cstdint>
#include <type_traits>

#include "mori/core/types.hpp"
#include "mori/shmem/checks.hpp"
#include "mori/shmem/vocabulary.hpp"
#include "mori/transport/dispatch.hpp"

namespace mori::shmem {

namespace detail {

template <typename T, typename... Ts>
constexpr bool in_list(TypeList<Ts...>) {
  return (std::is_same_v<T, Ts> || ...);
}
template <typename T>
inline constexpr bool kIsAmoBitwise = in_list<T>(AmoBitwiseTypes{});
template <typename T>
inline constexpr bool kIsAmoStandard = in_list<T>(AmoStandardTypes{});
template <typename T>
inline constexpr bool kIsAmoExtended = in_list<T>(AmoExtendedTypes{});
static_assert(!std::is_same_v<long long, int64_t> && sizeof(long long) == sizeof(int64_t),
              "the AMO type lists assume LP64: long long is a type of its own, as wide as int64_t");

// The unsigned integer of T's width: what the transports update.
template <typename T>
using AmoBits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;

// With checks: traps unless `op` is one of the codes the call accepts, described by `expected`;
// `addr` is the operation's target.
MORI_DEVICE void check_amo_code(const char* call, atomicType op, bool accepted,
                                const char* expected, int pe, const void* addr) {
  if constexpr (MORI_DEVICE_CHECKS) {
    if (!accepted) {
      state::fail({state::DeviceErrorCode::kBadArgument, pe, reinterpret_cast<uint64_t>(addr)},
                  [&](state::Message& m) {
                    m << call << ": atomic code " << static_cast<int>(op) << " ("
                      << state::amo_label(op) << ") is not " << expected << " (PE " << pe << ")";
                  });
    }
  }
}

// With checks: an atomic's location must be naturally aligned (the instruction faults on the GPU,
// and std::atomic_ref requires it on the host).
MORI_DEVICE void check_aligned(const char* call, const void* addr, uint64_t align, int pe) {
  if constexpr (MORI_DEVICE_CHECKS) {
    const uint64_t a = reinterpret_cast<uint64_t>(addr);
    if (a % align) {
      state::fail({state::DeviceErrorCode::kBadAddress, pe, a}, [&](state::Message& m) {
        m << call << ": address " << hex(a) << " is not aligned to " << align << " bytes (PE " << pe
          << ")";
      });
    }
  }
}

// One call of the family: resolve the target and run `op` on the PE's transport, on T's bits.
// Returns the old value for fetching codes and 0 for the others; with `fetch` (the nbi forms of a
// fetching code) the old value goes there instead, no later than the next quiet, and 0 is returned.
template <typename T>
MORI_DEVICE T amo(const char* call, atomicType op, T* dest, T value, T compare, int pe, int qp,
                  T* fetch = nullptr) {
  static_assert(kIsAmoExtended<T>,
                "mori atomics take OpenSHMEM's extended AMO types: int, long, long long, unsigned "
                "int, unsigned long, unsigned long long, int32_t, int64_t, uint32_t, uint64_t, "
                "size_t, ptrdiff_t, float, double");
  if constexpr (kIsAmoExtended<T>) {  // keep a wrong T to the one diagnostic above
    using U = AmoBits<T>;
    check_aligned(call, dest, sizeof(T), pe);
    const state::RemoteTarget t = resolve(call, dest, sizeof(T), pe, qp);
    const U v = __builtin_bit_cast(U, value), c = __builtin_bit_cast(U, compare);
    if (fetch != nullptr) {
      check_aligned(call, fetch, sizeof(T), pe);
      transport::with_amo_transport(call, pe, [&]<typename Tr>() {
        Tr::template amo_nbi<U>(call, op, t, v, c, reinterpret_cast<U*>(fetch));
      });
      return T{};
    }
    return __builtin_bit_cast(T, transport::with_amo_transport(call, pe, [&]<typename Tr>() {
                                return Tr::template amo<U>(call, op, t, v, c);
                              }));
  } else {
    return T{};
  }
}

// The codes a generic call takes on T, in words, for its failure message (long long is the only
// standard type that is not bitwise).
template <typename T, bool kFetch>
constexpr const char* amo_codes() {
  if constexpr (kIsAmoBitwise<T>)
    return kFetch ? "a fetching operation: use AMO_FETCH..AMO_COMPARE_SWAP"
                  : "a non-fetching operation: use AMO_INC..SIGNAL_ADD";
  else if constexpr (kIsAmoStandard<T>)
    return kFetch ? "a fetching AMO on long long: use AMO_FETCH..AMO_COMPARE_SWAP but "
                    "FETCH_AND..FETCH_XOR"
                  : "a non-fetching AMO on long long: use AMO_INC..SIGNAL_ADD but AMO_AND..AMO_XOR";
  else
    return kFetch ? "a fetching AMO on float or double: use AMO_FETCH or AMO_SWAP"
                  : "a non-fetching AMO on float or double: use AMO_SET";
}

}  // namespace detail

// Whether OpenSHMEM defines operation `op` on T: T is in op's AMO type class (state/amo.hpp).
template <typename T>
constexpr bool amo_accepts(atomicType op) {
  switch (state::amo_type_class(op)) {
    case state::AmoTypeClass::kBitwise:
      return detail::kIsAmoBitwise<T>;
    case state::AmoTypeClass::kExtended:
      return detail::kIsAmoExtended<T>;
    default:
      return detail::kIsAmoStandard<T>;
  }
}

// Only the pointer deduces T; the values convert to it.
template <typename T>
using AmoValue = std::type_identity_t<T>;

// ---- by name: one function per row of MORI_FOR_EACH_AMO (state/amo.hpp) with a form ------------
// The row's form gives the parameters:
//   VALUE    R atomic_<op>(T* dest, value, pe, qp)
//   UNIT     R atomic_<op>(T* dest, pe, qp)                       inc, fetch_inc
//   READ     T atomic_fetch(const T* source, pe, qp)              reads the location atomically
//                                                                 (relaxed, like every AMO)
//   COMPARE  T atomic_compare_swap(T* dest, cond, value, pe, qp)  writes `value` only if the
//                                                                 location holds `cond`
// R is void for the non-fetching operations and the old value (T) for the fetching ones. A T
// outside the row's AMO type class fails to compile, with the class's types
// (MORI_AMO_TYPES_<kind>). Each fetching row also has its nbi form, OpenSHMEM's
// shmem_atomic_<op>_nbi:
//   void atomic_<op>_nbi(T* fetch, <the parameters above>)
// which writes the old value to `fetch` (any local memory of the calling thread) no later than
// the next quiet (quiet(), or quiet(pe) for the target PE) returns; read `fetch` only after it.
template <typename T, bool kFetch>
using AmoResult = std::conditional_t<kFetch, T, void>;
#define MORI_AMO_TYPES_kAdd                                                                    \
  "OpenSHMEM's standard AMO types only: int, long, long long, unsigned int, unsigned long, "   \
  "unsigned long long, int32_t, int64_t, uint32_t, uint64_t, size_t, ptrdiff_t (not float or " \
  "double)"
#define MORI_AMO_TYPES_kCompareSwap MORI_AMO_TYPES_kAdd
#define MORI_AMO_TYPES_kSet                                                             \
  "OpenSHMEM's extended AMO types: float, double, int, long, long long, unsigned int, " \
  "unsigned long, unsigned long long, int32_t, int64_t, uint32_t, uint64_t, size_t, ptrdiff_t"
#define MORI_AMO_TYPES_kLoad MORI_AMO_TYPES_kSet
#define MORI_AMO_TYPES_kAnd                                                               \
  "OpenSHMEM's bitwise AMO types only: unsigned int, unsigned long, unsigned long long, " \
  "int32_t, int64_t, uint32_t, uint64_t (not long long, float or double)"
#define MORI_AMO_TYPES_kOr MORI_AMO_TYPES_kAnd
#define MORI_AMO_TYPES_kXor MORI_AMO_TYPES_kAnd
#define MORI_AMO_REQUIRE(code, api, types) \
  static_assert(amo_accepts<T>(code), #api " is defined on " types);
#define MORI_AMO_NAMED(code, number, kind, arg, fetch, form, api, ...) \
  MORI_AMO_NAMED_##form(code, fetch, api, MORI_AMO_TYPES_##kind)       \
      MORI_AMO_NBI_##fetch(code, form, api, MORI_AMO_TYPES_##kind)
#define MORI_AMO_NAMED_VALUE(code, fetch, api, types)                                              \
  template <typename T>                                                                            \
  MORI_DEVICE AmoResult<T, fetch> api(T* dest, AmoValue<T> value, int pe, int qp = 0) {            \
    MORI_AMO_REQUIRE(code, api, types)                                                             \
    return static_cast<AmoResult<T, fetch>>(detail::amo<T>(#api, code, dest, value, T{}, pe, qp)); \
  }
#define MORI_AMO_NAMED_UNIT(code, fetch, api, types)                                              \
  template <typename T>                                                                           \
  MORI_DEVICE AmoResult<T, fetch> api(T* dest, int pe, int qp = 0) {                              \
    MORI_AMO_REQUIRE(code, api, types)                                                            \
    return static_cast<AmoResult<T, fetch>>(detail::amo<T>(#api, code, dest, T{1}, T{}, pe, qp)); \
  }
#define MORI_AMO_NAMED_READ(code, fetch, api, types)                             \
  template <typename T>                                                          \
  MORI_DEVICE T api(const T* source, int pe, int qp = 0) {                       \
    MORI_AMO_REQUIRE(code, api, types)                                           \
    return detail::amo<T>(#api, code, const_cast<T*>(source), T{}, T{}, pe, qp); \
  }
#define MORI_AMO_NAMED_COMPARE(code, fetch, api, types)                                 \
  template <typename T>                                                                 \
  MORI_DEVICE T api(T* dest, AmoValue<T> cond, AmoValue<T> value, int pe, int qp = 0) { \
    MORI_AMO_REQUIRE(code, api, types)                                                  \
    return detail::amo<T>(#api, code, dest, value, cond, pe, qp);                       \
  }
#define MORI_AMO_NAMED_NONE(code, fetch, api, types)
// The nbi forms of the fetching rows: void <api>_nbi(T* fetch, <the row's parameters>).
#define MORI_AMO_NBI_0(code, form, api, types)
#define MORI_AMO_NBI_1(code, form, api, types) MORI_AMO_NBI_##form(code, api##_nbi, types)
#define MORI_AMO_NBI_VALUE(code, api, types)                                       \
  template <typename T>                                                            \
  MORI_DEVICE void api(T* fetch, T* dest, AmoValue<T> value, int pe, int qp = 0) { \
    MORI_AMO_REQUIRE(code, api, types)                                             \
    detail::amo<T>(#api, code, dest, value, T{}, pe, qp, fetch);                   \
  }
#define MORI_AMO_NBI_UNIT(code, api, types)                     \
  template <typename T>                                         \
  MORI_DEVICE void api(T* fetch, T* dest, int pe, int qp = 0) { \
    MORI_AMO_REQUIRE(code, api, types)                          \
    detail::amo<T>(#api, code, dest, T{1}, T{}, pe, qp, fetch); \
  }
#define MORI_AMO_NBI_READ(code, api, types)                                      \
  template <typename T>                                                          \
  MORI_DEVICE void api(T* fetch, const T* source, int pe, int qp = 0) {          \
    MORI_AMO_REQUIRE(code, api, types)                                           \
    detail::amo<T>(#api, code, const_cast<T*>(source), T{}, T{}, pe, qp, fetch); \
  }
#define MORI_AMO_NBI_COMPARE(code, api, types)                                         \
  template <typename T>                                                                \
  MORI_DEVICE void api(T* fetch, T* dest, AmoValue<T> cond, AmoValue<T> value, int pe, \
                       int qp = 0) {                                                   \
    MORI_AMO_REQUIRE(code, api, types)                                                 \
    detail::amo<T>(#api, code, dest, value, cond, pe, qp, fetch);                      \
  }
MORI_FOR_EACH_AMO(MORI_AMO_NAMED)
#undef MORI_AMO_NBI_COMPARE
#undef MORI_AMO_NBI_READ
#undef MORI_AMO_NBI_UNIT
#undef MORI_AMO_NBI_VALUE
#undef MORI_AMO_NBI_1
#undef MORI_AMO_NBI_0
#undef MORI_AMO_NAMED_NONE
#undef MORI_AMO_NAMED_COMPARE
#undef MORI_AMO_NAMED_READ
#undef MORI_AMO_NAMED_UNIT
#undef MORI_AMO_NAMED_VALUE
#undef MORI_AMO_NAMED
#undef MORI_AMO_REQUIRE
#undef MORI_AMO_TYPES_kXor
#undef MORI_AMO_TYPES_kOr
#undef MORI_AMO_TYPES_kAnd
#undef MORI_AMO_TYPES_kLoad
#undef MORI_AMO_TYPES_kSet
#undef MORI_AMO_TYPES_kCompareSwap
#undef MORI_AMO_TYPES_kAdd

// ---- generic, by ABI code -----------------------------------------------------------------------
// op: AMO_INC, AMO_SET, AMO_ADD, AMO_AND, AMO_OR, AMO_XOR, or a signal code (AMO_SIGNAL and
// SIGNAL_SET set, SIGNAL_ADD adds), among those amo_accepts<T> (a float or double takes AMO_SET
// only). Checked builds trap on any other code.
template <typename T>
MORI_DEVICE void atomic_nonfetch(T* dest, AmoValue<T> value, atomicType op, int pe, int qp = 0) {
  detail::check_amo_code("atomic_nonfetch", op,
                         op >= AMO_INC && op <= AMO_SIGNAL_ADD && amo_accepts<T>(op),
                         detail::amo_codes<T, false>(), pe, dest);
  detail::amo<T>("atomic_nonfetch", op, dest, value, T{}, pe, qp);
}
// op: AMO_FETCH .. AMO_COMPARE_SWAP, among those amo_accepts<T> (a float or double takes AMO_FETCH
// and AMO_SWAP only); `compare` is read by AMO_COMPARE_SWAP only. Returns the value before the
// operation. Checked builds trap on any other code.
template <typename T>
MORI_DEVICE T atomic_fetch_op(T* dest, AmoValue<T> value, AmoValue<T> compare, atomicType op,
                              int pe, int qp = 0) {
  detail::check_amo_code("atomic_fetch_op", op,
                         op >= AMO_FETCH && op <= AMO_COMPARE_SWAP && amo_accepts<T>(op),
                         detail::amo_codes<T, true>(), pe, dest);
  return detail::amo<T>("atomic_fetch_op", op, dest, value, compare, pe, qp);
}

}  // namespace mori::shmem
