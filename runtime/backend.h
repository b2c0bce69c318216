/* The backend interface: a struct of function pointers per backend (CUDA,
 * OpenCL, CPU).  The rest of kfuse never names a backend's own API.
 * Handles are opaque to the core; every function returns a kf_status and on
 * failure writes a message (with the driver's own error name) to err. */
#ifndef KF_BACKEND_H
#define KF_BACKEND_H

#include "kfuse.h"

typedef struct kf_rt_err {
    char msg[2048];
} kf_rt_err;

/* One kernel parameter: a buffer handle or raw bytes passed by value. */
typedef struct kf_rt_arg {
    const void *bytes;   /* NULL for a buffer */
    size_t size;
    void *buf;           /* device buffer handle when bytes == NULL */
    size_t offset;       /* bytes past the buffer's start: nonzero only for a context whose kernels take
                          * array pointers (kf_context.array_ptrs); CUDA passes buf's address + offset */
} kf_rt_arg;

typedef enum kf_rt_copy { KF_COPY_H2D, KF_COPY_D2H, KF_COPY_D2D } kf_rt_copy;

typedef struct kf_backend_ops {
    const char *name;
    kf_backend kind;
    /* Number of usable devices (0 when the driver is missing); never fails. */
    int (*count)(void);
    /* Open device index; *dev is the backend's device state. */
    kf_status (*open)(int index, void **dev, kf_device_info *info, kf_rt_err *err);
    void (*close)(void *dev);
    /* Target description for codegen and cache keys ("sm_90", OpenCL
     * device + driver), and the generated-source language. */
    kf_status (*compile)(void *dev, const char *src, size_t len, void **bin, size_t *binlen, kf_rt_err *err);
    /* Load a compiled binary; bin is not used after the call returns (it
     * may point into the disk cache's row).  from_cache: bin is a disk
     * cache entry whose checksum and whole key (the generated source
     * included) were verified, so it is the binary of the very source this
     * process generated; a backend may skip checks that a fresh compile of
     * that source passed (CUDA: each entry point's block limit and
     * parameter sizes, read from the driver at a cost of about 25 us per
     * warm first call; the driver still refuses a block over the limit). */
    kf_status (*load)(void *dev, const void *bin, size_t binlen, bool from_cache, void **mod, kf_rt_err *err);
    void (*unload)(void *dev, void *mod);
    /* The entry point named name: thread-safe, the same handle for the same
     * name every time (the runtime resolves entry points at first launch,
     * from whichever thread launches first). */
    kf_status (*function)(void *dev, void *mod, const char *name, void **fn, kf_rt_err *err);
    kf_status (*alloc)(void *dev, size_t bytes, void **buf, kf_rt_err *err);
    void (*free)(void *dev, void *buf);
    /* Copy bytes; host pointers for the host side, (buffer, offset) for the
     * device side.  stream NULL: the backend's default stream; sync: wait
     * for completion before returning. */
    kf_status (*copy)(void *dev, kf_rt_copy kind, void *dst, size_t dstoff, const void *src, size_t srcoff,
                      size_t bytes, void *stream, bool sync, kf_rt_err *err);
    /* Fill a buffer range with a 32-bit pattern (bytes % 4 == 0). */
    kf_status (*fill)(void *dev, void *buf, size_t off, uint32_t pattern, size_t bytes, void *stream, kf_rt_err *err);
    kf_status (*launch)(void *dev, void *fn, uint64_t grid, uint32_t block, const kf_rt_arg *args, int nargs,
                        void *stream, kf_rt_err *err);
    kf_status (*stream_create)(void *dev, void **stream, kf_rt_err *err);
    /* The backend's handle for a native stream of the device's context
     * (kf_stream_wrap), checked; NULL where the backend takes none. */
    kf_status (*stream_wrap)(void *dev, void *native, void **stream, kf_rt_err *err);
    void (*stream_destroy)(void *dev, void *stream);
    kf_status (*stream_sync)(void *dev, void *stream, kf_rt_err *err);
    kf_status (*event_create)(void *dev, void **event, kf_rt_err *err);
    void (*event_destroy)(void *dev, void *event);
    kf_status (*event_record)(void *dev, void *event, void *stream, kf_rt_err *err);
    kf_status (*stream_wait)(void *dev, void *stream, void *event, kf_rt_err *err);
    kf_status (*event_sync)(void *dev, void *event, kf_rt_err *err);
    kf_status (*event_elapsed)(void *dev, void *start, void *end, float *ms, kf_rt_err *err);
    /* The members below are optional: NULL for a backend that has no such
     * thing, and the core then does without.
     *
     * The identity of the compiler and of the fixed options it is given,
     * for cache keys ("nvrtc 13.0 -default-device").  Stays valid until
     * close(dev). */
    const char *(*compiler_id)(void *dev);
    /* Host memory that copy() moves asynchronously by DMA (page-locked,
     * "pinned"), at least 64-byte aligned.  host_free takes a pointer
     * host_alloc gave. */
    kf_status (*host_alloc)(void *dev, size_t bytes, void **ptr, kf_rt_err *err);
    void (*host_free)(void *dev, void *ptr);
    /* For a backend whose events are the host clock, the CLOCK_MONOTONIC
     * time in ns at which a recorded, completed event was reached.  Traces
     * place device spans with it; without it they measure event_elapsed
     * from a base event. */
    kf_status (*event_host_ns)(void *dev, void *event, uint64_t *ns, kf_rt_err *err);
    /* Capture what is queued on stream (never the default stream) from now
     * on into a graph instead of running it; end the capture into a
     * launchable graph; launch it on a stream; free it (launches in flight
     * finish).  Without them kfuse records the calls itself (replay.c). */
    kf_status (*capture_begin)(void *dev, void *stream, kf_rt_err *err);
    kf_status (*capture_end)(void *dev, void *stream, void **graph, kf_rt_err *err);
    kf_status (*graph_launch)(void *dev, void *graph, void *stream, kf_rt_err *err);
    void (*graph_free)(void *dev, void *graph);
} kf_backend_ops;

/* The backends built into this library (NULL when not built). */
const kf_backend_ops *kf_rt_cuda_backend(void);
const kf_backend_ops *kf_rt_opencl_backend(void);
const kf_backend_ops *kf_rt_cpu_backend(void);

#endif /* KF_BACKEND_H */
