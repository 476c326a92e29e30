/* test_reduce.c — reductions beyond one value of the out type
 * (codegen/reduce.c, the reduction emitters, stdlib_kernels/reductions.json):
 * an accumulator type other than the result's ("acc": "i64"), struct
 * accumulators with several results ("acc": {...}), and inout results
 * accumulated into.
 *
 *  1. every new stdlib reduction (argmax, argmin, var, logsumexp, minmax,
 *     their f16 and bf16 instances too,
 *     integer sum and mean) and the forms of a test file run inline (the
 *     stdlib), on tier jit, on tier opt and (the forms) as a prebuilt
 *     plugin (hk build) with 1 and 2 threads: the same bits everywhere, at sizes from 0 to
 *     2^20 + 5 (blocks and the thread pool), and each against a plain C
 *     loop: argmax/argmin with ties and NaNs (NumPy's answers), var against
 *     a two-pass reference, logsumexp against a long double one with
 *     infinities and NaNs, integer sums past the input type's range, and
 *     an inout result called twice;
 *  2. the typed stdlib functions give the registry's bits;
 *  3. bad kernel files: located errors for each rule of the new fields,
 *     and a compile error in struct statements located in the file.
 * The temp tree and the helpers: tests/registry_fixture.h.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "hk.h"
#include "kernel.h"
#include "registry_fixture.h"

/* ---- The kernels ---------------------------------------------------------- */

/* The forms the stdlib does not show, with scalars everywhere. */
static const char forms_json[] =
    "{\"schema_version\": 1, \"kernels\": [\n"
    " {\"name\": \"r_acc\", \"kind\": \"reduction\",\n"
    "  \"params\": [{\"name\": \"x\", \"type\": \"i8\", \"role\": \"in\"},\n"
    "             {\"name\": \"out\", \"type\": \"i32\", \"role\": \"out\"}],\n"
    "  \"acc\": \"i64\", \"map\": \"x\", \"combine\": \"a + b\",\n"
    "  \"identity\": \"0\", \"finalize\": \"acc / 3\"},\n"
    " {\"name\": \"r_meanvar\", \"kind\": \"reduction\",\n"
    "  \"types\": {\"T\": [\"f32\", \"f64\"]},\n"
    "  \"params\": [{\"name\": \"x\", \"type\": \"T\", \"role\": \"in\"},\n"
    "             {\"name\": \"ddof\", \"type\": \"i64\", \"role\": \"scalar\"},\n"
    "             {\"name\": \"mean\", \"type\": \"T\", \"role\": \"out\"},\n"
    "             {\"name\": \"var\", \"type\": \"T\", \"role\": \"out\"}],\n"
    "  \"acc\": {\"c\": \"f64\", \"m\": \"f64\", \"s\": \"f64\"},\n"
    "  \"identity\": {\"c\": \"0\", \"m\": \"0\", \"s\": \"0\"},\n"
    "  \"map\": {\"c\": \"1\", \"m\": \"x\", \"s\": \"0\"},\n"
    "  \"combine\": [\"if (b.c > 0) {\", \"  if (a.c == 0) {\", \"    a = b;\",\n"
    "    \"  } else {\", \"    const double c = a.c + b.c, d = b.m - a.m;\",\n"
    "    \"    a.m = a.m + d * (b.c / c);\",\n"
    "    \"    a.s = a.s + b.s + d * d * a.c * (b.c / c);\", \"    a.c = c;\",\n"
    "    \"  }\", \"}\"],\n"
    "  \"finalize\": [\"mean = (T)acc.m;\",\n"
    "    \"var = (T)(acc.s / (acc.c - (double)ddof));\"]},\n"
    " {\"name\": \"r_sumsq_into\", \"kind\": \"reduction\",\n"
    "  \"params\": [{\"name\": \"x\", \"type\": \"f64\", \"role\": \"in\"},\n"
    "             {\"name\": \"ss\", \"type\": \"f64\", \"role\": \"inout\"},\n"
    "             {\"name\": \"cnt\", \"type\": \"i64\", \"role\": \"out\"}],\n"
    "  \"acc\": {\"c\": \"i64\", \"s\": \"f64\"},\n"
    "  \"identity\": {\"c\": \"0\", \"s\": \"0\"},\n"
    "  \"map\": {\"c\": \"x > 0\", \"s\": \"x * x\"},\n"
    "  \"combine\": \"a.c = a.c + b.c; a.s = a.s + b.s;\",\n"
    "  \"finalize\": \"ss = ss + acc.s; cnt = acc.c;\"},\n"
    " {\"name\": \"r_scaled\", \"kind\": \"reduction\",\n"
    "  \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},\n"
    "             {\"name\": \"s\", \"type\": \"f32\", \"role\": \"scalar\"},\n"
    "             {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\"}],\n"
    "  \"acc\": {\"v\": \"f32\"},\n"
    "  \"identity\": {\"v\": \"s - s\"}, \"map\": {\"v\": \"x * s\"},\n"
    "  \"combine\": \"a.v = a.v + b.v;\", \"finalize\": \"out = acc.v + s;\"},\n"
    /* finalizes over short rows: on a vector of rows' results at once
     * (emit_c.c, vec_finalize) where each operation is the scalar one
     * lane by lane (r_fin_lin), not where the scalar form computes in
     * double (r_fin_tenth: 0.1, not a float) or casts acc (r_fin_cast) */
    " {\"name\": \"r_fin_lin\", \"kind\": \"reduction\",\n"
    "  \"types\": {\"T\": [\"f32\"]},\n"
    "  \"params\": [{\"name\": \"x\", \"type\": \"T\", \"role\": \"in\"},\n"
    "             {\"name\": \"out\", \"type\": \"T\", \"role\": \"out\"}],\n"
    "  \"map\": \"x\", \"combine\": \"a + b\", \"identity\": \"0\",\n"
    "  \"finalize\": \"(acc * 0.7f - 1e-3f) / (T)n + 2 - -acc / (float)n\"},\n"
    " {\"name\": \"r_fin_tenth\", \"kind\": \"reduction\",\n"
    "  \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},\n"
    "             {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\"}],\n"
    "  \"map\": \"x\", \"combine\": \"a + b\", \"identity\": \"0\",\n"
    "  \"finalize\": \"acc * 0.1\"},\n"
    " {\"name\": \"r_fin_cast\", \"kind\": \"reduction\",\n"
    "  \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},\n"
    "             {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\"}],\n"
    "  \"map\": \"x\", \"combine\": \"a + b\", \"identity\": \"0\",\n"
    "  \"finalize\": \"(float)acc / (float)n\"}\n"
    "]}\n";

/* Contexts that run the test files: tier jit, tier opt, prebuilt plugins
 * (the last two need cc). The stdlib runs inline in any of them. */
enum { C_JIT, C_OPT, C_SO, C_COUNT };
static hk_context_t *g_ctx[C_COUNT];
static const char *const ctx_name[C_COUNT] = {"jit", "opt", "so"};

/* The last is 200,003 under HK_TEST_SMALL (tools/test.sh's sanitizer
 * suites): still threaded (past hk__par_min) over several blocks, a fifth
 * of the elements (the float and integer parts were 22 of test_reduce's
 * 34 s under TSan). */
static size_t red_sizes[] = {0, 1, 2, 7, 17, 1000, 32769, 100003, NMAX};

/* stdlib_kernels/reductions.json with every kernel renamed t_NAME (so that
 * it loads beside the stdlib). malloc'ed. */
static char *renamed_stdlib(void) {
  char path[4200];
  snprintf(path, sizeof path, "%s/stdlib_kernels/reductions.json", g_src);
  size_t n;
  char *text = check_read_file(path, &n);
  if (!text) return NULL;
  /* a kernel's name starts its line; a parameter's follows a '{' */
  const char *key = "\n      \"name\": \"";
  size_t kl = strlen(key), count = 0;
  for (const char *p = text; (p = strstr(p, key)); p += kl) count++;
  char *out = malloc(n + 2 * count + 1), *o = out;
  const char *p = text, *q;
  while ((q = strstr(p, key))) {
    memcpy(o, p, (size_t)(q - p) + kl);
    o += (q - p) + kl;
    *o++ = 't';
    *o++ = '_';
    p = q + kl;
  }
  strcpy(o, p);
  free(text);
  CHECK_MSG(count >= 10, "only %zu kernels renamed", count);
  return out;
}

/* Writes the test files, builds the prebuilt plugins and makes the
 * contexts. */
static void make_contexts(void) {
  check_make_dir(P("k"));
  write_text(P("k/forms.json"), forms_json);
  char *std = renamed_stdlib();
  if (std) write_text(P("k/t_reductions.json"), std);
  free(std);
  char src[4200];
  snprintf(src, sizeof src, "%s/plugins/bias_grad.json", g_src);
  size_t n;
  char *bias = check_read_file(src, &n);
  if (bias) write_text(P("k/bias_grad.json"), bias);
  free(bias);
  g_ctx[C_JIT] = mkctx_logged(HK_TIER_JIT, P("k"), P("cache_jit"));
  /* tools/test.sh's ThreadSanitizer suite: the compiled tiers' objects are
   * not instrumented, and the other suites check their bits */
  if (!g_have_cc || getenv("HK_TEST_JIT_ONLY")) return;
  g_ctx[C_OPT] = mkctx_logged(HK_TIER_OPT, P("k"), P("cache_opt"));
  check_make_dir(P("so"));
  /* the forms and bias_grad as users build them. Not the stdlib's
   * reductions: hk build --native is the opt tier's compile again (the
   * same C, the same flags: 16 s here); the so tier's own part, loading
   * and entry points, is the same for every kernel */
  const char *files[] = {"forms", "bias_grad"};
  for (size_t i = 0; i < COUNT(files); i++) {
    PATH(in, "");
    PATH(out, "");
    snprintf(in, sizeof in, "%s/k/%s.json", g_root, files[i]);
    snprintf(out, sizeof out, "%s/so/%s.so", g_root, files[i]);
    char *argv[] = {g_hk, "build", in, "-o", out, NULL};
    const char *log = P("build.log");
    int rc = run_logged(argv, log);
    CHECK_MSG(rc == 0, "hk build %s: exit %d", files[i], rc);
    if (rc) print_log(log);
  }
  g_ctx[C_SO] = mkctx_logged(HK_TIER_AUTO, P("so"), P("cache_so"));
}

/* ---- Running everywhere ------------------------------------------------------ */

/* A result buffer of a call: its bytes, and for an inout its value before
 * the call (else NULL). */
typedef struct res {
  void *p;
  size_t size;
  const void *init;
} res_t;

#define MAXRES 3

/* Runs kernel name (and t_name in the test contexts when std, else name in
 * them) over n elements with args (results in res), on every context and
 * with 1 and 2 threads. Every run must give the first run's bits, which
 * are left in res. Returns the number of runs. */
static int run_all(const char *name, int std, size_t n, void **args,
                   res_t *res, int nres) {
  unsigned char first[MAXRES][8];
  int runs = 0;
  for (int c = -1; c < C_COUNT; c++) {
    if (c < 0 && !std) continue;
    hk_context_t *ctx = c < 0 ? g_ctx[C_JIT] : g_ctx[c];
    if (!ctx || (c == C_SO && std)) continue; /* not built: make_contexts */
    char nm[160];
    snprintf(nm, sizeof nm, "%s%s", c >= 0 && std ? "t_" : "", name);
    hk_kernel_t *k = find(ctx, nm);
    if (!k) continue;
    hk_tier_t want = c < 0 ? HK_TIER_INLINE
                     : c == C_JIT ? HK_TIER_JIT
                     : c == C_OPT ? HK_TIER_OPT
                                  : HK_TIER_SO;
    CHECK_MSG(hk_kernel_tier(k) == want, "%s: tier %s, expected %s", nm,
              hk_tier_name(hk_kernel_tier(k)), hk_tier_name(want));
    for (int th = 1; th <= 2; th++) {
      if (th == 2 && n <= 32768) break; /* one block: no threads */
      hk_set_threads(th);
      for (int r = 0; r < nres; r++) {
        if (res[r].init)
          memcpy(res[r].p, res[r].init, res[r].size);
        else
          memset(res[r].p, 0xA5, res[r].size);
      }
      int rc = hk_call(k, n, args);
      CHECK_MSG(rc == HK_OK, "%s: hk_call: %s", nm, hk_last_error());
      for (int r = 0; r < nres; r++) {
        if (!runs) {
          memcpy(first[r], res[r].p, res[r].size);
          continue;
        }
        CHECK_MSG(!memcmp(first[r], res[r].p, res[r].size),
                  "%s (%s, %d threads, n %zu): result %d differs from the "
                  "first run's",
                  nm, c < 0 ? "stdlib" : ctx_name[c], th, n, r);
      }
      runs++;
    }
  }
  hk_set_threads(0);
  for (int r = 0; r < nres; r++) memcpy(res[r].p, first[r], res[r].size);
  return runs;
}

/* ---- Data ------------------------------------------------------------------------- */

static uint64_t g_seed = 0x9E3779B97F4A7C15ull;

/* Patterns of float inputs. */
typedef enum pat {
  PAT_TIES,    /* small integers: many equal values */
  PAT_TIES_NAN,/* the same, with NaNs at two places */
  PAT_UNIT,    /* uniform in [-1, 1) */
  PAT_SHIFTED, /* 1000 + uniform [-1, 1): cancellation for var */
  PAT_LAST,    /* increasing: the extreme is the last element */
  PAT_NEGINF,  /* every element -inf */
  PAT_POSINF,  /* unit, one +inf */
  PAT_COUNT
} pat_t;

static double gen(pat_t p, size_t i, size_t n, size_t nan1, size_t nan2) {
  double u = (double)(rnd(&g_seed) >> 11) * (1.0 / 9007199254740992.0);
  switch (p) {
    case PAT_TIES: return (double)(rnd(&g_seed) % 9) - 4;
    case PAT_TIES_NAN:
      if (i == nan1 || i == nan2) return NAN;
      return (double)(rnd(&g_seed) % 9) - 4;
    case PAT_UNIT: return 2 * u - 1;
    case PAT_SHIFTED: return 1000 + (2 * u - 1);
    case PAT_LAST: return (double)i / (double)(n ? n : 1);
    case PAT_NEGINF: return -INFINITY;
    case PAT_POSINF: return i == nan1 ? INFINITY : 2 * u - 1;
    default: return 0;
  }
}

static float *g_f32;
static double *g_f64;

static void fill(pat_t p, size_t n) {
  size_t nan1 = n ? (size_t)(rnd(&g_seed) % n) : 0;
  size_t nan2 = n ? (size_t)(rnd(&g_seed) % n) : 0;
  for (size_t i = 0; i < n; i++) {
    double v = (float)gen(p, i, n, nan1, nan2); /* the f32 value for both */
    g_f64[i] = v;
    g_f32[i] = (float)v;
  }
}

/* ---- References -------------------------------------------------------------------- */

/* NumPy's argmax/argmin: the first NaN if any, else the first extreme;
 * -1 for n = 0 (NumPy refuses). */
static int64_t ref_arg(const double *x, size_t n, int max) {
  int64_t best = -1;
  for (size_t i = 0; i < n; i++) {
    if (x[i] != x[i]) return (int64_t)i;
    if (best < 0 || (max ? x[i] > x[best] : x[i] < x[best])) best = (int64_t)i;
  }
  return best;
}

static double ref_var(const double *x, size_t n) {
  if (!n) return NAN;
  long double s = 0, q = 0;
  for (size_t i = 0; i < n; i++) s += x[i];
  long double m = s / (long double)n;
  for (size_t i = 0; i < n; i++) q += (x[i] - m) * (x[i] - m);
  return (double)(q / (long double)n);
}

static double ref_lse(const double *x, size_t n) {
  double m = -INFINITY;
  for (size_t i = 0; i < n; i++) {
    if (x[i] != x[i]) return NAN;
    if (x[i] > m) m = x[i];
  }
  if (m == -INFINITY || m == INFINITY) return m;
  long double s = 0;
  for (size_t i = 0; i < n; i++) s += expl((long double)x[i] - m);
  return (double)(m + logl(s));
}

/* ---- 1. The stdlib's new float reductions ------------------------------------------------ */

static void check_float_kernels(void) {
  static const char *const tn[] = {"f32", "f64"};
  int64_t i1;
  double d1, d2;
  float f1, f2;
  for (size_t si = 0; si < COUNT(red_sizes); si++) {
    size_t n = red_sizes[si];
    for (int p = 0; p < PAT_COUNT; p++) {
      if (n > 100003 && p != PAT_TIES_NAN && p != PAT_UNIT) continue;
      fill((pat_t)p, n);
      for (int t = 0; t < 2; t++) {
        void *x = t ? (void *)g_f64 : (void *)g_f32;
        size_t sz = t ? 8 : 4;
        void *r1 = t ? (void *)&d1 : (void *)&f1;
        void *r2 = t ? (void *)&d2 : (void *)&f2;
        char nm[64];
        /* argmax, argmin */
        for (int mx = 0; mx < 2; mx++) {
          snprintf(nm, sizeof nm, "%s_%s", mx ? "argmax" : "argmin", tn[t]);
          void *args[] = {x, &i1};
          res_t res[] = {{&i1, 8, NULL}};
          run_all(nm, 1, n, args, res, 1);
          int64_t want = ref_arg(g_f64, n, mx);
          CHECK_MSG(i1 == want, "%s n %zu pattern %d: %lld, expected %lld", nm,
                    n, p, (long long)i1, (long long)want);
        }
        /* var */
        snprintf(nm, sizeof nm, "var_%s", tn[t]);
        {
          void *args[] = {x, r1};
          res_t res[] = {{r1, sz, NULL}};
          run_all(nm, 1, n, args, res, 1);
          double got = t ? d1 : f1, want = ref_var(g_f64, n);
          CHECK_MSG(check_close(got, want, t ? 1e-12 : 2e-6, t ? 1e-15 : 1e-7),
                    "%s n %zu pattern %d: %.17g, expected %.17g", nm, n, p,
                    got, want);
        }
        /* logsumexp */
        snprintf(nm, sizeof nm, "logsumexp_%s", tn[t]);
        {
          void *args[] = {x, r1};
          res_t res[] = {{r1, sz, NULL}};
          run_all(nm, 1, n, args, res, 1);
          double got = t ? d1 : f1, want = ref_lse(g_f64, n);
          CHECK_MSG(check_close(got, want, t ? 1e-13 : 1e-5, t ? 1e-13 : 1e-5),
                    "%s n %zu pattern %d: %.17g, expected %.17g", nm, n, p,
                    got, want);
        }
        /* min, max and sum: their lane trees are vectors where gcc or
         * clang compiles them (emit_c.c), scalar on tcc: the same bits */
        for (int q = 0; q < 3; q++) {
          static const char *const base[] = {"min", "max", "sum"};
          snprintf(nm, sizeof nm, "%s_%s", base[q], tn[t]);
          void *args[] = {x, r1};
          res_t res[] = {{r1, sz, NULL}};
          run_all(nm, 1, n, args, res, 1);
          long double s = 0;
          double ext = q == 0 ? INFINITY : -INFINITY;
          int nan = 0;
          for (size_t i = 0; i < n; i++) {
            double v = g_f64[i];
            nan |= v != v;
            s += v;
            if (q == 0 ? v < ext : v > ext) ext = v;
          }
          if (nan) ext = NAN;
          double got = t ? d1 : f1,
                 want = q < 2 ? ext : (nan ? NAN : (double)s);
          CHECK_MSG(q < 2 ? check_close(got, want, 0, 0)
                          : check_close(got, want, t ? 1e-12 : 1e-5,
                                        t ? 1e-12 : 1e-4),
                    "%s n %zu pattern %d: %.17g, expected %.17g", nm, n, p,
                    got, want);
        }
        /* minmax: two outs in one pass, as min and max */
        snprintf(nm, sizeof nm, "minmax_%s", tn[t]);
        {
          void *args[] = {x, r1, r2};
          res_t res[] = {{r1, sz, NULL}, {r2, sz, NULL}};
          run_all(nm, 1, n, args, res, 2);
          double lo = INFINITY, hi = -INFINITY;
          int nan = 0;
          for (size_t i = 0; i < n; i++) {
            nan |= g_f64[i] != g_f64[i];
            if (g_f64[i] < lo) lo = g_f64[i];
            if (g_f64[i] > hi) hi = g_f64[i];
          }
          if (nan) lo = hi = NAN;
          double glo = t ? d1 : f1, ghi = t ? d2 : f2;
          CHECK_MSG(check_close(glo, lo, 0, 0) && check_close(ghi, hi, 0, 0),
                    "%s n %zu pattern %d: %g %g, expected %g %g", nm, n, p, glo,
                    ghi, lo, hi);
        }
      }
    }
  }
}

/* The f16 and bf16 instances of argmax, argmin, var, logsumexp and
 * minmax on each pattern's values rounded to 16 bits: the answers of the
 * references on those values (widened exactly), rounded once to 16 bits
 * for var and logsumexp (within an ulp of it: they compute in f64 and
 * f32), exact for the indices, the minimum and the maximum; the same bits
 * on every tier and thread count (run_all). */
static void check_float16_kernels(void) {
  uint16_t *h = malloc(NMAX * sizeof *h);
  double *w = malloc(NMAX * sizeof *w);
  CHECK(h && w);
  for (size_t si = 0; h && w && si < COUNT(red_sizes); si++) {
    size_t n = red_sizes[si];
    for (int p = 0; p < PAT_COUNT; p++) {
      if (n > 1000 && p != PAT_TIES_NAN && p != PAT_SHIFTED) continue;
      fill((pat_t)p, n);
      for (int bf = 0; bf < 2; bf++) {
        const char *tn = bf ? "bf16" : "f16";
        double (*to)(uint16_t) = bf ? hk_bf16_to_double : hk_f16_to_double;
        uint16_t (*from)(double) =
            bf ? hk_bf16_from_double : hk_f16_from_double;
        const double ulp = bf ? 0x1p-7 : 0x1p-10;
        for (size_t i = 0; i < n; i++) w[i] = to(h[i] = from(g_f64[i]));
        char nm[64];
        int64_t i1;
        uint16_t r1, r2;
        for (int mx = 0; mx < 2; mx++) {
          snprintf(nm, sizeof nm, "%s_%s", mx ? "argmax" : "argmin", tn);
          void *args[] = {h, &i1};
          res_t res[] = {{&i1, 8, NULL}};
          run_all(nm, 1, n, args, res, 1);
          int64_t want = ref_arg(w, n, mx);
          CHECK_MSG(i1 == want, "%s n %zu pattern %d: %lld, expected %lld", nm,
                    n, p, (long long)i1, (long long)want);
        }
        for (int q = 0; q < 2; q++) { /* var, logsumexp */
          snprintf(nm, sizeof nm, "%s_%s", q ? "logsumexp" : "var", tn);
          void *args[] = {h, &r1};
          res_t res[] = {{&r1, 2, NULL}};
          run_all(nm, 1, n, args, res, 1);
          double got = to(r1), want = to(from(q ? ref_lse(w, n) : ref_var(w, n)));
          CHECK_MSG(check_close(got, want, ulp, 1e-7),
                    "%s n %zu pattern %d: %.9g, expected %.9g", nm, n, p, got,
                    want);
        }
        snprintf(nm, sizeof nm, "minmax_%s", tn);
        void *args[] = {h, &r1, &r2};
        res_t res[] = {{&r1, 2, NULL}, {&r2, 2, NULL}};
        run_all(nm, 1, n, args, res, 2);
        double lo = INFINITY, hi = -INFINITY;
        int nan = 0;
        for (size_t i = 0; i < n; i++) {
          nan |= w[i] != w[i];
          if (w[i] < lo) lo = w[i];
          if (w[i] > hi) hi = w[i];
        }
        if (nan) lo = hi = NAN;
        CHECK_MSG(check_close(to(r1), lo, 0, 0) && check_close(to(r2), hi, 0, 0),
                  "%s n %zu pattern %d: %g %g, expected %g %g", nm, n, p,
                  to(r1), to(r2), lo, hi);
      }
    }
  }
  free(h);
  free(w);
}

/* argmax/argmin over signed zeros: -0 and +0 are equal (the first wins),
 * as are the lanes of the vector loop (codegen/emit_argsel.c) that hold
 * them; with and without a NaN, at lengths that leave a tail. */
static void check_arg_zeros(void) {
  static const size_t ns[] = {77, 1000};
  static const double vals[] = {-0.0, 0.0, -0.0, 0.0, -1.0, -INFINITY};
  for (size_t si = 0; si < COUNT(ns); si++) {
    size_t n = ns[si];
    for (int nan = 0; nan < 2; nan++) {
      for (size_t i = 0; i < n; i++) g_f64[i] = vals[rnd(&g_seed) % 6];
      if (nan) g_f64[n / 2 + (size_t)(rnd(&g_seed) % (n / 2))] = NAN;
      for (size_t i = 0; i < n; i++) g_f32[i] = (float)g_f64[i];
      for (int t = 0; t < 2; t++)
        for (int mx = 0; mx < 2; mx++) {
          char nm[32];
          snprintf(nm, sizeof nm, "%s_%s", mx ? "argmax" : "argmin",
                   t ? "f64" : "f32");
          int64_t got;
          void *args[] = {t ? (void *)g_f64 : (void *)g_f32, &got};
          res_t res[] = {{&got, 8, NULL}};
          run_all(nm, 1, n, args, res, 1);
          int64_t want = ref_arg(g_f64, n, mx);
          CHECK_MSG(got == want, "%s over signed zeros, n %zu, NaN %d: %lld, "
                    "expected %lld", nm, n, nan, (long long)got,
                    (long long)want);
        }
    }
  }
}

/* The typed functions give the registry's bits (through hk__par_reduce
 * above HK_REDUCE_BLOCK). */
static void check_typed(void) {
  size_t n = NMAX;
  fill(PAT_TIES_NAN, n);
  int64_t a, b;
  void *args[] = {g_f32, &b};
  hk_argmax_f32(g_f32, &a, n);
  res_t r1[] = {{&b, 8, NULL}};
  run_all("argmax_f32", 1, n, args, r1, 1);
  CHECK_INT_EQ(a, b);
  fill(PAT_UNIT, n);
  double v, w, lo, hi, lo2, hi2;
  hk_var_f64(g_f64, &v, n);
  void *args2[] = {g_f64, &w};
  res_t r2[] = {{&w, 8, NULL}};
  run_all("var_f64", 1, n, args2, r2, 1);
  CHECK(!memcmp(&v, &w, 8));
  hk_minmax_f64(g_f64, &lo, &hi, n);
  void *args3[] = {g_f64, &lo2, &hi2};
  res_t r3[] = {{&lo2, 8, NULL}, {&hi2, 8, NULL}};
  run_all("minmax_f64", 1, n, args3, r3, 2);
  CHECK(!memcmp(&lo, &lo2, 8) && !memcmp(&hi, &hi2, 8));
  float l, l2;
  hk_logsumexp_f32(g_f32, &l, n);
  void *args4[] = {g_f32, &l2};
  res_t r4[] = {{&l2, 4, NULL}};
  run_all("logsumexp_f32", 1, n, args4, r4, 1);
  CHECK(!memcmp(&l, &l2, 4));
  int8_t *x8 = (int8_t *)g_f32;
  for (size_t i = 0; i < n; i++) x8[i] = 127;
  int64_t s8, s8b;
  hk_sum_i8(x8, &s8, n);
  void *args5[] = {x8, &s8b};
  res_t r5[] = {{&s8b, 8, NULL}};
  run_all("sum_i8", 1, n, args5, r5, 1);
  CHECK_INT_EQ(s8, 127 * (int64_t)n);
  CHECK_INT_EQ(s8b, s8);
}

/* ---- 1. The stdlib's integer reductions ------------------------------------------------- */

/* Element i of an integer buffer of type t, as an int64 (u64 as bits). */
static int64_t int_at(const void *x, hk_dtype_t t, size_t i) {
  switch (t) {
    case HK_I8: return ((const int8_t *)x)[i];
    case HK_I16: return ((const int16_t *)x)[i];
    case HK_I32: return ((const int32_t *)x)[i];
    case HK_I64: return ((const int64_t *)x)[i];
    case HK_U8: return ((const uint8_t *)x)[i];
    case HK_U16: return ((const uint16_t *)x)[i];
    case HK_U32: return ((const uint32_t *)x)[i];
    default: return (int64_t)((const uint64_t *)x)[i];
  }
}

static int is_unsigned(hk_dtype_t t) {
  return t == HK_U8 || t == HK_U16 || t == HK_U32 || t == HK_U64;
}

static void check_int_kernels(void) {
  static const hk_dtype_t types[] = {HK_I8, HK_I16, HK_I32, HK_I64,
                                     HK_U8, HK_U16, HK_U32, HK_U64};
  void *x = g_f64; /* NMAX doubles: room for NMAX of any integer type */
  for (size_t ti = 0; ti < COUNT(types); ti++) {
    hk_dtype_t t = types[ti];
    size_t es = hk_dtype_size(t);
    for (size_t si = 0; si < COUNT(red_sizes); si++) {
      size_t n = red_sizes[si];
      for (int mode = 0; mode < 4; mode++) {
        if (mode >= 2 && n > 100003) continue;
        /* 0: the largest value everywhere (sums past the type's range);
         * 1: random bits; 2: few values (ties); 3: 5 everywhere but one 9
         * and one 1 near the end (the narrow types' argmax scans to them,
         * emit_argsel.c) */
        const size_t near = n > 2 ? n - 1 - rnd(&g_seed) % (n < 300 ? n - 1 : 300)
                                  : 0;
        for (size_t i = 0; i < n; i++) {
          uint64_t r = rnd(&g_seed);
          if (mode == 0) /* the type's largest value */
            r = is_unsigned(t) ? ~(uint64_t)0
                : es == 8      ? ~(uint64_t)0 >> 1
                               : ((uint64_t)1 << (8 * es - 1)) - 1;
          else if (mode == 2)
            r = r % 5;
          else if (mode == 3)
            r = i == near ? 9 : i + 1 == near ? 1 : 5;
          memcpy((char *)x + i * es, &r, es); /* little-endian: low bytes */
        }
        char nm[64];
        int64_t got;
        /* sum: exact in 64 bits, wrapping as NumPy's does (mode 3 is
         * argmax's and argmin's) */
        snprintf(nm, sizeof nm, "sum_%s", hk_dtype_name(t));
        uint64_t want = 0;
        for (size_t i = 0; i < n; i++) want += (uint64_t)int_at(x, t, i);
        if (mode != 3) {
          void *args[] = {x, &got};
          res_t res[] = {{&got, 8, NULL}};
          run_all(nm, 1, n, args, res, 1);
          CHECK_MSG((uint64_t)got == want, "%s n %zu mode %d: %llu, expected "
                    "%llu", nm, n, mode, (unsigned long long)got,
                    (unsigned long long)want);
        }
        /* mean of the narrow types: the exact i64 sum over n, in f64 */
        if (es < 8 && mode != 3) {
          snprintf(nm, sizeof nm, "mean_%s", hk_dtype_name(t));
          double m, wm = (double)(int64_t)want / (double)n;
          void *args[] = {x, &m};
          res_t res[] = {{&m, 8, NULL}};
          run_all(nm, 1, n, args, res, 1);
          CHECK_MSG(check_close(m, wm, 0, 0), "%s n %zu: %.17g, expected %.17g",
                    nm, n, m, wm);
        }
        /* argmax, argmin: the first extreme */
        for (int mx = 0; mx < 2; mx++) {
          snprintf(nm, sizeof nm, "%s_%s", mx ? "argmax" : "argmin",
                   hk_dtype_name(t));
          int64_t best = -1;
          for (size_t i = 0; i < n; i++) {
            if (best < 0) {
              best = (int64_t)i;
              continue;
            }
            int64_t a = int_at(x, t, i), b = int_at(x, t, (size_t)best);
            int better = t == HK_U64 ? (mx ? (uint64_t)a > (uint64_t)b
                                           : (uint64_t)a < (uint64_t)b)
                                     : (mx ? a > b : a < b);
            if (better) best = (int64_t)i;
          }
          void *args[] = {x, &got};
          res_t res[] = {{&got, 8, NULL}};
          run_all(nm, 1, n, args, res, 1);
          CHECK_MSG(got == best, "%s n %zu mode %d: %lld, expected %lld", nm,
                    n, mode, (long long)got, (long long)best);
        }
      }
    }
  }
}

/* ---- 1. The forms of forms.json, and an inout result ------------------------------------ */

static void check_forms(void) {
  for (size_t si = 0; si < COUNT(red_sizes); si++) {
    size_t n = red_sizes[si];
    /* r_acc: i8 summed in i64 (past i8 and i32), finalize converted */
    int8_t *x8 = (int8_t *)g_f32;
    int64_t s = 0;
    for (size_t i = 0; i < n; i++) {
      x8[i] = (int8_t)(i % 7 == 3 ? -128 : 127 - (int)(i % 3));
      s += x8[i];
    }
    int32_t o32;
    void *a1[] = {x8, &o32};
    res_t r1[] = {{&o32, 4, NULL}};
    run_all("r_acc", 0, n, a1, r1, 1);
    CHECK_MSG(o32 == (int32_t)(s / 3), "r_acc n %zu: %d, expected %d", n,
              (int)o32, (int)(int32_t)(s / 3));

    /* r_meanvar: two outs, a scalar in finalize */
    fill(PAT_SHIFTED, n);
    int64_t ddof = 1;
    double mean, var, wm = 0;
    for (size_t i = 0; i < n; i++) wm += g_f64[i];
    wm /= (double)n;
    double wv = n > 1 ? ref_var(g_f64, n) * (double)n / (double)(n - 1) : 0;
    void *a2[] = {g_f64, &ddof, &mean, &var};
    res_t r2[] = {{&mean, 8, NULL}, {&var, 8, NULL}};
    run_all("r_meanvar_f64", 0, n, a2, r2, 2);
    if (n > 1)
      CHECK_MSG(check_close(mean, wm, 1e-13, 0) &&
                    check_close(var, wv, 1e-9, 1e-15),
                "r_meanvar_f64 n %zu: %.17g %.17g, expected %.17g %.17g", n,
                mean, var, wm, wv);
    float fm, fv;
    void *a3[] = {g_f32, &ddof, &fm, &fv};
    res_t r3[] = {{&fm, 4, NULL}, {&fv, 4, NULL}};
    run_all("r_meanvar_f32", 0, n, a3, r3, 2);

    /* r_sumsq_into: an inout and an out in one finalize; twice doubles */
    fill(PAT_TIES, n);
    double ss0 = 0.5, ss;
    int64_t cnt;
    double wss = 0.5;
    int64_t wcnt = 0;
    for (size_t i = 0; i < n; i++) {
      wss += g_f64[i] * g_f64[i];
      wcnt += g_f64[i] > 0;
    }
    void *a4[] = {g_f64, &ss, &cnt};
    res_t r4[] = {{&ss, 8, &ss0}, {&cnt, 8, NULL}};
    run_all("r_sumsq_into", 0, n, a4, r4, 2);
    CHECK_MSG(ss == wss && cnt == wcnt, "r_sumsq_into n %zu: %g %lld, "
              "expected %g %lld", n, ss, (long long)cnt, wss, (long long)wcnt);
    hk_kernel_t *k = find(g_ctx[C_JIT], "r_sumsq_into");
    if (k) {
      ss = 0;
      hk_call(k, n, a4);
      hk_call(k, n, a4);
      CHECK_MSG(ss == 2 * (wss - 0.5), "r_sumsq_into twice, n %zu: %g", n, ss);
    }

    /* r_scaled: scalars in identity, map and finalize */
    float sc = 2, fo;
    void *a5[] = {g_f32, &sc, &fo};
    res_t r5[] = {{&fo, 4, NULL}};
    run_all("r_scaled", 0, n, a5, r5, 1);
    double wsc = 0;
    for (size_t i = 0; i < n; i++) wsc += 2.0 * g_f32[i];
    CHECK_MSG(fo == (float)(wsc + 2), "r_scaled n %zu: %g, expected %g", n,
              fo, wsc + 2);

    /* plugins/bias_grad.json: dbias += sum (in f64); twice doubles */
    for (int t = 0; t < 2; t++) {
      const char *nm = t ? "bias_grad_f64" : "bias_grad_f32";
      double d0 = 3, d;
      float f0 = 3, f;
      void *a6[] = {t ? (void *)g_f64 : (void *)g_f32,
                    t ? (void *)&d : (void *)&f};
      res_t r6[] = {{a6[1], t ? 8u : 4u, t ? (void *)&d0 : (void *)&f0}};
      run_all(nm, 0, n, a6, r6, 1);
      double sum = 0; /* integers: exact */
      for (size_t i = 0; i < n; i++) sum += g_f64[i];
      double got = t ? d : f;
      CHECK_MSG(got == (t ? 3 + sum : (double)(float)(3 + sum)),
                "%s n %zu: %g, expected %g", nm, n, got, 3 + sum);
      hk_kernel_t *kb = find(g_ctx[C_JIT], nm);
      if (kb) {
        d = 0, f = 0;
        hk_call(kb, n, a6);
        hk_call(kb, n, a6);
        got = t ? d : f;
        CHECK_MSG(got == (t ? 2 * sum : (double)(float)(2 * sum)),
                  "%s twice, n %zu: %g, expected %g", nm, n, got, 2 * sum);
      }
    }
  }
}

/* ---- 1. Over axes (hk_call_arrays) ---------------------------------------------------- */

/* argmax, minmax, var and an inout accumulation over the rows and the
 * columns of an (R, C) array: each output element as the flat reduction of
 * its row or column, the same bits on 1 and 2 threads and on tier jit. */
static void check_axes(void) {
  enum { R = 300, C = 1031 };
  hk_context_t *ctx = g_ctx[C_JIT];
  fill(PAT_TIES_NAN, (size_t)R * C);
  for (size_t i = 0; i < (size_t)R * C; i++) /* a NaN in some rows only */
    if (g_f64[i] != g_f64[i] && i % 3) g_f64[i] = g_f32[i] = 7;
  static const int last[] = {-1}, first[] = {0};
  for (int ax = 0; ax < 2; ax++) {
    hk_call_opts_t o = {.axes = ax ? first : last, .naxes = 1};
    size_t nout = ax ? C : R, len = ax ? R : C;
    int64_t kept[1] = {(int64_t)nout};
    double *col = malloc(len * sizeof *col);
    int64_t *idx = malloc(nout * 8 * 2);
    double *lo = malloc(nout * 8 * 4), *hi = lo + nout, *lo2 = hi + nout,
           *hi2 = lo2 + nout;
    float *db = malloc(nout * 4 * 2), *db2 = db + nout;
    if (!col || !idx || !lo || !db) return;
    hk_array_t a[3];
    hk_array_init(&a[0], g_f32, HK_F32, 2, (int64_t[]){R, C});
    for (int th = 1; th <= 2; th++) {
      hk_set_threads(th);
      int64_t *ix = idx + (th - 1) * nout;
      hk_kernel_t *k = NULL;
      hk_array_init(&a[1], ix, HK_I64, 1, kept);
      CHECK_INT_EQ(hk_kernel_select(ctx, "argmax", a, 2, &k), HK_OK);
      if (k) CHECK_MSG(hk_call_arrays(k, a, &o) == HK_OK, "argmax: %s",
                       hk_last_error());
      hk_array_t m[3];
      hk_array_init(&m[0], g_f64, HK_F64, 2, (int64_t[]){R, C});
      double *l = th == 1 ? lo : lo2, *h = th == 1 ? hi : hi2;
      hk_array_init(&m[1], l, HK_F64, 1, kept);
      hk_array_init(&m[2], h, HK_F64, 1, kept);
      k = find(ctx, "minmax_f64");
      if (k) CHECK_MSG(hk_call_arrays(k, m, &o) == HK_OK, "minmax: %s",
                       hk_last_error());
      /* dbias += the sums: twice, from 1 */
      float *d = th == 1 ? db : db2;
      for (size_t j = 0; j < nout; j++) d[j] = 1;
      hk_array_t b[2] = {a[0]};
      hk_array_init(&b[1], d, HK_F32, 1, kept);
      k = find(ctx, "bias_grad_f32");
      for (int rep = 0; k && rep < 2; rep++)
        CHECK_MSG(hk_call_arrays(k, b, &o) == HK_OK, "bias_grad: %s",
                  hk_last_error());
    }
    hk_set_threads(0);
    CHECK(!memcmp(idx, idx + nout, nout * 8));
    CHECK(!memcmp(lo, lo2, nout * 8) && !memcmp(hi, hi2, nout * 8));
    CHECK(!memcmp(db, db2, nout * 4));
    for (size_t j = 0; j < nout; j++) {
      double s = 0, mn = INFINITY, mx = -INFINITY;
      int nan = 0;
      for (size_t e = 0; e < len; e++) {
        double v = g_f64[ax ? e * C + j : j * C + e];
        col[e] = v;
        nan |= v != v;
        mn = v < mn ? v : mn;
        mx = v > mx ? v : mx;
        s += v;
      }
      if (nan) mn = mx = NAN;
      int64_t want = ref_arg(col, len, 1);
      CHECK_MSG(idx[j] == want, "argmax axis %d, %zu: %lld, expected %lld", ax,
                j, (long long)idx[j], (long long)want);
      CHECK_MSG(check_close(lo[j], mn, 0, 0) && check_close(hi[j], mx, 0, 0),
                "minmax axis %d, %zu", ax, j);
      CHECK_MSG(check_close(db[j], (float)(1 + 2 * s), 0, 0),
                "bias_grad axis %d, %zu: %g, expected %g", ax, j, db[j],
                1 + 2 * s);
    }
    free(col);
    free(idx);
    free(lo);
    free(db);
  }
  /* dispatch by dtype finds the integer sum (a second kernel named sum) */
  int8_t x8[5] = {100, 100, 100, -1, 1};
  int64_t s8 = 0;
  hk_array_t a[2];
  hk_array_init(&a[0], x8, HK_I8, 1, (int64_t[]){5});
  hk_array_init(&a[1], &s8, HK_I64, 0, NULL);
  hk_kernel_t *k = NULL;
  CHECK_INT_EQ(hk_kernel_select(ctx, "sum", a, 2, &k), HK_OK);
  if (k) {
    CHECK_STR_EQ(hk_kernel_info(k)->name, "sum_i8");
    CHECK_INT_EQ(hk_call_arrays(k, a, NULL), HK_OK);
    CHECK_INT_EQ(s8, 300);
  }
}

/* A result's starting bits at position p: an f64 inout's 1 + p (the
 * forms accumulate into it), else 0xA5 bytes. */
static void result_init(hk_dtype_t t, unsigned char *d, size_t es, int64_t p) {
  double init = 1.0 + (double)p;
  if (t == HK_F64) memcpy(d, &init, 8);
  else memset(d, 0xA5, es);
}

/* The flat call over position p's m elements (ins: each in parameter's
 * dense run), its results against position p's in outs: how many differ. */
static int64_t flat_differs(hk_kernel_t *k, size_t m, void *const *ins,
                            float *sc, int64_t p, unsigned char *const *outs,
                            const size_t *es) {
  const hk_kernel_info_t *in = hk_kernel_info(k);
  void *args[8];
  unsigned char want[8][8];
  for (int i = 0; i < in->nparams; i++) {
    const hk_param_info_t *pi = &in->params[i];
    if (pi->role == HK_ROLE_IN) {
      args[i] = ins[i];
    } else if (pi->role == HK_ROLE_SCALAR) {
      args[i] = sc;
    } else {
      result_init(pi->dtype, want[i], es[i], p);
      args[i] = want[i];
    }
  }
  CHECK_INT_EQ(hk_call(k, m, args), HK_OK);
  int64_t bad = 0;
  for (int i = 0; i < in->nparams; i++)
    if (outs[i] && memcmp(want[i], outs[i] + (size_t)p * es[i], es[i])) bad++;
  return bad;
}

/* Axis -1 over (R, m) for short and odd m (the rowred entry: every row in
 * one call of the generated loop, abi.h): each row's results must be the
 * bits of the flat call on that row, for a plain, an index (argmax), a
 * struct (var), a two-result (minmax), an inout-with-a-scalar-free struct
 * (r_sumsq_into) and a scalar (r_scaled) reduction, inline and on every
 * tier, with 1 and 2 threads. */
static void rows_case(hk_context_t *ctx, const char *nm, int64_t R, int64_t m,
                      int threads) {
  hk_kernel_t *k = find(ctx, nm);
  if (!k) return;
  const hk_kernel_info_t *in = hk_kernel_info(k);
  hk_array_t a[8];
  unsigned char *outs[8] = {0};
  size_t es[8] = {0};
  float sc = 1.5f;
  CHECK(in->nparams <= 8);
  for (int i = 0; i < in->nparams && i < 8; i++) {
    const hk_param_info_t *pi = &in->params[i];
    es[i] = hk_dtype_size(pi->dtype);
    if (pi->role == HK_ROLE_IN) {
      void *d = pi->dtype == HK_F64 ? (void *)g_f64 : (void *)g_f32;
      hk_array_init(&a[i], d, pi->dtype, 2, (int64_t[]){R, m});
    } else if (pi->role == HK_ROLE_SCALAR) {
      CHECK(pi->dtype == HK_F32);
      hk_array_init(&a[i], &sc, HK_F32, 0, NULL);
    } else { /* a result per row: an inout's starts at 1 + r */
      outs[i] = malloc((size_t)R * es[i]);
      if (!outs[i]) return;
      for (int64_t r = 0; r < R; r++)
        result_init(pi->dtype, outs[i] + (size_t)r * es[i], es[i], r);
      hk_array_init(&a[i], outs[i], pi->dtype, 1, (int64_t[]){R});
    }
  }
  hk_set_threads(threads);
  static const int last[] = {-1};
  hk_call_opts_t o = {.axes = last, .naxes = 1};
  int rc = hk_call_arrays(k, a, &o);
  hk_set_threads(0);
  CHECK_MSG(rc == HK_OK, "%s: %s", nm, hk_last_error());
  int64_t bad = 0;
  for (int64_t r = 0; rc == HK_OK && r < R; r++) {
    void *ins[8];
    for (int i = 0; i < in->nparams; i++)
      ins[i] = (unsigned char *)a[i].data + (size_t)(r * m) * es[i];
    bad += flat_differs(k, (size_t)m, ins, &sc, r, outs, es);
  }
  CHECK_MSG(bad == 0, "%s over (%lld, %lld), %d threads (tier %s): %lld "
            "results differ from the flat calls'", nm, (long long)R,
            (long long)m, threads, hk_tier_name(hk_kernel_tier(k)),
            (long long)bad);
  /* The same rows asked for in other ways, each the same bits: keepdims
   * ((R, 1) results), the input as (R, 1, m) over axes -2 and -1 (both
   * through hk_call_arrays' fast path for trailing axes), and results
   * written every other element (the general path). */
  for (int v = 0; rc == HK_OK && v < 3; v++) {
    hk_array_t b[8];
    unsigned char *outs2[8] = {0};
    static const int two[] = {-2, -1};
    hk_call_opts_t o2 = {.axes = v == 1 ? two : last, .naxes = v == 1 ? 2 : 1,
                         .keepdims = v == 0};
    const int64_t step = v == 2 ? 2 : 1;
    for (int i = 0; i < in->nparams; i++) {
      b[i] = a[i];
      if (in->params[i].role == HK_ROLE_IN && v == 1)
        hk_array_init(&b[i], a[i].data, a[i].dtype, 3, (int64_t[]){R, 1, m});
      if (!outs[i]) continue;
      outs2[i] = malloc((size_t)(R * step) * es[i]);
      if (!outs2[i]) break;
      for (int64_t r = 0; r < R; r++)
        result_init(in->params[i].dtype,
                    outs2[i] + (size_t)(r * step) * es[i], es[i], r);
      hk_array_init(&b[i], outs2[i], a[i].dtype, v == 0 ? 2 : 1,
                    v == 0 ? (int64_t[]){R, 1} : (int64_t[]){R});
      if (v == 2) b[i].strides[0] = 2;
      b[i].base = outs2[i];
      b[i].nbytes = (size_t)(R * step) * es[i];
    }
    hk_set_threads(threads);
    int rc2 = hk_call_arrays(k, b, &o2);
    hk_set_threads(0);
    CHECK_MSG(rc2 == HK_OK, "%s, way %d: %s", nm, v, hk_last_error());
    int64_t differ = 0;
    for (int i = 0; i < in->nparams; i++)
      for (int64_t r = 0; outs[i] && outs2[i] && rc2 == HK_OK && r < R; r++)
        differ += memcmp(outs[i] + (size_t)r * es[i],
                         outs2[i] + (size_t)(r * step) * es[i], es[i]) != 0;
    CHECK_MSG(differ == 0, "%s over (%lld, %lld), way %d (keepdims, two "
              "axes, strided results): %lld results differ", nm,
              (long long)R, (long long)m, v, (long long)differ);
    for (int i = 0; i < 8; i++) free(outs2[i]);
  }
  for (int i = 0; i < 8; i++) free(outs[i]);
}

/* Axis 0 of (m, C), or axis 1 of (B, m, C) (B > 1): a reduction per
 * column, by the kernel's colred entry (abi.h: every row read once for a
 * group of columns; several blocks past HK_REDUCE_BLOCK rows). Each
 * column's results must be the bits of the flat call on a dense copy of
 * that column, for the kernels of rows_case, inline and on every tier. */
static void cols_case(hk_context_t *ctx, const char *nm, int64_t B, int64_t m,
                      int64_t C, int threads) {
  hk_kernel_t *k = find(ctx, nm);
  if (!k) return;
  const hk_kernel_info_t *in = hk_kernel_info(k);
  hk_array_t a[8];
  unsigned char *outs[8] = {0};
  size_t es[8] = {0};
  float sc = 1.5f;
  const int64_t npos = B * C;
  unsigned char *col = malloc((size_t)m * 8 * 8); /* a column per in */
  if (!col) return;
  CHECK(in->nparams <= 8);
  for (int i = 0; i < in->nparams && i < 8; i++) {
    const hk_param_info_t *pi = &in->params[i];
    es[i] = hk_dtype_size(pi->dtype);
    if (pi->role == HK_ROLE_IN) {
      void *d = pi->dtype == HK_F64 ? (void *)g_f64 : (void *)g_f32;
      if (B > 1) hk_array_init(&a[i], d, pi->dtype, 3, (int64_t[]){B, m, C});
      else hk_array_init(&a[i], d, pi->dtype, 2, (int64_t[]){m, C});
    } else if (pi->role == HK_ROLE_SCALAR) {
      hk_array_init(&a[i], &sc, HK_F32, 0, NULL);
    } else { /* a result per column: an inout's starts at 1 + p */
      outs[i] = malloc((size_t)npos * es[i]);
      if (!outs[i]) goto done;
      for (int64_t p = 0; p < npos; p++)
        result_init(pi->dtype, outs[i] + (size_t)p * es[i], es[i], p);
      if (B > 1) hk_array_init(&a[i], outs[i], pi->dtype, 2, (int64_t[]){B, C});
      else hk_array_init(&a[i], outs[i], pi->dtype, 1, (int64_t[]){C});
    }
  }
  hk_set_threads(threads);
  static const int ax0[] = {0}, ax1[] = {1};
  hk_call_opts_t o = {.axes = B > 1 ? ax1 : ax0, .naxes = 1};
  int rc = hk_call_arrays(k, a, &o);
  hk_set_threads(0);
  CHECK_MSG(rc == HK_OK, "%s: %s", nm, hk_last_error());
  int64_t bad = 0;
  for (int64_t p = 0; rc == HK_OK && p < npos; p++) {
    const int64_t b = p / C, c = p % C;
    void *ins[8];
    for (int i = 0; i < in->nparams; i++) {
      if (in->params[i].role != HK_ROLE_IN) continue;
      const unsigned char *d = a[i].data;
      ins[i] = col + (size_t)i * (size_t)m * 8;
      for (int64_t r = 0; r < m; r++) /* the column's dense copy */
        memcpy((unsigned char *)ins[i] + (size_t)r * es[i],
               d + (size_t)((b * m + r) * C + c) * es[i], es[i]);
    }
    bad += flat_differs(k, (size_t)m, ins, &sc, p, outs, es);
  }
  CHECK_MSG(bad == 0, "%s over columns of (%lld, %lld, %lld), %d threads "
            "(tier %s): %lld results differ from the flat calls'", nm,
            (long long)B, (long long)m, (long long)C, threads,
            hk_tier_name(hk_kernel_tier(k)), (long long)bad);
done:
  for (int i = 0; i < 8; i++) free(outs[i]);
  free(col);
}

static void check_cols(void) {
  static const char *const std[] = {"sum_f32", "argmax_f32", "var_f32",
                                    "logsumexp_f32", "minmax_f32"};
  static const char *const forms[] = {"r_sumsq_into", "r_scaled"};
  /* (B, m, C, threads): short and odd columns, rows past four lanes'
   * worth (hk_colrow4), several blocks (40000 rows), a middle axis; on 2
   * threads: one task (spans of a row under 4 KB), spans of columns, a
   * task per block, spans of whole kept rows */
  static const int64_t shapes[][4] = {
      {1, 1, 37, 1},     {1, 17, 300, 1},    {1, 100, 5, 1},
      {1, 40000, 5, 1},  {2, 33, 70, 1},     {1, 300, 700, 2},
      {1, 130, 2100, 2}, {1, 40000, 5, 2},   {2, 40000, 3, 2},
      {4, 100, 400, 2}};
  fill(PAT_UNIT, 300000);
  for (size_t j = 0; j < COUNT(shapes); j++) {
    const int64_t B = shapes[j][0], m = shapes[j][1], C = shapes[j][2];
    const int th = (int)shapes[j][3];
    for (size_t q = 0; q < COUNT(std); q++) {
      char tn[64];
      snprintf(tn, sizeof tn, "t_%s", std[q]);
      cols_case(g_ctx[C_JIT], std[q], B, m, C, th); /* inline */
      for (int c = 0; c < C_SO; c++) /* no t_ kernels in so: above */
        if (g_ctx[c]) cols_case(g_ctx[c], tn, B, m, C, th);
    }
    for (size_t q = 0; q < COUNT(forms); q++)
      for (int c = 0; c < C_COUNT; c++)
        if (g_ctx[c]) cols_case(g_ctx[c], forms[q], B, m, C, th);
  }
}

static void check_rows(void) {
  /* max_f64 and mean_f32: rows shorter than a few lanes' worth go in
   * batches of a vector's width (emit_c.c, rowb), with a select and a
   * finalize; 601 rows leave one past the batches; rows of 2 to 6 (2 for
   * doubles) in one run are taken apart by shuffles (rowc), of 4 to 15
   * floats with 32-byte vectors by one or two 8 x 8 transposes (or
   * AVX-512VL's shuffles) */
  static const char *const std[] = {"sum_f32", "argmax_f32", "var_f32",
                                    "logsumexp_f32", "minmax_f32", "max_f64",
                                    "mean_f32"};
  static const char *const forms[] = {"r_sumsq_into", "r_scaled",
                                      "r_fin_lin_f32", "r_fin_tenth",
                                      "r_fin_cast"};
  static const int64_t ms[] = {1, 2, 3, 4, 6, 7, 8, 9, 15, 16, 17, 20, 40, 100};
  fill(PAT_UNIT, 300000);
  /* one thread: every kernel, context and row length over 601 rows; two
   * threads: rows of 17 numerous enough (over hk__par_min's 131072
   * elements) to be cut into tasks of rows, each its own rowred call */
  for (size_t j = 0; j <= COUNT(ms); j++) {
    const int th = j == COUNT(ms) ? 2 : 1;
    const int64_t m = th == 2 ? 17 : ms[j], R = th == 2 ? 8000 : 601;
    for (size_t q = 0; q < COUNT(std); q++) {
      char tn[64];
      snprintf(tn, sizeof tn, "t_%s", std[q]);
      rows_case(g_ctx[C_JIT], std[q], R, m, th); /* inline */
      for (int c = 0; c < C_SO; c++) /* no t_ kernels in so: above */
        if (g_ctx[c]) rows_case(g_ctx[c], tn, R, m, th);
    }
    for (size_t q = 0; q < COUNT(forms); q++)
      for (int c = 0; c < C_COUNT; c++)
        if (g_ctx[c]) rows_case(g_ctx[c], forms[q], R, m, th);
  }
}

/* hk_kernel_lens gives 1 for every result of a reduction. */
static void check_lens(void) {
  hk_kernel_t *k = find(g_ctx[C_JIT], "r_sumsq_into");
  hk_kernel_t *m = find(g_ctx[C_JIT], "minmax_f32");
  double x = 1, ss = 0;
  int64_t cnt, lens[3];
  void *args[] = {&x, &ss, &cnt};
  if (k && hk_kernel_lens(k, 5, args, lens) == HK_OK) {
    CHECK_INT_EQ(lens[0], 5);
    CHECK_INT_EQ(lens[1], 1);
    CHECK_INT_EQ(lens[2], 1);
  }
  float lo, hi;
  void *margs[] = {&x, &lo, &hi};
  if (m && hk_kernel_lens(m, 5, margs, lens) == HK_OK) {
    CHECK_INT_EQ(lens[1], 1);
    CHECK_INT_EQ(lens[2], 1);
  }
}

/* ---- 3. Bad files ----------------------------------------------------------------------- */

typedef struct bad {
  const char *what;
  const char *acc, *identity, *map, *combine, *finalize; /* JSON values */
  const char *params; /* NULL: x in f32, out out f32 */
  const char *at;     /* where the first error is: this text's position */
  const char *msg;    /* what its message holds */
} bad_t;

#define PX "{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"}"
#define PO(nm) "{\"name\": \"" nm "\", \"type\": \"f32\", \"role\": \"out\"}"
#define SV "{\"v\": \"f32\"}"

static const bad_t bads[] = {
    {"acc field type", "{\"v\": \"float\"}", "{\"v\": \"0\"}", "{\"v\": \"x\"}",
     "\"a.v = a.v + b.v;\"", "\"out = acc.v;\"", NULL, "\"float\"",
     "acc.v: unknown type \"float\""},
    {"acc field a keyword", "{\"int\": \"f32\"}", "{\"int\": \"0\"}",
     "{\"int\": \"x\"}", "\"a.v = b.v;\"", "\"out = 0;\"", NULL, "\"int\"",
     "acc.int: \"int\" is a C keyword"},
    {"acc field not an identifier", "{\"a-b\": \"f32\"}", "{\"a-b\": \"0\"}",
     "{\"a-b\": \"x\"}", "\"a = b;\"", "\"out = 0;\"", NULL, "\"a-b\"",
     "acc.a-b: \"a-b\" is not a C identifier"},
    {"acc field a math constant", "{\"NAN\": \"f32\"}", "{\"NAN\": \"0\"}",
     "{\"NAN\": \"x\"}", "\"a = b;\"", "\"out = 0;\"", NULL, "\"NAN\"",
     "is a math function or constant"},
    {"acc empty", "{}", "{}", "{}", "\"a = b;\"", "\"out = 0;\"", NULL, "{}",
     "acc: is empty"},
    {"acc not a type", "\"float\"", "\"0\"", "\"x\"", "\"a + b\"", NULL, NULL,
     "\"float\"", "acc: unknown type \"float\""},
    {"acc an undeclared placeholder", "\"U\"", "\"0\"", "\"x\"", "\"a + b\"",
     NULL, NULL, "\"U\"", "acc: placeholder \"U\" is not declared"},
    {"acc a number", "5", "\"0\"", "\"x\"", "\"a + b\"", NULL, NULL, "5",
     "acc: expected a type"},
    {"identity missing a field", "{\"v\": \"f32\", \"w\": \"f32\"}",
     "{\"v\": \"0\"}", "{\"v\": \"x\", \"w\": \"x\"}",
     "\"a.v = b.v; a.w = b.w;\"", "\"out = acc.v;\"", NULL, "{\"v\": \"0\"}",
     "identity: missing field \"w\""},
    {"map naming an unknown field", SV, "{\"v\": \"0\"}",
     "{\"v\": \"x\", \"z\": \"x\"}", "\"a.v = b.v;\"", "\"out = acc.v;\"",
     NULL, "\"z\"", "map: unknown field \"z\": the accumulator's fields"},
    {"identity a string with a struct", SV, "\"0\"", "{\"v\": \"x\"}",
     "\"a.v = b.v;\"", "\"out = acc.v;\"", NULL, "\"0\"",
     "identity: expected an object giving each accumulator field"},
    {"map an object without a struct", NULL, "\"0\"", "{\"v\": \"x\"}",
     "\"a + b\"", NULL, NULL, "{\"v\": \"x\"}",
     "map: is an object, which is for a struct accumulator"},
    {"combine an expression with a struct", SV, "{\"v\": \"0\"}",
     "{\"v\": \"x\"}", "\"a.v + b.v\"", "\"out = acc.v;\"", NULL,
     "\"a.v + b.v\"", "combine: with a struct accumulator this is C statements"},
    {"finalize an expression with a struct", SV, "{\"v\": \"0\"}",
     "{\"v\": \"x\"}", "\"a.v = a.v + b.v;\"", "\"acc.v\"", NULL, "\"acc.v\"",
     "finalize: with a struct accumulator this is C statements"},
    {"finalize missing with a struct", SV, "{\"v\": \"0\"}", "{\"v\": \"x\"}",
     "\"a.v = a.v + b.v;\"", NULL, NULL, "{\"schema",
     "missing required field \"finalize\""},
    {"an out not assigned", "{\"lo\": \"f32\", \"hi\": \"f32\"}",
     "{\"lo\": \"0\", \"hi\": \"0\"}", "{\"lo\": \"x\", \"hi\": \"x\"}",
     "\"a.lo = b.lo; a.hi = b.hi;\"", "\"lo = acc.lo;\"",
     PX ", " PO("lo") ", " PO("hi"), "\"lo = acc.lo;\"",
     "finalize: does not assign out parameter \"hi\""},
    {"return in combine", SV, "{\"v\": \"0\"}", "{\"v\": \"x\"}",
     "\"if (b.v > a.v) return;\"", "\"out = acc.v;\"", NULL, "return",
     "combine: 'return' is not allowed here"},
    {"a call in finalize", SV, "{\"v\": \"0\"}", "{\"v\": \"x\"}",
     "\"a.v = b.v;\"", "\"out = printf(acc.v);\"", NULL, "printf",
     "finalize: calls 'printf', which is not allowed"},
    {"map naming the out", SV, "{\"v\": \"0\"}", "{\"v\": \"out * x\"}",
     "\"a.v = b.v;\"", "\"out = acc.v;\"", NULL, "out * x",
     "map.v: 'out' is not one of the kernel's in buffers"},
    {"struct too large",
     "{\"p\": \"f64\", \"q\": \"f64\", \"r\": \"f64\", \"s\": \"f64\", "
     "\"t\": \"i8\"}",
     "{\"p\": \"0\", \"q\": \"0\", \"r\": \"0\", \"s\": \"0\", \"t\": \"0\"}",
     "{\"p\": \"x\", \"q\": \"x\", \"r\": \"x\", \"s\": \"x\", \"t\": \"0\"}",
     "\"a = b;\"", "\"out = acc.p;\"", NULL, "{\"p\": \"f64\"",
     "acc: the accumulator takes 40 bytes; at most 32"},
    {"two results without a struct", "\"f64\"", "\"0\"", "\"x\"", "\"a + b\"",
     NULL, PX ", " PO("lo") ", " PO("hi"), "\"out\"}]",
     "a reduction has exactly one out or inout parameter"},
    {"no result", SV, "{\"v\": \"0\"}", "{\"v\": \"x\"}", "\"a = b;\"",
     "\"(void)acc;\"", PX, "[{", "a reduction needs exactly one out parameter"},
};

/* The kernel file of case b. */
static void bad_text(const bad_t *b, char *buf, size_t n) {
  int len = snprintf(buf, n,
                     "{\"schema_version\": 1, \"name\": \"r\", \"kind\": "
                     "\"reduction\",\n \"params\": [%s],\n",
                     b->params ? b->params : PX ", " PO("out"));
  if (b->acc) len += snprintf(buf + len, n - (size_t)len, " \"acc\": %s,\n", b->acc);
  len += snprintf(buf + len, n - (size_t)len,
                  " \"identity\": %s,\n \"map\": %s,\n \"combine\": %s",
                  b->identity, b->map, b->combine);
  if (b->finalize)
    len += snprintf(buf + len, n - (size_t)len, ",\n \"finalize\": %s",
                    b->finalize);
  snprintf(buf + len, n - (size_t)len, "\n}\n");
}

static void check_bad_files(void) {
  for (size_t c = 0; c < COUNT(bads); c++) {
    const bad_t *b = &bads[c];
    char text[2048];
    bad_text(b, text, sizeof text);
    hkc_file *f = NULL;
    hku_diags d = HKU_DIAGS_INIT;
    int rc = hkc_file_parse("bad.json", text, strlen(text), &f, &d);
    CHECK_MSG(rc == HK_ESCHEMA && !f, "%s: parsed (rc %d)", b->what, rc);
    const hku_diag *g = NULL;
    for (size_t i = 0; i < d.n && !g; i++)
      if (d.v[i].sev == HKU_ERROR) g = &d.v[i];
    int line = 0, col = 0;
    pos_of(text, b->at, &line, &col);
    if (g) {
      show(b->what, g->msg);
      CHECK_MSG(strstr(g->msg, b->msg) != NULL, "%s: message \"%s\" lacks "
                "\"%s\"", b->what, g->msg, b->msg);
      CHECK_MSG(g->line == line && g->col == col,
                  "%s: at %d:%d, expected %d:%d (%s)", b->what, g->line,
                  g->col, line, col, g->msg);
      CHECK_STR_EQ(g->path, "bad.json");
    } else {
      CHECK_MSG(0, "%s: no error", b->what);
    }
    hkc_file_free(f);
    hku_diags_free(&d);
  }
  /* the located form, through the runtime */
  char text[2048];
  bad_text(&bads[0], text, sizeof text);
  hk_context_t *ctx = g_ctx[C_JIT];
  if (ctx) {
    CHECK(hk_load_string(ctx, text, strlen(text), "bad.json") != HK_OK);
    int line, col;
    pos_of(text, "\"float\"", &line, &col);
    char want[64];
    snprintf(want, sizeof want, "<bad.json>:%d:%d: error: acc.v:", line, col);
    CHECK_CONTAINS(hk_last_error(), want);
    /* a compile error in struct statements points at the kernel file */
    const bad_t bc = {"", SV, "{\"v\": \"0\"}", "{\"v\": \"x\"}",
                      "[\"a.v = b.v;\", \"a.zz = 1;\"]", "\"out = acc.v;\"",
                      NULL, NULL, NULL};
    bad_text(&bc, text, sizeof text);
    CHECK(hk_load_string(ctx, text, strlen(text), "bad2.json") != HK_OK);
    pos_of(text, "a.zz", &line, &col);
    snprintf(want, sizeof want, "<bad2.json>:%d:", line);
    show("compile error", hk_last_error());
    CHECK_CONTAINS(hk_last_error(), want);
    CHECK_CONTAINS(hk_last_error(), "combine");
  }
}

int main(void) {
  const char *why = fixture_setup("reduce");
  if (why) CHECK_SKIP("%s", why);
  g_f32 = malloc(NMAX * sizeof *g_f32);
  g_f64 = malloc(NMAX * sizeof *g_f64);
  if (!g_f32 || !g_f64) CHECK_SKIP("out of memory");
  PART("contexts", make_contexts());
  if (getenv("HK_TEST_SMALL")) {
    red_sizes[COUNT(red_sizes) - 1] = 200003;
    printf("NOTE: HK_TEST_SMALL: flat reductions up to 200,003 elements\n");
  }
  if (!g_have_cc || getenv("HK_TEST_JIT_ONLY"))
    printf("NOTE: %s: tiers opt and so not checked\n",
           g_have_cc ? "HK_TEST_JIT_ONLY" : "no cc");
  if (g_ctx[C_JIT]) {
    PART("float kernels", check_float_kernels());
    PART("f16 and bf16 kernels", check_float16_kernels());
    PART("signed zeros", check_arg_zeros());
    PART("typed functions", check_typed());
    PART("integer kernels", check_int_kernels());
    PART("forms", check_forms());
    PART("lens", check_lens());
    PART("axes", check_axes());
    PART("rows", check_rows());
    PART("columns", check_cols());
  }
  PART("bad files", check_bad_files());
  for (int c = 0; c < C_COUNT; c++) hk_context_destroy(g_ctx[c]);
  free(g_f32);
  free(g_f64);
  fixture_teardown();
  CHECK_DONE();
}
