#!/usr/bin/env bash
# isa_budget: the device code of ABI functions or kernels, per function, against a budget file.
#
#   bench/isa_budget.sh <bitcode> <arch> <budget file> [--check]
#
# Compiles the named functions (and only what they reach: llvm-extract --recursive) of the device
# bitcode for <arch> and prints, per function: instructions, SGPRs, VGPRs, scratch bytes, calls
# (s_swappc / s_setpc into another function) and, for a kernel, waves per SIMD, read from llc's
# assembly and its per-function comments. With --check it fails when a function exceeds its budget's
# instruction count by more than 10%, or uses more scratch, more calls or more VGPRs than its budget
# allows.
#
# Budget file: one line per function, "name max_instructions max_scratch max_calls [vgprs.<arch>=N
# ...]", # comments. A VGPR limit is per arch (each arch's LLVM allocates differently); an arch
# without one is not held to any.
# LLVM tools: the arch's (tools/device_toolchain.sh: LLVM 22 for gfx950, LLVM_SUFFIX, default -19,
# otherwise).
set -euo pipefail
bitcode=$1 arch=$2 budget=$3 check=${4:-}
. "$(dirname "$0")/../tools/device_toolchain.sh"
sfx=$(mori_llvm_suffix "$arch")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

mapfile -t rows < <(grep -v '^[[:space:]]*\(#\|$\)' "$budget")
funcs=()
for row in "${rows[@]}"; do
  read -r name _ <<<"$row"
  funcs+=("--func=$name")
done
"llvm-extract$sfx" --recursive "${funcs[@]}" "$bitcode" -o "$tmp/part.bc"
"llc$sfx" -mtriple=amdgcn-amd-amdhsa -mcpu="$arch" -O2 "$tmp/part.bc" -o "$tmp/part.s"

# One line per function of the assembly: name instructions sgprs vgprs scratch calls.
awk -f "$(dirname "$0")/isa_table.awk" "$tmp/part.s" >"$tmp/table"

printf '%-48s %7s %6s %6s %8s %6s %6s  %s\n' function instr sgprs vgprs scratch calls waves budget
fail=0
for row in "${rows[@]}"; do
  read -r name max_instr max_scratch max_calls limits <<<"$row"
  max_vgprs=$(tr ' ' '\n' <<<"${limits:-}" | sed -n "s/^vgprs\.$arch=//p")
  read -r _ instr sgprs vgprs scratch calls waves < <(awk -v f="$name" '$1 == f' "$tmp/table") || {
    echo "isa_budget: $name not found in $bitcode" >&2
    exit 1
  }
  verdict=ok
  if [ "$instr" -gt $((max_instr + max_instr / 10)) ]; then verdict="OVER (instructions > $max_instr + 10%)"; fi
  if [ "$scratch" -gt "$max_scratch" ]; then verdict="OVER (scratch > $max_scratch)"; fi
  if [ "$calls" -gt "$max_calls" ]; then verdict="OVER (calls > $max_calls)"; fi
  if [ -n "$max_vgprs" ] && [ "$vgprs" -gt "$max_vgprs" ]; then verdict="OVER (VGPRs > $max_vgprs)"; fi
  [ "$verdict" = ok ] || fail=1
  printf '%-48s %7d %6d %6d %8d %6d %6s  %s\n' "$name" "$instr" "$sgprs" "$vgprs" "$scratch" "$calls" \
    "$waves" "$max_instr/$max_scratch/$max_calls${max_vgprs:+/$max_vgprs VGPRs} $verdict"
done
if [ "$check" = --check ] && [ "$fail" = 1 ]; then
  echo "isa_budget: over budget (see OVER above)" >&2
  exit 1
fi
