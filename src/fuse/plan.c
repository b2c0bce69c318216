/* Fusion plans: release, print, kernel contents (args, scalars, weighted
 * op counts, parameter bytes) and the consistency check that every plan
 * passes before anything downstream sees it. */
#include "plan.h"

#include <stdlib.h>
#include <string.h>

/* -- Weights and sizes ------------------------------------------------------------ */

uint32_t kf_fuse_op_weight(kf_op op)
{
    switch (op) {
    case KF_OP_INPUT: case KF_OP_CONST:
        return 0;
    case KF_OP_CBRT: case KF_OP_EXP: case KF_OP_EXP2: case KF_OP_EXPM1:
    case KF_OP_LOG: case KF_OP_LOG2: case KF_OP_LOG10: case KF_OP_LOG1P:
    case KF_OP_SIN: case KF_OP_COS: case KF_OP_TAN: case KF_OP_ASIN: case KF_OP_ACOS: case KF_OP_ATAN:
    case KF_OP_SINH: case KF_OP_COSH: case KF_OP_TANH: case KF_OP_ERF: case KF_OP_SIGMOID:
    case KF_OP_POW: case KF_OP_ATAN2: case KF_OP_HYPOT:
        return 4;
    case KF_OP_TAKE:
        return 2;
    default:
        return 1;
    }
}

uint32_t kf_kernel_param_bytes(const kf_graph *g, const kf_kernel *k)
{
    uint64_t r = k->space >= 0 && k->space < g->nnodes ? g->nodes[k->space].rank : 0;
    uint64_t nb = (uint64_t)k->nargs + (uint64_t)k->nouts;
    /* take sources: args read as take's array, each counted once */
    uint64_t nt = 0;
    for (int32_t i = 0; i < k->nargs; i++) {
        bool src = false;
        for (int32_t j = 0; j < k->nnodes && !src; j++) {
            const kf_irnode *x = &g->nodes[k->nodes[j]];
            src = x->op == KF_OP_TAKE && x->args[0] == k->args[i];
        }
        nt += src;
    }
    uint64_t b = 8 * nb + 8 * (1 + r + nb * r + nb + 2 * nt) + 8 * (uint64_t)k->nscalars;
    if (k->has_take)
        b += 8;
    if (k->kind == KF_KERNEL_REDUCE)
        b += 8 + 8 * 2;   /* scratch, and the meta block's chunking */
    return b > UINT32_MAX ? UINT32_MAX : (uint32_t)b;
}

/* -- Kernel contents ----------------------------------------------------------------- */

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

void kf_fuse_sort_i32(int32_t *v, int32_t n)
{
    bool up = true, down = true;
    for (int32_t i = 1; i < n && (up || down); i++) {
        up = up && v[i - 1] <= v[i];
        down = down && v[i - 1] >= v[i];
    }
    if (up)
        return;
    if (!down) {
        qsort(v, (size_t)n, sizeof *v, cmp_i32);
        return;
    }
    for (int32_t i = 0, j = n - 1; i < j; i++, j--) {
        int32_t t = v[i];
        v[i] = v[j];
        v[j] = t;
    }
}

static int32_t sort_unique(int32_t *v, int32_t n)
{
    if (n == 0)
        return 0;
    kf_fuse_sort_i32(v, n);
    int32_t m = 1;
    for (int32_t i = 1; i < n; i++)
        if (v[i] != v[m - 1])
            v[m++] = v[i];
    return m;
}

kf_status kf_kernel_fill(const kf_graph *g, kf_kernel *k, uint32_t *mark, uint32_t stamp)
{
    for (int32_t i = 0; i < k->nnodes; i++)
        mark[k->nodes[i]] = stamp;
    size_t cap = (size_t)k->nnodes * 3 + (size_t)k->nouts + 1;
    int32_t *args = malloc(cap * sizeof *args), *scal = malloc(cap * sizeof *scal);
    if (!args || !scal) {
        free(args);
        free(scal);
        return KF_ERR_NO_MEMORY;
    }
    int32_t na = 0, ns = 0;
    uint64_t ops = 0;
    bool take = false;
    for (int32_t i = 0; i < k->nnodes; i++) {
        const kf_irnode *x = &g->nodes[k->nodes[i]];
        ops += kf_fuse_op_weight((kf_op)x->op);
        take |= x->op == KF_OP_TAKE;
        for (int a = 0; a < x->nargs; a++) {
            int32_t o = x->args[a];
            const kf_irnode *y = &g->nodes[o];
            if (mark[o] == stamp || y->op == KF_OP_CONST)
                continue;
            if (y->op == KF_OP_INPUT && y->scalar)
                scal[ns++] = o;
            else
                args[na++] = o;
        }
    }
    for (int32_t i = 0; i < k->nouts; i++) {
        int32_t o = k->outs[i];
        const kf_irnode *y = &g->nodes[o];
        if (mark[o] == stamp || y->op != KF_OP_INPUT)
            continue;
        if (y->scalar)
            scal[ns++] = o;
        else
            args[na++] = o;
    }
    free(k->args);
    free(k->scalars);
    k->args = args;
    k->nargs = sort_unique(args, na);
    k->scalars = scal;
    k->nscalars = sort_unique(scal, ns);
    k->has_take = take;
    k->nops = ops > UINT32_MAX ? UINT32_MAX : (uint32_t)ops;
    return KF_OK;
}

/* -- Names ----------------------------------------------------------------------------- */

void kf_fuse_node_name(const kf_graph *g, kf_node n, char *buf, size_t len)
{
    if (len == 0)
        return;
    if (g->nodes[n].name) {
        snprintf(buf, len, "%s", g->nodes[n].name);
        return;
    }
    int w = snprintf(buf, len, "_%d", (int)n);
    size_t l = w < 0 ? 0 : (size_t)w;
    while (l + 1 < len && kf_ir_lookup(g, buf, l) != KF_NONE) {
        buf[l++] = '_';
        buf[l] = 0;
    }
}

/* -- Release and print --------------------------------------------------------------- */

void kf_plan_free(kf_plan *p)
{
    if (!p)
        return;
    for (int32_t i = 0; i < p->nkernels; i++) {
        free(p->kernels[i].nodes);
        free(p->kernels[i].args);
        free(p->kernels[i].outs);
        free(p->kernels[i].scalars);
    }
    free(p->kernels);
    free(p->stored);
    kf_graph_free(p->g);
    free(p);
}

static void print_node(FILE *f, const kf_graph *g, kf_node n, bool shape)
{
    char nm[128], sh[256];
    kf_fuse_node_name(g, n, nm, sizeof nm);
    fputs(nm, f);
    if (shape) {
        kf_ir_shape_str(g, &g->nodes[n], sh, sizeof sh);
        fputs(sh, f);
    }
}

static void print_list(FILE *f, const kf_graph *g, const char *what, const int32_t *v, int32_t n, bool shape)
{
    if (n == 0)
        return;
    fprintf(f, "  %s", what);
    for (int32_t i = 0; i < n; i++) {
        fputc(' ', f);
        print_node(f, g, v[i], shape);
    }
    fputc('\n', f);
}

void kf_plan_print(const kf_plan *p, FILE *f)
{
    if (!p || !f)
        return;
    const kf_graph *g = p->g;
    fprintf(f, "plan %s: %d kernel%s, %d stored", g->name, (int)p->nkernels, p->nkernels == 1 ? "" : "s",
            (int)p->nstored);
    for (int32_t i = 0; i < p->nstored; i++) {
        fputs(i ? " " : ": ", f);
        print_node(f, g, p->stored[i], false);
    }
    fputc('\n', f);
    for (int32_t i = 0; i < p->nkernels; i++) {
        const kf_kernel *k = &p->kernels[i];
        fprintf(f, "kernel %d %s space=", (int)i, k->kind == KF_KERNEL_REDUCE ? "reduce" : "ew");
        print_node(f, g, k->space, true);
        if (k->kind == KF_KERNEL_REDUCE) {
            fputs(" axes=[", f);
            int first = 1;
            for (int a = 0; a < KF_MAX_RANK; a++)
                if (k->axes & (1u << a)) {
                    fprintf(f, "%s%d", first ? "" : ",", a);
                    first = 0;
                }
            fputc(']', f);
        }
        fprintf(f, " ops=%u params=%u%s\n", k->nops, kf_kernel_param_bytes(g, k), k->has_take ? " take" : "");
        print_list(f, g, "reads", k->args, k->nargs, true);
        print_list(f, g, "scalars", k->scalars, k->nscalars, false);
        print_list(f, g, "writes", k->outs, k->nouts, true);
        print_list(f, g, "nodes", k->nodes, k->nnodes, false);
    }
}

/* -- Consistency check ------------------------------------------------------------------ */

typedef struct checker {
    const kf_plan *p;
    char *err;
    size_t errlen;
} checker;

static kf_status bad(checker *c, int32_t ki, kf_node n, const char *fmt, const char *detail)
{
    char nm[128] = "";
    if (n != KF_NONE && n >= 0 && n < c->p->g->nnodes)
        kf_fuse_node_name(c->p->g, n, nm, sizeof nm);
    char where[64] = "";
    if (ki >= 0)
        snprintf(where, sizeof where, ": kernel %d", (int)ki);
    if (c->err && c->errlen)
        snprintf(c->err, c->errlen, "plan %s%s%s%s%s: %s%s", c->p->g->name, where, nm[0] ? ", node '" : "", nm,
                 nm[0] ? "'" : "", fmt, detail ? detail : "");
    return KF_ERR_INVALID_ARG;
}

static bool contains(const int32_t *v, int32_t n, int32_t x)
{
    for (int32_t i = 0; i < n; i++)
        if (v[i] == x)
            return true;
    return false;
}

static bool ascending(const int32_t *v, int32_t n)
{
    for (int32_t i = 1; i < n; i++)
        if (v[i] <= v[i - 1])
            return false;
    return true;
}

static bool same_shape(const kf_irnode *a, const kf_irnode *b)
{
    return a->rank == b->rank && memcmp(a->dims, b->dims, a->rank * sizeof a->dims[0]) == 0;
}

static kf_status check_kernel(checker *c, int32_t ki, uint32_t *mark, int32_t *writer, const kf_fuse_options *opt)
{
    const kf_graph *g = c->p->g;
    const kf_kernel *k = &c->p->kernels[ki];
    uint32_t stamp = 2 * (uint32_t)ki + 1;
    if (k->kind != KF_KERNEL_EW && k->kind != KF_KERNEL_REDUCE)
        return bad(c, ki, KF_NONE, "bad kernel kind", NULL);
    if (!kf_ir_valid_node(g, k->space))
        return bad(c, ki, KF_NONE, "bad space node", NULL);
    if (k->nouts < 1)
        return bad(c, ki, KF_NONE, "writes nothing", NULL);
    if (!ascending(k->nodes, k->nnodes) || !ascending(k->args, k->nargs) || !ascending(k->scalars, k->nscalars))
        return bad(c, ki, KF_NONE, "nodes, args or scalars not ascending and unique", NULL);
    const kf_irnode *sp = &g->nodes[k->space];
    for (int32_t i = 0; i < k->nnodes; i++) {
        int32_t n = k->nodes[i];
        if (!kf_ir_valid_node(g, n) || kf_ir_op((kf_op)g->nodes[n].op)->kind == KF_KIND_LEAF)
            return bad(c, ki, kf_ir_valid_node(g, n) ? n : KF_NONE, "a leaf or bad node in nodes", NULL);
        mark[n] = stamp;
    }
    for (int32_t i = 0; i < k->nnodes; i++) {
        int32_t n = k->nodes[i];
        const kf_irnode *x = &g->nodes[n];
        bool red = kf_ir_op((kf_op)x->op)->kind == KF_KIND_REDUCE;
        if (red) {
            if (k->kind != KF_KERNEL_REDUCE)
                return bad(c, ki, n, "a reduction in an elementwise kernel", NULL);
            if (x->axes != k->axes || !same_shape(&g->nodes[x->args[0]], sp))
                return bad(c, ki, n, "a reduction over other axes or another space", NULL);
            if (!contains(k->outs, k->nouts, n))
                return bad(c, ki, n, "a reduction that is not written", NULL);
        }
        for (int a = 0; a < x->nargs; a++) {
            int32_t o = x->args[a];
            const kf_irnode *y = &g->nodes[o];
            if (x->op == KF_OP_TAKE && a == 0) {
                if (mark[o] == stamp || !contains(k->args, k->nargs, o))
                    return bad(c, ki, n, "take reads its array from registers, not memory", NULL);
                continue;
            }
            if (mark[o] == stamp || y->op == KF_OP_CONST)
                continue;
            if (y->op == KF_OP_INPUT && y->scalar) {
                if (!contains(k->scalars, k->nscalars, o))
                    return bad(c, ki, n, "a scalar operand missing from scalars", NULL);
            } else if (!contains(k->args, k->nargs, o)) {
                return bad(c, ki, n, "an operand neither computed here nor read", NULL);
            }
        }
    }
    for (int32_t i = 0; i < k->nargs; i++) {
        int32_t a = k->args[i];
        if (!kf_ir_valid_node(g, a))
            return bad(c, ki, KF_NONE, "a bad node in args", NULL);
        const kf_irnode *y = &g->nodes[a];
        bool input = y->op == KF_OP_INPUT && !y->scalar;
        if (!input && (writer[a] < 0 || writer[a] >= ki))
            return bad(c, ki, a, "reads a node that no earlier kernel writes", NULL);
    }
    for (int32_t i = 0; i < k->nscalars; i++)
        if (!kf_ir_valid_node(g, k->scalars[i]) || !g->nodes[k->scalars[i]].scalar)
            return bad(c, ki, KF_NONE, "a non-scalar in scalars", NULL);
    for (int32_t i = 0; i < k->nouts; i++) {
        int32_t o = k->outs[i];
        if (!kf_ir_valid_node(g, o))
            return bad(c, ki, KF_NONE, "a bad node in outs", NULL);
        const kf_irnode *y = &g->nodes[o];
        bool leaf = kf_ir_op((kf_op)y->op)->kind == KF_KIND_LEAF;
        if (writer[o] != -1)
            return bad(c, ki, o, "written twice", NULL);
        if (leaf ? k->kind != KF_KERNEL_EW : mark[o] != stamp)
            return bad(c, ki, o, "written but not computed here", NULL);
        if (k->kind == KF_KERNEL_EW && !same_shape(y, sp))
            return bad(c, ki, o, "written with a shape other than the kernel's space", NULL);
        if (k->kind == KF_KERNEL_REDUCE && kf_ir_op((kf_op)y->op)->kind != KF_KIND_REDUCE)
            return bad(c, ki, o, "a reduction kernel writes a non-reduction", NULL);
    }
    /* args, scalars, has_take and nops as kf_kernel_fill derives them */
    kf_kernel t = *k;
    t.args = t.scalars = NULL;
    if (kf_kernel_fill(g, &t, mark, stamp + 1) != KF_OK)
        return KF_ERR_NO_MEMORY;
    bool same = t.nargs == k->nargs && t.nscalars == k->nscalars && t.has_take == k->has_take && t.nops == k->nops &&
                (k->nargs == 0 || memcmp(t.args, k->args, (size_t)k->nargs * sizeof *k->args) == 0) &&
                (k->nscalars == 0 || memcmp(t.scalars, k->scalars, (size_t)k->nscalars * sizeof *k->scalars) == 0);
    free(t.args);
    free(t.scalars);
    if (!same)
        return bad(c, ki, KF_NONE, "args, scalars, has_take or nops disagree with its nodes", NULL);
    if (opt) {
        char d[96];
        if (k->nops > opt->max_ops) {
            snprintf(d, sizeof d, " (%u weighted ops, limit %u)", k->nops, opt->max_ops);
            return bad(c, ki, KF_NONE, "over the op limit", d);
        }
        uint32_t pb = kf_kernel_param_bytes(g, k);
        if (pb > opt->max_param_bytes) {
            snprintf(d, sizeof d, " (%u bytes, limit %u)", pb, opt->max_param_bytes);
            return bad(c, ki, KF_NONE, "over the parameter limit", d);
        }
    }
    for (int32_t i = 0; i < k->nouts; i++)
        writer[k->outs[i]] = ki;
    return KF_OK;
}

kf_status kf_plan_check(const kf_plan *p, const kf_fuse_options *opt, char *err, size_t errlen)
{
    if (!p || !p->g) {
        if (err && errlen)
            snprintf(err, errlen, "no plan");
        return KF_ERR_INVALID_ARG;
    }
    const kf_graph *g = p->g;
    checker c = { p, err, errlen };
    uint32_t *mark = calloc((size_t)g->nnodes + 1, sizeof *mark);
    int32_t *writer = malloc(((size_t)g->nnodes + 1) * sizeof *writer);
    if (!mark || !writer) {
        free(mark);
        free(writer);
        if (err && errlen)
            snprintf(err, errlen, "plan check: out of memory");
        return KF_ERR_NO_MEMORY;
    }
    for (int32_t i = 0; i < g->nnodes; i++)
        writer[i] = -1;
    kf_status s = KF_OK;
    for (int32_t ki = 0; ki < p->nkernels && s == KF_OK; ki++)
        s = check_kernel(&c, ki, mark, writer, opt);
    for (int32_t i = 0; i < g->noutputs && s == KF_OK; i++)
        if (writer[g->outputs[i]] < 0)
            s = bad(&c, -1, g->outputs[i], "graph output written by no kernel", NULL);
    for (int32_t i = 0; i < p->nstored && s == KF_OK; i++)
        if (!kf_ir_valid_node(g, p->stored[i]) || writer[p->stored[i]] < 0)
            s = bad(&c, -1, kf_ir_valid_node(g, p->stored[i]) ? p->stored[i] : KF_NONE, "stored node written by no kernel",
                    NULL);
    if (s == KF_ERR_NO_MEMORY && err && errlen)
        snprintf(err, errlen, "plan check: out of memory");
    free(mark);
    free(writer);
    return s;
}
