/* fake_cuda.c — a stand-in for the NVIDIA driver (libcuda.so.1), loaded
 * by libhk through HK_LIBCUDA, for test_cuda_launch.c.
 *
 * It answers the 32 entry points core/cuda/api.c resolves as one device
 * would (sm_90, 132 SMs, 80 GiB), with host memory for device memory
 * (malloc'ed blocks it keeps a table of, so that cuPointerGetAttribute
 * tells them from host memory), modules and functions that are only
 * names, and streams and events that are only handles. It runs no
 * kernel: cuLaunchKernel records what was launched (function, grid,
 * block, and three of the arguments, see fake_cuda_watch), which is what
 * the host side of hk's backend decides and what a test without a GPU
 * can check. fake_cuda_limit makes allocations past a total fail with
 * CUDA_ERROR_OUT_OF_MEMORY.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memmem */
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

#define FAKE_API __attribute__((visibility("default")))
#define OK 0
#define INVALID_VALUE 1
#define OUT_OF_MEMORY 2
#define NOT_FOUND 500

enum { MAX_BLOCKS = 4096 };

static struct block {
  char *p;
  size_t bytes;
} blocks[MAX_BLOCKS];
static size_t live_bytes, limit = SIZE_MAX;

/* the last launch */
static char last_fn[128];
static unsigned last_grid, last_block;
static int watch_at = -1;
static unsigned long long watched[3];
static int launches;

/* ---- the test's controls ---------------------------------------------- */

/* Allocations past bytes in all fail (SIZE_MAX: none). */
FAKE_API void fake_cuda_limit(size_t bytes) { limit = bytes; }

/* At the next launches, arguments at-2, at-1 (size_t) and at (a device
 * pointer) are recorded: a rows launch's n, rows and scratch. */
FAKE_API void fake_cuda_watch(int at) { watch_at = at; }

/* The last launch: its function's name (NULL: none yet), grid and block
 * x, and the watched arguments; the number of launches so far. */
FAKE_API int fake_cuda_last(const char **fn, unsigned *grid, unsigned *block,
                            unsigned long long w[3]) {
  *fn = launches ? last_fn : NULL;
  *grid = last_grid;
  *block = last_block;
  memcpy(w, watched, sizeof watched);
  return launches;
}

/* The bytes of the live block that starts at p (0: none). */
FAKE_API size_t fake_cuda_block(unsigned long long p) {
  for (int i = 0; i < MAX_BLOCKS; i++)
    if (blocks[i].p && (CUdeviceptr)(uintptr_t)blocks[i].p == p)
      return blocks[i].bytes;
  return 0;
}

/* The bytes allocated and not freed. */
FAKE_API size_t fake_cuda_live(void) { return live_bytes; }

/* ---- the driver ---------------------------------------------------------- */

FAKE_API CUresult cuInit(unsigned flags) { return flags ? INVALID_VALUE : OK; }
FAKE_API CUresult cuDriverGetVersion(int *v) {
  *v = 13000;
  return OK;
}
FAKE_API CUresult cuDeviceGetCount(int *n) {
  *n = 1;
  return OK;
}
FAKE_API CUresult cuDeviceGet(int *d, int ordinal) {
  if (ordinal != 0) return INVALID_VALUE;
  *d = 0;
  return OK;
}
FAKE_API CUresult cuDeviceGetName(char *name, int len, int d) {
  (void)d;
  snprintf(name, (size_t)len, "fake GPU (tests/fake_cuda.c)");
  return OK;
}
FAKE_API CUresult cuDeviceGetAttribute(int *v, int attr, int d) {
  (void)d;
  switch (attr) {
    case 16: *v = 132; return OK; /* multiprocessors */
    case 75: *v = 9; return OK;   /* compute capability */
    case 76: *v = 0; return OK;
    default: *v = 0; return OK;
  }
}
FAKE_API CUresult cuDeviceTotalMem_v2(size_t *bytes, int d) {
  (void)d;
  *bytes = (size_t)80 << 30;
  return OK;
}
static int the_ctx;
FAKE_API CUresult cuDevicePrimaryCtxRetain(void **ctx, int d) {
  (void)d;
  *ctx = &the_ctx;
  return OK;
}
static void *current;
FAKE_API CUresult cuCtxSetCurrent(void *ctx) {
  current = ctx;
  return OK;
}
FAKE_API CUresult cuCtxGetCurrent(void **ctx) {
  *ctx = current;
  return OK;
}
FAKE_API CUresult cuGetErrorName(CUresult r, const char **s) {
  *s = r == OUT_OF_MEMORY   ? "CUDA_ERROR_OUT_OF_MEMORY"
       : r == INVALID_VALUE ? "CUDA_ERROR_INVALID_VALUE"
                            : "CUDA_ERROR_UNKNOWN";
  return OK;
}
FAKE_API CUresult cuGetErrorString(CUresult r, const char **s) {
  *s = r == OUT_OF_MEMORY ? "out of memory" : "an error of the fake driver";
  return OK;
}

/* A module: its image's bytes where the names of its functions can be
 * read (NVRTC's PTX and cubins), or none (nvcc's fatbin, which compresses
 * them: every name is taken to be there). A function is its name. */
typedef struct module {
  const unsigned char *img;
  size_t len; /* 0: a fatbin */
} module;

/* The bytes of image: an ELF's up to its section headers, PTX's text. */
static size_t image_len(const unsigned char *img) {
  uint32_t magic;
  memcpy(&magic, img, 4);
  if (magic == 0xBA55ED50u) return 0; /* a fatbin */
  if (!memcmp(img, "\x7f" "ELF", 4) && img[4] == 2) { /* 64-bit ELF */
    uint64_t shoff;
    uint16_t shentsize, shnum;
    memcpy(&shoff, img + 0x28, 8);
    memcpy(&shentsize, img + 0x3A, 2);
    memcpy(&shnum, img + 0x3C, 2);
    return (size_t)shoff + (size_t)shentsize * shnum;
  }
  return strlen((const char *)img);
}

FAKE_API CUresult cuModuleLoadData(void **mod, const void *image) {
  if (!image) return INVALID_VALUE;
  module *m = malloc(sizeof *m);
  if (!m) return OUT_OF_MEMORY;
  m->len = image_len(image);
  m->img = m->len ? malloc(m->len) : NULL;
  if (m->len && !m->img) {
    free(m);
    return OUT_OF_MEMORY;
  }
  if (m->len) memcpy((void *)m->img, image, m->len);
  *mod = m;
  return OK;
}
FAKE_API CUresult cuModuleUnload(void *mod) {
  module *m = mod;
  free((void *)m->img);
  free(m);
  return OK;
}
FAKE_API CUresult cuModuleGetFunction(void **fn, void *mod, const char *name) {
  const module *m = mod;
  const size_t nl = strlen(name);
  if (m->len) { /* the name, whole: not followed by more of a name */
    int found = 0;
    for (const unsigned char *p = m->img;
         !found && (p = memmem(p, m->len - (size_t)(p - m->img), name, nl));
         p++) {
      const unsigned char c = p + nl < m->img + m->len ? p[nl] : 0;
      found = !(c == '_' || (c >= '0' && c <= '9') ||
                ((c | 32) >= 'a' && (c | 32) <= 'z'));
    }
    if (!found) return NOT_FOUND;
  }
  char *s = strdup(name); /* kept: functions live as long as modules */
  if (!s) return OUT_OF_MEMORY;
  *fn = s;
  return OK;
}
FAKE_API CUresult cuLaunchKernel(void *fn, unsigned gx, unsigned gy,
                                 unsigned gz, unsigned bx, unsigned by,
                                 unsigned bz, unsigned shared, void *stream,
                                 void **params, void **extra) {
  (void)stream, (void)extra, (void)shared;
  if (!fn || !gx || !gy || !gz || !bx || !by || !bz || bx * by * bz > 1024)
    return INVALID_VALUE;
  snprintf(last_fn, sizeof last_fn, "%s", (const char *)fn);
  last_grid = gx;
  last_block = bx;
  memset(watched, 0, sizeof watched);
  if (watch_at >= 2 && params) {
    watched[0] = *(const size_t *)params[watch_at - 2];
    watched[1] = *(const size_t *)params[watch_at - 1];
    watched[2] = *(const CUdeviceptr *)params[watch_at];
  }
  launches++;
  return OK;
}

FAKE_API CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes) {
  if (!bytes) return INVALID_VALUE;
  if (bytes > limit || live_bytes > limit - bytes) return OUT_OF_MEMORY;
  for (int i = 0; i < MAX_BLOCKS; i++)
    if (!blocks[i].p) {
      if (!(blocks[i].p = malloc(bytes))) return OUT_OF_MEMORY;
      blocks[i].bytes = bytes;
      live_bytes += bytes;
      *p = (CUdeviceptr)(uintptr_t)blocks[i].p;
      return OK;
    }
  return OUT_OF_MEMORY;
}
FAKE_API CUresult cuMemFree_v2(CUdeviceptr p) {
  for (int i = 0; i < MAX_BLOCKS; i++)
    if (blocks[i].p && (CUdeviceptr)(uintptr_t)blocks[i].p == p) {
      free(blocks[i].p);
      live_bytes -= blocks[i].bytes;
      blocks[i].p = NULL;
      return OK;
    }
  return INVALID_VALUE;
}
FAKE_API CUresult cuMemHostAlloc(void **p, size_t bytes, unsigned flags) {
  (void)flags;
  return (*p = malloc(bytes ? bytes : 1)) ? OK : OUT_OF_MEMORY;
}
FAKE_API CUresult cuMemFreeHost(void *p) {
  free(p);
  return OK;
}
FAKE_API CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *s, size_t n) {
  memcpy((void *)(uintptr_t)d, s, n);
  return OK;
}
FAKE_API CUresult cuMemcpyDtoH_v2(void *d, CUdeviceptr s, size_t n) {
  memcpy(d, (const void *)(uintptr_t)s, n);
  return OK;
}
FAKE_API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *s, size_t n,
                                       void *st) {
  (void)st;
  return cuMemcpyHtoD_v2(d, s, n);
}
FAKE_API CUresult cuMemcpyDtoHAsync_v2(void *d, CUdeviceptr s, size_t n,
                                       void *st) {
  (void)st;
  return cuMemcpyDtoH_v2(d, s, n);
}
/* memory type (2): device for a byte of a live block; other memory is
 * unknown to the driver, as host memory it never saw is */
FAKE_API CUresult cuPointerGetAttribute(void *data, int attr, CUdeviceptr p) {
  for (int i = 0; i < MAX_BLOCKS; i++) {
    CUdeviceptr b = (CUdeviceptr)(uintptr_t)blocks[i].p;
    if (blocks[i].p && p >= b && p - b < blocks[i].bytes) {
      if (attr == 2) *(unsigned *)data = 2; /* CU_MEMORYTYPE_DEVICE */
      else if (attr == 8) *(unsigned *)data = 0; /* not managed */
      else return INVALID_VALUE;
      return OK;
    }
  }
  return INVALID_VALUE;
}
static int streams;
FAKE_API CUresult cuStreamCreate(void **s, unsigned flags) {
  (void)flags;
  *s = (void *)(uintptr_t)(++streams);
  return OK;
}
FAKE_API CUresult cuStreamDestroy_v2(void *s) {
  (void)s;
  return OK;
}
FAKE_API CUresult cuStreamSynchronize(void *s) {
  (void)s;
  return OK;
}
static int events;
FAKE_API CUresult cuEventCreate(void **e, unsigned flags) {
  (void)flags;
  *e = (void *)(uintptr_t)(++events);
  return OK;
}
FAKE_API CUresult cuEventDestroy_v2(void *e) {
  (void)e;
  return OK;
}
FAKE_API CUresult cuEventRecord(void *e, void *s) {
  (void)e, (void)s;
  return OK;
}
FAKE_API CUresult cuEventSynchronize(void *e) {
  (void)e;
  return OK;
}
