/* Parser and printer API tests: modules from memory, lookups, status codes,
 * limits, hostile input (deep nesting on a small stack, truncation at every
 * byte, garbage, NUL and non-ASCII bytes, megabyte lines), literal values,
 * and printing graphs built with the C API. */
#include "check.h"
#include "roundtrip.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static const char design[] =
    "kfuse 1                                  # version line, first\n"
    "# a comment runs to the end of the line\n"
    "\n"
    "graph x5(x: f32[n]) -> (y) {\n"
    "  a = add x, x\n"
    "  b = add a, x\n"
    "  c = add b, x\n"
    "  y = add c, x\n"
    "}\n"
    "\n"
    "graph saxpy(alpha: f32, x: f32[n], y: f32[n]) -> (z) {\n"
    "  ax = mul alpha, x\n"
    "  z = add ax, y\n"
    "}\n"
    "\n"
    "graph rows(x: f32[m,n]) -> (r, i) {\n"
    "  r = max x, axes=[1], keepdims=true\n"
    "  i = argmax x, axes=[-1]\n"
    "}\n"
    "\n"
    "graph misc(v: f64[n], p: i64[n]) -> (g, w) {\n"
    "  g = take v, p                          # v[p[i]]\n"
    "  i = iota f64[n], axis=0\n"
    "  h = mul 0.5, i\n"
    "  w = select (gt g, (clamp h, -1, 1e3)), g, h\n"
    "}\n";

/* Parse text (NUL-terminated) with optional limits; returns the status and
 * keeps the module in *m (caller frees). */
static kf_status parse(const char *text, const kf_limits *lim, kf_module **m)
{
    return kf_module_parse(text, strlen(text), NULL, lim, m);
}

/* Parse and expect status want and, when msg is not NULL, an error message
 * containing it. */
static void expect_error(const char *text, kf_status want, const char *msg)
{
    kf_module *m = NULL;
    kf_status s = parse(text, NULL, &m);
    CHECK_MSG(s == want, "got %s, want %s for:\n%s\n%s", kf_status_string(s), kf_status_string(want), text,
              m ? kf_module_error(m) : "");
    CHECK(m != NULL);
    if (msg && m)
        CHECK_CONTAINS(kf_module_error(m), msg);
    kf_module_free(m);
}

/* A one-graph module's only graph, or NULL. */
static kf_graph *only_graph(kf_module *m)
{
    return kf_module_num_graphs(m) == 1 ? kf_module_graph(m, 0) : NULL;
}

static void test_basics(void)
{
    kf_module *m = NULL;
    CHECK_STATUS(parse(design, NULL, &m), KF_OK);
    CHECK_MSG(m && strcmp(kf_module_error(m), "") == 0, "%s", m ? kf_module_error(m) : "");
    CHECK(kf_module_num_graphs(m) == 4);
    CHECK(kf_module_graph(m, -1) == NULL);
    CHECK(kf_module_graph(m, 4) == NULL);
    kf_graph *g = kf_module_find(m, "saxpy");
    CHECK(g != NULL && g == kf_module_graph(m, 1));
    CHECK(kf_module_find(m, "nope") == NULL);
    CHECK(kf_module_find(m, NULL) == NULL);
    CHECK(kf_module_find(NULL, "saxpy") == NULL);
    CHECK(kf_graph_num_inputs(g) == 3);
    CHECK(kf_node_is_scalar(g, kf_graph_input(g, 0)));
    CHECK(!kf_node_is_scalar(g, kf_graph_input(g, 1)));
    CHECK(kf_graph_num_outputs(g) == 1 && strcmp(kf_graph_output_name(g, 0), "z") == 0);

    kf_graph *rows = kf_module_find(m, "rows");
    kf_node r = kf_graph_output(rows, 0);
    CHECK(kf_node_op(rows, r) == KF_OP_RMAX && kf_node_rank(rows, r) == 2);
    kf_dim d;
    CHECK(kf_node_dim(rows, r, 1, &d) == KF_OK && d.sym == NULL && d.size == 1);
    kf_node i = kf_graph_output(rows, 1);
    CHECK(kf_node_op(rows, i) == KF_OP_ARGMAX && kf_node_dtype(rows, i) == KF_I64 && kf_node_rank(rows, i) == 1);
    CHECK(kf_node_dim(rows, i, 0, &d) == KF_OK && d.sym && strcmp(d.sym, "m") == 0);

    char why[4096];
    CHECK_MSG(kf_test_roundtrip(m, why, sizeof why), "%s", why);

    /* kf_graph_to_text is one graph of kf_module_print. */
    char *t = kf_graph_to_text(g);
    CHECK(t && strcmp(t, "graph saxpy(alpha: f32, x: f32[n], y: f32[n]) -> (z) {\n  ax = mul alpha, x\n  z = add ax, y\n}\n") == 0);
    kf_free(t);
    kf_module_free(m);

    /* Without a file name messages say <input>; with one, the name. */
    m = NULL;
    CHECK_STATUS(kf_module_parse("kfuse 1\nbad", 11, NULL, NULL, &m), KF_ERR_PARSE);
    CHECK_MSG(m && strcmp(kf_module_error(m), "<input>:2:1: error: expected 'graph', found 'bad'") == 0, "%s",
              m ? kf_module_error(m) : "");
    kf_module_free(m);
    m = NULL;
    CHECK_STATUS(kf_module_parse("kfuse 1\nbad", 11, "f.kir", NULL, &m), KF_ERR_PARSE);
    CHECK(m && strncmp(kf_module_error(m), "f.kir:2:1: error: ", 18) == 0);
    kf_module_free(m);

    /* Text need not be NUL-terminated: only len bytes are read. */
    const char *t2 = "kfuse 1\ngraph g(x: f32[n]) -> (x) {\n}\nGARBAGE";
    m = NULL;
    CHECK_STATUS(kf_module_parse(t2, strlen(t2) - 7, NULL, NULL, &m), KF_OK);
    kf_module_free(m);

    /* Bad arguments. */
    CHECK_STATUS(kf_module_parse("kfuse 1\n", 8, NULL, NULL, NULL), KF_ERR_INVALID_ARG);
    m = NULL;
    CHECK_STATUS(kf_module_parse(NULL, 5, NULL, NULL, &m), KF_ERR_INVALID_ARG);
    CHECK(m != NULL);
    kf_module_free(m);
    m = NULL;
    CHECK_STATUS(kf_module_parse(NULL, 0, NULL, NULL, &m), KF_ERR_PARSE);
    kf_module_free(m);
    m = NULL;
    CHECK_STATUS(kf_module_parse("kfuse 1", 7, NULL, NULL, &m), KF_OK);
    CHECK(kf_module_num_graphs(m) == 0);
    kf_module_free(m);
    CHECK(kf_module_num_graphs(NULL) == 0);
    CHECK(kf_module_graph(NULL, 0) == NULL);
    kf_module_free(NULL);
    CHECK(kf_graph_print(NULL, stdout) == KF_ERR_INVALID_ARG);
    CHECK(kf_module_print(NULL, stdout) == KF_ERR_INVALID_ARG);
    CHECK(kf_graph_to_text(NULL) == NULL);
}

static void test_files(void)
{
    kf_module *m = NULL;
    CHECK_STATUS(kf_module_parse_file("golden/design.kir", NULL, &m), KF_OK);
    CHECK(kf_module_num_graphs(m) == 6);
    kf_module_free(m);
    m = NULL;
    CHECK_STATUS(kf_module_parse_file("golden/no-such-file.kir", NULL, &m), KF_ERR_IO);
    CHECK(m != NULL);
    if (m)
        CHECK_CONTAINS(kf_module_error(m), "golden/no-such-file.kir: error: cannot read: No such file or directory");
    kf_module_free(m);
    m = NULL;
    CHECK_STATUS(kf_module_parse_file("golden", NULL, &m), KF_ERR_IO); /* a directory */
    kf_module_free(m);
    m = NULL;
    kf_limits tiny = { .max_bytes = 10 };
    CHECK_STATUS(kf_module_parse_file("golden/design.kir", &tiny, &m), KF_ERR_LIMIT);
    kf_module_free(m);
    m = NULL;
    CHECK_STATUS(kf_module_parse_file(NULL, NULL, &m), KF_ERR_INVALID_ARG);
    kf_module_free(m);
    CHECK_STATUS(kf_module_parse_file("golden/design.kir", NULL, NULL), KF_ERR_INVALID_ARG);
}

static void test_status_codes(void)
{
    const char *h = "kfuse 1\ngraph g(x: f32[n], y: f64[n], i: i8[n]) -> (z) {\n";
    char buf[512];
#define BODY(s) (snprintf(buf, sizeof buf, "%s%s\n}\n", h, s), buf)
    expect_error(BODY("  z = add x, x x"), KF_ERR_PARSE, "<input>:3:16: error: expected ',' or end of line, found 'x'");
    expect_error(BODY("  z = add x, q"), KF_ERR_NAME, "3:14: error: undefined name 'q'");
    expect_error(BODY("  z = add x, y"), KF_ERR_TYPE, "3:7: error: add: operands have different dtypes");
    expect_error(BODY("  z = add i, 300"), KF_ERR_TYPE, "3:14: error: literal 300 is out of range for i8");
    expect_error(BODY("  z = sum x, axes=[1]"), KF_ERR_SHAPE, "3:7: error: sum: axis 1 out of range for rank 1");
    expect_error(BODY("  z = sum x, axes=[]"), KF_ERR_SHAPE, "axes=[] reduces nothing");
    expect_error(BODY("  z = neg x\n  z = neg x"), KF_ERR_NAME, "4:3: error: duplicate name 'z'");
    expect_error(BODY("  w = neg x"), KF_ERR_NAME, "undefined output 'z'");
    expect_error("kfuse 1\ngraph g(x: f32[n]) -> () {\n}\n", KF_ERR_INVALID_ARG, "3:1: error: graph 'g' has no outputs");
    expect_error("kfuse 7\n", KF_ERR_UNSUPPORTED, "1:7: error: unsupported kfuse version 7 (this build reads 1)");
    expect_error("graph", KF_ERR_PARSE, "1:1: error: expected the version line 'kfuse 1', found 'graph'");
    expect_error("kfuse 1 2\n", KF_ERR_PARSE, "1:9: error: expected end of line after the version, found '2'");
    expect_error("kfuse 1\ngraph g(x: f32[n]) -> (x) {\n}\ngraph g(x: f32[n]) -> (x) {\n}\n", KF_ERR_NAME,
                 "4:7: error: duplicate graph 'g'");
#undef BODY
    /* Only the first error is kept. */
    kf_module *m = NULL;
    CHECK_STATUS(parse("kfuse 1\ngraph g(x: f32[n]) -> (y) {\n  y = ad x\n  z = q\n}\n", NULL, &m), KF_ERR_PARSE);
    CHECK(m && strcmp(kf_module_error(m), "<input>:3:7: error: unknown op 'ad'") == 0);
    CHECK(kf_module_num_graphs(m) == 0);
    kf_module_free(m);
    /* Graphs before the failing one stay in the module. */
    m = NULL;
    CHECK_STATUS(parse("kfuse 1\ngraph a(x: f32[n]) -> (x) {\n}\ngraph b(x: f32[n]) -> (y) {\n}\n", NULL, &m),
                 KF_ERR_NAME);
    CHECK(kf_module_num_graphs(m) == 1 && kf_module_find(m, "a") != NULL);
    kf_module_free(m);
}

static void test_limits(void)
{
    const char *t = "kfuse 1\ngraph g(x: f32[n]) -> (y) {\n  y = neg (neg (neg (neg x)))\n}\n";
    kf_module *m = NULL;
    kf_limits lim = { .max_depth = 3 };
    CHECK_STATUS(parse(t, &lim, &m), KF_OK);
    kf_module_free(m);
    m = NULL;
    lim.max_depth = 2;
    CHECK_STATUS(parse(t, &lim, &m), KF_ERR_LIMIT);
    CHECK(m && strcmp(kf_module_error(m), "<input>:3:21: error: nesting deeper than 2 levels") == 0);
    kf_module_free(m);

    /* 1 input + 4 nodes: a limit of 5 passes, 4 fails (and says so). */
    kf_limits nodes = { .max_nodes = 5 };
    m = NULL;
    CHECK_STATUS(parse(t, &nodes, &m), KF_OK);
    kf_module_free(m);
    nodes.max_nodes = 4;
    m = NULL;
    CHECK_STATUS(parse(t, &nodes, &m), KF_ERR_LIMIT);
    CHECK_CONTAINS(kf_module_error(m), "has more than 4 nodes");
    kf_module_free(m);

    kf_limits bytes = { .max_bytes = strlen(t) };
    m = NULL;
    CHECK_STATUS(parse(t, &bytes, &m), KF_OK);
    kf_module_free(m);
    bytes.max_bytes--;
    m = NULL;
    CHECK_STATUS(parse(t, &bytes, &m), KF_ERR_LIMIT);
    CHECK_CONTAINS(kf_module_error(m), "over the limit");
    kf_module_free(m);
}

/* Text of a statement nested 'depth' levels: y = neg (neg (... x ...)). */
static char *deep_text(size_t depth, bool parens_only)
{
    const char *head = "kfuse 1\ngraph g(x: f32[n]) -> (y) {\n  y = neg ";
    size_t n = strlen(head) + depth * 6 + 64;
    char *s = malloc(n);
    if (!s)
        return NULL;
    size_t o = (size_t)sprintf(s, "%s", head);
    for (size_t i = 0; i < depth; i++)
        o += (size_t)sprintf(s + o, parens_only ? "(" : "(neg ");
    o += (size_t)sprintf(s + o, "x");
    for (size_t i = 0; i < depth; i++)
        s[o++] = ')';
    o += (size_t)sprintf(s + o, "\n}\n");
    return s;
}

typedef struct deep_job {
    size_t depth;
    bool parens_only;
    uint32_t max_depth;
    kf_status status;
    char msg[256];
    int nodes;
} deep_job;

static void *deep_thread(void *arg)
{
    deep_job *j = arg;
    char *s = deep_text(j->depth, j->parens_only);
    j->status = KF_ERR_NO_MEMORY;
    if (!s)
        return NULL;
    kf_limits lim = { .max_depth = j->max_depth };
    kf_module *m = NULL;
    j->status = kf_module_parse(s, strlen(s), NULL, &lim, &m);
    snprintf(j->msg, sizeof j->msg, "%s", m ? kf_module_error(m) : "");
    j->nodes = kf_module_num_graphs(m) ? kf_graph_num_nodes(kf_module_graph(m, 0)) : 0;
    if (j->status == KF_OK) {
        kf_hash h;
        if (kf_graph_hash(kf_module_graph(m, 0), &h) != KF_OK)
            j->status = KF_ERR_INVALID_ARG;
    }
    kf_module_free(m);
    free(s);
    return NULL;
}

/* Run a deep parse on a thread with a 256 KiB stack. */
static void run_deep(deep_job *j)
{
    pthread_attr_t attr;
    pthread_t th;
    CHECK(pthread_attr_init(&attr) == 0);
    CHECK(pthread_attr_setstacksize(&attr, 256 * 1024) == 0);
    int rc = pthread_create(&th, &attr, deep_thread, j);
    CHECK(rc == 0);
    if (rc == 0)
        CHECK(pthread_join(th, NULL) == 0);
    pthread_attr_destroy(&attr);
}

static void test_deep(void)
{
    deep_job j = { .depth = 1000000 };
    run_deep(&j);
    CHECK_STATUS(j.status, KF_ERR_LIMIT);
    CHECK_CONTAINS(j.msg, "nesting deeper than 256 levels");

    deep_job p = { .depth = 1000000, .parens_only = true };
    run_deep(&p);
    CHECK_STATUS(p.status, KF_ERR_PARSE);
    CHECK_CONTAINS(p.msg, "expected an op, found '('");

    /* Raised limit: the parser needs no stack for depth, so this parses. */
    deep_job big = { .depth = 100000, .max_depth = 200000 };
    run_deep(&big);
    CHECK_MSG(big.status == KF_OK, "%s", big.msg);
    CHECK(big.nodes == 100002);
}

/* Every prefix of a valid text: never a crash; an error, or (at a graph
 * boundary) a module that round-trips. */
static void test_truncation(void)
{
    size_t n = strlen(design), ok = 0;
    for (size_t len = 0; len <= n; len++) {
        char *copy = malloc(len ? len : 1);
        memcpy(copy, design, len); /* exact size: ASan sees any read past len */
        kf_module *m = NULL;
        kf_status s = kf_module_parse(copy, len, "t.kir", NULL, &m);
        CHECK(m != NULL);
        if (s == KF_OK) {
            ok++;
            char why[4096];
            CHECK_MSG(kf_test_roundtrip(m, why, sizeof why), "prefix %zu: %s", len, why);
        } else {
            CHECK_MSG(strncmp(kf_module_error(m), "t.kir:", 6) == 0, "prefix %zu: %s", len, kf_module_error(m));
        }
        kf_module_free(m);
        free(copy);
    }
    CHECK(ok > 4);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* Random bytes, and valid text with random bytes flipped: never a crash,
 * and whatever parses round-trips. */
static void test_garbage(void)
{
    char buf[2048];
    int parsed = 0;
    for (int iter = 0; iter < 3000; iter++) {
        size_t len;
        if (iter < 1000) {
            len = rng() % sizeof buf;
            for (size_t i = 0; i < len; i++)
                buf[i] = (char)rng();
        } else {
            len = strlen(design) < sizeof buf ? strlen(design) : sizeof buf;
            memcpy(buf, design, len);
            int flips = 1 + (int)(rng() % 4);
            for (int k = 0; k < flips; k++) {
                static const char pool[] = "(),=[]:{}#\n -0123456789.xe+abfinu_\x80\xff";
                buf[rng() % len] = (rng() & 1) ? (char)rng() : pool[rng() % (sizeof pool - 1)];
            }
        }
        kf_module *m = NULL;
        kf_status s = kf_module_parse(buf, len, NULL, NULL, &m);
        CHECK(m != NULL);
        if (s == KF_OK) {
            parsed++;
            char why[4096];
            CHECK_MSG(kf_test_roundtrip(m, why, sizeof why), "%s", why);
        } else {
            CHECK(strlen(kf_module_error(m)) > 0);
        }
        kf_module_free(m);
    }
    CHECK(parsed > 0);

    kf_module *m = NULL;
    CHECK_STATUS(kf_module_parse("kfuse 1\n\0graph", 14, NULL, NULL, &m), KF_ERR_PARSE);
    CHECK(m && strcmp(kf_module_error(m), "<input>:2:1: error: unexpected character '\\x00'") == 0);
    kf_module_free(m);
    expect_error("kfuse 1\ngraph \xe2\x82\xac() -> (x) {\n}\n", KF_ERR_PARSE, "2:7: error: unexpected character '\\xe2'");
    expect_error("kfuse 1\ngraph g(x: f32[n]) -> (x) { # \xff\xfe comment bytes are fine\n}\n", KF_OK, NULL);
}

/* Lines a megabyte long: comments, whitespace, names, numbers. */
static void test_long_lines(void)
{
    size_t big = 1 << 20;
    const char *head = "kfuse 1\ngraph g(x: f32[n]) -> (y) {\n  y = add x, ";
    char *s = malloc(strlen(head) + big + 256);
    kf_module *m;

    /* A 1 MB comment and a 1 MB run of spaces. */
    size_t o = (size_t)sprintf(s, "%s", head);
    o += (size_t)sprintf(s + o, "x");
    memset(s + o, ' ', big);
    o += big;
    s[o++] = '#';
    memset(s + o, 'c', 64);
    o += 64;
    memcpy(s + o, "\n}\n", 4);
    m = NULL;
    CHECK_STATUS(kf_module_parse(s, strlen(s), NULL, NULL, &m), KF_OK);
    kf_module_free(m);

    /* A 1 MB name: an error that quotes a short piece of it. */
    o = (size_t)sprintf(s, "%s", head);
    memset(s + o, 'q', big);
    o += big;
    memcpy(s + o, "\n}\n", 4);
    m = NULL;
    CHECK_STATUS(kf_module_parse(s, strlen(s), NULL, NULL, &m), KF_ERR_NAME);
    CHECK(m && strlen(kf_module_error(m)) < 200);
    kf_module_free(m);

    /* A 1 MB number. */
    o = (size_t)sprintf(s, "%s", head);
    memset(s + o, '7', big);
    o += big;
    memcpy(s + o, "\n}\n", 4);
    m = NULL;
    CHECK_STATUS(kf_module_parse(s, strlen(s), NULL, NULL, &m), KF_ERR_PARSE);
    CHECK_CONTAINS(kf_module_error(m), "is too long");
    kf_module_free(m);

    /* A statement with very many arguments. */
    o = (size_t)sprintf(s, "%s", head);
    for (size_t i = 0; i < big / 4; i++)
        o += (size_t)sprintf(s + o, "x, ");
    o += (size_t)sprintf(s + o, "x\n}\n");
    m = NULL;
    CHECK_STATUS(kf_module_parse(s, strlen(s), NULL, NULL, &m), KF_ERR_PARSE);
    CHECK_CONTAINS(kf_module_error(m), "add takes 2 arguments, got 262146");
    kf_module_free(m);
    free(s);
}

/* The literal of argument i of output 0 of the single graph in text. */
static const kf_irnode *lit_of(kf_module *m, int i)
{
    kf_graph *g = only_graph(m);
    if (!g)
        return NULL;
    const kf_irnode *x = kf_ir_node(g, kf_graph_output(g, 0));
    if (i >= x->nargs || g->nodes[x->args[i]].op != KF_OP_CONST)
        return NULL;
    return &g->nodes[x->args[i]];
}

static kf_module *parse_stmt(const char *params, const char *stmt)
{
    char buf[512];
    snprintf(buf, sizeof buf, "kfuse 1\ngraph g(%s) -> (y) {\n  y = %s\n}\n", params, stmt);
    kf_module *m = NULL;
    kf_status s = parse(buf, NULL, &m);
    CHECK_MSG(s == KF_OK, "%s: %s", stmt, m ? kf_module_error(m) : "oom");
    return m;
}

static void test_literals(void)
{
    struct { const char *params, *stmt; int arg; kf_dtype t; double f; } fl[] = {
        { "x: f32[n]", "add x, 2.5", 1, KF_F32, 2.5 },
        { "x: f32[n]", "add 0.1, x", 0, KF_F32, (float)0.1 },
        { "x: f16[n]", "add x, 0.1", 1, KF_F16, 0.0999755859375 },
        { "x: f64[n]", "add x, 2", 1, KF_F64, 2.0 },
        { "x: f64[n]", "add x, -0", 1, KF_F64, -0.0 },
        { "x: f64[n]", "add x, -inf", 1, KF_F64, -INFINITY },
        { "", "neg 2.5:f32", 0, KF_F32, 2.5 },
        { "", "neg 7.25", 0, KF_F64, 7.25 },
        { "", "neg 1:f16", 0, KF_F16, 1.0 },
        { "x: bf16[n]", "mul x, 0x10", 1, KF_BF16, 16.0 },
    };
    for (size_t i = 0; i < sizeof fl / sizeof fl[0]; i++) {
        kf_module *m = parse_stmt(fl[i].params, fl[i].stmt);
        const kf_irnode *c = lit_of(m, fl[i].arg);
        CHECK_MSG(c && c->dtype == fl[i].t && memcmp(&c->lit.f, &fl[i].f, 8) == 0, "%s: dtype %d value %.17g",
                  fl[i].stmt, c ? c->dtype : -1, c ? c->lit.f : 0.0);
        kf_module_free(m);
    }
    struct { const char *params, *stmt; int arg; kf_dtype t; uint64_t bits; } il[] = {
        { "x: u64[n]", "add x, 18446744073709551615", 1, KF_U64, UINT64_MAX },
        { "x: i64[n]", "add x, -9223372036854775808", 1, KF_I64, (uint64_t)INT64_MIN },
        { "x: i32[n]", "add x, 0x7fffffff", 1, KF_I32, 0x7fffffff },
        { "x: i32[n]", "add x, 017", 1, KF_I32, 15 },
        { "x: i8[n]", "sub x, -128", 1, KF_I8, (uint64_t)(int64_t)-128 },
        { "x: i32[n]", "add x, 4.0", 1, KF_I32, 4 },
        { "x: i32[n]", "add x, 1e3", 1, KF_I32, 1000 },
        { "", "neg 7", 0, KF_I64, 7 },
        { "", "neg 7:u8", 0, KF_U8, 7 },
        { "v: f32[n]", "take v, 3", 1, KF_I64, 3 },
        { "c: bool[n], x: i16[n]", "select c, x, 5", 2, KF_I16, 5 },
        { "c: bool[n], x: i16[n]", "select c, 5, x", 1, KF_I16, 5 },
        { "x: i16[n]", "select 1, x, x", 0, KF_BOOL, 1 },
        { "x: bool[n]", "and x, true", 1, KF_BOOL, 1 },
    };
    for (size_t i = 0; i < sizeof il / sizeof il[0]; i++) {
        kf_module *m = parse_stmt(il[i].params, il[i].stmt);
        const kf_irnode *c = lit_of(m, il[i].arg);
        CHECK_MSG(c && c->dtype == il[i].t && c->lit.u == il[i].bits, "%s: dtype %d value %llu", il[i].stmt,
                  c ? c->dtype : -1, c ? (unsigned long long)c->lit.u : 0ull);
        kf_module_free(m);
    }
    kf_module *m = parse_stmt("x: f32[n]", "add x, nan");
    const kf_irnode *c = lit_of(m, 1);
    CHECK(c && isnan(c->lit.f) && !signbit(c->lit.f));
    kf_module_free(m);
    m = parse_stmt("x: f32[n]", "add x, -nan");
    c = lit_of(m, 1);
    CHECK(c && isnan(c->lit.f) && signbit(c->lit.f));
    char why[4096];
    CHECK_MSG(kf_test_roundtrip(m, why, sizeof why), "%s", why);
    kf_module_free(m);

    expect_error("kfuse 1\ngraph g(x: i32[n]) -> (y) {\n  y = add x, 2.5\n}\n", KF_ERR_TYPE, "3:14: error: literal 2.5 is not an integer");
    expect_error("kfuse 1\ngraph g(x: u8[n]) -> (y) {\n  y = add x, -1\n}\n", KF_ERR_TYPE, "literal -1 is out of range for u8");
    expect_error("kfuse 1\ngraph g(x: i64[n]) -> (y) {\n  y = add x, -9223372036854775809\n}\n", KF_ERR_TYPE, "out of range for i64");
    expect_error("kfuse 1\ngraph g() -> (y) {\n  y = neg 9223372036854775808\n}\n", KF_ERR_TYPE, "out of range for i64");
    expect_error("kfuse 1\ngraph g() -> (y) {\n  y = neg 0x\n}\n", KF_ERR_PARSE, "invalid number '0x'");
    expect_error("kfuse 1\ngraph g() -> (y) {\n  y = neg 1e\n}\n", KF_ERR_PARSE, "invalid number '1e'");
    expect_error("kfuse 1\ngraph g() -> (y) {\n  y = neg 3.5 :f32\n}\n", KF_ERR_PARSE, "found ':'");
    expect_error("kfuse 1\ngraph g() -> (y) {\n  y = neg 3.5:x\n}\n", KF_ERR_PARSE, "unknown dtype suffix");
    expect_error("kfuse 1\ngraph g() -> (y) {\n  y = neg - 3\n}\n", KF_ERR_PARSE, "unexpected character '-'");
}

/* Print graphs built with the C API: generated names, suffixes, literals
 * shared between statements, and the hash surviving the text. */
static void test_print_api(void)
{
    kf_graph *g = kf_graph_new("api");
    kf_dim n = KF_SYM("n");
    kf_node x = kf_input(g, "x", KF_F32, 1, &n);
    kf_node two = kf_lit_f(g, KF_F32, 2.0);
    kf_node three = kf_lit_f(g, KF_F32, 3.0);
    kf_node c = kf_binary(g, KF_OP_ADD, two, three);     /* literals only: suffixes */
    kf_node a = kf_binary(g, KF_OP_MUL, x, c);
    kf_node b = kf_unary(g, KF_OP_NEG, a);                /* unnamed, node 5 */
    kf_node u64 = kf_lit_u(g, KF_U64, UINT64_MAX);
    kf_node cu = kf_cast(g, u64, KF_F32);
    kf_node d = kf_binary(g, KF_OP_ADD, b, cu);
    kf_node s = kf_reduce(g, KF_OP_SUM, d, 0, NULL, false);
    kf_node e = kf_unary(g, KF_OP_NEG, kf_lit_f(g, KF_F64, -0.0));
    CHECK(kf_set_name(g, a, "_5") == KF_OK);              /* takes the generated name of b */
    CHECK(kf_output(g, s, "s") == KF_OK);
    CHECK(kf_output(g, e, "e") == KF_OK);
    CHECK(kf_output(g, x, NULL) == KF_OK);
    CHECK_STATUS(kf_graph_verify(g), KF_OK);
    char *t = kf_graph_to_text(g);
    const char *want = "graph api(x: f32[n]) -> (s, e, x) {\n"
                       "  _3 = add 2:f32, 3:f32\n"
                       "  _5 = mul x, _3\n"
                       "  _5_ = neg _5\n"
                       "  _7 = cast 18446744073709551615:u64, f32\n"
                       "  _8 = add _5_, _7\n"
                       "  s = sum _8\n"
                       "  e = neg -0:f64\n"
                       "}\n";
    CHECK_MSG(t && strcmp(t, want) == 0, "%s", t ? t : "(null)");
    if (t) {
        char buf[1024];
        snprintf(buf, sizeof buf, "kfuse 1\n%s", t);
        kf_module *m = NULL;
        CHECK_STATUS(parse(buf, NULL, &m), KF_OK);
        kf_hash h1, h2;
        CHECK(kf_graph_hash(g, &h1) == KF_OK && m && kf_graph_hash(only_graph(m), &h2) == KF_OK);
        CHECK(h1.lo == h2.lo && h1.hi == h2.hi);
        char *t2 = m ? kf_graph_to_text(only_graph(m)) : NULL;
        CHECK(t2 && strcmp(t, t2) == 0);
        kf_free(t2);
        kf_module_free(m);
    }
    kf_free(t);

    /* A literal output has no statement form. */
    kf_graph *lg = kf_graph_new("lit");
    kf_node l = kf_lit_i(lg, KF_I32, 5);
    CHECK(kf_output(lg, l, "five") == KF_OK);
    CHECK(kf_graph_to_text(lg) == NULL);
    CHECK_STATUS(kf_graph_print(lg, stdout), KF_ERR_UNSUPPORTED);
    kf_graph_free(lg);
    kf_graph_free(g);
}

/* Printer spellings: shortest exact decimal for each dtype. */
static void test_float_spelling(void)
{
    struct { kf_dtype t; double v; const char *want; } cases[] = {
        { KF_F64, 0.1, "0.1" },
        { KF_F32, (float)0.1, "0.1" },
        { KF_F16, 0.0999755859375, "0.1" },
        { KF_BF16, 0.10009765625, "0.1" },
        { KF_F64, 1e300, "1e+300" },
        { KF_F64, 5e-324, "5e-324" },
        { KF_F64, 123.0, "123" },
        { KF_F64, 1.0 / 3.0, "0.3333333333333333" },
        { KF_F32, (float)(1.0 / 3.0), "0.33333334" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kf_graph *g = kf_graph_new("f");
        kf_dim n = KF_SYM("n");
        kf_node x = kf_input(g, "x", cases[i].t, 1, &n);
        kf_node y = kf_binary(g, KF_OP_ADD, x, kf_lit_f(g, cases[i].t, cases[i].v));
        kf_output(g, y, "y");
        char *t = kf_graph_to_text(g);
        char want[128];
        snprintf(want, sizeof want, "y = add x, %s\n", cases[i].want);
        CHECK_MSG(t && strstr(t, want), "%s", t ? t : "(null)");
        kf_free(t);
        kf_graph_free(g);
    }
}

int main(void)
{
    test_basics();
    test_files();
    test_status_codes();
    test_limits();
    test_deep();
    test_truncation();
    test_garbage();
    test_long_lines();
    test_literals();
    test_print_api();
    test_float_spelling();
    return kf_test_done();
}
