/* launch.c — GPU entries of kernel instances (their functions in a CUDA
 * module) and their launches (flat, rows, axis reductions, elementwise
 * over strided arrays); freeing a plugin module's GPU code. */
#include <stddef.h>
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
  if (info->kind == HK_KIND_GRID && /* the restrict variant is optional */
      entry_function(mod, HK_ABI_CUDA_NOALIAS, info, &e->noalias, NULL))
    e->noalias = NULL;
  if (info->kind == HK_KIND_ELEMENTWISE && /* the N-D entry is optional:
      GPU code made before it existed, or of an instance with too many
      buffers, has none (arrays are then staged through copies, arrays.c) */
      entry_function(mod, HK_ABI_CUDA_ND, info, &e->nd, NULL))
    e->nd = NULL;
  if (info->kind == HK_KIND_ROWS && /* only a kernel with a "cuda" body has
      its cooperative entry; the others run a thread a row */
      entry_function(mod, HK_ABI_CUDA_ROWS_COOP, info, &e->crow, NULL))
    e->crow = NULL;
  for (int i = 0; info->kind == HK_KIND_ROWS && i < info->nparams; i++)
    e->staged += info->params[i].role != HK_ROLE_SCALAR &&
                 (info->params[i].dtype == HK_F16 ||
                  info->params[i].dtype == HK_BF16);
  if (info->kind != HK_KIND_REDUCTION)
    return entry_function(mod, HK_ABI_CUDA_KERNEL, info, &e->fn, d);
  for (int i = 0; i < info->nparams && e->out_index < 0; i++)
    if (info->params[i].role == HK_ROLE_OUT ||
        info->params[i].role == HK_ROLE_INOUT)
      e->out_index = i;
  HK_ASSERT(e->out_index >= 0); /* a reduction has a result parameter */
  int rc = entry_function(mod, HK_ABI_CUDA_PART, info, &e->fn, d);
  if (!rc) rc = entry_function(mod, HK_ABI_CUDA_MERGE, info, &e->merge, d);
  /* optional: GPU code without it (generated before it was) runs every
   * axis reduction by part and merge */
  if (!rc && entry_function(mod, HK_ABI_CUDA_ROWS_WARP, info, &e->wrow, NULL))
    e->wrow = NULL;
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

/* The most scratch a staged rows launch asks for when it can run fewer
 * threads (blocks) instead: their rows' float copies, each thread's
 * (block's) nstaged * max(n, 1) floats. A launch over rows of 768 in f16
 * (softmax: 6 KiB a block) stays far below; one over rows of 50,257 (400
 * KiB a block) runs 166 blocks where it would otherwise run 528 on an
 * H200 (4 blocks of 1024 threads an SM). A stream keeps up to this much
 * for its next calls; more (one row's copies alone) is freed after the
 * call. */
#define ROWS_SCRATCH_MAX ((size_t)64 << 20)

/* Frees st's rows scratch once the stream's queued work is done (which may
 * use it). HK_OK, or HK_EDEVICE with the last error set (kernel name's
 * words) when that work failed. */
static int rows_scratch_free(const char *name, struct hk_stream *st) {
  const hk_cuda_api_t *a = &hk__cuda.api;
  CUresult r = st->rows_scratch ? a->cuStreamSynchronize(st->s) : 0;
  if (st->rows_scratch) a->cuMemFree(st->rows_scratch);
  st->rows_scratch = 0;
  st->rows_scratch_bytes = 0;
  if (r) {
    char b[HK_CUDA_ERRLEN];
    return hk__fail(HK_EDEVICE,
                    "kernel %s: the GPU failed earlier work on this stream: "
                    "%s",
                    name, hk__cuda_strerror(r, b, sizeof b));
  }
  return HK_OK;
}

/* st's rows scratch for *units units of per bytes each, into *p: the one
 * it has when that is long enough, else a new one (after the stream's
 * queued work, which may use the old), twice the old one's length where
 * that is more and within ROWS_SCRATCH_MAX, so that growing calls do not
 * wait each time. When the GPU has no memory for it, fewer units (*units
 * halved, down to 1). st->lock held, until the launch that uses it is
 * queued. HK_OK; HK_ENOMEM (not even one unit's), HK_EDEVICE (earlier
 * work failed) with the last error set. */
static int rows_scratch(const hk_cuda_entry_t *e, struct hk_stream *st,
                        size_t *units, size_t per, CUdeviceptr *p) {
  HK_ASSERT(hk__cuda_locked(&st->lock));
  const char *name = e->info->name;
  size_t bytes = *units * per; /* no overflow: the caller's check */
  if (st->rows_scratch_bytes >= bytes) {
    *p = st->rows_scratch;
    return HK_OK;
  }
  size_t want = st->rows_scratch_bytes * 2; /* (before it is freed) */
  want = want > bytes && want <= ROWS_SCRATCH_MAX ? want : bytes;
  int rc = rows_scratch_free(name, st);
  if (rc) return rc;
  CUresult r;
  while ((r = hk__cuda.api.cuMemAlloc(&st->rows_scratch, want)) ==
             HK_CUDA_ERROR_OUT_OF_MEMORY &&
         (want > bytes || *units > 1)) {
    if (want > bytes) {
      want = bytes;
      continue;
    }
    *units /= 2;
    want = bytes = *units * per;
  }
  if (r) {
    char b[HK_CUDA_ERRLEN];
    st->rows_scratch = 0;
    return hk__fail(hk__cuda_code(r),
                    "kernel %s: cannot have %zu bytes of GPU memory for the "
                    "float copies of a row of its f16 and bf16 buffers: %s",
                    name, per, hk__cuda_strerror(r, b, sizeof b));
  }
  st->rows_scratch_bytes = want;
  *p = st->rows_scratch;
  return HK_OK;
}

/* Queues staged rows entry e (fn: its thread-a-row or block-a-row entry,
 * with blocks of lanes threads, blocks at most) over rows rows of n, kp
 * its arguments from the kernel's parameters to rows (np of them): each
 * thread (a thread a row) or block (a block a row) has its float copies in
 * st's rows scratch; fewer of them where that would be long (the rows
 * grid-stride over them). HK_OK or the error, with the last error set. */
static int launch_rows_staged(const hk_cuda_entry_t *e, struct hk_stream *st,
                              CUfunction fn, unsigned blocks, unsigned lanes,
                              size_t rows, size_t n, void **kp, int np) {
  const int coop = fn == e->crow;
  size_t per;
  if (__builtin_mul_overflow((size_t)e->staged * sizeof(float), n ? n : 1,
                             &per))
    return hk__fail(HK_ENOMEM,
                    "kernel %s: rows of %zu elements are too long for float "
                    "copies of its f16 and bf16 buffers",
                    e->info->name, n);
  /* the units that would run, at most ROWS_SCRATCH_MAX of copies (at
   * least one unit); a thread a row: no more threads than rows */
  size_t units = coop ? blocks : (size_t)blocks * lanes;
  if (!coop && units > rows) units = rows;
  const size_t fit = ROWS_SCRATCH_MAX / per ? ROWS_SCRATCH_MAX / per : 1;
  if (units > fit) units = fit;
  CUdeviceptr scratch = 0;
  pthread_mutex_lock(&st->lock);
  int rc = rows_scratch(e, st, &units, per, &scratch);
  if (!rc) {
    if (coop) {
      blocks = (unsigned)units;
    } else { /* units threads in blocks of lanes (fewer: one block) */
      if (units < lanes) lanes = (unsigned)units;
      blocks = (unsigned)(units / lanes); /* (the rest idle: rows stride) */
    }
    kp[np++] = &scratch;
    rc = launch_result(e, hk__cuda.api.cuLaunchKernel(fn, blocks, 1, 1, lanes,
                                                      1, 1, 0, st->s, kp,
                                                      NULL));
    /* one unit's copies alone are over the limit: not kept */
    if (st->rows_scratch_bytes > ROWS_SCRATCH_MAX) {
      int frc = rows_scratch_free(e->info->name, st);
      if (!rc) rc = frc;
    }
  }
  pthread_mutex_unlock(&st->lock);
  return rc;
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
  CUfunction fn = e->fn;
  unsigned blocks, lanes = HK_ABI_CUDA_BLOCK;
  if (e->crow) {
    /* a block of hk_abi_rows_lanes(n) threads a row (n alone picks it, so
     * the bits never depend on the device), the blocks grid-stride: as
     * many as fill every SM twice over with threads (2048 an SM), at most
     * one a row (a grid of what the SMs hold at once, the driver's
     * occupancy, took softmax by rows of 1024 from 80 to 92 us on an H200) */
    fn = e->crow;
    lanes = hk_abi_rows_lanes(n);
    size_t cap = (size_t)hk__cuda.info.sm_count * (2u * 2048u / lanes);
    blocks = (unsigned)(rows < cap ? rows : cap);
  } else {
    blocks = blocks_for(rows, grid_cap);
  }
  if (e->staged)
    return launch_rows_staged(e, st, fn, blocks, lanes, rows, n, kp, np);
  return launch_result(e, hk__cuda.api.cuLaunchKernel(fn, blocks, 1, 1, lanes,
                                                      1, 1, 0, st->s, kp,
                                                      NULL));
}

int hk__cuda_launch(const hk_cuda_entry_t *e, struct hk_stream *st, size_t n,
                    void *const *args, int64_t grid_count, int noalias) {
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
    /* a grid kernel: threads striding over the indices, as many as the
     * count needs where it is known, at most the elementwise kind's grid
     * (each thread evaluates the extents and setup values once: a thread
     * per index, 2^24 of them, ran a 1-D grid add at 68% of the
     * elementwise add's bandwidth on an H200 and a 2-D one at 37%, the
     * capped grid at 85%); where the count is unknown, the capped grid,
     * whose threads leave when there are no indices for them */
    unsigned blocks;
    if (e->kind == HK_KIND_GRID)
      blocks = grid_count >= 0 ? blocks_for((size_t)grid_count, grid_cap)
                               : grid_cap;
    else
      blocks = blocks_for(e->kind == HK_KIND_ELEMENTWISE
                              ? (n + e->vec_lanes - 1) / e->vec_lanes
                              : n,
                          grid_cap);
    CUfunction fn = noalias && e->noalias ? e->noalias : e->fn;
    r = hk__cuda.api.cuLaunchKernel(fn, blocks, 1, 1, HK_ABI_CUDA_BLOCK, 1, 1,
                                    0, st->s, kp, NULL);
  }
  if (r) {
    char b[HK_CUDA_ERRLEN];
    return hk__fail(HK_EDEVICE, "kernel %s: GPU launch failed: %s",
                    e->info->name, hk__cuda_strerror(r, b, sizeof b));
  }
  return HK_OK;
}

/* ---- elementwise over strided arrays: the N-D entry ---------------------- */

_Static_assert(offsetof(hk_abi_cuda_nd_t, st) == HK_ABI_CUDA_ND_HEAD,
               "the N-D entry's head (the generated struct hk_nd_head)");

/* 1 when every offset of a buffer with strides st along nd axes of len
 * fits an int: the sum of (len - 1) * |st| is at most INT32_MAX. */
static int offsets_fit_int(int nd, const uint64_t *len, const int64_t *st) {
  uint64_t reach = 0;
  for (int d = 0; d < nd; d++) {
    uint64_t a = st[d] < 0 ? 0 - (uint64_t)st[d] : (uint64_t)st[d];
    if (len[d] <= 1 || a == 0) continue;
    if (a > INT32_MAX || len[d] - 1 > INT32_MAX) return 0;
    reach += (len[d] - 1) * a; /* < 2^62 + INT32_MAX: no overflow */
    if (reach > INT32_MAX) return 0;
  }
  return 1;
}

int hk__cuda_launch_nd(const hk_cuda_entry_t *e, struct hk_stream *st, int nd,
                       const int64_t *shape, const int64_t *const *strides,
                       size_t n, void *const *args, unsigned flags) {
  HK_ASSERT(atomic_load(&hk__cuda_started) &&
            e->kind == HK_KIND_ELEMENTWISE && e->nd);
  HK_ASSERT(nd >= 1 && nd <= HK_MAX_DIMS);
  const hk_kernel_info_t *in = e->info;
  if (n == 0) return HK_OK;
  if (n > (size_t)INT64_MAX) return HK__ND_NONE; /* the divider's bound */
  /* A 1-D call gets a leading axis of 1: the kernel's 2-axis loop, whose
   * one division (by n) costs less than the general loop's checks. */
  hk_abi_cuda_nd_t g;
  memset(&g, 0, sizeof g);
  const int pad = nd < 2;
  g.nd = nd + pad;
  g.len[0] = 1;
  for (int d = 0; d < nd; d++) {
    HK_ASSERT(shape[d] >= 1);
    g.len[pad + d] = (uint64_t)shape[d];
  }
  int nb = 0;
  for (int i = 0; i < in->nparams; i++) {
    if (in->params[i].role == HK_ROLE_SCALAR) continue;
    if (nb == HK_ABI_CUDA_ND_BUFS) return HK__ND_NONE;
    for (int d = 0; d < nd; d++) g.st[nb][pad + d] = strides[i][d];
    nb++;
  }
  /* 32-bit index math (the kernel's loop of 2 axes) when there are 2
   * axes, every flat index and every axis index is under 2^31 (the
   * divider's bound) and every offset fits an int; else the general loop,
   * 64-bit (emit_cuda.c: a 32-bit loop of more axes would be another copy
   * of the body to compile for the rarer calls) */
  int wide = n > (size_t)INT32_MAX || g.nd > 2 || (flags & HK__ND_WIDE);
  for (int b = 0; b < nb && !wide; b++)
    wide = !offsets_fit_int(g.nd, g.len, g.st[b]);
  g.wide = wide;
  for (int d = 1; d < g.nd; d++) /* len <= n: within the divider's bound */
    g.mul[d] = hk_abi_cuda_divider(g.len[d], wide ? 64 : 32, &g.shift[d]);
  void *kp[HK_CUDA_MAX_ARGS];
  int np = 0;
  put_params(in, args, 0, kp, &np);
  kp[np++] = &g; /* the kernel reads its hk_nd<nb>: g's first bytes */
  kp[np++] = &n;
  const unsigned unroll = hk_abi_cuda_nd_unroll(nb);
  const unsigned grid_cap = (unsigned)hk__cuda.info.sm_count * 16u;
  return launch_result(
      e, hk__cuda.api.cuLaunchKernel(e->nd, blocks_for((n - 1) / unroll + 1,
                                                       grid_cap),
                                     1, 1, HK_ABI_CUDA_BLOCK, 1, 1, 0, st->s,
                                     kp, NULL));
}

/* ---- axis reductions: rows of m contiguous elements ---------------------- */

/* Elements per part block of an axis reduction's row: a row this long or
 * shorter is one block, a longer one several (up to HK_CUDA_MAX_PARTS).
 * 64 a thread, as a whole-array sum of 16M elements takes (its 1024 part
 * blocks): with 16, sums over 16 rows of 2^20 floats ran 4096 blocks and
 * took 1.12x the whole sum on an H200, each block's tree and partial a
 * cost paid four times as often. */
#define ROW_PART_ELEMS ((size_t)HK_ABI_CUDA_BLOCK * 64)
/* Rows per launch: the y extent of the part kernel's grid. */
#define ROWS_PER_LAUNCH ((size_t)65535)
/* The longest rows a warp per row may take: 128 elements a lane. */
#define ROW_WARP_ELEMS ((size_t)4096)

/* 1 when rows rows of m elements run a warp per row (the wrow kernel), 0
 * when part blocks and a merge block per row.
 *
 * A lane of a row's warp takes m / 32 elements, m / 128 rounds of four
 * loads one after the other; part and merge take m / 1024 rounds a thread
 * but pay, for each row, a tree of 256 threads in each of two launches,
 * and the second launch and the partials (on an H200, sums over rows of 64
 * took 21x the time of the whole-array sum of the same 16M floats, rows of
 * 1024 1.9x). The warp is the faster where its longer chain of loads is
 * hidden: where rows are short (a few rounds against that fixed cost of
 * several memory latencies), or many (an H100 or H200 holds 132 x 64
 * warps, and needs about 7K of them with four 128-byte loads in flight to
 * cover a memory latency at full bandwidth). rows >= m asks for both
 * together: rows of 4096 (32 rounds) need 4096 rows, half the warps the
 * GPU holds, where the two ways come out about even; rows of 1024 (8
 * rounds, about part and merge's fixed cost) 1024 rows; rows of 64 (one
 * round) 64. It looks at the shape only, not at the device: the two ways
 * round differently, and a shape's results are the same on every GPU. */
static int rows_by_warp(size_t rows, size_t m) {
  return m <= ROW_WARP_ELEMS && rows >= m;
}

/* Queues the warp-per-row kernel over rows rows of m elements: every
 * parameter (args as hk_call's, the rows' first elements), m, rows. One
 * launch takes any number of rows: the warps stride over them. */
static CUresult launch_rows_warps(const hk_cuda_entry_t *e, CUstream s,
                                  size_t rows, size_t m, void *const *args) {
  void *kp[HK_CUDA_MAX_ARGS];
  int np = 0;
  put_params(e->info, args, 0, kp, &np);
  kp[np++] = &m;
  kp[np++] = &rows;
  const size_t per_block = HK_ABI_CUDA_BLOCK / HK_ABI_CUDA_WARP;
  /* 16 blocks an SM, more than one holds at once: a grid of one wave (the
   * driver's occupancy) took sums over rows of 64 from 1.08-1.11x to 1.22x
   * the whole sum on an H200 (the blocks left over hide the others'
   * latency) */
  const unsigned grid_cap = (unsigned)hk__cuda.info.sm_count * 16u;
  size_t blocks = (rows + per_block - 1) / per_block;
  if (blocks > grid_cap) blocks = grid_cap;
  return hk__cuda.api.cuLaunchKernel(e->wrow, (unsigned)blocks, 1, 1,
                                     HK_ABI_CUDA_BLOCK, 1, 1, 0, s, kp, NULL);
}

/* Queues rows rows of m elements as part and merge launches of at most
 * chunk rows each, parts part blocks a row; partials holds chunk * parts
 * accumulators. */
static CUresult launch_rows_blocks(const hk_cuda_entry_t *e, CUstream s,
                                   size_t rows, size_t m, size_t parts,
                                   size_t chunk, void *const *args,
                                   CUdeviceptr partials) {
  const hk_kernel_info_t *in = e->info;
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
    r = launch_part_merge(e, s, parts, nr, m, at, &partials);
  }
  return r;
}

int hk__cuda_launch_reduce_rows(const hk_cuda_entry_t *e, size_t rows,
                                size_t m, void *const *args, int how) {
  HK_ASSERT(atomic_load(&hk__cuda_started) && e->kind == HK_KIND_REDUCTION);
  HK_ASSERT(how == HK_ROWS_BY_SHAPE || how == HK_ROWS_BY_WARP ||
            how == HK_ROWS_BY_BLOCKS);
  const hk_kernel_info_t *in = e->info;
  if (how == HK_ROWS_BY_WARP && !e->wrow)
    return hk__fail(HK_EUNSUPPORTED,
                    "kernel %s: its GPU code has no " HK_ABI_CUDA_ROWS_WARP
                    "%s (a warp per row)",
                    in->name, in->name);
  if (rows == 0) return HK_OK;
  struct hk_stream *st = hk__stream(NULL);
  int by_warp = e->wrow && (how == HK_ROWS_BY_WARP ||
                            (how == HK_ROWS_BY_SHAPE && rows_by_warp(rows, m)));
  void *partials = NULL;
  CUresult r;
  if (by_warp) {
    r = launch_rows_warps(e, st->s, rows, m, args);
  } else {
    size_t parts = (m + ROW_PART_ELEMS - 1) / ROW_PART_ELEMS;
    if (parts < 1) parts = 1;
    if (parts > HK_CUDA_MAX_PARTS) parts = HK_CUDA_MAX_PARTS;
    size_t chunk = rows < ROWS_PER_LAUNCH ? rows : ROWS_PER_LAUNCH;
    int rc = hk_device_alloc(&partials, chunk * parts * HK_REDUCE_ACC_MAX);
    if (rc) return rc;
    r = launch_rows_blocks(e, st->s, rows, m, parts, chunk, args,
                           (CUdeviceptr)(uintptr_t)partials);
  }
  int rc = launch_result(e, r);
  /* the call returns with its results in place (hk_call_arrays waits);
   * the partials go back to the pool once the launches queued have run */
  CUresult sr = hk__cuda.api.cuStreamSynchronize(st->s);
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

int hk__cuda_copy_tiled(size_t es, int nd, const int64_t *shape,
                        const int64_t *st) {
  int which = es == 1 ? 0 : es == 2 ? 1 : es == 4 ? 2 : es == 8 ? 3 : -1;
  if (which < 0 || nd < 0 || nd > HK_MAX_DIMS || !hk__cuda.copyt[which])
    return 0;
  int64_t cs[HK_MAX_DIMS], cst[HK_MAX_DIMS];
  int cn = collapse(nd, shape, st, cs, cst);
  return transposes(cn, cs, cst);
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
      for (int d = 0; d < cn; d++) {
        /* i / cs[d] == (umulhi(i, magic) + i) >> shift for i <= INT32_MAX:
         * the N-D entries' 32-bit divider (abi.h), whose magic fits in 32
         * bits there */
        HK_ASSERT(cs[d] >= 1 && cs[d] <= INT32_MAX);
        const uint64_t m =
            hk_abi_cuda_divider((uint64_t)cs[d], 32, &g.shift[d]);
        HK_ASSERT(m <= UINT32_MAX);
        g.magic[d] = (unsigned)m;
      }
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
