/* cuda.h — the CUDA backend as the rest of the core sees it: the device
 * state, streams, GPU entries of kernels, and the NVRTC loader.
 *
 * The backend lives in core/cuda/ (one concern per file, after OCCA's
 * modes/cuda/): api.c (the driver and NVRTC through dlopen), device.c (the
 * device, once per process), stream.c, mempool.c (hk_device_alloc and the
 * hk_pool_* calls), memory.c (pinned memory, where memory lives, copies,
 * buffers), launch.c (GPU entries and launches), call.c (where a call runs:
 * CPU or GPU), fatbin.c (the stdlib's embedded GPU code). Their shared
 * contract is core/cuda/backend.h; this header is what registry.h,
 * context.c and the module builder need.
 *
 * Process-wide state (documented global): one device per process, chosen by
 * HK_CUDA_DEVICE (default 0), its primary context, hk's default stream and
 * the stdlib's GPU module, all made once by hk_cuda_init(). Kernel handles
 * cache their GPU entry (hk_cuda_entry_t) the first time they run on the
 * GPU; plugin modules own the CUDA module NVRTC made for them.
 *
 * Errors follow common/internal.h; a driver status (CUresult, positive) is
 * turned into an HK_E* code where it leaves the backend.
 */
#ifndef HK_CUDA_H
#define HK_CUDA_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "cuda/api.h"
#include "diag.h"
#include "hk.h"

/* The GPU code of one kernel instance, ready to launch. Immutable. */
typedef struct hk_cuda_entry {
  hk_kind_t kind;
  CUfunction fn;    /* elementwise, raw; a reduction's per-block part */
  CUfunction merge; /* reductions: combines the parts, finalizes */
  CUfunction wrow;  /* reductions: short rows, a warp a row (NULL: none) */
  CUfunction crow;  /* rows kernels with a "cuda" body: a block a row
                       (HK_ABI_CUDA_ROWS_COOP; NULL: none, a thread a row) */
  CUfunction noalias; /* grid kernels without loops: HK_ABI_CUDA_NOALIAS, for
                         calls whose written buffers overlap no other; NULL
                         when the code has none */
  CUfunction nd;    /* elementwise: the N-D entry (abi.h), NULL when the
                       GPU code has none */
  const hk_kernel_info_t *info; /* parameters, for the launch */
  int out_index;                /* reductions: the out parameter */
  unsigned vec_lanes;           /* elementwise: elements per thread step */
  int staged; /* rows: the f16 and bf16 buffers, whose float copies of a
                 row the launch's scratch holds (codegen/emit_rows.c) */
} hk_cuda_entry_t;

/* A plugin module's GPU code: one CUDA module, an entry per instance (fn
 * NULL for instances without the cuda target). */
struct hk_cuda_module {
  CUmodule mod;
  hk_cuda_entry_t *entries;
};

struct hk_stream {
  CUstream s;
  pthread_mutex_t lock;  /* held while a multi-launch sequence or staged
                            copy is queued: they use the buffers below */
  CUdeviceptr scratch;   /* reduction partials */
  CUdeviceptr rows_scratch; /* staged rows' float copies (launch.c), */
  size_t rows_scratch_bytes; /* ... this long; 0 until the first needs it */
  void *staging[2];      /* pinned buffers for pageable copies */
  CUevent staged[2];     /* when each staging buffer is free again */
};

typedef struct hk_cuda_state {
  hk_cuda_api_t api;
  CUdevice dev;
  CUcontext ctx;
  hk_cuda_device_info_t info;
  CUmodule stdlib;          /* NULL: no GPU code for the stdlib, */
  CUresult stdlib_rc;       /* ... as the driver refused it, or (0) as
                               libhk was built without nvcc */
  CUfunction copy[4];       /* the stdlib's strided copies, elements of
                               1, 2, 4, 8 bytes (NULL without it) */
  CUfunction copy32[4];     /* ... of at most INT32_MAX elements, and */
  CUfunction copyt[4];      /* ... transposing (NULL: copy[] serves) */
  struct hk_stream dflt;    /* hk's default stream */
} hk_cuda_state_t;

/* 1 once hk_cuda_init() has succeeded; from then on hk_call checks where
 * buffers live. */
HK_INTERNAL extern _Atomic int hk__cuda_started;
HK_INTERNAL extern hk_cuda_state_t hk__cuda;

/* hk_cuda_init() for internal callers (device.c): HK_OK, or
 * HK_EUNSUPPORTED with the thread's last error set. Also makes the context
 * current on this thread. */
HK_INTERNAL int hk__cuda_ready(void);
/* Words for a driver error, "CUDA_ERROR_X: description", written into buf
 * (n bytes; HK_CUDA_ERRLEN is enough) and returned. */
#define HK_CUDA_ERRLEN 256
HK_INTERNAL const char *hk__cuda_strerror(CUresult r, char *buf, size_t n);

/* The words of d's first error (the backend's diagnostics carry no path),
 * "out of memory" when d lost one to a failed allocation. */
static inline const char *hk__cuda_why(const hku_diags *d) {
  return hku_diags_words(d, "unknown error");
}

/* NVRTC, loaded on first use (device.c; needs no device): *api and
 * *version (major * 1000 + minor * 10). HK_OK, or HK_EUNSUPPORTED with the
 * reason in d (the same reason on every call). Thread-safe. */
HK_INTERNAL int hk__nvrtc_load(const hk_nvrtc_api_t **api, int *version,
                               hku_diags *d);
/* Elements per thread step of info's GPU code: hk_abi_cuda_lanes() of its
 * widest buffer element for elementwise kernels, else 1. (launch.c) */
HK_INTERNAL unsigned hk__cuda_lanes(const hk_kernel_info_t *info);
/* Fills *e with the entry of info's instance in mod: its functions
 * HK_ABI_CUDA_PART and HK_ABI_CUDA_MERGE for a reduction (and
 * HK_ABI_CUDA_ROWS_WARP where mod has it: e->wrow NULL where not), else
 * HK_ABI_CUDA_KERNEL, followed by the instance's name; for an elementwise
 * one also HK_ABI_CUDA_ND where mod has it (else e->nd NULL), for a grid
 * kernel HK_ABI_CUDA_NOALIAS (else e->noalias NULL), for a rows kernel
 * HK_ABI_CUDA_ROWS_COOP (else e->crow NULL). HK_OK, or
 * HK_EUNSUPPORTED with the reason in d: too many parameters for a launch,
 * or mod lacks a function. The backend must be ready. (launch.c) */
HK_INTERNAL int hk__cuda_entry_make(CUmodule mod,
                                    const hk_kernel_info_t *info,
                                    hk_cuda_entry_t *e, hku_diags *d);

#endif
