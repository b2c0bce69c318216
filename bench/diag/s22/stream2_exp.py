# s22: kfuse with every launch, copy and event on a created non-blocking stream (its runtime), on CUDA's
# legacy default stream and on the per-thread default stream (KF_EXP_STREAM, an uncommitted patch of
# runtime/cuda.c: bench/diag/s22/exp-stream.patch), against torch.compile (legacy default stream), one process.
import os, sys, statistics, tempfile, ctypes
sys.path.insert(0, "bench")
import inproc, peers
kir, sizes, rounds, reps = "bench/workloads.kir", [int(s) for s in sys.argv[1].split(",")], int(sys.argv[2]), 100
graphs = peers.parse_kir(kir)
names = sys.argv[3].split(",") if len(sys.argv) > 3 else list(graphs)
mod = ctypes.CDLL(os.path.abspath("build/gpu/libkfbench_inproc.so"))
mod.kfbench_main.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
lib = peers.TorchLib()
nbytes, copy_gbps = peers.measure_copy(lib)
tmp = tempfile.mkdtemp()
sides = ["created", "legacy", "ptds", "tc"]
print("| workload | N | kfuse created stream us | kfuse legacy stream us | kfuse per-thread stream us | torch.compile us "
      "| speed/tc created | speed/tc legacy | speed/tc per-thread |")
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
        t = {s: [] for s in sides}
        for r in range(rounds):
            for s in (sides if r % 2 == 0 else sides[::-1]):
                if s == "tc":
                    t[s].append(peers.time_row(lib, fn, sets, reps)[0])
                    continue
                if s == "created":
                    os.environ.pop("KF_EXP_STREAM", None)
                else:
                    os.environ["KF_EXP_STREAM"] = s
                t[s].append(inproc.kfuse_run(mod, kir, name, lg, reps, 7 + lg, os.path.join(tmp, "kf.csv")))
                os.environ.pop("KF_EXP_STREAM", None)
        del sets
        lib.release()
        m = {s: statistics.median(v) * 1e3 for s, v in t.items()}
        print(f"| {name} | 2^{lg} | " + " | ".join(f"{m[s]:.3f}" for s in sides) + " | "
              + " | ".join(f"{m['tc'] / m[s]:.3f}" for s in sides[:-1]) + " |", flush=True)
