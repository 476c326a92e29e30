/* rows_ref.c — the baselines of hk bench --arrays: per-row softmax and
 * layernorm as a C programmer writes them (llm.c's CPU kernels), compiled
 * -O3 -march=native -fopenmp (bench/CMakeLists.txt) and run on `threads`
 * OpenMP threads. */
#include <math.h>
#include <stdint.h>

#include "arrays_bench.h"

void ref_softmax(const float *x, float *y, int64_t rows, int64_t n,
                 int threads) {
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t r = 0; r < rows; r++) {
    const float *xr = x + r * n;
    float *yr = y + r * n;
    float m = -INFINITY;
    for (int64_t j = 0; j < n; j++)
      if (xr[j] > m) m = xr[j];
    float s = 0;
    for (int64_t j = 0; j < n; j++) {
      yr[j] = expf(xr[j] - m);
      s += yr[j];
    }
    float inv = 1.0f / s;
    for (int64_t j = 0; j < n; j++) yr[j] *= inv;
  }
}

void ref_layernorm(const float *x, const float *w, const float *b, float *y,
                   float *mean, float *rstd, float eps, int64_t rows,
                   int64_t n, int threads) {
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t r = 0; r < rows; r++) {
    const float *xr = x + r * n;
    float *yr = y + r * n;
    float m = 0;
    for (int64_t j = 0; j < n; j++) m += xr[j];
    m /= (float)n;
    float v = 0;
    for (int64_t j = 0; j < n; j++) {
      float d = xr[j] - m;
      v += d * d;
    }
    v /= (float)n;
    float s = 1.0f / sqrtf(v + eps);
    for (int64_t j = 0; j < n; j++) yr[j] = (xr[j] - m) * s * w[j] + b[j];
    mean[r] = m;
    rstd[r] = s;
  }
}
