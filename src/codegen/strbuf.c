/* Growable string with a sticky out-of-memory flag. */
#include "strbuf.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void kf_sb_init(kf_strbuf *b) { *b = (kf_strbuf)KF_STRBUF_INIT; }

void kf_sb_free(kf_strbuf *b)
{
    free(b->data);
    kf_sb_init(b);
}

void kf_sb_reset(kf_strbuf *b)
{
    b->len = 0;
    b->oom = false;
    if (b->data)
        b->data[0] = 0;
}

/* Room for n more bytes plus the NUL; false (flag set) when out of memory. */
static bool reserve(kf_strbuf *b, size_t n)
{
    if (b->oom)
        return false;
    if (n > SIZE_MAX / 2 - b->len) {
        b->oom = true;
        return false;
    }
    size_t need = b->len + n + 1;
    if (need <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap *= 2;
    char *d = realloc(b->data, cap);
    if (!d) {
        b->oom = true;
        return false;
    }
    b->data = d;
    b->cap = cap;
    return true;
}

void kf_sb_putn(kf_strbuf *b, const char *s, size_t n)
{
    if (!reserve(b, n))
        return;
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = 0;
}

void kf_sb_puts(kf_strbuf *b, const char *s) { kf_sb_putn(b, s, strlen(s)); }
void kf_sb_putc(kf_strbuf *b, char c) { kf_sb_putn(b, &c, 1); }

void kf_sb_printf(kf_strbuf *b, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->oom = true;
        return;
    }
    if ((size_t)n < sizeof small) {
        kf_sb_putn(b, small, (size_t)n);
        return;
    }
    if (!reserve(b, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void kf_sb_append(kf_strbuf *b, const kf_strbuf *src)
{
    if (src->oom)
        b->oom = true;
    kf_sb_putn(b, kf_sb_str(src), src->len);
}

char *kf_sb_take(kf_strbuf *b)
{
    char *s = NULL;
    if (!b->oom) {
        if (!b->data)
            reserve(b, 0);
        if (!b->oom && b->data) {
            b->data[b->len] = 0;
            s = b->data;
            kf_sb_init(b);
            return s;
        }
    }
    kf_sb_free(b);
    return NULL;
}
