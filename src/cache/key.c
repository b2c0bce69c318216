/* Cache keys: the target description of a device or of a named CUDA arch,
 * a graph made ready to compile (canonical form, fused, emitted), and the
 * XXH3-128 hash of the key material.  The runtime and `fusec build` both
 * come through here, so they compute the same keys. */
#define XXH_INLINE_ALL /* XXH3_state_t on the stack: no allocation to fail; no call into libxxhash
                        * (the first one in a process costs a symbol lookup) */
#include "cache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

const char *kf_cache_kfuse_version(void)
{
#define KF_STR_(x) #x
#define KF_STR(x) KF_STR_(x)
    return KF_STR(KFUSE_VERSION_MAJOR) "." KF_STR(KFUSE_VERSION_MINOR) "." KF_STR(KFUSE_VERSION_PATCH);
#undef KF_STR
#undef KF_STR_
}

/* -- Targets ---------------------------------------------------------------------- */

static void options_text(kf_cache_target *t)
{
    snprintf(t->options, sizeof t->options, "fuse max_ops=%u max_param_bytes=%u recompute_max=%u fast_math=%d",
             t->fuse.max_ops, t->fuse.max_param_bytes, t->fuse.recompute_max, (int)t->fuse.fast_math);
}

kf_cg_caps kf_cache_caps_of(const kf_device_info *info, const kf_fuse_options *fuse)
{
    /* sm is set on CUDA devices and NVIDIA's OpenCL ones, whose compilers
     * both take inline PTX */
    return (kf_cg_caps){ .fp64 = info->fp64, .fp16 = info->fp16, .nan_minmax = info->sm >= 80, .gpu = info->gpu,
                         .ptx = info->sm > 0, .fast_math = fuse && fuse->fast_math };
}

kf_status kf_cache_target_of(const kf_device_info *info, const char *compiler_id, const kf_fuse_options *fuse,
                             kf_cache_target *out)
{
    if (!info || !out)
        return KF_ERR_INVALID_ARG;
    memset(out, 0, sizeof *out);
    out->backend = info->backend;
    switch (info->backend) {
    case KF_BACKEND_CUDA:
        /* the exact arch: NVRTC's output (cubin, or PTX for a device newer
         * than NVRTC) follows from it and the NVRTC version */
        out->lang = KF_TARGET_CUDA;
        snprintf(out->target, sizeof out->target, "%s", info->arch);
        break;
    case KF_BACKEND_OPENCL:
        out->lang = KF_TARGET_OPENCL;
        snprintf(out->target, sizeof out->target, "device '%s' version '%s' driver '%s'", info->name, info->arch,
                 info->driver);
        break;
    case KF_BACKEND_CPU:
        /* LLVM IR for the host: the triple here; the LLVM version, pipeline,
         * CPU name and features are the compiler identity (compiler_id:
         * "LLVM 15.0.6 default<O3> <triple> cpu=<cpu> features=<+a,-b,...>") */
        out->lang = KF_TARGET_LLVM;
        snprintf(out->target, sizeof out->target, "%s", info->arch);
        break;
    default:
        return KF_ERR_UNSUPPORTED;
    }
    out->caps = kf_cache_caps_of(info, fuse);
    snprintf(out->compiler, sizeof out->compiler, "%s", compiler_id ? compiler_id : "");
    if (fuse)
        out->fuse = *fuse;
    kf_fuse_options_default(&out->fuse);
    options_text(out);
    return KF_OK;
}

kf_status kf_cache_target_cuda_arch(const char *arch, const char *compiler_id, const kf_fuse_options *fuse,
                                    kf_cache_target *out)
{
    if (!arch || !out)
        return KF_ERR_INVALID_ARG;
    kf_device_info info;
    memset(&info, 0, sizeof info);
    info.backend = KF_BACKEND_CUDA;
    info.fp64 = info.fp16 = info.gpu = true; /* CUDA codegen checks no capability but nan_minmax */
    snprintf(info.arch, sizeof info.arch, "%s", arch);
    if (sscanf(arch, "sm_%d", &info.sm) != 1 && sscanf(arch, "compute_%d", &info.sm) != 1)
        info.sm = 0;
    return kf_cache_target_of(&info, compiler_id, fuse, out);
}

/* -- Key material ---------------------------------------------------------------- */

static void put_field(XXH3_state_t *st, const void *p, size_t n)
{
    unsigned char len[8];
    for (int i = 0; i < 8; i++)
        len[i] = (unsigned char)((uint64_t)n >> (8 * i));
    XXH3_128bits_update(st, len, 8);
    if (n)
        XXH3_128bits_update(st, p, n);
}

static void put_str(XXH3_state_t *st, const char *s) { put_field(st, s, strlen(s)); }

void kf_cache_key_hash(int format, const char *kfuse, const char *backend, const char *target,
                       const char *compiler, const char *options, const void *src, size_t len, uint8_t out[16])
{
    XXH3_state_t st;
    XXH3_INITSTATE(&st);
    XXH3_128bits_reset(&st);
    static const char magic[] = "kfuse-cache-key";
    XXH3_128bits_update(&st, magic, sizeof magic - 1);
    unsigned char fmt[4];
    for (int i = 0; i < 4; i++)
        fmt[i] = (unsigned char)((uint32_t)format >> (8 * i));
    XXH3_128bits_update(&st, fmt, 4);
    put_str(&st, kfuse);
    put_str(&st, backend);
    put_str(&st, target);
    put_str(&st, compiler);
    put_str(&st, options);
    put_field(&st, src, len);
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits_digest(&st));
    memcpy(out, c.digest, 16);
}

void kf_cache_key_make(kf_cache_key *k, const kf_cache_target *t, const char *src, size_t len)
{
    kf_cache_key_hash(KF_CACHE_FORMAT, kf_cache_kfuse_version(), kf_backend_name(t->backend), t->target,
                      t->compiler, t->options, src, len, k->hash);
    k->t = t;
    k->src = src;
    k->srclen = len;
}

void kf_cache_hex(const uint8_t hash[16], char out[33])
{
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 16; i++) {
        out[2 * i] = hex[hash[i] >> 4];
        out[2 * i + 1] = hex[hash[i] & 15];
    }
    out[32] = 0;
}

/* -- Preparing a graph ------------------------------------------------------------- */

void kf_cache_prep_free(kf_cache_prep *p)
{
    if (!p)
        return;
    kf_plan_free(p->plan);
    p->plan = NULL;
    kf_sb_free(&p->src);
}

/* "x5 (1 kernel: x5_k0_47cb2410)": the graph and its first kernel's name
 * without the variant suffix. */
static void prep_name(kf_cache_prep *p)
{
    const kf_plan *plan = p->plan;
    char first[KF_CG_NAME_MAX] = "";
    char err[64];
    if (plan->nkernels > 0 && kf_cg_kernel_prefix(plan, 0, first, sizeof first, err, sizeof err) != KF_OK)
        first[0] = 0;
    snprintf(p->name, sizeof p->name, "%.40s (%d kernel%s%s%.80s%s)", plan->g->name, (int)plan->nkernels,
             plan->nkernels == 1 ? "" : "s", first[0] ? ": " : "", first, plan->nkernels > 1 ? ", ..." : "");
}

kf_status kf_cache_fuse(const kf_graph *g, const kf_cache_target *t, kf_cache_prep *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    kf_sb_init(&out->src);
    if (!g || !t)
        return KF_ERR_INVALID_ARG;
    out->target = *t;
    kf_graph *canon = kf_cache_canonical(g);
    kf_pipeline pipe;
    kf_status s = canon ? kf_fuse_owned(canon, &out->target.fuse, NULL, &pipe)
                        : kf_fuse(g, &out->target.fuse, NULL, &pipe);
    if (s != KF_OK) {
        snprintf(err, errlen, "%s", pipe.err);
        return s;
    }
    out->plan = pipe.plan;
    return KF_OK;
}

kf_status kf_cache_emit(kf_cache_prep *p, char *err, size_t errlen)
{
    kf_status s = kf_cg_emit(p->plan, p->target.lang, &p->target.caps, &p->src, err, errlen);
    if (s == KF_OK && kf_sb_failed(&p->src)) {
        snprintf(err, errlen, "out of memory generating code");
        s = KF_ERR_NO_MEMORY;
    }
    if (s != KF_OK) {
        kf_cache_prep_free(p);
        return s;
    }
    prep_name(p);
    return KF_OK;
}

kf_status kf_cache_prepare(const kf_graph *g, const kf_cache_target *t, kf_cache_prep *out, char *err,
                           size_t errlen)
{
    kf_status s = kf_cache_fuse(g, t, out, err, errlen);
    return s == KF_OK ? kf_cache_emit(out, err, errlen) : s;
}

void kf_cache_prep_key(kf_cache_prep *p)
{
    kf_cache_key_make(&p->key, &p->target, kf_sb_str(&p->src), p->src.len);
}
