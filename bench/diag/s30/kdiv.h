/* a / b correctly rounded (f32), with no slow-path call: in f64 every f32 operand is normal and no f32
 * quotient over- or underflows; two Newton steps from rcp.approx.ftz.f64 and one residual step put the
 * quotient within about 1 ulp of f64 (2^-52), and an f32 quotient lies at least 2^-49 (relative) from
 * the nearest f32 rounding midpoint, so rounding it to f32 is the correct rounding.  Zeros, infinities
 * and NaNs take a * r0, their IEEE quotient. */
static __device__ __forceinline__ float kf_div_f64(float a, float b)
{
    const double A = (double)a, B = (double)b;
    double r0;
    asm("rcp.approx.ftz.f64 %0, %1;" : "=d"(r0) : "d"(B));
    double e = __fma_rn(-B, r0, 1.0);
    double r = __fma_rn(r0, e, r0);
    e = __fma_rn(-B, r, 1.0);
    r = __fma_rn(r, e, r);
    double q = __dmul_rn(A, r);
    const double res = __fma_rn(-B, q, A);
    q = __fma_rn(res, r, q);
    const bool plain = fabsf(a) < __int_as_float(0x7f800000) && a != 0.0f &&
                       fabsf(b) < __int_as_float(0x7f800000) && b != 0.0f;
    return __double2float_rn(plain ? q : __dmul_rn(A, r0));
}
