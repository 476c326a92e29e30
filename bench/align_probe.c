/* align_probe.c — does this CPU run the same loop at two speeds depending on
 * where it sits in memory? (Not built by CMake; see bench/README.md.)
 *
 * Eight copies of the add loop of bench/loops.c, identical machine code,
 * each shifted by 8 more bytes of padding from a 64-byte boundary. On the
 * AMD EPYC (Zen 3) machine the README's table comes from, the copies whose
 * loop straddles a 64-byte boundary take about 1.9 times as long at 1000
 * elements: the same effect that moves inline, registry and loop by up to
 * that much from one build of hk to the next. Build and run:
 *
 *   cc -O3 -fwrapv -ffp-contract=off -fno-math-errno bench/align_probe.c \
 *      -o /tmp/align_probe && /tmp/align_probe
 */
#define _POSIX_C_SOURCE 200112L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define ADD(K)                                                              \
  __attribute__((noinline, aligned(64))) static void add_##K(               \
      const float *x, const float *y, float *o, size_t n) {                 \
    __asm__ volatile(".fill " #K ", 1, 0x90");                     \
    for (size_t i = 0; i < n; i++) o[i] = x[i] + y[i];                      \
  }
ADD(0) ADD(8) ADD(16) ADD(24) ADD(32) ADD(40) ADD(48) ADD(56)

typedef void (*add_fn)(const float *, const float *, float *, size_t);
static add_fn const fns[] = {add_0,  add_8,  add_16, add_24,
                             add_32, add_40, add_48, add_56};

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* The first backward branch after the function's start: the loop's end,
 * found by scanning for the rel8 jne (0x75, negative offset) gcc emits. */
static const unsigned char *loop_end(const unsigned char *f) {
  for (int i = 0; i < 256; i++)
    if (f[i] == 0x75 && (signed char)f[i + 1] < 0 &&
        (signed char)f[i + 1] > -64)
      return f + i + 2;
  return NULL;
}

int main(void) {
  enum { N = 1000, CALLS = 2000, TRIES = 30 };
  float *x = aligned_alloc(64, 4096), *y = aligned_alloc(64, 4096),
        *o = aligned_alloc(64, 4096);
  if (!x || !y || !o) return 1;
  for (int i = 0; i < N; i++) {
    x[i] = (float)i;
    y[i] = 1;
  }
  printf("add loop over %d floats, best of %d x %d calls\n", N, TRIES, CALLS);
  for (int k = 0; k < 8; k++) {
    const unsigned char *f = (const unsigned char *)(uintptr_t)fns[k];
    const unsigned char *end = loop_end(f);
    double best = 1e300;
    for (int t = 0; t < TRIES; t++) {
      double t0 = now_ns();
      for (int c = 0; c < CALLS; c++) fns[k](x, y, o, N);
      double d = (now_ns() - t0) / CALLS;
      if (d < best) best = d;
    }
    if (end) {
      const unsigned char *start = end + (signed char)end[-1];
      int cross = ((uintptr_t)start >> 6) != ((uintptr_t)(end - 1) >> 6);
      printf("  padding %2d: loop at +0x%02x..+0x%02x mod 64  %7.1f ns  %s\n",
             k * 8, (unsigned)((uintptr_t)start & 63),
             (unsigned)((uintptr_t)(end - 1) & 63), best,
             cross ? "straddles a 64-byte boundary" : "");
    } else {
      printf("  padding %2d: %7.1f ns\n", k * 8, best);
    }
  }
  free(x);
  free(y);
  free(o);
  return 0;
}
