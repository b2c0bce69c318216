/* L1, the in-process plan cache: graph key -> loaded program, bounded,
 * least recently used first out.  An entry still referenced by a program
 * is never released; eviction takes the least recently used unreferenced
 * entries, so the memo holds at most 'capacity' programs beyond those the
 * caller holds anyway.  One mutex; values are released outside it (a
 * release synchronises streams and unloads a module). */
#define XXH_STATIC_LINKING_ONLY
#include "cache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

struct kf_memo_entry {
    kf_memo_key key;
    void *value;
    uint32_t refs;
    kf_memo_entry *prev, *next;   /* LRU list, most recent first */
    kf_memo_entry *chain;         /* hash bucket */
};

struct kf_memo {
    pthread_mutex_t lock;
    uint32_t cap, count, nbuckets;
    uint64_t evictions;
    kf_memo_entry **buckets;
    kf_memo_entry lru;            /* sentinel */
    kf_memo_release_fn release;
    void *owner;
};

static void put_name(XXH3_state_t *st, const char *s)
{
    s = s ? s : "";
    XXH3_64bits_update(st, s, strlen(s) + 1);
}

kf_status kf_memo_key_of(const kf_graph *g, uint64_t variant, kf_memo_key *out)
{
    if (!g || !out)
        return KF_ERR_INVALID_ARG;
    kf_status s = kf_graph_hash(g, &out->graph);
    if (s != KF_OK)
        return s;
    XXH3_state_t st;
    XXH3_INITSTATE(&st);
    XXH3_64bits_reset(&st);
    put_name(&st, g->name);
    for (int32_t i = 0; i < g->ninputs; i++)
        put_name(&st, g->nodes[g->inputs[i]].name);
    for (int32_t i = 0; i < g->noutputs; i++)
        put_name(&st, g->nodes[g->outputs[i]].name);
    for (int32_t i = 0; i < g->nsyms; i++)
        put_name(&st, g->syms[i]);
    out->names = XXH3_64bits_digest(&st);
    out->variant = variant;
    return KF_OK;
}

kf_memo *kf_memo_new(uint32_t capacity, kf_memo_release_fn release, void *owner)
{
    kf_memo *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->cap = capacity ? capacity : 256;
    m->nbuckets = 16;
    while (m->nbuckets < 2 * m->cap && m->nbuckets < (1u << 20))
        m->nbuckets *= 2;
    if (!(m->buckets = calloc(m->nbuckets, sizeof *m->buckets))) {
        free(m);
        return NULL;
    }
    pthread_mutex_init(&m->lock, NULL);
    m->lru.next = m->lru.prev = &m->lru;
    m->release = release;
    m->owner = owner;
    return m;
}

static uint32_t bucket(const kf_memo *m, const kf_memo_key *k)
{
    uint64_t h = k->graph.lo ^ (k->graph.hi * 0x9e3779b97f4a7c15ull) ^ k->names ^ (k->variant * 0xbf58476d1ce4e5b9ull);
    return (uint32_t)(h ^ (h >> 32)) & (m->nbuckets - 1);
}

static bool key_eq(const kf_memo_key *a, const kf_memo_key *b)
{
    return a->graph.lo == b->graph.lo && a->graph.hi == b->graph.hi && a->names == b->names &&
           a->variant == b->variant;
}

static kf_memo_entry *find(kf_memo *m, const kf_memo_key *k)
{
    for (kf_memo_entry *e = m->buckets[bucket(m, k)]; e; e = e->chain)
        if (key_eq(&e->key, k))
            return e;
    return NULL;
}

static void lru_unlink(kf_memo_entry *e)
{
    e->prev->next = e->next;
    e->next->prev = e->prev;
}

static void lru_front(kf_memo *m, kf_memo_entry *e)
{
    e->next = m->lru.next;
    e->prev = &m->lru;
    m->lru.next->prev = e;
    m->lru.next = e;
}

static void unmap(kf_memo *m, kf_memo_entry *e)
{
    kf_memo_entry **pp = &m->buckets[bucket(m, &e->key)];
    while (*pp != e)
        pp = &(*pp)->chain;
    *pp = e->chain;
    lru_unlink(e);
    m->count--;
}

/* Unlink least recently used unreferenced entries while over capacity;
 * they are chained on *out for release outside the lock. */
static void evict(kf_memo *m, kf_memo_entry **out)
{
    for (kf_memo_entry *e = m->lru.prev; m->count > m->cap && e != &m->lru;) {
        kf_memo_entry *prev = e->prev;
        if (e->refs == 0) {
            unmap(m, e);
            m->evictions++;
            e->chain = *out;
            *out = e;
        }
        e = prev;
    }
}

static void release_list(kf_memo *m, kf_memo_entry *list)
{
    while (list) {
        kf_memo_entry *next = list->chain;
        if (m->release)
            m->release(m->owner, list->value);
        free(list);
        list = next;
    }
}

void kf_memo_free(kf_memo *m)
{
    if (!m)
        return;
    kf_memo_entry *list = NULL;
    while (m->lru.next != &m->lru) {
        kf_memo_entry *e = m->lru.next;
        unmap(m, e);
        e->chain = list;
        list = e;
    }
    release_list(m, list);
    pthread_mutex_destroy(&m->lock);
    free(m->buckets);
    free(m);
}

kf_memo_entry *kf_memo_get(kf_memo *m, const kf_memo_key *k)
{
    if (!m || !k)
        return NULL;
    pthread_mutex_lock(&m->lock);
    kf_memo_entry *e = find(m, k);
    if (e) {
        e->refs++;
        if (m->lru.next != e) {
            lru_unlink(e);
            lru_front(m, e);
        }
    }
    pthread_mutex_unlock(&m->lock);
    return e;
}

kf_memo_entry *kf_memo_put(kf_memo *m, const kf_memo_key *k, void *value)
{
    if (!m || !k)
        return NULL;
    kf_memo_entry *fresh = calloc(1, sizeof *fresh);
    if (!fresh)
        return NULL;
    kf_memo_entry *dead = NULL;
    pthread_mutex_lock(&m->lock);
    kf_memo_entry *e = find(m, k);
    if (e) {
        e->refs++;
        lru_unlink(e);
        lru_front(m, e);
    } else {
        e = fresh;
        fresh = NULL;
        e->key = *k;
        e->value = value;
        e->refs = 1;
        uint32_t b = bucket(m, k);
        e->chain = m->buckets[b];
        m->buckets[b] = e;
        lru_front(m, e);
        m->count++;
        evict(m, &dead);
    }
    pthread_mutex_unlock(&m->lock);
    if (fresh) {
        /* lost a race: an equal program is in already */
        free(fresh);
        if (m->release)
            m->release(m->owner, value);
    }
    release_list(m, dead);
    return e;
}

void *kf_memo_value(const kf_memo_entry *e) { return e ? e->value : NULL; }

void kf_memo_unref(kf_memo *m, kf_memo_entry *e)
{
    if (!m || !e)
        return;
    kf_memo_entry *dead = NULL;
    pthread_mutex_lock(&m->lock);
    if (e->refs > 0)
        e->refs--;
    if (e->refs == 0)
        evict(m, &dead);
    pthread_mutex_unlock(&m->lock);
    release_list(m, dead);
}

void kf_memo_counts(kf_memo *m, uint64_t *entries, uint64_t *evictions)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->lock);
    if (entries)
        *entries = m->count;
    if (evictions)
        *evictions = m->evictions;
    pthread_mutex_unlock(&m->lock);
}
