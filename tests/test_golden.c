/* Golden tests: each golden/NAME.kir is parsed (from tests/, so messages say
 * "golden/NAME.kir") and compared with golden/NAME.out, the printed module,
 * or golden/NAME.err, the error message.  Every valid file also survives
 * the print/parse round trip.  KFUSE_GOLDEN_UPDATE=1 rewrites the expected
 * files from what the parser does now. */
#include "check.h"
#include "roundtrip.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n + 4096 > cap) {
            cap = cap ? cap * 2 : 8192;
            char *nb = realloc(buf, cap + 1);
            if (!nb) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    fclose(f);
    buf[n] = 0;
    *len = n;
    return buf;
}

static bool spit(const char *path, const char *text, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return false;
    bool ok = fwrite(text, 1, len, f) == len;
    return fclose(f) == 0 && ok;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void run_case(const char *base, bool update)
{
    char kir[512], out[512], err[512];
    snprintf(kir, sizeof kir, "golden/%s.kir", base);
    snprintf(out, sizeof out, "golden/%s.out", base);
    snprintf(err, sizeof err, "golden/%s.err", base);

    kf_module *m = NULL;
    kf_status s = kf_module_parse_file(kir, NULL, &m);
    CHECK_MSG(m != NULL, "%s: no module", kir);
    if (!m)
        return;
    char *got;
    size_t gotlen;
    if (s == KF_OK) {
        got = kf_test_module_text(m, &gotlen);
        CHECK_MSG(got != NULL, "%s: print failed", kir);
        char why[4096];
        CHECK_MSG(kf_test_roundtrip(m, why, sizeof why), "%s: round trip: %s", kir, why);
    } else {
        const char *e = kf_module_error(m);
        CHECK_MSG(strncmp(e, kir, strlen(kir)) == 0, "%s: message does not start with the file name: %s", kir, e);
        gotlen = strlen(e) + 1;
        got = malloc(gotlen + 1);
        if (got)
            snprintf(got, gotlen + 1, "%s\n", e);
    }
    kf_module_free(m);
    if (!got)
        return;

    const char *want_path = s == KF_OK ? out : err, *other = s == KF_OK ? err : out;
    if (update) {
        CHECK_MSG(spit(want_path, got, gotlen), "%s: cannot write", want_path);
        unlink(other);
        free(got);
        return;
    }
    size_t wantlen;
    char *want = slurp(want_path, &wantlen);
    if (!want) {
        CHECK_MSG(false, "%s: %s (missing %s; run with KFUSE_GOLDEN_UPDATE=1)\n%s", kir,
                  s == KF_OK ? "parsed" : "failed", want_path, got);
    } else {
        CHECK_MSG(wantlen == gotlen && memcmp(want, got, gotlen) == 0, "%s: output differs from %s\n--- got:\n%s--- want:\n%s",
                  kir, want_path, got, want);
    }
    free(want);
    free(got);
}

int main(void)
{
    const char *u = getenv("KFUSE_GOLDEN_UPDATE");
    bool update = u && *u && strcmp(u, "0") != 0;
    DIR *d = opendir("golden");
    CHECK_MSG(d != NULL, "cannot open golden/ (run from tests/)");
    if (!d)
        return kf_test_done();
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len <= 4 || strcmp(e->d_name + len - 4, ".kir") != 0)
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            names = realloc(names, cap * sizeof *names);
            if (!names)
                return 1;
        }
        names[n] = strndup(e->d_name, len - 4);
        if (!names[n])
            return 1;
        n++;
    }
    closedir(d);
    qsort(names, n, sizeof *names, by_name);
    CHECK_MSG(n >= 30, "only %zu golden cases", n);
    for (size_t i = 0; i < n; i++) {
        run_case(names[i], update);
        free(names[i]);
    }
    free(names);
    printf("%zu golden cases%s\n", n, update ? " (expected files rewritten)" : "");
    return kf_test_done();
}
