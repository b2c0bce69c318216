/* Session 40: put in front of the emitted boxplus module to swap one part
 * of its accurate math at a time (the emitted body calls expf, logf and
 * __fdiv_rn by name):
 *   -DKF_DDIV      the division without a branch: the f32 quotient from a
 *                  double one (kf_ddiv below), correctly rounded as
 *                  __fdiv_rn is
 *   -DKF_FAST_DIV  __fdividef (approximate)
 *   -DKF_FAST_LOG  __logf     (approximate)
 *   -DKF_FAST_EXP  __expf     (approximate)
 *
 * kf_ddiv: a and b are exact in double; r ~ 1/b from rcp.approx.ftz.f64,
 * one Newton step on e = 1 - b r with the e^2 term (relative error ~e^3),
 * q = a r and one residual correction: q within about half an ulp of
 * double of a/b.  A quotient of floats that is not a float midpoint lies at
 * least 2^-50 (relative) from every midpoint (its numerator and
 * denominator have 24 bits), so rounding q to float gives the correctly
 * rounded quotient; an exact midpoint (subnormal results) is q itself, and
 * cvt.rn breaks the tie to even.  Where q0 = a r is zero, infinite or NaN
 * (a = 0, b = 0, an infinity or a NaN) q0 is already IEEE's answer and the
 * Newton step would make a NaN of it. */
static __device__ __forceinline__ float kf_ddiv(float a, float b)
{
    const double ad = (double)a, bd = (double)b;
    double r;
    asm("rcp.approx.ftz.f64 %0, %1;" : "=d"(r) : "d"(bd));
    const double q0 = ad * r;
#ifdef KF_DDIV_NAIVE   /* divcheck's own check that it can fail: no Newton step */
    return (float)q0;
#endif
    double e = fma(-bd, r, 1.0);
    e = fma(e, e, e);
    r = fma(r, e, r);
    double q = ad * r;
    q = fma(fma(-bd, q, ad), r, q);
    return (float)(fabs(q0) < __longlong_as_double(0x7ff0000000000000LL) && q0 != 0.0 ? q : q0);
}

#if defined(KF_DDIV)
#define __fdiv_rn(x, y) kf_ddiv(x, y)
#endif
#if defined(KF_FAST_DIV)
#define __fdiv_rn(x, y) __fdividef(x, y)
#endif
#if defined(KF_FAST_LOG)
#define logf(x) __logf(x)
#endif
#if defined(KF_FAST_EXP)
#define expf(x) __expf(x)
#endif
