# Session 16: hand-edited copies of discount's b64 entry point, written to
# DIR/disc_b64var.cu, to find what makes the four-vector b64 slower than a
# flat layout of the same shape:
#   <x>_u32:   the vector indices (nvec, iv0, jv, iv, ov) in 32 bits
#   <x>_nodiv: the two 32-bit divides replaced by shifts, valid only at
#              discount 2^20 (t = 16, m = k = 256: one chunk of B blocks a step)
#   <x>_u32_nodiv: both
# for x1 (b64 as emitted at 4ef94c9: one vector a thread, B = 128) and x4
# (four vectors, B = 32).
# Usage: python3 bench/diag/s16/variants.py DIR   (after kernels.sh has filled DIR)
import re, sys

out = sys.argv[1]


def entry(path, name):
    src = open(path).read()
    m = re.search(r'extern "C" __global__ void __launch_bounds__\(256\) (\w+_b64)\(', src)
    return src[:src.index('extern "C" __global__')], src[m.start():src.index('\n}\n', m.start()) + 3].replace(
        m.group(1) + "(", name + "(")


def u32(k):
    lines = []
    for ln in k.split("\n"):
        if re.search(r"\b(nvec|iv0|jv|iv|ov) =", ln):
            ln = ln.replace("unsigned long long", "unsigned int")
        lines.append(ln)
    return "\n".join(lines)


def nodiv(k, B, chunk):
    shift = B.bit_length() - 1
    k2 = re.sub(r"const unsigned int c = \(unsigned int\)w / CT, r = \(unsigned int\)w - c \* CT;",
                "const unsigned int c = 0, r = (unsigned int)w;", k)
    k2 = re.sub(r"const unsigned int s = r / lb, b = c \* %du \+ \(r - s \* lb\);" % chunk,
                "const unsigned int s = r >> %d, b = r & %du;" % (shift, B - 1), k2)
    assert k2.count("r >> ") == 1 and "w / CT" not in k2, "b64's text changed: update variants.py"
    return k2


head, x1 = entry(out + "/discount_b64x1.cu", "x1")
_, x4 = entry(out + "/discount_b64x4.cu", "x4")
parts = [head]
for name, k, B, chunk in (("x1", x1, 128, 256), ("x4", x4, 32, 64)):
    parts += [u32(k).replace(name + "(", name + "_u32("), nodiv(k, B, chunk).replace(name + "(", name + "_nodiv("),
              nodiv(u32(k), B, chunk).replace(name + "(", name + "_u32_nodiv(")]
open(out + "/disc_b64var.cu", "w").write("\n".join(parts))
