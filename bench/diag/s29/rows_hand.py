# Session 29: rowsum of [M, 1024] f32 in ONE process with torch.compile
# (s15's harness, bench/diag/s15/same_process.py): kfuse's `warpv` as
# emitted against the hand kernels of kernels/rows_hand.cu (Triton's
# in-thread order or kfuse's, 1 or 8 rows a block, straight line, 32-bit
# row offsets; one through plain loads).  Every kernel's output is checked
# against torch.compile's (NaN-filled first).  PROBE=var (calls 6, 7): warpv
# against its edited copies (warpv_var.py's warpv_var.cubin) and rs_kf8;
# PROBE=param (call 8): warpv and wv_32 against rs_kf8 with 20 bytes of
# parameters and with kfuse's (rs_kf8_m, rs_kf8_mm); PROBE=r32 (call 9):
# warpv, wv_clamp, wv_32 and wv_r32 (32 bits without the clamp), rs_kf8.
# Usage: [PROBE=hand|var] python3 bench/diag/s29/rows_hand.py CUBIN_DIR [ROUNDS] [REPS]
import ctypes, os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "s15"))
import same_process as sp   # takes CUBIN_DIR, ROUNDS, REPS from sys.argv
import torch

print(torch.cuda.get_device_name(), torch.__version__, "rounds", sp.ROUNDS, "reps", sp.REPS)
L = 1024
for M in (1024, 4096, 512, 4):
    n = M * L
    sets = sp.rotate(lambda: (torch.rand(M, L, device=sp.dev) * 4 - 2,), 4 * n)
    out = torch.empty(M, device=sp.dev)
    scratch = torch.zeros(1 << 20, device=sp.dev, dtype=torch.uint8)
    # warpv's meta: [n, M, L, strides (x: L, 1; r: 1, 0), offsets 0 0, one chunk of L]
    kargs = lambda k: [sp.ptr(sets[k][0].data_ptr()), sp.ptr(out.data_ptr()),
                       sp.meta_of([n, M, L, L, 1, 1, 0, 0, 0, 1, L]), sp.ptr(scratch.data_ptr())]
    hargs = lambda k: [sp.ptr(sets[k][0].data_ptr()), sp.ptr(out.data_ptr()), ctypes.c_uint32(M)]
    rows = [("kfuse warpv", sp.kf_launcher(sp.kernel("rowsum.cubin", "rowsum_k0_931aaf52_warpv"), (M + 7) // 8, 256,
                                           kargs))]
    probe = os.environ.get("PROBE", "hand")
    wv = {"var": ("wv_clamp", "wv_both", "wv_32", "wv_32r1", "wv_sel", "wv_sel32"), "param": ("wv_32",),
          "r32": ("wv_clamp", "wv_32", "wv_r32")}.get(probe, ())
    rows += [(v, sp.kf_launcher(sp.kernel("warpv_var.cubin", v), (M + 7) // 8, 256, kargs)) for v in wv]
    if probe == "param":
        rows += [(v, sp.kf_launcher(sp.kernel("rows_hand.cubin", v), (M + 7) // 8, 256, kargs))
                 for v in ("rs_kf8_m", "rs_kf8_mm")]
    hand = (("rs_kf8", 8),) if probe != "hand" else \
        (("rs_tri1", 1), ("rs_tri8", 8), ("rs_kf1", 1), ("rs_kf8", 8), ("rs_tri1_plain", 1))
    for name, r in hand:
        rows.append((name, sp.kf_launcher(sp.kernel("rows_hand.cubin", name), (M + r - 1) // r, 32 * r, hargs)))
    sp.run("rowsum [%d,%d]" % (M, L), sets, lambda x: x.sum(dim=1), out, rows, False)
    del sets
    torch.cuda.empty_cache()
