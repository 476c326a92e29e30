/* buf.h — a growable text buffer for the code generator and diagnostics. */
#ifndef HKC_BUF_H
#define HKC_BUF_H

#include <stdarg.h>
#include <stddef.h>

/* A NUL-terminated string that grows as text is appended. A failed
 * allocation sets oom and turns every later append into a no-op, so callers
 * check once at the end instead of after every append. */
struct hkc_linemap;

typedef struct hkc_buf {
  char *data; /* NULL until the first append */
  size_t len;
  size_t cap;
  int oom;
  /* Emitters only: where author code lands (see emit.h). */
  struct hkc_linemap *map;
  size_t counted; /* bytes scanned for newlines so far */
  unsigned line;  /* 1-based line number at byte `counted` */
} hkc_buf;

#define HKC_BUF_INIT {NULL, 0, 0, 0, NULL, 0, 1}

void hkc_buf_free(hkc_buf *b);
void hkc_buf_putn(hkc_buf *b, const char *s, size_t n);
void hkc_buf_put(hkc_buf *b, const char *s);
void hkc_buf_putc(hkc_buf *b, char c);
void hkc_buf_printf(hkc_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void hkc_buf_vprintf(hkc_buf *b, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
/* The text so far ("" when empty); valid until the next append. */
const char *hkc_buf_str(const hkc_buf *b);
/* Hands the text to the caller (malloc'ed, never NULL unless oom) and
 * empties the buffer. */
char *hkc_buf_take(hkc_buf *b);

/* strdup that returns NULL on NULL. */
char *hkc_strdup(const char *s);
/* A malloc'ed printf. NULL when out of memory. */
char *hkc_asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
