// Session 31: seed 3349 of test_runtime on CUDA gave sign(abs(x)) = 1 for
// x = -32768 (i16), where the IR's abs wraps (-32768) and sign is -1.  This
// checks every i16 and i8 value through abs then sign in the form emit.c
// used before (abs_emitted) and the one it uses since (abs_wide), against
// the host, and prints the SASS (cuobjdump).  Call 5 (H200, CUDA 13):
// sign(abs_emitted(-32768)) = 2 (IABS on the sign-extended value, then a
// 32-bit ISETP and SHF on it); abs_wide right for all 65536 and 256 values.
// neg_emitted / neg_mul (added after the last device call of s31, not run
// on a GPU yet): the SASS of nvcc 13.0 here negates i16 with IMAD.MOV -R
// and compares it unnarrowed, as for abs; neg_mul narrows (PRMT) first.
#include <cstdio>
#include <cstdlib>

template <typename T> __device__ __forceinline__ T abs_emitted(T x)
{
    return (x < 0 ? (T)((unsigned int)0 - (unsigned int)x) : x);
}
template <typename T> __device__ __forceinline__ T abs_wide(T x)   // selected in 32 bits, then narrowed: emit.c since s31
{
    return ((T)(x < 0 ? (unsigned int)0 - (unsigned int)x : (unsigned int)x));
}
template <typename T> __device__ __forceinline__ T neg_emitted(T x)   // before s31: PTX neg.s16 for i16
{
    return ((T)((unsigned int)0 - (unsigned int)x));
}
template <typename T> __device__ __forceinline__ T neg_mul(T x)   // emit.c's i16 neg since s31
{
    return ((T)((unsigned int)x * (x == 0 ? (unsigned int)0 : ~(unsigned int)0)));
}
template <typename T> __device__ __forceinline__ T sgn(T v) { return (T)((v > 0) - (v < 0)); }

template <typename T> __global__ void k(const T *a, T *o0, T *o1, T *o2, T *o3, T *o4, T *o5, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    T x = a[i];
    o0[i] = sgn(abs_emitted(x));
    o1[i] = sgn(abs_wide(x));
    o2[i] = abs_emitted(x);
    o3[i] = abs_wide(x);
    o4[i] = sgn(neg_emitted(x));
    o5[i] = sgn(neg_mul(x));
}

template <typename T> static int run(const char *name, int n, long lo)
{
    T *h = (T *)malloc(n * sizeof(T)), *r[6];
    for (int i = 0; i < n; i++)
        h[i] = (T)(lo + i);
    T *d, *o[6];
    cudaMalloc(&d, n * sizeof(T));
    cudaMemcpy(d, h, n * sizeof(T), cudaMemcpyHostToDevice);
    for (int j = 0; j < 6; j++) {
        cudaMalloc(&o[j], n * sizeof(T));
        r[j] = (T *)malloc(n * sizeof(T));
    }
    k<T><<<(n + 255) / 256, 256>>>(d, o[0], o[1], o[2], o[3], o[4], o[5], n);
    for (int j = 0; j < 6; j++)
        cudaMemcpy(r[j], o[j], n * sizeof(T), cudaMemcpyDeviceToHost);
    int bad[6] = { 0, 0, 0, 0, 0, 0 };
    for (int i = 0; i < n; i++) {
        T x = h[i];
        T ab = (T)(x < 0 ? 0u - (unsigned)(int)x : (unsigned)(int)x);   // wraps: abs(min) = min
        T sg = (T)((ab > 0) - (ab < 0));
        T ng = (T)(0u - (unsigned)(int)x);   // wraps: neg(min) = min
        T sn = (T)((ng > 0) - (ng < 0));
        T want[6] = { sg, sg, ab, ab, sn, sn };
        for (int j = 0; j < 6; j++)
            if (r[j][i] != want[j] && bad[j]++ < 3)
                printf("%s form %d: x %ld got %ld want %ld\n", name, j, (long)x, (long)r[j][i], (long)want[j]);
    }
    printf("%s: mismatches sign(abs emitted) %d, sign(abs wide) %d, abs emitted %d, abs wide %d, sign(neg emitted) %d, "
           "sign(neg mul) %d (of %d)\n", name, bad[0], bad[1], bad[2], bad[3], bad[4], bad[5], n);
    return bad[0] + bad[1] + bad[2] + bad[3] + bad[4] + bad[5];
}

int main()
{
    run<short>("i16", 65536, -32768);
    run<signed char>("i8", 256, -128);
    return 0;
}
