/* The OpenCL backend through its vtable alone: devices, programs and
 * binaries, memory, launches on several streams and threads, events.
 * Without an OpenCL device it prints "SKIP: no OpenCL device" and passes. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "../runtime/backend.h"
#include "check.h"

static const kf_backend_ops *be;

/* y[off+i] = a*x[off+i] + y[off+i] for i < n; slow_fill spins, then writes v. */
static const char kernel_src[] =
    "typedef struct { long n; long off; } span;\n"
    "__kernel void saxpy(__global const float *x, __global float *y, span s, float a)\n"
    "{\n"
    "    long i = get_global_id(0);\n"
    "    if (i < s.n)\n"
    "        y[s.off + i] = a * x[s.off + i] + y[s.off + i];\n"
    "}\n"
    "__kernel void slow_fill(__global float *y, long n, int iters, float v)\n"
    "{\n"
    "    long i = get_global_id(0);\n"
    "    float acc = 1.0f;\n"
    "    for (int k = 0; k < iters; k++)\n"
    "        acc = sqrt(acc + (float)k);\n"
    "    if (i < n)\n"
    "        y[i] = v + 0.0f * acc;\n"
    "}\n"
    "__kernel void divsqrt(__global const float *x, __global const float *y, __global float *q, int n)\n"
    "{\n"
    "    int i = get_global_id(0);\n"
    "    if (i < n) {\n"
    "        q[2 * i] = x[i] / y[i];\n"
    "        q[2 * i + 1] = sqrt(x[i]);\n"
    "    }\n"
    "}\n";

typedef struct span {
    int64_t n, off;
} span;

static kf_rt_arg arg_buf(void *b)
{
    return (kf_rt_arg){ NULL, 0, b, 0 };
}

static kf_rt_arg arg_val(const void *p, size_t size)
{
    return (kf_rt_arg){ p, size, NULL, 0 };
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Uniform in [0, 1]. */
static float frand(void)
{
    return (float)((double)rand() / RAND_MAX);
}

/* a*x+y as the device may compute it: contracted to an fma or not. */
static bool saxpy_ok(float got, float a, float x, float y)
{
    return got == a * x + y || got == fmaf(a, x, y);
}

static kf_status launch_saxpy(void *dev, void *fn, void *x, void *y, int64_t n, int64_t off, float a, void *stream,
                              kf_rt_err *err)
{
    span s = { n, off };
    kf_rt_arg args[4] = { arg_buf(x), arg_buf(y), arg_val(&s, sizeof s), arg_val(&a, sizeof a) };
    return be->launch(dev, fn, (uint64_t)(n + 255) / 256, 256, args, 4, stream, err);
}

static kf_status launch_slow(void *dev, void *fn, void *y, int64_t n, int iters, float v, void *stream, kf_rt_err *err)
{
    kf_rt_arg args[4] = { arg_buf(y), arg_val(&n, sizeof n), arg_val(&iters, sizeof iters), arg_val(&v, sizeof v) };
    return be->launch(dev, fn, (uint64_t)(n + 63) / 64, 64, args, 4, stream, err);
}

/* -- Devices ----------------------------------------------------------------- */

static void test_info(void *dev, const kf_device_info *info, int ndev)
{
    printf("device 0 of %d: '%s', arch '%s', driver '%s', %llu MiB, %d CUs, fp64 %d, fp16 %d, gpu %d\n", ndev,
           info->name, info->arch, info->driver, (unsigned long long)(info->memory_bytes >> 20), info->compute_units,
           info->fp64, info->fp16, info->gpu);
    CHECK(info->backend == KF_BACKEND_OPENCL);
    CHECK(info->name[0] != '\0');
    CHECK(strncmp(info->arch, "OpenCL ", 7) == 0);
    CHECK(info->driver[0] != '\0');
    CHECK(info->memory_bytes > 0);
    CHECK(info->compute_units > 0);
    const char *cid = be->compiler_id ? be->compiler_id(dev) : NULL;
    CHECK(cid != NULL);
    if (cid) {
        printf("compiler id: %s\n", cid);
        CHECK_CONTAINS(cid, info->driver);
        CHECK_CONTAINS(cid, "-cl-std=CL1.2");
    }
    if (strstr(info->arch, "PoCL") && !info->gpu) {
        /* the PoCL CPU device of the test machines */
        CHECK(info->fp64);
        CHECK(!info->fp16);
    }
    void *d2 = NULL;
    kf_device_info i2;
    kf_rt_err err = { "" };
    CHECK_STATUS(be->open(ndev, &d2, &i2, &err), KF_ERR_NO_DEVICE);
    CHECK_CONTAINS(err.msg, "does not exist");
    CHECK_STATUS(be->open(-1, &d2, &i2, &err), KF_ERR_NO_DEVICE);
    CHECK(d2 == NULL);
}

/* -- Programs ---------------------------------------------------------------- */

static void test_compile_errors(void *dev)
{
    kf_rt_err err = { "" };
    void *bin = NULL;
    size_t binlen = 0;
    static const char bad[] = "__kernel void k(__global int *p)\n"
                              "{\n"
                              "    p[0] = undeclared_thing;\n"
                              "}\n";
    CHECK_STATUS(be->compile(dev, bad, strlen(bad), &bin, &binlen, &err), KF_ERR_COMPILE);
    CHECK(bin == NULL);
    CHECK_CONTAINS(err.msg, "clBuildProgram: CL_BUILD_PROGRAM_FAILURE");
    CHECK_CONTAINS(err.msg, "undeclared_thing");
    CHECK_CONTAINS(err.msg, ":3:");

    /* a log far longer than the message: the first errors stay, the rest is cut */
    size_t cap = 64 * 1024, len = 0;
    char *big = malloc(cap);
    CHECK(big != NULL);
    if (!big)
        return;
    len += (size_t)snprintf(big + len, cap - len, "__kernel void k(__global int *p)\n{\n");
    for (int i = 0; i < 300; i++)
        len += (size_t)snprintf(big + len, cap - len, "    p[%d] = missing_%d;\n", i, i);
    len += (size_t)snprintf(big + len, cap - len, "}\n");
    CHECK_STATUS(be->compile(dev, big, len, &bin, &binlen, &err), KF_ERR_COMPILE);
    CHECK(strlen(err.msg) < sizeof err.msg);
    CHECK_CONTAINS(err.msg, "missing_0");
    CHECK_CONTAINS(err.msg, "truncated");
    CHECK(strstr(err.msg, "missing_299") == NULL);
    free(big);

    /* a binary that is no binary */
    void *mod = NULL;
    static const char junk[] = "certainly not a program binary";
    kf_status s = be->load(dev, junk, sizeof junk, false, &mod, &err);
    CHECK_MSG(s != KF_OK, "junk binary loaded");
    CHECK(mod == NULL);
    printf("junk binary: %s: %s\n", kf_status_string(s), err.msg);
}

/* -- Memory ------------------------------------------------------------------ */

static void test_memory(void *dev)
{
    kf_rt_err err = { "" };
    void *z = NULL, *a = NULL, *b = NULL;
    CHECK_STATUS(be->alloc(dev, 0, &z, &err), KF_OK);
    CHECK(z != NULL);
    CHECK_STATUS(be->fill(dev, z, 0, 0, 0, NULL, &err), KF_OK);
    be->free(dev, z);

    enum { N = 256 };
    uint32_t host[N], back[N];
    for (int i = 0; i < N; i++)
        host[i] = (uint32_t)i * 2654435761u;
    CHECK_STATUS(be->alloc(dev, sizeof host, &a, &err), KF_OK);
    CHECK_STATUS(be->alloc(dev, sizeof host, &b, &err), KF_OK);
    CHECK_STATUS(be->copy(dev, KF_COPY_H2D, a, 0, host, 0, sizeof host, NULL, true, &err), KF_OK);
    /* fill: words 4..19 of b become 0x3f800000, the rest 7 */
    CHECK_STATUS(be->fill(dev, b, 0, 7, sizeof host, NULL, &err), KF_OK);
    CHECK_STATUS(be->fill(dev, b, 16, 0x3f800000u, 64, NULL, &err), KF_OK);
    CHECK_STATUS(be->copy(dev, KF_COPY_D2H, back, 0, b, 0, sizeof back, NULL, true, &err), KF_OK);
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += back[i] != (i >= 4 && i < 20 ? 0x3f800000u : 7u);
    CHECK_MSG(bad == 0, "%d words wrong after fill", bad);
    CHECK_STATUS(be->fill(dev, b, 0, 1, 6, NULL, &err), KF_ERR_INVALID_ARG);
    CHECK_STATUS(be->fill(dev, b, 2, 1, 8, NULL, &err), KF_ERR_INVALID_ARG);

    /* D2D with offsets: 100 bytes from a+12 to b+40, on the default stream, async then synced */
    CHECK_STATUS(be->copy(dev, KF_COPY_D2D, b, 40, a, 12, 100, NULL, false, &err), KF_OK);
    CHECK_STATUS(be->copy(dev, KF_COPY_D2H, back, 0, b, 0, sizeof back, NULL, true, &err), KF_OK);
    const unsigned char *hb = (const unsigned char *)host, *bb = (const unsigned char *)back;
    CHECK(memcmp(bb + 40, hb + 12, 100) == 0);
    CHECK(back[3] == 7 && back[35] == 7);
    CHECK(back[4] == 0x3f800000u);

    /* partial host-side reads and writes at device offsets */
    uint32_t four[4] = { 1, 2, 3, 4 }, got[4] = { 0 };
    CHECK_STATUS(be->copy(dev, KF_COPY_H2D, a, 1000, four, 0, sizeof four, NULL, true, &err), KF_OK);
    CHECK_STATUS(be->copy(dev, KF_COPY_D2H, got, 0, a, 1000, sizeof got, NULL, true, &err), KF_OK);
    CHECK(memcmp(four, got, sizeof four) == 0);

    /* out of range: a driver error with its name */
    kf_status s = be->copy(dev, KF_COPY_D2H, back, 0, a, 4096, sizeof back, NULL, true, &err);
    CHECK(s != KF_OK);
    CHECK_CONTAINS(err.msg, "clEnqueueReadBuffer: CL_INVALID_VALUE");
    be->free(dev, a);
    be->free(dev, b);
}

/* -- Launches ----------------------------------------------------------------- */

static void test_saxpy_streams(void *dev, void *saxpy)
{
    kf_rt_err err = { "" };
    enum { N = 100000, OFF = 37 };
    float *x = malloc((N + OFF) * sizeof *x), *y = malloc((N + OFF) * sizeof *y), *r = malloc((N + OFF) * sizeof *r);
    CHECK(x && y && r);
    if (!x || !y || !r)
        return;
    srand(12345);
    for (int i = 0; i < N + OFF; i++) {
        x[i] = frand() * 4 - 2;
        y[i] = frand() * 4 - 2;
    }
    void *dx = NULL, *dy = NULL, *s1 = NULL, *s2 = NULL;
    size_t bytes = (N + OFF) * sizeof(float);
    CHECK_STATUS(be->alloc(dev, bytes, &dx, &err), KF_OK);
    CHECK_STATUS(be->alloc(dev, bytes, &dy, &err), KF_OK);
    CHECK_STATUS(be->copy(dev, KF_COPY_H2D, dx, 0, x, 0, bytes, NULL, true, &err), KF_OK);
    CHECK_STATUS(be->copy(dev, KF_COPY_H2D, dy, 0, y, 0, bytes, NULL, true, &err), KF_OK);

    /* default stream: elements OFF..OFF+N-1 with a = 1.5 */
    float a0 = 1.5f;
    CHECK_STATUS(launch_saxpy(dev, saxpy, dx, dy, N, OFF, a0, NULL, &err), KF_OK);
    CHECK_STATUS(be->copy(dev, KF_COPY_D2H, r, 0, dy, 0, bytes, NULL, true, &err), KF_OK);
    int bad = 0;
    for (int i = 0; i < N + OFF; i++) {
        bool ok = i < OFF ? r[i] == y[i] : saxpy_ok(r[i], a0, x[i], y[i]);
        if (!ok && bad++ < 3)
            fprintf(stderr, "default stream: y[%d] = %g, want %g\n", i, r[i], i < OFF ? y[i] : a0 * x[i] + y[i]);
        if (ok)
            y[i] = r[i];
    }
    CHECK_MSG(bad == 0, "%d elements wrong on the default stream", bad);

    /* two more streams, one half each, different a */
    CHECK_STATUS(be->stream_create(dev, &s1, &err), KF_OK);
    CHECK_STATUS(be->stream_create(dev, &s2, &err), KF_OK);
    float a1 = -0.75f, a2 = 3.0f;
    int64_t half = N / 2;
    CHECK_STATUS(launch_saxpy(dev, saxpy, dx, dy, half, OFF, a1, s1, &err), KF_OK);
    CHECK_STATUS(launch_saxpy(dev, saxpy, dx, dy, N - half, OFF + half, a2, s2, &err), KF_OK);
    CHECK_STATUS(be->stream_sync(dev, s1, &err), KF_OK);
    CHECK_STATUS(be->stream_sync(dev, s2, &err), KF_OK);
    CHECK_STATUS(be->copy(dev, KF_COPY_D2H, r, 0, dy, 0, bytes, s1, true, &err), KF_OK);
    bad = 0;
    for (int i = 0; i < N + OFF; i++) {
        float a = i < OFF + half ? a1 : a2;
        bool ok = i < OFF ? r[i] == y[i] : saxpy_ok(r[i], a, x[i], y[i]);
        bad += !ok;
    }
    CHECK_MSG(bad == 0, "%d elements wrong on two streams", bad);

    /* grid 0 is nothing; block 0 and a wrong argument size are errors */
    CHECK_STATUS(be->launch(dev, saxpy, 0, 256, NULL, 0, NULL, &err), KF_OK);
    CHECK_STATUS(be->launch(dev, saxpy, 1, 0, NULL, 0, NULL, &err), KF_ERR_INVALID_ARG);
    span sp = { 1, 0 };
    double wrong = 1.0;
    kf_rt_arg args[4] = { arg_buf(dx), arg_buf(dy), arg_val(&sp, sizeof sp), arg_val(&wrong, sizeof wrong) };
    kf_status s = be->launch(dev, saxpy, 1, 1, args, 4, NULL, &err);
    CHECK(s != KF_OK);
    CHECK_CONTAINS(err.msg, "'saxpy'");
    CHECK_CONTAINS(err.msg, "clSetKernelArg(arg 3): CL_INVALID_ARG_SIZE");

    be->stream_destroy(dev, s1);
    be->stream_destroy(dev, s2);
    be->free(dev, dx);
    be->free(dev, dy);
    free(x);
    free(y);
    free(r);
}

/* f32 division and sqrt are correctly rounded (the build asks for it). */
static void test_divsqrt(void *dev, void *fn)
{
    kf_rt_err err = { "" };
    enum { N = 1 << 16 };
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y), *q = malloc(2 * N * sizeof *q);
    void *dx = NULL, *dy = NULL, *dq = NULL;
    CHECK(x && y && q);
    if (!x || !y || !q)
        goto out;
    srand(777);
    for (int i = 0; i < N; i++) {
        x[i] = ldexpf(frand() + 0.5f, rand() % 40 - 20);
        y[i] = ldexpf(frand() - 0.5f, rand() % 40 - 20);
    }
    CHECK_STATUS(be->alloc(dev, N * sizeof *x, &dx, &err), KF_OK);
    CHECK_STATUS(be->alloc(dev, N * sizeof *y, &dy, &err), KF_OK);
    CHECK_STATUS(be->alloc(dev, 2 * N * sizeof *q, &dq, &err), KF_OK);
    CHECK_STATUS(be->copy(dev, KF_COPY_H2D, dx, 0, x, 0, N * sizeof *x, NULL, true, &err), KF_OK);
    CHECK_STATUS(be->copy(dev, KF_COPY_H2D, dy, 0, y, 0, N * sizeof *y, NULL, true, &err), KF_OK);
    int n = N;
    kf_rt_arg args[4] = { arg_buf(dx), arg_buf(dy), arg_buf(dq), arg_val(&n, sizeof n) };
    CHECK_STATUS(be->launch(dev, fn, N / 128, 128, args, 4, NULL, &err), KF_OK);
    CHECK_STATUS(be->copy(dev, KF_COPY_D2H, q, 0, dq, 0, 2 * N * sizeof *q, NULL, true, &err), KF_OK);
    int bad = 0;
    for (int i = 0; i < N; i++) {
        float wq = x[i] / y[i], ws = sqrtf(x[i]);
        bool ok = (q[2 * i] == wq || (isnan(wq) && isnan(q[2 * i]))) && q[2 * i + 1] == ws;
        if (!ok && bad++ < 3)
            fprintf(stderr, "divsqrt %d: %a / %a = %a (want %a), sqrt = %a (want %a)\n", i, x[i], y[i], q[2 * i], wq,
                    q[2 * i + 1], ws);
    }
    CHECK_MSG(bad == 0, "%d of %d divisions or square roots not correctly rounded", bad, N);
out:
    be->free(dev, dx);
    be->free(dev, dy);
    be->free(dev, dq);
    free(x);
    free(y);
    free(q);
}

/* -- Events and ordering ------------------------------------------------------- */

/* Iterations of slow_fill that take at least 'ms' over n items (calibrated). */
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

static void test_events(void *dev, void *slow, const char *mode)
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
    int iters = calibrate_slow(dev, slow, a, N, 150);

    /* never recorded: elapsed is an error; sync and wait are no-ops */
    float ms = -1;
    CHECK_STATUS(be->event_elapsed(dev, e0, e1, &ms, &err), KF_ERR_INVALID_ARG);
    CHECK_CONTAINS(err.msg, "never recorded");
    CHECK_STATUS(be->event_sync(dev, e0, &err), KF_OK);
    CHECK_STATUS(be->stream_wait(dev, s2, e0, &err), KF_OK);

    /* e0 .. slow kernel .. e1 on s1; e1 is not complete right after */
    CHECK_STATUS(be->event_record(dev, e0, s1, &err), KF_OK);
    CHECK_STATUS(be->fill(dev, a, 0, 0, N * sizeof(float), s1, &err), KF_OK);
    CHECK_STATUS(launch_slow(dev, slow, a, N, iters, 7.0f, s1, &err), KF_OK);
    CHECK_STATUS(be->event_record(dev, e1, s1, &err), KF_OK);
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
        CHECK_MSG(bad == 0, "%s events: %d elements copied before the wait was over", mode, bad);
        free(host);
    }
    CHECK_STATUS(be->event_sync(dev, e1, &err), KF_OK);
    ms = -1;
    CHECK_STATUS(be->event_elapsed(dev, e0, e1, &ms, &err), KF_OK);
    printf("%s events: slow kernel (%d iterations) took %.3f ms\n", mode, iters, ms);
    CHECK(ms > 10.0f && ms < 60000.0f);

    /* re-recording replaces the earlier point; back to back is about 0 */
    CHECK_STATUS(be->event_record(dev, e0, s2, &err), KF_OK);
    CHECK_STATUS(be->event_record(dev, e2, s2, &err), KF_OK);
    CHECK_STATUS(be->event_sync(dev, e2, &err), KF_OK);
    CHECK_STATUS(be->event_elapsed(dev, e0, e2, &ms, &err), KF_OK);
    CHECK_MSG(ms >= 0.0f && ms < 50.0f, "back-to-back events %.3f ms apart", ms);
    CHECK_STATUS(be->stream_sync(dev, s1, &err), KF_OK);

    be->event_destroy(dev, e0);
    be->event_destroy(dev, e1);
    be->event_destroy(dev, e2);
    be->stream_destroy(dev, s1);
    be->stream_destroy(dev, s2);
    be->free(dev, a);
    be->free(dev, b);
}

/* -- Threads -------------------------------------------------------------------- */

enum { NTHREADS = 8, REPS = 5 };

typedef struct worker {
    void *dev, *fn;
    int id;
    int bad;
    kf_status status;
    char msg[256];
} worker;

/* Values are small integers, so every result is exact with or without fma. */
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
    if (s)
        be->stream_sync(w->dev, s, &err);
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

/* -- Main ------------------------------------------------------------------------ */

/* --expect-no-device: the run with no ICD visible, which must skip. */
int main(int argc, char **argv)
{
    bool expect_none = argc > 1 && strcmp(argv[1], "--expect-no-device") == 0;
    double t0 = now_ms();
    be = kf_rt_opencl_backend();
    CHECK(be != NULL);
    if (!be)
        return kf_test_done();
    CHECK(be->kind == KF_BACKEND_OPENCL && strcmp(be->name, "opencl") == 0);
    int ndev = be->count();
    if (expect_none && ndev != 0) {
        fprintf(stderr, "--expect-no-device: count() is %d\n", ndev);
        return 1;
    }
    if (ndev == 0) {
        void *dev = NULL;
        kf_device_info info;
        kf_rt_err err = { "" };
        kf_status s = be->open(0, &dev, &info, &err);
        if (s != KF_ERR_NO_DEVICE || dev != NULL) {
            fprintf(stderr, "open without devices: %s, want KF_ERR_NO_DEVICE\n", kf_status_string(s));
            return 1;
        }
        printf("SKIP: no OpenCL device (%s)\n", err.msg);
        return 0;
    }

    kf_rt_err err = { "" };
    kf_device_info info;
    void *dev = NULL;
    CHECK_STATUS(be->open(0, &dev, &info, &err), KF_OK);
    if (!dev) {
        fprintf(stderr, "open: %s\n", err.msg);
        return kf_test_done();
    }
    test_info(dev, &info, ndev);

    /* source -> binary -> program */
    void *bin = NULL, *mod = NULL, *saxpy = NULL, *slow = NULL, *divsqrt = NULL, *again = NULL, *none = NULL;
    size_t binlen = 0;
    double tc = now_ms();
    CHECK_STATUS(be->compile(dev, kernel_src, strlen(kernel_src), &bin, &binlen, &err), KF_OK);
    printf("compile: %zu-byte binary in %.0f ms\n", binlen, now_ms() - tc);
    CHECK(bin != NULL && binlen > 0);
    tc = now_ms();
    CHECK_STATUS(be->load(dev, bin, binlen, false, &mod, &err), KF_OK);
    printf("load: %.0f ms\n", now_ms() - tc);
    CHECK_STATUS(be->function(dev, mod, "saxpy", &saxpy, &err), KF_OK);
    CHECK_STATUS(be->function(dev, mod, "slow_fill", &slow, &err), KF_OK);
    CHECK_STATUS(be->function(dev, mod, "divsqrt", &divsqrt, &err), KF_OK);
    CHECK_STATUS(be->function(dev, mod, "saxpy", &again, &err), KF_OK);
    CHECK(again == saxpy);
    CHECK_STATUS(be->function(dev, mod, "no_such_kernel", &none, &err), KF_ERR_NAME);
    CHECK(none == NULL);
    CHECK_CONTAINS(err.msg, "'no_such_kernel'");
    CHECK_CONTAINS(err.msg, "CL_INVALID_KERNEL_NAME");
    if (!saxpy || !slow || !divsqrt) {
        fprintf(stderr, "no kernels: %s\n", err.msg);
        return kf_test_done();
    }

    test_compile_errors(dev);
    test_memory(dev);
    test_saxpy_streams(dev, saxpy);
    test_divsqrt(dev, divsqrt);
    test_events(dev, slow, info.gpu ? "gpu" : "marker");
    test_threads(dev, saxpy);

    /* a second device context, as another process with a cached binary
     * would have it, and events recorded as fills instead of markers */
    setenv("KFUSE_OPENCL_EVENTS", "fill", 1);
    void *dev2 = NULL, *mod2 = NULL, *slow2 = NULL, *saxpy2 = NULL;
    kf_device_info info2;
    CHECK_STATUS(be->open(0, &dev2, &info2, &err), KF_OK);
    unsetenv("KFUSE_OPENCL_EVENTS");
    if (dev2) {
        CHECK(strcmp(info.name, info2.name) == 0);
        CHECK_STATUS(be->load(dev2, bin, binlen, false, &mod2, &err), KF_OK);
        CHECK_STATUS(be->function(dev2, mod2, "slow_fill", &slow2, &err), KF_OK);
        CHECK_STATUS(be->function(dev2, mod2, "saxpy", &saxpy2, &err), KF_OK);
        if (slow2 && saxpy2) {
            test_events(dev2, slow2, "fill");
            test_saxpy_streams(dev2, saxpy2);
        }
        be->unload(dev2, mod2);
        be->close(dev2);
    }

    free(bin);
    be->unload(dev, mod);
    be->close(dev);
    printf("test_opencl: %.0f ms\n", now_ms() - t0);
    return kf_test_done();
}
