/* CUDA backend extras that need no GPU and no driver: NVRTC compiles for a
 * named architecture (tests, `fusec build`) and the compiler identity that
 * goes into cache keys.  The backend itself is kf_rt_cuda_backend() in
 * backend.h. */
#ifndef KF_RT_CUDA_H
#define KF_RT_CUDA_H

#include "backend.h"

/* Compile CUDA C source (len bytes, need not be NUL-terminated) with NVRTC.
 * arch "sm_XY" (optionally with an "a"/"f" suffix) gives a cubin (an ELF
 * image); "compute_XY" gives PTX text, NUL included in *binlen.  *bin is
 * malloc'ed; the caller frees it with free().  Kernels must be declared
 * extern "C" so that they keep their names.  Returns KF_ERR_INVALID_ARG for
 * a malformed arch, KF_ERR_UNSUPPORTED for one this NVRTC cannot target,
 * KF_ERR_COMPILE with the NVRTC log ("kfuse.cu(LINE): error: ...") when the
 * source does not compile. */
kf_status kf_rt_cuda_compile_arch(const char *src, size_t len, const char *arch, void **bin, size_t *binlen,
                                  kf_rt_err *err);

/* The identity of the compiler and of its fixed options, for cache keys:
 * "nvrtc 13.0 -default-device" (the NVRTC loaded at run time).  The same
 * string the backend's compiler_id() returns.  Writes at most len bytes,
 * always NUL-terminated. */
void kf_rt_cuda_compiler_id(char *buf, size_t len);

#endif /* KF_RT_CUDA_H */
