/* Session 24 (params.c): the same grid-stride x+x+x+x+x with kernel
 * parameter blocks of 20 bytes (kfbench's bare kernel), 64 (kfuse's x5:
 * two pointers and a 6-int64 meta block), 112 (a reduction's: 11 int64 and
 * scratch) and 256 bytes. */
struct m6 { long long v[6]; };
struct m11 { long long v[11]; };
struct m30 { long long v[30]; };
extern "C" __global__ void p20(const float *__restrict__ x, float *__restrict__ y, unsigned n)
{
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        float v = x[i];
        y[i] = v + v + v + v + v;
    }
}
extern "C" __global__ void p64(const float *__restrict__ x, float *__restrict__ y, const m6 m)
{
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < (unsigned)m.v[0]; i += gridDim.x * blockDim.x) {
        float v = x[i];
        y[i] = v + v + v + v + v;
    }
}
extern "C" __global__ void p112(const float *__restrict__ x, float *__restrict__ y, const m11 m, unsigned char *s)
{
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < (unsigned)m.v[0]; i += gridDim.x * blockDim.x) {
        float v = x[i];
        y[i] = v + v + v + v + v;
    }
}
extern "C" __global__ void p256(const float *__restrict__ x, float *__restrict__ y, const m30 m)
{
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < (unsigned)m.v[0]; i += gridDim.x * blockDim.x) {
        float v = x[i];
        y[i] = v + v + v + v + v;
    }
}
