/* Seeded random graph generator for tests: random ops of every kind and
 * dtype, broadcast shapes with literal and symbolic dims, reductions over
 * random axes, iota, take with index arrays, scalar inputs, several
 * outputs.  Every graph it returns verifies.  The same seed and options
 * always give the same graph (no global state), so a failure names its
 * seed and can be replayed.  Also fills random inputs for a graph. */
#ifndef KF_RANDGRAPH_H
#define KF_RANDGRAPH_H

#include "kfuse.h"

typedef struct kf_rg_options {
    int ops;            /* operations to add; 0: 4 to 24 */
    bool exact;         /* only ops whose results are bit-exact on every correct backend:
                           no transcendental functions, no float sum/prod/mean */
    bool no_f16;        /* never use f16 (OpenCL devices without cl_khr_fp16) */
    bool no_f64;        /* never use f64 */
    bool no_reduce;     /* no reductions */
    bool no_take;       /* no take */
} kf_rg_options;

/* A random graph named name (an identifier) from seed; opt may be NULL.
 * Symbols are among "n", "m", "k".  NULL only when out of memory. */
kf_graph *kf_rg_graph(const char *name, uint64_t seed, const kf_rg_options *opt);

/* The value a test gives symbol s: symvals from the symbol's name ("n",
 * "m", "k"; anything else gets small). */
typedef struct kf_rg_sizes {
    int64_t n, m, k;
} kf_rg_sizes;

/* Random inputs for g (ninputs = kf_graph_num_inputs(g) arrays, allocated;
 * release with kf_rg_free_inputs).  Shapes bind symbols from sizes; take
 * index inputs are in range except with probability bad_index per element
 * (0 for none).  Floats mix ordinary values with, when specials is set,
 * +-0, +-inf, NaN, huge and tiny values; integers mix small values with
 * the dtype's extremes. */
kf_status kf_rg_inputs(const kf_graph *g, uint64_t seed, const kf_rg_sizes *sizes, double bad_index, bool specials,
                       kf_host_array *inputs);
void kf_rg_free_inputs(kf_host_array *inputs, int n);

/* Replace about 6% of the elements of input i of g (a, filled by any
 * means) with special floats, or 8% with an integer dtype's extremes, as
 * kf_rg_inputs does with specials; bools and take indices stay as they
 * are. */
void kf_rg_specials(const kf_graph *g, int i, kf_host_array *a, uint64_t seed);

/* Value of a symbol name under sizes. */
int64_t kf_rg_sym_value(const kf_rg_sizes *sizes, const char *sym);

/* What output j of g depends on.  exact: every op on its paths gives the
 * same bits on every correct backend (no library function such as exp, no
 * float sum, prod or mean), so a backend must match the interpreter bit
 * for bit (any NaN matching any NaN).  Otherwise the output is within a few
 * ulp of coarsest, the least precise float dtype on its paths (KF_F64 when
 * none), unless a step enlarges such a difference: a float cast to an
 * integer or compared, or (fsum) a float sum, prod or mean, which the
 * backends accumulate in their own order (in f32 for f16, bf16 and f32,
 * docs/codegen.md), so that a partial result may overflow or underflow
 * where the interpreter's row-major double does not (0 * inf: NaN against
 * 0).  fast_math: the program was compiled with it (kf_context_options),
 * so a float division, rcp or rsqrt is inexact too. */
typedef struct kf_rg_dep {
    bool exact;
    bool fsum;
    kf_dtype coarsest;
} kf_rg_dep;
kf_rg_dep kf_rg_output_dep(const kf_graph *g, int j, bool fast_math);

/* Is node n of g an op that fast_math approximates on some backend: an
 * f32, f16 or bf16 exp, exp2, log, log2, log10, sin, cos, tan, rsqrt, rcp,
 * sigmoid or division (docs/codegen.md, "Fast math")? */
bool kf_rg_fast_math_node(const kf_graph *g, int32_t n);
/* Does g hold such a node?  The code emitted for a plan without one is the
 * same with fast_math and without. */
bool kf_rg_fast_math_op(const kf_graph *g);

/* Mismatches of n elements of output j of g (got) against the
 * interpreter's (want), by what the output depends on: an exact output bit
 * for bit (any NaN matching any NaN); an inexact float output within
 * rt_tol of its coarsest dtype relative to |want| plus the output's largest
 * finite |want|, and, below a float sum, also where one side is not finite
 * or both are below the smallest normal of that dtype (a partial product
 * that underflows in one order and not in another: 0 against 5e-323);
 * an inexact integer or bool output bit for bit but in up to n / 8 + 1
 * elements, each one step off modulo its width: a last-bit difference
 * upstream moves a cast or a comparison by one step at a boundary (erf
 * saturating to 1 in f32 near 4, then cast to i8, on some elements; a
 * u32 flipped from 1 to 0 before a neg), where an unwritten or wrong
 * output differs almost everywhere.  A float output also passes within
 * slack[j][i] more (slack: kf_rg_sum_slack's, or NULL for none).  *bad1:
 * the first mismatch.  fast_math as for kf_rg_output_dep. */
int64_t kf_rg_compare(const kf_graph *g, int j, const void *got, const kf_host_array *want, int64_t n,
                      bool fast_math, double *const *slack, int64_t *bad1);

/* How far each element of each output of g may move with the order of
 * g's float sums and means, for kf_rg_compare: the backends accumulate in
 * their own order, and an op after the sum can make that difference
 * larger than the output's tolerance (sin of an f32 sum of 66000 values,
 * one output element near zero: 0.000318 for 0.000325).  want holds the
 * interpreter's outputs of g on inputs in; g is interpreted twice more
 * with every such reduction's result moved by 8 units in the last place
 * at 1 of the backends' accumulator (f32; f64 for f64) times the sum (a
 * mean: the mean) of its operands' magnitudes, all up, then down and up
 * by turns, and an element's slack is the most it moved (infinite where
 * it became or stopped being finite).
 * This bounds the backends' order (f32 accumulation in a tree of a few
 * levels over the interpreter's double) with room, where a wrong or
 * dropped term of a sum of fewer than about 2^20 moves it by more.
 * NULL where g has no float sum or mean (or out of memory: no slack);
 * otherwise one array per output, freed with kf_rg_slack_free. */
double **kf_rg_sum_slack(const kf_graph *g, const kf_host_array *in, int nin, const kf_host_array *want);
void kf_rg_slack_free(double **slack, int nout);

/* Whether every node of g has at most max_elems elements under sizes.  A
 * graph may hold [n, n] or [k, n, n] operands: at a test's largest sizes
 * its inputs and the interpreter's intermediates can need gigabytes, so
 * tests skip the sizes where this is false. */
bool kf_rg_fits(const kf_graph *g, const kf_rg_sizes *sizes, int64_t max_elems);

#endif /* KF_RANDGRAPH_H */
