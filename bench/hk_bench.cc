// hk_bench.cc — hk bench: what a dynamic kernel costs next to the inline
// stdlib, a hand-written loop, the naive dynamic path and NumPy.
//
// A measuring instrument first: every variant runs the same computation on
// the same data, which is checked before anything is timed; timing is Google
// Benchmark's (warm-up, calibrated iteration counts, repetitions, median /
// min / max across repetitions); inputs rotate among buffer sets where one
// set would sit in L1 and flatter every variant alike; results go through
// memory the compiler cannot drop. Variants:
//   loop      a hand-written C loop compiled with the library's flags
//   inline    the typed stdlib function (hk_add_f32 ...)
//   registry  the same stdlib kernel through its registry handle (hk_call)
//   jit       the same operation as a plugin kernel, tier jit (libtcc)
//   opt       the same plugin kernel, tier opt (system compiler, -O3 native)
//   naive     the seed projects' path: mutex, lookup by name, heap-marshalled
//             arguments, dlsym on every call, then the same compiled kernel
//   inline_mt inline on every CPU (the others run on one thread)
//   loop_mt   the hand-written loop cut into one slice per CPU, each on its
//             own std::thread (16M only: what the machine allows, next to
//             inline_mt in the same interleaved group)
//   numpy     NumPy, timed in Python by the same method
// Plus one-off costs: libtcc compile of one kernel, opt compile of one
// kernel, loading 50 kernel files cold and from the disk cache, context
// creation, and the size of libhk.
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench.h"
#include "hk.h"

namespace {

// ---- What is measured ------------------------------------------------------

enum Op { ADD, MUL, RELU, GELU, SUM, SAXPY, SOFTMAX, EMPTY, NOPS };
const char *const kOpNames[] = {"add", "mul",   "relu",    "gelu",
                                "sum", "saxpy", "softmax", "empty"};
// The stdlib kernel and the plugin kernel of each op.
const char *const kStdlib[] = {"add_f32", "mul_f32",   "relu_f32",    "gelu_f32",
                               "sum_f32", "axpy_f32",  "softmax_f32", "add_f32"};
const char *const kPlugin[] = {"b_add", "b_mul",   "b_relu_f32",    "b_gelu_f32",
                               "b_sum", "b_saxpy", "b_softmax_f32", "b_add"};
const int kNparams[] = {3, 3, 2, 2, 2, 3, 4, 3};
// Memory-bound ops: the only ones measured at 16M elements.
const bool kMemoryBound[] = {true, true, true, false, true, true, false, false};

enum Variant { LOOP, INLINE, REGISTRY, JIT, OPT, NAIVE, INLINE_MT, LOOP_MT, NUMPY, NVARIANTS };
const char *const kVariantNames[] = {"loop", "inline",    "registry",
                                     "jit",  "opt",       "naive",
                                     "inline_mt", "loop_mt", "numpy"};

// The plugin versions of the stdlib kernels: the same bodies, other names.
const char *const kBenchKernels = R"JSON({
  "schema_version": 1,
  "doc": "hk bench: the stdlib kernels under other names, as a user's plugins",
  "kernels": [
    {"name": "b_add", "kind": "elementwise",
     "params": [{"name": "x", "type": "f32", "role": "in"},
                {"name": "y", "type": "f32", "role": "in"},
                {"name": "out", "type": "f32", "role": "out"}],
     "body": "out = x + y;"},
    {"name": "b_mul", "kind": "elementwise",
     "params": [{"name": "x", "type": "f32", "role": "in"},
                {"name": "y", "type": "f32", "role": "in"},
                {"name": "out", "type": "f32", "role": "out"}],
     "body": "out = x * y;"},
    {"name": "b_relu", "kind": "elementwise", "types": {"T": ["f32"]},
     "params": [{"name": "x", "type": "T", "role": "in"},
                {"name": "out", "type": "T", "role": "out"}],
     "body": "out = x < 0 ? (T)0 : x;"},
    {"name": "b_gelu", "kind": "elementwise", "types": {"T": ["f32"]},
     "params": [{"name": "x", "type": "T", "role": "in"},
                {"name": "out", "type": "T", "role": "out"}],
     "body": ["const T k = (T)0.79788456080286535588;",
              "out = x / ((T)1 + exp((T)-2 * k * (x + (T)0.044715 * x * x * x)));"]},
    {"name": "b_sum", "kind": "reduction",
     "params": [{"name": "x", "type": "f32", "role": "in"},
                {"name": "out", "type": "f32", "role": "out"}],
     "map": "x", "combine": "a + b", "identity": "0"},
    {"name": "b_saxpy", "kind": "elementwise",
     "params": [{"name": "alpha", "type": "f32", "role": "scalar"},
                {"name": "x", "type": "f32", "role": "in"},
                {"name": "y", "type": "f32", "role": "inout"}],
     "body": "y = alpha * x + y;"},
    {"name": "b_softmax", "kind": "raw", "types": {"T": ["f32"]},
     "params": [{"name": "x", "type": "T", "role": "in", "len": "rows * cols"},
                {"name": "y", "type": "T", "role": "out", "len": "rows * cols"},
                {"name": "rows", "type": "i64", "role": "scalar"},
                {"name": "cols", "type": "i64", "role": "scalar"}],
     "cpu": ["for (int64_t r = 0; r < rows; ++r) {",
             "    const T *xr = x + r * cols;",
             "    T *yr = y + r * cols;",
             "    /* The maximum in 32 lanes, which the compiler vectorises (one running",
             "     * maximum is a chain it must keep scalar); the last block overlaps the",
             "     * one before it, which a maximum allows. The lanes may skip a NaN, so",
             "     * t sums the row in the same lanes: a NaN (or +inf with -inf) makes it",
             "     * NaN, and then the scan that propagates NaN gives m, as before.",
             "     * Whether a maximum of 0 is +0 or -0 changes no result. */",
             "    T m = -INFINITY, t = 0;",
             "    if (cols >= 32) {",
             "        T mv[32], tv[32];",
             "        for (int j = 0; j < 32; ++j)",
             "            mv[j] = tv[j] = xr[j];",
             "        for (int64_t c = 32; c < cols; c += 32) {",
             "            const T *xb = xr + (c + 32 <= cols ? c : cols - 32);",
             "            for (int j = 0; j < 32; ++j) {",
             "                if (xb[j] > mv[j])",
             "                    mv[j] = xb[j];",
             "                tv[j] += xb[j];",
             "            }",
             "        }",
             "        for (int j = 0; j < 8; ++j) {",
             "            if (mv[j + 8] > mv[j])",
             "                mv[j] = mv[j + 8];",
             "            if (mv[j + 24] > mv[j + 16])",
             "                mv[j + 16] = mv[j + 24];",
             "            if (mv[j + 16] > mv[j])",
             "                mv[j] = mv[j + 16];",
             "            tv[j] += tv[j + 8] + tv[j + 16] + tv[j + 24];",
             "        }",
             "        for (int j = 0; j < 8; ++j) {",
             "            if (mv[j] > m)",
             "                m = mv[j];",
             "            t += tv[j];",
             "        }",
             "    } else {",
             "        for (int64_t c = 0; c < cols; ++c) {",
             "            if (xr[c] > m)",
             "                m = xr[c];",
             "            t += xr[c];",
             "        }",
             "    }",
             "    if (t != t) {",
             "        m = -INFINITY;",
             "        for (int64_t c = 0; c < cols; ++c)",
             "            m = (xr[c] > m || xr[c] != xr[c]) ? xr[c] : m;",
             "    }",
             "    T sv[16], s;",
             "    int64_t c = 0;",
             "    const int64_t full = cols - cols % 16;",
             "    for (int j = 0; j < 16; ++j)",
             "        sv[j] = 0;",
             "    for (int64_t i = 0; i < full; ++i)",
             "        yr[i] = exp(xr[i] - m);",
             "    for (; c < full; c += 16)",
             "        for (int j = 0; j < 16; ++j)",
             "            sv[j] += yr[c + j];",
             "    for (int w = 8; w >= 1; w /= 2)",
             "        for (int j = 0; j < w; ++j)",
             "            sv[j] += sv[j + w];",
             "    s = sv[0];",
             "    for (; c < cols; ++c) {",
             "        const T e = exp(xr[c] - m);",
             "        yr[c] = e;",
             "        s += e;",
             "    }",
             "    const T r = 1 / s;",
             "    for (c = 0; c < cols; ++c)",
             "        yr[c] = yr[c] * r;",
             "}"]}
  ]
})JSON";

// ---- Options -----------------------------------------------------------------

struct Options {
  std::string json, plot, hk_path;
  bool quick = false, numpy = true, extras = true;
  double min_time = 0.05;
  int repetitions = 7;
  std::vector<int> ops;
  std::vector<size_t> sizes;
  std::vector<int> variants;
};

void usage(FILE *f) {
  std::fprintf(
      f,
      "usage: hk bench [--quick] [--json FILE] [--plot FILE.png]\n"
      "                [--ops add,mul,...] [--sizes 100,1000,...]\n"
      "                [--variants loop,inline,...] [--min-time S]\n"
      "                [--repetitions N] [--no-numpy] [--no-extras]\n"
      "       hk bench --arrays [--quick] [--no-numpy] [--json FILE]\n"
      "       hk bench --math [--quick] [--no-numpy]\n"
      "       hk bench --gpt2 [--quick] [--threads N] [--json FILE]\n"
      "                [--kernels DIR] [--only KERNEL] [--isolated]\n\n"
      "Measures every op at every size with every variant: median, min and\n"
      "max time per call across repetitions (Google Benchmark), and prints\n"
      "a table with each variant's ratio to inline, the one-off costs, and\n"
      "the targets of bench/README.md with this run's values.\n"
      "  --quick      a short run: fewer sizes and repetitions\n"
      "  --min-time S seconds per repetition (default 0.05)\n"
      "  --repetitions N  timed runs per case (default 7; with 1, that\n"
      "               run is the median, min and max)\n"
      "  --no-numpy   skip the NumPy variant\n"
      "  --no-extras  skip the one-off costs (compile, load, init, size)\n"
      "  --json FILE  one record per case (op, n, variant, median_ns,\n"
      "               min_ns, max_ns, cpu, cores), and the one-off costs\n"
      "  --plot FILE  ns per element against size, per variant and op (PNG,\n"
      "               drawn by gnuplot)\n"
      "ops: add mul relu gelu sum saxpy softmax empty (add at n = 0)\n"
      "variants: loop inline registry jit opt naive inline_mt loop_mt numpy\n"
      "          (inline_mt from n = 65536, loop_mt above 4M elements)\n"
      "The other benchmarks (each with its own --help):\n"
      "  --arrays     the array model: broadcasting, strides, axis\n"
      "               reductions, row kernels, 16-bit types\n"
      "  --math       gelu, sigmoid, tanh, softmax against -Ofast and NumPy\n"
      "  --gpt2       a GPT-2 layer's kernels against llm.c's C\n");
}

template <class T, size_t N>
int index_of(const T (&names)[N], const std::string &s) {
  for (size_t i = 0; i < N; i++)
    if (s == names[i]) return (int)i;
  return -1;
}

std::vector<std::string> split(const std::string &s) {
  std::vector<std::string> v;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) v.push_back(item);
  return v;
}

// ---- Data --------------------------------------------------------------------

struct Set {  // one buffer set and its argument array
  float *x = nullptr, *y = nullptr, *o = nullptr;
  float alpha = 0.5f;
  int64_t rows = 0, cols = 0;
  void *args[4] = {};
};

struct Data {
  int op = -1;
  size_t n = 0;
  std::vector<Set> sets;
  std::vector<float *> blocks;
  ~Data() {
    for (float *p : blocks) std::free(p);
  }
};

int64_t softmax_cols(size_t n) {
  if (n % 128 == 0) return 128;
  if (n % 125 == 0 && n > 125) return 125;
  return (int64_t)n;
}

// Buffer sets so that one pass over all of them covers about 4 MiB (a few
// times the per-core L2 of common CPUs): inputs that fit in cache then come
// from L2/L3, as in an application, not from a hot L1. Large sizes use one.
int sets_for(size_t bytes_per_set) {
  if (bytes_per_set == 0) return 1;
  size_t want = (4u << 20) / bytes_per_set;
  return (int)std::max<size_t>(1, std::min<size_t>(want, 64));
}

float *alloc(size_t n, std::vector<float *> &keep) {
  void *p = nullptr;
  if (posix_memalign(&p, 64, std::max<size_t>(n, 16) * sizeof(float))) {
    std::fprintf(stderr, "hk bench: out of memory\n");
    std::exit(2);
  }
  keep.push_back((float *)p);
  return (float *)p;
}

// The current (op, n) data, replaced when the next case needs other data.
Data *current;

Data &data_for(int op, size_t n) {
  if (current && current->op == op && current->n == n) return *current;
  delete current;
  current = new Data;
  Data &d = *current;
  d.op = op;
  d.n = n;
  size_t bufs = (op == RELU || op == GELU || op == SUM || op == SAXPY ||
                 op == SOFTMAX) ? 2 : 3;
  int k = sets_for(n * sizeof(float) * bufs);
  d.sets.resize((size_t)k);
  uint32_t seed = 12345;
  for (Set &s : d.sets) {
    s.x = alloc(n, d.blocks);
    s.y = alloc(n, d.blocks);
    s.o = alloc(n, d.blocks);
    for (size_t i = 0; i < n; i++) {
      seed = seed * 1664525u + 1013904223u;
      s.x[i] = (float)((seed >> 8) & 0xffff) / 16384.0f - 2.0f;  // [-2, 2)
      seed = seed * 1664525u + 1013904223u;
      s.y[i] = (float)((seed >> 8) & 0xffff) / 16384.0f - 2.0f;
      s.o[i] = 0;
    }
    s.cols = softmax_cols(n);
    s.rows = n ? (int64_t)n / s.cols : 0;
    switch (op) {
      case ADD: case MUL: case EMPTY:
        s.args[0] = s.x; s.args[1] = s.y; s.args[2] = s.o; break;
      case RELU: case GELU: case SUM:
        s.args[0] = s.x; s.args[1] = s.o; break;
      case SAXPY:
        s.args[0] = &s.alpha; s.args[1] = s.x; s.args[2] = s.y; break;
      case SOFTMAX:
        s.args[0] = s.x; s.args[1] = s.o; s.args[2] = &s.rows;
        s.args[3] = &s.cols; break;
    }
  }
  return d;
}

// ---- Variants ------------------------------------------------------------------

struct Kernels {  // handles of each op, per variant that has them
  hk_kernel_t *registry[NOPS] = {}, *jit[NOPS] = {}, *opt[NOPS] = {};
};
Kernels K;

inline size_t call_n(int op, size_t n) { return op == EMPTY ? 0 : n; }

// The direct variants, one function per op, so that each benchmark loop
// calls straight into what it measures.
template <int OP>
inline void run_loop(Set &s, size_t n) {
  if (OP == ADD || OP == EMPTY) loop_add(s.x, s.y, s.o, n);
  if (OP == MUL) loop_mul(s.x, s.y, s.o, n);
  if (OP == RELU) loop_relu(s.x, s.o, n);
  if (OP == GELU) loop_gelu(s.x, s.o, n);
  if (OP == SUM) s.o[0] = loop_sum(s.x, n);
  if (OP == SAXPY) loop_saxpy(s.alpha, s.x, s.y, n);
  if (OP == SOFTMAX) loop_softmax(s.x, s.o, s.rows, s.cols);
}

template <int OP>
inline void run_inline(Set &s, size_t n) {
  if (OP == ADD || OP == EMPTY) hk_add_f32(s.x, s.y, s.o, n);
  if (OP == MUL) hk_mul_f32(s.x, s.y, s.o, n);
  if (OP == RELU) hk_relu_f32(s.x, s.o, n);
  if (OP == GELU) hk_gelu_f32(s.x, s.o, n);
  if (OP == SUM) hk_sum_f32(s.x, s.o, n);
  if (OP == SAXPY) hk_axpy_f32(s.alpha, s.x, s.y, n);
  if (OP == SOFTMAX) hk_softmax_f32(s.x, s.o, (size_t)s.rows, (size_t)s.cols);
}

// The hand-written loop on every CPU: one slice per thread, threads
// started for the call (their start, some 50 us, is under 1% of a 16M call,
// the only size this runs at). Sums add the slices' sums in slice order.
template <int OP>
void run_loop_mt(Set &s, size_t n) {
  unsigned t = std::max(1u, std::thread::hardware_concurrency());
  size_t slice = (n / t + 63) & ~(size_t)63;
  std::vector<float> part(t, 0.0f);
  auto work = [&](unsigned k) {
    size_t b = std::min(n, k * slice), e = std::min(n, b + slice);
    Set c = s;
    c.x += b;
    c.y += b;
    c.o += b;
    if (OP == SUM)
      part[k] = loop_sum(c.x, e - b);
    else
      run_loop<OP>(c, e - b);
  };
  std::vector<std::thread> team;
  for (unsigned k = 1; k < t; k++) team.emplace_back(work, k);
  work(0);
  for (std::thread &th : team) th.join();
  if (OP == SUM) {
    float sum = 0;
    for (float p : part) sum += p;
    s.o[0] = sum;
  }
}

typedef void (*direct_fn)(Set &, size_t);

direct_fn loop_mt_fns[NOPS] = {
    run_loop_mt<ADD>,  run_loop_mt<MUL>,   run_loop_mt<RELU>,
    run_loop_mt<GELU>, run_loop_mt<SUM>,   run_loop_mt<SAXPY>,
    run_loop_mt<SOFTMAX>, run_loop_mt<EMPTY>};

direct_fn loop_fns[NOPS] = {run_loop<ADD>,  run_loop<MUL>,   run_loop<RELU>,
                            run_loop<GELU>, run_loop<SUM>,   run_loop<SAXPY>,
                            run_loop<SOFTMAX>, run_loop<EMPTY>};
direct_fn inline_fns[NOPS] = {
    run_inline<ADD>, run_inline<MUL>,   run_inline<RELU>,    run_inline<GELU>,
    run_inline<SUM>, run_inline<SAXPY>, run_inline<SOFTMAX>, run_inline<EMPTY>};

// The timing loops of the direct variants, one per op, so that the timed
// loop calls loop_add / hk_add_f32 ... directly, as a user's code does: a
// call through a table here would add an indirect call to the very baseline
// the handles are measured against.
template <int OP, bool LOOP_VARIANT>
void time_direct(benchmark::State &st, std::vector<Set> &sets, size_t m) {
  size_t k = 0, nsets = sets.size();
  for (auto _ : st) {
    if (LOOP_VARIANT)
      run_loop<OP>(sets[k], m);
    else
      run_inline<OP>(sets[k], m);
    benchmark::ClobberMemory();
    if (++k == nsets) k = 0;
  }
}

typedef void (*timer_fn)(benchmark::State &, std::vector<Set> &, size_t);

timer_fn loop_timers[NOPS] = {
    time_direct<ADD, true>,  time_direct<MUL, true>,   time_direct<RELU, true>,
    time_direct<GELU, true>, time_direct<SUM, true>,   time_direct<SAXPY, true>,
    time_direct<SOFTMAX, true>, time_direct<EMPTY, true>};
timer_fn inline_timers[NOPS] = {
    time_direct<ADD, false>,  time_direct<MUL, false>,   time_direct<RELU, false>,
    time_direct<GELU, false>, time_direct<SUM, false>,   time_direct<SAXPY, false>,
    time_direct<SOFTMAX, false>, time_direct<EMPTY, false>};

// The stdlib's softmax is a rows kernel: a flat hk_call runs one row, so its
// registry handle runs s.rows rows of s.cols through the core's rows call (in
// libhk, hidden: hk-bench links the static library). The plugin softmax
// (raw, rows and cols scalars) takes hk_call.
extern "C" int hk__call_rows_cpu(const hk_kernel_t *k, size_t rows, size_t n,
                                 void *const *args);
inline int call_handle(const hk_kernel_t *h, int op, size_t m, const Set &s) {
  if (op == SOFTMAX && hk_kernel_info(h)->kind == HK_KIND_ROWS)
    return hk__call_rows_cpu(h, (size_t)s.rows, (size_t)s.cols, s.args);
  return hk_call(h, m, s.args);
}

// Runs one call of variant v (not numpy) on set s.
void run_variant(int op, int v, Set &s, size_t n) {
  size_t m = call_n(op, n);
  switch (v) {
    case LOOP: loop_fns[op](s, m); break;
    case LOOP_MT: loop_mt_fns[op](s, m); break;
    case INLINE:
    case INLINE_MT: inline_fns[op](s, m); break;
    case REGISTRY: call_handle(K.registry[op], op, m, s); break;
    case JIT: call_handle(K.jit[op], op, m, s); break;
    case OPT: call_handle(K.opt[op], op, m, s); break;
    case NAIVE: naive_call(kPlugin[op], s.args, m); break;
  }
}

// ---- Checking that every variant computes the same thing -------------------------

// Copies set 0, runs variant v on the copy, returns its output.
std::vector<float> output_of(int op, int v, size_t n) {
  Data &d = data_for(op, n);
  Set s = d.sets[0];
  std::vector<float> x(s.x, s.x + n), y(s.y, s.y + n), o(std::max<size_t>(n, 1), 0);
  Set c = s;
  c.x = x.data();
  c.y = y.data();
  c.o = o.data();
  switch (op) {
    case ADD: case MUL: case EMPTY:
      c.args[0] = c.x; c.args[1] = c.y; c.args[2] = c.o; break;
    case RELU: case GELU: case SUM:
      c.args[0] = c.x; c.args[1] = c.o; break;
    case SAXPY:
      c.args[0] = &c.alpha; c.args[1] = c.x; c.args[2] = c.y; break;
    case SOFTMAX:
      c.args[0] = c.x; c.args[1] = c.o; c.args[2] = &c.rows; c.args[3] = &c.cols;
      break;
  }
  hk_set_threads(v == INLINE_MT ? 0 : 1);
  run_variant(op, v, c, n);
  if (op == SAXPY) return y;
  if (op == SUM) return std::vector<float>(1, o[0]);
  return o;
}

// Checks variant v against inline; returns an empty string or the problem.
std::string check_variant(int op, int v, size_t n) {
  std::vector<float> want = output_of(op, INLINE, n), got = output_of(op, v, n);
  if (want.size() != got.size()) return "different output sizes";
  for (size_t i = 0; i < want.size(); i++) {
    float a = want[i], b = got[i];
    if (a == b || (std::isnan(a) && std::isnan(b))) continue;
    // Sums combined in another order differ by rounding, nothing else:
    // loop adds in sequence, naive reduces n elements in one block.
    bool reorder = op == SUM && (v == LOOP || v == LOOP_MT || v == NAIVE);
    // A hand-written softmax without NaN handling matches on finite data.
    double tol = reorder ? 1e-4 * std::max(1.0, (double)std::fabs(a)) * std::sqrt((double)n) : 0;
    if (std::fabs((double)a - (double)b) <= tol) continue;
    char msg[200];
    std::snprintf(msg, sizeof msg, "element %zu: %.9g instead of %.9g", i,
                  (double)b, (double)a);
    return msg;
  }
  return "";
}

// ---- Timing -----------------------------------------------------------------

struct Case {
  int op;
  size_t n;
  int v;
  double median = NAN, min = NAN, max = NAN;  // ns per call
};
std::vector<Case> cases;

void bench_case(benchmark::State &st, size_t idx) {
  Case &c = cases[idx];
  Data &d = data_for(c.op, c.n);
  hk_set_threads(c.v == INLINE_MT ? 0 : 1);
  size_t m = call_n(c.op, c.n);
  size_t k = 0, nsets = d.sets.size();
  // One loop per kind of variant, so that the loop measures the call
  // itself and not a dispatch of ours.
  switch (c.v) {
    case LOOP:
      loop_timers[c.op](st, d.sets, m);
      break;
    case LOOP_MT: {
      direct_fn f = loop_mt_fns[c.op];  // thread start-up dwarfs a call here
      for (auto _ : st) {
        f(d.sets[k], m);
        benchmark::ClobberMemory();
        if (++k == nsets) k = 0;
      }
      break;
    }
    case INLINE:
    case INLINE_MT:
      inline_timers[c.op](st, d.sets, m);
      break;
    case REGISTRY:
    case JIT:
    case OPT: {
      hk_kernel_t *h = c.v == REGISTRY ? K.registry[c.op]
                       : c.v == JIT    ? K.jit[c.op]
                                       : K.opt[c.op];
      for (auto _ : st) {
        benchmark::DoNotOptimize(call_handle(h, c.op, m, d.sets[k]));
        benchmark::ClobberMemory();
        if (++k == nsets) k = 0;
      }
      break;
    }
    case NAIVE: {
      const char *name = kPlugin[c.op];
      for (auto _ : st) {
        benchmark::DoNotOptimize(naive_call(name, d.sets[k].args, m));
        benchmark::ClobberMemory();
        if (++k == nsets) k = 0;
      }
      break;
    }
  }
}

class Collector : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context &) override { return true; }
  void ReportRuns(const std::vector<Run> &runs) override {
    for (const Run &r : runs) {
      const std::string &name = r.run_name.function_name;  // "gG/IDX"
      size_t idx = (size_t)std::stoul(name.substr(name.find('/') + 1));
      double t = r.GetAdjustedRealTime();  // ns: the unit set below
      if (r.run_type == Run::RT_Iteration) {
        // Google Benchmark computes no aggregates from a single
        // repetition and reports the run itself: it is all three.
        if (r.repetitions != 1) continue;
        cases[idx].median = cases[idx].min = cases[idx].max = t;
      } else {
        if (r.aggregate_name == "median") cases[idx].median = t;
        if (r.aggregate_name == "min") cases[idx].min = t;
        if (r.aggregate_name == "max") cases[idx].max = t;
        if (r.aggregate_name != "median") continue;
      }
      std::fprintf(stderr, ".");
      std::fflush(stderr);
    }
  }
};

double stat_min(const std::vector<double> &v) {
  return *std::min_element(v.begin(), v.end());
}
double stat_max(const std::vector<double> &v) {
  return *std::max_element(v.begin(), v.end());
}

// ---- NumPy ----------------------------------------------------------------------

// NumPy runs in a Python process started once and asked for one (op, n) at
// a time, right after the C variants of that (op, n), so that it is timed
// in the same state of the machine as they are (on a shared machine the
// same loop can run at half speed a minute later). Each case is timed like
// the C ones: warm-up, an iteration count calibrated to --min-time, then
// --repetitions timed runs, rotating among the same number of buffer sets;
// the statement is compiled into timeit's loop, so no Python function call
// is added to what a NumPy user's own line costs.
const char *const kNumpyScript = R"PY(
import itertools, json, sys, timeit
import numpy as np
min_time, reps = float(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(12345)
def cols_for(n):
    if n % 128 == 0: return 128
    if n % 125 == 0 and n > 125: return 125
    return n
body = {
    "add": "np.add(x, y, out=o)",
    "empty": "np.add(x, y, out=o)",
    "mul": "np.multiply(x, y, out=o)",
    "relu": "np.maximum(x, zero, out=o)",
    "gelu": "o[...] = half * x * (one + np.tanh(k * (x + c3 * x * x * x)))",
    "sum": "s = x.sum()",
    "saxpy": "y += alpha * x",
    "softmax": "r = x.reshape(-1, cols); e = np.exp(r - r.max(axis=1, keepdims=True)); "
               "o.reshape(-1, cols)[...] = e / e.sum(axis=1, keepdims=True)",
}
print("ready", flush=True)
for line in sys.stdin:
    op, n = line.split()
    n = int(n)
    m = 0 if op == "empty" else n
    per = 3 if op in ("add", "mul", "empty") else 2
    nsets = max(1, min(64, (4 << 20) // max(1, m * 4 * per)))
    sets = [(rng.uniform(-2, 2, m).astype(np.float32),
             rng.uniform(-2, 2, m).astype(np.float32),
             np.zeros(m, np.float32)) for _ in range(nsets)]
    g = {"np": np, "nxt": itertools.cycle(sets).__next__, "cols": cols_for(m) if m else 1,
         "zero": np.float32(0), "half": np.float32(0.5), "one": np.float32(1),
         "k": np.float32(0.79788456080286535588), "c3": np.float32(0.044715),
         "alpha": np.float32(0.5)}
    t = timeit.Timer("x, y, o = nxt()\n" + body[op], globals=g)
    t.timeit(nsets)                                   # warm up
    number = 1
    while t.timeit(number) < min_time and number < 1 << 24:
        number *= 2                                   # calibrate
    samples = sorted(v * 1e9 / number for v in t.repeat(reps, number))
    print(json.dumps({"median_ns": samples[len(samples) // 2],
                      "min_ns": samples[0], "max_ns": samples[-1]}), flush=True)
    del sets, g, t
)PY";

std::string find_python_with_numpy() {
  // python3 first (a virtual environment's), then the system's, which is
  // where Debian's python3-numpy is.
  for (const char *py : {"python3", "/usr/bin/python3"}) {
    std::string cmd = std::string(py) + " -c 'import numpy' >/dev/null 2>&1";
    if (std::system(cmd.c_str()) == 0) return py;
  }
  return "";
}

struct Numpy {
  pid_t pid = -1;
  FILE *to = nullptr, *from = nullptr;
  std::string note;  // printed under the table
};

// Starts the NumPy process. On failure, returns false with the reason in
// np.note, and the numpy variant is skipped.
bool numpy_start(Numpy &np, const Options &o) {
  std::string py = find_python_with_numpy();
  if (py.empty()) {
    np.note = "numpy: skipped (python3 -c \"import numpy\" fails)";
    return false;
  }
  char path[] = "/tmp/hk-bench-np-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) {
    np.note = "numpy: skipped (no temporary file)";
    return false;
  }
  ssize_t w = write(fd, kNumpyScript, std::strlen(kNumpyScript));
  close(fd);
  int in[2], out[2];
  if (w < 0 || pipe(in) != 0) {
    unlink(path);
    np.note = "numpy: skipped (cannot write the script)";
    return false;
  }
  if (pipe(out) != 0) {
    close(in[0]);
    close(in[1]);
    unlink(path);
    np.note = "numpy: skipped (no pipe)";
    return false;
  }
  char min_time[32], reps[16];
  std::snprintf(min_time, sizeof min_time, "%g", o.min_time);
  std::snprintf(reps, sizeof reps, "%d", o.repetitions);
  np.pid = fork();
  if (np.pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    close(in[0]);
    close(in[1]);
    close(out[0]);
    close(out[1]);
    execlp(py.c_str(), py.c_str(), path, min_time, reps, (char *)nullptr);
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  np.to = fdopen(in[1], "w");
  np.from = fdopen(out[0], "r");
  char line[64];
  bool ok = np.pid > 0 && np.to && np.from &&
            std::fgets(line, sizeof line, np.from) &&
            std::strncmp(line, "ready", 5) == 0;
  unlink(path);  // Python has read it
  np.note = ok ? "numpy: " + py + ", timed right after the C variants of "
                 "each case"
               : "numpy: skipped (the script did not start)";
  return ok;
}

// Times NumPy on (op, n); adds its case. False when the process failed.
bool numpy_time(Numpy &np, int op, size_t n) {
  std::fprintf(np.to, "%s %zu\n", kOpNames[op], n);
  std::fflush(np.to);
  char line[512];
  if (!std::fgets(line, sizeof line, np.from)) {
    np.note = "numpy: the script failed";
    return false;
  }
  std::string s(line);
  auto num = [&](const char *key) {
    size_t at = s.find(std::string("\"") + key + "\": ");
    return at == std::string::npos
               ? NAN
               : std::atof(s.c_str() + at + std::strlen(key) + 4);
  };
  Case c{op, n, NUMPY};
  c.median = num("median_ns");
  c.min = num("min_ns");
  c.max = num("max_ns");
  cases.push_back(c);
  std::fprintf(stderr, "n");
  return true;
}

void numpy_stop(Numpy &np) {
  if (np.to) std::fclose(np.to);  // end of input: the script exits
  if (np.from) std::fclose(np.from);
  if (np.pid > 0) waitpid(np.pid, nullptr, 0);
  np.to = np.from = nullptr;
  np.pid = -1;
}

// ---- One-off costs ---------------------------------------------------------------

struct Measure {
  std::string what, variant;
  size_t n;
  double median = NAN, min = NAN, max = NAN;
  std::string note;
};
std::vector<Measure> measures;

double now_ns() {
  return (double)std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void record(const std::string &what, const std::string &variant, size_t n,
            std::vector<double> t, const std::string &note = "") {
  std::sort(t.begin(), t.end());
  Measure m{what, variant, n, t[t.size() / 2], t.front(), t.back(), note};
  measures.push_back(m);
}

std::string make_tempdir(const char *tag) {
  std::string t = std::string("/tmp/hk-bench-") + tag + "-XXXXXX";
  std::vector<char> buf(t.begin(), t.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data())) {
    std::perror("hk bench: mkdtemp");
    std::exit(2);
  }
  return buf.data();
}

void remove_tree(const std::string &dir) {
  std::string cmd = "rm -rf '" + dir + "'";
  if (std::system(cmd.c_str()) != 0) std::fprintf(stderr, "cannot remove %s\n", dir.c_str());
}

// One kernel of a numbered family (each a different file to compile).
std::string one_kernel(int i) {
  char buf[1024];
  std::snprintf(buf, sizeof buf,
                "{\"schema_version\": 1, \"name\": \"one%d\", \"kind\": "
                "\"elementwise\",\n \"params\": [{\"name\": \"alpha\", \"type\": "
                "\"f32\", \"role\": \"scalar\"},\n {\"name\": \"x\", \"type\": "
                "\"f32\", \"role\": \"in\"},\n {\"name\": \"y\", \"type\": "
                "\"f32\", \"role\": \"inout\"}],\n \"body\": \"y = alpha * x + "
                "y + %d;\"}",
                i, i);
  return buf;
}

std::string libhk_path();
long file_size(const std::string &p);

// Loading libhk.so and making a first stdlib call, in a fresh child each
// time (the parent has libhk linked in statically, so nothing is shared).
// Returns the times in ns, or nothing when libhk.so is not found.
std::vector<double> first_call_times(int reps) {
  std::vector<double> t;
  std::string so = libhk_path();
  if (so.empty()) return t;
  for (int r = 0; r < reps; r++) {
    int fds[2];
    if (pipe(fds)) break;
    pid_t pid = fork();
    if (pid == 0) {
      close(fds[0]);
      double t0 = now_ns();
      void *h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
      typedef void (*add_fn)(const float *, const float *, float *, size_t);
      add_fn add = h ? (add_fn)dlsym(h, "hk_add_f32") : nullptr;
      float x[100] = {0}, y[100] = {0}, z[100];
      if (add) add(x, y, z, 100);
      double dt = add ? now_ns() - t0 : -1;
      if (write(fds[1], &dt, sizeof dt) != (ssize_t)sizeof dt) _exit(1);
      _exit(0);
    }
    close(fds[1]);
    double dt = -1;
    if (read(fds[0], &dt, sizeof dt) != (ssize_t)sizeof dt) dt = -1;
    close(fds[0]);
    int status;
    waitpid(pid, &status, 0);
    if (dt < 0) break;
    t.push_back(dt);
  }
  return t;
}

void measure_extras(const Options &o) {
  const char *const none[] = {nullptr};
  {
    std::vector<double> t = first_call_times(o.quick ? 10 : 30);
    if (!t.empty())
      record("libhk_load", "inline", 0, t,
             "a fresh process: dlopen(libhk.so) and a first hk_add_f32 call");
  }
  // Context creation: the stdlib registry, no plugins, no cache.
  {
    std::vector<double> t;
    for (int i = 0; i < (o.quick ? 20 : 100); i++) {
      hk_options_t opts = {};
      opts.plugin_dirs = none;
      opts.flags = HK_NO_CACHE;
      double t0 = now_ns();
      hk_context_t *ctx;
      hk_context_create(&ctx, &opts);
      t.push_back(now_ns() - t0);
      hk_context_destroy(ctx);
    }
    record("context_create", "inline", 0, t, "no plugins: the stdlib registry");
  }
  // libtcc: load (parse, generate, compile, register) one kernel.
  {
    hk_options_t opts = {};
    opts.plugin_dirs = none;
    opts.tier = HK_TIER_JIT;
    opts.flags = HK_NO_CACHE;
    hk_context_t *ctx;
    hk_context_create(&ctx, &opts);
    std::vector<double> t;
    for (int i = 0; i < (o.quick ? 20 : 100); i++) {
      std::string k = one_kernel(i);
      double t0 = now_ns();
      if (hk_load_string(ctx, k.c_str(), k.size(), "one") != HK_OK)
        std::fprintf(stderr, "%s", hk_last_error());
      t.push_back(now_ns() - t0);
    }
    record("jit_compile_one", "jit", 1, t,
           "hk_load_string of one kernel, tier jit: parse, generate, libtcc");
    hk_context_destroy(ctx);
  }
  // The system compiler: one kernel, tier opt, no cache.
  {
    hk_options_t opts = {};
    opts.plugin_dirs = none;
    opts.tier = HK_TIER_OPT;
    opts.flags = HK_NO_CACHE;
    hk_context_t *ctx;
    hk_context_create(&ctx, &opts);
    std::vector<double> t;
    for (int i = 0; i < (o.quick ? 3 : 7); i++) {
      std::string k = one_kernel(1000 + i);
      double t0 = now_ns();
      int rc = hk_load_string(ctx, k.c_str(), k.size(), "one");
      t.push_back(now_ns() - t0);
      if (rc != HK_OK) {
        std::fprintf(stderr, "%s", hk_last_error());
        break;
      }
    }
    record("opt_compile_one", "opt", 1, t,
           "hk_load_string of one kernel, tier opt forced: the system compiler");
    hk_context_destroy(ctx);
  }
  // A folder of 50 kernel files: cold (empty cache: libtcc), then warm.
  {
    std::string dir = make_tempdir("plugins"), cache = make_tempdir("cache");
    chmod(dir.c_str(), 0700);
    for (int i = 0; i < 50; i++) {
      std::ofstream f(dir + "/k" + std::to_string(i) + ".json");
      f << one_kernel(2000 + i);
    }
    const char *dirs[] = {dir.c_str(), nullptr};
    hk_options_t opts = {};
    opts.plugin_dirs = dirs;
    opts.cache_dir = cache.c_str();
    std::vector<double> cold, fill, warm;
    for (int r = 0; r < (o.quick ? 1 : 3); r++) {
      remove_tree(cache);
      mkdir(cache.c_str(), 0700);
      double t0 = now_ns();
      hk_context_t *ctx;
      hk_context_create(&ctx, &opts);
      cold.push_back(now_ns() - t0);
      hk_context_wait(ctx);
      fill.push_back(now_ns() - t0);
      hk_context_destroy(ctx);
    }
    for (int r = 0; r < (o.quick ? 5 : 20); r++) {
      double t0 = now_ns();
      hk_context_t *ctx;
      hk_context_create(&ctx, &opts);
      warm.push_back(now_ns() - t0);
      hk_kernel_t *k;
      if (hk_kernel_find(ctx, "one2000", &k) != HK_OK ||
          hk_kernel_tier(k) != HK_TIER_OPT)
        std::fprintf(stderr, "hk bench: warm start did not come from the cache\n");
      hk_context_destroy(ctx);
    }
    record("load_50_cold", "jit", 50, cold,
           "hk_context_create on 50 kernel files, empty cache: all callable (jit)");
    record("load_50_opt_ready", "opt", 50, fill,
           "the same, until every opt build is done and cached (in batches)");
    record("load_50_warm", "opt", 50, warm,
           "hk_context_create on the same 50 files, from the disk cache (opt)");
    remove_tree(dir);
    remove_tree(cache);
  }
}

// ---- Output ----------------------------------------------------------------------

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

const Case *find_case(int op, size_t n, int v) {
  for (const Case &c : cases)
    if (c.op == op && c.n == n && c.v == v) return &c;
  return nullptr;
}

std::string json_escape(const std::string &s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    o += c;
  }
  return o;
}

long file_size(const std::string &p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 ? (long)st.st_size : -1;
}

// libhk.so next to this program: the build tree or an installed prefix.
std::string libhk_path() {
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return "";
  self[n] = '\0';
  std::string dir(self);
  dir = dir.substr(0, dir.rfind('/'));
  for (const char *rel : {"", "/..", "/../lib", "/../lib/x86_64-linux-gnu"}) {
    std::string so = dir + rel + "/libhk.so";
    if (file_size(so) >= 0) return so;
  }
  return "";
}

// The sizes of libhk.so and libhk.a (-1 when not found).
std::pair<long, long> libhk_sizes() {
  std::string so = libhk_path();
  if (so.empty()) return {-1, -1};
  return {file_size(so), file_size(so.substr(0, so.size() - 3) + ".a")};
}

void print_table(const Options &o) {
  std::string reps = o.repetitions == 1
                         ? "one repetition"
                         : "median of " + std::to_string(o.repetitions) +
                               " repetitions";
  std::printf("\nns per call (%s), and each variant / inline in parentheses\n",
              reps.c_str());
  for (int op : o.ops) {
    std::printf("\n%-8s %9s", kOpNames[op], "n");
    for (int v : o.variants) std::printf(" %18s", kVariantNames[v]);
    std::printf("\n");
    for (size_t n : o.sizes) {
      const Case *base = find_case(op, n, INLINE);
      bool any = false;
      for (int v : o.variants) any |= find_case(op, n, v) != nullptr;
      if (!any) continue;
      std::printf("%-8s %9zu", "", op == EMPTY ? (size_t)0 : n);
      for (int v : o.variants) {
        const Case *c = find_case(op, n, v);
        if (!c || std::isnan(c->median)) {
          std::printf(" %18s", "-");
          continue;
        }
        char cell[64];
        if (base && !std::isnan(base->median) && base->median > 0)
          std::snprintf(cell, sizeof cell, "%.1f (%.2f)", c->median,
                        c->median / base->median);
        else
          std::snprintf(cell, sizeof cell, "%.1f", c->median);
        std::printf(" %18s", cell);
      }
      std::printf("\n");
      if (op == EMPTY) break;
    }
  }
  if (!measures.empty()) {
    std::printf("\none-off costs (median, min .. max)\n");
    for (const Measure &m : measures)
      std::printf("  %-18s %10.3f ms  (%.3f .. %.3f)  %s\n", m.what.c_str(),
                  m.median / 1e6, m.min / 1e6, m.max / 1e6, m.note.c_str());
  }
  auto sizes = libhk_sizes();
  if (sizes.first >= 0)
    std::printf("  libhk.so %ld bytes, libhk.a %ld bytes\n", sizes.first,
                sizes.second);
}

// ---- The issue's targets, checked against this run --------------------------

const Measure *find_measure(const std::string &what) {
  for (const Measure &m : measures)
    if (m.what == what) return &m;
  return nullptr;
}

// The ratios a / b (medians) over the cases that pass keep(op, n), with the
// worst one (largest, or smallest when want_high) and where it is.
struct Ratios {
  std::vector<double> all;
  double worst = NAN;
  std::string where;
};

template <class Keep>
Ratios ratios(const Options &o, int a, int b, bool want_high, Keep keep) {
  Ratios r;
  for (int op : o.ops) {
    if (op == EMPTY) continue;  // pure call cost: its own target, in ns
    for (size_t n : o.sizes) {
      const Case *ca = find_case(op, n, a), *cb = find_case(op, n, b);
      if (!ca || !cb || !keep(op, n) || !(cb->median > 0) ||
          std::isnan(ca->median))
        continue;
      double q = ca->median / cb->median;
      r.all.push_back(q);
      if (std::isnan(r.worst) || (want_high ? q < r.worst : q > r.worst)) {
        r.worst = q;
        r.where = std::string(kOpNames[op]) + " n=" + std::to_string(n);
      }
    }
  }
  return r;
}

double median_of(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Prints one target's line (nothing when this run did not measure it),
// after the heading on the first.
bool targets_headed;

void target_line(const char *what, const char *limit, double worst,
                 const std::string &where, double typical, bool met) {
  if (std::isnan(worst)) return;
  if (!targets_headed)
    std::printf("\ntargets: the worst case over the ops and sizes of this run "
                "(ratios of medians; empty excluded),\nand the median case "
                "(\"typical\"): one noisy case can decide the worst\n");
  targets_headed = true;
  char w[48], t[24] = "";
  std::snprintf(w, sizeof w, "%.2f", worst);
  if (!std::isnan(typical)) std::snprintf(t, sizeof t, "typical %.2f", typical);
  std::printf("  %-32s %-8s %7s %-20s %-13s %s\n", what, limit, w,
              where.empty() ? "" : ("(" + where + ")").c_str(), t,
              met ? "met" : "MISSED");
}

void ratio_target(const char *what, const char *limit, const Ratios &r,
                  double bound, bool want_high) {
  bool met = want_high ? r.worst >= bound : r.worst <= bound;
  target_line(what, limit, r.worst, r.where, median_of(r.all), met);
}

// Prints each target of the issue with this run's value: for ratios the
// worst case over the ops and sizes measured (and the median case, since a
// single noisy case decides the worst), for costs the median.
void print_targets(const Options &o) {
  auto any = [](int, size_t) { return true; };
  ratio_target("opt / inline at n=100", "<= 1.10",
               ratios(o, OPT, INLINE, false,
                      [](int, size_t n) { return n == 100; }),
               1.10, false);
  ratio_target("opt / inline from n=3072", "<= 1.02",
               ratios(o, OPT, INLINE, false,
                      [](int, size_t n) { return n >= 3072; }),
               1.02, false);
  // The inline stdlib runs the best of its x86-64 variants (core/dispatch.h):
  // no slower than tier opt's -march=native code.
  ratio_target("inline / opt from n=1000", "<= 1.02",
               ratios(o, INLINE, OPT, false,
                      [](int, size_t n) { return n >= 1000; }),
               1.02, false);
  ratio_target("registry / inline everywhere", "<= 1.05",
               ratios(o, REGISTRY, INLINE, false, any), 1.05, false);
  const Case *ei = find_case(EMPTY, o.sizes.empty() ? 0 : o.sizes[0], INLINE);
  for (int v : {REGISTRY, JIT, OPT}) {
    const Case *ev = find_case(EMPTY, o.sizes.empty() ? 0 : o.sizes[0], v);
    char what[64];
    std::snprintf(what, sizeof what, "empty: %s - inline (ns)", kVariantNames[v]);
    double d = ei && ev ? ev->median - ei->median : NAN;
    target_line(what, "<= 5", d, "", NAN, d <= 5);
  }
  const Measure *jit = find_measure("jit_compile_one");
  double jms = jit ? jit->median / 1e6 : NAN;
  target_line("libtcc compile + ready (ms)", "<= 2", jms, "", NAN, jms <= 2);
  const Measure *warm = find_measure("load_50_warm");
  double wms = warm ? warm->median / 1e6 : NAN;
  target_line("50 kernels warm from cache (ms)", "<= 20", wms, "", NAN,
              wms <= 20);
  const Measure *ready = find_measure("load_50_opt_ready");
  double rms = ready ? ready->median / 1e6 : NAN;
  target_line("50 kernels cold to all opt (ms)", "<= 600", rms, "", NAN,
              rms <= 600);
  ratio_target("inline / loop, 1 thread", "<= 1.05",
               ratios(o, INLINE, LOOP, false, any), 1.05, false);
  auto big = [](int op, size_t n) { return n >= (1u << 24) && kMemoryBound[op]; };
  ratio_target("inline_mt speed-up at 16M", ">= 1.5",
               ratios(o, INLINE, INLINE_MT, true, big), 1.5, true);
  Ratios ceiling = ratios(o, LOOP, LOOP_MT, true, big);
  if (!std::isnan(ceiling.worst) && targets_headed)
    std::printf("  %-32s %-8s %7.2f %-20s typical %.2f  (what the machine "
                "allows: loop / loop_mt)\n",
                "  the same for the loop", "", ceiling.worst,
                ("(" + ceiling.where + ")").c_str(), median_of(ceiling.all));
  ratio_target("numpy / inline at n=100", ">= 10",
               ratios(o, NUMPY, INLINE, true,
                      [](int, size_t n) { return n == 100; }),
               10, true);
  ratio_target("numpy / inline up to n=65536", ">= 1",
               ratios(o, NUMPY, INLINE, true,
                      [](int, size_t n) { return n <= 65536; }),
               1, true);
  ratio_target("numpy / inline above n=65536", ">= 1",
               ratios(o, NUMPY, INLINE, true,
                      [](int, size_t n) { return n > 65536; }),
               1, true);
}

int write_json(const Options &o, const std::string &cpu, unsigned cores) {
  std::ofstream f(o.json);
  if (!f) {
    std::fprintf(stderr, "hk bench: cannot write %s\n", o.json.c_str());
    return 1;
  }
  std::string tail = ", \"cpu\": \"" + json_escape(cpu) +
                     "\", \"cores\": " + std::to_string(cores) + "}";
  f << "[\n";
  bool first = true;
  char buf[512];
  for (const Case &c : cases) {
    if (std::isnan(c.median)) continue;
    std::snprintf(buf, sizeof buf,
                  "  {\"op\": \"%s\", \"n\": %zu, \"variant\": \"%s\", "
                  "\"median_ns\": %.2f, \"min_ns\": %.2f, \"max_ns\": %.2f",
                  kOpNames[c.op], c.op == EMPTY ? (size_t)0 : c.n,
                  kVariantNames[c.v], c.median, c.min, c.max);
    f << (first ? "" : ",\n") << buf << tail;
    first = false;
  }
  for (const Measure &m : measures) {
    std::snprintf(buf, sizeof buf,
                  "  {\"op\": \"%s\", \"n\": %zu, \"variant\": \"%s\", "
                  "\"median_ns\": %.0f, \"min_ns\": %.0f, \"max_ns\": %.0f, "
                  "\"note\": \"%s\"",
                  m.what.c_str(), m.n, m.variant.c_str(), m.median, m.min,
                  m.max, json_escape(m.note).c_str());
    f << (first ? "" : ",\n") << buf << tail;
    first = false;
  }
  auto sizes = libhk_sizes();
  if (sizes.first >= 0) {
    std::snprintf(buf, sizeof buf,
                  "  {\"op\": \"libhk_size\", \"n\": 0, \"variant\": \"so\", "
                  "\"bytes\": %ld, \"static_bytes\": %ld",
                  sizes.first, sizes.second);
    f << (first ? "" : ",\n") << buf << tail;
  }
  f << "\n]\n";
  return f.good() ? 0 : 1;
}

int write_plot(const Options &o, const std::string &cpu) {
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
    std::fprintf(stderr, "hk bench: --plot needs gnuplot (tools/setup.sh "
                         "installs it: apt-get install gnuplot-nox)\n");
    return 1;
  }
  std::string dir = make_tempdir("plot");
  std::string gp = dir + "/plot.gp";
  std::ofstream s(gp);
  std::vector<int> ops;
  for (int op : o.ops)
    if (op != EMPTY) ops.push_back(op);
  int cols = 4, rows = ((int)ops.size() + cols - 1) / cols;
  s << "set terminal pngcairo noenhanced size 1800," << 450 * rows << " font ',9'\n"
    << "set output '" << o.plot << "'\n"
    << "set multiplot layout " << rows << "," << cols << " title 'hk bench: "
    << cpu << ", f32, ns per element (log-log); 1 thread, but inline_mt "
       "and loop_mt: every CPU'\n"
    << "set logscale xy\nset grid\nset key top right font ',8'\n"
    << "set xlabel 'elements'\nset ylabel 'ns per element'\n";
  for (int op : ops) {
    s << "set title '" << kOpNames[op] << "'\nplot ";
    bool first = true;
    for (int v : o.variants) {
      std::string data = dir + "/" + kOpNames[op] + "_" + kVariantNames[v] + ".dat";
      std::ofstream d(data);
      int points = 0;
      for (size_t n : o.sizes) {
        const Case *c = find_case(op, n, v);
        if (c && !std::isnan(c->median) && n) {
          d << n << " " << c->median / (double)n << "\n";
          points++;
        }
      }
      if (!points) continue;
      // A fixed colour and mark per variant, the same in every panel.
      static const char *const colour[NVARIANTS] = {
          "#000000", "#1f77b4", "#17becf", "#ff7f0e", "#2ca02c",
          "#8c564b", "#d62728", "#9467bd", "#e377c2"};
      s << (first ? "" : ", ") << "'" << data
        << "' using 1:2 with linespoints lw 1.5 pt " << (v + 1) << " lc rgb '"
        << colour[v] << "' title '" << kVariantNames[v] << "'";
      first = false;
    }
    s << "\n";
  }
  s << "unset multiplot\n";
  s.close();
  int rc = std::system(("gnuplot '" + gp + "'").c_str());
  remove_tree(dir);
  if (rc != 0) {
    std::fprintf(stderr, "hk bench: gnuplot failed\n");
    return 1;
  }
  return 0;
}

// ---- Setup --------------------------------------------------------------------

// Builds the plugin kernels as a prebuilt .so (with the hk command next to
// this program) for the naive path. Returns an empty string or why not.
std::string setup_naive(const Options &o, const std::string &tmp) {
  std::string json = tmp + "/bench.json", so = tmp + "/bench.so";
  std::ofstream(json) << kBenchKernels;
  std::string cmd = "'" + o.hk_path + "' build '" + json + "' -o '" + so + "'";
  if (std::system(cmd.c_str()) != 0) return "hk build failed";
  char err[512];
  if (naive_open(so.c_str(), err, sizeof err)) return err;
  for (int op = 0; op < NOPS; op++)
    naive_register(kPlugin[op], kNparams[op], op == SUM);
  return "";
}

}  // namespace

int main(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    auto value = [&](const char *flag) -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "hk bench: %s needs a value\n", flag);
        std::exit(1);
      }
      return argv[++i];
    };
    if (a == "-h" || a == "--help") {
      usage(stdout);
      return 0;
    } else if (a == "--quick") {
      o.quick = true;
    } else if (a == "--json") {
      o.json = value("--json");
    } else if (a == "--plot") {
      o.plot = value("--plot");
    } else if (a == "--no-numpy") {
      o.numpy = false;
    } else if (a == "--no-extras") {
      o.extras = false;
    } else if (a == "--hk") {
      o.hk_path = value("--hk");
    } else if (a == "--min-time") {
      o.min_time = std::atof(value("--min-time").c_str());
    } else if (a == "--repetitions") {
      o.repetitions = std::atoi(value("--repetitions").c_str());
    } else if (a == "--ops") {
      for (auto &s : split(value("--ops"))) {
        int k = index_of(kOpNames, s);
        if (k < 0) {
          std::fprintf(stderr, "hk bench: unknown op '%s'\n", s.c_str());
          return 1;
        }
        o.ops.push_back(k);
      }
    } else if (a == "--sizes") {
      for (auto &s : split(value("--sizes"))) {
        char *end;
        unsigned long long n = std::strtoull(s.c_str(), &end, 10);
        if (*end || !n) {
          std::fprintf(stderr, "hk bench: bad size '%s'\n", s.c_str());
          return 1;
        }
        o.sizes.push_back((size_t)n);
      }
    } else if (a == "--variants") {
      for (auto &s : split(value("--variants"))) {
        int k = index_of(kVariantNames, s);
        if (k < 0) {
          std::fprintf(stderr, "hk bench: unknown variant '%s'\n", s.c_str());
          return 1;
        }
        o.variants.push_back(k);
      }
    } else {
      std::fprintf(stderr, "hk bench: unknown argument '%s'\n", a.c_str());
      usage(stderr);
      return 1;
    }
  }
  if (o.min_time <= 0 || o.repetitions < 1) {
    std::fprintf(stderr, "hk bench: --min-time and --repetitions must be positive\n");
    return 1;
  }
  if (o.quick) {
    o.min_time = std::min(o.min_time, 0.02);
    o.repetitions = std::min(o.repetitions, 5);
  }
  if (o.ops.empty())
    for (int op = 0; op < NOPS; op++) o.ops.push_back(op);
  if (o.sizes.empty())
    o.sizes = o.quick ? std::vector<size_t>{100, 3072, 1u << 20}
                      : std::vector<size_t>{100, 1000, 3072, 65536, 1u << 20, 1u << 24};
  if (o.variants.empty())
    for (int v = 0; v < NVARIANTS; v++) o.variants.push_back(v);
  if (!o.numpy) o.variants.erase(std::remove(o.variants.begin(), o.variants.end(), (int)NUMPY), o.variants.end());
  if (o.hk_path.empty()) {  // the hk command next to this program
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    self[n > 0 ? n : 0] = '\0';
    std::string d(self);
    o.hk_path = d.substr(0, d.rfind('/')) + "/hk";
    if (access(o.hk_path.c_str(), X_OK) != 0)
      o.hk_path = d.substr(0, d.rfind('/')) + "/../hk";
  }

  // A private cache, so that "opt" is measured from a fresh build.
  std::string tmp = make_tempdir("work");
  std::string cache = tmp + "/cache";
  mkdir(cache.c_str(), 0700);
  const char *const none[] = {nullptr};
  hk_context_t *reg, *jit, *opt;
  hk_options_t ro = {};
  ro.plugin_dirs = none;
  ro.cache_dir = cache.c_str();
  hk_options_t jo = ro, oo = ro;
  jo.tier = HK_TIER_JIT;
  oo.tier = HK_TIER_OPT;
  if (hk_context_create(&reg, &ro) || hk_context_create(&jit, &jo) ||
      hk_context_create(&opt, &oo)) {
    std::fprintf(stderr, "hk bench: %s\n", hk_last_error());
    return 2;
  }
  bool have_opt = true;
  if (hk_load_string(jit, kBenchKernels, std::strlen(kBenchKernels), "bench") ||
      (have_opt = hk_load_string(opt, kBenchKernels, std::strlen(kBenchKernels),
                                 "bench") == HK_OK) == false) {
    std::fprintf(stderr, "hk bench: %s", hk_last_error());
    if (have_opt) return 2;
    std::fprintf(stderr, "hk bench: no tier opt: its variant is skipped\n");
  }
  for (int op = 0; op < NOPS; op++)
    if (hk_kernel_find(reg, kStdlib[op], &K.registry[op]) != HK_OK ||
        hk_kernel_find(jit, kPlugin[op], &K.jit[op]) != HK_OK ||
        (have_opt && hk_kernel_find(opt, kPlugin[op], &K.opt[op]) != HK_OK)) {
      std::fprintf(stderr, "hk bench: %s\n", hk_last_error());
      return 2;
    }
  std::string naive_note = setup_naive(o, tmp);
  std::vector<int> variants;
  for (int v : o.variants) {
    if (v == OPT && !have_opt) continue;
    if (v == NAIVE && !naive_note.empty()) {
      std::fprintf(stderr, "hk bench: naive variant skipped: %s\n", naive_note.c_str());
      continue;
    }
    variants.push_back(v);
  }
  o.variants = variants;

  std::string cpu = cpu_model();
  unsigned cores = std::thread::hardware_concurrency();
  std::fprintf(stderr, "hk bench on %s (%u cores): checking variants", cpu.c_str(), cores);

  // Every variant must compute what inline computes, before any timing.
  int bad = 0;
  for (int op : o.ops)
    for (size_t n : o.sizes) {
      if (n > (1u << 22) && !kMemoryBound[op]) continue;
      for (int v : o.variants) {
        if (v == NUMPY || v == INLINE) continue;
        if (v == INLINE_MT && n < (1u << 16)) continue;
        if (v == LOOP_MT && (n <= (1u << 22) || op == SOFTMAX)) continue;
        std::string why = check_variant(op, v, n);
        if (!why.empty()) {
          std::fprintf(stderr, "\nhk bench: %s n=%zu: %s differs from inline: %s",
                       kOpNames[op], n, kVariantNames[v], why.c_str());
          bad++;
        }
      }
      if (op == EMPTY) break;
    }
  if (bad) {
    std::fprintf(stderr, "\nhk bench: the variants do not compute the same thing; not timing\n");
    return 2;
  }
  std::fprintf(stderr, ": same results\ntiming");

  // Register: op, then size, then variant. Each (op, size) is a group whose
  // variants run with their repetitions randomly interleaved, so that a
  // slow phase of the machine falls on every variant alike; the group's
  // data is made once.
  int groups = 0;
  std::vector<std::pair<int, size_t>> group_case;  // (op, n) of each group
  for (int op : o.ops)
    for (size_t n : o.sizes) {
      if (n > (1u << 22) && !kMemoryBound[op]) continue;
      groups++;
      group_case.push_back({op, n});
      for (int v : o.variants) {
        if (v == NUMPY) continue;
        if (v == INLINE_MT && n < (1u << 16)) continue;
        if (v == LOOP_MT && (n <= (1u << 22) || op == SOFTMAX)) continue;
        cases.push_back(Case{op, n, v});
        std::string name = "g" + std::to_string(groups) + "/" +
                           std::to_string(cases.size() - 1);
        benchmark::RegisterBenchmark(name.c_str(), bench_case, cases.size() - 1)
            ->Unit(benchmark::kNanosecond)
            ->UseRealTime()
            ->MinTime(o.min_time)
            ->MinWarmUpTime(o.min_time / 2)
            ->Repetitions(o.repetitions)
            ->ReportAggregatesOnly(true)
            ->ComputeStatistics("min", stat_min)
            ->ComputeStatistics("max", stat_max);
      }
      if (op == EMPTY) break;
    }
  char interleave[] = "--benchmark_enable_random_interleaving=true";
  int bargc = 2;
  char *bargv[] = {argv[0], interleave, nullptr};
  benchmark::Initialize(&bargc, bargv);
  Collector collector;
  Numpy np;
  bool with_numpy =
      std::find(o.variants.begin(), o.variants.end(), (int)NUMPY) !=
          o.variants.end() &&
      numpy_start(np, o);
  for (int g = 1; g <= groups; g++) {
    benchmark::RunSpecifiedBenchmarks(&collector, "^g" + std::to_string(g) + "/");
    if (with_numpy)
      with_numpy = numpy_time(np, group_case[g - 1].first, group_case[g - 1].second);
  }
  numpy_stop(np);
  std::string numpy_note = np.note;
  benchmark::Shutdown();
  delete current;
  current = nullptr;
  if (o.extras) measure_extras(o);
  std::fprintf(stderr, "\n");

  std::printf("hk bench: %s, %u cores, f32, inline stdlib built for %s%s\n",
              cpu.c_str(), cores, hk_stdlib_isa(), o.quick ? " (quick)" : "");
  print_table(o);
  print_targets(o);
  if (!numpy_note.empty()) std::printf("%s\n", numpy_note.c_str());
  int rc = 0;
  if (!o.json.empty()) rc |= write_json(o, cpu, cores);
  if (!o.plot.empty()) rc |= write_plot(o, cpu);
  hk_context_destroy(reg);
  hk_context_destroy(jit);
  hk_context_destroy(opt);
  remove_tree(tmp);
  return rc;
}
