/* abi.h — the contract between generated kernel code and the core of libhk.
 *
 * Every kernel instance the code generator emits (stdlib or plugin, C or tcc)
 * exports the same uniform entry points, so the core can run any kernel
 * without knowing its parameters:
 *
 *   range(args, n, begin, end, partial)
 *       args holds one pointer per parameter, in parameter order: buffers as
 *       their data pointer, scalars as a pointer to their value. n is the
 *       whole element count.
 *       elementwise: processes elements [begin, end); partial is unused.
 *       reduction:   partial == NULL: reduces [begin, end), finalizes and
 *                    stores element 0 of every out and inout parameter
 *                    (an inout's current element 0 is read first);
 *                    partial != NULL: stores the accumulator of
 *                    [begin, end), not finalized, into *partial.
 *       raw:         runs the author's body once; begin and end must be 0, n.
 *       rows:        runs the body for rows [begin, end) of n elements each
 *                    (n is the row length here). Each
 *                    buffer's row r is base + r * n (row mode "full"),
 *                    base + r ("one") or base ("shared"). An instance
 *                    with f16 or bf16 buffers stages their rows in f32:
 *                    partial is then its scratch, 4 * max(n, 1) bytes for
 *                    each such buffer (the entry's acc_size is 4 bytes
 *                    for each); otherwise partial is unused.
 *       grid:        partial == NULL: runs the body for the flattened
 *                    indices [begin, end) of the index space (C order);
 *                    partial != NULL (an int64_t[4]): stores the index
 *                    count in [0] (-1 when an extent is negative or the
 *                    count overflows) and the extents in [1..3] (1 past
 *                    the rank), and runs nothing.
 *   merge(args, n, partials, count)          reductions only
 *       combines count accumulators left to right, finalizes, stores
 *       element 0 of every out and inout parameter.
 *   rowred(args, n, r0, r1, steps)           reductions only; optional
 *       for each r in [r0, r1), what range(args_r, n, 0, n, NULL) does,
 *       with args_r[i] = (char *)args[i] + r * steps[i] (steps in bytes; 0
 *       for scalars): one reduction of n elements per row, the range
 *       function's code inlined into the loop over rows (an axis
 *       reduction over short rows spent most of its time calling range
 *       once per row). Plugins built before it have none; the core then
 *       calls range per row. n must be at most HK_REDUCE_BLOCK.
 *   colred(args, n, b0, b1, ncols, steps, partials)  reductions; optional
 *       elements [b0, b1) (one block of hk__reduce_blocks, or all n) of
 *       ncols reductions side by side: element r of reduction c of in
 *       parameter i at (char *)args[i] + r * steps[i] + c * its element
 *       size; per c, what range does over a dense copy of its elements
 *       (the same bits). partials == NULL: stores reduction c's results at
 *       (char *)args[i] + c * steps[i] for each out and inout i; else
 *       stores its accumulator at partials + c * acc_size. Column sums
 *       (an axis reduction over a leading axis) read each row once, where
 *       range per column read each cache line once per column in it.
 *       Plugins built before it have none; the core then gathers each
 *       column and calls range.
 *   lens(args, n, lens)
 *       writes each parameter's element count (-1 for scalars) into
 *       lens[0..nparams); returns 0, or -1 when a `len` expression is
 *       negative. A rows kernel's are those of one row: n ("full",
 *       "shared") or 1 ("one").
 *
 * Reductions over more than HK_REDUCE_BLOCK elements are cut into blocks
 * whose boundaries depend on n alone (hk__reduce_blocks), reduced block by
 * block (on any threads) and merged in block order, so a result never
 * depends on the thread count. The typed stdlib functions and the registry
 * path both go through hk__par_reduce, so they agree bit for bit.
 */
#ifndef HK_ABI_H
#define HK_ABI_H

#include <stddef.h>
#include <stdint.h>

#include "hk.h"

#define HK_ABI_VERSION 1u

/* The names generated code exports and the runtime looks up: for instance
 * NAME, HK_ABI_RANGE "NAME" and so on (emit_c.c, emit_cuda.c write them;
 * core/ resolves them). Use these macros on both sides, never the text. */
#define HK_ABI_RANGE "hk_range__"         /* hk_range_fn */
#define HK_ABI_MERGE "hk_merge__"         /* hk_merge_fn, reductions */
#define HK_ABI_LENS "hk_lens__"           /* hk_lens_fn */
#define HK_ABI_ROWRED "hk_rowred__"       /* hk_rowred_fn, reductions */
#define HK_ABI_COLRED "hk_colred__"       /* hk_colred_fn, reductions */
#define HK_ABI_COLPART "hk_colpart__"     /* hk_colpart_fn, reductions */
/* hk build's portable plugins on x86-64 also hold each entry point
 * compiled for x86-64-v3, named with this suffix (HK_ABI_RANGE "NAME"
 * HK_ABI_V3_SUFFIX), which the loader prefers on CPUs that have it. */
#define HK_ABI_V3_SUFFIX "__v3"
#define HK_ABI_CUDA_PART "hk_cuda_part__" /* a reduction's per-block part */
#define HK_ABI_CUDA_MERGE "hk_cuda_merge__" /* a reduction's merge kernel */
#define HK_ABI_CUDA_ROWS_WARP "hk_cuda_wrow__" /* a reduction, a warp a row */
#define HK_ABI_CUDA_KERNEL "hk_cuda__" /* elementwise and raw kernels */
/* A rows kernel's cooperative entry, made from its "cuda" body: a thread
 * block per row, hk_abi_rows_lanes(n) threads (emit_rows.c). Optional:
 * a rows kernel without a "cuda" body has none and runs a thread a row
 * (HK_ABI_CUDA_KERNEL). */
#define HK_ABI_CUDA_ROWS_COOP "hk_cuda_crow__"
/* a grid kernel without loops, for calls whose written buffers overlap no
 * other buffer: its pointers restrict, its index loop unrolled */
#define HK_ABI_CUDA_NOALIAS "hk_cuda_na__"
/* An elementwise instance's entry over strided and broadcast arrays (see
 * HK_ABI_CUDA_ND_BUFS below); optional: a module without it stages such
 * arrays through copies. */
#define HK_ABI_CUDA_ND "hk_cuda_nd__"
/* What a prebuilt plugin (hk build) exports besides its entry points: its
 * ABI version (an unsigned int) and its kernel file's text. */
#define HK_ABI_PLUGIN_VERSION_SYMBOL "hk_plugin_abi_version"
#define HK_ABI_PLUGIN_DESC_SYMBOL "hk_plugin_description"

/* The flags that fix the numeric model of generated C on every compiler
 * that builds it (libhk's stdlib, tier opt, hk build): integers wrap,
 * floating point is never contracted into FMAs (as under libtcc, so every
 * tier computes the same bits), errno is never read; loops start on a
 * 32-byte boundary (bench/README.md: on AMD Zen 3 a loop straddling a
 * 64-byte line ran up to 2x slower). The second list is for gcc only
 * (clang does not know the --param). CMakeLists.txt reads both from here:
 * this is their one definition. */
#define HK_ABI_KERNEL_CFLAGS \
  "-O3 -fwrapv -ffp-contract=off -fno-math-errno -falign-loops=32"
#define HK_ABI_KERNEL_CFLAGS_GCC "--param=align-loop-iterations=1"

/* Elements per vector step of a CUDA elementwise kernel whose widest
 * buffer element has this many bytes: as many as fit in 16 bytes (one
 * 128-bit load or store), at most 4. The generator writes its loops by it
 * and the launcher sizes grids by it. */
static inline unsigned hk_abi_cuda_lanes(size_t widest) {
  size_t lanes = 16 / (widest ? widest : 1);
  return lanes > 4 ? 4u : (unsigned)lanes;
}

/* Threads per block of every generated CUDA kernel: the generator sizes
 * shared memory by it and the launcher launches with it. */
#define HK_ABI_CUDA_BLOCK 256
/* Threads per row of a rows kernel's cooperative entry (its "cuda" body,
 * hk_lanes there): the power of two from 32 to 1024 that gives each thread
 * about 8 elements of a pass over the row (32 up to n = 256, 64 up to 512,
 * ..., 1024 from n = 4097 on). Enough elements a thread that a pass's
 * loads outweigh the barriers of the row's helpers, and rows of 8K
 * elements and longer get a whole block of 1024. Chosen from n alone,
 * never from the device, so a body whose results depend on hk_lanes (a
 * hk_row_sum's order) gives the same bits on every GPU. The launcher
 * launches by it; generated code reads it back as blockDim.x. */
#define HK_ABI_ROWS_LANES_MAX 1024
static inline unsigned hk_abi_rows_lanes(size_t n) {
  unsigned lanes = 32;
  while (lanes < HK_ABI_ROWS_LANES_MAX && (size_t)lanes * 8 < n) lanes *= 2;
  return lanes;
}
/* Threads per warp: a reduction's HK_ABI_CUDA_ROWS_WARP kernel reduces a row
 * by one warp, HK_ABI_CUDA_BLOCK / HK_ABI_CUDA_WARP rows a block. */
#define HK_ABI_CUDA_WARP 32

/* ---- The N-D entry of an elementwise instance ----------------------------
 * hk_cuda_nd__NAME(params..., const hk_nd<NB> g, size_t n) runs the body
 * over n elements in C order of a (collapsed) shape, each buffer reached
 * through its own strides, so strided, reversed and broadcast arrays need
 * no copies. NB is the instance's buffer count; g is the prefix of
 * hk_abi_cuda_nd_t that holds NB stride rows (the generated prelude's
 * struct hk_nd has this layout). The element of flat index i is found by
 * dividing i by the axis lengths, innermost first, with the multipliers
 * and shifts of hk_abi_cuda_divider (32-bit math unless wide); a body sees
 * i and n as in the flat kernel. Instances with more than
 * HK_ABI_CUDA_ND_BUFS buffers have no N-D entry (their calls go through
 * copies): a launch's parameters must fit 4 KB, and g takes at most
 * 168 + 32 * 64 = 2216 bytes, beside at most 60 parameters of 8 bytes
 * (HK_CUDA_MAX_ARGS) and n: 2704 in all. */
#define HK_ABI_CUDA_ND_BUFS 32
/* The layout's head in bytes (offsetof(hk_abi_cuda_nd_t, st)); both sides
 * assert it. */
#define HK_ABI_CUDA_ND_HEAD 168
typedef struct hk_abi_cuda_nd {
  int32_t nd;   /* axes, 2 to HK_MAX_DIMS (a 1-D call gets a leading 1) */
  int32_t wide; /* 1: 64-bit index math (see hk__cuda_launch_nd) */
  uint64_t len[HK_MAX_DIMS];   /* the shape, innermost axis last */
  uint64_t mul[HK_MAX_DIMS];   /* axes 1..nd-1: len's divider multiplier */
  uint32_t shift[HK_MAX_DIMS]; /* ... and shift */
  int64_t st[HK_ABI_CUDA_ND_BUFS][HK_MAX_DIMS]; /* per buffer parameter,
                                                   in order: elements */
} hk_abi_cuda_nd_t;

/* Elements per thread per grid step of an N-D entry with nbuf buffers
 * (its loop over two axes; codegen/emit_cuda.c, emit_nd): their loads are
 * all issued before the first body runs (memory-level parallelism the flat
 * kernel gets from 128-bit loads), fewer when many buffers would take too
 * many registers. The launcher sizes grids by it. */
static inline unsigned hk_abi_cuda_nd_unroll(int nbuf) {
  return nbuf <= 4 ? 4u : nbuf <= 8 ? 2u : 1u;
}

/* Division by d (1 <= d <= 2^(bits-1); bits 32 or 64) as a multiply and a
 * shift: returns m and stores s such that for every 0 <= x < 2^(bits-1),
 * x / d == (mulhi(x, m) + x) >> s, mulhi the high bits-bit half of the
 * product (no overflow: mulhi(x, m) <= x). With s = ceil(log2 d) and
 * m = floor(2^bits (2^s - d) / d) + 1 < 2^bits, the multiplier 2^bits + m
 * is floor(2^(bits+s) / d) + 1, within 2^s of 2^(bits+s) / d once times
 * d, which makes the quotient exact for x < 2^bits (Granlund and
 * Montgomery 1994, theorem 4.2); x < 2^(bits-1) keeps the sum within bits.
 * The long division below needs no 128-bit type. */
static inline uint64_t hk_abi_cuda_divider(uint64_t d, int bits,
                                           unsigned *s) {
  unsigned sh = 0;
  while (((uint64_t)1 << sh) < d) sh++;
  uint64_t r = ((uint64_t)1 << sh) - d, q = 0; /* r < d <= 2^63 */
  for (int b = 0; b < bits; b++) {
    r <<= 1; /* < 2d <= 2^64 */
    q <<= 1;
    if (r >= d) {
      r -= d;
      q |= 1;
    }
  }
  *s = sh;
  return q + 1;
}

/* The stdlib's tiled strided copy (emit_cuda.c, copy_kernels): tiles of
 * HK_ABI_CUDA_TILE x HK_ABI_CUDA_TILE elements, blocks of HK_ABI_CUDA_TILE x
 * HK_ABI_CUDA_TILE_ROWS threads, so each thread moves HK_ABI_CUDA_TILE /
 * HK_ABI_CUDA_TILE_ROWS elements of a tile. The generator writes the kernel
 * by them and the launcher (core/cuda/launch.c) sizes its grid by them. */
#define HK_ABI_CUDA_TILE 32
#define HK_ABI_CUDA_TILE_ROWS 8

/* A reduction of at most this many elements is one block. */
#define HK_REDUCE_BLOCK 32768u
/* Blocks grow (doubling) so that no reduction has more than this many. */
#define HK_REDUCE_MAX_BLOCKS 1024u
/* The largest accumulator the core keeps partials for, in bytes (a struct
 * accumulator of three doubles: Welford's count, mean and M2). Partials
 * are kept at HK_REDUCE_ACC_ALIGN: every accumulator's alignment divides it
 * (its fields are the hk types, at most 8 bytes), and its size is a
 * multiple of its alignment, so partials[k] at k * acc_size is aligned. */
#define HK_REDUCE_ACC_MAX 32u
#define HK_REDUCE_ACC_ALIGN 16u

/* Entry flags. */
#define HK_ABI_HEAVY 1u /* the body calls math functions: split work sooner */

typedef void (*hk_range_fn)(void *const *args, size_t n, size_t begin,
                            size_t end, void *partial);
typedef void (*hk_merge_fn)(void *const *args, size_t n, const void *partials,
                            size_t count);
typedef int (*hk_lens_fn)(void *const *args, size_t n, int64_t *lens);
typedef void (*hk_rowred_fn)(void *const *args, size_t n, size_t r0,
                             size_t r1, const ptrdiff_t *steps);
typedef void (*hk_colred_fn)(void *const *args, size_t n, size_t b0,
                             size_t b1, size_t ncols, const ptrdiff_t *steps,
                             void *partials);

/* colred in parts, so that threads share one block's column reduction
 * and keep its bits: the block's lanes (L of them, each a row of ncols
 * accumulators at lanes + l * ncols * acc_size; L = 16 for accumulators
 * under 8 bytes, else 8) are split among nparts calls, part p computing
 * lanes [L p / nparts, L (p + 1) / nparts) over the rows of whole lane
 * groups, each lane row by row as colred does; then one call with part ==
 * nparts combines the lanes in colred's tree, adds the rows left and
 * stores the results (or partials) as colred would. The buffer holds 16
 * * ncols * acc_size bytes. Optional (plugins built before it have none). */
typedef void (*hk_colpart_fn)(void *const *args, size_t n, size_t b0,
                              size_t b1, size_t ncols, const ptrdiff_t *steps,
                              void *lanes, unsigned part, unsigned nparts,
                              void *partials);

/* A stdlib kernel instance as the generator emits it into libhk. */
typedef struct hk_stdlib_entry {
  hk_kernel_info_t info;
  hk_range_fn range;
  hk_merge_fn merge; /* reductions, else NULL */
  hk_lens_fn lens;
  hk_rowred_fn rowred; /* reductions, else NULL */
  hk_colred_fn colred; /* reductions, else NULL */
  hk_colpart_fn colpart; /* reductions, else NULL */
  uint32_t acc_size; /* reductions: accumulator bytes, else 0 */
  uint32_t flags;    /* HK_ABI_* */
  void (*typed)(void); /* the typed function hk_NAME, cast */
} hk_stdlib_entry_t;

/* The stdlib table, generated from stdlib_kernels/ (hk_stdlib.c). */
extern const hk_stdlib_entry_t hk__stdlib[];
extern const size_t hk__stdlib_count;

/* ---- Provided by the core (core/par.c), called by generated stdlib code -- */

/* Element counts from which a call is shared among threads:
 * [0] for cheap bodies, [1] for HK_ABI_HEAVY ones. Set from HK_PAR_MIN. */
extern size_t hk__par_min[2];

/* Runs range over [0, n) on the thread pool (or inline when the pool is
 * busy, disabled, or n is small) and returns when every element is done. */
void hk__par_elementwise(hk_range_fn range, void *const *args, size_t n,
                         unsigned flags);

/* Runs a rows kernel's range over rows [0, rows) of n elements each on the
 * thread pool, whole rows per task (so a row's result never depends on the
 * thread count), or inline when rows * n is small; returns when every row
 * is done. scratch: the bytes of f32 copies a row's element needs (the
 * instance's staged f16 and bf16 buffers, see range above), 0 for none;
 * each thread's scratch is kept for its next call. HK_OK, or HK_ENOMEM
 * (set as the last error, after "WHO: " when who is not NULL: the typed
 * function's name) when scratch could not be had: then no row ran. */
int hk__par_rows(hk_range_fn range, void *const *args, size_t rows, size_t n,
                 unsigned flags, size_t scratch, const char *who);

/* Runs a grid kernel's range over its whole index space on the thread pool
 * (contiguous runs of indices per task; each index writes its own
 * elements, so results never depend on the thread count), or inline when
 * the space is small. HK_ABI_HEAVY: each index is much work (the body
 * loops), so the space is split from 2 indices, but when its first and
 * last index, run first and timed, say the rest is short. HK_OK, or
 * HK_EINVAL when an
 * extent is negative or the index count overflows (nothing runs). */
int hk__par_grid(hk_range_fn range, void *const *args, size_t n,
                 unsigned flags);

/* Unary 16-bit float stdlib kernels (codegen/emit_c.c, lut_eligible)
 * read their results from a table of all HK_LUT_SIZE inputs' from
 * HK_LUT_MIN elements on. hk__lut16 returns the table *slot holds, or
 * builds it first (once, under a lock: fill runs the kernel's own loop
 * over the n patterns of pat into tab, pieces of HK_LUT_PIECE in order);
 * NULL when out of memory (the caller computes instead). Tables live as
 * long as the process: 128 KB each, for the kernels called that large. */
#define HK_LUT_SIZE 65536
#define HK_LUT_PIECE 2048
#define HK_LUT_MIN 262144
const uint16_t *hk__lut16(void **slot,
                          void (*fill)(uint16_t *tab, const uint16_t *pat,
                                       size_t n));

/* Reduces [0, n) block by block (see above), merging in block order.
 * acc_size must be at most HK_REDUCE_ACC_MAX. */
void hk__par_reduce(hk_range_fn range, hk_merge_fn merge, size_t acc_size,
                    void *const *args, size_t n, unsigned flags);

/* The block layout of a reduction over n elements: returns the number of
 * blocks and stores the block length in *block_len (the last block may be
 * shorter). Depends on n only. */
size_t hk__reduce_blocks(size_t n, size_t *block_len);

#endif /* HK_ABI_H */
