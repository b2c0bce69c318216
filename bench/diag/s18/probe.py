# Session 18: tilev (tile's vector path alone, run by the launch rule where
# gvec holds on the host) against tile, in ONE process with torch.compile
# (s15's harness: bench/diag/s15/same_process.py).  dot (f32, sum of x*y)
# and rows of 8192 f32 (rowsum's module, whose rows longer than one tile
# run tile).  Kernels: `fusec emit --target cuda` of dot and rowsum, built
# with nvcc -cubin -arch=sm_90 -O3 -DKF_ONE_PASS into CUBIN_DIR.
# Usage: python3 bench/diag/s18/probe.py CUBIN_DIR [ROUNDS] [REPS]
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "s15"))
import same_process as sp   # takes CUBIN_DIR, ROUNDS, REPS from sys.argv
import torch

TILE, TARGET = 4096, 2048   # KF_CG_TILE_ELEMS, KF_CG_CHUNK_TARGET


def lg(n):
    return "2^%d" % (n.bit_length() - 1)


def chunks(M, L):
    """kf_cg_red_chunks: chunks per output"""
    ntiles = (L + TILE - 1) // TILE if L > TILE else 1
    want = 1 if M >= TARGET else (TARGET + M - 1) // M
    per = (ntiles + min(ntiles, want) - 1) // min(ntiles, want)
    return (ntiles + per - 1) // per


def variants(cubin, prefix, grid, args):
    return [("kfuse " + v, sp.kf_launcher(sp.kernel(cubin, prefix + v), grid, 256, args)) for v in ("tile", "tilev")]


def hc(cubin, prefix, label, M, nchunks, ce, args):
    """<g>_hc.cu's tilev (kernels.sh): nchunks and ce from the meta block"""
    return [("tilev_hc " + label, sp.kf_launcher(sp.kernel(cubin, prefix + "tilev"), M * nchunks, 256,
                                                  lambda k: args(k, [nchunks, ce])))]


def dot(n):
    sets = sp.rotate(lambda: (torch.rand(n, device=sp.dev) * 4 - 2, torch.rand(n, device=sp.dev) * 4 - 2), 8 * n)
    out = torch.empty((), device=sp.dev)
    scratch = torch.zeros(1 << 20, device=sp.dev, dtype=torch.uint8)   # counters zero; the last block re-zeroes
    args = lambda k, more=(): [sp.ptr(sets[k][0].data_ptr()), sp.ptr(sets[k][1].data_ptr()), sp.ptr(out.data_ptr()),
                               sp.meta_of([n, n, 1, 1, 0, 0, 0, 0] + list(more)), sp.ptr(scratch.data_ptr())]
    c = chunks(1, n)
    per = (max(1, n // TILE) + c - 1) // c
    sp.run("dot " + lg(n), sets, lambda a, b: (a * b).sum(), out,
           variants("dot.cubin", "dot_k0_5d9900fc_", c, args) +
           hc("dot_hc.cubin", "dot_k0_5d9900fc_", "(kfuse's chunks)", 1, c, per * TILE, args), False)


def rows8k(n):
    L = 8192
    M = n // L
    sets = sp.rotate(lambda: (torch.rand(M, L, device=sp.dev) * 4 - 2,), 4 * n)
    out = torch.empty(M, device=sp.dev)
    scratch = torch.zeros(1 << 20, device=sp.dev, dtype=torch.uint8)
    args = lambda k, more=(): [sp.ptr(sets[k][0].data_ptr()), sp.ptr(out.data_ptr()),
                               sp.meta_of([n, M, L, L, 1, 1, 0, 0, 0] + list(more)), sp.ptr(scratch.data_ptr())]
    c = chunks(M, L)
    sp.run("rowsum [%d, 8192] " % M + lg(n), sets, lambda t: t.sum(dim=1), out,
           variants("rowsum.cubin", "rowsum_k0_931aaf52_", M * c, args) +
           hc("rowsum_hc.cubin", "rowsum_k0_931aaf52_", "(kfuse's chunks)", M, c, L // c, args) +
           hc("rowsum_hc.cubin", "rowsum_k0_931aaf52_", "(a block a row)", M, 1, L, args), False)


def split(cubin, prefix, n, M, L, pers, args):
    """<g>_hc's tile at chunks of `per` tiles for each per in pers (0: one chunk per output)"""
    ntiles = max(1, (L + TILE - 1) // TILE)
    rows = []
    for per in pers:
        per = per or ntiles
        c = (ntiles + per - 1) // per
        rows.append(("tile_hc %d x %d tiles" % (c, per),
                     sp.kf_launcher(sp.kernel(cubin, prefix + "tile"), M * c, 256,
                                    (lambda c, per: lambda k: args(k, [c, per * TILE]))(c, per))))
    return rows


def dot_split(n, pers):
    sets = sp.rotate(lambda: (torch.rand(n, device=sp.dev) * 4 - 2, torch.rand(n, device=sp.dev) * 4 - 2), 8 * n)
    out = torch.empty((), device=sp.dev)
    scratch = torch.zeros(1 << 20, device=sp.dev, dtype=torch.uint8)
    args = lambda k, more: [sp.ptr(sets[k][0].data_ptr()), sp.ptr(sets[k][1].data_ptr()), sp.ptr(out.data_ptr()),
                            sp.meta_of([n, n, 1, 1, 0, 0, 0, 0] + list(more)), sp.ptr(scratch.data_ptr())]
    sp.run("dot " + lg(n), sets, lambda a, b: (a * b).sum(), out,
           split("dot_hc.cubin", "dot_k0_5d9900fc_", n, 1, n, pers, args), False)


def rows_split(M, L, pers):
    n = M * L
    sets = sp.rotate(lambda: (torch.rand(M, L, device=sp.dev) * 4 - 2,), 4 * n)
    out = torch.empty(M, device=sp.dev)
    scratch = torch.zeros(1 << 22, device=sp.dev, dtype=torch.uint8)
    args = lambda k, more: [sp.ptr(sets[k][0].data_ptr()), sp.ptr(out.data_ptr()),
                            sp.meta_of([n, M, L, L, 1, 1, 0, 0, 0] + list(more)), sp.ptr(scratch.data_ptr())]
    sp.run("rowsum [%d, %d]" % (M, L), sets, lambda t: t.sum(dim=1), out,
           split("rowsum_hc.cubin", "rowsum_k0_931aaf52_", n, M, L, pers, args), False)


def tilev():
    """calls 1-2: tile against tilev (reverted-tilev.patch's fusec)"""
    for e in (12, 16, 20, 24, 26):
        dot(1 << e)
    for e in (16, 20, 24):
        rows8k(1 << e)


def chunks_sweep():
    """call 8: tile's chunking, from the host (the _hc kernels): chunks of 1, 2, 4 ... tiles"""
    dot_split(1 << 16, (1, 2, 4, 0))
    dot_split(1 << 20, (1, 2, 4))
    dot_split(1 << 24, (2, 4, 8))
    for M in (8, 128, 1024):
        rows_split(M, 8192, (1, 0))
    for M in (8, 128):
        rows_split(M, 16384, (1, 2, 0))
        rows_split(M, 65536, (1, 2, 4, 0))


def chunks_new(M, L):
    """kf_cg_red_chunks after call 9: one chunk when ntiles <= 2, chunks of at least min(ntiles, 4) tiles when
    M >= 128 (call 9 ran this with ntiles <= 4 for the first condition)"""
    ntiles = (L + TILE - 1) // TILE if L > TILE else 1
    want = 1 if M >= TARGET else (TARGET + M - 1) // M
    per = (ntiles + min(ntiles, want) - 1) // min(ntiles, want)
    if ntiles <= 2 or M >= 128:
        per = max(per, min(ntiles, 4))
    return (ntiles + per - 1) // per


def rule_rows(M, L):
    """rowsum.cu's tile (its chunks by the new rule) against tile_hc at the old rule's chunks"""
    n = M * L
    sets = sp.rotate(lambda: (torch.rand(M, L, device=sp.dev) * 4 - 2,), 4 * n)
    out = torch.empty(M, device=sp.dev)
    scratch = torch.zeros(1 << 22, device=sp.dev, dtype=torch.uint8)
    args = lambda k, more=(): [sp.ptr(sets[k][0].data_ptr()), sp.ptr(out.data_ptr()),
                               sp.meta_of([n, M, L, L, 1, 1, 0, 0, 0] + list(more)), sp.ptr(scratch.data_ptr())]
    c_old, c_new = chunks(M, L), chunks_new(M, L)
    ntiles = max(1, (L + TILE - 1) // TILE)
    per_old = (ntiles + c_old - 1) // c_old
    rows = [("kfuse tile, %d chunks (new rule)" % c_new,
             sp.kf_launcher(sp.kernel("rowsum.cubin", "rowsum_k0_931aaf52_tile"), M * c_new, 256, args)),
            ("tile_hc, %d chunks (old rule)" % c_old,
             sp.kf_launcher(sp.kernel("rowsum_hc.cubin", "rowsum_k0_931aaf52_tile"), M * c_old, 256,
                            lambda k: args(k, [c_old, per_old * TILE])))]
    sp.run("rowsum [%d, %d]" % (M, L), sets, lambda t: t.sum(dim=1), out, rows, False)


def rule():
    """call 9: the new chunk rule in kfuse's own kernel"""
    for M, L in ((8, 8192), (128, 8192), (1024, 8192), (8, 16384), (128, 16384), (128, 65536)):
        rule_rows(M, L)


def pair_rows(M, L):
    """rowsum's tile with two tiles a round (rowsum.cu) against one (rowsum_base.cu), the rule's chunks"""
    n = M * L
    sets = sp.rotate(lambda: (torch.rand(M, L, device=sp.dev) * 4 - 2,), 4 * n)
    out = torch.empty(M, device=sp.dev)
    scratch = torch.zeros(1 << 22, device=sp.dev, dtype=torch.uint8)
    args = lambda k: [sp.ptr(sets[k][0].data_ptr()), sp.ptr(out.data_ptr()),
                      sp.meta_of([n, M, L, L, 1, 1, 0, 0, 0]), sp.ptr(scratch.data_ptr())]
    c = chunks_new(M, L)
    rows = [("tile, %s (%d chunks)" % (what, c),
             sp.kf_launcher(sp.kernel(cubin, "rowsum_k0_931aaf52_tile"), M * c, 256, args))
            for what, cubin in (("1 tile a round", "rowsum_base.cubin"), ("2 tiles a round", "rowsum.cubin"))]
    sp.run("rowsum [%d, %d]" % (M, L), sets, lambda t: t.sum(dim=1), out, rows, False)


def pair_dot(n):
    sets = sp.rotate(lambda: (torch.rand(n, device=sp.dev) * 4 - 2, torch.rand(n, device=sp.dev) * 4 - 2), 8 * n)
    out = torch.empty((), device=sp.dev)
    scratch = torch.zeros(1 << 20, device=sp.dev, dtype=torch.uint8)
    args = lambda k: [sp.ptr(sets[k][0].data_ptr()), sp.ptr(sets[k][1].data_ptr()), sp.ptr(out.data_ptr()),
                      sp.meta_of([n, n, 1, 1, 0, 0, 0, 0]), sp.ptr(scratch.data_ptr())]
    c = chunks_new(1, n)
    rows = [("tile, %s (%d chunks)" % (what, c),
             sp.kf_launcher(sp.kernel(cubin, "dot_k0_5d9900fc_tile"), c, 256, args))
            for what, cubin in (("1 tile a round", "dot_base.cubin"), ("2 tiles a round", "dot.cubin"))]
    sp.run("dot " + lg(n), sets, lambda a, b: (a * b).sum(), out, rows, False)


def pair():
    """call 11: tile's vector path two tiles a round (emit.c) against one; kernels built on the development machine"""
    for M, L in ((8, 8192), (128, 8192), (1024, 8192), (128, 16384), (8, 65536), (128, 65536), (1, 1 << 26)):
        pair_rows(M, L)
    for e in (16, 20, 24, 26, 28):
        pair_dot(1 << e)


print(torch.cuda.get_device_name(), torch.__version__, "rounds", sp.ROUNDS, "reps", sp.REPS)
{"": tilev, "chunks": chunks_sweep, "rule": rule, "pair": pair}[os.environ.get("PROBE", "")]()
