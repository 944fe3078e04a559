#!/usr/bin/env bash
# Builds the proof-of-concept kernels along both paths for one target:
#   path A  gen_kernels --syntax mlir -> mlir-translate-19 --mlir-to-llvmir -> link -> module
#   path B  gen_kernels --syntax llvm -----------------------------------------> link -> module
# where "link" is tools/link_shmem_module.sh: llvm-link-19 with mori's device bitcode, then
# clang-19 into a gfx942/gfx90a code object or, for target host, a shared object. gfx950 takes the
# same link with the LLVM 22 tools (tools/device_toolchain.sh), since LLVM 19 cannot read its bitcode.
#
#   build_kernels.sh <gen_kernels> <libdir> <outdir> <target>
#
# libdir holds build_shmem_bitcode.sh's output. Writes <outdir>/shmem_kernels_{mlir,llvm}_<target>
# .hsaco (or .so for host), and keeps the generated .mlir and .ll beside them for reading.
set -euo pipefail

[ $# -eq 4 ] || {
  echo "usage: $0 <gen_kernels> <libdir> <outdir> <target: gfx942|gfx90a|gfx950|host>" >&2
  exit 2
}
gen=$1 libdir=$2 outdir=$3 target=$4
root=$(cd "$(dirname "$0")/../../.." && pwd)
. "$root/tools/device_toolchain.sh"
sfx=$(mori_llvm_suffix "$target")
mkdir -p "$outdir"

if [ "$target" = host ]; then
  kind=host ext=so bitcode=$libdir/libmori_shmem_device_host.bc
else
  kind=amdgcn ext=hsaco bitcode=$libdir/libmori_shmem_device_$target.bc
fi
# The kernels take the library's triple and data layout, so that llvm-link joins like with like.
ir=$("llvm-dis$sfx" "$bitcode" -o -)
triple=$(sed -n 's/^target triple = "\(.*\)"$/\1/p' <<<"$ir")
datalayout=$(sed -n 's/^target datalayout = "\(.*\)"$/\1/p' <<<"$ir")

for syntax in mlir llvm; do
  base=$outdir/shmem_kernels_${syntax}_$target
  "$gen" --syntax "$syntax" --target "$kind" --manifest "$libdir/mori_shmem_device_abi.json" \
    --triple "$triple" --datalayout "$datalayout" -o "$base.$syntax"
  if [ "$syntax" = mlir ]; then
    # MLIR 19 for every arch: LLVM IR text, which the LLVM 22 of gfx950 reads as well.
    "mlir-translate$(mori_llvm_suffix host)" --mlir-to-llvmir "$base.mlir" -o "$base.ll"
  else
    mv "$base.llvm" "$base.ll"
  fi
  "$root/tools/link_shmem_module.sh" "$libdir" "$target" "$base.$ext" "$base.ll"
done
