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


print(torch.cuda.get_device_name(), torch.__version__, "rounds", sp.ROUNDS, "reps", sp.REPS)
for e in (12, 16, 20, 24, 26):
    dot(1 << e)
for e in (16, 20, 24):
    rows8k(1 << e)
