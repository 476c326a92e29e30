/* test_cuda.c — the CUDA backend (issue 5) through the public API of hk.h.
 *
 * Always, also on a machine without a GPU, driver or toolkit:
 *  0. hk_cuda_init() is HK_OK, or HK_EUNSUPPORTED with "no CUDA device: ..."
 *     in hk_last_error(). Host buffers (create, copy in/out: plain memcpy,
 *     range checks), hk_mem_where of host memory, the backend names, and a
 *     stdlib kernel (add_f32) on the CPU through hk_call_on and hk_call.
 *     Without a device every CUDA call (device info, device memory,
 *     streams, pool statistics, device buffers, hk_call_on CUDA,
 *     hk_kernel_prepare CUDA) is HK_EUNSUPPORTED, hk_kernel_backends says
 *     CPU only, and the test ends with "SKIPPED: no CUDA device: REASON"
 *     (exit 77) once the CPU checks passed. The division the N-D entries
 *     of elementwise kernels compute (a multiply-high, an add and a
 *     shift: common/abi.h), emulated on the host, equals x / d.
 * With a device:
 *  1. every stdlib kernel with the cuda target, at n = 0, 1, 3, 255, 256,
 *     257, 1000, 4099, 65536+3, 2^20+5 (raw kernels: rows x cols about n),
 *     on the GPU against the CPU: integers (and min/max) exactly;
 *     elementwise kernels bit for bit in every type (the same body and
 *     hkmath.h functions, no contraction on either side; a NaN need only
 *     be a NaN); raw kernels' floats within 1e-5 relative + 1e-6 absolute
 *     (f32), 1e-12 + 1e-14 (f64) (their CUDA code is their own);
 *     reductions within tol * sum|terms|
 *     (tol 1e-5 / 1e-12; sum|terms| is the CPU result on |inputs|), times
 *     sqrt(n / 65536) beyond 65536 elements; raw kernels likewise, times
 *     sqrt(cols). Reductions and matvec run a second time on inputs that
 *     are small integers, whose sums are exact in any order: there the GPU
 *     must equal the CPU exactly (a dropped or repeated element shows).
 *     Every device buffer has a guard zone after its elements that must
 *     stay untouched, and in buffers must not change. At n = 1000 also
 *     hk_call (auto) on device buffers (GPU) and host buffers (CPU, bit for
 *     bit); mixed host and device buffers and buffers on the wrong side of
 *     hk_call_on are HK_EINVAL. Arrays on the GPU (strided, broadcast,
 *     axes) against hk_call_arrays on the CPU; axis reductions (sum,
 *     argmax, var, mean, minmax, an i8 sum) over rows of 0 to 70001
 *     elements, up to 70000 rows, each way the core runs rows (a warp per
 *     row, part and merge blocks, and as the shape picks).
 *  1d. (before 1b) rows kernels with a "cuda" body, a block per row: the
 *     stdlib's softmax, log_softmax and layernorm (f32, f64, and f16 and
 *     bf16 through float copies of each row) bit for bit
 *     against the CPU (a NaN need only be a NaN) over rows of 0 to 50257
 *     elements, 1 to 300 rows, rows with NaN, +-inf and only -inf, in place,
 *     through the core's rows call, hk_call_arrays and hk_call; guard zones.
 *  1b. the strided copies (every element size, gather and scatter: tiled
 *     transposes, collapsing and plain views) bit for bit against the
 *     CPU's, and hk_call_arrays on strided, broadcast and transposed device
 *     arrays (elementwise, axis reductions, rows) against the CPU's call.
 *  2. the example plugins (plugins/, tier jit, a fresh cache folder): every
 *     kernel with the cuda target as in 1; layernorm_rows (its "cuda"
 *     body) bit for bit as in 1d; cumsum (cpu only) refuses CUDA;
 *     bias_grad (an inout result) over rows each way. A grid kernel
 *     called in place (out is in) gives the CPU's result (its restrict
 *     variant must not run then). A rows kernel without a "cuda" body in
 *     f16 and bf16 (a thread a row, float copies in the launch's scratch)
 *     and long rows over more rows than the scratch's blocks or threads
 *     take at once: the CPU's bits.
 *  3. the device memory pool: reuse, statistics, trim, foreign pointers,
 *     sizes 0 .. 3 MiB.
 *  4. buffers and streams: device and host buffers, synchronous and
 *     asynchronous copies, hk_call_async, pinned memory and malloc'ed
 *     memory over 16 MiB (staged), hk_mem_where.
 *  5. the NVRTC disk cache: miss ("compiled by NVRTC"), hit ("loaded from
 *     the disk cache"), entries damaged (a byte flipped; truncated) are
 *     compiled again; a CUDA compile error points at the kernel file and
 *     the line of the "cuda" body.
 *  6. last, as it leaves the CUDA context unusable: a kernel that traps on
 *     the GPU makes hk_call_on CUDA return HK_EDEVICE (not HK_EINVAL),
 *     and hk_stream_sync on the default stream HK_EDEVICE after it.
 *
 * Usage: test_cuda SOURCE_DIR (else $HK_SOURCE_DIR, else the tree this file
 * is in). Everything is written under a fresh mkdtemp folder; the user's
 * cache is never touched. No timing assertions.
 *   HK_TEST_VERBOSE=1  prints the logs and messages the checks look at;
 *   HK_TEST_KEEP=1     keeps the temp folder.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "abi.h" /* hk_abi_cuda_divider */
#include "check.h"
#include "hk.h"
#include "rows16_kernel.h" /* rows16_json */

/* ---- Checks (tests/check.h) --------------------------------------------- */

/* CHECK_INT_EQ also says what hk_last_error() holds: here the values
 * compared are mostly status codes. */
#undef CHECK_INT_EQ
#define CHECK_INT_EQ(a, b)                                                 \
  do {                                                                     \
    long long check_a_ = (long long)(a), check_b_ = (long long)(b);        \
    CHECK_MSG(check_a_ == check_b_, "%lld != %lld (%s)", check_a_,         \
              check_b_, hk_last_error());                                  \
  } while (0)

/* An hk call that must succeed; the message is printed when it does not. */
#define CHECK_OK(call)                                                     \
  do {                                                                     \
    int check_rc_ = (call);                                                \
    CHECK_MSG(check_rc_ == HK_OK, "%d (%s)", check_rc_, hk_last_error());  \
  } while (0)

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const size_t sizes[] = {0,    1,    3,         255,
                               256,  257,  1000,      4099,
                               65536 + 3, (1u << 20) + 5};
#define AUTO_N 1000 /* the size at which hk_call (auto) runs too */
#define GUARD 64    /* elements after every device buffer, never written */
#define MAXP 16     /* parameters of a kernel, at most */
#define MIB ((size_t)1 << 20)

static char g_root[] = "/tmp/hk_cuda_XXXXXX";
static char g_src[4096]; /* the source tree */
static int g_verbose;

static void show(const char *what, const char *msg) {
  if (g_verbose) printf("[%s]\n%s\n", what, msg);
}

/* ---- Files ---------------------------------------------------------------- */

static int write_file(const char *path, const char *text) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return -1;
  size_t n = strlen(text);
  ssize_t w = write(fd, text, n);
  return close(fd) == 0 && w == (ssize_t)n ? 0 : -1;
}

/* ---- Contexts and kernels --------------------------------------------------- */

/* A context on tier jit: plugin folder dir (NULL: none), cache folder cache
 * (NULL: no disk cache at all), log to check.h's log when logged. */
static hk_context_t *mkctx(const char *dir, const char *cache, int logged,
                           unsigned extra_flags) {
  static const char *none[] = {NULL};
  const char *dirs[2] = {dir, NULL};
  hk_options_t o;
  memset(&o, 0, sizeof o);
  o.plugin_dirs = dir ? dirs : none;
  o.cache_dir = cache;
  o.tier = HK_TIER_JIT;
  o.flags = (cache ? 0u : HK_NO_CACHE) | extra_flags;
  if (logged) o.log = check_log;
  hk_context_t *ctx = NULL;
  int rc = hk_context_create(&ctx, &o);
  CHECK_MSG(rc == HK_OK && ctx, "hk_context_create(%s): %d (%s)",
            dir ? dir : "no plugins", rc, hk_last_error());
  return rc == HK_OK ? ctx : NULL;
}

static hk_kernel_t *find(hk_context_t *ctx, const char *name) {
  hk_kernel_t *k = NULL;
  if (!ctx) return NULL;
  int rc = hk_kernel_find(ctx, name, &k);
  CHECK_MSG(rc == HK_OK && k, "hk_kernel_find(%s): %d (%s)", name, rc,
            hk_last_error());
  return rc == HK_OK ? k : NULL;
}

typedef struct klist {
  hk_kernel_t *k[1024];
  int n;
  const char *origin; /* only kernels of this origin */
} klist_t;

static int collect(hk_kernel_t *k, void *user) {
  klist_t *l = user;
  const hk_kernel_info_t *in = hk_kernel_info(k);
  if (in && !strcmp(in->origin, l->origin) && l->n < (int)COUNT(l->k))
    l->k[l->n++] = k;
  return 0;
}

/* ---- Values ----------------------------------------------------------------- */

static int is_float(hk_dtype_t t) {
  return t == HK_F32 || t == HK_F64 || t == HK_F16 || t == HK_BF16;
}

/* Stores v in a value of type t at p (integers: rounded toward zero). */
static void put_val(hk_dtype_t t, void *p, double v) {
  switch (t) {
    case HK_F32: *(float *)p = (float)v; break;
    case HK_F64: *(double *)p = v; break;
    case HK_I8: *(int8_t *)p = (int8_t)v; break;
    case HK_I16: *(int16_t *)p = (int16_t)v; break;
    case HK_I32: *(int32_t *)p = (int32_t)v; break;
    case HK_I64: *(int64_t *)p = (int64_t)v; break;
    case HK_U8: *(uint8_t *)p = (uint8_t)v; break;
    case HK_U16: *(uint16_t *)p = (uint16_t)v; break;
    case HK_U32: *(uint32_t *)p = (uint32_t)v; break;
    case HK_U64: *(uint64_t *)p = (uint64_t)v; break;
    case HK_F16: *(uint16_t *)p = hk_f16_from_double(v); break;
    case HK_BF16: *(uint16_t *)p = hk_bf16_from_double(v); break;
    case HK_BOOL: *(uint8_t *)p = (uint8_t)(v != 0); break;
    default: break;
  }
}

/* Element i of a float buffer as a double. */
static double get_f(hk_dtype_t t, const void *buf, size_t i) {
  switch (t) {
    case HK_F32: return (double)((const float *)buf)[i];
    case HK_F16: return hk_f16_to_double(((const uint16_t *)buf)[i]);
    case HK_BF16: return hk_bf16_to_double(((const uint16_t *)buf)[i]);
    default: return ((const double *)buf)[i];
  }
}

/* Element i of an integer buffer, for messages. */
static long long get_i(hk_dtype_t t, const void *buf, size_t i) {
  switch (t) {
    case HK_I8: return ((const int8_t *)buf)[i];
    case HK_I16: return ((const int16_t *)buf)[i];
    case HK_I32: return ((const int32_t *)buf)[i];
    case HK_I64: return (long long)((const int64_t *)buf)[i];
    case HK_U8: return ((const uint8_t *)buf)[i];
    case HK_U16: return ((const uint16_t *)buf)[i];
    case HK_U32: return ((const uint32_t *)buf)[i];
    case HK_U64: return (long long)((const uint64_t *)buf)[i];
    default: return 0;
  }
}

/* Element i of a buffer of type t as a double, for messages. */
static double value(hk_dtype_t t, const void *buf, size_t i) {
  return is_float(t) ? get_f(t, buf, i) : (double)get_i(t, buf, i);
}

static uint64_t splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static uint64_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/* The kernel's name without its type suffix: "huber_loss_f32" ->
 * "huber_loss". */
static void base_name(const char *name, char *out, size_t n) {
  snprintf(out, n, "%s", name);
  char *u = strrchr(out, '_');
  if (u && hk_dtype_from_name(u + 1) != HK_DTYPE_INVALID) *u = '\0';
}

static int is_one_of(const char *s, const char *const *list) {
  for (; *list; list++)
    if (!strcmp(s, *list)) return 1;
  return 0;
}

/* The range the inputs of param p of kernel base are drawn from: positive
 * for log and sqrt, denominators away from 0, no cancellation where the GPU
 * may fuse a multiply-add (axpy, fma), mild for the activations. */
static void domain(const char *base, const char *param, hk_dtype_t t,
                   double *lo, double *hi) {
  static const char *const pos[] = {"log", "sqrt", NULL};
  static const char *const act[] = {"relu", "sigmoid", "tanh", "gelu",
                                    "silu", NULL};
  static const char *const fused[] = {"axpy", "saxpy", "fma", NULL};
  static const char *const wide[] = {"softmax", "log_softmax", NULL};
  if (!is_float(t)) {
    if (!strcmp(base, "clamp")) *lo = -2000, *hi = 2000;
    else if (t == HK_I32) *lo = -30000, *hi = 30000; /* products fit */
    else if (t == HK_I64) *lo = -2147483648.0, *hi = 2147483648.0;
    else *lo = 0, *hi = 100;
    return;
  }
  *lo = -1, *hi = 1;
  if (is_one_of(base, pos)) *lo = 0.01, *hi = 100;
  else if (!strcmp(base, "exp")) *lo = -10, *hi = 10;
  else if (is_one_of(base, act) || is_one_of(base, wide)) *lo = -4, *hi = 4;
  else if (is_one_of(base, fused)) *lo = 0.5, *hi = 2;
  else if (!strcmp(base, "div")) {
    if (!strcmp(param, "y")) *lo = 0.5, *hi = 2;
    else *lo = -2, *hi = 2;
  } else if (!strcmp(base, "huber_loss")) *lo = -2, *hi = 2;
}

/* The value of a scalar parameter (rows and cols are set by shape()). */
static double scalar_value(const char *name, hk_dtype_t t) {
  int f = is_float(t);
  if (!strcmp(name, "alpha")) return f ? 1.25 : 3;
  if (!strcmp(name, "value")) return f ? 3.5 : 7;
  if (!strcmp(name, "start")) return f ? 1.5 : -5;
  if (!strcmp(name, "step")) return f ? 0.25 : 3;
  if (!strcmp(name, "lo")) return f ? -0.5 : -1000;
  if (!strcmp(name, "hi")) return f ? 0.5 : 1000;
  if (!strcmp(name, "delta")) return 1;
  if (!strcmp(name, "eps")) return 1e-5;
  return 1;
}

/* A rows x cols shape of about n elements. */
static void shape(size_t n, int64_t *rows, int64_t *cols) {
  if (n == 0) {
    *rows = 0;
    *cols = 4;
  } else if (n < 64) {
    *rows = 1;
    *cols = (int64_t)n;
  } else {
    *cols = 61 + (int64_t)(n % 67);
    *rows = (int64_t)n / *cols;
  }
}

/* ---- One kernel, one size: CPU against GPU ---------------------------------- */

typedef struct rcase {
  hk_kernel_t *k;
  const hk_kernel_info_t *in;
  char base[64];
  size_t n; /* the call's n */
  int64_t cols; /* raw kernels with a cols scalar: error grows with it */
  check_scalar_t sc[MAXP];
  int64_t lens[MAXP];
  size_t bytes[MAXP];            /* (len + GUARD) elements */
  unsigned char *init[MAXP];     /* the CPU's inputs; outs 0xAB */
  unsigned char *img[MAXP];      /* what goes to the device; outs 0xCD */
  unsigned char *cpu[MAXP];      /* the CPU result */
  unsigned char *absr[MAXP];     /* the CPU result on |inputs| */
  unsigned char *got[MAXP];      /* the GPU result (or hk_call's) */
  void *dev[MAXP];
  int have_abs;
  int int_inputs; /* float inputs are small integers: exact results */
} rcase_t;

static int is_buf(const hk_param_info_t *p) { return p->role != HK_ROLE_SCALAR; }

static void args_of(rcase_t *c, unsigned char **bufs, void **devs,
                    void **args) {
  for (int i = 0; i < c->in->nparams; i++)
    args[i] = is_buf(&c->in->params[i]) ? (bufs ? (void *)bufs[i] : devs[i])
                                        : (void *)&c->sc[i];
}

static int exact_kernel(const rcase_t *c) {
  /* Elementwise kernels run the same body on both sides, contraction off
   * (nvcc and NVRTC --fmad=false), with hkmath.h's functions and the same
   * f16/bf16 conversions: the same bits (a NaN need only be a NaN).
   * With integer inputs sums are exact whatever their order, so the GPU's
   * tree of partial results gives the CPU's bits; a combine that divides
   * or calls exp (Welford's var, logsumexp) rounds at every node, and the
   * two trees differ (blocks of threads against lanes and chunks) */
  if (c->in->kind == HK_KIND_ELEMENTWISE) return 1;
  int rounding_combine = c->in->kind == HK_KIND_REDUCTION &&
                         (!strcmp(c->base, "var") ||
                          !strcmp(c->base, "logsumexp"));
  return (c->int_inputs && !rounding_combine) ||
         (c->in->kind == HK_KIND_REDUCTION &&
          (!strcmp(c->base, "min") || !strcmp(c->base, "max")));
}

/* Compares the GPU's result (c->got) with the CPU's; what names the run. */
static void compare(rcase_t *c, size_t nominal, const char *what) {
  const hk_kernel_info_t *in = c->in;
  for (int i = 0; i < in->nparams; i++) {
    const hk_param_info_t *p = &in->params[i];
    if (!is_buf(p)) continue;
    size_t es = hk_dtype_size(p->dtype), len = (size_t)c->lens[i];
    if (p->role == HK_ROLE_IN) {
      CHECK_MSG(!memcmp(c->got[i], c->img[i], c->bytes[i]),
                "%s n=%zu %s: in buffer %s (or its guard) was written",
                in->name, nominal, what, p->name);
      continue;
    }
    CHECK_MSG(!memcmp(c->got[i] + len * es, c->img[i] + len * es, GUARD * es),
              "%s n=%zu %s: written past the end of %s (%zu elements)",
              in->name, nominal, what, p->name, len);
    size_t bad = 0, first = 0;
    double bound_first = 0;
    int f = is_float(p->dtype);
    /* reductions and raw kernels (their own CUDA code): f16 and bf16 are
     * computed in f32 on both sides; a different order of sums may differ
     * in the last f32 bits, which rounding to 16 bits can turn into one
     * unit of the 16-bit result */
    double rtol = p->dtype == HK_F32    ? 1e-5
                  : p->dtype == HK_F16  ? 2e-3
                  : p->dtype == HK_BF16 ? 1.6e-2
                                        : 1e-12;
    double atol = p->dtype == HK_F32    ? 1e-6
                  : p->dtype == HK_F16  ? 1e-4
                  : p->dtype == HK_BF16 ? 1e-3
                                        : 1e-14;
    /* rounding of sums grows as sqrt of their length: a row's (cols) for
     * raw kernels, n (beyond 65536) for reductions */
    double scale = 1;
    if (c->cols > 1) scale = sqrt((double)c->cols);
    else if (in->kind == HK_KIND_REDUCTION && c->n > 65536)
      scale = sqrt((double)c->n / 65536);
    for (size_t j = 0; j < len; j++) {
      int ok;
      double bound = 0;
      if (!f || exact_kernel(c)) {
        ok = !memcmp(c->cpu[i] + j * es, c->got[i] + j * es, es);
        if (!ok && f) { /* a NaN need only be a NaN */
          double a = get_f(p->dtype, c->cpu[i], j);
          double b = get_f(p->dtype, c->got[i], j);
          ok = (isnan(a) && isnan(b)) || a == b;
        }
      } else {
        double a = get_f(p->dtype, c->cpu[i], j);
        double g = get_f(p->dtype, c->got[i], j);
        if (isnan(a) || isnan(g)) ok = isnan(a) && isnan(g);
        else if (isinf(a) || isinf(g)) ok = a == g;
        else {
          if (in->kind == HK_KIND_ELEMENTWISE) {
            bound = atol + rtol * fabs(a);
          } else { /* tol * sum|terms|: the result on |inputs| */
            double mag = fabs(a);
            if (c->have_abs) {
              double m2 = fabs(get_f(p->dtype, c->absr[i], j));
              if (m2 > mag && !isinf(m2)) mag = m2;
            }
            bound = scale * (rtol * mag + atol);
          }
          ok = fabs(g - a) <= bound;
        }
      }
      if (!ok && bad++ == 0) {
        first = j;
        bound_first = bound;
      }
    }
    if (f)
      CHECK_MSG(bad == 0,
                "%s n=%zu %s: %s: %zu of %zu elements differ, first [%zu]: "
                "gpu %.17g cpu %.17g (bound %.3g)",
                in->name, nominal, what, p->name, bad, len, first,
                bad ? get_f(p->dtype, c->got[i], first) : 0.0,
                bad ? get_f(p->dtype, c->cpu[i], first) : 0.0, bound_first);
    else
      CHECK_MSG(bad == 0,
                "%s n=%zu %s: %s: %zu of %zu elements differ, first [%zu]: "
                "gpu %lld cpu %lld",
                in->name, nominal, what, p->name, bad, len, first,
                bad ? get_i(p->dtype, c->got[i], first) : 0LL,
                bad ? get_i(p->dtype, c->cpu[i], first) : 0LL);
  }
}

static int upload(rcase_t *c) {
  for (int i = 0; i < c->in->nparams; i++) {
    if (!is_buf(&c->in->params[i])) continue;
    int rc = hk_memcpy_to_device(c->dev[i], c->img[i], c->bytes[i], NULL);
    CHECK_MSG(rc == HK_OK, "%s: upload of %s: %d (%s)", c->in->name,
              c->in->params[i].name, rc, hk_last_error());
    if (rc) return rc;
  }
  return HK_OK;
}

static int download(rcase_t *c) {
  for (int i = 0; i < c->in->nparams; i++) {
    if (!is_buf(&c->in->params[i])) continue;
    int rc = hk_memcpy_to_host(c->got[i], c->dev[i], c->bytes[i], NULL);
    CHECK_MSG(rc == HK_OK, "%s: download of %s: %d (%s)", c->in->name,
              c->in->params[i].name, rc, hk_last_error());
    if (rc) return rc;
  }
  return HK_OK;
}

static void free_case(rcase_t *c) {
  for (int i = 0; i < MAXP; i++) {
    free(c->init[i]);
    free(c->img[i]);
    free(c->cpu[i]);
    free(c->absr[i]);
    free(c->got[i]);
    if (c->dev[i]) CHECK_OK(hk_device_free(c->dev[i]));
  }
}

#define RUN_AUTO 1u /* also through hk_call, on host and on device buffers */
#define RUN_INT 2u  /* float inputs in -3..3, integers: sums are exact in
                       any order, so the GPU must equal the CPU exactly (a
                       dropped or repeated element shows) */

/* Runs k at about nominal elements on the CPU (host buffers) and on the GPU
 * (device buffers) and compares (flags: RUN_*). */
static void run_case(hk_kernel_t *k, size_t nominal, unsigned flags) {
  rcase_t c;
  memset(&c, 0, sizeof c);
  c.k = k;
  c.int_inputs = (flags & RUN_INT) != 0;
  int with_auto = (flags & RUN_AUTO) != 0;
  c.in = hk_kernel_info(k);
  const hk_kernel_info_t *in = c.in;
  if (!in) {
    CHECK(in != NULL);
    return;
  }
  if (in->nparams > MAXP) {
    CHECK_MSG(in->nparams <= MAXP, "%s: %d parameters", in->name,
              in->nparams);
    return;
  }
  base_name(in->name, c.base, sizeof c.base);
  int irows = -1, icols = -1;
  for (int i = 0; i < in->nparams; i++) {
    const hk_param_info_t *p = &in->params[i];
    if (p->role != HK_ROLE_SCALAR) continue;
    if (!strcmp(p->name, "rows") && !is_float(p->dtype)) irows = i;
    else if (!strcmp(p->name, "cols") && !is_float(p->dtype)) icols = i;
    else put_val(p->dtype, &c.sc[i], scalar_value(p->name, p->dtype));
  }
  c.n = nominal;
  if (irows >= 0 && icols >= 0) {
    int64_t rows, cols;
    shape(nominal, &rows, &cols);
    put_val(in->params[irows].dtype, &c.sc[irows], (double)rows);
    put_val(in->params[icols].dtype, &c.sc[icols], (double)cols);
    c.n = (size_t)(rows * cols);
    c.cols = cols;
  } else if (in->kind == HK_KIND_ROWS) {
    c.cols = (int64_t)c.n; /* a flat call: one row of n elements */
  }
  void *args[MAXP];
  args_of(&c, NULL, c.dev, args); /* scalars set; buffers NULL */
  int rc = hk_kernel_lens(k, c.n, args, c.lens);
  CHECK_MSG(rc == HK_OK, "%s n=%zu: hk_kernel_lens: %d (%s)", in->name, c.n,
            rc, hk_last_error());
  if (rc) return;

  /* host images */
  uint64_t seed = hash_str(in->name) ^ (nominal * 0x2545f4914f6cdd1dull) ^
                  (uint64_t)flags;
  int float_out = 0;
  for (int i = 0; i < in->nparams; i++) {
    const hk_param_info_t *p = &in->params[i];
    if (!is_buf(p)) continue;
    size_t es = hk_dtype_size(p->dtype);
    size_t len = c.lens[i] > 0 ? (size_t)c.lens[i] : 0;
    c.lens[i] = (int64_t)len;
    c.bytes[i] = (len + GUARD) * es;
    c.init[i] = malloc(c.bytes[i]);
    c.img[i] = malloc(c.bytes[i]);
    c.cpu[i] = malloc(c.bytes[i]);
    c.absr[i] = malloc(c.bytes[i]);
    c.got[i] = malloc(c.bytes[i]);
    if (!c.init[i] || !c.img[i] || !c.cpu[i] || !c.absr[i] || !c.got[i]) {
      CHECK_MSG(0, "%s n=%zu: out of memory", in->name, nominal);
      free_case(&c);
      return;
    }
    memset(c.init[i], 0xAB, c.bytes[i]);
    memset(c.img[i], 0xCD, c.bytes[i]);
    if (p->role == HK_ROLE_IN || p->role == HK_ROLE_INOUT) {
      double lo, hi;
      domain(c.base, p->name, p->dtype, &lo, &hi);
      uint64_t s = seed ^ hash_str(p->name);
      for (size_t j = 0; j < len; j++) {
        uint64_t r = splitmix(&s);
        double v;
        if (is_float(p->dtype) && c.int_inputs)
          v = (double)(int)(r % 7) - 3;
        else if (is_float(p->dtype))
          v = lo + (hi - lo) * ((double)(r >> 11) * 0x1.0p-53);
        else
          v = lo + (double)(r % (uint64_t)(hi - lo + 1));
        put_val(p->dtype, c.init[i] + j * es, v);
      }
      memcpy(c.img[i], c.init[i], len * es);
    } else if (is_float(p->dtype)) {
      float_out = 1;
    }
    if (p->role == HK_ROLE_INOUT && is_float(p->dtype)) float_out = 1;
  }

  /* the CPU */
  for (int i = 0; i < in->nparams; i++)
    if (is_buf(&in->params[i])) memcpy(c.cpu[i], c.init[i], c.bytes[i]);
  args_of(&c, c.cpu, NULL, args);
  rc = hk_call_on(k, HK_BACKEND_CPU, c.n, args);
  CHECK_MSG(rc == HK_OK, "%s n=%zu: hk_call_on cpu: %d (%s)", in->name,
            nominal, rc, hk_last_error());
  if (rc) {
    free_case(&c);
    return;
  }
  if (with_auto) { /* hk_call on host buffers: the same CPU code */
    for (int i = 0; i < in->nparams; i++)
      if (is_buf(&in->params[i])) memcpy(c.got[i], c.init[i], c.bytes[i]);
    args_of(&c, c.got, NULL, args);
    rc = hk_call(k, c.n, args);
    CHECK_MSG(rc == HK_OK, "%s n=%zu: hk_call on host buffers: %d (%s)",
              in->name, nominal, rc, hk_last_error());
    for (int i = 0; rc == HK_OK && i < in->nparams; i++) {
      const hk_param_info_t *p = &in->params[i];
      if (!is_buf(p) || p->role == HK_ROLE_IN) continue;
      size_t l = (size_t)c.lens[i] * hk_dtype_size(p->dtype);
      CHECK_MSG(!memcmp(c.got[i], c.cpu[i], l),
                "%s n=%zu: hk_call on host buffers: %s differs from "
                "hk_call_on cpu",
                in->name, nominal, p->name);
    }
  }
  if (float_out && in->kind != HK_KIND_ELEMENTWISE) { /* sum |terms| */
    for (int i = 0; i < in->nparams; i++) {
      const hk_param_info_t *p = &in->params[i];
      if (!is_buf(p)) continue;
      memcpy(c.absr[i], c.init[i], c.bytes[i]);
      if (is_float(p->dtype) && p->role != HK_ROLE_OUT)
        for (size_t j = 0; j < (size_t)c.lens[i]; j++)
          put_val(p->dtype, c.absr[i] + j * hk_dtype_size(p->dtype),
                  fabs(get_f(p->dtype, c.init[i], j)));
    }
    args_of(&c, c.absr, NULL, args);
    c.have_abs = hk_call_on(k, HK_BACKEND_CPU, c.n, args) == HK_OK;
  }

  /* the GPU */
  for (int i = 0; i < in->nparams; i++) {
    if (!is_buf(&in->params[i])) continue;
    rc = hk_device_alloc(&c.dev[i], c.bytes[i]);
    CHECK_MSG(rc == HK_OK, "%s n=%zu: hk_device_alloc(%zu): %d (%s)",
              in->name, nominal, c.bytes[i], rc, hk_last_error());
    if (rc) {
      c.dev[i] = NULL;
      free_case(&c);
      return;
    }
  }
  if (upload(&c) == HK_OK) {
    args_of(&c, NULL, c.dev, args);
    rc = hk_call_on(k, HK_BACKEND_CUDA, c.n, args);
    CHECK_MSG(rc == HK_OK, "%s n=%zu: hk_call_on cuda: %d (%s)", in->name,
              nominal, rc, hk_last_error());
    if (rc == HK_OK && download(&c) == HK_OK)
      compare(&c, nominal, "hk_call_on cuda");
  }
  if (with_auto && upload(&c) == HK_OK) { /* hk_call on device buffers */
    args_of(&c, NULL, c.dev, args);
    rc = hk_call(k, c.n, args);
    CHECK_MSG(rc == HK_OK, "%s n=%zu: hk_call on device buffers: %d (%s)",
              in->name, nominal, rc, hk_last_error());
    if (rc == HK_OK && download(&c) == HK_OK)
      compare(&c, nominal, "hk_call on device buffers");
  }
  free_case(&c);
}

/* Every kernel of l with the cuda target, at every size. Returns how many
 * ran. */
static int run_all(klist_t *l) {
  int ran = 0;
  for (int i = 0; i < l->n; i++) {
    hk_kernel_t *k = l->k[i];
    const hk_kernel_info_t *in = hk_kernel_info(k);
    if (!(in->targets & HK_TARGET_CUDA)) continue;
    unsigned b = hk_kernel_backends(k);
    CHECK_MSG(b == (HK_TARGET_CPU | HK_TARGET_CUDA),
              "%s: hk_kernel_backends = %u (%s)", in->name, b,
              hk_last_error());
    int rc = hk_kernel_prepare(k, HK_BACKEND_CUDA);
    CHECK_MSG(rc == HK_OK, "%s: hk_kernel_prepare cuda: %d (%s)", in->name,
              rc, hk_last_error());
    if (rc) continue;
    char base[64];
    base_name(in->name, base, sizeof base);
    int sums = in->kind == HK_KIND_REDUCTION ||
               (in->kind == HK_KIND_RAW && strcmp(base, "softmax") &&
                strcmp(base, "log_softmax"));
    for (size_t s = 0; s < COUNT(sizes); s++) {
      run_case(k, sizes[s], sizes[s] == AUTO_N ? RUN_AUTO : 0);
      if (sums) run_case(k, sizes[s], RUN_INT);
    }
    ran++;
  }
  return ran;
}

/* ---- 0. Always: host buffers, names, the CPU backend ---------------------- */

static void test_host_buffers(void) {
  unsigned char src[1000], dst[1000];
  for (int i = 0; i < 1000; i++) src[i] = (unsigned char)(i * 7 + 3);
  hk_buffer_t *b = NULL;
  int rc = hk_buffer_create(&b, HK_MEM_HOST, sizeof src);
  CHECK_MSG(rc == HK_OK && b, "hk_buffer_create host: %d (%s)", rc,
            hk_last_error());
  if (rc || !b) return;
  CHECK(hk_buffer_data(b) != NULL);
  CHECK_INT_EQ(hk_buffer_size(b), sizeof src);
  CHECK_INT_EQ(hk_buffer_where(b), HK_MEM_HOST);
  CHECK_INT_EQ(hk_mem_where(hk_buffer_data(b)), HK_MEM_HOST);
  CHECK_OK(hk_buffer_copy_in(b, 0, src, sizeof src, NULL));
  CHECK(!memcmp(hk_buffer_data(b), src, sizeof src)); /* plain memcpy */
  memset(dst, 0, sizeof dst);
  CHECK_OK(hk_buffer_copy_out(b, 100, dst, 50, NULL));
  CHECK(!memcmp(dst, src + 100, 50));
  CHECK(dst[50] == 0);
  unsigned char ten[10];
  memset(ten, 0x5A, sizeof ten);
  CHECK_OK(hk_buffer_copy_in(b, 500, ten, sizeof ten, NULL));
  CHECK_OK(hk_buffer_copy_out(b, 0, dst, sizeof dst, NULL));
  CHECK(!memcmp(dst, src, 500));
  CHECK(!memcmp(dst + 500, ten, 10));
  CHECK(!memcmp(dst + 510, src + 510, 490));
  /* the whole range, and nothing past it */
  CHECK_OK(hk_buffer_copy_in(b, 0, src, 0, NULL));
  CHECK_INT_EQ(hk_buffer_copy_in(b, 997, src, 4, NULL), HK_EINVAL);
  CHECK_INT_EQ(hk_buffer_copy_in(b, 0, src, 1001, NULL), HK_EINVAL);
  CHECK_INT_EQ(hk_buffer_copy_in(b, SIZE_MAX, src, 2, NULL), HK_EINVAL);
  CHECK_INT_EQ(hk_buffer_copy_out(b, 997, dst, 4, NULL), HK_EINVAL);
  CHECK_INT_EQ(hk_buffer_copy_out(b, 0, dst, 1001, NULL), HK_EINVAL);
  CHECK_INT_EQ(hk_buffer_copy_out(b, SIZE_MAX, dst, 2, NULL), HK_EINVAL);
  CHECK_OK(hk_buffer_copy_out(b, 0, dst, sizeof dst, NULL));
  CHECK(!memcmp(dst + 500, ten, 10)); /* refused copies changed nothing */
  hk_buffer_destroy(b);
  hk_buffer_destroy(NULL);

  int on_stack = 0;
  void *heap = malloc(64);
  CHECK_INT_EQ(hk_mem_where(&on_stack), HK_MEM_HOST);
  CHECK_INT_EQ(hk_mem_where(heap), HK_MEM_HOST);
  free(heap);

  CHECK_STR_EQ(hk_backend_name(HK_BACKEND_AUTO), "auto");
  CHECK_STR_EQ(hk_backend_name(HK_BACKEND_CPU), "cpu");
  CHECK_STR_EQ(hk_backend_name(HK_BACKEND_CUDA), "cuda");
}

/* add_f32 on the CPU through hk_call_on and hk_call; with_device: whether
 * a device is there (else the CUDA side must be refused). */
static void test_cpu_backend(int with_device) {
  hk_context_t *ctx = mkctx(NULL, NULL, 0, 0);
  hk_kernel_t *k = find(ctx, "add_f32");
  if (!k) {
    hk_context_destroy(ctx);
    return;
  }
  enum { N = 4099 };
  float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
  float *out = malloc(N * sizeof *out);
  for (int i = 0; i < N; i++) {
    x[i] = (float)i * 0.5f - 7;
    y[i] = (float)(i % 13) - 3.25f;
  }
  void *args[] = {x, y, out};
  memset(out, 0, N * sizeof *out);
  CHECK_OK(hk_call_on(k, HK_BACKEND_CPU, N, args));
  int bad = 0;
  for (int i = 0; i < N; i++) bad += out[i] != x[i] + y[i];
  CHECK_MSG(bad == 0, "hk_call_on cpu: %d wrong", bad);
  memset(out, 0, N * sizeof *out);
  CHECK_OK(hk_call(k, N, args));
  bad = 0;
  for (int i = 0; i < N; i++) bad += out[i] != x[i] + y[i];
  CHECK_MSG(bad == 0, "hk_call: %d wrong", bad);
  memset(out, 0, N * sizeof *out);
  CHECK_OK(hk_call_on(k, HK_BACKEND_AUTO, N, args));
  bad = 0;
  for (int i = 0; i < N; i++) bad += out[i] != x[i] + y[i];
  CHECK_MSG(bad == 0, "hk_call_on auto: %d wrong", bad);

  unsigned b = hk_kernel_backends(k);
  CHECK(b & HK_TARGET_CPU);
  CHECK(hk_kernel_info(k)->targets & HK_TARGET_CUDA);
  if (!with_device) {
    CHECK_MSG(!(b & HK_TARGET_CUDA), "backends %u without a device", b);
    CHECK_INT_EQ(hk_call_on(k, HK_BACKEND_CUDA, N, args), HK_EUNSUPPORTED);
    CHECK_CONTAINS(hk_last_error(), "no CUDA device");
    CHECK_INT_EQ(hk_kernel_prepare(k, HK_BACKEND_CUDA), HK_EUNSUPPORTED);
    CHECK_CONTAINS(hk_last_error(), "no CUDA device");
  } else {
    CHECK_MSG(b & HK_TARGET_CUDA, "backends %u with a device", b);
  }
  free(x);
  free(y);
  free(out);
  hk_context_destroy(ctx);
}

/* Without a device: every CUDA entry point is refused. */
static void test_no_device(void) {
  hk_cuda_device_info_t di;
  CHECK_INT_EQ(hk_cuda_device_info(&di), HK_EUNSUPPORTED);
  CHECK_CONTAINS(hk_last_error(), "no CUDA device");
  void *p = NULL;
  CHECK_INT_EQ(hk_device_alloc(&p, 1024), HK_EUNSUPPORTED);
  CHECK_CONTAINS(hk_last_error(), "no CUDA device");
  hk_stream_t *s = NULL;
  CHECK_INT_EQ(hk_stream_create(&s), HK_EUNSUPPORTED);
  CHECK_CONTAINS(hk_last_error(), "no CUDA device");
  hk_pool_stats_t st;
  CHECK_INT_EQ(hk_pool_stats(&st), HK_EUNSUPPORTED);
  CHECK_CONTAINS(hk_last_error(), "no CUDA device");
  hk_buffer_t *b = NULL;
  CHECK_INT_EQ(hk_buffer_create(&b, HK_MEM_DEVICE, 1024), HK_EUNSUPPORTED);
  CHECK_CONTAINS(hk_last_error(), "no CUDA device");
  CHECK_INT_EQ(hk_cuda_init(), HK_EUNSUPPORTED); /* the first result again */

  /* array calls sent to the GPU (strided, broadcast, axes, rows): the
   * reason, never a crash */
  hk_context_t *ctx = mkctx(NULL, NULL, 0, 0);
  if (!ctx) return;
  hk_call_opts_t on_gpu = {.backend = HK_BACKEND_CUDA};
  hk_call_opts_t axis0 = {.axes = (int[]){0}, .naxes = 1,
                          .backend = HK_BACKEND_CUDA};
  float x[12] = {0}, y[4] = {0}, z[12];
  hk_array_t a[3];
  hk_array_init(&a[0], x, HK_F32, 2, (int64_t[]){3, 4});
  hk_array_init(&a[1], y, HK_F32, 1, (int64_t[]){4});
  hk_array_init(&a[2], z, HK_F32, 2, (int64_t[]){3, 4});
  hk_kernel_t *k = find(ctx, "add_f32");
  if (k) {
    CHECK_INT_EQ(hk_call_arrays(k, a, &on_gpu), HK_EUNSUPPORTED);
    CHECK_CONTAINS(hk_last_error(), "no CUDA device");
  }
  hk_array_init(&a[1], z, HK_F32, 1, (int64_t[]){4});
  if ((k = find(ctx, "sum_f32"))) {
    CHECK_INT_EQ(hk_call_arrays(k, a, &axis0), HK_EUNSUPPORTED);
    CHECK_CONTAINS(hk_last_error(), "no CUDA device");
  }
  hk_array_t t[2];
  hk_array_init(&t[0], x, HK_F32, 2, (int64_t[]){4, 3});
  t[0].strides[0] = 1; /* the transpose of a (3, 4) array */
  t[0].strides[1] = 4;
  hk_array_init(&t[1], z, HK_F32, 2, (int64_t[]){4, 3});
  if ((k = find(ctx, "softmax_f32"))) {
    CHECK_INT_EQ(hk_call_arrays(k, t, &on_gpu), HK_EUNSUPPORTED);
    CHECK_CONTAINS(hk_last_error(), "no CUDA device");
  }
  hk_context_destroy(ctx);
}

/* ---- 0b. The N-D entries' division, on the host ------------------------------ */

/* The high half of the bits-bit product of a and b (__umulhi, __umul64hi). */
static uint64_t mulhi(uint64_t a, uint64_t b, int bits) {
  if (bits == 32) return (a * b) >> 32;
  uint64_t al = a & 0xffffffffu, ah = a >> 32, bl = b & 0xffffffffu,
           bh = b >> 32;
  uint64_t lh = al * bh, hl = ah * bl;
  uint64_t mid = (al * bl >> 32) + (lh & 0xffffffffu) + (hl & 0xffffffffu);
  return ah * bh + (lh >> 32) + (hl >> 32) + (mid >> 32);
}

/* x / d as the N-D entries compute it (hk_nd_div in the generated CUDA:
 * the sum wraps at bits bits, as on the GPU) with hk_abi_cuda_divider's
 * constants, for divisors at the edges (powers of two and their
 * neighbours up to 2^(bits-1), the bound) and random ones, and dividends
 * at the edges (0, around multiples of d, up to 2^(bits-1) - 1) and
 * random ones. */
static void test_nd_divider(void) {
  uint64_t rng = 0x243F6A8885A308D3ull;
  long checked = 0, bad = 0;
  for (int bits = 32; bits <= 64; bits += 32) {
    const uint64_t top = (uint64_t)1 << (bits - 1); /* d <= top, x < top */
    const uint64_t wrap = bits == 32 ? 0xffffffffu : ~(uint64_t)0;
    uint64_t ds[256];
    int nd = 0;
    for (int e = 0; e < bits; e++) {
      uint64_t p = (uint64_t)1 << e;
      ds[nd++] = p;
      if (p > 2) ds[nd++] = p - 1;
      if (p < top) ds[nd++] = p + 1;
    }
    ds[nd++] = 3 * 4096;
    ds[nd++] = 70001;
    ds[nd++] = top / 3;
    for (int r = 0; r < 40; r++) ds[nd++] = splitmix(&rng) % top + 1;
    for (int a = 0; a < nd; a++) {
      const uint64_t d = ds[a];
      unsigned s;
      const uint64_t m = hk_abi_cuda_divider(d, bits, &s);
      CHECK_MSG(m <= wrap, "divider of %" PRIu64 " (%d bits): %" PRIu64, d,
                bits, m);
      uint64_t xs[64];
      int nx = 0;
      const uint64_t last = (top - 1) / d * d;
      const uint64_t near[] = {0,     1,        d - 1,   d,       d + 1,
                               2 * d - 1, 2 * d, last - 1, last,   top - 2,
                               top - 1};
      for (size_t q = 0; q < COUNT(near); q++) xs[nx++] = near[q];
      for (int r = 0; r < 40; r++) xs[nx++] = splitmix(&rng) % top;
      for (int b = 0; b < nx; b++) {
        const uint64_t x = xs[b];
        if (x >= top) continue; /* d + 1 past the bound, and the like */
        const uint64_t q = ((mulhi(x, m, bits) + x) & wrap) >> s;
        checked++;
        if (q != x / d && bad++ < 5)
          CHECK_MSG(0, "%" PRIu64 " / %" PRIu64 " (%d bits): %" PRIu64
                    ", not %" PRIu64, x, d, bits, q, x / d);
      }
    }
  }
  CHECK_MSG(bad == 0, "the N-D division is wrong %ld times in %ld", bad,
            checked);
}

/* ---- 1. The stdlib on the GPU -------------------------------------------------- */

/* The core's rows calls (libhk internals, which the array call uses):
 * declared here, as test_cuda sees only hk.h. */
int hk__call_rows_cpu(const hk_kernel_t *k, size_t rows, size_t n,
                      void *const *args);
int hk__call_rows_cuda(const hk_kernel_t *k, hk_stream_t *s, size_t rows,
                       size_t n, void *const *args);

/* A rows kernel over many rows: layernorm_f64 on R x N against the CPU's
 * rows call, up to rounding (test_rows_coop below holds its block per row
 * to the CPU's bits). */
static void test_rows_gpu(hk_context_t *ctx) {
  enum { R = 300, N = 77 };
  hk_kernel_t *k = find(ctx, "layernorm_f64");
  if (!k) return;
  const size_t bytes[6] = {R * N * 8, N * 8, N * 8, R * N * 8, R * 8, R * 8};
  double *host[6], *got[6];
  void *dev[6] = {NULL};
  for (int i = 0; i < 6; i++) {
    host[i] = calloc(1, bytes[i]);
    got[i] = calloc(1, bytes[i]);
  }
  for (int i = 0; i < R * N; i++) host[0][i] = 3 * sin(i) + (i / N) % 5;
  for (int j = 0; j < N; j++) host[1][j] = 1 + 0.01 * j, host[2][j] = 0.1 * j;
  double eps = 1e-5;
  void *cargs[] = {host[0], host[1], host[2], host[3], host[4], host[5], &eps};
  CHECK_OK(hk__call_rows_cpu(k, R, N, cargs));
  int ok = 1;
  for (int i = 0; i < 6; i++) {
    ok &= hk_device_alloc(&dev[i], bytes[i]) == HK_OK;
    if (ok && i < 3)
      ok &= hk_memcpy_to_device(dev[i], host[i], bytes[i], NULL) == HK_OK;
  }
  CHECK_MSG(ok, "rows on the GPU: buffers: %s", hk_last_error());
  void *gargs[] = {dev[0], dev[1], dev[2], dev[3], dev[4], dev[5], &eps};
  if (ok) {
    int rc = hk__call_rows_cuda(k, NULL, R, N, gargs);
    CHECK_MSG(rc == HK_OK, "layernorm_f64 rows on the GPU: %d (%s)", rc,
              hk_last_error());
    for (int i = 3; i < 6; i++)
      CHECK_OK(hk_memcpy_to_host(got[i], dev[i], bytes[i], NULL));
    size_t bad = 0;
    for (int i = 3; i < 6; i++)
      for (size_t j = 0; j < bytes[i] / 8; j++)
        bad += !(fabs(got[i][j] - host[i][j]) <= 1e-12 * (1 + fabs(host[i][j])));
    CHECK_MSG(bad == 0, "layernorm_f64 rows on the GPU: %zu values differ "
              "from the CPU's", bad);
    /* host buffers are refused */
    CHECK_INT_EQ(hk__call_rows_cuda(k, NULL, R, N, cargs), HK_EINVAL);
  }
  for (int i = 0; i < 6; i++) {
    if (dev[i]) CHECK_OK(hk_device_free(dev[i]));
    free(host[i]);
    free(got[i]);
  }
}

/* ---- 1d. Rows kernels a block per row: the CPU's bits ------------------ */

/* A rows kernel with a "cuda" body runs a block of threads per row
 * (hk_cuda_crow__NAME). The stdlib's softmax, log_softmax and layernorm
 * and plugins/layernorm.json mirror their CPU bodies' order there, so the
 * GPU must give the CPU's bits (a NaN need only be a NaN: the GPU's NaNs
 * carry no payload), over the row lengths that hit every path of those
 * bodies (below 16 and 32, the tails of 16, one chunk of 1024 and more, 32
 * to 1024 threads a row) and row counts from 1 to 300. Rows in turn hold
 * random values, a NaN, +inf, -inf, only -inf, and +inf with -inf. Each
 * call runs with y = x too (softmax, log_softmax: in place), through the
 * core's rows call and hk_call_arrays on device arrays (and hk_call for
 * one row). Out buffers have a guard zone that must stay untouched. */

enum { COOP_GUARD = 64 };

static uint64_t coop_rng = 0x9E3779B97F4A7C15u;

static double coop_uniform(double lo, double hi) {
  coop_rng = coop_rng * 6364136223846793005u + 1442695040888963407u;
  return lo + (hi - lo) * (double)(coop_rng >> 11) / 9007199254740992.0;
}

static void coop_put(hk_dtype_t t, void *p, size_t i, double v) {
  if (t == HK_F32) ((float *)p)[i] = (float)v;
  else if (t == HK_F16) ((uint16_t *)p)[i] = hk_f16_from_double(v);
  else if (t == HK_BF16) ((uint16_t *)p)[i] = hk_bf16_from_double(v);
  else ((double *)p)[i] = v;
}

/* Element i of p (type t) as a double. */
static double coop_get(hk_dtype_t t, const void *p, size_t i) {
  switch (t) {
    case HK_F32: return ((const float *)p)[i];
    case HK_F16: return hk_f16_to_double(((const uint16_t *)p)[i]);
    case HK_BF16: return hk_bf16_to_double(((const uint16_t *)p)[i]);
    default: return ((const double *)p)[i];
  }
}

/* 1 when a and b (count elements of t) are the same bits or both NaN;
 * else 0, with the first difference in *at. */
static int coop_same(hk_dtype_t t, const void *a, const void *b, size_t count,
                     size_t *at) {
  const size_t es = hk_dtype_size(t);
  for (size_t i = 0; i < count; i++) {
    double x = coop_get(t, a, i), y = coop_get(t, b, i);
    int ok = (x != x && y != y) ||
             !memcmp((const char *)a + i * es, (const char *)b + i * es, es);
    if (!ok) {
      *at = i;
      return 0;
    }
  }
  return 1;
}

/* The element count of parameter p over rows rows of n. */
static size_t coop_count(const hk_param_info_t *p, size_t rows, size_t n) {
  return p->row == HK_ROW_ONE ? rows : p->row == HK_ROW_SHARED ? n : rows * n;
}

/* Fills the in buffer x (rows rows of n): row r by pattern (r + pat) % 6. */
static void coop_fill_rows(hk_dtype_t t, void *x, size_t rows, size_t n,
                           int pat) {
  for (size_t i = 0; i < rows * n; i++)
    coop_put(t, x, i, coop_uniform(-8, 8));
  for (size_t r = 0; r < rows && n; r++) {
    size_t a = (size_t)coop_uniform(0, (double)n);
    size_t b = (size_t)coop_uniform(0, (double)n);
    switch ((r + (size_t)pat) % 6) {
      case 1: coop_put(t, x, r * n + a, NAN); break;
      case 2: coop_put(t, x, r * n + a, INFINITY); break;
      case 3: coop_put(t, x, r * n + a, -INFINITY); break;
      case 4:
        for (size_t c = 0; c < n; c++) coop_put(t, x, r * n + c, -INFINITY);
        break;
      case 5:
        coop_put(t, x, r * n + a, INFINITY);
        coop_put(t, x, r * n + b, -INFINITY);
        break;
      default: break;
    }
  }
}

/* One call of k (whose first parameter is the rows' in buffer x) over rows
 * rows of n on the GPU, way 0 the core's rows call, 1 hk_call_arrays, 2
 * hk_call (rows must be 1), against the CPU's rows call; with inplace, its
 * second parameter is x itself. 1 when the bits agree and the guards
 * stayed, else 0 (reported). */
static int coop_case(hk_kernel_t *k, size_t rows, size_t n, int pat,
                     int inplace, int way) {
  const hk_kernel_info_t *in = hk_kernel_info(k);
  void *host[MAXP] = {NULL}, *cpu[MAXP] = {NULL}, *dev[MAXP] = {NULL};
  size_t count[MAXP] = {0};
  double sval[MAXP];
  void *hargs[MAXP], *dargs[MAXP];
  hk_array_t arr[MAXP];
  int ok = 1, same = 1;
  if (in->nparams > MAXP) {
    CHECK_MSG(0, "%s: %d parameters; coop_case takes %d", in->name,
              in->nparams, MAXP);
    return 0;
  }
  for (int i = 0; ok && i < in->nparams; i++) {
    const hk_param_info_t *p = &in->params[i];
    const size_t es = hk_dtype_size(p->dtype);
    if (p->role == HK_ROLE_SCALAR) {
      coop_put(p->dtype, &sval[i], 0, 1e-5); /* layernorm's eps */
      hargs[i] = dargs[i] = &sval[i];
      hk_array_init(&arr[i], &sval[i], p->dtype, 0, NULL);
      continue;
    }
    count[i] = coop_count(p, rows, n);
    const size_t bytes = (count[i] + COOP_GUARD) * es;
    host[i] = malloc(bytes);
    cpu[i] = malloc(bytes);
    ok &= host[i] && cpu[i] && hk_device_alloc(&dev[i], bytes) == HK_OK;
    if (!ok) break;
    if (p->role == HK_ROLE_IN && i == 0)
      coop_fill_rows(p->dtype, host[i], rows, n, pat);
    else if (p->role == HK_ROLE_IN) /* weight, bias */
      for (size_t c = 0; c < count[i]; c++)
        coop_put(p->dtype, host[i], c, 1 + 0.01 * (double)c - 0.3 * (c % 3));
    else
      memset(host[i], 0xA5, count[i] * es);
    memset((char *)host[i] + count[i] * es, 0x5A, COOP_GUARD * es);
    memcpy(cpu[i], host[i], bytes);
    ok &= hk_memcpy_to_device(dev[i], host[i], bytes, NULL) == HK_OK;
    hargs[i] = cpu[i];
    dargs[i] = dev[i];
    int64_t shape[2] = {(int64_t)rows, (int64_t)n};
    if (p->row == HK_ROW_FULL)
      hk_array_init(&arr[i], dev[i], p->dtype, 2, shape);
    else
      hk_array_init(&arr[i], dev[i], p->dtype, 1,
                    p->row == HK_ROW_ONE ? &shape[0] : &shape[1]);
  }
  CHECK_MSG(ok, "%s: buffers: %s", in->name, hk_last_error());
  if (ok && inplace) {
    hargs[1] = hargs[0];
    dargs[1] = dargs[0];
    arr[1] = arr[0];
  }
  if (ok) {
    CHECK_OK(hk__call_rows_cpu(k, rows, n, hargs));
    hk_call_opts_t on_gpu = {.backend = HK_BACKEND_CUDA};
    int rc = way == 0   ? hk__call_rows_cuda(k, NULL, rows, n, dargs)
             : way == 1 ? hk_call_arrays(k, arr, &on_gpu)
                        : hk_call_on(k, HK_BACKEND_CUDA, n, dargs);
    CHECK_MSG(rc == HK_OK, "%s on the GPU (way %d): %d (%s)", in->name, way,
              rc, hk_last_error());
    ok &= rc == HK_OK;
  }
  for (int i = 0; ok && i < in->nparams; i++) {
    const hk_param_info_t *p = &in->params[i];
    /* the results: out buffers, and x in place (y, then, is x) */
    if (p->role == HK_ROLE_SCALAR || (inplace && i == 1) ||
        (p->role == HK_ROLE_IN && !(inplace && i == 0)))
      continue;
    const size_t es = hk_dtype_size(p->dtype);
    const size_t bytes = (count[i] + COOP_GUARD) * es;
    CHECK_OK(hk_memcpy_to_host(host[i], dev[i], bytes, NULL));
    size_t at = 0;
    if (!coop_same(p->dtype, cpu[i], host[i], count[i], &at)) {
      double g = coop_get(p->dtype, host[i], at);
      double c = coop_get(p->dtype, cpu[i], at);
      CHECK_MSG(0, "%s (way %d%s) rows %zu n %zu pattern %d: %s[%zu] is %.17g "
                "on the GPU, %.17g on the CPU", in->name, way,
                inplace ? ", in place" : "", rows, n, pat, p->name, at, g, c);
      same = 0;
    }
    const unsigned char *gz = (const unsigned char *)host[i] + count[i] * es;
    int guard = 1;
    for (size_t b = 0; b < COOP_GUARD * es; b++) guard &= gz[b] == 0x5A;
    CHECK_MSG(guard, "%s (way %d) rows %zu n %zu: wrote past %s", in->name,
              way, rows, n, p->name);
    same &= guard;
  }
  for (int i = 0; i < in->nparams; i++) {
    if (dev[i]) hk_device_free(dev[i]);
    free(host[i]);
    free(cpu[i]);
  }
  return ok && same;
}

/* coop_case over the row lengths and counts above, every way; in place
 * too where the kernel's second parameter is its rows' result (inplace).
 * The number of cases that failed. */
static int coop_kernel(hk_context_t *ctx, const char *name, int inplace) {
  static const size_t ns[] = {0,    1,    15,   16,   17,   31,   32,   33,
                              64,   100,  1000, 1024, 1025, 4097, 50257};
  static const size_t nrows[] = {1, 3, 64, 300};
  hk_kernel_t *k = find(ctx, name);
  if (!k) return 1;
  int bad = 0, cases = 0, pat = 0;
  for (size_t a = 0; a < COUNT(ns) && bad < 4; a++)
    for (size_t b = 0; b < COUNT(nrows) && bad < 4; b++) {
      if (ns[a] > 4097 && nrows[b] > 64) continue; /* enough: 3M elements */
      for (int ip = 0; ip <= inplace; ip++)
        for (int way = 0; way < (nrows[b] == 1 ? 3 : 2); way++, cases++)
          bad += !coop_case(k, nrows[b], ns[a], pat++ % 6, ip, way);
    }
  printf("%s: %d calls a block per row, %d differ from the CPU\n", name,
         cases, bad);
  return bad;
}

static void test_rows_coop(hk_context_t *ctx) {
  /* the 16-bit ones stage each row in float copies (launch.c's scratch) */
  static const char *const stdlib[] = {
      "softmax_f32",      "softmax_f64",      "softmax_f16",
      "softmax_bf16",     "log_softmax_f32",  "log_softmax_f64",
      "log_softmax_f16",  "log_softmax_bf16", "layernorm_f32",
      "layernorm_f64",    "layernorm_f16",    "layernorm_bf16"};
  for (size_t i = 0; i < COUNT(stdlib); i++)
    CHECK_INT_EQ(coop_kernel(ctx, stdlib[i], i < 8), 0);
}

/* ---- 1b. Arrays on the GPU: strided, broadcast, axes --------------------- */

/* One parameter's array: a view (offset off, nd axes of shape, strides st
 * in elements) into a base of base elements. nd -(d + 1): a contiguous
 * array of d axes of shape (strides computed). A scalar's vspec is
 * ignored (its value is random). */
typedef struct vspec {
  int64_t base, off;
  int nd;
  int64_t shape[HK_MAX_DIMS], st[HK_MAX_DIMS];
} vspec;

static uint64_t g_arr_rng = 0x9E3779B97F4A7C15ull;
static uint64_t arr_rand(void) {
  g_arr_rng ^= g_arr_rng << 13;
  g_arr_rng ^= g_arr_rng >> 7;
  g_arr_rng ^= g_arr_rng << 17;
  return g_arr_rng;
}

/* Fills n elements of type t at p with small random values. */
static void arr_fill(hk_dtype_t t, unsigned char *p, int64_t n) {
  for (int64_t j = 0; j < n; j++) {
    double v = (double)(arr_rand() % 4001) / 1000.0 - 2.0;
    switch (t) {
    case HK_F32: ((float *)p)[j] = (float)v; break;
    case HK_F64: ((double *)p)[j] = v; break;
    case HK_BF16: ((uint16_t *)p)[j] = hk_bf16_from_double(v); break;
    case HK_F16: ((uint16_t *)p)[j] = hk_f16_from_double(v); break;
    case HK_I8: ((int8_t *)p)[j] = (int8_t)(arr_rand() % 200 - 100); break;
    case HK_I32: ((int32_t *)p)[j] = (int32_t)(arr_rand() % 2000) - 1000; break;
    case HK_I64: ((int64_t *)p)[j] = (int64_t)(arr_rand() % 2000) - 1000; break;
    case HK_BOOL: p[j] = (unsigned char)(arr_rand() & 1); break;
    default: memset(p + j * (int64_t)hk_dtype_size(t), 0x11, hk_dtype_size(t));
    }
  }
}

/* The N-D entry of an elementwise kernel called directly (core/cuda/
 * call.c; as core/registry.h declares it, with its flag HK__ND_WIDE). */
int hk__call_nd_cuda(const hk_kernel_t *k, int nd, const int64_t *shape,
                     const int64_t *const *st, size_t n, void *const *args,
                     unsigned flags);
#define ND_WIDE 1u

/* How arrays_run calls the GPU: hk_call_arrays; or the N-D entry directly
 * over the views as they are (same rank and shape for all; broadcast by
 * strides of 0), with 32-bit index math where it fits, or 64-bit. With
 * IN_PLACE, the last parameter's view lies in the first one's base (an
 * out array that is an in array). */
enum { VIA_ARRAYS, VIA_ND, VIA_ND_WIDE, VIA_MASK = 3, IN_PLACE = 4 };

/* Runs kernel kname over the views in vs (one per parameter) on the CPU
 * (host bases, hk_call_arrays) and on the GPU (device bases with the same
 * bytes, as via says), and compares every base after: exactly when tol is
 * 0, else floats within tol * (1 + |cpu|); an out array's base starts as
 * 0x5A bytes, so what lies between its elements must stay so. Returns 1
 * when both ran. */
static int arrays_run(hk_context_t *ctx, const char *kname, const vspec *vs,
                      const hk_call_opts_t *o, double tol, int via) {
  hk_kernel_t *k = find(ctx, kname);
  if (!k) return 0;
  const hk_kernel_info_t *in = hk_kernel_info(k);
  int np = in->nparams;
  unsigned char *cpu[8] = {0}, *gpu_back[8] = {0};
  void *dev[8] = {0};
  int64_t nbase[8] = {0}; /* each base's elements */
  hk_array_t ha[8], da[8];
  int ok = 1;
  for (int i = 0; i < np && ok; i++) {
    hk_dtype_t t = in->params[i].dtype;
    size_t es = hk_dtype_size(t);
    vspec v = vs[i];
    if (in->params[i].role == HK_ROLE_SCALAR) { /* a value on the host */
      cpu[i] = malloc(es);
      arr_fill(t, cpu[i], 1);
      hk_array_init(&ha[i], cpu[i], t, 0, NULL);
      da[i] = ha[i];
      continue;
    }
    if (v.nd < 0) { /* contiguous */
      v.nd = -v.nd - 1;
      v.base = 1;
      for (int d = v.nd - 1; d >= 0; d--) {
        v.st[d] = v.base;
        v.base *= v.shape[d];
      }
      v.off = 0;
    }
    /* the parameter whose base this is, or -1 */
    int j = (via & IN_PLACE) && i == np - 1 ? 0 : -1;
    size_t bytes = (size_t)(j >= 0 ? nbase[j] : v.base) * es;
    if (j < 0) {
      cpu[i] = malloc(bytes + 1);
      gpu_back[i] = malloc(bytes + 1);
      if (in->params[i].role == HK_ROLE_OUT)
        memset(cpu[i], 0x5A, bytes);
      else
        arr_fill(t, cpu[i], v.base);
      CHECK_OK(hk_device_alloc(&dev[i], bytes));
      if (!dev[i]) { ok = 0; break; }
      CHECK_OK(hk_memcpy_to_device(dev[i], cpu[i], bytes, NULL));
      nbase[i] = v.base;
    }
    unsigned char *hb = j >= 0 ? cpu[j] : cpu[i];
    unsigned char *db = j >= 0 ? dev[j] : dev[i];
    hk_array_t a;
    memset(&a, 0, sizeof a);
    a.dtype = t;
    a.ndim = v.nd;
    for (int d = 0; d < v.nd; d++) {
      a.shape[d] = v.shape[d];
      a.strides[d] = v.st[d];
    }
    a.nbytes = bytes;
    ha[i] = da[i] = a;
    ha[i].base = hb;
    ha[i].data = hb + v.off * (int64_t)es;
    da[i].base = db;
    da[i].data = db + v.off * (int64_t)es;
  }
  if (ok) {
    hk_call_opts_t oc = o ? *o : (hk_call_opts_t){0};
    oc.backend = HK_BACKEND_CPU;
    int rc = hk_call_arrays(k, ha, &oc);
    CHECK_MSG(rc == HK_OK, "%s on the CPU: %d (%s)", kname, rc, hk_last_error());
    oc.backend = HK_BACKEND_AUTO;
    if ((via & VIA_MASK) == VIA_ARRAYS) {
      rc = hk_call_arrays(k, da, &oc);
    } else { /* every view of the last one's rank and shape */
      const hk_array_t *last = &da[np - 1];
      const int64_t *st[8];
      void *ptrs[8];
      size_t n = 1;
      for (int d = 0; d < last->ndim; d++) n *= (size_t)last->shape[d];
      for (int i = 0; i < np; i++) {
        int scalar = in->params[i].role == HK_ROLE_SCALAR;
        st[i] = scalar ? NULL : da[i].strides;
        ptrs[i] = da[i].data;
      }
      rc = hk__call_nd_cuda(k, last->ndim, last->shape, st, n, ptrs,
                            (via & VIA_MASK) == VIA_ND_WIDE ? ND_WIDE : 0);
    }
    CHECK_MSG(rc == HK_OK, "%s on the GPU (via %d): %d (%s)", kname, via, rc,
              hk_last_error());
    ok = rc == HK_OK;
  }
  for (int i = 0; i < np && ok; i++) {
    hk_dtype_t t = in->params[i].dtype;
    size_t es = hk_dtype_size(t);
    int64_t n = nbase[i];
    if (!dev[i]) continue; /* a scalar, or another parameter's base */
    CHECK_OK(hk_memcpy_to_host(gpu_back[i], dev[i], (size_t)n * es, NULL));
    int64_t bad = 0, first = -1;
    for (int64_t j = 0; j < n; j++) {
      int same = !memcmp(cpu[i] + j * (int64_t)es, gpu_back[i] + j * (int64_t)es, es);
      if (!same && tol > 0 && is_float(t)) {
        double a = get_f(t, cpu[i], (size_t)j), g = get_f(t, gpu_back[i], (size_t)j);
        same = fabs(a - g) <= tol * (1 + fabs(a));
      }
      if (!same && bad++ == 0) first = j;
    }
    CHECK_MSG(bad == 0,
              "%s: parameter %s: %lld of %lld elements of its base differ "
              "between CPU and GPU, first [%lld]: cpu %.9g gpu %.9g",
              kname, in->params[i].name, (long long)bad, (long long)n,
              (long long)first,
              first >= 0 && is_float(t) ? get_f(t, cpu[i], (size_t)first) : 0.0,
              first >= 0 && is_float(t) ? get_f(t, gpu_back[i], (size_t)first) : 0.0);
  }
  for (int i = 0; i < np; i++) {
    free(cpu[i]);
    free(gpu_back[i]);
    if (dev[i]) hk_device_free(dev[i]);
  }
  return ok;
}

static int arrays_both(hk_context_t *ctx, const char *kname, const vspec *vs,
                       const hk_call_opts_t *o, double tol) {
  return arrays_run(ctx, kname, vs, o, tol, VIA_ARRAYS);
}

/* The GPU's strided copies (libhk internals, which the array calls use):
 * declared here, as test_cuda sees only hk.h. */
int hk__cuda_copy_strided(void *dst, const void *src, size_t es, int nd,
                          const int64_t *shape, const int64_t *st,
                          int scatter, size_t n);

/* Gathers view v (into a base of v->base elements of es bytes) into a
 * run with hk__cuda_copy_strided, and scatters another run into it,
 * against the same copies on the CPU: bit for bit, the whole base after
 * the scatter (elements outside the view must stay). gather_only: a view
 * whose elements repeat (a broadcast), which a scatter would race on.
 * Returns 1 when it ran. */
static int copy_both(const char *what, size_t es, const vspec *v,
                     int gather_only) {
  int64_t n = 1;
  for (int d = 0; d < v->nd; d++) n *= v->shape[d];
  size_t bbytes = (size_t)v->base * es, rbytes = (size_t)n * es;
  unsigned char *base = malloc(bbytes), *want = malloc(bbytes);
  unsigned char *run = malloc(rbytes + 1), *ref = malloc(rbytes + 1);
  unsigned char *back = malloc(bbytes > rbytes ? bbytes : rbytes + 1);
  int64_t *offs = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
  void *dbase = NULL, *drun = NULL;
  int ok = base && want && run && ref && back && offs;
  for (size_t j = 0; ok && j < bbytes; j++) base[j] = (unsigned char)arr_rand();
  /* the view's offsets in C order, and the CPU's gather */
  int64_t idx[HK_MAX_DIMS] = {0};
  for (int64_t k = 0; ok && k < n; k++) {
    int64_t off = v->off;
    for (int d = 0; d < v->nd; d++) off += idx[d] * v->st[d];
    ok &= off >= 0 && off < v->base;
    offs[k] = off;
    if (ok) memcpy(ref + k * (int64_t)es, base + off * (int64_t)es, es);
    for (int d = v->nd - 1; d >= 0; d--) {
      if (++idx[d] < v->shape[d]) break;
      idx[d] = 0;
    }
  }
  CHECK_MSG(ok, "copy %s: the view leaves its base", what);
  ok = ok && hk_device_alloc(&dbase, bbytes) == HK_OK &&
       hk_device_alloc(&drun, rbytes ? rbytes : 1) == HK_OK &&
       hk_memcpy_to_device(dbase, base, bbytes, NULL) == HK_OK;
  CHECK_MSG(ok, "copy %s: buffers: %s", what, hk_last_error());
  unsigned char *dview = (unsigned char *)dbase + v->off * (int64_t)es;
  if (ok) { /* gather */
    int rc = hk__cuda_copy_strided(drun, dview, es, v->nd, v->shape, v->st,
                                   0, (size_t)n);
    CHECK_MSG(rc == HK_OK, "copy %s (%zu-byte): gather: %d (%s)", what, es,
              rc, hk_last_error());
    CHECK_OK(hk_stream_sync(NULL));
    CHECK_OK(hk_memcpy_to_host(back, drun, rbytes, NULL));
    int64_t bad = 0, first = -1;
    for (int64_t k = 0; k < n; k++)
      if (memcmp(back + k * (int64_t)es, ref + k * (int64_t)es, es) &&
          bad++ == 0)
        first = k;
    CHECK_MSG(bad == 0, "copy %s (%zu-byte): gather: %lld of %lld elements "
              "wrong, first run[%lld]", what, es, (long long)bad,
              (long long)n, (long long)first);
  }
  if (ok && !gather_only) { /* scatter another run */
    for (size_t j = 0; j < rbytes; j++) run[j] = (unsigned char)arr_rand();
    memcpy(want, base, bbytes);
    for (int64_t k = 0; k < n; k++)
      memcpy(want + offs[k] * (int64_t)es, run + k * (int64_t)es, es);
    CHECK_OK(hk_memcpy_to_device(drun, run, rbytes, NULL));
    int rc = hk__cuda_copy_strided(dview, drun, es, v->nd, v->shape, v->st,
                                   1, (size_t)n);
    CHECK_MSG(rc == HK_OK, "copy %s (%zu-byte): scatter: %d (%s)", what, es,
              rc, hk_last_error());
    CHECK_OK(hk_stream_sync(NULL));
    CHECK_OK(hk_memcpy_to_host(back, dbase, bbytes, NULL));
    int64_t bad = 0, first = -1;
    for (int64_t j = 0; j < v->base; j++)
      if (memcmp(back + j * (int64_t)es, want + j * (int64_t)es, es) &&
          bad++ == 0)
        first = j;
    CHECK_MSG(bad == 0, "copy %s (%zu-byte): scatter: %lld of %lld base "
              "elements wrong, first [%lld]", what, es, (long long)bad,
              (long long)v->base, (long long)first);
  }
  if (dbase) hk_device_free(dbase);
  if (drun) hk_device_free(drun);
  free(base);
  free(want);
  free(run);
  free(ref);
  free(back);
  free(offs);
  return ok;
}

/* x.T for x of shape (c, r), contiguous: shape (r, c), strides (1, r). */
#define TRANSPOSED(r, c) r * c, 0, 2, {r, c}, {1, r}

/* The strided copies on their own, every element size both ways: views
 * that take the tiled kernel (transposes of sizes that are not multiples
 * of its 32 x 32 tiles, reversed, batched), views that collapse to a
 * contiguous run or fewer axes, and views that take the one-thread-per-
 * element kernel (thin transposes, a 4-D permutation, strides of 2). */
static void test_copies_gpu(void) {
  static const struct {
    const char *what;
    vspec v;
    int gather_only;
  } cases[] = {
      {"33x65 transposed", {TRANSPOSED(33, 65)}, 0},
      {"300x517 transposed", {TRANSPOSED(300, 517)}, 0},
      {"17x40 transposed", {TRANSPOSED(17, 40)}, 0},
      {"32x64 transposed", {TRANSPOSED(32, 64)}, 0},
      {"1x1000 transposed", {TRANSPOSED(1, 1000)}, 0},
      {"1000x1 transposed", {TRANSPOSED(1000, 1)}, 0},
      {"5x300 transposed (thin)", {TRANSPOSED(5, 300)}, 0},
      {"300x5 transposed (thin)", {TRANSPOSED(300, 5)}, 0},
      /* x[::-1, ::-1].T and x[::-1].T */
      {"33x65 transposed, reversed",
       {33 * 65, 33 * 65 - 1, 2, {33, 65}, {-1, -33}}, 0},
      {"40x50 transposed, rows reversed",
       {40 * 50, 40 * 49, 2, {40, 50}, {1, -40}}, 0},
      /* rows 5..24 of (3, 40, 30): collapses to (3, 600) */
      {"a slice of rows", {3 * 40 * 30, 5 * 30, 3, {3, 20, 30}, {1200, 30, 1}},
       0},
      /* (1, 45, 1, 70) with strides (., 1, ., 45): a 45x70 transpose */
      {"transposed, length-1 axes",
       {45 * 70, 0, 4, {1, 45, 1, 70}, {999, 1, 7, 45}}, 0},
      {"4 transposes", {4 * 33 * 65, 0, 3, {4, 33, 65}, {33 * 65, 1, 33}}, 0},
      /* 5 of (20, 100) strides (1, 21), the batch reversed, 2200 apart */
      {"5 transposes, padded, reversed",
       {5 * 2200, 4 * 2200, 3, {5, 20, 100}, {-2200, 1, 21}}, 0},
      {"a transpose broadcast 3 times",
       {33 * 65, 0, 3, {3, 33, 65}, {0, 1, 33}}, 1},
      {"a 4-D permutation",
       {2 * 3 * 20 * 40, 0, 4, {20, 2, 40, 3}, {1, 2400, 20, 800}}, 0},
      {"every other element", {2 * 40 * 140, 0, 2, {40, 70}, {280, 2}}, 0},
      {"1-D reversed", {100, 99, 1, {100}, {-1}}, 0},
      {"one element", {5, 3, 0, {0}, {0}}, 0},
  };
  static const size_t sizes_es[] = {1, 2, 4, 8};
  int ran = 0;
  for (size_t c = 0; c < COUNT(cases); c++)
    for (size_t e = 0; e < COUNT(sizes_es); e++)
      ran += copy_both(cases[c].what, sizes_es[e], &cases[c].v,
                       cases[c].gather_only);
  printf("strided copies on the GPU: %d views x sizes compared with the "
         "CPU's\n", ran);
  CHECK_INT_EQ(ran, (int)(COUNT(cases) * COUNT(sizes_es)));
}

#define C1(a) -2, {a}, {0}
#define C2(a, b) -3, {a, b}, {0}
#define C3(a, b, c) -4, {a, b, c}, {0}
#define C4(a, b, c, d) -5, {a, b, c, d}, {0}

static void test_arrays_gpu(hk_context_t *ctx) {
  int ran = 0;
  /* Elementwise calls run the kernel's N-D entry over the arrays as they
   * are (the shape collapsed first), no copies: each case below is one
   * of its layouts. */
  /* broadcast: (6, 5) + (5,) */
  ran += arrays_both(ctx, "add_f32",
                     (vspec[]){{0, 0, C2(6, 5)}, {0, 0, C1(5)}, {0, 0, C2(6, 5)}},
                     NULL, 0);
  /* a transposed input and out, a (6, 1) column broadcast */
  ran += arrays_both(ctx, "add_f32",
                     (vspec[]){{30, 0, 2, {6, 5}, {1, 6}},
                               {0, 0, C2(6, 1)},
                               {30, 0, 2, {6, 5}, {1, 6}}},
                     NULL, 0);
  /* negative strides, every other element; in place is another call */
  ran += arrays_both(ctx, "add_f64",
                     (vspec[]){{13, 12, 1, {7}, {-2}},
                               {0, 0, C1(7)},
                               {7, 6, 1, {7}, {-1}}},
                     NULL, 0);
  /* (4, 1, 3) * (1, 5, 1): a 3-D broadcast */
  ran += arrays_both(ctx, "mul_f64",
                     (vspec[]){{0, 0, C3(4, 1, 3)}, {0, 0, C3(1, 5, 1)},
                               {0, 0, C3(4, 5, 3)}},
                     NULL, 0);
  /* 2-byte elements: a bf16 row broadcast into a sliced out */
  ran += arrays_both(ctx, "add_bf16",
                     (vspec[]){{0, 0, C2(33, 70)}, {0, 0, C1(70)},
                               {33 * 140, 0, 2, {33, 70}, {140, 1}}},
                     NULL, 0);
  /* (N, 1) - (1, M) */
  ran += arrays_both(ctx, "sub_f32",
                     (vspec[]){{0, 0, C2(37, 1)}, {0, 0, C2(1, 41)},
                               {0, 0, C2(37, 41)}},
                     NULL, 0);
  /* a (1,) operand: one value for every element */
  ran += arrays_both(ctx, "mul_f32",
                     (vspec[]){{0, 0, C2(33, 17)}, {0, 0, C1(1)},
                               {0, 0, C2(33, 17)}},
                     NULL, 0);
  /* an out view of every other column of a bigger array: the columns
   * between stay as they were (0x5A) */
  ran += arrays_both(ctx, "add_f32",
                     (vspec[]){{0, 0, C2(40, 33)}, {0, 0, C1(33)},
                               {40 * 66, 1, 2, {40, 33}, {66, 2}}},
                     NULL, 0);
  /* in place: out is x, contiguous and transposed */
  ran += arrays_run(ctx, "add_f32",
                    (vspec[]){{0, 0, C2(40, 33)}, {0, 0, C1(33)},
                              {0, 0, C2(40, 33)}},
                    NULL, 0, VIA_ARRAYS | IN_PLACE);
  ran += arrays_run(ctx, "add_f32",
                    (vspec[]){{30, 0, 2, {6, 5}, {1, 6}}, {0, 0, C1(5)},
                              {30, 0, 2, {6, 5}, {1, 6}}},
                    NULL, 0, VIA_ARRAYS | IN_PLACE);
  /* a slice x[::2, 1::3] minus rows reversed (f64) */
  ran += arrays_both(ctx, "sub_f64",
                     (vspec[]){{600, 1, 2, {10, 10}, {60, 3}},
                               {100, 90, 2, {10, 10}, {-10, 1}},
                               {0, 0, C2(10, 10)}},
                     NULL, 0);
  /* 4 axes that do not merge: x of (5, 4, 3, 2) seen transposed */
  ran += arrays_both(ctx, "mul_f32",
                     (vspec[]){{120, 0, 4, {2, 3, 4, 5}, {1, 2, 6, 24}},
                               {0, 0, C4(2, 3, 4, 5)},
                               {0, 0, C4(2, 3, 4, 5)}},
                     NULL, 0);
  /* f16 and bool, 4 buffers: a bool column, a transposed f16, an f16
   * row, into every other column */
  ran += arrays_both(ctx, "where_f16",
                     (vspec[]){{0, 0, C2(37, 1)},
                               {37 * 29, 0, 2, {37, 29}, {1, 37}},
                               {0, 0, C1(29)},
                               {37 * 58, 1, 2, {37, 29}, {58, 2}}},
                     NULL, 0);
  /* bools, reversed, against one, into every other byte */
  ran += arrays_both(ctx, "logical_xor",
                     (vspec[]){{50, 49, 1, {50}, {-1}}, {0, 0, C1(1)},
                               {100, 0, 1, {50}, {2}}},
                     NULL, 0);
  /* axes of length 1 (strides that do not matter) and of length 0 */
  ran += arrays_both(ctx, "add_f32",
                     (vspec[]){{7, 6, 3, {1, 7, 1}, {99, -1, 5}},
                               {0, 0, C1(1)}, {0, 0, C3(1, 7, 1)}},
                     NULL, 0);
  ran += arrays_both(ctx, "add_f32",
                     (vspec[]){{10, 0, 2, {0, 5}, {5, 1}}, {0, 0, C1(5)},
                               {10, 0, 2, {0, 5}, {5, 1}}},
                     NULL, 0);
  /* more rows than a grid's y extent (65535): a row broadcast; an f16
   * column broadcast into a transposed out */
  ran += arrays_both(ctx, "add_f32",
                     (vspec[]){{0, 0, C2(70000, 3)}, {0, 0, C1(3)},
                               {0, 0, C2(70000, 3)}},
                     NULL, 0);
  ran += arrays_both(ctx, "add_f16",
                     (vspec[]){{0, 0, C2(70001, 1)}, {0, 0, C1(5)},
                               {70001 * 5, 0, 2, {70001, 5}, {1, 70001}}},
                     NULL, 0);
  /* scalars, and the body's i: the C-order index over the shape */
  ran += arrays_both(ctx, "arange_i32",
                     (vspec[]){{0}, {0}, {84, 0, 2, {7, 12}, {1, 7}}}, NULL,
                     0);
  /* the N-D entry called directly, with 32-bit and with 64-bit index math
   * (the path of n >= 2^31 or offsets beyond an int, which a cheap call
   * through hk_call_arrays never takes): broadcast by strides of 0 */
  for (int via = VIA_ND; via <= VIA_ND_WIDE; via++) {
    ran += arrays_run(ctx, "add_f32",
                      (vspec[]){{0, 0, C2(70, 33)},
                                {33, 0, 2, {70, 33}, {0, 1}},
                                {70 * 66, 1, 2, {70, 33}, {66, 2}}},
                      NULL, 0, via);
    ran += arrays_run(ctx, "mul_f64",
                      (vspec[]){{0, 0, C3(4, 5, 3)},
                                {5, 0, 3, {4, 5, 3}, {0, 1, 0}},
                                {60, 59, 3, {4, 5, 3}, {-15, -3, -1}}},
                      NULL, 0, via);
    ran += arrays_run(ctx, "where_bf16",
                      (vspec[]){{37, 0, 2, {37, 29}, {1, 0}},
                                {37 * 29, 0, 2, {37, 29}, {1, 37}},
                                {29, 0, 2, {37, 29}, {0, 1}},
                                {37 * 58, 1, 2, {37, 29}, {58, 2}}},
                      NULL, 0, via);
    ran += arrays_run(ctx, "arange_i64",
                      (vspec[]){{0}, {0}, {100, 99, 1, {100}, {-1}}}, NULL,
                      0, via);
  }

  /* axis reductions */
  hk_call_opts_t ax0 = {.axes = (int[]){0}, .naxes = 1};
  hk_call_opts_t axl = {.axes = (int[]){-1}, .naxes = 1};
  hk_call_opts_t ax02k = {.axes = (int[]){0, 2}, .naxes = 2, .keepdims = 1};
  ran += arrays_both(ctx, "sum_f32",
                     (vspec[]){{0, 0, C2(300, 37)}, {0, 0, C1(37)}}, &ax0,
                     1e-5);
  ran += arrays_both(ctx, "sum_f32",
                     (vspec[]){{300 * 37, 0, 2, {37, 300}, {1, 37}},
                               {0, 0, C1(37)}},
                     &axl, 1e-5);
  ran += arrays_both(ctx, "sum_f64",
                     (vspec[]){{0, 0, C3(4, 5, 6)}, {0, 0, C3(1, 5, 1)}},
                     &ax02k, 1e-12);
  ran += arrays_both(ctx, "argmax_f32",
                     (vspec[]){{0, 0, C2(50, 1000)}, {0, 0, C1(50)}}, &axl, 0);
  ran += arrays_both(ctx, "argmax_f64",
                     (vspec[]){{0, 0, C2(1000, 7)}, {0, 0, C1(7)}}, &ax0, 0);
  ran += arrays_both(ctx, "var_f64",
                     (vspec[]){{0, 0, C2(1000, 3)}, {0, 0, C1(3)}}, &ax0,
                     1e-10);
  /* rows longer than one part block (several per row), a strided out */
  ran += arrays_both(ctx, "logsumexp_f32",
                     (vspec[]){{0, 0, C2(64, 40000)}, {128, 1, 1, {64}, {2}}},
                     &axl, 1e-5);
  /* more rows than one launch's grid takes */
  ran += arrays_both(ctx, "sum_f32",
                     (vspec[]){{0, 0, C2(70000, 3)}, {0, 0, C1(70000)}}, &axl,
                     1e-5);
  /* short rows, many: a warp per row (more in test_reduce_rows_gpu) */
  ran += arrays_both(ctx, "argmax_f32",
                     (vspec[]){{0, 0, C2(300, 64)}, {0, 0, C1(300)}}, &axl, 0);
  ran += arrays_both(ctx, "var_f64",
                     (vspec[]){{0, 0, C2(3, 1000)}, {0, 0, C1(1000)}}, &ax0,
                     1e-10);
  /* 1-byte elements, gathered: an i8 sum into i64 over a transposed view */
  ran += arrays_both(ctx, "sum_i8",
                     (vspec[]){{40 * 9, 0, 2, {9, 40}, {1, 9}}, {0, 0, C1(9)}},
                     &axl, 0);
  /* empty: nothing reduced (the identity), and no position */
  ran += arrays_both(ctx, "sum_f32",
                     (vspec[]){{0, 0, C2(3, 0)}, {0, 0, C1(3)}}, &axl, 0);
  ran += arrays_both(ctx, "sum_f32",
                     (vspec[]){{0, 0, C2(0, 3)}, {0, 0, C1(0)}}, &axl, 0);
  /* a rows kernel over a transposed view, into a transposed out */
  ran += arrays_both(ctx, "softmax_f32",
                     (vspec[]){{50 * 40, 0, 2, {40, 50}, {1, 40}},
                               {50 * 40, 0, 2, {40, 50}, {1, 40}}},
                     NULL, 1e-6);
  /* the tiled copy through the array calls: reductions of transposed
   * views of every element size (exact ones, so the copy shows bit for
   * bit), a reversed one, a slice of rows (a 3-D view that collapses), a
   * rows kernel and an elementwise one into transposed outs */
  ran += arrays_both(ctx, "max_f32",
                     (vspec[]){{TRANSPOSED(300, 517)}, {0, 0, C1(300)}},
                     &axl, 0);
  ran += arrays_both(ctx, "max_bf16",
                     (vspec[]){{TRANSPOSED(33, 65)}, {0, 0, C1(33)}}, &axl,
                     0);
  ran += arrays_both(ctx, "sum_i8",
                     (vspec[]){{TRANSPOSED(65, 33)}, {0, 0, C1(65)}}, &axl,
                     0);
  ran += arrays_both(ctx, "sum_i64",
                     (vspec[]){{TRANSPOSED(33, 65)}, {0, 0, C1(33)}}, &axl,
                     0);
  ran += arrays_both(ctx, "max_f64",
                     (vspec[]){{33 * 65, 33 * 65 - 1, 2, {33, 65}, {-1, -33}},
                               {0, 0, C1(33)}},
                     &axl, 0);
  ran += arrays_both(ctx, "max_f32",
                     (vspec[]){{3 * 40 * 30, 5 * 30, 3, {3, 20, 30},
                                {1200, 30, 1}},
                               {0, 0, C2(3, 20)}},
                     &axl, 0);
  ran += arrays_both(ctx, "softmax_f32",
                     (vspec[]){{0, 0, C2(33, 65)}, {TRANSPOSED(33, 65)}}, NULL,
                     1e-6);
  /* rows along another axis than the last (hk_call_opts_t.axes: moved
   * views, staged by the strided copies): softmax over axis 0 of (40, 50);
   * layernorm over axis 1 of (3, 40, 5), its mean (3, 5), its rstd kept as
   * (3, 1, 5) */
  ran += arrays_both(ctx, "softmax_f32",
                     (vspec[]){{0, 0, C2(40, 50)}, {0, 0, C2(40, 50)}}, &ax0,
                     1e-6);
  hk_call_opts_t ax1 = {.axes = (int[]){1}, .naxes = 1};
  ran += arrays_both(ctx, "layernorm_f32",
                     (vspec[]){{0, 0, C3(3, 40, 5)},
                               {0, 0, C1(40)},
                               {0, 0, C1(40)},
                               {0, 0, C3(3, 40, 5)},
                               {0, 0, C2(3, 5)},
                               {0, 0, C3(3, 1, 5)},
                               {0, 0, C1(1)}},
                     &ax1, 1e-5);
  ran += arrays_both(ctx, "add_f32",
                     (vspec[]){{TRANSPOSED(300, 517)},
                               {0, 0, C2(300, 517)},
                               {TRANSPOSED(300, 517)}},
                     NULL, 0);
  /* transposed in arrays are staged through the tiled copy first
   * (gpu_stage_transposed): then every array dense (the flat kernel), a
   * strided out (the N-D entry), a batch of transposes (f64), in place */
  ran += arrays_both(ctx, "add_f32",
                     (vspec[]){{TRANSPOSED(300, 517)},
                               {0, 0, C2(300, 517)},
                               {0, 0, C2(300, 517)}},
                     NULL, 0);
  ran += arrays_both(ctx, "mul_f64",
                     (vspec[]){{0, 0, C2(33, 65)},
                               {TRANSPOSED(33, 65)},
                               {33 * 130, 1, 2, {33, 65}, {130, 2}}},
                     NULL, 0);
  ran += arrays_both(ctx, "sub_f64",
                     (vspec[]){{4 * 33 * 65, 0, 3, {4, 33, 65},
                                {33 * 65, 1, 33}},
                               {0, 0, C3(4, 33, 65)},
                               {0, 0, C3(4, 33, 65)}},
                     NULL, 0);
  ran += arrays_run(ctx, "add_f32",
                    (vspec[]){{TRANSPOSED(64, 100)}, {0, 0, C1(100)},
                              {TRANSPOSED(64, 100)}},
                    NULL, 0, VIA_ARRAYS | IN_PLACE);
  printf("arrays on the GPU: %d calls compared with the CPU's\n", ran);
  CHECK_INT_EQ(ran, 55);

  /* a host array among device ones: refused, naming it */
  hk_kernel_t *k = find(ctx, "add_f32");
  void *d = NULL;
  float h[5] = {0};
  CHECK_OK(hk_device_alloc(&d, 30 * sizeof(float)));
  if (k && d) {
    hk_array_t a[3];
    hk_array_init(&a[0], d, HK_F32, 2, (int64_t[]){6, 5});
    hk_array_init(&a[1], h, HK_F32, 1, (int64_t[]){5});
    hk_array_init(&a[2], d, HK_F32, 2, (int64_t[]){6, 5});
    CHECK_INT_EQ(hk_call_arrays(k, a, NULL), HK_EINVAL);
    CHECK_CONTAINS(hk_last_error(), "'y'");
    show("host array in a GPU broadcast", hk_last_error());
  }
  hk_device_free(d);
}

/* ---- 1c. Axis reductions on the GPU, each way their rows run ------------- */

/* The core's axis reduction on the GPU (libhk internals, which
 * hk_call_arrays uses), and how its rows run: by their shape, a warp per
 * row, or part and merge blocks (core/registry.h's HK_ROWS_*). */
enum { ROWS_BY_SHAPE, ROWS_BY_WARP, ROWS_BY_BLOCKS, ROWS_WAYS };
int hk__call_reduce_rows_cuda(const hk_kernel_t *k, size_t rows, size_t m,
                              void *const *args, int how);

/* Reduction kname (in and result parameters only) over rows rows of m
 * elements: on the CPU by hk_call_arrays over axis -1, then on the GPU
 * each way its rows can run. With tol 0 the inputs (and inout results)
 * are small integers, whose sums are exact in any order, and every result
 * must equal the CPU's exactly; else within tol * (1 + |cpu|). The way by
 * shape must give the bits of one of the other two; in buffers must not
 * change, nor a guard zone after every buffer. Returns the ways run (0
 * when kname is absent). */
static int rows_ways(hk_context_t *ctx, const char *kname, size_t rows,
                     size_t m, double tol) {
  hk_kernel_t *k = find(ctx, kname);
  if (!k) return 0;
  const hk_kernel_info_t *in = hk_kernel_info(k);
  enum { NP = 4 };
  int np = in->nparams, ok = np <= NP, ran = 0;
  CHECK_MSG(ok, "%s: %d parameters", kname, np);
  unsigned char *start[NP] = {0}, *cpu[NP] = {0};
  unsigned char *got[ROWS_WAYS][NP] = {{0}};
  void *dev[NP] = {0};
  size_t count[NP] = {0};
  hk_array_t ha[NP];
  int64_t shape_in[2] = {(int64_t)rows, (int64_t)m};
  int64_t shape_res[1] = {(int64_t)rows};
  for (int i = 0; i < np && ok; i++) {
    const hk_param_info_t *p = &in->params[i];
    size_t es = hk_dtype_size(p->dtype);
    ok = p->role != HK_ROLE_SCALAR;
    CHECK_MSG(ok, "%s: a scalar parameter", kname);
    if (!ok) break;
    count[i] = p->role == HK_ROLE_IN ? rows * m : rows;
    size_t bytes = (count[i] + GUARD) * es;
    start[i] = malloc(bytes);
    cpu[i] = malloc(bytes);
    for (int w = 0; w < ROWS_WAYS; w++) got[w][i] = malloc(bytes);
    memset(start[i], 0x5A, bytes);
    if (p->role != HK_ROLE_OUT && tol == 0)
      for (size_t j = 0; j < count[i]; j++)
        put_val(p->dtype, start[i] + j * es, (double)(arr_rand() % 17) - 8);
    else if (p->role != HK_ROLE_OUT)
      arr_fill(p->dtype, start[i], (int64_t)count[i]);
    memcpy(cpu[i], start[i], bytes);
    CHECK_OK(hk_device_alloc(&dev[i], bytes));
    ok = ok && dev[i];
    hk_array_init(&ha[i], cpu[i], p->dtype, p->role == HK_ROLE_IN ? 2 : 1,
                  p->role == HK_ROLE_IN ? shape_in : shape_res);
  }
  if (ok) {
    hk_call_opts_t o = {.axes = (int[]){-1}, .naxes = 1,
                        .backend = HK_BACKEND_CPU};
    int rc = hk_call_arrays(k, ha, &o);
    CHECK_MSG(rc == HK_OK, "%s (%zu, %zu) on the CPU: %d (%s)", kname, rows,
              m, rc, hk_last_error());
    ok = rc == HK_OK;
  }
  static const char *const way_name[] = {"by shape", "a warp per row",
                                         "blocks per row"};
  for (int w = 0; w < ROWS_WAYS && ok; w++) {
    for (int i = 0; i < np; i++) {
      size_t bytes = (count[i] + GUARD) * hk_dtype_size(in->params[i].dtype);
      CHECK_OK(hk_memcpy_to_device(dev[i], start[i], bytes, NULL));
    }
    int rc = hk__call_reduce_rows_cuda(k, rows, m, dev, w);
    CHECK_MSG(rc == HK_OK, "%s (%zu, %zu) %s on the GPU: %d (%s)", kname,
              rows, m, way_name[w], rc, hk_last_error());
    if (rc) continue;
    ran++;
    for (int i = 0; i < np; i++) {
      const hk_param_info_t *p = &in->params[i];
      hk_dtype_t t = p->dtype;
      size_t es = hk_dtype_size(t), n = count[i];
      CHECK_OK(hk_memcpy_to_host(got[w][i], dev[i], (n + GUARD) * es, NULL));
      CHECK_MSG(!memcmp(got[w][i] + n * es, start[i] + n * es, GUARD * es),
                "%s (%zu, %zu) %s: the guard after %s was written", kname,
                rows, m, way_name[w], p->name);
      if (p->role == HK_ROLE_IN) {
        CHECK_MSG(!memcmp(got[w][i], start[i], n * es),
                  "%s (%zu, %zu) %s: in buffer %s changed", kname, rows, m,
                  way_name[w], p->name);
        continue;
      }
      size_t bad = 0, first = 0;
      for (size_t j = 0; j < n; j++) {
        int same = !memcmp(got[w][i] + j * es, cpu[i] + j * es, es);
        if (!same && tol > 0 && is_float(t)) {
          double a = get_f(t, cpu[i], j), g = get_f(t, got[w][i], j);
          same = fabs(a - g) <= tol * (1 + fabs(a));
        }
        if (!same && bad++ == 0) first = j;
      }
      CHECK_MSG(bad == 0,
                "%s (%zu, %zu) %s: %zu of %zu rows differ from the CPU's in "
                "%s, first [%zu]: cpu %.9g gpu %.9g",
                kname, rows, m, way_name[w], bad, n, p->name, first,
                value(t, cpu[i], first), value(t, got[w][i], first));
    }
  }
  for (int i = 0; i < np && ran == ROWS_WAYS; i++) {
    size_t n = count[i] * hk_dtype_size(in->params[i].dtype);
    if (in->params[i].role != HK_ROLE_IN)
      CHECK_MSG(!memcmp(got[ROWS_BY_SHAPE][i], got[ROWS_BY_WARP][i], n) ||
                    !memcmp(got[ROWS_BY_SHAPE][i], got[ROWS_BY_BLOCKS][i], n),
                "%s (%zu, %zu): %s by shape is neither a warp per row's nor "
                "blocks per row's",
                kname, rows, m, in->params[i].name);
  }
  for (int i = 0; i < np; i++) {
    free(start[i]);
    free(cpu[i]);
    for (int w = 0; w < ROWS_WAYS; w++) free(got[w][i]);
    if (dev[i]) hk_device_free(dev[i]);
  }
  return ran;
}

/* Axis reductions of the stdlib each way their rows run: short rows (1,
 * 31, 33, 64, 1000; one warp's lane takes none, one, two or many
 * elements, four at a time or not), more rows than one part launch takes
 * (65535), empty rows, rows on either side of the longest a warp takes
 * (4096); a sum, argmax (a struct accumulator, ties everywhere in small
 * integers), var (a struct, a finalize), mean (a finalize with n; f16
 * stores), minmax (two results), an i8 sum into i64. */
static void test_reduce_rows_gpu(hk_context_t *ctx) {
  static const size_t shapes[][2] = {{5, 1},     {40, 31},  {7, 33},
                                     {300, 64},  {20, 64},  {1000, 1000},
                                     {3, 1000},  {70000, 3}, {4, 0},
                                     {33, 4096}, {2, 4097}, {66000, 1},
                                     {3, 16385}, {2, 70001}};
  int ran = 0, want = 0;
  for (size_t s = 0; s < COUNT(shapes); s++) {
    size_t rows = shapes[s][0], m = shapes[s][1];
    ran += rows_ways(ctx, "sum_f32", rows, m, 0);
    ran += rows_ways(ctx, "argmax_f32", rows, m, 0);
    want += 2 * ROWS_WAYS;
  }
  static const size_t few[][2] = {{40, 31}, {300, 64}, {7, 1000}, {70000, 3}};
  for (size_t s = 0; s < COUNT(few); s++) {
    size_t rows = few[s][0], m = few[s][1];
    ran += rows_ways(ctx, "var_f64", rows, m, 1e-10);
    ran += rows_ways(ctx, "var_f32", rows, m, 1e-5);
    ran += rows_ways(ctx, "mean_f16", rows, m, 0);
    ran += rows_ways(ctx, "minmax_f32", rows, m, 0);
    ran += rows_ways(ctx, "sum_i8", rows, m, 0);
    want += 5 * ROWS_WAYS;
  }
  printf("axis reductions on the GPU: %d (kernel, shape, way) compared with "
         "the CPU's\n",
         ran);
  CHECK_INT_EQ(ran, want);
}

/* A row's sum as the warp-per-row kernel computes it (codegen/emit_cuda.c,
 * emit_rows_warp_kernel): lane l adds elements l + 32 t into accumulator
 * t % 4, four a step while a whole step fits and then up to three more,
 * combines them as (a0 + a1) + (a2 + a3), and the 32 lane values go
 * through the tree that gives lane l < w lane l + w's value at w = 16, 8,
 * 4, 2, 1. T float or double, by es. */
#define WROW_SUM(T)                                                          \
  static T wrow_sum_##T(const T *x, size_t m) {                              \
    T v[32];                                                                 \
    for (size_t l = 0; l < 32; l++) {                                        \
      T a0 = 0, a1 = 0, a2 = 0, a3 = 0;                                      \
      size_t i = l;                                                          \
      for (; i + 96 < m; i += 128) {                                         \
        a0 += x[i];                                                          \
        a1 += x[i + 32];                                                     \
        a2 += x[i + 64];                                                     \
        a3 += x[i + 96];                                                     \
      }                                                                      \
      if (i < m) a0 += x[i];                                                 \
      if (i + 32 < m) a1 += x[i + 32];                                       \
      if (i + 64 < m) a2 += x[i + 64];                                       \
      v[l] = (a0 + a1) + (a2 + a3);                                          \
    }                                                                        \
    for (size_t w = 16; w > 0; w >>= 1)                                      \
      for (size_t l = 0; l < w; l++) v[l] = v[l] + v[l + w];                 \
    return v[0];                                                             \
  }
WROW_SUM(float)
WROW_SUM(double)

/* The warp-per-row sums of random floats (where order shows in the bits)
 * against wrow_sum: the tree is fixed by the row's length, whichever warp
 * takes a row, alone or with a second one (more rows than the grid's
 * warps), by shuffles or shared memory. */
static void test_wrow_tree_gpu(hk_context_t *ctx) {
  static const size_t shapes[][2] = {{300, 64}, {40, 31},   {7, 33},
                                     {33, 4096}, {20000, 100}, {70000, 3},
                                     {17000, 129}};
  int ran = 0;
  for (int f64 = 0; f64 < 2; f64++) {
    hk_kernel_t *k = find(ctx, f64 ? "sum_f64" : "sum_f32");
    if (!k) continue;
    const size_t es = f64 ? 8 : 4;
    for (size_t s = 0; s < COUNT(shapes); s++) {
      const size_t rows = shapes[s][0], m = shapes[s][1];
      unsigned char *x = malloc(rows * m * es), *got = malloc(rows * es);
      void *dev[2] = {NULL, NULL};
      if (!x || !got) break;
      for (size_t j = 0; j < rows * m; j++) {
        /* values over many binades, both signs: sums round at every step */
        double v = ((double)(arr_rand() % 2000001) - 1e6) *
                   ldexp(1.0, (int)(arr_rand() % 40) - 30);
        if (f64)
          ((double *)x)[j] = v;
        else
          ((float *)x)[j] = (float)v;
      }
      CHECK_OK(hk_device_alloc(&dev[0], rows * m * es));
      CHECK_OK(hk_device_alloc(&dev[1], rows * es));
      int rc = HK_EINVAL;
      if (dev[0] && dev[1]) {
        CHECK_OK(hk_memcpy_to_device(dev[0], x, rows * m * es, NULL));
        rc = hk__call_reduce_rows_cuda(k, rows, m, dev, ROWS_BY_WARP);
        CHECK_MSG(rc == HK_OK, "sum (%zu, %zu) a warp per row: %d (%s)", rows,
                  m, rc, hk_last_error());
      }
      if (rc == HK_OK) {
        CHECK_OK(hk_memcpy_to_host(got, dev[1], rows * es, NULL));
        size_t bad = 0, first = 0;
        for (size_t r = 0; r < rows; r++) {
          int same;
          if (f64) {
            double w = wrow_sum_double((const double *)x + r * m, m);
            same = !memcmp(&w, got + r * es, es);
          } else {
            float w = wrow_sum_float((const float *)x + r * m, m);
            same = !memcmp(&w, got + r * es, es);
          }
          if (!same && bad++ == 0) first = r;
        }
        CHECK_MSG(bad == 0,
                  "sum_%s (%zu, %zu) a warp per row: %zu rows differ from "
                  "the warp tree's bits, first %zu",
                  f64 ? "f64" : "f32", rows, m, bad, first);
        ran++;
      }
      hk_device_free(dev[0]);
      hk_device_free(dev[1]);
      free(x);
      free(got);
    }
  }
  printf("warp-per-row sums: %d shapes equal the warp tree's bits\n", ran);
  CHECK_INT_EQ(ran, 2 * (int)COUNT(shapes));
}

static void test_stdlib(void) {
  hk_context_t *ctx = mkctx(NULL, NULL, 0, 0);
  if (!ctx) return;
  static klist_t l;
  memset(&l, 0, sizeof l);
  l.origin = "stdlib";
  hk_kernel_foreach(ctx, collect, &l);
  CHECK(l.n > 0);
  static const char *const must[] = {"add_f32",     "add_i64",  "axpy_f64",
                                     "sum_f32",     "norm2_f64", "softmax_f32",
                                     "log_softmax_f64", "arange_i32", NULL};
  for (const char *const *m = must; *m; m++) {
    hk_kernel_t *k = find(ctx, *m);
    if (k) CHECK_MSG(hk_kernel_info(k)->targets & HK_TARGET_CUDA,
                     "%s has no cuda target", *m);
  }
  int ran = run_all(&l);
  printf("stdlib: %d kernels with the cuda target, %zu sizes each\n", ran,
         COUNT(sizes));
  CHECK(ran > 0);

  /* where hk_call runs, and the wrong side */
  hk_kernel_t *k = find(ctx, "add_f32");
  if (k) {
    enum { N = 1000 };
    float *hx = malloc(N * sizeof(float));
    void *dx = NULL, *dy = NULL, *dout = NULL;
    for (int i = 0; i < N; i++) hx[i] = (float)i;
    CHECK_OK(hk_device_alloc(&dx, N * sizeof(float)));
    CHECK_OK(hk_device_alloc(&dy, N * sizeof(float)));
    CHECK_OK(hk_device_alloc(&dout, N * sizeof(float)));
    if (dx && dy && dout) {
      void *mixed[] = {dx, hx, dout};
      CHECK_INT_EQ(hk_call(k, N, mixed), HK_EINVAL);
      show("mixed buffers", hk_last_error());
      CHECK_INT_EQ(hk_call_on(k, HK_BACKEND_AUTO, N, mixed), HK_EINVAL);
      void *hosts[] = {hx, hx, hx};
      CHECK_INT_EQ(hk_call_on(k, HK_BACKEND_CUDA, N, hosts), HK_EINVAL);
      show("host buffers on cuda", hk_last_error());
      void *devs[] = {dx, dy, dout};
      CHECK_INT_EQ(hk_call_on(k, HK_BACKEND_CPU, N, devs), HK_EINVAL);
      show("device buffers on cpu", hk_last_error());
      CHECK_INT_EQ(hk_call_async(k, NULL, N, hosts), HK_EINVAL);
      /* arrays in device memory: contiguous, one shape: on the GPU; a
       * strided or broadcast call is refused there (not yet supported) */
      CHECK_OK(hk_memcpy_to_device(dx, hx, N * sizeof(float), NULL));
      CHECK_OK(hk_memcpy_to_device(dy, hx, N * sizeof(float), NULL));
      hk_array_t a[3];
      int64_t sh[] = {10, N / 10};
      hk_array_init(&a[0], dx, HK_F32, 2, sh);
      hk_array_init(&a[1], dy, HK_F32, 2, sh);
      hk_array_init(&a[2], dout, HK_F32, 2, sh);
      CHECK_OK(hk_call_arrays(k, a, NULL));
      float *back = malloc(N * sizeof(float));
      CHECK_OK(hk_memcpy_to_host(back, dout, N * sizeof(float), NULL));
      int bad = 0;
      for (int i = 0; i < N; i++) bad += back[i] != 2.0f * (float)i;
      CHECK_MSG(bad == 0, "hk_call_arrays on the GPU: %d wrong", bad);
      free(back);
    }
    CHECK_OK(hk_device_free(dx));
    CHECK_OK(hk_device_free(dy));
    CHECK_OK(hk_device_free(dout));
    free(hx);
  }
  test_rows_gpu(ctx);
  test_rows_coop(ctx);
  test_copies_gpu();
  test_arrays_gpu(ctx);
  test_reduce_rows_gpu(ctx);
  test_wrow_tree_gpu(ctx);
  hk_context_destroy(ctx);
}

/* ---- 2b. A grid kernel called in place ---------------------------------------
 * A grid kernel without loops has a restrict variant on the GPU, run only
 * when no written buffer overlaps another (call.c): in place (out is x) the
 * plain kernel must run, whose store then load of out[i] reads the store
 * back through x. On the CPU and on the GPU, in place and not, the same. */
static void test_grid_alias(void) {
  static const char json[] =
      "{\"schema_version\": 1, \"kernels\": [{\"name\": \"t_alias\",\n"
      " \"kind\": \"grid\", \"grid\": {\"i\": \"n\"},\n"
      " \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},\n"
      "   {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\"}],\n"
      " \"body\": \"out[i] = 1.0f; out[i] = out[i] + x[i];\"}]}\n";
  hk_context_t *ctx = mkctx(NULL, NULL, 0, 0);
  if (!ctx) return;
  CHECK_OK(hk_load_string(ctx, json, sizeof json - 1, "alias.json"));
  hk_kernel_t *k = find(ctx, "t_alias");
  enum { N = 100003 };
  static float h[N], got[N];
  void *x = NULL, *out = NULL;
  if (k && hk_device_alloc(&x, N * 4) == HK_OK &&
      hk_device_alloc(&out, N * 4) == HK_OK) {
    for (int i = 0; i < N; i++) h[i] = 5.0f;
    /* apart: out = 1 + x */
    CHECK_OK(hk_memcpy_to_device(x, h, sizeof h, NULL));
    void *apart[] = {x, out}, *same[] = {x, x}, *host[] = {h, h};
    CHECK_OK(hk_call_on(k, HK_BACKEND_CUDA, N, apart));
    CHECK_OK(hk_memcpy_to_host(got, out, sizeof got, NULL));
    int bad = 0;
    for (int i = 0; i < N; i++) bad += got[i] != 6.0f;
    CHECK_MSG(bad == 0, "grid t_alias apart on the GPU: %d of %d wrong "
              "(first %g)", bad, N, (double)got[0]);
    /* in place: out[i] = 1, then 1 + 1 */
    CHECK_OK(hk_call_on(k, HK_BACKEND_CUDA, N, same));
    CHECK_OK(hk_memcpy_to_host(got, x, sizeof got, NULL));
    bad = 0;
    for (int i = 0; i < N; i++) bad += got[i] != 2.0f;
    CHECK_MSG(bad == 0, "grid t_alias in place on the GPU: %d of %d wrong "
              "(first %g: the restrict variant ran?)", bad, N,
              (double)got[0]);
    CHECK_OK(hk_call_on(k, HK_BACKEND_CPU, N, host));
    CHECK_MSG(h[0] == 2.0f && h[N - 1] == 2.0f,
              "grid t_alias in place on the CPU: %g", (double)h[0]);
  }
  hk_device_free(x);
  hk_device_free(out);
  hk_context_destroy(ctx);
}

/* ---- 2. The example plugins on the GPU ---------------------------------------- */

static void test_plugins(int have_nvrtc) {
  char dir[4200], cache[4200];
  snprintf(dir, sizeof dir, "%s/plugins", g_src);
  snprintf(cache, sizeof cache, "%s/plugin_cache", g_root);
  check_make_dir(cache);
  /* the source tree's permissions are not what this test is about */
  hk_context_t *ctx = mkctx(dir, cache, 0, HK_ALLOW_UNSAFE_PERMISSIONS);
  if (!ctx) return;
  CHECK_STR_EQ(hk_context_problems(ctx), "");
  static const char *const gpu[] = {"saxpy_f32",      "saxpy_f64",
                                    "clamp_f32",      "clamp_f64",
                                    "clamp_i32",      "huber_loss_f32",
                                    "huber_loss_f64", "matvec_f32",
                                    "matvec_f64",     NULL};
  static const char *const cpu_only[] = {"cumsum_f32", "cumsum_f64",
                                         "cumsum_i64", NULL};
  for (const char *const *m = gpu; *m; m++) {
    hk_kernel_t *k = find(ctx, *m);
    if (k) CHECK_MSG(hk_kernel_info(k)->targets & HK_TARGET_CUDA,
                     "%s has no cuda target", *m);
  }
  void *d = NULL;
  CHECK_OK(hk_device_alloc(&d, 4096 * 8));
  for (const char *const *m = cpu_only; *m; m++) {
    hk_kernel_t *k = find(ctx, *m);
    if (!k) continue;
    CHECK_MSG(!(hk_kernel_info(k)->targets & HK_TARGET_CUDA),
              "%s has the cuda target", *m);
    CHECK_INT_EQ(hk_kernel_backends(k), HK_TARGET_CPU);
    CHECK_INT_EQ(hk_kernel_prepare(k, HK_BACKEND_CUDA), HK_EUNSUPPORTED);
    show("cumsum prepare cuda", hk_last_error());
    void *args[] = {d, (char *)d + 2048 * 8};
    CHECK_INT_EQ(hk_call_on(k, HK_BACKEND_CUDA, 1000, args), HK_EUNSUPPORTED);
    CHECK_INT_EQ(hk_call_async(k, NULL, 1000, args), HK_EUNSUPPORTED);
  }
  CHECK_OK(hk_device_free(d));

  if (!have_nvrtc) { /* the GPU code of plugins needs NVRTC */
    hk_kernel_t *k = find(ctx, "saxpy_f32");
    if (k) {
      CHECK_INT_EQ(hk_kernel_prepare(k, HK_BACKEND_CUDA), HK_EUNSUPPORTED);
      CHECK_MSG(!(hk_kernel_backends(k) & HK_TARGET_CUDA), "%s",
                "saxpy_f32 has a CUDA backend without NVRTC");
    }
    printf("NOTE: no NVRTC: plugin kernels on the GPU not tested\n");
    hk_context_destroy(ctx);
    return;
  }

  static klist_t l;
  memset(&l, 0, sizeof l);
  l.origin = "json";
  hk_kernel_foreach(ctx, collect, &l);
  int ran = run_all(&l);
  printf("plugins: %d kernels with the cuda target, %zu sizes each\n", ran,
         COUNT(sizes));
  /* every plugin kernel with the cuda target ran (the folder grows: the
   * list above is the ones checked by name) */
  int with_cuda = 0;
  for (int i = 0; i < l.n; i++)
    with_cuda += (hk_kernel_info(l.k[i])->targets & HK_TARGET_CUDA) != 0;
  CHECK_INT_EQ(ran, with_cuda);
  CHECK(ran >= (int)COUNT(gpu) - 1);
  /* a plugin kernel (NVRTC's code, which has no N-D entry: its arrays go
   * through the copies): saxpy's inout y every other column of a bigger
   * array, x a row broadcast */
  CHECK_INT_EQ(arrays_both(ctx, "saxpy_f32",
                           (vspec[]){{0}, {0, 0, C1(29)},
                                     {37 * 58, 1, 2, {37, 29}, {58, 2}}},
                           NULL, 0),
               1);

  /* an inout result read by the finalize (dbias += the row's sum), each
   * way axis reductions' rows run */
  /* a plugin's rows kernel with a "cuda" body: the CPU's bits */
  CHECK_INT_EQ(coop_kernel(ctx, "layernorm_rows_f32", 0), 0);
  CHECK_INT_EQ(coop_kernel(ctx, "layernorm_rows_f64", 0), 0);
  CHECK_INT_EQ(coop_kernel(ctx, "layernorm_rows_f16", 0), 0);
  CHECK_INT_EQ(coop_kernel(ctx, "layernorm_rows_bf16", 0), 0);

  int ways = rows_ways(ctx, "bias_grad_f32", 300, 64, 0) +
             rows_ways(ctx, "bias_grad_f32", 70000, 3, 0) +
             rows_ways(ctx, "bias_grad_f64", 7, 1000, 0) +
             rows_ways(ctx, "bias_grad_f64", 40, 31, 0);
  CHECK_INT_EQ(ways, 4 * ROWS_WAYS);

  /* mixed host and device buffers: refused, naming both parameters */
  hk_kernel_t *k = find(ctx, "huber_loss_f32");
  if (k) {
    enum { N = 1000 };
    float *pred = malloc(N * sizeof(float));
    for (int i = 0; i < N; i++) pred[i] = (float)i;
    void *target = NULL, *out = NULL;
    float delta = 1;
    CHECK_OK(hk_device_alloc(&target, N * sizeof(float)));
    CHECK_OK(hk_device_alloc(&out, sizeof(float)));
    void *args[] = {pred, target, &delta, out};
    CHECK_INT_EQ(hk_call(k, N, args), HK_EINVAL);
    const char *msg = hk_last_error();
    show("mixed buffers (huber_loss_f32)", msg);
    CHECK_CONTAINS(msg, "pred");
    CHECK_CONTAINS(msg, "target");
    CHECK_OK(hk_device_free(target));
    CHECK_OK(hk_device_free(out));
    free(pred);
  }
  hk_context_destroy(ctx);
}

/* ---- 3. The device memory pool --------------------------------------------- */

static int get_stats(hk_pool_stats_t *st) {
  memset(st, 0, sizeof *st);
  int rc = hk_pool_stats(st);
  CHECK_MSG(rc == HK_OK, "hk_pool_stats: %d (%s)", rc, hk_last_error());
  return rc;
}

static void test_threadpool(void) {
  hk_pool_stats_t s0, s1, s2, s3;
  CHECK_OK(hk_pool_trim());
  if (get_stats(&s0)) return;
  CHECK_INT_EQ(s0.cached_bytes, 0);

  void *p = NULL, *q = NULL;
  CHECK_OK(hk_device_alloc(&p, MIB));
  CHECK(p != NULL && (uintptr_t)p % 256 == 0);
  CHECK_INT_EQ(hk_mem_where(p), HK_MEM_DEVICE);
  if (get_stats(&s1)) return;
  CHECK(s1.in_use_bytes >= s0.in_use_bytes + MIB);
  CHECK_OK(hk_device_free(p));
  if (get_stats(&s1)) return;
  CHECK(s1.cached_bytes > 0);
  CHECK_INT_EQ(s1.in_use_bytes, s0.in_use_bytes);
  CHECK_OK(hk_device_alloc(&q, MIB));
  if (get_stats(&s2)) return;
  CHECK_MSG(s2.driver_allocs == s0.driver_allocs + 1,
            "driver_allocs %" PRIu64 " -> %" PRIu64 " (expected +1)",
            s0.driver_allocs, s2.driver_allocs);
  CHECK_MSG(s2.reuses >= s0.reuses + 1, "reuses %" PRIu64 " -> %" PRIu64,
            s0.reuses, s2.reuses);
  CHECK_MSG(s2.allocs == s0.allocs + 2, "allocs %" PRIu64 " -> %" PRIu64,
            s0.allocs, s2.allocs);
  CHECK_OK(hk_device_free(q));
  CHECK_OK(hk_pool_trim());
  if (get_stats(&s3)) return;
  CHECK_INT_EQ(s3.cached_bytes, 0);
  CHECK_INT_EQ(s3.in_use_bytes, s0.in_use_bytes);
  CHECK_MSG(s3.driver_frees > s2.driver_frees,
            "driver_frees %" PRIu64 " -> %" PRIu64, s2.driver_frees,
            s3.driver_frees);

  /* pointers the pool did not give */
  CHECK_OK(hk_device_free(NULL));
  void *h = malloc(256);
  CHECK_INT_EQ(hk_device_free(h), HK_EINVAL);
  free(h);
  void *r = NULL;
  CHECK_OK(hk_device_alloc(&r, 4096));
  if (r) {
    CHECK_INT_EQ(hk_device_free((char *)r + 256), HK_EINVAL);
    CHECK_INT_EQ(hk_mem_where((char *)r + 256), HK_MEM_DEVICE);
    CHECK_OK(hk_device_free(r));
  }

  /* sizes */
  static const size_t bytes[] = {0, 1, 255, 256, 4097, 3 * MIB};
  unsigned char *src = malloc(3 * MIB), *dst = malloc(3 * MIB);
  for (size_t i = 0; i < 3 * MIB; i++) src[i] = (unsigned char)(i * 31 + 7);
  for (size_t i = 0; i < COUNT(bytes); i++) {
    size_t nb = bytes[i];
    void *d = NULL;
    int rc = hk_device_alloc(&d, nb);
    CHECK_MSG(rc == HK_OK, "hk_device_alloc(%zu): %d (%s)", nb, rc,
              hk_last_error());
    if (rc) continue;
    CHECK_MSG(nb == 0 || (d && (uintptr_t)d % 256 == 0), "%zu bytes at %p",
              nb, d);
    if (nb) CHECK_INT_EQ(hk_mem_where(d), HK_MEM_DEVICE);
    memset(dst, 0, nb ? nb : 1);
    CHECK_OK(hk_memcpy_to_device(d, src, nb, NULL));
    CHECK_OK(hk_memcpy_to_host(dst, d, nb, NULL));
    CHECK_MSG(!memcmp(dst, src, nb), "%zu bytes: round trip differs", nb);
    CHECK_OK(hk_device_free(d));

    hk_buffer_t *b = NULL;
    rc = hk_buffer_create(&b, HK_MEM_DEVICE, nb);
    CHECK_MSG(rc == HK_OK, "hk_buffer_create device %zu: %d (%s)", nb, rc,
              hk_last_error());
    if (rc) continue;
    CHECK_INT_EQ(hk_buffer_size(b), nb);
    CHECK_INT_EQ(hk_buffer_where(b), HK_MEM_DEVICE);
    memset(dst, 0, nb ? nb : 1);
    CHECK_OK(hk_buffer_copy_in(b, 0, src, nb, NULL));
    CHECK_OK(hk_buffer_copy_out(b, 0, dst, nb, NULL));
    CHECK_MSG(!memcmp(dst, src, nb), "buffer %zu: round trip differs", nb);
    hk_buffer_destroy(b);
  }
  free(src);
  free(dst);
  CHECK_OK(hk_pool_trim());
  if (get_stats(&s3) == HK_OK) CHECK_INT_EQ(s3.cached_bytes, 0);
}

/* ---- 4. Buffers, streams, pinned and staged copies --------------------------- */

/* out = 2.5 x on stream s, then y = 2 out + y: exact in floats for the
 * integer-valued inputs used here. Checks y. */
static void stream_round(hk_kernel_t *scale, hk_kernel_t *axpy,
                         hk_stream_t *s, size_t n, float *xsrc, float *ysrc,
                         float *ydst, const char *what) {
  hk_buffer_t *bx = NULL, *bo = NULL, *by = NULL;
  size_t nb = n * sizeof(float);
  CHECK_OK(hk_buffer_create(&bx, HK_MEM_DEVICE, nb));
  CHECK_OK(hk_buffer_create(&bo, HK_MEM_DEVICE, nb));
  CHECK_OK(hk_buffer_create(&by, HK_MEM_DEVICE, nb));
  if (!bx || !bo || !by) goto out;
  for (size_t i = 0; i < n; i++) {
    xsrc[i] = (float)(i % 1000) - 500;
    ysrc[i] = (float)(i % 7);
  }
  CHECK_OK(hk_buffer_copy_in(bx, 0, xsrc, nb, s));
  CHECK_OK(hk_buffer_copy_in(by, 0, ysrc, nb, s));
  if (s) { /* the sources may be reused at once (staged or pinned: queued) */
    CHECK_OK(hk_stream_sync(s));
    memset(xsrc, 0xEE, nb);
    memset(ysrc, 0xEE, nb);
  }
  float alpha = 2.5f;
  void *a1[] = {hk_buffer_data(bx), &alpha, hk_buffer_data(bo)};
  CHECK_OK(hk_call_async(scale, s, n, a1));
  alpha = 99; /* scalars are read before hk_call_async returns */
  float two = 2;
  void *a2[] = {&two, hk_buffer_data(bo), hk_buffer_data(by)};
  CHECK_OK(hk_call_async(axpy, s, n, a2));
  two = 99;
  memset(ydst, 0, nb);
  CHECK_OK(hk_buffer_copy_out(by, 0, ydst, nb, s));
  CHECK_OK(hk_stream_sync(s));
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < n; i++) {
    float want = 2 * (2.5f * ((float)(i % 1000) - 500)) + (float)(i % 7);
    if (ydst[i] != want && bad++ == 0) first = i;
  }
  CHECK_MSG(bad == 0, "%s: %zu of %zu wrong, first [%zu] = %g", what, bad, n,
            first, bad ? (double)ydst[first] : 0.0);
  /* a part of it, at an offset */
  if (n > 4097) {
    memset(ydst, 0, nb);
    size_t off = 4097 * sizeof(float);
    CHECK_OK(hk_buffer_copy_out(by, off, ydst, nb - off, s));
    CHECK_OK(hk_stream_sync(s));
    float want = 2 * (2.5f * ((float)(4097 % 1000) - 500)) + (float)(4097 % 7);
    CHECK_MSG(ydst[0] == want, "%s: at offset: %g != %g", what,
              (double)ydst[0], (double)want);
  }
out:
  hk_buffer_destroy(bx);
  hk_buffer_destroy(bo);
  hk_buffer_destroy(by);
}

static void test_buffers_streams(void) {
  hk_context_t *ctx = mkctx(NULL, NULL, 0, 0);
  hk_kernel_t *scale = find(ctx, "scale_f32"), *axpy = find(ctx, "axpy_f32");
  if (!scale || !axpy) {
    hk_context_destroy(ctx);
    return;
  }
  /* device buffer basics */
  hk_buffer_t *b = NULL;
  size_t nb = MIB + 3;
  CHECK_OK(hk_buffer_create(&b, HK_MEM_DEVICE, nb));
  if (b) {
    CHECK(hk_buffer_data(b) != NULL);
    CHECK_INT_EQ(hk_buffer_size(b), nb);
    CHECK_INT_EQ(hk_buffer_where(b), HK_MEM_DEVICE);
    CHECK_INT_EQ(hk_mem_where(hk_buffer_data(b)), HK_MEM_DEVICE);
    unsigned char *src = malloc(nb), *dst = malloc(nb);
    for (size_t i = 0; i < nb; i++) src[i] = (unsigned char)(i * 13 + 1);
    CHECK_OK(hk_buffer_copy_in(b, 0, src, nb, NULL));
    memset(dst, 0, nb);
    CHECK_OK(hk_buffer_copy_out(b, 0, dst, nb, NULL));
    CHECK(!memcmp(dst, src, nb));
    CHECK_OK(hk_buffer_copy_in(b, 1001, src, 77, NULL));
    CHECK_OK(hk_buffer_copy_out(b, 1000, dst, 79, NULL));
    CHECK(dst[0] == src[1000] && !memcmp(dst + 1, src, 77) &&
          dst[78] == src[1078]);
    CHECK_INT_EQ(hk_buffer_copy_in(b, nb - 3, src, 4, NULL), HK_EINVAL);
    CHECK_INT_EQ(hk_buffer_copy_in(b, SIZE_MAX, src, 2, NULL), HK_EINVAL);
    CHECK_INT_EQ(hk_buffer_copy_out(b, 0, dst, nb + 1, NULL), HK_EINVAL);
    free(src);
    free(dst);
    hk_buffer_destroy(b);
  }
  /* a host buffer is pinned now, and a plain memcpy */
  hk_buffer_t *h = NULL;
  CHECK_OK(hk_buffer_create(&h, HK_MEM_HOST, 4096));
  if (h) {
    CHECK_INT_EQ(hk_buffer_where(h), HK_MEM_HOST);
    CHECK_INT_EQ(hk_mem_where(hk_buffer_data(h)), HK_MEM_HOST);
    char msg[4096];
    memset(msg, 'q', sizeof msg);
    CHECK_OK(hk_buffer_copy_in(h, 0, msg, sizeof msg, NULL));
    CHECK(!memcmp(hk_buffer_data(h), msg, sizeof msg));
    hk_buffer_destroy(h);
  }

  /* synchronous, default stream, own stream; pinned and malloc'ed */
  size_t small = 65536 + 3, big = 5 * MIB + 3; /* big: over 16 MiB */
  void *vx = NULL, *vy = NULL, *vd = NULL;
  CHECK_OK(hk_host_alloc(&vx, big * sizeof(float)));
  CHECK_OK(hk_host_alloc(&vy, big * sizeof(float)));
  CHECK_OK(hk_host_alloc(&vd, big * sizeof(float)));
  float *px = vx, *py = vy, *pd = vd;
  float *mx = malloc(big * sizeof(float)), *my = malloc(big * sizeof(float));
  float *md = malloc(big * sizeof(float));
  hk_stream_t *s = NULL;
  CHECK_OK(hk_stream_create(&s));
  if (px && py && pd && mx && my && md && s) {
    CHECK_INT_EQ(hk_mem_where(px), HK_MEM_HOST);
    CHECK_INT_EQ(hk_mem_where(mx), HK_MEM_HOST);
    stream_round(scale, axpy, NULL, small, mx, my, md, "sync, malloc");
    stream_round(scale, axpy, NULL, big, mx, my, md, "sync, malloc, big");
    stream_round(scale, axpy, NULL, big, px, py, pd, "sync, pinned, big");
    stream_round(scale, axpy, s, small, px, py, pd, "stream, pinned");
    stream_round(scale, axpy, s, big, px, py, pd, "stream, pinned, big");
    stream_round(scale, axpy, s, small, mx, my, md, "stream, malloc");
    stream_round(scale, axpy, s, big, mx, my, md, "stream, malloc, big");
    stream_round(scale, axpy, s, big, px, my, md, "stream, mixed host");

    /* hk_memcpy_* on a stream, both kinds of host memory */
    void *d = NULL;
    size_t nbig = big * sizeof(float);
    CHECK_OK(hk_device_alloc(&d, nbig));
    if (d) {
      for (size_t i = 0; i < big; i++) mx[i] = (float)i;
      CHECK_OK(hk_memcpy_to_device(d, mx, nbig, s));
      memset(mx, 0, nbig); /* staged: reusable at once */
      memset(pd, 0, nbig);
      CHECK_OK(hk_memcpy_to_host(pd, d, nbig, s));
      CHECK_OK(hk_stream_sync(s));
      size_t bad = 0;
      for (size_t i = 0; i < big; i++) bad += pd[i] != (float)i;
      CHECK_MSG(bad == 0, "memcpy malloc -> device -> pinned: %zu wrong", bad);
      for (size_t i = 0; i < big; i++) px[i] = (float)(big - i);
      CHECK_OK(hk_memcpy_to_device(d, px, nbig, s));
      memset(md, 0, nbig);
      CHECK_OK(hk_memcpy_to_host(md, d, nbig, s));
      CHECK_OK(hk_stream_sync(s));
      bad = 0;
      for (size_t i = 0; i < big; i++) bad += md[i] != (float)(big - i);
      CHECK_MSG(bad == 0, "memcpy pinned -> device -> malloc: %zu wrong", bad);
      CHECK_OK(hk_device_free(d));
    }
  }
  CHECK_OK(hk_stream_sync(NULL));
  hk_stream_destroy(s);
  hk_stream_destroy(NULL);
  hk_host_free(px);
  hk_host_free(py);
  hk_host_free(pd);
  free(mx);
  free(my);
  free(md);
  hk_context_destroy(ctx);
}

/* ---- 5. The NVRTC disk cache and compile errors ------------------------------ */

static const char c_scale_json[] =
    "{\n"
    "  \"schema_version\": 1,\n"
    "  \"name\": \"c_scale\",\n"
    "  \"doc\": \"out = x * 2.5\",\n"
    "  \"kind\": \"elementwise\",\n"
    "  \"params\": [\n"
    "    {\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},\n"
    "    {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\"}\n"
    "  ],\n"
    "  \"body\": \"out = x * 2.5f;\",\n"
    "  \"targets\": [\"cpu\", \"cuda\"]\n"
    "}\n";

static const char bad_cuda_json[] =
    "{\n"
    "  \"schema_version\": 1,\n"
    "  \"name\": \"bad_cuda\",\n"
    "  \"kind\": \"raw\",\n"
    "  \"params\": [\n"
    "    {\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},\n"
    "    {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\"}\n"
    "  ],\n"
    "  \"cpu\": [\n"
    "    \"for (size_t i = 0; i < n; ++i)\",\n"
    "    \"    out[i] = x[i];\"\n"
    "  ],\n"
    "  \"cuda\": [\n"
    "    \"size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;\",\n"
    "    \"if (i < n) out[i] = x[i] * undeclared_thing;\"\n"
    "  ],\n"
    "  \"targets\": [\"cpu\", \"cuda\"]\n"
    "}\n";

/* Runs c_scale on the GPU at n = 1007; must give x * 2.5 exactly. */
static void run_c_scale(hk_kernel_t *k, const char *what) {
  enum { N = 1007 };
  float x[N], out[N];
  void *dx = NULL, *dout = NULL;
  for (int i = 0; i < N; i++) x[i] = (float)i * 0.75f - 100;
  CHECK_OK(hk_device_alloc(&dx, sizeof x));
  CHECK_OK(hk_device_alloc(&dout, sizeof out));
  if (dx && dout) {
    CHECK_OK(hk_memcpy_to_device(dx, x, sizeof x, NULL));
    void *args[] = {dx, dout};
    CHECK_OK(hk_call_on(k, HK_BACKEND_CUDA, N, args));
    memset(out, 0, sizeof out);
    CHECK_OK(hk_memcpy_to_host(out, dout, sizeof out, NULL));
    int bad = 0;
    for (int i = 0; i < N; i++) bad += out[i] != x[i] * 2.5f;
    CHECK_MSG(bad == 0, "c_scale (%s): %d of %d wrong", what, bad, N);
  }
  CHECK_OK(hk_device_free(dx));
  CHECK_OK(hk_device_free(dout));
}

/* A context on dir and cache; prepares c_scale for CUDA and checks what the
 * log says: compiled (or from the disk cache), and corrupt entry or not. */
static void nvrtc_round(const char *dir, const char *cache,
                        const char *path, int want_compiled,
                        int want_corrupt, const char *what) {
  check_log_clear();
  hk_context_t *ctx = mkctx(dir, cache, 1, 0);
  hk_kernel_t *k = find(ctx, "c_scale");
  if (k) {
    int rc = hk_kernel_prepare(k, HK_BACKEND_CUDA);
    CHECK_MSG(rc == HK_OK, "%s: hk_kernel_prepare cuda: %d (%s)", what, rc,
              hk_last_error());
    CHECK_MSG(hk_kernel_backends(k) & HK_TARGET_CUDA, "%s: no cuda backend",
              what);
    const char *lg = check_log_text();
    show(what, lg);
    CHECK_MSG(check_log_has(path), "%s: the log does not name %s: \"%s\"",
              what, path, lg);
    if (want_compiled) {
      CHECK_MSG(check_log_has("compiled by NVRTC for sm_"),
                "%s: not compiled: \"%s\"", what, lg);
      CHECK_MSG(!check_log_has("from the disk cache"),
                "%s: from the cache: \"%s\"", what, lg);
    } else {
      CHECK_MSG(check_log_has("loaded from the disk cache"),
                "%s: not from the disk cache: \"%s\"", what, lg);
      CHECK_MSG(!check_log_has("compiled by NVRTC"),
                "%s: compiled: \"%s\"", what, lg);
    }
    if (want_corrupt)
      CHECK_MSG(check_log_has("disk cache entry was corrupt; compiling again"),
                "%s: no corrupt entry reported: \"%s\"", what, lg);
    else
      CHECK_MSG(!check_log_has("corrupt"), "%s: corrupt: \"%s\"", what, lg);
    run_c_scale(k, what);
  }
  hk_context_destroy(ctx);
}

static int g_damage_mode; /* 0: flip a byte in the middle; 1: truncate */
static int g_damaged;

static int damage_one(const char *path, const struct stat *st, int flag,
                      struct FTW *f) {
  (void)f;
  size_t l = strlen(path);
  if (flag != FTW_F || l < 3 || strcmp(path + l - 3, ".so")) return 0;
  if (g_damage_mode == 0) {
    int fd = open(path, O_RDWR | O_CLOEXEC);
    unsigned char byte = 0;
    off_t at = st->st_size / 2;
    int ok = fd >= 0 && pread(fd, &byte, 1, at) == 1;
    byte ^= 0xFF;
    ok = ok && pwrite(fd, &byte, 1, at) == 1;
    if (fd >= 0) close(fd);
    CHECK_MSG(ok, "cannot alter %s: %s", path, strerror(errno));
  } else {
    CHECK_MSG(truncate(path, st->st_size / 2) == 0, "cannot truncate %s: %s",
              path, strerror(errno));
  }
  g_damaged++;
  return 0;
}

/* ---- 16-bit rows a thread a row --------------------------------------------
 * A rows kernel without a "cuda" body runs a thread a row; with f16 or
 * bf16 buffers, each thread keeps its rows' float copies in the launch's
 * scratch (core/cuda/launch.c), which a long row limits to fewer threads
 * than rows (they stride). Every row mode, an inout buffer, an out buffer
 * whose copy the body reads (it starts at 0): rows16 (rows16_kernel.h),
 * the CPU's bits, as coop_case checks them.
 * Then rows of 50,257 over more rows than the scratch's blocks (a block
 * a row: softmax) or threads take at once. */
static void test_rows_staged(void) {
  char dir[4200], cache[4200], path[4300];
  snprintf(dir, sizeof dir, "%s/rows16_plugins", g_root);
  snprintf(cache, sizeof cache, "%s/rows16_cache", g_root);
  snprintf(path, sizeof path, "%s/rows16.json", dir);
  check_make_dir(dir);
  check_make_dir(cache);
  CHECK_MSG(write_file(path, rows16_json) == 0, "cannot write %s", path);
  hk_context_t *ctx = mkctx(dir, cache, 0, 0);
  if (!ctx) return;
  static const char *const names[] = {"rows16_f16", "rows16_bf16",
                                      "rows16_f32"};
  for (size_t i = 0; i < COUNT(names); i++)
    CHECK_INT_EQ(coop_kernel(ctx, names[i], 0), 0);
  hk_kernel_t *k = find(ctx, "rows16_f16");
  if (k) CHECK(coop_case(k, 300, 50257, 0, 0, 0));
  if ((k = find(ctx, "softmax_bf16"))) CHECK(coop_case(k, 600, 50257, 1, 1, 0));
  hk_context_destroy(ctx);
}

static void damage_cache(const char *cache, int mode) {
  g_damage_mode = mode;
  g_damaged = 0;
  nftw(cache, damage_one, 16, FTW_PHYS);
  CHECK_MSG(g_damaged > 0, "no *.so entry in %s", cache);
}

/* The 1-based line of the first occurrence of needle in text. */
static int line_of(const char *text, const char *needle) {
  const char *at = strstr(text, needle);
  int line = 1;
  if (!at) return -1;
  for (const char *p = text; p < at; p++) line += *p == '\n';
  return line;
}

static void test_nvrtc_cache(void) {
  char dir[4200], cache[4200], path[4300];
  snprintf(dir, sizeof dir, "%s/nvrtc_plugins", g_root);
  snprintf(cache, sizeof cache, "%s/nvrtc_cache", g_root);
  snprintf(path, sizeof path, "%s/c_scale.json", dir);
  check_make_dir(dir);
  check_make_dir(cache);
  CHECK_MSG(write_file(path, c_scale_json) == 0, "cannot write %s", path);

  nvrtc_round(dir, cache, path, 1, 0, "miss");
  nvrtc_round(dir, cache, path, 0, 0, "hit");
  damage_cache(cache, 0);
  nvrtc_round(dir, cache, path, 1, 1, "byte flipped");
  nvrtc_round(dir, cache, path, 0, 0, "hit after rebuild");
  damage_cache(cache, 1);
  nvrtc_round(dir, cache, path, 1, 1, "truncated");
  nvrtc_round(dir, cache, path, 0, 0, "hit after rebuild 2");

  /* a compile error in a raw kernel's cuda body */
  char bdir[4200], bpath[4300], bcache[4200];
  snprintf(bdir, sizeof bdir, "%s/bad_plugins", g_root);
  snprintf(bcache, sizeof bcache, "%s/bad_cache", g_root);
  snprintf(bpath, sizeof bpath, "%s/bad_cuda.json", bdir);
  check_make_dir(bdir);
  check_make_dir(bcache);
  CHECK_MSG(write_file(bpath, bad_cuda_json) == 0, "cannot write %s", bpath);
  check_log_clear();
  hk_context_t *ctx = mkctx(bdir, bcache, 1, 0);
  hk_kernel_t *k = find(ctx, "bad_cuda");
  if (k) {
    int rc = hk_kernel_prepare(k, HK_BACKEND_CUDA);
    const char *msg = hk_last_error();
    show("cuda compile error", msg);
    CHECK_MSG(rc == HK_ECOMPILE, "%d (%s)", rc, msg);
    char want[4400];
    snprintf(want, sizeof want, "%s:%d:", bpath,
             line_of(bad_cuda_json, "undeclared_thing"));
    CHECK_CONTAINS(msg, want);
    CHECK_CONTAINS(msg, "undeclared_thing");
    /* the CPU side is unaffected */
    float x[3] = {1, 2, 3}, out[3] = {0};
    void *args[] = {x, out};
    CHECK_OK(hk_call_on(k, HK_BACKEND_CPU, 3, args));
    CHECK(out[0] == 1 && out[1] == 2 && out[2] == 3);
  }
  hk_context_destroy(ctx);
}

/* ---- A device fault ------------------------------------------------------------ */

static const char fault_json[] =
    "{\"schema_version\": 1, \"name\": \"fault_trap\", \"kind\": \"raw\",\n"
    " \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},\n"
    "            {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\"}],\n"
    " \"cpu\": [\"for (size_t i = 0; i < n; ++i) out[i] = x[i];\"],\n"
    " \"cuda\": [\"if (n > 0) __trap();\"],\n"
    " \"targets\": [\"cpu\", \"cuda\"]}\n";

/* A kernel that faults on the GPU: HK_EDEVICE from the call and from the
 * stream after it. Leaves the CUDA context unusable: run it last. */
static void test_device_fault(void) {
  char dir[4200], path[4300];
  snprintf(dir, sizeof dir, "%s/fault_plugins", g_root);
  snprintf(path, sizeof path, "%s/fault_trap.json", dir);
  check_make_dir(dir);
  CHECK_MSG(write_file(path, fault_json) == 0, "cannot write %s", path);
  hk_context_t *ctx = mkctx(dir, NULL, 0, 0);
  hk_kernel_t *k = find(ctx, "fault_trap");
  void *dx = NULL, *dout = NULL;
  CHECK_OK(hk_device_alloc(&dx, 16));
  CHECK_OK(hk_device_alloc(&dout, 16));
  if (k && dx && dout) {
    CHECK_OK(hk_kernel_prepare(k, HK_BACKEND_CUDA));
    void *args[] = {dx, dout};
    int rc = hk_call_on(k, HK_BACKEND_CUDA, 4, args);
    const char *msg = hk_last_error();
    show("device fault", msg);
    CHECK_MSG(rc == HK_EDEVICE, "%d (%s)", rc, msg);
    CHECK_CONTAINS(msg, "fault_trap");
    CHECK_INT_EQ(hk_stream_sync(NULL), HK_EDEVICE);
  }
  /* pool blocks go back without the driver */
  CHECK_OK(hk_device_free(dx));
  CHECK_OK(hk_device_free(dout));
  hk_context_destroy(ctx);
}

/* ---- main ------------------------------------------------------------------- */

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0); /* what ran before a crash stays */
  umask(022);
  unsetenv("HK_CC");
  unsetenv("HK_PLUGIN_PATH");
  unsetenv("HK_CACHE_DIR");
  check_source_dir(g_src, sizeof g_src,
                   argc > 1 ? argv[1] : getenv("HK_SOURCE_DIR"));
  g_verbose = getenv("HK_TEST_VERBOSE") && *getenv("HK_TEST_VERBOSE") != '0';

  /* 0. the CUDA backend starts, or says why not */
  int init = hk_cuda_init();
  char reason[2048];
  snprintf(reason, sizeof reason, "%s", hk_last_error());
  CHECK_MSG(init == HK_OK || init == HK_EUNSUPPORTED,
            "hk_cuda_init: %d (%s)", init, reason);
  int have_device = init == HK_OK;
  if (!have_device) CHECK_CONTAINS(reason, "no CUDA device");
  CHECK_INT_EQ(hk_cuda_init(), init);

  test_host_buffers();
  test_cpu_backend(have_device);
  test_nd_divider();

  if (!have_device) {
    test_no_device();
    if (check_failures) {
      fprintf(stderr, "test_cuda: %d checks, %d failed\n", check_count,
              check_failures);
      return 1;
    }
    const char *r = strstr(reason, "no CUDA device");
    if (r) {
      r += strlen("no CUDA device");
      while (*r == ':' || *r == ' ') r++;
    } else {
      r = reason;
    }
    size_t rl = strcspn(r, "\n");
    printf("SKIPPED: no CUDA device: %.*s\n", (int)rl, r);
    return 77;
  }

  hk_cuda_device_info_t di;
  memset(&di, 0, sizeof di);
  CHECK_OK(hk_cuda_device_info(&di));
  printf("device %d: %s, sm_%d%d, %d SMs, %.1f GiB, driver %d, NVRTC %d\n",
         di.ordinal, di.name, di.major, di.minor, di.sm_count,
         (double)di.total_memory / (double)(1u << 30), di.driver_version,
         di.nvrtc_version);
  CHECK(di.name[0] != '\0');
  CHECK(di.major >= 5);
  CHECK(di.sm_count > 0);
  CHECK(di.total_memory > 0);
  CHECK(di.driver_version > 0);
  int have_nvrtc = di.nvrtc_version > 0;

  if (!mkdtemp(g_root)) {
    CHECK_MSG(0, "cannot create a temp folder: %s", strerror(errno));
    fprintf(stderr, "test_cuda: %d checks, %d failed\n", check_count,
            check_failures);
    return 1;
  }
  chmod(g_root, 0700);

  printf("-- %s\n", "test_stdlib");
  test_stdlib();
  printf("-- %s\n", "test_plugins");
  test_plugins(have_nvrtc);
  if (have_nvrtc) {
    printf("-- %s\n", "test_grid_alias");
    test_grid_alias();
    printf("-- %s\n", "test_rows_staged");
    test_rows_staged();
  }
  printf("-- %s\n", "test_threadpool");
  test_threadpool();
  printf("-- %s\n", "test_buffers_streams");
  test_buffers_streams();
  if (have_nvrtc) test_nvrtc_cache();
  else printf("NOTE: no NVRTC: the NVRTC disk cache not tested\n");
  if (have_nvrtc) test_device_fault(); /* last: the context is lost */
  else printf("NOTE: no NVRTC: the device fault not tested\n");

  const char *keep = getenv("HK_TEST_KEEP");
  if (keep && *keep && *keep != '0') printf("kept %s\n", g_root);
  else check_rm_rf(g_root);

  printf("test_cuda: %d checks, %d failed\n", check_count, check_failures);
  return check_failures ? 1 : 0;
}
