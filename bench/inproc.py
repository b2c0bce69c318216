#!/usr/bin/env python3
"""kfuse (kfbench, through the library) and torch.compile (peers.py) in ONE
process, in alternating rounds, on the workloads of a .kir file.

kfbench and peers.py normally run in processes of their own, and on the GPU
machine one process's times drift by 2-4% from the next's at 2^20 and by
0.1-0.2 us at 2^12 (bench/results/h100-2026-11-22-s11-analysis.md), as much
as the gaps the benchmark judges there.  Here both run in one process, one
round after the other with the order alternated: each kfuse figure is a whole
kfbench run of one workload and size (kfbench_main of the kfbench_inproc
module: its own context on the device's primary context, copy, input sets,
check against the interpreter and timing), each torch.compile figure
peers.py's timed row on torch's own input sets.  Both count and time exactly
as the benchmark does (bench/README.md).  The table gives each system's
median over the rounds, their range and the rounds kfuse won.

--literal adds a third system: kfuse on a copy of each graph whose symbols
are the size's literal values (the benchmark's size table), so its kernels
are specialised to the shape as torch.compile's are (peers.py compiles with
dynamic=False); kfuse's own kernels serve every size of a symbol.

--fast-math adds kfuse with kf_context_options.fast_math (approximate f32
exp, log, sin, cos, division: docs/codegen.md, "Fast math"), the accuracy
class of Triton's tl.exp and division, as a system of its own.

--stream legacy runs kfuse on CUDA's legacy default stream (kf_stream_wrap),
where peers.py times torch.compile, instead of a stream of its own; --stream
both runs both, as two systems.

torch.compile's figure moves from one process to the next by up to 0.37 us
at 2^12 on an H200, kfuse's less (bench/results/h200-2026-11-28-s22-
analysis.md): --processes P runs the whole comparison in P fresh processes,
one after another, and pools them (per row: the median and range of kfuse's
speed over torch.compile's, and the processes kfuse won); --csv writes one
process's medians.

Usage: inproc.py WORKLOADS.kir [GRAPH...] [--sizes 12,20] [--rounds 5] [--reps 50] [--literal]
                 [--stream own|legacy|both] [--fast-math] [--processes P]
                 [--module build/gpu/libkfbench_inproc.so]
                 [--out FILE.md] [--csv FILE.csv]"""
import argparse
import csv
import ctypes
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402


def kfuse_run(mod, kir, graph, lg, reps, seed, path, stream="own", fast=False):
    """One kfbench run of graph at 2^lg on its own stream or CUDA's legacy
    default stream, with fast math or not: its median ms per launch."""
    argv = [b"kfbench", b"--backend", b"cuda", b"--sizes", str(lg).encode(), b"--reps", str(reps).encode(),
            b"--seed", str(seed).encode(), b"--csv", path.encode(), b"--stream", stream.encode()] + \
        [b"--fast-math"] * fast + [kir.encode(), graph.encode()]
    rc = mod.kfbench_main(len(argv), (ctypes.c_char_p * len(argv))(*argv))
    ctypes.CDLL(None).fflush(None)  # kfbench's lines before ours
    with open(path) as f:
        rows = [r for r in csv.DictReader(f) if r["workload"] == graph]
    if rc != 0 or len(rows) != 1:
        raise RuntimeError(f"kfbench {graph} 2^{lg}: exit status {rc}, {len(rows)} rows")
    return float(rows[0]["ms"])


def literal_kir(path, g, n, out):
    """Write graph g of path to out with its symbols replaced by their
    values at size n (peers.sym_sizes: the benchmark's size table)."""
    vals = peers.sym_sizes(g, n)
    text = open(path).read()
    block = re.search(r"^graph %s\(.*?^\}" % g["name"], text, re.M | re.S)[0]
    dims = lambda m: re.sub(r"\b(\w+)\b", lambda t: str(vals.get(t[1], t[1])), m[0])
    with open(out, "w") as f:
        f.write("kfuse 1\n" + re.sub(r"\[[^\]]*\]", dims, block) + "\n")
    return out


def stat(xs):
    return f"{statistics.median(xs) * 1e3:.3f} ({min(xs) * 1e3:.3f}-{max(xs) * 1e3:.3f})"


def sides_of(a):
    """kfuse's systems: (label, stream, literal, fast) for every --stream,
    the literal graphs on the first stream with --literal, and kfuse with
    fast math on the first stream with --fast-math."""
    streams = ("own", "legacy") if a.stream == "both" else (a.stream,)
    sides = [("kfuse-cuda" + ("" if s == "own" else " " + s), s, False, False) for s in streams]
    return sides + [("kfuse literal", streams[0], True, False)] * a.literal + \
        [("kfuse fast-math", streams[0], False, True)] * a.fast_math


def pool(paths, out):
    """Pool the --csv files of several processes: per system, workload and
    size, the median, range and count of kfuse speed / torch.compile."""
    ratios = {}
    for p in paths:
        for r in csv.DictReader(open(p)):
            key = (r["system"], r["workload"], int(r["n"]))
            ratios.setdefault(key, []).append(float(r["torch_compile_ms"]) / float(r["kfuse_ms"]))
    systems = list(dict.fromkeys(k[0] for k in ratios))
    lines = [f"Pooled over {len(paths)} processes: each process's medians, kfuse's speed over "
             "torch.compile's.", "",
             "| workload | N | " + " | ".join(f"{s}: median (range) | processes kfuse faster" for s in systems) + " |",
             "|---|---|" + "---|---|" * len(systems)]
    for w, n in dict.fromkeys((k[1], k[2]) for k in ratios):
        cells = []
        for s in systems:
            v = ratios.get((s, w, n), [])
            cells.append(f"{statistics.median(v):.3f} ({min(v):.3f}-{max(v):.3f}) | {sum(x > 1 for x in v)} of {len(v)}"
                         if v else " | ")
        lines.append(f"| {w} | 2^{n.bit_length() - 1} | " + " | ".join(cells) + " |")
    emit(lines, out)


def emit(lines, out):
    """Print a table, and write it to out when given."""
    table = "\n".join(lines) + "\n"
    print(table)
    if out:
        with open(out, "w") as f:
            f.write(table)


def processes(a):
    """Run this script a.processes times, each a fresh process, and pool
    (a child's own --out is overwritten by the pooled table)."""
    tmp = tempfile.mkdtemp(prefix="inproc")
    paths = []
    for i in range(a.processes):
        paths.append(os.path.join(tmp, f"p{i}.csv"))
        peers.log(f"# inproc: process {i + 1} of {a.processes}")
        subprocess.run([sys.executable, os.path.abspath(__file__)] + sys.argv[1:] +
                       ["--processes", "1", "--csv", paths[-1]], check=True)
    pool(paths, a.out)
    shutil.rmtree(tmp)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("kir")
    ap.add_argument("graphs", nargs="*")
    ap.add_argument("--sizes", default="12,20")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--seed", type=int, default=20240607)
    ap.add_argument("--literal", action="store_true", help="also kfuse on the graphs with literal shapes")
    ap.add_argument("--stream", choices=("own", "legacy", "both"), default="own", help="kfuse's stream")
    ap.add_argument("--fast-math", action="store_true", help="also kfuse with kf_context_options.fast_math")
    ap.add_argument("--processes", type=int, default=1, help="run in this many processes and pool them")
    ap.add_argument("--module", default="build/gpu/libkfbench_inproc.so")
    ap.add_argument("--out", help="also write the table to this Markdown file")
    ap.add_argument("--csv", help="also write each row's medians to this CSV file (--processes pools them)")
    a = ap.parse_intermixed_args()
    if a.processes > 1:
        return processes(a)
    graphs = peers.parse_kir(a.kir)
    names = a.graphs or list(graphs)
    if set(names) - set(graphs):
        ap.error(f"{a.kir} has no graph {', '.join(sorted(set(names) - set(graphs)))}")
    mod = ctypes.CDLL(os.path.abspath(a.module))
    mod.kfbench_main.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
    lib = peers.TorchLib()
    import torch
    nbytes, copy_gbps = peers.measure_copy(lib)
    peers.log(f"# inproc: torch {torch.__version__} on {lib.name_gpu}; torch copy_ of {nbytes >> 20} MiB "
              f"{copy_gbps:.1f} GB/s; {a.rounds} rounds, {a.reps} reps")
    fns = {}
    for name in names:  # peers.py's check: N = 2^12 against NumPy in float64
        g = graphs[name]
        host = peers.make_inputs(g, peers.CHECK_N, a.seed)
        fn = lib.fn("torch.compile", g)
        got = [lib.to_host(o) for o in fn(*lib.rotate(host, 1)[0])]
        results = [peers.check(o, w, o.dtype) for o, w in zip(got, peers.reference(g, host))]
        if all(ok for ok, _ in results):
            fns[name] = fn
        else:
            peers.log(f"torch.compile: {name}: WRONG at N=2^12, not timed")
    tmp = tempfile.mkdtemp(prefix="inproc")
    sides = sides_of(a)
    head = ["| workload | N | torch.compile us (rounds) | of copy"] + \
        [f"{s} us (rounds) | of copy | speed / torch.compile | rounds faster" for s, *_ in sides]
    lines = [" | ".join(head) + " |", "|---|---|---|---|" + "---|---|---|---|" * len(sides)]
    rows = []
    for lg in [int(s) for s in a.sizes.split(",")]:
        n = 1 << lg
        for name in (x for x in names if x in fns):
            g, t0 = graphs[name], time.perf_counter()
            host = peers.make_inputs(g, n, a.seed + lg)
            floor = peers.byte_floor(g, host)
            nsets = peers.input_sets(host, floor, lib.free_memory(), 4)
            sets = lib.rotate(host, nsets)
            lit = literal_kir(a.kir, g, n, os.path.join(tmp, "literal.kir")) if a.literal else None
            times = {side: [] for side in sides + ["tc"]}
            for r in range(a.rounds):
                for side in list(times) if r % 2 == 0 else list(times)[::-1]:
                    if side == "tc":
                        times[side].append(peers.time_row(lib, fns[name], sets, a.reps)[0])
                    else:
                        times[side].append(kfuse_run(mod, lit if side[2] else a.kir, name, lg, a.reps, a.seed + lg,
                                                     os.path.join(tmp, "kf.csv"), side[1], side[3]))
            del sets
            lib.release()
            tc = times["tc"]
            t = statistics.median(tc)
            gb = lambda xs: floor / statistics.median(xs) / 1e6 / copy_gbps
            line = f"| {name} | 2^{lg} | {stat(tc)} | {gb(tc):.3f}"
            for side in sides:
                xs = times[side]
                line += (f" | {stat(xs)} | {gb(xs):.3f} | {t / statistics.median(xs):.3f} "
                         f"| {sum(x < y for x, y in zip(xs, tc))} of {a.rounds}")
                rows.append([side[0], name, n, statistics.median(xs), t, sum(x < y for x, y in zip(xs, tc)), a.rounds])
            lines.append(line + " |")
            peers.log(line + f" |  ({time.perf_counter() - t0:.1f} s)")
    shutil.rmtree(tmp)
    emit(lines, a.out)
    if a.csv:
        with open(a.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["system", "workload", "n", "kfuse_ms", "torch_compile_ms", "kfuse_wins", "rounds"])
            w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
