/* Session 15: is "host us per queued launch" host-bound or queue-bound?
 * Host time per cuLaunchKernel in loops of B calls (sync between loops,
 * untimed), for B = 10000 (kfbench's) down to 64, and the device's own
 * time per kernel back to back (events around 10000).  Kernels: the bare
 * x5 (bench/bare_cuda.h), kfuse's emitted x5 c64 with its meta block,
 * an empty kernel.  cc -O2 bench/diag/s15/launch_floor.c -I/usr/local/cuda/include -lcuda */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#define CK(x) do { CUresult r_ = (x); if (r_) { printf("%s: %d\n", #x, r_); exit(1); } } while (0)
static double now_us(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e6 + t.tv_nsec / 1e3; }
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }
static CUfunction fn; static CUstream st; static void **params; static unsigned grid, block;
static double per_call(int B, int loops)
{
    double t[64];
    for (int l = -1; l < loops; l++) {
        double t0 = now_us();
        for (int k = 0; k < B; k++)
            CK(cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, 0, st, params, NULL));
        double dt = now_us() - t0;
        CK(cuStreamSynchronize(st));
        if (l >= 0) t[l] = dt / B;
    }
    qsort(t, loops, sizeof *t, cmp);
    return t[loops / 2];
}
static double device_per_kernel(int B)
{
    CUevent a, b; float ms;
    CK(cuEventCreate(&a, 0)); CK(cuEventCreate(&b, 0));
    CK(cuEventRecord(a, st));
    for (int k = 0; k < B; k++) CK(cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, 0, st, params, NULL));
    CK(cuEventRecord(b, st)); CK(cuEventSynchronize(b)); CK(cuEventElapsedTime(&ms, a, b));
    cuEventDestroy(a); cuEventDestroy(b);
    return ms * 1e3 / B;
}
int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : ".";
    CUdevice d; CUcontext c; CUmodule mb, mk; char p[512];
    CK(cuInit(0)); CK(cuDeviceGet(&d, 0)); CK(cuDevicePrimaryCtxRetain(&c, d)); CK(cuCtxSetCurrent(c));
    snprintf(p, sizeof p, "%s/bare.cubin", dir); CK(cuModuleLoad(&mb, p));
    snprintf(p, sizeof p, "%s/x5.cubin", dir); CK(cuModuleLoad(&mk, p));
    CK(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
    unsigned n = 4096; CUdeviceptr x, y;
    CK(cuMemAlloc(&x, 4 * n)); CK(cuMemAlloc(&y, 4 * n));
    long long meta[6] = { n, n, 1, 1, 0, 0 };
    void *pb[] = { &x, &y, &n }, *pk[] = { &x, &y, meta }, *pe[] = { NULL };
    struct { const char *name; CUmodule m; const char *f; void **p; unsigned g; } ks[] = {
        { "bare x5 (16 blocks)", mb, "bare_x5", pb, 16 }, { "kfuse x5 c64 (4 blocks)", mk, "x5_k0_d5aae514_c64", pk, 4 },
        { "empty kernel (1 block)", mb, "empty_k", pe, 1 } };
    int Bs[] = { 10000, 2000, 1000, 500, 256, 64 };
    for (int round = 0; round < 2; round++)
        for (int i = 0; i < 3; i++) {
            CK(cuModuleGetFunction(&fn, ks[i].m, ks[i].f));
            params = ks[i].p; grid = ks[i].g; block = 256;
            printf("%-26s device back to back %.2f us/kernel; host per call:", ks[i].name, device_per_kernel(10000));
            for (int j = 0; j < 6; j++)
                printf("  B=%d %.2f", Bs[j], per_call(Bs[j], Bs[j] >= 1000 ? 7 : 31));
            printf("\n");
            fflush(stdout);
        }
    return 0;
}
