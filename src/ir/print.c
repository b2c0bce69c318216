/* .kir printer: the canonical text of a graph.  One statement per node that
 * is neither an input nor a literal, in node order; literals inline at each
 * use in their shortest exact spelling, with a ":dtype" suffix only where
 * the parser could not infer the dtype.  Parsing the output gives the same
 * graph, node for node, and printing that again gives the same bytes. */
#include "ir.h"
#include "half.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The value the parser stores for v read as a literal of dtype t (as the
 * builder's kf_lit_f rounds it). */
static double round_to(kf_dtype t, double v)
{
    switch (t) {
    case KF_F16: return kf_f16_to_f32(kf_f64_to_f16(v));
    case KF_BF16: return kf_bf16_to_f32(kf_f64_to_bf16(v));
    case KF_F32: return (float)v;
    default: return v;
    }
}

static bool same_bits(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

/* Shortest "%.Ng" spelling of v that reads back as v in dtype t. */
static void fmt_float(kf_dtype t, double v, char *buf, size_t len)
{
    if (isnan(v)) {
        snprintf(buf, len, "%s", signbit(v) ? "-nan" : "nan");
        return;
    }
    if (isinf(v)) {
        snprintf(buf, len, "%s", v < 0 ? "-inf" : "inf");
        return;
    }
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, len, "%.*g", p, v);
        if (same_bits(round_to(t, strtod(buf, NULL)), v))
            return;
    }
    snprintf(buf, len, "%.17g", v);
}

/* The dtype the parser gives a literal at argument i of x from its sibling
 * operands, or -1 (parse.c, lit_context, is the rule this mirrors). */
static int lit_context(const kf_graph *g, const kf_irnode *x, int i)
{
    const kf_opinfo *oi = &kf_ir_ops[x->op];
    if (oi->rule == T_SELECT) {
        if (i == 0)
            return KF_BOOL;
        const kf_irnode *y = &g->nodes[x->args[3 - i]];
        return y->op != KF_OP_CONST ? y->dtype : -1;
    }
    if (oi->rule == T_TAKE)
        return i == 1 ? KF_I64 : -1;
    if (oi->kind != KF_KIND_EW || oi->rule == T_CAST)
        return -1;
    for (int j = 0; j < x->nargs; j++)
        if (g->nodes[x->args[j]].op != KF_OP_CONST)
            return g->nodes[x->args[j]].dtype;
    return -1;
}

/* The literal node c written as argument i of x. */
static void print_lit(FILE *f, const kf_graph *g, const kf_irnode *x, int i, const kf_irnode *c)
{
    kf_dtype t = (kf_dtype)c->dtype;
    char buf[64];
    if (t == KF_BOOL) {
        fputs(c->lit.u ? "true" : "false", f);
        return;
    }
    bool floaty = false;
    if (kf_dt_is_sint(t)) {
        snprintf(buf, sizeof buf, "%" PRId64, c->lit.i);
    } else if (kf_dt_is_uint(t)) {
        snprintf(buf, sizeof buf, "%" PRIu64, c->lit.u);
    } else {
        fmt_float(t, c->lit.f, buf, sizeof buf);
        floaty = strpbrk(buf, ".eina") != NULL;
    }
    int want = lit_context(g, x, i);
    if (want < 0)
        want = floaty ? KF_F64 : KF_I64;
    fputs(buf, f);
    if (want != (int)t)
        fprintf(f, ":%s", kf_dtype_name(t));
}

/* A node's name; an unnamed one is called _<index>, with '_' appended until
 * no named node has it. */
static void print_name(FILE *f, const kf_graph *g, kf_node n)
{
    if (g->nodes[n].name) {
        fputs(g->nodes[n].name, f);
        return;
    }
    char small[48];
    int len = snprintf(small, sizeof small, "_%d", (int)n);
    size_t extra = 0;
    char *big = NULL;
    for (;;) {
        const char *s = big ? big : small;
        if (kf_ir_lookup(g, s, (size_t)len + extra) == KF_NONE)
            break;
        extra++;
        if (!big && (size_t)len + extra + 1 > sizeof small) {
            big = malloc((size_t)g->nnodes + sizeof small + 2);
            if (!big)
                break; /* ferror below cannot see this; the name stays short */
            memcpy(big, small, (size_t)len + extra);
        }
        char *w = big ? big : small;
        w[(size_t)len + extra - 1] = '_';
        w[(size_t)len + extra] = 0;
    }
    fputs(big ? big : small, f);
    free(big);
}

static void print_arg(FILE *f, const kf_graph *g, const kf_irnode *x, int i)
{
    const kf_irnode *a = &g->nodes[x->args[i]];
    if (a->op == KF_OP_CONST)
        print_lit(f, g, x, i, a);
    else
        print_name(f, g, x->args[i]);
}

static void print_type(FILE *f, const kf_graph *g, const kf_irnode *x, bool array)
{
    fputs(kf_dtype_name((kf_dtype)x->dtype), f);
    if (!array)
        return;
    fputc('[', f);
    for (int i = 0; i < x->rank; i++) {
        if (i)
            fputs(", ", f);
        if (x->dims[i] >= 0)
            fprintf(f, "%" PRId64, x->dims[i]);
        else
            fputs(g->syms[KF_IR_SYM_INDEX(x->dims[i])], f);
    }
    fputc(']', f);
}

static void print_stmt(FILE *f, const kf_graph *g, kf_node n)
{
    const kf_irnode *x = &g->nodes[n];
    const kf_opinfo *oi = &kf_ir_ops[x->op];
    fputs("  ", f);
    print_name(f, g, n);
    fprintf(f, " = %s ", oi->name);
    if (x->op == KF_OP_IOTA) {
        print_type(f, g, x, true);
        fprintf(f, ", axis=%d", x->axis);
    } else if (x->op == KF_OP_CAST) {
        print_arg(f, g, x, 0);
        fprintf(f, ", %s", kf_dtype_name((kf_dtype)x->dtype));
    } else {
        for (int i = 0; i < x->nargs; i++) {
            if (i)
                fputs(", ", f);
            print_arg(f, g, x, i);
        }
        if (oi->kind == KF_KIND_REDUCE) {
            int rank = g->nodes[x->args[0]].rank;
            if (x->axes != (1u << rank) - 1) {
                fputs(", axes=[", f);
                for (int i = 0, k = 0; i < rank; i++)
                    if (x->axes & (1u << i))
                        fprintf(f, "%s%d", k++ ? ", " : "", i);
                fputc(']', f);
            }
            if (x->keepdims)
                fputs(", keepdims=true", f);
        }
    }
    fputc('\n', f);
}

kf_status kf_graph_print(const kf_graph *g, FILE *f)
{
    if (!g || !f)
        return KF_ERR_INVALID_ARG;
    /* The text has no statement that is just a literal. */
    for (int32_t i = 0; i < g->noutputs; i++)
        if (g->nodes[g->outputs[i]].op == KF_OP_CONST)
            return KF_ERR_UNSUPPORTED;
    fprintf(f, "graph %s(", g->name);
    for (int32_t i = 0; i < g->ninputs; i++) {
        const kf_irnode *x = &g->nodes[g->inputs[i]];
        fprintf(f, "%s%s: ", i ? ", " : "", x->name);
        print_type(f, g, x, !x->scalar);
    }
    fputs(") -> (", f);
    for (int32_t i = 0; i < g->noutputs; i++)
        fprintf(f, "%s%s", i ? ", " : "", g->nodes[g->outputs[i]].name);
    fputs(") {\n", f);
    for (int32_t n = 0; n < g->nnodes; n++)
        if (g->nodes[n].op != KF_OP_INPUT && g->nodes[n].op != KF_OP_CONST)
            print_stmt(f, g, n);
    fputs("}\n", f);
    return ferror(f) ? KF_ERR_IO : KF_OK;
}

kf_status kf_module_print(const kf_module *m, FILE *f)
{
    if (!m || !f)
        return KF_ERR_INVALID_ARG;
    fputs("kfuse 1\n", f);
    for (int i = 0; i < kf_module_num_graphs(m); i++) {
        fputc('\n', f);
        kf_status s = kf_graph_print(kf_module_graph(m, i), f);
        if (s != KF_OK)
            return s;
    }
    return ferror(f) ? KF_ERR_IO : KF_OK;
}

char *kf_graph_to_text(const kf_graph *g)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    kf_status s = kf_graph_print(g, f);
    if (fclose(f) != 0 || s != KF_OK) {
        free(buf);
        return NULL;
    }
    return buf;
}
