// HIP's runtime header first, then mori: mori must not redefine HIP's names (__device__, threadIdx,
// warpSize...).
#include <hip/hip_runtime.h>

#include "mori/core.hpp"

__global__ void user_kernel(int* out, const int* in, size_t n) {
  out[threadIdx.x] = mori::platform::lane_id() + warpSize;
  mori::copy<mori::Block>(out + 64, in, n * sizeof(int));
}
