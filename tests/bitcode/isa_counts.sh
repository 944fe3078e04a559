#!/usr/bin/env bash
# Compiles the device bitcode to an object for one arch and prints, for each named function, its own
# instruction count and the count with every function it calls, directly or not (the code a call of
# it can run, including cold failure paths).
#
#   isa_counts.sh <llc> <llvm-objdump> <bitcode> <arch> <function>...
set -euo pipefail
llc=$1 objdump=$2 bitcode=$3 arch=$4
shift 4
obj=$(mktemp --suffix=.o)
part=$(mktemp --suffix=.bc)
trap 'rm -f "$obj" "$part"' EXIT
# Only the named functions and what they call: compiling the whole library takes minutes.
extract=${llc/llc/llvm-extract}
funcs=()
for f in "$@"; do funcs+=("--func=$f"); done
"$extract" --recursive "${funcs[@]}" "$bitcode" -o "$part"
"$llc" -mtriple=amdgcn-amd-amdhsa -mcpu="$arch" -O2 -filetype=obj "$part" -o "$obj"

# One line per function: name, instruction count, then the functions it calls. Instructions carry
# their encoding in a trailing "// address: bytes" comment; a call's target is the symbol of the
# GOT or PC-relative relocation that the s_getpc/s_add_u32 pair before it resolves.
table=$("$objdump" -d -r --mcpu="$arch" "$obj" | awk '
  function flush() { if (name != "") print name, count, callees }
  /^[0-9a-f]+ <.*>:$/ {
    flush()
    name = substr($2, 2, length($2) - 3)
    count = 0
    callees = ""
    next
  }
  /^[[:space:]]+[a-z_0-9]+.*\/\/ [0-9A-F]+:/ { ++count; next }
  /R_AMDGPU_(GOTPCREL32|REL32)_LO/ { sym = $3; sub(/\+.*/, "", sym); callees = callees " " sym }
  END { flush() }')

for f in "$@"; do
  own=$(awk -v f="$f" '$1 == f {print $2}' <<<"$table")
  [ -n "$own" ] || {
    echo "FAIL: $f not found in $bitcode" >&2
    exit 1
  }
  declare -A seen=([$f]=1)
  queue=("$f") total=0 detail=""
  while [ ${#queue[@]} -gt 0 ]; do
    g=${queue[0]}
    queue=("${queue[@]:1}")
    read -r -a row <<<"$(awk -v f="$g" '$1 == f' <<<"$table")"
    [ ${#row[@]} -gt 0 ] || continue # not a function of this object (a data symbol)
    total=$((total + row[1]))
    [ "$g" = "$f" ] || detail+=" ${row[0]}=${row[1]}"
    for callee in "${row[@]:2}"; do
      [ -n "${seen[$callee]:-}" ] || {
        seen[$callee]=1
        queue+=("$callee")
      }
    done
  done
  unset seen
  echo "$arch $f: $own instructions; $total with its callees:${detail:- none}"
done
