/* OpenCL C (1.2) spellings for the shared emitter. */
#include "cg.h"

const kf_cg_spell kf_cg_spell_opencl = {
    .target_name = "OpenCL C",
    .preamble = "#pragma OPENCL FP_CONTRACT OFF\n",
    .fp64_preamble = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n",
    .entry_pre = "__kernel __attribute__((reqd_work_group_size(%d, 1, 1))) void ",
    .fn = "static inline",
    .fn_big = "static inline",
    .global = "__global ",
    .restrict_kw = "restrict",
    .shared = "__local",
    .shared_ptr = "__local ",
    .barrier = "barrier(CLK_LOCAL_MEM_FENCE)",
    .lid = "get_local_id(0)",
    .bid = "get_group_id(0)",
    .bdim = "get_local_size(0)",
    .gdim = "get_num_groups(0)",
    .types = {
        [KF_BOOL] = "uchar", [KF_I8] = "char", [KF_I16] = "short", [KF_I32] = "int",
        [KF_I64] = "long", [KF_U8] = "uchar", [KF_U16] = "ushort",
        [KF_U32] = "uint", [KF_U64] = "ulong", [KF_F16] = "ushort",
        [KF_BF16] = "ushort", [KF_F32] = "float", [KF_F64] = "double",
    },
    .sfx_i64 = "L",
    .sfx_u64 = "UL",
    .f32_from_bits = { "as_float(", ")" },
    .f32_to_bits = { "as_uint(", ")" },
    .f64_from_bits = { "as_double((ulong)(", "))" },
    .f64_to_bits = { "as_ulong(", ")" },
    .make_uint2 = "(uint2)(",
    .make_uint4 = "(uint4)(",
    .unroll = "#pragma unroll",
    .no_unroll = "#pragma unroll 1",
    .shfl_down = NULL,
    .fence = "mem_fence(CLK_GLOBAL_MEM_FENCE)",
    .atomic_inc = { "atomic_inc(", ")" },
    .fadd = { { "(", " + ", ")" }, { "(", " + ", ")" } },
    .fsub = { { "(", " - ", ")" }, { "(", " - ", ")" } },
    .fmul = { { "(", " * ", ")" }, { "(", " * ", ")" } },
    .fdiv = { { "(", " / ", ")" }, { "(", " / ", ")" } },
    .fsqrt = { "sqrt", "sqrt" },
    .sincos = { "sincos", "sincos" },
    .sincos_returns_sin = true,
    .math = {
        [KF_OP_ABS] = { "fabs", "fabs" },
        [KF_OP_CBRT] = { "cbrt", "cbrt" },
        [KF_OP_EXP] = { "exp", "exp" },
        [KF_OP_EXP2] = { "exp2", "exp2" },
        [KF_OP_EXPM1] = { "expm1", "expm1" },
        [KF_OP_LOG] = { "log", "log" },
        [KF_OP_LOG2] = { "log2", "log2" },
        [KF_OP_LOG10] = { "log10", "log10" },
        [KF_OP_LOG1P] = { "log1p", "log1p" },
        [KF_OP_SIN] = { "sin", "sin" },
        [KF_OP_COS] = { "cos", "cos" },
        [KF_OP_TAN] = { "tan", "tan" },
        [KF_OP_ASIN] = { "asin", "asin" },
        [KF_OP_ACOS] = { "acos", "acos" },
        [KF_OP_ATAN] = { "atan", "atan" },
        [KF_OP_SINH] = { "sinh", "sinh" },
        [KF_OP_COSH] = { "cosh", "cosh" },
        [KF_OP_TANH] = { "tanh", "tanh" },
        [KF_OP_ERF] = { "erf", "erf" },
        [KF_OP_FLOOR] = { "floor", "floor" },
        [KF_OP_CEIL] = { "ceil", "ceil" },
        [KF_OP_ROUND] = { "round", "round" },
        [KF_OP_TRUNC] = { "trunc", "trunc" },
        [KF_OP_MOD] = { "fmod", "fmod" },
        [KF_OP_POW] = { "pow", "pow" },
        [KF_OP_ATAN2] = { "atan2", "atan2" },
        [KF_OP_HYPOT] = { "hypot", "hypot" },
        [KF_OP_COPYSIGN] = { "copysign", "copysign" },
        [KF_OP_FMA] = { "fma", "fma" },
    },
    /* OpenCL C 1.2, 6.12.2: native_* functions, accuracy and input range
     * implementation-defined */
    .fast = {
        [KF_OP_EXP] = "native_exp",
        [KF_OP_EXP2] = "native_exp2",
        [KF_OP_LOG] = "native_log",
        [KF_OP_LOG2] = "native_log2",
        [KF_OP_LOG10] = "native_log10",
        [KF_OP_SIN] = "native_sin",
        [KF_OP_COS] = "native_cos",
        [KF_OP_TAN] = "native_tan",
        [KF_OP_RSQRT] = "native_rsqrt",
    },
    .fdiv_fast = { "native_divide(", ", ", ")" },
    /* vload_half/vstore_half are core OpenCL; kfuse still asks for
     * cl_khr_fp16 before it emits f16 (DESIGN: half only where reported). */
    .h2f =
        "static inline float kf_h2f(ushort h)\n"
        "{\n"
        "    return vload_half(0, (const half *)&h);\n"
        "}\n",
    .f2h =
        "static inline ushort kf_f2h(float f)\n"
        "{\n"
        "    ushort h;\n"
        "    vstore_half_rte(f, 0, (half *)&h);\n"
        "    return h;\n"
        "}\n",
    .fp64_needs_cap = true,
    .fp16_needs_cap = true,
};
