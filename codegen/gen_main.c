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
#include "kernel.h"

/* Writes text to path unless the file already holds exactly that. */
static int write_if_changed(const char *path, const char *text) {
  size_t n = strlen(text);
  FILE *f = fopen(path, "rb");
  if (f) {
    char *old = malloc(n + 2);
    size_t got = old ? fread(old, 1, n + 1, f) : 0;
    fclose(f);
    int same = old && got == n && memcmp(old, text, n) == 0;
    free(old);
    if (same) return 0;
  }
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  f = fopen(tmp, "wb");
  if (!f || fwrite(text, 1, n, f) != n || fclose(f) != 0) {
    fprintf(stderr, "hk-gen: cannot write %s\n", tmp);
    return -1;
  }
  if (rename(tmp, path) != 0) {
    fprintf(stderr, "hk-gen: cannot rename %s to %s\n", tmp, path);
    return -1;
  }
  return 0;
}

int main(int argc, char **argv) {
  const char *out_c = NULL, *out_h = NULL, *out_cu = NULL;
  hkc_file **files = calloc((size_t)argc, sizeof *files);
  int nfiles = 0, bad = 0;
  hkc_diags d = HKC_DIAGS_INIT;
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
    } else if (hkc_file_load(argv[i], &files[nfiles], &d) == 0)
      nfiles++;
    else
      bad = 1;
  }
  if (bad || d.n) {
    hkc_buf msg = HKC_BUF_INIT;
    hkc_diags_format(&d, &msg);
    fputs(hkc_buf_str(&msg), stderr);
    hkc_buf_free(&msg);
    return 1;
  }
  if (!out_c || !out_h || !nfiles) {
    fprintf(stderr, "hk-gen: need --c, --header and kernel files\n");
    return 2;
  }
  int rc = 0;
  hkc_buf c = HKC_BUF_INIT, h = HKC_BUF_INIT, cu = HKC_BUF_INIT;
  if (hkc_emit_c(files, nfiles, HKC_EMIT_STDLIB, &c) ||
      hkc_emit_stdlib_header(files, nfiles, &h) ||
      (out_cu && hkc_emit_cuda(files, nfiles, HKC_EMIT_STDLIB, &cu))) {
    fprintf(stderr, "hk-gen: out of memory\n");
    rc = 2;
  } else if (write_if_changed(out_c, hkc_buf_str(&c)) ||
             write_if_changed(out_h, hkc_buf_str(&h)) ||
             (out_cu && write_if_changed(out_cu, hkc_buf_str(&cu)))) {
    rc = 2;
  }
  hkc_buf_free(&c);
  hkc_buf_free(&h);
  hkc_buf_free(&cu);
  for (int i = 0; i < nfiles; i++) hkc_file_free(files[i]);
  free(files);
  hkc_diags_free(&d);
  return rc;
}
