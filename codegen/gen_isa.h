/* gen_isa.h — hk-gen's instruction-set variants of the stdlib (gen_isa.c). */
#ifndef HK_GEN_ISA_H
#define HK_GEN_ISA_H

#include "emit.h"

/* Each appends one generated file's text to o; HK_OK or HK_ENOMEM. */

/* hk_stdlib_rename.h: a macro per global of hk_stdlib.c. */
int hkc_gen_isa_rename(hkc_file *const *files, int nfiles, hku_buf *o);
/* hk_stdlib_{base,v3,v4,v4x}.c: hk_stdlib.c renamed for level (HK_ISA_*). */
int hkc_gen_isa_variant(int level, hku_buf *o);
/* hk_stdlib_isa.c: the table of variants (hk__stdlib_isa) and, when
 * variants is set, the public hk_NAME as ifuncs over them. */
int hkc_gen_isa_dispatch(hkc_file *const *files, int nfiles, int variants,
                         hku_buf *o);

#endif
