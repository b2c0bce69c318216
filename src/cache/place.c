/* Where the cache lives and whether it may be trusted: settings from the
 * context options and the environment (read with secure_getenv, so a
 * setuid program ignores them), and the checks on the directory and its
 * files.  Trust rule (as ssh's for its files): owned by this user or by
 * root, not a symlink, not writable by group or others.  Root-owned is
 * allowed so that a read-only cache shipped under /opt can be used. */
#include "cache.h"

#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* -- Settings ------------------------------------------------------------------------ */

bool kf_cache_parse_size(const char *s, uint64_t *out)
{
    if (!s || !*s)
        return false;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *s == '-')
        return false;
    while (*end == ' ')
        end++;
    unsigned shift = 0;
    switch (*end) {
    case 0: break;
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    case 't': case 'T': shift = 40; end++; break;
    case 'b': case 'B': break;
    default: return false;
    }
    if (shift && (*end == 'i' || *end == 'I'))
        end++;
    if (*end == 'b' || *end == 'B')
        end++;
    if (*end || v == 0 || (shift && v > (UINT64_MAX >> shift)))
        return false;
    *out = (uint64_t)v << shift;
    return true;
}

static const char *env(const char *name)
{
    const char *v = secure_getenv(name);
    return v && *v ? v : NULL;
}

/* dir = a + b, false when it does not fit. */
static bool join(char *dir, size_t cap, const char *a, const char *b)
{
    size_t n = strlen(a);
    while (n > 1 && a[n - 1] == '/')
        n--;
    int w = snprintf(dir, cap, "%.*s%s", (int)n, a, b);
    return w > 0 && (size_t)w < cap;
}

static void problem(kf_cache_settings *out, const char *fmt, const char *arg)
{
    if (out->problem[0])
        return;
    snprintf(out->problem, sizeof out->problem, fmt, arg);
}

void kf_cache_settings_resolve(const char *dir, kf_cache_mode mode, uint64_t max_bytes, int must_hit,
                               kf_cache_settings *out)
{
    memset(out, 0, sizeof *out);
    const char *v;
    if (mode == KF_CACHE_RW || mode == KF_CACHE_RO || mode == KF_CACHE_OFF) {
        out->mode = mode;
    } else if ((v = env("KFUSE_CACHE"))) {
        if (strcmp(v, "rw") == 0)
            out->mode = KF_CACHE_RW;
        else if (strcmp(v, "ro") == 0)
            out->mode = KF_CACHE_RO;
        else if (strcmp(v, "off") == 0)
            out->mode = KF_CACHE_OFF;
        else {
            /* a setting kfuse cannot read never writes anywhere */
            out->mode = KF_CACHE_OFF;
            problem(out, "KFUSE_CACHE='%.64s' is not rw, ro or off: the disk cache is off", v);
        }
    } else {
        out->mode = KF_CACHE_RW;
    }

    if (must_hit != 0) {
        out->must_hit = must_hit > 0;
    } else if ((v = env("KFUSE_CACHE_MUST_HIT"))) {
        if (!strcmp(v, "0") || !strcmp(v, "no") || !strcmp(v, "false") || !strcmp(v, "off"))
            out->must_hit = false;
        else if (!strcmp(v, "1") || !strcmp(v, "yes") || !strcmp(v, "true") || !strcmp(v, "on"))
            out->must_hit = true;
        else {
            out->must_hit = true;
            problem(out, "KFUSE_CACHE_MUST_HIT='%.64s' is not 0 or 1: taken as 1", v);
        }
    }

    out->max_bytes = KF_CACHE_DEFAULT_MAX;
    if (max_bytes) {
        out->max_bytes = max_bytes;
    } else if ((v = env("KFUSE_CACHE_MAX_SIZE")) && !kf_cache_parse_size(v, &out->max_bytes)) {
        out->max_bytes = KF_CACHE_DEFAULT_MAX;
        problem(out, "KFUSE_CACHE_MAX_SIZE='%.64s' is not a size (1073741824, 512M, 2G): using 1G", v);
    }

    out->busy_ms = KF_CACHE_DEFAULT_BUSY_MS;
    if ((v = env("KFUSE_CACHE_BUSY_MS"))) {
        char *end = NULL;
        long ms = strtol(v, &end, 10);
        if (*end || ms < 1 || ms > 3600000)
            problem(out, "KFUSE_CACHE_BUSY_MS='%.64s' is not a number of milliseconds: using 5000", v);
        else
            out->busy_ms = (int)ms;
    }

    if ((v = env("KFUSE_PLAN_CACHE"))) {
        char *end = NULL;
        long n = strtol(v, &end, 10);
        if (*end || n < 1 || n > 1000000)
            problem(out, "KFUSE_PLAN_CACHE='%.64s' is not a number of programs: using the default", v);
        else
            out->memo_cap = (uint32_t)n;
    }

    bool ok = true;
    if (dir && *dir) {
        out->dir_from = KF_CACHE_FROM_OPTIONS;
        ok = join(out->dir, sizeof out->dir, dir, "");
    } else if ((v = env("KFUSE_CACHE_DIR"))) {
        out->dir_from = KF_CACHE_FROM_ENV;
        ok = join(out->dir, sizeof out->dir, v, "");
    } else if ((v = env("XDG_CACHE_HOME")) && v[0] == '/') { /* XDG: a relative value is ignored */
        out->dir_from = KF_CACHE_FROM_XDG;
        ok = join(out->dir, sizeof out->dir, v, "/kfuse");
    } else {
        out->dir_from = KF_CACHE_FROM_HOME;
        const char *home = env("HOME");
        char buf[4096];
        struct passwd pw, *res = NULL;
        if (!home && getpwuid_r(geteuid(), &pw, buf, sizeof buf, &res) == 0 && res && res->pw_dir &&
            res->pw_dir[0] == '/')
            home = res->pw_dir;
        if (home)
            ok = join(out->dir, sizeof out->dir, home, "/.cache/kfuse");
        else
            problem(out, "%sno cache directory: neither KFUSE_CACHE_DIR, XDG_CACHE_HOME nor HOME is set", "");
    }
    if (!ok) {
        out->dir[0] = 0;
        problem(out, "%sthe cache directory's path is too long", "");
    }
}

/* -- Trust checks -------------------------------------------------------------------- */

/* path without trailing slashes (so that lstat does not follow a symlink
 * named "link/"). */
static bool trimmed(char *buf, size_t cap, const char *path)
{
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        n--;
    if (n == 0 || n >= cap)
        return false;
    memcpy(buf, path, n);
    buf[n] = 0;
    return true;
}

/* mkdir -p with mode 0700 for every directory made. */
static int make_dirs(char *path)
{
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        int rc = mkdir(path, 0700);
        int e = errno;
        *p = '/';
        if (rc != 0 && e != EEXIST)
            return -1;
    }
    return mkdir(path, 0700) == 0 || errno == EEXIST ? 0 : -1;
}

static kf_status trust(const char *what, const char *path, const struct stat *st, bool dir, bool *writable,
                       char *msg, size_t msglen)
{
    uid_t me = geteuid();
    if (S_ISLNK(st->st_mode)) {
        snprintf(msg, msglen, "%s '%s' is a symbolic link", what, path);
        return KF_ERR_IO;
    }
    if (dir ? !S_ISDIR(st->st_mode) : !S_ISREG(st->st_mode)) {
        snprintf(msg, msglen, "%s '%s' is not a %s", what, path, dir ? "directory" : "regular file");
        return KF_ERR_IO;
    }
    if (st->st_uid != me && st->st_uid != 0) {
        snprintf(msg, msglen, "%s '%s' belongs to uid %u, not to this user (uid %u)", what, path,
                 (unsigned)st->st_uid, (unsigned)me);
        return KF_ERR_IO;
    }
    if (st->st_mode & (S_IWGRP | S_IWOTH)) {
        snprintf(msg, msglen, "%s '%s' is writable by %s (mode %04o)", what, path,
                 (st->st_mode & S_IWOTH) ? "everyone" : "its group", (unsigned)(st->st_mode & 07777));
        return KF_ERR_IO;
    }
    /* the owner's w bit decides even for root, who passes access() always:
     * a cache made read-only stays read-only */
    *writable = st->st_uid == me && (st->st_mode & S_IWUSR) && access(path, W_OK) == 0;
    return KF_OK;
}

kf_status kf_cache_dir_check(const char *dir, bool create, bool *writable, char *msg, size_t msglen)
{
    char path[1024];
    *writable = false;
    if (!dir || !trimmed(path, sizeof path, dir)) {
        snprintf(msg, msglen, "bad cache directory path '%s'", dir ? dir : "(null)");
        return KF_ERR_IO;
    }
    struct stat st;
    if (lstat(path, &st) != 0) {
        int e = errno;
        if (e != ENOENT || !create) {
            snprintf(msg, msglen, "cache directory '%s': %s", path, strerror(e));
            return KF_ERR_IO;
        }
        if (make_dirs(path) != 0 || lstat(path, &st) != 0) {
            snprintf(msg, msglen, "cannot create cache directory '%s': %s", path, strerror(errno));
            return KF_ERR_IO;
        }
    }
    return trust("cache directory", path, &st, true, writable, msg, msglen);
}

kf_status kf_cache_file_check(const char *path, bool *exists, bool *writable, char *msg, size_t msglen)
{
    struct stat st;
    *exists = *writable = false;
    if (lstat(path, &st) != 0) {
        if (errno == ENOENT)
            return KF_OK;
        snprintf(msg, msglen, "cache file '%s': %s", path, strerror(errno));
        return KF_ERR_IO;
    }
    *exists = true;
    return trust("cache file", path, &st, false, writable, msg, msglen);
}
