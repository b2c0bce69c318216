# s26: kfuse alone on one graph at sizes N that need not be powers of two (the graph's shapes written
# as literals by inproc.literal_kir), with an experiment variable set to each side in turn, rounds
# alternated; medians in us.  Needs build/gpu/libkfbench_inproc.so (KFUSE_GPU_TARGET=kfbench_inproc).
# Usage: python3 bench/diag/s26/sides_exp.py KIR GRAPH N,N,... ROUNDS VAR SIDE+SIDE... [REPS]
import os, sys, statistics, tempfile, ctypes
sys.path.insert(0, "bench")
import inproc, peers
kir, name, sizes, rounds, var, sides = sys.argv[1], sys.argv[2], [int(s) for s in sys.argv[3].split(",")], \
    int(sys.argv[4]), sys.argv[5], sys.argv[6].split("+")
reps = int(sys.argv[7]) if len(sys.argv) > 7 else 50
g = peers.parse_kir(kir)[name]
mod = ctypes.CDLL(os.path.abspath("build/gpu/libkfbench_inproc.so"))
mod.kfbench_main.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
tmp = tempfile.mkdtemp()
print(f"{name}: {rounds} rounds of {reps}; medians in us (range); {var} = " + " / ".join(sides))
print("| N | N / 2^20 | " + " | ".join(sides) + " | " + " | ".join(f"{s} / {sides[0]}" for s in sides[1:]) + " |")
print("|---" * (2 + 2 * len(sides) - 1) + "|")
for n in sizes:
    lit = inproc.literal_kir(kir, g, n, os.path.join(tmp, "lit.kir"))
    t = {s: [] for s in sides}
    for r in range(rounds):
        for s in (sides if r % 2 == 0 else sides[::-1]):
            os.environ[var] = s
            t[s].append(inproc.kfuse_run(mod, lit, name, 20, reps, 7, os.path.join(tmp, "kf.csv")) * 1e3)
    os.environ.pop(var, None)
    m = {s: statistics.median(v) for s, v in t.items()}
    cells = [f"{m[s]:.3f} ({min(t[s]):.3f}-{max(t[s]):.3f})" for s in sides]
    print(f"| {n} | {n / 2**20:.3f} | " + " | ".join(cells) + " | " +
          " | ".join(f"{m[s] / m[sides[0]]:.3f}" for s in sides[1:]) + " |", flush=True)
