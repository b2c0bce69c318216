/* Graph rewriting shared by fold, cse and dce: build a new graph from the
 * old one in node order, each old node copied or replaced by a node already
 * built, then carry names and outputs over.  Rules in plan.h. */
#include "plan.h"

#include <stdlib.h>
#include <string.h>

static kf_status oom(kf_pipeline *p, const char *what)
{
    snprintf(p->err, sizeof p->err, "out of memory %s", what);
    return KF_ERR_NO_MEMORY;
}

kf_status kf_rebuild_begin(kf_pipeline *p, kf_rebuild *rb)
{
    kf_status s = kf_rebuild_start(p->g, rb);
    return s == KF_OK ? s : oom(p, "starting a graph rewrite");
}

kf_status kf_rebuild_start(const kf_graph *old, kf_rebuild *rb)
{
    memset(rb, 0, sizeof *rb);
    rb->old = old;
    rb->cap = old->nnodes + 16;
    rb->g = kf_graph_new(old->name);
    rb->map = malloc(((size_t)old->nnodes + 1) * sizeof *rb->map);
    rb->name = calloc((size_t)rb->cap, sizeof *rb->name);
    rb->claimed = calloc((size_t)rb->cap, 1);
    rb->is_out = calloc((size_t)old->nnodes + 1, 1);
    if (!rb->g || !rb->map || !rb->name || !rb->claimed || !rb->is_out)
        goto fail;
    rb->g->max_nodes = old->max_nodes;
    for (int32_t i = 0; i < old->nnodes; i++)
        rb->map[i] = KF_NONE;
    for (int32_t i = 0; i < old->noutputs; i++)
        rb->is_out[old->outputs[i]] = 1;
    /* same symbols at the same indices, so dims copy as they are */
    for (int32_t i = 0; i < old->nsyms; i++)
        if (kf_ir_symbol(rb->g, old->syms[i], strlen(old->syms[i])) != i)
            goto fail;
    if (old->ninputs > 0) {
        rb->g->inputs = malloc((size_t)old->ninputs * sizeof *rb->g->inputs);
        if (!rb->g->inputs)
            goto fail;
        rb->g->incap = rb->g->ninputs = old->ninputs;
        for (int32_t i = 0; i < old->ninputs; i++)
            rb->g->inputs[i] = KF_NONE;
    }
    return KF_OK;
fail:
    kf_rebuild_abort(rb);
    return KF_ERR_NO_MEMORY;
}

void kf_rebuild_abort(kf_rebuild *rb)
{
    kf_graph_free(rb->g);
    free(rb->map);
    free(rb->name);
    free(rb->claimed);
    free(rb->is_out);
    memset(rb, 0, sizeof *rb);
}

/* Grow the per-new-node arrays to cover node n. */
static bool cover(kf_rebuild *rb, kf_node n)
{
    if (n < rb->cap)
        return true;
    int32_t ncap = rb->cap * 2 > n + 1 ? rb->cap * 2 : n + 16;
    const char **nn = realloc(rb->name, (size_t)ncap * sizeof *nn);
    if (!nn)
        return false;
    rb->name = nn;
    uint8_t *nc = realloc(rb->claimed, (size_t)ncap);
    if (!nc)
        return false;
    rb->claimed = nc;
    for (int32_t j = rb->cap; j < ncap; j++) {
        rb->name[j] = NULL;
        rb->claimed[j] = 0;
    }
    rb->cap = ncap;
    return true;
}

static kf_node added(kf_rebuild *rb, kf_node n)
{
    if (n != KF_NONE && !cover(rb, n)) {
        kf_ir_fail(rb->g, KF_ERR_NO_MEMORY, n, "out of memory rewriting the graph");
        return KF_NONE;
    }
    return n;
}

kf_node kf_rebuild_lit(kf_rebuild *rb, kf_dtype t, kf_lit v)
{
    kf_graph *g = rb->g;
    kf_node n;
    if (kf_dt_is_float(t))
        n = kf_lit_f(g, t, v.f);
    else if (kf_dt_is_sint(t))
        n = kf_lit_i(g, t, v.i);
    else
        n = kf_lit_u(g, t, v.u);
    if (n == KF_NONE)
        return KF_NONE;
    if (memcmp(&g->nodes[n].lit, &v, sizeof v) != 0) {
        /* a payload the builder would round (a NaN it would quieten): add it
         * as it is, without interning, so the bits never change */
        kf_irnode x = { .op = KF_OP_CONST, .dtype = (uint8_t)t, .lit = v };
        n = kf_ir_add(g, &x);
    }
    return added(rb, n);
}

kf_node kf_rebuild_add(kf_rebuild *rb, int32_t i, const kf_irnode *proto)
{
    kf_node n = added(rb, kf_ir_add(rb->g, proto));
    if (n == KF_NONE)
        return KF_NONE;
    rb->map[i] = n;
    rb->name[n] = rb->old->nodes[i].name;
    rb->claimed[n] = rb->is_out[i];
    return n;
}

kf_node kf_rebuild_copy(kf_rebuild *rb, int32_t i)
{
    const kf_irnode *x = &rb->old->nodes[i];
    kf_graph *g = rb->g;
    if (x->op == KF_OP_CONST) {
        kf_node n = kf_rebuild_lit(rb, (kf_dtype)x->dtype, x->lit);
        if (n == KF_NONE)
            return KF_NONE;
        rb->map[i] = n;
        if (x->name && !rb->name[n])
            rb->name[n] = x->name;
        if (rb->is_out[i])
            rb->claimed[n] = 1;
        return n;
    }
    kf_irnode proto = *x;
    proto.name = NULL;
    for (int a = 0; a < x->nargs; a++) {
        proto.args[a] = rb->map[x->args[a]];
        if (proto.args[a] == KF_NONE) {
            kf_ir_fail(g, KF_ERR_INVALID_ARG, KF_NONE, "rewrite: node %d reads node %d, which was dropped", (int)i,
                       (int)x->args[a]);
            return KF_NONE;
        }
    }
    kf_node n = kf_rebuild_add(rb, i, &proto);
    if (n == KF_NONE || x->op != KF_OP_INPUT)
        return n;
    if (x->param < 0 || x->param >= g->ninputs || g->inputs[x->param] != KF_NONE) {
        kf_ir_fail(g, KF_ERR_INVALID_ARG, n, "rewrite: input %d has a bad parameter position %d", (int)i,
                   (int)x->param);
        return KF_NONE;
    }
    g->nodes[n].param = x->param;
    g->nodes[n].scalar = x->scalar;
    g->inputs[x->param] = n;
    return n;
}

static bool same_type(const kf_irnode *a, const kf_irnode *b)
{
    return a->dtype == b->dtype && a->rank == b->rank && memcmp(a->dims, b->dims, a->rank * sizeof a->dims[0]) == 0;
}

bool kf_rebuild_replace(kf_rebuild *rb, int32_t i, kf_node r)
{
    const kf_irnode *x = &rb->old->nodes[i], *y = &rb->g->nodes[r];
    bool leaf = kf_ir_op((kf_op)y->op)->kind == KF_KIND_LEAF;
    if (!same_type(x, y))
        return false;
    if (rb->is_out[i]) {
        if (leaf || rb->claimed[r])
            return false;
        rb->claimed[r] = 1;
        rb->name[r] = x->name;
    } else if (x->name && !rb->name[r] && !leaf) {
        rb->name[r] = x->name;
    }
    rb->map[i] = r;
    return true;
}

/* Name the nodes and add the outputs of rb->g (errors kept on it). */
static void complete(kf_rebuild *rb)
{
    kf_graph *g = rb->g;
    const kf_graph *old = rb->old;
    for (int32_t i = 0; i < g->ninputs && g->status == KF_OK; i++)
        if (g->inputs[i] == KF_NONE)
            kf_ir_fail(g, KF_ERR_INVALID_ARG, KF_NONE, "rewrite: input %d was dropped", (int)i);
    for (int32_t n = 0; n < g->nnodes && g->status == KF_OK; n++)
        if (rb->name[n])
            kf_set_name(g, n, rb->name[n]);
    /* outputs set directly: kf_output's duplicate check is linear per
     * call, and the rules above already keep one output per node (checked
     * here with 'claimed' as scratch) */
    if (g->status == KF_OK && old->noutputs > 0) {
        g->outputs = malloc((size_t)old->noutputs * sizeof *g->outputs);
        if (!g->outputs)
            kf_ir_fail(g, KF_ERR_NO_MEMORY, KF_NONE, "out of memory rewriting the outputs");
        else
            g->outcap = old->noutputs;
        memset(rb->claimed, 0, (size_t)rb->cap);
    }
    for (int32_t i = 0; i < old->noutputs && g->status == KF_OK; i++) {
        int32_t o = old->outputs[i], n = rb->map[o];
        const char *nm = old->nodes[o].name;
        if (n == KF_NONE) {
            kf_ir_fail(g, KF_ERR_INVALID_ARG, KF_NONE, "rewrite: output '%s' was dropped", nm);
        } else if (rb->claimed[n] || !g->nodes[n].name || strcmp(g->nodes[n].name, nm) != 0) {
            kf_ir_fail(g, KF_ERR_INVALID_ARG, n, "rewrite: output '%s' lost its node or its name", nm);
        } else {
            rb->claimed[n] = 1;
            g->outputs[g->noutputs++] = n;
        }
    }
}

kf_status kf_rebuild_finish(kf_pipeline *p, kf_rebuild *rb)
{
    complete(rb);
    kf_graph *g = rb->g;
    kf_status s = g->status;
    if (s != KF_OK) {
        snprintf(p->err, sizeof p->err, "%s", g->err);
        kf_rebuild_abort(rb);
        return s;
    }
    kf_graph_free(p->g);
    p->g = g;
    rb->g = NULL;
    kf_rebuild_abort(rb);
    return KF_OK;
}

kf_graph *kf_rebuild_end(kf_rebuild *rb)
{
    complete(rb);
    kf_graph *g = rb->g->status == KF_OK ? rb->g : NULL;
    if (g)
        rb->g = NULL;
    kf_rebuild_abort(rb);
    return g;
}
