#!/usr/bin/env python3
"""CuPy beside bench/cache_bench.sh: cupy.fuse's first call of x+x+x+x+x and
of the 40-op chain of bench/chain40.kir, with an empty CUPY_CACHE_DIR and in
a new process with a warm one, each the median of fresh processes, in ms
beyond context creation (import cupy and a first array on the device).
Prints a markdown table.  Every first result is checked against NumPy.
Usage: cache_peers.py [--runs R] [--n N]
CuPy is not a dependency of kfuse: pip install cupy-cuda12x (or -cuda13x)."""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time


def x5(x):
    return x + x + x + x + x


def chain40(x, m):
    """bench/chain40.kir: four rounds of sin, *1.5, +x, tanh, square, +0.25,
    sqrt, -x, cos, exp; m is the array module (cupy inside cupy.fuse, or numpy)."""
    t = x
    for _ in range(4):
        t = m.sin(t)
        t = t * 1.5
        t = t + x
        t = m.tanh(t)
        t = t * t
        t = t + 0.25
        t = m.sqrt(t)
        t = t - x
        t = m.cos(t)
        t = m.exp(t)
    return t


def child(expr, n):
    """One fresh process: the first call of expr under cupy.fuse."""
    import numpy as np

    t0 = time.perf_counter()
    import cupy as cp

    cp.zeros(1, dtype=cp.float32)
    cp.cuda.Device().synchronize()
    ctx_ms = (time.perf_counter() - t0) * 1e3
    xh = np.random.default_rng(7).uniform(-1, 1, n).astype(np.float32)
    x = cp.asarray(xh)
    cp.cuda.Device().synchronize()
    def chain40_cupy(v):
        return chain40(v, cp)

    if expr == "x5":
        fn, ref = cp.fuse(x5), x5(xh)
    else:
        fn, ref = cp.fuse(chain40_cupy), chain40(xh, np)
    t1 = time.perf_counter()
    y = fn(x)
    cp.cuda.Device().synchronize()
    first_ms = (time.perf_counter() - t1) * 1e3
    if not np.allclose(cp.asnumpy(y), ref, rtol=1e-4, atol=1e-4):
        sys.exit(f"cache_peers: cupy.fuse {expr}: wrong result")
    print(f"ctx_ms={ctx_ms:.3f} first_ms={first_ms:.3f}")


def run_child(expr, n, cache):
    """A fresh interpreter with every kernel cache (CuPy's and the driver's) in cache."""
    env = dict(os.environ, CUPY_CACHE_DIR=os.path.join(cache, "cupy"), CUDA_CACHE_PATH=os.path.join(cache, "nv"))
    out = subprocess.run([sys.executable, __file__, "--child", expr, "--n", str(n)], env=env, check=True,
                         capture_output=True, text=True).stdout
    return dict((k, float(v)) for k, v in (f.split("=") for f in out.split()))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--child")
    a = ap.parse_args()
    if a.child:
        child(a.child, a.n)
        return
    import cupy as cp

    print(f"CuPy {cp.__version__}; ms, median of {a.runs} fresh processes each; {a.n} f32 elements.")
    print()
    print("| expression | context creation (import, first array) | empty cache: first call beyond context "
          "| warm cache, new process: first call beyond context |")
    print("| --- | ---: | ---: | ---: |")
    for expr in ("x5", "chain40"):
        with tempfile.TemporaryDirectory() as scratch:
            cold = []
            for i in range(a.runs):
                cold.append(run_child(expr, a.n, os.path.join(scratch, f"cold{i}")))
            warm_dir = os.path.join(scratch, "warm")
            run_child(expr, a.n, warm_dir)
            warm = [run_child(expr, a.n, warm_dir) for _ in range(a.runs)]
        ctx = statistics.median(r["ctx_ms"] for r in cold + warm)
        fc = statistics.median(r["first_ms"] for r in cold)
        fw = statistics.median(r["first_ms"] for r in warm)
        print(f"| {expr} | {ctx:.2f} | {fc:.2f} | {fw:.3f} |")


if __name__ == "__main__":
    main()
