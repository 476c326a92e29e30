/* internal.h — what every internal module of hk shares: symbol visibility,
 * asserted preconditions, and the one internal error convention.
 *
 * The error convention (after libuv and SQLite), used by every fallible
 * internal function in common/, codegen/, core/ and tools/:
 *   - it returns int: HK_OK (0) or a negative HK_E* code (include/hk.h,
 *     HK_ERRNO_MAP); a function that makes an object returns the code and
 *     stores the object through its last-but-one out parameter;
 *   - the words for the user go into a hku_diags list (common/diag.h)
 *     passed as its last parameter, located (PATH:LINE:COL) when they are
 *     about a kernel file; a caller that only needs a line takes
 *     hku_diags_first();
 *   - where no diags list is passed, errno tells the cause (the system
 *     layer, fsutil.h);
 *   - public entry points turn the code and the diags into the thread's
 *     last error (hk__fail, core/context.c), and return the code.
 * Preconditions that a comment states ("load_lock held") are asserted.
 */
#ifndef HK_INTERNAL_H
#define HK_INTERNAL_H

#include <assert.h>
#include <stdint.h>

/* Internal symbols stay out of libhk's exported symbol table. */
#if defined(__GNUC__) && !defined(_WIN32)
#define HK_INTERNAL __attribute__((visibility("hidden")))
#else
#define HK_INTERNAL
#endif

/* A precondition or invariant; checked in debug builds (the sanitizer
 * suites of tools/test.sh), compiled out with NDEBUG. */
#define HK_ASSERT(cond) assert(cond)

/* The number of elements of a true array. */
#define HK_COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* One value of any hk element type: a scalar argument of hk_call, held
 * by the command (hk run) and the tests alike. */
typedef union hku_scalar {
  float f32;
  double f64;
  int8_t i8;
  int16_t i16;
  int32_t i32;
  int64_t i64;
  uint8_t u8;
  uint16_t u16;
  uint32_t u32;
  uint64_t u64;
} hku_scalar;

#endif /* HK_INTERNAL_H */
