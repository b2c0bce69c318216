/* CUDA backend: the driver API with libcuda loaded at run time (dlopen), so
 * kfuse builds and runs where there is no driver (count() is 0, open() says
 * why), and NVRTC, linked, compiles CUDA C to a cubin for the device's arch. */
#include "cuda_nvrtc.h"

#include <cuda.h> /* the toolkit's: types, enums and prototypes only; libcuda is never linked */
#include <nvrtc.h>

#ifndef CUDA_VERSION
#error "<cuda.h> did not resolve to the CUDA toolkit's: keep runtime/ off the include path"
#endif

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* -- The driver entry points ---------------------------------------------------- *
 * One list names every driver function used.  cuda.h #defines the plain names
 * to the versioned symbols (cuMemAlloc -> cuMemAlloc_v2, cuEventElapsedTime
 * -> cuEventElapsedTime_v2, ...), so the table members, their types
 * (__typeof__ of the prototype) and the dlsym names (the macro expanded, then
 * stringised) all follow the header: a wrong signature cannot compile and a
 * wrong symbol version cannot be looked up by mistake. */

#define KF_CU_FUNCS(X)                                                                                       \
    X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuGetErrorString) X(cuDeviceGetCount) X(cuDeviceGet) \
    X(cuDeviceGetName) X(cuDeviceGetAttribute) X(cuDeviceTotalMem) X(cuDevicePrimaryCtxRetain)                \
    X(cuDevicePrimaryCtxRelease) X(cuCtxGetCurrent) X(cuCtxSetCurrent) X(cuCtxPushCurrent)                    \
    X(cuCtxPopCurrent) X(cuModuleLoadDataEx) X(cuModuleUnload) X(cuModuleGetFunction) X(cuFuncGetAttribute)  \
    X(cuMemAlloc) X(cuMemFree) X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync) X(cuMemcpyDtoDAsync)                \
    X(cuMemsetD32Async) X(cuLaunchKernel) X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize)        \
    X(cuStreamWaitEvent) X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord) X(cuEventSynchronize)           \
    X(cuEventElapsedTime) X(cuMemHostAlloc) X(cuMemFreeHost) X(cuStreamGetCtx)

/* Looked up but optional: launch() checks argument counts and sizes only
 * where the driver can say what the kernel takes (CUDA 12.4 and later);
 * capture and replay (CUDA graphs) need the CUDA 12 forms of the graph
 * calls (cuGraphInstantiate is cuGraphInstantiateWithFlags there). */
#if CUDA_VERSION >= 12040
#define KF_CU_PARAMINFO(X) X(cuFuncGetParamInfo)
#else
#define KF_CU_PARAMINFO(X)
#endif
#if CUDA_VERSION >= 12000
#define KF_CU_GRAPHS 1
#define KF_CU_GRAPH_FUNCS(X)                                                                                 \
    X(cuStreamBeginCapture) X(cuStreamEndCapture) X(cuStreamIsCapturing) X(cuEventRecordWithFlags)           \
    X(cuGraphInstantiate) X(cuGraphLaunch) X(cuGraphExecDestroy) X(cuGraphDestroy)
#else
#define KF_CU_GRAPHS 0
#define KF_CU_GRAPH_FUNCS(X)
#endif
#define KF_CU_OPTIONAL(X) KF_CU_PARAMINFO(X) KF_CU_GRAPH_FUNCS(X)

#define KF_STR_(x) #x
#define KF_STR(x) KF_STR_(x)

/* Symbols whose versioned name is recent: the older name, same signature. */
static const char *const kf_cu_fallback[][2] = {
    { KF_STR(cuEventElapsedTime), "cuEventElapsedTime" }, /* _v2 is CUDA 12.8 */
};

typedef struct kf_cu_api {
    bool ok;         /* every required symbol was found */
    bool graphs;     /* every symbol capture and replay need was found */
    char why[512];   /* when not ok: the dlerror text or the missing symbol */
    void *lib;       /* never closed: libcuda does not support being unloaded */
#define KF_CU_MEMBER(f) __typeof__(&f) f;
    KF_CU_FUNCS(KF_CU_MEMBER)
    KF_CU_OPTIONAL(KF_CU_MEMBER)
#undef KF_CU_MEMBER
} kf_cu_api;

_Static_assert(sizeof(void *) == sizeof(void (*)(void)), "dlsym results are stored into function pointers");

/* The one piece of process-wide state: filled once under pthread_once by
 * load_api() and read-only afterwards, so no lock is needed to read it.
 * (It cannot live in the device state because count() has no device.) */
static kf_cu_api kf_cu_table;
static pthread_once_t kf_cu_once = PTHREAD_ONCE_INIT;

static bool load_sym(kf_cu_api *t, const char *name, void *slot, bool required)
{
    const char *alt = NULL;
    for (size_t i = 0; i < sizeof kf_cu_fallback / sizeof kf_cu_fallback[0]; i++)
        if (strcmp(name, kf_cu_fallback[i][0]) == 0)
            alt = kf_cu_fallback[i][1];
    void *p = dlsym(t->lib, name);
    if (!p && alt)
        p = dlsym(t->lib, alt);
    if (!p && required) {
        snprintf(t->why, sizeof t->why, "libcuda.so.1 has no %s (the driver is too old for this kfuse build)",
                 name);
        return false;
    }
    memcpy(slot, &p, sizeof p); /* object to function pointer without a cast */
    return true;
}

static void load_api(void)
{
    kf_cu_api *t = &kf_cu_table;
    t->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!t->lib) {
        const char *e = dlerror();
        snprintf(t->why, sizeof t->why, "libcuda.so.1 not found: %s", e ? e : "dlopen failed");
        return;
    }
#define KF_CU_LOAD(f)                                                                                        \
    if (!load_sym(t, KF_STR(f), &t->f, true))                                                                \
        return;
    KF_CU_FUNCS(KF_CU_LOAD)
#undef KF_CU_LOAD
#define KF_CU_LOAD_OPT(f) load_sym(t, KF_STR(f), &t->f, false);
    KF_CU_OPTIONAL(KF_CU_LOAD_OPT)
#undef KF_CU_LOAD_OPT
#define KF_CU_HAS(f) &&t->f
    t->graphs = true KF_CU_GRAPH_FUNCS(KF_CU_HAS);
#undef KF_CU_HAS
    t->ok = true;
}

/* The driver table, or NULL with the reason in *why. */
static const kf_cu_api *get_api(const char **why)
{
    pthread_once(&kf_cu_once, load_api);
    if (why)
        *why = kf_cu_table.why;
    return kf_cu_table.ok ? &kf_cu_table : NULL;
}

/* -- Errors ------------------------------------------------------------------------- */

static void set_err(kf_rt_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_err(kf_rt_err *err, const char *fmt, ...)
{
    if (!err)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
}

/* "what: CUDA_ERROR_OUT_OF_MEMORY (out of memory)[; detail]"; returns
 * KF_ERR_NO_MEMORY for an out-of-memory error, KF_ERR_DEVICE otherwise. */
static kf_status cu_fail(const kf_cu_api *a, kf_rt_err *err, CUresult r, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static kf_status cu_fail(const kf_cu_api *a, kf_rt_err *err, CUresult r, const char *what, const char *fmt, ...)
{
    if (err) {
        const char *name = NULL, *str = NULL;
        char code[32];
        if (a->cuGetErrorName(r, &name) != CUDA_SUCCESS || !name) {
            /* a stub or broken driver cannot name its errors: the ones
             * that say why there is no usable driver */
            static const struct { CUresult r; const char *name, *str; } known[] = {
                { CUDA_ERROR_STUB_LIBRARY, "CUDA_ERROR_STUB_LIBRARY",
                  "libcuda.so.1 is the toolkit's stub, not a driver: remove the stubs directory from the library path" },
                { CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected" },
            };
            snprintf(code, sizeof code, "CUDA error %d", (int)r);
            name = code;
            for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
                if (known[i].r == r) {
                    name = known[i].name;
                    str = known[i].str;
                }
        }
        if (!str && (a->cuGetErrorString(r, &str) != CUDA_SUCCESS || !str))
            str = "no description";
        int n = snprintf(err->msg, sizeof err->msg, "%s: %s (%s)", what, name, str);
        if (fmt && n > 0 && (size_t)n < sizeof err->msg - 2) {
            memcpy(err->msg + n, "; ", 3);
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(err->msg + n + 2, sizeof err->msg - (size_t)n - 2, fmt, ap);
            va_end(ap);
        }
    }
    return r == CUDA_ERROR_OUT_OF_MEMORY ? KF_ERR_NO_MEMORY : KF_ERR_DEVICE;
}

/* -- NVRTC ------------------------------------------------------------------------ *
 * Options, kept minimal: the exact architecture (sm_XY gives a cubin the
 * driver loads without a JIT step) and -default-device, so the C-like
 * generated source may define helper functions without __device__.  The
 * defaults stay: IEEE division and square root (-prec-div, -prec-sqrt),
 * denormals kept; FMA contraction off (--fmad=false) so every float op rounds
 * as the reference interpreter's does; no --use_fast_math, ever;
 * C++17 dialect.  No include path: generated code includes no headers (the
 * toolkit's headers need not exist where kfuse runs; NVRTC 13 has no
 * built-in cuda_fp16.h).  -DKF_ONE_PASS: every launch here comes from
 * kf_cg_launch_rule with gpu set, whose elementwise and warp grids cover
 * the space, so those loops run once (docs/codegen.md). */

#define KF_NVRTC_OPT1 "-default-device"
#define KF_NVRTC_OPT2 "--fmad=false" /* a*b+c rounds twice, as the interpreter does */
#define KF_NVRTC_OPT3 "-DKF_ONE_PASS"
#define KF_NVRTC_PROGRAM "kfuse.cu"

void kf_rt_cuda_compiler_id(char *buf, size_t len)
{
    int major = 0, minor = 0;
    if (!buf || !len)
        return;
    if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS)
        major = minor = 0;
    snprintf(buf, len, "nvrtc %d.%d %s %s %s", major, minor, KF_NVRTC_OPT1, KF_NVRTC_OPT2, KF_NVRTC_OPT3);
}

/* Parse "sm_90", "sm_90a", "compute_100f": *num = 90, *ptx = compute_. */
static bool parse_arch(const char *arch, int *num, bool *ptx)
{
    const char *p;
    if (!arch)
        return false;
    if (strncmp(arch, "sm_", 3) == 0) {
        p = arch + 3;
        *ptx = false;
    } else if (strncmp(arch, "compute_", 8) == 0) {
        p = arch + 8;
        *ptx = true;
    } else {
        return false;
    }
    int v = 0, digits = 0;
    for (; *p >= '0' && *p <= '9' && digits < 4; p++, digits++)
        v = v * 10 + (*p - '0');
    if (digits < 2 || (*p && !(*p >= 'a' && *p <= 'z' && p[1] == 0)))
        return false;
    *num = v;
    return true;
}

/* The architectures this NVRTC targets (numbers, ascending) into list;
 * returns how many (0 if it cannot say). */
static int nvrtc_archs(int *list, int cap)
{
    int n = 0;
    if (nvrtcGetNumSupportedArchs(&n) != NVRTC_SUCCESS || n <= 0 || n > cap)
        return 0;
    if (nvrtcGetSupportedArchs(list) != NVRTC_SUCCESS)
        return 0;
    return n;
}

static kf_status nvrtc_fail(kf_rt_err *err, nvrtcResult r, const char *what, const char *arch)
{
    set_err(err, "%s (%s): %s", what, arch, nvrtcGetErrorString(r));
    return r == NVRTC_ERROR_OUT_OF_MEMORY ? KF_ERR_NO_MEMORY : KF_ERR_COMPILE;
}

kf_status kf_rt_cuda_compile_arch(const char *src, size_t len, const char *arch, void **bin, size_t *binlen,
                                  kf_rt_err *err)
{
    int num = 0;
    bool ptx = false;
    if (!bin || !binlen || (!src && len)) {
        set_err(err, "kf_rt_cuda_compile_arch: null argument");
        return KF_ERR_INVALID_ARG;
    }
    *bin = NULL;
    *binlen = 0;
    if (!parse_arch(arch, &num, &ptx)) {
        set_err(err, "bad CUDA architecture '%s' (want sm_XY or compute_XY, e.g. sm_90)", arch ? arch : "(null)");
        return KF_ERR_INVALID_ARG;
    }
    int archs[128];
    int na = nvrtc_archs(archs, 128);
    if (na > 0) {
        bool found = false;
        for (int i = 0; i < na; i++)
            found |= archs[i] == num;
        if (!found) {
            int major = 0, minor = 0;
            nvrtcVersion(&major, &minor);
            set_err(err, "NVRTC %d.%d cannot target %s (it supports sm_%d to sm_%d)", major, minor, arch, archs[0],
                    archs[na - 1]);
            return KF_ERR_UNSUPPORTED;
        }
    }

    char *text = malloc(len + 1);
    if (!text) {
        set_err(err, "out of memory copying %zu bytes of source", len);
        return KF_ERR_NO_MEMORY;
    }
    if (len)
        memcpy(text, src, len);
    text[len] = 0;

    char archopt[64];
    snprintf(archopt, sizeof archopt, "--gpu-architecture=%s", arch);
    const char *opts[] = { archopt, KF_NVRTC_OPT1, KF_NVRTC_OPT2, KF_NVRTC_OPT3 };

    kf_status s = KF_OK;
    nvrtcProgram prog = NULL;
    nvrtcResult r = nvrtcCreateProgram(&prog, text, KF_NVRTC_PROGRAM, 0, NULL, NULL);
    if (r != NVRTC_SUCCESS) {
        free(text);
        return nvrtc_fail(err, r, "nvrtcCreateProgram", arch);
    }

    r = nvrtcCompileProgram(prog, (int)(sizeof opts / sizeof opts[0]), opts);
    if (r != NVRTC_SUCCESS) {
        size_t loglen = 0;
        char *log = NULL;
        if (nvrtcGetProgramLogSize(prog, &loglen) == NVRTC_SUCCESS && loglen > 0 && (log = malloc(loglen + 1))) {
            if (nvrtcGetProgramLog(prog, log) != NVRTC_SUCCESS)
                log[0] = 0;
            log[loglen] = 0;
        }
        set_err(err, "nvrtcCompileProgram (%s): %s\n%s", arch, nvrtcGetErrorString(r), log ? log : "(no log)");
        free(log);
        s = r == NVRTC_ERROR_OUT_OF_MEMORY ? KF_ERR_NO_MEMORY : KF_ERR_COMPILE;
        goto done;
    }

    size_t n = 0;
    r = ptx ? nvrtcGetPTXSize(prog, &n) : nvrtcGetCUBINSize(prog, &n);
    if (r != NVRTC_SUCCESS) {
        s = nvrtc_fail(err, r, ptx ? "nvrtcGetPTXSize" : "nvrtcGetCUBINSize", arch);
        goto done;
    }
    if (n == 0) {
        set_err(err, "NVRTC produced no %s for %s", ptx ? "PTX" : "cubin", arch);
        s = KF_ERR_COMPILE;
        goto done;
    }
    void *out = malloc(n);
    if (!out) {
        set_err(err, "out of memory for a %zu-byte %s", n, ptx ? "PTX" : "cubin");
        s = KF_ERR_NO_MEMORY;
        goto done;
    }
    r = ptx ? nvrtcGetPTX(prog, out) : nvrtcGetCUBIN(prog, out);
    if (r != NVRTC_SUCCESS) {
        free(out);
        s = nvrtc_fail(err, r, ptx ? "nvrtcGetPTX" : "nvrtcGetCUBIN", arch);
        goto done;
    }
    *bin = out;
    *binlen = n;
done:
    nvrtcDestroyProgram(&prog);
    free(text);
    return s;
}

/* -- Device state --------------------------------------------------------------- */

typedef struct kf_cu_dev {
    const kf_cu_api *api;
    int ordinal;
    CUdevice cudev;
    CUcontext ctx;          /* the device's primary context, retained */
    CUstream stream;        /* stands for the backend's default stream (NULL) */
    int max_grid;           /* blocks in x */
    char arch[16];          /* "sm_90" */
    char target[24];        /* what NVRTC compiles for: arch, or compute_XY PTX when the device is newer */
    char target_why[256];   /* when NVRTC cannot target the device: why ("" otherwise) */
    char compiler_id[64];
} kf_cu_dev;

/* Make d's context current on this thread for one call.  A thread with no
 * current context keeps ours afterwards (the next call costs one
 * cuCtxGetCurrent); a thread using another context gets it back on leave. */
static CUresult enter(kf_cu_dev *d, bool *pushed)
{
    const kf_cu_api *a = d->api;
    CUcontext cur = NULL;
    *pushed = false;
    CUresult r = a->cuCtxGetCurrent(&cur);
    if (r != CUDA_SUCCESS || cur == d->ctx)
        return r;
    if (!cur)
        return a->cuCtxSetCurrent(d->ctx);
    r = a->cuCtxPushCurrent(d->ctx);
    *pushed = r == CUDA_SUCCESS;
    return r;
}

static void leave(kf_cu_dev *d, bool pushed)
{
    CUcontext popped;
    if (pushed)
        d->api->cuCtxPopCurrent(&popped);
}

/* Opens a scope for function 'fn' (a C string naming the vtable call);
 * returns from the caller on failure. */
#define ENTER(d, err, fn)                                                                                    \
    bool pushed_ = false;                                                                                    \
    do {                                                                                                     \
        CUresult r_ = enter((d), &pushed_);                                                                  \
        if (r_ != CUDA_SUCCESS)                                                                              \
            return cu_fail((d)->api, (err), r_, "cuCtxSetCurrent", "%s", (fn));                            \
    } while (0)
#define LEAVE(d) leave((d), pushed_)

static CUstream stream_of(kf_cu_dev *d, void *stream) { return stream ? (CUstream)stream : d->stream; }

/* -- Devices ------------------------------------------------------------------------ */

static int cu_count(void)
{
    const kf_cu_api *a = get_api(NULL);
    int n = 0;
    if (!a || a->cuInit(0) != CUDA_SUCCESS || a->cuDeviceGetCount(&n) != CUDA_SUCCESS || n < 0)
        return 0;
    return n;
}

/* Chooses what NVRTC compiles for on this device. */
static void choose_target(kf_cu_dev *d, int cc)
{
    int archs[128];
    int na = nvrtc_archs(archs, 128);
    snprintf(d->target, sizeof d->target, "%s", d->arch);
    d->target_why[0] = 0;
    if (na == 0)
        return; /* NVRTC cannot say: try the exact arch and let it answer */
    for (int i = 0; i < na; i++)
        if (archs[i] == cc)
            return;
    if (cc > archs[na - 1]) {
        /* A device newer than this NVRTC: PTX for the newest arch it knows,
         * which the driver compiles for the device when loading. */
        snprintf(d->target, sizeof d->target, "compute_%d", archs[na - 1]);
        return;
    }
    int major = 0, minor = 0;
    nvrtcVersion(&major, &minor);
    snprintf(d->target_why, sizeof d->target_why, "NVRTC %d.%d cannot target %s (it supports sm_%d to sm_%d)", major,
             minor, d->arch, archs[0], archs[na - 1]);
}

static void cu_close(void *dev);

static kf_status cu_open(int index, void **dev, kf_device_info *info, kf_rt_err *err)
{
    const char *why = NULL;
    const kf_cu_api *a = get_api(&why);
    if (!dev || !info) {
        set_err(err, "cuda open: null argument");
        return KF_ERR_INVALID_ARG;
    }
    *dev = NULL;
    if (!a) {
        set_err(err, "%s", why);
        return KF_ERR_NO_DEVICE;
    }
    CUresult r = a->cuInit(0);
    if (r != CUDA_SUCCESS) {
        cu_fail(a, err, r, "cuInit", NULL);
        return KF_ERR_NO_DEVICE;
    }
    int n = 0;
    if ((r = a->cuDeviceGetCount(&n)) != CUDA_SUCCESS) {
        cu_fail(a, err, r, "cuDeviceGetCount", NULL);
        return KF_ERR_NO_DEVICE;
    }
    if (index < 0 || index >= n) {
        set_err(err, "CUDA device %d does not exist (%d present)", index, n);
        return index < 0 ? KF_ERR_INVALID_ARG : KF_ERR_NO_DEVICE;
    }

    kf_cu_dev *d = calloc(1, sizeof *d);
    if (!d) {
        set_err(err, "out of memory");
        return KF_ERR_NO_MEMORY;
    }
    d->api = a;
    d->ordinal = index;
    kf_status s;
    if ((r = a->cuDeviceGet(&d->cudev, index)) != CUDA_SUCCESS) {
        s = cu_fail(a, err, r, "cuDeviceGet", "device %d", index);
        free(d);
        return s;
    }
    if ((r = a->cuDevicePrimaryCtxRetain(&d->ctx, d->cudev)) != CUDA_SUCCESS) {
        s = cu_fail(a, err, r, "cuDevicePrimaryCtxRetain", "device %d", index);
        free(d);
        /* a device that is busy, prohibited or lost is not usable */
        return s == KF_ERR_NO_MEMORY ? s : KF_ERR_NO_DEVICE;
    }

    memset(info, 0, sizeof *info);
    info->backend = KF_BACKEND_CUDA;
    int ccmaj = 0, ccmin = 0, sms = 0, drv = 0;
    size_t mem = 0;
    struct {
        int *out;
        CUdevice_attribute attr;
        const char *name;
    } attrs[] = {
        { &ccmaj, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "compute capability major" },
        { &ccmin, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "compute capability minor" },
        { &sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "multiprocessor count" },
        { &d->max_grid, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, "max grid dim x" },
    };
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
        if ((r = a->cuDeviceGetAttribute(attrs[i].out, attrs[i].attr, d->cudev)) != CUDA_SUCCESS) {
            s = cu_fail(a, err, r, "cuDeviceGetAttribute", "%s", attrs[i].name);
            goto fail;
        }
    }
    if ((r = a->cuDeviceGetName(info->name, (int)sizeof info->name, d->cudev)) != CUDA_SUCCESS) {
        s = cu_fail(a, err, r, "cuDeviceGetName", NULL);
        goto fail;
    }
    info->name[sizeof info->name - 1] = 0;
    if ((r = a->cuDeviceTotalMem(&mem, d->cudev)) != CUDA_SUCCESS) {
        s = cu_fail(a, err, r, "cuDeviceTotalMem", NULL);
        goto fail;
    }
    if ((r = a->cuDriverGetVersion(&drv)) != CUDA_SUCCESS) {
        s = cu_fail(a, err, r, "cuDriverGetVersion", NULL);
        goto fail;
    }
    snprintf(d->arch, sizeof d->arch, "sm_%d%d", ccmaj, ccmin);
    snprintf(info->arch, sizeof info->arch, "%s", d->arch);
    snprintf(info->driver, sizeof info->driver, "%d.%d", drv / 1000, (drv % 1000) / 10);
    info->memory_bytes = mem;
    info->compute_units = sms;
    /* peak DRAM bandwidth: two transfers a memory clock over the bus; left 0
     * (unknown) where the driver gives neither */
    int mem_khz = 0, bus_bits = 0;
    if (a->cuDeviceGetAttribute(&mem_khz, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, d->cudev) == CUDA_SUCCESS &&
        a->cuDeviceGetAttribute(&bus_bits, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, d->cudev) == CUDA_SUCCESS &&
        mem_khz > 0 && bus_bits > 0)
        info->memory_gbps = 2.0 * mem_khz * 1e3 * (bus_bits / 8) / 1e9;
    info->fp64 = info->fp16 = true;
    info->gpu = true;
    info->sm = ccmaj * 10 + ccmin;
    choose_target(d, info->sm);
    kf_rt_cuda_compiler_id(d->compiler_id, sizeof d->compiler_id);

    /* The default stream: a stream of our own, not the legacy NULL stream,
     * which would synchronise with every blocking stream of the context. */
    bool pushed_ = false;
    if ((r = enter(d, &pushed_)) != CUDA_SUCCESS) {
        s = cu_fail(a, err, r, "cuCtxSetCurrent", "device %d", index);
        goto fail;
    }
    r = a->cuStreamCreate(&d->stream, CU_STREAM_NON_BLOCKING);
    leave(d, pushed_);
    if (r != CUDA_SUCCESS) {
        s = cu_fail(a, err, r, "cuStreamCreate", "the default stream");
        goto fail;
    }
    *dev = d;
    return KF_OK;
fail:
    cu_close(d);
    return s;
}

static void cu_close(void *dev)
{
    kf_cu_dev *d = dev;
    if (!d)
        return;
    const kf_cu_api *a = d->api;
    if (d->stream) {
        bool pushed = false;
        if (enter(d, &pushed) == CUDA_SUCCESS) {
            a->cuStreamSynchronize(d->stream);
            a->cuStreamDestroy(d->stream);
            leave(d, pushed);
        }
    }
    /* Leave no dangling current context behind on this thread. */
    CUcontext cur = NULL;
    if (a->cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == d->ctx)
        a->cuCtxSetCurrent(NULL);
    a->cuDevicePrimaryCtxRelease(d->cudev);
    free(d);
}

static const char *cu_compiler_id(void *dev)
{
    kf_cu_dev *d = dev;
    return d ? d->compiler_id : "";
}

/* -- Programs ------------------------------------------------------------------------ */

static kf_status cu_compile(void *dev, const char *src, size_t len, void **bin, size_t *binlen, kf_rt_err *err)
{
    kf_cu_dev *d = dev;
    if (!d) {
        set_err(err, "cuda compile: no device");
        return KF_ERR_INVALID_ARG;
    }
    if (d->target_why[0]) {
        set_err(err, "%s", d->target_why);
        return KF_ERR_UNSUPPORTED;
    }
    return kf_rt_cuda_compile_arch(src, len, d->target, bin, binlen, err);
}

/* A function looked up in a module: kept by the module (freed by unload),
 * found again by name, so repeated lookups cost no memory. */
typedef struct kf_cu_fn {
    struct kf_cu_fn *next;
    CUfunction f;
    int max_threads;         /* block size limit of this kernel (registers) */
    int nparams;             /* -1: unknown (the driver cannot say) */
    size_t *psize;           /* nparams sizes */
    char name[];
} kf_cu_fn;

typedef struct kf_cu_mod {
    CUmodule m;
    pthread_mutex_t lock;    /* fns */
    kf_cu_fn *fns;
    bool checked;            /* read each entry point's block limit and parameter sizes (not for a verified cache entry) */
} kf_cu_mod;

/* Reads a little-endian integer of n bytes at p. */
static uint64_t rd_le(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

/* cuModuleLoadData takes no length: make sure the image cannot lead the
 * driver past the end of the blob (a truncated cache entry, a wrong file). */
static bool image_ok(const unsigned char *b, size_t n, char *why, size_t whylen)
{
    if (n >= 4 && memcmp(b, "\177ELF", 4) == 0) {
        if (n < 64 || b[4] != 2 /* ELFCLASS64 */ || b[5] != 1 /* little endian */) {
            snprintf(why, whylen, "not a 64-bit little-endian ELF cubin (%zu bytes)", n);
            return false;
        }
        uint64_t phoff = rd_le(b + 0x20, 8), shoff = rd_le(b + 0x28, 8);
        uint64_t phsz = rd_le(b + 0x36, 2) * rd_le(b + 0x38, 2);
        uint64_t shsz = rd_le(b + 0x3A, 2) * rd_le(b + 0x3C, 2);
        if (phoff > n || phsz > n - phoff || shoff > n || shsz > n - shoff) {
            snprintf(why, whylen, "truncated cubin (%zu bytes; headers reach past the end)", n);
            return false;
        }
        return true;
    }
    if (n >= 4 && rd_le(b, 4) == 0xBA55ED50u) {
        /* fatbin: header magic, version, header size, fat size */
        if (n < 16 || rd_le(b + 6, 2) + rd_le(b + 8, 8) > n) {
            snprintf(why, whylen, "truncated fatbin (%zu bytes)", n);
            return false;
        }
        return true;
    }
    if (n == 0 || memchr(b, 0, n) == NULL) {
        snprintf(why, whylen, "neither a cubin, a fatbin nor NUL-terminated PTX (%zu bytes)", n);
        return false;
    }
    return true;
}

static kf_status cu_load(void *dev, const void *bin, size_t binlen, bool from_cache, void **mod, kf_rt_err *err)
{
    kf_cu_dev *d = dev;
    const kf_cu_api *a = d->api;
    char why[160];
    if (!mod || !bin) {
        set_err(err, "cuda load: null argument");
        return KF_ERR_INVALID_ARG;
    }
    *mod = NULL;
    if (!image_ok(bin, binlen, why, sizeof why)) {
        set_err(err, "cuModuleLoadData: %s", why);
        return KF_ERR_INVALID_ARG;
    }
    kf_cu_mod *m = calloc(1, sizeof *m);
    if (!m) {
        set_err(err, "out of memory loading a %zu-byte module", binlen);
        return KF_ERR_NO_MEMORY;
    }
    /* The driver reads the image's headers in place, and ELF64 and fatbin
     * headers hold 8-byte fields: an image that is not 8-byte aligned gets
     * an aligned copy.  (Blobs straight from the disk cache's rows are
     * 8-byte aligned, so they load with no copy.) */
    void *copy = NULL;
    if ((uintptr_t)bin % 8 != 0) {
        if (!(copy = malloc(binlen))) {
            free(m);
            set_err(err, "out of memory loading a %zu-byte module", binlen);
            return KF_ERR_NO_MEMORY;
        }
        bin = memcpy(copy, bin, binlen);
    }

    /* The Ex form only to get the JIT log when the image is PTX. */
    char log[1024];
    log[0] = 0;
    CUjit_option opt[] = { CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES };
    void *val[] = { log, (void *)(uintptr_t)sizeof log };
    bool pushed = false;
    CUresult r = enter(d, &pushed);
    if (r == CUDA_SUCCESS) {
        r = a->cuModuleLoadDataEx(&m->m, bin, 2, opt, val);
        leave(d, pushed);
    }
    free(copy);
    if (r != CUDA_SUCCESS) {
        free(m);
        log[sizeof log - 1] = 0;
        return cu_fail(a, err, r, "cuModuleLoadData", "%zu-byte image for %s%s%s", binlen, d->arch,
                       log[0] ? ": " : "", log);
    }
    pthread_mutex_init(&m->lock, NULL);
    m->checked = !from_cache;
    *mod = m;
    return KF_OK;
}

static void cu_unload(void *dev, void *mod)
{
    kf_cu_dev *d = dev;
    kf_cu_mod *m = mod;
    if (!m)
        return;
    bool pushed = false;
    if (enter(d, &pushed) == CUDA_SUCCESS) {
        d->api->cuModuleUnload(m->m);
        leave(d, pushed);
    }
    for (kf_cu_fn *f = m->fns, *next; f; f = next) {
        next = f->next;
        free(f->psize);
        free(f);
    }
    pthread_mutex_destroy(&m->lock);
    free(m);
}

/* The sizes of f's parameters, where the driver can say. */
static void param_info(const kf_cu_api *a, kf_cu_fn *f)
{
    f->nparams = -1;
#if CUDA_VERSION >= 12040
    if (!a->cuFuncGetParamInfo)
        return;
    size_t cap = 0, n = 0, off = 0, sz = 0;
    size_t *sizes = NULL;
    for (;;) {
        if (a->cuFuncGetParamInfo(f->f, n, &off, &sz) != CUDA_SUCCESS)
            break; /* CUDA_ERROR_INVALID_VALUE past the last parameter */
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            size_t *grown = realloc(sizes, cap * sizeof *sizes);
            if (!grown) {
                free(sizes);
                return;
            }
            sizes = grown;
        }
        sizes[n++] = sz;
        if (n > 65536)
            break;
    }
    f->psize = sizes;
    f->nparams = (int)n;
#else
    (void)a;
#endif
}

static kf_status cu_function(void *dev, void *mod, const char *name, void **fn, kf_rt_err *err)
{
    kf_cu_dev *d = dev;
    kf_cu_mod *m = mod;
    const kf_cu_api *a = d->api;
    if (!m || !name || !fn) {
        set_err(err, "cuda function: null argument");
        return KF_ERR_INVALID_ARG;
    }
    *fn = NULL;
    pthread_mutex_lock(&m->lock);
    for (kf_cu_fn *f = m->fns; f; f = f->next) {
        if (strcmp(f->name, name) == 0) {
            *fn = f;
            pthread_mutex_unlock(&m->lock);
            return KF_OK;
        }
    }
    size_t nl = strlen(name);
    kf_cu_fn *f = calloc(1, sizeof *f + nl + 1);
    if (!f) {
        pthread_mutex_unlock(&m->lock);
        set_err(err, "out of memory");
        return KF_ERR_NO_MEMORY;
    }
    memcpy(f->name, name, nl + 1);
    kf_status s = KF_OK;
    bool pushed_ = false;
    CUresult r = enter(d, &pushed_);
    if (r != CUDA_SUCCESS) {
        s = cu_fail(a, err, r, "cuCtxSetCurrent", "function");
    } else {
        r = a->cuModuleGetFunction(&f->f, m->m, name);
        if (r != CUDA_SUCCESS) {
            s = cu_fail(a, err, r, "cuModuleGetFunction", "kernel '%s'", name);
        } else if (!m->checked) {
            /* a verified cache entry: the driver checks the block at launch */
            f->max_threads = 1024;
            f->nparams = -1;
        } else if ((r = a->cuFuncGetAttribute(&f->max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f->f)) !=
                   CUDA_SUCCESS) {
            s = cu_fail(a, err, r, "cuFuncGetAttribute", "kernel '%s'", name);
        } else {
            param_info(a, f);
        }
        LEAVE(d);
    }
    if (s != KF_OK) {
        pthread_mutex_unlock(&m->lock);
        free(f);
        return s;
    }
    f->next = m->fns;
    m->fns = f;
    pthread_mutex_unlock(&m->lock);
    *fn = f;
    return KF_OK;
}

/* -- Memory ---------------------------------------------------------------------------- */

/* A handle is the device address itself. */
static CUdeviceptr dptr(const void *buf) { return (CUdeviceptr)(uintptr_t)buf; }

static kf_status cu_alloc(void *dev, size_t bytes, void **buf, kf_rt_err *err)
{
    kf_cu_dev *d = dev;
    CUdeviceptr p = 0;
    if (!buf) {
        set_err(err, "cuda alloc: null argument");
        return KF_ERR_INVALID_ARG;
    }
    *buf = NULL;
    ENTER(d, err, "alloc");
    /* 0 bytes still gets a real, distinct address (the driver refuses 0). */
    CUresult r = d->api->cuMemAlloc(&p, bytes ? bytes : 256);
    LEAVE(d);
    if (r != CUDA_SUCCESS)
        return cu_fail(d->api, err, r, "cuMemAlloc", "%zu bytes", bytes);
    *buf = (void *)(uintptr_t)p;
    return KF_OK;
}

static void cu_free(void *dev, void *buf)
{
    kf_cu_dev *d = dev;
    bool pushed = false;
    if (!buf || enter(d, &pushed) != CUDA_SUCCESS)
        return;
    d->api->cuMemFree(dptr(buf));
    leave(d, pushed);
}

/* Portable: pinned for every context of the process, not only d's. */
static kf_status cu_host_alloc(void *dev, size_t bytes, void **ptr, kf_rt_err *err)
{
    kf_cu_dev *d = dev;
    if (!ptr) {
        set_err(err, "cuda host_alloc: null argument");
        return KF_ERR_INVALID_ARG;
    }
    *ptr = NULL;
    ENTER(d, err, "host_alloc");
    CUresult r = d->api->cuMemHostAlloc(ptr, bytes ? bytes : 1, CU_MEMHOSTALLOC_PORTABLE);
    LEAVE(d);
    if (r != CUDA_SUCCESS) {
        *ptr = NULL;
        return cu_fail(d->api, err, r, "cuMemHostAlloc", "%zu bytes", bytes);
    }
    return KF_OK;
}

static void cu_host_free(void *dev, void *ptr)
{
    kf_cu_dev *d = dev;
    bool pushed = false;
    if (!ptr || enter(d, &pushed) != CUDA_SUCCESS)
        return;
    d->api->cuMemFreeHost(ptr);
    leave(d, pushed);
}

static kf_status cu_copy(void *dev, kf_rt_copy kind, void *dst, size_t dstoff, const void *src, size_t srcoff,
                         size_t bytes, void *stream, bool sync, kf_rt_err *err)
{
    kf_cu_dev *d = dev;
    const kf_cu_api *a = d->api;
    if ((!dst || !src) && bytes) {
        set_err(err, "cuda copy: null buffer or host pointer");
        return KF_ERR_INVALID_ARG;
    }
    CUstream st = stream_of(d, stream);
    CUresult r = CUDA_SUCCESS;
    const char *what = "cuMemcpy";
    ENTER(d, err, "copy");
    if (bytes) {
        switch (kind) {
        case KF_COPY_H2D:
            what = "cuMemcpyHtoDAsync";
            r = a->cuMemcpyHtoDAsync(dptr(dst) + dstoff, (const char *)src + srcoff, bytes, st);
            break;
        case KF_COPY_D2H:
            what = "cuMemcpyDtoHAsync";
            r = a->cuMemcpyDtoHAsync((char *)dst + dstoff, dptr(src) + srcoff, bytes, st);
            break;
        case KF_COPY_D2D:
            what = "cuMemcpyDtoDAsync";
            r = a->cuMemcpyDtoDAsync(dptr(dst) + dstoff, dptr(src) + srcoff, bytes, st);
            break;
        default:
            LEAVE(d);
            set_err(err, "cuda copy: bad kind %d", (int)kind);
            return KF_ERR_INVALID_ARG;
        }
    }
    if (r == CUDA_SUCCESS && sync) {
        what = "cuStreamSynchronize";
        r = a->cuStreamSynchronize(st);
    }
    LEAVE(d);
    if (r != CUDA_SUCCESS)
        return cu_fail(a, err, r, what, "%zu bytes", bytes);
    return KF_OK;
}

static kf_status cu_fill(void *dev, void *buf, size_t off, uint32_t pattern, size_t bytes, void *stream,
                         kf_rt_err *err)
{
    kf_cu_dev *d = dev;
    if (!buf || bytes % 4 || off % 4) {
        set_err(err, "cuda fill: %s (offset %zu, %zu bytes)", !buf ? "null buffer" : "not a multiple of 4 bytes", off,
                bytes);
        return KF_ERR_INVALID_ARG;
    }
    if (!bytes)
        return KF_OK;
    ENTER(d, err, "fill");
    CUresult r = d->api->cuMemsetD32Async(dptr(buf) + off, pattern, bytes / 4, stream_of(d, stream));
    LEAVE(d);
    if (r != CUDA_SUCCESS)
        return cu_fail(d->api, err, r, "cuMemsetD32Async", "%zu bytes", bytes);
    return KF_OK;
}

/* -- Launch ------------------------------------------------------------------------------- */

enum { KF_CU_INLINE_ARGS = 32 };

static kf_status cu_launch(void *dev, void *fn, uint64_t grid, uint32_t block, const kf_rt_arg *args, int nargs,
                           void *stream, kf_rt_err *err)
{
    kf_cu_dev *d = dev;
    kf_cu_fn *f = fn;
    if (!f || nargs < 0 || (nargs && !args)) {
        set_err(err, "cuda launch: null kernel or arguments");
        return KF_ERR_INVALID_ARG;
    }
    if (grid == 0)
        return KF_OK;
    if (grid > (uint64_t)d->max_grid) {
        set_err(err, "launch of '%s': grid of %llu blocks exceeds the device limit %d", f->name,
                (unsigned long long)grid, d->max_grid);
        return KF_ERR_INVALID_ARG;
    }
    if (block == 0 || block > (uint32_t)f->max_threads) {
        set_err(err, "launch of '%s': block of %u threads; this kernel allows 1 to %d", f->name, block,
                f->max_threads);
        return KF_ERR_INVALID_ARG;
    }
    if (f->nparams >= 0) {
        if (nargs != f->nparams) {
            set_err(err, "launch of '%s': %d arguments given, the kernel takes %d", f->name, nargs, f->nparams);
            return KF_ERR_INVALID_ARG;
        }
        for (int i = 0; i < nargs; i++) {
            size_t want = args[i].bytes ? args[i].size : sizeof(CUdeviceptr);
            if (want != f->psize[i]) {
                set_err(err, "launch of '%s': argument %d is %zu bytes (%s), the kernel's parameter is %zu", f->name,
                        i, want, args[i].bytes ? "by value" : "a buffer", f->psize[i]);
                return KF_ERR_INVALID_ARG;
            }
        }
    }

    /* kernelParams[i] points at the argument's value: the bytes themselves,
     * or a CUdeviceptr holding the buffer's address. */
    void *pinline[KF_CU_INLINE_ARGS];
    CUdeviceptr dinline[KF_CU_INLINE_ARGS];
    void **params = pinline;
    CUdeviceptr *ptrs = dinline;
    if (nargs > KF_CU_INLINE_ARGS) {
        params = malloc((size_t)nargs * sizeof *params);
        ptrs = malloc((size_t)nargs * sizeof *ptrs);
        if (!params || !ptrs) {
            free(params);
            free(ptrs);
            set_err(err, "out of memory for %d kernel arguments", nargs);
            return KF_ERR_NO_MEMORY;
        }
    }
    for (int i = 0; i < nargs; i++) {
        if (args[i].bytes) {
            params[i] = (void *)args[i].bytes;
        } else {
            ptrs[i] = dptr(args[i].buf) + args[i].offset;
            params[i] = &ptrs[i];
        }
    }
    kf_status s = KF_OK;
    bool pushed = false;
    CUresult r = enter(d, &pushed);
    if (r != CUDA_SUCCESS) {
        s = cu_fail(d->api, err, r, "cuCtxSetCurrent", "launch");
    } else {
        r = d->api->cuLaunchKernel(f->f, (unsigned)grid, 1, 1, block, 1, 1, 0, stream_of(d, stream),
                                   nargs ? params : NULL, NULL);
        leave(d, pushed);
        if (r != CUDA_SUCCESS)
            s = cu_fail(d->api, err, r, "cuLaunchKernel", "kernel '%s', grid %llu, block %u", f->name,
                        (unsigned long long)grid, block);
    }
    if (params != pinline) {
        free(params);
        free(ptrs);
    }
    return s;
}

/* -- Streams and events ------------------------------------------------------------------ */

static kf_status cu_stream_create(void *dev, void **stream, kf_rt_err *err)
{
    kf_cu_dev *d = dev;
    CUstream s = NULL;
    if (!stream) {
        set_err(err, "cuda stream_create: null argument");
        return KF_ERR_INVALID_ARG;
    }
    *stream = NULL;
    ENTER(d, err, "stream_create");
    CUresult r = d->api->cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
    LEAVE(d);
    if (r != CUDA_SUCCESS)
        return cu_fail(d->api, err, r, "cuStreamCreate", NULL);
    *stream = s;
    return KF_OK;
}

/* A CUstream of the device's primary context, which other CUDA libraries
 * on this device share (torch, CuPy): NULL or CU_STREAM_LEGACY (the legacy
 * default stream), CU_STREAM_PER_THREAD, or a created stream. */
static kf_status cu_stream_wrap(void *dev, void *native, void **stream, kf_rt_err *err)
{
    kf_cu_dev *d = dev;
    CUstream s = native ? (CUstream)native : CU_STREAM_LEGACY;
    CUcontext c = NULL;
    if (!stream) {
        set_err(err, "cuda stream_wrap: null argument");
        return KF_ERR_INVALID_ARG;
    }
    *stream = NULL;
    ENTER(d, err, "stream_wrap");
    CUresult r = d->api->cuStreamGetCtx(s, &c);
    LEAVE(d);
    if (r != CUDA_SUCCESS)
        return cu_fail(d->api, err, r, "cuStreamGetCtx", "stream %p", native);
    if (c != d->ctx) {
        set_err(err, "stream %p belongs to another CUDA context than device %d's primary context", native,
                d->ordinal);
        return KF_ERR_CONTEXT;
    }
    *stream = s;
    return KF_OK;
}

static void cu_stream_destroy(void *dev, void *stream)
{
    kf_cu_dev *d = dev;
    bool pushed = false;
    if (!stream || enter(d, &pushed) != CUDA_SUCCESS)
        return;
    /* queued work still completes; the driver frees the stream afterwards */
    d->api->cuStreamDestroy((CUstream)stream);
    leave(d, pushed);
}

static kf_status cu_stream_sync(void *dev, void *stream, kf_rt_err *err)
{
    kf_cu_dev *d = dev;
    ENTER(d, err, "stream_sync");
    CUresult r = d->api->cuStreamSynchronize(stream_of(d, stream));
    LEAVE(d);
    return r == CUDA_SUCCESS ? KF_OK : cu_fail(d->api, err, r, "cuStreamSynchronize", NULL);
}

static kf_status cu_event_create(void *dev, void **event, kf_rt_err *err)
{
    kf_cu_dev *d = dev;
    CUevent e = NULL;
    if (!event) {
        set_err(err, "cuda event_create: null argument");
        return KF_ERR_INVALID_ARG;
    }
    *event = NULL;
    ENTER(d, err, "event_create");
    CUresult r = d->api->cuEventCreate(&e, CU_EVENT_DEFAULT); /* timing enabled */
    LEAVE(d);
    if (r != CUDA_SUCCESS)
        return cu_fail(d->api, err, r, "cuEventCreate", NULL);
    *event = e;
    return KF_OK;
}

static void cu_event_destroy(void *dev, void *event)
{
    kf_cu_dev *d = dev;
    bool pushed = false;
    if (!event || enter(d, &pushed) != CUDA_SUCCESS)
        return;
    d->api->cuEventDestroy((CUevent)event);
    leave(d, pushed);
}

/* Whether st is capturing (the caller has d's context current).  A
 * record or wait there must be an external node of the graph: a plain one
 * only joins streams inside the capture. */
static bool capturing(kf_cu_dev *d, CUstream st)
{
#if KF_CU_GRAPHS
    CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
    return d->api->graphs && d->api->cuStreamIsCapturing(st, &cs) == CUDA_SUCCESS &&
           cs == CU_STREAM_CAPTURE_STATUS_ACTIVE;
#else
    (void)d;
    (void)st;
    return false;
#endif
}

static kf_status cu_event_record(void *dev, void *event, void *stream, kf_rt_err *err)
{
    kf_cu_dev *d = dev;
    if (!event) {
        set_err(err, "cuda event_record: null event");
        return KF_ERR_INVALID_ARG;
    }
    CUstream st = stream_of(d, stream);
    ENTER(d, err, "event_record");
    CUresult r;
#if KF_CU_GRAPHS
    if (capturing(d, st))
        r = d->api->cuEventRecordWithFlags((CUevent)event, st, CU_EVENT_RECORD_EXTERNAL);
    else
#endif
        r = d->api->cuEventRecord((CUevent)event, st);
    LEAVE(d);
    return r == CUDA_SUCCESS ? KF_OK : cu_fail(d->api, err, r, "cuEventRecord", NULL);
}

static kf_status cu_stream_wait(void *dev, void *stream, void *event, kf_rt_err *err)
{
    kf_cu_dev *d = dev;
    if (!event) {
        set_err(err, "cuda stream_wait: null event");
        return KF_ERR_INVALID_ARG;
    }
    CUstream st = stream_of(d, stream);
    ENTER(d, err, "stream_wait");
#if KF_CU_GRAPHS
    unsigned flags = capturing(d, st) ? CU_EVENT_WAIT_EXTERNAL : 0;
#else
    unsigned flags = 0;
#endif
    CUresult r = d->api->cuStreamWaitEvent(st, (CUevent)event, flags);
    LEAVE(d);
    return r == CUDA_SUCCESS ? KF_OK : cu_fail(d->api, err, r, "cuStreamWaitEvent", NULL);
}

static kf_status cu_event_sync(void *dev, void *event, kf_rt_err *err)
{
    kf_cu_dev *d = dev;
    if (!event) {
        set_err(err, "cuda event_sync: null event");
        return KF_ERR_INVALID_ARG;
    }
    ENTER(d, err, "event_sync");
    CUresult r = d->api->cuEventSynchronize((CUevent)event);
    LEAVE(d);
    return r == CUDA_SUCCESS ? KF_OK : cu_fail(d->api, err, r, "cuEventSynchronize", NULL);
}

static kf_status cu_event_elapsed(void *dev, void *start, void *end, float *ms, kf_rt_err *err)
{
    kf_cu_dev *d = dev;
    if (!start || !end || !ms) {
        set_err(err, "cuda event_elapsed: null argument");
        return KF_ERR_INVALID_ARG;
    }
    ENTER(d, err, "event_elapsed");
    CUresult r = d->api->cuEventElapsedTime(ms, (CUevent)start, (CUevent)end);
    LEAVE(d);
    return r == CUDA_SUCCESS ? KF_OK : cu_fail(d->api, err, r, "cuEventElapsedTime", NULL);
}

/* -- Capture and replay: CUDA graphs ---------------------------------------------------------- *
 * RELAXED capture mode: scratch that grows during a capture is allocated
 * with cuMemAlloc, which the GLOBAL and THREAD_LOCAL modes forbid on the
 * capturing thread; other threads stay free to use the context too. */

#if KF_CU_GRAPHS
static kf_status cu_capture_begin(void *dev, void *stream, kf_rt_err *err)
{
    kf_cu_dev *d = dev;
    if (!d->api->graphs) {
        set_err(err, "this driver has no CUDA 12 graph API (cuGraphInstantiateWithFlags, cuStreamBeginCapture_v2)");
        return KF_ERR_UNSUPPORTED;
    }
    if (!stream) {
        set_err(err, "the default stream cannot be captured");
        return KF_ERR_INVALID_ARG;
    }
    if ((CUstream)stream == CU_STREAM_LEGACY) {   /* kf_stream_wrap's */
        set_err(err, "CUDA cannot capture its legacy default stream");
        return KF_ERR_INVALID_ARG;
    }
    ENTER(d, err, "capture_begin");
    CUresult r = d->api->cuStreamBeginCapture((CUstream)stream, CU_STREAM_CAPTURE_MODE_RELAXED);
    LEAVE(d);
    return r == CUDA_SUCCESS ? KF_OK : cu_fail(d->api, err, r, "cuStreamBeginCapture", NULL);
}

/* The executable graph; the captured graph goes at once (an instantiated
 * graph does not need it). */
static kf_status cu_capture_end(void *dev, void *stream, void **graph, kf_rt_err *err)
{
    kf_cu_dev *d = dev;
    const kf_cu_api *a = d->api;
    CUgraph g = NULL;
    CUgraphExec x = NULL;
    *graph = NULL;
    ENTER(d, err, "capture_end");
    const char *what = "cuStreamEndCapture";
    CUresult r = a->cuStreamEndCapture((CUstream)stream, &g);
    if (r == CUDA_SUCCESS) {
        what = "cuGraphInstantiate";
        r = a->cuGraphInstantiate(&x, g, 0);
    }
    if (g)
        a->cuGraphDestroy(g);
    LEAVE(d);
    if (r == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)
        return cu_fail(a, err, r, what, "a call during the capture could not be captured");
    if (r != CUDA_SUCCESS)
        return cu_fail(a, err, r, what, NULL);
    *graph = x;
    return KF_OK;
}

static kf_status cu_graph_launch(void *dev, void *graph, void *stream, kf_rt_err *err)
{
    kf_cu_dev *d = dev;
    ENTER(d, err, "graph_launch");
    CUresult r = d->api->cuGraphLaunch((CUgraphExec)graph, stream_of(d, stream));
    LEAVE(d);
    return r == CUDA_SUCCESS ? KF_OK : cu_fail(d->api, err, r, "cuGraphLaunch", NULL);
}

/* Launches in flight finish first (the driver frees it after them). */
static void cu_graph_free(void *dev, void *graph)
{
    kf_cu_dev *d = dev;
    bool pushed = false;
    if (!graph || enter(d, &pushed) != CUDA_SUCCESS)
        return;
    d->api->cuGraphExecDestroy((CUgraphExec)graph);
    leave(d, pushed);
}
#endif

/* -- The vtable ---------------------------------------------------------------------------- */

static const kf_backend_ops kf_cu_ops = {
    .name = "cuda",
    .kind = KF_BACKEND_CUDA,
    .count = cu_count,
    .open = cu_open,
    .close = cu_close,
    .compile = cu_compile,
    .load = cu_load,
    .unload = cu_unload,
    .function = cu_function,
    .alloc = cu_alloc,
    .free = cu_free,
    .copy = cu_copy,
    .fill = cu_fill,
    .launch = cu_launch,
    .stream_create = cu_stream_create,
    .stream_wrap = cu_stream_wrap,
    .stream_destroy = cu_stream_destroy,
    .stream_sync = cu_stream_sync,
    .event_create = cu_event_create,
    .event_destroy = cu_event_destroy,
    .event_record = cu_event_record,
    .stream_wait = cu_stream_wait,
    .event_sync = cu_event_sync,
    .event_elapsed = cu_event_elapsed,
    .compiler_id = cu_compiler_id,
    .host_alloc = cu_host_alloc,
    .host_free = cu_host_free,
#if KF_CU_GRAPHS
    .capture_begin = cu_capture_begin,
    .capture_end = cu_capture_end,
    .graph_launch = cu_graph_launch,
    .graph_free = cu_graph_free,
#endif
};

const kf_backend_ops *kf_rt_cuda_backend(void) { return &kf_cu_ops; }
