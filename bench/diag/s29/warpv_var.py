# Session 29: copies of kfuse's emitted rowsum `warpv` edited part by part,
# appended to DIR/rowsum.cu as DIR/warpv_var.cu (bench/diag/s29/rows_hand.py
# PROBE=var loads them):
#   wv_clamp: the row clamped to M - 1 for the loads instead of the
#             `if (o < M)` around them (the store keeps its guard);
#   wv_off32: the row's offset c0 * st0_0 in 32 bits (valid only while it
#             fits: a measure of the 64-bit multiply, not a candidate);
#   wv_both:  both;
#   wv_32:    both, and the rows (M, ob, o, c0) in 32 bits too (valid only
#             under 2^32 rows: again a measure, not a candidate);
#   wv_r32:   wv_32 without the clamp (the `if (o < M)` kept);
#   wv_32r1:  wv_32 with one round of 1024 and no tail (valid only for rows
#             of 1024: a measure of the round loop and its tail);
#   wv_sel, wv_sel32 (written here, not edited): the row clamped, and one
#             loop over rounds whose loads all go out unguarded from
#             addresses clamped into the row, each element's add kept or
#             dropped by a select (the same bits as the guarded adds);
#             wv_sel32 with 32-bit rows.
# Usage: python3 bench/diag/s29/warpv_var.py DIR
import re, sys

d = sys.argv[1]
src = open(d + "/rowsum.cu").read()
name = "rowsum_k0_931aaf52_warpv"
m = re.search(r'extern "C" __global__ void __launch_bounds__\(256\) %s\(.*?\n}\n' % name, src, re.S)
fn = m.group(0)


def edit(text, old, new):
    if old not in text:
        sys.exit("warpv_var.py: the emitted warpv changed: %r not found" % old)
    return text.replace(old, new)


def clamp(f):
    f = edit(f, "        unsigned long long t = o;\n", "        unsigned long long t = o < M ? o : M - 1;\n")
    return edit(f, "        if (o < M) {\n", "        {\n")


def off32(f):
    return edit(f, "(p0 + c0 * st0_0 + c1)", "(p0 + (unsigned int)c0 * (unsigned int)st0_0 + c1)")


def rows32(f):
    for old, new in (("const unsigned long long d0 = (unsigned long long)m.v[1];", "const unsigned int d0 = (unsigned int)m.v[1];"),
                     ("const unsigned long long M = 1 * d0;", "const unsigned int M = 1 * d0;"),
                     ("for (unsigned long long ob = (unsigned long long)blockIdx.x * 8; ob < M; ob = KF_NEXT(ob, (unsigned long long)gridDim.x * 8, M))",
                      "for (unsigned int ob = blockIdx.x * 8; ob < M; ob = KF_NEXT(ob, gridDim.x * 8, M))"),
                     ("const unsigned long long o = ob + lid / 32;", "const unsigned int o = ob + lid / 32;"),
                     ("unsigned long long t = o", "unsigned int t = o"),
                     ("const long long c0 = (long long)t;", "const unsigned int c0 = t;")):
        f = edit(f, old, new)
    return f


def one_round(f):
    f = edit(f, "for (; base + 1024 <= L; base += 1024) {", "for (; base < 1024; base += 1024) {")
    return edit(f, "if (base < L) {", "if (0) {")


SEL = r"""
extern "C" __global__ void __launch_bounds__(256) NAME(const float *__restrict__ a0,
    float *__restrict__ o0, const rowsum_k0_931aaf52_meta m, unsigned char *__restrict__ scratch)
{
    const float *p0 = a0;
    float *q0 = o0;
    const IX M = (IX)m.v[1];
    const unsigned int L = (unsigned int)m.v[2];
    const long long st0_0 = (long long)m.v[3], st1_0 = (long long)m.v[5];
    const unsigned int lid = (unsigned int)threadIdx.x, lane = lid % 32;
    for (IX ob = (IX)blockIdx.x * 8; ob < M; ob = KF_NEXT(ob, (IX)gridDim.x * 8, M)) {
        const IX o = ob + lid / 32;
        const SX c0 = (SX)(o < M ? o : M - 1);
        const float *row = p0 + c0 * (SX)st0_0;
        float wa0[8];
#pragma unroll
        for (int vt = 0; vt < 8; vt++)
            wa0[vt] = 0.0f;
        for (unsigned int base = 0; base < L; base += 1024) {
            unsigned int w0[8][4];
#pragma unroll
            for (int vt = 0; vt < 8; vt++) {
                const unsigned int gi = base + ((unsigned int)vt * 32 + lane) * 4;
                const uint4 v = ((const uint4 *)(row + (gi < L ? gi : L - 4)))[0];
                w0[vt][0] = v.x;
                w0[vt][1] = v.y;
                w0[vt][2] = v.z;
                w0[vt][3] = v.w;
            }
#pragma unroll
            for (int vt = 0; vt < 8; vt++) {
                const unsigned int gi = base + ((unsigned int)vt * 32 + lane) * 4;
#pragma unroll
                for (int l = 0; l < 4; l++) {
                    float r0;
                    rowsum_k0_931aaf52_body(__uint_as_float(w0[vt][l]), &r0);
                    const float s = __fadd_rn(wa0[vt], r0);
                    wa0[vt] = gi < L ? s : wa0[vt];
                }
            }
        }
        wa0[0] = __fadd_rn(wa0[0], wa0[4]);
        wa0[1] = __fadd_rn(wa0[1], wa0[5]);
        wa0[2] = __fadd_rn(wa0[2], wa0[6]);
        wa0[3] = __fadd_rn(wa0[3], wa0[7]);
        wa0[0] = __fadd_rn(wa0[0], wa0[2]);
        wa0[1] = __fadd_rn(wa0[1], wa0[3]);
        wa0[0] = __fadd_rn(wa0[0], wa0[1]);
        float acc0 = wa0[0];
        for (int s = 16; s > 0; s >>= 1)
            acc0 = __fadd_rn(acc0, __shfl_down_sync(0xffffffffu, acc0, s));
        if (o < M && lane == 0)
            q0[c0 * (SX)st1_0] = acc0;
    }
}
"""

out = [src]
for tag, f in (("clamp", clamp), ("off32", off32), ("both", lambda f: off32(clamp(f))),
               ("32", lambda f: rows32(off32(clamp(f)))), ("r32", lambda f: rows32(off32(f))), ("32r1", lambda f: one_round(rows32(off32(clamp(f)))))):
    out.append(f(fn).replace(name, "wv_" + tag))
out.append(SEL.replace("NAME", "wv_sel").replace("IX", "unsigned long long").replace("SX", "long long"))
out.append(SEL.replace("NAME", "wv_sel32").replace("IX", "unsigned int").replace("SX", "unsigned int"))
open(d + "/warpv_var.cu", "w").write("\n".join(out))
