"""Session 21: edited copies of kfuse's emitted dot `tile` (DIR/dot.cu, from
kernels.sh), appended to DIR/dot_var.cu under new names, to find what its
code before the first load costs at 2^12 (one chunk, one tile, vector path):
  dot_tile_ng    gvec taken as 1 (the host's red_gvec holds: no test in the kernel)
  dot_tile_1c    the chunk as [0, L) (one chunk: no chunk arithmetic)
  dot_tile_ng1c  both
  dot_tile_lean  both, and one block and one tile: no loop over w or over tiles
Usage: python3 bench/diag/s21/variants.py DIR"""
import re, sys

d = sys.argv[1]
src = open(d + "/dot.cu").read()
m = re.search(r'extern "C" __global__ void __launch_bounds__\(256\) (dot_k0_\w+)_tile\(.*?\n}\n', src, re.S)
tile, prefix = m.group(0), m.group(1)
GVEC = re.compile(r"const int gvec = .*?;\n", re.S)
CHUNK = re.compile(r"const unsigned long long r0 = .*?;\n")


def edit(name, ng=False, one=False, lean=False):
    t = tile.replace(prefix + "_tile(", "dot_tile_%s(" % name)
    if ng:
        t, k = GVEC.subn("const int gvec = 1;\n", t)
        assert k == 1
    if one:
        t, k = CHUNK.subn("const unsigned long long r0 = 0, r1 = L;\n", t)
        assert k == 1
    if lean:
        w = "for (unsigned long long w = (unsigned long long)blockIdx.x; w < np; w += (unsigned long long)gridDim.x) {"
        assert w in t
        t = t.replace(w, "{ const unsigned long long w = (unsigned long long)blockIdx.x;")
        b = "for (unsigned long long base = r0; base < r1; base += 4096) {"
        assert b in t
        t = t.replace(b, "{ const unsigned long long base = r0;")
    return t


out = src + "\n" + "".join(edit(*a) for a in (("ng", True), ("1c", False, True), ("ng1c", True, True),
                                              ("lean", True, True, True)))
open(d + "/dot_var.cu", "w").write(out)
