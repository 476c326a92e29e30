/* cuda.h — the CUDA backend (internal): the device, streams, the device
 * memory pool, and GPU entries of kernels.
 *
 * Process-wide state (documented global): one device per process, chosen by
 * HK_CUDA_DEVICE (default 0), its primary context, hk's default stream and
 * the stdlib's GPU module, all made once by hk_cuda_init(). Kernel handles
 * cache their GPU entry (hk_cuda_entry_t) the first time they run on the
 * GPU; plugin modules own the CUDA module NVRTC made for them.
 */
#ifndef HK_CUDA_H
#define HK_CUDA_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "cuda_api.h"
#include "hk.h"

/* The GPU code of one kernel instance, ready to launch. Immutable. */
typedef struct hk_cuda_entry {
  hk_kind_t kind;
  CUfunction fn;    /* elementwise, raw; a reduction's per-block part */
  CUfunction merge; /* reductions: combines the parts, finalizes */
  uint32_t acc_size;
  const hk_kernel_info_t *info; /* parameters, for the launch */
  int out_index;                /* reductions: the out parameter */
  unsigned vec_lanes;           /* elementwise: elements per thread step */
} hk_cuda_entry_t;

struct hk_stream {
  CUstream s;
  pthread_mutex_t lock;  /* held while a multi-launch sequence or staged
                            copy is queued: they use the buffers below */
  CUdeviceptr scratch;   /* reduction partials */
  void *staging[2];      /* pinned buffers for pageable copies */
  CUevent staged[2];     /* when each staging buffer is free again */
};

typedef struct hk_cuda_state {
  hk_cuda_api_t api;
  CUdevice dev;
  CUcontext ctx;
  hk_cuda_device_info_t info;
  CUmodule stdlib;          /* NULL: libhk was built without nvcc */
  char stdlib_note[512];    /* why there is no stdlib module */
  struct hk_stream dflt;    /* hk's default stream */
} hk_cuda_state_t;

/* 1 once hk_cuda_init() has succeeded; from then on hk_call checks where
 * buffers live. */
HK_INTERNAL extern _Atomic int hk__cuda_started;
HK_INTERNAL extern hk_cuda_state_t hk__cuda;

/* hk_cuda_init() for internal callers: HK_OK, or HK_EUNSUPPORTED with the
 * message set. Also makes the context current on this thread. */
HK_INTERNAL int hk__cuda_ready(void);
/* Words for a driver error: "CUDA_ERROR_X: description". */
HK_INTERNAL const char *hk__cuda_strerror(CUresult r, char *buf, size_t n);
/* The stream for s (NULL: the default). */
HK_INTERNAL struct hk_stream *hk__stream(hk_stream_t *s);

/* Where each of ptrs[0..n) lives (NULL counts as host); the backend must
 * be ready. For pool blocks without a driver call. */
HK_INTERNAL void hk__mem_where_n(const void *const *ptrs, int n,
                                 hk_mem_t *where);

/* The embedded stdlib fatbin (cuda_fatbin.c), NULL when not built. */
HK_INTERNAL extern const unsigned char *const hk__cuda_stdlib_fatbin;

/* NVRTC, loaded on first use. 0, or -1 with the reason in why. */
HK_INTERNAL int hk__nvrtc(const hk_nvrtc_api_t **api, int *version,
                          char *why, size_t n);

/* Compiles src, the CUDA emitted from f with line map map, with NVRTC for
 * arch ("sm_90"). Returns the cubin (malloc'ed, *len bytes), or NULL with
 * the problems in d: compile errors located in f's kernel file. Needs no
 * device. */
struct hkc_file;
struct hkc_linemap;
struct hku_diags;
HK_INTERNAL char *hk__nvrtc_compile(const struct hkc_file *f,
                                   const hk_nvrtc_api_t *nv, const char *src,
                                   const struct hkc_linemap *map,
                                   const char *arch, size_t *len,
                                   struct hku_diags *d);

/* Launches e on stream st over n elements with args in parameter order
 * (device pointers, pointers to scalars). Returns HK_OK or an error. */
HK_INTERNAL int hk__cuda_launch(const hk_cuda_entry_t *e, struct hk_stream *st,
                                size_t n, void *const *args);

#endif
