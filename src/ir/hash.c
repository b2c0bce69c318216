/* Canonical structural hash of a graph (XXH3-128).
 * A node's hash covers its op, dtype, shape, attributes and its operands'
 * hashes, never names; so equal DAGs hash equal whatever the names or the
 * order of independent statements.  docs/ir.md gives the byte encoding. */
#include "ir.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

/* Little-endian serialisation buffer for one node. */
typedef struct enc {
    unsigned char b[64 + 16 * KF_MAX_RANK + 3 * 16];
    size_t n;
} enc;

static void put_u64(enc *e, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        e->b[e->n++] = (unsigned char)(v >> (8 * i));
}
static void put_str(enc *e, const char *s)
{
    size_t n = strlen(s);
    e->b[e->n++] = (unsigned char)n;
    memcpy(e->b + e->n, s, n);
    e->n += n;
}
static void put_hash(enc *e, XXH128_hash_t h)
{
    put_u64(e, h.low64);
    put_u64(e, h.high64);
}

/* Canonical symbol numbers: first appearance scanning the inputs in order,
 * then a depth-first walk from the outputs (operands left to right). */
typedef struct symnum {
    int32_t *num; /* per graph symbol, -1 until seen */
    int32_t next;
} symnum;

static void number_syms(const kf_irnode *x, symnum *sn)
{
    for (int i = 0; i < x->rank; i++)
        if (x->dims[i] < 0 && sn->num[KF_IR_SYM_INDEX(x->dims[i])] < 0)
            sn->num[KF_IR_SYM_INDEX(x->dims[i])] = sn->next++;
}

/* Marks nodes reachable from the outputs and numbers symbols in DFS
 * pre-order, with an explicit stack (graphs may be deep). */
static bool walk(const kf_graph *g, uint8_t *live, symnum *sn)
{
    int32_t *stack = malloc(((size_t)g->nnodes + 1) * sizeof *stack);
    if (!stack)
        return false;
    for (int32_t o = 0; o < g->noutputs; o++) {
        int32_t sp = 0;
        stack[sp++] = g->outputs[o];
        while (sp > 0) {
            int32_t n = stack[--sp];
            if (live[n])
                continue;
            live[n] = 1;
            const kf_irnode *x = &g->nodes[n];
            number_syms(x, sn);
            for (int a = x->nargs - 1; a >= 0; a--)
                if (!live[x->args[a]])
                    stack[sp++] = x->args[a];
        }
    }
    free(stack);
    return true;
}

static XXH128_hash_t node_hash(const kf_irnode *x, const symnum *sn, const XXH128_hash_t *h)
{
    enc e = { .n = 0 };
    put_str(&e, kf_ir_ops[x->op].name);
    e.b[e.n++] = kf_ir_ops[x->op].kind;
    put_str(&e, kf_dtype_name((kf_dtype)x->dtype));
    e.b[e.n++] = x->rank;
    for (int i = 0; i < x->rank; i++) {
        int64_t d = x->dims[i];
        e.b[e.n++] = d < 0;
        put_u64(&e, d < 0 ? (uint64_t)sn->num[KF_IR_SYM_INDEX(d)] : (uint64_t)d);
    }
    switch (x->op) {
    case KF_OP_INPUT:
        e.b[e.n++] = x->scalar;
        put_u64(&e, (uint64_t)x->param);
        break;
    case KF_OP_CONST: {
        uint64_t bits;
        if (kf_dt_is_float((kf_dtype)x->dtype) && x->lit.f != x->lit.f)
            bits = 0x7ff8000000000000ull; /* every NaN literal is the same value */
        else
            memcpy(&bits, &x->lit, 8);
        put_u64(&e, bits);
        break;
    }
    case KF_OP_IOTA:
        e.b[e.n++] = (unsigned char)x->axis;
        break;
    default:
        if (kf_ir_ops[x->op].kind == KF_KIND_REDUCE) {
            e.b[e.n++] = x->axes;
            e.b[e.n++] = x->keepdims;
        }
        break;
    }
    e.b[e.n++] = x->nargs;
    for (int a = 0; a < x->nargs; a++)
        put_hash(&e, h[x->args[a]]);
    return XXH3_128bits(e.b, e.n);
}

kf_status kf_graph_hash(const kf_graph *g, kf_hash *out)
{
    if (!g || !out)
        return KF_ERR_INVALID_ARG;
    if (g->status != KF_OK)
        return g->status;
    kf_graph *mg = (kf_graph *)g; /* only the cache below is written */
    uint64_t at = (uint64_t)g->nnodes << 32 | (uint64_t)(uint32_t)g->noutputs | 1ull << 63;
    if (atomic_load_explicit(&mg->hash_at, memory_order_acquire) == at) {
        out->lo = atomic_load_explicit(&mg->hash_lo, memory_order_relaxed);
        out->hi = atomic_load_explicit(&mg->hash_hi, memory_order_relaxed);
        return KF_OK;
    }
    kf_status st = KF_ERR_NO_MEMORY;
    uint8_t *live = calloc((size_t)g->nnodes + 1, 1);
    int32_t *num = malloc(((size_t)g->nsyms + 1) * sizeof *num);
    XXH128_hash_t *h = malloc(((size_t)g->nnodes + 1) * sizeof *h);
    XXH3_state_t *state = XXH3_createState();
    if (!live || !num || !h || !state)
        goto done;
    symnum sn = { num, 0 };
    for (int32_t i = 0; i < g->nsyms; i++)
        num[i] = -1;
    for (int32_t i = 0; i < g->ninputs; i++)
        number_syms(&g->nodes[g->inputs[i]], &sn);
    if (!walk(g, live, &sn))
        goto done;
    /* Operands precede their users, so one pass in index order suffices;
     * inputs are hashed even when unused: they are the signature. */
    for (int32_t i = 0; i < g->nnodes; i++)
        if (live[i] || g->nodes[i].op == KF_OP_INPUT)
            h[i] = node_hash(&g->nodes[i], &sn, h);

    XXH3_128bits_reset(state);
    static const char magic[] = "kfuse-graph-1";
    XXH3_128bits_update(state, magic, sizeof magic - 1);
    enc e = { .n = 0 };
    put_u64(&e, (uint64_t)g->ninputs);
    put_u64(&e, (uint64_t)g->noutputs);
    XXH3_128bits_update(state, e.b, e.n);
    for (int32_t i = 0; i < g->ninputs; i++) {
        e.n = 0;
        put_hash(&e, h[g->inputs[i]]);
        XXH3_128bits_update(state, e.b, e.n);
    }
    for (int32_t i = 0; i < g->noutputs; i++) {
        e.n = 0;
        put_hash(&e, h[g->outputs[i]]);
        XXH3_128bits_update(state, e.b, e.n);
    }
    XXH128_hash_t r = XXH3_128bits_digest(state);
    out->lo = r.low64;
    out->hi = r.high64;
    atomic_store_explicit(&mg->hash_lo, out->lo, memory_order_relaxed);
    atomic_store_explicit(&mg->hash_hi, out->hi, memory_order_relaxed);
    atomic_store_explicit(&mg->hash_at, at, memory_order_release);
    st = KF_OK;
done:
    XXH3_freeState(state);
    free(live);
    free(num);
    free(h);
    return st;
}
