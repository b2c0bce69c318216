/* libFuzzer target for the .kir parser and printer: any input parses or
 * fails with a message; whatever parses verifies, prints, parses again to
 * the same graphs and hashes, and prints to the same text.  A broken
 * promise traps (allowed here, in the harness only). */
#include "roundtrip.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    kf_limits lim = { .max_depth = 64, .max_nodes = 4096, .max_bytes = 1 << 16 };
    kf_module *m = NULL;
    kf_status s = kf_module_parse((const char *)data, size, "fuzz.kir", &lim, &m);
    if (!m)
        return 0; /* out of memory */
    const char *e = kf_module_error(m);
    if ((s == KF_OK) != (e[0] == 0))
        __builtin_trap();
    if (s == KF_OK) {
        for (int i = 0; i < kf_module_num_graphs(m); i++) {
            kf_graph *g = kf_module_graph(m, i);
            kf_hash h;
            if (kf_graph_verify(g) != KF_OK || kf_graph_hash(g, &h) != KF_OK)
                __builtin_trap();
            char *t = kf_graph_to_text(g);
            if (!t)
                __builtin_trap();
            kf_free(t);
        }
        char why[4096];
        if (!kf_test_roundtrip(m, why, sizeof why)) {
            fprintf(stderr, "round trip failed: %s\n", why);
            __builtin_trap();
        }
    }
    kf_module_free(m);
    return 0;
}
