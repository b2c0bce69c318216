/* Sample data for kfuse tools and tests (fusec run, the runtime tests):
 * seeded random inputs suited to each graph input (take indices in range),
 * typed element access, and comparison of outputs with the reference
 * interpreter within per-dtype tolerances.  Header-only (static inline). */
#ifndef KF_SAMPLE_H
#define KF_SAMPLE_H

#include "half.h"
#include "ir.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct rt_rng {
    uint64_t s;
} rt_rng;

static inline uint64_t rt_next(rt_rng *r)
{
    r->s += 0x9e3779b97f4a7c15ull;
    uint64_t z = r->s;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static inline double rt_unif(rt_rng *r) { return (double)(rt_next(r) >> 11) * (1.0 / 9007199254740992.0); }

/* Store double v into element i of a dtype-typed array. */
static inline void rt_store(void *p, kf_dtype t, int64_t i, double v)
{
    switch (t) {
    case KF_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    case KF_I8: ((int8_t *)p)[i] = (int8_t)v; break;
    case KF_I16: ((int16_t *)p)[i] = (int16_t)v; break;
    case KF_I32: ((int32_t *)p)[i] = (int32_t)v; break;
    case KF_I64: ((int64_t *)p)[i] = (int64_t)v; break;
    case KF_U8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case KF_U16: ((uint16_t *)p)[i] = (uint16_t)v; break;
    case KF_U32: ((uint32_t *)p)[i] = (uint32_t)v; break;
    case KF_U64: ((uint64_t *)p)[i] = (uint64_t)v; break;
    case KF_F16: ((uint16_t *)p)[i] = kf_f32_to_f16((float)v); break;
    case KF_BF16: ((uint16_t *)p)[i] = kf_f32_to_bf16((float)v); break;
    case KF_F32: ((float *)p)[i] = (float)v; break;
    case KF_F64: ((double *)p)[i] = v; break;
    default: break;
    }
}

static inline double rt_load(const void *p, kf_dtype t, int64_t i)
{
    switch (t) {
    case KF_BOOL: return ((const uint8_t *)p)[i];
    case KF_I8: return ((const int8_t *)p)[i];
    case KF_I16: return ((const int16_t *)p)[i];
    case KF_I32: return ((const int32_t *)p)[i];
    case KF_I64: return (double)((const int64_t *)p)[i];
    case KF_U8: return ((const uint8_t *)p)[i];
    case KF_U16: return ((const uint16_t *)p)[i];
    case KF_U32: return ((const uint32_t *)p)[i];
    case KF_U64: return (double)((const uint64_t *)p)[i];
    case KF_F16: return kf_f16_to_f32(((const uint16_t *)p)[i]);
    case KF_BF16: return kf_bf16_to_f32(((const uint16_t *)p)[i]);
    case KF_F32: return ((const float *)p)[i];
    case KF_F64: return ((const double *)p)[i];
    default: return 0;
    }
}

/* Largest take-source length for which input 'node' is a take index, or 0. */
static inline int64_t rt_take_len(const kf_graph *g, int32_t node, const int64_t *symval)
{
    int64_t len = 0;
    for (int32_t i = 0; i < g->nnodes; i++) {
        const kf_irnode *x = &g->nodes[i];
        if (x->op == KF_OP_TAKE && x->args[1] == node) {
            int64_t d = g->nodes[x->args[0]].dims[0];
            int64_t l = d < 0 ? symval[KF_IR_SYM_INDEX(d)] : d;
            if (len == 0 || l < len)
                len = l;
        }
    }
    return len;
}

/* Random value for an input of dtype t: floats in [-2, 2] (never all
 * zero), integers small and nonzero-heavy, take indices in range. */
static inline double rt_value(rt_rng *r, kf_dtype t, int64_t take_len)
{
    if (take_len > 0)
        return (double)(rt_next(r) % (uint64_t)take_len);
    if (t == KF_BOOL)
        return (double)(rt_next(r) & 1);
    if (kf_dt_is_float(t))
        return rt_unif(r) * 4.0 - 2.0;
    int64_t v = (int64_t)(rt_next(r) % 61) - 30;
    if (kf_dt_is_uint(t) && v < 0)
        v = -v;
    return (double)v;
}

/* Allocate and fill input i of g as a dense host array: shape from symval
 * (g's symbol order), seeded random values from rng suited to its dtype,
 * take indices in range.  Returns the element count, or -1 when out of
 * memory (a->data is then NULL).  Release a->data with free(). */
static inline int64_t rt_fill_input(const kf_graph *g, int i, const int64_t *symval, rt_rng *rng, kf_host_array *a)
{
    const kf_irnode *x = &g->nodes[g->inputs[i]];
    a->dtype = (kf_dtype)x->dtype;
    a->rank = x->rank;
    int64_t n = 1;
    for (int d = 0; d < x->rank; d++) {
        a->shape[d] = x->dims[d] < 0 ? symval[KF_IR_SYM_INDEX(x->dims[d])] : x->dims[d];
        n *= a->shape[d];
    }
    if (!(a->data = malloc((size_t)n * kf_dtype_size(a->dtype) + 8)))
        return -1;
    int64_t tl = rt_take_len(g, g->inputs[i], symval);
    for (int64_t e = 0; e < n; e++)
        rt_store(a->data, a->dtype, e, rt_value(rng, a->dtype, tl));
    return n;
}

/* Tolerance of a dtype, relative to the output's largest magnitude. */
static inline double rt_tol(kf_dtype t)
{
    switch (t) {
    case KF_F16: return 1e-2;
    case KF_BF16: return 3e-2;
    case KF_F32: return 2e-4;
    case KF_F64: return 1e-9;
    default: return 0;
    }
}

/* Compare n elements of got against want; returns the number of mismatches
 * and the largest error in *maxerr.  Integers and bools are bit-exact; floats
 * within rt_tol(t) * (|want| + scale) where scale is the largest |want|,
 * NaN only against NaN, infinities exactly. */
static inline int64_t rt_compare(const void *got, const void *want, kf_dtype t, int64_t n, double *maxerr,
                                 int64_t *first_bad)
{
    double scale = 0;
    for (int64_t i = 0; i < n; i++) {
        double w = rt_load(want, t, i);
        if (isfinite(w) && fabs(w) > scale)
            scale = fabs(w);
    }
    int64_t bad = 0;
    *maxerr = 0;
    *first_bad = -1;
    for (int64_t i = 0; i < n; i++) {
        double a = rt_load(got, t, i), b = rt_load(want, t, i);
        size_t es = kf_dtype_size(t);
        bool ok;
        if (!kf_dt_is_float(t))
            ok = memcmp((const char *)got + (size_t)i * es, (const char *)want + (size_t)i * es, es) == 0;
        else if (isnan(b) || isnan(a))
            ok = isnan(a) && isnan(b);
        else if (isinf(b) || isinf(a))
            ok = a == b;
        else {
            double e = fabs(a - b);
            if (e > *maxerr)
                *maxerr = e;
            ok = e <= rt_tol(t) * (fabs(b) + scale);
        }
        if (!ok && bad++ == 0)
            *first_bad = i;
    }
    return bad;
}

/* The backend a test names on its command line ("cuda", "opencl", "cpu");
 * KF_BACKEND_AUTO, after a usage message on stderr naming prog, for a
 * missing or unknown name. */
static inline kf_backend rt_backend_arg(const char *prog, const char *name)
{
    kf_backend b = !name                         ? KF_BACKEND_AUTO
                   : strcmp(name, "cuda") == 0   ? KF_BACKEND_CUDA
                   : strcmp(name, "opencl") == 0 ? KF_BACKEND_OPENCL
                   : strcmp(name, "cpu") == 0    ? KF_BACKEND_CPU
                                                 : KF_BACKEND_AUTO;
    if (b == KF_BACKEND_AUTO)
        fprintf(stderr, "usage: %s cuda|opencl|cpu (got '%s')\n", prog, name ? name : "");
    return b;
}

#endif
