#include "kdiv.h"
extern "C" __global__ void divchk(const float *a, const float *b, float *o0, float *o1, unsigned n)
{
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        o0[i] = __fdiv_rn(a[i], b[i]);
        o1[i] = kf_div_f64(a[i], b[i]);
    }
}
