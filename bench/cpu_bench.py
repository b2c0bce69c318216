#!/usr/bin/env python3
"""The expressions of bench/cpu_bench.c in NumPy (plain expressions, with
their temporaries) and numexpr, as GB/s of array traffic (each input read
once, each output written once: the same count as cpu_bench), beside a
streaming copy (np.copyto) measured in the same run.
Usage: cpu_bench.py [--threads T] [--reps R] [--log2 N]...
NumPy and numexpr come from PyPI for the benchmark only:
  python3 -m venv /tmp/venv && /tmp/venv/bin/pip install numpy numexpr"""
import argparse
import os
import statistics
import time

import numpy as np
import numexpr as ne


def median(fn, reps):
    """Median wall time of reps calls, after one warm-up call."""
    fn()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--reps", type=int, default=0)
    ap.add_argument("--log2", type=int, action="append")
    a = ap.parse_args()
    ne.set_num_threads(a.threads)
    print(f"# numpy {np.__version__}, numexpr {ne.__version__} ({a.threads} threads; NumPy itself is single-threaded)")
    print(f"{'expr':8} {'impl':8} {'elements':>10} {'ms':>9} {'GB/s':>8} {'copy':>8} {'of copy':>8}")
    for lg in a.log2 or [20, 26]:
        n = 1 << lg
        reps = a.reps or (15 if lg >= 24 else 200)
        i = np.arange(n, dtype=np.uint64)
        x = (((i * 2654435761) % 2000003) / 2000003.0 * 8 - 4).astype(np.float32)
        y = (((i * 40503) % 1000003) / 1000003.0 * 8 - 4).astype(np.float32)
        o = np.empty_like(x)
        copy = 2 * 4 * n / median(lambda: np.copyto(o, x), reps) / 1e9
        cases = {
            "x5": (1, lambda: x + x + x + x + x, "x + x + x + x + x"),
            "gelu": (1, lambda: 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * (x * x * x)))),
                     "0.5 * x * (1 + tanh(0.7978845608 * (x + 0.044715 * (x * x * x))))"),
            "boxplus": (2, lambda: np.maximum(x, y) + np.log1p(np.exp(np.minimum(x, y) - np.maximum(x, y))),
                        "where(x > y, x, y) + log1p(exp(where(x < y, x, y) - where(x > y, x, y)))"),
            "dot": (2, lambda: np.sum(x * y), "sum(x * y)"),
        }
        for name, (nin, fn, expr) in cases.items():
            bytes_ = 4 * n * (nin + (0 if name == "dot" else 1))
            for impl, f in (("numpy", fn), ("numexpr", lambda e=expr: ne.evaluate(e, local_dict={"x": x, "y": y}))):
                t = median(f, reps)
                gbs = bytes_ / t / 1e9
                print(f"{name:8} {impl:8} {n:>10} {t * 1e3:9.3f} {gbs:8.2f} {copy:8.2f} {gbs / copy:8.2f}")


if __name__ == "__main__":
    main()
