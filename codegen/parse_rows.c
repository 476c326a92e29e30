/* parse_rows.c — the validator's part for the rows kind (parse.h): a
 * buffer parameter's "row" field and the rules on rows kernels' params.
 *
 * A rows kernel's body runs once per row; each buffer steps from row to row
 * by its row mode: "full" (n elements a row, the default), "one" (one
 * element a row) or "shared" (the same n elements for every row). */
#include <string.h>

#include "internal.h"
#include "parse.h"

void hkc_param_row(hkc_parser *P, const hkj_node *po, const char *ppre,
                   const hkc_kernel *k, hkc_param *p) {
  static const char *const names[] = {
      [HK_ROW_FULL] = "full", [HK_ROW_ONE] = "one", [HK_ROW_SHARED] = "shared"};
  p->row = HK_ROW_FULL;
  const hkj_node *v = hkj_get(po, "row");
  if (!v) return;
  const char *f = hkc_fld(ppre, "row");
  if (k->kind != HK_KIND_ROWS) {
    hkc_err_key(P, v, f,
                "only a rows kernel's buffers have a row mode, and this "
                "kernel's kind is %s",
                hk_kind_name(k->kind));
    return;
  }
  const char *s =
      hkc_want_string(P, v, f, "\"full\", \"one\" or \"shared\"");
  if (!s) return;
  for (size_t r = 0; r < HK_COUNT(names); r++)
    if (!strcmp(s, names[r])) {
      p->row = (hk_row_t)r;
      return;
    }
  hkc_err(P, v, f,
          "unknown row mode \"%s\"; expected \"full\" (n elements a row), "
          "\"one\" (one element a row) or \"shared\" (the same n elements "
          "for every row)",
          s);
}

/* 1 when a buffer of type t is stored in another form than the one its
 * elements are computed in (f16, bf16: 16 bits, computed as float). A row
 * is a pointer to its elements, so a rows body cannot take such a buffer
 * (yet). By name: the dtype values are not all known to every build. */
static int stored_apart(hk_dtype_t t) {
  const char *s = hk_dtype_name(t);
  return !strcmp(s, "f16") || !strcmp(s, "bf16");
}

/* Reports the 16-bit float types buffer p (params[i]) could have. */
static void check_row_types(hkc_parser *P, const hkj_node *obj,
                            const char *prefix, const hkc_kernel *k,
                            const hkc_param *p, const hkj_node *po, int i) {
  static const char *const why =
      "a rows kernel's buffers are pointers to each row's elements, and %s "
      "elements are stored in 16 bits but computed as float: rows kernels "
      "do not take %s buffers (yet)";
  if (!p->placeholder) {
    const hkj_node *tv = po->type == HKJ_OBJECT ? hkj_get(po, "type") : NULL;
    if (stored_apart(p->dtype) && tv)
      hkc_err(P, tv, hkc_fld(prefix, "params[%d].type", i), why,
              hk_dtype_name(p->dtype), hk_dtype_name(p->dtype));
    return;
  }
  const hkj_node *ts = hkj_get(obj, "types");
  char key[2] = {p->placeholder, 0};
  const hkj_node *list = ts ? hkj_get(ts, key) : NULL;
  for (int h = 0; h < k->nholders; h++) {
    const hkc_placeholder *ph = &k->holders[h];
    if (ph->letter != p->placeholder) continue;
    for (int j = 0; j < ph->ntypes; j++) {
      if (!stored_apart(ph->types[j])) continue;
      /* the list's j-th valid type: find its node by name */
      const hkj_node *at = list;
      for (size_t q = 0; list && q < list->nkids; q++)
        if (list->kids[q]->type == HKJ_STRING &&
            !strcmp(list->kids[q]->str, hk_dtype_name(ph->types[j])))
          at = list->kids[q];
      if (at)
        hkc_err(P, at, hkc_fld(prefix, "types.%s", key), why,
                hk_dtype_name(ph->types[j]), hk_dtype_name(ph->types[j]));
    }
  }
}

void hkc_check_rows_params(hkc_parser *P, const hkj_node *obj,
                           const char *prefix, const hkc_kernel *k) {
  if (k->kind != HK_KIND_ROWS) return;
  const hkj_node *ps = hkj_get(obj, "params");
  int writes = 0, reported[26] = {0};
  for (int i = 0; i < k->nparams; i++) {
    const hkc_param *p = &k->params[i];
    const hkj_node *po = ps->kids[i];
    if (p->role != HK_ROLE_SCALAR &&
        !(p->placeholder && reported[p->placeholder - 'A']++))
      check_row_types(P, obj, prefix, k, p, po, i);
    const hkj_node *row = po->type == HKJ_OBJECT ? hkj_get(po, "row") : NULL;
    if (p->role == HK_ROLE_OUT || p->role == HK_ROLE_INOUT) writes++;
    if (!row) continue;
    const char *f = hkc_fld(prefix, "params[%d].row", i);
    if (p->role == HK_ROLE_SCALAR)
      hkc_err_key(P, row, f,
                  "a scalar has no row mode (it is the same value for every "
                  "row)");
    else if (p->row == HK_ROW_SHARED && p->role != HK_ROLE_IN)
      hkc_err(P, row, f,
              "a shared buffer is the same for every row, and rows run on "
              "any thread: only an in buffer may be shared (this one is %s)",
              hk_role_name(p->role));
  }
  if (writes == 0)
    hkc_err(P, ps, hkc_fld(prefix, "params"),
            "a rows kernel must write at least one out or inout buffer");
}
