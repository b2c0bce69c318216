/* Many host threads on one context: 8 threads, each with its own stream
 * and its own graphs (a random elementwise graph and a reduction), run
 * many times on fresh random inputs with every call on the thread's
 * stream, each run checked against the reference interpreter (outputs
 * poisoned first).  Run under ThreadSanitizer by the tsan preset.
 * Usage: test_threads cuda|opencl|cpu  (KFUSE_TEST_THREAD_RUNS: runs per
 * thread, default 24) */
#include "check.h"
#include "kfsample.h"
#include "randgraph.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

enum { THREADS = 8 };

typedef struct worker {
    kf_context *ctx;
    kf_device_info info;
    int id, runs, done;
    char where[128];        /* the run under way */
    char failure[1024];     /* the first failure, "" when none */
} worker;

static void failf(worker *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void failf(worker *w, const char *fmt, ...)
{
    if (w->failure[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->failure, sizeof w->failure, fmt, ap);
    va_end(ap);
}

/* r = sum(alpha * op(x, y), axis 1) and mx = max(x) over [m, n]; op from seed. */
static kf_graph *reduction_graph(uint64_t seed, kf_dtype t)
{
    static const kf_op ops[] = { KF_OP_ADD, KF_OP_MUL, KF_OP_MAX, KF_OP_HYPOT, KF_OP_SUB };
    kf_graph *g = kf_graph_new("reduce");
    kf_dim d[2] = { KF_SYM("m"), KF_SYM("n") };
    kf_node alpha = kf_scalar(g, "alpha", t);
    kf_node x = kf_input(g, "x", t, 2, d), y = kf_input(g, "y", t, 2, d);
    kf_node u = kf_binary(g, KF_OP_MUL, alpha, kf_binary(g, ops[seed % 5], x, y));
    kf_output(g, kf_reduce(g, KF_OP_SUM, u, 1, (int[]){ 1 }, false), "r");
    kf_output(g, kf_reduce(g, KF_OP_RMAX, x, 0, NULL, false), "mx");
    return g;
}

/* One run of p (graph g) on stream s at sizes sz against the interpreter. */
static void run_once(worker *w, kf_stream *s, kf_program *p, const kf_graph *g, uint64_t seed, const kf_rg_sizes *sz)
{
    int ni = kf_graph_num_inputs(g), no = kf_graph_num_outputs(g), na = 0, ns = 0;
    kf_host_array in[16], ref[16];
    kf_view views[16], outs[16];
    const void *scalars[16];
    void *got[16] = { NULL }, *poison[16] = { NULL };
    char err[512];
    if (ni > 16 || no > 16 || kf_rg_inputs(g, seed, sz, 0, false, in) != KF_OK) {
        failf(w, "%s: too many inputs or out of memory", kf_graph_name(g));
        return;
    }
    if (kf_interpret(g, in, ni, ref, no, err, sizeof err) != KF_OK) {
        failf(w, "interpreter: %s", err);
        kf_rg_free_inputs(in, ni);
        return;
    }
    kf_status st = KF_OK;
    for (int i = 0; i < ni && st == KF_OK; i++) {
        if (kf_node_is_scalar(g, kf_graph_input(g, i))) {
            scalars[ns++] = in[i].data;
            continue;
        }
        int64_t n = 1;
        for (int d = 0; d < in[i].rank; d++)
            n *= in[i].shape[d];
        size_t bytes = (size_t)n * kf_dtype_size(in[i].dtype);
        kf_buffer *b = NULL;
        if ((st = kf_buffer_alloc(w->ctx, bytes, &b)) == KF_OK)
            st = kf_upload(b, 0, in[i].data, bytes, s);
        views[na++] = kf_view_dense(b, 0, in[i].dtype, in[i].rank, in[i].shape);
    }
    int nout = 0;
    for (; nout < no && st == KF_OK; nout++) {
        int64_t n = 1;
        for (int d = 0; d < ref[nout].rank; d++)
            n *= ref[nout].shape[d];
        size_t bytes = (size_t)n * kf_dtype_size(ref[nout].dtype);
        kf_buffer *b = NULL;
        got[nout] = malloc(bytes + 1);
        poison[nout] = malloc(bytes + 1);
        st = got[nout] && poison[nout] ? kf_buffer_alloc(w->ctx, bytes, &b) : KF_ERR_NO_MEMORY;
        outs[nout] = kf_view_dense(b, 0, ref[nout].dtype, ref[nout].rank, ref[nout].shape);
        if (st == KF_OK) {
            memset(poison[nout], 0xFF, bytes);
            st = kf_upload(b, 0, poison[nout], bytes, s);
        }
    }
    if (st == KF_OK)
        st = kf_run(p, s, views, na, scalars, ns, outs, no);
    for (int j = 0; j < no && st == KF_OK; j++)
        st = kf_download(got[j], outs[j].buf, 0, kf_buffer_size(outs[j].buf), s);
    if (st == KF_OK)
        st = kf_stream_sync(w->ctx, s);
    if (st != KF_OK)
        failf(w, "%s: %s", kf_status_string(st), kf_context_error(w->ctx));
    for (int j = 0; j < no && st == KF_OK; j++) {
        int64_t n = (int64_t)(kf_buffer_size(outs[j].buf) / kf_dtype_size(ref[j].dtype)), first;
        double maxerr;
        int64_t bad = rt_compare(got[j], ref[j].data, ref[j].dtype, n, &maxerr, &first);
        if (bad)
            failf(w, "output '%s': %lld of %lld elements differ, first at %lld: got %.9g want %.9g",
                  kf_graph_output_name(g, j), (long long)bad, (long long)n, (long long)first,
                  rt_load(got[j], ref[j].dtype, first), rt_load(ref[j].data, ref[j].dtype, first));
    }
    for (int i = 0; i < na; i++)
        kf_buffer_free(views[i].buf);
    for (int j = 0; j < nout; j++) {
        kf_buffer_free(outs[j].buf);
        free(got[j]);
        free(poison[j]);
    }
    for (int j = 0; j < no; j++)
        kf_free(ref[j].data);
    kf_rg_free_inputs(in, ni);
}

static void *work(void *arg)
{
    worker *w = arg;
    kf_stream *s = NULL;
    kf_rg_options ro = { .ops = 8, .no_reduce = true, .no_take = true, .no_f16 = !w->info.fp16,
                         .no_f64 = !w->info.fp64 };
    uint64_t seed = 5000 + (uint64_t)w->id * 101;
    snprintf(w->where, sizeof w->where, "thread %d", w->id);
    kf_graph *g[2] = { kf_rg_graph("elementwise", seed, &ro), reduction_graph(seed, w->info.fp64 ? KF_F64 : KF_F32) };
    kf_program *p[2] = { NULL, NULL };
    if (kf_stream_create(w->ctx, &s) != KF_OK || !g[0] || !g[1] || kf_compile(w->ctx, g[0], &p[0]) != KF_OK ||
        kf_compile(w->ctx, g[1], &p[1]) != KF_OK)
        failf(w, "setup: %s", kf_context_error(w->ctx));
    for (int r = 0; r < w->runs && !w->failure[0]; r++, w->done++) {
        uint64_t h = seed * 31 + (uint64_t)r;
        kf_rg_sizes sz = { 1 + (int64_t)(h * 2654435761u % 3000), 1 + (int64_t)(h % 7), 1 + (int64_t)(h % 5) };
        snprintf(w->where, sizeof w->where, "thread %d run %d (graph %s, seed %llu)", w->id, r,
                 kf_graph_name(g[r % 2]), (unsigned long long)h);
        run_once(w, s, p[r % 2], g[r % 2], h, &sz);
    }
    kf_program_free(p[0]);
    kf_program_free(p[1]);
    kf_graph_free(g[0]);
    kf_graph_free(g[1]);
    kf_stream_destroy(s);
    return NULL;
}

int main(int argc, char **argv)
{
    kf_backend b = rt_backend_arg("test_threads", argc == 2 ? argv[1] : NULL);
    if (b == KF_BACKEND_AUTO)
        return 2;
    kf_context_options o = { .backend = b, .device = 0 };
    kf_context *ctx;
    char why[1024];
    kf_status s = kf_context_create(&o, &ctx, why, sizeof why);
    if (s == KF_ERR_NO_DEVICE || s == KF_ERR_UNSUPPORTED) {
        printf("SKIP %s: %s\n", argv[1], why);
        return 0;
    }
    CHECK_MSG(s == KF_OK, "%s: %s", argv[1], why);
    if (s != KF_OK)
        return kf_test_done();
    const char *env = getenv("KFUSE_TEST_THREAD_RUNS");
    int runs = env && atoi(env) > 0 ? atoi(env) : 24;
    worker w[THREADS];
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker){ .ctx = ctx, .id = i, .runs = runs };
        kf_context_info(ctx, &w[i].info);
        CHECK(pthread_create(&th[i], NULL, work, &w[i]) == 0);
    }
    int total = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        CHECK_MSG(!w[i].failure[0], "%s: %s", w[i].where, w[i].failure);
        CHECK_MSG(w[i].done == runs, "thread %d did %d of %d runs", i, w[i].done, runs);
        total += w[i].done;
    }
    printf("%s: %d threads, %d checked runs\n", argv[1], THREADS, total);
    kf_context_destroy(ctx);
    return kf_test_done();
}
