/* fuzz_elf.c — libFuzzer target: the ELF import checker
 * (core/elfcheck.c) on arbitrary bytes, read through a memfd as it reads
 * a cache entry or a plugin. Every undefined symbol is offered to the
 * callback; the checker must never read out of bounds. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "elfcheck.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int allow(const char *sym, void *ctx) {
  (void)ctx;
  return strncmp(sym, "sin", 3) == 0 || strlen(sym) < 3;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static int fd = -1;
  if (fd < 0) fd = memfd_create("fuzz_elf", 0);
  if (fd < 0) return 0;
  if (ftruncate(fd, 0) != 0) return 0;
  if (size && pwrite(fd, data, size, 0) != (ssize_t)size) return 0;
  char bad[64], needed[64];
  int runs = 0;
  hku_diags d = HKU_DIAGS_INIT;
  hk__elf_check_imports(fd, size, allow, NULL, bad, sizeof bad, &runs, needed,
                        sizeof needed, "fuzz.so", &d);
  hku_diags_free(&d);
  /* A file shorter than the size claimed must be refused, not overread. */
  if (size > 1) {
    hku_diags d2 = HKU_DIAGS_INIT;
    hk__elf_check_imports(fd, size + 64, allow, NULL, NULL, 0, NULL, NULL, 0,
                          "fuzz.so", &d2);
    hku_diags_free(&d2);
  }
  return 0;
}
