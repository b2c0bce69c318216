# s22: kfuse before (OLD module) and after (build/gpu module) against torch.compile, one process.
import os, sys, statistics, tempfile, ctypes
sys.path.insert(0, "bench")
import inproc, peers
kir, sizes, rounds, reps = "bench/workloads.kir", [int(s) for s in sys.argv[1].split(",")], int(sys.argv[2]), 100
names = sys.argv[3].split(",")
mods = {}
for side, path in (("new", "build/gpu/libkfbench_inproc.so"), ("old", sys.argv[4])):
    mods[side] = ctypes.CDLL(os.path.abspath(path))
    mods[side].kfbench_main.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
lib = peers.TorchLib()
nbytes, copy_gbps = peers.measure_copy(lib)
tmp = tempfile.mkdtemp()
print("| workload | N | kfuse before us | kfuse after us | torch.compile us | after/before | torch.compile/after | rounds after < before |")
print("|---|---|---|---|---|---|---|---|")
for lg in sizes:
    n = 1 << lg
    for name in names:
        g = graphs = peers.parse_kir(kir)[name]
        fn = lib.fn("torch.compile", g)
        host = peers.make_inputs(g, n, 7 + lg)
        floor = peers.byte_floor(g, host)
        nsets = max(1, min(-(-peers.ROTATE_BYTES // floor), 10000, int(lib.free_memory() / 4 // floor)))
        sets = lib.rotate(host, nsets)
        sides = ["old", "new", "tc"]
        t = {s: [] for s in sides}
        for r in range(rounds):
            for s in (sides if r % 2 == 0 else sides[::-1]):
                if s == "tc":
                    t[s].append(peers.time_row(lib, fn, sets, reps)[0])
                else:
                    t[s].append(inproc.kfuse_run(mods[s], kir, name, lg, reps, 7 + lg, os.path.join(tmp, s + ".csv")))
        del sets
        lib.release()
        st = lambda xs: f"{statistics.median(xs) * 1e3:.3f} ({min(xs) * 1e3:.3f}-{max(xs) * 1e3:.3f})"
        m = {s: statistics.median(v) for s, v in t.items()}
        wins = sum(a < b for a, b in zip(t["new"], t["old"]))
        print(f"| {name} | 2^{lg} | {st(t['old'])} | {st(t['new'])} | {st(t['tc'])} | {m['new'] / m['old']:.3f} "
              f"| {m['tc'] / m['new']:.3f} | {wins} of {rounds} |", flush=True)
