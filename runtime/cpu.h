/* The CPU backend: LLVM IR (codegen's KF_TARGET_LLVM) optimised for the
 * host, compiled to an object file and linked by an ORC LLJIT (cpu_llvm.c);
 * kernels run on a thread pool created once per context, streams are
 * ordered queues on it (cpu.c).  Module prefix kf_cpu_. */
#ifndef KF_CPU_H
#define KF_CPU_H

#include "backend.h"

/* -- LLVM (cpu_llvm.c) ----------------------------------------------------------- */

/* The host as LLVM sees it; the key material of every object compiled for it. */
typedef struct kf_cpu_host {
    char triple[128];
    char cpu[64];
    char *features;        /* "+avx2,+fma,...", malloc'd */
    char llvm_version[32]; /* "15.0.6" */
    char *id;              /* compiler identity for cache keys (malloc'd):
                            * "LLVM 15.0.6 default<O3> x86_64-pc-linux-gnu cpu=znver3 features=+..." */
} kf_cpu_host;

/* Initialise LLVM's native target (once per process) and describe the host. */
kf_status kf_cpu_llvm_host(kf_cpu_host *h, kf_rt_err *err);
void kf_cpu_llvm_host_free(kf_cpu_host *h);

/* Parse LLVM IR text (len bytes), optimise it with default<O3> for the host
 * and, when obj is not NULL, emit an object file (*obj malloc'd); when
 * optimized is not NULL, the optimised module as text (malloc'd).  A parse
 * or verifier error is KF_ERR_COMPILE with LLVM's message. */
kf_status kf_cpu_llvm_compile(const kf_cpu_host *h, const char *ir, size_t len, void **obj, size_t *objlen,
                              char **optimized, kf_rt_err *err);

/* Link an object file into a fresh JIT (one per module, so equal kernel
 * names of two modules never clash); C library symbols come from the
 * process.  No optimiser runs. */
kf_status kf_cpu_llvm_load(const void *obj, size_t len, void **jit, kf_rt_err *err);
/* Address of symbol name in a loaded module (links it on first use). */
kf_status kf_cpu_llvm_lookup(void *jit, const char *name, void **addr, kf_rt_err *err);
void kf_cpu_llvm_unload(void *jit);

/* -- Kernels ----------------------------------------------------------------------- *
 * Every entry point codegen writes for the LLVM target has this type: args
 * holds one pointer per kernel parameter (a buffer's memory, or the address
 * of a by-value parameter: the meta block, a scalar), in the parameter
 * order of the kernel ABI; the call does work units [begin, end) of the
 * launch and returns the launch's number of units (begin == end: nothing
 * done, a query). */
typedef int64_t (*kf_cpu_entry)(void **args, int64_t begin, int64_t end);

/* -- Tests ---------------------------------------------------------------------------- */

/* The number of pool threads a launch may use (1 .. the pool's size; 0
 * keeps it) and the fewest work units a launch needs before it is split
 * (0 keeps it; 1: split everything).  dev is a CPU context's device. */
void kf_cpu_tune(void *dev, int threads, int64_t min_split_units);

#endif /* KF_CPU_H */
