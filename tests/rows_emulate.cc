/* rows_emulate.cc — a rows kernel's cooperative CUDA entry, run on the host
 * (rows_emulate.sh builds it once per kernel file).
 *
 * A GPU is not needed to find most mistakes of a block-per-row "cuda" body
 * (codegen/emit_rows.c) or of the row helpers (codegen/prelude.c): the
 * generated CUDA (hk gen --target cuda), EMU_CU, is compiled as host C++
 * with a fiber (ucontext) per thread of a block, all on one OS thread: a
 * fiber runs until it reaches __syncthreads, and the next fiber starts
 * only then, so each thread runs as far ahead of the others as a barrier
 * lets it (a missing barrier shows as a wrong result, every time, in the
 * same place). A warp shuffle passes values through a slot per thread
 * between two barriers (the helpers call every shuffle with all threads
 * of the block), __shared__ variables are statics (the blocks of a launch
 * run one after another, gridDim 2 so that the rows stride), the bit casts
 * are memcpy. A barrier that some threads of a block never reach is
 * reported. Each instance's
 * cooperative entry, hk_cuda_crow__NAME, with hk_abi_rows_lanes(n) threads,
 * must give the bits of its body, hk_body__NAME from the same file, row by
 * row (a NaN need only be a NaN), over row lengths that hit the bodies'
 * paths (below 16 and 32, the tails of 16, more than one chunk of 1024,
 * 32 to 1024 threads) and rows holding random values, a NaN, +inf, -inf,
 * only -inf, and +inf with -inf; with y = x too for kernels (x, y).
 * Out buffers end in a guard that must stay untouched. With EMU_WROW, the
 * axis reductions' warp-per-row kernels instead, with EMU_COPY the stdlib's
 * strided copies (the checks say what).
 *
 * The kernels come from the build: EMU_XY(X) lists the bases of (x, y)
 * kernels (softmax), EMU_LN(X) those of (x, weight, bias, y, mean, rstd,
 * eps) kernels (layernorm), each as X(base); instances base_f32, base_f64.
 * Compile with -ffp-contract=off, as the GPU code is (--fmad=false).
 * Exit 0 when every instance agrees, else 1. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <setjmp.h>
#include <ucontext.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "abi.h" /* hk_abi_rows_lanes */

/* ---- CUDA on the host ---------------------------------------------------- */

struct hk_emu_dim {
  unsigned x, y, z;
};
static hk_emu_dim threadIdx, blockIdx, blockDim, gridDim;
/* A fiber starts by swapcontext (makecontext gave it its stack) and
 * switches by _setjmp/_longjmp after that: swapcontext saves and restores
 * the signal mask, a system call each way, which took half the
 * emulation's time. */
static ucontext_t emu_main, emu_fiber[HK_ABI_ROWS_LANES_MAX];
static jmp_buf emu_main_jb, emu_fiber_jb[HK_ABI_ROWS_LANES_MAX];
static unsigned char emu_started[HK_ABI_ROWS_LANES_MAX];
static unsigned char emu_slot[HK_ABI_ROWS_LANES_MAX][8];

/* Back to launch(), which resumes this thread once all have arrived. */
static void __syncthreads(void) {
  if (!_setjmp(emu_fiber_jb[threadIdx.x]))
    _longjmp(emu_main_jb, 1);
}

/* v of thread src of the block, for every thread that calls it */
template <typename T> static T emu_shfl(T v, unsigned src) {
  static_assert(sizeof(T) <= sizeof emu_slot[0], "a shuffle's value");
  memcpy(emu_slot[threadIdx.x], &v, sizeof v);
  __syncthreads();
  T r;
  memcpy(&r, emu_slot[src], sizeof r);
  __syncthreads();
  return r;
}
template <typename T> static T __shfl_xor_sync(unsigned, T v, int mask) {
  return emu_shfl(v, threadIdx.x ^ (unsigned)mask);
}
template <typename T> static T __shfl_sync(unsigned, T v, int lane) {
  return emu_shfl(v, (threadIdx.x & ~31u) | (unsigned)lane);
}

/* (the warp-per-row reductions, run with blocks of one warp: a warp's
 * barrier is the block's) */
template <typename T> static T __shfl_down_sync(unsigned, T v, unsigned d) {
  const unsigned l = threadIdx.x & 31u;
  return emu_shfl(v, l + d < 32 ? threadIdx.x + d : threadIdx.x);
}
static void __syncwarp(unsigned = 0xffffffffu) {
  if (blockDim.x != 32) {
    fprintf(stderr, "__syncwarp in a block of %u threads: the emulation "
                    "takes blocks of one warp\n", blockDim.x);
    abort();
  }
  __syncthreads();
}

template <typename To, typename From> static To emu_bits(From f) {
  To t;
  memcpy(&t, &f, sizeof t);
  return t;
}
static inline __attribute__((unused)) unsigned __float_as_uint(float f) {
  return emu_bits<unsigned>(f);
}
static inline __attribute__((unused)) float __uint_as_float(unsigned u) {
  return emu_bits<float>(u);
}
static inline __attribute__((unused)) float __int_as_float(int i) {
  return emu_bits<float>(i);
}
static inline __attribute__((unused)) long long __double_as_longlong(double d) {
  return emu_bits<long long>(d);
}
static inline __attribute__((unused)) double __longlong_as_double(long long l) {
  return emu_bits<double>(l);
}
static inline __attribute__((unused)) unsigned __umulhi(unsigned a,
                                                        unsigned b) {
  return (unsigned)(((unsigned long long)a * b) >> 32);
}
static inline __attribute__((unused)) unsigned long long
__umul64hi(unsigned long long a, unsigned long long b) {
  return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}

/* the f16 conversions without their PTX: the code that gives the same
 * bits (codegen/prelude.c) */
#define HK_NO_PTX
#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __launch_bounds__(...)

#include EMU_CU

/* ---- The checks ------------------------------------------------------------
 */

#ifndef EMU_XY
#define EMU_XY(X)
#endif
#ifndef EMU_LN
#define EMU_LN(X)
#endif

enum { GUARD = 16, PATTERNS = 6 };

static int checks, failures;
static uint64_t rng = 0x9E3779B97F4A7C15u;

static double uniform(double lo, double hi) {
  rng = rng * 6364136223846793005u + 1442695040888963407u;
  return lo + (hi - lo) * (double)(rng >> 11) / 9007199254740992.0;
}

static std::function<void()> emu_kernel;
static unsigned emu_done[HK_ABI_ROWS_LANES_MAX];
static int emu_stuck;

static void emu_thread(void) {
  emu_kernel();
  emu_done[threadIdx.x] = 1;
  _longjmp(emu_main_jb, 1); /* never returns: main resumes */
}

/* Runs f on the threads of each block of a launch of `blocks` blocks of
 * `lanes` threads, the blocks one after another; in a block, the threads
 * in turn up to their next barrier. 0, or -1 when a barrier was not
 * reached by every thread (reported). */
template <typename F> static int launch(unsigned blocks, unsigned lanes, F f) {
  static std::vector<char> stacks;
  const size_t stack = 64 * 1024;
  stacks.resize(stack * lanes);
  gridDim = {blocks, 1, 1};
  blockDim = {lanes, 1, 1};
  emu_kernel = f;
  for (unsigned b = 0; b < blocks; b++) {
    blockIdx = {b, 0, 0};
    for (unsigned t = 0; t < lanes; t++) {
      getcontext(&emu_fiber[t]);
      emu_fiber[t].uc_stack.ss_sp = &stacks[t * stack];
      emu_fiber[t].uc_stack.ss_size = stack;
      emu_fiber[t].uc_link = &emu_main;
      makecontext(&emu_fiber[t], emu_thread, 0);
      emu_done[t] = 0;
      emu_started[t] = 0;
    }
    for (;;) {
      for (unsigned t = 0; t < lanes; t++) {
        if (emu_done[t])
          continue;
        threadIdx = {t, 0, 0};
        if (!_setjmp(emu_main_jb)) {
          if (emu_started[t])
            _longjmp(emu_fiber_jb[t], 1);
          emu_started[t] = 1;
          swapcontext(&emu_main, &emu_fiber[t]);
        }
      }
      unsigned all = 0;
      for (unsigned t = 0; t < lanes; t++)
        all += emu_done[t];
      if (all == lanes)
        break;
      if (all) { /* some ended while others wait at a barrier */
        fprintf(stderr,
                "FAIL: %u of %u threads ended while the others wait "
                "at a barrier\n",
                all, lanes);
        emu_stuck = 1;
        return -1;
      }
    }
  }
  return 0;
}

/* rows rows of n: row r by pattern r % PATTERNS; then the guard */
template <typename T> static std::vector<T> rows_data(size_t rows, size_t n) {
  std::vector<T> x(rows * n + GUARD);
  for (size_t i = 0; i < rows * n; i++)
    x[i] = (T)uniform(-8, 8);
  for (size_t r = 0; r < rows && n; r++) {
    T *row = &x[r * n];
    size_t a = (size_t)uniform(0, (double)n), b = (size_t)uniform(0, (double)n);
    switch (r % PATTERNS) {
    case 1:
      row[a] = (T)NAN;
      break;
    case 2:
      row[a] = (T)INFINITY;
      break;
    case 3:
      row[a] = (T)-INFINITY;
      break;
    case 4:
      for (size_t c = 0; c < n; c++)
        row[c] = (T)-INFINITY;
      break;
    case 5:
      row[a] = (T)INFINITY, row[b] = (T)-INFINITY;
      break;
    default:
      break;
    }
  }
  for (size_t g = 0; g < GUARD; g++)
    x[rows * n + g] = (T)(1000 + g);
  return x;
}

/* want and got: the same bits or both NaN, elements [0, count); got's guard
 * after count untouched (the value it was made with). */
template <typename T>
static void compare(const char *name, const char *what, size_t rows, size_t n,
                    int inplace, const std::vector<T> &want,
                    const std::vector<T> &got, size_t count) {
  checks++;
  for (size_t i = 0; i < count + GUARD; i++) {
    T w = i < count ? want[i] : (T)(1000 + (i - count)), g = got[i];
    if ((w != w && g != g) || !memcmp(&w, &g, sizeof w))
      continue;
    failures++;
    fprintf(stderr,
            "FAIL %s%s rows %zu n %zu: %s[%zu] is %.17g, the body gives "
            "%.17g%s\n",
            name, inplace ? " in place" : "", rows, n, what, i, (double)g,
            (double)w, i >= count ? " (its guard)" : "");
    return;
  }
}

/* The guard that out buffers of count elements start with. */
template <typename T> static std::vector<T> out_buf(size_t count) {
  std::vector<T> y(count + GUARD, (T)0.5);
  for (size_t g = 0; g < GUARD; g++)
    y[count + g] = (T)(1000 + g);
  return y;
}

static const size_t lengths[] = {0,  1,   15,   16,   17,   31,   32,  33,
                                 64, 100, 1000, 1024, 1025, 2049, 2063,
                                 2064, 4097};
static const size_t nrows = 2 * PATTERNS;

#define XY_CHECK(T, NAME)                                                      \
  for (size_t n : lengths)                                                     \
    for (int inplace = 0; inplace < 2; inplace++) {                            \
      std::vector<T> x = rows_data<T>(nrows, n), want = out_buf<T>(nrows * n); \
      std::vector<T> gx = x, got = out_buf<T>(nrows * n);                      \
      T *wy = inplace ? x.data() : want.data();                                \
      T *gy = inplace ? gx.data() : got.data();                                \
      for (size_t r = 0; r < nrows; r++)                                       \
        hk_body__##NAME(x.data() + r * n, wy + r * n, n, r);                   \
      launch(2, hk_abi_rows_lanes(n),                                          \
             [&] { hk_cuda_crow__##NAME(gx.data(), gy, n, nrows); });          \
      compare(#NAME, "y", nrows, n, inplace, inplace ? x : want,               \
              inplace ? gx : got, nrows *n);                                   \
    }

#define LN_CHECK(T, NAME)                                                      \
  for (size_t n : lengths) {                                                   \
    std::vector<T> x = rows_data<T>(nrows, n), w(n), b(n);                     \
    for (size_t c = 0; c < n; c++)                                             \
      w[c] = (T)(1 + 0.01 * (double)c), b[c] = (T)(0.1 * (double)(c % 7));     \
    std::vector<T> y[2] = {out_buf<T>(nrows * n), out_buf<T>(nrows * n)};      \
    std::vector<T> m[2] = {out_buf<T>(nrows), out_buf<T>(nrows)};              \
    std::vector<T> s[2] = {out_buf<T>(nrows), out_buf<T>(nrows)};              \
    const T eps = (T)1e-5;                                                     \
    for (size_t r = 0; r < nrows; r++)                                         \
      hk_body__##NAME(x.data() + r * n, w.data(), b.data(),                    \
                      y[0].data() + r * n, m[0].data() + r, s[0].data() + r,   \
                      eps, n, r);                                              \
    launch(2, hk_abi_rows_lanes(n), [&] {                                      \
      hk_cuda_crow__##NAME(x.data(), w.data(), b.data(), y[1].data(),          \
                           m[1].data(), s[1].data(), eps, n, nrows);           \
    });                                                                        \
    compare(#NAME, "y", nrows, n, 0, y[0], y[1], nrows *n);                    \
    compare(#NAME, "mean", nrows, n, 0, m[0], m[1], nrows);                    \
    compare(#NAME, "rstd", nrows, n, 0, s[0], s[1], nrows);                    \
  }

/* ---- f16 and bf16 instances: staged rows (codegen/emit_rows.c) -------------
 * Their entries take float copies of each row in hk_scratch (a block's or
 * a thread's own), which must give the bits of the CPU's way: each row
 * widened, the body (hk_body__NAME, float rows), the results rounded once.
 * The cooperative entry runs in 2 blocks, the thread-a-row entry in 2
 * blocks of 32 threads; scratch for 8 copies a block (thread), the most
 * these kernels stage. The row lengths: none, one element, a block's
 * threads more than once (the body's paths are the f32 checks'). */
enum { STAGED_MAX = 8 };
static const size_t lengths16[] = {0, 1, 33, 1025, 2063};

/* count elements rounded by to, then the guard */
static std::vector<uint16_t> to_16(const std::vector<float> &f, size_t count,
                                   uint16_t (*to)(float)) {
  std::vector<uint16_t> h(count + GUARD);
  for (size_t i = 0; i < count; i++)
    h[i] = to(f[i]);
  for (size_t g = 0; g < GUARD; g++)
    h[count + g] = (uint16_t)(1000 + g);
  return h;
}

/* the float copy of count elements of h (one 0 when count is 0) */
static std::vector<float> widen(const uint16_t *h, size_t count,
                                float (*from)(uint16_t)) {
  std::vector<float> f(count ? count : 1, 0.0f);
  for (size_t i = 0; i < count; i++)
    f[i] = from(h[i]);
  return f;
}

/* The scratch's layout, which the launcher sizes by (core/cuda/launch.c):
 * unit u (a block or a thread of `units`) keeps its nstaged copies at
 * (u * nstaged + i) * max(n, 1); its first, x's, holds the last row u ran
 * (u, u + units, ... below nrows) widened, and nothing past the units'
 * copies was written (it stays NaN). */
static void check_scratch(const char *name, const char *how,
                          const std::vector<float> &scratch,
                          const std::vector<uint16_t> &x, size_t n,
                          size_t units, int nstaged, float (*from)(uint16_t)) {
  const size_t w = n ? n : 1;
  checks++;
  for (size_t u = 0; u < units && u < nrows; u++) {
    const size_t last = u + units * ((nrows - 1 - u) / units);
    for (size_t c = 0; c < n; c++) {
      float want = from(x[last * n + c]), got = scratch[u * nstaged * w + c];
      if (!memcmp(&want, &got, sizeof want) || (want != want && got != got))
        continue;
      failures++;
      fprintf(stderr,
              "FAIL %s %s n %zu: unit %zu's copy of x is not row %zu "
              "(element %zu is %g, not %g)\n",
              name, how, n, u, last, c, (double)got, (double)want);
      return;
    }
  }
  for (size_t i = units * (size_t)nstaged * w; i < scratch.size(); i++)
    if (scratch[i] == scratch[i]) {
      failures++;
      fprintf(stderr, "FAIL %s %s n %zu: scratch[%zu] written, past %zu "
              "units' copies\n", name, how, n, i, units);
      return;
    }
}

/* way: a block a row (0, 1) or a thread a row (2, 3); in place when odd */
#define XY16_CHECK(NAME, TO, FROM)                                             \
  for (size_t n : lengths16)                                                   \
    for (int way = 0; way < 4; way++) {                                        \
      const int inplace = way & 1, coop = way < 2;                             \
      const size_t w = n ? n : 1;                                              \
      std::vector<uint16_t> x =                                                \
          to_16(rows_data<float>(nrows, n), nrows * n, TO);                    \
      std::vector<uint16_t> want = out_buf<uint16_t>(nrows * n);               \
      const std::vector<uint16_t> gx0 = x;                                     \
      std::vector<uint16_t> gx = x, got = want;                                \
      uint16_t *wy = inplace ? x.data() : want.data();                         \
      uint16_t *gy = inplace ? gx.data() : got.data();                         \
      for (size_t r = 0; r < nrows; r++) {                                     \
        std::vector<float> tx = widen(&x[r * n], n, FROM), ty(w, 0.0f);        \
        hk_body__##NAME(tx.data(), ty.data(), n, r);                           \
        for (size_t c = 0; c < n; c++)                                         \
          wy[r * n + c] = TO(ty[c]);                                           \
      }                                                                        \
      std::vector<float> scratch((coop ? 2 : 64) * STAGED_MAX * w, NAN);       \
      if (coop)                                                                \
        launch(2, hk_abi_rows_lanes(n), [&] {                                  \
          hk_cuda_crow__##NAME(gx.data(), gy, n, nrows, scratch.data());       \
        });                                                                    \
      else                                                                     \
        launch(2, 32, [&] {                                                    \
          hk_cuda__##NAME(gx.data(), gy, n, nrows, scratch.data());            \
        });                                                                    \
      const char *how = coop ? "(a block a row)" : "(a thread a row)";         \
      compare(#NAME, coop ? "y (a block a row)" : "y (a thread a row)",        \
              nrows, n, inplace, inplace ? x : want,                           \
              inplace ? gx : got, nrows *n);                                   \
      check_scratch(#NAME, how, scratch, gx0, n, coop ? 2 : 64, 2, FROM);      \
    }

#define LN16_CHECK(NAME, TO, FROM)                                             \
  for (size_t n : lengths16)                                                   \
    for (int coop = 0; coop < 2; coop++) {                                     \
      const size_t w = n ? n : 1;                                              \
      std::vector<float> wf(n), bf(n);                                         \
      for (size_t c = 0; c < n; c++)                                           \
        wf[c] = (float)(1 + 0.01 * (double)c),                                 \
        bf[c] = (float)(0.1 * (double)(c % 7));                                \
      std::vector<uint16_t> x =                                                \
          to_16(rows_data<float>(nrows, n), nrows * n, TO);                    \
      std::vector<uint16_t> wt = to_16(wf, n, TO), b = to_16(bf, n, TO);       \
      std::vector<uint16_t> y[2] = {out_buf<uint16_t>(nrows * n),              \
                                    out_buf<uint16_t>(nrows * n)};             \
      std::vector<uint16_t> m[2] = {out_buf<uint16_t>(nrows),                  \
                                    out_buf<uint16_t>(nrows)};                 \
      std::vector<uint16_t> s[2] = {out_buf<uint16_t>(nrows),                  \
                                    out_buf<uint16_t>(nrows)};                 \
      const uint16_t eps = TO(1e-5f);                                          \
      std::vector<float> tw = widen(wt.data(), n, FROM),                       \
                         tb = widen(b.data(), n, FROM);                        \
      for (size_t r = 0; r < nrows; r++) {                                     \
        std::vector<float> tx = widen(&x[r * n], n, FROM), ty(w, 0.0f);        \
        float tm = 0, ts = 0;                                                  \
        hk_body__##NAME(tx.data(), tw.data(), tb.data(), ty.data(), &tm, &ts,  \
                        eps, n, r);                                            \
        for (size_t c = 0; c < n; c++)                                         \
          y[0][r * n + c] = TO(ty[c]);                                         \
        m[0][r] = TO(tm), s[0][r] = TO(ts);                                    \
      }                                                                        \
      std::vector<float> scratch((coop ? 2 : 64) * STAGED_MAX * w, NAN);       \
      launch(2, coop ? hk_abi_rows_lanes(n) : 32, [&] {                        \
        if (coop)                                                              \
          hk_cuda_crow__##NAME(x.data(), wt.data(), b.data(), y[1].data(),     \
                               m[1].data(), s[1].data(), eps, n, nrows,        \
                               scratch.data());                                \
        else                                                                   \
          hk_cuda__##NAME(x.data(), wt.data(), b.data(), y[1].data(),          \
                          m[1].data(), s[1].data(), eps, n, nrows,             \
                          scratch.data());                                     \
      });                                                                      \
      const std::string how = coop ? " (a block a row)" : " (a thread a row)"; \
      compare(#NAME, ("y" + how).c_str(), nrows, n, 0, y[0], y[1], nrows *n);  \
      compare(#NAME, ("mean" + how).c_str(), nrows, n, 0, m[0], m[1], nrows);  \
      compare(#NAME, ("rstd" + how).c_str(), nrows, n, 0, s[0], s[1], nrows);  \
      check_scratch(#NAME, how.c_str(), scratch, x, n, coop ? 2 : 64, 6,       \
                    FROM);                                                     \
    }

/* ---- axis reductions, a warp per row (codegen/emit_cuda.c) ----------------
 * hk_cuda_wrow__NAME over rows of m, in blocks of one warp, 3 of them (the
 * warps' stride), so that a warp takes rows in pairs and then, for some
 * row counts, a last one alone: its sums (f32, f64: scalar accumulators,
 * combined by shuffles) must give the bits of the warp tree's model
 * below; an i32 sum into i64 the exact sum; argmax (a struct accumulator,
 * combined in shared memory) the first index of the maximum, or of the
 * first NaN. */
#ifdef EMU_WROW
/* lane l adds elements l + 32 t into accumulator t % 4 (four a step while
 * a whole step fits, then up to three more), (a0 + a1) + (a2 + a3), then
 * lane l < w takes lane l + w's value at w = 16, 8, 4, 2, 1 */
template <typename T> static T wrow_model(const T *x, size_t m) {
  T v[32];
  for (size_t l = 0; l < 32; l++) {
    T a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    size_t i = l;
    for (; i + 96 < m; i += 128) {
      a0 += x[i];
      a1 += x[i + 32];
      a2 += x[i + 64];
      a3 += x[i + 96];
    }
    if (i < m)
      a0 += x[i];
    if (i + 32 < m)
      a1 += x[i + 32];
    if (i + 64 < m)
      a2 += x[i + 64];
    v[l] = (a0 + a1) + (a2 + a3);
  }
  for (size_t w = 16; w > 0; w >>= 1)
    for (size_t l = 0; l < w; l++)
      v[l] = v[l] + v[l + w];
  return v[0];
}

static int64_t argmax_ref(const float *x, size_t m) {
  int64_t best = -1;
  for (size_t i = 0; i < m; i++) {
    if (x[i] != x[i])
      return (int64_t)i;
    if (best < 0 || x[i] > x[best])
      best = (int64_t)i;
  }
  return best;
}

static const size_t wrow_rows[] = {1, 2, 6, 7, 11};
static const size_t wrow_lengths[] = {0, 1, 3, 31, 32, 33, 64, 97, 128, 129, 1000};

template <typename T> static std::vector<T> wrow_data(size_t count) {
  std::vector<T> x(count);
  for (size_t i = 0; i < count; i++) /* many binades: sums round */
    x[i] = (T)(uniform(-1, 1) * ldexp(1.0, (int)uniform(-20, 20)));
  return x;
}

#define WROW_SUM_CHECK(T, NAME)                                                \
  for (size_t rows : wrow_rows)                                                \
    for (size_t m : wrow_lengths) {                                            \
      std::vector<T> x = wrow_data<T>(rows * m), want = out_buf<T>(rows);      \
      std::vector<T> got = out_buf<T>(rows);                                   \
      for (size_t r = 0; r < rows; r++)                                        \
        want[r] = wrow_model(x.data() + r * m, m);                             \
      launch(3, 32,                                                            \
             [&] { hk_cuda_wrow__##NAME(x.data(), got.data(), m, rows); });    \
      compare(#NAME, "out", rows, m, 0, want, got, rows);                      \
    }

static void wrow_checks(void) {
  WROW_SUM_CHECK(float, sum_f32)
  WROW_SUM_CHECK(double, sum_f64)
  for (size_t rows : wrow_rows)
    for (size_t m : wrow_lengths) {
      std::vector<int32_t> xi(rows * m);
      std::vector<float> xf = wrow_data<float>(rows * m);
      std::vector<int64_t> want = out_buf<int64_t>(rows), got = want;
      std::vector<int64_t> wa = out_buf<int64_t>(rows), ga = wa;
      for (size_t i = 0; i < rows * m; i++) {
        xi[i] = (int32_t)uniform(-2147483648.0, 2147483647.0);
        if (i % 7 == 3) /* ties for the first of equal maxima */
          xf[i] = 0.5f;
      }
      for (size_t r = 0; r < rows && m > 2; r += 3)
        xf[r * m + m / 2] = NAN; /* every third row: the first NaN */
      for (size_t r = 0; r < rows; r++) {
        int64_t sum = 0;
        for (size_t c = 0; c < m; c++)
          sum += xi[r * m + c];
        want[r] = sum;
        wa[r] = argmax_ref(xf.data() + r * m, m);
      }
      launch(3, 32,
             [&] { hk_cuda_wrow__sum_i32(xi.data(), got.data(), m, rows); });
      compare("sum_i32", "out", rows, m, 0, want, got, rows);
      launch(3, 32,
             [&] { hk_cuda_wrow__argmax_f32(xf.data(), ga.data(), m, rows); });
      compare("argmax_f32", "out", rows, m, 0, wa, ga, rows);
    }
}
#define EMU_WROW_CHECKS() wrow_checks()
#else
#define EMU_WROW_CHECKS()
#endif

/* ---- the stdlib's strided copies (codegen/emit_cuda.c, copy_kernels) -------
 * hk_cuda_copy_4 (64-bit division) and hk_cuda_copy32_4 (the magic numbers
 * of common/abi.h's hk_abi_cuda_divider, as core/cuda/launch.c computes
 * them) over views of 1 to 4 axes (reversed, transposed, sliced, length-1
 * axes, sizes that are not powers of two), 3 blocks of 32 threads striding
 * over the elements: a gather must give the view's elements in C order,
 * and a scatter must write them back and nothing between them. EMU_COPY
 * takes a stdlib-mode file (hk-gen), which holds the copy kernels. */
#ifdef EMU_COPY
struct copy_view {
  int nd;
  long long shape[4], st[4];
};

/* The offset of element i (C order) of view v from its element 0. */
static long long view_offset(const copy_view &v, long long i) {
  long long off = 0;
  for (int d = v.nd - 1; d >= 0; d--) {
    off += (i % v.shape[d]) * v.st[d];
    i /= v.shape[d];
  }
  return off;
}

static void copy_checks(void) {
  static const copy_view views[] = {
      {1, {37}, {1}},
      {1, {50}, {-3}},
      {2, {33, 65}, {1, 33}},          /* x.T */
      {2, {7, 300}, {600, 2}},         /* rows and columns sliced */
      {2, {40, 50}, {-50, 1}},         /* rows reversed */
      {3, {3, 1, 17}, {34, 99, 1}},    /* a length-1 axis */
      {3, {4, 33, 65}, {2145, 1, 33}}, /* a batch of transposes */
      {4, {2, 3, 4, 5}, {1, 2, 6, 24}},
      {4, {3, 5, 7, 9}, {-315, 63, -9, 1}},
  };
  for (const copy_view &v : views) {
    long long n = 1, lo = 0, hi = 0;
    for (int d = 0; d < v.nd; d++) {
      n *= v.shape[d];
      const long long reach = (v.shape[d] - 1) * v.st[d];
      if (reach < 0)
        lo += reach;
      else
        hi += reach;
    }
    hk_cuda_strided g;
    memset(&g, 0, sizeof g);
    g.nd = v.nd;
    for (int d = 0; d < v.nd; d++) {
      g.shape[d] = v.shape[d];
      g.st[d] = v.st[d];
      unsigned sh;
      g.magic[d] = (unsigned)hk_abi_cuda_divider((uint64_t)v.shape[d], 32, &sh);
      g.shift[d] = sh;
    }
    const size_t span = (size_t)(hi - lo + 1);
    std::vector<unsigned> base(span + 2 * GUARD), run(n + GUARD);
    for (size_t i = 0; i < base.size(); i++)
      base[i] = 0x10000000u + (unsigned)i;
    unsigned *at0 = base.data() + GUARD - lo; /* the view's element 0 */
    std::vector<unsigned> want(n + GUARD);
    for (long long i = 0; i < n; i++)
      want[i] = at0[view_offset(v, i)];
    for (int k = 0; k < GUARD; k++)
      want[n + k] = 0xA5A5A5A5u;
    for (int wide = 0; wide < 2; wide++) {
      const char *name = wide ? "hk_cuda_copy_4" : "hk_cuda_copy32_4";
      /* gather: the run from the view */
      std::fill(run.begin(), run.end(), 0xA5A5A5A5u);
      launch(3, 32, [&] {
        if (wide)
          hk_cuda_copy_4(at0, run.data(), g, 0, (size_t)n);
        else
          hk_cuda_copy32_4(at0, run.data(), g, 0, (unsigned)n);
      });
      checks++;
      if (run != want) {
        failures++;
        fprintf(stderr, "FAIL %s gather, a view of %d axes: wrong run\n",
                name, v.nd);
      }
      /* scatter: the run (want, the view's elements) into a blank view */
      std::vector<unsigned> back(base.size(), 0u);
      unsigned *b0 = back.data() + GUARD - lo;
      launch(3, 32, [&] {
        if (wide)
          hk_cuda_copy_4(want.data(), b0, g, 1, (size_t)n);
        else
          hk_cuda_copy32_4(want.data(), b0, g, 1, (unsigned)n);
      });
      std::vector<unsigned> wback(base.size(), 0u);
      for (long long i = 0; i < n; i++)
        wback[GUARD - lo + view_offset(v, i)] = want[i];
      checks++;
      if (back != wback) {
        failures++;
        fprintf(stderr, "FAIL %s scatter, a view of %d axes\n", name, v.nd);
      }
    }
  }
}
#define EMU_COPY_CHECKS() copy_checks()
#else
#define EMU_COPY_CHECKS()
#endif

#define XY_ALL(base)                                                           \
  XY_CHECK(float, base##_f32)                                                  \
  XY_CHECK(double, base##_f64)                                                 \
  XY16_CHECK(base##_f16, hk_f32_to_f16, hk_f16_to_f32)                         \
  XY16_CHECK(base##_bf16, hk_f32_to_bf16, hk_bf16_to_f32)
#define LN_ALL(base)                                                           \
  LN_CHECK(float, base##_f32)                                                  \
  LN_CHECK(double, base##_f64)                                                 \
  LN16_CHECK(base##_f16, hk_f32_to_f16, hk_f16_to_f32)                         \
  LN16_CHECK(base##_bf16, hk_f32_to_bf16, hk_bf16_to_f32)

int main(void) {
  EMU_XY(XY_ALL)
  EMU_LN(LN_ALL)
  EMU_WROW_CHECKS();
  EMU_COPY_CHECKS();
  printf("rows_emulate: %d checks, %d failed\n", checks, failures);
  return checks == 0 || failures != 0 || emu_stuck;
}
