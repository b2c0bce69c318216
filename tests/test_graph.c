/* Builder, verifier and canonical hash: unit tests through the C API. */
#include "check.h"
#include "ir.h"


static kf_hash hash_of(kf_graph *g)
{
    kf_hash h = { 0, 0 };
    CHECK_STATUS(kf_graph_hash(g, &h), KF_OK);
    return h;
}

static bool hash_eq(kf_hash a, kf_hash b) { return a.lo == b.lo && a.hi == b.hi; }

/* x5 built with the given names; 'swap' adds an independent statement
 * before or after the chain. */
static kf_graph *build_x5(const char *gname, const char *x, const char *sym, const char *mid, bool extra_first)
{
    kf_graph *g = kf_graph_new(gname);
    kf_dim d = KF_SYM(sym);
    kf_node in = kf_input(g, x, KF_F32, 1, &d);
    kf_node e = KF_NONE;
    if (extra_first)
        e = kf_unary(g, KF_OP_EXP, in);
    kf_node a = kf_binary(g, KF_OP_ADD, in, in);
    kf_set_name(g, a, mid);
    kf_node b = kf_binary(g, KF_OP_ADD, a, in);
    kf_node c = kf_binary(g, KF_OP_ADD, b, in);
    kf_node y = kf_binary(g, KF_OP_ADD, c, in);
    if (!extra_first)
        e = kf_unary(g, KF_OP_EXP, in);
    kf_output(g, y, "y");
    kf_output(g, e, "e");
    return g;
}

static void test_build_x5(void)
{
    kf_graph *g = build_x5("x5", "x", "n", "a", false);
    CHECK_STATUS(kf_graph_verify(g), KF_OK);
    CHECK(kf_graph_num_inputs(g) == 1);
    CHECK(kf_graph_num_outputs(g) == 2);
    kf_node y = kf_graph_output(g, 0);
    CHECK(kf_node_dtype(g, y) == KF_F32);
    CHECK(kf_node_rank(g, y) == 1);
    kf_dim d;
    CHECK_STATUS(kf_node_dim(g, y, 0, &d), KF_OK);
    CHECK(d.sym && strcmp(d.sym, "n") == 0);
    CHECK(strcmp(kf_graph_output_name(g, 1), "e") == 0);
    CHECK(kf_node_op(g, y) == KF_OP_ADD);
    CHECK(strcmp(kf_op_name(KF_OP_RMAX), "max") == 0);
    CHECK(kf_version() == KFUSE_VERSION);
    kf_graph_free(g);
}

static void test_hash_invariance(void)
{
    kf_graph *g1 = build_x5("x5", "x", "n", "a", false);
    kf_graph *g2 = build_x5("other", "input", "len", "tmp", true);
    CHECK(hash_eq(hash_of(g1), hash_of(g2)));
    kf_graph *c = kf_graph_clone(g1);
    CHECK(c && hash_eq(hash_of(g1), hash_of(c)));
    kf_graph_free(c);

    /* one op different -> different hash */
    kf_graph *g3 = kf_graph_new("x5");
    kf_dim d = KF_SYM("n");
    kf_node in = kf_input(g3, "x", KF_F32, 1, &d);
    kf_node a = kf_binary(g3, KF_OP_ADD, in, in);
    kf_node b = kf_binary(g3, KF_OP_ADD, a, in);
    kf_node cc = kf_binary(g3, KF_OP_MUL, b, in);
    kf_node y = kf_binary(g3, KF_OP_ADD, cc, in);
    kf_output(g3, y, "y");
    kf_output(g3, kf_unary(g3, KF_OP_EXP, in), "e");
    CHECK_STATUS(kf_graph_verify(g3), KF_OK);
    CHECK(!hash_eq(hash_of(g1), hash_of(g3)));

    /* dead code does not change the hash */
    kf_graph *g4 = build_x5("x5", "x", "n", "a", false);
    kf_unary(g4, KF_OP_SIN, kf_graph_input(g4, 0));
    CHECK(hash_eq(hash_of(g1), hash_of(g4)));

    /* dtype, shape, literal and output order all count */
    kf_graph *g5 = kf_graph_new("g");
    kf_node x5 = kf_input(g5, "x", KF_F32, 1, &d);
    kf_output(g5, kf_binary(g5, KF_OP_ADD, x5, kf_lit_f(g5, KF_F32, 1.0)), "y");
    kf_graph *g6 = kf_graph_new("g");
    kf_node x6 = kf_input(g6, "x", KF_F32, 1, &d);
    kf_output(g6, kf_binary(g6, KF_OP_ADD, x6, kf_lit_f(g6, KF_F32, 2.0)), "y");
    kf_graph *g7 = kf_graph_new("g");
    kf_dim d4 = KF_DIM(4);
    kf_node x7 = kf_input(g7, "x", KF_F32, 1, &d4);
    kf_output(g7, kf_binary(g7, KF_OP_ADD, x7, kf_lit_f(g7, KF_F32, 1.0)), "y");
    CHECK(!hash_eq(hash_of(g5), hash_of(g6)));
    CHECK(!hash_eq(hash_of(g5), hash_of(g7)));
    kf_graph_free(g1);
    kf_graph_free(g2);
    kf_graph_free(g3);
    kf_graph_free(g4);
    kf_graph_free(g5);
    kf_graph_free(g6);
    kf_graph_free(g7);
}

/* The hash is part of the on-disk cache key: it must not change between
 * runs, machines or releases without a deliberate format bump. */
static void test_hash_stable(void)
{
    kf_graph *g = build_x5("x5", "x", "n", "a", false);
    kf_hash h = hash_of(g);
    char buf[40];
    snprintf(buf, sizeof buf, "%016llx%016llx", (unsigned long long)h.hi, (unsigned long long)h.lo);
    CHECK_MSG(strcmp(buf, "9f5a71af4095ded4d24b6de0e5777ab4") == 0, "x5 hash changed: %s", buf);
    kf_graph_free(g);
}

static void test_sticky_errors(void)
{
    kf_graph *g = kf_graph_new("bad");
    kf_dim n = KF_SYM("n"), m = KF_SYM("m");
    kf_node x = kf_input(g, "x", KF_F32, 1, &n);
    kf_node y = kf_input(g, "y", KF_F64, 1, &n);
    kf_node z = kf_input(g, "z", KF_F32, 1, &m);
    CHECK(kf_graph_status(g) == KF_OK);
    kf_node bad = kf_binary(g, KF_OP_ADD, x, y);
    CHECK(bad == KF_NONE);
    CHECK(kf_graph_status(g) == KF_ERR_TYPE);
    CHECK_CONTAINS(kf_graph_error(g), "different dtypes (f32 and f64)");
    CHECK(kf_graph_error_node(g) == 3);
    /* later calls are no-ops and keep the first error */
    CHECK(kf_binary(g, KF_OP_ADD, x, z) == KF_NONE);
    CHECK(kf_input(g, "w", KF_F32, 1, &n) == KF_NONE);
    CHECK(kf_graph_num_nodes(g) == 3);
    CHECK_STATUS(kf_output(g, x, "out"), KF_ERR_TYPE);
    CHECK_STATUS(kf_graph_verify(g), KF_ERR_TYPE);
    CHECK_CONTAINS(kf_graph_error(g), "f32 and f64");
    kf_hash h;
    CHECK_STATUS(kf_graph_hash(g, &h), KF_ERR_TYPE);
    kf_graph_free(g);
}

/* Each case builds a graph that must fail with the status and message. */
static void expect_fail(kf_graph *g, kf_status want, const char *msg)
{
    CHECK_STATUS(kf_graph_verify(g), want);
    CHECK_CONTAINS(kf_graph_error(g), msg);
    kf_graph_free(g);
}

static void test_rules(void)
{
    kf_dim n = KF_SYM("n"), m = KF_SYM("m"), four = KF_DIM(4), one = KF_DIM(1);
    kf_dim nm[2] = { n, m }, mn[2] = { m, n }, n1[2] = { n, one };
    kf_graph *g;

    g = kf_graph_new("g");
    kf_binary(g, KF_OP_ADD, kf_input(g, "x", KF_F32, 1, &n), kf_input(g, "y", KF_F32, 1, &m));
    expect_fail(g, KF_ERR_SHAPE, "two different symbols never broadcast");

    g = kf_graph_new("g");
    kf_binary(g, KF_OP_ADD, kf_input(g, "x", KF_F32, 1, &n), kf_input(g, "y", KF_F32, 1, &four));
    expect_fail(g, KF_ERR_SHAPE, "do not broadcast");

    g = kf_graph_new("g");
    kf_node a = kf_input(g, "x", KF_F32, 2, n1), b = kf_input(g, "y", KF_F32, 2, nm);
    kf_node s = kf_binary(g, KF_OP_MUL, a, b);
    CHECK(kf_node_rank(g, s) == 2);
    kf_dim d;
    kf_node_dim(g, s, 1, &d);
    CHECK(d.sym && strcmp(d.sym, "m") == 0);
    kf_output(g, s, "s");
    CHECK_STATUS(kf_graph_verify(g), KF_OK);
    kf_graph_free(g);

    g = kf_graph_new("g");
    kf_node bx = kf_input(g, "x", KF_BOOL, 1, &n);
    kf_binary(g, KF_OP_ADD, bx, bx);
    expect_fail(g, KF_ERR_TYPE, "numeric dtype");

    g = kf_graph_new("g");
    kf_unary(g, KF_OP_SQRT, kf_input(g, "x", KF_I32, 1, &n));
    expect_fail(g, KF_ERR_TYPE, "float dtype");

    g = kf_graph_new("g");
    kf_node fx = kf_input(g, "x", KF_F32, 1, &n);
    kf_binary(g, KF_OP_SHL, fx, fx);
    expect_fail(g, KF_ERR_TYPE, "integer dtype");

    g = kf_graph_new("g");
    kf_node ix = kf_input(g, "x", KF_I32, 1, &n);
    kf_ternary(g, KF_OP_SELECT, ix, ix, ix);
    expect_fail(g, KF_ERR_TYPE, "condition must be bool");

    g = kf_graph_new("g");
    kf_node cmp = kf_binary(g, KF_OP_LT, kf_input(g, "x", KF_I32, 1, &n), kf_lit_i(g, KF_I32, 3));
    CHECK(kf_node_dtype(g, cmp) == KF_BOOL);
    kf_node sel = kf_ternary(g, KF_OP_SELECT, cmp, kf_lit_f(g, KF_F64, 1.5), kf_input(g, "v", KF_F64, 2, mn));
    CHECK(kf_node_rank(g, sel) == 2);
    kf_output(g, sel, "r");
    CHECK_STATUS(kf_graph_verify(g), KF_OK);
    kf_graph_free(g);

    /* reductions */
    g = kf_graph_new("g");
    kf_node m2 = kf_input(g, "x", KF_F32, 2, nm);
    int ax1 = 1, axm1 = -1, ax5 = 5, both[2] = { 0, 0 };
    kf_node r = kf_reduce(g, KF_OP_RMAX, m2, 1, &ax1, false);
    CHECK(kf_node_rank(g, r) == 1);
    kf_node ar = kf_reduce(g, KF_OP_ARGMAX, m2, 1, &axm1, true);
    CHECK(kf_node_dtype(g, ar) == KF_I64 && kf_node_rank(g, ar) == 2);
    kf_node all = kf_reduce(g, KF_OP_SUM, m2, 0, NULL, false);
    CHECK(kf_node_rank(g, all) == 0);
    kf_output(g, r, "r");
    kf_output(g, ar, "i");
    kf_output(g, all, "s");
    CHECK_STATUS(kf_graph_verify(g), KF_OK);
    kf_graph_free(g);

    g = kf_graph_new("g");
    kf_reduce(g, KF_OP_SUM, kf_input(g, "x", KF_F32, 2, nm), 1, &ax5, false);
    expect_fail(g, KF_ERR_SHAPE, "axis 5 out of range for rank 2");
    g = kf_graph_new("g");
    kf_reduce(g, KF_OP_SUM, kf_input(g, "x", KF_F32, 2, nm), 2, both, false);
    expect_fail(g, KF_ERR_SHAPE, "given twice");
    g = kf_graph_new("g");
    kf_reduce(g, KF_OP_MEAN, kf_input(g, "x", KF_I32, 2, nm), 0, NULL, false);
    expect_fail(g, KF_ERR_TYPE, "float dtype");
    g = kf_graph_new("g");
    kf_reduce(g, KF_OP_ADD, kf_input(g, "x", KF_I32, 2, nm), 0, NULL, false);
    expect_fail(g, KF_ERR_INVALID_ARG, "not a reduction");

    /* take and iota */
    g = kf_graph_new("g");
    kf_node v = kf_input(g, "v", KF_F64, 1, &m), p = kf_input(g, "p", KF_I64, 2, nm);
    kf_node t = kf_take(g, v, p);
    CHECK(kf_node_dtype(g, t) == KF_F64 && kf_node_rank(g, t) == 2);
    kf_node io = kf_iota(g, KF_F64, 2, nm, -1);
    kf_output(g, kf_binary(g, KF_OP_ADD, t, io), "w");
    CHECK_STATUS(kf_graph_verify(g), KF_OK);
    kf_graph_free(g);
    g = kf_graph_new("g");
    kf_take(g, kf_input(g, "v", KF_F64, 1, &m), kf_input(g, "p", KF_F32, 1, &n));
    expect_fail(g, KF_ERR_TYPE, "integer dtype");
    g = kf_graph_new("g");
    kf_take(g, kf_input(g, "v", KF_F64, 2, nm), kf_input(g, "p", KF_I32, 1, &n));
    expect_fail(g, KF_ERR_SHAPE, "must be 1-D");
    g = kf_graph_new("g");
    kf_iota(g, KF_F32, 1, &n, 1);
    expect_fail(g, KF_ERR_SHAPE, "axis 1 out of range");
    g = kf_graph_new("g");
    kf_iota(g, KF_BOOL, 1, &n, 0);
    expect_fail(g, KF_ERR_TYPE, "not bool");

    /* literals */
    g = kf_graph_new("g");
    CHECK(kf_lit_i(g, KF_I8, 127) != KF_NONE);
    CHECK(kf_lit_f(g, KF_F32, 0.5) == kf_lit_f(g, KF_F32, 0.5)); /* interned */
    CHECK(kf_lit_f(g, KF_F32, 0.5) != kf_lit_f(g, KF_F64, 0.5));
    CHECK(kf_lit_u(g, KF_U64, UINT64_MAX) != KF_NONE);
    kf_lit_i(g, KF_I8, 128);
    expect_fail(g, KF_ERR_TYPE, "out of range for i8");
    g = kf_graph_new("g");
    kf_lit_f(g, KF_I32, 0.5);
    expect_fail(g, KF_ERR_TYPE, "not an integer");
    g = kf_graph_new("g");
    kf_lit_i(g, KF_BOOL, 2);
    expect_fail(g, KF_ERR_TYPE, "out of range for bool");

    /* names and outputs */
    g = kf_graph_new("g");
    kf_node x1 = kf_input(g, "x", KF_F32, 1, &n);
    kf_input(g, "x", KF_F32, 1, &n);
    expect_fail(g, KF_ERR_NAME, "duplicate name 'x'");
    g = kf_graph_new("g");
    kf_input(g, "f32", KF_F32, 1, &n);
    expect_fail(g, KF_ERR_NAME, "not a valid name");
    g = kf_graph_new("g");
    x1 = kf_input(g, "x", KF_F32, 1, &n);
    kf_output(g, x1, "y");
    expect_fail(g, KF_ERR_NAME, "cannot be renamed");
    g = kf_graph_new("g");
    x1 = kf_input(g, "x", KF_F32, 1, &n);
    CHECK_STATUS(kf_output(g, x1, NULL), KF_OK);
    kf_output(g, x1, NULL);
    expect_fail(g, KF_ERR_NAME, "already an output");
    g = kf_graph_new("g");
    kf_input(g, "x", KF_F32, 1, &n);
    expect_fail(g, KF_ERR_INVALID_ARG, "no outputs");
    g = kf_graph_new("g");
    kf_binary(g, KF_OP_ADD, 0, 7);
    expect_fail(g, KF_ERR_INVALID_ARG, "not a node of this graph");
    g = kf_graph_new("g");
    kf_apply(g, KF_OP_SUM, 1, (kf_node[]){ 0 });
    expect_fail(g, KF_ERR_INVALID_ARG, "not an elementwise op");
    g = kf_graph_new("g");
    kf_dim bad[1] = { { -3, NULL } };
    kf_input(g, "x", KF_F32, 1, bad);
    expect_fail(g, KF_ERR_SHAPE, "negative size");
    g = kf_graph_new("g");
    kf_input(g, "x", KF_F32, 9, NULL);
    expect_fail(g, KF_ERR_SHAPE, "rank 9");
    g = kf_graph_new("1bad");
    expect_fail(g, KF_ERR_NAME, "not an identifier");

    /* NULL graph is an error, not a crash */
    CHECK(kf_input(NULL, "x", KF_F32, 0, NULL) == KF_NONE);
    CHECK_STATUS(kf_graph_verify(NULL), KF_ERR_INVALID_ARG);
    CHECK(kf_dtype_name((kf_dtype)99) == NULL && kf_dtype_size(KF_BF16) == 2);
}

/* A corrupted node (as memory damage or a bad front-end could leave) is
 * caught by the verifier, not trusted. */
static void test_verify_catches_corruption(void)
{
    kf_graph *g = build_x5("x5", "x", "n", "a", false);
    g->nodes[2].dtype = KF_F64;
    CHECK_STATUS(kf_graph_verify(g), KF_ERR_INVALID_ARG);
    CHECK(kf_graph_error_node(g) == 2);
    kf_graph_free(g);
    g = build_x5("x5", "x", "n", "a", false);
    g->nodes[3].rank = 2;
    g->nodes[3].dims[1] = 3;
    CHECK_STATUS(kf_graph_verify(g), KF_ERR_INVALID_ARG);
    CHECK_CONTAINS(kf_graph_error(g), "disagrees");
    kf_graph_free(g);
}

/* A graph with many nodes and a long dependency chain: building, verifying
 * and hashing are iterative and linear. */
static void test_large(void)
{
    kf_graph *g = kf_graph_new("chain");
    kf_dim n = KF_SYM("n");
    kf_node x = kf_input(g, "x", KF_F32, 1, &n);
    for (int i = 0; i < 200000; i++)
        x = kf_binary(g, KF_OP_ADD, x, kf_lit_f(g, KF_F32, (double)(i % 7)));
    kf_output(g, x, "y");
    CHECK_STATUS(kf_graph_verify(g), KF_OK);
    CHECK(kf_graph_num_nodes(g) == 200000 + 1 + 7);
    kf_hash h;
    CHECK_STATUS(kf_graph_hash(g, &h), KF_OK);
    kf_graph_free(g);
}

/* kf_graph_hash remembers its result; appending to the graph must not
 * return the remembered one. */
static void test_hash_after_append(void)
{
    kf_dim n = KF_SYM("n");
    kf_graph *g = kf_graph_new("g"), *fresh = kf_graph_new("g");
    kf_node x = kf_input(g, "x", KF_F32, 1, &n), fx = kf_input(fresh, "x", KF_F32, 1, &n);
    kf_node y = kf_binary(g, KF_OP_ADD, x, x), fy = kf_binary(fresh, KF_OP_ADD, fx, fx);
    CHECK_STATUS(kf_output(g, y, "y"), KF_OK);
    CHECK_STATUS(kf_output(fresh, fy, "y"), KF_OK);
    kf_hash before = hash_of(g), again = hash_of(g);
    CHECK(hash_eq(before, again));
    kf_node z = kf_binary(g, KF_OP_MUL, y, x);
    CHECK_STATUS(kf_output(g, z, "z"), KF_OK);
    CHECK_STATUS(kf_output(fresh, kf_binary(fresh, KF_OP_MUL, fy, fx), "z"), KF_OK);
    kf_hash after = hash_of(g), want = hash_of(fresh);
    CHECK(!hash_eq(after, before));
    CHECK(hash_eq(after, want));
    kf_graph *c = kf_graph_clone(g);
    kf_hash ch = hash_of(c);
    CHECK(hash_eq(ch, want));
    kf_graph_free(c);
    kf_graph_free(g);
    kf_graph_free(fresh);
}

int main(void)
{
    test_hash_after_append();
    test_build_x5();
    test_hash_invariance();
    test_hash_stable();
    test_sticky_errors();
    test_rules();
    test_verify_catches_corruption();
    test_large();
    return kf_test_done();
}
