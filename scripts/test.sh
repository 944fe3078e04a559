#!/usr/bin/env bash
# Every test: install what is missing, build, and run the whole ctest suite (all labels).
# Extra arguments go to ctest, e.g. `scripts/test.sh -L unit`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${MORI_BUILD_DIR:-$root/build}
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
cd "$build"
ctest -j "$(nproc)" --output-on-failure --timeout 600 "$@"
