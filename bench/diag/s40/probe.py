# Session 40: boxplus (f32, accurate math) against torch.compile in ONE
# process (s15's harness), kfuse's c64 and h64 as emitted and with one part
# of the math swapped at a time (kernels.sh, kernels/math.cuh): which of
# the division, log and exp costs what, and whether a division without a
# branch (kf_ddiv) buys back the interleaving of a vector's elements.
# Usage: python3 bench/diag/s40/probe.py CUBIN_DIR [ROUNDS] [REPS]
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "s15"))
import same_process as sp   # takes CUBIN_DIR, ROUNDS, REPS from sys.argv
import torch

BX = "boxplus_k0_3cdfd6ed_"
VARIANTS = ("precise", "ddiv", "fastdiv", "fastlog", "fastexp", "fast")


def boxplus(e):
    n = 1 << e
    sets = sp.rotate(lambda: (torch.rand(n, device=sp.dev) * 4 - 2, torch.rand(n, device=sp.dev) * 4 - 2), 8 * n)
    out = torch.empty(n, device=sp.dev)
    args = lambda k: [sp.ptr(sets[k][0].data_ptr()), sp.ptr(sets[k][1].data_ptr()), sp.ptr(out.data_ptr()),
                      sp.meta_of([n, n, 1, 1, 1, 0, 0, 0])]
    rows = []
    for v in VARIANTS:
        for name, per in (("c64", 4), ("h64", 2), ("s64", 1)):
            if name == "s64" and e > 20:
                continue
            fn = sp.kernel("bx_%s.cubin" % v, BX + name)
            rows.append(("%s %s" % (name, v), sp.kf_launcher(fn, (n // per + 255) // 256, 256, args)))
    f = lambda a, b: torch.log((1 + torch.exp(a + b)) / (torch.exp(a) + torch.exp(b)))
    sp.run("boxplus 2^%d" % e, sets, f, out, rows, False)


if __name__ == "__main__":
    print(torch.cuda.get_device_name(), torch.__version__, "rounds", sp.ROUNDS, "reps", sp.REPS)
    for e in [int(x) for x in os.environ.get("SIZES", "20,22,24,26").split(",")]:
        boxplus(e)
