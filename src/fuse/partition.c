/* Pass partition: group the graph's nodes into kernels (DESIGN.md, Fusion).
 *
 * Roots are the nodes a kernel writes to memory: graph outputs (leaves
 * included: a kernel copies or fills them), reductions, the arrays take
 * gathers from, and stored intermediates.  Every other computed node is
 * evaluated, in registers, inside each kernel whose roots need it (their
 * cone, cut at leaves and roots).  First the expensive nodes shared by two
 * roots are stored (step 2 with every root a kernel of its own, so no cone
 * walk below runs through one of them again and again); then the pass
 * repeats three steps until nothing changes:
 *  1. group: roots in node order join a kernel with the same key (EW: the
 *     root's exact shape; REDUCE: operand shape and axes mask; plus a split
 *     tag) unless that would make a kernel read what it writes itself or
 *     close a cycle between kernels (a bounded search: too far counts as a
 *     cycle); else they start a new kernel.  Inside one EW kernel a root
 *     reads another root of the same kernel from registers (same shape: the
 *     elements line up), except through take, which always reads memory.
 *  2. share: a computed node needed by two kernels is recomputed in each
 *     when its cone costs at most opt.recompute_max weighted ops, else it
 *     becomes a stored root; a stored one that only its own kernel needs
 *     goes back to registers (once).
 *  3. limits: a kernel over opt.max_ops or opt.max_param_bytes gives the
 *     upper half of its roots a new split tag when it has several, else is
 *     cut in two: the nodes that cross a cut near half its ops (or half its
 *     arrays) become roots under a new tag.
 * Each round adds a root or a tag or turns a stored node back once, so the
 * loop ends; every walk is iterative, over node indices (operands first). */
#include "plan.h"

#include <stdlib.h>
#include <string.h>

/* -- Small vectors ------------------------------------------------------------------ */

typedef struct ivec {
    int32_t *v;
    int32_t n, cap;
} ivec;

static bool push(ivec *a, int32_t x)
{
    if (a->n == a->cap) {
        int32_t nc = a->cap ? a->cap * 2 : 4;
        int32_t *nv = realloc(a->v, (size_t)nc * sizeof *nv);
        if (!nv)
            return false;
        a->v = nv;
        a->cap = nc;
    }
    a->v[a->n++] = x;
    return true;
}

/* -- State ----------------------------------------------------------------------------- */

enum { VIA_OTHER = 1, VIA_TAKE = 2 };
/* Why a computed node is a root (pt->mat): an output, a reduction or a
 * take's array; stored because kernels share it; stored to cut a kernel. */
enum { MAT_NO, MAT_ROOT, MAT_SHARED, MAT_CUT };
enum { SHARE_NONE = -1, SHARE_MANY = -2 };
#define MAX_CANDIDATES 4       /* kernels of one key tried before starting a new one */
#define CYCLE_BUDGET 64        /* kernels visited looking for a cycle; more counts as one */

typedef struct pkern {
    uint8_t kind;      /* kf_kernel_kind */
    uint8_t axes;
    int32_t space;
    int32_t tag;
    uint64_t key;
    int32_t prev;      /* previous kernel whose key hashes to the same slot chain */
    ivec members;      /* roots, ascending */
    ivec deps;         /* kernels read (repeats allowed) */
    ivec readers;      /* kernels reading this one (repeats allowed) */
} pkern;

typedef struct part {
    kf_pipeline *p;
    const kf_graph *g;
    int32_t n;
    uint8_t *live, *is_out, *mat;  /* mat: MAT_* */
    uint8_t *demoted;          /* a MAT_SHARED root was turned back once */
    int32_t *tag, ntags;
    int32_t *kof;              /* root -> kernel */
    int32_t *share;            /* computed node -> kernel using it, SHARE_NONE or SHARE_MANY */
    pkern *ks;
    int32_t nk, kcap;
    uint64_t *tkey;            /* key table: hash -> newest kernel (chained by prev) */
    int32_t *tval;
    uint32_t tcap;
    uint32_t *vis, vstamp;     /* per node visit stamps */
    uint32_t *rseen, rstamp;   /* per node: read by the current walk */
    uint8_t *rflag;
    uint32_t *stack;           /* (node << 1) | via take */
    ivec reads;                /* roots the current walk reads */
    uint32_t *ktarget, *kvisit, kstamp;
    int32_t *queue;
    int32_t *pos;              /* node -> position in the kernel being cut */
    int64_t *prefix;
    void *tables;              /* the one allocation holding the tables above */
} part;

static kf_status nomem(part *pt, const char *what)
{
    snprintf(pt->p->err, sizeof pt->p->err, "partition: out of memory %s", what);
    return KF_ERR_NO_MEMORY;
}

static bool is_leaf(const kf_graph *g, int32_t n) { return kf_ir_op((kf_op)g->nodes[n].op)->kind == KF_KIND_LEAF; }
static bool is_reduce(const kf_graph *g, int32_t n)
{
    return kf_ir_op((kf_op)g->nodes[n].op)->kind == KF_KIND_REDUCE;
}

static bool same_shape(const kf_irnode *a, const kf_irnode *b)
{
    return a->rank == b->rank && memcmp(a->dims, b->dims, a->rank * sizeof a->dims[0]) == 0;
}

/* A root's kernel key: kind, space node, axes. */
static void root_key(const part *pt, int32_t m, uint8_t *kind, int32_t *space, uint8_t *axes)
{
    const kf_irnode *x = &pt->g->nodes[m];
    if (is_reduce(pt->g, m)) {
        *kind = KF_KERNEL_REDUCE;
        *space = x->args[0];
        *axes = x->axes;
    } else {
        *kind = KF_KERNEL_EW;
        *space = m;
        *axes = 0;
    }
}

static uint64_t key_hash(const part *pt, uint8_t kind, int32_t space, uint8_t axes, int32_t tag)
{
    const kf_irnode *s = &pt->g->nodes[space];
    uint64_t h = 1469598103934665603ull;
    uint64_t v[4] = { kind, axes, (uint64_t)(uint32_t)tag, s->rank };
    for (int i = 0; i < 4; i++)
        h = (h ^ v[i]) * 1099511628211ull;
    for (int i = 0; i < s->rank; i++)
        h = (h ^ (uint64_t)s->dims[i]) * 1099511628211ull;
    return h ^ (h >> 29);
}

static void part_free(part *pt)
{
    for (int32_t k = 0; k < pt->kcap; k++) {
        free(pt->ks[k].members.v);
        free(pt->ks[k].deps.v);
        free(pt->ks[k].readers.v);
    }
    free(pt->ks);
    free(pt->reads.v);
    free(pt->tables);
}

/* n bytes at offset *o of base (8-byte aligned; NULL when base is NULL). */
static void *carve(char *base, size_t *o, size_t n)
{
    void *p = base ? base + *o : NULL;
    *o += (n + 7) / 8 * 8;
    return p;
}

/* Point the tables into base, zeroed (NULL: only measure); the bytes they
 * take.  One allocation instead of one per table: most graphs are small. */
static size_t layout(part *pt, char *base)
{
    size_t n1 = (size_t)pt->n + 1, o = 0;
    pt->live = carve(base, &o, n1);
    pt->is_out = carve(base, &o, n1);
    pt->mat = carve(base, &o, n1);
    pt->demoted = carve(base, &o, n1);
    pt->tag = carve(base, &o, n1 * sizeof *pt->tag);
    pt->kof = carve(base, &o, n1 * sizeof *pt->kof);
    pt->share = carve(base, &o, n1 * sizeof *pt->share);
    pt->tkey = carve(base, &o, pt->tcap * sizeof *pt->tkey);
    pt->tval = carve(base, &o, pt->tcap * sizeof *pt->tval);
    pt->vis = carve(base, &o, n1 * sizeof *pt->vis);
    pt->rseen = carve(base, &o, n1 * sizeof *pt->rseen);
    pt->rflag = carve(base, &o, n1);
    pt->stack = carve(base, &o, (3 * n1 + 8) * sizeof *pt->stack);
    pt->ktarget = carve(base, &o, n1 * sizeof *pt->ktarget);
    pt->kvisit = carve(base, &o, n1 * sizeof *pt->kvisit);
    pt->queue = carve(base, &o, n1 * sizeof *pt->queue);
    pt->pos = carve(base, &o, n1 * sizeof *pt->pos);
    pt->prefix = carve(base, &o, n1 * sizeof *pt->prefix);
    return o;
}

static kf_status part_init(part *pt, kf_pipeline *p)
{
    const kf_graph *g = p->g;
    memset(pt, 0, sizeof *pt);
    pt->p = p;
    pt->g = g;
    pt->n = g->nnodes;
    size_t n1 = (size_t)g->nnodes + 1;
    pt->tcap = 16;
    while (pt->tcap < 2 * n1)
        pt->tcap *= 2;
    if (!(pt->tables = calloc(1, layout(pt, NULL))))
        return nomem(pt, "for its tables");
    layout(pt, pt->tables);
    /* live nodes, and the roots every plan has */
    for (int32_t i = 0; i < g->noutputs; i++)
        pt->live[g->outputs[i]] = pt->is_out[g->outputs[i]] = 1;
    for (int32_t n = g->nnodes - 1; n >= 0; n--) {
        const kf_irnode *x = &g->nodes[n];
        if (!pt->live[n])
            continue;
        for (int a = 0; a < x->nargs; a++)
            pt->live[x->args[a]] = 1;
        if (is_leaf(g, n))
            continue;
        if (pt->is_out[n] || is_reduce(g, n))
            pt->mat[n] = MAT_ROOT;
        if (x->op == KF_OP_TAKE && !is_leaf(g, x->args[0]))
            pt->mat[x->args[0]] = MAT_ROOT;
    }
    return KF_OK;
}

/* -- Walks ------------------------------------------------------------------------------ */

/* Collect the roots that root or node m reads through its cone (computed
 * non-root nodes are walked through, leaves skipped) into pt->reads, each
 * with how it is reached (rflag: VIA_TAKE as take's array, VIA_OTHER).
 * When nodes is not NULL the walked computed nodes are appended to it. */
static bool walk_cone(part *pt, int32_t m, ivec *nodes)
{
    const kf_graph *g = pt->g;
    uint32_t vs = ++pt->vstamp, rs = ++pt->rstamp;
    int32_t sp = 0;
    pt->reads.n = 0;
    const kf_irnode *x = &g->nodes[m];
    for (int a = x->nargs - 1; a >= 0; a--)
        pt->stack[sp++] = ((uint32_t)x->args[a] << 1) | (x->op == KF_OP_TAKE && a == 0);
    while (sp > 0) {
        uint32_t e = pt->stack[--sp];
        int32_t n = (int32_t)(e >> 1);
        if (is_leaf(g, n))
            continue;
        if (pt->mat[n]) {
            if (pt->rseen[n] != rs) {
                pt->rseen[n] = rs;
                pt->rflag[n] = 0;
                if (!push(&pt->reads, n))
                    return false;
            }
            pt->rflag[n] |= (e & 1) ? VIA_TAKE : VIA_OTHER;
            continue;
        }
        if (pt->vis[n] == vs)
            continue;
        pt->vis[n] = vs;
        if (nodes && !push(nodes, n))
            return false;
        const kf_irnode *y = &g->nodes[n];
        for (int a = y->nargs - 1; a >= 0; a--)
            pt->stack[sp++] = ((uint32_t)y->args[a] << 1) | (y->op == KF_OP_TAKE && a == 0);
    }
    return true;
}

/* Weighted cost of n's cone down to leaves and roots, counting each node
 * once; stops early once it is over 'limit'. */
static uint32_t cone_cost(part *pt, int32_t n, uint32_t limit)
{
    const kf_graph *g = pt->g;
    uint32_t vs = ++pt->vstamp;
    uint64_t cost = 0;
    int32_t sp = 0;
    pt->stack[sp++] = (uint32_t)n;
    while (sp > 0 && cost <= limit) {
        int32_t v = (int32_t)pt->stack[--sp];
        if (pt->vis[v] == vs || is_leaf(g, v) || (pt->mat[v] && v != n))
            continue;
        pt->vis[v] = vs;
        const kf_irnode *y = &g->nodes[v];
        cost += kf_fuse_op_weight((kf_op)y->op);
        for (int a = 0; a < y->nargs; a++)
            pt->stack[sp++] = (uint32_t)y->args[a];
    }
    return cost > UINT32_MAX ? UINT32_MAX : (uint32_t)cost;
}

/* -- Step 1: group roots into kernels ------------------------------------------------------ */

static bool key_matches(const part *pt, const pkern *k, uint8_t kind, int32_t space, uint8_t axes, int32_t tag)
{
    return k->kind == kind && k->tag == tag && k->axes == axes &&
           same_shape(&pt->g->nodes[k->space], &pt->g->nodes[space]);
}

/* Whether root m (its reads in pt->reads) may join kernel k: it must not
 * read k's own output from memory, and k must not reach a kernel m reads. */
static bool can_join(part *pt, int32_t k)
{
    uint32_t ts = ++pt->kstamp;
    bool any = false;
    for (int32_t i = 0; i < pt->reads.n; i++) {
        int32_t a = pt->reads.v[i], ka = pt->kof[a];
        if (ka == k) {
            if (pt->ks[k].kind == KF_KERNEL_EW && !(pt->rflag[a] & VIA_TAKE))
                continue; /* computed by k itself, read from registers */
            return false;
        }
        pt->ktarget[ka] = ts;
        any = true;
    }
    if (!any)
        return true;
    uint32_t vs = ++pt->kstamp;
    int32_t head = 0, tail = 0, seen = 0;
    pt->queue[tail++] = k;
    pt->kvisit[k] = vs;
    while (head < tail) {
        const pkern *q = &pt->ks[pt->queue[head++]];
        for (int32_t i = 0; i < q->readers.n; i++) {
            int32_t r = q->readers.v[i];
            if (pt->ktarget[r] == ts || ++seen > CYCLE_BUDGET)
                return false;
            if (pt->kvisit[r] != vs) {
                pt->kvisit[r] = vs;
                pt->queue[tail++] = r;
            }
        }
    }
    return true;
}

static int32_t new_kernel(part *pt, uint8_t kind, int32_t space, uint8_t axes, int32_t tag, uint64_t h)
{
    if (pt->nk == pt->kcap) {
        int32_t nc = pt->kcap ? pt->kcap * 2 : 16;
        pkern *nks = realloc(pt->ks, (size_t)nc * sizeof *nks);
        if (!nks)
            return -1;
        memset(nks + pt->kcap, 0, (size_t)(nc - pt->kcap) * sizeof *nks);
        pt->ks = nks;
        pt->kcap = nc;
    }
    pkern *k = &pt->ks[pt->nk];
    k->kind = kind;
    k->space = space;
    k->axes = axes;
    k->tag = tag;
    k->key = h;
    k->members.n = k->deps.n = k->readers.n = 0;
    uint32_t j = (uint32_t)h & (pt->tcap - 1);
    while (pt->tval[j] >= 0 && pt->tkey[j] != h)
        j = (j + 1) & (pt->tcap - 1);
    k->prev = pt->tval[j];
    pt->tkey[j] = h;
    pt->tval[j] = pt->nk;
    return pt->nk++;
}

static kf_status group(part *pt)
{
    const kf_graph *g = pt->g;
    pt->nk = 0;
    for (uint32_t j = 0; j < pt->tcap; j++)
        pt->tval[j] = -1;
    for (int32_t m = 0; m < pt->n; m++) {
        pt->kof[m] = -1;
        if (!pt->live[m] || !(pt->mat[m] || (pt->is_out[m] && is_leaf(g, m))))
            continue;
        if (!walk_cone(pt, m, NULL))
            return nomem(pt, "walking a cone");
        uint8_t kind, axes;
        int32_t space;
        root_key(pt, m, &kind, &space, &axes);
        uint64_t h = key_hash(pt, kind, space, axes, pt->tag[m]);
        uint32_t j = (uint32_t)h & (pt->tcap - 1);
        while (pt->tval[j] >= 0 && pt->tkey[j] != h)
            j = (j + 1) & (pt->tcap - 1);
        int32_t chosen = -1, tried = 0;
        for (int32_t k = pt->tval[j]; k >= 0 && tried < MAX_CANDIDATES; k = pt->ks[k].prev) {
            if (!key_matches(pt, &pt->ks[k], kind, space, axes, pt->tag[m]))
                continue;
            tried++;
            if (can_join(pt, k)) {
                chosen = k;
                break;
            }
        }
        if (chosen < 0 && (chosen = new_kernel(pt, kind, space, axes, pt->tag[m], h)) < 0)
            return nomem(pt, "for kernels");
        pkern *k = &pt->ks[chosen];
        pt->kof[m] = chosen;
        if (!push(&k->members, m))
            return nomem(pt, "for kernel members");
        uint32_t ds = ++pt->kstamp;
        for (int32_t i = 0; i < pt->reads.n; i++) {
            int32_t a = pt->reads.v[i], ka = pt->kof[a];
            if (ka == chosen || pt->ktarget[ka] == ds)
                continue;
            pt->ktarget[ka] = ds;
            if (!push(&pt->ks[chosen].deps, ka) || !push(&pt->ks[ka].readers, chosen))
                return nomem(pt, "for kernel edges");
        }
    }
    return KF_OK;
}

/* -- Step 2: shared intermediates ---------------------------------------------------------- */

static void remove_member(pkern *k, int32_t m)
{
    int32_t j = 0;
    for (int32_t i = 0; i < k->members.n; i++)
        if (k->members.v[i] != m)
            k->members.v[j++] = k->members.v[i];
    k->members.n = j;
}

/* Two sweeps.  Backwards (a node's users all come after it): for every
 * computed node, the one kernel that uses it or SHARE_MANY; with pre,
 * before any grouping, every root counts as a kernel of its own.  A
 * MAT_SHARED root whose users all sit in its own (EW) kernel turns back into
 * a node computed in registers there (once per node, and only when its cone
 * is within max_ops, so no walk through it grows without bound).  Forwards,
 * so the costs below a node are settled when it is costed: a node used by
 * many kernels whose cone costs more than recompute_max is stored.  Storing
 * the expensive shared nodes before the first grouping (pre) keeps every
 * cone walk of the grouping short.  True when a node was stored. */
static bool share(part *pt, bool pre)
{
    const kf_graph *g = pt->g;
    const kf_fuse_options *opt = &pt->p->opt;
    bool changed = false;
    for (int32_t n = 0; n < pt->n; n++)
        pt->share[n] = SHARE_NONE;
    for (int32_t n = pt->n - 1; n >= 0; n--) {
        if (!pt->live[n] || is_leaf(g, n))
            continue;
        int32_t k = pt->share[n];
        if (pt->mat[n] == MAT_SHARED && !pre && !pt->demoted[n] && k >= 0 && k == pt->kof[n] &&
            cone_cost(pt, n, opt->max_ops) <= opt->max_ops) {
            pt->mat[n] = MAT_NO;
            pt->demoted[n] = 1;
            remove_member(&pt->ks[k], n);
            pt->kof[n] = -1;
        } else if (pt->mat[n]) {
            k = pre ? n : pt->kof[n];
        } else if (k == SHARE_NONE) {
            continue;
        }
        const kf_irnode *x = &g->nodes[n];
        for (int a = 0; a < x->nargs; a++) {
            int32_t o = x->args[a];
            if (is_leaf(g, o))
                continue;
            if (pt->share[o] == SHARE_NONE)
                pt->share[o] = k;
            else if (pt->share[o] != k)
                pt->share[o] = SHARE_MANY;
        }
    }
    for (int32_t n = 0; n < pt->n; n++)
        if (pt->live[n] && !pt->mat[n] && pt->share[n] == SHARE_MANY && !is_leaf(g, n) &&
            cone_cost(pt, n, opt->recompute_max) > opt->recompute_max) {
            pt->mat[n] = MAT_SHARED;
            pt->tag[n] = 0;
            changed = true;
        }
    return changed;
}

/* -- Step 3: kernels and their limits ------------------------------------------------------- */

static void free_kernels(kf_kernel *ks, int32_t n)
{
    if (!ks)
        return;
    for (int32_t i = 0; i < n; i++) {
        free(ks[i].nodes);
        free(ks[i].args);
        free(ks[i].outs);
        free(ks[i].scalars);
    }
    free(ks);
}

/* Build kernel i of the grouping: nodes (its computed roots and the cones
 * they need), outs (its roots), then args and the rest by kf_kernel_fill. */
static kf_status build_kernel(part *pt, int32_t i, kf_kernel *out)
{
    const kf_graph *g = pt->g;
    const pkern *pk = &pt->ks[i];
    ivec nodes = { 0 };
    memset(out, 0, sizeof *out);
    out->kind = (kf_kernel_kind)pk->kind;
    out->axes = pk->axes;
    /* the first root's space (the one the kernel started with may have
     * gone back to registers since; all have the same shape) */
    uint8_t kind, axes;
    root_key(pt, pk->members.v[0], &kind, &out->space, &axes);
    for (int32_t j = 0; j < pk->members.n; j++) {
        int32_t m = pk->members.v[j];
        if (!is_leaf(g, m) && !push(&nodes, m))
            goto oom;
    }
    /* one visit stamp for the whole kernel: a node needed by two roots is
     * listed once */
    uint32_t vs = ++pt->vstamp;
    for (int32_t j = 0; j < pk->members.n; j++) {
        int32_t m = pk->members.v[j];
        int32_t sp = 0;
        const kf_irnode *x = &g->nodes[m];
        for (int a = 0; a < x->nargs; a++)
            pt->stack[sp++] = (uint32_t)x->args[a];
        while (sp > 0) {
            int32_t n = (int32_t)pt->stack[--sp];
            if (pt->vis[n] == vs || is_leaf(g, n) || pt->mat[n])
                continue;
            pt->vis[n] = vs;
            if (!push(&nodes, n))
                goto oom;
            const kf_irnode *y = &g->nodes[n];
            for (int a = 0; a < y->nargs; a++)
                pt->stack[sp++] = (uint32_t)y->args[a];
        }
    }
    kf_fuse_sort_i32(nodes.v, nodes.n);
    out->nodes = nodes.v;
    out->nnodes = nodes.n;
    nodes.v = NULL;
    out->outs = malloc((size_t)pk->members.n * sizeof *out->outs);
    if (!out->outs)
        goto oom;
    memcpy(out->outs, pk->members.v, (size_t)pk->members.n * sizeof *out->outs);
    out->nouts = pk->members.n;
    /* vis entries equal vs only for this kernel's nodes; fill marks the same */
    if (kf_kernel_fill(g, out, pt->vis, vs) != KF_OK)
        goto oom;
    return KF_OK;
oom:
    free(nodes.v);
    return nomem(pt, "building a kernel");
}

/* Cut single-root kernel k in two: with its nodes in order (operands
 * first), a cut after position h splits them into a prefix and a suffix;
 * the prefix nodes the suffix still reads (the frontier) become roots under
 * one new tag, so the prefix is computed by kernels of its own and the
 * suffix reads the frontier from memory.  h is taken where the prefix holds
 * a quarter to three quarters of the kernel's weighted ops (by_ops) or of
 * the arrays and scalars it reads, with the smallest frontier, then closest
 * to half.  False when k has nothing to cut (its root alone). */
static bool cut_kernel(part *pt, const kf_kernel *k, bool by_ops)
{
    const kf_graph *g = pt->g;
    int32_t nn = k->nnodes;
    if (nn < 2)
        return false;
    int32_t *last = pt->queue;      /* scratch: last user's position, per position */
    int32_t *delta = pt->share;     /* scratch: frontier size changes, per position */
    int64_t *w = pt->prefix;        /* scratch: prefix measure, per position */
    uint32_t ks = ++pt->vstamp, rs = ++pt->rstamp;
    for (int32_t i = 0; i < nn; i++) {
        pt->vis[k->nodes[i]] = ks;
        pt->pos[k->nodes[i]] = i;
        last[i] = i;
        delta[i] = 0;
    }
    int64_t acc = 0;
    for (int32_t i = 0; i < nn; i++) {
        const kf_irnode *x = &g->nodes[k->nodes[i]];
        if (by_ops)
            acc += kf_fuse_op_weight((kf_op)x->op);
        for (int a = 0; a < x->nargs; a++) {
            int32_t o = x->args[a];
            if (pt->vis[o] == ks) {
                last[pt->pos[o]] = i;
            } else if (!by_ops && g->nodes[o].op != KF_OP_CONST && pt->rseen[o] != rs) {
                pt->rseen[o] = rs;
                acc++;
            }
        }
        w[i] = acc;
    }
    for (int32_t i = 0; i < nn; i++)
        if (last[i] > i) {
            delta[i]++;
            delta[last[i]]--;
        }
    int64_t total = w[nn - 1];
    int32_t best = -1;
    int64_t best_f = 0, best_d = 0;
    for (int pass = 0; pass < 2 && best < 0; pass++) {
        int64_t f = 0;
        for (int32_t h = 0; h < nn - 1; h++) {
            f += delta[h];
            bool in_window = 4 * w[h] >= total && 4 * w[h] <= 3 * total;
            if (pass == 0 && !in_window)
                continue;
            int64_t d = 2 * w[h] - total;
            if (d < 0)
                d = -d;
            if (best < 0 || f < best_f || (f == best_f && d < best_d)) {
                best = h;
                best_f = f;
                best_d = d;
            }
        }
    }
    int32_t t = ++pt->ntags;
    for (int32_t i = 0; i <= best; i++)
        if (last[i] > best) {
            pt->mat[k->nodes[i]] = MAT_CUT;
            pt->tag[k->nodes[i]] = t;
        }
    return true;
}

/* Check every kernel against the limits and split those over them.
 * *changed tells whether anything was split; on success with no change the
 * built kernels are handed over in *out. */
static kf_status limits(part *pt, kf_kernel **out, bool *changed)
{
    const kf_graph *g = pt->g;
    const kf_fuse_options *opt = &pt->p->opt;
    kf_kernel *ks = calloc((size_t)pt->nk + 1, sizeof *ks);
    if (!ks)
        return nomem(pt, "for kernels");
    *changed = false;
    kf_status s = KF_OK;
    int32_t built = 0;
    for (; built < pt->nk && s == KF_OK; built++) {
        if (pt->ks[built].members.n == 0) {
            snprintf(pt->p->err, sizeof pt->p->err, "partition: kernel %d of graph '%s' lost all its roots (a kfuse bug)",
                     (int)built, g->name);
            s = KF_ERR_INVALID_ARG;
            break;
        }
        s = build_kernel(pt, built, &ks[built]);
        if (s != KF_OK) {
            built++; /* free what it did build */
            break;
        }
        kf_kernel *k = &ks[built];
        uint32_t pb = kf_kernel_param_bytes(g, k);
        bool over_ops = k->nops > opt->max_ops;
        if (!over_ops && pb <= opt->max_param_bytes)
            continue;
        pkern *pk = &pt->ks[built];
        *changed = true;
        if (pk->members.n > 1) {
            /* several roots: the upper half (by node order, so registers
             * still flow one way) goes to a kernel of its own */
            int32_t t = ++pt->ntags;
            for (int32_t j = pk->members.n / 2; j < pk->members.n; j++)
                pt->tag[pk->members.v[j]] = t;
            continue;
        }
        int32_t root = pk->members.v[0];
        if (!cut_kernel(pt, k, over_ops)) {
            char nm[128];
            kf_fuse_node_name(g, root, nm, sizeof nm);
            snprintf(pt->p->err, sizeof pt->p->err,
                     "partition: node '%s' needs a kernel of %u weighted ops and %u parameter bytes, over the limits "
                     "(max_ops %u, max_param_bytes %u), and that kernel cannot be split further",
                     nm, k->nops, pb, opt->max_ops, opt->max_param_bytes);
            s = KF_ERR_LIMIT;
            built++;
            break;
        }
    }
    if (s != KF_OK || *changed) {
        free_kernels(ks, built);
        return s;
    }
    *out = ks;
    return KF_OK;
}

/* -- The pass ------------------------------------------------------------------------------------ */

kf_status kf_pass_partition(kf_pipeline *p)
{
    if (p->plan) {
        snprintf(p->err, sizeof p->err, "partition: the pipeline already has a plan");
        return KF_ERR_INVALID_ARG;
    }
    part pt;
    kf_status s = part_init(&pt, p);
    kf_kernel *ks = NULL;
    /* every round adds a root or a split tag: at most a few per node */
    int64_t max_rounds = 4 * (int64_t)pt.n + 64;
    if (s == KF_OK)
        share(&pt, true);
    for (int64_t round = 0; s == KF_OK; round++) {
        if (round > max_rounds) {
            snprintf(p->err, sizeof p->err, "partition: graph '%s' did not settle after %lld rounds", p->g->name,
                     (long long)round);
            s = KF_ERR_LIMIT;
            break;
        }
        s = group(&pt);
        if (s != KF_OK || share(&pt, false))
            continue;
        bool changed = false;
        s = limits(&pt, &ks, &changed);
        if (s == KF_OK && !changed)
            break;
    }
    if (s != KF_OK) {
        part_free(&pt);
        return s;
    }

    kf_plan *plan = calloc(1, sizeof *plan);
    int32_t nstored = 0;
    for (int32_t n = 0; n < pt.n; n++)
        nstored += pt.live[n] && pt.mat[n] && !pt.is_out[n];
    int32_t *stored = malloc(((size_t)nstored + 1) * sizeof *stored);
    if (!plan || !stored) {
        free(plan);
        free(stored);
        free_kernels(ks, pt.nk);
        s = nomem(&pt, "for the plan");
        part_free(&pt);
        return s;
    }
    nstored = 0;
    for (int32_t n = 0; n < pt.n; n++)
        if (pt.live[n] && pt.mat[n] && !pt.is_out[n])
            stored[nstored++] = n;
    plan->g = p->g;
    plan->kernels = ks;
    plan->nkernels = pt.nk;
    plan->stored = stored;
    plan->nstored = nstored;
    p->plan = plan;
    part_free(&pt);
    return KF_OK;
}
