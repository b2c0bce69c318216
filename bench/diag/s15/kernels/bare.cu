extern "C" __global__ void bare_x5(const float *__restrict__ x, float *__restrict__ y, unsigned n)
{
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        float v = x[i];
        y[i] = v + v + v + v + v;
    }
}
extern "C" __global__ void empty_k(void) {}
