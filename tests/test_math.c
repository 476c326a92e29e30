/* test_math.c — common/hkmath.h gives the same bits on every CPU tier.
 *
 * Kernels calling each of its functions (exp, expm1, log, log1p, tanh, erf,
 * sin, cos, pow, rsqrt, sigmoid; float and double; the f names too) run on
 * tier jit (tcc, calling the copy compiled into libhk: core/symbols.c) and
 * tier opt (the system compiler, -march=native: inlined, vectorised), and the stdlib's exp, log, tanh, sigmoid and gelu on tier
 * inline; every result must equal, bit for bit, hkmath.h compiled into this
 * test (with contraction off, as kernels are), on inputs that hit the
 * special values, the range limits, and the tails of vector loops. A kernel
 * calling sin and cos of one argument, which gcc merges into sincosf when
 * they are libm's, must load and run on tier opt. Double pow's special
 * cases match libm's (C99 Annex F). The accuracy itself is
 * checked by tools/mathcheck.c (ctest math_ulp: sampled; tools/mathcheck.sh:
 * every float).
 */
#include "check.h"
#include "hk.h"
#include "hkmath_native.h"

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
    UNARY(sin) UNARY(cos) UNARY(rsqrt) UNARY(sigmoid)
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
    {"sincos", sincosf_ref, sincos_ref}};

static float g_x32[N], g_y32[N];
static double g_x64[N], g_y64[N];

static uint64_t rng(uint64_t *s) { /* splitmix64 */
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Special values first, then a third each of: any bits, [-30, 30], and
 * magnitudes from 2^-30 to 2^30. */
static void make_inputs(void) {
  static const double special[] = {
      0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 1e-40, -1e-40, 1e-300, 5e-324,
      88.72, 88.73, -103.9, -104.0, 709.78, 709.79, -745.1, -746.0, 0.625,
      -0.625, 20.0, 1e30, -1e30, 3.4e38, 1.7e308, 268435455.0, 1.5707963,
      3.14159265358979, 1.0 / 0.0, -1.0 / 0.0, 0.0 / 0.0};
  const size_t ns = sizeof special / sizeof *special;
  uint64_t seed = 42;
  for (size_t i = 0; i < N; i++) {
    uint64_t r = rng(&seed), q = rng(&seed);
    double v, w = ((double)(q >> 11) / 9007199254740992.0 - 0.5) * 8.0;
    if (i < ns)
      v = special[i];
    else if (i % 3 == 0)
      v = hk_u2d(r);
    else if (i % 3 == 1)
      v = ((double)(r >> 11) / 9007199254740992.0 - 0.5) * 60.0;
    else
      v = hk_u2d((r & 0x800fffffffffffffull) |
                 ((uint64_t)(1023 - 30 + (r >> 52) % 60) << 52));
    g_x64[i] = v;
    g_x32[i] = i % 3 == 0 && i >= ns ? hk_u2f((uint32_t)r) : (float)v;
    g_y64[i] = i % 5 == 0 ? (double)(int)w : w; /* pow: integer exponents */
    g_y32[i] = (float)g_y64[i];
  }
}

/* The first element whose bits differ, or -1. */
static long differs(const void *a, const void *b, size_t size) {
  for (size_t i = 0; i < N; i++)
    if (memcmp((const char *)a + i * size, (const char *)b + i * size, size))
      return (long)i;
  return -1;
}

/* Runs kernel name of ctx on x (and y) and compares with want. */
static void run_and_compare(hk_context_t *ctx, const char *name, int f64,
                            int two, const void *want, const char *tier) {
  hk_kernel_t *k = NULL;
  CHECK_MSG(hk_kernel_find(ctx, name, &k) == HK_OK, "%s: %s", name,
            hk_last_error());
  if (!k) return;
  static double out[N];
  void *x = f64 ? (void *)g_x64 : (void *)g_x32;
  void *y = f64 ? (void *)g_y64 : (void *)g_y32;
  void *args2[] = {x, out}, *args3[] = {x, y, out};
  memset(out, 0, sizeof out);
  CHECK_MSG(hk_call(k, N, two ? args3 : args2) == HK_OK, "%s: %s", name,
            hk_last_error());
  long i = differs(out, want, f64 ? 8 : 4);
  if (f64)
    CHECK_MSG(i < 0, "%s on tier %s: element %ld (x = %a): %a, hkmath.h %a",
              name, tier, i, i < 0 ? 0 : g_x64[i], i < 0 ? 0 : out[i],
              i < 0 ? 0 : ((const double *)want)[i]);
  else
    CHECK_MSG(i < 0, "%s on tier %s: element %ld (x = %a): %a, hkmath.h %a",
              name, tier, i, i < 0 ? 0 : (double)g_x32[i],
              i < 0 ? 0 : (double)((float *)out)[i],
              i < 0 ? 0 : (double)((const float *)want)[i]);
}

/* fn's kernels NAME_f32 and NAME_f64 (and mf_NAME, the f version, where
 * fnames) against hkmath.h; prefix "m_" or "" (the stdlib's). */
static void check_fn(hk_context_t *ctx, const fn_t *fn, const char *prefix,
                     int fnames, const char *tier) {
  static float w32[N];
  static double w64[N];
  char name[64];
  for (size_t i = 0; i < N; i++) {
    w32[i] = fn->f32(g_x32[i]);
    w64[i] = fn->f64(g_x64[i]);
  }
  snprintf(name, sizeof name, "%s%s_f32", prefix, fn->name);
  run_and_compare(ctx, name, 0, 0, w32, tier);
  snprintf(name, sizeof name, "%s%s_f64", prefix, fn->name);
  run_and_compare(ctx, name, 1, 0, w64, tier);
  if (fnames) {
    snprintf(name, sizeof name, "mf_%s", fn->name);
    run_and_compare(ctx, name, 0, 0, w32, tier);
  }
}

static float where32(float x) {
  return (x > 0 ? x + x : x - 1.0f) + (x == 0 ? 5.0f : 0.0f);
}
static double where64(double x) {
  return (x > 0 ? x + x : x - 1.0) + (x == 0 ? 5.0 : 0.0);
}

/* where on integers (i32, i64, u8: the result has the type of a + b,
 * converted to out's) and a parameter named where. */
static void check_where(hk_context_t *ctx, const char *tier) {
  static const struct {
    const char *name;
    size_t es;
  } it[] = {{"m_wherei_i32", 4}, {"m_wherei_i64", 8}, {"m_wherei_u8", 1}};
  for (size_t t = 0; t < sizeof it / sizeof *it; t++) {
    hk_kernel_t *k = NULL;
    CHECK_MSG(hk_kernel_find(ctx, it[t].name, &k) == HK_OK, "%s: %s",
              it[t].name, hk_last_error());
    if (!k) continue;
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
    CHECK_MSG(hk_call(k, N, args) == HK_OK, "%s: %s", it[t].name,
              hk_last_error());
    long bad = -1;
    for (size_t i = 0; i < N && bad < 0; i++) {
      int64_t got = it[t].es == 4   ? ((int32_t *)(void *)out)[i]
                    : it[t].es == 8 ? ((int64_t *)(void *)out)[i]
                                    : out[i];
      if (got != want[i]) bad = (long)i;
    }
    CHECK_MSG(bad < 0, "%s on tier %s: element %ld wrong", it[t].name, tier,
              bad);
  }
  static float w32[N];
  for (size_t i = 0; i < N; i++) w32[i] = g_x32[i] * g_y32[i];
  run_and_compare(ctx, "m_wherep", 0, 1, w32, tier);
}

/* Every function of kernels_json on the context's tier. */
static void check_tier(hk_context_t *ctx, const char *tier) {
  static const fn_t where_fn = {"where", where32, where64};
  check_fn(ctx, &where_fn, "m_", 0, tier);
  check_where(ctx, tier);
  for (size_t f = 0; f < sizeof fns / sizeof *fns; f++)
    check_fn(ctx, &fns[f], "m_", strcmp(fns[f].name, "sincos") != 0, tier);
  static float w32[N];
  static double w64[N];
  for (size_t i = 0; i < N; i++) {
    w32[i] = hk_powf(g_x32[i], g_y32[i]);
    w64[i] = hk_pow(g_x64[i], g_y64[i]);
  }
  run_and_compare(ctx, "m_pow_f32", 0, 1, w32, tier);
  run_and_compare(ctx, "m_pow_f64", 1, 1, w64, tier);
}

/* the stdlib's gelu: 0.5 x (1 + tanh u) as x / (1 + e^(-2u)) */
static float gelu32(float x) {
  return x / (1.0f + hk_expf(-2.0f * 0.79788456080286535588f *
                             (x + 0.044715f * x * x * x)));
}
static double gelu64(double x) {
  return x / (1.0 + hk_exp(-2.0 * 0.79788456080286535588 *
                           (x + 0.044715 * x * x * x)));
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

static void check_sincos_large(void) {
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

/* The stdlib's math ops (tier inline, built with the kernel flags). */
static void check_inline(hk_context_t *ctx) {
  static const fn_t ops[] = {{"exp", hk_expf, hk_exp},
                             {"log", hk_logf, hk_log},
                             {"tanh", hk_tanhf, hk_tanh},
                             {"sigmoid", hk_sigmoidf, hk_sigmoid},
                             {"gelu", gelu32, gelu64}};
  for (size_t f = 0; f < sizeof ops / sizeof *ops; f++)
    check_fn(ctx, &ops[f], "", 0, "inline");
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

int main(void) {
  make_inputs();
  check_pow_special();
  check_sincos_large();
  hk_context_t *jit = context(HK_TIER_JIT);
  if (jit) {
    check_tier(jit, "jit");
    check_inline(jit);
    hk_context_destroy(jit);
  }
  hk_context_t *opt = context(HK_TIER_OPT);
  if (opt) {
    hk_kernel_t *k = NULL;
    if (hk_kernel_find(opt, "m_sincos_f32", &k) == HK_OK &&
        hk_kernel_tier(k) == HK_TIER_OPT) {
      check_tier(opt, "opt");
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
