# Session 36: copies of kfuse's emitted rowsum `warpv` (DIR/rowsum.cu, the
# name found, not assumed), appended as DIR/warpv_var.cu:
#   wv_clamp: the row clamped to M - 1 for the loads instead of the
#             `if (o < M)` around them, the store's guard kept (s29's);
#   wv_lo:    no `if (o < M)`: the rounds' bound is 0 for a warp past the
#             last row (`Lo = o < M ? L : 0`), so it loads nothing and its
#             row index is never used for an address;
#   wv_32:    s29's wv_32 (the clamp, rows and row offset in 32 bits; valid
#             only under 2^32 rows and offsets: a measure, not a candidate);
#   wv_r32c:  the clamp and the rows in 32 bits, the row offset (row times
#             stride) still 64-bit.
# Usage: python3 bench/diag/s36/warpv_var.py DIR  (prints the warpv's name)
import re, sys

d = sys.argv[1]
src = open(d + "/rowsum.cu").read()
m = re.search(r'extern "C" __global__ void __launch_bounds__\(256\) (rowsum_k0_[0-9a-f]+_warpv)\(.*?\n}\n', src, re.S)
name, fn = m.group(1), m.group(0)


def edit(text, old, new, count=1):
    if text.count(old) != count:
        sys.exit("warpv_var.py: the emitted warpv changed: %r found %d times" % (old, text.count(old)))
    return text.replace(old, new)


def clamp(f):
    f = edit(f, "        unsigned long long t = o;\n", "        unsigned long long t = o < M ? o : M - 1;\n")
    return edit(f, "        if (o < M) {\n", "        {\n")


def lo(f):
    f = edit(f, "        if (o < M) {\n", "        {\n            const unsigned int Lo = o < M ? L : 0;\n")
    f = edit(f, "for (; base + 1024 <= L; base += 1024) {", "for (; base + 1024 <= Lo; base += 1024) {")
    return edit(f, "if (base < L) {", "if (base < Lo) {")


def off32(f):
    return edit(f, "(p0 + c0 * st0_0 + c1)", "(p0 + (unsigned int)c0 * (unsigned int)st0_0 + c1)", 2)


def rows32(f):
    for old, new in (("const unsigned long long d0 = (unsigned long long)m.v[1];", "const unsigned int d0 = (unsigned int)m.v[1];"),
                     ("const unsigned long long M = 1 * d0;", "const unsigned int M = 1 * d0;"),
                     ("for (unsigned long long ob = (unsigned long long)blockIdx.x * 8; ob < M; ob = KF_NEXT(ob, (unsigned long long)gridDim.x * 8, M))",
                      "for (unsigned int ob = blockIdx.x * 8; ob < M; ob = KF_NEXT(ob, gridDim.x * 8, M))"),
                     ("const unsigned long long o = ob + lid / 32;", "const unsigned int o = ob + lid / 32;"),
                     ("unsigned long long t = o", "unsigned int t = o"),
                     ("const long long c0 = (long long)t;", "const long long c0 = (long long)t;")):
        f = edit(f, old, new)
    return f


out = [src]
for tag, f in (("clamp", clamp), ("lo", lo), ("32", lambda f: off32(rows32(clamp(f)))), ("r32c", lambda f: rows32(clamp(f)))):
    out.append(f(fn).replace(name, "wv_" + tag))
open(d + "/warpv_var.cu", "w").write("\n".join(out))
print(name)
