/* Differential runtime tests: every graph of the test corpus, on every
 * backend present, on fresh random inputs of several sizes, dense and as
 * strided views at unaligned offsets, against the reference interpreter
 * (kf_rg_compare: bit for bit where no library function or float sum lies
 * upstream); outputs are poisoned first so an unwritten element fails,
 * and sit between poisoned guards so a write past either end fails.
 * Plus the error paths of the C API.  Usage: test_runtime
 * api|cuda|opencl|cpu [FILE.kir...].  Environment: KFUSE_TEST_RANDOM
 * (random graphs, 200), KFUSE_TEST_SEED (the first one's index i, default
 * 0; graph i has seed 1000 + i), KFUSE_TEST_CORPUS (the corpus folders to
 * run, default "fuse,golden,codegen,runtime"), KFUSE_TEST_FAST_RANDOM (the
 * random graphs the fast-math pass looks at, from the same first seed;
 * default a quarter of KFUSE_TEST_RANDOM). */
#include "cache_util.h"
#include "cached.h"
#include "check.h"
#include "codegen.h"
#include "gpu_order.h"
#include "kfsample.h"
#include "randgraph.h"
#include "runtime.h"
#ifdef KFUSE_WITH_LLVM
#include "cpu.h"
#endif

#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

static const int64_t sizes[] = { 1, 7, 1000, 66000 };
enum { OUT_GUARD = 64 };   /* poisoned bytes on each side of an output (keeps its 16-byte alignment) */
static bool fast_run;      /* the programs run are fast_math ones: run_graph runs only graphs with an op it
                            * approximates, run_case compares as kf_rg_compare says for them */

typedef struct harray {
    kf_host_array a;
    int64_t n;
} harray;

static int64_t shape_numel(const int64_t *shape, int rank)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= shape[i];
    return n;
}

/* Symbol values for a run: the first symbol gets size, others small; no
 * array of more than cap elements. */
static bool bind_syms(const kf_graph *g, int64_t size, int64_t cap, int64_t *symval)
{
    bool bound[64] = { false };
    if (g->nsyms > 64)
        return false;
    for (int32_t s = 0; s < g->nsyms; s++)
        symval[s] = s == 0 ? size : 2 + (size + s) % 5;
    for (int32_t i = 0; i < g->ninputs; i++) {
        const kf_irnode *x = &g->nodes[g->inputs[i]];
        for (int d = 0; d < x->rank; d++)
            if (x->dims[d] < 0)
                bound[KF_IR_SYM_INDEX(x->dims[d])] = true;
    }
    for (int32_t s = 0; s < g->nsyms; s++)
        if (!bound[s])
            return false; /* only iota uses it: nothing binds it at run time */
    /* keep every array of the run small: [n,n,n] at n=66000 is not a test */
    for (int32_t i = 0; i < g->nnodes; i++) {
        const kf_irnode *x = &g->nodes[i];
        double n = 1;
        for (int d = 0; d < x->rank; d++)
            n *= (double)(x->dims[d] < 0 ? symval[KF_IR_SYM_INDEX(x->dims[d])] : x->dims[d]);
        if (n > (double)cap)
            return false;
    }
    return true;
}

/* Upload host array h as a dense view, or as a strided view (stride 2 on
 * the last dim, 1-element offset). */
static kf_status upload_view(kf_context *ctx, const harray *h, bool strided, kf_view *v)
{
    size_t es = kf_dtype_size(h->a.dtype);
    int rank = h->a.rank;
    if (!strided || rank == 0) {
        kf_buffer *b;
        kf_status s = kf_buffer_alloc(ctx, (size_t)h->n * es, &b);
        if (s != KF_OK)
            return s;
        *v = kf_view_dense(b, 0, h->a.dtype, rank, h->a.shape);
        return kf_upload(b, 0, h->a.data, (size_t)h->n * es, NULL);
    }
    size_t total = (size_t)h->n * 2 + 1;
    char *tmp = malloc(total * es + 1);
    kf_buffer *b;
    kf_status s = kf_buffer_alloc(ctx, total * es, &b);
    if (s != KF_OK || !tmp) {
        free(tmp);
        return s != KF_OK ? s : KF_ERR_NO_MEMORY;
    }
    memset(tmp, 0xA5, total * es);
    for (int64_t i = 0; i < h->n; i++)
        memcpy(tmp + (size_t)(1 + 2 * i) * es, (const char *)h->a.data + (size_t)i * es, es);
    *v = kf_view_dense(b, es, h->a.dtype, rank, h->a.shape);
    int64_t st = 2;
    for (int d = rank - 1; d >= 0; d--) {
        v->strides[d] = st;
        st *= h->a.shape[d];
    }
    s = kf_upload(b, 0, tmp, total * es, NULL);
    free(tmp);
    return s;
}

#ifdef KFUSE_WITH_LLVM
/* CPU backend: the run again on 1 and 2 threads must give the same bytes
 * as on 7 (reductions combine in an order fixed by the shape alone). */
static void cpu_thread_counts(kf_context *ctx, kf_program *prog, const kf_view *views, int narr, const void **scalars,
                              int nsc, const kf_view *outs, int nout, const char *label)
{
    static const int counts[] = { 1, 2 };
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        kf_cpu_tune(ctx->dev, counts[c], 0);
        kf_view *again = calloc((size_t)nout + 1, sizeof *again);
        for (int j = 0; j < nout; j++)
            again[j] = kf_view_dense(NULL, 0, outs[j].dtype, outs[j].rank, outs[j].shape);
        CHECK_STATUS(kf_run(prog, NULL, views, narr, scalars, nsc, again, nout), KF_OK);
        kf_stream_sync(ctx, NULL);
        for (int j = 0; j < nout && again[j].buf; j++) {
            size_t bytes = kf_buffer_size(again[j].buf);
            char *a = malloc(bytes + 1), *b = malloc(bytes + 1);
            kf_download(a, outs[j].buf, outs[j].offset, bytes, NULL);
            kf_download(b, again[j].buf, 0, bytes, NULL);
            CHECK_MSG(memcmp(a, b, bytes) == 0, "%s: output %d differs between 7 and %d threads", label, j, counts[c]);
            free(a);
            free(b);
            kf_buffer_free(again[j].buf);
        }
        free(again);
    }
    kf_cpu_tune(ctx->dev, 7, 0);
}
#endif

static int fast_cases_skipped;   /* fast-math cases whose sin or cos arguments left the measured range */

/* Whether every f32, f16 and bf16 sin and cos of g takes arguments of at
 * most 100 in magnitude on these inputs (the interpreter's values, through
 * a copy of g with casts of the arguments as outputs too): where fast
 * math's were measured (1e-5 on [-100, 100] on an H200, docs/codegen.md).
 * Beyond it they are the device's: sincos's arguments a * i reach 66000 a,
 * trighuge's 4e6, and on PoCL sin of a product of sinh's (random seed
 * 9592, about 1e10) was -0.158 where it is 0.703. */
static bool trig_args_small(const kf_graph *g, const kf_host_array *in, int nin)
{
    kf_graph *probe = kf_graph_clone(g);
    bool *added = calloc((size_t)g->nnodes + 1, sizeof *added), ok = probe && added, any = false;
    for (int32_t i = 0; ok && i < g->nnodes; i++) {
        const kf_irnode *x = &g->nodes[i];
        if ((x->op == KF_OP_SIN || x->op == KF_OP_COS) && x->dtype != KF_F64 && !added[x->args[0]]) {
            char name[32];
            snprintf(name, sizeof name, "trig_arg_%d", (int)i);
            added[x->args[0]] = any = true;   /* a cast of it: kf_output would rename a named value */
            kf_node c = kf_cast(probe, x->args[0], (kf_dtype)g->nodes[x->args[0]].dtype);
            ok = c != KF_NONE && kf_output(probe, c, name) == KF_OK;
        }
    }
    int n0 = g->noutputs, n = ok && any ? kf_graph_num_outputs(probe) : 0;
    kf_host_array *r = calloc((size_t)n + 1, sizeof *r);
    char err[256];
    kf_status s = n ? kf_interpret(probe, in, nin, r, n, err, sizeof err) : KF_OK;
    ok = ok && r && (s == KF_OK || s == KF_ERR_INDEX);
    for (int j = 0; j < n && r; j++) {
        int64_t m = shape_numel(r[j].shape, r[j].rank);
        for (int64_t e = 0; ok && j >= n0 && e < m; e++)
            ok = fabs(rt_load(r[j].data, r[j].dtype, e)) <= 100;   /* NaN and inf: not small */
        kf_free(r[j].data);
    }
    free(r);
    free(added);
    kf_graph_free(probe);
    return ok;
}

/* Run g on ctx and on the interpreter for one size, reporting any mismatch. */
static void run_case(kf_context *ctx, kf_program *prog, const kf_graph *g, int64_t size, bool strided, bool specials,
                     uint64_t seed, const char *label)
{
    int64_t symval[64];
    if (!bind_syms(g, size, size > 1 << 21 ? size : 1 << 21, symval))
        return;
    rt_rng rng = { seed };
    int nin = g->ninputs, nout = g->noutputs;
    harray *in = calloc((size_t)nin + 1, sizeof *in);
    kf_host_array *ref = calloc((size_t)nout + 1, sizeof *ref);
    kf_view *views = calloc((size_t)nin + 1, sizeof *views), *outs = calloc((size_t)nout + 1, sizeof *outs);
    const void **scalars = calloc((size_t)nin + 1, sizeof *scalars);
    int narr = 0, nsc = 0;
    for (int i = 0; i < nin; i++) {
        in[i].n = rt_fill_input(g, i, symval, &rng, &in[i].a);
        CHECK_MSG(in[i].n >= 0, "%s: out of host memory", label);
        if (specials && in[i].n >= 0)
            kf_rg_specials(g, i, &in[i].a, seed);
    }
    kf_host_array *hin = calloc((size_t)nin + 1, sizeof *hin);
    for (int i = 0; i < nin; i++)
        hin[i] = in[i].a;
    char err[512] = "";
    bool skip = fast_run && !trig_args_small(g, hin, nin);
    fast_cases_skipped += skip;
    kf_status want = skip ? KF_OK : kf_interpret(g, hin, nin, ref, nout, err, sizeof err);
    CHECK_MSG(want == KF_OK || want == KF_ERR_INDEX, "%s: interpreter: %s", label, err);
    bool ok = !skip && (want == KF_OK || want == KF_ERR_INDEX);
    double **slack = ok ? kf_rg_sum_slack(g, hin, nin, ref) : NULL;
    for (int i = 0; ok && i < nin; i++) {
        if (g->nodes[g->inputs[i]].scalar) {
            scalars[nsc++] = in[i].a.data;
            continue;
        }
        kf_status s = upload_view(ctx, &in[i], strided, &views[narr++]);
        CHECK_MSG(s == KF_OK, "%s: upload: %s", label, kf_context_error(ctx));
        ok = s == KF_OK;
    }
    /* outputs: dense views OUT_GUARD bytes into buffers poisoned with 0xFF
     * (NaN, -1, true), so that an unwritten element fails, and so does a
     * write past either end of the view */
    for (int j = 0; ok && j < nout; j++) {
        size_t bytes = (size_t)shape_numel(ref[j].shape, ref[j].rank) * kf_dtype_size(ref[j].dtype);
        size_t total = bytes + 2 * OUT_GUARD;
        kf_buffer *b;
        ok = kf_buffer_alloc(ctx, total, &b) == KF_OK;
        char *poison = malloc(total);
        if (ok && poison) {
            memset(poison, 0xFF, total);
            kf_upload(b, 0, poison, total, NULL);
            outs[j] = kf_view_dense(b, OUT_GUARD, ref[j].dtype, ref[j].rank, ref[j].shape);
        }
        free(poison);
    }
    if (ok) {
        kf_status s = kf_run(prog, NULL, views, narr, scalars, nsc, outs, nout);
        CHECK_MSG(s == KF_OK, "%s: kf_run: %s: %s", label, kf_status_string(s), kf_context_error(ctx));
        kf_status ss = kf_stream_sync(ctx, NULL);
        CHECK_MSG(ss == want, "%s: sync gave %s, the interpreter %s", label, kf_status_string(ss),
                  kf_status_string(want));
        for (int j = 0; s == KF_OK && j < nout; j++) {
            int64_t n = shape_numel(ref[j].shape, ref[j].rank);
            size_t bytes = (size_t)n * kf_dtype_size(ref[j].dtype), total = bytes + 2 * OUT_GUARD;
            unsigned char *all = malloc(total), *got = all + OUT_GUARD;
            CHECK_STATUS(kf_download(all, outs[j].buf, 0, total, NULL), KF_OK);
            long long over = -1;   /* the first guard byte written, from the view's start */
            for (size_t k = 0; k < 2 * OUT_GUARD && over < 0; k++) {
                size_t at = k < OUT_GUARD ? k : bytes + k;   /* the guard before the view, then the one after */
                if (all[at] != 0xFF)
                    over = (long long)at - OUT_GUARD;
            }
            CHECK_MSG(over < 0, "%s: output '%s' (%zu bytes): a byte at %lld from its start was written", label,
                      kf_graph_output_name(g, j), bytes, over);
            int64_t first = -1, bad = kf_rg_compare(g, j, got, &ref[j], n, fast_run, slack, &first);
            CHECK_MSG(bad == 0, "%s: output '%s' (%s, %lld elements): %lld mismatches, first at %lld: got %.9g want %.9g",
                      label, kf_graph_output_name(g, j), kf_dtype_name(ref[j].dtype), (long long)n, (long long)bad,
                      (long long)first, bad ? rt_load(got, ref[j].dtype, first) : 0.0,
                      bad ? rt_load(ref[j].data, ref[j].dtype, first) : 0.0);
            free(all);
        }
#ifdef KFUSE_WITH_LLVM
        if (s == KF_OK && ctx->info.backend == KF_BACKEND_CPU)
            cpu_thread_counts(ctx, prog, views, narr, scalars, nsc, outs, nout, label);
#endif
    }
    for (int i = 0; i < narr; i++)
        kf_buffer_free(views[i].buf);
    for (int j = 0; j < nout; j++) {
        kf_buffer_free(outs[j].buf);
        if (ok)
            kf_free(ref[j].data);
    }
    kf_rg_slack_free(slack, nout);
    for (int i = 0; i < nin; i++)
        free(in[i].a.data);
    free(in);
    free(hin);
    free(ref);
    free(views);
    free(outs);
    free(scalars);
}

static int graphs_run;

/* Whether the fast-math pass runs g: a graph with an op fast_math
 * approximates, but not where the approximations leave the float
 * tolerance by design (docs/codegen.md, "Fast math").  sin, cos and the
 * logarithms have an absolute error, and so has a sum or difference of
 * approximated values (their relative errors, 1e-5 where exact ones are
 * 1e-7, cancel to an absolute one), so near a zero the relative error has
 * no bound, and an op whose condition has none there either passes it on
 * unbounded: on an H200, s / cos(x) for x in [-2, 2] was 21637 where it
 * is 21543 (random seed 4278), and tan (sin over cos) 64339 where it is
 * 64215.  So not: an f32 tan; a value with such an error in a divisor, a
 * logarithm's, square root's, pow's, atan2's, asin's or acos's operand.
 * (run_case skips the inputs that give sin or cos a large argument:
 * trig_args_small.) */
static bool fast_runs(const kf_graph *g)
{
    if (!kf_rg_fast_math_op(g))
        return false;
    bool *abs_err = calloc(2 * (size_t)g->nnodes + 1, sizeof *abs_err), ok = abs_err != NULL;
    bool *approx = abs_err + g->nnodes;   /* an approximated op upstream */
    for (int32_t i = 0; ok && i < g->nnodes; i++) {   /* operands come before their users */
        const kf_irnode *x = &g->nodes[i];
        kf_op op = (kf_op)x->op;
        bool f32 = kf_dt_is_float((kf_dtype)x->dtype) && x->dtype != KF_F64;
        bool mask[3] = { false, false, false };   /* operands where a near-zero error is unbounded */
        switch (op) {
        case KF_OP_TAN: ok = !f32; break;
        case KF_OP_DIV: case KF_OP_MOD: mask[1] = true; break;
        case KF_OP_POW: case KF_OP_ATAN2: mask[0] = mask[1] = true; break;
        case KF_OP_RCP: case KF_OP_RSQRT: case KF_OP_SQRT: case KF_OP_LOG: case KF_OP_LOG2: case KF_OP_LOG10:
        case KF_OP_LOG1P: case KF_OP_ASIN: case KF_OP_ACOS: mask[0] = true; break;
        default: break;
        }
        abs_err[i] = f32 && (op == KF_OP_SIN || op == KF_OP_COS || op == KF_OP_LOG || op == KF_OP_LOG2 ||
                             op == KF_OP_LOG10);
        approx[i] = kf_rg_fast_math_node(g, i);
        for (int a = 0; a < x->nargs; a++) {
            int32_t y = x->args[a];
            ok = ok && !(a < 3 && mask[a] && abs_err[y]);
            abs_err[i] = abs_err[i] || abs_err[y] || ((op == KF_OP_ADD || op == KF_OP_SUB) && approx[y]);
            approx[i] = approx[i] || approx[y];
        }
    }
    free(abs_err);
    return ok;
}

/* specials: inputs hold special values too (kf_rg_specials) */
static void run_graph(kf_context *ctx, kf_graph *g, const char *file, uint64_t seed, bool specials)
{
    if (fast_run && !fast_runs(g))
        return;
    kf_device_info info;
    kf_context_info(ctx, &info);
    kf_program *prog = NULL;
    kf_status s = kf_compile(ctx, g, &prog);
    /* a device without f16/f64 must say so; anything else must compile */
    if (s == KF_ERR_UNSUPPORTED) {
        CHECK_CONTAINS(kf_context_error(ctx), "f");
        return;
    }
    CHECK_MSG(s == KF_OK, "%s: graph %s: kf_compile on %s: %s", file, kf_graph_name(g), info.name,
              kf_context_error(ctx));
    if (s != KF_OK)
        return;
    graphs_run++;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        for (int strided = 0; strided < 2; strided++) {
            char label[256];
            snprintf(label, sizeof label, "%s %s/%s n=%lld%s%s", kf_backend_name(info.backend), file,
                     kf_graph_name(g), (long long)sizes[i], strided ? " strided" : "", specials ? " specials" : "");
            run_case(ctx, prog, g, sizes[i], strided, specials, seed + i * 2 + (uint64_t)strided, label);
        }
    kf_program_free(prog);
}

static void run_file(kf_context *ctx, const char *path, uint64_t seed)
{
    kf_module *m = NULL;
    if (kf_module_parse_file(path, NULL, &m) != KF_OK) {
        kf_module_free(m);
        return; /* error cases of the parser tests */
    }
    for (int i = 0; i < kf_module_num_graphs(m); i++)
        run_graph(ctx, kf_module_graph(m, i), path, seed + (uint64_t)i * 1000, false);
    kf_module_free(m);
}

static void run_dir(kf_context *ctx, const char *dir, uint64_t seed)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    char **names = NULL;
    int n = 0;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l > 4 && strcmp(e->d_name + l - 4, ".kir") == 0) {
            names = realloc(names, (size_t)(n + 1) * sizeof *names);
            names[n++] = strdup(e->d_name);
        }
    }
    closedir(d);
    for (int i = 0; i < n; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        run_file(ctx, path, seed + (uint64_t)i * 7919);
        free(names[i]);
    }
    free(names);
}

/* -- Error paths ------------------------------------------------------------------ */

static kf_graph *x5_graph(kf_dtype t)
{
    kf_graph *g = kf_graph_new("x5");
    kf_dim n = KF_SYM("n");
    kf_node x = kf_input(g, "x", t, 1, &n);
    kf_node a = kf_binary(g, KF_OP_ADD, x, x);
    a = kf_binary(g, KF_OP_ADD, a, x);
    a = kf_binary(g, KF_OP_ADD, a, x);
    kf_output(g, kf_binary(g, KF_OP_ADD, a, x), "y");
    return g;
}

/* -- Reduction order ---------------------------------------------------------------------
 * Float row sums give exactly the bits of the GPU order (gpu_order.h) on
 * every backend, whichever loads the kernels use: 16-byte vectors where
 * each group of 4 reduced elements is aligned and contiguous, element by
 * element where a row length, offset or row stride breaks that. */

typedef struct order_case {
    int64_t M, L;
    int64_t off[2];   /* elements before the first, per input */
    int64_t rs;       /* row stride in elements (0: L) */
} order_case;

/* Random values on a scale where the order of additions shows. */
static double order_value(uint64_t *h, int64_t i)
{
    *h ^= *h << 13, *h ^= *h >> 7, *h ^= *h << 17;
    return ((double)(*h >> 11) / 9007199254740992.0 * 2 - 1) * (double)(1 + i % 997);
}

static void order_run(kf_context *ctx, kf_program *p, kf_dtype t, int nin, const order_case *c, uint64_t seed)
{
    bool f32 = t == KF_F32;
    size_t es = kf_dtype_size(t);
    int64_t rs = c->rs ? c->rs : c->L, shape[2] = { c->M, c->L };
    kf_view in[2], out;
    memset(&out, 0, sizeof out);
    double *rowv = malloc((size_t)c->L * sizeof *rowv), *host[2] = { NULL, NULL };
    uint64_t h = seed;
    bool ok = rowv != NULL;
    for (int a = 0; a < nin; a++) {
        int64_t n = c->off[a] + c->M * rs;
        char *buf = malloc((size_t)n * es);
        host[a] = malloc((size_t)n * sizeof(double));
        kf_buffer *b = NULL;
        ok = ok && buf && host[a] && kf_buffer_alloc(ctx, (size_t)n * es, &b) == KF_OK;
        for (int64_t i = 0; ok && i < n; i++) {
            double v = order_value(&h, i);
            float f = (float)v;
            host[a][i] = f32 ? f : v;
            memcpy(buf + i * (int64_t)es, f32 ? (const void *)&f : (const void *)&v, es);
        }
        ok = ok && kf_upload(b, 0, buf, (size_t)n * es, NULL) == KF_OK;
        free(buf);
        in[a] = kf_view_dense(b, (size_t)c->off[a] * es, t, 2, shape);
        in[a].strides[0] = rs;
    }
    ok = ok && kf_run(p, NULL, in, nin, NULL, 0, &out, 1) == KF_OK && kf_stream_sync(ctx, NULL) == KF_OK;
    CHECK_MSG(ok, "order [%lld, %lld]: %s", (long long)c->M, (long long)c->L, kf_context_error(ctx));
    char *got = ok ? malloc((size_t)c->M * es) : NULL;
    ok = got && kf_download(got, out.buf, 0, (size_t)c->M * es, NULL) == KF_OK;
    int bad = 0;
    for (int64_t r = 0; ok && r < c->M; r++) {
        for (int64_t i = 0; i < c->L; i++) {
            double v = host[0][c->off[0] + r * rs + i];
            if (nin == 2)   /* the product, rounded to the dtype */
                v = f32 ? (double)(float)(v * host[1][c->off[1] + r * rs + i]) : v * host[1][c->off[1] + r * rs + i];
            rowv[i] = v;
        }
        double want = gpu_order_sum(rowv, c->L, c->M, f32);
        float wf = (float)want;
        bad += memcmp(got + r * (int64_t)es, f32 ? (const void *)&wf : (const void *)&want, es) != 0;
    }
    CHECK_MSG(ok && bad == 0,
              "%s %s of [%lld, %lld] (offsets %lld, %lld, row stride %lld): %d rows differ from the GPU order",
              kf_dtype_name(t), nin == 2 ? "dot" : "sum", (long long)c->M, (long long)c->L, (long long)c->off[0],
              (long long)c->off[1], (long long)rs, bad);
    free(got);
    for (int a = 0; a < nin; a++) {
        kf_buffer_free(in[a].buf);
        free(host[a]);
    }
    kf_buffer_free(out.buf);
    free(rowv);
}

/* The first graph of text compiled on ctx; its module in *keep (or freed
 * when keep is NULL). */
static kf_program *text_program(kf_context *ctx, const char *text, kf_module **keep)
{
    kf_module *m = NULL;
    kf_program *p = NULL;
    kf_status s = kf_module_parse(text, strlen(text), "text", NULL, &m);
    if (s == KF_OK)
        s = kf_compile(ctx, kf_module_graph(m, 0), &p);
    CHECK_MSG(s == KF_OK, "%.40s: %s", text + 8, s == KF_OK ? "" : m ? kf_module_error(m) : kf_context_error(ctx));
    if (keep)
        *keep = m;
    else
        kf_module_free(m);
    return p;
}

static void test_fold_order(kf_context *ctx, bool fp64)
{
    static const order_case cases[] = {
        { 1, 4096, { 0, 0 }, 0 },         /* tile, one tile as vectors */
        { 1, 4098, { 0, 0 }, 0 },         /* L % 4: element by element */
        { 1, 4100, { 0, 0 }, 0 },         /* a whole tile and a tail */
        { 1, (1 << 20) + 4, { 0, 0 }, 0 },/* chunks, then comb */
        { 1, 1 << 16, { 1, 0 }, 0 },      /* x misaligned */
        { 1, 1 << 16, { 0, 3 }, 0 },      /* y misaligned */
        { 37, 5000, { 0, 0 }, 0 },        /* rows of tiles */
        { 1024, 1024, { 0, 0 }, 0 },      /* warp, whole rounds */
        { 4100, 40, { 0, 0 }, 0 },        /* warp, part of a round */
        { 1500, 1001, { 0, 0 }, 0 },      /* warp, L % 4 */
        { 1024, 1020, { 0, 0 }, 1024 },   /* padded rows, aligned */
        { 1024, 1024, { 0, 0 }, 1025 },   /* rows misaligned */
        { 1024, 1024, { 2, 2 }, 0 },      /* 8-byte aligned only */
    };
    kf_program *sum = text_program(ctx, "kfuse 1\ngraph r(x: f32[m, k]) -> (t) {\n  t = sum x, axes=[1]\n}\n", NULL);
    kf_program *dot = text_program(ctx, "kfuse 1\ngraph d(x: f32[m, k], y: f32[m, k]) -> (t) {\n  p = mul x, y\n"
                                        "  t = sum p, axes=[1]\n}\n", NULL);
    kf_program *sum64 =
        fp64 ? text_program(ctx, "kfuse 1\ngraph r(x: f64[m, k]) -> (t) {\n  t = sum x, axes=[1]\n}\n", NULL) : NULL;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (sum)
            order_run(ctx, sum, KF_F32, 1, &cases[i], 7 + i);
        if (dot)
            order_run(ctx, dot, KF_F32, 2, &cases[i], 70 + i);
        if (sum64)
            order_run(ctx, sum64, KF_F64, 1, &cases[i], 700 + i);
    }
    kf_program_free(sum);
    kf_program_free(dot);
    kf_program_free(sum64);
}

enum { NARROW_MAX = 256 };

typedef struct narrow_outs {
    char expr[NARROW_MAX][48];   /* output j's expression, also its label */
    int n;
} narrow_outs;

/* Add an output: the expression formatted from fmt. */
static void narrow_out(narrow_outs *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (o->n < NARROW_MAX)
        vsnprintf(o->expr[o->n++], sizeof o->expr[0], fmt, ap);
    va_end(ap);
}

/* v as a value of 8- or 16-bit integer dtype t: INT64_MIN and INT64_MAX
 * for the dtype's MIN and MAX, negative values of unsigned ones modulo
 * 2^bits. */
static int64_t narrow_value(int64_t v, kf_dtype t)
{
    unsigned bits = (unsigned)kf_dtype_size(t) * 8;
    bool sg = kf_dt_is_sint(t);
    if (v == INT64_MIN)
        return sg ? -(INT64_C(1) << (bits - 1)) : 0;
    if (v == INT64_MAX)
        return sg ? (INT64_C(1) << (bits - 1)) - 1 : (INT64_C(1) << bits) - 1;
    return v < 0 && !sg ? v + (INT64_C(1) << bits) : v;
}

/* Every value of each 8- and 16-bit integer dtype x through every integer
 * op, against y in {0, 1, -1, MIN, MAX, 2, 7, 15, 16} at run time (x op y
 * and y op x) and against literals (x op c and c op x, c in {0, 1, -1, 2,
 * -2, MIN, MAX}) and in composite negations, then sign (a compare each
 * way), a widening cast or a cast to i16 and sign, against the
 * interpreter: the IR's integer ops wrap, and NVIDIA's compilers handed
 * 16-bit negations to 32-bit compares without narrowing them
 * (sign(abs(-32768)) was 2: bench/diag/s31/abs16.cu; docs/codegen.md). */
static void test_narrow_ints(kf_context *ctx)
{
    static const kf_dtype types[] = { KF_I16, KF_I8, KF_U16, KF_U8 };
    static const char *const un[] = { "abs", "neg", "not", "sign" };
    static const char *const bin[] = { "add", "sub", "mul", "div", "mod", "min",
                                       "max", "shl", "shr", "and", "or",  "xor" };
    static const int64_t ys[] = { 0, 1, -1, INT64_MIN, INT64_MAX, 2, 7, 15, 16 };
    static const int64_t lits[] = { 0, 1, -1, 2, -2, INT64_MIN, INT64_MAX };
    static const char *const composite[] = {   /* negations LLVM finds across nodes */
        "sub 5, (add x, 5)", "sub x, (add x, x)", "add (not x), 1", "select (lt x, 0), (neg x), x",
        "div (neg x), (not (sub x, x))", "cast (sub 0, (cast x, i32)), i16"
    };
    enum { NU = 4, NB = 12, NY = sizeof ys / sizeof ys[0], NL = sizeof lits / sizeof lits[0] };
    for (size_t w = 0; w < sizeof types / sizeof types[0]; w++) {
        kf_dtype t = types[w];
        const char *tn = kf_dtype_name(t);
        unsigned bits = (unsigned)kf_dtype_size(t) * 8;
        narrow_outs outs = { .n = 0 }, *o = &outs;
        for (int j = 0; j < NU; j++) {
            narrow_out(o, "sign (%s x)", un[j]);
            narrow_out(o, "cast (%s x), i32", un[j]);
            narrow_out(o, "sign (cast (%s x), i16)", un[j]);
        }
        for (size_t j = 0; j < sizeof composite / sizeof composite[0]; j++)
            narrow_out(o, "sign (%s)", composite[j]);
        for (int j = 0; j < NB; j++) {
            narrow_out(o, "sign (%s x, y)", bin[j]);
            narrow_out(o, "sign (%s y, x)", bin[j]);
            narrow_out(o, "cast (%s x, y), i32", bin[j]);
            for (int k = 0; k < NL; k++) {
                long long c = (long long)narrow_value(lits[k], t);
                narrow_out(o, "sign (%s x, %lld)", bin[j], c);
                narrow_out(o, "sign (%s %lld, x)", bin[j], c);
            }
        }
        int no = o->n;
        kf_strbuf src = KF_STRBUF_INIT;
        kf_sb_printf(&src, "kfuse 1\ngraph narrow(x: %s[n], y: %s) -> (", tn, tn);
        for (int j = 0; j < no; j++)
            kf_sb_printf(&src, "%so%d", j ? ", " : "", j);
        kf_sb_puts(&src, ") {\n");
        for (int j = 0; j < no; j++)
            kf_sb_printf(&src, "  o%d = %s\n", j, o->expr[j]);
        kf_sb_puts(&src, "}\n");
        CHECK(no < NARROW_MAX && !kf_sb_failed(&src));   /* none dropped */
        kf_module *m = NULL;
        kf_program *p = text_program(ctx, kf_sb_str(&src), &m);
        kf_sb_free(&src);
        int64_t n = (int64_t)1 << bits;
        kf_host_array in = { .data = malloc((size_t)n * 2), .dtype = t, .rank = 1, .shape = { n } };
        for (int64_t i = 0; in.data && i < n; i++)   /* every bit pattern */
            memcpy((char *)in.data + i * (bits / 8), &i, bits / 8);
        kf_host_array *got = calloc(NARROW_MAX, sizeof *got), *want = calloc(NARROW_MAX, sizeof *want);
        for (int k = 0; p && in.data && got && want && k < NY; k++) {
            uint64_t ybits = (uint64_t)narrow_value(ys[k], t);   /* little-endian: the low bytes are the value */
            kf_host_array yin = { .data = &ybits, .dtype = t, .rank = 0 }, ins[2] = { in, yin };
            const void *sc[1] = { &ybits };
            char err[256];
            bool ok = kf_interpret(kf_module_graph(m, 0), ins, 2, want, no, err, sizeof err) == KF_OK;
            ok = ok && kf_run_host(p, &in, 1, sc, 1, got, no, NULL) == KF_OK;
            CHECK_MSG(ok, "%s, y = %lld: %s", tn, (long long)ybits, ok ? "" : kf_context_error(ctx));
            for (int j = 0; ok && j < no; j++) {
                int64_t first = -1;
                int64_t bad = kf_rg_compare(kf_module_graph(m, 0), j, got[j].data, &want[j], n, false, NULL, &first);
                CHECK_MSG(bad == 0, "%s %s, y = %lld: %lld of %lld differ, first at bits %lld", tn, o->expr[j],
                          (long long)ybits, (long long)bad, (long long)n, (long long)first);
            }
            for (int j = 0; j < no; j++) {
                kf_free(got[j].data);
                kf_free(want[j].data);
                got[j].data = want[j].data = NULL;
            }
        }
        free(got);
        free(want);
        free(in.data);
        kf_program_free(p);
        kf_module_free(m);
    }
}

static void test_errors(kf_context *ctx, kf_context *other)
{
    kf_graph *g = x5_graph(KF_F32);
    kf_program *p;
    CHECK_STATUS(kf_compile(ctx, g, &p), KF_OK);
    CHECK(kf_program_num_kernels(p) == 1);
    kf_buffer *b, *ob;
    CHECK_STATUS(kf_buffer_alloc(ctx, 4096, &b), KF_OK);
    int64_t n8[1] = { 8 }, n9[1] = { 9 };
    kf_view x = kf_view_dense(b, 0, KF_F32, 1, n8), y = kf_view_dense(NULL, 0, KF_F32, 1, n8);
    kf_view xd = kf_view_dense(b, 0, KF_F64, 1, n8);
    CHECK_STATUS(kf_run(p, NULL, &xd, 1, NULL, 0, &y, 1), KF_ERR_TYPE);
    CHECK_CONTAINS(kf_context_error(ctx), "input 'x': the view is f64, the graph wants f32");
    kf_view x2 = kf_view_dense(b, 0, KF_F32, 2, (int64_t[]){ 2, 4 });
    CHECK_STATUS(kf_run(p, NULL, &x2, 1, NULL, 0, &y, 1), KF_ERR_SHAPE);
    CHECK_CONTAINS(kf_context_error(ctx), "rank 2");
    kf_view y9 = kf_view_dense(b, 2048, KF_F32, 1, n9);
    CHECK_STATUS(kf_run(p, NULL, &x, 1, NULL, 0, &y9, 1), KF_ERR_SHAPE);
    CHECK_CONTAINS(kf_context_error(ctx), "output 'y': dimension 0 of the view is 9, the graph gives 8");
    kf_view big = kf_view_dense(b, 4080, KF_F32, 1, n8);
    CHECK_STATUS(kf_run(p, NULL, &big, 1, NULL, 0, &y, 1), KF_ERR_SHAPE);
    CHECK_CONTAINS(kf_context_error(ctx), "outside its 4096-byte buffer");
    kf_view odd = kf_view_dense(b, 2, KF_F32, 1, n8);
    CHECK_STATUS(kf_run(p, NULL, &odd, 1, NULL, 0, &y, 1), KF_ERR_INVALID_ARG);
    CHECK_STATUS(kf_run(p, NULL, NULL, 1, NULL, 0, &y, 1), KF_ERR_INVALID_ARG);
    CHECK_STATUS(kf_run(p, NULL, &x, 1, NULL, 0, NULL, 1), KF_ERR_INVALID_ARG);
    CHECK_STATUS(kf_run(p, NULL, &x, 2, NULL, 0, &y, 1), KF_ERR_INVALID_ARG);
    CHECK_STATUS(kf_run(NULL, NULL, &x, 1, NULL, 0, &y, 1), KF_ERR_INVALID_ARG);
    if (other) {
        CHECK_STATUS(kf_buffer_alloc(other, 4096, &ob), KF_OK);
        kf_view xo = kf_view_dense(ob, 0, KF_F32, 1, n8);
        CHECK_STATUS(kf_run(p, NULL, &xo, 1, NULL, 0, &y, 1), KF_ERR_CONTEXT);
        CHECK_CONTAINS(kf_context_error(ctx), "another context");
        kf_buffer_free(ob);
    }
    CHECK(y.buf == NULL); /* nothing allocated by failed runs */
    kf_graph_free(g);

    /* mismatched symbols */
    g = kf_graph_new("two");
    kf_dim nd = KF_SYM("n");
    kf_node a = kf_input(g, "a", KF_F32, 1, &nd), c = kf_input(g, "c", KF_F32, 1, &nd);
    kf_output(g, kf_binary(g, KF_OP_MUL, a, c), "y");
    kf_program *p2;
    CHECK_STATUS(kf_compile(ctx, g, &p2), KF_OK);
    kf_view v[2] = { kf_view_dense(b, 0, KF_F32, 1, n8), kf_view_dense(b, 0, KF_F32, 1, n9) };
    kf_view out = kf_view_dense(NULL, 0, KF_F32, 1, n8);
    CHECK_STATUS(kf_run(p2, NULL, v, 2, NULL, 0, &out, 1), KF_ERR_SHAPE);
    CHECK_CONTAINS(kf_context_error(ctx), "symbol 'n' is 8 from an earlier input but 9 in input 'c'");
    kf_graph_free(g);

    /* a graph with a builder error */
    g = kf_graph_new("bad");
    kf_binary(g, KF_OP_ADD, kf_input(g, "x", KF_F32, 1, &nd), kf_input(g, "z", KF_F64, 1, &nd));
    CHECK_STATUS(kf_compile(ctx, g, &p2), KF_ERR_TYPE);
    CHECK_CONTAINS(kf_context_error(ctx), "different dtypes");
    kf_graph_free(g);

    /* kfuse-allocated outputs: the view is filled in and usable */
    g = x5_graph(KF_F32);
    float h[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, r[8];
    CHECK_STATUS(kf_upload(b, 0, h, sizeof h, NULL), KF_OK);
    y = kf_view_dense(NULL, 0, KF_F32, 1, n8);
    CHECK_STATUS(kf_run(p, NULL, &x, 1, NULL, 0, &y, 1), KF_OK);
    CHECK(y.buf != NULL && kf_buffer_size(y.buf) == sizeof r);
    CHECK_STATUS(kf_download(r, y.buf, 0, sizeof r, NULL), KF_OK);
    CHECK(r[7] == 40.0f && r[0] == 5.0f);
    kf_buffer_free(y.buf);
    kf_graph_free(g);
    kf_buffer_free(b);

    /* events time a run */
    kf_event *e0, *e1;
    kf_stream *st;
    CHECK_STATUS(kf_stream_create(ctx, &st), KF_OK);
    CHECK_STATUS(kf_event_create(ctx, &e0), KF_OK);
    CHECK_STATUS(kf_event_create(ctx, &e1), KF_OK);
    float ms = -1;
    CHECK_STATUS(kf_event_elapsed(e0, e1, &ms), KF_ERR_INVALID_ARG);
    CHECK_STATUS(kf_event_record(e0, st), KF_OK);
    CHECK_STATUS(kf_event_record(e1, st), KF_OK);
    CHECK_STATUS(kf_event_sync(e1), KF_OK);
    CHECK_STATUS(kf_event_elapsed(e0, e1, &ms), KF_OK);
    CHECK(ms >= 0);
    kf_event_destroy(e0);
    kf_event_destroy(e1);
    kf_stream_destroy(st);
    kf_program_free(p);
}

/* A stream of a CUDA context other than device 0's primary one (kfuse's):
 * kf_stream_wrap refuses it with KF_ERR_CONTEXT and says why, and kfuse's
 * context still runs.  The context and its stream come from libcuda
 * itself, through its stable _v2 entry points (CUDA types as void *, a
 * CUdevice as int). */
static void test_wrap_foreign(kf_context *ctx)
{
    typedef int (*dev_get_fn)(int *, int);
    typedef int (*ctx_create_fn)(void **, unsigned, int);
    typedef int (*ctx_one_fn)(void *);
    typedef int (*ctx_pop_fn)(void **);
    typedef int (*stream_create_fn)(void **, unsigned);
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    CHECK_MSG(lib != NULL, "libcuda.so.1: %s", dlerror());
    if (!lib)
        return;
    dev_get_fn dev_get = NULL;
    ctx_create_fn ctx_create = NULL;
    ctx_pop_fn ctx_pop = NULL;
    ctx_one_fn ctx_push = NULL, ctx_destroy = NULL, stream_destroy = NULL;
    stream_create_fn stream_create = NULL;
    const struct {
        const char *name;
        void *slot;   /* a function pointer above, filled from dlsym's void * */
    } syms[] = { { "cuDeviceGet", &dev_get },          { "cuCtxCreate_v2", &ctx_create },
                 { "cuCtxPopCurrent_v2", &ctx_pop },   { "cuCtxPushCurrent_v2", &ctx_push },
                 { "cuCtxDestroy_v2", &ctx_destroy },  { "cuStreamCreate", &stream_create },
                 { "cuStreamDestroy_v2", &stream_destroy } };
    bool all = true;
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        void *f = dlsym(lib, syms[i].name);
        CHECK_MSG(f != NULL, "libcuda.so.1 has no %s", syms[i].name);
        memcpy(syms[i].slot, &f, sizeof f);
        all = all && f;
    }
    int dev = -1;
    void *other = NULL, *popped = NULL, *s = NULL;
    if (all && dev_get(&dev, 0) == 0 && ctx_create(&other, 0, dev) == 0) {
        bool made = stream_create(&s, 1 /* CU_STREAM_NON_BLOCKING */) == 0;
        CHECK_MSG(made, "cuStreamCreate in a second context failed");
        ctx_pop(&popped);   /* cuCtxCreate made it current: the thread goes back to what it had */
        CHECK(popped == other);
        if (made) {
            kf_stream *w = (kf_stream *)1;
            CHECK_STATUS(kf_stream_wrap(ctx, s, &w), KF_ERR_CONTEXT);
            CHECK(w == NULL);
            CHECK_CONTAINS(kf_context_error(ctx), "belongs to another CUDA context");
            CHECK_STATUS(kf_stream_wrap(ctx, NULL, &w), KF_OK);   /* kfuse's context still works */
            CHECK_STATUS(kf_stream_sync(ctx, w), KF_OK);
            kf_stream_destroy(w);
            ctx_push(other);
            stream_destroy(s);
            ctx_pop(&popped);
        }
        ctx_destroy(other);
    } else {
        CHECK_MSG(false, "cuCtxCreate on device 0 failed: no second context to wrap a stream of");
    }
    dlclose(lib);
}

/* kf_stream_wrap: on CUDA, runs, copies and events on the legacy and the
 * per-thread default streams (the streams other CUDA libraries use by
 * default), every element against the host's sum, the output poisoned
 * first; the native stream outlives its wrapper.  The other backends take
 * no native stream. */
static void test_wrap(kf_context *ctx, kf_backend b)
{
    kf_stream *w = NULL;
    CHECK_STATUS(kf_stream_wrap(NULL, NULL, &w), KF_ERR_INVALID_ARG);
    CHECK_STATUS(kf_stream_wrap(ctx, NULL, NULL), KF_ERR_INVALID_ARG);
    if (b != KF_BACKEND_CUDA) {
        CHECK_STATUS(kf_stream_wrap(ctx, NULL, &w), KF_ERR_UNSUPPORTED);
        CHECK_CONTAINS(kf_context_error(ctx), "backend takes no native streams");
        CHECK(w == NULL);
        return;
    }
    enum { WN = 4099 };
    kf_graph *g = x5_graph(KF_F32);
    kf_program *p;
    CHECK_STATUS(kf_compile(ctx, g, &p), KF_OK);
    float *hx = malloc(WN * sizeof *hx), *hy = malloc(WN * sizeof *hy);
    kf_buffer *bx, *by;
    CHECK_STATUS(kf_buffer_alloc(ctx, WN * sizeof *hx, &bx), KF_OK);
    CHECK_STATUS(kf_buffer_alloc(ctx, WN * sizeof *hy, &by), KF_OK);
    rt_rng rng = { 0x9e3779b97f4a7c15u };
    void *const natives[2] = { NULL, (void *)0x2 };   /* the legacy default stream, CU_STREAM_PER_THREAD */
    for (int k = 0; k < 2 && hx && hy; k++) {
        CHECK_STATUS(kf_stream_wrap(ctx, natives[k], &w), KF_OK);
        for (int i = 0; i < WN; i++) {
            hx[i] = (float)(rt_unif(&rng) * 200.0 - 100.0);
            hy[i] = NAN;
        }
        int64_t n[1] = { WN };
        kf_view x = kf_view_dense(bx, 0, KF_F32, 1, n), y = kf_view_dense(by, 0, KF_F32, 1, n);
        kf_event *e0, *e1;
        CHECK_STATUS(kf_event_create(ctx, &e0), KF_OK);
        CHECK_STATUS(kf_event_create(ctx, &e1), KF_OK);
        CHECK_STATUS(kf_upload(by, 0, hy, WN * sizeof *hy, w), KF_OK);
        CHECK_STATUS(kf_upload(bx, 0, hx, WN * sizeof *hx, w), KF_OK);
        CHECK_STATUS(kf_event_record(e0, w), KF_OK);
        CHECK_STATUS(kf_run(p, w, &x, 1, NULL, 0, &y, 1), KF_OK);
        CHECK_STATUS(kf_event_record(e1, w), KF_OK);
        CHECK_STATUS(kf_download(hy, by, 0, WN * sizeof *hy, w), KF_OK);
        CHECK_STATUS(kf_stream_sync(ctx, w), KF_OK);
        float ms = -1;
        CHECK_STATUS(kf_event_elapsed(e0, e1, &ms), KF_OK);
        CHECK(ms >= 0);
        int wrong = 0;
        for (int i = 0; i < WN; i++) {
            float v = hx[i];
            wrong += hy[i] != (((v + v) + v) + v) + v;
        }
        CHECK_MSG(wrong == 0, "wrapped stream %d: %d of %d elements wrong or unwritten", k, wrong, WN);
        if (k == 0) {
            CHECK_STATUS(kf_capture_begin(ctx, w), KF_ERR_INVALID_ARG);
            CHECK_CONTAINS(kf_context_error(ctx), "cannot capture its legacy default stream");
        }
        kf_event_destroy(e0);
        kf_event_destroy(e1);
        kf_stream_destroy(w);
        w = NULL;
    }
    /* the legacy stream outlived its wrapper: a new wrap of it still syncs */
    CHECK_STATUS(kf_stream_wrap(ctx, NULL, &w), KF_OK);
    CHECK_STATUS(kf_stream_sync(ctx, w), KF_OK);
    kf_stream_destroy(w);
    test_wrap_foreign(ctx);
    kf_buffer_free(bx);
    kf_buffer_free(by);
    free(hx);
    free(hy);
    kf_program_free(p);
    kf_graph_free(g);
}

/* Faults no healthy device shows, through the test hooks: a compile error
 * (the log reaches the caller) and an OpenCL device without f64. */
static void test_hooks(kf_backend b)
{
    kf_context_options o = { .backend = b, .device = 0 };
    kf_context *ctx;
    if (kf_context_create(&o, &ctx, NULL, 0) != KF_OK)
        return;
    kf_graph *g = x5_graph(KF_F32);
    kf_program *p = NULL;
    kf_rt_set_hooks(ctx, KF_RT_HOOK_BREAK_CODEGEN);
    CHECK_STATUS(kf_compile(ctx, g, &p), KF_ERR_COMPILE);
    CHECK(p == NULL);
    CHECK_CONTAINS(kf_context_error(ctx), "error");
    CHECK_CONTAINS(kf_context_error(ctx), "kf_compile: graph 'x5'");
    kf_graph_free(g);
    if (b == KF_BACKEND_OPENCL) { /* f64 is an extension on OpenCL only */
        kf_rt_set_hooks(ctx, KF_RT_HOOK_NO_FP64);
        g = x5_graph(KF_F32);
        CHECK_STATUS(kf_compile(ctx, g, &p), KF_OK); /* f32 still works */
        kf_program_free(p);
        kf_graph_free(g);
        g = x5_graph(KF_F64);
        CHECK_STATUS(kf_compile(ctx, g, &p), KF_ERR_UNSUPPORTED);
        CHECK_CONTAINS(kf_context_error(ctx), "f64");
        kf_graph_free(g);
    }
    kf_context_destroy(ctx);
}

/* KFUSE_BACKEND and KFUSE_DEVICE override an AUTO choice. */
static void test_env(void)
{
    kf_context *ctx;
    char why[1024];
    setenv("KFUSE_BACKEND", "opencl", 1);
    if (kf_context_create(NULL, &ctx, why, sizeof why) == KF_OK) {
        kf_device_info info;
        kf_context_info(ctx, &info);
        CHECK(info.backend == KF_BACKEND_OPENCL);
        kf_context_destroy(ctx);
    }
    setenv("KFUSE_DEVICE", "99", 1);
    CHECK_STATUS(kf_context_create(NULL, &ctx, why, sizeof why), KF_ERR_NO_DEVICE);
    CHECK_CONTAINS(why, "device 99 does not exist");
    setenv("KFUSE_DEVICE", "x", 1);
    CHECK_STATUS(kf_context_create(NULL, &ctx, why, sizeof why), KF_ERR_INVALID_ARG);
    CHECK_CONTAINS(why, "KFUSE_DEVICE='x'");
    unsetenv("KFUSE_DEVICE");
    setenv("KFUSE_BACKEND", "tpu", 1);
    CHECK_STATUS(kf_context_create(NULL, &ctx, why, sizeof why), KF_ERR_INVALID_ARG);
    CHECK_CONTAINS(why, "KFUSE_BACKEND='tpu' is not one of");
    unsetenv("KFUSE_BACKEND");
    kf_context_options o = { .backend = (kf_backend)42, .device = 0 };
    CHECK_STATUS(kf_context_create(&o, &ctx, why, sizeof why), KF_ERR_INVALID_ARG);
    CHECK(ctx == NULL);
}

/* The comparator's slack below float sums (kf_rg_sum_slack): s, a sum of
 * 66000 values in [-1, 1] (the first one then set so that s is near 50,
 * the last one 1) with a sum of magnitudes M near 33000, moves by
 * E = 8 * 2^-23 * M (about 0.03); sin s by |cos s| E; s - s2, two sums of
 * the same values, by 2E (the pass that moves them apart); y + y not at
 * all.  A result a dropped term away fails; one 0.5E away passes only
 * with the slack. */
static void test_sum_slack(void)
{
    const char *text = "kfuse 1\ngraph slack(x: f32[n], y: f32[n]) -> (s, t, d, u) {\n  s = sum x\n  t = sin s\n"
                       "  s2 = sum x\n  d = sub s, s2\n  u = add y, y\n}\n";
    kf_module *m = NULL;
    CHECK_STATUS(kf_module_parse(text, strlen(text), "slack", NULL, &m), KF_OK);
    const kf_graph *g = m ? kf_module_graph(m, 0) : NULL;
    enum { N = 66000 };
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
    rt_rng rng = { 0x5eed5 };
    double sum = 0, mag = 0;
    for (int i = 0; x && y && i < N; i++) {
        x[i] = (float)(2 * rt_unif(&rng) - 1);
        y[i] = (float)rt_unif(&rng);
        sum += x[i];
    }
    if (!g || !x || !y)
        goto out;
    x[N - 1] = 1.0f;   /* the term a wrong kernel drops below */
    x[0] = (float)(x[0] + (50.0 - (sum - x[N - 1] + 1.0)));   /* s near 50: sin s -0.26, cos s 0.96 */
    sum = 0;
    for (int i = 0; i < N; i++) {
        sum += x[i];
        mag += fabs(x[i]);
    }
    kf_host_array in[2] = { { x, KF_F32, 1, { N } }, { y, KF_F32, 1, { N } } }, want[4] = { 0 };
    char err[256];
    CHECK_STATUS(kf_interpret(g, in, 2, want, 4, err, sizeof err), KF_OK);
    double **slack = kf_rg_sum_slack(g, in, 2, want);
    CHECK(slack != NULL);
    if (slack) {
        double e = 8 * 0x1p-23 * mag, cs = fabs(cos(sum));
        CHECK_MSG(slack[0][0] > 0.5 * e && slack[0][0] < 2 * e, "sum: slack %g for a shift of %g", slack[0][0], e);
        CHECK_MSG(slack[1][0] > 0.5 * cs * e && slack[1][0] < 2 * e, "sin of the sum: slack %g, want about %g",
                  slack[1][0], cs * e);
        CHECK_MSG(slack[2][0] > e && slack[2][0] < 4 * e, "difference of two sums: slack %g, want about %g",
                  slack[2][0], 2 * e);
        double most = 0;
        for (int i = 0; i < N; i++)
            most = fmax(most, slack[3][i]);
        CHECK_MSG(most == 0, "y + y (no sum): slack %g", most);
        int64_t bad1;
        float dropped[2] = { (float)(sum - 1.0), (float)sin(sum - 1.0) };
        float near[2] = { (float)(sum + 0.5 * e), (float)sin(sum + 0.5 * e) };
        for (int j = 0; j < 2; j++) {
            CHECK(kf_rg_compare(g, j, want[j].data, &want[j], 1, false, slack, &bad1) == 0);
            CHECK_MSG(kf_rg_compare(g, j, &dropped[j], &want[j], 1, false, slack, &bad1) == 1,
                      "output %d: a dropped term passed (%.9g for %.9g)", j, dropped[j],
                      rt_load(want[j].data, KF_F32, 0));
            CHECK(kf_rg_compare(g, j, &near[j], &want[j], 1, false, slack, &bad1) == 0);
        }
        CHECK_MSG(kf_rg_compare(g, 1, &near[1], &want[1], 1, false, NULL, &bad1) == 1,
                  "sin of the sum 0.5E away passed without the slack: the check above proves nothing");
    }
    kf_rg_slack_free(slack, 4);
    for (int j = 0; j < 4; j++)
        kf_free(want[j].data);
    const char *plain = "kfuse 1\ngraph p(y: f32[n]) -> (u) {\n  u = add y, y\n}\n";
    kf_module *pm = NULL;
    CHECK_STATUS(kf_module_parse(plain, strlen(plain), "plain", NULL, &pm), KF_OK);
    kf_host_array pout = { 0 };
    if (pm && kf_interpret(kf_module_graph(pm, 0), &in[1], 1, &pout, 1, err, sizeof err) == KF_OK)
        CHECK_MSG(kf_rg_sum_slack(kf_module_graph(pm, 0), &in[1], 1, &pout) == NULL, "a graph without a sum has slack");
    kf_free(pout.data);
    kf_module_free(pm);
out:
    free(x);
    free(y);
    kf_module_free(m);
}

/* -- Threads --------------------------------------------------------------------- */

typedef struct thr {
    kf_context *ctx;
    kf_program *shared;
    int id, failures;
} thr;

static void *hammer(void *arg)
{
    thr *t = arg;
    kf_stream *s;
    if (kf_stream_create(t->ctx, &s) != KF_OK) {
        t->failures++;
        return NULL;
    }
    kf_graph *g = x5_graph(KF_F32);
    kf_program *own;
    if (kf_compile(t->ctx, g, &own) != KF_OK)
        t->failures++;
    enum { N = 5000 };
    float *h = malloc(N * sizeof *h), *r = malloc(N * sizeof *r);
    kf_buffer *bx, *by;
    kf_buffer_alloc(t->ctx, N * sizeof *h, &bx);
    kf_buffer_alloc(t->ctx, N * sizeof *h, &by);
    int64_t shape[1] = { N };
    kf_view x = kf_view_dense(bx, 0, KF_F32, 1, shape), y = kf_view_dense(by, 0, KF_F32, 1, shape);
    for (int round = 0; round < 40 && t->failures == 0; round++) {
        for (int i = 0; i < N; i++)
            h[i] = (float)(t->id * 1000 + round + i % 97);
        kf_program *p = round % 2 ? own : t->shared;
        if (kf_upload(bx, 0, h, N * sizeof *h, s) != KF_OK || kf_run(p, s, &x, 1, NULL, 0, &y, 1) != KF_OK ||
            kf_download(r, by, 0, N * sizeof *r, s) != KF_OK || kf_stream_sync(t->ctx, s) != KF_OK)
            t->failures++;
        for (int i = 0; i < N; i++)
            if (r[i] != h[i] * 5.0f && t->failures++ == 0)
                fprintf(stderr, "thread %d round %d: element %d is %g, want %g\n", t->id, round, i, r[i], h[i] * 5);
    }
    kf_buffer_free(bx);
    kf_buffer_free(by);
    kf_program_free(own);
    kf_graph_free(g);
    kf_stream_destroy(s);
    free(h);
    free(r);
    return NULL;
}

static void test_threads(kf_context *ctx)
{
    kf_graph *g = x5_graph(KF_F32);
    kf_program *shared;
    CHECK_STATUS(kf_compile(ctx, g, &shared), KF_OK);
    thr t[8];
    pthread_t th[8];
    for (int i = 0; i < 8; i++) {
        t[i] = (thr){ ctx, shared, i, 0 };
        pthread_create(&th[i], NULL, hammer, &t[i]);
    }
    for (int i = 0; i < 8; i++) {
        pthread_join(th[i], NULL);
        CHECK_MSG(t[i].failures == 0, "thread %d: %d failures", i, t[i].failures);
    }
    kf_program_free(shared);
    kf_graph_free(g);
}

/* Sizes where a GPU's launch rule leaves the small-call paths: a gather
 * past g64's threshold (24 blocks of 1024 points per compute unit), and a
 * contiguous call between one and two full waves (8 blocks of 256 threads
 * per compute unit) of 4-element vectors, where a branchy kernel (div,
 * sqrt) runs h64: 2 f32 per 8-byte vector, 2 f64 per 16-byte one; odd
 * sizes leave a tail.  Only correctly rounded ops, so the f64 output is
 * exact.  Dense and strided, every element against the interpreter. */
static void test_wide(kf_context *ctx, const kf_device_info *info)
{
    static const struct {
        const char *text, *label;
        int64_t per_cu;
    } cases[] = {
        { "kfuse 1\ngraph wide(p: i32[n], b: f32[n], v: f32[k]) -> (y) {\n  y = add (take v, p), (mul 2.0, b)\n}\n",
          "wide gather", 24 * 1024 },
        { "kfuse 1\ngraph half(a: f32[n], b: f32[n], c: f64[n]) -> (y, z) {\n"
          "  y = div (add 1.0, a), (add (sqrt (mul b, b)), 0.5)\n  z = mul c, (cast y, f64)\n}\n",
          "half vectors", 8 * 256 * 3 },
    };
    int64_t cu = info->compute_units > 0 ? info->compute_units : 1;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kf_module *m = NULL;
        kf_program *p = text_program(ctx, cases[i].text, &m);
        char label[64];
        for (int strided = 0; p && strided < 2; strided++) {
            snprintf(label, sizeof label, "%s%s", cases[i].label, strided ? ", strided" : "");
            run_case(ctx, p, kf_module_graph(m, 0), cases[i].per_cu * cu + 5, strided, false, 91 + (uint64_t)strided + 2 * i,
                     label);
        }
        kf_module_free(m);
        kf_program_free(p);
    }
}

/* -- The run memo ---------------------------------------------------------------
 * kf_run keeps the launch facts of a program's last run and reuses them for
 * a call whose views have the same geometry (program.c).  One program
 * (several kernels, stored intermediates, a scalar) runs shapes and layouts
 * that repeat and alternate, each on fresh data against the interpreter;
 * then views of the remembered geometry in a buffer too small for them, or
 * of another context, must still be refused and write nothing. */
static void test_memo(kf_context *ctx, kf_context *other)
{
    kf_module *m = NULL;
    kf_program *p = text_program(ctx,
                                 "kfuse 1\ngraph memo(x: f32[m,n], c: f32) -> (y, r) {\n"
                                 "  mx = max x, axes=[1], keepdims=true\n  e = exp (sub x, mx)\n"
                                 "  s = sum e, axes=[1], keepdims=true\n  y = mul (div e, s), c\n"
                                 "  r = sum x, axes=[1]\n}\n",
                                 &m);
    static const struct {
        int64_t size;
        bool strided;
    } seq[] = { { 1000, false }, { 1000, false }, { 66000, false }, { 1000, true },
                { 1000, true },  { 1000, false }, { 66000, true },  { 7, false } };
    for (size_t i = 0; p && i < sizeof seq / sizeof seq[0]; i++) {
        char label[64];
        snprintf(label, sizeof label, "memo %zu: n=%lld%s", i, (long long)seq[i].size, seq[i].strided ? " strided" : "");
        run_case(ctx, p, kf_module_graph(m, 0), seq[i].size, seq[i].strided, false, 500 + i, label);
    }
    kf_program_free(p);
    kf_module_free(m);

    kf_graph *g = x5_graph(KF_F32);
    CHECK_STATUS(kf_compile(ctx, g, &p), KF_OK);
    kf_graph_free(g);
    kf_buffer *xb, *yb, *small;
    CHECK_STATUS(kf_buffer_alloc(ctx, 4096, &xb), KF_OK);
    CHECK_STATUS(kf_buffer_alloc(ctx, 4096, &yb), KF_OK);
    CHECK_STATUS(kf_buffer_alloc(ctx, 16, &small), KF_OK);
    float h[16], got[8];
    for (int i = 0; i < 16; i++)
        h[i] = (float)i - 2.5f;
    CHECK_STATUS(kf_upload(xb, 64, h, sizeof h, NULL), KF_OK);
    int64_t n8[1] = { 8 };
    kf_view x = kf_view_dense(xb, 64, KF_F32, 1, n8), y = kf_view_dense(yb, 0, KF_F32, 1, n8), x2 = x;
    x2.strides[0] = 2;   /* only the stride differs */
    for (int k = 0; k < 3; k++) {
        CHECK_STATUS(kf_run(p, NULL, k == 1 ? &x2 : &x, 1, NULL, 0, &y, 1), KF_OK);
        CHECK_STATUS(kf_stream_sync(ctx, NULL), KF_OK);
        CHECK_STATUS(kf_download(got, yb, 0, sizeof got, NULL), KF_OK);
        for (int i = 0; i < 8; i++)
            CHECK_MSG(got[i] == 5 * h[k == 1 ? 2 * i : i], "memo run %d: y[%d] = %g", k, i, got[i]);
    }
    memset(got, 0xFF, sizeof got);
    CHECK_STATUS(kf_upload(yb, 0, got, sizeof got, NULL), KF_OK);
    kf_view xs = x, ys = y, yn = kf_view_dense(NULL, 0, KF_F32, 1, n8);
    xs.buf = small;
    ys.buf = small;
    CHECK_STATUS(kf_run(p, NULL, &xs, 1, NULL, 0, &y, 1), KF_ERR_SHAPE);
    CHECK_CONTAINS(kf_context_error(ctx), "input 'x': the view reaches elements 16 to 23, outside its 16-byte buffer");
    CHECK_STATUS(kf_run(p, NULL, &x, 1, NULL, 0, &ys, 1), KF_ERR_SHAPE);
    CHECK_CONTAINS(kf_context_error(ctx), "output 'y'");
    if (other) {
        kf_buffer *ob;
        CHECK_STATUS(kf_buffer_alloc(other, 4096, &ob), KF_OK);
        kf_view xo = x;
        xo.buf = ob;
        CHECK_STATUS(kf_run(p, NULL, &xo, 1, NULL, 0, &y, 1), KF_ERR_CONTEXT);
        kf_buffer_free(ob);
    }
    CHECK_STATUS(kf_stream_sync(ctx, NULL), KF_OK);
    CHECK_STATUS(kf_download(got, yb, 0, sizeof got, NULL), KF_OK);
    for (int i = 0; i < 8; i++)
        CHECK_MSG(isnan(got[i]), "memo: a refused run wrote y[%d] = %g", i, got[i]);
    /* an output to allocate, then the remembered views again */
    CHECK_STATUS(kf_run(p, NULL, &x, 1, NULL, 0, &yn, 1), KF_OK);
    CHECK_STATUS(kf_run(p, NULL, &x, 1, NULL, 0, &y, 1), KF_OK);
    CHECK_STATUS(kf_stream_sync(ctx, NULL), KF_OK);
    for (int k = 0; k < 2; k++) {
        CHECK_STATUS(kf_download(got, k ? yb : yn.buf, 0, sizeof got, NULL), KF_OK);
        for (int i = 0; i < 8; i++)
            CHECK_MSG(got[i] == 5 * h[i], "memo: y[%d] = %g, want %g", i, got[i], 5 * h[i]);
    }
    kf_buffer_free(yn.buf);
    kf_buffer_free(small);
    kf_buffer_free(yb);
    kf_buffer_free(xb);
    kf_program_free(p);
}

/* The files named, else the corpus; then nrandom seeded random graphs. */
static void run_all(kf_context *ctx, const kf_device_info *info, int argc, char **argv, int nrandom)
{
    if (argc > 1) {
        for (int i = 1; i < argc; i++)
            run_file(ctx, argv[i], 42);
    } else {
        /* the fusion and golden graphs, the codegen corpus
         * (tests/codegen/corpus.kir), graphs for launch rules
         * (runtime/warp.kir); KFUSE_TEST_CORPUS lists the folders to run */
        static const char *const dirs[] = { "fuse", "golden", "codegen", "runtime" };
        const char *only = getenv("KFUSE_TEST_CORPUS");
        for (int i = 0; i < (int)(sizeof dirs / sizeof dirs[0]); i++)
            if (!only || strstr(only, dirs[i]))
                run_dir(ctx, dirs[i], 1 + (uint64_t)i);
    }
    /* seeded random graphs: every op kind, dtype, broadcast and reduction */
    const char *first = getenv("KFUSE_TEST_SEED");
    int i0 = first ? atoi(first) : 0;
    kf_rg_options ro = { .no_f16 = !info->fp16, .no_f64 = !info->fp64 };
    for (int i = i0; i < i0 + nrandom; i++) {
        kf_graph *g = kf_rg_graph("rand", 1000 + (uint64_t)i, &ro);
        char label[64];
        snprintf(label, sizeof label, "random seed %d", 1000 + i);
        if (g)   /* fast_math: no special values, whose handling its functions leave to the device */
            run_graph(ctx, g, label, 77 + (uint64_t)i, i % 2 == 1 && !fast_run);
        kf_graph_free(g);
    }
}

/* The module a context generates for the graph of text, as it would
 * compile it (malloc'd; NULL on failure). */
static char *module_of(kf_context *ctx, const char *text)
{
    kf_module *m = NULL;
    kf_cache_prep prep;
    char msg[512] = "";
    char *src = NULL;
    if (kf_module_parse(text, strlen(text), "text", NULL, &m) == KF_OK &&
        kf_rt_cache_prepare(ctx, kf_module_graph(m, 0), &prep, msg, sizeof msg) == KF_OK) {
        src = strdup(kf_sb_str(&prep.src));
        kf_cache_prep_free(&prep);
    }
    CHECK_MSG(src != NULL, "module of %.40s: %s", text + 8, msg);
    kf_module_free(m);
    return src;
}

/* CUDA's __expf differs from expf on some of 66000 arguments in [-10, 10]
 * (the device really runs the approximation), each result within the
 * float tolerance of the exact kernel's. */
static void fast_exp_differs(kf_context *exact, kf_context *fast)
{
    enum { N = 66000 };
    static const char text[] = "kfuse 1\ngraph fe(x: f32[n]) -> (y) {\n  y = exp x\n}\n";
    float *x = malloc(N * sizeof *x), *y[2] = { malloc(N * sizeof(float)), malloc(N * sizeof(float)) };
    rt_rng rng = { 4242 };
    for (int i = 0; x && i < N; i++)
        x[i] = (float)(20 * rt_unif(&rng) - 10);
    kf_context *ctx[2] = { exact, fast };
    bool ok = x && y[0] && y[1];
    for (int f = 0; ok && f < 2; f++) {
        kf_program *p = text_program(ctx[f], text, NULL);
        kf_host_array in = { x, KF_F32, 1, { N } }, out = { y[f], KF_F32, 1, { N } };
        ok = p && kf_run_host(p, &in, 1, NULL, 0, &out, 1, NULL) == KF_OK;
        CHECK_MSG(ok, "fast exp: %s", kf_context_error(ctx[f]));
        kf_program_free(p);
    }
    int differ = 0, far = 0;
    for (int i = 0; ok && i < N; i++) {
        differ += y[0][i] != y[1][i];
        far += !(fabsf(y[1][i] - y[0][i]) <= 2e-4f * fabsf(y[0][i]));
    }
    CHECK_MSG(ok && differ > 0 && far == 0, "fast exp on CUDA: %d of %d results differ from expf's, %d beyond 2e-4",
              differ, N, far);
    free(x);
    free(y[0]);
    free(y[1]);
}

/* A context with fast_math: the graphs of run_all holding an op it
 * approximates (nrandom random ones looked at), on ordinary inputs,
 * against the interpreter (kf_rg_compare with fast_math); its generated
 * code (the approximations on CUDA and OpenCL, the same as an exact
 * context's on the CPU backend) and, on CUDA, its results; and its
 * kernels cached apart from an exact context's on the same directory. */
static void test_fast_math(kf_backend b, int argc, char **argv, int nrandom)
{
    char dir[512];
    temp_dir(dir, sizeof dir, "fastmath");
    kf_context_options o = { .backend = b, .device = 0, .cache_dir = dir, .cache_mode = KF_CACHE_RW };
    kf_context *exact = NULL, *fast[2] = { NULL, NULL };
    CHECK_STATUS(kf_context_create(&o, &exact, NULL, 0), KF_OK);
    o.fast_math = true;
    CHECK_STATUS(kf_context_create(&o, &fast[0], NULL, 0), KF_OK);
    CHECK_STATUS(kf_context_create(&o, &fast[1], NULL, 0), KF_OK);
    if (!exact || !fast[0] || !fast[1])
        goto done;
    /* each kind compiles its own kernel once; the second fast context reads the first one's */
    static const char boxplus[] = "kfuse 1\ngraph bp(a: f32[n], b: f32[n]) -> (y) {\n"
                                  "  y = log (div (add 1.0, (exp (add a, b))), (add (exp a), (exp b)))\n}\n";
    kf_context *order[3] = { exact, fast[0], fast[1] };
    for (int i = 0; i < 3; i++) {
        kf_program_free(text_program(order[i], boxplus, NULL));
        kf_stats st;
        kf_context_stats(order[i], &st);
        CHECK_MSG(st.misses == (i < 2) && st.disk_hits == (i == 2), "fast_math cache, context %d: %llu misses, "
                  "%llu disk hits", i, (unsigned long long)st.misses, (unsigned long long)st.disk_hits);
    }
    /* what each context generates for boxplus */
    char *src[2] = { module_of(exact, boxplus), module_of(fast[0], boxplus) };
    const char *approx = b == KF_BACKEND_CUDA ? "= __expf(" : "= native_exp(";
    if (src[0] && src[1])
        CHECK_MSG(b == KF_BACKEND_CPU ? strcmp(src[0], src[1]) == 0 : !strstr(src[0], approx) && strstr(src[1], approx),
                  "%s: fast_math's module is not what it should be", kf_backend_name(b));
    free(src[0]);
    free(src[1]);
    if (b == KF_BACKEND_CUDA)
        fast_exp_differs(exact, fast[0]);
    kf_device_info info;
    kf_context_info(fast[0], &info);
    fast_run = true;
    run_all(fast[0], &info, argc, argv, nrandom);
    fast_run = false;
    printf("%s fast_math: %d graphs with an approximated op (of the corpus and %d random) run against the "
           "interpreter, %d runs skipped for large sin or cos arguments\n", kf_backend_name(b), graphs_run, nrandom,
           fast_cases_skipped);
    CHECK(graphs_run > 0 || argc > 1);   /* the sanitizer build's corpus and 5 random graphs: 2 on PoCL */
    graphs_run = 0;
done:
    kf_context_destroy(exact);
    kf_context_destroy(fast[0]);
    kf_context_destroy(fast[1]);
    rm_rf(dir);
}

static void test_backend(kf_backend b, int argc, char **argv)
{
    kf_context_options o = { .backend = b, .device = 0 };
    kf_context *ctx, *other = NULL;
    char why[1024];
    if (b == KF_BACKEND_CPU) /* a pool of 7 threads, more than this machine's cores */
        setenv("KFUSE_THREADS", "7", 1);
    kf_status s = kf_context_create(&o, &ctx, why, sizeof why);
    unsetenv("KFUSE_THREADS");
    if (s == KF_ERR_NO_DEVICE || s == KF_ERR_UNSUPPORTED) {
        printf("SKIP %s: %s\n", kf_backend_name(b), why);
        if (b == KF_BACKEND_CUDA)
            CHECK(strstr(why, "cuda") != NULL);
        return;
    }
    CHECK_MSG(s == KF_OK, "%s: %s", kf_backend_name(b), why);
    if (s != KF_OK)
        return;
    kf_context_create(&o, &other, NULL, 0);
#ifdef KFUSE_WITH_LLVM
    if (b == KF_BACKEND_CPU) /* split every launch of 2 or more work units: small arrays use the pool too */
        kf_cpu_tune(ctx->dev, 0, 1);
#endif
    kf_device_info info;
    kf_context_info(ctx, &info);
    printf("%s: %s (%s, %d compute units, %.0f GB/s, fp64 %d, fp16 %d)\n", kf_backend_name(b), info.name,
           info.arch, info.compute_units, info.memory_gbps, info.fp64, info.fp16);
    /* the peak DRAM bandwidth (the launch rule's lean GPU): CUDA's driver gives it, in a GPU's
     * range (an H100 SXM's 3352, an H200's 4.8 TB/s); OpenCL and the CPU backend do not */
    if (b == KF_BACKEND_CUDA)
        CHECK_MSG(info.memory_gbps > 100 && info.memory_gbps < 100000, "CUDA memory_gbps %.1f", info.memory_gbps);
    else
        CHECK(info.memory_gbps == 0);
    test_errors(ctx, other);
    test_wrap(ctx, b);
    test_memo(ctx, other);
    test_threads(ctx);
    test_fold_order(ctx, info.fp64);
    test_narrow_ints(ctx);
    test_wide(ctx, &info);
    const char *nr = getenv("KFUSE_TEST_RANDOM");
    int nrandom = nr ? atoi(nr) : 200;
    run_all(ctx, &info, argc, argv, nrandom);
    printf("%s: %d graphs (corpus and %d random) run against the interpreter\n", kf_backend_name(b), graphs_run,
           nrandom);
    CHECK(graphs_run > 20);
    graphs_run = 0;
    kf_context_destroy(other);
    kf_context_destroy(ctx);
    const char *nf = getenv("KFUSE_TEST_FAST_RANDOM");
    test_fast_math(b, argc, argv, nf ? atoi(nf) : nrandom / 4);
}

/* test_runtime BACKEND [FILE.kir...]: one backend (cuda, opencl, cpu) per
 * process, so CTest runs the backends side by side; "api" runs the
 * backend-independent checks (environment overrides, the comparator's
 * slack). */
int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_runtime api|cuda|opencl|cpu [FILE.kir...]\n");
        return 2;
    }
    if (strcmp(argv[1], "api") == 0) {
        test_env();
        test_sum_slack();
        return kf_test_done();
    }
    kf_backend b = rt_backend_arg("test_runtime", argv[1]);
    if (b == KF_BACKEND_AUTO)
        return 2;
    test_hooks(b);
    test_backend(b, argc - 1, argv + 1);
    return kf_test_done();
}
