#!/usr/bin/env bash
# isa_kernel: the hot ABI entry points as a kernel compiles them, inlined.
#
#   bench/isa_kernel.sh <bitcode> <arch>
#
# isa_budget.sh measures each entry point as a callable function, where the AMDGPU calling
# convention makes a function that needs more than the caller-saved SGPRs save the callee-saved ones
# in a VGPR lane, and that VGPR in scratch (the few scratch bytes of its table). A kernel that links
# the bitcode inlines them and has no callee-saved registers. This links a kernel calling p, g, put,
# get, quiet, fetch_add, wait_until and barrier_all to <bitcode>, inlines and optimizes it as a
# front end would (internalize, O2), and fails unless the kernel has no scratch and makes no call.
set -euo pipefail
bitcode=$1 arch=$2
sfx=${LLVM_SUFFIX--19}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The kernel takes the target's CPU and features from the bitcode: the inliner refuses callees whose
# features the caller lacks.
"llvm-dis$sfx" "$bitcode" -o "$tmp/lib.ll"
layout=$(grep -m1 '^target datalayout' "$tmp/lib.ll")
features=$(grep -m1 -o '"target-features"="[^"]*"' "$tmp/lib.ll")
cat >"$tmp/kernel.ll" <<EOF
$layout
target triple = "amdgcn-amd-amdhsa"
declare i32 @mori_shmem_int32_p(ptr, i32, i32, i32)
declare i32 @mori_shmem_int32_g(ptr, i32, i32)
declare i32 @mori_shmem_putmem_nbi_thread(ptr, ptr, i64, i32, i32)
declare i32 @mori_shmem_getmem_thread(ptr, ptr, i64, i32, i32)
declare i32 @mori_shmem_quiet_thread()
declare i64 @mori_shmem_uint64_atomic_fetch_add_thread(ptr, i64, i32, i32)
declare i64 @mori_shmem_uint64_wait_until(ptr, i32, i64)
declare i32 @mori_shmem_barrier_all_thread()
define amdgpu_kernel void @hot_paths(ptr %dst, ptr %src, i64 %bytes, i32 %pe, ptr %out) #0 {
  %v = call i32 @mori_shmem_int32_g(ptr %src, i32 %pe, i32 0)
  call i32 @mori_shmem_int32_p(ptr %dst, i32 %v, i32 %pe, i32 0)
  call i32 @mori_shmem_putmem_nbi_thread(ptr %dst, ptr %src, i64 %bytes, i32 %pe, i32 0)
  call i32 @mori_shmem_getmem_thread(ptr %dst, ptr %src, i64 %bytes, i32 %pe, i32 0)
  call i32 @mori_shmem_quiet_thread()
  %old = call i64 @mori_shmem_uint64_atomic_fetch_add_thread(ptr %dst, i64 1, i32 %pe, i32 0)
  %seen = call i64 @mori_shmem_uint64_wait_until(ptr %src, i32 5, i64 %old)
  store i64 %seen, ptr %out
  call i32 @mori_shmem_barrier_all_thread()
  ret void
}
attributes #0 = { "target-cpu"="$arch" $features }
EOF
"llvm-link$sfx" "$tmp/kernel.ll" "$bitcode" -o "$tmp/linked.bc"
"opt$sfx" -internalize-public-api-list=hot_paths -passes='internalize,default<O2>' "$tmp/linked.bc" \
  -o "$tmp/opt.bc"
"llc$sfx" -mtriple=amdgcn-amd-amdhsa -mcpu="$arch" -O2 "$tmp/opt.bc" -o "$tmp/kernel.s"

read -r _ instructions sgprs vgprs scratch calls < <(awk -f "$(dirname "$0")/isa_table.awk" \
  "$tmp/kernel.s" | awk '$1 == "hot_paths"')
# Waves per SIMD: llc's own figure for the kernel (its "; Occupancy:" comment, from the register
# and LDS use). Without it, gfx90a/gfx942's rule: 512 VGPRs per lane per SIMD (VGPRs and AGPRs
# together), allocated in granules of 8, at most 8 waves (LLVM AMDGPUUsage, GCNSubtarget).
waves=$(awk '/^; Occupancy:/ {print $3; exit}' "$tmp/kernel.s")
if [ -z "$waves" ]; then
  waves=$((512 / ((vgprs + 7) / 8 * 8)))
  [ "$waves" -le 8 ] || waves=8
fi
echo "isa_kernel: hot_paths ($arch): $instructions instructions, $sgprs SGPRs, $vgprs VGPRs," \
  "scratch $scratch bytes, $calls calls, $waves waves per SIMD"
if [ "$scratch" != 0 ] || [ "$calls" != 0 ]; then
  echo "isa_kernel: the inlined hot paths use scratch or make calls" >&2
  exit 1
fi
