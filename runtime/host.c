/* kf_run_host: a program run on host arrays.  The iteration space is split
 * into chunks along a leading symbolic axis where the graph allows it, the
 * upload, compute and download of successive chunks overlap on several
 * streams, pageable memory moves through the context's pinned staging pool
 * and reductions over the axis are combined on the host.  docs/host.md
 * states the rules this file implements. */
#include "bind.h"
#include "half.h"
#include "host.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HX_MAX_STREAMS 16
#define HX_DEFAULT_STREAMS 3
#define HX_ALIGN ((size_t)256) /* of each array in a staging slot */

/* -- Which nodes can be chunked ------------------------------------------------------ *
 * Along symbol S at axis 0 every node is WHOLE (the same in every chunk:
 * it has no S), CHUNK (S is its leading dimension and chunk c's rows of it
 * depend only on chunk c's rows of the inputs), PARTIAL (a sum, prod, min,
 * max or mean over axis 0 of a CHUNK node: one value per chunk, combined on
 * the host, so only an output may be one), or BAD for one of the reasons
 * below (inherited by every node that uses it). */

enum { NODE_WHOLE, NODE_CHUNK, NODE_PARTIAL, BAD_DIM, BAD_IOTA, BAD_TAKE, BAD_ARG, BAD_USED };

static bool combinable(kf_op op)
{
    return op == KF_OP_SUM || op == KF_OP_PROD || op == KF_OP_RMIN || op == KF_OP_RMAX || op == KF_OP_MEAN;
}

static void node_label(const kf_graph *g, int32_t n, char *buf, size_t len)
{
    const kf_irnode *x = &g->nodes[n];
    if (x->name)
        snprintf(buf, len, "'%s' (%s)", x->name, kf_op_name((kf_op)x->op));
    else
        snprintf(buf, len, "%s node %d", kf_op_name((kf_op)x->op), (int)n);
}

/* Classify every node of g along symbol sym into st (org: the node a BAD
 * state comes from).  False, with the reason in why, when an output or an
 * input is BAD or no output depends on the axis. */
static bool classify(const kf_graph *g, int sym, uint8_t *st, int32_t *org, char *why, size_t whylen)
{
    int64_t S = KF_IR_SYM(sym);
    const char *name = g->syms[sym];
    for (int32_t i = 0; i < g->nnodes; i++) {
        const kf_irnode *x = &g->nodes[i];
        bool lead = x->rank > 0 && x->dims[0] == S;
        uint8_t s = lead ? NODE_CHUNK : NODE_WHOLE;
        int32_t o = i;
        for (int d = 1; d < x->rank; d++)
            if (x->dims[d] == S)
                s = BAD_DIM;
        for (int k = 0; k < x->nargs && s < BAD_DIM; k++) {
            uint8_t a = st[x->args[k]];
            if (a >= BAD_DIM) {
                s = a;
                o = org[x->args[k]];
            } else if (a == NODE_PARTIAL) {
                s = BAD_USED;
            }
        }
        if (s < BAD_DIM) {
            kf_kind kind = (kf_kind)kf_ir_op((kf_op)x->op)->kind;
            if (x->op == KF_OP_IOTA && lead && x->axis == 0)
                s = BAD_IOTA;
            else if (x->op == KF_OP_TAKE && st[x->args[0]] == NODE_CHUNK)
                s = BAD_TAKE;
            else if (kind == KF_KIND_REDUCE && st[x->args[0]] == NODE_CHUNK && (x->axes & 1))
                s = combinable((kf_op)x->op) ? NODE_PARTIAL : BAD_ARG;
        }
        st[i] = s;
        org[i] = o;
    }
    /* every output, and every input: a run binds the symbols of all */
    int split = 0;
    for (int32_t j = 0; j < g->noutputs + g->ninputs; j++) {
        int32_t n = j < g->noutputs ? g->outputs[j] : g->inputs[j - g->noutputs];
        uint8_t s = st[n];
        split += j < g->noutputs && (s == NODE_CHUNK || s == NODE_PARTIAL);
        if (s < BAD_DIM)
            continue;
        int32_t o = org[n];
        char lb[96];
        node_label(g, o, lb, sizeof lb);
        int d = 1;
        while (d < g->nodes[o].rank - 1 && g->nodes[o].dims[d] != S)
            d++;
        switch (s) {
        case BAD_DIM: snprintf(why, whylen, "%s has '%s' as dimension %d, not as its leading one", lb, name, d); break;
        case BAD_IOTA: snprintf(why, whylen, "%s counts along '%s', so it depends on a chunk's position", lb, name); break;
        case BAD_TAKE: snprintf(why, whylen, "%s gathers from an array that spans '%s'", lb, name); break;
        case BAD_ARG: snprintf(why, whylen, "%s over '%s' gives positions, which chunks cannot combine", lb, name); break;
        default: snprintf(why, whylen, "%s uses a reduction over '%s', which needs the whole axis", lb, name); break;
        }
        return false;
    }
    if (!split)
        snprintf(why, whylen, "no output depends on '%s'", name);
    return split > 0;
}

/* The symbol to chunk along: the first leading symbolic dimension of an
 * output, then of an array input, along which g classifies; -1 (and why)
 * when none does.  st and org end as that classification. */
static int choose_axis(const kf_graph *g, uint8_t *st, int32_t *org, char *why, size_t whylen)
{
    snprintf(why, whylen, "no output or input has a symbolic leading dimension");
    bool tried[64] = { false };
    char w[256];
    bool first = true;
    for (int32_t k = 0; k < g->noutputs + g->ninputs; k++) {
        const kf_irnode *x = &g->nodes[k < g->noutputs ? g->outputs[k] : g->inputs[k - g->noutputs]];
        if (x->rank == 0 || x->dims[0] >= 0 || tried[KF_IR_SYM_INDEX(x->dims[0])])
            continue;
        int sym = KF_IR_SYM_INDEX(x->dims[0]);
        tried[sym] = true;
        if (classify(g, sym, st, org, w, sizeof w))
            return sym;
        if (first)
            snprintf(why, whylen, "%s", w);
        first = false;
    }
    return -1;
}

/* -- Typed elements and the host combine ------------------------------------------------- */

static double load_f(const unsigned char *p, kf_dtype t, int64_t i)
{
    uint16_t h;
    float f;
    double d;
    switch (t) {
    case KF_F16: memcpy(&h, p + i * 2, 2); return kf_f16_to_f32(h);
    case KF_BF16: memcpy(&h, p + i * 2, 2); return kf_bf16_to_f32(h);
    case KF_F32: memcpy(&f, p + i * 4, 4); return f;
    default: memcpy(&d, p + i * 8, 8); return d;
    }
}

static void store_f(unsigned char *p, kf_dtype t, int64_t i, double v)
{
    uint16_t h;
    float f = (float)v;
    switch (t) {
    case KF_F16: h = kf_f64_to_f16(v); memcpy(p + i * 2, &h, 2); break;
    case KF_BF16: h = kf_f64_to_bf16(v); memcpy(p + i * 2, &h, 2); break;
    case KF_F32: memcpy(p + i * 4, &f, 4); break;
    default: memcpy(p + i * 8, &v, 8); break;
    }
}

/* Integers as their 64-bit two's complement value (little-endian host). */
static uint64_t load_u(const unsigned char *p, kf_dtype t, int64_t i)
{
    size_t es = kf_dtype_size(t);
    uint64_t u = 0;
    memcpy(&u, p + (size_t)i * es, es);
    if (kf_dt_is_sint(t) && es < 8 && (u >> (es * 8 - 1)) & 1)
        u |= ~(uint64_t)0 << (es * 8);
    return u;
}

static void store_u(unsigned char *p, kf_dtype t, int64_t i, uint64_t v)
{
    size_t es = kf_dtype_size(t);
    memcpy(p + (size_t)i * es, &v, es);
}

/* The float min and max of docs/ir.md: NaN wins, -0 is below +0. */
static double fmin_ir(double a, double b)
{
    if (isnan(a) || isnan(b))
        return NAN;
    if (a == b)
        return signbit(a) ? a : b;
    return a < b ? a : b;
}

static double fmax_ir(double a, double b)
{
    if (isnan(a) || isnan(b))
        return NAN;
    if (a == b)
        return signbit(a) ? b : a;
    return a > b ? a : b;
}

/* Combine nchunks partial results (nel elements each, chunk c reduced rows
 * [c*L, min((c+1)*L, N))) into out with the reduction's own operation;
 * floats in double, rounded once. */
static void combine(kf_op op, kf_dtype t, const unsigned char *parts, int64_t nchunks, int64_t L, int64_t N,
                    int64_t nel, unsigned char *out)
{
    size_t pbytes = (size_t)nel * kf_dtype_size(t);
    bool sg = kf_dt_is_sint(t);
    for (int64_t e = 0; e < nel; e++) {
        if (kf_dt_is_float(t)) {
            double acc = op == KF_OP_SUM || op == KF_OP_MEAN ? 0 : op == KF_OP_PROD ? 1 : load_f(parts, t, e);
            for (int64_t c = 0; c < nchunks; c++) {
                double v = load_f(parts + (size_t)c * pbytes, t, e);
                int64_t rows = N - c * L < L ? N - c * L : L;
                switch (op) {
                case KF_OP_SUM: acc += v; break;
                case KF_OP_PROD: acc *= v; break;
                case KF_OP_RMIN: acc = fmin_ir(acc, v); break;
                case KF_OP_RMAX: acc = fmax_ir(acc, v); break;
                default: acc += v * (double)rows; break; /* mean: weighted by the chunk's rows */
                }
            }
            store_f(out, t, e, op == KF_OP_MEAN ? acc / (double)N : acc);
        } else {
            uint64_t acc = op == KF_OP_SUM ? 0 : op == KF_OP_PROD ? 1 : load_u(parts, t, e);
            for (int64_t c = 0; c < nchunks; c++) {
                uint64_t v = load_u(parts + (size_t)c * pbytes, t, e);
                switch (op) {
                case KF_OP_SUM: acc += v; break; /* wraps as the integer sum does */
                case KF_OP_PROD: acc *= v; break;
                case KF_OP_RMIN: acc = (sg ? (int64_t)v < (int64_t)acc : v < acc) ? v : acc; break;
                default: acc = (sg ? (int64_t)v > (int64_t)acc : v > acc) ? v : acc; break;
                }
            }
            store_u(out, t, e, acc);
        }
    }
}

/* -- A run ---------------------------------------------------------------------------- */

/* One host array of the run: an array input or an output. */
typedef struct hx_arr {
    const kf_irnode *x;
    unsigned char *host;
    kf_dtype dtype;
    int rank;
    int64_t shape[KF_MAX_RANK];
    uint8_t st;              /* NODE_WHOLE, NODE_CHUNK or NODE_PARTIAL */
    size_t bytes;            /* the whole array */
    size_t row;              /* NODE_CHUNK: bytes per index of the axis */
    bool staged;             /* host moves through the staging pool */
    unsigned char *parts;    /* NODE_PARTIAL: one result per chunk (pageable) */
    bool parts_staged;
    kf_buffer *dev[HX_MAX_STREAMS]; /* per stream (a whole input: [0], shared) */
} hx_arr;

/* Downloads into a slot, copied to the caller's memory once they are done. */
typedef struct hx_copyout {
    unsigned char *dst;
    size_t off, n;
} hx_copyout;

/* Copies that share one staging slot, done when ev is. */
typedef struct hx_batch {
    kf_event *ev;
    unsigned char *slot;
    size_t used;
    int nout;
    hx_copyout *out;
} hx_batch;

typedef struct hx_run {
    kf_context *ctx;
    hx_batch *ring;          /* batches holding a slot, oldest first: ring[head .. head+len) */
    int ringcap, head, len;
    hx_batch *cur;           /* the batch being filled (holds no slot when nothing is staged) */
    hx_batch direct;         /* cur for batches that stage nothing */
    uint64_t staged, moved;  /* bytes through slots; all bytes */
} hx_run;

static size_t align_up(size_t n) { return (n + HX_ALIGN - 1) & ~(HX_ALIGN - 1); }

/* Wait for the oldest batch, copy its downloads out of its slot (when
 * 'deliver') and give the slot back. */
static kf_status retire(hx_run *r, bool deliver)
{
    hx_batch *b = &r->ring[r->head];
    if (deliver) {
        kf_status s = kf_event_sync(b->ev);
        if (s != KF_OK)
            return s; /* the slot stays ours until the streams are idle */
        for (int i = 0; i < b->nout; i++)
            kf_rt_host_copy(r->ctx, b->out[i].dst, b->slot + b->out[i].off, b->out[i].n);
    }
    kf_rt_slot_give(r->ctx, b->slot);
    b->slot = NULL;
    r->head = (r->head + 1) % r->ringcap;
    r->len--;
    return KF_OK;
}

/* Start a batch; when it stages, take a slot, retiring our own oldest
 * batches while none is free (waiting for another thread's only when we
 * hold none, so no two runs wait on each other). */
static kf_status batch_begin(hx_run *r, bool stage)
{
    if (!stage) {
        r->cur = &r->direct;
        return KF_OK;
    }
    hx_batch *b = &r->ring[(r->head + r->len) % r->ringcap];
    b->used = 0;
    b->nout = 0;
    for (;;) {
        void *slot;
        kf_status s = kf_rt_slot_take(r->ctx, r->len == 0, &slot);
        if (s != KF_OK)
            return s;
        if (slot) {
            b->slot = slot;
            r->len++;
            r->cur = b;
            return KF_OK;
        }
        if ((s = retire(r, true)) != KF_OK)
            return s;
    }
}

static kf_status batch_in(hx_run *r, kf_stream *st, kf_buffer *dev, size_t off, const unsigned char *host, size_t n,
                          bool staged)
{
    r->moved += n;
    if (staged) {
        unsigned char *dst = r->cur->slot + r->cur->used;
        kf_rt_host_copy(r->ctx, dst, host, n);
        r->cur->used += align_up(n);
        r->staged += n;
        host = dst;
    }
    return kf_upload(dev, off, host, n, st);
}

static kf_status batch_out(hx_run *r, kf_stream *st, unsigned char *host, kf_buffer *dev, size_t off, size_t n,
                           bool staged)
{
    r->moved += n;
    if (!staged)
        return kf_download(host, dev, off, n, st);
    hx_batch *b = r->cur;
    b->out[b->nout++] = (hx_copyout){ host, b->used, n };
    kf_status s = kf_download(b->slot + b->used, dev, off, n, st);
    b->used += align_up(n);
    r->staged += n;
    return s;
}

static kf_status batch_end(hx_run *r, kf_stream *st)
{
    return r->cur->slot ? kf_event_record(r->cur->ev, st) : KF_OK;
}

/* Move a whole array between a's host memory and dev on st, through as
 * many slots as it needs. */
static kf_status move_whole(hx_run *r, kf_stream *st, hx_arr *a, kf_buffer *dev, bool up)
{
    size_t piece = a->staged ? kf_rt_slot_bytes(r->ctx) : a->bytes;
    kf_status s = KF_OK;
    for (size_t off = 0; s == KF_OK && off < a->bytes; off += piece) {
        size_t n = a->bytes - off < piece ? a->bytes - off : piece;
        s = batch_begin(r, a->staged);
        if (s == KF_OK)
            s = up ? batch_in(r, st, dev, off, a->host + off, n, a->staged)
                   : batch_out(r, st, a->host + off, dev, off, n, a->staged);
        if (s == KF_OK)
            s = batch_end(r, st);
    }
    return s;
}

/* Chunk length along the axis (docs/host.md): big enough that the fixed
 * cost of a chunk's operations is under 2% of its time at the slowest
 * stage, at least 4 chunks when the data allows that, nearer the length
 * that balances fixed costs against the pipeline's fill and drain; then
 * evened out so the last chunk is not a sliver. */
static int64_t choose_chunk(int64_t N, const kf_rt_rates *rt, double kernel_rate, size_t in_row, size_t out_row,
                            int nops)
{
    double t_row = fmax(fmax((double)in_row / rt->h2d, (double)out_row / rt->d2h),
                        kernel_rate * (double)(in_row + out_row));
    if (!(t_row > 0))
        return N;
    double o = rt->op_s * nops;
    double lmin = ceil(o / (0.02 * t_row)), L = lmin;
    if ((double)N >= 4 * lmin)
        L = fmin(fmax(lmin, sqrt((double)N * o / (2 * t_row))), ceil((double)N / 4));
    if (L >= (double)N)
        return N;
    int64_t n = (int64_t)ceil((double)N / L);
    return (N + n - 1) / n;
}

static void release_arr(hx_arr *a)
{
    for (int k = 0; k < HX_MAX_STREAMS; k++)
        kf_buffer_free(a->dev[k]);
    free(a->parts);
}

/* Check the arguments, bind the symbols and describe every array. */
static kf_status bind_arrays(kf_context *ctx, const kf_graph *g, const kf_host_array *inputs,
                             kf_host_array *outputs, int64_t *symval, hx_arr *in, hx_arr *out)
{
    for (int32_t s = 0; s < g->nsyms; s++)
        symval[s] = -1;
    int k = 0;
    for (int32_t i = 0; i < g->ninputs; i++) {
        const kf_irnode *x = &g->nodes[g->inputs[i]];
        if (x->scalar)
            continue;
        const kf_host_array *a = &inputs[k];
        if (a->rank < 0 || a->rank > KF_MAX_RANK)
            return kf_rt_fail(ctx, KF_ERR_SHAPE, "kf_run_host: input '%s': rank %d", x->name, a->rank);
        kf_status s = kf_rt_bind_shape(ctx, g, x, a->dtype, a->rank, a->shape, "array", symval);
        if (s != KF_OK)
            return s;
        hx_arr *h = &in[k++];
        h->x = x;
        h->host = a->data;
        h->dtype = a->dtype;
        h->rank = a->rank;
        memcpy(h->shape, a->shape, sizeof h->shape);
    }
    for (int32_t j = 0; j < g->noutputs; j++) {
        const kf_irnode *x = &g->nodes[g->outputs[j]];
        hx_arr *h = &out[j];
        h->x = x;
        h->dtype = (kf_dtype)x->dtype;
        h->rank = x->rank;
        kf_status s = kf_rt_node_shape(ctx, g, g->outputs[j], symval, h->shape);
        if (s != KF_OK)
            return s;
        const kf_host_array *a = &outputs[j];
        h->host = a->data;
        if (!a->data)
            continue;
        if (a->dtype != h->dtype)
            return kf_rt_fail(ctx, KF_ERR_TYPE, "kf_run_host: output '%s': the array is %s, the graph gives %s",
                              x->name, kf_dtype_name(a->dtype), kf_dtype_name(h->dtype));
        if (a->rank != h->rank)
            return kf_rt_fail(ctx, KF_ERR_SHAPE, "kf_run_host: output '%s': the array has rank %d, the graph gives %d",
                              x->name, a->rank, h->rank);
        for (int d = 0; d < h->rank; d++)
            if (a->shape[d] != h->shape[d])
                return kf_rt_fail(ctx, KF_ERR_SHAPE,
                                  "kf_run_host: output '%s': dimension %d of the array is %lld, the graph gives %lld",
                                  x->name, d, (long long)a->shape[d], (long long)h->shape[d]);
    }
    for (int i = 0; i < k + g->noutputs; i++) {
        hx_arr *h = i < k ? &in[i] : &out[i - k];
        int64_t n = 1;
        for (int d = 0; d < h->rank; d++)
            n = h->shape[d] > 0 && n > INT64_MAX / h->shape[d] ? -1 : n * h->shape[d];
        size_t es = kf_dtype_size(h->dtype);
        if (n < 0 || (uint64_t)n > SIZE_MAX / es / 2)
            return kf_rt_fail(ctx, KF_ERR_SHAPE, "kf_run_host: %s '%s' is too large", i < k ? "input" : "output",
                              h->x->name);
        h->bytes = (size_t)n * es;
        if (i < k && !h->host && h->bytes)
            return kf_rt_fail(ctx, KF_ERR_INVALID_ARG, "kf_run_host: input '%s': data is NULL", h->x->name);
    }
    return KF_OK;
}

kf_status kf_run_host(kf_program *p, const kf_host_array *inputs, int ninputs, const void *const *scalars,
                      int nscalars, kf_host_array *outputs, int noutputs, const kf_host_options *opts)
{
    if (!p)
        return KF_ERR_INVALID_ARG;
    kf_context *ctx = kf_rt_program_context(p);
    const kf_graph *g = kf_rt_program_graph(p);
    kf_host_stats dummy, *stats = opts && opts->stats ? opts->stats : &dummy;
    memset(stats, 0, sizeof *stats);
    int narr = 0;
    for (int32_t i = 0; i < g->ninputs; i++)
        narr += !g->nodes[g->inputs[i]].scalar;
    if (ninputs != narr || (ninputs && !inputs))
        return kf_rt_fail(ctx, KF_ERR_INVALID_ARG, "kf_run_host: graph '%s' takes %d array inputs, %d given", g->name,
                          narr, ninputs);
    if (nscalars != g->ninputs - narr || (nscalars && !scalars))
        return kf_rt_fail(ctx, KF_ERR_INVALID_ARG, "kf_run_host: graph '%s' takes %d scalar inputs, %d given",
                          g->name, g->ninputs - narr, nscalars);
    for (int i = 0; i < nscalars; i++)
        if (!scalars[i])
            return kf_rt_fail(ctx, KF_ERR_INVALID_ARG, "kf_run_host: scalar %d is NULL", i);
    if (noutputs != g->noutputs || !outputs)
        return kf_rt_fail(ctx, KF_ERR_INVALID_ARG, "kf_run_host: graph '%s' has %d outputs, %d given", g->name,
                          g->noutputs, noutputs);
    int ns = opts && opts->streams ? opts->streams : HX_DEFAULT_STREAMS;
    kf_staging mode = opts ? opts->staging : KF_STAGING_AUTO;
    if (ns < 1 || ns > HX_MAX_STREAMS || (opts && opts->chunk_elems < 0) || (unsigned)mode > KF_STAGING_NEVER)
        return kf_rt_fail(ctx, KF_ERR_INVALID_ARG,
                          "kf_run_host: options: streams %d (1 to %d), chunk_elems %lld (>= 0), staging %d (0 to 2)",
                          ns, HX_MAX_STREAMS, opts ? (long long)opts->chunk_elems : 0LL, (int)mode);
    if (g->nsyms > 64)
        return kf_rt_fail(ctx, KF_ERR_UNSUPPORTED, "kf_run_host: more than 64 symbols");

    int64_t symval[64];
    hx_arr *in = calloc((size_t)narr + 1, sizeof *in), *out = calloc((size_t)noutputs + 1, sizeof *out);
    uint8_t *st = malloc((size_t)g->nnodes + 1);
    int32_t *org = malloc(((size_t)g->nnodes + 1) * sizeof *org);
    kf_view *views = calloc((size_t)(narr + noutputs) + 1, sizeof *views);
    hx_run r = { .ctx = ctx };
    kf_status s = in && out && st && org && views ? KF_OK
                                                  : kf_rt_fail(ctx, KF_ERR_NO_MEMORY, "kf_run_host: out of host memory");
    if (s == KF_OK)
        s = bind_arrays(ctx, g, inputs, outputs, symval, in, out);

    /* The plan: the axis, each array's part, the chunk length. */
    int sym = s == KF_OK ? choose_axis(g, st, org, stats->why, sizeof stats->why) : -1;
    int64_t N = sym >= 0 ? symval[sym] : 1, L = N;
    stats->chunkable = sym >= 0;
    if (sym >= 0) {
        snprintf(stats->axis, sizeof stats->axis, "%s", g->syms[sym]);
        stats->why[0] = 0;
    }
    size_t in_row = 0, out_row = 0, staged_row = 0, staged_fixed = 0;
    bool pageable_staged = mode == KF_STAGING_ALWAYS || (mode == KF_STAGING_AUTO && ctx->info.gpu);
    int nops = kf_program_num_kernels(p) + 1;
    for (int i = 0; s == KF_OK && i < narr + noutputs; i++) {
        hx_arr *a = i < narr ? &in[i] : &out[i - narr];
        a->st = sym >= 0 ? st[a->x - g->nodes] : NODE_WHOLE;
        bool pinned = a->host && kf_rt_host_pinned(ctx, a->host, a->bytes);
        a->staged = !pinned && pageable_staged;
        if (a->st == NODE_CHUNK) {
            a->row = N ? a->bytes / (size_t)N : 0;
            *(i < narr ? &in_row : &out_row) += a->row;
            staged_row += a->staged ? a->row : 0;
            staged_fixed += a->staged ? HX_ALIGN : 0;
            nops++;
        } else if (a->st == NODE_PARTIAL) {
            a->parts_staged = pageable_staged;
            staged_fixed += a->parts_staged ? align_up(a->bytes) : 0;
            nops++;
        }
    }
    kf_rt_rates rates = { 0, 0, 0 };
    if (s == KF_OK)
        s = kf_rt_host_rates(ctx, &rates);
    stats->h2d_gbps = rates.h2d * 1e-9;
    stats->d2h_gbps = rates.d2h * 1e-9;
    if (s == KF_OK && sym >= 0 && N > 1) {
        L = opts && opts->chunk_elems ? opts->chunk_elems
                                      : choose_chunk(N, &rates, kf_rt_program_kernel_rate(p), in_row, out_row, nops);
        size_t slot = kf_rt_slot_bytes(ctx);
        if (staged_fixed > slot || (staged_row && (slot - staged_fixed) / staged_row < 1)) {
            stats->chunkable = false;
            stats->axis[0] = 0;
            snprintf(stats->why, sizeof stats->why,
                     "a chunk's staged data (%zu bytes per index of '%s' plus %zu) does not fit a %zu-byte staging slot",
                     staged_row, g->syms[sym], staged_fixed, slot);
            sym = -1;
            for (int i = 0; i < narr + noutputs; i++)
                (i < narr ? &in[i] : &out[i - narr])->st = NODE_WHOLE;
            L = N = 1;
        } else if (staged_row && (int64_t)((slot - staged_fixed) / staged_row) < L) {
            L = (int64_t)((slot - staged_fixed) / staged_row);
        }
    }
    if (L < 1)
        L = 1;
    if (L > N)
        L = N > 0 ? N : 1;
    int64_t nchunks = N > 0 ? (N + L - 1) / L : 1;
    if (nchunks == 1) /* one chunk: partial results are the results */
        for (int j = 0; j < noutputs; j++)
            if (out[j].st == NODE_PARTIAL)
                out[j].st = NODE_WHOLE;
    ns = nchunks < ns ? (int)nchunks : ns;
    stats->chunks = nchunks;
    stats->chunk_elems = sym >= 0 ? L : 0;
    stats->streams = ns;

    /* Everything the run holds, before anything is queued. */
    bool *mine = calloc((size_t)noutputs + 1, sizeof *mine);
    int nslots = kf_rt_slot_count(ctx);
    r.ringcap = nslots + 1;
    r.ring = calloc((size_t)r.ringcap, sizeof *r.ring);
    kf_stream *strm[HX_MAX_STREAMS] = { NULL };
    kf_event *ready = NULL, *k0 = NULL, *k1 = NULL;
    if (s == KF_OK && (!mine || !r.ring))
        s = kf_rt_fail(ctx, KF_ERR_NO_MEMORY, "kf_run_host: out of host memory");
    for (int i = 0; s == KF_OK && i < r.ringcap; i++) {
        r.ring[i].out = calloc((size_t)noutputs + 1, sizeof *r.ring[i].out);
        s = r.ring[i].out ? kf_event_create(ctx, &r.ring[i].ev)
                          : kf_rt_fail(ctx, KF_ERR_NO_MEMORY, "kf_run_host: out of host memory");
    }
    for (int k = 0; s == KF_OK && k < ns; k++)
        s = kf_stream_create(ctx, &strm[k]);
    if (s == KF_OK)
        s = kf_event_create(ctx, &ready);
    if (s == KF_OK)
        s = kf_event_create(ctx, &k0);
    if (s == KF_OK)
        s = kf_event_create(ctx, &k1);
    for (int i = 0; s == KF_OK && i < narr + noutputs; i++) {
        hx_arr *a = i < narr ? &in[i] : &out[i - narr];
        int copies = i < narr && a->st == NODE_WHOLE ? 1 : ns;
        size_t bytes = a->st == NODE_CHUNK ? (size_t)L * a->row : a->bytes;
        for (int k = 0; s == KF_OK && k < copies; k++)
            s = kf_buffer_alloc(ctx, bytes, &a->dev[k]);
        if (s == KF_OK && a->st == NODE_PARTIAL && !(a->parts = malloc((size_t)nchunks * a->bytes + 1)))
            s = kf_rt_fail(ctx, KF_ERR_NO_MEMORY, "kf_run_host: out of host memory for %lld partial results",
                           (long long)nchunks);
        if (s == KF_OK && i >= narr && !a->host) {
            if (!(a->host = malloc(a->bytes ? a->bytes : 1)))
                s = kf_rt_fail(ctx, KF_ERR_NO_MEMORY, "kf_run_host: out of host memory for output '%s'", a->x->name);
            mine[i - narr] = true;
        }
    }

    /* Whole inputs once, on stream 0; the other streams wait for them. */
    for (int i = 0; s == KF_OK && i < narr; i++)
        if (in[i].st == NODE_WHOLE)
            s = move_whole(&r, strm[0], &in[i], in[i].dev[0], true);
    if (s == KF_OK && ns > 1)
        s = kf_event_record(ready, strm[0]);
    for (int k = 1; s == KF_OK && k < ns; k++)
        s = kf_stream_wait(strm[k], ready);

    /* The chunks: upload, run, download, each on its stream. */
    for (int64_t c = 0; s == KF_OK && c < nchunks; c++) {
        int k = (int)(c % ns);
        int64_t r0 = c * L, rows = N - r0 < L ? N - r0 : L;
        bool stage = false;
        for (int i = 0; i < narr + noutputs; i++) {
            hx_arr *a = i < narr ? &in[i] : &out[i - narr];
            stage |= (a->staged && a->st == NODE_CHUNK) || (a->parts_staged && a->st == NODE_PARTIAL);
        }
        s = batch_begin(&r, stage);
        for (int i = 0; s == KF_OK && i < narr; i++) {
            hx_arr *a = &in[i];
            int64_t shape[KF_MAX_RANK];
            memcpy(shape, a->shape, sizeof shape);
            if (a->st == NODE_CHUNK) {
                shape[0] = rows;
                s = batch_in(&r, strm[k], a->dev[k], 0, a->host + (size_t)r0 * a->row, (size_t)rows * a->row,
                             a->staged);
            }
            views[i] = kf_view_dense(a->dev[a->st == NODE_CHUNK ? k : 0], 0, a->dtype, a->rank, shape);
        }
        for (int j = 0; j < noutputs; j++) {
            int64_t shape[KF_MAX_RANK];
            memcpy(shape, out[j].shape, sizeof shape);
            if (out[j].st == NODE_CHUNK)
                shape[0] = rows;
            views[narr + j] = kf_view_dense(out[j].dev[k], 0, out[j].dtype, out[j].rank, shape);
        }
        if (s == KF_OK && c == 0)
            s = kf_event_record(k0, strm[k]);
        if (s == KF_OK)
            s = kf_run(p, strm[k], views, narr, scalars, nscalars, views + narr, noutputs);
        if (s == KF_OK && c == 0)
            s = kf_event_record(k1, strm[k]);
        for (int j = 0; s == KF_OK && j < noutputs; j++) {
            hx_arr *a = &out[j];
            if (a->st == NODE_CHUNK)
                s = batch_out(&r, strm[k], a->host + (size_t)r0 * a->row, a->dev[k], 0, (size_t)rows * a->row,
                              a->staged);
            else if (a->st == NODE_PARTIAL)
                s = batch_out(&r, strm[k], a->parts + (size_t)c * a->bytes, a->dev[k], 0, a->bytes, a->parts_staged);
        }
        if (s == KF_OK)
            s = batch_end(&r, strm[k]);
        /* outputs that are the same in every chunk: from the first */
        for (int j = 0; s == KF_OK && c == 0 && j < noutputs; j++)
            if (out[j].st == NODE_WHOLE)
                s = move_whole(&r, strm[0], &out[j], out[j].dev[0], false);
    }

    /* Finish: deliver the staged downloads as they complete, wait for
     * every stream, and only then give back what a failure left queued. */
    while (s == KF_OK && r.len > 0)
        s = retire(&r, true);
    kf_status index = KF_OK;
    for (int k = 0; k < ns && strm[k]; k++) {
        kf_status ss = kf_stream_sync(ctx, strm[k]);
        if (ss == KF_ERR_INDEX)
            index = ss;
        else if (s == KF_OK)
            s = ss;
    }
    while (r.len > 0)
        retire(&r, false);
    for (int j = 0; s == KF_OK && j < noutputs; j++)
        if (out[j].st == NODE_PARTIAL)
            combine((kf_op)out[j].x->op, out[j].dtype, out[j].parts, nchunks, L, N,
                    (int64_t)(out[j].bytes / kf_dtype_size(out[j].dtype)), out[j].host);
    float ms = 0;
    size_t moved = sym >= 0 ? (size_t)L * (in_row + out_row) : r.moved;
    if (s == KF_OK && moved && kf_event_elapsed(k0, k1, &ms) == KF_OK && ms > 0)
        kf_rt_program_set_kernel_rate(p, ms * 1e-3 / (double)moved);
    if (s == KF_OK && index != KF_OK)
        s = kf_rt_fail(ctx, index, "kf_run_host: a take read an index out of range (the element got 0)");
    stats->staged_bytes = r.staged;
    stats->direct_bytes = r.moved - r.staged;

    for (int i = 0; r.ring && i < r.ringcap; i++) {
        kf_event_destroy(r.ring[i].ev);
        free(r.ring[i].out);
    }
    free(r.ring);
    for (int k = 0; k < ns; k++)
        kf_stream_destroy(strm[k]);
    kf_event_destroy(ready);
    kf_event_destroy(k0);
    kf_event_destroy(k1);
    for (int i = 0; in && i < narr; i++)
        release_arr(&in[i]);
    for (int j = 0; out && j < noutputs; j++) {
        release_arr(&out[j]);
        if (!mine || !mine[j])
            continue;
        if (s == KF_OK || s == KF_ERR_INDEX) {
            outputs[j].data = out[j].host;
            outputs[j].dtype = out[j].dtype;
            outputs[j].rank = out[j].rank;
            memcpy(outputs[j].shape, out[j].shape, sizeof outputs[j].shape);
        } else {
            free(out[j].host);
        }
    }
    free(mine);
    free(in);
    free(out);
    free(st);
    free(org);
    free(views);
    return s;
}
