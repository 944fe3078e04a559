#!/usr/bin/env bash
# Configures and builds mori in ${MORI_BUILD_DIR:-build} for the host backend (shared by demo.sh and test.sh).
# RelWithDebInfo with line tables only (-g1): backtraces and sanitizer reports keep their file:line, and the build
# is a fifth faster than with full -g (MORI_BUILD_TYPE=Debug for a debugger's view of locals).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${MORI_BUILD_DIR:-$root/build}
# Device code for gfx942 only (MORI_GPU_TARGETS): every arch compiles the same source paths, and each one more
# costs the whole device ABI's compile again; the slow lane (scripts/test.sh -L slow) adds gfx90a.
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=${MORI_BUILD_TYPE:-RelWithDebInfo} \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" \
  "-DMORI_RDMA_PROVIDERS=mlx5;bnxt;ionic" "-DGPU_TARGETS=${MORI_GPU_TARGETS:-gfx942}" ${MORI_CMAKE_ARGS:-} \
  >/dev/null
cmake --build "$build" -j "$(nproc)"
