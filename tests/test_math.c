/* test_math.c — common/hkmath.h gives the same bits on every CPU tier and
 * on CUDA.
 *
 * test_math: kernels calling each of its functions (exp, expm1, log,
 * log1p, tanh, erf, sin, cos, pow, rsqrt, sigmoid; float and double; the f
 * names too) run on tier jit (tcc, calling the copy compiled into libhk:
 * core/symbols.c) and tier opt (the system compiler, -march=native:
 * inlined, vectorised), and the stdlib's exp, log, tanh, sigmoid and gelu
 * on tier inline; every result must equal, bit for bit, hkmath.h compiled
 * into this test (with contraction off, as kernels are), on inputs that hit
 * the special values, the range limits, and the tails of vector loops. A
 * kernel calling sin and cos of one argument, which gcc merges into
 * sincosf when they are libm's, must load and run on tier opt. Double pow's
 * special cases match libm's (C99 Annex F). The accuracy itself is checked
 * by tools/mathcheck.c (ctest math_ulp: sampled; tools/mathcheck.sh: every
 * float). Tier jit's two copies of hkmath.h in libhk (core/symbols.c: for
 * any CPU, where each fmaf is glibc's, and for AVX2 and FMA, which the CPU
 * runs where it can) give this file's bits, name by name, on 2^16 + 3
 * inputs spread over every float and on the double inputs.
 *
 * test_math --cuda (ctest test_math_cuda): the same kernels on the GPU,
 * the plugin kernels compiled by NVRTC on their first call and the stdlib's
 * by nvcc into libhk, their inputs copied into device memory and their
 * results back; then, on the GPU only, a wider sweep: each float function
 * on 2^24 inputs spread over all 2^32 bit patterns, each double function
 * and pow (float and double) on 2^20. The same hkmath.h here is the
 * reference, bit for bit, except that a NaN the GPU gives equals any NaN
 * (compare()). One line per kernel says what was covered. Skipped (77)
 * without a device.
 */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "hk.h"
#include "hkmath_native.h"
#include "symbols.h"

#define N 4099 /* odd: every vector width leaves a tail */

static const char kernels_json[] =
    "{\"schema_version\": 1, \"kernels\": [\n"
#define UNARY(fn)                                                           \
  " {\"name\": \"m_" #fn "\", \"kind\": \"elementwise\",\n"                  \
  "  \"types\": {\"T\": [\"f32\", \"f64\"]},\n"                              \
  "  \"params\": [{\"name\": \"x\", \"type\": \"T\", \"role\": \"in\"},\n"    \
  "             {\"name\": \"out\", \"type\": \"T\", \"role\": \"out\"}],\n"  \
  "  \"body\": \"out = " #fn "(x);\"},\n"                                    \
  " {\"name\": \"mf_" #fn "\", \"kind\": \"elementwise\",\n"                 \
  "  \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},\n"  \
  "             {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\"}],\n"\
  "  \"body\": \"out = " #fn "f(x);\"},\n"
    UNARY(exp) UNARY(expm1) UNARY(log) UNARY(log1p) UNARY(tanh) UNARY(erf)
    UNARY(sin) UNARY(cos) UNARY(rsqrt) UNARY(sigmoid) UNARY(expp1)
#undef UNARY
    " {\"name\": \"m_pow\", \"kind\": \"elementwise\",\n"
    "  \"types\": {\"T\": [\"f32\", \"f64\"]},\n"
    "  \"params\": [{\"name\": \"x\", \"type\": \"T\", \"role\": \"in\"},\n"
    "             {\"name\": \"y\", \"type\": \"T\", \"role\": \"in\"},\n"
    "             {\"name\": \"out\", \"type\": \"T\", \"role\": \"out\"}],\n"
    "  \"body\": \"out = pow(x, y);\"},\n"
    " {\"name\": \"m_sincos\", \"kind\": \"elementwise\",\n"
    "  \"types\": {\"T\": [\"f32\", \"f64\"]},\n"
    "  \"params\": [{\"name\": \"x\", \"type\": \"T\", \"role\": \"in\"},\n"
    "             {\"name\": \"out\", \"type\": \"T\", \"role\": \"out\"}],\n"
    "  \"body\": \"out = sin(x) * cos(x);\"},\n"
    /* where(c, a, b): the branch-free select of the preludes, for floats
     * and integers; and a file that names a parameter where still loads */
    " {\"name\": \"m_where\", \"kind\": \"elementwise\",\n"
    "  \"types\": {\"T\": [\"f32\", \"f64\"]},\n"
    "  \"params\": [{\"name\": \"x\", \"type\": \"T\", \"role\": \"in\"},\n"
    "             {\"name\": \"out\", \"type\": \"T\", \"role\": \"out\"}],\n"
    "  \"body\": \"out = where(x > 0, x + x, x - (T)1) + where(x == 0, (T)5, "
    "(T)0);\"},\n"
    " {\"name\": \"m_wherei\", \"kind\": \"elementwise\",\n"
    "  \"types\": {\"T\": [\"i32\", \"i64\", \"u8\"]},\n"
    "  \"params\": [{\"name\": \"x\", \"type\": \"T\", \"role\": \"in\"},\n"
    "             {\"name\": \"out\", \"type\": \"T\", \"role\": \"out\"}],\n"
    "  \"body\": \"out = where(x > 7, x, x * 3) + where(x == 3, 100, 0);\"},\n"
    " {\"name\": \"m_wherep\", \"kind\": \"elementwise\",\n"
    "  \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},\n"
    "             {\"name\": \"where\", \"type\": \"f32\", \"role\": \"in\"},\n"
    "             {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\"}],\n"
    "  \"body\": \"out = x * where;\"}]}\n";

typedef struct {
  const char *name;
  float (*f32)(float);
  double (*f64)(double);
} fn_t;

static float sincosf_ref(float x) { return hk_sinf(x) * hk_cosf(x); }
static double sincos_ref(double x) { return hk_sin(x) * hk_cos(x); }

static const fn_t fns[] = {
    {"exp", hk_expf, hk_exp},       {"expm1", hk_expm1f, hk_expm1},
    {"log", hk_logf, hk_log},       {"log1p", hk_log1pf, hk_log1p},
    {"tanh", hk_tanhf, hk_tanh},    {"erf", hk_erff, hk_erf},
    {"sin", hk_sinf, hk_sin},       {"cos", hk_cosf, hk_cos},
    {"rsqrt", hk_rsqrtf, hk_rsqrt}, {"sigmoid", hk_sigmoidf, hk_sigmoid},
    {"expp1", hk_expp1f, hk_expp1}, {"sincos", sincosf_ref, sincos_ref}};

/* Where checks run: a context's kernels on one backend. */
typedef struct {
  hk_context_t *ctx;
  const char *label;    /* for messages: "tier jit", "tier inline", "cuda" */
  hk_backend_t backend; /* HK_BACKEND_CPU or HK_BACKEND_CUDA */
} on_t;

/* A kernel's inputs: n elements of x, and of y for two-input kernels (NULL
 * where no kernel reads them), in float and double. */
typedef struct {
  size_t n;
  float *x32, *y32;
  double *x64, *y64;
} inputs_t;

static float g_x32[N], g_y32[N];
static double g_x64[N], g_y64[N];
static const inputs_t g_in = {N, g_x32, g_y32, g_x64, g_y64};

/* malloc for inputs and results: a test without the memory stops here. */
static void *alloc(size_t bytes) {
  void *p = malloc(bytes ? bytes : 1);
  if (!p) {
    fprintf(stderr, "test_math: out of memory (%zu bytes)\n", bytes);
    exit(1);
  }
  return p;
}

static uint64_t rng(uint64_t *s) { /* splitmix64 */
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* in's n inputs from seed: special values first, then a third each of: any
 * bits, [-width/2, width/2], and magnitudes from 2^-30 to 2^30; y in
 * [-4, 4], an integer at every fifth element (pow's integer exponents). */
static void fill_inputs(const inputs_t *in, double width, uint64_t seed) {
  static const double special[] = {
      0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 1e-40, -1e-40, 1e-300, 5e-324,
      88.72, 88.73, -103.9, -104.0, 709.78, 709.79, -745.1, -746.0, 0.625,
      -0.625, 20.0, 1e30, -1e30, 3.4e38, 1.7e308, 268435455.0, 1.5707963,
      3.14159265358979, 1.0 / 0.0, -1.0 / 0.0, 0.0 / 0.0};
  const size_t ns = sizeof special / sizeof *special;
  for (size_t i = 0; i < in->n; i++) {
    uint64_t r = rng(&seed), q = rng(&seed);
    double v, w = ((double)(q >> 11) / 9007199254740992.0 - 0.5) * 8.0;
    if (i < ns)
      v = special[i];
    else if (i % 3 == 0)
      v = hk_u2d(r);
    else if (i % 3 == 1)
      v = ((double)(r >> 11) / 9007199254740992.0 - 0.5) * width;
    else
      v = hk_u2d((r & 0x800fffffffffffffull) |
                 ((uint64_t)(1023 - 30 + (r >> 52) % 60) << 52));
    in->x64[i] = v;
    in->x32[i] = i % 3 == 0 && i >= ns ? hk_u2f((uint32_t)r) : (float)v;
    in->y64[i] = i % 5 == 0 ? (double)(int)w : w; /* pow: integer exponents */
    in->y32[i] = (float)in->y64[i];
  }
}

/* Element i of p, a float or (f64) double array, as a double. */
static double at(const void *p, size_t i, int f64) {
  return f64 ? ((const double *)p)[i] : ((const float *)p)[i];
}

/* How two arrays of results differ. */
typedef struct {
  size_t bad;  /* elements whose bits differ */
  size_t nans; /* elements NaN in both, with other bits (see compare) */
  long first;  /* the first bad element, or -1 */
} diff_t;

/* got against want, n floats or (f64) doubles: bit for bit. Where nan_any
 * (on the GPU), a NaN equals any NaN, counted in nans instead of bad (and
 * shown in the GPU's lines): hkmath.h's functions make their NaNs the same
 * on every target (hkm_nanf), but arithmetic on a NaN outside them (the
 * kernels' own: m_where's x - 1, m_sincos's product) gives the target's
 * NaN, an operand's payload on x86 and 0x7fffffff on NVIDIA GPUs, and
 * which NaN is not what this test is about. The CPU tiers, all on one CPU,
 * keep to the exact bits. */
static diff_t compare(const void *got, const void *want, size_t n, int f64,
                      int nan_any) {
  diff_t d = {0, 0, -1};
  const size_t es = f64 ? sizeof(double) : sizeof(float);
  if (!memcmp(got, want, n * es)) return d; /* the usual case, at once */
  for (size_t i = 0; i < n; i++) {
    if (!memcmp((const char *)got + i * es, (const char *)want + i * es, es))
      continue;
    if (nan_any && isnan(at(got, i, f64)) && isnan(at(want, i, f64)))
      d.nans++;
    else if (!d.bad++)
      d.first = (long)i;
  }
  return d;
}

/* A kernel's outcome on on: a CHECK that none of its n results differs (d;
 * first describes the first that does), and, on the GPU, a line for the
 * log whatever the outcome, so that a GPU run shows what it covered (the
 * CPU tiers' run stays quiet). */
static void report(const on_t *on, const char *name, size_t n, diff_t d,
                   const char *first) {
  CHECK_MSG(d.bad == 0, "%s on %s: %zu of %zu elements differ; the first, %s",
            name, on->label, d.bad, n, first);
  if (on->backend != HK_BACKEND_CUDA) return;
  if (d.bad)
    printf("%s %-14s %8zu elements: %zu differ (the first, %s)\n", on->label,
           name, n, d.bad, first);
  else if (d.nans)
    printf("%s %-14s %8zu elements: bit-identical but for the sign or "
           "payload of %zu NaNs\n",
           on->label, name, n, d.nans);
  else
    printf("%s %-14s %8zu elements: bit-identical\n", on->label, name, n);
}

/* rc, an hk_ call's (what) for kernel name, as a CHECK; 1 when HK_OK. */
static int rc_ok(int rc, const on_t *on, const char *name, const char *what) {
  CHECK_MSG(rc == HK_OK, "%s on %s: %s: %s", name, on->label, what,
            hk_last_error());
  return rc == HK_OK;
}

/* Runs kernel name (k) on n elements on on->backend: args are nargs (2 or
 * 3) buffers of host memory of es-byte elements, the output last. On
 * the GPU they go through device memory (the inputs copied in, the output
 * copied back, all freed). 1 when it ran; else a CHECK failed. */
static int call_on(const on_t *on, const hk_kernel_t *k, const char *name,
                   size_t n, int nargs, void *const *args, size_t es) {
  if (on->backend != HK_BACKEND_CUDA)
    return rc_ok(hk_call_on(k, on->backend, n, args), on, name, "hk_call_on");
  HK_ASSERT(nargs >= 2 && nargs <= 3);
  void *dev[3] = {NULL, NULL, NULL};
  const size_t bytes = n * es;
  int ran = 1;
  for (int a = 0; a < nargs && ran; a++) {
    ran = rc_ok(hk_device_alloc(&dev[a], bytes), on, name, "hk_device_alloc");
    if (ran && a < nargs - 1)
      ran = rc_ok(hk_memcpy_to_device(dev[a], args[a], bytes, NULL), on, name,
                  "hk_memcpy_to_device");
  }
  ran = ran && rc_ok(hk_call_on(k, HK_BACKEND_CUDA, n, dev), on, name,
                     "hk_call_on");
  ran = ran && rc_ok(hk_memcpy_to_host(args[nargs - 1], dev[nargs - 1], bytes,
                                       NULL),
                     on, name, "hk_memcpy_to_host");
  for (int a = 0; a < nargs; a++)
    if (dev[a] && !rc_ok(hk_device_free(dev[a]), on, name, "hk_device_free"))
      ran = 0;
  return ran;
}

/* Runs kernel name of on->ctx on in's x (and y, when two) on its backend
 * and compares its in->n results with want. */
static void run_and_compare(const on_t *on, const inputs_t *in,
                            const char *name, int f64, int two,
                            const void *want) {
  hk_kernel_t *k = NULL;
  if (!rc_ok(hk_kernel_find(on->ctx, name, &k), on, name, "hk_kernel_find"))
    return;
  const size_t es = f64 ? sizeof(double) : sizeof(float);
  void *out = alloc(in->n * es);
  memset(out, 0, in->n * es);
  void *x = f64 ? (void *)in->x64 : (void *)in->x32;
  void *y = f64 ? (void *)in->y64 : (void *)in->y32;
  void *args2[] = {x, out}, *args3[] = {x, y, out};
  if (call_on(on, k, name, in->n, two ? 3 : 2, two ? args3 : args2, es)) {
    diff_t d = compare(out, want, in->n, f64, on->backend == HK_BACKEND_CUDA);
    char first[256] = "";
    if (d.bad) {
      size_t i = (size_t)d.first;
      char ys[64] = "";
      if (two) snprintf(ys, sizeof ys, ", y = %a", at(y, i, f64));
      snprintf(first, sizeof first, "element %zu (x = %a%s): %a, hkmath.h %a",
               i, at(x, i, f64), ys, at(out, i, f64), at(want, i, f64));
    }
    report(on, name, in->n, d, first);
  }
  free(out);
}

/* fn's kernels PREFIX+NAME_f32 on in32 and PREFIX+NAME_f64 on in64 (and
 * mf_NAME, the f version, on in32 where fnames) against hkmath.h; prefix
 * "m_" or "" (the stdlib's). */
static void check_fn(const on_t *on, const fn_t *fn, const char *prefix,
                     int fnames, const inputs_t *in32, const inputs_t *in64) {
  float *w32 = alloc(in32->n * sizeof *w32);
  double *w64 = alloc(in64->n * sizeof *w64);
  char name[64];
  for (size_t i = 0; i < in32->n; i++) w32[i] = fn->f32(in32->x32[i]);
  for (size_t i = 0; i < in64->n; i++) w64[i] = fn->f64(in64->x64[i]);
  snprintf(name, sizeof name, "%s%s_f32", prefix, fn->name);
  run_and_compare(on, in32, name, 0, 0, w32);
  snprintf(name, sizeof name, "%s%s_f64", prefix, fn->name);
  run_and_compare(on, in64, name, 1, 0, w64);
  if (fnames) {
    snprintf(name, sizeof name, "mf_%s", fn->name);
    run_and_compare(on, in32, name, 0, 0, w32);
  }
  free(w32);
  free(w64);
}

/* Every function of fns (sincos only when with_sincos, as it is no
 * function of hkmath.h's) on in32 and in64, and pow on in64's pairs, float
 * and double. */
static void check_math(const on_t *on, const inputs_t *in32,
                       const inputs_t *in64, int with_sincos) {
  for (size_t f = 0; f < sizeof fns / sizeof *fns; f++) {
    const int is_sincos = strcmp(fns[f].name, "sincos") == 0;
    if (!is_sincos || with_sincos)
      check_fn(on, &fns[f], "m_", !is_sincos, in32, in64);
  }
  float *w32 = alloc(in64->n * sizeof *w32);
  double *w64 = alloc(in64->n * sizeof *w64);
  for (size_t i = 0; i < in64->n; i++) {
    w32[i] = hk_powf(in64->x32[i], in64->y32[i]);
    w64[i] = hk_pow(in64->x64[i], in64->y64[i]);
  }
  run_and_compare(on, in64, "m_pow_f32", 0, 1, w32);
  run_and_compare(on, in64, "m_pow_f64", 1, 1, w64);
  free(w32);
  free(w64);
}

static float where32(float x) {
  return (x > 0 ? x + x : x - 1.0f) + (x == 0 ? 5.0f : 0.0f);
}
static double where64(double x) {
  return (x > 0 ? x + x : x - 1.0) + (x == 0 ? 5.0 : 0.0);
}

/* Element i of an integer array of es bytes an element (4: i32, 8: i64,
 * 1: u8). */
static int64_t int_at(const void *p, size_t i, size_t es) {
  return es == 4   ? ((const int32_t *)p)[i]
         : es == 8 ? ((const int64_t *)p)[i]
                   : ((const uint8_t *)p)[i];
}

/* where on integers (i32, i64, u8: the result has the type of a + b,
 * converted to out's) and a parameter named where. */
static void check_where(const on_t *on) {
  static const struct {
    const char *name;
    size_t es;
  } it[] = {{"m_wherei_i32", 4}, {"m_wherei_i64", 8}, {"m_wherei_u8", 1}};
  for (size_t t = 0; t < sizeof it / sizeof *it; t++) {
    hk_kernel_t *k = NULL;
    if (!rc_ok(hk_kernel_find(on->ctx, it[t].name, &k), on, it[t].name,
               "hk_kernel_find"))
      continue;
    static unsigned char x[N * 8], out[N * 8];
    int64_t want[N];
    for (size_t i = 0; i < N; i++) {
      int64_t v = (int64_t)(i % 23); /* small: no overflow anywhere */
      int64_t w = (v > 7 ? v : v * 3) + (v == 3 ? 100 : 0);
      if (it[t].es == 4) ((int32_t *)(void *)x)[i] = (int32_t)v;
      else if (it[t].es == 8) ((int64_t *)(void *)x)[i] = v;
      else x[i] = (unsigned char)v;
      want[i] = w;
    }
    void *args[] = {x, out};
    if (!call_on(on, k, it[t].name, N, 2, args, it[t].es)) continue;
    diff_t d = {0, 0, -1};
    for (size_t i = 0; i < N; i++)
      if (int_at(out, i, it[t].es) != want[i] && !d.bad++) d.first = (long)i;
    char first[128] = "";
    if (d.bad)
      snprintf(first, sizeof first, "element %ld (x = %ld): %lld, want %lld",
               d.first, d.first % 23,
               (long long)int_at(out, (size_t)d.first, it[t].es),
               (long long)want[d.first]);
    report(on, it[t].name, N, d, first);
  }
  static float w32[N];
  for (size_t i = 0; i < N; i++) w32[i] = g_x32[i] * g_y32[i];
  run_and_compare(on, &g_in, "m_wherep", 0, 1, w32);
}

/* Every kernel of kernels_json on on. */
static void check_tier(const on_t *on) {
  static const fn_t where_fn = {"where", where32, where64};
  check_fn(on, &where_fn, "m_", 0, &g_in, &g_in);
  check_where(on);
  check_math(on, &g_in, &g_in, 1);
}

/* the stdlib's gelu: 0.5 x (1 + tanh u) as x / (1 + e^(-2u)) */
static float gelu32(float x) {
  return x / hk_expp1f(-2.0f * 0.79788456080286535588f *
                       (x + 0.044715f * x * x * x));
}
static double gelu64(double x) {
  return x / hk_expp1(-2.0 * 0.79788456080286535588 *
                      (x + 0.044715 * x * x * x));
}

/* Double pow's special cases (C99 Annex F) and edges against libm's pow,
 * which follows Annex F: the same value (NaN for NaN, the sign of zeros and
 * infinities included), or within 1 ulp where both are finite and nonzero. */
static void check_pow_special(void) {
  static const double v[] = {
      0.0, -0.0, INFINITY, -INFINITY, NAN, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0,
      3.0, -3.0, 0.25, 1.5, -1.5, 0x1p52, 0x1p52 + 1, -0x1p52 - 1, 0x1p53,
      0x1p53 + 2, -0x1p53 - 2, 1e308, -1e308, 0x1p-1074, -0x1p-1074,
      0x1p-1022, 1e-300, 0x1.fffffffffffffp-1, 0x1.0000000000001p0, 710.0,
      -746.0, 1024.0, -1075.0, -1074.5, 0x1p64, 0x1p66, -0x1p66};
  const size_t n = sizeof v / sizeof *v;
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < n; j++) {
      const double x = v[i], y = v[j], got = hk_pow(x, y), want = pow(x, y);
      int ok = (isnan(got) && isnan(want)) ||
               (got == want && signbit(got) == signbit(want));
      if (!ok && isfinite(want) && want != 0 && isfinite(got))
        ok = fabs(got - want) <= fabs(nextafter(want, 0) - want);
      CHECK_MSG(ok, "pow(%a, %a): hk %a, libm %a", x, y, got, want);
    }
}

/* Float sin and cos from 2^28 up (the table's reduction): within 1 ulp
 * of glibc's double sin and cos rounded, for every exponent to 2^127 (and
 * 1e20, where a Cody-Waite reduction alone gave -inf). */
static float ulp1(float w) { /* the larger of w's two neighbours' gaps */
  const float up = fabsf(nextafterf(w, INFINITY) - w);
  const float down = fabsf(nextafterf(w, -INFINITY) - w);
  return up > down ? up : down;
}

/* The larger of w's two neighbours' gaps, for doubles. */
static double ulp1d(double w) {
  const double up = fabs(nextafter(w, INFINITY) - w);
  const double down = fabs(nextafter(w, -INFINITY) - w);
  return up > down ? up : down;
}

/* The references below: glibc's long double sinl and cosl, rounded (its
 * double cos is 8 ulp off at the hard case, and compilers fold constant
 * calls, each its own way), through pointers that no compiler folds. */
static long double (*volatile libm_sinl)(long double) = sinl;
static long double (*volatile libm_cosl)(long double) = cosl;

/* Double sin and cos from 2^28 up (Payne and Hanek's reduction): within
 * 3 ulp of the reference for every exponent to 2^1023, and at the double
 * closest to a multiple of pi/2 (6381956970095103 * 2^797: remainder
 * 4.7e-19, where a 2/pi cut 32 bits short gave cos 2^45 ulp off) and its
 * neighbours. */
static void check_sincos_large64(void) {
  uint64_t seed = 11;
  for (int e = 28; e < 1024; e++)
    for (int k = 0; k < 24; k++) {
      uint64_t r = rng(&seed);
      double x = hk_u2d(((uint64_t)(e + 1023) << 52) |
                        (r & 0x800fffffffffffffull));
      if (k == 0) x = e == 28 ? 0x1.6ac5b262ca1ffp+849 : e == 29 ? 1e22 : x;
      if (k == 1 && e < 40) x = nextafter(0x1.6ac5b262ca1ffp+849, e & 1 ? 0 : INFINITY);
      const double s = hk_sin(x), c = hk_cos(x),
                   ws = (double)libm_sinl(x), wc = (double)libm_cosl(x);
      CHECK_MSG(fabs(s - ws) <= 3 * ulp1d(ws) && fabs(c - wc) <= 3 * ulp1d(wc),
                "x = %a: sin %a (sinl %a), cos %a (cosl %a)", x, s, ws, c, wc);
    }
}

static void check_sincos_large(void) {
  check_sincos_large64();
  for (int e = 27; e < 128; e++)
    for (uint32_t k = 0; k < 64; k++) {
      uint32_t bits = ((uint32_t)(e + 127) << 23) | (k * 131071u % 0x800000u);
      float x = hk_u2f(bits | (k & 1 ? 0x80000000u : 0));
      if (e == 27 && k == 0) x = 1e20f;
      const float s = hk_sinf(x), c = hk_cosf(x);
      const float ws = (float)sin((double)x), wc = (float)cos((double)x);
      CHECK_MSG(fabsf(s - ws) <= ulp1(ws) && fabsf(c - wc) <= ulp1(wc),
                "x = %a: sinf %a (libm %a), cosf %a (libm %a)", x, s, ws, c,
                wc);
    }
}

/* The stdlib's math ops (on the CPU tier inline, built with the kernel
 * flags; on the GPU, nvcc's code in libhk). */
static void check_inline(const on_t *on) {
  static const fn_t ops[] = {{"exp", hk_expf, hk_exp},
                             {"log", hk_logf, hk_log},
                             {"tanh", hk_tanhf, hk_tanh},
                             {"sigmoid", hk_sigmoidf, hk_sigmoid},
                             {"gelu", gelu32, gelu64}};
  for (size_t f = 0; f < sizeof ops / sizeof *ops; f++)
    check_fn(on, &ops[f], "", 0, &g_in, &g_in);
}

/* A context on tier (jit or opt) holding kernels_json, or NULL. */
static hk_context_t *context(hk_tier_t tier) {
  const char *none[] = {NULL};
  hk_options_t o = {0};
  o.plugin_dirs = none;
  o.flags = HK_NO_CACHE;
  o.tier = tier;
  hk_context_t *c = NULL;
  CHECK_INT_EQ(hk_context_create(&c, &o), HK_OK);
  if (!c) return NULL;
  CHECK_MSG(hk_load_string(c, kernels_json, sizeof kernels_json - 1,
                           "math.json") == HK_OK,
            "%s", hk_last_error());
  return c;
}

/* The wider sweep, on the GPU only (the CPU tiers run g_in's inputs; the
 * accuracy over every float is tools/mathcheck.sh's): each float function
 * on 2^24 inputs spread over all 2^32 bit patterns (every 256th, its low 8
 * bits varied), each double function and pow on 2^20 of fill_inputs (any
 * bits, [-40, 40], magnitudes 2^-30 to 2^30). */
static void check_sweep(const on_t *on) {
  const size_t n32 = (size_t)1 << 24, n64 = (size_t)1 << 20;
  const inputs_t bits = {n32, alloc(n32 * sizeof(float)), NULL, NULL, NULL};
  const inputs_t mixed = {n64, alloc(n64 * sizeof(float)),
                          alloc(n64 * sizeof(float)),
                          alloc(n64 * sizeof(double)),
                          alloc(n64 * sizeof(double))};
  for (size_t i = 0; i < n32; i++)
    bits.x32[i] = hk_u2f((uint32_t)(i * 256 + ((i * 97) & 255)));
  fill_inputs(&mixed, 80.0, 7);
  check_math(on, &bits, &mixed, 0);
  free(bits.x32);
  free(mixed.x32);
  free(mixed.y32);
  free(mixed.x64);
  free(mixed.y64);
}

/* test_math --cuda: every kernel of kernels_json (in a tier jit context;
 * the GPU's code is NVRTC's, whatever the tier) and the stdlib's math ops
 * on the GPU, then the sweep. 77 without a device. */
static int check_cuda(void) {
  setvbuf(stdout, NULL, _IOLBF, 0); /* what ran before a crash stays */
  int rc = hk_cuda_init();
  if (rc == HK_EUNSUPPORTED) {
    const char *why = hk_last_error(), *p = strstr(why, "no CUDA device");
    if (p) why = p + strlen("no CUDA device");
    why += strspn(why, ": ");
    CHECK_SKIP("no CUDA device: %.*s", (int)strcspn(why, "\n"), why);
  }
  CHECK_MSG(rc == HK_OK, "hk_cuda_init: %s", hk_last_error());
  hk_cuda_device_info_t di;
  memset(&di, 0, sizeof di);
  if (rc == HK_OK) {
    rc = hk_cuda_device_info(&di);
    CHECK_MSG(rc == HK_OK, "hk_cuda_device_info: %s", hk_last_error());
  }
  if (rc != HK_OK) CHECK_DONE();
  printf("device %d: %s, sm_%d%d, NVRTC %d\n", di.ordinal, di.name, di.major,
         di.minor, di.nvrtc_version);
  hk_context_t *jit = context(HK_TIER_JIT);
  if (jit) {
    const on_t cuda = {jit, "cuda", HK_BACKEND_CUDA};
    /* One NVRTC program holds every kernel of math.json: where it does not
     * compile, one failure says why, not one per kernel. */
    hk_kernel_t *k = NULL;
    if (rc_ok(hk_kernel_find(jit, "m_exp_f32", &k), &cuda, "m_exp_f32",
              "hk_kernel_find") &&
        rc_ok(hk_kernel_prepare(k, HK_BACKEND_CUDA), &cuda, "math.json",
              "hk_kernel_prepare (NVRTC)")) {
      check_tier(&cuda);
      check_sweep(&cuda);
    }
    check_inline(&cuda);
    hk_context_destroy(jit);
  }
  CHECK_DONE();
}

/* The address of name in the jit table t (count entries), or NULL. */
static void *jit_entry(const hk_symbol_t *t, size_t count, const char *name) {
  for (size_t i = 0; i < count; i++)
    if (!strcmp(t[i].name, name)) return t[i].addr;
  return NULL;
}

/* Tier jit's hkmath.h function name (and name "f") in the table for
 * fma against this file's fn32 and fn64 (NULL: the two-argument pow). */
static void check_jit_copy(int fma, const char *name, float (*fn32)(float),
                           double (*fn64)(double)) {
  size_t count;
  const hk_symbol_t *t = hk__jit_symbols_for(fma, &count);
  char n64[32], n32[32];
  snprintf(n64, sizeof n64, "hk_%s", name);
  snprintf(n32, sizeof n32, "hk_%sf", name);
  void *a64 = jit_entry(t, count, n64), *a32 = jit_entry(t, count, n32);
  CHECK_MSG(a64 && a32, "tier jit's table lacks %s or %s", n64, n32);
  if (!a64 || !a32) return;
  enum { M = 65536 + 3 };
  size_t bad = 0;
  const char *first = NULL;
  for (size_t i = 0; i < M; i++) {
    uint32_t u = (uint32_t)(i * 65537u), v = (uint32_t)(i * 40503u + 7u);
    float x, y, got, want;
    memcpy(&x, &u, 4);
    memcpy(&y, &v, 4);
    if (fn32) {
      float (*f)(float);
      *(void **)&f = a32;
      got = f(x), want = fn32(x);
    } else {
      float (*f)(float, float);
      *(void **)&f = a32;
      got = f(x, y), want = hk_powf(x, y);
    }
    if (memcmp(&got, &want, 4) && !bad++) first = n32;
  }
  for (size_t i = 0; i < N; i++) {
    double got, want;
    if (fn64) {
      double (*f)(double);
      *(void **)&f = a64;
      got = f(g_x64[i]), want = fn64(g_x64[i]);
    } else {
      double (*f)(double, double);
      *(void **)&f = a64;
      got = f(g_x64[i], g_y64[i]), want = hk_pow(g_x64[i], g_y64[i]);
    }
    if (memcmp(&got, &want, 8) && !bad++) first = n64;
  }
  CHECK_MSG(bad == 0, "tier jit's %s copy of %s: %zu results differ from "
            "hkmath.h's here", fma ? "FMA" : "any-CPU",
            first ? first : name, bad);
}

static void check_jit_tables(void) {
  int fma = 0;
#if defined(__x86_64__)
  fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (!fma)
    printf("NOTE: no AVX2 and FMA: tier jit's FMA copy of hkmath.h not "
           "run\n");
#endif
  for (int v = 0; v <= fma; v++) {
    for (size_t i = 0; i < sizeof fns / sizeof *fns; i++)
      if (strcmp(fns[i].name, "sincos"))
        check_jit_copy(v, fns[i].name, fns[i].f32, fns[i].f64);
    check_jit_copy(v, "pow", NULL, NULL);
  }
}

int main(int argc, char **argv) {
  const int cuda = argc == 2 && !strcmp(argv[1], "--cuda");
  if (argc > 1 && !cuda) {
    fprintf(stderr, "usage: test_math [--cuda]\n");
    return 2;
  }
  fill_inputs(&g_in, 60.0, 42);
  if (cuda) return check_cuda();
  check_pow_special();
  check_sincos_large();
  check_jit_tables();
  hk_context_t *jit = context(HK_TIER_JIT);
  if (jit) {
    const on_t on = {jit, "tier jit", HK_BACKEND_CPU};
    const on_t inl = {jit, "tier inline", HK_BACKEND_CPU};
    check_tier(&on);
    check_inline(&inl);
    hk_context_destroy(jit);
  }
  hk_context_t *opt = context(HK_TIER_OPT);
  if (opt) {
    hk_kernel_t *k = NULL;
    if (hk_kernel_find(opt, "m_sincos_f32", &k) == HK_OK &&
        hk_kernel_tier(k) == HK_TIER_OPT) {
      const on_t on = {opt, "tier opt", HK_BACKEND_CPU};
      check_tier(&on);
      CHECK_INT_EQ(hk_kernel_find(opt, "m_sincos_f64", &k), HK_OK);
      CHECK(k && hk_kernel_tier(k) == HK_TIER_OPT);
    } else {
      char note[256];
      printf("NOTE: tier opt not checked: %s\n",
             k ? hk_kernel_note(k, note, sizeof note) : hk_last_error());
    }
    hk_context_destroy(opt);
  }
  CHECK_DONE();
}
