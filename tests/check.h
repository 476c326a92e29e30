/* check.h — the assertions every hk test uses (no framework, no timing).
 *
 * A test file is a plain program: it runs its checks, and CHECK_DONE()
 * returns 1 if any failed (ctest reports the failure lines on stderr), 0
 * otherwise. CHECK_SKIP() returns 77, which CMake registers as "skipped",
 * with the reason printed so that ctest -V shows why.
 */
#ifndef HK_TEST_CHECK_H
#define HK_TEST_CHECK_H

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

__attribute__((unused)) static int check_failures;
__attribute__((unused)) static int check_count;

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
