/* Pass schedule: put the plan's kernels in launch order (producers first;
 * among ready kernels the one whose first written node comes first in the
 * graph) and each kernel's lists in the canonical order plan.h documents,
 * then check the whole plan.  The same graph always gives the same plan. */
#include "plan.h"

#include <stdlib.h>
#include <string.h>

/* Sort outs: graph outputs by their place in the output list, then the
 * rest by node id (insertion sort: kernels write few nodes). */
static void sort_outs(kf_kernel *k, const int32_t *outpos)
{
    for (int32_t i = 1; i < k->nouts; i++) {
        int32_t v = k->outs[i], j = i;
        while (j > 0) {
            int32_t u = k->outs[j - 1];
            bool after = outpos[u] > outpos[v] || (outpos[u] == outpos[v] && u > v);
            if (!after)
                break;
            k->outs[j] = u;
            j--;
        }
        k->outs[j] = v;
    }
}

/* Min-heap of kernel indices by (first written node, index). */
typedef struct heap {
    int32_t *v;
    int32_t n;
    const int32_t *first;
} heap;

static bool before(const heap *h, int32_t a, int32_t b)
{
    return h->first[a] != h->first[b] ? h->first[a] < h->first[b] : a < b;
}

static void heap_push(heap *h, int32_t x)
{
    int32_t i = h->n++;
    while (i > 0 && before(h, x, h->v[(i - 1) / 2])) {
        h->v[i] = h->v[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->v[i] = x;
}

static int32_t heap_pop(heap *h)
{
    int32_t top = h->v[0], x = h->v[--h->n], i = 0;
    for (;;) {
        int32_t c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && before(h, h->v[c + 1], h->v[c]))
            c++;
        if (!before(h, h->v[c], x))
            break;
        h->v[i] = h->v[c];
        i = c;
    }
    if (h->n > 0)
        h->v[i] = x;
    return top;
}

kf_status kf_pass_schedule(kf_pipeline *p)
{
    kf_plan *pl = p->plan;
    if (!pl) {
        snprintf(p->err, sizeof p->err, "schedule: no plan (partition has not run)");
        return KF_ERR_INVALID_ARG;
    }
    const kf_graph *g = pl->g;
    int32_t nk = pl->nkernels, nn = g->nnodes;
    size_t n1 = (size_t)nn + 1, k1 = (size_t)nk + 1;
    int32_t *outpos = malloc(n1 * sizeof *outpos), *producer = malloc(n1 * sizeof *producer);
    uint32_t *mark = calloc(n1, sizeof *mark);
    int32_t *first = malloc(k1 * sizeof *first), *indeg = calloc(k1, sizeof *indeg);
    int32_t *estart = calloc(k1 + 1, sizeof *estart), *order = malloc(k1 * sizeof *order);
    int32_t *heapv = malloc(k1 * sizeof *heapv);
    int32_t *edges = NULL;
    kf_kernel *sorted = NULL;
    kf_status s = KF_ERR_NO_MEMORY;
    if (!outpos || !producer || !mark || !first || !indeg || !estart || !order || !heapv)
        goto done;
    for (int32_t n = 0; n < nn; n++) {
        outpos[n] = INT32_MAX;
        producer[n] = -1;
    }
    for (int32_t i = 0; i < g->noutputs; i++)
        outpos[g->outputs[i]] = i;

    /* each kernel's lists in canonical order */
    for (int32_t i = 0; i < nk; i++) {
        kf_kernel *k = &pl->kernels[i];
        kf_fuse_sort_i32(k->nodes, k->nnodes);
        sort_outs(k, outpos);
        if (kf_kernel_fill(g, k, mark, (uint32_t)i + 1) != KF_OK)
            goto done;
        first[i] = INT32_MAX;
        for (int32_t j = 0; j < k->nouts; j++) {
            int32_t o = k->outs[j];
            if (o < first[i])
                first[i] = o;
            if (kf_ir_op((kf_op)g->nodes[o].op)->kind != KF_KIND_LEAF)
                producer[o] = i;
        }
    }

    /* kernel edges producer -> reader, as adjacency lists */
    size_t nedges = 0;
    for (int32_t i = 0; i < nk; i++)
        for (int32_t j = 0; j < pl->kernels[i].nargs; j++) {
            int32_t q = producer[pl->kernels[i].args[j]];
            if (q >= 0 && q != i) {
                estart[q + 1]++;
                indeg[i]++;
                nedges++;
            }
        }
    for (int32_t i = 0; i < nk; i++)
        estart[i + 1] += estart[i];
    edges = malloc((nedges + 1) * sizeof *edges);
    int32_t *fillpos = malloc(k1 * sizeof *fillpos);
    if (!edges || !fillpos) {
        free(fillpos);
        goto done;
    }
    memcpy(fillpos, estart, (size_t)nk * sizeof *fillpos);
    for (int32_t i = 0; i < nk; i++)
        for (int32_t j = 0; j < pl->kernels[i].nargs; j++) {
            int32_t q = producer[pl->kernels[i].args[j]];
            if (q >= 0 && q != i)
                edges[fillpos[q]++] = i;
        }
    free(fillpos);

    heap h = { heapv, 0, first };
    for (int32_t i = 0; i < nk; i++)
        if (indeg[i] == 0)
            heap_push(&h, i);
    int32_t done_n = 0;
    while (h.n > 0) {
        int32_t i = heap_pop(&h);
        order[done_n++] = i;
        for (int32_t e = estart[i]; e < estart[i + 1]; e++)
            if (--indeg[edges[e]] == 0)
                heap_push(&h, edges[e]);
    }
    if (done_n != nk) {
        snprintf(p->err, sizeof p->err, "schedule: the kernels of graph '%s' read each other in a cycle", g->name);
        s = KF_ERR_INVALID_ARG;
        goto done;
    }
    sorted = malloc(k1 * sizeof *sorted);
    if (!sorted)
        goto done;
    for (int32_t i = 0; i < nk; i++)
        sorted[i] = pl->kernels[order[i]];
    if (nk > 0)
        memcpy(pl->kernels, sorted, (size_t)nk * sizeof *sorted);
    s = kf_plan_check(pl, &p->opt, p->err, sizeof p->err);
    if (s != KF_OK) {
        char msg[sizeof p->err];
        snprintf(msg, sizeof msg, "%s", p->err);
        snprintf(p->err, sizeof p->err, "schedule: inconsistent plan (a kfuse bug): %.440s", msg);
    }

done:
    if (s == KF_ERR_NO_MEMORY && !p->err[0])
        snprintf(p->err, sizeof p->err, "schedule: out of memory");
    free(outpos);
    free(producer);
    free(mark);
    free(first);
    free(indeg);
    free(estart);
    free(order);
    free(heapv);
    free(edges);
    free(sorted);
    return s;
}
