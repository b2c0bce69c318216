/* fusec: the kfuse command line.  One table of subcommands; each takes its
 * own arguments and returns the exit status: 0 success, 1 user error (a bad
 * file, a parse error; message on stderr), 2 usage error. */
#include "codegen.h"
#include "kfsample.h"
#include "kfuse.h"
#include "plan.h"
#ifdef KFUSE_WITH_LLVM
#include "cpu.h"
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { EXIT_USER = 1, EXIT_USAGE = 2 };

typedef struct fusec_cmd {
    const char *name;
    int (*run)(int argc, char **argv);   /* argv[0] is the command name */
    const char *usage;                   /* arguments, after "fusec NAME" */
    const char *help;                    /* one line */
} fusec_cmd;

static int cmd_check(int argc, char **argv);
static int cmd_dump(int argc, char **argv);
static int cmd_emit(int argc, char **argv);
static int cmd_run(int argc, char **argv);
static int cmd_help(int argc, char **argv);
int fusec_build(int argc, char **argv); /* cache_cmds.c */
int fusec_cache(int argc, char **argv);

static const fusec_cmd commands[] = {
    { "check", cmd_check, "FILE...", "parse and verify each file" },
    { "dump", cmd_dump, "[--after PASS] FILE [--graph NAME]",
      "print the IR as parsed, or after PASS (verify fold cse dce: IR; partition schedule: the plan)" },
    { "emit", cmd_emit,
      "--target cuda|opencl|llvm [--optimized] [--cpu-device] [--fast-math] FILE [--graph NAME]",
      "print the generated kernel source (llvm --optimized: the IR after LLVM's O3 for this host; "
      "opencl --cpu-device: the code for a CPU device such as PoCL's, else a GPU's; --fast-math: "
      "approximate f32 functions, docs/codegen.md)" },
    { "run", cmd_run,
      "FILE [--graph NAME] [--backend B] [--dim n=N]... [--check] [--repeat R] [--seed S] [--fast-math]",
      "run a graph on random inputs, print device time per run; --check compares with the interpreter" },
    { "build", fusec_build, "--target T [--target T]... [--cache DIR] [--fast-math] FILE...",
      "precompile every graph into the kernel cache (T: cuda:sm_XX, opencl, cpu), for contexts made "
      "with fast_math when --fast-math is given" },
    { "cache", fusec_cache, "stats|list|verify|prune --max-size S|clear [--cache DIR]",
      "show, check or trim the kernel cache" },
    { "help", cmd_help, "[COMMAND]", "show this help, or one command's" },
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static const fusec_cmd *find_cmd(const char *name)
{
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: fusec COMMAND [ARGS]\n\ncommands:\n");
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(f, "  fusec %s %-28s %s\n", commands[i].name, commands[i].usage, commands[i].help);
    fprintf(f, "\n'fusec COMMAND --help' shows one command.  Exit status: 0 success, 1 error, 2 usage.\n");
}

static void cmd_usage(FILE *f, const fusec_cmd *c)
{
    fprintf(f, "usage: fusec %s %s\n  %s\n", c->name, c->usage, c->help);
}

/* A usage error for command c: message, the command's usage, status 2. */
static int usage_error(const fusec_cmd *c, const char *fmt, const char *arg)
{
    fputs("fusec: ", stderr);
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    if (c)
        cmd_usage(stderr, c);
    else
        usage(stderr);
    return EXIT_USAGE;
}

/* Parse one file; on error print the module's message and return NULL. */
static kf_module *load(const char *path)
{
    kf_module *m = NULL;
    kf_status s = kf_module_parse_file(path, NULL, &m);
    if (s != KF_OK) {
        fprintf(stderr, "%s\n", m ? kf_module_error(m) : "fusec: out of memory");
        kf_module_free(m);
        return NULL;
    }
    return m;
}

static int cmd_check(int argc, char **argv)
{
    const fusec_cmd *c = find_cmd("check");
    int nfiles = 0, rc = 0;
    for (int i = 1; i < argc; i++)
        if (argv[i][0] == '-' && argv[i][1] != 0)
            return usage_error(c, "unknown option '%s'", argv[i]);
    for (int i = 1; i < argc; i++) {
        nfiles++;
        kf_module *m = load(argv[i]);
        if (!m) {
            rc = EXIT_USER;
            continue;
        }
        int n = kf_module_num_graphs(m);
        printf("%s: ok (%d graph%s)\n", argv[i], n, n == 1 ? "" : "s");
        kf_module_free(m);
    }
    if (nfiles == 0)
        return usage_error(c, "%s", "missing FILE");
    return rc;
}

static bool known_pass(const char *name)
{
    for (int i = 0; kf_fuse_pass_names[i]; i++)
        if (strcmp(kf_fuse_pass_names[i], name) == 0)
            return true;
    return false;
}

/* Print g after the pipeline ran up to pass 'after'. */
static int dump_after(const kf_graph *g, const char *after)
{
    kf_pipeline p;
    kf_status s = kf_fuse(g, NULL, after, &p);
    if (s != KF_OK) {
        fprintf(stderr, "fusec: %s: %s\n", kf_graph_name(g), p.err);
        return EXIT_USER;
    }
    if (p.plan)
        kf_plan_print(p.plan, stdout);
    else
        kf_graph_print(p.g, stdout);
    kf_pipeline_clear(&p);
    return 0;
}

static int cmd_dump(int argc, char **argv)
{
    const fusec_cmd *c = find_cmd("dump");
    const char *file = NULL, *graph = NULL, *after = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--graph") == 0) {
            if (i + 1 >= argc)
                return usage_error(c, "%s", "--graph needs a NAME");
            graph = argv[++i];
        } else if (strcmp(argv[i], "--after") == 0) {
            if (i + 1 >= argc)
                return usage_error(c, "%s", "--after needs a PASS");
            after = argv[++i];
        } else if (argv[i][0] == '-' && argv[i][1] != 0) {
            return usage_error(c, "unknown option '%s'", argv[i]);
        } else if (file) {
            return usage_error(c, "unexpected argument '%s' (one FILE)", argv[i]);
        } else {
            file = argv[i];
        }
    }
    if (!file)
        return usage_error(c, "%s", "missing FILE");
    if (after && !known_pass(after))
        return usage_error(c, "unknown pass '%s' (verify fold cse dce partition schedule)", after);
    kf_module *m = load(file);
    if (!m)
        return EXIT_USER;
    if (after) {
        int rc = 0;
        for (int i = 0; i < kf_module_num_graphs(m) && rc == 0; i++) {
            kf_graph *g = kf_module_graph(m, i);
            if (graph && strcmp(kf_graph_name(g), graph) != 0)
                continue;
            rc = dump_after(g, after);
        }
        kf_module_free(m);
        return rc;
    }
    kf_status s;
    if (graph) {
        kf_graph *g = kf_module_find(m, graph);
        if (!g) {
            fprintf(stderr, "fusec: %s: no graph '%s'\n", file, graph);
            kf_module_free(m);
            return EXIT_USER;
        }
        s = kf_graph_print(g, stdout);
    } else {
        s = kf_module_print(m, stdout);
    }
    kf_module_free(m);
    if (s != KF_OK || fflush(stdout) != 0) {
        fprintf(stderr, "fusec: cannot print: %s\n", kf_status_string(s != KF_OK ? s : KF_ERR_IO));
        return EXIT_USER;
    }
    return 0;
}

/* The graphs a command works on: --graph NAME, or every graph. */
static kf_graph *pick_graph(kf_module *m, const char *file, const char *name)
{
    kf_graph *g = name ? kf_module_find(m, name) : kf_module_graph(m, 0);
    if (!g)
        fprintf(stderr, "fusec: %s: %s\n", file, name ? "no graph of that name" : "no graphs");
    return g;
}

static int cmd_emit(int argc, char **argv)
{
    const fusec_cmd *c = find_cmd("emit");
    const char *file = NULL, *graph = NULL, *target = NULL;
    bool optimized = false;
    kf_cg_caps caps = { .fp64 = true, .fp16 = true, .gpu = true };   /* every capability, no inline PTX */
    for (int i = 1; i < argc; i++) {
        if ((strcmp(argv[i], "--graph") == 0 || strcmp(argv[i], "--target") == 0) && i + 1 < argc) {
            *(argv[i][2] == 'g' ? &graph : &target) = argv[i + 1];
            i++;
        } else if (strcmp(argv[i], "--optimized") == 0) {
            optimized = true;
        } else if (strcmp(argv[i], "--cpu-device") == 0) {
            caps.gpu = false;
        } else if (strcmp(argv[i], "--fast-math") == 0) {
            caps.fast_math = true;
        } else if (argv[i][0] == '-' && argv[i][1] != 0) {
            return usage_error(c, "unknown option or missing value '%s'", argv[i]);
        } else if (file) {
            return usage_error(c, "unexpected argument '%s' (one FILE)", argv[i]);
        } else {
            file = argv[i];
        }
    }
    if (!file || !target)
        return usage_error(c, "%s", file ? "missing --target" : "missing FILE");
    kf_target t;
    if (strcmp(target, "cuda") == 0)
        t = KF_TARGET_CUDA;
    else if (strcmp(target, "opencl") == 0)
        t = KF_TARGET_OPENCL;
    else if (strcmp(target, "llvm") == 0)
        t = KF_TARGET_LLVM;
    else
        return usage_error(c, "unknown target '%s' (cuda, opencl, llvm)", target);
    if (optimized && t != KF_TARGET_LLVM)
        return usage_error(c, "%s", "--optimized is for --target llvm");
    if (!caps.gpu && t != KF_TARGET_OPENCL)
        return usage_error(c, "%s", "--cpu-device is for --target opencl");
    kf_module *m = load(file);
    if (!m)
        return EXIT_USER;
    int rc = 0;
    for (int i = 0; i < kf_module_num_graphs(m) && rc == 0; i++) {
        kf_graph *g = kf_module_graph(m, i);
        if (graph && strcmp(kf_graph_name(g), graph) != 0)
            continue;
        kf_pipeline p;
        kf_strbuf sb = KF_STRBUF_INIT;
        char err[512] = "";
        kf_fuse_options fo = { .fast_math = caps.fast_math };
        kf_status s = kf_fuse(g, &fo, NULL, &p);
        if (s == KF_OK)
            s = kf_cg_emit(p.plan, t, &caps, &sb, err, sizeof err);
        else
            snprintf(err, sizeof err, "%s", p.err);
        if (s == KF_OK && optimized && !kf_sb_failed(&sb)) {
#ifdef KFUSE_WITH_LLVM
            kf_cpu_host host;
            kf_rt_err e = { { 0 } };
            char *text = NULL;
            s = kf_cpu_llvm_host(&host, &e);
            if (s == KF_OK)
                s = kf_cpu_llvm_compile(&host, kf_sb_str(&sb), sb.len, NULL, NULL, &text, &e);
            kf_cpu_llvm_host_free(&host);
            kf_sb_reset(&sb);
            if (text)
                kf_sb_puts(&sb, text);
            free(text);
            snprintf(err, sizeof err, "%.500s", e.msg);
#else
            s = KF_ERR_UNSUPPORTED;
            snprintf(err, sizeof err, "this fusec was built without LLVM");
#endif
        }
        if (s == KF_OK && !kf_sb_failed(&sb))
            fputs(kf_sb_str(&sb), stdout);
        else {
            fprintf(stderr, "fusec: %s: %s\n", kf_graph_name(g), err[0] ? err : "out of memory");
            rc = EXIT_USER;
        }
        kf_sb_free(&sb);
        kf_pipeline_clear(&p);
    }
    kf_module_free(m);
    return rc;
}

/* -- fusec run ------------------------------------------------------------------- */

typedef struct run_opts {
    const char *file, *graph;
    kf_backend backend;
    int repeat;
    uint64_t seed;
    bool check, fast_math;
    int ndims;
    const char *dimname[32];
    int64_t dimval[32];
} run_opts;

static int compare_median(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static int run_graph(kf_context *ctx, const kf_graph *g, const run_opts *o)
{
    int64_t symval[64];
    int nin = kf_graph_num_inputs(g), nout = kf_graph_num_outputs(g), rc = EXIT_USER;
    if (g->nsyms > 64) {
        fprintf(stderr, "fusec: more than 64 symbols\n");
        return EXIT_USER;
    }
    for (int32_t s = 0; s < g->nsyms; s++) {
        symval[s] = 1 << 20;
        for (int d = 0; d < o->ndims; d++)
            if (strcmp(o->dimname[d], g->syms[s]) == 0)
                symval[s] = o->dimval[d];
    }
    kf_host_array *in = calloc((size_t)nin + 1, sizeof *in), *ref = calloc((size_t)nout + 1, sizeof *ref);
    kf_view *views = calloc((size_t)nin + 1, sizeof *views), *outs = calloc((size_t)nout + 1, sizeof *outs);
    const void **scalars = calloc((size_t)nin + 1, sizeof *scalars);
    float *ms = calloc((size_t)o->repeat + 1, sizeof *ms);
    kf_program *prog = NULL;
    kf_event *e0 = NULL, *e1 = NULL;
    int narr = 0, nsc = 0;
    bool have_ref = false;
    rt_rng rng = { o->seed };
    if (!in || !ref || !views || !outs || !scalars || !ms)
        goto done;
    printf("%s:", kf_graph_name(g));
    for (int32_t s = 0; s < g->nsyms; s++)
        printf(" %s=%lld", g->syms[s], (long long)symval[s]);
    printf("\n");
    for (int i = 0; i < nin; i++) {
        const kf_irnode *x = &g->nodes[g->inputs[i]];
        int64_t n = rt_fill_input(g, i, symval, &rng, &in[i]);
        if (n < 0)
            goto oom;
        size_t bytes = (size_t)n * kf_dtype_size(in[i].dtype);
        if (x->scalar) {
            scalars[nsc++] = in[i].data;
            continue;
        }
        kf_buffer *b;
        if (kf_buffer_alloc(ctx, bytes, &b) != KF_OK || kf_upload(b, 0, in[i].data, bytes, NULL) != KF_OK)
            goto device;
        views[narr++] = kf_view_dense(b, 0, in[i].dtype, in[i].rank, in[i].shape);
    }
    if (kf_compile(ctx, g, &prog) != KF_OK || kf_event_create(ctx, &e0) != KF_OK ||
        kf_event_create(ctx, &e1) != KF_OK)
        goto device;
    for (int r = 0; r <= o->repeat; r++) { /* run 0 is the warm-up */
        if (kf_event_record(e0, NULL) != KF_OK || kf_run(prog, NULL, views, narr, scalars, nsc, outs, nout) != KF_OK ||
            kf_event_record(e1, NULL) != KF_OK || kf_event_sync(e1) != KF_OK ||
            (r > 0 && kf_event_elapsed(e0, e1, &ms[r - 1]) != KF_OK))
            goto device;
    }
    kf_status ss = kf_stream_sync(ctx, NULL);
    if (ss != KF_OK && ss != KF_ERR_INDEX)
        goto device;
    qsort(ms, (size_t)o->repeat, sizeof *ms, compare_median);
    printf("  %d kernel%s, %d runs: median %.4f ms, min %.4f ms, max %.4f ms (device time from events)\n",
           kf_program_num_kernels(prog), kf_program_num_kernels(prog) == 1 ? "" : "s", o->repeat,
           ms[o->repeat / 2], ms[0], ms[o->repeat - 1]);
    if (ss == KF_ERR_INDEX)
        printf("  note: %s\n", kf_context_error(ctx));
    kf_stats st;
    kf_context_stats(ctx, &st);
    if (st.trace_path[0]) /* KFUSE_TRACE */
        printf("  trace: %s (%llu launches, %.4f ms of kernel time so far)\n", st.trace_path,
               (unsigned long long)st.launches, st.device_busy_ms);
    rc = 0;
    if (o->check) {
        char err[512];
        kf_status is = kf_interpret(g, in, nin, ref, nout, err, sizeof err);
        if (is != KF_OK && is != KF_ERR_INDEX) {
            fprintf(stderr, "fusec: interpreter: %s\n", err);
            rc = EXIT_USER;
            goto done;
        }
        have_ref = true;
        for (int j = 0; j < nout; j++) {
            int64_t n = 1;
            for (int d = 0; d < ref[j].rank; d++)
                n *= ref[j].shape[d];
            size_t bytes = (size_t)n * kf_dtype_size(ref[j].dtype);
            void *got = malloc(bytes + 1);
            if (!got || kf_download(got, outs[j].buf, 0, bytes, NULL) != KF_OK) {
                free(got);
                goto device;
            }
            double maxerr;
            int64_t first;
            int64_t bad = rt_compare(got, ref[j].data, ref[j].dtype, n, &maxerr, &first);
            printf("  check %s: largest error %.3g, %lld of %lld elements beyond tolerance%s\n",
                   kf_graph_output_name(g, j), maxerr, (long long)bad, (long long)n, bad ? "  FAILED" : "");
            if (bad)
                rc = EXIT_USER;
            free(got);
        }
    }
    goto done;
oom:
    fprintf(stderr, "fusec: out of host memory\n");
    goto done;
device:
    fprintf(stderr, "fusec: %s: %s\n", kf_graph_name(g), kf_context_error(ctx));
done:
    for (int i = 0; views && i < narr; i++)
        kf_buffer_free(views[i].buf);
    for (int j = 0; outs && j < nout; j++) {
        kf_buffer_free(outs[j].buf);
        if (have_ref)
            kf_free(ref[j].data);
    }
    for (int i = 0; in && i < nin; i++)
        free(in[i].data);
    kf_event_destroy(e0);
    kf_event_destroy(e1);
    kf_program_free(prog);
    free(in);
    free(ref);
    free(views);
    free(outs);
    free(scalars);
    free(ms);
    return rc;
}

static int cmd_run(int argc, char **argv)
{
    const fusec_cmd *c = find_cmd("run");
    run_opts o = { .backend = KF_BACKEND_AUTO, .repeat = 10, .seed = 1 };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--check") == 0) {
            o.check = true;
        } else if (strcmp(a, "--fast-math") == 0) {
            o.fast_math = true;
        } else if (a[0] == '-' && a[1] != 0 && !v) {
            return usage_error(c, "option '%s' needs a value (or is unknown)", a);
        } else if (strcmp(a, "--graph") == 0) {
            o.graph = argv[++i];
        } else if (strcmp(a, "--backend") == 0) {
            i++;
            if (strcmp(v, "cuda") == 0)
                o.backend = KF_BACKEND_CUDA;
            else if (strcmp(v, "opencl") == 0)
                o.backend = KF_BACKEND_OPENCL;
            else if (strcmp(v, "cpu") == 0)
                o.backend = KF_BACKEND_CPU;
            else if (strcmp(v, "auto") != 0)
                return usage_error(c, "unknown backend '%s' (auto, cuda, opencl, cpu)", v);
        } else if (strcmp(a, "--dim") == 0) {
            i++;
            const char *eq = strchr(v, '=');
            char *end = NULL;
            long long n = eq ? strtoll(eq + 1, &end, 10) : -1;
            if (!eq || eq == v || !end || *end || n < 0 || o.ndims == 32)
                return usage_error(c, "bad --dim '%s' (want NAME=SIZE)", v);
            o.dimname[o.ndims] = strndup(v, (size_t)(eq - v));
            o.dimval[o.ndims++] = n;
        } else if (strcmp(a, "--repeat") == 0 || strcmp(a, "--seed") == 0) {
            i++;
            char *end = NULL;
            long long n = strtoll(v, &end, 10);
            if (*end || n < (a[2] == 'r' ? 1 : 0) || n > 1000000)
                return usage_error(c, "bad value '%s'", v);
            if (a[2] == 'r')
                o.repeat = (int)n;
            else
                o.seed = (uint64_t)n;
        } else if (a[0] == '-' && a[1] != 0) {
            return usage_error(c, "unknown option '%s'", a);
        } else if (o.file) {
            return usage_error(c, "unexpected argument '%s' (one FILE)", a);
        } else {
            o.file = a;
        }
    }
    if (!o.file)
        return usage_error(c, "%s", "missing FILE");
    kf_module *m = load(o.file);
    if (!m)
        return EXIT_USER;
    kf_graph *g = pick_graph(m, o.file, o.graph);
    kf_context *ctx = NULL;
    char why[1024];
    int rc = EXIT_USER;
    kf_context_options co = { .backend = o.backend, .device = -1, .fast_math = o.fast_math };
    if (g && kf_context_create(&co, &ctx, why, sizeof why) != KF_OK)
        fprintf(stderr, "fusec: %s\n", why);
    else if (g) {
        kf_device_info info;
        kf_context_info(ctx, &info);
        printf("backend %s: %s\n", kf_backend_name(info.backend), info.name);
        rc = run_graph(ctx, g, &o);
    }
    kf_context_destroy(ctx);
    kf_module_free(m);
    for (int d = 0; d < o.ndims; d++)
        free((char *)o.dimname[d]);
    return rc;
}

static int cmd_help(int argc, char **argv)
{
    if (argc < 2) {
        usage(stdout);
        return 0;
    }
    const fusec_cmd *c = find_cmd(argv[1]);
    if (!c)
        return usage_error(NULL, "unknown command '%s'", argv[1]);
    cmd_usage(stdout, c);
    return 0;
}

static bool wants_help(const char *a) { return strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0; }

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    if (wants_help(argv[1])) {
        usage(stdout);
        return 0;
    }
    const fusec_cmd *c = find_cmd(argv[1]);
    if (!c)
        return usage_error(NULL, "unknown command '%s'", argv[1]);
    for (int i = 2; i < argc; i++)
        if (wants_help(argv[i])) {
            cmd_usage(stdout, c);
            return 0;
        }
    return c->run(argc - 1, argv + 1);
}
