/* fuzz_npy.c — libFuzzer target: the .npy reader (tools/npy.c) on
 * arbitrary bytes, through its in-memory entry point hk_npy_parse; a file
 * it accepts is described and encoded again. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  hk_npy_t a;
  hku_diags d = HKU_DIAGS_INIT;
  hku_buf msg = HKU_BUF_INIT;
  int rc = hk_npy_parse(data, size, "fuzz.npy", &a, &d);
  hk_npy_error(&d, &msg);
  hku_buf_free(&msg);
  hku_diags_free(&d);
  if (rc != HK_OK) return 0;
  char desc[128];
  hk_npy_describe(&a, desc, sizeof desc);
  if (a.dtype != HK_DTYPE_INVALID && a.data) {
    void *bytes = NULL;
    size_t len = 0;
    if (hk_npy_encode(a.dtype, a.ndim, a.shape, a.data, &bytes, &len, NULL) ==
        HK_OK)
      free(bytes);
  }
  hk_npy_free(&a);
  return 0;
}
