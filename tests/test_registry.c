/* test_registry.c — the registry (core/context.c, core/module.c) through the
 * public API of hk.h.
 *
 *  1. tiers: tests/plugin_fixtures/ops.json repeats stdlib ops under other
 *     names (p_add ... p_softmax: elementwise, scalar + inout, reductions
 *     with and without finalize, no in buffer, raw with len, integer types
 *     whose results wrap). Every instance runs on tier jit and tier opt at
 *     n = 0, 1, 7, 1000, 65536+3, 2^20+5 and must equal the typed stdlib
 *     function bit for bit: every tier is built with -fwrapv
 *     -ffp-contract=off -fno-math-errno, calls the same libm, and reduces in
 *     the same blocks and lanes. Info, tier, note and lens are checked.
 *  2. tier auto: jit first, opt after hk_kernel_wait_opt on the same
 *     handle; a second context takes opt from the disk cache at once; no
 *     usable cache folder; no system compiler (options.cc, HK_CC): jit
 *     stays, a note says why, and forced tier opt refuses the file.
 *  3. the disk cache: miss, hit (the entry is not rewritten), damaged
 *     entries (truncated; bytes altered in the image and in the trailer; a
 *     byte appended; a valid entry of other code) never used but rebuilt,
 *     and four processes (this program, spawned) racing on one key.
 *  4. bad plugins, each with its message: JSON syntax, schema, compile
 *     errors that point into the kernel file (jit and opt), a forbidden
 *     call, hand-made .so files (tests/plugin_fixtures/fake_plugin.c: ABI,
 *     imports, constructors, no description), unsafe permissions (each
 *     allowed with HK_ALLOW_UNSAFE_PERMISSIONS), one bad file among good
 *     ones, duplicate and stdlib names; a .so replaced by rename and in
 *     place (in a child process: it may crash).
 *  5. a prebuilt plugin (hk build of ops.json): origin so, tier so, the same
 *     bits as the stdlib.
 *  6. reload: changed body (same handle), changed signature (old handle
 *     stale, new one found), removed file, kernel dropped from a file,
 *     syntax and compile errors (the previous version stays), new file, a
 *     folder that appears later; the inotify watcher and its log.
 *  7. eight threads finding and calling kernels (and asking for notes and
 *     tier opt) while the folder is rewritten and reloaded 200 times: tier
 *     jit, then tier auto with the opt worker and the cache. Every result
 *     is checked. Meant to be clean under ThreadSanitizer too.
 *  8. hk_last_error per thread, hk_kernel_foreach, hk_load_string,
 *     HK_PLUGIN_PATH, bad arguments.
 *
 * Everything is written under a fresh mkdtemp folder (mode 0700) with its
 * own cache folders; the user's cache is never touched, and HK_CC,
 * HK_PLUGIN_PATH and HK_CACHE_DIR are ignored. Parts that need the system
 * compiler `cc` are skipped with a note when it is missing.
 *   HK_TEST_VERBOSE=1  prints the messages the checks look at;
 *   HK_TEST_KEEP=1     keeps the temp folder.
 * `test_registry --race-child DIR CACHE` and `--so-inplace-child DIR SO`
 * are the child processes of parts 3 and 4 (the test spawns itself).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cache.h"
#include "check.h"
#include "hk.h"

extern char **environ;

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const size_t sizes[] = {0, 1, 7, 1000, 65536 + 3, (1u << 20) + 5};
#define NMAX ((size_t)(1u << 20) + 5)

static char g_root[] = "/tmp/hk_registry_XXXXXX";
static char g_src[4096];  /* the source tree */
static char g_hk[4096];   /* the hk command */
static int g_have_cc;     /* the system compiler `cc` is there */
static int g_verbose;     /* HK_TEST_VERBOSE: print the messages checked */

/* Prints a message the test checks, when asked to (HK_TEST_VERBOSE=1). */
static void show(const char *what, const char *msg) {
  if (g_verbose) printf("[%s]\n%s\n", what, msg);
}

/* ---- Small helpers ------------------------------------------------------ */

/* root/rel in one of 16 rotating buffers: for immediate use as an argument
 * (main thread only); PATH() below keeps a path. */
static const char *P(const char *rel) {
  static char bufs[16][4096];
  static int next;
  char *b = bufs[next++ % 16];
  snprintf(b, sizeof bufs[0], "%s/%s", g_root, rel);
  return b;
}

/* A path under the root, in a buffer of the caller's. */
#define PATH(var, rel)   \
  char var[4200];        \
  snprintf(var, sizeof var, "%s/%s", g_root, rel)

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void sleep_ms(int ms) {
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
static void write_text(const char *path, const char *text) {
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.new", path);
  int ok = write_raw(tmp, text, strlen(text)) == 0 && rename(tmp, path) == 0;
  CHECK_MSG(ok, "cannot write %s: %s", path, strerror(errno));
}

static char *read_bytes(const char *path, size_t *n) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NULL;
  struct stat st;
  if (fstat(fd, &st) != 0) {
    close(fd);
    return NULL;
  }
  *n = (size_t)st.st_size;
  char *p = malloc(*n + 1);
  if (p && pread(fd, p, *n, 0) != (ssize_t)*n) {
    free(p);
    p = NULL;
  }
  if (p) p[*n] = '\0';
  close(fd);
  return p;
}

static void copy_fixture(const char *name, const char *to) {
  char from[4200];
  snprintf(from, sizeof from, "%s/tests/plugin_fixtures/%s", g_src, name);
  size_t n;
  char *p = read_bytes(from, &n);
  CHECK_MSG(p != NULL, "cannot read %s", from);
  if (p) write_text(to, p);
  free(p);
}

static void make_dir(const char *path) {
  int ok = mkdir(path, 0700) == 0 || errno == EEXIST;
  CHECK_MSG(ok, "mkdir %s: %s", path, strerror(errno));
}

static int rm_one(const char *path, const struct stat *st, int flag,
                  struct FTW *f) {
  (void)st;
  (void)f;
  if (flag == FTW_DP) return rmdir(path) != 0;
  return unlink(path) != 0;
}

static void rm_rf(const char *path) {
  nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
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
static pid_t spawn(char *const argv[], const char *log, int barrier_fd) {
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
static int wait_exit(pid_t pid) {
  int st;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int run_logged(char *const argv[], const char *log) {
  pid_t pid = spawn(argv, log, -1);
  return pid < 0 ? -1 : wait_exit(pid);
}

static void print_log(const char *log) {
  size_t n;
  char *p = read_bytes(log, &n);
  if (p) fprintf(stderr, "--- %s:\n%s---\n", log, p);
  free(p);
}

/* cc -shared -fPIC -nostdlib SRC -o OUT [define]; 0 on success. */
static int cc_shared(const char *src, const char *out, const char *define) {
  char *argv[] = {"cc", "-shared", "-fPIC", "-nostdlib", "-O1", "-o",
                  (char *)out, (char *)src, (char *)define, NULL};
  const char *log = P("cc.log");
  int rc = run_logged(argv, log);
  if (rc != 0) print_log(log);
  return rc;
}

/* ---- Contexts ------------------------------------------------------------ */

/* What the context's log received (from hk's threads). */
static pthread_mutex_t g_log_lock = PTHREAD_MUTEX_INITIALIZER;
static char g_log[16384];

static void log_fn(void *user, const char *message) {
  (void)user;
  pthread_mutex_lock(&g_log_lock);
  size_t l = strlen(g_log);
  snprintf(g_log + l, sizeof g_log - l, "%s\n", message);
  pthread_mutex_unlock(&g_log_lock);
}

static int log_has(const char *needle) {
  pthread_mutex_lock(&g_log_lock);
  int r = strstr(g_log, needle) != NULL;
  pthread_mutex_unlock(&g_log_lock);
  return r;
}

static void log_clear(void) {
  pthread_mutex_lock(&g_log_lock);
  g_log[0] = '\0';
  pthread_mutex_unlock(&g_log_lock);
}

/* mkctx with the log going to g_log. */
static hk_context_t *mkctx_logged(hk_tier_t tier, const char *dir,
                                  const char *cache) {
  const char *dirs[2] = {dir, NULL};
  hk_options_t o = {0};
  o.plugin_dirs = dirs;
  o.cache_dir = cache;
  o.tier = tier;
  o.log = log_fn;
  hk_context_t *ctx = NULL;
  int rc = hk_context_create(&ctx, &o);
  CHECK_MSG(rc == HK_OK && ctx != NULL, "hk_context_create: %s",
            hk_last_error());
  return rc == HK_OK ? ctx : NULL;
}

/* A context whose plugin folders are {dir} (dir NULL: none). */
static hk_context_t *mkctx(hk_tier_t tier, const char *dir, const char *cache,
                           unsigned flags, const char *cc) {
  const char *dirs[2] = {dir, NULL};
  hk_options_t o = {0};
  o.plugin_dirs = dirs;
  o.cache_dir = cache;
  o.tier = tier;
  o.flags = flags;
  o.cc = cc;
  hk_context_t *ctx = NULL;
  int rc = hk_context_create(&ctx, &o);
  CHECK_MSG(rc == HK_OK && ctx != NULL, "hk_context_create: %s",
            hk_last_error());
  return rc == HK_OK ? ctx : NULL;
}

static hk_kernel_t *find(hk_context_t *ctx, const char *name) {
  hk_kernel_t *k = NULL;
  int rc = hk_kernel_find(ctx, name, &k);
  CHECK_MSG(rc == HK_OK && k != NULL, "hk_kernel_find(%s): %s", name,
            hk_last_error());
  return rc == HK_OK ? k : NULL;
}

static int found(hk_context_t *ctx, const char *name) {
  hk_kernel_t *k = NULL;
  return hk_kernel_find(ctx, name, &k) == HK_OK && k != NULL;
}

static const char *note_of(const hk_kernel_t *k) {
  static char buf[4096];
  return hk_kernel_note(k, buf, sizeof buf);
}

/* ---- Inputs and the ops ----------------------------------------------------- */

static float *gx32, *gy32;
static double *gx64, *gy64;
static int32_t *gxi32, *gyi32;
static int64_t *gxi64, *gyi64;
static float *gpos32; /* in [0.5, 4): never 0 */

static uint64_t rnd(uint64_t *s) {
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

enum {
  OP_ADD, OP_MUL, OP_EXP, OP_TANH, OP_RELU, OP_AXPY, OP_SCALE, OP_SUM,
  OP_MAX, OP_DOT, OP_MEAN, OP_FILL, OP_ARANGE, OP_SOFTMAX
};

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

typedef union {
  float f32;
  double f64;
  int32_t i32;
  int64_t i64;
} scalar_t;

/* The scalars the ops take, per type. */
static scalar_t s_alpha(hk_dtype_t t) {
  scalar_t s = {0};
  if (t == HK_F32) s.f32 = 0.3f;
  if (t == HK_F64) s.f64 = 0.3;
  return s;
}
static scalar_t s_value(hk_dtype_t t) {
  scalar_t s = {0};
  if (t == HK_F32) s.f32 = 0.1f;
  if (t == HK_F64) s.f64 = -2.5e-3;
  if (t == HK_I32) s.i32 = -7;
  if (t == HK_I64) s.i64 = (int64_t)1 << 40;
  return s;
}
static scalar_t s_start(hk_dtype_t t) { /* integer ranges wrap */
  scalar_t s = {0};
  if (t == HK_F32) s.f32 = 0.5f;
  if (t == HK_F64) s.f64 = -3.0;
  if (t == HK_I32) s.i32 = INT32_MAX - 5;
  if (t == HK_I64) s.i64 = INT64_MAX - 5;
  return s;
}
static scalar_t s_step(hk_dtype_t t) {
  scalar_t s = {0};
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
  scalar_t a;
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
      scalar_t b = s_step(t);
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
      if (t == HK_F32) hk_softmax_f32(x, out, rows, cols, n);
      else if (t == HK_F64) hk_softmax_f64(x, out, rows, cols, n);
      else return -100;
      return HK_OK;
    }
  }
  return -100;
}

static void *g_ref, *g_got; /* NMAX elements of 8 bytes each */

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
static int check_op(const char *what, const hk_kernel_t *k, int op,
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

/* The ops of ops.json: instance NAME_TYPE computes op on TYPE, with
 * parameters "name:role ..." (types T, but softmax's rows and cols). */
static const struct {
  const char *name;
  int op;
  hk_kind_t kind;
  const char *sig;
  hk_dtype_t types[5];
} ops[] = {
    {"p_add", OP_ADD, HK_KIND_ELEMENTWISE, "x:in y:in out:out",
     {HK_F32, HK_F64, HK_I32, HK_I64}},
    {"p_mul", OP_MUL, HK_KIND_ELEMENTWISE, "x:in y:in out:out",
     {HK_F32, HK_I32, HK_I64}},
    {"p_exp", OP_EXP, HK_KIND_ELEMENTWISE, "x:in out:out", {HK_F32, HK_F64}},
    {"p_tanh", OP_TANH, HK_KIND_ELEMENTWISE, "x:in out:out", {HK_F32, HK_F64}},
    {"p_relu", OP_RELU, HK_KIND_ELEMENTWISE, "x:in out:out", {HK_F32, HK_F64}},
    {"p_axpy", OP_AXPY, HK_KIND_ELEMENTWISE, "alpha:scalar x:in y:inout",
     {HK_F32, HK_F64}},
    {"p_scale", OP_SCALE, HK_KIND_ELEMENTWISE, "x:in alpha:scalar out:out",
     {HK_F32, HK_F64}},
    {"p_sum", OP_SUM, HK_KIND_REDUCTION, "x:in out:out", {HK_F32, HK_F64}},
    {"p_max", OP_MAX, HK_KIND_REDUCTION, "x:in out:out", {HK_F32, HK_F64}},
    {"p_dot", OP_DOT, HK_KIND_REDUCTION, "x:in y:in out:out", {HK_F32, HK_F64}},
    {"p_mean", OP_MEAN, HK_KIND_REDUCTION, "x:in out:out", {HK_F32, HK_F64}},
    {"p_fill", OP_FILL, HK_KIND_ELEMENTWISE, "value:scalar out:out",
     {HK_F32, HK_F64, HK_I32, HK_I64}},
    {"p_arange", OP_ARANGE, HK_KIND_ELEMENTWISE,
     "start:scalar step:scalar out:out", {HK_F32, HK_F64, HK_I32, HK_I64}},
    {"p_softmax", OP_SOFTMAX, HK_KIND_RAW,
     "x:in y:out rows:scalar cols:scalar", {HK_F32, HK_F64}},
};

/* Checks k's description against ops[o] on type t. */
static void check_info(const hk_kernel_t *k, size_t o, hk_dtype_t t,
                       const char *origin, const char *source) {
  const hk_kernel_info_t *in = hk_kernel_info(k);
  char name[128];
  snprintf(name, sizeof name, "%s_%s", ops[o].name, hk_dtype_name(t));
  CHECK_STR_EQ(in->name, name);
  CHECK_STR_EQ(in->origin, origin);
  CHECK_STR_EQ(in->source, source);
  CHECK_MSG(in->kind == ops[o].kind, "%s: kind %s", name,
            hk_kind_name(in->kind));
  CHECK_MSG(in->targets & HK_TARGET_CPU, "%s: no cpu target", name);
  char sig[256] = "";
  for (int i = 0; i < in->nparams; i++) {
    const hk_param_info_t *p = &in->params[i];
    size_t l = strlen(sig);
    snprintf(sig + l, sizeof sig - l, "%s%s:%s", i ? " " : "", p->name,
             hk_role_name(p->role));
    int fixed = ops[o].op == OP_SOFTMAX && p->role == HK_ROLE_SCALAR;
    CHECK_MSG(p->dtype == (fixed ? HK_I64 : t), "%s: %s has type %s", name,
              p->name, hk_dtype_name(p->dtype));
    if (ops[o].op == OP_SOFTMAX && p->role != HK_ROLE_SCALAR)
      CHECK_MSG(p->len && !strcmp(p->len, "rows * cols"), "%s: len %s", name,
                p->len ? p->len : "(null)");
    else
      CHECK_MSG(p->len == NULL, "%s: %s has len %s", name, p->name, p->len);
  }
  CHECK_MSG(!strcmp(sig, ops[o].sig), "%s: params \"%s\", expected \"%s\"",
            name, sig, ops[o].sig);
}

/* hk_kernel_lens at n = 1000 (softmax 10 x 100). */
static void check_lens(const hk_kernel_t *k, size_t o, hk_dtype_t t) {
  const hk_kernel_info_t *in = hk_kernel_info(k);
  int64_t lens[8];
  void *args[8] = {0};
  scalar_t s[8];
  int64_t rows = 10, cols = 100;
  memset(s, 0, sizeof s);
  for (int i = 0; i < in->nparams && i < 8; i++)
    if (in->params[i].role == HK_ROLE_SCALAR) args[i] = &s[i];
  if (ops[o].op == OP_SOFTMAX) {
    args[2] = &rows;
    args[3] = &cols;
  }
  int rc = hk_kernel_lens(k, 1000, args, lens);
  CHECK_MSG(rc == HK_OK, "lens %s: %s", in->name, hk_last_error());
  for (int i = 0; rc == HK_OK && i < in->nparams; i++) {
    const hk_param_info_t *p = &in->params[i];
    int64_t want = p->role == HK_ROLE_SCALAR ? -1
                   : (ops[o].kind == HK_KIND_REDUCTION && p->role == HK_ROLE_OUT)
                       ? 1
                       : 1000;
    CHECK_MSG(lens[i] == want, "lens %s.%s = %lld, expected %lld", in->name,
              p->name, (long long)lens[i], (long long)want);
  }
  if (ops[o].op == OP_SOFTMAX) { /* a negative length is refused */
    rows = -1;
    CHECK_INT_EQ(hk_kernel_lens(k, 1000, args, lens), HK_EINVAL);
    CHECK_CONTAINS(hk_last_error(), "negative");
  }
  (void)t;
}

/* ---- 1. Every kind and type through both tiers -------------------------------- */

static void test_tiers(void) {
  make_dir(P("ops"));
  copy_fixture("ops.json", P("ops/ops.json"));
  const char *src = P("ops/ops.json");
  char source[4200];
  snprintf(source, sizeof source, "%s", src);
  make_dir(P("cache_ops"));
  hk_context_t *cj = mkctx(HK_TIER_JIT, P("ops"), P("cache_ops"), 0, NULL);
  hk_context_t *co = NULL;
  if (!cj) return;
  CHECK_STR_EQ(hk_context_problems(cj), "");
  if (g_have_cc) {
    double t0 = now_s();
    co = mkctx(HK_TIER_OPT, P("ops"), P("cache_ops"), 0, NULL);
    printf("tier opt: ops.json compiled in %.2f s\n", now_s() - t0);
    if (co) CHECK_STR_EQ(hk_context_problems(co), "");
  } else {
    printf("NOTE: no system compiler 'cc': tier opt not tested\n");
  }
  int instances = 0;
  for (size_t o = 0; o < COUNT(ops); o++)
    for (int ti = 0; ops[o].types[ti]; ti++) {
      hk_dtype_t t = ops[o].types[ti];
      char name[128], what[160];
      snprintf(name, sizeof name, "%s_%s", ops[o].name, hk_dtype_name(t));
      instances++;
      hk_kernel_t *kj = find(cj, name);
      if (kj) {
        CHECK_MSG(hk_kernel_tier(kj) == HK_TIER_JIT, "%s: tier %s", name,
                  hk_tier_name(hk_kernel_tier(kj)));
        CHECK_CONTAINS(note_of(kj), "tier jit");
        CHECK_INT_EQ(hk_kernel_wait_opt(kj), HK_EUNSUPPORTED);
        check_info(kj, o, t, "json", source);
        check_lens(kj, o, t);
        snprintf(what, sizeof what, "%s (jit)", name);
        check_op(what, kj, ops[o].op, t, sizes, COUNT(sizes));
      }
      if (!co) continue;
      hk_kernel_t *ko = find(co, name);
      if (ko) {
        CHECK_MSG(hk_kernel_tier(ko) == HK_TIER_OPT, "%s: tier %s", name,
                  hk_tier_name(hk_kernel_tier(ko)));
        CHECK_STR_EQ(note_of(ko), "");
        CHECK_INT_EQ(hk_kernel_wait_opt(ko), HK_OK);
        check_info(ko, o, t, "json", source);
        check_lens(ko, o, t);
        snprintf(what, sizeof what, "%s (opt)", name);
        check_op(what, ko, ops[o].op, t, sizes, COUNT(sizes));
      }
    }
  CHECK_INT_EQ(instances, 35);
  /* the stdlib itself, through the registry: tier inline, origin stdlib */
  hk_kernel_t *ks = find(cj, "add_f32");
  if (ks) {
    CHECK_INT_EQ(hk_kernel_tier(ks), HK_TIER_INLINE);
    CHECK_STR_EQ(hk_kernel_info(ks)->origin, "stdlib");
    CHECK_INT_EQ(hk_kernel_wait_opt(ks), HK_OK);
    check_op("add_f32 (registry)", ks, OP_ADD, HK_F32, sizes, COUNT(sizes));
  }
  hk_context_destroy(co);
  hk_context_destroy(cj);
}

/* ---- 2. Tier auto, and no system compiler --------------------------------------- */

static int cache_entries(const char *dir, char *path, size_t n);

static const char auto_json[] =
    "{\"schema_version\": 1, \"kernels\": [\n"
    " {\"name\": \"a_scale\", \"kind\": \"elementwise\",\n"
    "  \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},\n"
    "             {\"name\": \"alpha\", \"type\": \"f32\", \"role\": \"scalar\"},\n"
    "             {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\"}],\n"
    "  \"body\": \"out = x * alpha;\"},\n"
    " {\"name\": \"a_mean\", \"kind\": \"reduction\",\n"
    "  \"params\": [{\"name\": \"x\", \"type\": \"f64\", \"role\": \"in\"},\n"
    "             {\"name\": \"out\", \"type\": \"f64\", \"role\": \"out\"}],\n"
    "  \"map\": \"x\", \"combine\": \"a + b\", \"identity\": \"0\",\n"
    "  \"finalize\": \"acc / (double)n\"}]}\n";

static void test_auto(void) {
  make_dir(P("auto"));
  write_text(P("auto/auto.json"), auto_json);
  make_dir(P("cache_auto"));
  if (g_have_cc) {
    hk_context_t *c1 = mkctx(HK_TIER_AUTO, P("auto"), P("cache_auto"), 0, NULL);
    hk_kernel_t *k = c1 ? find(c1, "a_scale") : NULL;
    hk_kernel_t *m = c1 ? find(c1, "a_mean") : NULL;
    if (k && m) {
      /* a fresh cache: jit at once, opt compiling (unless it already
       * ended: then the tier is opt) */
      char note[512];
      hk_kernel_note(k, note, sizeof note);
      hk_tier_t t0 = hk_kernel_tier(k);
      CHECK_MSG((t0 == HK_TIER_JIT && strstr(note, "compiling")) ||
                    t0 == HK_TIER_OPT,
                "tier %s, note \"%s\"", hk_tier_name(t0), note);
      check_op("a_scale (auto, before opt)", k, OP_SCALE, HK_F32, sizes, 4);
      CHECK_INT_EQ(hk_kernel_wait_opt(k), HK_OK);
      CHECK_INT_EQ(hk_kernel_wait_opt(m), HK_OK);
      CHECK_INT_EQ(hk_kernel_tier(k), HK_TIER_OPT);
      CHECK_INT_EQ(hk_kernel_tier(m), HK_TIER_OPT);
      CHECK_STR_EQ(note_of(k), "");
      hk_kernel_t *again = find(c1, "a_scale");
      CHECK(again == k); /* the same handle, now on tier opt */
      check_op("a_scale (auto, opt)", k, OP_SCALE, HK_F32, sizes,
               COUNT(sizes));
      check_op("a_mean (auto, opt)", m, OP_MEAN, HK_F64, sizes, COUNT(sizes));
      CHECK_INT_EQ(hk_context_wait(c1), HK_OK);
      /* a second context on the same cache: opt at once */
      hk_context_t *c2 =
          mkctx(HK_TIER_AUTO, P("auto"), P("cache_auto"), 0, NULL);
      hk_kernel_t *k2 = c2 ? find(c2, "a_scale") : NULL;
      if (k2) {
        CHECK_MSG(hk_kernel_tier(k2) == HK_TIER_OPT, "second context: tier %s",
                  hk_tier_name(hk_kernel_tier(k2)));
        CHECK_STR_EQ(note_of(k2), "");
        check_op("a_scale (cached)", k2, OP_SCALE, HK_F32, sizes,
                 COUNT(sizes));
      }
      hk_context_destroy(c2);
    }
    hk_context_destroy(c1);
  } else {
    printf("NOTE: no system compiler 'cc': tier auto's opt step not tested\n");
  }

  /* No usable disk cache (a folder others can write to, or HK_NO_CACHE):
   * tier opt still comes, and nothing is written there. */
  if (g_have_cc) {
    make_dir(P("cache_open"));
    CHECK(chmod(P("cache_open"), 0777) == 0);
    make_dir(P("cache_unused"));
    static const struct {
      const char *cache;
      unsigned flags;
    } nc[] = {{"cache_open", 0}, {"cache_unused", HK_NO_CACHE}};
    for (size_t i = 0; i < COUNT(nc); i++) {
      hk_context_t *c = mkctx(HK_TIER_AUTO, P("auto"), P(nc[i].cache),
                              nc[i].flags, NULL);
      hk_kernel_t *k = c ? find(c, "a_scale") : NULL;
      if (k) {
        CHECK_INT_EQ(hk_kernel_wait_opt(k), HK_OK);
        CHECK_INT_EQ(hk_kernel_tier(k), HK_TIER_OPT);
        check_op("a_scale (no cache)", k, OP_SCALE, HK_F32, sizes, 4);
      }
      hk_context_destroy(c);
      CHECK_INT_EQ(cache_entries(P(nc[i].cache), NULL, 0), 0);
    }
    CHECK(chmod(P("cache_open"), 0700) == 0);
  }

  /* No system compiler (options.cc): jit, and a note saying why. */
  make_dir(P("cache_nocc"));
  hk_context_t *c3 = mkctx(HK_TIER_AUTO, P("auto"), P("cache_nocc"), 0,
                           "/nonexistent/cc");
  hk_kernel_t *k3 = c3 ? find(c3, "a_scale") : NULL;
  if (k3) {
    CHECK_INT_EQ(hk_kernel_tier(k3), HK_TIER_JIT);
    CHECK_CONTAINS(note_of(k3), "no system compiler");
    CHECK_CONTAINS(note_of(k3), "/nonexistent/cc");
    CHECK_INT_EQ(hk_kernel_wait_opt(k3), HK_EUNSUPPORTED);
    CHECK_CONTAINS(hk_last_error(), "no system compiler");
    CHECK_INT_EQ(hk_kernel_tier(k3), HK_TIER_JIT);
    check_op("a_scale (no cc)", k3, OP_SCALE, HK_F32, sizes, COUNT(sizes));
  }
  hk_context_destroy(c3);

  /* The same through HK_CC. */
  setenv("HK_CC", "/nonexistent/hk-cc", 1);
  hk_context_t *c4 = mkctx(HK_TIER_AUTO, P("auto"), P("cache_nocc"), 0, NULL);
  unsetenv("HK_CC");
  hk_kernel_t *k4 = c4 ? find(c4, "a_scale") : NULL;
  if (k4) {
    CHECK_INT_EQ(hk_kernel_tier(k4), HK_TIER_JIT);
    CHECK_CONTAINS(note_of(k4), "no system compiler");
    CHECK_CONTAINS(note_of(k4), "HK_CC");
    CHECK_INT_EQ(hk_kernel_wait_opt(k4), HK_EUNSUPPORTED);
  }
  hk_context_destroy(c4);

  /* Tier opt forced without a compiler: the file does not load, and says
   * why. */
  hk_context_t *c5 = mkctx(HK_TIER_OPT, P("auto"), P("cache_nocc"), 0,
                           "/nonexistent/cc");
  if (c5) {
    CHECK(!found(c5, "a_scale"));
    CHECK_CONTAINS(hk_context_problems(c5), P("auto/auto.json"));
    CHECK_CONTAINS(hk_context_problems(c5), "no system compiler");
  }
  hk_context_destroy(c5);
  hk_context_t *c6 =
      mkctx(HK_TIER_OPT, NULL, P("cache_nocc"), 0, "/nonexistent/cc");
  if (c6) {
    CHECK_INT_EQ(hk_load_file(c6, P("auto/auto.json")), HK_EUNSUPPORTED);
    CHECK_CONTAINS(hk_last_error(), P("auto/auto.json"));
    CHECK_CONTAINS(hk_last_error(), "tier opt failed: no system compiler");
    CHECK(!found(c6, "a_scale"));
  }
  hk_context_destroy(c6);
}

/* ---- 3. The disk cache ----------------------------------------------------------- */

/* The entry files (<64 hex>.so) of a cache folder; the path of the last in
 * path. */
static int cache_entries(const char *dir, char *path, size_t n) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  int count = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t l = strlen(e->d_name);
    if (l != 67 || strcmp(e->d_name + 64, ".so")) continue;
    if (strspn(e->d_name, "0123456789abcdef") != 64) continue;
    count++;
    if (path) snprintf(path, n, "%s/%s", dir, e->d_name);
  }
  closedir(d);
  return count;
}

/* Files of unfinished writes or builds left in a cache folder. */
static int cache_leftovers(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  int count = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t l = strlen(e->d_name);
    if ((l > 4 && !strcmp(e->d_name + l - 4, ".tmp")) ||
        !strncmp(e->d_name, ".hk-build-", 10)) {
      fprintf(stderr, "  left over in the cache: %s\n", e->d_name);
      count++;
    }
  }
  closedir(d);
  return count;
}

static void count_valid(void *c, const char *path, size_t size, time_t mtime,
                        const char *meta, int valid) {
  (void)path;
  (void)size;
  (void)mtime;
  (void)meta;
  int *v = c;
  v[0]++;
  v[1] += valid != 0;
}

/* How many entries the cache folder holds, and how many verify. */
static void cache_validity(const char *dir, int *entries, int *valid) {
  hk_cache_t *c = NULL;
  hku_diags d = HKU_DIAGS_INIT;
  int v[2] = {0, 0};
  *entries = *valid = -1;
  if (hk__cache_open(dir, 0, &c, &d)) {
    CHECK_MSG(0, "cannot open the cache %s: %s", dir, d.n ? d.v[0].msg : "");
    hku_diags_free(&d);
    return;
  }
  hk__cache_list(c, count_valid, v);
  hk__cache_close(c);
  *entries = v[0];
  *valid = v[1];
}

/* Two processes racing: four copies of this program load the same file
 * with tier opt on one empty cache, started together. */
static const char race_json[] =
    "{\"schema_version\": 1, \"name\": \"race_scale\", \"kind\": "
    "\"elementwise\",\n"
    " \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},\n"
    "            {\"name\": \"alpha\", \"type\": \"f32\", \"role\": \"scalar\"},\n"
    "            {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\"}],\n"
    " \"body\": \"out = x * alpha;\"}\n";

static const char cache_json[] =
    "{\"schema_version\": 1, \"kernels\": [\n"
    " {\"name\": \"c_scale\", \"kind\": \"elementwise\",\n"
    "  \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},\n"
    "             {\"name\": \"alpha\", \"type\": \"f32\", \"role\": \"scalar\"},\n"
    "             {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\"}],\n"
    "  \"body\": \"out = x * alpha;\"},\n"
    " {\"name\": \"c_dot\", \"kind\": \"reduction\",\n"
    "  \"params\": [{\"name\": \"x\", \"type\": \"f64\", \"role\": \"in\"},\n"
    "             {\"name\": \"y\", \"type\": \"f64\", \"role\": \"in\"},\n"
    "             {\"name\": \"out\", \"type\": \"f64\", \"role\": \"out\"}],\n"
    "  \"map\": \"x * y\", \"combine\": \"a + b\", \"identity\": \"0\"}]}\n";

static const size_t few_sizes[] = {0, 7, 1000, 65536 + 3};

static void check_cache_kernels(hk_context_t *ctx, const char *what) {
  hk_kernel_t *k = find(ctx, "c_scale"), *d = find(ctx, "c_dot");
  char w[256];
  snprintf(w, sizeof w, "c_scale (%s)", what);
  if (k) check_op(w, k, OP_SCALE, HK_F32, few_sizes, COUNT(few_sizes));
  snprintf(w, sizeof w, "c_dot (%s)", what);
  if (d) check_op(w, d, OP_DOT, HK_F64, few_sizes, COUNT(few_sizes));
}

static void test_cache(void) {
  if (!g_have_cc) {
    printf("NOTE: no system compiler 'cc': disk cache tests skipped\n");
    return;
  }
  make_dir(P("cplug"));
  write_text(P("cplug/c.json"), cache_json);
  PATH(cache, "cache_c");
  make_dir(cache);
  char entry[4200] = "";

  /* a miss: compiled and stored */
  CHECK_INT_EQ(cache_entries(cache, NULL, 0), 0);
  hk_context_t *c = mkctx(HK_TIER_OPT, P("cplug"), cache, 0, NULL);
  if (!c) return;
  CHECK_STR_EQ(hk_context_problems(c), "");
  check_cache_kernels(c, "opt, miss");
  hk_context_destroy(c);
  CHECK_INT_EQ(cache_entries(cache, entry, sizeof entry), 1);
  int entries, valid;
  cache_validity(cache, &entries, &valid);
  CHECK_INT_EQ(entries, 1);
  CHECK_INT_EQ(valid, 1);

  /* a hit: tier opt at once, and the entry is not written again */
  struct stat before, after;
  CHECK(stat(entry, &before) == 0);
  c = mkctx(HK_TIER_AUTO, P("cplug"), cache, 0, NULL);
  hk_kernel_t *k = c ? find(c, "c_scale") : NULL;
  if (k) CHECK_INT_EQ(hk_kernel_tier(k), HK_TIER_OPT);
  if (c) check_cache_kernels(c, "auto, hit");
  hk_context_destroy(c);
  CHECK(stat(entry, &after) == 0);
  CHECK(before.st_ino == after.st_ino &&
        before.st_mtim.tv_sec == after.st_mtim.tv_sec &&
        before.st_mtim.tv_nsec == after.st_mtim.tv_nsec);

  /* damaged entries: each is noticed (never loaded), removed and rebuilt */
  static const struct {
    const char *what;
    int truncate; /* else flip */
    long at;      /* >= 0 from the start, < 0 from the end; size/2: 1<<30 */
  } damage[] = {
      {"truncated to 0 bytes", 1, 0},
      {"truncated to 100 bytes", 1, 100},
      {"truncated to half", 1, 1L << 30},
      {"trailer cut off", 1, -HK_CACHE_TRAILER},
      {"last byte cut off", 1, -1},
      {"a byte flipped in the middle", 0, 1L << 30},
      {"a byte flipped in the ELF header", 0, 4},
      {"a byte flipped in the trailer's magic", 0, -HK_CACHE_TRAILER},
      {"a byte flipped in the trailer's elf size", 0, -HK_CACHE_TRAILER + 8},
      {"a byte flipped in the digest", 0, -1},
      {"one byte appended", 2, 0},
  };
  for (size_t i = 0; i < COUNT(damage); i++) {
    if (cache_entries(cache, entry, sizeof entry) != 1) {
      CHECK_MSG(0, "before '%s': not one cache entry", damage[i].what);
      break;
    }
    size_t size;
    char *bytes = read_bytes(entry, &size);
    if (!bytes) {
      CHECK_MSG(0, "cannot read %s", entry);
      break;
    }
    long at = damage[i].at == (1L << 30) ? (long)size / 2
              : damage[i].at < 0         ? (long)size + damage[i].at
                                         : damage[i].at;
    int fd = open(entry, O_WRONLY | O_CLOEXEC);
    CHECK(fd >= 0);
    if (damage[i].truncate == 1) {
      CHECK(ftruncate(fd, at) == 0);
    } else if (damage[i].truncate == 2) {
      CHECK(pwrite(fd, "x", 1, (off_t)size) == 1);
    } else {
      char b = (char)(bytes[at] ^ 0x40);
      CHECK(pwrite(fd, &b, 1, at) == 1);
    }
    if (fd >= 0) close(fd);
    free(bytes);
    /* alternately tier auto (jit, then opt in the background) and opt */
    hk_tier_t tier = i % 2 ? HK_TIER_OPT : HK_TIER_AUTO;
    log_clear();
    c = mkctx_logged(tier, P("cplug"), cache);
    k = c ? find(c, "c_scale") : NULL;
    if (k) {
      CHECK_STR_EQ(hk_context_problems(c), "");
      if (tier == HK_TIER_AUTO)
        CHECK_MSG(hk_kernel_tier(k) == HK_TIER_JIT,
                  "%s: tier %s at once (the damaged entry was used?)",
                  damage[i].what, hk_tier_name(hk_kernel_tier(k)));
      CHECK_INT_EQ(hk_kernel_wait_opt(k), HK_OK);
      CHECK_MSG(hk_kernel_tier(k) == HK_TIER_OPT, "%s: tier %s",
                damage[i].what, hk_tier_name(hk_kernel_tier(k)));
      check_cache_kernels(c, damage[i].what);
      CHECK_MSG(log_has("damaged disk cache entry was removed") &&
                    log_has(P("cplug/c.json")),
                "%s: the log says \"%s\"", damage[i].what, g_log);
    }
    hk_context_destroy(c);
    cache_validity(cache, &entries, &valid);
    CHECK_MSG(entries == 1 && valid == 1,
              "after '%s': %d entries, %d valid", damage[i].what, entries,
              valid);
  }
  /* an entry that verifies but holds other code (another kernel file's
   * object): not used, rebuilt */
  PATH(foreign, "cache_c_foreign");
  make_dir(foreign);
  PATH(other_json, "cplug_other/o.json");
  make_dir(P("cplug_other"));
  write_text(other_json, race_json);
  c = mkctx(HK_TIER_OPT, P("cplug_other"), foreign, 0, NULL);
  hk_context_destroy(c);
  char other_entry[4200];
  if (cache_entries(foreign, other_entry, sizeof other_entry) == 1 &&
      cache_entries(cache, entry, sizeof entry) == 1) {
    CHECK(rename(other_entry, entry) == 0);
    c = mkctx(HK_TIER_AUTO, P("cplug"), cache, 0, NULL);
    k = c ? find(c, "c_scale") : NULL;
    if (k) {
      CHECK_INT_EQ(hk_kernel_tier(k), HK_TIER_JIT);
      CHECK_INT_EQ(hk_kernel_wait_opt(k), HK_OK);
      CHECK_INT_EQ(hk_kernel_tier(k), HK_TIER_OPT);
      check_cache_kernels(c, "foreign entry");
    }
    hk_context_destroy(c);
  } else {
    CHECK_MSG(0, "no entry for the foreign-entry case");
  }

  /* and the rebuilt entry is a hit again */
  c = mkctx(HK_TIER_AUTO, P("cplug"), cache, 0, NULL);
  k = c ? find(c, "c_scale") : NULL;
  if (k) CHECK_INT_EQ(hk_kernel_tier(k), HK_TIER_OPT);
  hk_context_destroy(c);
  CHECK_INT_EQ(cache_leftovers(cache), 0);
}

static int race_child(const char *dir, const char *cache) {
  char c;
  while (read(3, &c, 1) < 0 && errno == EINTR) {
  } /* the start: EOF when the parent closes its end */
  init_data();
  g_ref = malloc(NMAX * 8);
  g_got = malloc(NMAX * 8);
  hk_context_t *ctx = mkctx(HK_TIER_OPT, dir, cache, 0, NULL);
  if (!ctx) return 1;
  CHECK_STR_EQ(hk_context_problems(ctx), "");
  hk_kernel_t *k = find(ctx, "race_scale");
  if (k) {
    CHECK_INT_EQ(hk_kernel_tier(k), HK_TIER_OPT);
    check_op("race_scale", k, OP_SCALE, HK_F32, few_sizes, COUNT(few_sizes));
  }
  hk_context_destroy(ctx);
  free(g_ref);
  free(g_got);
  return check_failures ? 1 : 0;
}

static void test_cache_race(const char *self) {
  if (!g_have_cc) return;
  make_dir(P("race"));
  write_text(P("race/race.json"), race_json);
  PATH(cache, "cache_race");
  make_dir(cache);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    CHECK_MSG(0, "pipe: %s", strerror(errno));
    return;
  }
  enum { NCHILD = 4 };
  pid_t pids[NCHILD];
  char logs[NCHILD][4200];
  char dir[4200], cdir[4200];
  snprintf(dir, sizeof dir, "%s", P("race"));
  snprintf(cdir, sizeof cdir, "%s", cache);
  for (int i = 0; i < NCHILD; i++) {
    char name[64];
    snprintf(name, sizeof name, "race%d.log", i);
    snprintf(logs[i], sizeof logs[i], "%s", P(name));
    char *argv[] = {(char *)self, "--race-child", dir, cdir, NULL};
    pids[i] = spawn(argv, logs[i], fds[0]);
    CHECK_MSG(pids[i] > 0, "cannot start %s", self);
  }
  close(fds[0]);
  close(fds[1]); /* go */
  for (int i = 0; i < NCHILD; i++) {
    if (pids[i] <= 0) continue;
    int rc = wait_exit(pids[i]);
    CHECK_MSG(rc == 0, "racing process %d exited with %d", i, rc);
    if (rc != 0) print_log(logs[i]);
  }
  int entries, valid;
  cache_validity(cache, &entries, &valid);
  CHECK_INT_EQ(entries, 1);
  CHECK_INT_EQ(valid, 1);
  CHECK_INT_EQ(cache_leftovers(cache), 0);
  /* the entry they left is a hit */
  hk_context_t *c = mkctx(HK_TIER_AUTO, dir, cache, 0, NULL);
  hk_kernel_t *k = c ? find(c, "race_scale") : NULL;
  if (k) {
    CHECK_INT_EQ(hk_kernel_tier(k), HK_TIER_OPT);
    check_op("race_scale (after the race)", k, OP_SCALE, HK_F32, few_sizes,
             COUNT(few_sizes));
  }
  hk_context_destroy(c);
}

/* ---- 4. Bad plugins -------------------------------------------------------------- */

/* The 1-based line and column (in characters; ASCII here) of the n-th
 * occurrence of needle in text. */
static void pos_of(const char *text, const char *needle, int *line,
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
static void check_at(const char *msg, const char *path, int line, int col,
                     const char *what) {
  char want[4400];
  snprintf(want, sizeof want, "%s:%d:%d: error: %s", path, line, col, what);
  show(what, msg);
  CHECK_CONTAINS(msg, want);
}

static const char good_json_fmt[] =
    "{\"schema_version\": 1, \"name\": \"%s\", \"kind\": \"elementwise\",\n"
    " \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},\n"
    "            {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\"}],\n"
    " \"body\": \"%s\"}\n";

static void write_kernel(const char *path, const char *name,
                         const char *body) {
  char text[2048];
  snprintf(text, sizeof text, good_json_fmt, name, body);
  write_text(path, text);
}

/* Calls name (an f32 x -> out kernel) at n = 1000 and checks out = f * x. */
static int runs_times(hk_context_t *ctx, const char *name, float f) {
  hk_kernel_t *k = NULL;
  if (hk_kernel_find(ctx, name, &k) != HK_OK) return 0;
  float *out = g_got;
  void *args[] = {gx32, out};
  if (hk_call(k, 1000, args) != HK_OK) return 0;
  for (size_t i = 0; i < 1000; i++)
    if (out[i] != gx32[i] * f) return 0;
  return 1;
}

/* A compile error in a body that passes the lexical checks: the message
 * points into the kernel file, at the body, not at generated code. */
static void check_compile_error(hk_context_t *ctx, const char *path,
                                const char *text, const char *body_start,
                                const char *body_end, const char *compiler) {
  write_text(path, text);
  int rc = hk_load_file(ctx, path);
  const char *msg = hk_last_error();
  show(compiler, msg);
  CHECK_MSG(rc == HK_ECOMPILE, "%s: %d (%s)", path, rc, msg);
  int bl, bc, el, ec;
  pos_of(text, body_start, &bl, &bc);
  pos_of(text, body_end, &el, &ec);
  char prefix[4200];
  snprintf(prefix, sizeof prefix, "%s:%d:", path, bl);
  const char *at = strstr(msg, prefix);
  CHECK_MSG(at != NULL, "%s: no '%s' in \"%s\"", compiler, prefix, msg);
  if (at) {
    int col = atoi(at + strlen(prefix));
    CHECK_MSG(col >= bc && col < ec,
              "%s: column %d is not inside the body (columns %d..%d): %s",
              compiler, col, bc, ec - 1, msg);
    const char *rest = strchr(at + strlen(prefix), ':');
    CHECK_MSG(rest && !strncmp(rest, ": error: body: ", 15),
              "%s: not 'error: body:' in %s", compiler, msg);
  }
  char tag[32];
  snprintf(tag, sizeof tag, "(%s", compiler);
  CHECK_CONTAINS(msg, tag);
  CHECK_MSG(!strstr(msg, "generated") && !strstr(msg, "kernel.c") &&
                !strstr(msg, "bug in hk"),
            "the message points at generated code: %s", msg);
}

static void test_bad_files(void) {
  make_dir(P("bad"));
  hk_context_t *cj = mkctx(HK_TIER_JIT, NULL, P("cache_bad"), 0, NULL);
  if (!cj) return;
  int line, col;

  /* invalid JSON */
  static const char bad_json[] =
      "{\"schema_version\": 1, \"name\": \"b_json\", \"kind\": \"elementwise\",\n"
      " \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},\n"
      "            {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\"},],\n"
      " \"body\": \"out = x;\"}\n";
  PATH(path, "bad/b_json.json");
  write_text(path, bad_json);
  CHECK_INT_EQ(hk_load_file(cj, path), HK_ESCHEMA);
  pos_of(bad_json, "],\n \"body", &line, &col);
  check_at(hk_last_error(), path, line, col,
           "invalid JSON: trailing comma before ']'");
  CHECK(!found(cj, "b_json"));

  /* a schema error: an unknown type */
  static const char bad_type[] =
      "{\"schema_version\": 1, \"name\": \"b_type\", \"kind\": \"elementwise\",\n"
      " \"params\": [{\"name\": \"x\", \"type\": \"float32\", \"role\": \"in\"},\n"
      "            {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\"}],\n"
      " \"body\": \"out = x;\"}\n";
  snprintf(path, sizeof path, "%s", P("bad/b_type.json"));
  write_text(path, bad_type);
  CHECK_INT_EQ(hk_load_file(cj, path), HK_ESCHEMA);
  pos_of(bad_type, "\"float32\"", &line, &col);
  check_at(hk_last_error(), path, line, col,
           "params[0].type: unknown type \"float32\"");
  CHECK(!found(cj, "b_type"));

  /* a forbidden call: refused by the checks, before any compiler runs */
  static const char bad_call[] =
      "{\"schema_version\": 1, \"name\": \"b_call\", \"kind\": \"elementwise\",\n"
      " \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},\n"
      "            {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\"}],\n"
      " \"body\": \"out = x; system(\\\"rm -rf /\\\");\"}\n";
  snprintf(path, sizeof path, "%s", P("bad/b_call.json"));
  write_text(path, bad_call);
  CHECK_INT_EQ(hk_load_file(cj, path), HK_ESCHEMA);
  pos_of(bad_call, "system(", &line, &col);
  check_at(hk_last_error(), path, line, col,
           "body: calls 'system', which is not allowed");
  CHECK(!strstr(hk_last_error(), "(tcc") && !strstr(hk_last_error(), "(cc"));
  CHECK(!found(cj, "b_call"));

  /* compile errors, on tier jit (libtcc) and tier opt (cc) */
  static const char bad_syntax[] =
      "{\"schema_version\": 1, \"name\": \"b_syntax\", \"kind\": "
      "\"elementwise\",\n"
      " \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},\n"
      "            {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\"}],\n"
      " \"doc\": \"a C syntax error\",\n"
      " \"body\": \"out = x +;\"}\n";
  static const char bad_name[] =
      "{\"schema_version\": 1, \"name\": \"b_name\", \"kind\": \"elementwise\",\n"
      " \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},\n"
      "            {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\"}],\n"
      " \"body\": \"float t = x * 2; out = t + undeclared_thing;\"}\n";
  check_compile_error(cj, P("bad/b_syntax.json"), bad_syntax, "out = x +;",
                      "\"}\n", "tcc");
  check_compile_error(cj, P("bad/b_name.json"), bad_name, "float t",
                      "\"}\n", "tcc");
  CHECK(!found(cj, "b_syntax") && !found(cj, "b_name"));
  if (g_have_cc) {
    make_dir(P("bad_opt"));
    hk_context_t *co = mkctx(HK_TIER_OPT, NULL, P("cache_bad"), 0, NULL);
    if (co) {
      check_compile_error(co, P("bad_opt/b_syntax.json"), bad_syntax,
                          "out = x +;", "\"}\n", "cc");
      CHECK_CONTAINS(hk_last_error(), "tier opt failed");
      check_compile_error(co, P("bad_opt/b_name.json"), bad_name, "float t",
                          "\"}\n", "cc");
      CHECK_CONTAINS(hk_last_error(), "undeclared_thing");
      CHECK(!found(co, "b_syntax") && !found(co, "b_name"));
    }
    hk_context_destroy(co);
  }

  /* A folder with one bad file and two good ones: the good ones load. */
  make_dir(P("mixed"));
  write_kernel(P("mixed/m_a.json"), "m_a", "out = x * 2.0f;");
  write_text(P("mixed/m_b.json"), bad_json);
  write_kernel(P("mixed/m_c.json"), "m_c", "out = x * 3.0f;");
  write_text(P("mixed/notes.txt"), "not a kernel file: ignored");
  hk_context_t *cm = mkctx(HK_TIER_JIT, P("mixed"), P("cache_bad"), 0, NULL);
  if (cm) {
    const char *pr = hk_context_problems(cm);
    CHECK_CONTAINS(pr, P("mixed/m_b.json"));
    CHECK_CONTAINS(pr, "invalid JSON");
    CHECK(!strstr(pr, "m_a.json") && !strstr(pr, "m_c.json") &&
          !strstr(pr, "notes.txt"));
    CHECK(runs_times(cm, "m_a", 2.0f));
    CHECK(runs_times(cm, "m_c", 3.0f));
  }
  hk_context_destroy(cm);
  /* hk_load_dir says so too */
  cm = mkctx(HK_TIER_JIT, NULL, P("cache_bad"), 0, NULL);
  if (cm) {
    CHECK_INT_EQ(hk_load_dir(cm, P("mixed")), HK_ESCHEMA);
    CHECK_CONTAINS(hk_last_error(), P("mixed/m_b.json"));
    CHECK_CONTAINS(hk_context_problems(cm), P("mixed/m_b.json"));
    CHECK(runs_times(cm, "m_a", 2.0f) && runs_times(cm, "m_c", 3.0f));
  }
  hk_context_destroy(cm);

  /* The same kernel name in two files: the second file is refused, naming
   * both; a user kernel cannot take a stdlib name. */
  make_dir(P("dup"));
  write_kernel(P("dup/dup_a.json"), "d_same", "out = x * 2.0f;");
  static const char dup_b[] =
      "{\"schema_version\": 1, \"kernels\": [\n"
      " {\"name\": \"d_other\", \"kind\": \"elementwise\",\n"
      "  \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},\n"
      "             {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\"}],\n"
      "  \"body\": \"out = x;\"},\n"
      " {\"name\": \"d_same\", \"kind\": \"elementwise\",\n"
      "  \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},\n"
      "             {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\"}],\n"
      "  \"body\": \"out = x * 5.0f;\"}]}\n";
  write_text(P("dup/dup_b.json"), dup_b);
  hk_context_t *cd = mkctx(HK_TIER_JIT, P("dup"), P("cache_bad"), 0, NULL);
  if (cd) {
    const char *pr = hk_context_problems(cd);
    pos_of(dup_b, "\"d_same\"", &line, &col);
    check_at(pr, P("dup/dup_b.json"), line, col,
             "kernels[1].name: kernel \"d_same\" is already defined in ");
    int la, ca;
    char text[2048];
    snprintf(text, sizeof text, good_json_fmt, "d_same", "out = x * 2.0f;");
    pos_of(text, "\"d_same\"", &la, &ca);
    char where[4300];
    snprintf(where, sizeof where, "%s:%d:%d", P("dup/dup_a.json"), la, ca);
    CHECK_CONTAINS(pr, where);
    CHECK(runs_times(cd, "d_same", 2.0f)); /* the first file's */
    hk_kernel_t *k = find(cd, "d_same");
    if (k) CHECK_STR_EQ(hk_kernel_info(k)->source, P("dup/dup_a.json"));
    CHECK(!found(cd, "d_other")); /* the whole file was refused */
    /* once the first file is gone, the second one loads */
    CHECK(unlink(P("dup/dup_a.json")) == 0);
    CHECK_MSG(hk_reload(cd) == HK_OK, "%s", hk_last_error());
    CHECK_STR_EQ(hk_context_problems(cd), "");
    CHECK(runs_times(cd, "d_same", 5.0f));
    CHECK(found(cd, "d_other"));
  }
  hk_context_destroy(cd);
  make_dir(P("stdname"));
  write_kernel(P("stdname/s.json"), "add_f32", "out = x;");
  hk_context_t *cs = mkctx(HK_TIER_JIT, P("stdname"), P("cache_bad"), 0, NULL);
  if (cs) {
    char text[2048];
    snprintf(text, sizeof text, good_json_fmt, "add_f32", "out = x;");
    pos_of(text, "\"add_f32\"", &line, &col);
    check_at(hk_context_problems(cs), P("stdname/s.json"), line, col,
             "name: \"add_f32\" is a stdlib kernel");
    hk_kernel_t *k = find(cs, "add_f32");
    if (k) CHECK_STR_EQ(hk_kernel_info(k)->origin, "stdlib");
  }
  hk_context_destroy(cs);
  hk_context_destroy(cj);
}

/* Hand-made shared objects: a good one, and one per refusal. */
static void test_bad_so(void) {
  if (!g_have_cc) {
    printf("NOTE: no system compiler 'cc': hand-made plugins not tested\n");
    return;
  }
  char src[4200];
  snprintf(src, sizeof src, "%s/tests/plugin_fixtures/fake_plugin.c", g_src);
  make_dir(P("so"));
  static const struct {
    const char *file, *define, *message;
  } cases[] = {
      {"good.so", NULL, NULL},
      {"abi.so", "-DABI=999",
       "built for hk ABI 999, and this hk is ABI 1"},
      {"puts.so", "-DCALL_PUTS", "imports 'puts'"},
      {"ctor.so", "-DCTOR", "constructors"},
      {"nodesc.so", "-DNO_DESC", "not an hk plugin"},
  };
  for (size_t i = 0; i < COUNT(cases); i++) {
    char so[4200];
    snprintf(so, sizeof so, "%s/so/%s", g_root, cases[i].file);
    if (cc_shared(src, so, cases[i].define) != 0) {
      CHECK_MSG(0, "cc failed for %s", cases[i].file);
      continue;
    }
    hk_context_t *c = mkctx(HK_TIER_JIT, NULL, P("cache_bad"), 0, NULL);
    if (!c) continue;
    int rc = hk_load_file(c, so);
    if (!cases[i].message) {
      CHECK_MSG(rc == HK_OK, "%s: %s", so, hk_last_error());
      hk_kernel_t *k = find(c, "t_twice");
      if (k) {
        CHECK_INT_EQ(hk_kernel_tier(k), HK_TIER_SO);
        CHECK_STR_EQ(hk_kernel_info(k)->origin, "so");
        CHECK_STR_EQ(hk_kernel_info(k)->source, so);
        CHECK(runs_times(c, "t_twice", 2.0f));
        CHECK_INT_EQ(hk_kernel_wait_opt(k), HK_OK);
      }
    } else {
      CHECK_MSG(rc != HK_OK, "%s was loaded", so);
      CHECK_CONTAINS(hk_last_error(), so);
      CHECK_CONTAINS(hk_last_error(), cases[i].message);
      show(cases[i].file, hk_last_error());
      CHECK(!found(c, "t_twice"));
    }
    hk_context_destroy(c);
  }
  /* A folder of them: the good one loads, each bad one is a problem. */
  hk_context_t *c = mkctx(HK_TIER_JIT, P("so"), P("cache_bad"), 0, NULL);
  if (c) {
    CHECK(runs_times(c, "t_twice", 2.0f));
    for (size_t i = 1; i < COUNT(cases); i++)
      CHECK_CONTAINS(hk_context_problems(c), cases[i].message);
  }
  hk_context_destroy(c);

  /* A prebuilt plugin replaced by a new build (renamed over it, as hk
   * build does): the same handle runs the new code after hk_reload. */
  make_dir(P("so_rel"));
  PATH(so, "so_rel/t.so");
  PATH(next, "so_rel/t.so.next");
  if (cc_shared(src, so, NULL) != 0) return;
  c = mkctx(HK_TIER_JIT, P("so_rel"), P("cache_bad"), 0, NULL);
  hk_kernel_t *k = c ? find(c, "t_twice") : NULL;
  if (k) {
    CHECK(runs_times(c, "t_twice", 2.0f));
    CHECK_INT_EQ(hk_reload(c), HK_OK); /* unchanged */
    if (cc_shared(src, next, "-DFACTOR=3.0f") == 0) {
      CHECK(rename(next, so) == 0);
      CHECK_MSG(hk_reload(c) == HK_OK, "%s", hk_last_error());
      CHECK(find(c, "t_twice") == k);
      CHECK_INT_EQ(hk_kernel_tier(k), HK_TIER_SO);
      CHECK_MSG(runs_times(c, "t_twice", 3.0f),
                "a replaced .so still runs its old code");
    }
    CHECK(unlink(so) == 0);
    CHECK_INT_EQ(hk_reload(c), HK_OK);
    void *args[] = {gx32, g_got};
    CHECK_INT_EQ(hk_call(k, 10, args), HK_ENOTFOUND);
  }
  hk_context_destroy(c);

  /* The same, but the new build is copied over the loaded one in place
   * (cp, same inode): still a changed file, whose new code must run; and
   * nothing may crash. In a child process, as it may. */
  make_dir(P("so_cp"));
  PATH(cpso, "so_cp/t.so");
  PATH(v3, "so_v3.so");
  if (cc_shared(src, cpso, NULL) != 0 ||
      cc_shared(src, v3, "-DFACTOR=3.0f") != 0)
    return;
  char self[4096];
  ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
  self[sl > 0 ? sl : 0] = '\0';
  char *argv[] = {self, "--so-inplace-child", (char *)P("so_cp"), v3, NULL};
  PATH(log, "so_inplace.log");
  int rc = run_logged(argv, log);
  CHECK_MSG(rc == 0,
            "a prebuilt plugin copied over in place, then hk_reload: the "
            "child exited with %d (-1: killed by a signal)", rc);
  if (rc != 0) print_log(log);
}

/* The child of the in-place case: loads DIR/t.so (2 x), copies NEW over it
 * in place, reloads, expects 3 x. */
static int so_inplace_child(const char *dir, const char *newso) {
  init_data();
  g_got = malloc(NMAX * 8);
  hk_context_t *c = mkctx(HK_TIER_JIT, dir, NULL, HK_NO_CACHE, NULL);
  if (!c) return 1;
  CHECK(runs_times(c, "t_twice", 2.0f));
  char so[4200];
  snprintf(so, sizeof so, "%s/t.so", dir);
  size_t n;
  char *bytes = read_bytes(newso, &n);
  int fd = open(so, O_WRONLY | O_TRUNC | O_CLOEXEC); /* as cp does */
  CHECK(bytes && fd >= 0 && write(fd, bytes, n) == (ssize_t)n);
  if (fd >= 0) close(fd);
  free(bytes);
  printf("copied in place; reloading\n");
  fflush(stdout);
  int rc = hk_reload(c);
  CHECK_MSG(rc == HK_OK, "%s", hk_last_error());
  CHECK_MSG(runs_times(c, "t_twice", 3.0f), "still the old code");
  hk_context_destroy(c);
  free(g_got);
  return check_failures ? 1 : 0;
}

/* Unsafe permissions: refused, with the reason; allowed on request. */
static void test_permissions(void) {
  make_dir(P("perm"));
  PATH(file, "perm/perm.json");
  write_kernel(file, "perm_k", "out = x * 2.0f;");
  PATH(cache, "cache_perm");
  make_dir(cache);

  /* a kernel file others can write to */
  CHECK(chmod(file, 0666) == 0);
  hk_context_t *c = mkctx(HK_TIER_JIT, P("perm"), cache, 0, NULL);
  if (c) {
    CHECK(!found(c, "perm_k"));
    CHECK_CONTAINS(hk_context_problems(c), file);
    CHECK_CONTAINS(hk_context_problems(c), "others can write");
    show("0666 file", hk_context_problems(c));
    CHECK_INT_EQ(hk_load_file(c, file), HK_EIO);
    CHECK_CONTAINS(hk_last_error(), file);
    CHECK_CONTAINS(hk_last_error(), "others can write");
  }
  hk_context_destroy(c);
  c = mkctx(HK_TIER_JIT, P("perm"), cache, HK_ALLOW_UNSAFE_PERMISSIONS, NULL);
  if (c) {
    CHECK_STR_EQ(hk_context_problems(c), "");
    CHECK(runs_times(c, "perm_k", 2.0f));
  }
  hk_context_destroy(c);
  CHECK(chmod(file, 0644) == 0);

  /* a folder others can write to */
  CHECK(chmod(P("perm"), 0777) == 0);
  c = mkctx(HK_TIER_JIT, P("perm"), cache, 0, NULL);
  if (c) {
    CHECK(!found(c, "perm_k"));
    CHECK_CONTAINS(hk_context_problems(c), P("perm"));
    CHECK_CONTAINS(hk_context_problems(c), "others can write");
    CHECK_CONTAINS(hk_context_problems(c), "folder");
    show("0777 folder", hk_context_problems(c));
    CHECK(hk_load_file(c, file) != HK_OK);
    CHECK_CONTAINS(hk_last_error(), "others can write");
  }
  hk_context_destroy(c);
  c = mkctx(HK_TIER_JIT, P("perm"), cache, HK_ALLOW_UNSAFE_PERMISSIONS, NULL);
  if (c) CHECK(runs_times(c, "perm_k", 2.0f));
  hk_context_destroy(c);
  CHECK(chmod(P("perm"), 0700) == 0);

  /* a kernel file owned by another user */
  if (geteuid() != 0) {
    printf("NOTE: not root: the 'owned by another user' case is not "
           "tested\n");
  } else if (chown(file, 65534, 65534) != 0) {
    printf("NOTE: chown failed (%s): the 'owned by another user' case is not "
           "tested\n", strerror(errno));
  } else {
    c = mkctx(HK_TIER_JIT, P("perm"), cache, 0, NULL);
    if (c) {
      CHECK(!found(c, "perm_k"));
      CHECK_CONTAINS(hk_context_problems(c), file);
      CHECK_CONTAINS(hk_context_problems(c), "owned by another user");
      show("chown 65534", hk_context_problems(c));
    }
    hk_context_destroy(c);
    c = mkctx(HK_TIER_JIT, P("perm"), cache, HK_ALLOW_UNSAFE_PERMISSIONS,
              NULL);
    if (c) CHECK(runs_times(c, "perm_k", 2.0f));
    hk_context_destroy(c);
    CHECK(chown(file, 0, 0) == 0);
  }
  c = mkctx(HK_TIER_JIT, P("perm"), cache, 0, NULL);
  if (c) {
    CHECK_STR_EQ(hk_context_problems(c), "");
    CHECK(runs_times(c, "perm_k", 2.0f));
  }
  hk_context_destroy(c);
}

/* ---- 5. A prebuilt plugin ----------------------------------------------------------- */

static void test_prebuilt(void) {
  if (!g_have_cc) {
    printf("NOTE: no system compiler 'cc': hk build not tested\n");
    return;
  }
  if (access(g_hk, X_OK) != 0) {
    printf("NOTE: no hk command at %s: hk build not tested\n", g_hk);
    return;
  }
  make_dir(P("pb"));
  char so[4200], log[4200];
  snprintf(so, sizeof so, "%s", P("pb/ops.so"));
  snprintf(log, sizeof log, "%s", P("hk-build.log"));
  char *argv[] = {g_hk, "build", (char *)P("ops/ops.json"), "-o", so, NULL};
  int rc = run_logged(argv, log);
  CHECK_MSG(rc == 0, "hk build exited with %d", rc);
  if (rc != 0) {
    print_log(log);
    return;
  }
  hk_context_t *c = mkctx(HK_TIER_AUTO, P("pb"), P("cache_pb"), 0, NULL);
  if (!c) return;
  CHECK_STR_EQ(hk_context_problems(c), "");
  for (size_t o = 0; o < COUNT(ops); o++)
    for (int ti = 0; ops[o].types[ti]; ti++) {
      hk_dtype_t t = ops[o].types[ti];
      char name[128], what[160];
      snprintf(name, sizeof name, "%s_%s", ops[o].name, hk_dtype_name(t));
      hk_kernel_t *k = find(c, name);
      if (!k) continue;
      CHECK_INT_EQ(hk_kernel_tier(k), HK_TIER_SO);
      CHECK_INT_EQ(hk_kernel_wait_opt(k), HK_OK);
      check_info(k, o, t, "so", so);
      check_lens(k, o, t);
      snprintf(what, sizeof what, "%s (so)", name);
      check_op(what, k, ops[o].op, t, sizes, COUNT(sizes));
    }
  hk_context_destroy(c);
}

/* ---- 6. Reload and watch ------------------------------------------------------------ */


static const char r2_v2[] =
    "{\"schema_version\": 1, \"name\": \"r_sig\", \"kind\": \"elementwise\",\n"
    " \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},\n"
    "            {\"name\": \"s\", \"type\": \"f32\", \"role\": \"scalar\"},\n"
    "            {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\"}],\n"
    " \"body\": \"out = x * s;\"}\n";

static void test_reload(void) {
  make_dir(P("rel"));
  PATH(r1, "rel/r1.json");
  PATH(r2, "rel/r2.json");
  PATH(r3, "rel/r3.json");
  PATH(r4, "rel/r4.json");
  const char *r1p = r1;
  write_kernel(r1, "r_k", "out = x * 2.0f;");
  write_kernel(r2, "r_sig", "out = x * 2.0f;");
  write_kernel(r3, "r_del", "out = x * 2.0f;");
  hk_context_t *c = mkctx(HK_TIER_JIT, P("rel"), P("cache_rel"), 0, NULL);
  if (!c) return;
  CHECK_STR_EQ(hk_context_problems(c), "");
  hk_kernel_t *k1 = find(c, "r_k"), *k2 = find(c, "r_sig"),
              *k3 = find(c, "r_del");
  if (!k1 || !k2 || !k3) {
    hk_context_destroy(c);
    return;
  }
  CHECK(runs_times(c, "r_k", 2.0f));
  /* nothing changed: nothing happens */
  CHECK_INT_EQ(hk_reload(c), HK_OK);
  CHECK(find(c, "r_k") == k1 && runs_times(c, "r_k", 2.0f));

  /* a new body, same parameters: the same handle runs the new code */
  write_kernel(r1, "r_k", "out = x * 3.0f;");
  CHECK_MSG(hk_reload(c) == HK_OK, "%s", hk_last_error());
  CHECK(find(c, "r_k") == k1);
  CHECK(runs_times(c, "r_k", 3.0f));
  CHECK_INT_EQ(hk_kernel_tier(k1), HK_TIER_JIT);

  /* new parameters: the old handle stops, a new one takes the name */
  write_text(r2, r2_v2);
  CHECK_MSG(hk_reload(c) == HK_OK, "%s", hk_last_error());
  void *args2[] = {gx32, g_got};
  CHECK_INT_EQ(hk_call(k2, 10, args2), HK_ENOTFOUND);
  CHECK_CONTAINS(hk_last_error(), "r_sig");
  CHECK_CONTAINS(hk_last_error(), "hk_kernel_find");
  CHECK_INT_EQ(hk_kernel_tier(k2), HK_TIER_NONE);
  CHECK_CONTAINS(note_of(k2), "stale");
  int64_t lens[4];
  CHECK_INT_EQ(hk_kernel_lens(k2, 10, args2, lens), HK_ENOTFOUND);
  hk_kernel_t *k2b = find(c, "r_sig");
  if (k2b) {
    CHECK(k2b != k2);
    CHECK_INT_EQ(hk_kernel_info(k2b)->nparams, 3);
    CHECK_STR_EQ(hk_kernel_info(k2b)->params[1].name, "s");
    float s = 4.0f;
    void *args3[] = {gx32, &s, g_got};
    CHECK_INT_EQ(hk_call(k2b, 1000, args3), HK_OK);
    int ok = 1;
    for (size_t i = 0; i < 1000; i++) ok &= ((float *)g_got)[i] == gx32[i] * s;
    CHECK(ok);
  }
  CHECK_INT_EQ(hk_kernel_info(k2)->nparams, 2); /* the old description */

  /* a removed file: its kernels are gone */
  CHECK(unlink(r3) == 0);
  CHECK_MSG(hk_reload(c) == HK_OK, "%s", hk_last_error());
  void *args1[] = {gx32, g_got};
  CHECK_INT_EQ(hk_call(k3, 10, args1), HK_ENOTFOUND);
  CHECK_CONTAINS(hk_last_error(), "r_del");
  CHECK_CONTAINS(note_of(k3), "unloaded");
  hk_kernel_t *gone = (hk_kernel_t *)1;
  CHECK_INT_EQ(hk_kernel_find(c, "r_del", &gone), HK_ENOTFOUND);
  CHECK(gone == NULL);
  CHECK_CONTAINS(hk_last_error(), "r_del");

  /* a kernel dropped from a file that stays: gone, the other one stays */
  PATH(r6, "rel/r6.json");
  static const char two[] =
      "{\"schema_version\": 1, \"kernels\": [\n"
      " {\"name\": \"r_keep\", \"kind\": \"elementwise\",\n"
      "  \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},\n"
      "             {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\"}],\n"
      "  \"body\": \"out = x * 2.0f;\"},\n"
      " {\"name\": \"r_drop\", \"kind\": \"elementwise\",\n"
      "  \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},\n"
      "             {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\"}],\n"
      "  \"body\": \"out = x * 2.0f;\"}]}\n";
  write_text(r6, two);
  CHECK_MSG(hk_reload(c) == HK_OK, "%s", hk_last_error());
  hk_kernel_t *keep = find(c, "r_keep"), *drop = find(c, "r_drop");
  write_kernel(r6, "r_keep", "out = x * 3.0f;");
  CHECK_MSG(hk_reload(c) == HK_OK, "%s", hk_last_error());
  CHECK(find(c, "r_keep") == keep && runs_times(c, "r_keep", 3.0f));
  if (drop) {
    CHECK_INT_EQ(hk_call(drop, 10, args1), HK_ENOTFOUND);
    CHECK_CONTAINS(note_of(drop), "unloaded");
  }
  CHECK(!found(c, "r_drop"));

  /* a syntax error: reported, and the previous version keeps working */
  write_text(r1, "{\"schema_version\": 1, \"name\": \"r_k\",\n  oops }\n");
  CHECK_INT_EQ(hk_reload(c), HK_ESCHEMA);
  check_at(hk_last_error(), r1p, 2, 3, "invalid JSON");
  CHECK_CONTAINS(hk_context_problems(c), r1p);
  CHECK_CONTAINS(hk_context_problems(c), "the previous version stays loaded");
  CHECK(find(c, "r_k") == k1);
  CHECK(runs_times(c, "r_k", 3.0f));
  /* a compile error likewise */
  write_kernel(r1, "r_k", "out = x * ;");
  CHECK_INT_EQ(hk_reload(c), HK_ECOMPILE);
  CHECK_CONTAINS(hk_last_error(), r1p);
  CHECK(runs_times(c, "r_k", 3.0f));

  /* a new file appears; the broken one, fixed, loads again */
  write_kernel(r4, "r_new", "out = x * 7.0f;");
  write_kernel(r1, "r_k", "out = x * 4.0f;");
  CHECK_MSG(hk_reload(c) == HK_OK, "%s", hk_last_error());
  CHECK_STR_EQ(hk_context_problems(c), "");
  CHECK(runs_times(c, "r_new", 7.0f));
  CHECK(find(c, "r_k") == k1 && runs_times(c, "r_k", 4.0f));
  hk_kernel_t *kn = find(c, "r_new");
  if (kn) CHECK_STR_EQ(hk_kernel_info(kn)->source, r4);

  /* a file loaded by itself (not from a folder) reloads too */
  make_dir(P("rel_single"));
  PATH(single, "rel_single/one.json");
  write_kernel(single, "r_single", "out = x * 2.0f;");
  CHECK_MSG(hk_load_file(c, single) == HK_OK, "%s", hk_last_error());
  CHECK(runs_times(c, "r_single", 2.0f));
  write_kernel(single, "r_single", "out = x * 6.0f;");
  CHECK_MSG(hk_reload(c) == HK_OK, "%s", hk_last_error());
  CHECK(runs_times(c, "r_single", 6.0f));

  /* the watcher: a rewrite is picked up without hk_reload */
  CHECK_INT_EQ(hk_watch(c, 1), HK_OK);
  write_kernel(r1, "r_k", "out = x * 5.0f;");
  double t0 = now_s();
  int changed = 0;
  while (!changed && now_s() - t0 < 10) {
    sleep_ms(20);
    changed = runs_times(c, "r_k", 5.0f);
  }
  CHECK_MSG(changed, "the watcher did not reload %s within 10 s", r1p);
  CHECK(find(c, "r_k") == k1);
  /* and a new file */
  write_kernel(P("rel/r5.json"), "r_watched", "out = x * 8.0f;");
  t0 = now_s();
  changed = 0;
  while (!changed && now_s() - t0 < 10) {
    sleep_ms(20);
    changed = runs_times(c, "r_watched", 8.0f);
  }
  CHECK_MSG(changed, "the watcher did not load a new file within 10 s");
  CHECK_INT_EQ(hk_watch(c, 0), HK_OK);
  CHECK_INT_EQ(hk_watch(c, 0), HK_OK); /* twice is harmless */
  hk_context_destroy(c);

  /* a context made with HK_WATCH watches from the start; what the watcher
   * finds goes to the log */
  make_dir(P("relw"));
  PATH(wfile, "relw/w.json");
  write_kernel(wfile, "w_k", "out = x * 2.0f;");
  const char *dirs[] = {P("relw"), NULL};
  hk_options_t o = {0};
  o.plugin_dirs = dirs;
  o.cache_dir = P("cache_rel");
  o.tier = HK_TIER_JIT;
  o.flags = HK_WATCH;
  o.log = log_fn;
  c = NULL;
  CHECK_INT_EQ(hk_context_create(&c, &o), HK_OK);
  if (c) {
    CHECK(runs_times(c, "w_k", 2.0f));
    write_kernel(wfile, "w_k", "out = x * 3.0f;");
    t0 = now_s();
    changed = 0;
    while (!changed && now_s() - t0 < 10) {
      sleep_ms(20);
      changed = runs_times(c, "w_k", 3.0f);
    }
    CHECK_MSG(changed, "HK_WATCH: no reload within 10 s");
    /* a broken version: the log says so, the previous one keeps running */
    write_text(wfile, "{\"schema_version\": 1, oops\n");
    t0 = now_s();
    while (!log_has("oops") && now_s() - t0 < 10) sleep_ms(20);
    CHECK_MSG(log_has(wfile) && log_has("invalid JSON"),
              "the log did not report the broken file: \"%s\"", g_log);
    CHECK(runs_times(c, "w_k", 3.0f));
  }
  hk_context_destroy(c); /* while watching */
}

/* ---- 7. Calls from 8 threads during reloads ---------------------------------------- */

#define NTHREADS 8
static atomic_int g_stop;

typedef struct {
  hk_context_t *ctx;
  hk_kernel_t *k; /* c_mul, found before the threads start */
  unsigned id;
  long calls, saw2, saw3, wrong, failed, finds;
  char first_problem[256];
} worker_t;

static void worker_problem(worker_t *w, const char *what, const char *detail) {
  if (!w->first_problem[0])
    snprintf(w->first_problem, sizeof w->first_problem, "%s: %s", what,
             detail);
}

static void *worker(void *arg) {
  worker_t *w = arg;
  static const size_t wsizes[] = {1, 100, 5000, 70001};
  float *out = malloc(70001 * sizeof *out), *sum = malloc(70001 * sizeof *sum);
  uint64_t seed = 0x1234567ull + w->id * 77u;
  hk_kernel_t *add = NULL;
  if (!out || !sum || hk_kernel_find(w->ctx, "add_f32", &add) != HK_OK) {
    w->failed++;
    worker_problem(w, "setup", hk_last_error());
    free(out);
    free(sum);
    return NULL;
  }
  do {
    size_t n = wsizes[rnd(&seed) % COUNT(wsizes)];
    hk_kernel_t *k = w->k;
    if (rnd(&seed) % 2) { /* look it up again: the same handle */
      hk_kernel_t *f = NULL;
      w->finds++;
      if (hk_kernel_find(w->ctx, "c_mul", &f) != HK_OK || f != w->k) {
        w->failed++;
        worker_problem(w, "find", hk_last_error());
        continue;
      }
      k = f;
    }
    if (w->calls % 50 == 7) { /* the other per-kernel calls, meanwhile */
      char note[512];
      hk_kernel_note(k, note, sizeof note);
      int rc = hk_kernel_wait_opt(k);
      if (rc != HK_OK && rc != HK_EUNSUPPORTED) {
        w->failed++;
        worker_problem(w, "hk_kernel_wait_opt", hk_last_error());
      }
    }
    hk_tier_t t = hk_kernel_tier(k);
    if (t != HK_TIER_JIT && t != HK_TIER_OPT) {
      w->failed++;
      worker_problem(w, "tier", hk_tier_name(t));
    }
    const hk_kernel_info_t *in = hk_kernel_info(k);
    if (strcmp(in->name, "c_mul") || in->nparams != 2) {
      w->failed++;
      worker_problem(w, "info", in->name);
    }
    void *args[] = {gpos32, out};
    int rc = hk_call(k, n, args);
    w->calls++;
    if (rc != HK_OK) {
      w->failed++;
      worker_problem(w, "hk_call", hk_last_error());
      continue;
    }
    int all2 = 1, all3 = 1;
    for (size_t i = 0; i < n; i++) {
      all2 &= out[i] == gpos32[i] * 2.0f;
      all3 &= out[i] == gpos32[i] * 3.0f;
    }
    if (all2) w->saw2++;
    if (all3) w->saw3++;
    if (!all2 && !all3) {
      w->wrong++;
      worker_problem(w, "c_mul", "neither all 2x nor all 3x");
    }
    void *aargs[] = {gx32, gy32, sum};
    if (hk_call(add, n, aargs) != HK_OK) {
      w->failed++;
      worker_problem(w, "add_f32", hk_last_error());
      continue;
    }
    for (size_t i = 0; i < n; i++)
      if (sum[i] != gx32[i] + gy32[i]) {
        w->wrong++;
        worker_problem(w, "add_f32", "wrong sum");
        break;
      }
  } while ((!atomic_load(&g_stop) || w->calls < 20) && w->failed < 100);
  free(out);
  free(sum);
  return NULL;
}

static void write_cmul(const char *path, int k) {
  char body[64];
  snprintf(body, sizeof body, "out = x * %d.0f;", k);
  char text[2048];
  snprintf(text, sizeof text, good_json_fmt, "c_mul", body);
  write_text(path, text);
}

static void stress(hk_tier_t tier, const char *label) {
  char dir[4200], file[4300], cache[4300];
  snprintf(dir, sizeof dir, "%s", P(label));
  snprintf(file, sizeof file, "%s/c_mul.json", dir);
  snprintf(cache, sizeof cache, "%s.cache", dir);
  make_dir(dir);
  make_dir(cache);
  write_cmul(file, 2);
  hk_context_t *ctx = mkctx(tier, dir, cache, 0, NULL);
  hk_kernel_t *k = ctx ? find(ctx, "c_mul") : NULL;
  if (!k) {
    hk_context_destroy(ctx);
    return;
  }
  worker_t w[NTHREADS];
  pthread_t th[NTHREADS];
  memset(w, 0, sizeof w);
  atomic_store(&g_stop, 0);
  int started = 0;
  for (int i = 0; i < NTHREADS; i++) {
    w[i].ctx = ctx;
    w[i].k = k;
    w[i].id = (unsigned)i;
    if (pthread_create(&th[i], NULL, worker, &w[i]) != 0) break;
    started++;
  }
  CHECK_INT_EQ(started, NTHREADS);
  int reloads = 0, failed = 0, kk = 2;
  double t0 = now_s();
  while (reloads < 200 && now_s() - t0 < 3.0) {
    kk = kk == 2 ? 3 : 2;
    write_cmul(file, kk);
    if (hk_reload(ctx) != HK_OK) {
      if (!failed) fprintf(stderr, "  reload: %s\n", hk_last_error());
      failed++;
    }
    reloads++;
    /* let the callers see each version; on tier auto also keep the opt
     * worker's queue short: each reload that is not a cache hit queues a
     * compile, and the worker compiles even modules already replaced */
    if (tier == HK_TIER_AUTO) sleep_ms(5);
    else if (reloads % 8 == 0) sleep_ms(1);
  }
  atomic_store(&g_stop, 1);
  long calls = 0, saw2 = 0, saw3 = 0, finds = 0;
  for (int i = 0; i < started; i++) {
    pthread_join(th[i], NULL);
    CHECK_MSG(w[i].wrong == 0 && w[i].failed == 0,
              "%s thread %d: %ld wrong, %ld failed; first: %s", label, i,
              w[i].wrong, w[i].failed, w[i].first_problem);
    CHECK_MSG(w[i].calls > 0, "%s thread %d made no call", label, i);
    calls += w[i].calls;
    saw2 += w[i].saw2;
    saw3 += w[i].saw3;
    finds += w[i].finds;
  }
  CHECK_INT_EQ(failed, 0);
  CHECK_MSG(saw2 > 0 && saw3 > 0, "%s: 2x seen %ld times, 3x %ld times",
            label, saw2, saw3);
  /* after the last reload the handle runs the last version */
  CHECK(find(ctx, "c_mul") == k);
  CHECK(runs_times(ctx, "c_mul", (float)kk));
  hk_context_wait(ctx);
  CHECK(runs_times(ctx, "c_mul", (float)kk));
  printf("%s: %d reloads in %.2f s, %ld calls (%ld finds) from %d threads\n",
         label, reloads, now_s() - t0, calls, finds, NTHREADS);
  hk_context_destroy(ctx);
}

/* ---- 8. Misc ------------------------------------------------------------------------ */

typedef struct {
  hk_context_t *ctx;
  char before[256], after[256];
} err_thread_t;

static void *err_thread(void *arg) {
  err_thread_t *e = arg;
  snprintf(e->before, sizeof e->before, "%s", hk_last_error());
  hk_kernel_t *k;
  hk_kernel_find(e->ctx, "thread_missing", &k);
  snprintf(e->after, sizeof e->after, "%s", hk_last_error());
  return NULL;
}

typedef struct {
  int n, sorted, stdlib, plugin;
  char last[256];
} foreach_t;

static int collect(hk_kernel_t *k, void *user) {
  foreach_t *f = user;
  const hk_kernel_info_t *in = hk_kernel_info(k);
  if (f->n && strcmp(f->last, in->name) >= 0) f->sorted = 0;
  snprintf(f->last, sizeof f->last, "%s", in->name);
  f->n++;
  if (!strcmp(in->origin, "stdlib")) f->stdlib++;
  if (!strcmp(in->origin, "json")) f->plugin++;
  return 0;
}

static int stop_at_third(hk_kernel_t *k, void *user) {
  (void)k;
  return ++*(int *)user == 3 ? 42 : 0;
}

static void test_misc(void) {
  make_dir(P("misc"));
  write_kernel(P("misc/aaa.json"), "aaa_first", "out = x;");
  write_kernel(P("misc/zzz.json"), "zzz_last", "out = x;");
  hk_context_t *c = mkctx(HK_TIER_JIT, P("misc"), P("cache_misc"), 0, NULL);
  if (!c) return;

  /* hk_last_error is per thread */
  hk_kernel_t *k = NULL;
  CHECK_INT_EQ(hk_kernel_find(c, "main_missing", &k), HK_ENOTFOUND);
  char mine[256];
  snprintf(mine, sizeof mine, "%s", hk_last_error());
  CHECK_CONTAINS(mine, "main_missing");
  err_thread_t e;
  memset(&e, 0, sizeof e);
  e.ctx = c;
  pthread_t th;
  CHECK(pthread_create(&th, NULL, err_thread, &e) == 0);
  pthread_join(th, NULL);
  CHECK_STR_EQ(e.before, ""); /* a new thread has no error */
  CHECK_CONTAINS(e.after, "thread_missing");
  CHECK_STR_EQ(hk_last_error(), mine);

  /* hk_kernel_foreach: every kernel, in name order */
  foreach_t f;
  memset(&f, 0, sizeof f);
  f.sorted = 1;
  CHECK_INT_EQ(hk_kernel_foreach(c, collect, &f), 0);
  CHECK(f.sorted);
  CHECK_INT_EQ(f.plugin, 2);
  CHECK(f.stdlib > 50);
  CHECK_INT_EQ(f.n, f.stdlib + f.plugin);
  int count = 0;
  CHECK_INT_EQ(hk_kernel_foreach(c, stop_at_third, &count), 42);
  CHECK_INT_EQ(count, 3);

  /* hk_load_string: good and bad */
  static const char good[] =
      "{\"schema_version\": 1, \"name\": \"str_k\", \"kind\": \"elementwise\","
      " \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},"
      " {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\"}],"
      " \"body\": \"out = x * 9.0f;\"}";
  CHECK_MSG(hk_load_string(c, good, strlen(good), "mystr") == HK_OK, "%s",
            hk_last_error());
  CHECK(runs_times(c, "str_k", 9.0f));
  k = find(c, "str_k");
  if (k) {
    CHECK_STR_EQ(hk_kernel_info(k)->source, "<mystr>");
    CHECK_STR_EQ(hk_kernel_info(k)->origin, "json");
  }
  static const char bad[] =
      "{\"schema_version\": 1,\n"
      " \"name\": \"str_bad\",\n"
      " \"kind\": \"elementwise\", \"params\": [}\n";
  CHECK_INT_EQ(hk_load_string(c, bad, strlen(bad), "bad string"),
               HK_ESCHEMA);
  int line, col;
  pos_of(bad, "}\n", &line, &col);
  check_at(hk_last_error(), "<bad string>", line, col, "invalid JSON");
  static const char bad2[] =
      "{\"schema_version\": 1, \"name\": \"str_bad2\", \"kind\": \"sideways\","
      " \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"}],"
      " \"body\": \"x;\"}";
  CHECK_INT_EQ(hk_load_string(c, bad2, strlen(bad2), NULL), HK_ESCHEMA);
  pos_of(bad2, "\"sideways\"", &line, &col);
  check_at(hk_last_error(), "<string>", line, col, "kind: ");
  CHECK(!found(c, "str_bad") && !found(c, "str_bad2"));
  /* a string loaded again under its name replaces the first */
  static const char good2[] =
      "{\"schema_version\": 1, \"name\": \"str_k\", \"kind\": \"elementwise\","
      " \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},"
      " {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\"}],"
      " \"body\": \"out = x * 10.0f;\"}";
  CHECK_MSG(hk_load_string(c, good2, strlen(good2), "mystr") == HK_OK, "%s",
            hk_last_error());
  CHECK(find(c, "str_k") == k);
  CHECK(runs_times(c, "str_k", 10.0f));
  /* a string loaded again with other parameters: a new handle */
  static const char sig1[] =
      "{\"schema_version\": 1, \"name\": \"str_sig\", \"kind\": \"elementwise\","
      " \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},"
      " {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\"}],"
      " \"body\": \"out = x;\"}";
  static const char sig2[] =
      "{\"schema_version\": 1, \"name\": \"str_sig\", \"kind\": \"elementwise\","
      " \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},"
      " {\"name\": \"s\", \"type\": \"f32\", \"role\": \"scalar\"},"
      " {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\"}],"
      " \"body\": \"out = x * s;\"}";
  CHECK_INT_EQ(hk_load_string(c, sig1, strlen(sig1), "sig"), HK_OK);
  hk_kernel_t *ks1 = find(c, "str_sig");
  CHECK_INT_EQ(hk_load_string(c, sig2, strlen(sig2), "sig"), HK_OK);
  hk_kernel_t *ks2 = NULL;
  CHECK_MSG(hk_kernel_find(c, "str_sig", &ks2) == HK_OK,
            "after a string changed its parameters: %s", hk_last_error());
  if (ks2) {
    CHECK(ks2 != ks1);
    CHECK_INT_EQ(hk_kernel_info(ks2)->nparams, 3);
  }
  if (ks1) CHECK_CONTAINS(note_of(ks1), "stale");

  /* the same string under another name collides */
  CHECK_INT_EQ(hk_load_string(c, good2, strlen(good2), "other"), HK_ESCHEMA);
  CHECK_CONTAINS(hk_last_error(), "<other>");
  CHECK_CONTAINS(hk_last_error(), "already defined in <mystr>");

  /* a plugin folder that does not exist yet: a problem, then loaded by a
   * reload once it does */
  hk_context_t *cl = mkctx(HK_TIER_JIT, P("misc_later"), P("cache_misc"), 0,
                           NULL);
  if (cl) {
    CHECK_CONTAINS(hk_context_problems(cl), P("misc_later"));
    make_dir(P("misc_later"));
    write_kernel(P("misc_later/l.json"), "later_k", "out = x * 2.0f;");
    CHECK_MSG(hk_reload(cl) == HK_OK, "%s", hk_last_error());
    CHECK(runs_times(cl, "later_k", 2.0f));
    CHECK_STR_EQ(hk_context_problems(cl), "");
  }
  hk_context_destroy(cl);

  /* plugin_dirs NULL: HK_PLUGIN_PATH; an empty list: no folder at all */
  char env[8500];
  snprintf(env, sizeof env, "%s:%s", P("no_such_dir"), P("misc"));
  setenv("HK_PLUGIN_PATH", env, 1);
  hk_options_t po = {0};
  po.cache_dir = P("cache_misc");
  po.tier = HK_TIER_JIT;
  hk_context_t *ce = NULL;
  CHECK_INT_EQ(hk_context_create(&ce, &po), HK_OK);
  if (ce) CHECK(found(ce, "aaa_first") && found(ce, "zzz_last"));
  hk_context_destroy(ce);
  ce = mkctx(HK_TIER_JIT, NULL, P("cache_misc"), 0, NULL);
  if (ce) CHECK(!found(ce, "aaa_first"));
  hk_context_destroy(ce);
  unsetenv("HK_PLUGIN_PATH");

  /* bad arguments */
  CHECK_INT_EQ(hk_load_file(c, P("misc/notes.txt")), HK_EINVAL);
  CHECK_INT_EQ(hk_load_file(c, P("misc/missing.json")), HK_EIO);
  CHECK_CONTAINS(hk_last_error(), P("misc/missing.json"));
  hk_context_t *bad_ctx = (hk_context_t *)1;
  hk_options_t o = {0};
  o.tier = HK_TIER_INLINE;
  o.cache_dir = P("cache_misc");
  CHECK_INT_EQ(hk_context_create(&bad_ctx, &o), HK_EINVAL);
  CHECK(bad_ctx == NULL);
  hk_context_destroy(NULL);
  hk_context_destroy(c);
}

/* ---- main ------------------------------------------------------------------------------ */

/* Two contexts hold one cache entry, the first is destroyed, then a third
 * loads another entry. glibc knows loaded objects by their name,
 * "/proc/self/fd/N", and by file identity (the second context got the
 * first one's link map): were fd N closed with the first context while the
 * second still holds the object, the third's entry, opened as the next free
 * fd N, would be "found" loaded and the wrong code run. Four threads making
 * contexts on one cache showed it ("does not define hk_range__..."). */
static void test_shared_objects(void) {
  if (!g_have_cc) return;
  make_dir(P("sh1"));
  make_dir(P("sh2"));
  PATH(ka, "sh1/a.json");
  PATH(kb, "sh2/b.json");
  PATH(cache, "sh_cache");
  write_kernel(ka, "sh_a", "out = x * 2.0f;");
  write_kernel(kb, "sh_b", "out = x * 3.0f;");
  /* the opt builds of both, into the cache */
  hk_context_destroy(mkctx(HK_TIER_OPT, P("sh1"), cache, 0, NULL));
  hk_context_destroy(mkctx(HK_TIER_OPT, P("sh2"), cache, 0, NULL));
  hk_context_t *a = mkctx(HK_TIER_AUTO, P("sh1"), cache, 0, NULL);
  hk_context_t *b = mkctx(HK_TIER_AUTO, P("sh1"), cache, 0, NULL);
  if (!a || !b) return;
  CHECK_INT_EQ(hk_kernel_tier(find(b, "sh_a")), HK_TIER_OPT);
  hk_context_destroy(a);
  for (int round = 0; round < 3; round++) {
    hk_context_t *c = mkctx(HK_TIER_AUTO, P("sh2"), cache, 0, NULL);
    if (!c) break;
    hk_kernel_t *k = find(c, "sh_b");
    CHECK_MSG(k && hk_kernel_tier(k) == HK_TIER_OPT,
              "round %d: sh_b from the cache is on tier %s: %s", round,
              k ? hk_tier_name(hk_kernel_tier(k)) : "-", k ? note_of(k) : "");
    CHECK_MSG(runs_times(c, "sh_b", 3.0f), "round %d: sh_b runs other code",
              round);
    CHECK(runs_times(b, "sh_a", 2.0f));
    hk_context_destroy(c);
  }
  hk_context_destroy(b);
}

int main(int argc, char **argv) {
  umask(022);
  if (argc == 4 && !strcmp(argv[1], "--race-child"))
    return race_child(argv[2], argv[3]);
  if (argc == 4 && !strcmp(argv[1], "--so-inplace-child"))
    return so_inplace_child(argv[2], argv[3]);
  /* hermetic: no plugin path, cache or compiler from the environment */
  unsetenv("HK_CC");
  unsetenv("HK_PLUGIN_PATH");
  unsetenv("HK_CACHE_DIR");
  const char *s = getenv("HK_SOURCE_DIR");
  if (s && *s) {
    snprintf(g_src, sizeof g_src, "%s", s);
  } else { /* tests/test_registry.c -> the tree */
    snprintf(g_src, sizeof g_src, "%s", __FILE__);
    char *t = strstr(g_src, "/tests/test_registry.c");
    if (t) *t = '\0';
    else snprintf(g_src, sizeof g_src, ".");
  }
  const char *b = getenv("HK_BINARY_DIR");
  snprintf(g_hk, sizeof g_hk, "%s/hk", b && *b ? b : ".");
  if (!mkdtemp(g_root)) CHECK_SKIP("cannot create a temp folder");
  chmod(g_root, 0700);
  g_have_cc = have_program("cc");
  g_verbose = getenv("HK_TEST_VERBOSE") && *getenv("HK_TEST_VERBOSE") != '0';
  if (!g_have_cc) printf("NOTE: no system compiler 'cc' in PATH\n");
  init_data();
  g_ref = malloc(NMAX * 8);
  g_got = malloc(NMAX * 8);
  if (!g_ref || !g_got) CHECK_SKIP("out of memory");

  char self[4096];
  ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
  self[sl > 0 ? sl : 0] = '\0';

  struct {
    const char *name;
    double t;
  } times[16];
  int nt = 0;
  double t0 = now_s(), t;
#define PART(label, call)         \
  do {                            \
    t = now_s();                  \
    call;                         \
    times[nt].name = label;       \
    times[nt++].t = now_s() - t;  \
  } while (0)
  PART("tiers", test_tiers());
  PART("auto", test_auto());
  PART("cache", test_cache());
  PART("cache race", test_cache_race(self));
  PART("bad files", test_bad_files());
  PART("bad .so", test_bad_so());
  PART("permissions", test_permissions());
  PART("prebuilt", test_prebuilt());
  PART("reload", test_reload());
  PART("threads (jit)", stress(HK_TIER_JIT, "stress_jit"));
  PART("threads (auto)", stress(HK_TIER_AUTO, "stress_auto"));
  PART("misc", test_misc());
  PART("shared objects", test_shared_objects());
#undef PART
  for (int i = 0; i < nt; i++) printf("%-16s %6.2f s\n", times[i].name, times[i].t);
  printf("%-16s %6.2f s\n", "total", now_s() - t0);

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
  if (getenv("HK_TEST_KEEP") && *getenv("HK_TEST_KEEP") != '0')
    printf("the test's files are kept in %s\n", g_root);
  else
    rm_rf(g_root); /* HK_TEST_KEEP=1 keeps them */
  CHECK_DONE();
}
