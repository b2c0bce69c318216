/* Pass dce: drop every node that no graph output depends on.  Inputs stay,
 * used or not: they are the graph's signature.  The canonical hash ignores
 * dead nodes, so it does not change. */
#include "plan.h"

#include <stdlib.h>

kf_status kf_pass_dce(kf_pipeline *p)
{
    const kf_graph *g = p->g;
    uint8_t *live = calloc((size_t)g->nnodes + 1, 1);
    if (!live) {
        snprintf(p->err, sizeof p->err, "dce: out of memory");
        return KF_ERR_NO_MEMORY;
    }
    for (int32_t i = 0; i < g->noutputs; i++)
        live[g->outputs[i]] = 1;
    /* operands come before their users: one backward sweep marks the cone */
    int32_t dead = 0;
    for (int32_t n = g->nnodes - 1; n >= 0; n--) {
        const kf_irnode *x = &g->nodes[n];
        if (x->op == KF_OP_INPUT)
            live[n] = 1;
        if (!live[n]) {
            dead++;
            continue;
        }
        for (int a = 0; a < x->nargs; a++)
            live[x->args[a]] = 1;
    }
    if (dead == 0) {
        free(live);
        return KF_OK;
    }
    kf_rebuild rb;
    kf_status s = kf_rebuild_begin(p, &rb);
    if (s != KF_OK) {
        free(live);
        return s;
    }
    for (int32_t n = 0; s == KF_OK && n < g->nnodes; n++)
        if (live[n] && kf_rebuild_copy(&rb, n) == KF_NONE)
            s = rb.g->status;
    free(live);
    if (s != KF_OK) {
        snprintf(p->err, sizeof p->err, "dce: %.480s", rb.g->err);
        kf_rebuild_abort(&rb);
        return s;
    }
    return kf_rebuild_finish(p, &rb);
}
