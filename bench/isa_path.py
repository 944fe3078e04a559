#!/usr/bin/env python3
"""isa_path: the executed path of one function of an llc amdgcn assembly file.

    isa_path.py <file.s> <function> [--markers a,b,...] [--until-store] [--explain]

Prints "<executed> <static>": the instructions of the function's executed path, and of the whole
function as bench/isa_table.awk counts them (no directives, comments or labels).

The executed path is the path of fewest instructions from the function's entry to a normal exit
(s_setpc_b64, the return of a callable function, or s_endpgm, the end of a kernel) that passes,
in the given order, through the path markers: the "; mori-path <name>" comments that
MORI_PATH_MARK (include/mori/platform/path_mark.hpp) leaves in the assembly. With --until-store the
path ends instead at the first store (global_/flat_/buffer_/scratch_store) after the last marker,
which it includes.

What "fewest" means:
  - every wait loop spins zero times (no stall): a loop's back edge only adds instructions;
  - a slow or wrap branch (a WQE across the ring's end, a region lookup) is not taken when the
    common path is shorter;
  - a block ending in s_trap, and a block that only leads to one, is a failure exit: no path
    ends there;
  - a divergent region (s_and_saveexec ... s_cbranch_execz) is skipped or entered like any
    branch: the CFG does not know which lanes are active. A region the measured thread must run
    on its common path (the batch leader's reservation, a symmetric-heap address) is therefore
    forced with a marker; --explain shows the blocks a path takes, to check that none is missing.

Blocks: a label (.LBB*) or the instruction after a branch starts one; s_branch has one successor,
s_cbranch_* two (target and fallthrough), s_setpc_b64, s_endpgm and s_trap none.

Errors (exit status 1, message on stderr): the function is not in the file, a marker is not in
the function, or no path through the markers reaches an exit.
"""
import argparse
import heapq
import re
import sys

INSTR = re.compile(r"^\s+([a-z_][a-z0-9_]*)(\s|$)")
LABEL = re.compile(r"^(\.L[A-Za-z0-9_$.]+):")
MARK = re.compile(r";\s*mori-path\s+(\S+)")
STORE = re.compile(r"^(global|flat|buffer|scratch)_store")


def fail(message):
    sys.stderr.write("isa_path: %s\n" % message)
    sys.exit(1)


def function_lines(path, name):
    """The lines of `name`, from its label to its .Lfunc_end."""
    lines, inside = [], False
    with open(path) as f:
        for line in f:
            if not inside:
                inside = line.startswith(name + ":")
                continue
            if line.startswith(".Lfunc_end"):
                return lines
            lines.append(line.rstrip("\n"))
    fail("function %s not found in %s" % (name, path))


class Block:
    def __init__(self, label):
        self.label = label  # .LBB name, or "+n" for an unlabelled block
        self.items = []  # ("i", mnemonic, text) or ("m", marker name)
        self.succ = []  # labels of successors
        self.exit = False  # ends in a return or s_endpgm
        self.end = None  # the terminator's mnemonic, if any


def split_blocks(lines):
    blocks = [Block("entry")]
    for line in lines:
        label = LABEL.match(line)
        if label:
            blocks.append(Block(label.group(1)))
            continue
        mark = MARK.search(line)
        instr = INSTR.match(line)
        if not mark and (not instr or line.lstrip().startswith(".")):
            continue
        if blocks[-1].end is not None:  # the first item after a terminator
            blocks.append(Block("+%d" % len(blocks)))
        if mark and not instr:
            blocks[-1].items.append(("m", mark.group(1)))
            continue
        op = instr.group(1)
        if op == "s_setpc_b64" and "s[30:31]" not in line:
            fail("indirect branch (%s): only s_setpc_b64 s[30:31], a return, is known" % line.strip())
        blocks[-1].items.append(("i", op, line.strip()))
        if op == "s_branch" or op.startswith("s_cbranch_") or op in (
            "s_setpc_b64",
            "s_endpgm",
            "s_trap",
        ):
            blocks[-1].end = op
            if op in ("s_setpc_b64", "s_endpgm"):
                blocks[-1].exit = True
            elif op != "s_trap":
                blocks[-1].succ.append(line.split()[1].rstrip(","))
    # Fallthrough: into the next block unless the last instruction ends the flow.
    for i, b in enumerate(blocks[:-1]):
        if b.end is None or b.end.startswith("s_cbranch_"):
            b.succ.append(blocks[i + 1].label)
    return blocks


def walk(block, k, markers, until_store):
    """Instructions of `block` entered with k markers matched: (cost, k after, path ended)."""
    cost = 0
    for item in block.items:
        if item[0] == "m":
            if k < len(markers) and item[1] == markers[k]:
                k += 1
            continue
        cost += 1
        if until_store and k == len(markers) and STORE.match(item[1]):
            return cost, k, True
    return cost, k, False


def shortest(blocks, markers, until_store):
    """Dijkstra over (block, markers matched); a node's cost includes its own block."""
    index = {b.label: i for i, b in enumerate(blocks)}
    for b in blocks:
        for s in b.succ:
            if s not in index:
                fail("branch to %s, which is not a label of the function" % s)
    best, prev = {}, {}
    c, k, ended = walk(blocks[0], 0, markers, until_store)
    heap = [(c, 0, 0, k, ended, None)]
    while heap:
        cost, i, k_in, k, ended, parent = heapq.heappop(heap)
        if (i, k_in) in best:
            continue
        best[(i, k_in)] = cost
        prev[(i, k_in)] = parent
        if ended or (not until_store and blocks[i].exit and k == len(markers)):
            path, node = [], (i, k_in)
            while node is not None:
                path.append(node[0])
                node = prev[node]
            return cost, path[::-1]
        for s in blocks[i].succ:
            j = index[s]
            if (j, k) not in best:
                c, k2, e = walk(blocks[j], k, markers, until_store)
                heapq.heappush(heap, (cost + c, j, k, k2, e, (i, k_in)))
    return None, None


def main(argv):
    parser = argparse.ArgumentParser(prog="isa_path.py", description="executed path of a function")
    parser.add_argument("assembly")
    parser.add_argument("function")
    parser.add_argument("--markers", default="-", help="comma list, in path order; - for none")
    parser.add_argument("--until-store", action="store_true")
    parser.add_argument("--explain", action="store_true", help="print the path's blocks")
    a = parser.parse_args(argv[1:])
    markers = [m for m in a.markers.split(",") if m and m != "-"]
    path, name, until_store = a.assembly, a.function, a.until_store
    blocks = split_blocks(function_lines(path, name))
    present = {it[1] for b in blocks for it in b.items if it[0] == "m"}
    for m in markers:
        if m not in present:
            fail(
                "marker %s is not in %s (markers there: %s; was the bitcode built with "
                "-DMORI_ISA_PATH_MARKERS=1?)" % (m, name, ", ".join(sorted(present)) or "none")
            )
    static = sum(1 for b in blocks for it in b.items if it[0] == "i")
    cost, route = shortest(blocks, markers, until_store)
    if cost is None:
        fail(
            "no path of %s from its entry through markers [%s] to %s"
            % (name, ",".join(markers), "a store" if until_store else "a return")
        )
    print(cost, static)
    if a.explain:
        k = 0
        for i in route:
            c, k2, _ = walk(blocks[i], k, markers, until_store)
            marks = [it[1] for it in blocks[i].items if it[0] == "m"]
            print("  %-10s %4d  %s" % (blocks[i].label, c, " ".join("[%s]" % m for m in marks)))
            k = k2


if __name__ == "__main__":
    main(sys.argv)
