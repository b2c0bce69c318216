/* Tracing (KFUSE_TRACE, docs/trace.md): host spans of each phase and device
 * spans of each launch and copy, written as a Chrome trace-event JSON file.
 * Module prefix kf_trace_.  Off, every hook is one branch on ctx->trace:
 * no clock read, no lock, no allocation. */
#ifndef KF_TRACE_H
#define KF_TRACE_H

#include "runtime.h"

/* Open the trace of ctx when opts->trace_path (else env KFUSE_TRACE) names a
 * file; leaves ctx->trace NULL when neither does.  A file that cannot be
 * written is a cache-style warning and no trace, never a failure. */
void kf_trace_open(kf_context *ctx, const kf_context_options *opts);
/* Synchronise every stream, resolve every pending device span, write the
 * file's end and close it.  Called first by kf_context_destroy. */
void kf_trace_close(kf_context *ctx);

/* The host clock of every span: CLOCK_MONOTONIC in nanoseconds. */
uint64_t kf_trace_now(void);

/* A host span on the calling thread from t0 (kf_trace_begin) to now; name
 * is the phase, detail (may be NULL) what it worked on. */
void kf_trace_span(kf_trace *t, uint64_t t0, const char *name, const char *detail);

static inline uint64_t kf_trace_begin(kf_context *ctx) { return ctx->trace ? kf_trace_now() : 0; }
static inline void kf_trace_end(kf_context *ctx, uint64_t t0, const char *name, const char *detail)
{
    if (ctx->trace)
        kf_trace_span(ctx->trace, t0, name, detail);
}

/* Device spans.  kf_trace_device_begin records a start event on s before a
 * launch or copy is queued and returns its slot (-1: none, the span is
 * lost); kf_trace_device_end records the end event after it (ok: it was
 * queued; otherwise the slot is given back).  A kernel span (kernel >= 0)
 * is named "NAME kKERNEL" with entry in its args; a copy (kernel < 0) is
 * named NAME with bytes in its args.  The caller of both holds s->lock or
 * is the only thread queueing on s. */
int kf_trace_device_begin(kf_trace *t, kf_stream *s);
void kf_trace_device_end(kf_trace *t, int slot, kf_stream *s, bool ok, const char *name, int kernel,
                         const char *entry, uint64_t bytes);
/* kf_rt_issue(ctx, st, op), with a device span around it while tracing
 * (not while st captures: nothing runs then).  name, kernel, entry and
 * bytes as in kf_trace_device_end. */
static inline kf_status kf_trace_issue(kf_context *ctx, kf_stream *st, const kf_rt_op *op, const char *name,
                                       int kernel, const char *entry, uint64_t bytes, kf_rt_err *err)
{
    if (!ctx->trace || atomic_load(&st->capture))
        return kf_rt_issue(ctx, st, op, err);
    int span = kf_trace_device_begin(ctx->trace, st);
    kf_status s = kf_rt_issue(ctx, st, op, err);
    if (span >= 0)
        kf_trace_device_end(ctx->trace, span, st, s == KF_OK, name, kernel, entry, bytes);
    return s;
}

/* The span sequence number the next device span will get (kf_event_record
 * keeps it, kf_event_sync resolves the spans before it). */
uint64_t kf_trace_seq(kf_trace *t);
/* Spans queued on s before sequence number upto have completed (s was
 * synchronised, or an event recorded after them): turn them into trace
 * events and reuse their backend events. */
void kf_trace_resolve(kf_trace *t, kf_stream *s, uint64_t upto);

/* kf_stats fields of the trace: its file and the device time of the
 * kernels resolved so far. */
void kf_trace_stats(kf_trace *t, kf_stats *out);

#endif /* KF_TRACE_H */
