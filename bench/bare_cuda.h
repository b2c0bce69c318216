/* The floor under any launch, for the benchmarks (bench/kfbench.c,
 * bench/cache_bench.c): a hand-written x+x+x+x+x compiled by NVRTC and
 * launched with a bare cuLaunchKernel on a device's primary context (the
 * one kfuse's contexts use too), on a stream of its own.  libcuda is
 * dlopen'ed, and its symbols are looked up by the names cuda.h's versioned
 * #defines give (cuMemAlloc is cuMemAlloc_v2), as runtime/cuda.c does.
 * Header-only; needs KFUSE_WITH_CUDA. */
#ifndef KF_BENCH_BARE_CUDA_H
#define KF_BENCH_BARE_CUDA_H

#include "cuda_nvrtc.h"

#include <cuda.h> /* types and prototypes only */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BARE_FUNCS(X)                                                                                        \
    X(cuInit) X(cuDeviceGet) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent)     \
    X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction) X(cuMemAlloc) X(cuMemFree)                  \
    X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize) X(cuLaunchKernel)
#define BARE_STR_(x) #x
#define BARE_STR(x) BARE_STR_(x)

typedef struct bare_cuda {
#define BARE_MEMBER(f) __typeof__(&f) f;
    BARE_FUNCS(BARE_MEMBER)
#undef BARE_MEMBER
    CUdevice dev;
    bool retained;
    CUmodule mod;
    CUfunction fn;
    CUstream st;
    CUdeviceptr x, y;
    unsigned n;
} bare_cuda;

static const char bare_x5_src[] =
    "extern \"C\" __global__ void bare_x5(const float *__restrict__ x, float *__restrict__ y, unsigned n)\n"
    "{\n"
    "    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {\n"
    "        float v = x[i];\n"
    "        y[i] = v + v + v + v + v;\n"
    "    }\n"
    "}\n";

/* One launch over n elements (a bench loop's call; arg is the bare_cuda). */
static inline bool bare_cuda_launch(void *arg)
{
    bare_cuda *c = arg;
    void *params[] = { &c->x, &c->y, &c->n };
    return c->cuLaunchKernel(c->fn, (c->n + 255) / 256, 1, 1, 256, 1, 1, 0, c->st, params, NULL) == CUDA_SUCCESS;
}

static inline bool bare_cuda_sync(void *arg)
{
    bare_cuda *c = arg;
    return c->cuStreamSynchronize(c->st) == CUDA_SUCCESS;
}

static inline void bare_cuda_close(bare_cuda *c)
{
    if (c->st)
        c->cuStreamDestroy(c->st);
    if (c->x)
        c->cuMemFree(c->x);
    if (c->y)
        c->cuMemFree(c->y);
    if (c->mod)
        c->cuModuleUnload(c->mod);
    if (c->retained)
        c->cuDevicePrimaryCtxRelease(c->dev);
}

/* Ready *c to launch over n elements on device for arch ("sm_90"); false
 * with why[] filled (and nothing left to close) when it cannot. */
static inline bool bare_cuda_open(bare_cuda *c, int device, const char *arch, unsigned n, char *why, size_t wlen)
{
    memset(c, 0, sizeof *c);
    c->n = n;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(why, wlen, "libcuda.so.1: %s", dlerror());
        return false;
    }
#define BARE_LOAD(f)                                                                                         \
    {                                                                                                        \
        void *p_ = dlsym(lib, BARE_STR(f));                                                                  \
        if (!p_) {                                                                                           \
            snprintf(why, wlen, "libcuda.so.1 has no %s", BARE_STR(f));                                      \
            return false;                                                                                    \
        }                                                                                                    \
        memcpy(&c->f, &p_, sizeof p_);                                                                       \
    }
    BARE_FUNCS(BARE_LOAD)
#undef BARE_LOAD
    void *bin = NULL;
    size_t binlen = 0;
    kf_rt_err err;
    if (kf_rt_cuda_compile_arch(bare_x5_src, sizeof bare_x5_src - 1, arch, &bin, &binlen, &err) != KF_OK) {
        snprintf(why, wlen, "NVRTC: %.400s", err.msg);
        return false;
    }
    CUcontext ctx = NULL;
    const char *what = "cuInit";
    bool ok = c->cuInit(0) == CUDA_SUCCESS && (what = "cuDeviceGet", c->cuDeviceGet(&c->dev, device) == CUDA_SUCCESS) &&
              (what = "cuDevicePrimaryCtxRetain", c->cuDevicePrimaryCtxRetain(&ctx, c->dev) == CUDA_SUCCESS) &&
              (c->retained = true) && (what = "cuCtxSetCurrent", c->cuCtxSetCurrent(ctx) == CUDA_SUCCESS) &&
              (what = "cuModuleLoadData", c->cuModuleLoadData(&c->mod, bin) == CUDA_SUCCESS) &&
              (what = "cuModuleGetFunction", c->cuModuleGetFunction(&c->fn, c->mod, "bare_x5") == CUDA_SUCCESS) &&
              (what = "cuMemAlloc", c->cuMemAlloc(&c->x, (size_t)n * 4) == CUDA_SUCCESS) &&
              c->cuMemAlloc(&c->y, (size_t)n * 4) == CUDA_SUCCESS &&
              (what = "cuStreamCreate", c->cuStreamCreate(&c->st, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
    free(bin);
    if (!ok) {
        snprintf(why, wlen, "%s failed", what);
        bare_cuda_close(c);
    }
    return ok;
}

#endif
