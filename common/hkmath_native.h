/* hkmath_native.h — common/hkmath.h compiled into host code (the tests,
 * tools/mathcheck.c, bench/math_bench.c): the bit casts and qualifiers it
 * expects, then the text itself. Needs <math.h> and <stdint.h>. Host code
 * including it must be compiled with -ffp-contract=off to get the bits
 * kernels get. */
#ifndef HKM_NATIVE_H
#define HKM_NATIVE_H

#include <string.h>

#define HKM_FN static inline __attribute__((unused, always_inline))
#define HKM_TABLE static const __attribute__((unused))
HKM_FN uint32_t hk_f2u(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}
HKM_FN float hk_u2f(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
HKM_FN uint64_t hk_d2u(double f) {
  uint64_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}
HKM_FN double hk_u2d(uint64_t u) {
  double f;
  memcpy(&f, &u, sizeof f);
  return f;
}

#include "hkmath.h"

#endif
