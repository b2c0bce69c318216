/* The CPU backend behind the vtable: host memory, a thread pool created once
 * per context, streams as ordered task queues, events on the host clock,
 * and kernels compiled by cpu_llvm.c.  A launch asks its kernel for the
 * number of work units, then runs them on the calling thread (few units)
 * or splits them over the pool; a kernel's result never depends on the
 * split (docs/codegen.md, "The CPU target"). */
#include "cpu.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum {
    CPU_MAX_THREADS = 256,
    CPU_ALIGN = 256,                       /* kf_buffer_alloc promises 256 */
    CPU_MIN_SPLIT = 8,                     /* work units (about 16K element-ops each) before a launch is split */
    CPU_INLINE_UNITS = 256,                /* launches up to this run on the caller (with the pool) when the
                                            * stream is idle: about a millisecond of one thread's work */
    CPU_COPY_UNIT = 1 << 20,               /* bytes per work unit of a copy */
    CPU_INLINE_BYTES = 1 << 16             /* copies up to this run on the caller when the stream is idle */
};

static kf_status fail(kf_rt_err *err, kf_status s, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static kf_status fail(kf_rt_err *err, kf_status s, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return s;
}

/* -- The thread pool --------------------------------------------------------------- *
 * A job is a range of work units cut into parts; idle workers and the
 * thread that submitted the job claim parts until none is left. */

typedef struct cpu_job {
    void (*run)(void *ctx, int64_t begin, int64_t end);
    void *ctx;
    int64_t units;
    int parts, next, done;     /* guarded by the pool's lock */
    struct cpu_job *link;
} cpu_job;

typedef struct cpu_pool {
    pthread_mutex_t mu;
    pthread_cond_t work, fin;
    cpu_job *jobs;             /* jobs with parts left to claim or run */
    bool quit;
    int nworkers;
    pthread_t *workers;
} cpu_pool;

static void part_range(const cpu_job *j, int p, int64_t *b, int64_t *e)
{
    int64_t q = j->units / j->parts, r = j->units % j->parts;
    *b = q * p + (p < r ? p : r);
    *e = *b + q + (p < r);
}

/* Claim and run parts of j (lock held on entry and exit). */
static void pool_claim(cpu_pool *pl, cpu_job *j)
{
    while (j->next < j->parts) {
        int p = j->next++;
        pthread_mutex_unlock(&pl->mu);
        int64_t b, e;
        part_range(j, p, &b, &e);
        j->run(j->ctx, b, e);
        pthread_mutex_lock(&pl->mu);
        if (++j->done == j->parts)
            pthread_cond_broadcast(&pl->fin);
    }
}

static void *pool_main(void *arg)
{
    cpu_pool *pl = arg;
    pthread_mutex_lock(&pl->mu);
    while (!pl->quit) {
        cpu_job *j = pl->jobs;
        while (j && j->next >= j->parts)
            j = j->link;
        if (!j) {
            pthread_cond_wait(&pl->work, &pl->mu);
            continue;
        }
        pool_claim(pl, j);
    }
    pthread_mutex_unlock(&pl->mu);
    return NULL;
}

/* Run units [0, units) of run(ctx, ...) in 'parts' parts over the pool and
 * the calling thread; returns when all are done. */
static void pool_run(cpu_pool *pl, void (*run)(void *, int64_t, int64_t), void *ctx, int64_t units, int parts)
{
    if (parts <= 1 || pl->nworkers == 0 || units <= 1) {
        run(ctx, 0, units);
        return;
    }
    cpu_job j = { run, ctx, units, parts, 0, 0, NULL };
    pthread_mutex_lock(&pl->mu);
    j.link = pl->jobs;
    pl->jobs = &j;
    pthread_cond_broadcast(&pl->work);
    pool_claim(pl, &j);
    while (j.done < j.parts)
        pthread_cond_wait(&pl->fin, &pl->mu);
    cpu_job **pp = &pl->jobs;
    while (*pp != &j)
        pp = &(*pp)->link;
    *pp = j.link;
    pthread_mutex_unlock(&pl->mu);
}

static kf_status pool_start(cpu_pool *pl, int nworkers, kf_rt_err *err)
{
    memset(pl, 0, sizeof *pl);
    pthread_mutex_init(&pl->mu, NULL);
    pthread_cond_init(&pl->work, NULL);
    pthread_cond_init(&pl->fin, NULL);
    if (nworkers == 0)
        return KF_OK;
    pl->workers = calloc((size_t)nworkers, sizeof *pl->workers);
    if (!pl->workers)
        return fail(err, KF_ERR_NO_MEMORY, "cpu: out of memory");
    for (int i = 0; i < nworkers; i++) {
        int rc = pthread_create(&pl->workers[i], NULL, pool_main, pl);
        if (rc != 0)
            return fail(err, KF_ERR_DEVICE, "cpu: starting pool thread %d: %s", i, strerror(rc));
        pl->nworkers++;
    }
    return KF_OK;
}

static void pool_stop(cpu_pool *pl)
{
    pthread_mutex_lock(&pl->mu);
    pl->quit = true;
    pthread_cond_broadcast(&pl->work);
    pthread_mutex_unlock(&pl->mu);
    for (int i = 0; i < pl->nworkers; i++)
        pthread_join(pl->workers[i], NULL);
    free(pl->workers);
    pthread_mutex_destroy(&pl->mu);
    pthread_cond_destroy(&pl->work);
    pthread_cond_destroy(&pl->fin);
}

/* -- Device, streams, events --------------------------------------------------------- */

typedef struct cpu_stream cpu_stream;

typedef struct cpu_dev {
    kf_cpu_host host;
    int threads;                 /* pool size, the calling thread included */
    atomic_int use_threads;      /* threads a launch may use (tests lower it) */
    atomic_llong min_split;      /* work units before a launch is split */
    cpu_pool pool;
    cpu_stream *def;             /* the default stream (stream handle NULL) */
} cpu_dev;

typedef struct cpu_event {
    pthread_mutex_t mu;
    atomic_int refs;
    cpu_stream *s;               /* the stream it was last recorded on (a reference), or NULL */
    uint64_t seq;                /* the task that records it */
    struct timespec t;           /* when the stream reached it */
} cpu_event;

enum { T_LAUNCH, T_COPY, T_FILL, T_EVENT, T_WAIT };

typedef struct cpu_task {
    int kind;
    uint64_t seq;
    struct cpu_task *next;
    cpu_dev *d;
    /* launch */
    kf_cpu_entry fn;
    void **args;
    int64_t units;
    /* copy, fill */
    unsigned char *dst;
    const unsigned char *src;
    size_t bytes;
    uint32_t pattern;
    /* event record, stream wait */
    cpu_event *ev;
    cpu_stream *other;
    uint64_t other_seq;
    /* the launch's argument array and by-value bytes follow */
} cpu_task;

struct cpu_stream {
    cpu_dev *d;
    pthread_mutex_t mu;
    pthread_cond_t cv;           /* a task was queued or finished */
    cpu_task *head, *tail;
    uint64_t submitted, completed;
    bool busy, quit, started;
    pthread_t worker;
    atomic_int refs;
};

static void stream_unref(cpu_stream *s);

static void event_unref(cpu_event *e)
{
    if (!e || atomic_fetch_sub(&e->refs, 1) != 1)
        return;
    if (e->s)
        stream_unref(e->s);
    pthread_mutex_destroy(&e->mu);
    free(e);
}

static void stream_unref(cpu_stream *s)
{
    if (!s || atomic_fetch_sub(&s->refs, 1) != 1)
        return;
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s);
}

/* -- Running tasks ----------------------------------------------------------------------- */

static void run_kernel(void *ctx, int64_t b, int64_t e)
{
    cpu_task *t = ctx;
    t->fn(t->args, b, e);
}

static void run_copy(void *ctx, int64_t b, int64_t e)
{
    cpu_task *t = ctx;
    size_t off = (size_t)b * CPU_COPY_UNIT, end = (size_t)e * CPU_COPY_UNIT;
    if (end > t->bytes)
        end = t->bytes;
    if (t->kind == T_COPY) {
        memmove(t->dst + off, t->src + off, end - off);
    } else {
        for (size_t i = off; i < end; i += 4)
            memcpy(t->dst + i, &t->pattern, 4);
    }
}

/* Parts to cut 'units' into for this device's pool (1: run on the caller). */
static int split_parts(cpu_dev *d, int64_t units)
{
    int th = atomic_load(&d->use_threads);
    if (th <= 1 || units < atomic_load(&d->min_split) || units < 2)
        return 1;
    int64_t p = (int64_t)th * 2;
    return (int)(p < units ? p : units);
}

static void task_run(cpu_task *t)
{
    cpu_dev *d = t->d;
    switch (t->kind) {
    case T_LAUNCH:
        pool_run(&d->pool, run_kernel, t, t->units, split_parts(d, t->units));
        break;
    case T_COPY: case T_FILL: {
        int64_t units = (int64_t)((t->bytes + CPU_COPY_UNIT - 1) / CPU_COPY_UNIT);
        int th = atomic_load(&d->use_threads);
        pool_run(&d->pool, run_copy, t, units, units >= 4 && th > 1 ? (int)(units < th ? units : th) : 1);
        break;
    }
    case T_EVENT: {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        pthread_mutex_lock(&t->ev->mu);
        if (t->ev->seq == t->seq && t->ev->s == t->other)
            t->ev->t = now;
        pthread_mutex_unlock(&t->ev->mu);
        break;
    }
    case T_WAIT: {
        cpu_stream *o = t->other;
        pthread_mutex_lock(&o->mu);
        while (o->completed < t->other_seq)
            pthread_cond_wait(&o->cv, &o->mu);
        pthread_mutex_unlock(&o->mu);
        break;
    }
    default: break;
    }
}

static void task_free(cpu_task *t)
{
    if (t->kind == T_EVENT) {
        event_unref(t->ev);
        stream_unref(t->other);
    }
    if (t->kind == T_WAIT)
        stream_unref(t->other);
    free(t);
}

static void *stream_main(void *arg)
{
    cpu_stream *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while ((!s->head || s->busy) && !s->quit)
            pthread_cond_wait(&s->cv, &s->mu);
        if (s->quit && (!s->head || s->busy))
            break;
        cpu_task *t = s->head;
        s->head = t->next;
        if (!s->head)
            s->tail = NULL;
        s->busy = true;
        pthread_mutex_unlock(&s->mu);
        task_run(t);
        pthread_mutex_lock(&s->mu);
        s->busy = false;
        s->completed = t->seq;
        pthread_cond_broadcast(&s->cv);
        task_free(t);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* Queue t on s.  When s is idle and t is small (run_now), run it on the
 * calling thread instead: a short task is over before a worker would wake.
 * Without a worker thread (none could start) every task runs that way. */
static kf_status stream_submit(cpu_stream *s, cpu_task *t, bool run_now, kf_rt_err *err)
{
    (void)err;
    pthread_mutex_lock(&s->mu);
    t->seq = ++s->submitted;
    if (t->kind == T_EVENT) {
        pthread_mutex_lock(&t->ev->mu);
        if (t->ev->s != s) {
            if (t->ev->s)
                stream_unref(t->ev->s);
            atomic_fetch_add(&s->refs, 1);
            t->ev->s = s;
        }
        t->ev->seq = t->seq;
        pthread_mutex_unlock(&t->ev->mu);
    }
    bool here = run_now && !s->head && !s->busy;
    if (!here && !s->started) {
        if (pthread_create(&s->worker, NULL, stream_main, s) == 0)
            s->started = true;
        else
            here = true;
    }
    if (here) {
        while (s->busy || s->head) /* only when there is no worker: someone else runs a task here */
            pthread_cond_wait(&s->cv, &s->mu);
        s->busy = true;
        pthread_mutex_unlock(&s->mu);
        task_run(t);
        pthread_mutex_lock(&s->mu);
        s->busy = false;
        s->completed = t->seq;
        pthread_cond_broadcast(&s->cv);
        pthread_mutex_unlock(&s->mu);
        task_free(t);
        return KF_OK;
    }
    t->next = NULL;
    if (s->tail)
        s->tail->next = t;
    else
        s->head = t;
    s->tail = t;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return KF_OK;
}

static void stream_wait_seq(cpu_stream *s, uint64_t seq)
{
    pthread_mutex_lock(&s->mu);
    while (s->completed < seq)
        pthread_cond_wait(&s->cv, &s->mu);
    pthread_mutex_unlock(&s->mu);
}

static void stream_drain(cpu_stream *s)
{
    pthread_mutex_lock(&s->mu);
    uint64_t want = s->submitted;
    pthread_mutex_unlock(&s->mu);
    stream_wait_seq(s, want);
}

static cpu_stream *stream_new(cpu_dev *d)
{
    cpu_stream *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->d = d;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    atomic_init(&s->refs, 1);
    return s;
}

/* Finish everything queued, stop the worker, drop the caller's reference. */
static void stream_close(cpu_stream *s)
{
    stream_drain(s);
    pthread_mutex_lock(&s->mu);
    s->quit = true;
    pthread_cond_broadcast(&s->cv);
    bool started = s->started;
    pthread_mutex_unlock(&s->mu);
    if (started)
        pthread_join(s->worker, NULL);
    stream_unref(s);
}

static cpu_stream *stream_of(cpu_dev *d, void *stream) { return stream ? stream : d->def; }

/* -- Devices ------------------------------------------------------------------------------- */

static int cpu_count(void)
{
    kf_cpu_host h;
    kf_rt_err err;
    if (kf_cpu_llvm_host(&h, &err) != KF_OK)
        return 0;
    kf_cpu_llvm_host_free(&h);
    return 1;
}

static int online_cpus(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

static void cpu_close(void *dev)
{
    cpu_dev *d = dev;
    if (!d)
        return;
    if (d->def)
        stream_close(d->def);
    pool_stop(&d->pool);
    kf_cpu_llvm_host_free(&d->host);
    free(d);
}

static kf_status cpu_open(int index, void **dev, kf_device_info *info, kf_rt_err *err)
{
    *dev = NULL;
    if (index != 0)
        return fail(err, KF_ERR_NO_DEVICE, "cpu: device %d does not exist (1 present)", index);
    int threads = online_cpus();
    const char *env = secure_getenv("KFUSE_THREADS");
    if (env && *env) {
        char *end = NULL;
        errno = 0;
        long v = strtol(env, &end, 10);
        if (*end || errno || v < 1 || v > CPU_MAX_THREADS)
            return fail(err, KF_ERR_INVALID_ARG, "KFUSE_THREADS='%s' is not a thread count (1 to %d)", env,
                        CPU_MAX_THREADS);
        threads = (int)v;
    }
    if (threads > CPU_MAX_THREADS)
        threads = CPU_MAX_THREADS;
    cpu_dev *d = calloc(1, sizeof *d);
    if (!d)
        return fail(err, KF_ERR_NO_MEMORY, "cpu: out of memory");
    kf_status s = kf_cpu_llvm_host(&d->host, err);
    if (s != KF_OK) {
        free(d);
        return s;
    }
    d->threads = threads;
    atomic_init(&d->use_threads, threads);
    atomic_init(&d->min_split, CPU_MIN_SPLIT);
    s = pool_start(&d->pool, threads - 1, err);
    if (s == KF_OK && !(d->def = stream_new(d)))
        s = fail(err, KF_ERR_NO_MEMORY, "cpu: out of memory");
    if (s != KF_OK) {
        cpu_close(d);
        return s;
    }
    memset(info, 0, sizeof *info);
    info->backend = KF_BACKEND_CPU;
    snprintf(info->name, sizeof info->name, "%.100s (%d thread%s)", d->host.cpu, threads, threads == 1 ? "" : "s");
    snprintf(info->arch, sizeof info->arch, "%.63s", d->host.triple);
    snprintf(info->driver, sizeof info->driver, "LLVM %.50s", d->host.llvm_version);
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    info->memory_bytes = pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz : 0;
    info->compute_units = threads;
    info->fp64 = info->fp16 = true;
    info->gpu = false;
    *dev = d;
    return KF_OK;
}

static const char *cpu_compiler_id(void *dev) { return ((cpu_dev *)dev)->host.id; }

void kf_cpu_tune(void *dev, int threads, int64_t min_split_units)
{
    cpu_dev *d = dev;
    if (threads > 0)
        atomic_store(&d->use_threads, threads < d->threads ? threads : d->threads);
    if (min_split_units > 0)
        atomic_store(&d->min_split, min_split_units);
}

/* -- Programs ------------------------------------------------------------------------------ */

static kf_status cpu_compile(void *dev, const char *src, size_t len, void **bin, size_t *binlen, kf_rt_err *err)
{
    cpu_dev *d = dev;
    if (!d || !src || !bin || !binlen)
        return fail(err, KF_ERR_INVALID_ARG, "cpu compile: a NULL argument");
    return kf_cpu_llvm_compile(&d->host, src, len, bin, binlen, NULL, err);
}

static kf_status cpu_load(void *dev, const void *bin, size_t binlen, bool from_cache, void **mod, kf_rt_err *err)
{
    (void)from_cache;
    if (!dev || !mod)
        return fail(err, KF_ERR_INVALID_ARG, "cpu load: a NULL argument");
    return kf_cpu_llvm_load(bin, binlen, mod, err);
}

static void cpu_unload(void *dev, void *mod)
{
    (void)dev;
    kf_cpu_llvm_unload(mod);
}

static kf_status cpu_function(void *dev, void *mod, const char *name, void **fn, kf_rt_err *err)
{
    if (!dev || !mod || !name || !fn)
        return fail(err, KF_ERR_INVALID_ARG, "cpu function: a NULL argument");
    return kf_cpu_llvm_lookup(mod, name, fn, err);
}

/* -- Memory ------------------------------------------------------------------------------------ */

static kf_status cpu_alloc(void *dev, size_t bytes, void **buf, kf_rt_err *err)
{
    if (!dev || !buf)
        return fail(err, KF_ERR_INVALID_ARG, "cpu alloc: a NULL argument");
    *buf = NULL;
    if (bytes > SIZE_MAX - CPU_ALIGN)
        return fail(err, KF_ERR_NO_MEMORY, "cpu alloc: %zu bytes is too large", bytes);
    size_t n = bytes == 0 ? CPU_ALIGN : (bytes + CPU_ALIGN - 1) & ~(size_t)(CPU_ALIGN - 1);
    *buf = aligned_alloc(CPU_ALIGN, n);
    if (!*buf)
        return fail(err, KF_ERR_NO_MEMORY, "cpu alloc: out of host memory for %zu bytes", n);
    return KF_OK;
}

static void cpu_free(void *dev, void *buf)
{
    (void)dev;
    free(buf);
}

static cpu_task *task_new(cpu_dev *d, int kind, size_t extra)
{
    cpu_task *t = calloc(1, sizeof *t + extra);
    if (t) {
        t->kind = kind;
        t->d = d;
    }
    return t;
}

static kf_status cpu_copy(void *dev, kf_rt_copy kind, void *dst, size_t dstoff, const void *src, size_t srcoff,
                          size_t bytes, void *stream, bool sync, kf_rt_err *err)
{
    cpu_dev *d = dev;
    (void)kind; /* host memory either side */
    if (!d || (bytes && (!dst || !src)))
        return fail(err, KF_ERR_INVALID_ARG, "cpu copy: a NULL argument");
    if (bytes == 0)
        return KF_OK;
    cpu_stream *s = stream_of(d, stream);
    cpu_task *t = task_new(d, T_COPY, 0);
    if (!t)
        return fail(err, KF_ERR_NO_MEMORY, "cpu copy: out of memory");
    t->dst = (unsigned char *)dst + dstoff;
    t->src = (const unsigned char *)src + srcoff;
    t->bytes = bytes;
    kf_status st = stream_submit(s, t, sync || bytes <= CPU_INLINE_BYTES, err);
    if (st == KF_OK && sync)
        stream_drain(s);
    return st;
}

static kf_status cpu_fill(void *dev, void *buf, size_t off, uint32_t pattern, size_t bytes, void *stream, kf_rt_err *err)
{
    cpu_dev *d = dev;
    if (!d || !buf || bytes % 4)
        return fail(err, KF_ERR_INVALID_ARG, "cpu fill: a NULL argument or a size not a multiple of 4");
    if (bytes == 0)
        return KF_OK;
    cpu_task *t = task_new(d, T_FILL, 0);
    if (!t)
        return fail(err, KF_ERR_NO_MEMORY, "cpu fill: out of memory");
    t->dst = (unsigned char *)buf + off;
    t->bytes = bytes;
    t->pattern = pattern;
    return stream_submit(stream_of(d, stream), t, bytes <= CPU_INLINE_BYTES, err);
}

/* Queue a kernel: the arguments are copied (by-value bytes too), so the
 * caller's may change at once; grid and block mean nothing here. */
static kf_status cpu_launch(void *dev, void *fn, uint64_t grid, uint32_t block, const kf_rt_arg *args, int nargs,
                            void *stream, kf_rt_err *err)
{
    cpu_dev *d = dev;
    (void)grid;
    (void)block;
    if (!d || !fn || nargs < 0 || (nargs && !args))
        return fail(err, KF_ERR_INVALID_ARG, "cpu launch: a NULL argument");
    size_t bytes = 0;
    for (int i = 0; i < nargs; i++)
        if (args[i].bytes)
            bytes += (args[i].size + 15) & ~(size_t)15;
    size_t ptrs = ((size_t)nargs * sizeof(void *) + 15) & ~(size_t)15;
    cpu_task *t = task_new(d, T_LAUNCH, 16 + ptrs + bytes);
    if (!t)
        return fail(err, KF_ERR_NO_MEMORY, "cpu launch: out of memory");
    unsigned char *extra = (unsigned char *)(((uintptr_t)(t + 1) + 15) & ~(uintptr_t)15);
    t->args = (void **)extra;
    unsigned char *val = extra + ptrs;
    for (int i = 0; i < nargs; i++) {
        if (args[i].bytes) {
            memcpy(val, args[i].bytes, args[i].size);
            t->args[i] = val;
            val += (args[i].size + 15) & ~(size_t)15;
        } else {
            t->args[i] = args[i].buf;
        }
    }
    t->fn = (kf_cpu_entry)fn;
    t->units = t->fn(t->args, 0, 0);
    if (t->units <= 0) {
        free(t);
        return KF_OK;
    }
    /* a launch that is over in about a millisecond is not worth a handoff
     * to the stream's thread: the caller runs it (with the pool) when the
     * stream is idle; longer ones queue and return at once */
    return stream_submit(stream_of(d, stream), t, t->units <= CPU_INLINE_UNITS, err);
}

/* -- Streams and events ---------------------------------------------------------------------- */

static kf_status cpu_stream_create(void *dev, void **stream, kf_rt_err *err)
{
    if (!dev || !stream)
        return fail(err, KF_ERR_INVALID_ARG, "cpu stream_create: a NULL argument");
    *stream = stream_new(dev);
    return *stream ? KF_OK : fail(err, KF_ERR_NO_MEMORY, "cpu stream_create: out of memory");
}

static void cpu_stream_destroy(void *dev, void *stream)
{
    (void)dev;
    if (stream)
        stream_close(stream);
}

static kf_status cpu_stream_sync(void *dev, void *stream, kf_rt_err *err)
{
    if (!dev)
        return fail(err, KF_ERR_INVALID_ARG, "cpu stream_sync: a NULL argument");
    stream_drain(stream_of(dev, stream));
    return KF_OK;
}

static kf_status cpu_event_create(void *dev, void **event, kf_rt_err *err)
{
    if (!dev || !event)
        return fail(err, KF_ERR_INVALID_ARG, "cpu event_create: a NULL argument");
    cpu_event *e = calloc(1, sizeof *e);
    if (!e)
        return fail(err, KF_ERR_NO_MEMORY, "cpu event_create: out of memory");
    pthread_mutex_init(&e->mu, NULL);
    atomic_init(&e->refs, 1);
    *event = e;
    return KF_OK;
}

static void cpu_event_destroy(void *dev, void *event)
{
    (void)dev;
    event_unref(event);
}

static kf_status cpu_event_record(void *dev, void *event, void *stream, kf_rt_err *err)
{
    cpu_dev *d = dev;
    if (!d || !event)
        return fail(err, KF_ERR_INVALID_ARG, "cpu event_record: a NULL argument");
    cpu_stream *s = stream_of(d, stream);
    cpu_task *t = task_new(d, T_EVENT, 0);
    if (!t)
        return fail(err, KF_ERR_NO_MEMORY, "cpu event_record: out of memory");
    cpu_event *e = event;
    atomic_fetch_add(&e->refs, 1);
    atomic_fetch_add(&s->refs, 1);
    t->ev = e;
    t->other = s;
    return stream_submit(s, t, true, err);
}

/* The stream and task that record e (a reference to the stream), or NULL. */
static cpu_stream *event_point(cpu_event *e, uint64_t *seq)
{
    pthread_mutex_lock(&e->mu);
    cpu_stream *s = e->s;
    *seq = e->seq;
    if (s)
        atomic_fetch_add(&s->refs, 1);
    pthread_mutex_unlock(&e->mu);
    return s;
}

static kf_status cpu_stream_wait(void *dev, void *stream, void *event, kf_rt_err *err)
{
    cpu_dev *d = dev;
    if (!d || !event)
        return fail(err, KF_ERR_INVALID_ARG, "cpu stream_wait: a NULL argument");
    uint64_t seq;
    cpu_stream *o = event_point(event, &seq), *s = stream_of(d, stream);
    if (!o)
        return fail(err, KF_ERR_INVALID_ARG, "cpu stream_wait: the event was never recorded");
    if (o == s) { /* a stream is ordered already */
        stream_unref(o);
        return KF_OK;
    }
    cpu_task *t = task_new(d, T_WAIT, 0);
    if (!t) {
        stream_unref(o);
        return fail(err, KF_ERR_NO_MEMORY, "cpu stream_wait: out of memory");
    }
    t->other = o;
    t->other_seq = seq;
    pthread_mutex_lock(&o->mu);
    bool done = o->completed >= seq;
    pthread_mutex_unlock(&o->mu);
    return stream_submit(s, t, done, err);
}

static kf_status cpu_event_sync(void *dev, void *event, kf_rt_err *err)
{
    if (!dev || !event)
        return fail(err, KF_ERR_INVALID_ARG, "cpu event_sync: a NULL argument");
    uint64_t seq;
    cpu_stream *s = event_point(event, &seq);
    if (!s)
        return fail(err, KF_ERR_INVALID_ARG, "cpu event_sync: the event was never recorded");
    stream_wait_seq(s, seq);
    stream_unref(s);
    return KF_OK;
}

static kf_status event_time(cpu_event *e, const char *which, struct timespec *t, kf_rt_err *err)
{
    uint64_t seq;
    cpu_stream *s = event_point(e, &seq);
    if (!s)
        return fail(err, KF_ERR_INVALID_ARG, "cpu event_elapsed: the %s event was never recorded", which);
    pthread_mutex_lock(&s->mu);
    bool done = s->completed >= seq;
    pthread_mutex_unlock(&s->mu);
    stream_unref(s);
    if (!done)
        return fail(err, KF_ERR_INVALID_ARG, "cpu event_elapsed: the %s event has not completed yet", which);
    pthread_mutex_lock(&e->mu);
    *t = e->t;
    pthread_mutex_unlock(&e->mu);
    return KF_OK;
}

static kf_status cpu_event_elapsed(void *dev, void *start, void *end, float *ms, kf_rt_err *err)
{
    if (!dev || !start || !end || !ms)
        return fail(err, KF_ERR_INVALID_ARG, "cpu event_elapsed: a NULL argument");
    struct timespec t0, t1;
    kf_status s = event_time(start, "start", &t0, err);
    if (s == KF_OK)
        s = event_time(end, "end", &t1, err);
    if (s != KF_OK)
        return s;
    *ms = (float)((double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
    return KF_OK;
}

static kf_status cpu_event_host_ns(void *dev, void *event, uint64_t *ns, kf_rt_err *err)
{
    if (!dev || !event || !ns)
        return fail(err, KF_ERR_INVALID_ARG, "cpu event_host_ns: a NULL argument");
    struct timespec t;
    kf_status s = event_time(event, "traced", &t, err);
    if (s == KF_OK)
        *ns = (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
    return s;
}

/* -- The vtable -------------------------------------------------------------------------------- */

static const kf_backend_ops cpu_ops = {
    .name = "cpu",
    .kind = KF_BACKEND_CPU,
    .count = cpu_count,
    .open = cpu_open,
    .close = cpu_close,
    .compile = cpu_compile,
    .load = cpu_load,
    .unload = cpu_unload,
    .function = cpu_function,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .copy = cpu_copy,
    .host_alloc = cpu_alloc, /* buffers are host memory already: aligned malloc */
    .host_free = cpu_free,
    .fill = cpu_fill,
    .launch = cpu_launch,
    .stream_create = cpu_stream_create,
    .stream_destroy = cpu_stream_destroy,
    .stream_sync = cpu_stream_sync,
    .event_create = cpu_event_create,
    .event_destroy = cpu_event_destroy,
    .event_record = cpu_event_record,
    .stream_wait = cpu_stream_wait,
    .event_sync = cpu_event_sync,
    .event_elapsed = cpu_event_elapsed,
    .event_host_ns = cpu_event_host_ns,
    .compiler_id = cpu_compiler_id,
};

const kf_backend_ops *kf_rt_cpu_backend(void) { return &cpu_ops; }
