/* Session 40: kf_ddiv (kernels/math.cuh) against __fdiv_rn, bit for bit
 * (NaN against NaN), on the GPU: 2^32 pairs of random bit patterns (every
 * exponent, subnormals, infinities and NaNs among them), 2^30 quotients
 * next to a float midpoint (a = m b rounded, m a 25-bit odd significand,
 * and a's neighbours), and every pair of a list of special values.
 * Build: nvcc -O3 -arch=sm_90 --fmad=false -o divcheck divcheck.cu */
#include <cstdio>
#include <cstdint>
#include "kernels/math.cuh"

__device__ unsigned long long nbad;
__device__ float bad[16][4];

static __device__ __forceinline__ uint64_t mix(uint64_t x)
{
    x ^= x >> 33; x *= 0xff51afd7ed558ccdULL; x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ULL; x ^= x >> 33;
    return x;
}

static __device__ void one(float a, float b)
{
    float w = __fdiv_rn(a, b), g = kf_ddiv(a, b);
    if ((w != w && g != g) || __float_as_uint(w) == __float_as_uint(g))
        return;
    unsigned long long k = atomicAdd(&nbad, 1ULL);
    if (k < 16) {
        bad[k][0] = a; bad[k][1] = b; bad[k][2] = w; bad[k][3] = g;
    }
}

__global__ void random_pairs(uint64_t base)
{
    uint64_t i = base + blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
    uint64_t x = mix(i * 0x9e3779b97f4a7c15ULL + 1);
    one(__uint_as_float((uint32_t)x), __uint_as_float((uint32_t)(x >> 32)));
}

__global__ void near_midpoints(uint64_t base)
{
    uint64_t i = base + blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
    uint64_t x = mix(i + 0x1234567ULL), y = mix(x);
    double m = ldexp((double)((x & 0xffffff) | 0x1000001), (int)((x >> 32) % 300) - 194);
    float b = __uint_as_float((uint32_t)(y & 0x807fffff) | ((uint32_t)(((y >> 32) % 254) + 1) << 23));
    float a = (float)(m * (double)b);
    if (a != a || a == 0.0f || __float_as_uint(a) == 0x7f800000 || __float_as_uint(a) == 0xff800000)
        return;
    one(a, b);
    one(__uint_as_float(__float_as_uint(a) + 1), b);
    one(__uint_as_float(__float_as_uint(a) - 1), b);
}

__global__ void specials(uint64_t base)
{
    const uint32_t sp[] = { 0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0x3f800000, 0xbf800000,
                            0x00000001, 0x80000001, 0x00800000, 0x7f7fffff, 0xff7fffff, 0x00400000, 0x007fffff,
                            0x40400000, 0x34000000, 0x4b000000 };
    const int ns = sizeof sp / sizeof sp[0];
    uint64_t i = base + blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
    float a = __uint_as_float((uint32_t)mix(i));
    for (int j = 0; j < ns; j++) {
        one(a, __uint_as_float(sp[j]));
        one(__uint_as_float(sp[j]), a);
        if (i < (uint64_t)ns)
            one(__uint_as_float(sp[i]), __uint_as_float(sp[j]));
    }
}

int main()
{
    const uint64_t chunk = 1ULL << 28;
    for (uint64_t b = 0; b < (1ULL << 32); b += chunk)
        random_pairs<<<chunk / 256, 256>>>(b);
    for (uint64_t b = 0; b < (1ULL << 30); b += chunk)
        near_midpoints<<<chunk / 256, 256>>>(b);
    specials<<<(1 << 24) / 256, 256>>>(0);
    cudaError_t e = cudaDeviceSynchronize();
    unsigned long long n = 0;
    float h[16][4];
    cudaMemcpyFromSymbol(&n, nbad, sizeof n);
    cudaMemcpyFromSymbol(h, bad, sizeof h);
    printf("divcheck: %s, %llu mismatches of kf_ddiv against __fdiv_rn (2^32 random pairs, 3 x 2^30 near midpoints, 2^24 x 17 x 2 specials)\n",
           cudaGetErrorString(e), n);
    for (unsigned long long k = 0; k < n && k < 16; k++)
        printf("  %a / %a: __fdiv_rn %a, kf_ddiv %a\n", h[k][0], h[k][1], h[k][2], h[k][3]);
    return e != cudaSuccess || n != 0;
}
