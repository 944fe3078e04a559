#!/usr/bin/env bash
# expect_failure.sh <regex> <command...>: passes only if the command exits non-zero and its output
# (stdout and stderr) matches the extended regex. A harness's proof that it can fail.
set -uo pipefail
pattern=$1
shift
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ "$rc" -eq 0 ]; then
  echo "expect_failure: the command passed (exit 0); it should have failed" >&2
  exit 1
fi
if ! grep -Eq -- "$pattern" <<<"$out"; then
  echo "expect_failure: the command failed (exit $rc) without printing /$pattern/" >&2
  exit 1
fi
echo "expect_failure: failed as expected (exit $rc, /$pattern/)"
