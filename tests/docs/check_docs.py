#!/usr/bin/python3
"""Checks that the documentation names what the code has.

    check_docs.py <repository root>      the checks below, over the tree
    check_docs.py --self-test            each check fails on a small tree that breaks it

env: every MORI_* environment variable the library reads in src/ (std::getenv("X"), env_flag("X") or
the settings reader's read("X")) is a row of a table in docs/runtime.md, whose "Environment" section
is where a user looks them up.

features: every path in docs/testing.md's "Where each feature is tested" table exists (a `<nic>` or a
`*` in a name matches any file), so that the way in from a feature to its tests stays true.
"""
import re
import sys
import tempfile
from pathlib import Path

READ = re.compile(r'\b(?:getenv|env_flag|read)\("(MORI_[A-Z0-9_]+)"')
ROW = re.compile(r"^\|\s*([^|]*)\|")


def variables_read(src):
    found = {}
    for path in sorted(Path(src).rglob("*")):
        if path.suffix not in (".cpp", ".hpp", ".h", ".cc"):
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for name in READ.findall(line):
                found.setdefault(name, f"{path}:{n}")
    return found


def variables_documented(runtime_md):
    named = set()
    for line in Path(runtime_md).read_text(encoding="utf-8").splitlines():
        m = ROW.match(line)
        if m:
            named.update(re.findall(r"`(MORI_[A-Z0-9_]+)`", m.group(1)))
    return named


def check_env(root):
    root = Path(root)
    read = variables_read(root / "src")
    documented = variables_documented(root / "docs/runtime.md")
    return [f"{where}: {name} is read but is no row of docs/runtime.md's tables"
            for name, where in sorted(read.items()) if name not in documented]


FEATURES = "## Where each feature is tested"


def check_features(root):
    root = Path(root)
    text = (root / "docs/testing.md").read_text(encoding="utf-8")
    if FEATURES not in text:
        return [f"docs/testing.md: no section '{FEATURES}'"]
    section = text.split(FEATURES, 1)[1].split("\n## ", 1)[0]
    problems = []
    rows = [l for l in section.splitlines() if l.startswith("| ") and not l.startswith("| feature")]
    if not rows:
        problems.append("docs/testing.md: the feature table has no rows")
    for line in rows:
        for path in re.findall(r"`((?:include|src|tests|examples|python|bench)/[^`]*)`", line):
            pattern = path.replace("<nic>", "*")
            if not any(root.glob(pattern)):
                problems.append(f"docs/testing.md: the feature table names {path}, which does not exist")
    return problems


def check(root):
    return check_env(root) + check_features(root)


def self_test():
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        (t / "src").mkdir()
        (t / "docs").mkdir()
        (t / "src/a.cpp").write_text('const char* v = std::getenv("MORI_ONE");\n'
                                     'if (read("MORI_TWO", &text)) {}\n')
        (t / "docs/runtime.md").write_text("| variable | meaning |\n|---|---|\n| `MORI_ONE` | one |\n"
                                           "MORI_TWO in prose is not a row.\n")
        (t / "tests").mkdir()
        (t / "tests/test_a.cpp").write_text("")
        (t / "docs/testing.md").write_text(FEATURES + "\n\n| feature | source | tests |\n|---|---|---|\n"
                                           "| a | `src/a.cpp` | `tests/test_<nic>.cpp` |\n")
        problems = check(t)
        if len(problems) != 1 or "MORI_TWO" not in problems[0]:
            return [f"self-test: expected one problem naming MORI_TWO, got {problems}"]
        (t / "docs/runtime.md").write_text("| `MORI_ONE`, `MORI_TWO` | both |\n")
        if check(t):
            return [f"self-test: a documented tree failed: {check(t)}"]
        (t / "tests/test_a.cpp").unlink()
        problems = check(t)
        if len(problems) != 1 or "tests/test_<nic>.cpp" not in problems[0]:
            return [f"self-test: expected the missing test file named, got {problems}"]
    return []


def main(argv):
    if argv[1:] == ["--self-test"]:
        problems = self_test()
    elif len(argv) == 2:
        problems = check(argv[1])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
