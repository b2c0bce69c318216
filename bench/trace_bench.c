/* What tracing costs kf_run: host time per call of a tiny run (y = x + 1
 * over 64 floats) queued back to back on one stream, with KFUSE_TRACE
 * unset and set, best of several repetitions.  Only the public API of
 * kfuse 0.1 is used, so the same source also measures a build without the
 * trace hooks (docs/trace.md gives the numbers).
 * Usage: trace_bench [CALLS] [REPEATS] [TRACE.json | off]   (backend: KFUSE_BACKEND, default cpu;
 * "off" measures tracing off only, e.g. under valgrind --tool=callgrind) */
#define _GNU_SOURCE
#include "kfuse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Best ns per kf_run call over repeats of calls runs (then one sync). */
static double measure(const char *trace, long calls, int repeats)
{
    if (trace)
        setenv("KFUSE_TRACE", trace, 1);
    else
        unsetenv("KFUSE_TRACE");
    if (!getenv("KFUSE_BACKEND"))
        setenv("KFUSE_BACKEND", "cpu", 1);
    kf_context_options o = { .device = -1, .cache_mode = KF_CACHE_OFF };
    kf_context *ctx = NULL;
    char why[512];
    if (kf_context_create(&o, &ctx, why, sizeof why) != KF_OK) {
        fprintf(stderr, "trace_bench: %s\n", why);
        return -1;
    }
    kf_graph *g = kf_graph_new("inc");
    kf_dim n = KF_DIM(64);
    kf_output(g, kf_binary(g, KF_OP_ADD, kf_input(g, "x", KF_F32, 1, &n), kf_lit_f(g, KF_F32, 1.0)), "y");
    kf_program *p = NULL;
    kf_buffer *bx = NULL, *by = NULL;
    kf_stream *s = NULL;
    double best = -1;
    if (kf_compile(ctx, g, &p) == KF_OK && kf_buffer_alloc(ctx, 256, &bx) == KF_OK &&
        kf_buffer_alloc(ctx, 256, &by) == KF_OK && kf_stream_create(ctx, &s) == KF_OK) {
        int64_t shape[1] = { 64 };
        kf_view x = kf_view_dense(bx, 0, KF_F32, 1, shape), y = kf_view_dense(by, 0, KF_F32, 1, shape);
        for (int r = -1; r < repeats; r++) { /* r = -1 warms up */
            double t0 = now_ns();
            for (long i = 0; i < calls; i++)
                if (kf_run(p, s, &x, 1, NULL, 0, &y, 1) != KF_OK) {
                    fprintf(stderr, "trace_bench: %s\n", kf_context_error(ctx));
                    r = repeats;
                    best = -1;
                    break;
                }
            kf_stream_sync(ctx, s);
            double per = (now_ns() - t0) / (double)calls;
            if (r >= 0 && (best < 0 || per < best))
                best = per;
        }
    } else {
        fprintf(stderr, "trace_bench: %s\n", kf_context_error(ctx));
    }
    kf_context_destroy(ctx);
    kf_graph_free(g);
    return best;
}

int main(int argc, char **argv)
{
    long calls = argc > 1 ? atol(argv[1]) : 20000;
    int repeats = argc > 2 ? atoi(argv[2]) : 5;
    const char *trace = argc > 3 ? argv[3] : "trace_bench.json";
    if (calls <= 0 || repeats <= 0) {
        fprintf(stderr, "usage: trace_bench [CALLS] [REPEATS] [TRACE.json]\n");
        return 2;
    }
    bool off_only = strcmp(trace, "off") == 0;
    double off = measure(NULL, calls, repeats), on = off_only ? 0 : measure(trace, calls, repeats);
    if (off < 0 || on < 0)
        return 1;
    printf("kf_run host time per call, best of %d x %ld calls on %s:\n", repeats, calls, getenv("KFUSE_BACKEND"));
    printf("  tracing off: %8.1f ns\n", off);
    if (!off_only)
        printf("  tracing on:  %8.1f ns (%s)\n", on, trace);
    return 0;
}
