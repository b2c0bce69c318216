/* Canonical form of a graph for cache keys: the generated source carries
 * node order (value numbering, kernel hashes) and intermediate value names
 * (comments), so two graphs that differ only there would compile to two
 * entries.  Rebuilding the graph in an order that depends only on its
 * structure, with intermediate names dropped, makes them one.  Names that a
 * program shows (graph, inputs, outputs, symbols) are kept: they appear in
 * kernel names and in kf_run's messages. */
#include "cache.h"

#include <stdlib.h>

/* Copy every node that output o depends on, operands first (left to
 * right), with an explicit stack: graphs may be deep. */
static bool copy_from(kf_rebuild *rb, int32_t o, int32_t *stack, uint8_t *argi)
{
    const kf_graph *g = rb->old;
    int32_t sp = 0;
    if (rb->map[o] != KF_NONE)
        return true;
    stack[sp++] = o;
    argi[o] = 0;
    while (sp > 0) {
        int32_t n = stack[sp - 1];
        const kf_irnode *x = &g->nodes[n];
        if (argi[n] < x->nargs) {
            int32_t a = x->args[argi[n]++];
            if (rb->map[a] == KF_NONE) {
                argi[a] = 0;
                stack[sp++] = a;
            }
            continue;
        }
        sp--;
        if (rb->map[n] == KF_NONE && kf_rebuild_copy(rb, n) == KF_NONE)
            return false;
    }
    return true;
}

kf_graph *kf_cache_canonical(const kf_graph *g)
{
    if (!g || g->status != KF_OK || g->noutputs == 0 || g->nnodes <= 0)
        return NULL;
    kf_rebuild rb;
    if (kf_rebuild_start(g, &rb) != KF_OK)
        return NULL;
    /* a node is on the stack at most once (pushed only while unmapped, and
     * a DAG has no path back to it), so nnodes entries suffice */
    int32_t *stack = malloc((size_t)g->nnodes * sizeof *stack);
    uint8_t *argi = malloc((size_t)g->nnodes);
    bool ok = stack && argi;
    for (int32_t i = 0; ok && i < g->ninputs; i++)
        ok = kf_rebuild_copy(&rb, g->inputs[i]) != KF_NONE;
    for (int32_t i = 0; ok && i < g->noutputs; i++)
        ok = copy_from(&rb, g->outputs[i], stack, argi);
    free(stack);
    free(argi);
    if (ok) {
        /* names on inputs and outputs only */
        for (int32_t n = 0; n < rb.g->nnodes; n++)
            rb.name[n] = NULL;
        for (int32_t i = 0; i < g->ninputs; i++)
            rb.name[rb.map[g->inputs[i]]] = g->nodes[g->inputs[i]].name;
        for (int32_t i = 0; i < g->noutputs; i++)
            rb.name[rb.map[g->outputs[i]]] = g->nodes[g->outputs[i]].name;
    }
    if (!ok || rb.g->status != KF_OK) {
        kf_rebuild_abort(&rb);
        return NULL;
    }
    return kf_rebuild_end(&rb);
}
