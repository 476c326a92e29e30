/* fuzz_body.c — libFuzzer target: author code (bodies, raw kernels'
 * functions, expressions) through the sandbox lexer and code checker of
 * codegen/lex.c, and the helpers the emitters use on checked code. The
 * first byte picks the mode, the targets and whether names are limited. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernel.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  unsigned sel = data[0];
  data++;
  size--;
  char *text = malloc(size + 1);
  if (!text) return 0;
  memcpy(text, data, size);
  text[size] = '\0';
  hkc_src src = {text, size, (char *)"body", NULL, 0};
  hkj_doc doc = {0};
  doc.path = (char *)"fuzz.json";
  static const char *const idents[] = {"x", "y", "n", "i", "alpha", NULL};
  hkc_code_mode mode = (hkc_code_mode)(sel & 3);
  unsigned targets = (sel & 4) ? (HK_TARGET_CPU | HK_TARGET_CUDA)
                               : HK_TARGET_CPU;
  hku_diags d = HKU_DIAGS_INIT;
  int rc = hkc_check_code(&doc, &src, mode, (sel & 8) ? idents : NULL,
                          "the parameters", targets, &d);
  hku_diags_free(&d);
  /* The emitters' helpers run on code that passed the check. */
  if (rc == HK_OK || (sel & 16)) {
    free(hkc_expr_oneline(&src));
    (void)hkc_code_find(&src, "x");
    (void)hkc_code_calls_math(&src);
  }
  free(text);
  return 0;
}
