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
/* kf_fuse on g itself instead of a copy: the pipeline owns g from the call
 * on (it is freed with the pipeline, or at once on failure), so nobody
 * else may hold it. */
kf_status kf_fuse_owned(kf_graph *g, const kf_fuse_options *opt, const char *stop_after, kf_pipeline *p);
void kf_pipeline_clear(kf_pipeline *p);

/* -- Additions: helpers shared by the passes ------------------------------------ *
 * (Added after the first version of this header; nothing above changed.)
 * kf_fuse: on failure p->g and p->plan are released already and p->err is
 * kept; kf_pipeline_clear is safe to call on any pipeline, any number of
 * times.  Once partition ran, p->g still points at the optimised graph, now
 * owned by p->plan (p->g == p->plan->g). */

/* Weight of one node in op counts: 0 for leaves (inputs, literals), 4 for
 * transcendental ops (exp, log, trig, pow, erf, sigmoid, ...), 2 for take,
 * 1 for everything else (reductions included). */
uint32_t kf_fuse_op_weight(kf_op op);

/* Kernel parameter bytes as partition limits them: 8 per pointer (args and
 * outs), 8 * (1 + R + NB*R + NB + 2*NT) for the meta block (R = rank of the
 * iteration space, NB = nargs + nouts, NT = args that a take gathers from:
 * codegen's meta carries their length and stride), 8 per scalar, 8 for the
 * take flag when has_take, 8 for the reduction scratch pointer of a REDUCE
 * kernel.  An upper bound of codegen's exact CUDA layout (kf_cg_kabi). */
uint32_t kf_kernel_param_bytes(const kf_graph *g, const kf_kernel *k);

/* Fill k->args, scalars, has_take and nops from k->nodes and k->outs (the
 * other fields are read, not changed): an operand of a node in 'nodes' is
 * read from registers when it is itself in 'nodes', else it is a literal
 * (inlined), a scalar input (-> scalars) or an array in memory (-> args); a
 * leaf in outs adds its input to args or scalars.  args and scalars come out
 * ascending and unique.  mark is scratch of g->nnodes entries in which no
 * entry equals stamp on entry; entries of k's nodes are set to stamp.
 * KF_ERR_NO_MEMORY when an allocation fails (k's arrays then unchanged). */
kf_status kf_kernel_fill(const kf_graph *g, kf_kernel *k, uint32_t *mark, uint32_t stamp);

/* Check that p is a plan that computes its graph: kernels in launch order,
 * every operand of a node either computed in the same kernel, inlined, a
 * scalar, or an arg that is an input or was written by an earlier kernel;
 * take's array always from memory; every graph output written exactly once;
 * EW kernels' outs all of the space's shape and no reductions in them;
 * REDUCE kernels' reductions all outs over the kernel's axes and space;
 * args/outs/scalars/has_take/nops as kf_kernel_fill gives them; and, when
 * opt is not NULL, every kernel within opt's limits.  On failure writes a
 * message naming the kernel and node to err and returns
 * KF_ERR_INVALID_ARG (KF_ERR_NO_MEMORY when scratch cannot be allocated). */
kf_status kf_plan_check(const kf_plan *p, const kf_fuse_options *opt, char *err, size_t errlen);

/* Name of node n as the .kir printer writes it: its name, or _<n> with '_'
 * appended until no named node has it.  Writes to buf (always terminated). */
void kf_fuse_node_name(const kf_graph *g, kf_node n, char *buf, size_t len);

/* Sort v ascending; linear when it is sorted already, either way round
 * (the passes' node lists usually are). */
void kf_fuse_sort_i32(int32_t *v, int32_t n);

/* -- Graph rewriting (rewrite.c) ---------------------------------------------------
 * fold, cse and dce build a new graph from the old one in node order:
 * every old node is either copied (operands mapped to the new graph) or
 * replaced by a node already in the new graph.  Names, symbols (same
 * indices), scalar flags, parameter order, literal bits, the graph's name
 * and its outputs carry over.  A graph output can be replaced only by a
 * computed (non-leaf) node that no other output uses; that node then takes
 * the output's name.  Another replaced node gives its name to an unnamed
 * computed replacement; otherwise its name is dropped. */
typedef struct kf_rebuild {
    const kf_graph *old;
    kf_graph *g;           /* the graph being built */
    int32_t *map;          /* old node -> new node; KF_NONE until copied */
    const char **name;     /* new node -> the (old graph's) name it gets at the end */
    uint8_t *claimed;      /* new node -> 1 when a graph output is on it */
    uint8_t *is_out;       /* old node -> 1 when it is a graph output */
    int32_t cap;           /* entries of name and claimed */
} kf_rebuild;

/* Start rebuilding p->g.  KF_ERR_NO_MEMORY (message in p->err) on failure. */
kf_status kf_rebuild_begin(kf_pipeline *p, kf_rebuild *rb);
/* Copy old node i, operands through rb->map; the new node, or KF_NONE
 * (error kept on rb->g). */
kf_node kf_rebuild_copy(kf_rebuild *rb, int32_t i);
/* Add node proto (operands already new nodes) as old node i's copy. */
kf_node kf_rebuild_add(kf_rebuild *rb, int32_t i, const kf_irnode *proto);
/* The literal of dtype t whose payload has exactly the bits of v. */
kf_node kf_rebuild_lit(kf_rebuild *rb, kf_dtype t, kf_lit v);
/* Make old node i become new node r when the rules above allow it (and r
 * has i's dtype and shape); true when done, false when i must be copied. */
bool kf_rebuild_replace(kf_rebuild *rb, int32_t i, kf_node r);
/* Name the nodes, add the outputs and put the new graph in p->g (freeing
 * the old one).  Frees rb's scratch in every case. */
kf_status kf_rebuild_finish(kf_pipeline *p, kf_rebuild *rb);
/* Drop a rebuild that failed half way (p->g stays the old graph). */
void kf_rebuild_abort(kf_rebuild *rb);
/* The same rewriting outside a pipeline (the cache's canonical form):
 * start reads old, which must outlive the rebuild and is never changed;
 * end names the nodes, adds the outputs and returns the new graph, or NULL
 * when the rewrite failed or memory ran out.  Both free rb's scratch when
 * they fail, end always. */
kf_status kf_rebuild_start(const kf_graph *old, kf_rebuild *rb);
kf_graph *kf_rebuild_end(kf_rebuild *rb);

#endif /* KF_PLAN_H */
