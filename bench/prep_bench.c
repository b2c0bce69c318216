/* Host cost of preparing a graph for the kernel cache, in microseconds:
 * kf_cache_fuse (canonical form and the fusion passes), kf_cache_emit
 * (generated source), kf_cache_prep_key (key hash) and the kernel ABIs
 * (kf_cg_kernel_abi of every kernel, as kf_compile binds a program), for
 * the CUDA and the OpenCL target.  Each (graph, target) row runs in forked
 * children of a process that has only parsed, so "first" is a first call
 * as a fresh process makes it (code and data not yet touched); "hot" is
 * the median of the repetitions after it; each column is the median over
 * the children.  bench/README.md says more.
 * Usage: prep_bench [--reps N] [--forks F] FILE.kir[:GRAPH]...   (defaults 300, 5) */
#include "cache.h"
#include "median.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { PHASES = 5 }; /* fuse, emit, key, abi, total */
static const char *const phase_names[PHASES] = { "fuse", "emit", "key", "abi", "total" };

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

typedef struct kf_target_desc {
    const char *name;
    kf_cache_target t;
} kf_target_desc;

/* The targets devices describe: CUDA as `fusec build --target cuda:sm_90`
 * does, OpenCL as a PoCL CPU device does (fp64 and fp16, its compiler
 * identity as long as PoCL's). */
static bool make_targets(kf_target_desc td[2])
{
    td[0].name = "cuda";
    td[1].name = "opencl";
    kf_device_info info;
    memset(&info, 0, sizeof info);
    info.backend = KF_BACKEND_OPENCL;
    info.fp64 = info.fp16 = true;
    snprintf(info.name, sizeof info.name, "cpu-haswell-AMD EPYC 7B13");
    snprintf(info.arch, sizeof info.arch, "OpenCL 3.0 PoCL HSTR: cpu-x86_64-pc-linux-gnu-haswell");
    snprintf(info.driver, sizeof info.driver, "5.0+debian");
    return kf_cache_target_cuda_arch("sm_90", "nvrtc 12.8 -default-device --fmad=false", NULL, &td[0].t) == KF_OK &&
           kf_cache_target_of(&info,
                              "opencl platform 'OpenCL 3.0 PoCL 5.0+debian' device 'cpu-haswell-AMD EPYC 7B13' "
                              "'OpenCL 3.0 PoCL HSTR: cpu-x86_64-pc-linux-gnu-haswell' driver '5.0+debian' "
                              "-cl-fp32-correctly-rounded-divide-sqrt",
                              NULL, &td[1].t) == KF_OK;
}

/* One preparation, its phases timed into us[]; false (message printed)
 * when a step failed. */
static bool prepare_once(const kf_graph *g, const kf_cache_target *t, double us[PHASES], size_t *srclen,
                         int *nkernels)
{
    kf_cache_prep p;
    char err[512];
    double t0 = now_us();
    if (kf_cache_fuse(g, t, &p, err, sizeof err) != KF_OK) {
        printf("%s: fuse: %s\n", kf_graph_name(g), err);
        return false;
    }
    double t1 = now_us();
    if (kf_cache_emit(&p, err, sizeof err) != KF_OK) {
        printf("%s: emit: %s\n", kf_graph_name(g), err);
        return false;
    }
    double t2 = now_us();
    kf_cache_prep_key(&p);
    double t3 = now_us();
    int nk = p.plan->nkernels;
    kf_cg_kabi *abi = malloc((size_t)(nk ? nk : 1) * sizeof *abi);
    bool ok = abi != NULL;
    for (int k = 0; ok && k < nk; k++)
        if (kf_cg_kernel_abi(p.plan, k, false, &abi[k], err, sizeof err) != KF_OK) {
            printf("%s: kernel %d abi: %s\n", kf_graph_name(g), k, err);
            ok = false;
        }
    double t4 = now_us();
    free(abi);
    us[0] = t1 - t0;
    us[1] = t2 - t1;
    us[2] = t3 - t2;
    us[3] = t4 - t3;
    us[4] = t4 - t0;
    *srclen = p.src.len;
    *nkernels = nk;
    kf_cache_prep_free(&p);
    return ok;
}

/* What one child measured. */
typedef struct row {
    double first[PHASES], hot[PHASES];
    size_t srclen;
    int nkernels;
    bool ok;
} row;

/* In a child: the first call, then the median of reps more. */
static row measure(const kf_graph *g, const kf_target_desc *td, int reps)
{
    row r;
    memset(&r, 0, sizeof r);
    double *hot = malloc((size_t)reps * PHASES * sizeof *hot), *v = malloc((size_t)reps * sizeof *v);
    if (!hot || !v || !prepare_once(g, &td->t, r.first, &r.srclen, &r.nkernels))
        goto done;
    for (int i = 0; i < reps; i++)
        if (!prepare_once(g, &td->t, &hot[(size_t)i * PHASES], &r.srclen, &r.nkernels))
            goto done;
    for (int ph = 0; ph < PHASES; ph++) {
        for (int i = 0; i < reps; i++)
            v[i] = hot[(size_t)i * PHASES + ph];
        r.hot[ph] = bench_median(v, reps);
    }
    r.ok = true;
done:
    free(hot);
    free(v);
    return r;
}

/* One table row: forks children (each one's first call is cold, as in a
 * fresh process) and prints the medians over them. */
static bool bench_row(const kf_graph *g, const kf_target_desc *td, int reps, int forks)
{
    row *rs = calloc((size_t)forks, sizeof *rs);
    double *v = malloc((size_t)forks * sizeof *v);
    bool ok = rs && v;
    for (int f = 0; ok && f < forks; f++) {
        int fd[2];
        if (pipe(fd) != 0) {
            perror("prep_bench: pipe");
            ok = false;
            break;
        }
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            close(fd[0]);
            row r = measure(g, td, reps);
            fflush(stdout);
            _exit(write(fd[1], &r, sizeof r) == (ssize_t)sizeof r ? 0 : 1);
        }
        close(fd[1]);
        ok = pid > 0 && read(fd[0], &rs[f], sizeof rs[f]) == (ssize_t)sizeof rs[f] && rs[f].ok;
        close(fd[0]);
        if (pid > 0)
            waitpid(pid, NULL, 0);
    }
    if (ok) {
        printf("%-14.14s %-6s %5d %3d %6zu |", kf_graph_name(g), td->name, kf_graph_num_nodes(g), rs[0].nkernels,
               rs[0].srclen);
        for (int k = 0; k < 2; k++) {
            for (int ph = 0; ph < PHASES; ph++) {
                for (int f = 0; f < forks; f++)
                    v[f] = k ? rs[f].hot[ph] : rs[f].first[ph];
                printf(" %6.1f", bench_median(v, forks));
            }
            printf(k ? "\n" : " |");
        }
    }
    free(rs);
    free(v);
    return ok;
}

static void usage(void) { fprintf(stderr, "usage: prep_bench [--reps N] [--forks F] FILE.kir[:GRAPH]...\n"); }

int main(int argc, char **argv)
{
    int reps = 300, forks = 5, nfiles = 0;
    for (int i = 1; i < argc; i++) {
        bool r = strcmp(argv[i], "--reps") == 0, f = strcmp(argv[i], "--forks") == 0;
        if ((r || f) && i + 1 < argc) {
            *(r ? &reps : &forks) = atoi(argv[++i]);
            if (reps < 1 || forks < 1) {
                usage();
                return 2;
            }
        } else if (argv[i][0] == '-') {
            usage();
            return 2;
        } else {
            nfiles++;
        }
    }
    kf_target_desc td[2];
    if (!nfiles) {
        usage();
        return 2;
    }
    if (!make_targets(td)) {
        fprintf(stderr, "prep_bench: cannot describe the targets\n");
        return 1;
    }
    printf("%d forks of %d repetitions; medians\n", forks, reps);
    printf("%-14s %-6s %5s %3s %6s | %-34s | %s\n", "graph", "target", "nodes", "krn", "src", "first call (us)",
           "hot (us)");
    printf("%-14s %-6s %5s %3s %6s |", "", "", "", "", "bytes");
    for (int k = 0; k < 2; k++) {
        for (int ph = 0; ph < PHASES; ph++)
            printf(" %6s", phase_names[ph]);
        printf(k ? "\n" : " |");
    }
    for (int i = 1; i < argc; i++) {
        if (argv[i][0] == '-') {
            i++;
            continue;
        }
        char path[1024];
        snprintf(path, sizeof path, "%s", argv[i]);
        char *colon = strrchr(path, ':');
        const char *only = colon ? colon + 1 : NULL;
        if (colon)
            *colon = 0;
        kf_module *m = NULL;
        if (kf_module_parse_file(path, NULL, &m) != KF_OK) {
            fprintf(stderr, "prep_bench: %s\n", m ? kf_module_error(m) : "out of memory");
            kf_module_free(m);
            return 1;
        }
        int found = 0;
        bool ok = true;
        for (int gi = 0; ok && gi < kf_module_num_graphs(m); gi++) {
            const kf_graph *g = kf_module_graph(m, gi);
            if (only && strcmp(kf_graph_name(g), only) != 0)
                continue;
            found++;
            for (int t = 0; ok && t < 2; t++)
                ok = bench_row(g, &td[t], reps, forks);
        }
        kf_module_free(m);
        if (!ok || !found) {
            if (!found)
                fprintf(stderr, "prep_bench: %s: no graph '%s'\n", path, only);
            return 1;
        }
    }
    return 0;
}
