# Session 25: rowsum of [M, 1024] f32 with few rows, in ONE process with
# torch.compile (s15's harness through s18's cases, as s24's probe.py):
# kfuse's `warpv` as emitted (8 rows a 256-thread block) against copies with
# 4, 2 and 1 rows a block (bench/diag/s24/kernels.sh's rowsum_w.cubin).
# Usage: python3 bench/diag/s25/rows_probe.py CUBIN_DIR [ROUNDS] [REPS]
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "s18"))
import probe as s18   # s18's cases (s15's harness); takes CUBIN_DIR, ROUNDS, REPS from sys.argv

sp = s18.sp
for M in (32, 64, 128, 256, 512, 1024, 2048):
    case = s18.rows_case(M, 1024)
    args = lambda k, a=case[4]: a(k, [1, 4096])   # one chunk
    rows = [("kfuse warpv (8 rows a block)", sp.kf_launcher(sp.kernel("rowsum.cubin", s18.ROWSUM + "warpv"),
                                                           (M + 7) // 8, 256, args))]
    rows += [("warpv, %d row%s a block" % (w, "s" * (w > 1)),
              sp.kf_launcher(sp.kernel("rowsum_w.cubin", s18.ROWSUM + "warpv_w%d" % w), (M + w - 1) // w, 32 * w,
                             args)) for w in (4, 2, 1)]
    s18.run(case, rows)
