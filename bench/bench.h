/* bench.h — the C parts of hk-bench: hand-written loops and the naive
 * dynamic path. */
#ifndef HK_BENCH_H
#define HK_BENCH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

void loop_add(const float *x, const float *y, float *out, size_t n);
void loop_mul(const float *x, const float *y, float *out, size_t n);
void loop_relu(const float *x, float *out, size_t n);
void loop_gelu(const float *x, float *out, size_t n);
float loop_sum(const float *x, size_t n);
void loop_saxpy(float alpha, const float *x, float *y, size_t n);
void loop_softmax(const float *x, float *y, int64_t rows, int64_t cols);

/* The naive path: opens a prebuilt plugin, then per call: lock, lookup,
 * malloc'ed arguments, dlsym. Reductions run whole (no blocking). */
int naive_open(const char *so_path, char *err, size_t errlen);
void naive_register(const char *name, int nparams, int is_reduction);
int naive_call(const char *name, void *const *args, size_t n);

#ifdef __cplusplus
}
#endif

#endif
