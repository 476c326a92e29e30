/* test_rows.c — rows kernels: the stdlib's softmax, log_softmax and
 * layernorm against plain C reference loops (in long double), through the
 * typed functions, hk_call on the registry handle (a flat call: one row) and
 * the core's rows call (hk__call_rows_cpu, which the array call uses);
 * bit-identical results on 1 and 2 threads over many rows; 0 and 1 rows;
 * rows plugins on tiers jit and opt (plugins/layernorm.json, and a kernel
 * with exact results that uses every row mode and the row index); the row
 * modes in the public descriptions; and the located errors of the format's
 * rows rules, the optional "cuda" body's among them (a GPU runs it: see
 * test_cuda). */
#include <float.h>
#include <stdio.h>
#include <stdlib.h>

#include "abi.h"
#include "check.h"
#include "hk.h"
#include "registry.h"

/* ---- Data ------------------------------------------------------------------- */

static uint64_t rng_state = 0x9E3779B97F4A7C15u;

/* Uniform in [lo, hi). */
static double uniform(double lo, double hi) {
  rng_state = rng_state * 6364136223846793005u + 1442695040888963407u;
  return lo + (hi - lo) * (double)(rng_state >> 11) / 9007199254740992.0;
}

typedef struct rows_data {
  hk_dtype_t t;
  size_t rows, n;
  void *x, *w, *b;  /* rows * n; n; n */
  void *y, *mean, *rstd; /* rows * n + guard; rows + guard; rows + guard */
} rows_data;

#define GUARD 8
#define GUARD_BYTE 0xA5

static double get(hk_dtype_t t, const void *p, size_t i) {
  return t == HK_F32 ? (double)((const float *)p)[i] : ((const double *)p)[i];
}
static void put(hk_dtype_t t, void *p, size_t i, double v) {
  if (t == HK_F32)
    ((float *)p)[i] = (float)v;
  else
    ((double *)p)[i] = v;
}

static void *guarded(size_t count, size_t es) {
  unsigned char *p = malloc((count + GUARD) * es);
  CHECK(p != NULL);
  memset(p, GUARD_BYTE, (count + GUARD) * es);
  return p;
}

/* 1 when the GUARD elements after count elements of p are untouched. */
static int guard_ok(const void *p, size_t count, size_t es) {
  const unsigned char *g = (const unsigned char *)p + count * es;
  for (size_t i = 0; i < GUARD * es; i++)
    if (g[i] != GUARD_BYTE) return 0;
  return 1;
}

static void data_init(rows_data *d, hk_dtype_t t, size_t rows, size_t n) {
  size_t es = hk_dtype_size(t);
  memset(d, 0, sizeof *d);
  d->t = t, d->rows = rows, d->n = n;
  d->x = guarded(rows * n, es);
  d->w = guarded(n, es);
  d->b = guarded(n, es);
  d->y = guarded(rows * n, es);
  d->mean = guarded(rows, es);
  d->rstd = guarded(rows, es);
  for (size_t r = 0; r < rows; r++)
    for (size_t j = 0; j < n; j++) /* some rows shifted far from 0 */
      put(t, d->x, r * n + j, uniform(-4, 4) + (r % 7 == 3 ? 300 : 0));
  for (size_t j = 0; j < n; j++) {
    put(t, d->w, j, uniform(0.5, 1.5));
    put(t, d->b, j, uniform(-1, 1));
  }
}

/* Sets the outputs back to their guard pattern. */
static void data_reset(rows_data *d) {
  size_t es = hk_dtype_size(d->t);
  memset(d->y, GUARD_BYTE, (d->rows * d->n + GUARD) * es);
  memset(d->mean, GUARD_BYTE, (d->rows + GUARD) * es);
  memset(d->rstd, GUARD_BYTE, (d->rows + GUARD) * es);
}

static void data_free(rows_data *d) {
  free(d->x), free(d->w), free(d->b), free(d->y), free(d->mean),
      free(d->rstd);
}

static long double eps_of(hk_dtype_t t) {
  return t == HK_F32 ? FLT_EPSILON : DBL_EPSILON;
}

/* ---- References ---------------------------------------------------------------- */

typedef enum op { OP_SOFTMAX, OP_LOG_SOFTMAX, OP_LAYERNORM } op_t;
static const char *const op_names[] = {"softmax", "log_softmax", "layernorm"};

/* Checks d's outputs (computed for op, eps) against long double loops
 * written from the definitions; what names the path. */
static void check_ref(const rows_data *d, op_t op, double eps,
                      const char *what) {
  hk_dtype_t t = d->t;
  size_t n = d->n, es = hk_dtype_size(t);
  long double e = eps_of(t);
  int bad = 0;
  for (size_t r = 0; r < d->rows && !bad; r++) {
    size_t at = r * n;
    long double m = -INFINITY, lo = INFINITY, s = 0;
    for (size_t j = 0; j < n; j++) {
      long double v = get(t, d->x, at + j);
      if (v > m) m = v;
      if (v < lo) lo = v;
      s += v;
    }
    if (op == OP_LAYERNORM) {
      long double mu = n ? s / n : 0, var = 0;
      for (size_t j = 0; j < n; j++) {
        long double dv = get(t, d->x, at + j) - mu;
        var += dv * dv;
      }
      var = n ? var / n : 0;
      long double rs = 1 / sqrtl(var + eps);
      long double got_m = get(t, d->mean, r), got_r = get(t, d->rstd, r);
      if (n && (fabsl(got_m - mu) > e * (n + 4) * (fabsl(mu) + 4) ||
                fabsl(got_r - rs) > e * (n + 8) * rs)) {
        fprintf(stderr, "  row %zu: mean %.17Lg (want %.17Lg), rstd %.17Lg "
                "(want %.17Lg)\n", r, got_m, mu, got_r, rs);
        bad = 1;
      }
      for (size_t j = 0; j < n && !bad; j++) {
        long double xv = get(t, d->x, at + j), w = get(t, d->w, j),
                    b = get(t, d->b, j);
        long double want = (xv - mu) * rs * w + b;
        long double got = get(t, d->y, at + j);
        /* the mean's rounding (relative to |mu|) moves every x - mu */
        long double tol = e * (n + 16) *
                          (fabsl((xv - mu) * rs * w) + fabsl(mu) * rs * fabsl(w) +
                           fabsl(b) + 1);
        if (!(fabsl(got - want) <= tol)) {
          fprintf(stderr, "  [%zu, %zu]: %.17Lg, want %.17Lg\n", r, j, got,
                  want);
          bad = 1;
        }
      }
      continue;
    }
    long double sum = 0;
    for (size_t j = 0; j < n; j++) sum += expl(get(t, d->x, at + j) - m);
    long double lse = m + logl(sum), spread = m - lo;
    for (size_t j = 0; j < n && !bad; j++) {
      long double xv = get(t, d->x, at + j), got = get(t, d->y, at + j), want,
                  tol;
      if (op == OP_SOFTMAX) {
        want = expl(xv - m) / sum;
        tol = e * (n + spread + 4) * want;
      } else {
        want = xv - lse;
        tol = e * (fabsl(want) + 2 * fabsl(lse) + fabsl(m) + n + spread + 4);
      }
      if (!(fabsl(got - want) <= tol)) {
        fprintf(stderr, "  [%zu, %zu]: %.17Lg, want %.17Lg\n", r, j, got,
                want);
        bad = 1;
      }
    }
  }
  int guards = guard_ok(d->y, d->rows * n, es) &&
               (op != OP_LAYERNORM || (guard_ok(d->mean, d->rows, es) &&
                                       guard_ok(d->rstd, d->rows, es)));
  CHECK_MSG(!bad, "%s_%s %zu x %zu %s: differs from the reference",
            op_names[op], hk_dtype_name(t), d->rows, n, what);
  CHECK_MSG(guards, "%s_%s %zu x %zu %s: wrote past the end", op_names[op],
            hk_dtype_name(t), d->rows, n, what);
}

/* ---- The stdlib ---------------------------------------------------------------- */

/* The typed function of op on d (rows x n). */
static void call_typed(rows_data *d, op_t op, double eps) {
  size_t R = d->rows, n = d->n;
  if (d->t == HK_F32) {
    if (op == OP_SOFTMAX) hk_softmax_f32(d->x, d->y, R, n);
    if (op == OP_LOG_SOFTMAX) hk_log_softmax_f32(d->x, d->y, R, n);
    if (op == OP_LAYERNORM)
      hk_layernorm_f32(d->x, d->w, d->b, d->y, d->mean, d->rstd, (float)eps,
                       R, n);
  } else {
    if (op == OP_SOFTMAX) hk_softmax_f64(d->x, d->y, R, n);
    if (op == OP_LOG_SOFTMAX) hk_log_softmax_f64(d->x, d->y, R, n);
    if (op == OP_LAYERNORM)
      hk_layernorm_f64(d->x, d->w, d->b, d->y, d->mean, d->rstd, eps, R, n);
  }
}

/* The uniform args of op on d; the scalar eps in *scalar (of d's type). */
static void args_of(rows_data *d, op_t op, double eps, double *scalar,
                    void **args) {
  if (op != OP_LAYERNORM) {
    args[0] = d->x, args[1] = d->y;
    return;
  }
  put(d->t, scalar, 0, eps);
  args[0] = d->x, args[1] = d->w, args[2] = d->b, args[3] = d->y;
  args[4] = d->mean, args[5] = d->rstd, args[6] = scalar;
}

/* A copy of d's outputs, for bit comparisons. */
typedef struct outputs {
  unsigned char *y, *mean, *rstd;
} outputs;

static outputs outputs_copy(const rows_data *d) {
  size_t es = hk_dtype_size(d->t);
  outputs o = {malloc(d->rows * d->n * es + 1), malloc(d->rows * es + 1),
               malloc(d->rows * es + 1)};
  memcpy(o.y, d->y, d->rows * d->n * es);
  memcpy(o.mean, d->mean, d->rows * es);
  memcpy(o.rstd, d->rstd, d->rows * es);
  return o;
}

static int outputs_same(const rows_data *d, const outputs *o, op_t op) {
  size_t es = hk_dtype_size(d->t);
  return !memcmp(o->y, d->y, d->rows * d->n * es) &&
         (op != OP_LAYERNORM || (!memcmp(o->mean, d->mean, d->rows * es) &&
                                 !memcmp(o->rstd, d->rstd, d->rows * es)));
}

static void outputs_free(outputs *o) { free(o->y), free(o->mean), free(o->rstd); }

/* op on a rows x n matrix of type t: the typed function against the
 * reference, then the registry handle's rows call (hk__call_rows_cpu) and,
 * on 1 and 2 threads, both again, bit for bit; then a flat hk_call on row 0
 * against the typed function on that one row. */
static void test_stdlib_op(hk_context_t *ctx, op_t op, hk_dtype_t t,
                           size_t rows, size_t n) {
  const double eps = 1e-5;
  rows_data d;
  data_init(&d, t, rows, n);
  char name[64], what[96];
  snprintf(name, sizeof name, "%s_%s", op_names[op], hk_dtype_name(t));
  snprintf(what, sizeof what, "%s %zu x %zu", name, rows, n);

  CHECK_INT_EQ(hk_set_threads(2), HK_OK);
  call_typed(&d, op, eps);
  check_ref(&d, op, eps, "typed");
  outputs want = outputs_copy(&d);

  hk_kernel_t *k = NULL;
  CHECK_INT_EQ(hk_kernel_find(ctx, name, &k), HK_OK);
  double scalar;
  void *args[7];
  args_of(&d, op, eps, &scalar, args);
  for (int threads = 1; k && threads <= 2; threads++) {
    CHECK_INT_EQ(hk_set_threads(threads), HK_OK);
    data_reset(&d);
    call_typed(&d, op, eps);
    CHECK_MSG(outputs_same(&d, &want, op), "%s typed on %d thread(s): not "
              "bit-identical to 2 threads", what, threads);
    data_reset(&d);
    CHECK_INT_EQ(hk__call_rows_cpu(k, rows, n, args), HK_OK);
    CHECK_MSG(outputs_same(&d, &want, op), "%s registry rows call on %d "
              "thread(s): not bit-identical to the typed function", what,
              threads);
    check_ref(&d, op, eps, "registry rows call");
  }
  if (k && rows > 0) { /* flat: one row */
    rows_data one = d;
    one.rows = 1;
    data_reset(&d);
    CHECK_INT_EQ(hk_call(k, n, args), HK_OK);
    check_ref(&one, op, eps, "hk_call (one row)");
    size_t es = hk_dtype_size(t);
    CHECK_MSG(!memcmp(d.y, want.y, n * es), "%s hk_call: row 0 differs from "
              "the typed function's", what);
    CHECK_MSG(guard_ok(d.y, n, es), "%s hk_call wrote beyond one row", what);
  }
  outputs_free(&want);
  data_free(&d);
  CHECK_INT_EQ(hk_set_threads(0), HK_OK);
}

/* ---- f16 and bf16 rows ---------------------------------------------------------- */

/* v rounded to bf ? bf16 : f16, and its bits widened back. */
static uint16_t to16(int bf, double v) {
  return bf ? hk_bf16_from_double(v) : hk_f16_from_double(v);
}
static float from16(int bf, uint16_t h) {
  return (float)(bf ? hk_bf16_to_double(h) : hk_f16_to_double(h));
}

/* count 16-bit values, guarded, from the f32 values at f (rounded; f is
 * then set to the widened values, so that the f32 twin sees what the
 * 16-bit instance sees). */
static uint16_t *round16(int bf, float *f, size_t count) {
  uint16_t *h = guarded(count, 2);
  for (size_t i = 0; i < count; i++) {
    h[i] = to16(bf, f[i]);
    f[i] = from16(bf, h[i]);
  }
  return h;
}

/* 1 when the 16-bit got holds want (f32) rounded, element for element. */
static int same_rounded(int bf, const uint16_t *got, const float *want,
                        size_t count, size_t *first) {
  for (size_t i = 0; i < count; i++)
    if (got[i] != to16(bf, want[i])) {
      *first = i;
      return 0;
    }
  return 1;
}

/* op_f16 (op_bf16 with bf) on rows x n: the typed function, the registry's
 * rows call on 1 and 2 threads and a flat hk_call (one row) give the f32
 * twin's results on the widened data, rounded once (the body computes in
 * f32 on a float copy of each row: the same computation); in place for
 * softmax; nothing past the ends. */
static void test_stdlib_16(hk_context_t *ctx, op_t op, int bf, size_t rows,
                           size_t n) {
  const char *t = bf ? "bf16" : "f16";
  char name[64], what[96];
  snprintf(name, sizeof name, "%s_%s", op_names[op], t);
  snprintf(what, sizeof what, "%s %zu x %zu", name, rows, n);
  rows_data d; /* the f32 twin's data and results */
  data_init(&d, HK_F32, rows, n);
  uint16_t *x = round16(bf, d.x, rows * n), *w = round16(bf, d.w, n),
           *b = round16(bf, d.b, n);
  uint16_t *y = guarded(rows * n, 2), *mean = guarded(rows, 2),
           *rstd = guarded(rows, 2);
  uint16_t eps = to16(bf, 1e-5);
  const double eps32 = from16(bf, eps);
  call_typed(&d, op, eps32);

  size_t first = 0;
  for (int path = 0; path < 4; path++) {
    memset(y, GUARD_BYTE, (rows * n + GUARD) * 2);
    memset(mean, GUARD_BYTE, (rows + GUARD) * 2);
    memset(rstd, GUARD_BYTE, (rows + GUARD) * 2);
    void *args[7] = {x, y};
    if (op == OP_LAYERNORM) {
      args[1] = w, args[2] = b, args[3] = y, args[4] = mean, args[5] = rstd;
      args[6] = &eps;
    }
    const char *how = path == 0 ? "typed" : path == 3 ? "flat hk_call" : "rows call";
    CHECK_INT_EQ(hk_set_threads(path == 1 ? 1 : 2), HK_OK);
    if (path == 0) {
      if (op == OP_SOFTMAX)
        (bf ? hk_softmax_bf16 : hk_softmax_f16)(x, y, rows, n);
      if (op == OP_LOG_SOFTMAX)
        (bf ? hk_log_softmax_bf16 : hk_log_softmax_f16)(x, y, rows, n);
      if (op == OP_LAYERNORM)
        (bf ? hk_layernorm_bf16 : hk_layernorm_f16)(x, w, b, y, mean, rstd,
                                                     eps, rows, n);
    } else {
      hk_kernel_t *k = NULL;
      CHECK_INT_EQ(hk_kernel_find(ctx, name, &k), HK_OK);
      if (!k) break;
      /* on the GPU too (test_cuda, rows_emulate check it there) */
      CHECK_INT_EQ(hk_kernel_info(k)->targets & HK_TARGET_CUDA,
                   HK_TARGET_CUDA);
      if (path < 3)
        CHECK_INT_EQ(hk__call_rows_cpu(k, rows, n, args), HK_OK);
      else if (rows > 0)
        CHECK_INT_EQ(hk_call(k, n, args), HK_OK);
    }
    size_t R = path == 3 ? (rows > 0) : rows;
    CHECK_MSG(same_rounded(bf, y, d.y, R * n, &first),
              "%s (%s, %d thread(s)): y[%zu] is %#x, the f32 twin's %.9g "
              "rounds to %#x", what, how, path == 1 ? 1 : 2, first, y[first],
              ((float *)d.y)[first], to16(bf, ((float *)d.y)[first]));
    if (op == OP_LAYERNORM)
      CHECK_MSG(same_rounded(bf, mean, d.mean, R, &first) &&
                    same_rounded(bf, rstd, d.rstd, R, &first),
                "%s (%s): mean or rstd of row %zu differs from the f32 twin's",
                what, how, first);
    CHECK_MSG(guard_ok(y, R * n, 2) && guard_ok(mean, op == OP_LAYERNORM ? R : 0, 2) &&
                  guard_ok(rstd, op == OP_LAYERNORM ? R : 0, 2),
              "%s (%s): wrote past the end", what, how);
  }
  if (op == OP_SOFTMAX && rows > 0) { /* in place: y is x */
    uint16_t *xy = guarded(rows * n, 2);
    memcpy(xy, x, rows * n * 2);
    (bf ? hk_softmax_bf16 : hk_softmax_f16)(xy, xy, rows, n);
    CHECK_MSG(same_rounded(bf, xy, d.y, rows * n, &first),
              "%s in place: element %zu differs", what, first);
    free(xy);
  }
  CHECK_INT_EQ(hk_set_threads(0), HK_OK);
  free(x), free(w), free(b), free(y), free(mean), free(rstd);
  data_free(&d);
}

/* 0 rows write nothing, whatever n; 0-length rows too. */
static void test_empty(void) {
  rows_data d;
  data_init(&d, HK_F32, 3, 5);
  data_reset(&d);
  hk_softmax_f32(d.x, d.y, 0, 5);
  hk_log_softmax_f32(d.x, d.y, 0, 5);
  hk_layernorm_f32(d.x, d.w, d.b, d.y, d.mean, d.rstd, 1e-5f, 0, 5);
  CHECK(guard_ok(d.y, 0, 4) && guard_ok(d.mean, 0, 4) &&
        guard_ok(d.rstd, 0, 4));
  hk_softmax_f32(d.x, d.y, 3, 0);
  CHECK(guard_ok(d.y, 0, 4));
  data_free(&d);
}

/* A 16-bit typed call whose float copies of a row cannot be had (a row
 * longer than memory) runs no row and says so, naming the function; so
 * does hk_call, naming the kernel. 0 rows ask for no copies. */
static void test_16_nomem(hk_context_t *ctx) {
  uint16_t x[4] = {1, 2, 3, 4}, y[4] = {9, 9, 9, 9};
  const size_t huge = SIZE_MAX / 2;
  hk_clear_error();
  hk_softmax_f16(x, y, 1, huge);
  CHECK_CONTAINS(hk_last_error(), "hk_softmax_f16: out of memory for the f32 "
                                  "copies of a row");
  CHECK(y[0] == 9 && y[3] == 9);
  /* 0 rows: nothing to run, no scratch asked for, whatever n */
  hk_clear_error();
  CHECK_STR_EQ(hk_last_error(), "");
  hk_softmax_f16(x, y, 0, huge);
  CHECK_STR_EQ(hk_last_error(), "");
  hk_kernel_t *k = NULL;
  CHECK_INT_EQ(hk_kernel_find(ctx, "layernorm_bf16", &k), HK_OK);
  void *args[7] = {x, x, x, y, y, y, &x[0]};
  if (k) {
    CHECK_INT_EQ(hk_call(k, huge, args), HK_ENOMEM);
    CHECK_CONTAINS(hk_last_error(), "layernorm_bf16: out of memory");
    /* hk_call_on and hk_call_async check args (hk_call does not) */
    CHECK_INT_EQ(hk_call_on(k, HK_BACKEND_CPU, 4, NULL), HK_EINVAL);
    CHECK_CONTAINS(hk_last_error(), "hk_call_on: NULL args, and kernel "
                                    "layernorm_bf16 has 7 parameters");
    CHECK_INT_EQ(hk_call_async(k, NULL, 4, NULL), HK_EINVAL);
    CHECK_INT_EQ(hk_call_on(NULL, HK_BACKEND_CPU, 4, args), HK_EINVAL);
  }
  CHECK(y[0] == 9 && y[3] == 9);
}

/* The public descriptions carry the row modes. */
static void test_info(hk_context_t *ctx) {
  hk_kernel_t *k;
  CHECK_INT_EQ(hk_kernel_find(ctx, "layernorm_f32", &k), HK_OK);
  const hk_kernel_info_t *in = hk_kernel_info(k);
  CHECK_INT_EQ(in->kind, HK_KIND_ROWS);
  CHECK_STR_EQ(hk_kind_name(in->kind), "rows");
  static const hk_row_t want[] = {HK_ROW_FULL, HK_ROW_SHARED, HK_ROW_SHARED,
                                  HK_ROW_FULL, HK_ROW_ONE,    HK_ROW_ONE,
                                  HK_ROW_FULL};
  CHECK_INT_EQ(in->nparams, 7);
  for (int i = 0; i < in->nparams && i < 7; i++)
    CHECK_MSG(in->params[i].row == want[i], "layernorm_f32.%s: row %d",
              in->params[i].name, (int)in->params[i].row);
  float eps = 1e-5f;
  void *args[7] = {NULL, NULL, NULL, NULL, NULL, NULL, &eps};
  int64_t lens[7];
  CHECK_INT_EQ(hk_kernel_lens(k, 768, args, lens), HK_OK);
  static const int64_t want_lens[] = {768, 768, 768, 768, 1, 1, -1};
  for (int i = 0; i < 7; i++) CHECK_INT_EQ(lens[i], want_lens[i]);
  CHECK_INT_EQ(hk_kernel_find(ctx, "add_f32", &k), HK_OK);
  CHECK_INT_EQ(hk_kernel_info(k)->params[0].row, HK_ROW_FULL);
  /* the rows call is for rows kernels only */
  CHECK_INT_EQ(hk__call_rows_cpu(k, 2, 3, args), HK_EINVAL);
}

/* ---- The array call ------------------------------------------------------------ */

/* layernorm_f32 through hk_call_arrays on a (3, 5, 40) array and on its
 * transposed view (strides, not C order): the typed function's bits on the
 * contiguous data; mean and rstd as (3, 5) and as (3, 5, 1); the shapes
 * hk_call_out_shape gives; and the shape errors. */
static void test_arrays(hk_context_t *ctx) {
  enum { A = 3, B = 5, C = 40, R = A * B };
  static float x[R * C], xt[C * R], w[C], b[C], y[R * C], mean[R], rstd[R];
  static float ty[R * C], tmean[R], trstd[R];
  for (int i = 0; i < R * C; i++) x[i] = (float)uniform(-3, 3);
  for (int j = 0; j < C; j++) w[j] = (float)uniform(0.5, 1.5), b[j] = (float)uniform(-1, 1);
  /* xt holds x transposed (C, R): the view with strides (B, 1, R) over it
   * is x again */
  for (int r = 0; r < R; r++)
    for (int j = 0; j < C; j++) xt[j * R + r] = x[r * C + j];
  hk_layernorm_f32(x, w, b, ty, tmean, trstd, 1e-5f, R, C);

  hk_kernel_t *k;
  CHECK_INT_EQ(hk_kernel_find(ctx, "layernorm_f32", &k), HK_OK);
  float eps = 1e-5f;
  hk_array_t a[7];
  const int64_t s3[] = {A, B, C}, s2[] = {A, B}, s21[] = {A, B, 1}, s1[] = {C};
  hk_array_init(&a[0], x, HK_F32, 3, s3);
  hk_array_init(&a[1], w, HK_F32, 1, s1);
  hk_array_init(&a[2], b, HK_F32, 1, s1);
  hk_array_init(&a[3], y, HK_F32, 3, s3);
  hk_array_init(&a[4], mean, HK_F32, 2, s2);
  hk_array_init(&a[5], rstd, HK_F32, 3, s21);
  hk_array_init(&a[6], &eps, HK_F32, 0, NULL);
  for (int view = 0; view < 2; view++) {
    if (view) { /* x as a transposed view of xt */
      a[0].data = xt;
      a[0].base = xt;
      a[0].strides[0] = B, a[0].strides[1] = 1, a[0].strides[2] = R;
    }
    memset(y, 0, sizeof y), memset(mean, 0, sizeof mean),
        memset(rstd, 0, sizeof rstd);
    int rc = hk_call_arrays(k, a, NULL);
    CHECK_MSG(rc == HK_OK, "layernorm_f32 arrays (view %d): %s", view,
              hk_last_error());
    CHECK_MSG(!memcmp(y, ty, sizeof y) && !memcmp(mean, tmean, sizeof mean) &&
                  !memcmp(rstd, trstd, sizeof rstd),
              "layernorm_f32 arrays (view %d): not the typed function's bits",
              view);
  }
  int nd;
  int64_t shape[HK_MAX_DIMS];
  CHECK_INT_EQ(hk_call_out_shape(k, a, NULL, 3, &nd, shape), HK_OK);
  CHECK(nd == 3 && shape[0] == A && shape[1] == B && shape[2] == C);
  CHECK_INT_EQ(hk_call_out_shape(k, a, NULL, 4, &nd, shape), HK_OK);
  CHECK(nd == 2 && shape[0] == A && shape[1] == B);
  /* errors: a weight of the wrong length, a mean of the wrong shape, axes */
  hk_array_init(&a[0], x, HK_F32, 3, s3);
  const int64_t bad1[] = {C - 1}, bad2[] = {B, A};
  hk_array_t keep = a[1];
  hk_array_init(&a[1], w, HK_F32, 1, bad1);
  CHECK_INT_EQ(hk_call_arrays(k, a, NULL), HK_EINVAL);
  CHECK_MSG(strstr(hk_last_error(), "parameter 'weight': the array's shape is "
                                    "(39,); with parameter 'x' of shape (3, "
                                    "5, 40) (rows of 40) it must be (40,)"),
            "%s", hk_last_error());
  a[1] = keep;
  hk_array_init(&a[4], mean, HK_F32, 2, bad2);
  CHECK_INT_EQ(hk_call_arrays(k, a, NULL), HK_EINVAL);
  CHECK_MSG(strstr(hk_last_error(), "parameter 'mean': the array's shape is "
                                    "(5, 3); with parameter 'x' of shape (3, "
                                    "5, 40) (rows of 40) it must be (3, 5) or "
                                    "(3, 5, 1)"),
            "%s", hk_last_error());
  hk_array_init(&a[4], mean, HK_F32, 2, s2);
  /* rows along axis 1 (or -2) of a (3, 40, 5) array holding x with that
   * axis moved: y in that layout, mean (3, 5), rstd kept as (3, 1, 5);
   * the typed function's bits */
  {
    static float xp[R * C], yp[R * C];
    for (int i = 0; i < A; i++)
      for (int j = 0; j < B; j++)
        for (int c = 0; c < C; c++)
          xp[(i * C + c) * B + j] = x[(i * B + j) * C + c];
    const int64_t sp[] = {A, C, B}, s1b[] = {A, 1, B};
    hk_array_t p[7];
    memcpy(p, a, sizeof p);
    hk_array_init(&p[0], xp, HK_F32, 3, sp);
    hk_array_init(&p[3], yp, HK_F32, 3, sp);
    hk_array_init(&p[5], rstd, HK_F32, 3, s1b);
    for (int ax = 1; ax >= -2; ax -= 3) {
      hk_call_opts_t o = {.axes = &ax, .naxes = 1};
      memset(yp, 0, sizeof yp), memset(mean, 0, sizeof mean),
          memset(rstd, 0, sizeof rstd);
      CHECK_MSG(hk_call_arrays(k, p, &o) == HK_OK, "axis %d: %s", ax,
                hk_last_error());
      int bad = memcmp(mean, tmean, sizeof mean) || memcmp(rstd, trstd,
                                                           sizeof rstd);
      for (int i = 0; i < A; i++)
        for (int j = 0; j < B; j++)
          for (int c = 0; c < C; c++)
            bad |= memcmp(&yp[(i * C + c) * B + j], &ty[(i * B + j) * C + c],
                          sizeof(float)) != 0;
      CHECK_MSG(!bad, "layernorm_f32 along axis %d: not the typed bits", ax);
      CHECK_INT_EQ(hk_call_out_shape(k, p, &o, 3, &nd, shape), HK_OK);
      CHECK(nd == 3 && shape[0] == A && shape[1] == C && shape[2] == B);
      CHECK_INT_EQ(hk_call_out_shape(k, p, &o, 4, &nd, shape), HK_OK);
      CHECK(nd == 2 && shape[0] == A && shape[1] == B);
    }
    /* shapes named in the caller's layout, with the axis */
    int one = 1;
    hk_call_opts_t o = {.axes = &one, .naxes = 1};
    static float big[A * C];
    hk_array_init(&p[4], big, HK_F32, 2, (int64_t[]){A, C});
    CHECK_INT_EQ(hk_call_arrays(k, p, &o), HK_EINVAL);
    CHECK_MSG(strstr(hk_last_error(),
                     "parameter 'mean': the array's shape is (3, 40); with "
                     "parameter 'x' of shape (3, 40, 5) (rows of 40 along "
                     "axis 1) it must be (3, 5) or (3, 1, 5)"),
              "%s", hk_last_error());
    hk_array_init(&p[4], mean, HK_F32, 2, s2);
    int three = 3, two[] = {0, 1};
    hk_call_opts_t far = {.axes = &three, .naxes = 1},
                   many = {.axes = two, .naxes = 2},
                   kept = {.axes = &one, .naxes = 1, .keepdims = 1};
    CHECK_INT_EQ(hk_call_arrays(k, p, &far), HK_EINVAL);
    CHECK_CONTAINS(hk_last_error(), "axis 3 is out of range for parameter "
                                    "'x' of 3 axes");
    CHECK_INT_EQ(hk_call_arrays(k, p, &many), HK_EINVAL);
    CHECK_CONTAINS(hk_last_error(), "takes one axis");
    CHECK_INT_EQ(hk_call_arrays(k, p, &kept), HK_EINVAL);
    CHECK_CONTAINS(hk_last_error(), "takes no keepdims");
  }
  /* y may not overlap x unless it is x */
  hk_array_t yx = a[0];
  yx.data = x + 1;
  yx.nbytes = 0; /* no bounds: the overlap is what is checked */
  a[3] = yx;
  CHECK_INT_EQ(hk_call_arrays(k, a, NULL), HK_EINVAL);
  CHECK_MSG(strstr(hk_last_error(), "parameter 'y' overlaps parameter 'x'"),
            "%s", hk_last_error());
  /* softmax in place over a 3-D array: the typed function's bits */
  CHECK_INT_EQ(hk_kernel_find(ctx, "softmax_f32", &k), HK_OK);
  memcpy(y, x, sizeof y);
  hk_softmax_f32(x, ty, R, C);
  hk_array_t sa[2];
  hk_array_init(&sa[0], y, HK_F32, 3, s3);
  sa[1] = sa[0];
  CHECK_INT_EQ(hk_call_arrays(k, sa, NULL), HK_OK);
  CHECK_MSG(!memcmp(y, ty, sizeof y), "softmax_f32 in place, arrays");
}

/* ---- Plugins ------------------------------------------------------------------- */

/* Exact results (small integers): y[i] = x[i] * s + c[i] + row + k, and
 * t = the row's sum (one), over every row mode. */
static const char shift_json[] =
    "{\"schema_version\": 1, \"name\": \"row_shift\", \"kind\": \"rows\",\n"
    " \"types\": {\"T\": [\"f32\", \"f64\"]},\n"
    " \"params\": [\n"
    "  {\"name\": \"x\", \"type\": \"T\", \"role\": \"in\"},\n"
    "  {\"name\": \"s\", \"type\": \"T\", \"role\": \"in\", \"row\": \"one\"},\n"
    "  {\"name\": \"c\", \"type\": \"T\", \"role\": \"in\", \"row\": \"shared\"},\n"
    "  {\"name\": \"y\", \"type\": \"T\", \"role\": \"out\", \"row\": \"full\"},\n"
    "  {\"name\": \"t\", \"type\": \"T\", \"role\": \"inout\", \"row\": \"one\"},\n"
    "  {\"name\": \"k\", \"type\": \"T\", \"role\": \"scalar\"}],\n"
    " \"body\": [\"T acc_ = 0;\",\n"
    "          \"for (size_t i = 0; i < n; ++i) {\",\n"
    "          \"    y[i] = x[i] * s[0] + c[i] + (T)row + k;\",\n"
    "          \"    acc_ += y[i];\",\n"
    "          \"}\",\n"
    "          \"t[0] = t[0] + acc_;\"]}\n";

/* Every row mode with f16 and bf16 buffers: staged rows. */
static const char mix_json[] =
    "{\"schema_version\": 1, \"name\": \"row_mix\", \"kind\": \"rows\",\n"
    " \"types\": {\"T\": [\"f32\", \"f16\", \"bf16\"]},\n"
    " \"params\": [{\"name\": \"x\", \"type\": \"T\", \"role\": \"in\"},\n"
    "   {\"name\": \"w\", \"type\": \"T\", \"role\": \"in\", \"row\": \"shared\"},\n"
    "   {\"name\": \"y\", \"type\": \"T\", \"role\": \"out\"},\n"
    "   {\"name\": \"m\", \"type\": \"T\", \"role\": \"out\", \"row\": \"one\"},\n"
    "   {\"name\": \"tot\", \"type\": \"T\", \"role\": \"inout\"},\n"
    "   {\"name\": \"s\", \"type\": \"T\", \"role\": \"scalar\"}],\n"
    " \"body\": [\"T sum = m[0];\",\n"
    "          \"for (size_t i = 0; i < n; ++i) {\",\n"
    "          \"    y[i] = x[i] * w[i] + s;\",\n"
    "          \"    y[i] = y[i] / (T)3;\",\n"
    "          \"    sum += y[i];\",\n"
    "          \"    tot[i] = tot[i] + x[i];\",\n"
    "          \"}\",\n"
    "          \"m[0] = sum + (T)row;\"]}\n";

/* row_mix_f16 and _bf16 in ctx (tier `tier`) against row_mix_f32 on the
 * widened data, rounded once: y is stored twice in the body (a row's float
 * copy keeps the first, unrounded), an out "one" buffer starts at 0, the
 * inout is read and written; on 1 and 2 threads, and a flat call. */
static void test_plugins_16(hk_context_t *ctx, hk_tier_t tier) {
  enum { R = 4000, N = 37 };
  hk_kernel_t *k32 = NULL;
  CHECK_INT_EQ(hk_kernel_find(ctx, "row_mix_f32", &k32), HK_OK);
  float *x = malloc(R * N * 4), *w = malloc(N * 4), *y = malloc(R * N * 4),
        *m = malloc(R * 4), *acc = malloc(R * N * 4);
  uint16_t *x16 = malloc(R * N * 2), *w16 = malloc(N * 2),
           *y16 = malloc((R * N + 1) * 2), *m16 = malloc((R + 1) * 2),
           *acc16 = malloc((R * N + 1) * 2), *acc0 = malloc(R * N * 2);
  CHECK(x && w && y && m && acc && x16 && w16 && y16 && m16 && acc16 && acc0);
  for (int bf = 0; k32 && bf < 2; bf++) {
    for (int i = 0; i < R * N; i++) {
      x16[i] = to16(bf, uniform(-8, 8));
      acc0[i] = to16(bf, uniform(-100, 100));
      x[i] = from16(bf, x16[i]);
    }
    for (int j = 0; j < N; j++) w[j] = from16(bf, w16[j] = to16(bf, uniform(0, 2)));
    uint16_t s16 = to16(bf, 0.3);
    float s = from16(bf, s16);
    for (int i = 0; i < R * N; i++) acc[i] = from16(bf, acc0[i]);
    memset(m, 0, R * 4); /* the body reads it: as a staged out starts */
    void *a32[] = {x, w, y, m, acc, &s};
    CHECK_INT_EQ(hk__call_rows_cpu(k32, R, N, a32), HK_OK);
    char name[32];
    snprintf(name, sizeof name, "row_mix_%s", bf ? "bf16" : "f16");
    hk_kernel_t *k = NULL;
    CHECK_INT_EQ(hk_kernel_find(ctx, name, &k), HK_OK);
    if (!k) continue;
    CHECK_INT_EQ(hk_kernel_tier(k), tier);
    CHECK_INT_EQ(hk_kernel_info(k)->targets & HK_TARGET_CUDA, HK_TARGET_CUDA);
    void *a16[] = {x16, w16, y16, m16, acc16, &s16};
    for (int pass = 0; pass < 3; pass++) {
      int threads = pass == 1 ? 1 : 2;
      hk_set_threads(threads);
      memcpy(acc16, acc0, R * N * 2);
      y16[R * N] = m16[R] = acc16[R * N] = 0x5a5a;
      int rows = pass == 2 ? 1 : R;
      if (pass < 2)
        CHECK_INT_EQ(hk__call_rows_cpu(k, R, N, a16), HK_OK);
      else
        CHECK_INT_EQ(hk_call(k, N, a16), HK_OK);
      size_t first = 0;
      CHECK_MSG(same_rounded(bf, y16, y, (size_t)rows * N, &first) &&
                    same_rounded(bf, m16, m, (size_t)rows, &first) &&
                    same_rounded(bf, acc16, acc, (size_t)rows * N, &first),
                "%s on tier %s (%s, %d thread(s)): element %zu differs from "
                "row_mix_f32's, rounded", name, hk_tier_name(tier),
                pass == 2 ? "flat" : "rows", threads, first);
      CHECK_MSG(y16[R * N] == 0x5a5a && m16[R] == 0x5a5a &&
                    acc16[R * N] == 0x5a5a,
                "%s on tier %s: wrote past the end", name, hk_tier_name(tier));
    }
    hk_set_threads(0);
  }
  free(x), free(w), free(y), free(m), free(acc);
  free(x16), free(w16), free(y16), free(m16), free(acc16), free(acc0);
}

/* row_shift_f64 and the plugin layernorm_rows_f32 in a context of tier
 * `tier` (HK_TIER_JIT or HK_TIER_OPT): each against its reference, on 1 and
 * 2 threads. */
static void test_plugins_tier(hk_tier_t tier) {
  const char *src = getenv("HK_SOURCE_DIR");
  const char *none[] = {NULL};
  hk_options_t o = {.plugin_dirs = none, .tier = tier, .flags = HK_NO_CACHE};
  hk_context_t *ctx;
  CHECK_INT_EQ(hk_context_create(&ctx, &o), HK_OK);
  CHECK_MSG(hk_load_string(ctx, shift_json, sizeof shift_json - 1,
                           "row_shift.json") == HK_OK,
            "%s", hk_last_error());
  CHECK_MSG(hk_load_string(ctx, mix_json, sizeof mix_json - 1,
                           "row_mix.json") == HK_OK,
            "%s", hk_last_error());
  test_plugins_16(ctx, tier);
  char path[4096];
  snprintf(path, sizeof path, "%s/plugins/layernorm.json", src ? src : ".");
  CHECK_MSG(hk_load_file(ctx, path) == HK_OK, "%s", hk_last_error());

  hk_kernel_t *k = NULL;
  CHECK_INT_EQ(hk_kernel_find(ctx, "row_shift_f64", &k), HK_OK);
  if (k) {
    CHECK_INT_EQ(hk_kernel_tier(k), tier);
    enum { R = 300, N = 37 };
    static double x[R * N], s[R], b[N], y[R * N + 1], t[R + 1];
    for (int i = 0; i < R * N; i++) x[i] = (double)(i % 11) - 5;
    for (int r = 0; r < R; r++) s[r] = (double)(r % 3);
    for (int j = 0; j < N; j++) b[j] = (double)j;
    double kk = 0.5;
    void *args[] = {x, s, b, y, t, &kk};
    for (int threads = 1; threads <= 2; threads++) {
      hk_set_threads(threads);
      memset(t, 0, sizeof t);
      y[R * N] = t[R] = -7;
      CHECK_INT_EQ(hk__call_rows_cpu(k, R, N, args), HK_OK);
      int bad = 0;
      for (int r = 0; r < R; r++) {
        double sum = 0;
        for (int j = 0; j < N; j++) {
          double want = x[r * N + j] * s[r] + b[j] + r + kk;
          bad += y[r * N + j] != want;
          sum += want;
        }
        bad += t[r] != sum;
      }
      CHECK_MSG(!bad && y[R * N] == -7 && t[R] == -7,
                "row_shift_f64 on tier %s, %d thread(s): %d wrong",
                hk_tier_name(tier), threads, bad);
      /* flat: row 0 only, t accumulates once more */
      double t0 = t[0], t1 = t[1];
      CHECK_INT_EQ(hk_call(k, N, args), HK_OK);
      CHECK_MSG(t[0] == 2 * t0 && t[1] == t1, "row_shift_f64 flat call");
    }
    hk_set_threads(0);
  }

  CHECK_INT_EQ(hk_kernel_find(ctx, "layernorm_rows_f32", &k), HK_OK);
  if (k) {
    CHECK_INT_EQ(hk_kernel_tier(k), tier);
    CHECK_INT_EQ(hk_kernel_info(k)->params[4].row, HK_ROW_ONE);
    rows_data d;
    data_init(&d, HK_F32, 257, 96);
    double scalar;
    void *args[7];
    args_of(&d, OP_LAYERNORM, 1e-5, &scalar, args);
    hk_set_threads(2);
    CHECK_INT_EQ(hk__call_rows_cpu(k, d.rows, d.n, args), HK_OK);
    check_ref(&d, OP_LAYERNORM, 1e-5, hk_tier_name(tier));
    outputs two = outputs_copy(&d);
    hk_set_threads(1);
    data_reset(&d);
    CHECK_INT_EQ(hk__call_rows_cpu(k, d.rows, d.n, args), HK_OK);
    CHECK_MSG(outputs_same(&d, &two, OP_LAYERNORM),
              "layernorm_rows_f32 (%s): 1 and 2 threads differ",
              hk_tier_name(tier));
    hk_set_threads(0);
    outputs_free(&two);
    data_free(&d);
  }
  hk_context_destroy(ctx);
}

/* ---- Errors -------------------------------------------------------------------- */

typedef struct bad_case {
  const char *what, *json, *msg; /* msg: the located error, in full */
} bad_case;

#define HEAD "{\"schema_version\": 1, \"name\": \"k\", \"kind\": \"rows\",\n"
#define X "{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"}"
#define Y "{\"name\": \"y\", \"type\": \"f32\", \"role\": \"out\"}"

static const bad_case bad_cases[] = {
    {"unknown row mode",
     HEAD " \"params\": [" X ",\n  {\"name\": \"y\", \"type\": \"f32\", "
          "\"role\": \"out\", \"row\": \"half\"}],\n \"body\": \"y[0] = x[0];\"}",
     "<bad.json>:3:54: error: params[1].row: unknown row mode \"half\"; expected "
     "\"full\" (n elements a row), \"one\" (one element a row) or \"shared\" "
     "(the same n elements for every row)"},
    {"row not a string",
     HEAD " \"params\": [" X ",\n  {\"name\": \"y\", \"type\": \"f32\", "
          "\"role\": \"out\", \"row\": 1}],\n \"body\": \"y[0] = x[0];\"}",
     "<bad.json>:3:54: error: params[1].row: expected \"full\", \"one\" or "
     "\"shared\", got a number"},
    {"row in an elementwise kernel",
     "{\"schema_version\": 1, \"name\": \"k\", \"kind\": \"elementwise\",\n"
     " \"params\": [" X ",\n  {\"name\": \"y\", \"type\": \"f32\", "
     "\"role\": \"out\", \"row\": \"one\"}],\n \"body\": \"y = x;\"}",
     "<bad.json>:3:47: error: params[1].row: only a rows kernel's buffers have a "
     "row mode, and this kernel's kind is elementwise"},
    {"row on a scalar",
     HEAD " \"params\": [" X ", " Y ",\n  {\"name\": \"s\", \"type\": \"f32\", "
          "\"role\": \"scalar\", \"row\": \"one\"}],\n \"body\": \"y[0] = x[0];\"}",
     "<bad.json>:3:50: error: params[2].row: a scalar has no row mode (it is the "
     "same value for every row)"},
    {"shared out buffer",
     HEAD " \"params\": [" X ",\n  {\"name\": \"y\", \"type\": \"f32\", "
          "\"role\": \"out\", \"row\": \"shared\"}],\n \"body\": \"y[0] = x[0];\"}",
     "<bad.json>:3:54: error: params[1].row: a shared buffer is the same for "
     "every row, and rows run on any thread: only an in buffer may be shared "
     "(this one is out)"},
    {"no body",
     HEAD " \"params\": [" X ", " Y "]}",
     "<bad.json>:1:1: error: kernel: missing required field \"body\" (C "
     "statements run for each row: buffers are pointers to the row, n its "
     "length, row its index)"},
    {"blank body",
     HEAD " \"params\": [" X ", " Y "],\n \"body\": \"  \"}",
     "<bad.json>:3:10: error: body: is empty: expected C code"},
    {"row as a parameter name",
     HEAD " \"params\": [" X ", " Y ",\n  {\"name\": \"row\", \"type\": \"i64\", "
          "\"role\": \"scalar\"}],\n \"body\": \"y[0] = x[0];\"}",
     "<bad.json>:3:12: error: params[2].name: \"row\" is reserved in a rows "
     "kernel: row is the row's index in the body, rows the row count of the "
     "typed function; choose another name"},
    {"no written buffer",
     HEAD " \"params\": [" X "],\n \"body\": \"(void)x;\"}",
     "<bad.json>:2:12: error: params: a rows kernel must write at least one out "
     "or inout buffer"},
    {"a call in the body",
     HEAD " \"params\": [" X ", " Y "],\n \"body\": \"y[0] = printf(x);\"}",
     "<bad.json>:3:18: error: body: calls 'printf', which is not allowed: kernel "
     "code may call only the C99 <math.h> functions (see schemas/README.md)"},
    {"a call in the cuda body",
     HEAD " \"params\": [" X ", " Y "],\n \"body\": \"y[0] = x[0];\",\n"
          " \"cuda\": \"y[hk_lane] = printf(x);\"}",
     "<bad.json>:4:24: error: cuda: calls 'printf', which is not allowed: "
     "kernel code may call only the C99 <math.h> functions (see "
     "schemas/README.md)"},
    {"__syncthreads in the cuda body (hk_row_sync is the barrier)",
     HEAD " \"params\": [" X ", " Y "],\n \"body\": \"y[0] = x[0];\",\n"
          " \"cuda\": [\"y[0] = x[0];\", \"__syncthreads();\"]}",
     "<bad.json>:4:28: error: cuda: calls '__syncthreads', which is not "
     "allowed"},
    {"a name of generated code in the cuda body",
     HEAD " \"params\": [" X ", " Y "],\n \"body\": \"y[0] = x[0];\",\n"
          " \"cuda\": \"y[0] = hk_row_reduce(x[0]);\"}",
     "<bad.json>:4:18: error: cuda: 'hk_row_reduce' is reserved: names "
     "beginning with hk_ or HK_ belong to generated code"},
    {"hk_lane in the body (only the cuda body has it)",
     HEAD " \"params\": [" X ", " Y "],\n \"body\": \"y[hk_lane] = x[0];\"}",
     "<bad.json>:3:13: error: body: 'hk_lane' is reserved"},
    {"a C++ keyword in the cuda body",
     HEAD " \"params\": [" X ", " Y "],\n \"body\": \"y[0] = x[0];\",\n"
          " \"cuda\": \"float new = hk_row_sum(x[hk_lane]); y[0] = new;\"}",
     "<bad.json>:4:17: error: cuda: 'new' is a C++ keyword"},
    {"a cuda body in a kernel that does not target cuda",
     HEAD " \"targets\": [\"cpu\"], \"params\": [" X ", " Y "],\n"
          " \"body\": \"y[0] = x[0];\",\n \"cuda\": \"y[0] = x[0];\"}",
     "<bad.json>:4:10: error: cuda: this kernel's targets do not list cuda, "
     "so its \"cuda\" body would never run"},
    {"a blank cuda body",
     HEAD " \"params\": [" X ", " Y "],\n \"body\": \"y[0] = x[0];\",\n"
          " \"cuda\": \" \"}",
     "<bad.json>:4:10: error: cuda: is empty: expected CUDA C statements"},
    {"cpu in a rows kernel",
     HEAD " \"params\": [" X ", " Y "],\n \"body\": \"y[0] = x[0];\",\n"
          " \"cpu\": \"y[0] = x[0];\"}",
     "<bad.json>:4:2: error: cpu: this field belongs to raw kernels, and this "
     "kernel's kind is rows"},
    {"cuda in an elementwise kernel",
     "{\"schema_version\": 1, \"name\": \"k\", \"kind\": \"elementwise\",\n"
     " \"params\": [" X ", " Y "],\n \"body\": \"y = x;\",\n"
     " \"cuda\": \"y[0] = x[0];\"}",
     "<bad.json>:4:2: error: cuda: this field belongs to raw and rows kernels, "
     "and this kernel's kind is elementwise"},
    {"a C++ keyword in a body shared with CUDA",
     HEAD " \"params\": [" X ", " Y "],\n \"body\": \"float new = x[0]; y[0] = "
          "new;\"}",
     "<bad.json>:3:17: error: body: 'new' is a C++ keyword, and this code is "
     "compiled as CUDA C++ too (the kernel targets cuda)"},
};

/* Each bad file is refused by hk_load_string with its located error; and a
 * C++ keyword is fine in a cpu-only rows kernel. */
static void test_errors(void) {
  const char *none[] = {NULL};
  hk_options_t o = {.plugin_dirs = none, .tier = HK_TIER_JIT,
                    .flags = HK_NO_CACHE};
  hk_context_t *ctx;
  CHECK_INT_EQ(hk_context_create(&ctx, &o), HK_OK);
  for (size_t i = 0; i < HK_COUNT(bad_cases); i++) {
    const bad_case *c = &bad_cases[i];
    int rc = hk_load_string(ctx, c->json, strlen(c->json), "bad.json");
    CHECK_MSG(rc == HK_ESCHEMA, "%s: loaded (%d)", c->what, rc);
    CHECK_MSG(strstr(hk_last_error(), c->msg) != NULL,
              "%s: the error\n%s\nlacks\n%s", c->what, hk_last_error(),
              c->msg);
  }
  static const char cpu_only[] =
      HEAD " \"targets\": [\"cpu\"], \"params\": [" X ", " Y "],\n"
           " \"body\": \"float new = 0; for (size_t i = 0; i < n; ++i) new += "
           "x[i]; y[0] = new + (float)row;\"}";
  CHECK_MSG(hk_load_string(ctx, cpu_only, sizeof cpu_only - 1, "ok.json") ==
                HK_OK,
            "%s", hk_last_error());
  hk_kernel_t *k;
  if (hk_kernel_find(ctx, "k", &k) == HK_OK) {
    float x[6] = {1, 2, 3, 4, 5, 6}, y[6] = {0};
    void *args[] = {x, y};
    CHECK_INT_EQ(hk__call_rows_cpu(k, 2, 3, args), HK_OK);
    CHECK(y[0] == 6 && y[3] == 16 && y[1] == 0);
  }
  /* a "cuda" body that names every helper is accepted (nvcc and NVRTC
   * compile such bodies in gen_compile and test_nvrtc), and the CPU runs
   * the body, not it */
  static const char with_cuda[] =
      "{\"schema_version\": 1, \"name\": \"kc\", \"kind\": \"rows\",\n"
      " \"params\": [" X ", " Y "],\n"
      " \"body\": \"for (size_t i = 0; i < n; ++i) y[i] = x[i] + (float)row;\",\n"
      " \"cuda\": [\"__shared__ float t[32];\",\n"
      "  \"float s = hk_row_sum(hk_lane < n ? x[hk_lane] : 0.0f);\",\n"
      "  \"float m = hk_row_max(s), l = hk_row_min(m);\",\n"
      "  \"t[hk_lane % 32] = hk_row_bcast(l, 0) + hk_row_tree16(s);\",\n"
      "  \"hk_row_sync();\",\n"
      "  \"for (size_t i = hk_lane; i < n; i += hk_lanes)\",\n"
      "  \"    y[i] = x[i] + (float)row + 0.0f * t[0];\"]}";
  CHECK_MSG(hk_load_string(ctx, with_cuda, sizeof with_cuda - 1,
                           "cuda.json") == HK_OK,
            "%s", hk_last_error());
  if (hk_kernel_find(ctx, "kc", &k) == HK_OK) {
    float x[6] = {1, 2, 3, 4, 5, 6}, y[6] = {0};
    void *args[] = {x, y};
    CHECK_INT_EQ(hk__call_rows_cpu(k, 2, 3, args), HK_OK);
    CHECK(y[0] == 1 && y[2] == 3 && y[3] == 5 && y[5] == 7);
  }
  hk_context_destroy(ctx);
}

int main(void) {
  hk_context_t *ctx;
  const char *none[] = {NULL};
  hk_options_t o = {.plugin_dirs = none, .flags = HK_NO_CACHE};
  CHECK_INT_EQ(hk_context_create(&ctx, &o), HK_OK);
  static size_t shapes[][2] = {{1, 1},  {1, 7},    {3, 31},   {3, 32},
                               {5, 33}, {17, 100}, {2, 1000}, {4096, 768}};
  /* HK_TEST_SMALL (the sanitizer suites): 256 rows still split among the
   * threads (196,608 elements), a sixteenth of the time */
  if (getenv("HK_TEST_SMALL")) shapes[HK_COUNT(shapes) - 1][0] = 256;
  for (int op = 0; op < 3; op++)
    for (int t = 0; t < 2; t++)
      for (size_t s = 0; s < HK_COUNT(shapes); s++)
        test_stdlib_op(ctx, (op_t)op, t ? HK_F64 : HK_F32, shapes[s][0],
                       shapes[s][1]);
  for (int op = 0; op < 3; op++)
    for (int bf = 0; bf < 2; bf++)
      for (size_t s = 0; s < HK_COUNT(shapes); s++)
        /* 256 rows of 768 already run on the thread pool */
        test_stdlib_16(ctx, (op_t)op, bf,
                       shapes[s][0] < 256 ? shapes[s][0] : 256, shapes[s][1]);
  test_empty();
  test_16_nomem(ctx);
  test_info(ctx);
  test_arrays(ctx);
  hk_context_destroy(ctx);
  test_plugins_tier(HK_TIER_JIT);
  /* HK_TEST_JIT_ONLY (tools/test.sh's sanitizer suites): tier opt's
   * objects are gcc's, not instrumented; the first suite checks them */
  if (!getenv("HK_TEST_JIT_ONLY"))
    test_plugins_tier(HK_TIER_OPT);
  else
    printf("NOTE: HK_TEST_JIT_ONLY: tier opt not checked\n");
  test_errors();
  CHECK_DONE();
}
