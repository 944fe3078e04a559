// The atomic operations and the comparison operators of the device API, as one table each.
//
// MORI_FOR_EACH_AMO is the only list of the atomic operation codes. Everything that enumerates them
// is generated from it: the atomicType enum below, the names in failure messages, the arithmetic
// each transport performs (transport/p2p.hpp, transport/rdma.hpp), the named device functions
// (shmem/atomic.hpp), their extern "C" wrappers (src/abi/functions.def), the JSON manifest's enum,
// and the operations the atomic tests sweep. Adding an operation is adding a row.
#pragma once

#include <cstdint>

namespace mori::state {

// What an operation does to the location; the transports switch on this, not on the code.
enum class AmoKind : uint8_t {
  kNone,         // a marker of the ABI (AMO_ACK, AMO_END_OF_NONFETCH), not an operation
  kAdd,          // location += operand
  kSet,          // location = operand (a fetching set is a swap)
  kAnd,          // location &= operand
  kOr,           // location |= operand
  kXor,          // location ^= operand
  kLoad,         // read only
  kCompareSwap,  // location = operand if location == compare
};

// Where an operation's operand comes from.
enum class AmoArg : uint8_t {
  kNone,   // no operand (kLoad, the markers)
  kOne,    // the constant 1 (the inc operations)
  kValue,  // the caller's value
};

// One row per code of the device ABI (the device ABI spec's "atomic operation codes", whose names
// and values are fixed; the spec's SIGNAL_SET and SIGNAL_ADD also have AMO_ spellings, below). The
// columns:
//   code   the atomicType enumerator, also its name in messages
//   value  its ABI value
//   kind   AmoKind: what it does to the location
//   arg    AmoArg: where its operand comes from
//   fetch  1 when it returns the old value
//   form   the parameters of its named device function: VALUE (dest, value), UNIT (dest), READ
//          (const source), COMPARE (dest, cond, value), or NONE (the generic calls only)
//   api    the named device function (unused with form NONE)
// X receives the row and then the extra arguments given to MORI_FOR_EACH_AMO, so every X ends in
// `...` (one empty extra argument when there are none).
// clang-format off
#define MORI_FOR_EACH_AMO(X, ...)                                                                \
  /* code, value, kind, arg, fetch, form, api, then the extra arguments */                       \
  X(AMO_ACK,             1,  kNone,        kNone,  0, NONE,    ack,                 __VA_ARGS__) \
  X(AMO_INC,             2,  kAdd,         kOne,   0, UNIT,    atomic_inc,          __VA_ARGS__) \
  X(AMO_SET,             3,  kSet,         kValue, 0, VALUE,   atomic_set,          __VA_ARGS__) \
  X(AMO_ADD,             4,  kAdd,         kValue, 0, VALUE,   atomic_add,          __VA_ARGS__) \
  X(AMO_AND,             5,  kAnd,         kValue, 0, VALUE,   atomic_and,          __VA_ARGS__) \
  X(AMO_OR,              6,  kOr,          kValue, 0, VALUE,   atomic_or,           __VA_ARGS__) \
  X(AMO_XOR,             7,  kXor,         kValue, 0, VALUE,   atomic_xor,          __VA_ARGS__) \
  X(AMO_SIGNAL,          8,  kSet,         kValue, 0, NONE,    signal,              __VA_ARGS__) \
  X(SIGNAL_SET,          9,  kSet,         kValue, 0, NONE,    signal_set,          __VA_ARGS__) \
  X(SIGNAL_ADD,          10, kAdd,         kValue, 0, NONE,    signal_add,          __VA_ARGS__) \
  X(AMO_END_OF_NONFETCH, 11, kNone,        kNone,  0, NONE,    end,                 __VA_ARGS__) \
  X(AMO_FETCH,           12, kLoad,        kNone,  1, READ,    atomic_fetch,        __VA_ARGS__) \
  X(AMO_FETCH_INC,       13, kAdd,         kOne,   1, UNIT,    atomic_fetch_inc,    __VA_ARGS__) \
  X(AMO_FETCH_ADD,       14, kAdd,         kValue, 1, VALUE,   atomic_fetch_add,    __VA_ARGS__) \
  X(AMO_FETCH_AND,       15, kAnd,         kValue, 1, VALUE,   atomic_fetch_and,    __VA_ARGS__) \
  X(AMO_FETCH_OR,        16, kOr,          kValue, 1, VALUE,   atomic_fetch_or,     __VA_ARGS__) \
  X(AMO_FETCH_XOR,       17, kXor,         kValue, 1, VALUE,   atomic_fetch_xor,    __VA_ARGS__) \
  X(AMO_SWAP,            18, kSet,         kValue, 1, VALUE,   atomic_swap,         __VA_ARGS__) \
  X(AMO_COMPARE_SWAP,    19, kCompareSwap, kValue, 1, COMPARE, atomic_compare_swap, __VA_ARGS__)
// clang-format on

// `atomicType` in the extern "C" ABI: an int-sized enum whose values are fixed by the ABI.
enum atomicType : int {
#define MORI_AMO_ENUMERATOR(code, number, ...) code = number,
  MORI_FOR_EACH_AMO(MORI_AMO_ENUMERATOR)
#undef MORI_AMO_ENUMERATOR
};
// The AMO_ spellings of codes 9 and 10.
inline constexpr atomicType AMO_SIGNAL_SET = SIGNAL_SET;
inline constexpr atomicType AMO_SIGNAL_ADD = SIGNAL_ADD;
static_assert(sizeof(atomicType) == sizeof(int), "atomicType is int-sized in the C ABI");

// The fetching codes are exactly those above the ABI's marker; a row that says otherwise is wrong.
constexpr bool is_fetching(atomicType op) { return op > AMO_END_OF_NONFETCH; }
#define MORI_AMO_CHECK_FETCH(code, number, kind, arg, fetch, ...) \
  static_assert(is_fetching(code) == (fetch != 0), #code          \
                ": the fetch column "                             \
                "disagrees with the code's value");
MORI_FOR_EACH_AMO(MORI_AMO_CHECK_FETCH)
#undef MORI_AMO_CHECK_FETCH

// The ABI's name of a code, for messages; "unknown" outside the table.
constexpr const char* amo_label(atomicType op) {
  switch (op) {
#define MORI_AMO_LABEL(code, ...) \
  case code:                      \
    return #code;
    MORI_FOR_EACH_AMO(MORI_AMO_LABEL)
#undef MORI_AMO_LABEL
    default:
      return "unknown";
  }
}

// A code's row as the transports read it: the arithmetic, the operand and whether the old value
// is returned. A code outside the table reads as a marker (kind kNone). A constant code folds to
// constants, so a named operation compiles to its one case.
struct AmoRow {
  AmoKind kind;
  AmoArg arg;
  bool fetch;
};
constexpr AmoRow amo_row(atomicType op) {
  switch (op) {
#define MORI_AMO_ROW(code, number, kind, arg, fetch, ...) \
  case code:                                              \
    return {AmoKind::kind, AmoArg::arg, fetch != 0};
    MORI_FOR_EACH_AMO(MORI_AMO_ROW)
#undef MORI_AMO_ROW
    default:
      return {AmoKind::kNone, AmoArg::kNone, false};
  }
}

// The OpenSHMEM AMO type class (core/types.hpp) an operation is defined on: and, or and xor on the
// bitwise types; fetch, set and swap on the extended types (which hold floating-point values);
// inc, add and compare-swap on the standard types. The signal codes update an integer signal word
// and read as standard, as do the markers.
enum class AmoTypeClass : uint8_t { kStandard, kExtended, kBitwise };
constexpr bool is_signal(atomicType op) { return op >= AMO_SIGNAL && op <= SIGNAL_ADD; }
constexpr AmoTypeClass amo_type_class(atomicType op) {
  switch (amo_row(op).kind) {
    case AmoKind::kAnd:
    case AmoKind::kOr:
    case AmoKind::kXor:
      return AmoTypeClass::kBitwise;
    case AmoKind::kLoad:
      return AmoTypeClass::kExtended;
    case AmoKind::kSet:
      return is_signal(op) ? AmoTypeClass::kStandard : AmoTypeClass::kExtended;
    default:
      return AmoTypeClass::kStandard;
  }
}

// The operand an operation applies: 1 for the inc operations, the caller's value, or 0.
template <typename T>
constexpr T amo_operand(const AmoRow& row, T value) {
  return row.arg == AmoArg::kOne ? T{1} : row.arg == AmoArg::kValue ? value : T{0};
}

// The location's new value after operation `kind` with `operand` on `current` (the arithmetic of a
// compare-swap loop; unsigned T, so that adds wrap).
template <typename U>
constexpr U amo_apply(AmoKind kind, U current, U operand, U compare) {
  switch (kind) {
    case AmoKind::kAdd:
      return current + operand;
    case AmoKind::kAnd:
      return current & operand;
    case AmoKind::kOr:
      return current | operand;
    case AmoKind::kXor:
      return current ^ operand;
    case AmoKind::kCompareSwap:
      return current == compare ? operand : current;
    case AmoKind::kSet:
      return operand;
    default:  // kLoad
      return current;
  }
}

// Comparison operators of wait_until / test, with OpenSHMEM 1.5's values (SHMEM_CMP_EQ = 0 ...
// SHMEM_CMP_GE = 5, as in shmem.h of the OpenSHMEM reference implementation and NVSHMEM's
// nvshmem_cmp_type). X(code, value, suffix of the ABI's per-comparison names, then the extra
// arguments given to MORI_FOR_EACH_CMP), as with MORI_FOR_EACH_AMO.
#define MORI_FOR_EACH_CMP(X, ...) \
  X(CMP_EQ, 0, eq, __VA_ARGS__)   \
  X(CMP_NE, 1, ne, __VA_ARGS__)   \
  X(CMP_GT, 2, gt, __VA_ARGS__)   \
  X(CMP_LE, 3, le, __VA_ARGS__)   \
  X(CMP_LT, 4, lt, __VA_ARGS__)   \
  X(CMP_GE, 5, ge, __VA_ARGS__)
enum Cmp : int {
#define MORI_CMP_ENUMERATOR(code, number, ...) code = number,
  MORI_FOR_EACH_CMP(MORI_CMP_ENUMERATOR)
#undef MORI_CMP_ENUMERATOR
};

}  // namespace mori::state
