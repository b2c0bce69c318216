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


def rowsum_case(n, rows_of):
    """rows of 1024 f32, n elements; rows_of(M, args, hargs) gives the rows [(label, launch)]: args are
    kfuse's parameters (the meta block; no scratch, which warp and a one-chunk tile do not read), hargs
    kernels/rows.cu's"""
    L = 1024
    M = n // L
    sets = sp.rotate(lambda: (torch.rand(M, L, device=sp.dev) * 4 - 2,), 4 * n)
    out = torch.empty(M, device=sp.dev)
    x = lambda k: sp.ptr(sets[k][0].data_ptr())
    args = lambda k: [x(k), sp.ptr(out.data_ptr()), sp.meta_of([n, M, L, L, 1, 1, 0, 0, 0]), sp.ptr(0)]
    hargs = lambda k: [x(k), sp.ptr(out.data_ptr()), U32(M), U32(L), I64(L)]
    sp.run("rowsum " + lg(n), sets, lambda t: t.sum(dim=1), out, rows_of(M, args, hargs), False)


def warp(cubin, M, r, args):
    """kfuse's warp entry in cubin at r rows (32-lane groups) a block"""
    return sp.kf_launcher(sp.kernel(cubin, "rowsum_k0_931aaf52_warp"), (M + r - 1) // r, 32 * r, args)


def hand(name, M, r, hargs, threads=None):
    """kernels/rows.cu's name at r rows a block (threads a block: 32 r unless given)"""
    return sp.kf_launcher(sp.kernel("rows.cubin", name), (M + r - 1) // r, threads or 32 * r, hargs)


def rowsum(n, names):
    """24f935e's warp, with evict-first loads, at one row a block; hand kernels (r<R>_...: R rows a block)"""
    rowsum_case(n, lambda M, a, h: [("kfuse warp", warp("rowsum_old.cubin", M, 8, a)),
                                    ("kfuse warp, ldcs", warp("rowsum_cs.cubin", M, 8, a)),
                                    ("kfuse warp 1 row/blk", warp("rowsum_rb.cubin", M, 1, a))] +
                                   [("hand " + nm, hand(nm, M, int(nm[1]), h)) for nm in names])


def rowsum_blocks(n):
    """24f935e's warp, rows a block from the block size (rowsum_rb.cu), at blocks of 32-256 threads"""
    rowsum_case(n, lambda M, a, h: [("warp %d rows/blk" % r, warp("rowsum_rb.cubin", M, r, a)) for r in (8, 4, 2, 1)])


def rowblock(n):
    """a row a block (Triton's layout, kernels/rows.cu b<T>) against kfuse's warp and tile and r1_static"""
    rowsum_case(n, lambda M, a, h: [("kfuse warp", warp("rowsum_old.cubin", M, 8, a)),
                                    ("kfuse tile", sp.kf_launcher(sp.kernel("rowsum.cubin", "rowsum_k0_931aaf52_tile"),
                                                                  M, 256, a)),
                                    ("hand r1_static", hand("r1_static", M, 1, h))] +
                                   [("hand b%d" % t, hand("b%d" % t, M, 1, h, t)) for t in (256, 128, 64)])


def rowsum_new(n):
    """warp as rowsum.cubin has it at 8 rows a block, and at 1 where it reads its rows a block from the block
    size (calls 5-6: the reverted change), against 24f935e's (rowsum_old.cubin) and hand r1_dyn"""
    with open(os.path.join(sp.cubins, "rowsum.cu")) as f:   # does its warp take any rows a block?
        any_rows = "rows = (unsigned int)blockDim.x / 32" in f.read()
    rowsum_case(n, lambda M, a, h: [("warp 24f935e", warp("rowsum_old.cubin", M, 8, a))] +
                                   ([("warp now, 1 row/blk", warp("rowsum.cubin", M, 1, a))] if any_rows else []) +
                                   [("warp now, 8 rows/blk", warp("rowsum.cubin", M, 8, a)),
                                    ("hand r1_dyn", hand("r1_dyn", M, 1, h))])


def rowsum_params(n):
    """hand r1_dyn with its own 32 bytes of parameters and with kfuse's (meta block, scratch: r1_meta)"""
    rowsum_case(n, lambda M, a, h: [("kfuse warp", warp("rowsum_old.cubin", M, 8, a)),
                                    ("hand r1_dyn", hand("r1_dyn", M, 1, h)),
                                    ("hand r1_meta", hand("r1_meta", M, 1, a))])


def rowsum_pre(n):
    """24f935e's warp without its layout test (rowsum_ng.cu), and at one row a block built for blocks of 32
    (rowsum_rb32.cu), against 24f935e's and hand r1_dyn"""
    rowsum_case(n, lambda M, a, h: [("kfuse warp", warp("rowsum_old.cubin", M, 8, a)),
                                    ("warp, gvec = 1", warp("rowsum_ng.cubin", M, 8, a)),
                                    ("warp 1 row/blk, bounds 32", warp("rowsum_rb32.cubin", M, 1, a)),
                                    ("warp 1 row/blk, bounds 256", warp("rowsum_rb.cubin", M, 1, a)),
                                    ("hand r1_dyn", hand("r1_dyn", M, 1, h))])


def rowsum_warpv(n):
    """kfuse's warpv (the vector path alone, from rowsum.cu) against its warp, 24f935e's warp without its
    layout test (rowsum_ng.cu) and hand r1_dyn"""
    vfn = sp.kernel("rowsum.cubin", "rowsum_k0_931aaf52_warpv")
    rowsum_case(n, lambda M, a, h: [("kfuse warp", warp("rowsum.cubin", M, 8, a)),
                                    ("kfuse warpv", sp.kf_launcher(vfn, (M + 7) // 8, 256, a)),
                                    ("warp, gvec = 1", warp("rowsum_ng.cubin", M, 8, a)),
                                    ("hand r1_dyn", hand("r1_dyn", M, 1, h))])


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


def first():
    """call 1"""
    rowsum(1 << 20, ["r8_static", "r1_static", "r8_static_cs", "r1_static_cs", "r8_dyn", "r8_dyn_w64", "r8_dyn_cs"])
    rowsum(1 << 12, ["r8_static", "r1_static", "r8_dyn"])
    x5(1 << 12)
    discount(1 << 12)
    dot(1 << 12)
    dot(1 << 20)


def sizes(f, exps, *more):
    return lambda: [f(1 << e, *more) for e in exps]


PROBES = {   # PROBE=...: the calls of the README, in order
    "": first,
    "blocks": sizes(rowsum_blocks, (12, 16, 20, 22, 24, 26, 28)),
    "rowblock": sizes(rowblock, (12, 20, 22, 24)),
    "dyn": sizes(rowsum, (20, 22), ["r1_static", "r1_dyn", "r1_dyn_w64", "r2_static", "r2_dyn", "r4_static",
                                    "r8_static", "r8_dyn"]),
    "new": sizes(rowsum_new, (12, 16, 20, 22, 24, 26, 28)),
    "params": lambda: (x5_pad(1 << 12), x5_pad(1 << 20), sizes(rowsum_params, (12, 20, 22))()),
    "b64": sizes(discount, (12, 16, 20, 22)),
    "pre": sizes(rowsum_pre, (12, 20, 22)),
    "warpv": sizes(rowsum_warpv, (12, 20, 22, 24, 26)),
}
print(torch.cuda.get_device_name(), torch.__version__, "rounds", sp.ROUNDS, "reps", sp.REPS)
PROBES[os.environ.get("PROBE", "")]()
