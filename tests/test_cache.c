/* The kernel cache in one process: settings, the plan cache, key
 * completeness, the runtime's hits and misses (OpenCL on the device
 * present), `fusec build` for CUDA archs against the keys a context on
 * such a device computes (a fake CUDA device: no GPU needed), refused
 * directories and files, and damaged or unusable databases.
 * Usage: test_cache unit|runtime|cuda FUSEC|permissions|faults */
#include "cache_util.h"
#include "cached.h"
#ifdef KFUSE_WITH_CUDA
#include "cuda_nvrtc.h"
#endif

#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <time.h>
#include <xxhash.h>

static kf_module *parse(const char *text)
{
    kf_module *m = NULL;
    kf_status s = kf_module_parse(text, strlen(text), "test", NULL, &m);
    CHECK_MSG(s == KF_OK, "%s", m ? kf_module_error(m) : "oom");
    return m;
}

/* -- Settings ----------------------------------------------------------------------- */

static void test_settings(void)
{
    kf_cache_settings s;
    static const char *const vars[] = { "KFUSE_CACHE", "KFUSE_CACHE_DIR", "KFUSE_CACHE_MAX_SIZE",
                                        "KFUSE_CACHE_MUST_HIT", "XDG_CACHE_HOME", "KFUSE_CACHE_BUSY_MS",
                                        "KFUSE_PLAN_CACHE" };
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        unsetenv(vars[i]);
    setenv("HOME", "/home/someone", 1);
    kf_cache_settings_resolve(NULL, KF_CACHE_DEFAULT, 0, 0, &s);
    CHECK(strcmp(s.dir, "/home/someone/.cache/kfuse") == 0 && s.dir_from == KF_CACHE_FROM_HOME);
    CHECK(s.mode == KF_CACHE_RW && !s.must_hit && s.max_bytes == (1ull << 30) && !s.problem[0]);
    setenv("XDG_CACHE_HOME", "relative/path", 1); /* XDG says: ignore a relative one */
    kf_cache_settings_resolve(NULL, KF_CACHE_DEFAULT, 0, 0, &s);
    CHECK(s.dir_from == KF_CACHE_FROM_HOME);
    setenv("XDG_CACHE_HOME", "/xdg/", 1);
    kf_cache_settings_resolve(NULL, KF_CACHE_DEFAULT, 0, 0, &s);
    CHECK(strcmp(s.dir, "/xdg/kfuse") == 0 && s.dir_from == KF_CACHE_FROM_XDG);
    setenv("KFUSE_CACHE_DIR", "/env/dir", 1);
    kf_cache_settings_resolve(NULL, KF_CACHE_DEFAULT, 0, 0, &s);
    CHECK(strcmp(s.dir, "/env/dir") == 0 && s.dir_from == KF_CACHE_FROM_ENV);
    kf_cache_settings_resolve("/opt/dir", KF_CACHE_DEFAULT, 0, 0, &s);
    CHECK(strcmp(s.dir, "/opt/dir") == 0 && s.dir_from == KF_CACHE_FROM_OPTIONS);

    setenv("KFUSE_CACHE", "ro", 1);
    setenv("KFUSE_CACHE_MUST_HIT", "1", 1);
    setenv("KFUSE_CACHE_MAX_SIZE", "64M", 1);
    kf_cache_settings_resolve(NULL, KF_CACHE_DEFAULT, 0, 0, &s);
    CHECK(s.mode == KF_CACHE_RO && s.must_hit && s.max_bytes == 64ull << 20 && !s.problem[0]);
    /* options win over the environment */
    kf_cache_settings_resolve(NULL, KF_CACHE_RW, 1000, -1, &s);
    CHECK(s.mode == KF_CACHE_RW && !s.must_hit && s.max_bytes == 1000);
    setenv("KFUSE_CACHE", "maybe", 1);
    kf_cache_settings_resolve(NULL, KF_CACHE_DEFAULT, 0, 0, &s);
    CHECK(s.mode == KF_CACHE_OFF);
    CHECK_CONTAINS(s.problem, "KFUSE_CACHE='maybe'");
    setenv("KFUSE_CACHE", "off", 1);
    setenv("KFUSE_CACHE_MAX_SIZE", "lots", 1);
    kf_cache_settings_resolve(NULL, KF_CACHE_DEFAULT, 0, 0, &s);
    CHECK(s.mode == KF_CACHE_OFF && s.max_bytes == 1ull << 30);
    CHECK_CONTAINS(s.problem, "KFUSE_CACHE_MAX_SIZE='lots'");
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        unsetenv(vars[i]);

    uint64_t v = 0;
    CHECK(kf_cache_parse_size("1048576", &v) && v == 1048576);
    CHECK(kf_cache_parse_size("1M", &v) && v == 1 << 20);
    CHECK(kf_cache_parse_size("1MiB", &v) && v == 1 << 20);
    CHECK(kf_cache_parse_size("2GB", &v) && v == 2ull << 30);
    CHECK(kf_cache_parse_size("512k", &v) && v == 512 << 10);
    CHECK(!kf_cache_parse_size("0", &v) && !kf_cache_parse_size("-1M", &v) && !kf_cache_parse_size("1X", &v) &&
          !kf_cache_parse_size("", &v) && !kf_cache_parse_size("99999999999999999999", &v));
}

/* -- Plan cache ---------------------------------------------------------------------- */

static int released[64];
static void count_release(void *owner, void *value)
{
    (void)owner;
    released[(intptr_t)value]++;
}

static kf_memo_key mkey(int i)
{
    kf_memo_key k = { { (uint64_t)i, 7 }, 1, 2 };
    return k;
}

static void test_memo(void)
{
    memset(released, 0, sizeof released);
    kf_memo *m = kf_memo_new(3, count_release, NULL);
    kf_memo_entry *e[8];
    for (int i = 1; i <= 3; i++) {
        kf_memo_key k = mkey(i);
        e[i] = kf_memo_put(m, &k, (void *)(intptr_t)i);
        CHECK(e[i] && kf_memo_value(e[i]) == (void *)(intptr_t)i);
    }
    /* all referenced: a fourth entry evicts nothing */
    kf_memo_key k4 = mkey(4);
    e[4] = kf_memo_put(m, &k4, (void *)(intptr_t)4);
    uint64_t n = 0, ev = 0;
    kf_memo_counts(m, &n, &ev);
    CHECK(n == 4 && ev == 0);
    /* the last reference of the least recently used goes: it is evicted */
    kf_memo_unref(m, e[1]);
    kf_memo_counts(m, &n, &ev);
    CHECK(n == 3 && ev == 1 && released[1] == 1);
    kf_memo_key k1 = mkey(1);
    CHECK(kf_memo_get(m, &k1) == NULL);
    /* a hit moves the entry to the front */
    kf_memo_unref(m, e[2]);
    kf_memo_unref(m, e[3]);
    kf_memo_unref(m, e[4]);
    kf_memo_key k2 = mkey(2);
    kf_memo_entry *again = kf_memo_get(m, &k2);
    CHECK(again == e[2]);
    kf_memo_unref(m, again);
    kf_memo_key k5 = mkey(5);
    e[5] = kf_memo_put(m, &k5, (void *)(intptr_t)5);
    CHECK(released[3] == 1 && released[2] == 0); /* 3 was the least recently used */
    /* a second put of an existing key returns the first, releases the new value */
    kf_memo_entry *dup = kf_memo_put(m, &k5, (void *)(intptr_t)6);
    CHECK(dup == e[5] && released[6] == 1 && released[5] == 0);
    kf_memo_unref(m, dup);
    kf_memo_unref(m, e[5]);
    /* variants and names are part of the key */
    kf_memo_key kv = mkey(2);
    kv.variant ^= 1;
    CHECK(kf_memo_get(m, &kv) == NULL);
    kv = mkey(2);
    kv.names ^= 1;
    CHECK(kf_memo_get(m, &kv) == NULL);
    kf_memo_free(m);
    CHECK(released[2] == 1 && released[4] == 1 && released[5] == 1);
}

/* -- Key completeness ------------------------------------------------------------------ */

static const char g_base[] = "kfuse 1\ngraph g(x: f32[n], y: f32[n]) -> (z) {\n"
                             "  a = mul x, x\n  b = mul y, 2.0\n  z = add a, b\n}\n";
/* intermediate values renamed */
static const char g_renamed[] = "kfuse 1\ngraph g(x: f32[n], y: f32[n]) -> (z) {\n"
                                "  sq = mul x, x\n  twice = mul y, 2.0\n  z = add sq, twice\n}\n";
/* independent statements in the other order */
static const char g_reordered[] = "kfuse 1\ngraph g(x: f32[n], y: f32[n]) -> (z) {\n"
                                  "  b = mul y, 2.0\n  a = mul x, x\n  z = add a, b\n}\n";
/* one op changed */
static const char g_changed[] = "kfuse 1\ngraph g(x: f32[n], y: f32[n]) -> (z) {\n"
                                "  a = mul x, x\n  b = mul y, 2.0\n  z = sub a, b\n}\n";

static bool key_of(const char *text, const kf_cache_target *t, uint8_t out[16])
{
    kf_module *m = parse(text);
    kf_cache_prep p;
    char err[512];
    kf_status s = m ? kf_cache_prepare(kf_module_graph(m, 0), t, &p, err, sizeof err) : KF_ERR_NO_MEMORY;
    CHECK_MSG(s == KF_OK, "prepare: %s", err);
    if (s == KF_OK) {
        kf_cache_prep_key(&p);
        memcpy(out, p.key.hash, 16);
    }
    kf_cache_prep_free(&p);
    kf_module_free(m);
    return s == KF_OK;
}

static void test_keys(void)
{
    kf_cache_target sm80, sm90, newer, opt, ocl, fast;
    kf_fuse_options fm = { .fast_math = true };
    CHECK_STATUS(kf_cache_target_cuda_arch("sm_80", "nvrtc 12.8 -default-device --fmad=false", NULL, &sm80), KF_OK);
    CHECK_STATUS(kf_cache_target_cuda_arch("sm_90", "nvrtc 12.8 -default-device --fmad=false", NULL, &sm90), KF_OK);
    CHECK_STATUS(kf_cache_target_cuda_arch("sm_90", "nvrtc 12.9 -default-device --fmad=false", NULL, &newer), KF_OK);
    CHECK_STATUS(kf_cache_target_cuda_arch("sm_90", "nvrtc 12.8 -default-device --fmad=false", &fm, &fast), KF_OK);
    CHECK(fast.caps.fast_math && !sm90.caps.fast_math && strstr(fast.options, "fast_math=1"));
    kf_fuse_options fo = { .max_ops = 100 };
    kf_device_info info;
    memset(&info, 0, sizeof info);
    info.backend = KF_BACKEND_CUDA;
    snprintf(info.arch, sizeof info.arch, "sm_90");
    info.fp64 = info.fp16 = true;
    CHECK_STATUS(kf_cache_target_of(&info, "nvrtc 12.8 -default-device --fmad=false", &fo, &opt), KF_OK);
    info.backend = KF_BACKEND_OPENCL;
    snprintf(info.name, sizeof info.name, "dev");
    CHECK_STATUS(kf_cache_target_of(&info, "opencl platform 'x'", NULL, &ocl), KF_OK);
    uint8_t base[16], k[16];
    if (!key_of(g_base, &sm90, base))
        return;
    CHECK(key_of(g_renamed, &sm90, k) && memcmp(k, base, 16) == 0);
    CHECK(key_of(g_reordered, &sm90, k) && memcmp(k, base, 16) == 0);
    CHECK(key_of(g_changed, &sm90, k) && memcmp(k, base, 16) != 0);
    CHECK(key_of(g_base, &sm80, k) && memcmp(k, base, 16) != 0);
    CHECK(key_of(g_base, &newer, k) && memcmp(k, base, 16) != 0);
    CHECK(key_of(g_base, &opt, k) && memcmp(k, base, 16) != 0);
    CHECK(key_of(g_base, &ocl, k) && memcmp(k, base, 16) != 0);
    CHECK(key_of(g_base, &fast, k) && memcmp(k, base, 16) != 0);   /* the options (g_base has no approximated op) */
    /* every field of the material counts, each on its own */
    uint8_t h0[16], h[16];
    kf_cache_key_hash(1, "0.1.0", "cuda", "sm_90", "nvrtc", "o", "src", 3, h0);
    kf_cache_key_hash(2, "0.1.0", "cuda", "sm_90", "nvrtc", "o", "src", 3, h);
    CHECK(memcmp(h, h0, 16) != 0);
    kf_cache_key_hash(1, "0.1.1", "cuda", "sm_90", "nvrtc", "o", "src", 3, h);
    CHECK(memcmp(h, h0, 16) != 0);
    kf_cache_key_hash(1, "0.1.0", "opencl", "sm_90", "nvrtc", "o", "src", 3, h);
    CHECK(memcmp(h, h0, 16) != 0);
    kf_cache_key_hash(1, "0.1.0", "cuda", "sm_90", "nvrtc", "o", "srC", 3, h);
    CHECK(memcmp(h, h0, 16) != 0);
    /* fields are length-prefixed: moving a byte across a boundary changes the key */
    kf_cache_key_hash(1, "0.1.0", "cuda", "sm_9", "0nvrtc", "o", "src", 3, h);
    CHECK(memcmp(h, h0, 16) != 0);
    char hex[33];
    uint8_t ones[16];
    memset(ones, 0xab, 16);
    kf_cache_hex(ones, hex);
    CHECK(strcmp(hex, "abababababababababababababababab") == 0);
}

/* -- The store on its own: LRU eviction, claims ------------------------------------------- */

static void synthetic_key(kf_cache_key *k, kf_cache_target *t, const char *src)
{
    memset(t, 0, sizeof *t);
    t->backend = KF_BACKEND_OPENCL;
    snprintf(t->target, sizeof t->target, "unit");
    kf_cache_key_make(k, t, src, strlen(src));
}

static bool present(kf_store *s, const kf_cache_key *k)
{
    kf_store_copy got;
    kf_store_copy_init(&got);
    char msg[600];
    kf_store_result r = kf_store_get(s, k, &got.sink, msg, sizeof msg);
    free(got.blob);
    return r == KF_STORE_HIT;
}

static void test_store(void)
{
    char tmp[256], note[600], msg[600];
    temp_dir(tmp, sizeof tmp, "store");
    kf_store *s = NULL, *s2 = NULL;
    kf_store_config sc = { tmp, false, true, 1 << 20, 0 };
    CHECK_STATUS(kf_store_open(&sc, &s, note, sizeof note), KF_OK);
    CHECK_STATUS(kf_store_open(&sc, &s2, note, sizeof note), KF_OK);
    if (!s || !s2)
        return;
    kf_cache_target ta, tb, tc, td;
    kf_cache_key a, b, c, d;
    synthetic_key(&a, &ta, "a");
    synthetic_key(&b, &tb, "b");
    synthetic_key(&c, &tc, "c");
    synthetic_key(&d, &td, "d");
    size_t big = 300 * 1024;
    char *blob = malloc(big);
    memset(blob, 7, big);
    uint64_t ev = 9;
    CHECK_STATUS(kf_store_put(s, &a, "a", 1, blob, big, 1, &ev, msg, sizeof msg), KF_OK);
    CHECK(ev == 0);
    CHECK_STATUS(kf_store_put(s, &b, "b", 1, blob, big, 1, &ev, msg, sizeof msg), KF_OK);
    CHECK_STATUS(kf_store_put(s, &c, "c", 1, blob, big, 1, &ev, msg, sizeof msg), KF_OK);
    struct timespec ms = { 0, 5000000 };
    nanosleep(&ms, NULL); /* last use is in milliseconds */
    CHECK(ev == 0 && present(s, &a)); /* a is now used more recently than b */
    CHECK_STATUS(kf_store_put(s, &d, "d", 1, blob, big, 1, &ev, msg, sizeof msg), KF_OK);
    CHECK_MSG(ev == 1 && !present(s2, &b) && present(s2, &a) && present(s2, &c) && present(s2, &d),
              "evicted %llu", (unsigned long long)ev);
    uint64_t n = 0, bytes = 0;
    CHECK_STATUS(kf_store_totals(s2, &n, &bytes, msg, sizeof msg), KF_OK);
    CHECK(n == 3 && bytes <= (1 << 20));
    /* an entry larger than the cap is not stored */
    char *huge = calloc(1, 2 << 20);
    CHECK_STATUS(kf_store_put(s, &b, "b", 1, huge, 2 << 20, 1, &ev, msg, sizeof msg), KF_ERR_LIMIT);
    free(huge);

    /* claims: a live claim makes others wait (here: time out and compile
     * anyway), its entry ends the wait; a dead process's claim is void */
    kf_cache_target te;
    kf_cache_key e;
    synthetic_key(&e, &te, "e");
    kf_store_copy got;
    kf_store_copy_init(&got);
    CHECK(kf_store_claim(s, &e, 0, &got.sink, msg, sizeof msg) == KF_STORE_CLAIMED);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CHECK(kf_store_claim(s2, &e, 150, &got.sink, msg, sizeof msg) == KF_STORE_CLAIMED);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double waited = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    CHECK_MSG(waited >= 140, "waited %.0f ms for a live claim", waited);
    CHECK_STATUS(kf_store_put(s, &e, "e", 1, blob, 4096, 1, NULL, msg, sizeof msg), KF_OK);
    CHECK(kf_store_claim(s2, &e, 150, &got.sink, msg, sizeof msg) == KF_STORE_HIT && got.len == 4096 &&
          memcmp(got.blob, blob, 4096) == 0);
    free(got.blob);
    pid_t child = fork();
    if (child == 0)
        _exit(0);
    waitpid(child, NULL, 0);
    char db[400], sqlbuf[700], host[256] = "";
    gethostname(host, sizeof host - 1);
    snprintf(db, sizeof db, "%s/kernels.db", tmp);
    sqlite3 *h = NULL;
    CHECK(sqlite3_open(db, &h) == SQLITE_OK);
    kf_cache_target tf;
    kf_cache_key f;
    synthetic_key(&f, &tf, "f");
    char hex[33];
    kf_cache_hex(f.hash, hex);
    snprintf(sqlbuf, sizeof sqlbuf, "INSERT INTO claim VALUES(x'%s', '%s', %d, %lld)", hex, host, (int)child,
             (long long)time(NULL) * 1000);
    CHECK(sqlite3_exec(h, sqlbuf, NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(h);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CHECK(kf_store_claim(s2, &f, 5000, &got.sink, msg, sizeof msg) == KF_STORE_CLAIMED);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    waited = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    CHECK_MSG(waited < 1000, "waited %.0f ms for a dead process's claim", waited);
    kf_store_unclaim(s2, &f);
    free(blob);
    kf_store_close(s);
    kf_store_close(s2);
    rm_rf(tmp);
}

/* -- The runtime on the OpenCL device ---------------------------------------------------- */

static int warn_count;
static char warn_last[600];
static void sink(void *user, const char *msg)
{
    (void)user;
    warn_count++;
    snprintf(warn_last, sizeof warn_last, "%s", msg);
}

static kf_context *open_ctx(const char *dir, int must_hit)
{
    kf_context_options o = { .backend = KF_BACKEND_OPENCL, .device = 0, .cache_dir = dir, .cache_must_hit = must_hit,
                             .warn = sink };
    kf_context *ctx = NULL;
    char why[512];
    if (kf_context_create(&o, &ctx, why, sizeof why) != KF_OK)
        return NULL;
    return ctx;
}

static kf_stats stats_of(kf_context *ctx)
{
    kf_stats s;
    kf_context_stats(ctx, &s);
    return s;
}

/* Compile (and run, checked) the first graph of text on ctx. */
static bool use(kf_context *ctx, const char *text)
{
    kf_module *m = parse(text);
    bool ok = m && run_checked(ctx, kf_module_graph(m, 0));
    kf_module_free(m);
    return ok;
}

static void test_runtime(void)
{
    char tmp[256], dir[300];
    temp_dir(tmp, sizeof tmp, "rt");
    snprintf(dir, sizeof dir, "%s/cache", tmp);
    kf_context *ctx = open_ctx(dir, 0);
    if (!ctx) {
        printf("no OpenCL device: runtime cache tests skipped\n");
        rm_rf(tmp);
        return;
    }
    warn_count = 0;
    kf_stats s = stats_of(ctx);
    CHECK(s.cache_mode == KF_CACHE_RW && strcmp(s.cache_dir, dir) == 0 && s.backend == KF_BACKEND_OPENCL);
    struct stat st;
    CHECK(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700);
    char db[400];
    snprintf(db, sizeof db, "%s/kernels.db", dir);
    CHECK(stat(db, &st) == 0 && (st.st_mode & 0777) == 0600);

    CHECK(use(ctx, g_base));
    s = stats_of(ctx);
    CHECK(s.misses == 1 && s.compiles == 1 && s.disk_hits == 0 && s.memory_hits == 0 && s.bytes_written > 0);
    /* again, renamed, reordered: the plan cache, nothing else */
    CHECK(use(ctx, g_base) && use(ctx, g_renamed) && use(ctx, g_reordered));
    s = stats_of(ctx);
    CHECK_MSG(s.memory_hits == 3 && s.compiles == 1 && s.misses == 1, "memory %llu compiles %llu",
              (unsigned long long)s.memory_hits, (unsigned long long)s.compiles);
    /* programs that share a module outlive each other in any order */
    kf_module *m = parse(g_base);
    kf_program *p1 = NULL, *p2 = NULL;
    CHECK_STATUS(kf_compile(ctx, kf_module_graph(m, 0), &p1), KF_OK);
    CHECK_STATUS(kf_compile(ctx, kf_module_graph(m, 0), &p2), KF_OK);
    kf_program_free(p1);
    CHECK(run_checked(ctx, kf_module_graph(m, 0)));
    kf_program_free(p2);
    kf_module_free(m);
    kf_context_destroy(ctx);

    /* a second context: from disk, renamed and reordered included */
    ctx = open_ctx(dir, 0);
    CHECK(use(ctx, g_renamed) && use(ctx, g_reordered));
    s = stats_of(ctx);
    CHECK_MSG(s.compiles == 0 && s.disk_hits == 1 && s.memory_hits == 1, "compiles %llu disk %llu",
              (unsigned long long)s.compiles, (unsigned long long)s.disk_hits);
    CHECK(s.bytes_read > 0);
    /* one op changed: a miss */
    CHECK(use(ctx, g_changed));
    s = stats_of(ctx);
    CHECK(s.compiles == 1 && s.misses == 1);
    kf_context_destroy(ctx);

    /* a compiler upgrade (faked) and another option: misses */
    ctx = open_ctx(dir, 0);
    kf_rt_cache_test_target(ctx, " (upgraded)", NULL);
    CHECK(use(ctx, g_base));
    s = stats_of(ctx);
    CHECK(s.compiles == 1 && s.disk_hits == 0);
    kf_rt_cache_test_target(ctx, NULL, " another-option");
    CHECK(use(ctx, g_base));
    s = stats_of(ctx);
    CHECK(s.compiles == 2 && s.disk_hits == 0 && s.memory_hits == 0);
    kf_context_destroy(ctx);

    /* must-hit: the base graph is there, a new one is an error naming it */
    ctx = open_ctx(dir, 1);
    CHECK(use(ctx, g_base));
    kf_module *nm = parse("kfuse 1\ngraph never_built(x: f32[n]) -> (y) {\n  y = exp x\n}\n");
    kf_program *p = NULL;
    CHECK_STATUS(kf_compile(ctx, kf_module_graph(nm, 0), &p), KF_ERR_CACHE_MISS);
    CHECK(p == NULL);
    CHECK_CONTAINS(kf_context_error(ctx), "never_built");
    CHECK_CONTAINS(kf_context_error(ctx), "never_built_k0_");
    CHECK_CONTAINS(kf_context_error(ctx), "must-hit");
    s = stats_of(ctx);
    CHECK(s.compiles == 0 && s.must_hit && s.disk_hits == 1 && s.misses == 1);
    CHECK(strcmp(kf_status_string(KF_ERR_CACHE_MISS), "not in the cache") == 0);
    kf_module_free(nm);
    kf_context_destroy(ctx);

    /* KFUSE_CACHE=off: memory only, nothing read */
    setenv("KFUSE_CACHE", "off", 1);
    ctx = open_ctx(dir, 0);
    CHECK(use(ctx, g_base));
    s = stats_of(ctx);
    CHECK(s.cache_mode == KF_CACHE_OFF && s.compiles == 1 && s.cache_dir[0] == 0);
    kf_context_destroy(ctx);
    unsetenv("KFUSE_CACHE");
    CHECK_MSG(warn_count == 0, "unexpected warning: %s", warn_last);

    /* the store agrees: every entry verifies, counters were kept */
    kf_store *store = NULL;
    char note[600];
    kf_store_config sc = { dir, true, false, 0, 0 };
    CHECK_STATUS(kf_store_open(&sc, &store, note, sizeof note), KF_OK);
    uint64_t n = 0, bad = 9;
    CHECK_STATUS(kf_store_verify(store, NULL, NULL, &bad, note, sizeof note), KF_OK);
    CHECK_STATUS(kf_store_totals(store, &n, NULL, note, sizeof note), KF_OK);
    CHECK(bad == 0 && n == 4);
    kf_store_close(store);
    rm_rf(tmp);
}

/* -- fusec build for CUDA against a context on a (fake) device of that arch ----------------- */

#ifdef KFUSE_WITH_CUDA
static int fake_loads, fake_cached_loads, fake_compiles;
static kf_status fk_load(void *dev, const void *bin, size_t len, bool from_cache, void **mod, kf_rt_err *err)
{
    (void)dev;
    (void)err;
    fake_loads++;
    fake_cached_loads += from_cache;
    CHECK_MSG(len > 4 && memcmp(bin, "\177ELF", 4) == 0, "the stored binary is not a cubin");
    *mod = malloc(1);
    return KF_OK;
}
static kf_status fk_compile(void *dev, const char *src, size_t len, void **bin, size_t *binlen, kf_rt_err *err)
{
    (void)dev;
    fake_compiles++;
    return kf_rt_cuda_compile_arch(src, len, "sm_90", bin, binlen, err);
}
static void fk_unload(void *dev, void *mod)
{
    (void)dev;
    free(mod);
}
static kf_status fk_function(void *dev, void *mod, const char *name, void **fn, kf_rt_err *err)
{
    (void)dev;
    (void)name;
    (void)err;
    *fn = mod;
    return KF_OK;
}
static kf_status fk_sync(void *dev, void *stream, kf_rt_err *err)
{
    (void)dev;
    (void)stream;
    (void)err;
    return KF_OK;
}
static void fk_close(void *dev) { (void)dev; }
static char fake_id[256];
static const char *fk_compiler_id(void *dev)
{
    (void)dev;
    return fake_id;
}
static const kf_backend_ops fake_cuda = {
    .name = "cuda", .kind = KF_BACKEND_CUDA, .close = fk_close, .compile = fk_compile, .load = fk_load,
    .unload = fk_unload, .function = fk_function, .stream_sync = fk_sync, .compiler_id = fk_compiler_id,
};

static void list_init(kf_rt_link *h) { h->next = h->prev = h; }

/* A context as kf_context_create makes it, on a device that reports arch
 * (no GPU: the backend is fake, its compiler identity NVRTC's own), with
 * fast math or not. */
static kf_context *fake_context(const char *arch, const char *dir, bool fast)
{
    kf_context *ctx = calloc(1, sizeof *ctx);
    ctx->be = &fake_cuda;
    ctx->info.backend = KF_BACKEND_CUDA;
    snprintf(ctx->info.name, sizeof ctx->info.name, "fake %s", arch);
    snprintf(ctx->info.arch, sizeof ctx->info.arch, "%s", arch);
    sscanf(arch, "sm_%d", &ctx->info.sm);   /* as cu_open fills it */
    ctx->info.fp64 = ctx->info.fp16 = ctx->info.gpu = true;
    ctx->info.compute_units = 132;
    pthread_mutex_init(&ctx->lock, NULL);
    list_init(&ctx->buffers);
    list_init(&ctx->streams);
    list_init(&ctx->events);
    list_init(&ctx->programs);
    list_init(&ctx->replays);
    kf_context_options o = { .cache_dir = dir, .cache_must_hit = 1, .warn = sink, .fast_math = fast };
    CHECK_STATUS(kf_rt_cache_open(ctx, &o), KF_OK);
    ctx->default_stream = calloc(1, sizeof *ctx->default_stream);
    ctx->default_stream->ctx = ctx;
    pthread_mutex_init(&ctx->default_stream->lock, NULL);
    list_init(&ctx->default_stream->link);
    return ctx;
}

static void test_cuda(const char *fusec)
{
    kf_rt_cuda_compiler_id(fake_id, sizeof fake_id);
    char tmp[256], dir[300], file[300], cmd[2048];
    temp_dir(tmp, sizeof tmp, "cuda");
    snprintf(dir, sizeof dir, "%s/cache", tmp);
    snprintf(file, sizeof file, "%s/graphs.kir", tmp);
    char *text = distinct_graphs(6, 7);
    write_file(file, text);
    free(text);
    snprintf(cmd, sizeof cmd, "'%s' build --target cuda:sm_80 --target cuda:sm_90 --cache '%s' '%s' >'%s/out.txt' 2>&1",
             fusec, dir, file, tmp);
    int rc = system(cmd);
    CHECK_MSG(rc == 0, "fusec build for CUDA failed (%d)", rc);
    if (rc != 0)
        return;
    kf_module *m = NULL;
    CHECK_STATUS(kf_module_parse_file(file, NULL, &m), KF_OK);
    static const char *const archs[] = { "sm_80", "sm_90" };
    for (int a = 0; a < 2; a++) {
        fake_loads = fake_cached_loads = fake_compiles = 0;
        warn_count = 0;
        kf_context *ctx = fake_context(archs[a], dir, false);
        for (int i = 0; i < kf_module_num_graphs(m); i++) {
            kf_program *p = NULL;
            kf_status s = kf_compile(ctx, kf_module_graph(m, i), &p);
            CHECK_MSG(s == KF_OK, "%s on a fake %s: %s", kf_graph_name(kf_module_graph(m, i)), archs[a],
                      kf_context_error(ctx));
            kf_program_free(p);
        }
        kf_stats st = stats_of(ctx);
        CHECK_MSG(st.compiles == 0 && fake_compiles == 0 && st.disk_hits == (uint64_t)kf_module_num_graphs(m) &&
                      fake_loads == kf_module_num_graphs(m) && fake_cached_loads == fake_loads,
                  "%s: compiles %llu, disk hits %llu of %d, %d of %d loads as verified cache entries", archs[a],
                  (unsigned long long)st.compiles, (unsigned long long)st.disk_hits, kf_module_num_graphs(m),
                  fake_cached_loads, fake_loads);
        CHECK(warn_count == 0);
        kf_context_destroy(ctx);
    }
    /* an arch that was not built misses (must-hit: an error, not a compile) */
    kf_context *ctx = fake_context("sm_86", dir, false);
    kf_program *p = NULL;
    CHECK_STATUS(kf_compile(ctx, kf_module_graph(m, 0), &p), KF_ERR_CACHE_MISS);
    kf_context_destroy(ctx);
    kf_module_free(m);
    /* fusec build --fast-math: the keys of a fast_math context, which finds
     * every kernel; an exact context finds none of them */
    static const char bp[] = "kfuse 1\ngraph bp(a: f32[n], b: f32[n]) -> (y) {\n"
                             "  y = log (div (add 1.0, (exp (add a, b))), (add (exp a), (exp b)))\n}\n";
    snprintf(file, sizeof file, "%s/fast.kir", tmp);
    write_file(file, bp);
    snprintf(cmd, sizeof cmd, "'%s' build --fast-math --target cuda:sm_90 --cache '%s' '%s' >'%s/out.txt' 2>&1",
             fusec, dir, file, tmp);
    rc = system(cmd);
    CHECK_MSG(rc == 0, "fusec build --fast-math for CUDA failed (%d)", rc);
    CHECK_STATUS(kf_module_parse_file(file, NULL, &m), KF_OK);
    for (int fast = 1; rc == 0 && m && fast >= 0; fast--) {
        fake_loads = fake_compiles = 0;
        ctx = fake_context("sm_90", dir, fast);
        CHECK_STATUS(kf_compile(ctx, kf_module_graph(m, 0), &p), fast ? KF_OK : KF_ERR_CACHE_MISS);
        CHECK_MSG(fake_compiles == 0 && fake_loads == fast, "fast %d: %d compiles, %d loads", fast, fake_compiles,
                  fake_loads);
        kf_program_free(p);
        p = NULL;
        kf_context_destroy(ctx);
    }
    kf_module_free(m);
    rm_rf(tmp);
}
#endif

/* -- Refused directories and files ---------------------------------------------------------- */

/* A context on dir must warn once, run memory-only, and still compute. */
static void refused(const char *dir, const char *why)
{
    warn_count = 0;
    warn_last[0] = 0;
    kf_context *ctx = open_ctx(dir, 0);
    if (!ctx)
        return;
    CHECK(use(ctx, g_base) && use(ctx, g_changed));
    kf_stats s = stats_of(ctx);
    CHECK_MSG(s.cache_mode == KF_CACHE_OFF, "%s: mode %d", dir, (int)s.cache_mode);
    CHECK_MSG(warn_count == 1 && s.warnings == 1, "%s: %d warnings", dir, warn_count);
    CHECK_CONTAINS(warn_last, why);
    CHECK_CONTAINS(s.warning, why);
    CHECK(s.compiles == 2);
    kf_context_destroy(ctx);
}

static void test_permissions(void)
{
    char tmp[256], real[300], link[300], d[300], f[400];
    temp_dir(tmp, sizeof tmp, "perm");
    kf_context *probe = open_ctx(tmp, 0);
    if (!probe) {
        printf("no OpenCL device: permission tests skipped\n");
        rm_rf(tmp);
        return;
    }
    kf_context_destroy(probe);

    snprintf(real, sizeof real, "%s/real", tmp);
    snprintf(link, sizeof link, "%s/link", tmp);
    mkdir(real, 0700);
    CHECK(symlink(real, link) == 0);
    refused(link, "is a symbolic link");
    char slash[320];
    snprintf(slash, sizeof slash, "%s/", link);
    refused(slash, "is a symbolic link");

    snprintf(d, sizeof d, "%s/open", tmp);
    mkdir(d, 0700);
    chmod(d, 0777);
    refused(d, "writable by everyone");
    chmod(d, 0770);
    refused(d, "writable by its group");

    snprintf(d, sizeof d, "%s/foreign", tmp);
    mkdir(d, 0700);
    snprintf(f, sizeof f, "%s/kernels.db", d);
    write_file(f, "");
    chmod(f, 0600);
    if (chown(f, 65534, 65534) == 0)
        refused(d, "belongs to uid 65534");
    else
        printf("not root: the foreign-owned file case is skipped (%s)\n", strerror(errno));
    snprintf(d, sizeof d, "%s/groupfile", tmp);
    mkdir(d, 0700);
    snprintf(f, sizeof f, "%s/kernels.db", d);
    write_file(f, "");
    chmod(f, 0620);
    refused(d, "writable by its group");
    snprintf(d, sizeof d, "%s/walsym", tmp);
    mkdir(d, 0700);
    snprintf(f, sizeof f, "%s/kernels.db-wal", d);
    CHECK(symlink("/tmp/elsewhere", f) == 0);
    refused(d, "is a symbolic link");
    snprintf(d, sizeof d, "%s/notadir", tmp);
    write_file(d, "x");
    refused(d, "is not a directory");
    rm_rf(tmp);
}

/* -- Damaged and unusable databases ------------------------------------------------------------ */

static void sql(const char *db, const char *stmt)
{
    sqlite3 *h = NULL;
    CHECK(sqlite3_open(db, &h) == SQLITE_OK);
    char *err = NULL;
    CHECK_MSG(sqlite3_exec(h, stmt, NULL, NULL, &err) == SQLITE_OK, "%s: %s", stmt, err ? err : "?");
    sqlite3_free(err);
    sqlite3_close(h);
}

static void garbage(const char *path, size_t n, long at)
{
    int fd = open(path, O_WRONLY | (at < 0 ? O_TRUNC : 0));
    CHECK(fd >= 0);
    rt_rng r = { 99 };
    char buf[4096];
    if (at > 0)
        lseek(fd, at, SEEK_SET);
    for (size_t o = 0; o < n; o += sizeof buf) {
        for (size_t i = 0; i < sizeof buf; i++)
            buf[i] = (char)rt_next(&r);
        CHECK(write(fd, buf, sizeof buf) == (ssize_t)sizeof buf);
    }
    close(fd);
}

/* Run base and changed on a fresh context of dir: both right; returns its stats. */
static kf_stats both(const char *dir)
{
    warn_count = 0;
    warn_last[0] = 0;
    kf_context *ctx = open_ctx(dir, 0);
    kf_stats s;
    memset(&s, 0, sizeof s);
    if (!ctx)
        return s;
    CHECK(use(ctx, g_base));
    CHECK(use(ctx, g_changed));
    s = stats_of(ctx);
    kf_context_destroy(ctx);
    return s;
}

/* Every entry's blob becomes text that is no program binary, with its
 * length and checksum made to match: only the driver can tell. */
static void unloadable(const char *db)
{
    static const char junk[] = "this is not a program binary";
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits(junk, sizeof junk));
    char hex[33], stmt[400];
    kf_cache_hex(c.digest, hex);
    snprintf(stmt, sizeof stmt,
             "UPDATE payload SET blob = CAST('%s' AS BLOB) || x'00'; UPDATE entry SET blob_len = %zu, blob_hash = x'%s'",
             junk, sizeof junk, hex);
    sql(db, stmt);
}

static void test_faults(void)
{
    char tmp[256], dir[300], db[400], side[420];
    temp_dir(tmp, sizeof tmp, "faults");
    snprintf(dir, sizeof dir, "%s/cache", tmp);
    snprintf(db, sizeof db, "%s/kernels.db", dir);
    kf_context *probe = open_ctx(dir, 0);
    if (!probe) {
        printf("no OpenCL device: fault tests skipped\n");
        rm_rf(tmp);
        return;
    }
    kf_context_destroy(probe);
    kf_stats s = both(dir);
    CHECK(s.compiles == 2 && s.bytes_written > 0);

    /* a flipped byte in one blob, the other blob truncated */
    sql(db, "UPDATE payload SET blob = substr(blob, 1, 100) || x'ff' || substr(blob, 102) WHERE id = 1;"
            "UPDATE payload SET blob = substr(blob, 1, length(blob) / 2) WHERE id = 2");
    s = both(dir);
    CHECK_MSG(s.dropped == 2 && s.compiles == 2 && s.disk_hits == 0, "dropped %llu compiles %llu",
              (unsigned long long)s.dropped, (unsigned long long)s.compiles);
    CHECK(warn_count == 1 && s.warnings == 2);
    CHECK_CONTAINS(warn_last, "is damaged");
    s = both(dir); /* recompiled and stored again */
    CHECK(s.compiles == 0 && s.disk_hits == 2 && warn_count == 0);

    /* blobs that pass their checks but that the driver will not load */
    unloadable(db);
    s = both(dir);
    CHECK_MSG(s.dropped == 2 && s.compiles == 2 && s.disk_hits == 0, "dropped %llu compiles %llu",
              (unsigned long long)s.dropped, (unsigned long long)s.compiles);
    CHECK(warn_count == 1 && s.warnings == 2);
    CHECK_CONTAINS(warn_last, "the driver refused");
    s = both(dir);
    CHECK(s.compiles == 0 && s.disk_hits == 2 && warn_count == 0);

    /* key material that does not match (a collision) is a miss, not a hit */
    sql(db, "UPDATE entry SET compiler = 'someone else'");
    s = both(dir);
    CHECK(s.compiles == 2 && s.disk_hits == 0);

    /* a database file of garbage: moved aside, recreated */
    snprintf(side, sizeof side, "%s-wal", db);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", db);
    unlink(side);
    garbage(db, 64 * 1024, -1);
    s = both(dir);
    CHECK_MSG(s.cache_mode == KF_CACHE_RW && s.compiles == 2 && warn_count == 1, "mode %d compiles %llu warnings %d",
              (int)s.cache_mode, (unsigned long long)s.compiles, warn_count);
    CHECK_CONTAINS(warn_last, "moved aside");
    snprintf(side, sizeof side, "%s.corrupt", db);
    CHECK(access(side, F_OK) == 0);
    s = both(dir);
    CHECK(s.compiles == 0 && s.disk_hits == 2 && warn_count == 0);

    /* garbage over every page but page 1: found on use, moved aside,
     * recreated (the page size: big-endian at offset 16 of the header) */
    unsigned char head[18] = { 0 };
    FILE *f = fopen(db, "rb");
    CHECK(f && fread(head, 1, sizeof head, f) == sizeof head);
    if (f)
        fclose(f);
    struct stat st;
    CHECK(stat(db, &st) == 0);
    long page = head[16] << 8 | head[17];
    CHECK_MSG(page >= 512 && st.st_size > 2 * page, "page size %ld, file %lld bytes", page, (long long)st.st_size);
    garbage(db, (size_t)(st.st_size - page), page);
    s = both(dir);
    CHECK_MSG(s.compiles == 2 && warn_count >= 1, "compiles %llu warnings %d", (unsigned long long)s.compiles,
              warn_count);
    s = both(dir);
    CHECK_MSG(s.compiles == 0 && s.disk_hits == 2, "after repair: compiles %llu", (unsigned long long)s.compiles);

    /* a zero-length file: a new, empty database (what a crash between
     * creating and initialising it leaves): no warning needed */
    CHECK(truncate(db, 0) == 0);
    s = both(dir);
    CHECK(s.cache_mode == KF_CACHE_RW && s.compiles == 2 && warn_count == 0);
    s = both(dir);
    CHECK(s.compiles == 0 && s.disk_hits == 2);

    /* a read-only database file: read, never written */
    chmod(db, 0400);
    struct stat before, after;
    stat(db, &before);
    warn_count = 0;
    kf_context *ctx = open_ctx(dir, 0);
    CHECK(use(ctx, g_base) && use(ctx, g_reordered));
    CHECK(use(ctx, "kfuse 1\ngraph fresh(x: f32[n]) -> (y) {\n  y = sqrt x\n}\n"));
    s = stats_of(ctx);
    CHECK_MSG(s.cache_mode == KF_CACHE_RO && s.disk_hits == 1 && s.memory_hits == 1 && s.compiles == 1 &&
                  s.bytes_written == 0 && warn_count == 1,
              "mode %d hits %llu compiles %llu warnings %d", (int)s.cache_mode, (unsigned long long)s.disk_hits,
              (unsigned long long)s.compiles, warn_count);
    CHECK_CONTAINS(warn_last, "read-only");
    kf_context_destroy(ctx);
    stat(db, &after);
    CHECK(before.st_size == after.st_size && before.st_mtime == after.st_mtime);
    chmod(db, 0600);

    /* a read-only directory: read-only, hits still served */
    chmod(dir, 0500);
    s = both(dir);
    CHECK_MSG(s.cache_mode == KF_CACHE_RO && s.disk_hits == 2 && s.compiles == 0 && warn_count == 1,
              "mode %d hits %llu warnings %d: %s", (int)s.cache_mode, (unsigned long long)s.disk_hits, warn_count,
              warn_last);
    chmod(dir, 0700);

    /* KFUSE_CACHE=ro on a fresh machine (no database): quiet, memory only */
    char empty[320];
    snprintf(empty, sizeof empty, "%s/none", tmp);
    mkdir(empty, 0700);
    setenv("KFUSE_CACHE", "ro", 1);
    s = both(empty);
    CHECK(s.cache_mode == KF_CACHE_OFF && warn_count == 0 && s.compiles == 2);
    unsetenv("KFUSE_CACHE");

    /* busy past the timeout: the insert is skipped with a warning */
    sqlite3 *h = NULL;
    CHECK(sqlite3_open(db, &h) == SQLITE_OK);
    CHECK(sqlite3_exec(h, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK);
    setenv("KFUSE_CACHE_BUSY_MS", "200", 1);
    warn_count = 0;
    ctx = open_ctx(dir, 0);
    CHECK(use(ctx, "kfuse 1\ngraph busy(x: f32[n]) -> (y) {\n  y = exp x\n}\n"));
    s = stats_of(ctx);
    CHECK_MSG(s.compiles == 1 && s.bytes_written == 0 && warn_count == 1, "compiles %llu written %llu warnings %d",
              (unsigned long long)s.compiles, (unsigned long long)s.bytes_written, warn_count);
    CHECK_CONTAINS(warn_last, "busy");
    kf_context_destroy(ctx);
    unsetenv("KFUSE_CACHE_BUSY_MS");
    sqlite3_exec(h, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(h);

    /* every entry left verifies */
    kf_store *store = NULL;
    char note[600];
    kf_store_config sc = { dir, true, false, 0, 0 };
    CHECK_STATUS(kf_store_open(&sc, &store, note, sizeof note), KF_OK);
    uint64_t bad = 9;
    CHECK_STATUS(kf_store_verify(store, NULL, NULL, &bad, note, sizeof note), KF_OK);
    CHECK(bad == 0);
    kf_store_close(store);
    rm_rf(tmp);
}

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "";
    if (!strcmp(what, "unit")) {
        test_settings();
        test_memo();
        test_keys();
        test_store();
    } else if (!strcmp(what, "runtime")) {
        test_runtime();
    } else if (!strcmp(what, "cuda") && argc > 2) {
#ifdef KFUSE_WITH_CUDA
        test_cuda(argv[2]);
#else
        printf("built without CUDA: skipped\n");
#endif
    } else if (!strcmp(what, "permissions")) {
        test_permissions();
    } else if (!strcmp(what, "faults")) {
        test_faults();
    } else {
        fprintf(stderr, "usage: test_cache unit|runtime|cuda FUSEC|permissions|faults\n");
        return 2;
    }
    return kf_test_done();
}
