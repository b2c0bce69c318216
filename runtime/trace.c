/* Tracing: the Chrome trace-event file of a context (docs/trace.md).  Host
 * spans are written as they end; device spans are pairs of backend events
 * around a launch or copy, kept in a bounded pool and turned into times
 * lazily (at a stream or event sync, when the pool is full, at the end). */
#include "trace.h"
#include "cache.h"
#include "cached.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

/* Device spans in flight at most; past it the oldest are waited for.
 * Events are made on first use of a slot and reused. */
enum { TRACE_SLOTS = 256, TRACE_FLUSH = 1 << 16, TRACE_DEVICE_TID = 1 << 30 };
enum { REC_FREE, REC_BUSY, REC_PENDING };

typedef struct trace_rec {
    void *ev[2];         /* backend events before and after the launch or copy */
    kf_stream *s;
    uint64_t seq;
    uint8_t state;
    int kernel;          /* kernel index; -1 for a copy */
    uint64_t bytes;
    char name[80], entry[96];
} trace_rec;

struct kf_trace {
    kf_context *ctx;
    pthread_mutex_t lock;     /* everything below */
    FILE *f;
    kf_strbuf buf;            /* written to f past TRACE_FLUSH bytes */
    bool failed;              /* a write failed: warned, nothing more written */
    char path[1024];
    int pid;
    uint64_t t0;              /* host time of ts 0 */
    void *base;               /* event whose host time is base_ns (backends without event_host_ns) */
    uint64_t base_ns;
    uint64_t seq;             /* the next device span's */
    uint64_t busy_ns;         /* kernel time resolved so far */
    uint64_t lost;            /* device spans that could not be timed */
    trace_rec rec[TRACE_SLOTS];
};

uint64_t kf_trace_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* -- Writing ------------------------------------------------------------------------ */

static void json_str(kf_strbuf *b, const char *s)
{
    kf_sb_putc(b, '"');
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            kf_sb_printf(b, "\\%c", c);
        else if (c < 0x20)
            kf_sb_printf(b, "\\u%04x", c);
        else
            kf_sb_putc(b, (char)c);
    }
    kf_sb_putc(b, '"');
}

static void flush_locked(kf_trace *t)
{
    if (!t->failed && kf_sb_failed(&t->buf)) {
        t->failed = true;
        kf_cache_warn(kf_rt_cache_of(t->ctx), "trace: out of memory; %s is incomplete", t->path);
    } else if (!t->failed && t->buf.len && fwrite(t->buf.data, 1, t->buf.len, t->f) != t->buf.len) {
        t->failed = true;
        kf_cache_warn(kf_rt_cache_of(t->ctx), "trace: writing %s failed: %s; the trace is incomplete", t->path,
                      strerror(errno));
    }
    kf_sb_reset(&t->buf);
}

/* The start of a complete event up to its args' opening brace. */
static void event_open(kf_trace *t, const char *name, const char *cat, uint64_t ts, uint64_t dur, long tid)
{
    kf_sb_puts(&t->buf, ",\n{\"name\":");
    json_str(&t->buf, name);
    kf_sb_printf(&t->buf, ",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":%d,\"tid\":%ld,\"args\":{",
                 cat, (double)(int64_t)(ts - t->t0) / 1e3, (double)dur / 1e3, t->pid, tid);
}

static void event_close(kf_trace *t)
{
    kf_sb_puts(&t->buf, "}}");
    if (t->buf.len > TRACE_FLUSH)
        flush_locked(t);
}

static void thread_name(kf_trace *t, long tid, const char *name)
{
    kf_sb_printf(&t->buf, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%ld,\"args\":{\"name\":", t->pid,
                 tid);
    json_str(&t->buf, name);
    kf_sb_puts(&t->buf, "}}");
}

void kf_trace_span(kf_trace *t, uint64_t t0, const char *name, const char *detail)
{
    uint64_t t1 = kf_trace_now();
    long tid = (long)gettid();
    pthread_mutex_lock(&t->lock);
    event_open(t, name, "host", t0, t1 - t0, tid);
    if (detail) {
        kf_sb_puts(&t->buf, "\"detail\":");
        json_str(&t->buf, detail);
    }
    event_close(t);
    pthread_mutex_unlock(&t->lock);
}

/* -- Device spans ----------------------------------------------------------------------- */

/* Host time of a completed event: the backend's own when its events are the
 * host clock, else the base event's plus the elapsed time since it. */
static bool event_ns(kf_trace *t, void *ev, uint64_t *ns)
{
    kf_context *ctx = t->ctx;
    kf_rt_err err;
    if (ctx->be->event_host_ns)
        return ctx->be->event_host_ns(ctx->dev, ev, ns, &err) == KF_OK;
    float ms;
    if (ctx->be->event_elapsed(ctx->dev, t->base, ev, &ms, &err) != KF_OK)
        return false;
    *ns = t->base_ns + (uint64_t)((int64_t)((double)ms * 1e6));
    return true;
}

/* Write r's span (its events have completed) and free the slot. */
static void rec_emit(kf_trace *t, trace_rec *r)
{
    kf_context *ctx = t->ctx;
    uint64_t a = 0, b = 0;
    bool ok = event_ns(t, r->ev[0], &a);
    if (ok && ctx->be->event_host_ns) {
        ok = event_ns(t, r->ev[1], &b);
    } else if (ok) {
        /* the span's own length from its own pair: float ms stays exact at this scale */
        float ms;
        kf_rt_err err;
        ok = ctx->be->event_elapsed(ctx->dev, r->ev[0], r->ev[1], &ms, &err) == KF_OK;
        b = a + (uint64_t)(ms > 0 ? (double)ms * 1e6 : 0);
    }
    r->state = REC_FREE;
    if (!ok) {
        t->lost++;
        return;
    }
    uint64_t dur = b > a ? b - a : 0;
    long tid = TRACE_DEVICE_TID + (long)r->s->trace_id;
    if (r->kernel >= 0) {
        char name[112];
        snprintf(name, sizeof name, "%s k%d", r->name, r->kernel);
        t->busy_ns += dur;
        event_open(t, name, "device", a, dur, tid);
        kf_sb_puts(&t->buf, "\"entry\":");
        json_str(&t->buf, r->entry);
    } else {
        event_open(t, r->name, "device", a, dur, tid);
        kf_sb_printf(&t->buf, "\"bytes\":%llu", (unsigned long long)r->bytes);
    }
    event_close(t);
}

/* Resolve the pending spans of s (every stream when s is NULL) before upto. */
static void resolve_locked(kf_trace *t, kf_stream *s, uint64_t upto)
{
    for (int i = 0; i < TRACE_SLOTS; i++) {
        trace_rec *r = &t->rec[i];
        if (r->state == REC_PENDING && (!s || r->s == s) && r->seq < upto)
            rec_emit(t, r);
    }
}

static int free_slot(kf_trace *t)
{
    for (int i = 0; i < TRACE_SLOTS; i++)
        if (t->rec[i].state == REC_FREE)
            return i;
    return -1;
}

/* The pool is full: wait for the oldest spans until a quarter is free.  A
 * stream runs in order, so every span of its stream older than a completed
 * one has completed too. */
static void drain_locked(kf_trace *t)
{
    kf_context *ctx = t->ctx;
    for (int freed = 0; freed < TRACE_SLOTS / 4;) {
        trace_rec *old = NULL;
        for (int i = 0; i < TRACE_SLOTS; i++)
            if (t->rec[i].state == REC_PENDING && (!old || t->rec[i].seq < old->seq))
                old = &t->rec[i];
        if (!old)
            return;
        kf_rt_err err;
        if (ctx->be->event_sync(ctx->dev, old->ev[1], &err) != KF_OK) {
            old->state = REC_FREE;
            t->lost++;
            freed++;
            continue;
        }
        for (int i = 0; i < TRACE_SLOTS; i++)
            freed += t->rec[i].state == REC_PENDING && t->rec[i].s == old->s && t->rec[i].seq <= old->seq;
        resolve_locked(t, old->s, old->seq + 1);
    }
}

int kf_trace_device_begin(kf_trace *t, kf_stream *s)
{
    kf_context *ctx = t->ctx;
    pthread_mutex_lock(&t->lock);
    int i = free_slot(t);
    if (i < 0) {
        drain_locked(t);
        i = free_slot(t);
    }
    trace_rec *r = i >= 0 ? &t->rec[i] : NULL;
    if (r) {
        r->state = REC_BUSY;
        r->seq = t->seq++;
        r->s = s;
    } else {
        t->lost++;
    }
    pthread_mutex_unlock(&t->lock);
    if (!r)
        return -1;
    kf_rt_err err;
    kf_status st = KF_OK;
    for (int k = 0; k < 2 && st == KF_OK; k++)
        if (!r->ev[k])
            st = ctx->be->event_create(ctx->dev, &r->ev[k], &err);
    if (st == KF_OK)
        st = ctx->be->event_record(ctx->dev, r->ev[0], s->h, &err);
    if (st != KF_OK) {
        pthread_mutex_lock(&t->lock);
        r->state = REC_FREE;
        t->lost++;
        pthread_mutex_unlock(&t->lock);
        return -1;
    }
    return i;
}

void kf_trace_device_end(kf_trace *t, int slot, kf_stream *s, bool ok, const char *name, int kernel,
                         const char *entry, uint64_t bytes)
{
    if (slot < 0)
        return;
    kf_context *ctx = t->ctx;
    trace_rec *r = &t->rec[slot];
    kf_rt_err err;
    bool recorded = ok && ctx->be->event_record(ctx->dev, r->ev[1], s->h, &err) == KF_OK;
    pthread_mutex_lock(&t->lock);
    if (!recorded) {
        r->state = REC_FREE;
        t->lost += ok;
    } else {
        snprintf(r->name, sizeof r->name, "%s", name);
        snprintf(r->entry, sizeof r->entry, "%s", entry ? entry : "");
        r->kernel = kernel;
        r->bytes = bytes;
        r->state = REC_PENDING;
        if (!s->trace_named) {
            char tn[64];
            if (s->trace_id)
                snprintf(tn, sizeof tn, "stream %u (device)", s->trace_id);
            else
                snprintf(tn, sizeof tn, "default stream (device)");
            thread_name(t, TRACE_DEVICE_TID + (long)s->trace_id, tn);
            s->trace_named = true;
        }
    }
    pthread_mutex_unlock(&t->lock);
}

uint64_t kf_trace_seq(kf_trace *t)
{
    pthread_mutex_lock(&t->lock);
    uint64_t q = t->seq;
    pthread_mutex_unlock(&t->lock);
    return q;
}

void kf_trace_resolve(kf_trace *t, kf_stream *s, uint64_t upto)
{
    pthread_mutex_lock(&t->lock);
    resolve_locked(t, s, upto);
    pthread_mutex_unlock(&t->lock);
}

void kf_trace_stats(kf_trace *t, kf_stats *out)
{
    pthread_mutex_lock(&t->lock);
    snprintf(out->trace_path, sizeof out->trace_path, "%s", t->path);
    out->device_busy_ms = (double)t->busy_ns / 1e6;
    pthread_mutex_unlock(&t->lock);
}

/* -- Opening and closing ------------------------------------------------------------------ */

/* path for writing, locked against every other writer (flock: another
 * context of this process, or another process); *busy when it is taken. */
static FILE *open_locked(const char *path, bool *busy)
{
    *busy = false;
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0)
        return NULL;
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        *busy = errno == EWOULDBLOCK;
        close(fd);
        return NULL;
    }
    FILE *f = ftruncate(fd, 0) == 0 ? fdopen(fd, "w") : NULL;
    if (!f)
        close(fd);
    return f;
}

/* The trace file: path itself, or when another writer holds it
 * "STEM-PID-N.json" (N = 1, 2, ...; "PATH-PID-N" without a .json suffix). */
static FILE *open_trace(kf_trace *t, const char *path)
{
    bool busy;
    snprintf(t->path, sizeof t->path, "%s", path);
    FILE *f = open_locked(path, &busy);
    size_t len = strlen(path), stem = len > 5 && strcmp(path + len - 5, ".json") == 0 ? len - 5 : len;
    for (int n = 1; !f && busy && n < 100; n++) {
        snprintf(t->path, sizeof t->path, "%.*s-%d-%d%s", (int)stem, path, t->pid, n, path + stem);
        f = open_locked(t->path, &busy);
    }
    return f;
}

static void trace_free(kf_trace *t)
{
    kf_context *ctx = t->ctx;
    for (int i = 0; i < TRACE_SLOTS; i++)
        for (int k = 0; k < 2; k++)
            if (t->rec[i].ev[k])
                ctx->be->event_destroy(ctx->dev, t->rec[i].ev[k]);
    if (t->base)
        ctx->be->event_destroy(ctx->dev, t->base);
    kf_sb_free(&t->buf);
    pthread_mutex_destroy(&t->lock);
    free(t);
}

void kf_trace_open(kf_context *ctx, const kf_context_options *opts)
{
    const char *path = opts && opts->trace_path ? opts->trace_path : secure_getenv("KFUSE_TRACE");
    if (!path || !*path)
        return;
    kf_trace *t = calloc(1, sizeof *t);
    kf_cache *c = kf_rt_cache_of(ctx);
    if (!t) {
        kf_cache_warn(c, "trace: out of memory; no trace is written");
        return;
    }
    t->ctx = ctx;
    t->pid = (int)getpid();
    pthread_mutex_init(&t->lock, NULL);
    kf_sb_init(&t->buf);
    if (!(t->f = open_trace(t, path))) {
        kf_cache_warn(c, "trace: cannot write %s: %s; no trace is written", t->path, strerror(errno));
        trace_free(t);
        return;
    }
    /* the base event: its host time lies between recording and seeing it done */
    kf_rt_err err;
    uint64_t a = kf_trace_now(), b = a;
    if (!ctx->be->event_host_ns &&
        (ctx->be->event_create(ctx->dev, &t->base, &err) != KF_OK ||
         ctx->be->event_record(ctx->dev, t->base, ctx->default_stream->h, &err) != KF_OK ||
         ctx->be->event_sync(ctx->dev, t->base, &err) != KF_OK)) {
        kf_cache_warn(c, "trace: %s: no device timer: %s; no trace is written", t->path, err.msg);
        fclose(t->f);
        unlink(t->path);
        trace_free(t);
        return;
    }
    b = kf_trace_now();
    t->base_ns = a + (b - a) / 2;
    t->t0 = a;
    char pname[256];
    snprintf(pname, sizeof pname, "kfuse %s: %s", kf_backend_name(ctx->info.backend), ctx->info.name);
    kf_sb_printf(&t->buf, "{\"traceEvents\":[\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"args\":{"
                 "\"name\":", t->pid);
    json_str(&t->buf, pname);
    kf_sb_puts(&t->buf, "}}");
    ctx->trace = t;
}

void kf_trace_close(kf_context *ctx)
{
    kf_trace *t = ctx->trace;
    if (!t)
        return;
    kf_rt_err err;
    for (kf_rt_link *l = ctx->streams.next; l != &ctx->streams; l = l->next)
        ctx->be->stream_sync(ctx->dev, ((kf_stream *)l)->h, &err);
    ctx->be->stream_sync(ctx->dev, ctx->default_stream->h, &err);
    pthread_mutex_lock(&t->lock);
    resolve_locked(t, NULL, UINT64_MAX);
    kf_sb_printf(&t->buf, "\n],\"displayTimeUnit\":\"ms\",\"otherData\":{\"kfuse\":\"%d.%d.%d\",\"lost_device_spans\":"
                 "\"%llu\"}}\n", KFUSE_VERSION_MAJOR, KFUSE_VERSION_MINOR, KFUSE_VERSION_PATCH,
                 (unsigned long long)t->lost);
    flush_locked(t);
    pthread_mutex_unlock(&t->lock);
    if (fclose(t->f) != 0 && !t->failed)
        kf_cache_warn(kf_rt_cache_of(ctx), "trace: writing %s failed: %s", t->path, strerror(errno));
    ctx->trace = NULL;
    trace_free(t);
}
