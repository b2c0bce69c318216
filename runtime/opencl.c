/* OpenCL backend: the kf_backend_ops vtable over the ICD loader.  Every
 * platform's devices, GPUs first; one context and one profiling in-order
 * queue (the default stream) per opened device; OpenCL C 1.2 programs. */

#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS /* clCreateCommandQueue, for 1.2 devices */
#include <CL/cl.h>

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"

/* -- Rules ------------------------------------------------------------------
 * Device order: every platform is asked for all of its devices; the usable
 * ones (available, with a compiler, OpenCL 1.2 or later) are numbered GPUs
 * first, then accelerators, then the rest (CPU, custom), each class in
 * platform order and then in the platform's own order.  So index 0 is a GPU
 * when any GPU is present, and kf_device_info.gpu says which one it is.
 * Nothing is cached between calls: count() and open() enumerate again.
 *
 * Build options: "-cl-std=CL1.2", plus -cl-fp32-correctly-rounded-divide-sqrt
 * where the device offers it (CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT; without
 * it OpenCL allows 2.5 ulp for f32 division and 3 ulp for sqrt), plus
 * -DKF_ONE_PASS on a GPU, whose elementwise and warp grids from
 * kf_cg_launch_rule cover the space (docs/codegen.md); a CPU device keeps
 * the grid-stride loops over its capped grid.  Never -cl-fast-relaxed-math, -cl-mad-enable
 * or -cl-denorms-are-zero: kfuse's float semantics are IEEE unless the
 * caller asks otherwise.  OpenCL C
 * contracts a*b+c into an fma by default; generated code that must not
 * says "#pragma OPENCL FP_CONTRACT OFF" itself (the source is codegen's).
 *
 * Threads: OpenCL objects are thread-safe except kernel arguments, which
 * are state of the cl_kernel.  A function carries a mutex held from the
 * first clSetKernelArg to the clEnqueueNDRangeKernel, so one function object
 * can be launched from many threads (the enqueue snapshots the arguments).
 * This was chosen over clCloneKernel (OpenCL 2.1) for being simple and
 * working on 1.2 devices; the critical section holds no wait.
 *
 * Events: a recorded event is a marker (clEnqueueMarkerWithWaitList) whose
 * CL_PROFILING_COMMAND_END is its time.  open() checks once that the device
 * profiles markers (PoCL 3.1 does); where it does not, an event is recorded
 * as a 4-byte fill of the event's own scratch buffer, a real command that
 * every device profiles.  KFUSE_OPENCL_EVENTS=fill forces the fill (tests).
 * Commands that other queues may wait on are flushed (the spec requires a
 * flush before an event is waited on from another queue), and so is every
 * launch and asynchronous copy, so that queued work starts at once. */

/* -- Errors ------------------------------------------------------------------ */

#define OCL_ERRORS(_)                                                                                  \
    _(CL_SUCCESS) _(CL_DEVICE_NOT_FOUND) _(CL_DEVICE_NOT_AVAILABLE) _(CL_COMPILER_NOT_AVAILABLE)       \
    _(CL_MEM_OBJECT_ALLOCATION_FAILURE) _(CL_OUT_OF_RESOURCES) _(CL_OUT_OF_HOST_MEMORY)                \
    _(CL_PROFILING_INFO_NOT_AVAILABLE) _(CL_MEM_COPY_OVERLAP) _(CL_IMAGE_FORMAT_MISMATCH)              \
    _(CL_IMAGE_FORMAT_NOT_SUPPORTED) _(CL_BUILD_PROGRAM_FAILURE) _(CL_MAP_FAILURE)                     \
    _(CL_MISALIGNED_SUB_BUFFER_OFFSET) _(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)                 \
    _(CL_COMPILE_PROGRAM_FAILURE) _(CL_LINKER_NOT_AVAILABLE) _(CL_LINK_PROGRAM_FAILURE)                \
    _(CL_DEVICE_PARTITION_FAILED) _(CL_KERNEL_ARG_INFO_NOT_AVAILABLE) _(CL_INVALID_VALUE)              \
    _(CL_INVALID_DEVICE_TYPE) _(CL_INVALID_PLATFORM) _(CL_INVALID_DEVICE) _(CL_INVALID_CONTEXT)        \
    _(CL_INVALID_QUEUE_PROPERTIES) _(CL_INVALID_COMMAND_QUEUE) _(CL_INVALID_HOST_PTR)                  \
    _(CL_INVALID_MEM_OBJECT) _(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR) _(CL_INVALID_IMAGE_SIZE)            \
    _(CL_INVALID_SAMPLER) _(CL_INVALID_BINARY) _(CL_INVALID_BUILD_OPTIONS) _(CL_INVALID_PROGRAM)       \
    _(CL_INVALID_PROGRAM_EXECUTABLE) _(CL_INVALID_KERNEL_NAME) _(CL_INVALID_KERNEL_DEFINITION)         \
    _(CL_INVALID_KERNEL) _(CL_INVALID_ARG_INDEX) _(CL_INVALID_ARG_VALUE) _(CL_INVALID_ARG_SIZE)        \
    _(CL_INVALID_KERNEL_ARGS) _(CL_INVALID_WORK_DIMENSION) _(CL_INVALID_WORK_GROUP_SIZE)               \
    _(CL_INVALID_WORK_ITEM_SIZE) _(CL_INVALID_GLOBAL_OFFSET) _(CL_INVALID_EVENT_WAIT_LIST)             \
    _(CL_INVALID_EVENT) _(CL_INVALID_OPERATION) _(CL_INVALID_GL_OBJECT) _(CL_INVALID_BUFFER_SIZE)      \
    _(CL_INVALID_MIP_LEVEL) _(CL_INVALID_GLOBAL_WORK_SIZE) _(CL_INVALID_PROPERTY)                      \
    _(CL_INVALID_IMAGE_DESCRIPTOR) _(CL_INVALID_COMPILER_OPTIONS) _(CL_INVALID_LINKER_OPTIONS)         \
    _(CL_INVALID_DEVICE_PARTITION_COUNT) _(CL_INVALID_PIPE_SIZE) _(CL_INVALID_DEVICE_QUEUE)            \
    _(CL_INVALID_SPEC_ID) _(CL_MAX_SIZE_RESTRICTION_EXCEEDED)

/* The name of an OpenCL error code ("CL_INVALID_VALUE"); unknown codes are
 * written into buf as "CL error -9999". */
static const char *ocl_errname(cl_int rc, char *buf, size_t cap)
{
    switch (rc) {
#define OCL_CASE(c) \
    case c: return #c;
        OCL_ERRORS(OCL_CASE)
#undef OCL_CASE
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";
    default: snprintf(buf, cap, "CL error %d", (int)rc); return buf;
    }
}

static kf_status ocl_status(cl_int rc)
{
    switch (rc) {
    case CL_SUCCESS: return KF_OK;
    case CL_OUT_OF_HOST_MEMORY:
    case CL_MEM_OBJECT_ALLOCATION_FAILURE: return KF_ERR_NO_MEMORY;
    case CL_BUILD_PROGRAM_FAILURE:
    case CL_COMPILE_PROGRAM_FAILURE:
    case CL_LINK_PROGRAM_FAILURE: return KF_ERR_COMPILE;
    case CL_INVALID_KERNEL_NAME: return KF_ERR_NAME;
    case CL_DEVICE_NOT_FOUND:
    case CL_DEVICE_NOT_AVAILABLE:
    case -1001: return KF_ERR_NO_DEVICE;
    default: return KF_ERR_DEVICE;
    }
}

static kf_status ocl_fail(kf_rt_err *err, kf_status s, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static kf_status ocl_fail(kf_rt_err *err, kf_status s, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return s;
}

/* "what: CL_NAME" with the status that rc maps to. */
static kf_status ocl_clfail(kf_rt_err *err, const char *what, cl_int rc)
{
    char buf[32];
    return ocl_fail(err, ocl_status(rc), "%s: %s", what, ocl_errname(rc, buf, sizeof buf));
}

/* -- Devices ------------------------------------------------------------------ */

typedef struct ocl_found {
    cl_platform_id platform;
    cl_device_id device;
    bool gpu;
} ocl_found;

typedef struct ocl_dev {
    cl_platform_id platform;
    cl_device_id device;
    cl_context ctx;
    cl_command_queue queue;   /* the default stream */
    bool cl20;                /* clCreateCommandQueueWithProperties is there */
    bool marker_events;       /* markers carry profiling times */
    char build_options[96];
    char compiler_id[1280];   /* platform, device, driver, options: for cache keys */
    pthread_mutex_t host_lock; /* guards host */
    struct ocl_host { void *ptr; cl_mem mem; } *host; /* mapped pinned allocations (host_alloc) */
    int nhost, hostcap;
} ocl_dev;

/* A device string (malloc'd, NUL-terminated), or NULL. */
static char *ocl_dev_string(cl_device_id d, cl_device_info what)
{
    size_t n = 0;
    if (clGetDeviceInfo(d, what, 0, NULL, &n) != CL_SUCCESS)
        return NULL;
    char *s = malloc(n + 1);
    if (!s)
        return NULL;
    if (clGetDeviceInfo(d, what, n, s, NULL) != CL_SUCCESS) {
        free(s);
        return NULL;
    }
    s[n] = '\0';
    return s;
}

/* Copies a device string into out[cap], without surrounding blanks. */
static void ocl_dev_string_into(cl_device_id d, cl_device_info what, char *out, size_t cap)
{
    char *s = ocl_dev_string(d, what);
    const char *p = s ? s : "";
    while (*p == ' ')
        p++;
    snprintf(out, cap, "%s", p);
    size_t n = strlen(out);
    while (n > 0 && (out[n - 1] == ' ' || out[n - 1] == '\n'))
        out[--n] = '\0';
    free(s);
}

/* Whether the blank-separated list holds the word. */
static bool ocl_has_word(const char *list, const char *word)
{
    size_t w = strlen(word);
    for (const char *p = list; p && *p;) {
        while (*p == ' ')
            p++;
        size_t n = strcspn(p, " ");
        if (n == w && memcmp(p, word, w) == 0)
            return true;
        p += n;
    }
    return false;
}

/* Major*10+minor of an "OpenCL X.Y ..." version string; 0 if unparsable. */
static int ocl_version(const char *v)
{
    int major = 0, minor = 0;
    if (!v || sscanf(v, "OpenCL %d.%d", &major, &minor) != 2)
        return 0;
    return major * 10 + minor;
}

/* 0 GPU, 1 accelerator, 2 anything else; -1 when kfuse cannot use it. */
static int ocl_device_class(cl_device_id d)
{
    cl_device_type type = 0;
    cl_bool avail = CL_FALSE, compiler = CL_FALSE;
    if (clGetDeviceInfo(d, CL_DEVICE_TYPE, sizeof type, &type, NULL) != CL_SUCCESS ||
        clGetDeviceInfo(d, CL_DEVICE_AVAILABLE, sizeof avail, &avail, NULL) != CL_SUCCESS ||
        clGetDeviceInfo(d, CL_DEVICE_COMPILER_AVAILABLE, sizeof compiler, &compiler, NULL) != CL_SUCCESS ||
        !avail || !compiler)
        return -1;
    char *v = ocl_dev_string(d, CL_DEVICE_VERSION);
    int ver = ocl_version(v);
    free(v);
    if (ver < 12)
        return -1;
    return (type & CL_DEVICE_TYPE_GPU) ? 0 : (type & CL_DEVICE_TYPE_ACCELERATOR) ? 1 : 2;
}

/* Lists the usable devices in kfuse order into *out (malloc'd; NULL when
 * there are none) and returns how many.  On failure returns 0 and, if
 * why is given, the reason. */
static int ocl_enumerate(ocl_found **out, kf_rt_err *why)
{
    *out = NULL;
    cl_uint np = 0;
    cl_int rc = clGetPlatformIDs(0, NULL, &np);
    if (rc != CL_SUCCESS || np == 0) {
        if (rc == CL_SUCCESS || rc == -1001)
            ocl_fail(why, KF_ERR_NO_DEVICE, "clGetPlatformIDs: no OpenCL platform (no ICD installed)");
        else
            ocl_clfail(why, "clGetPlatformIDs", rc);
        return 0;
    }
    cl_platform_id *plats = calloc(np, sizeof *plats);
    cl_device_id **devs = calloc(np, sizeof *devs);
    cl_uint *nd = calloc(np, sizeof *nd);
    int *cls = NULL;
    ocl_found *list = NULL;
    int total = 0, n = 0;
    if (!plats || !devs || !nd || clGetPlatformIDs(np, plats, &np) != CL_SUCCESS)
        goto done;
    for (cl_uint p = 0; p < np; p++) {
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 0, NULL, &nd[p]) != CL_SUCCESS || nd[p] == 0) {
            nd[p] = 0;
            continue;
        }
        if (!(devs[p] = calloc(nd[p], sizeof **devs)) ||
            clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, nd[p], devs[p], &nd[p]) != CL_SUCCESS) {
            nd[p] = 0;
            continue;
        }
        total += (int)nd[p];
    }
    if (total == 0 || !(cls = calloc((size_t)total, sizeof *cls)) || !(list = calloc((size_t)total, sizeof *list)))
        goto done;
    for (cl_uint p = 0, k = 0; p < np; p++)
        for (cl_uint i = 0; i < nd[p]; i++)
            cls[k++] = ocl_device_class(devs[p][i]);
    for (int c = 0; c < 3; c++)
        for (cl_uint p = 0, k = 0; p < np; p++)
            for (cl_uint i = 0; i < nd[p]; i++, k++)
                if (cls[k] == c)
                    list[n++] = (ocl_found){ plats[p], devs[p][i], c == 0 };
done:
    if (n == 0) {
        free(list);
        list = NULL;
        ocl_fail(why, KF_ERR_NO_DEVICE, "no usable OpenCL device (available, with a compiler, OpenCL 1.2 or later)");
    }
    for (cl_uint p = 0; devs && p < np; p++)
        free(devs[p]);
    free(cls);
    free(nd);
    free(devs);
    free(plats);
    *out = list;
    return n;
}

static int ocl_count(void)
{
    ocl_found *list;
    int n = ocl_enumerate(&list, NULL);
    free(list);
    return n;
}

static cl_command_queue ocl_queue_new(ocl_dev *d, cl_int *rc)
{
    if (d->cl20) {
        const cl_queue_properties props[] = { CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0 };
        return clCreateCommandQueueWithProperties(d->ctx, d->device, props, rc);
    }
    return clCreateCommandQueue(d->ctx, d->device, CL_QUEUE_PROFILING_ENABLE, rc);
}

/* Whether a marker on the default queue gets a profiled end time. */
static bool ocl_markers_profiled(ocl_dev *d)
{
    const char *force = getenv("KFUSE_OPENCL_EVENTS");
    if (force && strcmp(force, "fill") == 0)
        return false;
    cl_event ev = NULL;
    cl_ulong end = 0;
    bool ok = clEnqueueMarkerWithWaitList(d->queue, 0, NULL, &ev) == CL_SUCCESS && clWaitForEvents(1, &ev) == CL_SUCCESS &&
              clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof end, &end, NULL) == CL_SUCCESS && end != 0;
    if (ev)
        clReleaseEvent(ev);
    return ok;
}

/* The untruncated strings that decide what a build produces: platform (its
 * version names PoCL's LLVM), device name and version, driver, options. */
static void ocl_compiler_id(ocl_dev *d)
{
    char pv[512] = "", dn[128] = "", dv[128] = "", dr[128] = "";
    size_t n = 0;
    char *p = NULL;
    if (clGetPlatformInfo(d->platform, CL_PLATFORM_VERSION, 0, NULL, &n) == CL_SUCCESS && (p = calloc(1, n + 1)) &&
        clGetPlatformInfo(d->platform, CL_PLATFORM_VERSION, n, p, NULL) == CL_SUCCESS)
        snprintf(pv, sizeof pv, "%s", p);
    free(p);
    ocl_dev_string_into(d->device, CL_DEVICE_NAME, dn, sizeof dn);
    ocl_dev_string_into(d->device, CL_DEVICE_VERSION, dv, sizeof dv);
    ocl_dev_string_into(d->device, CL_DRIVER_VERSION, dr, sizeof dr);
    snprintf(d->compiler_id, sizeof d->compiler_id, "opencl platform '%s' device '%s' '%s' driver '%s' %s", pv, dn, dv,
             dr, d->build_options);
}

static const char *ocl_compiler_id_of(void *dev)
{
    return dev ? ((ocl_dev *)dev)->compiler_id : "";
}

static void ocl_close(void *dev)
{
    ocl_dev *d = dev;
    if (!d)
        return;
    if (d->queue) {
        clFinish(d->queue);
        clReleaseCommandQueue(d->queue);
    }
    for (int i = 0; i < d->nhost; i++)
        clReleaseMemObject(d->host[i].mem);
    free(d->host);
    pthread_mutex_destroy(&d->host_lock);
    if (d->ctx)
        clReleaseContext(d->ctx);
    free(d);
}

static kf_status ocl_open(int index, void **dev, kf_device_info *info, kf_rt_err *err)
{
    if (!dev || !info)
        return ocl_fail(err, KF_ERR_INVALID_ARG, "opencl open: dev or info is NULL");
    *dev = NULL;
    ocl_found *list;
    int n = ocl_enumerate(&list, err);
    if (n == 0)
        return KF_ERR_NO_DEVICE;
    if (index < 0 || index >= n) {
        free(list);
        return ocl_fail(err, KF_ERR_NO_DEVICE, "OpenCL device %d does not exist (%d present)", index, n);
    }
    ocl_found f = list[index];
    free(list);

    ocl_dev *d = calloc(1, sizeof *d);
    if (!d)
        return ocl_fail(err, KF_ERR_NO_MEMORY, "opencl open: out of memory");
    pthread_mutex_init(&d->host_lock, NULL);
    d->platform = f.platform;
    d->device = f.device;
    char *ver = ocl_dev_string(f.device, CL_DEVICE_VERSION);
    d->cl20 = ocl_version(ver) >= 20;
    free(ver);
    const cl_context_properties props[] = { CL_CONTEXT_PLATFORM, (cl_context_properties)f.platform, 0 };
    cl_int rc;
    d->ctx = clCreateContext(props, 1, &f.device, NULL, NULL, &rc);
    if (!d->ctx) {
        ocl_close(d);
        return ocl_clfail(err, "clCreateContext", rc);
    }
    d->queue = ocl_queue_new(d, &rc);
    if (!d->queue) {
        const char *what = d->cl20 ? "clCreateCommandQueueWithProperties" : "clCreateCommandQueue";
        ocl_close(d);
        return ocl_clfail(err, what, rc);
    }
    d->marker_events = ocl_markers_profiled(d);
    cl_device_fp_config sfp = 0;
    if (clGetDeviceInfo(f.device, CL_DEVICE_SINGLE_FP_CONFIG, sizeof sfp, &sfp, NULL) != CL_SUCCESS)
        sfp = 0;
    snprintf(d->build_options, sizeof d->build_options, "-cl-std=CL1.2%s%s",
             (sfp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) ? " -cl-fp32-correctly-rounded-divide-sqrt" : "",
             f.gpu ? " -DKF_ONE_PASS" : "");
    ocl_compiler_id(d);

    memset(info, 0, sizeof *info);
    info->backend = KF_BACKEND_OPENCL;
    ocl_dev_string_into(f.device, CL_DEVICE_NAME, info->name, sizeof info->name);
    ocl_dev_string_into(f.device, CL_DEVICE_VERSION, info->arch, sizeof info->arch);
    ocl_dev_string_into(f.device, CL_DRIVER_VERSION, info->driver, sizeof info->driver);
    cl_ulong mem = 0;
    cl_uint cu = 0;
    cl_device_fp_config dfp = 0;
    clGetDeviceInfo(f.device, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof mem, &mem, NULL);
    clGetDeviceInfo(f.device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cu, &cu, NULL);
    if (clGetDeviceInfo(f.device, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof dfp, &dfp, NULL) != CL_SUCCESS)
        dfp = 0;
    info->memory_bytes = mem;
    info->compute_units = (int)cu;
    char *ext = ocl_dev_string(f.device, CL_DEVICE_EXTENSIONS);
    info->fp64 = ocl_has_word(ext, "cl_khr_fp64") || dfp != 0;
    info->fp16 = ocl_has_word(ext, "cl_khr_fp16");
    if (ocl_has_word(ext, "cl_nv_device_attribute_query")) {
        /* CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV, _MINOR_NV */
        cl_uint ccmaj = 0, ccmin = 0;
        if (clGetDeviceInfo(f.device, 0x4000, sizeof ccmaj, &ccmaj, NULL) == CL_SUCCESS &&
            clGetDeviceInfo(f.device, 0x4001, sizeof ccmin, &ccmin, NULL) == CL_SUCCESS && ccmaj < 100 && ccmin < 10)
            info->sm = (int)(ccmaj * 10 + ccmin);
    }
    free(ext);
    if (!info->fp64 && d->cl20) {
        /* 3.0 optional features; a query that 2.x devices do not know */
        cl_name_version feats[256];
        size_t sz = 0;
        if (clGetDeviceInfo(f.device, CL_DEVICE_OPENCL_C_FEATURES, sizeof feats, feats, &sz) == CL_SUCCESS)
            for (size_t i = 0; i < sz / sizeof *feats; i++)
                if (strncmp(feats[i].name, "__opencl_c_fp64", sizeof feats[i].name) == 0)
                    info->fp64 = true;
    }
    info->gpu = f.gpu;
    *dev = d;
    return KF_OK;
}

/* -- Programs and functions -------------------------------------------------- */

typedef struct ocl_fn {
    struct ocl_fn *next;
    cl_kernel kernel;
    pthread_mutex_t lock;   /* held from the first clSetKernelArg to the enqueue */
    char name[];
} ocl_fn;

typedef struct ocl_mod {
    cl_program program;
    pthread_mutex_t lock;   /* guards fns */
    ocl_fn *fns;            /* every function made from this module, freed by unload */
} ocl_mod;

/* A failed clBuildProgram: "what: CL_NAME: build log:" and as much of the
 * log's beginning (the first errors) as fits, cut at a line end. */
static kf_status ocl_build_fail(ocl_dev *d, cl_program prog, const char *what, cl_int rc, kf_rt_err *err)
{
    char buf[32];
    kf_status s = ocl_fail(err, ocl_status(rc) == KF_ERR_DEVICE ? KF_ERR_COMPILE : ocl_status(rc),
                           "%s: %s", what, ocl_errname(rc, buf, sizeof buf));
    if (!err)
        return s;
    size_t n = 0;
    char *log = NULL;
    if (clGetProgramBuildInfo(prog, d->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &n) == CL_SUCCESS && n > 0 &&
        (log = malloc(n + 1)) != NULL &&
        clGetProgramBuildInfo(prog, d->device, CL_PROGRAM_BUILD_LOG, n, log, NULL) == CL_SUCCESS) {
        log[n] = '\0';
        while (n > 0 && (log[n - 1] == '\0' || log[n - 1] == '\n' || log[n - 1] == ' '))
            log[--n] = '\0';
        size_t used = strlen(err->msg);
        size_t room = sizeof err->msg - used - 1;
        static const char tail[] = "\n[... build log truncated]";
        if (n == 0) {
            snprintf(err->msg + used, room + 1, ": empty build log");
        } else if (n + 13 <= room) {
            snprintf(err->msg + used, room + 1, ": build log:\n%s", log);
        } else {
            size_t keep = room - 13 - (sizeof tail - 1);
            while (keep > 0 && log[keep] != '\n')
                keep--;
            if (keep == 0)
                keep = room - 13 - (sizeof tail - 1);
            snprintf(err->msg + used, room + 1, ": build log:\n%.*s%s", (int)keep, log, tail);
        }
    }
    free(log);
    return s;
}

static kf_status ocl_compile(void *dev, const char *src, size_t len, void **bin, size_t *binlen, kf_rt_err *err)
{
    ocl_dev *d = dev;
    if (!d || !src || !bin || !binlen)
        return ocl_fail(err, KF_ERR_INVALID_ARG, "opencl compile: a NULL argument");
    *bin = NULL;
    *binlen = 0;
    cl_int rc;
    cl_program prog = clCreateProgramWithSource(d->ctx, 1, &src, &len, &rc);
    if (!prog)
        return ocl_clfail(err, "clCreateProgramWithSource", rc);
    rc = clBuildProgram(prog, 1, &d->device, d->build_options, NULL, NULL);
    if (rc != CL_SUCCESS) {
        kf_status s = ocl_build_fail(d, prog, "clBuildProgram", rc, err);
        clReleaseProgram(prog);
        return s;
    }
    size_t n = 0;
    kf_status s = KF_OK;
    unsigned char *out = NULL;
    rc = clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof n, &n, NULL);
    if (rc != CL_SUCCESS)
        s = ocl_clfail(err, "clGetProgramInfo(CL_PROGRAM_BINARY_SIZES)", rc);
    else if (n == 0)
        s = ocl_fail(err, KF_ERR_UNSUPPORTED, "clGetProgramInfo: the OpenCL driver gives no program binary");
    else if (!(out = malloc(n)))
        s = ocl_fail(err, KF_ERR_NO_MEMORY, "opencl compile: out of memory for a %zu-byte binary", n);
    else if ((rc = clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof out, &out, NULL)) != CL_SUCCESS)
        s = ocl_clfail(err, "clGetProgramInfo(CL_PROGRAM_BINARIES)", rc);
    clReleaseProgram(prog);
    if (s != KF_OK) {
        free(out);
        return s;
    }
    *bin = out;
    *binlen = n;
    return KF_OK;
}

static kf_status ocl_load(void *dev, const void *bin, size_t binlen, bool from_cache, void **mod, kf_rt_err *err)
{
    (void)from_cache;
    ocl_dev *d = dev;
    if (!d || !bin || binlen == 0 || !mod)
        return ocl_fail(err, KF_ERR_INVALID_ARG, "opencl load: a NULL or empty argument");
    *mod = NULL;
    cl_int rc, binrc = CL_SUCCESS;
    const unsigned char *b = bin;
    cl_program prog = clCreateProgramWithBinary(d->ctx, 1, &d->device, &binlen, &b, &binrc, &rc);
    if (!prog || rc != CL_SUCCESS || binrc != CL_SUCCESS) {
        if (prog)
            clReleaseProgram(prog);
        return ocl_clfail(err, "clCreateProgramWithBinary", rc != CL_SUCCESS ? rc : binrc);
    }
    rc = clBuildProgram(prog, 1, &d->device, d->build_options, NULL, NULL);
    if (rc != CL_SUCCESS) {
        kf_status s = ocl_build_fail(d, prog, "clBuildProgram (from binary)", rc, err);
        clReleaseProgram(prog);
        return s;
    }
    ocl_mod *m = calloc(1, sizeof *m);
    if (!m) {
        clReleaseProgram(prog);
        return ocl_fail(err, KF_ERR_NO_MEMORY, "opencl load: out of memory");
    }
    m->program = prog;
    pthread_mutex_init(&m->lock, NULL);
    *mod = m;
    return KF_OK;
}

static void ocl_unload(void *dev, void *mod)
{
    (void)dev;
    ocl_mod *m = mod;
    if (!m)
        return;
    for (ocl_fn *f = m->fns, *next; f; f = next) {
        next = f->next;
        clReleaseKernel(f->kernel);
        pthread_mutex_destroy(&f->lock);
        free(f);
    }
    clReleaseProgram(m->program);
    pthread_mutex_destroy(&m->lock);
    free(m);
}

/* One function object per kernel name and module: asking again returns it. */
static kf_status ocl_function(void *dev, void *mod, const char *name, void **fn, kf_rt_err *err)
{
    (void)dev;
    ocl_mod *m = mod;
    if (!m || !name || !fn)
        return ocl_fail(err, KF_ERR_INVALID_ARG, "opencl function: a NULL argument");
    *fn = NULL;
    kf_status s = KF_OK;
    pthread_mutex_lock(&m->lock);
    ocl_fn *f = m->fns;
    while (f && strcmp(f->name, name) != 0)
        f = f->next;
    if (!f) {
        size_t n = strlen(name);
        cl_int rc;
        cl_kernel k = clCreateKernel(m->program, name, &rc);
        if (!k) {
            char buf[32];
            s = ocl_fail(err, ocl_status(rc), "clCreateKernel: %s: no kernel named '%s' in the program",
                         ocl_errname(rc, buf, sizeof buf), name);
        } else if (!(f = malloc(sizeof *f + n + 1))) {
            clReleaseKernel(k);
            s = ocl_fail(err, KF_ERR_NO_MEMORY, "opencl function: out of memory");
        } else {
            f->kernel = k;
            pthread_mutex_init(&f->lock, NULL);
            memcpy(f->name, name, n + 1);
            f->next = m->fns;
            m->fns = f;
        }
    }
    pthread_mutex_unlock(&m->lock);
    *fn = f;
    return s;
}

/* -- Memory ------------------------------------------------------------------ */

/* Sizes are rounded up to 256 bytes, so a 0-byte buffer is a real handle and
 * a vector access at a buffer's tail stays inside the allocation. */
static kf_status ocl_alloc(void *dev, size_t bytes, void **buf, kf_rt_err *err)
{
    ocl_dev *d = dev;
    if (!d || !buf)
        return ocl_fail(err, KF_ERR_INVALID_ARG, "opencl alloc: a NULL argument");
    *buf = NULL;
    if (bytes > SIZE_MAX - 255)
        return ocl_fail(err, KF_ERR_NO_MEMORY, "opencl alloc: %zu bytes is too large", bytes);
    size_t n = bytes == 0 ? 256 : (bytes + 255) & ~(size_t)255;
    cl_int rc;
    cl_mem m = clCreateBuffer(d->ctx, CL_MEM_READ_WRITE, n, NULL, &rc);
    if (!m) {
        char b[32];
        return ocl_fail(err, rc == CL_INVALID_BUFFER_SIZE || ocl_status(rc) == KF_ERR_NO_MEMORY ? KF_ERR_NO_MEMORY : ocl_status(rc),
                        "clCreateBuffer(%zu bytes): %s", n, ocl_errname(rc, b, sizeof b));
    }
    *buf = m;
    return KF_OK;
}

static void ocl_free(void *dev, void *buf)
{
    (void)dev;
    if (buf)
        clReleaseMemObject((cl_mem)buf);
}

/* Pinned host memory the OpenCL way: a buffer the driver allocates in host
 * memory (CL_MEM_ALLOC_HOST_PTR), mapped once and left mapped; its pointer
 * is what the copies take.  The cl_mem is kept to unmap and release it. */
static kf_status ocl_host_alloc(void *dev, size_t bytes, void **ptr, kf_rt_err *err)
{
    ocl_dev *d = dev;
    if (!d || !ptr)
        return ocl_fail(err, KF_ERR_INVALID_ARG, "opencl host_alloc: a NULL argument");
    *ptr = NULL;
    size_t n = bytes ? bytes : 1;
    cl_int rc;
    char b[32];
    cl_mem m = clCreateBuffer(d->ctx, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, n, NULL, &rc);
    if (!m)
        return ocl_fail(err, ocl_status(rc) == KF_ERR_NO_MEMORY || rc == CL_INVALID_BUFFER_SIZE ? KF_ERR_NO_MEMORY
                                                                                              : ocl_status(rc),
                        "clCreateBuffer(CL_MEM_ALLOC_HOST_PTR, %zu bytes): %s", n, ocl_errname(rc, b, sizeof b));
    void *p = clEnqueueMapBuffer(d->queue, m, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, n, 0, NULL, NULL, &rc);
    if (!p) {
        clReleaseMemObject(m);
        return ocl_clfail(err, "clEnqueueMapBuffer", rc);
    }
    pthread_mutex_lock(&d->host_lock);
    if (d->nhost == d->hostcap) {
        int cap = d->hostcap ? 2 * d->hostcap : 8;
        struct ocl_host *grown = realloc(d->host, (size_t)cap * sizeof *grown);
        if (grown) {
            d->host = grown;
            d->hostcap = cap;
        }
    }
    bool kept = d->nhost < d->hostcap;
    if (kept)
        d->host[d->nhost++] = (struct ocl_host){ p, m };
    pthread_mutex_unlock(&d->host_lock);
    if (!kept) {
        clEnqueueUnmapMemObject(d->queue, m, p, 0, NULL, NULL);
        clFinish(d->queue);
        clReleaseMemObject(m);
        return ocl_fail(err, KF_ERR_NO_MEMORY, "opencl host_alloc: out of memory");
    }
    *ptr = p;
    return KF_OK;
}

static void ocl_host_free(void *dev, void *ptr)
{
    ocl_dev *d = dev;
    cl_mem m = NULL;
    pthread_mutex_lock(&d->host_lock);
    for (int i = 0; i < d->nhost && !m; i++)
        if (d->host[i].ptr == ptr) {
            m = d->host[i].mem;
            d->host[i] = d->host[--d->nhost];
        }
    pthread_mutex_unlock(&d->host_lock);
    if (!m)
        return;
    cl_event ev = NULL;
    if (clEnqueueUnmapMemObject(d->queue, m, ptr, 0, NULL, &ev) == CL_SUCCESS && ev) {
        clWaitForEvents(1, &ev);
        clReleaseEvent(ev);
    }
    clReleaseMemObject(m);
}

static cl_command_queue ocl_queue(ocl_dev *d, void *stream)
{
    return stream ? (cl_command_queue)stream : d->queue;
}

/* The host side takes its offset too (host pointer + offset). */
static kf_status ocl_copy(void *dev, kf_rt_copy kind, void *dst, size_t dstoff, const void *src, size_t srcoff,
                          size_t bytes, void *stream, bool sync, kf_rt_err *err)
{
    ocl_dev *d = dev;
    if (!d || !dst || !src)
        return ocl_fail(err, KF_ERR_INVALID_ARG, "opencl copy: a NULL argument");
    if (bytes == 0)
        return KF_OK;
    cl_command_queue q = ocl_queue(d, stream);
    cl_bool blocking = sync ? CL_TRUE : CL_FALSE;
    cl_int rc;
    const char *what;
    switch (kind) {
    case KF_COPY_H2D:
        what = "clEnqueueWriteBuffer";
        rc = clEnqueueWriteBuffer(q, (cl_mem)dst, blocking, dstoff, bytes, (const char *)src + srcoff, 0, NULL, NULL);
        break;
    case KF_COPY_D2H:
        what = "clEnqueueReadBuffer";
        rc = clEnqueueReadBuffer(q, (cl_mem)src, blocking, srcoff, bytes, (char *)dst + dstoff, 0, NULL, NULL);
        break;
    case KF_COPY_D2D:
        what = "clEnqueueCopyBuffer";
        rc = clEnqueueCopyBuffer(q, (cl_mem)src, (cl_mem)dst, srcoff, dstoff, bytes, 0, NULL, NULL);
        if (rc == CL_SUCCESS && sync) {
            what = "clFinish";
            rc = clFinish(q);
        }
        break;
    default: return ocl_fail(err, KF_ERR_INVALID_ARG, "opencl copy: unknown copy kind %d", (int)kind);
    }
    if (rc == CL_SUCCESS && !sync) {
        what = "clFlush";
        rc = clFlush(q);
    }
    return rc == CL_SUCCESS ? KF_OK : ocl_clfail(err, what, rc);
}

static kf_status ocl_fill(void *dev, void *buf, size_t off, uint32_t pattern, size_t bytes, void *stream, kf_rt_err *err)
{
    ocl_dev *d = dev;
    if (!d || !buf)
        return ocl_fail(err, KF_ERR_INVALID_ARG, "opencl fill: a NULL argument");
    if (bytes % 4 || off % 4)
        return ocl_fail(err, KF_ERR_INVALID_ARG, "opencl fill: offset %zu and size %zu must be multiples of 4", off, bytes);
    if (bytes == 0)
        return KF_OK;
    cl_command_queue q = ocl_queue(d, stream);
    cl_int rc = clEnqueueFillBuffer(q, (cl_mem)buf, &pattern, sizeof pattern, off, bytes, 0, NULL, NULL);
    if (rc != CL_SUCCESS)
        return ocl_clfail(err, "clEnqueueFillBuffer", rc);
    rc = clFlush(q);
    return rc == CL_SUCCESS ? KF_OK : ocl_clfail(err, "clFlush", rc);
}

/* -- Launch ------------------------------------------------------------------ */

static kf_status ocl_launch(void *dev, void *fn, uint64_t grid, uint32_t block, const kf_rt_arg *args, int nargs,
                            void *stream, kf_rt_err *err)
{
    ocl_dev *d = dev;
    ocl_fn *f = fn;
    if (!d || !f || nargs < 0 || (nargs > 0 && !args))
        return ocl_fail(err, KF_ERR_INVALID_ARG, "opencl launch: a NULL argument");
    if (block == 0)
        return ocl_fail(err, KF_ERR_INVALID_ARG, "launch of '%s': block size 0", f->name);
    if (grid == 0)
        return KF_OK;
    if (grid > SIZE_MAX / block)
        return ocl_fail(err, KF_ERR_INVALID_ARG, "launch of '%s': %llu blocks of %u overflow the global size",
                        f->name, (unsigned long long)grid, (unsigned)block);
    size_t global = (size_t)grid * block, local = block;
    cl_command_queue q = ocl_queue(d, stream);
    char what[64] = "clEnqueueNDRangeKernel";
    cl_int rc = CL_SUCCESS;
    pthread_mutex_lock(&f->lock);
    for (int i = 0; i < nargs && rc == CL_SUCCESS; i++) {
        if (args[i].bytes)
            rc = clSetKernelArg(f->kernel, (cl_uint)i, args[i].size, args[i].bytes);
        else
            rc = clSetKernelArg(f->kernel, (cl_uint)i, sizeof(cl_mem), &args[i].buf);
        if (rc != CL_SUCCESS)
            snprintf(what, sizeof what, "clSetKernelArg(arg %d)", i);
    }
    if (rc == CL_SUCCESS)
        rc = clEnqueueNDRangeKernel(q, f->kernel, 1, NULL, &global, &local, 0, NULL, NULL);
    pthread_mutex_unlock(&f->lock);
    if (rc == CL_SUCCESS) {
        snprintf(what, sizeof what, "clFlush");
        rc = clFlush(q);
    }
    if (rc != CL_SUCCESS) {
        char b[32];
        return ocl_fail(err, ocl_status(rc), "launch of '%s' (%zu work items in groups of %zu): %s: %s", f->name,
                        global, local, what, ocl_errname(rc, b, sizeof b));
    }
    return KF_OK;
}

/* -- Streams and events ------------------------------------------------------ */

static kf_status ocl_stream_create(void *dev, void **stream, kf_rt_err *err)
{
    ocl_dev *d = dev;
    if (!d || !stream)
        return ocl_fail(err, KF_ERR_INVALID_ARG, "opencl stream_create: a NULL argument");
    cl_int rc;
    cl_command_queue q = ocl_queue_new(d, &rc);
    *stream = q;
    return q ? KF_OK : ocl_clfail(err, d->cl20 ? "clCreateCommandQueueWithProperties" : "clCreateCommandQueue", rc);
}

/* Queued work still runs to completion (the release flushes the queue). */
static void ocl_stream_destroy(void *dev, void *stream)
{
    (void)dev;
    if (stream)
        clReleaseCommandQueue((cl_command_queue)stream);
}

static kf_status ocl_stream_sync(void *dev, void *stream, kf_rt_err *err)
{
    ocl_dev *d = dev;
    if (!d)
        return ocl_fail(err, KF_ERR_INVALID_ARG, "opencl stream_sync: dev is NULL");
    cl_int rc = clFinish(ocl_queue(d, stream));
    return rc == CL_SUCCESS ? KF_OK : ocl_clfail(err, "clFinish", rc);
}

typedef struct ocl_event {
    pthread_mutex_t lock;   /* guards ev, replaced by each record */
    cl_event ev;            /* NULL until recorded */
    cl_mem scratch;         /* target of the timing fill, when markers are not profiled */
} ocl_event;

static kf_status ocl_event_create(void *dev, void **event, kf_rt_err *err)
{
    ocl_dev *d = dev;
    if (!d || !event)
        return ocl_fail(err, KF_ERR_INVALID_ARG, "opencl event_create: a NULL argument");
    *event = NULL;
    ocl_event *e = calloc(1, sizeof *e);
    if (!e)
        return ocl_fail(err, KF_ERR_NO_MEMORY, "opencl event_create: out of memory");
    if (!d->marker_events) {
        cl_int rc;
        if (!(e->scratch = clCreateBuffer(d->ctx, CL_MEM_READ_WRITE, 4, NULL, &rc))) {
            free(e);
            return ocl_clfail(err, "clCreateBuffer(event scratch)", rc);
        }
    }
    pthread_mutex_init(&e->lock, NULL);
    *event = e;
    return KF_OK;
}

static void ocl_event_destroy(void *dev, void *event)
{
    (void)dev;
    ocl_event *e = event;
    if (!e)
        return;
    if (e->ev)
        clReleaseEvent(e->ev);
    if (e->scratch)
        clReleaseMemObject(e->scratch);
    pthread_mutex_destroy(&e->lock);
    free(e);
}

/* The event's current cl_event, retained (release it), or NULL if never recorded. */
static cl_event ocl_event_get(ocl_event *e)
{
    pthread_mutex_lock(&e->lock);
    cl_event ev = e->ev;
    if (ev)
        clRetainEvent(ev);
    pthread_mutex_unlock(&e->lock);
    return ev;
}

static kf_status ocl_event_record(void *dev, void *event, void *stream, kf_rt_err *err)
{
    ocl_dev *d = dev;
    ocl_event *e = event;
    if (!d || !e)
        return ocl_fail(err, KF_ERR_INVALID_ARG, "opencl event_record: a NULL argument");
    cl_command_queue q = ocl_queue(d, stream);
    cl_event ev = NULL;
    cl_int rc;
    const char *what;
    if (e->scratch) {
        const uint32_t zero = 0;
        what = "clEnqueueFillBuffer(event)";
        rc = clEnqueueFillBuffer(q, e->scratch, &zero, sizeof zero, 0, sizeof zero, 0, NULL, &ev);
    } else {
        what = "clEnqueueMarkerWithWaitList";
        rc = clEnqueueMarkerWithWaitList(q, 0, NULL, &ev);
    }
    if (rc != CL_SUCCESS)
        return ocl_clfail(err, what, rc);
    pthread_mutex_lock(&e->lock);
    cl_event old = e->ev;
    e->ev = ev;
    pthread_mutex_unlock(&e->lock);
    if (old)
        clReleaseEvent(old);
    rc = clFlush(q);
    return rc == CL_SUCCESS ? KF_OK : ocl_clfail(err, "clFlush", rc);
}

/* An event never recorded is complete: waiting on it does nothing. */
static kf_status ocl_stream_wait(void *dev, void *stream, void *event, kf_rt_err *err)
{
    ocl_dev *d = dev;
    if (!d || !event)
        return ocl_fail(err, KF_ERR_INVALID_ARG, "opencl stream_wait: a NULL argument");
    cl_event ev = ocl_event_get(event);
    if (!ev)
        return KF_OK;
    cl_command_queue q = ocl_queue(d, stream);
    cl_int rc = clEnqueueBarrierWithWaitList(q, 1, &ev, NULL);
    clReleaseEvent(ev);
    if (rc != CL_SUCCESS)
        return ocl_clfail(err, "clEnqueueBarrierWithWaitList", rc);
    rc = clFlush(q);
    return rc == CL_SUCCESS ? KF_OK : ocl_clfail(err, "clFlush", rc);
}

static kf_status ocl_event_sync(void *dev, void *event, kf_rt_err *err)
{
    if (!dev || !event)
        return ocl_fail(err, KF_ERR_INVALID_ARG, "opencl event_sync: a NULL argument");
    cl_event ev = ocl_event_get(event);
    if (!ev)
        return KF_OK;
    cl_int rc = clWaitForEvents(1, &ev);
    clReleaseEvent(ev);
    return rc == CL_SUCCESS ? KF_OK : ocl_clfail(err, "clWaitForEvents", rc);
}

/* The end time (ns) of a recorded, completed event. */
static kf_status ocl_event_time(ocl_event *e, const char *which, cl_ulong *t, kf_rt_err *err)
{
    cl_event ev = ocl_event_get(e);
    if (!ev)
        return ocl_fail(err, KF_ERR_INVALID_ARG, "event_elapsed: the %s event was never recorded", which);
    cl_int st = CL_COMPLETE;
    cl_int rc = clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL);
    kf_status s = KF_OK;
    char b[32];
    if (rc != CL_SUCCESS)
        s = ocl_clfail(err, "clGetEventInfo(CL_EVENT_COMMAND_EXECUTION_STATUS)", rc);
    else if (st < 0)
        s = ocl_fail(err, KF_ERR_DEVICE, "event_elapsed: the %s event's stream failed: %s", which, ocl_errname(st, b, sizeof b));
    else if (st != CL_COMPLETE)
        s = ocl_fail(err, KF_ERR_INVALID_ARG, "event_elapsed: the %s event has not completed yet", which);
    else if ((rc = clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof *t, t, NULL)) != CL_SUCCESS)
        s = ocl_clfail(err, "clGetEventProfilingInfo(CL_PROFILING_COMMAND_END)", rc);
    clReleaseEvent(ev);
    return s;
}

static kf_status ocl_event_elapsed(void *dev, void *start, void *end, float *ms, kf_rt_err *err)
{
    if (!dev || !start || !end || !ms)
        return ocl_fail(err, KF_ERR_INVALID_ARG, "opencl event_elapsed: a NULL argument");
    cl_ulong t0 = 0, t1 = 0;
    kf_status s = ocl_event_time(start, "start", &t0, err);
    if (s == KF_OK)
        s = ocl_event_time(end, "end", &t1, err);
    if (s != KF_OK)
        return s;
    *ms = (float)((double)(int64_t)(t1 - t0) / 1e6);
    return KF_OK;
}

/* -- The vtable ---------------------------------------------------------------- */

static const kf_backend_ops ocl_ops = {
    .name = "opencl",
    .kind = KF_BACKEND_OPENCL,
    .count = ocl_count,
    .open = ocl_open,
    .close = ocl_close,
    .compile = ocl_compile,
    .load = ocl_load,
    .unload = ocl_unload,
    .function = ocl_function,
    .alloc = ocl_alloc,
    .free = ocl_free,
    .copy = ocl_copy,
    .fill = ocl_fill,
    .launch = ocl_launch,
    .stream_create = ocl_stream_create,
    .stream_destroy = ocl_stream_destroy,
    .stream_sync = ocl_stream_sync,
    .event_create = ocl_event_create,
    .event_destroy = ocl_event_destroy,
    .event_record = ocl_event_record,
    .stream_wait = ocl_stream_wait,
    .event_sync = ocl_event_sync,
    .event_elapsed = ocl_event_elapsed,
    .compiler_id = ocl_compiler_id_of,
    .host_alloc = ocl_host_alloc,
    .host_free = ocl_host_free,
};

const kf_backend_ops *kf_rt_opencl_backend(void)
{
    return &ocl_ops;
}
