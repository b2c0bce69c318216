/* Session 18: two reduction entries of one OpenCL module timed in ONE
 * process on NVIDIA's OpenCL, alternating, with profiling events: is
 * tilev slower than tile on that platform (kfbench A/B said 1.02-1.12x),
 * or is it something around the kernel?  dot's kernels (f32, sum of x*y),
 * meta [n, n, 1, 1, 0, 0, 0, 0], the counters in scratch zero.
 * Build: cc -O2 -o clpair clpair.c -lOpenCL
 * Usage: clpair dot.cl N REPS ENTRY...   (dot.cl: fusec emit --target opencl) */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK(x) do { cl_int rc_ = (x); if (rc_ != CL_SUCCESS) { fprintf(stderr, "%s: %d\n", #x, rc_); exit(1); } } while (0)

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc < 5)
        return 2;
    FILE *f = fopen(argv[1], "rb");
    if (!f)
        return 1;
    static char src[1 << 22];
    size_t len = fread(src, 1, sizeof src - 1, f);
    fclose(f);
    src[len] = 0;
    long long n = atoll(argv[2]);
    int reps = atoi(argv[3]), ne = argc - 4, sets = 8;
    cl_platform_id plats[8];
    cl_uint np = 0;
    CK(clGetPlatformIDs(8, plats, &np));
    cl_device_id dev = NULL;
    for (cl_uint i = 0; i < np && !dev; i++) {
        char name[256];
        clGetPlatformInfo(plats[i], CL_PLATFORM_NAME, sizeof name, name, NULL);
        if (strstr(name, "NVIDIA"))
            CK(clGetDeviceIDs(plats[i], CL_DEVICE_TYPE_GPU, 1, &dev, NULL));
    }
    if (!dev)
        return 1;
    cl_int rc;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &rc);
    CK(rc);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, CL_QUEUE_PROFILING_ENABLE, &rc);
    CK(rc);
    const char *s = src;
    cl_program prog = clCreateProgramWithSource(ctx, 1, &s, NULL, &rc);
    CK(rc);
    CK(clBuildProgram(prog, 1, &dev, "-cl-std=CL1.2 -cl-fp32-correctly-rounded-divide-sqrt -DKF_ONE_PASS", NULL, NULL));
    /* inputs rotated over sets of x, y so that L2 (50 MB) does not hold them */
    cl_mem x[8], y[8], out, scratch;
    float *h = malloc((size_t)n * sizeof *h);
    for (long long i = 0; i < n; i++)
        h[i] = (float)(rand() % 1000) / 1000.0f;
    for (int k = 0; k < sets; k++) {
        x[k] = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, (size_t)n * 4, h, &rc);
        y[k] = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, (size_t)n * 4, h, &rc);
    }
    out = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 4, NULL, &rc);
    scratch = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 1 << 20, NULL, &rc);
    const cl_uint zero = 0;
    CK(clEnqueueFillBuffer(q, scratch, &zero, 4, 0, 1 << 20, 0, NULL, NULL));
    long long meta[8] = { n, n, 1, 1, 0, 0, 0, 0 };
    /* kf_cg_red_chunks for one output */
    long long ntiles = n > 4096 ? (n + 4095) / 4096 : 1, want = 2048, nn = ntiles < want ? ntiles : want;
    long long per = (ntiles + nn - 1) / nn, nchunks = (ntiles + per - 1) / per;
    size_t local = 256, global = (size_t)nchunks * 256;
    cl_kernel kern[8];
    double *t[8];
    for (int e = 0; e < ne; e++) {
        kern[e] = clCreateKernel(prog, argv[4 + e], &rc);
        CK(rc);
        t[e] = malloc((size_t)reps * sizeof(double));
    }
    float want_sum = 0, got = 0;
    for (int r = -20; r < reps; r++)
        for (int e = 0; e < ne; e++) {
            int k = (r + 20) % sets;
            CK(clSetKernelArg(kern[e], 0, sizeof(cl_mem), &x[k]));
            CK(clSetKernelArg(kern[e], 1, sizeof(cl_mem), &y[k]));
            CK(clSetKernelArg(kern[e], 2, sizeof(cl_mem), &out));
            CK(clSetKernelArg(kern[e], 3, sizeof meta, meta));
            CK(clSetKernelArg(kern[e], 4, sizeof(cl_mem), &scratch));
            cl_event ev;
            CK(clEnqueueNDRangeKernel(q, kern[e], 1, NULL, &global, &local, 0, NULL, &ev));
            CK(clWaitForEvents(1, &ev));
            cl_ulong a, b;
            clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof a, &a, NULL);
            clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof b, &b, NULL);
            clReleaseEvent(ev);
            if (r >= 0)
                t[e][r] = (double)(b - a) * 1e-3;
            CK(clEnqueueReadBuffer(q, out, CL_TRUE, 0, 4, &got, 0, NULL, NULL));
            if (e == 0 && r == -20)
                want_sum = got;
            else if (got != want_sum)
                printf("%s: sum %.9g differs from %.9g\n", argv[4 + e], got, want_sum);
        }
    for (int e = 0; e < ne; e++) {
        qsort(t[e], (size_t)reps, sizeof(double), cmp);
        printf("n %lld  %-28s median %.3f us  (p10 %.3f, p90 %.3f)\n", n, argv[4 + e], t[e][reps / 2], t[e][reps / 10],
               t[e][reps * 9 / 10]);
    }
    return 0;
}
