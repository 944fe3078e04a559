#!/usr/bin/env bash
# Configures and builds mori in ${MORI_BUILD_DIR:-build} for the host backend (shared by demo.sh and test.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${MORI_BUILD_DIR:-$root/build}
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=${MORI_BUILD_TYPE:-RelWithDebInfo} \
  "-DMORI_RDMA_PROVIDERS=mlx5;bnxt;ionic" ${MORI_CMAKE_ARGS:-} >/dev/null
cmake --build "$build" -j "$(nproc)"
