/* test_faults.c — allocation failures, SQLite style: a scenario (create a
 * context, load a kernel file from a string, find it, call it flat and
 * over arrays with broadcasting and an axis reduction, destroy) is run
 * again and again with the Nth allocation hk makes failing, for N = 1, 2,
 * ... until a run makes no Nth allocation. Every run must end in success
 * with the right results or in a clean error (HK_ENOMEM, or the failure
 * reported by the step that could not go on), never a crash; under
 * AddressSanitizer (the suite's second build) never a leak either.
 *
 * Only hk's own allocations fail: the link wraps malloc, calloc, realloc,
 * strdup, strndup and posix_memalign for libhk's objects
 * (-Wl,--wrap=..., tests/CMakeLists.txt), so the C library and libtcc
 * allocate as usual. The opt tier is off (HK_TIER_JIT): its worker thread
 * would allocate at times no run controls. HK_FAULTS_TRACE=1 prints each
 * failed allocation's call site.
 */
#include <hk.h>
#include <stdatomic.h>

#include "check.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t a, size_t b);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
int __real_posix_memalign(void **p, size_t align, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t a, size_t b);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);
int __wrap_posix_memalign(void **p, size_t align, size_t n);

static _Atomic long g_count; /* allocations since arming */
static _Atomic long g_fail_at; /* 0: never fail */
static _Atomic int g_failed;   /* the armed allocation was refused */

/* libtcc ends the process when its own allocations fail outside a compile
 * (tcc_error: exit(1)): that is libtcc's contract, not hk's, so libtcc's
 * allocations never fail here. They are all made from libtcc.o (the other
 * objects of libtcc.a allocate through its tcc_malloc and friends), whose
 * code lies between its first and last global functions, pstrcpy and
 * tcc_print_stats (Debian's 0.9.27); tcc_layout_known checks that the
 * allocating functions do lie there, else the test is skipped. */
extern char *pstrcpy(char *buf, int size, const char *s);
extern void tcc_print_stats(void *s, unsigned total_time);
extern void *tcc_malloc(unsigned long size);
extern void *tcc_realloc(void *p, unsigned long size);
extern void *tcc_mallocz(unsigned long size);
extern char *tcc_strdup(const char *s);
extern void *tcc_new(void);
static int from_tcc(const void *ret) {
  const char *lo = (const char *)(uintptr_t)pstrcpy;
  const char *hi = (const char *)(uintptr_t)tcc_print_stats + 0x100;
  const char *r = ret;
  return r >= lo && r < hi;
}
static int tcc_layout_known(void) {
  const void *fns[] = {(const void *)(uintptr_t)tcc_malloc,
                       (const void *)(uintptr_t)tcc_realloc,
                       (const void *)(uintptr_t)tcc_mallocz,
                       (const void *)(uintptr_t)tcc_strdup,
                       (const void *)(uintptr_t)tcc_new};
  for (size_t i = 0; i < sizeof fns / sizeof *fns; i++)
    if (!from_tcc(fns[i])) return 0;
  return (uintptr_t)tcc_print_stats - (uintptr_t)pstrcpy < 0x10000;
}

#define SHOULD_FAIL() should_fail(__builtin_return_address(0))
static int should_fail(const void *ret) {
  long at = atomic_load(&g_fail_at);
  if (!at || from_tcc(ret)) return 0;
  if (atomic_fetch_add(&g_count, 1) + 1 != at) return 0;
  atomic_store(&g_failed, 1);
  if (getenv("HK_FAULTS_TRACE"))
    fprintf(stderr, "failing allocation %ld from %p\n", at, ret);
  return 1;
}

void *__wrap_malloc(size_t n) { return SHOULD_FAIL() ? NULL : __real_malloc(n); }
void *__wrap_calloc(size_t a, size_t b) {
  return SHOULD_FAIL() ? NULL : __real_calloc(a, b);
}
void *__wrap_realloc(void *p, size_t n) {
  return SHOULD_FAIL() ? NULL : __real_realloc(p, n);
}
char *__wrap_strdup(const char *s) { return SHOULD_FAIL() ? NULL : __real_strdup(s); }
char *__wrap_strndup(const char *s, size_t n) {
  return SHOULD_FAIL() ? NULL : __real_strndup(s, n);
}
int __wrap_posix_memalign(void **p, size_t align, size_t n) {
  return SHOULD_FAIL() ? ENOMEM : __real_posix_memalign(p, align, n);
}

static const char *KFILE =
    "{\"schema_version\": 1, \"name\": \"fma3\", \"kind\": \"elementwise\","
    " \"types\": {\"T\": [\"f32\", \"f64\"]},"
    " \"params\": [{\"name\": \"alpha\", \"type\": \"T\", \"role\": \"scalar\"},"
    "  {\"name\": \"x\", \"type\": \"T\", \"role\": \"in\"},"
    "  {\"name\": \"y\", \"type\": \"T\", \"role\": \"in\"},"
    "  {\"name\": \"out\", \"type\": \"T\", \"role\": \"out\"}],"
    " \"body\": \"out = alpha * x + y;\"}";

/* One run of the scenario. Returns 1 when it ran to the end with the right
 * results, 0 when a step failed with an error, -1 when a call that
 * returned HK_OK left a wrong result, or a step failed without the
 * injected failure. */
static int scenario(const char *cache) {
  const char *none[] = {NULL};
  hk_options_t o = {.plugin_dirs = none, .cache_dir = cache,
                    .tier = HK_TIER_JIT, .flags = HK_NO_CACHE};
  hk_context_t *ctx = NULL;
  int rc = hk_context_create(&ctx, &o);
  if (rc != HK_OK) return ctx == NULL ? 0 : -1;
  int ok = 0, wrong = 0;
  hk_kernel_t *k = NULL, *sum = NULL, *sel = NULL;
  float a = 2, x[4][6], y[6], out[4][6], s[6], flat[6];
  for (int r = 0; r < 4; r++)
    for (int c = 0; c < 6; c++) x[r][c] = (float)(r * 6 + c);
  for (int c = 0; c < 6; c++) y[c] = (float)(100 * c);
  if (hk_load_string(ctx, KFILE, strlen(KFILE), "fma3.json") != HK_OK ||
      hk_kernel_find(ctx, "fma3_f32", &k) != HK_OK)
    goto done;
  void *args[] = {&a, x[1], y, flat};
  if (hk_call(k, 6, args) != HK_OK) goto done;
  for (int c = 0; c < 6; c++) wrong += flat[c] != 2 * x[1][c] + y[c];
  hk_array_t arr[4], red[2];
  hk_array_init(&arr[0], &a, HK_F32, 0, NULL);
  hk_array_init(&arr[1], x, HK_F32, 2, (int64_t[]){4, 6});
  hk_array_init(&arr[2], y, HK_F32, 1, (int64_t[]){6});
  hk_array_init(&arr[3], out, HK_F32, 2, (int64_t[]){4, 6});
  if (hk_kernel_select(ctx, "fma3", arr, 4, &sel) != HK_OK) goto done;
  wrong += sel != k;
  if (hk_call_arrays(k, arr, NULL) != HK_OK) goto done;
  for (int r = 0; r < 4; r++)
    for (int c = 0; c < 6; c++) wrong += out[r][c] != 2 * x[r][c] + y[c];
  /* out viewed transposed, (6, 4), summed over its axis 1: one sum per
   * column of out, through the copying path */
  hk_array_init(&red[0], out, HK_F32, 2, (int64_t[]){6, 4});
  red[0].strides[0] = 1;
  red[0].strides[1] = 6;
  hk_array_init(&red[1], s, HK_F32, 1, (int64_t[]){6});
  if (hk_kernel_find(ctx, "sum_f32", &sum) != HK_OK) goto done;
  hk_call_opts_t axis = {.axes = (int[]){1}, .naxes = 1};
  if (hk_call_arrays(sum, red, &axis) != HK_OK) goto done;
  for (int c = 0; c < 6; c++) {
    float want = 0;
    for (int r = 0; r < 4; r++) want += out[r][c];
    wrong += s[c] != want;
  }
  /* a transposed operand of rows longer than 256: copied a block of whole
   * rows at a time through a heap block (blocks of columns on the stack
   * when that allocation fails) */
  {
    enum { R = 20, C = 300 };
    static float tx[C][R], ty[R][C], to[R][C];
    for (int c = 0; c < C; c++)
      for (int r = 0; r < R; r++) tx[c][r] = (float)(c * R + r);
    for (int r = 0; r < R; r++)
      for (int c = 0; c < C; c++) ty[r][c] = (float)c;
    hk_array_t t[4];
    hk_array_init(&t[0], &a, HK_F32, 0, NULL);
    hk_array_init(&t[1], tx, HK_F32, 2, (int64_t[]){R, C});
    t[1].strides[0] = 1; /* tx viewed transposed: (R, C) */
    t[1].strides[1] = R;
    hk_array_init(&t[2], ty, HK_F32, 2, (int64_t[]){R, C});
    hk_array_init(&t[3], to, HK_F32, 2, (int64_t[]){R, C});
    if (hk_call_arrays(k, t, NULL) != HK_OK) goto done;
    for (int r = 0; r < R; r++)
      for (int c = 0; c < C; c++) wrong += to[r][c] != 2 * tx[c][r] + ty[r][c];
  }
  ok = 1;
done:
  hk_context_destroy(ctx);
  if (wrong) return -1;
  if (!ok && !atomic_load(&g_failed)) return -1; /* failed by itself */
  return ok;
}

/* The stdlib's f16 table (hk__lut16, from 262,144 elements) with its
 * allocation failing: the call computes instead, the same bits; the next
 * call builds the table. */
static void check_table_oom(void) {
  enum { N = 262144 };
  static uint16_t x[N], want[N], got[N];
  for (size_t i = 0; i < N; i++) x[i] = (uint16_t)(i * 40503u);
  for (size_t at = 0; at < N; at += 4096) hk_gelu_f16(x + at, want + at, 4096);
  atomic_store(&g_count, 0);
  atomic_store(&g_failed, 0);
  atomic_store(&g_fail_at, 1);
  hk_gelu_f16(x, got, N);
  atomic_store(&g_fail_at, 0);
  CHECK_MSG(atomic_load(&g_failed), "gelu_f16 allocated no table");
  CHECK(memcmp(got, want, sizeof got) == 0);
  memset(got, 0, sizeof got);
  hk_gelu_f16(x, got, N);
  CHECK(memcmp(got, want, sizeof got) == 0);
}

int main(void) {
  char cache[] = "/tmp/hk-test-faults-XXXXXX";
  if (!mkdtemp(cache)) return 1;
  if (!tcc_layout_known())
    CHECK_SKIP("cannot tell libtcc's allocations from hk's in this libtcc "
               "build (its allocation helpers are not together)");
  hk_set_threads(1); /* no pool thread allocating during a run */
  check_table_oom();
  /* a clean run first: it must succeed */
  CHECK_INT_EQ(scenario(cache), 1);
  long n, completed = 0, failed_cleanly = 0;
  for (n = 1; n < 100000; n++) {
    atomic_store(&g_count, 0);
    atomic_store(&g_failed, 0);
    atomic_store(&g_fail_at, n);
    int r = scenario(cache);
    atomic_store(&g_fail_at, 0);
    CHECK_MSG(r >= 0, "allocation %ld failing: a wrong result or error (%s)",
              n, hk_last_error());
    if (!atomic_load(&g_failed)) {
      CHECK_INT_EQ(r, 1);
      break; /* the scenario makes fewer than n allocations */
    }
    if (r == 1) completed++;
    else failed_cleanly++;
  }
  printf("%ld allocation points: %ld runs stopped with an error, %ld "
         "recovered and completed\n",
         n - 1, failed_cleanly, completed);
  CHECK(n > 10);
  check_rm_rf(cache);
  CHECK_DONE();
}
