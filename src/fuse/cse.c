/* Pass cse: structurally equal nodes (op, dtype, shape, attributes, the
 * same operands, in sorted order for commutative ops) become one.  The first
 * keeps its name; a graph output is merged into an earlier equal node only
 * when no other output is on it (an output keeps its own node otherwise).
 * Literals are interned by the rewrite already; inputs never merge. */
#include "plan.h"

#include <stdlib.h>
#include <string.h>

/* The operands as compared: sorted for a commutative op. */
static void key_args(const kf_irnode *x, int32_t *a)
{
    for (int i = 0; i < 3; i++)
        a[i] = i < x->nargs ? x->args[i] : -1;
    if ((kf_ir_op((kf_op)x->op)->flags & KF_OPF_COMM) && x->nargs == 2 && a[0] > a[1]) {
        int32_t t = a[0];
        a[0] = a[1];
        a[1] = t;
    }
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

static uint64_t node_key(const kf_irnode *x)
{
    int32_t a[3];
    key_args(x, a);
    uint64_t h = mix(x->op, x->dtype);
    h = mix(h, x->rank);
    for (int i = 0; i < x->rank; i++)
        h = mix(h, (uint64_t)x->dims[i]);
    for (int i = 0; i < 3; i++)
        h = mix(h, (uint64_t)(uint32_t)a[i]);
    kf_kind k = (kf_kind)kf_ir_op((kf_op)x->op)->kind;
    if (k == KF_KIND_REDUCE)
        h = mix(mix(h, x->axes), x->keepdims);
    if (x->op == KF_OP_IOTA)
        h = mix(h, (uint64_t)(uint8_t)x->axis);
    return h;
}

static bool node_equal(const kf_irnode *x, const kf_irnode *y)
{
    if (x->op != y->op || x->dtype != y->dtype || x->rank != y->rank || x->nargs != y->nargs)
        return false;
    if (memcmp(x->dims, y->dims, x->rank * sizeof x->dims[0]) != 0)
        return false;
    int32_t a[3], b[3];
    key_args(x, a);
    key_args(y, b);
    if (memcmp(a, b, sizeof a) != 0)
        return false;
    if (kf_ir_op((kf_op)x->op)->kind == KF_KIND_REDUCE && (x->axes != y->axes || x->keepdims != y->keepdims))
        return false;
    if (x->op == KF_OP_IOTA && x->axis != y->axis)
        return false;
    return true;
}

kf_status kf_pass_cse(kf_pipeline *p)
{
    const kf_graph *old = p->g;
    kf_rebuild rb;
    kf_status s = kf_rebuild_begin(p, &rb);
    if (s != KF_OK)
        return s;
    /* open addressing over new node ids (+1, 0 empty); at least twice the
     * nodes, so it never fills */
    uint32_t cap = 16;
    while (cap < (uint32_t)old->nnodes * 2u + 2u)
        cap *= 2;
    int32_t *slots = calloc(cap, sizeof *slots);
    if (!slots) {
        kf_rebuild_abort(&rb);
        snprintf(p->err, sizeof p->err, "cse: out of memory for %u slots", cap);
        return KF_ERR_NO_MEMORY;
    }
    kf_graph *g = rb.g;
    for (int32_t i = 0; i < old->nnodes; i++) {
        const kf_irnode *x = &old->nodes[i];
        if (kf_ir_op((kf_op)x->op)->kind == KF_KIND_LEAF) {
            if (kf_rebuild_copy(&rb, i) == KF_NONE)
                break;
            continue;
        }
        kf_irnode proto = *x;
        proto.name = NULL;
        for (int a = 0; a < x->nargs; a++)
            proto.args[a] = rb.map[x->args[a]];
        /* dtype and shape as the copy will have them: operands map to
         * nodes of the same dtype and shape, so the old node's stand */
        uint64_t h = node_key(&proto);
        uint32_t j = (uint32_t)h & (cap - 1);
        kf_node hit = KF_NONE;
        for (; slots[j]; j = (j + 1) & (cap - 1))
            if (node_equal(&g->nodes[slots[j] - 1], &proto)) {
                hit = slots[j] - 1;
                break;
            }
        if (hit != KF_NONE && kf_rebuild_replace(&rb, i, hit))
            continue;
        kf_node n = kf_rebuild_add(&rb, i, &proto);
        if (n == KF_NONE)
            break;
        if (hit == KF_NONE)
            slots[j] = n + 1;
    }
    free(slots);
    kf_status s2 = g->status;
    if (s2 != KF_OK) {
        snprintf(p->err, sizeof p->err, "cse: %.480s", g->err);
        kf_rebuild_abort(&rb);
        return s2;
    }
    return kf_rebuild_finish(p, &rb);
}
