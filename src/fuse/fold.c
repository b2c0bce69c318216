/* Pass fold: constant folding and exact algebraic identities.
 *
 * Rules every fold obeys:
 *  1. A fold never changes a result bit.  A node whose operands are all
 *     literals becomes a literal only when docs/ir.md defines its result
 *     exactly (integer and bool ops, casts, comparisons, and the correctly
 *     rounded float ops); the value comes from the reference interpreter
 *     itself (kf_interpret on a one-node graph), so folding cannot disagree
 *     with the oracle.  Transcendental float ops, rsqrt and reductions are
 *     never folded: backends may differ from the host libm there.
 *  2. Identities hold for every value: x+0 x-0 x*1 x/1 x|0 x^0 x&~0 x<<0
 *     x>>0 for integers, x|false x^false x&true for bool, cast to the same
 *     dtype, select with a literal condition or two equal branches,
 *     neg(neg x) for integers, not(not x).  Float identities are not exact
 *     (x+0 turns -0 into +0, x*1 quietens a signalling NaN, x-x is NaN for
 *     inf) and are used only with fast_math: x*1 x/1 x+0 x-0, and x-x -> 0
 *     for a rank-0 x.  x+x+x+x+x stays four adds.
 *  3. A fold keeps the node's dtype and shape: the replacement must have
 *     both exactly (a literal is rank 0, so it replaces only rank-0 nodes).
 *  4. A fold only ever replaces a node by an existing node or a literal; it
 *     never adds a computed node.  So one pass in node order, with operands
 *     already folded, reaches the fixed point and always terminates.
 *  5. Graph outputs keep their names (plan.h, graph rewriting): an output
 *     is replaced only by a computed node that no other output is on,
 *     never by a leaf; otherwise it stays as it is.
 *  6. A fold never drops a take: the interpreter checks the indices of
 *     every take an output is on (KF_ERR_INDEX), so a select whose other
 *     branch (literal condition) or whose condition (equal branches)
 *     depends on a take stays, as does x - x of such an x. */
#include "plan.h"
#include "half.h"

#include <stdlib.h>
#include <string.h>

/* -- Literals ------------------------------------------------------------------ */

static bool is_lit(const kf_graph *g, kf_node n) { return g->nodes[n].op == KF_OP_CONST; }

static bool lit_is_zero(const kf_irnode *c)
{
    return kf_dt_is_float((kf_dtype)c->dtype) ? c->lit.f == 0.0 : c->lit.u == 0;
}

static bool lit_is_one(const kf_irnode *c)
{
    kf_dtype t = (kf_dtype)c->dtype;
    if (kf_dt_is_float(t))
        return c->lit.f == 1.0;
    return kf_dt_is_sint(t) ? c->lit.i == 1 : c->lit.u == 1;
}

static bool lit_is_all_ones(const kf_irnode *c)
{
    kf_dtype t = (kf_dtype)c->dtype;
    if (t == KF_BOOL)
        return c->lit.u == 1;
    if (kf_dt_is_sint(t))
        return c->lit.i == -1;
    if (kf_dt_is_uint(t)) {
        size_t w = kf_dtype_size(t) * 8;
        return c->lit.u == (w == 64 ? UINT64_MAX : ((uint64_t)1 << w) - 1);
    }
    return false;
}

/* Ops whose float result is exactly defined (correctly rounded or exact). */
static bool float_exact(kf_op op)
{
    switch (op) {
    case KF_OP_NEG: case KF_OP_ABS: case KF_OP_SIGN: case KF_OP_SQRT:
    case KF_OP_FLOOR: case KF_OP_CEIL: case KF_OP_ROUND: case KF_OP_TRUNC: case KF_OP_RCP:
    case KF_OP_ISNAN: case KF_OP_ISINF: case KF_OP_ISFINITE:
    case KF_OP_ADD: case KF_OP_SUB: case KF_OP_MUL: case KF_OP_DIV: case KF_OP_MOD:
    case KF_OP_MIN: case KF_OP_MAX: case KF_OP_COPYSIGN:
    case KF_OP_LT: case KF_OP_LE: case KF_OP_GT: case KF_OP_GE: case KF_OP_EQ: case KF_OP_NE:
    case KF_OP_SELECT: case KF_OP_FMA: case KF_OP_CLAMP: case KF_OP_CAST:
        return true;
    default:
        return false;
    }
}

static bool foldable(const kf_graph *g, const kf_irnode *x)
{
    if (kf_ir_op((kf_op)x->op)->kind != KF_KIND_EW || x->nargs == 0 || x->rank != 0)
        return false;
    bool any_float = kf_dt_is_float((kf_dtype)x->dtype);
    for (int a = 0; a < x->nargs; a++) {
        if (!is_lit(g, x->args[a]))
            return false;
        any_float |= kf_dt_is_float((kf_dtype)g->nodes[x->args[a]].dtype);
    }
    return !any_float || float_exact((kf_op)x->op);
}

/* A literal in graph t with exactly the payload bits v. */
static kf_node lit_exact(kf_graph *t, kf_dtype dt, kf_lit v)
{
    kf_node n = kf_dt_is_float(dt) ? kf_lit_f(t, dt, v.f) : kf_dt_is_sint(dt) ? kf_lit_i(t, dt, v.i) : kf_lit_u(t, dt, v.u);
    if (n != KF_NONE && memcmp(&t->nodes[n].lit, &v, sizeof v) != 0) {
        kf_irnode c = { .op = KF_OP_CONST, .dtype = (uint8_t)dt, .lit = v };
        n = kf_ir_add(t, &c);
    }
    return n;
}

/* The element of dtype t at p as a literal payload; false when the builder
 * could not hold those exact bits (a signalling NaN). */
static bool lit_from_element(kf_dtype t, const void *p, kf_lit *out)
{
    kf_lit v = { .u = 0 };
    switch (t) {
    case KF_BOOL: case KF_U8: { uint8_t e; memcpy(&e, p, 1); v.u = e; break; }
    case KF_U16: { uint16_t e; memcpy(&e, p, 2); v.u = e; break; }
    case KF_U32: { uint32_t e; memcpy(&e, p, 4); v.u = e; break; }
    case KF_U64: memcpy(&v.u, p, 8); break;
    case KF_I8: { int8_t e; memcpy(&e, p, 1); v.i = e; break; }
    case KF_I16: { int16_t e; memcpy(&e, p, 2); v.i = e; break; }
    case KF_I32: { int32_t e; memcpy(&e, p, 4); v.i = e; break; }
    case KF_I64: memcpy(&v.i, p, 8); break;
    case KF_F16: {
        uint16_t h;
        memcpy(&h, p, 2);
        if (kf_f32_to_f16(kf_f16_to_f32(h)) != h)
            return false;
        v.f = kf_f16_to_f32(h);
        break;
    }
    case KF_BF16: {
        uint16_t h;
        memcpy(&h, p, 2);
        if (kf_f32_to_bf16(kf_bf16_to_f32(h)) != h)
            return false;
        v.f = kf_bf16_to_f32(h);
        break;
    }
    case KF_F32: {
        float f;
        memcpy(&f, p, 4);
        v.f = f;
        float back = (float)v.f;
        if (memcmp(&back, &f, 4) != 0)
            return false;
        break;
    }
    case KF_F64: memcpy(&v.f, p, 8); break;
    default: return false;
    }
    *out = v;
    return true;
}

/* Evaluate the all-literal node x (operands in g) with the interpreter.
 * KF_OK with *ok set when it gives a value; KF_ERR_NO_MEMORY only when
 * memory ran out; anything else leaves the node unfolded. */
static kf_status eval_const(const kf_graph *g, const kf_irnode *x, kf_lit *val, bool *ok)
{
    *ok = false;
    kf_graph *t = kf_graph_new("fold");
    if (!t)
        return KF_ERR_NO_MEMORY;
    kf_irnode q = *x;
    q.name = NULL;
    for (int a = 0; a < x->nargs; a++) {
        const kf_irnode *c = &g->nodes[x->args[a]];
        q.args[a] = lit_exact(t, (kf_dtype)c->dtype, c->lit);
    }
    kf_node n = t->status == KF_OK ? kf_ir_add(t, &q) : KF_NONE;
    if (n != KF_NONE)
        kf_output(t, n, "r");
    kf_status s = t->status;
    if (s != KF_OK) {
        kf_graph_free(t);
        return s == KF_ERR_NO_MEMORY ? s : KF_OK;
    }
    kf_host_array out;
    char err[256];
    s = kf_interpret(t, NULL, 0, &out, 1, err, sizeof err);
    if (s == KF_OK) {
        if (out.dtype == (kf_dtype)x->dtype && out.rank == 0)
            *ok = lit_from_element(out.dtype, out.data, val);
        kf_free(out.data);
    } else if (s == KF_ERR_INDEX) {
        kf_free(out.data);
    }
    kf_graph_free(t);
    return s == KF_ERR_NO_MEMORY ? s : KF_OK;
}

/* -- Identities ------------------------------------------------------------------ */

/* The existing node that x (operands in g) equals, or KF_NONE. */
static kf_node identity(const kf_graph *g, const kf_irnode *x, bool fast_math)
{
    kf_dtype t = (kf_dtype)x->dtype;
    bool in = kf_dt_is_int(t), fl = kf_dt_is_float(t);
    const int32_t *a = x->args;
    const kf_irnode *c0 = x->nargs > 0 && is_lit(g, a[0]) ? &g->nodes[a[0]] : NULL;
    const kf_irnode *c1 = x->nargs > 1 && is_lit(g, a[1]) ? &g->nodes[a[1]] : NULL;
    bool exact = in || (fl && fast_math);
    switch ((kf_op)x->op) {
    case KF_OP_ADD:
        if (exact && c1 && lit_is_zero(c1))
            return a[0];
        if (exact && c0 && lit_is_zero(c0))
            return a[1];
        return KF_NONE;
    case KF_OP_SUB:
        if (exact && c1 && lit_is_zero(c1))
            return a[0];
        return KF_NONE;
    case KF_OP_MUL:
        if (exact && c1 && lit_is_one(c1))
            return a[0];
        if (exact && c0 && lit_is_one(c0))
            return a[1];
        return KF_NONE;
    case KF_OP_DIV:
        if (exact && c1 && lit_is_one(c1))
            return a[0];
        return KF_NONE;
    case KF_OP_OR:
    case KF_OP_XOR:
        if (c1 && lit_is_zero(c1))
            return a[0];
        if (c0 && lit_is_zero(c0))
            return a[1];
        return KF_NONE;
    case KF_OP_AND:
        if (c1 && lit_is_all_ones(c1))
            return a[0];
        if (c0 && lit_is_all_ones(c0))
            return a[1];
        return KF_NONE;
    case KF_OP_SHL:
    case KF_OP_SHR:
        if (c1 && lit_is_zero(c1))
            return a[0];
        return KF_NONE;
    case KF_OP_CAST:
        return g->nodes[a[0]].dtype == x->dtype ? a[0] : KF_NONE;
    case KF_OP_SELECT:
        if (c0)
            return c0->lit.u ? a[1] : a[2];
        if (a[1] == a[2])
            return a[1];
        return KF_NONE;
    case KF_OP_NEG:
        if (in && g->nodes[a[0]].op == KF_OP_NEG)
            return g->nodes[a[0]].args[0];
        return KF_NONE;
    case KF_OP_NOT:
        if (g->nodes[a[0]].op == KF_OP_NOT)
            return g->nodes[a[0]].args[0];
        return KF_NONE;
    default:
        return KF_NONE;
    }
}

/* -- The pass ---------------------------------------------------------------------- */

/* The operand that select x's identity leaves out (x in the old graph, q:
 * x with its operands in the new graph g): the other branch of a literal
 * condition, else the condition between equal branches.  The other
 * identities leave out only literals or keep what they unwrap. */
static kf_node select_left_out(const kf_graph *g, const kf_irnode *x, const kf_irnode *q)
{
    return is_lit(g, q->args[0]) ? x->args[g->nodes[q->args[0]].lit.u ? 2 : 1] : x->args[0];
}

/* x - x -> 0 for a rank-0 float (fast_math only). */
static bool self_sub(const kf_irnode *x)
{
    return x->op == KF_OP_SUB && x->args[0] == x->args[1] && x->rank == 0 && kf_dt_is_float((kf_dtype)x->dtype);
}

/* Could some rule apply to a computed node of g?  When none can, the
 * rebuild would copy g node for node (literals are interned in every
 * graph, so none merge either), so the pass leaves g as it is: most graphs
 * have nothing to fold. */
static bool any_candidate(const kf_graph *g, bool fast_math)
{
    for (int32_t i = 0; i < g->nnodes; i++) {
        const kf_irnode *x = &g->nodes[i];
        if (kf_ir_op((kf_op)x->op)->kind != KF_KIND_LEAF &&
            (identity(g, x, fast_math) != KF_NONE || (fast_math && self_sub(x)) || foldable(g, x)))
            return true;
    }
    return false;
}

kf_status kf_pass_fold(kf_pipeline *p)
{
    const kf_graph *old = p->g;
    if (!any_candidate(old, p->opt.fast_math))
        return KF_OK;
    kf_rebuild rb;
    kf_status s = kf_rebuild_begin(p, &rb);
    if (s != KF_OK)
        return s;
    kf_graph *g = rb.g;
    bool *takes = calloc((size_t)old->nnodes + 1, sizeof *takes);   /* old node i depends on a take */
    if (!takes) {
        kf_rebuild_abort(&rb);
        snprintf(p->err, sizeof p->err, "fold: out of memory");
        return KF_ERR_NO_MEMORY;
    }
    for (int32_t i = 0; i < old->nnodes; i++) {
        const kf_irnode *x = &old->nodes[i];
        takes[i] = x->op == KF_OP_TAKE;
        for (int a = 0; a < x->nargs; a++)
            takes[i] = takes[i] || takes[x->args[a]];
    }
    for (int32_t i = 0; i < old->nnodes && s == KF_OK && g->status == KF_OK; i++) {
        const kf_irnode *x = &old->nodes[i];
        if (kf_ir_op((kf_op)x->op)->kind == KF_KIND_LEAF) {
            kf_rebuild_copy(&rb, i);
            continue;
        }
        kf_irnode q = *x;
        q.name = NULL;
        for (int a = 0; a < x->nargs; a++)
            q.args[a] = rb.map[x->args[a]];

        kf_node r = identity(g, &q, p->opt.fast_math);
        if (r != KF_NONE && x->op == KF_OP_SELECT && takes[select_left_out(g, x, &q)])
            r = KF_NONE;   /* rule 6 */
        if (r == KF_NONE && p->opt.fast_math && self_sub(&q) && !rb.is_out[i] && !takes[x->args[0]])
            r = kf_rebuild_lit(&rb, (kf_dtype)q.dtype, (kf_lit){ .f = 0.0 });
        if (r == KF_NONE && !rb.is_out[i] && foldable(g, &q)) {
            kf_lit v;
            bool ok;
            s = eval_const(g, &q, &v, &ok);
            if (s == KF_OK && ok)
                r = kf_rebuild_lit(&rb, (kf_dtype)q.dtype, v);
        }
        if (s != KF_OK || g->status != KF_OK)
            break;
        if (r != KF_NONE && kf_rebuild_replace(&rb, i, r))
            continue;
        kf_rebuild_add(&rb, i, &q);
    }
    free(takes);
    if (s == KF_OK && g->status != KF_OK)
        s = g->status;
    if (s != KF_OK) {
        if (s == KF_ERR_NO_MEMORY && g->status == KF_OK)
            snprintf(p->err, sizeof p->err, "fold: out of memory evaluating a literal");
        else
            snprintf(p->err, sizeof p->err, "fold: %.480s", g->err);
        kf_rebuild_abort(&rb);
        return s;
    }
    return kf_rebuild_finish(p, &rb);
}
