/* buf.c — growable text buffer (see buf.h). */
#include "buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void hku_buf_free(hku_buf *b) {
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
  b->oom = 0;
  b->counted = 0;
  b->line = 1;
}

/* Makes room for extra more bytes plus the NUL; 0 on success. */
static int reserve(hku_buf *b, size_t extra) {
  if (b->oom) return -1;
  if (extra > ((size_t)-1) / 2 - b->len) goto fail;
  size_t need = b->len + extra + 1;
  if (need <= b->cap) return 0;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < need) cap *= 2;
  char *p = realloc(b->data, cap);
  if (!p) goto fail;
  b->data = p;
  b->cap = cap;
  return 0;
fail:
  b->oom = 1;
  return -1;
}

void hku_buf_putn(hku_buf *b, const char *s, size_t n) {
  if (reserve(b, n)) return;
  memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = '\0';
}

void hku_buf_put(hku_buf *b, const char *s) { hku_buf_putn(b, s, strlen(s)); }

void hku_buf_putc(hku_buf *b, char c) { hku_buf_putn(b, &c, 1); }

void hku_buf_vprintf(hku_buf *b, const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n < 0) {
    b->oom = 1;
    return;
  }
  if (reserve(b, (size_t)n)) return;
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  b->len += (size_t)n;
}

void hku_buf_printf(hku_buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  hku_buf_vprintf(b, fmt, ap);
  va_end(ap);
}

const char *hku_buf_str(const hku_buf *b) { return b->data ? b->data : ""; }

char *hku_buf_take(hku_buf *b) {
  char *s = b->oom ? NULL : (b->data ? b->data : hku_strdup(""));
  if (b->oom) free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
  b->oom = 0;
  b->counted = 0;
  b->line = 1;
  return s;
}

char *hku_strdup(const char *s) {
  if (!s) return NULL;
  size_t n = strlen(s) + 1;
  char *p = malloc(n);
  if (p) memcpy(p, s, n);
  return p;
}

char *hku_asprintf(const char *fmt, ...) {
  hku_buf b = HKU_BUF_INIT;
  va_list ap;
  va_start(ap, fmt);
  hku_buf_vprintf(&b, fmt, ap);
  va_end(ap);
  return hku_buf_take(&b);
}
