// The type lists. Every typed family in mori (device API, ABI wrappers, tests) is generated from
// these two X-macros and never written out by hand.
#pragma once

#include <cstdint>

// The 11 element types of the typed RMA, atomic and wait families: X(c_type, abi_name).
// Note: on every supported target int8_t is signed char, so `int8` and `schar` name the same
// C++ type.
#define MORI_FOR_EACH_TYPE(X) \
  X(uint8_t, uint8)           \
  X(int8_t, int8)             \
  X(signed char, schar)       \
  X(uint16_t, uint16)         \
  X(int16_t, int16)           \
  X(uint32_t, uint32)         \
  X(int32_t, int32)           \
  X(uint64_t, uint64)         \
  X(int64_t, int64)           \
  X(float, float)             \
  X(double, double)

// The C type names of the single-value `_p` / `_g` family (the device ABI spec, docs/bitcode.md):
// X(c_type, abi_name). MORI_FOR_EACH_P_C_TYPE holds the distinct C++ types among them (what an
// overload set of non-template functions can take: the fixed-width names are aliases of these on
// every supported target), MORI_FOR_EACH_P_TYPE all of the family's names.
#define MORI_FOR_EACH_P_C_TYPE(X)  \
  X(int, int)                      \
  X(long, long)                    \
  X(long long, longlong)           \
  X(float, float)                  \
  X(double, double)                \
  X(char, char)                    \
  X(short, short)                  \
  X(unsigned int, uint)            \
  X(unsigned long, ulong)          \
  X(unsigned long long, ulonglong) \
  X(unsigned char, uchar)          \
  X(unsigned short, ushort)
#define MORI_FOR_EACH_P_TYPE(X) \
  MORI_FOR_EACH_P_C_TYPE(X)     \
  X(int32_t, int32)             \
  X(int64_t, int64)             \
  X(uint32_t, uint32)           \
  X(uint64_t, uint64)

// The 32- and 64-bit fixed-width integers: the types of the ABI's integer atomic and wait wrappers.
#define MORI_FOR_EACH_AMO_TYPE(X) \
  X(uint32_t, uint32)             \
  X(int32_t, int32)               \
  X(uint64_t, uint64)             \
  X(int64_t, int64)

// OpenSHMEM 1.5's AMO type classes (section 9.8) as distinct C++ types. On every supported target
// (LP64) the C names collapse onto fewer types: int is int32_t, long is int64_t and ptrdiff_t,
// unsigned int is uint32_t, unsigned long is uint64_t and size_t. long long and unsigned long long
// have the width of int64_t but are types of their own.
//   bitwise   and, or, xor (fetching and not)     the fixed-width integers, unsigned long long
//   standard  inc, add, compare_swap              the bitwise types and long long
//   extended  fetch, set, swap                    the standard types, float and double
#define MORI_FOR_EACH_AMO_BITWISE_TYPE(X) \
  MORI_FOR_EACH_AMO_TYPE(X)               \
  X(unsigned long long, ulonglong)
#define MORI_FOR_EACH_AMO_STANDARD_TYPE(X) \
  MORI_FOR_EACH_AMO_BITWISE_TYPE(X)        \
  X(long long, longlong)
// The extended types that are not standard: fetch, set and swap only (and the ABI has those three).
#define MORI_FOR_EACH_AMO_FLOAT_TYPE(X) \
  X(float, float)                       \
  X(double, double)
#define MORI_FOR_EACH_AMO_EXTENDED_TYPE(X) \
  MORI_FOR_EACH_AMO_STANDARD_TYPE(X)       \
  MORI_FOR_EACH_AMO_FLOAT_TYPE(X)

// The element sizes, in bits, of OpenSHMEM's sized strided RMA (shmem_iput<SIZE>,
// shmem_iget<SIZE>): X(bits).
#define MORI_FOR_EACH_RMA_SIZE(X) X(8) X(16) X(32) X(64) X(128)

namespace mori {

template <typename... Ts>
struct TypeList {
  static constexpr int kSize = sizeof...(Ts);
};

#define MORI_TYPE_ENTRY_(type, name) , type
namespace detail {
template <typename Ignored, typename... Ts>
struct DropFirst {
  using type = TypeList<Ts...>;
};
}  // namespace detail
// The 11 element types as a C++ type list, for templates and doctest's TEST_CASE_TEMPLATE.
using ElementTypes = detail::DropFirst<void MORI_FOR_EACH_TYPE(MORI_TYPE_ENTRY_)>::type;
using PTypes = detail::DropFirst<void MORI_FOR_EACH_P_TYPE(MORI_TYPE_ENTRY_)>::type;
using AmoTypes = detail::DropFirst<void MORI_FOR_EACH_AMO_TYPE(MORI_TYPE_ENTRY_)>::type;
using AmoBitwiseTypes =
    detail::DropFirst<void MORI_FOR_EACH_AMO_BITWISE_TYPE(MORI_TYPE_ENTRY_)>::type;
using AmoStandardTypes =
    detail::DropFirst<void MORI_FOR_EACH_AMO_STANDARD_TYPE(MORI_TYPE_ENTRY_)>::type;
using AmoExtendedTypes =
    detail::DropFirst<void MORI_FOR_EACH_AMO_EXTENDED_TYPE(MORI_TYPE_ENTRY_)>::type;
#undef MORI_TYPE_ENTRY_

static_assert(ElementTypes::kSize == 11,
              "the typed families cover exactly the 11 types of the device ABI spec");

}  // namespace mori
