/* The CPU backend: its vtable alone (device, compile from LLVM IR, load,
 * memory, launches on several streams and threads, events), then through
 * the public API: reductions give the same bits on 1, 2 and 7 threads and
 * round exactly as the GPU kernels' fixed order does, integer division by
 * zero and MIN / -1 never trap, take out of range is reported, and random
 * graphs match the interpreter (bit for bit where no library function or
 * float sum lies upstream: kf_rg_compare) with the same bits on every
 * thread count.
 * Usage: test_cpu [NRANDOM]  (default 60 random graphs; KFUSE_TEST_RANDOM too;
 * KFUSE_TEST_SEED=I starts at graph I, seed 5000 + I; sizes with a node over
 * 2^22 elements are skipped, about 1 in 110) */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "check.h"
#include "codegen.h"
#include "cpu.h"
#include "gpu_order.h"
#include "kfsample.h"
#include "randgraph.h"
#include "runtime.h"

static const kf_backend_ops *be;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Two kernels of the CPU entry ABI (cpu.h): int64 entry(void **args,
 * int64 begin, int64 end) returns the number of work units and does units
 * [begin, end).
 * saxpy: args x, y, &{n, off}, &a; y[off+i] = a*x[off+i] + y[off+i], units of 1024.
 * slow_fill: args y, &n, &iters, &v; one unit per element, spinning iters
 * square roots before writing v. */
static const char kernel_ir[] =
    "define i64 @saxpy(ptr %args, i64 %begin, i64 %end) {\n"
    "entry:\n"
    "  %px = load ptr, ptr %args\n"
    "  %a1 = getelementptr ptr, ptr %args, i64 1\n"
    "  %py = load ptr, ptr %a1\n"
    "  %a2 = getelementptr ptr, ptr %args, i64 2\n"
    "  %ps = load ptr, ptr %a2\n"
    "  %n = load i64, ptr %ps\n"
    "  %poff = getelementptr i64, ptr %ps, i64 1\n"
    "  %off = load i64, ptr %poff\n"
    "  %a3 = getelementptr ptr, ptr %args, i64 3\n"
    "  %pa = load ptr, ptr %a3\n"
    "  %a = load float, ptr %pa\n"
    "  %u0 = add i64 %n, 1023\n"
    "  %units = lshr i64 %u0, 10\n"
    "  %b = shl i64 %begin, 10\n"
    "  %e0 = shl i64 %end, 10\n"
    "  %lt = icmp slt i64 %e0, %n\n"
    "  %e = select i1 %lt, i64 %e0, i64 %n\n"
    "  br label %head\n"
    "head:\n"
    "  %i = phi i64 [ %b, %entry ], [ %i1, %body ]\n"
    "  %c = icmp slt i64 %i, %e\n"
    "  br i1 %c, label %body, label %done\n"
    "body:\n"
    "  %j = add i64 %i, %off\n"
    "  %xp = getelementptr float, ptr %px, i64 %j\n"
    "  %x = load float, ptr %xp\n"
    "  %yp = getelementptr float, ptr %py, i64 %j\n"
    "  %y = load float, ptr %yp\n"
    "  %m = fmul float %a, %x\n"
    "  %r = fadd float %m, %y\n"
    "  store float %r, ptr %yp\n"
    "  %i1 = add i64 %i, 1\n"
    "  br label %head\n"
    "done:\n"
    "  ret i64 %units\n"
    "}\n"
    "\n"
    "declare float @llvm.sqrt.f32(float)\n"
    "\n"
    "define i64 @slow_fill(ptr %args, i64 %begin, i64 %end) {\n"
    "entry:\n"
    "  %py = load ptr, ptr %args\n"
    "  %a1 = getelementptr ptr, ptr %args, i64 1\n"
    "  %pn = load ptr, ptr %a1\n"
    "  %n = load i64, ptr %pn\n"
    "  %a2 = getelementptr ptr, ptr %args, i64 2\n"
    "  %pit = load ptr, ptr %a2\n"
    "  %iters = load i32, ptr %pit\n"
    "  %a3 = getelementptr ptr, ptr %args, i64 3\n"
    "  %pv = load ptr, ptr %a3\n"
    "  %v = load float, ptr %pv\n"
    "  %lt = icmp slt i64 %end, %n\n"
    "  %e = select i1 %lt, i64 %end, i64 %n\n"
    "  br label %head\n"
    "head:\n"
    "  %i = phi i64 [ %begin, %entry ], [ %i1, %store ]\n"
    "  %c = icmp slt i64 %i, %e\n"
    "  br i1 %c, label %spin, label %done\n"
    "spin:\n"
    "  %k = phi i32 [ 0, %head ], [ %k1, %spin ]\n"
    "  %acc = phi float [ 1.0, %head ], [ %acc1, %spin ]\n"
    "  %kf = sitofp i32 %k to float\n"
    "  %s = fadd float %acc, %kf\n"
    "  %acc1 = call float @llvm.sqrt.f32(float %s)\n"
    "  %k1 = add i32 %k, 1\n"
    "  %more = icmp slt i32 %k1, %iters\n"
    "  br i1 %more, label %spin, label %store\n"
    "store:\n"
    "  %z = fmul float %acc1, 0.0\n"
    "  %w = fadd float %v, %z\n"
    "  %yp = getelementptr float, ptr %py, i64 %i\n"
    "  store float %w, ptr %yp\n"
    "  %i1 = add i64 %i, 1\n"
    "  br label %head\n"
    "done:\n"
    "  ret i64 %n\n"
    "}\n";

typedef struct span {
    int64_t n, off;
} span;

static kf_rt_arg arg_buf(void *b) { return (kf_rt_arg){ NULL, 0, b, 0 }; }
static kf_rt_arg arg_val(const void *p, size_t size) { return (kf_rt_arg){ p, size, NULL, 0 }; }

static kf_status launch_saxpy(void *dev, void *fn, void *x, void *y, int64_t n, int64_t off, float a, void *stream,
                              kf_rt_err *err)
{
    span s = { n, off };
    kf_rt_arg args[4] = { arg_buf(x), arg_buf(y), arg_val(&s, sizeof s), arg_val(&a, sizeof a) };
    return be->launch(dev, fn, 1, 1, args, 4, stream, err);
}

static kf_status launch_slow(void *dev, void *fn, void *y, int64_t n, int iters, float v, void *stream, kf_rt_err *err)
{
    kf_rt_arg args[4] = { arg_buf(y), arg_val(&n, sizeof n), arg_val(&iters, sizeof iters), arg_val(&v, sizeof v) };
    return be->launch(dev, fn, 1, 1, args, 4, stream, err);
}

/* -- The vtable ----------------------------------------------------------------- */

static void test_info(void *dev, const kf_device_info *info)
{
    printf("cpu: '%s', triple '%s', '%s', %llu MiB, %d threads\n", info->name, info->arch, info->driver,
           (unsigned long long)(info->memory_bytes >> 20), info->compute_units);
    CHECK(info->backend == KF_BACKEND_CPU);
    CHECK(!info->gpu && info->fp64 && info->fp16);
    CHECK(info->compute_units >= 1);
    CHECK(info->memory_bytes > 0);
    CHECK_CONTAINS(info->driver, "LLVM 15");
    const char *cid = be->compiler_id(dev);
    CHECK(cid != NULL);
    if (cid) {
        /* key material of the cache: LLVM version, pipeline, triple, CPU, features */
        CHECK_CONTAINS(cid, "LLVM 15");
        CHECK_CONTAINS(cid, "default<O3>");
        CHECK_CONTAINS(cid, info->arch);
        CHECK_CONTAINS(cid, "cpu=");
        CHECK_CONTAINS(cid, "features=");
    }
    void *d2 = NULL;
    kf_device_info i2;
    kf_rt_err err = { "" };
    CHECK_STATUS(be->open(1, &d2, &i2, &err), KF_ERR_NO_DEVICE);
    CHECK_CONTAINS(err.msg, "does not exist");
    CHECK(d2 == NULL);
    setenv("KFUSE_THREADS", "0", 1);
    CHECK_STATUS(be->open(0, &d2, &i2, &err), KF_ERR_INVALID_ARG);
    CHECK_CONTAINS(err.msg, "KFUSE_THREADS='0'");
    setenv("KFUSE_THREADS", "3", 1);
    CHECK_STATUS(be->open(0, &d2, &i2, &err), KF_OK);
    CHECK(i2.compute_units == 3);
    unsetenv("KFUSE_THREADS");
    be->close(d2);
}

static void test_compile_errors(void *dev)
{
    kf_rt_err err = { "" };
    void *bin = NULL, *mod = NULL;
    size_t binlen = 0;
    static const char bad[] = "define i64 @k(ptr %args, i64 %b, i64 %e) {\n  ret i64 %undefined_thing\n}\n";
    CHECK_STATUS(be->compile(dev, bad, strlen(bad), &bin, &binlen, &err), KF_ERR_COMPILE);
    CHECK(bin == NULL);
    CHECK_CONTAINS(err.msg, "parse error");
    CHECK_CONTAINS(err.msg, "undefined_thing");
    /* parses, but does not verify */
    static const char unverified[] = "define i64 @k(ptr %args, i64 %b, i64 %e) {\nentry:\n  br label %x\n"
                                     "x:\n  %v = add i64 %w, 1\n  %w = add i64 %v, 1\n  ret i64 %v\n}\n";
    CHECK_STATUS(be->compile(dev, unverified, strlen(unverified), &bin, &binlen, &err), KF_ERR_COMPILE);
    CHECK_CONTAINS(err.msg, "verifier");
    static const char junk[] = "certainly not an object file";
    kf_status s = be->load(dev, junk, sizeof junk, false, &mod, &err);
    CHECK_MSG(s != KF_OK, "junk object loaded");
    CHECK(mod == NULL);
    printf("junk object: %s: %s\n", kf_status_string(s), err.msg);
}

static void test_memory(void *dev)
{
    kf_rt_err err = { "" };
    void *z = NULL, *a = NULL, *b = NULL;
    CHECK_STATUS(be->alloc(dev, 0, &z, &err), KF_OK);
    CHECK(z != NULL && (uintptr_t)z % 256 == 0);
    CHECK_STATUS(be->fill(dev, z, 0, 0, 0, NULL, &err), KF_OK);
    be->free(dev, z);
    enum { N = 256 };
    uint32_t host[N], back[N];
    for (int i = 0; i < N; i++)
        host[i] = (uint32_t)i * 2654435761u;
    CHECK_STATUS(be->alloc(dev, sizeof host, &a, &err), KF_OK);
    CHECK_STATUS(be->alloc(dev, sizeof host, &b, &err), KF_OK);
    CHECK_STATUS(be->copy(dev, KF_COPY_H2D, a, 0, host, 0, sizeof host, NULL, true, &err), KF_OK);
    CHECK_STATUS(be->fill(dev, b, 0, 7, sizeof host, NULL, &err), KF_OK);
    CHECK_STATUS(be->fill(dev, b, 16, 0x3f800000u, 64, NULL, &err), KF_OK);
    CHECK_STATUS(be->copy(dev, KF_COPY_D2H, back, 0, b, 0, sizeof back, NULL, true, &err), KF_OK);
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += back[i] != (i >= 4 && i < 20 ? 0x3f800000u : 7u);
    CHECK_MSG(bad == 0, "%d words wrong after fill", bad);
    CHECK_STATUS(be->fill(dev, b, 0, 1, 6, NULL, &err), KF_ERR_INVALID_ARG);
    CHECK_STATUS(be->copy(dev, KF_COPY_D2D, b, 40, a, 12, 100, NULL, false, &err), KF_OK);
    CHECK_STATUS(be->copy(dev, KF_COPY_D2H, back, 0, b, 0, sizeof back, NULL, true, &err), KF_OK);
    CHECK(memcmp((unsigned char *)back + 40, (unsigned char *)host + 12, 100) == 0);
    CHECK(back[3] == 7 && back[35] == 7 && back[4] == 0x3f800000u);

    /* a large copy runs as work units on the pool */
    size_t big = (size_t)9 << 20;
    unsigned char *h = malloc(big), *r = malloc(big);
    void *d = NULL;
    CHECK(h && r);
    if (h && r && be->alloc(dev, big, &d, &err) == KF_OK) {
        for (size_t i = 0; i < big; i++)
            h[i] = (unsigned char)(i * 131 + 7);
        CHECK_STATUS(be->copy(dev, KF_COPY_H2D, d, 0, h, 0, big, NULL, false, &err), KF_OK);
        CHECK_STATUS(be->copy(dev, KF_COPY_D2H, r, 0, d, 0, big, NULL, true, &err), KF_OK);
        CHECK(memcmp(h, r, big) == 0);
        be->free(dev, d);
    }
    free(h);
    free(r);
    be->free(dev, a);
    be->free(dev, b);
}

static void test_saxpy_streams(void *dev, void *saxpy)
{
    kf_rt_err err = { "" };
    enum { N = 100000, OFF = 37 };
    size_t bytes = (N + OFF) * sizeof(float);
    float *x = malloc(bytes), *y = malloc(bytes), *r = malloc(bytes);
    void *dx = NULL, *dy = NULL, *s1 = NULL, *s2 = NULL;
    CHECK(x && y && r);
    if (!x || !y || !r)
        goto out;
    for (int i = 0; i < N + OFF; i++) {
        x[i] = (float)(i % 17) - 8;
        y[i] = (float)(i % 5);
    }
    CHECK_STATUS(be->alloc(dev, bytes, &dx, &err), KF_OK);
    CHECK_STATUS(be->alloc(dev, bytes, &dy, &err), KF_OK);
    CHECK_STATUS(be->copy(dev, KF_COPY_H2D, dx, 0, x, 0, bytes, NULL, true, &err), KF_OK);
    CHECK_STATUS(be->copy(dev, KF_COPY_H2D, dy, 0, y, 0, bytes, NULL, true, &err), KF_OK);
    CHECK_STATUS(launch_saxpy(dev, saxpy, dx, dy, N, OFF, 1.5f, NULL, &err), KF_OK);
    CHECK_STATUS(be->stream_create(dev, &s1, &err), KF_OK);
    CHECK_STATUS(be->stream_create(dev, &s2, &err), KF_OK);
    CHECK_STATUS(be->stream_sync(dev, NULL, &err), KF_OK);
    int64_t half = N / 2;
    CHECK_STATUS(launch_saxpy(dev, saxpy, dx, dy, half, OFF, -0.75f, s1, &err), KF_OK);
    CHECK_STATUS(launch_saxpy(dev, saxpy, dx, dy, N - half, OFF + half, 3.0f, s2, &err), KF_OK);
    CHECK_STATUS(be->stream_sync(dev, s1, &err), KF_OK);
    CHECK_STATUS(be->stream_sync(dev, s2, &err), KF_OK);
    CHECK_STATUS(be->copy(dev, KF_COPY_D2H, r, 0, dy, 0, bytes, s1, true, &err), KF_OK);
    int bad = 0;
    for (int i = 0; i < N + OFF; i++) {
        float want = y[i];
        if (i >= OFF) {
            want = 1.5f * x[i] + want;
            want = (i < OFF + half ? -0.75f : 3.0f) * x[i] + want;
        }
        bad += r[i] != want;
    }
    CHECK_MSG(bad == 0, "%d elements wrong after launches on three streams", bad);
    CHECK_STATUS(launch_saxpy(dev, saxpy, dx, dy, 0, 0, 1.0f, NULL, &err), KF_OK); /* no units: nothing */
out:
    be->stream_destroy(dev, s1);
    be->stream_destroy(dev, s2);
    be->free(dev, dx);
    be->free(dev, dy);
    free(x);
    free(y);
    free(r);
}

/* Iterations of slow_fill that take at least 'ms' over n elements. */
static int calibrate_slow(void *dev, void *slow, void *buf, int64_t n, double ms)
{
    kf_rt_err err = { "" };
    int iters = 1000;
    for (int k = 0; k < 12; k++) {
        double t0 = now_ms();
        if (launch_slow(dev, slow, buf, n, iters, 0, NULL, &err) != KF_OK || be->stream_sync(dev, NULL, &err) != KF_OK)
            return iters;
        double t = now_ms() - t0;
        if (t >= ms)
            return iters;
        iters = t < ms / 8 ? iters * 8 : (int)(iters * (ms / t) * 1.3);
    }
    return iters;
}

static void test_events(void *dev, void *slow)
{
    kf_rt_err err = { "" };
    enum { N = 4096 };
    void *a = NULL, *b = NULL, *s1 = NULL, *s2 = NULL, *e0 = NULL, *e1 = NULL, *e2 = NULL;
    CHECK_STATUS(be->alloc(dev, N * sizeof(float), &a, &err), KF_OK);
    CHECK_STATUS(be->alloc(dev, 2 * N * sizeof(float), &b, &err), KF_OK);
    CHECK_STATUS(be->stream_create(dev, &s1, &err), KF_OK);
    CHECK_STATUS(be->stream_create(dev, &s2, &err), KF_OK);
    CHECK_STATUS(be->event_create(dev, &e0, &err), KF_OK);
    CHECK_STATUS(be->event_create(dev, &e1, &err), KF_OK);
    CHECK_STATUS(be->event_create(dev, &e2, &err), KF_OK);
    int iters = calibrate_slow(dev, slow, a, N, 100);
    float ms = -1;
    CHECK_STATUS(be->event_elapsed(dev, e0, e1, &ms, &err), KF_ERR_INVALID_ARG);
    CHECK_CONTAINS(err.msg, "never recorded");

    /* e0 .. slow kernel .. e1 on s1: the launch returns at once */
    double t0 = now_ms();
    CHECK_STATUS(be->event_record(dev, e0, s1, &err), KF_OK);
    CHECK_STATUS(be->fill(dev, a, 0, 0, N * sizeof(float), s1, &err), KF_OK);
    CHECK_STATUS(launch_slow(dev, slow, a, N, iters, 7.0f, s1, &err), KF_OK);
    CHECK_STATUS(be->event_record(dev, e1, s1, &err), KF_OK);
    double queued = now_ms() - t0;
    CHECK_STATUS(be->event_elapsed(dev, e0, e1, &ms, &err), KF_ERR_INVALID_ARG);
    CHECK_CONTAINS(err.msg, "not completed");

    /* s2 waits for e1, then copies a into the second half of b */
    CHECK_STATUS(be->fill(dev, b, 0, 0, 2 * N * sizeof(float), NULL, &err), KF_OK);
    CHECK_STATUS(be->stream_sync(dev, NULL, &err), KF_OK);
    CHECK_STATUS(be->stream_wait(dev, s2, e1, &err), KF_OK);
    CHECK_STATUS(be->copy(dev, KF_COPY_D2D, b, N * sizeof(float), a, 0, N * sizeof(float), s2, false, &err), KF_OK);
    float *host = malloc(2 * N * sizeof *host);
    CHECK(host != NULL);
    if (host) {
        CHECK_STATUS(be->copy(dev, KF_COPY_D2H, host, 0, b, 0, 2 * N * sizeof(float), s2, true, &err), KF_OK);
        int bad = 0;
        for (int i = 0; i < 2 * N; i++)
            bad += host[i] != (i < N ? 0.0f : 7.0f);
        CHECK_MSG(bad == 0, "%d elements copied before the wait was over", bad);
        free(host);
    }
    CHECK_STATUS(be->event_sync(dev, e1, &err), KF_OK);
    CHECK_STATUS(be->event_elapsed(dev, e0, e1, &ms, &err), KF_OK);
    printf("events: slow kernel (%d iterations) took %.3f ms; queueing it took %.3f ms\n", iters, ms, queued);
    CHECK(ms > 20.0f && ms < 60000.0f);
    CHECK_MSG(queued < ms / 2, "queueing took %.3f ms of a %.3f ms kernel: not asynchronous", queued, ms);

    /* re-recording replaces the earlier point; back to back is about 0 */
    CHECK_STATUS(be->event_record(dev, e0, s2, &err), KF_OK);
    CHECK_STATUS(be->event_record(dev, e2, s2, &err), KF_OK);
    CHECK_STATUS(be->event_sync(dev, e2, &err), KF_OK);
    CHECK_STATUS(be->event_elapsed(dev, e0, e2, &ms, &err), KF_OK);
    CHECK_MSG(ms >= 0.0f && ms < 50.0f, "back-to-back events %.3f ms apart", ms);
    /* an event destroyed while its stream has yet to reach it */
    CHECK_STATUS(launch_slow(dev, slow, a, 64, iters, 1.0f, s1, &err), KF_OK);
    CHECK_STATUS(be->event_record(dev, e0, s1, &err), KF_OK);
    be->event_destroy(dev, e0);
    CHECK_STATUS(be->stream_sync(dev, s1, &err), KF_OK);
    be->event_destroy(dev, e1);
    be->event_destroy(dev, e2);
    be->stream_destroy(dev, s1);
    be->stream_destroy(dev, s2);
    be->free(dev, a);
    be->free(dev, b);
}

enum { NTHREADS = 8, REPS = 5 };

typedef struct worker {
    void *dev, *fn;
    int id, bad;
    kf_status status;
    char msg[256];
} worker;

static void *worker_main(void *arg)
{
    worker *w = arg;
    kf_rt_err err = { "" };
    int64_t n = 20000 + 1000 * w->id;
    size_t bytes = (size_t)n * sizeof(float);
    float *x = malloc(bytes), *y = malloc(bytes), *r = malloc(bytes);
    void *dx = NULL, *dy = NULL, *s = NULL;
    float a = (float)(w->id + 1);
    kf_status st = x && y && r ? KF_OK : KF_ERR_NO_MEMORY;
    if (st == KF_OK) {
        for (int64_t i = 0; i < n; i++) {
            x[i] = (float)(i % 100);
            y[i] = (float)w->id;
        }
        st = be->stream_create(w->dev, &s, &err);
    }
    if (st == KF_OK)
        st = be->alloc(w->dev, bytes, &dx, &err);
    if (st == KF_OK)
        st = be->alloc(w->dev, bytes, &dy, &err);
    if (st == KF_OK)
        st = be->copy(w->dev, KF_COPY_H2D, dx, 0, x, 0, bytes, s, false, &err);
    if (st == KF_OK)
        st = be->copy(w->dev, KF_COPY_H2D, dy, 0, y, 0, bytes, s, false, &err);
    for (int k = 0; k < REPS && st == KF_OK; k++)
        st = launch_saxpy(w->dev, w->fn, dx, dy, n, 0, a, s, &err);
    if (st == KF_OK)
        st = be->copy(w->dev, KF_COPY_D2H, r, 0, dy, 0, bytes, s, true, &err);
    if (st == KF_OK)
        for (int64_t i = 0; i < n; i++)
            w->bad += r[i] != (float)w->id + REPS * a * (float)(i % 100);
    w->status = st;
    snprintf(w->msg, sizeof w->msg, "%.200s", err.msg);
    be->free(w->dev, dx);
    be->free(w->dev, dy);
    be->stream_destroy(w->dev, s);
    free(x);
    free(y);
    free(r);
    return NULL;
}

static void test_threads(void *dev, void *saxpy)
{
    pthread_t tid[NTHREADS];
    worker w[NTHREADS];
    for (int i = 0; i < NTHREADS; i++) {
        w[i] = (worker){ dev, saxpy, i, 0, KF_OK, "" };
        CHECK(pthread_create(&tid[i], NULL, worker_main, &w[i]) == 0);
    }
    for (int i = 0; i < NTHREADS; i++) {
        pthread_join(tid[i], NULL);
        CHECK_MSG(w[i].status == KF_OK, "thread %d: %s: %s", i, kf_status_string(w[i].status), w[i].msg);
        CHECK_MSG(w[i].bad == 0, "thread %d: %d elements wrong", i, w[i].bad);
    }
}

static void test_vtable(void)
{
    be = kf_rt_cpu_backend();
    CHECK(be != NULL && be->kind == KF_BACKEND_CPU && strcmp(be->name, "cpu") == 0);
    CHECK(be->count() == 1);
    kf_rt_err err = { "" };
    kf_device_info info;
    void *dev = NULL;
    setenv("KFUSE_THREADS", "4", 1);
    CHECK_STATUS(be->open(0, &dev, &info, &err), KF_OK);
    unsetenv("KFUSE_THREADS");
    if (!dev) {
        fprintf(stderr, "open: %s\n", err.msg);
        return;
    }
    test_info(dev, &info);
    void *bin = NULL, *mod = NULL, *saxpy = NULL, *slow = NULL, *again = NULL, *none = NULL;
    size_t binlen = 0;
    double tc = now_ms();
    CHECK_STATUS(be->compile(dev, kernel_ir, strlen(kernel_ir), &bin, &binlen, &err), KF_OK);
    printf("compile: %zu-byte object in %.1f ms\n", binlen, now_ms() - tc);
    CHECK(bin && binlen > 4 && memcmp(bin, "\177ELF", 4) == 0);
    tc = now_ms();
    CHECK_STATUS(be->load(dev, bin, binlen, false, &mod, &err), KF_OK);
    CHECK_STATUS(be->function(dev, mod, "saxpy", &saxpy, &err), KF_OK);
    CHECK_STATUS(be->function(dev, mod, "slow_fill", &slow, &err), KF_OK);
    printf("load and link: %.1f ms\n", now_ms() - tc);
    CHECK_STATUS(be->function(dev, mod, "saxpy", &again, &err), KF_OK);
    CHECK(again == saxpy);
    CHECK_STATUS(be->function(dev, mod, "no_such_kernel", &none, &err), KF_ERR_NAME);
    CHECK(none == NULL);
    CHECK_CONTAINS(err.msg, "'no_such_kernel'");
    if (saxpy && slow) {
        test_compile_errors(dev);
        test_memory(dev);
        test_saxpy_streams(dev, saxpy);
        test_events(dev, slow);
        test_threads(dev, saxpy);
    }
    /* the same object in a second module: equal names never clash */
    void *mod2 = NULL, *saxpy2 = NULL;
    CHECK_STATUS(be->load(dev, bin, binlen, false, &mod2, &err), KF_OK);
    CHECK_STATUS(be->function(dev, mod2, "saxpy", &saxpy2, &err), KF_OK);
    CHECK(saxpy2 != NULL && saxpy2 != saxpy);
    be->unload(dev, mod2);
    free(bin);
    be->unload(dev, mod);
    be->close(dev);
}

/* -- Through the public API -------------------------------------------------------- */

static kf_context *cpu_context(int threads)
{
    char n[16], why[512];
    snprintf(n, sizeof n, "%d", threads);
    setenv("KFUSE_THREADS", n, 1);
    kf_context_options o = { .backend = KF_BACKEND_CPU, .device = 0 };
    kf_context *ctx = NULL;
    kf_status s = kf_context_create(&o, &ctx, why, sizeof why);
    unsetenv("KFUSE_THREADS");
    CHECK_MSG(s == KF_OK, "cpu context: %s", why);
    return ctx;
}

/* Run a one-input one-output program on host data; returns the output
 * (malloc'd) and the sync status. */
static void *run1(kf_context *ctx, kf_program *p, kf_dtype t, const void *x, int rank, const int64_t *shape,
                  size_t outbytes, kf_status *sync)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= shape[i];
    kf_buffer *b = NULL;
    void *out = malloc(outbytes + 1);
    if (kf_buffer_alloc(ctx, (size_t)n * kf_dtype_size(t) + 1, &b) != KF_OK || !out) {
        free(out);
        return NULL;
    }
    kf_upload(b, 0, x, (size_t)n * kf_dtype_size(t), NULL);
    kf_view in = kf_view_dense(b, 0, t, rank, shape), o;
    memset(&o, 0, sizeof o);
    kf_status s = kf_run(p, NULL, &in, 1, NULL, 0, &o, 1);
    CHECK_MSG(s == KF_OK, "kf_run: %s", kf_context_error(ctx));
    *sync = kf_stream_sync(ctx, NULL);
    if (s == KF_OK) {
        CHECK(kf_buffer_size(o.buf) == outbytes);
        kf_download(out, o.buf, 0, outbytes, NULL);
        kf_buffer_free(o.buf);
    }
    kf_buffer_free(b);
    return out;
}

static kf_program *compile_text(kf_context *ctx, const char *text)
{
    kf_module *m = NULL;
    kf_program *p = NULL;
    kf_status s = kf_module_parse(text, strlen(text), "test_cpu", NULL, &m);
    CHECK_MSG(s == KF_OK, "parse: %s", m ? kf_module_error(m) : "oom");
    if (s == KF_OK) {
        s = kf_compile(ctx, kf_module_graph(m, 0), &p);
        CHECK_MSG(s == KF_OK, "compile: %s", kf_context_error(ctx));
    }
    kf_module_free(m);
    return p;
}

/* The f32 sum of x, one of M outputs of L elements, in the GPU order. */
static float gpu_order_sum_f32(const float *x, int64_t L, int64_t M)
{
    double *d = malloc((size_t)(L ? L : 1) * sizeof *d);
    for (int64_t i = 0; d && i < L; i++)
        d[i] = x[i];
    float s = d ? (float)gpu_order_sum(d, L, M, true) : NAN;
    free(d);
    return s;
}

/* Reductions: the same bits on 1, 2 and 7 threads, equal to the GPU order. */
static void test_determinism(void)
{
    kf_context *ctx = cpu_context(7);
    if (!ctx)
        return;
    kf_cpu_tune(ctx->dev, 0, 1);
    kf_program *p = compile_text(ctx, "kfuse 1\ngraph s(x: f32[n]) -> (t, m, a) {\n  t = sum x\n  m = mean x\n"
                                      "  a = argmax x\n}\n");
    kf_program *rows = compile_text(ctx, "kfuse 1\ngraph r(x: f32[m, k]) -> (t) {\n  t = sum x, axes=[1]\n}\n");
    kf_program *cols = compile_text(ctx, "kfuse 1\ngraph c(x: f32[m, k]) -> (t) {\n  t = sum x, axes=[0]\n}\n");
    /* (1 << 23) + 1: 2049 tiles, 1025 chunks of 2 tiles */
    static const int64_t lens[] = { 1, 63, 65, 4095, 4097, 1 << 20, (1 << 21) + 13, (1 << 23) + 1 };
    float *x = malloc(((size_t)(1 << 23) + 1) * sizeof *x);
    uint64_t h = 88172645463325252ull;
    for (int64_t i = 0; x && i < (1 << 23) + 1; i++) {
        h ^= h << 13, h ^= h >> 7, h ^= h << 17;
        x[i] = (float)((double)(h >> 11) / 9007199254740992.0 * 2 - 1) * (float)(1 + i % 1000);
    }
    for (size_t c = 0; p && rows && x && c < sizeof lens / sizeof lens[0]; c++) {
        int64_t L = lens[c];
        unsigned char first[24];
        for (int th = 7; th >= 1; th = th == 7 ? 2 : th - 1) {
            kf_cpu_tune(ctx->dev, th, 0);
            kf_view v[3];
            memset(v, 0, sizeof v);
            kf_buffer *b;
            kf_buffer_alloc(ctx, (size_t)L * 4, &b);
            kf_upload(b, 0, x, (size_t)L * 4, NULL);
            kf_view in = kf_view_dense(b, 0, KF_F32, 1, &L);
            CHECK_STATUS(kf_run(p, NULL, &in, 1, NULL, 0, v, 3), KF_OK);
            unsigned char got[24] = { 0 };
            for (int j = 0; j < 3; j++)
                kf_download(got + 8 * j, v[j].buf, 0, j == 2 ? 8 : 4, NULL);
            float sum;
            memcpy(&sum, got, 4);
            if (th == 7) {
                memcpy(first, got, sizeof got);
                float want = gpu_order_sum_f32(x, L, 1);
                CHECK_MSG(memcmp(&sum, &want, 4) == 0, "sum of %lld: %a, the GPU order gives %a", (long long)L, sum,
                          want);
            } else {
                CHECK_MSG(memcmp(first, got, sizeof got) == 0, "sum/mean/argmax of %lld differ on %d threads",
                          (long long)L, th);
            }
            for (int j = 0; j < 3; j++)
                kf_buffer_free(v[j].buf);
            kf_buffer_free(b);
        }
    }
    /* per-row sums: every row in the GPU order, on any thread count (tile
     * with two tiles and comb; for 4100 rows of 40 tile too, where a GPU
     * runs warp) */
    static const int64_t rshapes[][2] = { { 37, 5000 }, { 4100, 40 } };
    for (size_t c = 0; rows && x && c < sizeof rshapes / sizeof rshapes[0]; c++) {
        int64_t mm = rshapes[c][0], kk = rshapes[c][1];
        for (int th = 7; th >= 1; th = th == 7 ? 2 : th - 1) {
            kf_cpu_tune(ctx->dev, th, 0);
            kf_status sync;
            float *t = run1(ctx, rows, KF_F32, x, 2, rshapes[c], (size_t)mm * 4, &sync);
            int bad = 0;
            for (int64_t r = 0; t && r < mm; r++) {
                float want = gpu_order_sum_f32(x + r * kk, kk, mm);
                bad += memcmp(&t[r], &want, 4) != 0;
            }
            CHECK_MSG(t && bad == 0, "%d row sums of [%lld,%lld] differ from the GPU order on %d threads", bad,
                      (long long)mm, (long long)kk, th);
            free(t);
        }
    }
    /* column sums: output blocks folded side by side (tile with two tiles
     * and comb; seq), each column still in the GPU order */
    static const int64_t cshapes[][2] = { { 5000, 37 }, { 50, 300 }, { 9000, 5 } };
    float *col = malloc(9000 * sizeof *col);
    for (size_t c = 0; cols && x && col && c < sizeof cshapes / sizeof cshapes[0]; c++) {
        int64_t mm = cshapes[c][0], kk = cshapes[c][1];
        for (int th = 7; th >= 1; th = th == 7 ? 2 : th - 1) {
            kf_cpu_tune(ctx->dev, th, 0);
            kf_status sync;
            float *t = run1(ctx, cols, KF_F32, x, 2, cshapes[c], (size_t)kk * 4, &sync);
            int bad = 0;
            for (int64_t j = 0; t && j < kk; j++) {
                for (int64_t i = 0; i < mm; i++)
                    col[i] = x[i * kk + j];
                float want = gpu_order_sum_f32(col, mm, kk);
                bad += memcmp(&t[j], &want, 4) != 0;
            }
            CHECK_MSG(t && bad == 0, "%d of %lld column sums of [%lld,%lld] differ from the GPU order on %d threads",
                      bad, (long long)kk, (long long)mm, (long long)kk, th);
            free(t);
        }
    }
    free(col);
    free(x);
    kf_program_free(p);
    kf_program_free(rows);
    kf_program_free(cols);
    kf_context_destroy(ctx);
}

/* Integer division and modulo by 0 and MIN / -1: defined values, no trap;
 * shifts past the width give 0. */
static void test_int_edges(void)
{
    kf_context *ctx = cpu_context(2);
    if (!ctx)
        return;
    kf_program *p = compile_text(ctx, "kfuse 1\n"
                                      "graph d(a: i32[n], b: i32[n], c: i8[n], e: i8[n], u: u64[n], w: u64[n]) "
                                      "-> (q, r, q8, r8, qu, ru, sl, sr, su) {\n"
                                      "  q = div a, b\n  r = mod a, b\n  q8 = div c, e\n  r8 = mod c, e\n"
                                      "  qu = div u, w\n  ru = mod u, w\n  sl = shl a, b\n  sr = shr a, b\n"
                                      "  su = shr u, w\n}\n");
    enum { N = 12 };
    int32_t a[N] = { INT32_MIN, INT32_MIN, 7, -7, 7, -7, 5, INT32_MAX, -1, 0, 1 << 30, -8 };
    int32_t b[N] = { -1, 0, 0, 2, -2, -1, 31, 32, 33, -1, 1, 1 };
    int8_t c[N] = { -128, -128, 5, -5, 100, -100, 0, 1, -1, 127, -128, 3 };
    int8_t e[N] = { -1, 0, 0, 3, -3, 7, 0, 0, -1, -1, 2, 0 };
    uint64_t u[N] = { UINT64_MAX, 5, 0, 1, 1ull << 63, 9, 10, 11, 12, 13, 14, 15 };
    uint64_t w[N] = { 0, 0, 0, 64, 63, 65, 2, 3, UINT64_MAX, 1, 0, 70 };
    kf_host_array hin[6] = {
        { a, KF_I32, 1, { N } }, { b, KF_I32, 1, { N } }, { c, KF_I8, 1, { N } },
        { e, KF_I8, 1, { N } },  { u, KF_U64, 1, { N } }, { w, KF_U64, 1, { N } },
    };
    kf_host_array ref[9];
    char errbuf[256];
    kf_module *m = NULL;
    kf_view in[6], out[9];
    memset(out, 0, sizeof out);
    kf_buffer *bufs[6] = { NULL };
    for (int i = 0; i < 6 && p; i++) {
        size_t bytes = N * kf_dtype_size(hin[i].dtype);
        kf_buffer_alloc(ctx, bytes, &bufs[i]);
        kf_upload(bufs[i], 0, hin[i].data, bytes, NULL);
        in[i] = kf_view_dense(bufs[i], 0, hin[i].dtype, 1, hin[i].shape);
    }
    if (p) {
        CHECK_STATUS(kf_run(p, NULL, in, 6, NULL, 0, out, 9), KF_OK);
        CHECK_STATUS(kf_stream_sync(ctx, NULL), KF_OK);
        /* the interpreter on the same graph */
        const char *src = "kfuse 1\ngraph d(a: i32[n], b: i32[n], c: i8[n], e: i8[n], u: u64[n], w: u64[n]) "
                          "-> (q, r, q8, r8, qu, ru, sl, sr, su) {\n"
                          "  q = div a, b\n  r = mod a, b\n  q8 = div c, e\n  r8 = mod c, e\n"
                          "  qu = div u, w\n  ru = mod u, w\n  sl = shl a, b\n  sr = shr a, b\n"
                          "  su = shr u, w\n}\n";
        kf_module_parse(src, strlen(src), "ref", NULL, &m);
        CHECK_STATUS(kf_interpret(kf_module_graph(m, 0), hin, 6, ref, 9, errbuf, sizeof errbuf), KF_OK);
        for (int j = 0; j < 9; j++) {
            size_t bytes = N * kf_dtype_size(ref[j].dtype);
            unsigned char got[N * 8];
            kf_download(got, out[j].buf, 0, bytes, NULL);
            CHECK_MSG(memcmp(got, ref[j].data, bytes) == 0, "integer edge output %d differs from the interpreter", j);
            kf_free(ref[j].data);
            kf_buffer_free(out[j].buf);
        }
    }
    kf_module_free(m);
    for (int i = 0; i < 6; i++)
        kf_buffer_free(bufs[i]);
    kf_program_free(p);
    kf_context_destroy(ctx);
}

/* take out of range: 0 and KF_ERR_INDEX at sync, on any thread. */
static void test_take(void)
{
    kf_context *ctx = cpu_context(3);
    if (!ctx)
        return;
    kf_cpu_tune(ctx->dev, 0, 1);
    kf_program *p = compile_text(ctx, "kfuse 1\ngraph t(v: f64[k], i: i32[n]) -> (y) {\n  y = take v, i\n}\n");
    enum { K = 10, N = 100000 };
    double v[K];
    int32_t *idx = malloc(N * sizeof *idx);
    for (int i = 0; i < K; i++)
        v[i] = 1.5 * i + 1;
    for (int bad = 0; p && idx && bad < 2; bad++) {
        for (int i = 0; i < N; i++)
            idx[i] = i % K;
        if (bad)
            idx[N - 3] = -1, idx[77] = K;
        kf_buffer *bv, *bi;
        kf_buffer_alloc(ctx, sizeof v, &bv);
        kf_buffer_alloc(ctx, N * sizeof *idx, &bi);
        kf_upload(bv, 0, v, sizeof v, NULL);
        kf_upload(bi, 0, idx, N * sizeof *idx, NULL);
        int64_t k = K, n = N;
        kf_view in[2] = { kf_view_dense(bv, 0, KF_F64, 1, &k), kf_view_dense(bi, 0, KF_I32, 1, &n) }, o;
        memset(&o, 0, sizeof o);
        CHECK_STATUS(kf_run(p, NULL, in, 2, NULL, 0, &o, 1), KF_OK);
        CHECK_STATUS(kf_stream_sync(ctx, NULL), bad ? KF_ERR_INDEX : KF_OK);
        CHECK_STATUS(kf_stream_sync(ctx, NULL), KF_OK); /* reported once */
        double *y = malloc(N * sizeof *y);
        kf_download(y, o.buf, 0, N * sizeof *y, NULL);
        int wrong = 0;
        for (int i = 0; i < N; i++)
            wrong += y[i] != (idx[i] >= 0 && idx[i] < K ? v[idx[i]] : 0.0);
        CHECK_MSG(wrong == 0, "take: %d elements wrong", wrong);
        free(y);
        kf_buffer_free(o.buf);
        kf_buffer_free(bv);
        kf_buffer_free(bi);
    }
    free(idx);
    kf_program_free(p);
    kf_context_destroy(ctx);
}

/* libm functions run through libmvec's vector variants: an element's bits
 * depend on its value alone, not on the layout (contiguous or strided
 * variant), the loop remainder or the thread count; and stay within a few
 * ulp of the C library. */
static void test_vecmath(void)
{
    kf_context *ctx = cpu_context(7);
    if (!ctx)
        return;
    kf_cpu_tune(ctx->dev, 0, 1);
    static const char src[] = "kfuse 1\ngraph vm(x: f32[n], d: f64[n]) -> (t, e, l, p) {\n"
                              "  t = tanh x\n  e = exp x\n  l = log1p d\n  p = pow x, x\n}\n";
    kf_program *p = compile_text(ctx, src);
    enum { N = 100003, STRIDE = 3 };
    float *x = malloc((size_t)N * STRIDE * sizeof *x);
    double *d = malloc((size_t)N * STRIDE * sizeof *d);
    float *first[4] = { NULL };
    int64_t n = N;
    for (int i = 0; x && d && i < N * STRIDE; i++) {
        x[i] = (float)(i % 2 ? -1 : 1) * (float)(i % 9973) / 997.0f;
        d[i] = (double)(i % 7919) / 61.0 - 1.0;
    }
    for (int layout = 0; p && x && d && layout < 2; layout++)
        for (int th = 7; th >= 1; th = th == 7 ? 2 : th - 1) {
            kf_cpu_tune(ctx->dev, th, 0);
            kf_buffer *bx, *bd;
            kf_buffer_alloc(ctx, (size_t)N * STRIDE * 4, &bx);
            kf_buffer_alloc(ctx, (size_t)N * STRIDE * 8, &bd);
            kf_view in[2];
            if (layout == 0) { /* dense */
                kf_upload(bx, 0, x, (size_t)N * 4, NULL);
                kf_upload(bd, 0, d, (size_t)N * 8, NULL);
                in[0] = kf_view_dense(bx, 0, KF_F32, 1, &n);
                in[1] = kf_view_dense(bd, 0, KF_F64, 1, &n);
            } else { /* every third element from element 1: the strided variant */
                float *xs = calloc((size_t)N * STRIDE, sizeof *xs);
                double *ds = calloc((size_t)N * STRIDE, sizeof *ds);
                for (int i = 0; xs && ds && i < N; i++) {
                    xs[1 + STRIDE * i] = x[i];
                    ds[1 + STRIDE * i] = d[i];
                }
                if (xs && ds) {
                    kf_upload(bx, 0, xs, (size_t)N * STRIDE * 4, NULL);
                    kf_upload(bd, 0, ds, (size_t)N * STRIDE * 8, NULL);
                }
                free(xs);
                free(ds);
                in[0] = kf_view_dense(bx, 4, KF_F32, 1, &n);
                in[1] = kf_view_dense(bd, 8, KF_F64, 1, &n);
                in[0].strides[0] = in[1].strides[0] = STRIDE;
            }
            kf_view out[4];
            memset(out, 0, sizeof out);
            CHECK_STATUS(kf_run(p, NULL, in, 2, NULL, 0, out, 4), KF_OK);
            CHECK_STATUS(kf_stream_sync(ctx, NULL), KF_OK);
            for (int j = 0; j < 4 && out[j].buf; j++) {
                size_t bytes = kf_buffer_size(out[j].buf);
                void *got = malloc(bytes);
                kf_download(got, out[j].buf, 0, bytes, NULL);
                if (!first[j]) {
                    first[j] = got;
                    /* within 4 ulp of libm */
                    int far = 0;
                    for (int i = 0; i < N; i++) {
                        double want = j == 0 ? tanhf(x[i]) : j == 1 ? expf(x[i]) : j == 2 ? log1p(d[i]) : powf(x[i], x[i]);
                        double g = j == 2 ? ((double *)got)[i] : ((float *)got)[i];
                        double ulp = j == 2 ? nextafter(fabs(want), INFINITY) - fabs(want)
                                            : nextafterf((float)fabs(want), INFINITY) - fabsf((float)want);
                        far += !(g == want || (isnan(want) && isnan(g)) || fabs(g - want) <= 4 * ulp);
                    }
                    CHECK_MSG(far == 0, "vector math output %d: %d elements more than 4 ulp from libm", j, far);
                } else {
                    CHECK_MSG(memcmp(first[j], got, bytes) == 0,
                              "vector math output %d: %s on %d threads differs from dense on 7", j,
                              layout ? "strided" : "dense", th);
                    free(got);
                }
                kf_buffer_free(out[j].buf);
            }
            kf_buffer_free(bx);
            kf_buffer_free(bd);
        }
    for (int j = 0; j < 4; j++)
        free(first[j]);
    free(x);
    free(d);
    kf_program_free(p);
    kf_context_destroy(ctx);
}

/* The LLVM text is the cache's source: the same plan gives the same bytes
 * (twice in one process here; fusec_cli and the cache tests across
 * processes), and every kernel name of the ABI is in it. */
static void test_emit(void)
{
    for (int gi = 0; gi < 12; gi++) {
        kf_graph *g = kf_rg_graph("emit", 777 + (uint64_t)gi, NULL);
        kf_pipeline p;
        if (!g || kf_fuse(g, NULL, NULL, &p) != KF_OK) {
            kf_graph_free(g);
            continue;
        }
        kf_strbuf a = KF_STRBUF_INIT, b = KF_STRBUF_INIT;
        char err[256];
        CHECK_STATUS(kf_cg_emit(p.plan, KF_TARGET_LLVM, NULL, &a, err, sizeof err), KF_OK);
        CHECK_STATUS(kf_cg_emit_llvm(p.plan, NULL, &b, err, sizeof err), KF_OK);
        CHECK(a.len > 0 && a.len == b.len && memcmp(kf_sb_str(&a), kf_sb_str(&b), a.len) == 0);
        for (int k = 0; k < p.plan->nkernels; k++) {
            kf_cg_kabi abi;
            CHECK_STATUS(kf_cg_kernel_abi(p.plan, k, false, &abi, err, sizeof err), KF_OK);
            for (int v = 0; v < KF_CG_VARIANT_COUNT; v++) {
                char name[KF_CG_NAME_MAX], def[KF_CG_NAME_MAX + 32], alias[KF_CG_NAME_MAX + 32];
                kf_cg_entry_name(&abi, (kf_cg_variant)v, name, sizeof name);
                snprintf(def, sizeof def, "@%s(", name);          /* a function */
                snprintf(alias, sizeof alias, "@%s = alias", name); /* c32, s32 */
                bool there = strstr(kf_sb_str(&a), def) || strstr(kf_sb_str(&a), alias);
                if (v == KF_CG_WARP || v == KF_CG_WARPV || v == KF_CG_G64 || v == KF_CG_H64)   /* GPU variants, never picked off a GPU */
                    CHECK_MSG(!there, "entry point %s on the CPU", name);
                else if (name[0])
                    CHECK_MSG(there, "no entry point %s", name);
            }
        }
        kf_sb_free(&a);
        kf_sb_free(&b);
        kf_pipeline_clear(&p);
        kf_graph_free(g);
    }
    /* a device without f64 (test hook of the runtime) fails clearly */
    kf_module *m = NULL;
    static const char src[] = "kfuse 1\ngraph d(x: f64[n]) -> (y) {\n  y = add x, x\n}\n";
    kf_module_parse(src, strlen(src), "emit", NULL, &m);
    kf_pipeline p;
    if (m && kf_fuse(kf_module_graph(m, 0), NULL, NULL, &p) == KF_OK) {
        kf_strbuf a = KF_STRBUF_INIT;
        char err[256];
        kf_cg_caps caps = { .fp16 = true };
        CHECK_STATUS(kf_cg_emit(p.plan, KF_TARGET_LLVM, &caps, &a, err, sizeof err), KF_ERR_UNSUPPORTED);
        CHECK_CONTAINS(err, "f64");
        kf_sb_free(&a);
        kf_pipeline_clear(&p);
    }
    kf_module_free(m);
}

/* Random graphs (tests/randgraph.c) with special values, several sizes,
 * against the interpreter, and bit for bit across 1, 2 and 7 threads. */
static void test_random(int count)
{
    kf_context *ctx = cpu_context(7);
    if (!ctx)
        return;
    kf_cpu_tune(ctx->dev, 0, 1);
    static const kf_rg_sizes sizes[] = { { 1, 1, 1 }, { 7, 3, 5 }, { 300, 2, 9 }, { 5000, 3, 70 } };
    int graphs = 0, skipped = 0;
    double tcompile = 0;
    const char *from = getenv("KFUSE_TEST_SEED");
    int g0 = from ? atoi(from) : 0;
    for (int gi = g0; gi < g0 + count; gi++) {
        uint64_t seed = 5000 + (uint64_t)gi;
        kf_graph *g = kf_rg_graph("rand", seed, NULL);
        if (!g)
            continue;
        kf_program *p = NULL;
        double t0 = now_ms();
        kf_status s = kf_compile(ctx, g, &p);
        tcompile += now_ms() - t0;
        CHECK_MSG(s == KF_OK, "random seed %llu: compile: %s", (unsigned long long)seed, kf_context_error(ctx));
        int ni = kf_graph_num_inputs(g), no = kf_graph_num_outputs(g);
        for (size_t z = 0; p && z < sizeof sizes / sizeof sizes[0]; z++) {
            if (!kf_rg_fits(g, &sizes[z], 1 << 22)) {   /* a [k, n, n] node at the largest size */
                skipped++;
                continue;
            }
            kf_host_array *in = calloc((size_t)ni + 1, sizeof *in), *ref = calloc((size_t)no + 1, sizeof *ref);
            kf_view *views = calloc((size_t)ni + 1, sizeof *views);
            const void **sc = calloc((size_t)ni + 1, sizeof *sc);
            void **first = calloc((size_t)no + 1, sizeof *first);
            char err[512];
            if (kf_rg_inputs(g, seed * 7 + z, &sizes[z], 0.01, true, in) != KF_OK) {
                free(in), free(ref), free(views), free(sc), free(first);
                continue;
            }
            kf_status want = kf_interpret(g, in, ni, ref, no, err, sizeof err);
            double **slack = want == KF_OK || want == KF_ERR_INDEX ? kf_rg_sum_slack(g, in, ni, ref) : NULL;
            int na = 0, ns = 0;
            for (int i = 0; i < ni; i++) {
                if (kf_node_is_scalar(g, kf_graph_input(g, i))) {
                    sc[ns++] = in[i].data;
                    continue;
                }
                int64_t n = 1;
                for (int d = 0; d < in[i].rank; d++)
                    n *= in[i].shape[d];
                kf_buffer *b = NULL;
                size_t bytes = (size_t)n * kf_dtype_size(in[i].dtype);
                kf_buffer_alloc(ctx, bytes, &b);
                kf_upload(b, 0, in[i].data, bytes, NULL);
                views[na++] = kf_view_dense(b, 0, in[i].dtype, in[i].rank, in[i].shape);
            }
            for (int th = 7; (want == KF_OK || want == KF_ERR_INDEX) && th >= 1; th = th == 7 ? 2 : th - 1) {
                kf_cpu_tune(ctx->dev, th, 0);
                kf_view *outs = calloc((size_t)no + 1, sizeof *outs);
                s = kf_run(p, NULL, views, na, sc, ns, outs, no);
                CHECK_MSG(s == KF_OK, "random seed %llu: run: %s", (unsigned long long)seed, kf_context_error(ctx));
                kf_status ss = kf_stream_sync(ctx, NULL);
                CHECK_MSG(ss == want, "random seed %llu size %zu: sync %s, interpreter %s", (unsigned long long)seed, z,
                          kf_status_string(ss), kf_status_string(want));
                for (int j = 0; s == KF_OK && j < no; j++) {
                    int64_t n = 1;
                    for (int d = 0; d < ref[j].rank; d++)
                        n *= ref[j].shape[d];
                    size_t bytes = (size_t)n * kf_dtype_size(ref[j].dtype);
                    void *got = malloc(bytes + 1);
                    kf_download(got, outs[j].buf, 0, bytes, NULL);
                    if (th == 7) {
                        int64_t bad1 = -1, bad = kf_rg_compare(g, j, got, &ref[j], n, false, slack, &bad1);
                        CHECK_MSG(bad == 0, "random seed %llu size %zu output %d (%s): %lld mismatches, first at %lld: "
                                  "got %.9g want %.9g", (unsigned long long)seed, z, j, kf_dtype_name(ref[j].dtype),
                                  (long long)bad, (long long)bad1, bad ? rt_load(got, ref[j].dtype, bad1) : 0.0,
                                  bad ? rt_load(ref[j].data, ref[j].dtype, bad1) : 0.0);
                        first[j] = got;
                    } else {
                        CHECK_MSG(memcmp(first[j], got, bytes) == 0, "random seed %llu size %zu output %d: %d threads "
                                  "differ from 7", (unsigned long long)seed, z, j, th);
                        free(got);
                    }
                    kf_buffer_free(outs[j].buf);
                }
                free(outs);
            }
            kf_cpu_tune(ctx->dev, 7, 0);
            kf_rg_slack_free(slack, no);
            for (int j = 0; j < no; j++) {
                free(first[j]);
                if (want == KF_OK || want == KF_ERR_INDEX)
                    kf_free(ref[j].data);
            }
            for (int i = 0; i < na; i++)
                kf_buffer_free(views[i].buf);
            kf_rg_free_inputs(in, ni);
            free(in), free(ref), free(views), free(sc), free(first);
        }
        graphs += p != NULL;
        kf_program_free(p);
        kf_graph_free(g);
    }
    printf("random: %d graphs, 4 sizes (%d graph sizes skipped: a node over 2^22 elements), 1/2/7 threads; "
           "compiling took %.0f ms (%.1f per graph)\n", graphs, skipped, tcompile, graphs ? tcompile / graphs : 0.0);
    kf_context_destroy(ctx);
}

int main(int argc, char **argv)
{
    double t0 = now_ms();
    const char *env = getenv("KFUSE_TEST_RANDOM");
    int nrandom = argc > 1 ? atoi(argv[1]) : env ? atoi(env) : 60;
    test_vtable();
    test_emit();
    test_determinism();
    test_int_edges();
    test_take();
    test_vecmath();
    test_random(nrandom);
    printf("test_cpu: %.0f ms\n", now_ms() - t0);
    return kf_test_done();
}
