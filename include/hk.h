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
 *     float a[1000], b[1000], out[1000];
 *     hk_add_f32(a, b, out, 1000);          // out[i] = a[i] + b[i]
 *     float s;
 *     hk_sum_f32(a, &s, 1000);              // s = a[0] + ... + a[999]
 *
 * Every typed stdlib function takes its parameters in the order of its kernel
 * file, buffers as pointers (const for inputs) and scalars by value, then the
 * element count n. Buffers must not overlap, with one supported exception: an
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

#define HK_OK 0
#define HK_EINVAL (-1)       /* a bad argument */
#define HK_ENOMEM (-2)       /* out of memory */
#define HK_ENOTFOUND (-3)    /* no such kernel, file or parameter */
#define HK_ESCHEMA (-4)      /* a kernel description breaks the format */
#define HK_EIO (-5)          /* a file could not be read or written */
#define HK_ECOMPILE (-6)     /* a kernel body failed to compile */
#define HK_EUNSUPPORTED (-7) /* not available in this build or on this machine */
#define HK_EINTERNAL (-8)    /* a bug in hk: please report it */

/* Words for a status code ("invalid argument", ...); never NULL. */
HK_API const char *hk_strerror(int code);

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
  HK_U64
} hk_dtype_t;

#define HK_DTYPE_COUNT 11 /* one past the last hk_dtype_t value */

/* "f32", "i64", ...; "invalid" for anything else. */
HK_API const char *hk_dtype_name(hk_dtype_t t);
/* The dtype named by "f32", "i64", ...; HK_DTYPE_INVALID if none. */
HK_API hk_dtype_t hk_dtype_from_name(const char *name);
/* Size of one element in bytes; 0 for HK_DTYPE_INVALID. */
HK_API size_t hk_dtype_size(hk_dtype_t t);

typedef enum hk_role {
  HK_ROLE_IN,    /* read-only buffer */
  HK_ROLE_OUT,   /* write-only buffer */
  HK_ROLE_INOUT, /* read-write buffer */
  HK_ROLE_SCALAR /* a value passed by value */
} hk_role_t;

typedef enum hk_kind {
  HK_KIND_ELEMENTWISE,
  HK_KIND_REDUCTION,
  HK_KIND_RAW
} hk_kind_t;

/* Target bits. */
#define HK_TARGET_CPU 1u
#define HK_TARGET_CUDA 2u

HK_API const char *hk_role_name(hk_role_t r);
HK_API const char *hk_kind_name(hk_kind_t k);

/* ---- Kernel descriptions ------------------------------------------------ */

typedef struct hk_param_info {
  const char *name;
  hk_dtype_t dtype;
  hk_role_t role;
  /* Raw kernels: the C expression (over scalars and n) giving this buffer's
   * element count, or NULL when it is n. Elementwise buffers have n
   * elements; a reduction's in buffers n and its out buffer 1. */
  const char *len;
  const char *doc; /* "" when none */
} hk_param_info_t;

typedef struct hk_kernel_info {
  const char *name; /* registered name: "add_f32" */
  const char *doc;  /* one line; "" when none */
  hk_kind_t kind;
  unsigned targets; /* HK_TARGET_* bits */
  int nparams;
  const hk_param_info_t *params; /* in calling order */
  const char *origin;            /* "stdlib", "json" or "so" */
  const char *source;            /* the kernel file it was described in */
} hk_kernel_info_t;

/* ---- CPU threads ------------------------------------------------------- */

/* Elementwise and reduction kernels over large arrays run on a pool of
 * threads, created on first use and sized to the CPUs this process may run
 * on, or to the environment variable HK_THREADS when it is set.
 *
 * hk_set_threads(n) sets the number of threads that share a call (the caller
 * counts as one); n = 1 runs everything on the calling thread, n = 0 goes back
 * to the default. It returns HK_OK, or HK_EINVAL for n < 0 or n > 256.
 * Results do not depend on the thread count: elementwise results are
 * identical, and so are reductions (their blocks are fixed by n alone). */
HK_API int hk_set_threads(int n);
/* The number of threads a large call is shared among (at least 1). */
HK_API int hk_get_threads(void);

#ifdef __cplusplus
}
#endif

/* The typed stdlib functions. The code generator that writes this header
 * is itself built with HK_NO_STDLIB_HEADER. */
#ifndef HK_NO_STDLIB_HEADER
#include "hk_stdlib.h"
#endif

#endif /* HK_H */
