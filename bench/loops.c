/* loops.c — the hand-written loops hk is measured against ("loop").
 *
 * What a user writes without hk, compiled with the library's kernel flags
 * (-O3 -fwrapv -ffp-contract=off -fno-math-errno), one function per op,
 * never inlined into the benchmark, so each call costs what calling one's
 * own loop in another file costs.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "bench.h"
#include "../common/hkmath_native.h" /* the math kernels get */

#define NOINLINE __attribute__((noinline))

NOINLINE void loop_add(const float *x, const float *y, float *out, size_t n) {
  for (size_t i = 0; i < n; i++) out[i] = x[i] + y[i];
}

NOINLINE void loop_mul(const float *x, const float *y, float *out, size_t n) {
  for (size_t i = 0; i < n; i++) out[i] = x[i] * y[i];
}

NOINLINE void loop_relu(const float *x, float *out, size_t n) {
  for (size_t i = 0; i < n; i++) out[i] = x[i] < 0 ? 0.0f : x[i];
}

NOINLINE void loop_gelu(const float *x, float *out, size_t n) {
  const float k = 0.79788456080286535588f; /* sqrt(2 / pi) */
  for (size_t i = 0; i < n; i++) {
    float v = x[i];
    out[i] = v / hk_expp1f(-2.0f * k * (v + 0.044715f * v * v * v));
  }
}

NOINLINE float loop_sum(const float *x, size_t n) {
  float s = 0;
  for (size_t i = 0; i < n; i++) s += x[i];
  return s;
}

NOINLINE void loop_saxpy(float alpha, const float *x, float *y, size_t n) {
  for (size_t i = 0; i < n; i++) y[i] = alpha * x[i] + y[i];
}

NOINLINE void loop_softmax(const float *x, float *y, int64_t rows,
                           int64_t cols) {
  for (int64_t r = 0; r < rows; r++) {
    const float *xr = x + r * cols;
    float *yr = y + r * cols;
    float m = -INFINITY;
    for (int64_t c = 0; c < cols; c++) m = xr[c] > m ? xr[c] : m;
    /* the sum in 16 lanes and a fixed tree, as the stdlib's */
    float sv[16] = {0}, s;
    int64_t c = 0;
    const int64_t full = cols - cols % 16;
    for (int64_t i = 0; i < full; i++) yr[i] = hk_expf(xr[i] - m);
    for (; c < full; c += 16)
      for (int j = 0; j < 16; j++) sv[j] += yr[c + j];
    for (int w = 8; w >= 1; w /= 2)
      for (int j = 0; j < w; j++) sv[j] += sv[j + w];
    s = sv[0];
    for (; c < cols; c++) {
      yr[c] = hk_expf(xr[c] - m);
      s += yr[c];
    }
    const float inv = 1.0f / s;
    for (c = 0; c < cols; c++) yr[c] *= inv;
  }
}
