#!/usr/bin/env bash
# Every test: install what is missing, build, and run the whole ctest suite (all labels).
# Extra arguments go to ctest, e.g. `scripts/test.sh -L unit`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${MORI_BUILD_DIR:-$root/build}

# Wall time of each step, printed before the main suite (whose ctest summary must end the output).
steps=()
step() {
  local name=$1 start=$SECONDS
  shift
  "$@"
  steps+=("$(printf '%-28s %4d s' "$name" $((SECONDS - start)))")
}

step install-deps "$root/scripts/install-deps.sh"
step build "$root/scripts/build.sh"
# The sanitizer lanes (scripts/sanitize.sh; MORI_SANITIZERS=0 skips them) and the fuzzers (scripts/fuzz.sh, a
# bounded run of each plus its checked-in inputs), before the main suite.
if [ "${MORI_SANITIZERS:-1}" != 0 ] && [ $# -eq 0 ]; then
  step "sanitizer lane asan" "$root/scripts/sanitize.sh" asan
  step "sanitizer lane tsan" "$root/scripts/sanitize.sh" tsan
fi
if [ "${MORI_FUZZ_SECONDS:-10}" != 0 ] && [ $# -eq 0 ] && [ -x "$root/scripts/fuzz.sh" ]; then
  step "fuzzers (${MORI_FUZZ_SECONDS:-10} s each)" "$root/scripts/fuzz.sh" "${MORI_FUZZ_SECONDS:-10}"
fi
echo "test.sh: wall time per step (the ctest suite follows):"
printf '  %s\n' "${steps[@]}"
cd "$build"
ctest -j "$(nproc)" --output-on-failure --timeout 600 "$@"
