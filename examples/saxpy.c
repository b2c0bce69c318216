/* The complete example of docs/api.md: build z = alpha*x + y with the C
 * builder, compile it for the best device, run it asynchronously on a
 * stream, time it with events and check the result on the host. */
#include <kfuse.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define TRY(call)                                                                           \
    do {                                                                                    \
        kf_status s_ = (call);                                                              \
        if (s_ != KF_OK) {                                                                  \
            fprintf(stderr, "%s failed: %s: %s\n", #call, kf_status_string(s_),             \
                    ctx ? kf_context_error(ctx) : "");                                      \
            return 1;                                                                       \
        }                                                                                   \
    } while (0)

int main(void)
{
    kf_context *ctx = NULL;

    /* 1. The graph: z = alpha * x + y over a symbolic length n. */
    kf_graph *g = kf_graph_new("saxpy");
    kf_dim n = KF_SYM("n");
    kf_node alpha = kf_scalar(g, "alpha", KF_F32);
    kf_node x = kf_input(g, "x", KF_F32, 1, &n);
    kf_node y = kf_input(g, "y", KF_F32, 1, &n);
    kf_node z = kf_binary(g, KF_OP_ADD, kf_binary(g, KF_OP_MUL, alpha, x), y);
    kf_output(g, z, "z");
    if (kf_graph_verify(g) != KF_OK) {
        fprintf(stderr, "graph: %s\n", kf_graph_error(g));
        return 1;
    }

    /* 2. A context on the best device (KFUSE_BACKEND may choose another). */
    char why[512];
    kf_status s = kf_context_create(NULL, &ctx, why, sizeof why);
    if (s != KF_OK) {
        fprintf(stderr, "no device: %s\n", why);
        return 1;
    }
    kf_device_info info;
    kf_context_info(ctx, &info);
    printf("running on %s (%s)\n", info.name, kf_backend_name(info.backend));

    /* 3. Compile once; the program serves every n. */
    kf_program *prog;
    TRY(kf_compile(ctx, g, &prog));

    /* 4. Buffers and data. */
    enum { N = 1 << 20 };
    float *hx = malloc(N * sizeof *hx), *hy = malloc(N * sizeof *hy), *hz = malloc(N * sizeof *hz);
    for (int i = 0; i < N; i++) {
        hx[i] = (float)(i % 1000) * 0.25f;
        hy[i] = (float)(i % 7) - 3.0f;
    }
    kf_buffer *bx, *by, *bz;
    TRY(kf_buffer_alloc(ctx, N * sizeof(float), &bx));
    TRY(kf_buffer_alloc(ctx, N * sizeof(float), &by));
    TRY(kf_buffer_alloc(ctx, N * sizeof(float), &bz));
    int64_t shape[1] = { N };
    kf_view in[2] = { kf_view_dense(bx, 0, KF_F32, 1, shape), kf_view_dense(by, 0, KF_F32, 1, shape) };
    kf_view out = kf_view_dense(bz, 0, KF_F32, 1, shape);

    /* 5. Queue upload, run and download on one stream; time the run. */
    kf_stream *st;
    kf_event *t0, *t1;
    TRY(kf_stream_create(ctx, &st));
    TRY(kf_event_create(ctx, &t0));
    TRY(kf_event_create(ctx, &t1));
    float a = 2.0f;
    const void *scalars[1] = { &a };
    TRY(kf_upload(bx, 0, hx, N * sizeof(float), st));
    TRY(kf_upload(by, 0, hy, N * sizeof(float), st));
    TRY(kf_event_record(t0, st));
    TRY(kf_run(prog, st, in, 2, scalars, 1, &out, 1));
    TRY(kf_event_record(t1, st));
    TRY(kf_download(hz, bz, 0, N * sizeof(float), st));
    TRY(kf_stream_sync(ctx, st));
    float ms;
    TRY(kf_event_elapsed(t0, t1, &ms));

    /* 6. Check every element. */
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += hz[i] != a * hx[i] + hy[i];
    printf("saxpy over %d elements: %d kernel(s), %.3f ms, %s\n", N, kf_program_num_kernels(prog), ms,
           bad ? "WRONG" : "correct");

    free(hx);
    free(hy);
    free(hz);
    kf_context_destroy(ctx); /* frees the program, buffers, stream and events too */
    kf_graph_free(g);
    return bad ? 1 : 0;
}
