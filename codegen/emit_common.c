/* emit_common.c — what the C and CUDA emitters share: line maps, author code,
 * parameter lists, the raw kernel function, and the files → kernels →
 * instances walk (emit.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "codegen.h"
#include "emit.h"
#include "internal.h"

/* ---- Text -------------------------------------------------------------------- */

void hkc_emit_c_string(hku_buf *o, const char *s) {
  hku_buf_putc(o, '"');
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\')
      hku_buf_printf(o, "\\%c", *p);
    else if (*p == '\n')
      hku_buf_put(o, "\\n");
    else if (*p < 32 || *p == 127 || *p == '?')
      hku_buf_printf(o, "\\%03o", *p); /* '?' too: no trigraphs */
    else
      hku_buf_putc(o, (char)*p);
  }
  hku_buf_putc(o, '"');
}

void hkc_put_comment_text(hku_buf *o, const char *s) {
  for (; *s; s++) {
    if (s[0] == '*' && s[1] == '/')
      hku_buf_put(o, "* ");
    else if (*s == '\n' || *s == '\r')
      hku_buf_putc(o, ' ');
    else
      hku_buf_putc(o, *s);
  }
}

/* ---- Line maps --------------------------------------------------------------- */

void hkc_linemap_free(hkc_linemap *m) {
  free(m->v);
  m->v = NULL;
  m->n = m->cap = 0;
}

const hkc_line_entry *hkc_linemap_find(const hkc_linemap *m, unsigned gen_line) {
  size_t lo = 0, hi = m->n; /* entries are in increasing gen_line order */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (m->v[mid].gen_line < gen_line)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < m->n && m->v[lo].gen_line == gen_line ? &m->v[lo] : NULL;
}

void hkc_linemap_start(hku_buf *o, hkc_linemap *map) {
  o->map = map;
  o->counted = o->len;
  o->line = 1;
  for (size_t i = 0; i < o->len; i++)
    if (o->data[i] == '\n') o->line++;
}

/* Makes room for one more entry in m. HK_OK, or HK_ENOMEM (m unchanged). */
static int linemap_grow(hkc_linemap *m) {
  if (m->n < m->cap) return HK_OK;
  size_t cap = m->cap ? m->cap * 2 : 64;
  hkc_line_entry *v = realloc(m->v, cap * sizeof *v);
  if (!v) return HK_ENOMEM;
  m->v = v;
  m->cap = cap;
  return HK_OK;
}

void hkc_linemap_note(hku_buf *o, const hkc_src *src, size_t src_off,
                      unsigned col) {
  hkc_linemap *m = o->map;
  if (!m || o->oom) return;
  for (; o->counted < o->len; o->counted++)
    if (o->data[o->counted] == '\n') o->line++;
  if (linemap_grow(m) != HK_OK) {
    o->oom = 1; /* the buffer's one sticky flag: the unit fails whole */
    return;
  }
  m->v[m->n++] = (hkc_line_entry){o->line, col, src, src_off};
}

/* The column the next character appended to o will have (1-based). */
static unsigned next_col(const hku_buf *o) {
  size_t i = o->len;
  while (i > 0 && o->data[i - 1] != '\n') i--;
  return (unsigned)(o->len - i) + 1;
}

/* ---- Author code ------------------------------------------------------------- */

/* Appends the n characters at t (offset at in s's text), with the `int`
 * of each widened loop counter (offsets w[0..nw)) written as hk_, the
 * prelude's int64_t: the same length, so columns still map. */
static void put_widened(hku_buf *o, const char *t, size_t n, size_t at,
                        const size_t *w, size_t nw) {
  size_t done = 0;
  for (size_t i = 0; i < nw; i++) {
    if (w[i] < at + done || w[i] + 3 > at + n) continue;
    size_t k = w[i] - at;
    hku_buf_printf(o, "%.*s", (int)(k - done), t + done);
    hku_buf_put(o, "hk_");
    done = k + 3;
  }
  hku_buf_printf(o, "%.*s", (int)(n - done), t + done);
}

void hkc_put_code(hku_buf *o, const hkc_src *s, int ind) {
  const char *t = s->text, *e = t + s->len;
  size_t *w = NULL, nw = hkc_code_int_counters(s, &w);
  if (nw == (size_t)-1) {
    o->oom = 1;
    return;
  }
  while (t < e) {
    const char *nl = memchr(t, '\n', (size_t)(e - t));
    size_t n = nl ? (size_t)(nl - t) : (size_t)(e - t);
    while (n && (t[n - 1] == ' ' || t[n - 1] == '\t' || t[n - 1] == '\r')) n--;
    if (n) {
      hkc_linemap_note(o, s, (size_t)(t - s->text), (unsigned)ind + 1);
      hku_buf_printf(o, "%*s", ind, "");
      put_widened(o, t, n, (size_t)(t - s->text), w, nw);
    }
    hku_buf_putc(o, '\n');
    t += (nl ? (size_t)(nl - t) + 1 : (size_t)(e - t));
  }
  free(w);
}

void hkc_put_expr(hku_buf *o, const hkc_src *s) {
  char *e = hkc_expr_oneline(s);
  if (!e) {
    o->oom = 1;
    return;
  }
  hkc_linemap_note(o, s, 0, next_col(o) + 1);
  hku_buf_printf(o, "(%s)", e);
  free(e);
}

void hkc_put_oneline(hku_buf *o, const hkc_src *s) {
  char *e = hkc_expr_oneline(s);
  if (!e) {
    o->oom = 1;
    return;
  }
  hkc_linemap_note(o, s, 0, next_col(o));
  hku_buf_put(o, e);
  free(e);
}

/* ---- Parameters -------------------------------------------------------------- */

const char *hkc_param_ctype(const hkc_instance *in, const hkc_param *p) {
  return hkc_ctype(hkc_param_type(in, p));
}

const char *hkc_param_stype(const hkc_instance *in, const hkc_param *p) {
  return hkc_stype(hkc_param_type(in, p));
}

const char *hkc_scalar_pre(const hkc_instance *in, const hkc_param *p) {
  (void)in;
  return hkc_is_buffer(p) ? "" : "hk_s_";
}

/* Every scalar, converted or not, is a const local: tcc drops the const of
 * a function parameter, so that `alpha = 0` in a body compiled on tier
 * jit (and changed the value for the elements after, on that thread
 * only), where gcc refuses it; a local const it refuses too
 * (compiler_tcc.c). */
static void put_scalar_vars(hku_buf *o, const hkc_instance *in, int ind,
                            int mutable_plain) {
  const hkc_kernel *k = in->k;
  for (int i = 0; i < k->nparams; i++) {
    const hkc_param *p = &k->params[i];
    hk_dtype_t t = hkc_param_type(in, p);
    if (hkc_is_buffer(p)) continue;
    int cst = !(mutable_plain && !hkc_dtype_converts(t));
    hku_buf_printf(o, "%*s%s%s %s = %shk_s_%s%s;\n", ind, "",
                   cst ? "const " : "", hkc_ctype(t), p->name,
                   hkc_load_pre(t), p->name, hkc_conv_post(t));
  }
}

void hkc_put_scalar_locals(hku_buf *o, const hkc_instance *in, int ind) {
  put_scalar_vars(o, in, ind, 0);
}

int hkc_is_buffer(const hkc_param *p) { return p->role != HK_ROLE_SCALAR; }

void hkc_put_holders(hku_buf *o, const hkc_instance *in,
                     const hkc_src *const *srcs, int nsrcs, int ind) {
  const hkc_kernel *k = in->k;
  for (int h = 0; h < k->nholders; h++) {
    char id[2] = {k->holders[h].letter, 0};
    int used = 0;
    for (int s = 0; s < nsrcs && !used; s++)
      used = srcs[s]->text && hkc_code_uses(srcs[s], id);
    if (used)
      hku_buf_printf(o, "%*stypedef %s %s;\n", ind, "",
                     hkc_ctype(in->bind[id[0] - 'A']), id);
  }
}

void hkc_put_param(hku_buf *o, const hkc_instance *in, const hkc_param *p,
                   const char *ptr_prefix, int const_scalar) {
  if (!hkc_is_buffer(p))
    hku_buf_printf(o, "%s%s %s%s", const_scalar ? "const " : "",
                   hkc_param_stype(in, p), hkc_scalar_pre(in, p), p->name);
  else
    hku_buf_printf(o, "%s%s *%s%s", p->role == HK_ROLE_IN ? "const " : "",
                   hkc_param_stype(in, p), ptr_prefix, p->name);
}

void hkc_put_arg(hku_buf *o, const hkc_instance *in, int i) {
  const hkc_param *p = &in->k->params[i];
  if (!hkc_is_buffer(p))
    hku_buf_printf(o, "*(const %s *)hk_args[%d]", hkc_param_stype(in, p), i);
  else
    hku_buf_printf(o, "(%s%s *)hk_args[%d]",
                   p->role == HK_ROLE_IN ? "const " : "", hkc_param_stype(in, p),
                   i);
}

void hkc_put_params(hku_buf *o, const hkc_instance *in,
                    const char *ptr_prefix, int const_scalar, int skip_out) {
  const hkc_kernel *k = in->k;
  for (int i = 0; i < k->nparams; i++) {
    if (skip_out && hkc_is_result(&k->params[i])) continue;
    hkc_put_param(o, in, &k->params[i], ptr_prefix, const_scalar);
    hku_buf_put(o, ", ");
  }
}

void hkc_put_voids(hku_buf *o, const hkc_instance *in, unsigned roles,
                   int ind) {
  const hkc_kernel *k = in->k;
  for (int i = 0; i < k->nparams; i++)
    if (roles & HKC_ROLE_BIT(k->params[i].role))
      hku_buf_printf(o, "%*s(void)%s;\n", ind, "", k->params[i].name);
}

/* ---- Reductions ------------------------------------------------------------- */

const char *hkc_acc_ctype(const hkc_instance *in, char buf[HKC_ACC_CTYPE_MAX]) {
  if (in->k->acc_form != HKC_ACC_STRUCT) return hkc_ctype(hkc_acc_type(in));
  snprintf(buf, HKC_ACC_CTYPE_MAX, "hk_acc__%s", in->name);
  return buf;
}

void hkc_put_acc_struct(hku_buf *o, const hkc_instance *in) {
  const hkc_kernel *k = in->k;
  if (k->acc_form != HKC_ACC_STRUCT) return;
  hku_buf_printf(o, "typedef struct hk_acc__%s {\n", in->name);
  for (int i = 0; i < k->nacc_fields; i++)
    hku_buf_printf(o, "    %s %s;\n",
                   hkc_ctype(hkc_acc_field_type(in, &k->acc_fields[i])),
                   k->acc_fields[i].name);
  /* the core sizes partials by hkc_acc_size(): the compiler must agree */
  hku_buf_printf(o,
                 "} hk_acc__%s;\n"
                 "typedef char hk_acc_size__%s[sizeof(hk_acc__%s) == %zu ? 1 : "
                 "-1];\n\n",
                 in->name, in->name, in->name, hkc_acc_size(in));
}

void hkc_put_combine_fn(hku_buf *o, const hkc_instance *in, const char *qual) {
  char cb[HKC_ACC_CTYPE_MAX];
  const char *acc = hkc_acc_ctype(in, cb);
  const hkc_src *srcs[] = {&in->k->combine};
  if (in->k->acc_form == HKC_ACC_STRUCT) {
    /* statements that update a from b */
    hku_buf_printf(o, "%s%s hk_combine__%s(%s a, const %s b)\n{\n", qual, acc,
                   in->name, acc, acc);
    hkc_put_holders(o, in, srcs, 1, 4);
    hku_buf_put(o, "    (void)b;\n    {\n");
    hkc_put_code(o, &in->k->combine, 8);
    hku_buf_put(o, "    }\n    return a;\n}\n\n");
    return;
  }
  hku_buf_printf(o, "%s%s hk_combine__%s(const %s a, const %s b)\n{\n", qual,
                 acc, in->name, acc, acc);
  hkc_put_holders(o, in, srcs, 1, 4);
  hku_buf_printf(o, "    return (%s)", acc);
  hkc_put_expr(o, &in->k->combine);
  hku_buf_put(o, ";\n}\n\n");
}

/* "hk_r.v = (float)(EXPR);" for each field of a struct accumulator, with
 * each field's identity (map 0) or map (map 1) expression. */
static void put_field_values(hku_buf *o, const hkc_instance *in, int map) {
  const hkc_kernel *k = in->k;
  for (int i = 0; i < k->nacc_fields; i++) {
    const hkc_acc_field *f = &k->acc_fields[i];
    hku_buf_printf(o, "    hk_r.%s = (%s)", f->name,
                   hkc_ctype(hkc_acc_field_type(in, f)));
    hkc_put_expr(o, map ? &f->map : &f->identity);
    hku_buf_put(o, ";\n");
  }
}

/* typedefs of the placeholders that the fields' expressions use. */
static void put_field_holders(hku_buf *o, const hkc_instance *in, int map) {
  const hkc_kernel *k = in->k;
  const hkc_src *srcs[HK_REDUCE_ACC_MAX];
  int n = 0;
  for (int i = 0; i < k->nacc_fields && n < (int)HK_REDUCE_ACC_MAX; i++)
    srcs[n++] = map ? &k->acc_fields[i].map : &k->acc_fields[i].identity;
  hkc_put_holders(o, in, srcs, n, 4);
}

void hkc_put_identity_fn(hku_buf *o, const hkc_instance *in, const char *qual) {
  const hkc_kernel *k = in->k;
  char cb[HKC_ACC_CTYPE_MAX];
  const char *acc = hkc_acc_ctype(in, cb);
  int first = 1;
  hku_buf_printf(o, "%s%s hk_identity__%s(", qual, acc, in->name);
  for (int i = 0; i < k->nparams; i++)
    if (k->params[i].role == HK_ROLE_SCALAR) {
      hku_buf_put(o, first ? "" : ", ");
      hkc_put_param(o, in, &k->params[i], "", 1);
      first = 0;
    }
  hku_buf_printf(o, "%s)\n{\n", first ? "void" : "");
  hkc_put_scalar_locals(o, in, 4);
  put_field_holders(o, in, 0);
  hkc_put_voids(o, in, HKC_ROLE_BIT(HK_ROLE_SCALAR), 4);
  hku_buf_printf(o, "    %s hk_r;\n", acc);
  put_field_values(o, in, 0);
  hku_buf_put(o, "    return hk_r;\n}\n\n");
}

void hkc_put_identity_call(hku_buf *o, const hkc_instance *in) {
  const hkc_kernel *k = in->k;
  char cb[HKC_ACC_CTYPE_MAX];
  if (k->acc_form != HKC_ACC_STRUCT) {
    hku_buf_printf(o, "(%s)", hkc_acc_ctype(in, cb));
    hkc_put_expr(o, &k->identity);
    return;
  }
  int first = 1;
  hku_buf_printf(o, "hk_identity__%s(", in->name);
  for (int i = 0; i < k->nparams; i++)
    if (k->params[i].role == HK_ROLE_SCALAR) { /* passed as stored */
      hku_buf_printf(o, "%s%s%s", first ? "" : ", ",
                     hkc_scalar_pre(in, &k->params[i]), k->params[i].name);
      first = 0;
    }
  hku_buf_put(o, ")");
}

void hkc_put_map_fn(hku_buf *o, const hkc_instance *in, const char *qual) {
  const hkc_kernel *k = in->k;
  char cb[HKC_ACC_CTYPE_MAX];
  const char *acc = hkc_acc_ctype(in, cb);
  const unsigned args = HKC_ROLE_BIT(HK_ROLE_IN) | HKC_ROLE_BIT(HK_ROLE_SCALAR);
  hku_buf_printf(o, "%s%s hk_map__%s(", qual, acc, in->name);
  for (int i = 0; i < k->nparams; i++) {
    const hkc_param *p = &k->params[i];
    if (args & HKC_ROLE_BIT(p->role))
      hku_buf_printf(o, "const %s %s, ", hkc_param_ctype(in, p), p->name);
  }
  hku_buf_put(o, "const size_t i, const size_t n)\n{\n");
  if (k->acc_form != HKC_ACC_STRUCT) {
    const hkc_src *srcs[] = {&k->map};
    hkc_put_holders(o, in, srcs, 1, 4);
    hkc_put_voids(o, in, args, 4);
    hku_buf_printf(o, "    (void)i;\n    (void)n;\n    return (%s)", acc);
    hkc_put_expr(o, &k->map);
    hku_buf_put(o, ";\n}\n\n");
    return;
  }
  put_field_holders(o, in, 1);
  hkc_put_voids(o, in, args, 4);
  hku_buf_printf(o, "    (void)i;\n    (void)n;\n    %s hk_r;\n", acc);
  put_field_values(o, in, 1);
  hku_buf_put(o, "    return hk_r;\n}\n\n");
}

void hkc_put_map_call(hku_buf *o, const hkc_instance *in, const char *pre,
                      const char *post, const char *at) {
  const hkc_kernel *k = in->k;
  hku_buf_printf(o, "hk_map__%s(", in->name);
  for (int i = 0; i < k->nparams; i++) {
    const hkc_param *p = &k->params[i];
    if (p->role == HK_ROLE_SCALAR)
      hku_buf_printf(o, "%s, ", p->name);
    else if (p->role == HK_ROLE_IN && !*pre) /* a local, converted */
      hku_buf_printf(o, "%s%s, ", p->name, post);
    else if (p->role == HK_ROLE_IN) /* the stored element */
      hku_buf_printf(o, "%s%s%s%s%s, ", hkc_load_pre(hkc_param_type(in, p)),
                     pre, p->name, post, hkc_conv_post(hkc_param_type(in, p)));
  }
  hku_buf_printf(o, "%s, n)", at);
}

void hkc_put_result_locals(hku_buf *o, const hkc_instance *in, const char *pre,
                           const char *post, int ind) {
  const hkc_kernel *k = in->k;
  for (int i = 0; i < k->nparams; i++) {
    const hkc_param *p = &k->params[i];
    hk_dtype_t t = hkc_param_type(in, p);
    if (p->role == HK_ROLE_OUT)
      hku_buf_printf(o, "%*s%s %s = 0;\n", ind, "", hkc_param_ctype(in, p),
                     p->name);
    else if (p->role == HK_ROLE_INOUT)
      hku_buf_printf(o, "%*s%s %s = %s%s%s%s%s;\n", ind, "",
                     hkc_param_ctype(in, p), p->name, hkc_load_pre(t), pre,
                     p->name, post, hkc_conv_post(t));
  }
  hkc_put_voids(o, in, HKC_ROLE_BIT(HK_ROLE_OUT) | HKC_ROLE_BIT(HK_ROLE_INOUT),
                ind);
}

void hkc_put_result_stores(hku_buf *o, const hkc_instance *in, const char *pre,
                           const char *post, int ind) {
  const hkc_kernel *k = in->k;
  for (int i = 0; i < k->nparams; i++) {
    const hkc_param *p = &k->params[i];
    hk_dtype_t t = hkc_param_type(in, p);
    if (hkc_is_result(p))
      hku_buf_printf(o, "%*s%s%s%s = %s%s%s;\n", ind, "", pre, p->name, post,
                     hkc_store_pre(t), p->name, hkc_conv_post(t));
  }
}

/* ---- Raw kernels ------------------------------------------------------------- */

void hkc_put_raw_function(hku_buf *o, const hkc_instance *in,
                          const char *head, const hkc_src *body) {
  const hkc_src *srcs[] = {body};
  hku_buf_printf(o, "%s%s(", head, in->name);
  hkc_put_params(o, in, "", 0, 0);
  hku_buf_put(o, "size_t n)\n{\n");
  hkc_put_holders(o, in, srcs, 1, 4);
  /* a raw body runs once: its scalars are its own variables, as a C
   * function's parameters are (but the converted 16-bit ones) */
  put_scalar_vars(o, in, 4, 1);
  hkc_put_voids(o, in, HKC_ROLES_ALL, 4);
  hku_buf_put(o, "    (void)n;\n    {\n");
  hkc_put_code(o, body, 8);
  hku_buf_put(o, "    }\n}\n\n");
}

/* ---- The walk ---------------------------------------------------------------- */

void hkc_each_instance(hkc_file *const *files, int nfiles, unsigned target,
                       hkc_instance_fn fn, hku_buf *o, void *arg) {
  HK_ASSERT(nfiles >= 0 && fn);
  for (int f = 0; f < nfiles; f++)
    for (int i = 0; i < files[f]->nkernels; i++) {
      const hkc_kernel *k = &files[f]->kernels[i];
      for (int j = 0; j < k->ninst; j++)
        if (hkc_instance_targets(&k->inst[j]) & target)
          fn(o, files[f], &k->inst[j], arg);
    }
}

typedef struct emit_walk {
  const hkc_emitter *e;
  hkc_emit_mode mode;
  size_t *marks; /* where each instance starts, or NULL */
  int n;         /* instances so far */
} emit_walk;

/* One instance: its banner, its kind's code, then what every kind gets. */
static void emit_one(hku_buf *o, const hkc_file *f, const hkc_instance *in,
                     void *arg) {
  emit_walk *w = arg;
  const hkc_kernel *k = in->k;
  if (w->marks) w->marks[w->n] = o->len;
  w->n++;
  hku_buf_printf(o, "/* ---- %s: kernel \"%s\" (%s)", in->name, k->name,
                 hk_kind_name(k->kind));
  if (w->e->banner_names_file) {
    hku_buf_put(o, " from ");
    hkc_put_comment_text(o, f->path);
  }
  hku_buf_put(o, " ---- */\n\n");
  hkc_put_scope_open(o, in, w->e->target == HK_TARGET_CUDA);
  if (k->kind == HK_KIND_ELEMENTWISE)
    w->e->elementwise(o, in, w->mode);
  else if (k->kind == HK_KIND_REDUCTION)
    w->e->reduction(o, in, w->mode);
  else if (k->kind == HK_KIND_ROWS)
    w->e->rows(o, in, w->mode);
  else if (k->kind == HK_KIND_GRID)
    w->e->grid(o, in, w->mode);
  else
    w->e->raw(o, in, w->mode);
  if (w->e->every) w->e->every(o, in, w->mode);
  hkc_put_scope_close(o, in);
}

int hkc_emit_instances(hkc_file *const *files, int nfiles,
                       hkc_emit_mode mode, const hkc_emitter *e, hku_buf *o,
                       size_t *marks) {
  emit_walk w = {e, mode, marks, 0};
  hkc_each_instance(files, nfiles, e->target, emit_one, o, &w);
  if (marks) marks[w.n] = o->len;
  return w.n;
}
