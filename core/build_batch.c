/* build_batch.c — several kernel files' C units built by one run of the
 * system compiler into one object: tier opt's batches (opt.c).
 *
 * What a compile of a small kernel costs is mostly the compiler starting
 * and reading the shared prelude (about 95 ms against 11 ms per further
 * kernel in one translation unit), so a batch is one translation unit: the
 * prelude once, then each unit's own code. Each unit's code comes under a
 * #line name of its own ("hk-unit-K.c"), so that the compiler's complaints
 * say which unit they are about; the caller builds those units alone (to
 * report their errors located in their kernel files, as a lone build does)
 * and the rest again as a batch.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build.h"
#include "compiler_cc.h"

/* Most macros a unit's own code may have defined at once. */
#define MAX_OPEN_MACROS 256

typedef struct macros {
  const char *name[MAX_OPEN_MACROS];
  size_t len[MAX_OPEN_MACROS];
  int n;
} macros;

/* The identifier at p (before end) after blanks; its length in *n. */
static const char *ident_at(const char *p, const char *end, size_t *n) {
  while (p < end && (*p == ' ' || *p == '\t')) p++;
  const char *q = p;
  while (q < end && (*q == '_' || (*q >= 'a' && *q <= 'z') ||
                     (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9')))
    q++;
  *n = (size_t)(q - p);
  return p;
}

/* Follows the directive at p (after its '#', the line ending at end): a
 * #define opens a macro, an #undef closes one. 0, or -1 for any other
 * directive, or one the unit's code could leak to the units after it. */
static int directive(const char *p, const char *end, macros *m) {
  size_t n, k;
  const char *word = ident_at(p, end, &k);
  const char *name = ident_at(word + k, end, &n);
  if (!n) return -1;
  if (k == 6 && !memcmp(word, "define", 6)) {
    if (m->n == MAX_OPEN_MACROS) return -1;
    m->name[m->n] = name;
    m->len[m->n++] = n;
    return 0;
  }
  if (k != 5 || memcmp(word, "undef", 5)) return -1;
  for (int i = m->n - 1; i >= 0; i--)
    if (m->len[i] == n && !memcmp(m->name[i], name, n)) {
      m->name[i] = m->name[--m->n];
      m->len[i] = m->len[m->n];
      return 0;
    }
  return -1;
}

/* The unit's own code (its text without the prelude) leaves nothing
 * behind for the units after it in a batch: each macro it defines it
 * undefines again (the emitter's consts and helpers do), and it has no
 * other directive. */
static int self_contained(const char *p, size_t n, macros *m) {
  const char *end = p + n;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *eol = nl ? nl : end;
    const char *q = p;
    while (q < eol && (*q == ' ' || *q == '\t')) q++;
    if (q < eol && *q == '#' && directive(q + 1, eol, m)) return 0;
    p = nl ? nl + 1 : end;
  }
  return 1;
}

int hk__build_mergeable(const hkc_unit *u) {
  size_t off, len, plen;
  const char *prelude = hkc_prelude_text(&plen);
  hkc_unit_prelude(u, &off, &len);
  const char *text = hkc_unit_text(u);
  size_t n = hkc_unit_len(u);
  macros m = {.n = 0};
  return prelude && len && len == plen &&
         memcmp(text + off, prelude, plen) == 0 &&
         self_contained(text, off, &m) &&
         self_contained(text + off + len, n - off - len, &m) && m.n == 0;
}

/* The batch's translation unit: the prelude, then each unit's text around
 * it under its #line name. 0, or -1 when out of memory. */
static int merge(const hkc_unit *const *units, int n, hku_buf *b) {
  size_t plen;
  const char *prelude = hkc_prelude_text(&plen);
  hku_buf_printf(b, "/* A batch of %d kernel files (hk tier opt). */\n", n);
  hku_buf_putn(b, prelude, plen);
  for (int k = 0; k < n; k++) {
    size_t off, len;
    const char *text = hkc_unit_text(units[k]);
    hkc_unit_prelude(units[k], &off, &len);
    hku_buf_printf(b, "\n#line 1 \"hk-unit-%d.c\"\n", k);
    hku_buf_putn(b, text, off);
    hku_buf_putn(b, text + off + len, hkc_unit_len(units[k]) - off - len);
  }
  return b->oom ? -1 : 0;
}

/* Marks in bad the units the compiler's output has errors about ("hk-unit-
 * K.c:LINE:COL: error: ..."); returns how many it marked. */
static int blame(const char *out, int n, char *bad) {
  int marked = 0;
  for (const char *line = out; line && *line;) {
    const char *nl = strchr(line, '\n');
    size_t len = nl ? (size_t)(nl - line) : strlen(line);
    int k;
    char *rest;
    if (!strncmp(line, "hk-unit-", 8) &&
        (k = (int)strtol(line + 8, &rest, 10), rest > line + 8) &&
        !strncmp(rest, ".c:", 3) && k >= 0 && k < n) {
      for (const char *p = rest; p + 6 <= line + len; p++)
        if (!memcmp(p, "error:", 6)) {
          if (!bad[k]) marked++;
          bad[k] = 1;
          break;
        }
    }
    line = nl ? nl + 1 : NULL;
  }
  return marked;
}

int hk__build_batch(const hk_cc_t *cc, const hkc_unit *const *units, int n,
                    const hk_compile_opts_t *o, hk_object_t *out, char *bad,
                    hku_diags *d) {
  HK_ASSERT(n > 0);
  memset(out, 0, sizeof *out);
  memset(bad, 0, (size_t)n);
  const char *path = hkc_file_path(hkc_unit_file(units[0]));
  hku_buf text = HKU_BUF_INIT, msgs = HKU_BUF_INIT;
  int rc;
  if (merge(units, n, &text)) {
    d->oom = 1;
    rc = HK_ENOMEM;
  } else {
    rc = hk__cc_build_text(cc, hku_buf_str(&text), text.len,
                           hk__cc_unit_flags(units[0]), o, path, out, &msgs,
                           d);
  }
  if (rc == HK_ECOMPILE && !blame(hku_buf_str(&msgs), n, bad))
    hku_diag_add(d, HKU_ERROR, path, 0, 0,
                 "the batch of %d kernel files failed: %s", n,
                 msgs.len ? hku_buf_str(&msgs) : "no output");
  hku_buf_free(&text);
  hku_buf_free(&msgs);
  if (rc) {
    free(out->image);
    memset(out, 0, sizeof *out);
  }
  return rc;
}
