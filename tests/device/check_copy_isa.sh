#!/usr/bin/env bash
# Usage: check_copy_isa.sh CLANG OBJDUMP READELF INCLUDE_DIR KERNEL.hip OUTDIR [ARCH]
# Builds KERNEL.hip into a code object for ARCH (default gfx942; CLANG, OBJDUMP and READELF are that
# arch's LLVM) and checks that:
#   - the copy loop uses 16-byte global loads and stores (global_load_dwordx4 / global_store_dwordx4,
#     not the flat forms) and the kernel needs no scratch;
#   - the system fence writes back and invalidates both cache levels (buffer_wbl2 sc0 sc1 and
#     buffer_inv sc0 sc1: LLVM AMDGPUUsage, "Memory Model GFX942", which GFX950 shares) between the
#     two stores.
set -euo pipefail
clang=$1 objdump=$2 readelf=$3 inc=$4 src=$5 out=$6 arch=${7:-gfx942}
mkdir -p "$out"
"$clang" -std=c++20 -x hip --offload-arch="$arch" -nogpuinc -nogpulib --offload-device-only \
  --no-gpu-bundle-output -O3 -DNDEBUG -Wall -Wextra -Werror -I"$inc" "$src" -o "$out/copy_warp.hsaco"
"$objdump" -d --triple=amdgcn-amd-amdhsa --mcpu="$arch" "$out/copy_warp.hsaco" >"$out/copy_warp.s"
"$readelf" --notes "$out/copy_warp.hsaco" >"$out/copy_warp.notes"
kernel() { sed -n "/^[0-9a-f]* <$1>:/,/^\$/p" "$out/copy_warp.s" | sed 's@ *//.*@@'; }

fail=0
copy=$(kernel copy_warp_aligned)
for insn in global_load_dwordx4 global_store_dwordx4; do
  n=$(grep -c "$insn" <<<"$copy" || true)
  echo "$arch $insn: $n"
  [ "$n" -gt 0 ] || { echo "FAIL: no $insn in copy<Warp>"; fail=1; }
done
flat=$(grep -cE "flat_(load|store)_dwordx4" <<<"$copy" || true)
echo "$arch flat 16-byte accesses: $flat"
[ "$flat" -eq 0 ] || { echo "FAIL: copy<Warp> of global data uses flat 16-byte accesses"; fail=1; }
# The copy kernel's own note entry (the notes list every kernel of the code object).
scratch=$(awk '/\.name: +copy_warp_aligned$/ {on = 1} on && /\.private_segment_fixed_size:/ {print $2; exit}' \
  "$out/copy_warp.notes")
[ -n "$scratch" ] || scratch=$(awk '/\.private_segment_fixed_size:/ {print $2; exit}' "$out/copy_warp.notes")
echo "$arch scratch bytes: ${scratch:-missing}"
[ "${scratch:-x}" = "0" ] || { echo "FAIL: copy<Warp> uses scratch (${scratch:-missing})"; fail=1; }
grep -E "\.(sgpr|vgpr)_count:" "$out/copy_warp.notes" | sed 's/^ */  /'

# The fence between the stores: the write-back, then the invalidate, of both levels (sc0 sc1).
fence=$(kernel system_fence_between | grep -E "global_store|flat_store|buffer_wbl2|buffer_inv" |
  awk '{print $1, ($1 ~ /^buffer_/ ? $2 " " $3 : "")}' | sed 's/ *$//' | tr '\n' ';')
echo "$arch store, fence, store: $fence"
case $fence in
  *_store_dword\;buffer_wbl2\ sc0\ sc1\;buffer_inv\ sc0\ sc1\;*_store_dword\;) ;;
  *) echo "FAIL: the system fence is not buffer_wbl2 sc0 sc1 + buffer_inv sc0 sc1 between the stores"; fail=1 ;;
esac
exit $fail
