/* kf_copy, the device-to-device copy, on every backend present: synchronous
 * and queued copies at odd offsets (within one buffer too) leave exactly the
 * copied range changed, and every bad call (a range outside either buffer,
 * an overlap, NULL, another context) fails with a message and changes
 * nothing.  Usage: test_copy [SEED] */
#include "check.h"
#include "kfsample.h"

#include <stdint.h>
#include <stdio.h>
#include <time.h>

enum { SIZE = (1 << 20) + 13, POISON = 0xa5 };

/* dst must be poison everywhere except [off, off + n), which equals want. */
static void check_bytes(const char *what, const uint8_t *got, size_t size, size_t off, const uint8_t *want, size_t n)
{
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < size; i++) {
        uint8_t w = i >= off && i < off + n ? want[i - off] : POISON;
        if (got[i] != w && bad++ == 0)
            first = i;
    }
    CHECK_MSG(bad == 0, "%s: %zu bytes wrong, the first at %zu", what, bad, first);
}

static void test_backend(kf_backend b, uint64_t seed)
{
    kf_context_options o = { .backend = b, .device = -1 };
    kf_context *ctx, *other;
    char why[1024];
    kf_status s = kf_context_create(&o, &ctx, why, sizeof why);
    if (s == KF_ERR_NO_DEVICE || s == KF_ERR_UNSUPPORTED) {
        printf("SKIP %s: %s\n", kf_backend_name(b), why);
        return;
    }
    CHECK_MSG(s == KF_OK, "%s: %s", kf_backend_name(b), why);
    if (s != KF_OK)
        return;
    CHECK_STATUS(kf_context_create(&o, &other, why, sizeof why), KF_OK);
    uint8_t *src = malloc(SIZE), *poison = malloc(SIZE), *got = malloc(SIZE);
    rt_rng r = { seed };
    for (size_t i = 0; i < SIZE; i++)
        src[i] = (uint8_t)rt_next(&r);
    memset(poison, POISON, SIZE);
    kf_buffer *bs, *bd, *bo;
    kf_stream *st, *ost;
    CHECK_STATUS(kf_buffer_alloc(ctx, SIZE, &bs), KF_OK);
    CHECK_STATUS(kf_buffer_alloc(ctx, SIZE, &bd), KF_OK);
    CHECK_STATUS(kf_buffer_alloc(other, SIZE, &bo), KF_OK);
    CHECK_STATUS(kf_stream_create(ctx, &st), KF_OK);
    CHECK_STATUS(kf_stream_create(other, &ost), KF_OK);
    CHECK_STATUS(kf_upload(bs, 0, src, SIZE, NULL), KF_OK);

    /* synchronous, odd offsets and length */
    size_t so = 1 + rt_next(&r) % 1000, dof = 3 + rt_next(&r) % 1000, n = SIZE - 2001;
    CHECK_STATUS(kf_upload(bd, 0, poison, SIZE, NULL), KF_OK);
    CHECK_STATUS(kf_copy(bd, dof, bs, so, n, NULL), KF_OK);
    CHECK_STATUS(kf_download(got, bd, 0, SIZE, NULL), KF_OK);
    check_bytes("sync copy", got, SIZE, dof, src + so, n);

    /* queued on a stream, then a small one; a zero-byte copy does nothing */
    CHECK_STATUS(kf_upload(bd, 0, poison, SIZE, NULL), KF_OK);
    CHECK_STATUS(kf_copy(bd, 0, bs, 0, SIZE, st), KF_OK);
    CHECK_STATUS(kf_copy(bd, SIZE - 5, bs, 0, 0, st), KF_OK);
    CHECK_STATUS(kf_stream_sync(ctx, st), KF_OK);
    CHECK_STATUS(kf_download(got, bd, 0, SIZE, NULL), KF_OK);
    check_bytes("stream copy", got, SIZE, 0, src, SIZE);

    /* within one buffer: the lower half onto the upper half, disjoint */
    size_t half = SIZE / 2;
    CHECK_STATUS(kf_copy(bd, half, bd, 7, half - 7, st), KF_OK);
    CHECK_STATUS(kf_stream_sync(ctx, st), KF_OK);
    CHECK_STATUS(kf_download(got, bd, 0, SIZE, NULL), KF_OK);
    memcpy(poison, src, SIZE); /* the expected bytes, for a moment */
    memcpy(poison + half, src + 7, half - 7);
    CHECK(memcmp(got, poison, SIZE) == 0);
    memset(poison, POISON, SIZE);

    /* errors: each names the problem and leaves bd as it was */
    CHECK_STATUS(kf_upload(bd, 0, poison, SIZE, NULL), KF_OK);
    CHECK_STATUS(kf_copy(bd, 0, bs, 1, SIZE, NULL), KF_ERR_INVALID_ARG);
    CHECK_CONTAINS(kf_context_error(ctx), "kf_copy: 1048589 bytes at offset 1 are outside the 1048589-byte source buffer");
    CHECK_STATUS(kf_copy(bd, SIZE - 3, bs, 0, 4, st), KF_ERR_INVALID_ARG);
    CHECK_CONTAINS(kf_context_error(ctx), "4 bytes at offset 1048586 are outside the 1048589-byte destination buffer");
    CHECK_STATUS(kf_copy(bd, SIZE + 1, bs, 0, 0, NULL), KF_ERR_INVALID_ARG);
    CHECK_CONTAINS(kf_context_error(ctx), "destination buffer");
    CHECK_STATUS(kf_copy(bd, 0, bs, 8, SIZE_MAX - 4, NULL), KF_ERR_INVALID_ARG);
    CHECK_CONTAINS(kf_context_error(ctx), "outside the 1048589-byte source buffer");
    CHECK_STATUS(kf_copy(bd, 100, bd, 0, 101, NULL), KF_ERR_INVALID_ARG);
    CHECK_CONTAINS(kf_context_error(ctx), "overlap in the same buffer");
    CHECK_STATUS(kf_copy(bd, 0, bd, 100, 101, NULL), KF_ERR_INVALID_ARG);
    CHECK_STATUS(kf_copy(bd, 0, bd, 0, 1, NULL), KF_ERR_INVALID_ARG);
    CHECK_STATUS(kf_copy(bd, 0, bo, 0, 16, NULL), KF_ERR_CONTEXT);
    CHECK_CONTAINS(kf_context_error(ctx), "kf_copy: the source buffer belongs to another context");
    CHECK_STATUS(kf_copy(bd, 0, bs, 0, 16, ost), KF_ERR_CONTEXT);
    CHECK_CONTAINS(kf_context_error(ctx), "kf_copy: the stream belongs to another context");
    CHECK_STATUS(kf_copy(NULL, 0, bs, 0, 16, NULL), KF_ERR_INVALID_ARG);
    CHECK_CONTAINS(kf_context_error(ctx), "kf_copy: the destination buffer is NULL");
    CHECK_STATUS(kf_copy(bd, 0, NULL, 0, 16, NULL), KF_ERR_INVALID_ARG);
    CHECK_CONTAINS(kf_context_error(ctx), "kf_copy: the source buffer is NULL");
    CHECK_STATUS(kf_copy(NULL, 0, NULL, 0, 16, NULL), KF_ERR_INVALID_ARG);
    CHECK_STATUS(kf_stream_sync(ctx, st), KF_OK);
    CHECK_STATUS(kf_download(got, bd, 0, SIZE, NULL), KF_OK);
    check_bytes("after the failed copies", got, SIZE, 0, NULL, 0);
    printf("%s: kf_copy checked\n", kf_backend_name(b));

    free(src);
    free(poison);
    free(got);
    kf_context_destroy(other);
    kf_context_destroy(ctx);
}

int main(int argc, char **argv)
{
    uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : (uint64_t)time(NULL);
    printf("seed %llu\n", (unsigned long long)seed);
    for (kf_backend b = KF_BACKEND_CUDA; b <= KF_BACKEND_CPU; b++)
        test_backend(b, seed);
    return kf_test_done();
}
