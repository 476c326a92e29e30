/* emit_scope.c — what an instance's code may name besides its parameters:
 * its consts and helpers (emit.h; schemas/README.md §6.6).
 *
 * Several kernels, and several instances of one kernel, share a unit, and
 * each has its own consts and helpers (a helper of add_f32 has T = float,
 * add_f64's T = double). So before an instance's code its consts become
 * macros (#define TILE 64) and each helper a function with a name of its
 * own, hk_fn__INSTANCE__NAME, which a macro (#define dot hk_fn__...) lets
 * the author's code call by the name it was given; after the instance's
 * code every macro is undefined. A placeholder letter in a helper's
 * signature is such a macro too, naming a file-scope typedef; a function
 * that declares `typedef float T;` then shadows that typedef with the
 * same type, which C and C++ allow. Validation (parse_grid.c) keeps these
 * names apart from every other name generated code uses.
 */
#include <stdlib.h>
#include <string.h>

#include "emit.h"

/* 1 when the helpers' code (signatures and bodies) names placeholder
 * letter id. */
static int helpers_use(const hkc_kernel *k, const char *id) {
  for (int i = 0; i < k->nhelpers; i++) {
    const hkc_helper *h = &k->helpers[i];
    const hkc_src *srcs[] = {&h->returns, &h->params, &h->body};
    for (int s = 0; s < 3; s++)
      if (srcs[s]->text && hkc_code_uses(srcs[s], id)) return 1;
  }
  return 0;
}

/* RET NAME(PARAMS): a helper's head, the author's text on one line (and in
 * the line map). */
static void put_helper_head(hku_buf *o, const hkc_helper *h, const char *qual) {
  hku_buf_put(o, qual);
  if (h->returns.text)
    hkc_put_oneline(o, &h->returns);
  else
    hku_buf_put(o, "void");
  hku_buf_printf(o, " %s(", h->name);
  char *p = h->params.text ? hkc_expr_oneline(&h->params) : NULL;
  if (h->params.text && !p) o->oom = 1;
  if (p && *p)
    hkc_put_oneline(o, &h->params);
  else
    hku_buf_put(o, "void");
  free(p);
  hku_buf_put(o, ")");
}

void hkc_put_scope_open(hku_buf *o, const hkc_instance *in, int cuda) {
  const hkc_kernel *k = in->k;
  if (!k->nconsts && !k->nhelpers) return;
  hku_buf_printf(o, "/* consts and helpers of %s */\n", in->name);
  for (int i = 0; i < k->nconsts; i++)
    hku_buf_printf(o, "#define %s (%lld)\n", k->consts[i].name,
                   (long long)k->consts[i].value);
  if (!k->nhelpers) {
    hku_buf_put(o, "\n");
    return;
  }
  for (int h = 0; h < k->nholders; h++) {
    char id[2] = {k->holders[h].letter, 0};
    if (!helpers_use(k, id)) continue;
    hku_buf_printf(o, "typedef %s hk_t__%s__%s;\n#define %s hk_t__%s__%s\n",
                   hkc_ctype(in->bind[id[0] - 'A']), in->name, id, id,
                   in->name, id);
  }
  const char *qual = cuda ? "static __device__ inline " : "HK_INLINE ";
  for (int i = 0; i < k->nhelpers; i++) {
    const hkc_helper *h = &k->helpers[i];
    hku_buf_printf(o, "#define %s hk_fn__%s__%s\n", h->name, in->name,
                   h->name);
    put_helper_head(o, h, qual);
    hku_buf_put(o, ";\n");
  }
  hku_buf_put(o, "\n");
  for (int i = 0; i < k->nhelpers; i++) {
    const hkc_helper *h = &k->helpers[i];
    put_helper_head(o, h, qual);
    hku_buf_put(o, "\n{\n");
    hkc_put_code(o, &h->body, 4);
    hku_buf_put(o, "}\n\n");
  }
}

void hkc_put_scope_close(hku_buf *o, const hkc_instance *in) {
  const hkc_kernel *k = in->k;
  if (!k->nconsts && !k->nhelpers) return;
  for (int i = 0; i < k->nconsts; i++)
    hku_buf_printf(o, "#undef %s\n", k->consts[i].name);
  for (int i = 0; i < k->nhelpers; i++)
    hku_buf_printf(o, "#undef %s\n", k->helpers[i].name);
  for (int h = 0; h < k->nholders && k->nhelpers; h++) {
    char id[2] = {k->holders[h].letter, 0};
    if (helpers_use(k, id)) hku_buf_printf(o, "#undef %s\n", id);
  }
  hku_buf_put(o, "\n");
}
