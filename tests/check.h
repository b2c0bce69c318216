/* Minimal test harness: CHECK counts, reports file:line, and kf_test_done()
 * prints the closing line "N passed, N failed" and returns the exit code. */
#ifndef KF_CHECK_H
#define KF_CHECK_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static int kf_test_pass, kf_test_fail;

#define CHECK(cond)                                                              \
    do {                                                                         \
        if (cond) {                                                              \
            kf_test_pass++;                                                      \
        } else {                                                                 \
            kf_test_fail++;                                                      \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                        \
    } while (0)

#define CHECK_MSG(cond, ...)                                                     \
    do {                                                                         \
        if (cond) {                                                              \
            kf_test_pass++;                                                      \
        } else {                                                                 \
            kf_test_fail++;                                                      \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                        \
            fputc('\n', stderr);                                                 \
        }                                                                        \
    } while (0)

#define CHECK_STATUS(expr, want)                                                 \
    do {                                                                         \
        kf_status s_ = (expr);                                                   \
        CHECK_MSG(s_ == (want), "got %s, want %s", kf_status_string(s_), kf_status_string(want)); \
    } while (0)

static inline bool kf_test_contains(const char *hay, const char *needle) { return hay && strstr(hay, needle); }
static inline const char *kf_test_str(const char *s) { return s ? s : "(null)"; }

#define CHECK_CONTAINS(hay, needle)                                              \
    CHECK_MSG(kf_test_contains((hay), (needle)), "'%s' does not contain '%s'", kf_test_str(hay), (needle))

static inline int kf_test_done(void)
{
    printf("%d passed, %d failed\n", kf_test_pass, kf_test_fail);
    return kf_test_fail ? 1 : 0;
}

#endif
