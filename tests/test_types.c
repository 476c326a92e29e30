/* test_types.c — f16, bf16 and bool end to end: the conversions of the
 * generated code, every tier, the stdlib's instances of these types.
 *
 *  1. conversions: every f16 and every bf16 bit pattern to f32 and back,
 *     and about 4 million f32 values (every f16/bf16 neighbour, halfway
 *     point and one past it, in every binade; subnormals; overflow; NaNs
 *     with and without payload; random bits) to f16 and bf16, through the
 *     stdlib's cast kernels, against references written here the plain
 *     way (integer arithmetic, another method than the prelude's), and
 *     against NumPy's float16 when /usr/bin/python3 (or HK_PYTHON) has
 *     NumPy (else said, and only the references are used).
 *  2. tiers: a kernel file of f16/bf16/bool kernels (casts, gelu, axpy with
 *     an f16 scalar, where with a bool mask, sums of f16 and bf16 over
 *     2^20 elements on the thread pool, any, a raw kernel on the storage
 *     pointers calling the conversions) runs on tier jit (libtcc) and tier
 *     opt (cc): bit for bit what the stdlib gives.
 *  3. the stdlib's f16 and bf16 instances: each equals its f32 twin run on
 *     the widened inputs, rounded (the f16 kernels compute in f32);
 *     reductions accumulate in float the same way.
 *  4. the stdlib's bool kernels (logic.json, fill_bool, cast to and from
 *     bool) against references, with bool bytes other than 0 and 1 read as
 *     1; no kernel ever stores anything but 0 or 1.
 *  5. the format: f16/bf16/bool names in "types", a len over an f16 or bool
 *     scalar refused, the conversions callable from code.
 * The temp tree and helpers: tests/registry_fixture.h.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hk.h"
#include "registry_fixture.h"

/* ---- References -------------------------------------------------------- */

static uint32_t f2u(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static float u2f(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* f16 bits to f32 bits, field by field. */
static uint32_t ref_f16_to_f32(uint16_t h) {
  uint32_t s = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 31u, m = h & 1023u;
  if (e == 31) return s | 0x7f800000u | m << 13; /* inf, NaN: payload kept */
  if (e != 0) return s | (e + 112u) << 23 | m << 13;
  if (m == 0) return s;
  /* subnormal: m * 2^-24, normalised */
  int sh = 0;
  while (!(m & 0x400u)) m <<= 1, sh++;
  return s | (uint32_t)(113 - sh) << 23 | (m & 1023u) << 13;
}

/* The value M * 2^E rounded to nearest even at unit 2^U, as an integer
 * count of units. */
static uint64_t round_units(uint64_t M, int E, int U) {
  if (U <= E) return M << (E - U);
  int sh = U - E;
  if (sh >= 60) return 0;
  uint64_t q = M >> sh, rem = M & ((1ull << sh) - 1), half = 1ull << (sh - 1);
  if (rem > half || (rem == half && (q & 1))) q++;
  return q;
}

/* f32 to f16 bits: NaN kept as NumPy does, else the exact value rounded to
 * nearest even with a unit fixed by the value's binade. */
static uint16_t ref_f32_to_f16(float f) {
  uint32_t u = f2u(f), s = (u >> 16) & 0x8000u, e = (u >> 23) & 255u,
           m = u & 0x7fffffu;
  if (e == 255) {
    if (!m) return (uint16_t)(s | 0x7c00u);
    uint32_t p = m >> 13;
    return (uint16_t)(s | 0x7c00u | (p ? p : 1u));
  }
  uint64_t M = e ? (m | 0x800000u) : m;
  int E = e ? (int)e - 150 : -149;
  if (!M) return (uint16_t)s;
  int b = E; /* the binade: floor(log2 value) */
  for (uint64_t t = M; t > 1; t >>= 1) b++;
  int eh = b < -14 ? -14 : b;
  uint64_t q = round_units(M, E, eh - 10);
  uint64_t bits = (uint64_t)(eh + 15) * 1024u + q - 1024u;
  if (bits >= 0x7c00u) bits = 0x7c00u;
  return (uint16_t)(s | bits);
}

static uint32_t ref_bf16_to_f32(uint16_t h) { return (uint32_t)h << 16; }

static uint16_t ref_f32_to_bf16(float f) {
  uint32_t u = f2u(f), r = u >> 16, rem = u & 0xffffu;
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)(r | !(r & 0x7fu));
  if (rem > 0x8000u || (rem == 0x8000u && (r & 1))) r++;
  return (uint16_t)r;
}

static int is_nan16(uint16_t h) { return (h & 0x7fffu) > 0x7c00u; }
static int is_nanb16(uint16_t h) { return (h & 0x7fffu) > 0x7f80u; }

/* ---- Calls --------------------------------------------------------------- */

/* The stdlib context (no plugin folders) and the test contexts. */
static hk_context_t *g_std;

static hk_kernel_t *kfind(hk_context_t *ctx, const char *name) {
  hk_kernel_t *k = NULL;
  int rc = hk_kernel_find(ctx, name, &k);
  CHECK_MSG(rc == HK_OK, "hk_kernel_find(%s): %s", name, hk_last_error());
  return rc == HK_OK ? k : NULL;
}

/* Calls name in ctx; a failed check (and 0) when it cannot. */
static int call(hk_context_t *ctx, const char *name, size_t n,
                void *const *args) {
  hk_kernel_t *k = kfind(ctx, name);
  if (!k) return 0;
  int rc = hk_call(k, n, args);
  CHECK_MSG(rc == HK_OK, "hk_call(%s): %s", name, hk_last_error());
  return rc == HK_OK;
}

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) {
    fprintf(stderr, "out of memory\n");
    exit(2);
  }
  return p;
}

/* ---- 1. Conversions ------------------------------------------------------- */

/* The f32 values of part 1: for every sign, exponent and top 10 mantissa
 * bits, low bits at and around the f16 rounding points; bf16's points for
 * every upper half; specials; random bits. */
static uint32_t *g_vals;
static size_t g_nvals;

static void make_values(void) {
  static const uint32_t lo16[] = {0, 1, 0xfff, 0x1000, 0x1001, 0x1fff};
  static const uint32_t lo_b[] = {0x7fff, 0x8000, 0x8001, 0xffff};
  size_t cap = 512u * 1024u * 6u + 65536u * 4u + (1u << 20) + 64;
  g_vals = xmalloc(cap * sizeof *g_vals);
  size_t n = 0;
  for (uint32_t se = 0; se < 512; se++)
    for (uint32_t top = 0; top < 1024; top++)
      for (size_t l = 0; l < COUNT(lo16); l++)
        g_vals[n++] = se << 23 | top << 13 | lo16[l];
  for (uint32_t hi = 0; hi < 65536; hi++)
    for (size_t l = 0; l < COUNT(lo_b); l++) g_vals[n++] = hi << 16 | lo_b[l];
  uint64_t s = 0x9e3779b97f4a7c15u;
  for (size_t i = 0; i < (1u << 20); i++) g_vals[n++] = (uint32_t)rnd(&s);
  const uint32_t special[] = {
      0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00000,
      0x7f800001, 0xff800001, 0x7fa00000, 0x7f802000, 0x7fbfffff, 0x00000001,
      0x807fffff, 0x477fefff, 0x477ff000, 0x477ff001, 0x47800000, 0x7f7fffff,
      0xff7fffff, 0x33000000, 0x33000001, 0xb3000000, 0x33800000, 0x387fc000,
      0x387fe000, 0x38800000, 0x3f800000, 0x3f801000, 0x3f803000};
  for (size_t i = 0; i < COUNT(special); i++) g_vals[n++] = special[i];
  g_nvals = n;
}

/* Every f16 (bf16 with bf) pattern through ctx's cast kernels (PREFIX
 * "cast" or "ty_cast") to f32 and back; every value of g_vals to f16 and
 * bf16. *to16, *to_b hold the f32 -> 16-bit results for NumPy. */
static void check_conversions(hk_context_t *ctx, const char *prefix,
                              const char *what, uint16_t *to16,
                              uint16_t *to_b) {
  uint16_t *h = xmalloc(65536 * 2), *back = xmalloc(65536 * 2);
  uint32_t *f = xmalloc(65536 * 4);
  char name[64];
  for (int bf = 0; bf < 2; bf++) {
    const char *t = bf ? "bf16" : "f16";
    for (uint32_t i = 0; i < 65536; i++) h[i] = (uint16_t)i;
    memset(f, 0xa5, 65536 * 4);
    memset(back, 0xa5, 65536 * 2);
    snprintf(name, sizeof name, "%s_%s_f32", prefix, t);
    void *a1[] = {h, f};
    if (!call(ctx, name, 65536, a1)) continue;
    snprintf(name, sizeof name, "%s_f32_%s", prefix, t);
    void *a2[] = {f, back};
    if (!call(ctx, name, 65536, a2)) continue;
    int bad = 0, bad_back = 0;
    for (uint32_t i = 0; i < 65536; i++) {
      uint32_t want = bf ? ref_bf16_to_f32((uint16_t)i) : ref_f16_to_f32((uint16_t)i);
      if (f[i] != want && bad++ < 5)
        fprintf(stderr, "%s: %s 0x%04x -> f32 0x%08x, expected 0x%08x\n", what,
                t, i, f[i], want);
      if (back[i] != i && bad_back++ < 5)
        fprintf(stderr, "%s: %s 0x%04x -> f32 -> 0x%04x\n", what, t, i,
                back[i]);
    }
    CHECK_MSG(bad == 0, "%s: %d of the 65536 %s patterns convert wrongly to f32",
              what, bad, t);
    CHECK_MSG(bad_back == 0,
              "%s: %d of the 65536 %s patterns do not come back from f32", what,
              bad_back, t);
  }
  free(h);
  free(back);
  free(f);

  for (int bf = 0; bf < 2; bf++) {
    uint16_t *out = bf ? to_b : to16;
    memset(out, 0xa5, g_nvals * 2);
    snprintf(name, sizeof name, "%s_f32_%s", prefix, bf ? "bf16" : "f16");
    void *a[] = {g_vals, out};
    if (!call(ctx, name, g_nvals, a)) continue;
    int bad = 0;
    for (size_t i = 0; i < g_nvals; i++) {
      float v = u2f(g_vals[i]);
      uint16_t want = bf ? ref_f32_to_bf16(v) : ref_f32_to_f16(v);
      if (out[i] != want && bad++ < 5)
        fprintf(stderr, "%s: f32 0x%08x -> %s 0x%04x, expected 0x%04x\n", what,
                g_vals[i], bf ? "bf16" : "f16", out[i], want);
    }
    CHECK_MSG(bad == 0, "%s: %d of %zu f32 values round wrongly to %s", what,
              bad, g_nvals, bf ? "bf16" : "f16");
  }
}

/* The public host conversions (hk.h) against the references, from floats
 * and from doubles near the rounding points (against NumPy in
 * check_numpy). */
static double *g_dbl;
static uint16_t *g_dbl16;
static size_t g_ndbl;

static void check_host_conversions(void) {
  int bad = 0;
  for (uint32_t h = 0; h < 65536; h++) {
    double d = hk_f16_to_double((uint16_t)h), b = hk_bf16_to_double((uint16_t)h);
    float f = (float)d, fb = (float)b;
    uint32_t want = ref_f16_to_f32((uint16_t)h), want_b = ref_bf16_to_f32((uint16_t)h);
    if (is_nan16((uint16_t)h) || is_nanb16((uint16_t)h)) {
      /* double <-> float quiets a signalling NaN: NaN, sign kept */
      if (is_nan16((uint16_t)h))
        bad += !isnan(f) || !is_nan16(hk_f16_from_double(d)) ||
               (hk_f16_from_double(d) ^ h) >> 15;
      if (is_nanb16((uint16_t)h))
        bad += !isnan(fb) || !is_nanb16(hk_bf16_from_double(b)) ||
               (hk_bf16_from_double(b) ^ h) >> 15;
      if (is_nan16((uint16_t)h) && (h & 0x0200u)) /* a quiet one: intact */
        bad += hk_f16_from_double(d) != h;
      if (!is_nan16((uint16_t)h))
        bad += f2u(f) != want || hk_f16_from_double(d) != h;
      if (!is_nanb16((uint16_t)h))
        bad += f2u(fb) != want_b || hk_bf16_from_double(b) != h;
      continue;
    }
    bad += f2u(f) != want || f2u(fb) != want_b;
    bad += hk_f16_from_double(d) != h || hk_bf16_from_double(b) != h;
  }
  CHECK_MSG(bad == 0, "hk_f16/bf16_to/from_double: %d of 65536 patterns", bad);
  bad = 0;
  for (size_t i = 0; i < g_nvals; i++) {
    float v = u2f(g_vals[i]);
    if (isnan(v) && !(g_vals[i] & 0x00400000u)) continue; /* quieted */
    bad += hk_f16_from_double(v) != ref_f32_to_f16(v);
    bad += hk_bf16_from_double(v) != ref_f32_to_bf16(v);
  }
  CHECK_MSG(bad == 0, "hk_f16/bf16_from_double: %d of %zu floats", bad,
            g_nvals);
  /* doubles just off every f16 halfway point: rounded once, not twice */
  g_ndbl = 4 * 65536;
  g_dbl = xmalloc(g_ndbl * 8);
  g_dbl16 = xmalloc(g_ndbl * 2);
  size_t n = 0;
  for (uint32_t h = 0; h < 65536; h++) {
    double a = hk_f16_to_double((uint16_t)h),
           b = hk_f16_to_double((uint16_t)(h + 1));
    if (!(a == a) || !(b == b) || (h & 0x7fff) >= 0x7c00 || ((h + 1) & 0x7fff) == 0) {
      g_dbl[n++] = a;
      g_dbl[n++] = -a;
      g_dbl[n++] = a * 3;
      g_dbl[n++] = a / 3;
      continue;
    }
    double mid = a + (b - a) / 2;
    g_dbl[n++] = mid;
    g_dbl[n++] = nextafter(mid, a);
    g_dbl[n++] = nextafter(mid, b);
    g_dbl[n++] = a + (b - a) / 4;
  }
  for (size_t i = 0; i < n; i++) g_dbl16[i] = hk_f16_from_double(g_dbl[i]);
  g_ndbl = n;
}

/* The references against NumPy's float16: every f16 pattern to f32 and
 * back, and every f32 value of g_vals to f16 (to16: what the stdlib gave,
 * already equal to the reference). Skipped, with a note, without NumPy. */
static void check_numpy(const uint16_t *to16) {
  const char *py = getenv("HK_PYTHON");
  if (!py || !*py) py = "/usr/bin/python3";
  if (access(py, X_OK) != 0) py = "python3";
  PATH(vals, "vals.bin");
  PATH(got, "got.bin");
  PATH(ref, "f16ref.bin");
  PATH(script, "check.py");
  FILE *fp = fopen(vals, "wb");
  CHECK(fp && fwrite(g_vals, 4, g_nvals, fp) == g_nvals && fclose(fp) == 0);
  fp = fopen(got, "wb");
  CHECK(fp && fwrite(to16, 2, g_nvals, fp) == g_nvals && fclose(fp) == 0);
  fp = fopen(P("dbl.bin"), "wb");
  CHECK(fp && fwrite(g_dbl, 8, g_ndbl, fp) == g_ndbl && fclose(fp) == 0);
  fp = fopen(P("dbl16.bin"), "wb");
  CHECK(fp && fwrite(g_dbl16, 2, g_ndbl, fp) == g_ndbl && fclose(fp) == 0);
  uint32_t *r = xmalloc(65536 * 4);
  for (uint32_t i = 0; i < 65536; i++) r[i] = ref_f16_to_f32((uint16_t)i);
  fp = fopen(ref, "wb");
  CHECK(fp && fwrite(r, 4, 65536, fp) == 65536 && fclose(fp) == 0);
  free(r);
  write_text(script,
             "import sys, warnings\n"
             "try:\n"
             "    import numpy as np\n"
             "except ImportError:\n"
             "    print('NONUMPY'); sys.exit(0)\n"
             "warnings.simplefilter('ignore')\n"
             "d = sys.argv[1]\n"
             "h = np.arange(65536, dtype=np.uint32).astype(np.uint16)\n"
             "f = h.view(np.float16).astype(np.float32)\n"
             "ref = np.fromfile(d + '/f16ref.bin', dtype=np.uint32)\n"
             "bad = np.count_nonzero(f.view(np.uint32) != ref)\n"
             "back = f.astype(np.float16).view(np.uint16)\n"
             "bad += np.count_nonzero(back != h)\n"
             "v = np.fromfile(d + '/vals.bin', dtype=np.uint32).view(np.float32)\n"
             "got = np.fromfile(d + '/got.bin', dtype=np.uint16)\n"
             "want = v.astype(np.float16).view(np.uint16)\n"
             "idx = np.nonzero(want != got)[0]\n"
             "for i in idx[:5]:\n"
             "    print('f32 0x%08x: numpy 0x%04x, hk 0x%04x' % (v.view(np.uint32)[i], want[i], got[i]))\n"
             "dv = np.fromfile(d + '/dbl.bin', dtype=np.float64)\n"
             "dg = np.fromfile(d + '/dbl16.bin', dtype=np.uint16)\n"
             "dw = dv.astype(np.float16).view(np.uint16)\n"
             "di = np.nonzero(dw != dg)[0]\n"
             "for i in di[:5]:\n"
             "    print('f64 %r: numpy 0x%04x, hk_f16_from_double 0x%04x' % (dv[i], dw[i], dg[i]))\n"
             "print('MISMATCHES', bad + len(idx) + len(di), 'OF', 2 * 65536 + len(v) + len(dv))\n");
  PATH(log, "numpy.log");
  char *argv[] = {(char *)py, script, g_root, NULL};
  int rc = run_logged(argv, log);
  size_t len;
  char *out = check_read_file(log, &len);
  if (rc != 0 || !out || strstr(out, "NONUMPY")) {
    printf("NOTE: no NumPy (%s): conversions checked against the C "
           "references only\n",
           py);
  } else {
    long bad = -1, total = 0;
    const char *m = strstr(out, "MISMATCHES");
    if (m) sscanf(m, "MISMATCHES %ld OF %ld", &bad, &total);
    CHECK_MSG(bad == 0, "NumPy's float16 disagrees: %s", out);
    printf("NumPy's float16 agrees on %ld conversions\n", total);
  }
  free(out);
}

static void fill_bool(uint8_t *b, size_t n, uint64_t seed);
static void fill16(uint16_t *p, size_t n, int bf, uint64_t seed);

/* ---- 2. Tiers -------------------------------------------------------------- */

static const char types_json[] =
    "{\"schema_version\": 1, \"kernels\": [\n"
    " {\"name\": \"ty_cast\", \"kind\": \"elementwise\",\n"
    "  \"types\": {\"S\": [\"f32\", \"f16\", \"bf16\", \"bool\"], \"D\": [\"f32\", \"f16\", \"bf16\", \"bool\"]},\n"
    "  \"params\": [{\"name\": \"x\", \"type\": \"S\", \"role\": \"in\"},\n"
    "             {\"name\": \"out\", \"type\": \"D\", \"role\": \"out\"}],\n"
    "  \"body\": \"out = (D)x;\"},\n"
    " {\"name\": \"ty_scast\", \"kind\": \"elementwise\",\n"
    "  \"doc\": \"ty_cast through the staged loops (its code calls a math function)\",\n"
    "  \"types\": {\"S\": [\"f32\", \"f16\", \"bf16\"], \"D\": [\"f32\", \"f16\", \"bf16\"]},\n"
    "  \"params\": [{\"name\": \"x\", \"type\": \"S\", \"role\": \"in\"},\n"
    "             {\"name\": \"out\", \"type\": \"D\", \"role\": \"out\"}],\n"
    "  \"body\": \"out = (D)x; if (fabs((float)i) < 0.0f) out = (D)0;\"},\n"
    " {\"name\": \"ty_gelu\", \"kind\": \"elementwise\", \"types\": {\"T\": [\"f16\", \"bf16\"]},\n"
    "  \"params\": [{\"name\": \"x\", \"type\": \"T\", \"role\": \"in\"},\n"
    "             {\"name\": \"out\", \"type\": \"T\", \"role\": \"out\"}],\n"
    "  \"body\": [\"const T k = (T)0.79788456080286535588; /* sqrt(2 / pi) */\",\n"
    "           \"out = x / expp1((T)-2 * k * (x + (T)0.044715 * x * x * x));\"]},\n"
    " {\"name\": \"ty_axpy\", \"kind\": \"elementwise\", \"types\": {\"T\": [\"f16\", \"bf16\"]},\n"
    "  \"params\": [{\"name\": \"alpha\", \"type\": \"T\", \"role\": \"scalar\"},\n"
    "             {\"name\": \"x\", \"type\": \"T\", \"role\": \"in\"},\n"
    "             {\"name\": \"y\", \"type\": \"T\", \"role\": \"inout\"}],\n"
    "  \"body\": \"y = alpha * x + y;\"},\n"
    " {\"name\": \"ty_where\", \"kind\": \"elementwise\", \"types\": {\"T\": [\"f16\", \"bf16\", \"bool\"]},\n"
    "  \"params\": [{\"name\": \"cond\", \"type\": \"bool\", \"role\": \"in\"},\n"
    "             {\"name\": \"x\", \"type\": \"T\", \"role\": \"in\"},\n"
    "             {\"name\": \"y\", \"type\": \"T\", \"role\": \"in\"},\n"
    "             {\"name\": \"out\", \"type\": \"T\", \"role\": \"out\"}],\n"
    "  \"body\": \"out = cond ? x : y;\"},\n"
    " {\"name\": \"ty_sum\", \"kind\": \"reduction\", \"types\": {\"T\": [\"f16\", \"bf16\"]},\n"
    "  \"params\": [{\"name\": \"x\", \"type\": \"T\", \"role\": \"in\"},\n"
    "             {\"name\": \"out\", \"type\": \"T\", \"role\": \"out\"}],\n"
    "  \"map\": \"x\", \"combine\": \"a + b\", \"identity\": \"0\"},\n"
    " {\"name\": \"ty_any\", \"kind\": \"reduction\",\n"
    "  \"params\": [{\"name\": \"x\", \"type\": \"bool\", \"role\": \"in\"},\n"
    "             {\"name\": \"out\", \"type\": \"bool\", \"role\": \"out\"}],\n"
    "  \"map\": \"x\", \"combine\": \"a || b\", \"identity\": \"0\"},\n"
    " {\"name\": \"ty_scale_raw\", \"kind\": \"raw\", \"targets\": [\"cpu\"],\n"
    "  \"params\": [{\"name\": \"x\", \"type\": \"f16\", \"role\": \"in\"},\n"
    "             {\"name\": \"alpha\", \"type\": \"f16\", \"role\": \"scalar\"},\n"
    "             {\"name\": \"out\", \"type\": \"f16\", \"role\": \"out\"}],\n"
    "  \"cpu\": [\"for (size_t j = 0; j < n; ++j)\",\n"
    "          \"    out[j] = hk_f32_to_f16(hk_f16_to_f32(x[j]) * alpha);\"]},\n"
    " {\"name\": \"ty_r16\", \"kind\": \"reduction\", \"types\": {\"T\": [\"f16\", \"bf16\"]},\n"
    "  \"params\": [{\"name\": \"x\", \"type\": \"T\", \"role\": \"in\"},\n"
    "             {\"name\": \"w\", \"type\": \"T\", \"role\": \"scalar\"},\n"
    "             {\"name\": \"out\", \"type\": \"T\", \"role\": \"out\"}],\n"
    "  \"map\": \"x * w\", \"combine\": \"a + b\", \"identity\": \"0\",\n"
    "  \"finalize\": \"acc / (T)n + w\"},\n"
    " {\"name\": \"ty_ew\", \"kind\": \"elementwise\", \"types\": {\"T\": [\"f16\", \"bool\"]},\n"
    "  \"params\": [{\"name\": \"x\", \"type\": \"T\", \"role\": \"in\"},\n"
    "             {\"name\": \"s\", \"type\": \"T\", \"role\": \"scalar\"},\n"
    "             {\"name\": \"y\", \"type\": \"T\", \"role\": \"inout\"},\n"
    "             {\"name\": \"o\", \"type\": \"bool\", \"role\": \"out\"}],\n"
    "  \"body\": \"y = y + x * s; o = y > (T)0;\"}\n"
    "]}\n";

/* Kernels with scalars, finalize and inout over these types, against
 * references. */
static void check_tier_more(hk_context_t *ctx, const char *tier) {
  const size_t n = (1u << 20) + 5;
  uint16_t *x = xmalloc(n * 2), *y = xmalloc(n * 2), *y0 = xmalloc(n * 2);
  uint8_t *o = xmalloc(n);
  float *w32 = xmalloc(n * 4);
  for (int bf = 0; bf < 2; bf++) {
    fill16(x, n, bf, 41);
    for (size_t i = 0; i < n; i++) {
      w32[i] = u2f(bf ? ref_bf16_to_f32(x[i]) : ref_f16_to_f32(x[i]));
      if (!(fabsf(w32[i]) <= 8)) {
        w32[i] = 0.25f;
        x[i] = bf ? ref_f32_to_bf16(0.25f) : ref_f32_to_f16(0.25f);
      }
    }
    uint16_t w = bf ? ref_f32_to_bf16(0.75f) : ref_f32_to_f16(0.75f), r = 0;
    float wf = 0.75f, o32 = 0;
    void *a[] = {x, &w, &r}, *a32[] = {w32, &o32};
    /* sum of x * w, as dot with a constant would: the same lanes */
    for (size_t i = 0; i < n; i++) w32[i] = w32[i] * wf;
    if (call(ctx, bf ? "ty_r16_bf16" : "ty_r16_f16", n, a) &&
        call(g_std, "sum_f32", n, a32)) {
      float f = o32 / (float)n + wf;
      uint16_t want = bf ? ref_f32_to_bf16(f) : ref_f32_to_f16(f);
      CHECK_MSG(r == want, "tier %s: ty_r16_%s 0x%04x, expected 0x%04x", tier,
                bf ? "bf16" : "f16", r, want);
    }
  }
  /* f16 inout, f16 scalar, bool out */
  fill16(x, n, 0, 42);
  fill16(y0, n, 0, 43);
  memcpy(y, y0, n * 2);
  uint16_t s = ref_f32_to_f16(-0.5f);
  void *a[] = {x, &s, y, o};
  if (call(ctx, "ty_ew_f16", n, a)) {
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
      float xf = u2f(ref_f16_to_f32(x[i])), yf = u2f(ref_f16_to_f32(y0[i]));
      float p = xf * -0.5f;
      float v = yf + p;
      uint16_t want = ref_f32_to_f16(v); /* o sees y as computed */
      int ok = (want == y[i] || (is_nan16(want) && is_nan16(y[i]))) &&
               o[i] == (v > 0);
      bad += !ok;
    }
    CHECK_MSG(bad == 0, "tier %s: ty_ew_f16: %d elements wrong", tier, bad);
  }
  /* bools: y = y + x * s is y || (x && s), stored 0/1 */
  uint8_t *xb = (uint8_t *)x, *yb = (uint8_t *)y, *yb0 = (uint8_t *)y0;
  fill_bool(xb, n, 44);
  fill_bool(yb0, n, 45);
  for (int sv = 0; sv < 3; sv++) {
    memcpy(yb, yb0, n);
    uint8_t sb = (uint8_t)sv;
    void *ab[] = {xb, &sb, yb, o};
    if (!call(ctx, "ty_ew_bool", n, ab)) continue;
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
      int want = (yb0[i] != 0) || ((xb[i] != 0) && sv != 0);
      bad += yb[i] != want || o[i] != want;
    }
    CHECK_MSG(bad == 0, "tier %s: ty_ew_bool (s = %d): %d elements wrong",
              tier, sv, bad);
  }
  free(x);
  free(y);
  free(y0);
  free(o);
  free(w32);
}

/* Random f16 (bf16) patterns: finite values of moderate size mostly, with
 * some specials. */
static void fill16(uint16_t *p, size_t n, int bf, uint64_t seed) {
  uint64_t s = seed | 1;
  for (size_t i = 0; i < n; i++) {
    uint64_t r = rnd(&s);
    float v = (float)((double)(r >> 40) / (double)(1u << 24) * 8.0 - 4.0);
    if ((r & 63) == 0) v = u2f((uint32_t)(r >> 8)); /* any bits */
    p[i] = bf ? ref_f32_to_bf16(v) : ref_f32_to_f16(v);
  }
}

static int same16(const uint16_t *a, const uint16_t *b, size_t n, int bf,
                  const char *what) {
  int bad = 0;
  for (size_t i = 0; i < n; i++) {
    int na = bf ? is_nanb16(a[i]) : is_nan16(a[i]);
    int nb = bf ? is_nanb16(b[i]) : is_nan16(b[i]);
    if ((na && nb) || a[i] == b[i]) continue;
    if (bad++ < 3)
      fprintf(stderr, "%s: [%zu] 0x%04x != 0x%04x\n", what, i, a[i], b[i]);
  }
  CHECK_MSG(bad == 0, "%s: %d elements differ", what, bad);
  return bad == 0;
}

/* The tier's kernels against the stdlib, bit for bit. */
static void check_tier(hk_context_t *ctx, const char *tier) {
  char what[256];
  snprintf(what, sizeof what, "tier %s", tier);
  uint16_t *to16 = xmalloc(g_nvals * 2), *to_b = xmalloc(g_nvals * 2);
  check_conversions(ctx, "ty_cast", what, to16, to_b);
  /* the same through the staged loops (F16C's block conversions on tier
   * opt where the CPU has it) */
  snprintf(what, sizeof what, "tier %s, staged", tier);
  check_conversions(ctx, "ty_scast", what, to16, to_b);
  snprintf(what, sizeof what, "tier %s", tier);
  free(to16);
  free(to_b);

  /* HK_TEST_SMALL (the sanitizer suites): still on the thread pool */
  const size_t n = getenv("HK_TEST_SMALL") ? 200003 : (1u << 20) + 5;
  uint16_t *x = xmalloc(n * 2), *y = xmalloc(n * 2), *r = xmalloc(n * 2),
           *g = xmalloc(n * 2);
  uint8_t *c = xmalloc(n);
  for (int bf = 0; bf < 2; bf++) {
    const char *t = bf ? "bf16" : "f16";
    char kn[64], sn[64];
    fill16(x, n, bf, 11 + (uint64_t)bf);
    fill16(y, n, bf, 23 + (uint64_t)bf);
    uint64_t s = 5;
    for (size_t i = 0; i < n; i++) c[i] = (uint8_t)(rnd(&s) % 3); /* 2 too */

    /* gelu */
    snprintf(kn, sizeof kn, "ty_gelu_%s", t);
    snprintf(sn, sizeof sn, "gelu_%s", t);
    void *ag[] = {x, g}, *as[] = {x, r};
    if (call(ctx, kn, n, ag) && call(g_std, sn, n, as)) {
      snprintf(what, sizeof what, "tier %s: %s vs %s", tier, kn, sn);
      same16(g, r, n, bf, what);
    }
    /* axpy, an f16 scalar */
    uint16_t alpha = bf ? ref_f32_to_bf16(-1.375f) : ref_f32_to_f16(-1.375f);
    memcpy(g, y, n * 2);
    memcpy(r, y, n * 2);
    snprintf(kn, sizeof kn, "ty_axpy_%s", t);
    snprintf(sn, sizeof sn, "axpy_%s", t);
    void *aa[] = {&alpha, x, g}, *asa[] = {&alpha, x, r};
    if (call(ctx, kn, n, aa) && call(g_std, sn, n, asa)) {
      snprintf(what, sizeof what, "tier %s: %s vs %s", tier, kn, sn);
      same16(g, r, n, bf, what);
    }
    /* where, a bool mask */
    snprintf(kn, sizeof kn, "ty_where_%s", t);
    snprintf(sn, sizeof sn, "where_%s", t);
    void *aw[] = {c, x, y, g}, *asw[] = {c, x, y, r};
    if (call(ctx, kn, n, aw) && call(g_std, sn, n, asw)) {
      snprintf(what, sizeof what, "tier %s: %s vs %s", tier, kn, sn);
      if (same16(g, r, n, bf, what)) {
        int bad = 0;
        for (size_t i = 0; i < n; i++) bad += g[i] != (c[i] ? x[i] : y[i]);
        CHECK_MSG(bad == 0, "%s: %d elements are not where(c, x, y)", what,
                  bad);
      }
    }
    /* sums: small, then on the thread pool (partials of 4 bytes) */
    for (int big = 0; big < 2; big++) {
      size_t m = big ? n : 1000;
      uint16_t o1 = 0x1234, o2 = 0x4321;
      float *w = xmalloc(m * 4), o3 = 0;
      /* finite and small: a NaN or inf would hide a wrong sum */
      for (size_t i = 0; i < m; i++) {
        w[i] = u2f(bf ? ref_bf16_to_f32(x[i]) : ref_f16_to_f32(x[i]));
        if (!(fabsf(w[i]) <= 8)) {
          w[i] = 0.5f;
          x[i] = bf ? ref_f32_to_bf16(0.5f) : ref_f32_to_f16(0.5f);
        }
      }
      snprintf(kn, sizeof kn, "ty_sum_%s", t);
      snprintf(sn, sizeof sn, "sum_%s", t);
      void *a1[] = {x, &o1}, *a2[] = {x, &o2}, *a3[] = {w, &o3};
      if (call(ctx, kn, m, a1) && call(g_std, sn, m, a2) &&
          call(g_std, "sum_f32", m, a3)) {
        uint16_t want = bf ? ref_f32_to_bf16(o3) : ref_f32_to_f16(o3);
        CHECK_MSG(o1 == o2 && o2 == want && !(bf ? is_nanb16(want) : is_nan16(want)),
                  "tier %s: %s of %zu = 0x%04x, %s 0x%04x, sum_f32 rounded "
                  "0x%04x",
                  tier, kn, m, o1, sn, o2, want);
      }
      free(w);
    }
  }
  /* a raw kernel: storage pointers, a float scalar, the conversions */
  uint16_t alpha = ref_f32_to_f16(0.3f);
  void *ar[] = {x, &alpha, g}, *asr[] = {x, &alpha, r};
  fill16(x, n, 0, 99);
  if (call(ctx, "ty_scale_raw", n, ar) && call(g_std, "scale_f16", n, asr)) {
    snprintf(what, sizeof what, "tier %s: ty_scale_raw vs scale_f16", tier);
    same16(g, r, n, 0, what);
  }
  /* any, and bool bytes other than 0 and 1 */
  uint8_t o1 = 7, o2 = 7;
  memset(c, 0, n);
  void *a1[] = {c, &o1}, *a2[] = {c, &o2};
  if (call(ctx, "ty_any", n, a1) && call(g_std, "any", n, a2))
    CHECK_MSG(o1 == 0 && o2 == 0, "tier %s: any of zeros: %d, %d", tier, o1,
              o2);
  c[n - 3] = 0x80;
  o1 = o2 = 7;
  if (call(ctx, "ty_any", n, a1) && call(g_std, "any", n, a2))
    CHECK_MSG(o1 == 1 && o2 == 1, "tier %s: any with a 0x80: %d, %d", tier, o1,
              o2);
  /* where over bools stores 0 and 1 only */
  for (size_t i = 0; i < 4096; i++) {
    x[i] = (uint16_t)(i & 3 ? 0 : 0xff);
    c[i] = (uint8_t)(i & 1);
  }
  uint8_t *xb = (uint8_t *)x, *yb = (uint8_t *)y, *gb = (uint8_t *)g;
  for (size_t i = 0; i < 4096; i++) {
    xb[i] = (uint8_t)(i % 5);
    yb[i] = (uint8_t)(i % 7 == 0 ? 0 : 200);
  }
  void *awb[] = {c, xb, yb, gb};
  if (call(ctx, "ty_where_bool", 4096, awb)) {
    int bad = 0;
    for (size_t i = 0; i < 4096; i++)
      bad += gb[i] != ((c[i] ? xb[i] : yb[i]) != 0);
    CHECK_MSG(bad == 0, "tier %s: where_bool: %d elements not 0/1 as expected",
              tier, bad);
  }
  free(x);
  free(y);
  free(r);
  free(g);
  free(c);
}

/* ---- 3. The stdlib's f16 and bf16 instances ---------------------------------- */

typedef struct twin_walk {
  int bf;
  int checked;
} twin_walk;

/* k, an f16 (bf16) stdlib instance whose parameters all have that type,
 * against its f32 twin on the widened data, rounded. */
static int check_twin(hk_kernel_t *k, void *user) {
  twin_walk *w = user;
  const hk_kernel_info_t *info = hk_kernel_info(k);
  hk_dtype_t dt = w->bf ? HK_BF16 : HK_F16;
  const char *suffix = w->bf ? "_bf16" : "_f16";
  size_t nl = strlen(info->name), sl = strlen(suffix);
  if (strcmp(info->origin, "stdlib") || nl <= sl ||
      strcmp(info->name + nl - sl, suffix))
    return 0;
  for (int p = 0; p < info->nparams; p++)
    if (info->params[p].dtype != dt) return 0;
  char twin[128];
  snprintf(twin, sizeof twin, "%.*s_f32", (int)(nl - sl), info->name);
  hk_kernel_t *k32 = NULL;
  if (hk_kernel_find(g_std, twin, &k32) != HK_OK) return 0;
  /* its twin has the same parameters in f32 (cast_f16_f16 has none) */
  const hk_kernel_info_t *i32 = hk_kernel_info(k32);
  if (i32->nparams != info->nparams) return 0;
  for (int p = 0; p < i32->nparams; p++)
    if (i32->params[p].dtype != HK_F32) return 0;
  const size_t n = 65536 + 3;
  void *a16[8], *a32[8];
  uint16_t *b16[8] = {0};
  float *b32[8] = {0};
  uint16_t s16[8];
  float s32[8];
  for (int p = 0; p < info->nparams && p < 8; p++) {
    const hk_param_info_t *pi = &info->params[p];
    if (pi->role == HK_ROLE_SCALAR) {
      uint16_t v[1];
      fill16(v, 1, w->bf, 1000 + (uint64_t)p);
      s16[p] = v[0];
      s32[p] = u2f(w->bf ? ref_bf16_to_f32(v[0]) : ref_f16_to_f32(v[0]));
      a16[p] = &s16[p];
      a32[p] = &s32[p];
      continue;
    }
    b16[p] = xmalloc(n * 2);
    b32[p] = xmalloc(n * 4);
    fill16(b16[p], n, w->bf, 77 + (uint64_t)p * 13);
    for (size_t i = 0; i < n; i++)
      b32[p][i] =
          u2f(w->bf ? ref_bf16_to_f32(b16[p][i]) : ref_f16_to_f32(b16[p][i]));
    a16[p] = b16[p];
    a32[p] = b32[p];
  }
  int rc16 = hk_call(k, n, a16), rc32 = hk_call(k32, n, a32);
  CHECK_MSG(rc16 == HK_OK && rc32 == HK_OK, "%s, %s: %s", info->name, twin,
            hk_last_error());
  for (int p = 0; p < info->nparams && rc16 == HK_OK && rc32 == HK_OK; p++) {
    const hk_param_info_t *pi = &info->params[p];
    if (pi->role != HK_ROLE_OUT && pi->role != HK_ROLE_INOUT) continue;
    size_t m = info->kind == HK_KIND_REDUCTION ? 1 : n;
    uint16_t *want = xmalloc(m * 2);
    for (size_t i = 0; i < m; i++)
      want[i] = w->bf ? ref_f32_to_bf16(b32[p][i]) : ref_f32_to_f16(b32[p][i]);
    char what[200];
    snprintf(what, sizeof what, "%s.%s vs %s rounded", info->name, pi->name,
             twin);
    same16(b16[p], want, m, w->bf, what);
    free(want);
  }
  for (int p = 0; p < 8; p++) {
    free(b16[p]);
    free(b32[p]);
  }
  w->checked++;
  return 0;
}

/* A unary f16 or bf16 stdlib instance over every 16-bit pattern, each 4
 * times: one call of 262,144 elements (from HK_LUT_MIN = 262,144 on,
 * costly unary kernels read a table of their own results: codegen/
 * emit_c.c, lut_eligible) against calls of 4,096 (computed), bit for bit,
 * NaN payloads included; on 1 and 2 threads, and in place. */
static int check_table(hk_kernel_t *k, void *user) {
  int *checked = user;
  const hk_kernel_info_t *info = hk_kernel_info(k);
  if (strcmp(info->origin, "stdlib") || info->kind != HK_KIND_ELEMENTWISE ||
      info->nparams != 2 || info->params[0].role != HK_ROLE_IN ||
      info->params[1].role != HK_ROLE_OUT ||
      info->params[0].dtype != info->params[1].dtype ||
      (info->params[0].dtype != HK_F16 && info->params[0].dtype != HK_BF16))
    return 0;
  const size_t n = 4 * 65536, piece = 4096;
  uint16_t *x = xmalloc(n * 2), *whole = xmalloc(n * 2),
           *parts = xmalloc(n * 2), *inplace = xmalloc(n * 2);
  for (size_t i = 0; i < n; i++) x[i] = (uint16_t)(i * 40503u); /* all */
  for (size_t at = 0; at < n; at += piece) {
    void *a[] = {x + at, parts + at};
    CHECK_INT_EQ(hk_call(k, piece, a), HK_OK);
  }
  for (int t = 2; t >= 1; t--) { /* 2 first: threads race to build the table */
    hk_set_threads(t);
    void *a[] = {x, whole};
    CHECK_INT_EQ(hk_call(k, n, a), HK_OK);
    memcpy(inplace, x, n * 2);
    void *ai[] = {inplace, inplace};
    CHECK_INT_EQ(hk_call(k, n, ai), HK_OK);
    size_t bad = 0, first = n;
    for (size_t i = 0; i < n; i++)
      if (whole[i] != parts[i] || inplace[i] != parts[i]) {
        bad++;
        if (first == n) first = i;
      }
    CHECK_MSG(bad == 0,
              "%s, %d threads: %zu of %zu elements differ between one call "
              "and calls of %zu (first: x 0x%04x, 0x%04x against 0x%04x)",
              info->name, t, bad, n, piece, bad ? x[first] : 0,
              bad ? whole[first] : 0, bad ? parts[first] : 0);
  }
  hk_set_threads(0);
  free(x), free(whole), free(parts), free(inplace);
  (*checked)++;
  return 0;
}

static void check_stdlib_16(void) {
  int tables = 0;
  hk_kernel_foreach(g_std, check_table, &tables);
  /* f16 and bf16 each: gelu, sigmoid, tanh, silu, exp, log, abs, sqrt, ... */
  CHECK_MSG(tables >= 16, "only %d unary 16-bit stdlib instances", tables);
  printf("stdlib: %d unary 16-bit instances give the same bits for every "
         "pattern in one call of 262144 as in calls of 4096\n",
         tables);
  /* in place (out is x), across the staged loop's blocks of 256 and the
   * thread pool's shares */
  static const size_t ns[] = {1, 255, 256, 257, 1003, 65536 + 3};
  for (size_t s = 0; s < COUNT(ns); s++)
    for (int bf = 0; bf < 2; bf++) {
      size_t m = ns[s];
      uint16_t *x = xmalloc(m * 2), *o = xmalloc(m * 2);
      fill16(x, m, bf, 3 + m);
      void *a[] = {x, o}, *ai[] = {x, x};
      const char *kn = bf ? "gelu_bf16" : "gelu_f16";
      if (call(g_std, kn, m, a) && call(g_std, kn, m, ai)) {
        char what[64];
        snprintf(what, sizeof what, "%s in place, n %zu", kn, m);
        same16(x, o, m, bf, what);
      }
      free(x);
      free(o);
    }
  for (int bf = 0; bf < 2; bf++) {
    twin_walk w = {bf, 0};
    hk_kernel_foreach(g_std, check_twin, &w);
    /* arith 9, activations 5, math 5, fill 2, reductions 6 */
    CHECK_MSG(w.checked >= 27, "%s: only %d stdlib instances checked",
              bf ? "bf16" : "f16", w.checked);
    printf("stdlib: %d %s instances equal their f32 twins, rounded\n",
           w.checked, bf ? "bf16" : "f16");
  }
}

/* ---- 4. The stdlib's bool kernels --------------------------------------------- */

/* Bool bytes: mostly 0 and 1, some 2 and 255 (which read as 1). */
static void fill_bool(uint8_t *b, size_t n, uint64_t seed) {
  uint64_t s = seed | 1;
  static const uint8_t v[] = {0, 1, 0, 1, 0, 1, 2, 255};
  for (size_t i = 0; i < n; i++) b[i] = v[rnd(&s) & 7];
}

static void check_bools(const char *name, const uint8_t *got,
                        const uint8_t *want, size_t n) {
  int bad = 0;
  for (size_t i = 0; i < n; i++)
    if (got[i] != want[i] && bad++ < 3)
      fprintf(stderr, "%s: [%zu] %d, expected %d\n", name, i, got[i], want[i]);
  CHECK_MSG(bad == 0, "%s: %d elements wrong", name, bad);
}

static void check_stdlib_bool(void) {
  const size_t n = 65536 + 3;
  uint8_t *x = xmalloc(n), *y = xmalloc(n), *o = xmalloc(n), *w = xmalloc(n);
  fill_bool(x, n, 1);
  fill_bool(y, n, 2);
  static const char *const logic[] = {"logical_and", "logical_or",
                                      "logical_xor", "logical_not"};
  for (int l = 0; l < 4; l++) {
    memset(o, 0xcc, n);
    void *a2[] = {x, y, o}, *a1[] = {x, o};
    if (!call(g_std, logic[l], n, l == 3 ? a1 : a2)) continue;
    for (size_t i = 0; i < n; i++) {
      int a = x[i] != 0, b = y[i] != 0;
      w[i] = (uint8_t)(l == 0 ? a && b : l == 1 ? a || b : l == 2 ? a != b : !a);
    }
    check_bools(logic[l], o, w, n);
  }
  /* comparisons and classification over f32, f16 and bf16 */
  float *f = xmalloc(n * 4), *g = xmalloc(n * 4);
  uint16_t *h = xmalloc(n * 2), *k = xmalloc(n * 2);
  static const char *const cmps[] = {"equal", "not_equal", "less",
                                     "less_equal", "greater", "greater_equal"};
  for (int ty = 0; ty < 3; ty++) {
    const char *t = ty == 0 ? "f32" : ty == 1 ? "f16" : "bf16";
    fill16(h, n, ty == 2, 5);
    fill16(k, n, ty == 2, 6);
    for (size_t i = 0; i < n; i++) { /* some equal pairs */
      if (i % 5 == 0) k[i] = h[i];
      f[i] = u2f(ty == 2 ? ref_bf16_to_f32(h[i]) : ref_f16_to_f32(h[i]));
      g[i] = u2f(ty == 2 ? ref_bf16_to_f32(k[i]) : ref_f16_to_f32(k[i]));
    }
    void *xa = ty ? (void *)h : (void *)f, *ya = ty ? (void *)k : (void *)g;
    char name[64];
    for (int c = 0; c < 6; c++) {
      snprintf(name, sizeof name, "%s_%s", cmps[c], t);
      memset(o, 0xcc, n);
      void *a[] = {xa, ya, o};
      if (!call(g_std, name, n, a)) continue;
      for (size_t i = 0; i < n; i++)
        w[i] = (uint8_t)(c == 0   ? f[i] == g[i]
                         : c == 1 ? f[i] != g[i]
                         : c == 2 ? f[i] < g[i]
                         : c == 3 ? f[i] <= g[i]
                         : c == 4 ? f[i] > g[i]
                                  : f[i] >= g[i]);
      check_bools(name, o, w, n);
    }
    static const char *const cls[] = {"isnan", "isinf", "isfinite"};
    for (int c = 0; c < 3; c++) {
      snprintf(name, sizeof name, "%s_%s", cls[c], t);
      memset(o, 0xcc, n);
      void *a[] = {xa, o};
      if (!call(g_std, name, n, a)) continue;
      for (size_t i = 0; i < n; i++)
        w[i] = (uint8_t)(c == 0 ? isnan(f[i]) != 0
                         : c == 1 ? isinf(f[i]) != 0
                                  : isfinite(f[i]) != 0);
      check_bools(name, o, w, n);
    }
    /* to bool: x != 0 (NaN is true); from bool: 0 or 1 */
    snprintf(name, sizeof name, "cast_%s_bool", t);
    void *ac[] = {xa, o};
    if (call(g_std, name, n, ac)) {
      for (size_t i = 0; i < n; i++) w[i] = f[i] != 0;
      check_bools(name, o, w, n);
    }
    snprintf(name, sizeof name, "cast_bool_%s", t);
    void *ab[] = {x, ya};
    if (call(g_std, name, n, ab)) {
      int bad = 0;
      for (size_t i = 0; i < n; i++) {
        uint32_t want = x[i] ? 0x3f800000u : 0;
        uint32_t got = ty == 0 ? f2u(g[i] = ((float *)ya)[i])
                       : ty == 1 ? ref_f16_to_f32(k[i])
                                 : ref_bf16_to_f32(k[i]);
        bad += got != want;
      }
      CHECK_MSG(bad == 0, "%s: %d elements are not 0 or 1", name, bad);
    }
  }
  /* where over f32, bool; fill_bool; any, all, count_nonzero */
  fill16(h, n, 0, 8);
  for (size_t i = 0; i < n; i++) f[i] = u2f(ref_f16_to_f32(h[i]));
  for (size_t i = 0; i < n; i++) g[i] = -f[i];
  float *fo = xmalloc(n * 4);
  void *aw[] = {x, f, g, fo};
  if (call(g_std, "where_f32", n, aw)) {
    int bad = 0;
    for (size_t i = 0; i < n; i++)
      bad += f2u(fo[i]) != f2u(x[i] ? f[i] : g[i]);
    CHECK_MSG(bad == 0, "where_f32: %d elements wrong", bad);
  }
  free(fo);
  void *awb[] = {x, y, x, o};
  if (call(g_std, "where_bool", n, awb)) {
    for (size_t i = 0; i < n; i++) w[i] = (x[i] ? y[i] : x[i]) != 0;
    check_bools("where_bool", o, w, n);
  }
  uint8_t two = 2;
  void *af[] = {&two, o};
  if (call(g_std, "fill_bool", n, af)) {
    memset(w, 1, n);
    check_bools("fill_bool", o, w, n);
  }
  for (int big = 0; big < 2; big++) {
    size_t m = big ? n : 100;
    uint8_t any = 9, all = 9;
    int64_t cnt = -1, want_cnt = 0;
    int want_any = 0, want_all = 1;
    for (size_t i = 0; i < m; i++) {
      want_cnt += x[i] != 0;
      want_any |= x[i] != 0;
      want_all &= x[i] != 0;
    }
    void *a1[] = {x, &any}, *a2[] = {x, &all}, *a3[] = {x, &cnt};
    if (call(g_std, "any", m, a1) && call(g_std, "all", m, a2) &&
        call(g_std, "count_nonzero", m, a3))
      CHECK_MSG(any == want_any && all == want_all && cnt == want_cnt,
                "n %zu: any %d all %d count %lld, expected %d %d %lld", m, any,
                all, (long long)cnt, want_any, want_all, (long long)want_cnt);
  }
  memset(x, 3, 50);
  uint8_t all = 9;
  void *a2[] = {x, &all};
  if (call(g_std, "all", 50, a2))
    CHECK_MSG(all == 1, "all of 3s: %d", all);
  free(x);
  free(y);
  free(o);
  free(w);
  free(f);
  free(g);
  free(h);
  free(k);
}

/* ---- 5. The format ---------------------------------------------------------- */

static void expect_refused(hk_context_t *ctx, const char *json,
                           const char *has) {
  int rc = hk_load_string(ctx, json, strlen(json), "t.json");
  CHECK_MSG(rc == HK_ESCHEMA && strstr(hk_last_error(), has),
            "rc %d, \"%s\" lacks \"%s\"", rc, hk_last_error(), has);
}

static void check_format(hk_context_t *ctx) {
  expect_refused(
      ctx,
      "{\"schema_version\": 1, \"name\": \"l1\", \"kind\": \"raw\",\n"
      " \"params\": [{\"name\": \"k\", \"type\": \"f16\", \"role\": \"scalar\"},\n"
      "  {\"name\": \"x\", \"type\": \"f32\", \"role\": \"out\", \"len\": \"k\"}],\n"
      " \"cpu\": \"(void)x;\"}",
      "params[1].len: 'k' is a floating-point scalar");
  expect_refused(
      ctx,
      "{\"schema_version\": 1, \"name\": \"l2\", \"kind\": \"raw\",\n"
      " \"params\": [{\"name\": \"k\", \"type\": \"bool\", \"role\": \"scalar\"},\n"
      "  {\"name\": \"x\", \"type\": \"f32\", \"role\": \"out\", \"len\": \"k\"}],\n"
      " \"cpu\": \"(void)x;\"}",
      "params[1].len: 'k' is a bool scalar");
  expect_refused(ctx,
                 "{\"schema_version\": 1, \"name\": \"l3\", \"kind\": "
                 "\"elementwise\", \"types\": {\"T\": [\"f16\", \"f8\"]},\n"
                 " \"params\": [{\"name\": \"x\", \"type\": \"T\", \"role\": "
                 "\"out\"}], \"body\": \"x = 1;\"}",
                 "types.T[1]: unknown type \"f8\"; expected one of f32, f64, "
                 "i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, bool");
  /* elementwise, reduction and rows code sees f16 and bf16 values as
   * floats: a conversion of one, or its bits stored into one, would have
   * C convert between float and uint16_t silently */
  expect_refused(ctx,
                 "{\"schema_version\": 1, \"name\": \"l6\", \"kind\": "
                 "\"elementwise\", \"types\": {\"T\": [\"f16\", \"f32\"]},\n"
                 " \"params\": [{\"name\": \"x\", \"type\": \"T\", \"role\": "
                 "\"in\"}, {\"name\": \"y\", \"type\": \"f32\", \"role\": "
                 "\"out\"}],\n \"body\": \"y = hk_f16_to_f32(x) * 2;\"}",
                 "3:29: error: body: hk_f16_to_f32 takes f16 or bf16 bits "
                 "(a uint16_t), but 'x' holds floats here");
  expect_refused(ctx,
                 "{\"schema_version\": 1, \"name\": \"l7\", \"kind\": "
                 "\"rows\",\n \"params\": [{\"name\": \"x\", \"type\": "
                 "\"bf16\", \"role\": \"in\"}, {\"name\": \"y\", \"type\": "
                 "\"bf16\", \"role\": \"out\"}],\n \"body\": \"for (size_t j "
                 "= 0; j < n; j++) y[j] = hk_f32_to_bf16(2 * x[j]);\"}",
                 "stores the bits hk_f32_to_bf16 returns (a uint16_t) in "
                 "'y', which holds a float here");
  expect_refused(ctx,
                 "{\"schema_version\": 1, \"name\": \"l8\", \"kind\": "
                 "\"reduction\",\n \"params\": [{\"name\": \"x\", \"type\": "
                 "\"f16\", \"role\": \"in\"}, {\"name\": \"s\", \"type\": "
                 "\"f32\", \"role\": \"out\"}],\n \"map\": "
                 "\"hk_f16_to_f32(x)\", \"combine\": \"a + b\", \"identity\": "
                 "\"0\"}",
                 "map: hk_f16_to_f32 takes f16 or bf16 bits");
  /* raw and grid code: an f16 scalar is a float (its f16 buffers are the
   * bits); a member named as a float parameter is not it */
  expect_refused(ctx,
                 "{\"schema_version\": 1, \"name\": \"l9\", \"kind\": "
                 "\"grid\", \"targets\": [\"cpu\"],\n \"params\": [{\"name\": "
                 "\"x\", \"type\": \"f16\", \"role\": \"out\"}, {\"name\": "
                 "\"s\", \"type\": \"f16\", \"role\": \"scalar\"}],\n"
                 " \"grid\": {\"k\": \"n\"},\n \"body\": \"x[k] = "
                 "hk_f32_to_f16(hk_f16_to_f32(s));\"}",
                 "hk_f16_to_f32 takes f16 or bf16 bits (a uint16_t), but 's' "
                 "holds floats here");
  static const char members[] =
      "{\"schema_version\": 1, \"name\": \"l10\", \"kind\": \"raw\", "
      "\"targets\": [\"cpu\"],\n \"params\": [{\"name\": \"y\", \"type\": "
      "\"f32\", \"role\": \"out\", \"len\": \"1\"}],\n \"cpu\": \"struct "
      "{ uint16_t y[1]; } s; s.y[0] = hk_f32_to_f16(2); y[0] = "
      "hk_f16_to_f32(s.y[0]);\"}";
  CHECK_MSG(hk_load_string(ctx, members, strlen(members), "m.json") == HK_OK,
            "%s", hk_last_error());
  /* other hk_ names stay reserved */
  expect_refused(ctx,
                 "{\"schema_version\": 1, \"name\": \"l4\", \"kind\": "
                 "\"elementwise\",\n \"params\": [{\"name\": \"x\", \"type\": "
                 "\"f16\", \"role\": \"out\"}], \"body\": \"x = hk_u2f(1);\"}",
                 "'hk_u2f' is reserved");
  /* an elementwise body may call the conversions; a bool placeholder is
   * _Bool ((T)0.5 is 1); an f16 out of a bool in */
  static const char ok[] =
      "{\"schema_version\": 1, \"name\": \"l5\", \"kind\": \"elementwise\",\n"
      " \"types\": {\"T\": [\"bool\"]},\n"
      " \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},\n"
      "  {\"name\": \"h\", \"type\": \"u16\", \"role\": \"out\"},\n"
      "  {\"name\": \"t\", \"type\": \"T\", \"role\": \"out\"}],\n"
      " \"body\": \"h = hk_f32_to_f16(x); t = (T)(x * 0.5f);\"}";
  int rc = hk_load_string(ctx, ok, strlen(ok), "ok.json");
  CHECK_MSG(rc == HK_OK, "%s", hk_last_error());
  float x[3] = {1.0f, 65520.0f, 0.25f};
  uint16_t h[3];
  uint8_t t[3];
  void *a[] = {x, h, t};
  if (rc == HK_OK && call(ctx, "l5_bool", 3, a)) {
    CHECK(h[0] == 0x3c00 && h[1] == 0x7c00 && h[2] == 0x3400);
    CHECK(t[0] == 1 && t[1] == 1 && t[2] == 1);
  }
}

/* A raw body that takes an f16 buffer for a float one (`const T *row =
 * x;` with T float, x uint16_t storage) read the bits as floats on every
 * CPU tier: it is an error, located, on tier jit (libtcc's warning) and on
 * tier opt (-Werror=incompatible-pointer-types). */
static void check_storage_pointers(hk_context_t *ctx, const char *tier,
                                   const char *words) {
  static const char json[] =
      "{\"schema_version\": 1, \"name\": \"rs16\", \"kind\": \"raw\",\n"
      " \"types\": {\"T\": [\"f32\", \"f16\"]},\n"
      " \"params\": [{\"name\": \"x\", \"type\": \"T\", \"role\": \"in\"},\n"
      "  {\"name\": \"out\", \"type\": \"T\", \"role\": \"out\", "
      "\"len\": \"1\"}],\n"
      " \"cpu\": [\"T s = 0;\",\n"
      "         \"const T *row = x;\",\n"
      "         \"for (size_t c = 0; c < n; c++) s += row[c];\",\n"
      "         \"out[0] = s;\"]}";
  int rc = hk_load_string(ctx, json, strlen(json), "rs16.json");
  CHECK_MSG(rc == HK_ECOMPILE, "%s: rc %d: %s", tier, rc, hk_last_error());
  show(tier, hk_last_error());
  CHECK_CONTAINS(hk_last_error(), "rs16.json>:6:");
  CHECK_CONTAINS(hk_last_error(), words);
}

/* ---- main --------------------------------------------------------------------- */

static void part_conversions(void) {
  uint16_t *to16 = xmalloc(g_nvals * 2), *to_b = xmalloc(g_nvals * 2);
  check_conversions(g_std, "cast", "stdlib", to16, to_b);
  check_numpy(to16);
  free(to16);
  free(to_b);
}

static void part_tier(hk_tier_t tier) {
  hk_context_t *c = mkctx(tier, P("k"), P("cache"), 0, NULL);
  if (!c) return;
  CHECK_STR_EQ(hk_context_problems(c), "");
  hk_kernel_t *k = kfind(c, "ty_gelu_f16");
  CHECK(k && hk_kernel_tier(k) == tier);
  check_tier(c, hk_tier_name(tier));
  check_tier_more(c, hk_tier_name(tier));
  if (tier == HK_TIER_JIT) check_format(c);
  check_storage_pointers(c, hk_tier_name(tier),
                         tier == HK_TIER_JIT
                             ? "a pointer made from a pointer to another type"
                             : "incompatible pointer type");
  hk_context_destroy(c);
}

int main(void) {
  const char *why = fixture_setup("types");
  if (why) CHECK_SKIP("%s", why);
  const char *none[] = {NULL};
  hk_options_t o = {0};
  o.plugin_dirs = none;
  o.flags = HK_NO_CACHE;
  o.tier = HK_TIER_JIT;
  CHECK_INT_EQ(hk_context_create(&g_std, &o), HK_OK);
  if (!g_std) {
    fixture_teardown();
    CHECK_DONE();
  }
  make_values();
  PART("host conversions", check_host_conversions());
  PART("conversions", part_conversions());
  check_make_dir(P("k"));
  write_text(P("k/types.json"), types_json);
  check_make_dir(P("cache"));
  PART("tier jit", part_tier(HK_TIER_JIT));
  /* HK_TEST_JIT_ONLY (tools/test.sh's sanitizer suites): tier opt's
   * objects are gcc's, not instrumented; the first suite checks them */
  if (g_have_cc && !getenv("HK_TEST_JIT_ONLY"))
    PART("tier opt", part_tier(HK_TIER_OPT));
  else
    printf("NOTE: %s: tier opt not checked\n",
           g_have_cc ? "HK_TEST_JIT_ONLY" : "no system compiler");
  PART("stdlib 16-bit", check_stdlib_16());
  PART("stdlib bool", check_stdlib_bool());
  hk_context_destroy(g_std);
  free(g_vals);
  free(g_dbl);
  free(g_dbl16);
  fixture_teardown();
  CHECK_DONE();
}
