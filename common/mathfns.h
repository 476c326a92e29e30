/* mathfns.h — the C99 <math.h> functions and constants a kernel body may use.
 *
 * The one list of what bodies may call. The body checker (lex.c), the
 * generated prelude (prelude.c) and the JIT's symbol table all expand it, so
 * they cannot disagree. Each entry names the double function; its float twin
 * is the same name with an "f" suffix. In bodies the double names are type
 * generic, as in <tgmath.h> and CUDA C++: exp(x) on a float computes expf(x).
 *
 * Functions that write through a pointer (frexp, modf, remquo), take a
 * string (nan) or long double (nexttoward) are left out on purpose.
 *
 * X(name, signature) with signature one of:
 *   D_D   double f(double)            D_DD  double f(double, double)
 *   D_DDD double f(double, double, double)
 *   D_DI  double f(double, int)       D_DL  double f(double, long)
 *   I_D   int f(double)               L_D   long f(double)
 *   LL_D  long long f(double)
 */
#ifndef HKC_MATHFNS_H
#define HKC_MATHFNS_H

/* Every function bodies may call: rsqrt, sigmoid and expp1, which only
 * common/hkmath.h has, then the C99 ones, as libm has them (the JIT's symbol
 * table holds those). */
#define HKC_MATH_FUNCTIONS(X)                                              \
  X(rsqrt, D_D) X(sigmoid, D_D) X(expp1, D_D) HKC_MATH_LIBM(X)
#define HKC_MATH_LIBM(X)                                                   \
  X(acos, D_D) X(asin, D_D) X(atan, D_D) X(atan2, D_DD) X(cos, D_D)          \
  X(sin, D_D) X(tan, D_D) X(acosh, D_D) X(asinh, D_D) X(atanh, D_D)          \
  X(cosh, D_D) X(sinh, D_D) X(tanh, D_D) X(exp, D_D) X(exp2, D_D)            \
  X(expm1, D_D) X(ilogb, I_D) X(ldexp, D_DI) X(log, D_D) X(log10, D_D)       \
  X(log1p, D_D) X(log2, D_D) X(logb, D_D) X(scalbn, D_DI) X(scalbln, D_DL)   \
  X(cbrt, D_D) X(fabs, D_D) X(hypot, D_DD) X(pow, D_DD) X(sqrt, D_D)         \
  X(erf, D_D) X(erfc, D_D) X(lgamma, D_D) X(tgamma, D_D) X(ceil, D_D)        \
  X(floor, D_D) X(nearbyint, D_D) X(rint, D_D) X(lrint, L_D)                 \
  X(llrint, LL_D) X(round, D_D) X(lround, L_D) X(llround, LL_D)              \
  X(trunc, D_D) X(fmod, D_DD) X(remainder, D_DD) X(copysign, D_DD)           \
  X(nextafter, D_DD) X(fdim, D_DD) X(fmax, D_DD) X(fmin, D_DD)               \
  X(fma, D_DDD)

/* The functions of HKC_MATH_FUNCTIONS that common/hkmath.h implements, the
 * same bits on every tier and CUDA (hk_exp, hk_expf, ...): in kernel code
 * exp(x) and expf(x) call these, never libm. rsqrt(x) is 1 / sqrt(x),
 * sigmoid(x) 1 / (1 + exp(-x)) and expp1(x) exp(x) + 1, extensions of C99. */
#define HKC_MATH_HKMATH(X)                                                \
  X(exp) X(expm1) X(log) X(log1p) X(tanh) X(erf) X(sin) X(cos) X(pow)      \
  X(rsqrt) X(sigmoid) X(expp1)

/* Classification macros, callable like functions; type generic. */
#define HKC_MATH_MACROS(X) X(isnan) X(isinf) X(isfinite) X(isnormal) X(signbit)

/* Constants: <math.h> (with the common POSIX M_ ones), <float.h>, and the
 * <stdint.h> limits, which integer reductions need for identities. */
#define HKC_MATH_CONSTANTS(X)                                              \
  X(INFINITY) X(NAN) X(HUGE_VAL) X(HUGE_VALF) X(M_E) X(M_LOG2E)              \
  X(M_LOG10E) X(M_LN2) X(M_LN10) X(M_PI) X(M_PI_2) X(M_PI_4) X(M_1_PI)       \
  X(M_2_PI) X(M_2_SQRTPI) X(M_SQRT2) X(M_SQRT1_2) X(FLT_MAX) X(FLT_MIN)      \
  X(FLT_EPSILON) X(DBL_MAX) X(DBL_MIN) X(DBL_EPSILON) X(INT8_MIN)            \
  X(INT8_MAX) X(INT16_MIN) X(INT16_MAX) X(INT32_MIN) X(INT32_MAX)            \
  X(INT64_MIN) X(INT64_MAX) X(UINT8_MAX) X(UINT16_MAX) X(UINT32_MAX)         \
  X(UINT64_MAX) X(SIZE_MAX)

/* The conversions of f16 and bf16 (codegen/prelude.c), which any kernel code
 * may call, e.g. a raw body reading a `const uint16_t *` f16 buffer. They
 * are defined in every prelude (C and CUDA), so they need no symbol. */
#define HKC_CONV_FUNCTIONS(X) \
  X(hk_f16_to_f32) X(hk_f32_to_f16) X(hk_bf16_to_f32) X(hk_f32_to_bf16)

/* Type names the prelude defines besides the C keywords. */
#define HKC_TYPE_NAMES(X)                                                  \
  X(size_t) X(ptrdiff_t) X(int8_t) X(int16_t) X(int32_t) X(int64_t)          \
  X(uint8_t) X(uint16_t) X(uint32_t) X(uint64_t)

#endif
