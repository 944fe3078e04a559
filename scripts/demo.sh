#!/usr/bin/env bash
# The main job: install what is missing, build, and run the demo kernel and the copy bandwidth table on the host
# backend.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${MORI_BUILD_DIR:-$root/build}
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
"$build/examples/hello_copy"
"$build/bench/copy_bw"
