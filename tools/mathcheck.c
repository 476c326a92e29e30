/* mathcheck.c — the accuracy of common/hkmath.h against long double.
 *
 *   mathcheck f32 FUNC [STEP]      every STEP-th float bit pattern (1: all
 *                                  2^32), FUNC one of the list below
 *   mathcheck f64 FUNC N [SEED]    N random doubles (random bit patterns and
 *                                  uniform values in the function's range)
 *   mathcheck f32|f64 pow N [SEED] N random (x, y) pairs
 *   mathcheck all STEP N           every function: f32 with STEP, f64 and
 *                                  both pows with N (the suite's sampled
 *                                  check)
 *
 * Double sin and cos are checked over the whole range (Payne and Hanek's
 * reduction from 2^28 on since 2026-11-27; before, |x| < 2^28 only);
 * float sin and cos over every input.
 * Prints the largest error in ulps, where, and the failures of the special
 * values (a NaN where long double gives none, or the other way round, or a
 * wrong infinity or sign of zero). Exit status 1 when the bound (2 ulp for
 * float, 3 for double) is exceeded. tools/mathcheck.sh runs all of them.
 * Compiled with contraction off (-ffp-contract=off), like kernel code.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hkmath_native.h"

typedef struct {
  const char *name;
  float (*f32)(float);
  double (*f64)(double);
  long double (*ref)(long double);
  double lim; /* |x| from which finite double inputs are not checked (0:
                 none); every float is */
} fn_t;

static long double ref_sigmoid(long double x) { return 1.0L / (1.0L + expl(-x)); }
static long double ref_rsqrt(long double x) { return 1.0L / sqrtl(x); }
static long double ref_expp1(long double x) { return expl(x) + 1.0L; }

static const fn_t fns[] = {
    {"exp", hk_expf, hk_exp, expl, 0},
    {"expm1", hk_expm1f, hk_expm1, expm1l, 0},
    {"log", hk_logf, hk_log, logl, 0},
    {"log1p", hk_log1pf, hk_log1p, log1pl, 0},
    {"tanh", hk_tanhf, hk_tanh, tanhl, 0},
    {"erf", hk_erff, hk_erf, erfl, 0},
    {"sin", hk_sinf, hk_sin, sinl, 0},
    {"cos", hk_cosf, hk_cos, cosl, 0},
    {"sigmoid", hk_sigmoidf, hk_sigmoid, ref_sigmoid, 0},
    {"rsqrt", hk_rsqrtf, hk_rsqrt, ref_rsqrt, 0},
    {"expp1", hk_expp1f, hk_expp1, ref_expp1, 0},
};

/* The error of y against r in ulps of the format (mant bits, min exponent);
 * HUGE_VAL for a wrong special value. */
static double ulps(long double y, long double r, int mant, int emin) {
  if (isnan(r) || isnan(y)) return isnan(r) && isnan(y) ? 0 : HUGE_VAL;
  if (isinf(r) || isinf(y)) return y == r ? 0 : HUGE_VAL;
  if (y == 0 && r == 0 && signbit(y) != signbit(r)) return HUGE_VAL;
  int e = r == 0 ? emin : ilogbl(r);
  if (e < emin) e = emin;
  return (double)(fabsl(y - r) / ldexpl(1.0L, e - mant));
}

/* The reference rounded to the format first, so that a result beyond the
 * largest finite value compares as infinity. */
static double err32(float y, long double r) {
  float rf = (float)r;
  if (isinf(rf) && !isinf(r)) r = rf;
  return ulps(y, r, 23, -126);
}
static double err64(double y, long double r) {
  double rd = (double)r;
  if (isinf(rd) && !isinf(r)) r = rd;
  return ulps(y, r, 52, -1022);
}

static const fn_t *find(const char *name) {
  for (size_t i = 0; i < sizeof fns / sizeof *fns; i++)
    if (!strcmp(fns[i].name, name)) return &fns[i];
  return NULL;
}

static uint64_t rng(uint64_t *s) { /* splitmix64 */
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* A uniform double in [0, 1) from r's top 53 bits. */
static double unit(uint64_t r) { return (double)(r >> 11) / 9007199254740992.0; }

/* The largest error of a pow check so far, where, and how many inputs
 * went over the bound. */
typedef struct {
  double worst, wx, wy;
  uint64_t bad;
} tally_t;

static void tally(tally_t *t, double e, double bound, double x, double y) {
  if (e > bound) t->bad++;
  if (e > t->worst || e != e) t->worst = e, t->wx = x, t->wy = y;
}

static int report_pow(const char *type, uint64_t n, const tally_t *t,
                      int bound) {
  printf("%s pow      %llu inputs: max %.3f ulp at (%a, %a), %llu over %d "
         "ulp\n",
         type, (unsigned long long)n, t->worst, t->wx, t->wy,
         (unsigned long long)t->bad, bound);
  return t->bad != 0;
}

static int check_f32(const fn_t *f, uint64_t step) {
  double worst = 0;
  float at = 0;
  uint64_t n = 0, bad = 0;
  for (uint64_t b = 0; b < 0x100000000ull; b += step, n++) {
    float x = hk_u2f((uint32_t)b);
    double e = err32(f->f32(x), f->ref(x));
    if (e > 2) bad++;
    if (e > worst || (e != e)) worst = e, at = x;
  }
  printf("f32 %-8s %llu inputs: max %.3f ulp at %a (%.9g), %llu over 2 ulp\n",
         f->name, (unsigned long long)n, worst, at, at, (unsigned long long)bad);
  return bad != 0;
}

static int check_pow32(uint64_t n, uint64_t seed) {
  tally_t t = {0};
  for (uint64_t i = 0; i < n; i++) {
    uint64_t r = rng(&seed);
    float x, y;
    if (i & 1) { /* any bits */
      x = hk_u2f((uint32_t)r);
      y = hk_u2f((uint32_t)(r >> 32));
    } else { /* results in range: |y log x| < 90 */
      x = hk_u2f((uint32_t)r & 0x7fffffffu);
      x = (float)(x / 3.4028235e38 * 100.0); /* (0, 100) */
      y = (float)(((double)(r >> 40) / (1 << 24) - 0.5) * 40.0);
      if ((r >> 20) & 1) y = (float)(int)y, x = (r >> 21) & 1 ? -x : x;
    }
    tally(&t, err32(hk_powf(x, y), powl(x, y)), 2, x, y);
  }
  return report_pow("f32", n, &t, 2);
}

/* Random (x, y) doubles: any bits; results in range (|y log x| < 700,
 * integer y with negative x a quarter of the time); and x near 1 with
 * large y (where y log x needs log's extra precision). */
static int check_pow64(uint64_t n, uint64_t seed) {
  tally_t t = {0};
  for (uint64_t i = 0; i < n; i++) {
    uint64_t r = rng(&seed), r2 = rng(&seed);
    double x, y;
    if (i % 3 == 0) {
      x = hk_u2d(r);
      y = hk_u2d(r2);
    } else if (i % 3 == 1) {
      x = unit(r) * 1000.0; /* [0, 1000) */
      if ((r2 >> 60) & 1) x = 1.0 / x;
      y = (unit(r2) - 0.5) * 200.0;
      if (((r2 >> 2) & 3) == 0) { /* an integer y, x of either sign */
        y = (double)(int64_t)y;
        if ((r2 >> 4) & 1) x = -x;
      }
    } else {
      x = 1.0 + (unit(r) - 0.5) * 0x1p-20;
      y = (unit(r2) - 0.5) * 0x1p31;
    }
    tally(&t, err64(hk_pow(x, y), powl(x, y)), 3, x, y);
  }
  return report_pow("f64", n, &t, 3);
}

static int check_f64(const fn_t *f, uint64_t n, uint64_t seed) {
  double worst = 0, at = 0;
  uint64_t bad = 0;
  for (uint64_t i = 0; i < n; i++) {
    uint64_t r = rng(&seed);
    double x;
    if (i % 3 == 0)
      x = hk_u2d(r); /* any bits */
    else if (i % 3 == 1) /* [-64, 64], most results in range */
      x = (unit(r) - 0.5) * 128.0;
    else /* small magnitudes, each binade alike */
      x = hk_u2d((r & 0x800fffffffffffffull) |
                 ((uint64_t)(1023 - 40 + (r >> 52) % 48) << 52));
    if (f->lim && isfinite(x) && !(fabs(x) < f->lim)) continue;
    double e = err64(f->f64(x), f->ref(x));
    if (e > 3) bad++;
    if (e > worst || e != e) worst = e, at = x;
  }
  printf("f64 %-8s %llu inputs: max %.3f ulp at %a (%.17g), %llu over 3 ulp\n",
         f->name, (unsigned long long)n, worst, at, at, (unsigned long long)bad);
  return bad != 0;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: mathcheck f32 FUNC [STEP] | f64 FUNC N [SEED] | "
                    "all STEP N\n");
    return 2;
  }
  uint64_t a = argc > 3 ? strtoull(argv[3], NULL, 0) : 0;
  uint64_t seed = argc > 4 ? strtoull(argv[4], NULL, 0) : 1;
  if (!strcmp(argv[1], "all")) {
    uint64_t step = strtoull(argv[2], NULL, 0), n = a ? a : 100000;
    int bad = check_pow32(n, seed) | check_pow64(n, seed);
    for (size_t i = 0; i < sizeof fns / sizeof *fns; i++)
      bad |= check_f32(&fns[i], step ? step : 1) |
             check_f64(&fns[i], n, seed);
    return bad;
  }
  if (!strcmp(argv[2], "pow"))
    return !strcmp(argv[1], "f64") ? check_pow64(a ? a : 100000000, seed)
                                   : check_pow32(a ? a : 100000000, seed);
  const fn_t *f = find(argv[2]);
  if (!f) {
    fprintf(stderr, "mathcheck: unknown function %s\n", argv[2]);
    return 2;
  }
  if (!strcmp(argv[1], "f32")) return check_f32(f, a ? a : 1);
  if (!strcmp(argv[1], "f64")) return check_f64(f, a ? a : 100000000, seed);
  fprintf(stderr, "mathcheck: f32 or f64, not %s\n", argv[1]);
  return 2;
}
