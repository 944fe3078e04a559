#!/usr/bin/env bash
# ctest bitcode.isa_path.fixture: bench/isa_path.py on a hand-written function whose paths are
# known (isa_path_fixture.s, counted in its header), and its refusals.
#   isa_path_fixture.sh <repo root>
set -uo pipefail
root=$1
tool=("/usr/bin/python3" "$root/bench/isa_path.py" "$root/tests/bitcode/isa_path_fixture.s" fixture)
bad=0
expect() { # <expected stdout> <args...>
  local want=$1 got
  shift
  got=$("${tool[@]}" "$@" 2>&1)
  if [ "$got" != "$want" ]; then
    echo "FAIL: isa_path.py $*: got '$got', want '$want'"
    bad=1
  fi
}
refuse() { # <message part> <args...>
  local want=$1 got
  shift
  if got=$("${tool[@]}" "$@" 2>&1); then
    echo "FAIL: isa_path.py $* succeeded ($got); it must fail"
    bad=1
  elif ! grep -qF "$want" <<<"$got"; then
    echo "FAIL: isa_path.py $*: message '$got' lacks '$want'"
    bad=1
  fi
}
expect "16 25"                                      # entry, execz skip, no slow branch, no spin
expect "19 25" --markers fix.store                  # through the marked fallthrough block
expect "6 25" --markers fix.store --until-store     # entry 4 + the store and the move before it
expect "20 25" --markers fix.spin,fix.spin          # the loop once around
expect "16 25" --markers -
refuse "marker nope is not in fixture" --markers fix.store,nope
refuse "no path of fixture from its entry through markers [fix.trap]" --markers fix.trap
refuse "no path of fixture from its entry through markers [fix.spin,fix.store]" \
  --markers fix.spin,fix.store                      # out of order: the store comes first
tool[3]=nothere
refuse "function nothere not found"
[ "$bad" = 0 ] || exit 1
echo "isa_path fixture: ok"
