#!/usr/bin/env bash
# Configures and builds mori in ${MORI_BUILD_DIR:-build} for the host backend (shared by demo.sh and test.sh).
# Arguments name the targets to build (demo.sh builds only the programs it runs); none builds everything.
# RelWithDebInfo with line tables only (-g1): backtraces and sanitizer reports keep their file:line, and the build
# is a fifth faster than with full -g (MORI_BUILD_TYPE=Debug for a debugger's view of locals).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${MORI_BUILD_DIR:-$root/build}
# Device code for gfx942, and gfx950 where clang++-22 is installed (MORI_GPU_TARGETS): each arch more costs the whole
# device ABI's compile again, and gfx942 and gfx90a compile the same source paths with the same clang-19, so the slow
# lane (scripts/test.sh -L slow) adds gfx90a; gfx950 is another compiler's code (clang-22), so the main lane has it.
targets=gfx942
! command -v clang++-22 >/dev/null || targets="gfx942;gfx950"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=${MORI_BUILD_TYPE:-RelWithDebInfo} \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" \
  "-DMORI_RDMA_PROVIDERS=mlx5;bnxt;ionic" "-DGPU_TARGETS=${MORI_GPU_TARGETS:-$targets}" ${MORI_CMAKE_ARGS:-} \
  >/dev/null
cmake --build "$build" -j "$(nproc)" ${1:+--target "$@"}
