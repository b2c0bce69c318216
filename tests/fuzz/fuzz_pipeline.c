/* libFuzzer target for what kf_compile does short of a compiler: every
 * graph that parses fuses or fails with a message; a plan emits CUDA C,
 * OpenCL C for a GPU and OpenCL C for a CPU device, the same bytes twice,
 * or fails only for a limit, with a message; and for small symbol values
 * drawn from the input, every kernel's launch facts and meta block work
 * out, and every launch the rule or a forced variant makes names an entry
 * point that the module for that device holds.  Inputs of odd length fuse
 * and emit with fast math.  A broken promise traps (allowed here, in the
 * harness only). */
#include "codegen.h"
#include "ir.h"
#include "plan.h"
#include "strbuf.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { CUDA, CL_GPU, CL_CPU, NTARGETS };

static bool emit(const kf_plan *p, int t, bool fast, kf_strbuf *out)
{
    kf_cg_caps caps = { .fp64 = true, .fp16 = true, .gpu = t != CL_CPU, .fast_math = fast };
    caps.nan_minmax = caps.ptx = caps.gpu;
    kf_target target = t == CUDA ? KF_TARGET_CUDA : KF_TARGET_OPENCL;
    kf_strbuf again = KF_STRBUF_INIT;
    char err[512] = "", err2[512] = "";
    kf_status s = kf_cg_emit(p, target, &caps, out, err, sizeof err);
    kf_status s2 = kf_cg_emit(p, target, &caps, &again, err2, sizeof err2);
    if (s != s2 || (s != KF_OK && s != KF_ERR_LIMIT && s != KF_ERR_NO_MEMORY) || (s != KF_OK && !err[0]))
        __builtin_trap();
    if (s == KF_OK && (out->len != again.len || memcmp(kf_sb_str(out), kf_sb_str(&again), out->len) != 0))
        __builtin_trap();
    kf_sb_free(&again);
    return s == KF_OK;
}

/* Every launch in l names an entry point of src. */
static void check_launches(const kf_cg_launches *l, const char *src)
{
    if (l->n < 0 || l->n > 2)
        __builtin_trap();
    for (int i = 0; i < l->n; i++) {
        char sig[KF_CG_NAME_MAX + 2];
        snprintf(sig, sizeof sig, "%s(", l->l[i].entry);
        if (!l->l[i].entry[0] || l->l[i].grid == 0 || l->l[i].block != KF_CG_BLOCK || !strstr(src, sig))
            __builtin_trap();
    }
}

static void check_kernels(const kf_plan *p, const kf_strbuf *src, const bool *emitted, const uint8_t *data,
                          size_t size)
{
    const kf_graph *g = p->g;
    int64_t *sym = calloc((size_t)g->nsyms + 1, sizeof *sym);
    kf_cg_kabi *a = malloc(sizeof *a);
    for (int i = 0; sym && i < g->nsyms; i++)   /* 0 to 9, from the input's last bytes */
        sym[i] = size > (size_t)i ? data[size - 1 - (size_t)i] % 10 : 3;
    for (int k = 0; sym && a && k < p->nkernels; k++) {
        char err[512] = "";
        kf_status s = kf_cg_kernel_abi(p, k, false, a, err, sizeof err);
        if (s != KF_OK) {
            if ((s != KF_ERR_LIMIT && s != KF_ERR_NO_MEMORY) || !err[0])
                __builtin_trap();
            continue;
        }
        int64_t *meta = calloc((size_t)a->meta_count + 1, sizeof *meta);
        if (!meta)
            break;
        if (kf_cg_fill_meta(a, p, sym, NULL, meta, err, sizeof err) != KF_OK)
            __builtin_trap();   /* no negative symbol here */
        for (int t = 0; t < NTARGETS; t++) {
            if (!emitted[t])
                continue;
            bool gpu = t != CL_CPU;
            kf_cg_launches l;
            kf_cg_launch_rule(a, meta, NULL, gpu ? 132 : 2, gpu, 0, 0, &l);
            check_launches(&l, kf_sb_str(&src[t]));
            for (int v = 0; v < KF_CG_VARIANT_COUNT; v++) {
                kf_cg_launch_variant(a, meta, (kf_cg_variant)v, gpu ? 132 : 2, gpu, 0, &l);
                check_launches(&l, kf_sb_str(&src[t]));
            }
        }
        free(meta);
    }
    free(a);
    free(sym);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    kf_limits lim = { .max_depth = 64, .max_nodes = 512, .max_bytes = 1 << 14 };
    kf_module *m = NULL;
    if (kf_module_parse((const char *)data, size, "fuzz.kir", &lim, &m) != KF_OK) {
        kf_module_free(m);
        return 0;
    }
    kf_fuse_options fo = { .fast_math = size & 1 };
    for (int i = 0; i < kf_module_num_graphs(m); i++) {
        kf_pipeline p = { 0 };
        kf_status s = kf_fuse(kf_module_graph(m, i), &fo, NULL, &p);
        if (s != KF_OK) {
            if (!p.err[0])
                __builtin_trap();
            kf_pipeline_clear(&p);
            continue;
        }
        kf_strbuf src[NTARGETS] = { KF_STRBUF_INIT, KF_STRBUF_INIT, KF_STRBUF_INIT };
        bool emitted[NTARGETS];
        for (int t = 0; t < NTARGETS; t++)
            emitted[t] = emit(p.plan, t, fo.fast_math, &src[t]);
        check_kernels(p.plan, src, emitted, data, size);
        for (int t = 0; t < NTARGETS; t++)
            kf_sb_free(&src[t]);
        kf_pipeline_clear(&p);
    }
    kf_module_free(m);
    return 0;
}
