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

/* The slot of node x in the table (open addressing over node ids + 1, 0
 * empty) of nodes of g: the one holding a node equal to x (*hit set), or
 * the empty one where x goes (*hit KF_NONE). */
static uint32_t probe(const kf_graph *g, const int32_t *slots, uint32_t cap, const kf_irnode *x, kf_node *hit)
{
    uint32_t j = (uint32_t)node_key(x) & (cap - 1);
    *hit = KF_NONE;
    for (; slots[j]; j = (j + 1) & (cap - 1))
        if (node_equal(&g->nodes[slots[j] - 1], x)) {
            *hit = slots[j] - 1;
            break;
        }
    return j;
}

/* Does a computed node of g equal an earlier one?  When none does, the
 * rebuild would copy g node for node (literals are interned in every
 * graph, so none merge either), so the pass leaves g as it is.  slots is
 * left empty. */
static bool any_equal(const kf_graph *g, int32_t *slots, uint32_t cap)
{
    bool found = false;
    for (int32_t i = 0; i < g->nnodes && !found; i++) {
        const kf_irnode *x = &g->nodes[i];
        kf_node hit;
        if (kf_ir_op((kf_op)x->op)->kind == KF_KIND_LEAF)
            continue;
        uint32_t j = probe(g, slots, cap, x, &hit);
        found = hit != KF_NONE;
        slots[j] = i + 1;
    }
    memset(slots, 0, cap * sizeof *slots);
    return found;
}

kf_status kf_pass_cse(kf_pipeline *p)
{
    const kf_graph *old = p->g;
    /* at least twice the nodes, so the table never fills */
    uint32_t cap = 16;
    while (cap < (uint32_t)old->nnodes * 2u + 2u)
        cap *= 2;
    int32_t *slots = calloc(cap, sizeof *slots);
    if (!slots) {
        snprintf(p->err, sizeof p->err, "cse: out of memory for %u slots", cap);
        return KF_ERR_NO_MEMORY;
    }
    if (!any_equal(old, slots, cap)) {
        free(slots);
        return KF_OK;
    }
    kf_rebuild rb;
    kf_status s = kf_rebuild_begin(p, &rb);
    if (s != KF_OK) {
        free(slots);
        return s;
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
        kf_node hit;
        uint32_t j = probe(g, slots, cap, &proto, &hit);
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
