/* symbols.c — the only functions compiled kernels may reach (symbols.h). */
#include "symbols.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

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

#define ENTRY(name, sig) {#name, (void *)name}, {#name "f", (void *)name##f},
static const hk_symbol_t table[] = {
    HKC_MATH_FUNCTIONS(ENTRY)
    {"memcpy", (void *)memcpy},
    {"memset", (void *)memset},
    {"memmove", (void *)memmove},
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

/* The helpers at the end of the table are for tcc only. */
#define TCC_HELPERS 9

const hk_symbol_t *hk__jit_symbols(size_t *count) {
  *count = sizeof table / sizeof *table;
  return table;
}

int hk__symbol_allowed(const char *name) {
  size_t n = sizeof table / sizeof *table - TCC_HELPERS;
  for (size_t i = 0; i < n; i++)
    if (!strcmp(table[i].name, name)) return 1;
  return 0;
}
