#!/usr/bin/env bash
# The libFuzzer fuzzers (docs/fuzzing.md): builds them with clang-19 in build-fuzz (tests/fuzz as a
# project of its own), fuzzes each for the given seconds from its checked-in corpus, replays every
# checked-in corpus and crash input, and prints the executions per fuzzer.
#
#   scripts/fuzz.sh [seconds]        default 20; 0 replays the checked-in inputs only
#   scripts/fuzz.sh --update-corpus  replaces tests/fuzz/corpus/<fuzzer> by the edge-minimized
#                                    union (-merge=1 -use_counters=0) of itself, the seeds
#                                    (mori_fuzz_seeds) and build-fuzz's corpora of earlier runs
# Environment: MORI_FUZZ_BUILD_DIR (default build-fuzz), MORI_FUZZ_JOBS (build jobs, default 2),
# MORI_FUZZ_PARALLEL (fuzzers run at once, default nproc), MORI_FUZZ_MIN_EXECUTIONS (a run of fewer
# fails, default 1000).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${MORI_FUZZ_BUILD_DIR:-$root/build-fuzz}
seconds=20
update=0
case "${1:-}" in
  --update-corpus) update=1 ;;
  "") ;;
  *[!0-9]*)
    echo "usage: $0 [seconds] | --update-corpus" >&2
    exit 2
    ;;
  *) seconds=$1 ;;
esac

cmake -S "$root/tests/fuzz" -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++-19 \
  -DMORI_FUZZ_SECONDS="$seconds" -DMORI_FUZZ_MIN_EXECUTIONS="${MORI_FUZZ_MIN_EXECUTIONS:-1000}" >/dev/null
cmake --build "$build" -j "${MORI_FUZZ_JOBS:-2}"
fuzzers=$(cd "$root/tests/fuzz" && ls fuzz_*.cpp | sed 's/\.cpp$//')

if [ "$update" = 1 ]; then
  seeds=$(mktemp -d)
  trap 'rm -rf "$seeds"' EXIT
  "$build/mori_fuzz_seeds" "$seeds"
  for f in $fuzzers; do
    corpus=$root/tests/fuzz/corpus/$f
    merged=$seeds/merged-$f
    mkdir -p "$merged" "$corpus"
    inputs=("$seeds/$f" "$corpus")
    [ -d "$build/fuzz-work/$f/corpus" ] && inputs+=("$build/fuzz-work/$f/corpus")
    "$build/$f" -merge=1 -use_counters=0 "$merged" "${inputs[@]}" >/dev/null 2>&1
    rm -f "$corpus"/*
    cp "$merged"/* "$corpus"/
    echo "$f: $(ls "$corpus" | wc -l) inputs in tests/fuzz/corpus/$f"
  done
  exit 0
fi

cd "$build"
status=0
if [ "$seconds" -gt 0 ]; then
  # One fuzzer per core; MORI_FUZZ_PARALLEL=1 gives each the whole machine (comparable executions).
  ctest -L fuzz_run -j "${MORI_FUZZ_PARALLEL:-$(nproc)}" --output-on-failure || status=1
fi
ctest -L fuzz_replay -j "$(nproc)" --output-on-failure || status=1
if [ "$seconds" -gt 0 ]; then
  echo "executions per fuzzer in $seconds s:"
  for f in $fuzzers; do
    summary=$build/fuzz-work/$f/summary.txt
    if [ -f "$summary" ]; then sed 's/^/  /' "$summary"; else echo "  $f: did not run"; fi
  done
fi
exit $status
