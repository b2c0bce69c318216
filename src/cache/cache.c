/* The cache of one context: settings, the plan cache (L1), the store (L2),
 * counters and warnings.  Every fault of the store is turned here into a
 * counted warning and a miss: a kf_compile never fails because of the
 * cache, except a miss in must-hit mode, which the caller reports. */
#include "cache.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* How long a process waits for another one compiling the same kernel. */
enum { CLAIM_WAIT_MS = 120000 };

struct kf_cache {
    pthread_mutex_t lock;      /* counters and warnings */
    kf_cache_settings set;
    kf_backend backend;
    kf_store *store;           /* NULL: memory only */
    kf_memo *memo;
    kf_warn_fn warn;
    void *warn_user;
    uint64_t n[KF_CC_COUNT];
    double compile_ms;
    uint64_t warnings;
    char warning[512];
};

void kf_cache_warn(kf_cache *c, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&c->lock);
    bool first = c->warnings++ == 0;
    if (first)
        snprintf(c->warning, sizeof c->warning, "%s", msg);
    pthread_mutex_unlock(&c->lock);
    if (!first)
        return;
    if (c->warn)
        c->warn(c->warn_user, msg);
    else
        fprintf(stderr, "kfuse: warning: %s\n", msg);
}

kf_status kf_cache_new(const kf_cache_config *cfg, kf_backend backend, kf_cache **out)
{
    *out = NULL;
    kf_cache *c = calloc(1, sizeof *c);
    if (!c)
        return KF_ERR_NO_MEMORY;
    pthread_mutex_init(&c->lock, NULL);
    c->backend = backend;
    c->warn = cfg ? cfg->warn : NULL;
    c->warn_user = cfg ? cfg->warn_user : NULL;
    kf_cache_settings *set = &c->set;
    kf_cache_settings_resolve(cfg ? cfg->dir : NULL, cfg ? cfg->mode : KF_CACHE_DEFAULT, cfg ? cfg->max_bytes : 0,
                              cfg ? cfg->must_hit : 0, set);
    uint32_t cap = set->memo_cap ? set->memo_cap : cfg && cfg->gpu ? KF_MEMO_CAP_GPU : KF_MEMO_CAP_CPU;
    c->memo = kf_memo_new(cap, cfg ? cfg->release : NULL, cfg ? cfg->release_owner : NULL);
    if (!c->memo) {
        pthread_mutex_destroy(&c->lock);
        free(c);
        return KF_ERR_NO_MEMORY;
    }
    if (set->problem[0])
        kf_cache_warn(c, "cache: %s", set->problem);
    if (set->mode != KF_CACHE_OFF && set->dir[0]) {
        char msg[1024] = "";
        bool writable = false;
        kf_status s = kf_cache_dir_check(set->dir, set->mode == KF_CACHE_RW, &writable, msg, sizeof msg);
        if (s == KF_OK) {
            kf_store_config sc = { set->dir, set->mode == KF_CACHE_RO, set->mode == KF_CACHE_RW, set->max_bytes,
                                   set->busy_ms };
            s = kf_store_open(&sc, &c->store, msg, sizeof msg);
            if (s == KF_OK && msg[0])
                kf_cache_warn(c, "cache: %s", msg);
        }
        if (s != KF_OK) {
            c->store = NULL;
            /* ro with nothing to read is what a fresh machine looks like */
            bool nothing = strstr(msg, "there is no cache database") || access(set->dir, F_OK) != 0;
            if (!(set->mode == KF_CACHE_RO && nothing))
                kf_cache_warn(c, "cache: %s; running with the in-memory cache only", msg);
        }
    }
    *out = c;
    return KF_OK;
}

void kf_cache_free(kf_cache *c)
{
    if (!c)
        return;
    kf_memo_free(c->memo);
    kf_store_close(c->store);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

kf_memo *kf_cache_memo(kf_cache *c) { return c ? c->memo : NULL; }
const kf_cache_settings *kf_cache_get_settings(const kf_cache *c) { return &c->set; }
kf_store *kf_cache_store(kf_cache *c) { return c ? c->store : NULL; }

/* A store error: warn, and when the database turned out damaged, move it
 * aside and reconnect (warning again only if that fails too). */
static void store_error(kf_cache *c, const char *msg)
{
    kf_cache_warn(c, "cache: %s", msg);
    if (kf_store_broken(c->store)) {
        char note[700];
        if (kf_store_recover(c->store, note, sizeof note) != KF_OK)
            kf_cache_warn(c, "cache: %s; the disk cache is not used any more", note);
    }
}

kf_store_result kf_cache_fetch(kf_cache *c, const kf_cache_key *k, kf_store_sink *sink)
{
    if (!c->store)
        return KF_STORE_MISS;
    char msg[700];
    kf_store_result r = kf_store_get(c->store, k, sink, msg, sizeof msg);
    if (r == KF_STORE_HIT || r == KF_STORE_REFUSED)
        return r;
    if (r == KF_STORE_BAD) {
        kf_cache_add(c, KF_CC_DROPPED, 1);
        kf_cache_warn(c, "cache: %s", msg);
    } else if (r == KF_STORE_ERROR) {
        store_error(c, msg);
        return KF_STORE_MISS;
    }
    if (c->set.must_hit)
        return KF_STORE_MISS;
    r = kf_store_claim(c->store, k, CLAIM_WAIT_MS, sink, msg, sizeof msg);
    if (r == KF_STORE_HIT || r == KF_STORE_REFUSED)
        return r;
    if (r == KF_STORE_BAD) {
        kf_cache_add(c, KF_CC_DROPPED, 1);
        kf_cache_warn(c, "cache: %s", msg);
    }
    return KF_STORE_MISS;
}

void kf_cache_put(kf_cache *c, const kf_cache_key *k, const char *name, int nkernels, const void *blob, size_t len,
                  double compile_ms)
{
    if (!c->store || kf_store_read_only(c->store))
        return;
    char msg[700];
    uint64_t evicted = 0;
    kf_status s = kf_store_put(c->store, k, name, nkernels, blob, len, compile_ms, &evicted, msg, sizeof msg);
    if (s == KF_OK) {
        kf_cache_add(c, KF_CC_BYTES_WRITTEN, len);
        kf_cache_add(c, KF_CC_DISK_EVICTIONS, evicted);
    } else if (s == KF_ERR_LIMIT) {
        kf_cache_warn(c, "cache: %s", msg);
    } else {
        store_error(c, msg);
    }
}

void kf_cache_unclaim(kf_cache *c, const kf_cache_key *k)
{
    if (c->store)
        kf_store_unclaim(c->store, k);
}

void kf_cache_reject(kf_cache *c, const kf_cache_key *k, const char *why)
{
    if (!c->store)
        return;
    kf_store_drop(c->store, k);
    kf_cache_add(c, KF_CC_DROPPED, 1);
    char hex[33];
    kf_cache_hex(k->hash, hex);
    kf_cache_warn(c, "cache: the driver refused cache entry %s (%.300s): dropped, compiling again", hex, why);
}

void kf_cache_add(kf_cache *c, kf_cache_counter which, uint64_t n)
{
    if (!c || n == 0 || (unsigned)which >= KF_CC_COUNT)
        return;
    pthread_mutex_lock(&c->lock);
    c->n[which] += n;
    pthread_mutex_unlock(&c->lock);
    /* the database counts hits, misses, compiles and reads; the store
     * itself counts what it writes, evicts and drops */
    kf_store_counts d;
    memset(&d, 0, sizeof d);
    switch (which) {
    case KF_CC_DISK_HITS: d.hits = n; break;
    case KF_CC_MISSES: d.misses = n; break;
    case KF_CC_COMPILES: d.compiles = n; break;
    case KF_CC_BYTES_READ: d.bytes_read = n; break;
    default: return;
    }
    kf_store_count(c->store, c->backend, &d);
}

void kf_cache_add_compile_ms(kf_cache *c, double ms)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->lock);
    c->compile_ms += ms;
    pthread_mutex_unlock(&c->lock);
    kf_store_counts d;
    memset(&d, 0, sizeof d);
    d.compile_ms = ms;
    kf_store_count(c->store, c->backend, &d);
}

void kf_cache_stats(kf_cache *c, kf_stats *out)
{
    memset(out, 0, sizeof *out);
    out->backend = c->backend;
    out->cache_mode = !c->store ? KF_CACHE_OFF : kf_store_read_only(c->store) ? KF_CACHE_RO : KF_CACHE_RW;
    out->must_hit = c->set.must_hit;
    if (c->store)
        snprintf(out->cache_dir, sizeof out->cache_dir, "%s", c->set.dir);
    kf_memo_counts(c->memo, &out->memory_entries, &out->memory_evictions);
    pthread_mutex_lock(&c->lock);
    out->memory_hits = c->n[KF_CC_MEMORY_HITS];
    out->disk_hits = c->n[KF_CC_DISK_HITS];
    out->misses = c->n[KF_CC_MISSES];
    out->compiles = c->n[KF_CC_COMPILES];
    out->compile_ms = c->compile_ms;
    out->bytes_read = c->n[KF_CC_BYTES_READ];
    out->bytes_written = c->n[KF_CC_BYTES_WRITTEN];
    out->disk_evictions = c->n[KF_CC_DISK_EVICTIONS];
    out->dropped = c->n[KF_CC_DROPPED];
    out->warnings = c->warnings;
    snprintf(out->warning, sizeof out->warning, "%s", c->warning);
    pthread_mutex_unlock(&c->lock);
}
