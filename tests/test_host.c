/* kf_run_host against the reference interpreter and kf_run, on one backend
 * per process: explicit graphs (elementwise, broadcast, gather, full, row
 * and column reductions, several outputs, f64, integers, a scalar input,
 * graphs that cannot be chunked), the codegen and fusion corpora and
 * random graphs, with chunk counts of 1, 2 and odd splits, 1 to 3 streams,
 * pageable and kf_host_alloc'd memory, staged and direct copies,
 * caller-given (poisoned) and allocated outputs; a staging pool of a few
 * small slots so that chunks are capped and whole arrays go through it
 * piece by piece; several threads sharing the pool; and the error paths.
 * Outputs are compared with kf_rg_compare.  Usage (in tests/): test_host
 * cpu|opencl|cuda; KFUSE_TEST_RANDOM (random graphs, 30) and
 * KFUSE_TEST_SEED (the first one's index i, default 0; seed 5000 + i). */
#include "check.h"
#include "kfsample.h"
#include "randgraph.h"
#include "runtime.h"

#include <pthread.h>
#include <stdio.h>

static const char corpus[] =
    "kfuse 1\n"
    "graph ew(x: f32[n], y: f32[n]) -> (z) {\n  a = mul x, y\n  z = add a, x\n}\n"
    "graph bcast(x: f32[n,k], b: f32[k], c: f32[1,k]) -> (y) {\n  a = mul x, b\n  y = add a, c\n}\n"
    "graph gather(v: f64[m], p: i64[n]) -> (g) {\n  g = take v, p\n}\n"
    "graph dot(x: f32[n], y: f32[n]) -> (s) {\n  p = mul x, y\n  s = sum p\n}\n"
    "graph rows(x: f32[n,k]) -> (r, i) {\n  r = max x, axes=[1]\n  i = argmax x, axes=[1]\n}\n"
    "graph cols(x: f32[n,k]) -> (c, m, lo, hi) {\n  c = sum x, axes=[0]\n  m = mean x, axes=[0], keepdims=true\n"
    "  lo = min x, axes=[0]\n  hi = max x\n}\n"
    "graph multi(x: f64[n], y: f64[n]) -> (a, b, s, q) {\n  a = add x, y\n  b = mul x, y\n  s = sum b\n"
    "  q = prod (add (mul y, 0.001), 1.0)\n}\n"
    "graph ints(x: i32[n,3], u: u8[n,3]) -> (s, mx, p, w) {\n  s = sum x, axes=[0]\n  mx = max u, axes=[0]\n"
    "  p = prod x\n  w = min x, axes=[0,1]\n}\n"
    "graph saxpy(alpha: f32, x: f32[n], y: f32[n]) -> (z) {\n  ax = mul alpha, x\n  z = add ax, y\n}\n"
    "graph wholeout(x: f32[n], b: f32[k]) -> (y, w) {\n  y = add x, x\n  w = mul b, b\n}\n"
    "graph iota(x: f32[n]) -> (y) {\n  i = iota f32[n], axis=0\n  y = add x, i\n}\n"
    "graph center(x: f64[n]) -> (y) {\n  m = mean x\n  y = sub x, m\n}\n"
    "graph amax(x: f32[n]) -> (i) {\n  i = argmax x\n}\n"
    "graph selftake(v: f32[n], p: i32[n]) -> (g) {\n  g = take v, p\n}\n"
    "graph lit(x: f32[300]) -> (y) {\n  y = mul x, x\n}\n";

/* Why each graph that cannot be chunked says so (a word of the reason). */
static const char *const unchunkable[][2] = {
    { "iota", "iota" }, { "center", "reduction" }, { "amax", "argmax" }, { "selftake", "gathers" },
    { "lit", "symbolic leading" },
};

typedef struct variant {
    int64_t chunk;       /* chunk_elems; -1: half the axis (2 chunks) */
    int streams;
    kf_staging staging;
    bool pinned_in, pinned_out, given_out;
} variant;

static const variant variants[] = {
    { 0, 0, KF_STAGING_AUTO, false, false, false },
    { 7, 2, KF_STAGING_ALWAYS, false, false, true },
    { 3, 3, KF_STAGING_ALWAYS, true, true, true },
    { -1, 1, KF_STAGING_NEVER, false, false, true },
    { 1, 2, KF_STAGING_ALWAYS, false, true, true },
    { (int64_t)1 << 40, 2, KF_STAGING_ALWAYS, true, false, false },
    { 4999, 3, KF_STAGING_ALWAYS, false, false, true },
};

typedef struct tcase {
    const kf_graph *g;
    kf_program *prog;
    kf_rg_sizes sizes;
    int nin, narr, nsc, nout;
    kf_host_array *in, *arr, *ref;
    double **slack;      /* kf_rg_sum_slack of ref */
    const void **sc;
    void **dev;          /* kf_run's outputs */
    kf_status want;
    bool exact;          /* no float sum, prod or mean: kf_run's bits exactly */
    bool reduces;
} tcase;

static size_t arr_bytes(const kf_host_array *a)
{
    size_t n = kf_dtype_size(a->dtype);
    for (int d = 0; d < a->rank; d++)
        n *= (size_t)a->shape[d];
    return n;
}

static int64_t arr_numel(const kf_host_array *a) { return (int64_t)(arr_bytes(a) / kf_dtype_size(a->dtype)); }

/* Every output of one kf_run_host against the interpreter (and kf_run). */
static void check_outputs(tcase *t, kf_host_array *got, const char *label)
{
    for (int j = 0; j < t->nout; j++) {
        kf_host_array *r = &t->ref[j];
        CHECK_MSG(got[j].data && got[j].dtype == r->dtype && got[j].rank == r->rank &&
                      memcmp(got[j].shape, r->shape, sizeof(int64_t) * (size_t)r->rank) == 0,
                  "%s: output %d not described", label, j);
        if (!got[j].data)
            continue;
        int64_t first = -1, n = arr_numel(r), bad = kf_rg_compare(t->g, j, got[j].data, r, n, false, t->slack, &first);
        CHECK_MSG(bad == 0, "%s: output '%s' (%s, %lld elements): %lld mismatches, first at %lld: got %.9g want %.9g",
                  label, kf_graph_output_name(t->g, j), kf_dtype_name(r->dtype), (long long)n, (long long)bad,
                  (long long)first, bad ? rt_load(got[j].data, r->dtype, first) : 0.0,
                  bad ? rt_load(r->data, r->dtype, first) : 0.0);
        if (t->exact && t->dev[j])
            CHECK_MSG(memcmp(got[j].data, t->dev[j], arr_bytes(r)) == 0, "%s: output '%s' differs from kf_run's",
                      label, kf_graph_output_name(t->g, j));
    }
}

static void *copy_to(kf_context *ctx, bool pinned, const void *src, size_t bytes)
{
    void *p = NULL;
    if (pinned)
        CHECK_STATUS(kf_host_alloc(ctx, bytes ? bytes : 1, &p), KF_OK);
    else
        p = malloc(bytes ? bytes : 1);
    if (p && src)
        memcpy(p, src, bytes);
    return p;
}

static void release(kf_context *ctx, bool pinned, void *p)
{
    if (pinned)
        CHECK_STATUS(kf_host_free(ctx, p), KF_OK);
    else
        free(p);
}

/* One kf_run_host of t under v; fills *stats. */
static void run_variant(kf_context *ctx, tcase *t, const variant *v, int64_t axis_len, const char *label,
                        kf_host_stats *stats)
{
    kf_host_array *in = calloc((size_t)t->narr + 1, sizeof *in), *out = calloc((size_t)t->nout + 1, sizeof *out);
    for (int i = 0; i < t->narr; i++) {
        in[i] = t->arr[i];
        in[i].data = copy_to(ctx, v->pinned_in, t->arr[i].data, arr_bytes(&t->arr[i]));
    }
    for (int j = 0; j < t->nout && v->given_out; j++) {
        out[j] = t->ref[j];
        out[j].data = copy_to(ctx, v->pinned_out, NULL, arr_bytes(&t->ref[j]));
        memset(out[j].data, 0xFF, arr_bytes(&t->ref[j])); /* poison: NaN, -1, true */
    }
    int64_t chunk = v->chunk >= 0 ? v->chunk : (axis_len + 1) / 2 > 0 ? (axis_len + 1) / 2 : 1;
    kf_host_options o = { .chunk_elems = chunk, .streams = v->streams, .staging = v->staging, .stats = stats };
    kf_status s = kf_run_host(t->prog, in, t->narr, t->sc, t->nsc, out, t->nout, &o);
    CHECK_MSG(s == t->want, "%s: kf_run_host gave %s (%s), want %s", label, kf_status_string(s),
              kf_context_error(ctx), kf_status_string(t->want));
    if (s == t->want)
        check_outputs(t, out, label);
    if (s == t->want && stats->chunkable && chunk > 0 && axis_len > 0) {
        CHECK_MSG(stats->chunk_elems >= 1 && stats->chunk_elems <= chunk &&
                      stats->chunks == (axis_len + stats->chunk_elems - 1) / stats->chunk_elems,
                  "%s: %lld chunks of %lld for length %lld, chunk_elems %lld", label, (long long)stats->chunks,
                  (long long)stats->chunk_elems, (long long)axis_len, (long long)chunk);
        if (v->pinned_in && v->pinned_out && v->given_out && !t->reduces)
            CHECK_MSG(stats->staged_bytes == 0, "%s: %llu bytes staged from pinned memory", label,
                      (unsigned long long)stats->staged_bytes);
    }
    for (int i = 0; i < t->narr; i++)
        release(ctx, v->pinned_in, in[i].data);
    for (int j = 0; j < t->nout; j++)
        if (v->given_out)
            release(ctx, v->pinned_out, out[j].data);
        else
            kf_free(out[j].data);
    free(in);
    free(out);
}

/* The reference results: the interpreter's, and kf_run's on the device. */
static bool prepare(kf_context *ctx, tcase *t, uint64_t seed, double bad_index, const char *label)
{
    const kf_graph *g = t->g;
    t->nin = g->ninputs;
    t->nout = g->noutputs;
    t->in = calloc((size_t)t->nin + 1, sizeof *t->in);
    t->arr = calloc((size_t)t->nin + 1, sizeof *t->arr);
    t->sc = calloc((size_t)t->nin + 1, sizeof *t->sc);
    t->ref = calloc((size_t)t->nout + 1, sizeof *t->ref);
    t->dev = calloc((size_t)t->nout + 1, sizeof *t->dev);
    t->exact = true;
    for (int32_t i = 0; i < g->nnodes; i++) {
        const kf_irnode *x = &g->nodes[i];
        t->reduces |= kf_ir_op((kf_op)x->op)->kind == KF_KIND_REDUCE;
        if ((x->op == KF_OP_SUM || x->op == KF_OP_PROD || x->op == KF_OP_MEAN) && kf_dt_is_float((kf_dtype)x->dtype))
            t->exact = false;
    }
    if (kf_rg_inputs(g, seed, &t->sizes, bad_index, false, t->in) != KF_OK)
        return false;
    for (int i = 0; i < t->nin; i++) {
        if (g->nodes[g->inputs[i]].scalar)
            t->sc[t->nsc++] = t->in[i].data;
        else
            t->arr[t->narr++] = t->in[i];
    }
    char err[512];
    t->want = kf_interpret(g, t->in, t->nin, t->ref, t->nout, err, sizeof err);
    CHECK_MSG(t->want == KF_OK || t->want == KF_ERR_INDEX, "%s: interpreter: %s", label, err);
    if (t->want != KF_OK && t->want != KF_ERR_INDEX)
        return false;
    t->slack = kf_rg_sum_slack(g, t->in, t->nin, t->ref);
    /* kf_run on the device */
    kf_view *views = calloc((size_t)t->narr + 1, sizeof *views), *outs = calloc((size_t)t->nout + 1, sizeof *outs);
    bool ok = true;
    for (int i = 0; ok && i < t->narr; i++) {
        kf_buffer *b = NULL;
        ok = kf_buffer_alloc(ctx, arr_bytes(&t->arr[i]), &b) == KF_OK &&
             kf_upload(b, 0, t->arr[i].data, arr_bytes(&t->arr[i]), NULL) == KF_OK;
        views[i] = kf_view_dense(b, 0, t->arr[i].dtype, t->arr[i].rank, t->arr[i].shape);
    }
    ok = ok && kf_run(t->prog, NULL, views, t->narr, t->sc, t->nsc, outs, t->nout) == KF_OK;
    kf_status ss = kf_stream_sync(ctx, NULL);
    CHECK_MSG(ok && ss == t->want, "%s: kf_run: %s", label, kf_context_error(ctx));
    for (int j = 0; ok && j < t->nout; j++) {
        t->dev[j] = malloc(arr_bytes(&t->ref[j]) + 1);
        CHECK_STATUS(kf_download(t->dev[j], outs[j].buf, 0, arr_bytes(&t->ref[j]), NULL), KF_OK);
    }
    for (int i = 0; i < t->narr; i++)
        kf_buffer_free(views[i].buf);
    for (int j = 0; j < t->nout; j++)
        kf_buffer_free(outs[j].buf);
    free(views);
    free(outs);
    return true;
}

static void finish(tcase *t)
{
    for (int j = 0; j < t->nout; j++) {
        kf_free(t->ref[j].data);
        free(t->dev[j]);
    }
    kf_rg_slack_free(t->slack, t->nout);
    kf_rg_free_inputs(t->in, t->nin);
    free(t->in);
    free(t->arr);
    free(t->sc);
    free(t->ref);
    free(t->dev);
}

static int graphs_run;

/* Every variant of g at each length of n; 'why' is the word of the reason
 * when g cannot be chunked, "" when it can, NULL when either may be. */
static void run_graph(kf_context *ctx, const kf_graph *g, const int64_t *lens, int nlens, uint64_t seed,
                      const char *why, double bad_index)
{
    kf_program *prog = NULL;
    kf_status s = kf_compile(ctx, g, &prog);
    if (s == KF_ERR_UNSUPPORTED) /* f64 or f16 on a device without them */
        return;
    CHECK_MSG(s == KF_OK, "graph %s: kf_compile: %s", kf_graph_name(g), kf_context_error(ctx));
    if (s != KF_OK)
        return;
    graphs_run++;
    for (int li = 0; li < nlens; li++) {
        tcase t = { .g = g, .prog = prog, .sizes = { lens[li], 3, 5 } };
        char label[160];
        if (!kf_rg_fits(g, &t.sizes, 1 << 20))
            continue;
        snprintf(label, sizeof label, "%s n=%lld", kf_graph_name(g), (long long)lens[li]);
        if (!prepare(ctx, &t, seed + (uint64_t)li, bad_index, label)) {
            finish(&t);
            continue;
        }
        int64_t axis_len = 0;
        for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
            /* tiny chunks of long axes: thousands of launches, no news */
            if (variants[v].chunk > 0 && variants[v].chunk < 64 && lens[li] > 1000)
                continue;
            char vl[200];
            snprintf(vl, sizeof vl, "%s variant %zu", label, v);
            kf_host_stats st;
            run_variant(ctx, &t, &variants[v], axis_len, vl, &st);
            if (v == 0) {
                axis_len = st.axis[0] ? kf_rg_sym_value(&t.sizes, st.axis) : 0;
                if (why && why[0]) {
                    CHECK_MSG(!st.chunkable && st.chunks == 1, "%s: chunked, yet it cannot be", vl);
                    CHECK_CONTAINS(st.why, why);
                } else if (why && t.want == KF_OK) {
                    CHECK_MSG(st.chunkable, "%s: not chunked: %s", vl, st.why);
                }
            }
        }
        finish(&t);
    }
    kf_program_free(prog);
}

/* -- Threads sharing the staging pool --------------------------------------------------- */

typedef struct hammer_arg {
    kf_context *ctx;
    kf_program *prog;
    int failures;
} hammer_arg;

static void *hammer(void *p)
{
    hammer_arg *h = p;
    enum { N = 20000 };
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y), *z = malloc(N * sizeof *z);
    for (int it = 0; it < 4; it++) {
        for (int i = 0; i < N; i++) {
            x[i] = (float)(i % 97) + (float)it;
            y[i] = (float)(i % 13);
        }
        kf_host_array in[2] = { { x, KF_F32, 1, { N } }, { y, KF_F32, 1, { N } } };
        kf_host_array out[1] = { { z, KF_F32, 1, { N } } };
        kf_host_options o = { .chunk_elems = 3001 + it, .streams = 2, .staging = KF_STAGING_ALWAYS };
        if (kf_run_host(h->prog, in, 2, NULL, 0, out, 1, &o) != KF_OK)
            h->failures++;
        for (int i = 0; i < N; i++)
            if (z[i] != x[i] * y[i] + x[i]) {
                h->failures++;
                break;
            }
    }
    free(x);
    free(y);
    free(z);
    return NULL;
}

static void test_threads(kf_context *ctx, kf_module *m)
{
    kf_program *prog;
    CHECK_STATUS(kf_compile(ctx, kf_module_find(m, "ew"), &prog), KF_OK);
    hammer_arg a[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        a[i] = (hammer_arg){ ctx, prog, 0 };
        pthread_create(&th[i], NULL, hammer, &a[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        CHECK_MSG(a[i].failures == 0, "thread %d: %d failures", i, a[i].failures);
    }
    kf_program_free(prog);
}

/* -- Errors ------------------------------------------------------------------------------ */

static void test_errors(kf_context *ctx, kf_module *m)
{
    kf_program *p;
    CHECK_STATUS(kf_compile(ctx, kf_module_find(m, "ew"), &p), KF_OK);
    float x[9] = { 0 }, y[9] = { 0 }, z[9];
    double xd[8] = { 0 };
    kf_host_array in[2] = { { x, KF_F32, 1, { 8 } }, { y, KF_F32, 1, { 8 } } };
    kf_host_array out[1] = { { NULL, KF_F32, 0, { 0 } } };
    in[0].data = NULL;
    CHECK_STATUS(kf_run_host(p, in, 2, NULL, 0, out, 1, NULL), KF_ERR_INVALID_ARG);
    CHECK_CONTAINS(kf_context_error(ctx), "input 'x': data is NULL");
    in[0] = (kf_host_array){ xd, KF_F64, 1, { 8 } };
    CHECK_STATUS(kf_run_host(p, in, 2, NULL, 0, out, 1, NULL), KF_ERR_TYPE);
    CHECK_CONTAINS(kf_context_error(ctx), "input 'x': the array is f64, the graph wants f32");
    in[0] = (kf_host_array){ x, KF_F32, 2, { 2, 4 } };
    CHECK_STATUS(kf_run_host(p, in, 2, NULL, 0, out, 1, NULL), KF_ERR_SHAPE);
    CHECK_CONTAINS(kf_context_error(ctx), "rank 2");
    in[0] = (kf_host_array){ x, KF_F32, 1, { 8 } };
    in[1].shape[0] = 9;
    CHECK_STATUS(kf_run_host(p, in, 2, NULL, 0, out, 1, NULL), KF_ERR_SHAPE);
    CHECK_CONTAINS(kf_context_error(ctx), "symbol 'n' is 8 from an earlier input but 9 in input 'y'");
    in[1].shape[0] = 8;
    kf_host_array bad = { z, KF_F32, 1, { 9 } };
    CHECK_STATUS(kf_run_host(p, in, 2, NULL, 0, &bad, 1, NULL), KF_ERR_SHAPE);
    CHECK_CONTAINS(kf_context_error(ctx), "output 'z': dimension 0 of the array is 9, the graph gives 8");
    bad.dtype = KF_I32;
    CHECK_STATUS(kf_run_host(p, in, 2, NULL, 0, &bad, 1, NULL), KF_ERR_TYPE);
    CHECK_STATUS(kf_run_host(p, in, 1, NULL, 0, out, 1, NULL), KF_ERR_INVALID_ARG);
    CHECK_CONTAINS(kf_context_error(ctx), "takes 2 array inputs, 1 given");
    CHECK_STATUS(kf_run_host(p, in, 2, NULL, 0, out, 2, NULL), KF_ERR_INVALID_ARG);
    CHECK_STATUS(kf_run_host(p, NULL, 2, NULL, 0, out, 1, NULL), KF_ERR_INVALID_ARG);
    CHECK_STATUS(kf_run_host(NULL, in, 2, NULL, 0, out, 1, NULL), KF_ERR_INVALID_ARG);
    kf_host_options o = { .streams = 99 };
    CHECK_STATUS(kf_run_host(p, in, 2, NULL, 0, out, 1, &o), KF_ERR_INVALID_ARG);
    CHECK_CONTAINS(kf_context_error(ctx), "streams 99");
    o = (kf_host_options){ .chunk_elems = -1 };
    CHECK_STATUS(kf_run_host(p, in, 2, NULL, 0, out, 1, &o), KF_ERR_INVALID_ARG);
    CHECK(out[0].data == NULL); /* nothing allocated by failed runs */
    kf_program_free(p);

    CHECK_STATUS(kf_compile(ctx, kf_module_find(m, "saxpy"), &p), KF_OK);
    const void *sc[1] = { NULL };
    CHECK_STATUS(kf_run_host(p, in, 2, sc, 1, out, 1, NULL), KF_ERR_INVALID_ARG);
    CHECK_CONTAINS(kf_context_error(ctx), "scalar 0 is NULL");
    CHECK_STATUS(kf_run_host(p, in, 2, NULL, 0, out, 1, NULL), KF_ERR_INVALID_ARG);
    kf_program_free(p);

    void *h = NULL;
    CHECK_STATUS(kf_host_alloc(ctx, 0, &h), KF_ERR_INVALID_ARG);
    CHECK_STATUS(kf_host_alloc(ctx, 100, NULL), KF_ERR_INVALID_ARG);
    CHECK_STATUS(kf_host_alloc(ctx, 100, &h), KF_OK);
    CHECK(h != NULL && (uintptr_t)h % 64 == 0);
    CHECK_STATUS(kf_host_free(ctx, x), KF_ERR_INVALID_ARG);
    CHECK_CONTAINS(kf_context_error(ctx), "not memory from kf_host_alloc");
    CHECK_STATUS(kf_host_free(ctx, NULL), KF_OK);
    CHECK_STATUS(kf_host_free(ctx, h), KF_OK);
    CHECK_STATUS(kf_host_free(ctx, h), KF_ERR_INVALID_ARG); /* twice */
    CHECK_STATUS(kf_host_alloc(ctx, 4096, &h), KF_OK);     /* left to kf_context_destroy */

    kf_context *c2 = NULL;
    char why[512];
    kf_context_options co = { .backend = ctx->info.backend };
    setenv("KFUSE_STAGING", "4y64M", 1);
    CHECK_STATUS(kf_context_create(&co, &c2, why, sizeof why), KF_ERR_INVALID_ARG);
    CHECK_CONTAINS(why, "KFUSE_STAGING='4y64M' is not SLOTSxSIZE");
    unsetenv("KFUSE_STAGING");
    co.staging_slots = 65;
    CHECK_STATUS(kf_context_create(&co, &c2, why, sizeof why), KF_ERR_INVALID_ARG);
    CHECK_CONTAINS(why, "staging_slots");
}

int main(int argc, char **argv)
{
    kf_backend b = rt_backend_arg("test_host", argc == 2 ? argv[1] : NULL);
    if (b == KF_BACKEND_AUTO)
        return 2;
    /* 3 slots of 64 KiB: chunks are capped by a slot and whole arrays of
     * 100000 elements go through the pool in pieces */
    kf_context_options o = { .backend = b, .device = 0, .staging_slots = 3, .staging_slot_bytes = 64 << 10 };
    kf_context *ctx;
    char why[1024];
    kf_status s = kf_context_create(&o, &ctx, why, sizeof why);
    if (s == KF_ERR_NO_DEVICE || s == KF_ERR_UNSUPPORTED) {
        printf("SKIP %s: %s\n", argv[1], why);
        return kf_test_done();
    }
    CHECK_MSG(s == KF_OK, "%s: %s", argv[1], why);
    if (s != KF_OK)
        return kf_test_done();
    kf_device_info info;
    kf_context_info(ctx, &info);
    printf("%s: %s\n", argv[1], info.name);
    kf_module *m = NULL;
    CHECK_STATUS(kf_module_parse(corpus, sizeof corpus - 1, "corpus", NULL, &m), KF_OK);
    if (!m || kf_module_num_graphs(m) == 0) {
        printf("%s\n", kf_module_error(m));
        return kf_test_done();
    }
    test_errors(ctx, m);

    static const int64_t lens[] = { 1, 2, 7, 1000, 100000 };
    for (int i = 0; i < kf_module_num_graphs(m); i++) {
        kf_graph *g = kf_module_graph(m, i);
        const char *w = "";
        for (size_t u = 0; u < sizeof unchunkable / sizeof unchunkable[0]; u++)
            if (strcmp(kf_graph_name(g), unchunkable[u][0]) == 0)
                w = unchunkable[u][1];
        run_graph(ctx, g, lens, 5, 100 + (uint64_t)i * 10, w, 0);
    }
    /* a take index out of range: KF_ERR_INDEX, every output still written */
    static const int64_t mid[] = { 1000 };
    run_graph(ctx, kf_module_find(m, "gather"), mid, 1, 7, "", 0.05);
    test_threads(ctx, m);

    /* the codegen and fusion corpora: chunked or not, whatever they are */
    static const char *const files[] = { "codegen/corpus.kir", "fuse/reductions.kir", "fuse/outputs.kir",
                                         "fuse/sharing.kir" };
    static const int64_t flens[] = { 1, 7, 1000 };
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        kf_module *fm = NULL;
        CHECK_STATUS(kf_module_parse_file(files[f], NULL, &fm), KF_OK);
        for (int i = 0; fm && i < kf_module_num_graphs(fm); i++)
            run_graph(ctx, kf_module_graph(fm, i), flens, 3, 300 + (uint64_t)i, NULL, 0);
        kf_module_free(fm);
    }

    const char *nr = getenv("KFUSE_TEST_RANDOM"), *first = getenv("KFUSE_TEST_SEED");
    int nrandom = nr ? atoi(nr) : 30, i0 = first ? atoi(first) : 0;
    kf_rg_options ro = { .no_f16 = !info.fp16, .no_f64 = !info.fp64 };
    static const int64_t rlens[] = { 1, 9, 300 };
    for (int i = i0; i < i0 + nrandom; i++) {
        kf_graph *g = kf_rg_graph("rand", 5000 + (uint64_t)i, &ro);
        if (g)
            run_graph(ctx, g, rlens, 3, 900 + (uint64_t)i, NULL, 0);
        kf_graph_free(g);
    }
    printf("%s: %d graphs run through kf_run_host\n", argv[1], graphs_run);
    CHECK(graphs_run > 20);
    kf_module_free(m);
    kf_context_destroy(ctx);

    /* the default pool (a 64 MiB slot) and options */
    kf_context_options d = { .backend = b, .device = 0 };
    CHECK_STATUS(kf_context_create(&d, &ctx, why, sizeof why), KF_OK);
    CHECK_STATUS(kf_module_parse(corpus, sizeof corpus - 1, "corpus", NULL, &m), KF_OK);
    kf_graph *dot = kf_module_find(m, "dot");
    run_graph(ctx, dot, (const int64_t[]){ 100000 }, 1, 3, "", 0);
    kf_module_free(m);
    kf_context_destroy(ctx);
    return kf_test_done();
}
