/* .kir text parser (DESIGN.md "Text format") and the kf_module that owns the
 * parsed graphs.  Graphs are built through the public builder, so the text
 * and the C API check exactly the same rules.  Nested expressions are parsed
 * with an explicit heap stack: no input, however deep, recurses on the C
 * stack. */
#include "ir.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* -- Module ------------------------------------------------------------------ */

struct kf_module {
    kf_graph **graphs;
    int ngraphs, cap;
    kf_status status;   /* first error, KF_OK if none */
    char *error;        /* its message; NULL when none (or out of memory) */
};

/* Keep the first error only.  The message is built with the format. */
static void module_fail(kf_module *m, kf_status s, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void module_fail(kf_module *m, kf_status s, const char *fmt, ...)
{
    if (m->status != KF_OK)
        return;
    m->status = s;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !(m->error = malloc((size_t)n + 1)))
        return;
    va_start(ap, fmt);
    vsnprintf(m->error, (size_t)n + 1, fmt, ap);
    va_end(ap);
}

static bool module_append(kf_module *m, kf_graph *g)
{
    if (m->ngraphs == m->cap) {
        int ncap = m->cap ? m->cap * 2 : 4;
        kf_graph **ng = realloc(m->graphs, (size_t)ncap * sizeof *ng);
        if (!ng)
            return false;
        m->graphs = ng;
        m->cap = ncap;
    }
    m->graphs[m->ngraphs++] = g;
    return true;
}

void kf_module_free(kf_module *m)
{
    if (!m)
        return;
    for (int i = 0; i < m->ngraphs; i++)
        kf_graph_free(m->graphs[i]);
    free(m->graphs);
    free(m->error);
    free(m);
}

const char *kf_module_error(const kf_module *m)
{
    if (!m)
        return "null module";
    if (m->error)
        return m->error;
    return m->status == KF_OK ? "" : kf_status_string(m->status);
}

int kf_module_num_graphs(const kf_module *m) { return m ? m->ngraphs : 0; }
kf_graph *kf_module_graph(const kf_module *m, int i) { return m && i >= 0 && i < m->ngraphs ? m->graphs[i] : NULL; }

kf_graph *kf_module_find(const kf_module *m, const char *name)
{
    if (!m || !name)
        return NULL;
    for (int i = 0; i < m->ngraphs; i++)
        if (strcmp(m->graphs[i]->name, name) == 0)
            return m->graphs[i];
    return NULL;
}

/* -- Lexer --------------------------------------------------------------------- *
 * Tokens never span lines; a newline is a token of its own because it ends a
 * statement.  Numbers keep their text and are decoded where they are used,
 * since their dtype depends on the context. */

typedef enum kf_tkind { TK_EOF, TK_NL, TK_NAME, TK_NUM, TK_PUNCT, TK_ARROW, TK_BAD } kf_tkind;

typedef struct ptok {
    uint8_t kind;       /* kf_tkind */
    char ch;            /* TK_PUNCT: the character */
    const char *s;      /* the token's text (not NUL-terminated) */
    size_t n;
    size_t line, col;   /* 1-based */
} ptok;

typedef struct lexer {
    const char *src;
    size_t len, pos, line, linestart;
} lexer;

static bool is_alpha(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_digit(int c) { return c >= '0' && c <= '9'; }
static bool is_alnum(int c) { return is_alpha(c) || is_digit(c); }

static int at(const lexer *L, size_t i) { return i < L->len ? (unsigned char)L->src[i] : -1; }

/* "inf" or "nan" starting at i, not followed by an identifier character. */
static bool lex_special(const lexer *L, size_t i)
{
    if (i + 3 > L->len)
        return false;
    const char *s = L->src + i;
    return (memcmp(s, "inf", 3) == 0 || memcmp(s, "nan", 3) == 0) && !is_alnum(at(L, i + 3));
}

/* A number from L->pos: optional sign, then inf/nan or a run of digits,
 * letters, dots and exponent signs (C's pp-number), then an optional dtype
 * suffix ":f32" written without spaces. */
static size_t lex_number_end(const lexer *L, size_t p)
{
    size_t start = p;
    if (at(L, p) == '-' || at(L, p) == '+')
        p++;
    if (is_alpha(at(L, p))) {
        p += 3; /* inf or nan, checked by the caller */
    } else {
        bool hex = at(L, p) == '0' && (at(L, p + 1) | 0x20) == 'x';
        for (;;) {
            int c = at(L, p);
            if (is_alnum(c) || c == '.') {
                p++;
            } else if ((c == '+' || c == '-') && p > start) {
                int e = at(L, p - 1) | 0x20;
                if ((!hex && e == 'e') || (hex && e == 'p'))
                    p++;
                else
                    break;
            } else {
                break;
            }
        }
    }
    if (at(L, p) == ':' && is_alpha(at(L, p + 1))) {
        p++;
        while (is_alnum(at(L, p)))
            p++;
    }
    return p;
}

static ptok lex(lexer *L)
{
    for (;;) {
        int c = at(L, L->pos);
        if (c == ' ' || c == '\t' || c == '\r') {
            L->pos++;
        } else if (c == '#') {
            while (L->pos < L->len && L->src[L->pos] != '\n')
                L->pos++;
        } else {
            break;
        }
    }
    ptok t = { .kind = TK_EOF, .s = L->src + L->pos, .n = 0, .line = L->line, .col = L->pos - L->linestart + 1 };
    int c = at(L, L->pos);
    size_t end = L->pos + 1;
    if (c < 0) {
        return t;
    } else if (c == '\n') {
        t.kind = TK_NL;
        L->pos++;
        L->line++;
        L->linestart = L->pos;
        t.n = 1;
        return t;
    } else if (is_alpha(c)) {
        if (lex_special(L, L->pos)) {
            t.kind = TK_NUM;
            end = lex_number_end(L, L->pos);
        } else {
            t.kind = TK_NAME;
            while (is_alnum(at(L, end)))
                end++;
        }
    } else if (is_digit(c) || (c == '.' && is_digit(at(L, L->pos + 1)))) {
        t.kind = TK_NUM;
        end = lex_number_end(L, L->pos);
    } else if (c == '-' && at(L, L->pos + 1) == '>') {
        t.kind = TK_ARROW;
        end = L->pos + 2;
    } else if (c == '-' || c == '+') {
        int d = at(L, L->pos + 1);
        if (is_digit(d) || (d == '.' && is_digit(at(L, L->pos + 2))) || lex_special(L, L->pos + 1)) {
            t.kind = TK_NUM;
            end = lex_number_end(L, L->pos);
        } else {
            t.kind = TK_BAD;
        }
    } else {
        switch (c) {
        case '(': case ')': case '[': case ']': case '{': case '}': case ',': case ':': case '=':
            t.kind = TK_PUNCT;
            t.ch = (char)c;
            break;
        default:
            t.kind = TK_BAD;
            break;
        }
    }
    t.n = end - L->pos;
    L->pos = end;
    return t;
}

/* -- Parser state -------------------------------------------------------------- */

/* A literal as written: an integer spelling keeps its magnitude exactly, a
 * float spelling its value (sign applied). */
typedef struct plit {
    bool isfloat, neg, isbool;
    int suffix;         /* explicit dtype, or -1 */
    uint64_t mag;
    double f;
} plit;

enum { A_NODE, A_LIT, A_DTYPE, A_TYPE };

typedef struct xarg {
    uint8_t kind;       /* A_* */
    uint8_t dtype;      /* A_DTYPE, A_TYPE */
    kf_node node;       /* A_NODE */
    plit lit;           /* A_LIT */
    ptok tok;           /* where it was written */
} xarg;

/* One expression being parsed: "op arg, arg, kw=value".  Kept on a heap
 * stack, one per open parenthesis. */
typedef struct frame {
    ptok op;
    int ew, red;        /* candidate ops by text name, KF_OP_COUNT when none */
    int npos;           /* positional arguments seen (may exceed 3) */
    xarg args[3];
    int trank;          /* the type argument of iota */
    kf_dim tdims[KF_MAX_RANK];
    bool has_axes, has_keep, has_axis, keepdims, kw;
    int naxes, axis;
    int axes[KF_MAX_RANK];
} frame;

typedef struct parser {
    lexer L;
    ptok t;             /* current token */
    const char *file;
    kf_limits lim;
    kf_module *m;
    kf_graph *g;        /* graph being built, not yet in m */
    frame *stack;
    size_t nstack, capstack;
    ptok *outs;         /* output names of the current graph header */
    size_t nouts, capouts;
    char *buf;          /* scratch for NUL-terminated copies of tokens */
    size_t bufcap;
    int32_t *gslots;    /* graph names: open addressing, module index + 1 */
    size_t gcap;
} parser;

static bool failed(const parser *P) { return P->m->status != KF_OK; }

static void advance(parser *P) { P->t = lex(&P->L); }

static ptok peek(const parser *P)
{
    lexer L = P->L;
    return lex(&L);
}

static bool is_punct(const ptok *t, char c) { return t->kind == TK_PUNCT && t->ch == c; }
static bool tok_is(const ptok *t, const char *s) { return t->kind == TK_NAME && strlen(s) == t->n && memcmp(t->s, s, t->n) == 0; }
static bool at_eol(const ptok *t) { return t->kind == TK_NL || t->kind == TK_EOF; }

/* Describe a token for a message: 'text' (escaped, shortened), end of line,
 * end of input. */
static const char *describe(const ptok *t, char *buf, size_t len)
{
    if (t->kind == TK_EOF)
        return "end of input";
    if (t->kind == TK_NL)
        return "end of line";
    size_t o = 0, max = 40;
    buf[o++] = '\'';
    for (size_t i = 0; i < t->n && i < max && o + 8 < len; i++) {
        unsigned char c = (unsigned char)t->s[i];
        if (c >= 0x20 && c < 0x7f && c != '\'' && c != '\\')
            buf[o++] = (char)c;
        else
            o += (size_t)snprintf(buf + o, len - o, "\\x%02x", c);
    }
    if (t->n > max && o + 8 < len) {
        memcpy(buf + o, "...", 3);
        o += 3;
    }
    buf[o++] = '\'';
    buf[o] = 0;
    return buf;
}

static void perr(parser *P, kf_status s, const ptok *t, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void perr(parser *P, kf_status s, const ptok *t, const char *fmt, ...)
{
    if (failed(P))
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    module_fail(P->m, s, "%s:%zu:%zu: error: %s", P->file, t->line, t->col, msg);
}

/* "expected WHAT, found TOKEN" at the current token. */
static bool expected(parser *P, const char *what)
{
    char d[200];
    if (P->t.kind == TK_BAD)
        perr(P, KF_ERR_PARSE, &P->t, "unexpected character %s", describe(&P->t, d, sizeof d));
    else
        perr(P, KF_ERR_PARSE, &P->t, "expected %s, found %s", what, describe(&P->t, d, sizeof d));
    return false;
}

/* The builder's kept error, positioned at t. */
static bool builder_error(parser *P, const ptok *t)
{
    perr(P, kf_graph_status(P->g), t, "%s", kf_graph_error(P->g));
    return false;
}

static bool oom(parser *P, const ptok *t)
{
    perr(P, KF_ERR_NO_MEMORY, t, "out of memory");
    return false;
}

static bool expect_punct(parser *P, char c)
{
    if (!is_punct(&P->t, c)) {
        char what[8] = { '\'', c, '\'', 0 };
        return expected(P, what);
    }
    advance(P);
    return true;
}

/* NUL-terminated copy of a token in the scratch buffer (valid until the
 * next call). */
static const char *tokstr(parser *P, const ptok *t)
{
    if (t->n + 1 > P->bufcap) {
        size_t ncap = t->n + 64;
        char *nb = realloc(P->buf, ncap);
        if (!nb) {
            oom(P, t);
            return NULL;
        }
        P->buf = nb;
        P->bufcap = ncap;
    }
    memcpy(P->buf, t->s, t->n);
    P->buf[t->n] = 0;
    return P->buf;
}

/* -- Numbers --------------------------------------------------------------------- */

/* Decode a TK_NUM token into *out; false (error kept) when malformed. */
static bool decode_number(parser *P, const ptok *t, plit *out)
{
    char d[200];
    *out = (plit){ .suffix = -1 };
    size_t n = t->n;
    const char *colon = memchr(t->s, ':', n);
    if (colon) {
        size_t sn = n - (size_t)(colon + 1 - t->s);
        int dt = kf_ir_dtype_from_name(colon + 1, sn);
        if (dt < 0) {
            perr(P, KF_ERR_PARSE, t, "unknown dtype suffix in literal %s", describe(t, d, sizeof d));
            return false;
        }
        out->suffix = dt;
        n = (size_t)(colon - t->s);
    }
    const char *s = t->s;
    if (*s == '-' || *s == '+') {
        out->neg = *s == '-';
        s++;
        n--;
    }
    if (n == 3 && (memcmp(s, "inf", 3) == 0 || memcmp(s, "nan", 3) == 0)) {
        out->isfloat = true;
        out->f = s[0] == 'i' ? INFINITY : NAN;
        if (out->neg)
            out->f = -out->f;
        return true;
    }
    char buf[128];
    if (n >= sizeof buf) {
        perr(P, KF_ERR_PARSE, t, "number %s is too long", describe(t, d, sizeof d));
        return false;
    }
    memcpy(buf, s, n);
    buf[n] = 0;
    char *end;
    errno = 0;
    unsigned long long u = strtoull(buf, &end, 0);
    if (n > 0 && *end == 0 && is_digit(buf[0])) {
        if (errno == ERANGE) {
            perr(P, KF_ERR_PARSE, t, "integer literal %s is too large", describe(t, d, sizeof d));
            return false;
        }
        out->mag = u;
        return true;
    }
    bool hex = n > 1 && buf[0] == '0' && (buf[1] | 0x20) == 'x';
    bool floaty = strchr(buf, '.') || strpbrk(buf, hex ? "pP" : "eE");
    errno = 0;
    double f = strtod(buf, &end);
    if (n == 0 || *end != 0 || !floaty) {
        perr(P, KF_ERR_PARSE, t, "invalid number %s", describe(t, d, sizeof d));
        return false;
    }
    if (errno == ERANGE && isinf(f)) {
        perr(P, KF_ERR_PARSE, t, "float literal %s is out of range", describe(t, d, sizeof d));
        return false;
    }
    out->isfloat = true;
    out->f = out->neg ? -f : f;
    return true;
}

/* An integer (no suffix, no float spelling) in [lo, hi]; 'what' names it
 * in messages. */
static bool parse_int(parser *P, const char *what, int64_t lo, int64_t hi, int64_t *v)
{
    plit l;
    char d[200];
    if (P->t.kind != TK_NUM)
        return expected(P, what);
    if (!decode_number(P, &P->t, &l))
        return false;
    if (l.isfloat || l.suffix >= 0) {
        perr(P, KF_ERR_PARSE, &P->t, "expected %s, found %s", what, describe(&P->t, d, sizeof d));
        return false;
    }
    bool ok = l.neg ? l.mag <= (uint64_t)INT64_MAX + 1 : l.mag <= (uint64_t)INT64_MAX;
    if (ok) {
        int64_t x = !l.neg ? (int64_t)l.mag : l.mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)l.mag;
        ok = x >= lo && x <= hi;
        *v = x;
    }
    if (!ok) {
        perr(P, KF_ERR_PARSE, &P->t, "%s is out of range for %s", describe(&P->t, d, sizeof d), what);
        return false;
    }
    advance(P);
    return true;
}

/* The literal node for l as dtype t; false (error at tok) when the value
 * does not fit. */
static kf_node make_lit(parser *P, const plit *l, kf_dtype t, const ptok *tok)
{
    kf_graph *g = P->g;
    kf_node n;
    if (l->isbool)
        n = kf_lit_u(g, t, l->mag);
    else if (l->isfloat)
        n = kf_lit_f(g, t, l->f);
    else if (!l->neg)
        n = kf_lit_u(g, t, l->mag);
    else if (kf_dt_is_float(t))
        n = kf_lit_f(g, t, -(double)l->mag); /* "-0" stays negative zero */
    else if (l->mag <= (uint64_t)INT64_MAX + 1)
        n = kf_lit_i(g, t, l->mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)l->mag);
    else {
        kf_ir_fail(g, KF_ERR_TYPE, KF_NONE, "literal -%llu is out of range for %s", (unsigned long long)l->mag,
                   kf_dtype_name(t));
        n = KF_NONE;
    }
    if (n == KF_NONE)
        builder_error(P, tok);
    return n;
}

/* -- Types ----------------------------------------------------------------------- */

/* DTYPE or DTYPE "[" dims "]".  Symbols are interned in the current graph,
 * so dims[i].sym stays valid as long as it. */
static bool parse_type(parser *P, int *dtype, int *rank, kf_dim *dims, bool *array)
{
    int t = P->t.kind == TK_NAME ? kf_ir_dtype_from_name(P->t.s, P->t.n) : -1;
    if (t < 0)
        return expected(P, "a dtype");
    *dtype = t;
    *rank = 0;
    *array = false;
    advance(P);
    if (!is_punct(&P->t, '['))
        return true;
    *array = true;
    advance(P);
    if (is_punct(&P->t, ']')) {
        advance(P);
        return true;
    }
    for (;;) {
        if (*rank == KF_MAX_RANK) {
            perr(P, KF_ERR_SHAPE, &P->t, "more than %d dimensions", KF_MAX_RANK);
            return false;
        }
        if (P->t.kind == TK_NUM) {
            int64_t v;
            if (!parse_int(P, "a dimension size", 0, INT64_MAX, &v))
                return false;
            dims[(*rank)++] = KF_DIM(v);
        } else if (P->t.kind == TK_NAME && kf_ir_is_ident(P->t.s, P->t.n)) {
            int s = kf_ir_symbol(P->g, P->t.s, P->t.n);
            if (s < 0)
                return builder_error(P, &P->t);
            dims[(*rank)++] = KF_SYM(P->g->syms[s]);
            advance(P);
        } else {
            return expected(P, "a dimension (an integer or a symbol)");
        }
        if (is_punct(&P->t, ']')) {
            advance(P);
            return true;
        }
        if (!is_punct(&P->t, ','))
            return expected(P, "',' or ']'");
        advance(P);
    }
}

/* -- Expressions ------------------------------------------------------------------- */

static bool is_reduce_name(const frame *f) { return f->red != KF_OP_COUNT; }

/* Open a frame for the op at the current token. */
static bool push_frame(parser *P)
{
    char d[200];
    if (P->t.kind != TK_NAME)
        return expected(P, "an op");
    if (P->nstack == P->capstack) {
        size_t ncap = P->capstack ? P->capstack * 2 : 16;
        frame *ns = realloc(P->stack, ncap * sizeof *ns);
        if (!ns)
            return oom(P, &P->t);
        P->stack = ns;
        P->capstack = ncap;
    }
    frame *f = &P->stack[P->nstack];
    memset(f, 0, sizeof *f);
    f->op = P->t;
    f->ew = f->red = KF_OP_COUNT;
    for (int op = 0; op < KF_OP_COUNT; op++) {
        const kf_opinfo *oi = &kf_ir_ops[op];
        if ((oi->flags & KF_OPF_NOTEXT) || strlen(oi->name) != P->t.n || memcmp(oi->name, P->t.s, P->t.n) != 0)
            continue;
        if (oi->kind == KF_KIND_REDUCE)
            f->red = op;
        else
            f->ew = op;
    }
    if (f->ew == KF_OP_COUNT && f->red == KF_OP_COUNT) {
        perr(P, KF_ERR_PARSE, &P->t, "unknown op %s", describe(&P->t, d, sizeof d));
        return false;
    }
    P->nstack++;
    advance(P);
    return true;
}

static const char *frame_name(const frame *f) { return kf_ir_ops[f->ew != KF_OP_COUNT ? f->ew : f->red].name; }

/* Record a positional argument. */
static bool add_arg(parser *P, frame *f, const xarg *a)
{
    if (f->kw) {
        perr(P, KF_ERR_PARSE, &a->tok, "positional argument after keyword arguments");
        return false;
    }
    if (f->npos < 3)
        f->args[f->npos] = *a;
    f->npos++;
    return true;
}

/* NAME "=" value, at the current token. */
static bool parse_kwarg(parser *P, frame *f)
{
    char d[200];
    ptok key = P->t;
    const char *on = frame_name(f);
    bool axes = tok_is(&key, "axes"), keep = tok_is(&key, "keepdims"), axis = tok_is(&key, "axis");
    if (!axes && !keep && !axis) {
        perr(P, KF_ERR_PARSE, &key, "unknown keyword argument %s", describe(&key, d, sizeof d));
        return false;
    }
    if (((axes || keep) && !is_reduce_name(f)) || (axis && f->ew != KF_OP_IOTA)) {
        perr(P, KF_ERR_PARSE, &key, "%s takes no keyword argument %s", on, describe(&key, d, sizeof d));
        return false;
    }
    bool *seen = axes ? &f->has_axes : keep ? &f->has_keep : &f->has_axis;
    if (*seen) {
        perr(P, KF_ERR_PARSE, &key, "keyword argument %s given twice", describe(&key, d, sizeof d));
        return false;
    }
    *seen = true;
    f->kw = true;
    advance(P); /* key */
    advance(P); /* '=' */
    if (keep) {
        if (!tok_is(&P->t, "true") && !tok_is(&P->t, "false"))
            return expected(P, "true or false");
        f->keepdims = tok_is(&P->t, "true");
        advance(P);
        return true;
    }
    if (axis) {
        int64_t v;
        if (!parse_int(P, "an axis", -1000, 1000, &v))
            return false;
        f->axis = (int)v;
        return true;
    }
    ptok open = P->t;
    if (!expect_punct(P, '['))
        return false;
    if (is_punct(&P->t, ']')) {
        perr(P, KF_ERR_SHAPE, &open, "axes=[] reduces nothing (leave axes out to reduce all axes)");
        return false;
    }
    for (;;) {
        if (f->naxes == KF_MAX_RANK) {
            perr(P, KF_ERR_SHAPE, &P->t, "more than %d axes", KF_MAX_RANK);
            return false;
        }
        int64_t v;
        if (!parse_int(P, "an axis", -1000, 1000, &v))
            return false;
        f->axes[f->naxes++] = (int)v;
        if (is_punct(&P->t, ']')) {
            advance(P);
            return true;
        }
        if (!is_punct(&P->t, ','))
            return expected(P, "',' or ']'");
        advance(P);
    }
}

/* One argument that is not a parenthesised call. */
static bool parse_arg(parser *P, frame *f)
{
    char d[200];
    xarg a = { .kind = A_NODE, .tok = P->t };
    ptok nx = peek(P);
    if (P->t.kind == TK_NAME && is_punct(&nx, '='))
        return parse_kwarg(P, f);
    if (f->kw) {
        perr(P, KF_ERR_PARSE, &P->t, "positional argument after keyword arguments");
        return false;
    }
    if (P->t.kind == TK_NAME) {
        int dt = kf_ir_dtype_from_name(P->t.s, P->t.n);
        if (tok_is(&P->t, "true") || tok_is(&P->t, "false")) {
            a.kind = A_LIT;
            a.lit = (plit){ .isbool = true, .suffix = -1, .mag = tok_is(&P->t, "true") };
            advance(P);
        } else if (dt >= 0 && is_punct(&nx, '[')) {
            if (f->ew != KF_OP_IOTA || f->npos != 0) {
                perr(P, KF_ERR_PARSE, &P->t, "unexpected type %s; only iota takes a type argument",
                     describe(&P->t, d, sizeof d));
                return false;
            }
            int t;
            bool array;
            if (!parse_type(P, &t, &f->trank, f->tdims, &array))
                return false;
            a.kind = A_TYPE;
            a.dtype = (uint8_t)t;
        } else if (dt >= 0) {
            if (f->ew == KF_OP_IOTA) {
                perr(P, KF_ERR_PARSE, &P->t, "iota: expected an array type such as f32[n], found %s",
                     describe(&P->t, d, sizeof d));
                return false;
            }
            if (f->ew != KF_OP_CAST || f->npos != 1) {
                perr(P, KF_ERR_PARSE, &P->t, "unexpected dtype %s; only cast takes a dtype argument",
                     describe(&P->t, d, sizeof d));
                return false;
            }
            a.kind = A_DTYPE;
            a.dtype = (uint8_t)dt;
            advance(P);
        } else {
            a.node = kf_ir_lookup(P->g, P->t.s, P->t.n);
            if (a.node == KF_NONE) {
                perr(P, KF_ERR_NAME, &P->t, "undefined name %s", describe(&P->t, d, sizeof d));
                return false;
            }
            advance(P);
        }
    } else if (P->t.kind == TK_NUM) {
        a.kind = A_LIT;
        if (!decode_number(P, &P->t, &a.lit))
            return false;
        advance(P);
    } else {
        return expected(P, "an argument");
    }
    return add_arg(P, f, &a);
}

/* The dtype a literal at argument i takes from its siblings, or -1.  The
 * printer (print.c, lit_context) mirrors this rule exactly. */
static int lit_context(const kf_graph *g, kf_op op, const xarg *args, int nargs, int i)
{
    const kf_opinfo *oi = &kf_ir_ops[op];
    if (oi->rule == T_SELECT) {
        if (i == 0)
            return KF_BOOL;
        int j = 3 - i;
        return args[j].kind == A_NODE ? g->nodes[args[j].node].dtype : -1;
    }
    if (oi->rule == T_TAKE)
        return i == 1 ? KF_I64 : -1;
    if (oi->kind != KF_KIND_EW || oi->rule == T_CAST)
        return -1;
    for (int j = 0; j < nargs; j++)
        if (args[j].kind == A_NODE)
            return g->nodes[args[j].node].dtype;
    return -1;
}

/* Build the node for a complete frame. */
static kf_node finish(parser *P, frame *f)
{
    char d[200];
    kf_graph *g = P->g;
    int op;
    if (f->ew != KF_OP_COUNT && f->red != KF_OP_COUNT) {
        if (f->npos != 1 && f->npos != 2) {
            perr(P, KF_ERR_PARSE, &f->op, "%s takes 1 argument (reduction) or 2 (elementwise), got %d",
                 frame_name(f), f->npos);
            return KF_NONE;
        }
        op = f->npos == 1 ? f->red : f->ew;
        if (op == f->ew && (f->has_axes || f->has_keep)) {
            perr(P, KF_ERR_PARSE, &f->op, "%s with 2 arguments is elementwise and takes no %s", frame_name(f),
                 f->has_axes ? "axes" : "keepdims");
            return KF_NONE;
        }
    } else {
        op = f->ew != KF_OP_COUNT ? f->ew : f->red;
    }
    const kf_opinfo *oi = &kf_ir_ops[op];
    int want = op == KF_OP_CAST ? 2 : op == KF_OP_IOTA ? 1 : oi->arity;
    if (f->npos != want) {
        perr(P, KF_ERR_PARSE, &f->op, "%s takes %d argument%s, got %d", oi->name, want, want == 1 ? "" : "s",
             f->npos);
        return KF_NONE;
    }
    if (op == KF_OP_CAST && f->args[1].kind != A_DTYPE) {
        perr(P, KF_ERR_PARSE, &f->args[1].tok, "cast: expected a dtype, found %s", describe(&f->args[1].tok, d, sizeof d));
        return KF_NONE;
    }
    if (op == KF_OP_IOTA && f->args[0].kind != A_TYPE) {
        perr(P, KF_ERR_PARSE, &f->args[0].tok, "iota: expected a type such as f32[n], found %s",
             describe(&f->args[0].tok, d, sizeof d));
        return KF_NONE;
    }
    int nvals = op == KF_OP_CAST ? 1 : op == KF_OP_IOTA ? 0 : f->npos;
    kf_node v[3];
    for (int i = 0; i < nvals; i++) {
        xarg *a = &f->args[i];
        if (a->kind == A_NODE) {
            v[i] = a->node;
            continue;
        }
        int t = a->lit.isbool ? KF_BOOL : a->lit.suffix;
        if (t < 0)
            t = lit_context(g, (kf_op)op, f->args, nvals, i);
        if (t < 0)
            t = a->lit.isfloat ? KF_F64 : KF_I64;
        v[i] = make_lit(P, &a->lit, (kf_dtype)t, &a->tok);
        if (v[i] == KF_NONE)
            return KF_NONE;
    }
    kf_node n;
    if (op == KF_OP_CAST) {
        n = kf_cast(g, v[0], (kf_dtype)f->args[1].dtype);
    } else if (op == KF_OP_IOTA) {
        int axis = f->axis;
        if (f->trank >= 1 && (axis < -f->trank || axis >= f->trank)) {
            perr(P, KF_ERR_SHAPE, &f->op, "iota: axis %d out of range for rank %d", axis, f->trank);
            return KF_NONE;
        }
        n = kf_iota(g, (kf_dtype)f->args[0].dtype, f->trank, f->tdims, axis);
    } else if (op == KF_OP_TAKE) {
        n = kf_take(g, v[0], v[1]);
    } else if (oi->kind == KF_KIND_REDUCE) {
        n = kf_reduce(g, (kf_op)op, v[0], f->naxes, f->axes, f->keepdims);
    } else {
        n = kf_apply(g, (kf_op)op, f->npos, v);
    }
    if (n == KF_NONE)
        builder_error(P, &f->op);
    return n;
}

/* expr := OP arg {"," arg} {"," NAME "=" value}, up to the end of the line
 * (not consumed).  Each "(" opens a frame on P->stack; each ")" builds the
 * frame's node and hands it to the enclosing frame as an argument. */
static kf_node parse_expr(parser *P)
{
    P->nstack = 0;
    if (!push_frame(P))
        return KF_NONE;
    for (;;) {
        frame *f = &P->stack[P->nstack - 1];
        if (is_punct(&P->t, '(')) {
            if (f->kw) {
                perr(P, KF_ERR_PARSE, &P->t, "positional argument after keyword arguments");
                return KF_NONE;
            }
            if (P->nstack > P->lim.max_depth) {
                perr(P, KF_ERR_LIMIT, &P->t, "nesting deeper than %u levels", (unsigned)P->lim.max_depth);
                return KF_NONE;
            }
            advance(P);
            if (!push_frame(P))
                return KF_NONE;
            continue;
        }
        if (!parse_arg(P, f))
            return KF_NONE;
        /* After an argument: another one, or the end of one or more frames. */
        for (;;) {
            f = &P->stack[P->nstack - 1];
            if (is_punct(&P->t, ',')) {
                advance(P);
                break;
            }
            bool nested = P->nstack > 1;
            if (nested ? !is_punct(&P->t, ')') : !at_eol(&P->t)) {
                expected(P, nested ? "',' or ')'" : "',' or end of line");
                return KF_NONE;
            }
            kf_node n = finish(P, f);
            if (n == KF_NONE || !nested)
                return n;
            xarg a = { .kind = A_NODE, .node = n, .tok = f->op };
            P->nstack--;
            advance(P); /* ')' */
            if (!add_arg(P, &P->stack[P->nstack - 1], &a))
                return KF_NONE;
        }
    }
}

/* -- Graphs -------------------------------------------------------------------------- */

/* Graph names already in the module, hashed: a file of many graphs stays
 * linear. */
static uint64_t name_hash(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

static bool graph_seen(const parser *P, const ptok *name)
{
    if (!P->gcap)
        return false;
    for (size_t i = name_hash(name->s, name->n) & (P->gcap - 1);; i = (i + 1) & (P->gcap - 1)) {
        if (!P->gslots[i])
            return false;
        const char *gn = P->m->graphs[P->gslots[i] - 1]->name;
        if (strlen(gn) == name->n && memcmp(gn, name->s, name->n) == 0)
            return true;
    }
}

static void graph_names_put(parser *P, int idx)
{
    const char *gn = P->m->graphs[idx]->name;
    size_t i = name_hash(gn, strlen(gn)) & (P->gcap - 1);
    while (P->gslots[i])
        i = (i + 1) & (P->gcap - 1);
    P->gslots[i] = idx + 1;
}

/* Room for one more name (load at most one half). */
static bool graph_names_grow(parser *P)
{
    if (((size_t)P->m->ngraphs + 1) * 2 <= P->gcap)
        return true;
    size_t ncap = P->gcap ? P->gcap * 2 : 16;
    int32_t *ns = calloc(ncap, sizeof *ns);
    if (!ns)
        return false;
    free(P->gslots);
    P->gslots = ns;
    P->gcap = ncap;
    for (int i = 0; i < P->m->ngraphs; i++)
        graph_names_put(P, i);
    return true;
}

/* stmt := NAME "=" expr, then the end of the line. */
static bool parse_stmt(parser *P)
{
    ptok name = P->t;
    if (name.kind != TK_NAME)
        return expected(P, "a statement (name = op args) or '}'");
    advance(P);
    if (!expect_punct(P, '='))
        return false;
    kf_node n = parse_expr(P);
    if (n == KF_NONE)
        return false;
    const char *s = tokstr(P, &name);
    if (!s)
        return false;
    if (kf_set_name(P->g, n, s) != KF_OK)
        return builder_error(P, &name);
    if (P->t.kind == TK_NL)
        advance(P);
    return true;
}

static bool parse_param(parser *P)
{
    ptok name = P->t;
    if (name.kind != TK_NAME)
        return expected(P, "a parameter name");
    advance(P);
    if (!expect_punct(P, ':'))
        return false;
    int t, rank;
    bool array;
    kf_dim dims[KF_MAX_RANK];
    if (!parse_type(P, &t, &rank, dims, &array))
        return false;
    const char *s = tokstr(P, &name);
    if (!s)
        return false;
    kf_node n = array ? kf_input(P->g, s, (kf_dtype)t, rank, dims) : kf_scalar(P->g, s, (kf_dtype)t);
    return n != KF_NONE || builder_error(P, &name);
}

/* graph := "graph" NAME "(" params ")" "->" "(" names ")" "{" stmts "}",
 * at the "graph" keyword. */
static bool parse_graph(parser *P)
{
    char d[200];
    advance(P); /* graph */
    ptok name = P->t;
    if (name.kind != TK_NAME || !kf_ir_is_ident(name.s, name.n))
        return expected(P, "a graph name");
    if (graph_seen(P, &name)) {
        perr(P, KF_ERR_NAME, &name, "duplicate graph %s", describe(&name, d, sizeof d));
        return false;
    }
    const char *s = tokstr(P, &name);
    if (!s)
        return false;
    if (!(P->g = kf_graph_new(s)))
        return oom(P, &name);
    P->g->max_nodes = P->lim.max_nodes;
    if (kf_graph_status(P->g) != KF_OK)
        return builder_error(P, &name);
    advance(P);
    if (!expect_punct(P, '('))
        return false;
    if (is_punct(&P->t, ')')) {
        advance(P);
    } else {
        for (;;) {
            if (!parse_param(P))
                return false;
            if (is_punct(&P->t, ')')) {
                advance(P);
                break;
            }
            if (!is_punct(&P->t, ','))
                return expected(P, "',' or ')'");
            advance(P);
        }
    }
    if (P->t.kind != TK_ARROW)
        return expected(P, "'->'");
    advance(P);
    if (!expect_punct(P, '('))
        return false;
    P->nouts = 0;
    /* "-> ()" is read so that the verifier can say "no outputs". */
    if (is_punct(&P->t, ')')) {
        advance(P);
    } else {
        for (;;) {
            if (P->t.kind != TK_NAME)
                return expected(P, "an output name");
            if (P->nouts == P->capouts) {
                size_t ncap = P->capouts ? P->capouts * 2 : 8;
                ptok *no = realloc(P->outs, ncap * sizeof *no);
                if (!no)
                    return oom(P, &P->t);
                P->outs = no;
                P->capouts = ncap;
            }
            P->outs[P->nouts++] = P->t;
            advance(P);
            if (is_punct(&P->t, ')')) {
                advance(P);
                break;
            }
            if (!is_punct(&P->t, ','))
                return expected(P, "',' or ')'");
            advance(P);
        }
    }
    if (!expect_punct(P, '{'))
        return false;
    for (;;) {
        while (P->t.kind == TK_NL)
            advance(P);
        if (is_punct(&P->t, '}'))
            break;
        if (P->t.kind == TK_EOF || (tok_is(&P->t, "graph") && peek(P).kind == TK_NAME))
            return expected(P, "'}'");
        if (!parse_stmt(P))
            return false;
    }
    ptok close = P->t;
    for (size_t i = 0; i < P->nouts; i++) {
        const ptok *o = &P->outs[i];
        kf_node n = kf_ir_lookup(P->g, o->s, o->n);
        if (n == KF_NONE) {
            perr(P, KF_ERR_NAME, o, "undefined output %s", describe(o, d, sizeof d));
            return false;
        }
        if (kf_output(P->g, n, NULL) != KF_OK)
            return builder_error(P, o);
    }
    if (kf_graph_verify(P->g) != KF_OK)
        return builder_error(P, &close);
    advance(P);
    if (!at_eol(&P->t))
        return expected(P, "end of line after '}'");
    if (!graph_names_grow(P) || !module_append(P->m, P->g))
        return oom(P, &close);
    graph_names_put(P, P->m->ngraphs - 1);
    P->g = NULL;
    return true;
}

/* file := "kfuse" INT { graph } */
static void parse_file(parser *P)
{
    advance(P);
    while (P->t.kind == TK_NL)
        advance(P);
    if (!tok_is(&P->t, "kfuse")) {
        expected(P, "the version line 'kfuse 1'");
        return;
    }
    advance(P);
    ptok vt = P->t;
    int64_t v;
    if (!parse_int(P, "a version number", 0, INT64_MAX, &v))
        return;
    if (v != 1) {
        perr(P, KF_ERR_UNSUPPORTED, &vt, "unsupported kfuse version %lld (this build reads 1)", (long long)v);
        return;
    }
    if (!at_eol(&P->t)) {
        expected(P, "end of line after the version");
        return;
    }
    for (;;) {
        while (P->t.kind == TK_NL)
            advance(P);
        if (P->t.kind == TK_EOF)
            return;
        if (!tok_is(&P->t, "graph")) {
            expected(P, "'graph'");
            return;
        }
        if (!parse_graph(P))
            return;
    }
}

/* -- Entry points ------------------------------------------------------------------------ */

static kf_limits limits_or_default(const kf_limits *opts)
{
    kf_limits l = opts ? *opts : (kf_limits){ 0 };
    if (!l.max_depth)
        l.max_depth = 256;
    if (!l.max_nodes)
        l.max_nodes = 1u << 20;
    if (!l.max_bytes)
        l.max_bytes = (size_t)256 << 20;
    return l;
}

kf_status kf_module_parse(const char *text, size_t len, const char *filename, const kf_limits *opts, kf_module **out)
{
    if (!out)
        return KF_ERR_INVALID_ARG;
    kf_module *m = calloc(1, sizeof *m);
    *out = m;
    if (!m)
        return KF_ERR_NO_MEMORY;
    const char *file = filename ? filename : "<input>";
    kf_limits lim = limits_or_default(opts);
    if (!text && len > 0) {
        module_fail(m, KF_ERR_INVALID_ARG, "%s: error: text is NULL", file);
        return m->status;
    }
    if (len > lim.max_bytes) {
        module_fail(m, KF_ERR_LIMIT, "%s:1:1: error: input is %zu bytes, over the limit of %zu", file, len,
                    lim.max_bytes);
        return m->status;
    }
    parser P = { .L = { .src = text ? text : "", .len = len, .line = 1 }, .file = file, .lim = lim, .m = m };
    parse_file(&P);
    kf_graph_free(P.g);
    free(P.stack);
    free(P.outs);
    free(P.buf);
    free(P.gslots);
    return m->status;
}

kf_status kf_module_parse_file(const char *path, const kf_limits *opts, kf_module **out)
{
    if (!out)
        return KF_ERR_INVALID_ARG;
    *out = NULL;
    if (!path) {
        kf_module *m = calloc(1, sizeof *m);
        *out = m;
        if (!m)
            return KF_ERR_NO_MEMORY;
        module_fail(m, KF_ERR_INVALID_ARG, "error: path is NULL");
        return m->status;
    }
    kf_limits lim = limits_or_default(opts);
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t len = 0, cap = 0;
    int err = 0;
    bool toolong = false;
    if (!f) {
        err = errno;
    } else {
        for (;;) {
            if (len == cap) {
                size_t ncap = cap ? cap * 2 : 65536;
                char *nb = realloc(buf, ncap);
                if (!nb) {
                    err = ENOMEM;
                    break;
                }
                buf = nb;
                cap = ncap;
            }
            size_t got = fread(buf + len, 1, cap - len, f);
            len += got;
            if (len > lim.max_bytes) {
                toolong = true;
                break;
            }
            if (got == 0) {
                if (ferror(f))
                    err = errno ? errno : EIO;
                break;
            }
        }
        fclose(f);
    }
    if (err || toolong) {
        free(buf);
        kf_module *m = calloc(1, sizeof *m);
        *out = m;
        if (!m)
            return KF_ERR_NO_MEMORY;
        if (toolong)
            module_fail(m, KF_ERR_LIMIT, "%s:1:1: error: input is over the limit of %zu bytes", path, lim.max_bytes);
        else
            module_fail(m, KF_ERR_IO, "%s: error: cannot read: %s", path, strerror(err));
        return m->status;
    }
    kf_status s = kf_module_parse(buf, len, path, opts, out);
    free(buf);
    return s;
}
