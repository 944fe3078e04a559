// copy<Scope>(dst, src, bytes): the participants of a scope move `bytes` bytes together.
//
// The aligned bulk moves in 16-byte vectors (global_load_dwordx4 / global_store_dwordx4 on gfx9
// when both sides are global memory). A head that brings dst to 16-byte alignment and a tail
// shorter than 16 bytes move bytewise. When dst and src differ in their alignment phase, the bulk
// moves in the widest unit both share. No byte outside [dst, dst + bytes) is written and none
// outside [src, src + bytes) is read.
//
// copy does not synchronise the scope: each participant has finished its own share when it returns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "mori/core/scope.hpp"
#include "mori/platform.hpp"

namespace mori {
namespace detail {

// The host's contiguous share [*begin, *end) of [0, n) for this participant.
template <Scope S>
MORI_DEVICE void share_span(size_t n, size_t* begin, size_t* end) {
  const size_t rank = S::rank(), size = S::size();
  const size_t chunk = (n + size - 1) / size;
  *begin = rank * chunk < n ? rank * chunk : n;
  *end = n - *begin < chunk ? n : *begin + chunk;
}

// Calls f(i) for this participant's share of [0, n). On the GPU a participant takes every size-th
// index, so that neighbouring lanes touch neighbouring addresses; on the host it takes one
// contiguous span (platform.hpp).
template <Scope S, typename F>
MORI_DEVICE void for_each_share(size_t n, F&& f) {
  if constexpr (platform::kLanesInterleave) {
    for (size_t i = S::rank(); i < n; i += S::size()) f(i);
  } else {
    size_t begin = 0, end = 0;
    share_span<S>(n, &begin, &end);
    for (size_t i = begin; i < end; ++i) f(i);
  }
}

template <Scope S, typename Unit>
MORI_DEVICE void copy_units(char* dst, const char* src, size_t count) {
  for_each_share<S>(count, [&](size_t i) {
    reinterpret_cast<Unit*>(dst)[i] = reinterpret_cast<const Unit*>(src)[i];
  });
}

// The GPU's share of a copy of `count` 16-byte vectors: participant `rank` of `size` moves vectors
// rank, rank + size, ..., so that neighbouring lanes touch neighbouring addresses, with kUnroll
// loads in flight before the stores. One source and one destination pointer advance; the unrolled
// accesses sit at multiples of the stride (16 * size) from them. kOpaqueStride: the stride, the
// same in every lane, reaches the loop as an opaque scalar. Seen through, loop strength reduction
// kept a 64-bit pointer per access and per side (a warp-scope put with signal: 74 VGPRs, 6 waves
// per SIMD; with it, 72 and 7). Thread's stride is the constant 16, which the accesses take as
// immediate offsets. Written for any platform, so that the host's unit tests run it lane by lane.
template <bool kOpaqueStride, size_t kUnroll = 4, typename Load, typename Store>
MORI_DEVICE void copy_vectors_interleaved(char* dst, const char* src, size_t count, size_t rank,
                                          size_t size, Load&& load, Store&& store) {
  const size_t stride = 16 * size;
  const char* s = src + 16 * rank;
  char* d = dst + 16 * rank;
  size_t i = rank;
  for (; i + (kUnroll - 1) * size < count;
       i += kUnroll * size, s += kUnroll * stride, d += kUnroll * stride) {
    size_t step = stride;
    if constexpr (kOpaqueStride) step = platform::opaque_uniform(static_cast<uint32_t>(stride));
    platform::Vec16 v[kUnroll];
    for (size_t u = 0; u < kUnroll; ++u) v[u] = load(s + u * step);
    for (size_t u = 0; u < kUnroll; ++u) store(d + u * step, v[u]);
  }
  for (; i < count; i += size, s += stride, d += stride) store(d, load(s));
}

// 16-byte vectors, both pointers 16-byte aligned.
template <Scope S, bool kGlobal>
MORI_DEVICE void copy_vectors(char* dst, const char* src, size_t count) {
  using platform::Vec16;
  if constexpr (platform::kLanesInterleave) {
    auto load = [](const char* p) {
      if constexpr (kGlobal)
        return platform::load16_global(p);
      else
        return *reinterpret_cast<const Vec16*>(p);
    };
    auto store = [](char* p, Vec16 v) {
      if constexpr (kGlobal)
        platform::store16_global(p, v);
      else
        *reinterpret_cast<Vec16*>(p) = v;
    };
    if constexpr (std::is_same_v<S, Warp>) {
      // A whole warp strides by a constant, and an iteration's four accesses are immediate
      // offsets from one address per side; the last warp of a block, when partial, moves a vector
      // per iteration. Issue 16's reference kernel (a warp put with signal): 52 VGPRs with the
      // runtime stride, 48 so.
      if (S::size() == platform::warp_size())
        copy_vectors_interleaved<false>(dst, src, count, S::rank(), platform::warp_size(), load,
                                        store);
      else
        copy_vectors_interleaved<false, 1>(dst, src, count, S::rank(), S::size(), load, store);
      return;
    }
    copy_vectors_interleaved<!std::is_same_v<S, Thread>>(dst, src, count, S::rank(), S::size(),
                                                         load, store);
  } else {
    // On the host a share is one span, and the CPU's own copy (glibc picks the widest vectors or
    // `rep movsb`) is the fastest way to move it.
    size_t begin = 0, end = 0;
    share_span<S>(count, &begin, &end);
    if (end > begin) std::memcpy(dst + 16 * begin, src + 16 * begin, 16 * (end - begin));
  }
}

}  // namespace detail

template <Scope S>
MORI_DEVICE void copy(void* dst, const void* src, size_t bytes) {
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
  const uintptr_t phase = (reinterpret_cast<uintptr_t>(d) ^ reinterpret_cast<uintptr_t>(s)) & 15;
  // Widest unit in which both pointers can be aligned at once.
  const size_t unit = phase == 0 ? 16 : (phase & -phase) < 8 ? (phase & -phase) : 8;
  size_t head = (unit - (reinterpret_cast<uintptr_t>(d) & (unit - 1))) & (unit - 1);
  if (head > bytes) head = bytes;
  detail::copy_units<S, uint8_t>(d, s, head);
  d += head, s += head, bytes -= head;

  const size_t units = bytes / unit;
  switch (unit) {
    case 16:
      if (platform::is_global(d) && platform::is_global(s))
        detail::copy_vectors<S, true>(d, s, units);
      else
        detail::copy_vectors<S, false>(d, s, units);
      break;
    case 8:
      detail::copy_units<S, uint64_t>(d, s, units);
      break;
    case 4:
      detail::copy_units<S, uint32_t>(d, s, units);
      break;
    case 2:
      detail::copy_units<S, uint16_t>(d, s, units);
      break;
    default:
      detail::copy_units<S, uint8_t>(d, s, units);
      break;
  }
  d += units * unit, s += units * unit, bytes -= units * unit;
  detail::copy_units<S, uint8_t>(d, s, bytes);
}

}  // namespace mori
