/* Fusion passes: fold, cse, dce, partition and schedule through kf_fuse.
 * Golden plans: every fuse/NAME.kir is fused graph by graph and compared
 * with fuse/NAME.plan (kf_plan_print of each graph, in order);
 * KFUSE_GOLDEN_UPDATE=1 rewrites the .plan files.  Every golden graph is
 * also checked semantically: the original graph, the optimised graph and
 * the plan run kernel by kernel (each kernel as a graph of its own) give
 * bit-identical outputs under the reference interpreter. */
#include "cache.h"
#include "check.h"
#include "codegen.h"
#include "half.h"
#include "plan.h"

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* -- Failing allocator ------------------------------------------------------------------ *
 * The test links with -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc, so
 * every allocation of the library (and of this file) comes through here;
 * fail_at = N makes the Nth from now fail (0: none fails). */

static long fail_at, alloc_count;
static bool alloc_failed;

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t m);
void *__wrap_realloc(void *p, size_t n);

static bool fail_now(void)
{
    if (fail_at <= 0 || ++alloc_count != fail_at)
        return false;
    alloc_failed = true;
    return true;
}
void *__wrap_malloc(size_t n) { return fail_now() ? NULL : __real_malloc(n); }
void *__wrap_calloc(size_t n, size_t m) { return fail_now() ? NULL : __real_calloc(n, m); }
void *__wrap_realloc(void *p, size_t n) { return fail_now() ? NULL : __real_realloc(p, n); }

/* -- Helpers ------------------------------------------------------------------------ */

static char *plan_text(const kf_plan *p)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    kf_plan_print(p, f);
    fclose(f);
    return buf;
}

static kf_status fuse(const kf_graph *g, const kf_fuse_options *opt, const char *stop, kf_pipeline *p)
{
    kf_status s = kf_fuse(g, opt, stop, p);
    CHECK_MSG(s == KF_OK, "kf_fuse(%s, stop %s): %s: %s", kf_graph_name(g), stop ? stop : "-", kf_status_string(s),
              p->err);
    return s;
}

/* Space-separated names of v[0..n). */
static const char *names(const kf_graph *g, const int32_t *v, int32_t n)
{
    static char buf[4096];
    size_t o = 0;
    buf[0] = 0;
    for (int32_t i = 0; i < n && o < sizeof buf - 200; i++) {
        char nm[128];
        kf_fuse_node_name(g, v[i], nm, sizeof nm);
        o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%s", i ? " " : "", nm);
    }
    return buf;
}

#define CHECK_NAMES(g, v, n, want) CHECK_MSG(strcmp(names(g, v, n), want) == 0, "got '%s', want '%s'", names(g, v, n), want)

static kf_dim sym(const char *s) { return KF_SYM(s); }

/* -- Evaluation ------------------------------------------------------------------------ */

/* Size every symbol gets in the semantic checks: 2..7, from its name. */
static int64_t sym_size(const char *name)
{
    unsigned h = 0;
    for (const char *c = name; *c; c++)
        h = h * 31 + (unsigned char)*c;
    return 2 + h % 6;
}

static uint64_t next_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static int64_t numel_of(const kf_host_array *a)
{
    int64_t n = 1;
    for (int i = 0; i < a->rank; i++)
        n *= a->shape[i];
    return n;
}

/* Random finite data for an array of g's node x. */
static bool make_array(const kf_graph *g, const kf_irnode *x, uint64_t *seed, kf_host_array *a)
{
    memset(a, 0, sizeof *a);
    a->dtype = (kf_dtype)x->dtype;
    a->rank = x->rank;
    for (int i = 0; i < x->rank; i++)
        a->shape[i] = x->dims[i] >= 0 ? x->dims[i] : sym_size(g->syms[KF_IR_SYM_INDEX(x->dims[i])]);
    int64_t n = numel_of(a);
    size_t size = kf_dtype_size(a->dtype);
    a->data = calloc((size_t)(n > 0 ? n : 1), size);
    if (!a->data)
        return false;
    for (int64_t i = 0; i < n; i++) {
        uint64_t r = next_rand(seed);
        int64_t si = (int64_t)(r % 17) - 8;
        uint64_t ui = r % 17;
        double f = ((double)(r % 4001) - 2000.0) / 1000.0;
        unsigned char *p = (unsigned char *)a->data + (size_t)i * size;
        switch (a->dtype) {
        case KF_BOOL: p[0] = r & 1; break;
        case KF_I8: { int8_t v = (int8_t)si; memcpy(p, &v, 1); break; }
        case KF_I16: { int16_t v = (int16_t)si; memcpy(p, &v, 2); break; }
        case KF_I32: { int32_t v = (int32_t)si; memcpy(p, &v, 4); break; }
        case KF_I64: memcpy(p, &si, 8); break;
        case KF_U8: { uint8_t v = (uint8_t)ui; memcpy(p, &v, 1); break; }
        case KF_U16: { uint16_t v = (uint16_t)ui; memcpy(p, &v, 2); break; }
        case KF_U32: { uint32_t v = (uint32_t)ui; memcpy(p, &v, 4); break; }
        case KF_U64: memcpy(p, &ui, 8); break;
        case KF_F16: { uint16_t v = kf_f32_to_f16((float)f); memcpy(p, &v, 2); break; }
        case KF_BF16: { uint16_t v = kf_f32_to_bf16((float)f); memcpy(p, &v, 2); break; }
        case KF_F32: { float v = (float)f; memcpy(p, &v, 4); break; }
        case KF_F64: memcpy(p, &f, 8); break;
        default: break;
        }
    }
    return true;
}

static void free_arrays(kf_host_array *a, int n)
{
    for (int i = 0; i < n; i++) {
        free(a[i].data);
        a[i].data = NULL;
    }
}

static bool make_inputs(const kf_graph *g, uint64_t seed, kf_host_array *in)
{
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
    for (int i = 0; i < g->ninputs; i++)
        if (!make_array(g, &g->nodes[g->inputs[i]], &s, &in[i]))
            return false;
    return true;
}

/* Bit-identical arrays; with nan_any, any NaN equals any NaN. */
static bool arrays_equal(const kf_host_array *a, const kf_host_array *b, bool nan_any)
{
    if (a->dtype != b->dtype || a->rank != b->rank || memcmp(a->shape, b->shape, (size_t)a->rank * 8) != 0)
        return false;
    int64_t n = numel_of(a);
    size_t size = kf_dtype_size(a->dtype);
    if (!a->data || !b->data)
        return n == 0;
    if (memcmp(a->data, b->data, (size_t)n * size) == 0)
        return true;
    if (!nan_any)
        return false;
    for (int64_t i = 0; i < n; i++) {
        const unsigned char *p = (const unsigned char *)a->data + i * (int64_t)size;
        const unsigned char *q = (const unsigned char *)b->data + i * (int64_t)size;
        if (memcmp(p, q, size) == 0)
            continue;
        double x, y;
        if (a->dtype == KF_F32) {
            float u, v;
            memcpy(&u, p, 4);
            memcpy(&v, q, 4);
            x = u;
            y = v;
        } else if (a->dtype == KF_F64) {
            memcpy(&x, p, 8);
            memcpy(&y, q, 8);
        } else {
            return false;
        }
        if (!(isnan(x) && isnan(y)))
            return false;
    }
    return true;
}

/* kf_interpret; a take index out of range (KF_ERR_INDEX) still counts, and
 * sets *index when index is not NULL. */
static bool interpret(const kf_graph *g, const kf_host_array *in, kf_host_array *out, bool *index)
{
    char err[512];
    kf_status s = kf_interpret(g, in, g->ninputs, out, g->noutputs, err, sizeof err);
    CHECK_MSG(s == KF_OK || s == KF_ERR_INDEX, "interpret %s: %s: %s", g->name, kf_status_string(s), err);
    if (index)
        *index = s == KF_ERR_INDEX;
    return s == KF_OK || s == KF_ERR_INDEX;
}

static kf_node copy_lit(kf_graph *sub, const kf_irnode *c)
{
    kf_dtype t = (kf_dtype)c->dtype;
    return kf_dt_is_float(t) ? kf_lit_f(sub, t, c->lit.f) : kf_dt_is_sint(t) ? kf_lit_i(sub, t, c->lit.i)
                                                                                : kf_lit_u(sub, t, c->lit.u);
}

static kf_node sub_input(kf_graph *sub, const kf_graph *g, const char *name, const kf_irnode *x)
{
    if (x->scalar)
        return kf_scalar(sub, name, (kf_dtype)x->dtype);
    kf_dim d[KF_MAX_RANK];
    for (int i = 0; i < x->rank; i++)
        d[i] = x->dims[i] >= 0 ? KF_DIM(x->dims[i]) : KF_SYM(g->syms[KF_IR_SYM_INDEX(x->dims[i])]);
    return kf_input(sub, name, (kf_dtype)x->dtype, x->rank, d);
}

/* Run plan pl kernel by kernel, each kernel as a graph of its own whose
 * inputs are the kernel's args and scalars (plus one array per symbol, so
 * every symbol is bound), on the graph inputs 'in'.  Fills out[] (one per
 * graph output, owned by the caller) and *index (some kernel had a take
 * index out of range); false when something does not fit. */
static bool simulate(const kf_plan *pl, const kf_host_array *in, kf_host_array *out, bool *index)
{
    *index = false;
    const kf_graph *g = pl->g;
    int32_t nn = g->nnodes;
    kf_host_array *mem = calloc((size_t)nn + 1, sizeof *mem);       /* node -> array (borrowed) */
    kf_host_array *written = calloc((size_t)nn + 1, sizeof *written); /* node -> array (owned) */
    int32_t *map = malloc(((size_t)nn + 1) * sizeof *map);
    bool ok = mem && written && map;
    for (int i = 0; ok && i < g->ninputs; i++)
        mem[g->inputs[i]] = in[i];
    for (int32_t ki = 0; ok && ki < pl->nkernels; ki++) {
        const kf_kernel *k = &pl->kernels[ki];
        kf_graph *sub = kf_graph_new("kernel");
        for (int32_t i = 0; i < g->nsyms; i++)
            kf_ir_symbol(sub, g->syms[i], strlen(g->syms[i]));
        for (int32_t i = 0; i < nn; i++)
            map[i] = KF_NONE;
        int nin = k->nargs + k->nscalars + g->nsyms;
        kf_host_array *ins = calloc((size_t)nin + 1, sizeof *ins);
        kf_host_array *outs = calloc((size_t)k->nouts + 1, sizeof *outs);
        int j = 0;
        char nm[32];
        for (int32_t i = 0; i < k->nargs; i++, j++) {
            int32_t a = k->args[i];
            snprintf(nm, sizeof nm, "a%d", (int)i);
            map[a] = sub_input(sub, g, nm, &g->nodes[a]);
            ok &= mem[a].data != NULL || numel_of(&mem[a]) == 0;
            CHECK_MSG(mem[a].data != NULL, "kernel %d reads %s before it is written", (int)ki, names(g, &a, 1));
            ins[j] = mem[a];
        }
        for (int32_t i = 0; i < k->nscalars; i++, j++) {
            int32_t a = k->scalars[i];
            snprintf(nm, sizeof nm, "s%d", (int)i);
            map[a] = sub_input(sub, g, nm, &g->nodes[a]);
            ins[j] = mem[a];
        }
        uint8_t *dummy = NULL;
        size_t dsize = 0;
        for (int32_t i = 0; i < g->nsyms; i++)
            if ((size_t)sym_size(g->syms[i]) > dsize)
                dsize = (size_t)sym_size(g->syms[i]);
        dummy = calloc(dsize + 1, 1);
        for (int32_t i = 0; i < g->nsyms; i++, j++) {
            snprintf(nm, sizeof nm, "z%d", (int)i);
            kf_dim d = KF_SYM(g->syms[i]);
            kf_input(sub, nm, KF_U8, 1, &d);
            ins[j] = (kf_host_array){ .data = dummy, .dtype = KF_U8, .rank = 1, .shape = { sym_size(g->syms[i]) } };
        }
        for (int32_t i = 0; i < k->nnodes; i++) {
            int32_t n = k->nodes[i];
            kf_irnode q = g->nodes[n];
            q.name = NULL;
            for (int a = 0; a < q.nargs; a++) {
                int32_t o = q.args[a];
                if (map[o] == KF_NONE && g->nodes[o].op == KF_OP_CONST)
                    map[o] = copy_lit(sub, &g->nodes[o]);
                CHECK_MSG(map[o] != KF_NONE, "kernel %d: operand %s of %s is not available", (int)ki,
                          names(g, &o, 1), names(g, &n, 1));
                q.args[a] = map[o];
            }
            map[n] = kf_ir_add(sub, &q);
        }
        for (int32_t i = 0; i < k->nouts; i++) {
            int32_t o = k->outs[i];
            if (map[o] == KF_NONE && g->nodes[o].op == KF_OP_CONST)
                map[o] = copy_lit(sub, &g->nodes[o]);
            snprintf(nm, sizeof nm, "o%d", (int)i);
            kf_output(sub, map[o], g->nodes[o].op == KF_OP_INPUT ? NULL : nm);
        }
        ok &= kf_graph_status(sub) == KF_OK;
        CHECK_MSG(kf_graph_status(sub) == KF_OK, "kernel %d as a graph: %s", (int)ki, kf_graph_error(sub));
        if (ok) {
            char err[512];
            kf_status s = kf_interpret(sub, ins, nin, outs, k->nouts, err, sizeof err);
            ok = s == KF_OK || s == KF_ERR_INDEX;
            *index = *index || s == KF_ERR_INDEX;
            CHECK_MSG(ok, "kernel %d: %s", (int)ki, err);
        }
        for (int32_t i = 0; ok && i < k->nouts; i++) {
            int32_t o = k->outs[i];
            written[o] = outs[i];
            if (g->nodes[o].op != KF_OP_INPUT)
                mem[o] = outs[i];
        }
        if (!ok)
            free_arrays(outs, k->nouts);
        free(dummy);
        free(ins);
        free(outs);
        kf_graph_free(sub);
    }
    for (int i = 0; ok && i < g->noutputs; i++) {
        out[i] = written[g->outputs[i]];
        written[g->outputs[i]].data = NULL;
    }
    if (written)
        for (int32_t i = 0; i < nn; i++)
            free(written[i].data);
    free(mem);
    free(written);
    free(map);
    return ok;
}

/* The semantic checks on graph g and its pipeline result p (run to the
 * end): the optimised graph and the plan reproduce g's outputs.  bits:
 * bit for bit against g (else any NaN matches any NaN there; against the
 * optimised graph the plan must always match bit for bit). */
static void check_semantics(const kf_graph *g, const kf_pipeline *p, uint64_t seed, bool bits)
{
    int ni = g->ninputs, no = g->noutputs;
    kf_host_array *in = calloc((size_t)ni + 1, sizeof *in);
    kf_host_array *ref = calloc((size_t)no + 1, sizeof *ref);
    kf_host_array *opt = calloc((size_t)no + 1, sizeof *opt);
    kf_host_array *sim = calloc((size_t)no + 1, sizeof *sim);
    bool xref, xopt, xsim;   /* a take index out of range */
    if (make_inputs(g, seed, in) && interpret(g, in, ref, &xref) && interpret(p->g, in, opt, &xopt)) {
        for (int i = 0; i < no; i++)
            CHECK_MSG(arrays_equal(&ref[i], &opt[i], !bits), "%s: output %d differs after fold/cse/dce", g->name, i);
        CHECK_MSG(xref == xopt, "%s: index out of range %d, after fold/cse/dce %d", g->name, xref, xopt);
        if (p->plan && simulate(p->plan, in, sim, &xsim)) {
            for (int i = 0; i < no; i++)
                CHECK_MSG(arrays_equal(&opt[i], &sim[i], false), "%s: output %d differs when run kernel by kernel",
                          g->name, i);
            CHECK_MSG(xref == xsim, "%s: index out of range %d, kernel by kernel %d", g->name, xref, xsim);
        }
    }
    free_arrays(in, ni);
    free_arrays(ref, no);
    free_arrays(opt, no);
    free_arrays(sim, no);
    free(in);
    free(ref);
    free(opt);
    free(sim);
}

static bool hash_eq(const kf_graph *a, const kf_graph *b)
{
    kf_hash x, y;
    return kf_graph_hash(a, &x) == KF_OK && kf_graph_hash(b, &y) == KF_OK && x.lo == y.lo && x.hi == y.hi;
}

/* Codegen accepts every kernel of the plan, and its exact CUDA parameter
 * bytes are within what partition counted. */
static void check_codegen(const kf_plan *pl)
{
    kf_cg_kabi *a = malloc(sizeof *a);
    if (!a)
        return;
    for (int32_t i = 0; i < pl->nkernels; i++) {
        char err[512];
        kf_status s = kf_cg_kernel_abi(pl, (int)i, false, a, err, sizeof err);
        CHECK_MSG(s == KF_OK, "%s: kernel %d: codegen: %s", pl->g->name, (int)i, err);
        if (s == KF_OK)
            CHECK_MSG(a->param_bytes <= kf_kernel_param_bytes(pl->g, &pl->kernels[i]),
                      "%s: kernel %d: codegen needs %zu parameter bytes, partition counted %u", pl->g->name, (int)i,
                      a->param_bytes, kf_kernel_param_bytes(pl->g, &pl->kernels[i]));
    }
    free(a);
}

/* Fuse g fully, check the plan and semantics; returns the pipeline. */
static kf_status fuse_checked(const kf_graph *g, const kf_fuse_options *opt, kf_pipeline *p)
{
    kf_status s = fuse(g, opt, NULL, p);
    if (s != KF_OK)
        return s;
    char err[512];
    kf_status c = kf_plan_check(p->plan, &p->opt, err, sizeof err);
    CHECK_MSG(c == KF_OK, "%s: %s", g->name, err);
    check_semantics(g, p, 7, true);
    check_codegen(p->plan);
    return s;
}

/* -- Graphs built in C -------------------------------------------------------------------- */

static kf_graph *build_x5(void)
{
    kf_graph *g = kf_graph_new("x5");
    kf_dim n = sym("n");
    kf_node x = kf_input(g, "x", KF_F32, 1, &n);
    kf_node a = kf_binary(g, KF_OP_ADD, x, x);
    kf_node b = kf_binary(g, KF_OP_ADD, a, x);
    kf_node c = kf_binary(g, KF_OP_ADD, b, x);
    kf_output(g, kf_binary(g, KF_OP_ADD, c, x), "y");
    return g;
}

static void test_x5(void)
{
    kf_graph *g = build_x5();
    kf_pipeline p;
    if (fuse_checked(g, NULL, &p) == KF_OK) {
        const kf_plan *pl = p.plan;
        CHECK(pl->nkernels == 1);
        CHECK(pl->nstored == 0);
        const kf_kernel *k = &pl->kernels[0];
        CHECK(k->kind == KF_KERNEL_EW);
        CHECK_NAMES(pl->g, k->args, k->nargs, "x");
        CHECK_NAMES(pl->g, k->outs, k->nouts, "y");
        CHECK(k->nnodes == 4 && k->nops == 4 && !k->has_take && k->nscalars == 0);
        CHECK(p.g == pl->g);
        char *t = plan_text(pl);
        CHECK_CONTAINS(t, "plan x5: 1 kernel, 0 stored\nkernel 0 ew space=y[n] ops=4");
        CHECK_CONTAINS(t, "  reads x[n]\n  writes y[n]\n  nodes _1 _2 _3 y\n");
        free(t);
        /* the graph's 4 adds are all still there: fold leaves floats alone */
        int adds = 0;
        for (int32_t i = 0; i < pl->g->nnodes; i++)
            adds += pl->g->nodes[i].op == KF_OP_ADD;
        CHECK(adds == 4);
    }
    kf_pipeline_clear(&p);
    kf_pipeline_clear(&p); /* twice is fine */
    kf_graph_free(g);
}

static void test_saxpy_scalar(void)
{
    kf_graph *g = kf_graph_new("saxpy");
    kf_dim n = sym("n");
    kf_node alpha = kf_scalar(g, "alpha", KF_F32);
    kf_node x = kf_input(g, "x", KF_F32, 1, &n);
    kf_node y = kf_input(g, "y", KF_F32, 1, &n);
    kf_output(g, kf_binary(g, KF_OP_ADD, kf_binary(g, KF_OP_MUL, alpha, x), y), "z");
    kf_pipeline p;
    if (fuse_checked(g, NULL, &p) == KF_OK) {
        const kf_kernel *k = &p.plan->kernels[0];
        CHECK(p.plan->nkernels == 1);
        CHECK_NAMES(p.g, k->args, k->nargs, "x y");
        CHECK_NAMES(p.g, k->scalars, k->nscalars, "alpha");
        /* 2 pointers + meta (1 + 1 + 3 + 3) words + 1 scalar */
        CHECK(kf_kernel_param_bytes(p.g, k) == 8 * 3 + 8 * (1 + 1 + 3 * 1 + 3) + 8);
    }
    kf_pipeline_clear(&p);
    kf_graph_free(g);
}

/* Outputs that are leaves: an input, a scalar and a literal are written by
 * EW kernels that copy or fill them. */
static void test_leaf_outputs(void)
{
    kf_graph *g = kf_graph_new("leaves");
    kf_dim n = sym("n");
    kf_node x = kf_input(g, "x", KF_F32, 1, &n);
    kf_node a = kf_scalar(g, "a", KF_F64);
    kf_output(g, x, NULL);
    kf_output(g, a, NULL);
    kf_output(g, kf_lit_i(g, KF_I32, 42), "c");
    kf_output(g, kf_binary(g, KF_OP_MUL, x, x), "y");
    kf_pipeline p;
    if (fuse_checked(g, NULL, &p) == KF_OK) {
        const kf_plan *pl = p.plan;
        CHECK(pl->nkernels == 2); /* [n]: x and y; []: a and c */
        const kf_kernel *k0 = &pl->kernels[0], *k1 = &pl->kernels[1];
        CHECK_NAMES(pl->g, k0->outs, k0->nouts, "x y");
        CHECK_NAMES(pl->g, k0->args, k0->nargs, "x");
        CHECK_NAMES(pl->g, k1->outs, k1->nouts, "a c");
        CHECK_NAMES(pl->g, k1->scalars, k1->nscalars, "a");
        CHECK(k1->nnodes == 0 && k1->nargs == 0);
    }
    kf_pipeline_clear(&p);
    kf_graph_free(g);
}

/* A chain of n ops on x: alternately add and mul by literals. */
static kf_graph *build_chain(const char *name, int n)
{
    kf_graph *g = kf_graph_new(name);
    kf_dim d = sym("n");
    kf_node v = kf_input(g, "x", KF_F32, 1, &d);
    kf_node x = v;
    for (int i = 0; i < n; i++)
        v = kf_binary(g, i % 3 == 2 ? KF_OP_SUB : i % 2 ? KF_OP_MUL : KF_OP_ADD, v,
                      i % 3 == 2 ? x : kf_lit_f(g, KF_F32, 0.5 + (i % 7)));
    kf_output(g, v, "y");
    return g;
}

static void test_chains(void)
{
    kf_graph *g40 = build_chain("chain40", 40);
    kf_pipeline p;
    if (fuse_checked(g40, NULL, &p) == KF_OK) {
        CHECK(p.plan->nkernels == 1);
        CHECK(p.plan->kernels[0].nops == 40);
        CHECK_NAMES(p.g, p.plan->kernels[0].args, p.plan->kernels[0].nargs, "x");
    }
    kf_pipeline_clear(&p);
    kf_graph_free(g40);

    /* 600 ops with max_ops 512: split in order, each part within the limit */
    kf_graph *g600 = build_chain("chain600", 600);
    if (fuse_checked(g600, NULL, &p) == KF_OK) {
        const kf_plan *pl = p.plan;
        CHECK(pl->nkernels == 2);
        CHECK(pl->nstored == 1);
        uint32_t total = 0;
        for (int32_t i = 0; i < pl->nkernels; i++) {
            CHECK(pl->kernels[i].nops <= 512);
            total += pl->kernels[i].nops;
        }
        CHECK(total == 600);
        /* the second kernel reads what the first stored */
        CHECK(pl->nkernels == 2 && pl->kernels[0].outs[0] == pl->stored[0] &&
              pl->kernels[1].args[pl->kernels[1].nargs - 1] == pl->stored[0]);
    }
    kf_pipeline_clear(&p);

    /* tiny limits: many kernels, still a correct plan */
    kf_fuse_options o = { .max_ops = 7 };
    if (fuse_checked(g600, &o, &p) == KF_OK) {
        CHECK(p.plan->nkernels >= 600 / 7);
        for (int32_t i = 0; i < p.plan->nkernels; i++)
            CHECK(p.plan->kernels[i].nops <= 7);
    }
    kf_pipeline_clear(&p);
    kf_graph_free(g600);
}

/* 60 inputs added together: the parameter block is over 4000 bytes at rank
 * 8, so the sum splits. */
static void test_many_inputs(void)
{
    kf_graph *g = kf_graph_new("sum60");
    kf_dim d[8] = { KF_DIM(2), KF_DIM(1), KF_DIM(2), KF_DIM(1), KF_DIM(1), KF_DIM(2), KF_DIM(1), sym("n") };
    kf_node acc = KF_NONE;
    for (int i = 0; i < 60; i++) {
        char nm[16];
        snprintf(nm, sizeof nm, "x%d", i);
        kf_node x = kf_input(g, nm, KF_F32, 8, d);
        acc = acc == KF_NONE ? x : kf_binary(g, KF_OP_ADD, acc, x);
    }
    kf_output(g, acc, "y");
    kf_pipeline p;
    if (fuse_checked(g, NULL, &p) == KF_OK) {
        const kf_plan *pl = p.plan;
        CHECK(pl->nkernels >= 2);
        int32_t reads = 0;
        for (int32_t i = 0; i < pl->nkernels; i++) {
            CHECK(kf_kernel_param_bytes(pl->g, &pl->kernels[i]) <= 4000);
            reads += pl->kernels[i].nargs;
        }
        CHECK(reads == 60 + pl->nstored);
    }
    kf_pipeline_clear(&p);
    /* the same at rank 1 fits; a small limit splits it again */
    kf_graph *g1 = kf_graph_new("sum60r1");
    kf_dim n = sym("n");
    acc = KF_NONE;
    for (int i = 0; i < 60; i++) {
        char nm[16];
        snprintf(nm, sizeof nm, "x%d", i);
        kf_node x = kf_input(g1, nm, KF_F32, 1, &n);
        acc = acc == KF_NONE ? x : kf_binary(g1, KF_OP_ADD, acc, x);
    }
    kf_output(g1, acc, "y");
    if (fuse_checked(g1, NULL, &p) == KF_OK)
        CHECK(p.plan->nkernels == 1);
    kf_pipeline_clear(&p);
    kf_fuse_options o = { .max_param_bytes = 600 };
    if (fuse_checked(g1, &o, &p) == KF_OK) {
        CHECK(p.plan->nkernels >= 3);
        for (int32_t i = 0; i < p.plan->nkernels; i++)
            CHECK(kf_kernel_param_bytes(p.g, &p.plan->kernels[i]) <= 600);
    }
    kf_pipeline_clear(&p);
    kf_graph_free(g1);
    kf_graph_free(g);
}

/* Many outputs of one shape: a multi-output kernel over the limit divides
 * its outputs first. */
static void test_many_outputs(void)
{
    kf_graph *g = kf_graph_new("outs");
    kf_dim n = sym("n");
    kf_node x = kf_input(g, "x", KF_F32, 1, &n);
    for (int i = 0; i < 40; i++) {
        char nm[16];
        snprintf(nm, sizeof nm, "y%d", i);
        kf_output(g, kf_binary(g, KF_OP_ADD, x, kf_lit_f(g, KF_F32, i)), nm);
    }
    kf_pipeline p;
    if (fuse_checked(g, NULL, &p) == KF_OK)
        CHECK(p.plan->nkernels == 1 && p.plan->kernels[0].nouts == 40);
    kf_pipeline_clear(&p);
    kf_fuse_options o = { .max_param_bytes = 500 };
    if (fuse_checked(g, &o, &p) == KF_OK) {
        CHECK(p.plan->nkernels > 1 && p.plan->nstored == 0);
        int32_t outs = 0;
        for (int32_t i = 0; i < p.plan->nkernels; i++)
            outs += p.plan->kernels[i].nouts;
        CHECK(outs == 40);
    }
    kf_pipeline_clear(&p);
    kf_graph_free(g);
}

/* A kernel that cannot get under the limit fails with a message. */
static void test_unsplittable(void)
{
    kf_graph *g = kf_graph_new("tiny");
    kf_dim n = sym("n");
    kf_node x = kf_input(g, "x", KF_F32, 1, &n);
    kf_output(g, kf_unary(g, KF_OP_EXP, x), "y");
    kf_fuse_options o = { .max_ops = 2 };
    kf_pipeline p;
    CHECK_STATUS(kf_fuse(g, &o, NULL, &p), KF_ERR_LIMIT);
    CHECK_CONTAINS(p.err, "node 'y'");
    CHECK_CONTAINS(p.err, "cannot be split");
    CHECK(p.g == NULL && p.plan == NULL);
    kf_pipeline_clear(&p);
    kf_graph_free(g);
}

/* -- fold -------------------------------------------------------------------------------------------- */

static void test_fold_identities(void)
{
    kf_graph *g = kf_graph_new("ids");
    kf_dim n = sym("n");
    kf_node x = kf_input(g, "x", KF_U16, 1, &n);
    kf_node b = kf_input(g, "b", KF_BOOL, 1, &n);
    kf_node t = kf_binary(g, KF_OP_MUL, x, kf_lit_i(g, KF_U16, 3));
    kf_node v = kf_binary(g, KF_OP_ADD, kf_lit_i(g, KF_U16, 0), t);
    v = kf_binary(g, KF_OP_MUL, kf_lit_i(g, KF_U16, 1), v);
    v = kf_binary(g, KF_OP_AND, v, kf_lit_u(g, KF_U16, 65535));
    v = kf_binary(g, KF_OP_OR, kf_lit_i(g, KF_U16, 0), v);
    v = kf_unary(g, KF_OP_NEG, kf_unary(g, KF_OP_NEG, v));
    kf_output(g, v, "y");
    kf_node c = kf_binary(g, KF_OP_AND, b, kf_lit_i(g, KF_BOOL, 1));
    c = kf_binary(g, KF_OP_XOR, c, kf_lit_i(g, KF_BOOL, 0));
    c = kf_unary(g, KF_OP_NOT, kf_unary(g, KF_OP_NOT, c));
    kf_output(g, kf_binary(g, KF_OP_AND, c, kf_binary(g, KF_OP_OR, b, b)), "z");
    /* and not an identity: x & 255 on u16 */
    kf_output(g, kf_binary(g, KF_OP_AND, x, kf_lit_i(g, KF_U16, 255)), "w");
    kf_pipeline p;
    if (fuse(g, NULL, "fold", &p) == KF_OK) {
        kf_node y = kf_graph_output(p.g, 0);
        CHECK(kf_node_op(p.g, y) == KF_OP_MUL);
        CHECK(strcmp(kf_node_name(p.g, y), "y") == 0);
        CHECK(kf_node_op(p.g, p.g->nodes[y].args[0]) == KF_OP_INPUT);
        kf_node z = kf_graph_output(p.g, 1);
        CHECK(kf_node_op(p.g, z) == KF_OP_AND);
        CHECK(p.g->nodes[z].args[0] == kf_graph_input(p.g, 1)); /* b itself */
        CHECK(kf_node_op(p.g, kf_graph_output(p.g, 2)) == KF_OP_AND);
    }
    kf_pipeline_clear(&p);
    if (fuse_checked(g, NULL, &p) == KF_OK) {
        CHECK(p.plan->nkernels == 1);
        CHECK(p.plan->kernels[0].nops == 4); /* mul, or, and, and */
    }
    kf_pipeline_clear(&p);
    kf_graph_free(g);
}

static void test_fold_floats(void)
{
    kf_graph *g = kf_graph_new("floats");
    kf_dim n = sym("n");
    kf_node x = kf_input(g, "x", KF_F32, 1, &n);
    kf_node s = kf_scalar(g, "s", KF_F64);
    kf_output(g, kf_binary(g, KF_OP_ADD, x, kf_lit_f(g, KF_F32, 0.0)), "a");
    kf_output(g, kf_binary(g, KF_OP_MUL, x, kf_lit_f(g, KF_F32, 1.0)), "b");
    kf_output(g, kf_binary(g, KF_OP_SUB, x, x), "c");
    kf_node t = kf_binary(g, KF_OP_MUL, x, x);
    kf_output(g, kf_binary(g, KF_OP_ADD, kf_binary(g, KF_OP_SUB, t, kf_lit_f(g, KF_F32, 0.0)), x), "d");
    kf_node e = kf_binary(g, KF_OP_SUB, s, s);
    kf_output(g, kf_binary(g, KF_OP_ADD, e, kf_lit_f(g, KF_F64, 2.0)), "e");
    kf_node t0 = kf_take(g, x, kf_input(g, "i", KF_I32, 0, NULL));   /* rank 0, but gathered */
    kf_output(g, kf_binary(g, KF_OP_ADD, kf_binary(g, KF_OP_SUB, t0, t0), kf_lit_f(g, KF_F32, 2.0)), "f");
    int before = kf_graph_num_nodes(g);
    kf_pipeline p;
    if (fuse(g, NULL, "dce", &p) == KF_OK) {
        CHECK(kf_graph_num_nodes(p.g) == before);
        CHECK(hash_eq(g, p.g));
    }
    kf_pipeline_clear(&p);
    /* fast_math: x+0, x*1, x-0 go; x-x -> 0 where the shape allows (rank 0) */
    kf_fuse_options o = { .fast_math = true };
    if (fuse(g, &o, "dce", &p) == KF_OK) {
        kf_node d = kf_graph_output(p.g, 3);
        CHECK(kf_node_op(p.g, d) == KF_OP_ADD && kf_node_op(p.g, p.g->nodes[d].args[0]) == KF_OP_MUL);
        CHECK(kf_node_op(p.g, kf_graph_output(p.g, 2)) == KF_OP_SUB); /* rank 1: stays */
        kf_node e2 = kf_graph_output(p.g, 4);
        CHECK(kf_node_op(p.g, e2) == KF_OP_ADD && kf_node_op(p.g, p.g->nodes[e2].args[0]) == KF_OP_CONST);
        kf_node f2 = kf_graph_output(p.g, 5);   /* x - x stays where x is a take: its index check */
        CHECK(kf_node_op(p.g, f2) == KF_OP_ADD && kf_node_op(p.g, p.g->nodes[f2].args[0]) == KF_OP_SUB);
    }
    kf_pipeline_clear(&p);
    kf_graph_free(g);
}

/* All-literal ops fold to exactly what the interpreter computes. */
typedef struct lit_case {
    kf_op op;
    kf_dtype t;
    double a, b;
    bool folds;
} lit_case;

static void test_fold_constants(void)
{
    static const lit_case cases[] = {
        { KF_OP_ADD, KF_I8, 100, 100, true },     { KF_OP_SUB, KF_U8, 3, 250, true },
        { KF_OP_MUL, KF_I32, -46341, 46341, true }, { KF_OP_DIV, KF_I32, 7, 0, true },
        { KF_OP_DIV, KF_I64, -7, 2, true },       { KF_OP_MOD, KF_I16, -7, 3, true },
        { KF_OP_MOD, KF_U32, 9, 0, true },        { KF_OP_SHL, KF_I32, 1, 40, true },
        { KF_OP_SHR, KF_I8, -128, 3, true },      { KF_OP_MIN, KF_U64, 5, 3, true },
        { KF_OP_DIV, KF_I8, -128, -1, true },     { KF_OP_XOR, KF_U16, 0x00ff, 0x0f0f, true },
        { KF_OP_LT, KF_I16, -1, 1, true },        { KF_OP_NEG, KF_I32, -2147483648.0, 0, true },
        { KF_OP_ADD, KF_F32, 0.1, 0.2, true },    { KF_OP_DIV, KF_F64, 1, 3, true },
        { KF_OP_SUB, KF_F16, 1, 0.0009765625, true }, { KF_OP_MUL, KF_BF16, 1.1, 3.3, true },
        { KF_OP_DIV, KF_F32, 1, 0, true },        { KF_OP_DIV, KF_F32, 0, 0, true },
        { KF_OP_SQRT, KF_F64, 2, 0, true },       { KF_OP_MAX, KF_F32, -0.0, 0.0, true },
        { KF_OP_MOD, KF_F64, 5.5, -2, true },     { KF_OP_ROUND, KF_F32, -2.5, 0, true },
        { KF_OP_EXP, KF_F32, 1, 0, false },       { KF_OP_POW, KF_F64, 2, 0.5, false },
        { KF_OP_TANH, KF_F16, 0.5, 0, false },    { KF_OP_RSQRT, KF_F32, 2, 0, false },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const lit_case *c = &cases[i];
        kf_graph *g = kf_graph_new("lit");
        kf_node a = kf_lit_f(g, c->t, c->a), b = kf_lit_f(g, c->t, c->b);
        kf_node r = kf_ir_op(c->op)->arity == 1 ? kf_unary(g, c->op, a) : kf_binary(g, c->op, a, b);
        /* the folded node feeds the output (an output never becomes a literal) */
        kf_output(g, kf_cast(g, r, kf_node_dtype(g, r)), "y");
        kf_pipeline p;
        if (fuse(g, NULL, "dce", &p) != KF_OK) {
            kf_graph_free(g);
            continue;
        }
        kf_node y = kf_graph_output(p.g, 0);
        kf_node arg = p.g->nodes[y].args[0];
        /* folded: y = cast <literal>; not: the same-dtype cast went and y is the op */
        bool folded = kf_node_op(p.g, y) == KF_OP_CAST && kf_node_op(p.g, arg) == KF_OP_CONST;
        CHECK(folded || kf_node_op(p.g, y) == c->op);
        CHECK_MSG(folded == c->folds, "case %zu (%s %s): folded %d", i, kf_op_name(c->op), kf_dtype_name(c->t), folded);
        kf_host_array ref, got;
        if (interpret(g, NULL, &ref, NULL) && interpret(p.g, NULL, &got, NULL)) {
            CHECK_MSG(arrays_equal(&ref, &got, false), "case %zu (%s %s): folded value differs", i, kf_op_name(c->op),
                      kf_dtype_name(c->t));
            if (c->op == KF_OP_DIV && kf_dt_is_int(c->t) && c->b == 0)
                CHECK(memcmp(got.data, "\0\0\0\0\0\0\0\0", kf_dtype_size(c->t)) == 0);
            free(ref.data);
            free(got.data);
        }
        kf_pipeline_clear(&p);
        kf_graph_free(g);
    }
}

/* -- cse and dce ---------------------------------------------------------------------------------- */

static void test_cse(void)
{
    kf_graph *g = kf_graph_new("cse");
    kf_dim n = sym("n");
    kf_node x = kf_input(g, "x", KF_F32, 1, &n);
    kf_node y = kf_input(g, "y", KF_F32, 1, &n);
    kf_node a = kf_binary(g, KF_OP_MUL, x, y);
    kf_set_name(g, a, "first");
    kf_node b = kf_binary(g, KF_OP_MUL, x, y);
    kf_set_name(g, b, "second");
    kf_node e1 = kf_unary(g, KF_OP_EXP, a), e2 = kf_unary(g, KF_OP_EXP, b);
    kf_node s1 = kf_reduce(g, KF_OP_SUM, e1, 0, NULL, false), s2 = kf_reduce(g, KF_OP_SUM, e2, 0, NULL, false);
    kf_output(g, kf_binary(g, KF_OP_SUB, s1, s2), "z");
    kf_output(g, e2, "e");
    kf_pipeline p;
    if (fuse(g, NULL, "cse", &p) == KF_OK) {
        CHECK(kf_graph_num_nodes(p.g) == kf_graph_num_nodes(g) - 3);
        CHECK(hash_eq(g, p.g));
        kf_node first = kf_ir_lookup(p.g, "first", 5);
        CHECK(first != KF_NONE && kf_ir_lookup(p.g, "second", 6) == KF_NONE);
        /* e (an output) is the merged exp and keeps its name */
        kf_node e = kf_graph_output(p.g, 1);
        CHECK(strcmp(kf_node_name(p.g, e), "e") == 0 && p.g->nodes[e].args[0] == first);
        kf_node z = kf_graph_output(p.g, 0);
        CHECK(p.g->nodes[z].args[0] == p.g->nodes[z].args[1]);
    }
    kf_pipeline_clear(&p);
    if (fuse_checked(g, NULL, &p) == KF_OK)
        CHECK(p.plan->nkernels == 3); /* e; the sum; z */
    kf_pipeline_clear(&p);
    kf_graph_free(g);

    /* commutative operands in either order; two outputs that are equal
     * stay two nodes (each output keeps its own name) */
    g = kf_graph_new("comm");
    x = kf_input(g, "x", KF_I32, 1, &n);
    y = kf_input(g, "y", KF_I32, 1, &n);
    a = kf_binary(g, KF_OP_ADD, x, y);
    b = kf_binary(g, KF_OP_ADD, y, x);
    kf_output(g, kf_binary(g, KF_OP_MUL, a, b), "m");
    kf_output(g, kf_binary(g, KF_OP_SUB, x, y), "d1");
    kf_output(g, kf_binary(g, KF_OP_SUB, x, y), "d2");
    kf_output(g, kf_binary(g, KF_OP_SUB, y, x), "d3");
    if (fuse(g, NULL, "dce", &p) == KF_OK) {
        kf_node m = kf_graph_output(p.g, 0);
        CHECK(p.g->nodes[m].args[0] == p.g->nodes[m].args[1]);
        CHECK(kf_graph_output(p.g, 1) != kf_graph_output(p.g, 2));
        CHECK(strcmp(kf_graph_output_name(p.g, 2), "d2") == 0);
        CHECK(kf_graph_num_nodes(p.g) == kf_graph_num_nodes(g) - 1);
    }
    kf_pipeline_clear(&p);
    if (fuse_checked(g, NULL, &p) == KF_OK)
        CHECK(p.plan->nkernels == 1 && p.plan->kernels[0].nouts == 4);
    kf_pipeline_clear(&p);
    kf_graph_free(g);
}

static void test_dce(void)
{
    kf_graph *g = kf_graph_new("dce");
    kf_dim n = sym("n");
    kf_node x = kf_input(g, "x", KF_F32, 1, &n);
    kf_input(g, "unused", KF_F64, 1, &n);
    kf_node d = kf_unary(g, KF_OP_EXP, x);
    kf_set_name(g, d, "dead");
    kf_binary(g, KF_OP_MUL, d, kf_lit_f(g, KF_F32, 3.0));
    kf_node lit = kf_lit_f(g, KF_F32, 2.0);
    kf_output(g, kf_binary(g, KF_OP_ADD, x, lit), "y");
    kf_pipeline p;
    if (fuse(g, NULL, "dce", &p) == KF_OK) {
        CHECK(kf_graph_num_nodes(p.g) == 4); /* x unused 2.0 y */
        CHECK(kf_graph_num_inputs(p.g) == 2);
        CHECK(strcmp(kf_node_name(p.g, kf_graph_input(p.g, 1)), "unused") == 0);
        CHECK(kf_ir_lookup(p.g, "dead", 4) == KF_NONE);
        CHECK(hash_eq(g, p.g));
        CHECK(strcmp(kf_graph_name(p.g), "dce") == 0);
    }
    kf_pipeline_clear(&p);
    if (fuse_checked(g, NULL, &p) == KF_OK) {
        CHECK(p.plan->nkernels == 1);
        CHECK_NAMES(p.g, p.plan->kernels[0].args, p.plan->kernels[0].nargs, "x");
    }
    kf_pipeline_clear(&p);
    kf_graph_free(g);
}

/* -- Pipeline -------------------------------------------------------------------------------------- */

static void test_pipeline(void)
{
    kf_graph *g = build_x5();
    kf_pipeline p;
    for (int i = 0; kf_fuse_pass_names[i]; i++) {
        const char *pass = kf_fuse_pass_names[i];
        if (fuse(g, NULL, pass, &p) == KF_OK) {
            bool planned = i >= 4;
            CHECK_MSG((p.plan != NULL) == planned, "stop after %s: plan %p", pass, (void *)p.plan);
            CHECK(p.g != NULL && p.g != g);
            if (planned)
                CHECK(p.plan->g == p.g && p.plan->nkernels == 1);
        }
        kf_pipeline_clear(&p);
    }
    CHECK(kf_fuse_pass_names[6] == NULL);
    CHECK_STATUS(kf_fuse(g, NULL, "fusion", &p), KF_ERR_INVALID_ARG);
    CHECK_CONTAINS(p.err, "unknown pass 'fusion'");
    CHECK_CONTAINS(p.err, "verify, fold, cse, dce, partition, schedule");
    CHECK(p.g == NULL);
    kf_pipeline_clear(&p);
    CHECK_STATUS(kf_fuse(NULL, NULL, NULL, &p), KF_ERR_INVALID_ARG);
    CHECK_STATUS(kf_fuse(g, NULL, NULL, NULL), KF_ERR_INVALID_ARG);

    /* defaults */
    kf_fuse_options o = { 0 };
    kf_fuse_options_default(&o);
    CHECK(o.max_ops == 512 && o.max_param_bytes == 4000 && o.recompute_max == 16 && !o.fast_math);

    /* determinism: the same graph gives the same plan, twice */
    kf_pipeline q;
    if (fuse(g, NULL, NULL, &p) == KF_OK && fuse(g, NULL, NULL, &q) == KF_OK) {
        char *a = plan_text(p.plan), *b = plan_text(q.plan);
        CHECK(a && b && strcmp(a, b) == 0);
        free(a);
        free(b);
    }
    kf_pipeline_clear(&p);
    kf_pipeline_clear(&q);
    kf_graph_free(g);

    /* a verify failure comes back with the graph's message */
    g = kf_graph_new("bad");
    kf_dim n = sym("n");
    kf_node x = kf_input(g, "x", KF_F32, 1, &n);
    kf_node y = kf_input(g, "y", KF_F64, 1, &n);
    kf_output(g, kf_binary(g, KF_OP_ADD, x, y), "z");
    CHECK_STATUS(kf_fuse(g, NULL, NULL, &p), KF_ERR_TYPE);
    CHECK_CONTAINS(p.err, "verify");
    CHECK_CONTAINS(p.err, "different dtypes (f32 and f64)");
    CHECK(p.g == NULL && p.plan == NULL);
    kf_pipeline_clear(&p);
    kf_graph_free(g);

    g = kf_graph_new("noout");
    kf_input(g, "x", KF_F32, 1, &n);
    CHECK_STATUS(kf_fuse(g, NULL, NULL, &p), KF_ERR_INVALID_ARG);
    CHECK_CONTAINS(p.err, "has no outputs");
    kf_pipeline_clear(&p);
    kf_graph_free(g);
}

/* The plan check itself catches broken plans. */
static void test_plan_check(void)
{
    kf_graph *g = kf_graph_new("chk");
    kf_dim n = sym("n");
    kf_node x = kf_input(g, "x", KF_F32, 1, &n);
    kf_node s = kf_reduce(g, KF_OP_SUM, kf_unary(g, KF_OP_EXP, x), 0, NULL, false);
    kf_output(g, kf_binary(g, KF_OP_MUL, x, s), "y");
    kf_pipeline p;
    if (fuse_checked(g, NULL, &p) == KF_OK && p.plan->nkernels == 2) {
        kf_plan *pl = p.plan;
        char err[512];
        const char *e = err;
        kf_kernel t = pl->kernels[0];
        pl->kernels[0] = pl->kernels[1];
        pl->kernels[1] = t;
        CHECK_STATUS(kf_plan_check(pl, NULL, err, sizeof err), KF_ERR_INVALID_ARG);
        CHECK_CONTAINS(e, "that no earlier kernel writes");
        pl->kernels[1] = pl->kernels[0];
        pl->kernels[0] = t;
        CHECK_STATUS(kf_plan_check(pl, NULL, err, sizeof err), KF_OK);
        kf_fuse_options o = { .max_ops = 1, .max_param_bytes = 4000 };
        CHECK_STATUS(kf_plan_check(pl, &o, err, sizeof err), KF_ERR_INVALID_ARG);
        CHECK_CONTAINS(e, "over the op limit");
        pl->kernels[1].nops++;
        CHECK_STATUS(kf_plan_check(pl, NULL, err, sizeof err), KF_ERR_INVALID_ARG);
        CHECK_CONTAINS(e, "disagree");
        pl->kernels[1].nops--;
    }
    kf_pipeline_clear(&p);
    kf_graph_free(g);
}

/* -- Random graphs ------------------------------------------------------------------------------------- */

/* Random DAGs over [m,n], [n], [m,1] and [] arrays with elementwise ops,
 * reductions, take and iota, fused under random limits: the plan passes the
 * check and reproduces the optimised graph bit for bit. */
static kf_graph *random_graph(uint64_t *seed, int size)
{
    kf_graph *g = kf_graph_new("random");
    kf_dim mn[2] = { sym("m"), sym("n") }, m1[2] = { sym("m"), KF_DIM(1) };
    kf_node pool[512];
    int np = 0;
    pool[np++] = kf_input(g, "a", KF_F32, 2, mn);
    pool[np++] = kf_input(g, "b", KF_F32, 1, &mn[1]);
    pool[np++] = kf_input(g, "c", KF_F32, 2, m1);
    pool[np++] = kf_scalar(g, "s", KF_F32);
    kf_node idx = kf_input(g, "idx", KF_I32, 1, &mn[1]);
    static const kf_op un[] = { KF_OP_NEG, KF_OP_ABS, KF_OP_TANH, KF_OP_SQRT, KF_OP_FLOOR };
    static const kf_op bin[] = { KF_OP_ADD, KF_OP_SUB, KF_OP_MUL, KF_OP_MAX, KF_OP_MIN, KF_OP_DIV };
    for (int i = 0; i < size && np < 500; i++) {
        uint64_t r = next_rand(seed);
        kf_node u = pool[next_rand(seed) % (uint64_t)np], v = pool[next_rand(seed) % (uint64_t)np];
        kf_node w = KF_NONE;
        switch (r % 10) {
        case 0: case 1:
            w = kf_unary(g, un[(r >> 8) % 5], u);
            break;
        case 2: case 3: case 4: case 5:
            w = kf_binary(g, bin[(r >> 8) % 6], u, v);
            break;
        case 6: { /* reduction of an [m,n]-shaped or smaller node */
            int rank = kf_node_rank(g, u);
            if (rank == 0)
                break;
            int ax = (int)((r >> 8) % (uint64_t)rank);
            kf_op op = (r >> 12) % 3 == 0 ? KF_OP_SUM : (r >> 12) % 3 == 1 ? KF_OP_RMAX : KF_OP_MEAN;
            bool all = (r >> 16) % 4 == 0;
            w = kf_reduce(g, op, u, all ? 0 : 1, &ax, rank == 2 && ax == 1);
            break;
        }
        case 7: /* take from a 1-D node */
            if (kf_node_rank(g, u) == 1)
                w = kf_take(g, u, idx);
            break;
        case 8:
            w = kf_binary(g, KF_OP_MUL, u, kf_lit_f(g, KF_F32, (double)((r >> 8) % 5) - 2.0));
            break;
        case 9: {
            kf_node io = kf_iota(g, KF_F32, 2, mn, (int)((r >> 8) % 2));
            w = kf_binary(g, KF_OP_ADD, u, io);
            break;
        }
        }
        if (kf_graph_status(g) != KF_OK) /* shapes that do not broadcast: start over */
            break;
        if (w != KF_NONE && np < 512)
            pool[np++] = w;
    }
    if (kf_graph_status(g) != KF_OK || np <= 5) {
        kf_graph_free(g);
        return NULL;
    }
    /* outputs: the last node and a few others */
    int nout = 1 + (int)(next_rand(seed) % 3);
    kf_output(g, pool[np - 1], "out0");
    for (int i = 1; i < nout; i++) {
        kf_node o = pool[5 + next_rand(seed) % (uint64_t)(np - 5)];
        char nm[16];
        snprintf(nm, sizeof nm, "out%d", i);
        if (o == pool[np - 1] || kf_node_name(g, o))
            continue;
        kf_output(g, o, nm);
    }
    return g;
}

static void test_random(void)
{
    uint64_t seed = 12345;
    int made = 0, kernels = 0, stored = 0;
    for (int iter = 0; iter < 1500; iter++) {
        kf_graph *g = random_graph(&seed, 5 + iter % 80);
        if (!g)
            continue;
        made++;
        kf_fuse_options o = { 0 };
        switch (iter % 4) {
        case 1: o.max_ops = 6; break;
        case 2: o.recompute_max = 1; o.max_param_bytes = 500; break;
        case 3: o.max_ops = 12; o.recompute_max = 3; break;
        default: break;
        }
        kf_pipeline p;
        kf_status s = kf_fuse(g, &o, NULL, &p);
        if (s != KF_OK) {
            /* only a limit no kernel can meet may fail */
            CHECK_MSG(s == KF_ERR_LIMIT && strstr(p.err, "cannot be split"), "random %d: %s: %s", iter,
                      kf_status_string(s), p.err);
        } else {
            char err[512];
            kf_status c = kf_plan_check(p.plan, &p.opt, err, sizeof err);
            CHECK_MSG(c == KF_OK, "random %d: %s", iter, err);
            check_semantics(g, &p, (uint64_t)iter, false);
            check_codegen(p.plan);
            kernels += p.plan->nkernels;
            stored += p.plan->nstored;
        }
        kf_pipeline_clear(&p);
        kf_graph_free(g);
    }
    if (getenv("KFUSE_TEST_VERBOSE"))
        printf("random graphs: %d fused, %d kernels, %d stored\n", made, kernels, stored);
    CHECK(made > 1200);
    CHECK(kernels > made && stored > 0);
}

/* -- Golden plans -------------------------------------------------------------------------------------- */

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    int c;
    while (m && (c = fgetc(f)) != EOF)
        fputc(c, m);
    if (m)
        fclose(m);
    fclose(f);
    return buf;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void golden_file(const char *base, bool update)
{
    char kir[512], planf[512];
    snprintf(kir, sizeof kir, "fuse/%s.kir", base);
    snprintf(planf, sizeof planf, "fuse/%s.plan", base);
    kf_module *m = NULL;
    kf_status s = kf_module_parse_file(kir, NULL, &m);
    CHECK_MSG(s == KF_OK, "%s: %s", kir, m ? kf_module_error(m) : "out of memory");
    if (s != KF_OK) {
        kf_module_free(m);
        return;
    }
    char *got = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&got, &len);
    for (int i = 0; out && i < kf_module_num_graphs(m); i++) {
        const kf_graph *g = kf_module_graph(m, i);
        kf_pipeline p, q, r1, r2;
        if (fuse_checked(g, NULL, &p) != KF_OK) {
            fprintf(out, "graph %s: %s\n", kf_graph_name(g), p.err);
            kf_pipeline_clear(&p);
            continue;
        }
        fprintf(out, "%s", i ? "\n" : "");
        kf_plan_print(p.plan, out);
        /* determinism */
        if (fuse(g, NULL, NULL, &q) == KF_OK) {
            char *a = plan_text(p.plan), *b = plan_text(q.plan);
            CHECK_MSG(a && b && strcmp(a, b) == 0, "%s: two runs give two plans", kf_graph_name(g));
            free(a);
            free(b);
        }
        /* cse and dce keep the canonical hash, except where cse merges a
         * commutative op written with its operands swapped (graph 'cse'):
         * the hash keeps operand order */
        if (fuse(g, NULL, "fold", &r1) == KF_OK && fuse(g, NULL, "dce", &r2) == KF_OK)
            CHECK_MSG(hash_eq(r1.g, r2.g) != (strcmp(kf_graph_name(g), "cse") == 0),
                      "%s: cse or dce changed the hash", kf_graph_name(g));
        kf_pipeline_clear(&p);
        kf_pipeline_clear(&q);
        kf_pipeline_clear(&r1);
        kf_pipeline_clear(&r2);
    }
    if (out)
        fclose(out);
    if (update) {
        FILE *f = fopen(planf, "wb");
        CHECK_MSG(f && fwrite(got, 1, len, f) == len, "cannot write %s", planf);
        if (f)
            fclose(f);
    } else {
        char *want = slurp(planf);
        CHECK_MSG(want != NULL, "%s is missing (KFUSE_GOLDEN_UPDATE=1 writes it)", planf);
        if (want && strcmp(want, got) != 0) {
            CHECK_MSG(false, "%s differs from the plan printed now:\n%s", planf, got);
        }
        free(want);
    }
    free(got);
    kf_module_free(m);
}

static void test_golden(void)
{
    const char *upd = getenv("KFUSE_GOLDEN_UPDATE");
    bool update = upd && strcmp(upd, "1") == 0;
    DIR *d = opendir("fuse");
    CHECK_MSG(d != NULL, "cannot open tests/fuse");
    if (!d)
        return;
    char *list[256];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 256) {
        size_t l = strlen(e->d_name);
        if (l > 4 && strcmp(e->d_name + l - 4, ".kir") == 0) {
            list[n] = strndup(e->d_name, l - 4);
            if (list[n])
                n++;
        }
    }
    closedir(d);
    qsort(list, (size_t)n, sizeof list[0], by_name);
    CHECK(n >= 5);
    for (int i = 0; i < n; i++) {
        golden_file(list[i], update);
        free(list[i]);
    }
}

/* kf_fuse, or kf_fuse_owned on a copy (owned), with every allocation
 * failing in turn: KF_ERR_NO_MEMORY with a message each time, nothing
 * leaked (LeakSanitizer in the ASan build: kf_fuse_owned frees the graph
 * it was given), and the plan want once nothing fails. */
static void fuse_out_of_memory(const kf_graph *g, const kf_fuse_options *o, bool owned, const char *want)
{
    kf_pipeline p;
    int failures = 0;
    for (long n = 1; n < 100000; n++) {
        kf_graph *c = owned ? kf_graph_clone(g) : NULL;
        fail_at = n;
        alloc_count = 0;
        alloc_failed = false;
        kf_status s = owned ? kf_fuse_owned(c, o, NULL, &p) : kf_fuse(g, o, NULL, &p);
        fail_at = 0;
        if (!alloc_failed) {
            CHECK(s == KF_OK);
            char *got = s == KF_OK ? plan_text(p.plan) : NULL;
            CHECK(want && got && strcmp(want, got) == 0);
            free(got);
            kf_pipeline_clear(&p);
            break;
        }
        failures++;
        CHECK_MSG(s == KF_ERR_NO_MEMORY && p.err[0] && !p.g && !p.plan, "%s, allocation %ld failing: %s: '%s'",
                  owned ? "kf_fuse_owned" : "kf_fuse", n, kf_status_string(s), p.err);
        kf_pipeline_clear(&p);
    }
    CHECK(failures > 50);
}

/* The cache's canonical form with every allocation failing in turn: NULL
 * (the cache then fuses the graph as it is), nothing leaked, and the same
 * graph as ever once nothing fails. */
static void canonical_out_of_memory(const kf_graph *g)
{
    kf_graph *c = kf_cache_canonical(g);
    char *want = NULL, *got = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&want, &len);
    CHECK(c && f && kf_graph_print(c, f) == KF_OK);
    if (f)
        fclose(f);
    kf_graph_free(c);
    int failures = 0;
    for (long n = 1; n < 100000; n++) {
        fail_at = n;
        alloc_count = 0;
        alloc_failed = false;
        c = kf_cache_canonical(g);
        fail_at = 0;
        if (!alloc_failed) {
            f = open_memstream(&got, &len);
            CHECK(c && f && kf_graph_print(c, f) == KF_OK);
            if (f)
                fclose(f);
            CHECK(want && got && strcmp(want, got) == 0);
            free(got);
            kf_graph_free(c);
            break;
        }
        failures++;
        CHECK_MSG(!c, "canonical form, allocation %ld failing: a graph", n);
        kf_graph_free(c);
    }
    CHECK(failures > 10);
    free(want);
}

static void test_out_of_memory(void)
{
    kf_module *m = NULL;
    static const char src[] = "kfuse 1\n"
                              "graph g(x: f32[m,n], v: f64[k], idx: i32[m,n], a: f32) -> (y, s, t) {\n"
                              "  mx = max x, axes=[1], keepdims=true\n"
                              "  e = exp (sub x, mx)\n"
                              "  s = sum e, axes=[1], keepdims=true\n"
                              "  y = mul (div e, s), (add a, (mul 2.0:f32, 0.5:f32))\n"
                              "  w = mul v, (exp (exp (exp (exp v))))\n"
                              "  t = add (take w, idx), (take w, idx)\n"
                              "  dead = neg x\n"
                              "}\n";
    if (kf_module_parse(src, sizeof src - 1, "oom.kir", NULL, &m) != KF_OK) {
        CHECK_MSG(false, "oom.kir: %s", m ? kf_module_error(m) : "out of memory");
        kf_module_free(m);
        return;
    }
    const kf_graph *g = kf_module_graph(m, 0);
    kf_fuse_options o = { .max_ops = 8 };
    kf_pipeline p;
    char *want = NULL;
    if (fuse(g, &o, NULL, &p) == KF_OK)
        want = plan_text(p.plan);
    kf_pipeline_clear(&p);
    fuse_out_of_memory(g, &o, false, want);
    fuse_out_of_memory(g, &o, true, want);
    canonical_out_of_memory(g);
    free(want);
    kf_module_free(m);
}

/* kf_fuse_sort_i32 against qsort on fresh random arrays: sorted either way
 * round already (the fast paths), with repeats, or in any order. */
static int cmp_int32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static void test_sort(void)
{
    uint64_t seed = (uint64_t)time(NULL);
    int32_t v[64], w[64];
    for (int r = 0; r < 3000; r++) {
        int32_t n = (int32_t)(next_rand(&seed) % 64), shape = r % 4;
        for (int32_t i = 0; i < n; i++) {
            int32_t x = (int32_t)(next_rand(&seed) % (shape == 3 ? 8 : 1000));
            v[i] = shape == 0 ? i * 3 + x % 3 : shape == 1 ? 1000 - i * 3 - x % 3 : x - 500;
            w[i] = v[i];
        }
        kf_fuse_sort_i32(v, n);
        qsort(w, (size_t)n, sizeof *w, cmp_int32);
        CHECK_MSG(memcmp(v, w, (size_t)n * sizeof *v) == 0, "round %d, n %d, shape %d", r, (int)n, (int)shape);
    }
}

int main(void)
{
    test_x5();
    test_saxpy_scalar();
    test_leaf_outputs();
    test_chains();
    test_many_inputs();
    test_many_outputs();
    test_unsplittable();
    test_fold_identities();
    test_fold_floats();
    test_fold_constants();
    test_cse();
    test_dce();
    test_pipeline();
    test_plan_check();
    test_random();
    test_out_of_memory();
    test_sort();
    test_golden();
    return kf_test_done();
}
