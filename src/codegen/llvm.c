/* LLVM IR for a fusion plan, built through the LLVM-C API and printed as
 * text: the CPU backend's "source".  Same kernels, entry names, parameter
 * order, meta block, variant choice and reduction order as the CUDA and
 * OpenCL emitter (emit.c); each entry point takes a range of work units
 * instead of a grid, so a thread pool can split the work (docs/codegen.md,
 * "The CPU target").  Every op has the semantics of docs/ir.md, spelled out
 * where LLVM leaves it undefined (division, shifts, float->int). */
#include "cg.h"

#ifndef KFUSE_WITH_LLVM
#include <stdio.h>

kf_status kf_cg_emit_llvm(const kf_plan *p, const kf_cg_caps *caps, kf_strbuf *out, char *err, size_t errlen)
{
    (void)p;
    (void)caps;
    (void)out;
    if (err && errlen)
        snprintf(err, errlen, "codegen: this kfuse was built without LLVM (KFUSE_WITH_LLVM=OFF)");
    return KF_ERR_UNSUPPORTED;
}
#else

#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* -- State ------------------------------------------------------------------- */

typedef struct L {
    LLVMContextRef cx;
    LLVMModuleRef m;
    LLVMBuilderRef b;      /* the function being built */
    LLVMBuilderRef hb;     /* helpers, built on demand */
    const kf_graph *g;
    const kf_cg_caps *caps;
    kf_cg_kinfo *ki;
    LLVMTypeRef i1, i8, i16, i32, i64, f32, f64, ptr, vd;
    kf_status st;
    char *err;
    size_t errlen;
} L;

/* Per variant: the run function's parameters and values derived from them. */
typedef struct V {
    LLVMValueRef fn;
    LLVMValueRef *a;        /* nb buffer parameters (element 0) */
    LLVMValueRef *p;        /* nb pointers moved to their offsets */
    LLVMValueRef *bc;       /* args broadcast on every dim: loaded once */
    LLVMValueRef *sc;       /* scalars, compute type */
    LLVMValueRef *st;       /* nb * R strides (NULL where the dim is not used) */
    LLVMValueRef *base;     /* nb: element index of the kept-dims part (reductions, strided rows) */
    LLVMValueRef *tl, *ts;  /* take sources: length and stride */
    LLVMValueRef D[KF_MAX_RANK];
    LLVMValueRef c[KF_MAX_RANK];   /* coordinates of the current point */
    LLVMValueRef meta, err, scratch, begin, end;
    LLVMValueRef bad;       /* alloca i1: a take index was out of range */
} V;

enum { EW_UNIT_WORK = 16384, RED_UNIT_ELEMS = KF_CG_TILE_ELEMS };

static void fail(L *l, kf_status s, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail(L *l, kf_status s, const char *fmt, ...)
{
    if (l->st != KF_OK)
        return;
    l->st = s;
    if (l->err && l->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(l->err, l->errlen, fmt, ap);
        va_end(ap);
    }
}

/* -- Types and constants --------------------------------------------------------- */

static const kf_irnode *nd(const L *l, int32_t n) { return &l->g->nodes[n]; }
static kf_dtype dt(const L *l, int32_t n) { return (kf_dtype)l->g->nodes[n].dtype; }
static bool is_red(const L *l, int32_t n) { return kf_ir_op((kf_op)l->g->nodes[n].op)->kind == KF_KIND_REDUCE; }

static LLVMTypeRef int_ty(const L *l, kf_dtype t)
{
    switch (kf_dtype_size(t)) {
    case 1: return l->i8;
    case 2: return l->i16;
    case 4: return l->i32;
    default: return l->i64;
    }
}

/* Storage type: what an array element is in memory (codegen.h's table). */
static LLVMTypeRef st_ty(const L *l, kf_dtype t)
{
    if (t == KF_F32)
        return l->f32;
    if (t == KF_F64)
        return l->f64;
    return int_ty(l, t); /* bool: i8; f16/bf16: i16 bits */
}

/* Compute type: what a value is between operations. */
static LLVMTypeRef ct_ty(const L *l, kf_dtype t)
{
    if (t == KF_BOOL)
        return l->i1;
    if (t == KF_F16 || t == KF_BF16 || t == KF_F32)
        return l->f32;
    if (t == KF_F64)
        return l->f64;
    return int_ty(l, t);
}

/* Name v when it is an instruction (the builder folds constants, which
 * have no names). */
static void set_name(LLVMValueRef v, const char *nm)
{
    if (LLVMIsAInstruction(v))
        LLVMSetValueName2(v, nm, strlen(nm));
}

static LLVMValueRef ci(LLVMTypeRef t, long long v) { return LLVMConstInt(t, (unsigned long long)v, 1); }
static LLVMValueRef cu(LLVMTypeRef t, unsigned long long v) { return LLVMConstInt(t, v, 0); }
static LLVMValueRef c64(const L *l, long long v) { return ci(l->i64, v); }

static LLVMValueRef cfloat(LLVMTypeRef t, double v)
{
    return LLVMConstReal(t, v);
}

/* Float constant of compute type t with the exact bits of v (NaN payloads
 * included, as emit.c writes non-finite literals by their bits). */
static LLVMValueRef cfloat_bits(const L *l, LLVMTypeRef t, double v)
{
    if (isfinite(v))
        return cfloat(t, v);
    if (t == l->f64) {
        uint64_t bits;
        memcpy(&bits, &v, 8);
        return LLVMConstBitCast(cu(l->i64, bits), l->f64);
    }
    float f = (float)v;
    uint32_t bits;
    memcpy(&bits, &f, 4);
    return LLVMConstBitCast(cu(l->i32, bits), l->f32);
}

/* Largest / smallest value of integer dtype t in LLVM type ty. */
static LLVMValueRef int_max(LLVMTypeRef ty, kf_dtype t)
{
    unsigned bits = (unsigned)kf_dtype_size(t) * 8;
    if (kf_dt_is_sint(t))
        return cu(ty, (1ull << (bits - 1)) - 1);
    return cu(ty, bits == 64 ? UINT64_MAX : (1ull << bits) - 1);
}

static LLVMValueRef int_min(LLVMTypeRef ty, kf_dtype t)
{
    unsigned bits = (unsigned)kf_dtype_size(t) * 8;
    if (kf_dt_is_sint(t))
        return ci(ty, bits == 64 ? INT64_MIN : -(long long)(1ull << (bits - 1)));
    return cu(ty, 0);
}

/* A CONST node as a compute-type constant. */
static LLVMValueRef const_lit(const L *l, const kf_irnode *c)
{
    kf_dtype t = (kf_dtype)c->dtype;
    if (kf_dt_is_float(t))
        return cfloat_bits(l, ct_ty(l, t), c->lit.f);
    if (t == KF_BOOL)
        return cu(l->i1, c->lit.u != 0);
    if (kf_dt_is_sint(t))
        return ci(ct_ty(l, t), c->lit.i);
    return cu(ct_ty(l, t), c->lit.u);
}

/* -- Attributes, intrinsics, libm --------------------------------------------------- */

static void fn_attr(const L *l, LLVMValueRef fn, unsigned idx, const char *name)
{
    unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
    LLVMAddAttributeAtIndex(fn, idx, LLVMCreateEnumAttribute(l->cx, kind, 0));
}

static LLVMValueRef intrin(L *l, LLVMBuilderRef b, const char *name, LLVMTypeRef *tys, int ntys, LLVMValueRef *args,
                           int nargs)
{
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    LLVMValueRef f = LLVMGetIntrinsicDeclaration(l->m, id, tys, (size_t)ntys);
    LLVMTypeRef ft = LLVMIntrinsicGetType(l->cx, id, tys, (size_t)ntys);
    return LLVMBuildCall2(b, ft, f, args, (unsigned)nargs, "");
}

static LLVMValueRef intrin1(L *l, LLVMBuilderRef b, const char *name, LLVMValueRef x)
{
    LLVMTypeRef t = LLVMTypeOf(x);
    return intrin(l, b, name, &t, 1, &x, 1);
}

/* A C library function of 1 to 3 float arguments of type t. */
static LLVMValueRef libm(L *l, const char *name, LLVMTypeRef t, LLVMValueRef *args, int nargs)
{
    char nm[32];
    snprintf(nm, sizeof nm, "%s%s", name, t == l->f32 ? "f" : "");
    LLVMTypeRef ps[3] = { t, t, t };
    LLVMTypeRef ft = LLVMFunctionType(t, ps, (unsigned)nargs, 0);
    LLVMValueRef f = LLVMGetNamedFunction(l->m, nm);
    if (!f) {
        f = LLVMAddFunction(l->m, nm, ft);
        /* no errno is ever read: the calls are pure to the optimiser */
        fn_attr(l, f, LLVMAttributeFunctionIndex, "nounwind");
        fn_attr(l, f, LLVMAttributeFunctionIndex, "readnone");
        fn_attr(l, f, LLVMAttributeFunctionIndex, "willreturn");
    }
    return LLVMBuildCall2(l->b, ft, f, args, (unsigned)nargs, "");
}

/* -- Helpers emitted on demand (internal, always inlined) --------------------------- */

/* Begin helper 'name' of type ret(params); returns NULL when it exists
 * already (*fn is then set). */
static LLVMValueRef helper_begin(L *l, const char *name, LLVMTypeRef ret, LLVMTypeRef *ps, int np, LLVMValueRef *fn)
{
    *fn = LLVMGetNamedFunction(l->m, name);
    if (*fn)
        return NULL;
    *fn = LLVMAddFunction(l->m, name, LLVMFunctionType(ret, ps, (unsigned)np, 0));
    LLVMSetLinkage(*fn, LLVMInternalLinkage);
    fn_attr(l, *fn, LLVMAttributeFunctionIndex, "alwaysinline");
    fn_attr(l, *fn, LLVMAttributeFunctionIndex, "nounwind");
    LLVMPositionBuilderAtEnd(l->hb, LLVMAppendBasicBlockInContext(l->cx, *fn, "entry"));
    return *fn;
}

static LLVMValueRef call_helper(L *l, LLVMValueRef fn, LLVMValueRef *args, int n)
{
    return LLVMBuildCall2(l->b, LLVMGlobalGetValueType(fn), fn, args, (unsigned)n, "");
}

/* f16 bits -> f32 (kf_f16_to_f32 in half.h). */
static LLVMValueRef h_h2f(L *l)
{
    LLVMValueRef fn;
    if (!helper_begin(l, "kf.h2f", l->f32, &l->i16, 1, &fn))
        return fn;
    LLVMBuilderRef b = l->hb;
    LLVMValueRef h = LLVMBuildZExt(b, LLVMGetParam(fn, 0), l->i32, "h");
    LLVMValueRef sign = LLVMBuildShl(b, LLVMBuildAnd(b, h, cu(l->i32, 0x8000), ""), cu(l->i32, 16), "sign");
    LLVMValueRef ex = LLVMBuildAnd(b, LLVMBuildLShr(b, h, cu(l->i32, 10), ""), cu(l->i32, 0x1f), "exp");
    LLVMValueRef man = LLVMBuildAnd(b, h, cu(l->i32, 0x3ff), "man");
    LLVMValueRef man13 = LLVMBuildShl(b, man, cu(l->i32, 13), "");
    LLVMValueRef norm = LLVMBuildOr(
        b, sign, LLVMBuildOr(b, LLVMBuildShl(b, LLVMBuildAdd(b, ex, cu(l->i32, 112), ""), cu(l->i32, 23), ""), man13, ""),
        "norm");
    LLVMValueRef quiet = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntNE, man, cu(l->i32, 0), ""), cu(l->i32, 0x400000),
                                         cu(l->i32, 0), "");
    LLVMValueRef infnan =
        LLVMBuildOr(b, LLVMBuildOr(b, sign, cu(l->i32, 0x7f800000), ""), LLVMBuildOr(b, man13, quiet, ""), "infnan");
    /* subnormal: man * 2^-24, exact; zero gives +-0 */
    LLVMValueRef sv = LLVMBuildFMul(b, LLVMBuildUIToFP(b, man, l->f32, ""), cfloat(l->f32, 1.0 / 16777216.0), "");
    LLVMValueRef sub = LLVMBuildOr(b, LLVMBuildBitCast(b, sv, l->i32, ""), sign, "sub");
    LLVMValueRef r = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntEQ, ex, cu(l->i32, 0), ""), sub, norm, "");
    r = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntEQ, ex, cu(l->i32, 0x1f), ""), infnan, r, "");
    LLVMBuildRet(b, LLVMBuildBitCast(b, r, l->f32, ""));
    return fn;
}

/* f32 -> f16 bits, round to nearest even, NaN kept quiet (kf_f32_to_f16). */
static LLVMValueRef h_f2h(L *l)
{
    LLVMValueRef fn;
    if (!helper_begin(l, "kf.f2h", l->i16, &l->f32, 1, &fn))
        return fn;
    LLVMBuilderRef b = l->hb;
    LLVMValueRef u = LLVMBuildBitCast(b, LLVMGetParam(fn, 0), l->i32, "u");
    LLVMValueRef sign = LLVMBuildAnd(b, LLVMBuildLShr(b, u, cu(l->i32, 16), ""), cu(l->i32, 0x8000), "sign");
    LLVMValueRef a = LLVMBuildAnd(b, u, cu(l->i32, 0x7fffffff), "a");
    LLVMValueRef a13 = LLVMBuildLShr(b, a, cu(l->i32, 13), "");
    LLVMValueRef nan = LLVMBuildOr(b, sign, LLVMBuildOr(b, cu(l->i32, 0x7e00), LLVMBuildAnd(b, a13, cu(l->i32, 0x3ff), ""), ""),
                                   "nan");
    LLVMValueRef inf = LLVMBuildOr(b, sign, cu(l->i32, 0x7c00), "inf");
    /* below 2^-14: scale so the f16 subnormal unit is 1.0 and round to even */
    LLVMValueRef sv = LLVMBuildFMul(b, LLVMBuildBitCast(b, a, l->f32, ""), cfloat(l->f32, 16777216.0), "");
    LLVMValueRef rv = intrin1(l, b, "llvm.rint", sv);
    LLVMTypeRef sat[2] = { l->i32, l->f32 };
    LLVMValueRef si = intrin(l, b, "llvm.fptoui.sat", sat, 2, &rv, 1);
    LLVMValueRef sub = LLVMBuildOr(b, sign, si, "sub");
    LLVMValueRef r = LLVMBuildAdd(b, a, LLVMBuildAdd(b, cu(l->i32, 0xfff), LLVMBuildAnd(b, a13, cu(l->i32, 1), ""), ""), "");
    LLVMValueRef norm = LLVMBuildOr(b, sign, LLVMBuildLShr(b, LLVMBuildSub(b, r, cu(l->i32, 0x38000000), ""), cu(l->i32, 13), ""),
                                    "norm");
    LLVMValueRef res = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntULT, a, cu(l->i32, 0x38800000), ""), sub, norm, "");
    res = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntUGE, a, cu(l->i32, 0x477ff000), ""), inf, res, "");
    res = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntUGT, a, cu(l->i32, 0x7f800000), ""), nan, res, "");
    LLVMBuildRet(b, LLVMBuildTrunc(b, res, l->i16, ""));
    return fn;
}

static LLVMValueRef h_bf2f(L *l)
{
    LLVMValueRef fn;
    if (!helper_begin(l, "kf.bf2f", l->f32, &l->i16, 1, &fn))
        return fn;
    LLVMBuilderRef b = l->hb;
    LLVMValueRef u = LLVMBuildShl(b, LLVMBuildZExt(b, LLVMGetParam(fn, 0), l->i32, ""), cu(l->i32, 16), "");
    LLVMBuildRet(b, LLVMBuildBitCast(b, u, l->f32, ""));
    return fn;
}

/* f32 -> bf16 bits, round to nearest even, NaN kept quiet (kf_f32_to_bf16). */
static LLVMValueRef h_f2bf(L *l)
{
    LLVMValueRef fn;
    if (!helper_begin(l, "kf.f2bf", l->i16, &l->f32, 1, &fn))
        return fn;
    LLVMBuilderRef b = l->hb;
    LLVMValueRef u = LLVMBuildBitCast(b, LLVMGetParam(fn, 0), l->i32, "u");
    LLVMValueRef hi = LLVMBuildLShr(b, u, cu(l->i32, 16), "");
    LLVMValueRef nan = LLVMBuildOr(b, hi, cu(l->i32, 0x40), "");
    LLVMValueRef r = LLVMBuildAdd(b, u, LLVMBuildAdd(b, cu(l->i32, 0x7fff), LLVMBuildAnd(b, hi, cu(l->i32, 1), ""), ""), "");
    r = LLVMBuildLShr(b, r, cu(l->i32, 16), "");
    LLVMValueRef isnan = LLVMBuildICmp(b, LLVMIntUGT, LLVMBuildAnd(b, u, cu(l->i32, 0x7fffffff), ""), cu(l->i32, 0x7f800000), "");
    LLVMBuildRet(b, LLVMBuildTrunc(b, LLVMBuildSelect(b, isnan, nan, r, ""), l->i16, ""));
    return fn;
}

/* An f32 value rounded to f16 / bf16 precision (as the interpreter stores
 * every node). */
static LLVMValueRef round16(L *l, kf_dtype t, LLVMValueRef v)
{
    LLVMValueRef bits = call_helper(l, t == KF_F16 ? h_f2h(l) : h_f2bf(l), &v, 1);
    return call_helper(l, t == KF_F16 ? h_h2f(l) : h_bf2f(l), &bits, 1);
}

/* min / max that propagate NaN; min(-0, +0) = -0, max(-0, +0) = +0. */
static LLVMValueRef h_fminmax(L *l, LLVMTypeRef t, bool mn)
{
    char name[32];
    snprintf(name, sizeof name, "kf.f%s.%s", mn ? "min" : "max", t == l->f64 ? "f64" : "f32");
    LLVMValueRef fn;
    LLVMTypeRef ps[2] = { t, t };
    if (!helper_begin(l, name, t, ps, 2, &fn))
        return fn;
    fn_attr(l, fn, LLVMAttributeFunctionIndex, "readnone");
    LLVMBuilderRef b = l->hb;
    LLVMValueRef a = LLVMGetParam(fn, 0), c = LLVMGetParam(fn, 1);
    LLVMTypeRef it = t == l->f64 ? l->i64 : l->i32;
    LLVMValueRef neg = LLVMBuildICmp(b, LLVMIntSLT, LLVMBuildBitCast(b, a, it, ""), LLVMConstNull(it), "aneg");
    LLVMValueRef r = mn ? LLVMBuildSelect(b, neg, a, c, "") : LLVMBuildSelect(b, neg, c, a, "");
    LLVMRealPredicate p = mn ? LLVMRealOLT : LLVMRealOGT;
    r = LLVMBuildSelect(b, LLVMBuildFCmp(b, p, c, a, ""), c, r, "");
    r = LLVMBuildSelect(b, LLVMBuildFCmp(b, p, a, c, ""), a, r, "");
    r = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealUNO, c, c, ""), c, r, "");
    r = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealUNO, a, a, ""), a, r, "");
    LLVMBuildRet(b, r);
    return fn;
}

static LLVMValueRef fminmax(L *l, bool mn, LLVMValueRef a, LLVMValueRef c)
{
    LLVMValueRef args[2] = { a, c };
    return call_helper(l, h_fminmax(l, LLVMTypeOf(a), mn), args, 2);
}

/* f64 -> f32 rounded to odd, so that a second rounding (to f16/bf16) is
 * correct (kf_f32_round_odd). */
static LLVMValueRef h_rto_f64(L *l)
{
    LLVMValueRef fn;
    if (!helper_begin(l, "kf.rto.f64", l->f32, &l->f64, 1, &fn))
        return fn;
    LLVMBuilderRef b = l->hb;
    LLVMValueRef d = LLVMGetParam(fn, 0);
    LLVMValueRef f = LLVMBuildFPTrunc(b, d, l->f32, "f");
    LLVMValueRef exact = LLVMBuildFCmp(b, LLVMRealUEQ, LLVMBuildFPExt(b, f, l->f64, ""), d, "exact"); /* or NaN */
    LLVMValueRef u = LLVMBuildBitCast(b, f, l->i32, "u");
    LLVMValueRef isinf = LLVMBuildICmp(b, LLVMIntEQ, LLVMBuildAnd(b, u, cu(l->i32, 0x7fffffff), ""), cu(l->i32, 0x7f800000), "");
    LLVMValueRef big = LLVMBuildOr(b, LLVMBuildAnd(b, u, cu(l->i32, 0x80000000u), ""), cu(l->i32, 0x7f7fffff), "");
    LLVMValueRef odd = LLVMBuildICmp(b, LLVMIntNE, LLVMBuildAnd(b, u, cu(l->i32, 1), ""), cu(l->i32, 0), "odd");
    LLVMValueRef away = LLVMBuildFCmp(b, LLVMRealOGT, intrin1(l, b, "llvm.fabs", d),
                                      intrin1(l, b, "llvm.fabs", LLVMBuildFPExt(b, f, l->f64, "")), "");
    LLVMValueRef step = LLVMBuildSelect(b, away, LLVMBuildAdd(b, u, cu(l->i32, 1), ""), LLVMBuildSub(b, u, cu(l->i32, 1), ""), "");
    LLVMValueRef r = LLVMBuildSelect(b, odd, u, step, "");
    r = LLVMBuildSelect(b, isinf, big, r, "");
    r = LLVMBuildSelect(b, exact, u, r, "");
    LLVMBuildRet(b, LLVMBuildBitCast(b, r, l->f32, ""));
    return fn;
}

/* Integer magnitude (u64) -> f32 rounded to odd. */
static LLVMValueRef h_rto_u64(L *l)
{
    LLVMValueRef fn;
    if (!helper_begin(l, "kf.rto.u64", l->f32, &l->i64, 1, &fn))
        return fn;
    LLVMBuilderRef b = l->hb;
    LLVMValueRef m = LLVMGetParam(fn, 0);
    LLVMValueRef zp[2] = { m, cu(l->i1, 0) };
    LLVMValueRef lz = intrin(l, b, "llvm.ctlz", &l->i64, 1, zp, 2);
    /* shift so that at most 24 significant bits remain */
    LLVMValueRef sh = LLVMBuildSub(b, c64(l, 40), lz, "");
    sh = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, sh, c64(l, 0), ""), c64(l, 0), sh, "sh");
    LLVMValueRef top = LLVMBuildLShr(b, m, sh, "top");
    LLVMValueRef mask = LLVMBuildSub(b, LLVMBuildShl(b, c64(l, 1), sh, ""), c64(l, 1), "");
    LLVMValueRef sticky = LLVMBuildICmp(b, LLVMIntNE, LLVMBuildAnd(b, m, mask, ""), c64(l, 0), "");
    top = LLVMBuildOr(b, top, LLVMBuildZExt(b, sticky, l->i64, ""), "");
    LLVMValueRef scale = LLVMBuildShl(b, LLVMBuildAdd(b, LLVMBuildTrunc(b, sh, l->i32, ""), cu(l->i32, 127), ""),
                                      cu(l->i32, 23), "");
    LLVMValueRef r = LLVMBuildFMul(b, LLVMBuildUIToFP(b, top, l->f32, ""), LLVMBuildBitCast(b, scale, l->f32, ""), "");
    LLVMBuildRet(b, r);
    return fn;
}

static LLVMValueRef h_rto_i64(L *l)
{
    LLVMValueRef fn;
    if (!helper_begin(l, "kf.rto.i64", l->f32, &l->i64, 1, &fn))
        return fn;
    LLVMValueRef u = h_rto_u64(l); /* may build: keep hb's position */
    LLVMBuilderRef b = l->hb;
    LLVMPositionBuilderAtEnd(b, LLVMGetLastBasicBlock(fn));
    LLVMValueRef v = LLVMGetParam(fn, 0);
    LLVMValueRef neg = LLVMBuildICmp(b, LLVMIntSLT, v, c64(l, 0), "");
    LLVMValueRef mag = LLVMBuildSelect(b, neg, LLVMBuildSub(b, c64(l, 0), v, ""), v, "");
    LLVMValueRef r = LLVMBuildCall2(b, LLVMGlobalGetValueType(u), u, &mag, 1, "");
    LLVMBuildRet(b, LLVMBuildSelect(b, neg, LLVMBuildFNeg(b, r, ""), r, ""));
    return fn;
}

/* -- Conversions ---------------------------------------------------------------------- */

/* Compute value of dtype t from a storage value. */
static LLVMValueRef from_store(L *l, kf_dtype t, LLVMValueRef v)
{
    switch (t) {
    case KF_BOOL: return LLVMBuildICmp(l->b, LLVMIntNE, v, cu(l->i8, 0), "");
    case KF_F16: return call_helper(l, h_h2f(l), &v, 1);
    case KF_BF16: return call_helper(l, h_bf2f(l), &v, 1);
    default: return v;
    }
}

/* Storage value of dtype t from a compute value. */
static LLVMValueRef to_store(L *l, kf_dtype t, LLVMValueRef v)
{
    switch (t) {
    case KF_BOOL: return LLVMBuildZExt(l->b, v, l->i8, "");
    case KF_F16: return call_helper(l, h_f2h(l), &v, 1);
    case KF_BF16: return call_helper(l, h_f2bf(l), &v, 1);
    default: return v;
    }
}

static LLVMValueRef load_elem(L *l, kf_dtype t, LLVMValueRef p, LLVMValueRef idx, const char *name)
{
    LLVMValueRef a = LLVMBuildGEP2(l->b, st_ty(l, t), p, &idx, 1, "");
    return from_store(l, t, LLVMBuildLoad2(l->b, st_ty(l, t), a, name));
}

static void store_elem(L *l, kf_dtype t, LLVMValueRef p, LLVMValueRef idx, LLVMValueRef v)
{
    LLVMValueRef a = LLVMBuildGEP2(l->b, st_ty(l, t), p, &idx, 1, "");
    LLVMBuildStore(l->b, to_store(l, t, v), a);
}

/* Cast of compute value a from dtype 'from' to dtype 'to' (docs/ir.md):
 * integers wrap, floats to integers truncate and saturate (NaN -> 0),
 * conversions to f16/bf16 round once. */
static LLVMValueRef cast_val(L *l, kf_dtype from, kf_dtype to, LLVMValueRef a)
{
    LLVMBuilderRef b = l->b;
    if (from == to)
        return a;
    bool ff = kf_dt_is_float(from), sg = kf_dt_is_sint(from);
    if (to == KF_BOOL) {
        if (ff)
            return LLVMBuildFCmp(b, LLVMRealUNE, a, LLVMConstNull(LLVMTypeOf(a)), "");
        return LLVMBuildICmp(b, LLVMIntNE, a, LLVMConstNull(LLVMTypeOf(a)), "");
    }
    if (kf_dt_is_float(to)) {
        if (to == KF_F64) {
            if (ff)
                return LLVMBuildFPExt(b, a, l->f64, "");
            return sg ? LLVMBuildSIToFP(b, a, l->f64, "") : LLVMBuildUIToFP(b, a, l->f64, "");
        }
        LLVMValueRef f;
        if (from == KF_F32 || from == KF_F16 || from == KF_BF16) {
            f = a;
        } else if (to != KF_F32 && from == KF_F64) {
            f = call_helper(l, h_rto_f64(l), &a, 1);
        } else if (from == KF_F64) {
            f = LLVMBuildFPTrunc(b, a, l->f32, "");
        } else if (to != KF_F32 && kf_dtype_size(from) >= 4) {
            LLVMValueRef w = sg ? LLVMBuildSExt(b, a, l->i64, "") : LLVMBuildZExt(b, a, l->i64, "");
            f = call_helper(l, sg ? h_rto_i64(l) : h_rto_u64(l), &w, 1);
        } else {
            f = sg ? LLVMBuildSIToFP(b, a, l->f32, "") : LLVMBuildUIToFP(b, a, l->f32, "");
        }
        return to == KF_F32 ? f : round16(l, to, f);
    }
    LLVMTypeRef it = int_ty(l, to);
    if (ff) {
        LLVMTypeRef tys[2] = { it, LLVMTypeOf(a) };
        return intrin(l, b, kf_dt_is_sint(to) ? "llvm.fptosi.sat" : "llvm.fptoui.sat", tys, 2, &a, 1);
    }
    return LLVMBuildIntCast2(b, a, it, sg, "");
}

/* -- The fused expression ------------------------------------------------------------ */

/* Value of an elementwise node x from operand values a[] (select and cast
 * included; iota and take are handled by the caller). */
static LLVMValueRef ew_val(L *l, const kf_irnode *x, LLVMValueRef *a, const char *name)
{
    LLVMBuilderRef b = l->b;
    kf_op op = (kf_op)x->op;
    kf_dtype t = dt(l, x->args[op == KF_OP_SELECT ? 1 : 0]); /* operand dtype */
    bool fl = kf_dt_is_float(t), sg = kf_dt_is_sint(t);
    LLVMTypeRef T = ct_ty(l, t);
    unsigned bits = (unsigned)kf_dtype_size(t) * 8;
    LLVMValueRef zero = LLVMConstNull(T), one = fl ? cfloat(T, 1.0) : cu(T, 1), r = NULL;
    switch (op) {
    case KF_OP_NEG: r = fl ? LLVMBuildFNeg(b, a[0], name) : LLVMBuildSub(b, zero, a[0], name); break;
    case KF_OP_ABS:
        if (fl)
            r = intrin1(l, b, "llvm.fabs", a[0]);
        else if (sg)
            r = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, a[0], zero, ""), LLVMBuildSub(b, zero, a[0], ""), a[0],
                                name);
        else
            r = a[0];
        break;
    case KF_OP_SIGN:
        if (fl) {
            r = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOLT, a[0], zero, ""), cfloat(T, -1.0), a[0], "");
            r = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOGT, a[0], zero, ""), one, r, name);
        } else if (sg) {
            r = LLVMBuildSub(b, LLVMBuildZExt(b, LLVMBuildICmp(b, LLVMIntSGT, a[0], zero, ""), T, ""),
                             LLVMBuildZExt(b, LLVMBuildICmp(b, LLVMIntSLT, a[0], zero, ""), T, ""), name);
        } else {
            r = LLVMBuildZExt(b, LLVMBuildICmp(b, LLVMIntNE, a[0], zero, ""), T, name);
        }
        break;
    case KF_OP_SQRT: r = intrin1(l, b, "llvm.sqrt", a[0]); break;
    case KF_OP_RSQRT: r = LLVMBuildFDiv(b, one, intrin1(l, b, "llvm.sqrt", a[0]), name); break;
    case KF_OP_RCP: r = LLVMBuildFDiv(b, one, a[0], name); break;
    case KF_OP_SIGMOID: {
        LLVMValueRef na = LLVMBuildFNeg(b, a[0], "");
        r = LLVMBuildFDiv(b, one, LLVMBuildFAdd(b, one, libm(l, "exp", T, &na, 1), ""), name);
        break;
    }
    case KF_OP_FLOOR: r = intrin1(l, b, "llvm.floor", a[0]); break;
    case KF_OP_CEIL: r = intrin1(l, b, "llvm.ceil", a[0]); break;
    case KF_OP_TRUNC: r = intrin1(l, b, "llvm.trunc", a[0]); break;
    case KF_OP_ROUND: r = intrin1(l, b, "llvm.round", a[0]); break; /* half away from zero */
    case KF_OP_CBRT: case KF_OP_EXP: case KF_OP_EXP2: case KF_OP_EXPM1: case KF_OP_LOG: case KF_OP_LOG2:
    case KF_OP_LOG10: case KF_OP_LOG1P: case KF_OP_SIN: case KF_OP_COS: case KF_OP_TAN: case KF_OP_ASIN:
    case KF_OP_ACOS: case KF_OP_ATAN: case KF_OP_SINH: case KF_OP_COSH: case KF_OP_TANH: case KF_OP_ERF:
    case KF_OP_POW: case KF_OP_ATAN2: case KF_OP_HYPOT:
        r = libm(l, kf_op_name(op), T, a, x->nargs);
        break;
    case KF_OP_COPYSIGN: { /* a NaN sign source counts as positive, as in docs/ir.md */
        LLVMValueRef args[2] = { a[0], a[1] };
        LLVMValueRef cs = intrin(l, b, "llvm.copysign", &T, 1, args, 2);
        LLVMValueRef nan = LLVMBuildFCmp(b, LLVMRealUNO, a[1], a[1], "");
        r = LLVMBuildSelect(b, nan, intrin1(l, b, "llvm.fabs", a[0]), cs, name);
        break;
    }
    case KF_OP_FMA: r = intrin(l, b, "llvm.fma", &T, 1, a, 3); break;
    case KF_OP_NOT: r = t == KF_BOOL ? LLVMBuildXor(b, a[0], cu(l->i1, 1), name) : LLVMBuildNot(b, a[0], name); break;
    case KF_OP_ISNAN: r = LLVMBuildFCmp(b, LLVMRealUNO, a[0], a[0], name); break;
    case KF_OP_ISINF: r = LLVMBuildFCmp(b, LLVMRealOEQ, intrin1(l, b, "llvm.fabs", a[0]), cfloat(T, INFINITY), name); break;
    case KF_OP_ISFINITE:
        r = LLVMBuildFCmp(b, LLVMRealOLT, intrin1(l, b, "llvm.fabs", a[0]), cfloat(T, INFINITY), name);
        break;
    case KF_OP_ADD: r = fl ? LLVMBuildFAdd(b, a[0], a[1], name) : LLVMBuildAdd(b, a[0], a[1], name); break;
    case KF_OP_SUB: r = fl ? LLVMBuildFSub(b, a[0], a[1], name) : LLVMBuildSub(b, a[0], a[1], name); break;
    case KF_OP_MUL: r = fl ? LLVMBuildFMul(b, a[0], a[1], name) : LLVMBuildMul(b, a[0], a[1], name); break;
    case KF_OP_DIV: case KF_OP_MOD: {
        bool div = op == KF_OP_DIV;
        if (fl) {
            r = div ? LLVMBuildFDiv(b, a[0], a[1], name) : LLVMBuildFRem(b, a[0], a[1], name);
            break;
        }
        /* x / 0 = 0, MIN / -1 = MIN (wraps), x % 0 = x % -1 = 0: never trap */
        LLVMValueRef z = LLVMBuildICmp(b, LLVMIntEQ, a[1], zero, "");
        LLVMValueRef m1 = sg ? LLVMBuildICmp(b, LLVMIntEQ, a[1], LLVMConstAllOnes(T), "") : NULL;
        LLVMValueRef unsafe = m1 ? LLVMBuildOr(b, z, m1, "") : z;
        LLVMValueRef d = LLVMBuildSelect(b, unsafe, one, a[1], "");
        LLVMValueRef q = div ? (sg ? LLVMBuildSDiv(b, a[0], d, "") : LLVMBuildUDiv(b, a[0], d, ""))
                             : (sg ? LLVMBuildSRem(b, a[0], d, "") : LLVMBuildURem(b, a[0], d, ""));
        if (m1)
            q = LLVMBuildSelect(b, m1, div ? LLVMBuildSub(b, zero, a[0], "") : zero, q, "");
        r = LLVMBuildSelect(b, z, zero, q, name);
        break;
    }
    case KF_OP_MIN: case KF_OP_MAX: {
        bool mn = op == KF_OP_MIN;
        if (fl)
            r = fminmax(l, mn, a[0], a[1]);
        else
            r = LLVMBuildSelect(b, LLVMBuildICmp(b, mn ? (sg ? LLVMIntSLT : LLVMIntULT) : (sg ? LLVMIntSGT : LLVMIntUGT), a[0], a[1], ""),
                                a[0], a[1], name);
        break;
    }
    case KF_OP_CLAMP:
        if (fl) {
            r = fminmax(l, true, fminmax(l, false, a[0], a[1]), a[2]);
        } else {
            LLVMValueRef m = LLVMBuildSelect(b, LLVMBuildICmp(b, sg ? LLVMIntSGT : LLVMIntUGT, a[0], a[1], ""), a[0], a[1], "");
            r = LLVMBuildSelect(b, LLVMBuildICmp(b, sg ? LLVMIntSLT : LLVMIntULT, m, a[2], ""), m, a[2], name);
        }
        break;
    case KF_OP_LT: case KF_OP_LE: case KF_OP_GT: case KF_OP_GE: case KF_OP_EQ: case KF_OP_NE: {
        int k = op - KF_OP_LT;
        if (fl) {
            /* NaN: false, except ne */
            static const LLVMRealPredicate fp[6] = { LLVMRealOLT, LLVMRealOLE, LLVMRealOGT, LLVMRealOGE, LLVMRealOEQ, LLVMRealUNE };
            r = LLVMBuildFCmp(b, fp[k], a[0], a[1], name);
        } else {
            static const LLVMIntPredicate sp[6] = { LLVMIntSLT, LLVMIntSLE, LLVMIntSGT, LLVMIntSGE, LLVMIntEQ, LLVMIntNE };
            static const LLVMIntPredicate up[6] = { LLVMIntULT, LLVMIntULE, LLVMIntUGT, LLVMIntUGE, LLVMIntEQ, LLVMIntNE };
            r = LLVMBuildICmp(b, sg ? sp[k] : up[k], a[0], a[1], name);
        }
        break;
    }
    case KF_OP_AND: r = LLVMBuildAnd(b, a[0], a[1], name); break;
    case KF_OP_OR: r = LLVMBuildOr(b, a[0], a[1], name); break;
    case KF_OP_XOR: r = LLVMBuildXor(b, a[0], a[1], name); break;
    case KF_OP_SHL: case KF_OP_SHR: {
        /* an amount < 0 or >= the width gives 0: as unsigned, both are >= width */
        LLVMValueRef out = LLVMBuildICmp(b, LLVMIntUGE, a[1], cu(T, bits), "");
        LLVMValueRef s = op == KF_OP_SHL ? LLVMBuildShl(b, a[0], a[1], "")
                         : sg            ? LLVMBuildAShr(b, a[0], a[1], "")
                                         : LLVMBuildLShr(b, a[0], a[1], "");
        r = LLVMBuildSelect(b, out, zero, s, name);
        break;
    }
    case KF_OP_SELECT: r = LLVMBuildSelect(b, a[0], a[1], a[2], name); break;
    case KF_OP_CAST: r = cast_val(l, t, (kf_dtype)x->dtype, a[0]); break;
    default:
        fail(l, KF_ERR_INVALID_ARG, "llvm codegen: op %s is not elementwise", kf_op_name(op));
        return LLVMGetUndef(ct_ty(l, (kf_dtype)x->dtype));
    }
    if ((x->dtype == KF_F16 || x->dtype == KF_BF16) && op != KF_OP_CAST && op != KF_OP_SELECT)
        r = round16(l, (kf_dtype)x->dtype, r);
    return r;
}

/* Name of node n for IR values: its .kir name when it has one. */
static void node_name(const L *l, int32_t n, char *buf, size_t len)
{
    const char *s = nd(l, n)->name;
    if (s)
        snprintf(buf, len, "%s", s);
    else
        snprintf(buf, len, "v%d", n);
}

/* The value out j hands to its entry point: a reduction's operand, or the
 * node itself. */
static int32_t sink(const L *l, int j)
{
    int32_t n = l->ki->k->outs[j];
    return is_red(l, n) ? nd(l, n)->args[0] : n;
}

/* Body parameters: x<b> per arg read at the point, s<i> per scalar, c<d>
 * per coordinate the body reads, (t, tl, ts) per take source.  It returns
 * one value per out (the sinks) and, with a take, an i1 "index out of
 * range" last. */
static LLVMTypeRef body_ret(L *l)
{
    const kf_kernel *k = l->ki->k;
    LLVMTypeRef *ts = malloc(((size_t)k->nouts + 1) * sizeof *ts);
    if (!ts) {
        fail(l, KF_ERR_NO_MEMORY, "llvm codegen: out of memory");
        return l->vd;
    }
    int n = 0;
    for (int j = 0; j < k->nouts; j++)
        ts[n++] = ct_ty(l, dt(l, sink(l, j)));
    if (k->has_take)
        ts[n++] = l->i1;
    LLVMTypeRef r = LLVMStructTypeInContext(l->cx, ts, (unsigned)n, 0);
    free(ts);
    return r;
}

static LLVMValueRef emit_body(L *l)
{
    const kf_cg_kinfo *ki = l->ki;
    const kf_kernel *k = ki->k;
    LLVMTypeRef *ps = malloc(((size_t)k->nargs * 4 + (size_t)k->nscalars + KF_MAX_RANK + 1) * sizeof *ps);
    LLVMValueRef *val = calloc((size_t)l->g->nnodes + 1, sizeof *val);
    if (!ps || !val) {
        free(ps);
        free(val);
        fail(l, KF_ERR_NO_MEMORY, "llvm codegen: out of memory");
        return NULL;
    }
    int np = 0;
    for (int b = 0; b < k->nargs; b++)
        if (ki->arg_ew[b])
            ps[np++] = ct_ty(l, dt(l, k->args[b]));
    for (int i = 0; i < k->nscalars; i++)
        ps[np++] = ct_ty(l, dt(l, k->scalars[i]));
    for (int d = 0; d < ki->R; d++)
        if (ki->coords & (1u << d))
            ps[np++] = l->i64;
    for (int b = 0; b < k->nargs; b++)
        if (ki->tslot[b] >= 0) {
            ps[np++] = l->ptr;
            ps[np++] = l->i64;
            ps[np++] = l->i64;
        }
    char name[KF_CG_NAME_MAX + 16];
    snprintf(name, sizeof name, "%s_body", ki->prefix);
    LLVMTypeRef rt = body_ret(l);
    LLVMValueRef fn = LLVMAddFunction(l->m, name, LLVMFunctionType(rt, ps, (unsigned)np, 0));
    LLVMSetLinkage(fn, LLVMInternalLinkage);
    fn_attr(l, fn, LLVMAttributeFunctionIndex, "alwaysinline");
    fn_attr(l, fn, LLVMAttributeFunctionIndex, "nounwind");
    LLVMPositionBuilderAtEnd(l->b, LLVMAppendBasicBlockInContext(l->cx, fn, "entry"));
    /* parameters: name them and map roles to values */
    int pi = 0;
    LLVMValueRef *tsrc = calloc((size_t)k->nargs * 3 + 1, sizeof *tsrc);
    LLVMValueRef cval[KF_MAX_RANK] = { 0 };
    char nm[64];
    for (int b = 0; b < k->nargs; b++)
        if (ki->arg_ew[b]) {
            LLVMValueRef p = LLVMGetParam(fn, (unsigned)pi++);
            node_name(l, k->args[b], nm, sizeof nm);
            LLVMSetValueName2(p, nm, strlen(nm));
            val[k->args[b]] = p;
        }
    for (int i = 0; i < k->nscalars; i++) {
        LLVMValueRef p = LLVMGetParam(fn, (unsigned)pi++);
        node_name(l, k->scalars[i], nm, sizeof nm);
        LLVMSetValueName2(p, nm, strlen(nm));
        val[k->scalars[i]] = p;
    }
    for (int d = 0; d < ki->R; d++)
        if (ki->coords & (1u << d)) {
            cval[d] = LLVMGetParam(fn, (unsigned)pi++);
            snprintf(nm, sizeof nm, "c%d", d);
            LLVMSetValueName2(cval[d], nm, strlen(nm));
        }
    for (int b = 0; b < k->nargs && tsrc; b++)
        if (ki->tslot[b] >= 0) {
            int s = ki->tslot[b];
            for (int q = 0; q < 3; q++) {
                tsrc[3 * s + q] = LLVMGetParam(fn, (unsigned)pi++);
                snprintf(nm, sizeof nm, "%s%d", q == 0 ? "t" : q == 1 ? "tl" : "ts", s);
                LLVMSetValueName2(tsrc[3 * s + q], nm, strlen(nm));
            }
        }
    LLVMValueRef bad = k->has_take ? cu(l->i1, 0) : NULL;
    for (int i = 0; i < k->nnodes && l->st == KF_OK && tsrc; i++) {
        int32_t n = k->nodes[i];
        const kf_irnode *x = nd(l, n);
        if (is_red(l, n))
            continue;
        node_name(l, n, nm, sizeof nm);
        LLVMValueRef a[3] = { NULL, NULL, NULL };
        for (int j = 0; j < x->nargs; j++) {
            int32_t o = x->args[j];
            a[j] = val[o] ? val[o] : kf_cg_role(ki, o) == KF_CG_ROLE_NONE ? const_lit(l, nd(l, o)) : NULL;
            if (!a[j] && !(x->op == KF_OP_TAKE && j == 0)) {
                fail(l, KF_ERR_INVALID_ARG, "llvm codegen: kernel %d: operand %d of node %d has no value", ki->kidx, j, n);
                break;
            }
        }
        if (l->st != KF_OK)
            break;
        if (x->op == KF_OP_IOTA) {
            int d = ki->R - x->rank + x->axis;
            LLVMValueRef c = kf_cg_dim_bcast(ki, x, d) ? c64(l, 0) : cval[d];
            val[n] = cast_val(l, KF_I64, (kf_dtype)x->dtype, c);
        } else if (x->op == KF_OP_TAKE) {
            int s = ki->tslot[kf_cg_role_index(ki, x->args[0])];
            kf_dtype it = dt(l, x->args[1]), t = (kf_dtype)x->dtype;
            LLVMValueRef ix = LLVMBuildIntCast2(l->b, a[1], l->i64, kf_dt_is_sint(it), "");
            /* negative indices are huge as unsigned: one compare */
            LLVMValueRef ok = LLVMBuildICmp(l->b, LLVMIntULT, ix, tsrc[3 * s + 1], "");
            LLVMBasicBlockRef from = LLVMGetInsertBlock(l->b);
            LLVMBasicBlockRef yes = LLVMAppendBasicBlockInContext(l->cx, fn, "take.in");
            LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(l->cx, fn, "take.join");
            LLVMBuildCondBr(l->b, ok, yes, join);
            LLVMPositionBuilderAtEnd(l->b, yes);
            LLVMValueRef v = load_elem(l, t, tsrc[3 * s], LLVMBuildMul(l->b, ix, tsrc[3 * s + 2], ""), "");
            LLVMBasicBlockRef yes_end = LLVMGetInsertBlock(l->b);
            LLVMBuildBr(l->b, join);
            LLVMPositionBuilderAtEnd(l->b, join);
            LLVMValueRef phi = LLVMBuildPhi(l->b, ct_ty(l, t), nm);
            LLVMValueRef zv = LLVMConstNull(ct_ty(l, t));
            LLVMValueRef ins[2] = { v, zv };
            LLVMBasicBlockRef bbs[2] = { yes_end, from };
            LLVMAddIncoming(phi, ins, bbs, 2);
            val[n] = phi;
            bad = LLVMBuildOr(l->b, bad, LLVMBuildNot(l->b, ok, ""), "bad");
        } else {
            val[n] = ew_val(l, x, a, nm);
        }
    }
    LLVMValueRef *rv = malloc(((size_t)k->nouts + 2) * sizeof *rv);
    if (!rv || !tsrc)
        fail(l, KF_ERR_NO_MEMORY, "llvm codegen: out of memory");
    if (l->st == KF_OK) {
        int n = 0;
        for (int j = 0; j < k->nouts; j++) {
            int32_t s = sink(l, j);
            rv[n++] = val[s] ? val[s] : const_lit(l, nd(l, s));
        }
        if (k->has_take)
            rv[n++] = bad;
        LLVMBuildAggregateRet(l->b, rv, (unsigned)n);
    }
    free(rv);
    free(tsrc);
    free(ps);
    free(val);
    return fn;
}

/* -- Loops ------------------------------------------------------------------------------ */

typedef struct loop {
    LLVMBasicBlockRef head, exit;
    LLVMValueRef iv;
} loop;

/* for (iv = from; iv < to; iv += step): the builder is left in the body. */
static LLVMValueRef loop_open(L *l, loop *lp, LLVMValueRef from, LLVMValueRef to, const char *nm)
{
    LLVMValueRef fn = LLVMGetBasicBlockParent(LLVMGetInsertBlock(l->b));
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(l->b);
    char b1[48], b2[48], b3[48];
    snprintf(b1, sizeof b1, "%s.head", nm);
    snprintf(b2, sizeof b2, "%s.body", nm);
    snprintf(b3, sizeof b3, "%s.end", nm);
    lp->head = LLVMAppendBasicBlockInContext(l->cx, fn, b1);
    LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(l->cx, fn, b2);
    lp->exit = LLVMAppendBasicBlockInContext(l->cx, fn, b3);
    LLVMBuildBr(l->b, lp->head);
    LLVMPositionBuilderAtEnd(l->b, lp->head);
    lp->iv = LLVMBuildPhi(l->b, l->i64, nm);
    LLVMAddIncoming(lp->iv, &from, &pre, 1);
    LLVMBuildCondBr(l->b, LLVMBuildICmp(l->b, LLVMIntULT, lp->iv, to, ""), body, lp->exit);
    LLVMPositionBuilderAtEnd(l->b, body);
    return lp->iv;
}

static void loop_close(L *l, loop *lp, LLVMValueRef step)
{
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(l->b);
    LLVMValueRef next = LLVMBuildNUWAdd(l->b, lp->iv, step, "");
    LLVMBuildBr(l->b, lp->head);
    LLVMAddIncoming(lp->iv, &next, &latch, 1);
    LLVMPositionBuilderAtEnd(l->b, lp->exit);
}

/* An alloca at the top of the current function's entry block, where
 * mem2reg and SROA turn it into registers. */
static LLVMValueRef entry_alloca(L *l, LLVMTypeRef t, const char *name)
{
    LLVMValueRef fn = LLVMGetBasicBlockParent(LLVMGetInsertBlock(l->b));
    LLVMBasicBlockRef entry = LLVMGetEntryBasicBlock(fn);
    LLVMBuilderRef b = LLVMCreateBuilderInContext(l->cx);
    LLVMValueRef first = LLVMGetFirstInstruction(entry);
    if (first)
        LLVMPositionBuilderBefore(b, first);
    else
        LLVMPositionBuilderAtEnd(b, entry);
    LLVMValueRef a = LLVMBuildAlloca(b, t, name);
    LLVMDisposeBuilder(b);
    return a;
}

static LLVMValueRef umin(L *l, LLVMValueRef a, LLVMValueRef b)
{
    return LLVMBuildSelect(l->b, LLVMBuildICmp(l->b, LLVMIntULT, a, b, ""), a, b, "");
}

static LLVMValueRef umax(L *l, LLVMValueRef a, LLVMValueRef b)
{
    return LLVMBuildSelect(l->b, LLVMBuildICmp(l->b, LLVMIntUGT, a, b, ""), a, b, "");
}

static LLVMValueRef meta_at(L *l, V *v, int i, const char *name)
{
    LLVMValueRef idx = c64(l, i);
    return LLVMBuildLoad2(l->b, l->i64, LLVMBuildGEP2(l->b, l->i64, v->meta, &idx, 1, ""), name);
}

/* -- Buffers and coordinates ------------------------------------------------------------- */

/* Does buffer b use iteration dim d?  For reduction outs only kept dims count. */
static bool buf_dim(const L *l, int b, int d)
{
    const kf_cg_kinfo *ki = l->ki;
    const kf_kernel *k = ki->k;
    if (b < k->nargs)
        return ki->arg_ew[b] && !kf_cg_dim_bcast(ki, nd(l, k->args[b]), d);
    int32_t n = k->outs[b - k->nargs];
    if (is_red(l, n))
        return !(k->axes & (1u << d));
    return !kf_cg_dim_bcast(ki, nd(l, n), d);
}

static bool coord_used(const L *l, int d)
{
    if (l->ki->coords & (1u << d))
        return true;
    for (int b = 0; b < l->ki->nb; b++)
        if (buf_dim(l, b, d))
            return true;
    return false;
}

/* v->c[d] for the dims in mask, row-major over just those dims, from the
 * linear index 'lin' (the last dim is fastest). */
static void coords_from(L *l, V *v, uint8_t mask, LLVMValueRef lin)
{
    int lowest = -1;
    for (int d = 0; d < l->ki->R; d++)
        if ((mask & (1u << d)) && coord_used(l, d)) {
            lowest = d;
            break;
        }
    if (lowest < 0)
        return;
    int first = -1;
    for (int d = 0; d < l->ki->R && first < 0; d++)
        if (mask & (1u << d))
            first = d;
    LLVMValueRef t = lin;
    char nm[16];
    for (int d = l->ki->R - 1; d >= lowest; d--) {
        if (!(mask & (1u << d)))
            continue;
        snprintf(nm, sizeof nm, "c%d", d);
        if (d == first) {
            v->c[d] = t;
        } else {
            v->c[d] = LLVMBuildURem(l->b, t, v->D[d], nm);
            if (d > lowest)
                t = LLVMBuildUDiv(l->b, t, v->D[d], "");
        }
    }
}

/* Element index of buffer b from the coordinates of the dims in mask, plus
 * start (NULL: 0). */
static LLVMValueRef addr_of(L *l, V *v, int b, uint8_t mask, LLVMValueRef start)
{
    LLVMValueRef a = start;
    for (int d = 0; d < l->ki->R; d++)
        if ((mask & (1u << d)) && buf_dim(l, b, d)) {
            LLVMValueRef t = LLVMBuildMul(l->b, v->c[d], v->st[b * l->ki->R + d], "");
            a = a ? LLVMBuildAdd(l->b, a, t, "") : t;
        }
    return a ? a : c64(l, 0);
}

static uint8_t all_mask(const L *l) { return (uint8_t)((1u << l->ki->R) - 1); }
static uint8_t kept_mask(const L *l) { return (uint8_t)(all_mask(l) & ~l->ki->k->axes); }
static uint8_t red_mask(const L *l) { return (uint8_t)(all_mask(l) & l->ki->k->axes); }

/* Load the args read at the point: element addr[b] of each (NULL addr: use
 * lin for all). */
static LLVMValueRef *point_loads(L *l, V *v, LLVMValueRef *addr, LLVMValueRef lin)
{
    const kf_kernel *k = l->ki->k;
    LLVMValueRef *x = calloc((size_t)k->nargs + 1, sizeof *x);
    if (!x) {
        fail(l, KF_ERR_NO_MEMORY, "llvm codegen: out of memory");
        return NULL;
    }
    char nm[64];
    for (int b = 0; b < k->nargs; b++) {
        if (!l->ki->arg_ew[b])
            continue;
        if (l->ki->bcast_all[b]) {
            x[b] = v->bc[b];
            continue;
        }
        node_name(l, k->args[b], nm, sizeof nm);
        x[b] = load_elem(l, dt(l, k->args[b]), v->p[b], addr ? addr[b] : lin, nm);
    }
    return x;
}

/* Call the body at the current point; returns the result struct. */
static LLVMValueRef body_call(L *l, V *v, LLVMValueRef body, LLVMValueRef *x)
{
    const kf_cg_kinfo *ki = l->ki;
    const kf_kernel *k = ki->k;
    LLVMValueRef *args = malloc(((size_t)k->nargs * 4 + (size_t)k->nscalars + KF_MAX_RANK + 1) * sizeof *args);
    if (!args) {
        fail(l, KF_ERR_NO_MEMORY, "llvm codegen: out of memory");
        return NULL;
    }
    int n = 0;
    for (int b = 0; b < k->nargs; b++)
        if (ki->arg_ew[b])
            args[n++] = x[b];
    for (int i = 0; i < k->nscalars; i++)
        args[n++] = v->sc[i];
    for (int d = 0; d < ki->R; d++)
        if (ki->coords & (1u << d))
            args[n++] = v->c[d] ? v->c[d] : c64(l, 0);
    for (int b = 0; b < k->nargs; b++)
        if (ki->tslot[b] >= 0) {
            int s = ki->tslot[b];
            args[n++] = v->p[b];
            args[n++] = v->tl[s];
            args[n++] = v->ts[s];
        }
    LLVMValueRef r = LLVMBuildCall2(l->b, LLVMGlobalGetValueType(body), body, args, (unsigned)n, "r");
    free(args);
    if (k->has_take) {
        LLVMValueRef bad = LLVMBuildExtractValue(l->b, r, (unsigned)k->nouts, "");
        LLVMValueRef was = LLVMBuildLoad2(l->b, l->i1, v->bad, "");
        LLVMBuildStore(l->b, LLVMBuildOr(l->b, was, bad, ""), v->bad);
    }
    return r;
}

/* Store the non-reduction outs of the body result at addr[nargs + j]. */
static void ew_stores(L *l, V *v, LLVMValueRef r, LLVMValueRef *addr, LLVMValueRef lin)
{
    const kf_kernel *k = l->ki->k;
    for (int j = 0; j < k->nouts; j++) {
        if (is_red(l, k->outs[j]))
            continue;
        LLVMValueRef x = LLVMBuildExtractValue(l->b, r, (unsigned)j, "");
        store_elem(l, dt(l, k->outs[j]), v->p[k->nargs + j], addr ? addr[k->nargs + j] : lin, x);
    }
}

/* -- Variant functions ----------------------------------------------------------------------- */

/* Start the run function of variant vname: parameters (buffers noalias),
 * offsets, dims, strides, scalars, take facts, broadcast loads. */
static kf_status variant_begin(L *l, V *v, const char *vname)
{
    const kf_cg_kinfo *ki = l->ki;
    const kf_kernel *k = ki->k;
    int nb = ki->nb, R = ki->R;
    memset(v, 0, sizeof *v);
    v->a = calloc((size_t)nb + 1, sizeof *v->a);
    v->p = calloc((size_t)nb + 1, sizeof *v->p);
    v->bc = calloc((size_t)nb + 1, sizeof *v->bc);
    v->sc = calloc((size_t)k->nscalars + 1, sizeof *v->sc);
    v->st = calloc((size_t)nb * (size_t)(R ? R : 1) + 1, sizeof *v->st);
    v->base = calloc((size_t)nb + 1, sizeof *v->base);
    v->tl = calloc((size_t)ki->ntake + 1, sizeof *v->tl);
    v->ts = calloc((size_t)ki->ntake + 1, sizeof *v->ts);
    LLVMTypeRef *ps = malloc(((size_t)nb + (size_t)k->nscalars + 6) * sizeof *ps);
    if (!v->a || !v->p || !v->bc || !v->sc || !v->st || !v->base || !v->tl || !v->ts || !ps) {
        free(ps);
        fail(l, KF_ERR_NO_MEMORY, "llvm codegen: out of memory");
        return l->st;
    }
    int np = 0;
    for (int b = 0; b < nb; b++)
        ps[np++] = l->ptr;
    ps[np++] = l->ptr; /* meta */
    for (int i = 0; i < k->nscalars; i++)
        ps[np++] = st_ty(l, dt(l, k->scalars[i]));
    ps[np++] = l->ptr; /* err (NULL without a take) */
    ps[np++] = l->ptr; /* scratch (NULL for elementwise kernels) */
    ps[np++] = l->i64;
    ps[np++] = l->i64;
    char name[KF_CG_NAME_MAX + 16];
    snprintf(name, sizeof name, "%s_%s.run", ki->prefix, vname);
    v->fn = LLVMAddFunction(l->m, name, LLVMFunctionType(l->i64, ps, (unsigned)np, 0));
    free(ps);
    LLVMSetLinkage(v->fn, LLVMInternalLinkage);
    fn_attr(l, v->fn, LLVMAttributeFunctionIndex, "nounwind");
    /* outputs never overlap another buffer of the launch; inputs are only read */
    for (int b = 0; b < nb + 1; b++)
        fn_attr(l, v->fn, (unsigned)b + 1, "noalias");
    LLVMPositionBuilderAtEnd(l->b, LLVMAppendBasicBlockInContext(l->cx, v->fn, "entry"));
    char nm[64];
    int pi = 0;
    for (int b = 0; b < nb; b++) {
        v->a[b] = LLVMGetParam(v->fn, (unsigned)pi++);
        snprintf(nm, sizeof nm, "%s%d", b < k->nargs ? "a" : "o", b < k->nargs ? b : b - k->nargs);
        LLVMSetValueName2(v->a[b], nm, strlen(nm));
    }
    v->meta = LLVMGetParam(v->fn, (unsigned)pi++);
    LLVMSetValueName2(v->meta, "meta", 4);
    for (int i = 0; i < k->nscalars; i++) {
        LLVMValueRef s = LLVMGetParam(v->fn, (unsigned)pi++);
        snprintf(nm, sizeof nm, "s%d", i);
        LLVMSetValueName2(s, nm, strlen(nm));
        v->sc[i] = from_store(l, dt(l, k->scalars[i]), s);
    }
    v->err = LLVMGetParam(v->fn, (unsigned)pi++);
    LLVMSetValueName2(v->err, "err", 3);
    v->scratch = LLVMGetParam(v->fn, (unsigned)pi++);
    LLVMSetValueName2(v->scratch, "scratch", 7);
    v->begin = LLVMGetParam(v->fn, (unsigned)pi++);
    LLVMSetValueName2(v->begin, "begin", 5);
    v->end = LLVMGetParam(v->fn, (unsigned)pi++);
    LLVMSetValueName2(v->end, "end", 3);
    if (k->has_take) {
        v->bad = entry_alloca(l, l->i1, "bad");
        LLVMBuildStore(l->b, cu(l->i1, 0), v->bad);
    }
    for (int b = 0; b < nb; b++) {
        bool isarg = b < k->nargs;
        if (isarg && !ki->arg_ew[b] && ki->tslot[b] < 0)
            continue;
        int32_t n = isarg ? k->args[b] : k->outs[b - k->nargs];
        LLVMValueRef off = meta_at(l, v, ki->m_offsets + b, "");
        snprintf(nm, sizeof nm, "%s%d", isarg ? "p" : "q", isarg ? b : b - k->nargs);
        v->p[b] = LLVMBuildGEP2(l->b, st_ty(l, dt(l, n)), v->a[b], &off, 1, nm);
    }
    for (int d = 0; d < R; d++) {
        snprintf(nm, sizeof nm, "d%d", d);
        v->D[d] = ki->dims[d] >= 0 ? c64(l, ki->dims[d]) : meta_at(l, v, ki->m_shape + d, nm);
    }
    for (int b = 0; b < nb; b++)
        for (int d = 0; d < R; d++)
            if (buf_dim(l, b, d)) {
                snprintf(nm, sizeof nm, "st%d_%d", b, d);
                v->st[b * R + d] = meta_at(l, v, ki->m_strides + b * R + d, nm);
            }
    for (int b = 0; b < k->nargs; b++) {
        if (ki->tslot[b] >= 0) {
            int s = ki->tslot[b];
            snprintf(nm, sizeof nm, "tl%d", s);
            v->tl[s] = meta_at(l, v, ki->m_take + 2 * s, nm);
            snprintf(nm, sizeof nm, "ts%d", s);
            v->ts[s] = meta_at(l, v, ki->m_take + 2 * s + 1, nm);
        }
    }
    return l->st;
}

/* The launch's work units are known: a query (begin >= end) returns them
 * before any buffer is touched; then the args broadcast on every dim are
 * loaded once. */
static void variant_units(L *l, V *v, LLVMValueRef units)
{
    const kf_cg_kinfo *ki = l->ki;
    const kf_kernel *k = ki->k;
    LLVMBasicBlockRef q = LLVMAppendBasicBlockInContext(l->cx, v->fn, "query");
    LLVMBasicBlockRef go = LLVMAppendBasicBlockInContext(l->cx, v->fn, "work");
    LLVMBuildCondBr(l->b, LLVMBuildICmp(l->b, LLVMIntSGE, v->begin, v->end, ""), q, go);
    LLVMPositionBuilderAtEnd(l->b, q);
    LLVMBuildRet(l->b, units);
    LLVMPositionBuilderAtEnd(l->b, go);
    char nm[64];
    for (int b = 0; b < k->nargs; b++)
        if (ki->arg_ew[b] && ki->bcast_all[b]) {
            node_name(l, k->args[b], nm, sizeof nm);
            v->bc[b] = load_elem(l, dt(l, k->args[b]), v->p[b], c64(l, 0), nm);
        }
}

/* Finish the run function (return U, set the take flag once) and add the
 * entry point 'entry' (i64 (ptr args, i64 begin, i64 end)) that unpacks the
 * argument array and calls it. */
static void variant_end(L *l, V *v, LLVMValueRef units, const char *entry)
{
    const kf_kernel *k = l->ki->k;
    if (k->has_take) {
        LLVMValueRef fn = v->fn;
        LLVMBasicBlockRef set = LLVMAppendBasicBlockInContext(l->cx, fn, "take.flag");
        LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(l->cx, fn, "done");
        LLVMBuildCondBr(l->b, LLVMBuildLoad2(l->b, l->i1, v->bad, ""), set, done);
        LLVMPositionBuilderAtEnd(l->b, set);
        /* threads may store at once: an atomic store of the same value */
        LLVMValueRef s = LLVMBuildStore(l->b, cu(l->i32, 1), v->err);
        LLVMSetOrdering(s, LLVMAtomicOrderingMonotonic);
        LLVMSetAlignment(s, 4);
        LLVMBuildBr(l->b, done);
        LLVMPositionBuilderAtEnd(l->b, done);
    }
    LLVMBuildRet(l->b, units);

    /* the entry point */
    int nb = l->ki->nb, np = nb + 1 + k->nscalars + 4;
    LLVMTypeRef eps[3] = { l->ptr, l->i64, l->i64 };
    LLVMValueRef e = LLVMAddFunction(l->m, entry, LLVMFunctionType(l->i64, eps, 3, 0));
    fn_attr(l, e, LLVMAttributeFunctionIndex, "nounwind");
    LLVMValueRef args = LLVMGetParam(e, 0);
    LLVMSetValueName2(args, "args", 4);
    LLVMSetValueName2(LLVMGetParam(e, 1), "begin", 5);
    LLVMSetValueName2(LLVMGetParam(e, 2), "end", 3);
    LLVMPositionBuilderAtEnd(l->b, LLVMAppendBasicBlockInContext(l->cx, e, "entry"));
    LLVMValueRef *cv = malloc((size_t)np * sizeof *cv);
    if (!cv) {
        fail(l, KF_ERR_NO_MEMORY, "llvm codegen: out of memory");
        return;
    }
    int n = 0;
    for (int i = 0; i < nb + 1; i++) {
        LLVMValueRef idx = c64(l, i);
        cv[n++] = LLVMBuildLoad2(l->b, l->ptr, LLVMBuildGEP2(l->b, l->ptr, args, &idx, 1, ""), "");
    }
    for (int i = 0; i < k->nscalars; i++) {
        LLVMValueRef idx = c64(l, nb + 1 + i);
        LLVMValueRef p = LLVMBuildLoad2(l->b, l->ptr, LLVMBuildGEP2(l->b, l->ptr, args, &idx, 1, ""), "");
        cv[n++] = LLVMBuildLoad2(l->b, st_ty(l, dt(l, k->scalars[i])), p, "");
    }
    int next = nb + 1 + k->nscalars;
    for (int q = 0; q < 2; q++) {
        bool present = q == 0 ? k->has_take : k->kind == KF_KERNEL_REDUCE;
        if (present) {
            LLVMValueRef idx = c64(l, next++);
            cv[n++] = LLVMBuildLoad2(l->b, l->ptr, LLVMBuildGEP2(l->b, l->ptr, args, &idx, 1, ""), "");
        } else {
            cv[n++] = LLVMConstNull(l->ptr);
        }
    }
    cv[n++] = LLVMGetParam(e, 1);
    cv[n++] = LLVMGetParam(e, 2);
    LLVMBuildRet(l->b, LLVMBuildCall2(l->b, LLVMGlobalGetValueType(v->fn), v->fn, cv, (unsigned)n, ""));
    free(cv);
}

static void variant_free(V *v)
{
    free(v->a);
    free(v->p);
    free(v->bc);
    free(v->sc);
    free(v->st);
    free(v->base);
    free(v->tl);
    free(v->ts);
}

/* Work units of an elementwise kernel: chunks of 2^k elements, about
 * EW_UNIT_WORK weighted element-ops each. */
static int ew_chunk_log2(const L *l)
{
    uint32_t w = l->ki->k->nops + (uint32_t)l->ki->nb + 1;
    int lg = 8;
    while (lg < 13 && ((uint32_t)1 << (lg + 1)) * w <= EW_UNIT_WORK)
        lg++;
    return lg;
}

/* Elementwise: contiguous (c) or strided (s). Units are chunks of the
 * linear index space; the run covers [begin*CH, min(end*CH, n)). */
static void emit_ew(L *l, LLVMValueRef body, bool contig)
{
    const kf_cg_kinfo *ki = l->ki;
    const kf_kernel *k = ki->k;
    int R = ki->R, nb = ki->nb;
    V v;
    if (variant_begin(l, &v, contig ? "c64" : "s64") != KF_OK) {
        variant_free(&v);
        return;
    }
    int lg = ew_chunk_log2(l);
    LLVMValueRef n = meta_at(l, &v, 0, "n");
    LLVMValueRef units = LLVMBuildLShr(l->b, LLVMBuildAdd(l->b, n, c64(l, (1 << lg) - 1), ""), c64(l, lg), "units");
    variant_units(l, &v, units);
    LLVMValueRef i0 = LLVMBuildShl(l->b, umin(l, v.begin, units), c64(l, lg), "i0");
    LLVMValueRef i1 = umin(l, LLVMBuildShl(l->b, umin(l, v.end, units), c64(l, lg), ""), n);
    set_name(i1, "i1");
    LLVMValueRef *addr = calloc((size_t)nb + 1, sizeof *addr);
    if (!addr) {
        fail(l, KF_ERR_NO_MEMORY, "llvm codegen: out of memory");
        variant_free(&v);
        return;
    }
    if (contig && !ki->coords) {
        /* one flat loop: every buffer at the linear index */
        loop lp;
        LLVMValueRef i = loop_open(l, &lp, i0, i1, "i");
        LLVMValueRef *x = point_loads(l, &v, NULL, i);
        LLVMValueRef r = x ? body_call(l, &v, body, x) : NULL;
        if (r)
            ew_stores(l, &v, r, NULL, i);
        free(x);
        loop_close(l, &lp, c64(l, 1));
    } else {
        /* rows of the last dim: coordinates of the outer dims once per row */
        LLVMValueRef fn = v.fn;
        LLVMBasicBlockRef pre = LLVMGetInsertBlock(l->b);
        LLVMBasicBlockRef head = LLVMAppendBasicBlockInContext(l->cx, fn, "row.head");
        LLVMBasicBlockRef rbody = LLVMAppendBasicBlockInContext(l->cx, fn, "row.body");
        LLVMBasicBlockRef rexit = LLVMAppendBasicBlockInContext(l->cx, fn, "row.end");
        LLVMBuildBr(l->b, head);
        LLVMPositionBuilderAtEnd(l->b, head);
        LLVMValueRef i = LLVMBuildPhi(l->b, l->i64, "i");
        LLVMAddIncoming(i, &i0, &pre, 1);
        LLVMBuildCondBr(l->b, LLVMBuildICmp(l->b, LLVMIntULT, i, i1, ""), rbody, rexit);
        LLVMPositionBuilderAtEnd(l->b, rbody);
        LLVMValueRef cl, len;
        if (R == 0) {
            cl = c64(l, 0);
            len = LLVMBuildSub(l->b, i1, i, "len");
        } else {
            LLVMValueRef last = v.D[R - 1];
            cl = LLVMBuildURem(l->b, i, last, "cl");
            len = umin(l, LLVMBuildSub(l->b, last, cl, ""), LLVMBuildSub(l->b, i1, i, ""));
            set_name(len, "len");
            if (R > 1)
                coords_from(l, &v, (uint8_t)(all_mask(l) & ~(1u << (R - 1))), LLVMBuildUDiv(l->b, i, last, "row"));
        }
        uint8_t outer = R ? (uint8_t)(all_mask(l) & ~(1u << (R - 1))) : 0;
        if (!contig)
            for (int b = 0; b < nb; b++)
                if (b >= k->nargs || (ki->arg_ew[b] && !ki->bcast_all[b]))
                    v.base[b] = addr_of(l, &v, b, outer, NULL);
        loop lp;
        LLVMValueRef q = loop_open(l, &lp, c64(l, 0), len, "q");
        if (R > 0)
            v.c[R - 1] = LLVMBuildAdd(l->b, cl, q, "clast");
        LLVMValueRef lin = LLVMBuildAdd(l->b, i, q, "lin");
        if (!contig)
            for (int b = 0; b < nb; b++)
                if (v.base[b])
                    addr[b] = R && buf_dim(l, b, R - 1)
                                  ? LLVMBuildAdd(l->b, v.base[b], LLVMBuildMul(l->b, v.c[R - 1], v.st[b * R + R - 1], ""), "")
                                  : v.base[b];
        LLVMValueRef *x = point_loads(l, &v, contig ? NULL : addr, lin);
        LLVMValueRef r = x ? body_call(l, &v, body, x) : NULL;
        if (r)
            ew_stores(l, &v, r, contig ? NULL : addr, lin);
        free(x);
        loop_close(l, &lp, c64(l, 1));
        LLVMBasicBlockRef latch = LLVMGetInsertBlock(l->b);
        LLVMValueRef inext = LLVMBuildAdd(l->b, i, len, "");
        LLVMBuildBr(l->b, head);
        LLVMAddIncoming(i, &inext, &latch, 1);
        LLVMPositionBuilderAtEnd(l->b, rexit);
    }
    free(addr);
    char entry[KF_CG_NAME_MAX];
    snprintf(entry, sizeof entry, "%s_%s", ki->prefix, contig ? "c64" : "s64");
    variant_end(l, &v, units, entry);
    variant_free(&v);
}

/* -- Reductions ------------------------------------------------------------------------------ */

typedef struct red {
    kf_op op;
    kf_dtype t;          /* operand dtype */
    kf_dtype out;        /* result dtype */
    bool fl, arg, sg;
    LLVMTypeRef acc;     /* accumulator type */
} red;

static red red_of(const L *l, int j)
{
    const kf_irnode *x = nd(l, l->ki->k->outs[j]);
    red r;
    r.op = (kf_op)x->op;
    r.t = dt(l, x->args[0]);
    r.out = (kf_dtype)x->dtype;
    r.fl = kf_dt_is_float(r.t);
    r.sg = kf_dt_is_sint(r.t);
    r.arg = kf_cg_red_is_arg(r.op);
    if (r.fl)
        r.acc = r.t == KF_F64 ? l->f64 : l->f32;
    else
        r.acc = kf_cg_red_acc_size(r.op, r.t) == 8 ? l->i64 : l->i32;
    return r;
}

static bool is_min(kf_op op) { return op == KF_OP_RMIN || op == KF_OP_ARGMIN; }

static LLVMValueRef red_init(const red *r)
{
    switch (r->op) {
    case KF_OP_SUM: case KF_OP_MEAN: return LLVMConstNull(r->acc);
    case KF_OP_PROD: return r->fl ? cfloat(r->acc, 1.0) : cu(r->acc, 1);
    default:
        if (r->fl)
            return cfloat(r->acc, is_min(r->op) ? INFINITY : -INFINITY);
        return is_min(r->op) ? int_max(r->acc, r->t) : int_min(r->acc, r->t);
    }
}

/* A sink value (compute type of the operand) as an accumulator value. */
static LLVMValueRef to_acc(L *l, const red *r, LLVMValueRef v)
{
    if (r->fl || LLVMTypeOf(v) == r->acc)
        return v;
    return LLVMBuildIntCast2(l->b, v, r->acc, r->sg, "");
}

/* (acc, ai) absorbs (v, vi): one element, or the right partial of a pair. */
static void red_fold(L *l, const red *r, LLVMValueRef *acc, LLVMValueRef *ai, LLVMValueRef v, LLVMValueRef vi)
{
    LLVMBuilderRef b = l->b;
    switch (r->op) {
    case KF_OP_SUM: case KF_OP_MEAN:
        *acc = r->fl ? LLVMBuildFAdd(b, *acc, v, "") : LLVMBuildAdd(b, *acc, v, "");
        break;
    case KF_OP_PROD: *acc = r->fl ? LLVMBuildFMul(b, *acc, v, "") : LLVMBuildMul(b, *acc, v, ""); break;
    case KF_OP_RMIN: case KF_OP_RMAX: {
        bool mn = is_min(r->op);
        if (r->fl)
            *acc = fminmax(l, mn, *acc, v);
        else
            *acc = LLVMBuildSelect(b, LLVMBuildICmp(b, mn ? (r->sg ? LLVMIntSLT : LLVMIntULT) : (r->sg ? LLVMIntSGT : LLVMIntUGT), v, *acc, ""),
                                   v, *acc, "");
        break;
    }
    default: { /* argmin, argmax: first index on ties, the first NaN wins */
        bool mn = is_min(r->op);
        LLVMValueRef ilt = LLVMBuildICmp(b, LLVMIntSLT, vi, *ai, "");
        LLVMValueRef take;
        if (r->fl) {
            LLVMValueRef vnan = LLVMBuildFCmp(b, LLVMRealUNO, v, v, "");
            LLVMValueRef accok = LLVMBuildFCmp(b, LLVMRealORD, *acc, *acc, "");
            LLVMValueRef better = LLVMBuildFCmp(b, mn ? LLVMRealOLT : LLVMRealOGT, v, *acc, "");
            LLVMValueRef tie = LLVMBuildAnd(b, LLVMBuildFCmp(b, LLVMRealOEQ, v, *acc, ""), ilt, "");
            LLVMValueRef c2 = LLVMBuildAnd(b, accok, LLVMBuildOr(b, better, tie, ""), "");
            take = LLVMBuildSelect(b, vnan, LLVMBuildOr(b, accok, ilt, ""), c2, "");
        } else {
            LLVMIntPredicate p = mn ? (r->sg ? LLVMIntSLT : LLVMIntULT) : (r->sg ? LLVMIntSGT : LLVMIntUGT);
            LLVMValueRef better = LLVMBuildICmp(b, p, v, *acc, "");
            take = LLVMBuildOr(b, better, LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntEQ, v, *acc, ""), ilt, ""), "");
        }
        *acc = LLVMBuildSelect(b, take, v, *acc, "");
        *ai = LLVMBuildSelect(b, take, vi, *ai, "");
        break;
    }
    }
}

/* The final value of reduction j from (acc, ai), stored at element addr of out j. */
static void red_store(L *l, V *v, int j, LLVMValueRef acc, LLVMValueRef ai, LLVMValueRef L_, LLVMValueRef addr)
{
    const kf_kernel *k = l->ki->k;
    red r = red_of(l, j);
    LLVMValueRef p = v->p[k->nargs + j];
    if (r.arg) {
        LLVMValueRef none = LLVMBuildICmp(l->b, LLVMIntEQ, ai, c64(l, INT64_MAX), "");
        store_elem(l, KF_I64, p, addr, LLVMBuildSelect(l->b, none, c64(l, -1), ai, ""));
    } else if (r.op == KF_OP_MEAN) {
        store_elem(l, r.out, p, addr, LLVMBuildFDiv(l->b, acc, LLVMBuildUIToFP(l->b, L_, r.acc, ""), "mean"));
    } else if (r.fl) {
        store_elem(l, r.out, p, addr, acc);
    } else {
        store_elem(l, r.out, p, addr, LLVMBuildIntCast2(l->b, acc, int_ty(l, r.out), 0, ""));
    }
}

/* M (outputs) and L (reduced elements each) from the dims. */
static void sizes_ML(L *l, V *v, LLVMValueRef *M, LLVMValueRef *L_)
{
    LLVMValueRef m = c64(l, 1), n = c64(l, 1);
    for (int d = 0; d < l->ki->R; d++) {
        if (l->ki->k->axes & (1u << d))
            n = LLVMBuildMul(l->b, n, v->D[d], "");
        else
            m = LLVMBuildMul(l->b, m, v->D[d], "");
    }
    set_name(m, "M");
    set_name(n, "L");
    *M = m;
    *L_ = n;
}

/* Coordinates of the kept dims from output o and the kept part of every
 * buffer's address (v->base). */
static void kept_point(L *l, V *v, LLVMValueRef o)
{
    coords_from(l, v, kept_mask(l), o);
    for (int b = 0; b < l->ki->nb; b++)
        if (b >= l->ki->k->nargs || (l->ki->arg_ew[b] && !l->ki->bcast_all[b]))
            v->base[b] = addr_of(l, v, b, kept_mask(l), NULL);
}

/* Visit reduced element ri of the current output: coordinates, loads, body,
 * EW stores; returns the body's result. */
static LLVMValueRef red_point(L *l, V *v, LLVMValueRef body, LLVMValueRef ri, LLVMValueRef *addr)
{
    const kf_cg_kinfo *ki = l->ki;
    coords_from(l, v, red_mask(l), ri);
    for (int b = 0; b < ki->nb; b++)
        if (v->base[b])
            addr[b] = addr_of(l, v, b, red_mask(l), v->base[b]);
    LLVMValueRef *x = point_loads(l, v, addr, NULL);
    LLVMValueRef r = x ? body_call(l, v, body, x) : NULL;
    if (r)
        ew_stores(l, v, r, addr, NULL);
    free(x);
    return r;
}

/* Lane arrays: per reduction, n accumulators (and indices). */
typedef struct lanes {
    LLVMValueRef *acc, *ai;   /* allocas [n x acc], [n x i64] */
} lanes;

static LLVMValueRef lane_ptr(L *l, LLVMTypeRef t, LLVMValueRef arr, LLVMValueRef i)
{
    return LLVMBuildGEP2(l->b, t, arr, &i, 1, "");
}

static kf_status lanes_alloc(L *l, lanes *ln, unsigned n)
{
    const kf_kernel *k = l->ki->k;
    ln->acc = calloc((size_t)k->nouts + 1, sizeof *ln->acc);
    ln->ai = calloc((size_t)k->nouts + 1, sizeof *ln->ai);
    if (!ln->acc || !ln->ai) {
        fail(l, KF_ERR_NO_MEMORY, "llvm codegen: out of memory");
        return l->st;
    }
    for (int j = 0; j < k->nouts; j++)
        if (is_red(l, k->outs[j])) {
            red r = red_of(l, j);
            ln->acc[j] = entry_alloca(l, LLVMArrayType(r.acc, n), "lanes");
            if (r.arg)
                ln->ai[j] = entry_alloca(l, LLVMArrayType(l->i64, n), "lanes.i");
        }
    return KF_OK;
}

static void lanes_free(lanes *ln)
{
    free(ln->acc);
    free(ln->ai);
    ln->acc = ln->ai = NULL;
}

/* Lanes [0, n) of every reduction to the reduction's identity. */
static void lanes_init(L *l, lanes *ln, LLVMValueRef n)
{
    const kf_kernel *k = l->ki->k;
    for (int j = 0; j < k->nouts; j++)
        if (ln->acc[j]) {
            red r = red_of(l, j);
            loop lp;
            LLVMValueRef i = loop_open(l, &lp, c64(l, 0), n, "init");
            LLVMBuildStore(l->b, red_init(&r), lane_ptr(l, r.acc, ln->acc[j], i));
            if (ln->ai[j])
                LLVMBuildStore(l->b, c64(l, INT64_MAX), lane_ptr(l, l->i64, ln->ai[j], i));
            loop_close(l, &lp, c64(l, 1));
        }
}

/* Fold (v, vi) into lane 'lane' of reduction j. */
static void lane_fold(L *l, lanes *ln, int j, LLVMValueRef lane, LLVMValueRef v, LLVMValueRef vi)
{
    red r = red_of(l, j);
    LLVMValueRef pa = lane_ptr(l, r.acc, ln->acc[j], lane);
    LLVMValueRef pi = ln->ai[j] ? lane_ptr(l, l->i64, ln->ai[j], lane) : NULL;
    LLVMValueRef a = LLVMBuildLoad2(l->b, r.acc, pa, "");
    LLVMValueRef ia = pi ? LLVMBuildLoad2(l->b, l->i64, pi, "") : NULL;
    red_fold(l, &r, &a, &ia, v, vi);
    LLVMBuildStore(l->b, a, pa);
    if (pi)
        LLVMBuildStore(l->b, ia, pi);
}

/* The fixed tree of a GPU block, over lanes of width 'width' (1, or the
 * outputs of an output block side by side, 'cnt' of them used): for s =
 * 128, 64, ..., 1, lane j < s folds lane j + s; lane 0 ends with the
 * result. */
static void lanes_tree(L *l, lanes *ln, unsigned width, LLVMValueRef cnt)
{
    const kf_kernel *k = l->ki->k;
    for (int j = 0; j < k->nouts; j++) {
        if (!ln->acc[j])
            continue;
        red r = red_of(l, j);
        for (int s = KF_CG_BLOCK / 2; s >= 1; s >>= 1) {
            loop lp, lb;
            LLVMValueRef i = loop_open(l, &lp, c64(l, 0), c64(l, s), "tree");
            LLVMValueRef bb = width > 1 ? loop_open(l, &lb, c64(l, 0), cnt, "tb") : c64(l, 0);
            LLVMValueRef dst = LLVMBuildAdd(l->b, LLVMBuildMul(l->b, i, c64(l, width), ""), bb, "");
            LLVMValueRef src = LLVMBuildAdd(l->b, dst, c64(l, (long long)s * width), "");
            LLVMValueRef b = LLVMBuildLoad2(l->b, r.acc, lane_ptr(l, r.acc, ln->acc[j], src), "");
            LLVMValueRef ib = ln->ai[j] ? LLVMBuildLoad2(l->b, l->i64, lane_ptr(l, l->i64, ln->ai[j], src), "") : NULL;
            lane_fold(l, ln, j, dst, b, ib);
            if (width > 1)
                loop_close(l, &lb, c64(l, 1));
            loop_close(l, &lp, c64(l, 1));
        }
    }
}

/* -- Output blocks ---------------------------------------------------------------------
 * Each output's fold order is fixed (the GPU's), but nothing orders one
 * output against another: a block of up to RED_OBLOCK outputs that are
 * neighbours in the innermost kept dim can be folded side by side, the
 * same element of each per step.  Where that dim is the more contiguous
 * one (column sums), the inner loop over the block then reads consecutive
 * memory and vectorises; the bits of every output stay the same. */

enum { RED_OBLOCK = 64, RED_LANES_BYTES = 128 * 1024 };

/* Bytes of one lane of every reduction of the kernel (accumulator and index). */
static unsigned lane_bytes(const L *l)
{
    unsigned s = 0;
    for (int j = 0; j < l->ki->k->nouts; j++)
        if (is_red(l, l->ki->k->outs[j])) {
            red r = red_of(l, j);
            s += (unsigned)kf_cg_red_acc_size(r.op, r.t) + (r.arg ? 8u : 0u);
        }
    return s;
}

/* Outputs per block of the tile variant: its lanes (KF_CG_BLOCK per
 * output) are on the stack of whichever thread runs the launch, the
 * caller's included, so they stay within RED_LANES_BYTES; 0: no blocks. */
static unsigned tile_block(const L *l)
{
    unsigned s = lane_bytes(l);
    for (unsigned b = RED_OBLOCK; b >= 16; b /= 4)
        if ((size_t)KF_CG_BLOCK * b * s <= RED_LANES_BYTES)
            return b;
    return 0;
}

/* The innermost kept dim that is not a literal 1, or -1. */
static int kin_dim(const L *l)
{
    for (int d = l->ki->R - 1; d >= 0; d--)
        if (!(l->ki->k->axes & (1u << d)) && l->ki->dims[d] != 1)
            return d;
    return -1;
}

typedef struct oblock {
    int kin;
    unsigned B;                      /* outputs per block */
    LLVMValueRef Mk, nblk, blocks;   /* size of dim kin, blocks per row of it, blocks */
    LLVMValueRef ck0, cnt, first;    /* of the current block: kin coordinate, outputs, first output */
} oblock;

static void oblock_sizes(L *l, V *v, int kin, unsigned B, LLVMValueRef M, oblock *ob)
{
    ob->kin = kin;
    ob->B = B;
    ob->Mk = v->D[kin];
    LLVMValueRef mo = LLVMBuildUDiv(l->b, M, umax(l, ob->Mk, c64(l, 1)), "");
    ob->nblk = LLVMBuildUDiv(l->b, LLVMBuildAdd(l->b, ob->Mk, c64(l, B - 1), ""), c64(l, B), "nblk");
    ob->blocks = LLVMBuildMul(l->b, mo, ob->nblk, "blocks");
}

/* Enter block blk: its outputs, the kept coordinates of its first output
 * and every buffer's kept base (v->base). */
static void oblock_enter(L *l, V *v, oblock *ob, LLVMValueRef blk)
{
    LLVMValueRef nb = umax(l, ob->nblk, c64(l, 1));
    LLVMValueRef oo = LLVMBuildUDiv(l->b, blk, nb, "");
    ob->ck0 = LLVMBuildMul(l->b, LLVMBuildURem(l->b, blk, nb, ""), c64(l, ob->B), "ck0");
    ob->cnt = umin(l, LLVMBuildSub(l->b, ob->Mk, ob->ck0, ""), c64(l, ob->B));
    ob->first = LLVMBuildAdd(l->b, LLVMBuildMul(l->b, oo, ob->Mk, ""), ob->ck0, "first");
    kept_point(l, v, ob->first);
}

/* Reduced element ri: coordinates and every buffer's address without the
 * block offset (raddr). */
static void oblock_element(L *l, V *v, LLVMValueRef ri, LLVMValueRef *raddr)
{
    coords_from(l, v, red_mask(l), ri);
    for (int b = 0; b < l->ki->nb; b++)
        raddr[b] = v->base[b] ? addr_of(l, v, b, red_mask(l), v->base[b]) : NULL;
}

/* Output bo of the block at the current element: loads, body, EW stores. */
static LLVMValueRef oblock_visit(L *l, V *v, oblock *ob, LLVMValueRef body, LLVMValueRef *raddr, LLVMValueRef bo,
                                 LLVMValueRef *addr)
{
    int kin = ob->kin, R = l->ki->R;
    v->c[kin] = LLVMBuildAdd(l->b, ob->ck0, bo, "");
    for (int b = 0; b < l->ki->nb; b++)
        if (raddr[b])
            addr[b] = buf_dim(l, b, kin) ? LLVMBuildAdd(l->b, raddr[b], LLVMBuildMul(l->b, bo, v->st[b * R + kin], ""), "")
                                         : raddr[b];
    LLVMValueRef *x = point_loads(l, v, addr, NULL);
    LLVMValueRef r = x ? body_call(l, v, body, x) : NULL;
    if (r)
        ew_stores(l, v, r, addr, NULL);
    free(x);
    return r;
}

/* Element index of output bo of the block in out j. */
static LLVMValueRef oblock_out(L *l, V *v, oblock *ob, int j, LLVMValueRef bo)
{
    int b = l->ki->k->nargs + j, R = l->ki->R;
    LLVMValueRef a = v->base[b];
    return buf_dim(l, b, ob->kin) ? LLVMBuildAdd(l->b, a, LLVMBuildMul(l->b, bo, v->st[b * R + ob->kin], ""), "") : a;
}

/* The final value of every reduction from lane 'lane' for output bo. */
static void lanes_store(L *l, V *v, lanes *ln, LLVMValueRef lane, LLVMValueRef Ln, oblock *ob, LLVMValueRef bo)
{
    const kf_kernel *k = l->ki->k;
    for (int j = 0; j < k->nouts; j++)
        if (ln->acc[j]) {
            red r = red_of(l, j);
            red_store(l, v, j, LLVMBuildLoad2(l->b, r.acc, lane_ptr(l, r.acc, ln->acc[j], lane), ""),
                      ln->ai[j] ? LLVMBuildLoad2(l->b, l->i64, lane_ptr(l, l->i64, ln->ai[j], lane), "") : NULL, Ln,
                      ob ? oblock_out(l, v, ob, j, bo) : v->base[k->nargs + j]);
        }
}

/* Fold every reduction of body result res into lane 'lane'. */
static void lanes_fold_result(L *l, lanes *ln, LLVMValueRef res, LLVMValueRef lane, LLVMValueRef vi)
{
    const kf_kernel *k = l->ki->k;
    for (int j = 0; j < k->nouts && res; j++)
        if (ln->acc[j]) {
            red r = red_of(l, j);
            lane_fold(l, ln, j, lane, to_acc(l, &r, LLVMBuildExtractValue(l->b, res, (unsigned)j, "")), vi);
        }
}

/* seq: each output folds its elements in order.  With a kept dim, outputs
 * go in blocks (one unit each), folded side by side; without one (a full
 * reduction), one output.  Units: blocks, or groups of outputs of about
 * RED_UNIT_ELEMS elements. */
static void emit_red_seq(L *l, LLVMValueRef body)
{
    V v;
    lanes ln = { NULL, NULL };
    LLVMValueRef *addr = NULL, *raddr = NULL;
    int kin = kin_dim(l);
    if (variant_begin(l, &v, "seq") != KF_OK || lanes_alloc(l, &ln, RED_OBLOCK) != KF_OK)
        goto out;
    addr = calloc((size_t)l->ki->nb + 1, sizeof *addr);
    raddr = calloc((size_t)l->ki->nb + 1, sizeof *raddr);
    if (!addr || !raddr) {
        fail(l, KF_ERR_NO_MEMORY, "llvm codegen: out of memory");
        goto out;
    }
    LLVMValueRef M, Ln, units;
    sizes_ML(l, &v, &M, &Ln);
    if (kin >= 0) {
        oblock ob;
        oblock_sizes(l, &v, kin, RED_OBLOCK, M, &ob);
        units = ob.blocks;
        variant_units(l, &v, units);
        loop lw, lr, lb, ls;
        LLVMValueRef blk = loop_open(l, &lw, umin(l, v.begin, units), umin(l, v.end, units), "blk");
        oblock_enter(l, &v, &ob, blk);
        lanes_init(l, &ln, ob.cnt);
        LLVMValueRef ri = loop_open(l, &lr, c64(l, 0), Ln, "ri");
        oblock_element(l, &v, ri, raddr);
        LLVMValueRef bo = loop_open(l, &lb, c64(l, 0), ob.cnt, "bo");
        lanes_fold_result(l, &ln, oblock_visit(l, &v, &ob, body, raddr, bo, addr), bo, ri);
        loop_close(l, &lb, c64(l, 1));
        loop_close(l, &lr, c64(l, 1));
        bo = loop_open(l, &ls, c64(l, 0), ob.cnt, "store");
        lanes_store(l, &v, &ln, bo, Ln, &ob, bo);
        loop_close(l, &ls, c64(l, 1));
        loop_close(l, &lw, c64(l, 1));
    } else {
        LLVMValueRef G = umax(l, LLVMBuildUDiv(l->b, c64(l, RED_UNIT_ELEMS), umax(l, Ln, c64(l, 1)), ""), c64(l, 1));
        units = LLVMBuildUDiv(l->b, LLVMBuildAdd(l->b, M, LLVMBuildSub(l->b, G, c64(l, 1), ""), ""), G, "units");
        variant_units(l, &v, units);
        LLVMValueRef o0 = umin(l, LLVMBuildMul(l->b, umin(l, v.begin, units), G, ""), M);
        LLVMValueRef o1 = umin(l, LLVMBuildMul(l->b, umin(l, v.end, units), G, ""), M);
        loop lo, lr;
        LLVMValueRef o = loop_open(l, &lo, o0, o1, "o");
        kept_point(l, &v, o);
        lanes_init(l, &ln, c64(l, 1));
        LLVMValueRef ri = loop_open(l, &lr, c64(l, 0), Ln, "ri");
        lanes_fold_result(l, &ln, red_point(l, &v, body, ri, addr), c64(l, 0), ri);
        loop_close(l, &lr, c64(l, 1));
        lanes_store(l, &v, &ln, c64(l, 0), Ln, NULL, NULL);
        loop_close(l, &lo, c64(l, 1));
    }
    {
        char entry[KF_CG_NAME_MAX];
        snprintf(entry, sizeof entry, "%s_seq", l->ki->prefix);
        variant_end(l, &v, units, entry);
    }
out:
    free(addr);
    free(raddr);
    lanes_free(&ln);
    variant_free(&v);
}

/* Scratch arrays of the two-pass reduction (abi.c sizes them): per
 * reduction in outs order, np accumulators then, for argmin/argmax, np
 * indices, each array rounded up to 16 bytes. */
static void scratch_arrays(L *l, V *v, LLVMValueRef np, LLVMValueRef *pv, LLVMValueRef *pi)
{
    const kf_kernel *k = l->ki->k;
    LLVMValueRef off = c64(l, 0);
    for (int j = 0; j < k->nouts; j++) {
        if (!is_red(l, k->outs[j]))
            continue;
        red r = red_of(l, j);
        long long sz = (long long)kf_cg_red_acc_size(r.op, r.t);
        pv[j] = LLVMBuildGEP2(l->b, l->i8, v->scratch, &off, 1, "pv");
        LLVMValueRef bytes = LLVMBuildMul(l->b, np, c64(l, sz), "");
        off = LLVMBuildAdd(l->b, off, LLVMBuildAnd(l->b, LLVMBuildAdd(l->b, bytes, c64(l, 15), ""), c64(l, -16), ""), "");
        if (r.arg) {
            pi[j] = LLVMBuildGEP2(l->b, l->i8, v->scratch, &off, 1, "pi");
            bytes = LLVMBuildMul(l->b, np, c64(l, 8), "");
            off = LLVMBuildAdd(l->b, off, LLVMBuildAnd(l->b, LLVMBuildAdd(l->b, bytes, c64(l, 15), ""), c64(l, -16), ""), "");
        }
    }
}

/* Lane 'lane' of every reduction as the partial of (output o, tile). */
static void lanes_partial(L *l, lanes *ln, LLVMValueRef lane, LLVMValueRef *pv, LLVMValueRef *pi, LLVMValueRef at)
{
    const kf_kernel *k = l->ki->k;
    for (int j = 0; j < k->nouts; j++)
        if (ln->acc[j]) {
            red r = red_of(l, j);
            LLVMBuildStore(l->b, LLVMBuildLoad2(l->b, r.acc, lane_ptr(l, r.acc, ln->acc[j], lane), ""),
                           lane_ptr(l, r.acc, pv[j], at));
            if (ln->ai[j])
                LLVMBuildStore(l->b, LLVMBuildLoad2(l->b, l->i64, lane_ptr(l, l->i64, ln->ai[j], lane), ""),
                               lane_ptr(l, l->i64, pi[j], at));
        }
}

/* The first arg read at the point and not broadcast on every dim, or -1. */
static int lead_arg(const L *l)
{
    for (int b = 0; b < l->ki->k->nargs; b++)
        if (l->ki->arg_ew[b] && !l->ki->bcast_all[b])
            return b;
    return -1;
}

static LLVMValueRef iabs(L *l, LLVMValueRef x)
{
    return LLVMBuildSelect(l->b, LLVMBuildICmp(l->b, LLVMIntSLT, x, c64(l, 0), ""), LLVMBuildSub(l->b, c64(l, 0), x, ""), x, "");
}

/* The chunks of the tile variant, from the meta block (kf_cg_fill_meta:
 * kf_cg_red_chunks): *nchunks per output of *ce reduced elements each (ce
 * may be NULL). */
static void red_chunks(L *l, V *v, LLVMValueRef *nchunks, LLVMValueRef *ce)
{
    *nchunks = meta_at(l, v, l->ki->m_chunks, "nchunks");
    if (ce)
        *ce = meta_at(l, v, l->ki->m_chunks + 1, "ce");
}

/* The lane of a GPU tile's thread that folds element el of a chunk: lane j
 * folds the groups of KF_CG_RED_GROUP elements 4j + 1024i (chunks start at
 * whole tiles). */
static LLVMValueRef group_lane(L *l, LLVMValueRef el)
{
    LLVMValueRef g = LLVMBuildUDiv(l->b, el, c64(l, KF_CG_RED_GROUP), "");
    return LLVMBuildURem(l->b, g, c64(l, KF_CG_BLOCK), "lane");
}

/* Whole rounds [rbase, rbase + whole) of a chunk: lane j folds its group
 * of KF_CG_RED_GROUP consecutive elements of each round in the body of a
 * loop over the lanes.  Twice where args are read along the innermost
 * reduced dim rd (-1: none): with their strides on rd known to be 1, where
 * a lane's group is consecutive memory and the lane loop vectorises with
 * interleaved loads, and with any strides. */
static void tile_rounds(L *l, V *v, LLVMValueRef body, lanes *ln, LLVMValueRef *addr, LLVMValueRef rbase,
                        LLVMValueRef whole, int rd)
{
    const kf_cg_kinfo *ki = l->ki;
    int R = ki->R;
    size_t nst = (size_t)ki->nb * (size_t)R;
    LLVMValueRef unit = NULL, *st = v->st, *unit_st = NULL;
    for (int b = 0; rd >= 0 && b < ki->k->nargs; b++)
        if (ki->arg_ew[b] && !ki->bcast_all[b] && buf_dim(l, b, rd)) {
            if (!unit_st && !(unit_st = malloc(nst * sizeof *unit_st))) {
                fail(l, KF_ERR_NO_MEMORY, "llvm codegen: out of memory");
                return;
            }
            if (!unit)
                memcpy(unit_st, st, nst * sizeof *unit_st);
            LLVMValueRef one = LLVMBuildICmp(l->b, LLVMIntEQ, st[b * R + rd], c64(l, 1), "");
            unit = unit ? LLVMBuildAnd(l->b, unit, one, "") : one;
            unit_st[b * R + rd] = c64(l, 1);
        }
    LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(l->cx, v->fn, "rounds.end"), any = NULL;
    if (unit) {
        LLVMBasicBlockRef fast = LLVMAppendBasicBlockInContext(l->cx, v->fn, "rounds.unit");
        any = LLVMAppendBasicBlockInContext(l->cx, v->fn, "rounds.any");
        LLVMBuildCondBr(l->b, unit, fast, any);
        LLVMPositionBuilderAtEnd(l->b, fast);
    }
    for (int pass = 0; pass < (unit ? 2 : 1); pass++) {
        v->st = unit && pass == 0 ? unit_st : st;
        loop lk, lj, le;
        LLVMValueRef kk = loop_open(l, &lk, c64(l, 0), whole, "kk");
        LLVMValueRef lane = loop_open(l, &lj, c64(l, 0), c64(l, KF_CG_BLOCK), "lane");
        LLVMValueRef g = LLVMBuildAdd(l->b, LLVMBuildAdd(l->b, rbase, kk, ""),
                                      LLVMBuildMul(l->b, lane, c64(l, KF_CG_RED_GROUP), ""), "g");
        LLVMValueRef e = loop_open(l, &le, c64(l, 0), c64(l, KF_CG_RED_GROUP), "e");
        LLVMValueRef ri = LLVMBuildAdd(l->b, g, e, "ri");
        lanes_fold_result(l, ln, red_point(l, v, body, ri, addr), lane, ri);
        loop_close(l, &le, c64(l, 1));
        loop_close(l, &lj, c64(l, 1));
        loop_close(l, &lk, c64(l, (long long)KF_CG_BLOCK * KF_CG_RED_GROUP));
        LLVMBuildBr(l->b, join);
        if (pass == 0 && unit)
            LLVMPositionBuilderAtEnd(l->b, any);
    }
    v->st = st;
    free(unit_st);
    LLVMPositionBuilderAtEnd(l->b, join);
}

/* tile: unit w is (output w / nchunks, chunk w % nchunks) (the
 * variable tile holds the chunk); lane j folds its elements 4j .. 4j + 3,
 * 4j + 1024 .. in order, then the tree.  One chunk writes the output, several write
 * partials to scratch.  When the kept dim is the more contiguous one
 * (decided per launch from the strides of the first arg), units are
 * (output block, chunk) instead and the lanes of the block's outputs sit
 * side by side: the same order per output. */
static void emit_red_tile(L *l, LLVMValueRef body)
{
    const kf_kernel *k = l->ki->k;
    int R = l->ki->R, kin = kin_dim(l), a0 = lead_arg(l), rin = -1;
    for (int d = R - 1; d >= 0 && rin < 0; d--)
        if (k->axes & (1u << d))
            rin = d;
    unsigned B = tile_block(l);
    bool blocks = kin >= 0 && a0 >= 0 && rin >= 0 && B > 0;
    V v;
    lanes ln = { NULL, NULL }, lb = { NULL, NULL };
    LLVMValueRef *addr = NULL, *raddr = NULL, *pv = NULL, *pi = NULL;
    if (variant_begin(l, &v, "tile") != KF_OK || lanes_alloc(l, &ln, KF_CG_BLOCK) != KF_OK ||
        (blocks && lanes_alloc(l, &lb, KF_CG_BLOCK * B) != KF_OK))
        goto out;
    addr = calloc((size_t)l->ki->nb + 1, sizeof *addr);
    raddr = calloc((size_t)l->ki->nb + 1, sizeof *raddr);
    pv = calloc((size_t)k->nouts + 1, sizeof *pv);
    pi = calloc((size_t)k->nouts + 1, sizeof *pi);
    if (!addr || !raddr || !pv || !pi) {
        fail(l, KF_ERR_NO_MEMORY, "llvm codegen: out of memory");
        goto out;
    }
    LLVMValueRef M, Ln;
    sizes_ML(l, &v, &M, &Ln);
    LLVMValueRef nchunks, ce;   /* chunks per output, and their length */
    red_chunks(l, &v, &nchunks, &ce);
    LLVMValueRef units = LLVMBuildMul(l->b, M, nchunks, "units"), use_block = NULL;
    oblock ob;
    if (blocks) {
        oblock_sizes(l, &v, kin, B, M, &ob);
        LLVMValueRef sk = buf_dim(l, a0, kin) ? iabs(l, v.st[a0 * R + kin]) : c64(l, 0);
        LLVMValueRef sr = buf_dim(l, a0, rin) ? iabs(l, v.st[a0 * R + rin]) : c64(l, 0);
        use_block = LLVMBuildAnd(l->b, LLVMBuildICmp(l->b, LLVMIntULT, sk, sr, ""),
                                 LLVMBuildICmp(l->b, LLVMIntUGE, ob.Mk, c64(l, 8), ""), "use_block");
        units = LLVMBuildSelect(l->b, use_block, LLVMBuildMul(l->b, ob.blocks, nchunks, ""), units, "units");
    }
    variant_units(l, &v, units);
    scratch_arrays(l, &v, LLVMBuildMul(l->b, M, nchunks, ""), pv, pi);
    LLVMValueRef w0 = umin(l, v.begin, units), w1 = umin(l, v.end, units);
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(l->cx, v.fn, "done");
    LLVMBasicBlockRef lane_path = LLVMAppendBasicBlockInContext(l->cx, v.fn, "lanes");
    if (blocks) {
        LLVMBasicBlockRef block_path = LLVMAppendBasicBlockInContext(l->cx, v.fn, "blocks");
        LLVMBuildCondBr(l->b, use_block, block_path, lane_path);
        LLVMPositionBuilderAtEnd(l->b, block_path);
        loop lw, lk, lo, lf;
        LLVMValueRef w = loop_open(l, &lw, w0, w1, "bw");
        LLVMValueRef tile = LLVMBuildURem(l->b, w, nchunks, "tile");
        oblock_enter(l, &v, &ob, LLVMBuildUDiv(l->b, w, nchunks, ""));
        lanes_init(l, &lb, c64(l, (long long)KF_CG_BLOCK * B));
        LLVMValueRef rbase = LLVMBuildMul(l->b, tile, ce, "rbase");
        LLVMValueRef lim = umin(l, LLVMBuildSub(l->b, Ln, rbase, ""), ce);
        LLVMValueRef el = loop_open(l, &lk, c64(l, 0), lim, "el");
        LLVMValueRef ri = LLVMBuildAdd(l->b, rbase, el, "ri");
        oblock_element(l, &v, ri, raddr);
        LLVMValueRef bo = loop_open(l, &lo, c64(l, 0), ob.cnt, "bo");
        LLVMValueRef slot = LLVMBuildAdd(l->b, LLVMBuildMul(l->b, group_lane(l, el), c64(l, B), ""), bo, "");
        lanes_fold_result(l, &lb, oblock_visit(l, &v, &ob, body, raddr, bo, addr), slot, ri);
        loop_close(l, &lo, c64(l, 1));
        loop_close(l, &lk, c64(l, 1));
        lanes_tree(l, &lb, B, ob.cnt);
        LLVMValueRef one = LLVMBuildICmp(l->b, LLVMIntEQ, nchunks, c64(l, 1), "");
        bo = loop_open(l, &lf, c64(l, 0), ob.cnt, "fin");
        LLVMBasicBlockRef fin = LLVMAppendBasicBlockInContext(l->cx, v.fn, "b.final");
        LLVMBasicBlockRef part = LLVMAppendBasicBlockInContext(l->cx, v.fn, "b.partial");
        LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(l->cx, v.fn, "b.next");
        LLVMBuildCondBr(l->b, one, fin, part);
        LLVMPositionBuilderAtEnd(l->b, fin);
        lanes_store(l, &v, &lb, bo, Ln, &ob, bo);
        LLVMBuildBr(l->b, next);
        LLVMPositionBuilderAtEnd(l->b, part);
        LLVMValueRef at = LLVMBuildAdd(l->b, LLVMBuildMul(l->b, LLVMBuildAdd(l->b, ob.first, bo, ""), nchunks, ""), tile, "");
        lanes_partial(l, &lb, bo, pv, pi, at);
        LLVMBuildBr(l->b, next);
        LLVMPositionBuilderAtEnd(l->b, next);
        loop_close(l, &lf, c64(l, 1));
        loop_close(l, &lw, c64(l, 1));
        LLVMBuildBr(l->b, done);
    } else {
        LLVMBuildBr(l->b, lane_path);
    }
    LLVMPositionBuilderAtEnd(l->b, lane_path);
    {
        loop lw;
        LLVMValueRef w = loop_open(l, &lw, w0, w1, "w");
        LLVMValueRef o = LLVMBuildUDiv(l->b, w, nchunks, "o");
        LLVMValueRef tile = LLVMBuildURem(l->b, w, nchunks, "tile");
        kept_point(l, &v, o);
        lanes_init(l, &ln, c64(l, KF_CG_BLOCK));
        LLVMValueRef rbase = LLVMBuildMul(l->b, tile, ce, "rbase");
        LLVMValueRef lim = umin(l, LLVMBuildSub(l->b, Ln, rbase, ""), ce);
        /* whole rounds of 1024 elements lane by lane, a lane's group of 4
         * consecutive elements in the body (the lane loop vectorises), the
         * rest element by element */
        const long long round = (long long)KF_CG_BLOCK * KF_CG_RED_GROUP;
        LLVMValueRef whole = LLVMBuildMul(l->b, LLVMBuildUDiv(l->b, lim, c64(l, round), ""), c64(l, round), "whole");
        tile_rounds(l, &v, body, &ln, addr, rbase, whole, rin);
        loop lk;
        LLVMValueRef el = loop_open(l, &lk, whole, lim, "el");
        LLVMValueRef ri = LLVMBuildAdd(l->b, rbase, el, "ri");
        lanes_fold_result(l, &ln, red_point(l, &v, body, ri, addr), group_lane(l, el), ri);
        loop_close(l, &lk, c64(l, 1));
        lanes_tree(l, &ln, 1, NULL);
        /* one tile: the output; else the partial of (o, tile) */
        LLVMBasicBlockRef fin = LLVMAppendBasicBlockInContext(l->cx, v.fn, "final");
        LLVMBasicBlockRef part = LLVMAppendBasicBlockInContext(l->cx, v.fn, "partial");
        LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(l->cx, v.fn, "next");
        LLVMBuildCondBr(l->b, LLVMBuildICmp(l->b, LLVMIntEQ, nchunks, c64(l, 1), ""), fin, part);
        LLVMPositionBuilderAtEnd(l->b, fin);
        lanes_store(l, &v, &ln, c64(l, 0), Ln, NULL, NULL);
        LLVMBuildBr(l->b, next);
        LLVMPositionBuilderAtEnd(l->b, part);
        lanes_partial(l, &ln, c64(l, 0), pv, pi, w);
        LLVMBuildBr(l->b, next);
        LLVMPositionBuilderAtEnd(l->b, next);
        loop_close(l, &lw, c64(l, 1));
        LLVMBuildBr(l->b, done);
    }
    LLVMPositionBuilderAtEnd(l->b, done);
    {
        char entry[KF_CG_NAME_MAX];
        snprintf(entry, sizeof entry, "%s_tile", l->ki->prefix);
        variant_end(l, &v, units, entry);
    }
out:
    free(addr);
    free(raddr);
    free(pv);
    free(pi);
    lanes_free(&ln);
    lanes_free(&lb);
    variant_free(&v);
}

/* comb: per output, lane j folds partials j, j + 256, ... in order, then
 * the tree; units are groups of outputs of about RED_UNIT_ELEMS partials. */
static void emit_red_comb(L *l)
{
    const kf_kernel *k = l->ki->k;
    V v;
    lanes ln = { NULL, NULL };
    LLVMValueRef *pv = NULL, *pi = NULL;
    if (variant_begin(l, &v, "comb") != KF_OK || lanes_alloc(l, &ln, KF_CG_BLOCK) != KF_OK)
        goto out;
    pv = calloc((size_t)k->nouts + 1, sizeof *pv);
    pi = calloc((size_t)k->nouts + 1, sizeof *pi);
    if (!pv || !pi) {
        fail(l, KF_ERR_NO_MEMORY, "llvm codegen: out of memory");
        goto out;
    }
    LLVMValueRef M, Ln;
    sizes_ML(l, &v, &M, &Ln);
    LLVMValueRef nchunks;   /* chunks per output */
    red_chunks(l, &v, &nchunks, NULL);
    scratch_arrays(l, &v, LLVMBuildMul(l->b, M, nchunks, ""), pv, pi);
    LLVMValueRef G = umax(l, LLVMBuildUDiv(l->b, c64(l, RED_UNIT_ELEMS), umax(l, nchunks, c64(l, 1)), ""), c64(l, 1));
    LLVMValueRef units = LLVMBuildUDiv(l->b, LLVMBuildAdd(l->b, M, LLVMBuildSub(l->b, G, c64(l, 1), ""), ""), G, "units");
    variant_units(l, &v, units);
    LLVMValueRef o0 = umin(l, LLVMBuildMul(l->b, umin(l, v.begin, units), G, ""), M);
    LLVMValueRef o1 = umin(l, LLVMBuildMul(l->b, umin(l, v.end, units), G, ""), M);
    loop lo;
    LLVMValueRef o = loop_open(l, &lo, o0, o1, "o");
    coords_from(l, &v, kept_mask(l), o);
    for (int j = 0; j < k->nouts; j++)
        if (ln.acc[j])
            v.base[k->nargs + j] = addr_of(l, &v, k->nargs + j, kept_mask(l), NULL);
    lanes_init(l, &ln, c64(l, KF_CG_BLOCK));
    LLVMValueRef row = LLVMBuildMul(l->b, o, nchunks, "row");
    loop lt;
    LLVMValueRef t0 = loop_open(l, &lt, c64(l, 0), nchunks, "t0");
    LLVMValueRef cnt = umin(l, LLVMBuildSub(l->b, nchunks, t0, ""), c64(l, KF_CG_BLOCK));
    loop lj;
    LLVMValueRef lane = loop_open(l, &lj, c64(l, 0), cnt, "lane");
    LLVMValueRef at = LLVMBuildAdd(l->b, row, LLVMBuildAdd(l->b, t0, lane, ""), "");
    for (int j = 0; j < k->nouts; j++)
        if (ln.acc[j]) {
            red r = red_of(l, j);
            LLVMValueRef b = LLVMBuildLoad2(l->b, r.acc, lane_ptr(l, r.acc, pv[j], at), "");
            LLVMValueRef ib = ln.ai[j] ? LLVMBuildLoad2(l->b, l->i64, lane_ptr(l, l->i64, pi[j], at), "") : NULL;
            lane_fold(l, &ln, j, lane, b, ib);
        }
    loop_close(l, &lj, c64(l, 1));
    loop_close(l, &lt, c64(l, KF_CG_BLOCK));
    lanes_tree(l, &ln, 1, NULL);
    lanes_store(l, &v, &ln, c64(l, 0), Ln, NULL, NULL);
    loop_close(l, &lo, c64(l, 1));
    {
        char entry[KF_CG_NAME_MAX];
        snprintf(entry, sizeof entry, "%s_comb", l->ki->prefix);
        variant_end(l, &v, units, entry);
    }
out:
    free(pv);
    free(pi);
    lanes_free(&ln);
    variant_free(&v);
}

/* -- Kernels and the module ------------------------------------------------------------------ */

/* Fail when the device lacks f64 / f16 for a dtype node n uses. */
static bool caps_ok(L *l, int32_t n)
{
    kf_dtype t = dt(l, n);
    if (!l->caps || (t != KF_F64 && t != KF_F16) || (t == KF_F64 ? l->caps->fp64 : l->caps->fp16))
        return true;
    char nm[64];
    node_name(l, n, nm, sizeof nm);
    fail(l, KF_ERR_UNSUPPORTED, "graph '%s', kernel %d: '%s' uses %s, which the device does not support", l->g->name,
         l->ki->kidx, nm, kf_dtype_name(t));
    return false;
}

static bool kernel_caps_ok(L *l)
{
    const kf_kernel *k = l->ki->k;
    for (int i = 0; i < k->nargs; i++)
        if (!caps_ok(l, k->args[i]))
            return false;
    for (int i = 0; i < k->nouts; i++)
        if (!caps_ok(l, k->outs[i]))
            return false;
    for (int i = 0; i < k->nscalars; i++)
        if (!caps_ok(l, k->scalars[i]))
            return false;
    for (int i = 0; i < k->nnodes; i++) {
        const kf_irnode *x = nd(l, k->nodes[i]);
        if (!caps_ok(l, k->nodes[i]))
            return false;
        for (int a = 0; a < x->nargs; a++)
            if (!caps_ok(l, x->args[a]))
                return false;
    }
    return true;
}

/* Variant 'alias' as variant 'of' under a second name: on a CPU the 32-bit
 * variants save nothing worth a second copy of the loop (nor b64 over the
 * strided loop, and the CPU launch rule never picks it). */
static void alias_variant(L *l, kf_cg_variant alias, kf_cg_variant of)
{
    char na[KF_CG_NAME_MAX], nf[KF_CG_NAME_MAX];
    snprintf(na, sizeof na, "%s_%s", l->ki->prefix, kf_cg_variant_name(alias));
    snprintf(nf, sizeof nf, "%s_%s", l->ki->prefix, kf_cg_variant_name(of));
    LLVMValueRef f = LLVMGetNamedFunction(l->m, nf);
    if (f)
        LLVMAddAlias2(l->m, LLVMGlobalGetValueType(f), 0, f, na);
}

static void emit_kernel(L *l)
{
    const kf_cg_kinfo *ki = l->ki;
    if (!kernel_caps_ok(l))
        return;
    LLVMValueRef body = emit_body(l);
    if (l->st != KF_OK || !body)
        return;
    if (ki->k->kind == KF_KERNEL_EW) {
        emit_ew(l, body, true);
        emit_ew(l, body, false);
        if (ki->coords)
            alias_variant(l, KF_CG_C32, KF_CG_C64);
        if (ki->R >= 2)
            alias_variant(l, KF_CG_S32, KF_CG_S64);
        if (ki->has_b64)
            alias_variant(l, KF_CG_B64, KF_CG_S64);
        if (ki->bsplit)
            alias_variant(l, KF_CG_B1, KF_CG_S64);
    } else {
        emit_red_seq(l, body);
        emit_red_tile(l, body);
        emit_red_comb(l);   /* no warp: a GPU variant (kf_cg_launch_rule) */
    }
}

kf_status kf_cg_emit_llvm(const kf_plan *p, const kf_cg_caps *caps, kf_strbuf *out, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = 0;
    if (!p || !p->g || !out) {
        if (err && errlen)
            snprintf(err, errlen, "codegen: bad arguments");
        return KF_ERR_INVALID_ARG;
    }
    L l;
    memset(&l, 0, sizeof l);
    l.g = p->g;
    l.caps = caps;
    l.err = err;
    l.errlen = errlen;
    l.cx = LLVMContextCreate();
    char mname[300];
    snprintf(mname, sizeof mname, "kfuse %d.%d.%d: LLVM IR for graph '%s', %d kernel%s", KFUSE_VERSION_MAJOR,
             KFUSE_VERSION_MINOR, KFUSE_VERSION_PATCH, p->g->name, p->nkernels, p->nkernels == 1 ? "" : "s");
    l.m = LLVMModuleCreateWithNameInContext(mname, l.cx);
    LLVMSetSourceFileName(l.m, p->g->name, strlen(p->g->name));
    l.b = LLVMCreateBuilderInContext(l.cx);
    l.hb = LLVMCreateBuilderInContext(l.cx);
    l.i1 = LLVMInt1TypeInContext(l.cx);
    l.i8 = LLVMInt8TypeInContext(l.cx);
    l.i16 = LLVMInt16TypeInContext(l.cx);
    l.i32 = LLVMInt32TypeInContext(l.cx);
    l.i64 = LLVMInt64TypeInContext(l.cx);
    l.f32 = LLVMFloatTypeInContext(l.cx);
    l.f64 = LLVMDoubleTypeInContext(l.cx);
    l.ptr = LLVMPointerTypeInContext(l.cx, 0);
    l.vd = LLVMVoidTypeInContext(l.cx);
    for (int k = 0; k < p->nkernels && l.st == KF_OK; k++) {
        kf_cg_kinfo ki;
        kf_status s = kf_cg_kinfo_init(&ki, p, k, false, err, errlen);   /* no fast math here */
        if (s != KF_OK) {
            l.st = s;
            break;
        }
        l.ki = &ki;
        emit_kernel(&l);
        kf_cg_kinfo_free(&ki);
        l.ki = NULL;
    }
    if (l.st == KF_OK) {
        char *msg = NULL;
        if (LLVMVerifyModule(l.m, LLVMReturnStatusAction, &msg))
            fail(&l, KF_ERR_INVALID_ARG, "llvm codegen: internal error, the module does not verify: %.400s",
                 msg ? msg : "");
        LLVMDisposeMessage(msg);
    }
    if (l.st == KF_OK) {
        char *text = LLVMPrintModuleToString(l.m);
        kf_sb_puts(out, text);
        LLVMDisposeMessage(text);
        if (kf_sb_failed(out))
            fail(&l, KF_ERR_NO_MEMORY, "codegen: out of memory");
    }
    LLVMDisposeBuilder(l.b);
    LLVMDisposeBuilder(l.hb);
    LLVMDisposeModule(l.m);
    LLVMContextDispose(l.cx);
    return l.st;
}

#endif /* KFUSE_WITH_LLVM */
