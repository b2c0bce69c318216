/* LLVM for the CPU backend: the host target, the compile pipeline (parse
 * IR text, verify, default<O3> for the host CPU and features, emit an
 * object file) and the ORC LLJIT that links objects into the process.
 * Every LLVM error becomes a kf_status with LLVM's message. */
#include "cpu.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/IRReader.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <llvm/Config/llvm-config.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static kf_status fail(kf_rt_err *err, kf_status s, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static kf_status fail(kf_rt_err *err, kf_status s, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return s;
}

/* Consume an LLVMErrorRef into err. */
static kf_status fail_llvm(kf_rt_err *err, kf_status s, const char *what, LLVMErrorRef e)
{
    char *m = LLVMGetErrorMessage(e);
    fail(err, s, "%s: %s", what, m ? m : "unknown LLVM error");
    LLVMDisposeErrorMessage(m);
    return s;
}

/* -- The host ------------------------------------------------------------------------ */

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static bool init_ok;
static bool have_libmvec; /* glibc's vector math library is loaded (RTLD_GLOBAL) */

static void init_native(void)
{
    init_ok = !LLVMInitializeNativeTarget() && !LLVMInitializeNativeAsmPrinter() && !LLVMInitializeNativeAsmParser();
    /* libm's vector variants (_ZGVeN16v_expf, ...): loaded once for the
     * process, never unloaded, so JIT code can link against them */
    have_libmvec = dlopen("libmvec.so.1", RTLD_NOW | RTLD_GLOBAL) != NULL;
}

/* -- Vector math -----------------------------------------------------------------------
 * Codegen calls libm by name (expf, tanh, ...).  Where glibc's libmvec has a
 * vector variant for the widest vector ISA of this host, each call gets
 * LLVM's "vector-function-abi-variant" attribute naming it, so the loop
 * vectoriser can compute 16 (or 8, 4) lanes per call.  libmvec is within 4
 * ulp of libm (inside the accuracy contract of docs/ir.md) but not equal
 * to it, so after optimisation every call left scalar (loop remainders,
 * straight-line code) goes through the same variant too: an element's
 * result is a function of its input alone, whatever the thread count,
 * layout or variant, as on the GPU. */

static const char *const vec_libm[] = { "acos", "asin", "atan", "atan2", "cbrt", "cos", "cosh", "erf", "exp",
                                        "exp2", "expm1", "hypot", "log", "log10", "log1p", "log2", "pow", "sin",
                                        "sinh", "tan", "tanh" };

/* The widest vector ISA of the host as libmvec names it (b: SSE, d: AVX2,
 * e: AVX-512) and its lanes of a 32-bit float; 0 when none is usable. */
static char host_isa(const kf_cpu_host *h, unsigned *lanes32)
{
    *lanes32 = 0;
    if (!have_libmvec || strncmp(h->triple, "x86_64", 6) != 0)
        return 0;
    if (strstr(h->features, "+avx512f")) {
        *lanes32 = 16;
        return 'e';
    }
    if (strstr(h->features, "+avx2")) {
        *lanes32 = 8;
        return 'd';
    }
    *lanes32 = 4;
    return 'b';
}

typedef struct vec_map {
    char scalar[16], vector[40];
    unsigned nargs, lanes;
} vec_map;

/* Add the mappings to every call of a libm function that has a variant;
 * fills map (at most cap entries) with what was mapped. */
static int inject_vecmath(LLVMModuleRef m, const kf_cpu_host *h, vec_map *map, int cap)
{
    unsigned lanes32;
    char isa = host_isa(h, &lanes32);
    if (!isa)
        return 0;
    LLVMContextRef cx = LLVMGetModuleContext(m);
    LLVMTypeRef ptr = LLVMPointerTypeInContext(cx, 0);
    LLVMValueRef used[64];
    int n = 0;
    for (LLVMValueRef f = LLVMGetFirstFunction(m); f && n < cap && n < 64; f = LLVMGetNextFunction(f)) {
        if (!LLVMIsDeclaration(f))
            continue;
        size_t len;
        const char *name = LLVMGetValueName2(f, &len);
        LLVMTypeRef ft = LLVMGlobalGetValueType(f);
        LLVMTypeRef rt = LLVMGetReturnType(ft);
        LLVMTypeKind k = LLVMGetTypeKind(rt);
        if ((k != LLVMFloatTypeKind && k != LLVMDoubleTypeKind) || len < 3 || len > 12)
            continue;
        bool f32 = k == LLVMFloatTypeKind;
        if (f32 && name[len - 1] != 'f')
            continue;
        char base[16];
        snprintf(base, sizeof base, "%.*s", (int)(f32 ? len - 1 : len), name);
        bool known = false;
        for (size_t i = 0; i < sizeof vec_libm / sizeof vec_libm[0] && !known; i++)
            known = strcmp(base, vec_libm[i]) == 0;
        unsigned nargs = LLVMCountParamTypes(ft), vf = f32 ? lanes32 : lanes32 / 2;
        if (!known || nargs < 1 || nargs > 2)
            continue;
        vec_map *e = &map[n];
        snprintf(e->scalar, sizeof e->scalar, "%s", name);
        snprintf(e->vector, sizeof e->vector, "_ZGV%cN%u%s_%s", isa, vf, nargs == 2 ? "vv" : "v", name);
        e->nargs = nargs;
        e->lanes = vf;
        if (!dlsym(RTLD_DEFAULT, e->vector))
            continue;
        LLVMTypeRef vt = LLVMVectorType(rt, vf), ps[2] = { vt, vt };
        LLVMValueRef vfn = LLVMAddFunction(m, e->vector, LLVMFunctionType(vt, ps, nargs, 0));
        used[n++] = vfn;
        char attr[128];
        int al = snprintf(attr, sizeof attr, "_ZGV_LLVM_N%u%s_%s(%s)", vf, nargs == 2 ? "vv" : "v", name, e->vector);
        LLVMAttributeRef a = LLVMCreateStringAttribute(cx, "vector-function-abi-variant", 27, attr, (unsigned)al);
        for (LLVMUseRef u = LLVMGetFirstUse(f); u; u = LLVMGetNextUse(u)) {
            LLVMValueRef c = LLVMGetUser(u);
            if (LLVMIsACallInst(c) && LLVMGetCalledValue(c) == f)
                LLVMAddCallSiteAttribute(c, LLVMAttributeFunctionIndex, a);
        }
    }
    if (n) {
        /* Some CPUs tune for 256-bit vectors even with AVX-512 (LLVM's
         * icelake and sapphirerapids models); the vectoriser would then pick
         * 8 lanes, find no 8-lane variant and call libm once per element.
         * Ask for the width the variants have. */
        char width[8];
        int wl = snprintf(width, sizeof width, "%u", lanes32 * 32);
        LLVMAttributeRef pw = LLVMCreateStringAttribute(cx, "prefer-vector-width", 19, width, (unsigned)wl);
        for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f))
            if (!LLVMIsDeclaration(f))
                LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, pw);
        /* keep the declarations until the vectoriser has looked for them */
        LLVMValueRef g = LLVMAddGlobal(m, LLVMArrayType(ptr, (unsigned)n), "llvm.compiler.used");
        LLVMSetLinkage(g, LLVMAppendingLinkage);
        LLVMSetSection(g, "llvm.metadata");
        LLVMSetInitializer(g, LLVMConstArray(ptr, used, (unsigned)n));
    }
    return n;
}

/* The mapping of a call's callee: a mapped libm function, or an LLVM
 * intrinsic that stands for one (the optimiser turns pure expf calls into
 * llvm.exp.f32 and vectorises those at widths without a variant); NULL
 * for anything else. */
static const vec_map *mapped(LLVMValueRef callee, const vec_map *map, int n)
{
    size_t len;
    const char *name = LLVMGetValueName2(callee, &len);
    if (len > 5 && strncmp(name, "llvm.", 5) == 0) {
        static const char *const intr[] = { "exp", "exp2", "log", "log2", "log10", "pow", "sin", "cos" };
        const char *dot = strchr(name + 5, '.');
        if (!dot)
            return NULL;
        size_t bl = (size_t)(dot - (name + 5));
        bool f32 = strcmp(dot + strlen(dot) - 3, "f32") == 0, f64 = strcmp(dot + strlen(dot) - 3, "f64") == 0;
        for (size_t i = 0; i < sizeof intr / sizeof intr[0] && (f32 || f64); i++) {
            if (strlen(intr[i]) != bl || strncmp(name + 5, intr[i], bl) != 0)
                continue;
            char sc[16];
            snprintf(sc, sizeof sc, "%s%s", intr[i], f32 ? "f" : "");
            for (int j = 0; j < n; j++)
                if (strcmp(map[j].scalar, sc) == 0)
                    return &map[j];
        }
        return NULL;
    }
    for (int j = 0; j < n; j++)
        if (strcmp(map[j].scalar, name) == 0)
            return &map[j];
    return NULL;
}

/* A vector of V lanes: lanes first .. first+V-1 of x (a vector of W lanes,
 * or a scalar when W is 0), lanes past W repeating lane 'first'. */
static LLVMValueRef lanes_of(LLVMBuilderRef b, LLVMContextRef cx, LLVMValueRef x, unsigned W, unsigned first,
                             unsigned V, LLVMTypeRef vt)
{
    LLVMTypeRef i32 = LLVMInt32TypeInContext(cx);
    LLVMValueRef idx[64];
    if (W == 0) {
        x = LLVMBuildInsertElement(b, LLVMGetUndef(vt), x, LLVMConstInt(i32, 0, 0), "");
        W = V;
        first = 0;
        for (unsigned l = 0; l < V; l++)
            idx[l] = LLVMConstInt(i32, 0, 0);
    } else {
        for (unsigned l = 0; l < V; l++)
            idx[l] = LLVMConstInt(i32, first + l < W ? first + l : first, 0);
    }
    return LLVMBuildShuffleVector(b, x, LLVMGetUndef(LLVMTypeOf(x)), LLVMConstVector(idx, V), "");
}

/* After optimisation: every call of a mapped function or intrinsic that
 * is not already a call of its variant becomes calls of the variant: a
 * scalar through lane 0 of a splat, a vector of another width in pieces of
 * the variant's width. */
static void calls_to_variant(LLVMModuleRef m, const vec_map *map, int n)
{
    if (!n)
        return;
    LLVMContextRef cx = LLVMGetModuleContext(m);
    LLVMBuilderRef b = LLVMCreateBuilderInContext(cx);
    LLVMTypeRef i32 = LLVMInt32TypeInContext(cx);
    for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f)) {
        const vec_map *e = LLVMIsDeclaration(f) ? mapped(f, map, n) : NULL;
        LLVMValueRef vfn = e ? LLVMGetNamedFunction(m, e->vector) : NULL;
        if (!vfn || vfn == f)
            continue;
        LLVMTypeRef vft = LLVMGlobalGetValueType(vfn), vt = LLVMGetReturnType(vft);
        unsigned V = e->lanes;
        LLVMUseRef u = LLVMGetFirstUse(f);
        while (u) {
            LLVMValueRef c = LLVMGetUser(u);
            u = LLVMGetNextUse(u);
            if (!LLVMIsACallInst(c) || LLVMGetCalledValue(c) != f)
                continue;
            LLVMTypeRef rt = LLVMTypeOf(c);
            unsigned W = LLVMGetTypeKind(rt) == LLVMVectorTypeKind ? LLVMGetVectorSize(rt) : 0;
            if (W > 64)
                continue;
            LLVMPositionBuilderBefore(b, c);
            LLVMValueRef res = W ? LLVMGetUndef(rt) : NULL;
            for (unsigned first = 0; first < (W ? W : 1); first += V) {
                LLVMValueRef args[2];
                for (unsigned a = 0; a < e->nargs; a++)
                    args[a] = lanes_of(b, cx, LLVMGetOperand(c, a), W, first, V, vt);
                LLVMValueRef r = LLVMBuildCall2(b, vft, vfn, args, e->nargs, "");
                if (!W) {
                    res = LLVMBuildExtractElement(b, r, LLVMConstInt(i32, 0, 0), "");
                    break;
                }
                for (unsigned l = 0; l < V && first + l < W; l++)
                    res = LLVMBuildInsertElement(b, res, LLVMBuildExtractElement(b, r, LLVMConstInt(i32, l, 0), ""),
                                                 LLVMConstInt(i32, first + l, 0), "");
            }
            LLVMReplaceAllUsesWith(c, res);
            LLVMInstructionEraseFromParent(c);
        }
    }
    LLVMDisposeBuilder(b);
}

kf_status kf_cpu_llvm_host(kf_cpu_host *h, kf_rt_err *err)
{
    memset(h, 0, sizeof *h);
    pthread_once(&init_once, init_native);
    if (!init_ok)
        return fail(err, KF_ERR_NO_DEVICE, "LLVM has no native target for this host");
    char *triple = LLVMGetDefaultTargetTriple();
    char *norm = LLVMNormalizeTargetTriple(triple);
    char *cpu = LLVMGetHostCPUName();
    char *feat = LLVMGetHostCPUFeatures();
    snprintf(h->triple, sizeof h->triple, "%s", norm ? norm : triple);
    snprintf(h->cpu, sizeof h->cpu, "%s", cpu ? cpu : "generic");
    snprintf(h->llvm_version, sizeof h->llvm_version, "%s", LLVM_VERSION_STRING);
    h->features = strdup(feat ? feat : "");
    LLVMDisposeMessage(triple);
    LLVMDisposeMessage(norm);
    LLVMDisposeMessage(cpu);
    LLVMDisposeMessage(feat);
    if (!h->features)
        return fail(err, KF_ERR_NO_MEMORY, "out of memory");
    size_t n = strlen(h->features) + 256;
    h->id = malloc(n);
    if (!h->id) {
        kf_cpu_llvm_host_free(h);
        return fail(err, KF_ERR_NO_MEMORY, "out of memory");
    }
    unsigned lanes;
    char isa = host_isa(h, &lanes);
    char vm[64] = "";
    if (isa)
        snprintf(vm, sizeof vm, " vecmath=libmvec-%c%u prefer-vector-width=%u", isa, lanes, lanes * 32);
    snprintf(h->id, n, "LLVM %s default<O3> %s cpu=%s%s features=%s", h->llvm_version, h->triple, h->cpu, vm,
             h->features);
    LLVMTargetRef t;
    char *msg = NULL;
    if (LLVMGetTargetFromTriple(h->triple, &t, &msg)) {
        kf_status s = fail(err, KF_ERR_NO_DEVICE, "LLVM has no target for %s: %s", h->triple, msg ? msg : "");
        LLVMDisposeMessage(msg);
        kf_cpu_llvm_host_free(h);
        return s;
    }
    return KF_OK;
}

void kf_cpu_llvm_host_free(kf_cpu_host *h)
{
    free(h->features);
    free(h->id);
    h->features = h->id = NULL;
}

/* -- Compiling ------------------------------------------------------------------------ */

static LLVMTargetMachineRef host_machine(const kf_cpu_host *h, kf_rt_err *err)
{
    LLVMTargetRef t;
    char *msg = NULL;
    if (LLVMGetTargetFromTriple(h->triple, &t, &msg)) {
        fail(err, KF_ERR_COMPILE, "LLVM has no target for %s: %s", h->triple, msg ? msg : "");
        LLVMDisposeMessage(msg);
        return NULL;
    }
    /* PIC, small code model: the JIT's linker reaches libm, which may lie
     * beyond a 32-bit displacement, through its own call trampolines */
    LLVMTargetMachineRef tm = LLVMCreateTargetMachine(t, h->triple, h->cpu, h->features, LLVMCodeGenLevelAggressive,
                                                      LLVMRelocPIC, LLVMCodeModelSmall);
    if (!tm)
        fail(err, KF_ERR_COMPILE, "LLVM cannot make a target machine for %s (cpu %s)", h->triple, h->cpu);
    return tm;
}

kf_status kf_cpu_llvm_compile(const kf_cpu_host *h, const char *ir, size_t len, void **obj, size_t *objlen,
                              char **optimized, kf_rt_err *err)
{
    if (obj)
        *obj = NULL;
    if (objlen)
        *objlen = 0;
    if (optimized)
        *optimized = NULL;
    if (!h || !ir)
        return fail(err, KF_ERR_INVALID_ARG, "cpu compile: a NULL argument");
    LLVMContextRef cx = LLVMContextCreate();
    LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRangeCopy(ir, len, "kfuse.ll");
    LLVMModuleRef m = NULL;
    char *msg = NULL;
    kf_status s = KF_OK;
    LLVMTargetMachineRef tm = NULL;
    vec_map map[32];
    int nmap = 0;
    if (LLVMParseIRInContext(cx, buf, &m, &msg)) { /* takes buf */
        s = fail(err, KF_ERR_COMPILE, "LLVM IR parse error: %s", msg ? msg : "");
        m = NULL;
    } else if (LLVMVerifyModule(m, LLVMReturnStatusAction, &msg)) {
        s = fail(err, KF_ERR_COMPILE, "LLVM IR verifier error: %s", msg ? msg : "");
    }
    LLVMDisposeMessage(msg);
    msg = NULL;
    if (s == KF_OK && !(tm = host_machine(h, err)))
        s = KF_ERR_COMPILE;
    if (s == KF_OK) {
        LLVMSetTarget(m, h->triple);
        LLVMTargetDataRef dl = LLVMCreateTargetDataLayout(tm);
        LLVMSetModuleDataLayout(m, dl);
        LLVMDisposeTargetData(dl);
        nmap = inject_vecmath(m, h, map, (int)(sizeof map / sizeof map[0]));
        LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
        LLVMPassBuilderOptionsSetLoopVectorization(po, 1);
        LLVMPassBuilderOptionsSetSLPVectorization(po, 1);
        LLVMPassBuilderOptionsSetLoopInterleaving(po, 1);
        LLVMPassBuilderOptionsSetLoopUnrolling(po, 1);
        LLVMErrorRef e = LLVMRunPasses(m, "default<O3>", tm, po);
        LLVMDisposePassBuilderOptions(po);
        if (e)
            s = fail_llvm(err, KF_ERR_COMPILE, "LLVM optimiser", e);
        else
            calls_to_variant(m, map, nmap);
    }
    if (s == KF_OK && optimized) {
        char *t = LLVMPrintModuleToString(m);
        *optimized = t ? strdup(t) : NULL;
        LLVMDisposeMessage(t);
        if (!*optimized)
            s = fail(err, KF_ERR_NO_MEMORY, "out of memory");
    }
    if (s == KF_OK && obj) {
        LLVMMemoryBufferRef ob = NULL;
        if (LLVMTargetMachineEmitToMemoryBuffer(tm, m, LLVMObjectFile, &msg, &ob)) {
            s = fail(err, KF_ERR_COMPILE, "LLVM code generation: %s", msg ? msg : "");
        } else {
            size_t n = LLVMGetBufferSize(ob);
            *obj = malloc(n ? n : 1);
            if (!*obj) {
                s = fail(err, KF_ERR_NO_MEMORY, "out of memory for a %zu-byte object", n);
            } else {
                memcpy(*obj, LLVMGetBufferStart(ob), n);
                *objlen = n;
            }
            LLVMDisposeMemoryBuffer(ob);
        }
        LLVMDisposeMessage(msg);
    }
    if (tm)
        LLVMDisposeTargetMachine(tm);
    if (m)
        LLVMDisposeModule(m);
    LLVMContextDispose(cx);
    return s;
}

/* -- Loading ------------------------------------------------------------------------------ */

kf_status kf_cpu_llvm_load(const void *obj, size_t len, void **jit, kf_rt_err *err)
{
    *jit = NULL;
    if (!obj || len == 0)
        return fail(err, KF_ERR_INVALID_ARG, "cpu load: an empty object");
    pthread_once(&init_once, init_native);
    if (!init_ok)
        return fail(err, KF_ERR_NO_DEVICE, "LLVM has no native target for this host");
    LLVMOrcLLJITRef j = NULL;
    LLVMErrorRef e = LLVMOrcCreateLLJIT(&j, NULL);
    if (e)
        return fail_llvm(err, KF_ERR_DEVICE, "LLVMOrcCreateLLJIT", e);
    /* libm and the C library from the process */
    LLVMOrcDefinitionGeneratorRef gen = NULL;
    e = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(&gen, LLVMOrcLLJITGetGlobalPrefix(j), NULL, NULL);
    if (e) {
        LLVMOrcDisposeLLJIT(j);
        return fail_llvm(err, KF_ERR_DEVICE, "LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess", e);
    }
    LLVMOrcJITDylibRef jd = LLVMOrcLLJITGetMainJITDylib(j);
    LLVMOrcJITDylibAddGenerator(jd, gen);
    LLVMMemoryBufferRef mb = LLVMCreateMemoryBufferWithMemoryRangeCopy(obj, len, "kfuse.o");
    e = LLVMOrcLLJITAddObjectFile(j, jd, mb); /* takes mb */
    if (e) {
        LLVMOrcDisposeLLJIT(j);
        return fail_llvm(err, KF_ERR_COMPILE, "loading the object file", e);
    }
    *jit = j;
    return KF_OK;
}

kf_status kf_cpu_llvm_lookup(void *jit, const char *name, void **addr, kf_rt_err *err)
{
    *addr = NULL;
    LLVMOrcJITTargetAddress a = 0;
    LLVMErrorRef e = LLVMOrcLLJITLookup(jit, &a, name);
    if (e) {
        char what[300];
        snprintf(what, sizeof what, "no kernel '%.200s' in the module", name);
        return fail_llvm(err, KF_ERR_NAME, what, e);
    }
    *addr = (void *)(uintptr_t)a;
    return KF_OK;
}

void kf_cpu_llvm_unload(void *jit)
{
    if (!jit)
        return;
    LLVMErrorRef e = LLVMOrcDisposeLLJIT(jit);
    if (e)
        LLVMConsumeError(e);
}
