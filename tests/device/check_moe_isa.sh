#!/usr/bin/env bash
# ctest device.moe_isa.<arch>: the MoE example's phase kernels (moe_kernels.hip) compiled as a
# release GPU build is (NDEBUG: no device checks, every device function inlined; -O2), with the RDMA
# dispatch for MLX5 only as bench/isa_budget.txt is measured, and held to bench/isa_budget_moe.txt
# by bench/isa_budget.sh: no scratch, no calls, instructions within 10% and VGPRs within the arch's
# limit.
#   check_moe_isa.sh <clang++ for arch> <repo root> <arch>
set -euo pipefail
cxx=$1 root=$2 arch=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$cxx" -std=c++20 -x hip --offload-arch="$arch" -nogpuinc -nogpulib --offload-device-only -O2 -DNDEBUG \
  -DMORI_RDMA_MLX5=1 -DMORI_RDMA_BNXT=0 -DMORI_RDMA_IONIC=0 -Wall -Wextra -Werror -I"$root/include" \
  -I"$root/examples/moe" -emit-llvm -c "$root/tests/device/moe_kernels.hip" -o "$work/moe_kernels.bc"
bash "$root/bench/isa_budget.sh" "$work/moe_kernels.bc" "$arch" "$root/bench/isa_budget_moe.txt" --check
