# shellcheck shell=bash
# Sourced by the scripts that compile or read amdgcn code for one arch (tools/, bench/, tests/): the LLVM of each
# arch, as cmake/MoriDeviceCompiler.cmake chooses it. clang-19 knows gfx942 and gfx90a; gfx950 needs clang-22,
# whose bitcode the LLVM 19 tools cannot read (docs/bitcode.md), so every tool that touches a gfx950 bitcode or
# code object is LLVM 22's.
#
#   mori_llvm_suffix <arch>   the suffix of that arch's LLVM tools: LLVM_SUFFIX_GFX950 (default -22) for gfx950,
#                             LLVM_SUFFIX (default -19) for every other arch and for host
#   mori_device_cxx <arch>    its clang++: MORI_DEVICE_CXX_22 (default clang++-22) for gfx950, MORI_DEVICE_CXX
#                             (default clang++ with LLVM_SUFFIX) otherwise
mori_llvm_suffix() {
  case $1 in
    gfx950) echo "${LLVM_SUFFIX_GFX950--22}" ;;
    *) echo "${LLVM_SUFFIX--19}" ;;
  esac
}
mori_device_cxx() {
  case $1 in
    gfx950) echo "${MORI_DEVICE_CXX_22:-clang++$(mori_llvm_suffix "$1")}" ;;
    *) echo "${MORI_DEVICE_CXX:-clang++$(mori_llvm_suffix "$1")}" ;;
  esac
}
