#!/usr/bin/python3
"""Checks that every header under include/mori includes only its own layer or lower ones.

Usage: check_layers.py <include dir> <layout.md>
       check_layers.py --self-test

The layers come from the table under "## Layers of include/" in docs/layout.md, so the document
and this test cannot disagree. Exits 1 on any violation, 2 if the table cannot be read.
"""

import re
import subprocess
import sys
import tempfile
from pathlib import Path

TABLE_HEADING = "## Layers of include/"

# Both spellings reach a mori header: the project writes "mori/x.hpp", but <mori/x.hpp> compiles
# just as well and must not slip past. Other angle-bracket includes are system headers.
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*(?:"([^"]+)"|<(mori/[^>]+)>)')

# Includes forbidden whatever the layers say: (from a header under this prefix, of this header, why,
# the headers under the prefix the rule leaves out). The device state is the runtime/device ABI and
# must stay free of the host API; the device API shares only shmem/shared_queries.hpp with it, so
# that no kernel's compile sees the host calls (stream_api.hpp and unique_id.hpp are host API).
HOST_API_HEADERS = ("mori/shmem/host_api.hpp", "mori/shmem/stream_api.hpp", "mori/shmem/unique_id.hpp")
FORBIDDEN = [
    ("mori/state/", "mori/shmem/host_api.hpp",
     "the device state (runtime/device ABI) must never include the host API", ()),
    ("mori/shmem/", "mori/shmem/host_api.hpp",
     "the device API must not include the host API (the names they share: shmem/shared_queries.hpp)",
     HOST_API_HEADERS),
]


class Layer:
    def __init__(self, number, name):
        self.number = number
        self.name = name

    def __str__(self):
        return f"layer {self.number} {self.name}"


def read_layers(layout_md):
    """Returns [(path prefix, Layer)] from the first table after TABLE_HEADING."""
    lines = Path(layout_md).read_text(encoding="utf-8").splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith(TABLE_HEADING)]
    if len(starts) != 1:
        raise ValueError(f"{layout_md}: expected one heading starting with '{TABLE_HEADING}'")
    rows = []
    for line in lines[starts[0] + 1:]:
        if line.startswith("|"):
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
        elif rows or line.startswith("#"):
            break  # the table ended, or the section did without one
    if len(rows) < 3 or [c.strip("`").lower() for c in rows[0]] != ["path", "layer", "name"]:
        raise ValueError(f"{layout_md}: the layer table needs the columns path | layer | name")
    layers = []
    for cells in rows[2:]:  # rows[1] is the |---| separator
        if len(cells) != 3 or not cells[1].isdigit():
            raise ValueError(f"{layout_md}: bad layer row: | {' | '.join(cells)} |")
        paths = re.findall(r"`([^`]+)`", cells[0])
        if not paths:
            raise ValueError(f"{layout_md}: no `path` in row: | {' | '.join(cells)} |")
        layer = Layer(int(cells[1]), cells[2])
        layers += [(path, layer) for path in paths]
    seen = [path for path, _ in layers]
    duplicates = sorted({path for path in seen if seen.count(path) > 1})
    if duplicates:
        raise ValueError(f"{layout_md}: paths in more than one row: {', '.join(duplicates)}")
    return layers


def layer_of(rel_path, layers):
    """The layer of a path relative to include/: the longest table path that covers it."""
    best = None
    for prefix, layer in layers:
        covers = rel_path.startswith(prefix) if prefix.endswith("/") else rel_path == prefix
        if covers and (best is None or len(prefix) > len(best[0])):
            best = (prefix, layer)
    return best[1] if best else None


def resolve(spelled, quoted, header, include_dir):
    """The file an include names, as the preprocessor finds it, or None.

    A quoted include is looked up next to the including header first; a header that reached
    src/ or tests/ that way, or through -I, would only build inside this repository.
    """
    candidates = [include_dir / spelled]
    if quoted:
        candidates.insert(0, header.parent / spelled)
    for candidate in candidates:
        if candidate.is_file():
            return candidate.resolve()
    return None


def check(include_dir, layout_md):
    """Prints each violation and returns how many there were."""
    include_dir = Path(include_dir).resolve()
    mori_dir = include_dir / "mori"
    layers = read_layers(layout_md)
    headers = sorted(p for p in mori_dir.rglob("*") if p.suffix in (".hpp", ".h") and p.is_file())
    violations = 0
    includes = 0

    def report(message):
        nonlocal violations
        violations += 1
        print(message)

    for header in headers:
        rel = header.relative_to(include_dir).as_posix()
        shown = f"include/{rel}"
        own = layer_of(rel, layers)
        if own is None:
            report(f"{shown} is in no layer of docs/layout.md")
        text = header.read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), start=1):
            match = INCLUDE_RE.match(line)
            if not match:
                continue
            quoted = match.group(1) is not None
            spelled = match.group(1) or match.group(2)
            where = f"{shown}:{number}: includes {spelled}"
            target = resolve(spelled, quoted, header, include_dir)
            if target is None:
                hint = " (a system header goes in <>)" if quoted else ""
                report(f"{where}, which names no header under include/mori{hint}")
                continue
            if not target.is_relative_to(mori_dir):
                report(f"{where}, which is outside include/mori")
                continue
            includes += 1
            target_rel = target.relative_to(include_dir).as_posix()
            target_layer = layer_of(target_rel, layers)
            if own is None:
                continue  # already reported; it has no layer to compare with
            if target_layer is None:
                report(f"{where}, which is in no layer of docs/layout.md")
                continue
            reason = next((why for src, dst, why, left_out in FORBIDDEN
                           if rel.startswith(src) and target_rel == dst and rel not in left_out),
                          None)
            if reason:
                report(f"{where} ({target_layer}) from {own}: {reason}")
            elif target_layer.number > own.number:
                report(f"{where} ({target_layer}) from {own}")

    if violations == 0:
        print(f"layering: {len(headers)} headers, {includes} mori includes, no upward include")
    return violations


# ---- self-test: the checker must pass a clean tree and fail each kind of bad one ----------------

SELF_TEST_LAYOUT = """# Layout

## Layers of include/ (read by tests/layering)

| path | layer | name |
|---|---|---|
| `mori/platform/`, `mori/platform.hpp` | 1 | platform |
| `mori/state/` | 3 | device state |
| `mori/shmem/` | 6 | device API |

Text after the table is not part of it: | `mori/extra/` | 7 | not a layer |
"""

CLEAN_TREE = {
    "mori/platform.hpp": '#include "mori/platform/macros.hpp"\n',
    "mori/platform/macros.hpp": "#include <cstdint>\n",
    "mori/state/x.hpp": '#include "mori/platform.hpp"\n#include <mori/state/z.hpp>\n',
    "mori/state/z.hpp": "// #include \"mori/shmem/y.hpp\" in a comment is no include\n",
    "mori/shmem/y.hpp": '#include "mori/state/x.hpp"\n#include "z.hpp"\n',
    "mori/shmem/z.hpp": "",
}

# Each case: files added to the clean tree, and the lines the checker must print for them.
FAILING_CASES = {
    "upward include": (
        {"mori/state/x.hpp": '#include "mori/platform.hpp"\n#include "mori/shmem/y.hpp"\n'},
        ["include/mori/state/x.hpp:2: includes mori/shmem/y.hpp (layer 6 device API) "
         "from layer 3 device state"]),
    "upward include in angle brackets": (
        {"mori/platform/macros.hpp": "#include <mori/state/z.hpp>\n"},
        ["include/mori/platform/macros.hpp:1: includes mori/state/z.hpp (layer 3 device state) "
         "from layer 1 platform"]),
    "header in no layer": (
        {"mori/foo/bar.hpp": '#include "mori/platform.hpp"\n'},
        ["include/mori/foo/bar.hpp is in no layer of docs/layout.md"]),
    "state includes the host API": (
        {"mori/shmem/host_api.hpp": "", "mori/state/z.hpp": '#include "mori/shmem/host_api.hpp"\n'},
        ["include/mori/state/z.hpp:1: includes mori/shmem/host_api.hpp (layer 6 device API) "
         "from layer 3 device state: " + FORBIDDEN[0][2]]),
    "device API includes the host API": (
        {"mori/shmem/host_api.hpp": "", "mori/shmem/stream_api.hpp": '#include "host_api.hpp"\n',
         "mori/shmem/z.hpp": '#include "mori/shmem/host_api.hpp"\n'},
        ["include/mori/shmem/z.hpp:1: includes mori/shmem/host_api.hpp (layer 6 device API) "
         "from layer 6 device API: " + FORBIDDEN[1][2]]),
    "include of a missing header": (
        {"mori/shmem/z.hpp": '#include "mori/shmem/gone.hpp"\n'},
        ["include/mori/shmem/z.hpp:1: includes mori/shmem/gone.hpp, which names no header under "
         "include/mori (a system header goes in <>)"]),
}


def run_case(name, files, expected, verbose):
    """Builds <tmp>/include from CLEAN_TREE plus `files` and runs this script on it, as ctest does.

    True if it exits 0 with the summary line when nothing is expected, or exits 1 printing exactly
    the expected lines.
    """
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        layout = root / "layout.md"
        layout.write_text(SELF_TEST_LAYOUT)
        # A file outside include/ that a bad header could reach with a relative quoted include.
        (root / "src").mkdir()
        (root / "src" / "internal.hpp").write_text("")
        for rel, text in {**CLEAN_TREE, **files}.items():
            path = root / "include" / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        run = subprocess.run([sys.executable, __file__, str(root / "include"), str(layout)],
                             capture_output=True, text=True)
    lines = run.stdout.splitlines()
    if expected:
        ok = run.returncode == 1 and lines == expected
    else:
        ok = run.returncode == 0 and len(lines) == 1 and lines[0].startswith("layering: ")
    print(f"self-test {'ok  ' if ok else 'FAIL'} {name} (exit {run.returncode})")
    if verbose or not ok:
        for line in lines + run.stderr.splitlines():
            print(f"    {line}")
    if not ok and expected:
        print(f"    expected exit 1 and: {expected}")
    return ok


def self_test():
    cases = [("clean tree", {}, [])] + [(n, f, e) for n, (f, e) in FAILING_CASES.items()]
    cases.append(("quoted include outside include/", {
        "mori/state/z.hpp": '#include "../../../src/internal.hpp"\n'},
        ["include/mori/state/z.hpp:1: includes ../../../src/internal.hpp, which is outside "
         "include/mori"]))
    results = [run_case(name, files, expected, verbose=True) for name, files, expected in cases]
    passed = sum(results)
    print(f"layering self-test: {passed} of {len(results)} cases as expected")
    return 0 if passed == len(results) else 1


def main(argv):
    if argv == ["--self-test"]:
        return self_test()
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        return 1 if check(argv[0], argv[1]) else 0
    except (OSError, ValueError) as error:
        print(f"check_layers: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
