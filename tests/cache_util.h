/* Helpers shared by the cache tests: temporary directories (never the
 * user's cache), small .kir files, running x5-style graphs and checking
 * them against the interpreter, reading the store directly. */
#ifndef KF_CACHE_UTIL_H
#define KF_CACHE_UTIL_H

#include "check.h"
#include "kfsample.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
    (void)st;
    (void)flag;
    (void)f;
    chmod(p, 0700);
    return remove(p);
}

/* chmod u+rwx on the way down, so a read-only directory can be removed. */
static int unlock_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
    (void)f;
    if (flag == FTW_D && !S_ISLNK(st->st_mode))
        chmod(p, 0700);
    return 0;
}

static inline void rm_rf(const char *dir)
{
    chmod(dir, 0700);
    nftw(dir, unlock_one, 16, FTW_PHYS);
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* A fresh directory under $TMPDIR (or /tmp). */
static inline void temp_dir(char *buf, size_t len, const char *tag)
{
    const char *t = getenv("TMPDIR");
    snprintf(buf, len, "%s/kfuse-%s-XXXXXX", t && *t ? t : "/tmp", tag);
    if (!mkdtemp(buf)) {
        perror("mkdtemp");
        exit(2);
    }
}

static inline void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(2);
    }
    fputs(text, f);
    fclose(f);
}

/* n distinct tiny graphs g0..g{n-1} (one or two ops each) as .kir text. */
static inline char *distinct_graphs(int n, int salt)
{
    static const char *const ops[] = { "add", "mul", "sub", "max", "min" };
    size_t cap = (size_t)n * 160 + 64, o = 0;
    char *t = malloc(cap);
    o += (size_t)snprintf(t + o, cap - o, "kfuse 1\n");
    for (int i = 0; i < n; i++)
        o += (size_t)snprintf(t + o, cap - o, "graph g%d(x: f32[n], y: f32[n]) -> (z) {\n  a = %s x, %d.5\n  z = %s a, y\n}\n",
                              i, ops[i % 5], i + 1000 * salt, ops[(i / 5) % 5]);
    return t;
}

/* Compile and run g on ctx (inputs from a seed), compare with the
 * interpreter; true when right. */
static inline bool run_checked(kf_context *ctx, const kf_graph *g)
{
    int64_t symval[64];
    for (int32_t s = 0; s < g->nsyms && s < 64; s++)
        symval[s] = 100 + s;
    kf_program *p = NULL;
    if (kf_compile(ctx, g, &p) != KF_OK) {
        fprintf(stderr, "compile %s: %s\n", kf_graph_name(g), kf_context_error(ctx));
        return false;
    }
    int nin = g->ninputs, nout = g->noutputs, narr = 0;
    kf_host_array in[8], ref[8];
    kf_view views[8], outs[8];
    memset(outs, 0, sizeof outs);
    memset(in, 0, sizeof in);
    rt_rng rng = { 42 };
    bool ok = nin <= 8 && nout <= 8;
    for (int i = 0; ok && i < nin; i++) {
        const kf_irnode *x = &g->nodes[g->inputs[i]];
        int64_t n = rt_fill_input(g, i, symval, &rng, &in[i]);
        size_t bytes = n < 0 ? 0 : (size_t)n * kf_dtype_size(in[i].dtype);
        kf_buffer *b = NULL;
        ok = n >= 0 && !x->scalar && kf_buffer_alloc(ctx, bytes, &b) == KF_OK && kf_upload(b, 0, in[i].data, bytes, NULL) == KF_OK;
        views[narr++] = kf_view_dense(b, 0, in[i].dtype, in[i].rank, in[i].shape);
    }
    char err[256];
    ok = ok && kf_interpret(g, in, nin, ref, nout, err, sizeof err) == KF_OK;
    bool have_ref = ok;
    ok = ok && kf_run(p, NULL, views, narr, NULL, 0, outs, nout) == KF_OK && kf_stream_sync(ctx, NULL) == KF_OK;
    for (int j = 0; ok && j < nout; j++) {
        int64_t n = 1;
        for (int d = 0; d < ref[j].rank; d++)
            n *= ref[j].shape[d];
        size_t bytes = (size_t)n * kf_dtype_size(ref[j].dtype);
        void *got = malloc(bytes + 8);
        double maxerr;
        int64_t first;
        ok = kf_download(got, outs[j].buf, 0, bytes, NULL) == KF_OK &&
             rt_compare(got, ref[j].data, ref[j].dtype, n, &maxerr, &first) == 0;
        free(got);
    }
    for (int j = 0; j < nout; j++) {
        kf_buffer_free(outs[j].buf);
        if (have_ref)
            kf_free(ref[j].data);
    }
    for (int i = 0; i < narr; i++)
        kf_buffer_free(views[i].buf);
    for (int i = 0; i < nin; i++)
        free(in[i].data);
    kf_program_free(p);
    return ok;
}

#endif
