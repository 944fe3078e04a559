// The NIC families whose RDMA providers this build's device code carries. Each family compiled in
// adds its instance of every device API family to each call site (transport/dispatch.hpp), so a
// build carries one by default: MLX5, as ROCm/mori builds (its CMake options USE_BNXT and
// USE_IONIC default to OFF).
//
// CMake's MORI_RDMA_PROVIDERS (a list of mlx5, bnxt, ionic; default "mlx5") defines
// MORI_RDMA_<NIC> to 1 or 0 for every target that links mori::device, the bitcode and installed
// packages included. Code compiled without CMake gets the same default from here.
#pragma once

#include "mori/state/gpu_states.hpp"

#ifndef MORI_RDMA_MLX5
#define MORI_RDMA_MLX5 1
#endif
#ifndef MORI_RDMA_BNXT
#define MORI_RDMA_BNXT 0
#endif
#ifndef MORI_RDMA_IONIC
#define MORI_RDMA_IONIC 0
#endif

namespace mori::transport {

inline constexpr bool kAnyRdma = MORI_RDMA_MLX5 || MORI_RDMA_BNXT || MORI_RDMA_IONIC;

// The family used when none is named (MORI_DEVICE_NIC unset): the first one compiled in.
constexpr state::Nic default_rdma_nic() {
  return MORI_RDMA_MLX5    ? state::Nic::kMlx5
         : MORI_RDMA_BNXT  ? state::Nic::kBnxt
         : MORI_RDMA_IONIC ? state::Nic::kIonic
                           : state::Nic::kNone;
}

// The families compiled in, as MORI_RDMA_PROVIDERS spells them ("mlx5;bnxt"), for messages.
constexpr const char* compiled_rdma_providers() {
  return MORI_RDMA_MLX5 && MORI_RDMA_BNXT && MORI_RDMA_IONIC ? "mlx5;bnxt;ionic"
         : MORI_RDMA_MLX5 && MORI_RDMA_BNXT                  ? "mlx5;bnxt"
         : MORI_RDMA_MLX5 && MORI_RDMA_IONIC                 ? "mlx5;ionic"
         : MORI_RDMA_BNXT && MORI_RDMA_IONIC                 ? "bnxt;ionic"
         : MORI_RDMA_MLX5                                    ? "mlx5"
         : MORI_RDMA_BNXT                                    ? "bnxt"
         : MORI_RDMA_IONIC                                   ? "ionic"
                                                             : "none";
}

}  // namespace mori::transport
