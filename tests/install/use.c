/* Builds and checks a graph through the installed header and library only. */
#include <kfuse.h>
#include <stdio.h>

int main(void)
{
    if (kf_version() != KFUSE_VERSION) {
        fprintf(stderr, "header %d does not match library %d\n", KFUSE_VERSION, kf_version());
        return 1;
    }
    kf_graph *g = kf_graph_new("x2");
    kf_dim n = KF_SYM("n");
    kf_node x = kf_input(g, "x", KF_F32, 1, &n);
    kf_output(g, kf_binary(g, KF_OP_ADD, x, x), "y");
    kf_status s = kf_graph_verify(g);
    if (s != KF_OK) {
        fprintf(stderr, "verify: %s: %s\n", kf_status_string(s), kf_graph_error(g));
        return 1;
    }
    float in[3] = { 1, 2, 3.5f };
    kf_host_array a = { in, KF_F32, 1, { 3 } }, out;
    s = kf_interpret(g, &a, 1, &out, 1, NULL, 0);
    int ok = s == KF_OK && ((float *)out.data)[2] == 7.0f;
    if (s == KF_OK)
        kf_free(out.data);
    kf_graph_free(g);
    printf("installed kfuse %s\n", ok ? "works" : "FAILED");
    return ok ? 0 : 1;
}
