/* Session 21: dot (sum of x*y, f32) of one tile (n <= 4096) by one block,
 * to find what makes kfuse's `tile` 0.2 us slower than torch.compile at
 * 2^12 in one process.  Every kernel: x, y, out, n; n % 4 == 0, 16-byte
 * aligned inputs (the probe's).  DOT_BLOCK threads a block, each moving
 * 4096 / 4 / DOT_BLOCK vectors of x and of y, 32-bit indices.
 *   dot_smem_T: the loads as kfuse's gvec path, then kfuse's block tree
 *               (every thread to shared memory, one warp adds 8 a lane, 5
 *               shuffles);
 *   dot_shfl_T: the same loads, then Triton's order (5 shuffles in every
 *               warp, the warps' sums through shared memory, one warp's
 *               shuffles);
 * for T = 256, 512, 1024 threads. */
#define DEFINE_DOT(T)                                                                               \
extern "C" __global__ void __launch_bounds__(T) dot_smem_##T(const float *__restrict__ x,           \
    const float *__restrict__ y, float *__restrict__ out, unsigned n)                              \
{                                                                                                   \
    enum { V = 4096 / 4 / T };                                                                      \
    __shared__ float sv[T];                                                                         \
    const unsigned lid = threadIdx.x;                                                               \
    float4 a[V], b[V];                                                                              \
    _Pragma("unroll") for (int v = 0; v < V; v++) {                                                 \
        const unsigned i = (v * T + lid) * 4;                                                       \
        if (i < n) {                                                                                \
            a[v] = ((const float4 *)x)[i / 4];                                                      \
            b[v] = ((const float4 *)y)[i / 4];                                                      \
        } else {                                                                                    \
            a[v] = b[v] = make_float4(0.f, 0.f, 0.f, 0.f);                                          \
        }                                                                                           \
    }                                                                                               \
    float acc = 0.f;                                                                                \
    _Pragma("unroll") for (int v = 0; v < V; v++) {                                                 \
        acc = __fadd_rn(acc, __fmul_rn(a[v].x, b[v].x));                                            \
        acc = __fadd_rn(acc, __fmul_rn(a[v].y, b[v].y));                                            \
        acc = __fadd_rn(acc, __fmul_rn(a[v].z, b[v].z));                                            \
        acc = __fadd_rn(acc, __fmul_rn(a[v].w, b[v].w));                                            \
    }                                                                                               \
    sv[lid] = acc;                                                                                  \
    __syncthreads();                                                                                \
    if (lid < 32) {                                                                                 \
        float w[T / 32];                                                                            \
        _Pragma("unroll") for (int v = 0; v < T / 32; v++) w[v] = sv[lid + 32 * v];                 \
        _Pragma("unroll") for (int s = T / 64; s > 0; s >>= 1)                                      \
            _Pragma("unroll") for (int v = 0; v < s; v++) w[v] = __fadd_rn(w[v], w[v + s]);         \
        acc = w[0];                                                                                 \
        for (int s = 16; s > 0; s >>= 1) acc = __fadd_rn(acc, __shfl_down_sync(0xffffffffu, acc, s)); \
        if (lid == 0) out[0] = acc;                                                                 \
    }                                                                                               \
}                                                                                                   \
extern "C" __global__ void __launch_bounds__(T) dot_shfl_##T(const float *__restrict__ x,           \
    const float *__restrict__ y, float *__restrict__ out, unsigned n)                              \
{                                                                                                   \
    enum { V = 4096 / 4 / T };                                                                      \
    __shared__ float sw[T / 32];                                                                    \
    const unsigned lid = threadIdx.x;                                                               \
    float4 a[V], b[V];                                                                              \
    _Pragma("unroll") for (int v = 0; v < V; v++) {                                                 \
        const unsigned i = (v * T + lid) * 4;                                                       \
        if (i < n) {                                                                                \
            a[v] = ((const float4 *)x)[i / 4];                                                      \
            b[v] = ((const float4 *)y)[i / 4];                                                      \
        } else {                                                                                    \
            a[v] = b[v] = make_float4(0.f, 0.f, 0.f, 0.f);                                          \
        }                                                                                           \
    }                                                                                               \
    float acc = 0.f;                                                                                \
    _Pragma("unroll") for (int v = 0; v < V; v++) {                                                 \
        acc = __fadd_rn(acc, __fmul_rn(a[v].x, b[v].x));                                            \
        acc = __fadd_rn(acc, __fmul_rn(a[v].y, b[v].y));                                            \
        acc = __fadd_rn(acc, __fmul_rn(a[v].z, b[v].z));                                            \
        acc = __fadd_rn(acc, __fmul_rn(a[v].w, b[v].w));                                            \
    }                                                                                               \
    for (int s = 16; s > 0; s >>= 1) acc = __fadd_rn(acc, __shfl_xor_sync(0xffffffffu, acc, s));    \
    if (lid % 32 == 0) sw[lid / 32] = acc;                                                          \
    __syncthreads();                                                                                \
    if (lid < 32) {                                                                                 \
        acc = lid < T / 32 ? sw[lid] : 0.f;                                                         \
        for (int s = T / 64; s > 0; s >>= 1) acc = __fadd_rn(acc, __shfl_xor_sync(0xffffffffu, acc, s)); \
        if (lid == 0) out[0] = acc;                                                                 \
    }                                                                                               \
}
DEFINE_DOT(256)
DEFINE_DOT(512)
DEFINE_DOT(1024)

/* dot_smem_256 with kfuse's parameters: the meta block by value (n from
 * its entry 1, as `tile` reads d0) and the scratch pointer. */
typedef struct {
    long long v[10];
} dot_meta;
extern "C" __global__ void __launch_bounds__(256) dot_smem_meta(const float *__restrict__ x,
    const float *__restrict__ y, float *__restrict__ out, const dot_meta m, unsigned char *__restrict__ scratch)
{
    enum { T = 256, V = 4 };
    __shared__ float sv[T];
    const unsigned n = (unsigned)m.v[1];
    const unsigned lid = threadIdx.x;
    float4 a[V], b[V];
#pragma unroll
    for (int v = 0; v < V; v++) {
        const unsigned i = (v * T + lid) * 4;
        if (i < n) {
            a[v] = ((const float4 *)x)[i / 4];
            b[v] = ((const float4 *)y)[i / 4];
        } else {
            a[v] = b[v] = make_float4(0.f, 0.f, 0.f, 0.f);
        }
    }
    float acc = 0.f;
#pragma unroll
    for (int v = 0; v < V; v++) {
        acc = __fadd_rn(acc, __fmul_rn(a[v].x, b[v].x));
        acc = __fadd_rn(acc, __fmul_rn(a[v].y, b[v].y));
        acc = __fadd_rn(acc, __fmul_rn(a[v].z, b[v].z));
        acc = __fadd_rn(acc, __fmul_rn(a[v].w, b[v].w));
    }
    sv[lid] = acc;
    __syncthreads();
    if (lid < 32) {
        float w[8];
#pragma unroll
        for (int v = 0; v < 8; v++)
            w[v] = sv[lid + 32 * v];
        w[0] = __fadd_rn(w[0], w[4]);
        w[1] = __fadd_rn(w[1], w[5]);
        w[2] = __fadd_rn(w[2], w[6]);
        w[3] = __fadd_rn(w[3], w[7]);
        w[0] = __fadd_rn(w[0], w[2]);
        w[1] = __fadd_rn(w[1], w[3]);
        acc = __fadd_rn(w[0], w[1]);
        for (int s = 16; s > 0; s >>= 1)
            acc = __fadd_rn(acc, __shfl_down_sync(0xffffffffu, acc, s));
        if (lid == 0)
            out[0] = acc;
    }
}
