#!/usr/bin/env bash
# Mutation testing (tests/mutation/mutate.py): plants each bug of tests/mutation/mutants.txt on its own, rebuilds
# what it touches in build-mutate/, runs the tests named for it, and reports caught or survived. A slow lane: not
# part of scripts/test.sh. `scripts/mutate.sh --check` only validates the list; `--only ID` runs one mutant.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
exec /usr/bin/python3 "$root/tests/mutation/mutate.py" "$@"
