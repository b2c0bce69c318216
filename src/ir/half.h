/* f16 and bf16 <-> f32 conversions, round to nearest even, NaN kept quiet.
 * Used wherever kfuse itself touches 16-bit floats (literals, interpreter). */
#ifndef KF_HALF_H
#define KF_HALF_H

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

static inline uint32_t kf_f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float kf_f32_from_bits(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

static inline float kf_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    if (exp == 0x1f)                                  /* inf, nan */
        return kf_f32_from_bits(sign | 0x7f800000u | (man << 13) | (man ? 0x400000u : 0));
    if (exp == 0) {
        if (man == 0)
            return kf_f32_from_bits(sign);
        float v = (float)man * (1.0f / 16777216.0f);  /* subnormal: man * 2^-24 */
        return sign ? -v : v;
    }
    return kf_f32_from_bits(sign | ((exp + 112) << 23) | (man << 13));
}

static inline uint16_t kf_f32_to_f16(float f)
{
    uint32_t u = kf_f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u)                              /* nan: keep it quiet */
        return sign | 0x7e00u | (uint16_t)((a >> 13) & 0x3ffu);
    if (a >= 0x477ff000u)                             /* rounds to >= 65520: inf */
        return sign | 0x7c00u;
    if (a < 0x38800000u) {                            /* below 2^-14: subnormal or zero */
        /* scale so the f16 subnormal unit (2^-24) is 1.0 and let the FPU
         * round to nearest even */
        float v = kf_f32_from_bits(a) * 16777216.0f;
        return sign | (uint16_t)(uint32_t)__builtin_nearbyintf(v);
    }
    uint32_t r = a + 0xfffu + ((a >> 13) & 1u);      /* round to nearest even */
    return sign | (uint16_t)((r - 0x38000000u) >> 13);
}

static inline float kf_bf16_to_f32(uint16_t h) { return kf_f32_from_bits((uint32_t)h << 16); }

static inline uint16_t kf_f32_to_bf16(float f)
{
    uint32_t u = kf_f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* d rounded to float by round-to-odd: d itself when it is a float, else the
 * neighbour of the two around d whose last bit is odd.  That keeps enough
 * information for a second rounding to nearest even at 11 or 8 bits to be
 * correct: f64 -> f16/bf16 below round once, as a GPU's direct conversion. */
static inline float kf_f32_round_odd(double d)
{
    float f = (float)d;
    if (isnan(d) || (double)f == d)
        return f;
    if (isinf(f))   /* past FLT_MAX: the odd neighbour is FLT_MAX */
        return d > 0 ? FLT_MAX : -FLT_MAX;
    if (kf_f32_bits(f) & 1u)
        return f;
    return nextafterf(f, (double)f < d ? INFINITY : -INFINITY);
}

static inline uint16_t kf_f64_to_f16(double d) { return kf_f32_to_f16(kf_f32_round_odd(d)); }
static inline uint16_t kf_f64_to_bf16(double d) { return kf_f32_to_bf16(kf_f32_round_odd(d)); }

#endif /* KF_HALF_H */
