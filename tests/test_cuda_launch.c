/* test_cuda_launch.c — the host side of GPU launches, without a GPU: libhk
 * runs on tests/fake_cuda.c (HK_LIBCUDA), a driver that runs no kernel and
 * records each launch, so that what the backend asks of the driver is
 * checked here on every machine (tools/gpu_check.sh runs the kernels on a
 * real GPU; test_cuda there).
 *
 * Staged rows (f16 and bf16 rows kernels, core/cuda/launch.c): each block
 * (a block a row) or thread (a thread a row) of the launch has float
 * copies of its rows in the stream's rows scratch, nstaged * max(n, 1)
 * floats each (codegen/emit_rows.c indexes them so). Checked:
 *  - the launch's geometry: a block a row over 300 rows of 50,257 (at
 *    most 64 MiB of copies: 166 blocks), 3 rows of 768, one row (hk_call);
 *    a thread a row (a plugin, NVRTC's code): no more threads than rows,
 *    in one block when fewer than a block's;
 *  - the scratch: a live block of at least the units' copies, the same
 *    one again for a smaller call, twice as long when a call needs more,
 *    freed after a call whose one unit's copies are over the 64 MiB (not
 *    kept);
 *  - out of memory: fewer blocks (166 halved down to the 20 that fit),
 *    and HK_ENOMEM, naming the kernel, when not even one unit's fits.
 * And where axis reductions go: a warp a row for many short rows, part
 * and merge blocks otherwise.
 * Built where the stdlib has GPU code (nvcc); skipped (77) otherwise.
 */
#include <dlfcn.h>

#include "abi.h"
#include "check.h"
#include "hk.h"
#include "rows16_kernel.h" /* rows16_json */

int hk__call_rows_cuda(const hk_kernel_t *k, hk_stream_t *s, size_t rows,
                       size_t n, void *const *args);

static void (*f_limit)(size_t);
static void (*f_watch)(int);
static int (*f_last)(const char **, unsigned *, unsigned *,
                     unsigned long long[3]);
static size_t (*f_block)(unsigned long long);
static size_t (*f_live)(void);

typedef struct launch {
  const char *fn;
  unsigned grid, block;
  unsigned long long n, rows, scratch;
} launch;

static launch last(void) {
  launch l;
  unsigned long long w[3];
  f_last(&l.fn, &l.grid, &l.block, w);
  l.n = w[0], l.rows = w[1], l.scratch = w[2];
  return l;
}

/* device buffers of bytes each */
static void *dev(size_t bytes) {
  void *p = NULL;
  CHECK_INT_EQ(hk_device_alloc(&p, bytes), HK_OK);
  return p;
}


/* A block a row: the stdlib's softmax_f16 (x, y: 2 staged buffers). */
static void block_a_row(hk_context_t *ctx) {
  hk_kernel_t *k = NULL;
  CHECK_INT_EQ(hk_kernel_find(ctx, "softmax_f16", &k), HK_OK);
  if (!k) return;
  const size_t N = 50257, per = 2 * N * sizeof(float);
  void *x = dev(300 * N * 2), *y = dev(300 * N * 2);
  void *args[2] = {x, y};
  f_watch(4); /* x, y, n, rows, scratch */

  /* 300 rows: 166 blocks hold 64 MiB of copies, the rows stride */
  CHECK_INT_EQ(hk__call_rows_cuda(k, NULL, 300, N, args), HK_OK);
  launch l = last();
  CHECK_STR_EQ(l.fn, "hk_cuda_crow__softmax_f16");
  CHECK_INT_EQ(l.block, hk_abi_rows_lanes(N));
  CHECK_INT_EQ(l.grid, ((size_t)64 << 20) / per);
  CHECK(l.n == N && l.rows == 300);
  CHECK_MSG(f_block(l.scratch) >= l.grid * per,
            "scratch of %zu bytes for %u blocks of %zu", f_block(l.scratch),
            l.grid, per);
  const unsigned long long big = l.scratch;

  /* 3 rows of 768: 3 blocks, the same scratch (long enough) */
  CHECK_INT_EQ(hk__call_rows_cuda(k, NULL, 3, 768, args), HK_OK);
  l = last();
  CHECK_INT_EQ(l.grid, 3);
  CHECK_INT_EQ(l.block, hk_abi_rows_lanes(768));
  CHECK(l.scratch == big);

  /* hk_call on device buffers: one row */
  CHECK_INT_EQ(hk_call(k, 768, args), HK_OK);
  l = last();
  CHECK(l.grid == 1 && l.rows == 1 && l.n == 768);

  /* out of memory: a new stream (no scratch yet), room for 20 blocks'
   * copies: 166 halved to 83, 41, 20 */
  hk_stream_t *s = NULL;
  CHECK_INT_EQ(hk_stream_create(&s), HK_OK);
  f_limit(f_live() + 20 * per + per / 2);
  CHECK_INT_EQ(hk__call_rows_cuda(k, s, 300, N, args), HK_OK);
  l = last();
  CHECK_INT_EQ(l.grid, 20);
  CHECK(f_block(l.scratch) >= 20 * per);
  hk_stream_t *s2 = NULL;
  f_limit(SIZE_MAX);
  CHECK_INT_EQ(hk_stream_create(&s2), HK_OK);
  f_limit(f_live() + per / 2); /* not one block's */
  unsigned long long w[3];
  const int before = f_last(&l.fn, &l.grid, &l.block, w);
  CHECK_INT_EQ(hk__call_rows_cuda(k, s2, 300, N, args), HK_ENOMEM);
  CHECK_CONTAINS(hk_last_error(), "kernel softmax_f16: cannot have");
  CHECK_INT_EQ(f_last(&l.fn, &l.grid, &l.block, w), before); /* none ran */
  f_limit(SIZE_MAX);
  hk_stream_destroy(s2);
  hk_stream_destroy(s);

  /* growing calls: the scratch doubles (3 rows of 768, then 4: twice the
   * 3 rows' copies, which 6 rows then fit without a new one) */
  const size_t per768 = 2 * 768 * sizeof(float);
  CHECK_INT_EQ(hk_stream_create(&s), HK_OK);
  CHECK_INT_EQ(hk__call_rows_cuda(k, s, 3, 768, args), HK_OK);
  CHECK_INT_EQ(f_block(last().scratch), 3 * per768);
  CHECK_INT_EQ(hk__call_rows_cuda(k, s, 4, 768, args), HK_OK);
  const unsigned long long grown = last().scratch;
  CHECK_INT_EQ(f_block(grown), 6 * per768);
  CHECK_INT_EQ(hk__call_rows_cuda(k, s, 6, 768, args), HK_OK);
  CHECK(last().scratch == grown && last().grid == 6);
  hk_stream_destroy(s);
  CHECK_INT_EQ(hk_device_free(x), HK_OK);
  CHECK_INT_EQ(hk_device_free(y), HK_OK);

  /* one unit's copies over 64 MiB (rows of 9M: 72 MB): one block, its
   * scratch freed after the call */
  const size_t M = 9000000;
  x = dev(2 * M * 2), y = dev(2 * M * 2);
  args[0] = x, args[1] = y;
  CHECK_INT_EQ(hk__call_rows_cuda(k, NULL, 2, M, args), HK_OK);
  l = last();
  CHECK(l.grid == 1 && l.rows == 2 && l.n == M);
  CHECK_MSG(f_block(l.scratch) == 0, "the %zu bytes of copies were kept",
            f_block(l.scratch));
  CHECK_INT_EQ(hk_device_free(x), HK_OK);
  CHECK_INT_EQ(hk_device_free(y), HK_OK);
}

/* A thread a row: rows16_f16 (5 staged buffers), NVRTC's code. */
static void thread_a_row(const char *dir) {
  char path[4200];
  snprintf(path, sizeof path, "%s/rows16.json", dir);
  FILE *f = fopen(path, "w");
  CHECK(f && fputs(rows16_json, f) >= 0);
  if (f) fclose(f);
  const char *dirs[] = {dir, NULL};
  hk_options_t o = {.plugin_dirs = dirs, .flags = HK_NO_CACHE,
                    .tier = HK_TIER_JIT};
  hk_context_t *ctx = NULL;
  CHECK_INT_EQ(hk_context_create(&ctx, &o), HK_OK);
  hk_kernel_t *k = NULL;
  if (ctx) CHECK_INT_EQ(hk_kernel_find(ctx, "rows16_f16", &k), HK_OK);
  if (!k) {
    hk_context_destroy(ctx);
    return;
  }
  const size_t N = 100, per = 5 * N * sizeof(float);
  void *b[5];
  for (int i = 0; i < 5; i++) b[i] = dev(1000 * N * 2);
  f_watch(7); /* 5 params, n, rows, scratch */
  int rc = hk__call_rows_cuda(k, NULL, 3, N, b);
  if (rc == HK_EUNSUPPORTED && strstr(hk_last_error(), "NVRTC")) {
    printf("NOTE: no NVRTC: a thread a row not checked (%s)\n",
           hk_last_error());
  } else {
    CHECK_MSG(rc == HK_OK, "%d %s", rc, hk_last_error());
    launch l = last();
    CHECK_STR_EQ(l.fn, "hk_cuda__rows16_f16");
    CHECK(l.grid == 1 && l.block == 3 && l.rows == 3 && l.n == N);
    CHECK(f_block(l.scratch) >= 3 * per);
    /* 1000 rows: 1000 threads' copies; blocks of 256 (3 of them run,
     * the rows stride) */
    CHECK_INT_EQ(hk__call_rows_cuda(k, NULL, 1000, N, b), HK_OK);
    l = last();
    CHECK(l.grid == 3 && l.block == 256 && l.rows == 1000);
    CHECK(f_block(l.scratch) >= 768 * per);
  }
  for (int i = 0; i < 5; i++) CHECK_INT_EQ(hk_device_free(b[i]), HK_OK);
  hk_context_destroy(ctx);
}

/* Axis reductions (hk_call_arrays over the last axis of device arrays):
 * a warp a row where rows are short and many (hk.h), else part blocks
 * and a merge block a row; a flat sum in two launches. */
static void reductions(hk_context_t *ctx) {
  hk_kernel_t *k = NULL;
  CHECK_INT_EQ(hk_kernel_find(ctx, "sum_f32", &k), HK_OK);
  if (!k) return;
  f_watch(-1);
  static const struct {
    int64_t rows, m;
    const char *fn;
    unsigned grid; /* 0: not checked */
  } cases[] = {
      {5000, 64, "hk_cuda_wrow__sum_f32", 0},    /* short rows, many */
      {10, 100000, "hk_cuda_merge__sum_f32", 10}, /* long: a merge a row */
      {3, 64, "hk_cuda_merge__sum_f32", 3},      /* few rows */
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    void *x = dev((size_t)(cases[c].rows * cases[c].m) * 4);
    void *out = dev((size_t)cases[c].rows * 4);
    hk_array_t a[2];
    int64_t shape[2] = {cases[c].rows, cases[c].m};
    hk_array_init(&a[0], x, HK_F32, 2, shape);
    hk_array_init(&a[1], out, HK_F32, 1, shape);
    int axis = -1;
    hk_call_opts_t o = {.axes = &axis, .naxes = 1};
    CHECK_MSG(hk_call_arrays(k, a, &o) == HK_OK, "%s", hk_last_error());
    launch l = last();
    CHECK_MSG(l.fn && !strcmp(l.fn, cases[c].fn),
              "sum over rows of (%lld, %lld): %s, expected %s",
              (long long)cases[c].rows, (long long)cases[c].m,
              l.fn ? l.fn : "none", cases[c].fn);
    if (cases[c].grid) CHECK_INT_EQ(l.grid, cases[c].grid);
    CHECK_INT_EQ(hk_device_free(x), HK_OK);
    CHECK_INT_EQ(hk_device_free(out), HK_OK);
  }
}

int main(void) {
  setenv("HK_LIBCUDA", HK_FAKE_CUDA, 1);
  void *lib = dlopen(HK_FAKE_CUDA, RTLD_NOW | RTLD_LOCAL);
  if (!lib) CHECK_SKIP("cannot load %s: %s", HK_FAKE_CUDA, dlerror());
  *(void **)&f_limit = dlsym(lib, "fake_cuda_limit");
  *(void **)&f_watch = dlsym(lib, "fake_cuda_watch");
  *(void **)&f_last = dlsym(lib, "fake_cuda_last");
  *(void **)&f_block = dlsym(lib, "fake_cuda_block");
  *(void **)&f_live = dlsym(lib, "fake_cuda_live");
  CHECK(f_limit && f_watch && f_last && f_block && f_live);
  if (!(f_limit && f_watch && f_last && f_block && f_live)) CHECK_DONE();
  CHECK_INT_EQ(hk_cuda_init(), HK_OK);

  const char *none[] = {NULL};
  hk_options_t o = {.plugin_dirs = none, .flags = HK_NO_CACHE};
  hk_context_t *ctx = NULL;
  CHECK_INT_EQ(hk_context_create(&ctx, &o), HK_OK);
  if (ctx) block_a_row(ctx);
  if (ctx) reductions(ctx);
  hk_context_destroy(ctx);

  char dir[] = "/tmp/hk_cuda_launch_XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  thread_a_row(dir);
  check_rm_rf(dir);
  CHECK_DONE();
}
