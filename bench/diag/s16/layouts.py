# Session 16: discount (f64 [m,k] x [t,m,k], t = 16, k = 256) in one
# process with torch.compile, s15's harness (bench/diag/s15/same_process.py):
# kfuse's b64 as emitted now, as emitted at 4ef94c9 (one vector a thread),
# the four-vector b64 that lost in session 16's first A/B, and flat layouts (kernels/layouts.cu) that separate block size,
# vectors a thread and index width, and at 2^20 edits of both b64s
# (variants.py).
# Usage: python3 bench/diag/s16/layouts.py CUBIN_DIR [ROUNDS] [REPS]
import ctypes, os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "s15"))
import same_process as sp   # takes CUBIN_DIR, ROUNDS, REPS from sys.argv
import torch

NOW_VECS = int(os.environ.get("B64_VECS", "2"))   # kfuse's KF_CG_B64_VECS
FLAT = [("f4_128", 128, 4), ("f4_128_64", 128, 4), ("f8_128", 128, 8), ("f2_128", 128, 2),
        ("f4_256", 256, 4), ("f2_256", 256, 2), ("f1_256", 256, 1)]


def discount(n):
    T, K = 16, 256
    M = n // T // K
    mk = lambda: (torch.rand(M, K, device=sp.dev, dtype=torch.float64),
                  torch.rand(T, M, K, device=sp.dev, dtype=torch.float64))
    sets = sp.rotate(mk, 8 * n + 8 * M * K)
    out = torch.empty(T, M, K, device=sp.dev, dtype=torch.float64)
    ptrs = lambda k: [sp.ptr(sets[k][0].data_ptr()), sp.ptr(sets[k][1].data_ptr()), sp.ptr(out.data_ptr())]
    args = lambda k: ptrs(k) + [sp.meta_of([n, T, M, K, 0, K, 1, M * K, K, 1, M * K, K, 1, 0, 0, 0])]
    inner, nvec = M * K // 2, n // 2
    fargs = lambda k: ptrs(k) + [ctypes.c_uint64(inner), ctypes.c_uint64(nvec)]
    b64 = lambda cubin, vecs: sp.kf_launcher(sp.kernel(cubin, "discount_k0_a97fcb7b_b64"),
                                             T * ((inner + 256 * vecs - 1) // (256 * vecs)), 256, args)
    rows = [("kfuse b64 (emitted now)", b64("discount.cubin", NOW_VECS)),
            ("b64 1 vector (4ef94c9)", b64("discount_b64x1.cubin", 1)),
            ("b64 4 vectors, 64-bit", b64("discount_b64x4.cubin", 4))]
    if n == 1 << 20:   # variants.py's edits hold at this size only
        for name in ("x1_u32", "x1_nodiv", "x1_u32_nodiv", "x4_u32", "x4_nodiv", "x4_u32_nodiv"):
            rows.append(("b64 %s" % name, sp.kf_launcher(sp.kernel("disc_b64var.cubin", name),
                                                         T * ((inner + 256 * int(name[1]) - 1) // (256 * int(name[1]))),
                                                         256, args)))
    for name, tb, u in FLAT:
        rows.append(("flat %s" % name, sp.kf_launcher(sp.kernel("layouts.cubin", name), (nvec + tb * u - 1) // (tb * u),
                                                      tb, fargs)))
    sp.run("discount 2^%d" % (n.bit_length() - 1), sets, lambda a, b: a * b, out, rows, True)


print(torch.cuda.get_device_name(), torch.__version__, "rounds", sp.ROUNDS, "reps", sp.REPS)
for n in (1 << 12, 1 << 20, 1 << 22):
    discount(n)
