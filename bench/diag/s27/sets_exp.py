# s27 experiment: does torch.compile's figure depend on how many input sets rotate?  peers.py and
# inproc.py size the rotation by the byte floor (inputs + outputs), kfbench by the inputs alone, so
# torch.compile ran with about half kfuse's input sets.  Each row: kfuse (the rule, kfbench's sets),
# torch.compile with the floor's sets (as inproc.py) and with kfbench's count (inputs alone), in
# alternating rounds, one process.
# Usage: python3 bench/diag/s27/sets_exp.py ROUNDS GRAPH:SIZE+SIZE,... [REPS]
import os, sys, statistics, tempfile, ctypes, time
import numpy as np
sys.path.insert(0, "bench")
import inproc, peers
kir, rounds = "bench/workloads.kir", int(sys.argv[1])
spec = [g.split(":") for g in sys.argv[2].split(",")]
reps = int(sys.argv[3]) if len(sys.argv) > 3 else 50
graphs = peers.parse_kir(kir)
mod = ctypes.CDLL(os.path.abspath("build/gpu/libkfbench_inproc.so"))
mod.kfbench_main.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
lib = peers.TorchLib()
nbytes, copy_gbps = peers.measure_copy(lib)
tmp = tempfile.mkdtemp()
t0 = time.time()
print(f"copy {copy_gbps:.1f} GB/s; {rounds} rounds of {reps}; medians in us (range)")
print("| workload | N | sets floor / inputs | kfuse | tc, floor's sets | tc, inputs' sets | kfuse speed: floor's / inputs' |")
print("|---|---|---|---|---|---|---|")
for name, sizes in spec:
    g = graphs[name]
    fn = lib.fn("torch.compile", g)
    for lg in [int(s) for s in sizes.split("+")]:
        n = 1 << lg
        host = peers.make_inputs(g, n, 7 + lg)
        floor = peers.byte_floor(g, host)
        inb = sum(x.nbytes for x in host if isinstance(x, np.ndarray))
        cap = int(lib.free_memory() / 4 // floor)
        nf = max(1, min(-(-peers.ROTATE_BYTES // floor), 10000, cap))
        ni = max(1, min(-(-peers.ROTATE_BYTES // inb), 10000, cap))
        sets = lib.rotate(host, max(nf, ni))
        t = {"kf": [], "f": [], "i": []}
        for r in range(rounds):
            for s in (list(t) if r % 2 == 0 else list(t)[::-1]):
                if s == "kf":
                    t[s].append(inproc.kfuse_run(mod, kir, name, lg, reps, 7 + lg, os.path.join(tmp, "kf.csv")))
                else:
                    t[s].append(peers.time_row(lib, fn, sets[:nf if s == "f" else ni], reps)[0])
        del sets
        lib.release()
        m = {s: statistics.median(v) * 1e3 for s, v in t.items()}
        st = lambda s: f"{m[s]:.3f} ({min(t[s]) * 1e3:.3f}-{max(t[s]) * 1e3:.3f})"
        print(f"| {name} | 2^{lg} | {nf} / {ni} | {st('kf')} | {st('f')} | {st('i')} | "
              f"{m['f'] / m['kf']:.3f} / {m['i'] / m['kf']:.3f} |", flush=True)
        print(f"[{time.time() - t0:.0f} s]", file=sys.stderr, flush=True)
