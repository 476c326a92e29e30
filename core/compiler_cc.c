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

extern char **environ;

/* Every build: C11, no C library, no stack protector (it imports
 * __stack_chk_fail), and the numeric model of every tier (abi.h:
 * HK_ABI_KERNEL_CFLAGS). The gcc-only --param is passed to any compiler:
 * clang, under -w, ignores it silently. */
#define COMMON_FLAGS                                                    \
  "-std=c11 -fPIC -shared -nostdlib -fno-stack-protector "              \
  HK_ABI_KERNEL_CFLAGS " " HK_ABI_KERNEL_CFLAGS_GCC " -w"

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

/* Runs argv with stdout and stderr captured into out; returns the exit
 * status (0..255), or -1 when it could not run (why in out), or -2 when it
 * was killed after timeout_s seconds. */
static int run_captured(char *const *argv, hku_buf *out, int timeout_s,
                        const _Atomic int *cancel) {
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
  pid_t pid;
  int err = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (err) {
    close(fds[0]);
    hku_buf_printf(out, "cannot run %s: %s\n", argv[0], strerror(err));
    return -1;
  }
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int killed = 0;
  for (;;) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    long left_ms = (long)timeout_s * 1000 -
                   ((t.tv_sec - t0.tv_sec) * 1000 +
                    (t.tv_nsec - t0.tv_nsec) / 1000000);
    if (left_ms <= 0 || (cancel && atomic_load(cancel))) {
      kill(pid, SIGKILL);
      killed = left_ms <= 0 ? 1 : 2;
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

static char *read_small(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char buf[8192];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  if (n == 0) return NULL;
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
      rc = run_captured(argv, &out, 30, NULL);
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

/* Runs cc on src, making so; the compiler's output goes to msgs. Returns
 * run_captured's status, or -1 when out of memory (said in msgs). */
static int run_cc(const hk_cc_t *cc, hk_purpose_t purpose, const char *extra,
                  char *const *srcs, size_t nsrc, const char *so,
                  hku_buf *msgs, int timeout_s, const _Atomic int *cancel) {
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
  argv[k++] = "-o";
  argv[k++] = (char *)so;
  for (size_t i = 0; i < nsrc; i++) argv[k++] = srcs[i];
  for (size_t i = 0; libs[i]; i++) argv[k++] = (char *)libs[i];
  argv[k] = NULL;
  int rc = run_captured(argv, msgs, timeout_s, cancel);
  free(argv);
  free_words(flags);
  return rc;
}

int hk__cc_build_texts(const hk_cc_t *cc, size_t ntext,
                       const char *const *texts, const size_t *lens,
                       const char *extra, const hk_compile_opts_t *o,
                       const char *path, hk_object_t *out, hku_buf *msgs,
                       hku_diags *d) {
  HK_ASSERT(ntext >= 1 && ntext <= 2);
  if (cc->why_not) {
    hku_diag_add(d, HKU_ERROR, path, 0, 0, "%s", cc->why_not);
    return HK_EUNSUPPORTED;
  }
  char dir[4096], src[2][4200], so[4200];
  snprintf(dir, sizeof dir, "%s/.hk-build-XXXXXX", cc->workdir);
  if (!mkdtemp(dir)) {
    hku_diag_add(d, HKU_ERROR, path, 0, 0,
                 "cannot create a build folder: %s", strerror(errno));
    return HK_EIO;
  }
  /* kernel.c first: the compiler's messages about it are located in the
   * kernel file (hkc_unit_report) */
  snprintf(src[0], sizeof src[0], "%s/kernel.c", dir);
  snprintf(src[1], sizeof src[1], "%s/kernel_2.c", dir);
  snprintf(so, sizeof so, "%s/kernel.so", dir);
  int rc = HK_OK;
  size_t written = 0;
  for (; written < ntext && rc == HK_OK; written++) {
    int fd = open(src[written], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
                  0600);
    int wrote =
        fd >= 0 && hku_write_all(fd, texts[written], lens[written]) == HK_OK;
    if (fd >= 0 && close(fd) != 0) wrote = 0; /* closed either way */
    if (!wrote) {
      hku_diag_add(d, HKU_ERROR, path, 0, 0, "cannot write %s: %s",
                   src[written], strerror(errno));
      rc = HK_EIO;
    }
  }
  char *srcs[2] = {src[0], src[1]};
  if (rc == HK_OK) {
    if (run_cc(cc, o->purpose, extra, srcs, ntext, so, msgs,
               o->timeout_s ? o->timeout_s : DEFAULT_TIMEOUT_S,
               o->cancel) != 0) {
      rc = msgs->oom ? HK_ENOMEM : HK_ECOMPILE;
    } else if (access(so, F_OK) != 0) {
      hku_diag_add(d, HKU_ERROR, path, 0, 0, "no object was built");
      rc = HK_ECOMPILE;
    } else {
      rc = hku_read_file(so, &out->image, &out->size, NULL, d);
    }
  }
  for (size_t i = 0; i < written; i++) unlink(src[i]);
  unlink(so);
  rmdir(dir);
  return rc;
}

int hk__cc_build_text(const hk_cc_t *cc, const char *text, size_t len,
                      const char *extra, const hk_compile_opts_t *o,
                      const char *path, hk_object_t *out, hku_buf *msgs,
                      hku_diags *d) {
  return hk__cc_build_texts(cc, 1, &text, &len, extra, o, path, out, msgs, d);
}

/* Builds u (hk__cc_build_text) and locates the compiler's complaints in
 * the kernel file (compiler.h: compile). */
static int cc_compile(const hk_compiler_t *c, const hkc_unit *u,
                      const hk_compile_opts_t *o, hk_object_t *out,
                      hku_diags *d) {
  const char *path = hkc_file_path(hkc_unit_file(u));
  hku_buf msgs = HKU_BUF_INIT;
  int rc = hk__cc_build_text(c->state, hkc_unit_text(u), hkc_unit_len(u),
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
