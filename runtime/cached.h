/* The runtime's side of the kernel cache (cached.c): opening it with a
 * context, the plan cache around kf_compile, and modules that come from
 * disk or are compiled and stored.  The cache itself is src/cache. */
#ifndef KF_RT_CACHED_H
#define KF_RT_CACHED_H

#include "cache.h"
#include "runtime.h"

/* Open the context's cache (after the backend is open).  Fails only when
 * out of memory; every other problem is a warning and memory-only
 * operation. */
kf_status kf_rt_cache_open(kf_context *ctx, const kf_context_options *opts);
/* Release every memoised program and close the store.  Call before the
 * streams go: releasing a program synchronises them. */
void kf_rt_cache_close(kf_context *ctx);

/* The plan-cache key of g on ctx (false when g cannot be hashed: it has an
 * error or memory ran out; it is then compiled without the plan cache). */
bool kf_rt_cache_key(kf_context *ctx, const kf_graph *g, kf_memo_key *out);
/* A memoised program (one more reference), or NULL; counts a memory hit. */
kf_memo_entry *kf_rt_cache_get(kf_context *ctx, const kf_memo_key *k);
/* Memoise program m (see kf_memo_put); NULL when out of memory. */
kf_memo_entry *kf_rt_cache_put(kf_context *ctx, const kf_memo_key *k, kf_program *m);
void kf_rt_cache_unref(kf_context *ctx, kf_memo_entry *e);

/* Canonicalise, fuse and emit g for ctx's device, key included; the
 * caller frees prep.  Applies the codegen test hook. */
kf_status kf_rt_cache_prepare(kf_context *ctx, const kf_graph *g, kf_cache_prep *prep, char *msg, size_t msglen);
/* The module of prep: loaded from the disk cache, or compiled (and
 * stored).  Counts a disk hit or a miss.  Must-hit mode: a miss is
 * KF_ERR_CACHE_MISS naming the graph and kernel, nothing compiled. */
kf_status kf_rt_cache_module(kf_context *ctx, const kf_cache_prep *prep, void **mod, char *msg, size_t msglen);

/* The context's cache facade (for kf_cache_warn from the runtime). */
kf_cache *kf_rt_cache_of(kf_context *ctx);

/* Test hooks: append to the compiler identity and to the options that go
 * into keys, as a compiler upgrade or another option would (not thread
 * safe; tests only). */
void kf_rt_cache_test_target(kf_context *ctx, const char *compiler_extra, const char *options_extra);
/* The target description of ctx (keys are made from it). */
const kf_cache_target *kf_rt_cache_target(kf_context *ctx);

/* Release a memoised program (the plan cache's release callback;
 * program.c). */
void kf_rt_program_unload(void *ctx, void *program);

#endif /* KF_RT_CACHED_H */
