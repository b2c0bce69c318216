# Session 21: dot at 2^12 (one tile, one block) in ONE process with
# torch.compile (s15's harness): kfuse's `tile` as emitted (and its `warpv`
# on the same call) against hand-written one-block kernels
# (kernels/dot_small.cu) that separate the block size, the block tree's
# order and kfuse's prologue (strides, alignment test, 64-bit indices).
# CUBIN_DIR: kernels.sh's dot.cubin and dot_small.cubin, and with PROBE=var
# (call 3) variants.py's dot_var.cubin: `tile` edited part by part; PROBE=new
# (call 4): `tile` before (dot.cubin) and after the change (dot_new.cubin:
# one pass, the chunk arithmetic only with several chunks) at 2^12-2^24,
# the launch rule's chunks.
# PROBE=disc (call 7): discount's b64 at 2^12 and 2^16 as emitted and
# edited (variants.py's disc_var.cubin) against session 16's flat layouts.
# Usage: [PROBE=hand|var|new|disc] python3 bench/diag/s21/probe.py CUBIN_DIR [ROUNDS] [REPS]
import ctypes, os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "s18"))
import probe as s18   # s18's dot case (s15's harness); takes CUBIN_DIR, ROUNDS, REPS from sys.argv
import torch

sp = s18.sp
PROBE = os.environ.get("PROBE", "hand")
print(torch.cuda.get_device_name(), torch.__version__, "rounds", sp.ROUNDS, "reps", sp.REPS)
if PROBE == "disc":   # discount at 2^12 and 2^16: b64 as emitted, edited (variants.py), flat (session 16)
    T, K = 16, 256
    for e in (12, 16):
        n = 1 << e
        M = n // T // K
        sets = sp.rotate(lambda: (torch.rand(M, K, device=sp.dev, dtype=torch.float64),
                                  torch.rand(T, M, K, device=sp.dev, dtype=torch.float64)), 8 * n + 8 * M * K)
        out = torch.empty(T, M, K, device=sp.dev, dtype=torch.float64)
        ptrs = lambda k: [sp.ptr(sets[k][0].data_ptr()), sp.ptr(sets[k][1].data_ptr()), sp.ptr(out.data_ptr())]
        args = lambda k: ptrs(k) + [sp.meta_of([n, T, M, K, 0, K, 1, M * K, K, 1, M * K, K, 1, 0, 0, 0])]
        inner = M * K // 2
        fargs = lambda k: ptrs(k) + [ctypes.c_uint64(inner), ctypes.c_uint64(n // 2)]
        grid = T * ((inner + 511) // 512)   # b64: a block per 512 vectors of a step
        rows = [("b64 as emitted", sp.kf_launcher(sp.kernel("discount.cubin", "discount_k0_a97fcb7b_b64"), grid, 256,
                                                  args)),
                ("b64, one chunk: no split", sp.kf_launcher(sp.kernel("disc_var.cubin", "disc_b64_1c"), grid, 256,
                                                            args))]
        if e == 12:
            rows.append(("b64, no split, no division", sp.kf_launcher(sp.kernel("disc_var.cubin", "disc_b64_b1"), grid,
                                                                      256, args)))
        rows += [("flat %s" % f, sp.kf_launcher(sp.kernel("layouts.cubin", f), (n // 2 + tb * u - 1) // (tb * u), tb,
                                                fargs)) for f, tb, u in (("f1_256", 256, 1), ("f2_256", 256, 2),
                                                                         ("f4_128", 128, 4))]
        sp.run("discount 2^%d" % e, sets, lambda a, b: a * b, out, rows, True)
    sys.exit(0)
if PROBE == "new":
    for e in (12, 16, 20, 24):
        case, c = s18.dot_case(1 << e), s18.chunks(1, 1 << e, new=True)
        per = (s18.ntiles_of(1 << e) + c - 1) // c
        s18.run(case, [s18.hc("tile before (%d chunks)" % c, "dot.cubin", s18.DOT + "tile", 1, c, per, case[4]),
                       s18.hc("tile after", "dot_new.cubin", s18.DOT + "tile", 1, c, per, case[4])])
    sys.exit(0)
for n in (1 << 12,):
    case = s18.dot_case(n)
    sets = case[1]
    meta = lambda k: case[4](k, [1, 4096])   # one chunk of one tile
    hand = lambda k: [sp.ptr(sets[k][0].data_ptr()), sp.ptr(sets[k][1].data_ptr()), sp.ptr(case[3].data_ptr()),
                      ctypes.c_uint32(n)]
    rows = [("kfuse tile", sp.kf_launcher(sp.kernel("dot.cubin", s18.DOT + "tile"), 1, 256, meta)),
            ("kfuse warpv", sp.kf_launcher(sp.kernel("dot.cubin", s18.DOT + "warpv"), 1, 256, meta))]
    hand_rows = (("smem", 256), ("shfl", 512)) if PROBE == "var" else \
        [(o, t) for o in ("smem", "shfl") for t in (256, 512, 1024)]
    for order, t in hand_rows:
        rows.append(("%s %d" % (order, t), sp.kf_launcher(sp.kernel("dot_small.cubin", "dot_%s_%d" % (order, t)),
                                                          1, t, hand)))
    if PROBE == "var":
        rows.append(("smem 256, kfuse's params", sp.kf_launcher(sp.kernel("dot_small.cubin", "dot_smem_meta"), 1, 256,
                                                                 meta)))
        rows += [("tile " + v, sp.kf_launcher(sp.kernel("dot_var.cubin", "dot_tile_" + v), 1, 256, meta))
                 for v in ("ng", "1c", "ng1c", "lean")]
    s18.run(case, rows)
