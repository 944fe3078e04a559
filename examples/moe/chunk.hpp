// The combines' reduction, shared by both modes' kernels and by moe_bench's MPI baseline: bf16 rows
// summed in fp32 in 8-element chunks (16 bytes of each row), rounded to bf16.
//
// A chunk is two 4-wide vectors (GCC and clang vector extensions): on the CPU each row's chunk is
// two 8-byte loads, widened and added in SSE registers; in a GPU thread it is the same 8 values in
// VGPRs. Per element the additions are reference.hpp's scalar ones in the same order, and lanes
// past a short last chunk add zeros that are never stored, so the bits equal the reference's.
#pragma once

#include <cstddef>
#include <cstdint>

#include "numerics.hpp"

namespace moe {

// Elements of a row a combine sums together: 16 bytes of bf16.
inline constexpr size_t kChunk = 8;

using f32x4 = float __attribute__((vector_size(16)));
using u32x4 = uint32_t __attribute__((vector_size(16)));
using u16x4 = uint16_t __attribute__((vector_size(8)));

// The fp32 sums of one chunk's 8 elements.
struct Chunk {
  f32x4 lo = {}, hi = {};
};

MOE_HD f32x4 widen(u16x4 h) {
  const u32x4 u = __builtin_convertvector(h, u32x4) << 16;
  f32x4 f;
  __builtin_memcpy(&f, &u, sizeof f);
  return f;
}

// to_bf16 of each lane, the NaN case a select rather than a branch, so that it stays vector code.
MOE_HD u16x4 narrow(f32x4 f) {
  u32x4 u;
  __builtin_memcpy(&u, &f, sizeof u);
  const u32x4 nan = (u32x4)((u & 0x7FFFFFFFu) > 0x7F800000u);  // all ones in a NaN's lane
  const u32x4 rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
  const u32x4 quiet = (u >> 16) | 0x40u;
  return __builtin_convertvector((quiet & nan) | (rounded & ~nan), u16x4);
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
  u16x4 a = {}, b = {};
  if (n == kChunk) {
    __builtin_memcpy(&a, p, sizeof a);
    __builtin_memcpy(&b, p + 4, sizeof b);
  } else {
    each_lane(n, [&](size_t c) {
      if (c < 4)
        a[c] = p[c];
      else
        b[c - 4] = p[c];
    });
  }
  lo = widen(a);
  hi = widen(b);
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
  const u16x4 a = narrow(acc.lo), b = narrow(acc.hi);
  if (n == kChunk) {
    __builtin_memcpy(p, &a, sizeof a);
    __builtin_memcpy(p + 4, &b, sizeof b);
  } else {
    each_lane(n, [&](size_t c) { p[c] = c < 4 ? a[c] : b[c - 4]; });
  }
}

}  // namespace moe
