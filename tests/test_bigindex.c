/* Index-width switching: arrays of more than 2^31 elements take the 64-bit
 * index variants.  Needs a GPU with several GiB free; elsewhere it says so
 * and skips.  Every output element is checked (outputs poisoned first). */
#include "check.h"
#include "kfuse.h"

#include <stdlib.h>

static void run(kf_backend b)
{
    kf_context_options o = { .backend = b, .device = 0 };
    kf_context *ctx;
    char why[512];
    if (kf_context_create(&o, &ctx, why, sizeof why) != KF_OK) {
        printf("SKIP %s: %s\n", kf_backend_name(b), why);
        return;
    }
    kf_device_info info;
    kf_context_info(ctx, &info);
    const int64_t n = (INT64_C(1) << 31) + 17;
    if (!info.gpu || info.memory_bytes < (uint64_t)n * 4) {
        printf("SKIP %s: %s is not a GPU with %lld bytes to spare\n", kf_backend_name(b), info.name,
               (long long)n * 4);
        kf_context_destroy(ctx);
        return;
    }
    kf_module *m;
    const char *text = "kfuse 1\n"
                       "graph big(x: i8[n]) -> (y, s) {\n"
                       "  y = add x, 3\n"
                       "  s = sum (cast x, i64)\n"
                       "}\n";
    CHECK_STATUS(kf_module_parse(text, strlen(text), "big", NULL, &m), KF_OK);
    kf_program *p;
    CHECK_STATUS(kf_compile(ctx, kf_module_graph(m, 0), &p), KF_OK);
    int8_t *h = malloc((size_t)n);
    int64_t want = 0;
    for (int64_t i = 0; i < n; i++) {
        h[i] = (int8_t)((i * 7 + (i >> 29)) % 100 - 50);
        want += h[i];
    }
    kf_buffer *bx, *by, *bs;
    CHECK_STATUS(kf_buffer_alloc(ctx, (size_t)n, &bx), KF_OK);
    CHECK_STATUS(kf_buffer_alloc(ctx, (size_t)n, &by), KF_OK);
    CHECK_STATUS(kf_buffer_alloc(ctx, 8, &bs), KF_OK);
    CHECK_STATUS(kf_upload(bx, 0, h, (size_t)n, NULL), KF_OK);
    memset(h, 0x7f, (size_t)n);
    CHECK_STATUS(kf_upload(by, 0, h, (size_t)n, NULL), KF_OK); /* poison */
    kf_view x = kf_view_dense(bx, 0, KF_I8, 1, &n), outs[2] = { kf_view_dense(by, 0, KF_I8, 1, &n),
                                                                 kf_view_dense(bs, 0, KF_I64, 0, NULL) };
    CHECK_STATUS(kf_run(p, NULL, &x, 1, NULL, 0, outs, 2), KF_OK);
    CHECK_STATUS(kf_stream_sync(ctx, NULL), KF_OK);
    int64_t got = 0;
    CHECK_STATUS(kf_download(&got, bs, 0, 8, NULL), KF_OK);
    CHECK_MSG(got == want, "sum over %lld elements: got %lld want %lld", (long long)n, (long long)got,
              (long long)want);
    CHECK_STATUS(kf_download(h, by, 0, (size_t)n, NULL), KF_OK);
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < n; i++) {
        int8_t w = (int8_t)((i * 7 + (i >> 29)) % 100 - 50 + 3);
        if (h[i] != w && bad++ == 0)
            first = i;
    }
    CHECK_MSG(bad == 0, "%lld wrong elements, first at %lld", (long long)bad, (long long)first);
    printf("%s: %lld elements (> 2^31) correct on %s\n", kf_backend_name(b), (long long)n, info.name);
    free(h);
    kf_module_free(m);
    kf_context_destroy(ctx);
}

int main(void)
{
    run(KF_BACKEND_CUDA);
    run(KF_BACKEND_OPENCL);
    return kf_test_done();
}
