/* Programs: a graph fused, generated, compiled and loaded for one context
 * (kf_compile), and queued runs of it on a stream (kf_run).  The launch
 * facts of every kernel come from codegen's ABI (codegen.h); this file only
 * binds arrays to buffers and hands the launches to the backend. */
#include "bind.h"
#include "cached.h"
#include "codegen.h"
#include "plan.h"
#include "trace.h"

#include <stdlib.h>
#include <string.h>

/* Where buffer b of a kernel lives during a run. */
typedef enum { SRC_INPUT, SRC_OUTPUT, SRC_STORED } kf_rt_src_kind;
typedef struct kf_rt_src {
    uint8_t kind;
    int32_t index;    /* array-input index, output index or stored index */
} kf_rt_src;

typedef struct kf_rt_kernel {
    kf_cg_kabi abi;
    void *fn[KF_CG_VARIANT_COUNT]; /* entry points, resolved at first launch (kernel_fn) */
    kf_rt_src *src;   /* abi.nargs + abi.nouts entries */
    int32_t *scalar_slot; /* per scalar: index into the run's scalars */
} kf_rt_kernel;

struct kf_program {
    kf_rt_link link;
    kf_context *ctx;
    kf_plan *plan;         /* owns the optimised graph */
    void *mod;
    int nk;
    kf_rt_kernel *k;
    int ninputs, nscalars; /* array and scalar inputs of the graph */
    size_t meta_total;     /* int64s of all kernels' meta blocks */
    int max_bufs;          /* most buffers (args + outs) of one kernel */
    bool has_err;          /* a kernel takes the take-error flag */
    kf_memo_entry *shared; /* the plan cache's program whose plan, module and kernels this one
                            * borrows; NULL when it owns them */
    _Atomic double kernel_rate; /* kf_run_host's measure (host.c) */
    struct run_memo *memo; /* the last run's launch facts (kf_run), this handle's own */
    _Atomic bool memo_busy; /* a kf_run is using memo */
};

int kf_program_num_kernels(const kf_program *p) { return p ? p->nk : 0; }
const kf_graph *kf_rt_program_graph(const kf_program *p) { return p->plan->g; }
kf_context *kf_rt_program_context(const kf_program *p) { return p->ctx; }
double kf_rt_program_kernel_rate(const kf_program *p) { return atomic_load(&p->kernel_rate); }
void kf_rt_program_set_kernel_rate(kf_program *p, double seconds_per_byte)
{
    atomic_store(&p->kernel_rate, seconds_per_byte);
}

/* Release what p owns (p is on no list). */
static void program_destroy(kf_program *p)
{
    kf_context *ctx = p->ctx;
    /* runs queued on any stream may still use the module; a capturing
     * stream runs nothing (kf_capture_begin waited for it) and would
     * refuse a sync.  The list lock keeps other threads' streams from going
     * away under the walk. */
    kf_rt_err err;
    pthread_mutex_lock(&ctx->lock);
    for (kf_rt_link *l = ctx->streams.next; p->mod && l != &ctx->streams; l = l->next)
        if (!atomic_load(&((kf_stream *)l)->capture))
            ctx->be->stream_sync(ctx->dev, ((kf_stream *)l)->h, &err);
    pthread_mutex_unlock(&ctx->lock);
    if (p->mod)
        ctx->be->stream_sync(ctx->dev, ctx->default_stream->h, &err);
    for (int i = 0; p->k && i < p->nk; i++) {
        free(p->k[i].src);
        free(p->k[i].scalar_slot);
    }
    free(p->k);
    if (p->mod)
        ctx->be->unload(ctx->dev, p->mod);
    kf_plan_free(p->plan);
    free(p);
}

void kf_rt_program_unload(void *ctx, void *program)
{
    (void)ctx;
    program_destroy(program);
}

void kf_program_free(kf_program *p)
{
    if (!p)
        return;
    kf_rt_replay_forget(p->ctx, p, "program");
    kf_rt_link_remove(p->ctx, &p->link);
    free(p->memo);
    if (p->shared) {
        kf_rt_cache_unref(p->ctx, p->shared);
        free(p);
        return;
    }
    program_destroy(p);
}

/* Buffer sources of kernel k: outs go to graph outputs or stored slots;
 * args come from array inputs, then outputs, then stored slots. */
static kf_status map_sources(kf_program *p, int ki, char *err, size_t errlen)
{
    const kf_graph *g = p->plan->g;
    const kf_kernel *k = &p->plan->kernels[ki];
    kf_rt_kernel *rk = &p->k[ki];
    int nb = k->nargs + k->nouts;
    rk->src = calloc((size_t)nb + 1, sizeof *rk->src);
    rk->scalar_slot = calloc((size_t)k->nscalars + 1, sizeof *rk->scalar_slot);
    if (!rk->src || !rk->scalar_slot)
        return KF_ERR_NO_MEMORY;
    for (int b = 0; b < nb; b++) {
        int32_t node = b < k->nargs ? k->args[b] : k->outs[b - k->nargs];
        const kf_irnode *x = &g->nodes[node];
        kf_rt_src s = { 0, -1 };
        if (b < k->nargs && x->op == KF_OP_INPUT) {
            s.kind = SRC_INPUT;
            s.index = 0;
            for (int32_t i = 0; i < x->param; i++)
                s.index += !g->nodes[g->inputs[i]].scalar;
        }
        for (int32_t j = 0; s.index < 0 && j < g->noutputs; j++)
            if (g->outputs[j] == node)
                s = (kf_rt_src){ SRC_OUTPUT, j };
        for (int32_t j = 0; s.index < 0 && j < p->plan->nstored; j++)
            if (p->plan->stored[j] == node)
                s = (kf_rt_src){ SRC_STORED, j };
        if (s.index < 0) {
            snprintf(err, errlen, "kernel %d: buffer %d (node %d) is neither an input, an output nor stored", ki, b,
                     node);
            return KF_ERR_INVALID_ARG;
        }
        rk->src[b] = s;
    }
    for (int i = 0; i < k->nscalars; i++) {
        int slot = 0;
        for (int32_t j = 0; j < g->nodes[k->scalars[i]].param; j++)
            slot += g->nodes[g->inputs[j]].scalar;
        rk->scalar_slot[i] = slot;
    }
    return KF_OK;
}

/* Kernel ABIs and buffer sources of every kernel.  Entry points are left
 * to their first launch: a first call loads only the variants it runs
 * (with CUDA's lazy loading, resolving one uploads its code). */
static kf_status bind_kernels(kf_program *p, char *msg, size_t msglen)
{
    p->nk = p->plan->nkernels;
    p->meta_total = 0;
    p->max_bufs = 0;
    p->has_err = false;
    if (!(p->k = calloc((size_t)p->nk + 1, sizeof *p->k))) {
        snprintf(msg, msglen, "out of host memory");
        return KF_ERR_NO_MEMORY;
    }
    kf_status s = KF_OK;
    const kf_cache_target *t = kf_rt_cache_target(p->ctx);   /* what the module was made for */
    kf_cg_caps caps = kf_cache_caps_of(&p->ctx->info, &t->fuse);
    for (int i = 0; i < p->nk && s == KF_OK; i++) {
        kf_rt_kernel *rk = &p->k[i];
        s = kf_cg_kernel_abi(p->plan, i, kf_cg_fast_math(t->lang, &caps), &rk->abi, msg, msglen);
        if (s == KF_OK)
            s = map_sources(p, i, msg, msglen);
        /* what every run needs to size its host memory and scratch */
        p->meta_total += (size_t)rk->abi.meta_count;
        if (rk->abi.nargs + rk->abi.nouts > p->max_bufs)
            p->max_bufs = rk->abi.nargs + rk->abi.nouts;
        p->has_err |= rk->abi.has_err;
    }
    return s;
}

/* The entry point of variant v of rk, resolved on its first launch by any
 * thread: the backend's function() is thread-safe and gives every caller
 * the same handle, so racing threads store the same pointer. */
static kf_status kernel_fn(kf_context *ctx, void *mod, kf_rt_kernel *rk, int v, void **fn, kf_rt_err *err)
{
    void *f = __atomic_load_n(&rk->fn[v], __ATOMIC_ACQUIRE);
    if (!f) {
        kf_status s = ctx->be->function(ctx->dev, mod, rk->abi.entry[v], &f, err);
        if (s != KF_OK)
            return s;
        __atomic_store_n(&rk->fn[v], f, __ATOMIC_RELEASE);
    }
    *fn = f;
    return KF_OK;
}

/* Prepare g (canonical form, fusion, code; the cache key), get its module
 * from the disk cache or the compiler, and bind its kernels into m. */
static kf_status build(kf_context *ctx, const kf_graph *g, kf_program *m, char *msg, size_t msglen)
{
    kf_cache_prep prep;
    kf_status s = kf_rt_cache_prepare(ctx, g, &prep, msg, msglen);
    if (s == KF_OK)
        s = kf_rt_cache_module(ctx, &prep, &m->mod, msg, msglen);
    if (s == KF_OK) {
        m->plan = prep.plan;
        prep.plan = NULL;
        const kf_graph *pg = m->plan->g;
        for (int32_t i = 0; i < pg->ninputs; i++)
            pg->nodes[pg->inputs[i]].scalar ? m->nscalars++ : m->ninputs++;
        s = bind_kernels(m, msg, msglen);
    }
    kf_cache_prep_free(&prep);
    return s;
}

kf_status kf_compile(kf_context *ctx, const kf_graph *g, kf_program **out)
{
    if (!ctx)
        return KF_ERR_INVALID_ARG;
    if (!g || !out)
        return kf_rt_fail(ctx, KF_ERR_INVALID_ARG, "kf_compile: %s is NULL", g ? "out" : "the graph");
    *out = NULL;
    kf_program *p = calloc(1, sizeof *p);
    if (!p)
        return kf_rt_fail(ctx, KF_ERR_NO_MEMORY, "kf_compile: out of host memory");
    p->ctx = ctx;
    uint64_t t0 = kf_trace_begin(ctx);

    /* An equal graph compiled before on this context: borrow its program,
     * skipping verify, fusion, codegen and the disk cache. */
    kf_memo_key mk;
    bool keyed = kf_rt_cache_key(ctx, g, &mk);
    kf_memo_entry *e = keyed ? kf_rt_cache_get(ctx, &mk) : NULL;
    kf_status s = KF_OK;
    static char msg_oom[] = "out of host memory";
    char *msg = NULL;
    if (!e) {
        kf_program *m = calloc(1, sizeof *m);
        if ((msg = malloc(4096)) != NULL)
            snprintf(msg, 4096, "%s", m ? "" : msg_oom);
        if (!m || !msg)
            s = KF_ERR_NO_MEMORY;
        else {
            m->ctx = ctx;
            s = build(ctx, g, m, msg, 4096);
        }
        if (s != KF_OK) {
            if (m)
                program_destroy(m);
        } else if (!keyed || !(e = kf_rt_cache_put(ctx, &mk, m))) {
            free(p); /* not memoised: m is the caller's own */
            p = m;
        }
    }
    if (s == KF_OK && e) {
        const kf_program *m = kf_memo_value(e);
        p->plan = m->plan;
        p->mod = m->mod;
        p->nk = m->nk;
        p->k = m->k;
        p->ninputs = m->ninputs;
        p->nscalars = m->nscalars;
        p->meta_total = m->meta_total;
        p->max_bufs = m->max_bufs;
        p->has_err = m->has_err;
        p->shared = e;
    }
    if (s != KF_OK) {
        free(p);
        kf_rt_fail(ctx, s, "kf_compile: graph '%s': %s", kf_graph_name(g), msg ? msg : msg_oom);
    } else {
        kf_rt_link_add(ctx, &ctx->programs, &p->link);
        *out = p;
    }
    free(msg);
    kf_trace_end(ctx, t0, "kf_compile", kf_graph_name(g));
    return s;
}

/* -- Running ------------------------------------------------------------------- */

static size_t align_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

static int64_t numel(const int64_t *shape, int rank)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= shape[i];
    return n;
}

/* Check (or allocate, when buf is NULL and the stream is not capturing)
 * output j's view. */
static kf_status bind_output(kf_program *p, int j, kf_view *v, const int64_t *symval, bool capturing,
                             bool *allocated)
{
    kf_context *ctx = p->ctx;
    const kf_graph *g = p->plan->g;
    const kf_irnode *x = &g->nodes[g->outputs[j]];
    int64_t shape[KF_MAX_RANK];
    kf_status s = kf_rt_node_shape(ctx, g, g->outputs[j], symval, shape);
    if (s != KF_OK)
        return s;
    *allocated = false;
    if (!v->buf && capturing)
        return kf_rt_fail(ctx, KF_ERR_INVALID_ARG,
                          "output '%s': the view has no buffer and the stream is capturing (kfuse cannot allocate "
                          "outputs during a capture: allocate the buffer before kf_capture_begin)", x->name);
    if (!v->buf) {
        size_t bytes = (size_t)numel(shape, x->rank) * kf_dtype_size((kf_dtype)x->dtype);
        kf_buffer *b;
        if ((s = kf_buffer_alloc(ctx, bytes, &b)) != KF_OK)
            return s;
        *v = kf_view_dense(b, 0, (kf_dtype)x->dtype, x->rank, shape);
        *allocated = true;
        return KF_OK;
    }
    if (v->dtype != (kf_dtype)x->dtype)
        return kf_rt_fail(ctx, KF_ERR_TYPE, "output '%s': the view is %s, the graph gives %s", x->name,
                          kf_dtype_name(v->dtype), kf_dtype_name((kf_dtype)x->dtype));
    if (v->rank != x->rank)
        return kf_rt_fail(ctx, KF_ERR_SHAPE, "output '%s': the view has rank %d, the graph gives %d", x->name, v->rank,
                          x->rank);
    for (int d = 0; d < x->rank; d++)
        if (v->shape[d] != shape[d])
            return kf_rt_fail(ctx, KF_ERR_SHAPE, "output '%s': dimension %d of the view is %lld, the graph gives %lld",
                              x->name, d, (long long)v->shape[d], (long long)shape[d]);
    return kf_rt_check_view(ctx, v, "output", x->name);
}

/* Host memory of one run: from a buffer on the stack while it lasts (a
 * call with a few kernels never reaches the heap), then from the heap. */
typedef struct run_mem {
    _Alignas(16) unsigned char stack[4096];
    size_t used;
    void *heap[8];
    int nheap;
} run_mem;

/* n zeroed elements of size bytes each; NULL when out of memory. */
static void *run_alloc(run_mem *m, size_t n, size_t size)
{
    size_t bytes = align_up((n + 1) * size, 16);
    if (bytes <= sizeof m->stack - m->used) {
        void *p = m->stack + m->used;
        m->used += bytes;
        return memset(p, 0, bytes);
    }
    return m->nheap < 8 ? (m->heap[m->nheap++] = calloc(1, bytes)) : NULL;
}

static void run_mem_free(run_mem *m)
{
    for (int i = 0; i < m->nheap; i++)
        free(m->heap[i]);
}

/* Everything one run needs, resolved before anything is queued. */
typedef struct run_state {
    int64_t symval[64];
    int64_t *meta;         /* per kernel, abi.meta_count each */
    kf_cg_launches *launch;
    size_t stored_bytes, partial_bytes;
} run_state;

/* The launch facts of a program's last run, which depend only on the
 * geometry of its views (dtype, rank, byte offset, shape and strides of
 * each array input and output): a call with the same geometry skips
 * binding, the meta blocks and the launch rule, and checks only that each
 * view's buffer is there, in this context and large enough.  One block,
 * its size the program's (a bound run's ranks are the graph's): need, key,
 * meta and launch point into it. */
typedef struct run_memo {
    int64_t *key;           /* per array input, then output: dtype, rank, offset, shape[rank], strides[rank] */
    size_t *need;           /* per view: the bytes its buffer must hold */
    int64_t *meta;          /* meta_total */
    kf_cg_launches *launch; /* nk */
    size_t stored_bytes, partial_bytes;
} run_memo;

/* View i of a run: the array inputs, then the outputs. */
static const kf_view *run_view(const kf_view *in, int nin, const kf_view *out, int i)
{
    return i < nin ? &in[i] : &out[i - nin];
}

/* Do the views have the memo's geometry, with buffers that hold them?
 * (kf_run checked that their number is the program's.) */
static bool memo_hit(const run_memo *m, kf_context *ctx, const kf_view *in, int nin, const kf_view *out, int nout)
{
    if (!m)
        return false;
    const int64_t *k = m->key;
    for (int i = 0; i < nin + nout; i++) {
        const kf_view *v = run_view(in, nin, out, i);
        if (!v->buf || v->buf->ctx != ctx || v->buf->size < m->need[i] || k[0] != (int64_t)v->dtype ||
            k[1] != v->rank || k[2] != (int64_t)v->offset ||
            memcmp(k + 3, v->shape, (size_t)v->rank * sizeof *v->shape) ||
            memcmp(k + 3 + v->rank, v->strides, (size_t)v->rank * sizeof *v->strides))
            return false;
        k += 3 + 2 * v->rank;
    }
    return true;
}

/* Keep this run's launch facts in *mp (allocated at the first store); no
 * memo when out of memory. */
static void memo_store(run_memo **mp, const kf_program *p, const kf_view *in, int nin, const kf_view *out, int nout,
                       const int64_t *meta, const kf_cg_launches *launch, size_t stored_bytes, size_t partial_bytes)
{
    run_memo *m = *mp;
    int nv = nin + nout;
    if (!m) {
        size_t nkey = 0;
        for (int i = 0; i < nv; i++)
            nkey += 3 + 2 * (size_t)run_view(in, nin, out, i)->rank;
        size_t o_need = align_up(sizeof(run_memo), 16), o_key = align_up(o_need + (size_t)nv * sizeof(size_t), 16),
               o_meta = align_up(o_key + nkey * sizeof(int64_t), 16),
               o_launch = align_up(o_meta + p->meta_total * sizeof(int64_t), 16);
        unsigned char *base = malloc(o_launch + (size_t)p->nk * sizeof(kf_cg_launches));
        if (!base)
            return;
        m = *mp = (run_memo *)base;
        m->need = (size_t *)(base + o_need);
        m->key = (int64_t *)(base + o_key);
        m->meta = (int64_t *)(base + o_meta);
        m->launch = (kf_cg_launches *)(base + o_launch);
    }
    int64_t *k = m->key;
    for (int i = 0; i < nv; i++) {
        const kf_view *v = run_view(in, nin, out, i);
        m->need[i] = kf_rt_view_bytes(v);
        k[0] = (int64_t)v->dtype;
        k[1] = v->rank;
        k[2] = (int64_t)v->offset;
        memcpy(k + 3, v->shape, (size_t)v->rank * sizeof *v->shape);
        memcpy(k + 3 + v->rank, v->strides, (size_t)v->rank * sizeof *v->strides);
        k += 3 + 2 * v->rank;
    }
    memcpy(m->meta, meta, p->meta_total * sizeof *meta);
    memcpy(m->launch, launch, (size_t)p->nk * sizeof *launch);
    m->stored_bytes = stored_bytes;
    m->partial_bytes = partial_bytes;
}

kf_status kf_run(kf_program *p, kf_stream *stream, const kf_view *inputs, int ninputs, const void *const *scalars,
                 int nscalars, kf_view *outputs, int noutputs)
{
    if (!p)
        return KF_ERR_INVALID_ARG;
    kf_context *ctx = p->ctx;
    const kf_graph *g = p->plan->g;
    uint64_t t0 = kf_trace_begin(ctx);
    if (stream && stream->ctx != ctx)
        return kf_rt_fail(ctx, KF_ERR_CONTEXT, "kf_run: the stream belongs to another context");
    if (ninputs != p->ninputs || (ninputs && !inputs))
        return kf_rt_fail(ctx, KF_ERR_INVALID_ARG, "kf_run: graph '%s' takes %d array inputs, %d given", g->name,
                          p->ninputs, ninputs);
    if (nscalars != p->nscalars || (nscalars && !scalars))
        return kf_rt_fail(ctx, KF_ERR_INVALID_ARG, "kf_run: graph '%s' takes %d scalar inputs, %d given", g->name,
                          p->nscalars, nscalars);
    for (int i = 0; i < nscalars; i++)
        if (!scalars[i])
            return kf_rt_fail(ctx, KF_ERR_INVALID_ARG, "kf_run: scalar %d is NULL", i);
    if (noutputs != g->noutputs || !outputs)
        return kf_rt_fail(ctx, KF_ERR_INVALID_ARG, "kf_run: graph '%s' has %d outputs, %d given", g->name,
                          g->noutputs, noutputs);
    if (g->nsyms > 64)
        return kf_rt_fail(ctx, KF_ERR_UNSUPPORTED, "kf_run: more than 64 symbols");

    if (noutputs > 256)
        return kf_rt_fail(ctx, KF_ERR_UNSUPPORTED, "kf_run: more than 256 outputs");

    /* Only what this run uses is initialised (kf_rt_bind_inputs sets the
     * graph's symbols): a cached call's host time is mostly memory touched. */
    run_state rs;
    rs.meta = NULL;
    rs.launch = NULL;
    rs.stored_bytes = rs.partial_bytes = 0;
    run_mem mem;
    mem.used = 0;
    mem.nheap = 0;
    bool allocated[256];
    memset(allocated, 0, (size_t)noutputs * sizeof *allocated);
    kf_stream *st = kf_rt_stream(ctx, stream);
    bool capturing = atomic_load(&st->capture) != NULL;
    /* the memo is this call's unless another thread's kf_run has it */
    bool memo_held = !atomic_exchange(&p->memo_busy, true);
    bool hit = memo_held && memo_hit(p->memo, ctx, inputs, ninputs, outputs, noutputs);
    kf_status s = KF_OK;
    int bound = 0;
    if (hit) {
        rs.meta = p->memo->meta;
        rs.launch = p->memo->launch;
        rs.stored_bytes = p->memo->stored_bytes;
        rs.partial_bytes = p->memo->partial_bytes;
    } else {
        s = kf_rt_bind_inputs(ctx, g, inputs, ninputs, rs.symval);
        for (; bound < noutputs && s == KF_OK; bound++)
            s = bind_output(p, bound, &outputs[bound], rs.symval, capturing, &allocated[bound]);
    }

    kf_cg_array *arrays = NULL;
    kf_view *stored_views = NULL;
    if (s == KF_OK && !hit) {
        rs.meta = run_alloc(&mem, p->meta_total, sizeof *rs.meta);
        rs.launch = run_alloc(&mem, (size_t)p->nk, sizeof *rs.launch);
        arrays = run_alloc(&mem, (size_t)p->max_bufs, sizeof *arrays);
        stored_views = run_alloc(&mem, (size_t)p->plan->nstored, sizeof *stored_views);
        if (!rs.meta || !rs.launch || !arrays || !stored_views)
            s = kf_rt_fail(ctx, KF_ERR_NO_MEMORY, "kf_run: out of host memory");
    }
    /* Stored intermediates: dense, 256-byte aligned in the stored arena. */
    for (int j = 0; s == KF_OK && !hit && j < p->plan->nstored; j++) {
        int32_t node = p->plan->stored[j];
        kf_dtype t = (kf_dtype)g->nodes[node].dtype;
        int64_t shape[KF_MAX_RANK];
        s = kf_rt_node_shape(ctx, g, node, rs.symval, shape);
        stored_views[j] = kf_view_dense(NULL, rs.stored_bytes, t, g->nodes[node].rank, shape);
        rs.stored_bytes += align_up((size_t)numel(shape, g->nodes[node].rank) * kf_dtype_size(t), 256);
    }

    bool locked = s == KF_OK;
    if (locked)
        pthread_mutex_lock(&st->lock);
    /* a capture notes what the run uses: freeing it disables the replay */
    if (s == KF_OK)
        s = kf_rt_capture_use(st, p);
    for (int i = 0; s == KF_OK && i < ninputs + noutputs; i++)
        s = kf_rt_capture_use(st, i < ninputs ? inputs[i].buf : outputs[i - ninputs].buf);
    char msg[512];
    msg[0] = '\0';
    size_t moff = 0;
    for (int i = 0; s == KF_OK && !hit && i < p->nk; i++) {
        kf_rt_kernel *rk = &p->k[i];
        int nb = rk->abi.nargs + rk->abi.nouts;
        for (int b = 0; b < nb; b++) {
            kf_rt_src src = rk->src[b];
            const kf_view *v = src.kind == SRC_INPUT    ? &inputs[src.index]
                               : src.kind == SRC_OUTPUT ? &outputs[src.index]
                                                        : &stored_views[src.index];
            memcpy(arrays[b].strides, v->strides, sizeof arrays[b].strides);
            arrays[b].offset = (int64_t)(v->offset / kf_dtype_size(v->dtype));
        }
        int64_t *meta = rs.meta + moff;
        moff += (size_t)rk->abi.meta_count;
        s = kf_cg_fill_meta(&rk->abi, p->plan, rs.symval, arrays, meta, msg, sizeof msg);
        if (s != KF_OK) {
            s = kf_rt_fail(ctx, s, "kf_run: graph '%s': %s", g->name, msg);
            break;
        }
        kf_cg_launch_rule(&rk->abi, meta, NULL, ctx->info.compute_units, ctx->info.gpu, ctx->info.memory_gbps, 0,
                          &rs.launch[i]);
        if (rs.launch[i].n == 0 && meta[0] > 0) {
            s = kf_rt_fail(ctx, KF_ERR_LIMIT,
                           "kf_run: graph '%s', kernel %d: %lld elements need more than 2^31 - 1 blocks of %d threads",
                           g->name, i, (long long)meta[0], KF_CG_BLOCK);
            break;
        }
        if (rs.launch[i].scratch_bytes > rs.partial_bytes)
            rs.partial_bytes = rs.launch[i].scratch_bytes;
    }
    if (s == KF_OK && !hit && memo_held)
        memo_store(&p->memo, p, inputs, ninputs, outputs, noutputs, rs.meta, rs.launch, rs.stored_bytes,
                   rs.partial_bytes);
    if (s == KF_OK)
        s = kf_rt_arena(ctx, st, 0, rs.stored_bytes);
    if (s == KF_OK)
        s = kf_rt_arena(ctx, st, 1, rs.partial_bytes);
    if (s == KF_OK && p->has_err)
        s = kf_rt_flag(ctx, st);

    /* Queue the launches. */
    kf_rt_arg *args = NULL;
    if (s == KF_OK && !(args = run_alloc(&mem, (size_t)p->max_bufs + (size_t)nscalars + 4, sizeof *args)))
        s = kf_rt_fail(ctx, KF_ERR_NO_MEMORY, "kf_run: out of host memory");
    moff = 0;
    uint64_t launched = 0;
    for (int i = 0; s == KF_OK && i < p->nk; i++) {
        kf_rt_kernel *rk = &p->k[i];
        const kf_kernel *k = &p->plan->kernels[i];
        int nb = rk->abi.nargs + rk->abi.nouts, na = 0;
        for (int b = 0; b < nb; b++) {
            kf_rt_src src = rk->src[b];
            /* the meta offset moves the pointer where the kernel does not */
            size_t off = ctx->array_ptrs ? (size_t)rs.meta[moff + rk->abi.meta_offsets + b] * rk->abi.buf_size[b] : 0;
            args[na++] = (kf_rt_arg){ NULL, 0,
                                      src.kind == SRC_INPUT    ? inputs[src.index].buf->h
                                      : src.kind == SRC_OUTPUT ? outputs[src.index].buf->h
                                                               : st->arena[0],
                                      off };
        }
        args[na++] = (kf_rt_arg){ rs.meta + moff, (size_t)rk->abi.meta_count * 8, NULL, 0 };
        moff += (size_t)rk->abi.meta_count;
        for (int j = 0; j < k->nscalars; j++)
            args[na++] = (kf_rt_arg){ scalars[rk->scalar_slot[j]],
                                      kf_dtype_size((kf_dtype)g->nodes[k->scalars[j]].dtype), NULL, 0 };
        if (rk->abi.has_err)
            args[na++] = (kf_rt_arg){ NULL, 0, st->flag, 0 };
        if (rk->abi.has_scratch)
            args[na++] = (kf_rt_arg){ NULL, 0, st->arena[1], 0 };
        for (int l = 0; s == KF_OK && l < rs.launch[i].n; l++) {
            const kf_cg_launch *L = &rs.launch[i].l[l];
            kf_rt_err err;
            kf_rt_op op = { .kind = KF_RT_LAUNCH, .grid = L->grid, .block = L->block, .args = args, .nargs = na };
            s = kernel_fn(ctx, p->mod, rk, L->variant, &op.fn, &err);
            if (s == KF_OK)
                s = kf_trace_issue(ctx, st, &op, g->name, i, L->entry, 0, &err);
            if (s != KF_OK)
                s = kf_rt_fail(ctx, s, "kf_run: graph '%s': launching %s: %s", g->name, L->entry, err.msg);
            else
                launched++;
        }
        if (rk->abi.has_err && atomic_load(&st->capture))
            kf_rt_capture_take(st);
        else if (rk->abi.has_err)
            atomic_store(&st->flag_armed, true);
    }
    if (locked)
        pthread_mutex_unlock(&st->lock);
    if (memo_held)
        atomic_store(&p->memo_busy, false);
    atomic_fetch_add_explicit(&ctx->launches, launched, memory_order_relaxed);
    if (s == KF_OK)
        atomic_fetch_add_explicit(&ctx->runs, 1, memory_order_relaxed);
    kf_trace_end(ctx, t0, "launch enqueue", g->name);
    run_mem_free(&mem);
    if (s != KF_OK)
        for (int j = 0; j < bound; j++)
            if (allocated[j]) {
                kf_buffer_free(outputs[j].buf);
                outputs[j].buf = NULL;
            }
    return s;
}
