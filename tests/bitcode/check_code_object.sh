#!/usr/bin/env bash
# Checks a code object built from kernels and the device bitcode, and prints its resource figures:
#   - each kernel has a descriptor (<kernel>.kd) and an entry in the AMDGPU metadata note;
#   - nothing is undefined: no undefined symbol, and every dynamic relocation (a call or an access
#     through the GOT, e.g. the device state) names a symbol the code object defines, so no call
#     can target an undefined function;
#   - per kernel: SGPRs, VGPRs, AGPRs, spills, scratch (private segment) and LDS bytes, and calls.
#
#   check_code_object.sh <llvm-readelf> <llvm-nm> <llvm-objdump> <arch> <code object> <kernel>...
set -euo pipefail
readelf=$1 nm=$2 objdump=$3 arch=$4 obj=$5
shift 5
fail() {
  echo "FAIL: $obj: $*" >&2
  exit 1
}

symbols=$("$nm" "$obj")
notes=$("$readelf" --notes "$obj")
for kernel in "$@"; do
  grep -qE " [Rr] $kernel\.kd\$" <<<"$symbols" || fail "no kernel descriptor $kernel.kd"
  grep -qE "^ +\.name: +$kernel\$" <<<"$notes" || fail "no metadata for $kernel"
done

undefined=$({
  "$nm" --undefined-only "$obj"
  "$nm" -D --undefined-only "$obj"
} | awk '{print $NF}')
[ -z "$undefined" ] || fail "undefined symbols:"$'\n'"$undefined"
dynsyms=$("$readelf" --dyn-syms -W "$obj")
for sym in $("$readelf" -r -W "$obj" | awk '$1 ~ /^[0-9a-f]+$/ && NF >= 5 {print $5}' | sort -u); do
  awk -v s="$sym" '$8 == s && $7 != "UND" {found = 1} END {exit !found}' <<<"$dynsyms" ||
    fail "a relocation refers to $sym, which is not defined here"
done

# The kernels' entries of the metadata note: keys at the kernel's own indentation (arguments are
# nested deeper).
awk '
  function flush() {
    if (name != "")
      printf "%s: sgpr %s, vgpr %s, agpr %s, spills sgpr %s vgpr %s, scratch %s B, lds %s B\n",
             name, k["sgpr_count"], k["vgpr_count"], k["agpr_count"], k["sgpr_spill_count"],
             k["vgpr_spill_count"], k["private_segment_fixed_size"], k["group_segment_fixed_size"]
    name = ""
    split("", k)
  }
  /^  - \./ { flush(); sub(/^  - /, "    ") }
  /^    \.[a-z_]+:/ {
    key = substr($1, 2, length($1) - 2)
    k[key] = $2
    if (key == "name") name = $2
  }
  END { flush() }
' <<<"$notes"
disassembly=$("$objdump" -d --mcpu="$arch" "$obj")
for kernel in "$@"; do
  calls=$(sed -n "/^[0-9a-f]* <$kernel>:/,/^\$/p" <<<"$disassembly" | grep -c s_swappc_b64 || true)
  echo "$kernel: $calls call(s)"
done
echo "OK: $obj"
