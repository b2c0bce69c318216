/* The runtime's side of the kernel cache: a context's cache and target
 * description, the plan-cache key of a graph, and the module of a prepared
 * graph from disk or from the compiler.  kf_context_stats() is here too. */
#define XXH_STATIC_LINKING_ONLY
#include "cached.h"
#include "trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xxhash.h>

typedef struct kf_rt_cache {
    kf_cache *c;
    kf_cache_target target;
    bool keyed;          /* the backend has a target description: the disk cache applies */
    uint64_t variant;    /* hash of the target description, for plan-cache keys */
} kf_rt_cache;

static void target_variant(kf_rt_cache *rc)
{
    XXH3_state_t st;
    XXH3_INITSTATE(&st);
    XXH3_64bits_reset(&st);
    const char *parts[] = { kf_backend_name(rc->target.backend), rc->target.target, rc->target.compiler,
                            rc->target.options };
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        XXH3_64bits_update(&st, parts[i], strlen(parts[i]) + 1);
    rc->variant = XXH3_64bits_digest(&st);
}

kf_status kf_rt_cache_open(kf_context *ctx, const kf_context_options *opts)
{
    kf_rt_cache *rc = calloc(1, sizeof *rc);
    if (!rc)
        return KF_ERR_NO_MEMORY;
    kf_cache_config cfg;
    memset(&cfg, 0, sizeof cfg);
    if (opts) {
        cfg.dir = opts->cache_dir;
        cfg.mode = opts->cache_mode;
        cfg.max_bytes = opts->cache_max_bytes;
        cfg.must_hit = opts->cache_must_hit;
        cfg.warn = opts->warn;
        cfg.warn_user = opts->warn_user;
    }
    cfg.release = kf_rt_program_unload;
    cfg.release_owner = ctx;
    cfg.gpu = ctx->info.gpu;
    if (kf_cache_new(&cfg, ctx->info.backend, &rc->c) != KF_OK) {
        free(rc);
        return KF_ERR_NO_MEMORY;
    }
    const char *cid = ctx->be->compiler_id ? ctx->be->compiler_id(ctx->dev) : NULL;
    kf_fuse_options fuse = { .fast_math = opts && opts->fast_math };
    rc->keyed = kf_cache_target_of(&ctx->info, cid, &fuse, &rc->target) == KF_OK;
    if (!rc->keyed) {
        /* no key material known for this backend: compile every time */
        memset(&rc->target, 0, sizeof rc->target);
        rc->target.backend = ctx->info.backend;
        rc->target.lang = ctx->info.backend == KF_BACKEND_CUDA  ? KF_TARGET_CUDA
                          : ctx->info.backend == KF_BACKEND_CPU ? KF_TARGET_LLVM
                                                                : KF_TARGET_OPENCL;
        rc->target.fuse = fuse;
        kf_fuse_options_default(&rc->target.fuse);
    }
    target_variant(rc);
    ctx->cache = rc;
    ctx->array_ptrs = kf_cg_array_pointers(rc->target.lang);
    return KF_OK;
}

void kf_rt_cache_close(kf_context *ctx)
{
    if (!ctx || !ctx->cache)
        return;
    kf_cache_free(ctx->cache->c);
    free(ctx->cache);
    ctx->cache = NULL;
}

void kf_rt_cache_test_target(kf_context *ctx, const char *compiler_extra, const char *options_extra)
{
    kf_cache_target *t = &ctx->cache->target;
    size_t n;
    if (compiler_extra && (n = strlen(t->compiler)) < sizeof t->compiler)
        snprintf(t->compiler + n, sizeof t->compiler - n, "%s", compiler_extra);
    if (options_extra && (n = strlen(t->options)) < sizeof t->options)
        snprintf(t->options + n, sizeof t->options - n, "%s", options_extra);
    target_variant(ctx->cache);
}

const kf_cache_target *kf_rt_cache_target(kf_context *ctx) { return &ctx->cache->target; }

kf_cache *kf_rt_cache_of(kf_context *ctx) { return ctx->cache->c; }

/* -- Plan cache ------------------------------------------------------------------ */

bool kf_rt_cache_key(kf_context *ctx, const kf_graph *g, kf_memo_key *out)
{
    /* what else shapes the program: capabilities and test hooks */
    uint64_t extra = (uint64_t)ctx->info.fp64 | (uint64_t)ctx->info.fp16 << 1 | (uint64_t)ctx->hooks << 2;
    return kf_memo_key_of(g, ctx->cache->variant ^ (extra * 0x9e3779b97f4a7c15ull), out) == KF_OK;
}

kf_memo_entry *kf_rt_cache_get(kf_context *ctx, const kf_memo_key *k)
{
    uint64_t t0 = kf_trace_begin(ctx);
    kf_memo_entry *e = kf_memo_get(kf_cache_memo(ctx->cache->c), k);
    kf_trace_end(ctx, t0, "cache lookup (memory)", e ? "hit" : "miss");
    if (e)
        kf_cache_add(ctx->cache->c, KF_CC_MEMORY_HITS, 1);
    return e;
}

kf_memo_entry *kf_rt_cache_put(kf_context *ctx, const kf_memo_key *k, kf_program *m)
{
    return kf_memo_put(kf_cache_memo(ctx->cache->c), k, m);
}

void kf_rt_cache_unref(kf_context *ctx, kf_memo_entry *e) { kf_memo_unref(kf_cache_memo(ctx->cache->c), e); }

/* -- Modules ------------------------------------------------------------------------ */

kf_status kf_rt_cache_prepare(kf_context *ctx, const kf_graph *g, kf_cache_prep *prep, char *msg, size_t msglen)
{
    kf_cache_target *t = malloc(sizeof *t);
    if (!t) {
        memset(prep, 0, sizeof *prep);
        snprintf(msg, msglen, "out of host memory");
        return KF_ERR_NO_MEMORY;
    }
    *t = ctx->cache->target;
    t->caps = kf_cache_caps_of(&ctx->info, &t->fuse); /* test hooks may change info */
    uint64_t t0 = kf_trace_begin(ctx);
    kf_status s = kf_cache_fuse(g, t, prep, msg, msglen);
    free(t);
    kf_trace_end(ctx, t0, "fusion", kf_graph_name(g));
    if (s != KF_OK)
        return s;
    t0 = kf_trace_begin(ctx);
    s = kf_cache_emit(prep, msg, msglen);
    kf_trace_end(ctx, t0, "codegen", kf_graph_name(g));
    if (s != KF_OK)
        return s;
    if (ctx->hooks & KF_RT_HOOK_BREAK_CODEGEN)
        kf_sb_puts(&prep->src, "\nthis line is a deliberate syntax error (test hook)\n");
    if (kf_sb_failed(&prep->src)) {
        snprintf(msg, msglen, "out of memory generating code");
        return KF_ERR_NO_MEMORY;
    }
    kf_cache_prep_key(prep);
    return KF_OK;
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Loads a blob from the disk cache where it lies (kf_store_sink). */
typedef struct load_sink {
    kf_store_sink sink;
    kf_context *ctx;
    const char *name;
    void **mod;
    size_t len;
    kf_status status;
    kf_rt_err err;
} load_sink;

static bool load_take(kf_store_sink *self, const void *bin, size_t len)
{
    load_sink *l = (load_sink *)self;
    uint64_t t0 = kf_trace_begin(l->ctx);
    l->status = l->ctx->be->load(l->ctx->dev, bin, len, true, l->mod, &l->err);
    kf_trace_end(l->ctx, t0, "module load", l->name);
    l->len = len;
    return l->status == KF_OK;
}

kf_status kf_rt_cache_module(kf_context *ctx, const kf_cache_prep *prep, void **mod, char *msg, size_t msglen)
{
    kf_rt_cache *rc = ctx->cache;
    kf_cache *c = rc->c;
    load_sink ls = { { load_take }, ctx, prep->name, mod, 0, KF_OK, { { 0 } } };
    uint64_t t0 = kf_trace_begin(ctx);
    kf_store_result r = rc->keyed ? kf_cache_fetch(c, &prep->key, &ls.sink) : KF_STORE_MISS;
    kf_trace_end(ctx, t0, "cache lookup (disk)", r == KF_STORE_HIT ? "hit" : "miss");
    if (r == KF_STORE_HIT) {
        /* counted here, not in the sink: the store's lock is held there */
        kf_cache_add(c, KF_CC_DISK_HITS, 1);
        kf_cache_add(c, KF_CC_BYTES_READ, ls.len);
        return KF_OK;
    }
    if (r == KF_STORE_REFUSED)
        kf_cache_reject(c, &prep->key, ls.err.msg);
    kf_rt_err err;
    err.msg[0] = 0;
    void *bin = NULL;
    size_t len = 0;
    kf_cache_add(c, KF_CC_MISSES, 1);
    const kf_cache_settings *set = kf_cache_get_settings(c);
    if (set->must_hit) {
        char hex[33];
        kf_cache_hex(prep->key.hash, hex);
        kf_store *st = kf_cache_store(c);
        snprintf(msg, msglen,
                 "must-hit mode (KFUSE_CACHE_MUST_HIT): %s is not in the cache%s%s (key %s for %s %s); "
                 "nothing is compiled in this mode",
                 prep->name, st ? " at " : " (memory only)", st ? kf_store_path(st) : "", hex,
                 kf_backend_name(rc->target.backend), rc->target.target);
        return KF_ERR_CACHE_MISS;
    }
    double m0 = now_ms();
    t0 = kf_trace_begin(ctx);
    kf_status s = ctx->be->compile(ctx->dev, kf_sb_str(&prep->src), prep->src.len, &bin, &len, &err);
    kf_trace_end(ctx, t0, "compile", prep->name);
    double ms = now_ms() - m0;
    kf_cache_add(c, KF_CC_COMPILES, 1);
    kf_cache_add_compile_ms(c, ms);
    if (s != KF_OK) {
        if (rc->keyed)
            kf_cache_unclaim(c, &prep->key);
        snprintf(msg, msglen, "%s", err.msg);
        return s;
    }
    if (rc->keyed) {
        t0 = kf_trace_begin(ctx);
        kf_cache_put(c, &prep->key, prep->name, prep->plan ? prep->plan->nkernels : 0, bin, len, ms);
        kf_trace_end(ctx, t0, "cache store", prep->name);
    }
    t0 = kf_trace_begin(ctx);
    s = ctx->be->load(ctx->dev, bin, len, false, mod, &err);
    kf_trace_end(ctx, t0, "module load", prep->name);
    free(bin);
    if (s != KF_OK)
        snprintf(msg, msglen, "%s", err.msg);
    return s;
}

kf_status kf_context_stats(kf_context *ctx, kf_stats *out)
{
    if (!ctx || !out)
        return KF_ERR_INVALID_ARG;
    kf_cache_stats(ctx->cache->c, out);
    out->runs = atomic_load_explicit(&ctx->runs, memory_order_relaxed);
    out->launches = atomic_load_explicit(&ctx->launches, memory_order_relaxed);
    out->bytes_uploaded = atomic_load_explicit(&ctx->bytes_up, memory_order_relaxed);
    out->bytes_downloaded = atomic_load_explicit(&ctx->bytes_down, memory_order_relaxed);
    out->bytes_copied = atomic_load_explicit(&ctx->bytes_copied, memory_order_relaxed);
    if (ctx->trace)
        kf_trace_stats(ctx->trace, out);
    return KF_OK;
}
