/* cuda.c — the CUDA backend's device, streams, memory pool, copies and
 * buffers (the public functions of hk.h's "Backends" section, except the
 * kernel calls, which are in cuda_call.c).
 *
 * The pool. Device allocations are rounded up to size classes (256 bytes,
 * then four classes per power of two, so at most 25% is wasted); a freed
 * block goes on its class's free list instead of back to the driver, and
 * the next allocation of that class takes it without a driver call. A hash
 * of the blocks handed out finds a freed pointer's class. hk_pool_trim()
 * returns the free blocks to the driver; an allocation the driver refuses
 * trims and tries once more. One mutex guards it all: a pool operation is a
 * few dozen instructions under it, against microseconds for cuMemAlloc.
 */
#include "cuda.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "registry.h" /* hk__fail */

_Atomic int hk__cuda_started;
hk_cuda_state_t hk__cuda;

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int init_rc;
static char init_why[600];

const char *hk__cuda_strerror(CUresult r, char *buf, size_t n) {
  const char *name = NULL, *text = NULL;
  if (hk__cuda.api.cuGetErrorName) hk__cuda.api.cuGetErrorName(r, &name);
  if (hk__cuda.api.cuGetErrorString) hk__cuda.api.cuGetErrorString(r, &text);
  snprintf(buf, n, "%s: %s", name ? name : "CUDA error",
           text ? text : "unknown");
  return buf;
}

/* Fails with code and "WHAT: <driver error>". */
static int cu_fail(int code, CUresult r, const char *what) {
  char b[256];
  return hk__fail(code, "%s: %s", what, hk__cuda_strerror(r, b, sizeof b));
}

static int stream_init(struct hk_stream *st) {
  memset(st, 0, sizeof *st);
  pthread_mutex_init(&st->lock, NULL);
  CUresult r = hk__cuda.api.cuStreamCreate(&st->s, HK_CU_STREAM_NON_BLOCKING);
  if (r) return r;
  /* room for HK_CUDA_MAX_PARTS partials of the largest accumulator */
  r = hk__cuda.api.cuMemAlloc(&st->scratch, 1024 * 16);
  return r;
}

static void init_once_fn(void) {
  hk_cuda_state_t *c = &hk__cuda;
  char why[512];
  init_rc = HK_EUNSUPPORTED;
  if (hk__cuda_api_load(&c->api, why, sizeof why)) {
    snprintf(init_why, sizeof init_why, "no CUDA device: %s", why);
    return;
  }
  char eb[256];
  CUresult r = c->api.cuInit(0);
  if (r) {
    snprintf(init_why, sizeof init_why, "no CUDA device: cuInit failed (%s)",
             hk__cuda_strerror(r, eb, sizeof eb));
    return;
  }
  int count = 0;
  c->api.cuDeviceGetCount(&count);
  const char *want = getenv("HK_CUDA_DEVICE");
  int ordinal = want && *want ? atoi(want) : 0;
  if (ordinal < 0 || ordinal >= count) {
    snprintf(init_why, sizeof init_why,
             "no CUDA device: device %d asked for (HK_CUDA_DEVICE), %d found",
             ordinal, count);
    return;
  }
  if ((r = c->api.cuDeviceGet(&c->dev, ordinal)) ||
      (r = c->api.cuDevicePrimaryCtxRetain(&c->ctx, c->dev)) ||
      (r = c->api.cuCtxSetCurrent(c->ctx))) {
    snprintf(init_why, sizeof init_why,
             "no CUDA device: cannot use device %d (%s)", ordinal,
             hk__cuda_strerror(r, eb, sizeof eb));
    return;
  }
  hk_cuda_device_info_t *in = &c->info;
  in->ordinal = ordinal;
  c->api.cuDeviceGetName(in->name, sizeof in->name, c->dev);
  c->api.cuDeviceGetAttribute(&in->major,
                              HK_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                              c->dev);
  c->api.cuDeviceGetAttribute(&in->minor,
                              HK_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                              c->dev);
  c->api.cuDeviceGetAttribute(&in->sm_count,
                              HK_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                              c->dev);
  c->api.cuDeviceTotalMem(&in->total_memory, c->dev);
  c->api.cuDriverGetVersion(&in->driver_version);
  if (in->sm_count < 1) in->sm_count = 1;
  if ((r = stream_init(&c->dflt))) {
    snprintf(init_why, sizeof init_why,
             "no CUDA device: cannot create a stream (%s)",
             hk__cuda_strerror(r, eb, sizeof eb));
    return;
  }
  if (!hk__cuda_stdlib_fatbin) {
    snprintf(c->stdlib_note, sizeof c->stdlib_note,
             "libhk was built without the CUDA toolkit (nvcc): the stdlib "
             "has no GPU code");
  } else if ((r = c->api.cuModuleLoadData(&c->stdlib,
                                          hk__cuda_stdlib_fatbin))) {
    c->stdlib = NULL;
    snprintf(c->stdlib_note, sizeof c->stdlib_note,
             "the stdlib's GPU code does not load on this device (sm_%d%d): "
             "%s",
             in->major, in->minor, hk__cuda_strerror(r, eb, sizeof eb));
  }
  init_rc = HK_OK;
  atomic_store(&hk__cuda_started, 1);
}

int hk__cuda_ready(void) {
  pthread_once(&init_once, init_once_fn);
  if (init_rc != HK_OK) return hk__fail(init_rc, "%s", init_why);
  /* The primary context must be current on the calling thread. */
  CUcontext cur = NULL;
  hk__cuda.api.cuCtxGetCurrent(&cur);
  if (cur != hk__cuda.ctx) hk__cuda.api.cuCtxSetCurrent(hk__cuda.ctx);
  return HK_OK;
}

HK_API int hk_cuda_init(void) { return hk__cuda_ready(); }

HK_API int hk_cuda_device_info(hk_cuda_device_info_t *info) {
  int rc = hk__cuda_ready();
  if (rc) return rc;
  *info = hk__cuda.info;
  const hk_nvrtc_api_t *nv;
  int v = 0;
  char why[512];
  info->nvrtc_version = hk__nvrtc(&nv, &v, why, sizeof why) == 0 ? v : 0;
  return HK_OK;
}

HK_API const char *hk_backend_name(hk_backend_t b) {
  switch (b) {
    case HK_BACKEND_AUTO: return "auto";
    case HK_BACKEND_CPU: return "cpu";
    case HK_BACKEND_CUDA: return "cuda";
  }
  return "invalid";
}

/* ---- NVRTC --------------------------------------------------------------- */

static pthread_once_t nvrtc_once = PTHREAD_ONCE_INIT;
static hk_nvrtc_api_t nvrtc_api;
static int nvrtc_rc = -1, nvrtc_version;
static char nvrtc_why[512];

static void nvrtc_once_fn(void) {
  if (hk__nvrtc_api_load(&nvrtc_api, nvrtc_why, sizeof nvrtc_why)) return;
  int major = 0, minor = 0;
  nvrtc_api.nvrtcVersion(&major, &minor);
  nvrtc_version = major * 1000 + minor * 10;
  nvrtc_rc = 0;
}

int hk__nvrtc(const hk_nvrtc_api_t **api, int *version, char *why, size_t n) {
  pthread_once(&nvrtc_once, nvrtc_once_fn);
  if (nvrtc_rc) {
    snprintf(why, n, "%s", nvrtc_why);
    return -1;
  }
  *api = &nvrtc_api;
  *version = nvrtc_version;
  return 0;
}

/* ---- Streams --------------------------------------------------------------- */

struct hk_stream *hk__stream(hk_stream_t *s) { return s ? s : &hk__cuda.dflt; }

static void stream_release(struct hk_stream *st) {
  const hk_cuda_api_t *a = &hk__cuda.api;
  if (st->s) a->cuStreamSynchronize(st->s);
  for (int i = 0; i < 2; i++) {
    if (st->staged[i]) a->cuEventDestroy(st->staged[i]);
    if (st->staging[i]) a->cuMemFreeHost(st->staging[i]);
  }
  if (st->scratch) a->cuMemFree(st->scratch);
  if (st->s) a->cuStreamDestroy(st->s);
  pthread_mutex_destroy(&st->lock);
}

HK_API int hk_stream_create(hk_stream_t **out) {
  *out = NULL;
  int rc = hk__cuda_ready();
  if (rc) return rc;
  struct hk_stream *st = malloc(sizeof *st);
  if (!st) return hk__fail(HK_ENOMEM, "out of memory");
  CUresult r = stream_init(st);
  if (r) {
    stream_release(st);
    free(st);
    return cu_fail(HK_ENOMEM, r, "cannot create a CUDA stream");
  }
  *out = st;
  return HK_OK;
}

HK_API void hk_stream_destroy(hk_stream_t *s) {
  if (!s || hk__cuda_ready()) return;
  stream_release(s);
  free(s);
}

HK_API int hk_stream_sync(hk_stream_t *s) {
  int rc = hk__cuda_ready();
  if (rc) return rc;
  CUresult r = hk__cuda.api.cuStreamSynchronize(hk__stream(s)->s);
  if (r)
    return cu_fail(HK_EINVAL, r,
                   "a kernel or copy on this stream failed (the CUDA "
                   "context may be unusable now)");
  return HK_OK;
}

/* ---- The device memory pool ----------------------------------------------- */

#define POOL_CLASSES 192
#define POOL_MIN 256u

typedef struct pool_block {
  CUdeviceptr p;
  size_t size;  /* its class's size */
  int cls;
  struct pool_block *next; /* in a free list, or a hash chain */
} pool_block;

static struct {
  pthread_mutex_t lock;
  pool_block *free_list[POOL_CLASSES];
  pool_block **used; /* hash of handed-out blocks by pointer (chained) */
  size_t nused_slots;
  size_t nused;
  hk_pool_stats_t st;
} pool = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The class of a request and its rounded size. */
static int pool_class(size_t bytes, size_t *size) {
  if (bytes <= POOL_MIN) {
    *size = POOL_MIN;
    return 0;
  }
  int e = 63 - __builtin_clzll((unsigned long long)(bytes - 1)); /* 2^e < bytes */
  size_t step = (size_t)1 << (e - 2);
  size_t r = (bytes + step - 1) / step * step;           /* (2^e, 2^(e+1)] */
  int quarter = (int)(r >> (e - 2)) - 4;                 /* 1..4 */
  *size = r;
  int cls = 1 + (e - 8) * 4 + (quarter - 1);
  return cls < POOL_CLASSES ? cls : -1;
}

static size_t used_slot(CUdeviceptr p) {
  return (size_t)((p >> 8) * 0x9E3779B97F4A7C15ull >> 20) & (pool.nused_slots - 1);
}

static int used_put(pool_block *b) {
  if (pool.nused + 1 > pool.nused_slots / 2) {
    size_t ns = pool.nused_slots ? pool.nused_slots * 2 : 256;
    pool_block **nv = calloc(ns, sizeof *nv);
    if (!nv) return -1;
    pool_block **old = pool.used;
    size_t os = pool.nused_slots;
    pool.used = nv;
    pool.nused_slots = ns;
    for (size_t i = 0; i < os; i++)
      for (pool_block *c = old[i], *nx; c; c = nx) {
        nx = c->next;
        size_t s = used_slot(c->p);
        c->next = nv[s];
        nv[s] = c;
      }
    free(old);
  }
  size_t s = used_slot(b->p);
  b->next = pool.used[s];
  pool.used[s] = b;
  pool.nused++;
  return 0;
}

static pool_block *used_take(CUdeviceptr p) {
  if (!pool.nused_slots) return NULL;
  for (pool_block **pp = &pool.used[used_slot(p)]; *pp; pp = &(*pp)->next)
    if ((*pp)->p == p) {
      pool_block *b = *pp;
      *pp = b->next;
      pool.nused--;
      return b;
    }
  return NULL;
}

/* Frees every cached block; pool.lock held. */
static void pool_trim_locked(void) {
  for (int c = 0; c < POOL_CLASSES; c++) {
    for (pool_block *b = pool.free_list[c], *nx; b; b = nx) {
      nx = b->next;
      hk__cuda.api.cuMemFree(b->p);
      pool.st.driver_frees++;
      pool.st.cached_bytes -= b->size;
      free(b);
    }
    pool.free_list[c] = NULL;
  }
}

HK_API int hk_device_alloc(void **ptr, size_t bytes) {
  *ptr = NULL;
  int rc = hk__cuda_ready();
  if (rc) return rc;
  size_t size;
  int cls = pool_class(bytes, &size);
  pool_block *b = NULL;
  pthread_mutex_lock(&pool.lock);
  if (cls >= 0 && (b = pool.free_list[cls])) {
    pool.free_list[cls] = b->next;
    pool.st.cached_bytes -= b->size;
    pool.st.reuses++;
  } else {
    if (cls < 0) size = bytes; /* beyond the classes: exact, never cached */
    b = malloc(sizeof *b);
    CUresult r = b ? hk__cuda.api.cuMemAlloc(&b->p, size) : 0;
    if (b && r) { /* out of device memory: give back the cache, retry once */
      pool_trim_locked();
      r = hk__cuda.api.cuMemAlloc(&b->p, size);
    }
    if (!b || r) {
      pthread_mutex_unlock(&pool.lock);
      free(b);
      if (!b) return hk__fail(HK_ENOMEM, "out of memory");
      char m[128];
      snprintf(m, sizeof m, "cannot allocate %zu bytes of device memory",
               bytes);
      return cu_fail(HK_ENOMEM, r, m);
    }
    b->size = size;
    b->cls = cls;
    pool.st.driver_allocs++;
  }
  if (used_put(b)) {
    b->next = NULL; /* give it back to its list */
    if (cls >= 0) {
      b->next = pool.free_list[cls];
      pool.free_list[cls] = b;
      pool.st.cached_bytes += b->size;
    } else {
      hk__cuda.api.cuMemFree(b->p);
      free(b);
    }
    pthread_mutex_unlock(&pool.lock);
    return hk__fail(HK_ENOMEM, "out of memory");
  }
  pool.st.in_use_bytes += b->size;
  pool.st.allocs++;
  *ptr = (void *)(uintptr_t)b->p;
  pthread_mutex_unlock(&pool.lock);
  return HK_OK;
}

HK_API int hk_device_free(void *ptr) {
  if (!ptr) return HK_OK;
  int rc = hk__cuda_ready();
  if (rc) return rc;
  pthread_mutex_lock(&pool.lock);
  pool_block *b = used_take((CUdeviceptr)(uintptr_t)ptr);
  if (!b) {
    pthread_mutex_unlock(&pool.lock);
    return hk__fail(HK_EINVAL,
                    "hk_device_free: %p was not given by hk_device_alloc (or "
                    "was freed already)",
                    ptr);
  }
  pool.st.in_use_bytes -= b->size;
  if (b->cls >= 0) {
    b->next = pool.free_list[b->cls];
    pool.free_list[b->cls] = b;
    pool.st.cached_bytes += b->size;
  } else {
    hk__cuda.api.cuMemFree(b->p);
    pool.st.driver_frees++;
    free(b);
  }
  pthread_mutex_unlock(&pool.lock);
  return HK_OK;
}

HK_API int hk_pool_stats(hk_pool_stats_t *st) {
  int rc = hk__cuda_ready();
  if (rc) return rc;
  pthread_mutex_lock(&pool.lock);
  *st = pool.st;
  pthread_mutex_unlock(&pool.lock);
  return HK_OK;
}

HK_API int hk_pool_trim(void) {
  int rc = hk__cuda_ready();
  if (rc) return rc;
  pthread_mutex_lock(&pool.lock);
  pool_trim_locked();
  pthread_mutex_unlock(&pool.lock);
  return HK_OK;
}

HK_API int hk_host_alloc(void **ptr, size_t bytes) {
  *ptr = NULL;
  int rc = hk__cuda_ready();
  if (rc) return rc;
  CUresult r = hk__cuda.api.cuMemHostAlloc(ptr, bytes ? bytes : 1,
                                           HK_CU_MEMHOSTALLOC_PORTABLE);
  if (r) return cu_fail(HK_ENOMEM, r, "cannot allocate pinned host memory");
  return HK_OK;
}

HK_API void hk_host_free(void *ptr) {
  if (ptr && !hk__cuda_ready()) hk__cuda.api.cuMemFreeHost(ptr);
}

/* ---- Where memory lives ------------------------------------------------------ */

/* The driver's memory type of p: HOST (pinned), DEVICE, UNIFIED, or 0 for
 * memory CUDA does not know (ordinary host memory). */
static int mem_type(const void *p) {
  unsigned int t = 0;
  if (hk__cuda.api.cuPointerGetAttribute(&t, HK_CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                         (CUdeviceptr)(uintptr_t)p))
    return 0;
  return (int)t;
}

void hk__mem_where_n(const void *const *ptrs, int n, hk_mem_t *where) {
  /* Blocks of the pool are known without asking the driver (a lookup under
   * one lock for all of them); other pointers ask the driver. */
  int rest = 0;
  pthread_mutex_lock(&pool.lock);
  for (int i = 0; i < n; i++) {
    where[i] = 0;
    if (!ptrs[i]) {
      where[i] = HK_MEM_HOST;
      continue;
    }
    CUdeviceptr d = (CUdeviceptr)(uintptr_t)ptrs[i];
    if (pool.nused_slots)
      for (pool_block *b = pool.used[used_slot(d)]; b; b = b->next)
        if (b->p == d) where[i] = HK_MEM_DEVICE;
    rest |= !where[i];
  }
  pthread_mutex_unlock(&pool.lock);
  for (int i = 0; rest && i < n; i++)
    if (!where[i]) {
      int t = mem_type(ptrs[i]);
      where[i] = t == HK_CU_MEMORYTYPE_DEVICE || t == HK_CU_MEMORYTYPE_UNIFIED
                     ? HK_MEM_DEVICE
                     : HK_MEM_HOST;
    }
}

HK_API hk_mem_t hk_mem_where(const void *p) {
  if (!p || !atomic_load_explicit(&hk__cuda_started, memory_order_acquire) ||
      hk__cuda_ready())
    return HK_MEM_HOST;
  int t = mem_type(p);
  return t == HK_CU_MEMORYTYPE_DEVICE || t == HK_CU_MEMORYTYPE_UNIFIED
             ? HK_MEM_DEVICE
             : HK_MEM_HOST;
}

/* ---- Copies --------------------------------------------------------------------- */

#define STAGE_BYTES ((size_t)4 << 20)
/* Below this, a pageable copy goes straight to the driver (which stages
 * small copies itself as fast as we could). */
#define STAGE_MIN ((size_t)1 << 20)

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
  const hk_cuda_api_t *a = &hk__cuda.api;
  CUresult r = stage_ready(st);
  for (size_t off = 0, k = 0; !r && off < bytes; off += STAGE_BYTES, k ^= 1) {
    size_t len = bytes - off < STAGE_BYTES ? bytes - off : STAGE_BYTES;
    if ((r = a->cuEventSynchronize(st->staged[k]))) break; /* buffer k free */
    memcpy(st->staging[k], src + off, len);
    if ((r = a->cuMemcpyHtoDAsync(dst + off, st->staging[k], len, st->s))) break;
    r = a->cuEventRecord(st->staged[k], st->s);
  }
  return r;
}

/* Device -> host: chunk k+1 is in flight while chunk k is copied out. */
static CUresult staged_to_host(struct hk_stream *st, char *dst,
                               CUdeviceptr src, size_t bytes) {
  const hk_cuda_api_t *a = &hk__cuda.api;
  CUresult r = stage_ready(st);
  size_t nchunks = (bytes + STAGE_BYTES - 1) / STAGE_BYTES;
  for (size_t c = 0; !r && c <= nchunks; c++) {
    if (c < nchunks) { /* queue chunk c into buffer c % 2 */
      size_t off = c * STAGE_BYTES;
      size_t len = bytes - off < STAGE_BYTES ? bytes - off : STAGE_BYTES;
      if ((r = a->cuEventSynchronize(st->staged[c & 1]))) break;
      if ((r = a->cuMemcpyDtoHAsync(st->staging[c & 1], src + off, len, st->s)))
        break;
      if ((r = a->cuEventRecord(st->staged[c & 1], st->s))) break;
    }
    if (c > 0) { /* chunk c - 1 has landed: copy it out */
      size_t p = c - 1, off = p * STAGE_BYTES;
      size_t len = bytes - off < STAGE_BYTES ? bytes - off : STAGE_BYTES;
      if ((r = a->cuEventSynchronize(st->staged[p & 1]))) break;
      memcpy(dst + off, st->staging[p & 1], len);
    }
  }
  return r;
}

HK_API int hk_memcpy_to_device(void *dst, const void *src, size_t bytes,
                               hk_stream_t *s) {
  int rc = hk__cuda_ready();
  if (rc) return rc;
  if (!bytes) return HK_OK;
  const hk_cuda_api_t *a = &hk__cuda.api;
  struct hk_stream *st = hk__stream(s);
  CUdeviceptr d = (CUdeviceptr)(uintptr_t)dst;
  CUresult r;
  if (bytes < STAGE_MIN || mem_type(src) == HK_CU_MEMORYTYPE_HOST) {
    /* pinned: straight DMA; small and pageable: the driver returns once
     * src has been read */
    r = a->cuMemcpyHtoDAsync(d, src, bytes, st->s);
  } else {
    pthread_mutex_lock(&st->lock);
    r = staged_to_device(st, d, src, bytes);
    pthread_mutex_unlock(&st->lock);
  }
  if (!r && !s) r = a->cuStreamSynchronize(st->s);
  if (r) return cu_fail(HK_EINVAL, r, "copy to the device failed");
  return HK_OK;
}

HK_API int hk_memcpy_to_host(void *dst, const void *src, size_t bytes,
                             hk_stream_t *s) {
  int rc = hk__cuda_ready();
  if (rc) return rc;
  if (!bytes) return HK_OK;
  const hk_cuda_api_t *a = &hk__cuda.api;
  struct hk_stream *st = hk__stream(s);
  CUdeviceptr d = (CUdeviceptr)(uintptr_t)src;
  CUresult r;
  if (mem_type(dst) == HK_CU_MEMORYTYPE_HOST) {
    r = a->cuMemcpyDtoHAsync(dst, d, bytes, st->s);
    if (!r && !s) r = a->cuStreamSynchronize(st->s);
  } else if (bytes < STAGE_MIN) {
    r = a->cuMemcpyDtoHAsync(dst, d, bytes, st->s);
    if (!r) r = a->cuStreamSynchronize(st->s); /* dst is written by now */
  } else {
    pthread_mutex_lock(&st->lock);
    r = staged_to_host(st, dst, d, bytes);
    pthread_mutex_unlock(&st->lock);
  }
  if (r) return cu_fail(HK_EINVAL, r, "copy to the host failed");
  return HK_OK;
}

/* ---- Buffers ------------------------------------------------------------------------ */

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

static int range_ok(const hk_buffer_t *b, size_t offset, size_t bytes,
                    const char *fn) {
  if (offset > b->size || bytes > b->size - offset)
    return hk__fail(HK_EINVAL,
                    "%s: bytes [%zu, %zu + %zu) are outside the buffer of %zu "
                    "bytes",
                    fn, offset, offset, bytes, b->size);
  return HK_OK;
}

HK_API int hk_buffer_copy_in(hk_buffer_t *b, size_t offset, const void *src,
                             size_t bytes, hk_stream_t *s) {
  int rc = range_ok(b, offset, bytes, "hk_buffer_copy_in");
  if (rc) return rc;
  if (b->where == HK_MEM_DEVICE)
    return hk_memcpy_to_device((char *)b->data + offset, src, bytes, s);
  if (s && (rc = hk_stream_sync(s))) return rc; /* queued work first */
  if (bytes) memcpy((char *)b->data + offset, src, bytes);
  return HK_OK;
}

HK_API int hk_buffer_copy_out(const hk_buffer_t *b, size_t offset, void *dst,
                              size_t bytes, hk_stream_t *s) {
  int rc = range_ok(b, offset, bytes, "hk_buffer_copy_out");
  if (rc) return rc;
  if (b->where == HK_MEM_DEVICE)
    return hk_memcpy_to_host(dst, (const char *)b->data + offset, bytes, s);
  if (s && (rc = hk_stream_sync(s))) return rc;
  if (bytes) memcpy(dst, (const char *)b->data + offset, bytes);
  return HK_OK;
}
