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

static void init_native(void)
{
    init_ok = !LLVMInitializeNativeTarget() && !LLVMInitializeNativeAsmPrinter() && !LLVMInitializeNativeAsmParser();
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
    snprintf(h->id, n, "LLVM %s default<O3> %s cpu=%s features=%s", h->llvm_version, h->triple, h->cpu, h->features);
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
    /* PIC, small code model: RuntimeDyld resolves calls into libm through stubs */
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
        LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
        LLVMPassBuilderOptionsSetLoopVectorization(po, 1);
        LLVMPassBuilderOptionsSetSLPVectorization(po, 1);
        LLVMPassBuilderOptionsSetLoopInterleaving(po, 1);
        LLVMPassBuilderOptionsSetLoopUnrolling(po, 1);
        LLVMErrorRef e = LLVMRunPasses(m, "default<O3>", tm, po);
        LLVMDisposePassBuilderOptions(po);
        if (e)
            s = fail_llvm(err, KF_ERR_COMPILE, "LLVM optimiser", e);
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
