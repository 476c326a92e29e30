/* jit_tcc.h — tier jit: generated C compiled in memory by libtcc. */
#ifndef HK_JIT_TCC_H
#define HK_JIT_TCC_H

#include "buf.h"
#include "internal.h"

typedef struct hk_tcc hk_tcc_t;

/* Compiles src, a self-contained plugin translation unit (emit.h), and
 * relocates it into executable memory. Only the symbols of symbols.h are
 * visible to it. Returns the unit that owns the code (keep it alive as long
 * as the code may run), or NULL with the compiler's messages appended to
 * msgs, one per line as tcc writes them ("<string>:LINE: error: MSG",
 * "tcc: error: undefined symbol 'X'"). Serialized by the process-wide
 * libtcc lock, because libtcc 0.9.27 keeps global state. */
HK_INTERNAL hk_tcc_t *hk__tcc_compile(const char *src, hku_buf *msgs);
/* The address of a global symbol of the unit, or NULL. */
HK_INTERNAL void *hk__tcc_symbol(hk_tcc_t *u, const char *name);
HK_INTERNAL void hk__tcc_free(hk_tcc_t *u);

#endif
