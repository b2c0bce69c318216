/* The cost of one broadcast multiply (docs/examples/cost.md): discount
 * cv[t,m,k] = mb[m,k] * disc[t,m,k] in f64, on the CPU backend and on the
 * best GPU present, with bytes moved, flops, arithmetic intensity, kernel
 * time, achieved bandwidth and the host<->device copies the data would
 * need, and which device wins for data that starts on the host.
 * Usage: example_cost [T M K [REPEATS]]   (defaults 16 64 256, 20 repeats) */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <kfuse.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct cost {
    bool ran;
    char device[200];
    double kernel_ms, upload_ms, download_ms;
} cost;

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Run the graph on ctx: copies timed on the host around synchronous calls
 * (what a program whose data starts on the host pays, buffers reused), the
 * kernel by events (median of repeats); every element of the result is
 * checked. */
static int measure(kf_context *ctx, const kf_graph *g, const int64_t *tmk, int repeats, cost *c)
{
    int64_t t = tmk[0], m = tmk[1], k = tmk[2];
    size_t nb = (size_t)(m * k), nd = (size_t)(t * m * k);
    double *mb = malloc(nb * 8), *disc = malloc(nd * 8), *cv = malloc(nd * 8), *ms = calloc((size_t)repeats, 8);
    kf_buffer *bmb = NULL, *bdisc = NULL, *bcv = NULL;
    kf_program *p = NULL;
    kf_event *e0 = NULL, *e1 = NULL;
    int rc = 1;
    if (!mb || !disc || !cv || !ms)
        goto done;
    for (size_t i = 0; i < nb; i++)
        mb[i] = 100.0 + (double)(i % 97);
    for (size_t i = 0; i < nd; i++)
        disc[i] = 1.0 / (1.0 + 0.001 * (double)(i % 1009));
    memset(cv, 0xFF, nd * 8); /* NaN: an element never written shows */
    if (kf_compile(ctx, g, &p) != KF_OK || kf_buffer_alloc(ctx, nb * 8, &bmb) != KF_OK ||
        kf_buffer_alloc(ctx, nd * 8, &bdisc) != KF_OK || kf_buffer_alloc(ctx, nd * 8, &bcv) != KF_OK ||
        kf_event_create(ctx, &e0) != KF_OK || kf_event_create(ctx, &e1) != KF_OK ||
        kf_upload(bcv, 0, cv, nd * 8, NULL) != KF_OK || kf_upload(bdisc, 0, disc, nd * 8, NULL) != KF_OK)
        goto fail;
    double t0 = now_ms(); /* the second upload into disc's buffer: the first pays for mapping fresh memory */
    if (kf_upload(bmb, 0, mb, nb * 8, NULL) != KF_OK || kf_upload(bdisc, 0, disc, nd * 8, NULL) != KF_OK)
        goto fail;
    c->upload_ms = now_ms() - t0;
    kf_view in[2] = { kf_view_dense(bmb, 0, KF_F64, 2, tmk + 1), kf_view_dense(bdisc, 0, KF_F64, 3, tmk) };
    kf_view out = kf_view_dense(bcv, 0, KF_F64, 3, tmk);
    for (int r = -1; r < repeats; r++) { /* r = -1 warms up */
        float e = 0;
        if (kf_event_record(e0, NULL) != KF_OK || kf_run(p, NULL, in, 2, NULL, 0, &out, 1) != KF_OK ||
            kf_event_record(e1, NULL) != KF_OK || kf_event_sync(e1) != KF_OK || kf_event_elapsed(e0, e1, &e) != KF_OK)
            goto fail;
        if (r >= 0)
            ms[r] = e;
    }
    qsort(ms, (size_t)repeats, 8, by_value);
    c->kernel_ms = ms[repeats / 2];
    t0 = now_ms();
    if (kf_download(cv, bcv, 0, nd * 8, NULL) != KF_OK)
        goto fail;
    c->download_ms = now_ms() - t0;
    size_t bad = 0;
    for (size_t i = 0; i < nd; i++)
        bad += cv[i] != mb[i % nb] * disc[i]; /* one correctly rounded multiply: exact */
    if (bad)
        fprintf(stderr, "cost: error: %zu of %zu elements are wrong\n", bad, nd);
    c->ran = true;
    rc = bad ? 1 : 0;
    goto done;
fail:
    fprintf(stderr, "cost: error: %s\n", kf_context_error(ctx));
done:
    kf_buffer_free(bmb);
    kf_buffer_free(bdisc);
    kf_buffer_free(bcv);
    kf_event_destroy(e0);
    kf_event_destroy(e1);
    kf_program_free(p);
    free(mb);
    free(disc);
    free(cv);
    free(ms);
    return rc;
}

/* A context on backend b (AUTO: the best device); NULL with a message when
 * there is none, or (want_gpu) when the best device is not a GPU. */
static kf_context *open_device(kf_backend b, bool want_gpu, char *why, size_t whylen)
{
    kf_context_options o = { .backend = b, .device = -1 };
    kf_context *ctx = NULL;
    if (kf_context_create(&o, &ctx, why, whylen) != KF_OK)
        return NULL;
    kf_device_info info;
    kf_context_info(ctx, &info);
    if (want_gpu && !info.gpu) {
        snprintf(why, whylen, "no GPU present (the best device is %s: %s)", kf_backend_name(info.backend), info.name);
        kf_context_destroy(ctx);
        return NULL;
    }
    if (!info.fp64) {
        snprintf(why, whylen, "%s has no f64", info.name);
        kf_context_destroy(ctx);
        return NULL;
    }
    return ctx;
}

static void print_cost(const char *label, const cost *c, double bytes, double flops, double up, double down)
{
    double total = c->upload_ms + c->kernel_ms + c->download_ms;
    printf("%s: %s\n", label, c->device);
    printf("  kernel            %10.3f ms  %8.2f GB/s  %8.3f GFLOP/s\n", c->kernel_ms, bytes / c->kernel_ms / 1e6,
           flops / c->kernel_ms / 1e6);
    printf("  upload mb, disc   %10.3f ms  %8.2f GB/s\n", c->upload_ms, up / c->upload_ms / 1e6);
    printf("  download cv       %10.3f ms  %8.2f GB/s\n", c->download_ms, down / c->download_ms / 1e6);
    printf("  from host to host %10.3f ms  (copies %.0f%% of it)\n", total,
           100.0 * (c->upload_ms + c->download_ms) / total);
}

int main(int argc, char **argv)
{
    int64_t tmk[3] = { 16, 64, 256 };
    int repeats = 20;
    if (argc >= 4)
        for (int i = 0; i < 3; i++)
            tmk[i] = atoll(argv[1 + i]);
    if (argc >= 5)
        repeats = atoi(argv[4]);
    if (tmk[0] <= 0 || tmk[1] <= 0 || tmk[2] <= 0 || repeats <= 0 || (argc != 1 && argc != 4 && argc != 5)) {
        fprintf(stderr, "usage: example_cost [T M K [REPEATS]]\n");
        return 2;
    }
    kf_module *mod = NULL;
    static const char kir[] = "kfuse 1\n"
                              "graph discount(mb: f64[m,k], disc: f64[t,m,k]) -> (cv) {\n"
                              "  cv = mul mb, disc\n}\n";
    if (kf_module_parse(kir, sizeof kir - 1, "discount", NULL, &mod) != KF_OK) {
        fprintf(stderr, "%s\n", kf_module_error(mod));
        return 1;
    }
    const kf_graph *g = kf_module_graph(mod, 0);
    double n = (double)(tmk[0] * tmk[1] * tmk[2]);
    /* every input element read once, every output element written once */
    double bytes = 8.0 * ((double)(tmk[1] * tmk[2]) + 2 * n), flops = n;
    double up = 8.0 * ((double)(tmk[1] * tmk[2]) + n), down = 8.0 * n;
    printf("discount: cv[t,m,k] = mb[m,k] * disc[t,m,k], f64, t=%lld m=%lld k=%lld\n", (long long)tmk[0],
           (long long)tmk[1], (long long)tmk[2]);
    printf("  bytes moved by the kernel %.3f MB, flops %.0f, arithmetic intensity %.3f flop/byte\n\n", bytes / 1e6,
           flops, flops / bytes);

    cost cpu = { 0 }, gpu = { 0 };
    char why[512];
    int rc = 0;
    const struct { kf_backend b; bool gpu; cost *c; const char *label; } runs[2] = {
        { KF_BACKEND_CPU, false, &cpu, "CPU" }, { KF_BACKEND_AUTO, true, &gpu, "GPU" } };
    for (int i = 0; i < 2; i++) {
        kf_context *ctx = open_device(runs[i].b, runs[i].gpu, why, sizeof why);
        if (!ctx) {
            printf("%s: skipped: %s\n\n", runs[i].label, why);
            continue;
        }
        kf_device_info info;
        kf_context_info(ctx, &info);
        snprintf(runs[i].c->device, sizeof runs[i].c->device, "%s (%s)", info.name, kf_backend_name(info.backend));
        rc |= measure(ctx, g, tmk, repeats, runs[i].c);
        if (runs[i].c->ran)
            print_cost(runs[i].label, runs[i].c, bytes, flops, up, down);
        printf("\n");
        kf_context_destroy(ctx);
    }
    if (cpu.ran && gpu.ran) {
        double tc = cpu.upload_ms + cpu.kernel_ms + cpu.download_ms;
        double tg = gpu.upload_ms + gpu.kernel_ms + gpu.download_ms;
        const cost *w = tg < tc ? &gpu : &cpu;
        printf("verdict: for data that starts on the host the %s wins, %.3f ms against %.3f ms.\n",
               w == &gpu ? "GPU" : "CPU", tg < tc ? tg : tc, tg < tc ? tc : tg);
        if (w == &cpu)
            printf("  At %.3f flop/byte the multiply is bound by memory; the GPU's kernel takes %.3f ms but\n"
                   "  moving its inputs and output over the bus takes %.3f ms, more than the CPU needs for all of it.\n",
                   flops / bytes, gpu.kernel_ms, gpu.upload_ms + gpu.download_ms);
        else
            printf("  The GPU's memory bandwidth (%.1f GB/s against %.1f) outweighs the %.3f ms of copies;\n"
                   "  with data already on the GPU it would win by %.1fx.\n",
                   bytes / gpu.kernel_ms / 1e6, bytes / cpu.kernel_ms / 1e6, gpu.upload_ms + gpu.download_ms,
                   cpu.kernel_ms / gpu.kernel_ms);
    } else if (cpu.ran) {
        printf("verdict: only the CPU ran.  A GPU would first need %.3f MB uploaded and afterwards %.3f MB\n"
               "  downloaded, for a kernel of %.3f flop/byte.\n", up / 1e6, down / 1e6, flops / bytes);
    } else if (gpu.ran) {
        printf("verdict: only the GPU ran (kfuse has no CPU backend here).  Its kernel takes %.3f ms; the\n"
               "  copies its data needs take %.3f ms, %.0f%% of the time from host to host.\n", gpu.kernel_ms,
               gpu.upload_ms + gpu.download_ms,
               100 * (gpu.upload_ms + gpu.download_ms) / (gpu.upload_ms + gpu.kernel_ms + gpu.download_ms));
    }
    kf_module_free(mod);
    return rc;
}
