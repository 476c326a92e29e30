/* arrays_bench.c — hk bench --arrays: what shapes, strides, broadcasting,
 * axis reductions, row kernels and 16-bit types cost, as ratios taken
 * within one run.
 *
 * Groups are timed as timing.h says (interleaved, medians). Every
 * variant's output is checked against the group's first before anything is
 * timed.
 * NumPy runs in one Python process started at the end, on the same shapes.
 *
 * Usage: hk bench --arrays [--quick] [--no-numpy] [--json FILE]
 * (--smoke: one untimed pass, for tests/bench_smoke.sh: every check, every
 * line of output, no figure worth reading)
 */
#include <hk.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "arrays_bench.h"
#include "timing.h"

/* ---- hk handles -------------------------------------------------------- */

static hk_context_t *ctx;

static hk_kernel_t *kernel(const char *name) {
  hk_kernel_t *k = NULL;
  if (hk_kernel_find(ctx, name, &k) != HK_OK) return NULL;
  return k;
}

/* The index of k's parameter named name, or -1. */
static int param(hk_kernel_t *k, const char *name) {
  const hk_kernel_info_t *in = hk_kernel_info(k);
  for (int i = 0; i < in->nparams; i++)
    if (!strcmp(in->params[i].name, name)) return i;
  return -1;
}

/* ---- cases ------------------------------------------------------------- */

typedef struct call_ctx {
  hk_kernel_t *k;
  void *args[8];
  size_t n;
  hk_array_t arr[8];
  hk_call_opts_t opts;
} call_ctx;

static void run_call(void *p) {
  call_ctx *c = p;
  hk_call(c->k, c->n, c->args);
}
static void run_arrays(void *p) {
  call_ctx *c = p;
  hk_call_arrays(c->k, c->arr, &c->opts);
}

/* 1. The cost of the array call itself: contiguous, same shape. */
static void case_call_cost(void) {
  hk_kernel_t *add = kernel("add_f32");
  size_t sizes[] = {0, 1000};
  for (int z = 0; z < 2; z++) {
    size_t n = sizes[z];
    float *x = bench_fbuf(n), *y = bench_fbuf(n), *o = bench_fbuf(n);
    call_ctx a = {.k = add, .args = {x, y, o}, .n = n};
    int64_t sh[] = {(int64_t)n};
    hk_array_init(&a.arr[0], x, HK_F32, 1, sh);
    hk_array_init(&a.arr[1], y, HK_F32, 1, sh);
    hk_array_init(&a.arr[2], o, HK_F32, 1, sh);
    variant v[] = {{"hk_call", run_call, &a, 0, 0},
                   {"hk_call_arrays", run_arrays, &a, 0, 0}};
    bench_time_group(v, 2);
    char g[64];
    snprintf(g, sizeof g, "call cost: add_f32, n = %zu, contiguous", n);
    bench_report(g, v, 2);
    if (n == 1000)
      bench_want("hk_call_arrays / hk_call, add n=1000", v[1].ns / v[0].ns, 1.05, 1);
    else
      printf("  (hk_call_arrays adds %.0f ns to a call)\n", v[1].ns - v[0].ns);
    free(x);
    free(y);
    free(o);
  }
}

/* 2. Broadcast add (rows, C) + (C,) against the same-shape add. */
static void case_broadcast(int64_t rows, int64_t C) {
  hk_kernel_t *add = kernel("add_f32");
  size_t n = (size_t)(rows * C);
  float *x = bench_fbuf(n), *y = bench_fbuf(n), *b = bench_fbuf((size_t)C), *o = bench_fbuf(n),
        *o2 = bench_fbuf(n);
  for (int64_t r = 0; r < rows; r++) memcpy(y + r * C, b, (size_t)C * 4);
  call_ctx same = {.k = add, .args = {x, y, o}, .n = n};
  call_ctx bc = {.k = add};
  hk_array_init(&bc.arr[0], x, HK_F32, 2, (int64_t[]){rows, C});
  hk_array_init(&bc.arr[1], b, HK_F32, 1, (int64_t[]){C});
  hk_array_init(&bc.arr[2], o2, HK_F32, 2, (int64_t[]){rows, C});
  run_call(&same);
  run_arrays(&bc);
  if (!bench_close(o2, o, n, 0, "broadcast add")) exit(2);
  variant v[] = {{"same-shape add (hk_call)", run_call, &same, 0, 0},
                 {"(rows, C) + (C,) arrays", run_arrays, &bc, 0, 0}};
  bench_time_group(v, 2);
  char g[96];
  snprintf(g, sizeof g, "broadcast add: (%lld, %lld) + (%lld,), f32",
           (long long)rows, (long long)C, (long long)C);
  bench_report(g, v, 2);
  char w[96];
  snprintf(w, sizeof w, "broadcast / same-shape add (%lld x %lld)",
           (long long)rows, (long long)C);
  bench_want(w, v[1].ns / v[0].ns, 1.05, 1);
  free(x), free(y), free(b), free(o), free(o2);
}

/* 3. A transposed input against contiguous ones, 1M elements. */
static void case_strided(void) {
  hk_kernel_t *add = kernel("add_f32");
  int64_t N = 1024;
  size_t n = (size_t)(N * N);
  float *x = bench_fbuf(n), *xt = bench_fbuf(n), *y = bench_fbuf(n), *o = bench_fbuf(n), *o2 = bench_fbuf(n);
  for (int64_t i = 0; i < N; i++) /* xt holds x transposed */
    for (int64_t j = 0; j < N; j++) xt[j * N + i] = x[i * N + j];
  call_ctx flat = {.k = add, .args = {x, y, o}, .n = n};
  call_ctx tr = {.k = add};
  hk_array_init(&tr.arr[0], xt, HK_F32, 2, (int64_t[]){N, N});
  tr.arr[0].strides[0] = 1; /* the view xt.T, which equals x */
  tr.arr[0].strides[1] = N;
  hk_array_init(&tr.arr[1], y, HK_F32, 2, (int64_t[]){N, N});
  hk_array_init(&tr.arr[2], o2, HK_F32, 2, (int64_t[]){N, N});
  run_call(&flat);
  run_arrays(&tr);
  if (!bench_close(o2, o, n, 0, "transposed add")) exit(2);
  variant v[] = {{"contiguous add (hk_call)", run_call, &flat, 0, 0},
                 {"transposed x + y (arrays)", run_arrays, &tr, 0, 0}};
  bench_time_group(v, 2);
  bench_report("strided input: x.T + y, 1024 x 1024 f32", v, 2);
  bench_want("transposed / contiguous add (1M)", v[1].ns / v[0].ns, 2.0, 1);
  free(x), free(xt), free(y), free(o), free(o2);
}

/* 4. Per-row sums over the last axis against the whole sum. */
static void case_rowsum(int64_t rows, int64_t C) {
  hk_kernel_t *sum = kernel("sum_f32");
  size_t n = (size_t)(rows * C);
  float *x = bench_fbuf(n), *s = bench_fbuf((size_t)rows), whole;
  call_ctx all = {.k = sum, .args = {x, &whole}, .n = n};
  call_ctx per = {.k = sum, .opts = {.axes = (const int[]){-1}, .naxes = 1}};
  hk_array_init(&per.arr[0], x, HK_F32, 2, (int64_t[]){rows, C});
  hk_array_init(&per.arr[1], s, HK_F32, 1, (int64_t[]){rows});
  run_arrays(&per);
  float ref;
  void *ra[] = {x + C, &ref};
  hk_call(sum, (size_t)C, ra);
  if (ref != s[1]) {
    fprintf(stderr, "hk bench --arrays: row sum differs from the flat sum\n");
    exit(2);
  }
  variant v[] = {{"whole sum (hk_call)", run_call, &all, 0, 0},
                 {"per-row sums, axis -1", run_arrays, &per, 0, 0}};
  bench_time_group(v, 2);
  char g[96];
  snprintf(g, sizeof g, "axis reduction: sum over the last axis of (%lld, %lld)",
           (long long)rows, (long long)C);
  bench_report(g, v, 2);
  /* the target is the (256, 768) case; shorter rows are shown */
  if (C == 768) {
    bench_want("per-row / whole sum, same elements", v[1].ns / v[0].ns, 1.0, 1);
  } else {
    printf("  (rows of %lld: %.2fx the whole sum's time)\n", (long long)C,
           v[1].ns / v[0].ns);
  }
  free(x), free(s);
}

/* 4a. Column sums (axis 0): the kernel's colred entry reads each row once
 * for a group of columns. */
static double hk_colsum_ns;

static void case_colsum(void) {
  hk_kernel_t *sum = kernel("sum_f32");
  const int64_t rows = 4096, C = 768;
  size_t n = (size_t)(rows * C);
  float *x = bench_fbuf(n), *s = bench_fbuf((size_t)C), whole;
  call_ctx all = {.k = sum, .args = {x, &whole}, .n = n};
  call_ctx per = {.k = sum, .opts = {.axes = (const int[]){0}, .naxes = 1}};
  hk_array_init(&per.arr[0], x, HK_F32, 2, (int64_t[]){rows, C});
  hk_array_init(&per.arr[1], s, HK_F32, 1, (int64_t[]){C});
  run_arrays(&per);
  /* column 5 against the flat sum of its copy: the same bits */
  float *col = bench_fbuf((size_t)rows), ref;
  for (int64_t r = 0; r < rows; r++) col[r] = x[r * C + 5];
  void *ra[] = {col, &ref};
  hk_call(sum, (size_t)rows, ra);
  if (memcmp(&ref, &s[5], sizeof ref)) {
    fprintf(stderr, "hk bench --arrays: a column sum differs from the flat "
                    "sum of its copy\n");
    exit(2);
  }
  variant v[] = {{"whole sum (hk_call)", run_call, &all, 0, 0},
                 {"column sums, axis 0", run_arrays, &per, 0, 0}};
  bench_time_group(v, 2);
  bench_report("axis reduction: sum over the first axis of (4096, 768)", v, 2);
  hk_colsum_ns = v[1].ns;
  free(x), free(s), free(col);
}

/* 4b. argmax over (256, 768) f32, whole and per row, for NumPy's
 * x.argmax() and x.argmax(-1) (below). */
static double hk_argmax_ns, hk_argmax_rows_ns;

static void case_argmax(void) {
  hk_kernel_t *am = kernel("argmax_f32");
  const int64_t rows = 256, C = 768;
  size_t n = (size_t)(rows * C);
  float *x = bench_fbuf(n);
  int64_t whole, *idx = malloc((size_t)rows * sizeof *idx);
  call_ctx all = {.k = am, .args = {x, &whole}, .n = n};
  call_ctx per = {.k = am, .opts = {.axes = (const int[]){-1}, .naxes = 1}};
  hk_array_init(&per.arr[0], x, HK_F32, 2, (int64_t[]){rows, C});
  hk_array_init(&per.arr[1], idx, HK_I64, 1, (int64_t[]){rows});
  run_call(&all);
  run_arrays(&per);
  /* the answers, checked against a plain loop */
  for (int64_t r = 0; r <= rows; r++) {
    const float *q = r < rows ? x + r * C : x;
    int64_t m = r < rows ? C : (int64_t)n, best = 0;
    for (int64_t i = 1; i < m; i++)
      if (q[i] > q[best]) best = i;
    if (best != (r < rows ? idx[r] : whole)) {
      fprintf(stderr, "hk bench --arrays: argmax differs from a loop's\n");
      exit(2);
    }
  }
  variant v[] = {{"argmax, whole (hk_call)", run_call, &all, 0, 0},
                 {"argmax(-1), per row", run_arrays, &per, 0, 0}};
  bench_time_group(v, 2);
  bench_report("argmax of (256, 768) f32 (NumPy's below)", v, 2);
  hk_argmax_ns = v[0].ns;
  hk_argmax_rows_ns = v[1].ns;
  free(x), free(idx);
}

/* 5. Row-wise softmax and layernorm, (256, 768): hk in one call against
 * the C loops on 2 OpenMP threads (and NumPy, later). */
typedef struct rows_ctx {
  float *x, *y, *w, *b, *mean, *rstd;
  int64_t rows, n;
  int threads;
  call_ctx hk;
} rows_ctx;

static void run_ref_softmax(void *p) {
  rows_ctx *c = p;
  ref_softmax(c->x, c->y, c->rows, c->n, c->threads);
}
static void run_ref_layernorm(void *p) {
  rows_ctx *c = p;
  ref_layernorm(c->x, c->w, c->b, c->y, c->mean, c->rstd, 1e-5f, c->rows,
                c->n, c->threads);
}

static double hk_softmax_ns, hk_layernorm_ns;

static void case_rows(int64_t rows, int64_t n) {
  hk_kernel_t *sm = kernel("softmax_f32"), *ln = kernel("layernorm_f32");
  if (!sm || hk_kernel_info(sm)->kind == HK_KIND_RAW || !ln) {
    printf("\nrow kernels: skipped (no rows-kind softmax_f32/layernorm_f32 "
           "in this build)\n");
    return;
  }
  size_t N = (size_t)(rows * n);
  rows_ctx ref = {bench_fbuf(N), bench_fbuf(N), bench_fbuf((size_t)n), bench_fbuf((size_t)n),
                  bench_fbuf((size_t)rows), bench_fbuf((size_t)rows), rows, n,
                  hk_get_threads(), {0}};
  rows_ctx h = ref;
  h.y = bench_fbuf(N);
  h.mean = bench_fbuf((size_t)rows);
  h.rstd = bench_fbuf((size_t)rows);
  /* softmax: (x, y) */
  call_ctx *c = &h.hk;
  c->k = sm;
  hk_array_init(&c->arr[param(sm, "x")], h.x, HK_F32, 2, (int64_t[]){rows, n});
  hk_array_init(&c->arr[param(sm, "y")], h.y, HK_F32, 2, (int64_t[]){rows, n});
  run_ref_softmax(&ref);
  if (hk_call_arrays(sm, c->arr, NULL) != HK_OK) {
    fprintf(stderr, "hk bench --arrays: softmax: %s\n", hk_last_error());
    exit(2);
  }
  if (!bench_close(h.y, ref.y, N, 1e-5, "softmax")) exit(2);
  variant v[] = {{"C loops, OpenMP", run_ref_softmax, &ref, 0, 0},
                 {"hk softmax_f32, one call", run_arrays, c, 0, 0}};
  bench_time_group(v, 2);
  char g[128];
  snprintf(g, sizeof g, "softmax over rows: (%lld, %lld) f32, %d threads",
           (long long)rows, (long long)n, ref.threads);
  bench_report(g, v, 2);
  bench_want("hk softmax / C -O3 -march=native -fopenmp", v[1].ns / v[0].ns, 1.0, 1);
  hk_softmax_ns = v[1].ns;
  /* layernorm */
  memset(c, 0, sizeof *c);
  c->k = ln;
  float eps = 1e-5f;
  int64_t sh[] = {rows, n};
  hk_array_init(&c->arr[param(ln, "x")], h.x, HK_F32, 2, sh);
  hk_array_init(&c->arr[param(ln, "weight")], h.w, HK_F32, 1, &n);
  hk_array_init(&c->arr[param(ln, "bias")], h.b, HK_F32, 1, &n);
  hk_array_init(&c->arr[param(ln, "y")], h.y, HK_F32, 2, sh);
  hk_array_init(&c->arr[param(ln, "mean")], h.mean, HK_F32, 1, &rows);
  hk_array_init(&c->arr[param(ln, "rstd")], h.rstd, HK_F32, 1, &rows);
  hk_array_init(&c->arr[param(ln, "eps")], &eps, HK_F32, 0, NULL);
  run_ref_layernorm(&ref);
  if (hk_call_arrays(ln, c->arr, NULL) != HK_OK) {
    fprintf(stderr, "hk bench --arrays: layernorm: %s\n", hk_last_error());
    exit(2);
  }
  if (!bench_close(h.y, ref.y, N, 1e-4, "layernorm")) exit(2);
  variant u[] = {{"C loops, OpenMP", run_ref_layernorm, &ref, 0, 0},
                 {"hk layernorm_f32, one call", run_arrays, c, 0, 0}};
  bench_time_group(u, 2);
  snprintf(g, sizeof g, "layernorm over rows: (%lld, %lld) f32, %d threads",
           (long long)rows, (long long)n, ref.threads);
  bench_report(g, u, 2);
  bench_want("hk layernorm / C -O3 -march=native -fopenmp", u[1].ns / u[0].ns, 1.0,
       1);
  hk_layernorm_ns = u[1].ns;
  free(ref.x), free(ref.y), free(ref.w), free(ref.b), free(ref.mean);
  free(ref.rstd), free(h.y), free(h.mean), free(h.rstd);
}

/* 6. GELU in f16 and bf16 against f32, 1M elements. */
static void case_gelu16(void) {
  hk_kernel_t *g32 = kernel("gelu_f32"), *g16 = kernel("gelu_f16"),
              *gb16 = kernel("gelu_bf16");
  if (!g32 || !g16 || !gb16) {
    printf("\ngelu f16/bf16: skipped (no gelu_f16/gelu_bf16 in this build)\n");
    return;
  }
  size_t n = 1 << 20;
  float *x = bench_fbuf(n), *o = bench_fbuf(n);
  uint16_t *h = malloc(n * 2), *ho = malloc(n * 2);
  for (size_t j = 0; j < n; j++) h[j] = (uint16_t)(0x3c00 ^ (j & 0x3ff));
  call_ctx a = {.k = g32, .args = {x, o}, .n = n};
  call_ctx b = {.k = g16, .args = {h, ho}, .n = n};
  call_ctx c = {.k = gb16, .args = {h, ho}, .n = n};
  variant v[] = {{"gelu_f32", run_call, &a, 0, 0},
                 {"gelu_f16", run_call, &b, 0, 0},
                 {"gelu_bf16", run_call, &c, 0, 0}};
  bench_time_group(v, 3);
  bench_report("gelu, 1M elements, 16-bit storage against f32", v, 3);
  bench_want("gelu f16 / f32 (1M)", v[1].ns / v[0].ns, 1.0, 1);
  bench_want("gelu bf16 / f32 (1M)", v[2].ns / v[0].ns, 1.0, 1);
  free(x), free(o), free(h), free(ho);

  /* Memory-bound ops, where half the bytes can tell (no target: what the
   * f16/bf16 conversions cost besides the math) */
  const char *ops[] = {"add", "sum"};
  n = (size_t)1 << 22;
  x = bench_fbuf(n), o = bench_fbuf(n);
  h = malloc(n * 2), ho = malloc(n * 2);
  for (size_t j = 0; j < n; j++) h[j] = (uint16_t)(0x3c00 ^ (j & 0x3ff));
  for (int op = 0; op < 2; op++) {
    char n32[32], n16[32], nb16[32], g[96];
    snprintf(n32, sizeof n32, "%s_f32", ops[op]);
    snprintf(n16, sizeof n16, "%s_f16", ops[op]);
    snprintf(nb16, sizeof nb16, "%s_bf16", ops[op]);
    hk_kernel_t *k32 = kernel(n32), *k16 = kernel(n16), *kb16 = kernel(nb16);
    if (!k32 || !k16 || !kb16) continue;
    call_ctx c32 = {.k = k32, .n = n}, c16 = {.k = k16, .n = n},
             cb16 = {.k = kb16, .n = n};
    int add = op == 0;
    c32.args[0] = x, c32.args[1] = add ? (void *)x : (void *)o;
    c32.args[2] = o;
    c16.args[0] = h, c16.args[1] = add ? (void *)h : (void *)ho;
    c16.args[2] = ho;
    cb16.args[0] = h, cb16.args[1] = add ? (void *)h : (void *)ho;
    cb16.args[2] = ho;
    variant w[] = {{n32, run_call, &c32, 0, 0},
                   {n16, run_call, &c16, 0, 0},
                   {nb16, run_call, &cb16, 0, 0}};
    bench_time_group(w, 3);
    snprintf(g, sizeof g, "%s, 4M elements, 16-bit storage against f32",
             ops[op]);
    bench_report(g, w, 3);
  }
  free(x), free(o), free(h), free(ho);
}

/* ---- NumPy ------------------------------------------------------------- */

static const char *NUMPY_SCRIPT =
    "import numpy as np, timeit, sys\n"
    "bench_reps = int(sys.argv[1])\n"
    "rng = np.random.default_rng(1)\n"
    "x = rng.standard_normal((256, 768)).astype(np.float32)\n"
    "w = rng.standard_normal(768).astype(np.float32)\n"
    "b = rng.standard_normal(768).astype(np.float32)\n"
    "def softmax():\n"
    "    e = np.exp(x - x.max(-1, keepdims=True))\n"
    "    return e / e.sum(-1, keepdims=True)\n"
    "def layernorm():\n"
    "    m = x.mean(-1, keepdims=True)\n"
    "    v = ((x - m) ** 2).mean(-1, keepdims=True)\n"
    "    r = 1 / np.sqrt(v + 1e-5)\n"
    "    return (x - m) * r * w + b, m, r\n"
    "x4 = rng.standard_normal((4096, 768)).astype(np.float32)\n"
    "def colsum():\n"
    "    return x4.sum(0)\n"
    "def argmax():\n"
    "    return x.argmax()\n"
    "def argmax_rows():\n"
    "    return x.argmax(-1)\n"
    "for name, f in (('softmax', softmax), ('layernorm', layernorm),\n"
    "                ('argmax', argmax), ('argmax_rows', argmax_rows),\n"
    "                ('colsum', colsum)):\n"
    "    t = timeit.Timer(f)\n"
    "    n, _ = t.autorange()\n"
    "    s = sorted(min(t.repeat(1, n)) / n for _ in range(bench_reps))\n"
    "    print(name, s[len(s) // 2] * 1e9)\n";

static void numpy_rows(void) {
  if (!hk_softmax_ns) return;
  char path[] = "/tmp/hk-arrays-bench-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return;
  FILE *f = fdopen(fd, "w");
  fputs(NUMPY_SCRIPT, f);
  fclose(f);
  char cmd[768];
  const char *py = bench_numpy_python();
  snprintf(cmd, sizeof cmd, "'%s' %s %d 2>/dev/null", py ? py : "python3",
           path, bench_reps);
  FILE *p = py ? popen(cmd, "r") : NULL;
  char name[32];
  double ns;
  printf("\nNumPy (x - x.max(-1, keepdims=True) ... formulations; x.argmax(), "
         "x.argmax(-1)), (256, 768) f32; colsum: x.sum(0) over (4096, 768)\n");
  int got = 0;
  while (p && fscanf(p, "%31s %lf", name, &ns) == 2) {
    const int shown = !strncmp(name, "argmax", 6) || !strcmp(name, "colsum");
    double hk = !strcmp(name, "softmax")     ? hk_softmax_ns
                : !strcmp(name, "layernorm") ? hk_layernorm_ns
                : !strcmp(name, "argmax")    ? hk_argmax_ns
                : !strcmp(name, "colsum")    ? hk_colsum_ns
                                             : hk_argmax_rows_ns;
    printf("  %-28s %12.0f ns   hk is %.2fx faster\n", name, ns, ns / hk);
    if (bench_json)
      fprintf(bench_json, ",\n  {\"group\": \"numpy\", \"variant\": \"%s\", \"ns\": %.1f}",
              name, ns);
    /* argmax and column sums have no target in the issue: shown, not
     * judged */
    if (!shown) {
      char w[64];
      snprintf(w, sizeof w, "NumPy %s / hk (want >= 2)", name);
      bench_want(w, ns / hk, 2.0, 0);
    }
    got++;
  }
  if (p) pclose(p);
  if (!got)
    printf("  skipped: NumPy not available (HK_NUMPY_PYTHON, python3, "
           "/usr/bin/python3)\n");
  unlink(path);
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: hk bench --arrays [--quick] [--no-numpy] [--json FILE]\n\n"
          "Measures the array model as ratios within one run: call cost,\n"
          "broadcasting, strided inputs, axis reductions, argmax, row kernels\n"
          "(softmax, layernorm) against C, and 16-bit types. Each group's\n"
          "variants are checked against its first, then timed interleaved:\n"
          "the median time per call over 11 repetitions.\n"
          "  --quick      5 repetitions, each shorter\n"
          "  --no-numpy   skip NumPy (run last, on the same shapes)\n"
          "  --json FILE  one record per variant (group, variant, ns)\n"
          "  --smoke      one untimed pass: every check and every line of\n"
          "               output, no figure worth reading (for tests)\n");
}

int main(int argc, char **argv) {
  bench_name = "hk bench --arrays";
  int quick = 0, numpy = 1;
  const char *json_path = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick")) quick = 1;
    else if (!strcmp(argv[i], "--smoke")) quick = 2; /* checks, no timing worth reading */
    else if (!strcmp(argv[i], "--no-numpy")) numpy = 0;
    else if (!strcmp(argv[i], "--json") && i + 1 < argc) json_path = argv[++i];
    else if (!strcmp(argv[i], "--hk") && i + 1 < argc) i++;
    else
      return bench_other_arg(argv[i], usage);
  }
  if (quick) {
    bench_reps = quick == 2 ? 1 : 5;
    bench_min_rep_ns = quick == 2 ? 1 : 5e6;
  }
  const char *none[] = {NULL};
  hk_options_t o = {.plugin_dirs = none, .flags = HK_NO_CACHE};
  if (hk_context_create(&ctx, &o) != HK_OK) {
    fprintf(stderr, "%s\n", hk_last_error());
    return 2;
  }
  if (json_path && !(bench_json = fopen(json_path, "w"))) {
    perror(json_path);
    return 1;
  }
  if (bench_json) fputs("[\n", bench_json);
  printf("hk bench --arrays: %d threads, median of %d interleaved "
         "repetitions\n",
         hk_get_threads(), bench_reps);
  case_call_cost();
  case_broadcast(256, 768);
  case_broadcast(4096, 768);
  case_strided();
  case_rowsum(256, 768);
  case_rowsum(16384, 64);
  case_rowsum(65536, 16);
  case_colsum();
  case_argmax();
  case_rows(256, 768);
  case_gelu16();
  if (numpy) numpy_rows();
  if (bench_json) {
    fputs("\n]\n", bench_json);
    fclose(bench_json);
  }
  bench_print_targets("issue 9");
  hk_context_destroy(ctx);
  return 0;
}
