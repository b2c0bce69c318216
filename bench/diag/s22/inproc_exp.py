# s22 experiment: kfuse with the launch's block size for small elementwise grids from KF_EXP_BLOCK (an
# uncommitted patch of abi.c), against kfuse as is and torch.compile, in one process.
import os, sys, statistics, tempfile, ctypes
sys.path.insert(0, "bench")
import inproc, peers
kir, sizes, rounds, reps = "bench/workloads.kir", [int(s) for s in sys.argv[1].split(",")], int(sys.argv[2]), 100
names = sys.argv[3].split(",") if len(sys.argv) > 3 else None
blocks = [int(b) for b in os.environ.get("BLOCKS", "128").split(",")]
graphs = peers.parse_kir(kir)
names = names or list(graphs)
mod = ctypes.CDLL(os.path.abspath("build/gpu/libkfbench_inproc.so"))
mod.kfbench_main.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
lib = peers.TorchLib()
nbytes, copy_gbps = peers.measure_copy(lib)
tmp = tempfile.mkdtemp()
print("| workload | N | kfuse 256 | " + " | ".join(f"kfuse {b}" for b in blocks) + " | torch.compile | tc/kf256 | "
      + " | ".join(f"tc/kf{b}" for b in blocks) + " |")
for lg in sizes:
    n = 1 << lg
    for name in names:
        g = graphs[name]
        fn = lib.fn("torch.compile", g)
        host = peers.make_inputs(g, n, 7 + lg)
        floor = peers.byte_floor(g, host)
        nsets = max(1, min(-(-peers.ROTATE_BYTES // floor), 10000, int(lib.free_memory() / 4 // floor)))
        sets = lib.rotate(host, nsets)
        sides = ["kf"] + [f"k{b}" for b in blocks] + ["tc"]
        t = {s: [] for s in sides}
        for r in range(rounds):
            for s in (sides if r % 2 == 0 else sides[::-1]):
                if s == "tc":
                    t[s].append(peers.time_row(lib, fn, sets, reps)[0])
                    continue
                if s == "kf":
                    os.environ.pop("KF_EXP_BLOCK", None)
                else:
                    os.environ["KF_EXP_BLOCK"] = s[1:]
                t[s].append(inproc.kfuse_run(mod, kir, name, lg, reps, 7 + lg, os.path.join(tmp, "kf.csv")))
        os.environ.pop("KF_EXP_BLOCK", None)
        del sets
        lib.release()
        med = {s: statistics.median(v) * 1e3 for s, v in t.items()}
        print(f"| {name} | 2^{lg} | " + " | ".join(f"{med[s]:.3f}" for s in sides) + " | "
              + " | ".join(f"{med['tc'] / med[s]:.3f}" for s in sides[:-1]) + " |", flush=True)
