#!/usr/bin/python3
"""mori's device collectives against Open MPI's OpenSHMEM collectives and memcpy, in one interleaved run.

    /usr/bin/python3 bench/compare/compare_coll.py [--build build] [--rounds 3] [--no-write]

For 2 and 4 PEs, each round runs mori's coll_bench over P2P (with --memcpy: memcpy of each call's volume in the
same program) and then bench/compare/oshmem_coll.c (compiled here with oshcc), at the same sizes. A figure is the
median over the rounds of each program's median; the spread is the smallest and largest round's. The tables and the
targets go to stdout and to bench/compare/collectives.md, which docs/benchmarks.md includes (this script rewrites
that section of it; compare.py includes the file when it rewrites the rest).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--mca", "btl", "self,vader", "--bind-to", "none"]
# Each OpenSHMEM PE bound to a core, as coll_bench pins its lanes; with more PEs than the 2 cores, two to a core.
OSHRUN = ["oshrun", "--allow-run-as-root", "--oversubscribe", "--mca", "btl", "self,vader", "--bind-to",
          "core:overload-allowed", "--mca", "spml", "ucx", "--mca", "osc", "^rdma"]
COLLS = ["broadcast", "fcollect", "collect", "alltoall", "reduce", "reducescatter"]
OSHMEM_COLLS = COLLS[:-1]  # OpenSHMEM 1.4 has no reducescatter
SIZES = ("8", "16M", 8)  # min, max, factor: 8 B, 64 B, ..., 2 MiB, 16 MiB
SIZES_BYTES = (8, 16 << 20, 8)
ITERS, WARMUP, REPS = 2000, 20, 3
LATENCY_TARGET, BANDWIDTH_TARGET = 0.8, 0.8


def run_json(cmd):
    # The previous program's processes (mpirun's, oshrun's and UCX's) take a moment to exit after it
    # has printed; a program started at once shares the cores with them for its first figures,
    # the 8-byte latencies (measured: 0.60 against 0.30 us for mori's first 4-PE broadcast).
    time.sleep(2)
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=1200).stdout
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def one_round(build, oshmem_bin, npes, series):
    mori = MPIRUN + ["-np", str(npes), str(build / "bench/coll_bench"), "-b", SIZES[0], "-e", SIZES[1],
                     "-f", str(SIZES[2]), "--iters", str(ITERS), "--warmup", str(WARMUP), "--reps", str(REPS),
                     "--memcpy", "--json"]
    for row in run_json(mori):
        series[(npes, "mori", row["coll"], row["size"])].append(row["lat_us"])
        series[(npes, "memcpy", row["coll"], row["size"])].append(row["memcpy_us"])
        series[(npes, "volume", row["coll"], row["size"])] = [row["volume"]]
    osh = OSHRUN + ["-np", str(npes), str(oshmem_bin), str(ITERS), str(WARMUP), str(REPS)] + \
        [str(v) for v in SIZES_BYTES] + OSHMEM_COLLS
    for row in run_json(osh):
        series[(npes, "oshmem", row["coll"], row["size"])].append(row["lat_us"])


def fmt(values):
    return "%.2f (%.2f-%.2f)" % (statistics.median(values), min(values), max(values))


def human(size):
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return "%d %s" % (size >> shift, unit)
    return "%d B" % size


def tables(series, nps):
    lines, targets = [], []
    for npes in nps:
        lines += ["### %d PEs" % npes, "",
                  "| collective | block | mori µs | OpenSHMEM µs | mori/OpenSHMEM | mori GB/s | memcpy GB/s "
                  "| mori/memcpy bound |", "|---|---|---|---|---|---|---|---|"]
        for coll in COLLS:
            sizes = sorted(s for (n, lib, c, s) in series if n == npes and lib == "mori" and c == coll)
            for size in sizes:
                mori = series[(npes, "mori", coll, size)]
                osh = series.get((npes, "oshmem", coll, size))
                ref = series[(npes, "memcpy", coll, size)]
                volume = series[(npes, "volume", coll, size)][0]
                m, r = statistics.median(mori), statistics.median(ref)
                # Each ratio is taken within a round, where the two figures were measured a moment
                # apart (the memcpy in the same program), then the median over the rounds: on this
                # machine whole rounds run 2-3x slower or faster, for both libraries alike.
                ratios = [a / b for a, b in zip(mori, osh)] if osh else None
                bounds = [b / a for a, b in zip(mori, ref)]
                ratio = statistics.median(ratios) if ratios else None
                bound = statistics.median(bounds)
                lines.append("| %s | %s | %s | %s | %s | %.2f | %.2f | %s |" % (
                    coll, human(size), fmt(mori), fmt(osh) if osh else "-",
                    fmt(ratios) if ratios else "-", volume / (m * 1e3), volume / (r * 1e3),
                    fmt(bounds)))
                if size == 8 and ratio:
                    targets.append(("%s at 8 B, %d PEs: mori/OpenSHMEM latency %.2f, at most %.1f" % (
                        coll, npes, ratio, LATENCY_TARGET), ratio <= LATENCY_TARGET))
                if size >= 1 << 20:
                    targets.append(("%s at %s, %d PEs: mori/memcpy bound %.2f, at least %.1f" % (
                        coll, human(size), npes, bound, BANDWIDTH_TARGET), bound >= BANDWIDTH_TARGET))
        lines.append("")
    return lines, targets


def splice(doc, section):
    """docs/benchmarks.md with its '## Collectives' section replaced by (or ended with) `section`."""
    head = "## Collectives"
    if head in doc:
        start = doc.index(head)
        rest = doc.find("\n## ", start + len(head))
        return doc[:start] + section + (doc[rest + 1:] if rest >= 0 else "")
    return doc.rstrip() + "\n\n" + section


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--pes", default="2,4", help="PE counts, comma-separated")
    ap.add_argument("--no-write", action="store_true", help="print only")
    args = ap.parse_args()
    build = Path(args.build).resolve()
    nps = [int(n) for n in args.pes.split(",")]
    tmp = Path(tempfile.mkdtemp(prefix="mori-coll-"))
    oshmem_bin = tmp / "oshmem_coll"
    subprocess.run(["oshcc", "-O2", "-o", str(oshmem_bin), str(ROOT / "bench/compare/oshmem_coll.c")], check=True)
    series = defaultdict(list)
    for r in range(args.rounds):
        for npes in nps:
            print("round %d of %d, %d PEs" % (r + 1, args.rounds, npes), file=sys.stderr, flush=True)
            one_round(build, oshmem_bin, npes, series)
    lines, targets = tables(series, nps)
    verdicts = ["- %s: **%s**" % (text, "met" if ok else "missed") for text, ok in targets]
    command = "/usr/bin/python3 bench/compare/compare_coll.py --build %s --rounds %d --pes %s" % (
        os.path.relpath(build, ROOT), args.rounds, args.pes)
    section = ["## Collectives", "",
               "Written by `bench/compare/compare_coll.py` (`%s`): %d rounds, each mori's `coll_bench` over P2P "
               "(one lane per PE, the world team, %d repetitions of up to %d calls, the slowest PE's time per call) "
               "then Open MPI's OpenSHMEM 1.4 active-set collectives (`bench/compare/oshmem_coll.c`, the same "
               "loop, `reduce` as `shmem_float_sum_to_all`; it has no reducescatter); figures are the median over "
               "the rounds, (min-max) the rounds' spread, and each ratio is taken within a round (mori's time "
               "against OpenSHMEM's, the memcpy's against mori's) before the median over the rounds. `block` is one member's block (broadcast's message, "
               "reduce's float array, reducescatter's block of the result). GB/s is a call's volume per PE per call: "
               "the bytes it writes into each PE's dest (broadcast, reduce: the block; fcollect, collect, alltoall: "
               "a block from every PE, its own included), but for reducescatter the array it reduces, a block for "
               "every PE, as nccl-tests counts a reduce-scatter; the memcpy bound is `memcpy` of that volume on one "
               "CPU in the same program. The machine has "
               "2 cores: at 4 PEs two PEs share each." % (command, args.rounds, REPS, ITERS), ""] + \
        lines + ["Targets:", ""] + verdicts + [""]
    print("\n".join(section))
    if args.no_write:
        return
    (ROOT / "bench/compare/collectives.md").write_text("\n".join(section))
    doc = (ROOT / "docs/benchmarks.md").read_text()
    (ROOT / "docs/benchmarks.md").write_text(splice(doc, "\n".join(section)))
    print("wrote bench/compare/collectives.md and docs/benchmarks.md", file=sys.stderr)


if __name__ == "__main__":
    main()
