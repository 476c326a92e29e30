/* registry_fixture.c — what the registry's tests share: the temp tree, file
 * and process helpers, contexts, and the ops checked against the typed
 * stdlib bit for bit (the contracts are in registry_fixture.h). */
#include "registry_fixture.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "hk.h"

extern char **environ;

const size_t sizes[6] = {0, 1, 7, 1000, 65536 + 3, (1u << 20) + 5};

char g_root[64];
char g_src[4096];
char g_hk[4096];
char g_self[4096];
int g_have_cc;
int g_verbose;

/* Prints a message the test checks, when asked to (HK_TEST_VERBOSE=1). */
void show(const char *what, const char *msg) {
  if (g_verbose) printf("[%s]\n%s\n", what, msg);
}

/* root/rel in one of 16 rotating buffers: for immediate use as an argument
 * (main thread only); PATH() below keeps a path. */
const char *P(const char *rel) {
  static char bufs[16][4096];
  static int next;
  char *b = bufs[next++ % 16];
  snprintf(b, sizeof bufs[0], "%s/%s", g_root, rel);
  return b;
}

double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

void sleep_ms(int ms) {
  struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&t, NULL);
}

static int write_raw(const char *path, const void *p, size_t n) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return -1;
  ssize_t w = n ? write(fd, p, n) : 0;
  return close(fd) == 0 && w == (ssize_t)n ? 0 : -1;
}

/* Writes text to path as editors do: a temp name, then renamed over it
 * (readers see the old file or the new one, never half of one). The temp
 * name does not end in .json, so folder scans ignore it. */
void write_text(const char *path, const char *text) {
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.new", path);
  int ok = write_raw(tmp, text, strlen(text)) == 0 && rename(tmp, path) == 0;
  CHECK_MSG(ok, "cannot write %s: %s", path, strerror(errno));
}

void copy_fixture(const char *name, const char *to) {
  char from[4200];
  snprintf(from, sizeof from, "%s/tests/plugin_fixtures/%s", g_src, name);
  size_t n;
  char *p = check_read_file(from, &n);
  CHECK_MSG(p != NULL, "cannot read %s", from);
  if (p) write_text(to, p);
  free(p);
}

static int have_program(const char *name) {
  if (strchr(name, '/')) return access(name, X_OK) == 0;
  const char *path = getenv("PATH");
  if (!path) path = "/usr/bin:/bin";
  char *copy = strdup(path), *save = NULL;
  int hit = 0;
  for (char *d = strtok_r(copy, ":", &save); d && !hit;
       d = strtok_r(NULL, ":", &save)) {
    char p[4200];
    snprintf(p, sizeof p, "%s/%s", *d ? d : ".", name);
    hit = access(p, X_OK) == 0;
  }
  free(copy);
  return hit;
}

/* Starts argv[0] (searched in PATH) with stdout and stderr to log (or
 * /dev/null); barrier_fd >= 0 becomes the child's fd 3. Returns the pid, or
 * -1. */
pid_t spawn(char *const argv[], const char *log, int barrier_fd) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log ? log : "/dev/null",
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  if (barrier_fd >= 0) posix_spawn_file_actions_adddup2(&fa, barrier_fd, 3);
  pid_t pid;
  int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  return rc == 0 ? pid : -1;
}

/* The exit status of pid (-1 when it did not exit normally). */
int wait_exit(pid_t pid) {
  int st;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int run_logged(char *const argv[], const char *log) {
  pid_t pid = spawn(argv, log, -1);
  return pid < 0 ? -1 : wait_exit(pid);
}

void print_log(const char *log) {
  size_t n;
  char *p = check_read_file(log, &n);
  if (p) fprintf(stderr, "--- %s:\n%s---\n", log, p);
  free(p);
}

/* cc -shared -fPIC -nostdlib SRC -o OUT [define]; 0 on success. */
int cc_shared(const char *src, const char *out, const char *define) {
  char *argv[] = {"cc", "-shared", "-fPIC", "-nostdlib", "-O1", "-o",
                  (char *)out, (char *)src, (char *)define, NULL};
  const char *log = P("cc.log");
  int rc = run_logged(argv, log);
  if (rc != 0) print_log(log);
  return rc;
}

/* mkctx and mkctx_logged: the context, its log going to log (or none). */
hk_context_t *mkctx_with(hk_tier_t tier, const char *dir, const char *cache,
                         unsigned flags, const char *cc, hk_log_fn log) {
  const char *dirs[2] = {dir, NULL};
  hk_options_t o = {0};
  o.plugin_dirs = dirs;
  o.cache_dir = cache;
  o.tier = tier;
  o.flags = flags;
  o.cc = cc;
  o.log = log;
  hk_context_t *ctx = NULL;
  int rc = hk_context_create(&ctx, &o);
  CHECK_MSG(rc == HK_OK && ctx != NULL, "hk_context_create: %s",
            hk_last_error());
  return rc == HK_OK ? ctx : NULL;
}

hk_context_t *mkctx_logged(hk_tier_t tier, const char *dir,
                           const char *cache) {
  return mkctx_with(tier, dir, cache, 0, NULL, check_log);
}

hk_context_t *mkctx(hk_tier_t tier, const char *dir, const char *cache,
                    unsigned flags, const char *cc) {
  return mkctx_with(tier, dir, cache, flags, cc, NULL);
}

hk_kernel_t *find(hk_context_t *ctx, const char *name) {
  hk_kernel_t *k = NULL;
  int rc = hk_kernel_find(ctx, name, &k);
  CHECK_MSG(rc == HK_OK && k != NULL, "hk_kernel_find(%s): %s", name,
            hk_last_error());
  return rc == HK_OK ? k : NULL;
}

int found(hk_context_t *ctx, const char *name) {
  hk_kernel_t *k = NULL;
  return hk_kernel_find(ctx, name, &k) == HK_OK && k != NULL;
}

const char *note_of(const hk_kernel_t *k) {
  static char buf[4096];
  return hk_kernel_note(k, buf, sizeof buf);
}

float *gx32, *gy32;
float *gpos32; /* in [0.5, 4): never 0 */
static double *gx64, *gy64;
static int32_t *gxi32, *gyi32;
static int64_t *gxi64, *gyi64;

uint64_t rnd(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static double unit(uint64_t *s) { /* [0, 1) */
  return (double)(rnd(s) >> 11) * (1.0 / 9007199254740992.0);
}

static void init_data(void) {
  gx32 = malloc(NMAX * sizeof *gx32);
  gy32 = malloc(NMAX * sizeof *gy32);
  gpos32 = malloc(NMAX * sizeof *gpos32);
  gx64 = malloc(NMAX * sizeof *gx64);
  gy64 = malloc(NMAX * sizeof *gy64);
  gxi32 = malloc(NMAX * sizeof *gxi32);
  gyi32 = malloc(NMAX * sizeof *gyi32);
  gxi64 = malloc(NMAX * sizeof *gxi64);
  gyi64 = malloc(NMAX * sizeof *gyi64);
  if (!gx32 || !gy32 || !gpos32 || !gx64 || !gy64 || !gxi32 || !gyi32 ||
      !gxi64 || !gyi64) {
    fprintf(stderr, "out of memory\n");
    exit(2);
  }
  uint64_t s = 0x9E3779B97F4A7C15ull;
  for (size_t i = 0; i < NMAX; i++) {
    gx32[i] = (float)(unit(&s) * 8 - 4);
    gy32[i] = (float)(unit(&s) * 8 - 4);
    gpos32[i] = (float)(0.5 + unit(&s) * 3.5);
    gx64[i] = unit(&s) * 8 - 4;
    gy64[i] = unit(&s) * 8 - 4;
    /* full range: sums and products overflow and must wrap */
    gxi32[i] = (int32_t)(uint32_t)rnd(&s);
    gyi32[i] = (int32_t)(uint32_t)rnd(&s);
    gxi64[i] = (int64_t)rnd(&s);
    gyi64[i] = (int64_t)rnd(&s);
  }
}

static int is_reduction(int op) {
  return op == OP_SUM || op == OP_MAX || op == OP_DOT || op == OP_MEAN;
}

static void *in_x(hk_dtype_t t) {
  switch (t) {
    case HK_F32: return gx32;
    case HK_F64: return gx64;
    case HK_I32: return gxi32;
    case HK_I64: return gxi64;
    default: return NULL;
  }
}

static void *in_y(hk_dtype_t t) {
  switch (t) {
    case HK_F32: return gy32;
    case HK_F64: return gy64;
    case HK_I32: return gyi32;
    case HK_I64: return gyi64;
    default: return NULL;
  }
}


/* The scalars the ops take, per type. */
static check_scalar_t s_alpha(hk_dtype_t t) {
  check_scalar_t s = {0};
  if (t == HK_F32) s.f32 = 0.3f;
  if (t == HK_F64) s.f64 = 0.3;
  return s;
}
static check_scalar_t s_value(hk_dtype_t t) {
  check_scalar_t s = {0};
  if (t == HK_F32) s.f32 = 0.1f;
  if (t == HK_F64) s.f64 = -2.5e-3;
  if (t == HK_I32) s.i32 = -7;
  if (t == HK_I64) s.i64 = (int64_t)1 << 40;
  return s;
}
static check_scalar_t s_start(hk_dtype_t t) { /* integer ranges wrap */
  check_scalar_t s = {0};
  if (t == HK_F32) s.f32 = 0.5f;
  if (t == HK_F64) s.f64 = -3.0;
  if (t == HK_I32) s.i32 = INT32_MAX - 5;
  if (t == HK_I64) s.i64 = INT64_MAX - 5;
  return s;
}
static check_scalar_t s_step(hk_dtype_t t) {
  check_scalar_t s = {0};
  if (t == HK_F32) s.f32 = 0.1f;
  if (t == HK_F64) s.f64 = 0.001;
  if (t == HK_I32) s.i32 = 3;
  if (t == HK_I64) s.i64 = 7;
  return s;
}

/* A rows x cols shape for n elements (softmax). */
static void shape(size_t n, int64_t *rows, int64_t *cols) {
  if (!n) {
    *rows = 0;
    *cols = 4;
    return;
  }
  size_t c = 1;
  for (size_t d = 1; d <= 512 && d <= n; d++)
    if (n % d == 0) c = d;
  *cols = (int64_t)c;
  *rows = (int64_t)(n / c);
}

/* Runs op on type t over n elements into out: through k, or with the typed
 * stdlib function when k is NULL. axpy's y starts as in_y. Returns what
 * hk_call returned (HK_OK for the stdlib); -100 when the stdlib has no such
 * instance. */
static int run_op(const hk_kernel_t *k, int op, hk_dtype_t t, size_t n,
                  void *out) {
  void *x = in_x(t), *y = in_y(t);
  size_t es = hk_dtype_size(t);
  check_scalar_t a;
  switch (op) {
    case OP_ADD:
    case OP_MUL: {
      void *args[] = {x, y, out};
      if (k) return hk_call(k, n, args);
      int add = op == OP_ADD;
      switch (t) {
        case HK_F32: add ? hk_add_f32(x, y, out, n) : hk_mul_f32(x, y, out, n); break;
        case HK_F64: add ? hk_add_f64(x, y, out, n) : hk_mul_f64(x, y, out, n); break;
        case HK_I32: add ? hk_add_i32(x, y, out, n) : hk_mul_i32(x, y, out, n); break;
        case HK_I64: add ? hk_add_i64(x, y, out, n) : hk_mul_i64(x, y, out, n); break;
        default: return -100;
      }
      return HK_OK;
    }
    case OP_EXP:
    case OP_TANH:
    case OP_RELU:
    case OP_SUM:
    case OP_MAX:
    case OP_MEAN: {
      void *args[] = {x, out};
      if (k) return hk_call(k, n, args);
      int f32 = t == HK_F32;
      if (t != HK_F32 && t != HK_F64) return -100;
      switch (op) {
        case OP_EXP: f32 ? hk_exp_f32(x, out, n) : hk_exp_f64(x, out, n); break;
        case OP_TANH: f32 ? hk_tanh_f32(x, out, n) : hk_tanh_f64(x, out, n); break;
        case OP_RELU: f32 ? hk_relu_f32(x, out, n) : hk_relu_f64(x, out, n); break;
        case OP_SUM: f32 ? hk_sum_f32(x, out, n) : hk_sum_f64(x, out, n); break;
        case OP_MAX: f32 ? hk_max_f32(x, out, n) : hk_max_f64(x, out, n); break;
        default: f32 ? hk_mean_f32(x, out, n) : hk_mean_f64(x, out, n); break;
      }
      return HK_OK;
    }
    case OP_DOT: {
      void *args[] = {x, y, out};
      if (k) return hk_call(k, n, args);
      if (t == HK_F32) hk_dot_f32(x, y, out, n);
      else if (t == HK_F64) hk_dot_f64(x, y, out, n);
      else return -100;
      return HK_OK;
    }
    case OP_AXPY: {
      a = s_alpha(t);
      if (n) memcpy(out, y, n * es);
      void *args[] = {&a, x, out};
      if (k) return hk_call(k, n, args);
      if (t == HK_F32) hk_axpy_f32(a.f32, x, out, n);
      else if (t == HK_F64) hk_axpy_f64(a.f64, x, out, n);
      else return -100;
      return HK_OK;
    }
    case OP_SCALE: {
      a = s_alpha(t);
      void *args[] = {x, &a, out};
      if (k) return hk_call(k, n, args);
      if (t == HK_F32) hk_scale_f32(x, a.f32, out, n);
      else if (t == HK_F64) hk_scale_f64(x, a.f64, out, n);
      else return -100;
      return HK_OK;
    }
    case OP_FILL: {
      a = s_value(t);
      void *args[] = {&a, out};
      if (k) return hk_call(k, n, args);
      switch (t) {
        case HK_F32: hk_fill_f32(a.f32, out, n); break;
        case HK_F64: hk_fill_f64(a.f64, out, n); break;
        case HK_I32: hk_fill_i32(a.i32, out, n); break;
        case HK_I64: hk_fill_i64(a.i64, out, n); break;
        default: return -100;
      }
      return HK_OK;
    }
    case OP_ARANGE: {
      a = s_start(t);
      check_scalar_t b = s_step(t);
      void *args[] = {&a, &b, out};
      if (k) return hk_call(k, n, args);
      switch (t) {
        case HK_F32: hk_arange_f32(a.f32, b.f32, out, n); break;
        case HK_F64: hk_arange_f64(a.f64, b.f64, out, n); break;
        case HK_I32: hk_arange_i32(a.i32, b.i32, out, n); break;
        case HK_I64: hk_arange_i64(a.i64, b.i64, out, n); break;
        default: return -100;
      }
      return HK_OK;
    }
    case OP_SOFTMAX: {
      int64_t rows, cols;
      shape(n, &rows, &cols);
      void *args[] = {x, out, &rows, &cols};
      if (k) return hk_call(k, n, args);
      if (t == HK_F32) hk_softmax_f32(x, out, (size_t)rows, (size_t)cols);
      else if (t == HK_F64) hk_softmax_f64(x, out, (size_t)rows, (size_t)cols);
      else return -100;
      return HK_OK;
    }
  }
  return -100;
}

void *g_ref, *g_got; /* NMAX elements of 8 bytes each */

static void value_str(hk_dtype_t t, const void *p, size_t i, char *buf,
                      size_t n) {
  switch (t) {
    case HK_F32: {
      float v = ((const float *)p)[i];
      uint32_t u;
      memcpy(&u, &v, 4);
      snprintf(buf, n, "%.9g (0x%08x)", (double)v, u);
      break;
    }
    case HK_F64: {
      double v = ((const double *)p)[i];
      uint64_t u;
      memcpy(&u, &v, 8);
      snprintf(buf, n, "%.17g (0x%016llx)", v, (unsigned long long)u);
      break;
    }
    case HK_I32: snprintf(buf, n, "%d", ((const int32_t *)p)[i]); break;
    case HK_I64:
      snprintf(buf, n, "%lld", (long long)((const int64_t *)p)[i]);
      break;
    default: snprintf(buf, n, "?");
  }
}

/* Are cnt elements of got bit-identical to ref? Says where not. */
static int same_bits(const char *what, hk_dtype_t t, size_t cnt,
                     const void *ref, const void *got) {
  size_t es = hk_dtype_size(t);
  if (!cnt || memcmp(ref, got, cnt * es) == 0) return 1;
  size_t first = 0, diffs = 0;
  for (size_t i = cnt; i-- > 0;)
    if (memcmp((const char *)ref + i * es, (const char *)got + i * es, es)) {
      first = i;
      diffs++;
    }
  char a[64], b[64];
  value_str(t, ref, first, a, sizeof a);
  value_str(t, got, first, b, sizeof b);
  fprintf(stderr, "  %s: %zu of %zu elements differ; first [%zu]: stdlib %s, "
          "got %s\n", what, diffs, cnt, first, a, b);
  return 0;
}

/* k (a kernel computing op on type t) against the typed stdlib function at
 * every size: bit for bit. Returns the number of sizes that differ. */
int check_op(const char *what, const hk_kernel_t *k, int op,
             hk_dtype_t t, const size_t *ns, size_t count) {
  int bad = 0;
  for (size_t s = 0; s < count; s++) {
    size_t n = ns[s], cnt = is_reduction(op) ? 1 : n;
    size_t es = hk_dtype_size(t);
    memset(g_ref, 0xA5, (cnt ? cnt : 1) * es);
    memset(g_got, 0x5A, (cnt ? cnt : 1) * es);
    int rr = run_op(NULL, op, t, n, g_ref);
    int rg = run_op(k, op, t, n, g_got);
    char w[256];
    snprintf(w, sizeof w, "%s n=%zu", what, n);
    CHECK_MSG(rr == HK_OK, "%s: no stdlib reference", w);
    CHECK_MSG(rg == HK_OK, "%s: hk_call: %d %s", w, rg, hk_last_error());
    int same = rr == HK_OK && rg == HK_OK && same_bits(w, t, cnt, g_ref, g_got);
    CHECK_MSG(same, "%s: not bit-identical to the stdlib", w);
    bad += !same;
  }
  return bad;
}

/* The 1-based line and column (in characters; ASCII here) of the n-th
 * occurrence of needle in text. */
void pos_of(const char *text, const char *needle, int *line,
            int *col) {
  const char *p = strstr(text, needle);
  *line = 1;
  *col = 1;
  if (!p) {
    CHECK_MSG(0, "'%s' not in the test's text", needle);
    return;
  }
  for (const char *q = text; q < p; q++) {
    if (*q == '\n') {
      ++*line;
      *col = 1;
    } else {
      ++*col;
    }
  }
}

/* Expects msg to hold "PATH:LINE:COL: error: " + what. */
void check_at(const char *msg, const char *path, int line, int col,
              const char *what) {
  char want[4400];
  snprintf(want, sizeof want, "%s:%d:%d: error: %s", path, line, col, what);
  show(what, msg);
  CHECK_CONTAINS(msg, want);
}


void write_kernel(const char *path, const char *name,
                  const char *body) {
  char text[2048];
  snprintf(text, sizeof text, GOOD_JSON_FMT, name, body);
  write_text(path, text);
}

/* Calls name (an f32 x -> out kernel) at n = 1000 and checks out = f * x. */
int runs_times(hk_context_t *ctx, const char *name, float f) {
  hk_kernel_t *k = NULL;
  if (hk_kernel_find(ctx, name, &k) != HK_OK) return 0;
  float *out = g_got;
  void *args[] = {gx32, out};
  if (hk_call(k, 1000, args) != HK_OK) return 0;
  for (size_t i = 0; i < 1000; i++)
    if (out[i] != gx32[i] * f) return 0;
  return 1;
}

/* ---- Setup and teardown ------------------------------------------------ */

static double g_t0; /* when fixture_setup began */
static struct {
  const char *name;
  double t;
} g_times[16];
static int g_ntimes;

void fixture_timed(const char *label, double seconds) {
  if (g_ntimes < (int)COUNT(g_times)) {
    g_times[g_ntimes].name = label;
    g_times[g_ntimes++].t = seconds;
  }
}

int fixture_data(void) {
  init_data();
  g_ref = malloc(NMAX * 8);
  g_got = malloc(NMAX * 8);
  return g_ref && g_got ? 0 : -1;
}

void fixture_data_free(void) {
  free(g_ref);
  free(g_got);
  free(gx32);
  free(gy32);
  free(gpos32);
  free(gx64);
  free(gy64);
  free(gxi32);
  free(gyi32);
  free(gxi64);
  free(gyi64);
}

const char *fixture_setup(const char *name) {
  g_t0 = now_s();
  /* hermetic: no plugin path, cache or compiler from the environment */
  unsetenv("HK_CC");
  unsetenv("HK_PLUGIN_PATH");
  unsetenv("HK_CACHE_DIR");
  check_source_dir(g_src, sizeof g_src, getenv("HK_SOURCE_DIR"));
  const char *b = getenv("HK_BINARY_DIR");
  snprintf(g_hk, sizeof g_hk, "%s/hk", b && *b ? b : ".");
  snprintf(g_root, sizeof g_root, "/tmp/hk_%s_XXXXXX", name);
  if (!mkdtemp(g_root)) return "cannot create a temp folder";
  chmod(g_root, 0700);
  g_have_cc = have_program("cc");
  g_verbose = getenv("HK_TEST_VERBOSE") && *getenv("HK_TEST_VERBOSE") != '0';
  if (!g_have_cc) printf("NOTE: no system compiler 'cc' in PATH\n");
  if (fixture_data() != 0) return "out of memory";
  ssize_t sl = readlink("/proc/self/exe", g_self, sizeof g_self - 1);
  g_self[sl > 0 ? sl : 0] = '\0';
  return NULL;
}

void fixture_teardown(void) {
  for (int i = 0; i < g_ntimes; i++)
    printf("%-16s %6.2f s\n", g_times[i].name, g_times[i].t);
  printf("%-16s %6.2f s\n", "total", now_s() - g_t0);
  fixture_data_free();
  if (getenv("HK_TEST_KEEP") && *getenv("HK_TEST_KEEP") != '0')
    printf("the test's files are kept in %s\n", g_root);
  else
    check_rm_rf(g_root); /* HK_TEST_KEEP=1 keeps them */
}
