/* The quick-start demo: parse a .kir file, verify and print it, then run
 * every graph fused on the best backend present and check each output
 * against the reference interpreter.
 * Usage: kfuse_demo FILE.kir [N]   (N: the size of every symbol, default 1000000) */
#include <kfuse.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Element i of a float or integer array, as a double (the demo's dtypes). */
static double get(const void *p, kf_dtype t, int64_t i)
{
    switch (t) {
    case KF_F32: return ((const float *)p)[i];
    case KF_F64: return ((const double *)p)[i];
    case KF_I32: return ((const int32_t *)p)[i];
    case KF_I64: return (double)((const int64_t *)p)[i];
    default: return NAN;
    }
}

static void set(void *p, kf_dtype t, int64_t i, double v)
{
    switch (t) {
    case KF_F32: ((float *)p)[i] = (float)v; break;
    case KF_F64: ((double *)p)[i] = v; break;
    case KF_I32: ((int32_t *)p)[i] = (int32_t)v; break;
    case KF_I64: ((int64_t *)p)[i] = (int64_t)v; break;
    default: break;
    }
}

static int64_t numel(const kf_host_array *a)
{
    int64_t n = 1;
    for (int i = 0; i < a->rank; i++)
        n *= a->shape[i];
    return n;
}

static int run_graph(kf_context *ctx, kf_graph *g, int64_t size)
{
    int nin = kf_graph_num_inputs(g), nout = kf_graph_num_outputs(g), rc = 1;
    kf_host_array *in = calloc((size_t)nin + 1, sizeof *in), *ref = calloc((size_t)nout + 1, sizeof *ref);
    kf_view *views = calloc((size_t)nin + 1, sizeof *views), *outs = calloc((size_t)nout + 1, sizeof *outs);
    const void **scalars = calloc((size_t)nin + 1, sizeof *scalars);
    int narr = 0, nsc = 0, nref = 0;
    kf_program *prog = NULL;
    char err[512];
    if (!in || !ref || !views || !outs || !scalars)
        goto done;
    for (int i = 0; i < nin; i++) {
        kf_node x = kf_graph_input(g, i);
        in[i].dtype = kf_node_dtype(g, x);
        in[i].rank = kf_node_rank(g, x);
        for (int d = 0; d < in[i].rank; d++) {
            kf_dim dim;
            kf_node_dim(g, x, d, &dim);
            in[i].shape[d] = dim.sym ? size : dim.size;
        }
        if (in[i].dtype != KF_F32 && in[i].dtype != KF_F64 && in[i].dtype != KF_I32 && in[i].dtype != KF_I64) {
            fprintf(stderr, "kfuse_demo: input '%s' is %s; the demo fills only f32, f64, i32, i64\n",
                    kf_node_name(g, x), kf_dtype_name(in[i].dtype));
            goto done;
        }
        int64_t n = numel(&in[i]);
        if (!(in[i].data = malloc((size_t)n * kf_dtype_size(in[i].dtype) + 1)))
            goto done;
        for (int64_t e = 0; e < n; e++)
            set(in[i].data, in[i].dtype, e, 0.25 * (double)((e * 7919 + i * 13) % 1000) - 100.0);
    }
    kf_status s = kf_interpret(g, in, nin, ref, nout, err, sizeof err);
    if (s != KF_OK) {
        fprintf(stderr, "kfuse_demo: interpreter: %s\n", err);
        goto done;
    }
    nref = nout;
    if ((s = kf_compile(ctx, g, &prog)) != KF_OK) {
        fprintf(stderr, "kfuse_demo: compile: %s\n", kf_context_error(ctx));
        goto done;
    }
    for (int i = 0; i < nin; i++) {
        kf_node x = kf_graph_input(g, i);
        if (kf_node_is_scalar(g, x)) {
            scalars[nsc++] = in[i].data;
            continue;
        }
        size_t bytes = (size_t)numel(&in[i]) * kf_dtype_size(in[i].dtype);
        kf_buffer *b;
        if (kf_buffer_alloc(ctx, bytes, &b) != KF_OK || kf_upload(b, 0, in[i].data, bytes, NULL) != KF_OK)
            goto fail;
        views[narr++] = kf_view_dense(b, 0, in[i].dtype, in[i].rank, in[i].shape);
    }
    /* outputs: buf NULL, so kfuse allocates them */
    if (kf_run(prog, NULL, views, narr, scalars, nsc, outs, nout) != KF_OK || kf_stream_sync(ctx, NULL) != KF_OK)
        goto fail;
    printf("  %s: %d kernel%s launched\n", kf_graph_name(g), kf_program_num_kernels(prog),
           kf_program_num_kernels(prog) == 1 ? "" : "s");
    rc = 0;
    for (int j = 0; j < nout; j++) {
        int64_t n = numel(&ref[j]);
        size_t bytes = (size_t)n * kf_dtype_size(ref[j].dtype);
        void *got = malloc(bytes + 1);
        if (!got || kf_download(got, outs[j].buf, 0, bytes, NULL) != KF_OK) {
            free(got);
            goto fail;
        }
        double maxerr = 0;
        for (int64_t e = 0; e < n; e++) {
            double d = fabs(get(got, ref[j].dtype, e) - get(ref[j].data, ref[j].dtype, e));
            maxerr = d > maxerr || d != d ? d : maxerr;
        }
        printf("  %s = %g %g %g ... (%lld elements), largest difference from the interpreter: %g\n",
               kf_graph_output_name(g, j), get(got, ref[j].dtype, 0), n > 1 ? get(got, ref[j].dtype, 1) : 0.0,
               n > 2 ? get(got, ref[j].dtype, 2) : 0.0, (long long)n, maxerr);
        rc |= !(maxerr <= 1e-2); /* inputs are at most 150 in size: f32 rounding is far below this */
        free(got);
    }
    printf("  check: %s\n", rc ? "FAILED" : "ok");
    goto done;
fail:
    fprintf(stderr, "kfuse_demo: %s\n", kf_context_error(ctx));
    rc = 1;
done:
    for (int i = 0; i < narr; i++)
        kf_buffer_free(views[i].buf);
    for (int j = 0; outs && j < nout; j++)
        kf_buffer_free(outs[j].buf);
    for (int j = 0; j < nref; j++)
        kf_free(ref[j].data);
    for (int i = 0; in && i < nin; i++)
        free(in[i].data);
    kf_program_free(prog);
    free(in);
    free(ref);
    free(views);
    free(outs);
    free(scalars);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: kfuse_demo FILE.kir [N]\n");
        return 2;
    }
    int64_t size = argc == 3 ? atoll(argv[2]) : 1000000;
    kf_module *m = NULL;
    if (kf_module_parse_file(argv[1], NULL, &m) != KF_OK) {
        fprintf(stderr, "%s\n", m ? kf_module_error(m) : "out of memory");
        kf_module_free(m);
        return 1;
    }
    printf("%s, parsed and verified:\n\n", argv[1]);
    kf_module_print(m, stdout);

    kf_context *ctx;
    char why[1024];
    if (kf_context_create(NULL, &ctx, why, sizeof why) != KF_OK) {
        fprintf(stderr, "kfuse_demo: no device: %s\n", why);
        kf_module_free(m);
        return 1;
    }
    kf_device_info info;
    kf_context_info(ctx, &info);
    printf("\nbackend: %s, device: %s; every symbol = %lld\n", kf_backend_name(info.backend), info.name,
           (long long)size);
    int rc = 0;
    for (int i = 0; i < kf_module_num_graphs(m); i++)
        rc |= run_graph(ctx, kf_module_graph(m, i), size);
    kf_context_destroy(ctx);
    kf_module_free(m);
    return rc;
}
