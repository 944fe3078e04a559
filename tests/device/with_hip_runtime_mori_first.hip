// mori first, then HIP's runtime header.
#include <hip/hip_runtime.h>

#include "mori/core.hpp"

__global__ void user_kernel(int* out, const int* in, size_t n) {
  __syncthreads();
  out[threadIdx.x] = static_cast<int>(mori::platform::ballot(in[0] > 0));
  mori::copy<mori::Warp>(out + 64, in, n * sizeof(int));
}
