/* Runtime core internals: contexts, buffers, streams, events, programs.
 * Module prefix kf_rt_.  Backends are reached only through ctx->be. */
#ifndef KF_RUNTIME_H
#define KF_RUNTIME_H

#include "backend.h"

#include <pthread.h>
#include <stdatomic.h>

/* Every object made from a context is on its list, so that destroying the
 * context releases everything. */
typedef struct kf_rt_link {
    struct kf_rt_link *prev, *next;
} kf_rt_link;

#define KF_RT_ERR_SLOTS 64

typedef struct kf_trace kf_trace;

struct kf_buffer {
    kf_rt_link link;
    kf_context *ctx;
    void *h;
    size_t size;
};

struct kf_stream {
    kf_rt_link link;
    kf_context *ctx;
    void *h;                 /* backend stream; NULL for the default stream */
    bool wrapped;            /* h is the caller's (kf_stream_wrap): never destroyed here */
    pthread_mutex_t lock;    /* held while a run is queued: scratch is per stream */
    void *flag;              /* device int: set by a take out of range */
    atomic_bool flag_armed;  /* a take kernel ran since the last sync */
    void *arena[2];          /* scratch: [0] stored intermediates, [1] reduction partials */
    size_t arena_size[2];
    uint32_t trace_id;       /* "stream N" in a trace; 0 for the default stream */
    bool trace_named;        /* its thread_name is in the trace (trace lock) */
    _Atomic(kf_replay *) capture; /* the replay being captured on this stream, or NULL (replay.c) */
};

struct kf_event {
    kf_rt_link link;
    kf_context *ctx;
    void *h;
    atomic_bool recorded;
    kf_stream *trace_stream; /* tracing: where it was last recorded, and the span */
    uint64_t trace_seq;      /* sequence number then (kf_trace_seq) */
};

typedef struct kf_rt_errslot {
    pthread_t tid;
    uint64_t used;           /* last-use tick, to reuse the oldest slot */
    char msg[4096];
} kf_rt_errslot;

struct kf_context {
    const kf_backend_ops *be;
    void *dev;
    kf_device_info info;
    pthread_mutex_t lock;    /* object lists and the error table */
    kf_rt_link buffers, streams, events, programs, replays;
    atomic_int armed_replays; /* replays whose take flag awaits a stream sync (replay.c) */
    kf_stream *default_stream;
    kf_rt_errslot errs[KF_RT_ERR_SLOTS];
    uint64_t tick;
    unsigned hooks;          /* KF_RT_HOOK_*: test-only faults */
    struct kf_rt_cache *cache; /* kernel cache: plan cache, disk store, stats (cached.c) */
    bool array_ptrs;         /* kf_cg_array_pointers of the context's language: kf_run moves each buffer
                              * argument to its array's first element (kf_rt_arg.offset) */
    struct kf_rt_host *host;   /* pinned memory, staging pool, copy rates (staging.c) */
    kf_trace *trace;         /* NULL unless tracing (trace.c); the one test on every hook */
    atomic_uint_fast64_t runs, launches, bytes_up, bytes_down, bytes_copied; /* kf_stats counters (relaxed) */
    atomic_uint stream_ids;  /* trace ids handed out to streams */
};
typedef struct kf_rt_host kf_rt_host;

/* Test hooks (tests/test_runtime.c): break the generated source so the
 * device compiler fails, or hide f64/f16 support as a device without the
 * extension would.  Not part of the public API. */
enum { KF_RT_HOOK_BREAK_CODEGEN = 1, KF_RT_HOOK_NO_FP64 = 2, KF_RT_HOOK_NO_FP16 = 4 };
void kf_rt_set_hooks(kf_context *ctx, unsigned hooks);

/* Record msg as this thread's last error on ctx; returns s. */
kf_status kf_rt_fail(kf_context *ctx, kf_status s, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Clear this thread's last error (a call that succeeds leaves ""). */
void kf_rt_clear_error(kf_context *ctx);
void kf_rt_link_add(kf_context *ctx, kf_rt_link *head, kf_rt_link *l);
void kf_rt_link_remove(kf_context *ctx, kf_rt_link *l);
/* The stream object for s (NULL: the default stream). */
static inline kf_stream *kf_rt_stream(kf_context *ctx, kf_stream *s) { return s ? s : ctx->default_stream; }
/* Make sure scratch arena i of s holds at least bytes (synchronising s
 * before releasing a smaller one that queued work may still use).  A new
 * arena 1 is zeroed on s first: a GPU's reductions keep counters there
 * that every launch leaves zero (kf_cg_launch_rule).  Caller holds
 * s->lock. */
kf_status kf_rt_arena(kf_context *ctx, kf_stream *s, int i, size_t bytes);
/* The take flag of s, allocated and zeroed on first use.  Caller holds s->lock. */
kf_status kf_rt_flag(kf_context *ctx, kf_stream *s);
void kf_rt_program_release(kf_program *p);
/* The program's optimised graph (its inputs and outputs are the caller's). */
const kf_graph *kf_rt_program_graph(const kf_program *p);
kf_context *kf_rt_program_context(const kf_program *p);
/* Kernel seconds per byte moved that kf_run_host last measured for p (0
 * before the first measurement). */
double kf_rt_program_kernel_rate(const kf_program *p);
void kf_rt_program_set_kernel_rate(kf_program *p, double seconds_per_byte);

/* -- Issuing and capturing (replay.c) ------------------------------------------ */

typedef enum { KF_RT_LAUNCH, KF_RT_COPY, KF_RT_RECORD, KF_RT_WAIT } kf_rt_opkind;

/* One call on a stream as the core hands it to the backend. */
typedef struct kf_rt_op {
    kf_rt_opkind kind;
    void *fn;                /* launch */
    uint64_t grid;
    uint32_t block;
    const kf_rt_arg *args;
    int nargs;
    kf_rt_copy copy;         /* copy: host pointers or buffer handles, as backend copy() */
    void *dst;
    size_t dstoff;
    const void *src;
    size_t srcoff;
    size_t bytes;
    bool sync;
    kf_event *event;         /* record, wait */
} kf_rt_op;

/* Queue op on st; while st is capturing on a backend without a capture of
 * its own, record it into the replay instead (launch arguments and by-value
 * bytes copied).  On failure err says why. */
kf_status kf_rt_issue(kf_context *ctx, kf_stream *st, const kf_rt_op *op, kf_rt_err *err);
/* While st is capturing: remember that the replay uses obj (a buffer,
 * program or event), so that freeing it disables the replay. */
kf_status kf_rt_capture_use(kf_stream *st, const void *obj);
/* While st is capturing: e is recorded by the replay (kf_replay_launch
 * marks it recorded; a later wait in the same capture may use it). */
kf_status kf_rt_capture_mark(kf_stream *st, kf_event *e);
bool kf_rt_capture_marked(kf_stream *st, const kf_event *e);
/* A kernel with a take check was captured on st. */
void kf_rt_capture_take(kf_stream *st);
/* The capture keeps scratch arena handle h alive (replaced while growing). */
kf_status kf_rt_capture_retire(kf_stream *st, void *h);
/* End st's capture, if any, and discard it (the stream goes away). */
void kf_rt_capture_abort(kf_stream *st);
/* obj (a buffer, program or event) is being freed: every replay that uses
 * it refuses to launch from now on. */
void kf_rt_replay_forget(kf_context *ctx, const void *obj, const char *what);
/* After st is synchronised: the take flags of replays last launched on st
 * (KF_ERR_INDEX when one was set). */
kf_status kf_rt_replay_check(kf_context *ctx, kf_stream *st);

#endif /* KF_RUNTIME_H */
