/* Binding views to a graph (bind.c). */
#ifndef KF_BIND_H
#define KF_BIND_H

#include "ir.h"
#include "runtime.h"

/* A view's dtype alignment, context and bounds; messages name what/name. */
kf_status kf_rt_check_view(kf_context *ctx, const kf_view *v, const char *what, const char *name);
/* The bytes of its buffer a checked view reaches: past its last element
 * (0 when it has none). */
size_t kf_rt_view_bytes(const kf_view *v);
/* Check one array input x's dtype, rank and dims (literal sizes, each
 * symbol bound to one size) and bind its symbols into symval; messages
 * call the caller's array 'the <noun>'. */
kf_status kf_rt_bind_shape(kf_context *ctx, const kf_graph *g, const kf_irnode *x, kf_dtype dtype, int rank,
                           const int64_t *shape, const char *noun, int64_t *symval);
/* Check the array inputs against g and bind every symbol they give into
 * symval (g->nsyms entries, -1 when unbound). */
kf_status kf_rt_bind_inputs(kf_context *ctx, const kf_graph *g, const kf_view *in, int nin, int64_t *symval);
/* The run-time shape of node (error when a symbol is unbound). */
kf_status kf_rt_node_shape(kf_context *ctx, const kf_graph *g, int32_t node, const int64_t *symval, int64_t *shape);
#endif
