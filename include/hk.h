/* hk.h — the public interface of libhk, the hybrid kernel library.
 *
 * This header is the manual. Everything a program outside the tree may rely on
 * is declared here (and in hk_stdlib.h, generated from the kernel files in stdlib_kernels/,
 * which this header includes).
 *
 * Conventions (after libuv):
 *   - every type is hk_thing_t, every function hk_thing_verb();
 *   - fallible calls return 0 (HK_OK) or a negative HK_E* code, and
 *     hk_strerror() turns a code into words;
 *   - nothing prints from inside the library.
 *
 * The stdlib kernels are called directly, at the cost of a hand-written loop:
 *
 *     #include <hk.h>
 *     float a[1000] = {1, 2, 3}, b[1000] = {4, 5, 6}, out[1000];
 *     hk_add_f32(a, b, out, 1000);          // out[i] = a[i] + b[i]
 *     float s;
 *     hk_sum_f32(a, &s, 1000);              // s = a[0] + ... + a[999] = 6
 *
 * Every typed stdlib function takes its parameters in the order of its kernel
 * file, buffers as pointers (const for inputs) and scalars by value, then the
 * element count n. A rows kernel's function (softmax, log_softmax,
 * layernorm) takes the row count before n, the row length:
 *
 *     hk_softmax_f32(x, y, rows, n);        // each of rows rows of n elements
 * Buffers must not overlap, with one supported exception: an
 * elementwise kernel may write in place (an out or inout buffer may be the very
 * same pointer as an in buffer). Large elementwise and reduction calls are
 * spread over a thread pool (see hk_set_threads()).
 */
#ifndef HK_H
#define HK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(HK_STATIC_DEFINE) || !defined(__GNUC__)
#define HK_API
#else
#define HK_API __attribute__((visibility("default")))
#endif

#define HK_VERSION_MAJOR 0
#define HK_VERSION_MINOR 1
#define HK_VERSION_PATCH 0
#define HK_VERSION_STRING "0.1.0"

/* ---- Status codes ------------------------------------------------------ */

/* Every status code, its value and its words, in one table (libuv's
 * UV_ERRNO_MAP): hk_strerror() and hk_err_name() are generated from it, so a
 * code cannot exist without its message. XX(NAME, value, words). */
#define HK_ERRNO_MAP(XX)                                                      \
  XX(EINVAL, -1, "invalid argument")                                          \
  XX(ENOMEM, -2, "out of memory")                                             \
  XX(ENOTFOUND, -3, "not found")                                              \
  XX(ESCHEMA, -4, "invalid kernel description")                               \
  XX(EIO, -5, "input/output error")                                           \
  XX(ECOMPILE, -6, "kernel compilation failed")                               \
  XX(EUNSUPPORTED, -7, "not supported in this build or on this machine")      \
  XX(EINTERNAL, -8, "internal error in hk")                                   \
  XX(EDEVICE, -9, "the GPU reported a fault")                                 \
  XX(EREFUSED, -10, "a compiled object was refused")

#define HK_OK 0
/* HK_EINVAL     a bad argument
 * HK_ENOMEM     out of memory
 * HK_ENOTFOUND  no such kernel, file or parameter
 * HK_ESCHEMA    a kernel description breaks the format
 * HK_EIO        a file could not be read or written, or may not be trusted
 *               (a plugin file or folder others can write: unsafe
 *               permissions)
 * HK_ECOMPILE   a kernel body failed to compile
 * HK_EUNSUPPORTED not available in this build or on this machine
 * HK_EINTERNAL  a bug in hk: please report it
 * HK_EDEVICE    the GPU failed a launch, a copy or an allocation it had
 *               accepted (a kernel fault, an illegal address, a lost device)
 * HK_EREFUSED   a compiled object (a prebuilt plugin, a cache entry) was
 *               refused: not a sound shared object, wrong ABI, forbidden
 *               imports or code that runs at load time */
enum {
#define HK__XX(name, value, words) HK_##name = (value),
  HK_ERRNO_MAP(HK__XX)
#undef HK__XX
};

/* Words for a status code ("invalid argument", ...); never NULL. */
HK_API const char *hk_strerror(int code);
/* The code's name ("HK_EINVAL"); "HK_OK" for 0, "HK_E?" when unknown. */
HK_API const char *hk_err_name(int code);

/* ---- Element types, parameter roles, kernel kinds ---------------------- */

typedef enum hk_dtype {
  HK_DTYPE_INVALID = 0,
  HK_F32,
  HK_F64,
  HK_I8,
  HK_I16,
  HK_I32,
  HK_I64,
  HK_U8,
  HK_U16,
  HK_U32,
  HK_U64,
  HK_F16 = 11, /* IEEE 754 binary16 (NumPy float16, "<f2") */
  HK_BF16 = 12, /* bfloat16: the upper half of an f32 (NumPy: "<u2") */
  HK_BOOL = 13  /* one byte, 0 or 1 (NumPy bool, "|b1") */
} hk_dtype_t;

#define HK_DTYPE_COUNT 14 /* one past the last hk_dtype_t value */

/* f16 and bf16 are stored in 16 bits and computed in f32: in memory, in the
 * args of hk_call and in the typed stdlib functions an element or a scalar
 * of these types is its uint16_t bit pattern (`const uint16_t *x` for a
 * buffer, `uint16_t alpha` for a scalar); kernel code sees a float, and what
 * it stores is rounded to the nearest 16-bit value, ties to even. A bool is
 * one byte (uint8_t, NumPy's |b1) holding 0 or 1: read as 0/1 (any nonzero
 * byte reads as 1), stored as v != 0. Complex types may follow later. */

/* "f32", "i64", ...; "invalid" for anything else. */
HK_API const char *hk_dtype_name(hk_dtype_t t);
/* The dtype named by "f32", "i64", ...; HK_DTYPE_INVALID if none. */
HK_API hk_dtype_t hk_dtype_from_name(const char *name);
/* Size of one element in bytes; 0 for HK_DTYPE_INVALID. */
HK_API size_t hk_dtype_size(hk_dtype_t t);

/* f16 and bf16 values on the host, as kernels convert them: a double
 * rounded once to the nearest f16 (bf16) bits, ties to even, inf past the
 * largest finite, a NaN kept (its sign and top payload bits; never made an
 * inf); and the bits to a double, exactly. NumPy's float16 conversions give
 * the same bits. From a float: pass it as a double (exact, but for a
 * signalling NaN, which the conversion to double makes quiet). */
HK_API uint16_t hk_f16_from_double(double d);
HK_API double hk_f16_to_double(uint16_t h);
HK_API uint16_t hk_bf16_from_double(double d);
HK_API double hk_bf16_to_double(uint16_t h);

typedef enum hk_role {
  HK_ROLE_IN,    /* read-only buffer */
  HK_ROLE_OUT,   /* write-only buffer */
  HK_ROLE_INOUT, /* read-write buffer */
  HK_ROLE_SCALAR /* a value passed by value */
} hk_role_t;

typedef enum hk_kind {
  HK_KIND_ELEMENTWISE,
  HK_KIND_REDUCTION,
  HK_KIND_RAW,
  HK_KIND_ROWS, /* a body run once per row of n elements (schemas/README.md) */
  HK_KIND_GRID  /* a body run once per index of a 1-3-D index space */
} hk_kind_t;

/* How a rows kernel's buffer parameter steps from row to row: n elements
 * per row (full), one element per row (one: a per-row result such as
 * layernorm's mean), or the same n elements for every row (shared: a
 * weight or a bias). HK_ROW_FULL for every parameter of other kinds. */
typedef enum hk_row {
  HK_ROW_FULL = 0,
  HK_ROW_ONE,
  HK_ROW_SHARED
} hk_row_t;

/* Target bits. */
#define HK_TARGET_CPU 1u
#define HK_TARGET_CUDA 2u

/* "in", "out", "inout", "scalar"; "invalid" for anything else. */
HK_API const char *hk_role_name(hk_role_t r);
/* "elementwise", "reduction", "raw", "rows", "grid"; "invalid" for
 * anything else. */
HK_API const char *hk_kind_name(hk_kind_t k);

/* ---- Kernel descriptions ------------------------------------------------ */

typedef struct hk_param_info {
  const char *name;
  hk_dtype_t dtype;
  hk_role_t role;
  /* Raw and grid kernels: the expression (over integer scalars, consts and
   * n) giving this buffer's element count, or NULL when it is n (a raw or
   * grid buffer without "len" has n elements: give one to every buffer a
   * body indexes past n). Elementwise buffers have n
   * elements; a reduction's in buffers n and each of its results (out and
   * inout buffers) 1. */
  const char *len;
  const char *doc; /* "" when none */
  hk_row_t row;    /* rows kernels: how the buffer steps per row */
} hk_param_info_t;

typedef struct hk_kernel_info_s {
  const char *name; /* registered name: "add_f32" */
  const char *doc;  /* one line; "" when none */
  hk_kind_t kind;
  unsigned targets; /* HK_TARGET_* bits */
  int nparams;
  const hk_param_info_t *params; /* in calling order */
  const char *origin;            /* "stdlib", "json" or "so" */
  const char *source;            /* the kernel file it was described in */
  /* Raw and grid kernels: 0 when neither their code nor their lens and
   * extents name n, so that n changes nothing (hk run needs no --n for
   * one without an in buffer); 1 otherwise, and for every other kind,
   * whose code runs n elements. */
  int uses_n;
} hk_kernel_info_t;

/* ---- Contexts: the registry of kernels ------------------------------------
 *
 * A context is a registry of kernels by name: the stdlib (origin "stdlib",
 * tier inline) and user kernels loaded from plugin folders, files or
 * strings. Kernel files (.json) are compiled at run time: first by libtcc
 * (tier jit, ready in about a millisecond), then by the system compiler in
 * the background (tier opt, -O3 -march=native), whose result is cached on
 * disk and swapped into the kernel's handle when ready. Prebuilt plugins
 * (.so, made by `hk build`) are loaded as they are (tier so).
 *
 *     const char *dirs[] = {"plugins", NULL};  // holds plugins/saxpy.json
 *     hk_options_t opts = {.plugin_dirs = dirs};
 *     hk_context_t *ctx;
 *     hk_kernel_t *k;
 *     if (hk_context_create(&ctx, &opts) != HK_OK) {
 *         fprintf(stderr, "%s\n", hk_last_error());
 *         return 1;
 *     }
 *     // saxpy.json declares "types": {"T": ["f32", "f64"]}: one kernel per
 *     // type, registered as saxpy_f32 and saxpy_f64
 *     if (hk_kernel_find(ctx, "saxpy_f32", &k) != HK_OK) {
 *         fprintf(stderr, "%s\n", hk_last_error());
 *         hk_context_destroy(ctx);
 *         return 1;
 *     }
 *     float x[1000] = {1, 2, 3}, y[1000] = {0}, alpha = 2;
 *     size_t n = 1000;
 *     void *args[] = {&alpha, x, y};           // parameter order
 *     int rc = hk_call(k, n, args);            // y = alpha * x + y
 *     hk_context_destroy(ctx);
 *     return rc == HK_OK ? 0 : 1;
 *
 * Thread safety: any number of threads may find and call kernels at once,
 * also while another thread loads or reloads; hk_call takes no lock,
 * allocates nothing and looks nothing up. A handle stays valid until its
 * context is destroyed, and the code it runs is never freed before then. */

typedef struct hk_context hk_context_t;
typedef struct hk_kernel hk_kernel_t;

typedef enum hk_tier {
  HK_TIER_AUTO = 0, /* options: jit at once, opt in the background */
  HK_TIER_INLINE,   /* a stdlib kernel, compiled into libhk */
  HK_TIER_JIT,      /* compiled by libtcc */
  HK_TIER_OPT,      /* compiled by the system compiler (-O3 -march=native) */
  HK_TIER_SO,       /* a prebuilt plugin (.so made by hk build) */
  HK_TIER_NONE      /* not runnable here (unloaded, or no CPU target) */
} hk_tier_t;

/* "auto", "inline", "jit", "opt", "so", "none"; "invalid" for anything
 * else. */
HK_API const char *hk_tier_name(hk_tier_t t);

/* Options flags. */
#define HK_ALLOW_UNSAFE_PERMISSIONS 1u /* load files and folders others can \
                                          write to or own */
#define HK_NO_CACHE 2u                 /* neither read nor write the disk cache */
#define HK_WATCH 4u                    /* watch the plugin folders (inotify) */

/* Receives background events: opt-tier results, reloads by the watcher,
 * problems that no call returned. Called from hk's threads (and from a
 * loading call's). It may call hk, hk_watch too (a watch stopped from the
 * watcher's own thread ends when the callback returns); hk_context_wait
 * there returns HK_EINVAL (it would wait for itself); it must not destroy
 * the context. */
typedef void (*hk_log_fn)(void *user, const char *message);

typedef struct hk_options {
  /* Plugin folders, NULL-terminated. NULL: those in HK_PLUGIN_PATH
   * (colon-separated); an empty list: none. */
  const char *const *plugin_dirs;
  /* NULL: HK_CACHE_DIR, else $XDG_CACHE_HOME/hk, else ~/.cache/hk. */
  const char *cache_dir;
  /* HK_TIER_AUTO (the default), HK_TIER_JIT (never run the system
   * compiler) or HK_TIER_OPT (load only once the opt tier is ready). */
  hk_tier_t tier;
  /* The system compiler: NULL for $HK_CC, else "cc". */
  const char *cc;
  unsigned flags; /* HK_ALLOW_UNSAFE_PERMISSIONS | HK_NO_CACHE | HK_WATCH */
  hk_log_fn log;  /* NULL: nothing is logged */
  void *log_user;
} hk_options_t;

/* The message of the last call on this thread that failed: what failed,
 * and for kernel files every problem as "PATH:LINE:COL: error: ...", one
 * per line. "" when none. Valid until this thread's next hk call.
 * Every entry point that returns a status sets it when it fails; a NULL
 * context, kernel, array or output pointer is HK_EINVAL (hk_kernel_info
 * gives NULL, hk_kernel_tier HK_TIER_NONE, hk_context_problems and
 * hk_kernel_note ""), but in hk_call and the typed stdlib functions,
 * whose hot path checks nothing. A call that succeeds leaves it as it
 * was (as errno): clear it first (hk_clear_error) to tell whether a call
 * that returns nothing failed, such as a typed 16-bit rows function that
 * could not get its scratch (it then runs no row):
 *
 *     uint16_t x[768] = {0}, y[768];  // a row of 768 f16 zeros
 *     hk_clear_error();
 *     hk_softmax_f16(x, y, 1, 768);
 *     if (*hk_last_error()) fprintf(stderr, "%s\n", hk_last_error());
 */
HK_API const char *hk_last_error(void);
/* Empties this thread's last error (hk_last_error() then gives ""). */
HK_API void hk_clear_error(void);

/* Creates a context (opts NULL: all defaults) and loads its plugin folders.
 * A plugin file that fails to load is skipped, the others are loaded, and
 * the problems are kept: hk_context_problems(). Returns HK_OK, or an error
 * when the context itself cannot be made (then *ctx is NULL). */
HK_API int hk_context_create(hk_context_t **ctx, const hk_options_t *opts);
/* Stops background work and frees the context, its kernels and their
 * code. No call may be running on its kernels. NULL is ignored. */
HK_API void hk_context_destroy(hk_context_t *ctx);
/* Problems found while loading plugin folders (at creation, by
 * hk_load_dir, hk_reload or the watcher), one per line; "" when none.
 * The string is this thread's copy: it stays valid until this thread
 * calls hk_context_problems again (or ends), whatever the watcher loads
 * meanwhile. */
HK_API const char *hk_context_problems(hk_context_t *ctx);

/* Loads every *.json and *.so file directly in dir. Files that fail are
 * skipped and reported (hk_last_error() and hk_context_problems()); the
 * others are loaded. Returns HK_OK when every file loaded. The folder is
 * remembered for hk_reload. */
HK_API int hk_load_dir(hk_context_t *ctx, const char *dir);
/* Loads one kernel file (.json) or prebuilt plugin (.so). */
HK_API int hk_load_file(hk_context_t *ctx, const char *path);
/* Loads a kernel description held in memory; name stands for the file in
 * messages ("<name>:LINE:COL: error: ..."). */
HK_API int hk_load_string(hk_context_t *ctx, const char *json, size_t len,
                          const char *name);
/* Scans the plugin folders again: new files are loaded, changed ones
 * compiled again (their kernels' handles switch to the new code when the
 * parameters are unchanged; otherwise the old handles stop working and new
 * ones take the name), removed ones unloaded. A changed file that fails
 * keeps its previous version loaded. */
HK_API int hk_reload(hk_context_t *ctx);
/* Starts (on != 0) or stops watching the plugin folders with inotify;
 * changes are reloaded as by hk_reload, problems go to the log. Starting
 * reloads once (what changed while no watch ran). A folder is watched by
 * its name: when it is removed or renamed away, its kernels are unloaded
 * and the name is looked for every 200 ms; a folder made there again (or
 * renamed there, or one that did not exist yet) is loaded and watched;
 * and every second the name is checked to still name the folder watched
 * (a parent renamed or a symlink in the path switched sends no event).
 * Stopping cancels a compile the watcher's reload is running (tier opt
 * forced) rather than waiting for it: that file keeps its old code until
 * the next hk_reload or watch. */
HK_API int hk_watch(hk_context_t *ctx, int on);
/* Waits until no opt-tier compile is pending in the background. */
HK_API int hk_context_wait(hk_context_t *ctx);

/* The kernel registered as name, or HK_ENOTFOUND: "add_f32", "saxpy_f32"
 * (a kernel with placeholders is registered once per type: NAME_TYPE). */
HK_API int hk_kernel_find(hk_context_t *ctx, const char *name,
                          hk_kernel_t **out);
/* Calls fn for every kernel, in name order, until fn returns non-zero
 * (which is returned). */
HK_API int hk_kernel_foreach(hk_context_t *ctx,
                             int (*fn)(hk_kernel_t *k, void *user),
                             void *user);
/* The kernel's description (name, kind, targets, parameters, origin,
 * source file); valid as long as the context. */
HK_API const hk_kernel_info_t *hk_kernel_info(const hk_kernel_t *k);
/* The tier its calls run on now. */
HK_API hk_tier_t hk_kernel_tier(const hk_kernel_t *k);
/* Why it is not (yet) on the best tier, e.g. "opt: compiling", "opt: no
 * system compiler: 'cc' was not found"; "" when nothing to say. Copied
 * into buf (size n), which is returned. */
HK_API const char *hk_kernel_note(const hk_kernel_t *k, char *buf, size_t n);
/* Waits until the kernel runs on tier opt (or so/inline), or opt has
 * failed for it (HK_ECOMPILE, HK_EUNSUPPORTED, with hk_last_error()). */
HK_API int hk_kernel_wait_opt(hk_kernel_t *k);

/* Runs the kernel on n elements. args holds one pointer per parameter, in
 * parameter order: a buffer's data, or a pointer to a scalar's value.
 * A rows kernel runs one row of n elements (its "one" buffers hold 1);
 * one with f16 or bf16 buffers stages each row in float copies in the
 * thread's scratch (HK_ENOMEM when it cannot be had: nothing runs; on the
 * GPU, in device memory the stream keeps).
 * Buffers must hold the elements the kernel's description says (n, 1 for
 * each of a reduction's results, or their len). Large elementwise and reduction calls
 * are shared among threads, as for the typed stdlib functions. Buffers in
 * device memory run the kernel on the GPU instead, and the call waits for
 * it (see "Backends" below). Returns HK_OK, or HK_ENOTFOUND when the
 * kernel was unloaded (its file removed, or changed incompatibly),
 * HK_EUNSUPPORTED when it has no code for the side its buffers are on,
 * HK_EINVAL when they are on both, HK_EDEVICE when the GPU failed to
 * launch or run it. */
HK_API int hk_call(const hk_kernel_t *k, size_t n, void *const *args);
/* The element count each parameter needs for a call with these scalars
 * and n (-1 for scalars): lens[0..nparams). A rows kernel's are those of
 * one row of n elements (1 for its "one" buffers). Returns HK_OK, HK_EINVAL when
 * a len expression is negative, or as hk_call. Scalars must be set in
 * args; buffer pointers may be NULL. */
HK_API int hk_kernel_lens(const hk_kernel_t *k, size_t n, void *const *args,
                          int64_t *lens);

/* ---- Backends: CPU and CUDA ---------------------------------------------
 *
 * Every kernel runs on the CPU; kernels with the cuda target also run on an
 * NVIDIA GPU. libhk reaches the CUDA driver (libcuda.so.1) and NVRTC
 * (libnvrtc.so) with dlopen when CUDA is first used, so it loads and works
 * on machines with no GPU, no driver and no toolkit: there every CUDA call
 * returns HK_EUNSUPPORTED with "no CUDA device: REASON" in hk_last_error(),
 * and the CPU backend is untouched.
 *
 * Where a call runs. hk_call() runs on the GPU when its buffers live in
 * device memory, on the CPU when they are host memory, and refuses a call
 * that mixes both (HK_EINVAL, naming the parameters). Device pointers are
 * recognised once the CUDA backend has started (any function below starts
 * it; call hk_cuda_init() first when passing device memory allocated
 * outside hk). Until then hk_call() checks nothing and runs on the CPU.
 * hk_call_on() picks the backend explicitly.
 *
 * On the GPU: stdlib kernels run code compiled by nvcc into libhk at build
 * time (sm_80, sm_90 and PTX for later GPUs); plugin kernels are compiled by
 * NVRTC for the device on their first GPU call (or hk_kernel_prepare()),
 * and cached in memory and on disk (the hk cache, keyed by the source, the
 * NVRTC version, the device's architecture and hk's ABI version). GPU
 * calls go to a CUDA stream: hk_call() and hk_call_on() wait for the
 * kernel to finish; hk_call_async() returns once it is queued.
 *
 * Device memory comes from a pool (size classes; freed blocks are kept for
 * reuse instead of returned to the driver; hk_pool_trim() returns them). */

typedef enum hk_backend {
  HK_BACKEND_AUTO = 0, /* where the buffers live */
  HK_BACKEND_CPU,
  HK_BACKEND_CUDA
} hk_backend_t;

/* "auto", "cpu", "cuda". */
HK_API const char *hk_backend_name(hk_backend_t b);

typedef enum hk_mem {
  HK_MEM_HOST = 1, /* ordinary or pinned host memory */
  HK_MEM_DEVICE    /* GPU memory (also managed memory) */
} hk_mem_t;

typedef struct hk_cuda_device_info_s {
  char name[256];       /* "NVIDIA H100 80GB HBM3" */
  int ordinal;          /* the device: HK_CUDA_DEVICE, default 0 */
  int major, minor;     /* compute capability */
  int sm_count;         /* multiprocessors */
  size_t total_memory;  /* bytes */
  int driver_version;   /* e.g. 13000 */
  int nvrtc_version;    /* e.g. 13000; 0 when NVRTC is not available */
} hk_cuda_device_info_t;

/* Starts the CUDA backend, once per process (thread-safe; later calls
 * return the first result): loads the driver, takes the device named by
 * HK_CUDA_DEVICE (default 0) and its primary context, and loads the
 * stdlib's GPU code. HK_OK, or HK_EUNSUPPORTED ("no CUDA device: ...").
 * Every function below calls it. */
HK_API int hk_cuda_init(void);
/* The device hk runs on; HK_EUNSUPPORTED as hk_cuda_init. */
HK_API int hk_cuda_device_info(hk_cuda_device_info_t *info);

/* A CUDA stream: GPU work queued on one stream runs in order. NULL stands
 * for hk's default stream wherever a stream is taken. */
typedef struct hk_stream hk_stream_t;
HK_API int hk_stream_create(hk_stream_t **s);
/* Waits for the stream's work, then frees it. NULL is ignored. */
HK_API void hk_stream_destroy(hk_stream_t *s);
/* Waits until all work queued on s has finished; HK_OK, or HK_EDEVICE
 * when a kernel or copy on it failed on the GPU (the CUDA context may be
 * unusable after a fault). */
HK_API int hk_stream_sync(hk_stream_t *s);

/* Device memory from the pool: at least bytes (0 is allowed), aligned to
 * 256 bytes. *ptr is a device address, usable as a kernel buffer. */
HK_API int hk_device_alloc(void **ptr, size_t bytes);
/* Returns ptr (from hk_device_alloc; NULL is ignored) to the pool. Work
 * queued on streams that uses it must have finished. HK_EINVAL for a
 * pointer the pool did not give. */
HK_API int hk_device_free(void *ptr);
/* Pinned (page-locked) host memory, which copies reach at full speed and
 * asynchronously; free it with hk_host_free. */
HK_API int hk_host_alloc(void **ptr, size_t bytes);
HK_API void hk_host_free(void *ptr);

typedef struct hk_pool_stats_s {
  size_t in_use_bytes;   /* held by callers (rounded to size classes) */
  size_t cached_bytes;   /* freed by callers, kept for reuse */
  uint64_t allocs;       /* hk_device_alloc calls that succeeded */
  uint64_t reuses;       /* ... of which were served from the cache */
  uint64_t driver_allocs;/* cuMemAlloc calls the pool made */
  uint64_t driver_frees; /* cuMemFree calls (trims, retries) */
} hk_pool_stats_t;

/* The pool's counters; HK_EUNSUPPORTED without CUDA. */
HK_API int hk_pool_stats(hk_pool_stats_t *st);
/* Returns every cached (free) block to the driver. */
HK_API int hk_pool_trim(void);

/* Copies between host and device memory. s NULL: synchronous (returns
 * when the copy is done). Otherwise queued on s: from or to pinned memory
 * (hk_host_alloc) the call returns at once; ordinary host memory is staged
 * through pinned buffers and the call returns when the host side is done
 * (so src may be reused at once for copies to the device). HK_OK;
 * HK_EINVAL when the driver refuses a pointer or size (memory it does not
 * know as device memory); HK_EDEVICE when the GPU failed the copy. */
HK_API int hk_memcpy_to_device(void *dst, const void *src, size_t bytes,
                               hk_stream_t *s);
HK_API int hk_memcpy_to_host(void *dst, const void *src, size_t bytes,
                             hk_stream_t *s);
/* Where p points: HK_MEM_DEVICE for memory of the CUDA device, else
 * HK_MEM_HOST (also when the CUDA backend has not started). */
HK_API hk_mem_t hk_mem_where(const void *p);

/* A buffer: bytes of host or device memory, owned by hk. Host buffers are
 * pinned when CUDA is available, else ordinary memory; device buffers come
 * from the pool. */
typedef struct hk_buffer hk_buffer_t;
HK_API int hk_buffer_create(hk_buffer_t **b, hk_mem_t where, size_t bytes);
/* Frees b (NULL is ignored); queued work using it must have finished. */
HK_API void hk_buffer_destroy(hk_buffer_t *b);
/* The data pointer: what goes into a kernel call's args. */
HK_API void *hk_buffer_data(const hk_buffer_t *b);
HK_API size_t hk_buffer_size(const hk_buffer_t *b);
HK_API hk_mem_t hk_buffer_where(const hk_buffer_t *b);
/* Copies bytes from host memory src into b at offset, or out of b at
 * offset into host memory dst; s as for hk_memcpy_to_device. HK_EINVAL
 * when the range is outside the buffer. */
HK_API int hk_buffer_copy_in(hk_buffer_t *b, size_t offset, const void *src,
                             size_t bytes, hk_stream_t *s);
HK_API int hk_buffer_copy_out(const hk_buffer_t *b, size_t offset, void *dst,
                              size_t bytes, hk_stream_t *s);

/* hk_call on an explicit backend: HK_BACKEND_CPU runs the CPU code (the
 * buffers must be host memory), HK_BACKEND_CUDA the GPU code (the buffers
 * must be device memory; the call waits for the kernel), HK_BACKEND_AUTO
 * is hk_call. A backend the kernel has no code for, or that this machine
 * lacks, is HK_EUNSUPPORTED with the reason; buffers on the wrong side are
 * HK_EINVAL; a launch the GPU refused or a kernel that failed on it (an
 * illegal address, a trap) is HK_EDEVICE. */
HK_API int hk_call_on(const hk_kernel_t *k, hk_backend_t b, size_t n,
                      void *const *args);
/* Queues the kernel on the GPU on stream s (NULL: the default) and
 * returns: the buffers must be device memory. Scalars are read before it
 * returns. A launch the GPU refused is HK_EDEVICE; errors the kernel meets
 * while it runs are reported by hk_stream_sync (HK_EDEVICE). */
HK_API int hk_call_async(const hk_kernel_t *k, hk_stream_t *s, size_t n,
                         void *const *args);
/* HK_TARGET_CPU | HK_TARGET_CUDA: the backends k has code for on this
 * machine now (CUDA: the kernel targets cuda, a device is there, and its
 * GPU code is loaded or can be compiled). */
HK_API unsigned hk_kernel_backends(const hk_kernel_t *k);
/* Makes k ready on backend b ahead of its first call: for CUDA, compiles
 * (NVRTC) or loads from the disk cache its GPU code. HK_OK, or the error
 * (HK_ECOMPILE with the kernel file's PATH:LINE:COL lines, HK_EUNSUPPORTED
 * without a device or a cuda target). */
HK_API int hk_kernel_prepare(hk_kernel_t *k, hk_backend_t b);

/* ---- Arrays: shapes, strides, broadcasting, axes -------------------------
 *
 * hk_call() sees flat buffers of n elements. hk_call_arrays() takes one
 * array descriptor per parameter instead, NumPy style:
 *
 *   elementwise  the in and inout arrays broadcast together by NumPy's
 *                rules ((3,4) + (4,), (B,T,C) * (C,), (N,1) - (1,M)); every
 *                out and inout array must have the broadcast shape. Any in
 *                parameter may be given a 0-d array (one value for all).
 *                Inside the body, i is the element's index in C order over
 *                the broadcast shape and n the broadcast shape's size.
 *   reduction    the in arrays broadcast together; opts->axes (NULL: all)
 *                are reduced, the others kept; out and inout arrays have
 *                the kept shape (with the reduced axes as 1 when
 *                opts->keepdims). In map, i is the index within the
 *                reduced elements (C order over the reduced axes) and n in
 *                finalize their count. Each output element is reduced by
 *                one fixed tree that depends on the shape alone: results
 *                are identical for every thread count, and equal the flat
 *                hk_call() on a contiguous copy of that row.
 *   rows         the last axis is the row (or the one opts->axes names):
 *                rows = the product of the other axes; "full" params have
 *                the shape (..., n), "one" params (...) or (..., 1),
 *                "shared" params (n).
 *   raw          every buffer contiguous; n as for hk_call().
 * Scalars are 0-d arrays whose data points to the value. Strides count
 * ELEMENTS (as DLPack's do; NumPy's count bytes): they may be 0 (a
 * broadcast axis) or negative (a reversed view). Non-contiguous arrays give
 * the same results as their contiguous copies. An out or inout array may
 * not overlap another parameter's array unless, for an elementwise or rows
 * kernel, it is exactly the same array (in place: the same data, dtype,
 * shape and strides; a reduction's results and a raw or grid kernel's
 * buffers share nothing: a body may read one's elements after writing
 * another's, and hk_call is there for a body written to run in place); arrays whose
 * spans meet but that share no byte are allowed (interleaved views, x[0::2]
 * and x[1::2]; a[:, :4] and a[:, 4:]): decided exactly, as NumPy's
 * shares_memory, within a bound on the search (200,000 steps) past which
 * the call is refused. Every array's dtype must be its parameter's type: no
 * conversion happens (hk_kernel_select() picks the instance for the
 * arrays' dtypes).
 *
 * When every array is contiguous and of the same shape, hk_call_arrays()
 * is hk_call() after a few checks.
 *
 *     hk_context_t *ctx;
 *     if (hk_context_create(&ctx, NULL) != HK_OK) return 1;
 *     float x[2][3] = {{1, 2, 3}, {4, 5, 6}}, b[3] = {10, 20, 30}, y[2][3];
 *     hk_array_t args[3];
 *     hk_array_init(&args[0], x, HK_F32, 2, (int64_t[]){2, 3});
 *     hk_array_init(&args[1], b, HK_F32, 1, (int64_t[]){3});
 *     hk_array_init(&args[2], y, HK_F32, 2, (int64_t[]){2, 3});
 *     hk_kernel_t *add;
 *     hk_kernel_select(ctx, "add", args, 3, &add);   // add_f32
 *     hk_call_arrays(add, args, NULL);               // y = x + b, per row
 *     float sums[2];                                  // y summed per row
 *     hk_array_t r[2] = {args[2]};
 *     hk_array_init(&r[1], sums, HK_F32, 1, (int64_t[]){2});
 *     hk_call_opts_t last = {.axes = (int[]){-1}, .naxes = 1};
 *     hk_kernel_t *sum;
 *     hk_kernel_select(ctx, "sum", r, 2, &sum);       // sum_f32
 *     hk_call_arrays(sum, r, &last);                  // sums = {66, 75}
 *     hk_context_destroy(ctx);
 *     if (y[1][2] != 36 || sums[0] != 66 || sums[1] != 75) return 1;
 */

#define HK_MAX_DIMS 8

typedef struct hk_array {
  void *data;       /* the element at index (0, ..., 0) */
  hk_dtype_t dtype;
  int ndim;         /* 0 (one value) to HK_MAX_DIMS */
  int64_t shape[HK_MAX_DIMS];
  int64_t strides[HK_MAX_DIMS]; /* in elements, per axis */
  /* Optional bounds: when nbytes is not 0, every element the shape and
   * strides reach must lie in [base, base + nbytes), else the call is
   * refused (HK_EINVAL). hk_array_init sets them. */
  const void *base;
  size_t nbytes;
} hk_array_t;

/* Fills a: a C-contiguous array of ndim axes (shape may be NULL when ndim
 * is 0), with its bounds. HK_EINVAL for ndim outside [0, HK_MAX_DIMS], a
 * negative length, an invalid dtype or a size that overflows. */
HK_API int hk_array_init(hk_array_t *a, void *data, hk_dtype_t dtype,
                         int ndim, const int64_t *shape);
/* Number of elements (the product of the shape; 1 for 0-d). */
HK_API int64_t hk_array_size(const hk_array_t *a);

typedef struct hk_call_opts {
  /* Reductions: the axes reduced (negative ones count from the end), each
   * at most once; NULL (or naxes 0 with axes NULL) reduces every axis.
   * Rows kernels: one axis, the one the rows run along (NULL: the last);
   * a "one" array then has the lead's shape without it, or with it as 1.
   * Other kinds refuse axes, and every kind but reductions keepdims
   * (HK_EINVAL). */
  const int *axes;
  int naxes;
  int keepdims; /* keep reduced axes as length 1 in the outputs' shape */
  hk_backend_t backend; /* as hk_call_on(); HK_BACKEND_AUTO by default */
} hk_call_opts_t;

/* Runs k over arrays: args holds one descriptor per parameter, in
 * parameter order; opts may be NULL. HK_OK, or HK_EINVAL (with
 * hk_last_error() naming the parameter: a dtype that is not the
 * parameter's, shapes that do not broadcast, a bad axis, an out array of
 * the wrong shape, an array reaching outside its bounds, an out array
 * overlapping another), or as hk_call(). On the GPU (device arrays, or
 * opts->backend HK_BACKEND_CUDA) every array must be device memory, and
 * everything above works as on the CPU. The stdlib's elementwise kernels
 * that call no math function (arithmetic, comparisons, where, casts,
 * relu ...) read and write strided, reversed and broadcast arrays where
 * they are, through their GPU code's N-D entry (an out array is written
 * element by element, what lies between its elements untouched; an in
 * array read across its rows, a transpose, is first copied into a
 * temporary run by the tiled copy below, which reads it coalesced).
 * Other kernels (math bodies, plugin kernels: an N-D entry compiles the
 * body five more times), and other kinds, take contiguous
 * runs: an array that is not one in the call's layout (strided, broadcast,
 * or reduced over axes that are not the last ones) is first copied into a
 * temporary run in device memory by the stdlib's GPU copy kernels (so
 * libhk must have been built with nvcc: else HK_EUNSUPPORTED), and
 * written outputs are copied back; a copy merges the axes that continue
 * each other first, and moves a transposed view (unit stride on another
 * axis than the last) in tiles through shared memory, so that it reads
 * and writes whole runs. Axis reductions run one warp (32 GPU
 * threads) per row when rows are short and many (rows of m <= 4096
 * elements, at least m rows), else one block per row for rows up to 16384
 * elements, several per row beyond, and a merge block per row; rows
 * kernels one GPU thread per row, or, those with a "cuda" body (the
 * stdlib's softmax, log_softmax and layernorm), a block of threads per row
 * (schemas/README.md, 6.4), those with f16 or bf16 buffers through float
 * copies of each row, as on the CPU. Results equal the CPU's where the operation is
 * exact (elementwise bodies, min, max, argmax, integer sums) or its order
 * fixed (the stdlib's rows kernels: the same bits as on the CPU);
 * floating-point reductions may differ by rounding (another tree), the
 * same on every GPU (the way is chosen by the shape only). */
HK_API int hk_call_arrays(const hk_kernel_t *k, const hk_array_t *args,
                          const hk_call_opts_t *opts);
/* The shape parameter `param` (an out or inout) must have for a call of k
 * with these arrays (only the in arrays and scalars are looked at, and a
 * raw or grid kernel's first inout array) and opts: *ndim and
 * shape[0..*ndim). HK_OK or HK_EINVAL as hk_call_arrays(). A raw or grid
 * kernel's buffers are flat (any shape of the right element count): the
 * shape given is the first in or inout array's when the parameter has no
 * len (n elements), else its len read as one axis per factor when the len
 * is a product of integer literals, integer scalars and n ("M * N":
 * (M, N); "B * T * 3 * C": (B, T, 3, C)), else (len,). */
HK_API int hk_call_out_shape(const hk_kernel_t *k, const hk_array_t *args,
                             const hk_call_opts_t *opts, int param, int *ndim,
                             int64_t *shape);
/* Raw and grid kernels: the value an in or inout array's shape gives the
 * integer scalar `param`, so that a caller may leave it out. A buffer
 * whose len is a product as above ("rows * cols") and whose array has one
 * axis per factor gives each scalar factor its axis's length (x of shape
 * (3, 4): rows = 3, cols = 4). Only the in and inout arrays of args are
 * read. HK_OK with *value; HK_ENOTFOUND when no in or inout buffer's len
 * names the scalar (its value must be given); HK_EINVAL when two axes give
 * different values (the message names both), or when the buffers whose
 * lens name it all have another number of axes (the message names one,
 * and how many it needs). */
HK_API int hk_kernel_scalar_from_shapes(const hk_kernel_t *k,
                                        const hk_array_t *args, int param,
                                        int64_t *value);

/* Dispatch by dtype: the kernel named name when the dtypes of
 * args[0..nargs) (one per parameter; scalars too) are its parameter types,
 * else the instance of the kernel named name (registered as name_TYPE...)
 * whose parameter types they are (a plugin kernel named add that takes f64
 * does not hide the stdlib's add_f32 from f32 arrays). Elements are
 * never converted: mixed dtypes that no instance takes are HK_EINVAL
 * naming the parameter and the instances there are; an unknown name is
 * HK_ENOTFOUND. */
HK_API int hk_kernel_select(hk_context_t *ctx, const char *name,
                            const hk_array_t *args, int nargs,
                            hk_kernel_t **out);

/* ---- CPU threads ------------------------------------------------------- */

/* Elementwise and reduction kernels over large arrays run on a pool of
 * threads, created on first use and sized to the CPUs this process may run
 * on, or to the environment variable HK_THREADS when it is set (a whole
 * number from 1 to 256; any other value is ignored here, and refused by
 * the hk command).
 *
 * hk_set_threads(n) sets the number of threads that share a call (the caller
 * counts as one); n = 1 runs everything on the calling thread, n = 0 goes back
 * to the default. It returns HK_OK, or HK_EINVAL for n < 0 or n > 256.
 * Results do not depend on the thread count: elementwise results are
 * identical, and so are reductions (their blocks are fixed by n alone). */
HK_API int hk_set_threads(int n);
/* The number of threads a large call is shared among (at least 1). */
HK_API int hk_get_threads(void);

/* Stops every compile of this process, for good: the compilers of tier opt
 * and of a prebuilt build run in process groups of their own, so a
 * terminal's Ctrl-C does not reach them, and a program that dies by a
 * signal leaves them running (minutes for a big file) and their build
 * folders behind (removed from the cache folder an hour later). Call it
 * from the program's SIGINT or SIGTERM handler before it ends (it is
 * async-signal-safe): it kills each running compiler's group, and later
 * compiles fail at once ("interrupted"; kernels stay on tier jit, a forced
 * tier opt load fails). Returns the number of compilers killed. The hk
 * command does this for its own signals. */
HK_API int hk_stop_compilers(void);

/* ---- The stdlib's instruction set ---------------------------------------
 *
 * On x86-64 libhk holds the stdlib built for several instruction sets and
 * binds every hk_NAME, when it is loaded, to the best one this CPU runs;
 * each gives the same results (a NaN's sign and payload aside). This names
 * the one in use: "baseline", "x86-64-v3", "x86-64-v4" or "x86-64-v4+icl"
 * (v4 with Ice Lake's AVX-512 additions). "baseline" on other CPUs and in
 * builds with -DHK_STDLIB_ISA=OFF. */
HK_API const char *hk_stdlib_isa(void);

#ifdef __cplusplus
}
#endif

/* The typed stdlib functions. The code generator that writes this header
 * is itself built with HK_NO_STDLIB_HEADER. */
#ifndef HK_NO_STDLIB_HEADER
#include "hk_stdlib.h"
#endif

#endif /* HK_H */
