/* Host memory of a context: pinned allocations made for the user
 * (kf_host_alloc), the pinned staging pool that kf_run_host copies
 * pageable arrays through, the copy workers that fill and drain its slots,
 * and the pinned copy rates measured once. */
#include "cache.h"
#include "host.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Up to this many threads help the caller with a large staging memcpy. */
#define KF_RT_COPY_WORKERS 7
/* Copies smaller than this are done by the caller alone. */
#define KF_RT_COPY_SPLIT ((size_t)4 << 20)

typedef struct copy_job {
    struct copy_job *next;
    unsigned char *dst;
    const unsigned char *src;
    size_t n, part;
    size_t nparts, taken, done;
} copy_job;

typedef struct pinned_mem {
    void *p;
    size_t n;
} pinned_mem;

struct kf_rt_host {
    /* the staging pool and the user's pinned memory */
    pthread_mutex_t lock;
    pthread_cond_t freed;      /* a slot was given back or allocated */
    int nslots;
    size_t slot_bytes;
    void **slot;               /* nslots entries, NULL until allocated */
    bool *busy;
    int making;                /* slots being allocated (outside the lock) */
    pinned_mem *pinned;
    int npinned, pincap;

    /* copy workers, started on the first large copy */
    pthread_mutex_t wlock;
    pthread_cond_t work, done;
    pthread_t worker[KF_RT_COPY_WORKERS];
    int nworkers;
    bool started, stop;
    copy_job *jobs;            /* jobs with parts not yet taken, oldest first */

    pthread_mutex_t rlock;     /* the rates, measured once */
    bool measured;
    kf_rt_rates rates;
};

/* -- Settings --------------------------------------------------------------------- */

kf_status kf_rt_host_open(kf_context *ctx, const kf_context_options *opts, char *why, size_t whylen)
{
    int slots = KF_RT_STAGING_SLOTS;
    uint64_t bytes = KF_RT_STAGING_SLOT_BYTES;
    const char *v = secure_getenv("KFUSE_STAGING");
    if (v && *v) {
        char *end = NULL;
        long n = strtol(v, &end, 10);
        if (end == v || (*end != 'x' && *end != 'X') || n < 1 || n > 64 || !kf_cache_parse_size(end + 1, &bytes) ||
            bytes < 4096) {
            snprintf(why, whylen, "KFUSE_STAGING='%.64s' is not SLOTSxSIZE (1 to 64 slots of at least 4K, e.g. 4x64M)",
                     v);
            return KF_ERR_INVALID_ARG;
        }
        slots = (int)n;
    }
    if (opts && (opts->staging_slots < 0 || opts->staging_slots > 64)) {
        snprintf(why, whylen, "kf_context_options.staging_slots = %d is not 0 to 64", opts->staging_slots);
        return KF_ERR_INVALID_ARG;
    }
    if (opts && opts->staging_slots)
        slots = opts->staging_slots;
    if (opts && opts->staging_slot_bytes)
        bytes = opts->staging_slot_bytes < 4096 ? 4096 : opts->staging_slot_bytes;
    if (bytes > SIZE_MAX / 2) {
        snprintf(why, whylen, "a staging slot of %llu bytes is too large", (unsigned long long)bytes);
        return KF_ERR_INVALID_ARG;
    }
    kf_rt_host *h = calloc(1, sizeof *h);
    if (h) {
        h->slot = calloc((size_t)slots, sizeof *h->slot);
        h->busy = calloc((size_t)slots, sizeof *h->busy);
    }
    if (!h || !h->slot || !h->busy) {
        if (h) {
            free(h->slot);
            free(h->busy);
        }
        free(h);
        snprintf(why, whylen, "out of memory");
        return KF_ERR_NO_MEMORY;
    }
    h->nslots = slots;
    h->slot_bytes = ((size_t)bytes + 4095) & ~(size_t)4095;
    pthread_mutex_init(&h->lock, NULL);
    pthread_cond_init(&h->freed, NULL);
    pthread_mutex_init(&h->wlock, NULL);
    pthread_cond_init(&h->work, NULL);
    pthread_cond_init(&h->done, NULL);
    pthread_mutex_init(&h->rlock, NULL);
    ctx->host = h;
    return KF_OK;
}

void kf_rt_host_close(kf_context *ctx)
{
    kf_rt_host *h = ctx->host;
    if (!h)
        return;
    pthread_mutex_lock(&h->wlock);
    h->stop = true;
    pthread_cond_broadcast(&h->work);
    pthread_mutex_unlock(&h->wlock);
    for (int i = 0; i < h->nworkers; i++)
        pthread_join(h->worker[i], NULL);
    for (int i = 0; i < h->nslots; i++)
        if (h->slot[i])
            ctx->be->host_free(ctx->dev, h->slot[i]);
    for (int i = 0; i < h->npinned; i++)
        ctx->be->host_free(ctx->dev, h->pinned[i].p);
    free(h->slot);
    free(h->busy);
    free(h->pinned);
    pthread_mutex_destroy(&h->lock);
    pthread_cond_destroy(&h->freed);
    pthread_mutex_destroy(&h->wlock);
    pthread_cond_destroy(&h->work);
    pthread_cond_destroy(&h->done);
    pthread_mutex_destroy(&h->rlock);
    free(h);
    ctx->host = NULL;
}

/* -- Pinned memory for the user ------------------------------------------------------ */

kf_status kf_host_alloc(kf_context *ctx, size_t bytes, void **ptr)
{
    if (!ctx)
        return KF_ERR_INVALID_ARG;
    if (!ptr)
        return kf_rt_fail(ctx, KF_ERR_INVALID_ARG, "kf_host_alloc: ptr is NULL");
    *ptr = NULL;
    if (bytes == 0)
        return kf_rt_fail(ctx, KF_ERR_INVALID_ARG, "kf_host_alloc: 0 bytes asked for");
    if (!ctx->be->host_alloc)
        return kf_rt_fail(ctx, KF_ERR_UNSUPPORTED, "kf_host_alloc: the %s backend has no pinned host memory",
                          ctx->be->name);
    kf_rt_host *h = ctx->host;
    pthread_mutex_lock(&h->lock);
    if (h->npinned == h->pincap) {
        int cap = h->pincap ? 2 * h->pincap : 16;
        pinned_mem *grown = realloc(h->pinned, (size_t)cap * sizeof *grown);
        if (grown) {
            h->pinned = grown;
            h->pincap = cap;
        }
    }
    bool room = h->npinned < h->pincap;
    pthread_mutex_unlock(&h->lock);
    if (!room)
        return kf_rt_fail(ctx, KF_ERR_NO_MEMORY, "kf_host_alloc: out of host memory");
    kf_rt_err err;
    void *p = NULL;
    kf_status s = ctx->be->host_alloc(ctx->dev, bytes, &p, &err);
    if (s != KF_OK)
        return kf_rt_fail(ctx, s, "kf_host_alloc(%zu bytes): %s", bytes, err.msg);
    pthread_mutex_lock(&h->lock);
    room = h->npinned < h->pincap; /* another thread may have taken the room */
    if (room)
        h->pinned[h->npinned++] = (pinned_mem){ p, bytes };
    pthread_mutex_unlock(&h->lock);
    if (!room) {
        ctx->be->host_free(ctx->dev, p);
        return kf_rt_fail(ctx, KF_ERR_NO_MEMORY, "kf_host_alloc: out of host memory");
    }
    *ptr = p;
    return KF_OK;
}

kf_status kf_host_free(kf_context *ctx, void *ptr)
{
    if (!ctx)
        return KF_ERR_INVALID_ARG;
    if (!ptr)
        return KF_OK;
    kf_rt_host *h = ctx->host;
    bool found = false;
    pthread_mutex_lock(&h->lock);
    for (int i = 0; i < h->npinned && !found; i++)
        if (h->pinned[i].p == ptr) {
            h->pinned[i] = h->pinned[--h->npinned];
            found = true;
        }
    pthread_mutex_unlock(&h->lock);
    if (!found)
        return kf_rt_fail(ctx, KF_ERR_INVALID_ARG, "kf_host_free: %p is not memory from kf_host_alloc on this context",
                          ptr);
    ctx->be->host_free(ctx->dev, ptr);
    return KF_OK;
}

bool kf_rt_host_pinned(kf_context *ctx, const void *p, size_t bytes)
{
    kf_rt_host *h = ctx->host;
    uintptr_t a = (uintptr_t)p;
    bool in = false;
    pthread_mutex_lock(&h->lock);
    for (int i = 0; i < h->npinned && !in; i++) {
        uintptr_t b = (uintptr_t)h->pinned[i].p;
        in = a >= b && a - b <= h->pinned[i].n && bytes <= h->pinned[i].n - (a - b);
    }
    pthread_mutex_unlock(&h->lock);
    return in;
}

/* -- The staging pool ------------------------------------------------------------------ */

size_t kf_rt_slot_bytes(kf_context *ctx) { return ctx->host->slot_bytes; }
int kf_rt_slot_count(kf_context *ctx) { return ctx->host->nslots; }

kf_status kf_rt_slot_take(kf_context *ctx, bool wait, void **slot)
{
    kf_rt_host *h = ctx->host;
    *slot = NULL;
    pthread_mutex_lock(&h->lock);
    for (;;) {
        int made = 0;
        for (int i = 0; i < h->nslots; i++) {
            if (h->slot[i] && !h->busy[i]) {
                h->busy[i] = true;
                *slot = h->slot[i];
                pthread_mutex_unlock(&h->lock);
                return KF_OK;
            }
            made += h->slot[i] != NULL;
        }
        if (made + h->making < h->nslots) {
            /* pinning is slow: allocate outside the lock */
            h->making++;
            pthread_mutex_unlock(&h->lock);
            kf_rt_err err;
            void *p = NULL;
            kf_status s = ctx->be->host_alloc(ctx->dev, h->slot_bytes, &p, &err);
            pthread_mutex_lock(&h->lock);
            h->making--;
            if (s != KF_OK && made == 0) {
                pthread_cond_broadcast(&h->freed);
                pthread_mutex_unlock(&h->lock);
                return kf_rt_fail(ctx, s, "allocating a %zu-byte pinned staging slot: %s", h->slot_bytes, err.msg);
            }
            if (s == KF_OK) {
                for (int i = 0; i < h->nslots; i++)
                    if (!h->slot[i]) {
                        h->slot[i] = p;
                        h->busy[i] = true;
                        break;
                    }
                *slot = p;
                pthread_mutex_unlock(&h->lock);
                return KF_OK;
            }
            /* out of pinned memory with some slots made: make do with those */
            h->nslots = made + h->making;
        }
        if (!wait)
            break;
        pthread_cond_wait(&h->freed, &h->lock);
    }
    pthread_mutex_unlock(&h->lock);
    return KF_OK;
}

void kf_rt_slot_give(kf_context *ctx, void *slot)
{
    kf_rt_host *h = ctx->host;
    if (!slot)
        return;
    pthread_mutex_lock(&h->lock);
    for (int i = 0; i < h->nslots; i++)
        if (h->slot[i] == slot)
            h->busy[i] = false;
    pthread_cond_signal(&h->freed);
    pthread_mutex_unlock(&h->lock);
}

/* -- Copy workers -------------------------------------------------------------------------- */

/* Take and do one part of j (wlock held; released during the memcpy). */
static void job_step(kf_rt_host *h, copy_job *j)
{
    size_t i = j->taken++;
    if (j->taken == j->nparts)
        for (copy_job **l = &h->jobs; *l; l = &(*l)->next)
            if (*l == j) {
                *l = j->next;
                break;
            }
    pthread_mutex_unlock(&h->wlock);
    size_t off = i * j->part, n = j->n - off < j->part ? j->n - off : j->part;
    memcpy(j->dst + off, j->src + off, n);
    pthread_mutex_lock(&h->wlock);
    if (++j->done == j->nparts)
        pthread_cond_broadcast(&h->done);
}

static void *worker_main(void *arg)
{
    kf_rt_host *h = arg;
    pthread_mutex_lock(&h->wlock);
    while (!h->stop) {
        if (h->jobs)
            job_step(h, h->jobs);
        else
            pthread_cond_wait(&h->work, &h->wlock);
    }
    pthread_mutex_unlock(&h->wlock);
    return NULL;
}

static int usable_cpus(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

void kf_rt_host_copy(kf_context *ctx, void *dst, const void *src, size_t n)
{
    kf_rt_host *h = ctx->host;
    if (n < KF_RT_COPY_SPLIT) {
        memcpy(dst, src, n);
        return;
    }
    pthread_mutex_lock(&h->wlock);
    if (!h->started) {
        h->started = true;
        int want = usable_cpus() - 1;
        for (int i = 0; i < want && i < KF_RT_COPY_WORKERS; i++)
            if (pthread_create(&h->worker[h->nworkers], NULL, worker_main, h) == 0)
                h->nworkers++;
    }
    size_t parts = (size_t)h->nworkers + 1;
    if (parts > n / (KF_RT_COPY_SPLIT / 4))
        parts = n / (KF_RT_COPY_SPLIT / 4);
    copy_job j = { .dst = dst, .src = src, .n = n, .nparts = parts };
    j.part = ((n + parts - 1) / parts + 63) & ~(size_t)63;
    j.nparts = (n + j.part - 1) / j.part;
    copy_job **tail = &h->jobs;
    while (*tail)
        tail = &(*tail)->next;
    *tail = &j;
    pthread_cond_broadcast(&h->work);
    while (j.taken < j.nparts)
        job_step(h, &j);
    while (j.done < j.nparts)
        pthread_cond_wait(&h->done, &h->wlock);
    pthread_mutex_unlock(&h->wlock);
}

/* -- Copy rates --------------------------------------------------------------------------- */

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* The best of three times of 'count' queued copies of n bytes and a wait
 * for them, in seconds. */
static kf_status time_copies(kf_context *ctx, kf_rt_copy kind, void *buf, void *host, size_t n, int count,
                             void *stream, double *best, kf_rt_err *err)
{
    *best = 1e9;
    for (int r = 0; r < 3; r++) {
        double t0 = now_s();
        kf_status s = KF_OK;
        for (int c = 0; c < count && s == KF_OK; c++)
            s = kind == KF_COPY_H2D ? ctx->be->copy(ctx->dev, kind, buf, 0, host, 0, n, stream, false, err)
                                    : ctx->be->copy(ctx->dev, kind, host, 0, buf, 0, n, stream, false, err);
        if (s == KF_OK)
            s = ctx->be->stream_sync(ctx->dev, stream, err);
        if (s != KF_OK)
            return s;
        double t = now_s() - t0;
        if (t < *best)
            *best = t;
    }
    if (*best < 1e-9)
        *best = 1e-9;
    return KF_OK;
}

/* Cheap: 4 KiB copies one and nine at a time (the difference is the
 * fixed cost of a queued operation in a busy queue), and copies of up to
 * 16 MiB each way, through a staging slot and a private stream. */
kf_status kf_rt_host_rates(kf_context *ctx, kf_rt_rates *out)
{
    kf_rt_host *h = ctx->host;
    pthread_mutex_lock(&h->rlock);
    if (h->measured) {
        *out = h->rates;
        pthread_mutex_unlock(&h->rlock);
        return KF_OK;
    }
    void *slot = NULL, *buf = NULL, *stream = NULL;
    size_t n = h->slot_bytes < ((size_t)16 << 20) ? h->slot_bytes : (size_t)16 << 20;
    kf_rt_err err = { { 0 } };
    double one = 0, nine = 0, up = 0, down = 0;
    kf_status s = kf_rt_slot_take(ctx, true, &slot);
    if (s != KF_OK) {
        pthread_mutex_unlock(&h->rlock);
        return s;
    }
    memset(slot, 0, n);
    s = ctx->be->alloc(ctx->dev, n, &buf, &err);
    if (s == KF_OK)
        s = ctx->be->stream_create(ctx->dev, &stream, &err);
    if (s == KF_OK)
        s = time_copies(ctx, KF_COPY_H2D, buf, slot, 4096, 1, stream, &one, &err);
    if (s == KF_OK)
        s = time_copies(ctx, KF_COPY_H2D, buf, slot, 4096, 9, stream, &nine, &err);
    if (s == KF_OK)
        s = time_copies(ctx, KF_COPY_H2D, buf, slot, n, 1, stream, &up, &err);
    if (s == KF_OK)
        s = time_copies(ctx, KF_COPY_D2H, buf, slot, n, 1, stream, &down, &err);
    if (stream)
        ctx->be->stream_destroy(ctx->dev, stream);
    if (buf)
        ctx->be->free(ctx->dev, buf);
    kf_rt_slot_give(ctx, slot);
    if (s == KF_OK) {
        h->rates = (kf_rt_rates){ (double)n / up, (double)n / down, nine > one ? (nine - one) / 8 : 1e-7 };
        h->measured = true;
        *out = h->rates;
    }
    pthread_mutex_unlock(&h->rlock);
    return s == KF_OK ? KF_OK : kf_rt_fail(ctx, s, "measuring the pinned copy rates: %s", err.msg);
}
