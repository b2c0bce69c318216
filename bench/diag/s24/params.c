/* Session 24: does the size of a kernel's parameter block change a
 * cuLaunchKernel's host cost?  kfuse's launches cost 0.15-0.2 us more than
 * kfbench's bare one on the GPU machine, and kfuse's own host code 0.06 us
 * (bench/host_cost.sh); per call kfuse makes one cuCtxGetCurrent and one
 * cuLaunchKernel.  params.cu's kernels (20, 64, 112, 256 bytes of
 * parameters), and the 20-byte one after a cuCtxGetCurrent: n = 4096, 16
 * blocks of 256, 10,000 launches queued on one stream, then a sync; the
 * rows interleaved, 9 loops, the median and range of host us per call.
 * Build: nvcc -cubin -arch=sm_90 -o params.cubin params.cu; cc -O2 -I$CUDA/include -o params params.c -ldl
 * Usage: params params.cubin */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define F(X) X(cuInit) X(cuDeviceGet) X(cuDevicePrimaryCtxRetain) X(cuCtxSetCurrent) X(cuCtxGetCurrent) \
    X(cuModuleLoad) X(cuModuleGetFunction) X(cuMemAlloc) X(cuStreamCreate) X(cuStreamSynchronize) X(cuLaunchKernel)
#define DECL(f) static __typeof__(&f) p_##f;
F(DECL)
#define CK(x) do { CUresult r_ = (x); if (r_) { fprintf(stderr, "%s: %d\n", #x, r_); return 1; } } while (0)

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

enum { ROWS = 5, LOOPS = 9, CALLS = 10000 };

int main(int argc, char **argv)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (!lib || argc < 2)
        return 2;
#define LOAD(f) if (!(p_##f = (__typeof__(&f))dlsym(lib, #f))) { fprintf(stderr, "no %s\n", #f); return 1; }
#define LOAD2(f) if (!(p_##f = (__typeof__(&f))dlsym(lib, #f "_v2")) && !(p_##f = (__typeof__(&f))dlsym(lib, #f))) { fprintf(stderr, "no %s\n", #f); return 1; }
    LOAD(cuInit) LOAD(cuDeviceGet) LOAD(cuDevicePrimaryCtxRetain) LOAD(cuCtxSetCurrent) LOAD(cuCtxGetCurrent)
    LOAD(cuModuleLoad) LOAD(cuModuleGetFunction) LOAD2(cuMemAlloc) LOAD(cuStreamCreate) LOAD(cuStreamSynchronize)
    LOAD(cuLaunchKernel)
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUstream st;
    CK(p_cuInit(0));
    CK(p_cuDeviceGet(&dev, 0));
    CK(p_cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(p_cuCtxSetCurrent(ctx));
    CK(p_cuModuleLoad(&mod, argv[1]));
    CK(p_cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
    const char *names[ROWS] = { "p20", "p64", "p112", "p256", "p20" };
    const char *labels[ROWS] = { "20 bytes", "64 bytes", "112 bytes", "256 bytes", "20 bytes + cuCtxGetCurrent" };
    CUfunction fn[ROWS];
    for (int r = 0; r < ROWS; r++)
        CK(p_cuModuleGetFunction(&fn[r], mod, names[r]));
    unsigned n = 4096;
    CUdeviceptr x, y, s;
    CK(p_cuMemAlloc(&x, n * 4));
    CK(p_cuMemAlloc(&y, n * 4));
    CK(p_cuMemAlloc(&s, 8192));
    long long meta[30] = { n, n, 1, 1, 0, 0 };
    void *pr[ROWS][4] = { { &x, &y, &n }, { &x, &y, meta }, { &x, &y, meta, &s }, { &x, &y, meta }, { &x, &y, &n } };
    double t[ROWS][LOOPS];
    for (int l = -1; l < LOOPS; l++) {
        for (int k = 0; k < ROWS; k++) {
            int r = l % 2 ? ROWS - 1 - k : k;
            CK(p_cuStreamSynchronize(st));
            double t0 = now_us();
            for (int i = 0; i < CALLS; i++) {
                if (r == 4) {
                    CUcontext cur;
                    CK(p_cuCtxGetCurrent(&cur));
                }
                CK(p_cuLaunchKernel(fn[r], 16, 1, 1, 256, 1, 1, 0, st, pr[r], NULL));
            }
            double us = (now_us() - t0) / CALLS;
            CK(p_cuStreamSynchronize(st));
            if (l >= 0)
                t[r][l] = us;
        }
    }
    for (int r = 0; r < ROWS; r++) {
        qsort(t[r], LOOPS, sizeof(double), cmp);
        printf("%-28s %.3f us per call (loops %.3f-%.3f)\n", labels[r], t[r][LOOPS / 2], t[r][0], t[r][LOOPS - 1]);
    }
    return 0;
}
