/* Host-to-host processing of a memory-bound fused graph (y = x+x+x+x+x on
 * f32) three ways, with the throughput of each: sequential copies from
 * pageable memory (kf_upload, kf_run, kf_download), the same from pinned
 * memory (kf_host_alloc), and kf_run_host's chunked copy/compute pipeline
 * (from pageable and from pinned memory).  It also measures the pinned
 * copy rates one way at a time and both ways at once: the pipeline cannot
 * beat the bound those set.  docs/examples/host_pipeline.md explains it.
 * Usage: host_pipeline [MiB of input, default 16] */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <kfuse.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TRY(call)                                                                       \
    do {                                                                                \
        kf_status s_ = (call);                                                          \
        if (s_ != KF_OK) {                                                              \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, kf_status_string(s_), \
                    ctx ? kf_context_error(ctx) : "");                                  \
            exit(1);                                                                    \
        }                                                                               \
    } while (0)

static kf_context *ctx;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static bool check(const float *x, const float *y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (y[i] != 5 * x[i])
            return false;
    return true;
}

/* Seconds of the best of 'reps' runs of the sequential way: upload, run,
 * download, each waited for. */
static double sequential(kf_program *p, const float *x, float *y, size_t n, kf_buffer *bx, kf_buffer *by, int reps)
{
    double best = 1e30;
    int64_t shape[1] = { (int64_t)n };
    kf_view in = kf_view_dense(bx, 0, KF_F32, 1, shape), out = kf_view_dense(by, 0, KF_F32, 1, shape);
    for (int r = 0; r < reps; r++) {
        memset(y, 0, n * sizeof *y);
        double t0 = now();
        TRY(kf_upload(bx, 0, x, n * sizeof *x, NULL));
        TRY(kf_run(p, NULL, &in, 1, NULL, 0, &out, 1));
        TRY(kf_download(y, by, 0, n * sizeof *y, NULL));
        double t = now() - t0;
        best = t < best ? t : best;
    }
    return best;
}

static double pipelined(kf_program *p, const float *x, float *y, size_t n, int reps, kf_host_stats *st)
{
    double best = 1e30;
    kf_host_array in = { (void *)x, KF_F32, 1, { (int64_t)n } }, out = { y, KF_F32, 1, { (int64_t)n } };
    kf_host_options o = { .stats = st };
    for (int r = 0; r < reps; r++) {
        memset(y, 0, n * sizeof *y);
        double t0 = now();
        TRY(kf_run_host(p, &in, 1, NULL, 0, &out, 1, &o));
        double t = now() - t0;
        best = t < best ? t : best;
    }
    return best;
}

/* Pinned copy rates in bytes per second: upload alone, download alone, and
 * both at once on two streams (their sum). */
static void copy_rates(float *hx, float *hy, size_t bytes, double *up, double *down, double *both)
{
    kf_buffer *a, *b;
    kf_stream *s1, *s2;
    TRY(kf_buffer_alloc(ctx, bytes, &a));
    TRY(kf_buffer_alloc(ctx, bytes, &b));
    TRY(kf_stream_create(ctx, &s1));
    TRY(kf_stream_create(ctx, &s2));
    *up = *down = *both = 0;
    for (int r = 0; r < 3; r++) {
        double t0 = now();
        TRY(kf_upload(a, 0, hx, bytes, s1));
        TRY(kf_stream_sync(ctx, s1));
        double t1 = now();
        TRY(kf_download(hy, b, 0, bytes, s2));
        TRY(kf_stream_sync(ctx, s2));
        double t2 = now();
        TRY(kf_upload(a, 0, hx, bytes, s1));
        TRY(kf_download(hy, b, 0, bytes, s2));
        TRY(kf_stream_sync(ctx, s1));
        TRY(kf_stream_sync(ctx, s2));
        double t3 = now();
        if ((double)bytes / (t1 - t0) > *up)
            *up = (double)bytes / (t1 - t0);
        if ((double)bytes / (t2 - t1) > *down)
            *down = (double)bytes / (t2 - t1);
        if (2.0 * (double)bytes / (t3 - t2) > *both)
            *both = 2.0 * (double)bytes / (t3 - t2);
    }
    kf_stream_destroy(s1);
    kf_stream_destroy(s2);
    kf_buffer_free(a);
    kf_buffer_free(b);
}

int main(int argc, char **argv)
{
    double mib = argc > 1 ? atof(argv[1]) : 16;
    if (mib <= 0) {
        fprintf(stderr, "usage: host_pipeline [MiB of input, default 16]\n");
        return 2;
    }
    size_t n = (size_t)(mib * (1 << 20)) / sizeof(float), bytes = n * sizeof(float);
    char why[512];
    if (kf_context_create(NULL, &ctx, why, sizeof why) != KF_OK) {
        fprintf(stderr, "no device: %s\n", why);
        return 1;
    }
    kf_device_info info;
    kf_context_info(ctx, &info);
    printf("device: %s (%s)\n", info.name, kf_backend_name(info.backend));

    kf_graph *g = kf_graph_new("x5");
    kf_dim d = KF_SYM("n");
    kf_node x = kf_input(g, "x", KF_F32, 1, &d), a = x;
    for (int i = 0; i < 4; i++)
        a = kf_binary(g, KF_OP_ADD, a, x);
    kf_output(g, a, "y");
    kf_program *p;
    TRY(kf_compile(ctx, g, &p));

    float *px = malloc(bytes), *py = malloc(bytes), *kx, *ky;
    if (!px || !py) {
        fprintf(stderr, "out of memory for %zu bytes\n", bytes);
        return 1;
    }
    TRY(kf_host_alloc(ctx, bytes, (void **)&kx));
    TRY(kf_host_alloc(ctx, bytes, (void **)&ky));
    for (size_t i = 0; i < n; i++)
        px[i] = kx[i] = (float)(i % 1024) * 0.25f;

    double up, down, both;
    copy_rates(kx, ky, bytes, &up, &down, &both);
    double moved = 2.0 * (double)bytes; /* input up, output down */
    printf("pinned copies: upload %.2f GB/s, download %.2f GB/s, both at once %.2f GB/s in total\n", up * 1e-9,
           down * 1e-9, both * 1e-9);
    printf("bound for %.0f MiB in and out: %.2f GB/s (upload and download overlapped)\n", mib, both * 1e-9);

    kf_buffer *bx, *by;
    TRY(kf_buffer_alloc(ctx, bytes, &bx));
    TRY(kf_buffer_alloc(ctx, bytes, &by));
    bool ok = true;
    kf_host_stats st;
    double t = sequential(p, px, py, n, bx, by, 3);
    ok &= check(px, py, n);
    printf("%-34s %8.2f GB/s  %.2f of the bound\n", "sequential, pageable:", moved / t * 1e-9, moved / t / both);
    t = sequential(p, kx, ky, n, bx, by, 3);
    ok &= check(kx, ky, n);
    printf("%-34s %8.2f GB/s  %.2f of the bound\n", "sequential, pinned:", moved / t * 1e-9, moved / t / both);
    kf_buffer_free(bx);
    kf_buffer_free(by);
    t = pipelined(p, px, py, n, 3, &st);
    ok &= check(px, py, n);
    printf("%-34s %8.2f GB/s  %.2f of the bound (%lld chunks of %lld, %d streams, %llu bytes staged)\n",
           "kf_run_host, pageable:", moved / t * 1e-9, moved / t / both, (long long)st.chunks,
           (long long)st.chunk_elems, st.streams, (unsigned long long)st.staged_bytes);
    t = pipelined(p, kx, ky, n, 3, &st);
    ok &= check(kx, ky, n);
    printf("%-34s %8.2f GB/s  %.2f of the bound (%lld chunks of %lld, %d streams)\n", "kf_run_host, pinned:",
           moved / t * 1e-9, moved / t / both, (long long)st.chunks, (long long)st.chunk_elems, st.streams);
    printf("results: %s\n", ok ? "correct" : "WRONG");

    free(px);
    free(py);
    kf_graph_free(g);
    kf_context_destroy(ctx); /* releases kx, ky, p */
    return ok ? 0 : 1;
}
