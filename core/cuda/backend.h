/* backend.h — the contract shared by the files of the CUDA backend (the .c
 * files of core/cuda/), as libuv's src/unix/internal.h is for its backend.
 *
 * (Not named internal.h: core/cuda/ files include common/internal.h by that
 * name, and a quoted include looks in the including file's folder first.)
 *
 * Errors: a fallible function returns HK_OK or a negative HK_E* code (the
 * convention of common/internal.h). A static helper that only chains
 * driver calls (staging, stream setup) returns the driver's CUresult, and
 * the function that called it turns it into a code (hk__cuda_code,
 * hk__cuda_fail). The public functions of hk.h and the helpers that only
 * they call set the thread's last error with hk__fail.
 */
#ifndef HK_CUDA_BACKEND_H
#define HK_CUDA_BACKEND_H

#include <errno.h>
#include <stddef.h>

#include "abi.h"
#include "cuda.h"

/* Kernel arguments a launch passes on the stack: parameters and the
 * launcher's own (partials, count, n; n, rows). */
#define HK_CUDA_MAX_ARGS 64
/* The launcher's arguments beyond the kernel's parameters, at most. */
#define HK_CUDA_EXTRA_ARGS 4
/* A reduction's per-block parts: at most this many blocks, each leaving
 * one accumulator of at most HK_REDUCE_ACC_MAX bytes in the stream's
 * scratch buffer. */
#define HK_CUDA_MAX_PARTS 1024u
#define HK_CUDA_SCRATCH_BYTES ((size_t)HK_CUDA_MAX_PARTS * HK_REDUCE_ACC_MAX)

/* A strided view for the stdlib's copy kernels (struct hk_cuda_strided in
 * the generated CUDA, codegen/emit_cuda.c: the same layout). magic and
 * shift divide by shape[d] in the 32-bit kernels (abi.h,
 * hk_abi_cuda_divider with 32 bits; launch.c). */
typedef struct hk_cuda_strided {
  long long nd;
  long long shape[HK_MAX_DIMS];
  long long st[HK_MAX_DIMS]; /* in elements */
  unsigned int magic[HK_MAX_DIMS];
  unsigned int shift[HK_MAX_DIMS];
} hk_cuda_strided_t;

/* Runs reduction entry e over rows rows of m contiguous elements on the
 * default stream (results at args[result] + row) and waits for it: by
 * how (HK_ROWS_*, registry.h), a warp per row (e->wrow) or part blocks
 * per row by m and one merge block per row. HK_EUNSUPPORTED where how is
 * HK_ROWS_BY_WARP and e has no wrow. (launch.c) */
HK_INTERNAL int hk__cuda_launch_reduce_rows(const hk_cuda_entry_t *e,
                                            size_t rows, size_t m,
                                            void *const *args, int how);

/* Whether mutex m is locked, for asserting "m held" (HK_ASSERT only: a
 * free mutex is left locked, and the assertion then fails). For the
 * backend's own mutexes, which are not recursive (a recursive one is
 * relocked by its holder). */
static inline int hk__cuda_locked(pthread_mutex_t *m) {
  return pthread_mutex_trylock(m) == EBUSY;
}

/* ---- device.c ---- */

/* The code for a driver error r where hk's request was well-formed:
 * HK_ENOMEM for CUDA_ERROR_OUT_OF_MEMORY, HK_EINVAL for
 * CUDA_ERROR_INVALID_VALUE (a pointer or size the caller gave), else
 * HK_EDEVICE (a fault, a lost device, a context made unusable). */
HK_INTERNAL int hk__cuda_code(CUresult r);
/* Sets the thread's last error to "WHAT: <driver error r>" and returns
 * code. */
HK_INTERNAL int hk__cuda_fail(int code, CUresult r, const char *what);
/* Why the stdlib has no GPU code (hk__cuda.stdlib is NULL), for kernel
 * name: HK_EUNSUPPORTED with the last error set. */
HK_INTERNAL int hk__cuda_stdlib_missing(const char *name);

/* ---- stream.c ---- */

/* Creates st's CUDA stream and its reduction scratch buffer (the staging
 * buffers come on first use). HK_OK, or the driver error's code with its
 * words in d; st must then be released. The device must be current. */
HK_INTERNAL int hk__stream_init(struct hk_stream *st, hku_diags *d);
/* Waits for st's work and frees everything hk__stream_init or staging
 * made (also after a failed init). */
HK_INTERNAL void hk__stream_release(struct hk_stream *st);
/* The stream for s (NULL: the default). */
HK_INTERNAL struct hk_stream *hk__stream(hk_stream_t *s);

/* ---- mempool.c ---- */

/* Marks where[i] HK_MEM_DEVICE for each ptrs[i] that is a block the pool
 * handed out (others are left as they are), under the pool's lock once for
 * all of them. Returns how many it marked. */
HK_INTERNAL int hk__pool_where_n(const void *const *ptrs, int n,
                                 hk_mem_t *where);

/* ---- memory.c ---- */

/* Where each of ptrs[0..n) lives (NULL counts as host): pool blocks
 * without a driver call, other pointers by asking the driver. The backend
 * must be ready. */
HK_INTERNAL void hk__mem_where_n(const void *const *ptrs, int n,
                                 hk_mem_t *where);

/* ---- launch.c ---- */

/* Launches e on stream st over n elements with args in parameter order
 * (device pointers, pointers to scalars) and returns once it is queued.
 * A grid kernel's threads stride over its indices: as many as its index
 * count needs when that is known (grid_count >= 0: the host asked the
 * kernel's CPU code), at most a full grid; noalias: its written buffers
 * overlap no other buffer, so that its restrict variant (e->noalias) may
 * run. HK_OK, or HK_EDEVICE (the driver refused the launch) with the
 * thread's last error set. The backend must be ready on this thread. */
HK_INTERNAL int hk__cuda_launch(const hk_cuda_entry_t *e, struct hk_stream *st,
                                size_t n, void *const *args,
                                int64_t grid_count, int noalias);
/* The same for a rows kernel (e->kind HK_KIND_ROWS) over rows rows of n
 * elements each: a block of hk_abi_rows_lanes(n) threads per row where the
 * kernel has a "cuda" body (e->crow), else one thread per row
 * (hk__cuda_launch runs one row). An instance with f16 or bf16 buffers
 * (e->staged) keeps their float copies in st's rows scratch, which it
 * grows under st->lock (HK_ENOMEM when the GPU has no memory for one
 * row's). */
HK_INTERNAL int hk__cuda_launch_rows(const hk_cuda_entry_t *e,
                                     struct hk_stream *st, size_t rows,
                                     size_t n, void *const *args);
/* Queues e's N-D entry (e->nd; hk__call_nd_cuda says what nd, shape,
 * strides, args and flags are) on stream st over n elements. HK_OK;
 * HK__ND_NONE when the call is beyond the entry (more than
 * HK_ABI_CUDA_ND_BUFS buffers, n >= 2^63): nothing queued; HK_EDEVICE when
 * the driver refused the launch, with the thread's last error set. */
HK_INTERNAL int hk__cuda_launch_nd(const hk_cuda_entry_t *e,
                                   struct hk_stream *st, int nd,
                                   const int64_t *shape,
                                   const int64_t *const *strides, size_t n,
                                   void *const *args, unsigned flags);

/* ---- fatbin.c ---- */

/* The embedded stdlib fatbin, NULL when libhk was built without nvcc. */
HK_INTERNAL extern const unsigned char *const hk__cuda_stdlib_fatbin;

#endif
