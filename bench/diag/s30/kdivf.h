/* The fast path of CUDA's f32 division (rcp.approx, one Newton step, one residual step) with no range
 * check and no slow path: correctly rounded only where nothing under- or overflows (the probe's inputs). */
static __device__ __forceinline__ float kf_div_nf(float a, float b)
{
    float r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(b));
    const float e = __fmaf_rn(-b, r, 1.0f);
    r = __fmaf_rn(r, e, r);
    const float q = __fmul_rn(a, r);
    const float res = __fmaf_rn(-b, q, a);
    return __fmaf_rn(res, r, q);
}
