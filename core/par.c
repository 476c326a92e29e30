/* par.c — cuts a kernel's [0, n) into tasks for the thread pool: contiguous
 * chunks for elementwise kernels, whole rows for rows kernels, fixed blocks
 * for reductions (so that a sum never depends on the thread count); plus
 * hk_set_threads / hk_get_threads, and the tables of the stdlib's unary
 * 16-bit kernels (hk__lut16).
 *
 * Generated stdlib code compares n with hk__par_min itself and calls in here
 * only for large n; these functions check again because the registry path
 * calls them for every n. Run inline, they take no lock and allocate nothing
 * (but hk__lut16 the first time a table is wanted: a lock and 128 KB).
 */
#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "abi.h"
#include "dispatch.h" /* hk__fail */
#include "hk.h"
#include "threadpool.h"

/* Elementwise chunks: boundaries on multiples of 64 elements (whole cache
 * lines for any element size, so threads never write the same line), at
 * least this long so a chunk outweighs the cost of handing it out, and about
 * this many per thread so that a slow thread does not hold up the rest. */
#define PAR_ALIGN 64u
#define PAR_CHUNK_MIN 2048u
#define PAR_TASKS_PER_THREAD 4u

#define PAR_MIN_CHEAP 131072u
#define PAR_MIN_HEAVY 16384u
/* A grid whose indices each loop (HK_ABI_HEAVY) runs inline when its
 * first and last index, timed, say the rest takes less than this: waking
 * the pool costs a few microseconds (a 4 x 16 segment sum took 20 times
 * a C loop's time on 2 threads; 3 times with this). */
#define PAR_GRID_INLINE_NS 20000


HK_INTERNAL size_t hk__par_min[2] = {PAR_MIN_CHEAP, PAR_MIN_HEAVY};

HK_INTERNAL void hk__par_set_min(size_t cheap, size_t heavy) {
  hk__par_min[0] = cheap;
  hk__par_min[1] = heavy;
}

/* Parses a decimal size_t from *s up to the next ',' or the end; advances
 * *s past it. Returns 0 on success, -1 for anything else (sign, space,
 * empty, overflow). */
static int parse_size(const char **s, size_t *out) {
  const char *p = *s;
  size_t v = 0;
  if (*p < '0' || *p > '9') return -1;
  for (; *p >= '0' && *p <= '9'; p++) {
    size_t d = (size_t)(*p - '0');
    if (v > (SIZE_MAX - d) / 10) return -1;
    v = v * 10 + d;
  }
  if (*p != '\0' && *p != ',') return -1;
  *s = p;
  *out = v;
  return 0;
}

int hk__par_parse(const char *s, size_t *cheap, size_t *heavy) {
  if (s == NULL || parse_size(&s, cheap) != 0) return -1;
  *heavy = *cheap;
  if (*s == ',') {
    s++;
    if (parse_size(&s, heavy) != 0 || *s != '\0') return -1;
  }
  return 0;
}

/* HK_PAR_MIN, applied at load time because generated code reads
 * hk__par_min without calling in first. A malformed value is ignored (the
 * library never prints; the hk command refuses it). */
__attribute__((constructor)) static void par_init_from_env(void) {
  size_t cheap, heavy;
  if (hk__par_parse(getenv("HK_PAR_MIN"), &cheap, &heavy) == 0)
    hk__par_set_min(cheap, heavy);
}

static size_t div_up(size_t a, size_t b) { return a / b + (a % b != 0); }

/* ---- elementwise ------------------------------------------------------- */

/* Chunks of [first, count): elementwise elements (count = n, first 0),
 * or a grid kernel's flattened indices. */
typedef struct ew_job {
  hk_range_fn range;
  void *const *args;
  size_t n, count, chunk, first;
} ew_job;

static void ew_task(void *ctx, size_t t) {
  const ew_job *j = ctx;
  size_t begin = j->first + t * j->chunk;
  size_t end = j->count - begin > j->chunk ? begin + j->chunk : j->count;
  j->range(j->args, j->n, begin, end, NULL);
}

HK_INTERNAL const uint16_t *hk__lut16(void **slot,
                                     void (*fill)(uint16_t *tab,
                                                  const uint16_t *pat,
                                                  size_t n)) {
  const uint16_t *t = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
  if (t) return t;
  static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
  pthread_mutex_lock(&lock);
  t = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
  if (!t) {
    uint16_t *tab = malloc(HK_LUT_SIZE * sizeof *tab);
    if (tab) {
      /* the patterns a piece at a time, on the stack: fresh heap pages
       * cost 10 us each to fault in on this project's VM */
      uint16_t pat[HK_LUT_PIECE];
      for (uint32_t at = 0; at < HK_LUT_SIZE; at += HK_LUT_PIECE) {
        for (uint32_t v = 0; v < HK_LUT_PIECE; v++) pat[v] = (uint16_t)(at + v);
        fill(tab + at, pat, HK_LUT_PIECE);
      }
      __atomic_store_n(slot, (void *)tab, __ATOMIC_RELEASE);
      t = tab;
    }
  }
  pthread_mutex_unlock(&lock);
  return t;
}

HK_INTERNAL void hk__par_elementwise(hk_range_fn range, void *const *args,
                                     size_t n, unsigned flags) {
  int threads;
  if (n < hk__par_min[(flags & HK_ABI_HEAVY) != 0] || n <= PAR_CHUNK_MIN ||
      (threads = hk__tpool_threads()) <= 1) {
    range(args, n, 0, n, NULL);
    return;
  }
  size_t chunk = div_up(n, (size_t)threads * PAR_TASKS_PER_THREAD);
  chunk = (chunk + PAR_ALIGN - 1) & ~(size_t)(PAR_ALIGN - 1);
  if (chunk < PAR_CHUNK_MIN) chunk = PAR_CHUNK_MIN;
  ew_job j = {range, args, n, n, chunk, 0};
  hk__tpool_run(ew_task, &j, div_up(n, chunk));
}

/* ---- rows -------------------------------------------------------------- */

/* Each thread's scratch for staged rows (abi.h: rows), kept for its next
 * call: a softmax over f16 rows would otherwise allocate, and fault in,
 * its f32 copies on every call. Freed when the thread ends. */
static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static int scratch_key_ok;
static _Thread_local void *tl_scratch;
static _Thread_local size_t tl_scratch_size;

static void scratch_init(void) {
  scratch_key_ok = pthread_key_create(&scratch_key, free) == 0;
}

/* This thread's scratch of at least bytes, or NULL (out of memory). */
static void *scratch_get(size_t bytes) {
  if (tl_scratch && tl_scratch_size >= bytes) return tl_scratch;
  pthread_once(&scratch_once, scratch_init);
  void *p = scratch_key_ok ? malloc(bytes ? bytes : 1) : NULL;
  if (!p) return NULL;
  if (pthread_setspecific(scratch_key, p) != 0) {
    free(p);
    return NULL;
  }
  free(tl_scratch);
  tl_scratch = p;
  tl_scratch_size = bytes;
  return p;
}

/* The tasks a rows job may have: div_up(rows, group) with group at least
 * div_up(rows, threads * PAR_TASKS_PER_THREAD). */
#define ROWS_TASKS_MAX ((size_t)HK_MAX_THREADS * PAR_TASKS_PER_THREAD)

typedef struct rows_job {
  hk_range_fn range;
  void *const *args;
  size_t rows, n, group, bytes; /* bytes: each thread's scratch, or 0 */
  /* the tasks whose thread had no scratch: the caller runs them after */
  _Atomic uint64_t missed[(ROWS_TASKS_MAX + 63) / 64];
} rows_job;

/* Runs task t's rows [t * group, (t + 1) * group) with scratch s. */
static void rows_run(const rows_job *j, size_t t, void *s) {
  size_t begin = t * j->group;
  size_t end = j->rows - begin > j->group ? begin + j->group : j->rows;
  j->range(j->args, j->n, begin, end, s);
}

static void rows_task(void *ctx, size_t t) {
  rows_job *j = ctx;
  void *s = NULL;
  if (j->bytes && !(s = scratch_get(j->bytes))) {
    atomic_fetch_or_explicit(&j->missed[t / 64], (uint64_t)1 << (t % 64),
                             memory_order_relaxed);
    return;
  }
  rows_run(j, t, s);
}

HK_INTERNAL int hk__par_rows(hk_range_fn range, void *const *args,
                             size_t rows, size_t n, unsigned flags,
                             size_t scratch, const char *who) {
  if (rows == 0) return HK_OK; /* no row, and no scratch to have */
  /* the caller's scratch first: when it cannot be had, nothing runs */
  size_t w = n ? n : 1, bytes = 0;
  void *mine = NULL;
  if (scratch && (w > SIZE_MAX / scratch ||
                  !(mine = scratch_get(bytes = scratch * w))))
    return hk__fail(HK_ENOMEM,
                    "%s%sout of memory for the f32 copies of a row of %zu "
                    "elements (f16 and bf16 buffers)",
                    who ? who : "", who ? ": " : "", n);
  /* the elements of the call; a row of 0 elements still costs a call */
  size_t work = n && rows > SIZE_MAX / n ? SIZE_MAX : rows * (n ? n : 1);
  int threads;
  if (rows < 2 || work < hk__par_min[(flags & HK_ABI_HEAVY) != 0] ||
      work <= PAR_CHUNK_MIN || (threads = hk__tpool_threads()) <= 1) {
    range(args, n, 0, rows, mine);
    return HK_OK;
  }
  /* whole rows, at least PAR_CHUNK_MIN elements a task, about
   * PAR_TASKS_PER_THREAD tasks a thread */
  size_t group = div_up(rows, (size_t)threads * PAR_TASKS_PER_THREAD);
  size_t min_rows = div_up(PAR_CHUNK_MIN, n ? n : 1);
  if (group < min_rows) group = min_rows;
  size_t ntasks = div_up(rows, group);
  assert(ntasks <= ROWS_TASKS_MAX);
  rows_job j = {range, args, rows, n, group, bytes, {0}};
  hk__tpool_run(rows_task, &j, ntasks);
  /* a worker without scratch left its rows: the same bits here */
  for (size_t t = 0; bytes && t < ntasks; t++)
    if (atomic_load_explicit(&j.missed[t / 64], memory_order_relaxed) >>
            (t % 64) & 1)
      rows_run(&j, t, mine);
  return HK_OK;
}

/* ---- grid ------------------------------------------------------------- */

/* A grid's chunks in one region per thread, each region's chunks
 * contiguous: a thread takes the chunks of its own region first, in
 * order, then helps the others' (each call of grid_task runs one chunk:
 * as many calls as chunks, so every chunk runs once). Neighbouring indices
 * of a grid often read the same data (attention's heads of one batch row
 * read its keys and values): with the chunks handed out in one sequence,
 * both threads of a 2-thread attention_forward call ran chunks of every
 * batch row, and the call took 1.17-1.21x llm.c's OpenMP loop (whose
 * static schedule gives each thread half the rows); with a region per
 * thread 1.03-1.06x, in alternating runs of the same build. */
typedef struct grid_job {
  ew_job ew;
  size_t nchunks, nregions, per; /* per: chunks per region */
  _Atomic size_t next[HK_MAX_THREADS]; /* claimed in each region */
} grid_job;

static void grid_task(void *ctx, size_t t) {
  (void)t;
  grid_job *g = ctx;
  size_t r = (size_t)hk__tpool_self() % g->nregions;
  for (size_t k = 0; k < g->nregions; k++, r = r + 1 == g->nregions ? 0 : r + 1) {
    size_t end = (r + 1) * g->per < g->nchunks ? (r + 1) * g->per : g->nchunks;
    size_t c = r * g->per + atomic_fetch_add_explicit(&g->next[r], 1,
                                                      memory_order_relaxed);
    if (c < end) {
      ew_task(&g->ew, c);
      return;
    }
  }
}

HK_INTERNAL int hk__par_grid(hk_range_fn range, void *const *args, size_t n,
                             unsigned flags) {
  int64_t x[4] = {-1, 1, 1, 1};
  range(args, n, 0, 0, x);
  if (x[0] < 0) {
    /* the extents (generated code stores them all; one its expression
     * could not compute is INT64_MIN; plugins built before 2026-11-30
     * stored them up to the bad one, 1 after it) */
    static const char *const nth[] = {"", "first", "second", "third"};
    for (int d = 1; d <= 3; d++)
      if (x[d] == INT64_MIN)
        return hk__fail(HK_EINVAL,
                        "the extent of the grid's %s index cannot be "
                        "computed for these scalars: its expression "
                        "overflows int64 or divides by zero",
                        nth[d]);
    int neg = x[1] < 0 || x[2] < 0 || x[3] < 0;
    return hk__fail(HK_EINVAL,
                    "the index space's extents, (%lld, %lld, %lld) (an "
                    "index the grid does not have counts as 1), %s",
                    (long long)x[1], (long long)x[2], (long long)x[3],
                    neg ? "hold a negative one; each must be >= 0"
                        : "multiply to more than int64 holds");
  }
  size_t count = (size_t)x[0];
  int heavy = (flags & HK_ABI_HEAVY) != 0;
  int threads;
  if (count < 2 || (!heavy && (count < hk__par_min[0] || count <= PAR_CHUNK_MIN)) ||
      (threads = hk__tpool_threads()) <= 1) {
    if (count) range(args, n, 0, count, NULL);
    return HK_OK;
  }
  size_t first = 0; /* indices [0, first) and [count, ...) ran, timed */
  if (heavy) {
    /* the first and the last index inline, timed (the last of a lower
     * triangular loop, a causal attention's, is the longest; the first of
     * an upper triangular one): the rest too when the longer says it is
     * short. A grid whose ends are both near-empty (padding) may still be
     * run inline, correctly, on one thread. Indices write their own
     * elements: the order changes nothing. */
    struct timespec t0, t1, t2;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    range(args, n, 0, 1, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    range(args, n, count - 1, count, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t2);
    double a = (double)(t1.tv_sec - t0.tv_sec) * 1e9 +
               (double)(t1.tv_nsec - t0.tv_nsec);
    double b = (double)(t2.tv_sec - t1.tv_sec) * 1e9 +
               (double)(t2.tv_nsec - t1.tv_nsec);
    if ((a > b ? a : b) * (double)(count - 2) < PAR_GRID_INLINE_NS) {
      if (count > 2) range(args, n, 1, count - 1, NULL);
      return HK_OK;
    }
    first = 1;
    count--; /* [1, count - 1) left */
  }
  size_t chunk = div_up(count - first, (size_t)threads * PAR_TASKS_PER_THREAD);
  if (!heavy) {
    chunk = (chunk + PAR_ALIGN - 1) & ~(size_t)(PAR_ALIGN - 1);
    if (chunk < PAR_CHUNK_MIN) chunk = PAR_CHUNK_MIN;
  }
  size_t nchunks = div_up(count - first, chunk);
  grid_job g = {{range, args, n, count, chunk, first}, nchunks, 0, 0, {0}};
  g.nregions = (size_t)threads;
  g.per = div_up(nchunks, g.nregions);
  hk__tpool_run(grid_task, &g, nchunks);
  return HK_OK;
}

/* ---- reductions -------------------------------------------------------- */

HK_INTERNAL size_t hk__reduce_blocks(size_t n, size_t *block_len) {
  size_t len = HK_REDUCE_BLOCK;
  while (div_up(n, len) > HK_REDUCE_MAX_BLOCKS) len *= 2;
  *block_len = len;
  return n <= len ? 1 : div_up(n, len);
}

typedef struct red_job {
  hk_range_fn range;
  void *const *args;
  size_t n, block, nblocks, group, acc_size;
  unsigned char *partials;
} red_job;

/* Task t reduces blocks [t * group, (t + 1) * group), each into its own
 * partial slot. */
static void red_task(void *ctx, size_t t) {
  const red_job *j = ctx;
  size_t k = t * j->group;
  size_t kend = j->nblocks - k > j->group ? k + j->group : j->nblocks;
  for (; k < kend; k++) {
    size_t begin = k * j->block;
    size_t end = j->n - begin > j->block ? begin + j->block : j->n;
    j->range(j->args, j->n, begin, end, j->partials + k * j->acc_size);
  }
}

HK_INTERNAL void hk__par_reduce(hk_range_fn range, hk_merge_fn merge,
                                size_t acc_size, void *const *args, size_t n,
                                unsigned flags) {
  assert(acc_size <= HK_REDUCE_ACC_MAX);
  size_t block, nblocks = hk__reduce_blocks(n, &block);
  if (nblocks == 1) {
    range(args, n, 0, n, NULL);
    return;
  }
  _Alignas(HK_REDUCE_ACC_ALIGN) unsigned char
      partials[HK_REDUCE_MAX_BLOCKS * HK_REDUCE_ACC_MAX];
  red_job j = {range, args, n, block, nblocks, nblocks, acc_size, partials};
  int threads;
  if (n >= hk__par_min[(flags & HK_ABI_HEAVY) != 0] &&
      (threads = hk__tpool_threads()) > 1) {
    /* Whole blocks per task; the grouping only decides who computes which
     * partial, never what a partial is. */
    j.group = div_up(nblocks, (size_t)threads * PAR_TASKS_PER_THREAD);
    hk__tpool_run(red_task, &j, div_up(nblocks, j.group));
  } else {
    red_task(&j, 0);
  }
  merge(args, n, partials, nblocks);
}

/* ---- public: thread count ---------------------------------------------- */

HK_API int hk_set_threads(int n) {
  if (n < 0 || n > HK_MAX_THREADS)
    return hk__fail(HK_EINVAL, "hk_set_threads: %d is outside [0, %d]", n,
                    HK_MAX_THREADS);
  hk__tpool_set_threads(n);
  return HK_OK;
}

HK_API int hk_get_threads(void) { return hk__tpool_threads(); }
