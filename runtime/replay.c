/* Capture and replay: calls on a stream recorded once and issued again with
 * one call.  Every call the core makes on a stream goes through
 * kf_rt_issue, which queues it, or records it while the stream captures on
 * a backend without a capture of its own (OpenCL, CPU); CUDA captures into
 * a CUDA graph (the backend's capture_begin/end, graph_launch).
 *
 * Rules:
 * - While capturing, the stream's scratch arenas and take flag are the
 *   replay's: kernels captured into the replay use memory it owns, and an
 *   arena that grows keeps its old block alive in the replay (the captured
 *   kernels before the growth use it).  Nothing synchronises the stream
 *   during a capture (CUDA refuses a sync there).
 * - Launches of one replay are ordered one after another (as CUDA orders
 *   the launches of one graph): each records the replay's 'done' event and
 *   a launch on another stream waits for it first.
 * - A replay with take checks arms itself on the stream of its last
 *   launch; kf_stream_sync of that stream reads and clears its flag.
 * - Lock order: a stream's lock (kf_run, a capture beginning or ending),
 *   then ctx->lock, then a replay's lock.  A launch holds only the
 *   replay's lock. */
#include "runtime.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A growing array of object pointers. */
typedef struct kf_rt_ptrs {
    const void **p;
    int n, cap;
} kf_rt_ptrs;

struct kf_replay {
    kf_rt_link link;          /* on ctx->replays once the capture ended */
    kf_context *ctx;
    pthread_mutex_t lock;     /* ops, uses, marks, broken; one launch at a time */
    void *graph;              /* the backend's graph (CUDA), else NULL: ops */
    kf_rt_op *ops;
    int nops, capops;
    kf_rt_ptrs uses;          /* buffers, programs, events the calls use */
    kf_rt_ptrs marks;         /* events (kf_event) recorded by the sequence */
    kf_rt_ptrs retired;       /* arena blocks (backend handles) replaced while capturing */
    void *arena[2];
    size_t arena_size[2];
    void *flag;               /* the take flag of its kernels */
    atomic_bool has_take;
    _Atomic(kf_stream *) armed_on; /* stream of the last launch while the flag is unread */
    void *done;               /* backend event: the end of the last launch */
    kf_stream *last;          /* stream of the last launch, NULL before the first */
    char broken[256];         /* why it may not launch ("" when it may) */
    void *saved_arena[2];     /* the stream's own scratch while capturing */
    size_t saved_size[2];
    void *saved_flag;
};

/* -- Growing arrays ------------------------------------------------------------ */

/* p with room for element n (capacity *cap, doubled when full); NULL
 * when out of memory (p is then unchanged). */
static void *grow(void *p, int *cap, int n, size_t elem)
{
    if (n < *cap)
        return p;
    int c = *cap ? *cap * 2 : 16;
    void *q = realloc(p, (size_t)c * elem);
    if (q)
        *cap = c;
    return q;
}

static kf_replay *capturing(kf_stream *st) { return st ? atomic_load(&st->capture) : NULL; }

/* -- Issuing --------------------------------------------------------------------- */

static kf_status op_exec(kf_context *ctx, void *h, const kf_rt_op *op, kf_rt_err *err)
{
    const kf_backend_ops *be = ctx->be;
    switch (op->kind) {
    case KF_RT_LAUNCH: return be->launch(ctx->dev, op->fn, op->grid, op->block, op->args, op->nargs, h, err);
    case KF_RT_COPY:
        return be->copy(ctx->dev, op->copy, op->dst, op->dstoff, op->src, op->srcoff, op->bytes, h, op->sync, err);
    case KF_RT_RECORD: return be->event_record(ctx->dev, op->event->h, h, err);
    case KF_RT_WAIT: return be->stream_wait(ctx->dev, h, op->event->h, err);
    }
    snprintf(err->msg, sizeof err->msg, "unknown stream call %d", (int)op->kind);
    return KF_ERR_INVALID_ARG;
}

/* Append op to r, with a private copy of a launch's arguments. */
static kf_status record(kf_replay *r, const kf_rt_op *op, kf_rt_err *err)
{
    kf_rt_op o = *op;
    if (op->kind == KF_RT_LAUNCH) {
        size_t head = ((size_t)op->nargs * sizeof *op->args + 15) & ~(size_t)15, bytes = 0;
        for (int i = 0; i < op->nargs; i++)
            bytes += op->args[i].bytes ? (op->args[i].size + 15) & ~(size_t)15 : 0;
        kf_rt_arg *args = malloc(head + bytes + 1);
        if (!args) {
            snprintf(err->msg, sizeof err->msg, "out of host memory recording a launch");
            return KF_ERR_NO_MEMORY;
        }
        unsigned char *val = (unsigned char *)args + head;
        for (int i = 0; i < op->nargs; i++) {
            args[i] = op->args[i];
            if (op->args[i].bytes) {
                memcpy(val, op->args[i].bytes, op->args[i].size);
                args[i].bytes = val;
                val += (op->args[i].size + 15) & ~(size_t)15;
            }
        }
        o.args = args;
    }
    pthread_mutex_lock(&r->lock);
    kf_rt_op *ops = grow(r->ops, &r->capops, r->nops, sizeof *r->ops);
    bool ok = ops != NULL;
    if (ok) {
        r->ops = ops;
        r->ops[r->nops++] = o;
    }
    pthread_mutex_unlock(&r->lock);
    if (!ok) {
        if (o.kind == KF_RT_LAUNCH)
            free((void *)o.args);
        snprintf(err->msg, sizeof err->msg, "out of host memory recording a call");
        return KF_ERR_NO_MEMORY;
    }
    return KF_OK;
}

kf_status kf_rt_issue(kf_context *ctx, kf_stream *st, const kf_rt_op *op, kf_rt_err *err)
{
    kf_replay *r = capturing(st);
    if (r && !ctx->be->capture_begin)
        return record(r, op, err);
    return op_exec(ctx, st->h, op, err);
}

/* -- What a capture keeps -------------------------------------------------------- */

/* Append obj to array a of st's capture, if st is capturing. */
static kf_status keep(kf_stream *st, size_t field, const void *obj)
{
    kf_replay *r = capturing(st);
    if (!r)
        return KF_OK;
    kf_rt_ptrs *a = (kf_rt_ptrs *)((char *)r + field);
    pthread_mutex_lock(&r->lock);
    const void **p = grow(a->p, &a->cap, a->n, sizeof *a->p);
    if (p) {
        a->p = p;
        a->p[a->n++] = obj;
    }
    pthread_mutex_unlock(&r->lock);
    return p ? KF_OK : kf_rt_fail(r->ctx, KF_ERR_NO_MEMORY, "capture: out of host memory");
}

kf_status kf_rt_capture_use(kf_stream *st, const void *obj) { return keep(st, offsetof(kf_replay, uses), obj); }
kf_status kf_rt_capture_mark(kf_stream *st, kf_event *e) { return keep(st, offsetof(kf_replay, marks), e); }
kf_status kf_rt_capture_retire(kf_stream *st, void *h) { return keep(st, offsetof(kf_replay, retired), h); }

static bool has(const kf_rt_ptrs *a, const void *obj)
{
    for (int i = 0; i < a->n; i++)
        if (a->p[i] == obj)
            return true;
    return false;
}

bool kf_rt_capture_marked(kf_stream *st, const kf_event *e)
{
    kf_replay *r = capturing(st);
    if (!r)
        return false;
    pthread_mutex_lock(&r->lock);
    bool found = has(&r->marks, e);
    pthread_mutex_unlock(&r->lock);
    return found;
}

void kf_rt_capture_take(kf_stream *st)
{
    kf_replay *r = capturing(st);
    if (r)
        atomic_store(&r->has_take, true);
}

/* -- Capturing ------------------------------------------------------------------- */

/* Release everything r owns (r is on no list; no launch is in flight). */
static void replay_destroy(kf_replay *r)
{
    kf_context *ctx = r->ctx;
    if (r->graph)
        ctx->be->graph_free(ctx->dev, r->graph);
    for (int i = 0; i < r->nops; i++)
        if (r->ops[i].kind == KF_RT_LAUNCH)
            free((void *)r->ops[i].args);
    for (int i = 0; i < r->retired.n; i++)
        ctx->be->free(ctx->dev, (void *)r->retired.p[i]);
    for (int i = 0; i < 2; i++)
        if (r->arena[i])
            ctx->be->free(ctx->dev, r->arena[i]);
    if (r->flag)
        ctx->be->free(ctx->dev, r->flag);
    if (r->done)
        ctx->be->event_destroy(ctx->dev, r->done);
    free(r->ops);
    free(r->uses.p);
    free(r->marks.p);
    free(r->retired.p);
    pthread_mutex_destroy(&r->lock);
    free(r);
}

/* Swap the stream's scratch and flag with the replay's (begin and end). */
static void swap_scratch(kf_stream *s, kf_replay *r, bool begin)
{
    if (begin) {
        for (int i = 0; i < 2; i++) {
            r->saved_arena[i] = s->arena[i];
            r->saved_size[i] = s->arena_size[i];
            s->arena[i] = NULL;
            s->arena_size[i] = 0;
        }
        r->saved_flag = s->flag;
        s->flag = r->flag;
    } else {
        for (int i = 0; i < 2; i++) {
            r->arena[i] = s->arena[i];
            r->arena_size[i] = s->arena_size[i];
            s->arena[i] = r->saved_arena[i];
            s->arena_size[i] = r->saved_size[i];
        }
        s->flag = r->saved_flag;
    }
}

kf_status kf_capture_begin(kf_context *ctx, kf_stream *s)
{
    if (!ctx)
        return KF_ERR_INVALID_ARG;
    if (!s)
        return kf_rt_fail(ctx, KF_ERR_INVALID_ARG,
                          "kf_capture_begin: the default stream cannot be captured; capture on a stream from "
                          "kf_stream_create");
    if (s->ctx != ctx)
        return kf_rt_fail(ctx, KF_ERR_CONTEXT, "kf_capture_begin: the stream belongs to another context");
    kf_replay *r = calloc(1, sizeof *r);
    if (!r)
        return kf_rt_fail(ctx, KF_ERR_NO_MEMORY, "kf_capture_begin: out of host memory");
    r->ctx = ctx;
    pthread_mutex_init(&r->lock, NULL);
    r->link.next = r->link.prev = &r->link;
    const kf_backend_ops *be = ctx->be;
    kf_rt_err err;
    const int32_t zero = 0;
    const char *what = "creating the replay's event";
    kf_status st = be->event_create(ctx->dev, &r->done, &err);
    if (st == KF_OK) {
        what = "allocating the replay's take flag";
        st = be->alloc(ctx->dev, 4, &r->flag, &err);
    }
    if (st == KF_OK)
        st = be->copy(ctx->dev, KF_COPY_H2D, r->flag, 0, &zero, 0, 4, NULL, true, &err);
    if (st != KF_OK) {
        replay_destroy(r);
        return kf_rt_fail(ctx, st, "kf_capture_begin: %s: %s", what, err.msg);
    }
    pthread_mutex_lock(&s->lock);
    if (capturing(s)) {
        pthread_mutex_unlock(&s->lock);
        replay_destroy(r);
        return kf_rt_fail(ctx, KF_ERR_INVALID_ARG,
                          "kf_capture_begin: the stream is capturing already (kf_capture_end ends a capture)");
    }
    /* what is queued before the capture finishes first: a program freed
     * during the capture need not wait for a capturing stream */
    what = "waiting for the stream";
    st = be->stream_sync(ctx->dev, s->h, &err);
    if (st == KF_OK && be->capture_begin) {
        what = "starting the capture";
        st = be->capture_begin(ctx->dev, s->h, &err);
    }
    if (st == KF_OK) {
        swap_scratch(s, r, true);
        atomic_store(&s->capture, r);
    }
    pthread_mutex_unlock(&s->lock);
    if (st != KF_OK) {
        replay_destroy(r);
        return kf_rt_fail(ctx, st, "kf_capture_begin: %s: %s", what, err.msg);
    }
    return KF_OK;
}

/* Detach s's capture (s->lock held) and give the stream its scratch back;
 * a backend that captures itself ends its capture into the replay's graph
 * (*st says whether that worked). */
static kf_replay *capture_stop(kf_stream *s, kf_status *st, kf_rt_err *err)
{
    kf_context *ctx = s->ctx;
    kf_replay *r = capturing(s);
    *st = KF_OK;
    if (!r)
        return NULL;
    atomic_store(&s->capture, NULL);
    swap_scratch(s, r, false);
    if (ctx->be->capture_end)
        *st = ctx->be->capture_end(ctx->dev, s->h, &r->graph, err);
    return r;
}

kf_status kf_capture_end(kf_context *ctx, kf_stream *s, kf_replay **out)
{
    if (!ctx)
        return KF_ERR_INVALID_ARG;
    if (!out)
        return kf_rt_fail(ctx, KF_ERR_INVALID_ARG, "kf_capture_end: out is NULL");
    *out = NULL;
    if (s && s->ctx != ctx)
        return kf_rt_fail(ctx, KF_ERR_CONTEXT, "kf_capture_end: the stream belongs to another context");
    kf_status st = KF_OK;
    kf_rt_err err;
    kf_replay *r = NULL;
    if (s) {
        pthread_mutex_lock(&s->lock);
        r = capture_stop(s, &st, &err);
        pthread_mutex_unlock(&s->lock);
    }
    if (!r)
        return kf_rt_fail(ctx, KF_ERR_INVALID_ARG,
                          "kf_capture_end: the stream is not capturing (no kf_capture_begin on it)");
    if (st != KF_OK) {
        replay_destroy(r);
        return kf_rt_fail(ctx, st, "kf_capture_end: the capture failed: %s", err.msg);
    }
    kf_rt_link_add(ctx, &ctx->replays, &r->link);
    *out = r;
    return KF_OK;
}

void kf_rt_capture_abort(kf_stream *s)
{
    kf_status st;
    kf_rt_err err;
    pthread_mutex_lock(&s->lock);
    kf_replay *r = capture_stop(s, &st, &err);
    pthread_mutex_unlock(&s->lock);
    if (r)
        replay_destroy(r);
}

/* -- Replaying --------------------------------------------------------------------- */

kf_status kf_replay_launch(kf_replay *r, kf_stream *s)
{
    if (!r)
        return KF_ERR_INVALID_ARG;
    kf_context *ctx = r->ctx;
    if (s && s->ctx != ctx)
        return kf_rt_fail(ctx, KF_ERR_CONTEXT, "kf_replay_launch: the stream belongs to another context than the replay");
    kf_stream *st = kf_rt_stream(ctx, s);
    if (capturing(st))
        return kf_rt_fail(ctx, KF_ERR_INVALID_ARG,
                          "kf_replay_launch: the stream is capturing; a replay cannot be captured into another");
    const kf_backend_ops *be = ctx->be;
    kf_rt_err err;
    kf_status ok = KF_OK;
    char what[64] = "";
    pthread_mutex_lock(&r->lock);
    if (r->broken[0]) {
        char why[sizeof r->broken];
        memcpy(why, r->broken, sizeof why);
        pthread_mutex_unlock(&r->lock);
        return kf_rt_fail(ctx, KF_ERR_INVALID_ARG, "kf_replay_launch: %s", why);
    }
    if (r->last && r->last != st) {
        snprintf(what, sizeof what, "waiting for its previous launch");
        ok = be->stream_wait(ctx->dev, st->h, r->done, &err);
    }
    if (ok == KF_OK && r->graph) {
        snprintf(what, sizeof what, "launching its graph");
        ok = be->graph_launch(ctx->dev, r->graph, st->h, &err);
    }
    for (int i = 0; ok == KF_OK && !r->graph && i < r->nops; i++) {
        snprintf(what, sizeof what, "call %d of %d", i + 1, r->nops);
        ok = op_exec(ctx, st->h, &r->ops[i], &err);
    }
    if (ok == KF_OK) {
        snprintf(what, sizeof what, "recording its end");
        ok = be->event_record(ctx->dev, r->done, st->h, &err);
    }
    if (ok == KF_OK) {
        r->last = st;
        for (int i = 0; i < r->marks.n; i++)
            atomic_store(&((kf_event *)r->marks.p[i])->recorded, true);
        if (atomic_load(&r->has_take) && !atomic_exchange(&r->armed_on, st))
            atomic_fetch_add(&ctx->armed_replays, 1);
    }
    pthread_mutex_unlock(&r->lock);
    return ok == KF_OK ? KF_OK : kf_rt_fail(ctx, ok, "kf_replay_launch: %s: %s", what, err.msg);
}

void kf_replay_free(kf_replay *r)
{
    if (!r)
        return;
    kf_context *ctx = r->ctx;
    kf_rt_link_remove(ctx, &r->link);
    kf_rt_err err;
    if (r->last)
        ctx->be->event_sync(ctx->dev, r->done, &err);
    if (atomic_exchange(&r->armed_on, NULL))
        atomic_fetch_sub(&ctx->armed_replays, 1);
    replay_destroy(r);
}

void kf_rt_replay_forget(kf_context *ctx, const void *obj, const char *what)
{
    pthread_mutex_lock(&ctx->lock);
    for (kf_rt_link *l = ctx->replays.next; l != &ctx->replays; l = l->next) {
        kf_replay *r = (kf_replay *)l;
        pthread_mutex_lock(&r->lock);
        if (!r->broken[0] && has(&r->uses, obj))
            snprintf(r->broken, sizeof r->broken,
                     "a %s the replay uses was freed (keep what a replay uses until kf_replay_free)", what);
        pthread_mutex_unlock(&r->lock);
    }
    pthread_mutex_unlock(&ctx->lock);
}

kf_status kf_rt_replay_check(kf_context *ctx, kf_stream *st)
{
    if (atomic_load(&ctx->armed_replays) == 0)
        return KF_OK;
    kf_status s = KF_OK, bad = KF_OK;
    kf_rt_err err;
    const int32_t zero = 0;
    pthread_mutex_lock(&ctx->lock);
    for (kf_rt_link *l = ctx->replays.next; l != &ctx->replays && s == KF_OK; l = l->next) {
        kf_replay *r = (kf_replay *)l;
        kf_stream *want = st;
        if (!atomic_compare_exchange_strong(&r->armed_on, &want, NULL))
            continue;
        atomic_fetch_sub(&ctx->armed_replays, 1);
        int32_t flag = 0;
        s = ctx->be->copy(ctx->dev, KF_COPY_D2H, &flag, 0, r->flag, 0, 4, st->h, true, &err);
        if (s == KF_OK && flag) {
            s = ctx->be->copy(ctx->dev, KF_COPY_H2D, r->flag, 0, &zero, 0, 4, st->h, true, &err);
            bad = KF_ERR_INDEX;
        }
    }
    pthread_mutex_unlock(&ctx->lock);
    if (s != KF_OK)
        return kf_rt_fail(ctx, s, "kf_stream_sync: reading a replay's take flag: %s", err.msg);
    if (bad != KF_OK)
        return kf_rt_fail(ctx, bad,
                          "a take in a kernel of a replay launched on this stream read an index out of range (the "
                          "element got 0)");
    return KF_OK;
}
