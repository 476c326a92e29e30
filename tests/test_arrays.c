/* test_arrays.c — hk_call_arrays: broadcasting, strides (transposed,
 * sliced, reversed), axis reductions with keepdims, bit-identity across
 * thread counts and with flat calls on contiguous copies, dtype dispatch,
 * and the errors (shapes, axes, dtypes, bounds, overlap), on the stdlib
 * and on a plugin kernel at tiers jit and opt.
 *
 * The reference is independent of hk's iteration: every view is copied to
 * a contiguous array by a plain index loop (unravel, sum of idx * stride).
 */
#include <hk.h>

#include "check.h"

/* ---- views -------------------------------------------------------------- */

static uint64_t rng = 88172645463325252ull;
static double urand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (double)(rng >> 11) / 9007199254740992.0;
}

/* A view of mem (holding enough elements) with the given shape, made
 * non-contiguous in the way `how` says: 0 contiguous, 1 reversed axes
 * (transposed), 2 every other element of the last axis, 3 the first axis
 * reversed (negative stride). */
static hk_array_t view(float *mem, size_t memlen, int nd, const int64_t *shape,
                       int how) {
  hk_array_t a;
  int64_t full[HK_MAX_DIMS] = {0};
  for (int d = 0; d < nd; d++) full[d] = shape[d];
  if (how == 2 && nd) full[nd - 1] = shape[nd - 1] * 2;
  if (how == 1) { /* allocate the reversed shape contiguous, then swap */
    int64_t rev[HK_MAX_DIMS] = {0};
    for (int d = 0; d < nd; d++) rev[d] = shape[nd - 1 - d];
    hk_array_init(&a, mem, HK_F32, nd, rev);
    hk_array_t t = a;
    for (int d = 0; d < nd; d++) {
      t.shape[d] = a.shape[nd - 1 - d];
      t.strides[d] = a.strides[nd - 1 - d];
    }
    return t;
  }
  hk_array_init(&a, mem, HK_F32, nd, full);
  if (how == 2 && nd) {
    a.shape[nd - 1] = shape[nd - 1];
    a.strides[nd - 1] = 2;
  }
  if (how == 3 && nd && shape[0] > 1) {
    a.data = mem + (shape[0] - 1) * a.strides[0];
    a.strides[0] = -a.strides[0];
  }
  CHECK(a.nbytes <= memlen * sizeof(float));
  return a;
}

/* The element of a (broadcast to shape D) at multi-index idx over D axes. */
static float at_bcast(const hk_array_t *a, int D, const int64_t *idx) {
  int64_t off = 0;
  for (int d = 0; d < a->ndim; d++) {
    int o = D - a->ndim + d;
    if (a->shape[d] != 1) off += idx[o] * a->strides[d];
  }
  return ((const float *)a->data)[off];
}

static hk_context_t *ctx;

static hk_kernel_t *kfind(const char *name) {
  hk_kernel_t *k = NULL;
  CHECK_MSG(hk_kernel_find(ctx, name, &k) == HK_OK, "%s", name);
  return k;
}

/* ---- elementwise ------------------------------------------------------- */

/* out = x OP y over a broadcast, compared element by element (exact: one
 * IEEE operation per element). */
static void ew_case(const char *kname, char op, int ndx, const int64_t *sx,
                    int hx, int ndy, const int64_t *sy, int hy) {
  size_t cap = 1 << 18;
  float *mx = malloc(cap * 4), *my = malloc(cap * 4), *mo = malloc(cap * 4);
  for (size_t j = 0; j < cap; j++) {
    mx[j] = (float)(urand() * 8 - 4);
    my[j] = (float)(urand() * 8 - 4);
  }
  hk_array_t a[3];
  a[0] = view(mx, cap, ndx, sx, hx);
  a[1] = view(my, cap, ndy, sy, hy);
  int D = ndx > ndy ? ndx : ndy;
  int64_t shape[HK_MAX_DIMS];
  CHECK_INT_EQ(hk_call_out_shape(kfind(kname), a, NULL, 2, &D, shape), HK_OK);
  CHECK(hk_array_init(&a[2], mo, HK_F32, D, shape) == HK_OK);
  int rc = hk_call_arrays(kfind(kname), a, NULL);
  CHECK_MSG(rc == HK_OK, "%s: %s", kname, hk_last_error());
  int64_t n = hk_array_size(&a[2]), bad = 0;
  for (int64_t k = 0; k < n; k++) {
    int64_t idx[HK_MAX_DIMS], r = k;
    for (int d = D - 1; d >= 0; d--) {
      idx[d] = r % shape[d];
      r /= shape[d];
    }
    float x = at_bcast(&a[0], D, idx), y = at_bcast(&a[1], D, idx);
    float want = op == '+' ? x + y : op == '-' ? x - y : x * y;
    if (mo[k] != want) bad++;
  }
  CHECK_MSG(bad == 0, "%s: %lld of %lld elements differ (views %d, %d)",
            kname, (long long)bad, (long long)n, hx, hy);
  free(mx);
  free(my);
  free(mo);
}

static void test_broadcast(void) {
  ew_case("add_f32", '+', 2, (int64_t[]){3, 4}, 0, 1, (int64_t[]){4}, 0);
  ew_case("mul_f32", '*', 3, (int64_t[]){4, 6, 8}, 0, 1, (int64_t[]){8}, 0);
  ew_case("sub_f32", '-', 2, (int64_t[]){37, 1}, 0, 2, (int64_t[]){1, 29}, 0);
  ew_case("add_f32", '+', 0, NULL, 0, 2, (int64_t[]){5, 7}, 0); /* 0-d */
  ew_case("add_f32", '+', 2, (int64_t[]){0, 4}, 0, 1, (int64_t[]){4}, 0);
  ew_case("add_f32", '+', 3, (int64_t[]){1, 1, 1}, 0, 1, (int64_t[]){1}, 0);
  /* strided views: transposed, sliced, reversed; each against its copy */
  for (int hx = 0; hx < 4; hx++)
    for (int hy = 0; hy < 4; hy++) {
      ew_case("add_f32", '+', 2, (int64_t[]){33, 65}, hx, 2,
              (int64_t[]){33, 65}, hy);
      ew_case("sub_f32", '-', 3, (int64_t[]){5, 6, 7}, hx, 1, (int64_t[]){7},
              hy);
    }
}

/* Written through strided views: a transposed out (the tiled order
 * writes it back a block at a time) and a reversed inout. */
static void test_strided_out(void) {
  hk_kernel_t *add = kfind("add_f32");
  for (int t = 1; t <= 2; t++) {
    hk_set_threads(t);
    int64_t R = 300, C = 200; /* large enough for the thread pool */
    float *x = malloc(sizeof(float) * (size_t)(R * C)), *b = malloc(sizeof(float) * (size_t)C);
    float *o = malloc(sizeof(float) * (size_t)(R * C));
    for (int64_t j = 0; j < R * C; j++) x[j] = (float)(urand() * 4);
    for (int64_t j = 0; j < C; j++) b[j] = (float)j;
    hk_array_t a[3];
    hk_array_init(&a[0], x, HK_F32, 2, (int64_t[]){R, C});
    hk_array_init(&a[1], b, HK_F32, 1, (int64_t[]){C});
    hk_array_init(&a[2], o, HK_F32, 2, (int64_t[]){C, R});
    a[2].shape[0] = R; /* o viewed as (R, C) with strides (1, R) */
    a[2].shape[1] = C;
    a[2].strides[0] = 1;
    a[2].strides[1] = R;
    CHECK_MSG(hk_call_arrays(add, a, NULL) == HK_OK, "%s", hk_last_error());
    int bad = 0;
    for (int64_t r = 0; r < R; r++)
      for (int64_t c = 0; c < C; c++)
        bad += o[c * R + r] != x[r * C + c] + b[c];
    CHECK_MSG(bad == 0, "transposed out: %d wrong (threads %d)", bad, t);
    /* in place through a reversed view: x[::-1] += b, as inout via add */
    hk_array_t v[3];
    hk_array_init(&v[0], x, HK_F32, 2, (int64_t[]){R, C});
    v[0].data = x + (R - 1) * C;
    v[0].strides[0] = -C;
    v[1] = a[1];
    v[2] = v[0];
    float first = x[0], last = x[(R - 1) * C + 5];
    CHECK_MSG(hk_call_arrays(add, v, NULL) == HK_OK, "%s", hk_last_error());
    CHECK(x[0] == first + b[0] && x[(R - 1) * C + 5] == last + b[5]);
    free(x), free(b), free(o);
  }
  hk_set_threads(0);
}

/* x.T + y and x + y written to out.T, in each element size the tiled
 * copies treat apart (4 bytes: 8 x 8 blocks where the CPU has AVX, 8
 * columns at a time in 4 x 4 blocks, then 4, then single columns; 8
 * bytes: the plain loop), over shapes whose rows
 * are copied whole through a heap block (C > 224 f32, padded where a row
 * is a multiple of 1 KB) or in blocks of columns (C > 3040 f32, C > 1520
 * f64), with a last block of rows that is not a multiple of 4. Each
 * element must be the sum of its two operands. */
static void test_transposed_sizes(void) {
  static const int64_t shapes[][2] = {{37, 1003}, {64, 1024}, {19, 2000},
                                      {33, 300}, {9, 3100}};
  static const struct {
    const char *k;
    hk_dtype_t t;
  } kinds[] = {{"add_f32", HK_F32}, {"add_i32", HK_I32}, {"add_f64", HK_F64}};
  for (int th = 1; th <= 2; th++) {
    hk_set_threads(th);
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
      for (size_t q = 0; q < sizeof kinds / sizeof *kinds; q++)
        for (int out_t = 0; out_t <= 1; out_t++) {
          const int64_t R = shapes[s][0], C = shapes[s][1];
          const size_t n = (size_t)(R * C);
          const size_t es = hk_dtype_size(kinds[q].t);
          unsigned char *x = malloc(n * es), *y = malloc(n * es),
                        *o = malloc(n * es);
          for (size_t j = 0; j < n; j++) { /* small integers: exact sums */
            int64_t vx = (int64_t)(urand() * 1000), vy = (int64_t)j % 977;
            if (kinds[q].t == HK_F32) {
              ((float *)(void *)x)[j] = (float)vx;
              ((float *)(void *)y)[j] = (float)vy;
            } else if (kinds[q].t == HK_F64) {
              ((double *)(void *)x)[j] = (double)vx;
              ((double *)(void *)y)[j] = (double)vy;
            } else {
              ((int32_t *)(void *)x)[j] = (int32_t)vx;
              ((int32_t *)(void *)y)[j] = (int32_t)vy;
            }
          }
          memset(o, 0xff, n * es);
          hk_array_t a[3];
          const int64_t sh[2] = {R, C};
          for (int i = 0; i < 3; i++)
            hk_array_init(&a[i], i == 0 ? x : i == 1 ? y : o, kinds[q].t, 2,
                          sh);
          /* the transposed one: element (r, c) at c * R + r */
          hk_array_t *t = &a[out_t ? 2 : 0];
          t->strides[0] = 1;
          t->strides[1] = R;
          CHECK_MSG(hk_call_arrays(kfind(kinds[q].k), a, NULL) == HK_OK, "%s",
                    hk_last_error());
          int64_t bad = 0;
          for (int64_t r = 0; r < R; r++)
            for (int64_t c = 0; c < C; c++) {
              size_t ix = (size_t)(out_t ? r * C + c : c * R + r);
              size_t io = (size_t)(out_t ? c * R + r : r * C + c);
              size_t iy = (size_t)(r * C + c);
              double vx, vy, vo;
              if (kinds[q].t == HK_F32) {
                vx = ((float *)(void *)x)[ix], vy = ((float *)(void *)y)[iy];
                vo = ((float *)(void *)o)[io];
              } else if (kinds[q].t == HK_F64) {
                vx = ((double *)(void *)x)[ix], vy = ((double *)(void *)y)[iy];
                vo = ((double *)(void *)o)[io];
              } else {
                vx = ((int32_t *)(void *)x)[ix];
                vy = ((int32_t *)(void *)y)[iy];
                vo = ((int32_t *)(void *)o)[io];
              }
              bad += vo != vx + vy;
            }
          CHECK_MSG(bad == 0,
                    "%s (%lld, %lld), %s transposed, %d threads: %lld wrong",
                    kinds[q].k, (long long)R, (long long)C,
                    out_t ? "out" : "x", th, (long long)bad);
          free(x), free(y), free(o);
        }
  }
  hk_set_threads(0);
}

/* Large calls: identical for 1 and 2 threads, and equal to the reference. */
static void test_threads(void) {
  for (int t = 1; t <= 2; t++) {
    hk_set_threads(t);
    ew_case("add_f32", '+', 2, (int64_t[]){200, 300}, 1, 1, (int64_t[]){300},
            0);
    ew_case("mul_f32", '*', 2, (int64_t[]){400, 150}, 2, 2,
            (int64_t[]){400, 1}, 0);
  }
  hk_set_threads(0);
}

/* ---- reductions -------------------------------------------------------- */

/* Reduces x (a view) over axes with kernel kname; each output element must
 * equal, bit for bit, the flat call on a contiguous copy of its row. */
static void red_case(const char *kname, int nd, const int64_t *shape, int how,
                     const int *axes, int naxes, int keepdims, int threads) {
  size_t cap = 0;
  int64_t size = 1;
  for (int d = 0; d < nd; d++) size *= shape[d];
  cap = (size_t)size * 2 + 16;
  float *mx = malloc(cap * 4);
  for (size_t j = 0; j < cap; j++) mx[j] = (float)(urand() * 2 - 1);
  hk_array_t a[2];
  a[0] = view(mx, cap, nd, shape, how);
  hk_call_opts_t o = {.axes = axes, .naxes = naxes, .keepdims = keepdims};
  hk_kernel_t *k = kfind(kname);
  int ond;
  int64_t oshape[HK_MAX_DIMS];
  CHECK_INT_EQ(hk_call_out_shape(k, a, &o, 1, &ond, oshape), HK_OK);
  int64_t npos = 1;
  for (int d = 0; d < ond; d++) npos *= oshape[d];
  float *out = malloc((size_t)(npos ? npos : 1) * 4);
  CHECK(hk_array_init(&a[1], out, HK_F32, ond, oshape) == HK_OK);
  hk_set_threads(threads);
  int rc = hk_call_arrays(k, a, &o);
  hk_set_threads(0);
  CHECK_MSG(rc == HK_OK, "%s: %s", kname, hk_last_error());
  /* the reference: for each output position, gather its row in C order
   * over the reduced axes and run the flat kernel on it */
  unsigned rmask = 0;
  if (!axes) rmask = (1u << nd) - 1;
  for (int x = 0; x < naxes; x++) rmask |= 1u << ((axes[x] + nd) % nd);
  int64_t m = 1;
  for (int d = 0; d < nd; d++)
    if (rmask >> d & 1) m *= shape[d];
  float *row = malloc((size_t)(m ? m : 1) * 4);
  int64_t bad = 0;
  for (int64_t p = 0; p < npos; p++) {
    int64_t kidx[HK_MAX_DIMS], r = p;
    int nk = 0;
    for (int d = 0; d < nd; d++)
      if (!(rmask >> d & 1)) nk++;
    for (int d = nk - 1; d >= 0; d--) {
      int64_t len = 0;
      for (int e = 0, c = 0; e < nd; e++)
        if (!(rmask >> e & 1) && c++ == d) len = shape[e];
      kidx[d] = r % len;
      r /= len;
    }
    for (int64_t j = 0; j < m; j++) {
      int64_t idx[HK_MAX_DIMS], rr = j;
      for (int d = nd - 1; d >= 0; d--)
        if (rmask >> d & 1) {
          idx[d] = rr % shape[d];
          rr /= shape[d];
        }
      for (int d = 0, c = 0; d < nd; d++)
        if (!(rmask >> d & 1)) idx[d] = kidx[c++];
      row[j] = at_bcast(&a[0], nd, idx);
    }
    float want;
    void *args[] = {row, &want};
    hk_call(k, (size_t)m, args);
    if (memcmp(&want, &out[p], 4) != 0) bad++;
  }
  CHECK_MSG(bad == 0, "%s: %lld of %lld outputs differ (view %d, threads %d)",
            kname, (long long)bad, (long long)npos, how, threads);
  free(row);
  free(out);
  free(mx);
}

static void test_reductions(void) {
  const char *ks[] = {"sum_f32", "max_f32", "mean_f32"};
  for (int q = 0; q < 3; q++)
    for (int how = 0; how < 4; how++) {
      red_case(ks[q], 2, (int64_t[]){37, 53}, how, (int[]){1}, 1, 0, 1);
      red_case(ks[q], 2, (int64_t[]){37, 53}, how, (int[]){0}, 1, 1, 1);
      red_case(ks[q], 2, (int64_t[]){37, 53}, how, (int[]){-1}, 1, 0, 2);
      red_case(ks[q], 3, (int64_t[]){4, 5, 6}, how, (int[]){0, 2}, 2, 0, 2);
      red_case(ks[q], 3, (int64_t[]){4, 5, 6}, how, (int[]){1}, 1, 1, 2);
      red_case(ks[q], 3, (int64_t[]){4, 5, 6}, how, NULL, 0, 0, 1);
      red_case(ks[q], 3, (int64_t[]){4, 0, 6}, how, (int[]){2}, 1, 0, 1);
      red_case(ks[q], 3, (int64_t[]){4, 0, 6}, how, (int[]){1}, 1, 0, 1);
      red_case(ks[q], 2, (int64_t[]){1, 9}, how, (int[]){0}, 1, 0, 1);
      /* an empty reduced axis beside another, not contiguous (fuzz_arrays
       * found a division by zero here) */
      red_case(ks[q], 3, (int64_t[]){3, 0, 5}, how, (int[]){1, 2}, 2, 0, 1);
    }
  /* many rows on the thread pool; rows longer than a reduction block (so a
   * row is blocks and a merge) */
  for (int t = 1; t <= 2; t++) {
    red_case("sum_f32", 2, (int64_t[]){256, 768}, 0, (int[]){-1}, 1, 0, t);
    red_case("sum_f32", 2, (int64_t[]){256, 768}, 1, (int[]){-1}, 1, 0, t);
    red_case("sum_f32", 2, (int64_t[]){3, 100000}, 0, (int[]){1}, 1, 0, t);
    red_case("sum_f32", 2, (int64_t[]){100000, 3}, 0, (int[]){0}, 1, 0, t);
    red_case("sum_f32", 2, (int64_t[]){1, 200000}, 1, (int[]){1}, 1, 0, t);
  }
}

/* dot (x * y summed) over one axis of a (R, C) x, y broadcast: (R, 1),
 * (C,), 0-d, or x's shape; each output must have the bits of the flat
 * dot over its column (or row) copied out. Along axis 0 a broadcast y
 * goes through the column reduction's staged copies (stage_cols), along
 * axis 1 the rows read x in place beside y's repeated element. */
static void test_broadcast_reduction(void) {
  hk_kernel_t *k = kfind("dot_f32");
  if (!k) return;
  const int64_t shapes[][2] = {{37, 53}, {300, 200}, {40000, 24}};
  for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++) {
    const int64_t R = shapes[sh][0], C = shapes[sh][1];
    float *x = malloc((size_t)(R * C) * 4), *y = malloc((size_t)(R * C) * 4);
    const size_t most = (size_t)(R > C ? R : C);
    float *out = malloc(most * 4), *cx = malloc(most * 4),
          *cy = malloc(most * 4);
    for (int64_t i = 0; i < R * C; i++) {
      x[i] = (float)(urand() * 2 - 1);
      y[i] = (float)(urand() * 2 - 1);
    }
    for (int yform = 0; yform < 4; yform++) /* (R,1), (C,), 0-d, (R,C) */
      for (int axis = 0; axis < 2; axis++)
        for (int threads = 1; threads <= 2; threads++) {
          hk_array_t a[3];
          hk_array_init(&a[0], x, HK_F32, 2, (int64_t[]){R, C});
          if (yform == 0) hk_array_init(&a[1], y, HK_F32, 2, (int64_t[]){R, 1});
          if (yform == 1) hk_array_init(&a[1], y, HK_F32, 1, (int64_t[]){C});
          if (yform == 2) hk_array_init(&a[1], y, HK_F32, 0, NULL);
          if (yform == 3) hk_array_init(&a[1], y, HK_F32, 2, (int64_t[]){R, C});
          const int64_t npos = axis ? R : C, m = axis ? C : R;
          hk_array_init(&a[2], out, HK_F32, 1, (int64_t[]){npos});
          hk_call_opts_t o = {.axes = (int[]){axis}, .naxes = 1};
          hk_set_threads(threads);
          int rc = hk_call_arrays(k, a, &o);
          hk_set_threads(0);
          CHECK_MSG(rc == HK_OK, "%s", hk_last_error());
          int64_t bad = 0;
          for (int64_t p = 0; p < npos; p++) {
            for (int64_t j = 0; j < m; j++) {
              int64_t r = axis ? p : j, c = axis ? j : p;
              cx[j] = x[r * C + c];
              cy[j] = yform == 0 ? y[r] : yform == 1 ? y[c]
                      : yform == 2 ? y[0] : y[r * C + c];
            }
            float want;
            void *args[] = {cx, cy, &want};
            hk_call(k, (size_t)m, args);
            bad += memcmp(&want, &out[p], 4) != 0;
          }
          CHECK_MSG(!bad, "dot over axis %d of (%lld, %lld), y form %d, %d "
                    "thread(s): %lld of %lld outputs differ", axis,
                    (long long)R, (long long)C, yform, threads,
                    (long long)bad, (long long)npos);
        }
    free(x), free(y), free(out), free(cx), free(cy);
  }
}

/* 16-bit and bool arrays: a transposed f16 view gives its contiguous
 * copy's bits (2-byte copies through the tiled path); a bool mask (N, 1)
 * broadcast against (1, M) picks from bf16 arrays. */
static void test_small_types(void) {
  enum { R = 40, C = 70 };
  uint16_t *x = malloc(2 * R * C), *xt = malloc(2 * R * C), *o1 = malloc(2 * R * C),
           *o2 = malloc(2 * R * C);
  for (int j = 0; j < R * C; j++) x[j] = (uint16_t)(0x3c00 + (j * 37) % 4000 - 2000);
  for (int r = 0; r < R; r++)
    for (int c = 0; c < C; c++) xt[c * R + r] = x[r * C + c];
  hk_kernel_t *g = kfind("gelu_f16");
  void *args[] = {x, o1};
  CHECK_INT_EQ(hk_call(g, R * C, args), HK_OK);
  hk_array_t a[2];
  hk_array_init(&a[0], xt, HK_F16, 2, (int64_t[]){R, C});
  a[0].strides[0] = 1; /* xt viewed transposed: equals x */
  a[0].strides[1] = R;
  hk_array_init(&a[1], o2, HK_F16, 2, (int64_t[]){R, C});
  CHECK_MSG(hk_call_arrays(g, a, NULL) == HK_OK, "%s", hk_last_error());
  CHECK(memcmp(o1, o2, 2 * R * C) == 0);
  uint8_t mask[R];
  uint16_t p[C], q[C], *w = malloc(2 * R * C);
  for (int r = 0; r < R; r++) mask[r] = (uint8_t)(r % 3 == 0);
  for (int c = 0; c < C; c++) p[c] = (uint16_t)(0x3f80 + c), q[c] = (uint16_t)(0xbf80 + c);
  hk_array_t m[4];
  hk_array_init(&m[0], mask, HK_BOOL, 2, (int64_t[]){R, 1});
  hk_array_init(&m[1], p, HK_BF16, 2, (int64_t[]){1, C});
  hk_array_init(&m[2], q, HK_BF16, 1, (int64_t[]){C});
  hk_array_init(&m[3], w, HK_BF16, 2, (int64_t[]){R, C});
  hk_kernel_t *wh = NULL;
  CHECK_INT_EQ(hk_kernel_select(ctx, "where", m, 4, &wh), HK_OK);
  CHECK_STR_EQ(wh ? hk_kernel_info(wh)->name : NULL, "where_bf16");
  CHECK_MSG(wh && hk_call_arrays(wh, m, NULL) == HK_OK, "%s", hk_last_error());
  int bad = 0;
  for (int r = 0; r < R; r++)
    for (int c = 0; c < C; c++) bad += w[r * C + c] != (mask[r] ? p[c] : q[c]);
  CHECK_MSG(bad == 0, "where bf16: %d wrong", bad);
  free(x), free(xt), free(o1), free(o2), free(w);
}

/* ---- dispatch and errors ----------------------------------------------- */

static void test_select(void) {
  float x[6] = {1, 2, 3, 4, 5, 6}, y[6];
  double xd[6] = {1, 2, 3, 4, 5, 6}, yd[6];
  hk_array_t a[3], b[3];
  hk_array_init(&a[0], x, HK_F32, 2, (int64_t[]){2, 3});
  hk_array_init(&a[1], x, HK_F32, 1, (int64_t[]){3});
  hk_array_init(&a[2], y, HK_F32, 2, (int64_t[]){2, 3});
  hk_kernel_t *k = NULL;
  /* the name of instances is no kernel: hk_kernel_find says what it is */
  CHECK_INT_EQ(hk_kernel_find(ctx, "add", &k), HK_ENOTFOUND);
  CHECK_CONTAINS(hk_last_error(), "no kernel named 'add', but it has "
                                  "instances (add_");
  CHECK_CONTAINS(hk_last_error(), "hk_kernel_select");
  CHECK_INT_EQ(hk_kernel_find(ctx, "no_such_kernel", &k), HK_ENOTFOUND);
  CHECK_STR_EQ(hk_last_error(), "no kernel named 'no_such_kernel'");
  CHECK_INT_EQ(hk_kernel_select(ctx, "add", a, 3, &k), HK_OK);
  CHECK_STR_EQ(k ? hk_kernel_info(k)->name : NULL, "add_f32");
  CHECK_INT_EQ(hk_call_arrays(k, a, NULL), HK_OK);
  CHECK(y[0] == 2 && y[1] == 4 && y[2] == 6 && y[3] == 5 && y[5] == 9);
  hk_array_init(&b[0], xd, HK_F64, 1, (int64_t[]){6});
  hk_array_init(&b[1], xd, HK_F64, 1, (int64_t[]){6});
  hk_array_init(&b[2], yd, HK_F64, 1, (int64_t[]){6});
  CHECK_INT_EQ(hk_kernel_select(ctx, "add", b, 3, &k), HK_OK);
  CHECK_STR_EQ(k ? hk_kernel_info(k)->name : NULL, "add_f64");
  /* mixed: f32, f64 */
  b[0] = a[0];
  CHECK_INT_EQ(hk_kernel_select(ctx, "add", b, 3, &k), HK_EINVAL);
  CHECK_CONTAINS(hk_last_error(), "add");
  CHECK_CONTAINS(hk_last_error(), "add_f32");
  /* each parameter named with its dtype */
  CHECK_CONTAINS(hk_last_error(), "'x' f32, 'y' f64, 'out' f64");
  hk_array_t c[3] = {a[0], a[1], a[2]};
  c[0].dtype = HK_I8;
  CHECK_INT_EQ(hk_kernel_select(ctx, "add", c, 3, &k), HK_EINVAL);
  CHECK_CONTAINS(hk_last_error(), "parameter 'x' is i8");
  CHECK_INT_EQ(hk_kernel_select(ctx, "no_such_kernel", a, 3, &k),
               HK_ENOTFOUND);
  CHECK_INT_EQ(hk_kernel_select(ctx, "add", a, 2, &k), HK_EINVAL);
  /* the exact name still works */
  CHECK_INT_EQ(hk_kernel_select(ctx, "add_f32", a, 3, &k), HK_OK);
  CHECK_INT_EQ(hk_kernel_select(ctx, "add_f64", a, 3, &k), HK_EINVAL);
  CHECK_CONTAINS(hk_last_error(), "parameter 'x' is f64");
  /* a user kernel named add (f64 only) is picked for f64 arrays, and does
   * not hide the stdlib's add_f32 from f32 ones */
  static const char user_add[] =
      "{\"schema_version\": 1, \"name\": \"add\", \"kind\": \"elementwise\","
      " \"params\": [{\"name\": \"x\", \"type\": \"f64\", \"role\": \"in\"},"
      " {\"name\": \"y\", \"type\": \"f64\", \"role\": \"in\"},"
      " {\"name\": \"out\", \"type\": \"f64\", \"role\": \"out\"}],"
      " \"body\": \"out = x * y;\"}";
  CHECK_INT_EQ(hk_load_string(ctx, user_add, sizeof user_add - 1, "add.json"),
               HK_OK);
  CHECK_INT_EQ(hk_kernel_select(ctx, "add", a, 3, &k), HK_OK);
  CHECK_STR_EQ(k ? hk_kernel_info(k)->name : NULL, "add_f32");
  hk_array_init(&b[0], xd, HK_F64, 1, (int64_t[]){6});
  CHECK_INT_EQ(hk_kernel_select(ctx, "add", b, 3, &k), HK_OK);
  CHECK_STR_EQ(k ? hk_kernel_info(k)->origin : NULL, "json");
  c[0].dtype = HK_I8; /* neither: the instances' types are said */
  CHECK_INT_EQ(hk_kernel_select(ctx, "add", c, 3, &k), HK_EINVAL);
  CHECK_CONTAINS(hk_last_error(), "parameter 'x' is i8 here");
}

static void test_errors(void) {
  float x[12] = {0}, y[12] = {0}, ob[12] = {0};
  hk_kernel_t *add = kfind("add_f32"), *sum = kfind("sum_f32");
  hk_array_t a[3];
  hk_array_init(&a[0], x, HK_F32, 2, (int64_t[]){3, 4});
  hk_array_init(&a[1], y, HK_F32, 1, (int64_t[]){3});
  hk_array_init(&a[2], ob, HK_F32, 2, (int64_t[]){3, 4});
  CHECK_INT_EQ(hk_call_arrays(add, a, NULL), HK_EINVAL);
  CHECK_CONTAINS(hk_last_error(), "parameter 'x' (3, 4)");
  CHECK_CONTAINS(hk_last_error(), "parameter 'y' (3,)");
  /* an out of the wrong shape */
  hk_array_init(&a[1], y, HK_F32, 1, (int64_t[]){4});
  hk_array_init(&a[2], ob, HK_F32, 1, (int64_t[]){12});
  CHECK_INT_EQ(hk_call_arrays(add, a, NULL), HK_EINVAL);
  CHECK_CONTAINS(hk_last_error(), "parameter 'out'");
  CHECK_CONTAINS(hk_last_error(), "needs (3, 4)");
  /* dtype */
  hk_array_init(&a[2], ob, HK_F32, 2, (int64_t[]){3, 4});
  a[1].dtype = HK_F64;
  CHECK_INT_EQ(hk_call_arrays(add, a, NULL), HK_EINVAL);
  CHECK_CONTAINS(hk_last_error(), "parameter 'y': the kernel takes f32");
  a[1].dtype = HK_F32;
  /* a stride reaching outside the buffer */
  a[1].strides[0] = 5;
  CHECK_INT_EQ(hk_call_arrays(add, a, NULL), HK_EINVAL);
  CHECK_CONTAINS(hk_last_error(), "outside its buffer");
  a[1].strides[0] = 1;
  /* out overlapping an input it does not equal; in place is fine */
  hk_array_t ov[3] = {a[0], a[1], a[0]};
  ov[2].data = x + 1;
  ov[2].base = x + 1;
  ov[2].nbytes -= 4;
  ov[2].shape[1] = 3;
  ov[0].shape[1] = 3;
  ov[1].shape[0] = 3;
  CHECK_INT_EQ(hk_call_arrays(add, ov, NULL), HK_EINVAL);
  CHECK_CONTAINS(hk_last_error(), "'out' overlaps parameter 'x'");
  hk_array_t inplace[3] = {a[0], a[1], a[0]};
  CHECK_INT_EQ(hk_call_arrays(add, inplace, NULL), HK_OK);
  /* an out of another dtype that starts where its in does is not the
   * same array: 8 bools cast into the 8 floats over their bytes (and
   * 24 more) must be refused, not run over the bools still to read */
  {
    hk_kernel_t *cast = NULL;
    CHECK_INT_EQ(hk_kernel_find(ctx, "cast_bool_f32", &cast), HK_OK);
    float fl[8] = {0};
    unsigned char *bytes = (unsigned char *)fl;
    for (int q = 0; q < 8; q++) bytes[q] = (unsigned char)(q % 3 != 1);
    hk_array_t cb[2];
    hk_array_init(&cb[0], bytes, HK_BOOL, 1, (int64_t[]){8});
    hk_array_init(&cb[1], fl, HK_F32, 1, (int64_t[]){8});
    CHECK_INT_EQ(hk_call_arrays(cast, cb, NULL), HK_EINVAL);
    CHECK_CONTAINS(hk_last_error(), "'out' overlaps parameter 'x'");
    /* the general path (a strided view) says the same */
    cb[0].shape[0] = 4;
    cb[0].strides[0] = 2;
    cb[1].shape[0] = 4;
    cb[1].strides[0] = 2;
    CHECK_INT_EQ(hk_call_arrays(cast, cb, NULL), HK_EINVAL);
    CHECK_CONTAINS(hk_last_error(), "'out' overlaps parameter 'x'");
  }
  /* interleaved arrays share no element: x[0::2] + 1 into x[1::2] (and
   * back) is allowed; x[0::2] into x[2::2] is not */
  {
    float v[8] = {0, 1, 2, 3, 4, 5, 6, 7}, one = 1;
    hk_array_t il[3];
    hk_array_init(&il[0], v, HK_F32, 1, (int64_t[]){4});
    il[0].strides[0] = 2;
    il[0].base = v; /* the whole of v */
    il[0].nbytes = sizeof v;
    hk_array_init(&il[1], &one, HK_F32, 0, NULL);
    il[2] = il[0];
    il[2].data = v + 1;
    CHECK_MSG(hk_call_arrays(add, il, NULL) == HK_OK, "%s", hk_last_error());
    CHECK(v[1] == 1 && v[3] == 3 && v[5] == 5 && v[7] == 7);
    il[2].data = v + 2;
    il[2].shape[0] = 3;
    il[0].shape[0] = 3;
    CHECK_INT_EQ(hk_call_arrays(add, il, NULL), HK_EINVAL);
    CHECK_CONTAINS(hk_last_error(), "'out' overlaps parameter 'x'");
    /* reversed: x[6::-2] into x[7::-2] */
    il[0].data = v + 6;
    il[0].strides[0] = -2;
    il[0].shape[0] = 4;
    il[2] = il[0];
    il[2].data = v + 7;
    CHECK_MSG(hk_call_arrays(add, il, NULL) == HK_OK, "%s", hk_last_error());
    CHECK(v[7] == 7 && v[1] == 1);
  }
  /* axes are a reduction's: an elementwise call refuses them */
  hk_call_opts_t ax = {.axes = (int[]){0}, .naxes = 1};
  CHECK_INT_EQ(hk_call_arrays(add, inplace, &ax), HK_EINVAL);
  CHECK_CONTAINS(hk_last_error(), "opts->axes is for reductions; an "
                                  "elementwise kernel takes none");
  hk_call_opts_t kd = {.keepdims = 1};
  CHECK_INT_EQ(hk_call_arrays(add, inplace, &kd), HK_EINVAL);
  CHECK_CONTAINS(hk_last_error(), "opts->keepdims is for reductions");
  /* an out with a 0 stride */
  hk_array_t z[3] = {a[0], a[1], a[2]};
  z[2].strides[0] = 0;
  CHECK_INT_EQ(hk_call_arrays(add, z, NULL), HK_EINVAL);
  CHECK_CONTAINS(hk_last_error(), "overlap each other");
  /* reductions: a bad axis, an axis twice, a wrong out shape */
  float s[4];
  hk_array_t r[2];
  hk_array_init(&r[0], x, HK_F32, 2, (int64_t[]){3, 4});
  hk_array_init(&r[1], s, HK_F32, 1, (int64_t[]){3});
  hk_call_opts_t o = {.axes = (int[]){2}, .naxes = 1};
  CHECK_INT_EQ(hk_call_arrays(sum, r, &o), HK_EINVAL);
  CHECK_CONTAINS(hk_last_error(), "axis 2 is out of range");
  o.axes = (int[]){1, -1};
  o.naxes = 2;
  CHECK_INT_EQ(hk_call_arrays(sum, r, &o), HK_EINVAL);
  CHECK_CONTAINS(hk_last_error(), "given twice");
  o.axes = (int[]){0};
  o.naxes = 1;
  CHECK_INT_EQ(hk_call_arrays(sum, r, &o), HK_EINVAL);
  CHECK_CONTAINS(hk_last_error(), "needs (4,)");
  o.keepdims = 1;
  r[1].shape[0] = 1;
  r[1].ndim = 2;
  r[1].shape[1] = 4;
  r[1].strides[0] = 4;
  r[1].strides[1] = 1;
  r[1].nbytes = 16;
  CHECK_INT_EQ(hk_call_arrays(sum, r, &o), HK_OK);
  /* a scalar without data, or outside its bounds, on the contiguous path
   * too (it was read from address 0 there) */
  hk_kernel_t *scale = kfind("scale_f32"), *fill = kfind("fill_f32");
  float alpha = 2, c4[4] = {1, 2, 3, 4}, o4[4] = {9, 9, 9, 9};
  hk_array_t sc[3];
  hk_array_init(&sc[0], c4, HK_F32, 1, (int64_t[]){4});
  hk_array_init(&sc[1], NULL, HK_F32, 0, NULL);
  hk_array_init(&sc[2], o4, HK_F32, 1, (int64_t[]){4});
  CHECK_INT_EQ(hk_call_arrays(scale, sc, NULL), HK_EINVAL);
  CHECK_CONTAINS(hk_last_error(), "parameter 'alpha': data is NULL");
  hk_array_t fl[2];
  hk_array_init(&fl[0], NULL, HK_F32, 0, NULL);
  hk_array_init(&fl[1], o4, HK_F32, 1, (int64_t[]){4});
  CHECK_INT_EQ(hk_call_arrays(fill, fl, NULL), HK_EINVAL);
  CHECK_CONTAINS(hk_last_error(), "data is NULL");
  hk_array_init(&sc[1], &alpha, HK_F32, 0, NULL);
  sc[1].nbytes = 2; /* half a float */
  CHECK_INT_EQ(hk_call_arrays(scale, sc, NULL), HK_EINVAL);
  CHECK_CONTAINS(hk_last_error(), "parameter 'alpha': its strides reach "
                                  "outside its buffer");
  CHECK(o4[0] == 9 && o4[3] == 9);
  sc[1].nbytes = 4;
  CHECK_INT_EQ(hk_call_arrays(scale, sc, NULL), HK_OK);
  CHECK(o4[0] == 2 && o4[3] == 8);
  /* a backend that does not exist, on every path */
  hk_call_opts_t bad = {.backend = (hk_backend_t)5};
  CHECK_INT_EQ(hk_call_arrays(add, inplace, &bad), HK_EINVAL);
  CHECK_CONTAINS(hk_last_error(), "opts->backend is 5");
  bad.axes = (int[]){1};
  bad.naxes = 1;
  CHECK_INT_EQ(hk_call_arrays(sum, r, &bad), HK_EINVAL);
  CHECK_CONTAINS(hk_last_error(), "opts->backend is 5");
  /* a rows kernel's written array whose elements overlap */
  hk_kernel_t *smax = kfind("softmax_f32");
  float sx[16] = {0}, sy[16];
  hk_array_t rw[2];
  hk_array_init(&rw[0], sx, HK_F32, 2, (int64_t[]){4, 4});
  hk_array_init(&rw[1], sy, HK_F32, 2, (int64_t[]){4, 4});
  rw[1].strides[0] = 0;
  CHECK_INT_EQ(hk_call_arrays(smax, rw, NULL), HK_EINVAL);
  CHECK_CONTAINS(hk_last_error(), "parameter 'y': its elements overlap");
  /* the dtypes an instance takes, each named once and whole (f16 was
   * left out beside bf16) */
  unsigned char u8[4] = {0};
  hk_array_t ta[3];
  hk_array_init(&ta[0], u8, HK_U8, 1, (int64_t[]){4});
  hk_array_init(&ta[1], c4, HK_F32, 1, (int64_t[]){4});
  hk_array_init(&ta[2], o4, HK_F32, 1, (int64_t[]){4});
  hk_kernel_t *sel = NULL;
  CHECK_INT_EQ(hk_kernel_select(ctx, "add", ta, 3, &sel), HK_EINVAL);
  CHECK_CONTAINS(hk_last_error(), "its instances take bf16, f16, f32");
  /* the inputs were left unchanged by the refused calls: x was written
   * only by the in-place call (x + y) */
  hk_array_t big;
  CHECK_INT_EQ(hk_array_init(&big, x, HK_F32, 9, (int64_t[]){1, 1, 1, 1, 1, 1, 1, 1, 1}),
               HK_EINVAL);
  CHECK_INT_EQ(hk_array_init(&big, x, HK_F32, 1, (int64_t[]){-1}), HK_EINVAL);
}

/* ---- a plugin kernel at tiers jit and opt ------------------------------ */

static const char *PLUGIN =
    "{\"schema_version\": 1, \"name\": \"axpi\", \"kind\": \"elementwise\","
    " \"types\": {\"T\": [\"f32\"]},"
    " \"params\": [{\"name\": \"alpha\", \"type\": \"T\", \"role\": \"scalar\"},"
    "  {\"name\": \"x\", \"type\": \"T\", \"role\": \"in\"},"
    "  {\"name\": \"y\", \"type\": \"T\", \"role\": \"inout\"}],"
    " \"body\": \"y = alpha * x + y + (T)i;\"}";

static void test_plugin_tier(hk_tier_t tier, const char *cache) {
  const char *none[] = {NULL};
  hk_options_t opts = {.plugin_dirs = none, .cache_dir = cache, .tier = tier,
                       .flags = HK_NO_CACHE};
  hk_context_t *c;
  CHECK_INT_EQ(hk_context_create(&c, &opts), HK_OK);
  CHECK_INT_EQ(hk_load_string(c, PLUGIN, strlen(PLUGIN), "axpi.json"), HK_OK);
  hk_kernel_t *k = NULL;
  float alpha = 2, x[4] = {1, 2, 3, 4}, y[5][4], want[5][4];
  for (int r = 0; r < 5; r++)
    for (int j = 0; j < 4; j++) y[r][j] = want[r][j] = (float)(r * 10 + j);
  hk_array_t a[3];
  hk_array_init(&a[0], &alpha, HK_F32, 0, NULL);
  hk_array_init(&a[1], x, HK_F32, 1, (int64_t[]){4});
  hk_array_init(&a[2], y, HK_F32, 2, (int64_t[]){5, 4});
  CHECK_INT_EQ(hk_kernel_select(c, "axpi", a, 3, &k), HK_OK);
  if (k) {
    CHECK_INT_EQ(hk_kernel_tier(k), tier);
    CHECK_MSG(hk_call_arrays(k, a, NULL) == HK_OK, "%s", hk_last_error());
    int bad = 0;
    for (int r = 0; r < 5; r++)
      for (int j = 0; j < 4; j++)
        bad += y[r][j] != alpha * x[j] + want[r][j] + (float)(r * 4 + j);
    CHECK_MSG(bad == 0, "tier %s: %d wrong", hk_tier_name(tier), bad);
  }
  hk_context_destroy(c);
}

/* The value of the f32 (es 4) or f16 (es 2) element at p. */
static double f32_or_f16(const unsigned char *p, size_t es) {
  if (es == 4) {
    float f;
    memcpy(&f, p, 4);
    return f;
  }
  uint16_t h;
  memcpy(&h, p, 2);
  return hk_f16_to_double(h);
}

/* The overlap test against the bytes themselves: random views x and out
 * (1 to 3 axes, strides of either sign, f16 and f32, so that elements
 * meet in part) of one small buffer. A call whose out shares a byte with
 * x must be refused; one whose out shares none must run, and right (a[:,
 * :4] into a[:, 4:], a[0::2] into a[1::2] along any axis: the extents
 * meet, the elements do not). Outs whose own elements repeat are skipped,
 * as is x being out itself (in place). */
static void test_overlap_exact(void) {
  static const char *const names[] = {"neg_f32", "cast_f16_f32",
                                      "cast_f32_f16"};
  static const size_t esx[] = {4, 2, 4}, eso[] = {4, 4, 2};
  hk_kernel_t *ks[3];
  for (int q = 0; q < 3; q++)
    CHECK_INT_EQ(hk_kernel_find(ctx, names[q], &ks[q]), HK_OK);
  enum { BYTES = 192 };
  static _Alignas(16) unsigned char buf[BYTES], before[BYTES];
  int refused = 0, ran = 0, skipped = 0;
  for (int trial = 0; trial < 4000; trial++) {
    const int q = (int)(urand() * 3);
    const int nd = 1 + (int)(urand() * 3);
    hk_array_t a[2];
    const size_t es[2] = {esx[q], eso[q]};
    int64_t shape[3];
    for (int d = 0; d < nd; d++) shape[d] = 1 + (int64_t)(urand() * 4);
    int fits = 1;
    for (int w = 0; w < 2; w++) {
      hk_array_init(&a[w], buf, w ? (es[1] == 4 ? HK_F32 : HK_F16)
                                  : (es[0] == 4 ? HK_F32 : HK_F16),
                    nd, shape);
      int64_t mn = 0, mx = 0;
      for (int d = 0; d < nd; d++) {
        a[w].strides[d] = (int64_t)(urand() * 13) - 6;
        int64_t span = (shape[d] - 1) * a[w].strides[d];
        if (span < 0) mn += span;
        else mx += span;
      }
      /* the first element where all of them lie in the buffer */
      int64_t lo = -mn, hi = (int64_t)(BYTES / es[w]) - 1 - mx;
      if (hi < lo) {
        fits = 0;
        break;
      }
      int64_t at = lo + (int64_t)(urand() * (double)(hi - lo + 1));
      a[w].data = buf + at * (int64_t)es[w];
      a[w].base = buf;
      a[w].nbytes = BYTES;
    }
    if (!fits) continue;
    /* the bytes out's elements cover, once each; then whether x's meet */
    unsigned char mark[BYTES] = {0};
    int self = 0, meet = 0;
    int64_t idx[3] = {0};
    int64_t count = 1;
    for (int d = 0; d < nd; d++) count *= shape[d];
    for (int w = 1; w >= 0; w--)
      for (int64_t e = 0; e < count; e++) {
        int64_t off = 0;
        for (int d = 0, r = (int)e; d < nd; d++) {
          idx[nd - 1 - d] = r % shape[nd - 1 - d];
          r /= (int)shape[nd - 1 - d];
        }
        for (int d = 0; d < nd; d++) off += idx[d] * a[w].strides[d];
        size_t b0 = (size_t)((unsigned char *)a[w].data - buf) +
                    (size_t)(off * (int64_t)es[w]);
        for (size_t b = b0; b < b0 + es[w]; b++) {
          if (w == 1) self |= mark[b]++;
          else meet |= mark[b] != 0;
        }
      }
    /* the same array: a stride along an axis of length 1 means nothing */
    int same = q == 0 && a[0].data == a[1].data;
    for (int d = 0; d < nd; d++)
      same &= shape[d] == 1 || a[0].strides[d] == a[1].strides[d];
    if (self || same) {
      skipped++;
      continue;
    }
    for (int b = 0; b < BYTES; b++) buf[b] = before[b] = (unsigned char)(urand() * 256);
    int rc = hk_call_arrays(ks[q], a, NULL);
    if (rc != HK_OK && strstr(hk_last_error(), "overlap each other")) {
      skipped++; /* a distinct out the sufficient test cannot tell */
      continue;
    }
    if (meet) {
      CHECK_MSG(rc == HK_EINVAL && strstr(hk_last_error(), "overlaps"),
                "trial %d: %s ran on an out sharing bytes with x (rc %d)",
                trial, names[q], rc);
      refused++;
      continue;
    }
    CHECK_MSG(rc == HK_OK, "trial %d: %s refused disjoint views: %s", trial,
              names[q], hk_last_error());
    if (rc != HK_OK) continue;
    ran++;
    for (int64_t e = 0; e < count; e++) {
      int64_t ox = 0, oo = 0;
      for (int d = 0, r = (int)e; d < nd; d++) {
        idx[nd - 1 - d] = r % shape[nd - 1 - d];
        r /= (int)shape[nd - 1 - d];
      }
      for (int d = 0; d < nd; d++) {
        ox += idx[d] * a[0].strides[d];
        oo += idx[d] * a[1].strides[d];
      }
      const unsigned char *px =
          before + ((unsigned char *)a[0].data - buf) + ox * (int64_t)es[0];
      const unsigned char *po =
          buf + ((unsigned char *)a[1].data - buf) + oo * (int64_t)es[1];
      const double x = f32_or_f16(px, es[0]), got = f32_or_f16(po, es[1]);
      const double want =
          q == 0 ? -x : q == 1 ? x : hk_f16_to_double(hk_f16_from_double((float)x));
      CHECK_MSG((isnan(want) && isnan(got)) || want == got,
                "trial %d: %s element %lld: %g, expected %g", trial,
                names[q], (long long)e, got, want);
    }
  }
  /* each way met often enough to mean something */
  CHECK_MSG(refused > 300 && ran > 300, "refused %d, ran %d, skipped %d",
            refused, ran, skipped);
}

static int count_fn(hk_kernel_t *k, void *user) {
  (void)k;
  ++*(int *)user;
  return 0;
}

/* NULL where an entry point takes a context, kernel or array: HK_EINVAL
 * said, or the documented empty answer, never a crash; and every
 * refusal sets hk_last_error(). */
static void test_null_args(void) {
  hk_kernel_t *k = kfind("add_f32");
  CHECK_INT_EQ(hk_context_create(NULL, NULL), HK_EINVAL);
  CHECK_CONTAINS(hk_last_error(), "hk_context_create");
  hk_context_t *c2 = (hk_context_t *)1;
  hk_options_t bad = {.flags = 64u | HK_NO_CACHE};
  CHECK_INT_EQ(hk_context_create(&c2, &bad), HK_EINVAL);
  CHECK(c2 == NULL);
  CHECK_CONTAINS(hk_last_error(), "opts->flags holds 0x40");
  CHECK_STR_EQ(hk_context_problems(NULL), "");
  CHECK_INT_EQ(hk_watch(NULL, 1), HK_EINVAL);
  CHECK_INT_EQ(hk_context_wait(NULL), HK_EINVAL);
  int n = 0;
  CHECK_INT_EQ(hk_kernel_foreach(NULL, count_fn, &n), HK_EINVAL);
  CHECK_INT_EQ(hk_kernel_foreach(ctx, NULL, NULL), HK_EINVAL);
  CHECK_INT_EQ(hk_kernel_foreach(ctx, count_fn, &n), 0);
  CHECK(n > 100);
  CHECK(hk_kernel_info(NULL) == NULL);
  CHECK_INT_EQ(hk_kernel_tier(NULL), HK_TIER_NONE);
  char buf[16] = "x";
  CHECK_STR_EQ(hk_kernel_note(NULL, buf, sizeof buf), "");
  CHECK_INT_EQ(hk_kernel_wait_opt(NULL), HK_EINVAL);
  CHECK_INT_EQ(hk_kernel_prepare(NULL, HK_BACKEND_CPU), HK_EINVAL);
  int64_t lens[3];
  void *args[3] = {0};
  CHECK_INT_EQ(hk_kernel_lens(NULL, 4, args, lens), HK_EINVAL);
  CHECK_INT_EQ(hk_kernel_lens(k, 4, args, NULL), HK_EINVAL);
  CHECK_INT_EQ(hk_array_size(NULL), -1);
  /* refusals that set no message left an older one */
  CHECK_INT_EQ(hk_set_threads(-3), HK_EINVAL);
  CHECK_CONTAINS(hk_last_error(), "hk_set_threads: -3");
  hk_array_t a;
  float x[1];
  CHECK_INT_EQ(hk_array_init(&a, x, HK_F32, 9, (int64_t[9]){0}), HK_EINVAL);
  CHECK_CONTAINS(hk_last_error(), "ndim 9");
  /* more bytes than int64 holds */
  CHECK_INT_EQ(hk_array_init(&a, x, HK_F32, 1, (int64_t[]){INT64_MAX / 4 + 1}),
               HK_EINVAL);
  CHECK_CONTAINS(hk_last_error(), "byte count overflows");
}

int main(void) {
  const char *none[] = {NULL};
  hk_options_t opts = {.plugin_dirs = none, .flags = HK_NO_CACHE};
  if (hk_context_create(&ctx, &opts) != HK_OK) {
    fprintf(stderr, "%s\n", hk_last_error());
    return 1;
  }
  test_broadcast();
  test_threads();
  test_strided_out();
  test_transposed_sizes();
  test_small_types();
  test_reductions();
  test_broadcast_reduction();
  test_select();
  test_errors();
  test_overlap_exact();
  test_null_args();
  hk_context_destroy(ctx);
  char cache[] = "/tmp/hk-test-arrays-XXXXXX";
  if (!mkdtemp(cache)) return 1;
  test_plugin_tier(HK_TIER_JIT, cache);
  test_plugin_tier(HK_TIER_OPT, cache);
  check_rm_rf(cache);
  CHECK_DONE();
}
