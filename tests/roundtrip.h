/* The print/parse round trip that every valid .kir must survive, shared by
 * test_golden, test_parse and the fuzzer: printing a module and parsing the
 * text again gives the same graphs node for node, the same hashes, and the
 * same text when printed again. */
#ifndef KF_TEST_ROUNDTRIP_H
#define KF_TEST_ROUNDTRIP_H

#include "ir.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The module as kf_module_print writes it; NULL on failure. */
static inline char *kf_test_module_text(const kf_module *m, size_t *len)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    if (!f)
        return NULL;
    kf_status s = kf_module_print(m, f);
    if (fclose(f) != 0 || s != KF_OK) {
        free(buf);
        return NULL;
    }
    if (len)
        *len = n;
    return buf;
}

static inline bool kf_test_fail_why(char *why, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, n, fmt, ap);
    va_end(ap);
    return false;
}

/* Same graph node for node (names aside); false with a reason otherwise. */
static inline bool kf_test_same_graph(const kf_graph *a, const kf_graph *b, char *why, size_t n)
{
    if (strcmp(a->name, b->name) != 0)
        return kf_test_fail_why(why, n, "graph name %s vs %s", a->name, b->name);
    if (a->nnodes != b->nnodes || a->ninputs != b->ninputs || a->noutputs != b->noutputs)
        return kf_test_fail_why(why, n, "graph %s: %d/%d/%d nodes/inputs/outputs vs %d/%d/%d", a->name, a->nnodes,
                                a->ninputs, a->noutputs, b->nnodes, b->ninputs, b->noutputs);
    for (int32_t i = 0; i < a->ninputs; i++)
        if (a->inputs[i] != b->inputs[i])
            return kf_test_fail_why(why, n, "graph %s: input %d differs", a->name, i);
    for (int32_t i = 0; i < a->noutputs; i++)
        if (a->outputs[i] != b->outputs[i])
            return kf_test_fail_why(why, n, "graph %s: output %d differs", a->name, i);
    for (int32_t i = 0; i < a->nnodes; i++) {
        const kf_irnode *x = &a->nodes[i], *y = &b->nodes[i];
        bool same = x->op == y->op && x->dtype == y->dtype && x->rank == y->rank && x->nargs == y->nargs &&
                    x->axes == y->axes && x->keepdims == y->keepdims && x->axis == y->axis &&
                    x->scalar == y->scalar && x->param == y->param &&
                    memcmp(x->args, y->args, sizeof x->args) == 0;
        if (same && x->op == KF_OP_CONST)
            same = memcmp(&x->lit, &y->lit, sizeof x->lit) == 0;
        for (int d = 0; same && d < x->rank; d++) {
            int64_t p = x->dims[d], q = y->dims[d];
            same = p >= 0 ? p == q : q < 0 && strcmp(a->syms[KF_IR_SYM_INDEX(p)], b->syms[KF_IR_SYM_INDEX(q)]) == 0;
        }
        if (!same)
            return kf_test_fail_why(why, n, "graph %s: node %d (%s) differs", a->name, i, kf_ir_ops[x->op].name);
    }
    return true;
}

/* Print m, parse the text, compare graphs and hashes, print again and
 * compare the text. */
static inline bool kf_test_roundtrip(const kf_module *m, char *why, size_t n)
{
    size_t len1 = 0, len2 = 0;
    char *t1 = kf_test_module_text(m, &len1);
    if (!t1)
        return kf_test_fail_why(why, n, "print failed");
    kf_module *m2 = NULL;
    bool ok = true;
    if (kf_module_parse(t1, len1, "<printed>", NULL, &m2) != KF_OK) {
        ok = kf_test_fail_why(why, n, "printed text does not parse: %s\n%s", m2 ? kf_module_error(m2) : "oom", t1);
    } else if (kf_module_num_graphs(m2) != kf_module_num_graphs(m)) {
        ok = kf_test_fail_why(why, n, "%d graphs, reparsed %d", kf_module_num_graphs(m), kf_module_num_graphs(m2));
    } else {
        for (int i = 0; ok && i < kf_module_num_graphs(m); i++) {
            const kf_graph *a = kf_module_graph(m, i), *b = kf_module_graph(m2, i);
            kf_hash ha, hb;
            if (kf_graph_hash(a, &ha) != KF_OK || kf_graph_hash(b, &hb) != KF_OK)
                ok = kf_test_fail_why(why, n, "graph %s: hash failed", a->name);
            else if (ha.lo != hb.lo || ha.hi != hb.hi)
                ok = kf_test_fail_why(why, n, "graph %s: hash differs after the round trip", a->name);
            else
                ok = kf_test_same_graph(a, b, why, n);
        }
        char *t2 = ok ? kf_test_module_text(m2, &len2) : NULL;
        if (ok && (!t2 || len1 != len2 || memcmp(t1, t2, len1) != 0))
            ok = kf_test_fail_why(why, n, "second print differs:\n%s\n---\n%s", t1, t2 ? t2 : "(failed)");
        free(t2);
    }
    kf_module_free(m2);
    free(t1);
    return ok;
}

#endif
