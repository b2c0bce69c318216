/* A loop of small fused calls, the seed problem of docs/examples/threads.md:
 * f64 gather-boxplus out = log((1+exp(a[perm]+b)) / (exp(a[perm])+exp(b)))
 * on n elements, called again and again from 1 host thread, from T host
 * threads on one context (one stream each), and replayed from a capture;
 * with --procs P also from P processes of one thread each.  Prints calls
 * per second and the fraction of wall time the device was busy.
 *   threads [--n N] [--calls C] [--threads T] [--procs P] [--chunk K]
 * Busy time: the device time of one call is measured once, with events
 * around 100 calls queued back to back behind a spacer (copies that keep
 * the device busy until the host has queued all 100, so no host time gets
 * between the events); a loop's busy fraction is its calls times that
 * time over the loop's wall time.  The timed loops themselves record no
 * events: they are what a program would run.  With several streams,
 * kernels of different streams overlap on the device, so the summed work
 * may pass 100% of the wall time. */
#define _POSIX_C_SOURCE 200809L
#include "kfuse.h"

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct setup {
    kf_context *ctx;
    kf_graph *g;
    kf_program *prog;
    kf_buffer *a, *perm, *b;
    int64_t n;
    double *ha, *hb;
    int32_t *hperm;
} setup;

typedef struct loop {
    setup *su;
    kf_stream *s;
    kf_buffer *out;
    int calls;
    kf_status status;
    pthread_barrier_t *start;
} loop;

static int64_t opt_n = 100000;
static int opt_calls = 100, opt_threads = 4, opt_procs = 0, opt_chunk = 100;
static double call_ms; /* device time of one call (call_device_ms) */

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int fail(kf_context *ctx, const char *what, kf_status s)
{
    fprintf(stderr, "threads: %s: %s: %s\n", what, kf_status_string(s), ctx ? kf_context_error(ctx) : "");
    return 1;
}

static kf_graph *boxplus_graph(void)
{
    kf_graph *g = kf_graph_new("boxplus");
    kf_dim n = KF_SYM("n");
    kf_node a = kf_input(g, "a", KF_F64, 1, &n), perm = kf_input(g, "perm", KF_I32, 1, &n);
    kf_node b = kf_input(g, "b", KF_F64, 1, &n);
    kf_node ap = kf_take(g, a, perm);
    kf_node num = kf_binary(g, KF_OP_ADD, kf_lit_f(g, KF_F64, 1.0),
                            kf_unary(g, KF_OP_EXP, kf_binary(g, KF_OP_ADD, ap, b)));
    kf_node den = kf_binary(g, KF_OP_ADD, kf_unary(g, KF_OP_EXP, ap), kf_unary(g, KF_OP_EXP, b));
    kf_output(g, kf_unary(g, KF_OP_LOG, kf_binary(g, KF_OP_DIV, num, den)), "out");
    return g;
}

/* Context, program and inputs (random a, b in [-3, 3], perm a permutation). */
static kf_status setup_open(setup *su)
{
    memset(su, 0, sizeof *su);
    su->n = opt_n;
    char why[512];
    kf_status s = kf_context_create(NULL, &su->ctx, why, sizeof why);
    if (s != KF_OK) {
        fprintf(stderr, "threads: no device: %s\n", why);
        return s;
    }
    su->g = boxplus_graph();
    size_t n = (size_t)su->n;
    su->ha = malloc(n * sizeof *su->ha);
    su->hb = malloc(n * sizeof *su->hb);
    su->hperm = malloc(n * sizeof *su->hperm);
    if (!su->ha || !su->hb || !su->hperm)
        return KF_ERR_NO_MEMORY;
    uint64_t x = 12345;
    for (size_t i = 0; i < n; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        su->ha[i] = (double)(x >> 11) / 9007199254740992.0 * 6 - 3;
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        su->hb[i] = (double)(x >> 11) / 9007199254740992.0 * 6 - 3;
        su->hperm[i] = (int32_t)i;
    }
    for (size_t i = n - 1; i > 0; i--) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        size_t j = (size_t)((x >> 33) % (i + 1));
        int32_t t = su->hperm[i];
        su->hperm[i] = su->hperm[j];
        su->hperm[j] = t;
    }
    if ((s = kf_compile(su->ctx, su->g, &su->prog)) != KF_OK || (s = kf_buffer_alloc(su->ctx, n * 8, &su->a)) != KF_OK ||
        (s = kf_buffer_alloc(su->ctx, n * 8, &su->b)) != KF_OK ||
        (s = kf_buffer_alloc(su->ctx, n * 4, &su->perm)) != KF_OK ||
        (s = kf_upload(su->a, 0, su->ha, n * 8, NULL)) != KF_OK ||
        (s = kf_upload(su->b, 0, su->hb, n * 8, NULL)) != KF_OK ||
        (s = kf_upload(su->perm, 0, su->hperm, n * 4, NULL)) != KF_OK)
        fail(su->ctx, "setup", s);
    return s;
}

static void setup_close(setup *su)
{
    kf_context_destroy(su->ctx); /* and everything made from it */
    kf_graph_free(su->g);
    free(su->ha);
    free(su->hb);
    free(su->hperm);
}

static kf_status run_call(loop *l)
{
    int64_t shape[1] = { l->su->n };
    kf_view in[3] = { kf_view_dense(l->su->a, 0, KF_F64, 1, shape), kf_view_dense(l->su->perm, 0, KF_I32, 1, shape),
                      kf_view_dense(l->su->b, 0, KF_F64, 1, shape) };
    kf_view out = kf_view_dense(l->out, 0, KF_F64, 1, shape);
    return kf_run(l->su->prog, l->s, in, 3, NULL, 0, &out, 1);
}

/* The loop's stream and output. */
static kf_status loop_open(loop *l, setup *su, int calls)
{
    memset(l, 0, sizeof *l);
    l->su = su;
    l->calls = calls;
    kf_status s = kf_stream_create(su->ctx, &l->s);
    if (s == KF_OK)
        s = kf_buffer_alloc(su->ctx, (size_t)su->n * 8, &l->out);
    return s;
}

static void loop_close(loop *l)
{
    kf_buffer_free(l->out);
    kf_stream_destroy(l->s);
}

/* The device time of one call: events around 100 calls queued behind a
 * spacer of device-to-device copies long enough (about 2 ms on a GPU) for
 * the host to queue all of them before the first starts. */
static kf_status call_device_ms(setup *su, double *ms)
{
    loop l;
    kf_event *e0 = NULL, *e1 = NULL;
    kf_buffer *pad = NULL;
    kf_device_info info;
    kf_context_info(su->ctx, &info);
    size_t half = (size_t)32 << 20;
    int copies = info.gpu ? 64 : 2, calls = 100;
    kf_status s = loop_open(&l, su, calls);
    if (s == KF_OK)
        s = kf_buffer_alloc(su->ctx, 2 * half, &pad);
    if (s == KF_OK)
        s = kf_event_create(su->ctx, &e0);
    if (s == KF_OK)
        s = kf_event_create(su->ctx, &e1);
    if (s == KF_OK)
        s = run_call(&l); /* warm up */
    for (int i = 0; i < copies && s == KF_OK; i++)
        s = kf_copy(pad, (size_t)(i % 2) * half, pad, (size_t)(1 - i % 2) * half, half, l.s);
    if (s == KF_OK)
        s = kf_event_record(e0, l.s);
    for (int i = 0; i < calls && s == KF_OK; i++)
        s = run_call(&l);
    if (s == KF_OK)
        s = kf_event_record(e1, l.s);
    float t = 0;
    if (s == KF_OK)
        s = kf_event_sync(e1);
    if (s == KF_OK)
        s = kf_event_elapsed(e0, e1, &t);
    *ms = (double)t / calls;
    kf_event_destroy(e0);
    kf_event_destroy(e1);
    kf_buffer_free(pad);
    loop_close(&l);
    return s;
}

/* l->calls runs, then a sync. */
static void *call_loop(void *arg)
{
    loop *l = arg;
    if (l->start)
        pthread_barrier_wait(l->start);
    kf_status s = KF_OK;
    for (int i = 0; i < l->calls && s == KF_OK; i++)
        s = run_call(l);
    if (s == KF_OK)
        s = kf_stream_sync(l->su->ctx, l->s);
    l->status = s;
    return NULL;
}

static void report(const char *mode, double calls, double wall, const char *extra)
{
    printf("%-10s %10.0f calls/s, device busy %5.1f%% of wall time%s\n", mode, calls / wall,
           100.0 * calls * call_ms / 1e3 / wall, extra);
}

/* The output of l against the interpreter. */
static int check(setup *su, loop *l)
{
    size_t n = (size_t)su->n;
    double *got = malloc(n * 8);
    kf_host_array in[3] = { { su->ha, KF_F64, 1, { su->n } }, { su->hperm, KF_I32, 1, { su->n } },
                            { su->hb, KF_F64, 1, { su->n } } };
    kf_host_array want;
    char err[256];
    if (!got || kf_download(got, l->out, 0, n * 8, NULL) != KF_OK ||
        kf_interpret(su->g, in, 3, &want, 1, err, sizeof err) != KF_OK) {
        free(got);
        return fail(su->ctx, "check", KF_ERR_INVALID_ARG);
    }
    /* out is near 0 where the log's argument is near 1: errors relative to
     * the largest |out| */
    double maxerr = 0, scale = 0;
    for (size_t i = 0; i < n; i++)
        scale = fmax(scale, fabs(((double *)want.data)[i]));
    for (size_t i = 0; i < n; i++) {
        double e = fabs(got[i] - ((double *)want.data)[i]) / scale;
        maxerr = isnan(e) ? INFINITY : fmax(maxerr, e);
    }
    kf_free(want.data);
    free(got);
    bool ok = maxerr <= 1e-12;
    printf("check: %s (largest error %.2g of the largest |out|)\n", ok ? "ok" : "FAILED", maxerr);
    return ok ? 0 : 1;
}

static int one_thread(setup *su, int calls, double *rate)
{
    loop l;
    kf_status s = loop_open(&l, su, calls);
    if (s != KF_OK)
        return fail(su->ctx, "one thread", s);
    double t0 = now_s();
    call_loop(&l);
    double wall = now_s() - t0;
    if (l.status != KF_OK)
        return fail(su->ctx, "one thread", l.status);
    if (rate) { /* in a child process: the rate only */
        *rate = calls / wall;
        loop_close(&l);
        return 0;
    }
    report("1 thread", calls, wall, "");
    int bad = check(su, &l);
    loop_close(&l);
    return bad;
}

static int many_threads(setup *su, int nthreads, int calls)
{
    loop *l = calloc((size_t)nthreads, sizeof *l);
    pthread_t *th = calloc((size_t)nthreads, sizeof *th);
    pthread_barrier_t start;
    if (!l || !th)
        return fail(NULL, "threads", KF_ERR_NO_MEMORY);
    pthread_barrier_init(&start, NULL, (unsigned)nthreads + 1);
    kf_status s = KF_OK;
    for (int i = 0; i < nthreads; i++) {
        if ((s = loop_open(&l[i], su, calls)) != KF_OK)
            return fail(su->ctx, "threads", s);
        l[i].start = &start;
        pthread_create(&th[i], NULL, call_loop, &l[i]);
    }
    pthread_barrier_wait(&start);
    double t0 = now_s();
    for (int i = 0; i < nthreads; i++)
        pthread_join(th[i], NULL);
    double wall = now_s() - t0;
    int bad = 0;
    for (int i = 0; i < nthreads; i++)
        if (l[i].status != KF_OK)
            bad = fail(su->ctx, "threads", l[i].status);
    char mode[32], extra[64];
    snprintf(mode, sizeof mode, "%d threads", nthreads);
    snprintf(extra, sizeof extra, " (%d streams, summed)", nthreads);
    if (!bad) {
        report(mode, (double)nthreads * calls, wall, extra);
        bad = check(su, &l[nthreads - 1]);
    }
    for (int i = 0; i < nthreads; i++)
        loop_close(&l[i]);
    pthread_barrier_destroy(&start);
    free(l);
    free(th);
    return bad;
}

/* Capture 'chunk' calls once, launch the replay until 'calls' calls ran. */
static int replayed(setup *su, int calls, int chunk)
{
    if (chunk > calls)
        chunk = calls;
    int launches = (calls + chunk - 1) / chunk;
    loop l;
    kf_replay *r = NULL;
    kf_status s = loop_open(&l, su, launches);
    if (s == KF_OK)
        s = kf_capture_begin(su->ctx, l.s);
    for (int i = 0; i < chunk && s == KF_OK; i++)
        s = run_call(&l);
    if (s == KF_OK)
        s = kf_capture_end(su->ctx, l.s, &r);
    if (s != KF_OK)
        return fail(su->ctx, "capture", s);
    double t0 = now_s();
    for (int i = 0; i < launches && s == KF_OK; i++)
        s = kf_replay_launch(r, l.s);
    if (s == KF_OK)
        s = kf_stream_sync(su->ctx, l.s);
    double wall = now_s() - t0;
    if (s != KF_OK)
        return fail(su->ctx, "replay", s);
    char extra[96];
    snprintf(extra, sizeof extra, " (%d calls captured, %d launches)", chunk, launches);
    report("replay", (double)launches * chunk, wall, extra);
    int bad = check(su, &l);
    kf_replay_free(r);
    loop_close(&l);
    return bad;
}

/* P processes, each with its own context doing the one-thread loop; all
 * start together once every one is set up.  Before any context exists in
 * this process (CUDA does not survive fork). */
static int processes(int nprocs, int calls)
{
    int ready[2], go[2], res[2];
    if (pipe(ready) || pipe(go) || pipe(res))
        return fail(NULL, "pipe", KF_ERR_IO);
    for (int p = 0; p < nprocs; p++) {
        pid_t pid = fork();
        if (pid < 0)
            return fail(NULL, "fork", KF_ERR_IO);
        if (pid == 0) {
            setup su;
            double rate = 0;
            char c = setup_open(&su) == KF_OK ? 1 : 0;
            if (write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) != 1)
                _exit(1);
            int bad = c ? one_thread(&su, calls, &rate) : 1;
            if (write(res[1], &rate, sizeof rate) != (ssize_t)sizeof rate) /* rate 0 on failure */
                bad = 1;
            setup_close(&su);
            _exit(bad);
        }
    }
    int ok = 1;
    for (int p = 0; p < nprocs; p++) {
        char c = 0;
        ok &= read(ready[0], &c, 1) == 1 && c == 1;
    }
    double t0 = now_s();
    for (int p = 0; p < nprocs; p++)
        ok &= write(go[1], "\1", 1) == 1;
    double sum = 0, rate;
    for (int p = 0; p < nprocs && ok; p++) {
        ok &= read(res[0], &rate, sizeof rate) == (ssize_t)sizeof rate && rate > 0;
        sum += rate;
    }
    double wall = now_s() - t0;
    int status, bad = 0;
    while (wait(&status) > 0)
        bad |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    if (!ok || bad)
        return fail(NULL, "processes", KF_ERR_DEVICE);
    char mode[32];
    snprintf(mode, sizeof mode, "%d procs", nprocs);
    printf("%-10s %10.0f calls/s (all together; their own loops: %.0f calls/s summed)\n", mode,
           (double)nprocs * calls / wall, sum);
    return 0;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long x = v ? strtol(v, NULL, 10) : 0;
        if (x <= 0 || (strcmp(a, "--n") && strcmp(a, "--calls") && strcmp(a, "--threads") && strcmp(a, "--procs") &&
                       strcmp(a, "--chunk"))) {
            fprintf(stderr, "usage: threads [--n N] [--calls C] [--threads T] [--procs P] [--chunk K]\n");
            return 2;
        }
        i++;
        if (strcmp(a, "--n") == 0)
            opt_n = x;
        else if (strcmp(a, "--calls") == 0)
            opt_calls = (int)x;
        else if (strcmp(a, "--threads") == 0)
            opt_threads = (int)x;
        else if (strcmp(a, "--procs") == 0)
            opt_procs = (int)x;
        else
            opt_chunk = (int)x;
    }
    int bad = opt_procs > 0 ? processes(opt_procs, opt_calls) : 0;
    setup su;
    if (setup_open(&su) != KF_OK)
        return 1;
    kf_device_info info;
    kf_context_info(su.ctx, &info);
    printf("threads: %s on %s, boxplus gather of %lld f64, %d calls per thread, %d kernel(s) per call\n",
           kf_backend_name(info.backend), info.name, (long long)opt_n, opt_calls, kf_program_num_kernels(su.prog));
    kf_status s = call_device_ms(&su, &call_ms);
    if (s != KF_OK)
        return fail(su.ctx, "device time of a call", s);
    printf("device time of one call: %.2f us (100 calls back to back, events)\n", call_ms * 1e3);
    bad |= one_thread(&su, opt_calls, NULL);
    bad |= many_threads(&su, opt_threads, opt_calls);
    bad |= replayed(&su, opt_calls, opt_chunk);
    setup_close(&su);
    return bad;
}
