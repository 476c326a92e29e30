/* bench_inline.c — the inline stdlib against the hand-written loop.
 *
 * Measures what a call to a typed stdlib function (hk_add_f32, ...) costs
 * next to the same loop written by hand and compiled with the library's
 * kernel flags. Median of repeated samples, each long enough to read the
 * clock meaningfully; inputs rotate among buffers so small sizes are not
 * always served from a hot L1. Prints a table; asserts nothing. Single
 * thread unless --threads N is given.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hk.h"

#define SAMPLES 21

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static void clobber(void) { __asm__ volatile("" ::: "memory"); }

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The hand-written loops: what a user would write. */
__attribute__((noinline)) static void loop_add(const float *x, const float *y,
                                               float *out, size_t n) {
  for (size_t i = 0; i < n; i++) out[i] = x[i] + y[i];
}
__attribute__((noinline)) static void loop_relu(const float *x, float *out,
                                                size_t n) {
  for (size_t i = 0; i < n; i++) out[i] = x[i] < 0 ? 0.0f : x[i];
}
__attribute__((noinline)) static float loop_sum(const float *x, size_t n) {
  float s = 0;
  for (size_t i = 0; i < n; i++) s += x[i];
  return s;
}

typedef enum { ADD_LOOP, ADD_HK, RELU_LOOP, RELU_HK, SUM_LOOP, SUM_HK } variant;

#define NBUF 8

static float *bufs[NBUF][3];

static void run(variant v, size_t n, int b) {
  float *x = bufs[b][0], *y = bufs[b][1], *o = bufs[b][2];
  switch (v) {
    case ADD_LOOP: loop_add(x, y, o, n); break;
    case ADD_HK: hk_add_f32(x, y, o, n); break;
    case RELU_LOOP: loop_relu(x, o, n); break;
    case RELU_HK: hk_relu_f32(x, o, n); break;
    case SUM_LOOP: o[0] = loop_sum(x, n); break;
    case SUM_HK: hk_sum_f32(x, o, n); break;
  }
  clobber();
}

/* Median ns per call. */
static double measure(variant v, size_t n, int nbuf) {
  size_t reps = 1;
  for (;;) { /* calibrate: one sample lasts at least ~2 ms */
    double t0 = now_ns();
    for (size_t r = 0; r < reps; r++) run(v, n, (int)(r % (size_t)nbuf));
    if (now_ns() - t0 > 2e6 || reps > (1u << 26)) break;
    reps *= 2;
  }
  double s[SAMPLES];
  for (int k = 0; k < SAMPLES; k++) {
    double t0 = now_ns();
    for (size_t r = 0; r < reps; r++) run(v, n, (int)(r % (size_t)nbuf));
    s[k] = (now_ns() - t0) / (double)reps;
  }
  qsort(s, SAMPLES, sizeof *s, cmp_double);
  return s[SAMPLES / 2];
}

int main(int argc, char **argv) {
  int threads = 1;
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
  hk_set_threads(threads);
  static const size_t sizes[] = {100, 1000, 65536, 1u << 20};
  size_t maxn = 1u << 20;
  for (int b = 0; b < NBUF; b++)
    for (int j = 0; j < 3; j++) {
      if (posix_memalign((void **)&bufs[b][j], 64, maxn * sizeof(float)))
        return 2;
      for (size_t i = 0; i < maxn; i++)
        bufs[b][j][i] = (float)((i * 7 + (size_t)b) % 13) - 6.0f;
    }
  printf("%-6s %9s %12s %12s %8s\n", "op", "n", "loop ns", "hk ns",
         "hk/loop");
  static const char *const names[] = {"add", "relu", "sum"};
  for (int op = 0; op < 3; op++)
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
      size_t n = sizes[s];
      /* rotate buffers only while they all fit in cache together */
      int nbuf = n * sizeof(float) * 3 * NBUF <= (1u << 20) ? NBUF : 1;
      double l = measure((variant)(op * 2), n, nbuf);
      double h = measure((variant)(op * 2 + 1), n, nbuf);
      printf("%-6s %9zu %12.1f %12.1f %8.3f\n", names[op], n, l, h, h / l);
    }
  printf("(median of %d samples; threads=%d; hk = the typed stdlib call)\n",
         SAMPLES, threads);
  for (int b = 0; b < NBUF; b++)
    for (int j = 0; j < 3; j++) free(bufs[b][j]);
  return 0;
}
