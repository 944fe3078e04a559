#!/usr/bin/env bash
# Every test: install what is missing, build, and run the whole ctest suite (every label but `slow`).
# Extra arguments go to ctest instead, e.g. `scripts/test.sh -L unit`; `scripts/test.sh -L slow` runs the slow lane
# (the BNXT and Ionic device suites at 4 PEs, README "Tests").
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${MORI_BUILD_DIR:-$root/build}
. "$root/scripts/lib/steps.sh"

# The sanitizer lanes (scripts/sanitize.sh; MORI_SANITIZERS=0 skips them) and the fuzzers (scripts/fuzz.sh, a
# bounded run of each plus its checked-in inputs; MORI_FUZZ_SECONDS=0 skips them) run before the main suite, and
# not when ctest arguments are given. A step that should run but whose script is missing or not executable fails
# here, before the build, instead of being skipped.
# The slow lane compiles device code for every GPU arch (scripts/build.sh builds gfx942 and gfx950): its
# device.*.gfx90a checks exist only in a tree configured with gfx90a.
if [[ " $* " == *slow* ]]; then
  slow_targets="gfx942;gfx90a"
  ! command -v clang++-22 >/dev/null || slow_targets+=";gfx950"
  export MORI_GPU_TARGETS=${MORI_GPU_TARGETS:-$slow_targets}
fi
fuzz_seconds=${MORI_FUZZ_SECONDS:-10}
sanitizers=0
fuzzers=0
if [ "${MORI_SANITIZERS:-1}" != 0 ] && [ $# -eq 0 ]; then
  require_step "$root/scripts/sanitize.sh" MORI_SANITIZERS=0
  sanitizers=1
fi
if [ "$fuzz_seconds" != 0 ] && [ $# -eq 0 ]; then
  require_step "$root/scripts/fuzz.sh" MORI_FUZZ_SECONDS=0
  fuzzers=1
fi

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
# A full run holds the suite to the README's count, before the long steps.
if [ $# -eq 0 ]; then
  check_test_count "$build" "$root/README.md"
fi
if [ "$sanitizers" = 1 ]; then
  step "sanitizer lane asan" "$root/scripts/sanitize.sh" asan
  step "sanitizer lane tsan" "$root/scripts/sanitize.sh" tsan
fi
if [ "$fuzzers" = 1 ]; then
  step "fuzzers ($fuzz_seconds s each)" "$root/scripts/fuzz.sh" "$fuzz_seconds"
fi
echo "test.sh: wall time per step (the ctest suite follows):"
printf '  %s\n' "${steps[@]}"
cd "$build"
if [ $# -eq 0 ]; then
  set -- -LE slow
fi
ctest -j "$(nproc)" --output-on-failure --timeout 600 "$@"
