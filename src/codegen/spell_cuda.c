/* CUDA C spellings for the shared emitter (NVRTC compiles the module as
 * C++: entry points are extern "C" so their names stay unmangled). */
#include "cg.h"

const kf_cg_spell kf_cg_spell_cuda = {
    .target_name = "CUDA C",
    .preamble = "",
    .fp64_preamble = "",
    .entry_pre = "extern \"C\" __global__ void __launch_bounds__(%d) ",
    .fn = "static __device__ __forceinline__",
    .fn_big = "static __device__ __noinline__",
    .global = "",
    .restrict_kw = "__restrict__",
    .shared = "__shared__",
    .shared_ptr = "",
    .barrier = "__syncthreads()",
    .lid = "threadIdx.x",
    .bid = "blockIdx.x",
    .bdim = "blockDim.x",
    .gdim = "gridDim.x",
    .types = {
        [KF_BOOL] = "unsigned char", [KF_I8] = "signed char", [KF_I16] = "short", [KF_I32] = "int",
        [KF_I64] = "long long", [KF_U8] = "unsigned char", [KF_U16] = "unsigned short",
        [KF_U32] = "unsigned int", [KF_U64] = "unsigned long long", [KF_F16] = "unsigned short",
        [KF_BF16] = "unsigned short", [KF_F32] = "float", [KF_F64] = "double",
    },
    .sfx_i64 = "LL",
    .sfx_u64 = "ULL",
    .f32_from_bits = { "__uint_as_float(", ")" },
    .f32_to_bits = { "__float_as_uint(", ")" },
    .f64_from_bits = { "__longlong_as_double((long long)(", "))" },
    .f64_to_bits = { "(unsigned long long)__double_as_longlong(", ")" },
    .make_uint2 = "make_uint2(",
    .make_uint4 = "make_uint4(",
    .unroll = "#pragma unroll",
    .no_unroll = "#pragma unroll 1",
    .shfl_down = "__shfl_down_sync(0xffffffffu, ",
    .fence = "__threadfence()",
    .atomic_inc = { "atomicAdd(", ", 1u)" },
    .fadd = { { "__fadd_rn(", ", ", ")" }, { "__dadd_rn(", ", ", ")" } },
    .fsub = { { "__fsub_rn(", ", ", ")" }, { "__dsub_rn(", ", ", ")" } },
    .fmul = { { "__fmul_rn(", ", ", ")" }, { "__dmul_rn(", ", ", ")" } },
    .fdiv = { { "__fdiv_rn(", ", ", ")" }, { "__ddiv_rn(", ", ", ")" } },
    .fsqrt = { "__fsqrt_rn", "__dsqrt_rn" },
    .sincos = { "sincosf", "sincos" },
    .split_trig = true,
    .math = {
        [KF_OP_ABS] = { "fabsf", "fabs" },
        [KF_OP_CBRT] = { "cbrtf", "cbrt" },
        [KF_OP_EXP] = { "expf", "exp" },
        [KF_OP_EXP2] = { "exp2f", "exp2" },
        [KF_OP_EXPM1] = { "expm1f", "expm1" },
        [KF_OP_LOG] = { "logf", "log" },
        [KF_OP_LOG2] = { "log2f", "log2" },
        [KF_OP_LOG10] = { "log10f", "log10" },
        [KF_OP_LOG1P] = { "log1pf", "log1p" },
        [KF_OP_SIN] = { "sinf", "sin" },
        [KF_OP_COS] = { "cosf", "cos" },
        [KF_OP_TAN] = { "tanf", "tan" },
        [KF_OP_ASIN] = { "asinf", "asin" },
        [KF_OP_ACOS] = { "acosf", "acos" },
        [KF_OP_ATAN] = { "atanf", "atan" },
        [KF_OP_SINH] = { "sinhf", "sinh" },
        [KF_OP_COSH] = { "coshf", "cosh" },
        [KF_OP_TANH] = { "tanhf", "tanh" },
        [KF_OP_ERF] = { "erff", "erf" },
        [KF_OP_FLOOR] = { "floorf", "floor" },
        [KF_OP_CEIL] = { "ceilf", "ceil" },
        [KF_OP_ROUND] = { "roundf", "round" },
        [KF_OP_TRUNC] = { "truncf", "trunc" },
        [KF_OP_MOD] = { "fmodf", "fmod" },
        [KF_OP_POW] = { "powf", "pow" },
        [KF_OP_ATAN2] = { "atan2f", "atan2" },
        [KF_OP_HYPOT] = { "hypotf", "hypot" },
        [KF_OP_COPYSIGN] = { "copysignf", "copysign" },
        [KF_OP_FMA] = { "fmaf", "fma" },
    },
    /* CUDA C Programming Guide, "Intrinsic Functions": __expf is
     * ex2.approx.ftz of x * log2(e), __fdividef 2 ulp for |y| in
     * [2^-126, 2^126]; no __powf (NaN for every negative base) */
    .fast = {
        [KF_OP_EXP] = "__expf",
        [KF_OP_LOG] = "__logf",
        [KF_OP_LOG2] = "__log2f",
        [KF_OP_LOG10] = "__log10f",
        [KF_OP_SIN] = "__sinf",
        [KF_OP_COS] = "__cosf",
        [KF_OP_TAN] = "__tanf",
        [KF_OP_RSQRT] = "rsqrtf",
    },
    .fdiv_fast = { "__fdividef(", ", ", ")" },
    .sincos_fast = "__sincosf",
    .h2f =
        "static __device__ __forceinline__ float kf_h2f(unsigned short h)\n"
        "{\n"
        "    float f;\n"
        "    asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(h));\n"
        "    return f;\n"
        "}\n",
    .f2h =
        "static __device__ __forceinline__ unsigned short kf_f2h(float f)\n"
        "{\n"
        "    unsigned short h;\n"
        "    asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f));\n"
        "    return h;\n"
        "}\n",
    .fp64_needs_cap = false,
    .fp16_needs_cap = false,
};
