/* gpt2_bench.h — the baselines hk bench --gpt2 compares with (gpt2_ref.c):
 * the CPU kernels of a GPT-2 training step, as llm.c writes them. */
#ifndef HK_GPT2_BENCH_H
#define HK_GPT2_BENCH_H

#include <stdint.h>

void ref_matmul_forward(float *out, const float *inp, const float *weight,
                        const float *bias, int64_t BT, int64_t C, int64_t OC,
                        int threads);
void ref_attention_forward(float *out, float *preatt, float *att,
                           const float *inp, int64_t B, int64_t T, int64_t C,
                           int64_t NH, int threads);
void ref_layernorm_forward(float *out, float *mean, float *rstd,
                           const float *inp, const float *weight,
                           const float *bias, int64_t BT, int64_t C,
                           int threads);
void ref_layernorm_backward(float *dinp, float *dweight, float *dbias,
                            const float *dout, const float *inp,
                            const float *weight, const float *mean,
                            const float *rstd, int64_t BT, int64_t C,
                            int threads);
void ref_softmax_forward(float *probs, const float *logits, int64_t BT,
                         int64_t V, int threads);
void ref_gelu_forward(float *out, const float *inp, int64_t N, int threads);
void ref_gelu_backward(float *dinp, const float *inp, const float *dout,
                       int64_t N, int threads);
void ref_adamw(float *params, const float *grads, float *m, float *v,
               int64_t N, float lr, float beta1, float beta2, float eps,
               float weight_decay, int t, int threads);

#endif
