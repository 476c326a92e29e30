/* memory.c — memory seen from the host: pinned host memory, where a
 * pointer lives, copies between host and device (staged through pinned
 * buffers for large pageable ones), and hk_buffer_t. */
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "registry.h" /* hk__fail */

/* Size of each of a stream's two pinned staging buffers. */
#define STAGE_BYTES ((size_t)4 << 20)
/* Below this, a pageable copy goes straight to the driver (which stages
 * small copies itself as fast as we could). */
#define STAGE_MIN ((size_t)1 << 20)

HK_API int hk_host_alloc(void **ptr, size_t bytes) {
  *ptr = NULL;
  int rc = hk__cuda_ready();
  if (rc) return rc;
  CUresult r = hk__cuda.api.cuMemHostAlloc(ptr, bytes ? bytes : 1,
                                           HK_CU_MEMHOSTALLOC_PORTABLE);
  if (r)
    return hk__cuda_fail(HK_ENOMEM, r, "cannot allocate pinned host memory");
  return HK_OK;
}

HK_API void hk_host_free(void *ptr) {
  if (ptr && !hk__cuda_ready()) hk__cuda.api.cuMemFreeHost(ptr);
}

/* ---- Where memory lives ---------------------------------------------------- */

/* The driver's memory type of p: HOST (pinned), DEVICE, UNIFIED, or 0 for
 * memory CUDA does not know (ordinary host memory). */
static int mem_type(const void *p) {
  unsigned int t = 0;
  if (hk__cuda.api.cuPointerGetAttribute(&t, HK_CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                         (CUdeviceptr)(uintptr_t)p))
    return 0;
  return (int)t;
}

/* Where p lives, asking the driver. */
static hk_mem_t mem_side(const void *p) {
  int t = mem_type(p);
  return t == HK_CU_MEMORYTYPE_DEVICE || t == HK_CU_MEMORYTYPE_UNIFIED
             ? HK_MEM_DEVICE
             : HK_MEM_HOST;
}

void hk__mem_where_n(const void *const *ptrs, int n, hk_mem_t *where) {
  HK_ASSERT(atomic_load(&hk__cuda_started));
  for (int i = 0; i < n; i++) where[i] = ptrs[i] ? 0 : HK_MEM_HOST;
  /* Blocks of the pool are known without asking the driver (a lookup under
   * one lock for all of them); other pointers ask the driver. */
  int known = hk__pool_where_n(ptrs, n, where);
  for (int i = 0; i < n; i++) known += where[i] == HK_MEM_HOST;
  for (int i = 0; known < n && i < n; i++)
    if (!where[i]) where[i] = mem_side(ptrs[i]);
}

HK_API hk_mem_t hk_mem_where(const void *p) {
  if (!p || !atomic_load_explicit(&hk__cuda_started, memory_order_acquire) ||
      hk__cuda_ready())
    return HK_MEM_HOST;
  return mem_side(p);
}

/* ---- Copies ------------------------------------------------------------------ */

/* The length of the staged chunk at offset off of a copy of bytes. */
static size_t chunk_len(size_t bytes, size_t off) {
  return bytes - off < STAGE_BYTES ? bytes - off : STAGE_BYTES;
}

/* Makes st's staging buffers and their events, once. st->lock held. */
static CUresult stage_ready(struct hk_stream *st) {
  const hk_cuda_api_t *a = &hk__cuda.api;
  CUresult r = 0;
  for (int i = 0; i < 2 && !r; i++) {
    if (!st->staging[i]) r = a->cuMemHostAlloc(&st->staging[i], STAGE_BYTES, 0);
    if (!r && !st->staged[i])
      r = a->cuEventCreate(&st->staged[i], HK_CU_EVENT_DISABLE_TIMING);
  }
  return r;
}

/* Host -> device through the stream's two pinned buffers: the memcpy into
 * one overlaps the DMA out of the other. Returns when src has been read.
 * st->lock held. */
static CUresult staged_to_device(struct hk_stream *st, CUdeviceptr dst,
                                 const char *src, size_t bytes) {
  HK_ASSERT(hk__cuda_locked(&st->lock));
  const hk_cuda_api_t *a = &hk__cuda.api;
  CUresult r = stage_ready(st);
  for (size_t off = 0, k = 0; !r && off < bytes; off += STAGE_BYTES, k ^= 1) {
    size_t len = chunk_len(bytes, off);
    if ((r = a->cuEventSynchronize(st->staged[k]))) break; /* buffer k free */
    memcpy(st->staging[k], src + off, len);
    if ((r = a->cuMemcpyHtoDAsync(dst + off, st->staging[k], len, st->s))) break;
    r = a->cuEventRecord(st->staged[k], st->s);
  }
  return r;
}

/* Device -> host: chunk k+1 is in flight while chunk k is copied out.
 * Returns when dst is written. st->lock held. */
static CUresult staged_to_host(struct hk_stream *st, char *dst,
                               CUdeviceptr src, size_t bytes) {
  HK_ASSERT(hk__cuda_locked(&st->lock));
  const hk_cuda_api_t *a = &hk__cuda.api;
  CUresult r = stage_ready(st);
  size_t nchunks = (bytes + STAGE_BYTES - 1) / STAGE_BYTES;
  for (size_t c = 0; !r && c <= nchunks; c++) {
    if (c < nchunks) { /* queue chunk c into buffer c % 2 */
      size_t off = c * STAGE_BYTES;
      if ((r = a->cuEventSynchronize(st->staged[c & 1]))) break;
      if ((r = a->cuMemcpyDtoHAsync(st->staging[c & 1], src + off,
                                    chunk_len(bytes, off), st->s)))
        break;
      if ((r = a->cuEventRecord(st->staged[c & 1], st->s))) break;
    }
    if (c > 0) { /* chunk c - 1 has landed: copy it out */
      size_t p = c - 1, off = p * STAGE_BYTES;
      if ((r = a->cuEventSynchronize(st->staged[p & 1]))) break;
      memcpy(dst + off, st->staging[p & 1], chunk_len(bytes, off));
    }
  }
  return r;
}

/* Queues bytes from host src to device dst on st: pinned memory straight
 * by DMA, small pageable copies by the driver (which returns once src has
 * been read), large ones staged. Waits for st when sync. */
static CUresult copy_to_device(struct hk_stream *st, CUdeviceptr dst,
                               const void *src, size_t bytes, int sync) {
  const hk_cuda_api_t *a = &hk__cuda.api;
  CUresult r;
  if (bytes < STAGE_MIN || mem_type(src) == HK_CU_MEMORYTYPE_HOST) {
    r = a->cuMemcpyHtoDAsync(dst, src, bytes, st->s);
  } else {
    pthread_mutex_lock(&st->lock);
    r = staged_to_device(st, dst, src, bytes);
    pthread_mutex_unlock(&st->lock);
  }
  if (!r && sync) r = a->cuStreamSynchronize(st->s);
  return r;
}

/* Queues bytes from device src to host dst on st: into pinned memory by
 * DMA (waiting for st when sync); into pageable memory the copy is done
 * when this returns (small ones wait for st, large ones are staged). */
static CUresult copy_to_host(struct hk_stream *st, void *dst, CUdeviceptr src,
                             size_t bytes, int sync) {
  const hk_cuda_api_t *a = &hk__cuda.api;
  CUresult r;
  if (mem_type(dst) == HK_CU_MEMORYTYPE_HOST) {
    r = a->cuMemcpyDtoHAsync(dst, src, bytes, st->s);
    if (!r && sync) r = a->cuStreamSynchronize(st->s);
  } else if (bytes < STAGE_MIN) {
    r = a->cuMemcpyDtoHAsync(dst, src, bytes, st->s);
    if (!r) r = a->cuStreamSynchronize(st->s); /* dst is written by now */
  } else {
    pthread_mutex_lock(&st->lock);
    r = staged_to_host(st, dst, src, bytes);
    pthread_mutex_unlock(&st->lock);
  }
  return r;
}

/* hk_memcpy_to_device (to_device) or hk_memcpy_to_host: HK_OK, or the
 * driver error's code (hk__cuda_code) with the thread's last error set. */
static int copy(int to_device, void *dst, const void *src, size_t bytes,
                hk_stream_t *s) {
  int rc = hk__cuda_ready();
  if (rc) return rc;
  if (!bytes) return HK_OK;
  struct hk_stream *st = hk__stream(s);
  CUresult r =
      to_device
          ? copy_to_device(st, (CUdeviceptr)(uintptr_t)dst, src, bytes, !s)
          : copy_to_host(st, dst, (CUdeviceptr)(uintptr_t)src, bytes, !s);
  if (r)
    return hk__cuda_fail(hk__cuda_code(r), r,
                         to_device ? "copy to the device failed"
                                   : "copy to the host failed");
  return HK_OK;
}

HK_API int hk_memcpy_to_device(void *dst, const void *src, size_t bytes,
                               hk_stream_t *s) {
  return copy(1, dst, src, bytes, s);
}

HK_API int hk_memcpy_to_host(void *dst, const void *src, size_t bytes,
                             hk_stream_t *s) {
  return copy(0, dst, src, bytes, s);
}

/* ---- Buffers ------------------------------------------------------------------- */

struct hk_buffer {
  void *data;
  size_t size;
  hk_mem_t where;
  int pinned; /* host: from cuMemHostAlloc, else malloc */
};

HK_API int hk_buffer_create(hk_buffer_t **out, hk_mem_t where, size_t bytes) {
  *out = NULL;
  if (where != HK_MEM_HOST && where != HK_MEM_DEVICE)
    return hk__fail(HK_EINVAL, "hk_buffer_create: where must be HK_MEM_HOST "
                               "or HK_MEM_DEVICE");
  hk_buffer_t *b = calloc(1, sizeof *b);
  if (!b) return hk__fail(HK_ENOMEM, "out of memory");
  b->size = bytes;
  b->where = where;
  int rc = HK_OK;
  if (where == HK_MEM_DEVICE) {
    rc = hk_device_alloc(&b->data, bytes);
  } else if (hk__cuda_ready() == HK_OK && hk_host_alloc(&b->data, bytes) == HK_OK) {
    b->pinned = 1;
  } else { /* no CUDA: ordinary memory */
    b->data = malloc(bytes ? bytes : 1);
    if (!b->data) rc = hk__fail(HK_ENOMEM, "out of memory");
  }
  if (rc) {
    free(b);
    return rc;
  }
  hk__fail(HK_OK, "%s", ""); /* a failed probe above is no error */
  *out = b;
  return HK_OK;
}

HK_API void hk_buffer_destroy(hk_buffer_t *b) {
  if (!b) return;
  if (b->where == HK_MEM_DEVICE)
    hk_device_free(b->data);
  else if (b->pinned)
    hk_host_free(b->data);
  else
    free(b->data);
  free(b);
}

HK_API void *hk_buffer_data(const hk_buffer_t *b) { return b->data; }
HK_API size_t hk_buffer_size(const hk_buffer_t *b) { return b->size; }
HK_API hk_mem_t hk_buffer_where(const hk_buffer_t *b) { return b->where; }

/* Checks a copy of bytes at offset of b (fn names the caller); for a host
 * buffer then waits for the work queued on s. HK_OK, or HK_EINVAL (the
 * range is outside b) or hk_stream_sync's error, with the last error set. */
static int buffer_copy_check(const hk_buffer_t *b, size_t offset,
                             size_t bytes, hk_stream_t *s, const char *fn) {
  if (offset > b->size || bytes > b->size - offset)
    return hk__fail(HK_EINVAL,
                    "%s: bytes [%zu, %zu + %zu) are outside the buffer of %zu "
                    "bytes",
                    fn, offset, offset, bytes, b->size);
  if (b->where != HK_MEM_DEVICE && s) return hk_stream_sync(s);
  return HK_OK;
}

HK_API int hk_buffer_copy_in(hk_buffer_t *b, size_t offset, const void *src,
                             size_t bytes, hk_stream_t *s) {
  int rc = buffer_copy_check(b, offset, bytes, s, "hk_buffer_copy_in");
  if (rc) return rc;
  if (b->where == HK_MEM_DEVICE)
    return hk_memcpy_to_device((char *)b->data + offset, src, bytes, s);
  if (bytes) memcpy((char *)b->data + offset, src, bytes);
  return HK_OK;
}

HK_API int hk_buffer_copy_out(const hk_buffer_t *b, size_t offset, void *dst,
                              size_t bytes, hk_stream_t *s) {
  int rc = buffer_copy_check(b, offset, bytes, s, "hk_buffer_copy_out");
  if (rc) return rc;
  if (b->where == HK_MEM_DEVICE)
    return hk_memcpy_to_host(dst, (const char *)b->data + offset, bytes, s);
  if (bytes) memcpy(dst, (const char *)b->data + offset, bytes);
  return HK_OK;
}
