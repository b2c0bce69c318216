/* Seeded random graphs and inputs for differential tests (randgraph.h).
 * Generation keeps one broadcast "base shape" B per graph: every array
 * value in the pool broadcasts into B, so any two pool values may meet in
 * an elementwise op.  Values that cannot (some reductions, iota and take of
 * other shapes) become outputs directly. */
#include "randgraph.h"
#include "half.h"
#include "ir.h"
#include "kfsample.h"
#include "plan.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* -- Random numbers ------------------------------------------------------------------ */

typedef struct rng {
    uint64_t s;
} rng;

static uint64_t rnext(rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int rint_(rng *r, int n) { return n > 0 ? (int)(rnext(r) % (uint64_t)n) : 0; }
static double runit(rng *r) { return (double)(rnext(r) >> 11) * (1.0 / 9007199254740992.0); }
static bool rchance(rng *r, double p) { return runit(r) < p; }

/* -- Op facts -------------------------------------------------------------------------- */

static bool accepts(kf_op op, kf_dtype t)
{
    switch ((kf_rule)kf_ir_op(op)->rule) {
    case T_NUM: case T_RNUM: case T_RARG: return t != KF_BOOL;
    case T_FLOAT: case T_FPRED: case T_RFLOAT: return kf_dt_is_float(t);
    case T_BITS: return t == KF_BOOL || kf_dt_is_int(t);
    case T_INT: return kf_dt_is_int(t);
    default: return true;
    }
}

/* Library functions whose last bits differ between correct implementations. */
static bool inexact(kf_op op)
{
    switch (op) {
    case KF_OP_CBRT: case KF_OP_EXP: case KF_OP_EXP2: case KF_OP_EXPM1: case KF_OP_LOG: case KF_OP_LOG2:
    case KF_OP_LOG10: case KF_OP_LOG1P: case KF_OP_SIN: case KF_OP_COS: case KF_OP_TAN: case KF_OP_ASIN:
    case KF_OP_ACOS: case KF_OP_ATAN: case KF_OP_SINH: case KF_OP_COSH: case KF_OP_TANH: case KF_OP_ERF:
    case KF_OP_SIGMOID: case KF_OP_POW: case KF_OP_ATAN2: case KF_OP_HYPOT:
        return true;
    default: return false;
    }
}

/* Float sum, prod and mean: the backends accumulate f16, bf16 and f32 in
 * f32 in their own order, the interpreter in double in row-major order. */
static bool inexact_reduce(kf_op op, kf_dtype t)
{
    return kf_dt_is_float(t) && (op == KF_OP_SUM || op == KF_OP_PROD || op == KF_OP_MEAN);
}

static const kf_op unary_ops[] = {
    KF_OP_NEG, KF_OP_ABS, KF_OP_SIGN, KF_OP_SQRT, KF_OP_RSQRT, KF_OP_CBRT, KF_OP_EXP, KF_OP_EXP2, KF_OP_EXPM1,
    KF_OP_LOG, KF_OP_LOG2, KF_OP_LOG10, KF_OP_LOG1P, KF_OP_SIN, KF_OP_COS, KF_OP_TAN, KF_OP_ASIN, KF_OP_ACOS,
    KF_OP_ATAN, KF_OP_SINH, KF_OP_COSH, KF_OP_TANH, KF_OP_ERF, KF_OP_FLOOR, KF_OP_CEIL, KF_OP_ROUND, KF_OP_TRUNC,
    KF_OP_RCP, KF_OP_SIGMOID, KF_OP_NOT, KF_OP_ISNAN, KF_OP_ISINF, KF_OP_ISFINITE,
};
static const kf_op binary_ops[] = {
    KF_OP_ADD, KF_OP_SUB, KF_OP_MUL, KF_OP_DIV, KF_OP_MOD, KF_OP_POW, KF_OP_MIN, KF_OP_MAX, KF_OP_ATAN2,
    KF_OP_HYPOT, KF_OP_COPYSIGN, KF_OP_LT, KF_OP_LE, KF_OP_GT, KF_OP_GE, KF_OP_EQ, KF_OP_NE, KF_OP_AND,
    KF_OP_OR, KF_OP_XOR, KF_OP_SHL, KF_OP_SHR,
};
static const kf_op reduce_ops[] = {
    KF_OP_SUM, KF_OP_PROD, KF_OP_RMIN, KF_OP_RMAX, KF_OP_MEAN, KF_OP_ARGMIN, KF_OP_ARGMAX,
};
#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* -- Generator state ----------------------------------------------------------------------- */

enum { POOL_MAX = 256, TERM_MAX = 32 };

typedef struct gen {
    kf_graph *g;
    rng r;
    kf_rg_options o;
    int R;                       /* base shape */
    kf_dim B[KF_MAX_RANK];
    kf_node pool[POOL_MAX];      /* values that broadcast into B */
    int npool;
    kf_node term[TERM_MAX];      /* values that do not: outputs */
    int nterm;
    int ninputs, nscalars;
    kf_dtype dts[KF_DTYPE_COUNT];
    int ndts;
} gen;

static const char *const syms[] = { "n", "m", "k" };
static const int64_t lits[] = { 1, 2, 3, 5, 7, 16 };

static kf_dtype rand_dtype(gen *G) { return G->dts[rint_(&G->r, G->ndts)]; }

static kf_dim rand_dim(gen *G)
{
    if (rchance(&G->r, 0.55))
        return KF_SYM(syms[rint_(&G->r, 3)]);
    return KF_DIM(lits[rint_(&G->r, COUNT(lits))]);
}

/* A shape that broadcasts into B: a suffix of B with some dims 1. */
static int sub_shape(gen *G, kf_dim *dims, int minrank)
{
    int r = minrank + rint_(&G->r, G->R - minrank + 1);
    if (r > G->R)
        r = G->R;
    for (int j = 0; j < r; j++) {
        int d = G->R - r + j;
        dims[j] = rchance(&G->r, 0.75) ? G->B[d] : KF_DIM(1);
    }
    return r;
}

static void push(gen *G, kf_node n)
{
    if (n == KF_NONE)
        return;
    if (G->npool < POOL_MAX)
        G->pool[G->npool++] = n;
}

static void push_term(gen *G, kf_node n)
{
    if (n != KF_NONE && G->nterm < TERM_MAX)
        G->term[G->nterm++] = n;
}

static kf_node new_input(gen *G, kf_dtype t)
{
    char nm[32];
    kf_dim dims[KF_MAX_RANK];
    int r = sub_shape(G, dims, 0);
    snprintf(nm, sizeof nm, "in%d", G->ninputs++);
    kf_node n = kf_input(G->g, nm, t, r, dims);
    push(G, n);
    return n;
}

static kf_node new_scalar(gen *G, kf_dtype t)
{
    char nm[32];
    snprintf(nm, sizeof nm, "s%d", G->nscalars++);
    kf_node n = kf_scalar(G->g, nm, t);
    push(G, n);
    return n;
}

static kf_node literal(gen *G, kf_dtype t)
{
    static const double fl[] = { 0.5, 2.0, -1.5, 3.0, 0.0, 0.001, 100.0, -0.0, 0.25 };
    if (t == KF_BOOL)
        return kf_lit_u(G->g, t, (uint64_t)rint_(&G->r, 2));
    if (kf_dt_is_float(t))
        return kf_lit_f(G->g, t, fl[rint_(&G->r, COUNT(fl))]);
    if (kf_dt_is_sint(t))
        return kf_lit_i(G->g, t, rint_(&G->r, 16) - 5);
    return kf_lit_u(G->g, t, (uint64_t)rint_(&G->r, 11));
}

static kf_dtype dtype_of(gen *G, kf_node n) { return kf_node_dtype(G->g, n); }

/* A pool value, preferring recent ones. */
static kf_node pick(gen *G)
{
    if (G->npool == 0)
        return new_input(G, rand_dtype(G));
    if (G->npool > 6 && rchance(&G->r, 0.6))
        return G->pool[G->npool - 1 - rint_(&G->r, 6)];
    return G->pool[rint_(&G->r, G->npool)];
}

/* A value of dtype t: from the pool, else a literal, scalar, cast or new input. */
static kf_node operand(gen *G, kf_dtype t)
{
    int cand[POOL_MAX], nc = 0;
    for (int i = 0; i < G->npool; i++)
        if (dtype_of(G, G->pool[i]) == t)
            cand[nc++] = i;
    double u = runit(&G->r);
    if (nc > 0 && u < 0.6)
        return G->pool[cand[nc - 1 - rint_(&G->r, nc < 4 ? nc : 4)]];
    if (u < 0.75)
        return literal(G, t);
    if (u < 0.8)
        return new_scalar(G, t);
    if (u < 0.9 && G->npool > 0) {
        kf_node c = kf_cast(G->g, pick(G), t);
        push(G, c);
        return c;
    }
    return new_input(G, t);
}

static kf_op rand_op(gen *G, const kf_op *ops, int n, kf_dtype t)
{
    for (int tries = 0; tries < 32; tries++) {
        kf_op op = ops[rint_(&G->r, n)];
        if (accepts(op, t) && !(G->o.exact && inexact(op)))
            return op;
    }
    return KF_OP_COUNT;
}

/* -- Steps ------------------------------------------------------------------------------------ */

static void step_unary(gen *G)
{
    kf_node a = pick(G);
    kf_op op = rand_op(G, unary_ops, COUNT(unary_ops), dtype_of(G, a));
    if (op != KF_OP_COUNT)
        push(G, kf_unary(G->g, op, a));
}

static void step_binary(gen *G)
{
    kf_node a = pick(G);
    kf_dtype t = dtype_of(G, a);
    kf_op op = rand_op(G, binary_ops, COUNT(binary_ops), t);
    if (op == KF_OP_COUNT)
        return;
    kf_node b = operand(G, t);
    if (rchance(&G->r, 0.3)) {
        kf_node c = a;
        a = b;
        b = c;
    }
    push(G, kf_binary(G->g, op, a, b));
}

static void step_ternary(gen *G)
{
    int which = rint_(&G->r, 3);
    kf_node a = pick(G);
    kf_dtype t = dtype_of(G, a);
    if (which == 0) { /* select */
        kf_node c = operand(G, KF_BOOL);
        push(G, kf_ternary(G->g, KF_OP_SELECT, c, a, operand(G, t)));
    } else if (which == 1 && kf_dt_is_float(t)) {
        push(G, kf_ternary(G->g, KF_OP_FMA, a, operand(G, t), operand(G, t)));
    } else if (t != KF_BOOL) {
        push(G, kf_ternary(G->g, KF_OP_CLAMP, a, operand(G, t), operand(G, t)));
    }
}

static void step_cast(gen *G)
{
    push(G, kf_cast(G->g, pick(G), rand_dtype(G)));
}

static void step_iota(gen *G)
{
    kf_dtype t = rand_dtype(G);
    if (t == KF_BOOL)
        t = KF_I32;
    kf_dim dims[KF_MAX_RANK];
    if (G->R == 0) {
        dims[0] = rand_dim(G);
        push_term(G, kf_iota(G->g, t, 1, dims, 0));
        return;
    }
    int r = sub_shape(G, dims, 1);
    push(G, kf_iota(G->g, t, r, dims, rint_(&G->r, r)));
}

static void step_take(gen *G)
{
    kf_dtype t = rand_dtype(G);
    kf_dim L = rchance(&G->r, 0.5) ? KF_SYM(syms[rint_(&G->r, 3)]) : KF_DIM(lits[1 + rint_(&G->r, COUNT(lits) - 1)]);
    char nm[32];
    snprintf(nm, sizeof nm, "in%d", G->ninputs++);
    kf_node v = kf_input(G->g, nm, t, 1, &L);
    if (rchance(&G->r, 0.3)) { /* a computed source: stored by an earlier kernel */
        kf_op op = rand_op(G, unary_ops, COUNT(unary_ops), t);
        if (op != KF_OP_COUNT)
            v = kf_unary(G->g, op, v);
    }
    static const kf_dtype its[] = { KF_I8, KF_I16, KF_I32, KF_I64, KF_U8, KF_U16, KF_U32, KF_U64 };
    kf_dtype it = its[rint_(&G->r, COUNT(its))];
    kf_node ix = new_input(G, it);
    push(G, kf_take(G->g, v, ix));
}

static void step_reduce(gen *G)
{
    kf_node a = pick(G);
    kf_dtype t = dtype_of(G, a);
    kf_op op = reduce_ops[rint_(&G->r, COUNT(reduce_ops))];
    if (G->o.exact && inexact_reduce(op, t))
        op = rchance(&G->r, 0.5) ? KF_OP_RMIN : KF_OP_ARGMAX;
    if (!accepts(op, t)) {
        kf_dtype u = op == KF_OP_MEAN ? (G->o.no_f64 ? KF_F32 : KF_F64) : KF_I32;
        a = kf_cast(G->g, a, u);
        t = u;
    }
    if (G->o.exact && inexact_reduce(op, t))
        op = KF_OP_RMAX;
    int rank = kf_node_rank(G->g, a);
    int axes[KF_MAX_RANK], na = 0;
    bool keep = rchance(&G->r, 0.4);
    if (rank > 0 && rchance(&G->r, 0.8)) {
        for (int d = 0; d < rank; d++)
            if (rchance(&G->r, 0.5))
                axes[na++] = d;
        if (na == 0)
            axes[na++] = rint_(&G->r, rank);
    }
    kf_node x = kf_reduce(G->g, op, a, na, axes, keep);
    /* leading axes only (or keepdims): still broadcasts into B */
    bool prefix = true;
    if (na == 0)
        prefix = true;
    for (int i = 0; i < na; i++)
        prefix = prefix && axes[i] == i;
    if (keep || prefix)
        push(G, x);
    else
        push_term(G, x);
}

/* -- The graph ---------------------------------------------------------------------------------- */

static kf_graph *build(const char *name, uint64_t seed, const kf_rg_options *opt)
{
    gen G;
    memset(&G, 0, sizeof G);
    G.r.s = seed * 0x2545f4914f6cdd1dull + 1;
    if (opt)
        G.o = *opt;
    G.g = kf_graph_new(name);
    if (!G.g)
        return NULL;
    for (int t = 0; t < KF_DTYPE_COUNT; t++)
        if (!(G.o.no_f16 && t == KF_F16) && !(G.o.no_f64 && t == KF_F64))
            G.dts[G.ndts++] = (kf_dtype)t;
    static const int rank_w[] = { 0, 1, 1, 1, 2, 2, 2, 3, 3, 4 };
    G.R = rank_w[rint_(&G.r, COUNT(rank_w))];
    for (int d = 0; d < G.R; d++)
        G.B[d] = rand_dim(&G);
    int nin = 1 + rint_(&G.r, 3);
    for (int i = 0; i < nin; i++)
        new_input(&G, rand_dtype(&G));
    int ops = G.o.ops > 0 ? G.o.ops : 4 + rint_(&G.r, 21);
    for (int i = 0; i < ops && kf_graph_status(G.g) == KF_OK; i++) {
        int u = rint_(&G.r, 100);
        if (u < 25)
            step_unary(&G);
        else if (u < 60)
            step_binary(&G);
        else if (u < 68)
            step_ternary(&G);
        else if (u < 78)
            step_cast(&G);
        else if (u < 83)
            step_iota(&G);
        else if (u < 90 && !G.o.no_take)
            step_take(&G);
        else if (!G.o.no_reduce)
            step_reduce(&G);
        else
            step_binary(&G);
    }
    /* outputs: the last value, a few random ones (an input now and then), the terminals */
    kf_node outs[TERM_MAX + 8];
    int no = 0;
    if (G.npool)
        outs[no++] = G.pool[G.npool - 1];
    int extra = rint_(&G.r, 3);
    for (int i = 0; i < extra && G.npool; i++)
        outs[no++] = G.pool[rint_(&G.r, G.npool)];
    for (int i = 0; i < G.nterm; i++)
        outs[no++] = G.term[i];
    int nout = 0;
    for (int i = 0; i < no && kf_graph_status(G.g) == KF_OK; i++) {
        kf_node n = outs[i];
        if (kf_node_op(G.g, n) == KF_OP_CONST || kf_node_is_scalar(G.g, n))
            continue;
        bool dup = false;
        for (int j = 0; j < kf_graph_num_outputs(G.g); j++)
            dup = dup || kf_graph_output(G.g, j) == n;
        if (dup)
            continue;
        char nm[32];
        snprintf(nm, sizeof nm, "o%d", nout++);
        kf_output(G.g, n, kf_node_name(G.g, n) ? NULL : nm);
    }
    if (kf_graph_num_outputs(G.g) == 0 && kf_graph_status(G.g) == KF_OK)
        kf_output(G.g, new_input(&G, rand_dtype(&G)), NULL);
    /* every symbol must be bound by an input (an iota may be the only user) */
    for (int s = 0; s < 3 && kf_graph_status(G.g) == KF_OK; s++) {
        bool used = false, bound = false;
        for (int i = 0; i < G.g->nnodes; i++) {
            const kf_irnode *x = &G.g->nodes[i];
            for (int j = 0; j < x->rank; j++)
                if (x->dims[j] < 0 && strcmp(G.g->syms[KF_IR_SYM_INDEX(x->dims[j])], syms[s]) == 0) {
                    used = true;
                    bound = bound || x->op == KF_OP_INPUT;
                }
        }
        if (used && !bound) {
            char nm[32];
            snprintf(nm, sizeof nm, "in%d", G.ninputs++);
            kf_dim d = KF_SYM(syms[s]);
            kf_input(G.g, nm, rand_dtype(&G), 1, &d);
        }
    }
    if (kf_graph_verify(G.g) != KF_OK) {
        kf_graph_free(G.g);
        return NULL;
    }
    return G.g;
}

kf_graph *kf_rg_graph(const char *name, uint64_t seed, const kf_rg_options *opt)
{
    /* a step may fail a builder rule by construction; then the next
     * derived seed is tried, deterministically */
    for (int attempt = 0; attempt < 64; attempt++) {
        kf_graph *g = build(name, seed + (uint64_t)attempt * 0x100000001b3ull, opt);
        if (g)
            return g;
    }
    return NULL;
}

/* -- Inputs ------------------------------------------------------------------------------------------- */

int64_t kf_rg_sym_value(const kf_rg_sizes *s, const char *sym)
{
    if (strcmp(sym, "n") == 0)
        return s->n;
    if (strcmp(sym, "m") == 0)
        return s->m;
    if (strcmp(sym, "k") == 0)
        return s->k;
    return 3;
}

/* Significand bits of a float dtype (the fewer, the coarser). */
static int float_bits(kf_dtype t)
{
    return t == KF_BF16 ? 8 : t == KF_F16 ? 11 : t == KF_F32 ? 24 : 53;
}

kf_rg_dep kf_rg_output_dep(const kf_graph *g, int j, bool fast_math)
{
    int32_t out = g->outputs[j];
    kf_rg_dep *d = malloc((size_t)(out + 1) * sizeof *d);
    if (!d)   /* out of memory: promise nothing */
        return (kf_rg_dep){ false, true, KF_BF16 };
    for (int32_t i = 0; i <= out; i++) {   /* arguments come before their users */
        const kf_irnode *x = &g->nodes[i];
        d[i].exact = !inexact((kf_op)x->op) && !(fast_math && kf_rg_fast_math_node(g, i));
        d[i].fsum = false;
        d[i].coarsest = kf_dt_is_float((kf_dtype)x->dtype) ? (kf_dtype)x->dtype : KF_F64;
        for (int a = 0; a < x->nargs; a++) {
            const kf_rg_dep *p = &d[x->args[a]];
            kf_dtype pt = (kf_dtype)g->nodes[x->args[a]].dtype;
            bool red = inexact_reduce((kf_op)x->op, pt);
            d[i].exact = d[i].exact && p->exact && !red;
            d[i].fsum = d[i].fsum || p->fsum || red;
            if (float_bits(p->coarsest) < float_bits(d[i].coarsest))
                d[i].coarsest = p->coarsest;
        }
    }
    kf_rg_dep r = d[out];
    free(d);
    return r;
}

bool kf_rg_fast_math_node(const kf_graph *g, int32_t n)
{
    const kf_irnode *x = &g->nodes[n];
    if (!kf_dt_is_float((kf_dtype)x->dtype) || x->dtype == KF_F64)
        return false;
    switch (x->op) {
    case KF_OP_EXP: case KF_OP_EXP2: case KF_OP_LOG: case KF_OP_LOG2: case KF_OP_LOG10: case KF_OP_SIN:
    case KF_OP_COS: case KF_OP_TAN: case KF_OP_RSQRT: case KF_OP_RCP: case KF_OP_SIGMOID: case KF_OP_DIV:
        return true;
    default:
        return false;
    }
}

bool kf_rg_fast_math_op(const kf_graph *g)
{
    for (int32_t i = 0; i < g->nnodes; i++)
        if (kf_rg_fast_math_node(g, i))
            return true;
    return false;
}

/* The smallest normal magnitude of float dtype t. */
static double min_normal(kf_dtype t)
{
    return t == KF_F16 ? 0x1p-14 : t == KF_F64 ? DBL_MIN : FLT_MIN;
}

static int64_t array_numel(const kf_host_array *a)
{
    int64_t n = 1;
    for (int d = 0; d < a->rank; d++)
        n *= a->shape[d];
    return n;
}

/* A float sum or mean (an inexact reduction other than a product, whose
 * error is relative, as the tolerance already is). */
static bool float_sum(const kf_graph *g, int32_t i)
{
    const kf_irnode *x = &g->nodes[i];
    return x->op != KF_OP_PROD && inexact_reduce((kf_op)x->op, (kf_dtype)g->nodes[x->args[0]].dtype);
}

/* A copy of g where each float sum or mean S of x is S + s * SUM_SHIFT *
 * sum(|x|) (a mean: mean(|x|)) over the same axes, SUM_SHIFT in units of
 * the last place at 1 of the backends' accumulator (f32; f64 for f64);
 * s is +1 for every one, or (alternate) -1 and +1 by turns, so that both
 * a difference and a sum of two sums move.  NULL when the rewrite fails. */
#define SUM_SHIFT 8
static kf_graph *sums_shifted(const kf_graph *g, bool alternate)
{
    kf_rebuild rb;
    if (kf_rebuild_start(g, &rb) != KF_OK)
        return NULL;
    kf_graph *ng = rb.g;
    bool ok = true;
    for (int32_t i = 0, k = 0; ok && i < g->nnodes; i++) {
        const kf_irnode *x = &g->nodes[i];
        if (!float_sum(g, i)) {
            ok = kf_rebuild_copy(&rb, i) != KF_NONE;
            continue;
        }
        int axes[KF_MAX_RANK], na = 0;
        for (int d = 0; d < g->nodes[x->args[0]].rank; d++)
            if (x->axes & (1u << d))
                axes[na++] = d;
        kf_node a = rb.map[x->args[0]];
        kf_dtype t = (kf_dtype)x->dtype;
        double ulp1 = t == KF_F64 ? 0x1p-52 : 0x1p-23;   /* of the accumulator: f16 and bf16 sum in f32 */
        double s = alternate && k++ % 2 == 0 ? -1 : 1;
        kf_node sum = kf_reduce(ng, (kf_op)x->op, a, na, axes, x->keepdims);
        kf_node mag = kf_reduce(ng, (kf_op)x->op, kf_unary(ng, KF_OP_ABS, a), na, axes, x->keepdims);
        kf_node shift = kf_binary(ng, KF_OP_MUL, mag, kf_lit_f(ng, t, s * SUM_SHIFT * ulp1));
        /* the last node through the rebuild, which then covers the ones above */
        kf_irnode add = { .op = KF_OP_ADD, .nargs = 2, .args = { sum, shift } };
        ok = shift != KF_NONE && kf_rebuild_add(&rb, i, &add) != KF_NONE;
    }
    if (!ok) {
        kf_rebuild_abort(&rb);
        return NULL;
    }
    return kf_rebuild_end(&rb);
}

double **kf_rg_sum_slack(const kf_graph *g, const kf_host_array *in, int nin, const kf_host_array *want)
{
    bool any = false;
    for (int32_t i = 0; i < g->nnodes; i++)
        any = any || float_sum(g, i);
    int nout = g->noutputs;
    double **slack = any ? calloc((size_t)nout, sizeof *slack) : NULL;
    kf_host_array *r = any ? calloc((size_t)nout, sizeof *r) : NULL;
    bool ok = slack && r;
    for (int j = 0; ok && j < nout; j++)
        ok = (slack[j] = calloc((size_t)array_numel(&want[j]) + 1, sizeof **slack)) != NULL;
    for (int pass = 0; ok && pass < 2; pass++) {
        kf_graph *sg = sums_shifted(g, pass == 1);
        char err[256];
        kf_status s = sg ? kf_interpret(sg, in, nin, r, nout, err, sizeof err) : KF_ERR_NO_MEMORY;
        ok = s == KF_OK || s == KF_ERR_INDEX;
        for (int j = 0; j < nout && sg; j++) {
            int64_t n = ok && r[j].data && kf_dt_is_float(want[j].dtype) ? array_numel(&want[j]) : 0;
            for (int64_t e = 0; e < n; e++) {
                double a = rt_load(r[j].data, want[j].dtype, e), b = rt_load(want[j].data, want[j].dtype, e);
                double d = isfinite(a) && isfinite(b) ? fabs(a - b) : (a == b || (isnan(a) && isnan(b))) ? 0 : INFINITY;
                if (d > slack[j][e])
                    slack[j][e] = d;
            }
            kf_free(r[j].data);
            r[j].data = NULL;
        }
        kf_graph_free(sg);
    }
    free(r);
    if (!ok) {   /* no slack rather than a partial one */
        kf_rg_slack_free(slack, nout);
        return NULL;
    }
    return slack;
}

void kf_rg_slack_free(double **slack, int nout)
{
    for (int j = 0; slack && j < nout; j++)
        free(slack[j]);
    free(slack);
}

int64_t kf_rg_compare(const kf_graph *g, int j, const void *got, const kf_host_array *want, int64_t n,
                      bool fast_math, double *const *slack, int64_t *bad1)
{
    kf_rg_dep dep = kf_rg_output_dep(g, j, fast_math);
    kf_dtype t = want->dtype;
    size_t es = kf_dtype_size(t);
    bool fl = kf_dt_is_float(t);
    double scale = 0;
    for (int64_t i = 0; fl && i < n; i++) {
        double w = rt_load(want->data, t, i);
        if (isfinite(w) && fabs(w) > scale)
            scale = fabs(w);
    }
    int64_t bad = 0, near = 0;   /* near: integers of inexact floats off by one */
    for (int64_t i = 0; i < n; i++) {
        double a = fl ? rt_load(got, t, i) : 0, b = fl ? rt_load(want->data, t, i) : 0;
        bool ok;
        if (fl && isnan(a) && isnan(b))
            ok = true;
        else if (dep.exact || !fl)
            ok = memcmp((const char *)got + (size_t)i * es, (const char *)want->data + (size_t)i * es, es) == 0;
        else if (!isfinite(a) || !isfinite(b))
            ok = a == b || dep.fsum;
        else   /* below a float sum, partial results may underflow in one order and not another */
            ok = fabs(a - b) <= rt_tol(dep.coarsest) * (fabs(b) + scale) + (slack ? slack[j][i] : 0) ||
                 (dep.fsum && fabs(a) < min_normal(dep.coarsest) && fabs(b) < min_normal(dep.coarsest));
        if (!ok && !dep.exact && !fl && near < n / 8 + 1) {   /* one step apart, modulo the width */
            uint64_t ua = 0, ub = 0, mask = es == 8 ? UINT64_MAX : (1ull << (8 * es)) - 1;
            memcpy(&ua, (const char *)got + (size_t)i * es, es);
            memcpy(&ub, (const char *)want->data + (size_t)i * es, es);
            uint64_t d = (ua - ub) & mask;
            ok = d == 1 || d == mask;
            near += ok;
        }
        if (!ok && bad++ == 0)
            *bad1 = i;
    }
    return bad;
}

bool kf_rg_fits(const kf_graph *g, const kf_rg_sizes *sizes, int64_t max_elems)
{
    for (int32_t i = 0; i < g->nnodes; i++) {
        double n = 1;   /* a double: [k, n, n] of large sizes passes int64 */
        for (int d = 0; d < g->nodes[i].rank; d++) {
            int64_t v = g->nodes[i].dims[d];
            n *= (double)(v >= 0 ? v : kf_rg_sym_value(sizes, g->syms[KF_IR_SYM_INDEX(v)]));
        }
        if (n > (double)max_elems)
            return false;
    }
    return true;
}

static void put_float(kf_dtype t, void *p, int64_t i, double v)
{
    switch (t) {
    case KF_F16: ((uint16_t *)p)[i] = kf_f32_to_f16((float)v); break;
    case KF_BF16: ((uint16_t *)p)[i] = kf_f32_to_bf16((float)v); break;
    case KF_F32: ((float *)p)[i] = (float)v; break;
    default: ((double *)p)[i] = v; break;
    }
}

static void put_int(kf_dtype t, void *p, int64_t i, uint64_t bits)
{
    switch (kf_dtype_size(t)) {
    case 1: ((uint8_t *)p)[i] = (uint8_t)bits; break;
    case 2: ((uint16_t *)p)[i] = (uint16_t)bits; break;
    case 4: ((uint32_t *)p)[i] = (uint32_t)bits; break;
    default: ((uint64_t *)p)[i] = bits; break;
    }
}

/* The length of the array input n indexes through a take, or -1 (with sz
 * NULL: 0 for a symbolic length, to ask only whether n is an index). */
static int64_t take_len(const kf_graph *g, kf_node n, const kf_rg_sizes *sz)
{
    for (int i = 0; i < g->nnodes; i++) {
        const kf_irnode *x = &g->nodes[i];
        if (x->op == KF_OP_TAKE && x->args[1] == n) {
            int64_t d = g->nodes[x->args[0]].dims[0];
            return d >= 0 ? d : sz ? kf_rg_sym_value(sz, g->syms[KF_IR_SYM_INDEX(d)]) : 0;
        }
    }
    return -1;
}

/* Special values: signed zeros, infinities, NaN, huge and tiny floats; an
 * integer dtype's extremes, 0, 1, -1 and shift counts at the width. */
static double float_special(rng *r)
{
    static const double sp[] = { 0.0, -0.0, INFINITY, -INFINITY, NAN, 1e30, -1e-30, 65504.0, 1e-6, 3e38 };
    return sp[rint_(r, COUNT(sp))];
}

static uint64_t int_special(rng *r, kf_dtype t)
{
    unsigned bits = (unsigned)kf_dtype_size(t) * 8;
    uint64_t mx = bits == 64 ? UINT64_MAX : (1ull << bits) - 1;
    uint64_t ext[] = { 0, 1, mx, kf_dt_is_sint(t) ? 1ull << (bits - 1) : mx - 1, kf_dt_is_sint(t) ? (mx >> 1) : 0,
                       bits - 1, bits };
    uint64_t v = ext[rint_(r, COUNT(ext))];
    return kf_dt_is_sint(t) && v == mx ? UINT64_MAX : v; /* -1 */
}

void kf_rg_specials(const kf_graph *g, int i, kf_host_array *a, uint64_t seed)
{
    kf_node n = kf_graph_input(g, i);
    kf_dtype t = a->dtype;
    if (t == KF_BOOL || take_len(g, n, NULL) >= 0)
        return;
    rng r = { seed * 0x2545f4914f6cdd1dull + (uint64_t)i * 104729 + 5 };
    for (int64_t e = 0, ne = array_numel(a); e < ne; e++) {
        if (kf_dt_is_float(t) && rchance(&r, 0.06))
            put_float(t, a->data, e, float_special(&r));
        else if (!kf_dt_is_float(t) && rchance(&r, 0.08))
            put_int(t, a->data, e, int_special(&r, t));
    }
}

kf_status kf_rg_inputs(const kf_graph *g, uint64_t seed, const kf_rg_sizes *sizes, double bad_index, bool specials,
                       kf_host_array *inputs)
{
    int ni = kf_graph_num_inputs(g);
    memset(inputs, 0, (size_t)ni * sizeof *inputs);
    for (int i = 0; i < ni; i++) {
        kf_node n = kf_graph_input(g, i);
        const kf_irnode *x = &g->nodes[n];
        kf_host_array *a = &inputs[i];
        a->dtype = (kf_dtype)x->dtype;
        a->rank = x->rank;
        int64_t numel = 1;
        for (int j = 0; j < x->rank; j++) {
            int64_t d = x->dims[j];
            a->shape[j] = d >= 0 ? d : kf_rg_sym_value(sizes, g->syms[KF_IR_SYM_INDEX(d)]);
            numel *= a->shape[j];
        }
        size_t sz = kf_dtype_size(a->dtype);
        a->data = calloc((size_t)(numel > 0 ? numel : 1), sz);
        if (!a->data) {
            kf_rg_free_inputs(inputs, i);
            return KF_ERR_NO_MEMORY;
        }
        rng r = { seed * 0x9e3779b97f4a7c15ull + (uint64_t)i * 7919 + 17 };
        int64_t len = take_len(g, n, sizes);
        kf_dtype t = a->dtype;
        for (int64_t e = 0; e < numel; e++) {
            if (len >= 0 && kf_dt_is_int(t)) {
                int64_t v = len > 0 ? rint_(&r, (int)(len < 1000000 ? len : 1000000)) : 0;
                if (len == 0 || (bad_index > 0 && rchance(&r, bad_index)))
                    v = rchance(&r, 0.5) ? -1 : len;
                put_int(t, a->data, e, (uint64_t)v);
            } else if (t == KF_BOOL) {
                ((uint8_t *)a->data)[e] = (uint8_t)rint_(&r, 2);
            } else if (kf_dt_is_float(t)) {
                double v = runit(&r) * 8.0 - 4.0;
                if (rchance(&r, 0.2))
                    v = (double)(rint_(&r, 9) - 4) * 0.5; /* ties and exact values */
                if (specials && rchance(&r, 0.06))
                    v = float_special(&r);
                put_float(t, a->data, e, v);
            } else {
                uint64_t v;
                if (kf_dt_is_sint(t))
                    v = (uint64_t)(int64_t)(rint_(&r, 101) - 50);
                else
                    v = (uint64_t)rint_(&r, 101);
                if (specials && rchance(&r, 0.08))
                    v = int_special(&r, t);
                put_int(t, a->data, e, v);
            }
        }
    }
    return KF_OK;
}

void kf_rg_free_inputs(kf_host_array *inputs, int n)
{
    for (int i = 0; i < n; i++) {
        free(inputs[i].data);
        inputs[i].data = NULL;
    }
}
