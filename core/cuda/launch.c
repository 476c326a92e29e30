/* launch.c — GPU entries of kernel instances (their functions in a CUDA
 * module) and their launches; freeing a plugin module's GPU code. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "registry.h" /* hk__fail, hk_module_t */

unsigned hk__cuda_lanes(const hk_kernel_info_t *info) {
  if (info->kind != HK_KIND_ELEMENTWISE) return 1;
  size_t widest = 1;
  for (int i = 0; i < info->nparams; i++)
    if (info->params[i].role != HK_ROLE_SCALAR &&
        hk_dtype_size(info->params[i].dtype) > widest)
      widest = hk_dtype_size(info->params[i].dtype);
  return hk_abi_cuda_lanes(widest);
}

/* Finds prefix + info->name in mod into *fn. HK_OK, or HK_EUNSUPPORTED
 * with "GPU code has no NAME (driver error)" in d. */
static int entry_function(CUmodule mod, const char *prefix,
                          const hk_kernel_info_t *info, CUfunction *fn,
                          hku_diags *d) {
  char fname[200];
  snprintf(fname, sizeof fname, "%s%s", prefix, info->name);
  CUresult r = hk__cuda.api.cuModuleGetFunction(fn, mod, fname);
  if (r) {
    char b[HK_CUDA_ERRLEN];
    hku_diag_add(d, HKU_ERROR, NULL, 0, 0, "GPU code has no %s (%s)", fname,
                 hk__cuda_strerror(r, b, sizeof b));
    return HK_EUNSUPPORTED;
  }
  return HK_OK;
}

int hk__cuda_entry_make(CUmodule mod, const hk_kernel_info_t *info,
                        hk_cuda_entry_t *e, hku_diags *d) {
  HK_ASSERT(atomic_load(&hk__cuda_started));
  memset(e, 0, sizeof *e);
  e->kind = info->kind;
  e->info = info;
  unsigned lanes = hk__cuda_lanes(info);
  e->vec_lanes = lanes ? lanes : 1;
  e->out_index = -1;
  if (info->nparams + HK_CUDA_EXTRA_ARGS > HK_CUDA_MAX_ARGS) {
    hku_diag_add(d, HKU_ERROR, NULL, 0, 0,
                 "%s has %d parameters; the GPU backend takes at most %d",
                 info->name, info->nparams,
                 HK_CUDA_MAX_ARGS - HK_CUDA_EXTRA_ARGS);
    return HK_EUNSUPPORTED;
  }
  if (info->kind != HK_KIND_REDUCTION)
    return entry_function(mod, HK_ABI_CUDA_KERNEL, info, &e->fn, d);
  for (int i = 0; i < info->nparams && e->out_index < 0; i++)
    if (info->params[i].role == HK_ROLE_OUT ||
        info->params[i].role == HK_ROLE_INOUT)
      e->out_index = i;
  HK_ASSERT(e->out_index >= 0); /* a reduction has a result parameter */
  int rc = entry_function(mod, HK_ABI_CUDA_PART, info, &e->fn, d);
  if (!rc) rc = entry_function(mod, HK_ABI_CUDA_MERGE, info, &e->merge, d);
  return rc;
}

void hk__cuda_module_free(hk_module_t *m) {
  if (m->cuda) {
    if (m->cuda->mod && atomic_load(&hk__cuda_started))
      hk__cuda.api.cuModuleUnload(m->cuda->mod);
    free(m->cuda->entries);
    free(m->cuda);
  }
  free(m->cuda_note);
}

/* Blocks of HK_ABI_CUDA_BLOCK threads for work items (at least 1, at most
 * cap). */
static unsigned blocks_for(size_t work, unsigned cap) {
  size_t b = (work + HK_ABI_CUDA_BLOCK - 1) / HK_ABI_CUDA_BLOCK;
  if (b < 1) b = 1;
  return b > cap ? cap : (unsigned)b;
}

/* 1 when parameter i of a reduction receives its result (out, inout). */
static int is_result(const hk_kernel_info_t *in, int i) {
  return in->params[i].role == HK_ROLE_OUT ||
         in->params[i].role == HK_ROLE_INOUT;
}

/* Puts the kernel argument of each parameter of in into kp from *np on
 * (with skip_results, skipping a reduction's out and inout parameters):
 * buffers by the address of their device pointer in args, scalars by their
 * value's pointer. */
static void put_params(const hk_kernel_info_t *in, void *const *args,
                       int skip_results, void **kp, int *np) {
  for (int i = 0; i < in->nparams; i++) {
    if (skip_results && is_result(in, i)) continue;
    kp[(*np)++] = in->params[i].role == HK_ROLE_SCALAR ? args[i]
                                                        : (void *)&args[i];
  }
}

/* Queues a reduction's two launches over nrows rows of n elements (a flat
 * call: one row): the parts, parts blocks per row (ins and scalars, the
 * partials, n), then the merge, one block per row (the partials, their
 * count per row, each out and inout parameter, the scalars, n). args as
 * hk_call's, the rows' first elements; partials holds nrows * parts
 * accumulators. */
static CUresult launch_part_merge(const hk_cuda_entry_t *e, CUstream s,
                                  size_t parts, unsigned nrows, size_t n,
                                  void *const *args, CUdeviceptr *partials) {
  const hk_cuda_api_t *a = &hk__cuda.api;
  const hk_kernel_info_t *in = e->info;
  void *kp[HK_CUDA_MAX_ARGS];
  int np = 0;
  put_params(in, args, 1, kp, &np);
  kp[np++] = partials;
  kp[np++] = &n;
  CUresult r = a->cuLaunchKernel(e->fn, (unsigned)parts, nrows, 1,
                                 HK_ABI_CUDA_BLOCK, 1, 1, 0, s, kp, NULL);
  if (r) return r;
  np = 0;
  kp[np++] = partials;
  kp[np++] = &parts;
  for (int i = 0; i < in->nparams; i++)
    if (is_result(in, i)) kp[np++] = (void *)&args[i];
  for (int i = 0; i < in->nparams; i++)
    if (in->params[i].role == HK_ROLE_SCALAR) kp[np++] = args[i];
  kp[np++] = &n;
  return a->cuLaunchKernel(e->merge, nrows, 1, 1, HK_ABI_CUDA_BLOCK, 1, 1, 0,
                           s, kp, NULL);
}

/* Launches a flat reduction into the stream's scratch partials. st->lock
 * held: the partials buffer is the stream's, and the two launches must not
 * interleave with another reduction's. */
static CUresult launch_reduction(const hk_cuda_entry_t *e,
                                 struct hk_stream *st, size_t n,
                                 void *const *args) {
  HK_ASSERT(hk__cuda_locked(&st->lock));
  return launch_part_merge(e, st->s, blocks_for(n, HK_CUDA_MAX_PARTS), 1, n,
                           args, &st->scratch);
}

/* The error of a launch the driver refused (r != 0), or HK_OK. */
static int launch_result(const hk_cuda_entry_t *e, CUresult r) {
  if (r) {
    char b[HK_CUDA_ERRLEN];
    return hk__fail(HK_EDEVICE, "kernel %s: GPU launch failed: %s",
                    e->info->name, hk__cuda_strerror(r, b, sizeof b));
  }
  return HK_OK;
}

int hk__cuda_launch_rows(const hk_cuda_entry_t *e, struct hk_stream *st,
                         size_t rows, size_t n, void *const *args) {
  HK_ASSERT(atomic_load(&hk__cuda_started) && e->kind == HK_KIND_ROWS);
  if (rows == 0) return HK_OK;
  void *kp[HK_CUDA_MAX_ARGS];
  int np = 0;
  put_params(e->info, args, 0, kp, &np);
  kp[np++] = &n;
  kp[np++] = &rows;
  const unsigned grid_cap = (unsigned)hk__cuda.info.sm_count * 16u;
  return launch_result(
      e, hk__cuda.api.cuLaunchKernel(e->fn, blocks_for(rows, grid_cap), 1, 1,
                                     HK_ABI_CUDA_BLOCK, 1, 1, 0, st->s, kp,
                                     NULL));
}

int hk__cuda_launch(const hk_cuda_entry_t *e, struct hk_stream *st, size_t n,
                    void *const *args) {
  HK_ASSERT(atomic_load(&hk__cuda_started));
  CUresult r;
  if (e->kind == HK_KIND_ROWS) /* a flat call: one row */
    return hk__cuda_launch_rows(e, st, 1, n, args);
  if (e->kind == HK_KIND_REDUCTION) {
    pthread_mutex_lock(&st->lock);
    r = launch_reduction(e, st, n, args);
    pthread_mutex_unlock(&st->lock);
  } else {
    if (e->kind == HK_KIND_ELEMENTWISE && n == 0) return HK_OK;
    const unsigned grid_cap = (unsigned)hk__cuda.info.sm_count * 16u;
    void *kp[HK_CUDA_MAX_ARGS];
    int np = 0;
    put_params(e->info, args, 0, kp, &np);
    kp[np++] = &n;
    /* a grid kernel's index count is known on the device only (its
     * extents come from the scalars there): a full grid, whose threads
     * stride over the indices and leave when there are none */
    size_t work = e->kind == HK_KIND_ELEMENTWISE
                      ? (n + e->vec_lanes - 1) / e->vec_lanes
                  : e->kind == HK_KIND_GRID
                      ? (size_t)grid_cap * HK_ABI_CUDA_BLOCK
                      : n;
    r = hk__cuda.api.cuLaunchKernel(e->fn, blocks_for(work, grid_cap), 1, 1,
                                    HK_ABI_CUDA_BLOCK, 1, 1, 0, st->s, kp,
                                    NULL);
  }
  if (r) {
    char b[HK_CUDA_ERRLEN];
    return hk__fail(HK_EDEVICE, "kernel %s: GPU launch failed: %s",
                    e->info->name, hk__cuda_strerror(r, b, sizeof b));
  }
  return HK_OK;
}

/* ---- axis reductions: rows of m contiguous elements ---------------------- */

/* Elements per part block of an axis reduction's row: a row this long or
 * shorter is one block, a longer one several (up to HK_CUDA_MAX_PARTS). */
#define ROW_PART_ELEMS ((size_t)HK_ABI_CUDA_BLOCK * 16)
/* Rows per launch: the y extent of the part kernel's grid. */
#define ROWS_PER_LAUNCH ((size_t)65535)

int hk__cuda_launch_reduce_rows(const hk_cuda_entry_t *e, size_t rows,
                                size_t m, void *const *args) {
  HK_ASSERT(atomic_load(&hk__cuda_started) && e->kind == HK_KIND_REDUCTION);
  if (rows == 0) return HK_OK;
  const hk_cuda_api_t *a = &hk__cuda.api;
  const hk_kernel_info_t *in = e->info;
  struct hk_stream *st = hk__stream(NULL);
  size_t parts = (m + ROW_PART_ELEMS - 1) / ROW_PART_ELEMS;
  if (parts < 1) parts = 1;
  if (parts > HK_CUDA_MAX_PARTS) parts = HK_CUDA_MAX_PARTS;
  size_t chunk = rows < ROWS_PER_LAUNCH ? rows : ROWS_PER_LAUNCH;
  void *partials = NULL;
  int rc = hk_device_alloc(&partials, chunk * parts * HK_REDUCE_ACC_MAX);
  if (rc) return rc;
  CUdeviceptr pd = (CUdeviceptr)(uintptr_t)partials;
  CUresult r = HK_CUDA_SUCCESS;
  for (size_t r0 = 0; r0 < rows && !r; r0 += chunk) {
    unsigned nr = (unsigned)(rows - r0 < chunk ? rows - r0 : chunk);
    void *at[HK_CUDA_MAX_ARGS];
    for (int i = 0; i < in->nparams; i++) {
      if (in->params[i].role == HK_ROLE_SCALAR || !args[i]) {
        at[i] = args[i];
        continue;
      }
      size_t es = hk_dtype_size(in->params[i].dtype);
      at[i] = (char *)args[i] + (is_result(in, i) ? r0 : r0 * m) * es;
    }
    r = launch_part_merge(e, st->s, parts, nr, m, at, &pd);
  }
  rc = launch_result(e, r);
  /* the partials go back to the pool once the launches queued have run */
  CUresult sr = a->cuStreamSynchronize(st->s);
  hk_device_free(partials);
  if (!rc && sr) {
    char b[HK_CUDA_ERRLEN];
    rc = hk__fail(HK_EDEVICE,
                  "kernel %s failed on the GPU: %s (the CUDA context may be "
                  "unusable now)",
                  in->name, hk__cuda_strerror(sr, b, sizeof b));
  }
  return rc;
}

/* ---- strided copies ----------------------------------------------------------
 * A view reaches the kernels (codegen/emit_cuda.c, copy_kernels) collapsed
 * to the fewest axes that give the same offsets in the same order, and
 * takes the tiled kernel when it is a batch of transposes, else the 32-bit
 * one when it is small enough, else the 64-bit one. */

/* Both axes of a transpose must be at least this long for the tiled
 * kernel: a thinner tile leaves most of its block's threads idle and its
 * work too small for the block's start and two barriers; the plain kernel
 * serves such views (with a short last axis, its warps still read or
 * write runs of 32 / len elements of the view). A heuristic, not
 * measured. */
#define TILE_MIN 16

/* The view shape[0..nd), st[0..nd) as the fewest axes cs[], cst[] with the
 * same offsets in the same (C) order: axes of length 1 dropped, and axis d
 * merged into the one before it where that one's stride is st[d] *
 * shape[d] (the merged axis's index i * shape[d] + j has offset
 * i * st[d - 1] + j * st[d]). The run's side is unchanged: it is C order
 * over either shape. Returns the axes left (0: a single element). */
static int collapse(int nd, const int64_t *shape, const int64_t *st,
                    int64_t *cs, int64_t *cst) {
  int k = 0;
  for (int d = 0; d < nd; d++) {
    int64_t span;
    if (shape[d] == 1) continue;
    if (k > 0 && !__builtin_mul_overflow(st[d], shape[d], &span) &&
        cst[k - 1] == span) {
      cs[k - 1] *= shape[d];
      cst[k - 1] = st[d];
      continue;
    }
    cs[k] = shape[d];
    cst[k] = st[d];
    k++;
  }
  return k;
}

/* The magic number and shift that divide by d (1 <= d <= INT32_MAX) any
 * n <= INT32_MAX: n / d == (umulhi(n, magic) + n) >> shift, where shift =
 * ceil(log2 d) and magic = floor(2^32 (2^shift - d) / d) + 1, which fits in
 * 32 bits (Granlund and Montgomery's round-up method, as PyTorch's
 * IntDivider; umulhi(n, magic) <= n, so the sum stays below 2^32). */
static void divider(uint32_t d, unsigned *magic, unsigned *shift) {
  HK_ASSERT(d >= 1 && d <= INT32_MAX);
  unsigned s = 0;
  while (((uint64_t)1 << s) < d) s++;
  uint64_t m = ((uint64_t)1 << 32) * (((uint64_t)1 << s) - d) / d + 1;
  HK_ASSERT(m <= UINT32_MAX);
  *magic = (unsigned)m;
  *shift = s;
}

/* 1 when the collapsed view (nd axes of cs, cst) is a batch of transposes
 * that the tiled kernel moves faster: two or three axes, unit stride (either
 * sign) on the next-to-last, another stride on the last (not 0: a
 * broadcast row is read once a warp by the plain kernel). */
static int transposes(int nd, const int64_t *cs, const int64_t *cst) {
  if (nd != 2 && nd != 3) return 0;
  int64_t sr = cst[nd - 2], sc = cst[nd - 1];
  return (sr == 1 || sr == -1) && sc != 0 && sc != 1 && sc != -1 &&
         cs[nd - 2] >= TILE_MIN && cs[nd - 1] >= TILE_MIN;
}

/* want blocks along a grid axis that takes at most cap. */
static unsigned grid_dim(int64_t want, int64_t cap) {
  return (unsigned)(want < cap ? want : cap);
}

int hk__cuda_copy_strided(void *dst, const void *src, size_t es, int nd,
                          const int64_t *shape, const int64_t *stv,
                          int scatter, size_t n) {
  int rc = hk__cuda_ready(); /* no device: its reason; else current here */
  if (rc) return rc;
  int which = es == 1 ? 0 : es == 2 ? 1 : es == 4 ? 2 : es == 8 ? 3 : -1;
  if (which < 0 || nd < 0 || nd > HK_MAX_DIMS)
    return hk__fail(HK_EINTERNAL, "strided copy of %zu-byte elements", es);
  if (!hk__cuda.copy[which])
    return hk__fail(HK_EUNSUPPORTED,
                    "strided and broadcast arrays on the GPU need the "
                    "stdlib's GPU code (libhk built with nvcc), which %s",
                    hk__cuda.stdlib ? "lacks the copy kernels"
                                    : "this libhk has not or cannot load");
  if (n == 0) return HK_OK;
  int64_t cs[HK_MAX_DIMS], cst[HK_MAX_DIMS];
  int cn = collapse(nd, shape, stv, cs, cst);
#ifndef NDEBUG
  uint64_t count = 1; /* the callers' n is the view's size */
  for (int d = 0; d < cn; d++) count *= (uint64_t)cs[d];
  HK_ASSERT(count == n);
#endif

  const int scat = scatter;
  CUfunction f;
  unsigned grid[3] = {1, 1, 1}, block[3] = {HK_ABI_CUDA_BLOCK, 1, 1};
  void *kp[9];
  /* the kernels' arguments, alive until the launch below */
  int64_t B, R, C, sb, sr, sc;
  hk_cuda_strided_t g;
  unsigned n32 = (unsigned)n;
  if (transposes(cn, cs, cst) && hk__cuda.copyt[which]) {
    B = cn == 3 ? cs[0] : 1;
    sb = cn == 3 ? cst[0] : 0;
    R = cs[cn - 2];
    sr = cst[cn - 2];
    C = cs[cn - 1];
    sc = cst[cn - 1];
    f = hk__cuda.copyt[which];
    /* grid limits: x 2^31 - 1, y and z 65535 (the kernel loops past) */
    grid[0] = grid_dim((C + HK_ABI_CUDA_TILE - 1) / HK_ABI_CUDA_TILE,
                       INT32_MAX);
    grid[1] = grid_dim((R + HK_ABI_CUDA_TILE - 1) / HK_ABI_CUDA_TILE, 65535);
    grid[2] = grid_dim(B, 65535);
    block[0] = HK_ABI_CUDA_TILE;
    block[1] = HK_ABI_CUDA_TILE_ROWS;
    void *a[] = {(void *)&src, &dst, &B, &R, &C, &sb, &sr, &sc,
                 (void *)&scat};
    memcpy(kp, a, sizeof a);
  } else {
    memset(&g, 0, sizeof g);
    g.nd = cn;
    for (int d = 0; d < cn; d++) {
      g.shape[d] = cs[d];
      g.st[d] = cst[d];
    }
    int small = n <= INT32_MAX && hk__cuda.copy32[which];
    if (small)
      for (int d = 0; d < cn; d++)
        divider((uint32_t)cs[d], &g.magic[d], &g.shift[d]);
    f = small ? hk__cuda.copy32[which] : hk__cuda.copy[which];
    grid[0] = blocks_for(n, (unsigned)hk__cuda.info.sm_count * 16u);
    void *a[] = {(void *)&src, &dst, &g, (void *)&scat,
                 small ? (void *)&n32 : (void *)&n};
    memcpy(kp, a, sizeof a);
  }
  CUresult r = hk__cuda.api.cuLaunchKernel(
      f, grid[0], grid[1], grid[2], block[0], block[1], block[2], 0,
      hk__stream(NULL)->s, kp, NULL);
  if (r) {
    char b[HK_CUDA_ERRLEN];
    return hk__fail(HK_EDEVICE, "a strided copy on the GPU failed to launch: %s",
                    hk__cuda_strerror(r, b, sizeof b));
  }
  return HK_OK;
}

int hk__cuda_sync_default(const char *what) {
  int rc = hk__cuda_ready();
  if (rc) return rc;
  CUresult r = hk__cuda.api.cuStreamSynchronize(hk__stream(NULL)->s);
  if (r) {
    char b[HK_CUDA_ERRLEN];
    return hk__fail(HK_EDEVICE,
                    "%s failed on the GPU: %s (the CUDA context may be "
                    "unusable now)",
                    what, hk__cuda_strerror(r, b, sizeof b));
  }
  return HK_OK;
}
