/* symbols.h — the only functions compiled kernels may reach.
 *
 * Kernels are linked with no C library. Tier jit (libtcc) gets exactly this
 * table as its symbols; tier opt and prebuilt plugins are shared objects
 * whose imports are checked against hk__symbol_allowed() before dlopen.
 */
#ifndef HK_SYMBOLS_H
#define HK_SYMBOLS_H

#include <stddef.h>

#include "internal.h"

typedef struct hk_symbol {
  const char *name;
  void *addr;
} hk_symbol_t;

/* The symbols given to libtcc: the math functions of common/mathfns.h
 * (double and float), memcpy/memset/memmove, and the integer/float
 * conversion helpers tcc's x86-64 code generator calls (normally in
 * libtcc1.a). Sets *count. */
HK_INTERNAL const hk_symbol_t *hk__jit_symbols(size_t *count);
/* The same table with hkmath.h's functions compiled for any CPU (fma 0)
 * or for AVX2 and FMA (fma 1: x86-64 only; elsewhere the same table): the
 * one hk__jit_symbols gives is the second where hk__isa_level() says the
 * CPU runs x86-64-v3. Only the second may be called without FMA. */
HK_INTERNAL const hk_symbol_t *hk__jit_symbols_for(int fma, size_t *count);

/* 1 when a shared object may import name: a math function,
 * memcpy/memset/memmove, or a math function compilers synthesise from
 * kernel code (sincos, sincosf: sin and cos of one argument; exp10,
 * exp10f). */
HK_INTERNAL int hk__symbol_allowed(const char *name);

/* The i-th name hk__symbol_allowed allows (i from 0), NULL past the last:
 * for the tests, which check that each exists in libm or libc. */
HK_INTERNAL const char *hk__allowed_import(size_t i);

#endif
