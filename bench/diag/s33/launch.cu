/* Session 33 (launch.c): x+x+x+x+x with kfbench's bare 20-byte parameter
 * block and with kfuse's x5 block (two pointers and a 6-int64 meta
 * block, 64 bytes), and an empty kernel. */
struct m6 { long long v[6]; };
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
extern "C" __global__ void empty(void) {}
