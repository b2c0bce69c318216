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

--stream legacy runs kfuse on CUDA's legacy default stream (kf_stream_wrap),
where peers.py times torch.compile, instead of a stream of its own.

Usage: inproc.py WORKLOADS.kir [GRAPH...] [--sizes 12,20] [--rounds 5] [--reps 50]
                 [--literal] [--stream own|legacy] [--module build/gpu/libkfbench_inproc.so] [--out FILE.md]"""
import argparse
import csv
import ctypes
import os
import re
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402


def kfuse_run(mod, kir, graph, lg, reps, seed, path, stream="own"):
    """One kfbench run of graph at 2^lg on its own stream or CUDA's legacy
    default stream: its median ms per launch."""
    argv = [b"kfbench", b"--backend", b"cuda", b"--sizes", str(lg).encode(), b"--reps", str(reps).encode(),
            b"--seed", str(seed).encode(), b"--csv", path.encode(), b"--stream", stream.encode(), kir.encode(),
            graph.encode()]
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("kir")
    ap.add_argument("graphs", nargs="*")
    ap.add_argument("--sizes", default="12,20")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--seed", type=int, default=20240607)
    ap.add_argument("--literal", action="store_true", help="also kfuse on the graphs with literal shapes")
    ap.add_argument("--stream", choices=("own", "legacy"), default="own", help="kfuse's stream")
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
    lit = " | kfuse literal us (rounds) | of copy | literal / torch.compile | rounds literal faster" if a.literal else ""
    lines = ["| workload | N | kfuse-cuda us (rounds) | of copy | torch.compile us (rounds) | of copy "
             "| kfuse speed / torch.compile | rounds kfuse faster" + lit + " |",
             "|---|---|---|---|---|---|---|---|" + "---|---|---|---|" * a.literal]
    for lg in [int(s) for s in a.sizes.split(",")]:
        n = 1 << lg
        for name in (x for x in names if x in fns):
            g, t0 = graphs[name], time.perf_counter()
            host = peers.make_inputs(g, n, a.seed + lg)
            floor = peers.byte_floor(g, host)
            nsets = max(1, min(-(-peers.ROTATE_BYTES // floor), 10000, int(lib.free_memory() / 4 // floor)))
            sets = lib.rotate(host, nsets)
            kirs = {"kf": a.kir}
            if a.literal:
                kirs["kl"] = literal_kir(a.kir, g, n, os.path.join(tmp, "literal.kir"))
            times = {side: [] for side in list(kirs) + ["tc"]}
            for r in range(a.rounds):
                order = list(times) if r % 2 == 0 else list(times)[::-1]
                for side in order:
                    if side == "tc":
                        times[side].append(peers.time_row(lib, fns[name], sets, a.reps)[0])
                    else:
                        times[side].append(kfuse_run(mod, kirs[side], name, lg, a.reps, a.seed + lg,
                                                     os.path.join(tmp, "kf.csv"), a.stream))
            del sets
            lib.release()
            t = statistics.median(times["tc"])
            gb = lambda xs: floor / statistics.median(xs) / 1e6 / copy_gbps
            vs = lambda xs: (f"{t / statistics.median(xs):.3f} | "
                             f"{sum(x < y for x, y in zip(xs, times['tc']))} of {a.rounds}")
            line = (f"| {name} | 2^{lg} | {stat(times['kf'])} | {gb(times['kf']):.3f} | {stat(times['tc'])} "
                    f"| {gb(times['tc']):.3f} | {vs(times['kf'])}")
            if a.literal:
                line += f" | {stat(times['kl'])} | {gb(times['kl']):.3f} | {vs(times['kl'])}"
            lines.append(line + " |")
            peers.log(line + f" |  ({time.perf_counter() - t0:.1f} s)")
    shutil.rmtree(tmp)
    table = "\n".join(lines) + "\n"
    print(table)
    if a.out:
        with open(a.out, "w") as f:
            f.write(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
