/* gen_main.c — hk-gen, the build-time generator of the inline stdlib.
 *
 *   hk-gen --c OUT.c --header OUT.h [--cuda OUT.cu] FILE.json...
 *
 * Validates every stdlib kernel file and writes the C compiled into libhk
 * (typed functions, entry points, the registry table), the public header
 * hk_stdlib.h and the CUDA source. An output is rewritten only when its text
 * changes, so an unchanged stdlib rebuilds nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit.h"
#include "fsutil.h"
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

int main(int argc, char **argv) {
  const char *out_c = NULL, *out_h = NULL, *out_cu = NULL;
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
    else if (argv[i][0] == '-') {
      fprintf(stderr, "usage: hk-gen --c OUT.c --header OUT.h [--cuda OUT.cu] "
                      "FILE.json...\n");
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
             (out_cu && write_if_changed(out_cu, hku_buf_str(&cu)))) {
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
