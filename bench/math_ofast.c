/* math_ofast.c — hk bench --math's baseline: the loops of the stdlib's
 * gelu, sigmoid, tanh and softmax (f32) as a C programmer compiles them,
 * -Ofast -march=native (bench/CMakeLists.txt), where gcc calls glibc's
 * vector math (libmvec). Not bit-compatible with hk: that is the point. */
#include <math.h>
#include <stddef.h>

#include "math_bench.h"

void ofast_gelu(const float *x, float *out, size_t n) {
  const float k = 0.79788456080286535588f;
  for (size_t i = 0; i < n; i++) {
    const float v = x[i];
    out[i] = v / (1.0f + expf(-2.0f * k * (v + 0.044715f * v * v * v)));
  }
}

void ofast_sigmoid(const float *x, float *out, size_t n) {
  for (size_t i = 0; i < n; i++) out[i] = 1.0f / (1.0f + expf(-x[i]));
}

void ofast_tanh(const float *x, float *out, size_t n) {
  for (size_t i = 0; i < n; i++) out[i] = tanhf(x[i]);
}

void ofast_softmax(const float *x, float *y, size_t rows, size_t cols) {
  for (size_t r = 0; r < rows; r++) {
    const float *xr = x + r * cols;
    float *yr = y + r * cols, m = -INFINITY, s = 0;
    for (size_t c = 0; c < cols; c++) m = xr[c] > m ? xr[c] : m;
    for (size_t c = 0; c < cols; c++) {
      yr[c] = expf(xr[c] - m);
      s += yr[c];
    }
    for (size_t c = 0; c < cols; c++) yr[c] /= s;
  }
}
