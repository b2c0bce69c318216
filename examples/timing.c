/* Timing a loop of launches, four ways (docs/examples/timing.md): the host
 * clock around asynchronous kf_run calls (measures only the enqueue), the
 * host clock with a sync after every call (adds the sync latency to every
 * launch), the host clock around the loop with one sync at the end, and
 * device events around the loop.  The context writes a trace
 * (KFUSE_TRACE, else timing.json) that shows where the time went.
 * Usage: example_timing [N [LAUNCHES]]   (defaults 262144 elements, 200 launches) */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <kfuse.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TRY(call)                                                                                   \
    do {                                                                                            \
        kf_status s_ = (call);                                                                      \
        if (s_ != KF_OK) {                                                                          \
            fprintf(stderr, "%s failed: %s: %s\n", #call, kf_status_string(s_), kf_context_error(ctx)); \
            return 1;                                                                               \
        }                                                                                           \
    } while (0)

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void report(const char *how, double ms, int launches, const char *verdict)
{
    printf("  %-44s %9.3f ms  %9.2f us/launch  %s\n", how, ms, ms * 1e3 / launches, verdict);
}

int main(int argc, char **argv)
{
    int64_t n = argc > 1 ? atoll(argv[1]) : 262144;
    int launches = argc > 2 ? atoi(argv[2]) : 200;
    if (n <= 0 || launches <= 0) {
        fprintf(stderr, "usage: example_timing [N [LAUNCHES]]\n");
        return 2;
    }
    /* y = sqrt(x*x + 1) * 0.5: one fused kernel with some arithmetic */
    kf_graph *g = kf_graph_new("hypot1");
    kf_dim dn = KF_SYM("n");
    kf_node x = kf_input(g, "x", KF_F32, 1, &dn);
    kf_node r = kf_unary(g, KF_OP_SQRT, kf_binary(g, KF_OP_ADD, kf_binary(g, KF_OP_MUL, x, x), kf_lit_f(g, KF_F32, 1)));
    kf_output(g, kf_binary(g, KF_OP_MUL, r, kf_lit_f(g, KF_F32, 0.5)), "y");

    /* The trace: KFUSE_TRACE when set (it is read at context creation),
     * else this option. */
    kf_context_options o = { .device = -1, .trace_path = getenv("KFUSE_TRACE") ? NULL : "timing.json" };
    kf_context *ctx = NULL;
    char why[512];
    if (kf_context_create(&o, &ctx, why, sizeof why) != KF_OK) {
        fprintf(stderr, "no device: %s\n", why);
        return 1;
    }
    kf_device_info info;
    kf_context_info(ctx, &info);
    printf("%s (%s): %d launches of y = sqrt(x*x + 1) * 0.5 over %lld floats\n", info.name,
           kf_backend_name(info.backend), launches, (long long)n);

    kf_program *p;
    TRY(kf_compile(ctx, g, &p));
    size_t bytes = (size_t)n * sizeof(float);
    float *hx = malloc(bytes), *hy = malloc(bytes);
    if (!hx || !hy)
        return 1;
    for (int64_t i = 0; i < n; i++)
        hx[i] = (float)(i % 1000) * 0.01f - 5.0f;
    kf_buffer *bx, *by;
    TRY(kf_buffer_alloc(ctx, bytes, &bx));
    TRY(kf_buffer_alloc(ctx, bytes, &by));
    kf_view vx = kf_view_dense(bx, 0, KF_F32, 1, &n), vy = kf_view_dense(by, 0, KF_F32, 1, &n);
    kf_stream *s;
    kf_event *e0, *e1;
    TRY(kf_stream_create(ctx, &s));
    TRY(kf_event_create(ctx, &e0));
    TRY(kf_event_create(ctx, &e1));
    TRY(kf_upload(bx, 0, hx, bytes, s));
    TRY(kf_run(p, s, &vx, 1, NULL, 0, &vy, 1)); /* warm up: first launches load code */
    TRY(kf_stream_sync(ctx, s));

    /* 1. Host clock around asynchronous launches: only the enqueue.  The
     * queued work is paid for by whatever waits next (here a download). */
    double t0 = now_ms();
    for (int i = 0; i < launches; i++)
        TRY(kf_run(p, s, &vx, 1, NULL, 0, &vy, 1));
    double enqueue = now_ms() - t0;
    t0 = now_ms();
    TRY(kf_download(hy, by, 0, bytes, s));
    TRY(kf_stream_sync(ctx, s));
    double next_copy = now_ms() - t0;

    /* 2. A sync after every launch: each pays the round trip to the device. */
    t0 = now_ms();
    for (int i = 0; i < launches; i++) {
        TRY(kf_run(p, s, &vx, 1, NULL, 0, &vy, 1));
        TRY(kf_stream_sync(ctx, s));
    }
    double per_sync = now_ms() - t0;

    /* 3. Host clock around the loop, one sync at the end. */
    t0 = now_ms();
    for (int i = 0; i < launches; i++)
        TRY(kf_run(p, s, &vx, 1, NULL, 0, &vy, 1));
    TRY(kf_stream_sync(ctx, s));
    double loop_sync = now_ms() - t0;

    /* 4. Events around the loop: the device's own clock. */
    TRY(kf_event_record(e0, s));
    for (int i = 0; i < launches; i++)
        TRY(kf_run(p, s, &vx, 1, NULL, 0, &vy, 1));
    TRY(kf_event_record(e1, s));
    TRY(kf_event_sync(e1));
    float events = 0;
    TRY(kf_event_elapsed(e0, e1, &events));

    TRY(kf_download(hy, by, 0, bytes, s));
    TRY(kf_stream_sync(ctx, s));
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++)
        bad += fabsf(hy[i] - sqrtf(hx[i] * hx[i] + 1.0f) * 0.5f) > 1e-5f * (1.0f + fabsf(hy[i]));

    printf("\n");
    report("1. host clock, no sync (WRONG: enqueue only)", enqueue, launches, "");
    printf("     ... and the download after it took %.3f ms: the queued work showed up there\n", next_copy);
    report("2. host clock, sync per launch (WRONG)", per_sync, launches, "adds a sync round trip to each");
    report("3. host clock around loop + one sync (right)", loop_sync, launches, "");
    report("4. events around the loop (right)", events, launches, "device clock");
    kf_stats st;
    kf_context_stats(ctx, &st);
    printf("\n%llu runs, %llu launches, %.3f ms of kernel time measured from the trace's device spans\n",
           (unsigned long long)st.runs, (unsigned long long)st.launches, st.device_busy_ms);
    if (st.trace_path[0])
        printf("trace: %s (written when the context is destroyed; open it in https://ui.perfetto.dev)\n",
               st.trace_path);
    printf("result: %s\n", bad ? "WRONG" : "correct");
    free(hx);
    free(hy);
    kf_context_destroy(ctx);
    kf_graph_free(g);
    return bad ? 1 : 0;
}
