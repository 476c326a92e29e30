/* elfcheck.h — what a shared object imports and runs on its own, read from
 * the file before it is ever loaded (tier opt's objects, prebuilt plugins). */
#ifndef HK_ELFCHECK_H
#define HK_ELFCHECK_H

#include <stddef.h>

#include "diag.h"
#include "hk.h"
#include "internal.h"

/* Callback: 1 when sym may be imported. */
typedef int (*hk_elf_allow_fn)(const char *sym, void *ctx);

/* Bits of *runs_code: code the object runs without being called. */
#define HK_ELF_RUNS_AT_LOAD \
  1 /* DT_INIT, DT_INIT_ARRAY, DT_PREINIT_ARRAY, ifuncs */
#define HK_ELF_RUNS_AT_UNLOAD 2 /* DT_FINI, DT_FINI_ARRAY */

/* Reads the ELF shared object open at fd (a regular file; read with pread
 * from offset 0, the file position is neither used nor moved). Only its
 * first `size` bytes are ELF (a cache entry carries a trailer after the
 * image) and nothing past them is read.
 *
 * Checks that it is a 64-bit ET_DYN object of this host's byte order and
 * machine (EM_X86_64 on x86-64, EM_AARCH64 on aarch64), then finds the
 * dynamic symbol table the way the dynamic loader does — through PT_DYNAMIC
 * and PT_LOAD, not the section headers, which the loader ignores — and calls
 * allow(name, ctx) for every undefined symbol with a non-empty name, weak
 * ones included, in table order. The table's extent is the largest of what
 * DT_HASH, DT_GNU_HASH, the relocation tables (DT_RELA, DT_REL, DT_JMPREL)
 * and a matching SHT_DYNSYM section say, so no symbol the loader could
 * reach goes unchecked.
 *
 * Reports, whatever the imports:
 *   *runs_code   HK_ELF_RUNS_AT_LOAD | HK_ELF_RUNS_AT_UNLOAD bits, 0 when
 *                the object runs nothing by itself. AT_LOAD: DT_INIT,
 *                DT_INIT_ARRAY or DT_PREINIT_ARRAY with a non-zero (or
 *                missing) size, an IRELATIVE relocation or an ifunc symbol.
 *   needed       the DT_NEEDED names other than libc.so.6 and libm.so.6,
 *                and any DT_FILTER / DT_AUXILIARY / DT_AUDIT / DT_DEPAUDIT
 *                names, separated by single spaces ("" when none; cut
 *                short with "..." when they do not fit in neededlen, which
 *                should be at least 4 so that "..." fits).
 * A caller that only wants pure code refuses a non-zero *runs_code and a
 * non-empty needed as well as a return of 1.
 *
 * Returns HK_OK (0) when every import is allowed; 1 when one is not (the
 * first one in table order is copied into bad, at most badlen bytes with
 * the NUL); HK_EREFUSED when the file is not such an object or is
 * malformed or unreadable, with a message about path in d saying what and
 * where ("not an ELF file", "section header table past end of file
 * (offset 0x..., ...)"). bad and needed may be NULL (with length 0);
 * runs_code and d may be NULL.
 *
 * Never reads out of bounds whatever the bytes; allocates one buffer of
 * `size` bytes, and only after checking that the file holds that many. */
HK_INTERNAL int hk__elf_check_imports(int fd, size_t size,
                                      hk_elf_allow_fn allow, void *ctx,
                                      char *bad, size_t badlen, int *runs_code,
                                      char *needed, size_t neededlen,
                                      const char *path, hku_diags *d);

#endif /* HK_ELFCHECK_H */
