/* rowsum_k0_931aaf52_warp: one 32-thread group per output (at most one tile), the tile variant's order */
extern "C" __global__ void __launch_bounds__(256) rowsum_k0_931aaf52_warp(const float *__restrict__ a0,
    float *__restrict__ o0, const rowsum_k0_931aaf52_meta m, unsigned char *__restrict__ scratch)
{
    const float *p0 = a0;
    float *q0 = o0;
    const unsigned long long d0 = (unsigned long long)m.v[1]; /* m */
    const unsigned int d1 = (unsigned int)m.v[2]; /* n */
    const long long st0_0 = (long long)m.v[3];
    const long long st0_1 = (long long)m.v[4];
    const long long st1_0 = (long long)m.v[5];
    const unsigned long long M = 1 * d0;
    const unsigned int L = 1 * d1; /* outputs, reduced elements each */
    const int gvec = d1 % 4 == 0 &&
        st0_1 == 1 && (unsigned long long)p0 % 16 == 0 && (d0 == 1 || st0_0 % 4 == 0);
    const unsigned int lid = (unsigned int)threadIdx.x, lane = lid % 32;
    for (unsigned long long ob = (unsigned long long)blockIdx.x * 8; ob < M; ob = KF_NEXT(ob, (unsigned long long)gridDim.x * 8, M)) {
        const unsigned long long o = ob + lid / 32;
        unsigned long long t = o;
        const long long c0 = (long long)t;
        float wa0[8];
#pragma unroll
        for (int vt = 0; vt < 8; vt++) {
            wa0[vt] = 0.0f;
        }
        if (o < M) {
            if (gvec) {
                unsigned int base = 0;
                for (; base + 1024 <= L; base += 1024) {
#pragma unroll
                    for (int vb = 0; vb < 8; vb += 8) {
                        unsigned int w0[8][4];
#pragma unroll
                        for (int vi = 0; vi < 8; vi++) {
                            const int vt = vb + vi;
                            const unsigned int gi = base + ((unsigned int)vt * 32 + lane) * 4;
                            (void)gi; /* unread when no coordinate is */
                            {
                                unsigned int u = gi;
                                const int c1 = (int)u;
                                (void)c1;
                                {
                                    const uint4 v = ((const uint4 *)(p0 + c0 * st0_0 + c1))[0];
                                    w0[vi][0] = v.x;
                                    w0[vi][1] = v.y;
                                    w0[vi][2] = v.z;
                                    w0[vi][3] = v.w;
                                }
                            }
                        }
#pragma unroll
                        for (int vi = 0; vi < 8; vi++) {
                            const int vt = vb + vi;
                            const unsigned int gi = base + ((unsigned int)vt * 32 + lane) * 4;
                            (void)gi; /* unread when no coordinate is */
#pragma unroll
                            for (int l = 0; l < 4; l++) {
                                const unsigned int ri = gi + (unsigned int)l;
                                (void)ri; /* unread when no coordinate or index is */
                                const float x0 = __uint_as_float((l < 2 ? (l == 0 ? w0[vi][0] : w0[vi][1]) : (l == 2 ? w0[vi][2] : w0[vi][3])));
                                float r0;
                                rowsum_k0_931aaf52_body(x0, &r0);
                                wa0[vt] = __fadd_rn(wa0[vt], r0);
                            }
                        }
                    }
                }
                if (base < L) {
#pragma unroll
                    for (int vb = 0; vb < 8; vb += 8) {
                        unsigned int w0[8][4];
#pragma unroll
                        for (int vi = 0; vi < 8; vi++) {
                            const int vt = vb + vi;
                            const unsigned int gi = base + ((unsigned int)vt * 32 + lane) * 4;
                            if (gi < L) {
                                {
                                    unsigned int u = gi;
                                    const int c1 = (int)u;
                                    (void)c1;
                                    {
                                        const uint4 v = ((const uint4 *)(p0 + c0 * st0_0 + c1))[0];
                                        w0[vi][0] = v.x;
                                        w0[vi][1] = v.y;
                                        w0[vi][2] = v.z;
                                        w0[vi][3] = v.w;
                                    }
                                }
                            }
                        }
#pragma unroll
                        for (int vi = 0; vi < 8; vi++) {
                            const int vt = vb + vi;
                            const unsigned int gi = base + ((unsigned int)vt * 32 + lane) * 4;
                            if (gi < L) {
#pragma unroll
                                for (int l = 0; l < 4; l++) {
                                    const unsigned int ri = gi + (unsigned int)l;
                                    (void)ri; /* unread when no coordinate or index is */
                                    const float x0 = __uint_as_float((l < 2 ? (l == 0 ? w0[vi][0] : w0[vi][1]) : (l == 2 ? w0[vi][2] : w0[vi][3])));
                                    float r0;
                                    rowsum_k0_931aaf52_body(x0, &r0);
                                    wa0[vt] = __fadd_rn(wa0[vt], r0);
                                }
                            }
                        }
                    }
                }
            } else {
                for (unsigned int base = 0; base < L; base += 1024) {
#pragma unroll
                    for (int vt = 0; vt < 8; vt++) {
                        const unsigned int gi = base + ((unsigned int)vt * 32 + lane) * 4;
#pragma unroll 1
                        for (int l = 0; l < 4; l++) {
                            const unsigned int ri = gi + (unsigned int)l;
                            if (ri < L) {
                                unsigned int u = ri;
                                const int c1 = (int)u;
                                const float x0 = p0[c0 * st0_0 + c1 * st0_1];
                                float r0;
                                rowsum_k0_931aaf52_body(x0, &r0);
                                wa0[vt] = __fadd_rn(wa0[vt], r0);
                            }
                        }
                    }
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
        for (int s = 16; s > 0; s >>= 1) {
            const float b = __shfl_down_sync(0xffffffffu, acc0, s);
            acc0 = __fadd_rn(acc0, b);
        }
        if (o < M && lane == 0) {
            q0[c0 * st1_0] = acc0;
        }
    }
}
