/* kfuse: kernel fusion and JIT compilation engine.
 * The whole public API.  Every symbol has the prefix kf_ / KF_.
 * Conventions: every call that can fail returns a kf_status; no call exits
 * or aborts the process; strings returned by kfuse stay valid as long as the
 * object they came from unless said otherwise. */
#ifndef KFUSE_H
#define KFUSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(KFUSE_BUILDING) && defined(__GNUC__)
#define KF_API __attribute__((visibility("default")))
#else
#define KF_API
#endif

#define KFUSE_VERSION_MAJOR 0
#define KFUSE_VERSION_MINOR 1
#define KFUSE_VERSION_PATCH 0
#define KFUSE_VERSION ((KFUSE_VERSION_MAJOR * 10000) + (KFUSE_VERSION_MINOR * 100) + KFUSE_VERSION_PATCH)

/* Version of the linked library, as KFUSE_VERSION.  A program can compare
 * it with the header it was compiled against: kf_version() == KFUSE_VERSION. */
KF_API int kf_version(void);

/* -- Status codes ---------------------------------------------------------- */

typedef enum kf_status {
    KF_OK = 0,
    KF_ERR_INVALID_ARG,  /* null pointer, out-of-range enum, bad node id */
    KF_ERR_NO_MEMORY,    /* allocation failed */
    KF_ERR_PARSE,        /* malformed .kir text */
    KF_ERR_TYPE,         /* a dtype rule was broken */
    KF_ERR_SHAPE,        /* rank, broadcasting, axis or size mismatch */
    KF_ERR_NAME,         /* undefined or duplicate name */
    KF_ERR_LIMIT,        /* a configured limit (depth, size) was exceeded */
    KF_ERR_INDEX,        /* take: an index was out of range at run time */
    KF_ERR_IO,           /* a file could not be read or written */
    KF_ERR_UNSUPPORTED,  /* valid request that this build or device cannot serve */
    KF_ERR_NO_DEVICE,    /* no usable device or driver for the requested backend */
    KF_ERR_DEVICE,       /* the driver reported an error (its name is in the message) */
    KF_ERR_COMPILE,      /* generated code failed to compile (the log is in the message) */
    KF_ERR_CONTEXT,      /* an object from another context, or a destroyed one */
    KF_ERR_CACHE_MISS    /* must-hit mode: a kernel was not in the cache (the message names it) */
} kf_status;

/* A static English description of a status code ("shape error", ...). */
KF_API const char *kf_status_string(kf_status s);

/* -- Dtypes ---------------------------------------------------------------- */

typedef enum kf_dtype {
    KF_BOOL, KF_I8, KF_I16, KF_I32, KF_I64,
    KF_U8, KF_U16, KF_U32, KF_U64,
    KF_F16, KF_BF16, KF_F32, KF_F64,
    KF_DTYPE_COUNT
} kf_dtype;

KF_API const char *kf_dtype_name(kf_dtype t);     /* "f32"; NULL when out of range */
KF_API size_t kf_dtype_size(kf_dtype t);          /* bytes per element; 0 when out of range */

/* -- Ops ------------------------------------------------------------------- */

/* One enumerator per line of ops.def (installed as kfuse/ops.def):
 * KF_OP_ADD, KF_OP_SUM, ...  Reductions min/max are KF_OP_RMIN/KF_OP_RMAX. */
typedef enum kf_op {
#define KF_OP(id, name, arity, kind, rule, flags) KF_OP_##id,
#include "kfuse/ops.def"
#undef KF_OP
    KF_OP_COUNT
} kf_op;

KF_API const char *kf_op_name(kf_op op);          /* text name ("add"); NULL when out of range */

/* -- Graphs: the builder API ----------------------------------------------- *
 * A graph is a DAG of nodes in one flat array; a kf_node is an index into it
 * and every node refers only to earlier ones.  Each builder call checks its
 * operands at once (dtypes, broadcasting, axes).  The first failure is kept
 * on the graph (status, node, message) and every later builder call on that
 * graph is a no-op returning KF_NONE, so a program may build a whole graph
 * and check once: kf_graph_verify() reports the kept error.
 * A graph is not safe to modify from two threads at once; a finished graph
 * may be read from many threads. */

typedef struct kf_graph kf_graph;
typedef int32_t kf_node;
#define KF_NONE ((kf_node)-1)
#define KF_MAX_RANK 8

/* A dimension: a literal size (sym == NULL, size >= 0) or a symbol bound at
 * run time (sym != NULL, size ignored). */
typedef struct kf_dim {
    int64_t size;
    const char *sym;
} kf_dim;
#define KF_DIM(n) ((kf_dim){ (n), NULL })
#define KF_SYM(s) ((kf_dim){ 0, (s) })

/* New empty graph named 'name' (an identifier).  NULL only when out of memory. */
KF_API kf_graph *kf_graph_new(const char *name);
KF_API void kf_graph_free(kf_graph *g);
/* Deep copy; NULL when out of memory. */
KF_API kf_graph *kf_graph_clone(const kf_graph *g);

/* Array input 'name' of dtype t and the given shape (rank 0 gives a 0-d
 * array).  Inputs are the graph's parameters, in the order declared. */
KF_API kf_node kf_input(kf_graph *g, const char *name, kf_dtype t, int rank, const kf_dim *dims);
/* Scalar input passed by value: changing its value never recompiles. */
KF_API kf_node kf_scalar(kf_graph *g, const char *name, kf_dtype t);

/* Literal constants of dtype t (rank 0; they broadcast).  The value must be
 * representable in t: kf_lit_f with an integer dtype needs an integral value
 * in range; bool takes 0 or 1.  Equal literals are shared (interned). */
KF_API kf_node kf_lit_f(kf_graph *g, kf_dtype t, double v);
KF_API kf_node kf_lit_i(kf_graph *g, kf_dtype t, int64_t v);
KF_API kf_node kf_lit_u(kf_graph *g, kf_dtype t, uint64_t v);

/* Any elementwise op by its arity: unary, binary, ternary. */
KF_API kf_node kf_apply(kf_graph *g, kf_op op, int nargs, const kf_node *args);
KF_API kf_node kf_unary(kf_graph *g, kf_op op, kf_node a);
KF_API kf_node kf_binary(kf_graph *g, kf_op op, kf_node a, kf_node b);
KF_API kf_node kf_ternary(kf_graph *g, kf_op op, kf_node a, kf_node b, kf_node c);
KF_API kf_node kf_cast(kf_graph *g, kf_node a, kf_dtype t);
/* Element index along 'axis' of an array of dtype t and the given shape. */
KF_API kf_node kf_iota(kf_graph *g, kf_dtype t, int rank, const kf_dim *dims, int axis);
/* v[index[...]]: v is 1-D, index any integer dtype and shape; the result has
 * index's shape and v's dtype. */
KF_API kf_node kf_take(kf_graph *g, kf_node v, kf_node index);
/* Reduction op (KF_OP_SUM, PROD, RMIN, RMAX, MEAN, ARGMIN, ARGMAX) over the
 * given axes (negative counts from the end), or over all axes when naxes is
 * 0.  keepdims keeps reduced axes with size 1. */
KF_API kf_node kf_reduce(kf_graph *g, kf_op op, kf_node a, int naxes, const int *axes, bool keepdims);

/* Name a node (an identifier, unique in the graph).  Names are for reading
 * only: they change neither the meaning nor the hash. */
KF_API kf_status kf_set_name(kf_graph *g, kf_node n, const char *name);
/* Mark n as the graph's next output.  An output is known by its node's
 * name: 'name' names n when n is unnamed, must equal n's name when it has
 * one, and may be NULL for a named n.  A node is an output at most once. */
KF_API kf_status kf_output(kf_graph *g, kf_node n, const char *name);

/* Check the finished graph: the kept builder error if any, else every
 * node's dtype and shape rules again and that there is at least one output.
 * A failure found here is kept on the graph like a builder error. */
KF_API kf_status kf_graph_verify(kf_graph *g);
/* The first builder error: status (KF_OK if none), message ("" if none) and
 * the node it concerns (KF_NONE if none). */
KF_API kf_status kf_graph_status(const kf_graph *g);
KF_API const char *kf_graph_error(const kf_graph *g);
KF_API kf_node kf_graph_error_node(const kf_graph *g);

/* -- Graphs: reading ------------------------------------------------------- */

KF_API const char *kf_graph_name(const kf_graph *g);
KF_API int kf_graph_num_nodes(const kf_graph *g);
KF_API int kf_graph_num_inputs(const kf_graph *g);
KF_API int kf_graph_num_outputs(const kf_graph *g);
KF_API kf_node kf_graph_input(const kf_graph *g, int i);       /* KF_NONE out of range */
KF_API kf_node kf_graph_output(const kf_graph *g, int i);
KF_API const char *kf_graph_output_name(const kf_graph *g, int i);

KF_API kf_op kf_node_op(const kf_graph *g, kf_node n);
KF_API kf_dtype kf_node_dtype(const kf_graph *g, kf_node n);
KF_API int kf_node_rank(const kf_graph *g, kf_node n);         /* -1 for a bad node */
/* Dimension i of n: fills *d with a literal size or a symbol name (owned by
 * the graph). */
KF_API kf_status kf_node_dim(const kf_graph *g, kf_node n, int i, kf_dim *d);
KF_API bool kf_node_is_scalar(const kf_graph *g, kf_node n);   /* scalar input */
KF_API const char *kf_node_name(const kf_graph *g, kf_node n); /* NULL when unnamed */

/* Canonical structural hash (128 bits, XXH3): equal for graphs that compute
 * the same DAG from the same inputs and outputs, whatever the value, symbol
 * and graph names and the order of independent statements; different when
 * any op, dtype, shape, literal, attribute, input or output differs.  Nodes
 * that no output depends on are not part of it.  Stable across runs and
 * machines (docs/ir.md gives the exact encoding). */
typedef struct kf_hash {
    uint64_t lo, hi;
} kf_hash;
KF_API kf_status kf_graph_hash(const kf_graph *g, kf_hash *out);

/* -- Text format (.kir) ---------------------------------------------------- */

/* Limits for the parser and for every later walk over a graph.  Zero fields
 * take the defaults, which no real program reaches. */
typedef struct kf_limits {
    uint32_t max_depth;      /* nested expressions; default 256 */
    uint32_t max_nodes;      /* nodes per graph; default 1 << 20 */
    size_t max_bytes;        /* size of the text; default 256 MiB */
} kf_limits;

/* A parsed .kir file: any number of graphs, owned by the module. */
typedef struct kf_module kf_module;

/* Parse text of length len (need not be NUL-terminated); 'filename' is used
 * in messages only (may be NULL).  *out receives a module even on failure
 * (NULL only when out of memory) whose kf_module_error() says
 * "file:line:col: error: message" for the first error.  Every graph is
 * verified.  opts may be NULL. */
KF_API kf_status kf_module_parse(const char *text, size_t len, const char *filename,
                          const kf_limits *opts, kf_module **out);
KF_API kf_status kf_module_parse_file(const char *path, const kf_limits *opts, kf_module **out);
KF_API void kf_module_free(kf_module *m);
KF_API const char *kf_module_error(const kf_module *m);
KF_API int kf_module_num_graphs(const kf_module *m);
KF_API kf_graph *kf_module_graph(const kf_module *m, int i);   /* NULL out of range */
KF_API kf_graph *kf_module_find(const kf_module *m, const char *name);

/* Print g as one .kir graph (without the "kfuse 1" line), or a whole module
 * with its version line.  Printing then parsing gives a graph with the same
 * structure and hash. */
KF_API kf_status kf_graph_print(const kf_graph *g, FILE *f);
KF_API kf_status kf_module_print(const kf_module *m, FILE *f);
/* The same into a new NUL-terminated string; release it with kf_free. */
KF_API char *kf_graph_to_text(const kf_graph *g);
KF_API void kf_free(void *p);

/* -- Reference interpreter ------------------------------------------------- */

/* A dense row-major host array. */
typedef struct kf_host_array {
    void *data;
    kf_dtype dtype;
    int rank;
    int64_t shape[KF_MAX_RANK];
} kf_host_array;

/* Evaluate g on host arrays, exactly as docs/ir.md defines every op; the
 * oracle that every backend is tested against.  inputs[i] matches the
 * graph's i-th input (a scalar input is a rank-0 array); symbols are bound
 * from the input shapes and must agree.  On success each outputs[i] gets a
 * freshly allocated array (release data with kf_free).  On failure nothing
 * is allocated and, if errbuf is not NULL, a message is written to it; the
 * one exception is KF_ERR_INDEX (a take index out of range), which still
 * fills every output, with 0 where the index was bad, and the message names
 * the first bad index. */
KF_API kf_status kf_interpret(const kf_graph *g, const kf_host_array *inputs, int ninputs,
                       kf_host_array *outputs, int noutputs, char *errbuf, size_t errlen);


/* -- Runtime: contexts ----------------------------------------------------- *
 * A context owns one device of one backend, its buffers, streams, events and
 * compiled programs.  Every kf_ call on a context (and on objects made from
 * it) may be made from many host threads at once unless its comment says
 * otherwise; each host thread should use its own stream for overlap.  */

typedef enum kf_backend {
    KF_BACKEND_AUTO = 0,  /* CUDA, then an OpenCL GPU, then the CPU backend, then OpenCL on a CPU */
    KF_BACKEND_CUDA,
    KF_BACKEND_OPENCL,
    KF_BACKEND_CPU
} kf_backend;

KF_API const char *kf_backend_name(kf_backend b);   /* "cuda", "opencl", "cpu", "auto" */

typedef struct kf_context kf_context;
typedef struct kf_buffer kf_buffer;
typedef struct kf_stream kf_stream;
typedef struct kf_event kf_event;
typedef struct kf_program kf_program;
typedef struct kf_replay kf_replay;

/* The on-disk kernel cache (docs/cache.md).  A compiled kernel is kept in
 * memory (per context) and in one SQLite database shared by every process
 * of the user, so no process compiles the same kernel twice. */
typedef enum kf_cache_mode {
    KF_CACHE_DEFAULT = 0, /* options: take env KFUSE_CACHE (rw, ro, off), else rw */
    KF_CACHE_RW,          /* read and write the disk cache */
    KF_CACHE_RO,          /* read it, never write it (a shipped, precompiled cache) */
    KF_CACHE_OFF          /* memory only */
} kf_cache_mode;

/* Receives kfuse's warnings (a cache fault that kfuse works around: a
 * refused directory, a corrupt database, a full disk; a trace file that
 * cannot be written).  At most one per
 * context is delivered, on the thread whose call met the fault;
 * kf_context_stats() counts them all. */
typedef void (*kf_warn_fn)(void *user, const char *message);

/* The cache fields left zero take the environment, then the defaults; a
 * cache field set here wins over the environment (docs/cache.md). */
typedef struct kf_context_options {
    kf_backend backend;   /* KF_BACKEND_AUTO unless set; env KFUSE_BACKEND overrides AUTO */
    int device;           /* device index within the backend; -1: env KFUSE_DEVICE, else 0 */
    const char *cache_dir;      /* NULL: env KFUSE_CACHE_DIR, else $XDG_CACHE_HOME/kfuse, else ~/.cache/kfuse */
    kf_cache_mode cache_mode;   /* KF_CACHE_DEFAULT: env KFUSE_CACHE, else KF_CACHE_RW */
    uint64_t cache_max_bytes;   /* 0: env KFUSE_CACHE_MAX_SIZE ("512M"), else 1 GiB */
    int cache_must_hit;         /* > 0: a kernel missing from the cache is KF_ERR_CACHE_MISS, never
                                 * compiled; < 0: compile on a miss; 0: env KFUSE_CACHE_MUST_HIT=1 */
    kf_warn_fn warn;            /* NULL: warnings go to stderr as "kfuse: warning: ..." */
    void *warn_user;            /* passed to warn */
    /* kf_run_host's pinned staging pool (docs/host.md): slots allocated one
     * by one as runs need them, never more than staging_slots.  0: env
     * KFUSE_STAGING ("SLOTSxSIZE", e.g. "4x64M"), else 4 slots of 64 MiB. */
    int staging_slots;
    uint64_t staging_slot_bytes;
    const char *trace_path;     /* write a Chrome trace-event JSON file of this context there (docs/trace.md);
                                 * NULL: env KFUSE_TRACE, else no trace.  A path another context is writing
                                 * gets "-PID-N" before its ".json".  A file that cannot be written is a
                                 * warning (see warn), never an error */
    /* Approximate f32 math in this context's kernels, for speed (docs/codegen.md, "Fast
     * math", has the list per target): f32 (and f16, bf16) exp, log, log2, log10, sin, cos,
     * tan, rsqrt and division, rcp's and sigmoid's included, through the device's
     * approximate functions (CUDA's __expf, __fdividef, ...; OpenCL's native_*), whose
     * error and handling of subnormals, infinities and large arguments the device's
     * documentation gives; and the float rewrites that change bits (x*1, x+0:
     * docs/fusion.md).  f64, integers, other functions, +, -, *, sqrt and reductions
     * stay as without it.  The CPU backend takes the rewrites only.  false (the
     * default): IEEE results within a few ulp of kf_interpret.  Part of the cache key;
     * no environment variable sets it. */
    bool fast_math;
} kf_context_options;

typedef struct kf_device_info {
    kf_backend backend;
    char name[128];        /* "NVIDIA H100 80GB HBM3", "pthread-skylake-avx512" */
    char arch[64];         /* "sm_90"; OpenCL: the device version string */
    char driver[64];       /* driver version */
    uint64_t memory_bytes; /* global memory */
    int compute_units;     /* SMs / compute units */
    bool fp64, fp16;       /* f64 and f16 arrays supported */
    bool gpu;              /* a GPU, not a CPU device */
    int sm;                /* NVIDIA compute capability, major * 10 + minor (90 for sm_90), on CUDA
                            * and on NVIDIA OpenCL devices (cl_nv_device_attribute_query); else 0 */
    double memory_gbps;    /* peak DRAM bandwidth in GB/s, two transfers a memory clock over the
                            * bus (the driver's memory clock and bus width), on CUDA: about 3350
                            * on an H100 SXM; 0 where unknown (OpenCL, the CPU backend, a driver
                            * that gives neither).  kfuse's launch rule reads it (docs/codegen.md) */
} kf_device_info;

/* Create a context.  opts may be NULL (all defaults).  On failure *out is
 * NULL and, if errbuf is given, it receives the reason (no driver, no
 * device, the driver's error name). */
KF_API kf_status kf_context_create(const kf_context_options *opts, kf_context **out, char *errbuf, size_t errlen);
/* Destroy a context and everything made from it (programs, buffers,
 * streams, events).  Not to be called while other threads use it. */
KF_API void kf_context_destroy(kf_context *ctx);
KF_API kf_status kf_context_info(kf_context *ctx, kf_device_info *out);
/* The message of the last failed call made by this thread on ctx (compiler
 * log, symbol names, driver error name); "" when none. */
KF_API const char *kf_context_error(kf_context *ctx);

/* What the context's compiles did, since it was created.  A kf_compile is
 * answered from memory (an equal graph compiled before in this context),
 * from disk, or by compiling (a miss).  Then what it queued: runs, kernel
 * launches, bytes copied, and (while tracing) the kernels' device time. */
typedef struct kf_stats {
    kf_backend backend;
    kf_cache_mode cache_mode;   /* in effect: KF_CACHE_RW, _RO, or _OFF (memory only, also after a fault) */
    bool must_hit;
    char cache_dir[1024];       /* the directory in use; "" when memory only */
    uint64_t memory_hits;       /* kf_compile calls served by the in-process plan cache */
    uint64_t disk_hits;         /* ... by the disk cache (loaded, not compiled) */
    uint64_t misses;            /* ... by neither: compiled, or KF_ERR_CACHE_MISS in must-hit mode */
    uint64_t compiles;          /* device compiler runs (NVRTC, clBuildProgram from source, LLVM) */
    double compile_ms;          /* wall time of those runs */
    uint64_t bytes_read;        /* compiled code loaded from disk */
    uint64_t bytes_written;     /* compiled code stored to disk */
    uint64_t memory_entries;    /* programs held by the plan cache now */
    uint64_t memory_evictions;  /* programs dropped from the plan cache (bounded, least recently used) */
    uint64_t disk_evictions;    /* disk entries this context evicted to keep the size cap */
    uint64_t dropped;           /* disk entries found bad (checksum, length, refused by the driver), removed */
    uint64_t warnings;          /* cache faults worked around (only the first was reported) */
    char warning[512];          /* the first warning; "" when none */
    /* What the context queued, since it was created (counted whether or not it traces): */
    uint64_t runs;              /* kf_run calls that queued their kernels */
    uint64_t launches;          /* kernel launches queued (a kernel may take more than one launch) */
    uint64_t bytes_uploaded;    /* by kf_upload */
    uint64_t bytes_downloaded;  /* by kf_download */
    uint64_t bytes_copied;      /* by kf_copy (device to device) */
    double device_busy_ms;      /* device time of the kernels, summed, measured from events: only while
                                 * tracing (0 otherwise), and only of kernels whose stream or a later
                                 * event was synchronised since */
    char trace_path[1024];      /* the trace file being written; "" when not tracing */
} kf_stats;
KF_API kf_status kf_context_stats(kf_context *ctx, kf_stats *out);

/* -- Runtime: buffers and views -------------------------------------------- */

/* Device memory of 'bytes' bytes (at least 256-byte aligned). */
KF_API kf_status kf_buffer_alloc(kf_context *ctx, size_t bytes, kf_buffer **out);
KF_API void kf_buffer_free(kf_buffer *b);
KF_API size_t kf_buffer_size(const kf_buffer *b);
/* Copies between host memory and a buffer at a byte offset.  With stream
 * NULL the call is synchronous (returns when the copy is done); with a
 * stream it is queued and the host memory must stay valid until the stream
 * reaches it. */
KF_API kf_status kf_upload(kf_buffer *dst, size_t offset, const void *src, size_t bytes, kf_stream *stream);
KF_API kf_status kf_download(void *dst, const kf_buffer *src, size_t offset, size_t bytes, kf_stream *stream);
/* Copy bytes from src at srcoff to dst at dstoff, on the device; the same
 * stream rule (NULL: synchronous on the default stream; a stream: queued).
 * Both buffers and the stream must come from one context, both ranges must
 * lie inside their buffers and, within one buffer, must not overlap. */
KF_API kf_status kf_copy(kf_buffer *dst, size_t dstoff, const kf_buffer *src, size_t srcoff, size_t bytes,
                         kf_stream *stream);

/* An array in a buffer: byte offset of element [0,...,0], dtype, shape and
 * strides in elements (any integer, 0 for a broadcast dimension). */
typedef struct kf_view {
    kf_buffer *buf;
    size_t offset;
    kf_dtype dtype;
    int rank;
    int64_t shape[KF_MAX_RANK];
    int64_t strides[KF_MAX_RANK];
} kf_view;

/* A dense row-major view of buf at byte offset. */
KF_API kf_view kf_view_dense(kf_buffer *buf, size_t offset, kf_dtype t, int rank, const int64_t *shape);

/* -- Runtime: streams and events -------------------------------------------- */

/* Streams are ordered queues of copies and launches; NULL in any call means
 * the context's default stream.  Events mark a point in a stream. */
KF_API kf_status kf_stream_create(kf_context *ctx, kf_stream **out);
/* A stream over a native stream the caller owns, to queue kfuse's work in
 * order with another library's on the same device (its current stream).
 * CUDA: a CUstream of the device's primary context, which the CUDA
 * libraries on that device share (torch.cuda.current_stream().cuda_stream,
 * CuPy's stream.ptr), or NULL / CU_STREAM_LEGACY for the legacy default
 * stream and CU_STREAM_PER_THREAD.  A stream of another CUDA context is
 * KF_ERR_CONTEXT, what the driver rejects KF_ERR_DEVICE; the handle must
 * be a live CUstream (the driver cannot tell a stale one).  The OpenCL and
 * CPU backends take none (KF_ERR_UNSUPPORTED).  The native stream must
 * outlive the kf_stream; kf_stream_destroy synchronises it (kfuse's scratch
 * memory outlives the kernels queued there) and never destroys it.  CUDA
 * cannot capture its legacy default stream: kf_capture_begin refuses such
 * a wrap (KF_ERR_INVALID_ARG). */
KF_API kf_status kf_stream_wrap(kf_context *ctx, void *native, kf_stream **out);
KF_API void kf_stream_destroy(kf_stream *s);
/* Wait until everything queued on s is done.  Reports KF_ERR_INDEX when a
 * take in a kernel run on s since the last synchronisation (or in a replay
 * last launched on s) saw an index out of range.  Refused
 * (KF_ERR_INVALID_ARG) while s is capturing. */
KF_API kf_status kf_stream_sync(kf_context *ctx, kf_stream *s);
KF_API kf_status kf_event_create(kf_context *ctx, kf_event **out);
KF_API void kf_event_destroy(kf_event *e);
KF_API kf_status kf_event_record(kf_event *e, kf_stream *s);
/* Make s wait (on the device) for e before later work starts. */
KF_API kf_status kf_stream_wait(kf_stream *s, kf_event *e);
KF_API kf_status kf_event_sync(kf_event *e);
/* Milliseconds between two recorded, completed events. */
KF_API kf_status kf_event_elapsed(kf_event *start, kf_event *end, float *ms);

/* -- Runtime: compiling and running graphs ----------------------------------- */

/* Fuse, generate and compile g for ctx's device (g is not kept: the program
 * holds its own copy).  Use it to warm up; kf_run compiles on first use
 * otherwise.  A compile error's log is in kf_context_error(). */
KF_API kf_status kf_compile(kf_context *ctx, const kf_graph *g, kf_program **out);
KF_API void kf_program_free(kf_program *p);
/* Number of kernels one run launches (x+x+x+x+x: 1). */
KF_API int kf_program_num_kernels(const kf_program *p);

/* Queue one run of p on stream s (NULL: default), asynchronously.
 * inputs: one view per array input of the graph, in order (scalar inputs
 * skipped); scalars: one pointer per scalar input, in order, to a value of
 * its dtype (read before the call returns).  outputs: one view per graph
 * output; a view with buf == NULL is allocated by kfuse (dense) and filled
 * in - the caller frees that buffer.  Symbols are bound from the input
 * shapes; every mismatch (dtype, rank, a symbol bound to two sizes, a literal
 * dim, a view outside its buffer, a buffer from another context) is an error
 * naming the input, symbol and both sizes, found before anything is queued.
 * On a GPU an elementwise kernel takes a thread per element (or vector of
 * up to 16 bytes): one needing more than 2^31 - 1 blocks of 256 threads
 * (about 2^39 elements) is KF_ERR_LIMIT, also before anything is queued.
 * A call whose views repeat the geometry (dtype, rank, offset, shape,
 * strides) of the program's last successful run reuses its launch facts
 * and checks only the buffers (docs/api.md, "Compile and run"). */
KF_API kf_status kf_run(kf_program *p, kf_stream *s, const kf_view *inputs, int ninputs,
                        const void *const *scalars, int nscalars, kf_view *outputs, int noutputs);

/* -- Runtime: host arrays ------------------------------------------------------ */

/* Page-locked ("pinned") host memory of 'bytes' bytes (at least 64-byte
 * aligned) for ctx's device: copies from and to it run asynchronously at
 * the bus's full rate, and kf_run_host moves it without staging.  Slow to
 * allocate (the pages are locked): allocate once and reuse.  CUDA:
 * cuMemHostAlloc (portable); OpenCL: a mapped CL_MEM_ALLOC_HOST_PTR
 * buffer; CPU backend: aligned host memory.  Released by kf_host_free or
 * with the context. */
KF_API kf_status kf_host_alloc(kf_context *ctx, size_t bytes, void **ptr);
/* Release memory from kf_host_alloc on ctx (NULL: nothing to do; any other
 * pointer is KF_ERR_INVALID_ARG).  No queued copy may still use it. */
KF_API kf_status kf_host_free(kf_context *ctx, void *ptr);

/* How kf_run_host moves host memory that is not from kf_host_alloc. */
typedef enum kf_staging {
    KF_STAGING_AUTO = 0,  /* through the pinned staging pool on a GPU; directly on a CPU device */
    KF_STAGING_ALWAYS,    /* through the pinned staging pool */
    KF_STAGING_NEVER      /* directly (on a GPU, pageable copies are slow and serialise) */
} kf_staging;

/* What a kf_run_host did (docs/host.md). */
typedef struct kf_host_stats {
    bool chunkable;        /* the graph can run in chunks along 'axis' */
    char why[256];         /* when not chunkable: why it ran as one chunk */
    char axis[64];         /* the symbol of the chunked axis; "" when none */
    int64_t chunks;        /* chunks run (1 when not chunkable or small) */
    int64_t chunk_elems;   /* length of a chunk along the axis (the last may be shorter) */
    int streams;           /* streams used */
    uint64_t staged_bytes; /* bytes copied through the pinned staging pool */
    uint64_t direct_bytes; /* bytes copied straight from or to the caller's memory */
    double h2d_gbps, d2h_gbps; /* the context's pinned copy rates (measured once), GB/s */
} kf_host_stats;

/* Options of kf_run_host; NULL or zero fields take the defaults. */
typedef struct kf_host_options {
    int64_t chunk_elems;   /* chunk length along the chunked axis; 0: chosen from the copy rates
                            * and the kernel time (docs/host.md); capped by a staging slot */
    int streams;           /* streams in the pipeline, 1 to 16; 0: 3 */
    kf_staging staging;    /* KF_STAGING_AUTO unless set */
    kf_host_stats *stats;  /* filled in when not NULL (also on failure, as far as the run got) */
} kf_host_options;

/* Run p on host arrays and wait for the results.  inputs: one host array
 * per array input (scalar inputs skipped), any host memory, dense
 * row-major; scalars as in kf_run.  outputs: one per graph output; a NULL
 * data is allocated by kfuse (release it with kf_free) and the array's
 * dtype, rank and shape are filled in, as kf_interpret does; a non-NULL
 * data must match the output's dtype, rank and shape and is written.
 * The work is split into chunks along the outputs' leading symbolic
 * dimension where the graph allows (reductions over that axis are
 * combined on the host: float sums in double), and the upload, compute
 * and download of successive chunks overlap on several streams; pageable
 * memory goes through the context's pinned staging pool, kf_host_alloc'd
 * memory is copied directly.  docs/host.md gives the rules.  Every check
 * (counts, NULL data, dtypes, shapes, symbols) happens before anything
 * runs.  A take index out of range gives KF_ERR_INDEX with every output
 * written (0 where the index was bad). */
KF_API kf_status kf_run_host(kf_program *p, const kf_host_array *inputs, int ninputs, const void *const *scalars,
                             int nscalars, kf_host_array *outputs, int noutputs, const kf_host_options *opts);

/* -- Runtime: capture and replay ------------------------------------------------ *
 * A sequence of calls on one stream, captured once, replays with one call:
 * on CUDA it is a CUDA graph (one launch for the whole sequence); on OpenCL
 * and the CPU backend kfuse keeps the calls with their arguments resolved
 * and issues them again in order.  Between kf_capture_begin and
 * kf_capture_end, kf_run, kf_upload, kf_download, kf_event_record and
 * kf_stream_wait on that stream are recorded, NOT executed: nothing runs
 * until the replay is launched.  A replay re-issues them with the same
 * buffers, views and scalar values (scalars are copied at capture time) and
 * the same host pointers, whose memory is read (upload) or written
 * (download) when the replay runs, so the caller changes a captured
 * upload's input by rewriting its host memory between launches; host
 * pointers must stay valid while the replay exists (on CUDA, pinned memory
 * makes the copies asynchronous; pageable memory works but copies through a
 * staging buffer).  The user keeps every buffer, program and event a
 * replay uses until kf_replay_free: freeing one makes later launches of the
 * replay fail with KF_ERR_INVALID_ARG naming it (it is never used freed).
 * A replay owns the scratch memory of its kernels, so it is independent of
 * the stream it was captured on. */

/* Start capturing on s, a stream from kf_stream_create (the default stream,
 * s == NULL, cannot be captured).  Waits for the work already queued on s.
 * While capturing: kf_run refuses outputs with buf == NULL (allocate them
 * first), kf_stream_sync(s) is refused, and a take out of range in a
 * captured kernel is reported by the sync after a launch of the replay.
 * KF_ERR_INVALID_ARG when s is capturing already. */
KF_API kf_status kf_capture_begin(kf_context *ctx, kf_stream *s);
/* Stop capturing on s; *out receives the replay (release it with
 * kf_replay_free).  A sequence with no call is a valid, empty replay.
 * KF_ERR_INVALID_ARG when s is not capturing; KF_ERR_DEVICE when the
 * driver refused the capture (its reason is in the message). */
KF_API kf_status kf_capture_end(kf_context *ctx, kf_stream *s, kf_replay **out);
/* Queue the whole captured sequence on stream s (NULL: the default stream),
 * asynchronously, any number of times.  Launches of one replay run one
 * after another, whatever their streams (they share its scratch memory): a
 * launch on another stream waits for the previous one on the device.
 * KF_ERR_CONTEXT for a stream of another context; KF_ERR_INVALID_ARG while
 * s is capturing, or when something the replay uses was freed. */
KF_API kf_status kf_replay_launch(kf_replay *r, kf_stream *s);
/* Wait for the replay's launches, then release it.  NULL is ignored. */
KF_API void kf_replay_free(kf_replay *r);

#ifdef __cplusplus
}
#endif
#endif /* KFUSE_H */
