/* Internal IR: node and graph layout, op table queries, dtype classes.
 * Shared by every module of kfuse; the public view is include/kfuse.h.
 * Module prefix: kf_ir_ (internal), kf_ (public). */
#ifndef KF_IR_H
#define KF_IR_H

#include "kfuse.h"

#include <stdatomic.h>

/* -- Op table -------------------------------------------------------------- */

typedef enum kf_kind { KF_KIND_LEAF, KF_KIND_EW, KF_KIND_INDEX, KF_KIND_REDUCE } kf_kind;

/* Type rules: which operand dtypes an op takes and what it yields. */
typedef enum kf_rule {
    T_INPUT, T_CONST,
    T_NUM,     /* numeric (not bool), operands alike, result alike */
    T_FLOAT,   /* f16 bf16 f32 f64, operands alike, result alike */
    T_FPRED,   /* float operand, bool result */
    T_CMP,     /* any dtype, operands alike, bool result */
    T_BITS,    /* bool or integer, operands alike, result alike */
    T_INT,     /* integer only, operands alike, result alike */
    T_SELECT,  /* bool condition, two alike operands */
    T_CAST, T_IOTA, T_TAKE,
    T_RNUM,    /* reduction over numeric, result alike */
    T_RFLOAT,  /* reduction over float, result alike */
    T_RARG     /* argmin/argmax over numeric, i64 result */
} kf_rule;

enum { KF_OPF_COMM = 1, KF_OPF_NOTEXT = 2 };

typedef struct kf_opinfo {
    const char *name;
    uint8_t arity;
    uint8_t kind;   /* kf_kind */
    uint8_t rule;   /* kf_rule */
    uint8_t flags;  /* KF_OPF_* */
} kf_opinfo;

extern const kf_opinfo kf_ir_ops[KF_OP_COUNT];

static inline const kf_opinfo *kf_ir_op(kf_op op) { return &kf_ir_ops[op]; }

/* -- Dtype classes ---------------------------------------------------------- */

static inline bool kf_dt_is_float(kf_dtype t) { return t >= KF_F16 && t <= KF_F64; }
static inline bool kf_dt_is_sint(kf_dtype t) { return t >= KF_I8 && t <= KF_I64; }
static inline bool kf_dt_is_uint(kf_dtype t) { return t >= KF_U8 && t <= KF_U64; }
static inline bool kf_dt_is_int(kf_dtype t) { return kf_dt_is_sint(t) || kf_dt_is_uint(t); }
static inline bool kf_dt_is_valid(int t) { return t >= 0 && t < KF_DTYPE_COUNT; }
/* Parse a dtype name of length n; -1 when it is none. */
int kf_ir_dtype_from_name(const char *s, size_t n);

/* -- Nodes and graphs ------------------------------------------------------- */

/* A dimension is stored as an int64: >= 0 a literal size, < 0 the symbol
 * with index -(d + 1) in the graph's symbol table. */
#define KF_IR_SYM(i) (-(int64_t)(i)-1)
#define KF_IR_SYM_INDEX(d) ((int)(-(d)-1))

/* Literal payload: signed ints in i, unsigned and bool in u, floats in f
 * (f16/bf16/f32 literals hold the value already rounded to that dtype). */
typedef union kf_lit {
    int64_t i;
    uint64_t u;
    double f;
} kf_lit;

typedef struct kf_irnode {
    uint16_t op;        /* kf_op */
    uint8_t dtype;      /* kf_dtype of the result */
    uint8_t rank;
    uint8_t nargs;
    uint8_t axes;       /* reductions: bit i set when axis i is reduced */
    uint8_t keepdims;   /* reductions */
    int8_t axis;        /* iota */
    bool scalar;        /* INPUT passed by value */
    int32_t param;      /* INPUT: position in the signature, else -1 */
    int32_t args[3];
    char *name;         /* NULL when unnamed */
    kf_lit lit;         /* CONST */
    int64_t dims[KF_MAX_RANK];
} kf_irnode;

/* Open-addressing set of node indices: names (unique) and interned literals. */
typedef struct kf_nodemap {
    int32_t *slots;     /* node index + 1, 0 when empty */
    uint32_t cap;       /* power of two */
    uint32_t count;
} kf_nodemap;

struct kf_graph {
    char *name;
    kf_irnode *nodes;
    int32_t nnodes, cap;
    int32_t *inputs;    /* node index of each parameter, in order */
    int32_t ninputs, incap;
    int32_t *outputs;   /* node index of each output, in order */
    int32_t noutputs, outcap;
    char **syms;        /* symbol names */
    int32_t nsyms, symcap;
    kf_nodemap names;   /* by node name */
    kf_nodemap consts;  /* CONST nodes by dtype and value */
    uint32_t max_nodes;
    kf_status status;   /* first builder error, sticky */
    int32_t err_node;
    char err[512];
    /* kf_graph_hash's last result and the sizes it was computed at (0:
     * none).  The builder only appends nodes and outputs, so equal sizes
     * mean an equal hash and a repeated kf_compile skips the hashing.
     * Atomic: many threads may hash one graph at once. */
    _Atomic uint64_t hash_at, hash_lo, hash_hi;
};

static inline const kf_irnode *kf_ir_node(const kf_graph *g, kf_node n) { return &g->nodes[n]; }
static inline bool kf_ir_valid_node(const kf_graph *g, kf_node n) { return n >= 0 && n < g->nnodes; }

/* Record the first error on g (later ones are dropped); returns s. */
kf_status kf_ir_fail(kf_graph *g, kf_status s, kf_node n, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Symbol index for 'name' (interned); -1 when out of memory (error kept). */
int kf_ir_symbol(kf_graph *g, const char *name, size_t len);
/* Node named 'name' (length len), or KF_NONE. */
kf_node kf_ir_lookup(const kf_graph *g, const char *name, size_t len);
/* Dims written "n" or "4", for messages: "[n,4]". */
void kf_ir_shape_str(const kf_graph *g, const kf_irnode *x, char *buf, size_t len);
/* Infer and check dtype and shape of node 'x' from its operands and
 * attributes, as the builder and the verifier both do.  On failure writes a
 * message to msg and returns the status; x is left partly filled. */
kf_status kf_ir_infer(const kf_graph *g, kf_irnode *x, char *msg, size_t msglen);
/* Append a fully described node (op, args, attributes set; dtype and shape
 * inferred here).  Returns its index or KF_NONE (error kept on g). */
kf_node kf_ir_add(kf_graph *g, const kf_irnode *proto);

/* Number of elements of a literal shape; -1 when any dim is a symbol or
 * the product overflows int64. */
int64_t kf_ir_numel_static(const kf_irnode *x);

/* Identifier rule shared by builder, parser and printer. */
bool kf_ir_is_ident(const char *s, size_t n);

#endif /* KF_IR_H */
