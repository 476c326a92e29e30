/* info.c — an instance's public description (hk_kernel_info_t), copied out
 * of its kernel file so that it outlives the file. */
#include <stdlib.h>
#include <string.h>

#include "codegen.h"
#include "kernel.h"

/* Bytes for a copy of s (with its NUL), rounded up to pointer alignment. */
static size_t room(const char *s) {
  size_t n = strlen(s) + 1;
  return (n + sizeof(void *) - 1) & ~(sizeof(void *) - 1);
}

static char *put(char **at, const char *s) {
  char *p = *at;
  memcpy(p, s, strlen(s) + 1);
  *at += room(s);
  return p;
}

int hkc_kernel_uses_n(const hkc_kernel *k) {
  if (k->kind != HK_KIND_RAW && k->kind != HK_KIND_GRID) return 1;
  const hkc_src *code[] = {&k->body, &k->cpu, &k->cuda};
  for (size_t i = 0; i < sizeof code / sizeof *code; i++)
    if (code[i]->text && hkc_code_uses(code[i], "n")) return 1;
  for (int i = 0; i < k->nhelpers; i++) {
    const hkc_helper *h = &k->helpers[i];
    const hkc_src *hs[] = {&h->returns, &h->params, &h->body};
    for (int j = 0; j < 3; j++)
      if (hs[j]->text && hkc_code_uses(hs[j], "n")) return 1;
  }
  for (int i = 0; i < k->nsetup; i++)
    if (k->setup[i].value.text && hkc_code_uses(&k->setup[i].value, "n"))
      return 1;
  for (int i = 0; i < k->nparams; i++)
    if (k->params[i].len.text && hkc_code_uses(&k->params[i].len, "n"))
      return 1;
  for (int i = 0; i < k->grid_rank; i++)
    if (k->grid[i].ext.text && hkc_code_uses(&k->grid[i].ext, "n")) return 1;
  return 0;
}

hk_kernel_info_t *hkc_instance_info_new(const hkc_instance *in,
                                        const char *origin,
                                        const char *source) {
  const hkc_kernel *k = in->k;
  char **lens = calloc((size_t)k->nparams + 1, sizeof *lens);
  if (!lens) return NULL;
  size_t size = sizeof(hk_kernel_info_t) +
                (size_t)k->nparams * sizeof(hk_param_info_t) + room(in->name) +
                room(k->doc) + room(origin) + room(source);
  int ok = 1;
  for (int i = 0; i < k->nparams; i++) {
    const hkc_param *p = &k->params[i];
    if (p->len.text) {
      lens[i] = hkc_expr_oneline(&p->len);
      ok &= lens[i] != NULL;
      if (lens[i]) size += room(lens[i]);
    }
    size += room(p->name) + room(p->doc ? p->doc : "");
  }
  hk_kernel_info_t *info = ok ? malloc(size) : NULL;
  if (info) {
    hk_param_info_t *params = (hk_param_info_t *)(info + 1);
    char *at = (char *)(params + k->nparams);
    info->name = put(&at, in->name);
    info->doc = put(&at, k->doc);
    info->kind = k->kind;
    info->targets = hkc_instance_targets(in);
    info->nparams = k->nparams;
    info->params = params;
    info->origin = put(&at, origin);
    info->source = put(&at, source);
    info->uses_n = hkc_kernel_uses_n(k);
    for (int i = 0; i < k->nparams; i++) {
      const hkc_param *p = &k->params[i];
      params[i].name = put(&at, p->name);
      params[i].dtype = hkc_param_type(in, p);
      params[i].role = p->role;
      params[i].len = lens[i] ? put(&at, lens[i]) : NULL;
      params[i].doc = put(&at, p->doc ? p->doc : "");
      params[i].row = p->row;
    }
  }
  for (int i = 0; i < k->nparams; i++) free(lens[i]);
  free(lens);
  return info;
}
