/* kfbench: kfuse's device time on the workloads of a .kir file
 * (bench/workloads.kir) at sizes N = 2^k total elements, against a
 * device-to-device copy measured in the same run; --launch adds the host
 * cost of one queued launch (and of a bare cuLaunchKernel on CUDA).  Every
 * kernel is checked against the reference interpreter before it is timed.
 * What is counted and how: bench/README.md. */
#include "kfsample.h"
#include "median.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef KFUSE_WITH_CUDA
#include "bare_cuda.h"
#endif

enum {
    MAX_IO = 16,            /* inputs or outputs of a workload */
    MAX_REPS = 10000,
    CHECK_ALL_MAX = 1 << 20, /* up to this N every element is checked; above, a sample */
    SAMPLES = 1024,         /* positions of the sampled check */
    LAUNCH_N = 4096,
    LAUNCH_CALLS = 10000,
    LAUNCH_LOOPS = 7,
};
#define ROTATE_BYTES ((size_t)256 << 20) /* input sets in rotation: over 4x the L2 of an H100/H200 */
#define COPY_BYTES ((size_t)1 << 30)
#define ROW_BUDGET_MS 2000.0 /* fewer reps where a row would take longer */
#define SPACER_MAX_MS 250.0  /* at most this much copying queued ahead of a row's launches */

/* -- The size table ----------------------------------------------------------- *
 * How a size N (total elements) maps to a workload's symbols.  The symbols
 * listed are fixed; every other symbol is N divided by their product, so the
 * largest array has N elements.  A workload not listed binds every symbol to
 * N (1-D; gather_boxplus: m = n = N).  bench/peers.py holds the same table. */
static const struct size_rule {
    const char *graph;
    const char *sym[2];
    int64_t val[2];
} size_map[] = {
    { "discount", { "t", "k" }, { 16, 256 } }, /* [m,k] by [t,m,k]: m = N/4096 */
    { "rowmax", { "n", NULL }, { 1024, 0 } },  /* [m,n]: m = N/1024 rows */
    { "rowsum", { "n", NULL }, { 1024, 0 } },
};

static bool bind_sizes(const kf_graph *g, int64_t N, int64_t *symval)
{
    const struct size_rule *r = NULL;
    for (size_t i = 0; i < sizeof size_map / sizeof size_map[0]; i++)
        if (strcmp(size_map[i].graph, g->name) == 0)
            r = &size_map[i];
    int64_t fixed = 1;
    for (int32_t s = 0; s < g->nsyms; s++) {
        symval[s] = 0;
        for (int j = 0; r && j < 2; j++)
            if (r->sym[j] && strcmp(r->sym[j], g->syms[s]) == 0)
                fixed *= symval[s] = r->val[j];
    }
    for (int32_t s = 0; s < g->nsyms; s++)
        if (!symval[s])
            symval[s] = N / fixed;
    return N % fixed == 0 && N / fixed >= 1;
}

/* -- Helpers ---------------------------------------------------------------------- */

typedef struct bench {
    kf_context *ctx;
    kf_device_info info;
    kf_stream *st;
    kf_event *ev[MAX_REPS + 1];
    kf_buffer *csrc, *cdst; /* the copy reference, kept as the spacer (below) */
    size_t cbytes;
    double copy_ms, copy_gbps;
    double host_ms;         /* host time per launch of the last time_once() */
    double spacer_ms;       /* the copies queued ahead of its launches */
    size_t mem_cap;         /* device memory one workload may use */
    int reps;
    uint64_t seed;
    FILE *csv;
    char system[32];        /* "kfuse-cuda" */
} bench;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int64_t numel(const kf_host_array *a)
{
    int64_t n = 1;
    for (int d = 0; d < a->rank; d++)
        n *= a->shape[d];
    return n;
}

static size_t nbytes(const kf_host_array *a) { return (size_t)numel(a) * kf_dtype_size(a->dtype); }

static size_t round_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

/* Shape and dtype of node x under symval (data NULL). */
static kf_host_array node_shape(const kf_graph *g, int32_t node, const int64_t *symval)
{
    const kf_irnode *x = &g->nodes[node];
    kf_host_array a = { .dtype = (kf_dtype)x->dtype, .rank = x->rank };
    for (int d = 0; d < x->rank; d++)
        a.shape[d] = x->dims[d] < 0 ? symval[KF_IR_SYM_INDEX(x->dims[d])] : x->dims[d];
    return a;
}

static void shuffle(int64_t *v, int64_t n, rt_rng *rng)
{
    for (int64_t i = 0; i < n; i++)
        v[i] = i;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)(rt_next(rng) % (uint64_t)(i + 1)), t = v[i];
        v[i] = v[j];
        v[j] = t;
    }
}

/* A permutation of 0..n-1, random at two scales: blocks of 4096 elements
 * in random order, each permuted by one random permutation of 4096.  Every
 * element is read once by nearby threads, so the byte floor holds; a fully
 * random one would fetch each 32-byte sector up to four times. */
static bool fill_perm(kf_host_array *a, int64_t n, rt_rng *rng)
{
    int64_t B = n % 4096 == 0 ? 4096 : n, nb = n / B;
    int64_t *blk = malloc((size_t)nb * sizeof *blk), *in = malloc((size_t)B * sizeof *in);
    if (!blk || !in) {
        free(blk);
        free(in);
        return false;
    }
    shuffle(blk, nb, rng);
    shuffle(in, B, rng);
    for (int64_t b = 0; b < nb; b++)
        for (int64_t j = 0; j < B; j++)
            rt_store(a->data, a->dtype, b * B + j, (double)(blk[b] * B + in[j]));
    free(blk);
    free(in);
    return true;
}

/* -- One workload at one size ------------------------------------------------------ */

typedef struct row {
    const kf_graph *g;
    int64_t N, symval[64];
    int nin, nout, narr, nsc, nsets;
    kf_host_array in[MAX_IO];   /* input set 0, on the host */
    kf_host_array out[MAX_IO];  /* output shapes; data: what the device wrote (after the check) */
    const void *scalars[MAX_IO];
    kf_buffer *ib[MAX_IO], *ob[MAX_IO];
    size_t istride[MAX_IO], ostride[MAX_IO];
    kf_view iv[MAX_IO], ov[MAX_IO]; /* set 0; set k is at offset k * stride */
    double bytes;               /* the byte floor: inputs read once, outputs written once */
} row;

static void row_free(row *r)
{
    for (int i = 0; i < MAX_IO; i++) {
        free(r->in[i].data);
        free(r->out[i].data);
        kf_buffer_free(r->ib[i]);
        kf_buffer_free(r->ob[i]);
    }
}

/* Copy set 0 of b over sets 1..nsets-1, doubling what is copied each time. */
static kf_status replicate(kf_buffer *b, size_t stride, int nsets)
{
    kf_status s = KF_OK;
    for (int have = 1; s == KF_OK && have < nsets;) {
        int c = have < nsets - have ? have : nsets - have;
        s = kf_copy(b, (size_t)have * stride, b, 0, (size_t)c * stride, NULL);
        have += c;
    }
    return s;
}

/* Host inputs, device buffers with as many rotated input sets as
 * ROTATE_BYTES asks for (within the memory cap), and one set of outputs
 * that every run writes, as the peers' allocators give theirs a recycled
 * block.  Returns false with why[] filled. */
static bool row_prepare(bench *b, const kf_graph *g, int64_t N, row *r, char *why, size_t wlen)
{
    memset(r, 0, sizeof *r);
    r->g = g;
    r->N = N;
    r->nin = kf_graph_num_inputs(g);
    r->nout = kf_graph_num_outputs(g);
    if (g->nsyms > 64 || r->nin > MAX_IO || r->nout > MAX_IO || !bind_sizes(g, N, r->symval)) {
        snprintf(why, wlen, "N = %lld does not fit the size table", (long long)N);
        return false;
    }
    rt_rng rng = { b->seed ^ (uint64_t)N };
    size_t set = 0;
    for (int i = 0; i < r->nin; i++) {
        kf_host_array *a = &r->in[i];
        if (rt_fill_input(g, i, r->symval, &rng, a) < 0)
            goto oom;
        int64_t tl = rt_take_len(g, g->inputs[i], r->symval);
        if (tl > 0 && tl == numel(a) && !fill_perm(a, tl, &rng))
            goto oom;
        if (g->nodes[g->inputs[i]].scalar) {
            r->scalars[r->nsc++] = a->data;
            continue;
        }
        r->istride[i] = round_up(nbytes(a), 256);
        set += r->istride[i];
        r->bytes += (double)nbytes(a);
    }
    size_t outs = 0;
    for (int j = 0; j < r->nout; j++) {
        r->out[j] = node_shape(g, g->outputs[j], r->symval);
        r->ostride[j] = round_up(nbytes(&r->out[j]), 256);
        outs += r->ostride[j];
        r->bytes += (double)nbytes(&r->out[j]);
    }
    size_t room = b->mem_cap > outs ? b->mem_cap - outs : 0; /* for the input sets */
    size_t want = set ? (ROTATE_BYTES + set - 1) / set : 1;
    if (set && want > room / set)
        want = room / set;
    r->nsets = (int)(want < (size_t)MAX_REPS ? want : MAX_REPS);
    if (r->nsets < 1 || outs > b->mem_cap) {
        snprintf(why, wlen, "one set of arrays (%.2f GiB) does not fit the %.2f GiB allowed",
                 (double)(set + outs) / 1073741824.0, b->mem_cap / 1073741824.0);
        return false;
    }
    for (int i = 0; i < r->nin; i++) {
        kf_host_array *a = &r->in[i];
        if (g->nodes[g->inputs[i]].scalar)
            continue;
        if (kf_buffer_alloc(b->ctx, r->istride[i] * (size_t)r->nsets, &r->ib[i]) != KF_OK ||
            kf_upload(r->ib[i], 0, a->data, nbytes(a), NULL) != KF_OK ||
            replicate(r->ib[i], r->istride[i], r->nsets) != KF_OK)
            goto device;
        r->iv[r->narr++] = kf_view_dense(r->ib[i], 0, a->dtype, a->rank, a->shape);
    }
    for (int j = 0; j < r->nout; j++) {
        if (kf_buffer_alloc(b->ctx, r->ostride[j], &r->ob[j]) != KF_OK)
            goto device;
        r->ov[j] = kf_view_dense(r->ob[j], 0, r->out[j].dtype, r->out[j].rank, r->out[j].shape);
    }
    return true;
oom:
    snprintf(why, wlen, "out of host memory");
    return false;
device:
    snprintf(why, wlen, "%s", kf_context_error(b->ctx));
    return false;
}

/* Queue one run of set k. */
static kf_status row_run(bench *b, kf_program *p, row *r, int k)
{
    kf_view iv[MAX_IO], ov[MAX_IO];
    int a = 0;
    for (int i = 0; i < r->nin; i++) {
        if (!r->ib[i])
            continue;
        iv[a] = r->iv[a];
        iv[a].offset = (size_t)k * r->istride[i];
        a++;
    }
    for (int j = 0; j < r->nout; j++)
        ov[j] = r->ov[j];
    return kf_run(p, b->st, iv, r->narr, r->scalars, r->nsc, ov, r->nout);
}

/* -- The check ------------------------------------------------------------------------ */

/* dst: src with axis ax cut down to the positions pos[0..S). */
static bool gather_axis(const kf_host_array *src, int ax, const int64_t *pos, int64_t S, kf_host_array *dst)
{
    size_t es = kf_dtype_size(src->dtype);
    int64_t outer = 1, inner = 1, D = src->shape[ax];
    for (int d = 0; d < ax; d++)
        outer *= src->shape[d];
    for (int d = ax + 1; d < src->rank; d++)
        inner *= src->shape[d];
    *dst = *src;
    dst->shape[ax] = S;
    if (!(dst->data = malloc((size_t)(outer * S * inner) * es + 8)))
        return false;
    size_t chunk = (size_t)inner * es;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t s = 0; s < S; s++)
            memcpy((char *)dst->data + (size_t)(o * S + s) * chunk, (const char *)src->data + (size_t)(o * D + pos[s]) * chunk,
                   chunk);
    return true;
}

/* The axis of x that is symbol sym, -1 if none, -2 if more than one. */
static int sym_axis(const kf_irnode *x, int sym)
{
    int ax = -1;
    for (int d = 0; d < x->rank; d++)
        if (x->dims[d] == KF_IR_SYM(sym))
            ax = ax == -1 ? d : -2;
    return ax;
}

static bool is_take_source(const kf_graph *g, int32_t node)
{
    for (int32_t i = 0; i < g->nnodes; i++)
        if (g->nodes[i].op == KF_OP_TAKE && g->nodes[i].args[0] == node)
            return true;
    return false;
}

/* The symbol a sampled check cuts down: the largest of output 0's, when
 * each output and iota has it once, each input at most once and no take
 * source at all.  -1: evaluate everything (a full reduction, say). */
static int sample_symbol(const kf_graph *g, const int64_t *symval)
{
    int best = -1;
    const kf_irnode *o = &g->nodes[g->outputs[0]];
    for (int d = 0; d < o->rank; d++)
        if (o->dims[d] < 0 && (best < 0 || symval[KF_IR_SYM_INDEX(o->dims[d])] > symval[best]))
            best = KF_IR_SYM_INDEX(o->dims[d]);
    if (best < 0 || symval[best] <= SAMPLES)
        return -1;
    for (int j = 0; j < g->noutputs; j++)
        if (sym_axis(&g->nodes[g->outputs[j]], best) < 0)
            return -1;
    for (int32_t i = 0; i < g->nnodes; i++) {
        const kf_irnode *x = &g->nodes[i];
        int ax = sym_axis(x, best);
        if ((x->op == KF_OP_INPUT && (ax == -2 || (ax >= 0 && is_take_source(g, i)))) ||
            (x->op == KF_OP_IOTA && ax < 0))
            return -1;
    }
    return best;
}

/* A copy of g in which each iota is an extra input, so that a sampled check
 * can give every element its true position. */
static kf_graph *iota_as_inputs(const kf_graph *g)
{
    kf_graph *h = kf_graph_clone(g);
    for (int32_t i = 0; h && i < h->nnodes; i++) {
        kf_irnode *x = &h->nodes[i];
        if (x->op != KF_OP_IOTA)
            continue;
        int32_t *in = realloc(h->inputs, (size_t)(h->ninputs + 1) * sizeof *in);
        if (!in) {
            kf_graph_free(h);
            return NULL;
        }
        h->inputs = in;
        h->incap = h->ninputs + 1;
        x->op = KF_OP_INPUT;
        x->param = h->ninputs;
        x->nargs = 0;
        h->inputs[h->ninputs++] = i;
    }
    return h;
}

/* Reference outputs: g on every element, or, where sample_symbol() allows,
 * on SAMPLES positions along that symbol (the first, the last and random
 * ones) with the device's outputs cut down to the same positions. */
static bool reference(row *r, uint64_t seed, kf_host_array *ref, kf_host_array *got, char *why, size_t wlen)
{
    const kf_graph *g = r->g;
    int sym = r->N > CHECK_ALL_MAX ? sample_symbol(g, r->symval) : -1;
    if (sym < 0) {
        for (int j = 0; j < r->nout; j++)
            got[j] = r->out[j];
        kf_status s = kf_interpret(g, r->in, r->nin, ref, r->nout, why, wlen);
        return s == KF_OK;
    }
    int64_t pos[SAMPLES], S = SAMPLES, D = r->symval[sym];
    rt_rng rng = { seed };
    for (int64_t s = 0; s < S; s++)
        pos[s] = s == 0 ? 0 : s == 1 ? D - 1 : (int64_t)(rt_next(&rng) % (uint64_t)D);
    kf_graph *h = iota_as_inputs(g);
    kf_host_array in[2 * MAX_IO];
    bool own[2 * MAX_IO] = { false }, ok = h && h->ninputs <= 2 * MAX_IO;
    for (int i = 0; ok && i < h->ninputs; i++) {
        const kf_irnode *x = &h->nodes[h->inputs[i]];
        int ax = sym_axis(x, sym);
        if (i < r->nin) { /* an input of g: cut down along sym, or used whole */
            in[i] = r->in[i];
            if (ax >= 0)
                ok = own[i] = gather_axis(&r->in[i], ax, pos, S, &in[i]);
            continue;
        }
        /* an iota: each element's position along its axis, the true one along sym */
        in[i] = node_shape(h, h->inputs[i], r->symval);
        in[i].shape[ax] = S;
        int iax = x->axis < 0 ? x->axis + x->rank : x->axis;
        int64_t inner = 1, n = numel(&in[i]);
        for (int d = iax + 1; d < x->rank; d++)
            inner *= in[i].shape[d];
        if (!(ok = own[i] = (in[i].data = malloc((size_t)n * kf_dtype_size(in[i].dtype) + 8)) != NULL))
            break;
        for (int64_t e = 0; e < n; e++) {
            int64_t k = e / inner % in[i].shape[iax];
            rt_store(in[i].data, in[i].dtype, e, (double)(iax == ax ? pos[k] : k));
        }
    }
    kf_status s = ok ? kf_interpret(h, in, h->ninputs, ref, r->nout, why, wlen) : KF_ERR_NO_MEMORY;
    for (int j = 0; s == KF_OK && j < r->nout; j++)
        if (!gather_axis(&r->out[j], sym_axis(&g->nodes[g->outputs[j]], sym), pos, S, &got[j]))
            s = KF_ERR_NO_MEMORY;
    for (int i = 0; i < 2 * MAX_IO; i++)
        if (own[i])
            free(in[i].data);
    kf_graph_free(h);
    if (!ok || s == KF_ERR_NO_MEMORY)
        snprintf(why, wlen, "out of host memory");
    return s == KF_OK;
}

/* Poison set 0's outputs, run set 0, compare with the reference.  True when
 * every checked element is within tolerance; msg says what was checked. */
static bool row_check(bench *b, kf_program *p, row *r, char *msg, size_t mlen)
{
    for (int j = 0; j < r->nout; j++) {
        size_t n = nbytes(&r->out[j]);
        if (!(r->out[j].data = malloc(n + 8))) {
            snprintf(msg, mlen, "out of host memory");
            return false;
        }
        memset(r->out[j].data, 0xff, n); /* NaN in every float, -1 in every integer */
        if (kf_upload(r->ob[j], 0, r->out[j].data, n, NULL) != KF_OK)
            goto device;
    }
    if (row_run(b, p, r, 0) != KF_OK || kf_stream_sync(b->ctx, b->st) != KF_OK)
        goto device;
    for (int j = 0; j < r->nout; j++)
        if (kf_download(r->out[j].data, r->ob[j], 0, nbytes(&r->out[j]), NULL) != KF_OK)
            goto device;
    kf_host_array ref[MAX_IO], got[MAX_IO];
    memset(ref, 0, sizeof ref);
    memset(got, 0, sizeof got);
    char why[512] = "";
    bool sampled = false, ok = reference(r, b->seed + 1, ref, got, why, sizeof why);
    int64_t bad = 0, checked = 0;
    double maxerr = 0;
    for (int j = 0; ok && j < r->nout; j++) {
        double e;
        int64_t first, n = numel(&got[j]);
        sampled |= got[j].data != r->out[j].data;
        bad += rt_compare(got[j].data, ref[j].data, ref[j].dtype, n, &e, &first);
        checked += n;
        maxerr = e > maxerr ? e : maxerr;
    }
    for (int j = 0; j < r->nout; j++) {
        kf_free(ref[j].data);
        if (got[j].data != r->out[j].data)
            free(got[j].data);
    }
    if (!ok)
        snprintf(msg, mlen, "reference: %s", why);
    else
        snprintf(msg, mlen, "%s %lld elements: %lld wrong, largest error %.3g", sampled ? "sampled" : "all",
                 (long long)checked, (long long)bad, maxerr);
    return ok && bad == 0;
device:
    snprintf(msg, mlen, "%s", kf_context_error(b->ctx));
    return false;
}

/* -- Timing -------------------------------------------------------------------------- */

/* Median device ms of reps launches: each launch sits between two events,
 * behind a spacer (copies) long enough that the host queues them all
 * before the device reaches the first, so host time never enters:
 * twice the host time per launch seen last (at least 20 us), at most
 * SPACER_MAX_MS of copies.  time_launches checks that it was. */
static bool time_once(bench *b, int reps, kf_status (*launch)(bench *, void *, int), void *arg, double *ms)
{
    double per = 2 * b->host_ms > 0.02 ? 2 * b->host_ms : 0.02;
    double want = per * reps < SPACER_MAX_MS ? per * reps : SPACER_MAX_MS;
    double spacer = b->copy_ms > 0 ? want / b->copy_ms * (double)b->cbytes : 0;
    b->spacer_ms = b->copy_ms > 0 ? want : 0;
    for (; spacer > 0; spacer -= (double)b->cbytes) {
        size_t n = spacer < (double)b->cbytes ? round_up((size_t)spacer, 256) : b->cbytes;
        if (kf_copy(b->cdst, 0, b->csrc, 0, n, b->st) != KF_OK)
            return false;
    }
    if (kf_event_record(b->ev[0], b->st) != KF_OK)
        return false;
    double t0 = now_ms();
    for (int k = 0; k < reps; k++)
        if (launch(b, arg, k) != KF_OK || kf_event_record(b->ev[k + 1], b->st) != KF_OK)
            return false;
    b->host_ms = (now_ms() - t0) / reps;
    if (kf_stream_sync(b->ctx, b->st) != KF_OK)
        return false;
    double *t = malloc((size_t)reps * sizeof *t);
    if (!t)
        return false;
    for (int k = 0; k < reps; k++) {
        float e;
        if (kf_event_elapsed(b->ev[k], b->ev[k + 1], &e) != KF_OK) {
            free(t);
            return false;
        }
        t[k] = e;
    }
    *ms = bench_median(t, reps);
    free(t);
    return true;
}

/* time_once until the host stayed ahead: else the device may have waited
 * for the host, and its times be the host's.  Again (three tries at most)
 * with a spacer from the host time just seen, where one can cover it. */
static bool time_launches(bench *b, int reps, kf_status (*launch)(bench *, void *, int), void *arg, double *ms)
{
    for (int attempt = 0;; attempt++) {
        if (!time_once(b, reps, launch, arg, ms))
            return false;
        if (b->copy_ms == 0 || b->host_ms * reps <= b->spacer_ms)
            return true;
        bool again = attempt < 2 && 2 * b->host_ms * reps <= SPACER_MAX_MS;
        fprintf(stderr, "kfbench: host-bound row (%.1f us per launch on the host, %.2f ms of copies ahead): %s\n",
                b->host_ms * 1e3, b->spacer_ms, again ? "timed again" : "kept");
        if (!again)
            return true;
    }
}

typedef struct row_arg {
    kf_program *p;
    row *r;
    int first;
} row_arg;

static kf_status launch_row(bench *b, void *arg, int k)
{
    row_arg *a = arg;
    return row_run(b, a->p, a->r, (a->first + k) % a->r->nsets);
}

static kf_status launch_copy(bench *b, void *arg, int k)
{
    (void)arg;
    (void)k;
    return kf_copy(b->cdst, 0, b->csrc, 0, b->cbytes, b->st);
}

/* The copy reference: GB/s of bytes read plus bytes written. */
static bool measure_copy(bench *b)
{
    size_t want = b->info.memory_bytes / 16;
    b->cbytes = round_up(want < COPY_BYTES ? want : COPY_BYTES, 1 << 20);
    double ms;
    if (kf_buffer_alloc(b->ctx, b->cbytes, &b->csrc) != KF_OK || kf_buffer_alloc(b->ctx, b->cbytes, &b->cdst) != KF_OK)
        return false;
    /* nonzero source bytes: a copy of fresh (untouched) pages can be cheaper */
    unsigned char *h = malloc(1 << 20);
    if (!h)
        return false;
    memset(h, 0x3c, 1 << 20);
    kf_status s = kf_upload(b->csrc, 0, h, b->cbytes < (1 << 20) ? b->cbytes : (1 << 20), NULL);
    free(h);
    if (s != KF_OK || replicate(b->csrc, 1 << 20, (int)(b->cbytes >> 20)) != KF_OK)
        return false;
    int reps = b->reps < 20 ? b->reps : 20;
    b->copy_ms = 0; /* no spacer for the copy itself */
    if (!time_launches(b, 2, launch_copy, NULL, &ms) || !time_launches(b, reps, launch_copy, NULL, &ms))
        return false;
    b->copy_ms = ms;
    b->copy_gbps = 2.0 * (double)b->cbytes / ms / 1e6;
    return true;
}

static void csv_row(bench *b, const char *system, const char *workload, int64_t n, double ms, double gbps, int kernels)
{
    if (!b->csv)
        return;
    fprintf(b->csv, "%s,%s,%lld,%.6g,", system, workload, (long long)n, ms);
    if (gbps > 0)
        fprintf(b->csv, "%.4g,%.4g,%.4f,", gbps, b->copy_gbps, gbps / b->copy_gbps);
    else
        fprintf(b->csv, ",,,");
    fprintf(b->csv, "%d\n", kernels);
    fflush(b->csv);
}

/* One workload at every size.  Returns false when a kernel was wrong or the
 * device failed. */
static bool bench_graph(bench *b, const kf_graph *g, const int *logs, int nlogs)
{
    kf_program *p;
    double t0 = now_ms();
    if (kf_compile(b->ctx, g, &p) != KF_OK) {
        fprintf(stderr, "kfbench: %s: %s\n", g->name, kf_context_error(b->ctx));
        return false;
    }
    int nk = kf_program_num_kernels(p);
    printf("%s: %d kernel%s (compiled or loaded in %.0f ms)\n", g->name, nk, nk == 1 ? "" : "s", now_ms() - t0);
    bool ok = true;
    for (int li = 0; ok && li < nlogs; li++) {
        row r;
        char msg[600];
        int64_t N = (int64_t)1 << logs[li];
        t0 = now_ms();
        if (!row_prepare(b, g, N, &r, msg, sizeof msg)) {
            printf("  2^%-2d skipped: %s\n", logs[li], msg);
            row_free(&r);
            continue;
        }
        if (!row_check(b, p, &r, msg, sizeof msg)) {
            printf("  2^%-2d WRONG, not timed: %s\n", logs[li], msg);
            row_free(&r);
            ok = false;
            break;
        }
        row_arg a = { p, &r, 1 };
        double ms;
        int warm = r.nsets < 3 ? r.nsets : 3, reps = b->reps;
        if (!time_once(b, warm, launch_row, &a, &ms))   /* warm-up: its times only size the row */
            goto device;
        if (ms * reps > ROW_BUDGET_MS)
            reps = ms > ROW_BUDGET_MS / 5 ? 5 : (int)(ROW_BUDGET_MS / ms);
        a.first = 1 + warm;
        if (!time_launches(b, reps, launch_row, &a, &ms))
            goto device;
        double gbps = r.bytes / ms / 1e6;
        printf("  2^%-2d %10.4f ms %9.1f GB/s %6.3f of copy  (%d reps, %d sets; %s; %.1f s)\n", logs[li], ms, gbps,
               gbps / b->copy_gbps, reps, r.nsets, msg, (now_ms() - t0) / 1e3);
        fflush(stdout);
        csv_row(b, b->system, g->name, N, ms, gbps, nk);
        row_free(&r);
        continue;
    device:
        fprintf(stderr, "kfbench: %s at 2^%d: %s\n", g->name, logs[li], kf_context_error(b->ctx));
        row_free(&r);
        ok = false;
    }
    kf_program_free(p);
    return ok;
}

/* -- Launch overhead ------------------------------------------------------------------- */

/* A loop body for the launch figures: one queued call, and a sync. */
typedef struct launcher {
    void *arg;
    bool (*launch)(void *);
    bool (*sync)(void *);
} launcher;

/* Host us per call of LAUNCH_CALLS calls queued without a sync, for each
 * of nl launchers (at most 2), their loops interleaved: the driver's own
 * cost drifts by a microsecond from process to process and within one, and
 * interleaving gives both the same drift.  One untimed loop each first;
 * sync() after each loop, untimed.  us[i]: the median of launcher i's
 * loops; *diff (nl == 2): the median of the loops' differences us0 - us1. */
static bool host_per_call_us(const launcher *ls, int nl, double *us, double *diff)
{
    double t[2][LAUNCH_LOOPS], d[LAUNCH_LOOPS];
    for (int l = -1; l < LAUNCH_LOOPS; l++)
        for (int i = 0; i < nl; i++) {
            double t0 = now_ms();
            for (int k = 0; k < LAUNCH_CALLS; k++)
                if (!ls[i].launch(ls[i].arg))
                    return false;
            double dt = now_ms() - t0;
            if (!ls[i].sync(ls[i].arg))
                return false;
            if (l >= 0)
                t[i][l] = dt * 1e3 / LAUNCH_CALLS;
        }
    for (int l = 0; nl == 2 && l < LAUNCH_LOOPS; l++)
        d[l] = t[0][l] - t[1][l];
    for (int i = 0; i < nl; i++)
        us[i] = bench_median(t[i], LAUNCH_LOOPS);
    if (nl == 2)
        *diff = bench_median(d, LAUNCH_LOOPS);
    return true;
}

typedef struct kf_launch {
    bench *b;
    kf_program *p;
    kf_view x, y;
} kf_launch;

static bool kf_launch_one(void *arg)
{
    kf_launch *l = arg;
    return kf_run(l->p, l->b->st, &l->x, 1, NULL, 0, &l->y, 1) == KF_OK;
}

static bool kf_launch_sync(void *arg)
{
    kf_launch *l = arg;
    return kf_stream_sync(l->b->ctx, l->b->st) == KF_OK;
}

/* kfuse's host cost per queued launch of the cached x5 at n = LAUNCH_N,
 * and on CUDA the bare driver's beside it (bench/bare_cuda.h), their loops
 * interleaved. */
static bool bench_launch(bench *b, const kf_module *m, int device)
{
    const kf_graph *g = kf_module_find(m, "x5");
    if (!g) {
        fprintf(stderr, "kfbench: --launch needs the graph x5 in the .kir file\n");
        return false;
    }
    kf_launch l = { .b = b };
    int64_t n = LAUNCH_N;
    float h[LAUNCH_N];
    for (int i = 0; i < LAUNCH_N; i++)
        h[i] = (float)(i % 7) - 3;
    kf_buffer *bx = NULL, *by = NULL;
    bool ok = kf_compile(b->ctx, g, &l.p) == KF_OK && kf_buffer_alloc(b->ctx, sizeof h, &bx) == KF_OK &&
              kf_buffer_alloc(b->ctx, sizeof h, &by) == KF_OK && kf_upload(bx, 0, h, sizeof h, NULL) == KF_OK;
    launcher ls[2] = { { &l, kf_launch_one, kf_launch_sync } };
    int nl = 1;
    double us[2] = { -1, -1 }, diff = 0;
    char why[600] = "";
#ifdef KFUSE_WITH_CUDA
    bare_cuda c;
    bool bare = ok && b->info.backend == KF_BACKEND_CUDA && bare_cuda_open(&c, device, b->info.arch, LAUNCH_N, why,
                                                                          sizeof why);
    if (bare)
        ls[nl++] = (launcher){ &c, bare_cuda_launch, bare_cuda_sync };
#endif
    if (ok) {
        l.x = kf_view_dense(bx, 0, KF_F32, 1, &n);
        l.y = kf_view_dense(by, 0, KF_F32, 1, &n);
        ok = host_per_call_us(ls, nl, us, &diff);
    }
#ifdef KFUSE_WITH_CUDA
    if (bare)
        bare_cuda_close(&c);
#endif
    kf_program_free(l.p);
    kf_buffer_free(bx);
    kf_buffer_free(by);
    if (!ok) {
        fprintf(stderr, "kfbench: --launch: a set-up, launch or sync failed: %s\n", kf_context_error(b->ctx));
        return false;
    }
    printf("launch: x5 at n=%d, %d calls queued on one stream: kfuse %.2f us per call (host)\n", LAUNCH_N,
           LAUNCH_CALLS, us[0]);
    csv_row(b, b->system, "launch", LAUNCH_N, us[0] / 1e3, 0, 1);
    if (nl == 2) {
        printf("launch: bare cuLaunchKernel %.2f us per call, loops interleaved with kfuse's; kfuse adds %.2f us "
               "(median of the loops' differences)\n", us[1], diff);
        csv_row(b, "cuda-bare", "launch", LAUNCH_N, us[1] / 1e3, 0, 1);
    } else if (why[0]) {
        printf("launch: bare cuLaunchKernel not measured: %s\n", why);
    }
    (void)device;
    return true;
}

/* -- Main ------------------------------------------------------------------------------ */

static int usage(void)
{
    fprintf(stderr, "usage: kfbench [--backend cuda|opencl|cpu] [--device I] [--sizes 12,20,26,28] [--reps N]\n"
                    "               [--seed S] [--csv FILE] [--launch] [--stream own|legacy] [--fast-math]\n"
                    "               WORKLOADS.kir [GRAPH...]\n"
                    "       kfbench --list [--backend B]    (the backend's devices, by index)\n");
    return 2;
}

static bool parse_sizes(const char *s, int *logs, int *n)
{
    *n = 0;
    for (char *end; *s; s = *end ? end + 1 : end) {
        long v = strtol(s, &end, 10);
        if (end == s || (*end && *end != ',') || v < 12 || v > 31 || *n == 16)
            return false;
        logs[(*n)++] = (int)v;
    }
    return *n > 0;
}

static int list_devices(kf_backend be)
{
    for (int d = 0;; d++) {
        kf_context_options o = { .backend = be, .device = d, .cache_mode = KF_CACHE_OFF };
        kf_context *ctx;
        char why[512];
        if (kf_context_create(&o, &ctx, why, sizeof why) != KF_OK) {
            if (d == 0)
                fprintf(stderr, "kfbench: %s\n", why);
            return d ? 0 : 1;
        }
        kf_device_info info;
        kf_context_info(ctx, &info);
        printf("%d: %s (%s, driver %s, %.1f GiB%s)\n", d, info.name, info.arch, info.driver,
               info.memory_bytes / 1073741824.0, info.gpu ? ", GPU" : "");
        kf_context_destroy(ctx);
    }
}

#ifdef KFBENCH_ENTRY
/* The kfbench_inproc module (bench/inproc.py): this program as a function,
 * run in the process of the peer it is compared with. */
int KFBENCH_ENTRY(int argc, char **argv);
#define main KFBENCH_ENTRY
#endif

int main(int argc, char **argv)
{
    kf_context_options o = { .backend = KF_BACKEND_AUTO, .device = -1 };
    bench b = { .reps = 50, .seed = 20240607 };
    int logs[16] = { 12, 20, 26, 28 }, nlogs = 4;
    bool launch = false, list = false, legacy = false;
    const char *csv = NULL, *kir = NULL;
    int first_graph = argc;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--launch") == 0) {
            launch = true;
        } else if (strcmp(a, "--list") == 0) {
            list = true;
        } else if (strcmp(a, "--fast-math") == 0) {   /* kf_context_options.fast_math: system "kfuse-cuda-fast" */
            o.fast_math = true;
        } else if (a[0] == '-' && !v) {
            return usage();
        } else if (strcmp(a, "--backend") == 0) {
            i++;
            o.backend = strcmp(v, "cuda") == 0     ? KF_BACKEND_CUDA
                        : strcmp(v, "opencl") == 0 ? KF_BACKEND_OPENCL
                        : strcmp(v, "cpu") == 0    ? KF_BACKEND_CPU
                                                   : (kf_backend)-1;
            if ((int)o.backend < 0)
                return usage();
        } else if (strcmp(a, "--device") == 0) {
            o.device = atoi(argv[++i]);
        } else if (strcmp(a, "--sizes") == 0) {
            if (!parse_sizes(argv[++i], logs, &nlogs))
                return usage();
        } else if (strcmp(a, "--reps") == 0) {
            b.reps = atoi(argv[++i]);
            if (b.reps < 1 || b.reps > MAX_REPS)
                return usage();
        } else if (strcmp(a, "--seed") == 0) {
            b.seed = strtoull(argv[++i], NULL, 0);
        } else if (strcmp(a, "--csv") == 0) {
            csv = argv[++i];
        } else if (strcmp(a, "--stream") == 0) {   /* own: kf_stream_create; legacy: CUDA's, as the peers' */
            legacy = strcmp(argv[++i], "legacy") == 0;
            if (!legacy && strcmp(argv[i], "own") != 0)
                return usage();
        } else if (a[0] == '-') {
            return usage();
        } else {
            kir = a;
            first_graph = i + 1;
            break;
        }
    }
    if (list)
        return list_devices(o.backend == KF_BACKEND_AUTO ? KF_BACKEND_CUDA : o.backend);
    if (!kir)
        return usage();
    kf_module *m;
    if (kf_module_parse_file(kir, NULL, &m) != KF_OK) {
        fprintf(stderr, "kfbench: %s\n", m ? kf_module_error(m) : "out of memory");
        kf_module_free(m);
        return 1;
    }
    char why[1024];
    if (kf_context_create(&o, &b.ctx, why, sizeof why) != KF_OK) {
        fprintf(stderr, "kfbench: %s\n", why);
        kf_module_free(m);
        return 1;
    }
    kf_context_info(b.ctx, &b.info);
    snprintf(b.system, sizeof b.system, "kfuse-%s%s", kf_backend_name(b.info.backend), o.fast_math ? "-fast" : "");
    char peak[48] = "";
    if (b.info.memory_gbps > 0)   /* known on CUDA: the launch rule reads it */
        snprintf(peak, sizeof peak, ", peak DRAM %.0f GB/s", b.info.memory_gbps);
    printf("# kfbench: %s on %s (%s, driver %s, %.1f GiB, %d compute units%s)%s\n", b.system, b.info.name,
           b.info.arch, b.info.driver, b.info.memory_bytes / 1073741824.0, b.info.compute_units, peak,
           legacy ? "; on CUDA's legacy default stream" : "");
    int rc = 1;
    if (csv && !(b.csv = fopen(csv, "w"))) {
        fprintf(stderr, "kfbench: cannot write %s\n", csv);
        goto done;
    }
    if (b.csv)
        fprintf(b.csv, "system,workload,n,ms,gbps,copy_gbps,ratio,kernels\n");
    if ((legacy ? kf_stream_wrap(b.ctx, NULL, &b.st) : kf_stream_create(b.ctx, &b.st)) != KF_OK)
        goto device;
    for (int k = 0; k <= MAX_REPS && k <= b.reps + 3; k++)
        if (kf_event_create(b.ctx, &b.ev[k]) != KF_OK)
            goto device;
    if (!measure_copy(&b))
        goto device;
    printf("copy: kf_copy of %.0f MiB: %.4f ms, %.1f GB/s (read + written)\n", b.cbytes / 1048576.0, b.copy_ms,
           b.copy_gbps);
    csv_row(&b, b.system, "copy", (int64_t)b.cbytes, b.copy_ms, b.copy_gbps, 1);
    /* half the device for one workload's sets, less the copy buffers */
    b.mem_cap = b.info.memory_bytes / 2 > 2 * b.cbytes ? b.info.memory_bytes / 2 - 2 * b.cbytes : b.cbytes;
    if (launch && !bench_launch(&b, m, o.device < 0 ? 0 : o.device))
        goto done;
    rc = 0;
    for (int i = 0; i < kf_module_num_graphs(m); i++) {
        const kf_graph *g = kf_module_graph(m, i);
        bool chosen = first_graph >= argc;
        for (int a = first_graph; a < argc; a++)
            chosen |= strcmp(argv[a], g->name) == 0;
        if (chosen && !bench_graph(&b, g, logs, nlogs))
            rc = 1;
    }
    for (int a = first_graph; a < argc; a++)
        if (!kf_module_find(m, argv[a])) {
            fprintf(stderr, "kfbench: %s has no graph '%s'\n", kir, argv[a]);
            rc = 1;
        }
    goto done;
device:
    fprintf(stderr, "kfbench: %s\n", kf_context_error(b.ctx));
done:
    if (b.csv)
        fclose(b.csv);
    kf_context_destroy(b.ctx);
    kf_module_free(m);
    return rc;
}
