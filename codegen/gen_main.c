/* gen_main.c — hk-gen, the build-time generator of the inline stdlib.
 *
 *   hk-gen --c OUT.c --header OUT.h [--cuda OUT.cu]
 *          [--isa DIR | --isa-base DIR] FILE.json...
 *
 * Validates every stdlib kernel file and writes the C compiled into libhk
 * (typed functions, entry points, the registry table), the public header
 * hk_stdlib.h and the CUDA source. --isa writes into DIR the sources that
 * build OUT.c once per x86-64 level and the dispatch between them
 * (gen_isa.c); --isa-base only the dispatch of a baseline-only build. An
 * output is rewritten only when its text changes, so an unchanged stdlib
 * rebuilds nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit.h"
#include "fsutil.h"
#include "gen_isa.h"
#include "kernel.h"

/* Writes text to path unless the file already holds exactly that. HK_OK,
 * or the code of hku_write_file_atomic (its message printed). */
static int write_if_changed(const char *path, const char *text) {
  size_t n = strlen(text);
  char *old;
  size_t len;
  if (hku_read_file(path, &old, &len, NULL, NULL) == HK_OK) {
    int same = len == n && memcmp(old, text, n) == 0;
    free(old);
    if (same) return HK_OK;
  }
  hku_diags d = HKU_DIAGS_INIT;
  int rc = hku_write_file_atomic(path, text, n, 0644, &d);
  if (rc) {
    hku_buf b = HKU_BUF_INIT;
    hku_diags_format(&d, &b);
    fprintf(stderr, "hk-gen: %s", hku_buf_str(&b));
    hku_buf_free(&b);
  }
  hku_diags_free(&d);
  return rc;
}

/* Writes DIR/name with the text fill appends; HK_OK or an error code. */
static int write_isa_file(const char *dir, const char *name, int (*fill)(hku_buf *, void *),
                          void *arg) {
  hku_buf path = HKU_BUF_INIT, text = HKU_BUF_INIT;
  hku_buf_printf(&path, "%s/%s", dir, name);
  int rc = fill(&text, arg);
  if (!rc && (path.oom || text.oom)) rc = HK_ENOMEM;
  if (rc)
    fprintf(stderr, "hk-gen: out of memory\n");
  else
    rc = write_if_changed(hku_buf_str(&path), hku_buf_str(&text));
  hku_buf_free(&path);
  hku_buf_free(&text);
  return rc;
}

typedef struct isa_args {
  hkc_file **files;
  int nfiles, variants, level;
} isa_args;

static int fill_dispatch(hku_buf *o, void *arg) {
  isa_args *a = arg;
  return hkc_gen_isa_dispatch(a->files, a->nfiles, a->variants, o);
}
static int fill_rename(hku_buf *o, void *arg) {
  isa_args *a = arg;
  return hkc_gen_isa_rename(a->files, a->nfiles, o);
}
static int fill_variant(hku_buf *o, void *arg) {
  return hkc_gen_isa_variant(((isa_args *)arg)->level, o);
}

/* The ISA files into dir: all of them with variants, else the dispatch of
 * a baseline-only build. */
static int write_isa(const char *dir, hkc_file **files, int nfiles, int variants) {
  static const char *const names[] = {"hk_stdlib_base.c", "hk_stdlib_v3.c",
                                      "hk_stdlib_v4.c", "hk_stdlib_v4x.c"};
  isa_args a = {files, nfiles, variants, 0};
  int rc = write_isa_file(dir, "hk_stdlib_isa.c", fill_dispatch, &a);
  if (rc || !variants) return rc;
  rc = write_isa_file(dir, "hk_stdlib_rename.h", fill_rename, &a);
  for (a.level = 0; !rc && a.level < 4; a.level++)
    rc = write_isa_file(dir, names[a.level], fill_variant, &a);
  return rc;
}

int main(int argc, char **argv) {
  const char *out_c = NULL, *out_h = NULL, *out_cu = NULL, *isa_dir = NULL;
  int variants = 0;
  hkc_file **files = calloc((size_t)argc, sizeof *files);
  int nfiles = 0, bad = 0;
  if (!files) {
    fprintf(stderr, "hk-gen: out of memory\n");
    return 2;
  }
  hku_diags d = HKU_DIAGS_INIT;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--c") && i + 1 < argc)
      out_c = argv[++i];
    else if (!strcmp(argv[i], "--header") && i + 1 < argc)
      out_h = argv[++i];
    else if (!strcmp(argv[i], "--cuda") && i + 1 < argc)
      out_cu = argv[++i];
    else if ((!strcmp(argv[i], "--isa") || !strcmp(argv[i], "--isa-base")) &&
             i + 1 < argc) {
      variants = !strcmp(argv[i], "--isa");
      isa_dir = argv[++i];
    }
    else if (argv[i][0] == '-') {
      fprintf(stderr, "usage: hk-gen --c OUT.c --header OUT.h [--cuda OUT.cu] "
                      "[--isa DIR | --isa-base DIR] FILE.json...\n");
      return 2;
    } else if (hkc_file_load(argv[i], &files[nfiles], &d) == HK_OK)
      nfiles++;
    else
      bad = 1;
  }
  if (bad || d.n) {
    hku_buf msg = HKU_BUF_INIT;
    hku_diags_format(&d, &msg);
    fputs(hku_buf_str(&msg), stderr);
    hku_buf_free(&msg);
    return 1;
  }
  if (!out_c || !out_h || !nfiles) {
    fprintf(stderr, "hk-gen: need --c, --header and kernel files\n");
    return 2;
  }
  int rc = 0;
  hku_buf c = HKU_BUF_INIT, h = HKU_BUF_INIT, cu = HKU_BUF_INIT;
  if (hkc_emit_c(files, nfiles, HKC_EMIT_STDLIB, &c) ||
      hkc_emit_stdlib_header(files, nfiles, &h) ||
      (out_cu && hkc_emit_cuda(files, nfiles, HKC_EMIT_STDLIB, &cu))) {
    fprintf(stderr, "hk-gen: out of memory\n");
    rc = 2;
  } else if (write_if_changed(out_c, hku_buf_str(&c)) ||
             write_if_changed(out_h, hku_buf_str(&h)) ||
             (out_cu && write_if_changed(out_cu, hku_buf_str(&cu))) ||
             (isa_dir && write_isa(isa_dir, files, nfiles, variants))) {
    rc = 2;
  }
  hku_buf_free(&c);
  hku_buf_free(&h);
  hku_buf_free(&cu);
  for (int i = 0; i < nfiles; i++) hkc_file_free(files[i]);
  free(files);
  hku_diags_free(&d);
  return rc;
}
