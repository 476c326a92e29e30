/* test_isa.c — the stdlib's instruction-set variants (core/dispatch.h):
 * every variant this CPU runs gives the same bits as the baseline, for every
 * stdlib instance, reached generically through its table entry (its lens
 * say how long each buffer is); and the variant picked is the best the CPU
 * has, as the compiler's own cpuid reading says. Skipped where the build
 * has the baseline only (HK_STDLIB_ISA off: sanitizer builds, not x86-64).
 */
#include "check.h"
#include "dispatch.h"
#include "hk.h"

/* Sizes: empty, shorter than any vector, odd tails, and past
 * HK_REDUCE_BLOCK so reductions split into blocks and merge. */
static const size_t sizes[] = {0, 1, 3, 17, 1000, 4099, 70001};
#define NMAX 70001u
#define MAXP 8

static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static uint64_t rng(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

/* Inputs: ordinary values with the awkward ones mixed in (zeros of both
 * signs, infinities, NaN, subnormals, huge values). 16-bit floats and the
 * integers get random bits; bools 0 or 1. */
static void fill_input(void *buf, hk_dtype_t t, size_t len) {
  static const double special[] = {0.0, -0.0, 1.0 / 0.0, -1.0 / 0.0, 0.0 / 0.0,
                                   1e-40, -3e-310, 1e30, -1e30, 88.7, -104.0};
  const size_t ns = sizeof special / sizeof special[0];
  for (size_t i = 0; i < len; i++) {
    uint64_t r = rng();
    double v = (double)(int64_t)(r >> 11) / (double)(1ull << 50) * 4.0;
    if (r % 13 == 0) v = special[(r >> 8) % ns];
    switch (t) {
      case HK_F32: ((float *)buf)[i] = (float)v; break;
      case HK_F64: ((double *)buf)[i] = v; break;
      case HK_BOOL: ((uint8_t *)buf)[i] = (uint8_t)(r & 1); break;
      default: memcpy((char *)buf + i * hk_dtype_size(t), &r, hk_dtype_size(t));
    }
  }
}

/* A scalar parameter's value: 1.5 or 3, in its type. */
static void fill_scalar(void *p, hk_dtype_t t) {
  switch (t) {
    case HK_F32: *(float *)p = 1.5f; break;
    case HK_F64: *(double *)p = 1.5; break;
    case HK_F16: *(uint16_t *)p = 0x3e00; break;
    case HK_BF16: *(uint16_t *)p = 0x3fc0; break;
    case HK_BOOL: *(uint8_t *)p = 1; break;
    default: memset(p, 0, 8), *(uint8_t *)p = 3; break; /* little-endian */
  }
}

typedef struct call_data {
  void *buf[MAXP];
  size_t bytes[MAXP];
  uint64_t scalar[MAXP];
  void *args[MAXP];
} call_data;

/* out's arguments for a call on in's inputs: scalars copied, fresh copies
 * of the in and inout buffers (inout buffers change), outputs starting as
 * the same pattern in every run. */
static void set_args(const hk_kernel_info_t *info, const call_data *in,
                     call_data *out) {
  for (int p = 0; p < info->nparams; p++) {
    out->args[p] = info->params[p].role == HK_ROLE_SCALAR
                       ? (void *)&out->scalar[p]
                       : out->buf[p];
    out->scalar[p] = in->scalar[p];
    if (info->params[p].role == HK_ROLE_OUT)
      memset(out->buf[p], 0xa5, in->bytes[p]);
    else if (info->params[p].role != HK_ROLE_SCALAR)
      memcpy(out->buf[p], in->buf[p], in->bytes[p]);
  }
}

/* Buffers of NMAX elements of up to 8 bytes for three call_data (reductions'
 * accumulators are small): 1, or 0 when out of memory. */
static int bufs_new(call_data *a, call_data *b, call_data *c) {
  for (int p = 0; p < MAXP; p++) {
    a->buf[p] = malloc(NMAX * 8);
    b->buf[p] = malloc(NMAX * 8);
    c->buf[p] = malloc(NMAX * 8);
    CHECK(a->buf[p] && b->buf[p] && c->buf[p]);
    if (!a->buf[p] || !b->buf[p] || !c->buf[p]) return 0;
  }
  return 1;
}

static void bufs_free(call_data *a, call_data *b, call_data *c) {
  for (int p = 0; p < MAXP; p++) {
    free(a->buf[p]);
    free(b->buf[p]);
    free(c->buf[p]);
  }
}

/* Runs variant v of instance i on n elements with the inputs of in into
 * out's buffers (set_args). */
static void run_variant(int v, size_t i, size_t n, const call_data *in,
                       call_data *out) {
  const hk_stdlib_entry_t *s = &hk__stdlib_isa[v][i];
  const hk_kernel_info_t *info = &s->info;
  set_args(info, in, out);
  hk_entry_t e = {.kind = info->kind, .range = s->range, .merge = s->merge,
                  .lens = s->lens, .rowred = s->rowred, .colred = s->colred,
                  .acc_size = s->acc_size, .flags = s->flags};
  hk__run(&e, out->args, n);
}

/* Whether the bits of one element of type t are a NaN's. */
static int is_nan(hk_dtype_t t, const unsigned char *e) {
  uint64_t u = 0;
  memcpy(&u, e, hk_dtype_size(t));
  switch (t) {
    case HK_F32: return (u & 0x7fffffffu) > 0x7f800000u;
    case HK_F64: return (u & 0x7fffffffffffffffu) > 0x7ff0000000000000u;
    case HK_F16: return (u & 0x7fffu) > 0x7c00u;
    case HK_BF16: return (u & 0x7fffu) > 0x7f80u;
    default: return 0;
  }
}

/* The index of the first element of type t whose bits differ between a and
 * b (bytes long), or SIZE_MAX. Any NaN equals any NaN: a NaN's sign and
 * payload are not part of a result (IEEE 754 leaves them open, and x86
 * takes them from the first operand, which compilers may swap). */
static size_t first_difference(hk_dtype_t t, const void *a, const void *b,
                               size_t bytes) {
  const size_t w = hk_dtype_size(t);
  const unsigned char *x = a, *y = b;
  for (size_t i = 0; i + w <= bytes; i += w)
    if (memcmp(x + i, y + i, w) != 0 && !(is_nan(t, x + i) && is_nan(t, y + i)))
      return i / w;
  return SIZE_MAX;
}

/* Instance i at size n on every variant the CPU runs, against baseline. */
static void check_instance(size_t i, size_t n, call_data *in, call_data *base,
                           call_data *other) {
  const hk_stdlib_entry_t *s = &hk__stdlib[i];
  const hk_kernel_info_t *info = &s->info;
  CHECK_MSG(info->nparams <= MAXP, "%s: %d params", info->name, info->nparams);
  if (info->nparams > MAXP) return;
  int64_t lens[MAXP];
  for (int p = 0; p < info->nparams; p++) {
    fill_scalar(&in->scalar[p], info->params[p].dtype);
    in->args[p] = info->params[p].role == HK_ROLE_SCALAR ? (void *)&in->scalar[p]
                                                         : NULL;
  }
  if (s->lens(in->args, n, lens) != 0) return; /* n is not a valid size */
  for (int p = 0; p < info->nparams; p++) {
    if (info->params[p].role == HK_ROLE_SCALAR) continue;
    CHECK_MSG(lens[p] >= 0 && (uint64_t)lens[p] <= NMAX, "%s: len %" PRId64,
              info->name, lens[p]);
    if (lens[p] < 0 || (uint64_t)lens[p] > NMAX) return;
    in->bytes[p] = (size_t)lens[p] * hk_dtype_size(info->params[p].dtype);
    fill_input(in->buf[p], info->params[p].dtype, (size_t)lens[p]);
  }
  run_variant(HK_ISA_BASE, i, n, in, base);
  for (int v = HK_ISA_BASE + 1; v <= hk__isa_level(); v++) {
    if (!hk__stdlib_isa[v]) continue;
    CHECK_STR_EQ(hk__stdlib_isa[v][i].info.name, info->name);
    run_variant(v, i, n, in, other);
    for (int p = 0; p < info->nparams; p++) {
      if (info->params[p].role == HK_ROLE_SCALAR ||
          info->params[p].role == HK_ROLE_IN)
        continue;
      size_t bad = first_difference(info->params[p].dtype, base->buf[p],
                                    other->buf[p], in->bytes[p]);
      int same = bad == SIZE_MAX;
      CHECK_MSG(same, "%s n=%zu: %s[%zu] differs between %s and %s", info->name,
                n, info->params[p].name, bad, hk__isa_name(HK_ISA_BASE),
                hk__isa_name(v));
    }
  }
}

static void test_same_bits(void) {
  call_data in, base, other;
  if (!bufs_new(&in, &base, &other)) return;
  for (size_t i = 0; i < hk__stdlib_count; i++)
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
      check_instance(i, sizes[k], &in, &base, &other);
  printf("# %zu instances x %zu sizes on %d variants\n", hk__stdlib_count,
         sizeof sizes / sizeof sizes[0], hk__stdlib_level() + 1);
  bufs_free(&in, &base, &other);
}

/* Reductions per row (the rowred entry, abi.h; rows shorter than a few
 * lanes' worth go in batches of a vector's width, emit_c.c; argmax and
 * argmin rows of up to 111 or 223 elements, emit_argsel.c) on every
 * variant the CPU runs: each row's results the bits of the baseline's
 * flat call on that row. Row counts that leave rows past the last batch;
 * lengths around the lane counts (8 for 8-byte accumulators, 16 for
 * 4-byte ones), with and without tails, and the batches' limits; rows of
 * 2 to 20 also a gap of one element apart (rows of 2 to 6, or 8 with
 * AVX-512VL: the batches' gathers, not hk_rowc__NAME's shuffles of one
 * run), and with only the
 * results a gap apart (each stored alone, not the batch's vector). */
static const size_t row_lens[] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  15,
                                  16, 17, 20, 24, 31, 32, 40, 47, 48, 63,
                                  64, 100, 111, 223};
#define ROWS 37u

static void check_rows_instance(size_t i, call_data *in, call_data *ref,
                                call_data *rows) {
  const hk_stdlib_entry_t *s = &hk__stdlib[i];
  const hk_kernel_info_t *info = &s->info;
  if (info->kind != HK_KIND_REDUCTION || info->nparams > MAXP) return;
  for (size_t k = 0; k < 3 * sizeof row_lens / sizeof row_lens[0]; k++) {
    /* gap 1: every row a gap apart; 2: the results only */
    const size_t m = row_lens[k / 3], gap = k % 3;
    if (gap && (m < 2 || m > 20)) continue;
    int64_t lens[MAXP];
    ptrdiff_t steps[MAXP];
    for (int p = 0; p < info->nparams; p++) {
      fill_scalar(&in->scalar[p], info->params[p].dtype);
      in->args[p] = info->params[p].role == HK_ROLE_SCALAR
                        ? (void *)&in->scalar[p]
                        : NULL;
    }
    if (s->lens(in->args, m, lens) != 0) continue;
    for (int p = 0; p < info->nparams; p++) {
      const hk_role_t role = info->params[p].role;
      const size_t es = hk_dtype_size(info->params[p].dtype);
      const size_t g = gap == 1 || (gap == 2 && role != HK_ROLE_IN);
      steps[p] = role == HK_ROLE_SCALAR ? 0 : (ptrdiff_t)(((size_t)lens[p] + g) * es);
      if (role == HK_ROLE_SCALAR) continue;
      in->bytes[p] = ROWS * ((size_t)lens[p] + g) * es;
      fill_input(in->buf[p], info->params[p].dtype, ROWS * ((size_t)lens[p] + g));
    }
    /* the reference: the baseline's flat call row by row */
    set_args(info, in, ref);
    const hk_stdlib_entry_t *b = &hk__stdlib_isa[HK_ISA_BASE][i];
    hk_entry_t e = {.kind = info->kind, .range = b->range, .merge = b->merge,
                    .lens = b->lens, .acc_size = b->acc_size, .flags = b->flags};
    for (size_t r = 0; r < ROWS; r++) {
      void *args[MAXP];
      for (int p = 0; p < info->nparams; p++)
        args[p] = (char *)ref->args[p] + (ptrdiff_t)r * steps[p];
      hk__run(&e, args, m);
    }
    for (int v = HK_ISA_BASE; v <= hk__isa_level(); v++) {
      if (!hk__stdlib_isa[v] || !hk__stdlib_isa[v][i].rowred) continue;
      set_args(info, in, rows);
      hk__stdlib_isa[v][i].rowred(rows->args, m, 0, ROWS, steps);
      for (int p = 0; p < info->nparams; p++) {
        const hk_role_t role = info->params[p].role;
        if (role == HK_ROLE_SCALAR || role == HK_ROLE_IN) continue;
        size_t bad = first_difference(info->params[p].dtype, ref->buf[p],
                                      rows->buf[p], in->bytes[p]);
        CHECK_MSG(bad == SIZE_MAX,
                  "%s rows of %zu%s: %s of element %zu differs between %s's "
                  "rowred and %s's flat call",
                  info->name, m,
                  gap == 1 ? " (a gap apart)" : gap ? " (results a gap apart)" : "",
                  info->params[p].name, bad, hk__isa_name(v),
                  hk__isa_name(HK_ISA_BASE));
      }
    }
  }
}

static void test_rows_bits(void) {
  call_data in, ref, rows;
  if (!bufs_new(&in, &ref, &rows)) return;
  size_t count = 0;
  for (size_t i = 0; i < hk__stdlib_count; i++) {
    check_rows_instance(i, &in, &ref, &rows);
    count += hk__stdlib[i].info.kind == HK_KIND_REDUCTION;
  }
  printf("# rowred of %zu reductions x %zu row lengths on %d variants\n",
         count, sizeof row_lens / sizeof row_lens[0], hk__stdlib_level() + 1);
  bufs_free(&in, &ref, &rows);
}

/* The level is what the CPU has, by the compiler's own reading of cpuid
 * (which also checks that the OS saves the AVX and AVX-512 registers). */
static void test_level(void) {
  int want = HK_ISA_BASE;
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
      __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2")) {
    want = HK_ISA_V3;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512cd")) {
      want = HK_ISA_V4;
      if (__builtin_cpu_supports("avx512vbmi") &&
          __builtin_cpu_supports("avx512vbmi2") &&
          __builtin_cpu_supports("avx512bitalg") &&
          __builtin_cpu_supports("avx512vpopcntdq") &&
          __builtin_cpu_supports("avx512ifma") &&
          __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("gfni"))
        want = HK_ISA_V4X;
    }
  }
#endif
  CHECK_INT_EQ(hk__isa_level(), want);
  CHECK_INT_EQ(hk__stdlib_level(), want);
  CHECK_STR_EQ(hk_stdlib_isa(), hk__isa_name(want));
  printf("# this CPU runs the %s stdlib\n", hk_stdlib_isa());
  /* the public function is the picked variant's (ifunc) */
  const hk_stdlib_entry_t *e = hk__stdlib_find("add_f32");
  CHECK(e && hk__stdlib_typed(e) == (void (*)(void))hk_add_f32);
  CHECK(e && hk__stdlib_entry(e).range == hk__stdlib_isa[want][e - hk__stdlib].range);
}

int main(void) {
  if (!hk__stdlib_isa[HK_ISA_V3] || !hk__stdlib_isa[HK_ISA_V4X])
    CHECK_SKIP("libhk was built with the baseline stdlib only (HK_STDLIB_ISA off)");
  test_level();
  test_same_bits();
  test_rows_bits();
  CHECK_DONE();
}
