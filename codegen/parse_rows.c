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

int hkc_rows_staged(const hkc_instance *in, const hkc_param *p) {
  if (in->k->kind != HK_KIND_ROWS || p->role == HK_ROLE_SCALAR) return 0;
  hk_dtype_t t = hkc_param_type(in, p);
  return t == HK_F16 || t == HK_BF16;
}

int hkc_rows_nstaged(const hkc_instance *in) {
  int count = 0;
  for (int i = 0; i < in->k->nparams; i++)
    count += hkc_rows_staged(in, &in->k->params[i]);
  return count;
}

void hkc_check_rows_params(hkc_parser *P, const hkj_node *obj,
                           const char *prefix, const hkc_kernel *k) {
  if (k->kind != HK_KIND_ROWS) return;
  const hkj_node *ps = hkj_get(obj, "params");
  int writes = 0;
  for (int i = 0; i < k->nparams; i++) {
    const hkc_param *p = &k->params[i];
    const hkj_node *po = ps->kids[i];
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
