/* arrays.c — hk_call_arrays: kernels over N-D arrays with shapes, strides,
 * broadcasting and axis reductions, on top of the flat entry points.
 *
 * Nothing here is generated per kernel. Every kind already exports
 * range(args, n, begin, end, partial) over flat element indices; an array
 * call is cut into runs of elements that are contiguous in every operand
 * (after broadcasting and merging axes), and each run is one range() call
 * whose pointers are shifted so that the kernel's own index i lands on the
 * run. An operand whose run is not contiguous (a transposed, reversed or
 * broadcast inner axis) is copied through a small buffer on the stack:
 * gathered before the call, scattered after it for outputs (NumPy's
 * buffered nditer does the same). So every tier — the stdlib, jit, opt and
 * prebuilt plugins — gets arrays without new code, and the inner loops
 * stay the vectorised ones.
 *
 * Reductions over axes: each output element reduces its m elements with
 * the tree hk__reduce_blocks fixes for m (blocks reduced into partials,
 * merged in order), whoever computes it; so results never depend on the
 * thread count and equal a flat call on a contiguous copy of the row.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#include <xmmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HK_COPY_AVX 1 /* copy_block's 8 x 8 transposes, on AVX CPUs */
#endif

#include "abi.h"
#include "codegen.h"
#include "cuda.h"
#include "dispatch.h"
#include "hk.h"
#include "hk_lens.h"
#include "internal.h"
#include "registry.h"
#include "threadpool.h"

/* Operands a call may have. */
#define ARR_MAX_ARGS 64
/* The most memory column reductions over several blocks keep for their
 * partials when the blocks go to threads of their own (cols_block_task) */
#define ARR_COLS_PARTS_MAX ((size_t)64 << 20)
/* Elementwise runs: at least this many elements per task. */
#define ARR_TASK_MIN 2048
#define ARR_TASKS_PER_THREAD 4
/* The stack buffer that non-contiguous runs are copied through. */
#define ARR_SCRATCH_BYTES 32768
/* Transposed operands: blocks of this many rows (32 rows of 4-byte
 * elements: two cache lines of each column, each used whole), at most
 * this many columns at a time through the stack's scratch ... */
#define ARR_TILE_ROWS 32
#define ARR_TILE_COLS 256
/* ... or whole rows, when a block of them fits in this much heap (up to
 * 3,040 f32 columns; under the 512 KB L2 of the CPUs measured): then the
 * operands read in place stream along whole rows (runs of 224 columns,
 * 896 bytes before the next row's, are too short for the hardware
 * prefetcher to catch up with). Above glibc's initial mmap threshold (128
 * KB); glibc raises the threshold to a freed mapping's size, so from the
 * second call on the per-task buffer is a free list's, not fresh pages.
 * x.T + y against the contiguous add (AVX2 EPYC, both builds loaded in one
 * process, blocks of calls alternating, best of each; this VM's memory is
 * noisy), one thread / two: 16 whole rows unpadded through a 16 x 16 line
 * buffer (before): 2.9-3.1 / 2.5-3.0 at 1024 x 1024, 3.4-3.5 / 3.2-3.8 at
 * 2048 x 2048; this layout: 2.3-2.4 / 2.0-2.5 and 2.7-3.1 / 2.8-3.1; both
 * 2.4-2.5 at 1000 x 1000. Written to out.T at 1024 x 1024: 3.6-4.7 /
 * 3.5-4.1 before, 2.8-3.9 / 3.0-3.4 after. */
#define ARR_TILE_HEAP 393216

/* ---- descriptors ------------------------------------------------------- */

HK_API int hk_array_init(hk_array_t *a, void *data, hk_dtype_t dtype, int ndim,
                         const int64_t *shape) {
  if (!a) return hk__fail(HK_EINVAL, "hk_array_init: NULL array");
  memset(a, 0, sizeof *a);
  size_t es = hk_dtype_size(dtype);
  if (es == 0)
    return hk__fail(HK_EINVAL, "hk_array_init: dtype %d is not one", (int)dtype);
  if (ndim < 0 || ndim > HK_MAX_DIMS)
    return hk__fail(HK_EINVAL, "hk_array_init: ndim %d is outside [0, %d]",
                    ndim, HK_MAX_DIMS);
  if (ndim > 0 && !shape)
    return hk__fail(HK_EINVAL, "hk_array_init: NULL shape for %d axes", ndim);
  int64_t count = 1;
  for (int d = ndim - 1; d >= 0; d--) {
    if (shape[d] < 0)
      return hk__fail(HK_EINVAL, "hk_array_init: shape[%d] is %lld, negative",
                      d, (long long)shape[d]);
    a->shape[d] = shape[d];
    a->strides[d] = count;
    if (shape[d] != 0 && count > INT64_MAX / shape[d])
      return hk__fail(HK_EINVAL, "hk_array_init: the element count overflows "
                                 "int64");
    count *= shape[d];
  }
  /* the bytes must fit int64 too (byte offsets are signed) */
  if ((uint64_t)count > (uint64_t)INT64_MAX / es || (uint64_t)count > SIZE_MAX / es)
    return hk__fail(HK_EINVAL, "hk_array_init: %lld elements of %zu bytes: "
                               "the byte count overflows",
                    (long long)count, es);
  a->data = data;
  a->dtype = dtype;
  a->ndim = ndim;
  a->base = data;
  a->nbytes = (size_t)count * es;
  return HK_OK;
}

HK_API int64_t hk_array_size(const hk_array_t *a) {
  if (!a) return -1;
  int64_t n = 1;
  for (int d = 0; d < a->ndim; d++) n *= a->shape[d];
  return n;
}

/* ---- checks ------------------------------------------------------------ */

typedef struct call {
  const hk_kernel_t *k;
  const hk_kernel_info_t *info;
  const hk_entry_t *e;
  const hk_array_t *a;
  int nargs;
} call;

static const char *pname(const call *c, int i) {
  return c->info->params[i].name;
}

/* "(3, 4)" into buf. */
static const char *shape_text(int nd, const int64_t *shape, char *buf,
                              size_t len) {
  size_t o = 0;
  o += (size_t)snprintf(buf + o, len - o, "(");
  for (int d = 0; d < nd && o < len; d++)
    o += (size_t)snprintf(buf + o, len - o, d ? ", %lld" : "%lld",
                          (long long)shape[d]);
  if (o < len) snprintf(buf + o, len - o, nd == 1 ? ",)" : ")");
  return buf;
}

static int fail_param(const call *c, int i, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail_param(const call *c, int i, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return hk__fail(HK_EINVAL, "%s: parameter '%s': %s", c->info->name,
                  pname(c, i), msg);
}

/* The lowest and one past the highest byte an array's elements occupy
 * (lo == hi for an empty array). */
static void extent(const hk_array_t *a, uintptr_t *lo, uintptr_t *hi) {
  size_t es = hk_dtype_size(a->dtype);
  intptr_t min = 0, max = 0;
  for (int d = 0; d < a->ndim; d++) {
    if (a->shape[d] == 0) {
      *lo = *hi = (uintptr_t)a->data;
      return;
    }
    intptr_t span = (intptr_t)(a->shape[d] - 1) * (intptr_t)a->strides[d];
    if (span < 0) min += span;
    else max += span;
  }
  *lo = (uintptr_t)a->data + (uintptr_t)(min * (intptr_t)es);
  *hi = (uintptr_t)a->data + (uintptr_t)(max * (intptr_t)es) + es;
}

/* Checks one array against its parameter: dtype, rank, lengths, strides
 * that stay in bounds (and in the address space). */
static int check_array(const call *c, int i) {
  const hk_array_t *a = &c->a[i];
  const hk_param_info_t *p = &c->info->params[i];
  if (a->dtype != p->dtype)
    return fail_param(c, i, "the kernel takes %s; the array is %s",
                      hk_dtype_name(p->dtype), hk_dtype_name(a->dtype));
  if (a->ndim < 0 || a->ndim > HK_MAX_DIMS)
    return fail_param(c, i, "ndim %d is outside [0, %d]", a->ndim,
                      HK_MAX_DIMS);
  if (!a->data && hk_array_size(a) != 0)
    return fail_param(c, i, "data is NULL");
  int64_t count = 1, reach = 0;
  const int64_t lim = INT64_MAX / 16;
  for (int d = 0; d < a->ndim; d++) {
    int64_t len = a->shape[d], st = a->strides[d];
    if (len < 0)
      return fail_param(c, i, "axis %d has a negative length %lld", d,
                        (long long)len);
    if (st > lim || st < -lim)
      return fail_param(c, i, "axis %d has an impossible stride %lld", d,
                        (long long)st);
    if (len != 0 && count > lim / len)
      return fail_param(c, i, "too many elements");
    count *= len;
    if (len && st && (len - 1) > lim / (st < 0 ? -st : st))
      return fail_param(c, i, "axis %d reaches too far", d);
    int64_t span = len ? (len - 1) * (st < 0 ? -st : st) : 0;
    if (reach > lim - span) return fail_param(c, i, "strides reach too far");
    reach += span;
  }
  if (p->role == HK_ROLE_SCALAR && count != 1)
    return fail_param(c, i, "a scalar takes one value; the array has %lld",
                      (long long)count);
  if (a->nbytes && count) {
    uintptr_t lo, hi, b = (uintptr_t)a->base;
    extent(a, &lo, &hi);
    if (lo < b || hi > b + a->nbytes || hi < lo)
      return fail_param(c, i,
                        "its strides reach outside its buffer (%zu bytes)",
                        a->nbytes);
  }
  return HK_OK;
}

/* 1 when a written array's elements are all distinct addresses (axes
 * sorted by stride, each stride beyond the reach of the smaller ones: a
 * sufficient test). */
int hk__array_distinct(const hk_array_t *a) {
  int64_t len[HK_MAX_DIMS], st[HK_MAX_DIMS];
  int nd = 0;
  for (int d = 0; d < a->ndim; d++) {
    if (a->shape[d] == 0) return 1;
    if (a->shape[d] == 1) continue;
    len[nd] = a->shape[d];
    st[nd++] = a->strides[d] < 0 ? -a->strides[d] : a->strides[d];
  }
  for (int x = 1; x < nd; x++) /* insertion sort by stride */
    for (int y = x; y > 0 && st[y] < st[y - 1]; y--) {
      int64_t t = st[y]; st[y] = st[y - 1]; st[y - 1] = t;
      t = len[y]; len[y] = len[y - 1]; len[y - 1] = t;
    }
  int64_t reach = 0;
  for (int d = 0; d < nd; d++) {
    if (st[d] <= reach) return 0;
    reach += (len[d] - 1) * st[d];
  }
  return 1;
}

static int same_array(const hk_array_t *x, const hk_array_t *y) {
  if (x->data != y->data || x->ndim != y->ndim || x->dtype != y->dtype)
    return 0;
  for (int d = 0; d < x->ndim; d++)
    if (x->shape[d] != y->shape[d] ||
        (x->shape[d] > 1 && x->strides[d] != y->strides[d]))
      return 0;
  return 1;
}

static int is_buffer(const call *c, int i) {
  return c->info->params[i].role != HK_ROLE_SCALAR;
}
static int is_written(const call *c, int i) {
  hk_role_t r = c->info->params[i].role;
  return r == HK_ROLE_OUT || r == HK_ROLE_INOUT;
}

/* ---- Do two arrays share a byte? ---------------------------------------------
 *
 * Element x of an array lies at data + sum x_d s_d (bytes); arrays a and b
 * share a byte when some element of a starts less than a's element size
 * before some element of b, or less than b's after it. With each axis of
 * a negative stride turned around (the first element moves to the other
 * end) and each of b's axes too (index u - y for y), that is: nonnegative
 * integers z_i <= U_i, one per axis of either array, with
 * sum c_i z_i in [L, R], every c_i > 0: a bounded subset-sum, which
 * share_dfs decides by search, the terms largest first, pruned by what
 * the rest can add and by their gcd (the interleaved views x[0::2] and
 * x[1::2] fail the gcd test at the root). As NumPy's
 * solve_may_share_memory with a work bound: past it, the arrays are taken
 * to share (the call is refused, never run on arrays that overlap). */

typedef struct share_term {
  __int128 c, u; /* coefficient (bytes), largest z */
} share_term;

typedef struct share_prob {
  share_term t[2 * HK_MAX_DIMS];
  __int128 rest[2 * HK_MAX_DIMS + 1], g[2 * HK_MAX_DIMS + 1];
  int n;
  long work;
} share_prob;

#define SHARE_WORK 200000 /* nodes searched before giving up (shares) */

static __int128 i128_gcd(__int128 a, __int128 b) {
  while (b) {
    __int128 t = a % b;
    a = b;
    b = t;
  }
  return a;
}
static __int128 floor_div(__int128 a, __int128 b) { /* b > 0 */
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}
static __int128 ceil_div(__int128 a, __int128 b) { /* b > 0 */
  return a >= 0 ? (a + b - 1) / b : -(-a / b);
}

/* 1 when terms i.. can sum into [lo, hi] (or the work ran out), else 0. */
static int share_dfs(share_prob *P, int i, __int128 lo, __int128 hi) {
  if (++P->work > SHARE_WORK) return 1;
  if (lo < 0) lo = 0;
  if (hi < lo || lo > P->rest[i]) return 0;
  if (i == P->n) return lo == 0;
  /* a multiple of the terms' gcd must lie in [lo, hi] */
  if (ceil_div(lo, P->g[i]) * P->g[i] > hi) return 0;
  const __int128 c = P->t[i].c;
  __int128 z0 = ceil_div(lo - P->rest[i + 1], c), z1 = floor_div(hi, c);
  if (z0 < 0) z0 = 0;
  if (z1 > P->t[i].u) z1 = P->t[i].u;
  if (i + 1 == P->n) return z0 <= z1;
  for (__int128 z = z0; z <= z1; z++) {
    if (share_dfs(P, i + 1, lo - c * z, hi - c * z)) return 1;
    if (P->work > SHARE_WORK) return 1;
  }
  return 0;
}

/* Adds an array's axes to P as terms (turned around where the stride is
 * negative, and for b every axis: index u - y); *base gets the byte
 * offset of its lowest (a) or highest (b) element from data. */
static void share_terms(share_prob *P, const hk_array_t *x, int flip,
                        __int128 *base) {
  const __int128 es = (__int128)hk_dtype_size(x->dtype);
  *base = (__int128)(intptr_t)x->data;
  for (int d = 0; d < x->ndim; d++) {
    const __int128 u = x->shape[d] - 1, s = (__int128)x->strides[d] * es;
    if (u <= 0 || s == 0) continue;
    /* lowest element: a negative stride's axis at its last index */
    if (s < 0) *base += u * s;
    const __int128 c = s < 0 ? -s : s;
    if (flip) *base += u * c; /* b: from its highest element down */
    int q = 0; /* merged with a term of the same coefficient */
    while (q < P->n && P->t[q].c != c) q++;
    if (q == P->n) P->t[P->n++] = (share_term){c, 0};
    P->t[q].u += u;
  }
}

static int cmp_term(const void *pa, const void *pb) {
  const share_term *a = pa, *b = pb;
  return (a->c < b->c) - (a->c > b->c); /* largest first */
}

/* 1 when arrays a and b may share a byte: they do, or the search could
 * not tell within its bound (an empty array shares none). */
int hk__arrays_may_share(const hk_array_t *a, const hk_array_t *b) {
  for (int d = 0; d < a->ndim; d++)
    if (a->shape[d] == 0) return 0;
  for (int d = 0; d < b->ndim; d++)
    if (b->shape[d] == 0) return 0;
  share_prob P = {.n = 0};
  __int128 pa, pb;
  share_terms(&P, a, 0, &pa);
  share_terms(&P, b, 1, &pb);
  /* a's element at pa + A, b's at pb - B (A, B the sums of the terms):
   * [pa + A, + esa) and [pb - B, + esb) meet when
   * -(esa - 1) <= pa + A - (pb - B) <= esb - 1 */
  const __int128 esa = (__int128)hk_dtype_size(a->dtype),
                 esb = (__int128)hk_dtype_size(b->dtype);
  __int128 lo = pb - pa - (esa - 1), hi = pb - pa + (esb - 1);
  qsort(P.t, (size_t)P.n, sizeof *P.t, cmp_term);
  P.rest[P.n] = 0;
  P.g[P.n] = 0;
  for (int i = P.n - 1; i >= 0; i--) {
    P.rest[i] = P.rest[i + 1] + P.t[i].c * P.t[i].u;
    P.g[i] = i128_gcd(P.t[i].c, P.g[i + 1]);
  }
  if (P.n == 0) return lo <= 0 && hi >= 0;
  return share_dfs(&P, 0, lo, hi);
}

/* Written arrays may not overlap themselves or any other array (share a
 * byte: hk__arrays_may_share), except an in array they equal exactly (in
 * place; elementwise kernels only). */
static int check_overlaps(const call *c, int allow_in_place) {
  for (int w = 0; w < c->nargs; w++) {
    if (!is_written(c, w)) continue;
    const hk_array_t *wa = &c->a[w];
    if (!hk__array_distinct(wa))
      return fail_param(c, w, "its elements overlap each other (a 0 or "
                              "repeating stride): it cannot be written");
    uintptr_t wlo, whi;
    extent(wa, &wlo, &whi);
    if (wlo == whi) continue;
    for (int j = 0; j < c->nargs; j++) {
      if (j == w || !is_buffer(c, j)) continue;
      if (is_written(c, j) && j < w) continue; /* pair seen already */
      uintptr_t lo, hi;
      extent(&c->a[j], &lo, &hi);
      if (lo == hi || hi <= wlo || whi <= lo) continue;
      if (allow_in_place && !is_written(c, j) && same_array(wa, &c->a[j]))
        continue;
      if (!hk__arrays_may_share(wa, &c->a[j])) continue;
      hk_kind_t kind = c->info->kind;
      return hk__fail(
          HK_EINVAL, "%s: parameter '%s' overlaps parameter '%s' in memory (%s)",
          c->info->name, pname(c, w), pname(c, j),
          kind == HK_KIND_ELEMENTWISE
              ? "only the very same array may be written in place"
          : kind == HK_KIND_REDUCTION
              ? "a reduction's results may share no memory with its inputs "
                "or each other"
              : "a raw or grid body may read any element of one after "
                "writing the other's, so an array call takes no array "
                "twice: pass a copy, or give hk_call the same pointer for "
                "a body written to run in place");
    }
  }
  return HK_OK;
}

/* Broadcasts the shapes of the arrays of the parameters in mask (one bit
 * per parameter) into shape; HK_EINVAL naming two parameters that do not
 * broadcast. */
static int broadcast(const call *c, uint64_t mask, int *nd, int64_t *shape) {
  int D = 0, who[HK_MAX_DIMS];
  for (int i = 0; i < c->nargs; i++)
    if (mask >> i & 1 && c->a[i].ndim > D) D = c->a[i].ndim;
  for (int d = 0; d < D; d++) {
    shape[d] = 1;
    who[d] = -1;
  }
  for (int i = 0; i < c->nargs; i++) {
    if (!(mask >> i & 1)) continue;
    const hk_array_t *a = &c->a[i];
    for (int d = 0; d < a->ndim; d++) {
      int o = D - a->ndim + d;
      int64_t len = a->shape[d];
      if (len == 1 || len == shape[o]) continue;
      if (shape[o] == 1) {
        shape[o] = len;
        who[o] = i;
        continue;
      }
      char s1[160], s2[160];
      const hk_array_t *b = &c->a[who[o]];
      return hk__fail(HK_EINVAL,
                      "%s: shapes do not broadcast: parameter '%s' %s and "
                      "parameter '%s' %s (axis %d: %lld vs %lld)",
                      c->info->name, pname(c, who[o]),
                      shape_text(b->ndim, b->shape, s1, sizeof s1),
                      pname(c, i), shape_text(a->ndim, a->shape, s2, sizeof s2),
                      o - D, (long long)shape[o], (long long)len);
    }
  }
  *nd = D;
  return HK_OK;
}

/* The strides of array a seen over a broadcast shape of D axes: 0 where it
 * is broadcast. */
static void strides_over(const hk_array_t *a, int D, const int64_t *shape,
                         int64_t *st) {
  for (int d = 0; d < D; d++) {
    int s = d - (D - a->ndim);
    st[d] = (s < 0 || (a->shape[s] == 1 && shape[d] != 1)) ? 0 : a->strides[s];
  }
}

static int check_shape(const call *c, int i, int nd, const int64_t *shape) {
  const hk_array_t *a = &c->a[i];
  int ok = a->ndim == nd;
  for (int d = 0; ok && d < nd; d++) ok = a->shape[d] == shape[d];
  if (ok) return HK_OK;
  char s1[160], s2[160];
  return fail_param(c, i, "the array's shape is %s; the call needs %s",
                    shape_text(a->ndim, a->shape, s1, sizeof s1),
                    shape_text(nd, shape, s2, sizeof s2));
}

int hk__array_contiguous(const hk_array_t *a) {
  int64_t want = 1;
  for (int d = 0; d < a->ndim; d++) /* an empty array is any layout's */
    if (a->shape[d] == 0) return 1;
  for (int d = a->ndim - 1; d >= 0; d--) {
    if (a->shape[d] != 1 && a->strides[d] != want) return 0;
    want *= a->shape[d];
  }
  return 1;
}

/* ---- copying runs ------------------------------------------------------ */

static void gather(void *dst, const unsigned char *src, int64_t st, size_t es,
                   size_t len) {
  switch (es) {
#define G(T)                                                              \
  {                                                                       \
    T *d = dst;                                                           \
    const T *s = (const T *)src;                                          \
    if (st == 0) { /* broadcast: one element repeated */                  \
      const T v = *s;                                                     \
      for (size_t j = 0; j < len; j++) d[j] = v;                          \
      return;                                                             \
    }                                                                     \
    for (size_t j = 0; j < len; j++) d[j] = s[(int64_t)j * st];           \
    return;                                                               \
  }
    case 1: G(uint8_t)
    case 2: G(uint16_t)
    case 4: G(uint32_t)
    case 8: G(uint64_t)
#undef G
    default:
      for (size_t j = 0; j < len; j++)
        memcpy((unsigned char *)dst + j * es, src + (int64_t)j * st * (int64_t)es,
               es);
  }
}

static void scatter(unsigned char *dst, int64_t st, const void *src, size_t es,
                    size_t len) {
  switch (es) {
#define S(T)                                                              \
  {                                                                       \
    T *d = (T *)dst;                                                      \
    const T *s = src;                                                     \
    for (size_t j = 0; j < len; j++) d[(int64_t)j * st] = s[j];           \
    return;                                                               \
  }
    case 1: S(uint8_t)
    case 2: S(uint16_t)
    case 4: S(uint32_t)
    case 8: S(uint64_t)
#undef S
    default:
      for (size_t j = 0; j < len; j++)
        memcpy(dst + (int64_t)j * st * (int64_t)es,
               (const unsigned char *)src + j * es, es);
  }
}

/* A pointer p shifted back by `by` elements of es bytes: what a kernel
 * indexing [by, ...) must be given to reach p. Integer arithmetic: the
 * shifted pointer may lie outside any object; the kernel only ever adds
 * the index back. */
static void *shift_back(const void *p, size_t by, size_t es) {
  return (void *)((uintptr_t)p - (uintptr_t)(by * es));
}

/* ---- iteration over merged axes ---------------------------------------- */

typedef struct op {
  unsigned char *base; /* the element at index 0 */
  size_t es;
  int64_t st[HK_MAX_DIMS]; /* per iteration axis, in elements */
  int written, read;
} op;

/* Drops axes of length 1 and merges neighbours that are contiguous in
 * every operand of mask; returns the new rank (at least 1). */
static int merge_axes(int nd, int64_t *shape, op *ops, int nops,
                      uint64_t mask) {
  int m = 0;
  for (int d = 0; d < nd; d++) {
    if (shape[d] == 1) continue;
    if (m > 0) {
      int ok = 1;
      for (int o = 0; ok && o < nops; o++)
        if (mask >> o & 1)
          ok = ops[o].st[m - 1] == ops[o].st[d] * shape[d];
      if (ok) {
        shape[m - 1] *= shape[d];
        for (int o = 0; o < nops; o++)
          if (mask >> o & 1) ops[o].st[m - 1] = ops[o].st[d];
        continue;
      }
    }
    shape[m] = shape[d];
    for (int o = 0; o < nops; o++)
      if (mask >> o & 1) ops[o].st[m] = ops[o].st[d];
    m++;
  }
  if (m == 0) {
    shape[0] = 1;
    for (int o = 0; o < nops; o++)
      if (mask >> o & 1) ops[o].st[0] = 0;
    m = 1;
  }
  return m;
}

/* ---- elementwise ------------------------------------------------------- */

typedef struct ew_plan {
  const hk_entry_t *e;
  int nargs;
  int nd;
  int64_t shape[HK_MAX_DIMS];
  size_t n, chunk;
  uint64_t buffers;  /* parameters that are arrays */
  uint64_t buffered; /* ... whose inner runs are copied */
  size_t run_max;    /* elements per copied run */
  size_t tile;       /* rows per block of the tiled order; 0: row order */
  /* tiled by whole rows (run_max is the row): the block's scratch on the
   * heap, heap bytes; run_small is the run in the stack's scratch, should
   * that allocation fail */
  size_t heap, run_small;
  op ops[ARR_MAX_ARGS];
  void *scalars[ARR_MAX_ARGS];
} ew_plan;

/* Per-span state: the scratch runs are copied through, the arguments. */
typedef struct ew_state {
  void *args[ARR_MAX_ARGS];
  unsigned char *buf[ARR_MAX_ARGS];
  unsigned char *ptr[ARR_MAX_ARGS]; /* each operand at the row's column 0 */
} ew_state;

/* After the last axis's index reached its length: wraps it to 0 and
 * carries into the axes before it (the C-order successor of a row). */
static void carry(int64_t *idx, int last, const int64_t *shape) {
  for (int d = last; d > 0 && idx[d] >= shape[d]; d--) {
    idx[d] = 0;
    idx[d - 1]++;
  }
}

static void unravel(size_t flat, int nd, const int64_t *shape, int64_t *idx) {
  for (int d = nd - 1; d >= 0; d--) {
    idx[d] = (int64_t)(flat % (size_t)shape[d]);
    flat /= (size_t)shape[d];
  }
}

/* Points S->ptr at the row whose outer indices are idx[0 .. nd-1). */
static void ew_row(const ew_plan *P, ew_state *S, const int64_t *idx) {
  for (int o = 0; o < P->nargs; o++) {
    if (!(P->buffers >> o & 1)) continue;
    const op *q = &P->ops[o];
    int64_t off = 0;
    for (int d = 0; d + 1 < P->nd; d++) off += idx[d] * q->st[d];
    S->ptr[o] = q->base + off * (int64_t)q->es;
  }
}

/* Runs columns [c0, c0 + len) of the current row, whose first element has
 * the flat index at; the copied operands in pieces of run_max. */
static void ew_run(const ew_plan *P, ew_state *S, size_t c0, size_t len,
                   size_t at) {
  const int in = P->nd - 1;
  size_t step = P->buffered ? P->run_max : len;
  for (size_t k = 0; k < len; k += step) {
    size_t l = len - k < step ? len - k : step, c = c0 + k;
    for (int o = 0; o < P->nargs; o++) {
      if (!(P->buffers >> o & 1)) continue;
      const op *q = &P->ops[o];
      const unsigned char *src = S->ptr[o] + (int64_t)c * q->st[in] * (int64_t)q->es;
      if (P->buffered >> o & 1) {
        if (q->read) gather(S->buf[o], src, q->st[in], q->es, l);
        S->args[o] = shift_back(S->buf[o], at + k, q->es);
      } else {
        S->args[o] = shift_back(src, at + k, q->es);
      }
    }
    P->e->range(S->args, P->n, at + k, at + k + l, NULL);
    for (int o = 0; o < P->nargs; o++)
      if ((P->buffered >> o & 1) && P->ops[o].written)
        scatter(S->ptr[o] + (int64_t)c * P->ops[o].st[in] * (int64_t)P->ops[o].es,
                P->ops[o].st[in], S->buf[o], P->ops[o].es, l);
  }
}

#if defined(__SSE2__)
/* The 4 x 4 block at s (rows ss floats apart), transposed, into d (rows
 * ds floats apart): 4 loads, a shuffle, 4 stores. */
static inline void transpose4(const float *s, int64_t ss, float *d,
                              int64_t ds) {
  __m128 v0 = _mm_loadu_ps(s), v1 = _mm_loadu_ps(s + ss);
  __m128 v2 = _mm_loadu_ps(s + 2 * ss), v3 = _mm_loadu_ps(s + 3 * ss);
  _MM_TRANSPOSE4_PS(v0, v1, v2, v3);
  _mm_storeu_ps(d, v0);
  _mm_storeu_ps(d + ds, v1);
  _mm_storeu_ps(d + 2 * ds, v2);
  _mm_storeu_ps(d + 3 * ds, v3);
}
#endif

/* The tiled copy's prefetches: the lines of the 8 columns (si floats
 * apart) from c0 two blocks of nr rows on, a miss each, which no hardware
 * prefetcher foresees across the column stride (read or written: without,
 * 10-25 % slower either way). */
static inline void prefetch_cols(const float *c0, int64_t si, size_t nr,
                                 int to_dense) {
  for (int q = 0; q < 8; q++) {
    const uintptr_t at = (uintptr_t)(c0 + (int64_t)q * si) + 2 * nr * 4;
    for (size_t r = 0; r < nr; r += 16) {
      if (to_dense) __builtin_prefetch((const void *)(at + r * 4), 0);
      else __builtin_prefetch((const void *)(at + r * 4), 1);
    }
  }
}

#if HK_COPY_AVX
/* copy_block's 4-byte elements in 8 x 8 blocks, where the CPU has AVX
 * (libhk is built for baseline x86-64; this one function for AVX): 8
 * loads, 24 shuffles (unpack, shufps, 128-bit block moves), 8 stores a
 * block, for the SSE path's 16 loads, 32 shuffles and 16 stores. Columns
 * [0, nc) (nc a multiple of 8) of the operand at x (column stride si
 * floats, rows contiguous), rows [0, nr) (a multiple of 8); dense rows dp
 * floats apart. */
__attribute__((target("avx"))) static void
copy_t8(float *x, int64_t si, float *d, int64_t dp, size_t nr, size_t nc,
        int to_dense) {
  for (size_t c = 0; c < nc; c += 8) {
    float *c0 = x + (int64_t)c * si;
    prefetch_cols(c0, si, nr, to_dense);
    for (size_t r = 0; r < nr; r += 8) {
      /* s: the 8 x 8 block read (8 vectors s0 + k * ss), t: where its
       * transpose goes */
      float *s0, *t0;
      int64_t ss, ts;
      if (to_dense) s0 = c0 + r, ss = si, t0 = d + (int64_t)r * dp + (int64_t)c, ts = dp;
      else s0 = d + (int64_t)r * dp + (int64_t)c, ss = dp, t0 = c0 + r, ts = si;
      __m256 v0 = _mm256_loadu_ps(s0), v1 = _mm256_loadu_ps(s0 + ss);
      __m256 v2 = _mm256_loadu_ps(s0 + 2 * ss), v3 = _mm256_loadu_ps(s0 + 3 * ss);
      __m256 v4 = _mm256_loadu_ps(s0 + 4 * ss), v5 = _mm256_loadu_ps(s0 + 5 * ss);
      __m256 v6 = _mm256_loadu_ps(s0 + 6 * ss), v7 = _mm256_loadu_ps(s0 + 7 * ss);
      const __m256 a0 = _mm256_unpacklo_ps(v0, v1), a1 = _mm256_unpackhi_ps(v0, v1);
      const __m256 a2 = _mm256_unpacklo_ps(v2, v3), a3 = _mm256_unpackhi_ps(v2, v3);
      const __m256 a4 = _mm256_unpacklo_ps(v4, v5), a5 = _mm256_unpackhi_ps(v4, v5);
      const __m256 a6 = _mm256_unpacklo_ps(v6, v7), a7 = _mm256_unpackhi_ps(v6, v7);
      const __m256 b0 = _mm256_shuffle_ps(a0, a2, 0x44), b1 = _mm256_shuffle_ps(a0, a2, 0xee);
      const __m256 b2 = _mm256_shuffle_ps(a1, a3, 0x44), b3 = _mm256_shuffle_ps(a1, a3, 0xee);
      const __m256 b4 = _mm256_shuffle_ps(a4, a6, 0x44), b5 = _mm256_shuffle_ps(a4, a6, 0xee);
      const __m256 b6 = _mm256_shuffle_ps(a5, a7, 0x44), b7 = _mm256_shuffle_ps(a5, a7, 0xee);
      _mm256_storeu_ps(t0, _mm256_permute2f128_ps(b0, b4, 0x20));
      _mm256_storeu_ps(t0 + ts, _mm256_permute2f128_ps(b1, b5, 0x20));
      _mm256_storeu_ps(t0 + 2 * ts, _mm256_permute2f128_ps(b2, b6, 0x20));
      _mm256_storeu_ps(t0 + 3 * ts, _mm256_permute2f128_ps(b3, b7, 0x20));
      _mm256_storeu_ps(t0 + 4 * ts, _mm256_permute2f128_ps(b0, b4, 0x31));
      _mm256_storeu_ps(t0 + 5 * ts, _mm256_permute2f128_ps(b1, b5, 0x31));
      _mm256_storeu_ps(t0 + 6 * ts, _mm256_permute2f128_ps(b2, b6, 0x31));
      _mm256_storeu_ps(t0 + 7 * ts, _mm256_permute2f128_ps(b3, b7, 0x31));
    }
  }
}
#endif

/* Bytes between the rows of a block's dense copy of len elements of es
 * bytes: whole cache lines, and one line more where the rows would
 * otherwise lie a multiple of 1 KB apart. Rows 4 KB apart all fall in one
 * set of an 8-way L1 cache (and of L2: 16 sets), so that the copy's 8
 * stores of a transposed group and the kernel's reads of them evict one
 * another: at 1024 x 1024 f32 the padded block copied in half the time. */
static size_t tile_pitch(size_t len, size_t es) {
  size_t p = (len * es + 63) & ~(size_t)63;
  return p % 1024 == 0 ? p + 64 : p;
}

/* Copies a block of nr rows by nc columns between an operand (src: row
 * stride so, column stride si, in elements) and a dense buffer (rows pitch
 * bytes apart), along the operand's contiguous axis. */
static void copy_block(unsigned char *dense, size_t pitch, unsigned char *op_at,
                       int64_t so, int64_t si, size_t nr, size_t nc, size_t es,
                       int to_dense) {
#if defined(__SSE2__)
  /* 4-byte elements whose rows are contiguous (a transposed f32 or i32
   * array): 4 x 4 blocks, 4 loads, a shuffle, 4 stores (the scalar copy
   * below is bound by its one store per element). Eight of the operand's
   * lines at a time, two groups of four columns: columns of a power-of-two
   * row length lie 4 KB apart, in one set of the 8-way L1 cache, and 16
   * lines in flight (a 16 x 16 block) evicted one another before they
   * were used (1.8-2x slower at 1024 x 1024). */
  if (es == 4 && so == 1 && nr % 4 == 0) {
    float *x = (float *)(void *)op_at, *d = (float *)(void *)dense;
    const int64_t dp = (int64_t)(pitch / 4);
    size_t c = 0;
#if HK_COPY_AVX
    if (nr % 8 == 0 && nc >= 8 && hk__isa_level() >= HK_ISA_V3) {
      c = nc - nc % 8;
      copy_t8(x, si, d, dp, nr, c, to_dense);
    }
#endif
    for (; c + 8 <= nc; c += 8) {
      float *c0 = x + (int64_t)c * si, *c4 = c0 + 4 * si;
      prefetch_cols(c0, si, nr, to_dense);
      for (size_t r = 0; r < nr; r += 4) {
        float *d0 = d + (int64_t)r * dp + (int64_t)c;
        if (to_dense) {
          transpose4(c0 + r, si, d0, dp);
          transpose4(c4 + r, si, d0 + 4, dp);
        } else {
          transpose4(d0, dp, c0 + r, si);
          transpose4(d0 + 4, dp, c4 + r, si);
        }
      }
    }
    for (; c + 4 <= nc; c += 4) {
      float *c0 = x + (int64_t)c * si;
      for (size_t r = 0; r < nr; r += 4) {
        float *d0 = d + (int64_t)r * dp + (int64_t)c;
        if (to_dense) transpose4(c0 + r, si, d0, dp);
        else transpose4(d0, dp, c0 + r, si);
      }
    }
    for (; c < nc; c++)
      for (size_t r = 0; r < nr; r++)
        if (to_dense) d[(int64_t)r * dp + (int64_t)c] = x[(int64_t)c * si + (int64_t)r];
        else x[(int64_t)c * si + (int64_t)r] = d[(int64_t)r * dp + (int64_t)c];
    return;
  }
#endif
  switch (es) {
#define B(T)                                                              \
  {                                                                       \
    T *x = (T *)op_at;                                                    \
    for (size_t c = 0; c < nc; c++) {                                     \
      T *col = x + (int64_t)c * si;                                       \
      unsigned char *d = dense + c * sizeof(T);                           \
      /* the next block's line of this column: a miss each, which no     \
       * hardware prefetcher foresees across the column stride */         \
      if (to_dense)                                                       \
        __builtin_prefetch(col + 2 * (int64_t)nr * so, 0);                \
      else                                                                \
        __builtin_prefetch(col + 2 * (int64_t)nr * so, 1);                \
      if (to_dense)                                                       \
        for (size_t r = 0; r < nr; r++)                                   \
          *(T *)(void *)(d + r * pitch) = col[(int64_t)r * so];           \
      else                                                                \
        for (size_t r = 0; r < nr; r++)                                   \
          col[(int64_t)r * so] = *(T *)(void *)(d + r * pitch);           \
    }                                                                     \
    return;                                                               \
  }
    case 1: B(uint8_t)
    case 2: B(uint16_t)
    case 4: B(uint32_t)
    case 8: B(uint64_t)
#undef B
    default:
      for (size_t c = 0; c < nc; c++)
        for (size_t r = 0; r < nr; r++) {
          unsigned char *e = op_at + ((int64_t)c * si + (int64_t)r * so) * (int64_t)es;
          if (to_dense) memcpy(dense + r * pitch + c * es, e, es);
          else memcpy(e, dense + r * pitch + c * es, es);
        }
  }
}

/* Runs the block of rows [r0, re) by columns [c0, c0 + len) (tiled
 * order): the copied operands through S->buf, a block at a time. */
static void ew_block(const ew_plan *P, ew_state *S, size_t r0, size_t re,
                     size_t c0, size_t len) {
  const int in = P->nd - 1;
  const size_t L = (size_t)P->shape[in], nr = re - r0;
  int64_t idx[HK_MAX_DIMS];
  unravel(r0, in, P->shape, idx);
  ew_row(P, S, idx);
  unsigned char *at0[ARR_MAX_ARGS];
  size_t pitch[ARR_MAX_ARGS];
  /* Whole rows, every operand read in place steps from row to row by one
   * row, and the dense copies' rows are unpadded: the block is one run
   * for all of them. */
  int whole = len == L;
  for (int o = 0; o < P->nargs; o++) {
    if (!(P->buffered >> o & 1)) continue;
    const op *q = &P->ops[o];
    pitch[o] = tile_pitch(len, q->es);
    whole = whole && pitch[o] == len * q->es;
    at0[o] = S->ptr[o] + (int64_t)c0 * q->st[in] * (int64_t)q->es;
    if (q->read)
      copy_block(S->buf[o], pitch[o], at0[o], q->st[in - 1], q->st[in], nr, len,
                 q->es, 1);
  }
  for (int o = 0; whole && o < P->nargs; o++)
    if ((P->buffers & ~P->buffered) >> o & 1)
      whole = P->ops[o].st[in] == 1 && P->ops[o].st[in - 1] == (int64_t)L;
  if (whole) {
    size_t at = r0 * L;
    for (int o = 0; o < P->nargs; o++)
      if (P->buffers >> o & 1)
        S->args[o] = shift_back((P->buffered >> o & 1) ? S->buf[o] : S->ptr[o],
                                at, P->ops[o].es);
    P->e->range(S->args, P->n, at, at + nr * L, NULL);
  }
  for (size_t r = r0; r < re && !whole; r++) {
    if (r > r0) {
      unravel(r, in, P->shape, idx);
      ew_row(P, S, idx);
    }
    size_t at = r * L + c0;
    for (int o = 0; o < P->nargs; o++) {
      if (!(P->buffers >> o & 1)) continue;
      const op *q = &P->ops[o];
      if (P->buffered >> o & 1)
        S->args[o] = shift_back(S->buf[o] + (r - r0) * pitch[o], at, q->es);
      else
        S->args[o] = shift_back(S->ptr[o] + (int64_t)c0 * q->st[in] * (int64_t)q->es,
                                at, q->es);
    }
    P->e->range(S->args, P->n, at, at + len, NULL);
  }
  for (int o = 0; o < P->nargs; o++)
    if ((P->buffered >> o & 1) && P->ops[o].written)
      copy_block(S->buf[o], pitch[o], at0[o], P->ops[o].st[in - 1],
                 P->ops[o].st[in], nr, len, P->ops[o].es, 0);
}

/* Runs flat output elements [a, b) of the plan. */
static void ew_span(const ew_plan *P, size_t a, size_t b) {
  _Alignas(64) unsigned char scratch[ARR_SCRATCH_BYTES];
  ew_state S;
  unsigned char *heap = NULL, *room = scratch;
  size_t run_max = P->run_max;
  if (P->heap) {
    heap = malloc(P->heap + 63);
    if (heap) room = (unsigned char *)(((uintptr_t)heap + 63) & ~(uintptr_t)63);
    else run_max = P->run_small; /* blocks of columns in the stack's room */
  }
  if (P->buffered) {
    size_t off = 0, rows = P->tile ? P->tile : 1;
    for (int o = 0; o < P->nargs; o++)
      if (P->buffered >> o & 1) {
        S.buf[o] = room + off;
        /* tiled: each row padded as tile_pitch may pad it */
        off += P->tile ? rows * (((run_max * P->ops[o].es + 63) & ~(size_t)63) + 64)
                       : (run_max * P->ops[o].es + 63) & ~(size_t)63;
      }
  }
  for (int o = 0; o < P->nargs; o++) S.args[o] = P->scalars[o];
  const int in = P->nd - 1;
  const size_t L = (size_t)P->shape[in];
  int64_t idx[HK_MAX_DIMS];
  if (P->tile) {
    /* Blocks of `tile` rows (of one outer index) by run_max columns: a
     * transposed operand is copied a block at a time, reading along its
     * contiguous axis, so that each cache line it brings is used whole
     * (one line per column of the block, not one per element). [a, b)
     * holds whole blocks (call_elementwise cuts tasks so). */
    const size_t A = (size_t)P->shape[in - 1];
    for (size_t r0 = a / L; r0 < b / L;) {
      size_t re = r0 + P->tile;
      size_t edge = (r0 / A + 1) * A; /* the outer index changes there */
      if (re > edge) re = edge;
      if (re > b / L) re = b / L;
      for (size_t c0 = 0; c0 < L; c0 += run_max) {
        size_t len = L - c0 < run_max ? L - c0 : run_max;
        ew_block(P, &S, r0, re, c0, len);
      }
      r0 = re;
    }
    free(heap);
    return;
  }
  unravel(a, P->nd, P->shape, idx);
  ew_row(P, &S, idx);
  while (a < b) {
    size_t col = (size_t)idx[in];
    size_t seg = L - col < b - a ? L - col : b - a;
    ew_run(P, &S, col, seg, a);
    a += seg;
    idx[in] += (int64_t)seg;
    if (idx[in] < (int64_t)L) break; /* b reached mid-row */
    carry(idx, in, P->shape);
    if (a < b) ew_row(P, &S, idx);
  }
}

static void ew_task(void *ctx, size_t t) {
  const ew_plan *P = ctx;
  size_t a = t * P->chunk;
  size_t b = P->n - a > P->chunk ? a + P->chunk : P->n;
  ew_span(P, a, b);
}

static int call_elementwise(const call *c, int nd, const int64_t *shape,
                            size_t n) {
  ew_plan *P = malloc(sizeof *P);
  if (!P) return hk__fail(HK_ENOMEM, "%s: out of memory", c->info->name);
  memset(P, 0, offsetof(ew_plan, ops));
  P->e = c->e;
  P->nargs = c->nargs;
  P->n = n;
  P->nd = nd;
  memcpy(P->shape, shape, sizeof(int64_t) * (size_t)nd);
  for (int i = 0; i < c->nargs; i++) {
    const hk_array_t *a = &c->a[i];
    op *q = &P->ops[i];
    if (!is_buffer(c, i)) {
      P->scalars[i] = a->data;
      continue;
    }
    P->buffers |= (uint64_t)1 << i;
    P->scalars[i] = NULL;
    q->base = a->data;
    q->es = hk_dtype_size(a->dtype);
    q->written = is_written(c, i);
    q->read = c->info->params[i].role != HK_ROLE_OUT;
    strides_over(a, nd, shape, q->st);
  }
  P->nd = merge_axes(nd, P->shape, P->ops, c->nargs, P->buffers);
  size_t per_elem = 0;
  for (int i = 0; i < c->nargs; i++)
    if ((P->buffers >> i & 1) && P->ops[i].st[P->nd - 1] != 1) {
      P->buffered |= (uint64_t)1 << i;
      per_elem += P->ops[i].es;
    }
  if (P->buffered) {
    /* Each copied operand's run rounded up to 64 bytes must fit. */
    size_t nb = (size_t)__builtin_popcountll(P->buffered);
    P->run_max = (ARR_SCRATCH_BYTES - nb * 64) / per_elem;
    if (P->run_max > 1024) P->run_max = 1024;
    /* a copied operand contiguous (or nearly) along the next axis out: a
     * transposed view. Tile, so that its cache lines are used whole. */
    for (int i = 0; i < c->nargs && P->nd >= 2; i++) {
      const op *q = &P->ops[i];
      int64_t si = q->st[P->nd - 1], so = q->st[P->nd - 2];
      if ((P->buffered >> i & 1) && so != 0 && (so < 0 ? -so : so) < 8 &&
          (si < 0 ? -si : si) > 8 && P->shape[P->nd - 2] > 1) {
        P->tile = ARR_TILE_ROWS;
        /* a row of the block: run_max elements of each copied operand,
         * rounded up to whole lines and padded by one (tile_pitch) */
        size_t row_room = ARR_SCRATCH_BYTES / P->tile, pad = nb * 128;
        P->run_max = row_room > pad ? (row_room - pad) / per_elem : 0;
        if (P->run_max > ARR_TILE_COLS) P->run_max = ARR_TILE_COLS;
        if (P->run_max > 16) P->run_max &= ~(size_t)15;
        size_t L = (size_t)P->shape[P->nd - 1];
        size_t heap = P->tile * (L * per_elem + pad);
        if (P->run_max && L > P->run_max && L <= ARR_TILE_HEAP / P->tile &&
            heap <= ARR_TILE_HEAP) {
          P->run_small = P->run_max;
          P->run_max = L;
          P->heap = heap;
        }
        if (P->run_max == 0) { /* too many operands to tile */
          P->tile = 0;
          P->run_max = (ARR_SCRATCH_BYTES - nb * 64) / per_elem;
          if (P->run_max > 1024) P->run_max = 1024;
        }
      }
    }
  }
  int threads = hk__tpool_threads();
  if (threads > 1 && n >= hk__par_min[(c->e->flags & HK_ABI_HEAVY) != 0] &&
      n > ARR_TASK_MIN) {
    size_t ntask = (size_t)threads * ARR_TASKS_PER_THREAD;
    size_t chunk = (n + ntask - 1) / ntask;
    chunk = (chunk + 63) & ~(size_t)63;
    if (chunk < ARR_TASK_MIN) chunk = ARR_TASK_MIN;
    if (P->tile) { /* whole blocks of rows per task */
      size_t blk = P->tile * (size_t)P->shape[P->nd - 1];
      chunk = (chunk + blk - 1) / blk * blk;
    }
    P->chunk = chunk;
    hk__tpool_run(ew_task, P, (n + chunk - 1) / chunk);
  } else {
    ew_span(P, 0, n);
  }
  free(P);
  return HK_OK;
}

/* ---- reductions -------------------------------------------------------- */

typedef struct red_plan {
  const hk_entry_t *e;
  int nargs;
  uint64_t ins, outs;
  /* kept axes (output positions) and reduced axes, merged */
  int nk, nr;
  int64_t kshape[HK_MAX_DIMS], rshape[HK_MAX_DIMS];
  size_t npos, m, group;
  size_t block, nblocks;
  int contiguous; /* every in's reduced run has stride 1 */
  /* > 0: positions are reduced in groups of up to `cols` along the last
   * kept axis by the kernel's colred entry (red_cols) */
  size_t cols;
  /* in operands whose neighbouring positions are not side by side (a
   * (rows, 1) or 0-d operand broadcast along the kept axis, a strided
   * one): red_cols reads their block of a group from a dense copy
   * (stage_cols) */
  uint64_t staged;
  void *scalars[ARR_MAX_ARGS];
  /* last: zeroed for the call's operands only (call_reduction) */
  op kops[ARR_MAX_ARGS]; /* strides over kept axes (ins and outs) */
  op rops[ARR_MAX_ARGS]; /* strides over reduced axes (ins) */
} red_plan;

/* Pointers of every in operand to block [b0, b1) of the reduced elements
 * at input offsets base[]: direct when contiguous, else gathered into buf. */
static void red_block(const red_plan *P, unsigned char *const *base,
                      unsigned char *const *buf, size_t b0, size_t b1,
                      void **args) {
  for (int o = 0; o < P->nargs; o++) {
    if (!(P->ins >> o & 1)) continue;
    const op *q = &P->rops[o];
    /* read in place where this operand's run is one (another's may be
     * broadcast: (x * y).sum(1) with y of shape (rows, 1) copied x too,
     * 2.5 times a same-shape y's time) */
    if (P->contiguous || (P->nr == 1 && q->st[0] == 1)) {
      args[o] = shift_back(base[o], 0, q->es);
      continue;
    }
    /* walk the reduced multi-index from b0, one run of the inner axis at
     * a time */
    int64_t idx[HK_MAX_DIMS];
    unravel(b0, P->nr, P->rshape, idx);
    const int in = P->nr - 1;
    size_t at = b0;
    while (at < b1) {
      int64_t off = 0;
      for (int d = 0; d < P->nr; d++) off += idx[d] * q->st[d];
      size_t seg = (size_t)(P->rshape[in] - idx[in]);
      if (seg > b1 - at) seg = b1 - at;
      gather(buf[o] + (at - b0) * q->es, base[o] + off * (int64_t)q->es,
             q->st[in], q->es, seg);
      at += seg;
      idx[in] += (int64_t)seg;
      carry(idx, in, P->rshape);
    }
    args[o] = shift_back(buf[o], b0, q->es);
  }
}

/* red_cols' walk over output positions: the group of up to P->cols
 * neighbours along the last kept axis starting at position p (before
 * p1), its operands' pointers in args (outputs at the group's first
 * position) and the steps of colred and merge; returns the group's
 * size. */
static size_t cols_group(const red_plan *P, size_t p, size_t p1,
                         void **args, ptrdiff_t *steps) {
  const int kl = P->nk - 1;
  int64_t idx[HK_MAX_DIMS];
  unravel(p, P->nk, P->kshape, idx);
  size_t g = (size_t)P->kshape[kl] - (size_t)idx[kl]; /* to the row's end */
  if (g > p1 - p) g = p1 - p;
  if (g > P->cols) g = P->cols;
  for (int o = 0; o < P->nargs; o++) {
    args[o] = P->scalars[o];
    steps[o] = 0;
    if (!((P->ins | P->outs) >> o & 1)) continue;
    const op *q = &P->kops[o];
    int64_t off = 0;
    for (int d = 0; d < P->nk; d++) off += idx[d] * q->st[d];
    args[o] = q->base + off * (int64_t)q->es;
    if (P->ins >> o & 1)
      steps[o] = (ptrdiff_t)(P->rops[o].st[0] * (int64_t)P->rops[o].es);
    else
      steps[o] = (ptrdiff_t)(q->st[kl] * (int64_t)q->es);
  }
  return g;
}

/* The staged operands' (broadcast along the kept axis) elements [b0, b1)
 * of the group cols_group set args and steps for (g positions) into
 * dense copies at room (rows of g elements, each row's one element
 * repeated; the operands one after the other: stage_room's bytes), args
 * and steps then pointing there as colred reads them: element r of
 * column c at args + r * steps + c * es. (x * y).sum(0) with y of shape
 * (rows, 1) or 0-d gathered each column whole instead: over (4096, 768)
 * f32, 22 ms, 13 times a same-shape y's 1.7 ms; staged, 2-2.5 times. */
static void stage_cols(const red_plan *P, void **args, ptrdiff_t *steps,
                       size_t b0, size_t b1, size_t g, unsigned char *room) {
  for (int o = 0; o < P->nargs; o++) {
    if (!(P->staged >> o & 1)) continue;
    const size_t es = P->kops[o].es;
    const ptrdiff_t rst = steps[o];
    const unsigned char *src = args[o];
    for (size_t r = b0; r < b1; r++) /* gather's stride 0: a fill */
      gather(room + (r - b0) * g * es, src + (ptrdiff_t)r * rst, 0, es, g);
    args[o] = shift_back(room, b0 * g, es);
    steps[o] = (ptrdiff_t)(g * es);
    room += ((b1 - b0) * g * es + 63) & ~(size_t)63;
  }
}

/* The bytes stage_cols needs for groups of up to P->cols positions over
 * one block. */
static size_t stage_room(const red_plan *P) {
  size_t rows = P->nblocks == 1 ? P->m : P->block, bytes = 0;
  for (int o = 0; o < P->nargs; o++)
    if (P->staged >> o & 1)
      bytes += (rows * P->cols * P->kops[o].es + 63) & ~(size_t)63;
  return bytes;
}

/* Merges the nblocks partials of the g positions of a group (args and
 * steps as cols_group set them): position j's partial of block k at
 * parts + (k * stride + j) * acc. */
static void cols_merge(const red_plan *P, void *const *args,
                       const ptrdiff_t *steps, size_t g,
                       const unsigned char *parts, size_t stride) {
  const size_t acc = P->e->acc_size;
  _Alignas(HK_REDUCE_ACC_ALIGN) unsigned char
      one[HK_REDUCE_MAX_BLOCKS * HK_REDUCE_ACC_MAX];
  void *col[ARR_MAX_ARGS];
  for (size_t j = 0; j < g; j++) {
    for (size_t k = 0; k < P->nblocks; k++)
      memcpy(one + k * acc, parts + (k * stride + j) * acc, acc);
    for (int o = 0; o < P->nargs; o++)
      col[o] = P->outs >> o & 1
                   ? (unsigned char *)args[o] + (ptrdiff_t)j * steps[o]
                   : args[o];
    P->e->merge(col, P->m, one, P->nblocks);
  }
}

/* Reduces the output positions [p0, p1) by the kernel's colred entry
 * (abi.h), in groups of up to P->cols neighbours along the last kept
 * axis, whose elements lie side by side in every in operand (stride 1)
 * while the reduced axis is strided: column sums, a mean over the batch
 * axis, dbias += the sum over rows. colred reads each row of a group
 * once, as an elementwise step over its columns, and gives each column
 * range's bits. Gathered a column at a time, the column sums of a (4096,
 * 768) f32 matrix took 20 times the whole sum's time: each cache line was
 * read once per column in it, from memory. parts: room for P->cols *
 * nblocks accumulators when there are several blocks. */
static void red_cols(const red_plan *P, size_t p0, size_t p1,
                     unsigned char *parts, unsigned char *room) {
  void *args[ARR_MAX_ARGS], *at[ARR_MAX_ARGS];
  ptrdiff_t steps[ARR_MAX_ARGS], st[ARR_MAX_ARGS];
  for (size_t p = p0, g; p < p1; p += g) {
    g = cols_group(P, p, p1, args, steps);
    if (P->nblocks == 1) {
      if (P->staged) stage_cols(P, args, steps, 0, P->m, g, room);
      P->e->colred(args, P->m, 0, P->m, g, steps, NULL);
      continue;
    }
    /* block k's accumulators of the group at parts + k * g * acc */
    for (size_t k = 0; k < P->nblocks; k++) {
      size_t b0 = k * P->block;
      size_t b1 = P->m - b0 > P->block ? b0 + P->block : P->m;
      memcpy(at, args, sizeof(void *) * (size_t)P->nargs);
      memcpy(st, steps, sizeof(ptrdiff_t) * (size_t)P->nargs);
      if (P->staged) stage_cols(P, at, st, b0, b1, g, room);
      P->e->colred(at, P->m, b0, b1, g, st, parts + k * g * P->e->acc_size);
    }
    cols_merge(P, args, steps, g, parts, g);
  }
}

/* Column reductions over several blocks on several threads
 * (call_reduction): a task per block reads the block's rows whole, each
 * position's partial to parts + (k * npos + p) * acc; then the merges,
 * as red_cols does them (the same bits). Split by columns instead, each
 * thread read a part of every row: (40000, 768) f32 on two threads took
 * as long as on one. */
typedef struct cols_job {
  const red_plan *P;
  unsigned char *parts;
  _Atomic int failed; /* a block task had no memory for its copies */
} cols_job;

static void cols_block_task(void *ctx, size_t k) {
  cols_job *j = ctx;
  const red_plan *P = j->P;
  const size_t acc = P->e->acc_size;
  const size_t b0 = k * P->block;
  const size_t b1 = P->m - b0 > P->block ? b0 + P->block : P->m;
  void *args[ARR_MAX_ARGS];
  ptrdiff_t steps[ARR_MAX_ARGS];
  unsigned char *room = NULL;
  if (P->staged && !(room = malloc(stage_room(P)))) {
    atomic_store(&j->failed, 1);
    return;
  }
  for (size_t p = 0, g; p < P->npos; p += g) {
    g = cols_group(P, p, P->npos, args, steps);
    if (room) stage_cols(P, args, steps, b0, b1, g, room);
    P->e->colred(args, P->m, b0, b1, g, steps,
                 j->parts + (k * P->npos + p) * acc);
  }
  free(room);
}

static void cols_merge_task(void *ctx, size_t t) {
  const cols_job *j = ctx;
  const red_plan *P = j->P;
  const size_t p0 = t * P->group;
  const size_t p1 = P->npos - p0 > P->group ? p0 + P->group : P->npos;
  void *args[ARR_MAX_ARGS];
  ptrdiff_t steps[ARR_MAX_ARGS];
  for (size_t p = p0, g; p < p1; p += g) {
    g = cols_group(P, p, p1, args, steps);
    cols_merge(P, args, steps, g, j->parts + p * P->e->acc_size, P->npos);
  }
}

/* One block's column reduction over one kept row of npos columns on
 * threads, by the kernel's colpart entry (abi.h): task t computes its
 * share of the block's lanes over every column, reading whole rows (the
 * rows of its lanes); then the caller combines the lanes and stores the
 * results: colred's steps in colred's order, the same bits. Split by
 * columns instead, two threads each read a part of every row and took
 * longer than one under 4 KB of each. */
typedef struct cols_parts_job {
  const red_plan *P;
  void *const *args;
  const ptrdiff_t *steps;
  void *lanes;
  unsigned nparts;
} cols_parts_job;

static void cols_parts_task(void *ctx, size_t t) {
  const cols_parts_job *j = ctx;
  const red_plan *P = j->P;
  P->e->colpart(j->args, P->m, 0, P->m, P->npos, j->steps, j->lanes,
                (unsigned)t, j->nparts, NULL);
}

/* 1 when done; 0 when the caller must reduce (no colpart, no memory) */
static int red_cols_parts(const red_plan *P, int threads) {
  size_t bytes;
  if (!P->e->colpart || threads < 2 || P->staged ||
      __builtin_mul_overflow((size_t)16 * P->e->acc_size, P->npos, &bytes))
    return 0;
  void *lanes = malloc(bytes);
  if (!lanes) return 0;
  void *args[ARR_MAX_ARGS];
  ptrdiff_t steps[ARR_MAX_ARGS];
  (void)cols_group(P, 0, P->npos, args, steps); /* the pointers, steps */
  cols_parts_job j = {P, args, steps, lanes,
                      (unsigned)(threads < 8 ? threads : 8)};
  hk__tpool_run(cols_parts_task, &j, j.nparts);
  P->e->colpart(args, P->m, 0, P->m, P->npos, steps, lanes, j.nparts,
                j.nparts, NULL);
  free(lanes);
  return 1;
}

/* Reduces the output positions [p0, p1). bufs: per in operand, room for
 * one block (when not contiguous); parts: red_cols'. */
static void red_span(const red_plan *P, size_t p0, size_t p1,
                     unsigned char *const *bufs, unsigned char *parts) {
  if (P->cols) {
    red_cols(P, p0, p1, parts, bufs[0]);
    return;
  }
  int64_t idx[HK_MAX_DIMS];
  unravel(p0, P->nk, P->kshape, idx);
  void *args[ARR_MAX_ARGS];
  unsigned char *base[ARR_MAX_ARGS];
  _Alignas(32) unsigned char partials[HK_REDUCE_MAX_BLOCKS * HK_REDUCE_ACC_MAX];
  for (int o = 0; o < P->nargs; o++) args[o] = P->scalars[o];
  if (P->nblocks == 1 && P->contiguous && P->nk == 1) {
    /* The common case (a row per output, read in place): each operand's
     * pointer steps by its stride, one kernel call per row. The general
     * loop below costs about 150 instructions a row more, half as much
     * again as the row's own sum over 768 elements. The kernel's rowred
     * entry runs every row of [p0, p1) in one call (abi.h). */
    if (P->e->rowred) {
      ptrdiff_t steps[ARR_MAX_ARGS];
      for (int o = 0; o < P->nargs; o++) {
        steps[o] = 0;
        if (!((P->ins | P->outs) >> o & 1)) continue;
        const op *q = &P->kops[o];
        args[o] = q->base;
        steps[o] = (ptrdiff_t)(q->st[0] * (int64_t)q->es);
      }
      P->e->rowred(args, P->m, p0, p1, steps);
      return;
    }
    int ob[ARR_MAX_ARGS], nb = 0;
    for (int o = 0; o < P->nargs; o++)
      if ((P->ins | P->outs) >> o & 1) ob[nb++] = o;
    for (size_t p = p0; p < p1; p++) {
      for (int j = 0; j < nb; j++) {
        const op *q = &P->kops[ob[j]];
        args[ob[j]] = q->base + (int64_t)p * q->st[0] * (int64_t)q->es;
      }
      P->e->range(args, P->m, 0, P->m, NULL);
    }
    return;
  }
  for (size_t p = p0; p < p1; p++) {
    for (int o = 0; o < P->nargs; o++) {
      if (!((P->ins | P->outs) >> o & 1)) continue;
      const op *q = &P->kops[o];
      int64_t off = 0;
      if (P->nk == 1) /* one kept axis (merged): rows of a matrix, say */
        off = (int64_t)p * q->st[0];
      else
        for (int d = 0; d < P->nk; d++) off += idx[d] * q->st[d];
      base[o] = q->base + off * (int64_t)q->es;
      if (P->outs >> o & 1) args[o] = base[o];
    }
    if (P->nblocks == 1) {
      red_block(P, base, bufs, 0, P->m, args);
      P->e->range(args, P->m, 0, P->m, NULL);
    } else if (P->contiguous && p1 - p0 == 1 && P->npos == 1) {
      red_block(P, base, bufs, 0, P->m, args);
      hk__par_reduce(P->e->range, P->e->merge, P->e->acc_size, args, P->m,
                     P->e->flags);
    } else {
      for (size_t k = 0; k < P->nblocks; k++) {
        size_t b0 = k * P->block;
        size_t b1 = P->m - b0 > P->block ? b0 + P->block : P->m;
        red_block(P, base, bufs, b0, b1, args);
        P->e->range(args, P->m, b0, b1, partials + k * P->e->acc_size);
      }
      P->e->merge(args, P->m, partials, P->nblocks);
    }
    for (int d = P->nk - 1; d >= 0; d--) {
      if (++idx[d] < P->kshape[d]) break;
      idx[d] = 0;
    }
  }
}

/* Room for the in operands' copies (bufs) or red_cols' partials (parts)
 * in one block of memory. */
static int red_bufs(const red_plan *P, unsigned char **bufs,
                    unsigned char **parts, void **mem) {
  *mem = NULL;
  *parts = NULL;
  if (P->cols) {
    /* colred reads in place: partials past one block, and the staged
     * operands' copies (bufs[0]: stage_room) */
    size_t pb = P->nblocks == 1 ? 0 : P->cols * P->nblocks * P->e->acc_size;
    size_t sb = P->staged ? stage_room(P) : 0;
    bufs[0] = NULL;
    if (!pb && !sb) return HK_OK;
    unsigned char *m = malloc(((pb + 63) & ~(size_t)63) + sb);
    if (!m) return HK_ENOMEM;
    if (pb) *parts = m;
    if (sb) bufs[0] = m + ((pb + 63) & ~(size_t)63);
    *mem = m;
    return HK_OK;
  }
  if (P->contiguous) return HK_OK;
  size_t len = P->nblocks == 1 ? P->m : P->block, total = 0;
  for (int o = 0; o < P->nargs; o++)
    if (P->ins >> o & 1) total += (len * P->rops[o].es + 63) & ~(size_t)63;
  unsigned char *m = malloc(total ? total : 1);
  if (!m) return HK_ENOMEM;
  size_t off = 0;
  for (int o = 0; o < P->nargs; o++)
    if (P->ins >> o & 1) {
      bufs[o] = m + off;
      off += (len * P->rops[o].es + 63) & ~(size_t)63;
    }
  *mem = m;
  return HK_OK;
}

typedef struct red_job {
  const red_plan *P;
  _Atomic int failed;
} red_job;

static void red_task(void *ctx, size_t t) {
  red_job *j = ctx;
  const red_plan *P = j->P;
  unsigned char *bufs[ARR_MAX_ARGS], *parts;
  void *mem;
  if (red_bufs(P, bufs, &parts, &mem) != HK_OK) {
    atomic_store(&j->failed, 1);
    return;
  }
  size_t p0 = t * P->group;
  size_t p1 = P->npos - p0 > P->group ? p0 + P->group : P->npos;
  red_span(P, p0, p1, bufs, parts);
  free(mem);
}

/* Normalises opts' axes for an input of D axes into a mask. */
static int axes_mask(const call *c, const hk_call_opts_t *o, int D,
                     unsigned *mask) {
  if (!o || (!o->axes && o->naxes == 0)) {
    *mask = D ? (1u << D) - 1 : 0;
    return HK_OK;
  }
  if (o->naxes < 0 || (o->naxes > 0 && !o->axes))
    return hk__fail(HK_EINVAL, "%s: bad axes (naxes %d)", c->info->name,
                    o->naxes);
  *mask = 0;
  for (int x = 0; x < o->naxes; x++) {
    int ax = o->axes[x], a = ax < 0 ? ax + D : ax;
    if (D == 0)
      return hk__fail(HK_EINVAL,
                      "%s: axis %d is out of range: the input is 0-d (one "
                      "value), with no axis to reduce",
                      c->info->name, ax);
    if (a < 0 || a >= D)
      return hk__fail(HK_EINVAL,
                      "%s: axis %d is out of range for an input of %d "
                      "axes (allowed: %d to %d)",
                      c->info->name, ax, D, -D, D - 1);
    if (*mask >> a & 1)
      return hk__fail(HK_EINVAL, "%s: axis %d is given twice", c->info->name,
                      ax);
    *mask |= 1u << a;
  }
  return HK_OK;
}

static uint64_t role_mask(const call *c, unsigned roles) {
  uint64_t m = 0;
  for (int i = 0; i < c->nargs; i++)
    if (roles >> c->info->params[i].role & 1) m |= (uint64_t)1 << i;
  return m;
}

#define BIT(r) (1u << (r))

/* The input shape and reduced-axes mask, and the outputs' shape. */
static int red_shapes(const call *c, const hk_call_opts_t *o, int *D,
                      int64_t *ishape, unsigned *rmask, int *ond,
                      int64_t *oshape) {
  int rc = broadcast(c, role_mask(c, BIT(HK_ROLE_IN)), D, ishape);
  if (rc) return rc;
  if ((rc = axes_mask(c, o, *D, rmask))) return rc;
  int keep = o && o->keepdims;
  *ond = 0;
  for (int d = 0; d < *D; d++)
    if (!(*rmask >> d & 1)) oshape[(*ond)++] = ishape[d];
    else if (keep) oshape[(*ond)++] = 1;
  return HK_OK;
}

static int gpu_reduction(const call *c, const hk_call_opts_t *o, int D,
                         const int64_t *ishape, unsigned rmask);

/* Rows per task of an axis reduction over npos rows of m elements on the
 * CPU: about ARR_TASKS_PER_THREAD tasks a thread, each of ARR_TASK_MIN
 * elements or more; 0 when the rows run in one task on the caller (one
 * thread, one row, or fewer elements than hk__par_min). call_reduction
 * and the fast path (fast_rows_reduce) split alike. */
static size_t rows_per_task(size_t npos, size_t m, uint32_t flags) {
  const int threads = hk__tpool_threads();
  if (m == 0) m = 1;
  if (npos <= 1 || threads <= 1 ||
      npos * m < hk__par_min[(flags & HK_ABI_HEAVY) != 0])
    return 0;
  size_t ntask = (size_t)threads * ARR_TASKS_PER_THREAD;
  size_t group = (npos + ntask - 1) / ntask;
  size_t minp = ARR_TASK_MIN / m;
  if (group < minp) group = minp;
  return group < 1 ? 1 : group;
}

/* Sets P->cols where red_cols applies: the kernel has colred, one strided
 * reduced axis, and every in operand's neighbouring positions along the
 * last kept axis side by side, but broadcast ones (a kept stride of 0:
 * staged, stage_cols), one at least. Groups of 1024 positions, fewer
 * where their partials per block are kept (several blocks) or the staged
 * copies of a block would pass 4 MB (but 64: colred over groups of 16
 * columns of (4096, 768) f32 took 3 times as long as over 64 or more). */
static void red_cols_plan(red_plan *P) {
  P->cols = 0;
  P->staged = 0;
  if (!P->e->colred || P->contiguous || P->nr != 1 || P->nk < 1 ||
      P->kshape[P->nk - 1] < 2)
    return;
  int side_by_side = 0;
  size_t staged_es = 0;
  for (int o = 0; o < P->nargs; o++) {
    if (!(P->ins >> o & 1)) continue;
    if (P->kops[o].st[P->nk - 1] == 1) {
      side_by_side = 1;
    } else if (P->kops[o].st[P->nk - 1] == 0) {
      P->staged |= (uint64_t)1 << o;
      staged_es += P->kops[o].es;
    } else { /* gathered a column at a time (red_span) */
      P->staged = 0;
      return;
    }
  }
  if (!side_by_side) {
    P->staged = 0;
    return;
  }
  /* several blocks: each column's partial per block kept until the
   * merge, at most 256 KB of them (groups of 64 columns read a (40000,
   * 768) f32 matrix a quarter of a 3 KB row at a time: 2.8 times the
   * whole sum's time) */
  size_t cols = 1024;
  if (P->nblocks > 1) {
    cols = ((size_t)256 << 10) / (P->nblocks * P->e->acc_size);
    cols = cols > 1024 ? 1024 : cols < 16 ? 16 : cols & ~(size_t)15;
  }
  if (staged_es) {
    size_t rows = P->nblocks == 1 ? P->m : P->block;
    size_t most = ((size_t)4 << 20) / (rows * staged_es);
    most = most < 64 ? 64 : most & ~(size_t)15;
    if (cols > most) cols = most;
  }
  P->cols = cols;
}

/* A reduction over axes, strided or broadcast inputs: on the GPU (gpu) or
 * the CPU's threads. */
static int call_reduction(const call *c, const hk_call_opts_t *o, int gpu) {
  int D, ond;
  int64_t ishape[HK_MAX_DIMS], oshape[HK_MAX_DIMS];
  unsigned rmask;
  int rc = red_shapes(c, o, &D, ishape, &rmask, &ond, oshape);
  if (rc) return rc;
  uint64_t ins = role_mask(c, BIT(HK_ROLE_IN));
  uint64_t outs = role_mask(c, BIT(HK_ROLE_OUT) | BIT(HK_ROLE_INOUT));
  for (int i = 0; i < c->nargs; i++)
    if (outs >> i & 1 && (rc = check_shape(c, i, ond, oshape))) return rc;
  if ((rc = check_overlaps(c, 0))) return rc;
  if (gpu) return gpu_reduction(c, o, D, ishape, rmask);

  /* Zeroed but for the operand tables past this call's operands: the
   * whole plan is 13 KB, and clearing it cost ~1.5 us a call, a tenth of
   * a per-row sum over (256, 768). */
  red_plan *P = malloc(sizeof *P);
  if (!P) return hk__fail(HK_ENOMEM, "%s: out of memory", c->info->name);
  memset(P, 0, offsetof(red_plan, kops));
  memset(P->kops, 0, sizeof(op) * (size_t)c->nargs);
  memset(P->rops, 0, sizeof(op) * (size_t)c->nargs);
  P->e = c->e;
  P->nargs = c->nargs;
  P->ins = ins;
  P->outs = outs;
  int keep = o && o->keepdims;
  size_t m = 1, npos = 1;
  for (int d = 0; d < D; d++) {
    if (rmask >> d & 1) {
      P->rshape[P->nr++] = ishape[d];
      m *= (size_t)ishape[d];
    } else {
      P->kshape[P->nk++] = ishape[d];
      npos *= (size_t)ishape[d];
    }
  }
  for (int i = 0; i < c->nargs; i++) {
    const hk_array_t *a = &c->a[i];
    if (!is_buffer(c, i)) {
      P->scalars[i] = a->data;
      continue;
    }
    op *kq = &P->kops[i], *rq = &P->rops[i];
    kq->base = rq->base = a->data;
    kq->es = rq->es = hk_dtype_size(a->dtype);
    if (ins >> i & 1) {
      int64_t st[HK_MAX_DIMS];
      strides_over(a, D, ishape, st);
      int nk = 0, nr = 0;
      for (int d = 0; d < D; d++)
        if (rmask >> d & 1) rq->st[nr++] = st[d];
        else kq->st[nk++] = st[d];
    } else { /* an output: its axes are the kept ones (and 1s) */
      int nk = 0, od = 0;
      for (int d = 0; d < D; d++) {
        if (!(rmask >> d & 1)) kq->st[nk++] = a->strides[od++];
        else if (keep) od++;
      }
    }
  }
  P->nk = merge_axes(P->nk, P->kshape, P->kops, c->nargs, ins | outs);
  P->nr = merge_axes(P->nr, P->rshape, P->rops, c->nargs, ins);
  P->npos = npos;
  P->m = m;
  P->nblocks = hk__reduce_blocks(m, &P->block);
  P->contiguous = 1;
  for (int i = 0; i < c->nargs; i++)
    if (ins >> i & 1 && P->nr == 1 && P->rops[i].st[0] != 1 && m > 1)
      P->contiguous = 0;
  if (P->nr > 1) P->contiguous = 0;
  if (m == 0) P->contiguous = 1; /* nothing is read */
  red_cols_plan(P);
  if (npos == 0) {
    free(P);
    return HK_OK;
  }
  red_job job = {P, 0};
  size_t group = rows_per_task(npos, m, c->e->flags);
  if (group && P->cols) {
    /* a span of columns per thread, whole cache lines apart: each row's
     * part of a span is read in one stream (spans of 96 f32 columns of a
     * (4096, 768) matrix, a task per quarter of a thread's share, took 1.9
     * times one thread's time) */
    const size_t t = (size_t)hk__tpool_threads();
    group = (npos + t - 1) / t;
    group = (group + 15) & ~(size_t)15;
    /* Where the threads would share one kept row of one block (a
     * matrix's column sums), each reads its span of every row: under 4
     * KB of each, two threads took longer than one ((16384, 768) and
     * (8192, 384) f32); from 6 KB on, about half as long. (Several
     * blocks go to threads whole, below.) */
    size_t es = 0;
    for (int i = 0; i < c->nargs && !es; i++)
      if (ins >> i & 1) es = P->rops[i].es;
    if (P->nblocks == 1 && npos == (size_t)P->kshape[P->nk - 1] &&
        group * es < 4096) {
      /* the block's lanes shared instead (red_cols_parts) */
      if (red_cols_parts(P, (int)t)) {
        free(P);
        return HK_OK;
      }
      group = 0;
    }
  }
  size_t bytes;
  if (group && P->cols && P->nblocks > 1 &&
      !__builtin_mul_overflow(P->nblocks * c->e->acc_size, npos, &bytes) &&
      bytes <= ARR_COLS_PARTS_MAX) {
    /* a task per block, then the merges (cols_block_task) */
    cols_job cj = {P, malloc(bytes), 0};
    if (cj.parts) {
      const size_t t = (size_t)hk__tpool_threads();
      P->group = (((npos + t - 1) / t) + 15) & ~(size_t)15;
      hk__tpool_run(cols_block_task, &cj, P->nblocks);
      int failed = atomic_load(&cj.failed);
      if (!failed)
        hk__tpool_run(cols_merge_task, &cj, (npos + P->group - 1) / P->group);
      free(cj.parts);
      free(P);
      return failed ? hk__fail(HK_ENOMEM, "%s: out of memory", c->info->name)
                    : HK_OK;
    }
  }
  P->group = group ? group : npos;
  if (group)
    hk__tpool_run(red_task, &job, (npos + group - 1) / group);
  else
    red_task(&job, 0);
  free(P);
  if (atomic_load(&job.failed))
    return hk__fail(HK_ENOMEM, "%s: out of memory", c->info->name);
  return HK_OK;
}

/* ---- the call ---------------------------------------------------------- */

/* Kinds that take contiguous arrays as hk_call would (raw): n is the first
 * in/inout buffer's size, and every buffer must hold what lens says. */
static int call_flat(const call *c, const hk_call_opts_t *o, void **ptrs) {
  size_t n = 0;
  int have = 0;
  for (int i = 0; i < c->nargs; i++) {
    if (!is_buffer(c, i)) continue;
    if (!hk__array_contiguous(&c->a[i]))
      return fail_param(c, i, "%s kernels take contiguous (C order) arrays "
                              "only",
                        hk_kind_name(c->info->kind));
    if (!have && c->info->params[i].role != HK_ROLE_OUT) {
      n = (size_t)hk_array_size(&c->a[i]);
      have = 1;
    }
  }
  int64_t lens[ARR_MAX_ARGS];
  int rc = hk_kernel_lens(c->k, n, ptrs, lens);
  if (rc) return rc;
  for (int i = 0; i < c->nargs; i++)
    if (is_buffer(c, i) && hk_array_size(&c->a[i]) != lens[i])
      return fail_param(c, i, "the array has %lld elements; the kernel "
                              "needs %lld for n = %zu",
                        (long long)hk_array_size(&c->a[i]),
                        (long long)lens[i], n);
  if ((rc = check_overlaps(c, 0))) return rc;
  return hk_call_on(c->k, o ? o->backend : HK_BACKEND_AUTO, n, ptrs);
}

static int on_gpu(const call *c, const hk_call_opts_t *o) {
  if (o && o->backend == HK_BACKEND_CUDA) return 1;
  if (o && o->backend == HK_BACKEND_CPU) return 0;
  if (!atomic_load_explicit(&hk__cuda_started, memory_order_relaxed)) return 0;
  for (int i = 0; i < c->nargs; i++)
    if (is_buffer(c, i) && hk_mem_where(c->a[i].data) == HK_MEM_DEVICE)
      return 1;
  return 0;
}

/* ---- the GPU: strided, broadcast and axis calls ---------------------------
 * A stdlib elementwise kernel's GPU code has an N-D entry (common/abi.h)
 * that reaches every array through its strides: a call whose arrays are
 * not all one dense run goes through it over the collapsed shape, copying
 * only the in arrays it would read across their rows (transposes, through
 * the tiled copy). Otherwise (reductions, whose GPU code takes rows of m contiguous
 * elements; plugin kernels, whose NVRTC code has no N-D entry) an array whose
 * view is a contiguous run is used in place, and any other gets a
 * temporary run in device memory, filled by the stdlib's strided copy
 * kernels (hk__cuda_copy_strided: tiled for transposes) when the kernel
 * reads it and copied back into the array when it writes it. */

/* 1 when strides st over shape (nd axes) make one C-order run (axes of
 * length 1 aside). */
static int dense(int nd, const int64_t *shape, const int64_t *st) {
  int64_t want = 1;
  for (int d = nd - 1; d >= 0; d--) {
    if (shape[d] != 1 && st[d] != want) return 0;
    want *= shape[d];
  }
  return 1;
}

/* What a GPU call does with each buffer: the view (nd axes of shape,
 * strides st in elements) its run is laid out by, and the temporary run
 * standing in for it (NULL: the array is used in place). */
typedef struct gpu_view {
  int nd;
  int64_t shape[HK_MAX_DIMS], st[HK_MAX_DIMS];
  size_t count; /* elements of the run */
  void *tmp;
} gpu_view;

/* Gives buffer i its run: in place when dense, else a temporary one,
 * filled from the array when the kernel reads it. */
static int gpu_stage(const call *c, int i, gpu_view *v, void **ptr) {
  const hk_array_t *a = &c->a[i];
  *ptr = v->count ? a->data : NULL; /* an empty run is not read */
  if (v->count == 0 || dense(v->nd, v->shape, v->st)) return HK_OK;
  size_t es = hk_dtype_size(a->dtype);
  int rc = hk_device_alloc(&v->tmp, v->count * es);
  if (rc) return rc;
  *ptr = v->tmp;
  if (c->info->params[i].role == HK_ROLE_OUT) return HK_OK;
  return hk__cuda_copy_strided(v->tmp, a->data, es, v->nd, v->shape, v->st,
                               0, v->count);
}

/* Every non-empty buffer must be device memory: the GPU's copies read and
 * write the arrays themselves. */
static int gpu_sides(const call *c) {
  int rc = hk__cuda_ready(); /* no device: why */
  if (rc) return rc;
  for (int i = 0; i < c->nargs; i++) {
    const hk_array_t *a = &c->a[i];
    if (!is_buffer(c, i) || !a->data || hk_array_size(a) == 0) continue;
    if (hk_mem_where(a->data) != HK_MEM_DEVICE)
      return fail_param(c, i, "the array is in host memory, and the call "
                              "runs on the GPU: give device memory");
  }
  return HK_OK;
}

/* Copies the temporary runs of written buffers back into their arrays,
 * waits for the copies and frees the runs. rc: the call's result so far
 * (copies are skipped after a failure). */
static int gpu_finish(const call *c, gpu_view *v, int rc) {
  int staged = 0;
  for (int i = 0; i < c->nargs; i++) {
    staged |= v[i].tmp != NULL;
    if (!rc && v[i].tmp && is_written(c, i))
      rc = hk__cuda_copy_strided(c->a[i].data, v[i].tmp,
                                 hk_dtype_size(c->a[i].dtype), v[i].nd,
                                 v[i].shape, v[i].st, 1, v[i].count);
  }
  if (!staged) return rc; /* nothing queued here (the call itself waits) */
  char what[200];
  snprintf(what, sizeof what, "%s's array copies", c->info->name);
  int src = hk__cuda_sync_default(what);
  if (!rc) rc = src;
  for (int i = 0; i < c->nargs; i++)
    if (v[i].tmp) hk_device_free(v[i].tmp);
  return rc;
}

/* gpu_elementwise through temporary runs: for GPU code without the N-D
 * entry. */
static int gpu_elementwise_staged(const call *c, int nd, const int64_t *shape,
                                  size_t n) {
  gpu_view v[ARR_MAX_ARGS];
  void *ptrs[ARR_MAX_ARGS];
  memset(v, 0, sizeof(gpu_view) * (size_t)c->nargs);
  int rc = HK_OK;
  for (int i = 0; i < c->nargs && !rc; i++) {
    ptrs[i] = c->a[i].data;
    if (!is_buffer(c, i)) continue;
    v[i].nd = nd;
    memcpy(v[i].shape, shape, sizeof(int64_t) * (size_t)nd);
    strides_over(&c->a[i], nd, shape, v[i].st);
    v[i].count = n;
    rc = gpu_stage(c, i, &v[i], &ptrs[i]);
  }
  if (!rc) rc = hk_call_on(c->k, HK_BACKEND_CUDA, n, ptrs);
  return gpu_finish(c, v, rc);
}

/* Stages the in arrays that the N-D entry would read across their rows
 * (x.T: a unit stride on an outer axis of the collapsed view, a longer one
 * on the last): each warp of the entry would read a 32-byte sector per
 * element of such an array, while the tiled copy reads and writes it
 * coalesced, so it gets a dense run (v[i].tmp, filled on the stream before
 * the call), ptrs[i] and its strides ops[i].st then the run's. Arrays the
 * call writes are left in place (a copy back would double their traffic).
 * On an H200, x.T + y at 4096 x 4096 f32 took 2.44 times the contiguous
 * add read in place. */
static int gpu_stage_transposed(const call *c, int nd, const int64_t *shape,
                                size_t n, op *ops, gpu_view *v, void **ptrs) {
  for (int i = 0; i < c->nargs; i++) {
    if (!is_buffer(c, i) || c->info->params[i].role != HK_ROLE_IN ||
        !hk__cuda_copy_tiled(hk_dtype_size(c->a[i].dtype), nd, shape,
                             ops[i].st))
      continue;
    v[i].nd = nd;
    memcpy(v[i].shape, shape, sizeof(int64_t) * (size_t)nd);
    memcpy(v[i].st, ops[i].st, sizeof(int64_t) * (size_t)nd);
    v[i].count = n;
    int rc = gpu_stage(c, i, &v[i], &ptrs[i]);
    if (rc) return rc;
    int64_t want = 1;
    for (int d = nd - 1; d >= 0; d--) {
      ops[i].st[d] = want;
      want *= shape[d];
    }
  }
  return HK_OK;
}

/* An elementwise call over the broadcast shape (nd axes), n > 0 elements
 * (its arrays checked, overlaps too): every array one dense run, the flat
 * kernel; else the N-D entry over the shape collapsed as the CPU's runs
 * are (merge_axes: typically 1 or 2 axes), reading and writing the arrays
 * where they are, but for transposed in arrays (gpu_stage_transposed). A
 * strided out array is written in place, element by element, so what lies
 * between its elements is never touched; an out array that is an in array
 * (the one overlap allowed) is read and written at one index by one
 * thread, read first. Without the N-D entry (a plugin kernel, a kernel of
 * many buffers): the temporary runs. */
static int gpu_elementwise(const call *c, int nd, const int64_t *shape,
                           size_t n) {
  int rc = gpu_sides(c);
  if (rc) return rc;
  void *ptrs[ARR_MAX_ARGS];
  op ops[ARR_MAX_ARGS];
  const int64_t *st[ARR_MAX_ARGS];
  int all_dense = 1;
  for (int i = 0; i < c->nargs; i++) {
    ptrs[i] = c->a[i].data;
    st[i] = NULL;
    if (!is_buffer(c, i)) continue;
    strides_over(&c->a[i], nd, shape, ops[i].st);
    all_dense &= dense(nd, shape, ops[i].st);
    st[i] = ops[i].st;
  }
  if (all_dense) return hk_call_on(c->k, HK_BACKEND_CUDA, n, ptrs);
  if ((rc = hk__cuda_has_nd(c->k)) < 0) return rc;
  if (rc == 0) return gpu_elementwise_staged(c, nd, shape, n);
  int64_t cshape[HK_MAX_DIMS];
  memcpy(cshape, shape, sizeof(int64_t) * (size_t)nd);
  const uint64_t bufs =
      role_mask(c, BIT(HK_ROLE_IN) | BIT(HK_ROLE_OUT) | BIT(HK_ROLE_INOUT));
  const int cnd = merge_axes(nd, cshape, ops, c->nargs, bufs);
  gpu_view v[ARR_MAX_ARGS];
  memset(v, 0, sizeof(gpu_view) * (size_t)c->nargs);
  rc = gpu_stage_transposed(c, cnd, cshape, n, ops, v, ptrs);
  if (!rc) {
    all_dense = 1;
    for (int i = 0; i < c->nargs; i++)
      if (is_buffer(c, i)) all_dense &= dense(cnd, cshape, ops[i].st);
    rc = all_dense ? hk_call_on(c->k, HK_BACKEND_CUDA, n, ptrs)
                   : hk__call_nd_cuda(c->k, cnd, cshape, st, n, ptrs, 0);
  }
  if (rc != HK__ND_NONE) return gpu_finish(c, v, rc);
  /* beyond the entry (n >= 2^63): the temporary runs */
  if ((rc = gpu_finish(c, v, HK_OK))) return rc;
  return gpu_elementwise_staged(c, nd, shape, n);
}

/* A reduction over the axes in rmask of the inputs' broadcast shape
 * (D axes of ishape): rows of the reduced axes, one per position of the
 * kept ones. */
static int gpu_reduction(const call *c, const hk_call_opts_t *o, int D,
                         const int64_t *ishape, unsigned rmask) {
  gpu_view v[ARR_MAX_ARGS];
  void *ptrs[ARR_MAX_ARGS];
  memset(v, 0, sizeof(gpu_view) * (size_t)c->nargs);
  int keep = o && o->keepdims;
  int64_t kshape[HK_MAX_DIMS], pshape[HK_MAX_DIMS];
  int nk = 0, np = 0;
  size_t m = 1, npos = 1;
  for (int d = 0; d < D; d++)
    if (!(rmask >> d & 1)) {
      kshape[nk++] = pshape[np++] = ishape[d];
      npos *= (size_t)ishape[d];
    }
  for (int d = 0; d < D; d++)
    if (rmask >> d & 1) {
      pshape[np++] = ishape[d];
      m *= (size_t)ishape[d];
    }
  if (npos == 0) return HK_OK;
  int rc = gpu_sides(c);
  for (int i = 0; i < c->nargs && !rc; i++) {
    const hk_array_t *a = &c->a[i];
    ptrs[i] = a->data;
    if (!is_buffer(c, i)) continue;
    if (c->info->params[i].role == HK_ROLE_IN) {
      /* kept axes first, then the reduced ones: a row per position */
      int64_t st[HK_MAX_DIMS];
      strides_over(a, D, ishape, st);
      int q = 0;
      for (int d = 0; d < D; d++)
        if (!(rmask >> d & 1)) v[i].st[q++] = st[d];
      for (int d = 0; d < D; d++)
        if (rmask >> d & 1) v[i].st[q++] = st[d];
      v[i].nd = D;
      memcpy(v[i].shape, pshape, sizeof(int64_t) * (size_t)D);
      v[i].count = npos * m;
    } else { /* a result: one element per kept position */
      int q = 0, od = 0;
      for (int d = 0; d < D; d++) {
        if (!(rmask >> d & 1)) v[i].st[q++] = a->strides[od++];
        else if (keep) od++;
      }
      v[i].nd = nk;
      memcpy(v[i].shape, kshape, sizeof(int64_t) * (size_t)nk);
      v[i].count = npos;
    }
    rc = gpu_stage(c, i, &v[i], &ptrs[i]);
  }
  if (!rc)
    rc = hk__call_reduce_rows_cuda(c->k, npos, m, ptrs, HK_ROWS_BY_SHAPE);
  return gpu_finish(c, v, rc);
}

static int setup(call *c, const hk_kernel_t *k, const hk_array_t *args) {
  if (!k || !args) return hk__fail(HK_EINVAL, "hk_call_arrays: NULL argument");
  const hk_impl_t *im = atomic_load_explicit(&k->impl, memory_order_acquire);
  c->k = k;
  c->info = atomic_load(&k->info);
  c->e = im ? &im->e : NULL;
  c->a = args;
  c->nargs = c->info->nparams;
  if (c->nargs > ARR_MAX_ARGS)
    return hk__fail(HK_EUNSUPPORTED, "%s: more than %d parameters",
                    c->info->name, ARR_MAX_ARGS);
  for (int i = 0; i < c->nargs; i++) {
    int rc = check_array(c, i);
    if (rc) return rc;
  }
  return HK_OK;
}

/* Element sizes by dtype, for the fast path (hk_dtype_size, without the
 * call); 0 past the known ones. */
static size_t elem_size[256];
__attribute__((constructor)) static void elem_size_init(void) {
  for (int t = 0; t < 256; t++) elem_size[t] = hk_dtype_size((hk_dtype_t)t);
}

/* The fast paths' checks of one array. A scalar: one value, present, in
 * its bounds. */
static inline int fast_scalar_ok(const hk_array_t *x, size_t es) {
  return x->ndim == 0 && x->data &&
         (!x->nbytes || ((uintptr_t)x->data >= (uintptr_t)x->base &&
                         (uintptr_t)x->data - (uintptr_t)x->base <=
                             x->nbytes - es &&
                         x->nbytes >= es));
}

/* A dense run of count elements of es bytes: present (unless empty), its
 * size without overflow, in its bounds; its bytes [*lo, *hi). */
static inline int fast_run_ok(const hk_array_t *x, size_t count, size_t es,
                              uintptr_t *lo, uintptr_t *hi) {
  size_t bytes;
  if (__builtin_mul_overflow(count, es, &bytes) || (!x->data && count))
    return 0;
  *lo = (uintptr_t)x->data;
  *hi = *lo + bytes;
  return *hi >= *lo &&
         (!x->nbytes || (*lo >= (uintptr_t)x->base &&
                         *hi <= (uintptr_t)x->base + x->nbytes));
}

/* The fast path: every buffer contiguous and of one shape, every scalar
 * 0-d, no axes (a reduction reduces all into 0-d outputs): one flat call,
 * after checks that cost a few ns per array (one pass over the arrays,
 * the 1-d case unrolled, the overlap test over written buffers only: 264
 * instructions for add's three arrays, 365 before; 11 ns over hk_call's 4
 * ns at n = 0, 16.5 before). Returns 1 with *rc when it made the call, 0
 * when the general path must look (it also words every error). */
static int fast_call(const hk_kernel_t *k, const hk_kernel_info_t *info,
                     const hk_array_t *a, const hk_call_opts_t *o, int *rc) {
  const hk_kind_t kind = info->kind;
  if ((kind != HK_KIND_ELEMENTWISE && kind != HK_KIND_REDUCTION) ||
      (o && (o->axes || o->naxes || o->keepdims)))
    return 0;
  const int np = info->nparams;
  if (np > ARR_MAX_ARGS) return 0;
  const hk_param_info_t *ps = info->params;
  void *ptrs[ARR_MAX_ARGS];
  uintptr_t lo[ARR_MAX_ARGS], hi[ARR_MAX_ARGS];
  uint64_t bufs = 0, written = 0;
  int nd = -1;
  const int64_t *shape = NULL;
  size_t n = 0;
  for (int i = 0; i < np; i++) {
    const hk_array_t *x = &a[i];
    const hk_role_t role = ps[i].role;
    if (x->dtype != ps[i].dtype) return 0;
    ptrs[i] = x->data;
    if (role == HK_ROLE_SCALAR) {
      if (!fast_scalar_ok(x, elem_size[ps[i].dtype]))
        return 0; /* the general path says why */
      continue;
    }
    size_t count = 1;
    if (kind == HK_KIND_REDUCTION && role != HK_ROLE_IN) {
      if (x->ndim != 0) return 0; /* a result of the whole: 0-d */
    } else {
      if (nd < 0) { /* the first: its shape is the call's */
        nd = x->ndim;
        if ((unsigned)nd > HK_MAX_DIMS) return 0;
        shape = x->shape;
        int64_t c = 1;
        for (int d = 0; d < nd; d++)
          if (shape[d] < 0 || __builtin_mul_overflow(c, shape[d], &c))
            return 0;
        n = (size_t)c;
      } else if (x->ndim != nd) {
        return 0;
      }
      if (nd == 1) { /* the common case, unrolled */
        if (x->shape[0] != shape[0] || (x->strides[0] != 1 && shape[0] != 1))
          return 0;
      } else {
        /* C order: each stride the product of the lengths after it (any
         * stride where the length is 1); the product cannot overflow, as
         * n did not */
        int64_t want = 1;
        for (int d = nd - 1; d >= 0; d--) {
          if (x->shape[d] != shape[d] ||
              (x->strides[d] != want && shape[d] != 1))
            return 0;
          want *= shape[d];
        }
      }
      count = n;
    }
    if (!fast_run_ok(x, count, elem_size[ps[i].dtype], &lo[i], &hi[i]))
      return 0;
    if (hi[i] != lo[i]) bufs |= (uint64_t)1 << i;
    if (role != HK_ROLE_IN) written |= (uint64_t)1 << i;
  }
  if (nd < 0) return 0;
  /* a written buffer may share no byte with another, but for an
   * elementwise in that is the same array (in place): the same first
   * byte, dtype and shape (a bool array and an f32 view of its bytes
   * start at the same byte too, and are not) */
  for (uint64_t w = written & bufs; w; w &= w - 1) {
    const int i = __builtin_ctzll(w);
    for (uint64_t m = bufs & ~((uint64_t)1 << i); m; m &= m - 1) {
      const int j = __builtin_ctzll(m);
      if (hi[j] <= lo[i] || hi[i] <= lo[j]) continue;
      if (kind == HK_KIND_ELEMENTWISE && ps[j].role == HK_ROLE_IN &&
          lo[j] == lo[i] && ps[j].dtype == ps[i].dtype)
        continue;
      return 0;
    }
  }
  hk_backend_t b = o ? o->backend : HK_BACKEND_AUTO;
  if (b != HK_BACKEND_AUTO ||
      atomic_load_explicit(&hk__cuda_started, memory_order_relaxed)) {
    *rc = hk_call_on(k, b, n, ptrs);
    return 1;
  }
  /* hk_call, inline */
  const hk_impl_t *im = atomic_load_explicit(&k->impl, memory_order_acquire);
  if (__builtin_expect(im == NULL, 0)) {
    *rc = hk__call_failure(k);
    return 1;
  }
  *rc = hk__run(&im->e, ptrs, n);
  if (__builtin_expect(*rc != HK_OK, 0)) /* a grid's bad extent */
    *rc = hk__named(k, *rc);
  return 1;
}

/* A reduction over the trailing axes of C-contiguous arrays, by the
 * kernel's rowred entry: rows of m elements, a row's results at one step
 * each; tasks of whole rows, as call_reduction would split them (a row's
 * bits do not depend on who reduces it). */
typedef struct rows_job {
  hk_rowred_fn rowred;
  void *const *args;
  const ptrdiff_t *steps;
  size_t m, npos, group;
} rows_job;

static void rows_task(void *ctx, size_t t) {
  const rows_job *j = ctx;
  size_t p0 = t * j->group;
  size_t p1 = j->npos - p0 > j->group ? p0 + j->group : j->npos;
  j->rowred(j->args, j->m, p0, p1, j->steps);
}

/* The fast path of axis reductions, the common case: the in arrays
 * C-contiguous and of one shape, the reduced axes its last ones (not all
 * of them), each row within one block of the fixed tree
 * (hk__reduce_blocks), the results C-contiguous of the kept shape (with
 * keepdims' 1s), nothing written overlapping, on the CPU (CUDA not
 * started). No plan: the general path's (call_reduction) costs ~2400
 * instructions a call, ~330 ns, which was a fifth of a per-row sum over
 * (256, 768). Same rows, same entry, so the same bits. Returns 1 with *rc
 * when it made the call, 0 when the general path must look (it also
 * words every error). */
static int fast_rows_reduce(const hk_kernel_t *k,
                            const hk_kernel_info_t *info,
                            const hk_array_t *a, const hk_call_opts_t *o,
                            int *rc) {
  if (info->kind != HK_KIND_REDUCTION || !o || o->naxes < 1 ||
      o->naxes > HK_MAX_DIMS || !o->axes)
    return 0;
  /* with CUDA started, the general path tells where the data are */
  if (o->backend == HK_BACKEND_CUDA ||
      atomic_load_explicit(&hk__cuda_started, memory_order_relaxed))
    return 0;
  const hk_impl_t *im = atomic_load_explicit(&k->impl, memory_order_acquire);
  if (!im || !im->e.rowred) return 0;
  const int np = info->nparams;
  if (np > ARR_MAX_ARGS) return 0;
  const hk_param_info_t *ps = info->params;
  /* the in arrays' shape: the first in's */
  const hk_array_t *first = NULL;
  for (int i = 0; i < np && !first; i++)
    if (ps[i].role == HK_ROLE_IN) first = &a[i];
  if (!first) return 0;
  const int D = first->ndim;
  if (D < 2 || D > HK_MAX_DIMS) return 0;
  /* the reduced axes: the last naxes, each once */
  unsigned mask = 0;
  for (int x = 0; x < o->naxes; x++) {
    int ax = o->axes[x] < 0 ? o->axes[x] + D : o->axes[x];
    if (ax < 0 || ax >= D || (mask >> ax & 1)) return 0;
    mask |= 1u << ax;
  }
  const int nk = D - o->naxes; /* kept axes, first */
  if (nk < 1 || mask != ((1u << D) - 1) - ((1u << nk) - 1)) return 0;
  size_t m = 1, npos = 1;
  for (int d = 0; d < D; d++) {
    int64_t len = first->shape[d];
    if (len <= 0) return 0; /* nothing to reduce or a bad shape */
    size_t *p = d < nk ? &npos : &m;
    if (__builtin_mul_overflow(*p, (size_t)len, p)) return 0;
  }
  size_t total, block;
  if (__builtin_mul_overflow(npos, m, &total) ||
      hk__reduce_blocks(m, &block) != 1)
    return 0;
  const int keep = o->keepdims;
  void *ptrs[ARR_MAX_ARGS];
  ptrdiff_t steps[ARR_MAX_ARGS];
  uintptr_t lo[ARR_MAX_ARGS], hi[ARR_MAX_ARGS];
  uint64_t bufs = 0, written = 0;
  for (int i = 0; i < np; i++) {
    const hk_array_t *x = &a[i];
    const hk_role_t role = ps[i].role;
    const size_t es = elem_size[ps[i].dtype];
    if (x->dtype != ps[i].dtype) return 0;
    ptrs[i] = x->data;
    steps[i] = 0;
    if (role == HK_ROLE_SCALAR) {
      if (!fast_scalar_ok(x, es)) return 0;
      continue;
    }
    size_t count;
    int64_t want = 1;
    if (role == HK_ROLE_IN) { /* first's shape, C order */
      if (x->ndim != D) return 0;
      for (int d = D - 1; d >= 0; d--) {
        if (x->shape[d] != first->shape[d] ||
            (x->strides[d] != want && x->shape[d] != 1))
          return 0;
        want *= x->shape[d];
      }
      count = total;
      steps[i] = (ptrdiff_t)(m * es);
    } else { /* a result per row: the kept axes, then keepdims' 1s */
      if (x->ndim != (keep ? D : nk)) return 0;
      for (int d = x->ndim - 1; d >= 0; d--) {
        int64_t len = d < nk ? first->shape[d] : 1;
        if (x->shape[d] != len || (x->strides[d] != want && len != 1))
          return 0;
        want *= len;
      }
      count = npos;
      steps[i] = (ptrdiff_t)es;
      written |= (uint64_t)1 << i;
    }
    if (!fast_run_ok(x, count, es, &lo[i], &hi[i])) return 0;
    bufs |= (uint64_t)1 << i;
  }
  /* a written array may share no byte with another */
  for (uint64_t w = written; w; w &= w - 1) {
    const int i = __builtin_ctzll(w);
    for (uint64_t r = bufs & ~((uint64_t)1 << i); r; r &= r - 1) {
      const int j = __builtin_ctzll(r);
      if (!(hi[j] <= lo[i] || hi[i] <= lo[j])) return 0;
    }
  }
  const size_t group = rows_per_task(npos, m, im->e.flags);
  rows_job job = {im->e.rowred, ptrs, steps, m, npos, group ? group : npos};
  if (group)
    hk__tpool_run(rows_task, &job, (npos + group - 1) / group);
  else
    rows_task(&job, 0);
  *rc = HK_OK;
  return 1;
}

HK_API int hk_call_arrays(const hk_kernel_t *k, const hk_array_t *args,
                          const hk_call_opts_t *opts) {
  call c;
  int rc;
  if (opts && (unsigned)opts->backend > (unsigned)HK_BACKEND_CUDA)
    return hk__fail(HK_EINVAL,
                    "hk_call_arrays: opts->backend is %d; expected "
                    "HK_BACKEND_AUTO, HK_BACKEND_CPU or HK_BACKEND_CUDA",
                    (int)opts->backend);
  if (k && args) {
    const hk_kernel_info_t *info =
        atomic_load_explicit(&k->info, memory_order_acquire);
    if (fast_call(k, info, args, opts, &rc) ||
        fast_rows_reduce(k, info, args, opts, &rc))
      return rc;
  }
  rc = setup(&c, k, args);
  if (rc) return rc;
  void *ptrs[ARR_MAX_ARGS];
  for (int i = 0; i < c.nargs; i++) ptrs[i] = args[i].data;
  hk_kind_t kind = c.info->kind;
  hk_backend_t backend = opts ? opts->backend : HK_BACKEND_AUTO;
  /* axes are a reduction's (rows kernels refuse them themselves): given
   * to an elementwise, raw or grid kernel, they were ignored */
  if (opts && (opts->axes || opts->naxes || opts->keepdims) &&
      kind != HK_KIND_REDUCTION && kind != HK_KIND_ROWS)
    return hk__fail(HK_EINVAL,
                    "%s: opts->%s is for reductions; a%s %s kernel takes "
                    "none",
                    c.info->name, opts->keepdims ? "keepdims" : "axes",
                    kind == HK_KIND_ELEMENTWISE ? "n" : "",
                    hk_kind_name(kind));

  if (kind == HK_KIND_RAW || kind == HK_KIND_GRID) /* flat buffers */
    return call_flat(&c, opts, ptrs);
  if (kind == HK_KIND_ROWS) return hk__arrays_rows(k, args, opts);

  /* The fast path: every buffer contiguous and of one shape (and, for a
   * reduction, every axis reduced): one flat call. */
  int fast = 1, first = -1;
  for (int i = 0; fast && i < c.nargs; i++) {
    if (!is_buffer(&c, i)) continue;
    const hk_array_t *a = &args[i];
    if (kind == HK_KIND_REDUCTION && is_written(&c, i)) continue;
    if (first < 0) first = i;
    fast = hk__array_contiguous(a) && a->ndim == args[first].ndim &&
           !memcmp(a->shape, args[first].shape,
                   sizeof(int64_t) * (size_t)a->ndim);
  }
  if (kind == HK_KIND_REDUCTION && opts && opts->axes && first >= 0) {
    unsigned mask;
    if ((rc = axes_mask(&c, opts, args[first].ndim, &mask))) return rc;
    fast = fast && mask == (args[first].ndim ? (1u << args[first].ndim) - 1
                                             : 0u);
  }
  if (kind == HK_KIND_REDUCTION && fast) {
    int D, ond;
    int64_t ishape[HK_MAX_DIMS], oshape[HK_MAX_DIMS];
    unsigned rmask;
    if ((rc = red_shapes(&c, opts, &D, ishape, &rmask, &ond, oshape)))
      return rc;
    for (int i = 0; i < c.nargs; i++)
      if (is_written(&c, i) && (rc = check_shape(&c, i, ond, oshape)))
        return rc;
  }
  if (fast && first >= 0) {
    if (kind == HK_KIND_ELEMENTWISE)
      for (int i = 0; i < c.nargs; i++)
        if (is_buffer(&c, i) && (rc = check_shape(&c, i, args[first].ndim,
                                                   args[first].shape)))
          return rc;
    if ((rc = check_overlaps(&c, kind == HK_KIND_ELEMENTWISE))) return rc;
    return hk_call_on(k, backend, (size_t)hk_array_size(&args[first]), ptrs);
  }
  int gpu = on_gpu(&c, opts);
  if (!gpu && !c.e) return hk__call_failure(k);
  if (kind == HK_KIND_REDUCTION) return call_reduction(&c, opts, gpu);

  /* elementwise */
  int nd;
  int64_t shape[HK_MAX_DIMS];
  /* the shape comes from what is read; a kernel that only writes (fill)
   * takes its outputs' */
  uint64_t from = role_mask(&c, BIT(HK_ROLE_IN) | BIT(HK_ROLE_INOUT));
  if (!from) from = role_mask(&c, BIT(HK_ROLE_OUT));
  if ((rc = broadcast(&c, from, &nd, shape))) return rc;
  size_t n = 1;
  for (int d = 0; d < nd; d++) n *= (size_t)shape[d];
  for (int i = 0; i < c.nargs; i++)
    if (is_written(&c, i) && (rc = check_shape(&c, i, nd, shape))) return rc;
  if ((rc = check_overlaps(&c, 1))) return rc;
  if (n == 0) return HK_OK;
  if (gpu) return gpu_elementwise(&c, nd, shape, n);
  return call_elementwise(&c, nd, shape, n);
}

HK_API int hk_call_out_shape(const hk_kernel_t *k, const hk_array_t *args,
                             const hk_call_opts_t *opts, int param, int *ndim,
                             int64_t *shape) {
  call c;
  if (!k || !args || !ndim || !shape)
    return hk__fail(HK_EINVAL, "hk_call_out_shape: NULL argument");
  c.k = k;
  c.info = atomic_load(&k->info);
  c.a = args;
  c.nargs = c.info->nparams;
  c.e = NULL;
  if (param < 0 || param >= c.nargs || !is_written(&c, param))
    return hk__fail(HK_EINVAL, "%s: parameter %d is not an out or inout",
                    c.info->name, param);
  if (c.nargs > ARR_MAX_ARGS)
    return hk__fail(HK_EUNSUPPORTED, "%s: more than %d parameters",
                    c.info->name, ARR_MAX_ARGS);
  for (int i = 0; i < c.nargs; i++) {
    if (is_written(&c, i)) continue;
    int rc = check_array(&c, i);
    if (rc) return rc;
  }
  switch (c.info->kind) {
    case HK_KIND_REDUCTION: {
      int D;
      int64_t ishape[HK_MAX_DIMS];
      unsigned rmask;
      return red_shapes(&c, opts, &D, ishape, &rmask, ndim, shape);
    }
    case HK_KIND_ELEMENTWISE:
      return broadcast(&c, role_mask(&c, BIT(HK_ROLE_IN) | BIT(HK_ROLE_INOUT)),
                       ndim, shape);
    case HK_KIND_ROWS:
      return hk__arrays_rows_shape(k, args, opts, param, ndim, shape);
    default: {
      /* raw and grid: the len of the parameter for n = the first in or
       * inout buffer's size (as call_flat): the first's shape without a
       * len, else shaped by its factors (lens.c) */
      size_t n = 0;
      int first = -1;
      void *ptrs[ARR_MAX_ARGS] = {0};
      for (int i = 0; i < c.nargs; i++) {
        ptrs[i] = args[i].data;
        if (first < 0 && is_buffer(&c, i) &&
            c.info->params[i].role != HK_ROLE_OUT) {
          first = i;
          n = (size_t)hk_array_size(&args[i]);
        }
      }
      int64_t lens[ARR_MAX_ARGS];
      int rc = hk_kernel_lens(k, n, ptrs, lens);
      if (rc) return rc;
      /* no len (or "n"): n elements, the first's shape (SPEC §3: hk
       * run's outputs have it). A len that only happens to equal n
       * (a histogram's B bins of B values) is its own shape. */
      const char *len = c.info->params[param].len;
      while (len && *len == ' ') len++;
      int is_n = !len || (len[0] == 'n' && !len[1 + strspn(len + 1, " ")]);
      int as_first = first >= 0 && is_n && args[first].ndim <= HK_MAX_DIMS;
      if (!as_first &&
          hk__len_shape(c.info, param, args, n, lens[param], ndim, shape))
        return HK_OK;
      if (as_first) {
        *ndim = args[first].ndim;
        memcpy(shape, args[first].shape, sizeof(int64_t) * (size_t)*ndim);
        return HK_OK;
      }
      *ndim = 1;
      shape[0] = lens[param];
      return HK_OK;
    }
  }
}

/* ---- dispatch by dtype ------------------------------------------------- */

typedef struct select_ctx {
  const char *name;
  const hk_array_t *args;
  int nargs;
  hk_kernel_t *hit;
  int ncand;
  const hk_kernel_info_t *cand[64];
  char cands[512];
} select_ctx;

/* Is name one of the items of list ("a, b, c")? Whole items only: "f16"
 * is not in "bf16". */
static int in_list(const char *list, const char *name) {
  size_t n = strlen(name);
  for (const char *p = list; *p;) {
    const char *e = strstr(p, ", ");
    size_t l = e ? (size_t)(e - p) : strlen(p);
    if (l == n && !memcmp(p, name, n)) return 1;
    if (!e) break;
    p = e + 2;
  }
  return 0;
}

static int select_fn(hk_kernel_t *k, void *user) {
  select_ctx *s = user;
  const hk_kernel_info_t *in = hk_kernel_info(k);
  if (!hkc_is_instance_of(in->name, s->name)) return 0;
  size_t used = strlen(s->cands);
  if (used + strlen(in->name) + 3 < sizeof s->cands)
    snprintf(s->cands + used, sizeof s->cands - used, "%s%s",
             s->ncand ? ", " : "", in->name);
  if (s->ncand < 64) s->cand[s->ncand] = in;
  s->ncand++;
  if (in->nparams != s->nargs) return 0;
  for (int i = 0; i < in->nparams; i++)
    if (in->params[i].dtype != s->args[i].dtype) return 0;
  if (!s->hit) s->hit = k;
  return 0;
}

HK_API int hk_kernel_select(hk_context_t *ctx, const char *name,
                            const hk_array_t *args, int nargs,
                            hk_kernel_t **out) {
  if (!ctx || !name || !out || (nargs > 0 && !args))
    return hk__fail(HK_EINVAL, "hk_kernel_select: NULL argument");
  *out = NULL;
  /* a kernel of this very name first, when the arrays fit it; else the
   * instances NAME_TYPE... (a plugin kernel named add takes f64 arrays,
   * and f32 arrays still find the stdlib's add_f32) */
  hk_kernel_t *k;
  int exact = (k = hk__kernel_lookup(ctx, name)) != NULL;
  int bad = -1; /* the exact kernel's first parameter the arrays miss */
  if (exact) {
    const hk_kernel_info_t *in = hk_kernel_info(k);
    if (in->nparams == nargs) {
      bad = nargs;
      for (int i = 0; i < nargs && bad == nargs; i++)
        if (in->params[i].dtype != args[i].dtype) bad = i;
      if (bad == nargs) {
        *out = k;
        return HK_OK;
      }
    }
  }
  select_ctx s = {.name = name, .args = args, .nargs = nargs};
  hk_kernel_foreach(ctx, select_fn, &s);
  if (s.hit) {
    *out = s.hit;
    return HK_OK;
  }
  if (exact && s.ncand == 0) { /* no instances: the kernel's mismatch */
    const hk_kernel_info_t *in = hk_kernel_info(k);
    if (bad < 0)
      return hk__fail(HK_EINVAL, "%s takes %d parameters; %d arrays given",
                      name, in->nparams, nargs);
    return hk__fail(HK_EINVAL, "%s: parameter '%s' is %s; the array is %s",
                    name, in->params[bad].name,
                    hk_dtype_name(in->params[bad].dtype),
                    hk_dtype_name(args[bad].dtype));
  }
  if (s.ncand == 0)
    return hk__fail(HK_ENOTFOUND, "no kernel named %s (nor %s_TYPE)", name,
                    name);
  /* name the first parameter whose dtype no instance takes there */
  int nc = s.ncand < 64 ? s.ncand : 64;
  const hk_kernel_info_t *like = NULL;
  for (int j = 0; j < nc && !like; j++)
    if (s.cand[j]->nparams == nargs) like = s.cand[j];
  if (!like)
    return hk__fail(HK_EINVAL, "%s takes %d parameters; %d arrays given",
                    name, s.cand[0]->nparams, nargs);
  for (int i = 0; i < nargs; i++) {
    char there[256] = "";
    int any = 0;
    for (int j = 0; j < nc; j++) {
      const hk_kernel_info_t *in = s.cand[j];
      if (in->nparams != nargs) continue;
      if (in->params[i].dtype == args[i].dtype) {
        any = 1;
        break;
      }
      const char *t = hk_dtype_name(in->params[i].dtype);
      if (!in_list(there, t)) {
        size_t o = strlen(there);
        snprintf(there + o, sizeof there - o, "%s%s", o ? ", " : "", t);
      }
    }
    if (!any && there[0])
      return hk__fail(HK_EINVAL,
                      "%s: parameter '%s' is %s here; its instances take %s "
                      "(instances: %s)",
                      name, like->params[i].name,
                      hk_dtype_name(args[i].dtype), there, s.cands);
  }
  char types[512] = "";
  for (int i = 0; i < nargs; i++) {
    size_t o = strlen(types);
    snprintf(types + o, sizeof types - o, "%s'%s' %s", i ? ", " : "",
             like->params[i].name, hk_dtype_name(args[i].dtype));
  }
  return hk__fail(HK_EINVAL,
                  "%s: no instance takes the dtypes (%s) together (instances: "
                  "%s); arrays are never converted: give every parameter a "
                  "dtype one instance takes",
                  name, types, s.cands);
}
