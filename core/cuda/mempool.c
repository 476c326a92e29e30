/* mempool.c — the device memory pool: hk_device_alloc, hk_device_free and
 * the hk_pool_* calls.
 *
 * Device allocations are rounded up to size classes (256 bytes, then four
 * classes per power of two, so at most 25% is wasted); a freed block goes
 * on its class's free list instead of back to the driver, and the next
 * allocation of that class takes it without a driver call. A hash of the
 * blocks handed out finds a freed pointer's class. hk_pool_trim() returns
 * the free blocks to the driver; an allocation the driver refuses trims and
 * tries once more. One mutex guards it all: a pool operation is a few
 * dozen instructions under it, against microseconds for cuMemAlloc.
 */
#include <stdio.h>
#include <stdlib.h>

#include "backend.h"
#include "registry.h" /* hk__fail */

#define POOL_CLASSES 192
/* The smallest class, and the alignment hk.h promises (cuMemAlloc's). */
#define POOL_MIN 256u
/* Slots of the hash of handed-out blocks when it is first made. */
#define POOL_HASH_MIN 256u

typedef struct pool_block {
  CUdeviceptr p;
  size_t size;  /* its class's size */
  int cls;      /* -1: beyond the classes, never cached */
  struct pool_block *next; /* in a free list, or a hash chain */
} pool_block;

static struct {
  pthread_mutex_t lock;
  pool_block *free_list[POOL_CLASSES];
  pool_block **used; /* hash of handed-out blocks by pointer (chained) */
  size_t nused_slots; /* 0 or a power of two */
  size_t nused;
  hk_pool_stats_t st;
} pool = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The class of a request of bytes, with its rounded size in *size; -1 for
 * a request beyond the largest class (*size is then meaningless). */
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

/* The hash slot of device pointer p; the hash must exist. */
static size_t used_slot(CUdeviceptr p) {
  HK_ASSERT(pool.nused_slots > 0);
  return (size_t)((p >> 8) * 0x9E3779B97F4A7C15ull >> 20) &
         (pool.nused_slots - 1);
}

/* Doubles the hash (or makes it). HK_OK or HK_ENOMEM. pool.lock held. */
static int used_grow(void) {
  size_t ns = pool.nused_slots ? pool.nused_slots * 2 : POOL_HASH_MIN;
  pool_block **nv = calloc(ns, sizeof *nv);
  if (!nv) return HK_ENOMEM;
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
  return HK_OK;
}

/* Records b as handed out. HK_OK or HK_ENOMEM. pool.lock held. */
static int used_put(pool_block *b) {
  HK_ASSERT(hk__cuda_locked(&pool.lock));
  if (pool.nused + 1 > pool.nused_slots / 2 && used_grow()) return HK_ENOMEM;
  size_t s = used_slot(b->p);
  b->next = pool.used[s];
  pool.used[s] = b;
  pool.nused++;
  return HK_OK;
}

/* Takes the handed-out block at p out of the hash; NULL when p is not one
 * (a miss, not an error). pool.lock held. */
static pool_block *used_take(CUdeviceptr p) {
  HK_ASSERT(hk__cuda_locked(&pool.lock));
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

/* Gives b back: onto its class's free list, or to the driver when it has
 * no class. pool.lock held. */
static void pool_release(pool_block *b) {
  if (b->cls >= 0) {
    b->next = pool.free_list[b->cls];
    pool.free_list[b->cls] = b;
    pool.st.cached_bytes += b->size;
  } else {
    hk__cuda.api.cuMemFree(b->p);
    pool.st.driver_frees++;
    free(b);
  }
}

/* Frees every cached block; pool.lock held. */
static void pool_trim_locked(void) {
  HK_ASSERT(hk__cuda_locked(&pool.lock));
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

/* A new block of class cls (size bytes) from the driver, into *out; when
 * the driver refuses, the cache is trimmed and it is asked once more.
 * HK_OK, or HK_ENOMEM with the thread's last error set (asked for bytes).
 * pool.lock held. */
static int pool_new_block(int cls, size_t size, size_t bytes,
                          pool_block **out) {
  pool_block *b = malloc(sizeof *b);
  if (!b) return hk__fail(HK_ENOMEM, "out of memory");
  CUresult r = hk__cuda.api.cuMemAlloc(&b->p, size);
  if (r) { /* out of device memory: give back the cache, retry once */
    pool_trim_locked();
    r = hk__cuda.api.cuMemAlloc(&b->p, size);
  }
  if (r) {
    free(b);
    char m[128];
    snprintf(m, sizeof m, "cannot allocate %zu bytes of device memory",
             bytes);
    return hk__cuda_fail(HK_ENOMEM, r, m);
  }
  b->size = size;
  b->cls = cls;
  pool.st.driver_allocs++;
  *out = b;
  return HK_OK;
}

HK_API int hk_device_alloc(void **ptr, size_t bytes) {
  *ptr = NULL;
  int rc = hk__cuda_ready();
  if (rc) return rc;
  size_t size;
  int cls = pool_class(bytes, &size);
  if (cls < 0) size = bytes; /* beyond the classes: exact, never cached */
  pool_block *b = NULL;
  pthread_mutex_lock(&pool.lock);
  if (cls >= 0 && (b = pool.free_list[cls])) {
    pool.free_list[cls] = b->next;
    pool.st.cached_bytes -= b->size;
    pool.st.reuses++;
  } else if ((rc = pool_new_block(cls, size, bytes, &b))) {
    pthread_mutex_unlock(&pool.lock);
    return rc;
  }
  if (used_put(b)) {
    pool_release(b); /* to its free list, or (no class) to the driver */
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
  pool_release(b);
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

int hk__pool_where_n(const void *const *ptrs, int n, hk_mem_t *where) {
  int found = 0;
  pthread_mutex_lock(&pool.lock);
  for (int i = 0; pool.nused_slots && i < n; i++) {
    if (!ptrs[i]) continue;
    CUdeviceptr d = (CUdeviceptr)(uintptr_t)ptrs[i];
    for (pool_block *b = pool.used[used_slot(d)]; b; b = b->next)
      if (b->p == d) {
        where[i] = HK_MEM_DEVICE;
        found++;
        break;
      }
  }
  pthread_mutex_unlock(&pool.lock);
  return found;
}
