# Session 18: tile's chunking and two reverted tile changes, in ONE process
# with torch.compile (s15's harness: bench/diag/s15/same_process.py): dot
# (f32, sum of x*y) and rowsum (f32 rows; rows longer than one tile run
# tile).  Kernels: kernels.sh (`fusec emit --target cuda`, nvcc -cubin
# -arch=sm_90 -O3 -DKF_ONE_PASS) in CUBIN_DIR.  PROBE picks the calls (README).
# Usage: [PROBE=chunks|rule|pair] python3 bench/diag/s18/probe.py CUBIN_DIR [ROUNDS] [REPS]
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "s15"))
import same_process as sp   # takes CUBIN_DIR, ROUNDS, REPS from sys.argv
import torch

TILE, TARGET = 4096, 2048   # KF_CG_TILE_ELEMS, KF_CG_CHUNK_TARGET
DOT, ROWSUM = "dot_k0_5d9900fc_", "rowsum_k0_931aaf52_"   # entry prefixes (kernels.sh's modules)


def lg(n):
    return "2^%d" % (n.bit_length() - 1)


def ntiles_of(L):
    return max(1, (L + TILE - 1) // TILE)


def chunks(M, L, new=False):
    """kf_cg_red_chunks' chunks per output: before this session's rule, or (new) with it: one chunk when
    ntiles <= 2, chunks of at least min(ntiles, 4) tiles when M >= 128 (call 9 ran ntiles <= 4 there)"""
    T = ntiles_of(L)
    want = 1 if M >= TARGET else (TARGET + M - 1) // M
    per = (T + min(T, want) - 1) // min(T, want)
    if new and (T <= 2 or M >= 128):
        per = max(per, min(T, 4))
    return (T + per - 1) // per


def dot_case(n):
    """(title, input sets, torch's function, output, args(k, more)): args are the kernels' parameters for
    input set k, `more` appended to the meta block (the _hc kernels' chunking); the scratch's counters are
    zero, and the block that finishes an output zeroes its counter again"""
    sets = sp.rotate(lambda: (torch.rand(n, device=sp.dev) * 4 - 2, torch.rand(n, device=sp.dev) * 4 - 2), 8 * n)
    out = torch.empty((), device=sp.dev)
    scratch = torch.zeros(1 << 22, device=sp.dev, dtype=torch.uint8)
    args = lambda k, more=(): [sp.ptr(sets[k][0].data_ptr()), sp.ptr(sets[k][1].data_ptr()), sp.ptr(out.data_ptr()),
                               sp.meta_of([n, n, 1, 1, 0, 0, 0, 0] + list(more)), sp.ptr(scratch.data_ptr())]
    return "dot " + lg(n), sets, lambda a, b: (a * b).sum(), out, args


def rows_case(M, L):
    """dot_case for rowsum of [M, L]"""
    n = M * L
    sets = sp.rotate(lambda: (torch.rand(M, L, device=sp.dev) * 4 - 2,), 4 * n)
    out = torch.empty(M, device=sp.dev)
    scratch = torch.zeros(1 << 22, device=sp.dev, dtype=torch.uint8)
    args = lambda k, more=(): [sp.ptr(sets[k][0].data_ptr()), sp.ptr(out.data_ptr()),
                               sp.meta_of([n, M, L, L, 1, 1, 0, 0, 0] + list(more)), sp.ptr(scratch.data_ptr())]
    return "rowsum [%d, %d]" % (M, L), sets, lambda t: t.sum(dim=1), out, args


def run(case, rows):
    title, sets, fn, out, _ = case
    sp.run(title, sets, fn, out, rows, False)


def entry(label, cubin, name, grid, args):
    return (label, sp.kf_launcher(sp.kernel(cubin, name), grid, 256, args))


def hc(label, cubin, name, M, nchunks, per, args):
    """an _hc kernel (kernels.sh) at nchunks chunks of per tiles an output"""
    return entry(label, cubin, name, M * nchunks, lambda k: args(k, [nchunks, per * TILE]))


def tilev_rows(g, M, L):
    """calls 1-2: tile against tilev (reverted-tilev.patch's fusec), kfuse's chunks; tilev_hc at them and,
    for rows, at a block a row"""
    case = rows_case(M, L) if g == "rowsum" else dot_case(L)
    prefix, args, c = (ROWSUM if g == "rowsum" else DOT), case[4], chunks(M, L)
    rows = [entry("kfuse " + v, g + ".cubin", prefix + v, M * c, args) for v in ("tile", "tilev")]
    rows.append(hc("tilev_hc (kfuse's chunks)", g + "_hc.cubin", prefix + "tilev", M, c, (ntiles_of(L) + c - 1) // c,
                   args))
    if g == "rowsum":
        rows.append(hc("tilev_hc (a block a row)", g + "_hc.cubin", prefix + "tilev", M, 1, ntiles_of(L), args))
    run(case, rows)


def tilev():
    for e in (12, 16, 20, 24, 26):
        tilev_rows("dot", 1, 1 << e)
    for e in (16, 20, 24):
        tilev_rows("rowsum", (1 << e) // 8192, 8192)


def split(case, g, prefix, M, L, pers):
    """call 8: <g>_hc's tile at chunks of `per` tiles for each per in pers (0: one chunk per output)"""
    T = ntiles_of(L)
    rows = []
    for per in pers:
        per = per or T
        c = (T + per - 1) // per
        rows.append(hc("tile_hc %d x %d tiles" % (c, per), g + "_hc.cubin", prefix + "tile", M, c, per, case[4]))
    run(case, rows)


def chunks_sweep():
    for n, pers in ((1 << 16, (1, 2, 4, 0)), (1 << 20, (1, 2, 4)), (1 << 24, (2, 4, 8))):
        split(dot_case(n), "dot", DOT, 1, n, pers)
    for M, L, pers in ((8, 8192, (1, 0)), (128, 8192, (1, 0)), (1024, 8192, (1, 0)), (8, 16384, (1, 2, 0)),
                       (8, 65536, (1, 2, 4, 0)), (128, 16384, (1, 2, 0)), (128, 65536, (1, 2, 4, 0))):
        split(rows_case(M, L), "rowsum", ROWSUM, M, L, pers)


def rule():
    """calls 9-10: rowsum.cu's tile at the new rule's chunks against tile_hc at the old rule's"""
    for M, L in ((8, 8192), (128, 8192), (1024, 8192), (8, 16384), (128, 16384), (128, 65536)):
        case = rows_case(M, L)
        c_old, c_new = chunks(M, L), chunks(M, L, new=True)
        run(case, [entry("kfuse tile, %d chunks (new rule)" % c_new, "rowsum.cubin", ROWSUM + "tile", M * c_new,
                         case[4]),
                   hc("tile_hc, %d chunks (old rule)" % c_old, "rowsum_hc.cubin", ROWSUM + "tile", M, c_old,
                      (ntiles_of(L) + c_old - 1) // c_old, case[4])])


def pair():
    """call 11: tile's vector path two tiles a round (reverted-two-tiles.patch: <g>.cu) against one
    (<g>_base.cu), the rule's chunks; kernels built on the development machine"""
    shapes = [("rowsum", M, L) for M, L in ((8, 8192), (128, 8192), (1024, 8192), (128, 16384), (8, 65536),
                                            (128, 65536), (1, 1 << 26))]
    for g, M, L in shapes + [("dot", 1, 1 << e) for e in (16, 20, 24, 26, 28)]:
        case = rows_case(M, L) if g == "rowsum" else dot_case(L)
        prefix, c = (ROWSUM if g == "rowsum" else DOT), chunks(M, L, new=True)
        run(case, [entry("tile, %s (%d chunks)" % (what, c), g + suffix + ".cubin", prefix + "tile", M * c, case[4])
                   for what, suffix in (("1 tile a round", "_base"), ("2 tiles a round", ""))])


if __name__ == "__main__":   # bench/diag/s19/probe.py imports the cases
    print(torch.cuda.get_device_name(), torch.__version__, "rounds", sp.ROUNDS, "reps", sp.REPS)
    {"": tilev, "chunks": chunks_sweep, "rule": rule, "pair": pair}[os.environ.get("PROBE", "")]()
