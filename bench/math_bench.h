/* math_bench.h — the -Ofast baselines of hk bench --math (math_ofast.c). */
#ifndef HK_MATH_BENCH_H
#define HK_MATH_BENCH_H

#include <stddef.h>

void ofast_gelu(const float *x, float *out, size_t n);
void ofast_sigmoid(const float *x, float *out, size_t n);
void ofast_tanh(const float *x, float *out, size_t n);
void ofast_softmax(const float *x, float *y, size_t rows, size_t cols);

#endif
