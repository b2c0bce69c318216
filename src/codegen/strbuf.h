/* Growable NUL-terminated string for code generation.
 * Out of memory is a sticky flag: every later append is a no-op and the
 * owner checks kf_sb_failed() once at the end (SQLite's style). */
#ifndef KF_STRBUF_H
#define KF_STRBUF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct kf_strbuf {
    char *data;   /* NUL-terminated when len > 0 or after any append; may be NULL when empty */
    size_t len;
    size_t cap;
    bool oom;     /* an allocation failed; contents are truncated */
} kf_strbuf;

#define KF_STRBUF_INIT { NULL, 0, 0, false }

void kf_sb_init(kf_strbuf *b);
void kf_sb_free(kf_strbuf *b);
/* Forget the contents but keep the memory (and clear the OOM flag). */
void kf_sb_reset(kf_strbuf *b);
/* Make room for n more bytes, so that appends up to that size never move
 * the text; false (the OOM flag set) when memory ran out. */
bool kf_sb_reserve(kf_strbuf *b, size_t n);
void kf_sb_putn(kf_strbuf *b, const char *s, size_t n);
void kf_sb_puts(kf_strbuf *b, const char *s);
void kf_sb_putc(kf_strbuf *b, char c);
/* Append the text snprintf would write. */
void kf_sb_printf(kf_strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Append v in decimal, as "%lld" writes it. */
void kf_sb_putint(kf_strbuf *b, long long v);
/* snprintf and vsnprintf, exactly (the same text and return value), made
 * fast for the conversions code generation uses: strings, characters and
 * integers (with a '0' flag and a width) are formatted here, a format with
 * any other conversion by the C library. */
int kf_snprintf(char *dst, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int kf_vsnprintf(char *dst, size_t size, const char *fmt, va_list ap) __attribute__((format(printf, 3, 0)));
/* Append src's contents (src unchanged); an OOM in src carries over. */
void kf_sb_append(kf_strbuf *b, const kf_strbuf *src);
/* Insert src's contents at offset at (<= b->len) of b, as kf_sb_append. */
void kf_sb_insert(kf_strbuf *b, size_t at, const kf_strbuf *src);
static inline bool kf_sb_failed(const kf_strbuf *b) { return b->oom; }
/* The contents as a C string ("" when empty); valid until the next append. */
static inline const char *kf_sb_str(const kf_strbuf *b) { return b->data ? b->data : ""; }
/* Hand the malloc'd string to the caller (NULL on OOM; "" is allocated when
 * empty) and leave b empty. */
char *kf_sb_take(kf_strbuf *b);

#endif /* KF_STRBUF_H */
