#!/usr/bin/env bash
# Usage: check_copy_isa.sh CLANG OBJDUMP READELF INCLUDE_DIR KERNEL.hip OUTDIR
# Builds KERNEL.hip into a gfx942 code object and checks that the copy loop uses 16-byte global loads and stores
# (global_load_dwordx4 / global_store_dwordx4, not the flat forms) and that the kernel needs no scratch.
set -euo pipefail
clang=$1 objdump=$2 readelf=$3 inc=$4 src=$5 out=$6
mkdir -p "$out"
"$clang" -std=c++20 -x hip --offload-arch=gfx942 -nogpuinc -nogpulib --offload-device-only --no-gpu-bundle-output \
  -O3 -DNDEBUG -Wall -Wextra -Werror -I"$inc" "$src" -o "$out/copy_warp.hsaco"
"$objdump" -d --triple=amdgcn-amd-amdhsa --mcpu=gfx942 "$out/copy_warp.hsaco" >"$out/copy_warp.s"
"$readelf" --notes "$out/copy_warp.hsaco" >"$out/copy_warp.notes"

fail=0
for insn in global_load_dwordx4 global_store_dwordx4; do
  n=$(grep -c "$insn" "$out/copy_warp.s" || true)
  echo "$insn: $n"
  [ "$n" -gt 0 ] || { echo "FAIL: no $insn in copy<Warp>"; fail=1; }
done
flat=$(grep -cE "flat_(load|store)_dwordx4" "$out/copy_warp.s" || true)
echo "flat 16-byte accesses: $flat"
[ "$flat" -eq 0 ] || { echo "FAIL: copy<Warp> of global data uses flat 16-byte accesses"; fail=1; }
scratch=$(awk '/\.private_segment_fixed_size:/ {print $2; exit}' "$out/copy_warp.notes")
echo "scratch bytes: ${scratch:-missing}"
[ "${scratch:-x}" = "0" ] || { echo "FAIL: copy<Warp> uses scratch (${scratch:-missing})"; fail=1; }
grep -E "\.(sgpr|vgpr)_count:" "$out/copy_warp.notes" | sed 's/^ */  /'
exit $fail
