/* check.h — the assertions every hk test uses, and the helpers the tests
 * would otherwise copy (no framework, no timing).
 *
 * A test is a plain program: it runs its checks, and CHECK_DONE() returns 1
 * if any failed (ctest reports the failure lines on stderr), 0 otherwise.
 * CHECK_SKIP() returns 77, which CMake registers as "skipped", with the
 * reason printed so that ctest -V shows why. A program may be several files
 * (the registry's tests share tests/registry_fixture.c): the counters and
 * the log are one per program, whichever file checks.
 */
#ifndef HK_TEST_CHECK_H
#define HK_TEST_CHECK_H

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

/* One pair per program, even when its checks are in several files: weak
 * definitions, of which the linker keeps one. */
__attribute__((weak)) int check_failures;
__attribute__((weak)) int check_count;

#define CHECK(cond)                                                        \
  do {                                                                     \
    check_count++;                                                         \
    if (!(cond)) {                                                         \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__,     \
              #cond);                                                      \
      check_failures++;                                                    \
    }                                                                      \
  } while (0)

#define CHECK_MSG(cond, ...)                                               \
  do {                                                                     \
    check_count++;                                                         \
    if (!(cond)) {                                                         \
      fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__,     \
              #cond);                                                      \
      fprintf(stderr, __VA_ARGS__);                                        \
      fputc('\n', stderr);                                                 \
      check_failures++;                                                    \
    }                                                                      \
  } while (0)

#define CHECK_INT_EQ(a, b)                                                 \
  do {                                                                     \
    long long check_a_ = (long long)(a), check_b_ = (long long)(b);        \
    CHECK_MSG(check_a_ == check_b_, "%lld != %lld", check_a_, check_b_);   \
  } while (0)

#define CHECK_STR_EQ(a, b)                                                 \
  do {                                                                     \
    const char *check_a_ = (a), *check_b_ = (b);                           \
    CHECK_MSG(check_a_ && check_b_ && strcmp(check_a_, check_b_) == 0,     \
              "\"%s\" != \"%s\"", check_a_ ? check_a_ : "(null)",          \
              check_b_ ? check_b_ : "(null)");                             \
  } while (0)

#define CHECK_CONTAINS(hay, needle)                                        \
  do {                                                                     \
    const char *check_h_ = (hay), *check_n_ = (needle);                    \
    CHECK_MSG(check_h_ && strstr(check_h_, check_n_) != NULL,              \
              "\"%s\" does not contain \"%s\"",                            \
              check_h_ ? check_h_ : "(null)", check_n_);                   \
  } while (0)

/* |a - b| <= atol + rtol * |b|, with NaNs equal to NaNs and infinities
 * equal to themselves. */
static inline int check_close(double a, double b, double rtol, double atol) {
  if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
  if (isinf(a) || isinf(b)) return a == b;
  return fabs(a - b) <= atol + rtol * fabs(b);
}

/* ---- Helpers the tests share ------------------------------------------ */

/* One value of any hk type (the scalars of hk_call's args). */
typedef hku_scalar check_scalar_t;

/* The whole file at path, with a NUL after its *n bytes (malloc'd; the
 * caller frees it); NULL when it cannot be read. */
static inline char *check_read_file(const char *path, size_t *n) {
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

/* The source tree, into buf: given when it is non-empty (an argument, or
 * $HK_SOURCE_DIR, which ctest sets), else the tree this header is in, else
 * ".". */
static inline void check_source_dir(char *buf, size_t n, const char *given) {
  if (given && *given) {
    snprintf(buf, n, "%s", given);
    return;
  }
  snprintf(buf, n, "%s", __FILE__);
  char *t = strstr(buf, "/tests/check.h");
  if (t) *t = '\0';
  else snprintf(buf, n, ".");
}

/* mkdir path (mode 0700); a folder already there is fine. */
static inline void check_make_dir(const char *path) {
  int ok = mkdir(path, 0700) == 0 || errno == EEXIST;
  CHECK_MSG(ok, "mkdir %s: %s", path, strerror(errno));
}

static inline int check_rm_one(const char *path, const struct stat *st,
                               int flag, struct FTW *f) {
  (void)st;
  (void)f;
  if (flag == FTW_DP) return rmdir(path) != 0;
  return unlink(path) != 0;
}

/* rm -rf path (symbolic links are removed, never followed). */
static inline void check_rm_rf(const char *path) {
  nftw(path, check_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* The context log: check_log is an hk_options_t.log callback that appends
 * each message and a newline to one buffer per program (hk calls it from
 * its own threads too); check_log_has and check_log_clear read and empty
 * it. */
__attribute__((weak)) pthread_mutex_t check_log_lock =
    PTHREAD_MUTEX_INITIALIZER;
__attribute__((weak)) char check_log_buf[65536];

static inline void check_log(void *user, const char *message) {
  (void)user;
  pthread_mutex_lock(&check_log_lock);
  size_t l = strlen(check_log_buf);
  snprintf(check_log_buf + l, sizeof check_log_buf - l, "%s\n", message);
  pthread_mutex_unlock(&check_log_lock);
}

static inline int check_log_has(const char *needle) {
  pthread_mutex_lock(&check_log_lock);
  int r = strstr(check_log_buf, needle) != NULL;
  pthread_mutex_unlock(&check_log_lock);
  return r;
}

static inline void check_log_clear(void) {
  pthread_mutex_lock(&check_log_lock);
  check_log_buf[0] = '\0';
  pthread_mutex_unlock(&check_log_lock);
}

/* A copy of the log, for messages (a static buffer: one use at a time). */
static inline const char *check_log_text(void) {
  static char copy[sizeof check_log_buf];
  pthread_mutex_lock(&check_log_lock);
  memcpy(copy, check_log_buf, sizeof copy);
  pthread_mutex_unlock(&check_log_lock);
  return copy;
}

#define CHECK_SKIP(...)                                                    \
  do {                                                                     \
    printf("SKIPPED: ");                                                   \
    printf(__VA_ARGS__);                                                   \
    printf("\n");                                                          \
    return 77;                                                             \
  } while (0)

#define CHECK_DONE()                                                       \
  do {                                                                     \
    if (check_failures) {                                                  \
      fprintf(stderr, "%d of %d checks failed\n", check_failures,          \
              check_count);                                                \
      return 1;                                                            \
    }                                                                      \
    printf("%d checks passed\n", check_count);                             \
    return 0;                                                              \
  } while (0)

#endif /* HK_TEST_CHECK_H */
