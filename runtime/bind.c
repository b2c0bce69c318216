/* Binding a run's views to a graph: dtype, rank and symbol checks, view
 * bounds and run-time shapes. */
#include "bind.h"

#include <stdio.h>
#include <string.h>

/* Smallest and largest element index a view touches, relative to buffer
 * element 0; false when it has no elements. */
static bool view_extent(const kf_view *v, int64_t off, int64_t *lo, int64_t *hi)
{
    *lo = *hi = off;
    for (int i = 0; i < v->rank; i++) {
        if (v->shape[i] == 0)
            return false;
        int64_t span = (v->shape[i] - 1) * v->strides[i];
        if (span < 0)
            *lo += span;
        else
            *hi += span;
    }
    return true;
}

size_t kf_rt_view_bytes(const kf_view *v)
{
    size_t es = kf_dtype_size(v->dtype);
    int64_t lo, hi;
    return view_extent(v, (int64_t)(v->offset / es), &lo, &hi) ? (size_t)(hi + 1) * es : 0;
}

kf_status kf_rt_check_view(kf_context *ctx, const kf_view *v, const char *what, const char *name)
{
    if (!v->buf)
        return kf_rt_fail(ctx, KF_ERR_INVALID_ARG, "%s '%s': the view has no buffer", what, name);
    if (v->buf->ctx != ctx)
        return kf_rt_fail(ctx, KF_ERR_CONTEXT, "%s '%s': the buffer belongs to another context", what, name);
    size_t es = kf_dtype_size(v->dtype);
    if (v->offset % es)
        return kf_rt_fail(ctx, KF_ERR_INVALID_ARG, "%s '%s': byte offset %zu is not a multiple of the %s size %zu",
                          what, name, v->offset, kf_dtype_name(v->dtype), es);
    for (int i = 0; i < v->rank; i++)
        if (v->shape[i] < 0 || v->shape[i] > (INT64_C(1) << 48) || v->strides[i] < -(INT64_C(1) << 48) ||
            v->strides[i] > (INT64_C(1) << 48))
            return kf_rt_fail(ctx, KF_ERR_SHAPE, "%s '%s': dimension %d has size %lld and stride %lld", what, name, i,
                              (long long)v->shape[i], (long long)v->strides[i]);
    int64_t lo, hi;
    if (view_extent(v, (int64_t)(v->offset / es), &lo, &hi) &&
        (lo < 0 || (uint64_t)(hi + 1) * es > v->buf->size))
        return kf_rt_fail(ctx, KF_ERR_SHAPE,
                          "%s '%s': the view reaches elements %lld to %lld, outside its %zu-byte buffer", what, name,
                          (long long)lo, (long long)hi, v->buf->size);
    return KF_OK;
}

kf_status kf_rt_bind_shape(kf_context *ctx, const kf_graph *g, const kf_irnode *x, kf_dtype dtype, int rank,
                           const int64_t *shape, const char *noun, int64_t *symval)
{
    if (dtype != (kf_dtype)x->dtype)
        return kf_rt_fail(ctx, KF_ERR_TYPE, "input '%s': the %s is %s, the graph wants %s", x->name, noun,
                          kf_dtype_name(dtype), kf_dtype_name((kf_dtype)x->dtype));
    if (rank != x->rank)
        return kf_rt_fail(ctx, KF_ERR_SHAPE, "input '%s': the %s has rank %d, the graph wants %d", x->name, noun, rank,
                          x->rank);
    for (int d = 0; d < x->rank; d++) {
        int64_t want = x->dims[d], got = shape[d];
        if (got < 0)
            return kf_rt_fail(ctx, KF_ERR_SHAPE, "input '%s': dimension %d is negative (%lld)", x->name, d,
                              (long long)got);
        if (want >= 0 && want != got)
            return kf_rt_fail(ctx, KF_ERR_SHAPE, "input '%s': dimension %d is %lld, the graph wants %lld", x->name, d,
                              (long long)got, (long long)want);
        if (want < 0) {
            int sy = KF_IR_SYM_INDEX(want);
            if (symval[sy] < 0)
                symval[sy] = got;
            else if (symval[sy] != got)
                return kf_rt_fail(ctx, KF_ERR_SHAPE,
                                  "symbol '%s' is %lld from an earlier input but %lld in input '%s' (dimension %d)",
                                  g->syms[sy], (long long)symval[sy], (long long)got, x->name, d);
        }
    }
    return KF_OK;
}

kf_status kf_rt_bind_inputs(kf_context *ctx, const kf_graph *g, const kf_view *in, int nin, int64_t *symval)
{
    for (int32_t s = 0; s < g->nsyms; s++)
        symval[s] = -1;
    int k = 0;
    for (int32_t i = 0; i < g->ninputs; i++) {
        const kf_irnode *x = &g->nodes[g->inputs[i]];
        if (x->scalar)
            continue;
        if (k >= nin)
            return kf_rt_fail(ctx, KF_ERR_INVALID_ARG, "graph '%s' takes more array inputs than the %d given", g->name,
                              nin);
        const kf_view *v = &in[k++];
        kf_status st = kf_rt_check_view(ctx, v, "input", x->name);
        if (st == KF_OK)
            st = kf_rt_bind_shape(ctx, g, x, v->dtype, v->rank, v->shape, "view", symval);
        if (st != KF_OK)
            return st;
    }
    if (k != nin)
        return kf_rt_fail(ctx, KF_ERR_INVALID_ARG, "graph '%s' takes %d array inputs, %d were given", g->name, k, nin);
    return KF_OK;
}

kf_status kf_rt_node_shape(kf_context *ctx, const kf_graph *g, int32_t node, const int64_t *symval, int64_t *shape)
{
    const kf_irnode *x = &g->nodes[node];
    for (int d = 0; d < x->rank; d++) {
        int64_t v = x->dims[d];
        if (v < 0) {
            v = symval[KF_IR_SYM_INDEX(x->dims[d])];
            if (v < 0)
                return kf_rt_fail(ctx, KF_ERR_SHAPE, "symbol '%s' (in the shape of '%s') is not bound by any input",
                                  g->syms[KF_IR_SYM_INDEX(x->dims[d])], x->name ? x->name : "an intermediate");
        }
        shape[d] = v;
    }
    return KF_OK;
}
