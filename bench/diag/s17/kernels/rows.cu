/* Session 17: rowsum (f32 [m, 1024], sum over the last axis) written by
 * hand, one warp a row, to find what in kfuse's `warp` body costs it 3-4%
 * against torch.compile at 2^20.  Every variant: a lane loads 16-byte
 * vectors 32 apart (its row's vectors lane, lane + 32, ...), sums them,
 * and the warp combines with shuffles; lane 0 stores.
 *   ROWS   rows (warps) a block
 *   STAT   1: the row length is the constant 1024; 0: read from L (a loop
 *          of 1024-element steps, as kfuse's warp)
 *   HINT   1: loads marked evict-first (ld.global.cs), as Triton's
 *          eviction_policy='evict_first'
 *   W64    1: the row's offset in 64 bits from a 64-bit stride, as kfuse */
template <int ROWS, int STAT, int HINT, int W64>
__device__ __forceinline__ void rows(const float *__restrict__ x, float *__restrict__ out, unsigned M, unsigned L,
                                     long long stride)
{
    const unsigned lane = threadIdx.x % 32, row = blockIdx.x * ROWS + threadIdx.x / 32;
    if (row >= M)
        return;
    const float4 *p = W64 ? (const float4 *)(x + (long long)row * stride) : (const float4 *)(x + row * (STAT ? 1024u : L));
    const unsigned steps = STAT ? 1 : L / 1024;
    float a[8] = { 0, 0, 0, 0, 0, 0, 0, 0 };
    for (unsigned s = 0; s < steps; s++, p += 256) {
        float4 v[8];
#pragma unroll
        for (int j = 0; j < 8; j++)
            v[j] = HINT ? __ldcs(p + j * 32 + lane) : p[j * 32 + lane];
#pragma unroll
        for (int j = 0; j < 8; j++)
            a[j] += (v[j].x + v[j].y) + (v[j].z + v[j].w);
    }
    float s = ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0)
        out[row] = s;
}

#define ROWS(name, R, S, H, W)                                                                               \
    extern "C" __global__ void __launch_bounds__(R * 32) name(const float *__restrict__ x, float *__restrict__ out, \
                                                              unsigned M, unsigned L, long long stride)    \
    {                                                                                                        \
        rows<R, S, H, W>(x, out, M, L, stride);                                                              \
    }
ROWS(r8_static, 8, 1, 0, 0)
ROWS(r1_static, 1, 1, 0, 0)
ROWS(r8_static_cs, 8, 1, 1, 0)
ROWS(r1_static_cs, 1, 1, 1, 0)
ROWS(r8_dyn, 8, 0, 0, 0)
ROWS(r8_dyn_w64, 8, 0, 0, 1)
ROWS(r8_dyn_cs, 8, 0, 1, 0)
ROWS(r1_dyn, 1, 0, 0, 0)
ROWS(r1_dyn_w64, 1, 0, 0, 1)
ROWS(r2_static, 2, 1, 0, 0)
ROWS(r4_static, 4, 1, 0, 0)
ROWS(r2_dyn, 2, 0, 0, 0)

/* x5 at one element a thread, 32-bit index, no strides: the least a
 * one-wave elementwise kernel can do before its load. */
extern "C" __global__ void __launch_bounds__(256) x5_min(const float *__restrict__ x, float *__restrict__ y, unsigned n)
{
    const unsigned i = blockIdx.x * 256 + threadIdx.x;
    if (i < n) {
        const float v = x[i];
        y[i] = (((v + v) + v) + v) + v;
    }
}

/* Triton's persistent reduction for rowsum [m, 1024] (torch.compile's
 * triton_per_fused_sum_0 on the H100: XBLOCK 1, 8 warps): one row a block
 * of T threads, each V = 256 / T vectors T apart, shuffles within each
 * warp, the warps' sums through shared memory. */
template <int T>
__device__ __forceinline__ void row_block(const float *__restrict__ x, float *__restrict__ out, unsigned M)
{
    constexpr int V = 256 / T, NW = T / 32;
    __shared__ float part[NW];
    const unsigned row = blockIdx.x, lane = threadIdx.x % 32, w = threadIdx.x / 32;
    const float4 *p = (const float4 *)(x + row * 1024u);
    float4 v[V];
#pragma unroll
    for (int j = 0; j < V; j++)
        v[j] = p[j * T + threadIdx.x];
    float s = 0;
#pragma unroll
    for (int j = 0; j < V; j++)
        s += (v[j].x + v[j].y) + (v[j].z + v[j].w);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        s += __shfl_xor_sync(0xffffffffu, s, o);
    if (NW > 1) {
        if (lane == 0)
            part[w] = s;
        __syncthreads();
        if (w == 0) {
            s = lane < NW ? part[lane] : 0.0f;
#pragma unroll
            for (int o = NW / 2; o > 0; o >>= 1)
                s += __shfl_xor_sync(0xffffffffu, s, o);
        }
    }
    if (threadIdx.x == 0)
        out[row] = s;
}

#define ROWB(name, T)                                                                                        \
    extern "C" __global__ void __launch_bounds__(T) name(const float *__restrict__ x, float *__restrict__ out, \
                                                         unsigned M, unsigned L, long long stride)          \
    {                                                                                                        \
        row_block<T>(x, out, M);                                                                             \
    }
ROWB(b256, 256)
ROWB(b128, 128)
ROWB(b64, 64)

/* x5_min with its n in a by-value block of P bytes (kfuse passes a meta
 * block of 8 * meta_count bytes: 48 for x5, 72 for rowsum, 128 for
 * discount): does the size of the parameters cost a small launch time? */
template <int P>
struct pad {
    long long v[P / 8];
};
#define X5PAD(P)                                                                                   \
    extern "C" __global__ void __launch_bounds__(256) x5_pad##P(const float *__restrict__ x,      \
                                                                float *__restrict__ y, const pad<P> m) \
    {                                                                                              \
        const unsigned i = blockIdx.x * 256 + threadIdx.x;                                         \
        if (i < (unsigned)m.v[0]) {                                                                \
            const float v = x[i];                                                                  \
            y[i] = (((v + v) + v) + v) + v;                                                        \
        }                                                                                          \
    }
X5PAD(8)
X5PAD(48)
X5PAD(128)
X5PAD(512)
X5PAD(2048)

/* r1_dyn with kfuse's parameters for rowsum: (a0, o0, meta of 9 x int64,
 * scratch); M = v[1], L = v[2], stride = v[3] */
extern "C" __global__ void __launch_bounds__(32) r1_meta(const float *__restrict__ x, float *__restrict__ out,
                                                         const pad<72> m, unsigned char *__restrict__ scratch)
{
    rows<1, 0, 0, 1>(x, out, (unsigned)m.v[1], (unsigned)m.v[2], m.v[3]);
}
