/* fuzz_kernel.c — libFuzzer target: kernel-file text → hkc_file_parse
 * (JSON, validation, body and len checks) → hkc_unit_emit for C and CUDA,
 * plus the public description of every instance and the diagnostics'
 * formatting. Any input must end in HK_OK or an error, never a crash, a
 * leak or undefined behaviour. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "codegen.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  hkc_file *f = NULL;
  hku_diags d = HKU_DIAGS_INIT;
  int rc = hkc_file_parse("fuzz.json", (const char *)data, size, &f, &d);
  hku_buf msg = HKU_BUF_INIT;
  hku_diags_format(&d, &msg);
  hku_diags_first(&d, &msg);
  hku_buf_free(&msg);
  hku_diags_free(&d);
  if (rc != HK_OK) return 0;
  for (int i = 0; i < hkc_file_ninstances(f); i++) {
    hk_kernel_info_t *info =
        hkc_instance_info_new(hkc_file_instance(f, i), "fuzz", "fuzz.json");
    free(info);
  }
  static const unsigned flags[] = {0, HKC_UNIT_PREBUILT};
  for (int lang = 0; lang < 2; lang++) {
    hkc_unit *u = NULL;
    if (hkc_unit_emit(f, lang ? HKC_LANG_CUDA : HKC_LANG_C,
                      lang ? 0 : flags[size & 1], &u) == HK_OK) {
      /* A compiler's error about the first line of the unit, located. */
      hku_diags rd = HKU_DIAGS_INIT;
      hkc_unit_report(u, "fuzz.c:1:1: error: x\n", "cc", &rd);
      hku_diags_free(&rd);
      hkc_unit_free(u);
    }
  }
  hkc_file_free(f);
  return 0;
}
