/* First-call and repeat-call costs of one graph, measured in this process:
 * context creation, the first call (kf_compile + kf_run + sync: from the
 * disk cache when it holds the kernel, compiled otherwise), the device
 * compile time within it (kf_context_stats), and the host time per call of
 * an in-process repeat (kf_compile of an equal graph, answered by the plan
 * cache, + kf_run, on the first REPEAT_N elements) beside a plain kf_run
 * of the compiled program and, on CUDA, a bare cuLaunchKernel of a
 * hand-written kernel.  bench/cache_bench.sh
 * runs it in fresh processes on empty and warm caches and takes medians.
 * Usage: cache_bench --backend cuda|opencl|cpu FILE.kir GRAPH [--n N] [--batches B]
 * Prints "cache_bench ctx_ms=.. first_ms=.. compiles=.. disk_hits=.. compile_ms=..
 * repeat_us=.. run_us=.. bare_us=.." (bare_us -1 where there is none), then
 * "device: NAME".  Exit 1 on a wrong result or a failed call, 3 without a device. */
#include "kfsample.h"
#include "kfuse.h"
#include "median.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum {
    CALLS = 50,    /* calls per timed batch; the stream is synchronised between batches */
    REPEAT_N = 256 /* elements of a repeated call: the CPU backend runs small launches on the
                    * calling thread, and a repeat should time kfuse, not the kernel */
};

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* What one timed call does; false when it failed. */
typedef struct bench_call {
    bool (*call)(void *arg);
    bool (*sync)(void *arg);
    void *arg;
} bench_call;

/* Host time of one call in microseconds: the median over batches of CALLS
 * calls (only the enqueueing is timed; each batch is then synchronised, so
 * the queue never fills).  -1 when a call failed. */
static double per_call_us(const bench_call *c, int batches)
{
    double *t = malloc((size_t)batches * sizeof *t);
    bool ok = t && c->sync(c->arg);
    for (int b = 0; ok && b < batches; b++) {
        double t0 = now_s();
        for (int i = 0; ok && i < CALLS; i++)
            ok = c->call(c->arg);
        t[b] = (now_s() - t0) * 1e6 / CALLS;
        ok = ok && c->sync(c->arg);
    }
    double us = -1;
    if (ok)
        us = bench_median(t, batches);
    free(t);
    return us;
}

/* -- kfuse calls ------------------------------------------------------------------ */

typedef struct kf_call {
    kf_context *ctx;
    kf_program *prog;     /* compiled: plain kf_run */
    const kf_graph *same; /* an equal graph: kf_compile (plan cache) + kf_run */
    kf_view in, out;
} kf_call;

static bool run_plain(void *arg)
{
    kf_call *k = arg;
    return kf_run(k->prog, NULL, &k->in, 1, NULL, 0, &k->out, 1) == KF_OK;
}

static bool run_repeat(void *arg)
{
    kf_call *k = arg;
    kf_program *p = NULL;
    bool ok = kf_compile(k->ctx, k->same, &p) == KF_OK && kf_run(p, NULL, &k->in, 1, NULL, 0, &k->out, 1) == KF_OK;
    kf_program_free(p);
    return ok;
}

static bool sync_kf(void *arg) { return kf_stream_sync(((kf_call *)arg)->ctx, NULL) == KF_OK; }

/* -- A bare launch: libcuda and NVRTC without kfuse's runtime ------------------------ */

#ifdef KFUSE_WITH_CUDA
#include "bare_cuda.h"

/* Host time of a bare cuLaunchKernel (bench/bare_cuda.h) on n elements on
 * device 0, timed like the kfuse calls: the floor under any launch.  -1
 * when it cannot run. */
static double bare_launch_us(const char *arch, int n, int batches)
{
    bare_cuda c;
    char why[600];
    if (!bare_cuda_open(&c, 0, arch, (unsigned)n, why, sizeof why)) {
        fprintf(stderr, "cache_bench: bare launch: %s\n", why);
        return -1;
    }
    bench_call call = { bare_cuda_launch, bare_cuda_sync, &c };
    double us = per_call_us(&call, batches);
    bare_cuda_close(&c);
    return us;
}
#endif

/* -- main ------------------------------------------------------------------------- */

static int usage(void)
{
    fprintf(stderr, "usage: cache_bench --backend cuda|opencl|cpu FILE.kir GRAPH [--n N] [--batches B]\n");
    return 2;
}

int main(int argc, char **argv)
{
    const char *file = NULL, *name = NULL, *bname = NULL;
    int64_t n = 4096;
    int batches = 20;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--backend") && i + 1 < argc)
            bname = argv[++i];
        else if (!strcmp(argv[i], "--n") && i + 1 < argc)
            n = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--batches") && i + 1 < argc)
            batches = atoi(argv[++i]);
        else if (argv[i][0] == '-')
            return usage();
        else if (!file)
            file = argv[i];
        else
            name = argv[i];
    }
    kf_backend be = !bname                   ? KF_BACKEND_AUTO
                    : !strcmp(bname, "cuda")   ? KF_BACKEND_CUDA
                    : !strcmp(bname, "opencl") ? KF_BACKEND_OPENCL
                    : !strcmp(bname, "cpu")    ? KF_BACKEND_CPU
                                               : (kf_backend)-1;
    if (!file || !name || be == (kf_backend)-1 || n < 1 || n > (1 << 30) || batches < 1)
        return usage();
    kf_module *m = NULL;
    if (kf_module_parse_file(file, NULL, &m) != KF_OK) {
        fprintf(stderr, "cache_bench: %s\n", m ? kf_module_error(m) : "out of memory");
        kf_module_free(m);
        return 1;
    }
    kf_graph *g = kf_module_find(m, name), *same = g ? kf_graph_clone(g) : NULL;
    if (!same || kf_graph_num_inputs(g) != 1 || kf_graph_num_outputs(g) != 1 ||
        kf_node_dtype(g, kf_graph_input(g, 0)) != KF_F32 || kf_node_rank(g, kf_graph_input(g, 0)) != 1) {
        fprintf(stderr, "cache_bench: %s: %s\n", file,
                g ? "the graph must take one f32[n] and give one output" : "no such graph");
        kf_graph_free(same);
        kf_module_free(m);
        return 1;
    }
    /* the input, and what the interpreter makes of it */
    kf_host_array in = { .dtype = KF_F32, .rank = 1, .shape = { n } }, ref = { 0 };
    float *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y);
    rt_rng rng = { 7 };
    for (int64_t i = 0; x && i < n; i++)
        x[i] = (float)(rt_unif(&rng) * 2 - 1);
    in.data = x;
    char err[512] = "out of memory";
    kf_context *ctx = NULL;
    kf_buffer *bx = NULL, *by = NULL;
    kf_call k = { .same = same };
    int rc = 1;
    if (!x || !y || kf_interpret(g, &in, 1, &ref, 1, err, sizeof err) != KF_OK) {
        fprintf(stderr, "cache_bench: interpreter: %s\n", err);
        goto done;
    }

    /* (a) context creation */
    kf_context_options o = { .backend = be, .device = 0 };
    double t0 = now_s();
    if (kf_context_create(&o, &ctx, err, sizeof err) != KF_OK) {
        fprintf(stderr, "cache_bench: %s\n", err);
        rc = 3;
        goto done;
    }
    double ctx_ms = (now_s() - t0) * 1e3;
    kf_device_info info;
    kf_context_info(ctx, &info);
    k.ctx = ctx;
    if (kf_buffer_alloc(ctx, (size_t)n * 4, &bx) != KF_OK || kf_buffer_alloc(ctx, (size_t)n * 4, &by) != KF_OK ||
        kf_upload(bx, 0, x, (size_t)n * 4, NULL) != KF_OK || kf_stream_sync(ctx, NULL) != KF_OK)
        goto done;
    k.in = kf_view_dense(bx, 0, KF_F32, 1, &n);
    k.out = kf_view_dense(by, 0, KF_F32, 1, &n);

    /* (b), (c) the first call; (e) the device compile within it */
    t0 = now_s();
    if (kf_compile(ctx, g, &k.prog) != KF_OK || !run_plain(&k) || kf_stream_sync(ctx, NULL) != KF_OK)
        goto done;
    double first_ms = (now_s() - t0) * 1e3;
    kf_stats st;
    kf_context_stats(ctx, &st);
    double maxerr = 0;
    int64_t bad = -1;
    if (kf_download(y, by, 0, (size_t)n * 4, NULL) != KF_OK || rt_compare(y, ref.data, KF_F32, n, &maxerr, &bad)) {
        fprintf(stderr, "cache_bench: %s: wrong result (element %lld, error %g)\n", name, (long long)bad, maxerr);
        goto done;
    }

    /* (d) repeated calls: through the plan cache, plain, bare */
    int64_t rn = n < REPEAT_N ? n : REPEAT_N;
    k.in = kf_view_dense(bx, 0, KF_F32, 1, &rn);
    k.out = kf_view_dense(by, 0, KF_F32, 1, &rn);
    bench_call repeat = { run_repeat, sync_kf, &k }, plain = { run_plain, sync_kf, &k };
    double repeat_us = per_call_us(&repeat, batches), run_us = per_call_us(&plain, batches), bare_us = -1;
    kf_stats after;
    kf_context_stats(ctx, &after);
    if (repeat_us < 0 || run_us < 0 || after.compiles != st.compiles ||
        after.memory_hits != st.memory_hits + (uint64_t)batches * CALLS) {
        fprintf(stderr, "cache_bench: %s: repeated calls: %s\n", name,
                repeat_us < 0 || run_us < 0 ? kf_context_error(ctx) : "not all answered by the plan cache");
        goto done;
    }
#ifdef KFUSE_WITH_CUDA
    if (info.backend == KF_BACKEND_CUDA)
        bare_us = bare_launch_us(info.arch, (int)rn, batches);
#endif
    printf("cache_bench ctx_ms=%.3f first_ms=%.3f compiles=%llu disk_hits=%llu compile_ms=%.3f repeat_us=%.3f "
           "run_us=%.3f bare_us=%.3f\ndevice: %s\n",
           ctx_ms, first_ms, (unsigned long long)st.compiles, (unsigned long long)st.disk_hits, st.compile_ms,
           repeat_us, run_us, bare_us, info.name);
    rc = 0;
done:
    if (rc == 1 && ctx && kf_context_error(ctx)[0])
        fprintf(stderr, "cache_bench: %s\n", kf_context_error(ctx));
    kf_program_free(k.prog);
    kf_buffer_free(bx);
    kf_buffer_free(by);
    kf_context_destroy(ctx);
    kf_free(ref.data);
    free(x);
    free(y);
    kf_graph_free(same);
    kf_module_free(m);
    return rc;
}
