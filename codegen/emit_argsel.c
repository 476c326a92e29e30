/* emit_argsel.c — the block loop of argmax and argmin in vectors.
 *
 * An argmax's accumulator is a value and an index (i64), and gcc keeps
 * such lanes scalar: about 1 ns an element, 7 to 14 times NumPy's
 * x.argmax(). Its combine picks the better of two elements by a total
 * order (the first NaN above everything, then the larger value, then the
 * smaller index), so the result is the same element whatever the grouping:
 * the loop may take any shape and still give the bits of the scalar lanes
 * (tier jit, tcc) and of the GPU.
 *
 * The shape: four vectors of values, each lane keeping its best value and
 * the step it was read at (an integer of the value's width, so that value,
 * mask and step share one vector shape); the steps become indices after
 * the loop, the four vectors are merged lane by lane by the same order,
 * then the lanes by the kernel's combine. Over 196,608 f32 on AVX2 that
 * is 15 us against the scalar lanes' 270 us and NumPy's 19 us.
 *
 * It is taken for the stdlib's combines written exactly (hkc_argsel_form):
 * a value field v of the input's type, an index field idx (i64), identity
 * {0, -1}, map {x, (int64_t)i}. 8- and 16-bit integers take two passes
 * instead (put_narrow_part).
 */
#include <stdio.h>
#include <string.h>

#include "emit.h"

/* The four combines, without blanks: NaN-aware (floats; for integers the
 * NaN tests are constant) and plain (integers only: on floats with NaNs
 * the plain combine is no order, and its result depends on the grouping). */
static const char k_max_nan[] =
    "if(b.idx>=0&&(a.idx<0||(b.v!=b.v?(a.v==a.v||b.idx<a.idx):(a.v==a.v&&("
    "b.v>a.v||(b.v==a.v&&b.idx<a.idx))))))a=b;";
static const char k_min_nan[] =
    "if(b.idx>=0&&(a.idx<0||(b.v!=b.v?(a.v==a.v||b.idx<a.idx):(a.v==a.v&&("
    "b.v<a.v||(b.v==a.v&&b.idx<a.idx))))))a=b;";
static const char k_max_int[] =
    "if(b.idx>=0&&(a.idx<0||b.v>a.v||(b.v==a.v&&b.idx<a.idx)))a=b;";
static const char k_min_int[] =
    "if(b.idx>=0&&(a.idx<0||b.v<a.v||(b.v==a.v&&b.idx<a.idx)))a=b;";

/* 1 when src's text, blanks left out, is s. */
static int text_is(const hkc_src *src, const char *s) {
  if (!src->text) return 0;
  for (const char *p = src->text; *p; p++) {
    if (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') continue;
    if (*p != *s++) return 0;
  }
  return *s == '\0';
}

static int is_float(hk_dtype_t t) { return t == HK_F32 || t == HK_F64; }

int hkc_argsel_form(const hkc_instance *in) {
  const hkc_kernel *k = in->k;
  if (k->acc_form != HKC_ACC_STRUCT || k->nacc_fields != 2) return HKC_ARGSEL_NONE;
  const hkc_param *x = NULL;
  for (int i = 0; i < k->nparams; i++) {
    const hkc_param *p = &k->params[i];
    if (hkc_is_result(p)) continue;
    if (p->role != HK_ROLE_IN || x) return HKC_ARGSEL_NONE;
    x = p;
  }
  if (!x || !x->name) return HKC_ARGSEL_NONE;
  const hk_dtype_t t = hkc_param_type(in, x);
  switch (t) {
    case HK_F32: case HK_F64: case HK_I32: case HK_U32: case HK_I64:
    case HK_U64: case HK_I8: case HK_U8: case HK_I16: case HK_U16:
      break;
    default:
      return HKC_ARGSEL_NONE;
  }
  const hkc_acc_field *v = &k->acc_fields[0], *ix = &k->acc_fields[1];
  if (strcmp(v->name, "v") || strcmp(ix->name, "idx") ||
      hkc_acc_field_type(in, v) != t || hkc_acc_field_type(in, ix) != HK_I64 ||
      !text_is(&v->identity, "0") || !text_is(&ix->identity, "-1") ||
      !text_is(&v->map, x->name) || !text_is(&ix->map, "(int64_t)i"))
    return HKC_ARGSEL_NONE;
  if (text_is(&k->combine, k_max_nan)) return HKC_ARGSEL_MAX;
  if (text_is(&k->combine, k_min_nan)) return HKC_ARGSEL_MIN;
  if (is_float(t)) return HKC_ARGSEL_NONE;
  if (text_is(&k->combine, k_max_int)) return HKC_ARGSEL_MAX;
  if (text_is(&k->combine, k_min_int)) return HKC_ARGSEL_MIN;
  return HKC_ARGSEL_NONE;
}

/* The merge of b into a as C declaring hk_m, the mask (of type mt: a
 * vector's or int) of the places where b wins; ind spaces of indent. */
static void put_merge(char *out, size_t cap, const char *mt, int ind, int fl,
                      const char *op) {
  if (fl)
    snprintf(out, cap,
             "%*sconst %s hk_ok = hk_a == hk_a;\n"
             "%*sconst %s hk_m = ((hk_b != hk_b) & (hk_ok | hk_lt)) |\n"
             "%*s    (hk_ok & ((hk_b %s hk_a) | ((hk_b == hk_a) & hk_lt)));\n",
             ind, "", mt, ind, "", mt, ind, "", op);
  else
    snprintf(out, cap,
             "%*sconst %s hk_m = (hk_b %s hk_a) | ((hk_b == hk_a) & hk_lt);\n",
             ind, "", mt, op);
}

/* 8- and 16-bit integers: a step counter of the value's width would
 * overflow within a few hundred vectors, so two passes instead: the best
 * value (a max or min loop, which gcc vectorises), then the first index
 * holding it (four vectors compared a step, the last step's elements one
 * by one): the element the combine picks, the first of the best. */
static void put_narrow_part(hku_buf *o, const hkc_instance *in,
                            const hkc_param *x, int form) {
  const char *nm = in->name;
  const char *vt = hkc_ctype(hkc_param_type(in, x));
  const char *op = form == HKC_ARGSEL_MAX ? ">" : "<";
  char cb[HKC_ACC_CTYPE_MAX];
  hku_buf_printf(o,
                 "    /* the best value, then the first index of it "
                 "(emit_argsel.c) */\n"
                 "    typedef %s hk_av __attribute__((vector_size(HK_VB)));\n"
                 "    typedef %s hk_au __attribute__((vector_size(HK_VB), "
                 "aligned(sizeof(%s)), may_alias));\n"
                 "    typedef uint64_t hk_aw __attribute__((vector_size(HK_VB)));\n"
                 "    %s hk_acc = hk_identity__%s();\n"
                 "    if (hk_begin >= hk_end)\n"
                 "        return hk_acc;\n"
                 "    const size_t hk_W = HK_VB / sizeof(%s);\n"
                 "    %s hk_bv = hk_p_%s[hk_begin];\n"
                 "    for (size_t hk_j = hk_begin + 1; hk_j < hk_end; ++hk_j)\n"
                 "        hk_bv = hk_p_%s[hk_j] %s hk_bv ? hk_p_%s[hk_j] : hk_bv;\n"
                 "    const hk_av hk_t = (hk_av){0} + hk_bv;\n"
                 "    size_t hk_j = hk_begin;\n"
                 "    for (; hk_end - hk_j >= 4 * hk_W; hk_j += 4 * hk_W) {\n"
                 "        const %s *hk_q = hk_p_%s + hk_j;\n"
                 "        const hk_aw hk_e = (hk_aw)((*(const hk_au *)hk_q == hk_t) |\n"
                 "            (*(const hk_au *)(hk_q + hk_W) == hk_t) |\n"
                 "            (*(const hk_au *)(hk_q + 2 * hk_W) == hk_t) |\n"
                 "            (*(const hk_au *)(hk_q + 3 * hk_W) == hk_t));\n"
                 "        uint64_t hk_any = 0;\n"
                 "        for (int hk_l = 0; hk_l < (int)(HK_VB / 8); ++hk_l)\n"
                 "            hk_any |= hk_e[hk_l];\n"
                 "        if (hk_any)\n"
                 "            break;\n"
                 "    }\n"
                 "    while (hk_p_%s[hk_j] != hk_bv)\n"
                 "        ++hk_j;\n"
                 "    return hk_combine__%s(hk_acc, hk_map__%s(hk_bv, hk_j, n));\n"
                 "#else\n",
                 vt, vt, vt, hkc_acc_ctype(in, cb), nm, vt, vt, x->name,
                 x->name, op, x->name, vt, x->name, x->name, nm, nm);
}

/* The body of hk_part__NAME (after its opening brace, to its return) for
 * gcc and clang; emit_c.c puts it under #if HK_VEC_TREE. */
void hkc_put_argsel_part(hku_buf *o, const hkc_instance *in, int form) {
  const hkc_kernel *k = in->k;
  const char *nm = in->name;
  const hkc_param *x = NULL;
  for (int i = 0; i < k->nparams && !x; i++)
    if (k->params[i].role == HK_ROLE_IN) x = &k->params[i];
  const hk_dtype_t t = hkc_param_type(in, x);
  if (hk_dtype_size(t) < 4) {
    put_narrow_part(o, in, x, form);
    return;
  }
  const char *vt = hkc_ctype(t);
  const char *mt = hkc_compute_size(t) == 8 ? "int64_t" : "int32_t";
  const int mx = form == HKC_ARGSEL_MAX;
  const char *op = mx ? ">" : "<";
  /* x read later replaces the lane's best when better: a NaN, or more
   * (argmax) or less (argmin), unless the best is a NaN already */
  char better[96];
  if (is_float(t))
    snprintf(better, sizeof better,
             "~(hk_x %s= hk_v[hk_k]) & (hk_v[hk_k] == hk_v[hk_k])",
             mx ? "<" : ">");
  else
    snprintf(better, sizeof better, "hk_x %s hk_v[hk_k]", op);
  /* b (lanes k + w) replaces a (lanes k) when better, or as good with a
   * smaller index (hk_lt): the kernel's combine, lane by lane */
  char merge[512], smerge[512];
  put_merge(merge, sizeof merge, "hk_am", 16, is_float(t), op);
  /* the same on scalars (0 or 1) */
  put_merge(smerge, sizeof smerge, "int", 12, is_float(t), op);

  char cb[HKC_ACC_CTYPE_MAX];
  hku_buf_printf(o,
                 "    /* four vectors of lanes, each lane its best value and "
                 "the step it was\n"
                 "     * read at (emit_argsel.c) */\n"
                 "    typedef %s hk_av __attribute__((vector_size(HK_VB)));\n"
                 "    typedef %s hk_au __attribute__((vector_size(HK_VB), "
                 "aligned(sizeof(%s)), may_alias));\n"
                 "    typedef %s hk_am __attribute__((vector_size(HK_VB)));\n"
                 "    enum { hk_W = (int)(HK_VB / sizeof(%s)) };\n"
                 "    %s hk_acc = hk_identity__%s();\n"
                 "    size_t hk_i = hk_begin;\n"
                 "    hk_am hk_iota;\n"
                 "    for (int hk_l = 0; hk_l < hk_W; ++hk_l)\n"
                 "        hk_iota[hk_l] = hk_l;\n",
                 vt, vt, vt, mt, vt, hkc_acc_ctype(in, cb), nm);
  hku_buf_printf(o,
                 "    /* chunks of at most 2^30 elements: an index relative "
                 "to its chunk fits a lane */\n"
                 "    while (hk_end - hk_i >= 4 * (size_t)hk_W) {\n"
                 "        size_t hk_steps = (hk_end - hk_i) / (4 * (size_t)hk_W);\n"
                 "        if (hk_steps > ((size_t)1 << 30) / (4 * (size_t)hk_W))\n"
                 "            hk_steps = ((size_t)1 << 30) / (4 * (size_t)hk_W);\n"
                 "        const %s *hk_q = hk_p_%s + hk_i;\n"
                 "        hk_av hk_v[4];\n"
                 "        hk_am hk_s[4];\n"
                 "        for (int hk_k = 0; hk_k < 4; ++hk_k) {\n"
                 "            hk_v[hk_k] = *(const hk_au *)(hk_q + hk_k * hk_W);\n"
                 "            hk_s[hk_k] = (hk_am){0};\n"
                 "        }\n"
                 "        hk_am hk_step = {0};\n"
                 "        for (size_t hk_t = 1; hk_t < hk_steps; ++hk_t) {\n"
                 "            hk_q += 4 * hk_W;\n"
                 "            hk_step += 1;\n"
                 "            for (int hk_k = 0; hk_k < 4; ++hk_k) {\n"
                 "                const hk_av hk_x = *(const hk_au *)(hk_q + hk_k * hk_W);\n"
                 "                const hk_am hk_m = %s;\n"
                 "                hk_v[hk_k] = (hk_av)(((hk_am)hk_x & hk_m) | "
                 "((hk_am)hk_v[hk_k] & ~hk_m));\n"
                 "                hk_s[hk_k] = (hk_step & hk_m) | (hk_s[hk_k] & ~hk_m);\n"
                 "            }\n"
                 "        }\n",
                 vt, x->name, better);
  /* steps to indices relative to the chunk, then the merge by the order:
   * the four vectors lane by lane, then the lanes without branches (the
   * combine's branches, taken at random over random data, cost more than
   * the loop over a row of 64) */
  hku_buf_printf(o,
                 "        hk_am hk_r[4];\n"
                 "        for (int hk_k = 0; hk_k < 4; ++hk_k)\n"
                 "            hk_r[hk_k] = (hk_s[hk_k] * 4 + hk_k) * hk_W + hk_iota;\n"
                 "        for (int hk_w = 2; hk_w >= 1; hk_w /= 2)\n"
                 "            for (int hk_k = 0; hk_k < hk_w; ++hk_k) {\n"
                 "                const hk_av hk_a = hk_v[hk_k], hk_b = "
                 "hk_v[hk_k + hk_w];\n"
                 "                const hk_am hk_lt = hk_r[hk_k + hk_w] < hk_r[hk_k];\n"
                 "%s"
                 "                hk_v[hk_k] = (hk_av)(((hk_am)hk_b & hk_m) | "
                 "((hk_am)hk_a & ~hk_m));\n"
                 "                hk_r[hk_k] = (hk_r[hk_k + hk_w] & hk_m) | "
                 "(hk_r[hk_k] & ~hk_m);\n"
                 "            }\n"
                 "        %s hk_bv = hk_v[0][0];\n"
                 "        %s hk_br = hk_r[0][0];\n"
                 "        for (int hk_l = 1; hk_l < hk_W; ++hk_l) {\n"
                 "            const %s hk_a = hk_bv, hk_b = hk_v[0][hk_l];\n"
                 "            const int hk_lt = hk_r[0][hk_l] < hk_br;\n"
                 "%s"
                 "            hk_bv = hk_m ? hk_b : hk_bv;\n"
                 "            hk_br = hk_m ? hk_r[0][hk_l] : hk_br;\n"
                 "        }\n"
                 "        hk_acc = hk_combine__%s(hk_acc, hk_map__%s(hk_bv, "
                 "hk_i + (size_t)hk_br, n));\n"
                 "        hk_i += hk_steps * 4 * (size_t)hk_W;\n"
                 "    }\n",
                 merge, vt, mt, vt, smerge, nm, nm);
  /* the tail (a whole row shorter than four vectors) the same way */
  hku_buf_printf(o,
                 "    if (hk_i < hk_end) {\n"
                 "        %s hk_bv = hk_p_%s[hk_i];\n"
                 "        size_t hk_br = hk_i;\n"
                 "        for (size_t hk_j = hk_i + 1; hk_j < hk_end; ++hk_j) {\n"
                 "            const %s hk_a = hk_bv, hk_b = hk_p_%s[hk_j];\n"
                 "            const int hk_lt = 0;\n"
                 "%s"
                 "            hk_bv = hk_m ? hk_b : hk_bv;\n"
                 "            hk_br = hk_m ? hk_j : hk_br;\n"
                 "        }\n"
                 "        hk_acc = hk_combine__%s(hk_acc, hk_map__%s(hk_bv, hk_br, n));\n"
                 "    }\n"
                 "    return hk_acc;\n"
                 "#else\n",
                 vt, x->name, vt, x->name, smerge, nm, nm);
}

/* rowred's batch: rows shorter than the vector loop's four vectors (and a
 * few times more) ran it on its scalar branch, one row at a time: over
 * rows of 16 floats about 50 ns a row, as slow as NumPy. Here W rows (the
 * elements of an HK_VB-byte vector) are scanned together, element i of
 * each row a step, each lane keeping its row's best value and the index
 * it was read at: a later element replaces it only when better (a NaN
 * where the best is none; more for argmax, less for argmin; equal never),
 * so each lane ends at the element the combine picks, the first of the
 * best, whatever the grouping: the same value and index as the row's flat
 * call. Indices in lanes of the value's width: rowred calls it for rows
 * of at most a few hundred elements (emit_c.c, HK_ROWB_ARGSEL). */
void hkc_put_argsel_rowb(hku_buf *o, const hkc_instance *in, int form) {
  const hkc_kernel *k = in->k;
  const char *nm = in->name;
  int x = 0; /* the in parameter (hkc_argsel_form: the only one) */
  while (k->params[x].role != HK_ROLE_IN) x++;
  const hk_dtype_t t = hkc_param_type(in, &k->params[x]);
  const char *vt = hkc_ctype(t);
  const char *mt = hk_dtype_size(t) == 8 ? "int64_t" : "int32_t";
  const char *op = form == HKC_ARGSEL_MAX ? ">" : "<";
  char cb[HKC_ACC_CTYPE_MAX];
  char better[128];
  if (is_float(t))
    snprintf(better, sizeof better,
             "(hk_best == hk_best) & ((hk_x != hk_x) | (hk_x %s hk_best))", op);
  else
    snprintf(better, sizeof better, "hk_x %s hk_best", op);
  hku_buf_printf(o,
                 "#if HK_VEC_TREE\n"
                 "HK_INLINE size_t hk_rowb__%s(void *const *hk_args, size_t n, "
                 "size_t hk_r, size_t hk_r1, const ptrdiff_t *hk_steps)\n{\n"
                 "    typedef %s hk_bv __attribute__((vector_size(HK_VB)));\n"
                 "    typedef %s hk_bm __attribute__((vector_size(HK_VB)));\n"
                 "    enum { hk_W = (int)(HK_VB / sizeof(%s)) };\n"
                 "    void *hk_row[%d];\n"
                 "    if (n == 0)\n"
                 "        return hk_r;\n"
                 "    for (; hk_r1 - hk_r >= (size_t)hk_W; hk_r += hk_W) {\n"
                 "        const %s *hk_q[hk_W];\n"
                 "        hk_bv hk_best;\n"
                 "        for (int hk_k = 0; hk_k < hk_W; ++hk_k) {\n"
                 "            hk_q[hk_k] = (const %s *)((const char *)hk_args[%d] + "
                 "(ptrdiff_t)(hk_r + (size_t)hk_k) * hk_steps[%d]);\n"
                 "            hk_best[hk_k] = hk_q[hk_k][0];\n"
                 "        }\n"
                 "        hk_bm hk_bi = {0}, hk_j = {0};\n"
                 "        for (size_t hk_i = 1; hk_i < n; ++hk_i) {\n"
                 "            hk_bv hk_x;\n"
                 "            for (int hk_k = 0; hk_k < hk_W; ++hk_k)\n"
                 "                hk_x[hk_k] = hk_q[hk_k][hk_i];\n"
                 "            hk_j += 1;\n"
                 "            const hk_bm hk_m = %s;\n"
                 "            hk_best = (hk_bv)(((hk_bm)hk_x & hk_m) | "
                 "((hk_bm)hk_best & ~hk_m));\n"
                 "            hk_bi = (hk_j & hk_m) | (hk_bi & ~hk_m);\n"
                 "        }\n"
                 "        for (int hk_k = 0; hk_k < hk_W; ++hk_k) {\n"
                 "            for (int hk_p = 0; hk_p < %d; ++hk_p)\n"
                 "                hk_row[hk_p] = (char *)hk_args[hk_p] + "
                 "(ptrdiff_t)(hk_r + (size_t)hk_k) * hk_steps[hk_p];\n"
                 "            %s hk_acc;\n"
                 "            hk_acc.v = hk_best[hk_k];\n"
                 "            hk_acc.idx = (int64_t)hk_bi[hk_k];\n"
                 "            hk_rowfin__%s(hk_row, n, hk_acc);\n"
                 "        }\n"
                 "    }\n"
                 "    return hk_r;\n"
                 "}\n"
                 "#endif\n\n",
                 nm, vt, mt, vt, k->nparams, vt, vt, x, x, better, k->nparams,
                 hkc_acc_ctype(in, cb), nm);
}
