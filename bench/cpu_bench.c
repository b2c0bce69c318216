/* CPU backend benchmark: x+x+x+x+x, gelu, boxplus and dot on float32 arrays
 * of 2^20 and 2^26 elements, as GB/s of array traffic (every input read
 * once, every output written once) and as a fraction of a streaming copy
 * measured in the same run with the same number of threads.  Times are
 * medians of the repeats (the best is printed beside it); GB/s and the
 * fraction of copy use the medians.
 * Usage: cpu_bench [--threads T] [--reps R] [--log2 N]...
 * (bench/cpu_bench.py runs NumPy and numexpr on the same expressions.) */
#define _GNU_SOURCE
#include "kfuse.h"
#include "median.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char graphs[] =
    "kfuse 1\n"
    "graph x5(x: f32[n]) -> (y) {\n"
    "  a = add x, x\n  b = add a, x\n  c = add b, x\n  y = add c, x\n}\n"
    "graph gelu(x: f32[n]) -> (y) {\n"
    "  x3 = mul (mul x, x), x\n"
    "  inner = mul 0.7978845608, (add x, (mul 0.044715, x3))\n"
    "  y = mul (mul 0.5, x), (add 1.0, (tanh inner))\n}\n"
    "graph boxplus(a: f32[n], b: f32[n]) -> (y) {\n"
    "  mx = max a, b\n  mn = min a, b\n  y = add mx, (log1p (exp (sub mn, mx)))\n}\n"
    "graph dot(x: f32[n], y: f32[n]) -> (s) {\n  p = mul x, y\n  s = sum p\n}\n";

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* -- Streaming copy: T threads (created once), one contiguous slice each ---- */

typedef struct copier {
    pthread_barrier_t *bar;
    float *dst;
    const float *src;
    size_t n;
    int reps;
} copier;

static void *copy_loop(void *arg)
{
    copier *c = arg;
    for (int r = 0; r < c->reps; r++) {
        pthread_barrier_wait(c->bar);
        memcpy(c->dst, c->src, c->n * sizeof(float));
        pthread_barrier_wait(c->bar);
    }
    return NULL;
}

/* Median of reps: GB/s of bytes read plus bytes written. */
static double copy_gbs(float *dst, const float *src, size_t n, int threads, int reps)
{
    pthread_t tid[256];
    copier c[256];
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, (unsigned)threads);
    for (int t = 0; t < threads; t++) {
        size_t b = n * (size_t)t / (size_t)threads, e = n * (size_t)(t + 1) / (size_t)threads;
        c[t] = (copier){ &bar, dst + b, src + b, e - b, reps };
        if (t)
            pthread_create(&tid[t], NULL, copy_loop, &c[t]);
    }
    double times[256];
    for (int r = 0; r < reps; r++) {
        pthread_barrier_wait(&bar);
        double t0 = now_s();
        memcpy(c[0].dst, c[0].src, c[0].n * sizeof(float));
        pthread_barrier_wait(&bar);
        times[r] = now_s() - t0;
    }
    for (int t = 1; t < threads; t++)
        pthread_join(tid[t], NULL);
    pthread_barrier_destroy(&bar);
    return 2.0 * (double)n * sizeof(float) / bench_median(times, reps) / 1e9;
}

int main(int argc, char **argv)
{
    int threads = 0, reps = 0, nlog = 0, logs[8];
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (strcmp(argv[i], "--log2") == 0 && i + 1 < argc && nlog < 8)
            logs[nlog++] = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: cpu_bench [--threads T] [--reps R] [--log2 N]...\n");
            return 2;
        }
    }
    if (!nlog) {
        logs[nlog++] = 20;
        logs[nlog++] = 26;
    }
    char tbuf[16];
    if (threads > 0) {
        snprintf(tbuf, sizeof tbuf, "%d", threads);
        setenv("KFUSE_THREADS", tbuf, 1);
    }
    kf_context_options o = { .backend = KF_BACKEND_CPU, .device = 0 };
    kf_context *ctx;
    char why[512];
    if (kf_context_create(&o, &ctx, why, sizeof why) != KF_OK) {
        fprintf(stderr, "cpu_bench: %s\n", why);
        return 1;
    }
    kf_device_info info;
    kf_context_info(ctx, &info);
    threads = info.compute_units;
    kf_module *m;
    if (kf_module_parse(graphs, strlen(graphs), "cpu_bench", NULL, &m) != KF_OK) {
        fprintf(stderr, "cpu_bench: %s\n", kf_module_error(m));
        return 1;
    }
    printf("# kfuse CPU backend: %s, %s, %s\n", info.name, info.arch, info.driver);
    printf("%-8s %10s %8s %9s %9s %9s %8s %10s\n", "expr", "elements", "threads", "ms(med)", "ms(best)", "GB/s",
           "copy", "of copy");
    for (int li = 0; li < nlog; li++) {
        size_t n = (size_t)1 << logs[li];
        int r = reps > 0 ? (reps < 256 ? reps : 256) : logs[li] >= 24 ? 15 : 200;
        float *h = malloc(n * sizeof *h), *h2 = malloc(n * sizeof *h2);
        if (!h || !h2)
            return 1;
        for (size_t i = 0; i < n; i++) {
            h[i] = (float)((double)((i * 2654435761u) % 2000003) / 2000003.0 * 8 - 4);
            h2[i] = (float)((double)((i * 40503u) % 1000003) / 1000003.0 * 8 - 4);
        }
        double cbw = copy_gbs(h2, h, n, threads, r > 20 ? 20 : r);
        for (size_t i = 0; i < n; i++)
            h2[i] = (float)((double)((i * 40503u) % 1000003) / 1000003.0 * 8 - 4);
        kf_buffer *bx, *by, *bo;
        int64_t shape[1] = { (int64_t)n };
        kf_buffer_alloc(ctx, n * 4, &bx);
        kf_buffer_alloc(ctx, n * 4, &by);
        kf_buffer_alloc(ctx, n * 4, &bo);
        kf_upload(bx, 0, h, n * 4, NULL);
        kf_upload(by, 0, h2, n * 4, NULL);
        for (int gi = 0; gi < kf_module_num_graphs(m); gi++) {
            kf_graph *g = kf_module_graph(m, gi);
            kf_program *p;
            if (kf_compile(ctx, g, &p) != KF_OK) {
                fprintf(stderr, "cpu_bench: %s\n", kf_context_error(ctx));
                return 1;
            }
            int nin = kf_graph_num_inputs(g);
            bool red = strcmp(kf_graph_name(g), "dot") == 0;
            kf_view in[2] = { kf_view_dense(bx, 0, KF_F32, 1, shape), kf_view_dense(by, 0, KF_F32, 1, shape) };
            kf_view out = red ? kf_view_dense(bo, 0, KF_F32, 0, NULL) : kf_view_dense(bo, 0, KF_F32, 1, shape);
            kf_run(p, NULL, in, nin, NULL, 0, &out, 1); /* warm up: pages, pool threads */
            kf_stream_sync(ctx, NULL);
            double t[256];
            for (int k = 0; k < r; k++) {
                double t0 = now_s();
                kf_run(p, NULL, in, nin, NULL, 0, &out, 1);
                kf_stream_sync(ctx, NULL);
                t[k] = now_s() - t0;
            }
            double med = bench_median(t, r), best = t[0];
            double bytes = (double)n * 4 * (nin + (red ? 0 : 1));
            double gbs = bytes / med / 1e9;
            printf("%-8s %10zu %8d %9.3f %9.3f %9.2f %8.2f %10.2f\n", kf_graph_name(g), n, threads, med * 1e3,
                   best * 1e3, gbs, cbw, gbs / cbw);
            fflush(stdout);
            kf_program_free(p);
        }
        kf_buffer_free(bx);
        kf_buffer_free(by);
        kf_buffer_free(bo);
        free(h);
        free(h2);
    }
    kf_module_free(m);
    kf_context_destroy(ctx);
    return 0;
}
