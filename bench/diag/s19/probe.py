# Session 19: tile's chunking read from the meta block (nchunks, chunk
# length: two int64 after the take sources) and block w's chunk taken in 32
# bits, against the kernel that computed them itself (HEAD before the
# change), in ONE process with torch.compile, at the same chunks (the rule's).
# CUBIN_DIR holds dot.cubin/rowsum.cubin (new) and dot_base.cubin/
# rowsum_base.cubin (before): bench/diag/s19/kernels.sh.
# Usage: python3 bench/diag/s19/probe.py CUBIN_DIR [ROUNDS] [REPS]
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "s18"))
import probe as s18   # s18's cases and entries; takes CUBIN_DIR, ROUNDS, REPS from sys.argv
import torch

shapes = [("dot", 1, 1 << e) for e in (12, 16, 20, 24, 26, 28)]
shapes += [("rowsum", M, L) for M, L in ((8, 8192), (8, 16384), (8, 65536), (128, 65536), (1, 1 << 26))]
print(torch.cuda.get_device_name(), torch.__version__, "rounds", s18.sp.ROUNDS, "reps", s18.sp.REPS)
for g, M, L in shapes:
    case = s18.rows_case(M, L) if g == "rowsum" else s18.dot_case(L)
    prefix, c = (s18.ROWSUM if g == "rowsum" else s18.DOT), s18.chunks(M, L, new=True)
    per = (s18.ntiles_of(L) + c - 1) // c
    s18.run(case, [s18.entry("tile, chunks computed (%d)" % c, g + "_base.cubin", prefix + "tile", M * c, case[4]),
                   s18.hc("tile, chunks from meta (%d)" % c, g + ".cubin", prefix + "tile", M, c, per, case[4])])
