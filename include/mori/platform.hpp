// The platform layer: lane, warp and block geometry, barriers, warp collectives, scoped atomics and
// fences, relax(), clock_ticks(), clock_ns() and trap(). The rest of mori is written against these
// names only.
#pragma once

#include "mori/platform/macros.hpp"

#if defined(MORI_HOST_SIDE_ONLY)
#error "mori device code on the hip backend must be compiled with clang -x hip"
#endif

#if defined(MORI_ON_AMDGCN)
#include "mori/platform/amdgcn.hpp"
#else
#include "mori/platform/host.hpp"
#endif

namespace mori::platform {

// Derived geometry, the same on both backends.
MORI_DEVICE int block_threads() { return static_cast<int>(block_dim().count()); }
MORI_DEVICE int thread_rank() {
  const Dim3 t = thread_idx(), b = block_dim();
  return static_cast<int>((t.z * b.y + t.y) * b.x + t.x);
}
MORI_DEVICE int block_rank() {
  const Dim3 i = block_idx(), g = grid_dim();
  return static_cast<int>((i.z * g.y + i.y) * g.x + i.x);
}
MORI_DEVICE int grid_blocks() { return static_cast<int>(grid_dim().count()); }
// The same in every lane of a warp, so taken as a scalar: the GPU then keeps no thread index
// components in VGPRs for it.
MORI_DEVICE int warp_id() { return static_cast<int>(uniform(thread_rank())) / warp_size(); }
// Lanes that exist in this warp: the last warp of a block whose size is not a multiple of the width
// is partial.
MORI_DEVICE int warp_lanes() {
  const int rest = block_threads() - warp_id() * warp_size();
  return rest < warp_size() ? rest : warp_size();
}

}  // namespace mori::platform
