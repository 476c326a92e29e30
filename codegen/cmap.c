/* cmap.c — a C compiler's complaints about generated code, reported in the
 * kernel file they come from.
 *
 * Generated code is correct by construction; what fails to compile is the
 * author's code inside it. The emitter's line map says which kernel field
 * and which line of it each generated line holds, so "gen.c:41:13: error:
 * 'z' undeclared" becomes "saxpy.json:9:22: error: body: 'z' undeclared".
 */
#include <stdlib.h>
#include <ctype.h>
#include <string.h>

#include "emit.h"

/* Errors of tcc sometimes name the line of the token after the mistake. */
#define NEAR_LINES 3

/* Parses "NAME:LINE[:COL]: error: MSG"; returns MSG or NULL. */
static const char *parse_error_line(const char *line, size_t len,
                                    unsigned *gen_line, unsigned *gen_col) {
  const char *e = NULL;
  for (const char *p = line; p + 9 <= line + len; p++)
    if (!memcmp(p, ": error: ", 9)) {
      e = p;
      break;
    }
  if (!e) return NULL;
  /* walk back over up to two ":NUMBER" fields */
  unsigned nums[2] = {0, 0};
  int nnums = 0;
  const char *q = e;
  while (nnums < 2 && q > line) {
    const char *d = q;
    while (d > line && d[-1] >= '0' && d[-1] <= '9') d--;
    if (d == q || d == line || d[-1] != ':') break;
    nums[nnums++] = (unsigned)strtoul(d, NULL, 10);
    q = d - 1;
  }
  *gen_line = nnums == 2 ? nums[1] : nnums == 1 ? nums[0] : 0;
  *gen_col = nnums == 2 ? nums[0] : 0;
  return e + 9;
}

/* The kernel file position of the first use of sym in any author code of
 * f; 0 when none. */
static int find_symbol(const hkc_file *f, const char *sym, int *line,
                       int *col, const char **field) {
  for (int i = 0; i < f->nkernels; i++) {
    const hkc_kernel *k = &f->kernels[i];
    const hkc_src *srcs[] = {&k->body,     &k->map, &k->combine, &k->identity,
                             &k->finalize, &k->cpu, &k->cuda};
    for (size_t s = 0; s < sizeof srcs / sizeof *srcs; s++) {
      if (!srcs[s]->text) continue;
      long at = hkc_code_find(srcs[s], sym);
      if (at < 0) continue;
      hkc_src_pos(f->doc, srcs[s], (size_t)at, line, col);
      *field = srcs[s]->field;
      return 1;
    }
  }
  return 0;
}

/* With no column from the compiler (tcc gives lines only): the offset, in
 * src, of the first identifier the message quotes ('name') as a whole word
 * on the line that starts at off; else off, the line's start. */
static size_t quoted_on_line(const hkc_src *src, size_t off, const char *msg,
                             int mlen) {
  const char *q = memchr(msg, '\'', (size_t)mlen);
  const char *q2 = q ? memchr(q + 1, '\'', (size_t)(msg + mlen - q - 1)) : NULL;
  size_t nl = q2 ? (size_t)(q2 - q - 1) : 0;
  if (!nl) return off;
  for (size_t i = 0; i < nl; i++)
    if (!(isalnum((unsigned char)q[1 + i]) || q[1 + i] == '_')) return off;
  const char *t = src->text;
  for (size_t i = off; i + nl <= src->len && t[i] != '\n'; i++)
    if (!memcmp(t + i, q + 1, nl) &&
        (i == 0 || !(isalnum((unsigned char)t[i - 1]) || t[i - 1] == '_')) &&
        (i + nl == src->len ||
         !(isalnum((unsigned char)t[i + nl]) || t[i + nl] == '_')))
      return i;
  return off;
}

/* For a subscript of a value (tcc: "pointer expected", gcc and clang:
 * "subscripted value is ...") in elementwise or reduction code, where a
 * buffer parameter is its element: what to write instead; else "". */
static const char *subscript_hint(const hkc_file *f, const hkc_src *src,
                                  const char *msg, int mlen) {
  const char *a = "pointer expected", *b = "subscripted value";
  if (!memmem(msg, (size_t)mlen, a, strlen(a)) &&
      !memmem(msg, (size_t)mlen, b, strlen(b)))
    return "";
  for (int i = 0; i < f->nkernels; i++) {
    const hkc_kernel *k = &f->kernels[i];
    if ((k->kind == HK_KIND_ELEMENTWISE && src == &k->body) ||
        (k->kind == HK_KIND_REDUCTION &&
         (src == &k->map || src == &k->finalize)))
      return "; in elementwise and reduction code a buffer parameter is "
             "its element at i (x, not x[i]): reading other elements needs "
             "a rows, grid or raw kernel";
  }
  return "";
}

int hkc_report_compiler_output(const char *out, const hkc_linemap *m,
                               const hkc_file *f, const char *compiler,
                               hku_diags *d) {
  int reported = 0;
  for (const char *line = out; line && *line;) {
    const char *nl = strchr(line, '\n');
    size_t len = nl ? (size_t)(nl - line) : strlen(line);
    unsigned gl, gc;
    const char *msg = parse_error_line(line, len, &gl, &gc);
    if (msg) {
      int mlen = (int)(len - (size_t)(msg - line));
      const char *u = strstr(msg, "undefined symbol '");
      int fl = 0, fc = 0;
      const char *field = NULL;
      if (u && u < line + len) {
        char sym[128];
        const char *s0 = u + 18, *s1 = memchr(s0, '\'', (size_t)(line + len - s0));
        size_t sl = s1 ? (size_t)(s1 - s0) : 0;
        if (sl >= sizeof sym) sl = sizeof sym - 1;
        memcpy(sym, s0, sl);
        sym[sl] = '\0';
        if (find_symbol(f, sym, &fl, &fc, &field))
          hku_diag_add(d, HKU_ERROR, f->path, fl, fc,
                       "%s: uses '%s', which is not available to kernel code "
                       "(only the C99 <math.h> functions are)",
                       field, sym);
        else
          hku_diag_add(d, HKU_ERROR, f->path, 0, 0,
                       "the generated code needs '%s', which hk does not "
                       "provide (%s); this is a bug in hk",
                       sym, compiler);
        reported++;
      } else {
        const hkc_line_entry *e = m ? hkc_linemap_find(m, gl) : NULL;
        int near = 0;
        if (!e && m && gl) /* the nearest author line before it */
          for (unsigned back = 1; back <= NEAR_LINES && back < gl && !e; back++)
            if ((e = hkc_linemap_find(m, gl - back))) near = 1;
        if (e) {
          size_t off = e->src_off;
          if (!near && gc >= e->gen_col) off += gc - e->gen_col;
          if (off > e->src->len) off = e->src->len;
          if (!near && !gc) off = quoted_on_line(e->src, off, msg, mlen);
          hkc_src_pos(f->doc, e->src, off, &fl, &fc);
          hku_diag_add(d, HKU_ERROR, f->path, fl, fc, "%s: %.*s (%s%s)%s",
                       e->src->field, mlen, msg, compiler,
                       near ? ", at or near this line" : "",
                       subscript_hint(f, e->src, msg, mlen));
        } else {
          hku_diag_add(d, HKU_ERROR, f->path, 0, 0,
                       "generated code failed to compile (%s, generated line "
                       "%u): %.*s; this is a bug in hk",
                       compiler, gl, mlen, msg);
        }
        reported++;
      }
    }
    line = nl ? nl + 1 : NULL;
  }
  return reported;
}
