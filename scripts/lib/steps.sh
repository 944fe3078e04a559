# shellcheck shell=bash
# Sourced by scripts/test.sh. require_step <script> <opt-out>: returns non-zero, saying why, when a
# step test.sh is about to run is missing or not executable, rather than letting the run skip it
# and pass. <opt-out> is the setting that skips the step on purpose (e.g. MORI_FUZZ_SECONDS=0).
# Tested by harness.test_sh.* (tests/harness/test_sh_steps.sh).
require_step() {
  local script=$1 opt_out=$2
  if [ ! -e "$script" ]; then
    echo "test.sh: $script is missing: restore it, or skip its step with $opt_out" >&2
    return 1
  fi
  if [ ! -x "$script" ]; then
    echo "test.sh: $script is not executable: chmod +x it, or skip its step with $opt_out" >&2
    return 1
  fi
}

# check_test_count <build> <readme>: returns non-zero, saying why, when the configured suite (less the slow
# lane) lists fewer tests than the "<N> ctest tests" that <readme> gives, so that a test group that stopped
# being registered fails the run instead of shrinking it. Tested by harness.test_sh.test_count_*.
check_test_count() {
  local build=$1 readme=$2 promised listed
  promised=$({ grep -oE '[0-9]+ ctest tests' "$readme" 2>/dev/null || true; } | head -n 1 | cut -d ' ' -f 1)
  if [ -z "$promised" ]; then
    echo "test.sh: $readme gives no test count (\"<N> ctest tests\") to hold the suite to" >&2
    return 1
  fi
  listed=$(cd "$build" && ctest -N -LE slow | sed -n 's/^Total Tests: //p')
  if [ "${listed:-0}" -lt "$promised" ]; then
    echo "test.sh: ctest lists ${listed:-0} tests (the slow lane left out), fewer than the $promised" \
      "$readme gives: a test group is no longer registered (see the configure output)" >&2
    return 1
  fi
  echo "test.sh: ctest lists $listed tests (the slow lane left out); $readme gives $promised"
}
