/* symbols.c — the only functions compiled kernels may reach (symbols.h). */
#include "symbols.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "dispatch.h"
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
 * are instructions where the CPU has FMA and glibc's fmaf (correctly
 * rounded too: the same bits, 4 times slower) where it has not: on x86-64
 * each function is compiled twice, for any CPU (jit_NAME) and for FMA CPUs
 * (jitv3_NAME, AVX2 and FMA), and hk__jit_symbols hands out the table
 * this CPU runs. Not an ifunc: sanitizer runtimes are not up when the
 * loader runs ifunc resolvers (ThreadSanitizer crashes in them). */
#if defined(__x86_64__) && defined(__GNUC__)
#define HKM_V3 1
#define HKM_V3_TARGET __attribute__((target("avx,avx2,fma")))
#else
#define HKM_V3 0
#define HKM_V3_TARGET
#endif
#define HKM_WRAP(pre, target, n)                                          \
  target static double pre##n(double x) { return hk_##n(x); }            \
  target static float pre##n##f(float x) { return hk_##n##f(x); }
#define HKM_WRAP2(pre, target, n)                                         \
  target static double pre##n(double x, double y) { return hk_##n(x, y); } \
  target static float pre##n##f(float x, float y) {                      \
    return hk_##n##f(x, y);                                               \
  }
#define HKM_WRAP_ALL(pre, target)                                         \
  HKM_WRAP(pre, target, exp) HKM_WRAP(pre, target, expm1)                 \
  HKM_WRAP(pre, target, log) HKM_WRAP(pre, target, log1p)                 \
  HKM_WRAP(pre, target, tanh) HKM_WRAP(pre, target, erf)                  \
  HKM_WRAP(pre, target, sin) HKM_WRAP(pre, target, cos)                   \
  HKM_WRAP2(pre, target, pow) HKM_WRAP(pre, target, rsqrt)                \
  HKM_WRAP(pre, target, sigmoid) HKM_WRAP(pre, target, expp1)
HKM_WRAP_ALL(jit_, )
#if HKM_V3
HKM_WRAP_ALL(jitv3_, HKM_V3_TARGET)
#endif

#define ENTRY(name, sig) {#name, (void *)name}, {#name "f", (void *)name##f},
#define HKM_ENTRY(n) {"hk_" #n, (void *)jit_##n}, {"hk_" #n "f", (void *)jit_##n##f},
#define HKM_ENTRY_V3(n) \
  {"hk_" #n, (void *)jitv3_##n}, {"hk_" #n "f", (void *)jitv3_##n##f},
/* One table; the hkmath.h functions' entries given by hkm. */
#define TABLE(hkm)                                                        \
  {                                                                       \
    HKC_MATH_LIBM(ENTRY){"memcpy", (void *)memcpy},                       \
        {"memset", (void *)memset}, {"memmove", (void *)memmove},         \
        /* common/hkmath.h (above): what tcc calls */                     \
        HKC_MATH_HKMATH(hkm){"__floatundisf", (void *)tcc_floatundisf},   \
        {"__floatundidf", (void *)tcc_floatundidf},                       \
        {"__floatundixf", (void *)tcc_floatundixf},                       \
        {"__fixunssfdi", (void *)tcc_fixunssfdi},                         \
        {"__fixunsdfdi", (void *)tcc_fixunsdfdi},                         \
        {"__fixunsxfdi", (void *)tcc_fixunsxfdi},                         \
        {"__fixsfdi", (void *)tcc_fixsfdi}, {"__fixdfdi", (void *)tcc_fixdfdi}, \
        {"__fixxfdi", (void *)tcc_fixxfdi},                               \
  }
static const hk_symbol_t table[] = TABLE(HKM_ENTRY);
#if HKM_V3
static const hk_symbol_t table_v3[] = TABLE(HKM_ENTRY_V3);
#endif
#undef TABLE
#undef HKM_ENTRY
#undef HKM_ENTRY_V3
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

const hk_symbol_t *hk__jit_symbols_for(int fma, size_t *count) {
  *count = sizeof table / sizeof *table;
#if HKM_V3
  if (fma) return table_v3;
#else
  (void)fma;
#endif
  return table;
}

const hk_symbol_t *hk__jit_symbols(size_t *count) {
  return hk__jit_symbols_for(hk__isa_level() >= HK_ISA_V3, count);
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
