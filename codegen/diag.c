/* diag.c — located diagnostics (see diag.h). */
#include "diag.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void hkc_diags_free(hkc_diags *d) {
  for (size_t i = 0; i < d->n; i++) {
    free(d->v[i].path);
    free(d->v[i].msg);
  }
  free(d->v);
  memset(d, 0, sizeof *d);
}

void hkc_diag_add(hkc_diags *d, hkc_severity sev, const char *path, int line,
                  int col, const char *fmt, ...) {
  if (sev == HKC_ERROR) d->nerrors++;
  /* A note belongs to the error before it: drop it with that error. */
  if (d->nerrors > HKC_DIAGS_MAX) return;
  if (d->n == d->cap) {
    size_t cap = d->cap ? d->cap * 2 : 8;
    hkc_diag *v = realloc(d->v, cap * sizeof *v);
    if (!v) {
      d->oom = 1;
      return;
    }
    d->v = v;
    d->cap = cap;
  }
  hkc_buf b = HKC_BUF_INIT;
  va_list ap;
  va_start(ap, fmt);
  hkc_buf_vprintf(&b, fmt, ap);
  va_end(ap);
  hkc_diag *g = &d->v[d->n];
  g->sev = sev;
  g->path = hkc_strdup(path ? path : "<input>");
  g->line = line;
  g->col = col;
  g->msg = hkc_buf_take(&b);
  if (!g->path || !g->msg) {
    free(g->path);
    free(g->msg);
    d->oom = 1;
    return;
  }
  d->n++;
}

static void format_one(const hkc_diag *g, hkc_buf *out) {
  const char *sev = g->sev == HKC_ERROR ? "error" : "note";
  if (g->line > 0)
    hkc_buf_printf(out, "%s:%d:%d: %s: %s", g->path, g->line, g->col, sev,
                   g->msg);
  else
    hkc_buf_printf(out, "%s: %s: %s", g->path, sev, g->msg);
}

void hkc_diags_format(const hkc_diags *d, hkc_buf *out) {
  for (size_t i = 0; i < d->n; i++) {
    format_one(&d->v[i], out);
    hkc_buf_putc(out, '\n');
  }
  if (d->nerrors > HKC_DIAGS_MAX && d->n > 0)
    hkc_buf_printf(out, "%s: note: %zu more errors not shown\n",
                   d->v[d->n - 1].path, d->nerrors - HKC_DIAGS_MAX);
  if (d->oom) hkc_buf_put(out, "hk: note: out of memory while reporting\n");
}

void hkc_diags_first(const hkc_diags *d, hkc_buf *out) {
  for (size_t i = 0; i < d->n; i++)
    if (d->v[i].sev == HKC_ERROR) {
      format_one(&d->v[i], out);
      return;
    }
  if (d->oom) hkc_buf_put(out, "out of memory");
}

void hkc_diags_move(hkc_diags *dst, hkc_diags *src) {
  for (size_t i = 0; i < src->n; i++) {
    hkc_diag *g = &src->v[i];
    hkc_diag_add(dst, g->sev, g->path, g->line, g->col, "%s", g->msg);
  }
  if (src->nerrors > src->n) dst->nerrors += src->nerrors - src->n;
  dst->oom |= src->oom;
  hkc_diags_free(src);
}
