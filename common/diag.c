/* diag.c — located diagnostics (see diag.h). */
#include "diag.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void hku_diags_free(hku_diags *d) {
  for (size_t i = 0; i < d->n; i++) {
    free(d->v[i].path);
    free(d->v[i].msg);
  }
  free(d->v);
  memset(d, 0, sizeof *d);
}

/* 1 when d holds an error at path, line, col with message msg. */
static int has_error(const hku_diags *d, const char *path, int line, int col,
                     const char *msg) {
  for (size_t i = 0; i < d->n; i++) {
    const hku_diag *g = &d->v[i];
    if (g->sev == HKU_ERROR && g->line == line && g->col == col &&
        !strcmp(g->msg, msg) && !strcmp(g->path, path ? path : "<input>"))
      return 1;
  }
  return 0;
}

void hku_diag_add(hku_diags *d, hku_severity sev, const char *path, int line,
                  int col, const char *fmt, ...) {
  if (!d) return; /* the caller wants no words (fsutil.h) */
  /* A note belongs to the error before it: drop it with that error. */
  if (sev != HKU_ERROR && d->dup) return;
  if (sev == HKU_ERROR && d->nerrors >= HKU_DIAGS_MAX) {
    d->nerrors++;
    return;
  }
  hku_buf b = HKU_BUF_INIT;
  va_list ap;
  va_start(ap, fmt);
  hku_buf_vprintf(&b, fmt, ap);
  va_end(ap);
  /* the same error again (each instance of a kernel compiles the same
   * body: x = 1 in an in buffer fails for f32 and f64 alike): once */
  if (sev == HKU_ERROR) {
    d->dup = b.data && has_error(d, path, line, col, b.data);
    if (d->dup) {
      hku_buf_free(&b);
      return;
    }
    d->nerrors++;
  }
  if (d->nerrors > HKU_DIAGS_MAX) {
    hku_buf_free(&b);
    return;
  }
  if (d->n == d->cap) {
    size_t cap = d->cap ? d->cap * 2 : 8;
    hku_diag *v = realloc(d->v, cap * sizeof *v);
    if (!v) {
      d->oom = 1;
      hku_buf_free(&b);
      return;
    }
    d->v = v;
    d->cap = cap;
  }
  hku_diag *g = &d->v[d->n];
  g->sev = sev;
  g->path = hku_strdup(path ? path : "<input>");
  g->line = line;
  g->col = col;
  g->msg = hku_buf_take(&b);
  if (!g->path || !g->msg) {
    free(g->path);
    free(g->msg);
    d->oom = 1;
    return;
  }
  d->n++;
}

static void format_one(const hku_diag *g, hku_buf *out) {
  const char *sev = g->sev == HKU_ERROR ? "error" : "note";
  if (g->line > 0)
    hku_buf_printf(out, "%s:%d:%d: %s: %s", g->path, g->line, g->col, sev,
                   g->msg);
  else
    hku_buf_printf(out, "%s: %s: %s", g->path, sev, g->msg);
}

void hku_diags_format(const hku_diags *d, hku_buf *out) {
  for (size_t i = 0; i < d->n; i++) {
    format_one(&d->v[i], out);
    hku_buf_putc(out, '\n');
  }
  if (d->nerrors > HKU_DIAGS_MAX && d->n > 0)
    hku_buf_printf(out, "%s: note: %zu more errors not shown\n",
                   d->v[d->n - 1].path, d->nerrors - HKU_DIAGS_MAX);
  if (d->oom) hku_buf_put(out, "hk: note: out of memory while reporting\n");
}

void hku_diags_first(const hku_diags *d, hku_buf *out) {
  for (size_t i = 0; i < d->n; i++)
    if (d->v[i].sev == HKU_ERROR) {
      format_one(&d->v[i], out);
      return;
    }
  if (d->oom) hku_buf_put(out, "out of memory");
}

const char *hku_diags_words(const hku_diags *d, const char *fallback) {
  for (size_t i = 0; i < d->n; i++)
    if (d->v[i].sev == HKU_ERROR) return d->v[i].msg;
  if (d->n) return d->v[0].msg;
  return d->oom ? "out of memory" : fallback;
}

void hku_diags_move(hku_diags *dst, hku_diags *src) {
  for (size_t i = 0; i < src->n; i++) {
    hku_diag *g = &src->v[i];
    hku_diag_add(dst, g->sev, g->path, g->line, g->col, "%s", g->msg);
  }
  if (src->nerrors > src->n) dst->nerrors += src->nerrors - src->n;
  dst->oom |= src->oom;
  hku_diags_free(src);
}
