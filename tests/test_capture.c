/* Capture and replay: a sequence (uploads, kf_run of two programs with
 * scalars, a gather with a reduction, events, downloads) captured once on a
 * stream and replayed many times on two streams, with fresh inputs written
 * into the captured uploads' host memory before each launch; every result
 * against the reference interpreter, outputs poisoned first.  Plus the
 * error cases.  Usage: test_capture cuda|opencl|cpu */
#include "check.h"
#include "kfsample.h"

#include <stdio.h>
#include <stdlib.h>

enum { N = 4099, REPLAYS = 12 };

/* y = alpha * x + beta */
static kf_graph *affine_graph(kf_dtype t)
{
    kf_graph *g = kf_graph_new("affine");
    kf_dim n = KF_SYM("n");
    kf_node alpha = kf_scalar(g, "alpha", t), beta = kf_scalar(g, "beta", t);
    kf_node x = kf_input(g, "x", t, 1, &n);
    kf_output(g, kf_binary(g, KF_OP_ADD, kf_binary(g, KF_OP_MUL, alpha, x), beta), "y");
    return g;
}

/* out = log((1 + exp(a[perm] + b)) / (exp(a[perm]) + exp(b))) and its sum */
static kf_graph *boxplus_graph(kf_dtype t)
{
    kf_graph *g = kf_graph_new("boxplus");
    kf_dim n = KF_SYM("n");
    kf_node a = kf_input(g, "a", t, 1, &n), perm = kf_input(g, "perm", KF_I32, 1, &n), b = kf_input(g, "b", t, 1, &n);
    kf_node ap = kf_take(g, a, perm);
    kf_node num = kf_binary(g, KF_OP_ADD, kf_lit_f(g, t, 1.0), kf_unary(g, KF_OP_EXP, kf_binary(g, KF_OP_ADD, ap, b)));
    kf_node den = kf_binary(g, KF_OP_ADD, kf_unary(g, KF_OP_EXP, ap), kf_unary(g, KF_OP_EXP, b));
    kf_node out = kf_unary(g, KF_OP_LOG, kf_binary(g, KF_OP_DIV, num, den));
    kf_output(g, out, "out");
    kf_output(g, kf_reduce(g, KF_OP_SUM, out, 0, NULL, false), "total");
    return g;
}

typedef struct fixture {
    kf_context *ctx;
    kf_dtype t;
    size_t es;
    kf_graph *ga, *gb;
    kf_program *pa, *pb;
    kf_buffer *bx, *bperm, *by1, *by2, *bout, *btot;
    void *hx, *hout, *htot;
    int32_t *hperm;
    double alpha1, beta1, alpha2, beta2;  /* the values captured */
} fixture;

static kf_host_array harr(void *data, kf_dtype t, int rank, int64_t n)
{
    kf_host_array a = { data, t, rank, { n } };
    return a;
}

/* The reference: affine twice, then boxplus, by the interpreter. */
static void reference(fixture *f, void **out, void **tot)
{
    unsigned char s[4][8];
    rt_store(s[0], f->t, 0, f->alpha1);
    rt_store(s[1], f->t, 0, f->beta1);
    rt_store(s[2], f->t, 0, f->alpha2);
    rt_store(s[3], f->t, 0, f->beta2);
    kf_host_array in[3], y1, y2, o[2];
    char err[256];
    in[0] = harr(s[0], f->t, 0, 0);
    in[1] = harr(s[1], f->t, 0, 0);
    in[2] = harr(f->hx, f->t, 1, N);
    CHECK_STATUS(kf_interpret(f->ga, in, 3, &y1, 1, err, sizeof err), KF_OK);
    in[0] = harr(s[2], f->t, 0, 0);
    in[1] = harr(s[3], f->t, 0, 0);
    in[2] = y1;
    CHECK_STATUS(kf_interpret(f->ga, in, 3, &y2, 1, err, sizeof err), KF_OK);
    in[0] = y2;
    in[1] = harr(f->hperm, KF_I32, 1, N);
    in[2] = harr(f->hx, f->t, 1, N);
    CHECK_STATUS(kf_interpret(f->gb, in, 3, o, 2, err, sizeof err), KF_OK);
    kf_free(y1.data);
    kf_free(y2.data);
    *out = o[0].data;
    *tot = o[1].data;
}

static void fresh_inputs(fixture *f, rt_rng *rng, bool bad_index)
{
    for (int i = 0; i < N; i++) {
        rt_store(f->hx, f->t, i, rt_value(rng, f->t, 0));
        f->hperm[i] = (int32_t)(rt_next(rng) % N);
    }
    if (bad_index)
        f->hperm[N / 2] = N + 5;
}

/* Capture the sequence on s: [e0] upload x, perm; y1 = affine(x); y2 =
 * affine(y1) with other scalars; [e1]; boxplus(y2, perm, x); download; [e2]. */
static kf_status capture(fixture *f, kf_stream *s, kf_event **ev, kf_replay **out)
{
    kf_context *ctx = f->ctx;
    int64_t n[1] = { N };
    unsigned char alpha[8], beta[8];
    const void *sc[2] = { alpha, beta };
    kf_view x = kf_view_dense(f->bx, 0, f->t, 1, n), y1 = kf_view_dense(f->by1, 0, f->t, 1, n);
    kf_view y2 = kf_view_dense(f->by2, 0, f->t, 1, n), perm = kf_view_dense(f->bperm, 0, KF_I32, 1, n);
    kf_view outs[2] = { kf_view_dense(f->bout, 0, f->t, 1, n), kf_view_dense(f->btot, 0, f->t, 0, NULL) };
    kf_view bin[3] = { y2, perm, x };
    CHECK_STATUS(kf_capture_begin(ctx, s), KF_OK);
    CHECK_STATUS(kf_event_record(ev[0], s), KF_OK);
    CHECK_STATUS(kf_upload(f->bx, 0, f->hx, N * f->es, s), KF_OK);
    CHECK_STATUS(kf_upload(f->bperm, 0, f->hperm, N * sizeof(int32_t), s), KF_OK);
    rt_store(alpha, f->t, 0, f->alpha1);
    rt_store(beta, f->t, 0, f->beta1);
    CHECK_STATUS(kf_run(f->pa, s, &x, 1, sc, 2, &y1, 1), KF_OK);
    /* scalars are copied when captured: these values must not reach the first run */
    rt_store(alpha, f->t, 0, f->alpha2);
    rt_store(beta, f->t, 0, f->beta2);
    CHECK_STATUS(kf_run(f->pa, s, &y1, 1, sc, 2, &y2, 1), KF_OK);
    rt_store(alpha, f->t, 0, 1e6);
    CHECK_STATUS(kf_event_record(ev[1], s), KF_OK);
    CHECK_STATUS(kf_stream_wait(s, ev[1]), KF_OK); /* recorded earlier in this capture */
    CHECK_STATUS(kf_run(f->pb, s, bin, 3, NULL, 0, outs, 2), KF_OK);
    CHECK_STATUS(kf_download(f->hout, f->bout, 0, N * f->es, s), KF_OK);
    CHECK_STATUS(kf_download(f->htot, f->btot, 0, f->es, s), KF_OK);
    CHECK_STATUS(kf_event_record(ev[2], s), KF_OK);
    kf_status st = kf_capture_end(ctx, s, out);
    CHECK_MSG(st == KF_OK, "kf_capture_end: %s", kf_context_error(ctx));
    return st;
}

/* Launch r on s with fresh inputs, poisoned outputs (host and device);
 * check against the interpreter. */
static void replay_once(fixture *f, kf_replay *r, kf_stream *s, rt_rng *rng, int rep)
{
    fresh_inputs(f, rng, false);
    memset(f->hout, 0xFF, N * f->es);
    memset(f->htot, 0xFF, f->es);
    CHECK_STATUS(kf_upload(f->bout, 0, f->hout, N * f->es, NULL), KF_OK);
    CHECK_STATUS(kf_upload(f->btot, 0, f->htot, f->es, NULL), KF_OK);
    CHECK_STATUS(kf_replay_launch(r, s), KF_OK);
    kf_status st = kf_stream_sync(f->ctx, s);
    CHECK_MSG(st == KF_OK, "replay %d: sync: %s", rep, kf_context_error(f->ctx));
    void *want, *wtot;
    reference(f, &want, &wtot);
    double maxerr;
    int64_t first;
    int64_t bad = rt_compare(f->hout, want, f->t, N, &maxerr, &first);
    CHECK_MSG(bad == 0, "replay %d: %lld of %d elements differ, first %lld: got %.9g want %.9g", rep, (long long)bad,
              N, (long long)first, bad ? rt_load(f->hout, f->t, first) : 0, bad ? rt_load(want, f->t, first) : 0);
    bad = rt_compare(f->htot, wtot, f->t, 1, &maxerr, &first);
    CHECK_MSG(bad == 0, "replay %d: total is %.9g, want %.9g", rep, rt_load(f->htot, f->t, 0), rt_load(wtot, f->t, 0));
    kf_free(want);
    kf_free(wtot);
}

static void test_sequence(fixture *f, kf_context *other)
{
    kf_context *ctx = f->ctx;
    kf_stream *s, *s2;
    kf_event *ev[3];
    CHECK_STATUS(kf_stream_create(ctx, &s), KF_OK);
    CHECK_STATUS(kf_stream_create(ctx, &s2), KF_OK);
    for (int i = 0; i < 3; i++)
        CHECK_STATUS(kf_event_create(ctx, &ev[i]), KF_OK);
    rt_rng rng = { 99 };
    fresh_inputs(f, &rng, false);
    memset(f->hout, 0xFF, N * f->es);
    kf_replay *r = NULL;
    if (capture(f, s, ev, &r) != KF_OK)
        return;
    /* nothing ran during the capture */
    CHECK_STATUS(kf_stream_sync(ctx, s), KF_OK);
    unsigned char poison[8];
    memset(poison, 0xFF, sizeof poison);
    CHECK(memcmp(f->hout, poison, f->es) == 0);
    CHECK_STATUS(kf_event_sync(ev[2]), KF_ERR_INVALID_ARG); /* not recorded before a launch */

    for (int rep = 0; rep < REPLAYS; rep++)
        replay_once(f, r, rep % 3 == 2 ? s2 : s, &rng, rep);
    float ms = -1;
    CHECK_STATUS(kf_event_elapsed(ev[0], ev[2], &ms), KF_OK);
    CHECK(ms >= 0);

    /* launches on two streams with no sync between them stay ordered */
    fresh_inputs(f, &rng, false);
    CHECK_STATUS(kf_replay_launch(r, s), KF_OK);
    CHECK_STATUS(kf_replay_launch(r, s2), KF_OK);
    CHECK_STATUS(kf_stream_sync(ctx, s2), KF_OK);
    void *want, *wtot;
    reference(f, &want, &wtot);
    double maxerr;
    int64_t first;
    CHECK(rt_compare(f->hout, want, f->t, N, &maxerr, &first) == 0);
    kf_free(want);
    kf_free(wtot);

    /* a take out of range in a replayed kernel: reported by the sync after it */
    fresh_inputs(f, &rng, true);
    CHECK_STATUS(kf_replay_launch(r, s2), KF_OK);
    CHECK_STATUS(kf_stream_sync(ctx, s2), KF_ERR_INDEX);
    CHECK_CONTAINS(kf_context_error(ctx), "replay");
    replay_once(f, r, s2, &rng, REPLAYS); /* and cleared */

    /* errors */
    if (other) {
        kf_stream *os;
        CHECK_STATUS(kf_stream_create(other, &os), KF_OK);
        CHECK_STATUS(kf_replay_launch(r, os), KF_ERR_CONTEXT);
        CHECK_CONTAINS(kf_context_error(ctx), "another context");
        kf_stream_destroy(os);
    }
    CHECK_STATUS(kf_capture_begin(ctx, NULL), KF_ERR_INVALID_ARG);
    CHECK_CONTAINS(kf_context_error(ctx), "default stream cannot be captured");
    kf_replay *r2 = NULL;
    CHECK_STATUS(kf_capture_end(ctx, s, &r2), KF_ERR_INVALID_ARG);
    CHECK_CONTAINS(kf_context_error(ctx), "not capturing");
    CHECK(r2 == NULL);
    CHECK_STATUS(kf_capture_begin(ctx, s), KF_OK);
    CHECK_STATUS(kf_capture_begin(ctx, s), KF_ERR_INVALID_ARG);
    CHECK_CONTAINS(kf_context_error(ctx), "capturing already");
    int64_t n[1] = { N };
    kf_view x = kf_view_dense(f->bx, 0, f->t, 1, n), y = kf_view_dense(NULL, 0, f->t, 1, n);
    unsigned char one[8];
    rt_store(one, f->t, 0, 1.0);
    const void *sc[2] = { one, one };
    CHECK_STATUS(kf_run(f->pa, s, &x, 1, sc, 2, &y, 1), KF_ERR_INVALID_ARG);
    CHECK_CONTAINS(kf_context_error(ctx), "output 'y': the view has no buffer and the stream is capturing");
    CHECK(y.buf == NULL);
    CHECK_STATUS(kf_stream_sync(ctx, s), KF_ERR_INVALID_ARG);
    CHECK_CONTAINS(kf_context_error(ctx), "capturing");
    CHECK_STATUS(kf_replay_launch(r, s), KF_ERR_INVALID_ARG);
    CHECK_STATUS(kf_capture_end(ctx, s, &r2), KF_OK); /* an empty sequence */
    CHECK_STATUS(kf_replay_launch(r2, s), KF_OK);
    CHECK_STATUS(kf_stream_sync(ctx, s), KF_OK);
    kf_replay_free(r2);

    /* freeing what a replay uses disables it */
    kf_buffer *tmp;
    CHECK_STATUS(kf_buffer_alloc(ctx, 64, &tmp), KF_OK);
    CHECK_STATUS(kf_capture_begin(ctx, s), KF_OK);
    CHECK_STATUS(kf_upload(tmp, 0, f->hx, 64, s), KF_OK);
    CHECK_STATUS(kf_capture_end(ctx, s, &r2), KF_OK);
    kf_buffer_free(tmp);
    CHECK_STATUS(kf_replay_launch(r2, s), KF_ERR_INVALID_ARG);
    CHECK_CONTAINS(kf_context_error(ctx), "a buffer the replay uses was freed");
    kf_replay_free(r2);
    kf_program_free(f->pb);
    f->pb = NULL;
    CHECK_STATUS(kf_replay_launch(r, s), KF_ERR_INVALID_ARG);
    CHECK_CONTAINS(kf_context_error(ctx), "a program the replay uses was freed");

    /* a stream destroyed while capturing discards the capture; a replay
     * left alive goes with its context */
    CHECK_STATUS(kf_capture_begin(ctx, s2), KF_OK);
    kf_stream_destroy(s2);
    kf_stream_destroy(s);
    (void)r; /* released by kf_context_destroy */
}

static void run_backend(kf_backend b, const char *name)
{
    kf_context_options o = { .backend = b, .device = 0 };
    kf_context *ctx, *other = NULL;
    char why[1024];
    kf_status s = kf_context_create(&o, &ctx, why, sizeof why);
    if (s == KF_ERR_NO_DEVICE || s == KF_ERR_UNSUPPORTED) {
        printf("SKIP %s: %s\n", name, why);
        return;
    }
    CHECK_MSG(s == KF_OK, "%s: %s", name, why);
    if (s != KF_OK)
        return;
    kf_context_create(&o, &other, NULL, 0);
    kf_device_info info;
    kf_context_info(ctx, &info);
    fixture f = { .ctx = ctx, .t = info.fp64 ? KF_F64 : KF_F32 };
    f.es = kf_dtype_size(f.t);
    f.alpha1 = 0.75, f.beta1 = -0.25, f.alpha2 = -1.5, f.beta2 = 0.5;
    f.ga = affine_graph(f.t);
    f.gb = boxplus_graph(f.t);
    CHECK_STATUS(kf_compile(ctx, f.ga, &f.pa), KF_OK);
    CHECK_STATUS(kf_compile(ctx, f.gb, &f.pb), KF_OK);
    kf_buffer **bufs[] = { &f.bx, &f.by1, &f.by2, &f.bout, &f.btot, &f.bperm };
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        CHECK_STATUS(kf_buffer_alloc(ctx, N * f.es, bufs[i]), KF_OK);
    f.hx = malloc(N * f.es);
    f.hout = malloc(N * f.es);
    f.htot = malloc(f.es);
    f.hperm = malloc(N * sizeof *f.hperm);
    if (f.pa && f.pb && f.hx && f.hout && f.htot && f.hperm)
        test_sequence(&f, other);
    printf("%s: %s: capture and %d replays checked\n", name, info.name, REPLAYS + 2);
    kf_program_free(f.pa);
    kf_program_free(f.pb);
    kf_graph_free(f.ga);
    kf_graph_free(f.gb);
    free(f.hx);
    free(f.hout);
    free(f.htot);
    free(f.hperm);
    kf_context_destroy(other);
    kf_context_destroy(ctx); /* frees the buffers and the replay left alive */
}

int main(int argc, char **argv)
{
    kf_backend b = rt_backend_arg("test_capture", argc == 2 ? argv[1] : NULL);
    if (b == KF_BACKEND_AUTO)
        return 2;
    run_backend(b, argv[1]);
    return kf_test_done();
}
