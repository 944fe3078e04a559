// The combines' reduction, shared by both modes' kernels and by moe_bench's MPI baseline: bf16 rows
// summed in fp32 in 8-element chunks (16 bytes of each row), rounded to bf16.
//
// A chunk is one 16-byte load of 8 bf16 and two 4-wide fp32 vectors (GCC and clang vector
// extensions). Widening and narrowing are shuffles, not arithmetic: a bf16 is the high half of its
// float, so interleaving zeros below the 8 values widens them (an unpack per half on x86), and
// picking the high halves of the rounded sums narrows them (a pack). In a GPU thread the same
// chunk is 8 VGPRs. Per element the additions are reference.hpp's scalar ones in the same order,
// and lanes past a short last chunk add zeros that are never stored, so the bits equal the
// reference's.
#pragma once

#include <cstddef>
#include <cstdint>

#include "numerics.hpp"

namespace moe {

// Elements of a row a combine sums together: 16 bytes of bf16.
inline constexpr size_t kChunk = 8;

using f32x4 = float __attribute__((vector_size(16)));
using u32x4 = uint32_t __attribute__((vector_size(16)));
using u16x8 = uint16_t __attribute__((vector_size(16)));

// The fp32 sums of one chunk's 8 elements.
struct Chunk {
  f32x4 lo = {}, hi = {};
};

template <typename To, typename From>
MOE_HD To bit_cast_vec(const From& v) {
  static_assert(sizeof(To) == sizeof(From));
  To t;
  __builtin_memcpy(&t, &v, sizeof t);
  return t;
}

MOE_HD void widen(u16x8 h, f32x4& lo, f32x4& hi) {
  const u16x8 z = {};
  lo = bit_cast_vec<f32x4>(__builtin_shufflevector(z, h, 0, 8, 1, 9, 2, 10, 3, 11));
  hi = bit_cast_vec<f32x4>(__builtin_shufflevector(z, h, 4, 12, 5, 13, 6, 14, 7, 15));
}

// to_bf16 of each lane, left in the lane's high half; the NaN case a select rather than a branch,
// so that it stays vector code.
MOE_HD u32x4 rounded(f32x4 f) {
  const u32x4 u = bit_cast_vec<u32x4>(f);
  const u32x4 nan = (u32x4)((u & 0x7FFFFFFFu) > 0x7F800000u);  // all ones in a NaN's lane
  return ((u | 0x400000u) & nan) | ((u + 0x7FFFu + ((u >> 16) & 1u)) & ~nan);
}

MOE_HD u16x8 narrow(const Chunk& c) {
  const u16x8 a = bit_cast_vec<u16x8>(rounded(c.lo)), b = bit_cast_vec<u16x8>(rounded(c.hi));
  return __builtin_shufflevector(a, b, 1, 3, 5, 7, 9, 11, 13, 15);
}

// f(lane) for lanes [0, n) of a short chunk. The loop unrolls to constant lane numbers, so that a
// GPU thread keeps its vectors in registers.
template <typename F>
MOE_HD void each_lane(size_t n, F&& f) {
  MOE_UNROLL
  for (size_t c = 0; c < kChunk; ++c)
    if (c < n) f(c);
}

// Elements [0, n) of a chunk of a row, n <= kChunk, the rest zero.
MOE_HD void load(const bf16* p, size_t n, f32x4& lo, f32x4& hi) {
  u16x8 h = {};
  if (n == kChunk)
    __builtin_memcpy(&h, p, sizeof h);
  else
    each_lane(n, [&](size_t c) { h[c] = p[c]; });
  widen(h, lo, hi);
}

// acc += row (normal mode: each PE's weighted sum arrives ready).
MOE_HD void add(Chunk& acc, const bf16* p, size_t n) {
  f32x4 lo, hi;
  load(p, n, lo, hi);
  acc.lo += lo;
  acc.hi += hi;
}

// acc += w * row (low latency: each expert's output, weighted here).
MOE_HD void add(Chunk& acc, float w, const bf16* p, size_t n) {
  f32x4 lo, hi;
  load(p, n, lo, hi);
  acc.lo += w * lo;
  acc.hi += w * hi;
}

// Elements [0, n) of the chunk's sums, rounded to bf16.
MOE_HD void store(bf16* p, const Chunk& acc, size_t n) {
  const u16x8 o = narrow(acc);
  if (n == kChunk)
    __builtin_memcpy(p, &o, sizeof o);
  else
    each_lane(n, [&](size_t c) { p[c] = o[c]; });
}

}  // namespace moe
