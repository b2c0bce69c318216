/* Session 20: boxplus in Triton's layout beside kfuse's emitted c64 (which
 * moves one 16-byte vector of each input per thread, 256 threads a block).
 * Appended to the emitted module by kernels.sh; the body is the emitted
 * one (boxplus_k0_3cdfd6ed_body), so these differ from c64 in layout only.
 * bx_v2_<T>: T threads a block, two 16-byte vectors of each input per
 * thread, T vectors apart (Triton's XBLOCK = 8 T, num_warps = T / 32);
 * nvec = n / 4 and the grid covers it (n a multiple of 8 T). */
#define BX_V2(T)                                                                                   \
    extern "C" __global__ void __launch_bounds__(T) bx_v2_##T(const float *__restrict__ a,        \
        const float *__restrict__ b, float *__restrict__ o, unsigned nvec)                          \
    {                                                                                               \
        const unsigned iv0 = blockIdx.x * (2u * T) + threadIdx.x;                                   \
        uint4 ua[2], ub[2];                                                                         \
        _Pragma("unroll") for (int j = 0; j < 2; j++)                                               \
        {                                                                                           \
            ua[j] = ((const uint4 *)a)[iv0 + j * T];                                                \
            ub[j] = ((const uint4 *)b)[iv0 + j * T];                                                \
        }                                                                                           \
        _Pragma("unroll") for (int j = 0; j < 2; j++)                                               \
        {                                                                                           \
            const unsigned wa[4] = { ua[j].x, ua[j].y, ua[j].z, ua[j].w };                          \
            const unsigned wb[4] = { ub[j].x, ub[j].y, ub[j].z, ub[j].w };                          \
            unsigned r[4];                                                                          \
            _Pragma("unroll") for (int l = 0; l < 4; l++)                                           \
            {                                                                                       \
                float y;                                                                            \
                boxplus_k0_3cdfd6ed_body(__uint_as_float(wa[l]), __uint_as_float(wb[l]), &y);       \
                r[l] = __float_as_uint(y);                                                          \
            }                                                                                       \
            ((uint4 *)o)[iv0 + j * T] = make_uint4(r[0], r[1], r[2], r[3]);                         \
        }                                                                                           \
    }
BX_V2(128)
BX_V2(256)
