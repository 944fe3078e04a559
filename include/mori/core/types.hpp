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
// X(c_type, abi_name).
#define MORI_FOR_EACH_P_TYPE(X)    \
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
  X(unsigned short, ushort)        \
  X(int32_t, int32)                \
  X(int64_t, int64)                \
  X(uint32_t, uint32)              \
  X(uint64_t, uint64)

// The 32- and 64-bit integer types of the atomic families (OpenSHMEM 1.5, "extended AMO" set).
#define MORI_FOR_EACH_AMO_TYPE(X) \
  X(uint32_t, uint32)             \
  X(int32_t, int32)               \
  X(uint64_t, uint64)             \
  X(int64_t, int64)

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
#undef MORI_TYPE_ENTRY_

static_assert(ElementTypes::kSize == 11,
              "the typed families cover exactly the 11 types of the device ABI spec");

}  // namespace mori
