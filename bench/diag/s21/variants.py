"""Session 21: edited copies of kfuse's emitted dot `tile` (DIR/dot.cu, from
kernels.sh), appended to DIR/dot_var.cu under new names, to find what its
code before the first load costs at 2^12 (one chunk, one tile, vector path):
  dot_tile_ng    gvec taken as 1 (the host's red_gvec holds: no test in the kernel)
  dot_tile_1c    the chunk as [0, L) (one chunk: no chunk arithmetic)
  dot_tile_ng1c  both
  dot_tile_lean  both, and one block and one tile: no loop over w or over tiles
and of discount's `b64` (DIR/discount.cu), to DIR/disc_var.cu (call 6):
  disc_b64_1c    the chunk's arithmetic only where there are several chunks
  disc_b64_b1    that, and a step of one block (B = 1: 2^12 only): no division
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


if CHUNK.search(tile):   # the tile before 8ab0bbf (call 3), which computed its chunk unconditionally
    out = src + "\n" + "".join(edit(*a) for a in (("ng", True), ("1c", False, True), ("ng1c", True, True),
                                                  ("lean", True, True, True)))
    open(d + "/dot_var.cu", "w").write(out)
else:
    print("variants.py: dot.cu's tile is 8ab0bbf's or later; dot_var.cu (call 3) needs the tile before it")


d_src = open(d + "/discount.cu").read()
m = re.search(r'extern "C" __global__ void __launch_bounds__\(256\) (discount_k0_\w+)_b64\(.*?\n}\n', d_src, re.S)
b64, d_prefix = m.group(0), m.group(1)
SPLIT = ("        const unsigned int c = nblk <= CT ? 0u : (unsigned int)w / CT, r = (unsigned int)w - c * CT;\n"
         "        const unsigned int lb = B - c * 128u < 128u ? B - c * 128u : 128u; /* chunk c's blocks a step */\n"
         "        const unsigned int s = r / lb, b = c * 128u + (r - s * lb);\n")
ONE = ("        unsigned int c = 0u, r = (unsigned int)w, lb = B;\n"
       "        if (nblk > CT) {\n"
       "            c = (unsigned int)w / CT;\n"
       "            r = (unsigned int)w - c * CT;\n"
       "            lb = B - c * 128u < 128u ? B - c * 128u : 128u;\n"
       "        }\n")
assert SPLIT in b64
variants = {"1c": ONE + "        const unsigned int s = r / lb, b = c * 128u + (r - s * lb);\n",
            "b1": ONE + "        const unsigned int s = r, b = c * 128u; (void)lb;\n"}
open(d + "/disc_var.cu", "w").write(d_src + "\n" + "".join(
    b64.replace(d_prefix + "_b64(", "disc_b64_%s(" % k).replace(SPLIT, v) for k, v in variants.items()))
