/* build.h — the one path from a kernel description to compiled code:
 * description -> generated unit (codegen.h) -> compile (compiler.h) ->
 * check (elfcheck) -> cache key -> object. The loader (module.c, opt.c),
 * `hk check`, `hk build` and the GPU (cuda/module.c) all go through it.
 * Errors follow common/internal.h.
 */
#ifndef HK_BUILD_H
#define HK_BUILD_H

#include <stddef.h>
#include <stdint.h>

#include "codegen.h"
#include "compiler.h"
#include "diag.h"
#include "internal.h"

/* Generates the unit of every instance of f in lang (codegen.h flags).
 * HK_OK and *out, or HK_ENOMEM (said in d). f must outlive the unit. */
HK_INTERNAL int hk__build_unit(const hkc_file *f, hkc_lang lang,
                               unsigned flags, hkc_unit **out, hku_diags *d);

/* The prefixes of the C entry points the compiled code of instance in
 * defines, each followed by its name: HK_ABI_RANGE, HK_ABI_LENS and, for a
 * reduction, HK_ABI_MERGE, HK_ABI_ROWRED and HK_ABI_COLRED (the last two
 * optional: code built before them lacks them), in that order. Returns
 * how many (2 or 5). */
HK_INTERNAL int hk__entry_prefixes(const hkc_instance *in,
                                   const char *const **prefixes);

/* Compiles u with c (hk__compile). When the compiler's output could not
 * be located in the kernel file, its one unlocated message is said as
 * what followed by the output ("compiling failed: ..."). Same codes as
 * compile (compiler.h). */
HK_INTERNAL int hk__build_compile(const hk_compiler_t *c, const hkc_unit *u,
                                  const hk_compile_opts_t *o,
                                  const char *what, hk_object_t *out,
                                  hku_diags *d);

/* 1 when d's first diagnostic is located in a kernel file (a compile
 * error in an author's code), else 0. */
HK_INTERNAL int hk__build_located(const hku_diags *d);

/* Checks what the shared object open at fd (its first size bytes) would
 * run and import: only the math functions (symbols.h), no constructors,
 * no libraries but libc and libm. HK_OK, or HK_EREFUSED with the reason
 * ("refused: ...") about path in d. */
HK_INTERNAL int hk__check_object(int fd, size_t size, const char *path,
                                 hku_diags *d);

/* n bytes at p in a new anonymous memory file (close-on-exec). HK_OK and
 * *fd, or HK_EIO with "WHAT: <errno's words>" about path in d. */
HK_INTERNAL int hk__memfd(const void *p, size_t n, const char *path,
                          const char *what, int *fd, hku_diags *d);

/* The image of a cc object in an anonymous memory file, checked
 * (hk__check_object). HK_OK and *fd (the caller closes it), HK_EREFUSED,
 * or HK_EIO (said in d about path). */
HK_INTERNAL int hk__build_image_fd(const hk_object_t *o, const char *path,
                                   int *fd, hku_diags *d);

/* The disk cache key of a C unit for tier opt: SHA-256 of the ABI
 * version, the compiler's identity, its flags, the CPU, the prelude (all
 * hashed once per process), the flags of the unit's kernels
 * (hk__cc_unit_flags) and the unit's text around the prelude. */
HK_INTERNAL void hk__build_key(const hkc_unit *u, const char *identity,
                               const char *flags, const char *cpu,
                               uint8_t key[32]);

/* ---- build_batch.c: several units, one compile ---- */

/* 1 when u can be built in a batch with others: it holds the shared
 * prelude exactly (hkc_prelude_text), and its own code undefines each
 * macro it defines and has no other preprocessor directive. */
HK_INTERNAL int hk__build_mergeable(const hkc_unit *u);

/* Builds the n mergeable units (distinct instance names, the same
 * hk__cc_unit_flags) with the system
 * compiler cc (compiler_cc.h) as ONE object holding the entry points of
 * them all: one translation unit, the prelude once. HK_OK and out's image
 * (malloc'ed; not yet checked: hk__build_image_fd). HK_ECOMPILE with
 * bad[k] = 1 for each unit k the compiler complained about (build those
 * alone: their errors are then located as a lone build locates them), or
 * none marked and the output said in d when it named no unit (a deadline,
 * a cancel, the linker). Else as hk__cc_build_text. */
struct hk_cc;
HK_INTERNAL int hk__build_batch(const struct hk_cc *cc,
                                const hkc_unit *const *units, int n,
                                const hk_compile_opts_t *o, hk_object_t *out,
                                char *bad, hku_diags *d);

/* `hk check`: compiles f's C kernels with libtcc, as tier jit does, and
 * reports C errors located in the kernel file. HK_OK (also when f has no
 * CPU kernel), HK_ECOMPILE or HK_ENOMEM, said in d. */
HK_INTERNAL int hk__build_check(const hkc_file *f, hku_diags *d);

/* `hk build`: compiles f (which has CPU kernels) into a prebuilt plugin
 * with the system compiler cc (compiler_cc.h) for purpose, checks the
 * object and writes it to out (mode 0755, a temporary file renamed over
 * it). HK_OK; HK_EUNSUPPORTED (no usable compiler); HK_ECOMPILE (located
 * or not: hk__build_located); HK_EREFUSED; HK_EIO; HK_ENOMEM. Said in d. */
HK_INTERNAL int hk__build_prebuilt(const hkc_file *f, const struct hk_cc *cc,
                                   hk_purpose_t purpose, const char *out,
                                   hku_diags *d);

#endif /* HK_BUILD_H */
