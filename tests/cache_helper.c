/* The child process of the multi-process cache tests (test_cache_procs.c).
 *
 *   cache_helper run FILE.kir [--rounds R] [--fresh] [--wait-fd FD] [--offset K]
 *       compile and run every graph of FILE on OpenCL R times (a new context
 *       each round with --fresh; starting at graph K), check each result against the
 *       interpreter, print "stats compiles=.. disk_hits=.. ..." summed over
 *       the contexts.  Exit 0 when every run was right, 1 on a wrong
 *       result, 2 when a compile failed, 3 without a device.  --wait-fd
 *       blocks on a read of FD first (a start barrier).
 *   cache_helper miss FILE.kir GRAPH
 *       compile one graph; print the status and message (must-hit tests).
 *   cache_helper devices
 *       print "opencl devices=N distinct=K": the OpenCL devices fusec build
 *       compiles for (device 0, 1, ... until one does not open) and how
 *       many distinct cache targets they are (equal devices share entries).
 *   cache_helper writer DIR SEED
 *       store synthetic entries (1 KB to 256 KB) and read them back,
 *       forever: the kill -9 test's victim.  Exit 3 if a read ever sees a
 *       damaged entry.
 * The cache comes from the environment (KFUSE_CACHE_DIR and friends). */
#include "cached.h"
#include "kfsample.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* -- A full disk for SQLite only ---------------------------------------------------- *
 * CACHE_HELPER_FULL=N: a VFS over the default one whose files cannot grow
 * past N bytes (writes beyond fail with SQLITE_FULL, as on a full disk).
 * A process-wide file-size limit would stop the OpenCL driver's own
 * temporary files as well. */

static sqlite3_vfs full_vfs, *base_vfs;
static sqlite3_int64 full_limit;

typedef struct full_file {
    sqlite3_file file;
    sqlite3_file *real; /* follows this struct */
} full_file;

#define REAL(f) (((full_file *)(f))->real)
static int ff_close(sqlite3_file *f) { return REAL(f)->pMethods->xClose(REAL(f)); }
static int ff_read(sqlite3_file *f, void *b, int n, sqlite3_int64 o) { return REAL(f)->pMethods->xRead(REAL(f), b, n, o); }
static int ff_write(sqlite3_file *f, const void *b, int n, sqlite3_int64 o)
{
    if (o + n > full_limit)
        return SQLITE_FULL;
    return REAL(f)->pMethods->xWrite(REAL(f), b, n, o);
}
static int ff_truncate(sqlite3_file *f, sqlite3_int64 n) { return REAL(f)->pMethods->xTruncate(REAL(f), n); }
static int ff_sync(sqlite3_file *f, int fl) { return REAL(f)->pMethods->xSync(REAL(f), fl); }
static int ff_size(sqlite3_file *f, sqlite3_int64 *n) { return REAL(f)->pMethods->xFileSize(REAL(f), n); }
static int ff_lock(sqlite3_file *f, int l) { return REAL(f)->pMethods->xLock(REAL(f), l); }
static int ff_unlock(sqlite3_file *f, int l) { return REAL(f)->pMethods->xUnlock(REAL(f), l); }
static int ff_check(sqlite3_file *f, int *r) { return REAL(f)->pMethods->xCheckReservedLock(REAL(f), r); }
static int ff_fcntl(sqlite3_file *f, int op, void *a) { return REAL(f)->pMethods->xFileControl(REAL(f), op, a); }
static int ff_sector(sqlite3_file *f) { return REAL(f)->pMethods->xSectorSize(REAL(f)); }
static int ff_dev(sqlite3_file *f) { return REAL(f)->pMethods->xDeviceCharacteristics(REAL(f)); }
static int ff_shmmap(sqlite3_file *f, int i, int sz, int ext, void volatile **p)
{
    return REAL(f)->pMethods->xShmMap(REAL(f), i, sz, ext, p);
}
static int ff_shmlock(sqlite3_file *f, int o, int n, int fl) { return REAL(f)->pMethods->xShmLock(REAL(f), o, n, fl); }
static void ff_shmbarrier(sqlite3_file *f) { REAL(f)->pMethods->xShmBarrier(REAL(f)); }
static int ff_shmunmap(sqlite3_file *f, int del) { return REAL(f)->pMethods->xShmUnmap(REAL(f), del); }
static int ff_fetch(sqlite3_file *f, sqlite3_int64 o, int n, void **p) { return REAL(f)->pMethods->xFetch(REAL(f), o, n, p); }
static int ff_unfetch(sqlite3_file *f, sqlite3_int64 o, void *p) { return REAL(f)->pMethods->xUnfetch(REAL(f), o, p); }

static const sqlite3_io_methods full_io = {
    3, ff_close, ff_read, ff_write, ff_truncate, ff_sync, ff_size, ff_lock, ff_unlock, ff_check, ff_fcntl,
    ff_sector, ff_dev, ff_shmmap, ff_shmlock, ff_shmbarrier, ff_shmunmap, ff_fetch, ff_unfetch,
};

static int full_open(sqlite3_vfs *v, const char *name, sqlite3_file *f, int flags, int *out)
{
    (void)v;
    full_file *ff = (full_file *)f;
    ff->real = (sqlite3_file *)(ff + 1);
    int rc = base_vfs->xOpen(base_vfs, name, ff->real, flags, out);
    f->pMethods = rc == SQLITE_OK ? &full_io : NULL;
    return rc;
}

static void install_full_disk(sqlite3_int64 limit)
{
    base_vfs = sqlite3_vfs_find(NULL);
    full_vfs = *base_vfs;
    full_vfs.zName = "fulldisk";
    full_vfs.szOsFile = (int)sizeof(full_file) + base_vfs->szOsFile;
    full_vfs.xOpen = full_open;
    full_limit = limit;
    sqlite3_vfs_register(&full_vfs, 1);
}

static int run_graph(kf_context *ctx, const kf_graph *g, uint64_t seed)
{
    int64_t symval[64];
    if (g->nsyms > 64)
        return 0;
    for (int32_t s = 0; s < g->nsyms; s++)
        symval[s] = 64 + s;
    kf_program *p = NULL;
    if (kf_compile(ctx, g, &p) != KF_OK) {
        fprintf(stderr, "cache_helper: %s: %s\n", kf_graph_name(g), kf_context_error(ctx));
        return 2;
    }
    int nin = g->ninputs, nout = g->noutputs, narr = 0, nsc = 0, rc = 0;
    kf_host_array in[16], ref[16];
    kf_view views[16], outs[16];
    const void *scalars[16];
    if (nin > 16 || nout > 16) {
        kf_program_free(p);
        return 0;
    }
    memset(outs, 0, sizeof outs);
    rt_rng rng = { seed };
    for (int i = 0; i < nin; i++) {
        const kf_irnode *x = &g->nodes[g->inputs[i]];
        int64_t n = rt_fill_input(g, i, symval, &rng, &in[i]);
        size_t bytes = n < 0 ? 0 : (size_t)n * kf_dtype_size(in[i].dtype);
        if (x->scalar) {
            scalars[nsc++] = in[i].data;
            continue;
        }
        kf_buffer *b = NULL;
        if (kf_buffer_alloc(ctx, bytes, &b) != KF_OK || kf_upload(b, 0, in[i].data, bytes, NULL) != KF_OK)
            rc = 2;
        views[narr++] = kf_view_dense(b, 0, in[i].dtype, in[i].rank, in[i].shape);
    }
    char err[512];
    kf_status want = kf_interpret(g, in, nin, ref, nout, err, sizeof err);
    if (rc == 0 && (want == KF_OK || want == KF_ERR_INDEX)) {
        kf_status s = kf_run(p, NULL, views, narr, scalars, nsc, outs, nout);
        kf_status ss = kf_stream_sync(ctx, NULL);
        if (s != KF_OK || (ss != KF_OK && ss != KF_ERR_INDEX)) {
            fprintf(stderr, "cache_helper: %s: run: %s\n", kf_graph_name(g), kf_context_error(ctx));
            rc = 1;
        }
        for (int j = 0; rc == 0 && j < nout; j++) {
            int64_t n = 1;
            for (int d = 0; d < ref[j].rank; d++)
                n *= ref[j].shape[d];
            size_t bytes = (size_t)n * kf_dtype_size(ref[j].dtype);
            void *got = malloc(bytes + 8);
            double maxerr;
            int64_t first;
            if (kf_download(got, outs[j].buf, 0, bytes, NULL) != KF_OK ||
                rt_compare(got, ref[j].data, ref[j].dtype, n, &maxerr, &first) != 0) {
                fprintf(stderr, "cache_helper: %s: output %d is wrong\n", kf_graph_name(g), j);
                rc = 1;
            }
            free(got);
        }
        for (int j = 0; j < nout; j++) {
            kf_buffer_free(outs[j].buf);
            kf_free(ref[j].data);
        }
    }
    for (int i = 0; i < narr; i++)
        kf_buffer_free(views[i].buf);
    for (int i = 0; i < nin; i++)
        free(in[i].data);
    kf_program_free(p);
    return rc;
}

static void add_stats(kf_stats *sum, const kf_stats *s)
{
    sum->memory_hits += s->memory_hits;
    sum->disk_hits += s->disk_hits;
    sum->misses += s->misses;
    sum->compiles += s->compiles;
    sum->dropped += s->dropped;
    sum->warnings += s->warnings;
    sum->bytes_written += s->bytes_written;
    sum->disk_evictions += s->disk_evictions;
    sum->cache_mode = s->cache_mode;
    if (!sum->warning[0])
        snprintf(sum->warning, sizeof sum->warning, "%s", s->warning);
}

static int cmd_run(int argc, char **argv)
{
    const char *file = NULL;
    int rounds = 1, fd = -1, offset = 0;
    bool fresh = false;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--wait-fd") && i + 1 < argc)
            fd = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--offset") && i + 1 < argc)
            offset = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--fresh"))
            fresh = true;
        else
            file = argv[i];
    }
    kf_module *m = NULL;
    if (!file || kf_module_parse_file(file, NULL, &m) != KF_OK) {
        fprintf(stderr, "cache_helper: %s\n", m ? kf_module_error(m) : "usage");
        kf_module_free(m);
        return 2;
    }
    if (fd >= 0) {
        char c;
        while (read(fd, &c, 1) > 0)
            ;
        close(fd);
    }
    const char *full = getenv("CACHE_HELPER_FULL");
    if (full)
        install_full_disk(atoll(full));
    kf_stats sum;
    memset(&sum, 0, sizeof sum);
    kf_context *ctx = NULL;
    int rc = 0;
    for (int r = 0; r < rounds && rc == 0; r++) {
        if (!ctx || fresh) {
            if (ctx) {
                kf_stats st;
                kf_context_stats(ctx, &st);
                add_stats(&sum, &st);
                kf_context_destroy(ctx);
            }
            kf_context_options o = { .backend = KF_BACKEND_OPENCL, .device = 0 };
            char why[512];
            if (kf_context_create(&o, &ctx, why, sizeof why) != KF_OK) {
                fprintf(stderr, "cache_helper: %s\n", why);
                kf_module_free(m);
                return 3;
            }
        }
        int ng = kf_module_num_graphs(m);
        for (int i = 0; i < ng && rc == 0; i++) {
            int gi = (i + offset) % ng;
            rc = run_graph(ctx, kf_module_graph(m, gi), (uint64_t)(r * 1000 + gi));
        }
    }
    if (ctx) {
        kf_stats st;
        kf_context_stats(ctx, &st);
        add_stats(&sum, &st);
        kf_context_destroy(ctx);
    }
    printf("stats compiles=%llu disk_hits=%llu memory_hits=%llu misses=%llu dropped=%llu warnings=%llu written=%llu "
           "evictions=%llu mode=%d\n",
           (unsigned long long)sum.compiles, (unsigned long long)sum.disk_hits, (unsigned long long)sum.memory_hits,
           (unsigned long long)sum.misses, (unsigned long long)sum.dropped, (unsigned long long)sum.warnings,
           (unsigned long long)sum.bytes_written, (unsigned long long)sum.disk_evictions, (int)sum.cache_mode);
    if (sum.warning[0])
        printf("warning %s\n", sum.warning);
    kf_module_free(m);
    return rc;
}

static int cmd_miss(int argc, char **argv)
{
    kf_module *m = NULL;
    if (argc < 4 || kf_module_parse_file(argv[2], NULL, &m) != KF_OK) {
        kf_module_free(m);
        return 2;
    }
    const kf_graph *g = kf_module_find(m, argv[3]);
    kf_context_options o = { .backend = KF_BACKEND_OPENCL, .device = 0 };
    kf_context *ctx = NULL;
    char why[512];
    if (!g || kf_context_create(&o, &ctx, why, sizeof why) != KF_OK) {
        kf_module_free(m);
        return 3;
    }
    kf_program *p = NULL;
    kf_status s = kf_compile(ctx, g, &p);
    kf_stats st;
    kf_context_stats(ctx, &st);
    printf("status %s\nmessage %s\ncompiles=%llu\n", kf_status_string(s), kf_context_error(ctx),
           (unsigned long long)st.compiles);
    kf_program_free(p);
    kf_context_destroy(ctx);
    kf_module_free(m);
    return 0;
}

static int cmd_devices(void)
{
    enum { MAX = 64 };
    static kf_cache_target seen[MAX];
    int n = 0, distinct = 0;
    for (; n < MAX; n++) {
        kf_context_options o = { .backend = KF_BACKEND_OPENCL, .device = n, .cache_mode = KF_CACHE_OFF };
        kf_context *ctx = NULL;
        if (kf_context_create(&o, &ctx, NULL, 0) != KF_OK)
            break;
        seen[distinct] = *kf_rt_cache_target(ctx);
        kf_context_destroy(ctx);
        int i = 0;
        while (strcmp(seen[i].target, seen[distinct].target) || strcmp(seen[i].compiler, seen[distinct].compiler))
            i++;
        distinct += i == distinct;
    }
    printf("opencl devices=%d distinct=%d\n", n, distinct);
    return n ? 0 : 3;
}

/* -- writer ---------------------------------------------------------------------- */

static int cmd_writer(int argc, char **argv)
{
    if (argc < 4)
        return 2;
    kf_store *s = NULL;
    char note[1024];
    kf_store_config sc = { argv[2], false, true, 0, 5000 };
    if (kf_store_open(&sc, &s, note, sizeof note) != KF_OK) {
        fprintf(stderr, "cache_helper: %s\n", note);
        return 2;
    }
    rt_rng rng = { (uint64_t)atoll(argv[3]) };
    kf_cache_target t;
    memset(&t, 0, sizeof t);
    t.backend = KF_BACKEND_OPENCL;
    snprintf(t.compiler, sizeof t.compiler, "writer");
    snprintf(t.options, sizeof t.options, "synthetic");
    char src[64];
    unsigned char *blob = malloc(256 * 1024);
    for (uint64_t i = 0;; i++) {
        /* 64 keys per writer seed, so entries are rewritten and read back */
        uint64_t id = rt_next(&rng) % 64;
        snprintf(t.target, sizeof t.target, "seed %s", argv[3]);
        snprintf(src, sizeof src, "synthetic source %llu", (unsigned long long)id);
        kf_cache_key k;
        kf_cache_key_make(&k, &t, src, strlen(src));
        kf_store_copy got;
        kf_store_copy_init(&got);
        char msg[700];
        kf_store_result r = kf_store_get(s, &k, &got.sink, msg, sizeof msg);
        if (r == KF_STORE_BAD) {
            printf("BAD %s\n", msg);
            fflush(stdout);
            return 3;
        }
        if (r == KF_STORE_HIT) {
            /* what comes back is what was stored under this key */
            const unsigned char *g = got.blob;
            bool ok = got.len >= 1024 && got.len <= 256 * 1024;
            for (size_t j = 0; ok && j < got.len; j++)
                ok = g[j] == (unsigned char)(id & 0xff);
            free(got.blob);
            if (!ok) {
                printf("WRONG entry %llu: %zu bytes\n", (unsigned long long)id, got.len);
                fflush(stdout);
                return 3;
            }
        } else {
            size_t n = 1024 + (size_t)(rt_next(&rng) % (255 * 1024));
            memset(blob, (int)(id & 0xff), n);
            kf_store_put(s, &k, "synthetic", 1, blob, n, 1.0, NULL, msg, sizeof msg);
        }
        if (i % 16 == 15)
            kf_store_drop(s, &k);
    }
}

int main(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "run"))
        return cmd_run(argc, argv);
    if (argc >= 2 && !strcmp(argv[1], "miss"))
        return cmd_miss(argc, argv);
    if (argc >= 2 && !strcmp(argv[1], "writer"))
        return cmd_writer(argc, argv);
    if (argc >= 2 && !strcmp(argv[1], "devices"))
        return cmd_devices();
    fprintf(stderr, "usage: cache_helper run|miss|writer|devices ...\n");
    return 2;
}
