#!/usr/bin/env bash
# harness.test_sh.*: scripts/test.sh fails, before building, when a step it is to run (sanitize.sh,
# fuzz.sh) is missing or not executable, and skips a step only when asked (MORI_SANITIZERS=0,
# MORI_FUZZ_SECONDS=0, or ctest arguments). Runs the real test.sh and scripts/lib/steps.sh in a
# scratch tree whose other scripts are stubs that log their calls.
#   test_sh_steps.sh <repo> <case>
set -uo pipefail
repo=$1
case=$2
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
mkdir -p "$tree/scripts/lib" "$tree/build"
cp "$repo/scripts/test.sh" "$tree/scripts/"
cp "$repo/scripts/lib/steps.sh" "$tree/scripts/lib/"
for s in install-deps build sanitize fuzz; do
  printf '#!/usr/bin/env bash\necho "%s $*" >>"%s/calls"\n' "$s" "$tree" >"$tree/scripts/$s.sh"
  chmod +x "$tree/scripts/$s.sh"
done
unset MORI_SANITIZERS MORI_FUZZ_SECONDS MORI_BUILD_DIR
# The scratch suite: two tests and one of the slow lane, which the count leaves out; the README holds it to 2.
cat >"$tree/build/CTestTestfile.cmake" <<'CTEST'
add_test(first "true")
add_test(second "true")
add_test(third "true")
set_tests_properties(third PROPERTIES LABELS slow)
CTEST
echo "all 2 ctest tests passing" >"$tree/README.md"

fail() {
  echo "FAIL ($case): $*"
  echo "--- test.sh output:"
  cat "$tree/out"
  echo "--- calls:"
  cat "$tree/calls" 2>/dev/null
  exit 1
}
# expect <exit: zero|nonzero> <output regex> [env...] [-- ctest args...]
expect() {
  local want=$1 pattern=$2
  shift 2
  local envs=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do
    envs+=("$1")
    shift
  done
  [ $# -gt 0 ] && shift
  env "${envs[@]}" "$tree/scripts/test.sh" "$@" >"$tree/out" 2>&1
  local rc=$?
  if [ "$want" = zero ] && [ $rc -ne 0 ]; then fail "exit $rc, expected 0"; fi
  if [ "$want" = nonzero ] && [ $rc -eq 0 ]; then fail "exit 0, expected a failure"; fi
  grep -Eq -- "$pattern" "$tree/out" || fail "the output does not match /$pattern/"
}
ran() { grep -q "^$1" "$tree/calls" 2>/dev/null; }

case $case in
  fuzz_missing)
    rm "$tree/scripts/fuzz.sh"
    expect nonzero "test.sh: .*/scripts/fuzz.sh is missing: restore it, or skip its step with MORI_FUZZ_SECONDS=0"
    ! ran build || fail "it built before refusing"
    ;;
  fuzz_not_executable)
    chmod -x "$tree/scripts/fuzz.sh"
    expect nonzero "test.sh: .*/scripts/fuzz.sh is not executable: chmod \+x it, or skip its step with MORI_FUZZ_SECONDS=0"
    ;;
  sanitize_missing)
    rm "$tree/scripts/sanitize.sh"
    expect nonzero "test.sh: .*/scripts/sanitize.sh is missing: restore it, or skip its step with MORI_SANITIZERS=0"
    ;;
  opt_outs)
    # Missing steps that are skipped on purpose are not needed.
    rm "$tree/scripts/fuzz.sh" "$tree/scripts/sanitize.sh"
    expect zero "wall time per step" MORI_FUZZ_SECONDS=0 MORI_SANITIZERS=0 "MORI_BUILD_DIR=$tree/build"
    ran build || fail "it did not build"
    expect zero "wall time per step" "MORI_BUILD_DIR=$tree/build" -- -N
    ;;
  all_steps)
    expect zero "fuzzers \(10 s each\)" "MORI_BUILD_DIR=$tree/build"
    for call in "sanitize asan" "sanitize tsan" "fuzz 10"; do
      ran "$call" || fail "the step '$call' did not run"
    done
    ;;
  test_count_short)
    # A suite that lost a test group fails after the build and before the long steps.
    echo "all 3 ctest tests passing" >"$tree/README.md"
    expect nonzero "test.sh: ctest lists 2 tests \(the slow lane left out\), fewer than the 3 .*README.md gives" \
      "MORI_BUILD_DIR=$tree/build"
    ran build || fail "it did not build"
    ! ran sanitize || fail "it ran a sanitizer lane after the count failed"
    ;;
  test_count_missing)
    echo "no count here" >"$tree/README.md"
    expect nonzero "test.sh: .*README.md gives no test count" "MORI_BUILD_DIR=$tree/build"
    ;;
  test_count_held)
    expect zero "test.sh: ctest lists 2 tests \(the slow lane left out\); .*README.md gives 2" \
      "MORI_BUILD_DIR=$tree/build"
    grep -q "Total Test time" "$tree/out" || fail "the suite did not run"
    ! grep -q "third" "$tree/out" || fail "the slow lane ran in the default suite"
    ;;
  *)
    echo "unknown case $case" >&2
    exit 2
    ;;
esac
echo "ok ($case)"
