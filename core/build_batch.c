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

/* The unit's own code (its text without the prelude) holds no
 * preprocessor directive: a macro it defined would reach the units after
 * it in a batch. */
static int no_directives(const char *p, size_t n) {
  int bol = 1;
  for (size_t i = 0; i < n; i++) {
    char ch = p[i];
    if (ch == '\n') {
      bol = 1;
    } else if (bol && ch == '#') {
      return 0;
    } else if (ch != ' ' && ch != '\t') {
      bol = 0;
    }
  }
  return 1;
}

int hk__build_mergeable(const hkc_unit *u) {
  size_t off, len, plen;
  const char *prelude = hkc_prelude_text(&plen);
  hkc_unit_prelude(u, &off, &len);
  const char *text = hkc_unit_text(u);
  size_t n = hkc_unit_len(u);
  return prelude && len && len == plen &&
         memcmp(text + off, prelude, plen) == 0 &&
         no_directives(text, off) &&
         no_directives(text + off + len, n - off - len);
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
