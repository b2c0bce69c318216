/* Runtime core: choosing a backend, contexts, per-thread errors, buffers,
 * streams and events.  Programs and runs are in program.c. */
#include "cached.h"
#include "host.h"
#include "runtime.h"
#include "trace.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* -- Errors ------------------------------------------------------------------ */

static kf_rt_errslot *err_slot(kf_context *ctx, bool create)
{
    pthread_t self = pthread_self();
    kf_rt_errslot *oldest = &ctx->errs[0];
    for (int i = 0; i < KF_RT_ERR_SLOTS; i++) {
        kf_rt_errslot *e = &ctx->errs[i];
        if (e->used && pthread_equal(e->tid, self))
            return e;
        if (e->used < oldest->used)
            oldest = e;
    }
    if (!create)
        return NULL;
    oldest->tid = self;
    oldest->msg[0] = 0;
    return oldest;
}

kf_status kf_rt_fail(kf_context *ctx, kf_status s, const char *fmt, ...)
{
    pthread_mutex_lock(&ctx->lock);
    kf_rt_errslot *e = err_slot(ctx, true);
    e->used = ++ctx->tick;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    pthread_mutex_unlock(&ctx->lock);
    return s;
}

void kf_rt_clear_error(kf_context *ctx)
{
    pthread_mutex_lock(&ctx->lock);
    kf_rt_errslot *e = err_slot(ctx, false);
    if (e)
        e->msg[0] = 0;
    pthread_mutex_unlock(&ctx->lock);
}

const char *kf_context_error(kf_context *ctx)
{
    if (!ctx)
        return "null context";
    pthread_mutex_lock(&ctx->lock);
    kf_rt_errslot *e = err_slot(ctx, false);
    const char *m = e ? e->msg : "";
    pthread_mutex_unlock(&ctx->lock);
    return m;
}

/* -- Object lists -------------------------------------------------------------- */

void kf_rt_link_add(kf_context *ctx, kf_rt_link *head, kf_rt_link *l)
{
    pthread_mutex_lock(&ctx->lock);
    l->next = head->next;
    l->prev = head;
    head->next->prev = l;
    head->next = l;
    pthread_mutex_unlock(&ctx->lock);
}

void kf_rt_link_remove(kf_context *ctx, kf_rt_link *l)
{
    pthread_mutex_lock(&ctx->lock);
    l->prev->next = l->next;
    l->next->prev = l->prev;
    l->next = l->prev = l;
    pthread_mutex_unlock(&ctx->lock);
}

static void list_init(kf_rt_link *h) { h->next = h->prev = h; }

/* -- Backend choice -------------------------------------------------------------- */

const char *kf_backend_name(kf_backend b)
{
    switch (b) {
    case KF_BACKEND_AUTO: return "auto";
    case KF_BACKEND_CUDA: return "cuda";
    case KF_BACKEND_OPENCL: return "opencl";
    case KF_BACKEND_CPU: return "cpu";
    }
    return "unknown";
}

static const kf_backend_ops *backend_ops(kf_backend b)
{
    switch (b) {
#ifdef KFUSE_WITH_CUDA
    case KF_BACKEND_CUDA: return kf_rt_cuda_backend();
#endif
#ifdef KFUSE_WITH_OPENCL
    case KF_BACKEND_OPENCL: return kf_rt_opencl_backend();
#endif
#ifdef KFUSE_WITH_LLVM
    case KF_BACKEND_CPU: return kf_rt_cpu_backend();
#endif
    default: return NULL;
    }
}

/* Parse KFUSE_BACKEND; -1 when unset, -2 when not a backend name. */
static int env_backend(void)
{
    const char *v = secure_getenv("KFUSE_BACKEND");
    if (!v || !*v)
        return -1;
    for (int b = KF_BACKEND_AUTO; b <= KF_BACKEND_CPU; b++)
        if (strcmp(v, kf_backend_name((kf_backend)b)) == 0)
            return b;
    return -2;
}

static kf_status open_backend(kf_context *ctx, kf_backend b, int device, char *why, size_t whylen)
{
    const kf_backend_ops *be = backend_ops(b);
    if (!be) {
        snprintf(why, whylen, "the %s backend is not built into this kfuse", kf_backend_name(b));
        return KF_ERR_UNSUPPORTED;
    }
    kf_rt_err err = { { 0 } };
    kf_device_info info;
    memset(&info, 0, sizeof info);
    void *dev = NULL;
    int n = be->count();
    if (n <= 0) {
        /* let open() say why (missing driver, no platform) */
        if (be->open(device, &dev, &info, &err) == KF_OK)
            be->close(dev);
        snprintf(why, whylen, "%s: no device%s%.400s", be->name, err.msg[0] ? ": " : "", err.msg);
        return KF_ERR_NO_DEVICE;
    }
    if (device < 0 || device >= n) {
        snprintf(why, whylen, "%s: device %d does not exist (%d present)", be->name, device, n);
        return KF_ERR_NO_DEVICE;
    }
    kf_status s = be->open(device, &dev, &info, &err);
    if (s != KF_OK) {
        snprintf(why, whylen, "%s: %.400s", be->name, err.msg);
        return s;
    }
    ctx->be = be;
    ctx->dev = dev;
    ctx->info = info;
    ctx->info.backend = b;
    return KF_OK;
}

/* AUTO: CUDA, then an OpenCL GPU, then the CPU backend, then OpenCL on a CPU. */
static kf_status open_auto(kf_context *ctx, char *why, size_t whylen)
{
    char w[3][512] = { "", "", "" };
    if (open_backend(ctx, KF_BACKEND_CUDA, 0, w[0], sizeof w[0]) == KF_OK)
        return KF_OK;
    const kf_backend_ops *cl = backend_ops(KF_BACKEND_OPENCL);
    int ncl = cl ? cl->count() : 0;
    for (int d = 0; d < ncl; d++) {
        if (open_backend(ctx, KF_BACKEND_OPENCL, d, w[1], sizeof w[1]) != KF_OK)
            continue;
        if (ctx->info.gpu)
            return KF_OK;
        ctx->be->close(ctx->dev);
        ctx->be = NULL;
    }
    if (open_backend(ctx, KF_BACKEND_CPU, 0, w[2], sizeof w[2]) == KF_OK)
        return KF_OK;
    if (ncl > 0 && open_backend(ctx, KF_BACKEND_OPENCL, 0, w[1], sizeof w[1]) == KF_OK)
        return KF_OK;
    snprintf(why, whylen, "no backend has a device: %s; %s; %s", w[0], w[1][0] ? w[1] : "opencl: no device", w[2]);
    return KF_ERR_NO_DEVICE;
}

kf_status kf_context_create(const kf_context_options *opts, kf_context **out, char *errbuf, size_t errlen)
{
    char why[1600] = "";
    if (!out) {
        snprintf(errbuf ? errbuf : why, errbuf ? errlen : sizeof why, "kf_context_create: out is NULL");
        return KF_ERR_INVALID_ARG;
    }
    *out = NULL;
    kf_backend b = opts ? opts->backend : KF_BACKEND_AUTO;
    int device = opts ? opts->device : -1;
    kf_status s = KF_OK;
    if (b == KF_BACKEND_AUTO) {
        int e = env_backend();
        if (e == -2) {
            snprintf(why, sizeof why, "KFUSE_BACKEND='%s' is not one of auto, cuda, opencl, cpu",
                     secure_getenv("KFUSE_BACKEND"));
            s = KF_ERR_INVALID_ARG;
        } else if (e >= 0) {
            b = (kf_backend)e;
        }
    } else if ((unsigned)b > KF_BACKEND_CPU) {
        snprintf(why, sizeof why, "kf_context_create: unknown backend %d", (int)b);
        s = KF_ERR_INVALID_ARG;
    }
    if (s == KF_OK && device < 0) {
        const char *v = secure_getenv("KFUSE_DEVICE");
        char *end = NULL;
        device = v && *v ? (int)strtol(v, &end, 10) : 0;
        if (v && *v && (*end || device < 0)) {
            snprintf(why, sizeof why, "KFUSE_DEVICE='%s' is not a device index", v);
            s = KF_ERR_INVALID_ARG;
        }
    }
    kf_context *ctx = NULL;
    if (s == KF_OK && !(ctx = calloc(1, sizeof *ctx))) {
        snprintf(why, sizeof why, "out of memory");
        s = KF_ERR_NO_MEMORY;
    }
    if (s == KF_OK) {
        pthread_mutex_init(&ctx->lock, NULL);
        list_init(&ctx->buffers);
        list_init(&ctx->streams);
        list_init(&ctx->events);
        list_init(&ctx->programs);
        list_init(&ctx->replays);
        s = b == KF_BACKEND_AUTO && device == 0 ? open_auto(ctx, why, sizeof why)
            : b == KF_BACKEND_AUTO              ? open_backend(ctx, KF_BACKEND_CUDA, device, why, sizeof why)
                                                : open_backend(ctx, b, device, why, sizeof why);
    }
    if (s == KF_OK)
        s = kf_rt_host_open(ctx, opts, why, sizeof why);
    if (s == KF_OK && kf_rt_cache_open(ctx, opts) != KF_OK) {
        snprintf(why, sizeof why, "out of memory");
        s = KF_ERR_NO_MEMORY;
    }
    if (s == KF_OK) {
        ctx->default_stream = calloc(1, sizeof *ctx->default_stream);
        if (!ctx->default_stream) {
            snprintf(why, sizeof why, "out of memory");
            s = KF_ERR_NO_MEMORY;
        } else {
            kf_stream *d = ctx->default_stream;
            d->ctx = ctx;
            pthread_mutex_init(&d->lock, NULL);
            list_init(&d->link);
        }
    }
    if (s == KF_OK)
        kf_trace_open(ctx, opts);
    if (s != KF_OK) {
        if (errbuf && errlen)
            snprintf(errbuf, errlen, "%s", why);
        if (ctx) {
            kf_rt_cache_close(ctx);
            if (ctx->be) {
                kf_rt_host_close(ctx);
                ctx->be->close(ctx->dev);
            }
            pthread_mutex_destroy(&ctx->lock);
            free(ctx);
        }
        return s;
    }
    *out = ctx;
    return KF_OK;
}

static void stream_release(kf_context *ctx, kf_stream *s)
{
    kf_rt_err err;
    kf_rt_capture_abort(s);
    if (s->h || s == ctx->default_stream)
        ctx->be->stream_sync(ctx->dev, s->h, &err);
    if (ctx->trace) /* before the pointer can name another stream */
        kf_trace_resolve(ctx->trace, s, UINT64_MAX);
    for (int i = 0; i < 2; i++)
        if (s->arena[i])
            ctx->be->free(ctx->dev, s->arena[i]);
    if (s->flag)
        ctx->be->free(ctx->dev, s->flag);
    if (s->h && !s->wrapped)
        ctx->be->stream_destroy(ctx->dev, s->h);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

void kf_context_destroy(kf_context *ctx)
{
    if (!ctx)
        return;
    while (ctx->replays.next != &ctx->replays)
        kf_replay_free((kf_replay *)ctx->replays.next);
    kf_trace_close(ctx);
    while (ctx->programs.next != &ctx->programs)
        kf_program_free((kf_program *)ctx->programs.next);
    kf_rt_cache_close(ctx); /* memoised programs go while the streams are there */
    while (ctx->streams.next != &ctx->streams)
        kf_stream_destroy((kf_stream *)ctx->streams.next);
    stream_release(ctx, ctx->default_stream);
    while (ctx->events.next != &ctx->events)
        kf_event_destroy((kf_event *)ctx->events.next);
    while (ctx->buffers.next != &ctx->buffers)
        kf_buffer_free((kf_buffer *)ctx->buffers.next);
    kf_rt_host_close(ctx);
    ctx->be->close(ctx->dev);
    pthread_mutex_destroy(&ctx->lock);
    free(ctx);
}

void kf_rt_set_hooks(kf_context *ctx, unsigned hooks)
{
    ctx->hooks = hooks;
    if (hooks & KF_RT_HOOK_NO_FP64)
        ctx->info.fp64 = false;
    if (hooks & KF_RT_HOOK_NO_FP16)
        ctx->info.fp16 = false;
}

kf_status kf_context_info(kf_context *ctx, kf_device_info *out)
{
    if (!ctx || !out)
        return KF_ERR_INVALID_ARG;
    *out = ctx->info;
    return KF_OK;
}

/* -- Buffers -------------------------------------------------------------------- */

kf_status kf_buffer_alloc(kf_context *ctx, size_t bytes, kf_buffer **out)
{
    if (!ctx || !out)
        return ctx ? kf_rt_fail(ctx, KF_ERR_INVALID_ARG, "kf_buffer_alloc: out is NULL") : KF_ERR_INVALID_ARG;
    *out = NULL;
    kf_buffer *b = calloc(1, sizeof *b);
    if (!b)
        return kf_rt_fail(ctx, KF_ERR_NO_MEMORY, "kf_buffer_alloc: out of host memory");
    kf_rt_err err;
    kf_status s = ctx->be->alloc(ctx->dev, bytes, &b->h, &err);
    if (s != KF_OK) {
        free(b);
        return kf_rt_fail(ctx, s, "kf_buffer_alloc(%zu bytes): %s", bytes, err.msg);
    }
    b->ctx = ctx;
    b->size = bytes;
    kf_rt_link_add(ctx, &ctx->buffers, &b->link);
    *out = b;
    return KF_OK;
}

void kf_buffer_free(kf_buffer *b)
{
    if (!b)
        return;
    kf_rt_replay_forget(b->ctx, b, "buffer");
    kf_rt_link_remove(b->ctx, &b->link);
    b->ctx->be->free(b->ctx->dev, b->h);
    free(b);
}

size_t kf_buffer_size(const kf_buffer *b) { return b ? b->size : 0; }

kf_view kf_view_dense(kf_buffer *buf, size_t offset, kf_dtype t, int rank, const int64_t *shape)
{
    kf_view v;
    memset(&v, 0, sizeof v);
    v.buf = buf;
    v.offset = offset;
    v.dtype = t;
    v.rank = rank < 0 || rank > KF_MAX_RANK ? 0 : rank;
    int64_t st = 1;
    for (int i = v.rank - 1; i >= 0; i--) {
        v.shape[i] = shape[i];
        v.strides[i] = st;
        st *= shape[i] > 0 ? shape[i] : 1;
    }
    return v;
}

/* 'which' names the buffer in the message: "" or "source ", "destination ". */
static kf_status range_check(kf_context *ctx, const char *fn, const char *which, const kf_buffer *b, size_t off,
                             size_t bytes)
{
    if (off > b->size || bytes > b->size - off)
        return kf_rt_fail(ctx, KF_ERR_INVALID_ARG, "%s: %zu bytes at offset %zu are outside the %zu-byte %sbuffer",
                          fn, bytes, off, b->size, which);
    return KF_OK;
}

static kf_status copy_check(kf_context *ctx, const char *fn, const kf_buffer *b, size_t off, size_t bytes,
                            const void *host, kf_stream *s)
{
    if (!host)
        return kf_rt_fail(ctx, KF_ERR_INVALID_ARG, "%s: host pointer is NULL", fn);
    kf_status st = range_check(ctx, fn, "", b, off, bytes);
    if (st != KF_OK)
        return st;
    if (s && s->ctx != ctx)
        return kf_rt_fail(ctx, KF_ERR_CONTEXT, "%s: the stream belongs to another context", fn);
    return KF_OK;
}

kf_status kf_upload(kf_buffer *dst, size_t offset, const void *src, size_t bytes, kf_stream *stream)
{
    if (!dst)
        return KF_ERR_INVALID_ARG;
    kf_context *ctx = dst->ctx;
    kf_status s = copy_check(ctx, "kf_upload", dst, offset, bytes, src, stream);
    if (s != KF_OK || bytes == 0)
        return s;
    kf_rt_err err;
    kf_stream *st = kf_rt_stream(ctx, stream);
    if ((s = kf_rt_capture_use(st, dst)) != KF_OK)
        return s;
    kf_rt_op op = { .kind = KF_RT_COPY, .copy = KF_COPY_H2D, .dst = dst->h, .dstoff = offset, .src = src,
                    .bytes = bytes, .sync = stream == NULL };
    uint64_t t0 = kf_trace_begin(ctx);
    s = kf_trace_issue(ctx, st, &op, "upload", -1, NULL, bytes, &err);
    kf_trace_end(ctx, t0, "upload enqueue", NULL);
    if (s != KF_OK)
        return kf_rt_fail(ctx, s, "kf_upload: %s", err.msg);
    atomic_fetch_add_explicit(&ctx->bytes_up, bytes, memory_order_relaxed);
    return KF_OK;
}

kf_status kf_download(void *dst, const kf_buffer *src, size_t offset, size_t bytes, kf_stream *stream)
{
    if (!src)
        return KF_ERR_INVALID_ARG;
    kf_context *ctx = src->ctx;
    kf_status s = copy_check(ctx, "kf_download", src, offset, bytes, dst, stream);
    if (s != KF_OK || bytes == 0)
        return s;
    kf_rt_err err;
    kf_stream *st = kf_rt_stream(ctx, stream);
    if ((s = kf_rt_capture_use(st, src)) != KF_OK)
        return s;
    kf_rt_op op = { .kind = KF_RT_COPY, .copy = KF_COPY_D2H, .dst = dst, .src = src->h, .srcoff = offset,
                    .bytes = bytes, .sync = stream == NULL };
    uint64_t t0 = kf_trace_begin(ctx);
    s = kf_trace_issue(ctx, st, &op, "download", -1, NULL, bytes, &err);
    kf_trace_end(ctx, t0, "download enqueue", NULL);
    if (s != KF_OK)
        return kf_rt_fail(ctx, s, "kf_download: %s", err.msg);
    atomic_fetch_add_explicit(&ctx->bytes_down, bytes, memory_order_relaxed);
    return KF_OK;
}

kf_status kf_copy(kf_buffer *dst, size_t dstoff, const kf_buffer *src, size_t srcoff, size_t bytes,
                  kf_stream *stream)
{
    if (!dst || !src)
        return dst || src ? kf_rt_fail(dst ? dst->ctx : src->ctx, KF_ERR_INVALID_ARG, "kf_copy: the %s buffer is NULL",
                                       dst ? "source" : "destination")
                          : KF_ERR_INVALID_ARG;
    kf_context *ctx = dst->ctx;
    if (src->ctx != ctx)
        return kf_rt_fail(ctx, KF_ERR_CONTEXT, "kf_copy: the source buffer belongs to another context");
    if (stream && stream->ctx != ctx)
        return kf_rt_fail(ctx, KF_ERR_CONTEXT, "kf_copy: the stream belongs to another context");
    kf_status s = range_check(ctx, "kf_copy", "source ", src, srcoff, bytes);
    if (s == KF_OK)
        s = range_check(ctx, "kf_copy", "destination ", dst, dstoff, bytes);
    if (s != KF_OK || bytes == 0)
        return s;
    /* no backend copies overlapping ranges correctly (OpenCL refuses them) */
    if (src == dst && srcoff < dstoff + bytes && dstoff < srcoff + bytes)
        return kf_rt_fail(ctx, KF_ERR_INVALID_ARG,
                          "kf_copy: %zu bytes from offset %zu to offset %zu overlap in the same buffer", bytes, srcoff,
                          dstoff);
    kf_rt_err err;
    kf_stream *st = kf_rt_stream(ctx, stream);
    if ((s = kf_rt_capture_use(st, src)) != KF_OK || (s = kf_rt_capture_use(st, dst)) != KF_OK)
        return s;
    kf_rt_op op = { .kind = KF_RT_COPY, .copy = KF_COPY_D2D, .dst = dst->h, .dstoff = dstoff, .src = src->h,
                    .srcoff = srcoff, .bytes = bytes, .sync = stream == NULL };
    uint64_t t0 = kf_trace_begin(ctx);
    s = kf_trace_issue(ctx, st, &op, "copy", -1, NULL, bytes, &err);
    kf_trace_end(ctx, t0, "copy enqueue", NULL);
    if (s != KF_OK)
        return kf_rt_fail(ctx, s, "kf_copy: %s", err.msg);
    atomic_fetch_add_explicit(&ctx->bytes_copied, bytes, memory_order_relaxed);
    return KF_OK;
}

/* -- Streams -------------------------------------------------------------------- */

/* A new stream of ctx over a backend stream: created, or the caller's
 * native one (wrap). */
static kf_status stream_new(kf_context *ctx, void *native, bool wrap, kf_stream **out)
{
    const char *fn = wrap ? "kf_stream_wrap" : "kf_stream_create";
    if (!ctx || !out)
        return KF_ERR_INVALID_ARG;
    *out = NULL;
    if (wrap && !ctx->be->stream_wrap)
        return kf_rt_fail(ctx, KF_ERR_UNSUPPORTED, "kf_stream_wrap: the %s backend takes no native streams",
                          kf_backend_name(ctx->info.backend));
    kf_stream *s = calloc(1, sizeof *s);
    if (!s)
        return kf_rt_fail(ctx, KF_ERR_NO_MEMORY, "%s: out of host memory", fn);
    kf_rt_err err;
    kf_status st = wrap ? ctx->be->stream_wrap(ctx->dev, native, &s->h, &err)
                        : ctx->be->stream_create(ctx->dev, &s->h, &err);
    if (st != KF_OK) {
        free(s);
        return kf_rt_fail(ctx, st, "%s: %s", fn, err.msg);
    }
    s->wrapped = wrap;
    s->ctx = ctx;
    s->trace_id = atomic_fetch_add_explicit(&ctx->stream_ids, 1, memory_order_relaxed) + 1;
    pthread_mutex_init(&s->lock, NULL);
    kf_rt_link_add(ctx, &ctx->streams, &s->link);
    *out = s;
    return KF_OK;
}

kf_status kf_stream_create(kf_context *ctx, kf_stream **out) { return stream_new(ctx, NULL, false, out); }

kf_status kf_stream_wrap(kf_context *ctx, void *native, kf_stream **out) { return stream_new(ctx, native, true, out); }

void kf_stream_destroy(kf_stream *s)
{
    if (!s || s == s->ctx->default_stream)
        return;
    kf_rt_link_remove(s->ctx, &s->link);
    stream_release(s->ctx, s);
}

kf_status kf_rt_flag(kf_context *ctx, kf_stream *s)
{
    if (s->flag)
        return KF_OK;
    kf_rt_err err;
    kf_status st = ctx->be->alloc(ctx->dev, 4, &s->flag, &err);
    if (st == KF_OK && (st = ctx->be->fill(ctx->dev, s->flag, 0, 0, 4, s->h, &err)) != KF_OK) {
        ctx->be->free(ctx->dev, s->flag);
        s->flag = NULL;
    }
    return st == KF_OK ? KF_OK : kf_rt_fail(ctx, st, "allocating the take flag: %s", err.msg);
}

kf_status kf_rt_arena(kf_context *ctx, kf_stream *s, int i, size_t bytes)
{
    if (bytes == 0 || bytes <= s->arena_size[i])
        return KF_OK;
    kf_rt_err err;
    if (s->arena[i] && atomic_load(&s->capture)) {
        /* captured kernels use the old arena when the replay runs */
        kf_status st = kf_rt_capture_retire(s, s->arena[i]);
        if (st != KF_OK)
            return st;
        s->arena[i] = NULL;
        s->arena_size[i] = 0;
    } else if (s->arena[i]) {
        /* queued kernels may still use the old arena */
        kf_status st = ctx->be->stream_sync(ctx->dev, s->h, &err);
        if (st != KF_OK)
            return kf_rt_fail(ctx, st, "growing scratch: %s", err.msg);
        ctx->be->free(ctx->dev, s->arena[i]);
        s->arena[i] = NULL;
        s->arena_size[i] = 0;
    }
    size_t want = bytes < 4096 ? 4096 : (bytes + bytes / 4 + 15) / 16 * 16;
    kf_status st = ctx->be->alloc(ctx->dev, want, &s->arena[i], &err);
    if (st != KF_OK)
        return kf_rt_fail(ctx, st, "allocating %zu bytes of scratch: %s", want, err.msg);
    /* a GPU's reductions count chunks in the partials' arena: it starts
     * zeroed, and they leave it so (kf_cg_launch_rule) */
    if (i == 1 && (st = ctx->be->fill(ctx->dev, s->arena[i], 0, 0, want, s->h, &err)) != KF_OK) {
        ctx->be->free(ctx->dev, s->arena[i]);
        s->arena[i] = NULL;
        return kf_rt_fail(ctx, st, "zeroing %zu bytes of scratch: %s", want, err.msg);
    }
    s->arena_size[i] = want;
    return KF_OK;
}

kf_status kf_stream_sync(kf_context *ctx, kf_stream *stream)
{
    if (!ctx)
        return KF_ERR_INVALID_ARG;
    if (stream && stream->ctx != ctx)
        return kf_rt_fail(ctx, KF_ERR_CONTEXT, "kf_stream_sync: the stream belongs to another context");
    kf_stream *s = kf_rt_stream(ctx, stream);
    if (atomic_load(&s->capture))
        return kf_rt_fail(ctx, KF_ERR_INVALID_ARG,
                          "kf_stream_sync: the stream is capturing (nothing captured runs before kf_capture_end "
                          "and a launch of the replay)");
    kf_rt_err err;
    uint64_t t0 = kf_trace_begin(ctx);
    kf_status st = ctx->be->stream_sync(ctx->dev, s->h, &err);
    if (ctx->trace) {
        kf_trace_span(ctx->trace, t0, "stream sync", NULL);
        if (st == KF_OK)
            kf_trace_resolve(ctx->trace, s, UINT64_MAX);
    }
    if (st != KF_OK)
        return kf_rt_fail(ctx, st, "kf_stream_sync: %s", err.msg);
    if ((st = kf_rt_replay_check(ctx, s)) != KF_OK || !atomic_exchange(&s->flag_armed, false))
        return st;
    pthread_mutex_lock(&s->lock);
    int32_t flag = 0;
    st = ctx->be->copy(ctx->dev, KF_COPY_D2H, &flag, 0, s->flag, 0, 4, s->h, true, &err);
    if (st == KF_OK && flag)
        st = ctx->be->fill(ctx->dev, s->flag, 0, 0, 4, s->h, &err);
    pthread_mutex_unlock(&s->lock);
    if (st != KF_OK)
        return kf_rt_fail(ctx, st, "kf_stream_sync: reading the take flag: %s", err.msg);
    if (flag)
        return kf_rt_fail(ctx, KF_ERR_INDEX,
                          "a take in a kernel run on this stream read an index out of range (the element got 0)");
    return KF_OK;
}

/* -- Events ---------------------------------------------------------------------- */

kf_status kf_event_create(kf_context *ctx, kf_event **out)
{
    if (!ctx || !out)
        return KF_ERR_INVALID_ARG;
    *out = NULL;
    kf_event *e = calloc(1, sizeof *e);
    if (!e)
        return kf_rt_fail(ctx, KF_ERR_NO_MEMORY, "kf_event_create: out of host memory");
    kf_rt_err err;
    kf_status st = ctx->be->event_create(ctx->dev, &e->h, &err);
    if (st != KF_OK) {
        free(e);
        return kf_rt_fail(ctx, st, "kf_event_create: %s", err.msg);
    }
    e->ctx = ctx;
    kf_rt_link_add(ctx, &ctx->events, &e->link);
    *out = e;
    return KF_OK;
}

void kf_event_destroy(kf_event *e)
{
    if (!e)
        return;
    kf_rt_replay_forget(e->ctx, e, "event");
    kf_rt_link_remove(e->ctx, &e->link);
    e->ctx->be->event_destroy(e->ctx->dev, e->h);
    free(e);
}

kf_status kf_event_record(kf_event *e, kf_stream *s)
{
    if (!e)
        return KF_ERR_INVALID_ARG;
    kf_context *ctx = e->ctx;
    if (s && s->ctx != ctx)
        return kf_rt_fail(ctx, KF_ERR_CONTEXT, "kf_event_record: the stream belongs to another context");
    kf_rt_err err;
    kf_stream *st = kf_rt_stream(ctx, s);
    bool captured = atomic_load(&st->capture) != NULL;
    kf_status rc = kf_rt_capture_use(st, e);
    if (rc == KF_OK)
        rc = kf_rt_capture_mark(st, e);
    if (rc != KF_OK)
        return rc;
    kf_rt_op op = { .kind = KF_RT_RECORD, .event = e };
    if ((rc = kf_rt_issue(ctx, st, &op, &err)) != KF_OK)
        return kf_rt_fail(ctx, rc, "kf_event_record: %s", err.msg);
    if (!captured) /* a captured record happens when the replay runs */
        atomic_store(&e->recorded, true);
    if (ctx->trace && !captured) {
        e->trace_stream = st;
        e->trace_seq = kf_trace_seq(ctx->trace);
    }
    return KF_OK;
}

kf_status kf_stream_wait(kf_stream *s, kf_event *e)
{
    if (!e)
        return KF_ERR_INVALID_ARG;
    kf_context *ctx = e->ctx;
    if (s && s->ctx != ctx)
        return kf_rt_fail(ctx, KF_ERR_CONTEXT, "kf_stream_wait: the stream and the event belong to different contexts");
    kf_stream *st = kf_rt_stream(ctx, s);
    if (!atomic_load(&e->recorded) && !kf_rt_capture_marked(st, e))
        return kf_rt_fail(ctx, KF_ERR_INVALID_ARG, "kf_stream_wait: the event was never recorded");
    kf_rt_err err;
    kf_status rc = kf_rt_capture_use(st, e);
    kf_rt_op op = { .kind = KF_RT_WAIT, .event = e };
    if (rc == KF_OK && (rc = kf_rt_issue(ctx, st, &op, &err)) != KF_OK)
        return kf_rt_fail(ctx, rc, "kf_stream_wait: %s", err.msg);
    return rc;
}

kf_status kf_event_sync(kf_event *e)
{
    if (!e)
        return KF_ERR_INVALID_ARG;
    if (!e->recorded)
        return kf_rt_fail(e->ctx, KF_ERR_INVALID_ARG, "kf_event_sync: the event was never recorded");
    kf_context *ctx = e->ctx;
    kf_rt_err err;
    uint64_t t0 = kf_trace_begin(ctx);
    kf_status st = ctx->be->event_sync(ctx->dev, e->h, &err);
    if (ctx->trace) {
        kf_trace_span(ctx->trace, t0, "event sync", NULL);
        if (st == KF_OK && e->trace_stream)
            kf_trace_resolve(ctx->trace, e->trace_stream, e->trace_seq);
    }
    return st == KF_OK ? KF_OK : kf_rt_fail(ctx, st, "kf_event_sync: %s", err.msg);
}

kf_status kf_event_elapsed(kf_event *start, kf_event *end, float *ms)
{
    if (!start || !end || !ms)
        return KF_ERR_INVALID_ARG;
    kf_context *ctx = start->ctx;
    if (end->ctx != ctx)
        return kf_rt_fail(ctx, KF_ERR_CONTEXT, "kf_event_elapsed: events from different contexts");
    if (!start->recorded || !end->recorded)
        return kf_rt_fail(ctx, KF_ERR_INVALID_ARG, "kf_event_elapsed: both events must be recorded");
    kf_rt_err err;
    kf_status st = ctx->be->event_elapsed(ctx->dev, start->h, end->h, ms, &err);
    return st == KF_OK ? KF_OK : kf_rt_fail(ctx, st, "kf_event_elapsed: %s", err.msg);
}
