# s22: torch.compile's kernels on the legacy default stream (as peers.py times them) and on a created
# (non-blocking) stream, as kfuse's runtime uses, beside kfuse, one process.
import os, sys, statistics, tempfile, ctypes
sys.path.insert(0, "bench")
import inproc, peers
kir, sizes, rounds, reps = "bench/workloads.kir", [int(s) for s in sys.argv[1].split(",")], int(sys.argv[2]), 100
graphs = peers.parse_kir(kir)
names = sys.argv[3].split(",") if len(sys.argv) > 3 else list(graphs)
mod = ctypes.CDLL(os.path.abspath("build/gpu/libkfbench_inproc.so"))
mod.kfbench_main.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
lib = peers.TorchLib()
import torch
nbytes, copy_gbps = peers.measure_copy(lib)
side_stream = torch.cuda.Stream()
tmp = tempfile.mkdtemp()
print("| workload | N | kfuse us | torch.compile us, legacy default stream | torch.compile us, created stream | kfuse speed / tc default | kfuse speed / tc created |")
print("|---|---|---|---|---|---|---|")
for lg in sizes:
    n = 1 << lg
    for name in names:
        g = graphs[name]
        fn = lib.fn("torch.compile", g)
        host = peers.make_inputs(g, n, 7 + lg)
        floor = peers.byte_floor(g, host)
        nsets = max(1, min(-(-peers.ROTATE_BYTES // floor), 10000, int(lib.free_memory() / 4 // floor)))
        sets = lib.rotate(host, nsets)
        torch.cuda.synchronize()
        sides = ["kf", "tc", "ts"]
        t = {s: [] for s in sides}
        for r in range(rounds):
            for s in (sides if r % 2 == 0 else sides[::-1]):
                if s == "kf":
                    t[s].append(inproc.kfuse_run(mod, kir, name, lg, reps, 7 + lg, os.path.join(tmp, "kf.csv")))
                elif s == "tc":
                    t[s].append(peers.time_row(lib, fn, sets, reps)[0])
                else:
                    side_stream.wait_stream(torch.cuda.current_stream())
                    with torch.cuda.stream(side_stream):
                        t[s].append(peers.time_row(lib, fn, sets, reps)[0])
                    torch.cuda.synchronize()
        del sets
        lib.release()
        m = {s: statistics.median(v) * 1e3 for s, v in t.items()}
        print(f"| {name} | 2^{lg} | {m['kf']:.3f} | {m['tc']:.3f} | {m['ts']:.3f} | {m['tc'] / m['kf']:.3f} "
              f"| {m['ts'] / m['kf']:.3f} |", flush=True)
