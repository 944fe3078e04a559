#!/usr/bin/env bash
# isa_path: the executed paths of bench/isa_paths.txt against their budgets (docs/benchmarks.md,
# "Executed paths").
#
#   bench/isa_path.sh <repo root> <abi manifest tool> [<arch>] [--explain]
#
# Builds the device bitcode as the budgets are defined (<arch>, default gfx942, release, RDMA
# dispatch for MLX5 only) with the path markers on (-DMORI_ISA_PATH_MARKERS=1) into a scratch folder, compiles the
# spec's functions (llvm-extract --recursive, llc -O2, as bench/isa_budget.sh) and prints, per
# path: executed instructions (bench/isa_path.py), the function's static instructions, the budget,
# the target (mori's figure, where the spec gives one) and a verdict. Fails when a path exceeds its
# budget by more than 10%, or its target at all. --explain also prints each path's blocks. LLVM
# tools: the arch's (tools/device_toolchain.sh: LLVM 22 for gfx950, LLVM_SUFFIX, default -19,
# otherwise).
set -euo pipefail
root=$1 manifest_tool=$2 arch=gfx942 explain=
for arg in "${@:3}"; do
  case $arg in
    --explain) explain=$arg ;;
    *) arch=$arg ;;
  esac
done
. "$root/tools/device_toolchain.sh"
sfx=$(mori_llvm_suffix "$arch")
spec=$root/bench/isa_paths.txt
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

mapfile -t rows < <(grep -v '^[[:space:]]*\(#\|$\)' "$spec")
funcs=()
for row in "${rows[@]}"; do
  read -r _ name _ <<<"$row"
  funcs+=("--func=$name")
done
mapfile -t funcs < <(printf '%s\n' "${funcs[@]}" | sort -u)

# Only the spec's functions are compiled (MORI_ABI_FUNCTIONS): each wrapper is flattened on its own.
MORI_BITCODE_DEFINES="-DMORI_RDMA_MLX5=1 -DMORI_RDMA_BNXT=0 -DMORI_RDMA_IONIC=0 -DMORI_ISA_PATH_MARKERS=1" \
  MORI_ABI_MANIFEST_TOOL=$manifest_tool MORI_BITCODE_HOST=0 MORI_ABI_FUNCTIONS="${funcs[*]#--func=}" \
  bash "$root/tools/build_shmem_bitcode.sh" "$work" "$arch" >/dev/null
"llvm-extract$sfx" --recursive "${funcs[@]}" "$work/lib/libmori_shmem_device_$arch.bc" \
  -o "$work/part.bc"
"llc$sfx" -mtriple=amdgcn-amd-amdhsa -mcpu="$arch" -O2 "$work/part.bc" -o "$work/part.s"

printf '%-20s %-42s %8s %7s %7s %6s  %s\n' path function executed static budget target verdict
fail=0
for row in "${rows[@]}"; do
  read -r label name end markers budget target <<<"$row"
  target=${target:--}
  flags=(--markers "$markers")
  [ "$end" = store ] && flags+=(--until-store)
  [ "$explain" = --explain ] && flags+=(--explain)
  out=$(/usr/bin/python3 "$root/bench/isa_path.py" "$work/part.s" "$name" "${flags[@]}") || {
    echo "isa_path: $label failed (above)" >&2
    exit 1
  }
  read -r executed static <<<"$(head -1 <<<"$out")"
  verdict=ok
  if [ "$executed" -gt $((budget + budget / 10)) ]; then
    verdict="OVER ($budget + 10%)"
    fail=1
  fi
  # A target (mori's own figure) has no tolerance.
  if [ "$target" != - ] && [ "$executed" -gt "$target" ]; then
    verdict="OVER the target ($target)"
    fail=1
  fi
  printf '%-20s %-42s %8d %7d %7d %6s  %s\n' "$label" "$name" "$executed" "$static" "$budget" \
    "$target" "$verdict"
  [ "$explain" != --explain ] || tail -n +2 <<<"$out"
done
if [ "$fail" = 1 ]; then
  echo "isa_path: over budget (see OVER above)" >&2
  exit 1
fi
