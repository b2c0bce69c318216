/* Internal to src/codegen: the per-target spelling table and the per-kernel
 * analysis shared by the emitter (emit.c) and the ABI queries (abi.c).
 * CUDA C and OpenCL C differ only in the rows of kf_cg_spell. */
#ifndef KF_CG_H
#define KF_CG_H

#include "codegen.h"

/* Lane copies (lanes times the body's nodes and buffers) above which a
 * contiguous variant's lane loop stays a loop (compile time, code size). */
#define KF_CG_UNROLL_MAX 256

/* A binary operation written as pre A mid B post: "__fadd_rn(" A ", " B ")". */
typedef struct kf_cg_bin {
    const char *pre, *mid, *post;
} kf_cg_bin;

/* A unary conversion written as pre X post. */
typedef struct kf_cg_wrap {
    const char *pre, *post;
} kf_cg_wrap;

typedef struct kf_cg_spell {
    const char *target_name;        /* "CUDA C", "OpenCL C" */
    const char *preamble;           /* first lines of every module (may be "") */
    const char *fp64_preamble;      /* added when a module uses f64 (may be "") */
    const char *entry_pre;          /* before "void NAME": qualifiers and launch bounds; %d = block size */
    const char *fn;                 /* qualifiers of a helper or body function */
    const char *fn_big;             /* qualifiers of a large body function (not inlined where the target allows) */
    const char *global;             /* address space of device memory pointers, with a trailing space or "" */
    const char *restrict_kw;        /* restrict keyword */
    const char *shared;             /* declaration qualifier of block-shared memory */
    const char *shared_ptr;         /* address space of a pointer to it, with a trailing space or "" */
    const char *barrier;            /* block-wide barrier over shared memory, a statement without ';' */
    const char *lid, *bid, *bdim, *gdim;   /* thread in block, block in grid, block size, grid size */
    const char *types[KF_DTYPE_COUNT];     /* storage type of each dtype */
    const char *sfx_i64, *sfx_u64;         /* literal suffixes of 64-bit integers */
    kf_cg_wrap f32_from_bits, f32_to_bits; /* reinterpret unsigned int <-> float */
    kf_cg_wrap f64_from_bits, f64_to_bits; /* reinterpret 64-bit unsigned <-> double */
    const char *make_uint2;         /* "make_uint2(" / "(uint2)(" */
    const char *make_uint4;         /* "make_uint4(" / "(uint4)(" */
    const char *unroll;             /* line before a loop to unroll, or "" */
    const char *no_unroll;          /* line before a loop not to unroll, or "" */
    const char *shfl_down;          /* warp shuffle down: pre of (value, delta) call, NULL when none */
    const char *fence;              /* memory fence over global memory, a statement without ';' (OpenCL's
                                     * orders a work-group's view only; emit.c's fence() adds PTX's) */
    kf_cg_wrap atomic_inc;          /* pre X post: add 1 to the global unsigned int at X, the old value */
    kf_cg_bin fadd[2], fsub[2], fmul[2], fdiv[2];   /* [0] f32, [1] f64: correctly rounded, never contracted */
    const char *fsqrt[2];           /* correctly rounded square root */
    const char *math[KF_OP_COUNT][2];      /* one-call functions by op, [0] f32, [1] f64 */
    /* kf_cg_caps.fast_math: the target's approximate f32 functions by op
     * (NULL: the accurate one stays), its approximate f32 division, and its
     * approximate sin and cos of one operand in one call, as sincos (NULL:
     * none, sin and cos are then called apart) */
    const char *fast[KF_OP_COUNT];
    kf_cg_bin fdiv_fast;
    const char *sincos_fast;
    /* sin and cos of one operand in one call (one argument reduction),
     * [0] f32, [1] f64: f(x, &sin, &cos), or sin = f(x, &cos) when
     * sincos_returns_sin */
    const char *sincos[2];
    bool sincos_returns_sin;
    bool split_trig;                /* f32 sin, cos, tan, sincos through kf_<f> wrappers (emit.c, helper_trig) */
    const char *h2f, *f2h;          /* definitions of kf_h2f and kf_f2h (f16 <-> f32) */
    bool fp64_needs_cap;            /* f64 needs kf_cg_caps.fp64 */
    bool fp16_needs_cap;            /* f16 needs kf_cg_caps.fp16 */
} kf_cg_spell;

extern const kf_cg_spell kf_cg_spell_cuda;
extern const kf_cg_spell kf_cg_spell_opencl;

/* Elements per 16-byte word of the contiguous variants, by element size. */
#define KF_CG_VEC_BYTES 16

/* -- Per-kernel analysis ------------------------------------------------------ */

enum { KF_CG_ROLE_NONE = 0, KF_CG_ROLE_ARG, KF_CG_ROLE_SCALAR, KF_CG_ROLE_NODE };

typedef struct kf_cg_kinfo {
    const kf_plan *p;
    const kf_graph *g;
    const kf_kernel *k;
    int kidx;
    int R;                          /* iteration rank */
    const int64_t *dims;            /* iteration dims, IR encoding (literal or symbol) */
    int nb;                         /* nargs + nouts */
    int32_t *role;                  /* per graph node: role << 24 | index, 0 when not in the kernel */
    bool *arg_ew;                   /* per arg: read at the iteration point (not only gathered) */
    int *tslot;                     /* per arg: take-source slot or -1 */
    int ntake;
    bool *bcast_all;                /* per buffer: every dim statically broadcast (loaded once) */
    bool *bcast_lead;               /* per buffer: broadcast on dims 0..bsplit-1 only (b64) */
    int bsplit;                     /* > 0: b64 walks dims 0..bsplit-1 outermost (kf_cg_kabi.bsplit) */
    bool pair;                      /* b64 exists with bsplit 0: a branchy body without takes or coordinates
                                     * whose b64 lane loops unroll (abi.c) */
    bool has_b64;                   /* bsplit > 0 or pair (kf_cg_kabi.has_b64) */
    int vecw;                       /* contiguous variants: elements per thread step (16 / smallest size) */
    int point_bytes;                /* bytes of one point in the buffers vecw counts: outputs and args read at
                                     * the point, not broadcast on every dim (b64/b1's KF_CG_B_FLAT_BYTES) */
    uint8_t coords;                 /* mask of iteration dims whose coordinate the body needs (iota) */
    bool gather;                    /* EW with a direct take (kf_cg_direct_take): g64 exists */
    bool branchy;                   /* EW with an op that branches on its operands on a GPU (abi.c) */
    int streams;                    /* EW: array args read at the point, each its own stream (no take, not broadcast on every dim) */
    bool half;                      /* h64 exists: a direct take, or branchy or streams >= 2 and no take; no coordinates, vecw >= 4 */
    int nred;                       /* REDUCE: outs that are reductions */
    /* meta layout (codegen.h): m_chunks only for REDUCE kernels */
    int m_shape, m_strides, m_offsets, m_take, m_chunks, m_count;
    uint32_t hash;
    char prefix[KF_CG_NAME_MAX - 8];   /* "<graph>_k<k>_<hash8>" */
} kf_cg_kinfo;

/* Analyse kernel kidx of p (checks that the plan is well formed for code
 * generation); release with kf_cg_kinfo_free.  fast_math: the code is fast
 * math's (as kf_cg_kernel_abi). */
kf_status kf_cg_kinfo_init(kf_cg_kinfo *ki, const kf_plan *p, int kidx, bool fast_math, char *err, size_t errlen);
void kf_cg_kinfo_free(kf_cg_kinfo *ki);

static inline int kf_cg_role(const kf_cg_kinfo *ki, int32_t node) { return ki->role[node] >> 24; }
static inline int kf_cg_role_index(const kf_cg_kinfo *ki, int32_t node) { return ki->role[node] & 0xffffff; }

/* A take whose index is an argument read at the point (perm in a[perm]):
 * the entry point gathers it and passes the value to the body, so that g64
 * can issue its points' gathers before their math. */
static inline bool kf_cg_direct_take(const kf_cg_kinfo *ki, int32_t n)
{
    const kf_irnode *x = &ki->g->nodes[n];
    return x->op == KF_OP_TAKE && kf_cg_role(ki, x->args[1]) == KF_CG_ROLE_ARG &&
           ki->arg_ew[kf_cg_role_index(ki, x->args[1])];
}

/* Is space dim d of the kernel broadcast (coordinate always 0) for node x of
 * the kernel's iteration space?  Static: the aligned dim of x is missing or a
 * literal 1 while the space dim is not. */
bool kf_cg_dim_bcast(const kf_cg_kinfo *ki, const kf_irnode *x, int d);

/* Accumulator facts of a reduction op over operand dtype t. */
bool kf_cg_red_float(kf_op op, kf_dtype t);      /* accumulates in float or double */
size_t kf_cg_red_acc_size(kf_op op, kf_dtype t); /* bytes of the accumulator */
bool kf_cg_red_is_arg(kf_op op);

#endif /* KF_CG_H */
