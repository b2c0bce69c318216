/* The kernel cache: key material and its XXH3-128 hash, the in-process plan
 * cache (L1, "memo"), the SQLite store on disk (L2), where the cache lives
 * and the per-context facade with its stats and warnings.
 * Module prefix: kf_cache_ (kf_memo_ for L1, kf_store_ for L2).
 * docs/cache.md is the long form of this header. */
#ifndef KF_CACHE_H
#define KF_CACHE_H

#include "codegen.h"
#include "plan.h"

#include <stdarg.h>

/* Bumped whenever what a stored entry means changes (key material, blob
 * layout); part of every key.  The database schema has its own version
 * (PRAGMA user_version, store.c). */
enum { KF_CACHE_FORMAT = 1 };

/* -- Key material (key.c) ----------------------------------------------------------- *
 * Everything that decides the compiler's output except the source itself:
 * the backend, the exact target ("sm_90"; OpenCL device, its version and
 * driver; for the CPU backend triple, CPU and features), the compiler's
 * identity (NVRTC version and fixed options; OpenCL platform, device,
 * driver and build options), and kfuse's own options that shape the code.
 * One description serves the runtime (from an open device) and `fusec
 * build` (from a named CUDA arch, no GPU): both go through
 * kf_cache_target_of, kf_cache_prepare and kf_cache_key_make. */

typedef struct kf_cache_target {
    kf_backend backend;
    kf_target lang;            /* generated language */
    kf_cg_caps caps;           /* device capabilities codegen checks */
    kf_fuse_options fuse;      /* fusion options (defaults filled in) */
    char target[640];          /* exact target */
    char compiler[1536];       /* compiler identity */
    char options[256];         /* kfuse options that shape the code, as text */
} kf_cache_target;

/* Describe the target of a device: info as the backend's open() filled it,
 * compiler_id as its compiler_id() returns it (NULL: none).  fuse may be
 * NULL (the defaults); its fast_math is caps.fast_math too.
 * KF_ERR_UNSUPPORTED for a backend without codegen. */
kf_status kf_cache_target_of(const kf_device_info *info, const char *compiler_id, const kf_fuse_options *fuse,
                             kf_cache_target *out);
/* What codegen may use on the device of info (kf_cg_caps), with fast math
 * as the fusion options fuse say (NULL: off). */
kf_cg_caps kf_cache_caps_of(const kf_device_info *info, const kf_fuse_options *fuse);
/* The CUDA target of an architecture ("sm_90") without a device, exactly as
 * a context on an sm_90 device describes itself (same compiler identity
 * string: kf_rt_cuda_compiler_id); fuse as for kf_cache_target_of. */
kf_status kf_cache_target_cuda_arch(const char *arch, const char *compiler_id, const kf_fuse_options *fuse,
                                    kf_cache_target *out);

typedef struct kf_cache_key {
    uint8_t hash[16];               /* XXH3-128 of the material, canonical (big-endian) bytes */
    const kf_cache_target *t;       /* borrowed: the rest of the material */
    const char *src;                /* borrowed: the generated source */
    size_t srclen;
} kf_cache_key;

/* Hash the key material of source src (len bytes) for target t.  The
 * encoding (docs/cache.md): "kfuse-cache-key", format as u32 LE, then the
 * fields kfuse version, backend name, target, compiler, options, source,
 * each as u64 LE length and bytes. */
void kf_cache_key_make(kf_cache_key *k, const kf_cache_target *t, const char *src, size_t len);
/* The same hash from the material's parts (what a stored row holds). */
void kf_cache_key_hash(int format, const char *kfuse, const char *backend, const char *target,
                       const char *compiler, const char *options, const void *src, size_t len, uint8_t out[16]);
/* 32 lowercase hex digits of the key hash, NUL-terminated. */
void kf_cache_hex(const uint8_t hash[16], char out[33]);
/* "0.1.0": the kfuse version that goes into keys. */
const char *kf_cache_kfuse_version(void);

/* A graph made ready to compile: canonical form, fused, source emitted, key
 * hashed.  The canonical form (canon.c) drops intermediate value names and
 * orders statements canonically, so that renaming intermediate values or
 * reordering independent statements gives the same source and key. */
typedef struct kf_cache_prep {
    kf_cache_target target; /* a copy of the target it was made for; key.t points here */
    kf_plan *plan;      /* owned; plan->g is the optimised graph */
    kf_strbuf src;
    kf_cache_key key;   /* set by kf_cache_prep_key */
    char name[160];     /* "x5 (1 kernel: x5_k0_47cb2410)": for messages and listings */
} kf_cache_prep;

/* Canonicalise, fuse and emit g for t.  On failure returns the status and
 * writes the message (the fusion pass's or codegen's) to err; *out is then
 * empty (kf_cache_prep_free is still safe). */
kf_status kf_cache_prepare(const kf_graph *g, const kf_cache_target *t, kf_cache_prep *out, char *err,
                           size_t errlen);
/* The two halves of kf_cache_prepare, for callers that time them: fuse
 * (canonical form and the fusion pipeline; out->plan) and emit (out->src and
 * out->name).  Each frees what it made on failure, as kf_cache_prepare. */
kf_status kf_cache_fuse(const kf_graph *g, const kf_cache_target *t, kf_cache_prep *out, char *err, size_t errlen);
kf_status kf_cache_emit(kf_cache_prep *p, char *err, size_t errlen);
/* Hash the key of the (possibly edited) source of p. */
void kf_cache_prep_key(kf_cache_prep *p);
void kf_cache_prep_free(kf_cache_prep *p);

/* A copy of g in canonical form (canon.c): inputs first in parameter order,
 * then every node the outputs depend on in depth-first post-order from the
 * outputs (operands left to right); names kept on inputs and outputs only;
 * graph name, symbols, parameters and outputs unchanged.  NULL when g has
 * an error or memory runs out (the caller then uses g as it is). */
kf_graph *kf_cache_canonical(const kf_graph *g);

/* -- L1: the in-process plan cache (memo.c) ------------------------------------------ *
 * Graph structure hash (plus a hash of the names a program shows: graph,
 * inputs, outputs, symbols) plus a variant word (device, options, codegen
 * capabilities) -> a loaded program.  Bounded LRU; a value evicted while
 * programs still use it is released when the last reference goes. */

typedef struct kf_memo kf_memo;
typedef struct kf_memo_entry kf_memo_entry;
typedef struct kf_memo_key {
    kf_hash graph;
    uint64_t names;
    uint64_t variant;
} kf_memo_key;
typedef void (*kf_memo_release_fn)(void *owner, void *value);

/* The key of g; KF_ERR_* of kf_graph_hash when g has an error or memory
 * runs out. */
kf_status kf_memo_key_of(const kf_graph *g, uint64_t variant, kf_memo_key *out);
/* NULL when out of memory.  capacity 0: 256. */
kf_memo *kf_memo_new(uint32_t capacity, kf_memo_release_fn release, void *owner);
/* Release every value (no reference may be held any more). */
void kf_memo_free(kf_memo *m);
/* The entry for k with one more reference, or NULL. */
kf_memo_entry *kf_memo_get(kf_memo *m, const kf_memo_key *k);
/* Insert value under k holding one reference for the caller.  When an
 * entry for k exists already (another thread was faster) that entry is
 * returned, referenced, and value is released.  NULL only when out of
 * memory (value then stays the caller's). */
kf_memo_entry *kf_memo_put(kf_memo *m, const kf_memo_key *k, void *value);
void *kf_memo_value(const kf_memo_entry *e);
/* Drop one reference (the value is released when it was evicted and this
 * was the last one). */
void kf_memo_unref(kf_memo *m, kf_memo_entry *e);
/* Entries held, and entries evicted so far. */
void kf_memo_counts(kf_memo *m, uint64_t *entries, uint64_t *evictions);

/* -- Where the cache lives (place.c) ------------------------------------------------- */

typedef enum kf_cache_source { KF_CACHE_FROM_OPTIONS, KF_CACHE_FROM_ENV, KF_CACHE_FROM_XDG, KF_CACHE_FROM_HOME }
    kf_cache_source;

/* The settings of one context: kf_context_options fields win, the
 * environment fills the fields left zero, then the defaults. */
typedef struct kf_cache_settings {
    char dir[1024];              /* "" when none could be found */
    kf_cache_source dir_from;
    kf_cache_mode mode;          /* RW, RO or OFF */
    bool must_hit;
    uint64_t max_bytes;
    int busy_ms;                 /* how long a write waits for a busy database */
    uint32_t memo_cap;           /* idle programs the plan cache keeps; 0: by device */
    char problem[512];           /* a bad setting, for a warning; "" if none */
} kf_cache_settings;

enum { KF_CACHE_DEFAULT_MAX = 1 << 30 };

void kf_cache_settings_resolve(const char *dir, kf_cache_mode mode, uint64_t max_bytes, int must_hit,
                               kf_cache_settings *out);
enum { KF_CACHE_DEFAULT_BUSY_MS = 5000 };
/* Idle programs the plan cache keeps by default: a GPU module costs little
 * host memory; on a CPU device (PoCL, the CPU backend) the code and the
 * compiler's state for it live in host memory, megabytes per program. */
enum { KF_MEMO_CAP_GPU = 256, KF_MEMO_CAP_CPU = 16 };
/* Parse "1048576", "64K", "1M", "1MB", "1MiB", "2G" (powers of 1024); false
 * when malformed or 0. */
bool kf_cache_parse_size(const char *s, uint64_t *out);

/* Make sure dir is a usable cache directory: create it (and missing
 * parents, mode 0700) when create is set; refuse a symlink, a non-directory,
 * one owned by neither this user nor root, and one that is group or world
 * writable.  *writable says whether kfuse may write there (the owner's w
 * bit and access(W_OK)).  KF_ERR_IO with the reason in msg. */
kf_status kf_cache_dir_check(const char *dir, bool create, bool *writable, char *msg, size_t msglen);
/* Check an existing file of the cache the same way (symlink, owner, group
 * or world writable, a regular file).  *exists false when there is none
 * (then KF_OK).  *writable: the owner's w bit and access(W_OK). */
kf_status kf_cache_file_check(const char *path, bool *exists, bool *writable, char *msg, size_t msglen);

/* -- L2: the SQLite store (store.c) ---------------------------------------------------- */

typedef struct kf_store kf_store;

#define KF_STORE_FILE "kernels.db"

typedef struct kf_store_config {
    const char *dir;          /* checked already (kf_cache_dir_check) */
    bool read_only;
    bool create;              /* create the database when it does not exist */
    uint64_t max_bytes;       /* 0: no cap */
    int busy_ms;              /* 0: 5000 */
} kf_store_config;

/* Counters per backend, kept in the database (stats table). */
typedef struct kf_store_counts {
    uint64_t hits, misses, compiles, bytes_read, bytes_written, evictions, dropped;
    double compile_ms;
} kf_store_counts;

/* Open (and create, or move aside and recreate when it is not a
 * database) dir/kernels.db.  On success *out is the store and note may hold
 * something to warn about (a database moved aside, a read-only fallback);
 * "" otherwise.  On failure note says why. */
kf_status kf_store_open(const kf_store_config *cfg, kf_store **out, char *note, size_t notelen);
/* Flush pending counters and close. */
void kf_store_close(kf_store *s);
bool kf_store_read_only(const kf_store *s);
/* The database failed as corrupt (every call fails fast until
 * kf_store_recover); recover moves a damaged database aside and
 * reconnects, note says what it did. */
bool kf_store_broken(kf_store *s);
kf_status kf_store_recover(kf_store *s, char *note, size_t notelen);
const char *kf_store_path(const kf_store *s);

typedef enum kf_store_result {
    KF_STORE_MISS,      /* no entry */
    KF_STORE_HIT,       /* the sink took the verified binary */
    KF_STORE_BAD,       /* an entry failed its checks and was dropped; msg says which */
    KF_STORE_CLAIMED,   /* kf_store_claim: this process compiles it */
    KF_STORE_ERROR,     /* the database failed; msg says how */
    KF_STORE_REFUSED    /* the sink could not use the binary; the sink says why */
} kf_store_result;

/* Where a binary read from the store goes.  take() gets the verified blob
 * in place, in SQLite's row, valid only during the call (the store's lock
 * is held): a driver loads it from there, with no copy, which in a new
 * process saves faulting in a blob-sized buffer.  It returns false when it
 * cannot use the blob, keeping the reason itself; it must not call into
 * the store or the cache (their locks are held). */
typedef struct kf_store_sink {
    bool (*take)(struct kf_store_sink *self, const void *blob, size_t len);
} kf_store_sink;
/* A sink that copies: after a hit, blob is malloc'ed (free it). */
typedef struct kf_store_copy {
    kf_store_sink sink;
    void *blob;
    size_t len;
} kf_store_copy;
void kf_store_copy_init(kf_store_copy *c);

/* Look k up; on a hit the material was compared and the blob's length and
 * checksum checked, the blob given to sink and the entry's last use and
 * hit count updated. */
kf_store_result kf_store_get(kf_store *s, const kf_cache_key *k, kf_store_sink *sink, char *msg, size_t msglen);
/* Before compiling k: claim it, so that other processes wait for this
 * compile instead of repeating it.  When another live process holds the
 * claim, waits (up to wait_ms) until its entry appears (KF_STORE_HIT with
 * the blob given to sink, as kf_store_get) or its claim goes; returns
 * KF_STORE_CLAIMED when this process should compile (claim held, or none
 * could be taken: compile anyway).  A claim is released by kf_store_put or
 * kf_store_unclaim. */
kf_store_result kf_store_claim(kf_store *s, const kf_cache_key *k, int wait_ms, kf_store_sink *sink, char *msg,
                               size_t msglen);
void kf_store_unclaim(kf_store *s, const kf_cache_key *k);
/* Store blob under k (name and nkernels describe it in listings).  Evicts
 * least recently used entries until the total is within the cap; *evicted
 * (may be NULL) counts them.  KF_OK also when the entry was there already.
 * A failure (busy past the timeout, disk full, read-only) is returned with
 * msg; nothing is stored then. */
kf_status kf_store_put(kf_store *s, const kf_cache_key *k, const char *name, int nkernels, const void *blob,
                       size_t len, double compile_ms, uint64_t *evicted, char *msg, size_t msglen);
/* Remove the entry of k (a driver refused it). */
void kf_store_drop(kf_store *s, const kf_cache_key *k);
/* Add delta to backend's counters; written with the next write (or close). */
void kf_store_count(kf_store *s, kf_backend backend, const kf_store_counts *delta);

/* -- Maintenance (fusec cache) -- */

typedef struct kf_store_entry {
    uint8_t key[16];
    char backend[16];
    const char *target, *compiler, *options, *name, *kfuse;   /* valid during the callback */
    int format, nkernels;
    uint64_t blob_len, size, hits;
    int64_t created_ms, last_used_ms;
    double compile_ms;
    bool ok;             /* kf_store_verify: the entry passed every check */
    const char *problem; /* kf_store_verify: what failed */
} kf_store_entry;
typedef void (*kf_store_entry_fn)(void *user, const kf_store_entry *e);

/* Every entry, least recently used first. */
kf_status kf_store_list(kf_store *s, kf_store_entry_fn fn, void *user, char *msg, size_t msglen);
/* Check every entry (key = hash of its material, blob length and checksum),
 * calling fn for each; *bad counts the failures. */
kf_status kf_store_verify(kf_store *s, kf_store_entry_fn fn, void *user, uint64_t *bad, char *msg, size_t msglen);
/* Evict least recently used entries until the total is at most max_bytes. */
kf_status kf_store_prune(kf_store *s, uint64_t max_bytes, uint64_t *evicted, uint64_t *freed, char *msg,
                         size_t msglen);
/* Remove every entry and counter. */
kf_status kf_store_clear(kf_store *s, uint64_t *removed, char *msg, size_t msglen);
/* Entries and their total size (what the cap counts). */
kf_status kf_store_totals(kf_store *s, uint64_t *entries, uint64_t *bytes, char *msg, size_t msglen);
/* Counters of each backend in the database (pending ones included). */
typedef void (*kf_store_counts_fn)(void *user, const char *backend, const kf_store_counts *c);
kf_status kf_store_stats(kf_store *s, kf_store_counts_fn fn, void *user, char *msg, size_t msglen);

/* -- The per-context facade (cache.c) ---------------------------------------------------- */

typedef struct kf_cache kf_cache;

/* What a context asks for (kf_context_options fields). */
typedef struct kf_cache_config {
    const char *dir;
    kf_cache_mode mode;
    uint64_t max_bytes;
    int must_hit;
    kf_warn_fn warn;
    void *warn_user;
    kf_memo_release_fn release;   /* frees a memoised program */
    void *release_owner;
    bool gpu;                     /* the device is a GPU (plan cache size) */
} kf_cache_config;

/* Resolve the settings, open the store (a failure becomes the context's
 * warning and memory-only operation) and make the memo.  Fails only when
 * out of memory. */
kf_status kf_cache_new(const kf_cache_config *cfg, kf_backend backend, kf_cache **out);
void kf_cache_free(kf_cache *c);
kf_memo *kf_cache_memo(kf_cache *c);
const kf_cache_settings *kf_cache_get_settings(const kf_cache *c);
/* The store, or NULL when memory-only. */
kf_store *kf_cache_store(kf_cache *c);

/* Report a fault: counted; the first one per context goes to the warning
 * sink (stderr by default). */
void kf_cache_warn(kf_cache *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A compile that missed memory: look the key up on disk (claiming it when
 * absent so that no other process compiles it at the same time).  HIT when
 * sink took the blob, REFUSED when it could not, or MISS (compile, then
 * kf_cache_put or kf_cache_unclaim).  Bad entries and database failures
 * are warned about, counted and seen as a miss. */
kf_store_result kf_cache_fetch(kf_cache *c, const kf_cache_key *k, kf_store_sink *sink);
void kf_cache_put(kf_cache *c, const kf_cache_key *k, const char *name, int nkernels, const void *blob, size_t len,
                  double compile_ms);
void kf_cache_unclaim(kf_cache *c, const kf_cache_key *k);
/* A fetched blob the driver would not load: drop it, warn and count. */
void kf_cache_reject(kf_cache *c, const kf_cache_key *k, const char *why);

/* Counters of the context (kf_stats fields). */
typedef enum kf_cache_counter {
    KF_CC_MEMORY_HITS, KF_CC_DISK_HITS, KF_CC_MISSES, KF_CC_COMPILES, KF_CC_BYTES_READ, KF_CC_BYTES_WRITTEN,
    KF_CC_DISK_EVICTIONS, KF_CC_DROPPED, KF_CC_COUNT
} kf_cache_counter;
void kf_cache_add(kf_cache *c, kf_cache_counter which, uint64_t n);
void kf_cache_add_compile_ms(kf_cache *c, double ms);
void kf_cache_stats(kf_cache *c, kf_stats *out);

#endif /* KF_CACHE_H */
