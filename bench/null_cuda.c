/* A libcuda.so.1 that does no GPU work, for bench/host_cost.sh: it measures
 * the host time kfuse itself spends per launch (kf_run down to the
 * cuLaunchKernel call), the part of the launch overhead that is kfuse's and
 * not the driver's, on any machine, with no GPU.
 *
 * Every entry point kfuse's CUDA backend loads (runtime/cuda.c, the
 * KF_CU_FUNCS list) is here, with the toolkit's own prototypes.  "Device
 * memory" is host memory, copies and fills are real, launches and events
 * return at once (an elapsed time of 10 us), one fake sm_90 device with 132
 * multiprocessors.  cuGetExportTable refuses: NVRTC asks the loaded driver
 * for it and compiles without it.  Never a backend: nothing runs a kernel. */
#include <cuda.h>
#include <stdlib.h>
#include <string.h>

static __thread CUcontext current;
static int the_context, the_module;

CUresult cuInit(unsigned flags) { (void)flags; return CUDA_SUCCESS; }
CUresult cuDriverGetVersion(int *v) { *v = CUDA_VERSION; return CUDA_SUCCESS; }
CUresult cuGetErrorName(CUresult r, const char **s) { (void)r; *s = "CUDA_ERROR_NULL_DRIVER"; return CUDA_SUCCESS; }
CUresult cuGetErrorString(CUresult r, const char **s) { (void)r; *s = "bench/null_cuda.c"; return CUDA_SUCCESS; }
CUresult cuGetExportTable(const void **t, const CUuuid *id) { (void)id; *t = NULL; return CUDA_ERROR_NOT_SUPPORTED; }
CUresult cuDeviceGetCount(int *n) { *n = 1; return CUDA_SUCCESS; }
CUresult cuDeviceGet(CUdevice *d, int i) { *d = i; return i == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE; }
CUresult cuDeviceGetName(char *s, int len, CUdevice d)
{
    (void)d;
    strncpy(s, "null driver (bench/null_cuda.c)", (size_t)len);
    s[len - 1] = 0;
    return CUDA_SUCCESS;
}
CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d)
{
    (void)d;
    switch (a) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 132; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: *v = 2147483647; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
    default: *v = 1; break;
    }
    return CUDA_SUCCESS;
}
CUresult cuDeviceTotalMem(size_t *bytes, CUdevice d) { (void)d; *bytes = (size_t)8 << 30; return CUDA_SUCCESS; }
CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) { (void)d; *c = (CUcontext)&the_context; return CUDA_SUCCESS; }
CUresult cuDevicePrimaryCtxRelease(CUdevice d) { (void)d; return CUDA_SUCCESS; }
CUresult cuCtxGetCurrent(CUcontext *c) { *c = current; return CUDA_SUCCESS; }
CUresult cuCtxSetCurrent(CUcontext c) { current = c; return CUDA_SUCCESS; }
CUresult cuCtxPushCurrent(CUcontext c) { current = c; return CUDA_SUCCESS; }
CUresult cuCtxPopCurrent(CUcontext *c) { *c = current; return CUDA_SUCCESS; }
CUresult cuModuleLoadDataEx(CUmodule *m, const void *image, unsigned n, CUjit_option *o, void **v)
{
    (void)image, (void)n, (void)o, (void)v;
    *m = (CUmodule)&the_module;
    return CUDA_SUCCESS;
}
CUresult cuModuleUnload(CUmodule m) { (void)m; return CUDA_SUCCESS; }
CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name)
{
    (void)m;
    *f = (CUfunction)strdup(name); /* a handle of its own; never freed (a benchmark's short process) */
    return *f ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult cuFuncGetAttribute(int *v, CUfunction_attribute a, CUfunction f)
{
    (void)f;
    *v = a == CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK ? 1024 : a == CU_FUNC_ATTRIBUTE_NUM_REGS ? 32 : 0;
    return CUDA_SUCCESS;
}
CUresult cuMemAlloc(CUdeviceptr *p, size_t bytes)
{
    void *m = calloc(1, bytes ? bytes : 1);
    *p = (CUdeviceptr)m;
    return m ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult cuMemFree(CUdeviceptr p) { free((void *)p); return CUDA_SUCCESS; }
CUresult cuMemHostAlloc(void **p, size_t bytes, unsigned flags)
{
    (void)flags;
    *p = malloc(bytes ? bytes : 1);
    return *p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult cuMemFreeHost(void *p) { free(p); return CUDA_SUCCESS; }
CUresult cuMemcpyHtoDAsync(CUdeviceptr d, const void *s, size_t n, CUstream st) { (void)st; memcpy((void *)d, s, n); return CUDA_SUCCESS; }
CUresult cuMemcpyDtoHAsync(void *d, CUdeviceptr s, size_t n, CUstream st) { (void)st; memcpy(d, (void *)s, n); return CUDA_SUCCESS; }
CUresult cuMemcpyDtoDAsync(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st) { (void)st; memmove((void *)d, (void *)s, n); return CUDA_SUCCESS; }
CUresult cuMemsetD32Async(CUdeviceptr d, unsigned v, size_t n, CUstream st)
{
    (void)st;
    for (size_t i = 0; i < n; i++)
        ((unsigned *)d)[i] = v;
    return CUDA_SUCCESS;
}
CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, CUstream st, void **params, void **extra)
{
    (void)f, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)shared, (void)st, (void)params, (void)extra;
    return CUDA_SUCCESS;
}
CUresult cuStreamCreate(CUstream *s, unsigned flags) { (void)flags; *s = (CUstream)malloc(1); return *s ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY; }
CUresult cuStreamDestroy(CUstream s) { free(s); return CUDA_SUCCESS; }
CUresult cuStreamSynchronize(CUstream s) { (void)s; return CUDA_SUCCESS; }
CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned flags) { (void)s, (void)e, (void)flags; return CUDA_SUCCESS; }
CUresult cuEventCreate(CUevent *e, unsigned flags) { (void)flags; *e = (CUevent)malloc(1); return *e ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY; }
CUresult cuEventDestroy(CUevent e) { free(e); return CUDA_SUCCESS; }
CUresult cuEventRecord(CUevent e, CUstream s) { (void)e, (void)s; return CUDA_SUCCESS; }
CUresult cuEventSynchronize(CUevent e) { (void)e; return CUDA_SUCCESS; }
CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b) { (void)a, (void)b; *ms = 0.01f; return CUDA_SUCCESS; }
CUresult cuStreamGetCtx(CUstream s, CUcontext *c) { (void)s; *c = current; return CUDA_SUCCESS; }
