/* Kernel analysis and the launch ABI: plan checks, structural hash and
 * entry names, the meta block, variant choice and launch rules.  The
 * emitter and every runtime backend use these, so a choice made here is
 * made the same way everywhere. */
#define XXH_INLINE_ALL /* XXH3_state_t on the stack; no call into libxxhash (the first one in a
                        * process costs a symbol lookup) */
#include "cg.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

static const char *const variant_names[KF_CG_VARIANT_COUNT] = { "c32", "c64", "s32", "s64", "b64", "g64", "h64",
                                                                    "b1", "seq", "tile", "comb", "warp", "warpv" };

const char *kf_cg_variant_name(kf_cg_variant v)
{
    return (unsigned)v < KF_CG_VARIANT_COUNT ? variant_names[v] : NULL;
}

int kf_cg_b_vecs(kf_cg_variant v)
{
    return v == KF_CG_B64 ? KF_CG_B64_VECS : 1;
}

bool kf_cg_array_pointers(kf_target t) { return t == KF_TARGET_CUDA; }

const char *kf_cg_target_name(kf_target t)
{
    return t == KF_TARGET_CUDA ? "cuda" : t == KF_TARGET_OPENCL ? "opencl" : t == KF_TARGET_LLVM ? "llvm" : NULL;
}

static kf_status fail(char *err, size_t errlen, kf_status s, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static kf_status fail(char *err, size_t errlen, kf_status s, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return s;
}

/* -- Reductions ----------------------------------------------------------------- */

bool kf_cg_red_is_arg(kf_op op) { return op == KF_OP_ARGMIN || op == KF_OP_ARGMAX; }

bool kf_cg_red_float(kf_op op, kf_dtype t)
{
    (void)op;
    return kf_dt_is_float(t);
}

size_t kf_cg_red_acc_size(kf_op op, kf_dtype t)
{
    if (t == KF_F64)
        return 8;
    if (kf_dt_is_float(t))
        return 4;
    if (op == KF_OP_SUM || op == KF_OP_PROD || op == KF_OP_MEAN)
        return 8;   /* integer sums and products wrap in 64 bits */
    return kf_dtype_size(t) == 8 ? 8 : 4;
}

/* -- Kernel analysis -------------------------------------------------------------- */

bool kf_cg_dim_bcast(const kf_cg_kinfo *ki, const kf_irnode *x, int d)
{
    int j = d - (ki->R - x->rank);
    return j < 0 || x->dims[j] == 1;
}

static const char *nname(const kf_graph *g, int32_t n, char *buf, size_t len)
{
    if (g->nodes[n].name)
        return g->nodes[n].name;
    snprintf(buf, len, "%%%d (%s)", n, kf_op_name((kf_op)g->nodes[n].op));
    return buf;
}

/* Does node x broadcast into the iteration space (right-aligned, each dim
 * equal to the space's or a literal 1)? */
static bool fits_space(const kf_cg_kinfo *ki, const kf_irnode *x)
{
    if (x->rank > ki->R)
        return false;
    for (int j = 0; j < x->rank; j++) {
        int d = ki->R - x->rank + j;
        if (x->dims[j] != 1 && x->dims[j] != ki->dims[d])
            return false;
    }
    return true;
}

/* Byte encoding for the structural hash, hashed as it is written (the
 * streaming hash of the pieces equals the hash of their concatenation):
 * no allocation, whatever the kernel's size. */
typedef struct henc {
    XXH3_state_t st;
    unsigned char buf[1024];
    size_t n;
    int32_t *symnum;
    int32_t nextsym;
} henc;

static void h_u64(henc *h, uint64_t v)
{
    if (h->n + 8 > sizeof h->buf) {
        XXH3_64bits_update(&h->st, h->buf, h->n);
        h->n = 0;
    }
    unsigned char *b = h->buf + h->n;   /* little-endian, written out so that the compiler merges the stores */
    b[0] = (unsigned char)v;
    b[1] = (unsigned char)(v >> 8);
    b[2] = (unsigned char)(v >> 16);
    b[3] = (unsigned char)(v >> 24);
    b[4] = (unsigned char)(v >> 32);
    b[5] = (unsigned char)(v >> 40);
    b[6] = (unsigned char)(v >> 48);
    b[7] = (unsigned char)(v >> 56);
    h->n += 8;
}

static void h_dims(henc *h, int rank, const int64_t *dims)
{
    h_u64(h, (uint64_t)rank);
    for (int i = 0; i < rank; i++) {
        if (dims[i] >= 0) {
            h_u64(h, (uint64_t)dims[i]);
        } else {
            int s = KF_IR_SYM_INDEX(dims[i]);
            if (h->symnum[s] < 0)
                h->symnum[s] = h->nextsym++;
            h_u64(h, 0x8000000000000000ull | (uint64_t)h->symnum[s]);
        }
    }
}

static void h_operand(henc *h, const kf_cg_kinfo *ki, int32_t n)
{
    const kf_irnode *y = &ki->g->nodes[n];
    int r = kf_cg_role(ki, n);
    h_u64(h, (uint64_t)r << 32 | (uint64_t)(uint32_t)kf_cg_role_index(ki, n));
    if (r == KF_CG_ROLE_NONE) {   /* a literal */
        uint64_t bits;
        memcpy(&bits, &y->lit, 8);
        h_u64(h, y->dtype);
        h_u64(h, bits);
    }
}

static kf_status kernel_hash(kf_cg_kinfo *ki)
{
    const kf_graph *g = ki->g;
    const kf_kernel *k = ki->k;
    henc h;
    XXH3_INITSTATE(&h.st);
    XXH3_64bits_reset(&h.st);
    static const char magic[] = "kfuse-cg-1";
    memcpy(h.buf, magic, sizeof magic - 1);
    h.n = sizeof magic - 1;
    h.nextsym = 0;
    if (!(h.symnum = malloc(((size_t)g->nsyms + 1) * sizeof *h.symnum)))
        return KF_ERR_NO_MEMORY;
    for (int32_t i = 0; i < g->nsyms; i++)
        h.symnum[i] = -1;
    h_u64(&h, (uint64_t)k->kind);
    h_u64(&h, k->kind == KF_KERNEL_REDUCE ? k->axes : 0);
    h_dims(&h, ki->R, ki->dims);
    h_u64(&h, (uint64_t)k->nargs);
    for (int i = 0; i < k->nargs; i++) {
        const kf_irnode *x = &g->nodes[k->args[i]];
        h_u64(&h, x->dtype);
        h_u64(&h, (uint64_t)ki->arg_ew[i] | (uint64_t)(ki->tslot[i] + 1) << 8);
        h_dims(&h, x->rank, x->dims);
    }
    h_u64(&h, (uint64_t)k->nscalars);
    for (int i = 0; i < k->nscalars; i++)
        h_u64(&h, g->nodes[k->scalars[i]].dtype);
    h_u64(&h, (uint64_t)k->nnodes);
    for (int i = 0; i < k->nnodes; i++) {
        const kf_irnode *x = &g->nodes[k->nodes[i]];
        h_u64(&h, x->op);
        h_u64(&h, x->dtype);
        h_u64(&h, (uint64_t)x->axes | (uint64_t)x->keepdims << 8 | (uint64_t)(uint8_t)x->axis << 16);
        h_dims(&h, x->rank, x->dims);
        h_u64(&h, x->nargs);
        for (int a = 0; a < x->nargs; a++)
            h_operand(&h, ki, x->args[a]);
    }
    h_u64(&h, (uint64_t)k->nouts);
    for (int i = 0; i < k->nouts; i++) {
        const kf_irnode *x = &g->nodes[k->outs[i]];
        h_operand(&h, ki, k->outs[i]);
        h_u64(&h, x->dtype);
        h_dims(&h, x->rank, x->dims);
    }
    h_u64(&h, k->has_take);
    free(h.symnum);
    XXH3_64bits_update(&h.st, h.buf, h.n);
    uint64_t v = XXH3_64bits_digest(&h.st);
    ki->hash = (uint32_t)(v ^ (v >> 32));
    return KF_OK;
}

void kf_cg_kinfo_free(kf_cg_kinfo *ki)
{
    free(ki->role);
    free(ki->arg_ew);
    free(ki->tslot);
    free(ki->bcast_all);
    free(ki->bcast_lead);
    memset(ki, 0, sizeof *ki);
}

/* Ops whose GPU code branches on the operands (a slow path for rare
 * inputs: division and remainder, square roots, sin/cos/tan's large
 * arguments, pow, ...).  NVCC then runs the elements of one thread's
 * vector one after another instead of interleaving them.  Seen in the SASS
 * of a one-op c64 kernel (f32, sm_90): these have 7 to 47 branches or
 * calls, every other float op 2 (the loop's own), exp, log and tanh
 * included. */
static bool branchy_op(kf_op op)
{
    switch (op) {
    case KF_OP_DIV: case KF_OP_MOD: case KF_OP_RCP: case KF_OP_SQRT: case KF_OP_RSQRT: case KF_OP_SIN:
    case KF_OP_COS: case KF_OP_TAN: case KF_OP_POW: case KF_OP_ATAN2: case KF_OP_HYPOT: case KF_OP_SIGMOID:
    case KF_OP_LOG1P:
        return true;
    default:
        return false;
    }
}

/* Does node x branch?  Under fast math an f32 (f16, bf16) division,
 * reciprocal, rsqrt, sigmoid, sin, cos and tan are the target's
 * approximate functions (emit.c: fast_fn, fdiv_of), single instructions
 * or a few without a slow path: boxplus's fast PTX has the loops'
 * branches only (bench/results/h200-2026-11-29-s35-analysis.md). */
static bool branchy_node(const kf_graph *g, const kf_irnode *x, bool fast_math)
{
    kf_op op = (kf_op)x->op;
    if (!branchy_op(op))
        return false;
    kf_dtype t = (kf_dtype)g->nodes[x->args[0]].dtype;
    bool approx = op == KF_OP_DIV || op == KF_OP_RCP || op == KF_OP_RSQRT || op == KF_OP_SIGMOID ||
                  op == KF_OP_SIN || op == KF_OP_COS || op == KF_OP_TAN;
    return !(fast_math && approx && kf_dt_is_float(t) && t != KF_F64);
}

/* Can a call fit b64 with outer dims 0..split-1?  Not where literal dims
 * rule out every call (b64's text would then test against constants): a
 * 0, or literal inner dims that make no whole number of vectors. */
static bool b64_dims(const kf_cg_kinfo *ki, int split)
{
    int64_t inner = 1;   /* of the inner dims; -1 once one is symbolic */
    for (int d = 0; d < ki->R; d++) {
        int64_t v = ki->dims[d];
        if (v == 0)
            return false;
        if (d >= split)
            inner = inner < 0 || v < 0 || inner > INT64_MAX / v ? -1 : inner * v;
    }
    return !(inner > 0 && inner % ki->vecw != 0);
}

/* The b64 variant's split: args read at the iteration point that are
 * statically broadcast on a leading run of the space's dims and on no
 * other dim, all on the same run (discount's mb[m,k] against [t,m,k]).
 * b64 reads such an arg once per block for every step of the leading dims
 * in turn, where the other variants walk the whole space once per step. */
static void lead_split(kf_cg_kinfo *ki)
{
    const kf_kernel *k = ki->k;
    int split = 0;
    for (int i = 0; i < k->nargs; i++) {
        if (!ki->arg_ew[i] || ki->bcast_all[i])
            continue;
        const kf_irnode *x = &ki->g->nodes[k->args[i]];
        int lead = 0;
        while (lead < ki->R && kf_cg_dim_bcast(ki, x, lead))
            lead++;
        for (int d = lead; d < ki->R; d++)
            if (kf_cg_dim_bcast(ki, x, d))
                goto none;
        if (lead == 0)
            continue;
        if ((split && lead != split) || lead == ki->R)
            goto none;
        split = lead;
        ki->bcast_lead[i] = true;
    }
    if (!split || !b64_dims(ki, split))
        goto none;
    ki->bsplit = split;
    return;
none:
    memset(ki->bcast_lead, 0, (size_t)ki->nb * sizeof *ki->bcast_lead);
    ki->bsplit = 0;
}

kf_status kf_cg_kinfo_init(kf_cg_kinfo *ki, const kf_plan *p, int kidx, bool fast_math, char *err, size_t errlen)
{
    memset(ki, 0, sizeof *ki);
    if (!p || !p->g || kidx < 0 || kidx >= p->nkernels || !p->kernels)
        return fail(err, errlen, KF_ERR_INVALID_ARG, "codegen: no kernel %d in the plan", kidx);
    const kf_graph *g = p->g;
    const kf_kernel *k = &p->kernels[kidx];
    char nb1[96], nb2[96];
    ki->p = p;
    ki->g = g;
    ki->k = k;
    ki->kidx = kidx;
    if (!kf_ir_valid_node(g, k->space))
        return fail(err, errlen, KF_ERR_INVALID_ARG, "codegen: kernel %d: bad iteration space node %d", kidx, k->space);
    ki->R = g->nodes[k->space].rank;
    ki->dims = g->nodes[k->space].dims;
    if (k->nargs < 0 || k->nouts <= 0 || k->nscalars < 0 || k->nnodes < 0 || (k->nargs && !k->args) ||
        !k->outs || (k->nscalars && !k->scalars) || (k->nnodes && !k->nodes))
        return fail(err, errlen, KF_ERR_INVALID_ARG, "codegen: kernel %d: malformed lists (it must write something)", kidx);
    ki->nb = k->nargs + k->nouts;
    if (ki->nb > KF_CG_MAX_BUFS)
        return fail(err, errlen, KF_ERR_LIMIT, "codegen: kernel %d has %d buffers (limit %d)", kidx, ki->nb,
                    KF_CG_MAX_BUFS);
    ki->role = calloc((size_t)g->nnodes + 1, sizeof *ki->role);
    ki->arg_ew = calloc((size_t)k->nargs + 1, sizeof *ki->arg_ew);
    ki->tslot = malloc(((size_t)k->nargs + 1) * sizeof *ki->tslot);
    ki->bcast_all = calloc((size_t)ki->nb + 1, sizeof *ki->bcast_all);
    ki->bcast_lead = calloc((size_t)ki->nb + 1, sizeof *ki->bcast_lead);
    if (!ki->role || !ki->arg_ew || !ki->tslot || !ki->bcast_all || !ki->bcast_lead) {
        kf_cg_kinfo_free(ki);
        return fail(err, errlen, KF_ERR_NO_MEMORY, "codegen: out of memory");
    }
    kf_status st = KF_ERR_INVALID_ARG;
#define BAD(...)                                 \
    do {                                         \
        fail(err, errlen, st, __VA_ARGS__);      \
        goto bad;                                \
    } while (0)

    for (int i = 0; i < k->nargs; i++) {
        int32_t n = k->args[i];
        ki->tslot[i] = -1;
        if (!kf_ir_valid_node(g, n) || ki->role[n] || g->nodes[n].scalar)
            BAD("codegen: kernel %d: arg %d (node %d) is invalid, repeated or a scalar", kidx, i, n);
        ki->role[n] = KF_CG_ROLE_ARG << 24 | i;
    }
    for (int i = 0; i < k->nscalars; i++) {
        int32_t n = k->scalars[i];
        if (!kf_ir_valid_node(g, n) || ki->role[n] || !g->nodes[n].scalar)
            BAD("codegen: kernel %d: scalar %d (node %d) is invalid, repeated or not a scalar input", kidx, i, n);
        ki->role[n] = KF_CG_ROLE_SCALAR << 24 | i;
    }
    for (int i = 0; i < k->nnodes; i++) {
        int32_t n = k->nodes[i];
        if (!kf_ir_valid_node(g, n) || ki->role[n] || kf_ir_op((kf_op)g->nodes[n].op)->kind == KF_KIND_LEAF)
            BAD("codegen: kernel %d: node %d is invalid, repeated or a leaf", kidx, n);
        ki->role[n] = KF_CG_ROLE_NODE << 24 | i;
    }
    for (int i = 0; i < k->nnodes; i++) {
        int32_t n = k->nodes[i];
        const kf_irnode *x = &g->nodes[n];
        bool red = kf_ir_op((kf_op)x->op)->kind == KF_KIND_REDUCE;
        for (int a = 0; a < x->nargs; a++) {
            int32_t o = x->args[a];
            int r = kf_cg_role(ki, o);
            int ix = kf_cg_role_index(ki, o);
            if (r == KF_CG_ROLE_NODE) {
                if (ix >= i)
                    BAD("codegen: kernel %d: %s is used by %s before it is computed", kidx, nname(g, o, nb1, sizeof nb1),
                        nname(g, n, nb2, sizeof nb2));
                if (kf_ir_op((kf_op)g->nodes[o].op)->kind == KF_KIND_REDUCE)
                    BAD("codegen: kernel %d: reduction %s is used inside its own kernel (by %s)", kidx,
                        nname(g, o, nb1, sizeof nb1), nname(g, n, nb2, sizeof nb2));
            } else if (r == KF_CG_ROLE_ARG) {
                if (x->op == KF_OP_TAKE && a == 0) {
                    if (ki->tslot[ix] < 0)
                        ki->tslot[ix] = 1; /* numbered below, in args order */
                } else {
                    ki->arg_ew[ix] = true;
                }
            } else if (r == KF_CG_ROLE_NONE && g->nodes[o].op != KF_OP_CONST) {
                BAD("codegen: kernel %d: operand %s of %s is neither computed here nor an argument", kidx,
                    nname(g, o, nb1, sizeof nb1), nname(g, n, nb2, sizeof nb2));
            }
            if (x->op == KF_OP_TAKE && a == 0 && r != KF_CG_ROLE_ARG) {
                st = KF_ERR_UNSUPPORTED;
                BAD("codegen: kernel %d: take %s gathers from %s, which is not a kernel argument (a take source must "
                    "be stored)", kidx, nname(g, n, nb1, sizeof nb1), nname(g, o, nb2, sizeof nb2));
            }
        }
        if (red) {
            if (k->kind != KF_KERNEL_REDUCE)
                BAD("codegen: kernel %d: reduction %s in an elementwise kernel", kidx, nname(g, n, nb1, sizeof nb1));
            const kf_irnode *a0 = &g->nodes[x->args[0]];
            if (x->axes != k->axes || a0->rank != ki->R || !fits_space(ki, a0))
                BAD("codegen: kernel %d: reduction %s does not reduce the kernel's space over its axes", kidx,
                    nname(g, n, nb1, sizeof nb1));
        } else if (!fits_space(ki, x)) {
            BAD("codegen: kernel %d: %s does not broadcast into the iteration space", kidx, nname(g, n, nb1, sizeof nb1));
        }
        if (x->op == KF_OP_IOTA && !kf_cg_dim_bcast(ki, x, ki->R - x->rank + x->axis))
            ki->coords |= (uint8_t)(1u << (ki->R - x->rank + x->axis));
    }
    for (int i = 0; i < k->nouts; i++) {
        int32_t n = k->outs[i];
        if (!kf_ir_valid_node(g, n))
            BAD("codegen: kernel %d: out %d is not a node", kidx, i);
        const kf_irnode *x = &g->nodes[n];
        int r = kf_cg_role(ki, n);
        if (r == KF_CG_ROLE_NONE && x->op != KF_OP_CONST)
            BAD("codegen: kernel %d: out %s is neither computed here nor an argument", kidx, nname(g, n, nb1, sizeof nb1));
        if (r == KF_CG_ROLE_ARG)
            ki->arg_ew[kf_cg_role_index(ki, n)] = true;
        if (kf_ir_op((kf_op)x->op)->kind == KF_KIND_REDUCE)
            ki->nred++;
        else if (!fits_space(ki, x))
            BAD("codegen: kernel %d: out %s does not have the kernel's iteration shape", kidx,
                nname(g, n, nb1, sizeof nb1));
    }
    if (k->kind == KF_KERNEL_REDUCE && ki->nred == 0)
        BAD("codegen: kernel %d: a reduce kernel without a reduction among its outs", kidx);
    for (int i = 0; i < k->nargs; i++) {
        const kf_irnode *x = &g->nodes[k->args[i]];
        if (ki->tslot[i] >= 0) {
            ki->tslot[i] = ki->ntake++;
            if (x->rank != 1)
                BAD("codegen: kernel %d: take source %s is not 1-D", kidx, nname(g, k->args[i], nb1, sizeof nb1));
        }
        if (ki->arg_ew[i] && !fits_space(ki, x))
            BAD("codegen: kernel %d: arg %s does not broadcast into the iteration space", kidx,
                nname(g, k->args[i], nb1, sizeof nb1));
        bool all = true;
        for (int j = 0; j < x->rank; j++)
            all = all && x->dims[j] == 1;
        ki->bcast_all[i] = all;
    }
    for (int i = 0; i < k->nnodes && k->kind == KF_KERNEL_EW; i++) {
        ki->gather = ki->gather || kf_cg_direct_take(ki, k->nodes[i]);
        ki->branchy = ki->branchy || branchy_node(g, &g->nodes[k->nodes[i]], fast_math);
    }
    /* contiguous variants: 16 bytes of the smallest element per thread step */
    size_t minsz = 8;
    for (int b = 0; b < ki->nb; b++) {
        bool isarg = b < k->nargs;
        if (isarg && (!ki->arg_ew[b] || ki->bcast_all[b]))
            continue;
        size_t s = kf_dtype_size((kf_dtype)g->nodes[isarg ? k->args[b] : k->outs[b - k->nargs]].dtype);
        if (s < minsz)
            minsz = s;
        ki->point_bytes += (int)s;
    }
    ki->vecw = (int)(KF_CG_VEC_BYTES / minsz);
    if (k->kind == KF_KERNEL_EW)
        lead_split(ki);
    for (int i = 0; i < k->nargs && k->kind == KF_KERNEL_EW; i++)
        ki->streams += ki->arg_ew[i] && !ki->bcast_all[i] && ki->tslot[i] < 0;
    /* h64 with a take only where one is direct (its lanes gather those first, emit.c) */
    ki->half = (ki->gather || (!ki->ntake && (ki->branchy || ki->streams >= 2))) && !ki->coords && ki->vecw >= 4;
    /* b64's two vectors a thread, both loaded before the math, for a
     * branchy body's large calls too (kf_cg_launch_rule), where its lane
     * loops unroll: a loop keeps the vectors' words in local memory (the
     * 40-op chain ran 0.70-0.78 of c64's speed so on an H200) */
    ki->pair = k->kind == KF_KERNEL_EW && !ki->bsplit && ki->branchy && !ki->ntake && !ki->coords &&
               KF_CG_B64_VECS * ki->vecw * (k->nnodes + ki->nb) <= KF_CG_UNROLL_MAX && b64_dims(ki, 0);
    ki->has_b64 = ki->bsplit > 0 || ki->pair;
    ki->m_shape = 1;
    ki->m_strides = 1 + ki->R;
    ki->m_offsets = ki->m_strides + ki->nb * ki->R;
    ki->m_take = ki->m_offsets + ki->nb;
    ki->m_chunks = ki->m_take + 2 * ki->ntake;
    ki->m_count = ki->m_chunks + (k->kind == KF_KERNEL_REDUCE ? 2 : 0);
    st = kernel_hash(ki);
    if (st != KF_OK)
        BAD("codegen: out of memory");
    if (strlen(g->name) > 200) {
        st = KF_ERR_LIMIT;
        BAD("codegen: graph name '%.40s...' is too long for kernel names", g->name);
    }
    kf_snprintf(ki->prefix, sizeof ki->prefix, "%s_k%d_%08x", g->name, kidx, ki->hash);
    return KF_OK;
bad:
    kf_cg_kinfo_free(ki);
    return st;
#undef BAD
}

/* -- Kernel ABI descriptor ------------------------------------------------------------ */

static size_t align_up(size_t o, size_t a) { return (o + a - 1) / a * a; }

kf_status kf_cg_kernel_abi(const kf_plan *p, int k, bool fast_math, kf_cg_kabi *a, char *err, size_t errlen)
{
    kf_cg_kinfo ki;
    kf_status st = kf_cg_kinfo_init(&ki, p, k, fast_math, err, errlen);
    if (st != KF_OK)
        return st;
    const kf_kernel *kk = ki.k;
    const kf_graph *g = ki.g;
    memset(a, 0, sizeof *a);
    a->kind = kk->kind;
    a->kernel = k;
    a->rank = ki.R;
    a->axes = kk->kind == KF_KERNEL_REDUCE ? kk->axes : 0;
    a->nargs = kk->nargs;
    a->nouts = kk->nouts;
    a->nscalars = kk->nscalars;
    a->ntake = ki.ntake;
    a->meta_count = ki.m_count;
    a->meta_offsets = ki.m_offsets;
    a->meta_chunks = kk->kind == KF_KERNEL_REDUCE ? ki.m_chunks : 0;
    a->vecw = ki.vecw;
    a->has_c32 = kk->kind == KF_KERNEL_EW && ki.coords != 0;
    a->has_s32 = kk->kind == KF_KERNEL_EW && ki.R >= 2;
    a->has_g64 = ki.gather;
    a->branchy = ki.branchy;
    a->has_h64 = ki.half;
    a->streams = ki.streams;
    a->has_b64 = ki.has_b64;
    a->has_b1 = ki.bsplit > 0;
    a->bsplit = ki.bsplit;
    a->has_err = kk->has_take;
    a->has_scratch = kk->kind == KF_KERNEL_REDUCE;
    kf_snprintf(a->prefix, sizeof a->prefix, "%s", ki.prefix);
    for (int b = 0; b < ki.nb; b++) {
        bool isarg = b < kk->nargs;
        int32_t n = isarg ? kk->args[b] : kk->outs[b - kk->nargs];
        const kf_irnode *x = &g->nodes[n];
        a->buf_size[b] = (uint8_t)kf_dtype_size((kf_dtype)x->dtype);
        uint8_t f = 0;
        if (!isarg || ki.arg_ew[b])
            f |= KF_CG_BUF_EW;
        if (isarg && ki.bcast_all[b])
            f |= KF_CG_BUF_BCAST;
        if (isarg && ki.tslot[b] >= 0)
            f |= KF_CG_BUF_TAKE;
        if (isarg && ki.bcast_lead[b])
            f |= KF_CG_BUF_LEAD;
        a->buf_flags[b] = f;
        for (int d = 0; isarg && ki.arg_ew[b] && d < ki.R; d++)
            if (!kf_cg_dim_bcast(&ki, x, d))
                a->arg_dims[b] |= (uint8_t)(1u << d);
        if (!isarg && kf_ir_op((kf_op)x->op)->kind == KF_KIND_REDUCE) {
            kf_dtype t = (kf_dtype)g->nodes[x->args[0]].dtype;
            a->red_val[b - kk->nargs] = (uint8_t)kf_cg_red_acc_size((kf_op)x->op, t);
            a->red_idx[b - kk->nargs] = kf_cg_red_is_arg((kf_op)x->op);
        }
    }
    size_t o = 8 * (size_t)ki.nb;
    o = align_up(o, 8) + 8 * (size_t)ki.m_count;
    for (int i = 0; i < kk->nscalars; i++) {
        size_t s = kf_dtype_size((kf_dtype)g->nodes[kk->scalars[i]].dtype);
        o = align_up(o, s) + s;
    }
    if (a->has_err)
        o = align_up(o, 8) + 8;
    if (a->has_scratch)
        o = align_up(o, 8) + 8;
    a->param_bytes = o;
    for (int v = 0; v < KF_CG_VARIANT_COUNT; v++)
        kf_cg_entry_name(a, (kf_cg_variant)v, a->entry[v], sizeof a->entry[v]);
    kf_cg_kinfo_free(&ki);
    return KF_OK;
}

kf_status kf_cg_kernel_prefix(const kf_plan *p, int k, char *buf, size_t len, char *err, size_t errlen)
{
    kf_cg_kinfo ki;
    kf_status st = kf_cg_kinfo_init(&ki, p, k, false, err, errlen);   /* the hash is the same either way */
    if (st != KF_OK)
        return st;
    kf_snprintf(buf, len, "%s", ki.prefix);
    kf_cg_kinfo_free(&ki);
    return KF_OK;
}

void kf_cg_entry_name(const kf_cg_kabi *a, kf_cg_variant v, char *buf, size_t len)
{
    if (!len)
        return;
    bool ew = v <= KF_CG_B1, red = v >= KF_CG_SEQ && v <= KF_CG_WARPV;
    if ((v == KF_CG_C32 && !a->has_c32) || (v == KF_CG_S32 && !a->has_s32) || (v == KF_CG_B64 && !a->has_b64) ||
        (v == KF_CG_G64 && !a->has_g64) || (v == KF_CG_H64 && !a->has_h64) || (v == KF_CG_B1 && !a->has_b1))
        ew = false;
    if ((a->kind == KF_KERNEL_EW && ew) || (a->kind == KF_KERNEL_REDUCE && red))
        kf_snprintf(buf, len, "%s_%s", a->prefix, variant_names[v]);
    else
        buf[0] = 0;
}

/* -- Meta block -------------------------------------------------------------------- */

/* A reduction's M outputs of L reduced elements each, from meta's shape. */
static void red_sizes(const kf_cg_kabi *a, const int64_t *meta, uint64_t *M, uint64_t *L)
{
    uint64_t m = 1, l = 1;
    for (int d = 0; d < a->rank; d++) {
        if (a->axes & (1u << d))
            l *= (uint64_t)meta[1 + d];
        else
            m *= (uint64_t)meta[1 + d];
    }
    *M = m;
    *L = l;
}

kf_status kf_cg_fill_meta(const kf_cg_kabi *a, const kf_plan *p, const int64_t *symvals, const kf_cg_array *arrays,
                          int64_t *meta, char *err, size_t errlen)
{
    if (!a || !p || !p->g || a->kernel < 0 || a->kernel >= p->nkernels || !meta)
        return fail(err, errlen, KF_ERR_INVALID_ARG, "codegen: fill_meta: bad arguments");
    const kf_graph *g = p->g;
    const kf_kernel *k = &p->kernels[a->kernel];
    int R = a->rank, nb = a->nargs + a->nouts;
    int64_t D[KF_MAX_RANK];
    const kf_irnode *sp = &g->nodes[k->space];
    int64_t n = 1;
    for (int d = 0; d < R; d++) {
        int64_t v = sp->dims[d] >= 0 ? sp->dims[d] : (symvals ? symvals[KF_IR_SYM_INDEX(sp->dims[d])] : -1);
        if (v < 0)
            return fail(err, errlen, KF_ERR_SHAPE, "codegen: symbol '%s' has no value or a negative one",
                        sp->dims[d] < 0 ? g->syms[KF_IR_SYM_INDEX(sp->dims[d])] : "?");
        D[d] = v;
        if (v != 0 && n > INT64_MAX / v)
            return fail(err, errlen, KF_ERR_LIMIT, "codegen: the iteration space has more than 2^63 points");
        n *= v;
    }
    meta[0] = n;
    for (int d = 0; d < R; d++)
        meta[1 + d] = D[d];
    int moff = 1 + R + nb * R, mtake = moff + nb, t = 0;
    for (int b = 0; b < nb; b++) {
        bool isarg = b < a->nargs;
        const kf_irnode *x = &g->nodes[isarg ? k->args[b] : k->outs[b - a->nargs]];
        int64_t S[KF_MAX_RANK], st[KF_MAX_RANK];
        for (int j = 0; j < x->rank; j++) {
            S[j] = x->dims[j] >= 0 ? x->dims[j] : (symvals ? symvals[KF_IR_SYM_INDEX(x->dims[j])] : -1);
            if (S[j] < 0)
                return fail(err, errlen, KF_ERR_SHAPE, "codegen: symbol '%s' has no value or a negative one",
                            g->syms[KF_IR_SYM_INDEX(x->dims[j])]);
        }
        int64_t c = 1;
        for (int j = x->rank - 1; j >= 0; j--) {
            st[j] = arrays ? arrays[b].strides[j] : c;
            c *= S[j];
        }
        int64_t *row = meta + 1 + R + b * R;
        bool red = !isarg && kf_ir_op((kf_op)x->op)->kind == KF_KIND_REDUCE;
        if (!(a->buf_flags[b] & KF_CG_BUF_EW)) {
            for (int d = 0; d < R; d++)
                row[d] = 0;
        } else if (red && !x->keepdims) {
            for (int d = 0, j = 0; d < R; d++) {
                if (a->axes & (1u << d)) {
                    row[d] = 0;
                } else {
                    row[d] = S[j] == 1 ? 0 : st[j];
                    j++;
                }
            }
        } else {
            for (int d = 0; d < R; d++) {
                int j = d - (R - x->rank);
                row[d] = (j < 0 || S[j] == 1 || (red && (a->axes & (1u << d)))) ? 0 : st[j];
            }
        }
        meta[moff + b] = arrays ? arrays[b].offset : 0;
        if (isarg && (a->buf_flags[b] & KF_CG_BUF_TAKE)) {
            meta[mtake + 2 * t] = S[0];
            meta[mtake + 2 * t + 1] = st[0];
            t++;
        }
    }
    kf_cg_fill_chunks(a, meta);
    return KF_OK;
}

void kf_cg_fill_chunks(const kf_cg_kabi *a, int64_t *meta)
{
    if (a->kind != KF_KERNEL_REDUCE)
        return;
    uint64_t M, L, nchunks, ce;
    red_sizes(a, meta, &M, &L);
    kf_cg_red_chunks(M, L, &nchunks, &ce);
    meta[a->meta_chunks] = (int64_t)nchunks;
    meta[a->meta_chunks + 1] = (int64_t)ce;
}

/* -- Variant choice and launches ---------------------------------------------------------- */

bool kf_cg_warp_sizes(uint64_t M, uint64_t L)
{
    /* rows of up to a tile from 4096 of them, rows of 32 to 64 elements
     * (else seq's) from 1024 */
    bool many = M >= KF_CG_WARP_OUTPUTS || (M >= KF_CG_WARP_SHORT && L <= KF_CG_WARP_SHORT);
    /* rows of 65 to 1024, however few: a lane's loads of a round go out
     * together, where tile's block waits for its tree (docs/codegen.md) */
    bool short_rows = L > KF_CG_SEQ_MAX && L <= KF_CG_WARP_SHORT;
    return (many || short_rows) && L >= KF_CG_WARP_MIN && L <= KF_CG_TILE_ELEMS;
}

static bool use_seq(uint64_t M, uint64_t L)
{
    return L <= KF_CG_SEQ_MAX || (M >= KF_CG_SEQ_OUTPUTS && L <= KF_CG_TILE_ELEMS);
}

void kf_cg_red_chunks(uint64_t M, uint64_t L, uint64_t *nchunks, uint64_t *chunk_elems)
{
    uint64_t ntiles = L > KF_CG_TILE_ELEMS ? (L + KF_CG_TILE_ELEMS - 1) / KF_CG_TILE_ELEMS : 1;
    uint64_t want = M >= KF_CG_CHUNK_TARGET ? 1 : (KF_CG_CHUNK_TARGET + M - 1) / (M ? M : 1);
    uint64_t n = ntiles < want ? ntiles : want;
    uint64_t per = (ntiles + n - 1) / n;   /* tiles per chunk */
    uint64_t least = ntiles < KF_CG_CHUNK_MIN ? ntiles : KF_CG_CHUNK_MIN;
    if ((ntiles <= KF_CG_CHUNK_WHOLE || M >= KF_CG_CHUNK_MIN_M) && per < least)
        per = least;   /* combining chunks costs more than a few tiles in turn (codegen.md, Chunks) */
    *nchunks = (ntiles + per - 1) / per;
    *chunk_elems = per * KF_CG_TILE_ELEMS;
}

/* Is the innermost reduced dim (of size > 1) contiguous, stride -1, 0 or 1,
 * in every argument read at the iteration point?  Then the 32 threads of a
 * warp read 32 neighbouring elements. */
static bool red_contiguous(const kf_cg_kabi *a, const int64_t *meta)
{
    int R = a->rank, d = R - 1;
    while (d >= 0 && (!(a->axes & (1u << d)) || meta[1 + d] <= 1))
        d--;
    if (d < 0)
        return false;
    for (int b = 0; b < a->nargs; b++) {
        int64_t s = meta[1 + R + b * R + d];
        if ((a->buf_flags[b] & KF_CG_BUF_EW) && (s < -1 || s > 1))
            return false;
    }
    return true;
}

/* Is buffer b's element [0...] aligned to bytes (addrs: see
 * kf_cg_pick_variant)? */
static bool vec_aligned(const kf_cg_kabi *a, const int64_t *meta, const uint64_t *addrs, int b, uint64_t bytes)
{
    int R = a->rank, nb = a->nargs + a->nouts;
    uint64_t addr = (addrs ? addrs[b] : 0) + (uint64_t)meta[1 + R + nb * R + b] * a->buf_size[b];
    return addr % bytes == 0;
}

/* Does a reduction's gvec hold for this call (emit.c, vec_decl: every
 * group of KF_CG_RED_GROUP reduced elements one aligned vector load of
 * each arg read at the point)?  Pointers are kfuse's allocations, aligned
 * beyond 16 bytes: the element offsets decide (addrs: see
 * kf_cg_pick_variant). */
static bool red_gvec(const kf_cg_kabi *a, const int64_t *meta, const uint64_t *addrs)
{
    int R = a->rank, rd = R - 1, G = KF_CG_RED_GROUP;
    while (rd >= 0 && !(a->axes & (1u << rd)))
        rd--;
    if (rd < 0 || meta[1 + rd] % G != 0)
        return false;
    for (int b = 0; b < a->nargs; b++) {
        if (!(a->buf_flags[b] & KF_CG_BUF_EW) || (a->buf_flags[b] & KF_CG_BUF_BCAST) || !(a->arg_dims[b] & (1u << rd)))
            continue;   /* not read at the point, or read once per group */
        const int64_t *st = meta + 1 + R + b * R;
        int64_t s = a->buf_size[b], bytes = G * s < KF_CG_VEC_BYTES ? G * s : KF_CG_VEC_BYTES;
        if (st[rd] != 1 || !vec_aligned(a, meta, addrs, b, (uint64_t)bytes))
            return false;
        for (int d = 0; d < R; d++)
            if (d != rd && (a->arg_dims[b] & (1u << d)) && meta[1 + d] != 1 && st[d] % (bytes / s) != 0)
                return false;
    }
    return true;
}

/* Are buffer b's strides row-major over the iteration shape (wherever a
 * dim is not 1), but 0 on dims 0..zero_below-1? */
static bool row_major(const kf_cg_kabi *a, const int64_t *meta, int b, int zero_below)
{
    int R = a->rank;
    const int64_t *shape = meta + 1, *row = meta + 1 + R + b * R;
    int64_t c = 1;
    for (int d = R - 1; d >= 0; d--) {
        if (shape[d] > 1 && row[d] != (d < zero_below ? 0 : c))
            return false;
        c *= shape[d];
    }
    return true;
}

/* The 32-bit variants' condition (c32, s32, warpv): n, and every buffer's
 * span (its furthest element from element 0 along its strides) fit int32. */
static bool fits32(const kf_cg_kabi *a, const int64_t *meta)
{
    int R = a->rank;
    const int64_t *shape = meta + 1;
    if (meta[0] > INT32_MAX)
        return false;
    for (int b = 0; b < a->nargs + a->nouts; b++) {
        if (!(a->buf_flags[b] & KF_CG_BUF_EW))
            continue;
        const int64_t *row = meta + 1 + R + b * R;
        uint64_t span = 0;
        for (int d = R - 1; d >= 0; d--) {
            if (shape[d] > 1) {
                uint64_t s = (uint64_t)(row[d] < 0 ? -row[d] : row[d]);
                uint64_t e = (uint64_t)shape[d] - 1;
                if (s > (uint64_t)INT32_MAX / e || span + s * e > (uint64_t)INT32_MAX)
                    return false;
                span += s * e;
            }
        }
    }
    return true;
}

kf_cg_variant kf_cg_pick_variant(const kf_cg_kabi *a, const int64_t *meta, const uint64_t *addrs)
{
    if (a->kind == KF_KERNEL_REDUCE) {
        uint64_t M, L;
        red_sizes(a, meta, &M, &L);
        if (kf_cg_warp_sizes(M, L) && red_contiguous(a, meta))
            return KF_CG_WARP;
        return use_seq(M, L) ? KF_CG_SEQ : KF_CG_TILE;
    }
    bool small = fits32(a, meta), contig = true;
    for (int b = 0; b < a->nargs + a->nouts; b++)
        /* a buffer broadcast on every dim is read once, before the loop */
        if ((a->buf_flags[b] & KF_CG_BUF_EW) && !(a->buf_flags[b] & KF_CG_BUF_BCAST) &&
            (!row_major(a, meta, b, 0) || !vec_aligned(a, meta, addrs, b, KF_CG_VEC_BYTES)))
            contig = false;
    if (contig)
        return small && a->has_c32 ? KF_CG_C32 : KF_CG_C64;
    return small && a->has_s32 ? KF_CG_S32 : KF_CG_S64;
}

/* Blocks for items at per_block each: all of them, or at most cap =
 * 8 * cu (1024 when cu is unknown) where the kernel loops grid-stride
 * (capped).  On a GPU an elementwise kernel is not capped: a thread with
 * one vector to load issues it at once, where a grid-stride loop loads,
 * computes and stores each in turn (x5 of 2^28 floats on an H200: 0.92 of
 * copy capped, 1.00 not), and the GPU builds (KF_ONE_PASS) rely on that
 * grid covering the space.  Nor are tile and warp: 1056 blocks left SMs
 * idle at the end of 7.76 rounds of 8 rows each (rowsum of [65536, 1024]
 * on an H100: 91.0 us capped, 89.8 not; [262144, 1024]: 351.0, 342.4). */
static uint32_t grid_for(uint64_t items, uint64_t per_block, int cu, bool capped, uint32_t override)
{
    if (override)
        return override;
    uint64_t cap = !capped ? (uint64_t)INT32_MAX : cu > 0 ? (uint64_t)cu * 8 : 1024;
    uint64_t g = (items + per_block - 1) / per_block;
    if (g > cap)
        g = cap;
    return g ? (uint32_t)g : 1;
}

/* Does warp's grid (a block per WARP_OUTPUTS_PER_BLOCK outputs) cover M
 * outputs within CUDA's 2^31 - 1 blocks? */
enum { WARP_OUTPUTS_PER_BLOCK = KF_CG_BLOCK / KF_CG_WARP_LANES };
static bool warp_covers(uint64_t M)
{
    return (M + WARP_OUTPUTS_PER_BLOCK - 1) / WARP_OUTPUTS_PER_BLOCK <= INT32_MAX;
}

/* Does tile's grid (a block per output and chunk, kf_cg_fill_chunks)
 * cover M outputs within CUDA's 2^31 - 1 blocks?  Its loop over them
 * steps with KF_NEXT too. */
static bool tile_covers(const kf_cg_kabi *a, const int64_t *meta, uint64_t M)
{
    return M * (uint64_t)meta[a->meta_chunks] <= INT32_MAX;
}

/* Steps of the dims b64 walks outermost, 0..bsplit-1 (at least 1 for a
 * call with elements). */
static uint64_t outer_steps(const kf_cg_kabi *a, const int64_t *meta)
{
    uint64_t T = 1;
    for (int d = 0; d < a->bsplit; d++)
        T *= (uint64_t)meta[1 + d];
    return T;
}

/* The blocks of b64 or b1 (v): every outer step times a block per
 * KF_CG_BLOCK * kf_cg_b_vecs(v) vectors of the inner dims. */
static uint64_t b_blocks(const kf_cg_kabi *a, const int64_t *meta, kf_cg_variant v)
{
    uint64_t T = outer_steps(a, meta), vecs = (uint64_t)meta[0] / T / (uint64_t)a->vecw;
    uint64_t per_block = (uint64_t)KF_CG_BLOCK * (uint64_t)kf_cg_b_vecs(v);
    return T * ((vecs + per_block - 1) / per_block);
}

/* Does a call fit b64 and b1 (which the kernel has: bsplit > 0): every buffer
 * read or written at the iteration point row-major contiguous and 16-byte
 * aligned, except that the KF_CG_BUF_LEAD args have stride 0 on dims
 * 0..bsplit-1 (contiguous on the rest), the inner dims a whole number of
 * vectors, and at most 2^32 - B64_BLOCK_VECS vectors in all (the kernel
 * indexes vectors, and splits a block index, in 32 bits). */
enum { B64_BLOCK_VECS = KF_CG_BLOCK * KF_CG_B64_VECS };
static bool b64_fits(const kf_cg_kabi *a, const int64_t *meta, const uint64_t *addrs)
{
    if (!a->has_b64 || meta[0] <= 0 || ((uint64_t)meta[0] / outer_steps(a, meta)) % (uint64_t)a->vecw != 0 ||
        (uint64_t)meta[0] / (uint64_t)a->vecw > (uint64_t)UINT32_MAX + 1 - B64_BLOCK_VECS)
        return false;
    for (int b = 0; b < a->nargs + a->nouts; b++) {
        uint8_t f = a->buf_flags[b];
        if (!(f & KF_CG_BUF_EW) || (f & KF_CG_BUF_BCAST))
            continue;
        if (!row_major(a, meta, b, (f & KF_CG_BUF_LEAD) ? a->bsplit : 0) ||
            !vec_aligned(a, meta, addrs, b, KF_CG_VEC_BYTES))
            return false;
    }
    return true;
}

/* Elements a thread of EW variant v moves: a vector for c32 and c64, half
 * of one for h64, else one (b64 and g64 count their threads themselves). */
static uint64_t ew_width(const kf_cg_kabi *a, kf_cg_variant v)
{
    return (uint64_t)(v == KF_CG_C32 || v == KF_CG_C64 ? a->vecw : v == KF_CG_H64 ? a->vecw / 2 : 1);
}

/* Can h64 run the call?  A kernel with a direct take's h64 moves whole
 * vectors only (emit.c), so vecw / 2 must divide n. */
static bool h64_fits(const kf_cg_kabi *a, const int64_t *meta)
{
    return a->has_h64 && (!a->has_g64 || (uint64_t)meta[0] % (uint64_t)(a->vecw / 2) == 0);
}

/* kf_cg_launch_variant for a v whose layout conditions the caller has
 * checked (b64_fits for b64, red_gvec and fits32 for warpv). */
static void launches(const kf_cg_kabi *a, const int64_t *meta, kf_cg_variant v, int compute_units, bool gpu,
                     uint32_t grid_override, kf_cg_launches *out)
{
    memset(out, 0, sizeof *out);
    if (!a->entry[v][0])   /* the kernel has no such variant (kf_cg_entry_name) */
        return;
    if (a->kind == KF_KERNEL_EW) {
        uint64_t n = (uint64_t)meta[0];
        if (n == 0 || (v == KF_CG_G64 && !gpu) || (v == KF_CG_H64 && (!h64_fits(a, meta) || !gpu)))
            return;
        uint64_t w = ew_width(a, v), threads = (n + w - 1) / w;
        if (v == KF_CG_G64)   /* KF_CG_GATHER_ELEMS points per thread, a block per 1024 */
            threads = (n + KF_CG_BLOCK * KF_CG_GATHER_ELEMS - 1) / (KF_CG_BLOCK * KF_CG_GATHER_ELEMS) * KF_CG_BLOCK;
        if (v == KF_CG_B64 || v == KF_CG_B1)
            threads = b_blocks(a, meta, v) * KF_CG_BLOCK;
        if (gpu && (threads + KF_CG_BLOCK - 1) / KF_CG_BLOCK > INT32_MAX)
            return;   /* no covering grid within CUDA's 2^31 - 1 blocks */
        out->n = 1;
        out->l[0] = (kf_cg_launch){ v, "", grid_for(threads, KF_CG_BLOCK, compute_units, !gpu, grid_override), KF_CG_BLOCK };
    } else {
        uint64_t M, L;
        red_sizes(a, meta, &M, &L);
        bool warp = v == KF_CG_WARP || v == KF_CG_WARPV;
        if (M == 0 || (v != KF_CG_SEQ && v != KF_CG_TILE && !warp) ||
            (warp && (L > KF_CG_TILE_ELEMS || !gpu || !warp_covers(M))) ||
            (v == KF_CG_TILE && gpu && !tile_covers(a, meta, M)))   /* KF_ONE_PASS: a covering grid */
            return;
        out->n = 1;
        if (v == KF_CG_SEQ) {
            out->l[0] = (kf_cg_launch){ v, "", grid_for(M, KF_CG_BLOCK, compute_units, true, grid_override), KF_CG_BLOCK };
        } else if (warp) {
            uint32_t grid = grid_for(M, WARP_OUTPUTS_PER_BLOCK, compute_units, !gpu, grid_override);
            out->l[0] = (kf_cg_launch){ v, "", grid, KF_CG_BLOCK };
        } else {
            uint64_t nchunks = (uint64_t)meta[a->meta_chunks];   /* the kernel's (kf_cg_fill_chunks) */
            uint32_t grid = grid_for(M * nchunks, 1, compute_units, !gpu, grid_override);
            out->l[0] = (kf_cg_launch){ v, "", grid, KF_CG_BLOCK };
            if (nchunks > 1) {
                /* a GPU's tile combines each output's partials in the block
                 * that finishes its last chunk, counting them in scratch's
                 * first KF_CG_COUNTER_BYTES; elsewhere comb does, after it */
                if (!gpu) {
                    out->n = 2;
                    out->l[1] = (kf_cg_launch){ KF_CG_COMB, "", grid_for(M, 1, compute_units, true, grid_override),
                                                KF_CG_BLOCK };
                }
                /* per reduction, in outs order: P values, then P i64 indices
                 * for argmin/argmax, each array 16-byte aligned (emit.c) */
                uint64_t P = M * nchunks, bytes = gpu ? KF_CG_COUNTER_BYTES : 0;
                for (int j = 0; j < a->nouts; j++) {
                    if (a->red_val[j])
                        bytes += (P * a->red_val[j] + 15) / 16 * 16;
                    if (a->red_idx[j])
                        bytes += (P * 8 + 15) / 16 * 16;
                }
                out->scratch_bytes = bytes;
            }
        }
    }
    for (int i = 0; i < out->n; i++)
        out->l[i].entry = a->entry[out->l[i].variant];
}

void kf_cg_launch_variant(const kf_cg_kabi *a, const int64_t *meta, kf_cg_variant v, int compute_units, bool gpu,
                          uint32_t grid_override, kf_cg_launches *out)
{
    if (((v == KF_CG_B64 || v == KF_CG_B1) && !b64_fits(a, meta, NULL)) ||
        (v == KF_CG_WARPV && (!red_gvec(a, meta, NULL) || !fits32(a, meta))))
        memset(out, 0, sizeof *out);
    else
        launches(a, meta, v, compute_units, gpu, grid_override, out);
}

/* On a GPU a contiguous call moves fewer elements per thread where its
 * vectors would not fill the device:
 * - one element per thread (the strided variant, same results) where the
 *   vectors would not give every compute unit a block: vecw times the
 *   threads, each with a vecw times shorter chain.  On an H200 at 2^12 and
 *   2^16 elements: gather_boxplus 7.7 -> 5.4 and 8.1 -> 6.1 us, the 40-op
 *   chain 5.5 -> 4.8 us, memory-bound kernels unchanged; from 2^20 x5 loses
 *   13% one element per thread.
 * - A branchy body (kf_cg_kabi.branchy) runs the elements of a vector one
 *   after another, so it wants more threads for longer: it takes c where
 *   c's grid fills WAVE_BLOCKS_PER_CU blocks per compute unit (8 blocks of
 *   256 threads: a full SM of an H100), else h64 (half vectors) where h64's
 *   fills H64_BLOCKS_PER_CU, else one element per thread.  On an H100,
 *   kfbench A/B (bench/results/h100-2026-11-22-s10-width.md), c against
 *   this rule with h64 from a full wave: boxplus at 2^18 5.6 -> 5.4 us,
 *   2^20 (h64) 8.7 -> 8.3; the 40-op chain at 2^18 6.5 -> 6.1, 2^19 8.3 ->
 *   7.9, 2^20 10.8 -> 10.5.  Bodies without branches lost up to 6% this
 *   way (x5 and gelu at 2^19), so they keep the first rule.
 * - A kernel that gathers (take) runs one point per thread at any size: a
 *   gathered load waits on a scattered read, and more threads keep more of
 *   them in flight (gather_boxplus, f64, on an H100, one pass: 28 registers
 *   against 48 and a spill with vectors of 4, and 19 against 24 us at 2^20,
 *   773 against 825 us at 2^26); at larger sizes h64 (where it fits the
 *   call) or g64 (kf_cg_launch_rule) takes over, below.
 * - A body without branches that reads two or more arrays
 *   (kf_cg_kabi.streams) moves 8-byte vectors (h64) in one band of sizes:
 *   reading two, where c's grid is under a wave (WAVE_BLOCKS_PER_CU blocks
 *   per compute unit) and h64's fills one; reading three or more, once c's
 *   grid fills a wave (below it its threads already have 48 or more bytes
 *   of loads in flight, and h64 would run two waves).  On an H200, c64 /
 *   h64 in one process with torch.compile: poly (three arrays) at 2^20
 *   8.82 / 9.09 and 8.96 / 9.18 us in two processes, at 2^21 13.50 / 13.39,
 *   2^26 314.8 / 313.2, 2^28 1246 / 1239; saxpy (two) at 2^20 7.49 / 7.39
 *   and 7.42 / 7.36 (bench/results/h200-2026-11-28-s24-analysis.md), past
 *   c's wave level at 2^21 and 2^23-2^24 and c64 ahead at 2^22 15.15 /
 *   15.62 and 15.17 / 15.70, 2^26 187.9 / 189.3 (two processes), 2^28
 *   737.8 / 741.2 and 737.7 / 738.3 (bench/results/h200-2026-11-28-s28-
 *   analysis.md).  (An H100 in session 11 had saxpy 1.2-1.6% faster on h64
 *   at 2^24-2^26: a lean GPU, LEAN_GBPS_PER_CU below, takes it there.)  x5 (one
 *   array) loses 3% with 8-byte vectors at 2^26 in a harness, and branchy
 *   bodies 0.4% (boxplus) to 9% (the 40-op chain) at 2^24-2^28: they keep
 *   16 bytes there. */
enum { WAVE_BLOCKS_PER_CU = 8 };

/* A branchy body's call too small for c's grid to fill a wave takes h64
 * from this many h64 blocks per compute unit (three quarters of a wave),
 * else one element per thread: that grid has twice h64's threads, more
 * than a wave where h64's fits in one.  On an H200 in one process,
 * the rule's choice / h64 / torch.compile, two processes, us: boxplus at
 * 2^19 (h64: 7.8 blocks per SM) 6.75 / 6.32 / 6.13 and 6.77 / 6.29 / 6.00,
 * the 40-op chain 7.97 / 7.57 / 7.87 and 7.92 / 7.54 / 7.76; bodies that
 * read one array, x / (1 + exp x) 5.86 / 5.38 / 5.15 and sqrt(x^2 + 1)
 * 5.89 / 5.34 / 5.14; at 2^18 (3.9 blocks per SM) one element per thread
 * and h64 tie (boxplus 5.50 / 5.49, 5.46 / 5.47; the chain 6.21 / 6.22,
 * 6.21 / 6.22) (bench/results/h200-2026-11-28-s25-analysis.md). */
enum { H64_BLOCKS_PER_CU = 6 };

/* A branchy body's contiguous call runs b64 (two vectors a thread, both
 * loaded before the first element's math; kf_cg_kinfo.pair) from this
 * many b64 blocks per compute unit.  Its elements' math runs one after
 * another, and on an H200 a thread of c64 then has too few bytes in
 * flight: boxplus (f32, accurate expf, logf and division) in one process,
 * c64 / b64 / torch.compile, us: 2^22 17.15 / 17.63 / 16.53 (15.5 b64
 * blocks per SM), 2^24 54.86 / 51.97 / 51.33 (62), 2^26 203.1 / 188.5 /
 * 187.4, 2^28 790.4 / 735.6 / 730.7 (bench/results/h200-2026-11-28-s23-
 * analysis.md).  On an H100 two vectors a thread ran boxplus at 2^28 0.4%
 * slower than c64 (session 20): a lean GPU (below) keeps c64. */
enum { PAIR_BLOCKS_PER_CU = 32 };

/* A call that fits the walk of b64 and b1 (outer dims innermost: args
 * broadcast on them) takes b1, one vector a thread, except where b64's
 * grid (two vectors a thread) fits a wave and b1's does not.  On an H200,
 * discount (f64 [m, 256] by [16, m, 256]) in one process, b64 / b1 /
 * torch.compile, us: 2^19 (b1: 7.8 blocks per SM) 6.66 / 6.45 / 6.46,
 * 2^20 (b64: 7.8) 8.18 / 8.56 / 8.32, 2^21 12.40 / 12.42 / 12.19, 2^22
 * 21.10 / 20.99 / 20.53, 2^23 39.07 / 38.16 / 36.58, 2^24 73.54 / 72.16 /
 * 73.14, 2^26 279.4 / 271.3 / 371.0, 2^28 1091 / 1064 / 1467; level at
 * 2^12-2^18 (bench/results/h200-2026-11-28-s26-analysis.md). */
static kf_cg_variant b_width(const kf_cg_kabi *a, const int64_t *meta, int cu)
{
    uint64_t wave = cu > 0 ? (uint64_t)WAVE_BLOCKS_PER_CU * (uint64_t)cu : 0;
    if (!a->has_b1)
        return KF_CG_B64;
    return b_blocks(a, meta, KF_CG_B64) <= wave && b_blocks(a, meta, KF_CG_B1) > wave ? KF_CG_B64 : KF_CG_B1;
}

/* A kernel with a direct take leaves one point per thread on a GPU for
 * g64 (kf_cg_launch_rule) from this many g64 blocks (1024 points) per
 * compute unit, where h64 has not taken the call (below).  gather_boxplus
 * (f64, kfbench's permutation) on an H100 (132 SMs), kfbench, one point
 * per thread against g64: 2^21 29.3 against 30.7 us (16 blocks per SM),
 * 2^22 52.8-53.2 against 52.6 (31), 2^23 100.1 against 96.6, 2^26 762
 * against 713, 2^28 3045 against 2827-2859
 * (bench/results/h100-2026-11-22-s9-g64.md).  In
 * one process with torch.compile (s64 / g64 / h64, µs): 2^20 16.9 / 19.3 /
 * 16.9, 2^22 52.5 / 52.3 / 50.6, 2^24 195.8 / 190.7 / 185.2, 2^26 866 /
 * 790 / 790, 2^28 3345 / 3309 / 3100 (torch.compile 16.7, 51.7, 186.0,
 * 726, 2894; h64 in a second run 720 and 3037 against 721 and 2856); a
 * uniformly random permutation at 2^26 ties all
 * (bench/results/h100-2026-11-28-s20-analysis.md). */
enum { G64_BLOCKS_PER_CU = 24 };

/* ... and for h64 (vecw / 2 neighbouring points a thread, their vectors
 * loaded and their gathers issued together) from this many blocks of 1024
 * points per compute unit, where the call is contiguous and h64 fits it
 * (narrow).  On an H200 (132 SMs), gather_boxplus alone in one process,
 * one point per thread / h64, us (points / 2^20): 0.5 10.46 / 11.31, 0.75
 * 12.83 / 13.38, 1.0 15.44 / 15.39, 1.25 17.97 / 17.68, 1.5 20.80 / 20.03,
 * 2.0 25.89 / 24.67, 3.0 35.98 / 33.42 (the old bound, 24 blocks, is 3.1);
 * with torch.compile at 2^21 25.89 / 24.83 / 25.18
 * (bench/results/h200-2026-11-28-s26-analysis.md). */
enum { H64_TAKE_BLOCKS_PER_CU = 8 };

/* Has a take's call at least blocks (of 1024 points) per compute unit? */
static bool gather_blocks(const int64_t *meta, int cu, uint64_t blocks)
{
    return cu > 0 && (uint64_t)meta[0] >= blocks * (uint64_t)cu * KF_CG_BLOCK * KF_CG_GATHER_ELEMS;
}

/* A GPU with less peak DRAM bandwidth than this per compute unit (GB/s)
 * is lean: it keeps its memory busy with fewer bytes in flight a thread,
 * and from c's wave a body without branches that reads two arrays runs h64
 * and a branchy body stays on c64 instead of b64 (narrow).  The rules above
 * were measured on an H200 (4.8 TB/s on 132 SMs, 36 GB/s a unit); an H100
 * (3.35 TB/s on 132, 25 GB/s) wants the other choice in both places:
 * saxpy on h64 took 0.985 / 0.989 / 0.998 of c64's time at 2^24 / 2^26 /
 * 2^28 (bench/results/h100-2026-11-22-s11-analysis.md), and boxplus ran
 * 0.4% slower on b64 than c64 at 2^28 (session 20); the H100's benchmark
 * with the H200's choices (h100-2026-12-07-s37-analysis.md) had saxpy 1.1%
 * and boxplus 0.4-0.6% slower at 2^26-2^28 than with these, torch.compile
 * level between the runs.  The rule against the one before, on an H100
 * (bench/ab.sh, three rounds): saxpy 0.992 / 0.994 / 0.997 of the time at
 * 2^24 / 2^26 / 2^28, boxplus 0.985 / 0.996 / 0.997; saxpy's h64 past c's
 * wave is 1.5% faster at 2^21 and 2^23 and 1.4% slower at 2^22
 * (bench/results/h100-2026-12-07-s38-analysis.md).  Unknown bandwidth (0:
 * OpenCL) keeps the H200's choices. */
enum { LEAN_GBPS_PER_CU = 30 };

static kf_cg_variant narrow(const kf_cg_kabi *a, const int64_t *meta, kf_cg_variant v, int cu, bool gpu, bool lean)
{
    if (!gpu || (v != KF_CG_C32 && v != KF_CG_C64))
        return v;
    kf_cg_variant s = v == KF_CG_C32 && a->has_s32 ? KF_CG_S32 : KF_CG_S64;
    if (a->ntake)
        return v == KF_CG_C64 && h64_fits(a, meta) && gather_blocks(meta, cu, H64_TAKE_BLOCKS_PER_CU) ? KF_CG_H64 : s;
    if (cu <= 0)
        return v;
    uint64_t n = (uint64_t)meta[0], wc = ew_width(a, v), wh = ew_width(a, KF_CG_H64);
    uint64_t tc = (n + wc - 1) / wc, th = (n + wh - 1) / wh;   /* threads of c and of h64 */
    uint64_t wave = (uint64_t)WAVE_BLOCKS_PER_CU * (uint64_t)cu * KF_CG_BLOCK;
    bool h = v == KF_CG_C64 && h64_fits(a, meta);
    if (!a->branchy) {
        if (tc < (uint64_t)cu * KF_CG_BLOCK)
            return s;
        /* three or more arrays: h64 once c's grid fills a wave; two: from where h64's does, on a
         * lean GPU beyond c's wave too */
        bool hw = a->streams >= 3 ? tc >= wave : a->streams == 2 && (tc < wave || lean) && th >= wave;
        return h && hw ? KF_CG_H64 : v;
    }
    if (tc >= wave) {   /* b64_fits without addrs: c's test passed, their alignment included */
        bool pair = !lean && v == KF_CG_C64 && b64_fits(a, meta, NULL) &&
                    b_blocks(a, meta, KF_CG_B64) >= (uint64_t)PAIR_BLOCKS_PER_CU * (uint64_t)cu;
        return pair ? KF_CG_B64 : v;
    }
    return h && th >= (uint64_t)H64_BLOCKS_PER_CU * (uint64_t)cu * KF_CG_BLOCK ? KF_CG_H64 : s;
}

void kf_cg_launch_rule(const kf_cg_kabi *a, const int64_t *meta, const uint64_t *addrs, int compute_units, bool gpu,
                       double memory_gbps, uint32_t grid_override, kf_cg_launches *out)
{
    bool lean = compute_units > 0 && memory_gbps > 0 && memory_gbps < (double)LEAN_GBPS_PER_CU * compute_units;
    kf_cg_variant v = kf_cg_pick_variant(a, meta, addrs);
    if (v == KF_CG_WARP || v == KF_CG_TILE) {
        uint64_t M, L;
        red_sizes(a, meta, &M, &L);
        if (v == KF_CG_WARP) {   /* a GPU variant; tile gives its bits (emit.c emits it only there) */
            if (!gpu || !warp_covers(M))
                v = KF_CG_TILE;
            else if (red_gvec(a, meta, addrs) && fits32(a, meta))   /* the vector path alone, in 32 bits
                                                                     * (codegen.h, "warpv") */
                v = KF_CG_WARPV;
        }
        if (gpu && v == KF_CG_TILE && !tile_covers(a, meta, M))   /* KF_ONE_PASS: seq loops grid-stride */
            v = KF_CG_SEQ;
    }
    if (gpu && (v == KF_CG_S32 || v == KF_CG_S64) && b64_fits(a, meta, addrs))
        v = b_width(a, meta, compute_units);
    v = narrow(a, meta, v, compute_units, gpu, lean);
    if (gpu && a->has_g64 && (v == KF_CG_S32 || v == KF_CG_S64) &&
        gather_blocks(meta, compute_units, G64_BLOCKS_PER_CU))
        v = KF_CG_G64;
    launches(a, meta, v, compute_units, gpu, grid_override, out);   /* b64 and b1 only where they fit, above */
}
