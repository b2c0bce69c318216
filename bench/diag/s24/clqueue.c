/* Session 24: does a profiling-enabled command queue (kfuse creates every
 * OpenCL queue with CL_QUEUE_PROFILING_ENABLE, for kf_event_elapsed) cost
 * NVIDIA's OpenCL time per kernel?  x5's `c64` kernel (fusec emit --target
 * opencl), on a queue with profiling and one without, alternating, inputs
 * rotated over 256 MiB:
 *   lat: host time of one launch + clFinish (median of REPS)
 *   b2b: host time of REPS launches back to back + clFinish, per launch
 *   and on the profiling queue, the kernel's own START->END and a marker
 *   window (marker END to marker END around the launch, as kfbench times).
 * Build: cc -O2 -o clqueue clqueue.c -lOpenCL
 * Usage: [CLQ_PLATFORM=NVIDIA] clqueue x5.cl ENTRY REPS LOG2N... */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CK(x) do { cl_int rc_ = (x); if (rc_ != CL_SUCCESS) { fprintf(stderr, "%s: %d\n", #x, rc_); exit(1); } } while (0)

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static double median(double *v, int n)
{
    qsort(v, n, sizeof *v, cmp);
    return v[n / 2];
}

static cl_kernel kern;
static cl_mem *ins, *outs;
static int nsets;
static long long n;

static void launch(cl_command_queue q, int k, cl_event *ev)
{
    long long meta[6] = { n, n, 1, 1, 0, 0 };
    CK(clSetKernelArg(kern, 0, sizeof(cl_mem), &ins[k % nsets]));
    CK(clSetKernelArg(kern, 1, sizeof(cl_mem), &outs[k % nsets]));
    CK(clSetKernelArg(kern, 2, sizeof meta, meta));
    size_t local = 256, global = (size_t)((n / 4 + 255) / 256) * 256;
    CK(clEnqueueNDRangeKernel(q, kern, 1, NULL, &global, &local, 0, NULL, ev));
}

static cl_ulong prof(cl_event e, cl_profiling_info what)
{
    cl_ulong t = 0;
    CK(clGetEventProfilingInfo(e, what, sizeof t, &t, NULL));
    return t;
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
    int reps = atoi(argv[3]);
    cl_platform_id plats[8];
    cl_uint np = 0;
    CK(clGetPlatformIDs(8, plats, &np));
    const char *want = getenv("CLQ_PLATFORM") ? getenv("CLQ_PLATFORM") : "NVIDIA";
    cl_device_id dev = NULL;
    for (cl_uint i = 0; i < np && !dev; i++) {
        char name[256];
        clGetPlatformInfo(plats[i], CL_PLATFORM_NAME, sizeof name, name, NULL);
        if (strstr(name, want))
            CK(clGetDeviceIDs(plats[i], CL_DEVICE_TYPE_ALL, 1, &dev, NULL));
    }
    if (!dev) {
        fprintf(stderr, "no OpenCL platform named like %s\n", want);
        return 1;
    }
    cl_int rc;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &rc);
    CK(rc);
    cl_command_queue qs[2];
    qs[0] = clCreateCommandQueue(ctx, dev, CL_QUEUE_PROFILING_ENABLE, &rc);
    CK(rc);
    qs[1] = clCreateCommandQueue(ctx, dev, 0, &rc);
    CK(rc);
    const char *s = src;
    cl_program prog = clCreateProgramWithSource(ctx, 1, &s, NULL, &rc);
    CK(rc);
    CK(clBuildProgram(prog, 1, &dev, "-cl-std=CL1.2 -cl-fp32-correctly-rounded-divide-sqrt -DKF_ONE_PASS", NULL, NULL));
    kern = clCreateKernel(prog, argv[2], &rc);
    CK(rc);
    double *a = malloc(sizeof *a * reps), *b = malloc(sizeof *b * reps);
    for (int ai = 4; ai < argc; ai++) {
        n = 1LL << atoi(argv[ai]);
        size_t bytes = (size_t)n * 4;
        nsets = (int)((256u << 20) / (2 * bytes));
        nsets = nsets < 1 ? 1 : nsets > 64 ? 64 : nsets;
        ins = malloc(sizeof *ins * nsets);
        outs = malloc(sizeof *outs * nsets);
        float *h = malloc(bytes);
        for (long long i = 0; i < n; i++)
            h[i] = (float)(rand() % 1000) / 1000.0f;
        for (int k = 0; k < nsets; k++) {
            ins[k] = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes, h, &rc);
            CK(rc);
            outs[k] = clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, NULL, &rc);
            CK(rc);
        }
        /* check one output: x5 = 5x up to rounding */
        launch(qs[1], 0, NULL);
        CK(clFinish(qs[1]));
        float *o = malloc(bytes);
        CK(clEnqueueReadBuffer(qs[1], outs[0], CL_TRUE, 0, bytes, o, 0, NULL, NULL));
        long long bad = 0;
        for (long long i = 0; i < n; i++)
            bad += !(o[i] > 5 * h[i] - 1e-4f && o[i] < 5 * h[i] + 1e-4f);
        free(o);
        for (int round = 0; round < 5; round++) {
            for (int qi = round % 2, c = 0; c < 2; c++, qi ^= 1) {
                cl_command_queue q = qs[qi];
                for (int i = 0; i < 20; i++)
                    launch(q, i, NULL);
                CK(clFinish(q));
                for (int i = 0; i < reps; i++) {
                    double t0 = now_us();
                    launch(q, i, NULL);
                    CK(clFinish(q));
                    a[i] = now_us() - t0;
                }
                double t0 = now_us();
                for (int i = 0; i < reps; i++)
                    launch(q, i, NULL);
                CK(clFinish(q));
                double b2b = (now_us() - t0) / reps;
                printf("2^%s round %d %-9s lat %8.2f us  b2b %8.2f us/launch", argv[ai], round,
                       qi == 0 ? "profiled" : "plain", median(a, reps), b2b);
                if (qi == 0) {
                    for (int i = 0; i < reps; i++) {
                        cl_event m0, e, m1;
                        CK(clEnqueueMarkerWithWaitList(q, 0, NULL, &m0));
                        launch(q, i, &e);
                        CK(clEnqueueMarkerWithWaitList(q, 0, NULL, &m1));
                        CK(clWaitForEvents(1, &m1));
                        a[i] = (prof(e, CL_PROFILING_COMMAND_END) - prof(e, CL_PROFILING_COMMAND_START)) / 1e3;
                        b[i] = (prof(m1, CL_PROFILING_COMMAND_END) - prof(m0, CL_PROFILING_COMMAND_END)) / 1e3;
                        clReleaseEvent(m0);
                        clReleaseEvent(e);
                        clReleaseEvent(m1);
                    }
                    printf("  kernel %8.2f us  marker window %8.2f us", median(a, reps), median(b, reps));
                }
                printf("\n");
            }
        }
        printf("2^%s: %lld of %lld elements wrong\n", argv[ai], bad, n);
        for (int k = 0; k < nsets; k++) {
            clReleaseMemObject(ins[k]);
            clReleaseMemObject(outs[k]);
        }
        free(ins);
        free(outs);
        free(h);
        fflush(stdout);
    }
    return 0;
}
