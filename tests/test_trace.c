/* Traces and run counters (docs/trace.md): a scripted session (two graphs,
 * uploads, runs on two streams and the default one, an event sync,
 * downloads, threads, more device spans than the pool holds) with
 * KFUSE_TRACE set; the file is read back with a strict JSON parser and
 * every span checked against the calls made and kf_context_stats.  Then
 * the trace_path option, two contexts on one path, an unwritable path, and
 * no trace at all.  Usage: test_trace cuda|opencl|cpu */
#include "cache_util.h"
#include "strbuf.h"

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

/* -- A strict JSON reader (RFC 8259; CI may have no python) ------------------------ */

enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };
typedef struct jv {
    int type;
    double num;
    char *str;           /* J_STR */
    int n;               /* J_ARR, J_OBJ: items */
    struct jv *items;
    char **keys;         /* J_OBJ */
} jv;

typedef struct jp {
    const char *p, *end;
    const char *err;
    int depth;
} jp;

static void jv_free(jv *v)
{
    for (int i = 0; i < v->n; i++) {
        jv_free(&v->items[i]);
        if (v->keys)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->str);
}

static void ws(jp *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
        j->p++;
}

static bool fail(jp *j, const char *why)
{
    if (!j->err)
        j->err = why;
    return false;
}

static bool lit(jp *j, const char *w)
{
    size_t n = strlen(w);
    if ((size_t)(j->end - j->p) < n || memcmp(j->p, w, n) != 0)
        return fail(j, "bad literal");
    j->p += n;
    return true;
}

static bool jstring(jp *j, char **out)
{
    if (j->p >= j->end || *j->p != '"')
        return fail(j, "expected a string");
    j->p++;
    kf_strbuf b = KF_STRBUF_INIT;
    while (j->p < j->end && *j->p != '"') {
        unsigned char c = (unsigned char)*j->p++;
        if (c < 0x20) {
            kf_sb_free(&b);
            return fail(j, "control character in a string");
        }
        if (c != '\\') {
            kf_sb_putc(&b, (char)c);
            continue;
        }
        if (j->p >= j->end)
            break;
        c = (unsigned char)*j->p++;
        const char *esc = strchr("\"\\/bfnrtu", c);
        if (!esc || !c) {
            kf_sb_free(&b);
            return fail(j, "bad escape");
        }
        if (c == 'u') {
            for (int i = 0; i < 4; i++)
                if (j->p >= j->end || !strchr("0123456789abcdefABCDEF", *j->p++) || !j->p[-1]) {
                    kf_sb_free(&b);
                    return fail(j, "bad \\u escape");
                }
            kf_sb_putc(&b, '?');
        } else {
            kf_sb_putc(&b, c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : c == 'b' ? '\b' : c == 'f' ? '\f' : (char)c);
        }
    }
    if (j->p >= j->end) {
        kf_sb_free(&b);
        return fail(j, "unterminated string");
    }
    j->p++;
    *out = b.data ? b.data : calloc(1, 1);
    return true;
}

static bool jnumber(jp *j, double *out)
{
    const char *s = j->p;
    if (j->p < j->end && *j->p == '-')
        j->p++;
    if (j->p >= j->end || *j->p < '0' || *j->p > '9')
        return fail(j, "bad number");
    if (*j->p == '0')
        j->p++;
    else
        while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
            j->p++;
    if (j->p < j->end && *j->p == '.') {
        j->p++;
        if (j->p >= j->end || *j->p < '0' || *j->p > '9')
            return fail(j, "bad fraction");
        while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
            j->p++;
    }
    if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
        j->p++;
        if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
            j->p++;
        if (j->p >= j->end || *j->p < '0' || *j->p > '9')
            return fail(j, "bad exponent");
        while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
            j->p++;
    }
    char tmp[64];
    snprintf(tmp, sizeof tmp, "%.*s", (int)(j->p - s), s);
    *out = strtod(tmp, NULL);
    return true;
}

static bool jvalue(jp *j, jv *v);

/* Items of an array or object up to close. */
static bool jitems(jp *j, jv *v, char close)
{
    j->p++;
    ws(j);
    if (j->p < j->end && *j->p == close) {
        j->p++;
        return true;
    }
    for (;;) {
        if (v->n % 64 == 0) {
            v->items = realloc(v->items, (size_t)(v->n + 64) * sizeof *v->items);
            if (v->type == J_OBJ)
                v->keys = realloc(v->keys, (size_t)(v->n + 64) * sizeof *v->keys);
            if (!v->items || (v->type == J_OBJ && !v->keys))
                return fail(j, "out of memory");
        }
        jv *it = &v->items[v->n];
        memset(it, 0, sizeof *it);
        if (v->type == J_OBJ)
            v->keys[v->n] = NULL;
        v->n++; /* from here jv_free releases it, also half parsed */
        if (v->type == J_OBJ) {
            ws(j);
            if (!jstring(j, &v->keys[v->n - 1]))
                return false;
            ws(j);
            if (j->p >= j->end || *j->p++ != ':')
                return fail(j, "expected ':'");
        }
        if (!jvalue(j, it))
            return false;
        ws(j);
        if (j->p < j->end && *j->p == ',') {
            j->p++;
            continue;
        }
        if (j->p < j->end && *j->p == close) {
            j->p++;
            return true;
        }
        return fail(j, "expected ',' or a closing bracket");
    }
}

static bool jvalue(jp *j, jv *v)
{
    ws(j);
    if (j->p >= j->end)
        return fail(j, "unexpected end");
    if (++j->depth > 64)
        return fail(j, "nested too deep");
    bool ok;
    switch (*j->p) {
    case '{': v->type = J_OBJ; ok = jitems(j, v, '}'); break;
    case '[': v->type = J_ARR; ok = jitems(j, v, ']'); break;
    case '"': v->type = J_STR; ok = jstring(j, &v->str); break;
    case 't': v->type = J_BOOL; v->num = 1; ok = lit(j, "true"); break;
    case 'f': v->type = J_BOOL; ok = lit(j, "false"); break;
    case 'n': v->type = J_NULL; ok = lit(j, "null"); break;
    default: v->type = J_NUM; ok = jnumber(j, &v->num); break;
    }
    j->depth--;
    return ok;
}

/* Parse a whole text; false (and *why) when it is not exactly one JSON value. */
static bool json_parse(const char *text, size_t len, jv *out, const char **why)
{
    jp j = { text, text + len, NULL, 0 };
    memset(out, 0, sizeof *out);
    bool ok = jvalue(&j, out);
    ws(&j);
    if (ok && j.p != j.end)
        ok = fail(&j, "text after the value");
    *why = j.err;
    return ok;
}

static const jv *jget(const jv *o, const char *key)
{
    for (int i = 0; o && o->type == J_OBJ && i < o->n; i++)
        if (strcmp(o->keys[i], key) == 0)
            return &o->items[i];
    return NULL;
}

static const char *jstr(const jv *o, const char *key)
{
    const jv *v = jget(o, key);
    return v && v->type == J_STR ? v->str : NULL;
}

static void test_json_reader(void)
{
    static const char *good[] = { "{}", "[]", " {\"a\":[1,-2.5e3,true,false,null,\"x\\u00e9\\n\"]} ", "0" };
    static const char *bad[] = { "", "{", "[1,]", "{\"a\":1,}", "01", "1.", "\"\t\"", "{\"a\" 1}", "[1] x",
                                 "'a'", "[.5]", "\"\\x\"" };
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        jv v;
        const char *why;
        CHECK_MSG(json_parse(good[i], strlen(good[i]), &v, &why), "%s: %s", good[i], why);
        jv_free(&v);
    }
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        jv v;
        const char *why;
        CHECK_MSG(!json_parse(bad[i], strlen(bad[i]), &v, &why), "accepted '%s'", bad[i]);
        jv_free(&v);
    }
}

/* -- The trace of one file ----------------------------------------------------------- */

typedef struct span {
    const char *name, *cat, *detail, *entry;
    double ts, dur, tid, bytes;
} span;

typedef struct trace {
    jv root;
    span *x;             /* complete events */
    int nx;
    const jv *meta[64];  /* thread_name events */
    int nmeta;
    const char *lost;
} trace;

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    kf_strbuf b = KF_STRBUF_INIT;
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        kf_sb_putn(&b, chunk, n);
    fclose(f);
    *len = b.len;
    return b.data ? b.data : calloc(1, 1);
}

/* Read and check the shape of every event: complete events with a name,
 * cat, ts, dur >= 0, pid, tid and args object; metadata with a name. */
static bool trace_read(const char *path, trace *t)
{
    memset(t, 0, sizeof *t);
    size_t len = 0;
    char *text = slurp(path, &len);
    CHECK_MSG(text != NULL, "%s was not written", path);
    if (!text)
        return false;
    const char *why = NULL;
    bool ok = json_parse(text, len, &t->root, &why);
    CHECK_MSG(ok, "%s is not valid JSON: %s", path, why);
    free(text);
    const jv *ev = jget(&t->root, "traceEvents");
    CHECK(ev && ev->type == J_ARR);
    if (!ok || !ev || ev->type != J_ARR)
        return false;
    t->x = calloc((size_t)ev->n + 1, sizeof *t->x);
    t->lost = jstr(jget(&t->root, "otherData"), "lost_device_spans");
    for (int i = 0; i < ev->n; i++) {
        const jv *e = &ev->items[i];
        const char *ph = jstr(e, "ph"), *name = jstr(e, "name");
        const jv *ts = jget(e, "ts"), *dur = jget(e, "dur"), *tid = jget(e, "tid"), *pid = jget(e, "pid");
        const jv *args = jget(e, "args");
        CHECK_MSG(ph && name && pid && pid->type == J_NUM && tid && tid->type == J_NUM && args &&
                      args->type == J_OBJ, "event %d is malformed", i);
        if (!ph || !name || !tid || !args)
            continue;
        if (strcmp(ph, "M") == 0) {
            if (strcmp(name, "thread_name") == 0 && t->nmeta < 64)
                t->meta[t->nmeta++] = e;
            continue;
        }
        CHECK_MSG(strcmp(ph, "X") == 0, "event %d: ph '%s'", i, ph);
        CHECK_MSG(ts && ts->type == J_NUM && dur && dur->type == J_NUM && dur->num >= 0 && ts->num > -1e3 &&
                      jstr(e, "cat"), "event %d (%s): bad ts, dur or cat", i, name);
        if (!ts || !dur || ts->type != J_NUM || dur->type != J_NUM)
            continue;
        const jv *bytes = jget(args, "bytes");
        t->x[t->nx++] = (span){ name, jstr(e, "cat"), jstr(args, "detail"), jstr(args, "entry"), ts->num, dur->num,
                                tid->num, bytes && bytes->type == J_NUM ? bytes->num : -1 };
    }
    return true;
}

static void trace_free(trace *t)
{
    jv_free(&t->root);
    free(t->x);
}

static int count(const trace *t, const char *cat, const char *name, const char *detail)
{
    int n = 0;
    for (int i = 0; i < t->nx; i++)
        n += strcmp(t->x[i].cat, cat) == 0 && strcmp(t->x[i].name, name) == 0 &&
             (!detail || (t->x[i].detail && strcmp(t->x[i].detail, detail) == 0));
    return n;
}

/* Kernel spans of graph g ("g k0", "g k1", ...). */
static int kernels_of(const trace *t, const char *g, double *sum_us)
{
    int n = 0;
    size_t gl = strlen(g);
    for (int i = 0; i < t->nx; i++)
        if (strcmp(t->x[i].cat, "device") == 0 && strncmp(t->x[i].name, g, gl) == 0 &&
            strncmp(t->x[i].name + gl, " k", 2) == 0) {
            CHECK_MSG(t->x[i].entry && strncmp(t->x[i].entry, g, gl) == 0, "span %s: entry %s", t->x[i].name,
                      kf_test_str(t->x[i].entry));
            n++;
            if (sum_us)
                *sum_us += t->x[i].dur;
        }
    return n;
}

static double copied(const trace *t, const char *name, int *n)
{
    double bytes = 0;
    *n = 0;
    for (int i = 0; i < t->nx; i++)
        if (strcmp(t->x[i].cat, "device") == 0 && strcmp(t->x[i].name, name) == 0) {
            bytes += t->x[i].bytes;
            ++*n;
        }
    return bytes;
}

static int by_ts(const void *a, const void *b)
{
    const span *x = a, *y = b;
    return (x->ts > y->ts) - (x->ts < y->ts);
}

/* Every device span has a thread named "... (device)"; on one stream the
 * spans follow each other (a stream runs in order). */
static void check_device_threads(trace *t)
{
    qsort(t->x, (size_t)t->nx, sizeof *t->x, by_ts);
    for (int i = 0; i < t->nx; i++) {
        if (strcmp(t->x[i].cat, "device") != 0)
            continue;
        bool named = false;
        for (int m = 0; m < t->nmeta; m++) {
            const jv *tid = jget(t->meta[m], "tid");
            const char *nm = jstr(jget(t->meta[m], "args"), "name");
            named |= tid && tid->num == t->x[i].tid && nm && strstr(nm, "(device)");
        }
        CHECK_MSG(named, "device span %s: tid %.0f has no thread_name", t->x[i].name, t->x[i].tid);
        for (int k = i + 1; k < t->nx; k++)
            if (strcmp(t->x[k].cat, "device") == 0 && t->x[k].tid == t->x[i].tid) {
                CHECK_MSG(t->x[k].ts >= t->x[i].ts + t->x[i].dur - 2.0, "%s at %.3f us starts before %s ends (%.3f)",
                          t->x[k].name, t->x[k].ts, t->x[i].name, t->x[i].ts + t->x[i].dur);
                break;
            }
    }
}

/* -- The scripted session --------------------------------------------------------------- */

static const char *kir = "kfuse 1\n"
                         "graph scale(a: f32, x: f32[n]) -> (y) {\n  t = mul a, x\n  y = add t, 1.0\n}\n"
                         "graph rowsum(m: f32[r, c]) -> (s) {\n  e = mul m, m\n  s = sum e, axes=[1]\n}\n";

enum { N = 10000, R = 64, C = 100, RUNS = 3, THREADS = 4, THREAD_RUNS = 5, FLOOD = 300 };

typedef struct counts {
    uint64_t runs, up, down, nup, ndown;
} counts;

static kf_status upload(kf_buffer *b, const void *src, size_t bytes, kf_stream *s, counts *c)
{
    c->up += bytes;
    c->nup++;
    return kf_upload(b, 0, src, bytes, s);
}

static kf_status download(void *dst, kf_buffer *b, size_t bytes, kf_stream *s, counts *c)
{
    c->down += bytes;
    c->ndown++;
    return kf_download(dst, b, 0, bytes, s);
}

/* Result of g (its first output, n floats) against the interpreter. */
static void check_result(const kf_graph *g, const kf_host_array *in, int nin, const float *got, int64_t n)
{
    kf_host_array ref[1];
    char err[256];
    CHECK_STATUS(kf_interpret(g, in, nin, ref, 1, err, sizeof err), KF_OK);
    double maxerr;
    int64_t first;
    int64_t bad = rt_compare(got, ref[0].data, KF_F32, n, &maxerr, &first);
    CHECK_MSG(bad == 0, "%s: %lld wrong elements, the first at %lld", kf_graph_name(g), (long long)bad,
              (long long)first);
    kf_free(ref[0].data);
}

typedef struct worker {
    kf_context *ctx;
    kf_program *p;
    kf_view x;
    float a;
    kf_status s;
} worker;

/* THREAD_RUNS runs of p on the thread's own stream, into its own output. */
static void *work(void *arg)
{
    worker *w = arg;
    kf_context *ctx = w->ctx;
    kf_stream *st = NULL;
    kf_view y = { 0 };
    const void *sc[1] = { &w->a };
    w->s = kf_stream_create(ctx, &st);
    for (int r = 0; r < THREAD_RUNS && w->s == KF_OK; r++)
        w->s = kf_run(w->p, st, &w->x, 1, sc, 1, &y, 1);
    if (w->s == KF_OK)
        w->s = kf_stream_sync(ctx, st);
    kf_buffer_free(y.buf);
    kf_stream_destroy(st);
    return NULL;
}

static void scripted(kf_backend b, const char *dir)
{
    char path[1100];
    snprintf(path, sizeof path, "%s/trace.json", dir);
    setenv("KFUSE_TRACE", path, 1);
    kf_context_options o = { .backend = b, .device = 0, .cache_mode = KF_CACHE_OFF };
    kf_context *ctx = NULL;
    char why[1024];
    kf_status s = kf_context_create(&o, &ctx, why, sizeof why);
    unsetenv("KFUSE_TRACE");
    CHECK_MSG(s == KF_OK, "%s", why);
    if (s != KF_OK)
        return;
    kf_module *mod = NULL;
    CHECK_STATUS(kf_module_parse(kir, strlen(kir), "trace.kir", NULL, &mod), KF_OK);
    kf_graph *gs = kf_module_find(mod, "scale"), *gr = kf_module_find(mod, "rowsum");
    kf_program *ps = NULL, *pr = NULL, *again = NULL;
    CHECK_STATUS(kf_compile(ctx, gs, &ps), KF_OK);
    CHECK_STATUS(kf_compile(ctx, gr, &pr), KF_OK);
    CHECK_STATUS(kf_compile(ctx, gs, &again), KF_OK); /* the plan cache */
    if (!ps || !pr) {
        kf_context_destroy(ctx);
        kf_module_free(mod);
        return;
    }

    rt_rng rng = { 7 };
    float *x = malloc(N * sizeof *x), *m = malloc(R * C * sizeof *m), *y = malloc(N * sizeof *y);
    float *sum = malloc(R * sizeof *sum), *poison = malloc(N * sizeof *poison);
    for (int i = 0; i < N; i++)
        x[i] = (float)rt_unif(&rng) * 4 - 2;
    for (int i = 0; i < R * C; i++)
        m[i] = (float)rt_unif(&rng) * 4 - 2;
    memset(poison, 0xFF, N * sizeof *poison);
    kf_buffer *bx, *by, *bm, *bs;
    CHECK_STATUS(kf_buffer_alloc(ctx, N * sizeof(float), &bx), KF_OK);
    CHECK_STATUS(kf_buffer_alloc(ctx, N * sizeof(float), &by), KF_OK);
    CHECK_STATUS(kf_buffer_alloc(ctx, R * C * sizeof(float), &bm), KF_OK);
    CHECK_STATUS(kf_buffer_alloc(ctx, R * sizeof(float), &bs), KF_OK);
    kf_stream *sa, *sb;
    kf_event *e0, *e1;
    CHECK_STATUS(kf_stream_create(ctx, &sa), KF_OK);
    CHECK_STATUS(kf_stream_create(ctx, &sb), KF_OK);
    CHECK_STATUS(kf_event_create(ctx, &e0), KF_OK);
    CHECK_STATUS(kf_event_create(ctx, &e1), KF_OK);
    counts c = { 0 };
    const int64_t xs[1] = { N }, ms[2] = { R, C }, ss[1] = { R };
    kf_view vx = kf_view_dense(bx, 0, KF_F32, 1, xs), vy = kf_view_dense(by, 0, KF_F32, 1, xs);
    kf_view vm = kf_view_dense(bm, 0, KF_F32, 2, ms), vs = kf_view_dense(bs, 0, KF_F32, 1, ss);
    float a = 1.5f;
    const void *sc[1] = { &a };

    /* stream A: scale; stream B: rowsum; the default stream: a poison */
    CHECK_STATUS(upload(bs, poison, R * sizeof(float), NULL, &c), KF_OK);
    CHECK_STATUS(upload(bx, x, N * sizeof(float), sa, &c), KF_OK);
    CHECK_STATUS(upload(by, poison, N * sizeof(float), sa, &c), KF_OK);
    CHECK_STATUS(upload(bm, m, R * C * sizeof(float), sb, &c), KF_OK);
    CHECK_STATUS(kf_event_record(e0, sa), KF_OK);
    for (int r = 0; r < RUNS; r++, c.runs += 2) {
        CHECK_STATUS(kf_run(ps, sa, &vx, 1, sc, 1, &vy, 1), KF_OK);
        CHECK_STATUS(kf_run(pr, sb, &vm, 1, NULL, 0, &vs, 1), KF_OK);
    }
    CHECK_STATUS(kf_event_record(e1, sa), KF_OK);
    CHECK_STATUS(kf_event_sync(e1), KF_OK);
    kf_stats st;
    kf_context_stats(ctx, &st);
    CHECK_MSG(st.device_busy_ms > 0, "no kernel time resolved at the event sync (%g ms)", st.device_busy_ms);
    CHECK_STATUS(download(y, by, N * sizeof(float), sa, &c), KF_OK);
    CHECK_STATUS(download(sum, bs, R * sizeof(float), sb, &c), KF_OK);
    CHECK_STATUS(kf_stream_sync(ctx, sa), KF_OK);
    CHECK_STATUS(kf_stream_sync(ctx, sb), KF_OK);
    kf_host_array hx[2] = { { &a, KF_F32, 0, { 0 } }, { x, KF_F32, 1, { N } } };
    kf_host_array hm[1] = { { m, KF_F32, 2, { R, C } } };
    check_result(gs, hx, 2, y, N);
    check_result(gr, hm, 1, sum, R);

    /* threads on their own streams, at once */
    pthread_t th[THREADS];
    worker w[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker){ ctx, again, vx, (float)i, KF_OK };
        pthread_create(&th[i], NULL, work, &w[i]);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        CHECK_MSG(w[i].s == KF_OK, "thread %d: %s", i, kf_context_error(ctx));
        c.runs += THREAD_RUNS;
    }
    /* more device spans than the pool holds, with no sync between */
    for (int r = 0; r < FLOOD; r++, c.runs++)
        CHECK_STATUS(kf_run(ps, sa, &vx, 1, sc, 1, &vy, 1), KF_OK);
    CHECK_STATUS(kf_stream_sync(ctx, sa), KF_OK);

    kf_context_stats(ctx, &st);
    CHECK_MSG(strcmp(st.trace_path, path) == 0, "trace_path '%s', want '%s'", st.trace_path, path);
    CHECK_MSG(st.runs == c.runs, "runs %llu, want %llu", (unsigned long long)st.runs, (unsigned long long)c.runs);
    CHECK(st.bytes_uploaded == c.up && st.bytes_downloaded == c.down);
    uint64_t nk_scale = (uint64_t)kf_program_num_kernels(ps), nk_rows = (uint64_t)kf_program_num_kernels(pr);
    uint64_t scale_runs = RUNS + THREADS * THREAD_RUNS + FLOOD;
    CHECK_MSG(st.launches >= scale_runs * nk_scale + RUNS * nk_rows, "launches %llu",
              (unsigned long long)st.launches);
    double busy_ms = st.device_busy_ms;
    kf_context_destroy(ctx);

    trace t;
    if (trace_read(path, &t)) {
        static const char *host[] = { "kf_compile", "cache lookup (memory)", "fusion", "codegen",
                                      "cache lookup (disk)", "compile", "module load", "launch enqueue",
                                      "upload enqueue", "download enqueue", "stream sync", "event sync" };
        for (size_t i = 0; i < sizeof host / sizeof *host; i++)
            CHECK_MSG(count(&t, "host", host[i], NULL) > 0, "no host span '%s'", host[i]);
        CHECK(count(&t, "host", "cache lookup (memory)", "hit") == 1);
        CHECK(count(&t, "host", "kf_compile", "rowsum") == 1);
        CHECK(count(&t, "host", "launch enqueue", NULL) == (int)c.runs);
        CHECK(count(&t, "host", "upload enqueue", NULL) == (int)c.nup);
        CHECK(count(&t, "host", "download enqueue", NULL) == (int)c.ndown);
        double sum_us = 0;
        int ks = kernels_of(&t, "scale", &sum_us), kr = kernels_of(&t, "rowsum", &sum_us);
        CHECK_MSG((uint64_t)ks >= scale_runs * nk_scale && (uint64_t)kr >= RUNS * nk_rows, "kernel spans %d %d", ks,
                  kr);
        CHECK_MSG((uint64_t)(ks + kr) == st.launches, "%d kernel spans, %llu launches", ks + kr,
                  (unsigned long long)st.launches);
        CHECK_MSG(fabs(sum_us / 1e3 - busy_ms) <= 1e-3 * (ks + kr) + 1e-6 * busy_ms,
                  "kernel spans sum to %.6f ms, device_busy_ms %.6f", sum_us / 1e3, busy_ms);
        int nup, ndown;
        CHECK(copied(&t, "upload", &nup) == (double)c.up && nup == (int)c.nup);
        CHECK(copied(&t, "download", &ndown) == (double)c.down && ndown == (int)c.ndown);
        CHECK_MSG(t.nmeta == 3 + THREADS, "%d thread_name events, want a stream each (%d)", t.nmeta, 3 + THREADS);
        CHECK_MSG(t.lost && strcmp(t.lost, "0") == 0, "lost device spans: %s", kf_test_str(t.lost));
        /* launch enqueue spans from more than one host thread */
        double tid0 = -1;
        bool several = false;
        for (int i = 0; i < t.nx; i++)
            if (strcmp(t.x[i].name, "launch enqueue") == 0) {
                several |= tid0 >= 0 && t.x[i].tid != tid0;
                tid0 = t.x[i].tid;
            }
        CHECK(several);
        check_device_threads(&t);
        printf("trace: %d spans, %d kernel spans (%.3f ms of device time), %d copies\n", t.nx, ks + kr, busy_ms,
               nup + ndown);
    }
    trace_free(&t);
    free(x);
    free(m);
    free(y);
    free(sum);
    free(poison);
    kf_module_free(mod);
}

/* -- Options, two contexts on one path, a bad path, no trace --------------------------------- */

static void on_warn(void *user, const char *msg)
{
    snprintf(user, 512, "%s", msg);
}

static void small_session(kf_context *ctx, counts *c)
{
    kf_graph *g = kf_graph_new("neg");
    kf_dim n = KF_DIM(1000);
    kf_output(g, kf_unary(g, KF_OP_NEG, kf_input(g, "x", KF_F32, 1, &n)), "y");
    kf_program *p = NULL;
    CHECK_STATUS(kf_compile(ctx, g, &p), KF_OK);
    float h[1000];
    for (int i = 0; i < 1000; i++)
        h[i] = (float)i;
    kf_buffer *b;
    CHECK_STATUS(kf_buffer_alloc(ctx, sizeof h, &b), KF_OK);
    CHECK_STATUS(upload(b, h, sizeof h, NULL, c), KF_OK);
    kf_view x = kf_view_dense(b, 0, KF_F32, 1, (int64_t[]){ 1000 }), y = { 0 };
    for (int r = 0; p && r < 2; r++, c->runs++) {
        CHECK_STATUS(kf_run(p, NULL, &x, 1, NULL, 0, &y, 1), KF_OK);
        CHECK_STATUS(download(h, y.buf, sizeof h, NULL, c), KF_OK);
    }
    CHECK(h[7] == -7.0f);
    kf_graph_free(g);
}

static void options(kf_backend b, const char *dir)
{
    char env[1100], path[1100], second[1200], bad[1200];
    snprintf(env, sizeof env, "%s/env.json", dir);
    snprintf(path, sizeof path, "%s/opt.json", dir);
    snprintf(second, sizeof second, "%s/opt-%d-1.json", dir, (int)getpid());
    snprintf(bad, sizeof bad, "%s/missing/dir/t.json", dir);
    setenv("KFUSE_TRACE", env, 1);
    char warned[512] = "";
    kf_context_options o = { .backend = b, .device = 0, .cache_mode = KF_CACHE_OFF, .trace_path = path,
                             .warn = on_warn, .warn_user = warned };
    kf_context *c1 = NULL, *c2 = NULL, *c3 = NULL;
    CHECK_STATUS(kf_context_create(&o, &c1, NULL, 0), KF_OK);
    CHECK_STATUS(kf_context_create(&o, &c2, NULL, 0), KF_OK);
    o.trace_path = bad;
    CHECK_STATUS(kf_context_create(&o, &c3, NULL, 0), KF_OK);
    unsetenv("KFUSE_TRACE");
    if (!c1 || !c2 || !c3)
        return;
    kf_stats s1, s2, s3;
    counts n1 = { 0 }, n2 = { 0 };
    small_session(c1, &n1);
    small_session(c2, &n2);
    kf_context_stats(c1, &s1);
    kf_context_stats(c2, &s2);
    kf_context_stats(c3, &s3);
    CHECK_MSG(strcmp(s1.trace_path, path) == 0, "the option does not win: %s", s1.trace_path);
    CHECK_MSG(strcmp(s2.trace_path, second) == 0, "second context writes '%s', want '%s'", s2.trace_path, second);
    CHECK(s3.trace_path[0] == 0 && s3.warnings == 1);
    CHECK_CONTAINS(warned, "missing/dir/t.json");
    CHECK(s2.runs == n2.runs && s2.launches >= n2.runs && s2.bytes_uploaded == n2.up &&
          s2.bytes_downloaded == n2.down);
    kf_context_destroy(c1);
    kf_context_destroy(c2);
    kf_context_destroy(c3);
    CHECK(access(env, F_OK) != 0);
    const char *files[] = { path, second };
    for (int i = 0; i < 2; i++) {
        trace t;
        if (trace_read(files[i], &t)) {
            int nup;
            CHECK(kernels_of(&t, "neg", NULL) == 2);
            CHECK(copied(&t, "upload", &nup) == 4000 && nup == 1);
            CHECK(t.nmeta == 1); /* the default stream */
        }
        trace_free(&t);
        unlink(files[i]);
    }

    /* No trace: no file, the counters still count, no device time. */
    kf_context *ctx = NULL;
    o.trace_path = NULL;
    CHECK_STATUS(kf_context_create(&o, &ctx, NULL, 0), KF_OK);
    if (!ctx)
        return;
    counts n = { 0 };
    small_session(ctx, &n);
    kf_stats s;
    kf_context_stats(ctx, &s);
    CHECK(s.trace_path[0] == 0 && s.device_busy_ms == 0);
    CHECK(s.runs == 2 && s.launches >= 2 && s.bytes_uploaded == n.up && s.bytes_downloaded == n.down);
    kf_context_destroy(ctx);
}

/* Files left in dir besides trace.json (every other one was removed). */
static int stray_files(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, "trace.json")) {
            fprintf(stderr, "stray file %s\n", e->d_name);
            n++;
        }
    if (d)
        closedir(d);
    return n;
}

int main(int argc, char **argv)
{
    kf_backend b = rt_backend_arg("test_trace", argc == 2 ? argv[1] : NULL);
    if (b == KF_BACKEND_AUTO)
        return 2;
    test_json_reader();
    kf_context *probe = NULL;
    char why[1024];
    kf_context_options o = { .backend = b, .device = 0, .cache_mode = KF_CACHE_OFF };
    kf_status s = kf_context_create(&o, &probe, why, sizeof why);
    if (s == KF_ERR_NO_DEVICE || s == KF_ERR_UNSUPPORTED) {
        printf("SKIP %s: %s\n", kf_backend_name(b), why);
        return kf_test_done();
    }
    kf_context_destroy(probe);
    char dir[512];
    temp_dir(dir, sizeof dir, "trace");
    scripted(b, dir);
    options(b, dir);
    CHECK(stray_files(dir) == 0);
    rm_rf(dir);
    return kf_test_done();
}
