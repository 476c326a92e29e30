/* fuzz_arrays.c — libFuzzer target: hk_call_arrays on arbitrary array
 * descriptors (ranks, lengths, strides of either sign, offsets, axes,
 * keepdims) over one pool of memory whose bounds every descriptor carries.
 *
 * Differential: a call hk accepts is checked against plain loops over the
 * same descriptors (elementwise: the broadcast sum or product, element by
 * element; reductions: each output against the flat kernel on its row,
 * bit for bit). ASan sees any access outside the pool; a refused call must
 * leave the pool untouched.
 */
#include <hk.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define POOL 4096

static hk_context_t *ctx;
static hk_kernel_t *k_add, *k_mul, *k_sum, *k_max;

typedef struct reader {
  const uint8_t *p;
  size_t n;
} reader;

static int next(reader *r) {
  if (!r->n) return 0;
  r->n--;
  return *r->p++;
}

static void describe(reader *r, hk_array_t *a, float *pool, int out) {
  memset(a, 0, sizeof *a);
  a->dtype = HK_F32;
  a->ndim = next(r) % 5;
  for (int d = 0; d < a->ndim; d++) {
    a->shape[d] = next(r) % 7;
    a->strides[d] = (int8_t)next(r) % 24;
    if (out && a->strides[d] == 0) a->strides[d] = 1;
  }
  a->data = pool + (next(r) << 4 | (next(r) & 15)) % POOL;
  a->base = pool;
  a->nbytes = POOL * sizeof(float);
}

/* a's element at multi-index idx over D axes (broadcast). */
static float at(const hk_array_t *a, int D, const int64_t *idx) {
  int64_t off = 0;
  for (int d = 0; d < a->ndim; d++)
    if (a->shape[d] != 1) off += idx[D - a->ndim + d] * a->strides[d];
  return ((const float *)a->data)[off];
}

/* The same element in the pool's copy `was`. */
static float at_was(const hk_array_t *a, const float *pool, const float *was,
                    int D, const int64_t *idx) {
  hk_array_t b = *a;
  b.data = (void *)(was + ((const float *)a->data - pool));
  return at(&b, D, idx);
}

static int64_t size_of(int nd, const int64_t *shape) {
  int64_t n = 1;
  for (int d = 0; d < nd; d++) n *= shape[d];
  return n;
}

static void unravel(int64_t k, int nd, const int64_t *shape, int64_t *idx) {
  for (int d = nd - 1; d >= 0; d--) {
    idx[d] = k % shape[d];
    k /= shape[d];
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!ctx) {
    const char *none[] = {NULL};
    hk_options_t o = {.plugin_dirs = none, .flags = HK_NO_CACHE};
    if (hk_context_create(&ctx, &o) != HK_OK) abort();
    hk_kernel_find(ctx, "add_f32", &k_add);
    hk_kernel_find(ctx, "mul_f32", &k_mul);
    hk_kernel_find(ctx, "sum_f32", &k_sum);
    hk_kernel_find(ctx, "max_f32", &k_max);
  }
  static float pool[POOL], was[POOL];
  for (int j = 0; j < POOL; j++) pool[j] = (float)((j * 37) % 101) - 50;
  memcpy(was, pool, sizeof pool);
  reader r = {data, size};
  int which = next(&r) % 4;
  if (which < 2) { /* elementwise: x OP y -> out */
    hk_kernel_t *k = which ? k_mul : k_add;
    hk_array_t a[3];
    describe(&r, &a[0], pool, 0);
    describe(&r, &a[1], pool, 0);
    describe(&r, &a[2], pool, 1);
    if (next(&r) & 1) a[2] = a[0]; /* in place */
    int rc = hk_call_arrays(k, a, NULL);
    if (rc != HK_OK) {
      if (memcmp(pool, was, sizeof pool)) abort(); /* refused: untouched */
      return 0;
    }
    int D = a[2].ndim;
    int64_t n = size_of(D, a[2].shape), idx[HK_MAX_DIMS];
    for (int64_t e = 0; e < n; e++) {
      unravel(e, D, a[2].shape, idx);
      float x = at_was(&a[0], pool, was, D, idx);
      float y = at_was(&a[1], pool, was, D, idx);
      float want = which ? x * y : x + y;
      if (at(&a[2], D, idx) != want) abort();
    }
    return 0;
  }
  /* reductions: sum or max over some axes */
  hk_kernel_t *k = which == 2 ? k_sum : k_max;
  hk_array_t a[2];
  describe(&r, &a[0], pool, 0);
  int axes[HK_MAX_DIMS], naxes = next(&r) % 4, bits = next(&r);
  for (int x = 0; x < naxes; x++) axes[x] = (int8_t)next(&r) % 6;
  hk_call_opts_t o = {.axes = naxes ? axes : NULL, .naxes = naxes,
                      .keepdims = bits & 1};
  static float out[POOL];
  hk_array_init(&a[1], out, HK_F32, 0, NULL); /* replaced when the shape is known */
  int ond = 0;
  int64_t oshape[HK_MAX_DIMS];
  if (hk_call_out_shape(k, a, &o, 1, &ond, oshape) != HK_OK) {
    if (hk_call_arrays(k, a, &o) == HK_OK) abort(); /* both must refuse */
    return 0;
  }
  int64_t npos = size_of(ond, oshape);
  if (npos > POOL) return 0;
  if (hk_array_init(&a[1], out, HK_F32, ond, oshape) != HK_OK) abort();
  if (hk_call_arrays(k, a, &o) != HK_OK) abort(); /* its shape was asked */
  if (memcmp(pool, was, sizeof pool)) abort();   /* inputs untouched */
  /* each output against the flat kernel on its gathered row */
  int D = a[0].ndim;
  unsigned rmask = 0;
  if (!naxes) rmask = (1u << D) - 1;
  for (int x = 0; x < naxes; x++) rmask |= 1u << ((axes[x] + D) % D);
  int64_t m = 1, kshape[HK_MAX_DIMS], rshape[HK_MAX_DIMS];
  int nk = 0, nr = 0;
  for (int d = 0; d < D; d++) {
    if (rmask >> d & 1) {
      rshape[nr++] = a[0].shape[d];
      m *= a[0].shape[d];
    } else {
      kshape[nk++] = a[0].shape[d];
    }
  }
  static float row[POOL * 8];
  if (m > POOL * 8) return 0;
  for (int64_t p = 0; p < npos; p++) {
    int64_t kidx[HK_MAX_DIMS], ridx[HK_MAX_DIMS], idx[HK_MAX_DIMS];
    unravel(p, nk, kshape, kidx);
    for (int64_t j = 0; j < m; j++) {
      unravel(j, nr, rshape, ridx);
      for (int d = 0, kc = 0, rc = 0; d < D; d++)
        idx[d] = rmask >> d & 1 ? ridx[rc++] : kidx[kc++];
      row[j] = at(&a[0], D, idx);
    }
    float want;
    void *args[] = {row, &want};
    hk_call(k, (size_t)m, args);
    if (memcmp(&want, &out[p], sizeof want)) abort();
  }
  return 0;
}
