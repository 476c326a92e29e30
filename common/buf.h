/* buf.h — a growable text buffer for the code generator and diagnostics. */
#ifndef HKU_BUF_H
#define HKU_BUF_H

#include <stdarg.h>
#include <stddef.h>

/* A NUL-terminated string that grows as text is appended. A failed
 * allocation sets oom and turns every later append into a no-op, so callers
 * check once at the end instead of after every append. */
struct hkc_linemap;

typedef struct hku_buf {
  char *data; /* NULL until the first append */
  size_t len;
  size_t cap;
  int oom;
  /* Emitters only: where author code lands (see emit.h). */
  struct hkc_linemap *map;
  size_t counted; /* bytes scanned for newlines so far */
  unsigned line;  /* 1-based line number at byte `counted` */
} hku_buf;

#define HKU_BUF_INIT {NULL, 0, 0, 0, NULL, 0, 1}

void hku_buf_free(hku_buf *b);
void hku_buf_putn(hku_buf *b, const char *s, size_t n);
void hku_buf_put(hku_buf *b, const char *s);
void hku_buf_putc(hku_buf *b, char c);
void hku_buf_printf(hku_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void hku_buf_vprintf(hku_buf *b, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
/* The text so far ("" when empty); valid until the next append. */
const char *hku_buf_str(const hku_buf *b);
/* Hands the text to the caller (malloc'ed, never NULL unless oom) and
 * empties the buffer. */
char *hku_buf_take(hku_buf *b);

/* strdup that returns NULL on NULL. */
char *hku_strdup(const char *s);
/* A malloc'ed printf. NULL when out of memory. */
char *hku_asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
