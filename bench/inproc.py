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

Usage: inproc.py WORKLOADS.kir [GRAPH...] [--sizes 12,20] [--rounds 5]
                 [--reps 50] [--module build/gpu/libkfbench_inproc.so] [--out FILE.md]"""
import argparse
import csv
import ctypes
import os
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402


def kfuse_run(mod, kir, graph, lg, reps, seed, path):
    """One kfbench run of graph at 2^lg: its median ms per launch."""
    argv = [b"kfbench", b"--backend", b"cuda", b"--sizes", str(lg).encode(), b"--reps", str(reps).encode(),
            b"--seed", str(seed).encode(), b"--csv", path.encode(), kir.encode(), graph.encode()]
    rc = mod.kfbench_main(len(argv), (ctypes.c_char_p * len(argv))(*argv))
    ctypes.CDLL(None).fflush(None)  # kfbench's lines before ours
    with open(path) as f:
        rows = [r for r in csv.DictReader(f) if r["workload"] == graph]
    if rc != 0 or len(rows) != 1:
        raise RuntimeError(f"kfbench {graph} 2^{lg}: exit status {rc}, {len(rows)} rows")
    return float(rows[0]["ms"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("kir")
    ap.add_argument("graphs", nargs="*")
    ap.add_argument("--sizes", default="12,20")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--seed", type=int, default=20240607)
    ap.add_argument("--module", default="build/gpu/libkfbench_inproc.so")
    ap.add_argument("--out", help="also write the table to this Markdown file")
    a = ap.parse_intermixed_args()
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
    lines = ["| workload | N | kfuse-cuda us (rounds) | of copy | torch.compile us (rounds) | of copy "
             "| kfuse speed / torch.compile | rounds kfuse faster |", "|---|---|---|---|---|---|---|---|"]
    for lg in [int(s) for s in a.sizes.split(",")]:
        n = 1 << lg
        for name in (x for x in names if x in fns):
            g, t0 = graphs[name], time.perf_counter()
            host = peers.make_inputs(g, n, a.seed + lg)
            floor = peers.byte_floor(g, host)
            nsets = max(1, min(-(-peers.ROTATE_BYTES // floor), 10000, int(lib.free_memory() / 4 // floor)))
            sets = lib.rotate(host, nsets)
            kf, tc = [], []
            for r in range(a.rounds):
                for side in ("kf", "tc") if r % 2 == 0 else ("tc", "kf"):
                    if side == "kf":
                        kf.append(kfuse_run(mod, a.kir, name, lg, a.reps, a.seed + lg,
                                            os.path.join(tmp, "kf.csv")))
                    else:
                        tc.append(peers.time_row(lib, fns[name], sets, a.reps)[0])
            del sets
            lib.release()
            k, t = statistics.median(kf), statistics.median(tc)
            wins = sum(x < y for x, y in zip(kf, tc))
            gb = lambda ms: floor / ms / 1e6 / copy_gbps
            line = (f"| {name} | 2^{lg} | {k * 1e3:.3f} ({min(kf) * 1e3:.3f}-{max(kf) * 1e3:.3f}) | {gb(k):.3f} "
                    f"| {t * 1e3:.3f} ({min(tc) * 1e3:.3f}-{max(tc) * 1e3:.3f}) | {gb(t):.3f} | {t / k:.3f} "
                    f"| {wins} of {a.rounds} |")
            lines.append(line)
            peers.log(line + f"  ({time.perf_counter() - t0:.1f} s)")
    shutil.rmtree(tmp)
    table = "\n".join(lines) + "\n"
    print(table)
    if a.out:
        with open(a.out, "w") as f:
            f.write(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
