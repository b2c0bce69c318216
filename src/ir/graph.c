/* Graph builder: the op table, node storage, name and literal interning,
 * dtype and shape inference (shared with the verifier), sticky errors.
 * Every public builder call funnels into kf_ir_add(). */
#include "ir.h"
#include "half.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* -- Tables generated from ops.def ------------------------------------------ */

#define COMM KF_OPF_COMM
#define NOTEXT KF_OPF_NOTEXT
const kf_opinfo kf_ir_ops[KF_OP_COUNT] = {
#define KF_OP(id, nm, ar, kd, rl, fl) [KF_OP_##id] = { #nm, ar, KF_KIND_##kd, rl, fl },
#include "ops.def"
#undef KF_OP
};
#undef COMM
#undef NOTEXT

static const struct { const char *name; uint8_t size; } dtypes[KF_DTYPE_COUNT] = {
    [KF_BOOL] = { "bool", 1 }, [KF_I8] = { "i8", 1 },   [KF_I16] = { "i16", 2 },
    [KF_I32] = { "i32", 4 },   [KF_I64] = { "i64", 8 }, [KF_U8] = { "u8", 1 },
    [KF_U16] = { "u16", 2 },   [KF_U32] = { "u32", 4 }, [KF_U64] = { "u64", 8 },
    [KF_F16] = { "f16", 2 },   [KF_BF16] = { "bf16", 2 }, [KF_F32] = { "f32", 4 },
    [KF_F64] = { "f64", 8 },
};

int kf_version(void) { return KFUSE_VERSION; }

const char *kf_status_string(kf_status s)
{
    switch (s) {
    case KF_OK: return "ok";
    case KF_ERR_INVALID_ARG: return "invalid argument";
    case KF_ERR_NO_MEMORY: return "out of memory";
    case KF_ERR_PARSE: return "parse error";
    case KF_ERR_TYPE: return "type error";
    case KF_ERR_SHAPE: return "shape error";
    case KF_ERR_NAME: return "name error";
    case KF_ERR_LIMIT: return "limit exceeded";
    case KF_ERR_INDEX: return "index out of range";
    case KF_ERR_IO: return "i/o error";
    case KF_ERR_UNSUPPORTED: return "unsupported";
    case KF_ERR_NO_DEVICE: return "no device";
    case KF_ERR_DEVICE: return "device error";
    case KF_ERR_COMPILE: return "compile error";
    case KF_ERR_CONTEXT: return "wrong context";
    case KF_ERR_CACHE_MISS: return "not in the cache";
    }
    return "unknown status";
}

const char *kf_dtype_name(kf_dtype t) { return kf_dt_is_valid((int)t) ? dtypes[t].name : NULL; }
size_t kf_dtype_size(kf_dtype t) { return kf_dt_is_valid((int)t) ? dtypes[t].size : 0; }
const char *kf_op_name(kf_op op) { return (unsigned)op < KF_OP_COUNT ? kf_ir_ops[op].name : NULL; }

int kf_ir_dtype_from_name(const char *s, size_t n)
{
    for (int t = 0; t < KF_DTYPE_COUNT; t++)
        if (strlen(dtypes[t].name) == n && memcmp(dtypes[t].name, s, n) == 0)
            return t;
    return -1;
}

bool kf_ir_is_ident(const char *s, size_t n)
{
    static const char *const reserved[] = { "true", "false", "inf", "nan", "graph", "kfuse" };
    if (n == 0 || !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') || s[0] == '_'))
        return false;
    for (size_t i = 1; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'))
            return false;
    }
    if (kf_ir_dtype_from_name(s, n) >= 0)
        return false;
    for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++)
        if (strlen(reserved[i]) == n && memcmp(reserved[i], s, n) == 0)
            return false;
    return true;
}

/* -- Node maps --------------------------------------------------------------- */

typedef bool (*kf_nodeeq)(const kf_graph *g, int32_t node, const void *key);

static uint64_t hash_bytes(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static int32_t map_find(const kf_graph *g, const kf_nodemap *m, uint64_t h, kf_nodeeq eq, const void *key)
{
    if (m->cap == 0)
        return KF_NONE;
    for (uint32_t i = (uint32_t)h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        int32_t s = m->slots[i];
        if (s == 0)
            return KF_NONE;
        if (eq(g, s - 1, key))
            return s - 1;
    }
}

static void map_put_slot(kf_nodemap *m, uint64_t h, int32_t node)
{
    uint32_t i = (uint32_t)h & (m->cap - 1);
    while (m->slots[i] != 0)
        i = (i + 1) & (m->cap - 1);
    m->slots[i] = node + 1;
    m->count++;
}

/* Insert node (not present) with hash h; hashes of present nodes come from
 * rehash(g, node).  Returns false when out of memory. */
static bool map_insert(const kf_graph *g, kf_nodemap *m, uint64_t h, int32_t node,
                       uint64_t (*rehash)(const kf_graph *, int32_t))
{
    if ((m->count + 1) * 2 > m->cap) {
        uint32_t ncap = m->cap ? m->cap * 2 : 16;
        int32_t *ns = calloc(ncap, sizeof *ns);
        if (!ns)
            return false;
        kf_nodemap nm = { ns, ncap, 0 };
        for (uint32_t i = 0; i < m->cap; i++)
            if (m->slots[i])
                map_put_slot(&nm, rehash(g, m->slots[i] - 1), m->slots[i] - 1);
        free(m->slots);
        *m = nm;
    }
    map_put_slot(m, h, node);
    return true;
}

typedef struct { const char *s; size_t n; } namekey;

static bool name_eq(const kf_graph *g, int32_t node, const void *key)
{
    const namekey *k = key;
    const char *nm = g->nodes[node].name;
    return strlen(nm) == k->n && memcmp(nm, k->s, k->n) == 0;
}
static uint64_t name_rehash(const kf_graph *g, int32_t node)
{
    return hash_bytes(g->nodes[node].name, strlen(g->nodes[node].name));
}

typedef struct { uint8_t dtype; uint64_t bits; } constkey;

static constkey const_key(const kf_irnode *x)
{
    constkey k = { x->dtype, 0 };
    memcpy(&k.bits, &x->lit, 8);
    return k;
}
static uint64_t const_hash(constkey k) { return hash_bytes(&k.bits, 8) ^ (k.dtype * 0x9e3779b97f4a7c15ull); }
static bool const_eq(const kf_graph *g, int32_t node, const void *key)
{
    const constkey *k = key;
    constkey c = const_key(&g->nodes[node]);
    return c.dtype == k->dtype && c.bits == k->bits;
}
static uint64_t const_rehash(const kf_graph *g, int32_t node) { return const_hash(const_key(&g->nodes[node])); }

kf_node kf_ir_lookup(const kf_graph *g, const char *name, size_t len)
{
    namekey k = { name, len };
    return map_find(g, &g->names, hash_bytes(name, len), name_eq, &k);
}

/* -- Graph lifetime ----------------------------------------------------------- */

kf_graph *kf_graph_new(const char *name)
{
    kf_graph *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->name = strdup(name && *name ? name : "g");
    if (!g->name) {
        free(g);
        return NULL;
    }
    g->max_nodes = 1u << 20;
    g->err_node = KF_NONE;
    if (name && !kf_ir_is_ident(name, strlen(name)))
        kf_ir_fail(g, KF_ERR_NAME, KF_NONE, "graph name '%s' is not an identifier", name);
    return g;
}

void kf_graph_free(kf_graph *g)
{
    if (!g)
        return;
    for (int32_t i = 0; i < g->nnodes; i++)
        free(g->nodes[i].name);
    for (int32_t i = 0; i < g->nsyms; i++)
        free(g->syms[i]);
    free(g->nodes);
    free(g->inputs);
    free(g->outputs);
    free(g->syms);
    free(g->names.slots);
    free(g->consts.slots);
    free(g->name);
    free(g);
}

static void *dup_mem(const void *p, size_t n)
{
    if (n == 0)
        return NULL;
    void *q = malloc(n);
    if (q)
        memcpy(q, p, n);
    return q;
}

kf_graph *kf_graph_clone(const kf_graph *g)
{
    if (!g)
        return NULL;
    kf_graph *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    *c = *g;
    atomic_store(&c->hash_at, 0); /* passes rewrite a clone's nodes in place */
    c->name = NULL;
    c->nodes = NULL;
    c->inputs = NULL;
    c->outputs = NULL;
    c->syms = NULL;
    c->names.slots = NULL;
    c->consts.slots = NULL;
    c->nnodes = c->nsyms = 0;
    c->cap = g->nnodes;
    c->incap = g->ninputs;
    c->outcap = g->noutputs;
    c->symcap = g->nsyms;
    bool ok = (c->name = strdup(g->name)) != NULL;
    ok = ok && (g->nnodes == 0 || (c->nodes = dup_mem(g->nodes, g->nnodes * sizeof *g->nodes)));
    ok = ok && (g->ninputs == 0 || (c->inputs = dup_mem(g->inputs, g->ninputs * sizeof *g->inputs)));
    ok = ok && (g->noutputs == 0 || (c->outputs = dup_mem(g->outputs, g->noutputs * sizeof *g->outputs)));
    ok = ok && (g->nsyms == 0 || (c->syms = calloc(g->nsyms, sizeof *c->syms)));
    ok = ok && (g->names.cap == 0 || (c->names.slots = dup_mem(g->names.slots, g->names.cap * sizeof(int32_t))));
    ok = ok && (g->consts.cap == 0 || (c->consts.slots = dup_mem(g->consts.slots, g->consts.cap * sizeof(int32_t))));
    if (c->nodes) {
        for (int32_t i = 0; i < g->nnodes; i++)
            c->nodes[i].name = NULL;
        c->nnodes = g->nnodes;
        for (int32_t i = 0; ok && i < g->nnodes; i++)
            if (g->nodes[i].name)
                ok = (c->nodes[i].name = strdup(g->nodes[i].name)) != NULL;
    }
    if (c->syms) {
        c->nsyms = g->nsyms;
        for (int32_t i = 0; ok && i < g->nsyms; i++)
            ok = (c->syms[i] = strdup(g->syms[i])) != NULL;
    }
    if (!ok) {
        kf_graph_free(c);
        return NULL;
    }
    return c;
}

/* -- Errors ---------------------------------------------------------------------- */

kf_status kf_ir_fail(kf_graph *g, kf_status s, kf_node n, const char *fmt, ...)
{
    if (g->status != KF_OK)
        return s;
    g->status = s;
    g->err_node = n;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g->err, sizeof g->err, fmt, ap);
    va_end(ap);
    return s;
}

kf_status kf_graph_status(const kf_graph *g) { return g ? g->status : KF_ERR_INVALID_ARG; }
const char *kf_graph_error(const kf_graph *g) { return g ? g->err : "null graph"; }
kf_node kf_graph_error_node(const kf_graph *g) { return g ? g->err_node : KF_NONE; }

/* -- Shapes and inference ------------------------------------------------------ */

static void dim_str(const kf_graph *g, int64_t d, char *buf, size_t len)
{
    if (d >= 0)
        snprintf(buf, len, "%lld", (long long)d);
    else
        snprintf(buf, len, "%s", g->syms[KF_IR_SYM_INDEX(d)]);
}

void kf_ir_shape_str(const kf_graph *g, const kf_irnode *x, char *buf, size_t len)
{
    size_t o = 0;
    o += (size_t)snprintf(buf + o, len - o, "[");
    for (int i = 0; i < x->rank && o < len; i++) {
        char d[80];
        dim_str(g, x->dims[i], d, sizeof d);
        o += (size_t)snprintf(buf + o, len - o, "%s%s", i ? "," : "", d);
    }
    if (o < len)
        snprintf(buf + o, len - o, "]");
}

int64_t kf_ir_numel_static(const kf_irnode *x)
{
    int64_t n = 1;
    for (int i = 0; i < x->rank; i++)
        if (x->dims[i] < 0 || __builtin_mul_overflow(n, x->dims[i], &n))
            return -1;
    return n;
}

/* Broadcast the shapes of x's args into x (NumPy rules; two different
 * symbols, or a symbol against a literal other than 1, never broadcast). */
static kf_status broadcast(const kf_graph *g, kf_irnode *x, int first, char *msg, size_t msglen)
{
    int rank = 0;
    for (int a = first; a < x->nargs; a++)
        if (g->nodes[x->args[a]].rank > rank)
            rank = g->nodes[x->args[a]].rank;
    x->rank = (uint8_t)rank;
    for (int i = 0; i < rank; i++)
        x->dims[i] = 1;
    for (int a = first; a < x->nargs; a++) {
        const kf_irnode *y = &g->nodes[x->args[a]];
        for (int j = 0; j < y->rank; j++) {
            int i = rank - y->rank + j;
            int64_t d = x->dims[i], e = y->dims[j];
            if (d == e || e == 1)
                continue;
            if (d == 1) {
                x->dims[i] = e;
                continue;
            }
            char ds[80], es[80], s1[200], s2[200];
            dim_str(g, d, ds, sizeof ds);
            dim_str(g, e, es, sizeof es);
            kf_ir_shape_str(g, &g->nodes[x->args[first]], s1, sizeof s1);
            kf_ir_shape_str(g, y, s2, sizeof s2);
            snprintf(msg, msglen, "%s: shapes %s and %s do not broadcast (%s against %s%s)",
                     kf_ir_ops[x->op].name, s1, s2, ds, es,
                     d < 0 && e < 0 ? ": two different symbols never broadcast" : "");
            return KF_ERR_SHAPE;
        }
    }
    return KF_OK;
}

static bool rule_accepts(kf_rule r, kf_dtype t)
{
    switch (r) {
    case T_NUM: case T_RNUM: case T_RARG: return t != KF_BOOL;
    case T_FLOAT: case T_FPRED: case T_RFLOAT: return kf_dt_is_float(t);
    case T_BITS: return t == KF_BOOL || kf_dt_is_int(t);
    case T_INT: return kf_dt_is_int(t);
    default: return true;
    }
}

static const char *rule_wants(kf_rule r)
{
    switch (r) {
    case T_NUM: case T_RNUM: case T_RARG: return "a numeric dtype (not bool)";
    case T_FLOAT: case T_FPRED: case T_RFLOAT: return "a float dtype (f16, bf16, f32, f64)";
    case T_BITS: return "bool or an integer dtype";
    case T_INT: return "an integer dtype";
    default: return "any dtype";
    }
}

kf_status kf_ir_infer(const kf_graph *g, kf_irnode *x, char *msg, size_t msglen)
{
    if (x->op >= KF_OP_COUNT) {
        snprintf(msg, msglen, "unknown op %d", x->op);
        return KF_ERR_INVALID_ARG;
    }
    const kf_opinfo *oi = &kf_ir_ops[x->op];
    const char *on = oi->name;
    int32_t self = g->nnodes; /* operands must come before the node itself */
    if (oi->kind != KF_KIND_LEAF && x->nargs != oi->arity) {
        snprintf(msg, msglen, "%s takes %d operand%s, got %d", on, oi->arity, oi->arity == 1 ? "" : "s", x->nargs);
        return KF_ERR_INVALID_ARG;
    }
    for (int a = 0; a < x->nargs; a++)
        if (x->args[a] < 0 || x->args[a] >= self) {
            snprintf(msg, msglen, "%s: operand %d is not a node of this graph (%d)", on, a + 1, x->args[a]);
            return KF_ERR_INVALID_ARG;
        }
    const kf_irnode *a0 = x->nargs > 0 ? &g->nodes[x->args[0]] : NULL;
    kf_rule rule = (kf_rule)oi->rule;

    switch (oi->kind) {
    case KF_KIND_LEAF:
        if (!kf_dt_is_valid(x->dtype)) {
            snprintf(msg, msglen, "invalid dtype %d", x->dtype);
            return KF_ERR_INVALID_ARG;
        }
        if (x->rank > KF_MAX_RANK) {
            snprintf(msg, msglen, "rank %d is over the limit of %d", x->rank, KF_MAX_RANK);
            return KF_ERR_SHAPE;
        }
        return KF_OK;

    case KF_KIND_EW: {
        int first = 0;
        if (rule == T_SELECT) {
            if (a0->dtype != KF_BOOL) {
                snprintf(msg, msglen, "select: condition must be bool, got %s", kf_dtype_name(a0->dtype));
                return KF_ERR_TYPE;
            }
            first = 1;
        }
        if (rule == T_CAST) {
            if (!kf_dt_is_valid(x->dtype)) {
                snprintf(msg, msglen, "cast: invalid target dtype %d", x->dtype);
                return KF_ERR_INVALID_ARG;
            }
        } else {
            kf_dtype t = g->nodes[x->args[first]].dtype;
            for (int a = first + 1; a < x->nargs; a++) {
                kf_dtype u = g->nodes[x->args[a]].dtype;
                if (u != t) {
                    snprintf(msg, msglen, "%s: operands have different dtypes (%s and %s); casts are explicit",
                             on, kf_dtype_name(t), kf_dtype_name(u));
                    return KF_ERR_TYPE;
                }
            }
            if (!rule_accepts(rule, t)) {
                snprintf(msg, msglen, "%s: needs %s, got %s", on, rule_wants(rule), kf_dtype_name(t));
                return KF_ERR_TYPE;
            }
            x->dtype = (uint8_t)((rule == T_CMP || rule == T_FPRED) ? KF_BOOL : t);
        }
        /* select broadcasts its condition too */
        return broadcast(g, x, 0, msg, msglen);
    }

    case KF_KIND_INDEX:
        if (x->op == KF_OP_IOTA) {
            if (!kf_dt_is_valid(x->dtype) || x->dtype == KF_BOOL) {
                snprintf(msg, msglen, "iota: needs a numeric dtype (not bool)");
                return KF_ERR_TYPE;
            }
            if (x->rank < 1 || x->rank > KF_MAX_RANK) {
                snprintf(msg, msglen, "iota: rank must be 1 to %d, got %d", KF_MAX_RANK, x->rank);
                return KF_ERR_SHAPE;
            }
            if (x->axis < 0 || x->axis >= x->rank) {
                snprintf(msg, msglen, "iota: axis %d out of range for rank %d", x->axis, x->rank);
                return KF_ERR_SHAPE;
            }
            return KF_OK;
        } else {
            const kf_irnode *ix = &g->nodes[x->args[1]];
            if (a0->rank != 1) {
                snprintf(msg, msglen, "take: the array must be 1-D, got rank %d", a0->rank);
                return KF_ERR_SHAPE;
            }
            if (!kf_dt_is_int(ix->dtype)) {
                snprintf(msg, msglen, "take: the index must have an integer dtype, got %s", kf_dtype_name(ix->dtype));
                return KF_ERR_TYPE;
            }
            x->dtype = a0->dtype;
            x->rank = ix->rank;
            memcpy(x->dims, ix->dims, sizeof x->dims);
            return KF_OK;
        }

    case KF_KIND_REDUCE: {
        if (!rule_accepts(rule, a0->dtype)) {
            snprintf(msg, msglen, "%s: needs %s, got %s", on, rule_wants(rule), kf_dtype_name(a0->dtype));
            return KF_ERR_TYPE;
        }
        if (a0->rank < 8 && (x->axes >> a0->rank) != 0) {
            snprintf(msg, msglen, "%s: axes out of range for rank %d", on, a0->rank);
            return KF_ERR_SHAPE;
        }
        x->dtype = (uint8_t)(rule == T_RARG ? KF_I64 : a0->dtype);
        int r = 0;
        for (int i = 0; i < a0->rank; i++) {
            if (x->axes & (1u << i)) {
                if (x->keepdims)
                    x->dims[r++] = 1;
            } else {
                x->dims[r++] = a0->dims[i];
            }
        }
        x->rank = (uint8_t)r;
        return KF_OK;
    }
    }
    snprintf(msg, msglen, "bad op kind");
    return KF_ERR_INVALID_ARG;
}

/* -- Adding nodes ----------------------------------------------------------------- */

kf_node kf_ir_add(kf_graph *g, const kf_irnode *proto)
{
    if (g->status != KF_OK)
        return KF_NONE;
    if ((uint32_t)g->nnodes >= g->max_nodes) {
        kf_ir_fail(g, KF_ERR_LIMIT, KF_NONE, "graph '%s' has more than %u nodes (limit)", g->name, g->max_nodes);
        return KF_NONE;
    }
    kf_irnode x = *proto;
    x.name = NULL;
    x.param = -1;
    char msg[sizeof g->err];
    kf_status s = kf_ir_infer(g, &x, msg, sizeof msg);
    if (s != KF_OK) {
        kf_ir_fail(g, s, g->nnodes, "%s", msg);
        return KF_NONE;
    }
    if (g->nnodes == g->cap) {
        int32_t ncap = g->cap ? g->cap * 2 : 32;
        kf_irnode *nn = realloc(g->nodes, (size_t)ncap * sizeof *nn);
        if (!nn) {
            kf_ir_fail(g, KF_ERR_NO_MEMORY, KF_NONE, "out of memory adding a node");
            return KF_NONE;
        }
        g->nodes = nn;
        g->cap = ncap;
    }
    g->nodes[g->nnodes] = x;
    return g->nnodes++;
}

static bool grow_i32(int32_t **arr, int32_t n, int32_t *cap)
{
    if (n < *cap)
        return true;
    int32_t ncap = *cap ? *cap * 2 : 8;
    int32_t *na = realloc(*arr, (size_t)ncap * sizeof *na);
    if (!na)
        return false;
    *arr = na;
    *cap = ncap;
    return true;
}

int kf_ir_symbol(kf_graph *g, const char *name, size_t len)
{
    for (int32_t i = 0; i < g->nsyms; i++)
        if (strlen(g->syms[i]) == len && memcmp(g->syms[i], name, len) == 0)
            return i;
    if (g->nsyms == g->symcap) {
        int32_t ncap = g->symcap ? g->symcap * 2 : 4;
        char **ns = realloc(g->syms, (size_t)ncap * sizeof *ns);
        if (!ns) {
            kf_ir_fail(g, KF_ERR_NO_MEMORY, KF_NONE, "out of memory");
            return -1;
        }
        g->syms = ns;
        g->symcap = ncap;
    }
    char *s = malloc(len + 1);
    if (!s) {
        kf_ir_fail(g, KF_ERR_NO_MEMORY, KF_NONE, "out of memory");
        return -1;
    }
    memcpy(s, name, len);
    s[len] = 0;
    g->syms[g->nsyms] = s;
    return g->nsyms++;
}

/* Fill x's shape from a public dims array; false (error kept) when bad. */
static bool set_dims(kf_graph *g, kf_irnode *x, const char *what, int rank, const kf_dim *dims)
{
    if (rank < 0 || rank > KF_MAX_RANK || (rank > 0 && !dims)) {
        kf_ir_fail(g, KF_ERR_SHAPE, KF_NONE, "%s: rank %d is not 0 to %d (or dims is NULL)", what, rank, KF_MAX_RANK);
        return false;
    }
    x->rank = (uint8_t)rank;
    for (int i = 0; i < rank; i++) {
        if (dims[i].sym) {
            size_t n = strlen(dims[i].sym);
            if (!kf_ir_is_ident(dims[i].sym, n)) {
                kf_ir_fail(g, KF_ERR_NAME, KF_NONE, "%s: dimension %d: symbol '%s' is not an identifier", what, i,
                           dims[i].sym);
                return false;
            }
            int s = kf_ir_symbol(g, dims[i].sym, n);
            if (s < 0)
                return false;
            x->dims[i] = KF_IR_SYM(s);
        } else if (dims[i].size < 0) {
            kf_ir_fail(g, KF_ERR_SHAPE, KF_NONE, "%s: dimension %d has negative size %lld", what, i,
                       (long long)dims[i].size);
            return false;
        } else {
            x->dims[i] = dims[i].size;
        }
    }
    return true;
}

static kf_node add_input(kf_graph *g, const char *name, kf_dtype t, bool scalar, int rank, const kf_dim *dims)
{
    if (!g || g->status != KF_OK)
        return KF_NONE;
    kf_irnode x = { .op = KF_OP_INPUT, .dtype = (uint8_t)t, .scalar = scalar };
    if (!kf_dt_is_valid((int)t)) {
        kf_ir_fail(g, KF_ERR_INVALID_ARG, KF_NONE, "input '%s': invalid dtype %d", name ? name : "?", (int)t);
        return KF_NONE;
    }
    if (!name) {
        kf_ir_fail(g, KF_ERR_INVALID_ARG, KF_NONE, "input: name is NULL");
        return KF_NONE;
    }
    if (!set_dims(g, &x, name, rank, dims) || !grow_i32(&g->inputs, g->ninputs, &g->incap)) {
        kf_ir_fail(g, KF_ERR_NO_MEMORY, KF_NONE, "out of memory");
        return KF_NONE;
    }
    kf_node n = kf_ir_add(g, &x);
    if (n == KF_NONE || kf_set_name(g, n, name) != KF_OK)
        return KF_NONE;
    g->nodes[n].param = g->ninputs;
    g->inputs[g->ninputs++] = n;
    return n;
}

kf_node kf_input(kf_graph *g, const char *name, kf_dtype t, int rank, const kf_dim *dims)
{
    return add_input(g, name, t, false, rank, dims);
}

kf_node kf_scalar(kf_graph *g, const char *name, kf_dtype t) { return add_input(g, name, t, true, 0, NULL); }

/* Intern a literal node whose payload is already normalised to dtype t. */
static kf_node add_lit(kf_graph *g, kf_dtype t, kf_lit v)
{
    kf_irnode x = { .op = KF_OP_CONST, .dtype = (uint8_t)t, .lit = v };
    constkey k = const_key(&x);
    uint64_t h = const_hash(k);
    kf_node n = map_find(g, &g->consts, h, const_eq, &k);
    if (n != KF_NONE)
        return n;
    n = kf_ir_add(g, &x);
    if (n != KF_NONE && !map_insert(g, &g->consts, h, n, const_rehash)) {
        kf_ir_fail(g, KF_ERR_NO_MEMORY, n, "out of memory");
        return KF_NONE;
    }
    return n;
}

static double round_float(kf_dtype t, double v)
{
    switch (t) {
    case KF_F16: return kf_f16_to_f32(kf_f64_to_f16(v));
    case KF_BF16: return kf_bf16_to_f32(kf_f64_to_bf16(v));
    case KF_F32: return (float)v;
    default: return v;
    }
}

static const struct { int64_t lo; uint64_t hi; } int_range[KF_DTYPE_COUNT] = {
    [KF_BOOL] = { 0, 1 },
    [KF_I8] = { INT8_MIN, INT8_MAX },   [KF_I16] = { INT16_MIN, INT16_MAX },
    [KF_I32] = { INT32_MIN, INT32_MAX }, [KF_I64] = { INT64_MIN, INT64_MAX },
    [KF_U8] = { 0, UINT8_MAX },   [KF_U16] = { 0, UINT16_MAX },
    [KF_U32] = { 0, UINT32_MAX }, [KF_U64] = { 0, UINT64_MAX },
};

static kf_node lit_check(kf_graph *g, kf_dtype t)
{
    if (!g || g->status != KF_OK)
        return KF_NONE;
    if (!kf_dt_is_valid((int)t)) {
        kf_ir_fail(g, KF_ERR_INVALID_ARG, KF_NONE, "literal: invalid dtype %d", (int)t);
        return KF_NONE;
    }
    return 0;
}

kf_node kf_lit_i(kf_graph *g, kf_dtype t, int64_t v)
{
    if (lit_check(g, t) == KF_NONE)
        return KF_NONE;
    kf_lit l;
    if (kf_dt_is_float(t)) {
        return kf_lit_f(g, t, (double)v);
    } else if (v < int_range[t].lo || (v > 0 && (uint64_t)v > int_range[t].hi)) {
        kf_ir_fail(g, KF_ERR_TYPE, KF_NONE, "literal %lld is out of range for %s", (long long)v, kf_dtype_name(t));
        return KF_NONE;
    } else if (kf_dt_is_sint(t)) {
        l.i = v;
    } else {
        l.u = (uint64_t)v;
    }
    return add_lit(g, t, l);
}

kf_node kf_lit_u(kf_graph *g, kf_dtype t, uint64_t v)
{
    if (lit_check(g, t) == KF_NONE)
        return KF_NONE;
    if (kf_dt_is_float(t))
        return kf_lit_f(g, t, (double)v);
    if (v > int_range[t].hi) {
        kf_ir_fail(g, KF_ERR_TYPE, KF_NONE, "literal %llu is out of range for %s", (unsigned long long)v,
                   kf_dtype_name(t));
        return KF_NONE;
    }
    return kf_dt_is_sint(t) ? add_lit(g, t, (kf_lit){ .i = (int64_t)v }) : add_lit(g, t, (kf_lit){ .u = v });
}

kf_node kf_lit_f(kf_graph *g, kf_dtype t, double v)
{
    if (lit_check(g, t) == KF_NONE)
        return KF_NONE;
    if (kf_dt_is_float(t)) {
        double r = round_float(t, v);
        if (isinf(r) && !isinf(v)) {
            kf_ir_fail(g, KF_ERR_TYPE, KF_NONE, "literal %.17g overflows %s", v, kf_dtype_name(t));
            return KF_NONE;
        }
        return add_lit(g, t, (kf_lit){ .f = r });
    }
    if (v != v || v != floor(v)) {
        kf_ir_fail(g, KF_ERR_TYPE, KF_NONE, "literal %.17g is not an integer, so it cannot be %s", v, kf_dtype_name(t));
        return KF_NONE;
    }
    if (v >= -9223372036854775808.0 && v < 9223372036854775808.0)
        return kf_lit_i(g, t, (int64_t)v);
    if (v >= 0 && v < 18446744073709551616.0)
        return kf_lit_u(g, t, (uint64_t)v);
    kf_ir_fail(g, KF_ERR_TYPE, KF_NONE, "literal %.17g is out of range for %s", v, kf_dtype_name(t));
    return KF_NONE;
}

kf_node kf_apply(kf_graph *g, kf_op op, int nargs, const kf_node *args)
{
    if (!g || g->status != KF_OK)
        return KF_NONE;
    if ((unsigned)op >= KF_OP_COUNT || kf_ir_ops[op].kind != KF_KIND_EW || op == KF_OP_CAST) {
        kf_ir_fail(g, KF_ERR_INVALID_ARG, KF_NONE, "kf_apply: op %d (%s) is not an elementwise op; use %s", (int)op,
                   (unsigned)op < KF_OP_COUNT ? kf_ir_ops[op].name : "?",
                   op == KF_OP_CAST ? "kf_cast" : "kf_iota, kf_take, kf_reduce or kf_input");
        return KF_NONE;
    }
    if (nargs < 0 || nargs > 3 || (nargs > 0 && !args)) {
        kf_ir_fail(g, KF_ERR_INVALID_ARG, KF_NONE, "%s: bad operand count %d", kf_ir_ops[op].name, nargs);
        return KF_NONE;
    }
    kf_irnode x = { .op = (uint16_t)op, .nargs = (uint8_t)nargs };
    for (int i = 0; i < nargs; i++)
        x.args[i] = args[i];
    return kf_ir_add(g, &x);
}

kf_node kf_unary(kf_graph *g, kf_op op, kf_node a) { return kf_apply(g, op, 1, &a); }
kf_node kf_binary(kf_graph *g, kf_op op, kf_node a, kf_node b)
{
    kf_node v[2] = { a, b };
    return kf_apply(g, op, 2, v);
}
kf_node kf_ternary(kf_graph *g, kf_op op, kf_node a, kf_node b, kf_node c)
{
    kf_node v[3] = { a, b, c };
    return kf_apply(g, op, 3, v);
}

kf_node kf_cast(kf_graph *g, kf_node a, kf_dtype t)
{
    if (!g || g->status != KF_OK)
        return KF_NONE;
    kf_irnode x = { .op = KF_OP_CAST, .dtype = (uint8_t)t, .nargs = 1, .args = { a } };
    if (!kf_dt_is_valid((int)t)) {
        kf_ir_fail(g, KF_ERR_INVALID_ARG, KF_NONE, "cast: invalid target dtype %d", (int)t);
        return KF_NONE;
    }
    return kf_ir_add(g, &x);
}

kf_node kf_iota(kf_graph *g, kf_dtype t, int rank, const kf_dim *dims, int axis)
{
    if (!g || g->status != KF_OK)
        return KF_NONE;
    kf_irnode x = { .op = KF_OP_IOTA, .dtype = (uint8_t)t };
    if (!kf_dt_is_valid((int)t)) {
        kf_ir_fail(g, KF_ERR_INVALID_ARG, KF_NONE, "iota: invalid dtype %d", (int)t);
        return KF_NONE;
    }
    if (!set_dims(g, &x, "iota", rank, dims))
        return KF_NONE;
    if (rank >= 1 && (axis < -rank || axis >= rank)) {
        kf_ir_fail(g, KF_ERR_SHAPE, g->nnodes, "iota: axis %d out of range for rank %d", axis, rank);
        return KF_NONE;
    }
    x.axis = (int8_t)(axis < 0 && rank >= 1 ? axis + rank : axis < 0 ? 0 : axis);
    return kf_ir_add(g, &x);
}

kf_node kf_take(kf_graph *g, kf_node v, kf_node index)
{
    if (!g || g->status != KF_OK)
        return KF_NONE;
    kf_irnode x = { .op = KF_OP_TAKE, .nargs = 2, .args = { v, index } };
    return kf_ir_add(g, &x);
}

kf_node kf_reduce(kf_graph *g, kf_op op, kf_node a, int naxes, const int *axes, bool keepdims)
{
    if (!g || g->status != KF_OK)
        return KF_NONE;
    if ((unsigned)op >= KF_OP_COUNT || kf_ir_ops[op].kind != KF_KIND_REDUCE) {
        kf_ir_fail(g, KF_ERR_INVALID_ARG, KF_NONE, "kf_reduce: op %d is not a reduction", (int)op);
        return KF_NONE;
    }
    const char *on = kf_ir_ops[op].name;
    if (!kf_ir_valid_node(g, a)) {
        kf_ir_fail(g, KF_ERR_INVALID_ARG, KF_NONE, "%s: operand is not a node of this graph (%d)", on, a);
        return KF_NONE;
    }
    int rank = g->nodes[a].rank;
    unsigned mask = 0;
    if (naxes < 0 || (naxes > 0 && !axes)) {
        kf_ir_fail(g, KF_ERR_INVALID_ARG, KF_NONE, "%s: bad axes (count %d)", on, naxes);
        return KF_NONE;
    }
    if (naxes == 0)
        mask = (1u << rank) - 1;
    for (int i = 0; i < naxes; i++) {
        int ax = axes[i] < 0 ? axes[i] + rank : axes[i];
        if (ax < 0 || ax >= rank) {
            kf_ir_fail(g, KF_ERR_SHAPE, KF_NONE, "%s: axis %d out of range for rank %d", on, axes[i], rank);
            return KF_NONE;
        }
        if (mask & (1u << ax)) {
            kf_ir_fail(g, KF_ERR_SHAPE, KF_NONE, "%s: axis %d given twice", on, axes[i]);
            return KF_NONE;
        }
        mask |= 1u << ax;
    }
    kf_irnode x = { .op = (uint16_t)op, .nargs = 1, .args = { a }, .axes = (uint8_t)mask, .keepdims = keepdims };
    return kf_ir_add(g, &x);
}

kf_status kf_set_name(kf_graph *g, kf_node n, const char *name)
{
    if (!g)
        return KF_ERR_INVALID_ARG;
    if (g->status != KF_OK)
        return g->status;
    if (!kf_ir_valid_node(g, n))
        return kf_ir_fail(g, KF_ERR_INVALID_ARG, KF_NONE, "name: %d is not a node of this graph", n);
    size_t len = name ? strlen(name) : 0;
    if (!name || !kf_ir_is_ident(name, len))
        return kf_ir_fail(g, KF_ERR_NAME, n, "'%s' is not a valid name (an identifier, not a dtype or keyword)",
                          name ? name : "(null)");
    kf_irnode *x = &g->nodes[n];
    if (x->name)
        return strcmp(x->name, name) == 0 ? KF_OK
                                          : kf_ir_fail(g, KF_ERR_NAME, n, "value '%s' cannot be renamed '%s'", x->name, name);
    kf_node other = kf_ir_lookup(g, name, len);
    if (other != KF_NONE)
        return kf_ir_fail(g, KF_ERR_NAME, n, "duplicate name '%s' (already node %d)", name, other);
    if (!(x->name = strdup(name)))
        return kf_ir_fail(g, KF_ERR_NO_MEMORY, n, "out of memory");
    if (!map_insert(g, &g->names, hash_bytes(name, len), n, name_rehash))
        return kf_ir_fail(g, KF_ERR_NO_MEMORY, n, "out of memory");
    return KF_OK;
}

kf_status kf_output(kf_graph *g, kf_node n, const char *name)
{
    if (!g)
        return KF_ERR_INVALID_ARG;
    if (g->status != KF_OK)
        return g->status;
    if (!kf_ir_valid_node(g, n))
        return kf_ir_fail(g, KF_ERR_INVALID_ARG, KF_NONE, "output: %d is not a node of this graph", n);
    if (!name && !g->nodes[n].name)
        return kf_ir_fail(g, KF_ERR_NAME, n, "output: an unnamed node needs a name");
    if (name) {
        kf_status s = kf_set_name(g, n, name);
        if (s != KF_OK)
            return s;
    }
    for (int32_t i = 0; i < g->noutputs; i++)
        if (g->outputs[i] == n)
            return kf_ir_fail(g, KF_ERR_NAME, n, "'%s' is already an output", g->nodes[n].name);
    if (!grow_i32(&g->outputs, g->noutputs, &g->outcap))
        return kf_ir_fail(g, KF_ERR_NO_MEMORY, n, "out of memory");
    g->outputs[g->noutputs++] = n;
    return KF_OK;
}

/* -- Verifier ------------------------------------------------------------------------ */

kf_status kf_graph_verify(kf_graph *g)
{
    if (!g)
        return KF_ERR_INVALID_ARG;
    if (g->status != KF_OK)
        return g->status;
    if (g->noutputs == 0)
        return kf_ir_fail(g, KF_ERR_INVALID_ARG, KF_NONE, "graph '%s' has no outputs", g->name);
    for (int32_t i = 0; i < g->ninputs; i++) {
        int32_t n = g->inputs[i];
        if (!kf_ir_valid_node(g, n) || g->nodes[n].op != KF_OP_INPUT || g->nodes[n].param != i)
            return kf_ir_fail(g, KF_ERR_INVALID_ARG, KF_NONE, "graph '%s': input %d is corrupt", g->name, i);
    }
    for (int32_t i = 0; i < g->noutputs; i++)
        if (!kf_ir_valid_node(g, g->outputs[i]))
            return kf_ir_fail(g, KF_ERR_INVALID_ARG, KF_NONE, "graph '%s': output %d is corrupt", g->name, i);
    /* Re-infer every node as if it were being added at its own position. */
    int32_t total = g->nnodes;
    char msg[sizeof g->err];
    kf_status s = KF_OK;
    for (int32_t i = 0; i < total && s == KF_OK; i++) {
        kf_irnode x = g->nodes[i];
        g->nnodes = i;
        s = kf_ir_infer(g, &x, msg, sizeof msg);
        const kf_irnode *y = &g->nodes[i];
        if (s == KF_OK && (x.dtype != y->dtype || x.rank != y->rank ||
                           memcmp(x.dims, y->dims, (size_t)x.rank * sizeof x.dims[0]) != 0)) {
            snprintf(msg, sizeof msg, "node %d (%s): stored dtype or shape disagrees with its operands", i,
                     kf_ir_ops[x.op].name);
            s = KF_ERR_INVALID_ARG;
        }
        if (s != KF_OK) {
            g->nnodes = total;
            return kf_ir_fail(g, s, i, "%s", msg);
        }
    }
    g->nnodes = total;
    return KF_OK;
}

/* -- Reading ------------------------------------------------------------------------- */

const char *kf_graph_name(const kf_graph *g) { return g ? g->name : NULL; }
int kf_graph_num_nodes(const kf_graph *g) { return g ? g->nnodes : 0; }
int kf_graph_num_inputs(const kf_graph *g) { return g ? g->ninputs : 0; }
int kf_graph_num_outputs(const kf_graph *g) { return g ? g->noutputs : 0; }
kf_node kf_graph_input(const kf_graph *g, int i) { return g && i >= 0 && i < g->ninputs ? g->inputs[i] : KF_NONE; }
kf_node kf_graph_output(const kf_graph *g, int i) { return g && i >= 0 && i < g->noutputs ? g->outputs[i] : KF_NONE; }
const char *kf_graph_output_name(const kf_graph *g, int i)
{
    return g && i >= 0 && i < g->noutputs ? g->nodes[g->outputs[i]].name : NULL;
}

kf_op kf_node_op(const kf_graph *g, kf_node n) { return g && kf_ir_valid_node(g, n) ? (kf_op)g->nodes[n].op : KF_OP_COUNT; }
kf_dtype kf_node_dtype(const kf_graph *g, kf_node n)
{
    return g && kf_ir_valid_node(g, n) ? (kf_dtype)g->nodes[n].dtype : KF_DTYPE_COUNT;
}
int kf_node_rank(const kf_graph *g, kf_node n) { return g && kf_ir_valid_node(g, n) ? g->nodes[n].rank : -1; }
bool kf_node_is_scalar(const kf_graph *g, kf_node n) { return g && kf_ir_valid_node(g, n) && g->nodes[n].scalar; }
const char *kf_node_name(const kf_graph *g, kf_node n) { return g && kf_ir_valid_node(g, n) ? g->nodes[n].name : NULL; }

kf_status kf_node_dim(const kf_graph *g, kf_node n, int i, kf_dim *d)
{
    if (!g || !d || !kf_ir_valid_node(g, n) || i < 0 || i >= g->nodes[n].rank)
        return KF_ERR_INVALID_ARG;
    int64_t v = g->nodes[n].dims[i];
    *d = v >= 0 ? KF_DIM(v) : KF_SYM(g->syms[KF_IR_SYM_INDEX(v)]);
    return KF_OK;
}

void kf_free(void *p) { free(p); }
