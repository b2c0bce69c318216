# Session 17: where kfuse's kernels stand against torch.compile in ONE
# process (s15's harness: bench/diag/s15/same_process.py) at 2^12 and for
# rowsum at 2^20, beside hand-written kernels (kernels/rows.cu) that
# separate what each costs.  Kernels as kernels.sh builds them.
# Usage: python3 bench/diag/s17/probe.py CUBIN_DIR [ROUNDS] [REPS]
import ctypes, os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "s15"))
import same_process as sp   # takes CUBIN_DIR, ROUNDS, REPS from sys.argv
import torch

U32, I64 = ctypes.c_uint32, ctypes.c_int64


def lg(n):
    return "2^%d" % (n.bit_length() - 1)


def rowsum(n, hand):
    L = 1024
    M = n // L
    sets = sp.rotate(lambda: (torch.rand(M, L, device=sp.dev) * 4 - 2,), 4 * n)
    out = torch.empty(M, device=sp.dev)
    scratch = torch.zeros(1 << 20, device=sp.dev, dtype=torch.uint8)
    x = lambda k: sp.ptr(sets[k][0].data_ptr())
    args = lambda k: [x(k), sp.ptr(out.data_ptr()), sp.meta_of([n, M, L, L, 1, 1, 0, 0, 0]), sp.ptr(scratch.data_ptr())]
    rows = [("kfuse warp", sp.kf_launcher(sp.kernel("rowsum_old.cubin", "rowsum_k0_931aaf52_warp"), (M + 7) // 8, 256,
                                          args)),
            ("kfuse warp, ldcs", sp.kf_launcher(sp.kernel("rowsum_cs.cubin", "rowsum_k0_931aaf52_warp"),
                                                (M + 7) // 8, 256, args)),
            ("kfuse warp 1 row/blk", sp.kf_launcher(sp.kernel("rowsum_rb.cubin", "rowsum_k0_931aaf52_warp"), M, 32, args))]
    hargs = lambda k: [x(k), sp.ptr(out.data_ptr()), U32(M), U32(L), I64(L)]
    for name in hand:
        r = int(name[1])
        rows.append(("hand " + name, sp.kf_launcher(sp.kernel("rows.cubin", name), (M + r - 1) // r, 32 * r, hargs)))
    sp.run("rowsum " + lg(n), sets, lambda t: t.sum(dim=1), out, rows, False)


def x5(n):
    sets = sp.rotate(lambda: (torch.rand(n, device=sp.dev) * 4 - 2,), 4 * n)
    out = torch.empty(n, device=sp.dev)
    args = lambda k: [sp.ptr(sets[k][0].data_ptr()), sp.ptr(out.data_ptr()), sp.meta_of([n, n, 1, 1, 0, 0])]
    margs = lambda k: [sp.ptr(sets[k][0].data_ptr()), sp.ptr(out.data_ptr()), U32(n)]
    rows = [("kfuse s64", sp.kf_launcher(sp.kernel("x5.cubin", "x5_k0_d5aae514_s64"), (n + 255) // 256, 256, args)),
            ("kfuse c64", sp.kf_launcher(sp.kernel("x5.cubin", "x5_k0_d5aae514_c64"), (n // 4 + 255) // 256, 256, args)),
            ("hand x5_min", sp.kf_launcher(sp.kernel("rows.cubin", "x5_min"), (n + 255) // 256, 256, margs))]
    sp.run("x5 " + lg(n), sets, lambda t: t + t + t + t + t, out, rows, True)


def discount(n):
    T, K = 16, 256
    M = n // T // K
    sets = sp.rotate(lambda: (torch.rand(M, K, device=sp.dev, dtype=torch.float64),
                              torch.rand(T, M, K, device=sp.dev, dtype=torch.float64)), 8 * n + 8 * M * K)
    out = torch.empty(T, M, K, device=sp.dev, dtype=torch.float64)
    ptrs = lambda k: [sp.ptr(sets[k][0].data_ptr()), sp.ptr(sets[k][1].data_ptr()), sp.ptr(out.data_ptr())]
    args = lambda k: ptrs(k) + [sp.meta_of([n, T, M, K, 0, K, 1, M * K, K, 1, M * K, K, 1, 0, 0, 0])]
    inner = M * K // 2
    fargs = lambda k: ptrs(k) + [ctypes.c_uint64(inner), ctypes.c_uint64(n // 2)]
    k = lambda e: sp.kernel("discount.cubin", "discount_k0_a97fcb7b_" + e)
    rows = [("kfuse b64", sp.kf_launcher(k("b64"), T * ((inner + 511) // 512), 256, args)),
            ("kfuse s32", sp.kf_launcher(k("s32"), (n + 255) // 256, 256, args)),
            ("kfuse b64, one chunk: no divide", sp.kf_launcher(sp.kernel("discount_1c.cubin", "discount_k0_a97fcb7b_b64"),
                                                                T * ((inner + 511) // 512), 256, args)),
            ("flat f1_256 (s16)", sp.kf_launcher(sp.kernel("layouts.cubin", "f1_256"), (n // 2 + 255) // 256, 256, fargs))]
    sp.run("discount " + lg(n), sets, lambda a, b: a * b, out, rows, True)


def dot(n):
    sets = sp.rotate(lambda: (torch.rand(n, device=sp.dev) * 4 - 2, torch.rand(n, device=sp.dev) * 4 - 2), 8 * n)
    out = torch.empty((), device=sp.dev)
    scratch = torch.zeros(1 << 20, device=sp.dev, dtype=torch.uint8)
    args = lambda k: [sp.ptr(sets[k][0].data_ptr()), sp.ptr(sets[k][1].data_ptr()), sp.ptr(out.data_ptr()),
                      sp.meta_of([n, n, 1, 1, 0, 0, 0, 0]), sp.ptr(scratch.data_ptr())]
    chunks = max(1, n // 4096)
    rows = [("kfuse tile", sp.kf_launcher(sp.kernel("dot.cubin", "dot_k0_5d9900fc_tile"), chunks, 256, args))]
    sp.run("dot " + lg(n), sets, lambda a, b: (a * b).sum(), out, rows, False)


def rowsum_blocks(n):
    """kfuse's warp, rows a block from the block size (rowsum_rb.cu), at blocks of 32-256 threads"""
    L = 1024
    M = n // L
    sets = sp.rotate(lambda: (torch.rand(M, L, device=sp.dev) * 4 - 2,), 4 * n)
    out = torch.empty(M, device=sp.dev)
    args = lambda k: [sp.ptr(sets[k][0].data_ptr()), sp.ptr(out.data_ptr()), sp.meta_of([n, M, L, L, 1, 1, 0, 0, 0]),
                      sp.ptr(0)]
    fn = sp.kernel("rowsum_rb.cubin", "rowsum_k0_931aaf52_warp")
    rows = [("warp %d rows/blk" % r, sp.kf_launcher(fn, (M + r - 1) // r, 32 * r, args)) for r in (8, 4, 2, 1)]
    sp.run("rowsum " + lg(n), sets, lambda t: t.sum(dim=1), out, rows, False)


def rowblock(n):
    """a row a block (Triton's layout, kernels/rows.cu b<T>) against kfuse's warp and tile and r1_static"""
    L = 1024
    M = n // L
    sets = sp.rotate(lambda: (torch.rand(M, L, device=sp.dev) * 4 - 2,), 4 * n)
    out = torch.empty(M, device=sp.dev)
    x = lambda k: sp.ptr(sets[k][0].data_ptr())
    args = lambda k: [x(k), sp.ptr(out.data_ptr()), sp.meta_of([n, M, L, L, 1, 1, 0, 0, 0]), sp.ptr(0)]
    hargs = lambda k: [x(k), sp.ptr(out.data_ptr()), U32(M), U32(L), I64(L)]
    k = lambda e: sp.kernel("rowsum.cubin", "rowsum_k0_931aaf52_" + e)
    rows = [("kfuse warp", sp.kf_launcher(sp.kernel("rowsum_old.cubin", "rowsum_k0_931aaf52_warp"), (M + 7) // 8, 256,
                                          args)),
            ("kfuse tile", sp.kf_launcher(k("tile"), M, 256, args)),
            ("hand r1_static", sp.kf_launcher(sp.kernel("rows.cubin", "r1_static"), M, 32, hargs))]
    for t in (256, 128, 64):
        rows.append(("hand b%d" % t, sp.kf_launcher(sp.kernel("rows.cubin", "b%d" % t), M, t, hargs)))
    sp.run("rowsum " + lg(n), sets, lambda t: t.sum(dim=1), out, rows, False)


def rowsum_new(n):
    """warp as emitted now (rowsum.cubin: lane pointers, rows a block from the block size) at 1 and 8 rows a
    block, against warp as emitted at 24f935e (rowsum_old.cubin, 8 rows a block) and hand r1_dyn"""
    L = 1024
    M = n // L
    sets = sp.rotate(lambda: (torch.rand(M, L, device=sp.dev) * 4 - 2,), 4 * n)
    out = torch.empty(M, device=sp.dev)
    x = lambda k: sp.ptr(sets[k][0].data_ptr())
    args = lambda k: [x(k), sp.ptr(out.data_ptr()), sp.meta_of([n, M, L, L, 1, 1, 0, 0, 0]), sp.ptr(0)]
    hargs = lambda k: [x(k), sp.ptr(out.data_ptr()), U32(M), U32(L), I64(L)]
    new = sp.kernel("rowsum.cubin", "rowsum_k0_931aaf52_warp")
    rows = [("warp 24f935e", sp.kf_launcher(sp.kernel("rowsum_old.cubin", "rowsum_k0_931aaf52_warp"), (M + 7) // 8, 256,
                                            args)),
            ("warp now, 1 row/blk", sp.kf_launcher(new, M, 32, args)),
            ("warp now, 8 rows/blk", sp.kf_launcher(new, (M + 7) // 8, 256, args)),
            ("hand r1_dyn", sp.kf_launcher(sp.kernel("rows.cubin", "r1_dyn"), M, 32, hargs))]
    sp.run("rowsum " + lg(n), sets, lambda t: t.sum(dim=1), out, rows, False)


def x5_pad(n):
    """x5 one element a thread, its n in a parameter block of 8 to 2048 bytes (kernels/rows.cu x5_pad<P>)"""
    sets = sp.rotate(lambda: (torch.rand(n, device=sp.dev) * 4 - 2,), 4 * n)
    out = torch.empty(n, device=sp.dev)
    rows = [("kfuse s64 (48 B meta)", sp.kf_launcher(sp.kernel("x5.cubin", "x5_k0_d5aae514_s64"), (n + 255) // 256, 256,
                                                     lambda k: [sp.ptr(sets[k][0].data_ptr()), sp.ptr(out.data_ptr()),
                                                                sp.meta_of([n, n, 1, 1, 0, 0])]))]
    for p in (8, 48, 128, 512, 2048):
        a = (lambda p: lambda k: [sp.ptr(sets[k][0].data_ptr()), sp.ptr(out.data_ptr()),
                                  sp.meta_of([n] + [0] * (p // 8 - 1))])(p)
        rows.append(("x5_pad%d" % p, sp.kf_launcher(sp.kernel("rows.cubin", "x5_pad%d" % p), (n + 255) // 256, 256, a)))
    sp.run("x5 " + lg(n), sets, lambda t: t + t + t + t + t, out, rows, True)


def rowsum_params(n):
    """hand r1_dyn with its own 32 bytes of parameters and with kfuse's (meta block, scratch: r1_meta)"""
    L = 1024
    M = n // L
    sets = sp.rotate(lambda: (torch.rand(M, L, device=sp.dev) * 4 - 2,), 4 * n)
    out = torch.empty(M, device=sp.dev)
    x = lambda k: sp.ptr(sets[k][0].data_ptr())
    args = lambda k: [x(k), sp.ptr(out.data_ptr()), sp.meta_of([n, M, L, L, 1, 1, 0, 0, 0]), sp.ptr(0)]
    hargs = lambda k: [x(k), sp.ptr(out.data_ptr()), U32(M), U32(L), I64(L)]
    rows = [("kfuse warp", sp.kf_launcher(sp.kernel("rowsum.cubin", "rowsum_k0_931aaf52_warp"), (M + 7) // 8, 256, args)),
            ("hand r1_dyn", sp.kf_launcher(sp.kernel("rows.cubin", "r1_dyn"), M, 32, hargs)),
            ("hand r1_meta", sp.kf_launcher(sp.kernel("rows.cubin", "r1_meta"), M, 32, args))]
    sp.run("rowsum " + lg(n), sets, lambda t: t.sum(dim=1), out, rows, False)


print(torch.cuda.get_device_name(), torch.__version__, "rounds", sp.ROUNDS, "reps", sp.REPS)
if os.environ.get("PROBE") == "blocks":
    for e in (12, 16, 20, 22, 24, 26, 28):
        rowsum_blocks(1 << e)
    sys.exit(0)
if os.environ.get("PROBE") == "b64":
    for e in (12, 16, 20, 22):
        discount(1 << e)
    sys.exit(0)
if os.environ.get("PROBE") == "params":
    x5_pad(1 << 12)
    x5_pad(1 << 20)
    for e in (12, 20, 22):
        rowsum_params(1 << e)
    sys.exit(0)
if os.environ.get("PROBE") == "new":
    for e in (12, 16, 20, 22, 24, 26, 28):
        rowsum_new(1 << e)
    sys.exit(0)
if os.environ.get("PROBE") == "dyn":
    for e in (20, 22):
        rowsum(1 << e, ["r1_static", "r1_dyn", "r1_dyn_w64", "r2_static", "r2_dyn", "r4_static", "r8_static", "r8_dyn"])
    sys.exit(0)
if os.environ.get("PROBE") == "rowblock":
    for e in (12, 20, 22, 24):
        rowblock(1 << e)
    sys.exit(0)
HAND = ["r8_static", "r1_static", "r8_static_cs", "r1_static_cs", "r8_dyn", "r8_dyn_w64", "r8_dyn_cs"]
rowsum(1 << 20, HAND)
rowsum(1 << 12, ["r8_static", "r1_static", "r8_dyn"])
x5(1 << 12)
discount(1 << 12)
dot(1 << 12)
dot(1 << 20)
