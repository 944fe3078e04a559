#!/usr/bin/env bash
# ctest bitcode.isa_budget.<arch>: builds the device bitcode as the budgets are defined (<arch>,
# default gfx942, release, RDMA dispatch for MLX5 only) into a scratch folder and checks
# bench/isa_budget.txt.
#   isa_budget_test.sh <repo root> <abi manifest tool> [<arch>]
set -euo pipefail
root=$1 manifest_tool=$2 arch=${3:-gfx942}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Only the budget's entry points (the reference kernel calls a few of them): each is compiled alone,
# flattened, so the rest of the ABI would change none of their code, only cost minutes.
functions=$(awk '!/^[[:space:]]*(#|$)/ {print $1}' "$root/bench/isa_budget.txt")
MORI_BITCODE_DEFINES="-DMORI_RDMA_MLX5=1 -DMORI_RDMA_BNXT=0 -DMORI_RDMA_IONIC=0" \
  MORI_ABI_MANIFEST_TOOL=$manifest_tool MORI_BITCODE_HOST=0 MORI_ABI_FUNCTIONS=$functions \
  bash "$root/tools/build_shmem_bitcode.sh" "$work" "$arch" >/dev/null
bash "$root/bench/isa_budget.sh" "$work/lib/libmori_shmem_device_$arch.bc" "$arch" \
  "$root/bench/isa_budget.txt" --check
# The same entry points inlined into a kernel, as front ends use them: no scratch, no calls.
bash "$root/bench/isa_kernel.sh" "$work/lib/libmori_shmem_device_$arch.bc" "$arch"
