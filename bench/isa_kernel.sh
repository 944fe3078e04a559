#!/usr/bin/env bash
# isa_kernel: the hot ABI entry points as a kernel compiles them, inlined.
#
#   bench/isa_kernel.sh <bitcode> <arch>
#
# isa_budget.sh measures each entry point as a callable function, where the AMDGPU calling
# convention makes a function that needs more than the caller-saved SGPRs save the callee-saved ones
# in a VGPR lane, and that VGPR in scratch (the few scratch bytes of its table). A kernel that links
# the bitcode inlines them and has no callee-saved registers. This links two kernels to <bitcode>,
# inlines and optimizes them as a front end would (internalize, O2), and fails unless each has no
# scratch, makes no call, runs 8 waves per SIMD and stays within its VGPRs (moe_signal: its
# target, 48; hot_paths the same since 2026-11-28, when it needed 44; on gfx950 51, below):
#   hot_paths   calls p, g, put, get, quiet, fetch_add, wait_until and barrier_all;
#   moe_signal  the reference user kernel: each warp puts with a signal (putmem_nbi_signal,
#               warp scope, SIGNAL_ADD) to one of several PEs, and thread 0 waits on the signal.
set -euo pipefail
bitcode=$1 arch=$2
. "$(dirname "$0")/../tools/device_toolchain.sh"
sfx=$(mori_llvm_suffix "$arch")
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
declare i32 @mori_shmem_putmem_nbi_signal_warp(ptr, ptr, i64, ptr, i64, i32, i32, i32)
declare i64 @mori_shmem_signal_wait_until(ptr, i32, i64)
declare i32 @llvm.amdgcn.workitem.id.x()
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
; SIGNAL_ADD = 10, SHMEM_CMP_GE = 5 (include/mori/state/amo.hpp).
define amdgpu_kernel void @moe_signal(ptr %dst, ptr %src, i64 %bytes, ptr %sig, i32 %npes,
                                      i64 %expect) #0 {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %warp = lshr i32 %tid, 6
  %pe = urem i32 %warp, %npes
  call i32 @mori_shmem_putmem_nbi_signal_warp(ptr %dst, ptr %src, i64 %bytes, ptr %sig, i64 1,
                                              i32 10, i32 %pe, i32 0)
  %first = icmp eq i32 %tid, 0
  br i1 %first, label %wait, label %done
wait:
  call i64 @mori_shmem_signal_wait_until(ptr %sig, i32 5, i64 %expect)
  br label %done
done:
  ret void
}
attributes #0 = { "target-cpu"="$arch" $features }
EOF
"llvm-link$sfx" "$tmp/kernel.ll" "$bitcode" -o "$tmp/linked.bc"
"opt$sfx" -internalize-public-api-list=hot_paths,moe_signal -passes='internalize,default<O2>' "$tmp/linked.bc" \
  -o "$tmp/opt.bc"
"llc$sfx" -mtriple=amdgcn-amd-amdhsa -mcpu="$arch" -O2 "$tmp/opt.bc" -o "$tmp/kernel.s"

fail=0
for kernel in hot_paths moe_signal; do
  read -r _ instructions sgprs vgprs scratch calls waves < <(
    awk -f "$(dirname "$0")/isa_table.awk" "$tmp/kernel.s" | awk -v k="$kernel" '$1 == k')
  # Waves per SIMD: llc's own figure for the kernel (its "; Occupancy:" comment, from the register
  # and LDS use). Without it, gfx90a/gfx942/gfx950's rule: 512 VGPRs per lane per SIMD (VGPRs and AGPRs
  # together), allocated in granules of 8, at most 8 waves (LLVM AMDGPUUsage, GCNSubtarget).
  if [ "$waves" = - ]; then
    waves=$((512 / ((vgprs + 7) / 8 * 8)))
    [ "$waves" -le 8 ] || waves=8
  fi
  echo "isa_kernel: $kernel ($arch): $instructions instructions, $sgprs SGPRs, $vgprs VGPRs," \
    "scratch $scratch bytes, $calls calls, $waves waves per SIMD"
  if [ "$scratch" != 0 ] || [ "$calls" != 0 ]; then
    echo "isa_kernel: $kernel uses scratch or makes calls" >&2
    fail=1
  fi
  if [ "$waves" -lt 8 ]; then
    echo "isa_kernel: $kernel runs $waves waves per SIMD, fewer than 8" >&2
    fail=1
  fi
  # The target, 48, is LLVM 19's on gfx942. LLVM 22 gives the same code 2-3 VGPRs more, on
  # gfx942 as on gfx950 (docs/benchmarks.md, "The device code"): gfx950, which only LLVM 22 compiles, is
  # held to its measured 51.
  max_vgprs=48
  [ "$arch" != gfx950 ] || max_vgprs=51
  if [ "$vgprs" -gt "$max_vgprs" ]; then
    echo "isa_kernel: $kernel needs $vgprs VGPRs, more than its $max_vgprs" >&2
    fail=1
  fi
done
exit "$fail"
