// copy<Scope>(dst, src, bytes): the participants of a scope move `bytes` bytes together.
//
// The bulk moves in 16-byte vectors (global_load_dwordx4 / global_store_dwordx4 on gfx9) when dst
// and src can be 16-byte aligned at once and both are global memory, else in 4-byte words when
// they can be 4-byte aligned at once (an LDS or scratch pointer among them); the bytes before it
// (which bring dst to the unit's alignment) and after it move bytewise, in one loop. An odd phase,
// or one of 2 mod 4, moves bytewise throughout. No byte outside [dst, dst + bytes) is written and
// none outside [src, src + bytes) is read.
//
// copy does not synchronise the scope: each participant has finished its own share when it returns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "mori/core/scope.hpp"
#include "mori/platform.hpp"
#include "mori/platform/path_mark.hpp"

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
// keeps a 64-bit pointer per access and per side, VGPRs that cost a warp-scope put with signal a
// wave per SIMD. Thread's stride is the constant 16, which the accesses take as
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

// 16-byte vectors, both pointers 16-byte aligned and in global memory.
template <Scope S>
MORI_DEVICE void copy_vectors(char* dst, const char* src, size_t count) {
  using platform::Vec16;
  if constexpr (platform::kLanesInterleave) {
    auto load = [](const char* p) { return platform::load16_global(p); };
    auto store = [](char* p, Vec16 v) { platform::store16_global(p, v); };
    if constexpr (std::is_same_v<S, Warp>) {
      // A whole warp strides by a constant, and an iteration's four accesses are immediate
      // offsets from one address per side (fewer VGPRs than the runtime stride); the last warp of
      // a block, when partial, moves a vector per iteration.
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

// The bulk of a copy in units of 2^kShift bytes, dst brought to their alignment first (src shares
// it): moves it and returns its [*head, *head + body) of [0, bytes).
template <unsigned kShift, typename Move>
MORI_DEVICE size_t copy_bulk(uintptr_t d, size_t bytes, size_t* head, Move&& move) {
  constexpr size_t kUnit = size_t{1} << kShift;
  size_t h = (kUnit - (d & (kUnit - 1))) & (kUnit - 1);
  if (h > bytes) h = bytes;
  const size_t units = (bytes - h) >> kShift;
  move(h, units);
  *head = h;
  return units << kShift;
}
}  // namespace detail

template <Scope S>
MORI_DEVICE void copy(void* dst, const void* src, size_t bytes) {
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
  const uintptr_t at = reinterpret_cast<uintptr_t>(d);
  const uintptr_t phase = (at ^ reinterpret_cast<uintptr_t>(s)) & 15;
  // The bulk: 16-byte vectors when both pointers can be 16-byte aligned at once and are global
  // (global_load/store_dwordx4, several loads in flight), else 4-byte words when both can be
  // 4-byte aligned; else none. A flat pointer to LDS or scratch takes the word loop, where the
  // vector loop in flat form would be a second copy of it; every loop is inlined into each
  // scope's copy, so there is one per unit, and the bytes before and after the bulk share one.
  // Units are constants per branch: a division by a runtime unit is a 64-bit software divide on
  // amdgcn.
  size_t head = 0, body = 0;
  // Three tests and one branch: short-circuited, each test was a divergent branch of its own.
  bool vectors = phase == 0;
  vectors &= platform::is_global(d);
  vectors &= platform::is_global(s);
  if (vectors) {
    body = detail::copy_bulk<4>(at, bytes, &head, [&](size_t h, size_t units) {
      MORI_PATH_MARK("copy.vectors");  // bench/isa_paths.txt: an aligned put's first store
      detail::copy_vectors<S>(d + h, s + h, units);
    });
  } else if ((phase & 3) == 0) {
    body = detail::copy_bulk<2>(at, bytes, &head, [&](size_t h, size_t units) {
      detail::copy_units<S, uint32_t>(d + h, s + h, units);
    });
  }
  // The head [0, head) and the tail [head + body, bytes) in one loop.
  detail::for_each_share<S>(bytes - body, [&](size_t i) {
    const size_t k = i < head ? i : i + body;
    d[k] = s[k];
  });
}

}  // namespace mori
