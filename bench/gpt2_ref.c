/* gpt2_ref.c — the baselines of hk bench --gpt2: the CPU kernels of one
 * GPT-2 training step as a C programmer writes them (llm.c's train_gpt2.c),
 * compiled -O3 -Ofast -march=native -fopenmp (bench/CMakeLists.txt) and run
 * on `threads` OpenMP threads. Shapes are the caller's; the loops are the
 * plain ones, with OpenMP over the outer loops as llm.c has them. */
#include <math.h>
#include <stdint.h>

#include "gpt2_bench.h"

/* out (BT, OC) = inp (BT, C) · weight (OC, C)^T + bias (OC) */
void ref_matmul_forward(float *out, const float *inp, const float *weight,
                        const float *bias, int64_t BT, int64_t C, int64_t OC,
                        int threads) {
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t bt = 0; bt < BT; bt++) {
    const float *x = inp + bt * C;
    float *o = out + bt * OC;
    for (int64_t oc = 0; oc < OC; oc++) {
      const float *w = weight + oc * C;
      float v = bias ? bias[oc] : 0.0f;
      for (int64_t c = 0; c < C; c++) v += x[c] * w[c];
      o[oc] = v;
    }
  }
}

/* inp (B, T, 3C) holds q, k, v; preatt and att (B, NH, T, T); out (B, T, C).
 * Causal: position t attends to 0..t. */
void ref_attention_forward(float *out, float *preatt, float *att,
                           const float *inp, int64_t B, int64_t T, int64_t C,
                           int64_t NH, int threads) {
  int64_t C3 = C * 3, hs = C / NH;
  float scale = 1.0f / sqrtf((float)hs);
#pragma omp parallel for collapse(3) num_threads(threads) schedule(static)
  for (int64_t b = 0; b < B; b++)
    for (int64_t t = 0; t < T; t++)
      for (int64_t h = 0; h < NH; h++) {
        const float *q = inp + b * T * C3 + t * C3 + h * hs;
        float *pre = preatt + b * NH * T * T + h * T * T + t * T;
        float *a = att + b * NH * T * T + h * T * T + t * T;
        float maxval = -10000.0f;
        for (int64_t t2 = 0; t2 <= t; t2++) {
          const float *k = inp + b * T * C3 + t2 * C3 + h * hs + C;
          float v = 0.0f;
          for (int64_t i = 0; i < hs; i++) v += q[i] * k[i];
          v *= scale;
          if (v > maxval) maxval = v;
          pre[t2] = v;
        }
        float sum = 0.0f;
        for (int64_t t2 = 0; t2 <= t; t2++) {
          float e = expf(pre[t2] - maxval);
          sum += e;
          a[t2] = e;
        }
        float inv = sum == 0.0f ? 0.0f : 1.0f / sum;
        for (int64_t t2 = 0; t2 < T; t2++) a[t2] = t2 <= t ? a[t2] * inv : 0.0f;
        float *o = out + b * T * C + t * C + h * hs;
        for (int64_t i = 0; i < hs; i++) o[i] = 0.0f;
        for (int64_t t2 = 0; t2 <= t; t2++) {
          const float *v = inp + b * T * C3 + t2 * C3 + h * hs + 2 * C;
          float w = a[t2];
          for (int64_t i = 0; i < hs; i++) o[i] += w * v[i];
        }
      }
}

void ref_layernorm_forward(float *out, float *mean, float *rstd,
                           const float *inp, const float *weight,
                           const float *bias, int64_t BT, int64_t C,
                           int threads) {
  const float eps = 1e-5f;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t r = 0; r < BT; r++) {
    const float *x = inp + r * C;
    float m = 0.0f;
    for (int64_t i = 0; i < C; i++) m += x[i];
    m /= (float)C;
    float v = 0.0f;
    for (int64_t i = 0; i < C; i++) {
      float d = x[i] - m;
      v += d * d;
    }
    v /= (float)C;
    float s = 1.0f / sqrtf(v + eps);
    float *o = out + r * C;
    for (int64_t i = 0; i < C; i++) o[i] = (s * (x[i] - m)) * weight[i] + bias[i];
    mean[r] = m;
    rstd[r] = s;
  }
}

/* dinp (BT, C) += ...; dweight, dbias (C) += ...: llm.c accumulates the
 * weight gradients over rows, which forbids a parallel loop over rows
 * without a reduction: as there, the row loop is parallel and the weight
 * gradients are summed per thread and combined. */
void ref_layernorm_backward(float *dinp, float *dweight, float *dbias,
                            const float *dout, const float *inp,
                            const float *weight, const float *mean,
                            const float *rstd, int64_t BT, int64_t C,
                            int threads) {
#pragma omp parallel num_threads(threads)
  {
    float dw[C], db[C];
    for (int64_t i = 0; i < C; i++) dw[i] = db[i] = 0.0f;
#pragma omp for schedule(static)
    for (int64_t r = 0; r < BT; r++) {
      const float *dout_r = dout + r * C, *inp_r = inp + r * C;
      float *dinp_r = dinp + r * C;
      float m = mean[r], s = rstd[r];
      float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
      for (int64_t i = 0; i < C; i++) {
        float norm = (inp_r[i] - m) * s;
        float dnorm = weight[i] * dout_r[i];
        dnorm_mean += dnorm;
        dnorm_norm_mean += dnorm * norm;
      }
      dnorm_mean /= (float)C;
      dnorm_norm_mean /= (float)C;
      for (int64_t i = 0; i < C; i++) {
        float norm = (inp_r[i] - m) * s;
        float dnorm = weight[i] * dout_r[i];
        db[i] += dout_r[i];
        dw[i] += norm * dout_r[i];
        dinp_r[i] += (dnorm - dnorm_mean - norm * dnorm_norm_mean) * s;
      }
    }
#pragma omp critical
    for (int64_t i = 0; i < C; i++) {
      dweight[i] += dw[i];
      dbias[i] += db[i];
    }
  }
}

/* probs (BT, V) = softmax of logits (BT, V), row by row. */
void ref_softmax_forward(float *probs, const float *logits, int64_t BT,
                         int64_t V, int threads) {
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t r = 0; r < BT; r++) {
    const float *x = logits + r * V;
    float *p = probs + r * V;
    float maxval = -10000.0f;
    for (int64_t i = 0; i < V; i++)
      if (x[i] > maxval) maxval = x[i];
    float sum = 0.0f;
    for (int64_t i = 0; i < V; i++) {
      p[i] = expf(x[i] - maxval);
      sum += p[i];
    }
    for (int64_t i = 0; i < V; i++) p[i] /= sum;
  }
}

#define GELU_SCALING_FACTOR 0.7978845608028654f /* sqrt(2 / pi) */

void ref_gelu_forward(float *out, const float *inp, int64_t N, int threads) {
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < N; i++) {
    float x = inp[i];
    float cube = 0.044715f * x * x * x;
    out[i] = 0.5f * x * (1.0f + tanhf(GELU_SCALING_FACTOR * (x + cube)));
  }
}

void ref_gelu_backward(float *dinp, const float *inp, const float *dout,
                       int64_t N, int threads) {
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < N; i++) {
    float x = inp[i];
    float cube = 0.044715f * x * x * x;
    float tanh_arg = GELU_SCALING_FACTOR * (x + cube);
    float tanh_out = tanhf(tanh_arg);
    float coshf_out = coshf(tanh_arg);
    float sech_out = 1.0f / (coshf_out * coshf_out);
    float local_grad = 0.5f * (1.0f + tanh_out) +
                       x * 0.5f * sech_out * GELU_SCALING_FACTOR *
                           (1.0f + 3.0f * 0.044715f * x * x);
    dinp[i] += local_grad * dout[i];
  }
}

void ref_adamw(float *params, const float *grads, float *m, float *v,
               int64_t N, float lr, float beta1, float beta2, float eps,
               float weight_decay, int t, int threads) {
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < N; i++) {
    float param = params[i], grad = grads[i];
    float mi = beta1 * m[i] + (1.0f - beta1) * grad;
    float vi = beta2 * v[i] + (1.0f - beta2) * grad * grad;
    float m_hat = mi / (1.0f - powf(beta1, (float)t));
    float v_hat = vi / (1.0f - powf(beta2, (float)t));
    m[i] = mi;
    v[i] = vi;
    params[i] -= lr * (m_hat / (sqrtf(v_hat) + eps) + weight_decay * param);
  }
}
