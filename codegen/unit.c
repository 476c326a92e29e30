/* unit.c — the code generator as the rest of hk sees it (codegen.h):
 * accessors over validated descriptions, and units of generated source. */
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "codegen.h"
#include "internal.h"
#include "emit.h"
#include "kernel.h"

struct hkc_unit {
  const hkc_file *file;
  hku_buf text;
  hkc_linemap map;
  size_t prelude[2]; /* offset and length of the prelude in text */
  size_t *marks;     /* C: where each instance starts, then where the last
                        ends (nmarks + 1 of them); else NULL */
  int nmarks;
};

/* ---- Kernel files ---- */

const char *hkc_file_path(const hkc_file *f) { return f->path; }

const char *hkc_file_text(const hkc_file *f) { return f->doc->text; }

int hkc_file_ninstances(const hkc_file *f) { return f->ninst; }

const hkc_instance *hkc_file_instance(const hkc_file *f, int i) {
  HK_ASSERT(i >= 0 && i < f->ninst);
  return f->inst[i];
}

unsigned hkc_file_targets(const hkc_file *f) {
  unsigned t = 0;
  for (int i = 0; i < f->nkernels; i++) t |= f->kernels[i].targets;
  return t;
}

int hkc_file_fp_fast(const hkc_file *f, unsigned target) {
  int any = 0;
  for (int i = 0; i < f->nkernels; i++) {
    if (!(f->kernels[i].targets & target)) continue;
    if (!f->kernels[i].fp_fast) return 0;
    any = 1;
  }
  return any;
}

/* ---- Instances ---- */

const char *hkc_instance_name(const hkc_instance *in) { return in->name; }

hk_kind_t hkc_instance_kind(const hkc_instance *in) { return in->k->kind; }

unsigned hkc_instance_targets(const hkc_instance *in) {
  return in->k->targets;
}

int hkc_instance_heavy(const hkc_instance *in) { return hkc_is_heavy(in->k); }

int hkc_instance_fp_fast(const hkc_instance *in) { return in->k->fp_fast; }

size_t hkc_instance_acc_size(const hkc_instance *in) {
  return hkc_acc_size(in);
}

void hkc_instance_name_pos(const hkc_file *f, const hkc_instance *in,
                           int *line, int *col) {
  const hkj_node *name = hkj_get(in->k->node, "name");
  *line = *col = 0;
  if (name) hkj_pos(f->doc, name->off, line, col);
}

const char *hkc_instance_field_prefix(const hkc_instance *in) {
  return in->k->prefix;
}

/* ---- Generated source ---- */

int hkc_unit_emit(const hkc_file *f, hkc_lang lang, unsigned flags,
                  hkc_unit **out) {
  *out = NULL;
  hkc_unit *u = calloc(1, sizeof *u);
  if (!u) return HK_ENOMEM;
  u->file = f;
  u->text = (hku_buf)HKU_BUF_INIT;
  hkc_file *const files[1] = {(hkc_file *)f};
  int rc = HK_OK;
  if (lang == HKC_LANG_C) {
    u->marks = malloc(((size_t)f->ninst + 1) * sizeof *u->marks);
    rc = u->marks ? HK_OK : HK_ENOMEM;
  }
  if (rc == HK_OK)
    rc = lang == HKC_LANG_C
             ? hkc_emit_c_unit(files, 1, HKC_EMIT_PLUGIN, &u->text, &u->map,
                               u->prelude, u->marks)
             : hkc_emit_cuda_mapped(files, 1, HKC_EMIT_PLUGIN, &u->text,
                                    &u->map);
  if (u->marks)
    for (int i = 0; i < f->ninst; i++)
      if (hkc_instance_targets(f->inst[i]) & HK_TARGET_CPU) u->nmarks++;
  if (rc == 0 && lang == HKC_LANG_C && (flags & HKC_UNIT_PREBUILT)) {
    hku_buf_printf(&u->text,
                   "/* ---- prebuilt plugin: what the loader checks ---- */\n"
                   "const uint32_t %s = %uu;\n"
                   "const char %s[] = ",
                   HK_ABI_PLUGIN_VERSION_SYMBOL, HK_ABI_VERSION,
                   HK_ABI_PLUGIN_DESC_SYMBOL);
    hkc_emit_c_string(&u->text, f->doc->text);
    hku_buf_put(&u->text, ";\n");
  }
  if (rc || u->text.oom) {
    hkc_unit_free(u);
    return HK_ENOMEM;
  }
  *out = u;
  return HK_OK;
}

void hkc_unit_free(hkc_unit *u) {
  if (!u) return;
  hku_buf_free(&u->text);
  hkc_linemap_free(&u->map);
  free(u->marks);
  free(u);
}

const hkc_file *hkc_unit_file(const hkc_unit *u) { return u->file; }

const char *hkc_unit_text(const hkc_unit *u) { return hku_buf_str(&u->text); }

size_t hkc_unit_len(const hkc_unit *u) { return u->text.len; }

void hkc_unit_prelude(const hkc_unit *u, size_t *off, size_t *len) {
  *off = u->prelude[0];
  *len = u->prelude[1];
}

const char *hkc_prelude_text(size_t *len) {
  return hkc_prelude_get(HKC_EMIT_PLUGIN, len);
}

int hkc_unit_ninstances(const hkc_unit *u) { return u->nmarks; }

void hkc_unit_instance_code(const hkc_unit *u, int i, size_t *off,
                            size_t *len) {
  HK_ASSERT(i >= 0 && i < u->nmarks);
  *off = u->marks[i];
  *len = u->marks[i + 1] - u->marks[i];
}

int hkc_unit_report(const hkc_unit *u, const char *output,
                    const char *compiler, hku_diags *d) {
  return hkc_report_compiler_output(output, &u->map, u->file, compiler, d);
}
