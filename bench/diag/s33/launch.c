/* Session 33: is there a cheaper way to hand the driver a launch than
 * cuLaunchKernel with a kernelParams array (what kfuse and kfbench's bare
 * launch do)?  Rows: kernelParams; one packed parameter buffer through
 * `extra` (CU_LAUNCH_PARAM_BUFFER_POINTER); cuLaunchKernelEx; the
 * cuLaunchKernel that cuGetProcAddress returns; kfuse's 64-byte block
 * both ways; an empty kernel without parameters (the floor).  n = 4096,
 * 16 blocks of 256, 10,000 launches queued on one non-blocking stream,
 * then a sync; rows interleaved (order reversed every other loop), 9 loops,
 * the median and range of host us per call.  Every row's output is
 * checked once at the end (y = 5x).
 * Build: nvcc -cubin -arch=sm_90 -o launch.cubin launch.cu;
 *        cc -O2 -I$CUDA/include -o launch launch.c -ldl
 * Usage: launch launch.cubin */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CK(x) do { CUresult r_ = (x); if (r_) { fprintf(stderr, "%s: %d\n", #x, (int)r_); return 1; } } while (0)

static CUresult (*p_cuInit)(unsigned);
static CUresult (*p_cuDeviceGet)(CUdevice *, int);
static CUresult (*p_cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
static CUresult (*p_cuCtxSetCurrent)(CUcontext);
static CUresult (*p_cuModuleLoad)(CUmodule *, const char *);
static CUresult (*p_cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
static CUresult (*p_cuMemAlloc)(CUdeviceptr *, size_t);
static CUresult (*p_cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
static CUresult (*p_cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
static CUresult (*p_cuMemsetD32)(CUdeviceptr, unsigned, size_t);
static CUresult (*p_cuStreamCreate)(CUstream *, unsigned);
static CUresult (*p_cuStreamSynchronize)(CUstream);
static CUresult (*p_cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                    CUstream, void **, void **);
static CUresult (*p_cuLaunchKernelEx)(const CUlaunchConfig *, CUfunction, void **, void **);
static CUresult (*p_cuGetProcAddress)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
static CUresult (*p_gpaLaunch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                               CUstream, void **, void **);

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

enum { ROWS = 7, LOOPS = 9, CALLS = 10000, N = 4096 };
static const char *labels[ROWS] = {
    "p20 kernelParams", "p20 extra buffer", "p20 cuLaunchKernelEx", "p20 via cuGetProcAddress",
    "p64 kernelParams", "p64 extra buffer", "empty, no parameters",
};

static void *sym(void *lib, const char *a, const char *b)
{
    void *p = dlsym(lib, a);
    return p || !b ? p : dlsym(lib, b);
}

int main(int argc, char **argv)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (!lib || argc < 2)
        return 2;
#define LOAD(v, a, b) if (!(*(void **)&v = sym(lib, a, b))) { fprintf(stderr, "no %s\n", a); return 1; }
    LOAD(p_cuInit, "cuInit", NULL) LOAD(p_cuDeviceGet, "cuDeviceGet", NULL)
    LOAD(p_cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", NULL) LOAD(p_cuCtxSetCurrent, "cuCtxSetCurrent", NULL)
    LOAD(p_cuModuleLoad, "cuModuleLoad", NULL) LOAD(p_cuModuleGetFunction, "cuModuleGetFunction", NULL)
    LOAD(p_cuMemAlloc, "cuMemAlloc_v2", NULL) LOAD(p_cuMemcpyHtoD, "cuMemcpyHtoD_v2", NULL)
    LOAD(p_cuMemcpyDtoH, "cuMemcpyDtoH_v2", NULL) LOAD(p_cuMemsetD32, "cuMemsetD32_v2", NULL)
    LOAD(p_cuStreamCreate, "cuStreamCreate", NULL) LOAD(p_cuStreamSynchronize, "cuStreamSynchronize", NULL)
    LOAD(p_cuLaunchKernel, "cuLaunchKernel", NULL) LOAD(p_cuLaunchKernelEx, "cuLaunchKernelEx", NULL)
    LOAD(p_cuGetProcAddress, "cuGetProcAddress_v2", "cuGetProcAddress")
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUstream st;
    CK(p_cuInit(0));
    CK(p_cuDeviceGet(&dev, 0));
    CK(p_cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(p_cuCtxSetCurrent(ctx));
    CK(p_cuGetProcAddress("cuLaunchKernel", (void **)&p_gpaLaunch, 12000, CU_GET_PROC_ADDRESS_DEFAULT, NULL));
    printf("cuLaunchKernel: dlsym %p, cuGetProcAddress %p\n", *(void **)&p_cuLaunchKernel, *(void **)&p_gpaLaunch);
    CK(p_cuModuleLoad(&mod, argv[1]));
    CK(p_cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
    CUfunction f20, f64, fe;
    CK(p_cuModuleGetFunction(&f20, mod, "p20"));
    CK(p_cuModuleGetFunction(&f64, mod, "p64"));
    CK(p_cuModuleGetFunction(&fe, mod, "empty"));
    unsigned n = N;
    static float hx[N], hy[N];
    for (int i = 0; i < N; i++)
        hx[i] = (float)(rand() % 1000) / 8.0f;
    CUdeviceptr x, y[ROWS];
    CK(p_cuMemAlloc(&x, N * 4));
    CK(p_cuMemcpyHtoD(x, hx, N * 4));
    for (int r = 0; r < ROWS; r++) {
        CK(p_cuMemAlloc(&y[r], N * 4));
        CK(p_cuMemsetD32(y[r], 0x7fc00000u, N)); /* NaN: every element must be written */
    }
    long long meta[6] = { N, N, 1, 1, 0, 0 };
    struct { CUdeviceptr x, y; unsigned n; } b20 = { x, y[1], n };
    struct { CUdeviceptr x, y; long long m[6]; } b64 = { x, y[5], { N, N, 1, 1, 0, 0 } };
    size_t s20 = 20, s64 = sizeof b64;
    void *e20[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, &b20, CU_LAUNCH_PARAM_BUFFER_SIZE, &s20, CU_LAUNCH_PARAM_END };
    void *e64[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, &b64, CU_LAUNCH_PARAM_BUFFER_SIZE, &s64, CU_LAUNCH_PARAM_END };
    void *k0[] = { &x, &y[0], &n }, *k2[] = { &x, &y[2], &n }, *k3[] = { &x, &y[3], &n }, *k4[] = { &x, &y[4], meta };
    CUlaunchConfig cfg = { 16, 1, 1, 256, 1, 1, 0, st, NULL, 0 };
    double t[ROWS][LOOPS];
    for (int l = -1; l < LOOPS; l++) {
        for (int k = 0; k < ROWS; k++) {
            int r = l % 2 ? ROWS - 1 - k : k;
            CK(p_cuStreamSynchronize(st));
            double t0 = now_us();
            for (int i = 0; i < CALLS; i++) {
                CUresult e;
                switch (r) {
                case 0: e = p_cuLaunchKernel(f20, 16, 1, 1, 256, 1, 1, 0, st, k0, NULL); break;
                case 1: e = p_cuLaunchKernel(f20, 16, 1, 1, 256, 1, 1, 0, st, NULL, e20); break;
                case 2: e = p_cuLaunchKernelEx(&cfg, f20, k2, NULL); break;
                case 3: e = p_gpaLaunch(f20, 16, 1, 1, 256, 1, 1, 0, st, k3, NULL); break;
                case 4: e = p_cuLaunchKernel(f64, 16, 1, 1, 256, 1, 1, 0, st, k4, NULL); break;
                case 5: e = p_cuLaunchKernel(f64, 16, 1, 1, 256, 1, 1, 0, st, NULL, e64); break;
                default: e = p_cuLaunchKernel(fe, 16, 1, 1, 256, 1, 1, 0, st, NULL, NULL); break;
                }
                if (e) {
                    fprintf(stderr, "%s: launch failed: %d\n", labels[r], (int)e);
                    return 1;
                }
            }
            double us = (now_us() - t0) / CALLS;
            CK(p_cuStreamSynchronize(st));
            if (l >= 0)
                t[r][l] = us;
        }
    }
    int bad = 0;
    for (int r = 0; r < ROWS - 1; r++) {
        CK(p_cuMemcpyDtoH(hy, y[r], N * 4));
        for (int i = 0; i < N; i++)
            bad += hy[i] != 5 * hx[i];
    }
    for (int r = 0; r < ROWS; r++) {
        qsort(t[r], LOOPS, sizeof(double), cmp);
        printf("%-26s %.3f us per call (loops %.3f-%.3f)\n", labels[r], t[r][LOOPS / 2], t[r][0], t[r][LOOPS - 1]);
    }
    printf("outputs: %d wrong or unwritten elements of %d\n", bad, (ROWS - 1) * N);
    return bad != 0;
}
