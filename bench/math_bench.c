/* math_bench.c — hk bench --math: the stdlib's transcendental ops (gelu,
 * sigmoid, tanh, softmax; f32, one thread) against the same loops compiled
 * -Ofast -march=native (math_ofast.c, glibc's vector math) and NumPy.
 *
 * Targets (issue 10): inline <= 0.5x NumPy and <= 1.1x -Ofast at >= 65536
 * elements. "opt" is the same bodies as plugin kernels on tier opt
 * (-march=native), what the inline stdlib's ISA variants compile to; gelu,
 * sigmoid and tanh only. Variants are timed interleaved (each repetition runs each once,
 * in turn), the figure is the median per call: ratios within one run are
 * what this shared machine can give. softmax runs rows of 1024.
 *
 * Usage: hk bench --math [--quick] [--no-numpy]
 */
#include <hk.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "math_bench.h"
#include "timing.h"

#define COLS 1024
enum { GELU, SIGMOID, TANH, SOFTMAX, NOPS };
static const char *const op_names[NOPS] = {"gelu", "sigmoid", "tanh",
                                           "softmax"};

/* The stdlib's elementwise bodies as plugin kernels, run on tier opt. */
static const char opt_json[] =
    "{\"schema_version\": 1, \"kernels\": [\n"
#define OPT_KERNEL(name, body)                                              \
  " {\"name\": \"mb_" name "\", \"kind\": \"elementwise\",\n"              \
  "  \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},\n"  \
  "             {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\"}],\n"\
  "  \"body\": \"" body "\"}"
    OPT_KERNEL("gelu", "out = x / expp1(-2.0f * 0.79788456080286535588f "
                       "* (x + 0.044715f * x * x * x));") ",\n"
    OPT_KERNEL("sigmoid", "out = sigmoid(x);") ",\n"
    OPT_KERNEL("tanh", "out = tanh(x);") "]}\n";
#undef OPT_KERNEL
static hk_kernel_t *opt_k[NOPS];

static void run(int op, int v, const float *x, float *o, size_t n) {
  if (v == 2) {
    void *args[] = {(void *)x, o};
    hk_call(opt_k[op], n, args);
    return;
  }
  const int ofast = v == 1;
  switch (op) {
  case GELU: (ofast ? ofast_gelu : hk_gelu_f32)(x, o, n); break;
  case SIGMOID: (ofast ? ofast_sigmoid : hk_sigmoid_f32)(x, o, n); break;
  case TANH: (ofast ? ofast_tanh : hk_tanh_f32)(x, o, n); break;
  default: (ofast ? ofast_softmax : hk_softmax_f32)(x, o, n / COLS, COLS);
  }
}

/* One variant's call: op on x into o, n elements, as run() does it. */
typedef struct op_call {
  int op, v;
  const float *x;
  float *o;
  size_t n;
} op_call;

static void run_call(void *p) {
  const op_call *c = p;
  run(c->op, c->v, c->x, c->o, c->n);
}

/* Median ns per call of inline (ns[0]), -Ofast (ns[1]) and opt (ns[2],
 * -1 where there is none), interleaved (timing.h). */
static void time_op(int op, const float *x, float *o, size_t n, int reps,
                    double ns[3]) {
  const int nv = opt_k[op] ? 3 : 2;
  op_call c[3];
  variant v[3];
  for (int i = 0; i < nv; i++) {
    c[i] = (op_call){op, i, x, o, n};
    v[i] = (variant){op_names[op], run_call, &c[i], 0, 0};
  }
  bench_reps = reps;
  bench_time_group(v, nv);
  ns[2] = -1;
  for (int i = 0; i < nv; i++) ns[i] = v[i].ns;
}

/* NumPy's median ns per call of each op and size, from one Python process;
 * -1 where it could not run. */
static const char numpy_py[] =
    "import sys, timeit\n"
    "import numpy as np\n"
    "reps = int(sys.argv[1]); COLS = %d\n"
    "k, c3, h, one = (np.float32(v) for v in (0.7978845608, 0.044715, 0.5, 1))\n"
    "body = {'gelu': 'o[...] = h * x * (one + np.tanh(k * (x + c3 * x * x * x)))',\n"
    "  'sigmoid': 'np.divide(one, one + np.exp(-x), out=o)',\n"
    "  'tanh': 'np.tanh(x, out=o)',\n"
    "  'softmax': 'r = x.reshape(-1, COLS); e = np.exp(r - r.max(axis=1, keepdims=True)); "
    "o.reshape(-1, COLS)[...] = e / e.sum(axis=1, keepdims=True)'}\n"
    "for n in map(int, sys.argv[2:]):\n"
    "  x = np.random.default_rng(1).uniform(-4, 4, n).astype(np.float32); o = np.empty_like(x)\n"
    "  for op in ('gelu', 'sigmoid', 'tanh', 'softmax'):\n"
    "    t = timeit.Timer(body[op], globals=dict(globals(), x=x, o=o)); num = 1\n"
    "    while t.timeit(num) < 0.02: num *= 2\n"
    "    s = sorted(v / num for v in t.repeat(reps, num))\n"
    "    print(op, n, s[len(s) // 2] * 1e9, flush=True)\n";

static void numpy_times(const size_t *sizes, int nsizes, int reps,
                        double np_ns[][NOPS]) {
  for (int s = 0; s < nsizes; s++)
    for (int op = 0; op < NOPS; op++) np_ns[s][op] = -1;
  char script[2048], cmd[768];
  snprintf(script, sizeof script, numpy_py, COLS);
  char path[] = "/tmp/hk_math_bench_XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return;
  FILE *f = fdopen(fd, "w");
  fputs(script, f);
  fclose(f);
  const char *py = bench_numpy_python();
  int len = snprintf(cmd, sizeof cmd, "'%s' %s %d", py ? py : "python3", path,
                     reps);
  for (int s = 0; s < nsizes; s++)
    len += snprintf(cmd + len, sizeof cmd - (size_t)len, " %zu", sizes[s]);
  FILE *p = py ? popen(cmd, "r") : NULL;
  char line[256], name[32];
  size_t n;
  double ns;
  while (p && fgets(line, sizeof line, p))
    if (sscanf(line, "%31s %zu %lf", name, &n, &ns) == 3)
      for (int s = 0; s < nsizes; s++)
        for (int op = 0; op < NOPS; op++)
          if (sizes[s] == n && !strcmp(op_names[op], name)) np_ns[s][op] = ns;
  if (p) pclose(p);
  remove(path);
}

/* a / b, or "-" where either was not measured */
static void print_ratio(double a, double b) {
  if (a > 0 && b > 0)
    printf(" %8.2f", a / b);
  else
    printf(" %8s", "-");
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: hk bench --math [--quick] [--no-numpy]\n\n"
          "Times the stdlib's gelu, sigmoid, tanh and softmax (f32, one thread,\n"
          "65536 and 1M elements; softmax in rows of %d) inline, as the\n"
          "same loops compiled -Ofast -march=native, in NumPy and (all\n"
          "but softmax) as plugin kernels on tier opt: the median of 11\n"
          "interleaved runs, and the ratios to -Ofast and NumPy.\n"
          "  --quick     3 runs instead of 11\n"
          "  --no-numpy  skip NumPy\n",
          COLS);
}

int main(int argc, char **argv) {
  bench_name = "hk bench --math";
  int quick = 0, numpy = 1;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick")) quick = 1;
    else if (!strcmp(argv[i], "--no-numpy")) numpy = 0;
    else if (!strcmp(argv[i], "--hk")) i++; /* hk bench passes itself */
    else
      return bench_other_arg(argv[i], usage);
  }
  const size_t sizes[] = {65536, 1048576};
  const int nsizes = 2, reps = quick ? 3 : 11;
  hk_set_threads(1);
  const char *none[] = {NULL};
  hk_options_t opts = {0};
  opts.plugin_dirs = none;
  opts.flags = HK_NO_CACHE;
  opts.tier = HK_TIER_OPT;
  hk_context_t *ctx = NULL;
  if (hk_context_create(&ctx, &opts) == HK_OK &&
      hk_load_string(ctx, opt_json, sizeof opt_json - 1, "math_bench") ==
          HK_OK) {
    char name[32];
    for (int op = 0; op < SOFTMAX; op++) {
      snprintf(name, sizeof name, "mb_%s", op_names[op]);
      if (hk_kernel_find(ctx, name, &opt_k[op]) != HK_OK ||
          hk_kernel_tier(opt_k[op]) != HK_TIER_OPT)
        opt_k[op] = NULL;
    }
  } else {
    printf("(no tier opt: %s)\n", hk_last_error());
  }
  double ns[2][NOPS][3], np_ns[2][NOPS];
  for (int s = 0; s < nsizes; s++) {
    size_t n = sizes[s];
    float *x = malloc(n * sizeof *x), *o = malloc(n * sizeof *o);
    if (!x || !o) return 1;
    uint64_t r = 12345;
    for (size_t j = 0; j < n; j++) {
      r = r * 6364136223846793005ull + 1442695040888963407ull;
      x[j] = (float)((double)(r >> 11) / 9007199254740992.0 * 8 - 4);
    }
    for (int op = 0; op < NOPS; op++) time_op(op, x, o, n, reps, ns[s][op]);
    free(x);
    free(o);
  }
  if (numpy) numpy_times(sizes, nsizes, reps, np_ns);
  printf("hk bench --math: 1 thread, f32, median of %d interleaved runs "
         "(softmax: rows of %d)\n\n%-8s %8s %10s %10s %10s %10s %8s %8s "
         "%8s %8s\n",
         reps, COLS, "op", "n", "inline ns", "opt ns", "-Ofast ns",
         "NumPy ns", "in/Ofast", "in/NumPy", "opt/Ofst", "opt/NumPy");
  for (int s = 0; s < nsizes; s++)
    for (int op = 0; op < NOPS; op++) {
      const double *v = ns[s][op], np = numpy ? np_ns[s][op] : -1;
      printf("%-8s %8zu %10.0f %10.0f %10.0f %10.0f %8.2f", op_names[op],
             sizes[s], v[0], v[2], v[1], np, v[0] / v[1]);
      print_ratio(v[0], np);
      print_ratio(v[2], v[1]);
      print_ratio(v[2], np);
      printf("\n");
    }
  printf("\ntargets: /Ofast <= 1.10, /NumPy <= 0.50 (-1, -: not measured)\n");
  hk_context_destroy(ctx);
  return 0;
}
