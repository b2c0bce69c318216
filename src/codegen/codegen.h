/* Code generation: CUDA C and OpenCL C source for a fusion plan, and the
 * kernel ABI that a runtime needs to launch what was generated.
 * Module prefix: kf_cg_.  docs/codegen.md is the long form of this header.
 *
 * == Kernel ABI ==============================================================
 *
 * kf_cg_emit writes ONE module holding every kernel of the plan.  Kernel k
 * (plan->kernels[k]) has several entry points, all named
 *
 *     <graph>_k<k>_<hash8>_<variant>
 *
 * where <hash8> is 8 lowercase hex digits of a structural hash of the kernel
 * (ops, dtypes, shapes, operands; never names) and <variant> is one of
 *     EW kernels:     c32 c64 s32 s64 b64 g64
 *     REDUCE kernels: seq tile comb warp warpv
 * kf_cg_entry_name gives the name.  Every entry point is launched with a 1-D
 * grid of blocks of exactly KF_CG_BLOCK threads (OpenCL: local size
 * KF_CG_BLOCK, global size grid * KF_CG_BLOCK) and loops grid-stride, so any
 * grid of at least one block is correct; kf_cg_launch_rule picks the grid.
 * Built with KF_ONE_PASS defined, the elementwise loops and the loops of
 * warp and tile over outputs run at most once: then only a grid that
 * covers the space (kf_cg_launch_rule with gpu set and no grid_override)
 * is correct (docs/codegen.md, "One pass").
 *
 * Parameters, in this order, identical for every variant of a kernel:
 *   1. one device pointer per k->args[i]   (CUDA: const T *__restrict__,
 *      OpenCL: __global const T *restrict), T the storage type below;
 *   2. one device pointer per k->outs[i]   (restrict, writable);
 *   3. the meta block, by value: a struct whose only member is an array of
 *      kf_cg_kabi.meta_count 64-bit signed integers (CUDA long long, OpenCL
 *      long), so its bytes are exactly that int64 array;
 *   4. one value per k->scalars[i], passed as its storage type;
 *   5. CUDA int * / OpenCL __global int *: the error flag, only when
 *      k->has_take;
 *   6. CUDA unsigned char * / OpenCL __global uchar *: scratch, only for
 *      REDUCE kernels (every variant has it; it may be NULL when
 *      kf_cg_launch_rule reports 0 scratch bytes).
 *
 * Storage types (arrays, scalars, and the bytes in memory): bool is one byte
 * 0 or 1 (a nonzero byte reads as true), i8..i64 and u8..u64 the C integer
 * types of that width, f32 float, f64 double, f16 and bf16 the 16-bit pattern
 * in an unsigned short.  Pointers point at element 0 of the buffer; the meta
 * offsets say where the array starts.  Outputs must not overlap any other
 * buffer of the launch; inputs may overlap each other.
 *
 * Meta block (all counts in elements, never bytes), R = iteration rank of
 * the kernel (the rank of node k->space), NB = nargs + nouts, NT = number of
 * take sources (args read by a take node, in args order):
 *     [0]                    n: the number of points of the iteration space
 *     [1 .. R]               shape of the iteration space
 *     [1+R + b*R + d]        stride of buffer b (args, then outs) over
 *                            iteration dim d; 0 on a dim where the buffer is
 *                            broadcast; for a REDUCE output, 0 on reduced dims
 *     [1+R+NB*R + b]         offset of buffer b (element index of its [0...])
 *     [1+R+NB*R+NB + 2t]     length of take source t (its dim 0)
 *     [1+R+NB*R+NB + 2t + 1] stride of take source t (its dim 0)
 *     [1+R+NB*R+NB + 2NT]    REDUCE only: chunks per output of the tile
 *                            variant (kf_cg_red_chunks); when more than 1,
 *                            M times it is below 2 * KF_CG_CHUNK_TARGET
 *     [1+R+NB*R+NB + 2NT + 1] REDUCE only: reduced elements per chunk
 * kf_cg_fill_meta computes it from symbol values and array strides.
 *
 * Error flag: a take whose index is out of range yields 0 and stores 1 to
 * *err (a plain store; many threads may store).  The runtime zeroes the flag
 * before the launch and reports KF_ERR_INDEX when it reads 1 afterwards.
 *
 * Variants.  EW: c = contiguous (every buffer read at the iteration point is
 * row-major contiguous over the full iteration shape and its first element
 * 16-byte aligned, or is broadcast on every dim, i.e. loaded once), moved
 * with 16-byte loads and stores; s = strided (any strides, negative too).
 * 32 = 32-bit index arithmetic, usable when n and every buffer's span fit in
 * int32; 64 otherwise.  The 32-bit variants exist only where they save
 * 64-bit division (a long subroutine on GPUs, where 64-bit adds and
 * multiplies cost little): c32 when the body reads coordinates (iota), s32
 * when the iteration rank is 2 or more; elsewhere the 64-bit variant serves
 * and kf_cg_entry_name gives "" for the missing one.  b64: c walking
 * chunks of the inner dims, each over every step of the outer dims in
 * turn (args broadcast on the outer dims), two vectors a thread loaded
 * before the math; with no outer dims for large calls of short branchy
 * bodies (kf_cg_kinfo.pair, kf_cg_launch_rule).  g64 (GPUs, kernels with
 * a direct take, kf_cg_direct_take): s with 4 points per thread, their
 * gathers issued together.  h64 (GPUs, kabi.has_h64: kernels with a
 * direct take, branchy kernels and kernels reading two or more arrays):
 * c with 8-byte vectors, for branchy calls too small to fill the device
 * with c's, for bodies without branches in a band of sizes (two arrays:
 * where h64's grid fills a wave and c's does not; three or more: once
 * c's does; abi.c, narrow), and in place of g64 for contiguous calls
 * (kf_cg_launch_rule); the contiguous variants gather every lane's direct
 * takes before the first lane's math.
 * REDUCE: seq = one thread per output, a sequential
 * loop over the reduced elements; tile = pass 1, one block per (output,
 * chunk), a chunk being a run of tiles of KF_CG_TILE_ELEMS reduced elements
 * (kf_cg_red_chunks), writing the output directly when an output has one
 * chunk, else partials to scratch, and on a GPU the block that finishes an
 * output's last chunk (counted in scratch) combines them in comb's order;
 * comb = pass 2 off a GPU (GPU code has no comb), one block per output
 * combining its chunks; warp = one 32-thread group per output (reduced
 * length <= KF_CG_TILE_ELEMS, GPUs only), the same bits as tile; warpv =
 * warp for a call whose groups of reduced elements load as vectors (gvec,
 * checked on the host: kf_cg_launch_rule), without warp's test of it and
 * its element-by-element path, in 32-bit indices (the call's points and
 * every buffer's span under 2^31, as c32), and in a kernel without
 * elementwise outputs with the loads of a group past the last output from
 * output M - 1.  Which is used
 * depends on the shape and on whether the reduced dim is contiguous in the
 * inputs (seq or warp); the combining order depends only on the variant
 * and the shape: results are bitwise identical for every grid size, every
 * run, and across CUDA, OpenCL and the CPU.
 * kf_cg_pick_variant and kf_cg_launch_rule are the one implementation of
 * these choices for every backend.
 *
 * Compiling: no fast-math flag anywhere (kf_cg_caps.fast_math picks
 * functions, not flags).  CUDA: NVRTC defaults (-prec-div=true
 * -prec-sqrt=true -ftz=false); the code uses __fadd_rn-style intrinsics so
 * -fmad does not matter.  OpenCL: pass -cl-fp32-correctly-rounded-divide-sqrt
 * where the device reports CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT; never
 * -cl-fast-relaxed-math or -cl-mad-enable.  The module begins with
 * "#pragma OPENCL FP_CONTRACT OFF".
 */
#ifndef KF_CODEGEN_H
#define KF_CODEGEN_H

#include "plan.h"
#include "strbuf.h"

/* KF_TARGET_LLVM: LLVM IR text for the CPU backend (llvm.c; "The CPU target"
 * in docs/codegen.md), only in builds with LLVM (KFUSE_WITH_LLVM). */
typedef enum kf_target { KF_TARGET_CUDA, KF_TARGET_OPENCL, KF_TARGET_LLVM, KF_TARGET_COUNT } kf_target;

/* Device capabilities that change what may be emitted (CUDA reads only
 * nan_minmax, and is always a GPU).  A NULL caps pointer means every
 * capability is present. */
typedef struct kf_cg_caps {
    bool fp64;   /* cl_khr_fp64: f64 allowed */
    bool fp16;   /* cl_khr_fp16: f16 allowed (bf16 never needs it) */
    bool nan_minmax; /* inline PTX min.NaN/max.NaN.f32, the IR's float min and max (NaN if either
                      * is NaN, -0 below +0) in one instruction: sm_80 and later, on CUDA and on
                      * NVIDIA's OpenCL (whose compiler takes inline PTX too) */
    bool gpu;    /* a GPU (always, for CUDA).  Off a GPU (a CPU device such as PoCL's) the
                  * OpenCL code is the same computation written to compile fast there: no
                  * unroll pragmas, the block tree folded by one work-item, no warp entry
                  * point (docs/codegen.md, "Off a GPU") */
    bool ptx;    /* the compiler takes inline PTX (CUDA, NVIDIA's OpenCL): OpenCL's device-wide
                  * fence is then membar.gl, where NVIDIA compiles mem_fence to membar.cta */
    bool fast_math; /* not a capability but the caller's choice (kf_context_options.fast_math; off
                     * with NULL caps): f32 exp, log, sin, cos, tan, rsqrt and division (with
                     * sigmoid's and rcp's) through the target's approximate functions
                     * (docs/codegen.md, "Fast math"); the LLVM target ignores it */
} kf_cg_caps;

typedef enum kf_cg_variant {
    KF_CG_C32, KF_CG_C64, KF_CG_S32, KF_CG_S64, KF_CG_B64, KF_CG_G64, KF_CG_H64, KF_CG_B1, /* EW kernels */
    KF_CG_SEQ, KF_CG_TILE, KF_CG_COMB, KF_CG_WARP, KF_CG_WARPV, /* REDUCE kernels */
    KF_CG_VARIANT_COUNT
} kf_cg_variant;

enum {
    KF_CG_BLOCK = 256,        /* threads per block, every entry point */
    KF_CG_TILE_ELEMS = 4096, /* reduced elements per tile (16 per thread) */
    KF_CG_RED_GROUP = 4,      /* tile, warp: a thread folds runs of this many consecutive reduced elements */
    KF_CG_GATHER_ELEMS = 4,   /* g64: points per thread, KF_CG_BLOCK apart */
    KF_CG_B64_VECS = 2,       /* b64: vectors per thread, KF_CG_BLOCK apart (a block covers 512 vectors of a step);
                               * b1 has one */
    KF_CG_B_CHUNK_VECS = 131072, /* b64, b1: vectors of a step's chunk (2 MB of 16-byte vectors a buffer), all
                                  * steps in turn */
    KF_CG_B_FLAT_BYTES = 12 << 20, /* b64, b1: a step whose buffers hold at most this many bytes is one chunk
                                    * (docs/codegen.md) */
    KF_CG_SEQ_MAX = 64,       /* reduced length up to which seq is used */
    KF_CG_SEQ_OUTPUTS = 65536,/* ... or up to KF_CG_TILE_ELEMS when there are this many outputs */
    KF_CG_WARP_LANES = 32,    /* threads per output of warp (a CUDA warp) */
    KF_CG_WARP_MIN = 32,      /* warp: reduced length at least this, at most KF_CG_TILE_ELEMS, */
    KF_CG_WARP_OUTPUTS = 4096,/* ... at least this many outputs, reduced dim contiguous, */
    KF_CG_WARP_SHORT = 1024,  /* ... or at least this many when L is at most this too, or any number when
                               * KF_CG_SEQ_MAX < L <= this */
    KF_CG_CHUNK_TARGET = 2048,/* tile: about this many (output, chunk) blocks when an output has several tiles */
    KF_CG_CHUNK_WHOLE = 2,    /* tile: an output of at most this many tiles is one chunk */
    KF_CG_CHUNK_MIN_M = 128,  /* tile: from this many outputs, chunks of at least */
    KF_CG_CHUNK_MIN = 4,      /* ... this many tiles (or the whole output) */
    KF_CG_COUNTER_BYTES = 4 * KF_CG_CHUNK_TARGET, /* GPU tile: scratch's first bytes, a 32-bit count of finished
                                                   * chunks per output (an output has several chunks only when
                                                   * M < KF_CG_CHUNK_TARGET) */
    KF_CG_NAME_MAX = 256      /* bytes enough for any entry name */
};

/* "c32", "s64", "seq", ...; NULL when out of range. */
const char *kf_cg_variant_name(kf_cg_variant v);
/* Vectors a thread of b64 (KF_CG_B64_VECS) or b1 (one): the kernel
 * (emit.c) and its grid (the launch rule) both take it from here. */
int kf_cg_b_vecs(kf_cg_variant v);
const char *kf_cg_target_name(kf_target t);   /* "cuda", "opencl", "llvm" */
/* Whether language t's kernels take each array's pointer at the array's
 * element [0, ..., 0] (the caller adds meta offset * element size) and never
 * read the meta offsets: CUDA.  OpenCL's buffers are handles and the CPU
 * target's loops index from the buffer: they take the buffer's start and
 * add the offsets themselves ("Parameters" in docs/codegen.md). */
bool kf_cg_array_pointers(kf_target t);

/* Append the module for every kernel of p to out (which may already hold
 * text).  On failure returns the status, writes a message naming the kernel
 * and node to err (if not NULL) and leaves out with partial text:
 * KF_ERR_UNSUPPORTED when the OpenCL device lacks fp64/fp16 for a dtype the
 * plan uses; KF_ERR_INVALID_ARG for a malformed plan; KF_ERR_NO_MEMORY.
 * The text depends only on p and t (and caps only by failing): the same
 * plan always gives the same bytes. */
kf_status kf_cg_emit(const kf_plan *p, kf_target t, const kf_cg_caps *caps, kf_strbuf *out, char *err,
                     size_t errlen);
/* The same for KF_TARGET_LLVM (kf_cg_emit calls it): the module as LLVM IR
 * text.  caps are checked as for OpenCL (f64, f16); KF_ERR_UNSUPPORTED in
 * builds without LLVM. */
kf_status kf_cg_emit_llvm(const kf_plan *p, const kf_cg_caps *caps, kf_strbuf *out, char *err, size_t errlen);

/* -- What a runtime needs to launch kernel k -------------------------------- */

enum { KF_CG_MAX_BUFS = 1024 };   /* args + outs of one kernel */
enum { KF_CG_BUF_EW = 1,          /* read or written at the iteration point */
       KF_CG_BUF_BCAST = 2,       /* an arg broadcast on every iteration dim: read once */
       KF_CG_BUF_TAKE = 4,        /* an arg gathered by take (a take source) */
       KF_CG_BUF_LEAD = 8 };      /* an arg broadcast on the leading bsplit dims only (b64) */

/* The launch facts of one kernel, computed once (kf_cg_kernel_abi) and then
 * used for every call without the plan. */
typedef struct kf_cg_kabi {
    kf_kernel_kind kind;
    int kernel;             /* index in the plan */
    int rank;               /* R, iteration rank */
    uint8_t axes;           /* REDUCE: reduced iteration dims (bit d) */
    int nargs, nouts, nscalars;
    int ntake;              /* take sources (args with KF_CG_BUF_TAKE, in args order) */
    int meta_count;         /* int64 entries of the meta block */
    int meta_offsets;       /* index of buffer 0's offset in it (1 + R + nb * R) */
    int meta_chunks;        /* REDUCE: index of the tile variant's chunk count in it, then the chunk length */
    int vecw;               /* contiguous variants: elements per thread step */
    bool has_c32, has_s32;  /* the 32-bit EW variants exist (see "Variants") */
    bool has_g64;           /* g64 exists: an EW kernel with a direct take (GPUs only) */
    bool branchy;           /* EW whose body branches on its operands on a GPU (division, sqrt, sin, ...;
                             * under fast math fewer: kf_cg_kernel_abi) */
    bool has_h64;           /* h64 exists: a direct take, or branchy or streams >= 2 and no take; no coordinates, vecw >= 4 (GPUs only) */
    int streams;            /* EW: array args read at the iteration point, each a stream of loads */
    bool has_b64;           /* b64 exists: bsplit > 0, or a short branchy body without takes or coordinates */
    bool has_b1;            /* b1 exists: bsplit > 0 */
    int bsplit;             /* b64's outer dims (0: none): the KF_CG_BUF_LEAD args are broadcast on
                             * dims 0..bsplit-1 and no other, every other buffer is full */
    bool has_err;           /* the error-flag parameter is present (k->has_take) */
    bool has_scratch;       /* the scratch parameter is present (REDUCE) */
    size_t param_bytes;     /* parameter list bytes as CUDA lays it out (limit 4 KiB) */
    char prefix[KF_CG_NAME_MAX - 8];   /* "<graph>_k<k>_<hash8>" */
    uint8_t buf_size[KF_CG_MAX_BUFS];  /* element bytes of buffer b (args then outs) */
    uint8_t buf_flags[KF_CG_MAX_BUFS]; /* KF_CG_BUF_* */
    uint8_t arg_dims[KF_CG_MAX_BUFS];  /* per arg read at the point: bit d set where it has iteration dim d
                                        * (not statically broadcast on it) */
    uint8_t red_val[KF_CG_MAX_BUFS];   /* REDUCE: per out, accumulator bytes (0: not a reduction) */
    bool red_idx[KF_CG_MAX_BUFS];      /* REDUCE: per out, an argmin/argmax (partials carry an i64 index) */
    char entry[KF_CG_VARIANT_COUNT][KF_CG_NAME_MAX]; /* kf_cg_entry_name of each variant, made once */
} kf_cg_kabi;

/* fast_math: the module's code is fast math's (kf_cg_fast_math, below:
 * kf_cg_caps.fast_math on CUDA and OpenCL; the CPU target has none).  Its
 * approximate f32 division, reciprocal, rsqrt, sigmoid, sin, cos and tan
 * have no slow path, so they do not make a body branchy, which changes
 * the variants the module holds (h64, b64) and the launch rule's picks. */
kf_status kf_cg_kernel_abi(const kf_plan *p, int k, bool fast_math, kf_cg_kabi *out, char *err, size_t errlen);

/* Is target t's code under caps fast math's?  kf_cg_kernel_abi's fast_math
 * for a module of kf_cg_emit. */
static inline bool kf_cg_fast_math(kf_target t, const kf_cg_caps *caps)
{
    return t != KF_TARGET_LLVM && caps && caps->fast_math;
}

/* What the entry point names of kernel k of p begin with,
 * "<graph>_k<k>_<hash8>", into buf (KF_CG_NAME_MAX bytes are always
 * enough): the name without "_<variant>".  Fails as kf_cg_kernel_abi. */
kf_status kf_cg_kernel_prefix(const kf_plan *p, int k, char *buf, size_t len, char *err, size_t errlen);

/* The entry point name of variant v into buf; "" when v does not belong to
 * the kernel's kind.  KF_CG_NAME_MAX bytes are always enough. */
void kf_cg_entry_name(const kf_cg_kabi *a, kf_cg_variant v, char *buf, size_t len);

/* Where a buffer lives: element strides of its own dims (in the order of the
 * node's dims) and the element offset of its element [0,...,0]. */
typedef struct kf_cg_array {
    int64_t strides[KF_MAX_RANK];
    int64_t offset;
} kf_cg_array;

/* Fill meta (a->meta_count entries) for kernel a->kernel of p.  symvals[i]
 * is the value of symbol i of p->g (its symbol table order); arrays[b]
 * describes buffer b (args then outs), or arrays == NULL for all row-major
 * contiguous at offset 0.  KF_ERR_SHAPE for a negative symbol value. */
kf_status kf_cg_fill_meta(const kf_cg_kabi *a, const kf_plan *p, const int64_t *symvals,
                          const kf_cg_array *arrays, int64_t *meta, char *err, size_t errlen);

/* Write a REDUCE kernel's chunking (kf_cg_red_chunks of meta's shape) into
 * its meta block's last two entries; nothing for an EW kernel.
 * kf_cg_fill_meta ends with it; a caller that changes the shape of a filled
 * block calls it again, since the launch rule sizes tile's grid and scratch
 * from those entries, as the kernel splits its work by them. */
void kf_cg_fill_chunks(const kf_cg_kabi *a, int64_t *meta);

/* The variant of the first launch given the filled meta block.  addrs[b] is
 * the device address of buffer b's element 0 (used with its offset for the
 * 16-byte alignment test); NULL means every buffer's element 0 is 16-byte
 * aligned (OpenCL buffers, CUDA allocations). */
kf_cg_variant kf_cg_pick_variant(const kf_cg_kabi *a, const int64_t *meta, const uint64_t *addrs);

typedef struct kf_cg_launch {
    kf_cg_variant variant;
    const char *entry;  /* the entry point: a->entry[variant] of the kabi it was made from */
    uint32_t grid;      /* blocks; OpenCL global size = grid * block */
    uint32_t block;     /* threads per block: always KF_CG_BLOCK */
} kf_cg_launch;

typedef struct kf_cg_launches {
    int n;                  /* 0 (nothing to do), 1 or 2: launch in order on one stream */
    kf_cg_launch l[2];
    uint64_t scratch_bytes; /* REDUCE: device scratch given to every launch; 0 when unused.  On a GPU
                             * its first KF_CG_COUNTER_BYTES must be zero before the first launch,
                             * and the launches leave them zero */
} kf_cg_launches;

/* The launches of one call: the variant of kf_cg_pick_variant, entry names,
 * grids sized to the device (compute_units: SMs or OpenCL compute units,
 * <= 0 when unknown; gpu: a device that schedules blocks in hardware, where
 * an elementwise kernel gets a block per 256 threads' worth of elements
 * instead of a grid-stride loop over a capped grid (n = 0 for one that
 * would need more than 2^31 - 1 blocks), a contiguous call too small to
 * give every compute unit a block of vectors, or of a kernel with a take,
 * runs the strided variant, one element per thread, and a strided call
 * that fits b64's walk runs b1, or b64 where only b64's grid fits a wave
 * (b_width, abi.c): args broadcast on the leading bsplit dims, every
 * other buffer row-major contiguous and 16-byte aligned, the other dims a
 * whole number of vectors; b64 also runs a branchy body's large contiguous
 * call that fits it (PAIR_BLOCKS_PER_CU, abi.c); a tile with several
 * chunks per output is one launch, combining them itself, and seq replaces
 * a tile that would need more than 2^31 - 1 blocks (one per output and
 * chunk); off a GPU, tile replaces warp, whose bits it gives, and comb
 * follows a tile with several chunks per output) and the scratch size.
 * memory_gbps is the device's peak DRAM bandwidth (GB/s; 0 when unknown):
 * a GPU with less than LEAN_GBPS_PER_CU (abi.c) per compute unit runs h64
 * for a body without branches reading two arrays at every size from h64's
 * wave, and c64 where a branchy body would run b64.
 * grid_override > 0 forces the grid of every launch (tests: results must
 * not change, in a build without KF_ONE_PASS). */
void kf_cg_launch_rule(const kf_cg_kabi *a, const int64_t *meta, const uint64_t *addrs, int compute_units, bool gpu,
                       double memory_gbps, uint32_t grid_override, kf_cg_launches *out);

/* The launches when the first launch uses variant v (EW: any variant whose
 * conditions hold, see kf_cg_pick_variant, or b64 where the strides fit it;
 * REDUCE: seq or tile, both correct, though float sums then round
 * differently, or warp on a GPU when the reduced length is at most
 * KF_CG_TILE_ELEMS): kf_cg_launch_rule is this with v =
 * kf_cg_pick_variant, its strided counterpart for a small contiguous call
 * on a GPU, b64 (below), or tile for warp off a GPU.  n = 0 when the
 * kernel has no entry point v (kf_cg_entry_name gives "": another kind's
 * variant, or c32, s32, b64, g64, h64, b1 where the kernel lacks it) or v
 * does not fit the call (warp, b64). */
void kf_cg_launch_variant(const kf_cg_kabi *a, const int64_t *meta, kf_cg_variant v, int compute_units, bool gpu,
                          uint32_t grid_override, kf_cg_launches *out);

/* Does warp take M outputs of L reduced elements (when the reduced dim is
 * contiguous): the size half of kf_cg_pick_variant's rule. */
bool kf_cg_warp_sizes(uint64_t M, uint64_t L);

/* The chunks of the tile variant for M outputs of L reduced elements:
 * ntiles = max(1, ceil(L / KF_CG_TILE_ELEMS)); about
 * min(ntiles, ceil(KF_CG_CHUNK_TARGET / M)) chunks of equal whole tiles per
 * output (*nchunks), *chunk_elems reduced elements each (the last may be
 * short), but one chunk when ntiles <= KF_CG_CHUNK_WHOLE, and chunks of at
 * least min(ntiles, KF_CG_CHUNK_MIN) tiles when M >= KF_CG_CHUNK_MIN_M.  A
 * function of (M, L) only; kf_cg_fill_meta puts it in the meta block, where
 * the kernels read it. */
void kf_cg_red_chunks(uint64_t M, uint64_t L, uint64_t *nchunks, uint64_t *chunk_elems);

#endif /* KF_CODEGEN_H */
