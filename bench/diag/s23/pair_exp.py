# s23 experiment: kfuse with a branchy body's contiguous calls on c64 (KF_EXP_PAIR huge) or on b64 with no
# outer dims (KF_EXP_PAIR=1: wherever c64 would run), against torch.compile, in one process; needs
# bench/diag/s23/exp-pair.patch (the threshold from KF_EXP_PAIR, in b64 blocks per compute unit).
# Usage: python3 bench/diag/s23/pair_exp.py SIZES ROUNDS [GRAPHS] [REPS]
import os, sys, statistics, tempfile, ctypes
sys.path.insert(0, "bench")
import inproc, peers
kir, sizes, rounds = "bench/workloads.kir", [int(s) for s in sys.argv[1].split(",")], int(sys.argv[2])
names = sys.argv[3].split(",") if len(sys.argv) > 3 else ["boxplus", "chain40"]
reps = int(sys.argv[4]) if len(sys.argv) > 4 else 50
graphs = peers.parse_kir(kir)
mod = ctypes.CDLL(os.path.abspath("build/gpu/libkfbench_inproc.so"))
mod.kfbench_main.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
lib = peers.TorchLib()
nbytes, copy_gbps = peers.measure_copy(lib)
tmp = tempfile.mkdtemp()
env = {"c64": "1000000000", "b64": "1"}
print(f"copy {copy_gbps:.1f} GB/s; {rounds} rounds of {reps}; medians in us (range)")
print("| workload | N | kfuse c64 | kfuse b64 | torch.compile | b64 / c64 speed | tc / c64 | tc / b64 | rounds b64 faster |")
print("|---|---|---|---|---|---|---|---|---|")
for lg in sizes:
    n = 1 << lg
    for name in names:
        g = graphs[name]
        fn = lib.fn("torch.compile", g)
        host = peers.make_inputs(g, n, 7 + lg)
        floor = peers.byte_floor(g, host)
        nsets = max(1, min(-(-peers.ROTATE_BYTES // floor), 10000, int(lib.free_memory() / 4 // floor)))
        sets = lib.rotate(host, nsets)
        sides = ["c64", "b64", "tc"]
        t = {s: [] for s in sides}
        for r in range(rounds):
            for s in (sides if r % 2 == 0 else sides[::-1]):
                if s == "tc":
                    t[s].append(peers.time_row(lib, fn, sets, reps)[0])
                else:
                    os.environ["KF_EXP_PAIR"] = env[s]
                    t[s].append(inproc.kfuse_run(mod, kir, name, lg, reps, 7 + lg, os.path.join(tmp, "kf.csv")))
        os.environ.pop("KF_EXP_PAIR", None)
        del sets
        lib.release()
        m = {s: statistics.median(v) * 1e3 for s, v in t.items()}
        st = lambda s: f"{m[s]:.3f} ({min(t[s]) * 1e3:.3f}-{max(t[s]) * 1e3:.3f})"
        wins = sum(b < c for b, c in zip(t["b64"], t["c64"]))
        print(f"| {name} | 2^{lg} | {st('c64')} | {st('b64')} | {st('tc')} | {m['c64'] / m['b64']:.3f} | "
              f"{m['tc'] / m['c64']:.3f} | {m['tc'] / m['b64']:.3f} | {wins} of {rounds} |", flush=True)
