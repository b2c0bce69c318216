# Session 36: rowsum of [M, 1024] f32 in ONE process with torch.compile
# (s15's harness, bench/diag/s15/same_process.py): kfuse's `warpv` as
# emitted against warpv_var.py's copies ($VARIANTS, default wv_clamp wv_lo
# wv_32; an entry LABEL=CUBIN:NAME takes another cubin's kernel) and s29's
# straight-line rs_kf8 (bench/diag/s29/kernels/rows_hand.cu); every
# output checked against torch.compile's.  M: 4 (the benchmark's 2^12),
# 1024 (2^20), 65536 (2^26), and 8, 512, 4096 between.
# Usage: python3 bench/diag/s36/rows.py CUBIN_DIR WARPV_NAME [ROUNDS] [REPS]
import ctypes, os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "s15"))
name = sys.argv.pop(2)
import same_process as sp   # takes CUBIN_DIR, ROUNDS, REPS from sys.argv
import torch

print(torch.cuda.get_device_name(), torch.__version__, "rounds", sp.ROUNDS, "reps", sp.REPS)
L = 1024
V = os.environ.get("VARIANTS", "wv_clamp wv_lo wv_32").split()
for M in (1024, 4, 65536, 8, 512, 4096):
    n = M * L
    sets = sp.rotate(lambda: (torch.rand(M, L, device=sp.dev) * 4 - 2,), 4 * n)
    out = torch.empty(M, device=sp.dev)
    scratch = torch.zeros(1 << 20, device=sp.dev, dtype=torch.uint8)
    # warpv's meta: [n, M, L, strides (x: L, 1; r: 1, 0), offsets 0 0, one chunk of L]
    kargs = lambda k: [sp.ptr(sets[k][0].data_ptr()), sp.ptr(out.data_ptr()),
                       sp.meta_of([n, M, L, L, 1, 1, 0, 0, 0, 1, L]), sp.ptr(scratch.data_ptr())]
    hargs = lambda k: [sp.ptr(sets[k][0].data_ptr()), sp.ptr(out.data_ptr()), ctypes.c_uint32(M)]
    rows = [("kfuse warpv", sp.kf_launcher(sp.kernel("rowsum.cubin", name), (M + 7) // 8, 256, kargs))]
    for v in V:   # NAME (in warpv_var.cubin) or LABEL=CUBIN:NAME
        label, _, where = v.rpartition("=")
        cubin, _, fn = where.rpartition(":")
        rows.append((label or fn, sp.kf_launcher(sp.kernel(cubin or "warpv_var.cubin", fn), (M + 7) // 8, 256, kargs)))
    rows.append(("rs_kf8", sp.kf_launcher(sp.kernel("rows_hand.cubin", "rs_kf8"), (M + 7) // 8, 256, hargs)))
    sp.run("rowsum [%d,%d]" % (M, L), sets, lambda x: x.sum(dim=1), out, rows, False)
    del sets
    torch.cuda.empty_cache()
