/* The one emitter of CUDA C and OpenCL C: every kernel of a plan becomes a
 * body function (the fused expression, written once) and thin entry points
 * (variants) that load, call the body and store.  The two targets differ
 * only by the rows of kf_cg_spell (spell_cuda.c, spell_opencl.c).
 * Rules every emitted line obeys: no text depends on pointers, time or hash
 * iteration order (the cache hashes the source); every operation has the
 * semantics of docs/ir.md, spelled out where C leaves it undefined. */
#include "cg.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* -- Helpers emitted on demand ---------------------------------------------------- */

enum {
    H_H2F, H_F2H, H_BF2F, H_F2BF, H_RH, H_RBF,
    H_FMIN32, H_FMIN64, H_FMAX32, H_FMAX64,
    H_RTO_F64, H_RTO_U64, H_RTO_I64,
    H_F2I,  /* + prec * 8 + int index */
    H_TRIG = H_F2I + 16, /* + TRIG_*: f32 sin, cos, tan, sincos with the long path out of line */
    H_NEXT = H_TRIG + 4, /* KF_NEXT, the step of the elementwise loops */
    H_KEEP32,            /* kf_keep32, see narrow() */
    H_COUNT
};

/* CUDA's f32 sin, cos and tan reduce an argument of 105615 or more with
 * Payne-Hanek, about 1.1 KB of SASS inlined at every call.  Where the
 * target allows (kf_cg_spell.split_trig) each is called through a wrapper
 * that tests the argument as CUDA's code does, so that NVRTC drops the long
 * path from the inlined copy, and calls an out-of-line copy for the rare
 * huge argument: the same bits, no call on the common path, and one long
 * path per kernel (bench/chain40.kir: cubin 40 KB -> 31 KB). */
enum { TRIG_SIN, TRIG_COS, TRIG_TAN, TRIG_SINCOS };
static const char *const trig_name[4] = { "sinf", "cosf", "tanf", "sincosf" };     /* CUDA's */
static const char *const trig_wrap[4] = { "kf_sinf", "kf_cosf", "kf_tanf", "kf_sincosf" };

/* The text of float literals ("%.17g" for f64, "%.9g" otherwise), made
 * once per module (up to 32 values; more replace older ones): every literal
 * is written in a comment and in code, and the C library formats floats
 * slowly. */
typedef struct numcache {
    int n;
    struct {
        uint64_t bits;
        int p;
        bool dot;     /* the text has a '.' or an exponent */
        char s[32];
    } e[32];
} numcache;

typedef struct E {
    const kf_cg_spell *sp;
    kf_target target;
    const kf_cg_caps *caps;
    const kf_graph *g;
    kf_cg_kinfo *ki;
    kf_strbuf *o;
    uint64_t used;     /* helpers, bit per H_* */
    bool uses_f64;
    kf_status st;
    char *err;
    size_t errlen;
    numcache *nums;    /* float literal texts (num_text) */
    bool gpu;          /* kf_cg_caps.gpu (always for CUDA) */
    const char *unroll;/* sp->unroll on a GPU, else "" (the compiler's choice) */
    bool fast;         /* kf_cg_caps.fast_math */
} E;

static void use(E *e, int h)
{
    e->used |= 1ull << h;
    if (h == H_RH)
        e->used |= 1ull << H_H2F | 1ull << H_F2H;
    if (h == H_RBF)
        e->used |= 1ull << H_BF2F | 1ull << H_F2BF;
    if (h == H_RTO_I64)
        e->used |= 1ull << H_RTO_U64;
}

/* Weighted ops above which the body is a real call (compile time and code
 * size of the variants: bench/chain40.kir, 88 weighted ops, inlined makes
 * a 99 KB cubin in 520 ms, called 45 KB in 150 ms, and runs 1% slower on
 * an H200). */
#define KF_CG_BIG_BODY 64
/* Room made in the output up front: most modules fit, so their text is
 * never copied as it grows (unused room costs no memory page). */
#define KF_CG_MODULE_BYTES 16384

#define P(...) kf_sb_printf(e->o, __VA_ARGS__)
#define S(s) kf_sb_puts(e->o, s)

/* -- Types ---------------------------------------------------------------------------- */

static int prec(kf_dtype t) { return t == KF_F64; }
/* The approximate function of op at precision p under fast_math, else NULL
 * (f16 and bf16 compute in f32, so they take it too). */
static const char *fast_fn(const E *e, kf_op op, int p) { return e->fast && p == 0 ? e->sp->fast[op] : NULL; }
/* The function of op at precision p: the approximate one where fast_fn has one. */
static const char *math_fn(const E *e, kf_op op, int p) { return fast_fn(e, op, p) ? fast_fn(e, op, p) : e->sp->math[op][p]; }
/* The division at precision p: approximate in f32 under fast_math. */
static const kf_cg_bin *fdiv_of(const E *e, int p) { return e->fast && p == 0 ? &e->sp->fdiv_fast : &e->sp->fdiv[p]; }
static const char *ST(const E *e, kf_dtype t) { return e->sp->types[t]; }
/* compute type: what a value lives in between operations */
static const char *CT(const E *e, kf_dtype t)
{
    if (t == KF_BOOL)
        return e->sp->types[KF_I32];
    if (t == KF_F16 || t == KF_BF16)
        return e->sp->types[KF_F32];
    return e->sp->types[t];
}
/* unsigned type in which integer arithmetic of t wraps without UB */
static const char *UP(const E *e, kf_dtype t) { return e->sp->types[kf_dtype_size(t) == 8 ? KF_U64 : KF_U32]; }
static const char *I64(const E *e) { return e->sp->types[KF_I64]; }
static const char *U64(const E *e) { return e->sp->types[KF_U64]; }
static const char *U32(const E *e) { return e->sp->types[KF_U32]; }
static int int_index(kf_dtype t) { return kf_dt_is_sint(t) ? t - KF_I8 : 4 + (t - KF_U8); }

static const char *fzero(int p) { return p ? "0.0" : "0.0f"; }
static const char *fone(int p) { return p ? "1.0" : "1.0f"; }

/* Value in compute type from a storage-type expression. */
static void load_conv(E *e, kf_strbuf *o, kf_dtype t, const char *x)
{
    switch (t) {
    case KF_BOOL: kf_sb_printf(o, "(%s != 0)", x); break;
    case KF_F16: use(e, H_H2F); kf_sb_printf(o, "kf_h2f(%s)", x); break;
    case KF_BF16: use(e, H_BF2F); kf_sb_printf(o, "kf_bf2f(%s)", x); break;
    default: kf_sb_puts(o, x); break;
    }
}

/* Storage-type value from a compute-type expression. */
static void store_conv(E *e, kf_strbuf *o, kf_dtype t, const char *x)
{
    switch (t) {
    case KF_BOOL: kf_sb_printf(o, "(%s)%s", ST(e, t), x); break;
    case KF_F16: use(e, H_F2H); kf_sb_printf(o, "kf_f2h(%s)", x); break;
    case KF_BF16: use(e, H_F2BF); kf_sb_printf(o, "kf_f2bf(%s)", x); break;
    default: kf_sb_puts(o, x); break;
    }
}

/* -- Literals ------------------------------------------------------------------------------ */

/* The text of v, and in *dot whether it has a '.' or an exponent. */
static const char *num_text(const E *e, int p, double v, bool *dot)
{
    numcache *c = e->nums;
    uint64_t bits;
    memcpy(&bits, &v, 8);
    int i = 0;
    while (i < c->n && (c->e[i].bits != bits || c->e[i].p != p))
        i++;
    if (i == c->n) {
        int cap = (int)(sizeof c->e / sizeof c->e[0]);
        i = c->n < cap ? c->n++ : (int)(bits % (uint64_t)cap);
        c->e[i].bits = bits;
        c->e[i].p = p;
        snprintf(c->e[i].s, sizeof c->e[i].s, p ? "%.17g" : "%.9g", v);
        c->e[i].dot = false;
        for (const char *s = c->e[i].s; *s; s++)
            c->e[i].dot |= *s == '.' || *s == 'e';
    }
    if (dot)
        *dot = c->e[i].dot;
    return c->e[i].s;
}

static void float_lit(const E *e, kf_strbuf *o, int p, double v)
{
    if (isfinite(v)) {
        bool dot;
        const char *b = num_text(e, p, v, &dot);
        kf_sb_printf(o, "%s%s%s%s%s", v < 0 || signbit(v) ? "(" : "", b, dot ? "" : ".0", p ? "" : "f",
                     v < 0 || signbit(v) ? ")" : "");
    } else if (p) {
        uint64_t bits;
        memcpy(&bits, &v, 8);
        kf_sb_printf(o, "%s0x%016llx%s%s", e->sp->f64_from_bits.pre, (unsigned long long)bits, e->sp->sfx_u64,
                     e->sp->f64_from_bits.post);
    } else {
        float f = (float)v;
        uint32_t bits;
        memcpy(&bits, &f, 4);
        kf_sb_printf(o, "%s0x%08xu%s", e->sp->f32_from_bits.pre, (unsigned)bits, e->sp->f32_from_bits.post);
    }
}

static void int_lit(const E *e, kf_strbuf *o, kf_dtype t, int64_t i, uint64_t u)
{
    switch (t) {
    case KF_BOOL: kf_sb_puts(o, u ? "1" : "0"); break;
    case KF_I8: case KF_I16: kf_sb_printf(o, "((%s)%lld)", ST(e, t), (long long)i); break;
    case KF_U8: case KF_U16: kf_sb_printf(o, "((%s)%llu)", ST(e, t), (unsigned long long)u); break;
    case KF_I32:
        if (i == INT32_MIN)
            kf_sb_puts(o, "(-2147483647 - 1)");
        else
            kf_sb_printf(o, i < 0 ? "(%lld)" : "%lld", (long long)i);
        break;
    case KF_U32: kf_sb_printf(o, "%lluu", (unsigned long long)u); break;
    case KF_I64:
        if (i == INT64_MIN)
            kf_sb_printf(o, "(-9223372036854775807%s - 1)", e->sp->sfx_i64);
        else
            kf_sb_printf(o, i < 0 ? "(%lld%s)" : "%lld%s", (long long)i, e->sp->sfx_i64);
        break;
    case KF_U64: kf_sb_printf(o, "%llu%s", (unsigned long long)u, e->sp->sfx_u64); break;
    default: break;
    }
}

/* A CONST node as a compute-type expression. */
static void const_lit(const E *e, kf_strbuf *o, const kf_irnode *c)
{
    kf_dtype t = (kf_dtype)c->dtype;
    if (kf_dt_is_float(t))
        float_lit(e, o, prec(t), c->lit.f);
    else
        int_lit(e, o, t, c->lit.i, c->lit.u);
}

/* Largest and smallest value of integer dtype t, as literals. */
static void int_max(const E *e, kf_strbuf *o, kf_dtype t)
{
    unsigned bits = (unsigned)kf_dtype_size(t) * 8;
    if (kf_dt_is_sint(t))
        int_lit(e, o, t, (int64_t)((1ull << (bits - 1)) - 1), 0);
    else
        int_lit(e, o, t, 0, bits == 64 ? UINT64_MAX : (1ull << bits) - 1);
}

static void int_min(const E *e, kf_strbuf *o, kf_dtype t)
{
    unsigned bits = (unsigned)kf_dtype_size(t) * 8;
    if (kf_dt_is_sint(t))
        int_lit(e, o, t, bits == 64 ? INT64_MIN : -(int64_t)(1ull << (bits - 1)), 0);
    else
        int_lit(e, o, t, 0, 0);
}

static void inf_lit(const E *e, kf_strbuf *o, int p, bool neg)
{
    float_lit(e, o, p, neg ? -INFINITY : INFINITY);
}

/* -- Node text for comments ---------------------------------------------------------------- */

static void operand_text(const E *e, kf_strbuf *o, int32_t n)
{
    const kf_irnode *x = &e->g->nodes[n];
    if (x->op == KF_OP_CONST) {
        kf_dtype t = (kf_dtype)x->dtype;
        if (t == KF_BOOL)
            kf_sb_puts(o, x->lit.u ? "true" : "false");
        else if (kf_dt_is_float(t))
            kf_sb_puts(o, num_text(e, t == KF_F64, x->lit.f, NULL));
        else if (kf_dt_is_sint(t))
            kf_sb_printf(o, "%lld", (long long)x->lit.i);
        else
            kf_sb_printf(o, "%llu", (unsigned long long)x->lit.u);
    } else if (x->name) {
        kf_sb_puts(o, x->name);
    } else {
        kf_sb_putc(o, '_');
        kf_sb_putint(o, n);
    }
}

static void shape_text(const E *e, kf_strbuf *o, const kf_irnode *x)
{
    kf_sb_putc(o, '[');
    for (int i = 0; i < x->rank; i++) {
        if (i)
            kf_sb_putc(o, ',');
        if (x->dims[i] >= 0)
            kf_sb_printf(o, "%lld", (long long)x->dims[i]);
        else
            kf_sb_puts(o, e->g->syms[KF_IR_SYM_INDEX(x->dims[i])]);
    }
    kf_sb_putc(o, ']');
}

/* "y = add c, x" */
static void node_text(const E *e, kf_strbuf *o, int32_t n)
{
    const kf_irnode *x = &e->g->nodes[n];
    operand_text(e, o, n);
    kf_sb_puts(o, " = ");
    kf_sb_puts(o, kf_op_name((kf_op)x->op));
    if (x->op == KF_OP_IOTA) {
        kf_sb_printf(o, " %s", kf_dtype_name((kf_dtype)x->dtype));
        shape_text(e, o, x);
        kf_sb_printf(o, ", axis=%d", x->axis);
        return;
    }
    for (int a = 0; a < x->nargs; a++) {
        kf_sb_puts(o, a ? ", " : " ");
        operand_text(e, o, x->args[a]);
    }
    if (x->op == KF_OP_CAST)
        kf_sb_printf(o, ", %s", kf_dtype_name((kf_dtype)x->dtype));
    if (kf_ir_op((kf_op)x->op)->kind == KF_KIND_REDUCE) {
        kf_sb_puts(o, ", axes=[");
        for (int d = 0, first = 1; d < KF_MAX_RANK; d++)
            if (x->axes & (1u << d)) {
                kf_sb_printf(o, "%s%d", first ? "" : ", ", d);
                first = 0;
            }
        kf_sb_putc(o, ']');
        if (x->keepdims)
            kf_sb_puts(o, ", keepdims=true");
    }
}

/* -- Expressions ---------------------------------------------------------------------------- */

/* The body's name for an operand's value. */
static void operand(const E *e, kf_strbuf *o, int32_t n)
{
    int r = kf_cg_role(e->ki, n);
    if (r == KF_CG_ROLE_NONE) {
        const_lit(e, o, &e->g->nodes[n]);
        return;
    }
    kf_sb_putc(o, r == KF_CG_ROLE_NODE ? 'v' : r == KF_CG_ROLE_ARG ? 'x' : 's');
    kf_sb_putint(o, r == KF_CG_ROLE_NODE ? n : kf_cg_role_index(e->ki, n));
}

static void bin(kf_strbuf *o, const kf_cg_bin *b, const char *x, const char *y)
{
    kf_sb_printf(o, "%s%s%s%s%s", b->pre, x, b->mid, y, b->post);
}

/* Float-to-integer conversion: truncate, NaN -> 0, saturate. */
static void f2i(E *e, kf_strbuf *o, int p, kf_dtype to, const char *x)
{
    use(e, H_F2I + p * 8 + int_index(to));
    kf_sb_printf(o, "kf_f2i_%s_%s(%s)", p ? "f64" : "f32", kf_dtype_name(to), x);
}

/* The compiler takes inline PTX: always for CUDA, for NVIDIA's OpenCL. */
static bool has_ptx(const E *e) { return e->target == KF_TARGET_CUDA || (e->caps && e->caps->ptx); }

/* Whether an integer value of dtype t is narrowed through kf_keep32, an
 * empty PTX move that LLVM cannot see through: i16, where the compiler
 * takes inline PTX.  Narrowed by LLVM, a negation became PTX neg.s16
 * (abs.s16 from a select), which ptxas lowers on the sign-extended register
 * and then compares as signed without narrowing: on an H200 sign(-(-32768))
 * was 1 and sign(abs(-32768)) 2 in CUDA (bench/diag/s31/abs16.cu),
 * sign(-32768 / -1) 1 in NVIDIA's OpenCL.  LLVM finds a negation in many
 * forms (0 - x, x * -1, ~x + 1, x / -2, c - (x + c), across nodes too),
 * so every i16 result of arithmetic is kept, and every cast to i16 from u16
 * or a wider integer (whose 0 - x LLVM narrows too).  An unsigned or 8-bit
 * reader narrows first (SASS: LOP3 0xffff, PRMT), so u16, i8 and u8
 * arithmetic keeps its 16-bit forms (bench/diag/s32/narrow.kir: a u8 blend
 * took 1.09-1.16x the time with them kept). */
static bool keeps(const E *e, kf_dtype t) { return t == KF_I16 && has_ptx(e); }

/* Integer arithmetic s, computed in 32 or 64 bits, as dtype t. */
static void narrow(E *e, kf_strbuf *o, kf_dtype t, const char *s)
{
    if (keeps(e, t)) {
        use(e, H_KEEP32);
        kf_sb_printf(o, "((%s)kf_keep32((%s)(%s)))", ST(e, t), U32(e), s);
    } else {
        kf_sb_printf(o, "((%s)(%s))", ST(e, t), s);
    }
}

static void cast_expr(E *e, kf_strbuf *o, kf_dtype from, kf_dtype to, const char *a)
{
    if (from == to) {
        kf_sb_puts(o, a);
    } else if (to == KF_BOOL) {
        kf_sb_printf(o, "(%s != %s)", a, kf_dt_is_float(from) ? fzero(prec(from)) : "0");
    } else if (kf_dt_is_float(to)) {
        if (to == KF_F64) {
            kf_sb_printf(o, "(%s)%s", ST(e, KF_F64), a);
        } else {
            /* f16/bf16 values are f32 first: double rounding from f64 and
             * wide integers, exactly as the interpreter converts */
            const char *r = to == KF_F16 ? "kf_rh(" : to == KF_BF16 ? "kf_rbf(" : "";
            if (to == KF_F16)
                use(e, H_RH);
            if (to == KF_BF16)
                use(e, H_RBF);
            if (from == KF_F32 || from == KF_F16 || from == KF_BF16) {
                kf_sb_printf(o, "%s%s%s", r, a, *r ? ")" : "");
            } else if (*r && from == KF_F64) {
                /* f64 rounded to odd in f32, then once to nearest even: one
                 * correct rounding, as the interpreter does */
                use(e, H_RTO_F64);
                kf_sb_printf(o, "%skf_rto_f64(%s))", r, a);
            } else if (*r && kf_dtype_size(from) >= 4) {
                bool sg = kf_dt_is_sint(from);
                use(e, sg ? H_RTO_I64 : H_RTO_U64);
                kf_sb_printf(o, "%skf_rto_%s((%s)%s))", r, sg ? "i64" : "u64", sg ? I64(e) : U64(e), a);
            } else {
                kf_sb_printf(o, "%s(%s)%s%s", r, ST(e, KF_F32), a, *r ? ")" : "");
            }
        }
    } else if (kf_dt_is_float(from)) {
        f2i(e, o, prec(from), to, a);
    } else if (keeps(e, to) && kf_dtype_size(from) >= 2 && from != KF_BOOL) {
        narrow(e, o, to, a);
    } else {
        kf_sb_printf(o, "(%s)%s", ST(e, to), a);
    }
}

_Static_assert(KF_OP_LE == KF_OP_LT + 1 && KF_OP_GT == KF_OP_LT + 2 && KF_OP_GE == KF_OP_LT + 3 &&
                   KF_OP_EQ == KF_OP_LT + 4 && KF_OP_NE == KF_OP_LT + 5,
               "ew_expr indexes the comparisons from KF_OP_LT in ops.def order");

/* The expression of elementwise node x from operand texts a[]. */
static void ew_expr(E *e, kf_strbuf *o, const kf_irnode *x, char a[3][128])
{
    const kf_cg_spell *sp = e->sp;
    kf_op op = (kf_op)x->op;
    kf_dtype t = (kf_dtype)e->g->nodes[x->args[op == KF_OP_SELECT ? 1 : 0]].dtype; /* operand dtype */
    bool fl = kf_dt_is_float(t), sg = kf_dt_is_sint(t);
    int p = prec(t);
    const char *T = CT(e, t), *U = fl ? NULL : UP(e, t);
    unsigned bits = (unsigned)kf_dtype_size(t) * 8;
    const char *fn = math_fn(e, op, p);
    int trig = op == KF_OP_SIN ? TRIG_SIN : op == KF_OP_COS ? TRIG_COS : op == KF_OP_TAN ? TRIG_TAN : -1;
    if (trig >= 0 && p == 0 && sp->split_trig && !fast_fn(e, op, p)) {
        fn = trig_wrap[trig];
        use(e, H_TRIG + trig);
    }
    kf_strbuf tmp = KF_STRBUF_INIT, tmp2 = KF_STRBUF_INIT;
    /* f16/bf16 results are computed in f32 and rounded to the dtype */
    bool round = (x->dtype == KF_F16 || x->dtype == KF_BF16) && op != KF_OP_CAST && op != KF_OP_SELECT;
    if (round) {
        use(e, x->dtype == KF_F16 ? H_RH : H_RBF);
        kf_sb_puts(o, x->dtype == KF_F16 ? "kf_rh(" : "kf_rbf(");
    }
    switch (op) {
    case KF_OP_NEG:
        if (fl)
            kf_sb_printf(o, "(-%s)", a[0]);
        else {
            kf_sb_printf(&tmp, "(%s)0 - (%s)%s", U, U, a[0]);
            narrow(e, o, t, kf_sb_str(&tmp));
        }
        break;
    case KF_OP_ABS:
        if (fl) {
            kf_sb_printf(o, "%s(%s)", fn, a[0]);
        } else if (sg) {   /* selected in U, then narrowed */
            kf_sb_printf(&tmp, "%s < 0 ? (%s)0 - (%s)%s : (%s)%s", a[0], U, U, a[0], U, a[0]);
            narrow(e, o, t, kf_sb_str(&tmp));
        } else {
            kf_sb_puts(o, a[0]);
        }
        break;
    case KF_OP_SIGN:
        if (fl)
            kf_sb_printf(o, "(%s > %s ? %s : %s < %s ? -%s : %s)", a[0], fzero(p), fone(p), a[0], fzero(p), fone(p), a[0]);
        else if (sg)
            kf_sb_printf(o, "((%s)((%s > 0) - (%s < 0)))", T, a[0], a[0]);
        else
            kf_sb_printf(o, "((%s)(%s > 0))", T, a[0]);
        break;
    case KF_OP_SQRT: kf_sb_printf(o, "%s(%s)", sp->fsqrt[p], a[0]); break;
    case KF_OP_RSQRT:
        if (fast_fn(e, op, p)) {
            kf_sb_printf(o, "%s(%s)", fn, a[0]);
            break;
        }
        kf_sb_printf(&tmp, "%s(%s)", sp->fsqrt[p], a[0]);
        bin(o, &sp->fdiv[p], fone(p), kf_sb_str(&tmp));
        break;
    case KF_OP_RCP: bin(o, fdiv_of(e, p), fone(p), a[0]); break;
    case KF_OP_SIGMOID:
        kf_sb_printf(&tmp, "%s(-%s)", math_fn(e, KF_OP_EXP, p), a[0]);
        bin(&tmp2, &sp->fadd[p], fone(p), kf_sb_str(&tmp));
        bin(o, fdiv_of(e, p), fone(p), kf_sb_str(&tmp2));
        break;
    case KF_OP_CBRT: case KF_OP_EXP: case KF_OP_EXP2: case KF_OP_EXPM1: case KF_OP_LOG: case KF_OP_LOG2:
    case KF_OP_LOG10: case KF_OP_LOG1P: case KF_OP_SIN: case KF_OP_COS: case KF_OP_TAN: case KF_OP_ASIN:
    case KF_OP_ACOS: case KF_OP_ATAN: case KF_OP_SINH: case KF_OP_COSH: case KF_OP_TANH: case KF_OP_ERF:
    case KF_OP_FLOOR: case KF_OP_CEIL: case KF_OP_ROUND: case KF_OP_TRUNC:
        kf_sb_printf(o, "%s(%s)", fn, a[0]);
        break;
    case KF_OP_NOT:
        if (t == KF_BOOL)
            kf_sb_printf(o, "(%s ^ 1)", a[0]);
        else
            kf_sb_printf(o, "((%s)~%s)", T, a[0]);
        break;
    case KF_OP_ISNAN: kf_sb_printf(o, "(%s != %s)", a[0], a[0]); break;
    case KF_OP_ISINF: kf_sb_printf(o, "(isinf(%s) ? 1 : 0)", a[0]); break;
    case KF_OP_ISFINITE: kf_sb_printf(o, "(isfinite(%s) ? 1 : 0)", a[0]); break;
    case KF_OP_ADD: case KF_OP_SUB: case KF_OP_MUL: {
        if (fl) {
            const kf_cg_bin *b = op == KF_OP_ADD ? &sp->fadd[p] : op == KF_OP_SUB ? &sp->fsub[p] : &sp->fmul[p];
            bin(o, b, a[0], a[1]);
        } else {
            const char *c = op == KF_OP_ADD ? "+" : op == KF_OP_SUB ? "-" : "*";
            kf_sb_printf(&tmp, "(%s)%s %s (%s)%s", U, a[0], c, U, a[1]);
            narrow(e, o, t, kf_sb_str(&tmp));
        }
        break;
    }
    case KF_OP_DIV: case KF_OP_MOD:
        if (fl && op == KF_OP_DIV) {
            bin(o, fdiv_of(e, p), a[0], a[1]);
        } else if (fl) {
            kf_sb_printf(o, "%s(%s, %s)", fn, a[0], a[1]);
        } else {   /* by 0: 0; signed by -1: MIN / -1 wraps to MIN, x % -1 = 0 (undefined in C for MIN) */
            bool div = op == KF_OP_DIV;
            kf_sb_printf(o, "(%s == 0 ? (%s)0 : ", a[1], T);
            if (sg && div) {
                kf_sb_printf(o, "%s == -1 ? ", a[1]);
                kf_sb_printf(&tmp, "(%s)0 - (%s)%s", U, U, a[0]);
                narrow(e, o, t, kf_sb_str(&tmp));
                kf_sb_puts(o, " : ");
            } else if (sg) {
                kf_sb_printf(o, "%s == -1 ? (%s)0 : ", a[1], T);
            }
            for (int i = 0; i < 2; i++) {   /* kept operands but literals: LLVM divides i16 ones in 16
                                             * bits (x / -2: neg.s16); a literal divisor keeps its
                                             * multiply and shift */
                if (keeps(e, t) && e->g->nodes[x->args[i]].op != KF_OP_CONST)
                    kf_sb_printf(&tmp2, "(%s)kf_keep32((%s)%s)", ST(e, KF_I32), U, a[i]);
                else
                    kf_sb_puts(&tmp2, a[i]);
                kf_sb_puts(&tmp2, i ? "" : div ? " / " : " % ");
            }
            narrow(e, o, t, kf_sb_str(&tmp2));
            kf_sb_putc(o, ')');
        }
        break;
    case KF_OP_POW: case KF_OP_ATAN2: case KF_OP_HYPOT:
        kf_sb_printf(o, "%s(%s, %s)", fn, a[0], a[1]);
        break;
    case KF_OP_COPYSIGN: /* a NaN sign source counts as positive: NaN signs differ between libms */
        kf_sb_printf(o, "(isnan(%s) ? %s(%s) : %s(%s, %s))", a[1], sp->math[KF_OP_ABS][p], a[0], fn, a[0], a[1]);
        break;
    case KF_OP_MIN: case KF_OP_MAX:
        if (x->args[0] == x->args[1]) {   /* min(x, x) is x, NaN included */
            kf_sb_puts(o, a[0]);
        } else if (fl) {
            bool mn = op == KF_OP_MIN;
            use(e, (mn ? H_FMIN32 : H_FMAX32) + p);
            kf_sb_printf(o, "kf_f%s_%s(%s, %s)", mn ? "min" : "max", p ? "f64" : "f32", a[0], a[1]);
        } else {
            kf_sb_printf(o, "(%s %s %s ? %s : %s)", a[0], op == KF_OP_MIN ? "<" : ">", a[1], a[0], a[1]);
        }
        break;
    case KF_OP_LT: case KF_OP_LE: case KF_OP_GT: case KF_OP_GE: case KF_OP_EQ: case KF_OP_NE: {
        /* a constant where compilers warn on the comparison: x op x of an integer, an
         * unsigned x against 0 (x >= 0, x < 0, 0 <= x, 0 > x) */
        static const char *const cmp[] = { "<", "<=", ">", ">=", "==", "!=" };
        const kf_irnode *l = &e->g->nodes[x->args[0]], *r = &e->g->nodes[x->args[1]];
        bool z0 = l->op == KF_OP_CONST && l->lit.u == 0, z1 = r->op == KF_OP_CONST && r->lit.u == 0;
        bool un = !fl && !sg && t != KF_BOOL;
        int k = !fl && x->args[0] == x->args[1] ? op == KF_OP_LE || op == KF_OP_GE || op == KF_OP_EQ
              : un && ((op == KF_OP_GE && z1) || (op == KF_OP_LE && z0))  ? 1
              : un && ((op == KF_OP_LT && z1) || (op == KF_OP_GT && z0))  ? 0
                                                                            : -1;
        if (k >= 0)
            kf_sb_printf(o, "((void)%s, %d)", a[z0 ? 1 : 0], k);
        else
            kf_sb_printf(o, "(%s %s %s)", a[0], cmp[op - KF_OP_LT], a[1]);
        break;
    }
    case KF_OP_AND: case KF_OP_OR: case KF_OP_XOR: {
        const char *c = op == KF_OP_AND ? "&" : op == KF_OP_OR ? "|" : "^";
        kf_sb_printf(o, "((%s)(%s %s %s))", T, a[0], c, a[1]);
        break;
    }
    case KF_OP_SHL: case KF_OP_SHR: {
        /* shifts by < 0 or >= width give 0; shr is arithmetic for signed
         * dtypes; a literal amount is checked here */
        const kf_irnode *b = &e->g->nodes[x->args[1]];
        bool lit = b->op == KF_OP_CONST;
        bool out = lit && (sg ? (b->lit.i < 0 || b->lit.i >= (int64_t)bits) : b->lit.u >= bits);
        kf_strbuf sh = KF_STRBUF_INIT;
        if (op == KF_OP_SHL)
            kf_sb_printf(&sh, "(%s)((%s)%s << %s)", T, U, a[0], a[1]);
        else
            kf_sb_printf(&sh, "(%s)(%s >> %s)", T, a[0], a[1]);
        if (out)
            kf_sb_printf(o, "((void)%s, (%s)0)", a[0], T);   /* keeps the operand referenced */
        else if (lit)
            kf_sb_puts(o, kf_sb_str(&sh));
        else
            kf_sb_printf(o, "(%s%s%s >= %u ? (%s)0 : %s)", sg ? a[1] : "", sg ? " < 0 || " : "", a[1], bits, T,
                         kf_sb_str(&sh));
        if (kf_sb_failed(&sh))
            o->oom = true;
        kf_sb_free(&sh);
        break;
    }
    case KF_OP_SELECT: kf_sb_printf(o, "(%s ? %s : %s)", a[0], a[1], a[2]); break;
    case KF_OP_FMA: kf_sb_printf(o, "%s(%s, %s, %s)", fn, a[0], a[1], a[2]); break;
    case KF_OP_CLAMP: /* min(max(x, lo), hi) */
        if (fl) {
            use(e, H_FMIN32 + p);
            use(e, H_FMAX32 + p);
            const char *pp = p ? "f64" : "f32";
            kf_sb_printf(o, "kf_fmin_%s(kf_fmax_%s(%s, %s), %s)", pp, pp, a[0], a[1], a[2]);
        } else if (x->args[1] == x->args[2]) {   /* min(max(x, l), l) = l */
            kf_sb_printf(o, "((void)%s, %s)", a[0], a[1]);
        } else if (x->args[0] == x->args[2]) {   /* min(max(x, l), x) = x */
            kf_sb_printf(o, "((void)%s, %s)", a[1], a[0]);
        } else if (x->args[0] == x->args[1]) {   /* min(x, h) */
            kf_sb_printf(o, "(%s < %s ? %s : %s)", a[0], a[2], a[0], a[2]);
        } else {
            kf_sb_printf(o, "((%s > %s ? %s : %s) < %s ? (%s > %s ? %s : %s) : %s)", a[0], a[1], a[0], a[1], a[2], a[0],
                         a[1], a[0], a[1], a[2]);
        }
        break;
    case KF_OP_CAST: cast_expr(e, o, t, (kf_dtype)x->dtype, a[0]); break;
    default: break;
    }
    if (round)
        kf_sb_putc(o, ')');
    kf_sb_free(&tmp);
    kf_sb_free(&tmp2);
}

/* -- Body function ---------------------------------------------------------------------------- */

static kf_dtype dt(const E *e, int32_t n) { return (kf_dtype)e->g->nodes[n].dtype; }
static const kf_irnode *nd(const E *e, int32_t n) { return &e->g->nodes[n]; }
static bool is_red(const E *e, int32_t n) { return kf_ir_op((kf_op)e->g->nodes[n].op)->kind == KF_KIND_REDUCE; }

/* The value out j hands to its entry point: the reduction's operand for a
 * reduction, the node itself otherwise. */
static int32_t sink(const E *e, int j)
{
    int32_t n = e->ki->k->outs[j];
    return is_red(e, n) ? nd(e, n)->args[0] : n;
}

/* A pragma line before a loop, where there is one ("" : none). */
static void pragma(E *e, const char *text)
{
    if (text[0])
        P("%s\n", text);
}

/* Offset in o where its last line begins. */
static size_t line_start(const kf_strbuf *o)
{
    size_t i = o->len;
    while (i > 0 && o->data[i - 1] != '\n')
        i--;
    return i;
}

/* Separator state for parameter and argument lists. */
typedef struct lst {
    kf_strbuf *o;
    int n;
    size_t line;   /* length of the output when the current line began */
} lst;

static void item(lst *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void item(lst *l, const char *fmt, ...)
{
    char b[512];
    va_list ap;
    va_start(ap, fmt);
    int n = kf_vsnprintf(b, sizeof b, fmt, ap);
    va_end(ap);
    size_t len = n < 0 ? 0 : (size_t)n < sizeof b ? (size_t)n : sizeof b - 1;
    if (l->n++) {
        if (l->o->len - l->line + len + 2 > 110) {
            kf_sb_puts(l->o, ",\n    ");
            l->line = l->o->len - 4;
        } else {
            kf_sb_puts(l->o, ", ");
        }
    }
    kf_sb_putn(l->o, b, len);
}

/* For the sin (cos) at kernel position i, the position of a later cos
 * (sin) of the same f32 or f64 operand, computed with it by one sincos
 * call; -1 when there is none. */
static int32_t sincos_partner(const E *e, int i)
{
    const kf_kernel *k = e->ki->k;
    const kf_irnode *x = nd(e, k->nodes[i]);
    if ((x->op != KF_OP_SIN && x->op != KF_OP_COS) || (x->dtype != KF_F32 && x->dtype != KF_F64) ||
        (x->dtype == KF_F32 && e->fast && !e->sp->sincos_fast))
        return -1;
    kf_op want = x->op == KF_OP_SIN ? KF_OP_COS : KF_OP_SIN;
    for (int j = i + 1; j < k->nnodes; j++) {
        const kf_irnode *y = nd(e, k->nodes[j]);
        if (y->op == want && y->dtype == x->dtype && y->args[0] == x->args[0])
            return j;
    }
    return -1;
}

static bool direct_take(const E *e, int32_t n) { return kf_cg_direct_take(e->ki, n); }

/* Is arg b read at each point (not loaded once)? */
static bool point_arg(const E *e, int b) { return e->ki->arg_ew[b] && !e->ki->bcast_all[b]; }

/* Take node n at index idx into 'const T name', from the take source's
 * pointer (the body's t<slot>, else the entry's p<arg>): never reads out of
 * bounds, a bad index gives 0 and raises the flag.  live: NULL, or the
 * condition for the point to exist; one that does not gets 0 and raises
 * nothing (g64's gathers run unguarded, so that they go out together). */
static void take_text(E *e, int32_t n, bool body, const char *idx, const char *live, const char *name,
                      const char *ind)
{
    const kf_irnode *x = nd(e, n);
    int b = kf_cg_role_index(e->ki, x->args[0]), s = e->ki->tslot[b];
    kf_dtype t = (kf_dtype)x->dtype;
    P("%sconst %s i%d = (%s)%s;\n", ind, I64(e), n, I64(e), idx);
    P("%sconst int ok%d = %s%si%d >= 0 && i%d < tl%d;\n", ind, n, live ? live : "", live ? " && " : "", n, n, s);
    if (live)
        P("%sif (!ok%d && %s)\n%s    *err = 1;\n", ind, n, live, ind);
    else
        P("%sif (!ok%d)\n%s    *err = 1;\n", ind, n, ind);
    char ld[64];
    kf_snprintf(ld, sizeof ld, "%c%d[i%d * ts%d]", body ? 't' : 'p', body ? s : b, n, s);
    P("%sconst %s %s = ok%d ? ", ind, CT(e, t), name, n);
    load_conv(e, e->o, t, ld);
    P(" : %s;\n", kf_dt_is_float(t) ? fzero(prec(t)) : "0");
}

/* Is there a take, direct or not as asked, whose operand opnd (0 the
 * source, 1 the index) is arg b (any when b < 0)? */
static bool take_of(const E *e, bool direct, int opnd, int b)
{
    const kf_kernel *k = e->ki->k;
    for (int i = 0; i < k->nnodes; i++) {
        const kf_irnode *x = nd(e, k->nodes[i]);
        if (x->op == KF_OP_TAKE && direct_take(e, k->nodes[i]) == direct &&
            (b < 0 || kf_cg_role_index(e->ki, x->args[opnd]) == b))
            return true;
    }
    return false;
}

/* Does the body gather (a take that is not direct) from arg b, or from
 * any source when b < 0?  Only then does it get the source's pointer (and
 * the error flag). */
static bool body_gathers(const E *e, int b) { return take_of(e, false, 0, b); }

static void emit_body(E *e)
{
    const kf_cg_kinfo *ki = e->ki;
    const kf_kernel *k = ki->k;
    const kf_cg_spell *sp = e->sp;
    P("/* The fused expression at one point of the iteration space. */\n");
    P("%s void %s_body(", k->nops > KF_CG_BIG_BODY ? sp->fn_big : sp->fn, ki->prefix);
    lst l = { e->o, 0, line_start(e->o) };
    for (int b = 0; b < k->nargs; b++)
        if (ki->arg_ew[b])
            item(&l, "const %s x%d", CT(e, dt(e, k->args[b])), b);
    for (int i = 0; i < k->nscalars; i++)
        item(&l, "const %s s%d", CT(e, dt(e, k->scalars[i])), i);
    for (int d = 0; d < ki->R; d++)
        if (ki->coords & (1u << d))
            item(&l, "const %s c%d", I64(e), d);
    for (int i = 0; i < k->nnodes; i++)
        if (direct_take(e, k->nodes[i]))
            item(&l, "const %s v%d", CT(e, dt(e, k->nodes[i])), k->nodes[i]);
    for (int b = 0; b < k->nargs; b++)
        if (ki->tslot[b] >= 0 && body_gathers(e, b))
            item(&l, "%sconst %s *%s t%d, const %s tl%d, const %s ts%d", sp->global, ST(e, dt(e, k->args[b])),
                 sp->restrict_kw, ki->tslot[b], I64(e), ki->tslot[b], I64(e), ki->tslot[b]);
    if (body_gathers(e, -1))
        item(&l, "%sint *err", sp->global);
    for (int j = 0; j < k->nouts; j++)
        item(&l, "%s *r%d", CT(e, dt(e, sink(e, j))), j);
    P(")\n{\n");
    kf_strbuf xb = KF_STRBUF_INIT;
    /* cos and sin nodes already computed with their partner by one sincos */
    bool *done = calloc((size_t)k->nnodes + 1, sizeof *done);
    if (!done)
        e->o->oom = true;
    for (int i = 0; i < k->nnodes && done; i++) {
        int32_t n = k->nodes[i], pj;
        const kf_irnode *x = nd(e, n);
        if (kf_ir_op((kf_op)x->op)->kind == KF_KIND_REDUCE || done[i])
            continue;
        S("    /* ");
        node_text(e, e->o, n);
        S(direct_take(e, n) ? ": gathered by the entry point */\n" : " */\n");
        if (direct_take(e, n))
            continue;
        const char *T = CT(e, (kf_dtype)x->dtype);
        char a[3][128];
        for (int j = 0; j < x->nargs; j++) {
            kf_sb_reset(&xb);
            operand(e, &xb, x->args[j]);
            kf_snprintf(a[j], sizeof a[j], "%s", kf_sb_str(&xb));
        }
        if (x->op == KF_OP_IOTA) {
            int d = ki->R - x->rank + x->axis;
            kf_sb_reset(&xb);
            if (kf_cg_dim_bcast(ki, x, d))
                kf_sb_puts(&xb, "0");
            else
                kf_sb_printf(&xb, "c%d", d);
            P("    const %s v%d = ", T, n);
            cast_expr(e, e->o, KF_I64, (kf_dtype)x->dtype, kf_sb_str(&xb));
            P(";\n");
        } else if (x->op == KF_OP_TAKE) {
            char v[24];
            kf_snprintf(v, sizeof v, "v%d", n);
            take_text(e, n, true, a[1], NULL, v, "    ");
        } else if ((pj = sincos_partner(e, i)) >= 0) {
            done[pj] = true;
            int32_t sn = x->op == KF_OP_SIN ? n : k->nodes[pj], cn = x->op == KF_OP_SIN ? k->nodes[pj] : n;
            const char *f = sp->sincos[x->dtype == KF_F64];
            if (x->dtype == KF_F32 && e->fast) {
                f = sp->sincos_fast;
            } else if (x->dtype == KF_F32 && sp->split_trig) {
                f = trig_wrap[TRIG_SINCOS];
                use(e, H_TRIG + TRIG_SINCOS);
            }
            P("    %s v%d, v%d;\n", T, sn, cn);
            if (sp->sincos_returns_sin)
                P("    v%d = %s(%s, &v%d);\n", sn, f, a[0], cn);
            else
                P("    %s(%s, &v%d, &v%d);\n", f, a[0], sn, cn);
        } else {
            P("    const %s v%d = ", T, n);
            ew_expr(e, e->o, x, a);
            P(";\n");
        }
    }
    for (int j = 0; j < k->nouts; j++) {
        kf_sb_reset(&xb);
        operand(e, &xb, sink(e, j));
        P("    *r%d = %s;\n", j, kf_sb_str(&xb));
    }
    P("}\n\n");
    if (kf_sb_failed(&xb))
        e->o->oom = true;
    kf_sb_free(&xb);
    free(done);
}

/* -- Entry points ----------------------------------------------------------------------------- */

/* Index types of a variant: IX unsigned (loop counters), SX signed (coordinates, addresses). */
typedef struct ix {
    const char *IX, *SX;
} ix;

static ix ix_of(const E *e, bool w64)
{
    return w64 ? (ix){ U64(e), I64(e) } : (ix){ U32(e), e->sp->types[KF_I32] };
}

static const char *const variant_doc[KF_CG_VARIANT_COUNT] = {
    "contiguous, 16-byte vectors, 32-bit indices",
    "contiguous, 16-byte vectors, 64-bit indices",
    "strided, 32-bit indices",
    "strided, 64-bit indices",
    "contiguous, 16-byte vectors, 64-bit indices, outer dims innermost (args broadcast on them read once per block)",
    "strided, 64-bit indices, 4 points per thread 256 apart: their loads, their gathers, then their math",
    "contiguous, 8-byte vectors, 64-bit indices",
    "b64's walk (outer dims innermost) with one 16-byte vector a thread",
    "one thread per output, reduced elements in order",
    "pass 1: one block per (output, chunk of tiles); final when one chunk, else partials to scratch",
    "pass 2: one block per output combines its chunks from scratch",
    "one 32-thread group per output (at most one tile), the tile variant's order",
    "warp for a call whose groups load as vectors (gvec: the launch rule checks it), 32-bit indices",
};

static void entry_head(E *e, kf_cg_variant v)
{
    const kf_cg_kinfo *ki = e->ki;
    const kf_kernel *k = ki->k;
    const kf_cg_spell *sp = e->sp;
    P("/* %s_%s: %s */\n", ki->prefix, kf_cg_variant_name(v), variant_doc[v]);
    P(sp->entry_pre, KF_CG_BLOCK);
    P("%s_%s(", ki->prefix, kf_cg_variant_name(v));
    lst l = { e->o, 0, line_start(e->o) };
    for (int b = 0; b < k->nargs; b++)
        item(&l, "%sconst %s *%s a%d", sp->global, ST(e, dt(e, k->args[b])), sp->restrict_kw, b);
    for (int j = 0; j < k->nouts; j++)
        item(&l, "%s%s *%s o%d", sp->global, ST(e, dt(e, k->outs[j])), sp->restrict_kw, j);
    item(&l, "const %s_meta m", ki->prefix);
    for (int i = 0; i < k->nscalars; i++)
        item(&l, "const %s s%d", ST(e, dt(e, k->scalars[i])), i);
    if (k->has_take)
        item(&l, "%sint *err", sp->global);
    if (k->kind == KF_KERNEL_REDUCE)
        item(&l, "%s%s *%s scratch", sp->global, ST(e, KF_U8), sp->restrict_kw);
    P(")\n{\n");
}

/* Buffer pointers moved to their offsets (by the caller where
 * kf_cg_array_pointers), scalar values, take facts. */
static void prologue(E *e, bool args)
{
    const kf_cg_kinfo *ki = e->ki;
    const kf_kernel *k = ki->k;
    const kf_cg_spell *sp = e->sp;
    bool moved = kf_cg_array_pointers(e->target);
    for (int b = 0; args && b < k->nargs; b++)
        if (ki->arg_ew[b] || ki->tslot[b] >= 0) {
            P("    %sconst %s *p%d = a%d", sp->global, ST(e, dt(e, k->args[b])), b, b);
            if (!moved)
                P(" + m.v[%d]", ki->m_offsets + b);
            P(";\n");
        }
    for (int j = 0; j < k->nouts; j++) {
        P("    %s%s *q%d = o%d", sp->global, ST(e, dt(e, k->outs[j])), j, j);
        if (!moved)
            P(" + m.v[%d]", ki->m_offsets + k->nargs + j);
        P(";\n");
    }
    for (int i = 0; args && i < k->nscalars; i++) {
        kf_dtype t = dt(e, k->scalars[i]);
        char nm[16];
        kf_snprintf(nm, sizeof nm, "s%d", i);
        P("    const %s sv%d = ", CT(e, t), i);
        load_conv(e, e->o, t, nm);
        P(";\n");
    }
    for (int b = 0; args && b < k->nargs; b++)
        if (ki->tslot[b] >= 0) {
            int s = ki->tslot[b];
            P("    const %s tl%d = m.v[%d], ts%d = m.v[%d];\n", I64(e), s, ki->m_take + 2 * s, s, ki->m_take + 2 * s + 1);
        }
}

static void dims_decl(E *e, ix t, uint8_t need)
{
    const kf_cg_kinfo *ki = e->ki;
    for (int d = 0; d < ki->R; d++) {
        if (!(need & (1u << d)))
            continue;
        if (ki->dims[d] >= 0)
            P("    const %s d%d = %lld;\n", t.IX, d, (long long)ki->dims[d]);
        else
            P("    const %s d%d = (%s)m.v[%d]; /* %s */\n", t.IX, d, t.IX, ki->m_shape + d,
              e->g->syms[KF_IR_SYM_INDEX(ki->dims[d])]);
    }
}

/* Does buffer b use iteration dim d (not statically broadcast)?  For
 * reduction outs only kept dims count. */
static bool buf_dim(const E *e, int b, int d)
{
    const kf_cg_kinfo *ki = e->ki;
    const kf_kernel *k = ki->k;
    if (b < k->nargs)
        return ki->arg_ew[b] && !kf_cg_dim_bcast(ki, nd(e, k->args[b]), d);
    int32_t n = k->outs[b - k->nargs];
    if (is_red(e, n))
        return !(k->axes & (1u << d));
    return !kf_cg_dim_bcast(ki, nd(e, n), d);
}

static void strides_decl(E *e, ix t, bool args)
{
    const kf_cg_kinfo *ki = e->ki;
    for (int b = args ? 0 : ki->k->nargs; b < ki->nb; b++)
        for (int d = 0; d < ki->R; d++)
            if (buf_dim(e, b, d))
                P("    const %s st%d_%d = (%s)m.v[%d];\n", t.SX, b, d, t.SX, ki->m_strides + b * ki->R + d);
}

/* Element index of buffer b at coordinates c<d>; its stride on dim unit
 * (-1: none) is known to be 1. */
static void addr_unit(E *e, kf_strbuf *o, int b, int unit)
{
    int n = 0;
    for (int d = 0; d < e->ki->R; d++) {
        if (d == unit && buf_dim(e, b, d))
            kf_sb_printf(o, "%sc%d", n++ ? " + " : "", d);
        else if (buf_dim(e, b, d))
            kf_sb_printf(o, "%sc%d * st%d_%d", n++ ? " + " : "", d, b, d);
    }
    if (!n)
        kf_sb_putc(o, '0');
}

static void addr(E *e, kf_strbuf *o, int b) { addr_unit(e, o, b, -1); }

/* Is the coordinate of iteration dim d read (by a buffer's address or by
 * the body)? */
static bool coord_used(const E *e, int d)
{
    if (e->ki->coords & (1u << d))
        return true;
    for (int b = 0; b < e->ki->nb; b++)
        if (buf_dim(e, b, d))
            return true;
    return false;
}

/* The dims (d<d> locals) coords_from reads for mask 'dims'. */
static uint8_t coord_dims(const E *e, uint8_t dims)
{
    int last = -1, lowest_used = -1;
    for (int d = 0; d < e->ki->R; d++)
        if (dims & (1u << d)) {
            if (last < 0)
                last = d;
            if (lowest_used < 0 && coord_used(e, d))
                lowest_used = d;
        }
    uint8_t need = 0;
    for (int d = lowest_used < 0 ? e->ki->R : lowest_used; d < e->ki->R; d++)
        if ((dims & (1u << d)) && d != last && (coord_used(e, d) || d > lowest_used))
            need |= (uint8_t)(1u << d);
    return need;
}

/* Coordinates of dims in mask 'dims' (ascending) from linear index var,
 * row-major over just those dims: the last is fastest. */
static void coords_from(E *e, ix t, uint8_t dims, const char *var, const char *tmp, const char *ind)
{
    int last = -1, cnt = 0;
    bool any = false;
    for (int d = 0; d < e->ki->R; d++)
        if (dims & (1u << d)) {
            if (last < 0)
                last = d;
            cnt++;
            any = any || coord_used(e, d);
        }
    if (!any)
        return;
    int lowest_used = e->ki->R;
    for (int d = 0; d < e->ki->R; d++)
        if ((dims & (1u << d)) && coord_used(e, d)) {
            lowest_used = d;
            break;
        }
    P("%s%s %s = %s;\n", ind, t.IX, tmp, var);
    for (int d = e->ki->R - 1; d >= lowest_used; d--) {
        if (!(dims & (1u << d)))
            continue;
        if (d == last) {
            P("%sconst %s c%d = (%s)%s;\n", ind, t.SX, d, t.SX, tmp);
        } else {
            if (coord_used(e, d))
                P("%sconst %s c%d = (%s)(%s %% d%d);\n", ind, t.SX, d, t.SX, tmp, d);
            if (d > lowest_used)
                P("%s%s /= d%d;\n", ind, tmp, d);
        }
    }
}

/* Mark the coordinates coords_from declared for 'dims' as read (a block
 * that needs only some of them). */
static void coords_void(E *e, uint8_t dims, const char *ind)
{
    for (int d = 0; d < e->ki->R; d++)
        if ((dims & (1u << d)) && coord_used(e, d))
            P("%s(void)c%d;\n", ind, d);
}

/* Loads of the args read at the iteration point (strided addressing). */
static void loads(E *e, const char *ind, bool skip_bcast)
{
    const kf_cg_kinfo *ki = e->ki;
    const kf_kernel *k = ki->k;
    kf_strbuf a = KF_STRBUF_INIT, l = KF_STRBUF_INIT;
    for (int b = 0; b < k->nargs; b++) {
        if (!ki->arg_ew[b] || (skip_bcast && ki->bcast_all[b]))
            continue;
        kf_sb_reset(&a);
        kf_sb_reset(&l);
        addr(e, &a, b);
        kf_sb_printf(&l, "p%d[%s]", b, kf_sb_str(&a));
        P("%sconst %s x%d = ", ind, CT(e, dt(e, k->args[b])), b);
        load_conv(e, e->o, dt(e, k->args[b]), kf_sb_str(&l));
        P(";\n");
    }
    if (kf_sb_failed(&a) || kf_sb_failed(&l))
        e->o->oom = true;
    kf_sb_free(&a);
    kf_sb_free(&l);
}

/* Args broadcast on every dim, loaded once before the loop. */
static void bcast_loads(E *e)
{
    const kf_cg_kinfo *ki = e->ki;
    const kf_kernel *k = ki->k;
    for (int b = 0; b < k->nargs; b++) {
        if (!ki->arg_ew[b] || !ki->bcast_all[b])
            continue;
        char l[32];
        kf_snprintf(l, sizeof l, "p%d[0]", b);
        P("    const %s x%d = ", CT(e, dt(e, k->args[b])), b);
        load_conv(e, e->o, dt(e, k->args[b]), l);
        P(" /* broadcast */;\n");
    }
}

static void sinks_decl(E *e, const char *ind)
{
    const kf_kernel *k = e->ki->k;
    P("%s%s r0", ind, CT(e, dt(e, sink(e, 0))));
    for (int j = 1; j < k->nouts; j++) {
        if (strcmp(CT(e, dt(e, sink(e, j))), CT(e, dt(e, sink(e, j - 1)))) == 0)
            P(", r%d", j);
        else
            P(";\n%s%s r%d", ind, CT(e, dt(e, sink(e, j))), j);
    }
    P(";\n");
}

/* The direct takes' gathers (direct_take) at the point, into g<n> (live:
 * see take_text). */
static void gathers(E *e, const char *live, const char *ind)
{
    const kf_kernel *k = e->ki->k;
    for (int i = 0; i < k->nnodes; i++) {
        int32_t n = k->nodes[i];
        if (!direct_take(e, n))
            continue;
        char idx[24], g[24];
        kf_snprintf(idx, sizeof idx, "x%d", kf_cg_role_index(e->ki, nd(e, n)->args[1]));
        kf_snprintf(g, sizeof g, "g%d", n);
        take_text(e, n, false, idx, live, g, ind);
    }
}

/* Arrays ga<n>[K] for the direct takes' values of K points (g64's, a
 * vector's lanes). */
static void gathered_decl(E *e, int K)
{
    const kf_kernel *k = e->ki->k;
    for (int i = 0; i < k->nnodes; i++)
        if (direct_take(e, k->nodes[i]))
            P("        %s ga%d[%d];\n", CT(e, dt(e, k->nodes[i])), k->nodes[i], K);
}

/* The direct takes' gathers at a point (gathers), kept in ga<n>[slot]. */
static void gathers_into(E *e, const char *live, const char *ind, const char *slot)
{
    const kf_kernel *k = e->ki->k;
    gathers(e, live, ind);
    for (int i = 0; i < k->nnodes; i++)
        if (direct_take(e, k->nodes[i]))
            P("%sga%d[%s] = g%d;\n", ind, k->nodes[i], slot, k->nodes[i]);
}

/* The body's call at the point: its direct takes gathered first, unless
 * gathered: then they are in ga<n>[gathered]. */
static void body_call_at(E *e, const char *ind, const char *gathered)
{
    const kf_cg_kinfo *ki = e->ki;
    const kf_kernel *k = ki->k;
    if (!gathered)
        gathers(e, NULL, ind);
    P("%s%s_body(", ind, ki->prefix);
    lst l = { e->o, 0, line_start(e->o) };
    for (int b = 0; b < k->nargs; b++)
        if (ki->arg_ew[b])
            item(&l, "x%d", b);
    for (int i = 0; i < k->nscalars; i++)
        item(&l, "sv%d", i);
    for (int d = 0; d < ki->R; d++)
        if (ki->coords & (1u << d))
            item(&l, "(%s)c%d", I64(e), d);
    for (int i = 0; i < k->nnodes; i++)
        if (direct_take(e, k->nodes[i])) {
            if (gathered)
                item(&l, "ga%d[%s]", k->nodes[i], gathered);
            else
                item(&l, "g%d", k->nodes[i]);
        }
    for (int b = 0; b < k->nargs; b++)
        if (ki->tslot[b] >= 0 && body_gathers(e, b))
            item(&l, "p%d, tl%d, ts%d", b, ki->tslot[b], ki->tslot[b]);
    if (body_gathers(e, -1))
        item(&l, "err");
    for (int j = 0; j < k->nouts; j++)
        item(&l, "&r%d", j);
    P(");\n");
}

static void body_call(E *e, const char *ind) { body_call_at(e, ind, NULL); }

/* Stores of the outs that are not reductions, strided addressing. */
static void ew_stores(E *e, const char *ind)
{
    const kf_kernel *k = e->ki->k;
    kf_strbuf a = KF_STRBUF_INIT;
    for (int j = 0; j < k->nouts; j++) {
        if (is_red(e, k->outs[j]))
            continue;
        char r[16];
        kf_snprintf(r, sizeof r, "r%d", j);
        kf_sb_reset(&a);
        addr(e, &a, k->nargs + j);
        P("%sq%d[%s] = ", ind, j, kf_sb_str(&a));
        store_conv(e, e->o, dt(e, k->outs[j]), r);
        P(";\n");
    }
    if (kf_sb_failed(&a))
        e->o->oom = true;
    kf_sb_free(&a);
}

/* nth (threads in the grid) and tid (this thread's index).  one_pass: for
 * the elementwise loops, which step with KF_NEXT and need no nth when
 * KF_ONE_PASS is defined. */
static void grid_loop_vars(E *e, ix t, bool one_pass)
{
    const kf_cg_spell *sp = e->sp;
    if (one_pass)
        P("#ifndef KF_ONE_PASS\n");
    P("    const %s nth = (%s)%s * (%s)%s;\n", t.IX, t.IX, sp->gdim, t.IX, sp->bdim);
    if (one_pass)
        P("#endif\n");
    P("    const %s tid = (%s)%s * (%s)%s + (%s)%s;\n", t.IX, t.IX, sp->bid, t.IX, sp->bdim, t.IX, sp->lid);
}

/* The head of an elementwise loop over var = start, start + step, ... <
 * end: grid-stride, or at most one pass with KF_ONE_PASS (H_NEXT). */
static void ew_loop(E *e, ix t, const char *var, const char *start, const char *end, const char *step)
{
    use(e, H_NEXT);
    P("    for (%s %s = %s; %s < %s; %s = KF_NEXT(%s, %s, %s)) {\n", t.IX, var, start, var, end, var, var, step, end);
}

/* The head of a strided entry point (s32, s64, g64): n, the dims and
 * strides of strided addressing, the args broadcast on every dim; returns
 * the mask of all iteration dims. */
static uint8_t strided_head(E *e, ix t, kf_cg_variant v)
{
    entry_head(e, v);
    prologue(e, true);
    P("    const %s n = (%s)m.v[0];\n", t.IX, t.IX);
    uint8_t all = (uint8_t)((1u << e->ki->R) - 1);
    dims_decl(e, t, coord_dims(e, all));
    strides_decl(e, t, true);
    bcast_loads(e);
    return all;
}

/* g64 (a GPU's, for kernels with a direct take): KF_CG_GATHER_ELEMS points
 * per thread, KF_CG_BLOCK apart (a block covers 1024 neighbouring points),
 * in three phases: the points' loads, their direct takes' gathers, then
 * their bodies and stores.  One point per thread waits for each gather
 * before the math, and a thread with several points in turn still waits
 * for each point's math before its next gather (f64 exp and log hold
 * branches the compiler moves no load across); here the gathers go out
 * together (unguarded: a point past n reads and flags nothing), and the
 * block's points read more of a gathered sector from L1. */
static void emit_ew_gather(E *e)
{
    const kf_cg_kinfo *ki = e->ki;
    const kf_kernel *k = ki->k;
    const kf_cg_spell *sp = e->sp;
    ix t = ix_of(e, true);
    const int K = KF_CG_GATHER_ELEMS;
    uint8_t all = strided_head(e, t, KF_CG_G64);
    P("#ifndef KF_ONE_PASS\n    const %s nth = (%s)%s * (%s)%s * %d;\n#endif\n", t.IX, t.IX, sp->gdim, t.IX, sp->bdim,
      K);
    P("    const %s tid = (%s)%s * (%s)%s * %d + (%s)%s;\n", t.IX, t.IX, sp->bid, t.IX, sp->bdim, K, t.IX, sp->lid);
    ew_loop(e, t, "i0", "tid", "n", "nth");
    bool loads_any = false;   /* else no load phase: only coordinates, unused */
    for (int b = 0; b < k->nargs; b++)
        if (point_arg(e, b)) {
            P("        %s xa%d[%d] = { 0 };\n", CT(e, dt(e, k->args[b])), b, K);
            loads_any = true;
        }
    gathered_decl(e, K);
    for (int phase = loads_any ? 0 : 1; phase < 3; phase++) {
        pragma(e, e->unroll);
        P("        for (int k = 0; k < %d; k++) {\n", K);
        P("            const %s i = i0 + (%s)k * %d;\n", t.IX, t.IX, KF_CG_BLOCK);
        const char *in = phase == 1 ? "            " : "                ";
        if (phase != 1) {
            P("            if (i < n) {\n");
            coords_from(e, t, all, "i", "t", in);
        }
        for (int b = 0; b < k->nargs && phase > 0; b++)
            if (point_arg(e, b) && (phase == 2 || take_of(e, true, 1, b)))
                P("%sconst %s x%d = xa%d[k];\n", in, CT(e, dt(e, k->args[b])), b, b);
        if (phase == 0) {
            loads(e, in, true);
            for (int b = 0; b < k->nargs; b++)
                if (point_arg(e, b))
                    P("%sxa%d[k] = x%d;\n", in, b, b);
        } else if (phase == 1) {
            gathers_into(e, "i < n", in, "k");
        } else {
            sinks_decl(e, in);
            body_call_at(e, in, "k");
            ew_stores(e, in);
        }
        P(phase == 1 ? "        }\n" : "            }\n        }\n");
    }
    P("    }\n}\n\n");
}

static void emit_ew_strided(E *e, bool w64)
{
    ix t = ix_of(e, w64);
    uint8_t all = strided_head(e, t, w64 ? KF_CG_S64 : KF_CG_S32);
    grid_loop_vars(e, t, true);
    ew_loop(e, t, "i", "tid", "n", "nth");
    coords_from(e, t, all, "i", "t", "        ");
    loads(e, "        ", true);
    sinks_decl(e, "        ");
    body_call(e, "        ");
    ew_stores(e, "        ");
    P("    }\n}\n\n");
}

/* Raw bits (unsigned) of lane l of word array w for element size s. */
static void lane_get(E *e, kf_strbuf *o, int s, const char *w)
{
    switch (s) {
    case 1: kf_sb_printf(o, "((%s[l >> 2] >> ((l & 3) * 8)) & 0xffu)", w); break;
    case 2: kf_sb_printf(o, "((%s[l >> 1] >> ((l & 1) * 16)) & 0xffffu)", w); break;
    case 4: kf_sb_printf(o, "%s[l]", w); break;
    default: kf_sb_printf(o, "(((%s)%s[2 * l + 1] << 32) | %s[2 * l])", U64(e), w, w); break;
    }
}

/* Raw bits of element l (a run-time value) of a group of KF_CG_RED_GROUP
 * elements of size s in words w[]: selects instead of an index, so that w
 * stays in registers when the loop over l is not unrolled. */
static void lane_sel(E *e, kf_strbuf *o, int s, const char *w)
{
    switch (s) {
    case 1: kf_sb_printf(o, "((%s[0] >> (l * 8)) & 0xffu)", w); break;
    case 2: kf_sb_printf(o, "(((l < 2 ? %s[0] : %s[1]) >> ((l & 1) * 16)) & 0xffffu)", w, w); break;
    case 4: kf_sb_printf(o, "(l < 2 ? (l == 0 ? %s[0] : %s[1]) : (l == 2 ? %s[2] : %s[3]))", w, w, w, w); break;
    default:
        kf_sb_printf(o, "(((%s)(l < 2 ? (l == 0 ? %s[1] : %s[3]) : (l == 2 ? %s[5] : %s[7])) << 32) | "
                        "(l < 2 ? (l == 0 ? %s[0] : %s[2]) : (l == 2 ? %s[4] : %s[6])))",
                     U64(e), w, w, w, w, w, w, w, w);
        break;
    }
}

/* Compute-type value of dtype t from its raw bits. */
static void from_raw(E *e, kf_strbuf *o, kf_dtype t, const char *raw)
{
    const kf_cg_spell *sp = e->sp;
    switch (t) {
    case KF_BOOL: kf_sb_printf(o, "(%s != 0)", raw); break;
    case KF_F16: use(e, H_H2F); kf_sb_printf(o, "kf_h2f((%s)%s)", ST(e, KF_U16), raw); break;
    case KF_BF16: use(e, H_BF2F); kf_sb_printf(o, "kf_bf2f((%s)%s)", ST(e, KF_U16), raw); break;
    case KF_F32: kf_sb_printf(o, "%s%s%s", sp->f32_from_bits.pre, raw, sp->f32_from_bits.post); break;
    case KF_F64: kf_sb_printf(o, "%s%s%s", sp->f64_from_bits.pre, raw, sp->f64_from_bits.post); break;
    default: kf_sb_printf(o, "(%s)%s", ST(e, t), raw); break;
    }
}

/* 'const T x<b> = ...': lane l of arg b's words w<b><J> (J: "" or b64's
 * "[j]"), in the contiguous variants. */
static void lane_arg(E *e, int b, const char *J, const char *ind)
{
    kf_dtype ty = dt(e, e->ki->k->args[b]);
    char w[16];
    kf_strbuf x = KF_STRBUF_INIT, y = KF_STRBUF_INIT;
    kf_snprintf(w, sizeof w, "w%d%s", b, J);
    lane_get(e, &x, (int)kf_dtype_size(ty), w);
    from_raw(e, &y, ty, kf_sb_str(&x));
    P("%sconst %s x%d = %s;\n", ind, CT(e, ty), b, kf_sb_str(&y));
    if (kf_sb_failed(&x) || kf_sb_failed(&y))
        e->o->oom = true;
    kf_sb_free(&x);
    kf_sb_free(&y);
}

/* Raw bits (unsigned int, or 64-bit unsigned for 8-byte dtypes) of a compute value. */
static void to_raw(E *e, kf_strbuf *o, kf_dtype t, const char *v)
{
    const kf_cg_spell *sp = e->sp;
    switch (t) {
    case KF_F16: use(e, H_F2H); kf_sb_printf(o, "(%s)kf_f2h(%s)", U32(e), v); break;
    case KF_BF16: use(e, H_F2BF); kf_sb_printf(o, "(%s)kf_f2bf(%s)", U32(e), v); break;
    case KF_F32: kf_sb_printf(o, "%s%s%s", sp->f32_to_bits.pre, v, sp->f32_to_bits.post); break;
    case KF_F64: kf_sb_printf(o, "%s%s%s", sp->f64_to_bits.pre, v, sp->f64_to_bits.post); break;
    case KF_I64: case KF_U64: kf_sb_printf(o, "(%s)%s", U64(e), v); break;
    case KF_I32: case KF_U32: kf_sb_printf(o, "(%s)%s", U32(e), v); break;
    default: kf_sb_printf(o, "(%s)(%s)%s", U32(e), ST(e, kf_dtype_size(t) == 1 ? KF_U8 : KF_U16), v); break;
    }
}

/* Coordinates needed by the body from the linear index of a contiguous variant. */
static void coords_linear(E *e, ix t, const char *var, const char *ind)
{
    const kf_cg_kinfo *ki = e->ki;
    for (int d = 0; d < ki->R; d++) {
        if (!(ki->coords & (1u << d)))
            continue;
        P("%sconst %s c%d = (%s)((%s / in%d)", ind, t.SX, d, t.SX, var, d);
        if (d > 0)
            P(" %% d%d", d);
        P(");\n");
    }
}

/* A buffer of element size s in a step of W elements: W * s / 4 words,
 * moved as *vecs loads or stores of *u words each (uint4, or one uint2 where
 * the step holds 8 bytes). */
static int vec_words(int W, size_t s, int *u, int *vecs)
{
    int words = W * (int)s / 4;
    *u = words < 4 ? words : 4;
    *vecs = words / *u;
    return words;
}

/* The head of a pass of b64 or b1 over a thread's U vectors: vector j's
 * index in the inner dims (iv, clamped to the last) and, if ov, in the
 * whole space; 32-bit (b64's launch rule). */
static void b64_pass_head(E *e, int U, bool ov)
{
    const char *u = U32(e);
    pragma(e, e->unroll);
    P("        for (int j = 0; j < %d; j++) {\n", U);
    P("            const %s jv = iv0 + (%s)j * %du, iv = jv < nvec ? jv : nvec - 1;\n", u, u, KF_CG_BLOCK);
    if (ov)
        P("            const %s ov = s * nvec + iv;\n", u);
}

/* The contiguous variants c32, c64, b64 and b1.  b64 (kf_cg_kinfo.bsplit,
 * or .pair with no outer dims: one step) and b1 (bsplit only) walk the
 * space as (chunk of KF_CG_B_CHUNK_VECS inner vectors, outer step, block
 * of the chunk), so a chunk of a broadcast arg comes from DRAM once and
 * from L2 for the other steps, while each step's part of a chunk is read
 * and written in one contiguous run: each of a thread's U vectors
 * (KF_CG_B64_VECS for b64, one for b1) is iv of the inner dims for those
 * args and ov = step * vectors per step + iv of the whole space for the
 * others. */
static void emit_ew_contig(E *e, kf_cg_variant var)
{
    const kf_cg_kinfo *ki = e->ki;
    const kf_kernel *k = ki->k;
    const kf_cg_spell *sp = e->sp;
    bool bc = var == KF_CG_B64 || var == KF_CG_B1;
    const int U = kf_cg_b_vecs(var);                          /* b64, b1: vectors a thread */
    const int CB = KF_CG_B_CHUNK_VECS / (KF_CG_BLOCK * U);   /* blocks of a step's chunk */
    const char *out_v = bc ? "ov" : "iv";   /* the outputs' vector index */
    ix t = ix_of(e, var != KF_CG_C32);
    int W = var == KF_CG_H64 ? ki->vecw / 2 : ki->vecw;
    entry_head(e, var);
    prologue(e, true);
    uint8_t declared = 0;
    if (bc) {   /* products of the dims, not divisions of n: no 64-bit divide before the first load */
        declared = (uint8_t)((1u << ki->R) - 1);
        dims_decl(e, t, declared);
        P("    const %s T = 1", t.IX);
        for (int d = 0; d < ki->bsplit; d++)
            P(" * d%d", d);
        P("; /* outer steps */\n");
        /* a vector's index in 32 bits: T * nvec + KF_CG_BLOCK *
         * KF_CG_B64_VECS <= 2^32 (b64's launch rule, b1's too) */
        P("    const %s nvec = (%s)(1", U32(e), U32(e));
        for (int d = ki->bsplit; d < ki->R; d++)
            P(" * d%d", d);
        P(" / %d); /* vectors of %d elements per step */\n", W, W);
        /* B blocks a step, in chunks of CB blocks (the last one
         * narrower), each chunk walked over every step in turn, unless a
         * step's buffers fit KF_CG_B_FLAT_BYTES (codegen.md) */
        P("    const %s B = (nvec + %du) / %du; /* blocks a step */\n", U32(e), KF_CG_BLOCK * U - 1, KF_CG_BLOCK * U);
        P("    const %s nblk = (%s)B * T;\n", t.IX, t.IX);
        if (ki->bsplit) {
            P("    const %s CT = (nvec <= %du || B < %du ? B : %du) * (%s)T;", U32(e),
              KF_CG_B_FLAT_BYTES / (W * ki->point_bytes), CB, CB, U32(e));
            P(" /* blocks of a chunk, all steps (<= B * T) */\n");
        }
    } else {
        P("    const %s n = (%s)m.v[0];\n", t.IX, t.IX);
        P("    const %s nvec = n / %d; /* steps of %d elements */\n", t.IX, W, W);
    }
    if (ki->coords) {
        /* in<d>: elements per step of dim d; c<d> = i / in<d> % d<d> */
        int minc = 0;
        while (!(ki->coords & (1u << minc)))
            minc++;
        uint8_t need = 0;
        for (int d = minc + 1; d < ki->R; d++)
            need |= (uint8_t)(1u << d);
        need |= (uint8_t)(ki->coords & ~1u);
        dims_decl(e, t, need & (uint8_t)~declared);
        for (int d = ki->R - 1; d >= minc; d--) {
            if (d == ki->R - 1)
                P("    const %s in%d = 1;\n", t.IX, d);
            else
                P("    const %s in%d = in%d * d%d;\n", t.IX, d, d + 1, d + 1);
        }
    }
    bcast_loads(e);
    kf_strbuf x = KF_STRBUF_INIT;
    /* b64 and b1 move U vectors a thread, KF_CG_BLOCK apart, in two passes
     * over them: every vector's loads, then each vector's body and stores.
     * A vector past nvec (in a step's last block) reads vector nvec - 1 and
     * stores nothing. */
    const char *J = bc ? "[j]" : "", *X = bc ? "    " : "";   /* an arg's words of vector j; a pass's indent */
    if (bc) {
        char bid[64], gdim[64];
        kf_snprintf(bid, sizeof bid, "(%s)%s", t.IX, sp->bid);
        kf_snprintf(gdim, sizeof gdim, "(%s)%s", t.IX, sp->gdim);
        ew_loop(e, t, "w", bid, "nblk", gdim);
        /* block w -> (chunk c, step s, block b of the step) in 32 bits:
         * w < nblk <= T * nvec.  A call of one chunk (B <= CB, or a step
         * within KF_CG_B_FLAT_BYTES) skips the first divide: on an H100,
         * discount at 2^16 and 2^20 4.77 -> 4.70 and 8.64 -> 8.58 us in one
         * process (bench/results/h100-2026-11-27-s17-analysis.md).  With no outer
         * dims (kf_cg_kinfo.pair) there is one step and no chunking. */
        const char *u = U32(e);
        if (ki->bsplit) {
            P("        const %s c = nblk <= CT ? 0u : (%s)w / CT, r = (%s)w - c * CT;\n", u, u, u);
            P("        const %s lb = nblk <= CT ? B : B - c * %du < %du ? B - c * %du : %du;", u, CB, CB, CB, CB);
            P(" /* chunk c's blocks a step */\n");
            P("        const %s s = r / lb, b = c * %du + (r - s * lb);\n", u, CB);
        } else {
            P("        const %s s = 0u, b = (%s)w;\n", u, u);
        }
        P("        const %s iv0 = b * %du + (%s)%s; /* the thread's vector j: iv0 + %d * j */\n", u, KF_CG_BLOCK * U, u,
          sp->lid, KF_CG_BLOCK);
    } else {
        grid_loop_vars(e, t, true);
        ew_loop(e, t, "iv", "tid", "nvec", "nth");
    }
    bool loads = false, full = false;   /* b64: some arg to load, some of them not broadcast */
    for (int b = 0; b < k->nargs && bc; b++) {   /* every vector's words, before the first pass */
        int u, vecs;
        if (ki->arg_ew[b] && !ki->bcast_all[b]) {
            P("        %s w%d[%d][%d];\n", U32(e), b, U, vec_words(W, kf_dtype_size(dt(e, k->args[b])), &u, &vecs));
            loads = true;
            full |= !ki->bcast_lead[b];
        }
    }
    if (loads)
        b64_pass_head(e, U, full);
    for (int b = 0; b < k->nargs; b++) {
        if (!ki->arg_ew[b] || ki->bcast_all[b])
            continue;
        int u, vecs, words = vec_words(W, kf_dtype_size(dt(e, k->args[b])), &u, &vecs);
        const char *vi = bc && !ki->bcast_lead[b] ? "ov" : "iv";   /* this buffer's vector */
        if (!bc)
            P("        %s w%d[%d];\n", U32(e), b, words);
        for (int v = 0; v < vecs; v++) {
            P("%s        {\n%s            const uint%d u = ((%sconst uint%d *)p%d)[%s", X, X, u, sp->global, u, b, vi);
            if (vecs > 1)
                P(" * %d + %d", vecs, v);
            P("];\n");
            for (int c = 0; c < u; c++)
                P("%s            w%d%s[%d] = u.%c;\n", X, b, J, u * v + c, "xyzw"[c]);
            P("%s        }\n", X);
        }
    }
    if (loads)
        P("        }\n");
    if (bc)
        b64_pass_head(e, U, true);
    for (int j = 0; j < k->nouts; j++) {
        int u, vecs, b = k->nargs + j;
        P("%s        %s w%d[%d] = { 0 };\n", X, U32(e), b, vec_words(W, kf_dtype_size(dt(e, k->outs[j])), &u, &vecs));
    }
    const char *unroll = U * W * (k->nnodes + ki->nb) <= KF_CG_UNROLL_MAX ? e->unroll : sp->no_unroll;
    char ind[32];   /* the loop over l's body */
    kf_snprintf(ind, sizeof ind, "%s            ", X);
    /* Outside b64 (which gathers at each lane's body call), direct takes
     * are gathered for every lane before the first lane's math, so that
     * the gathers go out together (as in g64): the compiler moves no load
     * across the branches of f64 exp and log.  gather_boxplus (f64) on an
     * H100 in one process at 2^28: 0.93 of torch.compile with h64, 0.88
     * with g64 (bench/results/h100-2026-11-28-s20-analysis.md). */
    const bool gathered = ki->gather && !bc;
    if (gathered) {
        gathered_decl(e, W);
        pragma(e, unroll);
        P("        for (int l = 0; l < %d; l++) {\n", W);
        for (int b = 0; b < k->nargs; b++)
            if (point_arg(e, b) && take_of(e, true, 1, b))
                lane_arg(e, b, "", ind);
        gathers_into(e, NULL, ind, "l");
        P("        }\n");
    }
    pragma(e, unroll);
    P("%s        for (int l = 0; l < %d; l++) {\n", X, W);
    if (ki->coords) {
        P("%s            const %s i = ", X, t.IX);
        if (bc)   /* b64's 32-bit ov */
            P("(%s)", t.IX);
        P("%s * %d + (%s)l;\n", out_v, W, t.IX);
        coords_linear(e, t, "i", ind);
    }
    for (int b = 0; b < k->nargs; b++)
        if (point_arg(e, b))
            lane_arg(e, b, J, ind);
    sinks_decl(e, ind);
    body_call_at(e, ind, gathered ? "l" : NULL);
    for (int j = 0; j < k->nouts; j++) {
        int b = k->nargs + j;
        kf_dtype ty = dt(e, k->outs[j]);
        int s = (int)kf_dtype_size(ty);
        char r[16];
        kf_snprintf(r, sizeof r, "r%d", j);
        kf_sb_reset(&x);
        to_raw(e, &x, ty, r);
        switch (s) {
        case 1: P("%s            w%d[l >> 2] |= %s << ((l & 3) * 8);\n", X, b, kf_sb_str(&x)); break;
        case 2: P("%s            w%d[l >> 1] |= %s << ((l & 1) * 16);\n", X, b, kf_sb_str(&x)); break;
        case 4: P("%s            w%d[l] = %s;\n", X, b, kf_sb_str(&x)); break;
        default:
            P("%s            {\n%s                const %s u = %s;\n", X, X, U64(e), kf_sb_str(&x));
            P("%s                w%d[2 * l] = (%s)u;\n%s                w%d[2 * l + 1] = (%s)(u >> 32);\n%s            }\n",
              X, b, U32(e), X, b, U32(e), X);
            break;
        }
    }
    P("%s        }\n", X);
    if (bc)
        P("            if (jv < nvec) {\n");
    for (int j = 0; j < k->nouts; j++) {
        int b = k->nargs + j;
        int u, vecs;
        vec_words(W, kf_dtype_size(dt(e, k->outs[j])), &u, &vecs);
        for (int v = 0; v < vecs; v++) {
            P("%s%s        ((%suint%d *)q%d)[%s", X, X, sp->global, u, j, out_v);
            if (vecs > 1)
                P(" * %d + %d", vecs, v);
            P("] = %s", u == 4 ? sp->make_uint4 : sp->make_uint2);
            for (int c = 0; c < u; c++)
                P("%sw%d[%d]", c ? ", " : "", b, u * v + c);
            P(");\n");
        }
    }
    if (bc)
        P("            }\n        }\n");
    P("    }\n");
    /* the last n % W elements, one per thread.  b64 has whole vectors only
     * (its launch rule), and so does h64 of a kernel with a direct take
     * (h64_fits, abi.c): gather_boxplus's f64 lanes took 48 registers with
     * this loop after them and 30 without (sm_90), five blocks of 256 per
     * SM instead of eight, and ran 0.86 of torch.compile at 2^28 instead
     * of 0.93 (bench/results/h100-2026-11-28-s20-analysis.md). */
    if (!bc && !(var == KF_CG_H64 && gathered)) {
        char start[48];
        kf_snprintf(start, sizeof start, "nvec * %d + tid", W);
        ew_loop(e, t, "i", start, "n", "nth");
        if (ki->coords)
            coords_linear(e, t, "i", "        ");
        for (int b = 0; b < k->nargs; b++) {
            if (!ki->arg_ew[b] || ki->bcast_all[b])
                continue;
            kf_sb_reset(&x);
            kf_sb_printf(&x, "p%d[i]", b);
            P("        const %s x%d = ", CT(e, dt(e, k->args[b])), b);
            load_conv(e, e->o, dt(e, k->args[b]), kf_sb_str(&x));
            P(";\n");
        }
        sinks_decl(e, "        ");
        body_call(e, "        ");
        for (int j = 0; j < k->nouts; j++) {
            char r[16];
            kf_snprintf(r, sizeof r, "r%d", j);
            P("        q%d[i] = ", j);
            store_conv(e, e->o, dt(e, k->outs[j]), r);
            P(";\n");
        }
        P("    }\n");
    }
    P("}\n\n");
    if (kf_sb_failed(&x))
        e->o->oom = true;
    kf_sb_free(&x);
}

/* -- Reductions ------------------------------------------------------------------------------------ */

typedef struct red {
    kf_op op;
    kf_dtype t;         /* operand dtype */
    kf_dtype out;       /* result dtype */
    bool fl, arg;
    int p;              /* float precision of the accumulator */
    const char *acc;    /* accumulator type */
} red;

static red red_of(const E *e, int j)
{
    const kf_irnode *x = nd(e, e->ki->k->outs[j]);
    red r;
    r.op = (kf_op)x->op;
    r.t = dt(e, x->args[0]);
    r.out = (kf_dtype)x->dtype;
    r.fl = kf_dt_is_float(r.t);
    r.arg = kf_cg_red_is_arg(r.op);
    r.p = prec(r.t);
    if (r.fl)
        r.acc = ST(e, r.p ? KF_F64 : KF_F32);
    else if (r.op == KF_OP_SUM || r.op == KF_OP_PROD || r.op == KF_OP_MEAN)
        r.acc = U64(e);
    else if (kf_dtype_size(r.t) == 8)
        r.acc = ST(e, r.t);
    else
        r.acc = kf_dt_is_sint(r.t) ? ST(e, KF_I32) : U32(e);
    return r;
}

static bool is_min(kf_op op) { return op == KF_OP_RMIN || op == KF_OP_ARGMIN; }

static void red_init(E *e, const red *r, kf_strbuf *o)
{
    switch (r->op) {
    case KF_OP_SUM: case KF_OP_MEAN: kf_sb_puts(o, r->fl ? fzero(r->p) : "0"); break;
    case KF_OP_PROD: kf_sb_puts(o, r->fl ? fone(r->p) : "1"); break;
    default:
        if (r->fl)
            inf_lit(e, o, r->p, !is_min(r->op));
        else if (is_min(r->op))
            int_max(e, o, r->t);
        else
            int_min(e, o, r->t);
        break;
    }
}

/* acc (and index ai) absorbs value v (and index vi); the same code folds an
 * element in, and combines two partials (left = acc, right = v). */
static void red_fold(E *e, const red *r, const char *acc, const char *ai, const char *v, const char *vi, const char *ind)
{
    const kf_cg_spell *sp = e->sp;
    kf_strbuf x = KF_STRBUF_INIT;
    switch (r->op) {
    case KF_OP_SUM: case KF_OP_MEAN: case KF_OP_PROD: {
        bool add = r->op != KF_OP_PROD;
        if (r->fl) {
            bin(&x, add ? &sp->fadd[r->p] : &sp->fmul[r->p], acc, v);
        } else {
            kf_sb_printf(&x, "%s %s (%s)%s", acc, add ? "+" : "*", U64(e), v);
        }
        P("%s%s = %s;\n", ind, acc, kf_sb_str(&x));
        break;
    }
    case KF_OP_RMIN: case KF_OP_RMAX:
        if (r->fl) {
            use(e, (is_min(r->op) ? H_FMIN32 : H_FMAX32) + r->p);
            P("%s%s = kf_f%s_%s(%s, %s);\n", ind, acc, is_min(r->op) ? "min" : "max", r->p ? "f64" : "f32", acc, v);
        } else {
            P("%s%s = %s %s %s ? %s : %s;\n", ind, acc, v, is_min(r->op) ? "<" : ">", acc, v, acc);
        }
        break;
    default: { /* argmin, argmax: first index on ties, the first NaN wins */
        const char *c = is_min(r->op) ? "<" : ">";
        if (r->fl)
            P("%sif ((%s != %s) ? (%s == %s || %s < %s) : (%s == %s && (%s %s %s || (%s == %s && %s < %s)))) {\n", ind, v, v,
              acc, acc, vi, ai, acc, acc, v, c, acc, v, acc, vi, ai);
        else
            P("%sif (%s %s %s || (%s == %s && %s < %s)) {\n", ind, v, c, acc, v, acc, vi, ai);
        P("%s    %s = %s;\n%s    %s = %s;\n%s}\n", ind, acc, v, ind, ai, vi, ind);
        break;
    }
    }
    if (kf_sb_failed(&x))
        e->o->oom = true;
    kf_sb_free(&x);
}

/* The accumulators at their start values: declared, or (declare false)
 * assigned. */
static void red_decl(E *e, const char *ind, bool declare)
{
    const kf_kernel *k = e->ki->k;
    kf_strbuf x = KF_STRBUF_INIT;
    for (int j = 0; j < k->nouts; j++) {
        if (!is_red(e, k->outs[j]))
            continue;
        red r = red_of(e, j);
        kf_sb_reset(&x);
        red_init(e, &r, &x);
        P("%s%s%sacc%d = %s;\n", ind, declare ? r.acc : "", declare ? " " : "", j, kf_sb_str(&x));
        if (r.arg)
            P("%s%s%sai%d = 0x7fffffffffffffff%s;\n", ind, declare ? I64(e) : "", declare ? " " : "", j,
              e->sp->sfx_i64);
    }
    if (kf_sb_failed(&x))
        e->o->oom = true;
    kf_sb_free(&x);
}

/* Fold this point's sinks into the accumulators; ri is the reduced index.
 * slot NULL: accumulators acc<j>, ai<j>; else the warp variant's wa<j>[slot],
 * wi<j>[slot]. */
static void red_fold_point(E *e, const char *ri, const char *slot, const char *ind)
{
    const kf_kernel *k = e->ki->k;
    for (int j = 0; j < k->nouts; j++) {
        if (!is_red(e, k->outs[j]))
            continue;
        red r = red_of(e, j);
        char acc[40], ai[40], v[16], vi[64];
        if (slot) {
            kf_snprintf(acc, sizeof acc, "wa%d[%s]", j, slot);
            kf_snprintf(ai, sizeof ai, "wi%d[%s]", j, slot);
        } else {
            kf_snprintf(acc, sizeof acc, "acc%d", j);
            kf_snprintf(ai, sizeof ai, "ai%d", j);
        }
        kf_snprintf(v, sizeof v, "r%d", j);
        kf_snprintf(vi, sizeof vi, "(%s)%s", I64(e), ri);
        red_fold(e, &r, acc, ai, v, vi, ind);
    }
}

/* Store the final value of every reduction (coordinates of kept dims set). */
static void red_final(E *e, const char *ind)
{
    const kf_cg_spell *sp = e->sp;
    const kf_kernel *k = e->ki->k;
    kf_strbuf a = KF_STRBUF_INIT, v = KF_STRBUF_INIT;
    for (int j = 0; j < k->nouts; j++) {
        if (!is_red(e, k->outs[j]))
            continue;
        red r = red_of(e, j);
        kf_sb_reset(&a);
        kf_sb_reset(&v);
        addr(e, &a, k->nargs + j);
        P("%sq%d[%s] = ", ind, j, kf_sb_str(&a));
        char acc[16];
        kf_snprintf(acc, sizeof acc, "acc%d", j);
        if (r.arg) {
            P("ai%d == 0x7fffffffffffffff%s ? -1 : ai%d", j, sp->sfx_i64, j);
        } else if (r.op == KF_OP_MEAN) {
            char l[64];
            kf_snprintf(l, sizeof l, "(%s)L", r.acc);
            bin(&v, &sp->fdiv[r.p], acc, l);
            store_conv(e, e->o, r.out, kf_sb_str(&v));
        } else if (r.fl) {
            store_conv(e, e->o, r.out, acc);
        } else {
            P("(%s)%s", ST(e, r.out), acc);
        }
        P(";\n");
    }
    if (kf_sb_failed(&a) || kf_sb_failed(&v))
        e->o->oom = true;
    kf_sb_free(&a);
    kf_sb_free(&v);
}

static uint8_t kept_mask(const E *e) { return (uint8_t)(((1u << e->ki->R) - 1) & ~e->ki->k->axes); }
static uint8_t red_mask(const E *e) { return (uint8_t)(((1u << e->ki->R) - 1) & e->ki->k->axes); }

static void sizes_ML(E *e, ix t, ix rt)
{
    P("    const %s M = 1", t.IX);
    for (int d = 0; d < e->ki->R; d++)
        if (kept_mask(e) & (1u << d))
            P(" * d%d", d);
    P(";\n    const %s L = 1", rt.IX);
    for (int d = 0; d < e->ki->R; d++)
        if (red_mask(e) & (1u << d))
            P(" * d%d", d);
    P("; /* outputs, reduced elements each */\n");
}

/* The opening of a reduction entry: buffers, every dim, strides, the
 * loads of broadcast arguments (args: the entry reads the arguments), M
 * and L.  The reduced dims and L take rt's index type, the kept ones and M
 * t's (warp counts its reduced elements, at most KF_CG_TILE_ELEMS, in 32
 * bits). */
static void red_prologue(E *e, ix t, ix rt, bool args)
{
    prologue(e, args);
    for (int d = 0; d < e->ki->R; d++)
        dims_decl(e, (red_mask(e) & (1u << d)) ? rt : t, (uint8_t)(1u << d));
    strides_decl(e, t, args);
    if (args)
        bcast_loads(e);
    sizes_ML(e, t, rt);
}

/* The body at point ri with its args x<b> loaded: fold (into slot, see
 * red_fold_point), EW stores. */
static void red_eval(E *e, const char *ri, const char *slot, const char *ind)
{
    sinks_decl(e, ind);
    body_call(e, ind);
    red_fold_point(e, ri, slot, ind);
    ew_stores(e, ind);
}

/* Visit one point: coordinates of reduced dims from ri, load, red_eval. */
static void red_point(E *e, ix t, const char *ri, const char *slot, const char *ind)
{
    coords_from(e, t, red_mask(e), ri, "u", ind);
    loads(e, ind, true);
    red_eval(e, ri, slot, ind);
}

/* The innermost reduced dim, along which a thread's groups of
 * KF_CG_RED_GROUP reduced elements run; -1 when no dim is reduced (a
 * reduction of one element: no vector loads). */
static int red_inner(const E *e)
{
    int d = e->ki->R - 1;
    while (d >= 0 && !(e->ki->k->axes & (1u << d)))
        d--;
    return d;
}

/* gvec: is every group of KF_CG_RED_GROUP reduced elements (starting at a
 * multiple of it) the same run of consecutive elements in each arg read
 * along the innermost reduced dim rd, aligned for one vector load (16
 * bytes, 4 * size for smaller elements)?  Then tile and warp load groups
 * as vectors; else element by element, in the same order.  Args
 * broadcast on rd are read once per group. */
static void vec_decl(E *e)
{
    const kf_kernel *k = e->ki->k;
    int rd = red_inner(e), G = KF_CG_RED_GROUP;
    P("    const int gvec = d%d %% %d == 0", rd, G);
    for (int b = 0; b < k->nargs; b++) {
        if (!point_arg(e, b) || !buf_dim(e, b, rd))
            continue;
        int s = (int)kf_dtype_size(dt(e, k->args[b])), bytes = G * s < KF_CG_VEC_BYTES ? G * s : KF_CG_VEC_BYTES;
        P(" &&\n        st%d_%d == 1 && (%s)p%d %% %d == 0", b, rd, U64(e), b, bytes);
        for (int d = 0; d < e->ki->R; d++)
            if (d != rd && buf_dim(e, b, d))
                P(" && (d%d == 1 || st%d_%d %% %d == 0)", d, b, d, bytes / s);
    }
    P(";\n");
}

/* 32-bit words of a group of arg b's elements. */
static int group_words(const E *e, int b)
{
    return KF_CG_RED_GROUP * (int)kf_dtype_size(dt(e, e->ki->k->args[b])) / 4;
}

/* Under gvec, the loads of groups of reduced elements: w<b>[n][words]
 * (the raw bits of the group's elements of arg b) and y<b>[n] (args
 * broadcast on the innermost reduced dim: their value at the group). */
static void red_vdecl(E *e, int n, const char *ind)
{
    const kf_kernel *k = e->ki->k;
    int rd = red_inner(e);
    for (int b = 0; b < k->nargs; b++) {
        if (!point_arg(e, b))
            continue;
        if (buf_dim(e, b, rd))
            P("%s%s w%d[%d][%d];\n", ind, U32(e), b, n, group_words(e, b));
        else
            P("%s%s y%d[%d];\n", ind, CT(e, dt(e, k->args[b])), b, n);
    }
}

/* Load the group at reduced index gi into slot 'at' of red_vdecl's arrays:
 * each arg's elements as one vector load (two for 8-byte elements). */
static void red_vload(E *e, ix t, const char *gi, const char *at, const char *ind)
{
    const kf_kernel *k = e->ki->k;
    const kf_cg_spell *sp = e->sp;
    int rd = red_inner(e);
    char in[48];
    kf_snprintf(in, sizeof in, "%s    ", ind);
    P("%s{\n", ind);
    coords_from(e, t, red_mask(e), gi, "u", in);
    coords_void(e, red_mask(e), in);
    kf_strbuf a = KF_STRBUF_INIT, x = KF_STRBUF_INIT;
    for (int b = 0; b < k->nargs; b++) {
        if (!point_arg(e, b))
            continue;
        kf_sb_reset(&a);
        addr_unit(e, &a, b, rd);   /* gvec: stride 1 on rd */
        if (!buf_dim(e, b, rd)) {
            kf_sb_reset(&x);
            kf_sb_printf(&x, "p%d[%s]", b, kf_sb_str(&a));
            P("%sy%d[%s] = ", in, b, at);
            load_conv(e, e->o, dt(e, k->args[b]), kf_sb_str(&x));
            P(";\n");
            continue;
        }
        int words = group_words(e, b);
        const char *vt = words == 1 ? U32(e) : words == 2 ? "uint2" : "uint4";
        for (int v = 0; v < (words + 3) / 4; v++) {
            P("%s{\n%s    const %s v = ((%sconst %s *)(p%d + %s))[%d];\n", in, in, vt, sp->global, vt, b,
              kf_sb_str(&a), v);
            if (words == 1)
                P("%s    w%d[%s][0] = v;\n", in, b, at);
            for (int c = 0; words > 1 && c < (words < 4 ? words : 4); c++)
                P("%s    w%d[%s][%d] = v.%c;\n", in, b, at, 4 * v + c, "xyzw"[c]);
            P("%s}\n", in);
        }
    }
    P("%s}\n", ind);
    if (kf_sb_failed(&a) || kf_sb_failed(&x))
        e->o->oom = true;
    kf_sb_free(&a);
    kf_sb_free(&x);
}

/* The points gi, gi + 1, ... of a group loaded into slot 'at', in order,
 * folded into slot (see red_fold_point); the loop over them unrolled or
 * not. */
static void red_vpoints(E *e, ix t, const char *gi, const char *at, const char *slot, bool unroll, const char *ind)
{
    const kf_cg_kinfo *ki = e->ki;
    const kf_kernel *k = ki->k;
    int rd = red_inner(e);
    char in[48];
    kf_snprintf(in, sizeof in, "%s    ", ind);
    pragma(e, unroll ? e->unroll : e->sp->no_unroll);
    P("%sfor (int l = 0; l < %d; l++) {\n", ind, KF_CG_RED_GROUP);
    P("%sconst %s ri = %s + (%s)l;\n%s(void)ri; /* unread when no coordinate or index is */\n", in, t.IX, gi, t.IX,
      in);
    bool ew_out = false;
    for (int j = 0; j < k->nouts; j++)
        ew_out = ew_out || !is_red(e, k->outs[j]);
    if (ew_out || (ki->coords & red_mask(e))) {
        coords_from(e, t, red_mask(e), "ri", "u", in);
        coords_void(e, red_mask(e), in);
    }
    kf_strbuf a = KF_STRBUF_INIT, x = KF_STRBUF_INIT;
    for (int b = 0; b < k->nargs; b++) {
        if (!point_arg(e, b))
            continue;
        kf_dtype ty = dt(e, k->args[b]);
        if (!buf_dim(e, b, rd)) {
            P("%sconst %s x%d = y%d[%s];\n", in, CT(e, ty), b, b, at);
            continue;
        }
        char w[32];
        kf_snprintf(w, sizeof w, "w%d[%s]", b, at);
        kf_sb_reset(&a);
        kf_sb_reset(&x);
        lane_sel(e, &a, (int)kf_dtype_size(ty), w);
        from_raw(e, &x, ty, kf_sb_str(&a));
        P("%sconst %s x%d = %s;\n", in, CT(e, ty), b, kf_sb_str(&x));
    }
    red_eval(e, "ri", slot, in);
    P("%s}\n", ind);
    if (kf_sb_failed(&a) || kf_sb_failed(&x))
        e->o->oom = true;
    kf_sb_free(&a);
    kf_sb_free(&x);
}

/* Under gvec, the groups v = 0 .. n - 1 of a round, at reduced index gi =
 * base + (v * vstride + who) * KF_CG_RED_GROUP, those below lim (every
 * one when lim is NULL: a whole round), folded into the accumulators
 * (slots: the warp's wa<j>[v]).  A batch's loads go out together, before
 * its math: a guarded load would otherwise wait for the previous group's
 * math; batches keep at most 64 words of loads in registers.  The points
 * of a group are unrolled where the round's are few enough
 * (KF_CG_UNROLL_MAX, compile time). */
static void red_vbatches(E *e, ix t, int n, int vstride, const char *who, const char *lim, bool slots, const char *ind)
{
    const kf_kernel *k = e->ki->k;
    bool unroll = n * KF_CG_RED_GROUP * (k->nnodes + e->ki->nb) <= KF_CG_UNROLL_MAX;
    int words = 0, B = n, rd = red_inner(e);
    for (int b = 0; b < k->nargs; b++)
        if (point_arg(e, b))
            words += buf_dim(e, b, rd) ? group_words(e, b) : 1;
    while (B > 1 && B * words > 64)
        B /= 2;
    char i1[48], i2[48], i3[48];
    kf_snprintf(i1, sizeof i1, "%s    ", ind);
    kf_snprintf(i2, sizeof i2, "%s        ", ind);
    kf_snprintf(i3, sizeof i3, "%s            ", ind);
    pragma(e, e->unroll);
    P("%sfor (int vb = 0; vb < %d; vb += %d) {\n", ind, n, B);
    red_vdecl(e, B, i1);
    for (int pass = words ? 0 : 1; pass < 2; pass++) {   /* no loads without args read at the point */
        pragma(e, e->unroll);
        P("%sfor (int vi = 0; vi < %d; vi++) {\n", i1, B);
        P("%sconst int vt = vb + vi;\n", i2);
        P("%sconst %s gi = base + ((%s)vt * %d + %s) * %d;\n", i2, t.IX, t.IX, vstride, who, KF_CG_RED_GROUP);
        if (lim)
            P("%sif (gi < %s) {\n", i2, lim);
        else
            P("%s(void)gi; /* unread when no coordinate is */\n", i2);
        if (pass == 0)
            red_vload(e, t, "gi", "vi", lim ? i3 : i2);
        else
            red_vpoints(e, t, "gi", "vi", slots ? "vt" : NULL, unroll, lim ? i3 : i2);
        if (lim)
            P("%s}\n", i2);
        P("%s}\n", i1);
    }
    P("%s}\n", ind);
}

static void emit_red_seq(E *e)
{
    ix t = ix_of(e, true);
    entry_head(e, KF_CG_SEQ);
    red_prologue(e, t, t, true);
    grid_loop_vars(e, t, false);
    P("    for (%s o = tid; o < M; o += nth) {\n", t.IX);
    coords_from(e, t, kept_mask(e), "o", "t", "        ");
    red_decl(e, "        ", true);
    P("        for (%s ri = 0; ri < L; ri++) {\n", t.IX);
    red_point(e, t, "ri", NULL, "            ");
    P("        }\n");
    red_final(e, "        ");
    P("    }\n}\n\n");
}

/* Declarations of block-shared memory: one value and one index per thread,
 * reused by every reduction in turn. */
static void shared_decl(E *e)
{
    const kf_kernel *k = e->ki->k;
    bool arg = false;
    for (int j = 0; j < k->nouts; j++)
        arg = arg || (is_red(e, k->outs[j]) && red_of(e, j).arg);
    P("    %s %s kf_sv[%d];\n", e->sp->shared, U64(e), KF_CG_BLOCK);
    if (arg)
        P("    %s %s kf_si[%d];\n", e->sp->shared, I64(e), KF_CG_BLOCK);
}

/* The chunks of the tile variant, from the meta block (kf_cg_fill_meta:
 * kf_cg_red_chunks): nchunks per output of ce reduced elements (whole
 * tiles) each. */
static void chunks_decl(E *e, ix t, bool elems)
{
    P("    const %s nchunks = (%s)m.v[%d]; /* per output */\n", t.IX, t.IX, e->ki->m_chunks);
    if (elems)
        P("    const %s ce = (%s)m.v[%d]; /* reduced elements per chunk */\n", t.IX, t.IX, e->ki->m_chunks + 1);
}

/* Scratch layout: on a GPU first KF_CG_COUNTER_BYTES of counters (one per
 * output, zero between launches), then per reduction in outs order, P
 * values then (argmin/argmax) P i64 indices, each array rounded up to 16
 * bytes (abi.c sizes it). */
static void scratch_decl(E *e, ix t, bool tile)
{
    const kf_cg_spell *sp = e->sp;
    const kf_kernel *k = e->ki->k;
    int arrays = 0;
    for (int j = 0; j < k->nouts; j++)
        if (is_red(e, k->outs[j]))
            arrays += 1 + red_of(e, j).arg;
    if (tile || arrays > 1)   /* tile loops to np; offsets past the first array need it */
        P("    const %s np = M * nchunks;\n", t.IX);
    P("    %s%s *sp = scratch;\n", sp->global, ST(e, KF_U8));
    if (e->gpu) {
        P("    %s%s *kf_cnt = (%s%s *)sp; /* per output: its chunks finished */\n", sp->global, U32(e), sp->global,
          U32(e));
        P("    sp += %d;\n", KF_CG_COUNTER_BYTES);
    }
    size_t pending = 0;   /* bytes per partial of the previous array, added before the next */
    for (int j = 0; j < k->nouts; j++) {
        if (!is_red(e, k->outs[j]))
            continue;
        red r = red_of(e, j);
        if (pending)
            P("    sp += (np * %d + 15) / 16 * 16;\n", (int)pending);
        P("    %s%s *pv%d = (%s%s *)sp;\n", sp->global, r.acc, j, sp->global, r.acc);
        pending = kf_cg_red_acc_size(r.op, r.t);
        if (r.arg) {
            P("    sp += (np * %d + 15) / 16 * 16;\n", (int)pending);
            P("    %s%s *pi%d = (%s%s *)sp;\n", sp->global, I64(e), j, sp->global, I64(e));
            pending = 8;
        }
    }
}

/* The block's shared slots sv (si) of reduction r: acc (ai) stored in
 * slot lid, then a barrier. */
static void slots_store(E *e, const red *r, const char *acc, const char *ai)
{
    const kf_cg_spell *sp = e->sp;
    P("            %s%s *sv = (%s%s *)kf_sv;\n", sp->shared_ptr, r->acc, sp->shared_ptr, r->acc);
    if (r->arg)
        P("            %s%s *si = kf_si;\n", sp->shared_ptr, I64(e));
    P("            sv[lid] = %s;\n", acc);
    if (r->arg)
        P("            si[lid] = %s;\n", ai);
    P("            %s;\n", sp->barrier);
}

/* One fold of the tree: slot v + s into slot v. */
static void slot_fold(E *e, const red *r, const char *v, const char *ind)
{
    P("%s%s a = sv[%s];\n", ind, r->acc, v);
    if (r->arg)
        P("%s%s ia = si[%s];\n", ind, I64(e), v);
    P("%sconst %s b = sv[%s + s];\n", ind, r->acc, v);
    if (r->arg)
        P("%sconst %s ib = si[%s + s];\n", ind, I64(e), v);
    red_fold(e, r, "a", "ia", "b", "ib", ind);
    P("%ssv[%s] = a;\n", ind, v);
    if (r->arg)
        P("%ssi[%s] = ia;\n", ind, v);
}

/* Tree steps through the block's shared slots: store acc (ai) in slot lid,
 * then for s = first, first / 2, ..., 1 fold slot lid + s into slot lid
 * where who < s, with a barrier after each step (every thread of the block
 * reaches every barrier). */
static void slot_steps(E *e, const red *r, const char *acc, const char *ai, int first, const char *who)
{
    slots_store(e, r, acc, ai);
    P("            for (%s s = %d; s > 0; s >>= 1) {\n", U32(e), first);
    P("                if (%s < s) {\n", who);
    slot_fold(e, r, "lid", "                    ");
    P("                }\n                %s;\n            }\n", e->sp->barrier);
}

/* Steps 16 ... 1 across the lanes of a warp by shuffles, into acc (ai);
 * in is the indent of the loop. */
static void shuffle_steps(E *e, const red *r, const char *acc, const char *ai, const char *in)
{
    const kf_cg_spell *sp = e->sp;
    char body[32];
    kf_snprintf(body, sizeof body, "%s    ", in);
    P("%sfor (int s = %d; s > 0; s >>= 1) {\n", in, KF_CG_WARP_LANES / 2);
    P("%sconst %s b = %s%s, s);\n", body, r->acc, sp->shfl_down, acc);
    if (r->arg)
        P("%sconst %s ib = %s%s, s);\n", body, I64(e), sp->shfl_down, ai);
    red_fold(e, r, acc, ai, "b", "ib", body);
    P("%s}\n", in);
}

/* Steps 128, 64 and 32 of the block tree in the registers of one lane:
 * wa<j>[v] (wi<j>[v]) holds slot lane + 32 v, and step s folds slot v + s / 32
 * into slot v. */
static void reg_steps(E *e, const red *r, int j, const char *ind)
{
    for (int s = KF_CG_BLOCK / KF_CG_WARP_LANES / 2; s > 0; s /= 2)
        for (int v = 0; v < s; v++) {
            char acc[40], ai[40], b[40], ib[40];
            kf_snprintf(acc, sizeof acc, "wa%d[%d]", j, v);
            kf_snprintf(ai, sizeof ai, "wi%d[%d]", j, v);
            kf_snprintf(b, sizeof b, "wa%d[%d]", j, v + s);
            kf_snprintf(ib, sizeof ib, "wi%d[%d]", j, v + s);
            red_fold(e, r, acc, ai, b, ib, ind);
        }
}

/* Off a GPU, the steps of the block tree folded by thread 0 alone, in
 * the same order (step s folds slot v + s into slot v, v = 0 .. s - 1):
 * the same bits with two barriers, where the parallel steps take one per
 * step (a CPU device runs a work-group's threads in turn, and PoCL compiles
 * each stretch between barriers into a loop over them). */
static void serial_steps(E *e, const red *r, const char *acc, const char *ai)
{
    slots_store(e, r, acc, ai);
    P("            if (lid == 0) {\n");
    P("                for (%s s = %d; s > 0; s >>= 1)\n", U32(e), KF_CG_BLOCK / 2);
    P("                    for (%s v = 0; v < s; v++) {\n", U32(e));
    slot_fold(e, r, "v", "                        ");
    P("                    }\n                %s = sv[0];\n", acc);
    if (r->arg)
        P("                %s = si[0];\n", ai);
    P("            }\n");
}

/* Block-wide tree over KF_CG_BLOCK threads, same order on every target:
 * step s folds slot lid + s into slot lid; with warp shuffles warp 0 runs
 * every step after the one barrier that fills the slots.  Thread 0 ends
 * with the result. */
static void block_reduce(E *e)
{
    const kf_cg_spell *sp = e->sp;
    const kf_kernel *k = e->ki->k;
    for (int j = 0; j < k->nouts; j++) {
        if (!is_red(e, k->outs[j]))
            continue;
        red r = red_of(e, j);
        char acc[16], ai[16];
        kf_snprintf(acc, sizeof acc, "acc%d", j);
        kf_snprintf(ai, sizeof ai, "ai%d", j);
        P("        {\n");
        if (!e->gpu) {
            serial_steps(e, &r, acc, ai);
        } else if (sp->shfl_down) {
            /* warp 0 takes the slots after one barrier: steps 128, 64, 32
             * in registers (as warp's), 16 ... 1 by shuffles */
            const int V = KF_CG_BLOCK / KF_CG_WARP_LANES;
            slots_store(e, &r, acc, ai);
            P("            if (lid < %d) {\n", KF_CG_WARP_LANES);
            P("                %s wa%d[%d];\n", r.acc, j, V);
            if (r.arg)
                P("                %s wi%d[%d];\n", I64(e), j, V);
            pragma(e, e->unroll);
            P("                for (int v = 0; v < %d; v++) {\n", V);
            P("                    wa%d[v] = sv[lid + %d * v];\n", j, KF_CG_WARP_LANES);
            if (r.arg)
                P("                    wi%d[v] = si[lid + %d * v];\n", j, KF_CG_WARP_LANES);
            P("                }\n");
            reg_steps(e, &r, j, "                ");
            P("                %s = wa%d[0];\n", acc, j);
            if (r.arg)
                P("                %s = wi%d[0];\n", ai, j);
            shuffle_steps(e, &r, acc, ai, "                ");
            P("            }\n");
        } else {
            slot_steps(e, &r, acc, ai, KF_CG_BLOCK / 2, "lid");
            P("            %s = sv[0];\n", acc);
            if (r.arg)
                P("            %s = si[0];\n", ai);
        }
        P("            %s;\n        }\n", sp->barrier);
    }
}

/* A device-wide memory fence.  OpenCL C 1.2 has none: NVIDIA compiles
 * mem_fence(CLK_GLOBAL_MEM_FENCE) to membar.cta, so where the compiler
 * takes inline PTX the fence is PTX's membar.gl; elsewhere (PoCL, a CPU)
 * mem_fence, whose fence covers the device. */
static const char *fence(const E *e)
{
    return e->target == KF_TARGET_OPENCL && has_ptx(e) ? "asm volatile(\"membar.gl;\" ::: \"memory\")" : e->sp->fence;
}

/* Append what f emits, every line but preprocessor ones indented by ind
 * more. */
static void indented(E *e, void (*f)(E *), const char *ind)
{
    kf_strbuf *out = e->o, tmp = KF_STRBUF_INIT;
    e->o = &tmp;
    f(e);
    e->o = out;
    for (const char *s = kf_sb_str(&tmp); *s;) {
        const char *nl = strchr(s, '\n');
        size_t n = nl ? (size_t)(nl - s) + 1 : strlen(s);
        if (*s != '#' && *s != '\n')
            kf_sb_puts(out, ind);
        kf_sb_putn(out, s, n);
        s += n;
    }
    if (kf_sb_failed(&tmp))
        out->oom = true;
    kf_sb_free(&tmp);
}

/* comb's fold of output o's partials: thread lid folds partials lid,
 * lid + KF_CG_BLOCK, ... in order into the accumulators, which declare
 * says to declare or to reset.  vol: read them past the caches (written by
 * other blocks of this launch). */
static void comb_fold(E *e, const char *o, bool declare, bool vol, const char *ind)
{
    const kf_kernel *k = e->ki->k;
    const char *g = e->sp->global;
    char in2[40], at[40];
    kf_snprintf(in2, sizeof in2, "%s    ", ind);
    kf_snprintf(at, sizeof at, strcmp(o, "0") ? "%s * nchunks + tt" : "tt", o);
    red_decl(e, ind, declare);
    P("%sfor (%s tt = lid; tt < nchunks; tt += %d) {\n", ind, ix_of(e, true).IX, KF_CG_BLOCK);
    for (int j = 0; j < k->nouts; j++) {
        if (!is_red(e, k->outs[j]))
            continue;
        red r = red_of(e, j);
        char acc[16], ai[16], b[16], ib[16];
        kf_snprintf(acc, sizeof acc, "acc%d", j);
        kf_snprintf(ai, sizeof ai, "ai%d", j);
        kf_snprintf(b, sizeof b, "b%d", j);
        kf_snprintf(ib, sizeof ib, "ib%d", j);
        if (vol)
            P("%sconst %s b%d = ((volatile %s%s *)pv%d)[%s];\n", in2, r.acc, j, g, r.acc, j, at);
        else
            P("%sconst %s b%d = pv%d[%s];\n", in2, r.acc, j, j, at);
        if (r.arg && vol)
            P("%sconst %s ib%d = ((volatile %s%s *)pi%d)[%s];\n", in2, I64(e), j, g, I64(e), j, at);
        else if (r.arg)
            P("%sconst %s ib%d = pi%d[%s];\n", in2, I64(e), j, j, at);
        red_fold(e, &r, acc, ai, b, ib, in2);
    }
    P("%s}\n", ind);
}

/* Pass 1 of a long reduction: block w does chunk w % nchunks of output
 * w / nchunks; in each tile of the chunk thread lid folds the groups of
 * KF_CG_RED_GROUP elements starting at 4 * lid + 1024 * g, g = 0..3, in
 * order (as vectors under gvec), then the block tree. */
static void emit_red_tile(E *e)
{
    const kf_cg_kinfo *ki = e->ki;
    const kf_kernel *k = ki->k;
    const kf_cg_spell *sp = e->sp;
    ix t = ix_of(e, true);
    const int G = KF_CG_RED_GROUP, groups = KF_CG_TILE_ELEMS / (KF_CG_BLOCK * G);
    entry_head(e, KF_CG_TILE);
    shared_decl(e);
    if (e->gpu)
        P("    %s int kf_last; /* this block finished its output's last chunk */\n", sp->shared);
    red_prologue(e, t, t, true);
    bool vec = e->gpu && red_inner(e) >= 0;
    if (vec)
        vec_decl(e);
    chunks_decl(e, t, true);
    P("    const %s lid = (%s)%s;\n", t.IX, t.IX, sp->lid);
    scratch_decl(e, t, true);
    use(e, H_NEXT);
    P("    for (%s w = (%s)%s; w < np; w = KF_NEXT(w, (%s)%s, np)) {\n", t.IX, t.IX, sp->bid, t.IX, sp->gdim);
    /* one chunk an output: block w reduces all of output w, with no
     * arithmetic before its loads (dot at 2^12 on an H100, one process:
     * 4.54 -> 4.51 us).  With several, w < M * nchunks < 2 *
     * KF_CG_CHUNK_TARGET (codegen.h): 32-bit divisions */
    const char *u = U32(e);
    P("        %s %sr0 = 0, r1 = L;\n", t.IX, kept_mask(e) ? "o = w, " : "");
    P("        if (nchunks > 1) {\n");
    if (kept_mask(e))
        P("            o = (%s)((%s)w / (%s)nchunks);\n", t.IX, u, u);
    P("            r0 = (%s)((%s)w %% (%s)nchunks) * ce;\n", t.IX, u, u);
    P("            r1 = L - r0 < ce ? L : r0 + ce;\n        }\n");
    coords_from(e, t, kept_mask(e), "o", "t", "        ");
    red_decl(e, "        ", true);
    P("        for (%s base = r0; base < r1; base += %d) {\n", t.IX, KF_CG_TILE_ELEMS);
    /* on a GPU as vectors (guarded per group); else whole tiles without
     * guards (the loads go out together), the last part of a chunk with
     * them.  Off a GPU every tile with them: one copy of the body */
    const char *unroll = KF_CG_TILE_ELEMS / KF_CG_BLOCK * (k->nnodes + ki->nb) <= KF_CG_UNROLL_MAX ? e->unroll : "";
    if (vec) {
        P("            if (gvec) {\n");
        red_vbatches(e, t, groups, KF_CG_BLOCK, "lid", "r1", false, "                ");
    }
    for (int guard = e->gpu ? 0 : 1; guard < 2; guard++) {
        if (guard)
            P(e->gpu ? "            } else {\n" : "            {\n");
        else
            P("            %sif (base + %d <= r1) {\n", vec ? "} else " : "", KF_CG_TILE_ELEMS);
        pragma(e, unroll);
        P("                for (int g = 0; g < %d; g++) {\n", groups);
        pragma(e, unroll);
        P("                    for (int l = 0; l < %d; l++) {\n", G);
        P("                        const %s ri = base + ((%s)g * %d + lid) * %d + (%s)l;\n", t.IX, t.IX, KF_CG_BLOCK, G,
          t.IX);
        P(guard ? "                        if (ri < r1) {\n"
                : "                        (void)ri; /* unread when no coordinate is */\n");
        red_point(e, t, "ri", NULL, guard ? "                            " : "                        ");
        P("%s                    }\n                }\n", guard ? "                        }\n" : "");
    }
    P("            }\n        }\n");
    block_reduce(e);
    P("        if (lid == 0) {\n            if (nchunks == 1) {\n");
    red_final(e, "                ");
    P("            } else {\n");
    for (int j = 0; j < k->nouts; j++) {
        if (!is_red(e, k->outs[j]))
            continue;
        P("                pv%d[w] = acc%d;\n", j, j);
        if (red_of(e, j).arg)
            P("                pi%d[w] = ai%d;\n", j, j);
    }
    /* one launch on a GPU: the block that finishes an output's last chunk
     * combines its partials as comb would (same order, same bits).  The
     * count is taken in the block that stores the partials: PoCL (3.1, a
     * CPU) ran a second lid == 0 block between it and the barrier once per
     * work-item, each time as work-item 0, counting every chunk 256 times */
    const char *o = kept_mask(e) ? "o" : "0";
    if (e->gpu) {
        P("                %s; /* this chunk's partials are seen before its count */\n", fence(e));
        P("                kf_last = (%s)%s&kf_cnt[%s]%s + 1 == nchunks;\n", t.IX, sp->atomic_inc.pre, o,
          sp->atomic_inc.post);
        P("                if (kf_last)\n                    kf_cnt[%s] = 0; /* zero for the next launch */\n", o);
    }
    P("            }\n        }\n");
    if (e->gpu) {
        P("        if (nchunks > 1) {\n            %s;\n            if (kf_last) {\n", sp->barrier);
        P("                %s;\n", fence(e));
        comb_fold(e, o, false, true, "                ");
        indented(e, block_reduce, "        ");
        P("                if (lid == 0) {\n");
        red_final(e, "                    ");
        P("                }\n            }\n        }\n");
    }
    P("    }\n}\n\n");
}

/* Pass 2 (off a GPU): block o combines the partials of output o. */
static void emit_red_comb(E *e)
{
    const kf_cg_spell *sp = e->sp;
    ix t = ix_of(e, true);
    entry_head(e, KF_CG_COMB);
    shared_decl(e);
    red_prologue(e, t, t, false);
    chunks_decl(e, t, false);
    P("    const %s lid = (%s)%s;\n", t.IX, t.IX, sp->lid);
    scratch_decl(e, t, false);
    P("    for (%s o = (%s)%s; o < M; o += (%s)%s) {\n", t.IX, t.IX, sp->bid, t.IX, sp->gdim);
    coords_from(e, t, kept_mask(e), "o", "t", "        ");
    comb_fold(e, "o", true, false, "        ");
    block_reduce(e);
    P("        if (lid == 0) {\n");
    red_final(e, "            ");
    P("        }\n    }\n}\n\n");
}

/* The tree over the 32 threads of a group (lanes), the last steps of
 * block_reduce: step s = 16 ... 1 folds lane + s into lane; lane 0 ends
 * with the result in acc<j>, ai<j>.  Warp shuffles where the target has
 * them, else the group's slots of local memory (every thread of the block
 * reaches every barrier). */
static void lane_reduce(E *e)
{
    const kf_cg_spell *sp = e->sp;
    const kf_kernel *k = e->ki->k;
    for (int j = 0; j < k->nouts; j++) {
        if (!is_red(e, k->outs[j]))
            continue;
        red r = red_of(e, j);
        char acc[16], ai[16];
        kf_snprintf(acc, sizeof acc, "acc%d", j);
        kf_snprintf(ai, sizeof ai, "ai%d", j);
        if (sp->shfl_down) {
            shuffle_steps(e, &r, acc, ai, "        ");
            continue;
        }
        P("        {\n");
        slot_steps(e, &r, acc, ai, KF_CG_WARP_LANES / 2, "lane");
        P("            %s = sv[lid];\n", acc);
        if (r.arg)
            P("            %s = si[lid];\n", ai);
        P("            %s;\n        }\n", sp->barrier);
    }
}

/* One group of 32 threads per output of at most one tile (KF_CG_TILE_ELEMS
 * elements), with the tile variant's bits: lane l keeps the accumulators of
 * the tile's threads l + 32 * v (v = 0..7) in registers, folds their groups
 * of KF_CG_RED_GROUP elements 4 * (l + 32 * v) + 1024 * i in the same order
 * (a group's load of one vector per lane reads 512 neighbouring bytes of
 * f32 under gvec), runs the tree's steps 128, 64, 32 in registers and
 * 16 ... 1 across lanes.  The loop over outputs runs the same trip count in
 * the whole block (barriers of lane_reduce), once under KF_ONE_PASS (the
 * launch rule's GPU grid covers the outputs).  Reduced indices and dims
 * are 32-bit (L <= KF_CG_TILE_ELEMS); whole rounds of 1024 elements load
 * without guards, the last part of a row with them.  warpv (vec_only) is
 * the vector path alone, for calls where the launch rule found gvec true:
 * half the instructions (192 against 414), and rowsum of [1024, 1024] and
 * [4096, 1024] f32 on an H100 1.0% and 1.3% faster than warp in one
 * process (bench/results/h100-2026-11-27-s17-analysis.md); its 32-bit
 * indices and clamped row 0.3-1.6% more at those sizes
 * (bench/results/h100-2026-12-07-s36-analysis.md). */
static void emit_red_warp(E *e, bool vec_only)
{
    const kf_cg_kinfo *ki = e->ki;
    const kf_kernel *k = ki->k;
    const kf_cg_spell *sp = e->sp;
    /* warpv: outputs, coordinates and offsets in 32 bits too, and where
     * the kernel stores no elementwise output, the loads of a group past
     * the last output from output M - 1 instead of a test around them */
    ix t = ix_of(e, !vec_only), t32 = ix_of(e, false);
    bool clamp = vec_only && ki->nred == k->nouts;
    const int W = KF_CG_WARP_LANES, V = KF_CG_BLOCK / KF_CG_WARP_LANES, G = KF_CG_BLOCK / KF_CG_WARP_LANES;
    const int RG = KF_CG_RED_GROUP, round = KF_CG_BLOCK * RG;
    entry_head(e, vec_only ? KF_CG_WARPV : KF_CG_WARP);
    if (!sp->shfl_down)
        shared_decl(e);
    red_prologue(e, t, t32, true);
    bool vec = red_inner(e) >= 0, elems = !vec_only || !vec;   /* the paths it has */
    if (vec && elems)
        vec_decl(e);
    for (int b = 0; vec && !elems && b < k->nargs; b++)
        if (point_arg(e, b) && buf_dim(e, b, red_inner(e)))
            P("    (void)st%d_%d; /* 1: gvec */\n", b, red_inner(e));
    use(e, H_NEXT);
    P("    const %s lid = (%s)%s, lane = lid %% %d;\n", t32.IX, t32.IX, sp->lid, W);
    P("    for (%s ob = (%s)%s * %d; ob < M; ob = KF_NEXT(ob, (%s)%s * %d, M)) {\n", t.IX, t.IX, sp->bid, G, t.IX,
      sp->gdim, G);
    P("        const %s o = ob + lid / %d;\n", t.IX, W);
    coords_from(e, t, kept_mask(e), clamp ? "o < M ? o : M - 1" : "o", "t", "        ");
    kf_strbuf x = KF_STRBUF_INIT;
    for (int j = 0; j < k->nouts; j++) {
        if (!is_red(e, k->outs[j]))
            continue;
        red r = red_of(e, j);
        kf_sb_reset(&x);
        red_init(e, &r, &x);
        P("        %s wa%d[%d];\n", r.acc, j, V);
        if (r.arg)
            P("        %s wi%d[%d];\n", I64(e), j, V);
        pragma(e, e->unroll);
        P("        for (int vt = 0; vt < %d; vt++) {\n", V);
        P("            wa%d[vt] = %s;\n", j, kf_sb_str(&x));
        if (r.arg)
            P("            wi%d[vt] = 0x7fffffffffffffff%s;\n", j, sp->sfx_i64);
        P("        }\n");
    }
    if (kf_sb_failed(&x))
        e->o->oom = true;
    kf_sb_free(&x);
    /* rounds of 1024 elements, a group per register slot: as vectors, else
     * element by element (the slots unrolled, the elements of a group not) */
    P(clamp ? "        {\n" : "        if (o < M) {\n");
    if (vec) {
        P(elems ? "            if (gvec) {\n" : "            {\n");
        P("                %s base = 0;\n", t32.IX);
        P("                for (; base + %d <= L; base += %d) {\n", round, round);
        red_vbatches(e, t32, V, W, "lane", NULL, true, "                    ");
        P("                }\n                if (base < L) {\n");
        red_vbatches(e, t32, V, W, "lane", "L", true, "                    ");
        P("                }\n");
    }
    if (elems) {
        P(vec ? "            } else {\n" : "            {\n");
        P("                for (%s base = 0; base < L; base += %d) {\n", t32.IX, round);
        pragma(e, e->unroll);
        P("                    for (int vt = 0; vt < %d; vt++) {\n", V);
        P("                        const %s gi = base + ((%s)vt * %d + lane) * %d;\n", t32.IX, t32.IX, W, RG);
        pragma(e, sp->no_unroll);
        P("                        for (int l = 0; l < %d; l++) {\n", RG);
        P("                            const %s ri = gi + (%s)l;\n", t32.IX, t32.IX);
        P("                            if (ri < L) {\n");
        red_point(e, t32, "ri", "vt", "                                ");
        P("                            }\n                        }\n                    }\n                }\n");
    }
    P("            }\n        }\n");
    for (int j = 0; j < k->nouts; j++) {
        if (!is_red(e, k->outs[j]))
            continue;
        red r = red_of(e, j);
        reg_steps(e, &r, j, "        ");
        P("        %s acc%d = wa%d[0];\n", r.acc, j, j);
        if (r.arg)
            P("        %s ai%d = wi%d[0];\n", I64(e), j, j);
    }
    lane_reduce(e);
    P("        if (o < M && lane == 0) {\n");
    red_final(e, "            ");
    P("        }\n    }\n}\n\n");
}

/* -- Kernels and the module ------------------------------------------------------------------------ */

static void emit_kernel(E *e)
{
    const kf_cg_kinfo *ki = e->ki;
    const kf_kernel *k = ki->k;
    const kf_graph *g = e->g;
    int nops = k->nnodes;
    P("/* == kernel %d of %s: %s over ", ki->kidx, g->name, k->kind == KF_KERNEL_EW ? "elementwise" : "reduction");
    shape_text(e, e->o, nd(e, k->space));
    if (k->kind == KF_KERNEL_REDUCE) {
        P(" reducing axes [");
        for (int d = 0, f = 1; d < ki->R; d++)
            if (k->axes & (1u << d)) {
                P("%s%d", f ? "" : ", ", d);
                f = 0;
            }
        P("]");
    }
    P(", %d node%s ==\n", nops, nops == 1 ? "" : "s");
    for (int b = 0; b < ki->nb; b++) {
        bool isarg = b < k->nargs;
        int32_t n = isarg ? k->args[b] : k->outs[b - k->nargs];
        P(" * %s %d: ", isarg ? "arg" : "out", isarg ? b : b - k->nargs);
        operand_text(e, e->o, n);
        P(" %s", kf_dtype_name(dt(e, n)));
        shape_text(e, e->o, nd(e, n));
        if (isarg && ki->tslot[b] >= 0)
            P(" (take source %d)", ki->tslot[b]);
        P("\n");
    }
    for (int i = 0; i < k->nscalars; i++) {
        P(" * scalar %d: ", i);
        operand_text(e, e->o, k->scalars[i]);
        P(" %s\n", kf_dtype_name(dt(e, k->scalars[i])));
    }
    P(" * meta: %d x int64 = [n, shape[%d], strides[%d][%d], offsets[%d]", ki->m_count, ki->R, ki->nb, ki->R, ki->nb);
    if (ki->ntake)
        P(", take (length, stride)[%d]", ki->ntake);
    if (k->kind == KF_KERNEL_REDUCE)
        P(", chunks, chunk length");
    P("] */\n");
    P("typedef struct {\n    %s v[%d];\n} %s_meta;\n\n", I64(e), ki->m_count, ki->prefix);
    emit_body(e);
    if (k->kind == KF_KERNEL_EW) {
        /* the 32-bit variants only where they save 64-bit division (abi.c) */
        if (ki->coords)
            emit_ew_contig(e, KF_CG_C32);
        emit_ew_contig(e, KF_CG_C64);
        if (ki->half && e->gpu)   /* off a GPU the launch rule never picks it */
            emit_ew_contig(e, KF_CG_H64);
        if (ki->R >= 2)
            emit_ew_strided(e, false);
        emit_ew_strided(e, true);
        if (ki->has_b64)
            emit_ew_contig(e, KF_CG_B64);
        if (ki->bsplit)
            emit_ew_contig(e, KF_CG_B1);
        if (ki->gather && e->gpu)   /* off a GPU the launch rule never picks it */
            emit_ew_gather(e);
    } else {
        emit_red_seq(e);
        emit_red_tile(e);
        if (e->gpu) {   /* off a GPU the launch rule runs tile instead (same bits) */
            emit_red_warp(e, false);
            emit_red_warp(e, true);
        } else {        /* a GPU's tile combines the partials itself */
            emit_red_comb(e);
        }
    }
}

/* -- Helper definitions ------------------------------------------------------------------------ */

static void helper_f2i(E *e, kf_strbuf *o, int p, kf_dtype to)
{
    const char *F = ST(e, p ? KF_F64 : KF_F32), *T = ST(e, to), *fs = p ? "" : "f";
    unsigned bits = (unsigned)kf_dtype_size(to) * 8;
    bool sg = kf_dt_is_sint(to);
    double hi = ldexp(1.0, (int)(sg ? bits - 1 : bits)), lo = sg ? -hi : 0.0;
    kf_strbuf mx = KF_STRBUF_INIT, mn = KF_STRBUF_INIT;
    int_max(e, &mx, to);
    int_min(e, &mn, to);
    kf_sb_printf(o, "/* %s -> %s: truncate, NaN -> 0, saturate */\n", p ? "f64" : "f32", kf_dtype_name(to));
    kf_sb_printf(o, "%s %s kf_f2i_%s_%s(%s x)\n{\n", e->sp->fn, T, p ? "f64" : "f32", kf_dtype_name(to), F);
    kf_sb_printf(o, "    return x != x ? (%s)0 : x < %.1f%s ? %s : x >= %.1f%s ? %s : (%s)x;\n}\n", T, lo, fs,
                 kf_sb_str(&mn), hi, fs, kf_sb_str(&mx), T);
    if (kf_sb_failed(&mx) || kf_sb_failed(&mn))
        o->oom = true;
    kf_sb_free(&mx);
    kf_sb_free(&mn);
}

static void helper_fminmax(E *e, kf_strbuf *o, int p, bool mn)
{
    const kf_cg_spell *sp = e->sp;
    const char *F = ST(e, p ? KF_F64 : KF_F32), *nm = p ? "f64" : "f32";
    const kf_cg_wrap *to = p ? &sp->f64_to_bits : &sp->f32_to_bits, *from = p ? &sp->f64_from_bits : &sp->f32_from_bits;
    /* in a reduction's inner loop this is most of the work: one PTX
     * instruction where there is one (rowmax: 0.90 -> 1.0 of copy on an H200) */
    bool ptx = !p && e->caps && e->caps->nan_minmax;
    kf_sb_printf(o, "/* %s that propagates NaN; %s.  %s */\n", mn ? "min" : "max",
                 mn ? "min(-0, +0) = -0" : "max(-0, +0) = +0", ptx ? "One instruction." : "Selects, no branches.");
    kf_sb_printf(o, "%s %s kf_f%s_%s(%s a, %s b)\n{\n", sp->fn, F, mn ? "min" : "max", nm, F, F);
    if (ptx) {
        kf_sb_printf(o, "    float r;\n    asm(\"%s.NaN.f32 %%0, %%1, %%2;\" : \"=f\"(r) : \"f\"(a), \"f\"(b));\n"
                        "    return r;\n}\n", mn ? "min" : "max");
        return;
    }
    /* equal values are one bit pattern or two zeros: OR keeps -0, AND +0 */
    kf_sb_printf(o, "    const %s eq = %s%sa%s %s %sb%s%s;\n", F, from->pre, to->pre, to->post, mn ? "|" : "&", to->pre,
                 to->post, from->post);
    kf_sb_printf(o, "    return a != a ? a : b != b ? b : a == b ? eq : a %s b ? a : b;\n}\n", mn ? "<" : ">");
}

/* kf_<f> and kf_<f>_far for CUDA's f32 trigonometric function f (see
 * trig_name): the argument test is CUDA's own, !(|x| >= 105615). */
static void helper_trig(E *e, kf_strbuf *o, int t)
{
    const kf_cg_spell *sp = e->sp;
    const char *f = trig_name[t], *w = trig_wrap[t];
    kf_sb_printf(o, "/* %s, its reduction of huge arguments out of line: the same bits, one long path per kernel */\n",
                 f);
    if (t == TRIG_SINCOS) {
        kf_sb_printf(o, "%s void %s_far(float x, float *s, float *c)\n{\n    %s(x, s, c);\n}\n", sp->fn_big, w, f);
        kf_sb_printf(o, "%s void %s(float x, float *s, float *c)\n{\n    if (!(fabsf(x) >= 105615.0f))\n"
                        "        %s(x, s, c);\n    else\n        %s_far(x, s, c);\n}\n",
                     sp->fn, w, f, w);
        return;
    }
    kf_sb_printf(o, "%s float %s_far(float x)\n{\n    return %s(x);\n}\n", sp->fn_big, w, f);
    kf_sb_printf(o, "%s float %s(float x)\n{\n    return !(fabsf(x) >= 105615.0f) ? %s(x) : %s_far(x);\n}\n", sp->fn, w,
                 f, w);
}

static void emit_helpers(E *e, kf_strbuf *o)
{
    const kf_cg_spell *sp = e->sp;
    const char *U16 = ST(e, KF_U16), *U = U32(e);
    for (int h = 0; h < H_COUNT; h++) {
        if (!(e->used & (1ull << h)))
            continue;
        /* guards let several modules share one compilation unit */
        kf_sb_printf(o, "#ifndef KF_HELPER_%d\n#define KF_HELPER_%d\n", h, h);
        switch (h) {
        case H_H2F:
            kf_sb_puts(o, "/* f16 -> f32 */\n");
            kf_sb_puts(o, sp->h2f);
            break;
        case H_F2H:
            kf_sb_puts(o, "/* f32 -> f16, round to nearest even */\n");
            kf_sb_puts(o, sp->f2h);
            break;
        case H_BF2F:
            kf_sb_printf(o, "/* bf16 <-> f32: the top half of an f32; round to nearest even, NaN stays quiet */\n");
            kf_sb_printf(o, "%s float kf_bf2f(%s h)\n{\n    return %s(%s)h << 16%s;\n}\n", sp->fn, U16,
                         sp->f32_from_bits.pre, U, sp->f32_from_bits.post);
            break;
        case H_F2BF:
            kf_sb_printf(o, "%s %s kf_f2bf(float f)\n{\n    %s u = %sf%s;\n", sp->fn, U16, U, sp->f32_to_bits.pre,
                         sp->f32_to_bits.post);
            kf_sb_printf(o, "    if ((u & 0x7fffffffu) > 0x7f800000u)\n        return (%s)((u >> 16) | 0x40u);\n", U16);
            kf_sb_printf(o, "    u += 0x7fffu + ((u >> 16) & 1u);\n    return (%s)(u >> 16);\n}\n", U16);
            break;
        case H_RH:
            kf_sb_printf(o, "/* round an f32 value to f16 precision */\n%s float kf_rh(float f)\n{\n"
                            "    return kf_h2f(kf_f2h(f));\n}\n", sp->fn);
            break;
        case H_RBF:
            kf_sb_printf(o, "/* round an f32 value to bf16 precision */\n%s float kf_rbf(float f)\n{\n"
                            "    return kf_bf2f(kf_f2bf(f));\n}\n", sp->fn);
            break;
        case H_RTO_F64:
            kf_sb_printf(o, "/* f64 -> f32 rounded to odd, so that a second rounding (to f16/bf16) is correct */\n");
            kf_sb_printf(o, "%s float kf_rto_f64(double d)\n{\n    const float f = (float)d;\n", sp->fn);
            kf_sb_printf(o, "    if (d != d || (double)f == d)\n        return f;\n");
            kf_sb_printf(o, "    const %s u = %sf%s;\n", U, sp->f32_to_bits.pre, sp->f32_to_bits.post);
            kf_sb_printf(o, "    if ((u & 0x7fffffffu) == 0x7f800000u)\n        return %s(u & 0x80000000u) | 0x7f7fffffu%s;\n",
                         sp->f32_from_bits.pre, sp->f32_from_bits.post);
            kf_sb_printf(o, "    if (u & 1u)\n        return f;\n");
            kf_sb_printf(o, "    return %sfabs(d) > fabs((double)f) ? u + 1u : u - 1u%s;\n}\n", sp->f32_from_bits.pre,
                         sp->f32_from_bits.post);
            break;
        case H_RTO_U64:
            kf_sb_printf(o, "/* integer magnitude -> f32 rounded to odd */\n");
            kf_sb_printf(o, "%s float kf_rto_u64(%s m)\n{\n    int sh = 0;\n", sp->fn, U64(e));
            kf_sb_printf(o, "    while ((m >> sh) >= 16777216u)\n        sh++;\n");
            kf_sb_printf(o, "    %s top = m >> sh;\n    if (sh > 0 && (m & ((1%s << sh) - 1)) != 0)\n        top |= 1;\n",
                         U64(e), sp->sfx_u64);
            kf_sb_printf(o, "    return (float)top * %s(%s)(127 + sh) << 23%s;\n}\n", sp->f32_from_bits.pre, U,
                         sp->f32_from_bits.post);
            break;
        case H_RTO_I64:
            kf_sb_printf(o, "%s float kf_rto_i64(%s v)\n{\n", sp->fn, I64(e));
            kf_sb_printf(o, "    return v < 0 ? -kf_rto_u64((%s)0 - (%s)v) : kf_rto_u64((%s)v);\n}\n", U64(e), U64(e),
                         U64(e));
            break;
        case H_FMIN32: case H_FMIN64: helper_fminmax(e, o, h - H_FMIN32, true); break;
        case H_FMAX32: case H_FMAX64: helper_fminmax(e, o, h - H_FMAX32, false); break;
        case H_TRIG + TRIG_SIN: case H_TRIG + TRIG_COS: case H_TRIG + TRIG_TAN: case H_TRIG + TRIG_SINCOS:
            helper_trig(e, o, h - H_TRIG);
            break;
        case H_KEEP32:
            kf_sb_printf(o, "/* An empty move that the compiler cannot see through: the arithmetic of i16\n"
                            " * stays 32-bit (docs/codegen.md) */\n"
                            "%s %s kf_keep32(%s v)\n{\n    %s r;\n    asm(\"mov.b32 %%0, %%1;\" : \"=r\"(r) : \"r\"(v));\n"
                            "    return r;\n}\n", sp->fn, U, U, U);
            break;
        case H_NEXT:
            kf_sb_puts(o, "/* The step of the elementwise loops: one grid further, or the end when\n"
                          " * KF_ONE_PASS promises a grid that covers the space (docs/codegen.md):\n"
                          " * each loop then runs at most once and keeps no state across the body. */\n"
                          "#ifdef KF_ONE_PASS\n#define KF_NEXT(i, step, end) (end)\n#else\n"
                          "#define KF_NEXT(i, step, end) ((i) + (step))\n#endif\n");
            break;
        default: {
            int i = h - H_F2I, p = i / 8, ii = i % 8;
            kf_dtype to = (kf_dtype)(ii < 4 ? KF_I8 + ii : KF_U8 + (ii - 4));
            helper_f2i(e, o, p, to);
            break;
        }
        }
        kf_sb_puts(o, "#endif\n\n");
    }
}

/* Fail when the OpenCL device lacks a capability node n's dtype needs. */
static bool caps_ok(E *e, int32_t n)
{
    kf_dtype t = dt(e, n);
    bool f64 = t == KF_F64, f16 = t == KF_F16;
    if (f64)
        e->uses_f64 = true;
    const char *ext = NULL;
    if (f64 && e->sp->fp64_needs_cap && e->caps && !e->caps->fp64)
        ext = "cl_khr_fp64";
    if (f16 && e->sp->fp16_needs_cap && e->caps && !e->caps->fp16)
        ext = "cl_khr_fp16";
    if (!ext)
        return true;
    kf_strbuf x = KF_STRBUF_INIT;
    node_text(e, &x, n);
    if (e->err && e->errlen)
        kf_snprintf(e->err, e->errlen, "graph '%s', kernel %d: '%s' uses %s, but the OpenCL device does not report %s",
                 e->g->name, e->ki->kidx, kf_sb_str(&x), kf_dtype_name(t), ext);
    kf_sb_free(&x);
    e->st = KF_ERR_UNSUPPORTED;
    return false;
}

static bool kernel_caps_ok(E *e)
{
    const kf_kernel *k = e->ki->k;
    for (int i = 0; i < k->nargs; i++)
        if (!caps_ok(e, k->args[i]))
            return false;
    for (int i = 0; i < k->nouts; i++)
        if (!caps_ok(e, k->outs[i]))
            return false;
    for (int i = 0; i < k->nscalars; i++)
        if (!caps_ok(e, k->scalars[i]))
            return false;
    for (int i = 0; i < k->nnodes; i++) {
        const kf_irnode *x = nd(e, k->nodes[i]);
        if (!caps_ok(e, k->nodes[i]))
            return false;
        for (int a = 0; a < x->nargs; a++)
            if (!caps_ok(e, x->args[a]))
                return false;
    }
    return true;
}

kf_status kf_cg_emit(const kf_plan *p, kf_target t, const kf_cg_caps *caps, kf_strbuf *out, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = 0;
    if (t == KF_TARGET_LLVM)
        return kf_cg_emit_llvm(p, caps, out, err, errlen);
    if (!p || !p->g || !out || (t != KF_TARGET_CUDA && t != KF_TARGET_OPENCL)) {
        if (err && errlen)
            kf_snprintf(err, errlen, "codegen: bad arguments");
        return KF_ERR_INVALID_ARG;
    }
    /* the kernels go straight into out; the header and the helpers they
     * use are known only then, and are put in front of them */
    size_t start = out->len;
    kf_sb_reserve(out, KF_CG_MODULE_BYTES);
    numcache nums;
    nums.n = 0;
    E e = { t == KF_TARGET_CUDA ? &kf_cg_spell_cuda : &kf_cg_spell_opencl, t, caps, p->g, NULL, out, 0, false,
            KF_OK, err, errlen, &nums, t == KF_TARGET_CUDA || !caps || caps->gpu, NULL, kf_cg_fast_math(t, caps) };
    e.unroll = e.gpu ? e.sp->unroll : "";
    for (int k = 0; k < p->nkernels && e.st == KF_OK; k++) {
        kf_cg_kinfo ki;
        e.st = kf_cg_kinfo_init(&ki, p, k, e.fast, err, errlen);
        if (e.st != KF_OK)
            break;
        e.ki = &ki;
        if (kernel_caps_ok(&e))
            emit_kernel(&e);
        kf_cg_kinfo_free(&ki);
        e.ki = NULL;
    }
    if (e.st == KF_OK) {
        kf_strbuf head = KF_STRBUF_INIT;
        kf_sb_printf(&head, "/* Generated by kfuse %d.%d.%d: %s for graph '%s', %d kernel%s.\n", KFUSE_VERSION_MAJOR,
                     KFUSE_VERSION_MINOR, KFUSE_VERSION_PATCH, e.sp->target_name, p->g->name, p->nkernels,
                     p->nkernels == 1 ? "" : "s");
        kf_sb_puts(&head, " * Kernel ABI: docs/codegen.md.  Do not edit: regenerate. */\n");
        kf_sb_puts(&head, e.sp->preamble);
        if (e.uses_f64)
            kf_sb_puts(&head, e.sp->fp64_preamble);
        kf_sb_putc(&head, '\n');
        emit_helpers(&e, &head);
        kf_sb_insert(out, start, &head);
        kf_sb_free(&head);
        if (kf_sb_failed(out)) {
            e.st = KF_ERR_NO_MEMORY;
            if (err && errlen)
                kf_snprintf(err, errlen, "codegen: out of memory");
        }
    }
    return e.st;
}
