/* The error of fast math (kf_context_options.fast_math) against the exact
 * kernels, op by op, on one backend: each op's f32 graph run on 2^20
 * inputs spread over a range by an exact context and a fast one; prints
 * the largest error of each against the host's double result, in ulp of
 * the f32 result and absolute, and how many results differ between the two.
 * Usage: fast_err BACKEND (cuda, opencl, cpu).  Built by call1.sh. */
#include <kfuse.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct opcase {
    const char *name, *body; /* y = BODY of x (and y2 for div) */
    double lo, hi;           /* x uniform in [lo, hi] */
    double (*ref)(double, double);
} opcase;

static double r_exp(double x, double y) { (void)y; return exp(x); }
static double r_log(double x, double y) { (void)y; return log(x); }
static double r_log2(double x, double y) { (void)y; return log2(x); }
static double r_sin(double x, double y) { (void)y; return sin(x); }
static double r_cos(double x, double y) { (void)y; return cos(x); }
static double r_tan(double x, double y) { (void)y; return tan(x); }
static double r_rsqrt(double x, double y) { (void)y; return 1 / sqrt(x); }
static double r_div(double x, double y) { return x / y; }
static double r_sigmoid(double x, double y) { (void)y; return 1 / (1 + exp(-x)); }

static const opcase cases[] = {
    { "exp [-10,10]", "exp x", -10, 10, r_exp },       { "exp [-80,80]", "exp x", -80, 80, r_exp },
    { "log [0.5,2]", "log x", 0.5, 2, r_log },         { "log [1e-3,1e3]", "log x", 1e-3, 1e3, r_log },
    { "log2 [1e-3,1e3]", "log2 x", 1e-3, 1e3, r_log2 }, { "sin [-pi,pi]", "sin x", -M_PI, M_PI, r_sin },
    { "sin [-100,100]", "sin x", -100, 100, r_sin },   { "cos [-pi,pi]", "cos x", -M_PI, M_PI, r_cos },
    { "tan [-1.5,1.5]", "tan x", -1.5, 1.5, r_tan },   { "rsqrt [1e-3,1e3]", "rsqrt x", 1e-3, 1e3, r_rsqrt },
    { "div [-4,4]/[0.5,4]", "div x, y", -4, 4, r_div }, { "sigmoid [-20,20]", "sigmoid x", -20, 20, r_sigmoid },
};

enum { N = 1 << 20 };

static float ulp_of(float v)
{
    float a = fabsf(v);
    return nextafterf(a, INFINITY) - a;
}

int main(int argc, char **argv)
{
    kf_backend b = argc > 1 && !strcmp(argv[1], "cuda") ? KF_BACKEND_CUDA
                   : argc > 1 && !strcmp(argv[1], "cpu") ? KF_BACKEND_CPU
                                                         : KF_BACKEND_OPENCL;
    kf_context *ctx[2] = { NULL, NULL };
    char why[512];
    for (int f = 0; f < 2; f++) {
        kf_context_options o = { .backend = b, .device = -1, .cache_mode = KF_CACHE_OFF, .fast_math = f };
        if (kf_context_create(&o, &ctx[f], why, sizeof why) != KF_OK) {
            printf("SKIP %s: %s\n", kf_backend_name(b), why);
            return 0;
        }
    }
    kf_device_info info;
    kf_context_info(ctx[0], &info);
    printf("%s: %s\n", kf_backend_name(b), info.name);
    printf("%-22s %14s %14s %14s %14s %10s\n", "op (x range)", "exact max ulp", "fast max ulp", "exact max abs",
           "fast max abs", "differ");
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y), *out[2] = { malloc(N * 4), malloc(N * 4) };
    uint64_t s = 12345;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const opcase *oc = &cases[c];
        for (int i = 0; i < N; i++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            x[i] = (float)(oc->lo + (oc->hi - oc->lo) * (double)(s >> 11) * 0x1p-53);
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            y[i] = (float)(0.5 + 3.5 * (double)(s >> 11) * 0x1p-53);
        }
        char text[256];
        snprintf(text, sizeof text, "kfuse 1\ngraph g(x: f32[n], y: f32[n]) -> (r) {\n  r = add (%s), (mul y, 0.0)\n}\n",
                 oc->body);
        double ulp[2] = { 0, 0 }, ab[2] = { 0, 0 };
        for (int f = 0; f < 2; f++) {
            kf_module *m = NULL;
            kf_program *p = NULL;
            kf_buffer *bx, *by, *br;
            if (kf_module_parse(text, strlen(text), "g", NULL, &m) != KF_OK ||
                kf_compile(ctx[f], kf_module_graph(m, 0), &p) != KF_OK) {
                printf("%s: %s\n", oc->name, m ? kf_context_error(ctx[f]) : "parse");
                return 1;
            }
            kf_buffer_alloc(ctx[f], N * 4, &bx);
            kf_buffer_alloc(ctx[f], N * 4, &by);
            kf_buffer_alloc(ctx[f], N * 4, &br);
            kf_upload(bx, 0, x, N * 4, NULL);
            kf_upload(by, 0, y, N * 4, NULL);
            int64_t n = N;
            kf_view in[2] = { kf_view_dense(bx, 0, KF_F32, 1, &n), kf_view_dense(by, 0, KF_F32, 1, &n) };
            kf_view o = kf_view_dense(br, 0, KF_F32, 1, &n);
            if (kf_run(p, NULL, in, 2, NULL, 0, &o, 1) != KF_OK || kf_stream_sync(ctx[f], NULL) != KF_OK ||
                kf_download(out[f], br, 0, N * 4, NULL) != KF_OK) {
                printf("%s: run: %s\n", oc->name, kf_context_error(ctx[f]));
                return 1;
            }
            for (int i = 0; i < N; i++) {
                double want = oc->ref(x[i], y[i]), e = fabs(out[f][i] - want);
                if (!isfinite(want))
                    continue;
                if (e / ulp_of((float)want) > ulp[f])
                    ulp[f] = e / ulp_of((float)want);
                if (e > ab[f])
                    ab[f] = e;
            }
            kf_buffer_free(bx);
            kf_buffer_free(by);
            kf_buffer_free(br);
            kf_program_free(p);
            kf_module_free(m);
        }
        int differ = 0;
        for (int i = 0; i < N; i++)
            differ += memcmp(&out[0][i], &out[1][i], 4) != 0;
        printf("%-22s %14.1f %14.1f %14.3g %14.3g %10d\n", oc->name, ulp[0], ulp[1], ab[0], ab[1], differ);
    }
    kf_context_destroy(ctx[0]);
    kf_context_destroy(ctx[1]);
    return 0;
}
