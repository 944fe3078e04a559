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
