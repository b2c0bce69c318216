# Session 15: kfuse's emitted kernels (nvcc -DKF_ONE_PASS, launched with
# cuLaunchKernel through ctypes) and torch.compile's Triton kernels in ONE
# process, on the same stream, from the same rotated inputs, in interleaved
# rounds.  A spin kernel ahead of each row keeps the host ahead; a row where
# it did not is marked.  Usage: python3 bench/diag/s15/same_process.py CUBIN_DIR [ROUNDS] [REPS]
import ctypes, statistics, sys, os, time
import torch

cubins = sys.argv[1]
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 5
REPS = int(sys.argv[3]) if len(sys.argv) > 3 else 300
ROTATE = 256 << 20
dev = torch.device("cuda")
torch.cuda.init()
torch.zeros(1, device=dev)
cu = ctypes.CDLL("libcuda.so.1")
cu.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 6 + [ctypes.c_uint, ctypes.c_void_p,
                                                                         ctypes.c_void_p, ctypes.c_void_p]


def ck(r, what):
    if r != 0:
        raise RuntimeError("%s: CUresult %d" % (what, r))


def kernel(cubin, name):
    mod, fn = ctypes.c_void_p(), ctypes.c_void_p()
    ck(cu.cuModuleLoad(ctypes.byref(mod), os.path.join(cubins, cubin).encode()), "cuModuleLoad " + cubin)
    ck(cu.cuModuleGetFunction(ctypes.byref(fn), mod, name.encode()), "cuModuleGetFunction " + name)
    return fn


def kf_launcher(fn, grid, block, args_of):
    """args_of(k) -> the kernel's arguments for input set k, as ctypes values"""
    cache = {}
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)

    def launch(k):
        p = cache.get(k)
        if p is None:
            vals = args_of(k)
            p = cache[k] = ((ctypes.c_void_p * len(vals))(*[ctypes.addressof(v) for v in vals]), vals)
        ck(cu.cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, 0, stream, p[0], None), "cuLaunchKernel")
    return launch


def meta_of(v):
    return (ctypes.c_int64 * len(v))(*v)


ptr = ctypes.c_uint64


def host_us(launch, nsets):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for i in range(20):
        launch(i % nsets)
    t = (time.perf_counter() - t0) / 20 * 1e6
    torch.cuda.synchronize()
    return t


def timed(launch, nsets, hus):
    spin = int(REPS * max(hus, 10.0) * 3 * 1e-6 * 2.0e9)   # 3x the host time of the row, in ~2 GHz cycles
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(REPS + 1)]
    torch.cuda._sleep(spin)
    ev[0].record()
    for i in range(REPS):
        launch(i % nsets)
        ev[i + 1].record()
    ahead = not ev[0].query()
    ev[-1].synchronize()
    return statistics.median(ev[i].elapsed_time(ev[i + 1]) * 1000 for i in range(REPS)), ahead


def rotate(make, nbytes):
    nsets = max(1, min(ROTATE // nbytes, 10000))
    return [make() for _ in range(nsets)]


def check(name, got, want, exact):
    if torch.isnan(got).any():
        print("  %s: NaN left in the output (unwritten elements)" % name)
    ok = torch.equal(got, want) if exact else torch.allclose(got, want, rtol=1e-5, atol=1e-4)
    if not ok:
        print("  %s: MISMATCH, max |diff| %g" % (name, (got - want).abs().max().item()))


def run(title, sets, torch_fn, outs, kf_variants, exact):
    """sets: list of input tuples; outs: kfuse output tensor; kf_variants: [(label, launch)]"""
    tc = torch.compile(torch_fn, dynamic=False)
    want = tc(*sets[0])
    torch.cuda.synchronize()
    for label, launch in kf_variants:
        outs.fill_(float("nan"))
        launch(0)
        torch.cuda.synchronize()
        check(label, outs, want, exact)
    rows = [("torch.compile", lambda k: tc(*sets[k]))] + kf_variants
    for _, l in rows:   # warm-up
        for k in range(3):
            l(k % len(sets))
    torch.cuda.synchronize()
    hus = {label: host_us(l, len(sets)) for label, l in rows}
    res = {l: [] for l, _ in rows}
    behind = set()
    for r in range(ROUNDS):
        for label, l in (rows if r % 2 == 0 else rows[::-1]):
            us, ahead = timed(l, len(sets), hus[label])
            res[label].append(us)
            if not ahead:
                behind.add(label)
    base = statistics.median(res["torch.compile"])
    for label, _ in rows:
        v = res[label]
        print("%-14s %-24s %8.3f us  (rounds %.3f-%.3f)  %.3f of torch.compile  host %.1f us/call%s" % (
            title, label, statistics.median(v), min(v), max(v), base / statistics.median(v), hus[label],
            "  HOST-BOUND" if label in behind else ""))
    sys.stdout.flush()


def saxpy(n):
    mk = lambda: (torch.rand(n, device=dev) * 4 - 2, torch.rand(n, device=dev) * 4 - 2)
    sets = rotate(mk, 8 * n)
    out = torch.empty(n, device=dev)
    alpha = 1.5
    args = lambda k: [ptr(sets[k][0].data_ptr()), ptr(sets[k][1].data_ptr()), ptr(out.data_ptr()),
                      meta_of([n, n, 1, 1, 1, 0, 0, 0]), ctypes.c_float(alpha)]
    c64 = kernel("saxpy.cubin", "saxpy_k0_c41a0d52_c64")
    h64 = kernel("saxpy.cubin", "saxpy_k0_c41a0d52_h64")
    run("saxpy 2^%d" % (n.bit_length() - 1), sets, lambda x, y: alpha * x + y, out,
        [("kfuse c64", kf_launcher(c64, (n // 4 + 255) // 256, 256, args)),
         ("kfuse h64", kf_launcher(h64, (n // 2 + 255) // 256, 256, args))], False)


def discount(n):
    T, K = 16, 256
    M = n // T // K
    mk = lambda: (torch.rand(M, K, device=dev, dtype=torch.float64), torch.rand(T, M, K, device=dev, dtype=torch.float64))
    sets = rotate(mk, 8 * n + 8 * M * K)
    out = torch.empty(T, M, K, device=dev, dtype=torch.float64)
    args = lambda k: [ptr(sets[k][0].data_ptr()), ptr(sets[k][1].data_ptr()), ptr(out.data_ptr()),
                      meta_of([n, T, M, K, 0, K, 1, M * K, K, 1, M * K, K, 1, 0, 0, 0])]
    grid = T * ((M * K // 2 + 255) // 256)
    old = kernel("discount_old.cubin", "discount_k0_a97fcb7b_b64")
    new = kernel("discount_new.cubin", "discount_k0_a97fcb7b_b64")
    evl = kernel("disc_var.cubin", "disc_b64_evl")
    flat = kernel("disc_var.cubin", "disc_flat4")
    fargs = lambda k: [ptr(sets[k][0].data_ptr()), ptr(sets[k][1].data_ptr()), ptr(out.data_ptr()), ctypes.c_uint32(M * K)]
    run("discount 2^%d" % (n.bit_length() - 1), sets, lambda a, b: a * b, out,
        [("kfuse b64 (div64, s14)", kf_launcher(old, grid, 256, args)),
         ("kfuse b64 (div32, s15)", kf_launcher(new, grid, 256, args)),
         ("b64 div32 + evict_last", kf_launcher(evl, grid, 256, args)),
         ("flat 4x16B/128 (Triton)", kf_launcher(flat, n // 1024, 128, fargs))], True)


def rowsum(n):
    L = 1024
    M = n // L
    mk = lambda: (torch.rand(M, L, device=dev) * 4 - 2,)
    sets = rotate(mk, 4 * n)
    out = torch.empty(M, device=dev)
    scratch = torch.empty(1 << 20, device=dev, dtype=torch.uint8)
    args = lambda k: [ptr(sets[k][0].data_ptr()), ptr(out.data_ptr()), meta_of([n, M, L, L, 1, 1, 0, 0, 0]),
                      ptr(scratch.data_ptr())]
    warp = kernel("rowsum.cubin", "rowsum_k0_931aaf52_warp")
    run("rowsum 2^%d" % (n.bit_length() - 1), sets, lambda x: x.sum(dim=1), out,
        [("kfuse warp 8 rows/blk", kf_launcher(warp, (M + 7) // 8, 256, args))], False)


if __name__ == "__main__":   # bench/diag/s16 imports the harness above
    print(torch.cuda.get_device_name(), torch.__version__, "rounds", ROUNDS, "reps", REPS)
    for n in (1 << 12, 1 << 20):
        discount(n)
    for n in (1 << 20,):
        saxpy(n)
        rowsum(n)
