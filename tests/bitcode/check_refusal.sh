#!/usr/bin/env bash
# ctest bitcode.llvm19_refuses.gfx950: LLVM reads older bitcode, never newer (docs/bitcode.md, "Which
# LLVM reads which bitcode"). An older llvm-dis must fail on a bitcode a newer LLVM wrote, with an
# error that names the producer and the reader, rather than read it wrongly.
#   check_refusal.sh <older llvm-dis> <newer bitcode>
set -uo pipefail
dis=$1 bitcode=$2
[ -f "$bitcode" ] || {
  echo "FAIL: no $bitcode"
  exit 1
}
if err=$("$dis" "$bitcode" -o /dev/null 2>&1); then
  echo "FAIL: $dis read $bitcode"
  exit 1
fi
echo "$err"
grep -qE "Producer: 'LLVM[0-9.]+' Reader: 'LLVM [0-9.]+'" <<<"$err" || {
  echo "FAIL: the error does not name the producer and the reader"
  exit 1
}
