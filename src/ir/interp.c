/* Reference interpreter: evaluates a graph on host arrays exactly as
 * docs/ir.md defines every op.  It is the oracle every backend is tested
 * against, so it is written for clarity and exactness, not for speed. */
#include "ir.h"
#include "half.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* -- Element values ----------------------------------------------------------
 * Every element is loaded into a wide value, computed on and stored back:
 * signed integers sign-extended in i, unsigned integers and bool (0 or 1)
 * in u, floats in f.  An f32, f16 or bf16 element is held exactly in f and
 * computed on in float; store() rounds once to the element's dtype. */

typedef union value {
    int64_t i;
    uint64_t u;
    double f;
} value;

static int dt_bits(kf_dtype t) { return (int)kf_dtype_size(t) * 8; }

/* The int64 whose two's complement bits are x (no implementation-defined
 * conversion). */
static int64_t s64_from_bits(uint64_t x) { return x <= INT64_MAX ? (int64_t)x : -(int64_t)~x - 1; }

/* The bits of an integer or bool value, sign-extended to 64. */
static uint64_t int_bits(kf_dtype t, value v) { return kf_dt_is_sint(t) ? (uint64_t)v.i : v.u; }

/* The integer of dtype t held in the low bits of x: two's complement
 * wrap-around.  For bool, any nonzero x is true. */
static value int_wrap(kf_dtype t, uint64_t x)
{
    value v;
    int w = dt_bits(t);
    if (t == KF_BOOL) {
        v.u = x != 0;
        return v;
    }
    uint64_t mask = w == 64 ? UINT64_MAX : ((uint64_t)1 << w) - 1;
    x &= mask;
    if (kf_dt_is_sint(t)) {
        if (w < 64 && ((x >> (w - 1)) & 1))
            x |= ~mask;
        v.i = s64_from_bits(x);
    } else {
        v.u = x;
    }
    return v;
}

/* -- Rounding to 16-bit floats: kf_f64_to_f16/bf16 in half.h; integers
 * go through round-to-odd too, as below. */

/* m (an integer magnitude) rounded to float by round-to-odd. */
static float u64_round_odd(uint64_t m)
{
    int sh = 0;
    while ((m >> sh) >= ((uint64_t)1 << 24))
        sh++;
    uint64_t top = m >> sh;
    if (sh > 0 && (m & (((uint64_t)1 << sh) - 1)) != 0)
        top |= 1;
    return ldexpf((float)top, sh);
}


/* -- Loading and storing elements ------------------------------------------- */

/* Element k of a dense array of dtype t. */
static value load(kf_dtype t, const void *base, int64_t k)
{
    const unsigned char *p = (const unsigned char *)base + (size_t)k * kf_dtype_size(t);
    value v = { 0 };
    switch (t) {
    case KF_BOOL: v.u = *p != 0; break;
    case KF_I8: { int8_t x; memcpy(&x, p, 1); v.i = x; break; }
    case KF_I16: { int16_t x; memcpy(&x, p, 2); v.i = x; break; }
    case KF_I32: { int32_t x; memcpy(&x, p, 4); v.i = x; break; }
    case KF_I64: memcpy(&v.i, p, 8); break;
    case KF_U8: v.u = *p; break;
    case KF_U16: { uint16_t x; memcpy(&x, p, 2); v.u = x; break; }
    case KF_U32: { uint32_t x; memcpy(&x, p, 4); v.u = x; break; }
    case KF_U64: memcpy(&v.u, p, 8); break;
    case KF_F16: { uint16_t h; memcpy(&h, p, 2); v.f = kf_f16_to_f32(h); break; }
    case KF_BF16: { uint16_t h; memcpy(&h, p, 2); v.f = kf_bf16_to_f32(h); break; }
    case KF_F32: { float x; memcpy(&x, p, 4); v.f = x; break; }
    case KF_F64: memcpy(&v.f, p, 8); break;
    default: break;
    }
    return v;
}

/* Store v as element k of a dense array of dtype t.  Integers keep their
 * low bits; floats round to nearest even, once. */
static void store(kf_dtype t, void *base, int64_t k, value v)
{
    unsigned char *p = (unsigned char *)base + (size_t)k * kf_dtype_size(t);
    switch (t) {
    case KF_BOOL: *p = v.u != 0; break;
    case KF_I8: case KF_U8: *p = (uint8_t)int_bits(t, v); break;
    case KF_I16: case KF_U16: { uint16_t x = (uint16_t)int_bits(t, v); memcpy(p, &x, 2); break; }
    case KF_I32: case KF_U32: { uint32_t x = (uint32_t)int_bits(t, v); memcpy(p, &x, 4); break; }
    case KF_I64: case KF_U64: { uint64_t x = int_bits(t, v); memcpy(p, &x, 8); break; }
    case KF_F16: { uint16_t h = kf_f64_to_f16(v.f); memcpy(p, &h, 2); break; }
    case KF_BF16: { uint16_t h = kf_f64_to_bf16(v.f); memcpy(p, &h, 2); break; }
    case KF_F32: { float x = (float)v.f; memcpy(p, &x, 4); break; }
    case KF_F64: memcpy(p, &v.f, 8); break;
    default: break;
    }
}

/* -- Casts ------------------------------------------------------------------ */

/* x truncated toward zero into integer dtype t; NaN gives 0, values out of
 * range saturate to t's minimum or maximum. */
static value float_to_int(kf_dtype t, double x)
{
    value r = { 0 };
    int w = dt_bits(t);
    if (isnan(x))
        return r;
    double tx = trunc(x);
    if (kf_dt_is_sint(t)) {
        double lim = ldexp(1.0, w - 1); /* 2^(w-1), exact */
        int64_t max = (int64_t)(UINT64_MAX >> (65 - w));
        r.i = tx >= lim ? max : tx < -lim ? -max - 1 : (int64_t)tx;
    } else {
        double lim = ldexp(1.0, w);     /* 2^w, exact */
        uint64_t max = UINT64_MAX >> (64 - w);
        r.u = tx >= lim ? max : tx <= 0 ? 0 : (uint64_t)tx;
    }
    return r;
}

/* v of dtype 'from' converted to dtype 'to' (float results are rounded by
 * store(), which rounds a float-valued f exactly once). */
static value cast_value(kf_dtype from, kf_dtype to, value v)
{
    value r = { 0 };
    if (kf_dt_is_float(from)) {
        if (to == KF_BOOL)
            r.u = v.f != 0; /* NaN is true */
        else if (kf_dt_is_int(to))
            r = float_to_int(to, v.f);
        else
            r.f = v.f;
        return r;
    }
    uint64_t bits = int_bits(from, v);
    if (to == KF_BOOL) {
        r.u = bits != 0;
        return r;
    }
    if (kf_dt_is_int(to))
        return int_wrap(to, bits);
    bool sgn = kf_dt_is_sint(from);
    switch (to) {
    case KF_F64: r.f = sgn ? (double)v.i : (double)v.u; break;
    case KF_F32: r.f = sgn ? (float)v.i : (float)v.u; break;
    default: { /* f16, bf16: round-to-odd to float, store() rounds to nearest even */
        bool neg = sgn && v.i < 0;
        float m = u64_round_odd(neg ? 0 - bits : bits);
        r.f = neg ? -(double)m : (double)m;
        break;
    }
    }
    return r;
}

/* -- Integer and bool elementwise ops --------------------------------------- *
 * Computed on 64-bit two's complement bits and wrapped to the dtype, so no
 * signed overflow ever happens in C. */

static value int_ew(kf_op op, kf_dtype t, const value *x)
{
    bool s = kf_dt_is_sint(t);
    int w = dt_bits(t);
    uint64_t a = int_bits(t, x[0]), b = int_bits(t, x[1]);
    int64_t ia = x[0].i, ib = x[1].i; /* meaningful when s */
    value r = { 0 };
    switch (op) {
    case KF_OP_NEG: return int_wrap(t, 0 - a);
    case KF_OP_ABS: return s && ia < 0 ? int_wrap(t, 0 - a) : x[0];
    case KF_OP_SIGN:
        if (s)
            r.i = ia > 0 ? 1 : ia < 0 ? -1 : 0;
        else
            r.u = a != 0;
        return r;
    case KF_OP_NOT: return t == KF_BOOL ? int_wrap(t, !a) : int_wrap(t, ~a);
    case KF_OP_ADD: return int_wrap(t, a + b);
    case KF_OP_SUB: return int_wrap(t, a - b);
    case KF_OP_MUL: return int_wrap(t, a * b);
    case KF_OP_DIV:
        if (b == 0)
            return r;
        if (s)   /* x / -1 is -x, which wraps for the minimum */
            return ib == -1 ? int_wrap(t, 0 - a) : int_wrap(t, (uint64_t)(ia / ib));
        return int_wrap(t, a / b);
    case KF_OP_MOD:
        if (b == 0 || (s && ib == -1))
            return r;
        return s ? int_wrap(t, (uint64_t)(ia % ib)) : int_wrap(t, a % b);
    case KF_OP_MIN: return (s ? ib < ia : b < a) ? x[1] : x[0];
    case KF_OP_MAX: return (s ? ib > ia : b > a) ? x[1] : x[0];
    case KF_OP_AND: return int_wrap(t, a & b);
    case KF_OP_OR: return int_wrap(t, a | b);
    case KF_OP_XOR: return int_wrap(t, a ^ b);
    case KF_OP_SHL:
    case KF_OP_SHR:
        /* b as an amount: negative (signed) or >= the width gives 0 */
        if ((s && ib < 0) || b >= (uint64_t)w)
            return r;
        if (op == KF_OP_SHL)
            return int_wrap(t, a << b);
        if (s) /* arithmetic, written without shifting a negative number */
            return int_wrap(t, ia >= 0 ? (uint64_t)(ia >> b) : ~((uint64_t)(~ia >> b)));
        return int_wrap(t, a >> b);
    case KF_OP_CLAMP: {
        value lo[2] = { x[0], x[1] };
        value m = int_ew(KF_OP_MAX, t, lo);
        value hi[2] = { m, x[2] };
        return int_ew(KF_OP_MIN, t, hi);
    }
    default: return r;
    }
}

/* -- Float elementwise ops ---------------------------------------------------
 * One definition, made twice: in double for f64 (F64(sqrt) is sqrt) and in
 * float for f32, f16 and bf16 (F32(sqrt) is sqrtf). */

#define F64(fn) fn
#define F32(fn) fn##f

#define KF_FLOAT_OPS(P, T, F)                                                       \
    /* NaN if either is NaN; -0 is below +0 */                                      \
    static T P##_min(T a, T b)                                                      \
    {                                                                               \
        if (isnan(a) || isnan(b))                                                   \
            return (T)NAN;                                                          \
        if (a == b)                                                                 \
            return signbit(a) ? a : b;                                              \
        return a < b ? a : b;                                                       \
    }                                                                               \
    static T P##_max(T a, T b)                                                      \
    {                                                                               \
        if (isnan(a) || isnan(b))                                                   \
            return (T)NAN;                                                          \
        if (a == b)                                                                 \
            return signbit(a) ? b : a;                                              \
        return a > b ? a : b;                                                       \
    }                                                                               \
    static T P##_ew(kf_op op, T a, T b, T c)                                        \
    {                                                                               \
        switch (op) {                                                               \
        case KF_OP_NEG: return -a;                                                  \
        case KF_OP_ABS: return F(fabs)(a);                                          \
        case KF_OP_SIGN: return a > 0 ? (T)1 : a < 0 ? (T)-1 : a; /* +-0, NaN */    \
        case KF_OP_SQRT: return F(sqrt)(a);                                         \
        case KF_OP_RSQRT: return (T)1 / F(sqrt)(a);                                 \
        case KF_OP_CBRT: return F(cbrt)(a);                                         \
        case KF_OP_EXP: return F(exp)(a);                                           \
        case KF_OP_EXP2: return F(exp2)(a);                                         \
        case KF_OP_EXPM1: return F(expm1)(a);                                       \
        case KF_OP_LOG: return F(log)(a);                                           \
        case KF_OP_LOG2: return F(log2)(a);                                         \
        case KF_OP_LOG10: return F(log10)(a);                                       \
        case KF_OP_LOG1P: return F(log1p)(a);                                       \
        case KF_OP_SIN: return F(sin)(a);                                           \
        case KF_OP_COS: return F(cos)(a);                                           \
        case KF_OP_TAN: return F(tan)(a);                                           \
        case KF_OP_ASIN: return F(asin)(a);                                         \
        case KF_OP_ACOS: return F(acos)(a);                                         \
        case KF_OP_ATAN: return F(atan)(a);                                         \
        case KF_OP_SINH: return F(sinh)(a);                                         \
        case KF_OP_COSH: return F(cosh)(a);                                         \
        case KF_OP_TANH: return F(tanh)(a);                                         \
        case KF_OP_ERF: return F(erf)(a);                                           \
        case KF_OP_FLOOR: return F(floor)(a);                                       \
        case KF_OP_CEIL: return F(ceil)(a);                                         \
        case KF_OP_ROUND: return F(round)(a); /* half away from zero */             \
        case KF_OP_TRUNC: return F(trunc)(a);                                       \
        case KF_OP_RCP: return (T)1 / a;                                            \
        case KF_OP_SIGMOID: return (T)1 / ((T)1 + F(exp)(-a));                      \
        case KF_OP_ADD: return a + b;                                               \
        case KF_OP_SUB: return a - b;                                               \
        case KF_OP_MUL: return a * b;                                               \
        case KF_OP_DIV: return a / b;                                               \
        case KF_OP_MOD: return F(fmod)(a, b);                                       \
        case KF_OP_POW: return F(pow)(a, b);                                        \
        case KF_OP_MIN: return P##_min(a, b);                                       \
        case KF_OP_MAX: return P##_max(a, b);                                       \
        case KF_OP_ATAN2: return F(atan2)(a, b);                                    \
        case KF_OP_HYPOT: return F(hypot)(a, b);                                    \
        case KF_OP_COPYSIGN: return isnan(b) ? F(fabs)(a) : F(copysign)(a, b);      \
        case KF_OP_FMA: return F(fma)(a, b, c);                                     \
        case KF_OP_CLAMP: return P##_min(P##_max(a, b), c);                         \
        default: return (T)NAN;                                                     \
        }                                                                           \
    }

KF_FLOAT_OPS(f64, double, F64)
KF_FLOAT_OPS(f32, float, F32)

#undef KF_FLOAT_OPS
#undef F64
#undef F32

/* -- Any elementwise op ------------------------------------------------------ */

/* Comparison op of two values of dtype t.  NaN is unordered: every
 * comparison with it is false except ne. */
static bool compare(kf_op op, kf_dtype t, value x, value y)
{
    int c;
    if (kf_dt_is_float(t)) {
        if (isnan(x.f) || isnan(y.f))
            return op == KF_OP_NE;
        c = (x.f > y.f) - (x.f < y.f);
    } else if (kf_dt_is_sint(t)) {
        c = (x.i > y.i) - (x.i < y.i);
    } else {
        c = (x.u > y.u) - (x.u < y.u);
    }
    switch (op) {
    case KF_OP_LT: return c < 0;
    case KF_OP_LE: return c <= 0;
    case KF_OP_GT: return c > 0;
    case KF_OP_GE: return c >= 0;
    case KF_OP_EQ: return c == 0;
    case KF_OP_NE: return c != 0;
    default: return false;
    }
}

/* Elementwise op (not select) on operands of dtype 'in', result dtype 'out'. */
static value eval_ew(kf_op op, kf_dtype in, kf_dtype out, const value *a)
{
    value r = { 0 };
    switch ((kf_rule)kf_ir_op(op)->rule) {
    case T_CAST: return cast_value(in, out, a[0]);
    case T_CMP: r.u = compare(op, in, a[0], a[1]); return r;
    case T_FPRED:
        r.u = op == KF_OP_ISNAN ? isnan(a[0].f) != 0 : op == KF_OP_ISINF ? isinf(a[0].f) != 0 : isfinite(a[0].f) != 0;
        return r;
    default: break;
    }
    if (in == KF_F64)
        r.f = f64_ew(op, a[0].f, a[1].f, a[2].f);
    else if (kf_dt_is_float(in))
        r.f = f32_ew(op, (float)a[0].f, (float)a[1].f, (float)a[2].f);
    else
        r = int_ew(op, in, a);
    return r;
}

/* -- Evaluation state -------------------------------------------------------- */

typedef struct nodeval {
    bool live;         /* some output depends on it */
    bool output;
    bool owned;        /* data was allocated here (an input's is the caller's) */
    int32_t last_use;  /* last live node that reads it */
    int64_t numel;
    int64_t shape[KF_MAX_RANK];
    void *data;        /* dense row-major, in the node's dtype */
} nodeval;

typedef struct interp {
    const kf_graph *g;
    nodeval *nv;         /* one per node */
    int64_t *symval;     /* per symbol: bound size, -1 while unbound */
    int32_t *symfrom;    /* per symbol: the input that bound it */
    bool index_error;    /* a take index was out of range (message written) */
    char *err;
    size_t errlen;
} interp;

static kf_status fail(interp *ip, kf_status s, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static kf_status fail(interp *ip, kf_status s, const char *fmt, ...)
{
    if (ip->err && ip->errlen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ip->err, ip->errlen, fmt, ap);
        va_end(ap);
    }
    return s;
}

/* "'name'" for a named node, "(node 7)" otherwise. */
static const char *label(const kf_graph *g, int32_t n, char *buf, size_t len)
{
    if (g->nodes[n].name)
        snprintf(buf, len, "'%s'", g->nodes[n].name);
    else
        snprintf(buf, len, "(node %d)", (int)n);
    return buf;
}

/* A runtime shape or index as "[3,4]". */
static const char *ints_str(int rank, const int64_t *v, char *buf, size_t len)
{
    size_t o = (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < rank && o < len; i++)
        o += (size_t)snprintf(buf + o, len - o, "%s%lld", i ? "," : "", (long long)v[i]);
    if (o < len)
        snprintf(buf + o, len - o, "]");
    return buf;
}

/* Elements in a shape; -1 when so many elements of 'size' bytes cannot be
 * addressed. */
static int64_t shape_numel(int rank, const int64_t *shape, size_t size)
{
    for (int i = 0; i < rank; i++)
        if (shape[i] == 0)
            return 0;
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        if (n > INT64_MAX / shape[i])
            return -1;
        n *= shape[i];
    }
    if ((uint64_t)n > SIZE_MAX / size)
        return -1;
    return n;
}

/* A fresh array of n elements of 'size' bytes (never NULL on success, even
 * when empty). */
static void *alloc_array(int64_t n, size_t size) { return malloc(n > 0 ? (size_t)n * size : 1); }

/* Advance a row-major multi-index by one (wrapping to zeros at the end). */
static void next_index(int rank, const int64_t *shape, int64_t *idx)
{
    for (int j = rank - 1; j >= 0; j--) {
        if (++idx[j] < shape[j])
            return;
        idx[j] = 0;
    }
}

static int64_t offset_of(int rank, const int64_t *idx, const int64_t *stride)
{
    int64_t o = 0;
    for (int j = 0; j < rank; j++)
        o += idx[j] * stride[j];
    return o;
}

/* -- Binding inputs ------------------------------------------------------------ */

static kf_status bind_inputs(interp *ip, const kf_host_array *inputs)
{
    const kf_graph *g = ip->g;
    char s1[200];
    for (int32_t i = 0; i < g->ninputs; i++) {
        int32_t n = g->inputs[i];
        const kf_irnode *x = &g->nodes[n];
        const kf_host_array *a = &inputs[i];
        const char *nm = x->name ? x->name : "?";
        if (a->dtype != (kf_dtype)x->dtype) {
            if (!kf_dt_is_valid((int)a->dtype))
                return fail(ip, KF_ERR_TYPE, "input '%s': invalid dtype %d, the graph wants %s", nm, (int)a->dtype,
                            kf_dtype_name((kf_dtype)x->dtype));
            return fail(ip, KF_ERR_TYPE, "input '%s' has dtype %s, the graph wants %s", nm, kf_dtype_name(a->dtype),
                        kf_dtype_name((kf_dtype)x->dtype));
        }
        if (a->rank != x->rank) {
            kf_ir_shape_str(g, x, s1, sizeof s1);
            return fail(ip, KF_ERR_SHAPE, "input '%s' has rank %d, the graph wants %d (%s)", nm, a->rank, x->rank, s1);
        }
        for (int j = 0; j < x->rank; j++) {
            int64_t d = a->shape[j], want = x->dims[j];
            if (d < 0)
                return fail(ip, KF_ERR_SHAPE, "input '%s': dimension %d is negative (%lld)", nm, j, (long long)d);
            if (want >= 0) {
                if (d != want) {
                    kf_ir_shape_str(g, x, s1, sizeof s1);
                    return fail(ip, KF_ERR_SHAPE, "input '%s': dimension %d is %lld, the graph wants %lld (%s)", nm, j,
                                (long long)d, (long long)want, s1);
                }
                continue;
            }
            int s = KF_IR_SYM_INDEX(want);
            if (ip->symval[s] < 0) {
                ip->symval[s] = d;
                ip->symfrom[s] = i;
            } else if (ip->symval[s] != d) {
                const char *first = g->nodes[g->inputs[ip->symfrom[s]]].name;
                return fail(ip, KF_ERR_SHAPE, "symbol '%s' is %lld in input '%s' but %lld in input '%s'", g->syms[s],
                            (long long)ip->symval[s], first ? first : "?", (long long)d, nm);
            }
        }
        nodeval *v = &ip->nv[n];
        memcpy(v->shape, a->shape, (size_t)x->rank * sizeof v->shape[0]);
        v->numel = shape_numel(x->rank, v->shape, kf_dtype_size(a->dtype));
        if (v->numel < 0)
            return fail(ip, KF_ERR_LIMIT, "input '%s': shape %s is too large to address", nm,
                        ints_str(x->rank, v->shape, s1, sizeof s1));
        if (v->numel > 0 && !a->data)
            return fail(ip, KF_ERR_INVALID_ARG, "input '%s': data is NULL", nm);
        v->data = a->data;
    }
    return KF_OK;
}

/* -- Planning: live nodes, runtime shapes, last uses ----------------------------- */

static kf_status plan(interp *ip)
{
    const kf_graph *g = ip->g;
    char s1[200], s2[80];
    for (int32_t i = 0; i < g->noutputs; i++)
        ip->nv[g->outputs[i]].live = ip->nv[g->outputs[i]].output = true;
    for (int32_t n = g->nnodes - 1; n >= 0; n--) {
        const kf_irnode *x = &g->nodes[n];
        if (!ip->nv[n].live)
            continue;
        for (int k = 0; k < x->nargs; k++) {
            if (x->args[k] < 0 || x->args[k] >= n)
                return fail(ip, KF_ERR_INVALID_ARG, "node %d: operand %d is not an earlier node", (int)n, k + 1);
            ip->nv[x->args[k]].live = true;
        }
    }
    for (int32_t n = 0; n < g->nnodes; n++) {
        const kf_irnode *x = &g->nodes[n];
        nodeval *v = &ip->nv[n];
        if (!v->live)
            continue;
        for (int k = 0; k < x->nargs; k++)
            ip->nv[x->args[k]].last_use = n;
        if (x->op == KF_OP_INPUT)
            continue;
        for (int j = 0; j < x->rank; j++) {
            int64_t d = x->dims[j];
            if (d < 0) {
                int s = KF_IR_SYM_INDEX(d);
                if (ip->symval[s] < 0)
                    return fail(ip, KF_ERR_SHAPE, "%s %s: symbol '%s' is not bound by any input",
                                kf_ir_op((kf_op)x->op)->name, label(g, n, s2, sizeof s2), g->syms[s]);
                d = ip->symval[s];
            }
            v->shape[j] = d;
        }
        v->numel = shape_numel(x->rank, v->shape, kf_dtype_size((kf_dtype)x->dtype));
        if (v->numel < 0)
            return fail(ip, KF_ERR_LIMIT, "%s %s: shape %s is too large to address", kf_ir_op((kf_op)x->op)->name,
                        label(g, n, s2, sizeof s2), ints_str(x->rank, v->shape, s1, sizeof s1));
    }
    return KF_OK;
}

/* -- Evaluating one node ------------------------------------------------------------ */

static value lit_value(const kf_irnode *x)
{
    value v = { 0 };
    if (kf_dt_is_float((kf_dtype)x->dtype))
        v.f = x->lit.f;
    else if (kf_dt_is_sint((kf_dtype)x->dtype))
        v.i = x->lit.i;
    else
        v.u = x->lit.u;
    return v;
}

/* Row-major strides of an operand of shape ashape (rank arank) seen through
 * an output of rank orank: 0 along axes the operand lacks (aligned from the
 * right) or has as size 1 (NumPy broadcasting). */
static void broadcast_strides(int orank, int arank, const int64_t *ashape, int64_t *stride)
{
    int64_t s = 1;
    for (int j = orank - 1; j >= 0; j--) {
        int k = j - (orank - arank);
        if (k < 0) {
            stride[j] = 0;
            continue;
        }
        stride[j] = ashape[k] == 1 ? 0 : s;
        s *= ashape[k];
    }
}

static void eval_elementwise(interp *ip, int32_t n)
{
    const kf_graph *g = ip->g;
    const kf_irnode *x = &g->nodes[n];
    nodeval *out = &ip->nv[n];
    int64_t stride[3][KF_MAX_RANK] = { { 0 } }, idx[KF_MAX_RANK] = { 0 };
    kf_dtype dt[3] = { KF_BOOL, KF_BOOL, KF_BOOL };
    const unsigned char *src[3] = { NULL, NULL, NULL };
    for (int k = 0; k < x->nargs; k++) {
        const kf_irnode *a = &g->nodes[x->args[k]];
        broadcast_strides(x->rank, a->rank, ip->nv[x->args[k]].shape, stride[k]);
        dt[k] = (kf_dtype)a->dtype;
        src[k] = ip->nv[x->args[k]].data;
    }
    size_t size = kf_dtype_size((kf_dtype)x->dtype);
    for (int64_t e = 0; e < out->numel; e++, next_index(x->rank, out->shape, idx)) {
        if (x->op == KF_OP_SELECT) { /* moves the chosen element's bits */
            int k = load(KF_BOOL, src[0], offset_of(x->rank, idx, stride[0])).u ? 1 : 2;
            memcpy((unsigned char *)out->data + (size_t)e * size,
                   src[k] + (size_t)offset_of(x->rank, idx, stride[k]) * size, size);
            continue;
        }
        value v[3] = { { 0 }, { 0 }, { 0 } };
        for (int k = 0; k < x->nargs; k++)
            v[k] = load(dt[k], src[k], offset_of(x->rank, idx, stride[k]));
        store((kf_dtype)x->dtype, out->data, e, eval_ew((kf_op)x->op, dt[0], (kf_dtype)x->dtype, v));
    }
}

static void eval_iota(interp *ip, int32_t n)
{
    const kf_irnode *x = &ip->g->nodes[n];
    nodeval *out = &ip->nv[n];
    int64_t inner = 1;
    for (int j = x->axis + 1; j < x->rank; j++)
        inner *= out->shape[j];
    for (int64_t e = 0; e < out->numel; e++) {
        value i = { .i = (e / inner) % out->shape[x->axis] };
        store((kf_dtype)x->dtype, out->data, e, cast_value(KF_I64, (kf_dtype)x->dtype, i));
    }
}

static void eval_take(interp *ip, int32_t n)
{
    const kf_graph *g = ip->g;
    const kf_irnode *x = &g->nodes[n];
    nodeval *out = &ip->nv[n];
    const nodeval *vec = &ip->nv[x->args[0]], *ix = &ip->nv[x->args[1]];
    kf_dtype it = (kf_dtype)g->nodes[x->args[1]].dtype;
    int64_t len = vec->shape[0];
    size_t size = kf_dtype_size((kf_dtype)x->dtype);
    for (int64_t e = 0; e < out->numel; e++) {
        value k = load(it, ix->data, e);
        bool ok = kf_dt_is_sint(it) ? k.i >= 0 && k.i < len : k.u < (uint64_t)len;
        unsigned char *dst = (unsigned char *)out->data + (size_t)e * size;
        if (ok) {
            memcpy(dst, (const unsigned char *)vec->data + (size_t)(kf_dt_is_sint(it) ? (uint64_t)k.i : k.u) * size,
                   size);
            continue;
        }
        memset(dst, 0, size);
        if (ip->index_error)
            continue;
        ip->index_error = true;
        int64_t pos[KF_MAX_RANK] = { 0 }, rest = e;
        for (int j = x->rank - 1; j >= 0; j--) {
            pos[j] = rest % out->shape[j];
            rest /= out->shape[j];
        }
        char lb[80], ps[200], ks[32];
        if (kf_dt_is_sint(it))
            snprintf(ks, sizeof ks, "%lld", (long long)k.i);
        else
            snprintf(ks, sizeof ks, "%llu", (unsigned long long)k.u);
        fail(ip, KF_ERR_INDEX, "take %s: index %s at position %s is out of range for length %lld",
             label(g, n, lb, sizeof lb), ks, ints_str(x->rank, pos, ps, sizeof ps), (long long)len);
    }
}

/* Running state of one reduction output. */
typedef struct racc {
    value v;         /* sum, product, extreme so far */
    int64_t count;   /* elements seen: the row-major position of the next one */
    int64_t best;    /* argmin/argmax: position of the best, -1 before any */
    bool nan;        /* argmin/argmax: best is the first NaN */
} racc;

static kf_status eval_reduce(interp *ip, int32_t n)
{
    const kf_graph *g = ip->g;
    const kf_irnode *x = &g->nodes[n];
    const kf_irnode *ax = &g->nodes[x->args[0]];
    const nodeval *in = &ip->nv[x->args[0]];
    nodeval *out = &ip->nv[n];
    kf_op op = (kf_op)x->op;
    kf_dtype t = (kf_dtype)ax->dtype;
    bool fl = kf_dt_is_float(t), sg = kf_dt_is_sint(t);
    if (out->numel == 0)
        return KF_OK;
    racc *acc = calloc((size_t)out->numel, sizeof *acc);
    if (!acc)
        return fail(ip, KF_ERR_NO_MEMORY, "out of memory");

    int w = dt_bits(t);
    for (int64_t o = 0; o < out->numel; o++) {
        racc *r = &acc[o];
        r->best = -1;
        switch (op) {
        case KF_OP_PROD:
            if (fl)
                r->v.f = 1;
            else
                r->v.u = 1;
            break;
        case KF_OP_RMIN: /* the identity: +inf, or the dtype's maximum */
            if (fl)
                r->v.f = INFINITY;
            else if (sg)
                r->v.i = (int64_t)(UINT64_MAX >> (65 - w));
            else
                r->v.u = UINT64_MAX >> (64 - w);
            break;
        case KF_OP_RMAX:
            if (fl)
                r->v.f = -INFINITY;
            else if (sg)
                r->v.i = -(int64_t)(UINT64_MAX >> (65 - w)) - 1;
            else
                r->v.u = 0;
            break;
        default: break; /* sum, mean: zero */
        }
    }

    int64_t idx[KF_MAX_RANK] = { 0 };
    for (int64_t e = 0; e < in->numel; e++, next_index(ax->rank, in->shape, idx)) {
        int64_t o = 0; /* row-major over the kept axes */
        for (int j = 0; j < ax->rank; j++)
            if (!(x->axes & (1u << j)))
                o = o * in->shape[j] + idx[j];
        racc *r = &acc[o];
        int64_t k = r->count++;
        value v = load(t, in->data, e);
        switch (op) {
        case KF_OP_SUM:
        case KF_OP_MEAN:
            if (fl)
                r->v.f += v.f;
            else
                r->v.u += int_bits(t, v);
            break;
        case KF_OP_PROD:
            if (fl)
                r->v.f *= v.f;
            else
                r->v.u *= int_bits(t, v);
            break;
        case KF_OP_RMIN:
            if (fl)
                r->v.f = f64_min(r->v.f, v.f);
            else if (sg ? v.i < r->v.i : v.u < r->v.u)
                r->v = v;
            break;
        case KF_OP_RMAX:
            if (fl)
                r->v.f = f64_max(r->v.f, v.f);
            else if (sg ? v.i > r->v.i : v.u > r->v.u)
                r->v = v;
            break;
        case KF_OP_ARGMIN:
        case KF_OP_ARGMAX:
            if (r->nan)
                break;
            if (fl && isnan(v.f)) {
                r->nan = true;
                r->best = k;
                break;
            }
            if (r->best < 0 || compare(op == KF_OP_ARGMIN ? KF_OP_LT : KF_OP_GT, t, v, r->v)) {
                r->best = k;
                r->v = v;
            }
            break;
        default: break;
        }
    }

    for (int64_t o = 0; o < out->numel; o++) {
        racc *r = &acc[o];
        value v = r->v;
        switch (op) {
        case KF_OP_SUM:
        case KF_OP_PROD:
            if (!fl)
                v = int_wrap(t, r->v.u);
            break;
        case KF_OP_MEAN: v.f = r->count ? r->v.f / (double)r->count : NAN; break;
        case KF_OP_ARGMIN:
        case KF_OP_ARGMAX: v.i = r->best; break;
        default: break;
        }
        store((kf_dtype)x->dtype, out->data, o, v);
    }
    free(acc);
    return KF_OK;
}

static kf_status eval_node(interp *ip, int32_t n)
{
    const kf_irnode *x = &ip->g->nodes[n];
    nodeval *out = &ip->nv[n];
    size_t size = kf_dtype_size((kf_dtype)x->dtype);
    if (x->op == KF_OP_INPUT) {
        if (!out->output)
            return KF_OK;
        /* an output is always a fresh array: copy the caller's */
        void *copy = alloc_array(out->numel, size);
        if (!copy)
            return fail(ip, KF_ERR_NO_MEMORY, "out of memory");
        if (out->numel > 0)
            memcpy(copy, out->data, (size_t)out->numel * size);
        out->data = copy;
        out->owned = true;
        return KF_OK;
    }
    out->data = alloc_array(out->numel, size);
    if (!out->data)
        return fail(ip, KF_ERR_NO_MEMORY, "out of memory");
    out->owned = true;
    switch ((kf_kind)kf_ir_op((kf_op)x->op)->kind) {
    case KF_KIND_LEAF: store((kf_dtype)x->dtype, out->data, 0, lit_value(x)); return KF_OK;
    case KF_KIND_EW: eval_elementwise(ip, n); return KF_OK;
    case KF_KIND_INDEX:
        if (x->op == KF_OP_IOTA)
            eval_iota(ip, n);
        else
            eval_take(ip, n);
        return KF_OK;
    case KF_KIND_REDUCE: return eval_reduce(ip, n);
    }
    return fail(ip, KF_ERR_INVALID_ARG, "node %d: bad op kind", (int)n);
}

/* -- Entry point ------------------------------------------------------------------ */

kf_status kf_interpret(const kf_graph *g, const kf_host_array *inputs, int ninputs, kf_host_array *outputs,
                       int noutputs, char *errbuf, size_t errlen)
{
    interp ip = { .g = g, .err = errbuf, .errlen = errlen };
    if (errbuf && errlen > 0)
        errbuf[0] = 0;
    if (outputs && noutputs > 0)
        memset(outputs, 0, (size_t)noutputs * sizeof *outputs);
    if (!g)
        return fail(&ip, KF_ERR_INVALID_ARG, "graph is NULL");
    if (g->status != KF_OK)
        return fail(&ip, g->status, "%s", g->err);
    if (g->noutputs == 0)
        return fail(&ip, KF_ERR_INVALID_ARG, "graph '%s' has no outputs", g->name);
    if (ninputs != g->ninputs)
        return fail(&ip, KF_ERR_INVALID_ARG, "graph '%s' has %d input%s, got %d", g->name, (int)g->ninputs,
                    g->ninputs == 1 ? "" : "s", ninputs);
    if (noutputs != g->noutputs)
        return fail(&ip, KF_ERR_INVALID_ARG, "graph '%s' has %d output%s, got %d", g->name, (int)g->noutputs,
                    g->noutputs == 1 ? "" : "s", noutputs);
    if (ninputs > 0 && !inputs)
        return fail(&ip, KF_ERR_INVALID_ARG, "inputs is NULL");
    if (!outputs)
        return fail(&ip, KF_ERR_INVALID_ARG, "outputs is NULL");

    kf_status s = KF_OK;
    ip.nv = calloc((size_t)g->nnodes, sizeof *ip.nv);
    ip.symval = malloc((size_t)(g->nsyms > 0 ? g->nsyms : 1) * sizeof *ip.symval);
    ip.symfrom = malloc((size_t)(g->nsyms > 0 ? g->nsyms : 1) * sizeof *ip.symfrom);
    if (!ip.nv || !ip.symval || !ip.symfrom) {
        s = fail(&ip, KF_ERR_NO_MEMORY, "out of memory");
        goto done;
    }
    for (int32_t i = 0; i < g->nsyms; i++) {
        ip.symval[i] = -1;
        ip.symfrom[i] = -1;
    }

    s = bind_inputs(&ip, inputs);
    if (s == KF_OK)
        s = plan(&ip);
    for (int32_t n = 0; s == KF_OK && n < g->nnodes; n++) {
        if (!ip.nv[n].live)
            continue;
        s = eval_node(&ip, n);
        /* free what no later node reads */
        const kf_irnode *x = &g->nodes[n];
        for (int k = 0; k < x->nargs; k++) {
            nodeval *a = &ip.nv[x->args[k]];
            if (a->last_use == n && a->owned && !a->output) {
                free(a->data);
                a->data = NULL;
                a->owned = false;
            }
        }
    }
    if (s == KF_OK && ip.index_error)
        s = KF_ERR_INDEX; /* the message was written when it was found */
    if (s == KF_OK || s == KF_ERR_INDEX) {
        for (int32_t i = 0; i < g->noutputs; i++) {
            int32_t n = g->outputs[i];
            const kf_irnode *x = &g->nodes[n];
            kf_host_array *o = &outputs[i];
            o->data = ip.nv[n].data;
            o->dtype = (kf_dtype)x->dtype;
            o->rank = x->rank;
            memcpy(o->shape, ip.nv[n].shape, (size_t)x->rank * sizeof o->shape[0]);
            ip.nv[n].data = NULL;
            ip.nv[n].owned = false;
        }
    }

done:
    if (ip.nv)
        for (int32_t n = 0; n < g->nnodes; n++)
            if (ip.nv[n].owned)
                free(ip.nv[n].data);
    free(ip.nv);
    free(ip.symval);
    free(ip.symfrom);
    return s;
}
