/* Host memory of a context (staging.c): kf_host_alloc'd pinned memory, the
 * pinned staging pool, the copy workers that fill and drain it, and the
 * measured copy rates.  kf_run_host (host.c) is built on these. */
#ifndef KF_RT_HOST_H
#define KF_RT_HOST_H

#include "runtime.h"

/* Defaults of the staging pool (docs/host.md): slots of pinned memory
 * allocated one by one as runs need them, never more than this. */
#define KF_RT_STAGING_SLOTS 4
#define KF_RT_STAGING_SLOT_BYTES ((size_t)64 << 20)

/* Settle the pool's size from opts, then env KFUSE_STAGING ("4x64M"), then
 * the defaults; nothing is allocated yet.  A bad setting is
 * KF_ERR_INVALID_ARG with the reason in why. */
kf_status kf_rt_host_open(kf_context *ctx, const kf_context_options *opts, char *why, size_t whylen);
/* Release every pinned allocation and slot and stop the workers (after the
 * streams are idle, before the backend closes). */
void kf_rt_host_close(kf_context *ctx);

/* Whether [p, p + bytes) lies inside one kf_host_alloc allocation of ctx. */
bool kf_rt_host_pinned(kf_context *ctx, const void *p, size_t bytes);

/* The pool's slot size and count. */
size_t kf_rt_slot_bytes(kf_context *ctx);
int kf_rt_slot_count(kf_context *ctx);
/* Take a free slot (allocating one while fewer than the limit exist) into
 * *slot.  When none is free: wait for one if 'wait', else *slot = NULL.
 * A caller that waits must hold no slot, so that waiting cannot deadlock. */
kf_status kf_rt_slot_take(kf_context *ctx, bool wait, void **slot);
void kf_rt_slot_give(kf_context *ctx, void *slot);

/* memcpy, split over the context's copy workers when n is large (one
 * thread cannot keep up with a PCIe 5 link). */
void kf_rt_host_copy(kf_context *ctx, void *dst, const void *src, size_t n);

/* Pinned copy rates between host and device, measured once per context on
 * first use (docs/host.md). */
typedef struct kf_rt_rates {
    double h2d, d2h;   /* bytes per second */
    double op_s;       /* fixed cost of one queued operation, seconds */
} kf_rt_rates;
kf_status kf_rt_host_rates(kf_context *ctx, kf_rt_rates *out);

#endif /* KF_RT_HOST_H */
