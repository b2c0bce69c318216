# s27 experiment (s25's variant_exp.py with sides of several variables): kfuse with each side's
# environment (K=V/K=V..., each K set as KF_EXP_K; an empty side "-" sets nothing) against torch.compile,
# in one process.  Needs bench/diag/s27/exp-s27.patch (KF_EXP_BB, KF_EXP_EL, KF_EXP_BW) or exp-flat.patch (KF_EXP_FLAT).
# Usage: python3 bench/diag/s27/combo_exp.py SIZES ROUNDS GRAPH:SIDE+SIDE...,... [REPS]
import os, sys, statistics, tempfile, ctypes, time
sys.path.insert(0, "bench")
import inproc, peers
kir, sizes, rounds = os.environ.get("KIR", "bench/workloads.kir"), [int(s) for s in sys.argv[1].split(",")], int(sys.argv[2])
spec = [g.split(":") for g in sys.argv[3].split(",")]
reps = int(sys.argv[4]) if len(sys.argv) > 4 else 50

def setenv(side):
    for k in [k for k in os.environ if k.startswith("KF_EXP_")]:
        os.environ.pop(k)
    for kv in side.split("/"):
        if "=" in kv:
            k, v = kv.split("=")
            os.environ["KF_EXP_" + k] = v

graphs = peers.parse_kir(kir)
mod = ctypes.CDLL(os.path.abspath("build/gpu/libkfbench_inproc.so"))
mod.kfbench_main.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
lib = peers.TorchLib()
nbytes, copy_gbps = peers.measure_copy(lib)
tmp = tempfile.mkdtemp()
t0 = time.time()
print(f"copy {copy_gbps:.1f} GB/s; {rounds} rounds of {reps}; medians in us (range); speed = tc time / variant time")
print("| workload | N | variant | kfuse us | speed / torch.compile | rounds faster than tc |")
print("|---|---|---|---|---|---|")
for lg in sizes:
    n = 1 << lg
    for sp in spec:
        name, kf = sp[0], sp[1].split("+")
        g = graphs[name]
        fn = lib.fn("torch.compile", g)
        host = peers.make_inputs(g, n, 7 + lg)
        floor = peers.byte_floor(g, host)
        nsets = max(1, min(-(-peers.ROTATE_BYTES // floor), 10000, int(lib.free_memory() / 4 // floor)))
        sets = lib.rotate(host, nsets)
        sides = kf + ["tc"]
        t = {s: [] for s in sides}
        for r in range(rounds):
            for s in (sides if r % 2 == 0 else sides[::-1]):
                if s == "tc":
                    t[s].append(peers.time_row(lib, fn, sets, reps)[0])
                else:
                    setenv(s)
                    t[s].append(inproc.kfuse_run(mod, kir, name, lg, reps, 7 + lg, os.path.join(tmp, "kf.csv")))
        setenv("-")
        del sets
        lib.release()
        m = {s: statistics.median(v) * 1e3 for s, v in t.items()}
        st = lambda s: f"{m[s]:.3f} ({min(t[s]) * 1e3:.3f}-{max(t[s]) * 1e3:.3f})"
        print(f"| {name} | 2^{lg} | torch.compile | {st('tc')} | | |")
        for s in kf:
            wins = sum(a < b for a, b in zip(t[s], t["tc"]))
            print(f"| {name} | 2^{lg} | {s} | {st(s)} | {m['tc'] / m[s]:.3f} | {wins} of {rounds} |", flush=True)
        print(f"[{time.time() - t0:.0f} s]", file=sys.stderr, flush=True)
