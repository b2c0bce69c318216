# s30 call 2: boxplus f32 at 2^19-2^22, c64 and h64 from four builds of the emitted module (bp2.sh),
# against torch.compile in one process (s15's harness).
import os, sys
sys.path.insert(0, "bench/diag/s15")   # run from the repository root
import same_process as sp
import torch

print(torch.cuda.get_device_name(), torch.__version__, "rounds", sp.ROUNDS, "reps", sp.REPS)
for lg in (19, 20, 21, 22):
    n = 1 << lg
    mk = lambda: (torch.rand(n, device=sp.dev) * 4 - 2, torch.rand(n, device=sp.dev) * 4 - 2)
    sets = sp.rotate(mk, 12 * n)
    out = torch.empty(n, device=sp.dev)
    args = lambda k: [sp.ptr(sets[k][0].data_ptr()), sp.ptr(sets[k][1].data_ptr()), sp.ptr(out.data_ptr()),
                      sp.meta_of([n, n, 1, 1, 1, 0, 0, 0])]
    grids = {"c64": (n // 4 + 255) // 256, "h64": (n // 2 + 255) // 256}
    rows = [(var + " " + cub, sp.kf_launcher(sp.kernel(cub + ".cubin", "boxplus_k0_3cdfd6ed_" + var), grids[var], 256, args))
            for cub in ("bp", "bp_nf", "bp_fd", "bp_fast") for var in ("c64", "h64")]
    sp.run("boxplus 2^%d" % lg, sets, lambda a, b: torch.log((1 + torch.exp(a + b)) / (torch.exp(a) + torch.exp(b))),
           out, rows, False)
    del sets
    torch.cuda.empty_cache()
