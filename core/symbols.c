/* symbols.c — the only functions compiled kernels may reach (symbols.h). */
#include "symbols.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "hkmath_native.h"
#include "mathfns.h"

/* tcc's x86-64 code calls these for conversions it does not inline; gcc
 * compiles them to single instructions. Out-of-range conversions do what
 * the hardware does, as in libtcc1. */
static float tcc_floatundisf(uint64_t u) { return (float)u; }
static double tcc_floatundidf(uint64_t u) { return (double)u; }
static long double tcc_floatundixf(uint64_t u) { return (long double)u; }
static uint64_t tcc_fixunssfdi(float f) { return (uint64_t)f; }
static uint64_t tcc_fixunsdfdi(double f) { return (uint64_t)f; }
static uint64_t tcc_fixunsxfdi(long double f) { return (uint64_t)f; }
static int64_t tcc_fixsfdi(float f) { return (int64_t)f; }
static int64_t tcc_fixdfdi(double f) { return (int64_t)f; }
static int64_t tcc_fixxfdi(long double f) { return (int64_t)f; }

/* common/hkmath.h's functions for tcc (codegen/prelude.c), compiled here
 * with the kernel's rounding (-ffp-contract=off). Its fused multiply-adds
 * are instructions where the CPU has FMA and glibc's fmaf/fma (correctly
 * rounded too: the same bits, 4 times slower) where it has not: on x86-64
 * each function is compiled twice, with FMA and without, and the loader
 * picks one by the CPU (an ifunc). */
#if defined(__x86_64__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define HKM_CLONES __attribute__((target_clones("fma", "default")))
#endif
#endif
#ifndef HKM_CLONES
#define HKM_CLONES
#endif
#define HKM_WRAP(n)                                                       \
  HKM_CLONES static double jit_##n(double x) { return hk_##n(x); }        \
  HKM_CLONES static float jit_##n##f(float x) { return hk_##n##f(x); }
#define HKM_WRAP2(n)                                                      \
  HKM_CLONES static double jit_##n(double x, double y) {                 \
    return hk_##n(x, y);                                                  \
  }                                                                       \
  HKM_CLONES static float jit_##n##f(float x, float y) {                 \
    return hk_##n##f(x, y);                                               \
  }
HKM_WRAP(exp) HKM_WRAP(expm1) HKM_WRAP(log) HKM_WRAP(log1p) HKM_WRAP(tanh)
HKM_WRAP(erf) HKM_WRAP(sin) HKM_WRAP(cos) HKM_WRAP2(pow) HKM_WRAP(rsqrt)
HKM_WRAP(sigmoid)
#undef HKM_WRAP
#undef HKM_WRAP2

#define ENTRY(name, sig) {#name, (void *)name}, {#name "f", (void *)name##f},
static const hk_symbol_t table[] = {
    HKC_MATH_LIBM(ENTRY)
    {"memcpy", (void *)memcpy},
    {"memset", (void *)memset},
    {"memmove", (void *)memmove},
    /* common/hkmath.h (above): what tcc calls */
#define HKM_ENTRY(n) {"hk_" #n, (void *)jit_##n}, {"hk_" #n "f", (void *)jit_##n##f},
    HKC_MATH_HKMATH(HKM_ENTRY)
#undef HKM_ENTRY
    {"__floatundisf", (void *)tcc_floatundisf},
    {"__floatundidf", (void *)tcc_floatundidf},
    {"__floatundixf", (void *)tcc_floatundixf},
    {"__fixunssfdi", (void *)tcc_fixunssfdi},
    {"__fixunsdfdi", (void *)tcc_fixunsdfdi},
    {"__fixunsxfdi", (void *)tcc_fixunsxfdi},
    {"__fixsfdi", (void *)tcc_fixsfdi},
    {"__fixdfdi", (void *)tcc_fixdfdi},
    {"__fixxfdi", (void *)tcc_fixxfdi},
};
#undef ENTRY

/* The helpers at the end of the table are for tcc only: hkmath.h's
 * functions (tier opt and hk build inline them) and the conversions. */
#define HKM_COUNT(n) +2
#define TCC_HELPERS (9 HKC_MATH_HKMATH(HKM_COUNT))

/* Math functions the system compiler (tier opt, hk build) synthesises from
 * calls kernel code makes, at the kernel flags (abi.h) with or without
 * -march=native: gcc and clang merge sin(x) and cos(x) of one argument into
 * one sincos(x, &s, &c) call (sincosf for floats). Bodies cannot call them
 * (the body checker knows only mathfns.h), tcc never emits them, and they
 * exist in glibc's and musl's libm. exp10 and exp10f are what pow(10, x)
 * becomes where a compiler rewrites it (gcc under -funsafe-math-
 * optimizations; not at hk's flags): math all the same, allowed so that a
 * compiler doing it does not send a kernel back to tier jit.
 * Not reachable at hk's flags, so not allowed: glibc's __*_finite names
 * (only from <math.h> with -ffinite-math-only, and the prelude includes no
 * header) and libmvec's vector names _ZGV* (gcc needs <math.h>'s simd
 * declarations and -ffast-math, clang -fveclib). The memcpy family, which
 * loops and struct copies become, is in the table above. */
static const char *const synthesised[] = {"sincos", "sincosf", "exp10",
                                          "exp10f"};

const hk_symbol_t *hk__jit_symbols(size_t *count) {
  *count = sizeof table / sizeof *table;
  return table;
}

const char *hk__allowed_import(size_t i) {
  size_t n = sizeof table / sizeof *table - TCC_HELPERS;
  if (i < n) return table[i].name;
  i -= n;
  return i < sizeof synthesised / sizeof *synthesised ? synthesised[i] : NULL;
}

int hk__symbol_allowed(const char *name) {
  const char *s;
  for (size_t i = 0; (s = hk__allowed_import(i)); i++)
    if (!strcmp(s, name)) return 1;
  return 0;
}
