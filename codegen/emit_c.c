/* emit_c.c — kernel instances to C (see emit.h and core/abi.h).
 *
 * The shapes the C takes, per kind, chosen for what gcc -O3 does with them:
 *   elementwise  a loop over [begin, end) that loads each buffer element
 *                into a local named after its parameter, runs the body in a
 *                do { } while (0) (so break/continue end the element), and
 *                stores out/inout locals back. HK_IVDEP tells the compiler
 *                iterations are independent, so it vectorizes without
 *                runtime alias checks and in-place calls stay correct.
 *   reduction    a block is reduced into hkc_reduce_lanes() independent
 *                accumulators (vector registers after SLP vectorization),
 *                combined in a fixed tree, then the block's tail in order;
 *                blocks are merged left to right. The order never depends
 *                on the compiler or the thread count.
 *   raw          the author's body as the body of a static function.
 * Integer overflow wraps and floating point is not contracted: generated
 * code is built with -fwrapv -ffp-contract=off everywhere (tcc behaves so),
 * so jit, opt and stdlib results agree.
 */
#include <stdlib.h>
#include <string.h>

#include "emit.h"

int hkc_reduce_lanes(size_t acc_size) { return acc_size >= 8 ? 8 : 16; }

/* ---- Helpers ----------------------------------------------------------------- */

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

static const char *dtype_enum(hk_dtype_t t) {
  static const char *const e[HK_DTYPE_COUNT] = {
      "HK_DTYPE_INVALID", "HK_F32", "HK_F64", "HK_I8",  "HK_I16", "HK_I32",
      "HK_I64",           "HK_U8",  "HK_U16", "HK_U32", "HK_U64"};
  return (unsigned)t < HK_DTYPE_COUNT ? e[t] : e[0];
}

/* Appends text for use inside a C comment: no comment end can slip in. */
static void put_comment_text(hku_buf *o, const char *s) {
  for (; *s; s++) {
    if (s[0] == '*' && s[1] == '/')
      hku_buf_put(o, "* ");
    else if (*s == '\n' || *s == '\r')
      hku_buf_putc(o, ' ');
    else
      hku_buf_putc(o, *s);
  }
}

/* Appends the author's code, each line indented by ind spaces. */
/* ---- Line maps -------------------------------------------------------------- */

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

void hkc_linemap_note(hku_buf *o, const hkc_src *src, size_t src_off,
                      unsigned col) {
  hkc_linemap *m = o->map;
  if (!m || o->oom) return;
  for (; o->counted < o->len; o->counted++)
    if (o->data[o->counted] == '\n') o->line++;
  if (m->n == m->cap) {
    size_t cap = m->cap ? m->cap * 2 : 64;
    hkc_line_entry *v = realloc(m->v, cap * sizeof *v);
    if (!v) {
      o->oom = 1;
      return;
    }
    m->v = v;
    m->cap = cap;
  }
  m->v[m->n++] = (hkc_line_entry){o->line, col, src, src_off};
}

/* The column the next character appended to o will have (1-based). */
static unsigned next_col(const hku_buf *o) {
  size_t i = o->len;
  while (i > 0 && o->data[i - 1] != '\n') i--;
  return (unsigned)(o->len - i) + 1;
}

void hkc_put_code(hku_buf *o, const hkc_src *s, int ind) {
  const char *t = s->text, *e = t + s->len;
  while (t < e) {
    const char *nl = memchr(t, '\n', (size_t)(e - t));
    size_t n = nl ? (size_t)(nl - t) : (size_t)(e - t);
    while (n && (t[n - 1] == ' ' || t[n - 1] == '\t' || t[n - 1] == '\r')) n--;
    if (n) {
      hkc_linemap_note(o, s, (size_t)(t - s->text), (unsigned)ind + 1);
      hku_buf_printf(o, "%*s%.*s", ind, "", (int)n, t);
    }
    hku_buf_putc(o, '\n');
    t += (nl ? (size_t)(nl - t) + 1 : (size_t)(e - t));
  }
}

/* An expression on one line, in parentheses. */
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

#define ct hkc_param_ctype
#define is_buffer hkc_is_buffer

const char *hkc_param_ctype(const hkc_instance *in, const hkc_param *p) {
  return hkc_ctype(hkc_param_type(in, p));
}

int hkc_is_buffer(const hkc_param *p) { return p->role != HK_ROLE_SCALAR; }

/* Declares the placeholder typedefs the code uses ("typedef float T;"). */
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

/* "const float *hk_p_x" / "float alpha": a parameter of a loop function. */
void hkc_put_param(hku_buf *o, const hkc_instance *in, const hkc_param *p,
                   const char *ptr_prefix, int const_scalar) {
  if (!is_buffer(p))
    hku_buf_printf(o, "%s%s %s", const_scalar ? "const " : "", ct(in, p),
                   p->name);
  else
    hku_buf_printf(o, "%s%s *%s%s", p->role == HK_ROLE_IN ? "const " : "",
                   ct(in, p), ptr_prefix, p->name);
}

/* "*(const float *)hk_args[0]" / "(float *)hk_args[2]": parameter i taken
 * from the uniform argument array. */
static void put_arg(hku_buf *o, const hkc_instance *in, const hkc_param *p,
                    int i) {
  if (!is_buffer(p))
    hku_buf_printf(o, "*(const %s *)hk_args[%d]", ct(in, p), i);
  else
    hku_buf_printf(o, "(%s%s *)hk_args[%d]", p->role == HK_ROLE_IN ? "const " : "",
                   ct(in, p), i);
}

static void put_args_call(hku_buf *o, const hkc_instance *in, unsigned skip_out) {
  const hkc_kernel *k = in->k;
  int first = 1;
  for (int i = 0; i < k->nparams; i++) {
    if (skip_out && k->params[i].role == HK_ROLE_OUT) continue;
    hku_buf_put(o, first ? "" : ", ");
    put_arg(o, in, &k->params[i], i);
    first = 0;
  }
}

/* The typed public function's parameter list (stdlib). */
static void put_typed_params(hku_buf *o, const hkc_instance *in) {
  const hkc_kernel *k = in->k;
  for (int i = 0; i < k->nparams; i++) {
    hkc_put_param(o, in, &k->params[i], "", 0);
    hku_buf_put(o, ", ");
  }
  hku_buf_put(o, "size_t n");
}

void hkc_emit_typed_proto(const hkc_instance *in, hku_buf *o) {
  hku_buf_printf(o, "HK_API void hk_%s(", in->name);
  put_typed_params(o, in);
  hku_buf_put(o, ")");
}

/* void *const hk_args[N] = {...}: the typed parameters as an argument array. */
static void put_args_array(hku_buf *o, const hkc_instance *in, int ind) {
  const hkc_kernel *k = in->k;
  hku_buf_printf(o, "%*svoid *const hk_args[%d] = {", ind, "", k->nparams);
  for (int i = 0; i < k->nparams; i++) {
    const hkc_param *p = &k->params[i];
    hku_buf_printf(o, "%s(void *)%s%s", i ? ", " : "", is_buffer(p) ? "" : "&",
                   p->name);
  }
  hku_buf_put(o, "};\n");
}

static unsigned flags_of(const hkc_kernel *k) { return hkc_is_heavy(k) ? 1u : 0u; }

/* ---- elementwise --------------------------------------------------------------- */

static void emit_elementwise(hku_buf *o, const hkc_instance *in,
                             hkc_emit_mode mode, const char *link) {
  const hkc_kernel *k = in->k;
  const char *nm = in->name;
  const hkc_src *srcs[] = {&k->body};

  hku_buf_printf(o, "HK_INLINE void hk_loop__%s(", nm);
  for (int i = 0; i < k->nparams; i++) {
    hkc_put_param(o, in, &k->params[i], "hk_p_", 1);
    hku_buf_put(o, ", ");
  }
  hku_buf_put(o, "size_t n, size_t hk_begin, size_t hk_end)\n{\n");
  hkc_put_holders(o, in, srcs, 1, 4);
  for (int i = 0; i < k->nparams; i++)
    if (!is_buffer(&k->params[i]))
      hku_buf_printf(o, "    (void)%s;\n", k->params[i].name);
  hku_buf_put(o, "    (void)n;\n    HK_IVDEP\n");
  hku_buf_put(o, "    for (size_t i = hk_begin; i < hk_end; ++i) {\n");
  for (int i = 0; i < k->nparams; i++) {
    const hkc_param *p = &k->params[i];
    if (p->role == HK_ROLE_IN)
      hku_buf_printf(o, "        const %s %s = hk_p_%s[i];\n", ct(in, p),
                     p->name, p->name);
    else if (p->role == HK_ROLE_INOUT)
      hku_buf_printf(o, "        %s %s = hk_p_%s[i];\n", ct(in, p), p->name,
                     p->name);
    else if (p->role == HK_ROLE_OUT)
      hku_buf_printf(o, "        %s %s = 0;\n", ct(in, p), p->name);
  }
  for (int i = 0; i < k->nparams; i++)
    if (is_buffer(&k->params[i]))
      hku_buf_printf(o, "        (void)%s;\n", k->params[i].name);
  hku_buf_put(o, "        do {\n");
  hkc_put_code(o, &k->body, 12);
  hku_buf_put(o, "        } while (0);\n");
  for (int i = 0; i < k->nparams; i++) {
    const hkc_param *p = &k->params[i];
    if (p->role == HK_ROLE_OUT || p->role == HK_ROLE_INOUT)
      hku_buf_printf(o, "        hk_p_%s[i] = %s;\n", p->name, p->name);
  }
  hku_buf_put(o, "    }\n}\n\n");

  hku_buf_printf(o,
                 "%svoid hk_range__%s(void *const *hk_args, size_t n, size_t "
                 "hk_begin, size_t hk_end, void *hk_partial)\n{\n"
                 "    (void)hk_partial;\n    hk_loop__%s(",
                 link, nm, nm);
  put_args_call(o, in, 0);
  hku_buf_put(o, ", n, hk_begin, hk_end);\n}\n\n");

  if (mode == HKC_EMIT_STDLIB) {
    unsigned fl = flags_of(k);
    hkc_emit_typed_proto(in, o);
    hku_buf_put(o, ";\n");
    hkc_emit_typed_proto(in, o);
    hku_buf_printf(o, "\n{\n    if (n >= hk__par_min[%u]) {\n", fl);
    put_args_array(o, in, 8);
    hku_buf_printf(o,
                   "        hk__par_elementwise(hk_range__%s, hk_args, n, %uu);\n"
                   "        return;\n    }\n    hk_loop__%s(",
                   nm, fl, nm);
    for (int i = 0; i < k->nparams; i++)
      hku_buf_printf(o, "%s, ", k->params[i].name);
    hku_buf_put(o, "n, 0, n);\n}\n\n");
  }
}

/* ---- reduction --------------------------------------------------------------------- */

/* The locals of element i: "const float x = hk_p_x[i];" for each in. */
static void put_element_locals(hku_buf *o, const hkc_instance *in, int ind) {
  const hkc_kernel *k = in->k;
  for (int i = 0; i < k->nparams; i++) {
    const hkc_param *p = &k->params[i];
    if (p->role == HK_ROLE_IN)
      hku_buf_printf(o, "%*sconst %s %s = hk_p_%s[i];\n", ind, "", ct(in, p),
                     p->name, p->name);
  }
  for (int i = 0; i < k->nparams; i++)
    if (k->params[i].role == HK_ROLE_IN)
      hku_buf_printf(o, "%*s(void)%s;\n", ind, "", k->params[i].name);
}

/* Parameters of the part function: every in buffer and scalar. */
static void put_part_params(hku_buf *o, const hkc_instance *in) {
  const hkc_kernel *k = in->k;
  for (int i = 0; i < k->nparams; i++) {
    if (k->params[i].role == HK_ROLE_OUT) continue;
    hkc_put_param(o, in, &k->params[i], "hk_p_", 1);
    hku_buf_put(o, ", ");
  }
}

static void put_scalar_params(hku_buf *o, const hkc_instance *in) {
  const hkc_kernel *k = in->k;
  for (int i = 0; i < k->nparams; i++)
    if (k->params[i].role == HK_ROLE_SCALAR)
      hku_buf_printf(o, ", const %s %s", ct(in, &k->params[i]),
                     k->params[i].name);
}

static void put_scalar_voids(hku_buf *o, const hkc_instance *in, int ind) {
  const hkc_kernel *k = in->k;
  for (int i = 0; i < k->nparams; i++)
    if (k->params[i].role == HK_ROLE_SCALAR)
      hku_buf_printf(o, "%*s(void)%s;\n", ind, "", k->params[i].name);
}

static int out_index(const hkc_kernel *k) {
  for (int i = 0; i < k->nparams; i++)
    if (k->params[i].role == HK_ROLE_OUT) return i;
  return -1;
}

static void emit_reduction(hku_buf *o, const hkc_instance *in,
                           hkc_emit_mode mode, const char *link) {
  const hkc_kernel *k = in->k;
  const char *nm = in->name;
  hk_dtype_t acc_t = hkc_acc_type(in);
  const char *acc = hkc_ctype(acc_t);
  int lanes = hkc_reduce_lanes(hk_dtype_size(acc_t));
  const hkc_src *srcs[] = {&k->map, &k->combine, &k->identity, &k->finalize};
  int oi = out_index(k);

  /* combine and finalize as functions: used by the lanes, the tail, merge */
  hku_buf_printf(o,
                 "HK_INLINE %s hk_combine__%s(const %s a, const %s b)\n{\n",
                 acc, nm, acc, acc);
  hkc_put_holders(o, in, srcs + 1, 1, 4);
  hku_buf_printf(o, "    return (%s)", acc);
  hkc_put_expr(o, &k->combine);
  hku_buf_put(o, ";\n}\n\n");

  hku_buf_printf(o, "HK_INLINE %s hk_final__%s(const %s acc, size_t n", acc,
                 nm, acc);
  put_scalar_params(o, in);
  hku_buf_put(o, ")\n{\n");
  hkc_put_holders(o, in, srcs + 3, 1, 4);
  put_scalar_voids(o, in, 4);
  hku_buf_put(o, "    (void)n;\n");
  if (k->finalize.text) {
    hku_buf_printf(o, "    return (%s)", acc);
    hkc_put_expr(o, &k->finalize);
    hku_buf_put(o, ";\n}\n\n");
  } else {
    hku_buf_put(o, "    return acc;\n}\n\n");
  }

  /* the block reducer */
  hku_buf_printf(o, "HK_INLINE %s hk_part__%s(", acc, nm);
  put_part_params(o, in);
  hku_buf_put(o, "size_t n, size_t hk_begin, size_t hk_end)\n{\n");
  hkc_put_holders(o, in, srcs, 3, 4);
  put_scalar_voids(o, in, 4);
  hku_buf_printf(o, "    (void)n;\n    %s hk_lane[%d];\n", acc, lanes);
  hku_buf_printf(o, "    for (int hk_l = 0; hk_l < %d; ++hk_l)\n", lanes);
  hku_buf_printf(o, "        hk_lane[hk_l] = (%s)", acc);
  hkc_put_expr(o, &k->identity);
  hku_buf_put(o, ";\n    size_t hk_i = hk_begin;\n");
  hku_buf_printf(o, "    for (; hk_end - hk_i >= %d; hk_i += %d) {\n", lanes,
                 lanes);
  hku_buf_printf(o, "        for (int hk_l = 0; hk_l < %d; ++hk_l) {\n", lanes);
  hku_buf_put(o, "            const size_t i = hk_i + (size_t)hk_l;\n");
  put_element_locals(o, in, 12);
  hku_buf_printf(o, "            hk_lane[hk_l] = hk_combine__%s(hk_lane[hk_l], (%s)",
                 nm, acc);
  hkc_put_expr(o, &k->map);
  hku_buf_put(o, ");\n        }\n    }\n");
  for (int w = lanes / 2; w >= 1; w /= 2)
    hku_buf_printf(o,
                   "    for (int hk_l = 0; hk_l < %d; ++hk_l)\n"
                   "        hk_lane[hk_l] = hk_combine__%s(hk_lane[hk_l], "
                   "hk_lane[hk_l + %d]);\n",
                   w, nm, w);
  hku_buf_printf(o, "    %s hk_acc = hk_lane[0];\n", acc);
  hku_buf_put(o, "    for (; hk_i < hk_end; ++hk_i) {\n");
  hku_buf_put(o, "        const size_t i = hk_i;\n");
  put_element_locals(o, in, 8);
  hku_buf_printf(o, "        hk_acc = hk_combine__%s(hk_acc, (%s)", nm, acc);
  hkc_put_expr(o, &k->map);
  hku_buf_put(o, ");\n    }\n    return hk_acc;\n}\n\n");

  /* range: a whole reduction, or one block's partial */
  hku_buf_printf(o,
                 "%svoid hk_range__%s(void *const *hk_args, size_t n, size_t "
                 "hk_begin, size_t hk_end, void *hk_partial)\n{\n",
                 link, nm);
  hku_buf_printf(o, "    %s hk_acc = hk_part__%s(", acc, nm);
  put_args_call(o, in, 1);
  hku_buf_printf(o, "%sn, hk_begin, hk_end);\n", k->nparams > 1 ? ", " : "");
  hku_buf_printf(o,
                 "    if (hk_partial) {\n        *(%s *)hk_partial = hk_acc;\n"
                 "        return;\n    }\n",
                 acc);
  hku_buf_printf(o, "    *(%s *)hk_args[%d] = hk_final__%s(hk_acc, n", acc, oi,
                 nm);
  for (int i = 0; i < k->nparams; i++)
    if (k->params[i].role == HK_ROLE_SCALAR) {
      hku_buf_put(o, ", ");
      put_arg(o, in, &k->params[i], i);
    }
  hku_buf_put(o, ");\n}\n\n");

  /* merge: partials left to right, then finalize */
  hku_buf_printf(o,
                 "%svoid hk_merge__%s(void *const *hk_args, size_t n, const "
                 "void *hk_partials, size_t hk_count)\n{\n",
                 link, nm);
  hku_buf_printf(o,
                 "    const %s *hk_v = (const %s *)hk_partials;\n"
                 "    %s hk_acc = hk_v[0];\n"
                 "    for (size_t hk_k = 1; hk_k < hk_count; ++hk_k)\n"
                 "        hk_acc = hk_combine__%s(hk_acc, hk_v[hk_k]);\n",
                 acc, acc, acc, nm);
  hku_buf_printf(o, "    *(%s *)hk_args[%d] = hk_final__%s(hk_acc, n", acc, oi,
                 nm);
  for (int i = 0; i < k->nparams; i++)
    if (k->params[i].role == HK_ROLE_SCALAR) {
      hku_buf_put(o, ", ");
      put_arg(o, in, &k->params[i], i);
    }
  hku_buf_put(o, ");\n}\n\n");

  if (mode == HKC_EMIT_STDLIB) {
    unsigned fl = flags_of(k);
    hkc_emit_typed_proto(in, o);
    hku_buf_put(o, ";\n");
    hkc_emit_typed_proto(in, o);
    hku_buf_put(o, "\n{\n    if (n > HK_REDUCE_BLOCK) {\n");
    put_args_array(o, in, 8);
    hku_buf_printf(o,
                   "        hk__par_reduce(hk_range__%s, hk_merge__%s, "
                   "sizeof(%s), hk_args, n, %uu);\n        return;\n    }\n",
                   nm, nm, acc, fl);
    hku_buf_printf(o, "    *%s = hk_final__%s(hk_part__%s(",
                   k->params[oi].name, nm, nm);
    for (int i = 0; i < k->nparams; i++)
      if (k->params[i].role != HK_ROLE_OUT)
        hku_buf_printf(o, "%s, ", k->params[i].name);
    hku_buf_put(o, "n, 0, n), n");
    for (int i = 0; i < k->nparams; i++)
      if (k->params[i].role == HK_ROLE_SCALAR)
        hku_buf_printf(o, ", %s", k->params[i].name);
    hku_buf_put(o, ");\n}\n\n");
  }
}

/* ---- raw --------------------------------------------------------------------------- */

static void emit_raw(hku_buf *o, const hkc_instance *in, hkc_emit_mode mode,
                     const char *link) {
  const hkc_kernel *k = in->k;
  const char *nm = in->name;
  const hkc_src *srcs[] = {&k->cpu};

  hku_buf_printf(o, "static void hk_raw__%s(", nm);
  for (int i = 0; i < k->nparams; i++) {
    hkc_put_param(o, in, &k->params[i], "", 0);
    hku_buf_put(o, ", ");
  }
  hku_buf_put(o, "size_t n)\n{\n");
  hkc_put_holders(o, in, srcs, 1, 4);
  for (int i = 0; i < k->nparams; i++)
    hku_buf_printf(o, "    (void)%s;\n", k->params[i].name);
  hku_buf_put(o, "    (void)n;\n    {\n");
  hkc_put_code(o, &k->cpu, 8);
  hku_buf_put(o, "    }\n}\n\n");

  hku_buf_printf(o,
                 "%svoid hk_range__%s(void *const *hk_args, size_t n, size_t "
                 "hk_begin, size_t hk_end, void *hk_partial)\n{\n"
                 "    (void)hk_begin;\n    (void)hk_end;\n    (void)hk_partial;\n"
                 "    hk_raw__%s(",
                 link, nm, nm);
  put_args_call(o, in, 0);
  hku_buf_put(o, ", n);\n}\n\n");

  if (mode == HKC_EMIT_STDLIB) {
    hkc_emit_typed_proto(in, o);
    hku_buf_put(o, ";\n");
    hkc_emit_typed_proto(in, o);
    hku_buf_printf(o, "\n{\n    hk_raw__%s(", nm);
    for (int i = 0; i < k->nparams; i++)
      hku_buf_printf(o, "%s, ", k->params[i].name);
    hku_buf_put(o, "n);\n}\n\n");
  }
}

/* ---- lens (every kind) ----------------------------------------------------------------- */

static void emit_lens(hku_buf *o, const hkc_instance *in, const char *link) {
  const hkc_kernel *k = in->k;
  hku_buf_printf(o,
                 "%sint hk_lens__%s(void *const *hk_args, size_t n, int64_t "
                 "*hk_lens)\n{\n",
                 link, in->name);
  int any_len = 0;
  for (int i = 0; i < k->nparams; i++) any_len |= k->params[i].len.text != NULL;
  if (any_len) {
    hku_buf_put(o, "    int hk_bad = 0;\n");
    for (int i = 0; i < k->nparams; i++)
      if (!is_buffer(&k->params[i])) {
        hku_buf_printf(o, "    const %s %s = ", ct(in, &k->params[i]),
                       k->params[i].name);
        put_arg(o, in, &k->params[i], i);
        hku_buf_printf(o, ";\n    (void)%s;\n", k->params[i].name);
      }
  } else {
    hku_buf_put(o, "    (void)hk_args;\n");
  }
  hku_buf_put(o, "    (void)n;\n");
  for (int i = 0; i < k->nparams; i++) {
    const hkc_param *p = &k->params[i];
    hku_buf_printf(o, "    hk_lens[%d] = ", i);
    if (!is_buffer(p))
      hku_buf_put(o, "-1;\n");
    else if (k->kind == HK_KIND_REDUCTION && p->role == HK_ROLE_OUT)
      hku_buf_put(o, "1;\n");
    else if (p->len.text) {
      /* checked: overflow, division by zero or a negative count fail */
      if (hkc_emit_len(&p->len, in, o)) o->oom = 1;
      hku_buf_printf(o,
                     ";\n    if (hk_bad || hk_lens[%d] < 0)\n        return "
                     "-1;\n",
                     i);
    } else
      hku_buf_put(o, "(int64_t)n;\n");
  }
  hku_buf_put(o, "    return 0;\n}\n\n");
}

/* ---- Files ------------------------------------------------------------------------------ */

static void emit_table(hku_buf *o, hkc_file *const *files, int nfiles) {
  size_t count = 0;
  for (int f = 0; f < nfiles; f++)
    for (int i = 0; i < files[f]->nkernels; i++) {
      const hkc_kernel *k = &files[f]->kernels[i];
      if (!(k->targets & HK_TARGET_CPU)) continue;
      for (int j = 0; j < k->ninst; j++) {
        const hkc_instance *in = &k->inst[j];
        hku_buf_printf(o, "static const hk_param_info_t hk_params__%s[] = {\n",
                       in->name);
        for (int p = 0; p < k->nparams; p++) {
          const hkc_param *pp = &k->params[p];
          hku_buf_printf(o, "    {\"%s\", %s, HK_ROLE_%s, ", pp->name,
                         dtype_enum(hkc_param_type(in, pp)),
                         pp->role == HK_ROLE_IN      ? "IN"
                         : pp->role == HK_ROLE_OUT   ? "OUT"
                         : pp->role == HK_ROLE_INOUT ? "INOUT"
                                                     : "SCALAR");
          if (pp->len.text) {
            char *e = hkc_expr_oneline(&pp->len);
            if (e) hkc_emit_c_string(o, e);
            free(e);
          } else {
            hku_buf_put(o, "NULL");
          }
          hku_buf_put(o, ", ");
          hkc_emit_c_string(o, pp->doc ? pp->doc : "");
          hku_buf_put(o, "},\n");
        }
        hku_buf_put(o, "};\n");
      }
    }
  hku_buf_put(o, "\nconst hk_stdlib_entry_t hk__stdlib[] = {\n");
  for (int f = 0; f < nfiles; f++)
    for (int i = 0; i < files[f]->nkernels; i++) {
      const hkc_kernel *k = &files[f]->kernels[i];
      if (!(k->targets & HK_TARGET_CPU)) continue;
      for (int j = 0; j < k->ninst; j++) {
        const hkc_instance *in = &k->inst[j];
        hk_dtype_t acc_t = k->kind == HK_KIND_REDUCTION ? hkc_acc_type(in)
                                                        : HK_DTYPE_INVALID;
        hku_buf_printf(o, "    {{\"%s\", ", in->name);
        hkc_emit_c_string(o, k->doc);
        hku_buf_printf(o, ", HK_KIND_%s, %uu, %d, hk_params__%s, \"stdlib\", ",
                       k->kind == HK_KIND_ELEMENTWISE ? "ELEMENTWISE"
                       : k->kind == HK_KIND_REDUCTION ? "REDUCTION"
                                                      : "RAW",
                       k->targets, k->nparams, in->name);
        hkc_emit_c_string(o, files[f]->path);
        hku_buf_printf(o, "},\n     hk_range__%s, ", in->name);
        if (k->kind == HK_KIND_REDUCTION)
          hku_buf_printf(o, "hk_merge__%s, ", in->name);
        else
          hku_buf_put(o, "NULL, ");
        hku_buf_printf(o, "hk_lens__%s, %zu, %uu, (void (*)(void))hk_%s},\n",
                       in->name, hk_dtype_size(acc_t), flags_of(k), in->name);
        count++;
      }
    }
  hku_buf_printf(o, "};\n\nconst size_t hk__stdlib_count = %zu;\n", count);
}

void hkc_linemap_start(hku_buf *o, hkc_linemap *map) {
  o->map = map;
  o->counted = o->len;
  o->line = 1;
  for (size_t i = 0; i < o->len; i++)
    if (o->data[i] == '\n') o->line++;
}

int hkc_emit_c_mapped(hkc_file *const *files, int nfiles, hkc_emit_mode mode,
                      hku_buf *o, hkc_linemap *map) {
  return hkc_emit_c_unit(files, nfiles, mode, o, map, NULL);
}

int hkc_emit_c(hkc_file *const *files, int nfiles, hkc_emit_mode mode,
               hku_buf *o) {
  return hkc_emit_c_unit(files, nfiles, mode, o, NULL, NULL);
}

int hkc_emit_c_unit(hkc_file *const *files, int nfiles, hkc_emit_mode mode,
                    hku_buf *o, hkc_linemap *map, size_t prelude[2]) {
  if (map) hkc_linemap_start(o, map);
  hku_buf_put(o, "/* Generated by hk " HK_VERSION_STRING " from ");
  for (int f = 0; f < nfiles; f++) {
    hku_buf_put(o, f ? ", " : "");
    put_comment_text(o, files[f]->path);
  }
  hku_buf_put(o,
              ".\n * Do not edit: edit the kernel file and generate again. */\n\n");
  size_t at = o->len;
  hkc_emit_prelude(mode, o);
  if (prelude) {
    prelude[0] = at;
    prelude[1] = o->len - at;
  }
  const char *link = mode == HKC_EMIT_STDLIB ? "static " : "";
  for (int f = 0; f < nfiles; f++)
    for (int i = 0; i < files[f]->nkernels; i++) {
      const hkc_kernel *k = &files[f]->kernels[i];
      if (!(k->targets & HK_TARGET_CPU)) continue;
      for (int j = 0; j < k->ninst; j++) {
        const hkc_instance *in = &k->inst[j];
        hku_buf_printf(o, "/* ---- %s: kernel \"%s\" (%s) from ", in->name,
                       k->name, hk_kind_name(k->kind));
        put_comment_text(o, files[f]->path);
        hku_buf_put(o, " ---- */\n\n");
        if (k->kind == HK_KIND_ELEMENTWISE)
          emit_elementwise(o, in, mode, link);
        else if (k->kind == HK_KIND_REDUCTION)
          emit_reduction(o, in, mode, link);
        else
          emit_raw(o, in, mode, link);
        emit_lens(o, in, link);
      }
    }
  if (mode == HKC_EMIT_STDLIB) {
    hku_buf_put(o, "/* ---- the stdlib registry table ---- */\n\n");
    emit_table(o, files, nfiles);
  }
  o->map = NULL;
  return o->oom ? -1 : 0;
}

int hkc_emit_stdlib_header(hkc_file *const *files, int nfiles, hku_buf *o) {
  hku_buf_put(o,
              "/* hk_stdlib.h — the typed stdlib functions of libhk.\n"
              " * Generated by hk " HK_VERSION_STRING
              " from the kernel files in stdlib_kernels/; do not edit.\n"
              " * Include <hk.h>, which includes this header. Each function\n"
              " * takes its kernel's parameters in order (buffers as pointers,\n"
              " * scalars by value), then the element count n. */\n"
              "#ifndef HK_STDLIB_H\n#define HK_STDLIB_H\n\n"
              "#include \"hk.h\"\n\n"
              "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n");
  for (int f = 0; f < nfiles; f++)
    for (int i = 0; i < files[f]->nkernels; i++) {
      const hkc_kernel *k = &files[f]->kernels[i];
      if (!(k->targets & HK_TARGET_CPU)) continue;
      hku_buf_printf(o, "/* %s (%s): ", k->name, hk_kind_name(k->kind));
      put_comment_text(o, k->doc);
      hku_buf_put(o, " */\n");
      for (int j = 0; j < k->ninst; j++) {
        hkc_emit_typed_proto(&k->inst[j], o);
        hku_buf_put(o, ";\n");
      }
      hku_buf_put(o, "\n");
    }
  hku_buf_put(o, "#ifdef __cplusplus\n}\n#endif\n\n#endif /* HK_STDLIB_H */\n");
  return o->oom ? -1 : 0;
}
