# Session 20: boxplus (f32) and gather_boxplus (f64) against torch.compile
# in ONE process (s15's harness: bench/diag/s15/same_process.py).
# - boxplus: kfuse's c64 and h64 as emitted, and two ways it could differ
#   from Triton's kernel: the layout (kernels/bx_layouts.cu: two 16-byte
#   vectors per thread) and the math (kernels/fast.cuh: __expf, __logf,
#   __fdividef in place of expf, logf, __fdiv_rn).
# - gather_boxplus: kfuse's g64 (four points per thread) and s64 (one), as
#   the launch rule picks them from 2^22 and below; kfbench's 2^28 fell 3.6%
#   between sessions 14 and 19 with the same code (one sample each).
# Kernels as kernels.sh builds them in CUBIN_DIR.
# PROBE=math (call 1: layout and math), PROBE=ld (call 2: the load
# instructions and the gathered load's cache hints; variants.py) or
# PROBE=layout (call 3: gather_boxplus's points per thread, 2^20-2^28, and
# a uniformly random permutation at 2^26) or PROBE=h64 (call 4: the same
# sizes, kfuse's h64 for kernels with a direct take, from kernels.sh run
# with a fusec that emits it) or PROBE=h32 (call 7: that h64 edited to 32
# bits and to a take stride of 1, variants.py).
# Usage: [PROBE=math|ld|layout|h64|h32] python3 bench/diag/s20/probe.py CUBIN_DIR [ROUNDS] [REPS]
import ctypes, os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "s15"))
import same_process as sp   # takes CUBIN_DIR, ROUNDS, REPS from sys.argv
import torch

BX, GB = "boxplus_k0_3cdfd6ed_", "gather_boxplus_k0_33423c77_"   # entry prefixes (kernels.sh's modules)


def lg(n):
    return "2^%d" % (n.bit_length() - 1)


PROBE = os.environ.get("PROBE", "ld")


def boxplus(n):
    sets = sp.rotate(lambda: (torch.rand(n, device=sp.dev) * 4 - 2, torch.rand(n, device=sp.dev) * 4 - 2), 8 * n)
    out = torch.empty(n, device=sp.dev)
    ab = lambda k: [sp.ptr(sets[k][0].data_ptr()), sp.ptr(sets[k][1].data_ptr()), sp.ptr(out.data_ptr())]
    args = lambda k: ab(k) + [sp.meta_of([n, n, 1, 1, 1, 0, 0, 0])]
    hargs = lambda k: ab(k) + [ctypes.c_uint32(n // 4)]
    c64 = lambda mod, name: sp.kf_launcher(sp.kernel(mod, name), (n // 4 + 255) // 256, 256, args)
    h64 = lambda mod, name: sp.kf_launcher(sp.kernel(mod, name), (n // 2 + 255) // 256, 256, args)
    if PROBE == "ld":
        rows = [("c64", c64("bx_ld.cubin", BX + "c64")), ("h64", h64("bx_ld.cubin", BX + "h64")),
                ("h64 fast", h64("bx_ld_fast.cubin", BX + "h64"))]
        for mod, what in (("bx_ld.cubin", ""), ("bx_ld_fast.cubin", " fast")):
            rows += [("c64 ldca" + what, c64(mod, "bx_c64_plain")), ("h64 ldca" + what, h64(mod, "bx_h64_plain"))]
    else:
        rows = [("c64 precise", c64("bx_var.cubin", BX + "c64")), ("h64 precise", h64("bx_var.cubin", BX + "h64"))]
        for mod, what in (("bx_var.cubin", "precise"), ("bx_fast.cubin", "fast")):
            if what == "fast":
                rows.append(("c64 fast", c64(mod, BX + "c64")))
            rows += [("v2x%d %s" % (t, what), sp.kf_launcher(sp.kernel(mod, "bx_v2_%d" % t), n // (8 * t), t, hargs))
                     for t in (128, 256)]
        rows.append(("c64 fast div", c64("bx_div.cubin", BX + "c64")))
    f = lambda a, b: torch.log((1 + torch.exp(a + b)) / (torch.exp(a) + torch.exp(b)))
    sp.run("boxplus " + lg(n), sets, f, out, rows, False)


def two_scale_perm(n):
    """kfbench.c's fill_perm: blocks of 4096 in a random order, one random order within every block"""
    B = 4096 if n % 4096 == 0 else n
    blk, inner = torch.randperm(n // B, device=sp.dev), torch.randperm(B, device=sp.dev)
    return (blk[:, None] * B + inner[None, :]).reshape(n).to(torch.int32)


def gather_boxplus(n, perm=two_scale_perm, title="gather "):
    f64 = dict(device=sp.dev, dtype=torch.float64)
    sets = sp.rotate(lambda: (torch.rand(n, **f64) * 4 - 2, torch.rand(n, **f64) * 4 - 2, perm(n)), 20 * n)
    out = torch.empty(n, **f64)
    err = torch.zeros(1, device=sp.dev, dtype=torch.int32)
    ptrs = lambda k: [sp.ptr(sets[k][0].data_ptr()), sp.ptr(sets[k][1].data_ptr()), sp.ptr(sets[k][2].data_ptr()),
                      sp.ptr(out.data_ptr())]
    args = lambda k: ptrs(k) + [sp.meta_of([n, n, 1, 1, 1, 1, 0, 0, 0, 0, n, 1]), sp.ptr(err.data_ptr())]
    vargs = lambda k: ptrs(k) + [ctypes.c_int64(n), sp.ptr(err.data_ptr())]

    def f(a, b, perm):
        g = torch.index_select(a, 0, perm)
        return torch.log((1 + torch.exp(g + b)) / (torch.exp(g) + torch.exp(b)))
    emitted = lambda v, per: sp.kf_launcher(sp.kernel("gather_boxplus.cubin", GB + v), n // (256 * per), 256, args)
    var = lambda name, per, a: sp.kf_launcher(sp.kernel("gb_var.cubin", name), n // (256 * per), 256, a)
    rows = [("g64", emitted("g64", 4)), ("s64", emitted("s64", 1))]
    if PROBE == "ld":
        rows += [("g64 " + v, var("gb_g64_" + v, 4, args)) for v in ("el", "l2", "plain")]
        rows += [("v2 " + v, var("gb_v2_%d" % i, 2, vargs)) for i, v in enumerate(("plain", "el", "nc"))]
    elif PROBE == "layout":
        rows += [("g64 2 points", var("gb_g64_k2", 2, args)), ("v2 nc", var("gb_v2_2", 2, vargs)),
                 ("v4 nc", var("gb_v4_2", 4, vargs))]
    elif PROBE == "h64":
        rows += [("h64 (emitted)", emitted("h64", 2)), ("v2 nc", var("gb_v2_2", 2, vargs))]
    elif PROBE == "h32":
        rows = [("h64 (emitted)", emitted("h64", 2)), ("v2 nc", var("gb_v2_2", 2, vargs))]
        rows += [("h64 " + v, var("gb_h64_" + v, 2, args)) for v in ("u32", "ts1", "u32_ts1")]
    sp.run(title + lg(n), sets, f, out, rows, False)
    if err.item():
        print("  gather: the kernels flagged an index out of range")


if __name__ == "__main__":
    print(torch.cuda.get_device_name(), torch.__version__, "rounds", sp.ROUNDS, "reps", sp.REPS)
    if PROBE == "h32":
        for e in (22, 26, 28):
            gather_boxplus(1 << e)
    elif PROBE in ("layout", "h64"):
        for e in (20, 22, 24, 26, 28):
            gather_boxplus(1 << e)
        gather_boxplus(1 << 26, lambda n: torch.randperm(n, device=sp.dev).to(torch.int32), "gather random ")
    else:
        for e in (20, 26, 28):
            boxplus(1 << e)
        for e in (26, 28):
            gather_boxplus(1 << e)
