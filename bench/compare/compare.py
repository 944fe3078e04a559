#!/usr/bin/python3
"""mori against Open MPI's OpenSHMEM and memcpy, on this machine, in one interleaved run.

    /usr/bin/python3 bench/compare/compare.py [--build build] [--rounds 5] [--no-write]

Each round runs, one after another: mori over P2P, Open MPI's OpenSHMEM (bench/compare/oshmem_bench.c,
compiled here with oshcc), and mori over the software NIC (mlx5), each with the same sizes; put_bw and
get_bw time memcpy through the peer's mapping inside the same program (--memcpy). Every program
reports the median of its --reps repetitions; a figure here is the median over the rounds, and the
spread is the smallest and largest round's figure. The table of ratios goes to stdout and, with the
machine and the targets, to docs/benchmarks.md (followed by bench/compare/notes.md, collectives.md
and collectives_notes.md).
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--mca", "btl", "self,vader",
          "--bind-to", "none", "-np", "2"]
# Open MPI 4.1's only SPML here is UCX; its osc/rdma component crashes in shmem_finalize (a memory
# hook left behind), so it is excluded. Each PE is bound to a core, as the mori programs pin their
# lanes (an unpinned ping-pong lands both spinners on one core now and then: microseconds, not ns).
OSHRUN = ["oshrun", "--allow-run-as-root", "--oversubscribe", "--mca", "btl", "self,vader",
          "--bind-to", "core", "--mca", "spml", "ucx", "--mca", "osc", "^rdma", "-np", "2"]
ITERS, WARMUP, REPS = 20000, 1000, 3
BW = ("64K", "4M", 4)  # min, max, factor
BW_BYTES = (65536, 4194304, 4)

# (bench, arguments) of the mori programs, per transport.
MORI_P2P = [("put_latency", ["-b", "8", "-e", "8"]), ("get_latency", ["-b", "8", "-e", "8"]),
            ("p_pingpong", []), ("atomic_latency", []), ("signal_pingpong", ["-b", "8", "-e", "8"]),
            ("put_bw", ["-b", BW[0], "-e", BW[1], "-f", str(BW[2]), "--memcpy"]),
            ("get_bw", ["-b", BW[0], "-e", BW[1], "-f", str(BW[2]), "--memcpy"])]
MORI_RDMA = [("put_latency", ["-b", "8", "-e", "8"]), ("p_pingpong", []), ("atomic_latency", []),
             ("put_bw", ["-b", "8", "-e", "8"]),
             ("put_bw", ["-b", BW[0], "-e", BW[1], "-f", str(BW[2])])]
OSHMEM_MODES = ["put_latency:8:8:2", "get_latency:8:8:2", "p_pingpong:4:4:2",
                "atomic_latency:8:8:2", "put_bw:%d:%d:%d" % BW_BYTES, "get_bw:%d:%d:%d" % BW_BYTES]


def run_json(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=600).stdout
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def key(row):
    lib = {"p2p": "mori p2p", "rdma": "mori rdma", "oshmem": "oshmem"}[row["transport"]]
    if row["bench"] == "memcpy":
        return ("memcpy", row.get("ref_for", ""), row["size"])
    return (lib, row["bench"], row["size"])


def one_round(build, oshmem_bin, series):
    common = ["--iters", str(ITERS), "--warmup", str(WARMUP), "--reps", str(REPS), "--json"]
    steps = [("p2p", b, a) for b, a in MORI_P2P] + [("oshmem", None, None)] + \
            [("rdma", b, a) for b, a in MORI_RDMA]
    for transport, bench, args in steps:
        if transport == "oshmem":
            rows = run_json(OSHRUN + [str(oshmem_bin), str(ITERS), str(WARMUP), str(REPS)] +
                            OSHMEM_MODES)
        else:
            rows = run_json(MPIRUN + [str(build / "bench" / bench)] + args + common +
                            ["--transport", transport])
        for row in rows:
            if row["bench"] == "memcpy":
                row["ref_for"] = bench
            series[key(row)].append(row)


def figure(rows, field):
    values = [r[field] for r in rows]
    return statistics.median(values), min(values), max(values)


def fmt_lat(k, series):
    med, lo, hi = figure(series[k], "lat_us")
    return "%.1f ns (%.1f-%.1f)" % (1e3 * med, 1e3 * lo, 1e3 * hi)


def fmt_bw(k, series, field="gbps"):
    med, lo, hi = figure(series[k], field)
    return "%.2f (%.2f-%.2f)" % (med, lo, hi)


def build_tables(series):
    """Markdown tables and the targets, from the rounds' figures."""
    lines, targets = [], []
    lat_rows = [("put_latency", 8, "8-byte put + quiet", 0.8),
                ("get_latency", 8, "8-byte get", None),
                ("p_pingpong", 4, "p + wait_until, half round trip", 1.0),
                ("atomic_latency", 8, "fetch_add (int64)", 1.0)]
    lines += ["| operation | mori P2P | OpenSHMEM (UCX) | mori / OpenSHMEM | target | mori RDMA (mlx5) |",
              "|---|---|---|---|---|---|"]
    for bench, size, text, target in lat_rows:
        ours, theirs, rdma = ("mori p2p", bench, size), ("oshmem", bench, size), ("mori rdma", bench, size)
        ratio = figure(series[ours], "lat_us")[0] / figure(series[theirs], "lat_us")[0]
        rdma_text = fmt_lat(rdma, series) if series.get(rdma) else "-"
        goal = "at most %.1f" % target if target else "-"
        lines.append("| %s | %s | %s | %.2f | %s | %s |" % (text, fmt_lat(ours, series),
                     fmt_lat(theirs, series), ratio, goal, rdma_text))
        if target:
            targets.append(("%s: mori/OpenSHMEM %.2f, at most %.1f" % (text, ratio, target), ratio <= target))
    sig = ("mori p2p", "signal_pingpong", 8)
    if series.get(sig):
        lines.append("| 8-byte putmem_signal_nbi + signal_wait_until, half round trip | %s | "
                     "(no signal API in Open MPI 4.1) | - | - | - |" % fmt_lat(sig, series))
    lines += ["", "Bandwidth, GB/s (10^9 bytes/s), one thread per PE, windows of `_nbi` completed by one quiet:", "",
              "| size | op | mori P2P | memcpy (same program) | mori / memcpy | target | OpenSHMEM | mori / OpenSHMEM | mori RDMA put |",
              "|---|---|---|---|---|---|---|---|---|"]
    size = BW_BYTES[0]
    while size <= BW_BYTES[1]:
        for op in ("put_bw", "get_bw"):
            ours, ref = ("mori p2p", op, size), ("memcpy", op, size)
            theirs, rdma = ("oshmem", op, size), ("mori rdma", op, size)
            m = figure(series[ours], "gbps")[0]
            r = figure(series[ref], "gbps")[0]
            t = figure(series[theirs], "gbps")[0]
            rdma_text = fmt_bw(rdma, series) if series.get(rdma) else "-"
            lines.append("| %d KiB | %s | %s | %s | %.2f | at least 0.9 | %s | %.2f | %s |" % (
                size >> 10, op.split("_")[0], fmt_bw(ours, series), fmt_bw(ref, series), m / r,
                fmt_bw(theirs, series), m / t, rdma_text))
            targets.append(("%s at %d KiB: mori/memcpy %.2f, at least 0.9" % (op, size >> 10, m / r), m / r >= 0.9))
        size *= BW_BYTES[2]
    rate = ("mori rdma", "put_bw", 8)
    mops = figure(series[rate], "mops")
    lines += ["", "Software NIC (mlx5): 8-byte `putmem_nbi` work requests posted and completed per second "
              "by one block of one thread on PE 0: **%.2f M/s** (rounds %.2f-%.2f)." % mops]
    targets.append(("8-byte RDMA puts per second per PE: %.2f M, at least 1 M" % mops[0], mops[0] >= 1.0))
    return lines, targets


def machine():
    info = dict(line.split(":", 1) for line in subprocess.run(
        ["lscpu"], capture_output=True, text=True).stdout.splitlines() if ":" in line)
    return "%s, %s CPUs (%s), %s" % (info.get("Model name", "?").strip(), info.get("CPU(s)", "?").strip(),
                                     info.get("Hypervisor vendor", "bare metal").strip(),
                                     os.uname().release)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=str(ROOT / "build"), help="mori build directory (host backend)")
    ap.add_argument("--rounds", type=int, default=7, help="interleaved rounds; medians are reported")
    ap.add_argument("--no-write", action="store_true", help="print only; leave docs/benchmarks.md")
    args = ap.parse_args()
    build = Path(args.build).resolve()
    missing = [b for b, _ in MORI_P2P if not (build / "bench" / b).exists()]
    if missing:
        sys.exit("compare: %s not built: ninja -C %s %s" % (", ".join(missing), build, " ".join(missing)))
    oshmem_bin = build / "bench" / "compare" / "oshmem_bench"
    oshmem_bin.parent.mkdir(parents=True, exist_ok=True)
    if not shutil.which("oshcc"):
        sys.exit("compare: oshcc not found (Debian: apt-get install libopenmpi-dev openmpi-bin)")
    subprocess.run(["oshcc", "-O2", "-o", str(oshmem_bin), str(ROOT / "bench/compare/oshmem_bench.c")],
                   check=True)
    series = defaultdict(list)
    for r in range(args.rounds):
        print("round %d of %d" % (r + 1, args.rounds), file=sys.stderr, flush=True)
        one_round(build, oshmem_bin, series)
    lines, targets = build_tables(series)
    command = "/usr/bin/python3 bench/compare/compare.py --build %s --rounds %d" % (
        os.path.relpath(build, ROOT), args.rounds)
    verdicts = ["- %s: **%s**" % (text, "met" if ok else "missed") for text, ok in targets]
    print("\n".join(lines + [""] + verdicts))
    if args.no_write:
        return
    doc = ["# Benchmarks", "",
           "Written by `bench/compare/compare.py`; the analysis after the targets is `bench/compare/notes.md`.", "",
           "- machine: %s" % machine(),
           "- command: `%s`" % command,
           "- each round: mori P2P, then Open MPI %s OpenSHMEM (SPML UCX), then mori over the software NIC; "
           "%d rounds, each program the median of %d repetitions of %d iterations (%d warmup; large messages "
           "fewer: 256 MiB per repetition); figures are the median over the rounds, "
           "(min-max) the rounds' spread" % (ompi_version(), args.rounds, REPS, ITERS, WARMUP),
           "- host backend, 2 PEs (`mpirun -np 2`), one lane (CPU thread) per PE pinned to its own core, timed inside one launch; "
           "OpenSHMEM PEs bound to a core each (`--bind-to core`)", "",
           "## Results", ""] + lines + ["", "## Targets", ""] + verdicts + [""]
    notes = ROOT / "bench/compare/notes.md"
    if notes.exists():
        doc += [notes.read_text().rstrip(), ""]
    collectives = ROOT / "bench/compare/collectives.md"  # written by compare_coll.py
    if collectives.exists():
        doc += [collectives.read_text().rstrip(), ""]
    collectives_notes = ROOT / "bench/compare/collectives_notes.md"  # its analysis, by hand
    if collectives_notes.exists():
        doc += [collectives_notes.read_text().rstrip(), ""]
    (ROOT / "docs/benchmarks.md").write_text("\n".join(doc))
    print("wrote docs/benchmarks.md", file=sys.stderr)


def ompi_version():
    out = subprocess.run(["ompi_info", "--version"], capture_output=True, text=True).stdout
    found = re.search(r"v(\d+\.\d+\.\d+)", out)
    return found.group(1) if found else "?"


if __name__ == "__main__":
    main()
