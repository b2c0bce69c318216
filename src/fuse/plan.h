/* Fusion plan: the ordered kernels that compute a graph, and the pipeline
 * of passes that produces it.  Module prefix: kf_fuse_ / kf_pass_.
 * Every node id in a plan refers to plan->g, the optimised graph. */
#ifndef KF_PLAN_H
#define KF_PLAN_H

#include "ir.h"

typedef enum kf_kernel_kind {
    KF_KERNEL_EW,     /* one loop over an iteration space, any number of outputs of that shape */
    KF_KERNEL_REDUCE  /* reductions over the same axes of one iteration space */
} kf_kernel_kind;

typedef struct kf_kernel {
    kf_kernel_kind kind;
    /* Iteration space: the shape of node 'space' (EW: the outputs' shape;
     * REDUCE: the reductions' operand shape).  'axes' (REDUCE only) is the
     * mask of reduced dimensions of that space. */
    int32_t space;
    uint8_t axes;
    /* Non-leaf nodes evaluated in this kernel, operands before users. */
    int32_t *nodes;
    int32_t nnodes;
    /* Array operands read from memory: non-scalar graph inputs and nodes
     * stored by earlier kernels, ascending node id. */
    int32_t *args;
    int32_t nargs;
    /* Nodes written to memory: graph outputs and stored intermediates, in
     * the order of first appearance in the graph's output list, then by
     * node id.  A leaf (input or literal) may appear here when a graph
     * output is a leaf: the kernel then copies or fills it. */
    int32_t *outs;
    int32_t nouts;
    /* Scalar inputs used, ascending node id (passed by value). */
    int32_t *scalars;
    int32_t nscalars;
    bool has_take;    /* needs the out-of-range flag */
    uint32_t nops;    /* weighted op count, for limits and reports */
} kf_kernel;

typedef struct kf_plan {
    kf_graph *g;           /* the optimised graph; owned by the plan */
    kf_kernel *kernels;    /* in launch order: producers before consumers */
    int32_t nkernels;
    int32_t *stored;       /* intermediates kept in device memory between kernels */
    int32_t nstored;
} kf_plan;

void kf_plan_free(kf_plan *p);
/* Human-readable plan, as `fusec dump --after partition` prints it. */
void kf_plan_print(const kf_plan *p, FILE *f);

/* -- Passes ------------------------------------------------------------------ */

typedef struct kf_fuse_options {
    bool fast_math;             /* allow float rewrites that change bits; default off */
    uint32_t max_ops;           /* weighted ops per kernel before a split; default 512 */
    uint32_t max_param_bytes;   /* kernel parameter bytes (CUDA: 4096); default 4000 */
    uint32_t recompute_max;     /* a shared intermediate cheaper than this is recomputed; default 16 */
} kf_fuse_options;

/* State carried through the pipeline.  Graph-rewriting passes replace g
 * (freeing the old one); partition sets plan (which then owns g). */
typedef struct kf_pipeline {
    kf_graph *g;
    kf_plan *plan;
    kf_fuse_options opt;
    char err[512];          /* message for a failing status, naming node and reason */
} kf_pipeline;

/* Every pass has this signature and lives in its own file. */
typedef kf_status (*kf_pass_fn)(kf_pipeline *p);
kf_status kf_pass_verify(kf_pipeline *p);
kf_status kf_pass_fold(kf_pipeline *p);
kf_status kf_pass_cse(kf_pipeline *p);
kf_status kf_pass_dce(kf_pipeline *p);
kf_status kf_pass_partition(kf_pipeline *p);
kf_status kf_pass_schedule(kf_pipeline *p);

/* Names of the passes in pipeline order, for `fusec dump --after`. */
extern const char *const kf_fuse_pass_names[];

/* Fill defaults for zero option fields. */
void kf_fuse_options_default(kf_fuse_options *o);
/* Run the pipeline on a copy of g (g itself is not changed), stopping after
 * the pass named stop_after (NULL: run them all).  On success p->g (and
 * p->plan once partition ran) hold the result; release with
 * kf_pipeline_clear.  On failure p->err says what and where. */
kf_status kf_fuse(const kf_graph *g, const kf_fuse_options *opt, const char *stop_after, kf_pipeline *p);
void kf_pipeline_clear(kf_pipeline *p);

#endif /* KF_PLAN_H */
