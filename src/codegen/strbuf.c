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

/* The slow half of reserve: grow (doubling) to hold need bytes. */
static bool grow(kf_strbuf *b, size_t n)
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

/* Room for n more bytes plus the NUL; false (flag set) when out of memory. */
static inline bool reserve(kf_strbuf *b, size_t n)
{
    return (n < b->cap - b->len && !b->oom) || grow(b, n);
}

bool kf_sb_reserve(kf_strbuf *b, size_t n) { return reserve(b, n); }

void kf_sb_putn(kf_strbuf *b, const char *s, size_t n)
{
    if (!reserve(b, n))
        return;
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = 0;
}

/* Copy s up to its end or the first stop character to dst from offset
 * *n on, as far as size allows, counting every character in *n; returns
 * where s stopped.  (Pieces are short: a loop beats memcpy's dispatch.) */
static const char *copy_until(char *dst, size_t size, size_t *n, const char *s, char stop)
{
    size_t i = *n;
    for (; *s && *s != stop; s++, i++)
        if (i < size)
            dst[i] = *s;
    *n = i;
    return s;
}

void kf_sb_puts(kf_strbuf *b, const char *s)
{
    if (b->oom)
        return;
    /* one pass when it fits, as short strings nearly always do */
    size_t room = b->cap - b->len, n = 0;
    copy_until(room ? b->data + b->len : NULL, room, &n, s, 0);
    if (n < room) {
        b->len += n;
        b->data[b->len] = 0;
    } else {
        kf_sb_putn(b, s, n);
    }
}

void kf_sb_putc(kf_strbuf *b, char c)
{
    if (!reserve(b, 1))
        return;
    b->data[b->len++] = c;
    b->data[b->len] = 0;
}

/* -- Formatting --------------------------------------------------------------- *
 * Code generation formats thousands of short pieces per module, nearly all
 * strings and small integers, and the C library's vsnprintf sets up a
 * stream for each call.  The functions here format the common conversions
 * themselves; a format with anything else (floats, a precision, flags
 * other than '0', a width on a string) goes to vsnprintf whole, so the
 * text is always exactly what vsnprintf writes. */

/* Digits of v in base 10 or 16 (lowercase), written backwards ending at
 * end; returns the first digit.  The bases are constants in the loops, so
 * that no division instruction runs. */
static char *digits(char *end, unsigned long long v, bool hex)
{
    if (hex)
        do {
            *--end = "0123456789abcdef"[v & 15];
            v >>= 4;
        } while (v);
    else
        do {
            *--end = (char)('0' + v % 10);
            v /= 10;
        } while (v);
    return end;
}

/* One conversion of the subset: [0][width < 32][l|ll|z](d|i|u|x), c, s, %. */
typedef struct spec {
    bool zero;        /* pad with '0' (else ' ') */
    int width;
    int len;          /* 0 int, 1 long, 2 long long, 3 size_t */
    char conv;
    int n;            /* characters of the spec after the '%' */
} spec;

/* Parse the spec at f (just after '%'); false when it is outside the subset. */
static bool parse_spec(const char *f, spec *s)
{
    const char *p = f;
    *s = (spec){ false, 0, 0, *f, 1 };
    if (*p == 's' || *p == 'd')   /* nearly all of them */
        return true;
    if (*p == '0') {
        s->zero = true;
        p++;
    }
    while (*p >= '0' && *p <= '9' && s->width < 32)
        s->width = s->width * 10 + (*p++ - '0');
    if (*p == 'l') {
        s->len = p[1] == 'l' ? 2 : 1;
        p += s->len;
    } else if (*p == 'z') {
        s->len = 3;
        p++;
    }
    s->conv = *p;
    s->n = (int)(p - f) + 1;
    if (*p == 'd' || *p == 'i' || *p == 'u' || *p == 'x')
        return s->width < 32;
    return p == f && (*p == 'c' || *p == 's' || *p == '%');   /* no flag, width or length */
}

/* The text of integer conversion s ending at end (room for 48 bytes before
 * it); returns its start. */
static char *number(char *end, const spec *s, va_list *ap)
{
    unsigned long long u;
    bool neg = false;
    if (s->conv == 'd' || s->conv == 'i') {
        long long v = s->len == 0 ? va_arg(*ap, int) : s->len == 1 ? va_arg(*ap, long)
                    : s->len == 2 ? va_arg(*ap, long long) : (long long)va_arg(*ap, size_t);
        neg = v < 0;
        u = neg ? 0ull - (unsigned long long)v : (unsigned long long)v;
    } else {
        u = s->len == 0 ? va_arg(*ap, unsigned) : s->len == 1 ? va_arg(*ap, unsigned long)
          : s->len == 2 ? va_arg(*ap, unsigned long long) : va_arg(*ap, size_t);
    }
    char *p = digits(end, u, s->conv == 'x');
    int pad = s->width - (int)(end - p) - neg;   /* width < 32: it all fits */
    for (; s->zero && pad > 0; pad--)
        *--p = '0';
    if (neg)
        *--p = '-';
    for (; pad > 0; pad--)
        *--p = ' ';
    return p;
}

/* vsnprintf for the subset: writes at most size bytes (NUL included) to
 * dst and returns the length of the whole text, or -1 when fmt has a
 * conversion outside the subset. */
static int fast_vsnprintf(char *dst, size_t size, const char *fmt, va_list *ap)
{
    size_t n = 0;
    const char *p = fmt;
    for (;;) {
        char num[48];
        spec s;
        p = copy_until(dst, size, &n, p, '%');
        if (!*p)
            break;
        if (!parse_spec(p + 1, &s))
            return -1;
        p += 1 + s.n;
        const char *piece = num;
        num[sizeof num - 1] = 0;
        if (s.conv == 's') {
            piece = va_arg(*ap, const char *);
            if (!piece)
                piece = "(null)";   /* as glibc writes it */
        } else if (s.conv == 'c') {
            num[0] = (char)va_arg(*ap, int);
            if (!num[0]) {   /* a NUL character is written too */
                if (n < size)
                    dst[n] = 0;
                n++;
            }
            num[1] = 0;
        } else if (s.conv == '%') {
            piece = "%";
        } else {
            piece = number(num + sizeof num - 1, &s, ap);
        }
        copy_until(dst, size, &n, piece, 0);
    }
    if (n > INT32_MAX)
        return -1;
    if (size)
        dst[n < size ? n : size - 1] = 0;
    return (int)n;
}

int kf_vsnprintf(char *dst, size_t size, const char *fmt, va_list ap)
{
    va_list aq;
    va_copy(aq, ap);
    int n = fast_vsnprintf(dst, size, fmt, &aq);
    va_end(aq);
    return n >= 0 ? n : vsnprintf(dst, size, fmt, ap);
}

int kf_snprintf(char *dst, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = kf_vsnprintf(dst, size, fmt, ap);
    va_end(ap);
    return n;
}

void kf_sb_printf(kf_strbuf *b, const char *fmt, ...)
{
    if (b->oom)
        return;
    /* format into the room there is; when it did not fit, make room and
     * format again */
    va_list ap;
    va_start(ap, fmt);
    size_t room = b->cap - b->len;
    char *dst = room ? b->data + b->len : NULL;
    int n = kf_vsnprintf(dst, room, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->oom = true;
        return;
    }
    if ((size_t)n >= room) {
        if (room)
            b->data[b->len] = 0;   /* the cut text written above is not b's */
        if (!reserve(b, (size_t)n))
            return;
        va_start(ap, fmt);
        kf_vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    b->len += (size_t)n;
}

void kf_sb_putint(kf_strbuf *b, long long v)
{
    char buf[24], *end = buf + sizeof buf - 1;
    *end = 0;
    char *p = digits(end, v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v, false);
    if (v < 0)
        *--p = '-';
    kf_sb_puts(b, p);
}

void kf_sb_insert(kf_strbuf *b, size_t at, const kf_strbuf *src)
{
    if (src->oom || at > b->len)
        b->oom = true;
    if (!reserve(b, src->len))
        return;
    memmove(b->data + at + src->len, b->data + at, b->len - at + 1);
    memcpy(b->data + at, kf_sb_str(src), src->len);
    b->len += src->len;
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
