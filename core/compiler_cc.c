/* compiler_cc.c — the system C compiler behind compiler.h: tier opt and
 * `hk build`, a shared object built from a unit of generated C.
 *
 * The compiler runs as a child process (posix_spawn, no shell) with its
 * output captured for error mapping. Its identity (--version output) is a
 * part of every cache key; running `cc --version` costs milliseconds, so it
 * is recorded in the cache folder, keyed by the executable's path, inode,
 * size and modification time, and re-run only when the compiler changes.
 */
#include "compiler_cc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "abi.h"
#include "fsutil.h"
#include "mathfns.h"
#include "sha256.h"
#include "threadpool.h"

extern char **environ;

/* Every build: C11, no C library, no stack protector (it imports
 * __stack_chk_fail), and the numeric model of every tier (abi.h:
 * HK_ABI_KERNEL_CFLAGS). A pointer made from a pointer to another type is
 * an error, as under libtcc (compiler_tcc.c) and in CUDA C++: a raw or
 * grid body's f16 buffer is uint16_t storage, and `const T *row = x;`
 * with T float read its bits as floats. (No -w: it silences that error
 * too. Warnings are not shown unless a compile fails; clang warns that it
 * does not use the gcc-only --param.) */
#define COMMON_FLAGS                                                    \
  "-std=c11 -fPIC -shared -nostdlib -fno-stack-protector "              \
  HK_ABI_KERNEL_CFLAGS " " HK_ABI_KERNEL_CFLAGS_GCC                     \
  " -Werror=incompatible-pointer-types"

/* How long a compile may take when the caller sets no deadline. */
#define DEFAULT_TIMEOUT_S 300

/* The vector width on a CPU with AVX-512 is the build's HK_VECTOR_WIDTH
 * (CMakeLists.txt: 512 unless set to 256), the stdlib's AVX-512 variants'
 * too, so that both tiers run the same code: bench/README.md, "Vector
 * width". */
#ifndef HK_VECTOR_WIDTH
#define HK_VECTOR_WIDTH 512
#endif
#define HK_STR2(x) #x
#define HK_STR(x) HK_STR2(x)
#if defined(__x86_64__)
#define NATIVE_FLAGS \
  " -march=native -mprefer-vector-width=" HK_STR(HK_VECTOR_WIDTH)
#else
#define NATIVE_FLAGS " -march=native"
#endif

const char *hk__cc_flags(hk_purpose_t purpose) {
  switch (purpose) {
    case HK_FOR_OPT:
    case HK_FOR_PREBUILT_NATIVE: return COMMON_FLAGS NATIVE_FLAGS;
    case HK_FOR_PREBUILT: return COMMON_FLAGS;
  }
  return COMMON_FLAGS;
}

/* What "fp": "fast" kernels allow beyond the flags of every build
 * (codegen.h: a unit is fast when all its CPU kernels are): contraction
 * into FMAs, signed overflow undefined, as in C (loops with int indices
 * vectorise), and reassociation (sums and dot products vectorise; NaN and
 * infinities keep their meaning, the sign of a zero may not). */
#define CONTRACT_FLAGS " -ffp-contract=fast -fno-wrapv"
#define FAST_FLAGS                                                        \
  CONTRACT_FLAGS " -fassociative-math -fno-signed-zeros -fno-trapping-math"

/* Math functions that are one rounding of one operation (instructions,
 * not algorithms): reassociation cannot change what they compute. */
static const char *const exact_math[] = {
    "fabs", "fmax",  "fmin",      "fma",  "copysign", "sqrt",
    "fdim", "floor", "ceil",      "trunc", "round",   "rint",
    "lrint", "llrint", "nearbyint", "lround", "llround", NULL};

/* Is the identifier p (n bytes) a math function (mathfns.h, double or
 * float) that is an algorithm? */
static int is_math_algorithm(const char *p, size_t n) {
  if (n && p[n - 1] == 'f' && is_math_algorithm(p, n - 1)) return 1;
  for (const char *const *e = exact_math; *e; e++)
    if (strlen(*e) == n && !memcmp(*e, p, n)) return 0;
#define NAMED(name, sig) \
  if (sizeof #name - 1 == n && !memcmp(#name, p, n)) return 1;
  HKC_MATH_FUNCTIONS(NAMED)
#undef NAMED
  return 0;
}

/* 1 when u's own code (outside the prelude) names a math function that is
 * an algorithm: hk's are inlined into the kernel's loop, and their range
 * reductions round with exact steps ((x + 1.5 * 2^23) - 1.5 * 2^23) that
 * reassociation folds away, so such a unit gets contraction only. */
static int names_math(const hkc_unit *u) {
  const char *t = hkc_unit_text(u);
  size_t n = hkc_unit_len(u), off, len;
  hkc_unit_prelude(u, &off, &len);
  for (size_t i = 0; i < n;) {
    if (i == off && len) {
      i += len;
      continue;
    }
    int start = (t[i] >= 'a' && t[i] <= 'z') || (t[i] >= 'A' && t[i] <= 'Z') ||
                t[i] == '_';
    if (!start) {
      i++;
      continue;
    }
    size_t j = i;
    while (j < n && ((t[j] >= 'a' && t[j] <= 'z') ||
                     (t[j] >= 'A' && t[j] <= 'Z') ||
                     (t[j] >= '0' && t[j] <= '9') || t[j] == '_'))
      j++;
    if (is_math_algorithm(t + i, j - i)) return 1;
    i = j;
  }
  return 0;
}

const char *hk__cc_unit_flags(const hkc_unit *u) {
  if (!hkc_file_fp_fast(hkc_unit_file(u), HK_TARGET_CPU)) return "";
  return names_math(u) ? CONTRACT_FLAGS : FAST_FLAGS;
}

/* Libraries after the sources: libm for the math functions, libc for
 * memcpy and friends, libgcc for helpers gcc may call. The import check
 * (elfcheck) decides what the object may actually use. */
static const char *const libs[] = {"-lm", "-lc", "-lgcc", NULL};

static char **split_words(const char *s) {
  size_t n = 0, cap = 8;
  char **v = calloc(cap, sizeof *v);
  while (v && *s) {
    while (*s == ' ' || *s == '\t') s++;
    if (!*s) break;
    const char *e = s;
    while (*e && *e != ' ' && *e != '\t') e++;
    if (n + 2 > cap) {
      char **nv = realloc(v, (cap *= 2) * sizeof *v);
      if (!nv) break;
      v = nv;
    }
    v[n] = strndup(s, (size_t)(e - s));
    if (!v[n]) break;
    v[++n] = NULL;
    s = e;
  }
  return v;
}

static void free_words(char **v) {
  for (size_t i = 0; v && v[i]; i++) free(v[i]);
  free(v);
}

/* The executable a command word names: itself when it holds a '/', else
 * the first match in PATH. malloc'ed, or NULL. */
static char *which(const char *word) {
  if (strchr(word, '/')) return access(word, X_OK) == 0 ? strdup(word) : NULL;
  const char *path = getenv("PATH");
  if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
  for (const char *p = path; *p;) {
    const char *e = strchr(p, ':');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    char buf[4096];
    if (n && n + strlen(word) + 2 < sizeof buf) {
      snprintf(buf, sizeof buf, "%.*s/%s", (int)n, p, word);
      struct stat st;
      if (stat(buf, &st) == 0 && S_ISREG(st.st_mode) && access(buf, X_OK) == 0)
        return strdup(buf);
    }
    p += n + (e ? 1 : 0);
  }
  return NULL;
}

/* ---- Running a child ------------------------------------------------------ */

/* The compilers running now (their process groups), for hk__cc_interrupt:
 * slots of lock-free atomics, which a signal handler may read. A compile
 * beyond the slots is still stopped by the flag, within 50 ms. */
#define CHILD_SLOTS 64
static _Atomic pid_t g_children[CHILD_SLOTS];
static _Atomic int g_interrupted;

static void child_track(pid_t pid, int on) {
  for (int i = 0; i < CHILD_SLOTS; i++) {
    pid_t want = on ? 0 : pid;
    if (atomic_compare_exchange_strong(&g_children[i], &want, on ? pid : 0))
      return;
  }
}

HK_API int hk_stop_compilers(void) { return hk__cc_interrupt(); }

int hk__cc_interrupt(void) {
  atomic_store(&g_interrupted, 1);
  int n = 0;
  for (int i = 0; i < CHILD_SLOTS; i++) {
    pid_t p = atomic_load(&g_children[i]);
    if (p > 0 && kill(-p, SIGKILL) == 0) n++;
  }
  return n;
}

/* environ with TMPDIR=dir in place of any TMPDIR (malloc'ed: the array
 * and that one string), or NULL when out of memory. */
static char **env_with_tmpdir(const char *dir) {
  size_t n = 0;
  while (environ[n]) n++;
  char **env = calloc(n + 2, sizeof *env);
  size_t len = strlen(dir) + sizeof "TMPDIR=";
  char *t = malloc(len);
  if (!env || !t) {
    free(env);
    free(t);
    return NULL;
  }
  snprintf(t, len, "TMPDIR=%s", dir);
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (strncmp(environ[i], "TMPDIR=", 7)) env[k++] = environ[i];
  env[k++] = t;
  env[k] = NULL;
  return env;
}

static void env_free(char **env) {
  if (!env) return;
  for (size_t i = 0; env[i]; i++)
    if (!strncmp(env[i], "TMPDIR=", 7)) free(env[i]); /* ours */
  free(env);
}

/* Runs argv with stdout and stderr captured into out; returns the exit
 * status (0..255), or -1 when it could not run (why in out), or -2 when it
 * was killed after timeout_s seconds. tmpdir, when not NULL, is the
 * child's TMPDIR (a compiler's temporary files go there, not to a shared
 * folder where a killed one would leave them). The child leads a process
 * group of its own, so that a kill reaches what it started (cc1, as, a
 * wrapper's children), not the driver alone. */
static int run_captured(char *const *argv, hku_buf *out, int timeout_s,
                        const _Atomic int *cancel, const char *tmpdir) {
  if (atomic_load(&g_interrupted)) {
    hku_buf_printf(out, "%s: not run: interrupted\n", argv[0]);
    return -2;
  }
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    hku_buf_printf(out, "cannot create a pipe: %s\n", strerror(errno));
    return -1;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  posix_spawnattr_t at;
  posix_spawnattr_init(&at);
  posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&at, 0);
  char **env = tmpdir ? env_with_tmpdir(tmpdir) : environ;
  pid_t pid;
  int err = env ? posix_spawnp(&pid, argv[0], &fa, &at, argv, env) : ENOMEM;
  if (env != environ) env_free(env);
  posix_spawnattr_destroy(&at);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (err) {
    close(fds[0]);
    hku_buf_printf(out, "cannot run %s: %s\n", argv[0], strerror(err));
    return -1;
  }
  child_track(pid, 1);
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int killed = 0;
  for (;;) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    long left_ms = (long)timeout_s * 1000 -
                   ((t.tv_sec - t0.tv_sec) * 1000 +
                    (t.tv_nsec - t0.tv_nsec) / 1000000);
    if (left_ms <= 0 || (cancel && atomic_load(cancel)) ||
        atomic_load(&g_interrupted)) {
      kill(-pid, SIGKILL); /* the group: the driver and what it started */
      killed = left_ms <= 0 ? 1 : atomic_load(&g_interrupted) ? 3 : 2;
      break;
    }
    struct pollfd p = {fds[0], POLLIN, 0};
    int r = poll(&p, 1, (int)(left_ms > 50 ? 50 : left_ms));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    char buf[4096];
    ssize_t n = read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (out->len < (1u << 20)) hku_buf_putn(out, buf, (size_t)n);
  }
  close(fds[0]);
  int status;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  child_track(pid, 0);
  /* a group the handler killed ends the compile as an interrupt */
  if (!killed && atomic_load(&g_interrupted)) killed = 3;
  if (killed == 3) {
    hku_buf_printf(out, "%s: interrupted\n", argv[0]);
    return -2;
  }
  if (killed == 1) {
    hku_buf_printf(out, "%s: killed after %d seconds\n", argv[0], timeout_s);
    return -2;
  }
  if (killed) {
    hku_buf_printf(out, "%s: cancelled\n", argv[0]);
    return -2;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  hku_buf_printf(out, "%s: terminated by signal %d\n", argv[0],
                 WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  return 255;
}

/* ---- Identity ------------------------------------------------------------------ */

/* The text of the compiler identity file path (a regular file of 1 to
 * 8191 bytes, no NUL), or NULL: anything else there (a FIFO, which an
 * open would wait on forever; a link to a device; a large or binary file)
 * is not ours, and the probe runs cc --version and replaces it. */
static char *read_small(const char *path) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return NULL;
  struct stat st;
  char buf[8192];
  ssize_t n = -1;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
      st.st_size < (off_t)sizeof buf)
    n = read(fd, buf, (size_t)st.st_size);
  close(fd);
  if (n <= 0 || n != st.st_size || memchr(buf, '\0', (size_t)n)) return NULL;
  buf[n] = '\0';
  return strdup(buf);
}

/* "model name" and "flags" of the first CPU: what -march=native sees. */
static char *cpu_identity(void) {
  FILE *f = fopen("/proc/cpuinfo", "r");
  hku_buf b = HKU_BUF_INIT;
  if (f) {
    char line[8192];
    int got = 0;
    while (got < 2 && fgets(line, sizeof line, f)) {
      if (!strncmp(line, "model name", 10) || !strncmp(line, "flags", 5)) {
        hku_buf_put(&b, line);
        got++;
      }
    }
    fclose(f);
  }
  if (!b.len) hku_buf_put(&b, "unknown cpu\n");
  return hku_buf_take(&b);
}

void hk__cc_probe(const char *spec, const char *state_dir, hk_cc_t *cc) {
  memset(cc, 0, sizeof *cc);
  if (!spec) spec = getenv("HK_CC");
  if (!spec || !*spec) spec = "cc";
  cc->argv = split_words(spec);
  cc->cpu = cpu_identity();
  const char *base = state_dir;
  if (!base) base = getenv("TMPDIR");
  if (!base || !*base) base = "/tmp";
  cc->workdir = strdup(base);
  if (!cc->argv || !cc->argv[0]) {
    cc->why_not = strdup("HK_CC is empty");
    return;
  }
  cc->path = which(cc->argv[0]);
  if (!cc->path) {
    char msg[512];
    snprintf(msg, sizeof msg, "no system compiler: '%s' was not found%s",
             cc->argv[0], getenv("HK_CC") ? " (HK_CC)" : " (set HK_CC)");
    cc->why_not = strdup(msg);
    return;
  }
  /* Which executables, exactly: each word that names one (ccache gcc). */
  hku_buf key = HKU_BUF_INIT;
  for (size_t i = 0; cc->argv[i]; i++) {
    char *p = i ? which(cc->argv[i]) : strdup(cc->path);
    struct stat st;
    if (p && stat(p, &st) == 0)
      hku_buf_printf(&key, "%s %llu %lld %lld.%09ld\n", p,
                     (unsigned long long)st.st_ino, (long long)st.st_size,
                     (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
    else
      hku_buf_printf(&key, "%s\n", cc->argv[i]);
    free(p);
  }
  char idfile[4096] = "";
  if (state_dir) {
    uint8_t d[32];
    char hex[65];
    hk__sha256(hku_buf_str(&key), key.len, d);
    hk__hex(d, 16, hex);
    snprintf(idfile, sizeof idfile, "%s/cc-%s.id", state_dir, hex);
    cc->identity = read_small(idfile);
  }
  if (!cc->identity) {
    size_t n = 0;
    while (cc->argv[n]) n++;
    char **argv = calloc(n + 2, sizeof *argv);
    hku_buf out = HKU_BUF_INIT;
    int rc = -1;
    if (argv) {
      memcpy(argv, cc->argv, n * sizeof *argv);
      argv[n] = "--version";
      rc = run_captured(argv, &out, 30, NULL, NULL);
      free(argv);
    }
    if (rc == 0 && out.len) {
      cc->identity = hku_buf_take(&out);
      if (*idfile) /* best effort: without it the next probe runs cc */
        (void)hku_write_file_atomic(idfile, cc->identity,
                                    strlen(cc->identity), 0600, NULL);
    } else {
      char msg[1024];
      snprintf(msg, sizeof msg, "the system compiler '%s' does not work: %s",
               spec, out.len ? hku_buf_str(&out) : "no output");
      cc->why_not = strdup(msg);
    }
    hku_buf_free(&out);
  }
  hku_buf_free(&key);
}

void hk__cc_free(hk_cc_t *cc) {
  free_words(cc->argv);
  free(cc->path);
  free(cc->identity);
  free(cc->cpu);
  free(cc->why_not);
  free(cc->workdir);
  memset(cc, 0, sizeof *cc);
}

/* ---- The compiler.h adapter ------------------------------------------------ */

/* Runs cc on srcs, making so (compile_only: the object file so of the one
 * C file srcs[0]; else a shared object of C or object files); the
 * compiler's output goes to msgs. Returns run_captured's status, or -1
 * when out of memory (said in msgs). */
static int run_cc(const hk_cc_t *cc, hk_purpose_t purpose, const char *extra,
                  char *const *srcs, size_t nsrc, int compile_only,
                  const char *so, hku_buf *msgs, int timeout_s,
                  const _Atomic int *cancel) {
  /* the compiler's temporary files in the build folder (so's) */
  char tmpdir[4200];
  snprintf(tmpdir, sizeof tmpdir, "%s", so);
  char *slash = strrchr(tmpdir, '/');
  if (slash) *slash = '\0';
  const char *td = slash ? tmpdir : NULL;
  char all[1024];
  snprintf(all, sizeof all, "%s%s", hk__cc_flags(purpose), extra);
  char **flags = split_words(all);
  size_t n = 0, nf = 0;
  while (cc->argv[n]) n++;
  while (flags && flags[nf]) nf++;
  char **argv = calloc(n + nf + nsrc + 8, sizeof *argv);
  if (!flags || !argv) {
    free_words(flags);
    free(argv);
    hku_buf_put(msgs, "out of memory\n");
    return -1;
  }
  size_t k = 0;
  for (size_t i = 0; i < n; i++) argv[k++] = cc->argv[i];
  for (size_t i = 0; i < nf; i++) argv[k++] = flags[i];
  if (compile_only) argv[k++] = "-c";
  argv[k++] = "-o";
  argv[k++] = (char *)so;
  for (size_t i = 0; i < nsrc; i++) argv[k++] = srcs[i];
  for (size_t i = 0; libs[i] && !compile_only; i++)
    argv[k++] = (char *)libs[i];
  argv[k] = NULL;
  int rc = run_captured(argv, msgs, timeout_s, cancel, td);
  free(argv);
  free_words(flags);
  return rc;
}

int hk__cc_jobs(void) {
  int v = hk__env_count(getenv("HK_JOBS"), HK_MAX_JOBS);
  if (v > 0) return v;
  int n = hk__cpu_count();
  return n < HK_MAX_JOBS ? n : HK_MAX_JOBS;
}

/* Removes the build folder dir and what is in it: the sources, objects
 * and shared object, and the temporary files of a compiler that was
 * killed (its TMPDIR: run_cc). */
static void remove_build_dir(const char *dir) {
  hku_remove_flat_dir(AT_FDCWD, dir);
}

/* One compile of a build of several C files: kernel_K.c to kernel_K.o. */
typedef struct cc_part {
  char src[4200], obj[4200];
  hku_buf msgs;
  int status; /* run_cc's */
} cc_part;

typedef struct cc_run {
  const hk_cc_t *cc;
  const char *extra;
  const hk_compile_opts_t *o;
  cc_part *parts;
  size_t n;
  _Atomic size_t next; /* the next part to take */
} cc_run;

static void *part_thread(void *arg) {
  cc_run *r = arg;
  int timeout_s = r->o->timeout_s ? r->o->timeout_s : DEFAULT_TIMEOUT_S;
  for (size_t i; (i = atomic_fetch_add(&r->next, 1)) < r->n;) {
    cc_part *p = &r->parts[i];
    char *src[1] = {p->src};
    p->status = run_cc(r->cc, r->o->purpose, r->extra, src, 1, 1, p->obj,
                       &p->msgs, timeout_s, r->o->cancel);
  }
  return NULL;
}

/* Compiles each part on up to jobs threads at once (this one among
 * them), each a compiler process. */
static void compile_parts(cc_run *r, int jobs) {
  size_t nt = jobs < 1 ? 1 : jobs > HK_MAX_JOBS ? HK_MAX_JOBS : (size_t)jobs;
  if (nt > r->n) nt = r->n;
  pthread_t t[HK_MAX_JOBS];
  size_t started = 0;
  while (started + 1 < nt &&
         pthread_create(&t[started], NULL, part_thread, r) == 0)
    started++;
  part_thread(r);
  for (size_t i = 0; i < started; i++) pthread_join(t[i], NULL);
}

int hk__cc_build_texts(const hk_cc_t *cc, size_t ntext,
                       const char *const *texts, const size_t *lens,
                       const char *extra, const hk_compile_opts_t *o,
                       const char *path, hk_object_t *out, hku_buf *msgs,
                       hku_diags *d) {
  HK_ASSERT(ntext >= 1);
  if (cc->why_not) {
    hku_diag_add(d, HKU_ERROR, path, 0, 0, "%s", cc->why_not);
    return HK_EUNSUPPORTED;
  }
  char dir[4096], so[4200];
  snprintf(dir, sizeof dir, "%s/.hk-build-XXXXXX", cc->workdir);
  cc_part *parts = calloc(ntext, sizeof *parts);
  char **objs = calloc(ntext, sizeof *objs);
  if (!parts || !objs) {
    free(parts);
    free(objs);
    d->oom = 1;
    return HK_ENOMEM;
  }
  if (!mkdtemp(dir)) {
    hku_diag_add(d, HKU_ERROR, path, 0, 0,
                 "cannot create a build folder: %s", strerror(errno));
    free(parts);
    free(objs);
    return HK_EIO;
  }
  /* kernel.c first: the compiler's messages about it are located in the
   * kernel file (hkc_unit_report) */
  snprintf(so, sizeof so, "%s/kernel.so", dir);
  int rc = HK_OK;
  size_t written = 0;
  for (; written < ntext && rc == HK_OK; written++) {
    cc_part *p = &parts[written];
    p->msgs = (hku_buf)HKU_BUF_INIT;
    if (written)
      snprintf(p->src, sizeof p->src, "%s/kernel_%zu.c", dir, written + 1);
    else
      snprintf(p->src, sizeof p->src, "%s/kernel.c", dir);
    snprintf(p->obj, sizeof p->obj, "%.*s.o", (int)strlen(p->src) - 2,
             p->src);
    objs[written] = ntext == 1 ? p->src : p->obj;
    int fd = open(p->src, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    int wrote =
        fd >= 0 && hku_write_all(fd, texts[written], lens[written]) == HK_OK;
    if (fd >= 0 && close(fd) != 0) wrote = 0; /* closed either way */
    if (!wrote) {
      hku_diag_add(d, HKU_ERROR, path, 0, 0, "cannot write %s: %s", p->src,
                   strerror(errno));
      rc = HK_EIO;
    }
  }
  if (rc == HK_OK && ntext > 1) { /* each its own process, then one link */
    cc_run r = {.cc = cc, .extra = extra, .o = o, .parts = parts, .n = ntext};
    atomic_init(&r.next, 0);
    compile_parts(&r, o->jobs);
    for (size_t i = 0; i < ntext; i++)
      if (parts[i].status != 0) {
        hku_buf_putn(msgs, hku_buf_str(&parts[i].msgs), parts[i].msgs.len);
        if (parts[i].msgs.oom) msgs->oom = 1;
        rc = HK_ECOMPILE;
      }
  }
  if (rc == HK_OK) {
    if (run_cc(cc, o->purpose, extra, objs, ntext, 0, so, msgs,
               o->timeout_s ? o->timeout_s : DEFAULT_TIMEOUT_S,
               o->cancel) != 0) {
      rc = HK_ECOMPILE;
    } else if (access(so, F_OK) != 0) {
      hku_diag_add(d, HKU_ERROR, path, 0, 0, "no object was built");
      rc = HK_ECOMPILE;
    } else {
      rc = hku_read_file(so, &out->image, &out->size, NULL, d);
    }
  }
  if (rc == HK_ECOMPILE && msgs->oom) rc = HK_ENOMEM;
  for (size_t i = 0; i < written; i++) hku_buf_free(&parts[i].msgs);
  free(parts);
  free(objs);
  remove_build_dir(dir);
  return rc;
}

int hk__cc_build_text(const hk_cc_t *cc, const char *text, size_t len,
                      const char *extra, const hk_compile_opts_t *o,
                      const char *path, hk_object_t *out, hku_buf *msgs,
                      hku_diags *d) {
  return hk__cc_build_texts(cc, 1, &text, &len, extra, o, path, out, msgs, d);
}

/* What compiling an instance's code costs, roughly: measured with gcc -O3,
 * an instance of the stdlib's elementwise files takes 65 ms, one of the
 * reductions 0.5 to 1.4 s, more with its size, but not in proportion (a
 * 110 KB one 1.1 s, an 11 KB one 0.5 to 1.4 s: what it inlines from the
 * prelude counts more). So an instance weighs one, plus one per 64 KB of
 * its code; the parts are taken by the processes as each finishes, which
 * evens out what the weights miss. */
#define PART_BYTES_PER_WEIGHT (64 * 1024)

static size_t weight_of(const hkc_unit *u, int i) {
  size_t off, len;
  hkc_unit_instance_code(u, i, &off, &len);
  return PART_BYTES_PER_WEIGHT + len;
}

int hk__cc_nparts(const hkc_unit *u, int jobs) {
  int ni = hkc_unit_ninstances(u);
  if (jobs < 2) return 1;
  int n = ni / HK_CC_PART_MIN;
  if (n > HK_CC_PARTS_PER_JOB * jobs) n = HK_CC_PARTS_PER_JOB * jobs;
  return n < 1 ? 1 : n;
}

int hk__cc_split(const hkc_unit *u, int n, const char *pre, const char *post,
                 hku_buf *parts) {
  int ni = hkc_unit_ninstances(u), i = 0, oom = 0;
  HK_ASSERT(n >= 1 && n <= ni);
  const char *text = hkc_unit_text(u);
  size_t start, end, l, total = 0, sofar = 0;
  hkc_unit_instance_code(u, 0, &start, &l);
  hkc_unit_instance_code(u, ni - 1, &end, &l);
  end += l;
  for (int k = 0; k < ni; k++) total += weight_of(u, k);
  for (int p = 0; p < n; p++) {
    hku_buf *b = &parts[p];
    if (pre) hku_buf_put(b, pre);
    hku_buf_putn(b, text, start);
    size_t from, to;
    hkc_unit_instance_code(u, i, &from, &l);
    to = from + l;
    sofar += weight_of(u, i++);
    /* more while the parts so far weigh less than their share, leaving an
     * instance for each part after this one; the last takes the rest */
    while (i < ni - (n - 1 - p) &&
           (p == n - 1 || sofar * (size_t)n < total * (size_t)(p + 1))) {
      size_t at;
      hkc_unit_instance_code(u, i, &at, &l);
      to = at + l;
      sofar += weight_of(u, i++);
    }
    hku_buf_putn(b, text + from, to - from);
    if (p == 0) hku_buf_putn(b, text + end, hkc_unit_len(u) - end);
    if (post) hku_buf_put(b, post);
    oom |= b->oom;
  }
  return oom ? -1 : 0;
}

int hk__cc_build_parts(const hk_cc_t *cc, hku_buf *parts, int n,
                       const char *extra, const hk_compile_opts_t *o,
                       const char *path, hk_object_t *out, hku_buf *msgs,
                       hku_diags *d) {
  const char **texts = calloc((size_t)n, sizeof *texts);
  size_t *lens = calloc((size_t)n, sizeof *lens);
  int rc = texts && lens ? HK_OK : HK_ENOMEM;
  for (int p = 0; p < n && rc == HK_OK; p++) {
    if (parts[p].oom) rc = HK_ENOMEM;
    texts[p] = hku_buf_str(&parts[p]);
    lens[p] = parts[p].len;
  }
  if (rc == HK_OK)
    rc = hk__cc_build_texts(cc, (size_t)n, texts, lens, extra, o, path, out,
                            msgs, d);
  else
    d->oom = 1;
  free(texts);
  free(lens);
  return rc;
}

/* Builds u cut into n parts (hk__cc_split), each compiled by a process of
 * its own. As hk__cc_build_text. */
static int build_split(const hk_cc_t *cc, const hkc_unit *u, int n,
                       const hk_compile_opts_t *o, const char *path,
                       hk_object_t *out, hku_buf *msgs, hku_diags *d) {
  hku_buf *parts = calloc((size_t)n, sizeof *parts);
  if (!parts) {
    d->oom = 1;
    return HK_ENOMEM;
  }
  for (int p = 0; p < n; p++) parts[p] = (hku_buf)HKU_BUF_INIT;
  int rc = hk__cc_split(u, n, NULL, NULL, parts);
  if (rc) {
    d->oom = 1;
    rc = HK_ENOMEM;
  } else {
    rc = hk__cc_build_parts(cc, parts, n, hk__cc_unit_flags(u), o, path, out,
                            msgs, d);
  }
  for (int p = 0; p < n; p++) hku_buf_free(&parts[p]);
  free(parts);
  return rc;
}

/* Builds u (hk__cc_build_text), a big unit in parts on o->jobs processes
 * at once, and locates the compiler's complaints in the kernel file
 * (compiler.h: compile). The lines of a part are not the unit's: when the
 * parts do not compile, the unit is compiled whole to say why. */
static int cc_compile(const hk_compiler_t *c, const hkc_unit *u,
                      const hk_compile_opts_t *o, hk_object_t *out,
                      hku_diags *d) {
  const hk_cc_t *cc = c->state;
  const char *path = hkc_file_path(hkc_unit_file(u));
  hku_buf msgs = HKU_BUF_INIT;
  int rc, n = hk__cc_nparts(u, o->jobs);
  if (n > 1 && !cc->why_not) {
    hku_diags mine = HKU_DIAGS_INIT;
    rc = build_split(cc, u, n, o, path, out, &msgs, &mine);
    int done = rc != HK_ECOMPILE || (o->cancel && atomic_load(o->cancel));
    if (done) hku_diags_move(d, &mine);
    if (mine.oom) d->oom = 1;
    hku_diags_free(&mine);
    hku_buf_free(&msgs);
    if (done) return rc;
    msgs = (hku_buf)HKU_BUF_INIT;
  }
  rc = hk__cc_build_text(cc, hkc_unit_text(u), hkc_unit_len(u),
                         hk__cc_unit_flags(u), o, path, out, &msgs, d);
  if (rc == HK_ECOMPILE && msgs.len &&
      !hkc_unit_report(u, hku_buf_str(&msgs), c->name, d))
    hku_diag_add(d, HKU_ERROR, path, 0, 0, "%s", hku_buf_str(&msgs));
  hku_buf_free(&msgs);
  return rc;
}

hk_compiler_t hk__compiler_cc(const hk_cc_t *cc) {
  return (hk_compiler_t){"cc", cc_compile, hk__object_release_image, cc};
}
