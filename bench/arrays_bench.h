/* arrays_bench.h — the baselines hk bench --arrays compares with. */
#ifndef HK_ARRAYS_BENCH_H
#define HK_ARRAYS_BENCH_H

#include <stdint.h>

void ref_softmax(const float *x, float *y, int64_t rows, int64_t n,
                 int threads);
void ref_layernorm(const float *x, const float *w, const float *b, float *y,
                   float *mean, float *rstd, float eps, int64_t rows,
                   int64_t n, int threads);

#endif
