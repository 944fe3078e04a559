// Remote atomics (OpenSHMEM 1.5 "AMO" routines), Thread scope, on the 32- and 64-bit integer types
// of MORI_FOR_EACH_AMO_TYPE. `dest` (or `source`) is a symmetric address of this PE; the operation
// acts on the same location at PE `pe`. T is deduced from that pointer alone, so
// atomic_add(counter, 1, pe) works for a uint64_t* counter.
//
//   non-fetching  atomic_inc, atomic_add, atomic_set, atomic_and, atomic_or, atomic_xor
//   fetching      atomic_fetch, atomic_fetch_inc, atomic_fetch_add, atomic_fetch_and,
//                 atomic_fetch_or, atomic_fetch_xor, atomic_swap, atomic_compare_swap
//   generic       atomic_nonfetch and atomic_fetch_op take an ABI atomicType code
//                 (state/amo.hpp), for the extern "C" layer
//
// Ordering: every AMO is atomic with respect to every other AMO on the same location, from any PE,
// and is otherwise relaxed at system scope. It orders nothing else: a thread that needs its earlier
// puts delivered before an AMO calls fence(pe) in between, and one that needs the AMO complete (for
// non-fetching AMOs) calls quiet(pe). Fetching AMOs return the value the location held just before
// the operation. This is OpenSHMEM's contract, and it lets P2P issue a single relaxed instruction.
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
inline constexpr bool kIsAmoType = in_list<T>(AmoTypes{});

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

// One call of the family: resolve the target and run `op` on the PE's transport. Returns the old
// value for fetching codes and 0 for the others.
template <typename T>
MORI_DEVICE T amo(const char* call, atomicType op, T* dest, T value, T compare, int pe, int qp) {
  static_assert(
      kIsAmoType<T>,
      "mori atomics take uint32_t, int32_t, uint64_t or int64_t (MORI_FOR_EACH_AMO_TYPE), "
      "the 32- and 64-bit integers every transport can update atomically");
  if constexpr (kIsAmoType<T>) {  // keep a wrong T to the one diagnostic above
    check_aligned(call, dest, sizeof(T), pe);
    const state::RemoteTarget t = resolve(call, dest, sizeof(T), pe, qp);
    return transport::with_transport(
        call, pe, [&]<typename Tr>() { return Tr::template amo<T>(call, op, t, value, compare); });
  } else {
    return T{};
  }
}

}  // namespace detail

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
// R is void for the non-fetching operations and the old value (T) for the fetching ones.
template <typename T, bool kFetch>
using AmoResult = std::conditional_t<kFetch, T, void>;
#define MORI_AMO_NAMED(code, number, kind, arg, fetch, form, api, ...) \
  MORI_AMO_NAMED_##form(code, fetch, api)
#define MORI_AMO_NAMED_VALUE(code, fetch, api)                                                     \
  template <typename T>                                                                            \
  MORI_DEVICE AmoResult<T, fetch> api(T* dest, AmoValue<T> value, int pe, int qp = 0) {            \
    return static_cast<AmoResult<T, fetch>>(detail::amo<T>(#api, code, dest, value, T{}, pe, qp)); \
  }
#define MORI_AMO_NAMED_UNIT(code, fetch, api)                                                     \
  template <typename T>                                                                           \
  MORI_DEVICE AmoResult<T, fetch> api(T* dest, int pe, int qp = 0) {                              \
    return static_cast<AmoResult<T, fetch>>(detail::amo<T>(#api, code, dest, T{1}, T{}, pe, qp)); \
  }
#define MORI_AMO_NAMED_READ(code, fetch, api)                                    \
  template <typename T>                                                          \
  MORI_DEVICE T api(const T* source, int pe, int qp = 0) {                       \
    return detail::amo<T>(#api, code, const_cast<T*>(source), T{}, T{}, pe, qp); \
  }
#define MORI_AMO_NAMED_COMPARE(code, fetch, api)                                        \
  template <typename T>                                                                 \
  MORI_DEVICE T api(T* dest, AmoValue<T> cond, AmoValue<T> value, int pe, int qp = 0) { \
    return detail::amo<T>(#api, code, dest, value, cond, pe, qp);                       \
  }
#define MORI_AMO_NAMED_NONE(code, fetch, api)
MORI_FOR_EACH_AMO(MORI_AMO_NAMED)
#undef MORI_AMO_NAMED_NONE
#undef MORI_AMO_NAMED_COMPARE
#undef MORI_AMO_NAMED_READ
#undef MORI_AMO_NAMED_UNIT
#undef MORI_AMO_NAMED_VALUE
#undef MORI_AMO_NAMED

// ---- generic, by ABI code -----------------------------------------------------------------------
// op: AMO_INC, AMO_SET, AMO_ADD, AMO_AND, AMO_OR, AMO_XOR, or a signal code (AMO_SIGNAL and
// SIGNAL_SET set, SIGNAL_ADD adds). Checked builds trap on any other code.
template <typename T>
MORI_DEVICE void atomic_nonfetch(T* dest, AmoValue<T> value, atomicType op, int pe, int qp = 0) {
  detail::check_amo_code("atomic_nonfetch", op, op >= AMO_INC && op <= AMO_SIGNAL_ADD,
                         "a non-fetching operation: use AMO_INC..SIGNAL_ADD", pe, dest);
  detail::amo<T>("atomic_nonfetch", op, dest, value, T{}, pe, qp);
}
// op: AMO_FETCH .. AMO_COMPARE_SWAP; `compare` is read by AMO_COMPARE_SWAP only. Returns the value
// before the operation. Checked builds trap on any other code.
template <typename T>
MORI_DEVICE T atomic_fetch_op(T* dest, AmoValue<T> value, AmoValue<T> compare, atomicType op,
                              int pe, int qp = 0) {
  detail::check_amo_code("atomic_fetch_op", op, op >= AMO_FETCH && op <= AMO_COMPARE_SWAP,
                         "a fetching operation: use AMO_FETCH..AMO_COMPARE_SWAP", pe, dest);
  return detail::amo<T>("atomic_fetch_op", op, dest, value, compare, pe, qp);
}

}  // namespace mori::shmem
