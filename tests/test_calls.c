/* test_calls.c — calls through every tier give the stdlib's bits: each kind
 * and type of kernel, on tier jit, opt and so, through the public API of
 * hk.h (core/dispatch.c, core/context.c and the loaders beneath).
 *
 *  1. tiers: tests/plugin_fixtures/ops.json repeats stdlib ops under other
 *     names (p_add ... p_softmax: elementwise, scalar + inout, reductions
 *     with and without finalize, no in buffer, raw with len, integer types
 *     whose results wrap). Every instance runs on tier jit and tier opt at
 *     n = 0, 1, 7, 1000, 65536+3, 2^20+5 and must equal the typed stdlib
 *     function bit for bit: every tier is built with -fwrapv
 *     -ffp-contract=off -fno-math-errno, calls the same libm, and reduces in
 *     the same blocks and lanes. Info, tier, note and lens are checked.
 *  2. a prebuilt plugin (hk build of ops.json): origin so, tier so, the same
 *     bits as the stdlib. On x86-64 its x86-64-v3 copy (the entry points
 *     NAME__v3, which the loader takes on CPUs with AVX2 and FMA) and its
 *     baseline entry points give the same bits for exp and tanh (hkmath.h's
 *     fused multiply-adds: instructions in one, libm calls in the other)
 *     over 2^16 + 3 inputs spread over every exponent.
 * The temp tree and the helpers: tests/registry_fixture.h.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "abi.h"
#include "check.h"
#include "hk.h"
#include "registry_fixture.h"

/* The ops of ops.json: instance NAME_TYPE computes op on TYPE, with
 * parameters "name:role ..." (types T, but softmax's rows and cols). */
static const struct {
  const char *name;
  int op;
  hk_kind_t kind;
  const char *sig;
  hk_dtype_t types[5];
} ops[] = {
    {"p_add", OP_ADD, HK_KIND_ELEMENTWISE, "x:in y:in out:out",
     {HK_F32, HK_F64, HK_I32, HK_I64}},
    {"p_mul", OP_MUL, HK_KIND_ELEMENTWISE, "x:in y:in out:out",
     {HK_F32, HK_I32, HK_I64}},
    {"p_exp", OP_EXP, HK_KIND_ELEMENTWISE, "x:in out:out", {HK_F32, HK_F64}},
    {"p_tanh", OP_TANH, HK_KIND_ELEMENTWISE, "x:in out:out", {HK_F32, HK_F64}},
    {"p_relu", OP_RELU, HK_KIND_ELEMENTWISE, "x:in out:out", {HK_F32, HK_F64}},
    {"p_axpy", OP_AXPY, HK_KIND_ELEMENTWISE, "alpha:scalar x:in y:inout",
     {HK_F32, HK_F64}},
    {"p_scale", OP_SCALE, HK_KIND_ELEMENTWISE, "x:in alpha:scalar out:out",
     {HK_F32, HK_F64}},
    {"p_sum", OP_SUM, HK_KIND_REDUCTION, "x:in out:out", {HK_F32, HK_F64}},
    {"p_max", OP_MAX, HK_KIND_REDUCTION, "x:in out:out", {HK_F32, HK_F64}},
    {"p_dot", OP_DOT, HK_KIND_REDUCTION, "x:in y:in out:out", {HK_F32, HK_F64}},
    {"p_mean", OP_MEAN, HK_KIND_REDUCTION, "x:in out:out", {HK_F32, HK_F64}},
    {"p_fill", OP_FILL, HK_KIND_ELEMENTWISE, "value:scalar out:out",
     {HK_F32, HK_F64, HK_I32, HK_I64}},
    {"p_arange", OP_ARANGE, HK_KIND_ELEMENTWISE,
     "start:scalar step:scalar out:out", {HK_F32, HK_F64, HK_I32, HK_I64}},
    {"p_softmax", OP_SOFTMAX, HK_KIND_RAW,
     "x:in y:out rows:scalar cols:scalar", {HK_F32, HK_F64}},
};

/* Checks k's description against ops[o] on type t. */
static void check_info(const hk_kernel_t *k, size_t o, hk_dtype_t t,
                       const char *origin, const char *source) {
  const hk_kernel_info_t *in = hk_kernel_info(k);
  char name[128];
  snprintf(name, sizeof name, "%s_%s", ops[o].name, hk_dtype_name(t));
  CHECK_STR_EQ(in->name, name);
  CHECK_STR_EQ(in->origin, origin);
  CHECK_STR_EQ(in->source, source);
  CHECK_MSG(in->kind == ops[o].kind, "%s: kind %s", name,
            hk_kind_name(in->kind));
  CHECK_MSG(in->targets & HK_TARGET_CPU, "%s: no cpu target", name);
  char sig[256] = "";
  for (int i = 0; i < in->nparams; i++) {
    const hk_param_info_t *p = &in->params[i];
    size_t l = strlen(sig);
    snprintf(sig + l, sizeof sig - l, "%s%s:%s", i ? " " : "", p->name,
             hk_role_name(p->role));
    int fixed = ops[o].op == OP_SOFTMAX && p->role == HK_ROLE_SCALAR;
    CHECK_MSG(p->dtype == (fixed ? HK_I64 : t), "%s: %s has type %s", name,
              p->name, hk_dtype_name(p->dtype));
    if (ops[o].op == OP_SOFTMAX && p->role != HK_ROLE_SCALAR)
      CHECK_MSG(p->len && !strcmp(p->len, "rows * cols"), "%s: len %s", name,
                p->len ? p->len : "(null)");
    else
      CHECK_MSG(p->len == NULL, "%s: %s has len %s", name, p->name, p->len);
  }
  CHECK_MSG(!strcmp(sig, ops[o].sig), "%s: params \"%s\", expected \"%s\"",
            name, sig, ops[o].sig);
}

/* hk_kernel_lens at n = 1000 (softmax 10 x 100). */
static void check_lens(const hk_kernel_t *k, size_t o, hk_dtype_t t) {
  const hk_kernel_info_t *in = hk_kernel_info(k);
  int64_t lens[8];
  void *args[8] = {0};
  check_scalar_t s[8];
  int64_t rows = 10, cols = 100;
  memset(s, 0, sizeof s);
  for (int i = 0; i < in->nparams && i < 8; i++)
    if (in->params[i].role == HK_ROLE_SCALAR) args[i] = &s[i];
  if (ops[o].op == OP_SOFTMAX) {
    args[2] = &rows;
    args[3] = &cols;
  }
  int rc = hk_kernel_lens(k, 1000, args, lens);
  CHECK_MSG(rc == HK_OK, "lens %s: %s", in->name, hk_last_error());
  for (int i = 0; rc == HK_OK && i < in->nparams; i++) {
    const hk_param_info_t *p = &in->params[i];
    int64_t want = p->role == HK_ROLE_SCALAR ? -1
                   : (ops[o].kind == HK_KIND_REDUCTION && p->role == HK_ROLE_OUT)
                       ? 1
                       : 1000;
    CHECK_MSG(lens[i] == want, "lens %s.%s = %lld, expected %lld", in->name,
              p->name, (long long)lens[i], (long long)want);
  }
  if (ops[o].op == OP_SOFTMAX) { /* a negative length is refused */
    rows = -1;
    CHECK_INT_EQ(hk_kernel_lens(k, 1000, args, lens), HK_EINVAL);
    CHECK_CONTAINS(hk_last_error(), "parameter 'x': its length, rows * "
                                    "cols, is negative");
    rows = (int64_t)1 << 62; /* overflows: named as well */
    cols = 8;
    CHECK_INT_EQ(hk_kernel_lens(k, 1000, args, lens), HK_EINVAL);
    CHECK_CONTAINS(hk_last_error(), "parameter 'x'");
    CHECK_CONTAINS(hk_last_error(), "overflows int64");
  }
  (void)t;
}

/* ---- 1. Every kind and type through both tiers --------------------------------- */

/* Instance name of ops[o] on type t, from context c on tier (jit, opt or
 * so), loaded from source: its tier, note (jit and opt), description and
 * lens, and the stdlib's bits. */
static void check_instance(hk_context_t *c, hk_tier_t tier, const char *name,
                           size_t o, hk_dtype_t t, const char *source) {
  hk_kernel_t *k = find(c, name);
  if (!k) return;
  int jit = tier == HK_TIER_JIT;
  CHECK_MSG(hk_kernel_tier(k) == tier, "%s: tier %s", name,
            hk_tier_name(hk_kernel_tier(k)));
  if (jit)
    CHECK_CONTAINS(note_of(k), "tier jit");
  else if (tier == HK_TIER_OPT)
    CHECK_STR_EQ(note_of(k), "");
  CHECK_INT_EQ(hk_kernel_wait_opt(k), jit ? HK_EUNSUPPORTED : HK_OK);
  check_info(k, o, t, tier == HK_TIER_SO ? "so" : "json", source);
  check_lens(k, o, t);
  char what[160];
  snprintf(what, sizeof what, "%s (%s)", name, hk_tier_name(tier));
  check_op(what, k, ops[o].op, t, sizes, COUNT(sizes));
}

static void test_tiers(void) {
  check_make_dir(P("ops"));
  copy_fixture("ops.json", P("ops/ops.json"));
  const char *src = P("ops/ops.json");
  char source[4200];
  snprintf(source, sizeof source, "%s", src);
  check_make_dir(P("cache_ops"));
  hk_context_t *cj = mkctx(HK_TIER_JIT, P("ops"), P("cache_ops"), 0, NULL);
  hk_context_t *co = NULL;
  if (!cj) return;
  CHECK_STR_EQ(hk_context_problems(cj), "");
  /* HK_TEST_JIT_ONLY (tools/test.sh's sanitizer suites): tier opt's and
   * hk build's objects are gcc's, not instrumented; the first suite checks
   * them (and test_opt the compile threads under the sanitizers) */
  if (getenv("HK_TEST_JIT_ONLY")) {
    printf("NOTE: HK_TEST_JIT_ONLY: tier opt not checked\n");
  } else if (g_have_cc) {
    double t0 = now_s();
    co = mkctx(HK_TIER_OPT, P("ops"), P("cache_ops"), 0, NULL);
    printf("tier opt: ops.json compiled in %.2f s\n", now_s() - t0);
    if (co) CHECK_STR_EQ(hk_context_problems(co), "");
  } else {
    printf("NOTE: no system compiler 'cc': tier opt not tested\n");
  }
  int instances = 0;
  for (size_t o = 0; o < COUNT(ops); o++)
    for (int ti = 0; ops[o].types[ti]; ti++) {
      hk_dtype_t t = ops[o].types[ti];
      char name[128];
      snprintf(name, sizeof name, "%s_%s", ops[o].name, hk_dtype_name(t));
      instances++;
      check_instance(cj, HK_TIER_JIT, name, o, t, source);
      if (co) check_instance(co, HK_TIER_OPT, name, o, t, source);
    }
  CHECK_INT_EQ(instances, 35);
  /* the stdlib itself, through the registry: tier inline, origin stdlib */
  hk_kernel_t *ks = find(cj, "add_f32");
  if (ks) {
    CHECK_INT_EQ(hk_kernel_tier(ks), HK_TIER_INLINE);
    CHECK_STR_EQ(hk_kernel_info(ks)->origin, "stdlib");
    CHECK_INT_EQ(hk_kernel_wait_opt(ks), HK_OK);
    check_op("add_f32 (registry)", ks, OP_ADD, HK_F32, sizes, COUNT(sizes));
  }
  hk_context_destroy(co);
  hk_context_destroy(cj);
}

#if defined(__x86_64__)
/* The two copies of a portable plugin's kernel name (exp or tanh, f32 or
 * f64) in the object at so give the same bits. */
static void check_v3_copy(void *h, const char *name, int f64) {
  char plain[160], v3[170];
  snprintf(plain, sizeof plain, HK_ABI_RANGE "%s", name);
  snprintf(v3, sizeof v3, "%s" HK_ABI_V3_SUFFIX, plain);
  hk_range_fn base = NULL, fast = NULL;
  *(void **)&base = dlsym(h, plain);
  *(void **)&fast = dlsym(h, v3);
  CHECK_MSG(base && fast, "%s: the object lacks %s or %s", name, plain, v3);
  if (!base || !fast) return;
  enum { N = 65536 + 3 };
  size_t es = f64 ? 8 : 4;
  unsigned char *x = malloc(N * es), *a = malloc(N * es), *b = malloc(N * es);
  CHECK(x && a && b);
  if (!x || !a || !b) goto out;
  for (size_t i = 0; i < N; i++) {
    if (f64) {
      uint64_t u = (uint64_t)i * 0x0001000100010001ull * 0x9e37u;
      memcpy(x + i * 8, &u, 8);
    } else {
      uint32_t u = (uint32_t)(i * 65537u);
      memcpy(x + i * 4, &u, 4);
    }
  }
  void *args_a[2] = {x, a}, *args_b[2] = {x, b};
  base(args_a, N, 0, N, NULL);
  fast(args_b, N, 0, N, NULL);
  size_t bad = 0, first = N;
  for (size_t i = 0; i < N; i++)
    if (memcmp(a + i * es, b + i * es, es)) {
      if (!bad) first = i;
      bad++;
    }
  CHECK_MSG(bad == 0, "%s: the x86-64-v3 copy differs from the baseline "
            "one in %zu of %d results (the first at index %zu)",
            name, bad, N, first);
out:
  free(x);
  free(a);
  free(b);
}
#endif

static void test_v3_copy(const char *so) {
#if defined(__x86_64__)
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
    printf("NOTE: this CPU has no AVX2 and FMA: the x86-64-v3 copy of a "
           "prebuilt plugin is not run\n");
    return;
  }
  void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
  CHECK_MSG(h != NULL, "dlopen %s: %s", so, dlerror());
  if (!h) return;
  check_v3_copy(h, "p_exp_f32", 0);
  check_v3_copy(h, "p_exp_f64", 1);
  check_v3_copy(h, "p_tanh_f32", 0);
  check_v3_copy(h, "p_tanh_f64", 1);
  dlclose(h);
#else
  (void)so;
  printf("NOTE: not x86-64: prebuilt plugins hold one copy of their "
         "kernels\n");
#endif
}

/* ---- 2. A prebuilt plugin ------------------------------------------------------ */

static void test_prebuilt(void) {
  if (getenv("HK_TEST_JIT_ONLY")) {
    printf("NOTE: HK_TEST_JIT_ONLY: hk build not tested\n");
    return;
  }
  if (!g_have_cc) {
    printf("NOTE: no system compiler 'cc': hk build not tested\n");
    return;
  }
  if (access(g_hk, X_OK) != 0) {
    printf("NOTE: no hk command at %s: hk build not tested\n", g_hk);
    return;
  }
  check_make_dir(P("pb"));
  char so[4200], log[4200];
  snprintf(so, sizeof so, "%s", P("pb/ops.so"));
  snprintf(log, sizeof log, "%s", P("hk-build.log"));
  char *argv[] = {g_hk, "build", (char *)P("ops/ops.json"), "-o", so, NULL};
  int rc = run_logged(argv, log);
  CHECK_MSG(rc == 0, "hk build exited with %d", rc);
  if (rc != 0) {
    print_log(log);
    return;
  }
  hk_context_t *c = mkctx(HK_TIER_AUTO, P("pb"), P("cache_pb"), 0, NULL);
  if (!c) return;
  CHECK_STR_EQ(hk_context_problems(c), "");
  for (size_t o = 0; o < COUNT(ops); o++)
    for (int ti = 0; ops[o].types[ti]; ti++) {
      hk_dtype_t t = ops[o].types[ti];
      char name[128];
      snprintf(name, sizeof name, "%s_%s", ops[o].name, hk_dtype_name(t));
      check_instance(c, HK_TIER_SO, name, o, t, so);
    }
  hk_context_destroy(c);
  test_v3_copy(so);
}

int main(int argc, char **argv) {
  umask(022);
  (void)argc;
  (void)argv;
  const char *why = fixture_setup("calls");
  if (why) CHECK_SKIP("%s", why);
  PART("tiers", test_tiers());
  PART("prebuilt", test_prebuilt());
  fixture_teardown();
  CHECK_DONE();
}
