#!/usr/bin/env bash
# A stand-in for a libFuzzer binary, for harness.fuzz.* (run_fuzzer.cmake's refusals). Prints what
# libFuzzer would, as the environment says:
#   FAKE_FUZZER_EXECUTIONS=N  a fuzzing run ends with `#N DONE` and stat::number_of_executed_units;
#                             unset, the run prints no count (a fuzzer that did not run)
#   FAKE_FUZZER_REPLAYS=0     a replay (-runs=1 <files>) executes none of its files
#   FAKE_FUZZER_EXIT=N        the exit code (default 0)
echo "INFO: Running with entropic power schedule (0xFF, 100)."
echo "INFO: Seed: 1"
replay=0
files=()
for arg in "$@"; do
  case "$arg" in
    -runs=1) replay=1 ;;
    -*) ;;
    *) files+=("$arg") ;;
  esac
done
if [ "$replay" = 1 ]; then
  if [ "${FAKE_FUZZER_REPLAYS:-1}" != 0 ]; then
    for f in "${files[@]}"; do
      echo "Running: $f"
      echo "Executed $f in 0 ms"
    done
  fi
elif [ -n "${FAKE_FUZZER_EXECUTIONS:-}" ]; then
  printf '#%s\tDONE   cov: 10 ft: 12 corp: 3/9b lim: 4 exec/s: %s rss: 30Mb\n' \
    "$FAKE_FUZZER_EXECUTIONS" "$FAKE_FUZZER_EXECUTIONS"
  echo "Done $FAKE_FUZZER_EXECUTIONS runs in 1 second(s)"
  echo "stat::number_of_executed_units: $FAKE_FUZZER_EXECUTIONS"
fi
exit "${FAKE_FUZZER_EXIT:-0}"
