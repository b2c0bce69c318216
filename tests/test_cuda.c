/* CUDA backend: NVRTC compiles everywhere; the device part runs only where
 * count() > 0 (otherwise it checks that the backend says why and skips).
 * KF_TEST_CUDA_STUB=1: libcuda.so.1 is the toolkit's stub library (every
 * entry point resolves, cuInit fails), set up by tests/CMakeLists.txt. */
#include "check.h"
#include "../runtime/cuda_nvrtc.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

static const char saxpy_src[] =
    "struct kf_range { long long n; long long off; };\n"
    "extern \"C\" __global__ void saxpy(float *y, const float *x, struct kf_range r, float a)\n"
    "{\n"
    "    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < r.n;\n"
    "         i += (long long)gridDim.x * blockDim.x)\n"
    "        y[r.off + i] = a * x[r.off + i] + y[r.off + i];\n"
    "}\n"
    "static long long now(void) { return clock64(); }\n" /* a helper without __device__ */
    "extern \"C\" __global__ void spin(long long cycles)\n"
    "{\n"
    "    long long t0 = now();\n"
    "    while (now() - t0 < cycles) {}\n"
    "}\n";

static const char bad_src[] =
    "extern \"C\" __global__ void k(float *y)\n"
    "{\n"
    "    y[0] = 1.0f +;\n"
    "}\n";

typedef struct range { long long n, off; } range;

/* -- Without a device ---------------------------------------------------------- */

static void test_compile(void)
{
    kf_rt_err err = { { 0 } };
    void *bin = NULL;
    size_t len = 0;
    char id[64];
    kf_rt_cuda_compiler_id(id, sizeof id);
    const char *idp = id;
    CHECK_CONTAINS(idp, "nvrtc ");
    CHECK_CONTAINS(idp, "-default-device");

    const char *cubins[] = { "sm_80", "sm_90" };
    for (int i = 0; i < 2; i++) {
        CHECK_STATUS(kf_rt_cuda_compile_arch(saxpy_src, sizeof saxpy_src - 1, cubins[i], &bin, &len, &err), KF_OK);
        CHECK_MSG(bin && len > 64 && memcmp(bin, "\177ELF", 4) == 0, "%s: no ELF cubin (%zu bytes): %s", cubins[i],
                  len, err.msg);
        free(bin);
        bin = NULL;
    }

    CHECK_STATUS(kf_rt_cuda_compile_arch(saxpy_src, sizeof saxpy_src - 1, "compute_90", &bin, &len, &err), KF_OK);
    CHECK(bin && len > 0 && ((char *)bin)[len - 1] == 0);
    if (bin && len && ((char *)bin)[len - 1] == 0) {
        CHECK_CONTAINS((char *)bin, ".version");
        CHECK_CONTAINS((char *)bin, ".target sm_90");
        CHECK_CONTAINS((char *)bin, ".entry saxpy");
    }
    free(bin);
    bin = NULL;

    /* not NUL-terminated: len counts */
    CHECK_STATUS(kf_rt_cuda_compile_arch(saxpy_src, 0, "sm_90", &bin, &len, &err), KF_OK);
    free(bin);
    bin = NULL;

    err.msg[0] = 0;
    CHECK_STATUS(kf_rt_cuda_compile_arch(bad_src, sizeof bad_src - 1, "sm_90", &bin, &len, &err), KF_ERR_COMPILE);
    CHECK(bin == NULL && len == 0);
    CHECK_CONTAINS(err.msg, "nvrtcCompileProgram (sm_90): NVRTC_ERROR_COMPILATION");
    CHECK_CONTAINS(err.msg, "kfuse.cu(3): error");

    CHECK_STATUS(kf_rt_cuda_compile_arch(saxpy_src, sizeof saxpy_src - 1, "sm_9", &bin, &len, &err),
                 KF_ERR_INVALID_ARG);
    CHECK_STATUS(kf_rt_cuda_compile_arch(saxpy_src, sizeof saxpy_src - 1, "gfx90a", &bin, &len, &err),
                 KF_ERR_INVALID_ARG);
    CHECK_STATUS(kf_rt_cuda_compile_arch(saxpy_src, sizeof saxpy_src - 1, NULL, &bin, &len, &err),
                 KF_ERR_INVALID_ARG);
    CHECK_STATUS(kf_rt_cuda_compile_arch(saxpy_src, sizeof saxpy_src - 1, "sm_20", &bin, &len, &err),
                 KF_ERR_UNSUPPORTED);
    CHECK_CONTAINS(err.msg, "cannot target sm_20");
    CHECK_STATUS(kf_rt_cuda_compile_arch(saxpy_src, sizeof saxpy_src - 1, "sm_90", NULL, &len, &err),
                 KF_ERR_INVALID_ARG);
}

static void test_no_device(const kf_backend_ops *be)
{
    kf_rt_err err = { { 0 } };
    kf_device_info info;
    void *dev = (void *)1;
    CHECK(be->count() == 0);
    CHECK_STATUS(be->open(0, &dev, &info, &err), KF_ERR_NO_DEVICE);
    CHECK(dev == NULL);
    const char *stub = getenv("KF_TEST_CUDA_STUB");
    if (stub && strcmp(stub, "1") == 0) {
        /* every symbol resolved, so the failure is cuInit's */
        CHECK_CONTAINS(err.msg, "cuInit: CUDA_ERROR_STUB_LIBRARY");
    } else if (strstr(err.msg, "cuInit: ") == NULL) {
        CHECK_CONTAINS(err.msg, "libcuda.so.1 not found: ");
    }
    printf("cuda open: %s\n", err.msg);
}

/* -- With a device ------------------------------------------------------------ */

typedef struct gpu {
    const kf_backend_ops *be;
    void *dev;
    void *fn;      /* saxpy */
    void *spin;
} gpu;

static kf_status saxpy(gpu *g, void *y, void *x, long long n, long long off, float a, void *stream, kf_rt_err *err)
{
    range r = { n, off };
    kf_rt_arg args[4] = {
        { NULL, sizeof(void *), y, 0 },
        { NULL, sizeof(void *), x, 0 },
        { &r, sizeof r, NULL, 0 },
        { &a, sizeof a, NULL, 0 },
    };
    return g->be->launch(g->dev, g->fn, 120, 256, args, 4, stream, err);
}

typedef struct worker {
    gpu *g;
    int id;
    int bad;        /* wrong elements seen */
    kf_status st;
    char msg[sizeof(kf_rt_err)];
} worker;

static void *worker_main(void *p)
{
    worker *w = p;
    gpu *g = w->g;
    const kf_backend_ops *be = g->be;
    enum { N = 1 << 16, ROUNDS = 20 };
    kf_rt_err err = { { 0 } };
    float *h = malloc(N * sizeof *h);
    void *x = NULL, *y = NULL, *s = NULL;
    w->st = h ? KF_OK : KF_ERR_NO_MEMORY;
    if (w->st == KF_OK)
        w->st = be->stream_create(g->dev, &s, &err);
    if (w->st == KF_OK)
        w->st = be->alloc(g->dev, N * sizeof(float), &x, &err);
    if (w->st == KF_OK)
        w->st = be->alloc(g->dev, N * sizeof(float), &y, &err);
    for (int i = 0; h && i < N; i++)
        h[i] = (float)(i % 1000 + w->id);
    if (w->st == KF_OK)
        w->st = be->copy(g->dev, KF_COPY_H2D, x, 0, h, 0, N * sizeof(float), s, true, &err);
    if (w->st == KF_OK)
        w->st = be->fill(g->dev, y, 0, 0, N * sizeof(float), s, &err);
    for (int r = 0; r < ROUNDS && w->st == KF_OK; r++)
        w->st = saxpy(g, y, x, N, 0, 1.0f, s, &err);
    if (w->st == KF_OK)
        w->st = be->copy(g->dev, KF_COPY_D2H, h, 0, y, 0, N * sizeof(float), s, true, &err);
    for (int i = 0; w->st == KF_OK && i < N; i++)
        w->bad += h[i] != (float)ROUNDS * (float)(i % 1000 + w->id);
    snprintf(w->msg, sizeof w->msg, "%s", err.msg);
    be->free(g->dev, x);
    be->free(g->dev, y);
    be->stream_destroy(g->dev, s);
    free(h);
    return NULL;
}

static bool all_equal(const float *h, int from, int to, float want)
{
    for (int i = from; i < to; i++)
        if (h[i] != want) {
            fprintf(stderr, "element %d: %g, want %g\n", i, h[i], want);
            return false;
        }
    return true;
}

static void test_device(const kf_backend_ops *be)
{
    kf_rt_err err = { { 0 } };
    kf_device_info info;
    gpu g = { be, NULL, NULL, NULL };
    CHECK_STATUS(be->open(0, &g.dev, &info, &err), KF_OK);
    if (!g.dev) {
        fprintf(stderr, "open: %s\n", err.msg);
        return;
    }
    printf("device: %s, %s, driver %s, %llu MiB, %d SMs, %s\n", info.name, info.arch, info.driver,
           (unsigned long long)(info.memory_bytes >> 20), info.compute_units, be->compiler_id(g.dev));
    CHECK(info.backend == KF_BACKEND_CUDA && info.name[0] && info.memory_bytes > 0 && info.compute_units > 0);
    CHECK(strncmp(info.arch, "sm_", 3) == 0 && strchr(info.driver, '.') && info.fp64 && info.fp16 && info.gpu);
    CHECK_CONTAINS(be->compiler_id(g.dev), "nvrtc ");

    /* compile, load, look up */
    void *bin = NULL, *mod = NULL, *fn2 = NULL;
    size_t len = 0;
    CHECK_STATUS(be->compile(g.dev, saxpy_src, sizeof saxpy_src - 1, &bin, &len, &err), KF_OK);
    CHECK(bin && len > 4 && memcmp(bin, "\177ELF", 4) == 0);
    CHECK_STATUS(be->load(g.dev, bin, len, false, &mod, &err), KF_OK);
    /* an unaligned copy of the same image loads too (as a verified cache
     * entry: its entry points' parameters are not read from the driver) */
    char *odd = malloc(len + 1);
    void *mod2 = NULL;
    if (odd && bin) {
        memcpy(odd + 1, bin, len);
        CHECK_STATUS(be->load(g.dev, odd + 1, len, true, &mod2, &err), KF_OK);
        CHECK_STATUS(be->function(g.dev, mod2, "saxpy", &fn2, &err), KF_OK);
        CHECK_STATUS(be->load(g.dev, odd + 1, len / 2, false, &fn2, &err), KF_ERR_INVALID_ARG); /* truncated */
        CHECK_CONTAINS(err.msg, "truncated");
        be->unload(g.dev, mod2);
    }
    free(odd);
    free(bin);
    if (!mod) {
        be->close(g.dev);
        return;
    }
    CHECK_STATUS(be->function(g.dev, mod, "saxpy", &g.fn, &err), KF_OK);
    CHECK_STATUS(be->function(g.dev, mod, "spin", &g.spin, &err), KF_OK);
    CHECK_STATUS(be->function(g.dev, mod, "saxpy", &fn2, &err), KF_OK);
    CHECK(fn2 == g.fn);
    CHECK_STATUS(be->function(g.dev, mod, "no_such_kernel", &fn2, &err), KF_ERR_DEVICE);
    CHECK_CONTAINS(err.msg, "no_such_kernel");
    CHECK_CONTAINS(err.msg, "CUDA_ERROR_NOT_FOUND");

    /* the default stream */
    enum { N = 1 << 20 };
    float *hx = malloc(N * sizeof(float)), *hy = malloc(N * sizeof(float));
    void *x = NULL, *y = NULL, *z = NULL;
    CHECK(hx && hy);
    if (!hx || !hy)
        goto out;
    for (int i = 0; i < N; i++) {
        hx[i] = (float)(i % 4096);
        hy[i] = 1.0f;
    }
    CHECK_STATUS(be->alloc(g.dev, N * sizeof(float), &x, &err), KF_OK);
    CHECK_STATUS(be->alloc(g.dev, N * sizeof(float), &y, &err), KF_OK);
    CHECK_STATUS(be->alloc(g.dev, N * sizeof(float), &z, &err), KF_OK);
    if (!x || !y || !z)
        goto out;
    CHECK_STATUS(be->copy(g.dev, KF_COPY_H2D, x, 0, hx, 0, N * sizeof(float), NULL, true, &err), KF_OK);
    CHECK_STATUS(be->copy(g.dev, KF_COPY_H2D, y, 0, hy, 0, N * sizeof(float), NULL, false, &err), KF_OK);
    CHECK_STATUS(saxpy(&g, y, x, N, 0, 2.0f, NULL, &err), KF_OK);
    CHECK_STATUS(be->copy(g.dev, KF_COPY_D2H, hy, 0, y, 0, N * sizeof(float), NULL, true, &err), KF_OK);
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += hy[i] != 2.0f * (float)(i % 4096) + 1.0f;
    CHECK_MSG(bad == 0, "%d wrong elements on the default stream", bad);

    /* two more streams, each half of the array; events time it */
    void *s1 = NULL, *s2 = NULL, *e0 = NULL, *e1 = NULL, *e2 = NULL;
    CHECK_STATUS(be->stream_create(g.dev, &s1, &err), KF_OK);
    CHECK_STATUS(be->stream_create(g.dev, &s2, &err), KF_OK);
    CHECK_STATUS(be->event_create(g.dev, &e0, &err), KF_OK);
    CHECK_STATUS(be->event_create(g.dev, &e1, &err), KF_OK);
    CHECK_STATUS(be->event_create(g.dev, &e2, &err), KF_OK);
    CHECK_STATUS(be->fill(g.dev, y, 0, 0x3f800000u /* 1.0f */, N * sizeof(float), s1, &err), KF_OK);
    CHECK_STATUS(be->event_record(g.dev, e0, s1, &err), KF_OK);
    CHECK_STATUS(be->stream_wait(g.dev, s2, e0, &err), KF_OK); /* s2 waits for the fill */
    CHECK_STATUS(saxpy(&g, y, x, N / 2, 0, 3.0f, s1, &err), KF_OK);
    CHECK_STATUS(saxpy(&g, y, x, N / 2, N / 2, 4.0f, s2, &err), KF_OK);
    CHECK_STATUS(be->event_record(g.dev, e1, s1, &err), KF_OK);
    CHECK_STATUS(be->event_record(g.dev, e2, s2, &err), KF_OK);
    CHECK_STATUS(be->event_sync(g.dev, e1, &err), KF_OK);
    CHECK_STATUS(be->stream_sync(g.dev, s2, &err), KF_OK);
    float ms = -1;
    CHECK_STATUS(be->event_elapsed(g.dev, e0, e1, &ms, &err), KF_OK);
    CHECK_MSG(ms >= 0 && ms < 10000, "elapsed %g ms", ms);
    CHECK_STATUS(be->copy(g.dev, KF_COPY_D2H, hy, 0, y, 0, N * sizeof(float), s1, true, &err), KF_OK);
    bad = 0;
    for (int i = 0; i < N; i++)
        bad += hy[i] != (i < N / 2 ? 3.0f : 4.0f) * (float)(i % 4096) + 1.0f;
    CHECK_MSG(bad == 0, "%d wrong elements on two streams", bad);

    /* stream_wait orders across streams: s1 spins, then writes y; s2
     * waits for that and copies y to z.  Without the wait s2 would copy
     * before the write. */
    CHECK_STATUS(be->fill(g.dev, y, 0, 0, N * sizeof(float), NULL, &err), KF_OK);
    CHECK_STATUS(be->stream_sync(g.dev, NULL, &err), KF_OK);
    long long cycles = 20 * 1000 * 1000; /* ~10 ms */
    kf_rt_arg sarg = { &cycles, sizeof cycles, NULL, 0 };
    CHECK_STATUS(be->launch(g.dev, g.spin, 1, 1, &sarg, 1, s1, &err), KF_OK);
    CHECK_STATUS(saxpy(&g, y, x, N, 0, 5.0f, s1, &err), KF_OK);
    CHECK_STATUS(be->event_record(g.dev, e1, s1, &err), KF_OK);
    CHECK_STATUS(be->stream_wait(g.dev, s2, e1, &err), KF_OK);
    CHECK_STATUS(be->copy(g.dev, KF_COPY_D2D, z, 0, y, 0, N * sizeof(float), s2, false, &err), KF_OK);
    CHECK_STATUS(be->copy(g.dev, KF_COPY_D2H, hy, 0, z, 0, N * sizeof(float), s2, true, &err), KF_OK);
    bad = 0;
    for (int i = 0; i < N; i++)
        bad += hy[i] != 5.0f * (float)(i % 4096);
    CHECK_MSG(bad == 0, "%d wrong elements after stream_wait", bad);

    /* fill and D2D copy at offsets */
    CHECK_STATUS(be->fill(g.dev, z, 0, 0, 1024 * sizeof(float), NULL, &err), KF_OK);
    CHECK_STATUS(be->fill(g.dev, z, 16 * sizeof(float), 0x40000000u /* 2.0f */, 100 * sizeof(float), NULL, &err),
                 KF_OK);
    CHECK_STATUS(be->copy(g.dev, KF_COPY_D2D, z, 300 * sizeof(float), x, 10 * sizeof(float), 20 * sizeof(float),
                          NULL, false, &err),
                 KF_OK);
    CHECK_STATUS(be->copy(g.dev, KF_COPY_D2H, hy, 8, z, 0, 1024 * sizeof(float), NULL, true, &err), KF_OK);
    float *hz = (float *)((char *)hy + 8);
    CHECK(all_equal(hz, 0, 16, 0.0f) && all_equal(hz, 16, 116, 2.0f) && all_equal(hz, 116, 300, 0.0f) &&
          all_equal(hz, 320, 1024, 0.0f));
    bad = 0;
    for (int i = 0; i < 20; i++)
        bad += hz[300 + i] != (float)(10 + i);
    CHECK(bad == 0);
    CHECK_STATUS(be->fill(g.dev, z, 2, 0, 4, NULL, &err), KF_ERR_INVALID_ARG);

    /* launch limits and argument checks */
    CHECK_STATUS(be->launch(g.dev, g.fn, 0, 256, NULL, 0, NULL, &err), KF_OK); /* grid 0: nothing */
    range r = { 1, 0 };
    float a = 1;
    kf_rt_arg args[4] = { { NULL, 8, y, 0 }, { NULL, 8, x, 0 }, { &r, sizeof r, NULL, 0 }, { &a, sizeof a, NULL, 0 } };
    CHECK_STATUS(be->launch(g.dev, g.fn, 1ull << 40, 256, args, 4, NULL, &err), KF_ERR_INVALID_ARG);
    CHECK_STATUS(be->launch(g.dev, g.fn, 1, 0, args, 4, NULL, &err), KF_ERR_INVALID_ARG);
    CHECK_STATUS(be->launch(g.dev, g.fn, 1, 4096, args, 4, NULL, &err), KF_ERR_INVALID_ARG);
    int dmaj = 0, dmin = 0;
    if (sscanf(info.driver, "%d.%d", &dmaj, &dmin) == 2 && dmaj * 100 + dmin >= 1204) {
        /* the driver describes kernel parameters: mismatches are caught */
        CHECK_STATUS(be->launch(g.dev, g.fn, 1, 32, args, 3, NULL, &err), KF_ERR_INVALID_ARG);
        CHECK_CONTAINS(err.msg, "takes 4");
        args[2].size = 12;
        CHECK_STATUS(be->launch(g.dev, g.fn, 1, 32, args, 4, NULL, &err), KF_ERR_INVALID_ARG);
        CHECK_CONTAINS(err.msg, "argument 2");
    }

    /* many host threads, each on its own stream, one module */
    enum { T = 8 };
    worker w[T];
    pthread_t tid[T];
    for (int i = 0; i < T; i++) {
        w[i] = (worker){ &g, i, 0, KF_OK, "" };
        CHECK(pthread_create(&tid[i], NULL, worker_main, &w[i]) == 0);
    }
    for (int i = 0; i < T; i++) {
        pthread_join(tid[i], NULL);
        CHECK_MSG(w[i].st == KF_OK && w[i].bad == 0, "thread %d: %s, %d wrong: %s", i, kf_status_string(w[i].st),
                  w[i].bad, w[i].msg);
    }

    /* out of memory is the driver's own error */
    void *huge = NULL;
    CHECK_STATUS(be->alloc(g.dev, (size_t)1 << 50, &huge, &err), KF_ERR_NO_MEMORY);
    CHECK(huge == NULL);
    CHECK_CONTAINS(err.msg, "cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY");
    void *empty = NULL;
    CHECK_STATUS(be->alloc(g.dev, 0, &empty, &err), KF_OK);
    CHECK(empty != NULL);
    be->free(g.dev, empty);

    /* PTX for the device's arch loads through the driver's JIT */
    char ptxarch[256];
    snprintf(ptxarch, sizeof ptxarch, "compute_%s", info.arch + 3);
    void *pmod = NULL, *pfn = NULL;
    CHECK_STATUS(kf_rt_cuda_compile_arch(saxpy_src, sizeof saxpy_src - 1, ptxarch, &bin, &len, &err), KF_OK);
    if (bin) {
        CHECK_STATUS(be->load(g.dev, bin, len, false, &pmod, &err), KF_OK);
        CHECK_STATUS(be->load(g.dev, bin, len - 1, false, &fn2, &err), KF_ERR_INVALID_ARG); /* no NUL */
        free(bin);
    }
    if (pmod) {
        CHECK_STATUS(be->function(g.dev, pmod, "saxpy", &pfn, &err), KF_OK);
        be->unload(g.dev, pmod);
    }

    be->event_destroy(g.dev, e0);
    be->event_destroy(g.dev, e1);
    be->event_destroy(g.dev, e2);
    be->stream_destroy(g.dev, s1);
    be->stream_destroy(g.dev, s2);
out:
    if (err.msg[0])
        printf("last error: %s\n", err.msg);
    be->free(g.dev, x);
    be->free(g.dev, y);
    be->free(g.dev, z);
    free(hx);
    free(hy);
    be->unload(g.dev, mod);
    be->close(g.dev);

    /* the primary context can be retained again */
    void *dev = NULL;
    CHECK_STATUS(be->open(0, &dev, &info, &err), KF_OK);
    if (dev)
        be->close(dev);
}

int main(void)
{
    const kf_backend_ops *be = kf_rt_cuda_backend();
    CHECK(be && be->kind == KF_BACKEND_CUDA && strcmp(be->name, "cuda") == 0 && be->compiler_id);
    if (!be)
        return kf_test_done();
    test_compile();
    if (be->count() > 0) {
        test_device(be);
    } else {
        test_no_device(be);
        printf("SKIP: no CUDA device (GPU tests need a GPU)\n");
    }
    return kf_test_done();
}
