# Session 20: edits of the emitted entry points, written beside them by
# kernels.sh (DIR holds boxplus.cu and gather_boxplus.cu from fusec emit):
# - bx_ld.cu: kernels/fast.cuh, the boxplus module, and its c64 and h64
#   with plain loads (bx_c64_plain, bx_h64_plain): __ldca, ld.global.ca,
#   as in Triton's kernel, where kfuse's const __restrict__ inputs get
#   ld.global.nc.
# - gb_var.cu: the gather_boxplus module, kernels/gb_layouts.cu, and g64
#   with its gathered load evict_last in L1 and L2 (gb_g64_el, Triton's
#   hint), in L2 only (gb_g64_l2), or plain (gb_g64_plain: __ldca), and
#   g64 with two points a thread (gb_g64_k2, a block's 512 points); and
#   kfuse's h64 (where fusec emits it for take kernels) in 32 bits
#   (gb_h64_u32), with the take stride 1 (gb_h64_ts1), and both.
# Usage: python3 bench/diag/s20/variants.py DIR
import os, re, sys

here, out = os.path.dirname(os.path.abspath(__file__)), sys.argv[1]


def read(path):
    with open(path) as f:
        return f.read()


def entry(src, suffix):
    """the text of the entry point whose name ends in suffix, and its name"""
    m = re.search(r'extern "C" __global__ void __launch_bounds__\(256\) (\w+_%s)\(' % suffix, src)
    return src[m.start():src.index('\n}\n', m.start()) + 3], m.group(1)


def variant(text, name, new, edits):
    text = text.replace(name + "(", new + "(")
    for old, rep in edits:
        assert old in text, (new, old)
        text = text.replace(old, rep)
    return text


bx = read(os.path.join(out, "boxplus.cu"))
parts = [read(os.path.join(here, "kernels", "fast.cuh")), bx]
for v, vt in (("c64", "uint4"), ("h64", "uint2")):
    t, name = entry(bx, v)
    parts.append(variant(t, name, "bx_%s_plain" % v, [("((const %s *)p%d)[iv]" % (vt, k), "__ldca((const %s *)p%d + iv)" % (vt, k))
                                                       for k in (0, 1)]))
with open(os.path.join(out, "bx_ld.cu"), "w") as f:
    f.write("\n".join(parts))

gb = read(os.path.join(out, "gather_boxplus.cu"))
parts = [gb, read(os.path.join(here, "kernels", "gb_layouts.cu"))]
t, name = entry(gb, "g64")
load = "p0[i3 * ts0]"
parts.append(variant(t, name, "gb_g64_el", [(load, "gb_ld_last(p0 + i3 * ts0)")]))
parts.append(variant(t, name, "gb_g64_l2", [(load, "gb_ld_l2last(p0 + i3 * ts0)")]))
parts.append(variant(t, name, "gb_g64_plain", [(load, "__ldca(p0 + i3 * ts0)")]))
parts.append(variant(t, name, "gb_g64_k2", [(" * 4;", " * 2;"), (" * 4 + ", " * 2 + "),
                                             ("[4] = { 0 };", "[2] = { 0 };"), ("3[4];", "3[2];"),
                                             ("k < 4", "k < 2")]))
if "_h64(" in gb:   # kfuse's h64 of a take kernel (session 20's change): in 32 bits, and with the take stride 1
    t, name = entry(gb, "h64")
    u32 = [("    const unsigned long long %s =" % v, "    const unsigned int %s =" % v) for v in ("n", "nvec", "nth", "tid")]
    u32.append(("for (unsigned long long iv = tid;", "for (unsigned int iv = tid;"))
    parts.append(variant(t, name, "gb_h64_u32", u32))
    parts.append(variant(t, name, "gb_h64_ts1", [(load, "p0[i3]")]))
    parts.append(variant(t, name, "gb_h64_u32_ts1", u32 + [(load, "p0[i3]")]))
with open(os.path.join(out, "gb_var.cu"), "w") as f:
    f.write("\n".join(parts))
