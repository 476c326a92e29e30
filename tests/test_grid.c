/* test_grid.c — grid kernels, consts and helpers (schemas/README.md §6.5,
 * §6.6): the example plugins (plugins/llm.json: attention_forward,
 * matmul_forward, adamw) against plain C reference loops, on tiers jit and opt, on 1
 * and 2 threads (bit-identical across thread counts and tiers); a kernel
 * file whose results are exact integers and that uses every field (a 3-D
 * and a 2-D index space, setup values, zeroed scratch arrays, helpers
 * calling helpers, consts, placeholders; two kernels in one file with
 * helpers and consts of the same names); helpers in elementwise, raw and
 * rows kernels; an extent of 0, a negative one; and the located errors of
 * the rules (a helper calling a function that is not allowed, recursion,
 * scratch too large, an index space of the wrong rank, ...). */
#include "check.h"
#include "hk.h"
#include "registry.h"

static uint64_t rng_state = 0x2545F4914F6CDD1Du;

static float uniform(float lo, float hi) {
  rng_state = rng_state * 6364136223846793005u + 1442695040888963407u;
  return lo + (hi - lo) * (float)((double)(rng_state >> 11) / 9007199254740992.0);
}

static float *randoms(size_t n, float lo, float hi) {
  float *p = malloc((n ? n : 1) * sizeof *p);
  CHECK(p != NULL);
  for (size_t i = 0; i < n; i++) p[i] = uniform(lo, hi);
  return p;
}

/* 1 when a and b agree to a relative 1e-5 (or an absolute 1e-6). */
static int close_to(double a, double b) {
  return fabs(a - b) <= 1e-6 + 1e-5 * fabs(b);
}

static int count_far(const float *got, const float *want, size_t n) {
  int bad = 0;
  for (size_t i = 0; i < n; i++) bad += !close_to(got[i], want[i]);
  return bad;
}

static hk_context_t *context_of(hk_tier_t tier) {
  const char *none[] = {NULL};
  hk_options_t o = {.plugin_dirs = none, .tier = tier, .flags = HK_NO_CACHE};
  hk_context_t *ctx = NULL;
  CHECK_INT_EQ(hk_context_create(&ctx, &o), HK_OK);
  return ctx;
}

/* Loads plugins/FILE into ctx. */
static void load_plugin(hk_context_t *ctx, const char *file) {
  const char *src = getenv("HK_SOURCE_DIR");
  char path[4096];
  snprintf(path, sizeof path, "%s/plugins/%s", src ? src : ".", file);
  CHECK_MSG(hk_load_file(ctx, path) == HK_OK, "%s", hk_last_error());
}

static hk_kernel_t *plugin(hk_context_t *ctx, const char *name,
                           hk_tier_t tier) {
  hk_kernel_t *k = NULL;
  CHECK_INT_EQ(hk_kernel_find(ctx, name, &k), HK_OK);
  if (k) CHECK_INT_EQ(hk_kernel_tier(k), tier);
  return k;
}

/* ---- References (llm.c's loops) ------------------------------------------------ */

static void attention_ref(float *out, float *preatt, float *att,
                          const float *inp, int B, int T, int C, int NH) {
  int C3 = C * 3, hs = C / NH;
  float scale = 1.0f / sqrtf((float)hs);
  for (int b = 0; b < B; b++)
    for (int t = 0; t < T; t++)
      for (int h = 0; h < NH; h++) {
        const float *q = inp + b * T * C3 + t * C3 + h * hs;
        float *pre = preatt + b * NH * T * T + h * T * T + t * T;
        float *a = att + b * NH * T * T + h * T * T + t * T;
        float maxval = -10000.0f;
        for (int t2 = 0; t2 <= t; t2++) {
          const float *key = inp + b * T * C3 + t2 * C3 + h * hs + C;
          float val = 0.0f;
          for (int i = 0; i < hs; i++) val += q[i] * key[i];
          val *= scale;
          if (val > maxval) maxval = val;
          pre[t2] = val;
        }
        float sum = 0.0f;
        for (int t2 = 0; t2 <= t; t2++) {
          float e = expf(pre[t2] - maxval);
          sum += e;
          a[t2] = e;
        }
        float inv = sum == 0.0f ? 0.0f : 1.0f / sum;
        for (int t2 = 0; t2 < T; t2++) a[t2] = t2 <= t ? a[t2] * inv : 0.0f;
        float *o = out + b * T * C + t * C + h * hs;
        for (int i = 0; i < hs; i++) o[i] = 0.0f;
        for (int t2 = 0; t2 <= t; t2++) {
          const float *v = inp + b * T * C3 + t2 * C3 + h * hs + C * 2;
          for (int i = 0; i < hs; i++) o[i] += a[t2] * v[i];
        }
      }
}

/* ---- The example plugins ----------------------------------------------------------- */

/* Runs k on 1 and 2 threads; the outputs (nout of them, sizes[i] floats,
 * reset from init[i] before each run) must be the same bits both times.
 * Leaves the 2-thread results in outs. */
static void run_both(hk_kernel_t *k, size_t n, void **args, float **outs,
                     float **init, const size_t *sizes, int nout,
                     const char *what) {
  float *one[4];
  for (int threads = 1; threads <= 2; threads++) {
    hk_set_threads(threads);
    for (int i = 0; i < nout; i++)
      memcpy(outs[i], init[i], sizes[i] * sizeof(float));
    CHECK_MSG(hk_call(k, n, args) == HK_OK, "%s: %s", what, hk_last_error());
    for (int i = 0; i < nout; i++) {
      if (threads == 1) {
        one[i] = malloc(sizes[i] * sizeof(float));
        memcpy(one[i], outs[i], sizes[i] * sizeof(float));
      } else {
        CHECK_MSG(!memcmp(one[i], outs[i], sizes[i] * sizeof(float)),
                  "%s: output %d differs on 1 and 2 threads", what, i);
        free(one[i]);
      }
    }
  }
  hk_set_threads(0);
}

/* The results of the examples on each tier, kept to compare the tiers. */
typedef struct tier_results {
  float *att_out, *mm_out, *adam_p;
  size_t att_n, mm_n, adam_n;
} tier_results;

static void test_attention(hk_context_t *ctx, hk_tier_t tier,
                           tier_results *r) {
  hk_kernel_t *k = plugin(ctx, "attention_forward", tier);
  if (!k) return;
  int64_t B = 2, T = 7, C = 12, NH = 3;
  size_t nin = (size_t)(B * T * 3 * C), nout = (size_t)(B * T * C),
         natt = (size_t)(B * NH * T * T);
  float *inp = randoms(nin, -1, 1);
  float *out = malloc(nout * 4), *pre = malloc(natt * 4), *att = malloc(natt * 4);
  float *rout = calloc(nout, 4), *rpre = calloc(natt, 4), *ratt = calloc(natt, 4);
  float *z1 = calloc(nout, 4), *z2 = calloc(natt, 4);
  attention_ref(rout, rpre, ratt, inp, (int)B, (int)T, (int)C, (int)NH);
  void *args[] = {out, pre, att, inp, &B, &T, &C, &NH};
  float *outs[] = {out, pre, att}, *init[] = {z1, z2, z2};
  size_t sizes[] = {nout, natt, natt};
  run_both(k, nin, args, outs, init, sizes, 3, "attention_forward");
  int bad = count_far(out, rout, nout) + count_far(att, ratt, natt);
  /* preatt above the diagonal is never written: 0 as given */
  bad += count_far(pre, rpre, natt);
  CHECK_MSG(!bad, "attention_forward on tier %s: %d values off",
            hk_tier_name(tier), bad);
  r->att_out = out;
  r->att_n = nout;
  free(inp), free(pre), free(att), free(rout), free(rpre), free(ratt);
  free(z1), free(z2);
}

static void test_matmul(hk_context_t *ctx, hk_tier_t tier, tier_results *r) {
  hk_kernel_t *k = plugin(ctx, "matmul_forward", tier);
  if (!k) return;
  /* rows and columns that are not multiples of the tiles, C not of the
   * lanes: every tail runs */
  int64_t BT = 13, C = 37, OC = 10;
  float *inp = randoms((size_t)(BT * C), -1, 1);
  float *w = randoms((size_t)(OC * C), -1, 1), *bias = randoms((size_t)OC, -1, 1);
  size_t no = (size_t)(BT * OC);
  float *out = malloc((no + 1) * 4), *init = malloc((no + 1) * 4);
  for (size_t i = 0; i <= no; i++) init[i] = -7;
  void *args[] = {out, inp, w, bias, &BT, &C, &OC};
  float *outs[] = {out}, *inits[] = {init};
  size_t sizes[] = {no + 1};
  run_both(k, (size_t)(BT * C), args, outs, inits, sizes, 1, "matmul_forward");
  int bad = 0;
  for (int64_t i = 0; i < BT; i++)
    for (int64_t o = 0; o < OC; o++) {
      double s = bias[o];
      for (int64_t c = 0; c < C; c++) s += (double)inp[i * C + c] * w[o * C + c];
      bad += !close_to(out[i * OC + o], s);
    }
  CHECK_MSG(!bad && out[no] == -7, "matmul_forward on tier %s: %d values off",
            hk_tier_name(tier), bad);
  r->mm_out = out;
  r->mm_n = no;
  /* an extent whose expression overflows, (BT + RT - 1) / RT with BT =
   * INT64_MAX: said as such (it printed the extents as 0 before) */
  int64_t big = INT64_MAX;
  void *bargs[] = {out, inp, w, bias, &big, &C, &OC};
  CHECK_INT_EQ(hk_call(k, 0, bargs), HK_EINVAL);
  CHECK_CONTAINS(hk_last_error(), "matmul_forward: the extent of the grid's "
                                  "first index cannot be computed");
  free(inp), free(w), free(bias), free(init);
}

static void test_adamw(hk_context_t *ctx, hk_tier_t tier, tier_results *r) {
  hk_kernel_t *k = plugin(ctx, "adamw", tier);
  if (!k) return;
  /* large enough to be cut into tasks on 2 threads */
  int64_t np = 300001;
  float lr = 1e-3f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f, wd = 0.01f;
  int32_t t = 3;
  size_t n = (size_t)np;
  float *p0 = randoms(n, -1, 1), *g = randoms(n, -1, 1);
  float *m0 = randoms(n, -0.1f, 0.1f), *v0 = randoms(n, 0, 0.01f);
  float *p = malloc(n * 4), *m = malloc(n * 4), *v = malloc(n * 4);
  void *args[] = {p, g, m, v, &np, &lr, &b1, &b2, &eps, &wd, &t};
  float *outs[] = {p, m, v}, *init[] = {p0, m0, v0};
  size_t sizes[] = {n, n, n};
  run_both(k, n, args, outs, init, sizes, 3, "adamw");
  int bad = 0;
  float bc1 = 1.0f - powf(b1, (float)t), bc2 = 1.0f - powf(b2, (float)t);
  for (size_t i = 0; i < n; i++) {
    float mi = b1 * m0[i] + (1.0f - b1) * g[i];
    float vi = b2 * v0[i] + (1.0f - b2) * g[i] * g[i];
    float want = p0[i] - lr * ((mi / bc1) / (sqrtf(vi / bc2) + eps) + wd * p0[i]);
    bad += !close_to(m[i], mi) + !close_to(v[i], vi) + !close_to(p[i], want);
  }
  CHECK_MSG(!bad, "adamw on tier %s: %d values off", hk_tier_name(tier), bad);
  r->adam_p = p;
  r->adam_n = n;
  free(p0), free(g), free(m0), free(v0), free(m), free(v);
}

static void test_examples(void) {
  tier_results r[2] = {{0}};
  hk_tier_t tiers[2] = {HK_TIER_JIT, HK_TIER_OPT};
  for (int i = 0; i < 2; i++) {
    rng_state = 0x2545F4914F6CDD1Du; /* the same inputs on each tier */
    hk_context_t *ctx = context_of(tiers[i]);
    load_plugin(ctx, "llm.json");
    test_attention(ctx, tiers[i], &r[i]);
    test_matmul(ctx, tiers[i], &r[i]);
    test_adamw(ctx, tiers[i], &r[i]);
    hk_context_destroy(ctx);
  }
  /* strict mode: the same bits on every tier */
  CHECK_MSG(r[0].att_out && r[1].att_out &&
                !memcmp(r[0].att_out, r[1].att_out, r[0].att_n * 4),
            "attention_forward: tiers jit and opt differ");
  CHECK_MSG(r[0].mm_out && r[1].mm_out &&
                !memcmp(r[0].mm_out, r[1].mm_out, r[0].mm_n * 4),
            "matmul_forward: tiers jit and opt differ");
  CHECK_MSG(r[0].adam_p && r[1].adam_p &&
                !memcmp(r[0].adam_p, r[1].adam_p, r[0].adam_n * 4),
            "adamw: tiers jit and opt differ");
  for (int i = 0; i < 2; i++) free(r[i].att_out), free(r[i].mm_out), free(r[i].adam_p);
}

/* ---- Every field, exactly ------------------------------------------------------- */

/* Helpers and consts in the other kinds (in the same file: their macros
 * must not leak into the grid kernels' code, nor theirs into these). */
#define KINDS_KERNELS \
    "{\"name\": \"ew\", \"kind\": \"elementwise\", \"types\": {\"T\": [\"f32\", \"f64\"]},\n" \
    " \"consts\": {\"K3\": 3},\n" \
    " \"helpers\": [{\"name\": \"sq\", \"returns\": \"T\", \"params\": \"T v\", \"body\": \"return v * v;\"}],\n" \
    " \"params\": [{\"name\": \"x\", \"type\": \"T\", \"role\": \"in\"},\n" \
    "             {\"name\": \"y\", \"type\": \"T\", \"role\": \"out\"}],\n" \
    " \"body\": \"y = sq(x) + (T)K3;\"},\n" \
    "{\"name\": \"rw\", \"kind\": \"raw\", \"consts\": {\"STEP\": 2},\n" \
    " \"helpers\": [{\"name\": \"put\", \"params\": \"int64_t *p, int64_t v\", \"body\": \"*p = v * STEP;\"}],\n" \
    " \"params\": [{\"name\": \"y\", \"type\": \"i64\", \"role\": \"out\"}],\n" \
    " \"cpu\": \"for (size_t j = 0; j < n; j++) put(y + j, (int64_t)j);\"},\n" \
    "{\"name\": \"rs\", \"kind\": \"rows\",\n" \
    " \"helpers\": [{\"name\": \"total\", \"returns\": \"double\", \"params\": \"const double *v, size_t m\",\n" \
    "   \"body\": [\"double s = 0;\", \"for (size_t j = 0; j < m; j++) s += v[j];\", \"return s;\"]}],\n" \
    " \"params\": [{\"name\": \"x\", \"type\": \"f64\", \"role\": \"in\"},\n" \
    "             {\"name\": \"s\", \"type\": \"f64\", \"role\": \"out\", \"row\": \"one\"}],\n" \
    " \"body\": \"s[0] = total(x, n);\"},\n" \
    "{\"name\": \"rd\", \"kind\": \"reduction\", \"consts\": {\"SCALE\": 3},\n" \
    " \"helpers\": [{\"name\": \"sq\", \"returns\": \"double\", \"params\": \"double v\", \"body\": \"return v * v;\"}],\n" \
    " \"params\": [{\"name\": \"x\", \"type\": \"f64\", \"role\": \"in\"},\n" \
    "             {\"name\": \"out\", \"type\": \"f64\", \"role\": \"out\"}],\n" \
    " \"map\": \"sq(x) * SCALE\", \"combine\": \"a + b\", \"identity\": \"0\"}\n"

static const char exact_json[] =
    "{\"schema_version\": 1, \"kernels\": [\n"
    "{\"name\": \"grid3\", \"kind\": \"grid\",\n"
    " \"types\": {\"T\": [\"i64\", \"f64\"]},\n"
    " \"consts\": {\"WD\": 4, \"BIAS\": -3},\n"
    " \"params\": [\n"
    "  {\"name\": \"out\", \"type\": \"T\", \"role\": \"out\", \"len\": \"E0 * E1 * E2 * WD\"},\n"
    "  {\"name\": \"E0\", \"type\": \"i64\", \"role\": \"scalar\"},\n"
    "  {\"name\": \"E1\", \"type\": \"i64\", \"role\": \"scalar\"},\n"
    "  {\"name\": \"E2\", \"type\": \"i64\", \"role\": \"scalar\"},\n"
    "  {\"name\": \"k\", \"type\": \"T\", \"role\": \"scalar\"}],\n"
    " \"grid\": {\"x\": \"E0\", \"y\": \"E1\", \"z\": \"E2\"},\n"
    " \"setup\": [{\"name\": \"k2\", \"type\": \"T\", \"value\": \"twice(k) + (T)BIAS\"},\n"
    "           {\"name\": \"k3\", \"type\": \"T\", \"value\": \"k2 + (T)1\"}],\n"
    " \"scratch\": [{\"name\": \"s\", \"type\": \"T\", \"len\": \"WD * 2\"}],\n"
    " \"helpers\": [\n"
    "  {\"name\": \"twice\", \"returns\": \"T\", \"params\": \"T v\", \"body\": \"return add(v, v);\"},\n"
    "  {\"name\": \"add\", \"returns\": \"T\", \"params\": \"T p, T q\", \"body\": \"return p + q;\"}],\n"
    " \"body\": [\"int64_t at = ((x * E1 + y) * E2 + z) * WD;\",\n"
    "          \"for (int j = 0; j < WD; j++) s[j] += (T)(x * 100 + y * 10 + z);\",\n"
    "          \"for (int j = 0; j < WD; j++) out[at + j] = add(s[j], k3) + (T)j + s[WD + j];\"]},\n"
    "{\"name\": \"grid2\", \"kind\": \"grid\", \"targets\": [\"cpu\"],\n"
    " \"consts\": {\"WD\": 7},\n"
    " \"params\": [\n"
    "  {\"name\": \"out\", \"type\": \"i32\", \"role\": \"out\", \"len\": \"R * C\"},\n"
    "  {\"name\": \"R\", \"type\": \"i32\", \"role\": \"scalar\"},\n"
    "  {\"name\": \"C\", \"type\": \"u16\", \"role\": \"scalar\"}],\n"
    " \"grid\": {\"r\": \"R\", \"c\": \"C\"},\n"
    " \"helpers\": [{\"name\": \"add\", \"returns\": \"int32_t\", \"params\": \"int32_t p, int32_t q\",\n"
    "               \"body\": \"return p + q + WD;\"}],\n"
    " \"body\": \"out[r * C + c] = add((int32_t)r * 1000, (int32_t)c);\"},\n"
    KINDS_KERNELS "]}\n";

static void test_other_kinds(hk_context_t *ctx);

/* exact.json on a tier: every field of the grid kind, exactly; then the
 * helpers of the other kinds. */
static void test_exact_tier(hk_tier_t tier) {
  hk_context_t *ctx = context_of(tier);
  CHECK_MSG(hk_load_string(ctx, exact_json, sizeof exact_json - 1,
                           "exact.json") == HK_OK,
            "%s", hk_last_error());
  hk_kernel_t *k = NULL;
  /* 3-D, i64 and f64: out = x*100 + y*10 + z + (2k - 3 + 1) + j */
  int64_t E0 = 7, E1 = 5, E2 = 3;
  enum { N3 = 7 * 5 * 3 * 4 };
  for (int f = 0; f < 2; f++) {
    CHECK_INT_EQ(hk_kernel_find(ctx, f ? "grid3_f64" : "grid3_i64", &k), HK_OK);
    if (!k) continue;
    CHECK_INT_EQ(hk_kernel_tier(k), tier);
    int64_t oi[N3 + 1], ki = 5;
    double od[N3 + 1], kd = 5;
    for (int threads = 1; threads <= 2; threads++) {
      hk_set_threads(threads);
      oi[N3] = -1, od[N3] = -1;
      void *args[] = {f ? (void *)od : (void *)oi, &E0, &E1, &E2,
                      f ? (void *)&kd : (void *)&ki};
      CHECK_MSG(hk_call(k, 0, args) == HK_OK, "%s", hk_last_error());
      int bad = 0;
      for (int x = 0; x < E0; x++)
        for (int y = 0; y < E1; y++)
          for (int z = 0; z < E2; z++)
            for (int j = 0; j < 4; j++) {
              int at = ((x * 5 + y) * 3 + z) * 4 + j;
              double want = x * 100 + y * 10 + z + 8 + j;
              bad += f ? od[at] != want : oi[at] != (int64_t)want;
            }
      CHECK_MSG(!bad && oi[N3] == -1 && od[N3] == -1,
                "grid3 (%s) on tier %s, %d thread(s): %d wrong", f ? "f64" : "i64",
                hk_tier_name(tier), threads, bad);
    }
    /* an extent of 0 runs nothing; a negative one is an error */
    int64_t zero = 0, neg = -2;
    oi[0] = od[0] = -5;
    void *args0[] = {f ? (void *)od : (void *)oi, &E0, &zero, &E2,
                     f ? (void *)&kd : (void *)&ki};
    CHECK_INT_EQ(hk_call(k, 0, args0), HK_OK);
    CHECK(f ? od[0] == -5 : oi[0] == -5);
    void *argsn[] = {f ? (void *)od : (void *)oi, &E0, &E1, &neg,
                     f ? (void *)&kd : (void *)&ki};
    CHECK_INT_EQ(hk_call(k, 0, argsn), HK_EINVAL);
    /* named: the kernel, and the extents */
    CHECK_CONTAINS(hk_last_error(), hk_kernel_info(k)->name);
    CHECK_CONTAINS(hk_last_error(), "hold a negative one");
    char ext[64];
    snprintf(ext, sizeof ext, "(%lld, %lld, -2)", (long long)E0,
             (long long)E1);
    CHECK_CONTAINS(hk_last_error(), ext);
    /* the extents after a negative one are shown as they are (they were
     * shown as 1) */
    void *argsm[] = {f ? (void *)od : (void *)oi, &E0, &neg, &E2,
                     f ? (void *)&kd : (void *)&ki};
    CHECK_INT_EQ(hk_call(k, 0, argsm), HK_EINVAL);
    snprintf(ext, sizeof ext, "(%lld, -2, %lld)", (long long)E0,
             (long long)E2);
    CHECK_CONTAINS(hk_last_error(), ext);
    CHECK(f ? od[0] == -5 : oi[0] == -5);
    if (f) continue;
    hk_array_t arr[5];
    hk_array_init(&arr[0], oi, HK_I64, 1, (int64_t[]){N3});
    void *const sc[4] = {&E0, &E1, &neg, &ki};
    for (int i = 0; i < 4; i++) hk_array_init(&arr[i + 1], sc[i], HK_I64, 0, NULL);
    CHECK_INT_EQ(hk_call_arrays(k, arr, NULL), HK_EINVAL);
    CHECK_CONTAINS(hk_last_error(), "negative");
  }
  /* 2-D over 150,000 indices: cut into tasks mid-row on 2 threads; a u16
   * extent; the other kernel's helper and const of the same names */
  CHECK_INT_EQ(hk_kernel_find(ctx, "grid2", &k), HK_OK);
  if (k) {
    int32_t R = 300;
    uint16_t C = 500;
    int32_t *out = malloc(300 * 500 * sizeof *out);
    void *args[] = {out, &R, &C};
    for (int threads = 1; threads <= 2; threads++) {
      hk_set_threads(threads);
      memset(out, 0, 300 * 500 * sizeof *out);
      CHECK_INT_EQ(hk_call(k, 0, args), HK_OK);
      int bad = 0;
      for (int r = 0; r < 300; r++)
        for (int c = 0; c < 500; c++) bad += out[r * 500 + c] != r * 1000 + c + 7;
      CHECK_MSG(!bad, "grid2 on tier %s, %d thread(s): %d wrong",
                hk_tier_name(tier), threads, bad);
    }
    /* over arrays: contiguous buffers, scalars as 0-d arrays; the out
     * shape is its len */
    hk_array_t a[3];
    hk_array_init(&a[0], out, HK_I32, 2, (int64_t[]){300, 500});
    hk_array_init(&a[1], &R, HK_I32, 0, NULL);
    hk_array_init(&a[2], &C, HK_U16, 0, NULL);
    memset(out, 0, 300 * 500 * sizeof *out);
    CHECK_MSG(hk_call_arrays(k, a, NULL) == HK_OK, "%s", hk_last_error());
    CHECK(out[0] == 7 && out[299 * 500 + 499] == 299000 + 499 + 7);
    int nd = 0;
    int64_t shp[HK_MAX_DIMS] = {0};
    CHECK_INT_EQ(hk_call_out_shape(k, a, NULL, 0, &nd, shp), HK_OK);
    CHECK(nd == 2 && shp[0] == 300 && shp[1] == 500); /* "R * C" */
    free(out);
  }
  hk_set_threads(0);
  test_other_kinds(ctx);
  hk_context_destroy(ctx);
}

/* ---- Helpers and consts in the other kinds -------------------------------------------- */

static void test_other_kinds(hk_context_t *ctx) {
  hk_kernel_t *k;
  if (hk_kernel_find(ctx, "ew_f32", &k) == HK_OK) {
    float x[5] = {0, 1, -2, 3, 0.5f}, y[5];
    void *args[] = {x, y};
    CHECK_INT_EQ(hk_call(k, 5, args), HK_OK);
    CHECK(y[0] == 3 && y[1] == 4 && y[2] == 7 && y[3] == 12 && y[4] == 3.25f);
  } else {
    CHECK_MSG(0, "ew_f32: %s", hk_last_error());
  }
  if (hk_kernel_find(ctx, "ew_f64", &k) == HK_OK) {
    double x[2] = {1.5, -1}, y[2];
    void *args[] = {x, y};
    CHECK_INT_EQ(hk_call(k, 2, args), HK_OK);
    CHECK(y[0] == 5.25 && y[1] == 4);
  }
  if (hk_kernel_find(ctx, "rw", &k) == HK_OK) {
    int64_t y[4] = {9, 9, 9, 9};
    void *args[] = {y};
    CHECK_INT_EQ(hk_call(k, 3, args), HK_OK);
    CHECK(y[0] == 0 && y[1] == 2 && y[2] == 4 && y[3] == 9);
  }
  if (hk_kernel_find(ctx, "rs", &k) == HK_OK) {
    double x[6] = {1, 2, 3, 4, 5, 6}, s[2];
    void *args[] = {x, s};
    CHECK_INT_EQ(hk__call_rows_cpu(k, 2, 3, args), HK_OK);
    CHECK(s[0] == 6 && s[1] == 15);
  }
  if (hk_kernel_find(ctx, "rd", &k) == HK_OK) { /* a reduction's map */
    double x[3] = {1, 2, 3}, out = 0;
    void *args[] = {x, &out};
    CHECK_INT_EQ(hk_call(k, 3, args), HK_OK);
    CHECK(out == 42);
  } else {
    CHECK_MSG(0, "rd: %s", hk_last_error());
  }
}

/* ---- Errors ----------------------------------------------------------------------- */

typedef struct bad_case {
  const char *what, *json, *msg; /* msg: the located error, in full */
} bad_case;

#define G "{\"schema_version\": 1, \"name\": \"g\", \"kind\": \"grid\",\n"
#define P " \"params\": [{\"name\": \"y\", \"type\": \"f32\", \"role\": \"out\", \"len\": \"N\"},\n" \
          "  {\"name\": \"N\", \"type\": \"i64\", \"role\": \"scalar\"}],\n"
#define GRID " \"grid\": {\"i\": \"N\"},\n"
#define BODY " \"body\": \"y[i] = 1;\"}"

static const bad_case bad_cases[] = {
    {"a helper calling printf",
     G P GRID " \"helpers\": [{\"name\": \"f\", \"body\": \"printf(\\\"x\\\");\"}],\n" BODY,
     "<bad.json>:5:37: error: helpers[0].body: calls 'printf', which is not "
     "allowed: kernel code may call only the C99 <math.h> functions and the "
     "kernel's helpers (see schemas/README.md)"},
    {"a helper calling itself",
     G P GRID " \"helpers\": [{\"name\": \"f\", \"returns\": \"int\", \"params\": \"int v\",\n"
     "   \"body\": \"return v ? f(v - 1) : 0;\"}],\n" BODY,
     "<bad.json>:6:24: error: helpers[0].body: helper 'f' calls itself: "
     "recursion is not allowed"},
    {"a helper of a type without a return",
     G P GRID " \"helpers\": [{\"name\": \"f\", \"returns\": \"float\", \"params\": \"float v\",\n"
     "   \"body\": \"float w = v * 2; (void)w;\"}],\n" BODY,
     "<bad.json>:6:13: error: helpers[0].body: helper 'f' returns float but "
     "its body has no return statement"},
    {"two helpers calling each other",
     G P GRID " \"helpers\": [{\"name\": \"f\", \"body\": \"g();\"},\n"
     "  {\"name\": \"g\", \"body\": \"int u = 0; (void)u; f();\"}],\n" BODY,
     "<bad.json>:5:37: error: helpers[0].body: helper 'f' calls 'g', which "
     "calls 'f' again: recursion is not allowed"},
    {"a body calling an unknown function",
     G P GRID " \"body\": \"y[i] = h(1);\"}",
     "<bad.json>:5:18: error: body: calls 'h', which is not allowed: kernel "
     "code may call only the C99 <math.h> functions (see schemas/README.md)"},
    {"scratch too large",
     G P GRID " \"consts\": {\"TILE\": 64},\n"
     " \"scratch\": [{\"name\": \"s\", \"type\": \"f64\", \"len\": \"TILE * TILE\"}],\n" BODY,
     "<bad.json>:6:50: error: scratch[0].len: makes the scratch arrays too "
     "large (4096 elements; at most 16384 bytes in all"},
    {"scratch len from a scalar",
     G P GRID " \"scratch\": [{\"name\": \"s\", \"type\": \"f32\", \"len\": \"N\"}],\n" BODY,
     "<bad.json>:5:51: error: scratch[0].len: 'N' is not one of the kernel's "
     "consts: this count is fixed when the kernel is compiled"},
    {"an index space of rank 4",
     G P " \"grid\": {\"a1\": \"N\", \"a2\": \"N\", \"a3\": \"N\", \"a4\": \"N\"},\n" BODY,
     "<bad.json>:4:10: error: grid: has 4 indices; an index space has 1, 2 "
     "or 3"},
    {"an empty index space",
     G P " \"grid\": {},\n" BODY,
     "<bad.json>:4:10: error: grid: has 0 indices; an index space has 1, 2 "
     "or 3"},
    {"no grid",
     G P BODY,
     "<bad.json>:1:1: error: kernel: missing required field \"grid\""},
    {"grid on an elementwise kernel",
     "{\"schema_version\": 1, \"name\": \"e\", \"kind\": \"elementwise\",\n"
     " \"params\": [{\"name\": \"y\", \"type\": \"f32\", \"role\": \"out\"}],\n"
     " \"grid\": {\"j\": \"n\"}, \"body\": \"y = 1;\"}",
     "<bad.json>:3:2: error: grid: this field belongs to grid kernels, and "
     "this kernel's kind is elementwise"},
    {"an extent from a float scalar",
     G " \"params\": [{\"name\": \"y\", \"type\": \"f32\", \"role\": \"out\"},\n"
     "  {\"name\": \"s\", \"type\": \"f32\", \"role\": \"scalar\"}],\n"
     " \"grid\": {\"i\": \"s\"},\n" BODY,
     "<bad.json>:4:17: error: grid.i: 's' is a floating-point scalar"},
    {"an index named like a parameter",
     G P " \"grid\": {\"y\": \"N\"},\n" BODY,
     "<bad.json>:4:11: error: grid.y: \"y\" is already the name of a "
     "parameter or of another declaration of this kernel; choose another "
     "name"},
    {"an index named n",
     G P " \"grid\": {\"n\": \"N\"},\n \"body\": \"y[n] = 1;\"}",
     "<bad.json>:4:11: error: grid.n: \"n\" is reserved: n is the element "
     "count in kernel code (an index may be called i, a, b, acc, row or "
     "rows, which mean nothing in a grid)"},
    {"an extent from a setup value",
     G P " \"setup\": [{\"name\": \"h\", \"type\": \"i64\", \"value\": \"N / 2\"}],\n"
     " \"grid\": {\"i\": \"h\"},\n" BODY,
     "<bad.json>:5:17: error: grid.i: 'h' is a setup value, which the "
     "kernel's code computes: lengths and extents are known before it runs "
     "(integer scalars, consts and n)"},
    {"a setup value naming a buffer",
     G P GRID " \"setup\": [{\"name\": \"v\", \"type\": \"f32\", \"value\": \"y[0]\"}],\n" BODY,
     "<bad.json>:5:51: error: setup[0].value: 'y' is not one of the kernel's "
     "scalars, consts, earlier setup values and n"},
    {"a const that is not an integer",
     G P GRID " \"consts\": {\"TILE\": 1.5},\n" BODY,
     "<bad.json>:5:21: error: consts.TILE: expected an integer from "
     "-2147483648 to 2147483647"},
    {"a const not in capitals",
     G P GRID " \"consts\": {\"tile\": 4},\n" BODY,
     "<bad.json>:5:13: error: consts.tile: \"tile\" is not a const name: "
     "capitals, digits and '_'"},
    {"a helper's parameter without a name",
     G P GRID " \"helpers\": [{\"name\": \"f\", \"params\": \"float v, const float *\", \"body\": \"\"}],\n" BODY,
     "<bad.json>:5:48: error: helpers[0].params: a parameter has no name: "
     "each is a type and a name"},
    {"a helper's params with a body",
     G P GRID " \"helpers\": [{\"name\": \"f\", \"params\": \"int v) { return; } void q(int w\", \"body\": \"\"}],\n" BODY,
     "<bad.json>:5:44: error: helpers[0].params: ')' is not allowed in a "
     "helper's params"},
};

static void test_errors(void) {
  hk_context_t *ctx = context_of(HK_TIER_JIT);
  for (size_t i = 0; i < HK_COUNT(bad_cases); i++) {
    const bad_case *c = &bad_cases[i];
    int rc = hk_load_string(ctx, c->json, strlen(c->json), "bad.json");
    CHECK_MSG(rc == HK_ESCHEMA, "%s: loaded (%d)", c->what, rc);
    CHECK_MSG(strstr(hk_last_error(), c->msg) != NULL,
              "%s: the error\n%s\nlacks\n%s", c->what, hk_last_error(),
              c->msg);
  }
  hk_context_destroy(ctx);
}

/* ---- Shapes from lens (lens.c) ---------------------------------------------------------- */

static const char lens_json[] =
    "{\"schema_version\": 1, \"kernels\": [\n"
    "{\"name\": \"lens_t\", \"kind\": \"raw\", \"targets\": [\"cpu\"],\n"
    " \"params\": [\n"
    "  {\"name\": \"A\", \"type\": \"f32\", \"role\": \"in\", \"len\": \"rows * cols\"},\n"
    "  {\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\", \"len\": \"cols\"},\n"
    "  {\"name\": \"y\", \"type\": \"f32\", \"role\": \"out\", \"len\": \"rows * 2 * cols\"},\n"
    "  {\"name\": \"z\", \"type\": \"f32\", \"role\": \"out\", \"len\": \"rows + cols\"},\n"
    "  {\"name\": \"w\", \"type\": \"f32\", \"role\": \"out\", \"len\": \"(rows) * 2\"},\n"
    "  {\"name\": \"v\", \"type\": \"f32\", \"role\": \"out\"},\n"
    "  {\"name\": \"rows\", \"type\": \"i32\", \"role\": \"scalar\"},\n"
    "  {\"name\": \"cols\", \"type\": \"u8\", \"role\": \"scalar\"},\n"
    "  {\"name\": \"s\", \"type\": \"f32\", \"role\": \"scalar\"},\n"
    "  {\"name\": \"t\", \"type\": \"i64\", \"role\": \"scalar\"}],\n"
    " \"cpu\": [\"for (int64_t r = 0; r < rows; r++)\",\n"
    "         \"  for (int64_t c = 0; c < cols; c++) {\",\n"
    "         \"    y[(2 * r) * cols + c] = A[r * cols + c];\",\n"
    "         \"    y[(2 * r + 1) * cols + c] = x[c] * s + (float)t;\",\n"
    "         \"  }\"]},\n"
    "{\"name\": \"lens_ew\", \"kind\": \"elementwise\", \"targets\": [\"cpu\"],\n"
    " \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},\n"
    "  {\"name\": \"y\", \"type\": \"f32\", \"role\": \"out\"},\n"
    "  {\"name\": \"k\", \"type\": \"i32\", \"role\": \"scalar\"}],\n"
    " \"body\": \"y = x + k;\"}]}\n";

/* A raw kernel's outputs shaped by their lens' factors, and the scalars
 * its in arrays' shapes give (hk_kernel_scalar_from_shapes). */
static void test_lens_shapes(void) {
  hk_context_t *ctx = context_of(HK_TIER_JIT);
  CHECK_MSG(hk_load_string(ctx, lens_json, sizeof lens_json - 1,
                           "lens.json") == HK_OK,
            "%s", hk_last_error());
  hk_kernel_t *k = NULL, *ew = NULL;
  CHECK_INT_EQ(hk_kernel_find(ctx, "lens_t", &k), HK_OK);
  CHECK_INT_EQ(hk_kernel_find(ctx, "lens_ew", &ew), HK_OK);
  if (!k || !ew) {
    hk_context_destroy(ctx);
    return;
  }
  enum { A_, X_, Y_, Z_, W_, V_, ROWS, COLS, S_, T_, NP };
  float A[12], x[5], y[24], z[7], w[6], v[12];
  for (int i = 0; i < 12; i++) A[i] = (float)i;
  for (int i = 0; i < 5; i++) x[i] = (float)(10 + i);
  int32_t rows = 3;
  uint8_t cols = 4;
  float sc = 2;
  int64_t t = 1;
  hk_array_t a[NP];
  hk_array_init(&a[A_], A, HK_F32, 2, (int64_t[]){3, 4});
  hk_array_init(&a[X_], x, HK_F32, 1, (int64_t[]){4});
  hk_array_init(&a[ROWS], &rows, HK_I32, 0, NULL);
  hk_array_init(&a[COLS], &cols, HK_U8, 0, NULL);
  hk_array_init(&a[S_], &sc, HK_F32, 0, NULL);
  hk_array_init(&a[T_], &t, HK_I64, 0, NULL);
  /* the scalars that A's (3, 4) and x's (4,) give */
  int64_t val = -1;
  CHECK_INT_EQ(hk_kernel_scalar_from_shapes(k, a, ROWS, &val), HK_OK);
  CHECK(val == 3);
  CHECK_INT_EQ(hk_kernel_scalar_from_shapes(k, a, COLS, &val), HK_OK);
  CHECK(val == 4);
  /* not integers, named by no len, not a raw or grid kernel */
  CHECK_INT_EQ(hk_kernel_scalar_from_shapes(k, a, S_, &val), HK_EINVAL);
  CHECK_CONTAINS(hk_last_error(), "not an integer scalar");
  CHECK_INT_EQ(hk_kernel_scalar_from_shapes(k, a, T_, &val), HK_ENOTFOUND);
  CHECK_CONTAINS(hk_last_error(), "no in or inout buffer's len names scalar 't'");
  CHECK_INT_EQ(hk_kernel_scalar_from_shapes(k, a, A_, &val), HK_EINVAL);
  hk_array_t e[3];
  hk_array_init(&e[0], x, HK_F32, 1, (int64_t[]){4});
  hk_array_init(&e[1], y, HK_F32, 1, (int64_t[]){4});
  hk_array_init(&e[2], &rows, HK_I32, 0, NULL);
  CHECK_INT_EQ(hk_kernel_scalar_from_shapes(ew, e, 2, &val), HK_ENOTFOUND);
  CHECK_CONTAINS(hk_last_error(), "only raw and grid kernels");
  /* x of (5,) against A's 4 columns: both named */
  a[X_].shape[0] = 5;
  CHECK_INT_EQ(hk_kernel_scalar_from_shapes(k, a, COLS, &val), HK_EINVAL);
  CHECK_CONTAINS(hk_last_error(), "scalar 'cols' is 4 by axis 1 of A (3, 4) "
                                  "(len rows * cols), but 5 by axis 0 of x (5,)");
  a[X_].shape[0] = 4;
  /* A flat: rows is named, but A has one axis, not two; cols still
   * comes from x */
  hk_array_init(&a[A_], A, HK_F32, 1, (int64_t[]){12});
  CHECK_INT_EQ(hk_kernel_scalar_from_shapes(k, a, ROWS, &val), HK_EINVAL);
  CHECK_CONTAINS(hk_last_error(), "missing scalar 'rows' (i32): give its "
                                  "value, or give A with one axis per factor "
                                  "of its len, rows * cols (2 axes; it has 1)");
  CHECK_INT_EQ(hk_kernel_scalar_from_shapes(k, a, COLS, &val), HK_OK);
  CHECK(val == 4);
  /* the outputs' shapes: y (3, 2, 4) from its factors; z (7,) (a sum),
   * w (6,) (parentheses); v without a len: A's shape, flat or
   * not */
  struct {
    int param, nd;
    int64_t shape[3];
  } want[] = {{Y_, 3, {3, 2, 4}}, {Z_, 1, {7}}, {W_, 1, {6}}, {V_, 1, {12}}};
  for (int flat = 1; flat >= 0; flat--) {
    if (!flat) hk_array_init(&a[A_], A, HK_F32, 2, (int64_t[]){3, 4});
    want[3].nd = flat ? 1 : 2;
    want[3].shape[0] = flat ? 12 : 3;
    want[3].shape[1] = 4;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
      int nd = -1;
      int64_t shp[HK_MAX_DIMS] = {0};
      CHECK_INT_EQ(hk_call_out_shape(k, a, NULL, want[i].param, &nd, shp),
                   HK_OK);
      CHECK_MSG(nd == want[i].nd &&
                    !memcmp(shp, want[i].shape, sizeof(int64_t) * (size_t)nd),
                "param %d: %d axes (%lld, %lld, ...)", want[i].param, nd,
                (long long)shp[0], (long long)shp[1]);
    }
  }
  /* a call with the outputs in those shapes */
  hk_array_init(&a[Y_], y, HK_F32, 3, (int64_t[]){3, 2, 4});
  hk_array_init(&a[Z_], z, HK_F32, 1, (int64_t[]){7});
  hk_array_init(&a[W_], w, HK_F32, 1, (int64_t[]){6});
  hk_array_init(&a[V_], v, HK_F32, 2, (int64_t[]){3, 4});
  CHECK_MSG(hk_call_arrays(k, a, NULL) == HK_OK, "%s", hk_last_error());
  CHECK(y[0] == 0 && y[3] == 3 && y[4] == 21 && y[7] == 27 && y[8] == 4 &&
        y[23] == 27);
  /* an out that is an in's array: refused, saying why for this kind */
  hk_array_init(&a[V_], A, HK_F32, 2, (int64_t[]){3, 4});
  CHECK_INT_EQ(hk_call_arrays(k, a, NULL), HK_EINVAL);
  CHECK_CONTAINS(hk_last_error(), "parameter 'v' overlaps parameter 'A' in "
                                  "memory (a raw or grid body may read any "
                                  "element of one after writing the other's");
  hk_array_init(&a[V_], v, HK_F32, 2, (int64_t[]){3, 4});
  /* a u8 scalar's value from a shape too large for it is the caller's
   * to refuse (hk run: out of range) */
  hk_array_init(&a[A_], A, HK_F32, 2, (int64_t[]){1, 300});
  hk_array_init(&a[X_], x, HK_F32, 1, (int64_t[]){300});
  CHECK_INT_EQ(hk_kernel_scalar_from_shapes(k, a, COLS, &val), HK_OK);
  CHECK(val == 300);
  hk_context_destroy(ctx);
}

int main(void) {
  test_errors();
  test_lens_shapes();
  for (int t = 0; t < 2; t++) {
    hk_tier_t tier = t ? HK_TIER_OPT : HK_TIER_JIT;
    test_exact_tier(tier);
  }
  test_examples();
  CHECK_DONE();
}
