// The number formats of MoE traffic, the same code on the host (the reference) and in kernels, so
// that a kernel's output can be checked bit for bit:
//   bf16      the top 16 bits of an IEEE binary32, rounded to nearest even (NaN kept quiet)
//   fp8 e4m3  OCP 8-bit floating point "E4M3FN" (OCP 8-bit Floating Point Specification 1.0,
//             section 5.1): exponent bias 7, no infinities, 0x7F/0xFF are NaN, largest 448
// A token sent in fp8 carries one fp32 scale: value = e4m3 * scale, scale = amax / 448.
#pragma once

#include <cstdint>
#include <cstring>

#include "mori/platform/macros.hpp"

// Host and device: the host reference (reference.hpp) calls the same functions as the kernels.
#if defined(__HIP__)
#define MOE_HD __attribute__((host, device)) inline
#else
#define MOE_HD inline
#endif
// Loops over the top-k with a fixed trip count, unrolled so that their arrays stay in registers.
#if defined(__clang__)
#define MOE_UNROLL _Pragma("unroll")
#else
#define MOE_UNROLL _Pragma("GCC unroll 8")
#endif

namespace moe {

using bf16 = uint16_t;

MOE_HD uint32_t bits_of(float f) {
  uint32_t u;
  __builtin_memcpy(&u, &f, 4);
  return u;
}
MOE_HD float float_of(uint32_t u) {
  float f;
  __builtin_memcpy(&f, &u, 4);
  return f;
}

MOE_HD float to_float(bf16 h) { return float_of(uint32_t{h} << 16); }
MOE_HD bf16 to_bf16(float f) {
  const uint32_t u = bits_of(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<bf16>((u >> 16) | 0x40);  // quiet NaN
  return static_cast<bf16>((u + 0x7FFFu + ((u >> 16) & 1)) >> 16);
}

inline constexpr float kE4m3Max = 448.0f;

// Round to nearest even; beyond the largest finite value saturate (E4M3FN has no infinity), as
// the quantisers of DeepEP and MORI-EP do.
MOE_HD uint8_t to_e4m3(float f) {
  const uint32_t u = bits_of(f);
  const uint8_t sign = static_cast<uint8_t>((u >> 24) & 0x80);
  const float a = float_of(u & 0x7FFFFFFFu);
  if (!(a < kE4m3Max)) return sign | 0x7E;  // 448 and above, and NaN: the largest finite
  if (a < 0.015625f) {                      // below 2^-6: subnormal, m * 2^-9
    // m == 8 is 2^-6, which is the encoding of the smallest normal: the code carries over.
    return sign | static_cast<uint8_t>(__builtin_rintf(a * 512.0f));
  }
  int exp = static_cast<int>((bits_of(a) >> 23) & 0xFF) - 127;  // -6 .. 8
  uint32_t mant = (bits_of(a) >> 20) & 7, rest = bits_of(a) & 0xFFFFF;
  if (rest > 0x80000u || (rest == 0x80000u && (mant & 1))) ++mant;
  if (mant == 8) mant = 0, ++exp;
  if (exp > 8 || (exp == 8 && mant == 7)) return sign | 0x7E;  // rounded past 448
  return sign | static_cast<uint8_t>(((exp + 7) << 3) | mant);
}
MOE_HD float from_e4m3(uint8_t q) {
  const uint32_t sign = uint32_t{q & 0x80u} << 24, exp = (q >> 3) & 0xF, mant = q & 7;
  if (exp == 0) return float_of(bits_of(static_cast<float>(mant) * (1.0f / 512.0f)) | sign);
  return float_of(sign | ((exp - 7 + 127) << 23) | (mant << 20));
}

// The stand-in for an expert's FFN: a per-expert factor with 5 significant bits, so that a bf16
// input times it is exact in fp32 and only the weighted sums round.
MOE_HD float expert_factor(int expert) { return 0.5f + static_cast<float>(expert & 15) * 0.0625f; }

}  // namespace moe
