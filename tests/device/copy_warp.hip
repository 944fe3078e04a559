// The kernels whose ISA check_copy_isa.sh inspects, per arch: copy<Warp> of 16-byte aligned global
// data, and the system fence between two stores.
#include "mori/core.hpp"

MORI_KERNEL void copy_warp_aligned(void* dst, const void* src, size_t bytes) {
  mori::copy<mori::Warp>(__builtin_assume_aligned(dst, 16), __builtin_assume_aligned(src, 16),
                         bytes);
}

MORI_KERNEL void system_fence_between(int* data, int* flag) {
  *data = 1;
  mori::platform::system_fence();
  *flag = 1;
}
