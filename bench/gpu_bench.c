/* gpu_bench.c — hk-gpu-bench: the GPU benchmark of the CUDA backend.
 *
 * Measures, on the device hk runs on (HK_CUDA_DEVICE, default 0):
 *
 *   launch     raw cuLaunchKernel of precompiled kernels (an empty kernel
 *              and the stdlib's hk_cuda__add_f32, from hk-gpu-bench.cubin,
 *              built by nvcc at build time) against hk_call_async and
 *              hk_call of the stdlib "add_f32" handle on n = 1: ns/launch;
 *   bandwidth  the device's copy bandwidth (cuMemcpyDtoD, counted as read +
 *              write), then add, saxpy and sum at 1K ... 256M f32 elements,
 *              each as the stdlib kernel (nvcc-built, "inline") and as the
 *              same op in a plugin kernel compiled by NVRTC ("nvrtc"):
 *              time per call, GB/s and % of the copy bandwidth;
 *   arrays     hk_call_arrays on 4096 x 4096 f32: a broadcast (S,) operand
 *              and a transposed x against the contiguous add, sums over
 *              rows of 64, 1024 and 2^20 against the whole sum, softmax and
 *              layernorm by rows; GELU in f16 and bf16 against f32; an add
 *              as grid kernels ({i} and {r, c}) against the elementwise
 *              kind;
 *   pool       hk_device_alloc + hk_device_free against cuMemAlloc +
 *              cuMemFree, ns per pair;
 *   warm load  hk_kernel_prepare of a kernel file on CUDA with an empty
 *              disk cache (NVRTC compiles) and again in a new context
 *              (the disk cache serves it).
 *
 * and prints a table, then the targets, each MET or MISSED.
 * GPU times are wall-clock around hk_stream_sync / cuStreamSynchronize over
 * many calls (CUDA events for the copy bandwidth); each figure is the median
 * of several repetitions. hk is used through its public API only; the raw
 * side reaches the CUDA driver with dlopen("libcuda.so.1"), in the same
 * primary context hk uses, so nothing from CUDA is linked.
 *
 * Without a GPU it prints "no CUDA device: ..." and exits 0: it is a
 * benchmark, not a test. Run with --help for the options.
 */
#include <hk.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- The CUDA driver API, reached with dlopen ----------------------------
 * Only the few types and calls used here, declared by hand (the ABI of the
 * driver API is stable), so that nothing from the toolkit is needed. */

typedef int CUresult; /* 0: CUDA_SUCCESS */
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef unsigned long long CUdeviceptr;

#define CU_STREAM_NON_BLOCKING 1u
#define CU_EVENT_DEFAULT 0u

static struct {
  void *lib;
  CUresult (*Init)(unsigned flags);
  CUresult (*DeviceGet)(CUdevice *dev, int ordinal);
  CUresult (*DevicePrimaryCtxRetain)(CUcontext *ctx, CUdevice dev);
  CUresult (*DevicePrimaryCtxRelease)(CUdevice dev);
  CUresult (*CtxSetCurrent)(CUcontext ctx);
  CUresult (*CtxSynchronize)(void);
  CUresult (*ModuleLoad)(CUmodule *mod, const char *path);
  CUresult (*ModuleUnload)(CUmodule mod);
  CUresult (*ModuleGetFunction)(CUfunction *f, CUmodule mod, const char *name);
  CUresult (*LaunchKernel)(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                           unsigned bx, unsigned by, unsigned bz,
                           unsigned shared_bytes, CUstream s, void **params,
                           void **extra);
  CUresult (*StreamCreate)(CUstream *s, unsigned flags);
  CUresult (*StreamDestroy)(CUstream s);
  CUresult (*StreamSynchronize)(CUstream s);
  CUresult (*MemAlloc)(CUdeviceptr *p, size_t bytes);
  CUresult (*MemFree)(CUdeviceptr p);
  CUresult (*MemcpyDtoD)(CUdeviceptr dst, CUdeviceptr src, size_t bytes);
  CUresult (*EventCreate)(CUevent *e, unsigned flags);
  CUresult (*EventDestroy)(CUevent e);
  CUresult (*EventRecord)(CUevent e, CUstream s);
  CUresult (*EventSynchronize)(CUevent e);
  CUresult (*EventElapsedTime)(float *ms, CUevent start, CUevent end);
  CUresult (*GetErrorString)(CUresult r, const char **s); /* may be NULL */

  CUdevice dev;
  CUcontext ctx;     /* the device's primary context, shared with hk */
  CUstream stream;   /* the raw side's stream (non-blocking, like hk's) */
  CUmodule mod;      /* hk-gpu-bench.cubin, NULL when it did not load */
  CUfunction empty;  /* hk_bench_empty */
  CUfunction add;    /* hk_cuda__add_f32 */
  int ready;         /* the driver calls above are usable */
} cu;

static char cu_problem[512]; /* why the raw side (or its module) is missing */

static const char *cu_str(CUresult r) {
  const char *s = NULL;
  if (cu.GetErrorString && cu.GetErrorString(r, &s) == 0 && s)
    return s;
  return "unknown CUDA error";
}

/* The symbol name (a later version first, e.g. "cuMemAlloc_v2"), else
 * fallback (may be NULL). */
static void *cu_sym(const char *name, const char *fallback) {
  void *p = dlsym(cu.lib, name);
  if (!p && fallback)
    p = dlsym(cu.lib, fallback);
  return p;
}

/* Loads the driver calls and takes the primary context of device ordinal.
 * 0, or -1 with cu_problem set. */
static int cu_start(int ordinal) {
  cu.lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!cu.lib) {
    snprintf(cu_problem, sizeof cu_problem, "dlopen libcuda.so.1: %s",
             dlerror());
    return -1;
  }
#define CU_LOAD(field, name, fallback)                                     \
  do {                                                                     \
    void *p_ = cu_sym(name, fallback);                                     \
    if (!p_) {                                                             \
      snprintf(cu_problem, sizeof cu_problem,                              \
               "libcuda.so.1 has no %s", name);                            \
      return -1;                                                           \
    }                                                                      \
    memcpy(&cu.field, &p_, sizeof p_);                                     \
  } while (0)
  CU_LOAD(Init, "cuInit", NULL);
  CU_LOAD(DeviceGet, "cuDeviceGet", NULL);
  CU_LOAD(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", NULL);
  CU_LOAD(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2",
          "cuDevicePrimaryCtxRelease");
  CU_LOAD(CtxSetCurrent, "cuCtxSetCurrent", NULL);
  CU_LOAD(CtxSynchronize, "cuCtxSynchronize", NULL);
  CU_LOAD(ModuleLoad, "cuModuleLoad", NULL);
  CU_LOAD(ModuleUnload, "cuModuleUnload", NULL);
  CU_LOAD(ModuleGetFunction, "cuModuleGetFunction", NULL);
  CU_LOAD(LaunchKernel, "cuLaunchKernel", NULL);
  CU_LOAD(StreamCreate, "cuStreamCreate", NULL);
  CU_LOAD(StreamDestroy, "cuStreamDestroy_v2", "cuStreamDestroy");
  CU_LOAD(StreamSynchronize, "cuStreamSynchronize", NULL);
  CU_LOAD(MemAlloc, "cuMemAlloc_v2", NULL);
  CU_LOAD(MemFree, "cuMemFree_v2", NULL);
  CU_LOAD(MemcpyDtoD, "cuMemcpyDtoD_v2", NULL);
  CU_LOAD(EventCreate, "cuEventCreate", NULL);
  CU_LOAD(EventDestroy, "cuEventDestroy_v2", "cuEventDestroy");
  CU_LOAD(EventRecord, "cuEventRecord", NULL);
  CU_LOAD(EventSynchronize, "cuEventSynchronize", NULL);
  /* The same signature in both versions. */
  CU_LOAD(EventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime");
#undef CU_LOAD
  void *p = dlsym(cu.lib, "cuGetErrorString");
  memcpy(&cu.GetErrorString, &p, sizeof p);

  CUresult r;
  if ((r = cu.Init(0)) != 0 || (r = cu.DeviceGet(&cu.dev, ordinal)) != 0 ||
      (r = cu.DevicePrimaryCtxRetain(&cu.ctx, cu.dev)) != 0 ||
      (r = cu.CtxSetCurrent(cu.ctx)) != 0 ||
      (r = cu.StreamCreate(&cu.stream, CU_STREAM_NON_BLOCKING)) != 0) {
    snprintf(cu_problem, sizeof cu_problem,
             "starting the driver on device %d: %s (CUresult %d)", ordinal,
             cu_str(r), r);
    return -1;
  }
  cu.ready = 1;
  return 0;
}

/* Loads the bench's cubin and its two kernels. 0, or -1 with cu_problem. */
static int cu_load_module(const char *path) {
  CUresult r = cu.ModuleLoad(&cu.mod, path);
  if (r != 0) {
    snprintf(cu_problem, sizeof cu_problem,
             "cannot load %s: %s (CUresult %d; built for another GPU "
             "architecture? rebuild with -DHK_GPU_BENCH_ARCH=sm_XY)",
             path, cu_str(r), r);
    cu.mod = NULL;
    return -1;
  }
  if ((r = cu.ModuleGetFunction(&cu.empty, cu.mod, "hk_bench_empty")) != 0 ||
      (r = cu.ModuleGetFunction(&cu.add, cu.mod, "hk_cuda__add_f32")) != 0) {
    snprintf(cu_problem, sizeof cu_problem, "%s: kernel missing: %s", path,
             cu_str(r));
    cu.ModuleUnload(cu.mod);
    cu.mod = NULL;
    return -1;
  }
  return 0;
}

static void cu_stop(void) {
  if (!cu.ready)
    return;
  cu.CtxSetCurrent(cu.ctx);
  if (cu.mod)
    cu.ModuleUnload(cu.mod);
  cu.StreamDestroy(cu.stream);
  cu.DevicePrimaryCtxRelease(cu.dev);
  cu.ready = 0;
}

/* ---- Options, timing, results --------------------------------------------- */

static struct {
  int quick;
  const char *json_path;
  const char *cubin_path;
} opt;

static int had_error; /* some measurement failed: exit status 2 */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The median of v[0..n) (sorts v). */
static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#define MAX_REPS 16

/* Reports a failure of the hk side; the section carries on or gives up. */
static void hk_fail(const char *what, int rc) {
  fprintf(stderr, "hk-gpu-bench: %s: %s: %s\n", what, hk_strerror(rc),
          hk_last_error());
  had_error = 1;
}

/* One result: what --json writes. */
typedef struct record {
  char section[16];
  char op[64];
  long long n;
  char variant[32];
  double value; /* NaN: not measured */
  char unit[16];
} record_t;

static record_t records[512];
static int nrecords;

static void rec(const char *section, const char *op, long long n,
                const char *variant, double value, const char *unit) {
  if (nrecords == (int)(sizeof records / sizeof records[0]))
    return;
  record_t *r = &records[nrecords++];
  snprintf(r->section, sizeof r->section, "%s", section);
  snprintf(r->op, sizeof r->op, "%.63s", op); /* at most op[]'s room */
  r->n = n;
  snprintf(r->variant, sizeof r->variant, "%s", variant);
  r->value = value;
  snprintf(r->unit, sizeof r->unit, "%s", unit);
}

static void json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      fprintf(f, "\\%c", c);
    else if (c < 0x20)
      fprintf(f, "\\u%04x", c);
    else
      fputc(c, f);
  }
  fputc('"', f);
}

static int write_json(const char *path) {
  FILE *f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "hk-gpu-bench: cannot write %s: %s\n", path,
            strerror(errno));
    return -1;
  }
  fputs("[\n", f);
  for (int i = 0; i < nrecords; i++) {
    const record_t *r = &records[i];
    fputs("  {\"section\": ", f);
    json_string(f, r->section);
    fputs(", \"op\": ", f);
    json_string(f, r->op);
    fprintf(f, ", \"n\": %lld, \"variant\": ", r->n);
    json_string(f, r->variant);
    if (isfinite(r->value))
      fprintf(f, ", \"value\": %.6g", r->value);
    else
      fputs(", \"value\": null", f);
    fputs(", \"unit\": ", f);
    json_string(f, r->unit);
    fprintf(f, "}%s\n", i + 1 < nrecords ? "," : "");
  }
  fputs("]\n", f);
  if (fclose(f) != 0) {
    fprintf(stderr, "hk-gpu-bench: cannot write %s: %s\n", path,
            strerror(errno));
    return -1;
  }
  return 0;
}

/* "1K", "64K", "1M", "256M", or the number. */
static const char *fmt_count(size_t n, char *buf, size_t size) {
  if (n >= (1u << 20) && n % (1u << 20) == 0)
    snprintf(buf, size, "%zuM", n >> 20);
  else if (n >= (1u << 10) && n % (1u << 10) == 0)
    snprintf(buf, size, "%zuK", n >> 10);
  else
    snprintf(buf, size, "%zu", n);
  return buf;
}

/* "4 KiB", "1 MiB", "64 MiB". */
static const char *fmt_bytes(size_t n, char *buf, size_t size) {
  if (n >= (1u << 30) && n % (1u << 30) == 0)
    snprintf(buf, size, "%zu GiB", n >> 30);
  else if (n >= (1u << 20) && n % (1u << 20) == 0)
    snprintf(buf, size, "%zu MiB", n >> 20);
  else if (n >= (1u << 10) && n % (1u << 10) == 0)
    snprintf(buf, size, "%zu KiB", n >> 10);
  else
    snprintf(buf, size, "%zu B", n);
  return buf;
}

/* ---- The targets ------------------------------------------------------------ */

typedef struct target {
  char what[64];
  char goal[24];
  double value;
  char value_text[24];
  char unit[8];
  int met; /* 1 MET, 0 MISSED, -1 not measured */
} target_t;

static target_t targets[32];
static int ntargets;

/* value <= limit (le != 0) or value >= limit; NaN: not measured. */
static void target(const char *what, const char *goal, double value,
                   const char *unit, double limit, int le) {
  if (ntargets == (int)(sizeof targets / sizeof targets[0]))
    return;
  target_t *t = &targets[ntargets++];
  snprintf(t->what, sizeof t->what, "%s", what);
  snprintf(t->goal, sizeof t->goal, "%s", goal);
  t->value = value;
  snprintf(t->unit, sizeof t->unit, "%s", unit[0] == ' ' ? unit + 1 : unit);
  if (!isfinite(value)) {
    snprintf(t->value_text, sizeof t->value_text, "n/a");
    t->met = -1;
  } else {
    snprintf(t->value_text, sizeof t->value_text,
             value >= 100 ? "%.0f%s" : "%.2f%s", value, unit);
    t->met = le ? value <= limit : value >= limit;
  }
}

/* ---- a. Launch overhead ------------------------------------------------------ */

/* Results the targets need, NaN until measured. */
static double launch_ratio_async = NAN, launch_ratio_sync = NAN;

/* Launches per repetition and repetitions. */
static int launch_iters(void) { return opt.quick ? 2000 : 10000; }
static int launch_reps(void) { return opt.quick ? 3 : 7; }

/* Reports a failure of the raw side. */
static void raw_fail(const char *what, CUresult r) {
  fprintf(stderr, "hk-gpu-bench: %s: %s (CUresult %d)\n", what, cu_str(r), r);
  had_error = 1;
}

/* Queues iters launches of f (grid 1, block threads) on the raw stream, then
 * waits: seconds in all; *submit the seconds the queueing alone took. */
static double raw_queue(CUfunction f, unsigned threads, void **params,
                        int iters, double *submit) {
  CUresult r;
  double t0 = now_s();
  for (int i = 0; i < iters; i++)
    if ((r = cu.LaunchKernel(f, 1, 1, 1, threads, 1, 1, 0, cu.stream, params,
                             NULL)) != 0) {
      raw_fail("cuLaunchKernel", r);
      return NAN;
    }
  double t1 = now_s();
  if ((r = cu.StreamSynchronize(cu.stream)) != 0) {
    raw_fail("cuStreamSynchronize", r);
    return NAN;
  }
  *submit = t1 - t0;
  return now_s() - t0;
}

/* iters launches of f, each waited for. */
static double raw_each(CUfunction f, unsigned threads, void **params,
                       int iters) {
  CUresult r;
  double t0 = now_s();
  for (int i = 0; i < iters; i++)
    if ((r = cu.LaunchKernel(f, 1, 1, 1, threads, 1, 1, 0, cu.stream, params,
                             NULL)) != 0 ||
        (r = cu.StreamSynchronize(cu.stream)) != 0) {
      raw_fail("cuLaunchKernel + cuStreamSynchronize", r);
      return NAN;
    }
  return now_s() - t0;
}

static double hk_queue(const hk_kernel_t *k, hk_stream_t *s, size_t n,
                       void *const *args, int iters, double *submit) {
  double t0 = now_s();
  for (int i = 0; i < iters; i++) {
    int rc = hk_call_async(k, s, n, args);
    if (rc != HK_OK) {
      hk_fail("hk_call_async", rc);
      return NAN;
    }
  }
  double t1 = now_s();
  int rc = hk_stream_sync(s);
  if (rc != HK_OK) {
    hk_fail("hk_stream_sync", rc);
    return NAN;
  }
  *submit = t1 - t0;
  return now_s() - t0;
}

static double hk_each(const hk_kernel_t *k, size_t n, void *const *args,
                      int iters) {
  double t0 = now_s();
  for (int i = 0; i < iters; i++) {
    int rc = hk_call(k, n, args);
    if (rc != HK_OK) {
      hk_fail("hk_call", rc);
      return NAN;
    }
  }
  return now_s() - t0;
}

enum launch_variant {
  RAW_EMPTY_QUEUED,
  RAW_ADD_QUEUED,
  HK_ADD_QUEUED,
  RAW_ADD_EACH,
  HK_ADD_EACH,
  LAUNCH_VARIANTS
};

static void bench_launch(hk_context_t *ctx) {
  printf("\n== launch overhead (ns per launch, median of %d runs of %d "
         "launches)\n",
         launch_reps(), launch_iters());
  hk_kernel_t *kadd;
  int rc = hk_kernel_find(ctx, "add_f32", &kadd);
  if (rc != HK_OK) {
    hk_fail("hk_kernel_find add_f32", rc);
    return;
  }
  int raw = cu.ready && cu.mod;
  if (!raw)
    printf("  raw side skipped: %s\n", cu_problem);

  /* Three small device buffers; n = 1 reads and writes one element. */
  void *x = NULL, *y = NULL, *out = NULL;
  hk_stream_t *hs = NULL;
  float zeros[256] = {0};
  if ((rc = hk_device_alloc(&x, sizeof zeros)) != HK_OK ||
      (rc = hk_device_alloc(&y, sizeof zeros)) != HK_OK ||
      (rc = hk_device_alloc(&out, sizeof zeros)) != HK_OK ||
      (rc = hk_memcpy_to_device(x, zeros, sizeof zeros, NULL)) != HK_OK ||
      (rc = hk_memcpy_to_device(y, zeros, sizeof zeros, NULL)) != HK_OK ||
      (rc = hk_stream_create(&hs)) != HK_OK) {
    hk_fail("launch setup", rc);
    goto done;
  }
  void *args[] = {x, y, out};
  CUdeviceptr dx = (CUdeviceptr)(uintptr_t)x, dy = (CUdeviceptr)(uintptr_t)y,
              dout = (CUdeviceptr)(uintptr_t)out;
  size_t n1 = 1;
  void *add_params[] = {&dx, &dy, &dout, &n1};
  if (raw)
    cu.CtxSetCurrent(cu.ctx);

  int iters = launch_iters(), reps = launch_reps();
  int sync_iters = iters / 5;
  double total[LAUNCH_VARIANTS][MAX_REPS], submit[LAUNCH_VARIANTS][MAX_REPS];
  double ns[LAUNCH_VARIANTS], sub_ns[LAUNCH_VARIANTS];
  for (int v = 0; v < LAUNCH_VARIANTS; v++)
    ns[v] = sub_ns[v] = NAN;

  /* Warm up every path once (module loading, first-call setup). */
  double dummy;
  if (raw) {
    raw_queue(cu.empty, 1, NULL, 100, &dummy);
    raw_queue(cu.add, 256, add_params, 100, &dummy);
  }
  if (!isfinite(hk_queue(kadd, hs, 1, args, 100, &dummy)) ||
      !isfinite(hk_each(kadd, 1, args, 10)))
    goto done;

  /* Repetitions interleave the variants, so drift hits them alike. */
  for (int r = 0; r < reps; r++) {
    for (int v = 0; v < LAUNCH_VARIANTS; v++) {
      double t = NAN, s = NAN;
      switch (v) {
      case RAW_EMPTY_QUEUED:
        if (raw)
          t = raw_queue(cu.empty, 1, NULL, iters, &s) / iters;
        break;
      case RAW_ADD_QUEUED:
        if (raw)
          t = raw_queue(cu.add, 256, add_params, iters, &s) / iters;
        break;
      case HK_ADD_QUEUED:
        t = hk_queue(kadd, hs, 1, args, iters, &s) / iters;
        break;
      case RAW_ADD_EACH:
        if (raw)
          t = raw_each(cu.add, 256, add_params, sync_iters) / sync_iters;
        break;
      case HK_ADD_EACH:
        t = hk_each(kadd, 1, args, sync_iters) / sync_iters;
        break;
      }
      total[v][r] = t * 1e9;
      submit[v][r] = s / iters * 1e9;
    }
  }
  for (int v = 0; v < LAUNCH_VARIANTS; v++) {
    ns[v] = median(total[v], reps);
    sub_ns[v] = median(submit[v], reps);
  }

  static const struct {
    const char *op, *variant, *what;
  } rows[LAUNCH_VARIANTS] = {
      [RAW_EMPTY_QUEUED] = {"empty queued", "raw",
                            "raw cuLaunchKernel, empty kernel"},
      [RAW_ADD_QUEUED] = {"add_f32 queued", "raw",
                          "raw cuLaunchKernel, hk_cuda__add_f32"},
      [HK_ADD_QUEUED] = {"add_f32 queued", "hk",
                         "hk_call_async, add_f32 handle"},
      [RAW_ADD_EACH] = {"add_f32 sync", "raw",
                        "raw cuLaunchKernel + cuStreamSynchronize"},
      [HK_ADD_EACH] = {"add_f32 sync", "hk", "hk_call (waits)"},
  };
  printf("  %-44s %12s %12s\n", "n = 1, grid 1 x 256 threads",
         "per launch", "of which");
  printf("  %-44s %12s %12s\n", "", "(ns)", "queueing (ns)");
  for (int v = 0; v < LAUNCH_VARIANTS; v++) {
    int queued = v <= HK_ADD_QUEUED;
    if (!isfinite(ns[v])) {
      printf("  %-44s %12s\n", rows[v].what, "-");
      continue;
    }
    if (queued)
      printf("  %-44s %12.0f %12.0f\n", rows[v].what, ns[v], sub_ns[v]);
    else
      printf("  %-44s %12.0f %12s\n", rows[v].what, ns[v], "");
    rec("launch", rows[v].op, 1, rows[v].variant, ns[v], "ns/launch");
    if (queued) {
      char op[64];
      snprintf(op, sizeof op, "%s submit", rows[v].op);
      rec("launch", op, 1, rows[v].variant, sub_ns[v], "ns/launch");
    }
  }
  launch_ratio_async = ns[HK_ADD_QUEUED] / ns[RAW_ADD_QUEUED];
  launch_ratio_sync = ns[HK_ADD_EACH] / ns[RAW_ADD_EACH];
  if (isfinite(launch_ratio_async)) {
    double sub_ratio = sub_ns[HK_ADD_QUEUED] / sub_ns[RAW_ADD_QUEUED];
    printf("  hk/raw: queued %.2fx (queueing alone %.2fx), synchronous "
           "%.2fx\n",
           launch_ratio_async, sub_ratio, launch_ratio_sync);
    rec("launch", "add_f32 queued", 1, "hk/raw", launch_ratio_async, "x");
    rec("launch", "add_f32 queued submit", 1, "hk/raw", sub_ratio, "x");
    rec("launch", "add_f32 sync", 1, "hk/raw", launch_ratio_sync, "x");
  }

done:
  hk_stream_destroy(hs);
  hk_device_free(x);
  hk_device_free(y);
  hk_device_free(out);
}

/* ---- b. Bandwidth ------------------------------------------------------------ */

static double copy_gbs = NAN;

/* The device's copy bandwidth: cuMemcpyDtoD of bytes, read + write counted,
 * best of several, timed with CUDA events. GB/s (10^9 bytes). */
static double measure_copy(size_t bytes) {
  CUdeviceptr a = 0, b = 0;
  CUevent e0 = NULL, e1 = NULL;
  double best = NAN;
  cu.CtxSetCurrent(cu.ctx);
  if (cu.MemAlloc(&a, bytes) != 0 || cu.MemAlloc(&b, bytes) != 0 ||
      cu.EventCreate(&e0, CU_EVENT_DEFAULT) != 0 ||
      cu.EventCreate(&e1, CU_EVENT_DEFAULT) != 0) {
    printf("  copy bandwidth: cannot allocate 2 x %zu MiB\n", bytes >> 20);
    goto done;
  }
  /* The synchronous cuMemcpyDtoD runs on the legacy default stream (0). */
  cu.MemcpyDtoD(b, a, bytes);
  cu.CtxSynchronize();
  int reps = opt.quick ? 5 : 10;
  for (int r = 0; r < reps; r++) {
    float ms = 0;
    if (cu.EventRecord(e0, NULL) != 0 || cu.MemcpyDtoD(b, a, bytes) != 0 ||
        cu.EventRecord(e1, NULL) != 0 || cu.EventSynchronize(e1) != 0 ||
        cu.EventElapsedTime(&ms, e0, e1) != 0 || ms <= 0)
      continue;
    double gbs = 2.0 * (double)bytes / (ms * 1e-3) / 1e9;
    if (!(best >= gbs))
      best = gbs;
  }
done:
  if (e0)
    cu.EventDestroy(e0);
  if (e1)
    cu.EventDestroy(e1);
  if (a)
    cu.MemFree(a);
  if (b)
    cu.MemFree(b);
  return best;
}

/* The plugin versions of the stdlib's add, axpy and sum: NVRTC compiles
 * them. Their bodies are the stdlib's, so the code differs only by the
 * compiler and how it is loaded. */
static const char nvrtc_kernels[] =
    "{\"schema_version\": 1,\n"
    " \"doc\": \"hk-gpu-bench: add, saxpy and sum as plugin kernels\",\n"
    " \"kernels\": [\n"
    "  {\"name\": \"gb_add\", \"doc\": \"out = x + y\",\n"
    "   \"kind\": \"elementwise\", \"targets\": [\"cpu\", \"cuda\"],\n"
    "   \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},\n"
    "              {\"name\": \"y\", \"type\": \"f32\", \"role\": \"in\"},\n"
    "              {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\"}],\n"
    "   \"body\": \"out = x + y;\"},\n"
    "  {\"name\": \"gb_saxpy\", \"doc\": \"y = alpha * x + y\",\n"
    "   \"kind\": \"elementwise\", \"targets\": [\"cpu\", \"cuda\"],\n"
    "   \"params\": [{\"name\": \"alpha\", \"type\": \"f32\", \"role\": "
    "\"scalar\"},\n"
    "              {\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},\n"
    "              {\"name\": \"y\", \"type\": \"f32\", \"role\": "
    "\"inout\"}],\n"
    "   \"body\": \"y = alpha * x + y;\"},\n"
    "  {\"name\": \"gb_sum\", \"doc\": \"out[0] = x[0] + ... + x[n-1]\",\n"
    "   \"kind\": \"reduction\", \"targets\": [\"cpu\", \"cuda\"],\n"
    "   \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},\n"
    "              {\"name\": \"out\", \"type\": \"f32\", \"role\": "
    "\"out\"}],\n"
    "   \"map\": \"x\", \"combine\": \"a + b\", \"identity\": \"0\"}\n"
    " ]}\n";

enum op { OP_ADD, OP_SUM, OP_SAXPY, NOPS }; /* saxpy last: it changes y */

static const struct {
  const char *name;     /* in the table and the records */
  const char *inline_k; /* the stdlib kernel */
  const char *nvrtc_k;  /* the plugin kernel */
  size_t bytes_per_elem;
} ops[NOPS] = {
    [OP_ADD] = {"add", "add_f32", "gb_add", 12},
    [OP_SUM] = {"sum", "sum_f32", "gb_sum", 4},
    [OP_SAXPY] = {"saxpy", "axpy_f32", "gb_saxpy", 12},
};

/* Results at the largest size measured, for the targets. */
static size_t bw_top_n;
static double bw_pct[NOPS][2] = {{NAN, NAN}, {NAN, NAN}, {NAN, NAN}};
static double bw_ratio[NOPS] = {NAN, NAN, NAN};

/* Seconds per call of k on n elements: iters calls queued on s, then a
 * sync; the median of reps such runs. NaN on failure. */
static double time_calls(const hk_kernel_t *k, hk_stream_t *s, size_t n,
                         void *const *args, int iters, int reps) {
  double t[MAX_REPS], submit;
  /* Warm-up. */
  if (!isfinite(hk_queue(k, s, n, args, iters / 10 + 1, &submit)))
    return NAN;
  for (int r = 0; r < reps; r++) {
    t[r] = hk_queue(k, s, n, args, iters, &submit) / iters;
    if (!isfinite(t[r]))
      return NAN;
  }
  return median(t, reps);
}

/* Fills n floats at p with value, on the GPU (the stdlib's fill_f32). */
static int device_fill(hk_kernel_t *kfill, void *p, size_t n, float value) {
  void *args[] = {&value, p};
  return hk_call_on(kfill, HK_BACKEND_CUDA, n, args);
}

/* "ok" when the result of op o on n elements is right (x = 1, y = 2:
 * add gives 3 everywhere, sum gives n), "WRONG" (counted as a failure), or
 * "-" when not checked (saxpy, which updates y in place). */
static const char *check_result(int o, const void *result, size_t n) {
  float got = 0;
  const float *at = o == OP_ADD ? (const float *)result + (n - 1) : result;
  if (!result || hk_memcpy_to_host(&got, at, sizeof got, NULL) != HK_OK)
    return "-";
  double want = o == OP_ADD ? 3.0 : (double)n;
  if (fabs(got - want) <= 1e-5 * want)
    return "ok";
  had_error = 1;
  return "WRONG";
}

static void bench_bandwidth(hk_context_t *ctx) {
  int reps = opt.quick ? 3 : 7;
  size_t copy_bytes = opt.quick ? (size_t)256 << 20 : (size_t)1 << 30;
  char b1[32];

  printf("\n== bandwidth (f32; GB = 10^9 bytes; median of %d runs)\n", reps);
  if (cu.ready) {
    copy_gbs = measure_copy(copy_bytes);
    printf("  device copy bandwidth: %.1f GB/s (cuMemcpyDtoD of %s, read + "
           "write, best of %d)\n",
           copy_gbs, fmt_bytes(copy_bytes, b1, sizeof b1), opt.quick ? 5 : 10);
    rec("bandwidth", "copy", (long long)copy_bytes, "cuMemcpyDtoD", copy_gbs,
        "GB/s");
  } else {
    printf("  device copy bandwidth: not measured (%s)\n", cu_problem);
  }

  /* The kernels: stdlib (inline) and plugin (nvrtc, compiled now). */
  hk_kernel_t *k[NOPS][2] = {{NULL}}, *kfill = NULL;
  int rc = hk_load_string(ctx, nvrtc_kernels, strlen(nvrtc_kernels),
                          "gpu_bench_kernels.json");
  if (rc != HK_OK)
    hk_fail("loading the NVRTC kernels", rc);
  if ((rc = hk_kernel_find(ctx, "fill_f32", &kfill)) != HK_OK) {
    hk_fail("hk_kernel_find fill_f32", rc);
    return;
  }
  for (int o = 0; o < NOPS; o++) {
    for (int v = 0; v < 2; v++) {
      const char *name = v ? ops[o].nvrtc_k : ops[o].inline_k;
      hk_kernel_t *kk;
      if ((rc = hk_kernel_find(ctx, name, &kk)) != HK_OK) {
        char what[96];
        snprintf(what, sizeof what, "hk_kernel_find %s", name);
        hk_fail(what, rc);
        continue;
      }
      double t0 = now_s();
      rc = hk_kernel_prepare(kk, HK_BACKEND_CUDA);
      double t1 = now_s();
      if (rc != HK_OK) {
        char what[96];
        snprintf(what, sizeof what, "hk_kernel_prepare %s", name);
        hk_fail(what, rc);
        continue;
      }
      if (v)
        printf("  %s: NVRTC compile and load %.1f ms\n", name,
               (t1 - t0) * 1e3);
      k[o][v] = kk;
    }
  }

  /* Buffers for the largest size this device holds. */
  static const size_t all_sizes[] = {(size_t)1 << 10, (size_t)1 << 16,
                                     (size_t)1 << 20, (size_t)1 << 24,
                                     (size_t)1 << 28};
  int nsizes = opt.quick ? 4 : 5;
  void *x = NULL, *y = NULL, *out = NULL, *res = NULL;
  hk_stream_t *hs = NULL;
  while (nsizes > 0) {
    size_t bytes = all_sizes[nsizes - 1] * sizeof(float);
    if (hk_device_alloc(&x, bytes) == HK_OK &&
        hk_device_alloc(&y, bytes) == HK_OK &&
        hk_device_alloc(&out, bytes) == HK_OK)
      break;
    hk_device_free(x);
    hk_device_free(y);
    hk_device_free(out);
    x = y = out = NULL;
    printf("  cannot allocate 3 x %s: fewer sizes\n",
           fmt_bytes(bytes, b1, sizeof b1));
    nsizes--;
  }
  if (nsizes == 0) {
    hk_fail("allocating the bandwidth buffers", HK_ENOMEM);
    return;
  }
  size_t nmax = all_sizes[nsizes - 1];
  bw_top_n = nmax;
  if ((rc = hk_device_alloc(&res, sizeof(float))) != HK_OK ||
      (rc = hk_stream_create(&hs)) != HK_OK ||
      (rc = device_fill(kfill, x, nmax, 1.0f)) != HK_OK ||
      (rc = device_fill(kfill, y, nmax, 2.0f)) != HK_OK ||
      (rc = device_fill(kfill, out, nmax, 0.0f)) != HK_OK) {
    hk_fail("bandwidth setup", rc);
    goto done;
  }

  printf("  %-6s %6s %-7s %11s %9s %7s %13s %6s\n", "op", "n", "variant",
         "us/call", "GB/s", "% copy", "nvrtc/inline", "check");
  float alpha = 1e-3f;
  for (int o = 0; o < NOPS; o++) {
    for (int si = 0; si < nsizes; si++) {
      size_t n = all_sizes[si];
      double bytes = (double)ops[o].bytes_per_elem * (double)n;
      /* About 8 GB (1 GB with --quick) of traffic per run. */
      double want = (opt.quick ? 1e9 : 8e9) / bytes;
      int iters = want > 5000 ? 5000 : want < 10 ? 10 : (int)want;
      if (opt.quick && iters > 1000)
        iters = 1000;
      double t[2] = {NAN, NAN};
      const char *check[2] = {"-", "-"};
      for (int v = 0; v < 2; v++) {
        if (!k[o][v])
          continue;
        void *args_add[] = {x, y, out};
        void *args_sum[] = {x, res};
        void *args_saxpy[] = {&alpha, x, y};
        void *const *args = o == OP_ADD   ? args_add
                            : o == OP_SUM ? args_sum
                                          : args_saxpy;
        /* Clear the result first, then look at it after the runs, so that
         * a kernel that did nothing cannot pass for a fast one. */
        void *result = o == OP_ADD ? out : o == OP_SUM ? res : NULL;
        if (result && (rc = device_fill(kfill, result, o == OP_ADD ? n : 1,
                                        0.0f)) != HK_OK) {
          hk_fail("clearing a result", rc);
          continue;
        }
        t[v] = time_calls(k[o][v], hs, n, args, iters, reps);
        check[v] = check_result(o, result, n);
      }
      double ratio = t[1] / t[0];
      for (int v = 0; v < 2; v++) {
        if (!isfinite(t[v]))
          continue;
        double gbs = bytes / t[v] / 1e9;
        double pct = 100 * gbs / copy_gbs;
        char pct_text[16] = "-", ratio_text[16] = "";
        if (isfinite(pct))
          snprintf(pct_text, sizeof pct_text, "%.1f", pct);
        if (v == 1 && isfinite(ratio))
          snprintf(ratio_text, sizeof ratio_text, "%.3f", ratio);
        printf("  %-6s %6s %-7s %11.2f %9.1f %7s %13s %6s\n",
               v ? "" : ops[o].name, v ? "" : fmt_count(n, b1, sizeof b1),
               v ? "nvrtc" : "inline", t[v] * 1e6, gbs, pct_text, ratio_text,
               check[v]);
        const char *variant = v ? "nvrtc" : "inline";
        rec("bandwidth", ops[o].name, (long long)n, variant, t[v] * 1e6,
            "us/call");
        rec("bandwidth", ops[o].name, (long long)n, variant, gbs, "GB/s");
        if (isfinite(pct))
          rec("bandwidth", ops[o].name, (long long)n, variant, pct,
              "% copy");
        if (n == nmax)
          bw_pct[o][v] = pct;
      }
      if (isfinite(ratio)) {
        rec("bandwidth", ops[o].name, (long long)n, "nvrtc/inline", ratio,
            "x");
        if (n == nmax)
          bw_ratio[o] = ratio;
      }
    }
  }

done:
  hk_stream_destroy(hs);
  hk_device_free(x);
  hk_device_free(y);
  hk_device_free(out);
  hk_device_free(res);
  hk_pool_trim(); /* give the large blocks back to the driver */
}

/* ---- c. Pool ------------------------------------------------------------------ */

static const size_t pool_sizes[] = {(size_t)4 << 10, (size_t)1 << 20,
                                    (size_t)64 << 20};
#define NPOOL (sizeof pool_sizes / sizeof pool_sizes[0])
static double pool_speedup[NPOOL] = {NAN, NAN, NAN};

static void bench_pool(void) {
  int reps = opt.quick ? 3 : 5;
  char b1[32];
  printf("\n== device allocation (ns per alloc + free, median of %d runs)\n",
         reps);
  printf("  %-8s %14s %14s %10s\n", "size", "hk pool", "cuMemAlloc",
         "speedup");
  if (cu.ready)
    cu.CtxSetCurrent(cu.ctx);
  for (size_t si = 0; si < NPOOL; si++) {
    size_t bytes = pool_sizes[si];
    int hk_iters = opt.quick ? 2000 : 20000;
    int raw_iters = bytes >= ((size_t)64 << 20) ? (opt.quick ? 50 : 200)
                                                : (opt.quick ? 200 : 1000);
    double th[MAX_REPS], tr[MAX_REPS];
    double hk_ns = NAN, raw_ns = NAN;
    void *p;
    int rc;

    /* One warm-up pair each: the pool then holds a block of this size. */
    if ((rc = hk_device_alloc(&p, bytes)) != HK_OK) {
      hk_fail("hk_device_alloc", rc);
      continue;
    }
    hk_device_free(p);
    int ok = 1;
    for (int r = 0; r < reps && ok; r++) {
      double t0 = now_s();
      for (int i = 0; i < hk_iters; i++) {
        if ((rc = hk_device_alloc(&p, bytes)) != HK_OK ||
            (rc = hk_device_free(p)) != HK_OK) {
          hk_fail("hk_device_alloc/free", rc);
          ok = 0;
          break;
        }
      }
      th[r] = (now_s() - t0) / hk_iters * 1e9;
    }
    if (ok)
      hk_ns = median(th, reps);

    if (cu.ready) {
      CUdeviceptr d;
      ok = cu.MemAlloc(&d, bytes) == 0 && cu.MemFree(d) == 0;
      for (int r = 0; r < reps && ok; r++) {
        double t0 = now_s();
        for (int i = 0; i < raw_iters; i++) {
          if (cu.MemAlloc(&d, bytes) != 0 || cu.MemFree(d) != 0) {
            ok = 0;
            break;
          }
        }
        tr[r] = (now_s() - t0) / raw_iters * 1e9;
      }
      if (ok)
        raw_ns = median(tr, reps);
    }

    double speedup = raw_ns / hk_ns;
    pool_speedup[si] = speedup;
    printf("  %-8s %14.0f %14.0f %9.1fx\n", fmt_bytes(bytes, b1, sizeof b1),
           hk_ns, raw_ns, speedup);
    rec("pool", "alloc+free", (long long)bytes, "hk pool", hk_ns, "ns/pair");
    rec("pool", "alloc+free", (long long)bytes, "cuMemAlloc", raw_ns,
        "ns/pair");
    rec("pool", "alloc+free", (long long)bytes, "raw/hk", speedup, "x");
  }
  hk_pool_stats_t st;
  if (hk_pool_stats(&st) == HK_OK)
    printf("  pool: %llu allocs, %llu reused, %llu cuMemAlloc, %llu cuMemFree;"
           " %zu MiB cached\n",
           (unsigned long long)st.allocs, (unsigned long long)st.reuses,
           (unsigned long long)st.driver_allocs,
           (unsigned long long)st.driver_frees, st.cached_bytes >> 20);
  hk_pool_trim();
}

/* ---- d. Warm load --------------------------------------------------------------- */

static double warm_ms = NAN;

static const char warm_kernel[] =
    "{\"schema_version\": 1, \"name\": \"gb_warm\",\n"
    " \"doc\": \"out = alpha * x + 1 (hk-gpu-bench: warm load)\",\n"
    " \"kind\": \"elementwise\", \"targets\": [\"cpu\", \"cuda\"],\n"
    " \"params\": [{\"name\": \"alpha\", \"type\": \"f32\", \"role\": "
    "\"scalar\"},\n"
    "            {\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},\n"
    "            {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\"}],\n"
    " \"body\": \"out = alpha * x + 1.0f;\"}\n";

static int rm_entry(const char *path, const struct stat *sb, int flag,
                    struct FTW *ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  remove(path);
  return 0;
}

/* Writes text to path, readable by its owner only (hk refuses plugin files
 * that others can write). */
static int write_file(const char *path, const char *text) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0)
    return -1;
  size_t len = strlen(text);
  ssize_t w = write(fd, text, len);
  return close(fd) == 0 && w == (ssize_t)len ? 0 : -1;
}

/* One context on the cache in cache_dir: loads the kernel file, prepares
 * it for CUDA and calls it once. Milliseconds into load_ms, prepare_ms and
 * call_ms. 0, or -1 (reported). */
static int warm_round(const char *cache_dir, const char *file, void *x,
                      void *out, double *load_ms, double *prepare_ms,
                      double *call_ms) {
  const char *const no_dirs[] = {NULL};
  hk_options_t o = {.plugin_dirs = no_dirs, .cache_dir = cache_dir};
  hk_context_t *ctx;
  hk_kernel_t *k;
  int rc = hk_context_create(&ctx, &o);
  if (rc != HK_OK) {
    hk_fail("hk_context_create", rc);
    return -1;
  }
  double t0 = now_s();
  rc = hk_load_file(ctx, file);
  double t1 = now_s();
  if (rc != HK_OK || (rc = hk_kernel_find(ctx, "gb_warm", &k)) != HK_OK) {
    hk_fail("loading the warm-load kernel", rc);
    hk_context_destroy(ctx);
    return -1;
  }
  /* Let the CPU's background compile (tier opt) finish first, so that it
   * does not share the CPU with what is timed. */
  hk_context_wait(ctx);
  double t2 = now_s();
  rc = hk_kernel_prepare(k, HK_BACKEND_CUDA);
  double t3 = now_s();
  if (rc != HK_OK) {
    hk_fail("hk_kernel_prepare gb_warm", rc);
    hk_context_destroy(ctx);
    return -1;
  }
  float alpha = 2;
  void *args[] = {&alpha, x, out};
  rc = hk_call_on(k, HK_BACKEND_CUDA, 1024, args);
  double t4 = now_s();
  if (rc != HK_OK)
    hk_fail("calling gb_warm", rc);
  /* Any cache write still in the background finishes before destroy. */
  hk_context_wait(ctx);
  hk_context_destroy(ctx);
  *load_ms = (t1 - t0) * 1e3;
  *prepare_ms = (t3 - t2) * 1e3;
  *call_ms = (t4 - t3) * 1e3;
  return rc == HK_OK ? 0 : -1;
}

static void bench_warm_load(void) {
  int reps = opt.quick ? 3 : 7;
  printf("\n== warm load of a user kernel (ms; a fresh disk cache, then "
         "%d new contexts)\n",
         reps);
  char dir[] = "/tmp/hk-gpu-bench.XXXXXX";
  if (!mkdtemp(dir)) {
    fprintf(stderr, "hk-gpu-bench: mkdtemp: %s\n", strerror(errno));
    had_error = 1;
    return;
  }
  char cache[sizeof dir + 16], file[sizeof dir + 16];
  snprintf(cache, sizeof cache, "%s/cache", dir);
  snprintf(file, sizeof file, "%s/gb_warm.json", dir);
  void *x = NULL, *out = NULL;
  int rc;
  if (mkdir(cache, 0700) != 0 || write_file(file, warm_kernel) != 0) {
    fprintf(stderr, "hk-gpu-bench: cannot write under %s: %s\n", dir,
            strerror(errno));
    had_error = 1;
    goto done;
  }
  if ((rc = hk_device_alloc(&x, 1024 * sizeof(float))) != HK_OK ||
      (rc = hk_device_alloc(&out, 1024 * sizeof(float))) != HK_OK) {
    hk_fail("hk_device_alloc", rc);
    goto done;
  }

  double cold_load, cold_prep, cold_call;
  if (warm_round(cache, file, x, out, &cold_load, &cold_prep, &cold_call))
    goto done;
  double load[MAX_REPS], prep[MAX_REPS], call[MAX_REPS];
  for (int r = 0; r < reps; r++)
    if (warm_round(cache, file, x, out, &load[r], &prep[r], &call[r]))
      goto done;
  double wl = median(load, reps), wp = median(prep, reps),
         wc = median(call, reps);
  warm_ms = wp;

  printf("  %-34s %12s %12s\n", "", "cold", "warm");
  printf("  %-34s %12.2f %12.2f\n", "hk_load_file (CPU jit)", cold_load, wl);
  printf("  %-34s %12.2f %12.2f\n", "hk_kernel_prepare(CUDA)", cold_prep, wp);
  printf("  %-34s %12.2f %12.2f\n", "first call on the GPU (n = 1024)",
         cold_call, wc);
  if (wp > 0.5 * cold_prep)
    printf("  note: the warm prepare is not much faster than the cold one: "
           "is the disk cache used?\n");
  rec("warm_load", "hk_load_file", 0, "cold", cold_load, "ms");
  rec("warm_load", "hk_load_file", 0, "warm", wl, "ms");
  rec("warm_load", "hk_kernel_prepare", 0, "cold", cold_prep, "ms");
  rec("warm_load", "hk_kernel_prepare", 0, "warm", wp, "ms");
  rec("warm_load", "first call", 1024, "cold", cold_call, "ms");
  rec("warm_load", "first call", 1024, "warm", wc, "ms");

done:
  hk_device_free(x);
  hk_device_free(out);
  nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---- e. Arrays and grids ------------------------------------------------------
 * Issue 9 on the GPU: hk_call_arrays over a broadcast operand, a transposed
 * one and axis reductions, each against the contiguous call over as many
 * elements (all synchronous calls, so the fixed cost of waiting is in every
 * variant); f16 and bf16 GELU against f32 (queued). Issue 10: the grid
 * kind (one index per element, 1-D and 2-D) against the elementwise kind,
 * both compiled by NVRTC, on the same add (queued). */

static const char grid_kernels[] =
    "{\"schema_version\": 1,\n"
    " \"doc\": \"hk-gpu-bench: add as grid kernels\",\n"
    " \"kernels\": [\n"
    "  {\"name\": \"gb_grid_add\", \"doc\": \"out[i] = x[i] + y[i]\",\n"
    "   \"kind\": \"grid\", \"targets\": [\"cpu\", \"cuda\"],\n"
    "   \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},\n"
    "              {\"name\": \"y\", \"type\": \"f32\", \"role\": \"in\"},\n"
    "              {\"name\": \"out\", \"type\": \"f32\", \"role\": "
    "\"out\"}],\n"
    "   \"grid\": {\"i\": \"n\"},\n"
    "   \"body\": \"out[i] = x[i] + y[i];\"},\n"
    "  {\"name\": \"gb_grid_add2\", \"doc\": \"the same over R x C indices\",\n"
    "   \"kind\": \"grid\", \"targets\": [\"cpu\", \"cuda\"],\n"
    "   \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\", "
    "\"len\": \"R * C\"},\n"
    "              {\"name\": \"y\", \"type\": \"f32\", \"role\": \"in\", "
    "\"len\": \"R * C\"},\n"
    "              {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\", "
    "\"len\": \"R * C\"},\n"
    "              {\"name\": \"R\", \"type\": \"i64\", \"role\": "
    "\"scalar\"},\n"
    "              {\"name\": \"C\", \"type\": \"i64\", \"role\": "
    "\"scalar\"}],\n"
    "   \"grid\": {\"r\": \"R\", \"c\": \"C\"},\n"
    "   \"body\": \"out[r * C + c] = x[r * C + c] + y[r * C + c];\"}\n"
    " ]}\n";

/* The side of the square arrays: 4096 x 4096 = 16M f32 elements. */
#define ARR_SIDE 4096

enum arr_case {
  ARR_ADD,       /* (S, S) + (S, S), contiguous: the baseline */
  ARR_BCAST,     /* (S, S) + (S,) */
  ARR_TRANS,     /* x.T + y */
  ARR_SUM,       /* everything into one value: the baseline */
  ARR_ROWS64,    /* per row of 64, 1024, 2^20 elements */
  ARR_ROWS1K,
  ARR_ROWS1M,
  ARR_SOFTMAX,   /* rows of 1024 */
  ARR_LAYERNORM, /* rows of 1024 */
  ARR_GELU32,    /* queued hk_call_async from here: the baseline */
  ARR_GELU16,
  ARR_GELUB16,
  ARR_EW_ADD,    /* the elementwise gb_add: the baseline */
  ARR_GRID1,
  ARR_GRID2,
  NARR
};

static const struct {
  const char *name;
  int base;        /* the case it is compared with (itself: a baseline) */
  double bytes;    /* least traffic per element */
  double goal;     /* the target of case / base; 0: none */
  int le;          /* the target is an upper bound */
} arr_cases[NARR] = {
    [ARR_ADD] = {"add, contiguous", ARR_ADD, 12, 0, 0},
    [ARR_BCAST] = {"add (S,S) + (S,) broadcast", ARR_ADD, 8, 1.05, 1},
    [ARR_TRANS] = {"add x.T + y", ARR_ADD, 12, 2.0, 1},
    [ARR_SUM] = {"sum, whole", ARR_SUM, 4, 0, 0},
    [ARR_ROWS64] = {"sum over rows of 64", ARR_SUM, 4, 1.0, 1},
    [ARR_ROWS1K] = {"sum over rows of 1024", ARR_SUM, 4, 1.0, 1},
    [ARR_ROWS1M] = {"sum over rows of 1M", ARR_SUM, 4, 1.0, 1},
    [ARR_SOFTMAX] = {"softmax, rows of 1024", ARR_SOFTMAX, 8, 0, 0},
    [ARR_LAYERNORM] = {"layernorm, rows of 1024", ARR_LAYERNORM, 8, 0, 0},
    [ARR_GELU32] = {"gelu f32 (queued)", ARR_GELU32, 8, 0, 0},
    [ARR_GELU16] = {"gelu f16 (queued)", ARR_GELU32, 4, 1.0, 1},
    [ARR_GELUB16] = {"gelu bf16 (queued)", ARR_GELU32, 4, 1.0, 1},
    [ARR_EW_ADD] = {"add elementwise (nvrtc, queued)", ARR_EW_ADD, 12, 0, 0},
    [ARR_GRID1] = {"add grid {i} (nvrtc, queued)", ARR_EW_ADD, 12, 0.9, 0},
    [ARR_GRID2] = {"add grid {r, c} (nvrtc, queued)", ARR_EW_ADD, 12, 0.9,
                   0},
};

/* case / base for the targets (for the grids: the bandwidth ratio). */
static double arr_ratio[NARR] = {NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN,
                                 NAN, NAN, NAN, NAN, NAN, NAN, NAN};

/* Seconds per synchronous hk_call_arrays: the median of reps runs of iters
 * calls, after two. NaN on failure. */
static double time_arrays(const hk_kernel_t *k, const hk_array_t *args,
                          const hk_call_opts_t *opts, int iters, int reps) {
  double t[MAX_REPS];
  for (int r = -1; r < reps; r++) {
    double t0 = now_s();
    for (int i = 0; i < (r < 0 ? 2 : iters); i++) {
      int rc = hk_call_arrays(k, args, opts);
      if (rc != HK_OK) {
        hk_fail("hk_call_arrays", rc);
        return NAN;
      }
    }
    if (r >= 0)
      t[r] = (now_s() - t0) / iters;
  }
  return median(t, reps);
}

/* "ok" when element i of the device array p (es bytes each) holds the bits
 * of want, else "WRONG" (a failure). */
static const char *check_bits(const void *p, size_t i, size_t es,
                              const void *want) {
  unsigned char got[8];
  if (hk_memcpy_to_host(got, (const char *)p + i * es, es, NULL) != HK_OK ||
      memcmp(got, want, es) != 0) {
    had_error = 1;
    return "WRONG";
  }
  return "ok";
}

static void bench_arrays(hk_context_t *ctx) {
  const int64_t S = ARR_SIDE;
  const size_t n = (size_t)S * (size_t)S;
  int reps = opt.quick ? 3 : 7, iters = opt.quick ? 20 : 100;
  const float one = 1.0f, three = 3.0f;
  const uint16_t one16 = hk_f16_from_double(1.0), oneb16 = 0x3f80;
  hk_kernel_t *k[NARR] = {NULL};
  static const char *const names[NARR] = {
      [ARR_ADD] = "add_f32",         [ARR_BCAST] = "add_f32",
      [ARR_TRANS] = "add_f32",       [ARR_SUM] = "sum_f32",
      [ARR_ROWS64] = "sum_f32",      [ARR_ROWS1K] = "sum_f32",
      [ARR_ROWS1M] = "sum_f32",      [ARR_SOFTMAX] = "softmax_f32",
      [ARR_LAYERNORM] = "layernorm_f32",
      [ARR_GELU32] = "gelu_f32",     [ARR_GELU16] = "gelu_f16",
      [ARR_GELUB16] = "gelu_bf16",   [ARR_EW_ADD] = "gb_add",
      [ARR_GRID1] = "gb_grid_add",   [ARR_GRID2] = "gb_grid_add2"};
  double t[NARR];
  const char *check[NARR];
  void *x = NULL, *y = NULL, *out = NULL, *b = NULL, *h = NULL, *ho = NULL;
  hk_stream_t *hs = NULL;
  static const int last_axis[] = {-1};
  char what[96];
  int rc;

  printf("\n== arrays and grids (%lld x %lld = 16M elements; f32 unless "
         "named; median of %d runs)\n",
         (long long)S, (long long)S, reps);
  if ((rc = hk_load_string(ctx, grid_kernels, strlen(grid_kernels),
                           "gpu_bench_grids.json")) != HK_OK)
    hk_fail("loading the grid kernels", rc);
  for (int c = 0; c < NARR; c++) {
    t[c] = NAN;
    check[c] = "-";
    if ((rc = hk_kernel_find(ctx, names[c], &k[c])) != HK_OK ||
        (rc = hk_kernel_prepare(k[c], HK_BACKEND_CUDA)) != HK_OK) {
      snprintf(what, sizeof what, "kernel %s on CUDA", names[c]);
      hk_fail(what, rc);
      k[c] = NULL;
    }
  }
  hk_kernel_t *kfill = NULL, *kfill16 = NULL, *kfillb16 = NULL;
  if ((rc = hk_kernel_find(ctx, "fill_f32", &kfill)) != HK_OK ||
      (rc = hk_kernel_find(ctx, "fill_f16", &kfill16)) != HK_OK ||
      (rc = hk_kernel_find(ctx, "fill_bf16", &kfillb16)) != HK_OK ||
      (rc = hk_device_alloc(&x, n * 4)) != HK_OK ||
      (rc = hk_device_alloc(&y, n * 4)) != HK_OK ||
      (rc = hk_device_alloc(&out, n * 4)) != HK_OK ||
      (rc = hk_device_alloc(&b, (size_t)S * 4)) != HK_OK ||
      (rc = hk_device_alloc(&h, n * 2)) != HK_OK ||
      (rc = hk_device_alloc(&ho, n * 2)) != HK_OK ||
      (rc = hk_stream_create(&hs)) != HK_OK ||
      (rc = device_fill(kfill, x, n, 1.0f)) != HK_OK ||
      (rc = device_fill(kfill, y, n, 2.0f)) != HK_OK ||
      (rc = device_fill(kfill, b, (size_t)S, 2.0f)) != HK_OK) {
    hk_fail("arrays setup", rc);
    goto done;
  }

  /* The synchronous hk_call_arrays cases. */
  for (int c = ARR_ADD; c <= ARR_LAYERNORM; c++) {
    if (!k[c])
      continue;
    hk_array_t a[7];
    hk_call_opts_t o = {.backend = HK_BACKEND_CUDA};
    int64_t rows = S, cols = S;
    float want = 3.0f;
    size_t last = n - 1;
    if (c >= ARR_ROWS64 && c <= ARR_ROWS1M) {
      cols = c == ARR_ROWS64 ? 64 : c == ARR_ROWS1K ? 1024 : (int64_t)1 << 20;
      rows = (int64_t)n / cols;
      o.axes = last_axis;
      o.naxes = 1;
      want = (float)cols;
      last = (size_t)rows - 1;
    } else if (c == ARR_SOFTMAX || c == ARR_LAYERNORM) {
      cols = 1024;
      rows = (int64_t)n / cols;
      /* layernorm of rows of ones, weight and bias 2: the bias */
      want = c == ARR_SOFTMAX ? 1.0f / 1024 : 2.0f;
    } else if (c == ARR_SUM) {
      want = (float)n;
      last = 0;
    }
    rc = hk_array_init(&a[0], x, HK_F32, 2, (int64_t[]){rows, cols});
    if (rc == HK_OK && c == ARR_TRANS) { /* x.T: the same buffer, strides
                                            swapped (the shape is square) */
      a[0].strides[0] = 1;
      a[0].strides[1] = S;
    }
    if (rc == HK_OK && c <= ARR_TRANS) {
      rc = c == ARR_BCAST ? hk_array_init(&a[1], b, HK_F32, 1, &S)
                          : hk_array_init(&a[1], y, HK_F32, 2,
                                          (int64_t[]){S, S});
      if (rc == HK_OK)
        rc = hk_array_init(&a[2], out, HK_F32, 2, (int64_t[]){S, S});
    } else if (rc == HK_OK && c == ARR_SOFTMAX) {
      rc = hk_array_init(&a[1], out, HK_F32, 2, (int64_t[]){rows, cols});
    } else if (rc == HK_OK && c == ARR_LAYERNORM) {
      /* x, weight, bias, y, mean, rstd (in the 16-bit cases' buffers,
       * filled again before those), eps */
      static const float eps = 1e-5f;
      if ((rc = hk_array_init(&a[1], b, HK_F32, 1, &cols)) == HK_OK &&
          (rc = hk_array_init(&a[2], b, HK_F32, 1, &cols)) == HK_OK &&
          (rc = hk_array_init(&a[3], out, HK_F32, 2,
                              (int64_t[]){rows, cols})) == HK_OK &&
          (rc = hk_array_init(&a[4], h, HK_F32, 1, &rows)) == HK_OK &&
          (rc = hk_array_init(&a[5], ho, HK_F32, 1, &rows)) == HK_OK)
        rc = hk_array_init(&a[6], (void *)&eps, HK_F32, 0, NULL);
    } else if (rc == HK_OK) { /* sums */
      rc = c == ARR_SUM ? hk_array_init(&a[1], out, HK_F32, 0, NULL)
                        : hk_array_init(&a[1], out, HK_F32, 1, &rows);
    }
    if (rc != HK_OK || (rc = device_fill(kfill, out, n, 0.0f)) != HK_OK) {
      hk_fail("arrays setup", rc);
      continue;
    }
    t[c] = time_arrays(k[c], a, &o, iters, reps);
    check[c] = check_bits(out, last, 4, &want);
  }

  /* The queued cases: GELU by type, the add as elementwise and grid. */
  int64_t R = S, C = S;
  void *args_gelu32[] = {x, out}, *args_gelu16[] = {h, ho};
  void *args_add[] = {x, y, out}, *args_grid2[] = {x, y, out, &R, &C};
  for (int c = ARR_GELU32; c < NARR; c++) {
    if (!k[c])
      continue;
    void *const *args = c == ARR_GELU32   ? args_gelu32
                        : c <= ARR_GELUB16 ? args_gelu16
                        : c == ARR_GRID2   ? args_grid2
                                           : args_add;
    if (c == ARR_GELU16 || c == ARR_GELUB16) {
      uint16_t v = c == ARR_GELU16 ? one16 : oneb16;
      void *fargs[] = {&v, h};
      rc = hk_call_on(c == ARR_GELU16 ? kfill16 : kfillb16, HK_BACKEND_CUDA,
                      n, fargs);
    } else {
      rc = HK_OK;
    }
    if (rc != HK_OK || (rc = device_fill(kfill, out, n, 0.0f)) != HK_OK) {
      hk_fail("arrays setup", rc);
      continue;
    }
    t[c] = time_calls(k[c], hs, n, args, iters * 5, reps);
    /* the GELU of 1 must be the CPU's, bit for bit (hkmath.h's exp on both
     * sides, no contraction); the adds give 3 */
    if (c == ARR_GELU32) {
      float w;
      hk_gelu_f32(&one, &w, 1);
      check[c] = check_bits(out, n - 1, 4, &w);
    } else if (c <= ARR_GELUB16) {
      uint16_t w;
      if (c == ARR_GELU16)
        hk_gelu_f16(&one16, &w, 1);
      else
        hk_gelu_bf16(&oneb16, &w, 1);
      check[c] = check_bits(ho, n - 1, 2, &w);
    } else {
      check[c] = check_bits(out, n - 1, 4, &three);
    }
  }

  printf("  %-34s %10s %9s %7s %8s %6s\n", "call", "us/call", "GB/s",
         "% copy", "vs base", "check");
  for (int c = 0; c < NARR; c++) {
    double gbs = arr_cases[c].bytes * (double)n / t[c] / 1e9;
    double pct = 100 * gbs / copy_gbs;
    int base = arr_cases[c].base;
    /* time ratio; for the grids the bandwidth ratio (higher is better) */
    double ratio = c >= ARR_GRID1 ? t[base] / t[c] : t[c] / t[base];
    char pct_text[16] = "-", ratio_text[16] = "";
    if (isfinite(pct))
      snprintf(pct_text, sizeof pct_text, "%.1f", pct);
    if (base != c && isfinite(ratio))
      snprintf(ratio_text, sizeof ratio_text, "%.3f", ratio);
    printf("  %-34s %10.2f %9.1f %7s %8s %6s\n", arr_cases[c].name,
           t[c] * 1e6, gbs, pct_text, ratio_text, check[c]);
    rec("arrays", arr_cases[c].name, (long long)n, "us/call", t[c] * 1e6,
        "us/call");
    rec("arrays", arr_cases[c].name, (long long)n, "GB/s", gbs, "GB/s");
    if (base != c) {
      rec("arrays", arr_cases[c].name, (long long)n, "vs base", ratio, "x");
      arr_ratio[c] = ratio;
    }
  }
  printf("  vs base: time / the time of the case above it marked as a base "
         "(add, contiguous; sum, whole; gelu f32;\n  add elementwise); for the grids, the "
         "elementwise add's time / the grid's (its share of the bandwidth)\n");

done:
  hk_stream_destroy(hs);
  hk_device_free(x);
  hk_device_free(y);
  hk_device_free(out);
  hk_device_free(b);
  hk_device_free(h);
  hk_device_free(ho);
  hk_pool_trim();
}

/* ---- main -------------------------------------------------------------------- */

static void usage(FILE *f) {
  fputs("usage: hk-gpu-bench [--quick] [--json FILE] [--cubin PATH]\n"
        "\n"
        "Benchmarks hk's CUDA backend on the GPU HK_CUDA_DEVICE (default 0):\n"
        "launch overhead against raw cuLaunchKernel, bandwidth of add, saxpy\n"
        "and sum (nvcc-built stdlib and NVRTC plugin kernels) against the\n"
        "device's copy bandwidth, the device memory pool against\n"
        "cuMemAlloc/cuMemFree, the warm (disk cache) load of a user\n"
        "kernel, and array calls (broadcast, transposed, axis sums, f16/bf16)\n"
        "and grid kernels against their contiguous and elementwise\n"
        "counterparts; then checks the targets of the CUDA backend.\n"
        "\n"
        "  --quick       fewer sizes (up to 16M elements) and iterations\n"
        "  --json FILE   also write the results as a JSON array of\n"
        "                {section, op, n, variant, value, unit}\n"
        "  --cubin PATH  the precompiled kernels for the raw side (default:\n"
        "                hk-gpu-bench.cubin next to this program)\n"
        "  --help        this text\n"
        "\n"
        "Without a GPU it says so and exits 0. Exit status: 0, 1 for bad\n"
        "arguments, 2 when a measurement failed.\n",
        f);
}

/* hk-gpu-bench.cubin in the folder of this executable. */
static char *default_cubin(void) {
  char exe[PATH_MAX];
  ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (len <= 0)
    return NULL;
  exe[len] = '\0';
  char *slash = strrchr(exe, '/');
  if (!slash)
    return NULL;
  *slash = '\0';
  size_t size = strlen(exe) + sizeof "/hk-gpu-bench.cubin";
  char *path = malloc(size);
  if (path)
    snprintf(path, size, "%s/hk-gpu-bench.cubin", exe);
  return path;
}

static void print_targets(void) {
  char what[64], b1[32];
  const char *top = fmt_count(bw_top_n, b1, sizeof b1);

  target("hk launch overhead, queued", "<= 1.20x raw", launch_ratio_async,
         "x", 1.2, 1);
  target("hk launch overhead, synchronous", "<= 1.20x raw", launch_ratio_sync,
         "x", 1.2, 1);
  for (int o = 0; o < NOPS; o++) {
    if (o == OP_SUM)
      continue; /* the target names add and saxpy */
    for (int v = 0; v < 2; v++) {
      snprintf(what, sizeof what, "%s %s at %s", ops[o].name,
               v ? "nvrtc" : "inline", top);
      target(what, ">= 85% of copy", bw_pct[o][v], "%", 85, 0);
    }
  }
  for (int o = 0; o < NOPS; o++) {
    snprintf(what, sizeof what, "NVRTC vs nvcc, %s at %s", ops[o].name, top);
    target(what, "<= 1.05x", bw_ratio[o], "x", 1.05, 1);
  }
  for (size_t si = 0; si < NPOOL; si++) {
    snprintf(what, sizeof what, "pooled alloc+free, %s",
             fmt_bytes(pool_sizes[si], b1, sizeof b1));
    target(what, ">= 20x faster", pool_speedup[si], "x", 20, 0);
  }
  target("warm load (hk_kernel_prepare)", "<= 2 ms", warm_ms, " ms", 2, 1);
  for (int c = 0; c < NARR; c++) {
    const int base = arr_cases[c].base;
    char goal[24];
    if (arr_cases[c].goal <= 0)
      continue;
    snprintf(what, sizeof what, "GPU %s", arr_cases[c].name);
    if (arr_cases[c].le) {
      snprintf(goal, sizeof goal, "<= %.2fx %s", arr_cases[c].goal,
               base == ARR_ADD ? "contig." : base == ARR_SUM ? "whole" : "f32");
      target(what, goal, arr_ratio[c], "x", arr_cases[c].goal, 1);
    } else {
      snprintf(goal, sizeof goal, ">= %.0f%% of elementw.",
               100 * arr_cases[c].goal);
      target(what, goal, 100 * arr_ratio[c], "%", 100 * arr_cases[c].goal,
             0);
    }
  }

  int met = 0, missed = 0, skipped = 0;
  printf("\n== targets\n");
  printf("  %-40s %-16s %10s  %s\n", "", "target", "measured", "");
  for (int i = 0; i < ntargets; i++) {
    const target_t *t = &targets[i];
    const char *verdict = t->met < 0 ? "NOT MEASURED"
                          : t->met   ? "MET"
                                     : "MISSED";
    printf("  %-40s %-16s %10s  %s\n", t->what, t->goal, t->value_text,
           verdict);
    met += t->met == 1;
    missed += t->met == 0;
    skipped += t->met < 0;
    rec("targets", t->what, 0, verdict, t->value, t->unit);
  }
  printf("  %d met, %d missed, %d not measured\n", met, missed, skipped);
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      usage(stdout);
      return 0;
    } else if (strcmp(argv[i], "--quick") == 0) {
      opt.quick = 1;
    } else if (strcmp(argv[i], "--json") == 0 && i + 1 < argc) {
      opt.json_path = argv[++i];
    } else if (strcmp(argv[i], "--cubin") == 0 && i + 1 < argc) {
      opt.cubin_path = argv[++i];
    } else {
      fprintf(stderr, "hk-gpu-bench: unknown or incomplete argument '%s'\n",
              argv[i]);
      usage(stderr);
      return 1;
    }
  }
  setvbuf(stdout, NULL, _IOLBF, 0);

  if (hk_cuda_init() != HK_OK) {
    const char *why = hk_last_error();
    if (strncmp(why, "no CUDA device", 14) == 0)
      printf("%s\n", why);
    else
      printf("no CUDA device: %s\n", why);
    printf("note: hk-gpu-bench measures the CUDA backend and has nothing to "
           "measure here; not an error.\n");
    if (opt.json_path && write_json(opt.json_path) != 0)
      return 2;
    return 0;
  }

  hk_cuda_device_info_t info;
  memset(&info, 0, sizeof info);
  int rc = hk_cuda_device_info(&info);
  if (rc != HK_OK) {
    hk_fail("hk_cuda_device_info", rc);
    return 2;
  }
  printf("hk-gpu-bench: %s (device %d, sm_%d%d, %d SMs, %.1f GiB); driver "
         "%d.%d, NVRTC %d.%d; %s run\n",
         info.name, info.ordinal, info.major, info.minor, info.sm_count,
         (double)info.total_memory / (1u << 30), info.driver_version / 1000,
         info.driver_version % 1000 / 10, info.nvrtc_version / 1000,
         info.nvrtc_version % 1000 / 10, opt.quick ? "quick" : "full");
  char arch[16];
  snprintf(arch, sizeof arch, "sm_%d%d", info.major, info.minor);
  rec("device", info.name, info.ordinal, arch, info.sm_count, "SMs");

  /* The raw side: the driver, in hk's primary context, and the cubin. */
  char *cubin = opt.cubin_path ? NULL : default_cubin();
  const char *cubin_path = opt.cubin_path ? opt.cubin_path : cubin;
  if (cu_start(info.ordinal) == 0) {
    if (!cubin_path)
      snprintf(cu_problem, sizeof cu_problem,
               "cannot find this program's folder: give --cubin PATH");
    else if (cu_load_module(cubin_path) == 0)
      printf("raw kernels: %s\n", cubin_path);
  }
  if (!cu.ready || !cu.mod)
    printf("raw side: %s\n", cu_problem);

  /* The context of the benchmarks: no plugin folders, no disk cache, no
   * background compiler (the CPU tiers are not measured here). */
  const char *const no_dirs[] = {NULL};
  hk_options_t o = {.plugin_dirs = no_dirs,
                    .tier = HK_TIER_JIT,
                    .flags = HK_NO_CACHE};
  hk_context_t *ctx;
  if ((rc = hk_context_create(&ctx, &o)) != HK_OK) {
    hk_fail("hk_context_create", rc);
    cu_stop();
    free(cubin);
    return 2;
  }

  bench_launch(ctx);
  bench_bandwidth(ctx);
  bench_arrays(ctx);
  bench_pool();
  bench_warm_load();
  print_targets();

  hk_context_destroy(ctx);
  cu_stop();
  free(cubin);
  if (opt.json_path && write_json(opt.json_path) != 0)
    return 2;
  if (opt.json_path)
    printf("results: %s\n", opt.json_path);
  return had_error ? 2 : 0;
}
