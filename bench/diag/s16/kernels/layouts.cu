/* Session 16: discount's f64 multiply [m,k] x [t,m,k] in flat layouts, to
 * find which of block size, vectors a thread and index width moves its
 * time at 2^20.  A thread takes U 16-byte vectors, TB apart; the broadcast
 * operand's vector is the flat vector index modulo the inner vectors. */
template <int TB, int U, typename I>
__device__ __forceinline__ void flat(const double2 *__restrict__ a, const double2 *__restrict__ b,
                                     double2 *__restrict__ o, I inner, I nvec)
{
    const I base = (I)blockIdx.x * (TB * U) + (I)threadIdx.x;
    double2 x[U], y[U];
#pragma unroll
    for (int j = 0; j < U; j++) {
        const I v = base + (I)j * TB;
        if (v < nvec) {
            x[j] = a[v % inner];
            y[j] = b[v];
        }
    }
#pragma unroll
    for (int j = 0; j < U; j++) {
        const I v = base + (I)j * TB;
        if (v < nvec)
            o[v] = make_double2(__dmul_rn(x[j].x, y[j].x), __dmul_rn(x[j].y, y[j].y));
    }
}

#define FLAT(name, TB, U, I)                                                                                         \
    extern "C" __global__ void __launch_bounds__(TB) name(const double2 *__restrict__ a,                           \
                                                          const double2 *__restrict__ b, double2 *__restrict__ o, \
                                                          unsigned long long inner, unsigned long long nvec)      \
    {                                                                                                                \
        flat<TB, U, I>(a, b, o, (I)inner, (I)nvec);                                                                  \
    }
FLAT(f4_128, 128, 4, unsigned)
FLAT(f4_128_64, 128, 4, unsigned long long)
FLAT(f4_256, 256, 4, unsigned)
FLAT(f2_256, 256, 2, unsigned)
FLAT(f1_256, 256, 1, unsigned)
FLAT(f2_128, 128, 2, unsigned)
FLAT(f8_128, 128, 8, unsigned)
