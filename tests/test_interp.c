/* Reference interpreter: every op of ops.def on every dtype family against
 * values worked out by hand (docs/ir.md is the specification), broadcasting,
 * symbols, take's index errors, reductions, argument checks and, where the
 * linker can wrap malloc, every allocation failing in turn. */
#include "check.h"
#include "ir.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define N_(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define NaN ((double)NAN)
#define INF ((double)INFINITY)

static const kf_dtype FLOATS[4] = { KF_F16, KF_BF16, KF_F32, KF_F64 };
static const kf_dtype SINTS[4] = { KF_I8, KF_I16, KF_I32, KF_I64 };
static const kf_dtype UINTS[4] = { KF_U8, KF_U16, KF_U32, KF_U64 };

/* -- Elements, written out here independently of half.h and interp.c -------- */

static uint64_t get_bits(kf_dtype t, const void *buf, int64_t i)
{
    const unsigned char *p = (const unsigned char *)buf + (size_t)i * kf_dtype_size(t);
    switch (kf_dtype_size(t)) {
    case 1: return *p;
    case 2: { uint16_t v; memcpy(&v, p, 2); return v; }
    case 4: { uint32_t v; memcpy(&v, p, 4); return v; }
    default: { uint64_t v; memcpy(&v, p, 8); return v; }
    }
}

static void put_bits(kf_dtype t, void *buf, int64_t i, uint64_t b)
{
    unsigned char *p = (unsigned char *)buf + (size_t)i * kf_dtype_size(t);
    switch (kf_dtype_size(t)) {
    case 1: *p = (uint8_t)b; break;
    case 2: { uint16_t v = (uint16_t)b; memcpy(p, &v, 2); break; }
    case 4: { uint32_t v = (uint32_t)b; memcpy(p, &v, 4); break; }
    default: memcpy(p, &b, 8); break;
    }
}

/* The f16 bits of v when v is exactly an f16, else -1. */
static int32_t f16_exact(double v)
{
    if (isnan(v))
        return 0x7e00;
    uint32_t sign = signbit(v) ? 0x8000u : 0;
    double a = fabs(v);
    if (isinf(a))
        return (int32_t)(sign | 0x7c00u);
    if (a == 0)
        return (int32_t)sign;
    int e;
    double m = frexp(a, &e) * 2; /* a = m * 2^(e-1), m in [1, 2) */
    e -= 1;
    if (e > 15)
        return -1;
    if (e < -14) { /* subnormal: k units of 2^-24 */
        double k = ldexp(a, 24);
        return k == floor(k) ? (int32_t)(sign | (uint32_t)k) : -1;
    }
    double f = (m - 1) * 1024;
    if (f != floor(f))
        return -1;
    return (int32_t)(sign | (uint32_t)(e + 15) << 10 | (uint32_t)f);
}

static double f16_value(uint16_t h)
{
    int e = (h >> 10) & 31, f = h & 1023;
    double v = e == 31 ? (f ? NaN : INF) : e == 0 ? ldexp(f, -24) : ldexp(1024 + f, e - 25);
    return (h & 0x8000) ? -v : v;
}

/* bf16 is the top half of an f32. */
static int32_t bf16_exact(double v)
{
    if (isnan(v))
        return 0x7fc0;
    float f = (float)v;
    if ((double)f != v)
        return -1;
    uint32_t u;
    memcpy(&u, &f, 4);
    return (u & 0xffffu) ? -1 : (int32_t)(u >> 16);
}

static double bf16_value(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Store v as element i of a float array; false when v is not exact in t. */
static bool put_f(kf_dtype t, void *buf, int64_t i, double v)
{
    switch (t) {
    case KF_F16:
    case KF_BF16: {
        int32_t b = t == KF_F16 ? f16_exact(v) : bf16_exact(v);
        if (b < 0)
            return false;
        put_bits(t, buf, i, (uint64_t)b);
        return true;
    }
    case KF_F32: {
        float f = (float)v;
        uint32_t u;
        memcpy(&u, &f, 4);
        put_bits(t, buf, i, u);
        return isnan(v) || (double)f == v;
    }
    default: {
        uint64_t u;
        memcpy(&u, &v, 8);
        put_bits(t, buf, i, u);
        return true;
    }
    }
}

static double get_f(kf_dtype t, const void *buf, int64_t i)
{
    uint64_t b = get_bits(t, buf, i);
    switch (t) {
    case KF_F16: return f16_value((uint16_t)b);
    case KF_BF16: return bf16_value((uint16_t)b);
    case KF_F32: { uint32_t u = (uint32_t)b; float f; memcpy(&f, &u, 4); return f; }
    case KF_F64: { double d; memcpy(&d, &b, 8); return d; }
    default: return (double)b;
    }
}

/* Integers and bool: the low bits of v (so -1 is the maximum of an unsigned
 * dtype); bool stores v != 0. */
static void put_i(kf_dtype t, void *buf, int64_t i, int64_t v)
{
    put_bits(t, buf, i, t == KF_BOOL ? (uint64_t)(v != 0) : (uint64_t)v);
}

static uint64_t low_bits(kf_dtype t, int64_t v)
{
    size_t w = kf_dtype_size(t) * 8;
    return w == 64 ? (uint64_t)v : (uint64_t)v & (((uint64_t)1 << w) - 1);
}

/* One unit in the last place of dtype t at v (the subnormal unit below the
 * normal range). */
static double ulp_of(kf_dtype t, double v)
{
    int mant = t == KF_F16 ? 10 : t == KF_BF16 ? 7 : t == KF_F32 ? 23 : 52;
    int emin = t == KF_F16 ? -14 : t == KF_F64 ? -1022 : -126;
    int e = emin;
    if (v != 0) {
        frexp(fabs(v), &e);
        e -= 1;
        if (e < emin)
            e = emin;
    }
    return ldexp(1, e - mant);
}

/* Element i of buf (dtype t) against want: the same bits (-0 is not +0)
 * and any NaN for NaN; with ulps > 0 and a finite want, within that many
 * units in the last place. */
static bool same_f(kf_dtype t, const void *buf, int64_t i, double want, double ulps)
{
    double got = get_f(t, buf, i);
    if (isnan(want))
        return isnan(got);
    if (ulps > 0 && isfinite(want))
        return fabs(got - want) <= ulps * ulp_of(t, want);
    unsigned char tmp[8];
    if (!put_f(t, tmp, 0, want))
        return false; /* the expected value itself is not a value of t */
    return get_bits(t, buf, i) == get_bits(t, tmp, 0);
}

/* Element i of two arrays of dtype t: the same bits, or both NaN. */
static bool same_elem(kf_dtype t, const void *a, const void *b, int64_t i)
{
    if (kf_dt_is_float(t)) {
        double x = get_f(t, a, i), y = get_f(t, b, i);
        if (isnan(x) || isnan(y))
            return isnan(x) && isnan(y);
    }
    if (t == KF_BOOL)
        return (get_bits(t, a, i) != 0) == (get_bits(t, b, i) != 0);
    return get_bits(t, a, i) == get_bits(t, b, i);
}

static const char *show(kf_dtype t, const void *buf, int64_t i, char *s, size_t n)
{
    uint64_t b = get_bits(t, buf, i);
    if (kf_dt_is_float(t)) {
        snprintf(s, n, "%.17g (bits %#llx)", get_f(t, buf, i), (unsigned long long)b);
    } else if (kf_dt_is_sint(t)) {
        size_t w = kf_dtype_size(t) * 8;
        int64_t v = w < 64 && (b >> (w - 1)) ? (int64_t)(b | ~(((uint64_t)1 << w) - 1)) : (int64_t)b;
        snprintf(s, n, "%lld", (long long)v);
    } else {
        snprintf(s, n, "%llu", (unsigned long long)b);
    }
    return s;
}

/* -- Running graphs ------------------------------------------------------------ */

/* A message buffer seen as a plain pointer (CHECK_CONTAINS tests for NULL). */
static const char *txt(const char *s) { return s; }

static kf_host_array harr(kf_dtype t, int rank, const int64_t *shape, const void *data)
{
    kf_host_array a = { .data = (void *)data, .dtype = t, .rank = rank };
    for (int i = 0; i < rank; i++)
        a.shape[i] = shape[i];
    return a;
}

#define SHAPE(...) ((const int64_t[]){ __VA_ARGS__ })

static void free_outputs(kf_host_array *out, int n)
{
    for (int i = 0; i < n; i++) {
        kf_free(out[i].data);
        out[i].data = NULL;
    }
}

/* got has dtype t, the given shape and element by element the value of
 * want (bits, any NaN for NaN). */
static void expect_arr(const kf_host_array *got, kf_dtype t, int rank, const int64_t *shape, const void *want, int line)
{
    CHECK_MSG(got->dtype == t, "line %d: dtype %s, want %s", line, kf_dtype_name(got->dtype), kf_dtype_name(t));
    CHECK_MSG(got->rank == rank, "line %d: rank %d, want %d", line, got->rank, rank);
    if (got->dtype != t || got->rank != rank)
        return;
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        CHECK_MSG(got->shape[i] == shape[i], "line %d: dimension %d is %lld, want %lld", line, i,
                  (long long)got->shape[i], (long long)shape[i]);
        if (got->shape[i] != shape[i])
            return;
        n *= shape[i];
    }
    CHECK_MSG(got->data != NULL, "line %d: data is NULL", line);
    if (!got->data)
        return;
    for (int64_t i = 0; i < n; i++) {
        char s1[80], s2[80];
        CHECK_MSG(same_elem(t, got->data, want, i), "line %d: element %lld is %s, want %s", line, (long long)i,
                  show(t, got->data, i, s1, sizeof s1), show(t, want, i, s2, sizeof s2));
    }
}
#define EXPECT(got, t, rank, shape, want) expect_arr(got, t, rank, shape, want, __LINE__)

static kf_status run(const kf_graph *g, const kf_host_array *in, int nin, kf_host_array *out, int nout, char *err,
                     size_t errlen)
{
    return kf_interpret(g, in, nin, out, nout, err, errlen);
}

static const char *const arg_names[3] = { "a", "b", "c" };

/* y = op(a[, b[, c]]) (or cast a to rt) over 1-D inputs of n elements,
 * select's a bool and the others of dtype t.  Returns y's data (dtype rt),
 * or NULL after reporting why. */
static void *run_ew(kf_op op, int arity, kf_dtype t, kf_dtype rt, int n, void *const *in, int line)
{
    kf_graph *g = kf_graph_new("ew");
    kf_dim d = KF_DIM(n);
    kf_node x[3];
    kf_host_array ha[3];
    for (int k = 0; k < arity; k++) {
        kf_dtype at = op == KF_OP_SELECT && k == 0 ? KF_BOOL : t;
        x[k] = kf_input(g, arg_names[k], at, 1, &d);
        ha[k] = harr(at, 1, SHAPE(n), in[k]);
    }
    kf_node y = op == KF_OP_CAST ? kf_cast(g, x[0], rt) : kf_apply(g, op, arity, x);
    kf_output(g, y, "y");
    kf_host_array out = { 0 };
    char err[512] = "";
    kf_status s = kf_graph_verify(g);
    if (s == KF_OK)
        s = run(g, ha, arity, &out, 1, err, sizeof err);
    else
        snprintf(err, sizeof err, "%s", kf_graph_error(g));
    kf_graph_free(g);
    CHECK_MSG(s == KF_OK, "line %d: %s on %s: %s: %s", line, kf_op_name(op), kf_dtype_name(t), kf_status_string(s), err);
    if (s != KF_OK)
        return NULL;
    CHECK_MSG(out.dtype == rt && out.rank == 1 && out.shape[0] == n, "line %d: %s on %s: result is %s rank %d", line,
              kf_op_name(op), kf_dtype_name(t), kf_dtype_name(out.dtype), out.rank);
    return out.data;
}

static kf_dtype result_dtype(kf_op op, kf_dtype t)
{
    kf_rule r = (kf_rule)kf_ir_op(op)->rule;
    return r == T_CMP || r == T_FPRED ? KF_BOOL : t;
}

/* Float cases: operands a, b, c (as many as the op takes) and the result. */
typedef struct fcase {
    double a, b, c, want;
} fcase;

static void check_f(kf_op op, int arity, kf_dtype t, const fcase *cs, int n, double ulps, int line)
{
    kf_dtype rt = result_dtype(op, t);
    void *in[3] = { NULL, NULL, NULL };
    bool ok = true;
    for (int k = 0; k < arity; k++) {
        in[k] = calloc((size_t)n + 1, 8);
        for (int i = 0; i < n; i++) {
            double v = k == 0 ? cs[i].a : k == 1 ? cs[i].b : cs[i].c;
            if (op == KF_OP_SELECT && k == 0) {
                put_i(KF_BOOL, in[k], i, v != 0);
            } else if (!put_f(t, in[k], i, v)) {
                CHECK_MSG(false, "line %d: test input %.17g is not a %s", line, v, kf_dtype_name(t));
                ok = false;
            }
        }
    }
    void *y = ok ? run_ew(op, arity, t, rt, n, in, line) : NULL;
    for (int i = 0; y && i < n; i++) {
        char s[80];
        const fcase *c = &cs[i];
        if (rt == KF_BOOL)
            CHECK_MSG(get_bits(KF_BOOL, y, i) == (c->want != 0), "line %d: %s %s (%g, %g): got %d, want %d", line,
                      kf_op_name(op), kf_dtype_name(t), c->a, c->b, (int)get_bits(KF_BOOL, y, i), (int)c->want);
        else
            CHECK_MSG(same_f(t, y, i, c->want, ulps), "line %d: %s %s (%.17g, %.17g, %.17g): got %s, want %.17g", line,
                      kf_op_name(op), kf_dtype_name(t), c->a, c->b, c->c, show(t, y, i, s, sizeof s), c->want);
    }
    kf_free(y);
    for (int k = 0; k < 3; k++)
        free(in[k]);
}

/* Integer and bool cases; values by their low bits (see put_i). */
typedef struct icase {
    int64_t a, b, c, want;
} icase;

static void check_i(kf_op op, int arity, kf_dtype t, const icase *cs, int n, int line)
{
    kf_dtype rt = result_dtype(op, t);
    void *in[3] = { NULL, NULL, NULL };
    for (int k = 0; k < arity; k++) {
        in[k] = calloc((size_t)n + 1, 8);
        for (int i = 0; i < n; i++) {
            int64_t v = k == 0 ? cs[i].a : k == 1 ? cs[i].b : cs[i].c;
            put_i(op == KF_OP_SELECT && k == 0 ? KF_BOOL : t, in[k], i, v);
        }
    }
    void *y = run_ew(op, arity, t, rt, n, in, line);
    for (int i = 0; y && i < n; i++) {
        char s[80];
        const icase *c = &cs[i];
        uint64_t want = rt == KF_BOOL ? (uint64_t)(c->want != 0) : low_bits(rt, c->want);
        CHECK_MSG(get_bits(rt, y, i) == want, "line %d: %s %s (%lld, %lld, %lld): got %s, want %lld", line,
                  kf_op_name(op), kf_dtype_name(t), (long long)c->a, (long long)c->b, (long long)c->c,
                  show(rt, y, i, s, sizeof s), (long long)c->want);
    }
    kf_free(y);
    for (int k = 0; k < 3; k++)
        free(in[k]);
}

#define CHECK_F(op, arity, t, ulps, ...)                                      \
    do {                                                                      \
        static const fcase cs_[] = { __VA_ARGS__ };                           \
        check_f(op, arity, t, cs_, N_(cs_), ulps, __LINE__);                  \
    } while (0)
/* The same cases on f16, bf16, f32 and f64 (so every value must be exact
 * in all four, or ulps > 0). */
#define CHECK_F_ALL(op, arity, ulps, ...)                                     \
    for (int k_ = 0; k_ < 4; k_++)                                            \
    CHECK_F(op, arity, FLOATS[k_], ulps, __VA_ARGS__)
#define CHECK_I(op, arity, t, ...)                                            \
    do {                                                                      \
        const icase cs_[] = { __VA_ARGS__ };                                  \
        check_i(op, arity, t, cs_, N_(cs_), __LINE__);                        \
    } while (0)

/* Cast of n elements given as raw arrays of the two dtypes. */
static void check_cast(kf_dtype from, kf_dtype to, size_t inbytes, const void *in, size_t wantbytes, const void *want,
                       int line)
{
    int n = (int)(inbytes / kf_dtype_size(from));
    CHECK_MSG(wantbytes == (size_t)n * kf_dtype_size(to), "line %d: test arrays differ in length", line);
    void *ins[1] = { (void *)in };
    void *y = run_ew(KF_OP_CAST, 1, from, to, n, ins, line);
    for (int i = 0; y && i < n; i++) {
        char s1[80], s2[80], s3[80];
        CHECK_MSG(same_elem(to, y, want, i), "line %d: cast %s %s to %s: got %s, want %s", line, kf_dtype_name(from),
                  show(from, in, i, s3, sizeof s3), kf_dtype_name(to), show(to, y, i, s1, sizeof s1),
                  show(to, want, i, s2, sizeof s2));
    }
    kf_free(y);
}
#define CHECK_CAST(from, to, in, want) check_cast(from, to, sizeof(in), in, sizeof(want), want, __LINE__)

static int64_t smax(kf_dtype t)
{
    return t == KF_I8 || t == KF_U8 ? INT8_MAX : t == KF_I16 || t == KF_U16 ? INT16_MAX
         : t == KF_I32 || t == KF_U32 ? INT32_MAX : INT64_MAX;
}

/* -- Integer elementwise ----------------------------------------------------------- */

static void test_int_arith(void)
{
    for (int k = 0; k < 4; k++) {
        kf_dtype t = SINTS[k];
        int64_t mx = smax(t), mn = -mx - 1;
        CHECK_I(KF_OP_ADD, 2, t, { mx, 1, 0, mn }, { mn, -1, 0, mx }, { mn, mn, 0, 0 }, { mx, mx, 0, -2 },
                { -5, 3, 0, -2 }, { 100, 27, 0, 127 });
        CHECK_I(KF_OP_SUB, 2, t, { mn, 1, 0, mx }, { 0, mn, 0, mn }, { mx, -1, 0, mn }, { 5, 7, 0, -2 },
                { -1, -1, 0, 0 });
        CHECK_I(KF_OP_MUL, 2, t, { mn, -1, 0, mn }, { mx, mx, 0, 1 }, { mx, 2, 0, -2 }, { -3, 5, 0, -15 },
                { 11, -11, 0, -121 }, { 0, mn, 0, 0 });
        CHECK_I(KF_OP_NEG, 1, t, { mn, 0, 0, mn }, { mx, 0, 0, -mx }, { 5, 0, 0, -5 }, { 0, 0, 0, 0 });
        CHECK_I(KF_OP_ABS, 1, t, { mn, 0, 0, mn }, { -mx, 0, 0, mx }, { -5, 0, 0, 5 }, { 7, 0, 0, 7 }, { 0, 0, 0, 0 });
        CHECK_I(KF_OP_SIGN, 1, t, { mn, 0, 0, -1 }, { -1, 0, 0, -1 }, { 0, 0, 0, 0 }, { 1, 0, 0, 1 },
                { mx, 0, 0, 1 });
    }
    /* the examples of the spec, spelled out */
    CHECK_I(KF_OP_ADD, 2, KF_I8, { 127, 1, 0, -128 });
    CHECK_I(KF_OP_MUL, 2, KF_I8, { 64, 2, 0, -128 }, { 16, 16, 0, 0 }, { 11, 13, 0, -113 });
    CHECK_I(KF_OP_SUB, 2, KF_U8, { 0, 1, 0, 255 });
    CHECK_I(KF_OP_MUL, 2, KF_I16, { 256, 256, 0, 0 }, { 181, 181, 0, 32761 }, { 182, 182, 0, 33124 - 65536 });
    CHECK_I(KF_OP_ADD, 2, KF_I32, { INT32_MAX, INT32_MAX, 0, -2 }, { 2000000000, 2000000000, 0, -294967296 });
    CHECK_I(KF_OP_MUL, 2, KF_I64, { INT64_MIN, -1, 0, INT64_MIN }, { 0x100000000, 0x100000000, 0, 0 });

    for (int k = 0; k < 4; k++) {
        kf_dtype t = UINTS[k];
        int64_t um = -1; /* all ones: the maximum */
        CHECK_I(KF_OP_ADD, 2, t, { um, 1, 0, 0 }, { um, um, 0, -2 }, { 3, 4, 0, 7 });
        CHECK_I(KF_OP_SUB, 2, t, { 0, 1, 0, um }, { 3, 5, 0, -2 }, { 9, 4, 0, 5 });
        CHECK_I(KF_OP_MUL, 2, t, { um, um, 0, 1 }, { um, 2, 0, -2 }, { 6, 7, 0, 42 });
        CHECK_I(KF_OP_NEG, 1, t, { 1, 0, 0, um }, { 0, 0, 0, 0 }, { um, 0, 0, 1 });
        CHECK_I(KF_OP_ABS, 1, t, { um, 0, 0, um }, { 5, 0, 0, 5 }, { 0, 0, 0, 0 });
        CHECK_I(KF_OP_SIGN, 1, t, { 0, 0, 0, 0 }, { um, 0, 0, 1 }, { 1, 0, 0, 1 });
    }
    CHECK_I(KF_OP_ADD, 2, KF_U8, { 200, 100, 0, 44 });
    CHECK_I(KF_OP_MUL, 2, KF_U16, { 300, 300, 0, 90000 - 65536 });
    CHECK_I(KF_OP_SUB, 2, KF_U32, { 0, 1, 0, 4294967295 });
}

static void test_int_divmod(void)
{
    for (int k = 0; k < 4; k++) {
        kf_dtype t = SINTS[k];
        int64_t mx = smax(t), mn = -mx - 1;
        /* truncation toward zero; by zero 0; MIN / -1 wraps to MIN */
        CHECK_I(KF_OP_DIV, 2, t, { 7, 2, 0, 3 }, { -7, 2, 0, -3 }, { 7, -2, 0, -3 }, { -7, -2, 0, 3 },
                { 5, 0, 0, 0 }, { -5, 0, 0, 0 }, { 0, 0, 0, 0 }, { mx, 0, 0, 0 }, { mn, 0, 0, 0 },
                { mn, -1, 0, mn }, { mn, 1, 0, mn }, { mx, -1, 0, -mx }, { mn, 2, 0, -(mx / 2) - 1 },
                { 1, mx, 0, 0 }, { mn, mn, 0, 1 }, { mx, mn, 0, 0 });
        /* the sign of the dividend; by zero 0; MIN % -1 is 0 */
        CHECK_I(KF_OP_MOD, 2, t, { 7, 2, 0, 1 }, { -7, 2, 0, -1 }, { 7, -2, 0, 1 }, { -7, -2, 0, -1 },
                { 5, 0, 0, 0 }, { -5, 0, 0, 0 }, { mx, 0, 0, 0 }, { mn, 0, 0, 0 }, { mn, -1, 0, 0 },
                { 5, -1, 0, 0 }, { mn, mx, 0, -1 }, { mx, mn, 0, mx }, { 6, 3, 0, 0 }, { -6, 3, 0, 0 });
    }
    CHECK_I(KF_OP_DIV, 2, KF_I8, { -128, -1, 0, -128 }, { 100, 0, 0, 0 });
    CHECK_I(KF_OP_MOD, 2, KF_I8, { -128, -1, 0, 0 }, { 100, 0, 0, 0 }, { -100, 7, 0, -2 });
    CHECK_I(KF_OP_DIV, 2, KF_I64, { INT64_MIN, -1, 0, INT64_MIN }, { INT64_MIN, 0, 0, 0 });
    CHECK_I(KF_OP_MOD, 2, KF_I64, { INT64_MIN, -1, 0, 0 }, { INT64_MIN, 0, 0, 0 });
    for (int k = 0; k < 4; k++) {
        kf_dtype t = UINTS[k];
        int64_t um = -1, mx = smax(t); /* um / 2 is the signed maximum of the width */
        CHECK_I(KF_OP_DIV, 2, t, { 7, 2, 0, 3 }, { um, 2, 0, mx }, { 5, 0, 0, 0 }, { um, 0, 0, 0 }, { 0, 0, 0, 0 },
                { um, um, 0, 1 }, { 1, um, 0, 0 });
        CHECK_I(KF_OP_MOD, 2, t, { 7, 2, 0, 1 }, { um, 2, 0, 1 }, { 5, 0, 0, 0 }, { um, 0, 0, 0 },
                { um, 10, 0, 5 }, { 1, um, 0, 1 });
    }
    CHECK_I(KF_OP_DIV, 2, KF_U8, { 255, 10, 0, 25 }, { 200, 0, 0, 0 });
    CHECK_I(KF_OP_DIV, 2, KF_U64, { -1, 10, 0, 1844674407370955161 });
}

static void test_int_shift(void)
{
    for (int k = 0; k < 4; k++) {
        kf_dtype t = SINTS[k];
        int64_t w = (int64_t)kf_dtype_size(t) * 8, mx = smax(t), mn = -mx - 1;
        /* amounts < 0 or >= the width give 0; shr is arithmetic */
        CHECK_I(KF_OP_SHL, 2, t, { 1, w - 1, 0, mn }, { 1, w, 0, 0 }, { 1, w + 1, 0, 0 }, { 1, -1, 0, 0 },
                { -1, w, 0, 0 }, { 3, 2, 0, 12 }, { mx, 1, 0, -2 }, { 5, 0, 0, 5 }, { 1, mn, 0, 0 },
                { 1, mx, 0, 0 }, { -1, w - 1, 0, mn });
        CHECK_I(KF_OP_SHR, 2, t, { mn, w - 1, 0, -1 }, { mn, w, 0, 0 }, { mn, w + 1, 0, 0 }, { -1, -1, 0, 0 },
                { -8, 1, 0, -4 }, { -1, 1, 0, -1 }, { -7, 1, 0, -4 }, { mx, w - 2, 0, 1 }, { 64, 6, 0, 1 },
                { 5, -1, 0, 0 }, { mx, w, 0, 0 }, { mx, mn, 0, 0 }, { 5, 0, 0, 5 });
    }
    for (int k = 0; k < 4; k++) {
        kf_dtype t = UINTS[k];
        int64_t w = (int64_t)kf_dtype_size(t) * 8, um = -1, top = -smax(t) - 1; /* top: only the high bit */
        CHECK_I(KF_OP_SHL, 2, t, { 1, w - 1, 0, top }, { 1, w, 0, 0 }, { 1, w + 1, 0, 0 }, { um, 1, 0, -2 },
                { 1, um, 0, 0 }, { 3, 2, 0, 12 });
        /* logical */
        CHECK_I(KF_OP_SHR, 2, t, { um, 1, 0, smax(t) }, { um, w - 1, 0, 1 }, { um, w, 0, 0 }, { um, w + 1, 0, 0 },
                { top, w - 1, 0, 1 }, { um, um, 0, 0 }, { 12, 2, 0, 3 });
    }
    CHECK_I(KF_OP_SHL, 2, KF_I8, { 1, 7, 0, -128 }, { 1, 8, 0, 0 }, { 1, 9, 0, 0 }, { 1, -1, 0, 0 });
    CHECK_I(KF_OP_SHR, 2, KF_I8, { -128, 7, 0, -1 }, { -128, 8, 0, 0 }, { -128, 9, 0, 0 }, { -128, -1, 0, 0 });
    CHECK_I(KF_OP_SHR, 2, KF_U8, { 255, 1, 0, 127 }, { 128, 7, 0, 1 }, { 255, 8, 0, 0 }, { 255, 9, 0, 0 },
            { 1, 255, 0, 0 });
    CHECK_I(KF_OP_SHL, 2, KF_U16, { 1, 15, 0, 32768 }, { 1, 16, 0, 0 }, { 1, 17, 0, 0 });
    CHECK_I(KF_OP_SHL, 2, KF_I32, { 1, 31, 0, INT32_MIN }, { 1, 32, 0, 0 }, { 1, 33, 0, 0 }, { 1, -1, 0, 0 });
    CHECK_I(KF_OP_SHR, 2, KF_I64, { INT64_MIN, 63, 0, -1 }, { INT64_MIN, 64, 0, 0 }, { INT64_MIN, 65, 0, 0 },
            { INT64_MIN, -1, 0, 0 });
    CHECK_I(KF_OP_SHR, 2, KF_U64, { -1, 63, 0, 1 }, { -1, 64, 0, 0 }, { -1, 65, 0, 0 });
}

static void test_int_minmax_bits(void)
{
    for (int k = 0; k < 4; k++) {
        kf_dtype t = SINTS[k];
        int64_t mx = smax(t), mn = -mx - 1;
        CHECK_I(KF_OP_MIN, 2, t, { mn, mx, 0, mn }, { -1, 1, 0, -1 }, { 1, -1, 0, -1 }, { 3, 3, 0, 3 });
        CHECK_I(KF_OP_MAX, 2, t, { mn, mx, 0, mx }, { -1, 1, 0, 1 }, { 1, -1, 0, 1 }, { 3, 3, 0, 3 });
        /* clamp(x, lo, hi) = min(max(x, lo), hi): hi wins when lo > hi */
        CHECK_I(KF_OP_CLAMP, 3, t, { 5, 0, 3, 3 }, { -5, 0, 3, 0 }, { 2, 0, 3, 2 }, { 1, 5, 3, 3 },
                { mn, mn, mx, mn }, { mx, -1, 1, 1 });
        CHECK_I(KF_OP_AND, 2, t, { 0x0f, 0x3c, 0, 0x0c }, { -1, 0x55, 0, 0x55 }, { mn, -1, 0, mn });
        CHECK_I(KF_OP_OR, 2, t, { 0x0f, 0x3c, 0, 0x3f }, { mn, 1, 0, mn + 1 }, { 0, 0, 0, 0 });
        CHECK_I(KF_OP_XOR, 2, t, { 0x0f, 0x3c, 0, 0x33 }, { -1, mx, 0, mn }, { 5, 5, 0, 0 });
        CHECK_I(KF_OP_NOT, 1, t, { 0, 0, 0, -1 }, { -1, 0, 0, 0 }, { 0x55, 0, 0, -0x56 }, { mx, 0, 0, mn });
    }
    for (int k = 0; k < 4; k++) {
        kf_dtype t = UINTS[k];
        int64_t um = -1;
        CHECK_I(KF_OP_MIN, 2, t, { um, 1, 0, 1 }, { 0, um, 0, 0 }, { 4, 4, 0, 4 });
        CHECK_I(KF_OP_MAX, 2, t, { um, 1, 0, um }, { 0, um, 0, um }, { 4, 4, 0, 4 });
        CHECK_I(KF_OP_CLAMP, 3, t, { um, 0, 10, 10 }, { 0, 1, 10, 1 }, { 5, 1, 10, 5 }, { 1, 9, 3, 3 });
        CHECK_I(KF_OP_AND, 2, t, { um, 0x5a, 0, 0x5a }, { 0x0f, 0x3c, 0, 0x0c });
        CHECK_I(KF_OP_OR, 2, t, { 0x0f, 0x30, 0, 0x3f }, { um, 0, 0, um });
        CHECK_I(KF_OP_XOR, 2, t, { um, 1, 0, -2 }, { 0x0f, 0x3c, 0, 0x33 });
        CHECK_I(KF_OP_NOT, 1, t, { 0, 0, 0, um }, { um, 0, 0, 0 }, { 1, 0, 0, -2 });
    }
    CHECK_I(KF_OP_NOT, 1, KF_U8, { 0, 0, 0, 255 }, { 0x0f, 0, 0, 0xf0 });
    CHECK_I(KF_OP_NOT, 1, KF_I8, { 0, 0, 0, -1 }, { 127, 0, 0, -128 });
    /* bool: logical */
    CHECK_I(KF_OP_AND, 2, KF_BOOL, { 0, 0, 0, 0 }, { 0, 1, 0, 0 }, { 1, 0, 0, 0 }, { 1, 1, 0, 1 });
    CHECK_I(KF_OP_OR, 2, KF_BOOL, { 0, 0, 0, 0 }, { 0, 1, 0, 1 }, { 1, 0, 0, 1 }, { 1, 1, 0, 1 });
    CHECK_I(KF_OP_XOR, 2, KF_BOOL, { 0, 0, 0, 0 }, { 0, 1, 0, 1 }, { 1, 0, 0, 1 }, { 1, 1, 0, 0 });
    CHECK_I(KF_OP_NOT, 1, KF_BOOL, { 0, 0, 0, 1 }, { 1, 0, 0, 0 });
}

static void test_compare(void)
{
    for (int k = 0; k < 4; k++) {
        kf_dtype t = SINTS[k];
        int64_t mx = smax(t), mn = -mx - 1;
        CHECK_I(KF_OP_LT, 2, t, { -1, 1, 0, 1 }, { 1, -1, 0, 0 }, { mn, mx, 0, 1 }, { 3, 3, 0, 0 });
        CHECK_I(KF_OP_LE, 2, t, { -1, 1, 0, 1 }, { 1, -1, 0, 0 }, { 3, 3, 0, 1 });
        CHECK_I(KF_OP_GT, 2, t, { -1, 1, 0, 0 }, { mx, mn, 0, 1 }, { 3, 3, 0, 0 });
        CHECK_I(KF_OP_GE, 2, t, { -1, 1, 0, 0 }, { 1, -1, 0, 1 }, { 3, 3, 0, 1 });
        CHECK_I(KF_OP_EQ, 2, t, { mn, mn, 0, 1 }, { -1, 1, 0, 0 });
        CHECK_I(KF_OP_NE, 2, t, { mn, mn, 0, 0 }, { -1, 1, 0, 1 });
        t = UINTS[k];
        CHECK_I(KF_OP_LT, 2, t, { -1, 1, 0, 0 }, { 1, -1, 0, 1 }, { 3, 3, 0, 0 });
        CHECK_I(KF_OP_LE, 2, t, { -1, 1, 0, 0 }, { 3, 3, 0, 1 });
        CHECK_I(KF_OP_GT, 2, t, { -1, 1, 0, 1 }, { 3, 3, 0, 0 });
        CHECK_I(KF_OP_GE, 2, t, { 1, -1, 0, 0 }, { 3, 3, 0, 1 });
        CHECK_I(KF_OP_EQ, 2, t, { -1, -1, 0, 1 }, { 0, 1, 0, 0 });
        CHECK_I(KF_OP_NE, 2, t, { -1, -1, 0, 0 }, { 0, 1, 0, 1 });
    }
    CHECK_I(KF_OP_LT, 2, KF_BOOL, { 0, 1, 0, 1 }, { 1, 0, 0, 0 }, { 1, 1, 0, 0 });
    CHECK_I(KF_OP_LE, 2, KF_BOOL, { 1, 1, 0, 1 }, { 1, 0, 0, 0 });
    CHECK_I(KF_OP_GT, 2, KF_BOOL, { 1, 0, 0, 1 }, { 0, 0, 0, 0 });
    CHECK_I(KF_OP_GE, 2, KF_BOOL, { 0, 1, 0, 0 }, { 0, 0, 0, 1 });
    CHECK_I(KF_OP_EQ, 2, KF_BOOL, { 1, 1, 0, 1 }, { 0, 1, 0, 0 });
    CHECK_I(KF_OP_NE, 2, KF_BOOL, { 1, 1, 0, 0 }, { 0, 1, 0, 1 });
    /* floats: NaN is unordered, -0 == +0 */
    CHECK_F_ALL(KF_OP_LT, 2, 0, { NaN, 1, 0, 0 }, { 1, NaN, 0, 0 }, { NaN, NaN, 0, 0 }, { -0.0, 0, 0, 0 },
                { -INF, INF, 0, 1 }, { 1, 2, 0, 1 }, { 2, 1, 0, 0 });
    CHECK_F_ALL(KF_OP_LE, 2, 0, { NaN, 1, 0, 0 }, { NaN, NaN, 0, 0 }, { -0.0, 0, 0, 1 }, { INF, INF, 0, 1 },
                { 2, 1, 0, 0 });
    CHECK_F_ALL(KF_OP_GT, 2, 0, { NaN, 1, 0, 0 }, { 1, NaN, 0, 0 }, { 0, -0.0, 0, 0 }, { INF, 1, 0, 1 },
                { 1, 2, 0, 0 });
    CHECK_F_ALL(KF_OP_GE, 2, 0, { NaN, 1, 0, 0 }, { NaN, NaN, 0, 0 }, { 0, -0.0, 0, 1 }, { -INF, -INF, 0, 1 },
                { 1, 2, 0, 0 });
    CHECK_F_ALL(KF_OP_EQ, 2, 0, { NaN, NaN, 0, 0 }, { NaN, 1, 0, 0 }, { -0.0, 0, 0, 1 }, { INF, INF, 0, 1 },
                { 1, 2, 0, 0 });
    CHECK_F_ALL(KF_OP_NE, 2, 0, { NaN, NaN, 0, 1 }, { NaN, 1, 0, 1 }, { 1, NaN, 0, 1 }, { -0.0, 0, 0, 0 },
                { 1, 2, 0, 1 }, { INF, INF, 0, 0 });
}

/* -- Float elementwise -------------------------------------------------------------- */

static void test_float_arith(void)
{
    CHECK_F_ALL(KF_OP_ADD, 2, 0, { 1, 2, 0, 3 }, { INF, -INF, 0, NaN }, { -0.0, -0.0, 0, -0.0 },
                { -0.0, 0, 0, 0 }, { NaN, 1, 0, NaN }, { INF, 1, 0, INF }, { 1.5, -0.25, 0, 1.25 });
    CHECK_F_ALL(KF_OP_SUB, 2, 0, { 1, 3, 0, -2 }, { INF, INF, 0, NaN }, { 0, 0, 0, 0 }, { -0.0, 0, 0, -0.0 },
                { 0, -0.0, 0, 0 }, { 1, NaN, 0, NaN });
    CHECK_F_ALL(KF_OP_MUL, 2, 0, { 1.5, -2, 0, -3 }, { -0.0, 5, 0, -0.0 }, { INF, 0, 0, NaN },
                { -INF, -2, 0, INF }, { 0.5, 0.5, 0, 0.25 });
    CHECK_F_ALL(KF_OP_DIV, 2, 0, { 1, 0, 0, INF }, { -1, 0, 0, -INF }, { 1, -0.0, 0, -INF }, { 0, 0, 0, NaN },
                { INF, INF, 0, NaN }, { 3, 4, 0, 0.75 }, { -3, INF, 0, -0.0 }, { NaN, 1, 0, NaN });
    /* fmod: the sign of the dividend */
    CHECK_F_ALL(KF_OP_MOD, 2, 0, { 5.5, 2, 0, 1.5 }, { -5.5, 2, 0, -1.5 }, { 5.5, -2, 0, 1.5 }, { 1, 0, 0, NaN },
                { INF, 1, 0, NaN }, { 1, INF, 0, 1 }, { -0.0, 1, 0, -0.0 }, { 6, 3, 0, 0 }, { -6, 3, 0, -0.0 },
                { NaN, 1, 0, NaN });
    CHECK_F_ALL(KF_OP_NEG, 1, 0, { 1, 0, 0, -1 }, { -0.0, 0, 0, 0 }, { 0, 0, 0, -0.0 }, { INF, 0, 0, -INF },
                { NaN, 0, 0, NaN });
    CHECK_F_ALL(KF_OP_ABS, 1, 0, { -2, 0, 0, 2 }, { -0.0, 0, 0, 0 }, { -INF, 0, 0, INF }, { NaN, 0, 0, NaN },
                { 3, 0, 0, 3 });
    CHECK_F_ALL(KF_OP_SIGN, 1, 0, { -2, 0, 0, -1 }, { 3, 0, 0, 1 }, { -0.0, 0, 0, -0.0 }, { 0, 0, 0, 0 },
                { NaN, 0, 0, NaN }, { -INF, 0, 0, -1 }, { INF, 0, 0, 1 }, { 0.25, 0, 0, 1 },
                { 0x1p-24, 0, 0, 1 });
    /* min/max: NaN if either is NaN; -0 below +0 */
    CHECK_F_ALL(KF_OP_MIN, 2, 0, { NaN, 1, 0, NaN }, { 1, NaN, 0, NaN }, { -0.0, 0, 0, -0.0 }, { 0, -0.0, 0, -0.0 },
                { -INF, 1, 0, -INF }, { 2, 1, 0, 1 }, { 1, 2, 0, 1 });
    CHECK_F_ALL(KF_OP_MAX, 2, 0, { NaN, 1, 0, NaN }, { 1, NaN, 0, NaN }, { -0.0, 0, 0, 0 }, { 0, -0.0, 0, 0 },
                { INF, 1, 0, INF }, { 2, 1, 0, 2 }, { 1, 2, 0, 2 });
    CHECK_F_ALL(KF_OP_CLAMP, 3, 0, { 5, 0, 1, 1 }, { -5, 0, 1, 0 }, { 0.5, 0, 1, 0.5 }, { NaN, 0, 1, NaN },
                { 0.5, NaN, 1, NaN }, { 0.5, 0, NaN, NaN }, { -0.0, 0, 1, 0 }, { 2, 3, 1, 1 },
                { -INF, -1, 1, -1 });
    CHECK_F_ALL(KF_OP_COPYSIGN, 2, 0, { 1, -0.0, 0, -1 }, { -2, 3, 0, 2 }, { INF, -1, 0, -INF },
                { 0, -1, 0, -0.0 }, { -3, 0, 0, 3 });
    CHECK_F_ALL(KF_OP_RCP, 1, 0, { 2, 0, 0, 0.5 }, { 0, 0, 0, INF }, { -0.0, 0, 0, -INF }, { INF, 0, 0, 0 },
                { -4, 0, 0, -0.25 }, { NaN, 0, 0, NaN });
    CHECK_F_ALL(KF_OP_RSQRT, 1, 0, { 4, 0, 0, 0.5 }, { 0, 0, 0, INF }, { -0.0, 0, 0, -INF }, { -1, 0, 0, NaN },
                { INF, 0, 0, 0 }, { 0.25, 0, 0, 2 });
    CHECK_F_ALL(KF_OP_SQRT, 1, 0, { 4, 0, 0, 2 }, { -0.0, 0, 0, -0.0 }, { -1, 0, 0, NaN }, { INF, 0, 0, INF },
                { 0.25, 0, 0, 0.5 }, { NaN, 0, 0, NaN });
    CHECK_F_ALL(KF_OP_FLOOR, 1, 0, { -1.5, 0, 0, -2 }, { 1.5, 0, 0, 1 }, { -0.0, 0, 0, -0.0 }, { -0.5, 0, 0, -1 },
                { INF, 0, 0, INF }, { NaN, 0, 0, NaN });
    CHECK_F_ALL(KF_OP_CEIL, 1, 0, { -1.5, 0, 0, -1 }, { 1.5, 0, 0, 2 }, { -0.5, 0, 0, -0.0 }, { -INF, 0, 0, -INF });
    /* round: half away from zero */
    CHECK_F_ALL(KF_OP_ROUND, 1, 0, { 0.5, 0, 0, 1 }, { -0.5, 0, 0, -1 }, { 1.5, 0, 0, 2 }, { 2.5, 0, 0, 3 },
                { -2.5, 0, 0, -3 }, { 0.25, 0, 0, 0 }, { -0.25, 0, 0, -0.0 }, { 2.25, 0, 0, 2 },
                { 2.75, 0, 0, 3 }, { INF, 0, 0, INF }, { NaN, 0, 0, NaN });
    CHECK_F_ALL(KF_OP_TRUNC, 1, 0, { -1.5, 0, 0, -1 }, { 1.75, 0, 0, 1 }, { -0.5, 0, 0, -0.0 }, { INF, 0, 0, INF });
    CHECK_F_ALL(KF_OP_ISNAN, 1, 0, { NaN, 0, 0, 1 }, { INF, 0, 0, 0 }, { 1, 0, 0, 0 }, { -0.0, 0, 0, 0 });
    CHECK_F_ALL(KF_OP_ISINF, 1, 0, { INF, 0, 0, 1 }, { -INF, 0, 0, 1 }, { NaN, 0, 0, 0 }, { 1024, 0, 0, 0 });
    CHECK_F_ALL(KF_OP_ISFINITE, 1, 0, { 1, 0, 0, 1 }, { 0, 0, 0, 1 }, { 0x1p-24, 0, 0, 1 }, { INF, 0, 0, 0 },
                { -INF, 0, 0, 0 }, { NaN, 0, 0, 0 });
    CHECK_F_ALL(KF_OP_SIGMOID, 1, 0, { 0, 0, 0, 0.5 }, { INF, 0, 0, 1 }, { -INF, 0, 0, 0 }, { NaN, 0, 0, NaN });
    CHECK_F_ALL(KF_OP_FMA, 3, 0, { 2, 3, 1, 7 }, { INF, 0, 1, NaN }, { -0.0, 1, -0.0, -0.0 }, { 0, 1, -0.0, 0 },
                { 1, 1, NaN, NaN }, { -2, 0.5, 1, 0 });
    CHECK_F_ALL(KF_OP_POW, 2, 0, { 2, 10, 0, 1024 }, { NaN, 0, 0, 1 }, { 1, NaN, 0, 1 }, { -8, 0.5, 0, NaN },
                { 0, -1, 0, INF }, { -0.0, -1, 0, -INF }, { -1, INF, 0, 1 }, { 2, -1, 0, 0.5 }, { -2, 3, 0, -8 },
                { 4, 0.5, 0, 2 });
    CHECK_F_ALL(KF_OP_ATAN2, 2, 0, { 0, 1, 0, 0 }, { -0.0, 1, 0, -0.0 }, { 0, 0, 0, 0 }, { -0.0, 0, 0, -0.0 },
                { NaN, 1, 0, NaN });
    CHECK_F_ALL(KF_OP_HYPOT, 2, 0, { 3, 4, 0, 5 }, { INF, NaN, 0, INF }, { NaN, -INF, 0, INF }, { -3, 0, 0, 3 },
                { NaN, 1, 0, NaN });
    CHECK_F_ALL(KF_OP_SELECT, 3, 0, { 1, 2, 3, 2 }, { 0, 2, 3, 3 }, { 1, NaN, 1, NaN }, { 0, 1, -0.0, -0.0 },
                { 1, -INF, 0, -INF });

    /* fma is fused: one rounding of a*b+c */
    CHECK_F(KF_OP_FMA, 3, KF_F64, 0, { 0x1.0000000000001p0, 0x1.fffffffffffffp-1, -1, 0x1p-53 - 0x1p-105 },
            { 0x1.0000000000001p0, 0x1.ffffffffffffep-1, -1, -0x1p-104 });
    CHECK_F(KF_OP_FMA, 3, KF_F32, 0, { 0x1.000002p0, 0x1.fffffcp-1, -1, -0x1p-46 });
}

/* Values from mpmath at 30 digits; libm may be off by an ulp, and f16/bf16
 * round an f32 result, so these allow one unit in the last place. */
static void test_float_libm(void)
{
    const double pi = 3.141592653589793238462643, e = 2.718281828459045235360287;
    const double sqrt2 = 1.414213562373095048801689;
    for (int k = 0; k < 4; k++) {
        kf_dtype t = FLOATS[k];
        fcase approx[] = {
            { 2, 0, 0, sqrt2 },
        };
        check_f(KF_OP_SQRT, 1, t, approx, 1, 1, __LINE__);
        fcase rs[] = { { 2, 0, 0, 0.7071067811865475244008444 } };
        check_f(KF_OP_RSQRT, 1, t, rs, 1, 1, __LINE__);
        fcase rc[] = { { 3, 0, 0, 0.3333333333333333333333333 } };
        check_f(KF_OP_RCP, 1, t, rc, 1, 1, __LINE__);
        fcase cb[] = { { 2, 0, 0, 1.259921049894873164767211 }, { -8, 0, 0, -2 }, { 27, 0, 0, 3 } };
        check_f(KF_OP_CBRT, 1, t, cb, N_(cb), 1, __LINE__);
        fcase ex[] = { { 1, 0, 0, e }, { -1, 0, 0, 0.3678794411714423215955238 } };
        check_f(KF_OP_EXP, 1, t, ex, N_(ex), 1, __LINE__);
        fcase e2[] = { { 0.5, 0, 0, sqrt2 }, { 3, 0, 0, 8 }, { -2, 0, 0, 0.25 } };
        check_f(KF_OP_EXP2, 1, t, e2, N_(e2), 1, __LINE__);
        fcase em[] = { { 0x1p-10, 0, 0, 0.0009770394924165352428452926 }, { 1, 0, 0, 1.718281828459045235360287 } };
        check_f(KF_OP_EXPM1, 1, t, em, N_(em), 1, __LINE__);
        fcase lg[] = { { 2, 0, 0, 0.6931471805599453094172321 }, { 0.5, 0, 0, -0.6931471805599453094172321 } };
        check_f(KF_OP_LOG, 1, t, lg, N_(lg), 1, __LINE__);
        fcase l2[] = { { 8, 0, 0, 3 }, { 10, 0, 0, 3.321928094887362347870319 } };
        check_f(KF_OP_LOG2, 1, t, l2, N_(l2), 1, __LINE__);
        fcase l10[] = { { 1000, 0, 0, 3 }, { 2, 0, 0, 0.3010299956639811952137389 } };
        check_f(KF_OP_LOG10, 1, t, l10, N_(l10), 1, __LINE__);
        fcase l1p[] = { { 0x1p-10, 0, 0, 0.0009760859730554588959608249 }, { 1, 0, 0, 0.6931471805599453094172321 } };
        check_f(KF_OP_LOG1P, 1, t, l1p, N_(l1p), 1, __LINE__);
        fcase sn[] = { { 1, 0, 0, 0.8414709848078965066525023 }, { -1, 0, 0, -0.8414709848078965066525023 } };
        check_f(KF_OP_SIN, 1, t, sn, N_(sn), 1, __LINE__);
        fcase cs[] = { { 1, 0, 0, 0.5403023058681397174009366 } };
        check_f(KF_OP_COS, 1, t, cs, N_(cs), 1, __LINE__);
        fcase tn[] = { { 1, 0, 0, 1.557407724654902230506975 } };
        check_f(KF_OP_TAN, 1, t, tn, N_(tn), 1, __LINE__);
        fcase as[] = { { 0.5, 0, 0, 0.5235987755982988730771072 }, { 1, 0, 0, pi / 2 }, { -1, 0, 0, -pi / 2 } };
        check_f(KF_OP_ASIN, 1, t, as, N_(as), 1, __LINE__);
        fcase ac[] = { { 0.5, 0, 0, 1.047197551196597746154214 }, { -1, 0, 0, pi }, { 0, 0, 0, pi / 2 } };
        check_f(KF_OP_ACOS, 1, t, ac, N_(ac), 1, __LINE__);
        fcase at[] = { { 1, 0, 0, pi / 4 }, { INF, 0, 0, pi / 2 }, { -INF, 0, 0, -pi / 2 } };
        check_f(KF_OP_ATAN, 1, t, at, N_(at), 1, __LINE__);
        fcase sh[] = { { 1, 0, 0, 1.175201193643801456882382 } };
        check_f(KF_OP_SINH, 1, t, sh, N_(sh), 1, __LINE__);
        fcase ch[] = { { 1, 0, 0, 1.543080634815243778477906 } };
        check_f(KF_OP_COSH, 1, t, ch, N_(ch), 1, __LINE__);
        fcase th[] = { { 0.5, 0, 0, 0.4621171572600097585023185 } };
        check_f(KF_OP_TANH, 1, t, th, N_(th), 1, __LINE__);
        fcase er[] = { { 0.5, 0, 0, 0.5204998778130465376827467 }, { -0.5, 0, 0, -0.5204998778130465376827467 } };
        check_f(KF_OP_ERF, 1, t, er, N_(er), 1, __LINE__);
        fcase sg[] = { { 1, 0, 0, 0.7310585786300048792511592 }, { -1, 0, 0, 0.2689414213699951207488408 } };
        check_f(KF_OP_SIGMOID, 1, t, sg, N_(sg), 1, __LINE__);
        fcase pw[] = { { 2, 0.5, 0, sqrt2 }, { 3, -2, 0, 0.1111111111111111111111111 } };
        check_f(KF_OP_POW, 2, t, pw, N_(pw), 1, __LINE__);
        fcase a2[] = { { 0, -1, 0, pi }, { -0.0, -1, 0, -pi }, { 1, 0, 0, pi / 2 }, { 1, 2, 0, 0.4636476090008061162142562 },
                       { INF, INF, 0, pi / 4 }, { -1, -1, 0, -2.356194490192344928846983 } };
        check_f(KF_OP_ATAN2, 2, t, a2, N_(a2), 1, __LINE__);
        fcase hy[] = { { 1, 2, 0, 2.236067977499789696409174 } };
        check_f(KF_OP_HYPOT, 2, t, hy, N_(hy), 1, __LINE__);
    }
    /* special values are exact (C Annex F) */
    CHECK_F_ALL(KF_OP_EXP, 1, 0, { 0, 0, 0, 1 }, { -0.0, 0, 0, 1 }, { -INF, 0, 0, 0 }, { INF, 0, 0, INF },
                { NaN, 0, 0, NaN });
    CHECK_F_ALL(KF_OP_EXP2, 1, 0, { 0, 0, 0, 1 }, { -INF, 0, 0, 0 }, { INF, 0, 0, INF });
    CHECK_F_ALL(KF_OP_EXPM1, 1, 0, { 0, 0, 0, 0 }, { -0.0, 0, 0, -0.0 }, { -INF, 0, 0, -1 }, { INF, 0, 0, INF });
    CHECK_F_ALL(KF_OP_LOG, 1, 0, { 1, 0, 0, 0 }, { 0, 0, 0, -INF }, { -0.0, 0, 0, -INF }, { -1, 0, 0, NaN },
                { INF, 0, 0, INF }, { NaN, 0, 0, NaN });
    CHECK_F_ALL(KF_OP_LOG2, 1, 0, { 1, 0, 0, 0 }, { 0, 0, 0, -INF }, { -1, 0, 0, NaN }, { INF, 0, 0, INF });
    CHECK_F_ALL(KF_OP_LOG10, 1, 0, { 1, 0, 0, 0 }, { 0, 0, 0, -INF }, { -1, 0, 0, NaN }, { INF, 0, 0, INF });
    CHECK_F_ALL(KF_OP_LOG1P, 1, 0, { 0, 0, 0, 0 }, { -0.0, 0, 0, -0.0 }, { -1, 0, 0, -INF }, { -2, 0, 0, NaN },
                { INF, 0, 0, INF });
    CHECK_F_ALL(KF_OP_SIN, 1, 0, { 0, 0, 0, 0 }, { -0.0, 0, 0, -0.0 }, { INF, 0, 0, NaN }, { NaN, 0, 0, NaN });
    CHECK_F_ALL(KF_OP_COS, 1, 0, { 0, 0, 0, 1 }, { -0.0, 0, 0, 1 }, { -INF, 0, 0, NaN });
    CHECK_F_ALL(KF_OP_TAN, 1, 0, { 0, 0, 0, 0 }, { -0.0, 0, 0, -0.0 }, { INF, 0, 0, NaN });
    CHECK_F_ALL(KF_OP_ASIN, 1, 0, { 0, 0, 0, 0 }, { -0.0, 0, 0, -0.0 }, { 2, 0, 0, NaN });
    CHECK_F_ALL(KF_OP_ACOS, 1, 0, { 1, 0, 0, 0 }, { 2, 0, 0, NaN }, { -1.5, 0, 0, NaN });
    CHECK_F_ALL(KF_OP_ATAN, 1, 0, { 0, 0, 0, 0 }, { -0.0, 0, 0, -0.0 }, { NaN, 0, 0, NaN });
    CHECK_F_ALL(KF_OP_SINH, 1, 0, { 0, 0, 0, 0 }, { -0.0, 0, 0, -0.0 }, { INF, 0, 0, INF }, { -INF, 0, 0, -INF });
    CHECK_F_ALL(KF_OP_COSH, 1, 0, { 0, 0, 0, 1 }, { -0.0, 0, 0, 1 }, { -INF, 0, 0, INF });
    CHECK_F_ALL(KF_OP_TANH, 1, 0, { 0, 0, 0, 0 }, { -0.0, 0, 0, -0.0 }, { INF, 0, 0, 1 }, { -INF, 0, 0, -1 });
    CHECK_F_ALL(KF_OP_ERF, 1, 0, { 0, 0, 0, 0 }, { -0.0, 0, 0, -0.0 }, { INF, 0, 0, 1 }, { -INF, 0, 0, -1 });
    CHECK_F_ALL(KF_OP_CBRT, 1, 0, { 0, 0, 0, 0 }, { -0.0, 0, 0, -0.0 }, { -INF, 0, 0, -INF }, { INF, 0, 0, INF });
}

/* f16 and bf16 compute in f32 and round to nearest even once, on store. */
static void test_half_arith(void)
{
    /* ties to even at 1 + 2^-11; the largest finite f16 is 65504 and 65520
     * rounds to inf */
    CHECK_F(KF_OP_ADD, 2, KF_F16, 0, { 1, 0x1p-11, 0, 1 }, { 0x1.004p0, 0x1p-11, 0, 0x1.008p0 },
            { 65504, 8, 0, 65504 }, { 65504, 16, 0, INF }, { 65504, 32, 0, INF }, { -65504, -16, 0, -INF },
            { 2048, 1, 0, 2048 }, { 2048, 3, 0, 2052 });
    /* subnormals: 2^-24 is the smallest; 2^-25 ties to 0 */
    CHECK_F(KF_OP_MUL, 2, KF_F16, 0, { 0x1p-14, 0.5, 0, 0x1p-15 }, { 0x1p-24, 0.5, 0, 0 },
            { 0x3p-24, 0.5, 0, 0x2p-24 }, { 0x5p-24, 0.5, 0, 0x2p-24 }, { 0x1p-24, -0.5, 0, -0.0 },
            { 0x1p-14, 0x1p-10, 0, 0x1p-24 }, { 0x1p-11, 0x1p-13, 0, 0x1p-24 }, { 0x1p-12, 0x1p-13, 0, 0 }, { 256, 256, 0, INF });
    /* computed in f32: a*b+c = 1 + 2^-11 + 2^-31 is first rounded to the f32
     * 1 + 2^-11, a tie in f16, so 1 (rounding the exact value once would
     * give 1 + 2^-10) */
    CHECK_F(KF_OP_FMA, 3, KF_F16, 0, { -(0x1p-11 + 0x1p-21), 0x1.ff8p-1, 0x1.004p0, 1 },
            { 0x1.004p0, 0x1.ff8p-1, -1, -0x1p-20 });
    CHECK_F(KF_OP_DIV, 2, KF_F16, 0, { 1, 0x1p-14, 0, 16384 }, { 1, 0x1p-16, 0, INF }, { 1, 3, 0, 0x1.554p-2 });
    CHECK_F(KF_OP_SQRT, 1, KF_F16, 0, { 65504, 0, 0, 255.875 }, { 0x1p-24, 0, 0, 0x1p-12 });
    CHECK_F(KF_OP_EXP, 1, KF_F16, 0, { 1, 0, 0, 0x1.5cp1 }, { 12, 0, 0, INF });
    CHECK_F(KF_OP_ADD, 2, KF_BF16, 0, { 1, 0x1p-8, 0, 1 }, { 0x1.02p0, 0x1p-8, 0, 0x1.04p0 },
            { 0x1.fep127, 0x1.fep127, 0, INF }, { 256, 1, 0, 256 }, { 256, 3, 0, 260 });
    CHECK_F(KF_OP_MUL, 2, KF_BF16, 0, { 0x1p-133, 0.5, 0, 0 }, { 0x3p-133, 0.5, 0, 0x2p-133 },
            { 0x1.fep127, 2, 0, INF }, { 0x1p-126, 0x1p-7, 0, 0x1p-133 });
    CHECK_F(KF_OP_DIV, 2, KF_BF16, 0, { 1, 3, 0, 0x1.56p-2 });
    CHECK_F(KF_OP_EXP, 1, KF_BF16, 0, { 1, 0, 0, 0x1.5cp1 }, { 89, 0, 0, INF });
    /* f32 arithmetic itself rounds once per op */
    CHECK_F(KF_OP_ADD, 2, KF_F32, 0, { 0x1p24, 1, 0, 0x1p24 }, { 0x1p24, 3, 0, 0x1.000004p24 },
            { 0x1.fffffep127, 0x1p104, 0, INF }, { 0x1.fffffep127, 0x1p103, 0, INF },
            { 0x1.fffffep127, 0x1.fffffep102, 0, 0x1.fffffep127 });
    CHECK_F(KF_OP_MUL, 2, KF_F32, 0, { 0x1p-149, 0.5, 0, 0 }, { 0x3p-149, 0.5, 0, 0x2p-149 });
    CHECK_F(KF_OP_DIV, 2, KF_F32, 0, { 1, 3, 0, 0x1.555556p-2 });
    CHECK_F(KF_OP_DIV, 2, KF_F64, 0, { 1, 3, 0, 0x1.5555555555555p-2 });
}

/* -- Casts ------------------------------------------------------------------------------ */

static void test_casts(void)
{
    /* float to int: truncate, NaN 0, saturate */
    CHECK_CAST(KF_F32, KF_U8, ((float[]){ -1.5f, 300.0f, NAN, 254.9f, INFINITY, -INFINITY, 0.99f, -0.0f, 255.5f, 256 }),
               ((uint8_t[]){ 0, 255, 0, 254, 255, 0, 0, 0, 255, 255 }));
    CHECK_CAST(KF_F32, KF_I8, ((float[]){ -1.5f, 1.5f, 127.9f, 128, -128.9f, -129, NAN, INFINITY, -INFINITY }),
               ((int8_t[]){ -1, 1, 127, 127, -128, -128, 0, 127, -128 }));
    CHECK_CAST(KF_F64, KF_I16, ((double[]){ -32768.9, 32767.9, 40000, -1e300, NaN, -0.5 }),
               ((int16_t[]){ -32768, 32767, 32767, -32768, 0, 0 }));
    CHECK_CAST(KF_F32, KF_U16, ((float[]){ 65535.5f, 65536, -1, 1e30f }), ((uint16_t[]){ 65535, 65535, 0, 65535 }));
    CHECK_CAST(KF_F32, KF_I32, ((float[]){ 2147483648.0f, -2147483648.0f, 2147483520.0f, -3e9f, NAN }),
               ((int32_t[]){ INT32_MAX, INT32_MIN, 2147483520, INT32_MIN, 0 }));
    CHECK_CAST(KF_F32, KF_U32, ((float[]){ 4294967296.0f, 4294967040.0f, -0.5f, NAN }),
               ((uint32_t[]){ UINT32_MAX, 4294967040u, 0, 0 }));
    CHECK_CAST(KF_F64, KF_I64, ((double[]){ 0x1p63, -0x1p63, 0x1.fffffffffffffp62, -0x1.0000000000001p63, NaN, 1e19, -2.5, INF }),
               ((int64_t[]){ INT64_MAX, INT64_MIN, 9223372036854774784, INT64_MIN, 0, INT64_MAX, -2, INT64_MAX }));
    CHECK_CAST(KF_F64, KF_U64, ((double[]){ 0x1p64, 0x1.fffffffffffffp63, -1, NaN, 1e300, 0.5, -INF }),
               ((uint64_t[]){ UINT64_MAX, 18446744073709549568u, 0, 0, UINT64_MAX, 0, 0 }));
    CHECK_CAST(KF_F16, KF_I16, ((uint16_t[]){ 0x7c00, 0xfc00, 0x7bff, 0x3e00, 0xbe00, 0x7e00, 0x0001 }),
               ((int16_t[]){ 32767, -32768, 32767, 1, -1, 0, 0 }));
    CHECK_CAST(KF_F16, KF_U8, ((uint16_t[]){ 0x5bf8, 0x5c00, 0xbc00, 0x7e00 }), ((uint8_t[]){ 255, 255, 0, 0 }));
    CHECK_CAST(KF_BF16, KF_I32, ((uint16_t[]){ 0x4f00, 0xcf00, 0xc020, 0x7fc0, 0x7f80 }),
               ((int32_t[]){ INT32_MAX, INT32_MIN, -2, 0, INT32_MAX }));

    /* int to int wraps (two's complement); widening sign- or zero-extends */
    CHECK_CAST(KF_I32, KF_I8, ((int32_t[]){ 300, -129, 128, -1, 127 }), ((int8_t[]){ 44, 127, -128, -1, 127 }));
    CHECK_CAST(KF_I8, KF_U8, ((int8_t[]){ -1, -128, 5 }), ((uint8_t[]){ 255, 128, 5 }));
    CHECK_CAST(KF_U8, KF_I8, ((uint8_t[]){ 255, 128, 127 }), ((int8_t[]){ -1, -128, 127 }));
    CHECK_CAST(KF_I64, KF_U32, ((int64_t[]){ -1, 0x100000001 }), ((uint32_t[]){ 4294967295u, 1 }));
    CHECK_CAST(KF_U64, KF_I64, ((uint64_t[]){ UINT64_MAX, 0x8000000000000000u }), ((int64_t[]){ -1, INT64_MIN }));
    CHECK_CAST(KF_I8, KF_I64, ((int8_t[]){ -128, 127 }), ((int64_t[]){ -128, 127 }));
    CHECK_CAST(KF_U32, KF_I64, ((uint32_t[]){ 4294967295u }), ((int64_t[]){ 4294967295 }));
    CHECK_CAST(KF_U16, KF_I16, ((uint16_t[]){ 65535, 32768 }), ((int16_t[]){ -1, -32768 }));
    CHECK_CAST(KF_I16, KF_U64, ((int16_t[]){ -1 }), ((uint64_t[]){ UINT64_MAX }));

    /* to bool: x != 0 (NaN is true); from bool: 0 or 1 */
    CHECK_CAST(KF_F32, KF_BOOL, ((float[]){ NAN, -0.0f, 0.0f, 0.5f, -INFINITY, 0x1p-149f }),
               ((uint8_t[]){ 1, 0, 0, 1, 1, 1 }));
    CHECK_CAST(KF_F16, KF_BOOL, ((uint16_t[]){ 0x8000, 0x0001, 0x7e00 }), ((uint8_t[]){ 0, 1, 1 }));
    CHECK_CAST(KF_I8, KF_BOOL, ((int8_t[]){ 0, -1, 2, -128 }), ((uint8_t[]){ 0, 1, 1, 1 }));
    CHECK_CAST(KF_U64, KF_BOOL, ((uint64_t[]){ 0x8000000000000000u, 0, 256 }), ((uint8_t[]){ 1, 0, 1 }));
    CHECK_CAST(KF_BOOL, KF_I32, ((uint8_t[]){ 0, 1 }), ((int32_t[]){ 0, 1 }));
    CHECK_CAST(KF_BOOL, KF_I8, ((uint8_t[]){ 1, 0 }), ((int8_t[]){ 1, 0 }));
    CHECK_CAST(KF_BOOL, KF_U64, ((uint8_t[]){ 1, 0 }), ((uint64_t[]){ 1, 0 }));
    CHECK_CAST(KF_BOOL, KF_F32, ((uint8_t[]){ 0, 1 }), ((float[]){ 0.0f, 1.0f }));
    CHECK_CAST(KF_BOOL, KF_F16, ((uint8_t[]){ 1, 0 }), ((uint16_t[]){ 0x3c00, 0x0000 }));
    CHECK_CAST(KF_BOOL, KF_BF16, ((uint8_t[]){ 1 }), ((uint16_t[]){ 0x3f80 }));
    CHECK_CAST(KF_BOOL, KF_BOOL, ((uint8_t[]){ 1, 0 }), ((uint8_t[]){ 1, 0 }));

    /* int to float: round to nearest even, once */
    CHECK_CAST(KF_I32, KF_F32, ((int32_t[]){ 16777217, 16777219, -16777217, INT32_MAX }),
               ((float[]){ 16777216.0f, 16777220.0f, -16777216.0f, 2147483648.0f }));
    CHECK_CAST(KF_I64, KF_F32, ((int64_t[]){ INT64_MAX, INT64_MIN }), ((float[]){ 0x1p63f, -0x1p63f }));
    CHECK_CAST(KF_U64, KF_F32, ((uint64_t[]){ UINT64_MAX, 0x8000008000000000u, 0x8000008000000001u }),
               ((float[]){ 0x1p64f, 0x1p63f, 0x1.000002p63f }));
    CHECK_CAST(KF_U32, KF_F32, ((uint32_t[]){ UINT32_MAX }), ((float[]){ 4294967296.0f }));
    CHECK_CAST(KF_I64, KF_F64, ((int64_t[]){ -9007199254740993, 9007199254740995, INT64_MIN }),
               ((double[]){ -9007199254740992.0, 9007199254740996.0, -0x1p63 }));
    CHECK_CAST(KF_U64, KF_F64, ((uint64_t[]){ UINT64_MAX, 9007199254740993u }), ((double[]){ 0x1p64, 0x1p53 }));
    CHECK_CAST(KF_I32, KF_F16, ((int32_t[]){ 2049, 2051, 65519, 65520, -65536, 70000, -3, 0 }),
               ((uint16_t[]){ 0x6800, 0x6802, 0x7bff, 0x7c00, 0xfc00, 0x7c00, 0xc200, 0x0000 }));
    CHECK_CAST(KF_I64, KF_F16, ((int64_t[]){ INT64_MIN, 2047 }), ((uint16_t[]){ 0xfc00, 0x67ff }));
    CHECK_CAST(KF_U64, KF_F16, ((uint64_t[]){ UINT64_MAX }), ((uint16_t[]){ 0x7c00 }));
    /* 2^24 + 2^16 + 1 is above the bf16 midpoint: once rounded, 2^24 + 2^17
     * (through a float it would be 2^24 + 2^16, a tie, then 2^24) */
    CHECK_CAST(KF_I32, KF_BF16, ((int32_t[]){ 16842753, 257, 259, -1 }), ((uint16_t[]){ 0x4b81, 0x4380, 0x4382, 0xbf80 }));
    CHECK_CAST(KF_U64, KF_BF16, ((uint64_t[]){ UINT64_MAX, 0x8000000000000001u }), ((uint16_t[]){ 0x5f80, 0x5f00 }));
    CHECK_CAST(KF_I8, KF_F64, ((int8_t[]){ -128 }), ((double[]){ -128.0 }));

    /* float to float: round to nearest even, once */
    CHECK_CAST(KF_F64, KF_F32, ((double[]){ 0x1.000001p0, 0x1.000003p0, 1e39, 0x1p-150, 0x1.0000000000001p-150, -1e-50, NaN, -0.0, 0x1.fffffefffffffp127, 0x1.ffffffp127 }),
               ((float[]){ 1.0f, 0x1.000004p0f, INFINITY, 0.0f, 0x1p-149f, -0.0f, NAN, -0.0f, 0x1.fffffep127f, INFINITY }));
    CHECK_CAST(KF_F32, KF_F64, ((float[]){ 0x1.fffffep127f, NAN, -0.0f, 0x1p-149f }),
               ((double[]){ 0x1.fffffep127, NaN, -0.0, 0x1p-149 }));
    CHECK_CAST(KF_F32, KF_F16,
               ((float[]){ 0x1.002p0f, 0x1.006p0f, 0x1.0021p0f, 65504, 65519, 65520, 1e6f, 0x1p-24f, 0x1p-25f, 0x1.8p-25f,
                           0x1.8p-24f, 0x1.ffcp-15f, -0.0f, NAN, -INFINITY, 0x1p-14f, 0x1.ff8p-15f, 0x1p-26f, -65520 }),
               ((uint16_t[]){ 0x3c00, 0x3c02, 0x3c01, 0x7bff, 0x7bff, 0x7c00, 0x7c00, 0x0001, 0x0000, 0x0001, 0x0002,
                              0x0400, 0x8000, 0x7e00, 0xfc00, 0x0400, 0x03ff, 0x0000, 0xfc00 }));
    /* f64 to f16/bf16 rounds the exact value once: each value here would
     * round differently through f32 */
    CHECK_CAST(KF_F64, KF_F16, ((double[]){ 0x1.00200001p0, 0x1.ffdfffffffp15, 0x1.0000000001p-25, 1e300, -1e300, 1e-300, NaN, -0.0, 0x1.ffep15 }),
               ((uint16_t[]){ 0x3c01, 0x7bff, 0x0001, 0x7c00, 0xfc00, 0x0000, 0x7e00, 0x8000, 0x7c00 }));
    CHECK_CAST(KF_F64, KF_BF16, ((double[]){ 0x1.01000001p0, 0x1.feffffffffp127, 0x1.ffffffp127, 0x1.ffp127, 1e-300, -1.5 }),
               ((uint16_t[]){ 0x3f81, 0x7f7f, 0x7f80, 0x7f80, 0x0000, 0xbfc0 }));
    CHECK_CAST(KF_F32, KF_BF16,
               ((float[]){ 0x1.01p0f, 0x1.03p0f, 0x1.0102p0f, 0x1.fffffep127f, 0x1p-133f, 0x1p-134f, 0x1.8p-134f, 0x1.8p-133f,
                           -0.0f, NAN, 0x1.fep127f, -1.5f }),
               ((uint16_t[]){ 0x3f80, 0x3f82, 0x3f81, 0x7f80, 0x0001, 0x0000, 0x0001, 0x0002, 0x8000, 0x7fc0, 0x7f7f, 0xbfc0 }));
    CHECK_CAST(KF_F16, KF_F32, ((uint16_t[]){ 0x0001, 0x7bff, 0xfc00, 0x8000, 0x03ff, 0x7e00 }),
               ((float[]){ 0x1p-24f, 65504, -INFINITY, -0.0f, 0x1.ff8p-15f, NAN }));
    CHECK_CAST(KF_F16, KF_F64, ((uint16_t[]){ 0x3555, 0xc200 }), ((double[]){ 0x1.554p-2, -3 }));
    CHECK_CAST(KF_BF16, KF_F16, ((uint16_t[]){ 0x3f81, 0x4780, 0x0001, 0x477f }),
               ((uint16_t[]){ 0x3c08, 0x7c00, 0x0000, 0x7bf8 }));
    CHECK_CAST(KF_F16, KF_BF16, ((uint16_t[]){ 0x3c01, 0x3fff, 0x7bff, 0x0001 }),
               ((uint16_t[]){ 0x3f80, 0x4000, 0x4780, 0x3380 }));
    CHECK_CAST(KF_F32, KF_F32, ((float[]){ NAN, -0.0f }), ((float[]){ NAN, -0.0f }));
    CHECK_CAST(KF_I32, KF_I32, ((int32_t[]){ INT32_MIN }), ((int32_t[]){ INT32_MIN }));
}

/* -- Select and broadcasting ------------------------------------------------------------ */

static void test_select(void)
{
    for (int k = 0; k < 4; k++) {
        int64_t mx = smax(SINTS[k]), mn = -mx - 1;
        CHECK_I(KF_OP_SELECT, 3, SINTS[k], { 1, mn, mx, mn }, { 0, mn, mx, mx });
        CHECK_I(KF_OP_SELECT, 3, UINTS[k], { 1, -1, 0, -1 }, { 0, -1, 0, 0 });
    }
    CHECK_I(KF_OP_SELECT, 3, KF_BOOL, { 1, 1, 0, 1 }, { 0, 1, 0, 0 });

    /* select broadcasts all three: [3,1] condition, [4] and a scalar */
    kf_graph *g = kf_graph_new("sel");
    kf_node c = kf_input(g, "c", KF_BOOL, 2, (kf_dim[]){ KF_DIM(3), KF_DIM(1) });
    kf_node a = kf_input(g, "a", KF_F32, 1, (kf_dim[]){ KF_DIM(4) });
    kf_node b = kf_scalar(g, "b", KF_F32);
    kf_output(g, kf_ternary(g, KF_OP_SELECT, c, a, b), "y");
    CHECK_STATUS(kf_graph_verify(g), KF_OK);
    kf_host_array in[3] = { harr(KF_BOOL, 2, SHAPE(3, 1), (uint8_t[]){ 1, 0, 1 }),
                            harr(KF_F32, 1, SHAPE(4), (float[]){ 1, 2, 3, 4 }), harr(KF_F32, 0, NULL, (float[]){ -1 }) };
    kf_host_array out[1];
    char err[512];
    CHECK_STATUS(run(g, in, 3, out, 1, err, sizeof err), KF_OK);
    EXPECT(&out[0], KF_F32, 2, SHAPE(3, 4), ((float[]){ 1, 2, 3, 4, -1, -1, -1, -1, 1, 2, 3, 4 }));
    free_outputs(out, 1);
    kf_graph_free(g);

    /* literal condition and literal branch */
    g = kf_graph_new("sel2");
    a = kf_input(g, "a", KF_I16, 1, (kf_dim[]){ KF_SYM("n") });
    kf_node gt = kf_binary(g, KF_OP_GT, a, kf_lit_i(g, KF_I16, 0));
    kf_output(g, kf_ternary(g, KF_OP_SELECT, gt, a, kf_lit_i(g, KF_I16, -7)), "y");
    kf_output(g, kf_ternary(g, KF_OP_SELECT, kf_lit_u(g, KF_BOOL, 0), a, kf_lit_i(g, KF_I16, 9)), "z");
    in[0] = harr(KF_I16, 1, SHAPE(4), (int16_t[]){ 5, -5, 0, 32767 });
    kf_host_array out2[2];
    CHECK_STATUS(run(g, in, 1, out2, 2, err, sizeof err), KF_OK);
    EXPECT(&out2[0], KF_I16, 1, SHAPE(4), ((int16_t[]){ 5, -7, -7, 32767 }));
    EXPECT(&out2[1], KF_I16, 1, SHAPE(4), ((int16_t[]){ 9, 9, 9, 9 }));
    free_outputs(out2, 2);
    kf_graph_free(g);
}

static void test_broadcast(void)
{
    char err[512];
    kf_host_array out[2];

    /* [3,1] against [1,4] */
    kf_graph *g = kf_graph_new("bc");
    kf_node a = kf_input(g, "a", KF_I32, 2, (kf_dim[]){ KF_DIM(3), KF_DIM(1) });
    kf_node b = kf_input(g, "b", KF_I32, 2, (kf_dim[]){ KF_DIM(1), KF_DIM(4) });
    kf_output(g, kf_binary(g, KF_OP_ADD, a, b), "s");
    kf_output(g, kf_binary(g, KF_OP_SUB, a, b), "d");
    kf_host_array in[3] = { harr(KF_I32, 2, SHAPE(3, 1), (int32_t[]){ 1, 2, 3 }),
                            harr(KF_I32, 2, SHAPE(1, 4), (int32_t[]){ 10, 20, 30, 40 }) };
    CHECK_STATUS(run(g, in, 2, out, 2, err, sizeof err), KF_OK);
    EXPECT(&out[0], KF_I32, 2, SHAPE(3, 4), ((int32_t[]){ 11, 21, 31, 41, 12, 22, 32, 42, 13, 23, 33, 43 }));
    EXPECT(&out[1], KF_I32, 2, SHAPE(3, 4), ((int32_t[]){ -9, -19, -29, -39, -8, -18, -28, -38, -7, -17, -27, -37 }));
    free_outputs(out, 2);
    kf_graph_free(g);

    /* a scalar input, a 0-d array and literals against [2,3] */
    g = kf_graph_new("bc2");
    kf_node s = kf_scalar(g, "s", KF_F64);
    kf_node z = kf_input(g, "z", KF_F64, 0, NULL);
    kf_node x = kf_input(g, "x", KF_F64, 2, (kf_dim[]){ KF_DIM(2), KF_DIM(3) });
    CHECK(kf_node_is_scalar(g, s) && !kf_node_is_scalar(g, z));
    kf_node m = kf_binary(g, KF_OP_MUL, s, x);                        /* s * x */
    kf_node y = kf_binary(g, KF_OP_SUB, z, m);                        /* z - s*x */
    kf_output(g, kf_binary(g, KF_OP_ADD, y, kf_lit_f(g, KF_F64, 0.5)), "y");
    kf_output(g, kf_binary(g, KF_OP_SUB, kf_lit_f(g, KF_F64, 10), z), "w"); /* rank 0 */
    CHECK_STATUS(kf_graph_verify(g), KF_OK);
    in[0] = harr(KF_F64, 0, NULL, (double[]){ 2 });
    in[1] = harr(KF_F64, 0, NULL, (double[]){ 100 });
    in[2] = harr(KF_F64, 2, SHAPE(2, 3), (double[]){ 1, 2, 3, 4, 5, 6 });
    CHECK_STATUS(run(g, in, 3, out, 2, err, sizeof err), KF_OK);
    EXPECT(&out[0], KF_F64, 2, SHAPE(2, 3), ((double[]){ 98.5, 96.5, 94.5, 92.5, 90.5, 88.5 }));
    EXPECT(&out[1], KF_F64, 0, NULL, ((double[]){ -90 }));
    free_outputs(out, 2);
    /* a scalar input given with a rank is an error */
    in[0] = harr(KF_F64, 1, SHAPE(1), (double[]){ 2 });
    CHECK_STATUS(run(g, in, 3, out, 2, err, sizeof err), KF_ERR_SHAPE);
    CHECK_CONTAINS(txt(err), "'s'");
    CHECK(out[0].data == NULL && out[1].data == NULL);
    kf_graph_free(g);

    /* ranks aligned from the right: [2,1,4] with [3,1] gives [2,3,4]; an
     * integer literal takes the dtype of the other operand */
    g = kf_graph_new("bc3");
    a = kf_input(g, "a", KF_U8, 3, (kf_dim[]){ KF_DIM(2), KF_DIM(1), KF_DIM(4) });
    b = kf_input(g, "b", KF_U8, 2, (kf_dim[]){ KF_DIM(3), KF_DIM(1) });
    kf_node ab = kf_binary(g, KF_OP_MUL, a, b);
    kf_output(g, kf_binary(g, KF_OP_SUB, ab, kf_lit_i(g, KF_U8, 1)), "y");
    in[0] = harr(KF_U8, 3, SHAPE(2, 1, 4), (uint8_t[]){ 0, 1, 2, 3, 4, 5, 6, 7 });
    in[1] = harr(KF_U8, 2, SHAPE(3, 1), (uint8_t[]){ 1, 10, 100 });
    CHECK_STATUS(run(g, in, 2, out, 1, err, sizeof err), KF_OK);
    EXPECT(&out[0], KF_U8, 3, SHAPE(2, 3, 4),
           ((uint8_t[]){ 255, 0, 1, 2, 255, 9, 19, 29, 255, 99, 199, 43, /* 300-1 = 299 wraps to 43 */
                         3, 4, 5, 6, 39, 49, 59, 69, 143, 243, 87, 187 }));
    free_outputs(out, 1);
    kf_graph_free(g);

    /* symbols: [n,1] with [m] gives [n,m]; [1] with [n] gives [n]; a
     * symbol bound to 0 or 1 */
    g = kf_graph_new("bc4");
    a = kf_input(g, "a", KF_F32, 2, (kf_dim[]){ KF_SYM("n"), KF_DIM(1) });
    b = kf_input(g, "b", KF_F32, 1, (kf_dim[]){ KF_SYM("m") });
    kf_node one = kf_input(g, "one", KF_F32, 1, (kf_dim[]){ KF_DIM(1) });
    kf_output(g, kf_binary(g, KF_OP_ADD, a, b), "y");
    kf_output(g, kf_binary(g, KF_OP_MUL, one, b), "z");
    in[0] = harr(KF_F32, 2, SHAPE(2, 1), (float[]){ 1, 2 });
    in[1] = harr(KF_F32, 1, SHAPE(3), (float[]){ 10, 20, 30 });
    in[2] = harr(KF_F32, 1, SHAPE(1), (float[]){ -1 });
    CHECK_STATUS(run(g, in, 3, out, 2, err, sizeof err), KF_OK);
    EXPECT(&out[0], KF_F32, 2, SHAPE(2, 3), ((float[]){ 11, 21, 31, 12, 22, 32 }));
    EXPECT(&out[1], KF_F32, 1, SHAPE(3), ((float[]){ -10, -20, -30 }));
    free_outputs(out, 2);
    in[0] = harr(KF_F32, 2, SHAPE(0, 1), NULL); /* n = 0: empty, data may be NULL */
    in[1] = harr(KF_F32, 1, SHAPE(1), (float[]){ 5 });
    CHECK_STATUS(run(g, in, 3, out, 2, err, sizeof err), KF_OK);
    EXPECT(&out[0], KF_F32, 2, SHAPE(0, 1), NULL);
    EXPECT(&out[1], KF_F32, 1, SHAPE(1), ((float[]){ -5 }));
    free_outputs(out, 2);
    kf_graph_free(g);

    /* an empty literal dimension against 1 */
    g = kf_graph_new("bc5");
    a = kf_input(g, "a", KF_I64, 2, (kf_dim[]){ KF_DIM(0), KF_DIM(3) });
    b = kf_input(g, "b", KF_I64, 2, (kf_dim[]){ KF_DIM(1), KF_DIM(3) });
    kf_output(g, kf_binary(g, KF_OP_ADD, a, b), "y");
    in[0] = harr(KF_I64, 2, SHAPE(0, 3), NULL);
    in[1] = harr(KF_I64, 2, SHAPE(1, 3), (int64_t[]){ 1, 2, 3 });
    CHECK_STATUS(run(g, in, 2, out, 1, err, sizeof err), KF_OK);
    EXPECT(&out[0], KF_I64, 2, SHAPE(0, 3), NULL);
    CHECK(out[0].data != NULL); /* an empty output is still an allocation */
    free_outputs(out, 1);
    kf_graph_free(g);

    /* rejected by the builder: two symbols, a symbol against 4, 3 against 4 */
    const kf_dim bad[][2] = { { KF_SYM("n"), KF_SYM("m") }, { KF_SYM("n"), KF_DIM(4) }, { KF_DIM(3), KF_DIM(4) } };
    for (int i = 0; i < 3; i++) {
        g = kf_graph_new("bad");
        a = kf_input(g, "a", KF_F32, 1, &bad[i][0]);
        b = kf_input(g, "b", KF_F32, 1, &bad[i][1]);
        CHECK(kf_binary(g, KF_OP_ADD, a, b) == KF_NONE);
        CHECK_STATUS(kf_graph_status(g), KF_ERR_SHAPE);
        in[0] = harr(KF_F32, 1, SHAPE(1), (float[]){ 0 });
        in[1] = harr(KF_F32, 1, SHAPE(1), (float[]){ 0 });
        out[0].data = (void *)&err; /* must be cleared */
        CHECK_STATUS(run(g, in, 2, out, 1, err, sizeof err), KF_ERR_SHAPE);
        CHECK_CONTAINS(txt(err), "do not broadcast");
        if (i == 0)
            CHECK_CONTAINS(txt(err), "two different symbols never broadcast");
        CHECK(out[0].data == NULL);
        kf_graph_free(g);
    }
}

static void test_symbols(void)
{
    char err[512];
    kf_host_array out[1];
    kf_graph *g = kf_graph_new("sym");
    kf_node x = kf_input(g, "x", KF_F32, 1, (kf_dim[]){ KF_SYM("n") });
    kf_node y = kf_input(g, "y", KF_F32, 1, (kf_dim[]){ KF_SYM("n") });
    kf_node w = kf_input(g, "w", KF_F32, 2, (kf_dim[]){ KF_DIM(2), KF_SYM("n") });
    kf_node u = kf_input(g, "unused", KF_F32, 1, (kf_dim[]){ KF_SYM("n") });
    (void)u;
    kf_node xy = kf_binary(g, KF_OP_ADD, x, y);
    kf_output(g, kf_binary(g, KF_OP_MUL, xy, w), "r");
    CHECK_STATUS(kf_graph_verify(g), KF_OK);
    float d3[] = { 1, 2, 3 }, d4[] = { 1, 2, 3, 4 }, d6[] = { 1, 2, 3, 4, 5, 6 }, d8[8] = { 0 };
    kf_host_array in[4] = { harr(KF_F32, 1, SHAPE(3), d3), harr(KF_F32, 1, SHAPE(3), d3),
                            harr(KF_F32, 2, SHAPE(2, 3), d6), harr(KF_F32, 1, SHAPE(3), d3) };
    CHECK_STATUS(run(g, in, 4, out, 1, err, sizeof err), KF_OK);
    EXPECT(&out[0], KF_F32, 2, SHAPE(2, 3), ((float[]){ 2, 8, 18, 8, 20, 36 }));
    free_outputs(out, 1);

    /* n bound to 3 by x, 4 in y */
    in[1] = harr(KF_F32, 1, SHAPE(4), d4);
    CHECK_STATUS(run(g, in, 4, out, 1, err, sizeof err), KF_ERR_SHAPE);
    CHECK_CONTAINS(txt(err), "symbol 'n' is 3 in input 'x' but 4 in input 'y'");
    CHECK(out[0].data == NULL);
    /* the same in a later dimension of w */
    in[1] = harr(KF_F32, 1, SHAPE(3), d3);
    in[2] = harr(KF_F32, 2, SHAPE(2, 4), d8);
    CHECK_STATUS(run(g, in, 4, out, 1, err, sizeof err), KF_ERR_SHAPE);
    CHECK_CONTAINS(txt(err), "symbol 'n' is 3 in input 'x' but 4 in input 'w'");
    /* a literal dimension */
    in[2] = harr(KF_F32, 2, SHAPE(3, 3), (float[9]){ 0 });
    CHECK_STATUS(run(g, in, 4, out, 1, err, sizeof err), KF_ERR_SHAPE);
    CHECK_CONTAINS(txt(err), "input 'w': dimension 0 is 3, the graph wants 2");
    /* an input no output reads is still checked */
    in[2] = harr(KF_F32, 2, SHAPE(2, 3), d6);
    in[3] = harr(KF_F32, 1, SHAPE(4), d4);
    CHECK_STATUS(run(g, in, 4, out, 1, err, sizeof err), KF_ERR_SHAPE);
    CHECK_CONTAINS(txt(err), "symbol 'n' is 3 in input 'x' but 4 in input 'unused'");
    /* a negative dimension */
    in[3] = harr(KF_F32, 1, SHAPE(-1), d4);
    CHECK_STATUS(run(g, in, 4, out, 1, err, sizeof err), KF_ERR_SHAPE);
    CHECK_CONTAINS(txt(err), "negative");
    kf_graph_free(g);

    /* one symbol twice in one input */
    g = kf_graph_new("sq");
    x = kf_input(g, "x", KF_I32, 2, (kf_dim[]){ KF_SYM("n"), KF_SYM("n") });
    kf_output(g, kf_unary(g, KF_OP_NEG, x), "y");
    in[0] = harr(KF_I32, 2, SHAPE(2, 3), (int32_t[6]){ 0 });
    CHECK_STATUS(run(g, in, 1, out, 1, err, sizeof err), KF_ERR_SHAPE);
    CHECK_CONTAINS(txt(err), "symbol 'n' is 2 in input 'x' but 3 in input 'x'");
    in[0] = harr(KF_I32, 2, SHAPE(2, 2), (int32_t[]){ 1, -2, 3, -4 });
    CHECK_STATUS(run(g, in, 1, out, 1, err, sizeof err), KF_OK);
    EXPECT(&out[0], KF_I32, 2, SHAPE(2, 2), ((int32_t[]){ -1, 2, -3, 4 }));
    free_outputs(out, 1);
    kf_graph_free(g);

    /* a symbol no input binds */
    g = kf_graph_new("unbound");
    kf_output(g, kf_iota(g, KF_F32, 1, (kf_dim[]){ KF_SYM("k") }, 0), "y");
    CHECK_STATUS(kf_graph_verify(g), KF_OK);
    CHECK_STATUS(run(g, NULL, 0, out, 1, err, sizeof err), KF_ERR_SHAPE);
    CHECK_CONTAINS(txt(err), "symbol 'k' is not bound");
    CHECK(out[0].data == NULL);
    kf_graph_free(g);

    /* a symbol only an iota uses, bound by an input */
    g = kf_graph_new("bound");
    x = kf_input(g, "x", KF_F64, 1, (kf_dim[]){ KF_SYM("k") });
    kf_node io = kf_iota(g, KF_F64, 1, (kf_dim[]){ KF_SYM("k") }, 0);
    kf_output(g, kf_binary(g, KF_OP_ADD, x, io), "y");
    in[0] = harr(KF_F64, 1, SHAPE(4), (double[]){ 0.5, 0.5, 0.5, 0.5 });
    CHECK_STATUS(run(g, in, 1, out, 1, err, sizeof err), KF_OK);
    EXPECT(&out[0], KF_F64, 1, SHAPE(4), ((double[]){ 0.5, 1.5, 2.5, 3.5 }));
    free_outputs(out, 1);
    kf_graph_free(g);
}

/* -- iota and take ------------------------------------------------------------------------ */

static void test_iota(void)
{
    char err[512];
    kf_host_array out[4];
    kf_graph *g = kf_graph_new("iota");
    const kf_dim d234[3] = { KF_DIM(2), KF_DIM(3), KF_DIM(4) };
    kf_output(g, kf_iota(g, KF_I32, 3, d234, 0), "a0");
    kf_output(g, kf_iota(g, KF_I32, 3, d234, 1), "a1");
    kf_output(g, kf_iota(g, KF_F32, 3, d234, 2), "a2");
    kf_output(g, kf_iota(g, KF_U64, 3, d234, -2), "am2"); /* axis -2 is axis 1 */
    CHECK_STATUS(kf_graph_verify(g), KF_OK);
    CHECK_STATUS(run(g, NULL, 0, out, 4, err, sizeof err), KF_OK);
    EXPECT(&out[0], KF_I32, 3, SHAPE(2, 3, 4),
           ((int32_t[]){ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1 }));
    EXPECT(&out[1], KF_I32, 3, SHAPE(2, 3, 4),
           ((int32_t[]){ 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2 }));
    EXPECT(&out[2], KF_F32, 3, SHAPE(2, 3, 4),
           ((float[]){ 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3 }));
    EXPECT(&out[3], KF_U64, 3, SHAPE(2, 3, 4),
           ((uint64_t[]){ 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2 }));
    free_outputs(out, 4);
    kf_graph_free(g);

    /* converted like a cast from i64: u8 and i8 wrap, f16 and bf16 round */
    g = kf_graph_new("iota2");
    kf_output(g, kf_iota(g, KF_U8, 1, (kf_dim[]){ KF_DIM(300) }, 0), "u");
    kf_output(g, kf_iota(g, KF_I8, 2, (kf_dim[]){ KF_DIM(130), KF_DIM(1) }, 0), "i");
    kf_output(g, kf_iota(g, KF_F16, 1, (kf_dim[]){ KF_DIM(2052) }, 0), "h");
    kf_output(g, kf_iota(g, KF_BF16, 1, (kf_dim[]){ KF_DIM(300) }, -1), "b");
    CHECK_STATUS(run(g, NULL, 0, out, 4, err, sizeof err), KF_OK);
    static uint8_t wu[300];
    static int8_t wi[130];
    static uint16_t wh[2052], wb[300];
    for (int e = 0; e < 300; e++)
        wu[e] = (uint8_t)(e < 256 ? e : e - 256);
    for (int e = 0; e < 130; e++)
        wi[e] = (int8_t)(e < 128 ? e : e - 256);
    for (int e = 0; e < 2052; e++) /* above 2048 the f16 step is 2: 2049 ties to 2048, 2051 to 2052 */
        wh[e] = (uint16_t)f16_exact(e <= 2048 ? e : e == 2049 ? 2048 : e == 2051 ? 2052 : e);
    for (int e = 0; e < 300; e++) /* above 256 the bf16 step is 2: odd values tie to a multiple of 4 */
        wb[e] = (uint16_t)bf16_exact(e <= 256 || e % 2 == 0 ? e : e % 4 == 1 ? e - 1 : e + 1);
    EXPECT(&out[0], KF_U8, 1, SHAPE(300), wu);
    EXPECT(&out[1], KF_I8, 2, SHAPE(130, 1), wi);
    EXPECT(&out[2], KF_F16, 1, SHAPE(2052), wh);
    EXPECT(&out[3], KF_BF16, 1, SHAPE(300), wb);
    free_outputs(out, 4);
    kf_graph_free(g);

    /* a symbolic iota and an empty one */
    g = kf_graph_new("iota3");
    kf_node x = kf_input(g, "x", KF_I16, 2, (kf_dim[]){ KF_SYM("n"), KF_SYM("m") });
    kf_output(g, kf_binary(g, KF_OP_MUL, x, kf_iota(g, KF_I16, 2, (kf_dim[]){ KF_SYM("n"), KF_SYM("m") }, 1)), "y");
    kf_output(g, kf_iota(g, KF_F64, 2, (kf_dim[]){ KF_DIM(0), KF_SYM("m") }, 1), "e");
    kf_host_array in[1] = { harr(KF_I16, 2, SHAPE(2, 3), (int16_t[]){ 1, 1, 1, 2, 2, 2 }) };
    CHECK_STATUS(run(g, in, 1, out, 2, err, sizeof err), KF_OK);
    EXPECT(&out[0], KF_I16, 2, SHAPE(2, 3), ((int16_t[]){ 0, 1, 2, 0, 2, 4 }));
    EXPECT(&out[1], KF_F64, 2, SHAPE(0, 3), NULL);
    free_outputs(out, 2);
    kf_graph_free(g);

    /* rejected by the builder */
    g = kf_graph_new("iota4");
    CHECK(kf_iota(g, KF_BOOL, 1, (kf_dim[]){ KF_DIM(3) }, 0) == KF_NONE);
    CHECK_STATUS(kf_graph_status(g), KF_ERR_TYPE);
    kf_graph_free(g);
    g = kf_graph_new("iota5");
    CHECK(kf_iota(g, KF_I32, 1, (kf_dim[]){ KF_DIM(3) }, 1) == KF_NONE);
    CHECK_STATUS(kf_graph_status(g), KF_ERR_SHAPE);
    kf_graph_free(g);
}

/* v = {10, 11, 12, 13, 14} (f32) taken at an index array of dtype it. */
static void take_case(kf_dtype it, const int64_t *idx, int n, const float *want, kf_status ws, const char *msg,
                      int line)
{
    char err[512] = "";
    kf_graph *g = kf_graph_new("tk");
    kf_node v = kf_input(g, "v", KF_F32, 1, (kf_dim[]){ KF_SYM("len") });
    kf_node ix = kf_input(g, "ix", it, 1, (kf_dim[]){ KF_SYM("n") });
    kf_output(g, kf_take(g, v, ix), "y");
    kf_output(g, kf_binary(g, KF_OP_MUL, v, kf_lit_f(g, KF_F32, 2)), "z");
    CHECK_STATUS(kf_graph_verify(g), KF_OK);
    uint64_t raw[16];
    for (int i = 0; i < n; i++)
        put_i(it, raw, i, idx[i]);
    kf_host_array in[2] = { harr(KF_F32, 1, SHAPE(5), (float[]){ 10, 11, 12, 13, 14 }), harr(it, 1, SHAPE(n), raw) };
    kf_host_array out[2];
    kf_status s = run(g, in, 2, out, 2, err, sizeof err);
    CHECK_MSG(s == ws, "line %d: take with %s index: %s (%s)", line, kf_dtype_name(it), kf_status_string(s), err);
    /* every output is filled even when an index is out of range */
    expect_arr(&out[0], KF_F32, 1, SHAPE(n), want, line);
    expect_arr(&out[1], KF_F32, 1, SHAPE(5), ((float[]){ 20, 22, 24, 26, 28 }), line);
    if (msg)
        CHECK_MSG(strstr(err, msg) != NULL, "line %d: message '%s' lacks '%s'", line, err, msg);
    else
        CHECK_MSG(err[0] == 0, "line %d: unexpected message '%s'", line, err);
    free_outputs(out, 2);
    kf_graph_free(g);
}
#define TAKE(it, idx, want, ws, msg) \
    take_case(it, idx, N_(idx), want, ws, msg, __LINE__)

static void test_take(void)
{
    /* every index dtype, in range */
    const int64_t ok_idx[] = { 4, 0, 3, 1, 2, 2 };
    const float ok_want[] = { 14, 10, 13, 11, 12, 12 };
    for (int k = 0; k < 4; k++) {
        TAKE(SINTS[k], ok_idx, ok_want, KF_OK, NULL);
        TAKE(UINTS[k], ok_idx, ok_want, KF_OK, NULL);
    }
    /* out of range: 0 there, every other element and output filled, the
     * first bad index named with its position */
    const float bad_want[] = { 10, 14, 0, 0, 12, 0 };
    const int64_t sbad[] = { 0, 4, -1, 5, 2, -128 };
    TAKE(KF_I8, sbad, bad_want, KF_ERR_INDEX, "take 'y': index -1 at position [2] is out of range for length 5");
    const int64_t sbad16[] = { 0, 4, 32767, -32768, 2, 5 };
    TAKE(KF_I16, sbad16, bad_want, KF_ERR_INDEX, "index 32767 at position [2]");
    const int64_t sbad32[] = { 0, 4, INT32_MIN, 5, 2, INT32_MAX };
    TAKE(KF_I32, sbad32, bad_want, KF_ERR_INDEX, "index -2147483648 at position [2]");
    const int64_t sbad64[] = { 0, 4, INT64_MIN, INT64_MAX, 2, -5 };
    TAKE(KF_I64, sbad64, bad_want, KF_ERR_INDEX, "index -9223372036854775808 at position [2]");
    const int64_t ubad[] = { 0, 4, -1, 5, 2, 6 }; /* -1: the dtype's maximum */
    TAKE(KF_U8, ubad, bad_want, KF_ERR_INDEX, "index 255 at position [2]");
    TAKE(KF_U16, ubad, bad_want, KF_ERR_INDEX, "index 65535 at position [2]");
    TAKE(KF_U32, ubad, bad_want, KF_ERR_INDEX, "index 4294967295 at position [2]");
    TAKE(KF_U64, ubad, bad_want, KF_ERR_INDEX, "index 18446744073709551615 at position [2]");
    const int64_t ubad64[] = { 0, 4, INT64_MIN, 5, 2, 5 }; /* 2^63 */
    TAKE(KF_U64, ubad64, bad_want, KF_ERR_INDEX, "index 9223372036854775808 at position [2]");
    const int64_t first[] = { 7, -3 };
    TAKE(KF_I32, first, ((const float[]){ 0, 0 }), KF_ERR_INDEX, "index 7 at position [0]");

    char err[512];
    kf_host_array out[3];
    /* a 2-D index, and f16, bool and i64 vectors */
    kf_graph *g = kf_graph_new("tk2");
    kf_node v = kf_input(g, "v", KF_I64, 1, (kf_dim[]){ KF_DIM(3) });
    kf_node ix = kf_input(g, "ix", KF_I32, 2, (kf_dim[]){ KF_DIM(2), KF_DIM(3) });
    kf_node h = kf_input(g, "h", KF_F16, 1, (kf_dim[]){ KF_DIM(4) });
    kf_node b = kf_input(g, "b", KF_BOOL, 1, (kf_dim[]){ KF_DIM(3) });
    kf_node hi = kf_input(g, "hi", KF_U16, 1, (kf_dim[]){ KF_DIM(5) });
    kf_node bi = kf_input(g, "bi", KF_I8, 1, (kf_dim[]){ KF_DIM(3) });
    kf_output(g, kf_take(g, v, ix), "y");
    kf_output(g, kf_take(g, h, hi), "hy");
    kf_output(g, kf_take(g, b, bi), "by");
    kf_host_array in[6] = {
        harr(KF_I64, 1, SHAPE(3), (int64_t[]){ INT64_MIN, -1, INT64_MAX }),
        harr(KF_I32, 2, SHAPE(2, 3), (int32_t[]){ 2, 1, 0, 0, 9, 2 }),
        harr(KF_F16, 1, SHAPE(4), (uint16_t[]){ 0x3c00, 0x4000, 0x7e01, 0x8000 }),
        harr(KF_BOOL, 1, SHAPE(3), (uint8_t[]){ 1, 0, 1 }),
        harr(KF_U16, 1, SHAPE(5), (uint16_t[]){ 3, 2, 1, 0, 4 }),
        harr(KF_I8, 1, SHAPE(3), (int8_t[]){ 2, 1, 0 }),
    };
    CHECK_STATUS(run(g, in, 6, out, 3, err, sizeof err), KF_ERR_INDEX);
    CHECK_CONTAINS(txt(err), "take 'y': index 9 at position [1,1] is out of range for length 3");
    EXPECT(&out[0], KF_I64, 2, SHAPE(2, 3), ((int64_t[]){ INT64_MAX, -1, INT64_MIN, INT64_MIN, 0, INT64_MAX }));
    EXPECT(&out[1], KF_F16, 1, SHAPE(5), ((uint16_t[]){ 0x8000, 0x7e01, 0x4000, 0x3c00, 0x0000 }));
    CHECK(out[1].data && get_bits(KF_F16, out[1].data, 1) == 0x7e01); /* take moves bits, NaN payload too */
    EXPECT(&out[2], KF_BOOL, 1, SHAPE(3), ((uint8_t[]){ 1, 0, 1 }));
    free_outputs(out, 3);
    /* the second take is the first bad one */
    ((int32_t *)in[1].data)[4] = 1;
    ((uint16_t *)in[4].data)[3] = 4;
    CHECK_STATUS(run(g, in, 6, out, 3, err, sizeof err), KF_ERR_INDEX);
    CHECK_CONTAINS(txt(err), "take 'hy': index 4 at position [3] is out of range for length 4");
    EXPECT(&out[0], KF_I64, 2, SHAPE(2, 3), ((int64_t[]){ INT64_MAX, -1, INT64_MIN, INT64_MIN, -1, INT64_MAX }));
    EXPECT(&out[1], KF_F16, 1, SHAPE(5), ((uint16_t[]){ 0x8000, 0x7e01, 0x4000, 0x0000, 0x0000 }));
    free_outputs(out, 3);
    kf_graph_free(g);

    /* scalar index, literal index, empty vector, empty index, unnamed node */
    g = kf_graph_new("tk3");
    v = kf_input(g, "v", KF_F64, 1, (kf_dim[]){ KF_SYM("n") });
    kf_node s = kf_scalar(g, "s", KF_I64);
    kf_node e = kf_input(g, "e", KF_U32, 1, (kf_dim[]){ KF_SYM("m") });
    kf_output(g, kf_take(g, v, s), "y");
    kf_output(g, kf_take(g, v, kf_lit_i(g, KF_I32, 1)), "l");
    kf_node t = kf_take(g, v, e);
    kf_output(g, kf_unary(g, KF_OP_NEG, t), "ne");
    in[0] = harr(KF_F64, 1, SHAPE(3), (double[]){ 1.5, 2.5, 3.5 });
    in[1] = harr(KF_I64, 0, NULL, (int64_t[]){ 2 });
    in[2] = harr(KF_U32, 1, SHAPE(0), NULL);
    CHECK_STATUS(run(g, in, 3, out, 3, err, sizeof err), KF_OK);
    EXPECT(&out[0], KF_F64, 0, NULL, ((double[]){ 3.5 }));
    EXPECT(&out[1], KF_F64, 0, NULL, ((double[]){ 2.5 }));
    EXPECT(&out[2], KF_F64, 1, SHAPE(0), NULL);
    free_outputs(out, 3);
    in[1] = harr(KF_I64, 0, NULL, (int64_t[]){ 3 });
    in[2] = harr(KF_U32, 1, SHAPE(2), (uint32_t[]){ 0, 1 });
    CHECK_STATUS(run(g, in, 3, out, 3, err, sizeof err), KF_ERR_INDEX);
    CHECK_CONTAINS(txt(err), "take 'y': index 3 at position [] is out of range for length 3");
    EXPECT(&out[0], KF_F64, 0, NULL, ((double[]){ 0 }));
    EXPECT(&out[1], KF_F64, 0, NULL, ((double[]){ 2.5 }));
    EXPECT(&out[2], KF_F64, 1, SHAPE(2), ((double[]){ -1.5, -2.5 }));
    free_outputs(out, 3);
    in[0] = harr(KF_F64, 1, SHAPE(0), NULL); /* nothing is in range */
    in[1] = harr(KF_I64, 0, NULL, (int64_t[]){ 0 });
    CHECK_STATUS(run(g, in, 3, out, 3, err, sizeof err), KF_ERR_INDEX);
    CHECK_CONTAINS(txt(err), "index 0 at position [] is out of range for length 0");
    EXPECT(&out[0], KF_F64, 0, NULL, ((double[]){ 0 }));
    EXPECT(&out[1], KF_F64, 0, NULL, ((double[]){ 0 }));
    EXPECT(&out[2], KF_F64, 1, SHAPE(2), ((double[]){ -0.0, -0.0 }));
    free_outputs(out, 3);
    /* an unnamed take is named by its node number */
    in[0] = harr(KF_F64, 1, SHAPE(3), (double[]){ 1.5, 2.5, 3.5 });
    in[2] = harr(KF_U32, 1, SHAPE(2), (uint32_t[]){ 0, 7 });
    CHECK_STATUS(run(g, in, 3, out, 3, err, sizeof err), KF_ERR_INDEX);
    char want[80];
    snprintf(want, sizeof want, "take (node %d): index 7 at position [1]", (int)t);
    CHECK_CONTAINS(txt(err), want);
    free_outputs(out, 3);
    kf_graph_free(g);

    /* an index of a non-integer dtype is rejected by the builder */
    g = kf_graph_new("tk4");
    v = kf_input(g, "v", KF_F32, 1, (kf_dim[]){ KF_DIM(3) });
    CHECK(kf_take(g, v, kf_input(g, "f", KF_F32, 1, (kf_dim[]){ KF_DIM(3) })) == KF_NONE);
    CHECK_STATUS(kf_graph_status(g), KF_ERR_TYPE);
    kf_graph_free(g);
}

/* -- Reductions ------------------------------------------------------------------------------- */

/* One reduction of a over axes (naxes 0: all) into its only output. */
static void reduce_case(kf_op op, const kf_host_array *a, int naxes, const int *axes, bool keepdims, kf_dtype wt,
                        int wrank, const int64_t *wshape, const void *want, int line)
{
    char err[512];
    kf_graph *g = kf_graph_new("red");
    kf_dim d[KF_MAX_RANK];
    for (int i = 0; i < a->rank; i++)
        d[i] = KF_DIM(a->shape[i]);
    kf_node x = kf_input(g, "x", a->dtype, a->rank, d);
    kf_output(g, kf_reduce(g, op, x, naxes, axes, keepdims), "r");
    kf_status s = kf_graph_verify(g);
    CHECK_MSG(s == KF_OK, "line %d: %s", line, kf_graph_error(g));
    kf_host_array out[1];
    s = run(g, a, 1, out, 1, err, sizeof err);
    CHECK_MSG(s == KF_OK, "line %d: %s: %s", line, kf_status_string(s), err);
    if (s == KF_OK)
        expect_arr(&out[0], wt, wrank, wshape, want, line);
    free_outputs(out, 1);
    kf_graph_free(g);
}
#define AXES(...) N_(((const int[]){ __VA_ARGS__ })), ((const int[]){ __VA_ARGS__ })
#define ALL 0, NULL
#define REDUCE(op, a, axes, keep, wt, wrank, wshape, want) \
    reduce_case(op, a, axes, keep, wt, wrank, wshape, want, __LINE__)

static void test_reduce_basic(void)
{
    const kf_host_array x = harr(KF_F32, 2, SHAPE(2, 3), (float[]){ 1, 2, 3, 4, 5, 6 });
    REDUCE(KF_OP_SUM, &x, ALL, false, KF_F32, 0, NULL, ((float[]){ 21 }));
    REDUCE(KF_OP_SUM, &x, AXES(0), false, KF_F32, 1, SHAPE(3), ((float[]){ 5, 7, 9 }));
    REDUCE(KF_OP_SUM, &x, AXES(1), false, KF_F32, 1, SHAPE(2), ((float[]){ 6, 15 }));
    REDUCE(KF_OP_SUM, &x, AXES(1, 0), false, KF_F32, 0, NULL, ((float[]){ 21 }));
    REDUCE(KF_OP_SUM, &x, AXES(-1), true, KF_F32, 2, SHAPE(2, 1), ((float[]){ 6, 15 }));
    REDUCE(KF_OP_SUM, &x, ALL, true, KF_F32, 2, SHAPE(1, 1), ((float[]){ 21 }));
    REDUCE(KF_OP_PROD, &x, ALL, false, KF_F32, 0, NULL, ((float[]){ 720 }));
    REDUCE(KF_OP_PROD, &x, AXES(0), false, KF_F32, 1, SHAPE(3), ((float[]){ 4, 10, 18 }));
    REDUCE(KF_OP_PROD, &x, AXES(1), true, KF_F32, 2, SHAPE(2, 1), ((float[]){ 6, 120 }));
    REDUCE(KF_OP_RMIN, &x, AXES(1), false, KF_F32, 1, SHAPE(2), ((float[]){ 1, 4 }));
    REDUCE(KF_OP_RMIN, &x, ALL, false, KF_F32, 0, NULL, ((float[]){ 1 }));
    REDUCE(KF_OP_RMAX, &x, AXES(0), false, KF_F32, 1, SHAPE(3), ((float[]){ 4, 5, 6 }));
    REDUCE(KF_OP_RMAX, &x, AXES(0), true, KF_F32, 2, SHAPE(1, 3), ((float[]){ 4, 5, 6 }));
    REDUCE(KF_OP_MEAN, &x, ALL, false, KF_F32, 0, NULL, ((float[]){ 3.5 }));
    REDUCE(KF_OP_MEAN, &x, AXES(0), false, KF_F32, 1, SHAPE(3), ((float[]){ 2.5, 3.5, 4.5 }));
    REDUCE(KF_OP_MEAN, &x, AXES(1), true, KF_F32, 2, SHAPE(2, 1), ((float[]){ 2, 5 }));
    REDUCE(KF_OP_ARGMIN, &x, AXES(1), false, KF_I64, 1, SHAPE(2), ((int64_t[]){ 0, 0 }));
    REDUCE(KF_OP_ARGMAX, &x, AXES(1), false, KF_I64, 1, SHAPE(2), ((int64_t[]){ 2, 2 }));
    REDUCE(KF_OP_ARGMAX, &x, ALL, false, KF_I64, 0, NULL, ((int64_t[]){ 5 }));
    REDUCE(KF_OP_ARGMIN, &x, AXES(0), true, KF_I64, 2, SHAPE(1, 3), ((int64_t[]){ 0, 0, 0 }));

    /* rank 3, two of three axes: d[i][j][k] at i*12 + j*4 + k */
    const kf_host_array r = harr(KF_I32, 3, SHAPE(2, 3, 4), (int32_t[]){ 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13,
                                                                        14, 15, 16, 17, 18, 19, 20, 21, 22, 23 });
    REDUCE(KF_OP_SUM, &r, AXES(0, 2), false, KF_I32, 1, SHAPE(3), ((int32_t[]){ 60, 92, 124 }));
    REDUCE(KF_OP_SUM, &r, AXES(2, 0), true, KF_I32, 3, SHAPE(1, 3, 1), ((int32_t[]){ 60, 92, 124 }));
    REDUCE(KF_OP_SUM, &r, AXES(1), false, KF_I32, 2, SHAPE(2, 4),
           ((int32_t[]){ 12, 15, 18, 21, 48, 51, 54, 57 }));
    REDUCE(KF_OP_RMAX, &r, AXES(0, 1), false, KF_I32, 1, SHAPE(4), ((int32_t[]){ 20, 21, 22, 23 }));
    REDUCE(KF_OP_ARGMAX, &r, AXES(0, 2), false, KF_I64, 1, SHAPE(3), ((int64_t[]){ 7, 7, 7 }));
    REDUCE(KF_OP_ARGMIN, &r, AXES(0, 2), false, KF_I64, 1, SHAPE(3), ((int64_t[]){ 0, 0, 0 }));

    /* argmin/argmax: the position flattened row-major over the reduced axes */
    double d[24] = { 0 };
    d[2] = 5;   /* [0][0][2] */
    d[16] = 7;  /* [1][1][0] */
    d[23] = 9;  /* [1][2][3] */
    d[13] = -1; /* [1][0][1] */
    d[10] = -3; /* [0][2][2] */
    const kf_host_array q = harr(KF_F64, 3, SHAPE(2, 3, 4), d);
    REDUCE(KF_OP_ARGMAX, &q, AXES(0, 2), false, KF_I64, 1, SHAPE(3), ((int64_t[]){ 2, 4, 7 }));
    REDUCE(KF_OP_ARGMIN, &q, AXES(0, 2), false, KF_I64, 1, SHAPE(3), ((int64_t[]){ 5, 0, 2 }));
    REDUCE(KF_OP_ARGMAX, &q, AXES(0, 1), false, KF_I64, 1, SHAPE(4), ((int64_t[]){ 4, 0, 0, 5 }));
    REDUCE(KF_OP_ARGMIN, &q, AXES(0, 1), true, KF_I64, 3, SHAPE(1, 1, 4), ((int64_t[]){ 0, 3, 2, 0 }));
    REDUCE(KF_OP_ARGMAX, &q, ALL, false, KF_I64, 0, NULL, ((int64_t[]){ 23 }));
    REDUCE(KF_OP_ARGMIN, &q, ALL, false, KF_I64, 0, NULL, ((int64_t[]){ 10 }));
    REDUCE(KF_OP_SUM, &q, AXES(1), false, KF_F64, 2, SHAPE(2, 4), ((double[]){ 0, 0, 2, 0, 7, -1, 0, 9 }));
    REDUCE(KF_OP_MEAN, &q, AXES(0, 1, 2), false, KF_F64, 0, NULL, ((double[]){ 17.0 / 24 }));

    /* a 0-d array: the element itself; argmin/argmax 0 */
    const kf_host_array z = harr(KF_F32, 0, NULL, (float[]){ 2.5 });
    REDUCE(KF_OP_SUM, &z, ALL, false, KF_F32, 0, NULL, ((float[]){ 2.5 }));
    REDUCE(KF_OP_MEAN, &z, ALL, true, KF_F32, 0, NULL, ((float[]){ 2.5 }));
    REDUCE(KF_OP_RMIN, &z, ALL, false, KF_F32, 0, NULL, ((float[]){ 2.5 }));
    REDUCE(KF_OP_ARGMAX, &z, ALL, false, KF_I64, 0, NULL, ((int64_t[]){ 0 }));
    const kf_host_array zi = harr(KF_I32, 0, NULL, (int32_t[]){ 7 });
    REDUCE(KF_OP_PROD, &zi, ALL, false, KF_I32, 0, NULL, ((int32_t[]){ 7 }));
    REDUCE(KF_OP_ARGMIN, &zi, ALL, false, KF_I64, 0, NULL, ((int64_t[]){ 0 }));
}

static void test_reduce_ints(void)
{
    /* sum and prod wrap */
    const kf_host_array i8 = harr(KF_I8, 1, SHAPE(2), (int8_t[]){ 127, 1 });
    REDUCE(KF_OP_SUM, &i8, ALL, false, KF_I8, 0, NULL, ((int8_t[]){ -128 }));
    REDUCE(KF_OP_PROD, &i8, ALL, false, KF_I8, 0, NULL, ((int8_t[]){ 127 }));
    const kf_host_array i8b = harr(KF_I8, 2, SHAPE(2, 2), (int8_t[]){ 16, 16, 2, 64 });
    REDUCE(KF_OP_PROD, &i8b, AXES(1), false, KF_I8, 1, SHAPE(2), ((int8_t[]){ 0, -128 }));
    REDUCE(KF_OP_SUM, &i8b, AXES(1), false, KF_I8, 1, SHAPE(2), ((int8_t[]){ 32, 66 }));
    const kf_host_array u8 = harr(KF_U8, 1, SHAPE(3), (uint8_t[]){ 255, 1, 3 });
    REDUCE(KF_OP_SUM, &u8, ALL, false, KF_U8, 0, NULL, ((uint8_t[]){ 3 }));
    REDUCE(KF_OP_PROD, &u8, ALL, false, KF_U8, 0, NULL, ((uint8_t[]){ 253 })); /* 765 - 512 */
    const kf_host_array i16 = harr(KF_I16, 1, SHAPE(2), (int16_t[]){ 30000, 30000 });
    REDUCE(KF_OP_SUM, &i16, ALL, false, KF_I16, 0, NULL, ((int16_t[]){ -5536 }));
    const kf_host_array i64 = harr(KF_I64, 1, SHAPE(2), (int64_t[]){ INT64_MAX, 1 });
    REDUCE(KF_OP_SUM, &i64, ALL, false, KF_I64, 0, NULL, ((int64_t[]){ INT64_MIN }));
    const kf_host_array u64 = harr(KF_U64, 1, SHAPE(2), (uint64_t[]){ 0x100000000u, 0x100000000u });
    REDUCE(KF_OP_PROD, &u64, ALL, false, KF_U64, 0, NULL, ((uint64_t[]){ 0 }));
    REDUCE(KF_OP_SUM, &u64, ALL, false, KF_U64, 0, NULL, ((uint64_t[]){ 0x200000000u }));
    const kf_host_array u32 = harr(KF_U32, 1, SHAPE(2), (uint32_t[]){ 0x80000000u, 0x80000000u });
    REDUCE(KF_OP_SUM, &u32, ALL, false, KF_U32, 0, NULL, ((uint32_t[]){ 0 }));

    /* min/max/argmin/argmax compare signed and unsigned correctly; ties
     * give the first index */
    const kf_host_array s = harr(KF_I8, 1, SHAPE(4), (int8_t[]){ 3, -5, 7, -5 });
    REDUCE(KF_OP_RMIN, &s, ALL, false, KF_I8, 0, NULL, ((int8_t[]){ -5 }));
    REDUCE(KF_OP_RMAX, &s, ALL, false, KF_I8, 0, NULL, ((int8_t[]){ 7 }));
    REDUCE(KF_OP_ARGMIN, &s, ALL, false, KF_I64, 0, NULL, ((int64_t[]){ 1 }));
    REDUCE(KF_OP_ARGMAX, &s, ALL, false, KF_I64, 0, NULL, ((int64_t[]){ 2 }));
    const kf_host_array u = harr(KF_U8, 1, SHAPE(3), (uint8_t[]){ 100, 200, 200 });
    REDUCE(KF_OP_RMIN, &u, ALL, false, KF_U8, 0, NULL, ((uint8_t[]){ 100 }));
    REDUCE(KF_OP_RMAX, &u, ALL, false, KF_U8, 0, NULL, ((uint8_t[]){ 200 }));
    REDUCE(KF_OP_ARGMAX, &u, ALL, false, KF_I64, 0, NULL, ((int64_t[]){ 1 }));
    const kf_host_array u6 = harr(KF_U64, 1, SHAPE(2), (uint64_t[]){ 0, UINT64_MAX });
    REDUCE(KF_OP_RMAX, &u6, ALL, false, KF_U64, 0, NULL, ((uint64_t[]){ UINT64_MAX }));
    REDUCE(KF_OP_ARGMIN, &u6, ALL, false, KF_I64, 0, NULL, ((int64_t[]){ 0 }));
    const kf_host_array s6 = harr(KF_I64, 1, SHAPE(3), (int64_t[]){ 0, INT64_MIN, INT64_MAX });
    REDUCE(KF_OP_RMIN, &s6, ALL, false, KF_I64, 0, NULL, ((int64_t[]){ INT64_MIN }));
    REDUCE(KF_OP_ARGMAX, &s6, ALL, false, KF_I64, 0, NULL, ((int64_t[]){ 2 }));
    const kf_host_array tie = harr(KF_I16, 1, SHAPE(4), (int16_t[]){ 3, 1, 1, 3 });
    REDUCE(KF_OP_ARGMIN, &tie, ALL, false, KF_I64, 0, NULL, ((int64_t[]){ 1 }));
    REDUCE(KF_OP_ARGMAX, &tie, ALL, false, KF_I64, 0, NULL, ((int64_t[]){ 0 }));

    /* empty: 0, 1, the dtype's maximum (min) or minimum (max), -1 */
    const kf_host_array e8 = harr(KF_I8, 1, SHAPE(0), NULL);
    REDUCE(KF_OP_SUM, &e8, ALL, false, KF_I8, 0, NULL, ((int8_t[]){ 0 }));
    REDUCE(KF_OP_PROD, &e8, ALL, false, KF_I8, 0, NULL, ((int8_t[]){ 1 }));
    REDUCE(KF_OP_RMIN, &e8, ALL, false, KF_I8, 0, NULL, ((int8_t[]){ 127 }));
    REDUCE(KF_OP_RMAX, &e8, ALL, false, KF_I8, 0, NULL, ((int8_t[]){ -128 }));
    REDUCE(KF_OP_ARGMIN, &e8, ALL, false, KF_I64, 0, NULL, ((int64_t[]){ -1 }));
    REDUCE(KF_OP_ARGMAX, &e8, ALL, true, KF_I64, 1, SHAPE(1), ((int64_t[]){ -1 }));
    const kf_host_array e16 = harr(KF_U16, 2, SHAPE(2, 0), NULL);
    REDUCE(KF_OP_RMIN, &e16, AXES(1), false, KF_U16, 1, SHAPE(2), ((uint16_t[]){ 65535, 65535 }));
    REDUCE(KF_OP_RMAX, &e16, AXES(1), false, KF_U16, 1, SHAPE(2), ((uint16_t[]){ 0, 0 }));
    REDUCE(KF_OP_PROD, &e16, AXES(1), true, KF_U16, 2, SHAPE(2, 1), ((uint16_t[]){ 1, 1 }));
    REDUCE(KF_OP_SUM, &e16, AXES(0), false, KF_U16, 1, SHAPE(0), NULL);
    const kf_host_array e32 = harr(KF_I32, 1, SHAPE(0), NULL);
    REDUCE(KF_OP_RMIN, &e32, ALL, false, KF_I32, 0, NULL, ((int32_t[]){ INT32_MAX }));
    REDUCE(KF_OP_RMAX, &e32, ALL, false, KF_I32, 0, NULL, ((int32_t[]){ INT32_MIN }));
    const kf_host_array e64 = harr(KF_I64, 1, SHAPE(0), NULL);
    REDUCE(KF_OP_RMIN, &e64, ALL, false, KF_I64, 0, NULL, ((int64_t[]){ INT64_MAX }));
    REDUCE(KF_OP_RMAX, &e64, ALL, false, KF_I64, 0, NULL, ((int64_t[]){ INT64_MIN }));
    const kf_host_array eu32 = harr(KF_U32, 1, SHAPE(0), NULL);
    REDUCE(KF_OP_RMIN, &eu32, ALL, false, KF_U32, 0, NULL, ((uint32_t[]){ UINT32_MAX }));
    const kf_host_array eu64 = harr(KF_U64, 1, SHAPE(0), NULL);
    REDUCE(KF_OP_RMIN, &eu64, ALL, false, KF_U64, 0, NULL, ((uint64_t[]){ UINT64_MAX }));
    REDUCE(KF_OP_RMAX, &eu64, ALL, false, KF_U64, 0, NULL, ((uint64_t[]){ 0 }));
}

static void test_reduce_floats(void)
{
    /* NaN propagates through sum, prod, min, max, mean; argmin/argmax give
     * the first NaN */
    const kf_host_array n = harr(KF_F32, 1, SHAPE(4), (float[]){ 1, NAN, 5, NAN });
    REDUCE(KF_OP_SUM, &n, ALL, false, KF_F32, 0, NULL, ((float[]){ NAN }));
    REDUCE(KF_OP_PROD, &n, ALL, false, KF_F32, 0, NULL, ((float[]){ NAN }));
    REDUCE(KF_OP_RMIN, &n, ALL, false, KF_F32, 0, NULL, ((float[]){ NAN }));
    REDUCE(KF_OP_RMAX, &n, ALL, false, KF_F32, 0, NULL, ((float[]){ NAN }));
    REDUCE(KF_OP_MEAN, &n, ALL, false, KF_F32, 0, NULL, ((float[]){ NAN }));
    REDUCE(KF_OP_ARGMIN, &n, ALL, false, KF_I64, 0, NULL, ((int64_t[]){ 1 }));
    REDUCE(KF_OP_ARGMAX, &n, ALL, false, KF_I64, 0, NULL, ((int64_t[]){ 1 }));
    const kf_host_array nl = harr(KF_F64, 2, SHAPE(2, 3), (double[]){ 1, 2, NaN, -INF, 0, 3 });
    REDUCE(KF_OP_RMAX, &nl, AXES(1), false, KF_F64, 1, SHAPE(2), ((double[]){ NaN, 3 }));
    REDUCE(KF_OP_RMIN, &nl, AXES(1), false, KF_F64, 1, SHAPE(2), ((double[]){ NaN, -INF }));
    REDUCE(KF_OP_ARGMAX, &nl, AXES(1), false, KF_I64, 1, SHAPE(2), ((int64_t[]){ 2, 2 }));
    REDUCE(KF_OP_ARGMIN, &nl, AXES(1), false, KF_I64, 1, SHAPE(2), ((int64_t[]){ 2, 0 }));
    REDUCE(KF_OP_ARGMIN, &nl, AXES(0), false, KF_I64, 1, SHAPE(3), ((int64_t[]){ 1, 1, 0 }));
    /* ties and zeros: the first index; min -0 below +0 */
    const kf_host_array t = harr(KF_F16, 1, SHAPE(4), (uint16_t[]){ 0x4200, 0x3c00, 0x3c00, 0x4200 });
    REDUCE(KF_OP_ARGMIN, &t, ALL, false, KF_I64, 0, NULL, ((int64_t[]){ 1 }));
    REDUCE(KF_OP_ARGMAX, &t, ALL, false, KF_I64, 0, NULL, ((int64_t[]){ 0 }));
    const kf_host_array zz = harr(KF_F32, 1, SHAPE(2), (float[]){ 0.0f, -0.0f });
    REDUCE(KF_OP_RMIN, &zz, ALL, false, KF_F32, 0, NULL, ((float[]){ -0.0f }));
    REDUCE(KF_OP_RMAX, &zz, ALL, false, KF_F32, 0, NULL, ((float[]){ 0.0f }));
    REDUCE(KF_OP_ARGMIN, &zz, ALL, false, KF_I64, 0, NULL, ((int64_t[]){ 0 }));
    const kf_host_array zz2 = harr(KF_F32, 1, SHAPE(2), (float[]){ -0.0f, 0.0f });
    REDUCE(KF_OP_RMAX, &zz2, ALL, false, KF_F32, 0, NULL, ((float[]){ 0.0f }));
    REDUCE(KF_OP_RMIN, &zz2, ALL, false, KF_F32, 0, NULL, ((float[]){ -0.0f }));
    const kf_host_array inf = harr(KF_BF16, 1, SHAPE(3), (uint16_t[]){ 0xff80, 0x3f80, 0x7f80 });
    REDUCE(KF_OP_SUM, &inf, ALL, false, KF_BF16, 0, NULL, ((uint16_t[]){ 0x7fc0 })); /* -inf + inf */
    REDUCE(KF_OP_RMIN, &inf, ALL, false, KF_BF16, 0, NULL, ((uint16_t[]){ 0xff80 }));
    REDUCE(KF_OP_ARGMAX, &inf, ALL, false, KF_I64, 0, NULL, ((int64_t[]){ 2 }));

    /* accumulated in double, rounded once: an f32 or f16 running sum would
     * lose these */
    const kf_host_array a = harr(KF_F32, 1, SHAPE(3), (float[]){ 1, 0x1p-30f, -1 });
    REDUCE(KF_OP_SUM, &a, ALL, false, KF_F32, 0, NULL, ((float[]){ 0x1p-30f }));
    const kf_host_array b = harr(KF_F32, 1, SHAPE(3), (float[]){ 0x1p24f, 1, 1 });
    REDUCE(KF_OP_SUM, &b, ALL, false, KF_F32, 0, NULL, ((float[]){ 16777218.0f }));
    const kf_host_array b4 = harr(KF_F32, 1, SHAPE(4), (float[]){ 0x1p24f, 1, 1, 2 });
    REDUCE(KF_OP_MEAN, &b4, ALL, false, KF_F32, 0, NULL, ((float[]){ 4194305.0f }));
    const kf_host_array p = harr(KF_F32, 1, SHAPE(3), (float[]){ 0x1p100f, 0x1p100f, 0x1p-100f });
    REDUCE(KF_OP_PROD, &p, ALL, false, KF_F32, 0, NULL, ((float[]){ 0x1p100f }));
    const kf_host_array h = harr(KF_F16, 1, SHAPE(3), (uint16_t[]){ 0x6800, 0x3c00, 0x3c00 }); /* 2048, 1, 1 */
    REDUCE(KF_OP_SUM, &h, ALL, false, KF_F16, 0, NULL, ((uint16_t[]){ 0x6801 }));          /* 2050 */
    const kf_host_array hm = harr(KF_F16, 1, SHAPE(2), (uint16_t[]){ 0x7bff, 0x7bff });
    REDUCE(KF_OP_MEAN, &hm, ALL, false, KF_F16, 0, NULL, ((uint16_t[]){ 0x7bff }));
    REDUCE(KF_OP_SUM, &hm, ALL, false, KF_F16, 0, NULL, ((uint16_t[]){ 0x7c00 }));
    const kf_host_array bm = harr(KF_BF16, 1, SHAPE(2), (uint16_t[]){ 0x3f80, 0x4000 });
    REDUCE(KF_OP_MEAN, &bm, ALL, false, KF_BF16, 0, NULL, ((uint16_t[]){ 0x3fc0 }));
    /* a mean rounds once: 1/3 in f64 then to f16 */
    const kf_host_array h3 = harr(KF_F16, 1, SHAPE(3), (uint16_t[]){ 0x3c00, 0x0000, 0x0000 });
    REDUCE(KF_OP_MEAN, &h3, ALL, false, KF_F16, 0, NULL, ((uint16_t[]){ 0x3555 }));
    /* the sum starts at +0 */
    const kf_host_array mz = harr(KF_F64, 1, SHAPE(2), (double[]){ -0.0, -0.0 });
    REDUCE(KF_OP_SUM, &mz, ALL, false, KF_F64, 0, NULL, ((double[]){ 0.0 }));

    /* empty: 0, 1, +inf (min), -inf (max), NaN (mean), -1 */
    const kf_host_array e = harr(KF_F32, 1, SHAPE(0), NULL);
    REDUCE(KF_OP_SUM, &e, ALL, false, KF_F32, 0, NULL, ((float[]){ 0 }));
    REDUCE(KF_OP_PROD, &e, ALL, false, KF_F32, 0, NULL, ((float[]){ 1 }));
    REDUCE(KF_OP_RMIN, &e, ALL, false, KF_F32, 0, NULL, ((float[]){ INFINITY }));
    REDUCE(KF_OP_RMAX, &e, ALL, false, KF_F32, 0, NULL, ((float[]){ -INFINITY }));
    REDUCE(KF_OP_MEAN, &e, ALL, false, KF_F32, 0, NULL, ((float[]){ NAN }));
    REDUCE(KF_OP_ARGMAX, &e, ALL, false, KF_I64, 0, NULL, ((int64_t[]){ -1 }));
    const kf_host_array eh = harr(KF_F16, 2, SHAPE(2, 0), NULL);
    REDUCE(KF_OP_RMIN, &eh, AXES(1), false, KF_F16, 1, SHAPE(2), ((uint16_t[]){ 0x7c00, 0x7c00 }));
    REDUCE(KF_OP_RMAX, &eh, AXES(1), true, KF_F16, 2, SHAPE(2, 1), ((uint16_t[]){ 0xfc00, 0xfc00 }));
    REDUCE(KF_OP_MEAN, &eh, AXES(1), false, KF_F16, 1, SHAPE(2), ((uint16_t[]){ 0x7e00, 0x7e00 }));
    REDUCE(KF_OP_ARGMIN, &eh, AXES(1), false, KF_I64, 1, SHAPE(2), ((int64_t[]){ -1, -1 }));
    REDUCE(KF_OP_SUM, &eh, AXES(0), false, KF_F16, 1, SHAPE(0), NULL);
    REDUCE(KF_OP_SUM, &eh, ALL, false, KF_F16, 0, NULL, ((uint16_t[]){ 0 }));
    const kf_host_array e03 = harr(KF_F64, 2, SHAPE(0, 3), NULL);
    REDUCE(KF_OP_SUM, &e03, AXES(0), false, KF_F64, 1, SHAPE(3), ((double[]){ 0, 0, 0 }));
    REDUCE(KF_OP_MEAN, &e03, AXES(0), true, KF_F64, 2, SHAPE(1, 3), ((double[]){ NaN, NaN, NaN }));
    REDUCE(KF_OP_RMAX, &e03, AXES(1), false, KF_F64, 1, SHAPE(0), NULL);

    char err[512];
    kf_host_array out[2];
    /* symbolic dims, bound to 0 and to 3 */
    kf_graph *g = kf_graph_new("symred");
    kf_node x = kf_input(g, "x", KF_F64, 2, (kf_dim[]){ KF_SYM("n"), KF_SYM("m") });
    kf_output(g, kf_reduce(g, KF_OP_SUM, x, 1, (int[]){ 1 }, false), "s");
    kf_output(g, kf_reduce(g, KF_OP_ARGMAX, x, 1, (int[]){ -1 }, true), "a");
    kf_host_array in[1] = { harr(KF_F64, 2, SHAPE(2, 0), NULL) };
    CHECK_STATUS(run(g, in, 1, out, 2, err, sizeof err), KF_OK);
    EXPECT(&out[0], KF_F64, 1, SHAPE(2), ((double[]){ 0, 0 }));
    EXPECT(&out[1], KF_I64, 2, SHAPE(2, 1), ((int64_t[]){ -1, -1 }));
    free_outputs(out, 2);
    in[0] = harr(KF_F64, 2, SHAPE(2, 3), (double[]){ 1, 4, 2, -1, -2, -3 });
    CHECK_STATUS(run(g, in, 1, out, 2, err, sizeof err), KF_OK);
    EXPECT(&out[0], KF_F64, 1, SHAPE(2), ((double[]){ 7, -6 }));
    EXPECT(&out[1], KF_I64, 2, SHAPE(2, 1), ((int64_t[]){ 1, 0 }));
    free_outputs(out, 2);
    kf_graph_free(g);

    /* type rules: mean is float only; no reduction takes bool */
    g = kf_graph_new("badred");
    x = kf_input(g, "x", KF_I32, 1, (kf_dim[]){ KF_DIM(3) });
    CHECK(kf_reduce(g, KF_OP_MEAN, x, 0, NULL, false) == KF_NONE);
    CHECK_STATUS(kf_graph_status(g), KF_ERR_TYPE);
    kf_graph_free(g);
    g = kf_graph_new("badred2");
    x = kf_input(g, "x", KF_BOOL, 1, (kf_dim[]){ KF_DIM(3) });
    CHECK(kf_reduce(g, KF_OP_SUM, x, 0, NULL, false) == KF_NONE);
    CHECK_STATUS(kf_graph_status(g), KF_ERR_TYPE);
    kf_graph_free(g);
}

/* -- Outputs and argument checks ------------------------------------------------------------ */

static void test_outputs(void)
{
    char err[512];
    kf_host_array out[5];
    kf_graph *g = kf_graph_new("outs");
    kf_node x = kf_input(g, "x", KF_I32, 1, (kf_dim[]){ KF_SYM("n") });
    kf_node a = kf_binary(g, KF_OP_ADD, x, x);
    kf_output(g, a, "a");                                      /* used again below */
    kf_output(g, kf_binary(g, KF_OP_MUL, a, a), "b");
    kf_output(g, x, NULL);                                     /* an input as an output */
    kf_output(g, kf_lit_f(g, KF_F32, 2.5), "c");               /* a literal as an output */
    kf_output(g, kf_unary(g, KF_OP_NEG, x), "d");
    /* dead code is not run: this take would report an index error */
    kf_node bad = kf_take(g, x, kf_lit_i(g, KF_I64, 99));
    kf_unary(g, KF_OP_NEG, bad);
    CHECK_STATUS(kf_graph_verify(g), KF_OK);
    int32_t xd[] = { 1, -2, 3 };
    kf_host_array in[1] = { harr(KF_I32, 1, SHAPE(3), xd) };
    CHECK_STATUS(run(g, in, 1, out, 5, err, sizeof err), KF_OK);
    CHECK(err[0] == 0);
    EXPECT(&out[0], KF_I32, 1, SHAPE(3), ((int32_t[]){ 2, -4, 6 }));
    EXPECT(&out[1], KF_I32, 1, SHAPE(3), ((int32_t[]){ 4, 16, 36 }));
    EXPECT(&out[2], KF_I32, 1, SHAPE(3), ((int32_t[]){ 1, -2, 3 }));
    EXPECT(&out[3], KF_F32, 0, NULL, ((float[]){ 2.5 }));
    EXPECT(&out[4], KF_I32, 1, SHAPE(3), ((int32_t[]){ -1, 2, -3 }));
    CHECK(out[2].data != (void *)xd); /* a copy, released like the others */
    if (out[2].data)
        ((int32_t *)out[2].data)[0] = 42;
    CHECK(xd[0] == 1);
    free_outputs(out, 5);
    /* unused shape entries of the outputs are zero */
    CHECK_STATUS(run(g, in, 1, out, 5, err, sizeof err), KF_OK);
    CHECK(out[3].rank == 0 && out[3].shape[0] == 0 && out[0].shape[1] == 0);
    free_outputs(out, 5);
    kf_graph_free(g);

    /* a graph whose only output is its input */
    g = kf_graph_new("id");
    x = kf_input(g, "x", KF_BOOL, 2, (kf_dim[]){ KF_DIM(0), KF_SYM("n") });
    kf_output(g, x, NULL);
    in[0] = harr(KF_BOOL, 2, SHAPE(0, 7), NULL);
    CHECK_STATUS(run(g, in, 1, out, 1, err, sizeof err), KF_OK);
    EXPECT(&out[0], KF_BOOL, 2, SHAPE(0, 7), NULL);
    CHECK(out[0].data != NULL);
    free_outputs(out, 1);
    kf_graph_free(g);
}

static void test_errors(void)
{
    char err[512];
    kf_host_array out[2];
    kf_graph *g = kf_graph_new("e");
    kf_node x = kf_input(g, "x", KF_F32, 1, (kf_dim[]){ KF_SYM("n") });
    kf_node s = kf_scalar(g, "s", KF_F32);
    kf_output(g, kf_binary(g, KF_OP_MUL, x, s), "y");
    kf_output(g, kf_reduce(g, KF_OP_SUM, x, 0, NULL, false), "t");
    float xd[] = { 1, 2 }, sd[] = { 3 };
    kf_host_array in[2] = { harr(KF_F32, 1, SHAPE(2), xd), harr(KF_F32, 0, NULL, sd) };
    CHECK_STATUS(run(g, in, 2, out, 2, err, sizeof err), KF_OK);
    EXPECT(&out[0], KF_F32, 1, SHAPE(2), ((float[]){ 3, 6 }));
    EXPECT(&out[1], KF_F32, 0, NULL, ((float[]){ 3 }));
    free_outputs(out, 2);

/* the call fails with status and text, and clears the first nout outputs */
#define FAILS(nout, call, status, text)                                       \
    do {                                                                      \
        out[0].data = out[1].data = (void *)err;                              \
        CHECK_STATUS(call, status);                                           \
        CHECK_CONTAINS(txt(err), text);                                            \
        for (int o_ = 0; o_ < (nout); o_++)                                   \
            CHECK(out[o_].data == NULL);                                      \
    } while (0)

    FAILS(2, run(g, in, 1, out, 2, err, sizeof err), KF_ERR_INVALID_ARG, "graph 'e' has 2 inputs, got 1");
    FAILS(2, run(g, in, 3, out, 2, err, sizeof err), KF_ERR_INVALID_ARG, "graph 'e' has 2 inputs, got 3");
    FAILS(1, run(g, in, 2, out, 1, err, sizeof err), KF_ERR_INVALID_ARG, "graph 'e' has 2 outputs, got 1");
    FAILS(2, run(g, NULL, 2, out, 2, err, sizeof err), KF_ERR_INVALID_ARG, "inputs is NULL");
    CHECK_STATUS(run(g, in, 2, NULL, 2, err, sizeof err), KF_ERR_INVALID_ARG);
    CHECK_CONTAINS(txt(err), "outputs is NULL");
    FAILS(2, run(NULL, in, 2, out, 2, err, sizeof err), KF_ERR_INVALID_ARG, "graph is NULL");
    in[0].dtype = KF_F64;
    FAILS(2, run(g, in, 2, out, 2, err, sizeof err), KF_ERR_TYPE, "input 'x' has dtype f64, the graph wants f32");
    in[0].dtype = (kf_dtype)99;
    FAILS(2, run(g, in, 2, out, 2, err, sizeof err), KF_ERR_TYPE, "input 'x': invalid dtype 99");
    in[0].dtype = KF_F32;
    in[0].rank = 2;
    FAILS(2, run(g, in, 2, out, 2, err, sizeof err), KF_ERR_SHAPE, "input 'x' has rank 2, the graph wants 1");
    in[0].rank = 1;
    in[1].rank = 1;
    in[1].shape[0] = 1;
    FAILS(2, run(g, in, 2, out, 2, err, sizeof err), KF_ERR_SHAPE, "input 's' has rank 1, the graph wants 0");
    in[1].rank = 0;
    in[1].data = NULL;
    FAILS(2, run(g, in, 2, out, 2, err, sizeof err), KF_ERR_INVALID_ARG, "input 's': data is NULL");
    in[1].data = sd;
    in[0].data = NULL;
    FAILS(2, run(g, in, 2, out, 2, err, sizeof err), KF_ERR_INVALID_ARG, "input 'x': data is NULL");
    in[0].shape[0] = 0; /* NULL is fine for no elements */
    CHECK_STATUS(run(g, in, 2, out, 2, err, sizeof err), KF_OK);
    EXPECT(&out[0], KF_F32, 1, SHAPE(0), NULL);
    EXPECT(&out[1], KF_F32, 0, NULL, ((float[]){ 0 }));
    free_outputs(out, 2);
    in[0].data = xd;
    in[0].rank = 1;
    in[0].shape[0] = INT64_MAX; /* too large to address (nothing is read) */
    FAILS(2, run(g, in, 2, out, 2, err, sizeof err), KF_ERR_LIMIT, "too large");
    in[0].shape[0] = 2;
    /* no error buffer, or a tiny one */
    in[0].dtype = KF_I8;
    CHECK_STATUS(run(g, in, 2, out, 2, NULL, 0), KF_ERR_TYPE);
    CHECK_STATUS(run(g, in, 2, out, 2, err, 1), KF_ERR_TYPE);
    CHECK(err[0] == 0);
    CHECK_STATUS(run(g, in, 2, out, 2, err, 6), KF_ERR_TYPE);
    CHECK(strcmp(err, "input") == 0);
    in[0].dtype = KF_F32;
    kf_graph_free(g);

    /* a kept builder error is returned as it is */
    g = kf_graph_new("kept");
    x = kf_input(g, "x", KF_F32, 1, (kf_dim[]){ KF_DIM(2) });
    kf_node i = kf_input(g, "i", KF_I32, 1, (kf_dim[]){ KF_DIM(2) });
    kf_output(g, kf_binary(g, KF_OP_ADD, x, i), "y");
    CHECK_STATUS(kf_graph_status(g), KF_ERR_TYPE);
    in[1] = harr(KF_I32, 1, SHAPE(2), (int32_t[]){ 1, 2 });
    FAILS(1, run(g, in, 2, out, 1, err, sizeof err), KF_ERR_TYPE, kf_graph_error(g));
    CHECK_CONTAINS(txt(err), "different dtypes");
    kf_graph_free(g);

    /* inputs that can be addressed, a broadcast result that cannot: found
     * before any element is read */
    g = kf_graph_new("huge");
    x = kf_input(g, "x", KF_F32, 2, (kf_dim[]){ KF_SYM("n"), KF_DIM(1) });
    kf_node y = kf_input(g, "y", KF_F32, 1, (kf_dim[]){ KF_SYM("m") });
    kf_output(g, kf_binary(g, KF_OP_ADD, x, y), "z");
    in[0] = harr(KF_F32, 2, SHAPE(INT64_C(1) << 33, 1), xd);
    in[1] = harr(KF_F32, 1, SHAPE(INT64_C(1) << 33), xd);
    FAILS(1, run(g, in, 2, out, 1, err, sizeof err), KF_ERR_LIMIT, "add 'z': shape [8589934592,8589934592] is too large");
    kf_graph_free(g);

    /* a graph with no outputs */
    g = kf_graph_new("none");
    kf_input(g, "x", KF_F32, 1, (kf_dim[]){ KF_DIM(2) });
    FAILS(0, run(g, in, 1, out, 0, err, sizeof err), KF_ERR_INVALID_ARG, "graph 'none' has no outputs");
    kf_graph_free(g);
#undef FAILS
}

/* A graph from .kir text: literal dtypes from their context or a suffix. */
static void test_text(void)
{
    static const char text[] = "kfuse 1\n"
                               "graph t(x: f32[n], i: i32[n], h: f16[n]) -> (a, b, c, d, e, f, k) {\n"
                               "  a = add x, 1.5\n"
                               "  b = mul i, -2\n"
                               "  c = select (gt x, 0.0), x, 0.25\n"
                               "  d = cast 3.5:f16, f32\n"
                               "  e = add 1, 2\n"
                               "  f = add h, 0.00048828125\n" /* 2^-11: 1 + 2^-11 ties to 1 */
                               "  k = max (cast i, f64), axes=[0], keepdims=true\n"
                               "}\n";
    kf_module *m = NULL;
    CHECK_STATUS(kf_module_parse(text, sizeof text - 1, "t.kir", NULL, &m), KF_OK);
    kf_graph *g = kf_module_find(m, "t");
    CHECK(g != NULL);
    if (!g) {
        CHECK_MSG(false, "%s", kf_module_error(m));
        kf_module_free(m);
        return;
    }
    kf_host_array in[3] = { harr(KF_F32, 1, SHAPE(3), (float[]){ -1, 0, 2 }),
                            harr(KF_I32, 1, SHAPE(3), (int32_t[]){ 1, INT32_MIN, -5 }),
                            harr(KF_F16, 1, SHAPE(3), (uint16_t[]){ 0x3c00, 0x3c01, 0x0000 }) };
    kf_host_array out[7];
    char err[512];
    CHECK_STATUS(run(g, in, 3, out, 7, err, sizeof err), KF_OK);
    EXPECT(&out[0], KF_F32, 1, SHAPE(3), ((float[]){ 0.5f, 1.5f, 3.5f }));
    EXPECT(&out[1], KF_I32, 1, SHAPE(3), ((int32_t[]){ -2, 0, 10 }));
    EXPECT(&out[2], KF_F32, 1, SHAPE(3), ((float[]){ 0.25f, 0.25f, 2 }));
    EXPECT(&out[3], KF_F32, 0, NULL, ((float[]){ 3.5f }));
    EXPECT(&out[4], KF_I64, 0, NULL, ((int64_t[]){ 3 }));
    EXPECT(&out[5], KF_F16, 1, SHAPE(3), ((uint16_t[]){ 0x3c00, 0x3c02, 0x1000 }));
    EXPECT(&out[6], KF_F64, 1, SHAPE(1), ((double[]){ 1 }));
    free_outputs(out, 7);
    kf_module_free(m);
}

/* -- Allocation failures -------------------------------------------------------------------- */

#ifdef KF_TEST_WRAP_MALLOC
/* The test is linked with -Wl,--wrap=malloc,calloc,free: while 'armed',
 * allocation number fail_at returns NULL and live counts what is held. */
static struct {
    bool armed;
    long count, fail_at, live;
} alloc_ctl;

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void __real_free(void *p);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t m);
void __wrap_free(void *p);

void *__wrap_malloc(size_t n)
{
    if (alloc_ctl.armed && alloc_ctl.count++ == alloc_ctl.fail_at)
        return NULL;
    void *p = __real_malloc(n);
    if (alloc_ctl.armed && p)
        alloc_ctl.live++;
    return p;
}

void *__wrap_calloc(size_t n, size_t m)
{
    if (alloc_ctl.armed && alloc_ctl.count++ == alloc_ctl.fail_at)
        return NULL;
    void *p = __real_calloc(n, m);
    if (alloc_ctl.armed && p)
        alloc_ctl.live++;
    return p;
}

void __wrap_free(void *p)
{
    if (alloc_ctl.armed && p)
        alloc_ctl.live--;
    __real_free(p);
}

/* Every allocation of kf_interpret failing in turn, on a run that succeeds
 * and on one that ends with an index error. */
static void test_no_memory(void)
{
    kf_graph *g = kf_graph_new("oom");
    kf_node x = kf_input(g, "x", KF_F32, 2, (kf_dim[]){ KF_SYM("n"), KF_DIM(3) });
    kf_node ix = kf_input(g, "ix", KF_I32, 1, (kf_dim[]){ KF_SYM("k") });
    kf_node s = kf_scalar(g, "s", KF_F32);
    kf_node io = kf_iota(g, KF_F32, 2, (kf_dim[]){ KF_SYM("n"), KF_DIM(3) }, 1);
    kf_node a = kf_binary(g, KF_OP_ADD, kf_binary(g, KF_OP_MUL, x, s), io);
    kf_node r = kf_reduce(g, KF_OP_SUM, a, 1, (int[]){ 0 }, false);
    kf_output(g, kf_take(g, r, ix), "t");
    kf_output(g, kf_reduce(g, KF_OP_ARGMAX, a, 1, (int[]){ 1 }, true), "m");
    kf_output(g, x, NULL);
    CHECK_STATUS(kf_graph_verify(g), KF_OK);
    for (int bad = 0; bad < 2; bad++) {
        /* a = 2x + iota = [[2,5,8],[8,11,14]], r = [10,16,22] */
        kf_host_array in[3] = { harr(KF_F32, 2, SHAPE(2, 3), (float[]){ 1, 2, 3, 4, 5, 6 }),
                                harr(KF_I32, 1, SHAPE(2), (int32_t[]){ 2, bad ? 3 : 0 }),
                                harr(KF_F32, 0, NULL, (float[]){ 2 }) };
        kf_status want = bad ? KF_ERR_INDEX : KF_OK;
        bool done = false;
        for (long fail = 0; fail < 1000 && !done; fail++) {
            char err[512] = "";
            kf_host_array out[3];
            alloc_ctl.count = 0;
            alloc_ctl.live = 0;
            alloc_ctl.fail_at = fail;
            alloc_ctl.armed = true;
            kf_status st = kf_interpret(g, in, 3, out, 3, err, sizeof err);
            alloc_ctl.armed = false;
            if (st == want) {
                done = true;
                CHECK(alloc_ctl.count == fail); /* every allocation was failed once */
                CHECK(alloc_ctl.live == 3);     /* what is held is the outputs */
                EXPECT(&out[0], KF_F32, 1, SHAPE(2), ((float[]){ 22, bad ? 0 : 10 }));
                EXPECT(&out[1], KF_I64, 2, SHAPE(2, 1), ((int64_t[]){ 2, 2 }));
                EXPECT(&out[2], KF_F32, 2, SHAPE(2, 3), ((float[]){ 1, 2, 3, 4, 5, 6 }));
                if (bad)
                    CHECK_CONTAINS(txt(err), "take 't': index 3 at position [1]");
                free_outputs(out, 3);
                break;
            }
            CHECK_MSG(st == KF_ERR_NO_MEMORY, "allocation %ld failing: %s (%s)", fail, kf_status_string(st), err);
            CHECK_MSG(alloc_ctl.live == 0, "allocation %ld failing: %ld blocks leaked", fail, alloc_ctl.live);
            CHECK_CONTAINS(txt(err), "out of memory");
            CHECK(out[0].data == NULL && out[1].data == NULL && out[2].data == NULL);
        }
        CHECK(done);
    }
    kf_graph_free(g);
}
#endif

int main(void)
{
    test_int_arith();
    test_int_divmod();
    test_int_shift();
    test_int_minmax_bits();
    test_compare();
    test_float_arith();
    test_float_libm();
    test_half_arith();
    test_casts();
    test_select();
    test_broadcast();
    test_symbols();
    test_iota();
    test_take();
    test_reduce_basic();
    test_reduce_ints();
    test_reduce_floats();
    test_outputs();
    test_errors();
    test_text();
#ifdef KF_TEST_WRAP_MALLOC
    test_no_memory();
#endif
    return kf_test_done();
}
