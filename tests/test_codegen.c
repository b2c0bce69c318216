/* Code generation: for a corpus of graphs (tests/codegen/corpus.kir),
 * graphs that together hold every op at every dtype it accepts (8 ops
 * each), and random graphs from randgraph: fuse, emit CUDA C and OpenCL C
 * (twice: identical bytes), compile with NVRTC (the corpus and the first
 * random graphs as cubin sm_80 and sm_90 and PTX compute_90, the per-dtype
 * graphs sm_80 and compute_90, the other random graphs sm_80; the cubins
 * with -DKF_ONE_PASS, as the runtime builds them, the PTX without) and on
 * the OpenCL device, and run on the OpenCL device against the reference
 * interpreter: every variant, several grid sizes and layouts must give the
 * same bits and leave every byte of an output's buffer that no element
 * owns (layout gaps, slack past the end) as poisoned, and the corpus also
 * built with -DKF_ONE_PASS and launched as on a GPU (covering grids,
 * docs/codegen.md "One pass").  The x5 sources
 * are golden files (KFUSE_GOLDEN_UPDATE=1 rewrites them).
 * Environment: KF_TEST_CG_RANDOM (random graphs, 300), KF_TEST_CG_RUN (of
 * them run on the device, 50), KF_TEST_CG_LIGHT=1 (less work: the sanitizer
 * build), KF_TEST_CG_NVRTC=0 / KF_TEST_CG_OPENCL=0 (skip a part),
 * KF_TEST_CG_NVPROCS (NVRTC worker processes, 1), KF_TEST_CG_DUMP=NAME
 * (print a case's graph, plan and sources), KF_TEST_CG_DUMPDIR=DIR (write
 * every case's sources), KF_TEST_CG_TIMES=1 (time per case run),
 * KF_TEST_CG_GROUP (cases to an OpenCL program, 16). */
#include "check.h"
#include "codegen.h"
#include "half.h"
#include "randgraph.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if KFUSE_WITH_CUDA
#include <nvrtc.h>
#endif
#if KFUSE_WITH_OPENCL
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#endif

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s)
        s[n] = 0;
    fclose(f);
    if (len)
        *len = (size_t)n;
    return s;
}

static bool write_file(const char *path, const char *s)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return false;
    bool ok = fwrite(s, 1, strlen(s), f) == strlen(s);
    return fclose(f) == 0 && ok;
}

/* Source lines around 'line' (1-based), numbered, to stderr. */
static void show_lines(const char *src, long line, long ctx)
{
    long ln = 1;
    const char *p = src;
    while (*p) {
        const char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (ln >= line - ctx && ln <= line + ctx)
            fprintf(stderr, "%s%6ld | %.*s\n", ln == line ? ">" : " ", ln, (int)n, p);
        if (!e)
            break;
        p = e + 1;
        ln++;
    }
}

/* For every "<tag>LINE" in a compiler log (e.g. "k.cu(" or "<source>:"),
 * the source lines around it (at most 4 places). */
static void show_log_lines(const char *src, const char *log, const char *tag)
{
    int shown = 0;
    for (const char *p = strstr(log, tag); p && shown < 4; p = strstr(p + 1, tag)) {
        long line = strtol(p + strlen(tag), NULL, 10);
        if (line > 0) {
            fprintf(stderr, "---- around line %ld:\n", line);
            show_lines(src, line, 6);
            shown++;
        }
    }
}

/* -- Cases --------------------------------------------------------------------------------- */

typedef struct tcase {
    char name[64];
    kf_graph *g;          /* owned */
    kf_pipeline pl;
    bool fused;
    bool exact;           /* device results must equal the interpreter's bits */
    bool run;             /* run on the OpenCL device */
    bool specials;        /* inputs include inf, NaN, extremes */
    bool uses_f16, uses_f64;
    char *cuda, *ocl;     /* emitted with every capability */
} tcase;

enum { MAX_CASES = 1024 };
static tcase cases[MAX_CASES];
static int ncases;

static bool plan_uses(const kf_plan *p, kf_dtype t)
{
    for (int k = 0; k < p->nkernels; k++) {
        const kf_kernel *kk = &p->kernels[k];
        const int32_t *lists[4] = { kk->nodes, kk->args, kk->outs, kk->scalars };
        int counts[4] = { kk->nnodes, kk->nargs, kk->nouts, kk->nscalars };
        for (int l = 0; l < 4; l++)
            for (int i = 0; i < counts[l]; i++) {
                const kf_irnode *x = &p->g->nodes[lists[l][i]];
                if (x->dtype == t)
                    return true;
                for (int a = 0; a < x->nargs; a++)
                    if (p->g->nodes[x->args[a]].dtype == t)
                        return true;
            }
    }
    return false;
}

static tcase *add_case(const char *name, kf_graph *g, bool exact, bool run, bool specials)
{
    if (!g || ncases >= MAX_CASES) {
        CHECK_MSG(g != NULL, "case %s: no graph", name);
        kf_graph_free(g);
        return NULL;
    }
    tcase *c = &cases[ncases++];
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", name);
    c->g = g;
    c->exact = exact;
    c->run = run;
    c->specials = specials;
    kf_status s = kf_fuse(g, NULL, NULL, &c->pl);
    CHECK_MSG(s == KF_OK, "%s: kf_fuse: %s: %s", name, kf_status_string(s), c->pl.err);
    c->fused = s == KF_OK;
    if (c->fused) {
        c->uses_f16 = plan_uses(c->pl.plan, KF_F16);
        c->uses_f64 = plan_uses(c->pl.plan, KF_F64);
    }
    return c;
}

static void free_cases(void)
{
    for (int i = 0; i < ncases; i++) {
        kf_pipeline_clear(&cases[i].pl);
        kf_graph_free(cases[i].g);
        free(cases[i].cuda);
        free(cases[i].ocl);
    }
    ncases = 0;
}

/* Part 'part' of the graphs that together hold every op accepting dtype t:
 * each elementwise op (one output each), casts to every dtype, iota, take
 * with several index dtypes, and the reductions; ITEMS outputs per graph
 * keep kernels of a realistic size.  NULL past the last part. */
enum { ITEMS = 8 };

static kf_graph *ops_graph(kf_dtype t, bool exact, int part)
{
    char nm[32];
    snprintf(nm, sizeof nm, "ops_%s_%d", kf_dtype_name(t), part);
    kf_graph *g = kf_graph_new(nm);
    kf_dim n = KF_SYM("n"), mn[2] = { KF_SYM("m"), KF_SYM("n") }, L = KF_SYM("k");
    kf_node a = kf_input(g, "a", t, 1, &n), b = kf_input(g, "b", t, 1, &n), c = kf_input(g, "c", t, 1, &n);
    kf_node cond = kf_input(g, "cond", KF_BOOL, 1, &n);
    kf_node z = kf_input(g, "z", t, 2, mn);
    kf_node v = kf_input(g, "v", t, 1, &L);
    int item = 0, no = 0;
    char on[32];
    /* the item's output when it belongs to this part */
#define ITEM(expr)                                          \
    do {                                                    \
        if (item++ / ITEMS == part) {                       \
            snprintf(on, sizeof on, "o%d", no++);           \
            kf_output(g, (expr), on);                       \
        }                                                   \
    } while (0)
    for (int op = 0; op < KF_OP_COUNT; op++) {
        const kf_opinfo *oi = kf_ir_op((kf_op)op);
        if (oi->kind != KF_KIND_EW || op == KF_OP_CAST)
            continue;
        kf_rule r = (kf_rule)oi->rule;
        bool ok = r == T_CMP || r == T_SELECT || (r == T_NUM && t != KF_BOOL) || (r == T_FLOAT && kf_dt_is_float(t)) ||
                  (r == T_FPRED && kf_dt_is_float(t)) || (r == T_BITS && (t == KF_BOOL || kf_dt_is_int(t))) ||
                  (r == T_INT && kf_dt_is_int(t));
        if (!ok)
            continue;
        kf_node args[3] = { op == KF_OP_SELECT ? cond : a, b, c };
        ITEM(kf_apply(g, (kf_op)op, oi->arity, args));
    }
    for (int u = 0; u < KF_DTYPE_COUNT; u++)
        if (u != (int)t)
            ITEM(kf_cast(g, a, (kf_dtype)u));
    if (t != KF_BOOL)
        ITEM(kf_iota(g, t, 2, mn, 1));
    static const kf_dtype its[] = { KF_I8, KF_U16, KF_I32, KF_U64 };
    for (int i = 0; i < 4; i++) {
        char in[16];
        snprintf(in, sizeof in, "ix%d", i);
        kf_node ix = kf_input(g, in, its[i], 1, &n);
        ITEM(kf_take(g, v, ix));
    }
    if (t != KF_BOOL) {
        int ax = 1;
        item = (item + ITEMS - 1) / ITEMS * ITEMS;   /* the reductions: a part of their own */
        for (int op = KF_OP_SUM; op <= KF_OP_ARGMAX; op++) {
            if (op == KF_OP_MEAN && !kf_dt_is_float(t))
                continue;
            if (exact && kf_dt_is_float(t) && (op == KF_OP_SUM || op == KF_OP_PROD || op == KF_OP_MEAN))
                continue;
            if (item / ITEMS == part) {
                snprintf(on, sizeof on, "o%d", no++);
                kf_output(g, kf_reduce(g, (kf_op)op, z, 1, &ax, false), on);
            }
        }
    }
#undef ITEM
    if (no == 0) {
        kf_graph_free(g);
        return NULL;
    }
    return g;
}

/* -- Emission checks ------------------------------------------------------------------------- */

static char *emit(const tcase *c, kf_target t, const kf_cg_caps *caps, kf_status want, const char *want_msg)
{
    kf_strbuf o = KF_STRBUF_INIT;
    char err[512] = "";
    kf_status s = kf_cg_emit(c->pl.plan, t, caps, &o, err, sizeof err);
    CHECK_MSG(s == want, "%s: emit %s: %s (%s), want %s", c->name, kf_cg_target_name(t), kf_status_string(s), err,
              kf_status_string(want));
    if (want_msg)
        CHECK_MSG(strstr(err, want_msg) != NULL, "%s: '%s' does not name %s", c->name, err, want_msg);
    if (s != KF_OK) {
        kf_sb_free(&o);
        return NULL;
    }
    return kf_sb_take(&o);
}

/* Emit both targets twice (same bytes), check the entry names and the
 * OpenCL capability rule against the device's caps. */
static void emit_case(tcase *c, const kf_cg_caps *devcaps)
{
    if (!c->fused)
        return;
    /* CUDA as for sm_80 and later (every NVRTC target below is one);
     * OpenCL without inline PTX (PoCL runs it) but the device's fence */
    kf_cg_caps sm80 = { .fp64 = true, .fp16 = true, .nan_minmax = true, .gpu = true, .ptx = true },
               all = { .fp64 = true, .fp16 = true, .gpu = true, .ptx = devcaps && devcaps->ptx };
    c->cuda = emit(c, KF_TARGET_CUDA, &sm80, KF_OK, NULL);
    c->ocl = emit(c, KF_TARGET_OPENCL, &all, KF_OK, NULL);
    char *again = emit(c, KF_TARGET_CUDA, &sm80, KF_OK, NULL);
    CHECK_MSG(c->cuda && again && strcmp(c->cuda, again) == 0, "%s: CUDA source differs between two emits", c->name);
    free(again);
    again = emit(c, KF_TARGET_OPENCL, &all, KF_OK, NULL);
    CHECK_MSG(c->ocl && again && strcmp(c->ocl, again) == 0, "%s: OpenCL source differs between two emits", c->name);
    free(again);
    if (devcaps) {
        bool need16 = c->uses_f16 && !devcaps->fp16, need64 = c->uses_f64 && !devcaps->fp64;
        kf_status want = need16 || need64 ? KF_ERR_UNSUPPORTED : KF_OK;
        again = emit(c, KF_TARGET_OPENCL, devcaps, want, need16 ? "cl_khr_fp16" : need64 ? "cl_khr_fp64" : NULL);
        if (again)
            CHECK_MSG(strcmp(c->ocl, again) == 0, "%s: OpenCL source depends on caps", c->name);
        free(again);
    }
    const kf_plan *p = c->pl.plan;
    for (int k = 0; k < p->nkernels && c->cuda && c->ocl; k++) {
        kf_cg_kabi *a = malloc(sizeof *a);
        char err[256];
        kf_status s = kf_cg_kernel_abi(p, k, false, a, err, sizeof err);
        CHECK_MSG(s == KF_OK, "%s: kernel %d abi: %s", c->name, k, err);
        for (int v = 0; s == KF_OK && v < KF_CG_VARIANT_COUNT; v++) {
            char nm[KF_CG_NAME_MAX + 2];
            kf_cg_entry_name(a, (kf_cg_variant)v, nm, KF_CG_NAME_MAX);
            bool mine = (a->kind == KF_KERNEL_EW) == (v <= KF_CG_B1) && !(v == KF_CG_C32 && !a->has_c32) &&
                        !(v == KF_CG_S32 && !a->has_s32) && !(v == KF_CG_B64 && !a->has_b64) &&
                        !(v == KF_CG_G64 && !a->has_g64) && !(v == KF_CG_H64 && !a->has_h64) &&
                        !(v == KF_CG_B1 && !a->has_b1);
            CHECK_MSG(mine == (nm[0] != 0), "%s: kernel %d: entry name of variant %d", c->name, k, v);
            if (!mine)
                continue;
            strcat(nm, "(");
            if (v == KF_CG_COMB)   /* a GPU's tile combines its partials itself (test_runtime runs comb) */
                CHECK_MSG(!strstr(c->cuda, nm) && !strstr(c->ocl, nm), "%s: entry %s in a GPU's code", c->name, nm);
            else
                CHECK_MSG(strstr(c->cuda, nm) && strstr(c->ocl, nm), "%s: entry %s missing", c->name, nm);
        }
        CHECK_MSG(s != KF_OK || a->param_bytes <= 4096, "%s: kernel %d has %zu parameter bytes", c->name, k,
                  a->param_bytes);
        free(a);
    }
    /* fast_math changes the code of a graph with an op it approximates only */
    if (!kf_rg_fast_math_op(c->pl.plan->g) && c->cuda && c->ocl) {
        sm80.fast_math = all.fast_math = true;
        again = emit(c, KF_TARGET_CUDA, &sm80, KF_OK, NULL);
        CHECK_MSG(again && strcmp(c->cuda, again) == 0, "%s: fast_math changed CUDA code it has nothing to do in",
                  c->name);
        free(again);
        again = emit(c, KF_TARGET_OPENCL, &all, KF_OK, NULL);
        CHECK_MSG(again && strcmp(c->ocl, again) == 0, "%s: fast_math changed OpenCL code it has nothing to do in",
                  c->name);
        free(again);
    }
    /* sin and cos of one operand share one sincos call on both dialects */
    if (strncmp(c->name, "sincos", 6) == 0 && c->cuda && c->ocl)
        CHECK_MSG(strstr(c->cuda, "sincos") && !strstr(c->cuda, "= sinf(") && !strstr(c->cuda, "= cosf(") &&
                      !strstr(c->cuda, "= sin(") && !strstr(c->cuda, "= cos(") && strstr(c->ocl, "= sincos(") &&
                      !strstr(c->ocl, "= sin(") && !strstr(c->ocl, "= cos("),
                  "%s: sin and cos of one operand are not one sincos call", c->name);
    /* CUDA: f32 sin, cos, tan and sincos with their long path out of line */
    if (strcmp(c->name, "trighuge") == 0 && c->cuda && c->ocl) {
        static const char *const want[] = { "= kf_sinf(", "= kf_cosf(", "= kf_tanf(", "kf_sincosf(v", "kf_sinf_far(",
                                            "!(fabsf(x) >= 105615.0f)" };
        for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
            CHECK_MSG(strstr(c->cuda, want[i]) != NULL, "%s: no '%s' in CUDA", c->name, want[i]);
        CHECK_MSG(!strstr(c->cuda, "= sinf(") && !strstr(c->cuda, "= tanf(") && !strstr(c->ocl, "kf_sinf"),
                  "%s: a direct f32 trigonometric call in CUDA, or a wrapper in OpenCL", c->name);
    }
}

/* -- NVRTC ------------------------------------------------------------------------------------------ *
 * Compiles run in two child processes (NVRTC serialises threads of one
 * process) while the OpenCL part runs; each child writes its results to a
 * temporary file, read and checked after it exits. */

#if KFUSE_WITH_CUDA
#include <sys/wait.h>
#include <unistd.h>

typedef struct nvjob {
    char *src;            /* owned */
    char what[128];
    const char *opt;      /* --gpu-architecture=... */
    bool ptx;
    int worker;
    int r;                /* nvrtcResult; -1 when no result came back */
    bool warned, empty;
    bool s16;             /* the PTX reads a neg.s16 or abs.s16 result as signed (ptx_s16) */
    char *log;            /* owned, kept on failure or warning */
} nvjob;

enum { NV_WORKERS_MAX = 4 };
static int NV_WORKERS = 1;   /* with the OpenCL part on the main thread: two busy processes on two cores */
static nvjob *nvjobs;
static int nnvjobs;
static pid_t nvpid[NV_WORKERS_MAX];
static FILE *nvout[NV_WORKERS_MAX];

static void nv_add(const char *src, const char *what, const char *opt, bool ptx)
{
    nvjob *j = realloc(nvjobs, (size_t)(nnvjobs + 1) * sizeof *j);
    if (!j)
        return;
    nvjobs = j;
    j = &nvjobs[nnvjobs++];
    memset(j, 0, sizeof *j);
    j->src = strdup(src);
    snprintf(j->what, sizeof j->what, "%s", what);
    j->opt = opt;
    j->ptx = ptx;
    j->r = -1;
}

/* Whether PTX reads the result of a neg.s16 or abs.s16, directly or through
 * mov or selp, in a signed 16-bit instruction other than add, sub, mul.lo,
 * mad.lo and the bitwise ones: a compare, a widening, a shift right, a division,
 * min or max.  ptxas lowers neg.s16 and abs.s16 on the sign-extended
 * register and hands the result to those unnarrowed (docs/codegen.md:
 * emit.c keeps i16 arithmetic 32-bit so that LLVM makes neither); unsigned
 * and 8-bit readers narrow first (SASS: LOP3 0xffff, PRMT). */
static bool ptx_s16(const char *ptx)
{
    enum { MAXT = 64 };
    char taint[MAXT][16];
    int nt = 0;
    for (const char *l = ptx; *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l)) {
        char op[32] = "", d[16] = "", rest[256] = "";
        if (sscanf(l, " %31s %15[^,;]%255[^\n]", op, d, rest) < 2 || op[0] == '/')
            continue;
        if (op[0] == '.') {   /* a directive; register names are per function */
            if (!strcmp(op, ".visible") || !strcmp(op, ".weak") || !strcmp(op, ".entry") || !strcmp(op, ".func"))
                nt = 0;
            continue;
        }
        if (strncmp(op, "neg.s16", 7) == 0 || strncmp(op, "abs.s16", 7) == 0) {
            if (nt < MAXT)
                snprintf(taint[nt++], sizeof taint[0], "%s", d);
            continue;
        }
        bool reads = false;
        for (int i = 0; i < nt && !reads; i++) {
            const char *p = rest;
            size_t n = strlen(taint[i]);
            while ((p = strstr(p, taint[i])) && (p[n] == '_' || (p[n] >= '0' && p[n] <= '9')))
                p += n;   /* %rs1 is not %rs12 */
            reads = p != NULL;
        }
        if (!reads)
            continue;
        if (strncmp(op, "mov.", 4) == 0 || strncmp(op, "selp.", 5) == 0) {
            if (nt < MAXT)
                snprintf(taint[nt++], sizeof taint[0], "%s", d);
        } else if (strncmp(op, "cvt.", 4) == 0 ? strcmp(strrchr(op, '.'), ".s16") == 0   /* from s16 */
                                                : strstr(op, ".s16") && strncmp(op, "add.", 4) &&
                                                      strncmp(op, "sub.", 4) && strncmp(op, "mul.lo.", 7) &&
                                                      strncmp(op, "mad.lo.", 7)) {
            return true;
        }
    }
    return false;
}

static void nv_run(nvjob *j)
{
    nvrtcProgram prog;
    nvrtcResult r = nvrtcCreateProgram(&prog, j->src, "kfuse.cu", 0, NULL, NULL);
    j->r = (int)r;
    if (r != NVRTC_SUCCESS)
        return;
    const char *opts[2] = { j->opt, "-DKF_ONE_PASS" };   /* cubins as the runtime builds them */
    r = nvrtcCompileProgram(prog, j->ptx ? 1 : 2, opts);
    j->r = (int)r;
    size_t ls = 0;
    nvrtcGetProgramLogSize(prog, &ls);
    char *log = malloc(ls + 1);
    if (log) {
        log[0] = 0;
        nvrtcGetProgramLog(prog, log);
        j->warned = strstr(log, "warning") != NULL;
        if (r != NVRTC_SUCCESS || j->warned)
            j->log = log;
        else
            free(log);
    }
    if (r == NVRTC_SUCCESS) {
        size_t n = 0;
        if (j->ptx)
            nvrtcGetPTXSize(prog, &n);
        else
            nvrtcGetCUBINSize(prog, &n);
        j->empty = n == 0;
        char *ptx = j->ptx && n ? malloc(n) : NULL;
        if (ptx && nvrtcGetPTX(prog, ptx) == NVRTC_SUCCESS)
            j->s16 = ptx_s16(ptx);
        free(ptx);
    }
    nvrtcDestroyProgram(&prog);
}

/* Record of one job in a worker's file: index, result, flags, log. */
static void nv_put(FILE *f, int i, const nvjob *j)
{
    int v[5] = { i, j->r, j->warned, j->empty, j->s16 };
    size_t ll = j->log ? strlen(j->log) : 0;
    fwrite(v, sizeof v, 1, f);
    fwrite(&ll, sizeof ll, 1, f);
    if (ll)
        fwrite(j->log, 1, ll, f);
}

/* Start the workers: jobs go to the least loaded (by source bytes). */
static void nv_start(void)
{
    size_t load[NV_WORKERS_MAX] = { 0 };
    for (int i = 0; i < nnvjobs; i++) {
        int w = 0;
        for (int k = 1; k < NV_WORKERS; k++)
            if (load[k] < load[w])
                w = k;
        nvjobs[i].worker = w;
        load[w] += nvjobs[i].src ? strlen(nvjobs[i].src) : 0;
    }
    fflush(stdout);
    fflush(stderr);
    for (int w = 0; w < NV_WORKERS; w++) {
        nvout[w] = tmpfile();
        nvpid[w] = nvout[w] ? fork() : -1;
        if (nvpid[w] == 0) {
            for (int i = 0; i < nnvjobs; i++)
                if (nvjobs[i].worker == w) {
                    nv_run(&nvjobs[i]);
                    nv_put(nvout[w], i, &nvjobs[i]);
                }
            fflush(nvout[w]);
            _exit(0);
        }
        if (nvpid[w] < 0) { /* no process: compile here */
            for (int i = 0; i < nnvjobs; i++)
                if (nvjobs[i].worker == w)
                    nv_run(&nvjobs[i]);
        }
    }
}

/* Wait for the workers and collect their records. */
static void nv_wait(void)
{
    for (int w = 0; w < NV_WORKERS; w++) {
        if (nvpid[w] > 0) {
            int st = 0;
            waitpid(nvpid[w], &st, 0);
            CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "NVRTC worker %d died (status %d)", w, st);
            rewind(nvout[w]);
            int v[5];
            size_t ll;
            while (fread(v, sizeof v, 1, nvout[w]) == 1 && fread(&ll, sizeof ll, 1, nvout[w]) == 1) {
                if (v[0] < 0 || v[0] >= nnvjobs)
                    break;
                nvjob *j = &nvjobs[v[0]];
                j->r = v[1];
                j->warned = v[2];
                j->empty = v[3];
                j->s16 = v[4];
                if (ll) {
                    j->log = malloc(ll + 1);
                    if (j->log && fread(j->log, 1, ll, nvout[w]) == ll)
                        j->log[ll] = 0;
                }
            }
        }
        if (nvout[w])
            fclose(nvout[w]);
    }
}

/* Report every job: failures and warnings (generated code is warning-free)
 * print the log and the source around each error. */
static void nv_report(void)
{
    for (int i = 0; i < nnvjobs; i++) {
        nvjob *j = &nvjobs[i];
        CHECK_MSG(j->r == NVRTC_SUCCESS && !j->warned && !j->empty, "NVRTC %s (%s): %s%s%s", j->what, j->opt,
                  j->r < 0 ? "no result" : nvrtcGetErrorString((nvrtcResult)j->r), j->warned ? ", with warnings" : "",
                  j->empty ? ", empty output" : "");
        /* ptxas compares and widens their sign-extended result unnarrowed (docs/codegen.md) */
        CHECK_MSG(!j->s16, "NVRTC %s (%s): the PTX reads a neg.s16 or abs.s16 result as signed", j->what, j->opt);
        if (j->log && j->src) {
            fprintf(stderr, "%s\n", j->log);
            show_log_lines(j->src, j->log, "kfuse.cu(");
        }
        free(j->src);
        free(j->log);
    }
    free(nvjobs);
    nvjobs = NULL;
    nnvjobs = 0;
}

/* Jobs for cases [from, to) concatenated in batches of about 'bytes' (the
 * modules are made to share one compilation unit), for each option. */
static void nv_batches(int from, int to, size_t bytes, const char *const *opts, int nopts)
{
    kf_strbuf b = KF_STRBUF_INIT;
    int first = from;
    for (int i = from; i < to; i++) {
        if (cases[i].cuda)
            kf_sb_puts(&b, cases[i].cuda);
        if (b.len && (i == to - 1 || b.len >= bytes)) {
            char what[128];
            snprintf(what, sizeof what, "cases %.56s..%.56s", cases[first].name, cases[i].name);
            for (int o = 0; o < nopts; o++)
                nv_add(kf_sb_str(&b), what, opts[o], strstr(opts[o], "compute_") != NULL);
            kf_sb_reset(&b);
            first = i + 1;
        }
    }
    kf_sb_free(&b);
}
#endif

/* -- OpenCL device ----------------------------------------------------------------------------------- */

#if KFUSE_WITH_OPENCL
typedef struct cldev {
    bool ok;
    cl_device_id d;
    cl_context ctx;
    cl_command_queue q;
    kf_cg_caps caps;
    int cu;
    char opts[128];
    char name[128];
} cldev;

static cldev D;
static double ocl_build_seconds, ocl_run_seconds;
static int b64_launches;   /* forced b64 runs that fit: the corpus must reach it */
static int pair_launches;  /* ... of them b64 with no outer dims (kf_cg_kinfo.pair) */
static int b1_launches;    /* forced b1 runs that fit */
static int g64_launches;   /* forced g64 runs (kernels with a direct take) */
static int h64_launches;   /* forced h64 runs (where c64 would run) */

static bool has_ext(const char *exts, const char *e)
{
    size_t n = strlen(e);
    for (const char *p = strstr(exts, e); p; p = strstr(p + 1, e))
        if ((p == exts || p[-1] == ' ') && (p[n] == ' ' || p[n] == 0))
            return true;
    return false;
}

static void cl_open(void)
{
    cl_uint np = 0;
    if (clGetPlatformIDs(0, NULL, &np) != CL_SUCCESS || np == 0)
        return;
    cl_platform_id pls[8];
    clGetPlatformIDs(np < 8 ? np : 8, pls, NULL);
    for (cl_uint i = 0; i < np && i < 8 && !D.ok; i++) {
        cl_uint nd = 0;
        if (clGetDeviceIDs(pls[i], CL_DEVICE_TYPE_ALL, 1, &D.d, &nd) != CL_SUCCESS || nd == 0)
            continue;
        cl_int e;
        D.ctx = clCreateContext(NULL, 1, &D.d, NULL, NULL, &e);
        if (e != CL_SUCCESS)
            continue;
        D.q = clCreateCommandQueue(D.ctx, D.d, 0, &e);
        if (e != CL_SUCCESS) {
            clReleaseContext(D.ctx);
            continue;
        }
        D.ok = true;
    }
    if (!D.ok)
        return;
    char exts[4096] = "";
    clGetDeviceInfo(D.d, CL_DEVICE_EXTENSIONS, sizeof exts - 1, exts, NULL);
    clGetDeviceInfo(D.d, CL_DEVICE_NAME, sizeof D.name - 1, D.name, NULL);
    D.caps.fp64 = has_ext(exts, "cl_khr_fp64");
    D.caps.fp16 = has_ext(exts, "cl_khr_fp16");
    D.caps.gpu = true;   /* the code GPUs get runs here too (test_runtime runs the CPU form) */
    D.caps.ptx = has_ext(exts, "cl_nv_device_attribute_query");   /* NVIDIA's compiler: inline PTX */
    cl_uint cu = 0;
    clGetDeviceInfo(D.d, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cu, &cu, NULL);
    D.cu = (int)cu;
    cl_device_fp_config fc = 0;
    clGetDeviceInfo(D.d, CL_DEVICE_SINGLE_FP_CONFIG, sizeof fc, &fc, NULL);
    snprintf(D.opts, sizeof D.opts, "%s", (fc & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) ? "-cl-fp32-correctly-rounded-divide-sqrt" : "");
    printf("OpenCL device: %s (fp64 %d, fp16 %d, %d compute units, options '%s')\n", D.name, D.caps.fp64,
           D.caps.fp16, D.cu, D.opts);
}

static void cl_close(void)
{
    if (!D.ok)
        return;
    clReleaseCommandQueue(D.q);
    clReleaseContext(D.ctx);
    D.ok = false;
}

/* Build src (one_pass: with -DKF_ONE_PASS); NULL (with the log and the
 * source around errors) on failure. */
static cl_program cl_build(const char *src, const char *what, bool one_pass)
{
    double t0 = now();
    cl_int e;
    cl_program p = clCreateProgramWithSource(D.ctx, 1, &src, NULL, &e);
    CHECK_MSG(e == CL_SUCCESS, "clCreateProgramWithSource %s: %d", what, e);
    if (e != CL_SUCCESS)
        return NULL;
    char opts[sizeof D.opts + 16];
    snprintf(opts, sizeof opts, "%s%s", D.opts, one_pass ? " -DKF_ONE_PASS" : "");
    e = clBuildProgram(p, 1, &D.d, opts, NULL, NULL);
    if (e != CL_SUCCESS) {
        size_t ls = 0;
        clGetProgramBuildInfo(p, D.d, CL_PROGRAM_BUILD_LOG, 0, NULL, &ls);
        char *log = malloc(ls + 1);
        if (log) {
            log[0] = 0;
            clGetProgramBuildInfo(p, D.d, CL_PROGRAM_BUILD_LOG, ls, log, NULL);
            log[ls] = 0;
            fprintf(stderr, "%s\n", log);
            show_log_lines(src, log, "<source>:");
        }
        free(log);
        CHECK_MSG(e == CL_SUCCESS, "clBuildProgram %s: %d", what, e);
        clReleaseProgram(p);
        p = NULL;
    }
    ocl_build_seconds += now() - t0;
    return p;
}


/* -- Running a plan on the device ---------------------------------------------------------------------- */

/* A node's array on the device with its layout (own strides, offset). */
typedef struct dbuf {
    cl_mem mem;
    int rank;
    int64_t shape[KF_MAX_RANK];
    int64_t numel;
    size_t esz;
    kf_cg_array lay;
} dbuf;

typedef struct runopt {
    int layout;               /* 0 contiguous, 1 padded (stride x2, offset 1), 2 last dim reversed */
    uint32_t grid;            /* 0: the launch rule's */
    int force;                /* -1, or a variant to use where legal */
    bool one_pass;            /* the KF_ONE_PASS build, launched as on a GPU (grid must be 0) */
} runopt;

static int64_t numel_of(int rank, const int64_t *shape)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= shape[i];
    return n;
}

/* Layout of an array of the given shape under layout mode m; returns the
 * element span the buffer needs. */
static int64_t make_layout(int m, int rank, const int64_t *shape, kf_cg_array *lay)
{
    int64_t c = 1;
    memset(lay, 0, sizeof *lay);
    for (int j = rank - 1; j >= 0; j--) {
        lay->strides[j] = c * (m == 1 ? 2 : 1);
        c *= shape[j];
    }
    int64_t span = (m == 1 ? 2 * c : c) + 2;
    if (m == 1)
        lay->offset = 1;
    if (m == 2 && rank > 0 && shape[rank - 1] > 0) {
        lay->offset = (shape[rank - 1] - 1) * lay->strides[rank - 1];
        lay->strides[rank - 1] = -lay->strides[rank - 1];
    }
    return span;
}

/* Element offset of row-major element e under lay. */
static int64_t elem_at(int rank, const int64_t *shape, const kf_cg_array *lay, int64_t e)
{
    int64_t o = lay->offset;
    for (int j = rank - 1; j >= 0; j--) {
        int64_t i = shape[j] ? e % shape[j] : 0;
        e = shape[j] ? e / shape[j] : 0;
        o += i * lay->strides[j];
    }
    return o;
}

static bool dbuf_create(dbuf *b, int layout, int rank, const int64_t *shape, size_t esz, const void *data)
{
    b->rank = rank;
    memcpy(b->shape, shape, (size_t)rank * sizeof *shape);
    b->numel = numel_of(rank, shape);
    b->esz = esz;
    int64_t span = make_layout(layout, rank, shape, &b->lay);
    size_t bytes = (size_t)span * esz + 16;
    unsigned char *host = malloc(bytes);
    if (!host)
        return false;
    memset(host, 0xFF, bytes);   /* poison: NaN, -1, not a bool; dbuf_read checks the bytes no element owns */
    if (data)
        for (int64_t e = 0; e < b->numel; e++)
            memcpy(host + (size_t)elem_at(rank, shape, &b->lay, e) * esz, (const unsigned char *)data + (size_t)e * esz,
                   esz);
    cl_int err;
    b->mem = clCreateBuffer(D.ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, host, &err);
    free(host);
    return err == CL_SUCCESS;
}

/* An output's elements in row-major order; NULL (after a CHECK failure
 * naming what) when a byte that no element owns (a layout's gaps, the
 * slack past its span) is no longer the poison dbuf_create wrote. */
static void *dbuf_read(const dbuf *b, const char *what)
{
    size_t bytes = 0;
    clGetMemObjectInfo(b->mem, CL_MEM_SIZE, sizeof bytes, &bytes, NULL);
    unsigned char *host = malloc(bytes), *own = calloc(1, bytes ? bytes : 1);
    unsigned char *out = malloc((size_t)(b->numel > 0 ? b->numel : 1) * b->esz);
    bool ok = host && own && out && clEnqueueReadBuffer(D.q, b->mem, CL_TRUE, 0, bytes, host, 0, NULL, NULL) == CL_SUCCESS;
    for (int64_t e = 0; ok && e < b->numel; e++) {
        size_t at = (size_t)elem_at(b->rank, b->shape, &b->lay, e) * b->esz;
        memcpy(out + (size_t)e * b->esz, host + at, b->esz);
        memset(own + at, 1, b->esz);
    }
    size_t k = 0;
    while (ok && k < bytes && (own[k] || host[k] == 0xFF))
        k++;
    CHECK_MSG(!ok || k == bytes, "%s: byte %zu of the output's %zu-byte buffer, outside every element, was written",
              what, k, bytes);
    ok = ok && k == bytes;
    free(host);
    free(own);
    if (!ok)
        free(out);
    return ok ? out : NULL;
}

/* Variants that may replace the picked one: any with a larger index width,
 * strided for contiguous, h64 for c64, and b64 and b1 where the kernel has
 * them (their launch is empty where the layout does not fit them; the
 * rule's is used then). */
static kf_cg_variant force_variant(const kf_cg_kabi *a, kf_cg_variant picked, int force)
{
    if (force < 0)
        return picked;
    kf_cg_variant f = (kf_cg_variant)force;
    if (a->kind == KF_KERNEL_REDUCE)
        return (f == KF_CG_SEQ || f == KF_CG_TILE || f == KF_CG_WARP || f == KF_CG_WARPV) ? f : picked;
    if (f == KF_CG_B64)
        return a->has_b64 ? f : picked;
    if (f == KF_CG_B1)
        return a->has_b1 ? f : picked;
    if (f == KF_CG_G64)
        return a->has_g64 ? f : picked;
    if (f == KF_CG_H64)   /* where c64 would run */
        return a->has_h64 && picked == KF_CG_C64 ? f : picked;
    if (f > KF_CG_S64)
        return picked;
    bool pc = picked == KF_CG_C32 || picked == KF_CG_C64, p64 = picked == KF_CG_C64 || picked == KF_CG_S64;
    bool fc = f == KF_CG_C32 || f == KF_CG_C64, f64 = f == KF_CG_C64 || f == KF_CG_S64;
    if ((fc && !pc) || (!f64 && p64) || (f == KF_CG_C32 && !a->has_c32) || (f == KF_CG_S32 && !a->has_s32))
        return picked;
    return f;
}

/* Run plan p of case c on inputs; outputs[i] get malloc'd data in the
 * graph's output order.  *index_error tells whether a take flagged;
 * *seq_mask gets bit k when kernel k ran seq (its float sums in another
 * order than tile, comb and warp, which give the same bits). */
static bool cl_run(tcase *c, cl_program prog, const kf_host_array *inputs, const kf_rg_sizes *sz, const runopt *ro,
                   void **outputs, bool *index_error, uint64_t *seq_mask)
{
    bool gpu = ro->one_pass;
    const kf_plan *p = c->pl.plan;
    const kf_graph *g = p->g;
    bool ok = true;
    *index_error = false;
    *seq_mask = 0;
    dbuf *bufs = calloc((size_t)g->nnodes, sizeof *bufs);
    int64_t *symvals = calloc((size_t)g->nsyms + 1, sizeof *symvals);
    kf_cg_kabi *abi = malloc(sizeof *abi);
    cl_int err = CL_SUCCESS;
    cl_mem errbuf = clCreateBuffer(D.ctx, CL_MEM_READ_WRITE, sizeof(cl_int), NULL, &err);
    if (!bufs || !symvals || !abi || err != CL_SUCCESS) {
        CHECK_MSG(false, "%s: out of memory", c->name);
        ok = false;
        goto done;
    }
    for (int s = 0; s < g->nsyms; s++)
        symvals[s] = kf_rg_sym_value(sz, g->syms[s]);
    for (int i = 0; i < g->ninputs; i++) {
        int32_t n = g->inputs[i];
        if (g->nodes[n].scalar)
            continue;
        ok = ok && dbuf_create(&bufs[n], ro->layout, inputs[i].rank, inputs[i].shape, kf_dtype_size(inputs[i].dtype),
                               inputs[i].data);
    }
    for (int k = 0; ok && k < p->nkernels; k++) {
        const kf_kernel *kk = &p->kernels[k];
        char msg[256];
        ok = kf_cg_kernel_abi(p, k, false, abi, msg, sizeof msg) == KF_OK;
        CHECK_MSG(ok, "%s: abi: %s", c->name, msg);
        int nb = kk->nargs + kk->nouts;
        kf_cg_array *arr = calloc((size_t)nb + 1, sizeof *arr);
        int64_t *meta = calloc((size_t)abi->meta_count, sizeof *meta);
        for (int j = 0; ok && j < kk->nouts; j++) {
            int32_t n = kk->outs[j];
            if (bufs[n].mem)
                continue;
            int64_t shape[KF_MAX_RANK];
            const kf_irnode *x = &g->nodes[n];
            for (int d = 0; d < x->rank; d++)
                shape[d] = x->dims[d] >= 0 ? x->dims[d] : symvals[KF_IR_SYM_INDEX(x->dims[d])];
            bool is_out = false;
            for (int i = 0; i < g->noutputs; i++)
                is_out = is_out || g->outputs[i] == n;
            ok = dbuf_create(&bufs[n], is_out && ro->layout == 1 ? 1 : 0, x->rank, shape, kf_dtype_size((kf_dtype)x->dtype),
                             NULL);
        }
        for (int b = 0; ok && b < nb; b++) {
            int32_t n = b < kk->nargs ? kk->args[b] : kk->outs[b - kk->nargs];
            ok = bufs[n].mem != NULL;
            CHECK_MSG(ok, "%s: kernel %d: buffer %d (node %d) does not exist", c->name, k, b, n);
            if (ok)
                arr[b] = bufs[n].lay;
        }
        if (ok)
            ok = kf_cg_fill_meta(abi, p, symvals, arr, meta, msg, sizeof msg) == KF_OK;
        kf_cg_launches L = { 0 };
        /* the programs are a GPU's code: their tile combines its partials
         * itself, so reductions launch as on a GPU */
        bool kgpu = gpu || kk->kind == KF_KERNEL_REDUCE;
        if (ok) {
            kf_cg_launch_rule(abi, meta, NULL, D.cu, kgpu, 0, ro->grid, &L);
            if (L.n > 0) {
                /* legality from kf_cg_pick_variant's choice, before a GPU's
                 * one element per thread for small calls and takes */
                kf_cg_variant f = ro->force < 0 ? L.l[0].variant
                                                : force_variant(abi, kf_cg_pick_variant(abi, meta, NULL), ro->force);
                if (f != L.l[0].variant)   /* the programs are a GPU's code: warp, g64 and h64 are there */
                    kf_cg_launch_variant(abi, meta, f, D.cu, kgpu || f == KF_CG_G64 || f == KF_CG_H64, ro->grid,
                                         &L);
                /* warp where an output has more than one tile, b64 or b1 where the layout does not fit */
                if (L.n == 0)
                    kf_cg_launch_rule(abi, meta, NULL, D.cu, kgpu, 0, ro->grid, &L);
            }
            if (L.n > 0 && L.l[0].variant == KF_CG_SEQ && k < 64)
                *seq_mask |= 1ull << k;
            b64_launches += L.n > 0 && L.l[0].variant == KF_CG_B64;
            b1_launches += L.n > 0 && L.l[0].variant == KF_CG_B1;
            pair_launches += L.n > 0 && L.l[0].variant == KF_CG_B64 && abi->bsplit == 0;
            g64_launches += L.n > 0 && L.l[0].variant == KF_CG_G64;
            h64_launches += L.n > 0 && L.l[0].variant == KF_CG_H64;
        }
        cl_mem scratch = NULL;
        if (ok && L.scratch_bytes) {   /* zeroed, as the runtime's (the GPU tile's counters) */
            scratch = clCreateBuffer(D.ctx, CL_MEM_READ_WRITE, L.scratch_bytes, NULL, &err);
            const cl_uint zero = 0;
            ok = err == CL_SUCCESS &&
                 clEnqueueFillBuffer(D.q, scratch, &zero, sizeof zero, 0, L.scratch_bytes, 0, NULL, NULL) == CL_SUCCESS;
        }
        if (ok && abi->has_err) {
            cl_int zero = 0;
            clEnqueueWriteBuffer(D.q, errbuf, CL_TRUE, 0, sizeof zero, &zero, 0, NULL, NULL);
        }
        for (int l = 0; ok && l < L.n; l++) {
            cl_kernel kern = clCreateKernel(prog, L.l[l].entry, &err);
            ok = err == CL_SUCCESS;
            CHECK_MSG(ok, "%s: clCreateKernel(%s): %d", c->name, L.l[l].entry, err);
            if (!ok)
                break;
            cl_uint ai = 0;
            for (int b = 0; b < nb; b++) {
                int32_t n = b < kk->nargs ? kk->args[b] : kk->outs[b - kk->nargs];
                err |= clSetKernelArg(kern, ai++, sizeof(cl_mem), &bufs[n].mem);
            }
            err |= clSetKernelArg(kern, ai++, (size_t)abi->meta_count * 8, meta);
            for (int i = 0; i < kk->nscalars; i++) {
                int32_t n = kk->scalars[i];
                const kf_host_array *in = &inputs[g->nodes[n].param];
                err |= clSetKernelArg(kern, ai++, kf_dtype_size(in->dtype), in->data);
            }
            if (abi->has_err)
                err |= clSetKernelArg(kern, ai++, sizeof(cl_mem), &errbuf);
            if (abi->has_scratch)
                err |= clSetKernelArg(kern, ai++, sizeof(cl_mem), scratch ? &scratch : NULL);
            CHECK_MSG(err == CL_SUCCESS, "%s: clSetKernelArg %s: %d", c->name, L.l[l].entry, err);
            size_t gsz = (size_t)L.l[l].grid * L.l[l].block, lsz = L.l[l].block;
            err = clEnqueueNDRangeKernel(D.q, kern, 1, NULL, &gsz, &lsz, 0, NULL, NULL);
            CHECK_MSG(err == CL_SUCCESS, "%s: launch %s: %d", c->name, L.l[l].entry, err);
            ok = err == CL_SUCCESS;
            clReleaseKernel(kern);
        }
        if (ok && abi->has_err) {
            cl_int flag = 0;
            clEnqueueReadBuffer(D.q, errbuf, CL_TRUE, 0, sizeof flag, &flag, 0, NULL, NULL);
            if (flag)
                *index_error = true;
        }
        clFinish(D.q);
        if (ok && scratch && kgpu) {   /* every counter back at zero for the next launch */
            uint32_t cnt[KF_CG_COUNTER_BYTES / 4];
            ok = clEnqueueReadBuffer(D.q, scratch, CL_TRUE, 0, sizeof cnt, cnt, 0, NULL, NULL) == CL_SUCCESS;
            for (size_t i = 0; ok && i < sizeof cnt / 4; i++)
                ok = cnt[i] == 0;
            CHECK_MSG(ok, "%s: kernel %d: a chunk counter was not reset", c->name, k);
        }
        if (scratch)
            clReleaseMemObject(scratch);
        free(arr);
        free(meta);
    }
    for (int i = 0; ok && i < g->noutputs; i++) {
        outputs[i] = dbuf_read(&bufs[g->outputs[i]], c->name);
        ok = outputs[i] != NULL;
    }
done:
    if (bufs)
        for (int n = 0; n < g->nnodes; n++)
            if (bufs[n].mem)
                clReleaseMemObject(bufs[n].mem);
    if (errbuf)
        clReleaseMemObject(errbuf);
    free(bufs);
    free(symvals);
    free(abi);
    return ok;
}
#endif

/* -- Comparing results ------------------------------------------------------------------------------------ */

static double to_double(kf_dtype t, const void *p, int64_t i)
{
    switch (t) {
    case KF_F16: return kf_f16_to_f32(((const uint16_t *)p)[i]);
    case KF_BF16: return kf_bf16_to_f32(((const uint16_t *)p)[i]);
    case KF_F32: return ((const float *)p)[i];
    case KF_F64: return ((const double *)p)[i];
    default: return 0;
    }
}

/* Do element e of a (device) and b (reference) agree?  Exact: same bits
 * (any NaN equals any NaN); else within a tolerance for the dtype. */
static bool agree(kf_dtype t, const void *a, const void *b, int64_t e, bool exact)
{
    size_t sz = kf_dtype_size(t);
    if (!kf_dt_is_float(t))
        return memcmp((const char *)a + e * (int64_t)sz, (const char *)b + e * (int64_t)sz, sz) == 0;
    double x = to_double(t, a, e), y = to_double(t, b, e);
    if (isnan(x) || isnan(y))
        return isnan(x) && isnan(y);
    if (exact)
        return memcmp((const char *)a + e * (int64_t)sz, (const char *)b + e * (int64_t)sz, sz) == 0;
    if (x == y)
        return true;
    double rtol = t == KF_F64 ? 1e-9 : t == KF_F32 ? 2e-4 : t == KF_F16 ? 4e-3 : 3e-2;
    double atol = t == KF_F64 ? 1e-9 : t == KF_F32 ? 2e-4 : 2e-3;
    return fabs(x - y) <= atol + rtol * fabs(y);
}

static void show_value(kf_dtype t, const void *p, int64_t e, char *buf, size_t len)
{
    if (kf_dt_is_float(t)) {
        snprintf(buf, len, "%.9g", to_double(t, p, e));
        return;
    }
    uint64_t u = 0;
    memcpy(&u, (const char *)p + e * (int64_t)kf_dtype_size(t), kf_dtype_size(t));
    snprintf(buf, len, "0x%llx", (unsigned long long)u);
}

/* -- Unit tests: strbuf, ABI queries, errors ------------------------------------------------------------- */

static void test_strbuf(void)
{
    kf_strbuf b = KF_STRBUF_INIT;
    CHECK(strcmp(kf_sb_str(&b), "") == 0);
    for (int i = 0; i < 1000; i++)
        kf_sb_printf(&b, "%d,", i);
    kf_sb_printf(&b, "%s", "");
    CHECK(b.len == 3890 && !kf_sb_failed(&b));
    char big[1000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = 0;
    kf_sb_printf(&b, "[%s]", big);
    CHECK(b.len == 3890 + 1001 && b.data[b.len - 1] == ']' && b.data[b.len] == 0);
    kf_strbuf c = KF_STRBUF_INIT;
    kf_sb_append(&c, &b);
    CHECK(c.len == b.len && strcmp(kf_sb_str(&c), kf_sb_str(&b)) == 0);
    char *t = kf_sb_take(&c);
    CHECK(t && strlen(t) == b.len && c.data == NULL && c.len == 0);
    free(t);
    b.oom = true; /* out of memory is sticky: appends do nothing, take gives NULL */
    size_t len = b.len;
    kf_sb_puts(&b, "more");
    CHECK(b.len == len && kf_sb_failed(&b));
    CHECK(kf_sb_take(&b) == NULL && b.data == NULL);
    kf_sb_reset(&b);
    CHECK(!kf_sb_failed(&b));
    t = kf_sb_take(&b);
    CHECK(t && t[0] == 0);
    free(t);
}

/* kf_snprintf and kf_sb_printf must write exactly what snprintf writes:
 * fixed edge cases (the extremes, widths, '0' padding, formats that go to
 * the C library), then random values, widths and buffer sizes. */
static uint64_t fmt_rand(uint64_t *s)
{
    *s += 0x9e3779b97f4a7c15ull;
    uint64_t z = *s;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* One format with an int, a long long, an unsigned long long and a string
 * argument, at buffer sizes 0 to 40 and into a strbuf. */
static void check_format(const char *fmt, int i, long long ll, unsigned long long u, const char *s)
{
    char want[512], got[512];
    int wn = snprintf(want, sizeof want, fmt, i, ll, u, s);
    for (size_t size = 0; size <= 40; size += size < 8 ? 1 : 7) {
        memset(got, 'Z', sizeof got);
        int gn = kf_snprintf(size ? got : NULL, size, fmt, i, ll, u, s);
        char w[512];   /* want cut to size */
        size_t k = size && (size_t)wn >= size ? size - 1 : (size_t)wn;
        memcpy(w, want, k);
        w[k] = 0;
        CHECK_MSG(gn == wn && (size == 0 || strcmp(got, w) == 0) && got[size] == 'Z',
                  "'%s' size %zu: got %d '%.*s', want %d '%s'", fmt, size, gn, (int)(size ? size : 1), got, wn, w);
    }
    kf_strbuf b = KF_STRBUF_INIT;
    kf_sb_puts(&b, "<");
    kf_sb_printf(&b, fmt, i, ll, u, s);
    CHECK_MSG(b.len == (size_t)wn + 1 && strcmp(kf_sb_str(&b) + 1, want) == 0, "'%s' into a strbuf: '%s', want '%s'", fmt,
              kf_sb_str(&b), want);
    kf_sb_free(&b);
}

static void test_format(void)
{
    static const char *const fmts[] = {
        "%d|%lld|%llu|%s", "x%dy%lldz%lluw%s!", "%08d %020lld %1llu %s", "%5d|%-5lld|%+llu|%5s",
        "%x %llx %016llx %.3s", "%%d %d %% %lld %%%llu %s%%", "%i %lli %llx %s", "%31d %031lld %31llu %s",
        "%032d %lld %llu %s", "%.3d %lld %llu %s", "%d %lld %llu %-8s|", "%04x %lld %llu %s",
    };
    static const char *const strs[] = { "", "a", "float", "unsigned long long", "with % sign" };
    const int ints[] = { 0, 1, -1, 9, 10, 255, -255, 2147483647, -2147483647 - 1 };
    const long long lls[] = { 0, -1, 1234567890123ll, -9223372036854775807ll - 1, 9223372036854775807ll };
    const unsigned long long us[] = { 0, 1, 18446744073709551615ull, 4294967296ull };
    for (size_t f = 0; f < sizeof fmts / sizeof fmts[0]; f++)
        for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++)
            check_format(fmts[f], ints[k], lls[k % 5], us[k % 4], strs[k % 5]);
    uint64_t seed = (uint64_t)time(NULL), s = seed;
    char fmt[64];
    for (int r = 0; r < 2000; r++) {
        int w = (int)(fmt_rand(&s) % 40);
        const char *z = fmt_rand(&s) % 2 ? "0" : "";
        snprintf(fmt, sizeof fmt, "[%%%s%dd] [%%%s%dllx] %%llu %%s", z, w, z, w);
        uint64_t v = fmt_rand(&s);
        int sh = (int)(fmt_rand(&s) % 64);
        check_format(fmt, (int)(v >> 32), (long long)(v >> sh), v >> sh, strs[v % 5]);
    }
    /* the other conversions the subset has: %c (a NUL one too), %zu, %ld, %lu */
    char got[64], want[64];
    int gn = kf_snprintf(got, sizeof got, "%c%c|%zu|%ld|%lu|%c", 'a', '%', (size_t)123456, -77l, 88ul, 0);
    int wn = snprintf(want, sizeof want, "%c%c|%zu|%ld|%lu|%c", 'a', '%', (size_t)123456, -77l, 88ul, 0);
    CHECK(gn == wn && memcmp(got, want, (size_t)wn + 1) == 0);
    /* strbuf helpers: putint, putc, puts across growth, insert */
    kf_strbuf b = KF_STRBUF_INIT;
    char ref[16384];   /* 200 rounds of at most 39 bytes */
    size_t rl = 0;
    for (int r = 0; r < 200; r++) {
        long long v = (long long)fmt_rand(&s) >> (fmt_rand(&s) % 64);
        kf_sb_putint(&b, v);
        kf_sb_putc(&b, ',');
        kf_sb_puts(&b, strs[r % 5]);
        rl += (size_t)snprintf(ref + rl, sizeof ref - rl, "%lld,%s", v, strs[r % 5]);
    }
    CHECK_MSG(b.len == rl && strcmp(kf_sb_str(&b), ref) == 0, "putint/putc/puts (seed %llu)", (unsigned long long)seed);
    kf_strbuf head = KF_STRBUF_INIT;
    kf_sb_puts(&head, "head:");
    kf_sb_insert(&b, 0, &head);
    kf_sb_insert(&b, b.len, &head);
    CHECK(b.len == rl + 10 && strncmp(kf_sb_str(&b), "head:", 5) == 0 && strncmp(kf_sb_str(&b) + 5, ref, rl) == 0 &&
          strcmp(kf_sb_str(&b) + 5 + rl, "head:") == 0);
    kf_sb_insert(&b, b.len + 1, &head);   /* past the end: refused as a failure */
    CHECK(kf_sb_failed(&b) && b.len == rl + 10);
    kf_sb_free(&b);
    kf_sb_free(&head);
    if (kf_test_fail)
        fprintf(stderr, "test_format: seed %llu\n", (unsigned long long)seed);
}

static const tcase *find_case(const char *name)
{
    for (int i = 0; i < ncases; i++)
        if (strcmp(cases[i].name, name) == 0 && cases[i].fused)
            return &cases[i];
    CHECK_MSG(false, "no fused case %s", name);
    return NULL;
}

/* The ABI of a few corpus kernels, value by value (docs/codegen.md). */
static void test_abi(void)
{
    kf_cg_kabi *a = malloc(sizeof *a);
    char err[256], nm[KF_CG_NAME_MAX];
    int64_t meta[64];
    kf_cg_launches L;
    const tcase *c = find_case("x5");
    if (a && c) {
        const kf_plan *p = c->pl.plan;
        CHECK_STATUS(kf_cg_kernel_abi(p, 0, false, a, err, sizeof err), KF_OK);
        CHECK(a->kind == KF_KERNEL_EW && a->rank == 1 && a->nargs == 1 && a->nouts == 1 && a->meta_count == 6);
        CHECK(a->vecw == 4 && !a->has_c32 && !a->has_s32 && !a->has_err && !a->has_scratch && a->param_bytes == 64);
        kf_cg_entry_name(a, KF_CG_C32, nm, sizeof nm);
        CHECK(nm[0] == 0);
        kf_cg_entry_name(a, KF_CG_SEQ, nm, sizeof nm);
        CHECK(nm[0] == 0);
        kf_cg_entry_name(a, KF_CG_C64, nm, sizeof nm);
        CHECK(strncmp(nm, "x5_k0_", 6) == 0 && strlen(nm) == 6 + 8 + 4 && strcmp(nm + 14, "_c64") == 0);
        int64_t sym[4] = { 10, 10, 10, 10 };
        CHECK_STATUS(kf_cg_fill_meta(a, p, sym, NULL, meta, err, sizeof err), KF_OK);
        int64_t want[6] = { 10, 10, 1, 1, 0, 0 };
        CHECK(memcmp(meta, want, sizeof want) == 0);
        CHECK(kf_cg_pick_variant(a, meta, NULL) == KF_CG_C64);
        uint64_t addrs[2] = { 0x1000, 0x2004 };
        CHECK(kf_cg_pick_variant(a, meta, addrs) == KF_CG_S64);   /* misaligned output */
        kf_cg_array arr[2] = { { { 2 }, 3 }, { { 1 }, 0 } };
        CHECK_STATUS(kf_cg_fill_meta(a, p, sym, arr, meta, err, sizeof err), KF_OK);
        CHECK(meta[2] == 2 && meta[4] == 3 && kf_cg_pick_variant(a, meta, NULL) == KF_CG_S64);
        kf_cg_launch_rule(a, meta, NULL, 4, false, 0, 0, &L);
        CHECK(L.n == 1 && L.l[0].grid == 1 && L.l[0].block == 256 && L.scratch_bytes == 0);
        meta[0] = meta[1] = 100000000;
        meta[2] = meta[3] = 1;
        meta[4] = 0;
        kf_cg_launch_rule(a, meta, NULL, 4, false, 0, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_C64 && L.l[0].grid == 32 && strcmp(L.l[0].entry, nm) == 0);
        kf_cg_launch_rule(a, meta, NULL, 4, false, 0, 5, &L);
        CHECK(L.l[0].grid == 5);
        /* on a GPU: a block per 256 vectors, no cap */
        kf_cg_launch_rule(a, meta, NULL, 4, true, 0, 0, &L);
        CHECK_MSG(L.n == 1 && L.l[0].variant == KF_CG_C64 && L.l[0].grid == (uint64_t)(100000000 / a->vecw + 255) / 256,
                  "gpu grid %llu (vecw %d)", (unsigned long long)L.l[0].grid, a->vecw);
        /* ... unless the vectors would not give every compute unit a block:
         * then one element per thread (strided), here 132 SMs; x5 has no
         * branches and one array, so no h64 */
        CHECK(!a->branchy && !a->has_h64 && a->streams == 1);
        meta[0] = meta[1] = 4 * 256 * 131;
        kf_cg_launch_rule(a, meta, NULL, 132, true, 0, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_S64 && L.l[0].grid == 4 * 131);
        meta[0] = meta[1] = 4 * 256 * 132;
        kf_cg_launch_rule(a, meta, NULL, 132, true, 0, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_C64 && L.l[0].grid == 132);
        meta[0] = meta[1] = 4 * 256 * 131;
        kf_cg_launch_rule(a, meta, NULL, 132, false, 0, 0, &L);   /* not on a CPU */
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_C64);
        /* no covering grid within 2^31 - 1 blocks: none on a GPU (kf_run
         * reports it), the capped loop elsewhere */
        meta[0] = meta[1] = (int64_t)INT32_MAX * 256 * 4 + 4;
        kf_cg_launch_rule(a, meta, NULL, 132, true, 0, 0, &L);
        CHECK(L.n == 0);
        meta[0] = meta[1] -= 4;
        kf_cg_launch_rule(a, meta, NULL, 132, true, 0, 0, &L);
        CHECK(L.n == 1 && L.l[0].grid == INT32_MAX);
        kf_cg_launch_rule(a, meta, NULL, 132, false, 0, 0, &L);
        CHECK(L.n == 1 && L.l[0].grid == 8 * 132);
        meta[0] = meta[1] = 0;
        kf_cg_launch_rule(a, meta, NULL, 4, false, 0, 0, &L);
        CHECK(L.n == 0);
        sym[0] = -1;
        CHECK_STATUS(kf_cg_fill_meta(a, p, sym, NULL, meta, err, sizeof err), KF_ERR_SHAPE);
    }
    c = find_case("discount");
    if (a && c) {   /* rank 3: s32 exists and is picked for small strided calls */
        CHECK_STATUS(kf_cg_kernel_abi(c->pl.plan, 0, false, a, err, sizeof err), KF_OK);
        CHECK(a->has_s32 && !a->has_c32 && a->meta_count == 1 + 3 + 9 + 3);
        int64_t sym[4];
        for (int i = 0; i < c->pl.plan->g->nsyms; i++)
            sym[i] = 4;
        kf_cg_array arr[3];
        memset(arr, 0, sizeof arr);
        arr[0] = (kf_cg_array){ { 8, 1 }, 0 };         /* mb[m,k]: padded rows */
        arr[1] = (kf_cg_array){ { 16, 4, 1 }, 0 };
        arr[2] = (kf_cg_array){ { 16, 4, 1 }, 0 };
        CHECK_STATUS(kf_cg_fill_meta(a, c->pl.plan, sym, arr, meta, err, sizeof err), KF_OK);
        int64_t want[16] = { 64, 4, 4, 4, 0, 8, 1, 16, 4, 1, 16, 4, 1, 0, 0, 0 };
        CHECK(memcmp(meta, want, sizeof want) == 0);
        CHECK(kf_cg_pick_variant(a, meta, NULL) == KF_CG_S32);
        /* b64 on a GPU: mb is broadcast on dim 0 (t) only, read once per
         * block for every t in turn; not with mb's padded rows */
        CHECK(a->bsplit == 1 && (a->buf_flags[0] & KF_CG_BUF_LEAD) && !(a->buf_flags[1] & KF_CG_BUF_LEAD));
        /* a step is one chunk within KF_CG_B_FLAT_BYTES: three f64
         * buffers, 16 bytes a vector each */
        char flat[64];
        snprintf(flat, sizeof flat, "nvec <= %du ||", KF_CG_B_FLAT_BYTES / (3 * 16));
        CHECK(c->cuda && c->ocl && strstr(c->cuda, flat) && strstr(c->ocl, flat));
        kf_cg_entry_name(a, KF_CG_B64, nm, sizeof nm);
        CHECK(strlen(nm) > 4 && strcmp(nm + strlen(nm) - 4, "_b64") == 0);
        kf_cg_launch_rule(a, meta, NULL, 132, true, 0, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_S32);
        kf_cg_launch_variant(a, meta, KF_CG_B64, 132, true, 0, &L);
        CHECK(L.n == 0);
        char nm1[KF_CG_NAME_MAX];
        kf_cg_entry_name(a, KF_CG_B1, nm1, sizeof nm1);
        CHECK(a->has_b1 && strlen(nm1) > 3 && strcmp(nm1 + strlen(nm1) - 3, "_b1") == 0);
        /* contiguous [t, m, k] with mb[m, k]: b1, T * ceil(m * k / 2 / 256)
         * blocks, or b64, T * ceil(m * k / 2 / 512), where b64's fit a wave
         * (8 blocks a compute unit: 1056 here) and b1's do not */
        const int64_t tmk[][5] = { { 4, 4, 4, 4, KF_CG_B1 },         { 4, 3, 4, 4, KF_CG_B1 },
                                   { 3, 1000, 256, 3 * 250, KF_CG_B64 }, { 16, 1024, 256, 16 * 512, KF_CG_B1 },
                                   { 2, 528, 512, 1056, KF_CG_B1 },       { 2, 529, 512, 530, KF_CG_B64 },
                                   { 4, 3, 3, 0, 0 } };
        for (int i = 0; i < (int)(sizeof tmk / sizeof tmk[0]); i++) {
            int64_t T = tmk[i][0], M = tmk[i][1], K = tmk[i][2];
            int64_t w[16] = { T * M * K, T, M, K, 0, K, 1, M * K, K, 1, M * K, K, 1, 0, 0, 0 };
            memcpy(meta, w, sizeof w);
            kf_cg_launch_rule(a, meta, NULL, 132, true, 0, 0, &L);
            if (tmk[i][3])   /* else m * k odd: not whole vectors */
                CHECK_MSG(L.n == 1 && L.l[0].variant == (kf_cg_variant)tmk[i][4] &&
                              L.l[0].grid == (uint32_t)tmk[i][3] &&
                              strcmp(L.l[0].entry, tmk[i][4] == KF_CG_B1 ? nm1 : nm) == 0,
                          "[%lld,%lld,%lld]", (long long)T, (long long)M, (long long)K);
            else
                CHECK(L.n == 1 && L.l[0].variant == KF_CG_S32);
        }
        /* b64 and b1 index vectors in 32 bits: at most 2^32 - 512 of them
         * in all, even off a GPU where the grid is capped */
        const int64_t lim[][4] = { { 1, (1 << 23) - 1, 1024, 1 }, { 1, 1 << 23, 1024, 0 },
                                   { (1 << 11) - 1, 1 << 12, 1024, 1 }, { 1 << 11, 1 << 12, 1024, 0 } };
        for (int i = 0; i < 8; i++) {
            int64_t T = lim[i / 2][0], M = lim[i / 2][1], K = lim[i / 2][2];
            int64_t big[16] = { T * M * K, T, M, K, 0, K, 1, M * K, K, 1, M * K, K, 1, 0, 0, 0 };
            memcpy(meta, big, sizeof big);
            kf_cg_launch_variant(a, meta, i % 2 ? KF_CG_B1 : KF_CG_B64, 132, false, 0, &L);
            CHECK_MSG(L.n == lim[i / 2][3], "[%lld,%lld,%lld]", (long long)T, (long long)M, (long long)K);
        }
        int64_t w[16] = { 64, 4, 4, 4, 0, 4, 1, 16, 4, 1, 16, 4, 1, 0, 0, 0 };
        memcpy(meta, w, sizeof w);
        kf_cg_launch_rule(a, meta, NULL, 132, false, 0, 0, &L);   /* not on a CPU */
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_S32);
        uint64_t addrs[3] = { 0x1000, 0x2008, 0x3000 };          /* disc misaligned */
        kf_cg_launch_rule(a, meta, addrs, 132, true, 0, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_S32);
        meta[7] = 0;   /* disc broadcast on t too: not b64's layout */
        kf_cg_launch_rule(a, meta, NULL, 132, true, 0, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_S32);
        meta[5] = (int64_t)1 << 40;
        CHECK(kf_cg_pick_variant(a, meta, NULL) == KF_CG_S64);
    }
    c = find_case("boxplus");
    if (a && c) {   /* log1p: branchy, and two arrays: h64 */
        CHECK_STATUS(kf_cg_kernel_abi(c->pl.plan, 0, false, a, err, sizeof err), KF_OK);
        CHECK(a->branchy && a->has_h64 && a->vecw == 4 && a->streams == 2 &&
              strcmp(a->entry[KF_CG_H64] + strlen(a->entry[KF_CG_H64]) - 4, "_h64") == 0);
        int64_t sym[1] = { 10 };
        CHECK_STATUS(kf_cg_fill_meta(a, c->pl.plan, sym, NULL, meta, err, sizeof err), KF_OK);
        /* on a GPU c64 where its grid fills 8 blocks per compute unit (132
         * SMs), else h64 where its grid fills 6, else s64; a branchy body
         * keeps c64 above that whatever its arrays */
        meta[0] = meta[1] = 4 * 256 * 8 * 132;
        kf_cg_launch_rule(a, meta, NULL, 132, true, 0, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_C64 && L.l[0].grid == 8 * 132);
        /* b64 (no outer dims: a branchy body's pair of vectors a thread)
         * from 32 of its blocks (512 vectors) per compute unit, where the
         * call is a whole number of vectors */
        CHECK(a->has_b64 && a->bsplit == 0 &&
              strcmp(a->entry[KF_CG_B64] + strlen(a->entry[KF_CG_B64]) - 4, "_b64") == 0);
        meta[0] = meta[1] = (int64_t)1 << 26;
        kf_cg_launch_rule(a, meta, NULL, 132, true, 0, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_B64 && L.l[0].grid == 1u << 15 &&
              L.l[0].entry == a->entry[KF_CG_B64]);
        /* a lean GPU (an H100's 3352 GB/s on 132 SMs, under 30 a unit) stays on c64; an H200's
         * 4915 and an unknown bandwidth (0) take b64 */
        kf_cg_launch_rule(a, meta, NULL, 132, true, 3352, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_C64 && L.l[0].grid == 1u << 16);
        kf_cg_launch_rule(a, meta, NULL, 132, true, 4915, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_B64 && L.l[0].grid == 1u << 15);
        kf_cg_launch_rule(a, meta, NULL, 132, true, 0, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_B64);
        meta[0] = meta[1] = ((int64_t)1 << 26) + 2;
        kf_cg_launch_rule(a, meta, NULL, 132, true, 0, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_C64);
        meta[0] = meta[1] = 32 * 132 * 512 * 4;
        kf_cg_launch_rule(a, meta, NULL, 132, true, 0, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_B64 && L.l[0].grid == 32 * 132);
        meta[0] = meta[1] = 32 * 132 * 512 * 4 - 2048;
        kf_cg_launch_rule(a, meta, NULL, 132, true, 0, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_C64 && L.l[0].grid == 64 * 132 - 2);
        kf_cg_launch_rule(a, meta, NULL, 0, true, 0, 0, &L);   /* compute units unknown: not b64 */
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_C64);
        meta[0] = meta[1] = 4 * 256 * 8 * 132 - 4;
        kf_cg_launch_rule(a, meta, NULL, 132, true, 0, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_H64 && L.l[0].grid == 16 * 132 &&
              L.l[0].entry == a->entry[KF_CG_H64]);
        kf_cg_launch_rule(a, meta, NULL, 132, true, 3352, 0, &L);   /* below c's wave: lean or not */
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_H64 && L.l[0].grid == 16 * 132);
        meta[0] = meta[1] = 2 * 256 * 8 * 132 + 1;   /* the last thread has one element */
        kf_cg_launch_rule(a, meta, NULL, 132, true, 0, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_H64 && L.l[0].grid == 8 * 132 + 1);
        meta[0] = meta[1] = 2 * 256 * 8 * 132 - 2;
        kf_cg_launch_rule(a, meta, NULL, 132, true, 0, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_H64 && L.l[0].grid == 8 * 132);
        kf_cg_launch_rule(a, meta, NULL, 132, false, 0, 0, &L);   /* not on a CPU */
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_C64);
        kf_cg_launch_variant(a, meta, KF_CG_H64, 132, false, 0, &L);   /* no h64 off a GPU */
        CHECK(L.n == 0);
        /* no launch of a variant the kernel lacks (rank 1, no take) or of
         * another kind's (found by fuzz_pipeline: c32 and s32 launched "") */
        static const kf_cg_variant lacks[] = { KF_CG_C32, KF_CG_S32, KF_CG_G64, KF_CG_B1, KF_CG_SEQ, KF_CG_WARP };
        for (size_t i = 0; i < sizeof lacks / sizeof lacks[0]; i++) {
            kf_cg_launch_variant(a, meta, lacks[i], 132, true, 0, &L);
            CHECK_MSG(L.n == 0 && !a->entry[lacks[i]][0], "boxplus: variant %d launches", (int)lacks[i]);
        }
        kf_cg_launch_variant(a, meta, KF_CG_H64, 132, true, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_H64 && L.l[0].grid == 8 * 132);
        meta[0] = meta[1] = (int64_t)1 << 19;   /* h64: 1024 blocks, 7.8 per unit */
        kf_cg_launch_rule(a, meta, NULL, 132, true, 0, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_H64 && L.l[0].grid == 1024);
        meta[0] = meta[1] = 2 * 256 * 6 * 132;
        kf_cg_launch_rule(a, meta, NULL, 132, true, 0, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_H64 && L.l[0].grid == 6 * 132);
        meta[0] = meta[1] = 2 * 256 * 6 * 132 - 2;
        kf_cg_launch_rule(a, meta, NULL, 132, true, 0, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_S64 && L.l[0].grid == 12 * 132);
        meta[0] = meta[1] = (int64_t)1 << 18;   /* h64: 512 blocks, 3.9 per unit */
        kf_cg_launch_rule(a, meta, NULL, 132, true, 0, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_S64 && L.l[0].grid == 1024);
    }
    c = find_case("saxpy");
    if (a && c) {   /* two arrays, no branches: h64 where its grid fills 8 blocks per unit and c's does not */
        CHECK_STATUS(kf_cg_kernel_abi(c->pl.plan, 0, false, a, err, sizeof err), KF_OK);
        CHECK(!a->branchy && a->has_h64 && !a->has_b64 && a->streams == 2);
        int64_t sym[1] = { 10 };
        CHECK_STATUS(kf_cg_fill_meta(a, c->pl.plan, sym, NULL, meta, err, sizeof err), KF_OK);
        meta[0] = meta[1] = 4 * 256 * 8 * 132;   /* c fills the wave: c64 */
        kf_cg_launch_rule(a, meta, NULL, 132, true, 0, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_C64 && L.l[0].grid == 8 * 132);
        meta[0] = meta[1] = (int64_t)1 << 26;
        kf_cg_launch_rule(a, meta, NULL, 132, true, 0, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_C64 && L.l[0].grid == 1u << 16);
        /* a lean GPU (an H100's 3352 GB/s on 132 SMs) keeps h64 past c's wave; an H200's 4915,
         * an unknown bandwidth, unknown compute units or a CPU device do not */
        kf_cg_launch_rule(a, meta, NULL, 132, true, 3352, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_H64 && L.l[0].grid == 1u << 17 &&
              L.l[0].entry == a->entry[KF_CG_H64]);
        kf_cg_launch_rule(a, meta, NULL, 132, true, 4915, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_C64 && L.l[0].grid == 1u << 16);
        kf_cg_launch_rule(a, meta, NULL, 132, true, 30 * 132 - 1, 0, &L);   /* the bound: under 30 a unit */
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_H64);
        kf_cg_launch_rule(a, meta, NULL, 132, true, 30 * 132, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_C64);
        kf_cg_launch_rule(a, meta, NULL, 132, true, 0, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_C64);
        kf_cg_launch_rule(a, meta, NULL, 0, true, 3352, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_C64);
        kf_cg_launch_rule(a, meta, NULL, 132, false, 3352, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_C64);
        meta[0] = meta[1] = 4 * 256 * 8 * 132;
        kf_cg_launch_rule(a, meta, NULL, 132, true, 3352, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_H64 && L.l[0].grid == 16 * 132);
        meta[0] = meta[1] = 2 * 256 * 8 * 132 - 2;   /* h64's grid under a wave: c64, lean or not */
        kf_cg_launch_rule(a, meta, NULL, 132, true, 3352, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_C64 && L.l[0].grid == 4 * 132);
        meta[0] = meta[1] = 4 * 256 * 8 * 132 - 4;   /* one thread of c short of it: h64 */
        kf_cg_launch_rule(a, meta, NULL, 132, true, 0, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_H64 && L.l[0].grid == 16 * 132);
        meta[0] = meta[1] = (int64_t)1 << 20;   /* c: 1024 blocks, h64: 2048 */
        kf_cg_launch_rule(a, meta, NULL, 132, true, 0, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_H64 && L.l[0].grid == 2048);
        meta[0] = meta[1] = 2 * 256 * 8 * 132;
        kf_cg_launch_rule(a, meta, NULL, 132, true, 0, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_H64 && L.l[0].grid == 8 * 132);
        meta[0] = meta[1] = 2 * 256 * 8 * 132 - 2;
        kf_cg_launch_rule(a, meta, NULL, 132, true, 0, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_C64 && L.l[0].grid == 4 * 132);
        meta[0] = meta[1] = (int64_t)1 << 19;
        kf_cg_launch_rule(a, meta, NULL, 132, true, 0, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_C64 && L.l[0].grid == 512);
        meta[0] = meta[1] = 4 * 256 * 131;
        kf_cg_launch_rule(a, meta, NULL, 132, true, 0, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_S64);
        meta[0] = meta[1] = (int64_t)1 << 20;
        kf_cg_launch_rule(a, meta, NULL, 132, false, 0, 0, &L);   /* not on a CPU */
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_C64);
    }
    c = find_case("poly");
    if (a && c) {   /* three arrays, no branches: c64 while c's grid fits in a wave, h64 from there (saxpy: the other way) */
        CHECK_STATUS(kf_cg_kernel_abi(c->pl.plan, 0, false, a, err, sizeof err), KF_OK);
        CHECK(!a->branchy && a->has_h64 && a->streams == 3);
        int64_t sym[1] = { 10 };
        CHECK_STATUS(kf_cg_fill_meta(a, c->pl.plan, sym, NULL, meta, err, sizeof err), KF_OK);
        meta[0] = meta[1] = (int64_t)1 << 20;   /* c: 1024 blocks, h64: 2048 */
        kf_cg_launch_rule(a, meta, NULL, 132, true, 0, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_C64 && L.l[0].grid == 1024);
        kf_cg_launch_rule(a, meta, NULL, 132, true, 3352, 0, &L);   /* three arrays: lean or not */
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_C64 && L.l[0].grid == 1024);
        meta[0] = meta[1] = 4 * 256 * 8 * 132 - 4;
        kf_cg_launch_rule(a, meta, NULL, 132, true, 0, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_C64 && L.l[0].grid == 8 * 132);
        meta[0] = meta[1] = 4 * 256 * 8 * 132;
        kf_cg_launch_rule(a, meta, NULL, 132, true, 0, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_H64 && L.l[0].grid == 16 * 132);
        meta[0] = meta[1] = (int64_t)1 << 21;
        kf_cg_launch_rule(a, meta, NULL, 132, true, 0, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_H64 && L.l[0].grid == 4096);
    }
    c = find_case("bcastone");
    if (a && c) {   /* x[n,4] with b[1] and c[1,1], broadcast on every dim: read once, so contiguous */
        CHECK_STATUS(kf_cg_kernel_abi(c->pl.plan, 0, false, a, err, sizeof err), KF_OK);
        CHECK((a->buf_flags[1] & KF_CG_BUF_BCAST) && (a->buf_flags[2] & KF_CG_BUF_BCAST) && !a->bsplit);
        int64_t sym[4] = { 10, 10, 10, 10 };
        CHECK_STATUS(kf_cg_fill_meta(a, c->pl.plan, sym, NULL, meta, err, sizeof err), KF_OK);
        CHECK(kf_cg_pick_variant(a, meta, NULL) == KF_CG_C64);
        uint64_t addrs[4] = { 0x1000, 0x2004, 0x3008, 0x4000 };   /* b and c anywhere */
        CHECK(kf_cg_pick_variant(a, meta, addrs) == KF_CG_C64);
        addrs[0] = 0x1004;                                         /* x not: strided, 32-bit (rank 2) */
        CHECK(a->has_s32 && kf_cg_pick_variant(a, meta, addrs) == KF_CG_S32);
    }
    c = find_case("rows");
    if (a && c) {   /* f32[m,n] -> max, argmax, sum over axis 1 */
        CHECK_STATUS(kf_cg_kernel_abi(c->pl.plan, 0, false, a, err, sizeof err), KF_OK);
        CHECK(a->kind == KF_KERNEL_REDUCE && a->axes == 2 && a->nouts == 3 && a->has_scratch);
        CHECK(a->red_val[0] == 4 && a->red_val[1] == 4 && a->red_val[2] == 4);
        CHECK(!a->red_idx[0] && a->red_idx[1] && !a->red_idx[2]);
        int64_t sym[2];
        for (int i = 0; i < c->pl.plan->g->nsyms; i++)
            sym[i] = strcmp(c->pl.plan->g->syms[i], "m") == 0 ? 3 : 20000;
        CHECK_STATUS(kf_cg_fill_meta(a, c->pl.plan, sym, NULL, meta, err, sizeof err), KF_OK);
        /* the chunking last (kf_cg_red_chunks): 5 chunks of a tile */
        int64_t want[17] = { 60000, 3, 20000, 20000, 1, 1, 0, 1, 0, 1, 0, 0, 0, 0, 0, 5, 4096 };
        CHECK(a->meta_count == 17 && a->meta_chunks == 15 && memcmp(meta, want, sizeof want) == 0);
        kf_cg_launch_rule(a, meta, NULL, 0, false, 0, 0, &L);   /* 5 chunks of a tile per row */
        CHECK(L.n == 2 && L.l[0].variant == KF_CG_TILE && L.l[1].variant == KF_CG_COMB);
        CHECK(L.l[0].grid == 15 && L.l[1].grid == 3 && L.scratch_bytes == 64 + 64 + 128 + 64);
        kf_cg_launch_rule(a, meta, NULL, 0, true, 0, 0, &L);   /* a GPU: tile combines, counters first */
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_TILE && L.l[0].grid == 15);
        CHECK(L.scratch_bytes == KF_CG_COUNTER_BYTES + 64 + 64 + 128 + 64);
        meta[2] = meta[3] = 8192;   /* rows of 2 tiles: one chunk each, no scratch */
        kf_cg_fill_chunks(a, meta);   /* a new shape: its chunking, which the launch rule reads */
        kf_cg_launch_rule(a, meta, NULL, 0, true, 0, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_TILE && L.l[0].grid == 3 && L.scratch_bytes == 0);
        meta[2] = meta[3] = 20000;
        kf_cg_launch_variant(a, meta, KF_CG_SEQ, 0, false, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_SEQ && L.l[0].grid == 1 && L.scratch_bytes == 0);
        meta[2] = 64;
        CHECK(kf_cg_pick_variant(a, meta, NULL) == KF_CG_SEQ);
        meta[2] = 65;    /* rows of 65 .. 1024, however few: warp */
        CHECK(kf_cg_pick_variant(a, meta, NULL) == KF_CG_WARP);
        meta[4] = 2;     /* padded rows: tile */
        CHECK(kf_cg_pick_variant(a, meta, NULL) == KF_CG_TILE);
        meta[4] = 1;
        meta[1] = 64;
        meta[2] = 1024;
        CHECK(kf_cg_pick_variant(a, meta, NULL) == KF_CG_WARP);
        meta[1] = 65;    /* M * L over 65536: still warp (tile was 0.5 us slower at [128..512, 1024]) */
        CHECK(kf_cg_pick_variant(a, meta, NULL) == KF_CG_WARP);
        meta[1] = 512;
        CHECK(kf_cg_pick_variant(a, meta, NULL) == KF_CG_WARP);
        meta[1] = 3;
        meta[2] = 1025;  /* rows longer than a round */
        CHECK(kf_cg_pick_variant(a, meta, NULL) == KF_CG_TILE);
        meta[2] = 65;
        /* warp: many outputs, 32 <= L <= 4096, the reduced dim contiguous in x */
        meta[1] = 4096;
        meta[2] = 1000;
        kf_cg_fill_chunks(a, meta);
        kf_cg_launch_rule(a, meta, NULL, 16, true, 0, 0, &L);   /* a GPU: no cap; rows load as vectors: warpv */
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_WARPV && L.l[0].grid == 512 && L.scratch_bytes == 0);
        CHECK(strcmp(L.l[0].entry + strlen(L.l[0].entry) - 6, "_warpv") == 0);
        /* warp, with its element path, where a group is not one aligned
         * vector: rows of a length not a multiple of 4, x at an odd
         * offset, a row stride not a multiple of 4, each row one element
         * repeated (stride 0); warpv refuses them */
        const int64_t *ok = meta;
        int64_t bad[4][17];
        for (int i = 0; i < 4; i++)
            memcpy(bad[i], ok, sizeof bad[i]);
        bad[0][2] = 1001;
        bad[0][3] = 1001;
        bad[1][11] = 1;
        bad[2][3] = 1002;
        bad[3][4] = 0;
        for (int i = 0; i < 4; i++) {
            kf_cg_launch_rule(a, bad[i], NULL, 16, true, 0, 0, &L);
            CHECK_MSG(L.n == 1 && L.l[0].variant == KF_CG_WARP && L.l[0].grid == 512, "layout %d", i);
            kf_cg_launch_variant(a, bad[i], KF_CG_WARPV, 16, true, 0, &L);
            CHECK_MSG(L.n == 0, "layout %d", i);
        }
        uint64_t odd[4] = { 0x1008, 0x2000, 0x3000, 0x4000 };   /* x 8 bytes past 16 */
        CHECK(kf_cg_pick_variant(a, meta, odd) == KF_CG_WARP);
        kf_cg_launch_rule(a, meta, odd, 16, true, 0, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_WARP);
        kf_cg_launch_rule(a, meta, NULL, 16, false, 0, 0, &L);   /* off a GPU: tile, the same bits, capped */
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_TILE && L.l[0].grid == 128 && L.scratch_bytes == 0);
        kf_cg_launch_variant(a, meta, KF_CG_WARP, 16, false, 0, &L);   /* no warp entry off a GPU */
        CHECK(L.n == 0);
        kf_cg_launch_variant(a, meta, KF_CG_WARP, 16, true, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_WARP && L.l[0].grid == 512);
        kf_cg_launch_variant(a, meta, KF_CG_WARPV, 16, true, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_WARPV && L.l[0].grid == 512);
        /* warpv indexes in 32 bits: warp where x's span is past 2^31 - 1
         * elements (here 4095 rows 2^20 apart), or the space's points */
        meta[3] = (int64_t)1 << 20;
        kf_cg_launch_rule(a, meta, NULL, 16, true, 0, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_WARP && L.l[0].grid == 512);
        kf_cg_launch_variant(a, meta, KF_CG_WARPV, 16, true, 0, &L);
        CHECK(L.n == 0);
        meta[3] = (int64_t)1 << 16;   /* 4095 * 2^16 + 999 < 2^31 */
        kf_cg_launch_rule(a, meta, NULL, 16, true, 0, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_WARPV);
        meta[3] = 1000;
        /* warp and tile run their loops over outputs once (KF_ONE_PASS):
         * past 8 * (2^31 - 1) outputs no warp grid covers them, nor a
         * tile grid (a block an output), and seq runs instead; off a GPU
         * tile */
        meta[1] = 8 * (int64_t)INT32_MAX;
        meta[2] = 32;
        kf_cg_launch_rule(a, meta, NULL, 16, true, 0, 0, &L);   /* warp: past warpv's 32 bits */
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_WARP && L.l[0].grid == INT32_MAX);
        meta[1] += 1;
        kf_cg_fill_chunks(a, meta);
        kf_cg_launch_rule(a, meta, NULL, 16, true, 0, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_SEQ && L.l[0].grid == 128);
        kf_cg_launch_rule(a, meta, NULL, 16, false, 0, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_TILE);
        for (kf_cg_variant v = KF_CG_TILE; v <= KF_CG_WARPV; v++) {
            kf_cg_launch_variant(a, meta, v, 16, true, 0, &L);
            CHECK_MSG(L.n == 0, "%s", kf_cg_variant_name(v));
        }
        meta[1] = INT32_MAX;   /* tile's grid covers 2^31 - 1 outputs of one chunk */
        kf_cg_fill_chunks(a, meta);
        kf_cg_launch_variant(a, meta, KF_CG_TILE, 16, true, 0, &L);
        CHECK(L.n == 1 && L.l[0].grid == INT32_MAX);
        meta[1] = 4096;
        meta[2] = 1000;
        meta[4] = -1;   /* reversed rows */
        CHECK(kf_cg_pick_variant(a, meta, NULL) == KF_CG_WARP);
        meta[4] = 2;    /* padded rows: tile, or seq from 65536 outputs */
        CHECK(kf_cg_pick_variant(a, meta, NULL) == KF_CG_TILE);
        meta[1] = 65536;
        CHECK(kf_cg_pick_variant(a, meta, NULL) == KF_CG_SEQ);
        meta[4] = 1;
        CHECK(kf_cg_pick_variant(a, meta, NULL) == KF_CG_WARP);
        meta[2] = 31;
        CHECK(kf_cg_pick_variant(a, meta, NULL) == KF_CG_SEQ);
        meta[2] = 4097;  /* longer rows: tile, one chunk per output, one launch */
        kf_cg_fill_chunks(a, meta);
        kf_cg_launch_rule(a, meta, NULL, 0, false, 0, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_TILE && L.l[0].grid == 1024 && L.scratch_bytes == 0);
        kf_cg_launch_rule(a, meta, NULL, 16, false, 0, 0, &L);
        CHECK(L.l[0].grid == 128);
        kf_cg_launch_rule(a, meta, NULL, 16, true, 0, 0, &L);   /* a GPU: a block per output */
        CHECK(L.l[0].grid == 65536);
        kf_cg_launch_variant(a, meta, KF_CG_WARP, 0, true, 0, &L);   /* rows longer than a tile */
        CHECK(L.n == 0);
        meta[1] = 4095;   /* fewer rows: warp only while they are short */
        meta[2] = 1025;
        CHECK(kf_cg_pick_variant(a, meta, NULL) == KF_CG_TILE);
        meta[2] = 1024;
        CHECK(kf_cg_pick_variant(a, meta, NULL) == KF_CG_WARP);
        meta[1] = 1024;
        CHECK(kf_cg_pick_variant(a, meta, NULL) == KF_CG_WARP);
        meta[1] = 1023;
        CHECK(kf_cg_pick_variant(a, meta, NULL) == KF_CG_WARP);
        meta[2] = 64;     /* rows of at most 64: warp from 1024 of them, else seq */
        CHECK(kf_cg_pick_variant(a, meta, NULL) == KF_CG_SEQ);
        meta[1] = 1024;
        CHECK(kf_cg_pick_variant(a, meta, NULL) == KF_CG_WARP);
        meta[2] = 1000;
        meta[1] = 0;
        kf_cg_launch_rule(a, meta, NULL, 0, false, 0, 0, &L);
        CHECK(L.n == 0);
    }
    {   /* chunks of the tile variant: a function of (M, L) only */
        uint64_t nc, ce;
        kf_cg_red_chunks(1, (uint64_t)1 << 28, &nc, &ce);
        CHECK(nc == 2048 && ce == 32 * 4096);
        kf_cg_red_chunks(1, 4096, &nc, &ce);
        CHECK(nc == 1 && ce == 4096);
        kf_cg_red_chunks(3, 20000, &nc, &ce);   /* 5 tiles: a chunk each */
        CHECK(nc == 5 && ce == 4096);
        kf_cg_red_chunks(3, 8192, &nc, &ce);   /* at most KF_CG_CHUNK_WHOLE tiles: one chunk */
        CHECK(nc == 1 && ce == 8192);
        kf_cg_red_chunks(1, 8193, &nc, &ce);
        CHECK(nc == 3 && ce == 4096);
        kf_cg_red_chunks(127, 16384, &nc, &ce);
        CHECK(nc == 4 && ce == 4096);
        kf_cg_red_chunks(128, 16384, &nc, &ce);
        CHECK(nc == 1 && ce == 16384);
        kf_cg_red_chunks(127, 16 * 4096, &nc, &ce);   /* few outputs: a tile a chunk */
        CHECK(nc == 16 && ce == 4096);
        kf_cg_red_chunks(128, 16 * 4096, &nc, &ce);   /* many: KF_CG_CHUNK_MIN tiles a chunk */
        CHECK(nc == 4 && ce == 4 * 4096);
        kf_cg_red_chunks(128, 256 * 4096, &nc, &ce);   /* the target gives more */
        CHECK(nc == 16 && ce == 16 * 4096);
        kf_cg_red_chunks(5, 0, &nc, &ce);
        CHECK(nc == 1 && ce == 4096);
        kf_cg_red_chunks(2048, 100000, &nc, &ce);
        CHECK(nc == 1 && ce == 25 * 4096);
        kf_cg_red_chunks(1000, 10 * 4096 + 1, &nc, &ce);
        CHECK(nc == 3 && ce == 4 * 4096);
        /* several chunks only below 2 * KF_CG_CHUNK_TARGET (output, chunk)
         * pairs: a GPU's tile splits block w in 32 bits (codegen.h) */
        for (uint64_t M = 1; M <= 2 * KF_CG_CHUNK_TARGET; M += M < 64 ? 1 : 61) {
            for (int e = 12; e <= 40; e += 2) {
                kf_cg_red_chunks(M, ((uint64_t)1 << e) + 1, &nc, &ce);
                CHECK_MSG(nc == 1 || M * nc < 2 * KF_CG_CHUNK_TARGET, "M %llu, L 2^%d + 1: %llu chunks",
                          (unsigned long long)M, e, (unsigned long long)nc);
            }
        }
    }
    c = find_case("cols");
    if (a && c) {   /* min keepdims [1,n] and argmin [n] over axis 0 of [m,n] */
        CHECK_STATUS(kf_cg_kernel_abi(c->pl.plan, 0, false, a, err, sizeof err), KF_OK);
        int64_t sym[2] = { 6, 6 };
        kf_cg_array arr[3] = { { { 7, 1 }, 0 }, { { 6, 1 }, 0 }, { { 1 }, 2 } };
        CHECK_STATUS(kf_cg_fill_meta(a, c->pl.plan, sym, arr, meta, err, sizeof err), KF_OK);
        int64_t want[14] = { 36, 6, 6, 7, 1, 0, 1, 0, 1, 0, 0, 2, 1, 4096 };   /* one chunk of a tile */
        CHECK(a->meta_count == 14 && memcmp(meta, want, sizeof want) == 0);
    }
    c = find_case("misc");
    if (a && c) {   /* take: an error flag and one take source */
        CHECK_STATUS(kf_cg_kernel_abi(c->pl.plan, 0, false, a, err, sizeof err), KF_OK);
        CHECK(a->has_err && a->ntake == 1 && (a->buf_flags[0] & KF_CG_BUF_TAKE) && !(a->buf_flags[0] & KF_CG_BUF_EW));
        int64_t sym[1] = { 9 };
        kf_cg_array arr[4] = { { { 3 }, 5 }, { { 1 }, 0 }, { { 1 }, 0 }, { { 1 }, 0 } };
        CHECK_STATUS(kf_cg_fill_meta(a, c->pl.plan, sym, arr, meta, err, sizeof err), KF_OK);
        int m = a->meta_count;
        CHECK(m == 1 + 1 + 4 + 4 + 2 && meta[m - 2] == 9 && meta[m - 1] == 3 && meta[2] == 0 && meta[6] == 5);
        /* the gathered source does not count; the iota makes c32 exist */
        CHECK(a->has_c32 && kf_cg_pick_variant(a, meta, NULL) == KF_CG_C32);
        /* on a GPU a kernel with a direct take runs g64 (4 points per thread)
         * from 24 of its blocks per SM, one point per thread below; a CPU
         * keeps the vectors */
        CHECK(a->has_g64 && strcmp(a->entry[KF_CG_G64] + strlen(a->entry[KF_CG_G64]) - 4, "_g64") == 0);
        meta[0] = meta[1] = (int64_t)1 << 26;
        kf_cg_launch_rule(a, meta, NULL, 132, true, 0, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_G64 && L.l[0].grid == ((uint32_t)1 << 26) / 1024);
        meta[0] = meta[1] = 24 * 132 * 1024 - 1;
        kf_cg_launch_rule(a, meta, NULL, 132, true, 0, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == (a->has_s32 ? KF_CG_S32 : KF_CG_S64) &&
              L.l[0].grid == (24 * 132 * 1024 - 1 + 255) / 256);
        meta[0] = meta[1] = 24 * 132 * 1024 + 1;   /* the last block has one point */
        kf_cg_launch_rule(a, meta, NULL, 132, true, 0, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_G64 && L.l[0].grid == 24 * 132 + 1);
        kf_cg_launch_variant(a, meta, KF_CG_G64, 132, false, 0, &L);   /* no g64 off a GPU */
        CHECK(L.n == 0);
        meta[0] = meta[1] = (int64_t)1 << 26;
        kf_cg_launch_rule(a, meta, NULL, 132, false, 0, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_C32 && L.l[0].grid == 8 * 132);
    }
    c = find_case("gathermix");
    if (a && c) {   /* direct and computed takes, no coordinates: h64 exists */
        CHECK_STATUS(kf_cg_kernel_abi(c->pl.plan, 0, false, a, err, sizeof err), KF_OK);
        CHECK(a->has_g64 && a->has_h64 && !a->has_c32 && a->vecw == 4);
        /* on a GPU a contiguous call runs h64 (two points a thread) from 8
         * blocks of 1024 points per SM, one point per thread below; a CPU
         * keeps the vectors */
        int64_t sym[2] = { 100, 8 * 132 * 1024 };   /* k, n */
        CHECK_STATUS(kf_cg_fill_meta(a, c->pl.plan, sym, NULL, meta, err, sizeof err), KF_OK);
        kf_cg_launch_rule(a, meta, NULL, 132, true, 0, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_H64 && L.l[0].grid == 8 * 132 * 2 &&
              L.l[0].entry == a->entry[KF_CG_H64]);
        meta[0] = meta[1] = 8 * 132 * 1024 - 2;
        kf_cg_launch_rule(a, meta, NULL, 132, true, 0, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_S64 && L.l[0].grid == (8 * 132 * 1024 - 2 + 255) / 256);
        kf_cg_launch_rule(a, meta, NULL, 132, false, 0, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_C64);
        /* this h64 moves whole vectors only (no scalar tail): where vecw / 2
         * does not divide n, one point per thread, and g64 from 24 blocks
         * per SM (as a strided call) */
        meta[0] = meta[1] = 8 * 132 * 1024 + 1;
        kf_cg_launch_rule(a, meta, NULL, 132, true, 0, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_S64 && L.l[0].grid == (8 * 132 * 1024 + 1 + 255) / 256);
        meta[0] = meta[1] = 24 * 132 * 1024 + 1;
        kf_cg_launch_rule(a, meta, NULL, 132, true, 0, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_G64 && L.l[0].grid == 24 * 132 + 1);
        kf_cg_launch_variant(a, meta, KF_CG_H64, 132, true, 0, &L);
        CHECK(L.n == 0);
        kf_cg_array arr[4] = { { { 1 }, 0 }, { { 2 }, 0 }, { { 1 }, 0 }, { { 1 }, 0 } };   /* p strided */
        sym[1] = (int64_t)1 << 26;
        CHECK_STATUS(kf_cg_fill_meta(a, c->pl.plan, sym, arr, meta, err, sizeof err), KF_OK);
        kf_cg_launch_rule(a, meta, NULL, 132, true, 0, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_G64 && L.l[0].grid == ((uint32_t)1 << 26) / 1024);
        sym[1] = 16 * 132 * 1024;   /* strided, below g64's 24 blocks per SM: one point per thread */
        CHECK_STATUS(kf_cg_fill_meta(a, c->pl.plan, sym, arr, meta, err, sizeof err), KF_OK);
        kf_cg_launch_rule(a, meta, NULL, 132, true, 0, 0, &L);
        CHECK(L.n == 1 && L.l[0].variant == KF_CG_S64 && L.l[0].grid == 16 * 132 * 4);
    }
    free(a);
}

/* Errors: bad arguments, a malformed plan, capabilities. */
static void test_errors(void)
{
    kf_strbuf o = KF_STRBUF_INIT;
    char err[512];
    CHECK_STATUS(kf_cg_emit(NULL, KF_TARGET_CUDA, NULL, &o, err, sizeof err), KF_ERR_INVALID_ARG);
    const tcase *c = find_case("halfs");
    if (c) {
        kf_cg_caps no16 = { .fp64 = true, .gpu = true };
        CHECK_STATUS(kf_cg_emit(c->pl.plan, KF_TARGET_OPENCL, &no16, &o, err, sizeof err), KF_ERR_UNSUPPORTED);
        CHECK(strstr(err, "cl_khr_fp16") && strstr(err, "halfs") && strstr(err, "f16"));
        kf_sb_reset(&o);
        CHECK_STATUS(kf_cg_emit(c->pl.plan, KF_TARGET_CUDA, &no16, &o, err, sizeof err), KF_OK);
        kf_sb_reset(&o);
    }
    c = find_case("rows");
    if (c) {   /* f32 max: one PTX instruction from sm_80 (CUDA, NVIDIA's OpenCL), else selects */
        kf_cg_caps before80 = { .fp64 = true, .fp16 = true, .gpu = true, .ptx = true },
                   from80 = { .fp64 = true, .fp16 = true, .nan_minmax = true, .gpu = true, .ptx = true };
        CHECK_STATUS(kf_cg_emit(c->pl.plan, KF_TARGET_CUDA, &from80, &o, err, sizeof err), KF_OK);
        CHECK(strstr(kf_sb_str(&o), "max.NaN.f32") && !strstr(kf_sb_str(&o), "a != a ?"));
        kf_sb_reset(&o);
        CHECK_STATUS(kf_cg_emit(c->pl.plan, KF_TARGET_CUDA, &before80, &o, err, sizeof err), KF_OK);
        CHECK(!strstr(kf_sb_str(&o), "max.NaN") && strstr(kf_sb_str(&o), "a != a ?"));
        kf_sb_reset(&o);
        CHECK_STATUS(kf_cg_emit(c->pl.plan, KF_TARGET_OPENCL, &from80, &o, err, sizeof err), KF_OK);
        CHECK(strstr(kf_sb_str(&o), "max.NaN.f32") && !strstr(kf_sb_str(&o), "a != a ?"));
        kf_sb_reset(&o);
        CHECK_STATUS(kf_cg_emit(c->pl.plan, KF_TARGET_OPENCL, &before80, &o, err, sizeof err), KF_OK);
        CHECK(!strstr(kf_sb_str(&o), "max.NaN") && strstr(kf_sb_str(&o), "a != a ?"));
        kf_sb_reset(&o);
        /* the one-launch tile's device-wide fence: membar.gl where OpenCL
         * takes PTX (NVIDIA makes membar.cta of mem_fence), else mem_fence */
        CHECK_STATUS(kf_cg_emit(c->pl.plan, KF_TARGET_OPENCL, &before80, &o, err, sizeof err), KF_OK);
        CHECK(strstr(kf_sb_str(&o), "asm volatile(\"membar.gl;\"") && !strstr(kf_sb_str(&o), "mem_fence("));
        kf_sb_reset(&o);
        before80.ptx = false;
        CHECK_STATUS(kf_cg_emit(c->pl.plan, KF_TARGET_OPENCL, &before80, &o, err, sizeof err), KF_OK);
        CHECK(!strstr(kf_sb_str(&o), "membar") && strstr(kf_sb_str(&o), "mem_fence(CLK_GLOBAL_MEM_FENCE)"));
        kf_sb_reset(&o);
        CHECK_STATUS(kf_cg_emit(c->pl.plan, KF_TARGET_CUDA, &before80, &o, err, sizeof err), KF_OK);
        CHECK(strstr(kf_sb_str(&o), "__threadfence()") && strstr(kf_sb_str(&o), "atomicAdd(&kf_cnt[o], 1u)"));
        kf_sb_reset(&o);
    }
    c = find_case("discount");
    if (c) {
        kf_cg_caps no64 = { .fp16 = true, .gpu = true };
        CHECK_STATUS(kf_cg_emit(c->pl.plan, KF_TARGET_OPENCL, &no64, &o, err, sizeof err), KF_ERR_UNSUPPORTED);
        CHECK(strstr(err, "cl_khr_fp64") && strstr(err, "f64"));
        kf_sb_reset(&o);
    }
    c = find_case("misc");
    if (c) {   /* the take source dropped from the args: the plan is malformed */
        kf_kernel *k = &c->pl.plan->kernels[0];
        int32_t saved = k->args[0];
        k->args[0] = k->args[1];
        k->nargs--;
        CHECK_STATUS(kf_cg_emit(c->pl.plan, KF_TARGET_CUDA, NULL, &o, err, sizeof err), KF_ERR_INVALID_ARG);
        CHECK(strstr(err, "kernel 0") != NULL);
        k->nargs++;
        k->args[0] = saved;
        kf_sb_reset(&o);
        CHECK_STATUS(kf_cg_emit(c->pl.plan, KF_TARGET_CUDA, NULL, &o, err, sizeof err), KF_OK);
        kf_cg_kabi *a = malloc(sizeof *a);
        if (a)
            CHECK_STATUS(kf_cg_kernel_abi(c->pl.plan, 7, false, a, err, sizeof err), KF_ERR_INVALID_ARG);
        free(a);
    }
    kf_sb_free(&o);
}

/* kf_cg_caps.fast_math: every op it approximates in f32 through the
 * target's approximate function, sin and cos of one operand in one call
 * where the target has one; pow, tanh, exp2 on CUDA, and f64 accurate; no
 * approximate function without it.  With nvrtc, NVRTC compiles the CUDA
 * module (sm_80 and PTX for compute_90, with the corpus's modules: main). */
static void test_fast_math(bool nvrtc)
{
    static const char text[] =
        "kfuse 1\ngraph fm(x: f32[n], y: f32[n], h: f16[n], d: f64[n]) -> (a, b, c, e, f, g) {\n"
        "  a = add (add (exp x), (log x)), (add (log2 x), (log10 x))\n"
        "  b = add (add (sin x), (cos x)), (add (tan x), (rsqrt x))\n"
        "  c = add (add (div x, y), (rcp y)), (add (sigmoid x), (exp2 x))\n"
        "  e = add (pow x, y), (tanh x)\n"
        "  f = add (exp d), (div d, (sin d))\n"
        "  g = exp h\n}\n";
    /* operands: x0 x, x1 y, x2 h, x3 d */
    static const char *const cuda_fast[] = { "= __expf(x0", "= __logf(", "= __log2f(", "= __log10f(", "__sincosf(x0",
                                             "= __tanf(", "= rsqrtf(", "__fdividef(x0", "__fdividef(1.0f",
                                             "__fdividef(1.0f, __fadd_rn(1.0f, __expf(-", "= exp2f(", "= powf(",
                                             "= tanhf(", "= exp(x3", "__ddiv_rn(x3", "= sin(x3", "kf_rh(__expf(x2" };
    static const char *const ocl_fast[] = { "= native_exp(x0", "= native_log(", "= native_log2(", "= native_log10(",
                                            "= native_sin(", "= native_cos(", "= native_tan(", "= native_rsqrt(",
                                            "native_divide(x0", "native_divide(1.0f", "= native_exp2(", "= pow(",
                                            "= tanh(", "= exp(x3", "= (x3 / ", "= sin(x3", "kf_rh(native_exp(x2" };
    static const char *const approx[] = { "__expf", "__logf", "__sinf", "__sincosf", "__tanf", "rsqrtf",
                                          "__fdividef", "native_" };
    kf_module *m = NULL;
    CHECK_STATUS(kf_module_parse(text, strlen(text), "fm", NULL, &m), KF_OK);
    kf_fuse_options fo = { .fast_math = true };
    kf_pipeline pl;
    if (!m || kf_fuse(kf_module_graph(m, 0), &fo, NULL, &pl) != KF_OK) {
        CHECK_MSG(false, "fast_math graph: %s", m ? pl.err : "parse");
        kf_module_free(m);
        return;
    }
    kf_cg_caps caps = { .fp64 = true, .fp16 = true, .nan_minmax = true, .gpu = true, .ptx = true };
    for (int fast = 0; fast < 2; fast++) {
        caps.fast_math = fast;
        for (int t = 0; t < 2; t++) {
            kf_strbuf o = KF_STRBUF_INIT;
            char err[512] = "";
            CHECK_STATUS(kf_cg_emit(pl.plan, t ? KF_TARGET_OPENCL : KF_TARGET_CUDA, &caps, &o, err, sizeof err),
                         KF_OK);
            const char *src = kf_sb_str(&o), *tn = t ? "OpenCL" : "CUDA";
            const char *const *want = t ? ocl_fast : cuda_fast;
            size_t nwant = t ? sizeof ocl_fast / sizeof *ocl_fast : sizeof cuda_fast / sizeof *cuda_fast;
            for (size_t i = 0; fast && i < nwant; i++)
                CHECK_MSG(strstr(src, want[i]) != NULL, "fast_math %s: no '%s'", tn, want[i]);
            for (size_t i = 0; !fast && i < sizeof approx / sizeof *approx; i++)
                CHECK_MSG(strstr(src, approx[i]) == NULL, "%s without fast_math: '%s'", tn, approx[i]);
            if (fast)   /* no accurate f32 call left but those it keeps */
                CHECK_MSG(!strstr(src, t ? "= exp(x0" : "= expf(") && !strstr(src, t ? "= sincos(" : "    sincosf(") &&
                              !strstr(src, "__fdiv_rn") && !strstr(src, "kf_sinf"),
                          "fast_math %s: an accurate f32 function left", tn);
#if KFUSE_WITH_CUDA
            if (fast && !t && nvrtc) {
                nv_add(src, "fast_math module", "--gpu-architecture=sm_80", false);
                nv_add(src, "fast_math module", "--gpu-architecture=compute_90", true);
            }
#endif
            kf_sb_free(&o);
        }
    }
    kf_pipeline_clear(&pl);
    kf_module_free(m);
}

/* The launch facts under fast math (abi.c, branchy_node): an op whose
 * fast form has no slow path (f32 division, reciprocal, rsqrt, sigmoid,
 * sin, cos, tan) leaves the body branch-free, so boxplus's large calls run
 * c64 instead of b64; f64 and the ops fast math keeps accurate (sqrt, pow)
 * still branch. */
static void test_fast_branchy(void)
{
    static const struct {
        const char *type, *body;
        bool fast_branchy;   /* with fast_math; every case branches without it */
    } fb[] = {
        { "f32", "log (div (add 1.0, (exp (add a, b))), (add (exp a), (exp b)))", false },
        { "f32", "add (rcp a), (rsqrt b)", false },
        { "f32", "add (sigmoid a), (tan b)", false },
        { "f16", "div (sin a), (cos b)", false },
        { "f64", "div a, b", true },
        { "f32", "add (sqrt a), (div a, b)", true },
        { "f32", "pow a, b", true },
        { "i32", "div a, b", true },
    };
    for (size_t i = 0; i < sizeof fb / sizeof fb[0]; i++) {
        char text[512], err[256];
        snprintf(text, sizeof text, "kfuse 1\ngraph fb(a: %s[n], b: %s[n]) -> (y) {\n  y = %s\n}\n", fb[i].type,
                 fb[i].type, fb[i].body);
        kf_module *m = NULL;
        CHECK_STATUS(kf_module_parse(text, strlen(text), "fb", NULL, &m), KF_OK);
        for (int fast = 0; m && fast < 2; fast++) {
            kf_fuse_options fo = { .fast_math = fast };
            kf_pipeline pl;
            kf_cg_kabi *a = malloc(sizeof *a);
            if (!a || kf_fuse(kf_module_graph(m, 0), &fo, NULL, &pl) != KF_OK) {
                CHECK_MSG(false, "%s: %s", fb[i].body, a ? pl.err : "no memory");
                free(a);
                continue;
            }
            CHECK_STATUS(kf_cg_kernel_abi(pl.plan, 0, fast, a, err, sizeof err), KF_OK);
            bool want = !fast || fb[i].fast_branchy;
            CHECK_MSG(a->branchy == want, "%s %s, fast_math %d: branchy %d", fb[i].type, fb[i].body, fast,
                      (int)a->branchy);
            if (i == 0) {   /* boxplus: b64 only while branchy; at 2^26 on 132 units b64, else c64 */
                int64_t meta[64], sym[1] = { (int64_t)1 << 26 };
                kf_cg_launches L;
                CHECK(a->has_b64 == want && a->has_h64);
                CHECK_STATUS(kf_cg_fill_meta(a, pl.plan, sym, NULL, meta, err, sizeof err), KF_OK);
                kf_cg_launch_rule(a, meta, NULL, 132, true, 0, 0, &L);
                CHECK(L.n == 1 && L.l[0].variant == (want ? KF_CG_B64 : KF_CG_C64));
                /* the module holds the entry points of the ABI the same flag gives (CUDA and
                 * OpenCL); the CPU target has no fast math, so b64 (an alias there) either way */
                kf_cg_caps caps = { .fp64 = true, .fp16 = true, .gpu = true, .fast_math = fast };
                for (int t = 0; t < 3; t++) {
                    kf_target tg = t == 0 ? KF_TARGET_CUDA : t == 1 ? KF_TARGET_OPENCL : KF_TARGET_LLVM;
#if !KFUSE_WITH_LLVM
                    if (tg == KF_TARGET_LLVM)
                        continue;
#endif
                    kf_strbuf o = KF_STRBUF_INIT;
                    CHECK_STATUS(kf_cg_emit(pl.plan, tg, &caps, &o, err, sizeof err), KF_OK);
                    CHECK(kf_cg_fast_math(tg, &caps) == (fast && tg != KF_TARGET_LLVM));
                    char b64name[KF_CG_NAME_MAX];
                    snprintf(b64name, sizeof b64name, "%s_b64", a->prefix);
                    bool b64 = strstr(kf_sb_str(&o), b64name) != NULL;
                    CHECK_MSG(b64 == (tg == KF_TARGET_LLVM || want) && strstr(kf_sb_str(&o), a->entry[KF_CG_C64]),
                              "target %d, fast_math %d: b64 %d", t, fast, (int)b64);
                    kf_sb_free(&o);
                }
            }
            free(a);
            kf_pipeline_clear(&pl);
        }
        kf_module_free(m);
    }
}

/* -- Main ------------------------------------------------------------------------------------------------- */

static int env_int(const char *name, int dflt)
{
    const char *s = getenv(name);
    return s && *s ? atoi(s) : dflt;
}

static void golden(const char *path, const char *src)
{
    if (!src)
        return;
    if (getenv("KFUSE_GOLDEN_UPDATE")) {
        CHECK_MSG(write_file(path, src), "cannot write %s", path);
        return;
    }
    char *want = read_file(path, NULL);
    CHECK_MSG(want != NULL, "cannot read %s (KFUSE_GOLDEN_UPDATE=1 writes it)", path);
    if (want && strcmp(want, src) != 0) {
        CHECK_MSG(false, "%s differs from the emitted source (KFUSE_GOLDEN_UPDATE=1 rewrites it)", path);
        const char *a = want, *b = src;
        long line = 1;
        while (*a && *a == *b) {
            if (*a == '\n')
                line++;
            a++;
            b++;
        }
        fprintf(stderr, "first difference at line %ld; emitted:\n", line);
        show_lines(src, line, 3);
    }
    free(want);
}

static int ncorpus, nops_cases, nrandom;

static void build_cases(int random_count)
{
    size_t len = 0;
    char *text = read_file("codegen/corpus.kir", &len);
    CHECK_MSG(text != NULL, "cannot read codegen/corpus.kir (run from tests/)");
    kf_module *m = NULL;
    if (text) {
        kf_status s = kf_module_parse(text, len, "codegen/corpus.kir", NULL, &m);
        CHECK_MSG(s == KF_OK, "%s", m ? kf_module_error(m) : "parse failed");
        for (int i = 0; m && s == KF_OK && i < kf_module_num_graphs(m); i++) {
            const kf_graph *g = kf_module_graph(m, i);
            add_case(kf_graph_name(g), kf_graph_clone(g), false, true, false);
        }
    }
    kf_module_free(m);
    free(text);
    ncorpus = ncases;
    for (int t = 0; t < KF_DTYPE_COUNT; t++) {
        /* float graphs hold transcendental functions: compared with a tolerance */
        bool exact = !kf_dt_is_float((kf_dtype)t);
        for (int part = 0;; part++) {
            kf_graph *g = ops_graph((kf_dtype)t, exact, part);
            if (!g)
                break;
            add_case(kf_graph_name(g), g, exact, true, exact);
        }
    }
    nops_cases = ncases - ncorpus;
    for (int i = 0; i < random_count; i++) {
        char nm[32];
        snprintf(nm, sizeof nm, "rg%d", i);
        kf_rg_options o = { 0 };
        o.exact = true;
        add_case(nm, kf_rg_graph(nm, 1000 + (uint64_t)i, &o), true, true, true);
    }
    nrandom = ncases - ncorpus - nops_cases;
    if (nrandom < random_count)
        printf("KF_TEST_CG_RANDOM=%d: %d random cases fit (at most %d cases in all)\n", random_count, nrandom,
               (int)MAX_CASES);
}

#if KFUSE_WITH_OPENCL
/* Run case c on the device at sizes sz with several launch settings and
 * compare with the interpreter; runs must agree bit for bit among
 * themselves (variants, grid sizes, layouts). */
/* Launch settings: every variant, grids of 1 to 7 blocks, padded and
 * reversed layouts, both reduction paths; the corpus's (full and short)
 * also the one-pass build with every EW variant. */
static const runopt runs_full[] = {
    { 0, 0, -1, false },       { 0, 1, -1, false },        { 0, 3, KF_CG_S32, false }, { 0, 2, KF_CG_C64, false },
    { 0, 5, KF_CG_S64, false }, { 1, 0, -1, false },       { 2, 7, -1, false },        { 0, 2, KF_CG_SEQ, false },
    { 0, 0, KF_CG_TILE, false }, { 1, 3, KF_CG_WARP, false }, { 0, 0, KF_CG_B64, false }, { 0, 3, KF_CG_B64, false },
    { 0, 0, KF_CG_C64, true }, { 2, 0, KF_CG_S32, true },  { 0, 0, KF_CG_B64, true },  { 1, 0, -1, true },
    { 1, 2, KF_CG_G64, false }, { 2, 0, KF_CG_G64, true }, { 0, 3, KF_CG_H64, false }, { 0, 0, KF_CG_H64, true },
    { 0, 3, KF_CG_B1, false },  { 0, 0, KF_CG_B1, true },
};
static const runopt runs_random[] = {
    { 0, 0, -1, false },        { 0, 1, -1, false },        { 0, 3, KF_CG_S32, false },
    { 1, 0, -1, false },        { 2, 7, -1, false },        { 0, 2, KF_CG_SEQ, false },
    { 0, 0, KF_CG_TILE, false }, { 0, 2, KF_CG_WARP, false }, { 0, 2, KF_CG_B64, false },
    { 0, 3, KF_CG_G64, false }, { 0, 2, KF_CG_H64, false }, { 0, 2, KF_CG_B1, false },
};
static const runopt runs_short[] = {
    { 0, 0, -1, false },        { 1, 3, KF_CG_S32, false }, { 2, 2, KF_CG_SEQ, false }, { 0, 1, KF_CG_TILE, false },
    { 1, 0, KF_CG_WARP, false }, { 0, 2, KF_CG_B64, false }, { 0, 0, KF_CG_C64, true },  { 0, 0, KF_CG_B64, true },
    { 0, 0, KF_CG_G64, true }, { 0, 0, KF_CG_H64, true }, { 0, 0, KF_CG_WARP, true }, { 0, 2, KF_CG_B1, false },
    { 0, 0, KF_CG_B1, true },
};
/* b64 and b1 at a size with more than one chunk: one pass, grid-stride, and
 * the launch rule's pick to compare with */
static const runopt runs_b64[] = { { 0, 0, -1, false }, { 0, 0, KF_CG_B64, true }, { 0, 3, KF_CG_B64, false },
                                   { 0, 0, KF_CG_B1, true }, { 0, 3, KF_CG_B1, false } };
/* the per-dtype graphs: the picked variant only (sizes small and mid reach
 * both reduction paths); every distinct entry launched costs a JIT on PoCL */
static const runopt runs_one[] = { { 0, 0, -1, false } };

/* Whether the OpenCL device builds case c, and runs it. */
static bool builds_here(const tcase *c)
{
    return c->ocl && (!c->uses_f64 || D.caps.fp64);
}

static bool runs_here(const tcase *c)
{
    return builds_here(c) && c->run;
}

/* Cases [k * group, (k + 1) * group) that the device builds, in one
 * program: the same program whichever of them a run launches, so that the
 * sanitizer build's runs (fewer cases) find PoCL's kernels in the cache. */
static cl_program cl_build_group(int k, int group, const char *what)
{
    kf_strbuf gs = KF_STRBUF_INIT;
    for (int j = k * group; j < ncases && j < (k + 1) * group; j++)
        if (builds_here(&cases[j]))
            kf_sb_puts(&gs, cases[j].ocl);
    cl_program p = gs.len ? cl_build(kf_sb_str(&gs), what, false) : NULL;
    kf_sb_free(&gs);
    return p;
}

/* Groups [*built, to) built (compiled) and never launched: no case of
 * theirs runs. */
static void cl_build_unrun(int *built, int to, int group)
{
    for (; *built < to; ++*built) {
        cl_program p = cl_build_group(*built, group, "a group of cases not run");
        if (p)
            clReleaseProgram(p);
    }
}

/* progs: the build without and with KF_ONE_PASS (runopt.one_pass picks;
 * NULL where not built). */
static void run_case(tcase *c, cl_program *progs, const kf_rg_sizes *sz, uint64_t seed, const runopt *runs, int nruns)
{
    int ni = kf_graph_num_inputs(c->g), no = kf_graph_num_outputs(c->g);
    kf_host_array *in = calloc((size_t)ni + 1, sizeof *in), *ref = calloc((size_t)no + 1, sizeof *ref);
    void **got = calloc((size_t)no + 1, sizeof *got), **first = calloc((size_t)no + 1, sizeof *first);
    if (!in || !ref || !got || !first || kf_rg_inputs(c->g, seed, sz, 0.02, c->specials, in) != KF_OK) {
        CHECK_MSG(false, "%s: out of memory", c->name);
        goto done;
    }
    char err[512];
    kf_status s = kf_interpret(c->g, in, ni, ref, no, err, sizeof err);
    CHECK_MSG(s == KF_OK || s == KF_ERR_INDEX, "%s: interpreter: %s: %s", c->name, kf_status_string(s), err);
    if (s != KF_OK && s != KF_ERR_INDEX)
        goto done;
    bool have_first = false;
    uint64_t first_seq = 0;
    for (int r = 0; r < nruns; r++) {
        bool ierr = false;
        uint64_t seq = 0;
        double t0 = now();
        cl_program prog = progs[runs[r].one_pass];
        bool ok = prog && cl_run(c, prog, in, sz, &runs[r], got, &ierr, &seq);
        ocl_run_seconds += now() - t0;
        CHECK_MSG(ok, "%s: run %d failed", c->name, r);
        if (!ok)
            break;
        CHECK_MSG(ierr == (s == KF_ERR_INDEX), "%s (run %d): device index flag %d, interpreter %s", c->name, r, ierr,
                  kf_status_string(s));
        /* seq folds float sums in another order than tile and warp (forced,
         * or picked for a layout whose reduced dim is not contiguous): such
         * runs are compared with the interpreter only */
        if (!have_first)
            first_seq = seq;
        bool reorders = seq != first_seq;
        for (int o = 0; o < no; o++) {
            int64_t n = numel_of(ref[o].rank, ref[o].shape);
            kf_dtype t = ref[o].dtype;
            int bad = 0;
            for (int64_t e = 0; e < n && bad < 3; e++) {
                if (agree(t, got[o], ref[o].data, e, c->exact))
                    continue;
                char a[64], b[64];
                show_value(t, got[o], e, a, sizeof a);
                show_value(t, ref[o].data, e, b, sizeof b);
                CHECK_MSG(false, "%s (run %d, n=%lld m=%lld k=%lld): output %d (%s) element %lld: device %s, interpreter %s",
                          c->name, r, (long long)sz->n, (long long)sz->m, (long long)sz->k, o,
                          kf_graph_output_name(c->g, o), (long long)e, a, b);
                bad++;
            }
            if (have_first && !reorders && n > 0)
                CHECK_MSG(memcmp(first[o], got[o], (size_t)n * kf_dtype_size(t)) == 0,
                          "%s (run %d): output %d differs from run 0 (determinism)", c->name, r, o);
        }
        for (int o = 0; o < no; o++) {
            if (!have_first) {
                first[o] = got[o];
            } else {
                free(got[o]);
            }
            got[o] = NULL;
        }
        have_first = true;
    }
done:
    if (in)
        kf_rg_free_inputs(in, ni);
    for (int o = 0; ref && o < no; o++)
        kf_free(ref[o].data);
    for (int o = 0; first && o < no; o++)
        free(first[o]);
    free(in);
    free(ref);
    free(got);
    free(first);
}
#endif

int main(void)
{
    double t0 = now();
    int random_count = env_int("KF_TEST_CG_RANDOM", 300);
    /* KF_TEST_CG_LIGHT (the sanitizer build): the per-dtype graphs compiled
     * for sm_80 only and not run, the corpus run with fewer settings, the
     * random graphs for sm_80 only */
    int light = env_int("KF_TEST_CG_LIGHT", 0);
    int run_random = env_int("KF_TEST_CG_RUN", 50);
#if KFUSE_WITH_OPENCL
    cl_open();
#endif
    build_cases(random_count);
    double t_fuse = now();
    kf_cg_caps *devcaps = NULL;
#if KFUSE_WITH_OPENCL
    if (D.ok)
        devcaps = &D.caps;
#endif
    for (int i = 0; i < ncases; i++)
        emit_case(&cases[i], devcaps);
    test_strbuf();
    test_format();
    test_abi();
    test_errors();
    test_fast_math(env_int("KF_TEST_CG_NVRTC", 1));
    test_fast_branchy();
    const char *dump = getenv("KF_TEST_CG_DUMP");   /* a case name: print graph, plan and sources */
    for (int i = 0; dump && i < ncases; i++)
        if (strcmp(cases[i].name, dump) == 0) {
            kf_graph_print(cases[i].g, stdout);
            if (cases[i].fused)
                kf_plan_print(cases[i].pl.plan, stdout);
            printf("%s\n%s\n", cases[i].cuda ? cases[i].cuda : "", cases[i].ocl ? cases[i].ocl : "");
        }
    const char *dumpdir = getenv("KF_TEST_CG_DUMPDIR");   /* write every case's sources there */
    for (int i = 0; dumpdir && i < ncases; i++)
        if (cases[i].cuda && cases[i].ocl) {
            char path[1024];
            snprintf(path, sizeof path, "%.900s/%.60s.cu", dumpdir, cases[i].name);
            write_file(path, cases[i].cuda);
            snprintf(path, sizeof path, "%.900s/%.60s.cl", dumpdir, cases[i].name);
            write_file(path, cases[i].ocl);
        }
    double t_emit = now();
    printf("%d cases (%d corpus, %d per-dtype, %d random): fuse %.2fs, emit %.2fs\n", ncases, ncorpus, nops_cases,
           nrandom, t_fuse - t0, t_emit - t_fuse);
    if (ncases > 0) {
        golden("codegen/x5.cu", cases[0].cuda);
        golden("codegen/x5.cl", cases[0].ocl);
    }

#if KFUSE_WITH_CUDA
    /* the corpus and the per-dtype graphs for every target, the random
     * graphs for sm_80 (the first ones for every target) */
    double t_nv = now();
    if (env_int("KF_TEST_CG_NVRTC", 1)) {
        static const char *const all3[] = { "--gpu-architecture=sm_80", "--gpu-architecture=sm_90",
                                            "--gpu-architecture=compute_90" };
        static const char *const two[] = { "--gpu-architecture=sm_80", "--gpu-architecture=compute_90" };
        int r0 = ncorpus + nops_cases, rall = r0 + (light ? 0 : nrandom < 20 ? nrandom : 20);
        nv_batches(0, ncorpus, 400000, all3, 3);
        nv_batches(ncorpus, r0, 400000, two, light ? 1 : 2);
        nv_batches(r0, rall, 400000, all3, 3);
        nv_batches(rall, ncases, 400000, all3, 1);
        NV_WORKERS = env_int("KF_TEST_CG_NVPROCS", 1);
        if (NV_WORKERS < 1 || NV_WORKERS > NV_WORKERS_MAX)
            NV_WORKERS = 1;
        nv_start();
    }
#else
    printf("NVRTC: skipped (built without KFUSE_WITH_CUDA)\n");
#endif

#if KFUSE_WITH_OPENCL
    if (D.ok && env_int("KF_TEST_CG_OPENCL", 1)) {
        /* the cases are built 16 to a program (KF_TEST_CG_GROUP; modules
         * share one unit).  PoCL generates a kernel's code at its first
         * launch from a copy of the whole program's module: alone on this
         * 2-core machine's pthread device, PoCL's cache empty, the OpenCL
         * part took 597 s 16 to a program and 654 s in one (11 MB of
         * bitcode; bench/diag/s39/README.md).  The sources are the ones emitted
         * with every capability: vload_half and vstore_half are core OpenCL,
         * so f16 code runs on a device without cl_khr_fp16 here, though
         * kf_cg_emit refuses it there (checked in emit_case). */
        static const kf_rg_sizes small = { 7, 3, 5 }, big = { 5000, 3, 70 }, mid = { 300, 2, 9 };
        /* discount: 3 steps of 134095 f64 vectors (6 MB a step: one chunk
         * of B > CB blocks, KF_CG_B_FLAT_BYTES) and of 268190 (12.3 MB: b64
         * chunks of 256, 256 and 12 blocks a step, b1's of 512, 512, 24) */
        static const kf_rg_sizes wide = { 1, 2063, 130 }, wider = { 1, 2063, 260 };
        int first_built = ncorpus + nops_cases + run_random;
        if (first_built > ncases)
            first_built = ncases;
        int group = env_int("KF_TEST_CG_GROUP", 16);
        if (group < 1)
            group = 1;
        cl_program prog = NULL, one_pass = NULL;   /* the corpus with -DKF_ONE_PASS */
        kf_strbuf cs = KF_STRBUF_INIT;
        for (int i = 0; i < ncorpus; i++)
            if (runs_here(&cases[i]))
                kf_sb_puts(&cs, cases[i].ocl);
        if (cs.len)
            one_pass = cl_build(kf_sb_str(&cs), "the corpus, one pass", true);
        kf_sb_free(&cs);
        int built = 0;   /* groups [0, built) are built */
        for (int i = 0; i < first_built; i++) {
            tcase *c = &cases[i];
            if (!runs_here(c))
                continue;
            double tc = now();
            if (i / group >= built) {
                cl_build_unrun(&built, i / group, group);
                if (prog)
                    clReleaseProgram(prog);
                prog = cl_build_group(built++, group, c->name);
            }
            if (!prog)
                continue;
            cl_program progs[2] = { prog, one_pass };
            int nfull = (int)(sizeof runs_full / sizeof runs_full[0]), nshort = (int)(sizeof runs_short / sizeof runs_short[0]);
            if (i < ncorpus) {
                if (strcmp(c->name, "discount") == 0) {   /* one chunk of a step's 524 b1 blocks; 3 chunks */
                    run_case(c, progs, &wide, 4 + (uint64_t)i, runs_b64, (int)(sizeof runs_b64 / sizeof runs_b64[0]));
                    run_case(c, progs, &wider, 5 + (uint64_t)i, runs_b64, (int)(sizeof runs_b64 / sizeof runs_b64[0]));
                }
                run_case(c, progs, &small, 1 + (uint64_t)i, light ? runs_short : runs_full, light ? nshort : nfull);
                if (!light)
                    run_case(c, progs, &mid, 2 + (uint64_t)i, runs_full, nfull);
                run_case(c, progs, &big, 3 + (uint64_t)i, runs_short, nshort);
            } else if (i < ncorpus + nops_cases) {
                if (!light) {
                    run_case(c, progs, &small, 1 + (uint64_t)i, runs_one, 1);
                    run_case(c, progs, &mid, 2 + (uint64_t)i, runs_one, 1);
                }
            } else {
                uint64_t h = (uint64_t)i * 2654435761u;
                kf_rg_sizes sz = { (int64_t)(h % 13), (int64_t)(1 + (h >> 8) % 9), (int64_t)(1 + (h >> 16) % 6) };
                run_case(c, progs, &sz, 4 + (uint64_t)i, runs_random, (int)(sizeof runs_random / sizeof runs_random[0]));
            }
            if (getenv("KF_TEST_CG_TIMES"))
                printf("  %-16s %.2fs\n", c->name, now() - tc);
        }
        if (prog)
            clReleaseProgram(prog);
        cl_build_unrun(&built, (ncases + group - 1) / group, group);
        if (one_pass)
            clReleaseProgram(one_pass);
        printf("OpenCL build: %.2fs\n", ocl_build_seconds);
        printf("OpenCL runs: %.2fs (%d b64 launches, %d of them with no outer dims, %d b1, %d g64, %d h64)\n",
               ocl_run_seconds, b64_launches, pair_launches, b1_launches, g64_launches, h64_launches);
        CHECK_MSG(b64_launches > 0, "no case ran the b64 variant");
        CHECK_MSG(b1_launches > 0, "no case ran the b1 variant");
        CHECK_MSG(pair_launches > 0, "no case ran b64 with no outer dims");
        CHECK_MSG(g64_launches > 0, "no case ran the g64 variant");
        CHECK_MSG(h64_launches > 0, "no case ran the h64 variant");
    } else {
        printf("OpenCL: no device, build and runs skipped\n");
    }
    cl_close();
#else
    printf("OpenCL: skipped (built without KFUSE_WITH_OPENCL)\n");
#endif
#if KFUSE_WITH_CUDA
    nv_wait();
    printf("NVRTC: %d compilations in %.2fs\n", nnvjobs, now() - t_nv);
    nv_report();
#endif
    free_cases();
    printf("total %.2fs\n", now() - t0);
    return kf_test_done();
}
