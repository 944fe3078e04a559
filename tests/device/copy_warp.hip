// The kernel whose gfx942 ISA check_copy_isa.sh inspects: copy<Warp> of 16-byte aligned global
// data.
#include "mori/core.hpp"

MORI_KERNEL void copy_warp_aligned(void* dst, const void* src, size_t bytes) {
  mori::copy<mori::Warp>(__builtin_assume_aligned(dst, 16), __builtin_assume_aligned(src, 16),
                         bytes);
}
