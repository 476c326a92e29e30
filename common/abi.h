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
 *                    (n is the row length here); partial is unused. Each
 *                    buffer's row r is base + r * n (row mode "full"),
 *                    base + r ("one") or base ("shared").
 *       grid:        partial == NULL: runs the body for the flattened
 *                    indices [begin, end) of the index space (C order);
 *                    partial != NULL (an int64_t[4]): stores the index
 *                    count in [0] (-1 when an extent is negative or the
 *                    count overflows) and the extents in [1..3] (1 past
 *                    the rank), and runs nothing.
 *   merge(args, n, partials, count)          reductions only
 *       combines count accumulators left to right, finalizes, stores
 *       element 0 of every out and inout parameter.
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
#define HK_ABI_CUDA_PART "hk_cuda_part__" /* a reduction's per-block part */
#define HK_ABI_CUDA_MERGE "hk_cuda_merge__" /* a reduction's merge kernel */
#define HK_ABI_CUDA_KERNEL "hk_cuda__" /* elementwise and raw kernels */
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

/* A stdlib kernel instance as the generator emits it into libhk. */
typedef struct hk_stdlib_entry {
  hk_kernel_info_t info;
  hk_range_fn range;
  hk_merge_fn merge; /* reductions, else NULL */
  hk_lens_fn lens;
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
 * is done. */
void hk__par_rows(hk_range_fn range, void *const *args, size_t rows, size_t n,
                  unsigned flags);

/* Runs a grid kernel's range over its whole index space on the thread pool
 * (contiguous runs of indices per task; each index writes its own
 * elements, so results never depend on the thread count), or inline when
 * the space is small. HK_ABI_HEAVY: each index is much work (the body
 * loops), so the space is split from 2 indices. HK_OK, or HK_EINVAL when an
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
