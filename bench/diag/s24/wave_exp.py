# s24 experiment: kfuse with a branchless body's contiguous calls of two or more arrays on c64 (KF_EXP_WAVE
# huge) or on h64 (KF_EXP_WAVE=0: wherever c64 fills the SMs), against torch.compile, in one process; needs
# bench/diag/s24/exp-wave.patch (h64's threshold from KF_EXP_WAVE, in h64 blocks per compute unit).
# Usage: python3 bench/diag/s24/wave_exp.py SIZES ROUNDS [GRAPHS] [REPS]
import os, sys, statistics, tempfile, ctypes
sys.path.insert(0, "bench")
import inproc, peers
kir, sizes, rounds = "bench/workloads.kir", [int(s) for s in sys.argv[1].split(",")], int(sys.argv[2])
names = sys.argv[3].split(",") if len(sys.argv) > 3 else ["poly", "saxpy"]
reps = int(sys.argv[4]) if len(sys.argv) > 4 else 50
graphs = peers.parse_kir(kir)
mod = ctypes.CDLL(os.path.abspath("build/gpu/libkfbench_inproc.so"))
mod.kfbench_main.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
lib = peers.TorchLib()
nbytes, copy_gbps = peers.measure_copy(lib)
tmp = tempfile.mkdtemp()
env = {"c64": "1000000000", "h64": "0"}
print(f"copy {copy_gbps:.1f} GB/s; {rounds} rounds of {reps}; medians in us (range)")
print("| workload | N | kfuse c64 | kfuse h64 | torch.compile | h64 / c64 speed | tc / c64 | tc / h64 | rounds h64 faster |")
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
        sides = ["c64", "h64", "tc"]
        t = {s: [] for s in sides}
        for r in range(rounds):
            for s in (sides if r % 2 == 0 else sides[::-1]):
                if s == "tc":
                    t[s].append(peers.time_row(lib, fn, sets, reps)[0])
                else:
                    os.environ["KF_EXP_WAVE"] = env[s]
                    t[s].append(inproc.kfuse_run(mod, kir, name, lg, reps, 7 + lg, os.path.join(tmp, "kf.csv")))
        os.environ.pop("KF_EXP_WAVE", None)
        del sets
        lib.release()
        m = {s: statistics.median(v) * 1e3 for s, v in t.items()}
        st = lambda s: f"{m[s]:.3f} ({min(t[s]) * 1e3:.3f}-{max(t[s]) * 1e3:.3f})"
        wins = sum(b < c for b, c in zip(t["h64"], t["c64"]))
        print(f"| {name} | 2^{lg} | {st('c64')} | {st('h64')} | {st('tc')} | {m['c64'] / m['h64']:.3f} | "
              f"{m['tc'] / m['c64']:.3f} | {m['tc'] / m['h64']:.3f} | {wins} of {rounds} |", flush=True)
