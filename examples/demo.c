/* The quick-start demo: parse a .kir file, verify it, print the graph, run
 * every graph on small inputs with the reference interpreter and print the
 * results.  Usage: kfuse_demo FILE.kir [N] (N: the size of every symbol). */
#include <kfuse.h>

#include <stdlib.h>
#include <string.h>

static double element(const kf_host_array *a, int64_t i)
{
    const void *p = a->data;
    switch (a->dtype) {
    case KF_BOOL: case KF_U8: return ((const uint8_t *)p)[i];
    case KF_I8: return ((const int8_t *)p)[i];
    case KF_I16: return ((const int16_t *)p)[i];
    case KF_U16: return ((const uint16_t *)p)[i];
    case KF_I32: return ((const int32_t *)p)[i];
    case KF_U32: return ((const uint32_t *)p)[i];
    case KF_I64: return (double)((const int64_t *)p)[i];
    case KF_U64: return (double)((const uint64_t *)p)[i];
    case KF_F32: return ((const float *)p)[i];
    case KF_F64: return ((const double *)p)[i];
    default: return 0; /* f16/bf16 are not printed by this demo */
    }
}

/* Inputs: every element 0.5*(i+1) (integers: i+1), small enough for any dtype. */
static void fill(kf_host_array *a, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        double v = kf_dtype_name(a->dtype)[0] == 'f' ? 0.5 * (double)(i + 1) : (double)((i % 100) + 1);
        switch (a->dtype) {
        case KF_F32: ((float *)a->data)[i] = (float)v; break;
        case KF_F64: ((double *)a->data)[i] = v; break;
        case KF_I32: ((int32_t *)a->data)[i] = (int32_t)v; break;
        case KF_I64: ((int64_t *)a->data)[i] = (int64_t)v; break;
        default: memset((char *)a->data + (size_t)i * kf_dtype_size(a->dtype), 1, kf_dtype_size(a->dtype)); break;
        }
    }
}

static void print_array(const char *name, const kf_host_array *a)
{
    int64_t n = 1;
    for (int i = 0; i < a->rank; i++)
        n *= a->shape[i];
    printf("  %s: %s[", name, kf_dtype_name(a->dtype));
    for (int i = 0; i < a->rank; i++)
        printf("%s%lld", i ? "," : "", (long long)a->shape[i]);
    printf("] =");
    for (int64_t i = 0; i < n && i < 8; i++)
        printf(" %g", element(a, i));
    printf("%s\n", n > 8 ? " ..." : "");
}

static int run_graph(kf_graph *g, int64_t size)
{
    int nin = kf_graph_num_inputs(g), nout = kf_graph_num_outputs(g);
    kf_host_array *in = calloc((size_t)nin + 1, sizeof *in), *out = calloc((size_t)nout + 1, sizeof *out);
    int rc = 1;
    if (!in || !out)
        goto done;
    for (int i = 0; i < nin; i++) {
        kf_node x = kf_graph_input(g, i);
        in[i].dtype = kf_node_dtype(g, x);
        in[i].rank = kf_node_rank(g, x);
        int64_t n = 1;
        for (int d = 0; d < in[i].rank; d++) {
            kf_dim dim;
            kf_node_dim(g, x, d, &dim);
            in[i].shape[d] = dim.sym ? size : dim.size;
            n *= in[i].shape[d];
        }
        if (!(in[i].data = calloc((size_t)n + 1, kf_dtype_size(in[i].dtype))))
            goto done;
        fill(&in[i], n);
        print_array(kf_node_name(g, x), &in[i]);
    }
    char err[512];
    kf_status s = kf_interpret(g, in, nin, out, nout, err, sizeof err);
    if (s != KF_OK) {
        fprintf(stderr, "kfuse_demo: %s: %s\n", kf_status_string(s), err);
        goto done;
    }
    for (int i = 0; i < nout; i++) {
        print_array(kf_graph_output_name(g, i), &out[i]);
        kf_free(out[i].data);
    }
    rc = 0;
done:
    for (int i = 0; in && i < nin; i++)
        free(in[i].data);
    free(in);
    free(out);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: kfuse_demo FILE.kir [N]\n");
        return 2;
    }
    int64_t size = argc == 3 ? atoll(argv[2]) : 8;
    kf_module *m = NULL;
    kf_status s = kf_module_parse_file(argv[1], NULL, &m);
    if (s != KF_OK) {
        fprintf(stderr, "%s\n", m ? kf_module_error(m) : "out of memory");
        kf_module_free(m);
        return 1;
    }
    printf("kfuse %d.%d.%d: %s parsed and verified; the graph as kfuse prints it:\n\n", KFUSE_VERSION_MAJOR,
           KFUSE_VERSION_MINOR, KFUSE_VERSION_PATCH, argv[1]);
    kf_module_print(m, stdout);
    int rc = 0;
    for (int i = 0; i < kf_module_num_graphs(m); i++) {
        kf_graph *g = kf_module_graph(m, i);
        printf("\nrunning %s with the reference interpreter, every symbol = %lld:\n", kf_graph_name(g),
               (long long)size);
        rc |= run_graph(g, size);
    }
    kf_module_free(m);
    return rc;
}
