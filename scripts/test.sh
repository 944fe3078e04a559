#!/usr/bin/env bash
# Every test: install what is missing, build, and run the whole ctest suite (all labels).
# Extra arguments go to ctest, e.g. `scripts/test.sh -L unit`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${MORI_BUILD_DIR:-$root/build}
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
# The sanitizer lanes (scripts/sanitize.sh; MORI_SANITIZERS=0 skips them) and the fuzzers (scripts/fuzz.sh, a
# bounded run of each plus its checked-in inputs), before the main suite, whose ctest summary ends the output.
if [ "${MORI_SANITIZERS:-1}" != 0 ] && [ $# -eq 0 ]; then
  "$root/scripts/sanitize.sh" asan
  "$root/scripts/sanitize.sh" tsan
fi
if [ "${MORI_FUZZ_SECONDS:-60}" != 0 ] && [ $# -eq 0 ] && [ -x "$root/scripts/fuzz.sh" ]; then
  "$root/scripts/fuzz.sh" "${MORI_FUZZ_SECONDS:-60}"
fi
cd "$build"
ctest -j "$(nproc)" --output-on-failure --timeout 600 "$@"
