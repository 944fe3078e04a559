#!/usr/bin/python3
"""Mutation testing: plant each bug of a list, one at a time, and check that the tests named for it fail.

    scripts/mutate.sh [--list FILE] [--only ID[,ID...]] [--build DIR] [--no-baseline | --baseline-only]
                      [--timeout S]
    scripts/mutate.sh --check [--list FILE] [--build DIR]   validate the list only: each file exists, each find
                                                            text occurs once, each tests regex names a test

For every mutant of the list (tests/mutation/mutants.txt; its header gives the format) this script
  1. replaces the one occurrence of its `find` text in its file by its `replace` text (a text found zero or
     several times is an error of the list, reported as "bad mutant");
  2. rebuilds only the executables its tests run (ninja on the paths their ctest commands name);
  3. runs those tests: a failure is "caught", a pass "survived", a build failure "stillborn" (the compiler caught
     it: a mutant worth replacing with one that compiles);
  4. restores the file's bytes, whatever happened.
Before the first mutant it builds and runs every named test unmutated (the baseline), so that a test failing anyway
cannot count as a catch (--baseline-only stops there). The baseline selects its tests by number: one regex joining
every mutant's would pass CMake's limit of ten groups, and ctest, given a regex it cannot compile, runs nothing.
Every run here passes --no-tests=error, so a selection of nothing fails. The script refuses a mutant whose file has
uncommitted changes, so it never overwrites work. The build directory (default build-mutate) is configured and
built on first use by scripts/build.sh, and kept, so later runs rebuild only what a mutant touches.
Exit status: 0 when every mutant was caught, 1 otherwise, 2 on bad input.
"""
import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class ListError(Exception):
    pass


def parse_list(path):
    """Blocks of `key: value` lines separated by blank lines; `#` starts a comment line."""
    mutants, block, line_no = [], {}, 0
    keys = ("id", "file", "find", "replace", "tests")

    def close():
        if not block:
            return
        missing = [k for k in keys if k not in block]
        if missing:
            raise ListError(f"{path}: the mutant ending at line {line_no} has no {', '.join(missing)}")
        if any(m["id"] == block["id"] for m in mutants):
            raise ListError(f"{path}: mutant id {block['id']} appears twice")
        mutants.append(dict(block))
        block.clear()

    with open(path, encoding="utf-8") as f:
        for line_no, raw in enumerate(f, 1):
            line = raw.rstrip("\n")
            if line.startswith("#"):
                continue
            if not line.strip():
                close()
                continue
            key, sep, value = line.partition(": ")
            if not sep or key not in keys + ("why",):
                raise ListError(f"{path}:{line_no}: expected one of {', '.join(keys)} or why, then ': '")
            if key in block:
                raise ListError(f"{path}:{line_no}: {key} given twice in one mutant")
            block[key] = value
    close()
    return mutants


def run(cmd, log, **kw):
    with open(log, "a", encoding="utf-8") as out:
        out.write(f"$ {' '.join(cmd)}\n")
        out.flush()
        return subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, **kw).returncode


def configure(build, log):
    stamp = os.path.join(build, "mutate-built")
    if os.path.exists(stamp):
        # Built before, from an older tree: regenerate the build files first (a new test file is found by a
        # CONFIGURE_DEPENDS glob), or the tests listed below would lack it while ctest, run after ninja has
        # regenerated them, would run it unbuilt.
        if run(["ninja", "-C", build, "build.ninja"], log) != 0:
            sys.exit(f"mutate: regenerating {build} failed; see {log}")
        return
    # Configured and built as scripts/build.sh builds (its flags, and MORI_CMAKE_ARGS such as a ccache launcher),
    # so that a tree built for the suite and this one compile alike. The unit tests are discovered from their
    # executables (doctest_discover_tests), so a new build directory lists them only once they are built: the
    # first run builds everything, once.
    print(f"mutate: building {build} once (later runs rebuild only what a mutant touches)", flush=True)
    env = dict(os.environ, MORI_BUILD_DIR=build)
    if run(["bash", os.path.join(ROOT, "scripts", "build.sh")], log, env=env) != 0:
        sys.exit(f"mutate: building {build} failed; see {log}")
    open(stamp, "w").close()


def test_files(build, regex):
    """The build outputs (relative to build) that the tests matching regex run."""
    out = subprocess.run(["ctest", "--test-dir", build, "-R", regex, "--show-only=json-v1"],
                         capture_output=True, text=True, check=True).stdout
    tests = json.loads(out).get("tests", [])
    files = set()
    for t in tests:
        for arg in t.get("command", []):
            if arg.startswith(build + os.sep) and os.path.isabs(arg):
                files.add(os.path.relpath(arg, build))
    return [t["name"] for t in tests], sorted(files)


def test_numbers(build, names):
    """ctest -I's selection of exactly these tests: "0,0,0," then their numbers (1-based, ctest's order)."""
    out = subprocess.run(["ctest", "--test-dir", build, "--show-only=json-v1"],
                         capture_output=True, text=True, check=True).stdout
    number = {t["name"]: i + 1 for i, t in enumerate(json.loads(out).get("tests", []))}
    return "0,0,0," + ",".join(str(number[n]) for n in sorted(set(names), key=number.get))


def build_and_test(build, select, targets, timeout, log):
    """'built-failed', 'passed' or 'failed: <first failing test>'. select: ctest's arguments choosing the tests."""
    if targets and run(["ninja", "-C", build] + targets, log) != 0:
        return "build-failed"
    result = os.path.join(build, "mutate-ctest.log")
    with open(result, "w", encoding="utf-8") as out:
        rc = subprocess.run(["ctest", "--test-dir", build, *select, "-j", str(os.cpu_count() or 2),
                             "--timeout", str(timeout), "--stop-on-failure", "--no-tests=error"],
                            stdout=out, stderr=subprocess.STDOUT).returncode
    text = open(result, encoding="utf-8").read()
    with open(log, "a", encoding="utf-8") as out:
        out.write(text)
    if rc == 0:
        return "passed"
    # ctest's closing list: "The following tests FAILED:" then lines "<tab> 12 - <name> (Failed)".
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("The following tests FAILED:") and i + 1 < len(lines):
            first = lines[i + 1].strip().split(" - ", 1)[-1]
            return "failed: " + first
    return "failed"


def git_clean(path):
    rel = os.path.relpath(path, ROOT)
    out = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--", rel], capture_output=True, text=True)
    return out.returncode == 0 and not out.stdout.strip()


def check(mutants, build, list_path):
    """Every problem of the list, one line each; 0 when there is none."""
    problems = []
    for m in mutants:
        path = os.path.join(ROOT, m["file"])
        if not os.path.exists(path):
            problems.append(f"{m['id']}: no file {m['file']}")
            continue
        count = open(path, encoding="utf-8").read().count(m["find"])
        if count != 1:
            problems.append(f"{m['id']}: the find text occurs {count} times in {m['file']}")
        if m["find"] == m["replace"]:
            problems.append(f"{m['id']}: replace is the find text")
        if os.path.exists(os.path.join(build, "CTestTestfile.cmake")):
            names, _ = test_files(build, m["tests"])
            if not names:
                problems.append(f"{m['id']}: no test of {build} matches {m['tests']}")
    for p in problems:
        print(f"mutate: {list_path}: {p}", file=sys.stderr)
    print(f"mutate: {len(mutants)} mutants, {len(problems)} problems")
    return 1 if problems else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--list", default=os.path.join(ROOT, "tests", "mutation", "mutants.txt"))
    ap.add_argument("--only", help="comma-separated mutant ids")
    ap.add_argument("--build", default=os.path.join(ROOT, "build-mutate"))
    ap.add_argument("--no-baseline", action="store_true")
    ap.add_argument("--baseline-only", action="store_true", help="build and run the named tests unmutated, then stop")
    ap.add_argument("--timeout", type=int, default=120, help="per test, seconds")
    ap.add_argument("--check", action="store_true", help="validate the list against the tree and the build")
    args = ap.parse_args()
    if args.no_baseline and args.baseline_only:
        print("mutate: --no-baseline and --baseline-only exclude each other", file=sys.stderr)
        return 2
    build = os.path.abspath(args.build)
    try:
        mutants = parse_list(args.list)
    except (ListError, OSError) as e:
        print(f"mutate: {e}", file=sys.stderr)
        return 2
    if args.only:
        wanted = args.only.split(",")
        unknown = [w for w in wanted if w not in {m["id"] for m in mutants}]
        if unknown:
            print(f"mutate: no mutant {', '.join(unknown)} in {args.list}", file=sys.stderr)
            return 2
        mutants = [m for m in mutants if m["id"] in wanted]
    if args.check:
        return check(mutants, build, args.list)
    os.makedirs(build, exist_ok=True)
    log = os.path.join(build, "mutate.log")
    open(log, "w").close()
    print(f"mutate: {len(mutants)} mutants; log {log}", flush=True)
    configure(build, log)

    plans = []
    for m in mutants:
        names, targets = test_files(build, m["tests"])
        if not names:
            print(f"mutate: mutant {m['id']}: no test matches {m['tests']}", file=sys.stderr)
            return 2
        plans.append((m, names, targets))
    if not args.no_baseline:
        names = sorted({n for _, ns, _ in plans for n in ns})
        targets = sorted({t for _, _, ts in plans for t in ts})
        print(f"mutate: baseline: building {len(targets)} executables, running the {len(names)} named tests "
              "unmutated", flush=True)
        start = time.monotonic()
        base = build_and_test(build, ["-I", test_numbers(build, names)], targets, args.timeout, log)
        if base != "passed":
            print(f"mutate: the baseline is not green ({base}); fix that first; see {log}", file=sys.stderr)
            return 1
        print(f"mutate: baseline: {len(names)} tests passed ({time.monotonic() - start:.0f} s)", flush=True)
    if args.baseline_only:
        return 0

    rows, caught = [], 0
    for m, names, targets in plans:
        path = os.path.join(ROOT, m["file"])
        start = time.monotonic()
        if not os.path.exists(path):
            result = f"bad mutant: no file {m['file']}"
        elif not git_clean(path):
            result = f"refused: {m['file']} has uncommitted changes"
        else:
            original = open(path, "rb").read()
            text = original.decode("utf-8")
            count = text.count(m["find"])
            if count != 1:
                result = f"bad mutant: the find text occurs {count} times in {m['file']}"
            else:
                try:
                    with open(path, "w", encoding="utf-8") as f:
                        f.write(text.replace(m["find"], m["replace"]))
                    outcome = build_and_test(build, ["-R", m["tests"]], targets, args.timeout, log)
                finally:
                    with open(path, "wb") as f:
                        f.write(original)
                if outcome == "build-failed":
                    result = "stillborn (does not compile)"
                elif outcome == "passed":
                    result = "SURVIVED"
                else:
                    result = "caught" + outcome[len("failed"):]
                    caught += 1
        seconds = time.monotonic() - start
        rows.append((m["id"], m["file"], len(names), result, seconds))
        print(f"mutate: {m['id']}: {result} ({seconds:.0f} s, {len(names)} tests)", flush=True)

    print("\n| mutant | file | tests | result | s |\n|---|---|---|---|---|")
    for r in rows:
        print(f"| {r[0]} | `{r[1]}` | {r[2]} | {r[3]} | {r[4]:.0f} |")
    print(f"\nmutate: {caught} of {len(rows)} caught")
    return 0 if caught == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
