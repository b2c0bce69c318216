/* fusec build (precompile into the kernel cache) and fusec cache (look at
 * and manage it).  CUDA targets compile with NVRTC for a named arch and
 * need no GPU; they go through the same target description, preparation
 * and key functions as a context on a device of that arch (src/cache), so
 * a process on that device finds every kernel.  OpenCL and CPU targets use
 * a context on each device present and plain kf_compile. */
#include "cache.h"
#include "kfuse.h"
#ifdef KFUSE_WITH_CUDA
#include "cuda_nvrtc.h"
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int fusec_build(int argc, char **argv);
int fusec_cache(int argc, char **argv);

enum { EXIT_USER = 1, EXIT_USAGE = 2 };

static const char build_usage[] = "usage: fusec build --target T [--target T]... [--cache DIR] [--fast-math] FILE...\n"
                                  "  T: cuda:sm_XX (no GPU needed), opencl (every OpenCL device present), cpu\n";
static const char cache_usage[] =
    "usage: fusec cache stats|list|verify|clear [--cache DIR]\n"
    "       fusec cache prune --max-size S [--cache DIR]     (S: bytes, or 512K, 64M, 2G)\n";

static int usage_err(const char *usage, const char *fmt, const char *arg)
{
    fputs("fusec: ", stderr);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n%s", usage);
    return EXIT_USAGE;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void human(uint64_t n, char *buf, size_t len)
{
    if (n >= (1ull << 30))
        snprintf(buf, len, "%.1f GiB", (double)n / (1 << 30));
    else if (n >= (1ull << 20))
        snprintf(buf, len, "%.1f MiB", (double)n / (1 << 20));
    else if (n >= (1ull << 10))
        snprintf(buf, len, "%.1f KiB", (double)n / (1 << 10));
    else
        snprintf(buf, len, "%llu B", (unsigned long long)n);
}

static void fusec_warn(void *user, const char *msg)
{
    (void)user;
    fprintf(stderr, "fusec: warning: %s\n", msg);
}

/* -- fusec build ------------------------------------------------------------------- */

typedef struct build_state {
    int total, done, compiled, cached, failed, kernels;
    bool tty;
} build_state;

static void progress(build_state *b, const char *target, const char *graph)
{
    if (!b->tty)
        return;
    int width = 30, fill = b->total ? b->done * width / b->total : width;
    fprintf(stderr, "\r\033[K[%.*s%*s] %d/%d %s %.40s", fill, "==============================", width - fill, "",
            b->done, b->total, target, graph);
    fflush(stderr);
}

static void outcome(build_state *b, int compiled, int nkernels)
{
    b->done++;
    if (compiled < 0)
        b->failed++;
    else if (compiled)
        b->compiled++;
    else
        b->cached++;
    if (compiled >= 0)
        b->kernels += nkernels;
}

/* A failure line, clear of the progress bar. */
static void fail_line(build_state *b, const char *target, const char *graph, const char *msg)
{
    if (b->tty)
        fputs("\r\033[K", stderr);
    fprintf(stderr, "fusec: %s: %s: %s\n", target, graph, msg);
}

/* Every graph of every module through one context (one OpenCL or CPU device). */
static void build_context(kf_context *ctx, const char *target, kf_module **mods, int nmods, build_state *b)
{
    for (int f = 0; f < nmods; f++)
        for (int i = 0; i < kf_module_num_graphs(mods[f]); i++) {
            const kf_graph *g = kf_module_graph(mods[f], i);
            progress(b, target, kf_graph_name(g));
            kf_stats before, after;
            kf_context_stats(ctx, &before);
            kf_program *p = NULL;
            kf_status s = kf_compile(ctx, g, &p);
            kf_context_stats(ctx, &after);
            if (s != KF_OK) {
                fail_line(b, target, kf_graph_name(g), kf_context_error(ctx));
                outcome(b, -1, 0);
            } else {
                outcome(b, after.compiles > before.compiles, kf_program_num_kernels(p));
            }
            kf_program_free(p);
        }
}

static kf_context *open_device(kf_backend be, int dev, const char *dir, bool fast_math, char *why, size_t whylen)
{
    kf_context_options o = { .backend = be, .device = dev, .cache_dir = dir, .cache_mode = KF_CACHE_RW,
                             .cache_must_hit = -1, .warn = fusec_warn, .fast_math = fast_math };
    kf_context *ctx = NULL;
    if (kf_context_create(&o, &ctx, why, whylen) != KF_OK)
        return NULL;
    kf_stats st;
    kf_context_stats(ctx, &st);
    if (st.cache_mode != KF_CACHE_RW) {
        snprintf(why, whylen, "the cache cannot be written%s%s", st.warning[0] ? ": " : "", st.warning);
        kf_context_destroy(ctx);
        return NULL;
    }
    return ctx;
}

#ifdef KFUSE_WITH_CUDA
/* cuda:sm_XX without a device: prepare, key and compile exactly as a
 * context on an sm_XX device would, into the store. */
/* The store checks a blob before giving it to a sink: taking it proves the
 * entry good. */
static bool accept_blob(kf_store_sink *self, const void *blob, size_t len)
{
    (void)self, (void)blob, (void)len;
    return true;
}

static int build_cuda(const char *arch, bool fast_math, kf_store *store, kf_module **mods, int nmods,
                      build_state *b)
{
    char cid[256], target[64];
    kf_rt_cuda_compiler_id(cid, sizeof cid);
    snprintf(target, sizeof target, "cuda:%s", arch);
    kf_cache_target t;
    kf_fuse_options fo = { .fast_math = fast_math };
    if (kf_cache_target_cuda_arch(arch, cid, &fo, &t) != KF_OK) {
        fprintf(stderr, "fusec: %s: no target description\n", target);
        return EXIT_USER;
    }
    for (int f = 0; f < nmods; f++)
        for (int i = 0; i < kf_module_num_graphs(mods[f]); i++) {
            const kf_graph *g = kf_module_graph(mods[f], i);
            progress(b, target, kf_graph_name(g));
            char msg[2048] = "";
            kf_cache_prep prep;
            kf_status s = kf_cache_prepare(g, &t, &prep, msg, sizeof msg);
            if (s != KF_OK) {
                fail_line(b, target, kf_graph_name(g), msg);
                outcome(b, -1, 0);
                continue;
            }
            kf_cache_prep_key(&prep);
            kf_store_sink verified = { accept_blob };
            kf_store_result r = kf_store_get(store, &prep.key, &verified, msg, sizeof msg);
            if (r == KF_STORE_HIT) {
                outcome(b, 0, prep.plan->nkernels);
                kf_cache_prep_free(&prep);
                continue;
            }
            if (r == KF_STORE_BAD || r == KF_STORE_ERROR)
                fprintf(stderr, "%sfusec: warning: %s\n", b->tty ? "\r\033[K" : "", msg);
            kf_rt_err err;
            void *bin = NULL;
            size_t len = 0;
            double t0 = now_s();
            s = kf_rt_cuda_compile_arch(kf_sb_str(&prep.src), prep.src.len, arch, &bin, &len, &err);
            double ms = (now_s() - t0) * 1e3;
            kf_store_counts d = { .misses = 1, .compiles = 1, .compile_ms = ms };
            kf_store_count(store, KF_BACKEND_CUDA, &d);
            if (s != KF_OK) {
                fail_line(b, target, kf_graph_name(g), err.msg);
                outcome(b, -1, 0);
            } else if (kf_store_put(store, &prep.key, prep.name, prep.plan->nkernels, bin, len, ms, NULL, msg,
                                    sizeof msg) != KF_OK) {
                fail_line(b, target, kf_graph_name(g), msg);
                outcome(b, -1, 0);
            } else {
                outcome(b, 1, prep.plan->nkernels);
            }
            free(bin);
            kf_cache_prep_free(&prep);
        }
    return 0;
}
#endif

/* The cache directory fusec works on: --cache DIR, else what a context
 * would use (KFUSE_CACHE_DIR, XDG_CACHE_HOME, HOME). */
static bool cache_dir(const char *opt, char *dir, size_t len)
{
    kf_cache_settings set;
    kf_cache_settings_resolve(opt, KF_CACHE_RW, 0, -1, &set);
    if (!set.dir[0]) {
        fprintf(stderr, "fusec: %s\n", set.problem[0] ? set.problem : "no cache directory");
        return false;
    }
    snprintf(dir, len, "%s", set.dir);
    return true;
}

int fusec_build(int argc, char **argv)
{
    const char *targets[32], *files[256], *dir_opt = NULL;
    int nt = 0, nf = 0;
    bool fast_math = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if ((!strcmp(a, "--target") || !strcmp(a, "--cache")) && i + 1 >= argc)
            return usage_err(build_usage, "option '%s' needs a value", a);
        if (!strcmp(a, "--target")) {
            const char *t = argv[++i];
            bool ok = !strcmp(t, "opencl") || !strcmp(t, "cpu");
            if (!strncmp(t, "cuda:sm_", 8)) {
                const char *p = t + 8;
                ok = *p >= '1' && *p <= '9';
                while (*p >= '0' && *p <= '9')
                    p++;
                ok = ok && (!*p || ((*p == 'a' || *p == 'f') && !p[1]));
            }
            if (!ok)
                return usage_err(build_usage, "bad target '%s' (cuda:sm_XX, opencl, cpu)", t);
            if (nt == 32)
                return usage_err(build_usage, "%s", "too many targets");
            targets[nt++] = t;
        } else if (!strcmp(a, "--cache")) {
            dir_opt = argv[++i];
        } else if (!strcmp(a, "--fast-math")) {
            fast_math = true;
        } else if (a[0] == '-' && a[1]) {
            return usage_err(build_usage, "unknown option '%s'", a);
        } else if (nf < 256) {
            files[nf++] = a;
        } else {
            return usage_err(build_usage, "%s", "too many files");
        }
    }
    if (nt == 0 || nf == 0)
        return usage_err(build_usage, "%s", nt ? "missing FILE" : "missing --target");
    char dir[1024];
    if (!cache_dir(dir_opt, dir, sizeof dir))
        return EXIT_USER;

    kf_module *mods[256];
    int ngraphs = 0, rc = 0;
    for (int f = 0; f < nf; f++) {
        kf_status s = kf_module_parse_file(files[f], NULL, &mods[f]);
        if (s != KF_OK) {
            fprintf(stderr, "%s\n", mods[f] ? kf_module_error(mods[f]) : "fusec: out of memory");
            for (int j = 0; j <= f; j++)
                kf_module_free(mods[j]);
            return EXIT_USER;
        }
        ngraphs += kf_module_num_graphs(mods[f]);
    }
    /* one device per opencl or cpu target until more are found */
    build_state b = { .tty = isatty(2) == 1, .total = ngraphs * nt };
    double t0 = now_s();
    kf_store *store = NULL;
    int ntargets = 0;
    for (int ti = 0; ti < nt && rc == 0; ti++) {
        const char *t = targets[ti];
        char why[1024] = "";
        if (!strncmp(t, "cuda:", 5)) {
#ifdef KFUSE_WITH_CUDA
            if (!store) {
                bool writable = false;
                kf_store_config sc = { dir, false, true, 0, 0 };
                kf_cache_settings set;
                kf_cache_settings_resolve(dir, KF_CACHE_RW, 0, -1, &set);
                sc.max_bytes = set.max_bytes;
                sc.busy_ms = set.busy_ms;
                if (kf_cache_dir_check(dir, true, &writable, why, sizeof why) != KF_OK ||
                    kf_store_open(&sc, &store, why, sizeof why) != KF_OK || kf_store_read_only(store)) {
                    fprintf(stderr, "fusec: cannot write the cache in '%s': %s\n", dir, why);
                    rc = EXIT_USER;
                    break;
                }
            }
            ntargets++;
            rc = build_cuda(t + 5, fast_math, store, mods, nf, &b);
#else
            fprintf(stderr, "fusec: %s: this fusec was built without CUDA (NVRTC)\n", t);
            rc = EXIT_USER;
#endif
            continue;
        }
        kf_backend be = !strcmp(t, "opencl") ? KF_BACKEND_OPENCL : KF_BACKEND_CPU;
        int opened = 0;
        for (int d = 0; d < 64; d++) {
            kf_context *ctx = open_device(be, d, dir, fast_math, why, sizeof why);
            if (!ctx)
                break;
            kf_device_info info;
            kf_context_info(ctx, &info);
            char label[200];
            snprintf(label, sizeof label, "%s:%d (%s)", t, d, info.name);
            if (opened > 0)
                b.total += ngraphs;
            ntargets++;
            opened++;
            build_context(ctx, label, mods, nf, &b);
            kf_context_destroy(ctx);
        }
        if (opened == 0) {
            fprintf(stderr, "%sfusec: %s: %s\n", b.tty ? "\r\033[K" : "", t, why[0] ? why : "no device");
            rc = EXIT_USER;
        }
    }
    kf_store_close(store);
    if (b.tty)
        fputs("\r\033[K", stderr);
    printf("fusec build: %d kernel module%s (%d kernel%s) for %d target%s: %d compiled, %d already cached, %d failed, "
           "%.2f s\n  cache: %s\n",
           b.done, b.done == 1 ? "" : "s", b.kernels, b.kernels == 1 ? "" : "s", ntargets, ntargets == 1 ? "" : "s",
           b.compiled, b.cached, b.failed, now_s() - t0, dir);
    for (int f = 0; f < nf; f++)
        kf_module_free(mods[f]);
    return rc ? rc : b.failed ? EXIT_USER : 0;
}

/* -- fusec cache -------------------------------------------------------------------- */

static void print_counts(void *user, const char *backend, const kf_store_counts *c)
{
    (void)user;
    char r[32], w[32];
    human(c->bytes_read, r, sizeof r);
    human(c->bytes_written, w, sizeof w);
    printf("  %-8s %8llu %8llu %9llu %12.1f %10s %10s %9llu %8llu\n", backend, (unsigned long long)c->hits,
           (unsigned long long)c->misses, (unsigned long long)c->compiles, c->compile_ms, r, w,
           (unsigned long long)c->evictions, (unsigned long long)c->dropped);
}

static void print_bad(void *user, const kf_store_entry *e)
{
    (void)user;
    char hex[33];
    kf_cache_hex(e->key, hex);
    if (!e->ok)
        printf("BAD %s %s %s: %s\n", hex, e->backend, e->name, e->problem);
}

static void print_entry(void *user, const kf_store_entry *e)
{
    (void)user;
    char hex[33], size[32], when[32] = "?";
    kf_cache_hex(e->key, hex);
    human(e->size, size, sizeof size);
    time_t t = (time_t)(e->last_used_ms / 1000);
    struct tm tm;
    if (localtime_r(&t, &tm))
        strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
    printf("%.16s  %-6s %-10s %5llu hits  %s  %s  [%.60s]\n", hex, e->backend, size, (unsigned long long)e->hits,
           when, e->name, e->target);
}

int fusec_cache(int argc, char **argv)
{
    const char *sub = NULL, *dir_opt = NULL, *max = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if ((!strcmp(a, "--cache") || !strcmp(a, "--max-size")) && i + 1 >= argc)
            return usage_err(cache_usage, "option '%s' needs a value", a);
        if (!strcmp(a, "--cache"))
            dir_opt = argv[++i];
        else if (!strcmp(a, "--max-size"))
            max = argv[++i];
        else if (a[0] == '-' && a[1])
            return usage_err(cache_usage, "unknown option '%s'", a);
        else if (sub)
            return usage_err(cache_usage, "unexpected argument '%s'", a);
        else
            sub = a;
    }
    static const char *const subs[] = { "stats", "list", "verify", "prune", "clear" };
    int which = -1;
    for (int i = 0; sub && i < 5; i++)
        if (!strcmp(sub, subs[i]))
            which = i;
    if (which < 0)
        return usage_err(cache_usage, sub ? "unknown cache command '%s'" : "%s", sub ? sub : "missing command");
    uint64_t max_bytes = 0;
    if (which == 3 && (!max || !kf_cache_parse_size(max, &max_bytes)))
        return usage_err(cache_usage, max ? "bad size '%s'" : "%s", max ? max : "prune needs --max-size");
    if (which != 3 && max)
        return usage_err(cache_usage, "%s", "--max-size goes with prune only");

    char dir[1024], msg[1024] = "", path[1100];
    if (!cache_dir(dir_opt, dir, sizeof dir))
        return EXIT_USER;
    snprintf(path, sizeof path, "%s/%s", dir, KF_STORE_FILE);
    bool writable;
    kf_store *s = NULL;
    kf_cache_settings set;
    kf_cache_settings_resolve(dir, KF_CACHE_RW, 0, -1, &set);
    if (access(path, F_OK) != 0) {
        printf("no kernel cache in '%s'\n", dir);
        return 0;
    }
    kf_store_config sc = { dir, which <= 2, false, 0, set.busy_ms };
    if (kf_cache_dir_check(dir, false, &writable, msg, sizeof msg) != KF_OK ||
        kf_store_open(&sc, &s, msg, sizeof msg) != KF_OK) {
        fprintf(stderr, "fusec: %s\n", msg);
        return EXIT_USER;
    }
    if (msg[0])
        fprintf(stderr, "fusec: warning: %s\n", msg);
    msg[0] = 0;
    int rc = 0;
    uint64_t n = 0, bytes = 0, bad = 0, freed = 0;
    char h1[32], h2[32];
    switch (which) {
    case 0: { /* stats */
        if (kf_store_totals(s, &n, &bytes, msg, sizeof msg) != KF_OK)
            break;
        human(bytes, h1, sizeof h1);
        human(set.max_bytes, h2, sizeof h2);
        printf("cache: %s\nentries: %llu, %s (cap %s%s)\n", path, (unsigned long long)n, h1, h2,
               secure_getenv("KFUSE_CACHE_MAX_SIZE") ? ", from KFUSE_CACHE_MAX_SIZE" : "");
        printf("  %-8s %8s %8s %9s %12s %10s %10s %9s %8s\n", "backend", "hits", "misses", "compiles", "compile ms",
               "read", "written", "evictions", "dropped");
        kf_store_stats(s, print_counts, NULL, msg, sizeof msg);
        break;
    }
    case 1: kf_store_list(s, print_entry, NULL, msg, sizeof msg); break;
    case 2:
        if (kf_store_verify(s, print_bad, NULL, &bad, msg, sizeof msg) == KF_OK) {
            kf_store_totals(s, &n, NULL, msg, sizeof msg);
            printf("%llu entr%s checked, %llu bad\n", (unsigned long long)n, n == 1 ? "y" : "ies",
                   (unsigned long long)bad);
            rc = bad ? EXIT_USER : 0;
        }
        break;
    case 3:
        if (kf_store_prune(s, max_bytes, &n, &freed, msg, sizeof msg) == KF_OK &&
            kf_store_totals(s, &bad, &bytes, msg, sizeof msg) == KF_OK) {
            human(freed, h1, sizeof h1);
            human(bytes, h2, sizeof h2);
            printf("pruned %llu entr%s (%s); %llu left, %s\n", (unsigned long long)n, n == 1 ? "y" : "ies", h1,
                   (unsigned long long)bad, h2);
        }
        break;
    case 4:
        if (kf_store_clear(s, &n, msg, sizeof msg) == KF_OK)
            printf("removed %llu entr%s from %s\n", (unsigned long long)n, n == 1 ? "y" : "ies", path);
        break;
    }
    if (msg[0] && rc == 0) {
        fprintf(stderr, "fusec: %s\n", msg);
        rc = EXIT_USER;
    }
    kf_store_close(s);
    return rc;
}
