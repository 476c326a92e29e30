/* test_stdlib.c — every stdlib op against a plain reference (the BLIS rule of
 * STYLE.md).
 *
 * Every typed function hk_NAME_TYPE of hk_stdlib.h runs at n = 0, 1, 7, 1000,
 * 65536+3 and 2^20+5 (softmax: rows x cols shapes), on an aligned buffer and
 * on one a single element off, each with a sentinel guard zone before and
 * after, and is compared with a scalar reference written here. The result
 * it gives is then the yardstick for every other way to run it, which must
 * agree bit for bit: the registry (hk__run on the generated table), thread
 * counts 1, 2, 3 and 8, the parallel path forced at small n
 * (hk__par_set_min), and in place (out == an input). Reductions get inputs
 * whose sums cancel for that, so that any change of summation order shows.
 * The table itself is checked against the kernel files (names, params,
 * roles, types, lens), as written down here.
 *
 * Tolerances, and why:
 *   exact  One IEEE operation, or a fixed sequence of them, that C spells the
 *          same way: add sub mul div minimum maximum neg abs scale axpy relu
 *          fill arange fma sqrt, and the integer ops (which wrap, as libhk is
 *          built with -fwrapv). The reference is the same expression in the
 *          same precision; bit for bit, except that a NaN need only be a NaN.
 *   libm   exp log tanh: 2 ulp from glibc's function in the same precision.
 *          glibc is within 1 ulp of the true value, and so must be any other
 *          acceptable implementation (a vector libm, another tier), so two of
 *          them may differ by 2 ulp and no more.
 *   act    sigmoid silu gelu: a libm call and 2 to 4 roundings: 4 ulp. gelu
 *          and silu also accept 4 eps |x| absolute: for x << 0, 1 + tanh(..)
 *          and 1 + e^-x cancel or blow up, so an ulp of difference inside
 *          becomes up to eps |x| / 2 in a result whose own ulp is far smaller.
 *   reductions  Against a long double reference: |err| <= n eps sum|x_i|
 *          (dot: (n+1) eps sum|x_i y_i|; norm2: (n+2) eps relative; mean: the
 *          sum's bound over n plus eps), the worst case of any summation
 *          order ((n-1) u sum|x_i| with u = eps / 2). At n = 2^20 that bound
 *          could not see a dropped element, so every size also runs on small
 *          integers whose partial sums are exact in any order (all below
 *          2^24), and those results must be exact. min and max are exact.
 *   softmax  Against long double, per element: softmax relative error
 *          (cols + R + 4) eps, R the largest |x - max| of the row (the
 *          rounding of x - max is amplified by exp, the row sum adds cols u);
 *          log_softmax absolute (|y| + 2|lse| + |max| + cols + R + 4) eps.
 *          A constant row must give exactly 1/cols.
 * Special values (NaN, +-inf, +-0, subnormals, overflow) are mixed into the
 * inputs of the ops whose docs or IEEE semantics say what they give.
 */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "check.h"
#include "dispatch.h"
#include "hk.h"
#include "threadpool.h"

#if defined(__clang__)
/* The references round every operation, as the kernels do (libhk is built
 * with -ffp-contract=off; gcc in ISO C mode does not contract either). */
#pragma STDC FP_CONTRACT OFF
#endif

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const size_t sizes[] = {0, 1, 7, 1000, 65536 + 3, (1u << 20) + 5};
/* From LARGE on every thread count runs; below it only the default and the
 * forced parallel path (the split needs more than 2048 elements). From BIG
 * on, to keep the run short: the odd offset only, and fewer thread counts
 * (2 is the default here anyway); these sizes are parallel without forcing. */
#define LARGE 65536u
#define BIG (1u << 20)
static const int thread_counts[] = {1, 2, 3, 8};
static const int thread_counts_big[] = {1, 3, 8};

/* hk__par_min as the library started (HK_PAR_MIN may have set it). */
static size_t par_min_saved[2];

/* ---- Kernel and instance descriptors ------------------------------------ */

/* The C signature of a typed function (and so the layout of its args). */
typedef enum shape {
  SH_X_OUT,    /* (const T *x, T *out, n); reductions too */
  SH_XY_OUT,   /* (const T *x, const T *y, T *out, n) */
  SH_XYZ_OUT,  /* (const T *x, const T *y, const T *z, T *out, n) */
  SH_X_A_OUT,  /* (const T *x, T alpha, T *out, n) */
  SH_A_X_Y,    /* (T alpha, const T *x, T *y, n), y inout */
  SH_V_OUT,    /* (T value, T *out, n) */
  SH_S_S_OUT,  /* (T start, T step, T *out, n) */
  SH_SOFTMAX   /* (const T *x, T *y, size_t rows, size_t n): rows kernels */
} shape_t;

/* Parameter roles per shape: i in, o out, b inout, s scalar. */
static const char *const shape_roles[] = {
    [SH_X_OUT] = "io",   [SH_XY_OUT] = "iio", [SH_XYZ_OUT] = "iiio",
    [SH_X_A_OUT] = "iso", [SH_A_X_Y] = "sib", [SH_V_OUT] = "so",
    [SH_S_S_OUT] = "sso", [SH_SOFTMAX] = "io"};

/* Where random float inputs come from (integers always use every bit). */
typedef enum dom {
  DOM_NONE, /* no input buffers */
  DOM_REAL, /* +-10 mostly, a quarter spread over 2^-30 .. 2^30 */
  DOM_POS,  /* 2^-60 .. 2^60 */
  DOM_EXP,  /* +-80 (f32), +-700 (f64): e^x neither overflows nor underflows */
  DOM_ACT,  /* +-12 mostly, an eighth +-60 */
  DOM_UNIT, /* +-1: reductions, softmax */
  DOM_COUNT
} dom_t;

/* Special values mixed into the inputs. */
typedef enum spec { SPEC_NONE, SPEC_IEEE, SPEC_LOG, SPEC_NANINF, SPEC_NAN0 } spec_t;

typedef enum tol { TOL_EXACT, TOL_LIBM, TOL_ACT, TOL_ACT_X, TOL_RED, TOL_SOFTMAX } tol_t;

typedef enum kid {
  K_RELU, K_SIGMOID, K_TANH, K_GELU, K_SILU,
  K_ADD, K_SUB, K_MUL, K_DIV, K_MINIMUM, K_MAXIMUM, K_FMA, K_SCALE, K_AXPY,
  K_FILL, K_ARANGE,
  K_NEG, K_ABS, K_EXP, K_LOG, K_SQRT,
  K_SUM, K_MEAN, K_MIN, K_MAX, K_DOT, K_NORM2,
  K_SOFTMAX, K_LOG_SOFTMAX,
  K_COUNT
} kid_t;

/* One kernel of stdlib_kernels/, as its file describes it, and how to test it. */
typedef struct kdesc {
  const char *name;
  const char *file; /* the kernel file, as the table records it */
  hk_kind_t kind;
  shape_t shape;
  const char *pnames[4]; /* parameter names, in order */
  dom_t dom;
  spec_t spec;
  tol_t tol;
} kdesc_t;

#define EW HK_KIND_ELEMENTWISE
#define RED HK_KIND_REDUCTION
#define ACT_JSON "stdlib_kernels/activations.json"
#define ARITH_JSON "stdlib_kernels/arith.json"
#define FILL_JSON "stdlib_kernels/fill.json"
#define MATH_JSON "stdlib_kernels/math.json"
#define RED_JSON "stdlib_kernels/reductions.json"
#define SOFT_JSON "stdlib_kernels/softmax.json"

static const kdesc_t kernels[K_COUNT] = {
    [K_RELU] = {"relu", ACT_JSON, EW, SH_X_OUT, {"x", "out"}, DOM_ACT, SPEC_NANINF, TOL_EXACT},
    [K_SIGMOID] = {"sigmoid", ACT_JSON, EW, SH_X_OUT, {"x", "out"}, DOM_ACT, SPEC_NANINF, TOL_ACT},
    [K_TANH] = {"tanh", ACT_JSON, EW, SH_X_OUT, {"x", "out"}, DOM_ACT, SPEC_NANINF, TOL_LIBM},
    /* gelu(-inf) and silu(-inf) are -inf * 0 and -inf / inf by their
     * formulas; the docs do not say, so no infinities here. */
    [K_GELU] = {"gelu", ACT_JSON, EW, SH_X_OUT, {"x", "out"}, DOM_ACT, SPEC_NAN0, TOL_ACT_X},
    [K_SILU] = {"silu", ACT_JSON, EW, SH_X_OUT, {"x", "out"}, DOM_ACT, SPEC_NAN0, TOL_ACT_X},
    [K_ADD] = {"add", ARITH_JSON, EW, SH_XY_OUT, {"x", "y", "out"}, DOM_REAL, SPEC_IEEE, TOL_EXACT},
    [K_SUB] = {"sub", ARITH_JSON, EW, SH_XY_OUT, {"x", "y", "out"}, DOM_REAL, SPEC_IEEE, TOL_EXACT},
    [K_MUL] = {"mul", ARITH_JSON, EW, SH_XY_OUT, {"x", "y", "out"}, DOM_REAL, SPEC_IEEE, TOL_EXACT},
    [K_DIV] = {"div", ARITH_JSON, EW, SH_XY_OUT, {"x", "y", "out"}, DOM_REAL, SPEC_IEEE, TOL_EXACT},
    [K_MINIMUM] = {"minimum", ARITH_JSON, EW, SH_XY_OUT, {"x", "y", "out"}, DOM_REAL, SPEC_NANINF, TOL_EXACT},
    [K_MAXIMUM] = {"maximum", ARITH_JSON, EW, SH_XY_OUT, {"x", "y", "out"}, DOM_REAL, SPEC_NANINF, TOL_EXACT},
    [K_FMA] = {"fma", ARITH_JSON, EW, SH_XYZ_OUT, {"x", "y", "z", "out"}, DOM_REAL, SPEC_IEEE, TOL_EXACT},
    [K_SCALE] = {"scale", ARITH_JSON, EW, SH_X_A_OUT, {"x", "alpha", "out"}, DOM_REAL, SPEC_IEEE, TOL_EXACT},
    [K_AXPY] = {"axpy", ARITH_JSON, EW, SH_A_X_Y, {"alpha", "x", "y"}, DOM_REAL, SPEC_IEEE, TOL_EXACT},
    [K_FILL] = {"fill", FILL_JSON, EW, SH_V_OUT, {"value", "out"}, DOM_NONE, SPEC_NONE, TOL_EXACT},
    [K_ARANGE] = {"arange", FILL_JSON, EW, SH_S_S_OUT, {"start", "step", "out"}, DOM_NONE, SPEC_NONE, TOL_EXACT},
    [K_NEG] = {"neg", MATH_JSON, EW, SH_X_OUT, {"x", "out"}, DOM_REAL, SPEC_IEEE, TOL_EXACT},
    [K_ABS] = {"abs", MATH_JSON, EW, SH_X_OUT, {"x", "out"}, DOM_REAL, SPEC_IEEE, TOL_EXACT},
    [K_EXP] = {"exp", MATH_JSON, EW, SH_X_OUT, {"x", "out"}, DOM_EXP, SPEC_NANINF, TOL_LIBM},
    [K_LOG] = {"log", MATH_JSON, EW, SH_X_OUT, {"x", "out"}, DOM_POS, SPEC_LOG, TOL_LIBM},
    [K_SQRT] = {"sqrt", MATH_JSON, EW, SH_X_OUT, {"x", "out"}, DOM_POS, SPEC_LOG, TOL_EXACT},
    [K_SUM] = {"sum", RED_JSON, RED, SH_X_OUT, {"x", "out"}, DOM_UNIT, SPEC_NONE, TOL_RED},
    [K_MEAN] = {"mean", RED_JSON, RED, SH_X_OUT, {"x", "out"}, DOM_UNIT, SPEC_NONE, TOL_RED},
    [K_MIN] = {"min", RED_JSON, RED, SH_X_OUT, {"x", "out"}, DOM_UNIT, SPEC_NONE, TOL_RED},
    [K_MAX] = {"max", RED_JSON, RED, SH_X_OUT, {"x", "out"}, DOM_UNIT, SPEC_NONE, TOL_RED},
    [K_DOT] = {"dot", RED_JSON, RED, SH_XY_OUT, {"x", "y", "out"}, DOM_UNIT, SPEC_NONE, TOL_RED},
    [K_NORM2] = {"norm2", RED_JSON, RED, SH_X_OUT, {"x", "out"}, DOM_UNIT, SPEC_NONE, TOL_RED},
    [K_SOFTMAX] = {"softmax", SOFT_JSON, HK_KIND_ROWS, SH_SOFTMAX, {"x", "y"}, DOM_UNIT, SPEC_NONE, TOL_SOFTMAX},
    [K_LOG_SOFTMAX] = {"log_softmax", SOFT_JSON, HK_KIND_ROWS, SH_SOFTMAX, {"x", "y"}, DOM_UNIT, SPEC_NONE, TOL_SOFTMAX},
};

/* ---- References: elementwise, one per instance, same args as hk__run ---- */

/* A reference takes the uniform args of abi.h (buffers as pointers, scalars
 * as pointers to their value) and writes its own out buffer. */
typedef void (*ref_fn)(void *const *args, size_t n);

#define REF1(name, T, expr)                              \
  static void ref_##name(void *const *a, size_t n) {     \
    const T *xs = a[0];                                  \
    T *outs = a[1];                                      \
    for (size_t i = 0; i < n; i++) {                     \
      const T x = xs[i];                                 \
      outs[i] = (expr);                                  \
    }                                                    \
  }
#define REF2(name, T, expr)                              \
  static void ref_##name(void *const *a, size_t n) {     \
    const T *xs = a[0], *ys = a[1];                      \
    T *outs = a[2];                                      \
    for (size_t i = 0; i < n; i++) {                     \
      const T x = xs[i], y = ys[i];                      \
      outs[i] = (expr);                                  \
    }                                                    \
  }
#define REF_FMA(name, T, fn)                             \
  static void ref_##name(void *const *a, size_t n) {     \
    const T *xs = a[0], *ys = a[1], *zs = a[2];          \
    T *outs = a[3];                                      \
    for (size_t i = 0; i < n; i++)                       \
      outs[i] = fn(xs[i], ys[i], zs[i]);                 \
  }
#define REF_SCALE(name, T)                               \
  static void ref_##name(void *const *a, size_t n) {     \
    const T *xs = a[0], alpha = *(const T *)a[1];        \
    T *outs = a[2];                                      \
    for (size_t i = 0; i < n; i++) outs[i] = xs[i] * alpha; \
  }
#define REF_AXPY(name, T)                                \
  static void ref_##name(void *const *a, size_t n) {     \
    const T alpha = *(const T *)a[0], *xs = a[1];        \
    T *ys = a[2];                                        \
    for (size_t i = 0; i < n; i++) {                     \
      const T p = alpha * xs[i];                         \
      ys[i] = p + ys[i];                                 \
    }                                                    \
  }
#define REF_FILL(name, T)                                \
  static void ref_##name(void *const *a, size_t n) {     \
    const T v = *(const T *)a[0];                        \
    T *outs = a[1];                                      \
    for (size_t i = 0; i < n; i++) outs[i] = v;          \
  }
#define REF_ARANGE_F(name, T)                            \
  static void ref_##name(void *const *a, size_t n) {     \
    const T start = *(const T *)a[0], step = *(const T *)a[1]; \
    T *outs = a[2];                                      \
    for (size_t i = 0; i < n; i++) {                     \
      const T p = (T)i * step;                           \
      outs[i] = start + p;                               \
    }                                                    \
  }
/* Integers wrap: computed unsigned, so the test itself has no overflow. */
#define REF_ARANGE_I(name, T, U)                         \
  static void ref_##name(void *const *a, size_t n) {     \
    const T start = *(const T *)a[0], step = *(const T *)a[1]; \
    T *outs = a[2];                                      \
    for (size_t i = 0; i < n; i++)                       \
      outs[i] = (T)((U)start + (U)(T)i * (U)step);       \
  }

/* The activations, operation by operation as the kernel files write them. */
static float sigmoid_f(float x) { return 1.0f / (1.0f + expf(-x)); }
static double sigmoid_d(double x) { return 1.0 / (1.0 + exp(-x)); }
static float silu_f(float x) { return x / (1.0f + expf(-x)); }
static double silu_d(double x) { return x / (1.0 + exp(-x)); }
static float gelu_f(float x) {
  const float k = (float)0.79788456080286535588, c = (float)0.044715;
  const float inner = k * (x + c * x * x * x);
  return 0.5f * x * (1.0f + tanhf(inner));
}
static double gelu_d(double x) {
  const double k = 0.79788456080286535588, c = 0.044715;
  const double inner = k * (x + c * x * x * x);
  return 0.5 * x * (1.0 + tanh(inner));
}

REF1(relu_f32, float, x < 0 ? 0.0f : x)
REF1(relu_f64, double, x < 0 ? 0.0 : x)
REF1(sigmoid_f32, float, sigmoid_f(x))
REF1(sigmoid_f64, double, sigmoid_d(x))
REF1(tanh_f32, float, tanhf(x))
REF1(tanh_f64, double, tanh(x))
REF1(gelu_f32, float, gelu_f(x))
REF1(gelu_f64, double, gelu_d(x))
REF1(silu_f32, float, silu_f(x))
REF1(silu_f64, double, silu_d(x))

REF2(add_f32, float, x + y)
REF2(add_f64, double, x + y)
REF2(add_i32, int32_t, (int32_t)((uint32_t)x + (uint32_t)y))
REF2(add_i64, int64_t, (int64_t)((uint64_t)x + (uint64_t)y))
REF2(sub_f32, float, x - y)
REF2(sub_f64, double, x - y)
REF2(sub_i32, int32_t, (int32_t)((uint32_t)x - (uint32_t)y))
REF2(sub_i64, int64_t, (int64_t)((uint64_t)x - (uint64_t)y))
REF2(mul_f32, float, x * y)
REF2(mul_f64, double, x * y)
REF2(mul_i32, int32_t, (int32_t)((uint32_t)x * (uint32_t)y))
REF2(mul_i64, int64_t, (int64_t)((uint64_t)x * (uint64_t)y))
REF2(div_f32, float, x / y)
REF2(div_f64, double, x / y)
/* The docs: the smaller (larger) of the two, NaN if either is NaN. */
REF2(minimum_f32, float, isnan(x) || isnan(y) ? (isnan(x) ? x : y) : (x < y ? x : y))
REF2(minimum_f64, double, isnan(x) || isnan(y) ? (isnan(x) ? x : y) : (x < y ? x : y))
REF2(maximum_f32, float, isnan(x) || isnan(y) ? (isnan(x) ? x : y) : (x > y ? x : y))
REF2(maximum_f64, double, isnan(x) || isnan(y) ? (isnan(x) ? x : y) : (x > y ? x : y))
REF_FMA(fma_f32, float, fmaf)
REF_FMA(fma_f64, double, fma)
REF_SCALE(scale_f32, float)
REF_SCALE(scale_f64, double)
REF_AXPY(axpy_f32, float)
REF_AXPY(axpy_f64, double)

REF_FILL(fill_f32, float)
REF_FILL(fill_f64, double)
REF_FILL(fill_i32, int32_t)
REF_FILL(fill_i64, int64_t)
REF_ARANGE_F(arange_f32, float)
REF_ARANGE_F(arange_f64, double)
REF_ARANGE_I(arange_i32, int32_t, uint32_t)
REF_ARANGE_I(arange_i64, int64_t, uint64_t)

REF1(neg_f32, float, -x)
REF1(neg_f64, double, -x)
REF1(abs_f32, float, fabsf(x))
REF1(abs_f64, double, fabs(x))
REF1(exp_f32, float, expf(x))
REF1(exp_f64, double, exp(x))
REF1(log_f32, float, logf(x))
REF1(log_f64, double, log(x))
REF1(sqrt_f32, float, sqrtf(x))
REF1(sqrt_f64, double, sqrt(x))

/* One typed function: a kernel at one type. */
typedef struct inst {
  kid_t k;
  hk_dtype_t t;
  void (*fn)(void); /* hk_NAME_TYPE, cast */
  ref_fn ref;       /* elementwise only */
} inst_t;

#define FN(f) ((void (*)(void))(f))
#define F32_64(k, K, r)                                 \
  {K, HK_F32, FN(hk_##k##_f32), r(k##_f32)},            \
  {K, HK_F64, FN(hk_##k##_f64), r(k##_f64)}
#define ALL4(k, K, r)                                   \
  F32_64(k, K, r),                                      \
  {K, HK_I32, FN(hk_##k##_i32), r(k##_i32)},            \
  {K, HK_I64, FN(hk_##k##_i64), r(k##_i64)}
#define REF(name) ref_##name
#define NOREF(name) NULL

static const inst_t insts[] = {
    F32_64(relu, K_RELU, REF),       F32_64(sigmoid, K_SIGMOID, REF),
    F32_64(tanh, K_TANH, REF),       F32_64(gelu, K_GELU, REF),
    F32_64(silu, K_SILU, REF),       ALL4(add, K_ADD, REF),
    ALL4(sub, K_SUB, REF),           ALL4(mul, K_MUL, REF),
    F32_64(div, K_DIV, REF),         F32_64(minimum, K_MINIMUM, REF),
    F32_64(maximum, K_MAXIMUM, REF), F32_64(fma, K_FMA, REF),
    F32_64(scale, K_SCALE, REF),     F32_64(axpy, K_AXPY, REF),
    ALL4(fill, K_FILL, REF),         ALL4(arange, K_ARANGE, REF),
    F32_64(neg, K_NEG, REF),         F32_64(abs, K_ABS, REF),
    F32_64(exp, K_EXP, REF),         F32_64(log, K_LOG, REF),
    F32_64(sqrt, K_SQRT, REF),       F32_64(sum, K_SUM, NOREF),
    F32_64(mean, K_MEAN, NOREF),     F32_64(min, K_MIN, NOREF),
    F32_64(max, K_MAX, NOREF),       F32_64(dot, K_DOT, NOREF),
    F32_64(norm2, K_NORM2, NOREF),   F32_64(softmax, K_SOFTMAX, NOREF),
    F32_64(log_softmax, K_LOG_SOFTMAX, NOREF),
};

/* Calls the typed function with the uniform args (scalars by value). */
#define CALL_AS(T)                                                          \
  switch (kernels[in->k].shape) {                                           \
    case SH_X_OUT:                                                          \
      ((void (*)(const T *, T *, size_t))in->fn)(a[0], a[1], n);            \
      break;                                                                \
    case SH_XY_OUT:                                                         \
      ((void (*)(const T *, const T *, T *, size_t))in->fn)(a[0], a[1],     \
                                                            a[2], n);       \
      break;                                                                \
    case SH_XYZ_OUT:                                                        \
      ((void (*)(const T *, const T *, const T *, T *, size_t))in->fn)(     \
          a[0], a[1], a[2], a[3], n);                                       \
      break;                                                                \
    case SH_X_A_OUT:                                                        \
      ((void (*)(const T *, T, T *, size_t))in->fn)(a[0], *(T *)a[1], a[2], \
                                                     n);                    \
      break;                                                                \
    case SH_A_X_Y:                                                          \
      ((void (*)(T, const T *, T *, size_t))in->fn)(*(T *)a[0], a[1], a[2], \
                                                     n);                    \
      break;                                                                \
    case SH_V_OUT:                                                          \
      ((void (*)(T, T *, size_t))in->fn)(*(T *)a[0], a[1], n);              \
      break;                                                                \
    case SH_S_S_OUT:                                                        \
      ((void (*)(T, T, T *, size_t))in->fn)(*(T *)a[0], *(T *)a[1], a[2],   \
                                            n);                             \
      break;                                                                \
    case SH_SOFTMAX: /* a[2], a[3]: the int64_t rows and cols */           \
      ((void (*)(const T *, T *, size_t, size_t))in->fn)(                   \
          a[0], a[1], (size_t) * (int64_t *)a[2], (size_t) * (int64_t *)a[3]); \
      (void)n;                                                              \
      break;                                                                \
  }

static void call_typed(const inst_t *in, void *const *a, size_t n) {
  switch (in->t) {
    case HK_F32: CALL_AS(float) break;
    case HK_F64: CALL_AS(double) break;
    case HK_I32: CALL_AS(int32_t) break;
    case HK_I64: CALL_AS(int64_t) break;
    default: CHECK_MSG(0, "unexpected dtype %d", (int)in->t);
  }
}

/* ---- Values ---------------------------------------------------------- */

static int is_float(hk_dtype_t t) { return t == HK_F32 || t == HK_F64; }

static double eps_of(hk_dtype_t t) {
  return t == HK_F32 ? (double)FLT_EPSILON : DBL_EPSILON;
}

static void put_f(hk_dtype_t t, void *p, size_t i, double v) {
  if (t == HK_F32)
    ((float *)p)[i] = (float)v;
  else
    ((double *)p)[i] = v;
}

/* v is taken modulo 2^32 for i32. */
static void put_i(hk_dtype_t t, void *p, size_t i, uint64_t v) {
  if (t == HK_I32)
    ((int32_t *)p)[i] = (int32_t)(uint32_t)v;
  else
    ((int64_t *)p)[i] = (int64_t)v;
}

static long double get_l(hk_dtype_t t, const void *p, size_t i) {
  switch (t) {
    case HK_F32: return ((const float *)p)[i];
    case HK_F64: return ((const double *)p)[i];
    case HK_I32: return ((const int32_t *)p)[i];
    default: return (long double)((const int64_t *)p)[i];
  }
}

static void val_set(hk_dtype_t t, check_scalar_t *v, double f, uint64_t i) {
  memset(v, 0, sizeof *v);
  if (is_float(t))
    put_f(t, v, 0, f);
  else
    put_i(t, v, 0, i);
}

static void fmt_val(hk_dtype_t t, const void *p, size_t i, char *s,
                    size_t cap) {
  if (is_float(t))
    snprintf(s, cap, "%.17Lg", get_l(t, p, i));
  else
    snprintf(s, cap, "%.0Lf", get_l(t, p, i));
}

/* Floats in the order of their bits, so that neighbours differ by 1. */
static int64_t ord32(float f) {
  int32_t i;
  memcpy(&i, &f, sizeof i);
  return i < 0 ? (int64_t)INT32_MIN - i : i;
}
static int64_t ord64(double d) {
  int64_t i;
  memcpy(&i, &d, sizeof i);
  return i < 0 ? INT64_MIN - i : i;
}
static uint64_t ulps(hk_dtype_t t, long double a, long double b) {
  int64_t x = t == HK_F32 ? ord32((float)a) : ord64((double)a);
  int64_t y = t == HK_F32 ? ord32((float)b) : ord64((double)b);
  return x >= y ? (uint64_t)x - (uint64_t)y : (uint64_t)y - (uint64_t)x;
}

/* ---- Deterministic inputs -------------------------------------------- */

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) {
    fprintf(stderr, "out of memory\n");
    exit(1);
  }
  return p;
}

typedef struct rng {
  uint64_t s;
} rng_t;

static uint64_t rng_next(rng_t *r) { /* splitmix64 */
  uint64_t z = (r->s += 0x9E3779B97F4A7C15u);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
  return z ^ (z >> 31);
}
static double rng_unif(rng_t *r, double lo, double hi) {
  return lo + (hi - lo) * ((double)(rng_next(r) >> 11) * 0x1p-53);
}
static rng_t rng_seed(uint64_t a, uint64_t b, uint64_t c) {
  rng_t r = {a * 0x100000001B3u ^ b * 0x9E3779B97F4A7C15u ^ c};
  rng_next(&r);
  return r;
}

static double draw(rng_t *r, dom_t d, hk_dtype_t t) {
  uint64_t b;
  double m;
  switch (d) {
    case DOM_REAL:
      b = rng_next(r);
      if (b & 3) return rng_unif(r, -10, 10);
      m = ldexp(rng_unif(r, 1, 2), (int)((b >> 8) % 61) - 30);
      return (b & 4) ? -m : m;
    case DOM_POS: return exp2(rng_unif(r, -60, 60));
    case DOM_EXP:
      return t == HK_F32 ? rng_unif(r, -80, 80) : rng_unif(r, -700, 700);
    case DOM_ACT:
      return (rng_next(r) & 7) ? rng_unif(r, -12, 12) : rng_unif(r, -60, 60);
    default: return rng_unif(r, -1, 1);
  }
}

static const double spec_ieee[] = {NAN,  INFINITY,  -INFINITY, 0.0,
                                   -0.0, 0x1p-149, -0x1.fffffep127,
                                   0x1p-1074};
static const double spec_log[] = {0.0,  -0.0, -1.0,     INFINITY,
                                  -INFINITY, NAN, 0x1p-149, 1.0};
static const double spec_naninf[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0};
static const double spec_nan0[] = {NAN, 0.0, -0.0};

/* Inputs are slices, at a random shift, of pools drawn once per domain and
 * type: drawing afresh for every case would cost most of a sanitized run. */
#define POOL_SHIFTS 65536u
#define POOL_LEN ((1u << 20) + 5 + POOL_SHIFTS)
static double *pools[2][DOM_COUNT]; /* [t == HK_F32][dom] */
static uint64_t *pool_bits; /* integers: every bit, a quarter small */

static const double *pool_of(dom_t d, hk_dtype_t t) {
  int f = t == HK_F32;
  if (!pools[f][d]) {
    rng_t r = rng_seed((uint64_t)d, (uint64_t)f, 1);
    pools[f][d] = xmalloc(POOL_LEN * sizeof(double));
    for (size_t i = 0; i < POOL_LEN; i++) pools[f][d][i] = draw(&r, d, t);
  }
  return pools[f][d];
}

static const uint64_t *pool_of_bits(void) {
  if (!pool_bits) {
    rng_t r = rng_seed(2, 3, 4);
    pool_bits = xmalloc(POOL_LEN * sizeof(uint64_t));
    for (size_t i = 0; i < POOL_LEN; i++) {
      uint64_t v = rng_next(&r);
      pool_bits[i] =
          v % 4 ? v : (uint64_t)((int64_t)((v >> 8) % 201) - 100);
    }
  }
  return pool_bits;
}

static void pools_free(void) {
  for (int f = 0; f < 2; f++)
    for (int d = 0; d < DOM_COUNT; d++) free(pools[f][d]);
  free(pool_bits);
}

/* Fills input number slot of n elements from its domain's pool at a shift
 * drawn from r, then puts special values at the positions of that slot:
 * i % 11 == (3 slot + 1) % 11 and i % 37 == 36, so that pairs (special,
 * plain) and (special, special) both occur. Integers take every bit, with
 * small values and the extremes mixed in. */
static void gen_input(hk_dtype_t t, dom_t d, spec_t sp, void *p, size_t n,
                      rng_t *r, int slot) {
  const double *set = NULL;
  size_t nset = 0;
  switch (sp) {
    case SPEC_IEEE: set = spec_ieee, nset = COUNT(spec_ieee); break;
    case SPEC_LOG: set = spec_log, nset = COUNT(spec_log); break;
    case SPEC_NANINF: set = spec_naninf, nset = COUNT(spec_naninf); break;
    case SPEC_NAN0: set = spec_nan0, nset = COUNT(spec_nan0); break;
    case SPEC_NONE: break;
  }
  size_t shift = (size_t)(rng_next(r) % POOL_SHIFTS);
  if (n + shift > POOL_LEN) {
    CHECK_MSG(0, "inputs of %zu elements: the pools are too short", n);
    return;
  }
  size_t first = (size_t)(3 * slot + 1) % 11;
  if (!is_float(t)) {
    const uint64_t *src = pool_of_bits() + shift;
    const uint64_t iext[] = {
        t == HK_I32 ? (uint64_t)INT32_MIN : (uint64_t)INT64_MIN,
        t == HK_I32 ? (uint64_t)INT32_MAX : (uint64_t)INT64_MAX,
        (uint64_t)-1, 0, 1};
    for (size_t i = 0; i < n; i++) put_i(t, p, i, src[i]);
    for (size_t i = first; i < n; i += 11)
      put_i(t, p, i, iext[(i / 11 + (size_t)slot) % COUNT(iext)]);
    for (size_t i = 36; i < n; i += 37)
      put_i(t, p, i, iext[(i / 37 + (size_t)slot) % COUNT(iext)]);
    return;
  }
  const double *src = pool_of(d, t) + shift;
  if (t == HK_F32) {
    float *f = p;
    for (size_t i = 0; i < n; i++) f[i] = (float)src[i];
  } else {
    memcpy(p, src, n * sizeof(double));
  }
  if (!set) return;
  for (size_t i = first; i < n; i += 11)
    put_f(t, p, i, set[(i / 11 + (size_t)slot) % nset]);
  for (size_t i = 36; i < n; i += 37)
    put_f(t, p, i, set[(i / 37 + (size_t)slot) % nset]);
}

/* Scalars: case c (one per size and offset) takes entry c, so the special
 * ones come first (small sizes) and plain ones meet the large sizes. */
static const double scale_alpha[] = {-0.0, INFINITY, NAN, 1.5,  -0.375, 3.0,
                                     0.1,  -7.25,    1e-3, 0.7, 2.0,    -1.0};
static const double axpy_alpha[] = {0.0, -INFINITY, NAN,  -2.5, 0.3,  1.0,
                                    0.1, -1.5,      3.25, 1e-3, -0.7, 2.0};
static const double fill_f[] = {-0.0, NAN,  INFINITY, 1.0,   0.1, -3.5,
                                1e30, -2.0, 0.333,    -1e-20, 7.0, 42.0};
static const int64_t fill_i[] = {INT64_MIN, INT64_MAX, -1, 0,      42, -12345,
                                 INT32_MIN, INT32_MAX, 99, 123456, -3, 5};
static const double arange_f[][2] = {
    {0, 1},    {-3.25, 0.5}, {1, 0.1},  {1e6, -0.3}, {-0.0, 0.0},   {2.5, -1},
    {0.1, 0.2}, {-100, 0.125}, {0, 1}, {1, 0.1},     {-3, 1e-3},   {5, -0.7}};
static const int64_t arange_i[][2] = {
    {0, 1},         {-5, -3},  {INT32_MAX - 3, 1}, {INT64_MAX - 3, 1},
    {7, 0},         {100, -7}, {0, 4099},          {INT64_MIN / 2, INT64_MAX / 3},
    {0, 1},         {3, 2},    {-1000000, 4099},   {INT32_MIN, 100003}};

/* ---- Buffers with guard zones ------------------------------------------- */

#define GUARD 64    /* sentinel elements after the end */
#define FRONT 8     /* and before the start (plus the odd offset) */
#define SENTINEL 0xA5

typedef struct buf {
  unsigned char *base; /* the allocation: sentinel, elements, sentinel */
  size_t bytes, front, len;
  void *p; /* element 0 */
} buf_t;

static buf_t buf_new(size_t esize, size_t n, int off) {
  buf_t b;
  b.front = (FRONT + (size_t)off) * esize;
  b.len = n * esize;
  b.bytes = (b.front + b.len + GUARD * esize + 63) & ~(size_t)63;
  b.base = aligned_alloc(64, b.bytes);
  if (!b.base) {
    fprintf(stderr, "out of memory\n");
    exit(1);
  }
  memset(b.base, SENTINEL, b.bytes);
  b.p = b.base + b.front;
  return b;
}

static void buf_free(buf_t *b) {
  free(b->base);
  b->base = NULL;
}

static int buf_guards_ok(const buf_t *b) {
  for (size_t i = 0; i < b->front; i++)
    if (b->base[i] != SENTINEL) return 0;
  for (size_t i = b->front + b->len; i < b->bytes; i++)
    if (b->base[i] != SENTINEL) return 0;
  return 1;
}

/* ---- One test case: an instance, a size, an offset ------------------------ */

typedef struct tcase {
  const inst_t *in;
  const kdesc_t *k;
  const hk_stdlib_entry_t *entry; /* NULL when missing from the table */
  char name[40];
  hk_dtype_t t;
  size_t es, n;
  int off, np, outp;
  const char *roles;
  buf_t b[4];
  check_scalar_t s[4];
  int64_t rc[2]; /* softmax rows, cols (args[2], args[3]) */
  void *args[4];
  unsigned char *pristine[4]; /* in buffers as generated, guards included */
  unsigned char *init;        /* the out buffer before a call */
  unsigned char *res;         /* the out buffer after the checked call */
  size_t out_len;
} tcase_t;

/* Sets up buffers (inputs of n elements, out of out_len), scalars from case
 * number cno, and args. */
static void case_init(tcase_t *c, const inst_t *in, size_t n, size_t out_len,
                      int off, int cno) {
  memset(c, 0, sizeof *c);
  c->in = in;
  c->k = &kernels[in->k];
  c->t = in->t;
  c->es = hk_dtype_size(in->t);
  c->n = n;
  c->off = off;
  c->out_len = out_len;
  c->roles = shape_roles[c->k->shape];
  c->np = (int)strlen(c->roles);
  snprintf(c->name, sizeof c->name, "%s_%s", c->k->name, hk_dtype_name(in->t));
  c->entry = hk__stdlib_find(c->name);
  rng_t r = rng_seed((uint64_t)(in - insts), n, (uint64_t)off);
  int slot = 0, nscalar = 0;
  for (int p = 0; p < c->np; p++) {
    char role = c->roles[p];
    if (role == 's') {
      size_t ci = (size_t)cno;
      double f = 0;
      uint64_t i = 0;
      switch (in->k) {
        case K_SCALE: f = scale_alpha[ci % COUNT(scale_alpha)]; break;
        case K_AXPY: f = axpy_alpha[ci % COUNT(axpy_alpha)]; break;
        case K_FILL:
          f = fill_f[ci % COUNT(fill_f)];
          i = (uint64_t)fill_i[ci % COUNT(fill_i)];
          break;
        case K_ARANGE:
          f = arange_f[ci % COUNT(arange_f)][nscalar];
          i = (uint64_t)arange_i[ci % COUNT(arange_i)][nscalar];
          break;
        default: break; /* softmax: set by the caller */
      }
      val_set(c->t, &c->s[p], f, i);
      c->args[p] = &c->s[p];
      nscalar++;
      continue;
    }
    size_t len = role == 'o' ? out_len : n;
    c->b[p] = buf_new(c->es, len, off);
    c->args[p] = c->b[p].p;
    if (role == 'o' || role == 'b') c->outp = p;
    if (role == 'i' || role == 'b') {
      gen_input(c->t, c->k->dom, c->k->spec, c->b[p].p, len, &r, slot++);
      if (role == 'i') {
        c->pristine[p] = xmalloc(c->b[p].bytes);
        memcpy(c->pristine[p], c->b[p].base, c->b[p].bytes);
      }
    }
  }
  c->init = xmalloc(out_len * c->es);
  memcpy(c->init, c->b[c->outp].p, out_len * c->es);
  c->res = xmalloc(out_len * c->es);
}

static void case_free(tcase_t *c) {
  for (int p = 0; p < c->np; p++) {
    if (c->b[p].base) buf_free(&c->b[p]);
    free(c->pristine[p]);
  }
  free(c->init);
  free(c->res);
}

/* Input buffers saved after generation (the generated inputs must stay). */
static void case_save_inputs(tcase_t *c) {
  for (int p = 0; p < c->np; p++)
    if (c->pristine[p]) memcpy(c->pristine[p], c->b[p].base, c->b[p].bytes);
}

static void case_reset_out(tcase_t *c) {
  memcpy(c->b[c->outp].p, c->init, c->out_len * c->es);
}

/* Every guard zone intact; with inputs, every input unchanged too (a
 * comparison of whole buffers, so done once per case and way of checking,
 * not after every call). */
static void case_check_memory(const tcase_t *c, const char *what,
                              int inputs) {
  for (int p = 0; p < c->np; p++) {
    if (!c->b[p].base) continue;
    CHECK_MSG(buf_guards_ok(&c->b[p]), "%s n=%zu off=%d %s: wrote outside %s",
              c->name, c->n, c->off, what, c->k->pnames[p]);
    if (inputs && c->pristine[p])
      CHECK_MSG(memcmp(c->pristine[p], c->b[p].base, c->b[p].bytes) == 0,
                "%s n=%zu off=%d %s: input %s changed", c->name, c->n,
                c->off, what, c->k->pnames[p]);
  }
}

/* Runs the case by the typed function (path 0) or the registry (path 1). */
static void case_run(tcase_t *c, int path) {
  if (path == 0) {
    call_typed(c->in, c->args, c->n);
  } else if (c->entry) {
    hk_entry_t e = hk__stdlib_entry(c->entry);
    hk__run(&e, c->args, c->n);
  }
}

/* The out buffer is bit-identical to the checked result. */
static void case_check_same(const tcase_t *c, const char *what) {
  const unsigned char *got = c->b[c->outp].p;
  size_t bytes = c->out_len * c->es;
  if (memcmp(got, c->res, bytes) == 0) {
    CHECK(1);
    return;
  }
  size_t i = 0;
  while (memcmp(got + i * c->es, c->res + i * c->es, c->es) == 0) i++;
  char g[64], w[64];
  fmt_val(c->t, got, i, g, sizeof g);
  fmt_val(c->t, c->res, i, w, sizeof w);
  CHECK_MSG(0, "%s n=%zu off=%d %s: element %zu is %s, the checked call gave %s",
            c->name, c->n, c->off, what, i, g, w);
}

/* ---- Ways to run: thread counts, forced parallel path -------------------- */

typedef struct way {
  int threads; /* hk_set_threads value; 0 = the default */
  int forced;  /* hk__par_set_min(1, 1) */
  char what[48];
} way_t;

static void way_enter(const way_t *w) {
  CHECK_INT_EQ(hk_set_threads(w->threads), HK_OK);
  if (w->threads) CHECK_INT_EQ(hk_get_threads(), w->threads);
  if (w->forced) hk__par_set_min(1, 1);
}

static void way_leave(void) {
  hk__par_set_min(par_min_saved[0], par_min_saved[1]);
  hk_set_threads(0);
}

/* The ways a case of n elements runs besides the checked call: the default
 * thread count; every thread count for large n; the forced parallel path
 * below BIG. Returns the number written into w (at most 6). */
static int ways_for(size_t n, way_t *w) {
  int k = 0;
  w[k++] = (way_t){0, 0, "default threads"};
  const int *tc = n >= BIG ? thread_counts_big : thread_counts;
  size_t ntc = n >= BIG ? COUNT(thread_counts_big) : COUNT(thread_counts);
  for (size_t i = 0; n >= LARGE && i < ntc; i++) {
    w[k] = (way_t){tc[i], 0, ""};
    snprintf(w[k].what, sizeof w[k].what, "%d threads", tc[i]);
    k++;
  }
  if (n < BIG) w[k++] = (way_t){3, 1, "forced parallel, 3 threads"};
  return k;
}

/* Runs the case every way, by both paths, each bit-identical to c->res. */
static void case_check_all_ways(tcase_t *c) {
  way_t w[8];
  int nw = ways_for(c->n, w);
  for (int i = 0; i < nw; i++) {
    way_enter(&w[i]);
    for (int path = 0; path < 2; path++) {
      if (path == 1 && !c->entry) continue;
      char what[80];
      snprintf(what, sizeof what, "%s, %s", path ? "registry" : "typed",
               w[i].what);
      case_reset_out(c);
      case_run(c, path);
      case_check_same(c, what);
      case_check_memory(c, what, 0);
    }
  }
  way_leave();
  case_check_memory(c, "after every way", 1);
}

/* ---- Elementwise ------------------------------------------------------- */

/* Whether got[i] matches want[i] under the kernel's tolerance; x is the
 * first input (TOL_ACT_X), or NULL. */
static int elem_ok(tol_t tol, hk_dtype_t t, const void *got,
                   const void *want, const void *x, size_t i) {
  size_t es = hk_dtype_size(t);
  const unsigned char *g = (const unsigned char *)got + i * es;
  const unsigned char *w = (const unsigned char *)want + i * es;
  if (!is_float(t)) return memcmp(g, w, es) == 0;
  long double gv = get_l(t, got, i), wv = get_l(t, want, i);
  if (isnan(gv) || isnan(wv)) return isnan(gv) && isnan(wv);
  if (tol == TOL_EXACT) return memcmp(g, w, es) == 0;
  uint64_t limit = tol == TOL_LIBM ? 2 : 4;
  if (ulps(t, gv, wv) <= limit) return 1;
  if (tol == TOL_ACT_X && x && !isinf(gv) && !isinf(wv))
    return fabsl(gv - wv) <= 4 * eps_of(t) * fabsl(get_l(t, x, i));
  return 0;
}

/* Checks the out buffer against want, element by element. */
static void check_against(const tcase_t *c, const void *want, const void *x,
                          const char *what) {
  const void *got = c->b[c->outp].p;
  size_t i = 0;
  if (memcmp(got, want, c->n * c->es) == 0) i = c->n; /* same bits: fine */
  while (i < c->n && elem_ok(c->k->tol, c->t, got, want, x, i)) i++;
  if (i == c->n) {
    CHECK(1);
    return;
  }
  char g[64], w[64], xs[64] = "-";
  fmt_val(c->t, got, i, g, sizeof g);
  fmt_val(c->t, want, i, w, sizeof w);
  if (x) fmt_val(c->t, x, i, xs, sizeof xs);
  CHECK_MSG(0, "%s n=%zu off=%d %s: element %zu: got %s, want %s (x = %s)",
            c->name, c->n, c->off, what, i, g, w, xs);
}

/* The first input buffer, for messages and TOL_ACT_X; NULL if none. */
static const void *first_input(const tcase_t *c) {
  for (int p = 0; p < c->np; p++)
    if (c->roles[p] == 'i') return c->b[p].p;
  return NULL;
}

/* The reference of the case, with input buffer alias (or -1) replaced by
 * the out buffer's initial content (what in-place calls see). */
static unsigned char *reference(const tcase_t *c, int alias) {
  unsigned char *want = xmalloc(c->n * c->es);
  void *ra[4];
  memcpy(ra, c->args, sizeof ra);
  memcpy(want, c->init, c->n * c->es);
  ra[c->outp] = want;
  if (alias >= 0) ra[alias] = c->init;
  c->in->ref(ra, c->n);
  return want;
}

/* out == input p: the same answer as the reference with that aliasing
 * (for an out buffer, the same bits as the checked call). */
static void check_in_place(tcase_t *c, int p) {
  int inout = c->roles[c->outp] == 'b';
  unsigned char *want = inout ? reference(c, p) : NULL;
  for (int path = 0; path < 2; path++) {
    if (path == 1 && !c->entry) continue;
    buf_t w = buf_new(c->es, c->n, c->off);
    /* The shared buffer starts as what the out buffer would hold if it is
     * inout (axpy's y), else as input p. */
    memcpy(w.p, inout ? c->init : c->b[p].p, c->n * c->es);
    void *saved[4];
    memcpy(saved, c->args, sizeof saved);
    c->args[p] = w.p;
    c->args[c->outp] = w.p;
    case_run(c, path);
    memcpy(c->args, saved, sizeof saved);
    char what[96];
    snprintf(what, sizeof what, "%s, in place (%s == %s)",
             path ? "registry" : "typed", c->k->pnames[c->outp],
             c->k->pnames[p]);
    CHECK_MSG(buf_guards_ok(&w), "%s n=%zu off=%d %s: wrote outside", c->name,
              c->n, c->off, what);
    /* Check through the case's own out buffer view. */
    buf_t keep = c->b[c->outp];
    c->b[c->outp].p = w.p;
    if (inout)
      check_against(c, want, NULL, what);
    else
      case_check_same(c, what);
    c->b[c->outp] = keep;
    buf_free(&w);
  }
  free(want);
}

static void test_elementwise(const inst_t *in, size_t si, int off) {
  tcase_t c;
  size_t n = sizes[si];
  case_init(&c, in, n, n, off, (int)si * 2 + off);
  unsigned char *want = reference(&c, -1);

  call_typed(in, c.args, n);
  check_against(&c, want, first_input(&c), "typed");
  case_check_memory(&c, "typed", 1);
  memcpy(c.res, c.b[c.outp].p, n * c.es);

  case_check_all_ways(&c);
  for (int p = 0; p < c.np; p++)
    if (c.roles[p] == 'i') check_in_place(&c, p);
  case_check_memory(&c, "in place", 1);
  free(want);
  case_free(&c);
}

/* Values where fused and unfused multiply-add differ: x y + z with x = y =
 * 1 + ulp, z = -(1 + 2 ulp) is ulp^2 fused, 0 unfused. */
static void test_fma_is_fused(void) {
  float xf = 1.0f + FLT_EPSILON, zf = -(1.0f + 2 * FLT_EPSILON), of = -1;
  hk_fma_f32(&xf, &xf, &zf, &of, 1);
  CHECK(of == FLT_EPSILON * FLT_EPSILON);
  double xd = 1.0 + DBL_EPSILON, zd = -(1.0 + 2 * DBL_EPSILON), od = -1;
  hk_fma_f64(&xd, &xd, &zd, &od, 1);
  CHECK(od == DBL_EPSILON * DBL_EPSILON);
}

/* ---- Reductions -------------------------------------------------------- */

typedef struct red_ref {
  long double val;   /* the exact-ish result */
  long double bound; /* allowed |got - val| */
  int nan;           /* the result must be NaN */
} red_ref_t;

/* The long double reference of reduction c over its current inputs. */
static red_ref_t red_reference(const tcase_t *c) {
  const void *x = c->b[0].p, *y = c->k->shape == SH_XY_OUT ? c->b[1].p : NULL;
  size_t n = c->n;
  long double s = 0, a = 0, e = eps_of(c->t), m;
  red_ref_t r = {0, 0, 0};
  switch (c->in->k) {
    case K_SUM:
    case K_MEAN:
      for (size_t i = 0; i < n; i++) {
        long double v = get_l(c->t, x, i);
        s += v;
        a += fabsl(v);
      }
      if (c->in->k == K_SUM) {
        r.val = s;
        r.bound = (long double)n * e * a;
      } else {
        r.nan = n == 0;
        r.val = n ? s / (long double)n : 0;
        r.bound = n ? e * a + e * fabsl(r.val) : 0;
      }
      break;
    case K_DOT:
      for (size_t i = 0; i < n; i++) {
        long double v = get_l(c->t, x, i) * get_l(c->t, y, i);
        s += v;
        a += fabsl(v);
      }
      r.val = s;
      r.bound = (long double)(n + 1) * e * a;
      break;
    case K_NORM2:
      for (size_t i = 0; i < n; i++) {
        long double v = get_l(c->t, x, i);
        s += v * v;
      }
      r.val = sqrtl(s);
      r.bound = (long double)(n + 2) * e * r.val;
      break;
    case K_MIN:
    case K_MAX:
      m = c->in->k == K_MIN ? INFINITY : -INFINITY;
      for (size_t i = 0; i < n; i++) {
        long double v = get_l(c->t, x, i);
        if (isnan(v)) r.nan = 1;
        if (c->in->k == K_MIN ? v < m : v > m) m = v;
      }
      r.val = m;
      break;
    default: break;
  }
  if (isnan(r.val)) r.nan = 1;
  return r;
}

/* The out value of c against reference r. */
static void red_check(const tcase_t *c, const red_ref_t *r, const char *what) {
  long double got = get_l(c->t, c->b[c->outp].p, 0);
  int ok = r->nan        ? isnan(got)
           : isinf(r->val) ? got == r->val
                           : fabsl(got - r->val) <= r->bound; /* not NaN */
  CHECK_MSG(ok, "%s n=%zu off=%d %s: got %.17Lg, want %.17Lg +- %.3Lg%s",
            c->name, c->n, c->off, what, got, r->val, r->bound,
            r->nan ? " (NaN)" : "");
  case_check_memory(c, what, 0);
}

/* Runs c by both paths with default threads and on the forced parallel path;
 * each result must pass red_check against r. */
static void red_check_paths(tcase_t *c, const red_ref_t *r, const char *what) {
  static const way_t plain = {0, 0, ""}, forced = {3, 1, ""};
  for (int f = 0; f < 2; f++) {
    way_enter(f ? &forced : &plain);
    for (int path = 0; path < 2; path++) {
      if (path == 1 && !c->entry) continue;
      char w[96];
      snprintf(w, sizeof w, "%s, %s%s", what, path ? "registry" : "typed",
               f ? ", forced parallel" : "");
      case_reset_out(c);
      case_run(c, path);
      red_check(c, r, w);
    }
    way_leave();
  }
  case_check_memory(c, what, 1);
}

/* Small integers: every partial sum is below 2^24 in magnitude, so exact
 * in any order, and the result must be exactly the correctly rounded one. */
static void red_exact_integers(tcase_t *c) {
  kid_t k = c->in->k;
  int span = k == K_DOT || k == K_NORM2 ? 3 : 8; /* (2^20+5) * 9 < 2^24 */
  const uint64_t *bits = pool_of_bits();
  for (int p = 0; p < c->np; p++)
    if (c->roles[p] == 'i')
      for (size_t i = 0; i < c->n; i++) /* p: x and y differ */
        put_f(c->t, c->b[p].p, i,
              (double)((int)((bits[i] >> (8 * p)) % (uint64_t)(2 * span + 1)) -
                       span));
  case_save_inputs(c);

  const void *x = c->b[0].p, *y = k == K_DOT ? c->b[1].p : NULL;
  long double s = 0, m = k == K_MIN ? INFINITY : -INFINITY;
  for (size_t i = 0; i < c->n; i++) {
    long double v = get_l(c->t, x, i);
    s += k == K_DOT ? v * get_l(c->t, y, i) : k == K_NORM2 ? v * v : v;
    if (k == K_MIN ? v < m : v > m) m = v;
  }
  long double want;
  if (c->t == HK_F32) {
    float f = (float)s;
    if (k == K_MEAN) f = c->n ? f / (float)c->n : NAN;
    if (k == K_NORM2) f = sqrtf(f);
    if (k == K_MIN || k == K_MAX) f = (float)m;
    want = f;
  } else {
    double d = (double)s;
    if (k == K_MEAN) d = c->n ? d / (double)c->n : NAN;
    if (k == K_NORM2) d = sqrt(d);
    if (k == K_MIN || k == K_MAX) d = (double)m;
    want = d;
  }
  for (int path = 0; path < 2; path++) {
    if (path == 1 && !c->entry) continue;
    case_reset_out(c);
    case_run(c, path);
    long double got = get_l(c->t, c->b[c->outp].p, 0);
    CHECK_MSG(got == want || (isnan(got) && isnan(want)),
              "%s n=%zu off=%d %s, small integers: got %.17Lg, want exactly "
              "%.17Lg",
              c->name, c->n, c->off, path ? "registry" : "typed", got, want);
    case_check_memory(c, "small integers", path);
  }
}

/* NaN anywhere makes any reduction NaN (the docs say so for min and max;
 * IEEE arithmetic for the sums); an infinity wins a min/max, and makes a
 * sum, mean or norm2 infinite; inf and -inf make a sum NaN. */
static void red_specials(tcase_t *c) {
  if (c->n == 0) return;
  size_t pos[3] = {0, c->n / 2, c->n - 1};
  kid_t k = c->in->k;
  double inf = k == K_MIN ? -INFINITY : INFINITY;
  const red_ref_t is_nan = {NAN, 0, 1}, is_inf = {inf, 0, 0};
  void *x = c->b[0].p;
  for (int j = 0; j < 3; j++) {
    long double keep = get_l(c->t, x, pos[j]);
    char what[64];
    snprintf(what, sizeof what, "NaN at %zu", pos[j]);
    put_f(c->t, x, pos[j], NAN);
    case_save_inputs(c);
    red_check_paths(c, &is_nan, what);
    if (k != K_DOT) {
      snprintf(what, sizeof what, "%g at %zu", inf, pos[j]);
      put_f(c->t, x, pos[j], inf);
      case_save_inputs(c);
      red_check_paths(c, &is_inf, what);
    }
    put_f(c->t, x, pos[j], (double)keep);
  }
  if (k == K_SUM && c->n >= 2) {
    put_f(c->t, x, 0, INFINITY);
    put_f(c->t, x, c->n - 1, -INFINITY);
    case_save_inputs(c);
    red_check_paths(c, &is_nan, "+inf and -inf");
  }
}

/* Inputs whose running sums grow large and then cancel (the first half
 * positive, the second negative), so that summing in any other order
 * changes the last bits of the result: the way to see that blocks do not
 * depend on the thread count. Rounding errors of similar partial sums are
 * otherwise mostly absorbed. norm2 cannot cancel: magnitudes vary instead. */
static void red_cancelling_inputs(tcase_t *c) {
  const double *u = pool_of(DOM_UNIT, HK_F64);
  kid_t k = c->in->k;
  for (size_t i = 0; i < c->n; i++) {
    double v = u[i];
    if (k == K_SUM || k == K_MEAN || k == K_DOT)
      v = (i < c->n / 2 ? 1e4 : -1e4) * (1.5 + v);
    else if (k == K_NORM2)
      v = ldexp(v, (int)((i / 977) % 41) - 20);
    put_f(c->t, c->b[0].p, i, v);
    if (k == K_DOT) put_f(c->t, c->b[1].p, i, 1.5 + u[POOL_LEN - 1 - i]);
  }
  case_save_inputs(c);
}

static const size_t red_extra_sizes[] = {HK_REDUCE_BLOCK, HK_REDUCE_BLOCK + 1};

static void test_reduction(const inst_t *in, size_t n, int off, int cno) {
  tcase_t c;
  case_init(&c, in, n, 1, off, cno);

  red_ref_t ref = red_reference(&c);
  call_typed(in, c.args, n);
  red_check(&c, &ref, "typed");
  case_check_memory(&c, "typed", 1);

  red_cancelling_inputs(&c);
  ref = red_reference(&c);
  call_typed(in, c.args, n);
  red_check(&c, &ref, "typed, cancelling inputs");
  memcpy(c.res, c.b[c.outp].p, c.es);
  case_check_all_ways(&c);

  red_exact_integers(&c);
  red_specials(&c);
  case_free(&c);
}

/* ---- Softmax (raw, rows x cols) -------------------------------------------- */

static const int64_t shapes[][2] = {{0, 0},    {0, 7},      {4, 0},
                                    {1, 1},    {1, 7},      {7, 3},
                                    {1000, 3}, {4, 65539}, {1, (1 << 20) + 5}};

/* Row kinds by r % 5: plain, shifted by +1000 (max subtraction must keep it
 * finite), every third entry -inf (masked: exactly 0), constant (exactly
 * 1/cols), plain. */
static void softmax_inputs(tcase_t *c, int64_t rows, int64_t cols) {
  const double *pool = pool_of(DOM_UNIT, HK_F64);
  const double *u = pool + (size_t)c->off * 1000;
  void *x = c->b[0].p;
  for (int64_t i = 0; i < rows; i++) {
    double konst = 10 * pool[POOL_LEN - 1 - (size_t)i % 1000];
    for (int64_t j = 0; j < cols; j++) {
      size_t at = (size_t)(i * cols + j);
      double v = 10 * u[at];
      switch (i % 5) {
        case 1: v += 1000; break;
        case 2: if (j % 3 == 1) v = -INFINITY; break;
        case 3: v = konst; break;
        default: break;
      }
      put_f(c->t, x, at, v);
    }
  }
  case_save_inputs(c);
}

static void softmax_check(const tcase_t *c, const char *what) {
  int lg = c->in->k == K_LOG_SOFTMAX;
  int64_t rows = c->rc[0], cols = c->rc[1];
  const void *x = c->b[0].p, *y = c->b[1].p;
  long double e = eps_of(c->t);
  int64_t bad_r = -1, bad_c = -1;
  long double bad_got = 0, bad_want = 0;
  long double *ev = xmalloc((size_t)cols * sizeof *ev); /* e^(x - max) */
  for (int64_t i = 0; i < rows && bad_r < 0; i++) {
    size_t row = (size_t)(i * cols);
    long double m = -INFINITY, s = 0, spread = 0;
    for (int64_t j = 0; j < cols; j++) {
      long double v = get_l(c->t, x, row + (size_t)j);
      if (v > m) m = v;
    }
    for (int64_t j = 0; j < cols; j++) {
      long double v = get_l(c->t, x, row + (size_t)j);
      ev[j] = expl(v - m);
      s += ev[j];
      if (!isinf(v) && m - v > spread) spread = m - v;
    }
    long double lse = m + logl(s);
    for (int64_t j = 0; j < cols; j++) {
      long double v = get_l(c->t, x, row + (size_t)j);
      long double got = get_l(c->t, y, row + (size_t)j), want, tol;
      if (lg) {
        want = v - lse;
        tol = e * (fabsl(want) + 2 * fabsl(lse) + fabsl(m) + (long double)cols +
                   spread + 4);
      } else {
        want = ev[j] / s;
        tol = e * ((long double)cols + spread + 4) * want;
        if (i % 5 == 3) { /* a constant row: each e^0 = 1, the sum cols */
          want = c->t == HK_F32 ? (long double)(1.0f / (float)cols)
                                : (long double)(1.0 / (double)cols);
          tol = 0;
        }
      }
      int ok = isinf(want) ? got == want
                           : !isnan(got) && fabsl(got - want) <= tol;
      if (!ok) {
        bad_r = i, bad_c = j, bad_got = got, bad_want = want;
        break;
      }
    }
  }
  free(ev);
  CHECK_MSG(bad_r < 0, "%s %lldx%lld off=%d %s: [%lld, %lld] got %.17Lg, want %.17Lg",
            c->name, (long long)rows, (long long)cols, c->off, what,
            (long long)bad_r, (long long)bad_c, bad_got, bad_want);
  case_check_memory(c, what, 1);
}

static void test_softmax(const inst_t *in, int64_t rows, int64_t cols, int off) {
  tcase_t c;
  size_t n = (size_t)(rows * cols);
  case_init(&c, in, n, n, off, 0);
  c.rc[0] = rows;
  c.rc[1] = cols;
  c.args[2] = &c.rc[0];
  c.args[3] = &c.rc[1];
  softmax_inputs(&c, rows, cols);

  call_typed(in, c.args, n);
  softmax_check(&c, "typed");
  memcpy(c.res, c.b[1].p, n * c.es);
  if (c.entry) { /* the registry's entry, on every row */
    case_reset_out(&c);
    CHECK_INT_EQ(hk__par_rows(c.entry->range, c.args, (size_t)rows,
                              (size_t)cols, c.entry->flags,
                              c.entry->acc_size, NULL),
                 HK_OK);
    case_check_same(&c, "registry");
    case_check_memory(&c, "registry", 1);
  }
  case_free(&c);
}

/* ---- The generated table ----------------------------------------------- */

static hk_role_t role_of(char r) {
  return r == 'i' ? HK_ROLE_IN
         : r == 'o' ? HK_ROLE_OUT
         : r == 'b' ? HK_ROLE_INOUT
                    : HK_ROLE_SCALAR;
}

/* lens for n elements: n per elementwise buffer, 1 for a reduction's out,
 * n (one row) for softmax, -1 for scalars. */
static void check_lens(const inst_t *in, const hk_stdlib_entry_t *e) {
  const kdesc_t *k = &kernels[in->k];
  const char *roles = shape_roles[k->shape];
  int np = (int)strlen(roles);
  check_scalar_t sc[4];
  void *args[4] = {NULL, NULL, NULL, NULL};
  for (int p = 0; p < 4; p++) {
    val_set(in->t, &sc[p], 1.0, 1);
    if (p < np && roles[p] == 's') args[p] = &sc[p];
  }
  static const size_t ns[] = {0, 7, 1000, (1u << 20) + 5};
  for (size_t j = 0; j < COUNT(ns); j++) {
    int64_t lens[4] = {-2, -2, -2, -2};
    CHECK_INT_EQ(e->lens(args, ns[j], lens), 0);
    for (int p = 0; p < np; p++) {
      int64_t want = (int64_t)ns[j];
      if (roles[p] == 's')
        want = -1;
      else if (k->kind == HK_KIND_REDUCTION && roles[p] == 'o')
        want = 1;
      CHECK_MSG(lens[p] == want, "%s lens[%d] (%s) at n=%zu: %lld, want %lld",
                e->info.name, p, k->pnames[p], ns[j], (long long)lens[p],
                (long long)want);
    }
  }
}

/* 1 for the reductions tests/test_reduce.c checks instead of this file:
 * those with struct or other-typed accumulators, and integer sum and
 * mean. */
static int tested_in_test_reduce(const char *name) {
  static const char *const prefixes[] = {"argmax_", "argmin_", "var_",
                                         "logsumexp_", "minmax_"};
  for (size_t i = 0; i < COUNT(prefixes); i++)
    if (!strncmp(name, prefixes[i], strlen(prefixes[i]))) return 1;
  size_t l = strlen(name);
  int flt = l > 4 && (!strcmp(name + l - 4, "_f32") ||
                      !strcmp(name + l - 4, "_f64"));
  return !flt && (!strncmp(name, "sum_", 4) || !strncmp(name, "mean_", 5));
}

/* Instances with an f16, bf16 or bool parameter, and the kernels of
 * logic.json and cast.json: tests/test_types.c checks those. */
static int tested_in_test_types(const hk_stdlib_entry_t *e) {
  for (int p = 0; p < e->info.nparams; p++) {
    hk_dtype_t t = e->info.params[p].dtype;
    if (t == HK_F16 || t == HK_BF16 || t == HK_BOOL) return 1;
  }
  return strcmp(e->info.source, "stdlib_kernels/logic.json") == 0 ||
         strcmp(e->info.source, "stdlib_kernels/cast.json") == 0;
}

/* Every typed function is in the table once, described as its kernel file
 * says, and only those are (but those tests/test_reduce.c, test_rows.c and
 * test_types.c check). */
static int tested_elsewhere(const hk_stdlib_entry_t *e) {
  return tested_in_test_types(e) || tested_in_test_reduce(e->info.name) ||
         strncmp(e->info.name, "layernorm_", 10) == 0; /* test_rows.c */
}

static void test_table(void) {
  size_t elsewhere = 0;
  for (size_t i = 0; i < hk__stdlib_count; i++)
    elsewhere += tested_elsewhere(&hk__stdlib[i]);
  CHECK_INT_EQ(hk__stdlib_count, COUNT(insts) + elsewhere);
  CHECK(hk__stdlib_find("add") == NULL);
  CHECK(hk__stdlib_find("add_f128") == NULL);
  CHECK(hk__stdlib_find("") == NULL);
  for (size_t i = 0; i < hk__stdlib_count; i++) {
    if (tested_elsewhere(&hk__stdlib[i])) continue;
    int found = 0;
    for (size_t j = 0; j < COUNT(insts); j++) {
      char name[40];
      snprintf(name, sizeof name, "%s_%s", kernels[insts[j].k].name,
               hk_dtype_name(insts[j].t));
      found += strcmp(name, hk__stdlib[i].info.name) == 0;
    }
    CHECK_MSG(found == 1, "table entry %s: %d instances in this test",
              hk__stdlib[i].info.name, found);
  }
  for (size_t j = 0; j < COUNT(insts); j++) {
    const inst_t *in = &insts[j];
    const kdesc_t *k = &kernels[in->k];
    const char *roles = shape_roles[k->shape];
    char name[40];
    snprintf(name, sizeof name, "%s_%s", k->name, hk_dtype_name(in->t));
    const hk_stdlib_entry_t *e = NULL;
    int times = 0;
    for (size_t i = 0; i < hk__stdlib_count; i++)
      if (strcmp(hk__stdlib[i].info.name, name) == 0) e = &hk__stdlib[i], times++;
    CHECK_MSG(times == 1, "%s is in the table %d times", name, times);
    CHECK_MSG(hk__stdlib_find(name) == e, "hk__stdlib_find(\"%s\")", name);
    if (!e) continue;
    const hk_kernel_info_t *info = &e->info;
    CHECK_MSG(hk__stdlib_typed(e) == in->fn, "%s: typed is not hk_%s", name,
              name);
    CHECK_MSG(info->kind == k->kind, "%s: kind %d", name, (int)info->kind);
    CHECK_STR_EQ(info->origin, "stdlib");
    CHECK_STR_EQ(info->source, k->file);
    CHECK_MSG(info->doc && info->doc[0], "%s: no doc", name);
    CHECK_MSG(info->targets & HK_TARGET_CPU, "%s: not a CPU kernel", name);
    CHECK(e->range != NULL && e->lens != NULL);
    CHECK_MSG((e->merge != NULL) == (k->kind == HK_KIND_REDUCTION),
              "%s: merge", name);
    CHECK_INT_EQ(e->acc_size,
                 k->kind == HK_KIND_REDUCTION ? hk_dtype_size(in->t) : 0);
    CHECK_MSG((e->flags & ~HK_ABI_HEAVY) == 0, "%s: flags %u", name, e->flags);
    CHECK_INT_EQ(info->nparams, (int)strlen(roles));
    if (info->nparams != (int)strlen(roles)) continue;
    for (int p = 0; p < info->nparams; p++) {
      const hk_param_info_t *pi = &info->params[p];
      hk_dtype_t want_t = in->t;
      CHECK_STR_EQ(pi->name, k->pnames[p]);
      CHECK_MSG(pi->dtype == want_t, "%s.%s: dtype %s", name, k->pnames[p],
                hk_dtype_name(pi->dtype));
      CHECK_MSG(pi->role == role_of(roles[p]), "%s.%s: role %s", name,
                k->pnames[p], hk_role_name(pi->role));
      CHECK_INT_EQ(pi->row, HK_ROW_FULL);
      CHECK_MSG(pi->len == NULL, "%s.%s: len %s", name, k->pnames[p],
                  pi->len);
      CHECK(pi->doc != NULL);
    }
    check_lens(in, e);
  }
}

/* ---- main -------------------------------------------------------------- */

int main(void) {
  par_min_saved[0] = hk__par_min[0];
  par_min_saved[1] = hk__par_min[1];

  test_table();
  test_fma_is_fused();
  /* HK_TEST_SMALL (tools/test.sh's sanitizer suites): nothing from BIG on
   * (below it the parallel paths are forced): 26 s under ASan before */
  const int small = getenv("HK_TEST_SMALL") != NULL;
  const size_t nsizes = small ? COUNT(sizes) - 1 : COUNT(sizes);
  if (small) printf("NOTE: HK_TEST_SMALL: no array of %u elements or more\n", BIG);
  for (size_t j = 0; j < COUNT(insts); j++) {
    const inst_t *in = &insts[j];
    switch (kernels[in->k].kind) {
      case HK_KIND_ELEMENTWISE:
        for (size_t si = 0; si < nsizes; si++)
          for (int off = sizes[si] >= BIG; off < 2; off++)
            test_elementwise(in, si, off);
        break;
      case HK_KIND_REDUCTION:
        for (size_t si = 0; si < nsizes; si++)
          for (int off = sizes[si] >= BIG; off < 2; off++)
            test_reduction(in, sizes[si], off, (int)si * 2 + off);
        for (size_t si = 0; si < COUNT(red_extra_sizes); si++)
          test_reduction(in, red_extra_sizes[si], 1, 0);
        break;
      case HK_KIND_RAW:
      case HK_KIND_GRID: /* the stdlib has none */
        break;
      case HK_KIND_ROWS:
        for (size_t si = 0; si < COUNT(shapes); si++) {
          if (small && shapes[si][0] * shapes[si][1] >= BIG) continue;
          for (int off = shapes[si][0] * shapes[si][1] >= BIG; off < 2; off++)
            test_softmax(in, shapes[si][0], shapes[si][1], off);
        }
        break;
    }
  }
  CHECK(hk__par_min[0] == par_min_saved[0] && hk__par_min[1] == par_min_saved[1]);
  CHECK_INT_EQ(hk_set_threads(0), HK_OK);
  pools_free();
  CHECK_DONE();
}
