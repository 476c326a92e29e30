/* test_threadpool.c — the thread pool and the parallel split (core/threadpool.c,
 * core/par.c) against sequential references, with fake range/merge
 * functions standing in for generated kernels.
 *
 * Run with an argument, the binary is a sub-mode that the main run execs with
 * a chosen environment (HK_THREADS, HK_PAR_MIN), since both are read once.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#endif

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "abi.h"
#include "check.h"
#include "hk.h"
#include "threadpool.h"

#if defined(__SANITIZE_THREAD__)
#define TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TEST_TSAN 1
#endif
#endif

#ifdef TEST_TSAN
/* The fork test starts threads in the child of a multi-threaded process,
 * which TSan refuses by default; hk supports it (pthread_atfork). Visible,
 * so that a shared TSan runtime finds it under -fvisibility=hidden. */
__attribute__((visibility("default"))) const char *__tsan_default_options(void);
__attribute__((visibility("default"))) const char *__tsan_default_options(
    void) {
  return "die_after_fork=0";
}
#endif

static const size_t sizes[] = {
    0, 1, 63, 64, 65, 2047, 4097, 65536 + 3, (1u << 20) + 5};
static const int thread_counts[] = {1, 2, 3, 4, 8, 17};
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define NMAX ((1u << 20) + 5)

static int cpu_count(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
  long c = sysconf(_SC_NPROCESSORS_ONLN);
  return c > 0 ? (int)c : 1;
}

/* A value whose sums round differently in every grouping. */
static double input_at(size_t i) {
  return ((i & 1) ? 1e8 : 1e-3) / (double)(1 + i % 977);
}

/* ---- fake elementwise kernel: out[i] = 3 * in[i] + 1 ------------------- */

typedef struct ew_stats {
  atomic_uint *visits;
  atomic_int bad_bounds; /* a chunk boundary broke the split rules */
  atomic_int calls;
} ew_stats;

static void ew_range(void *const *args, size_t n, size_t begin, size_t end,
                     void *partial) {
  const double *in = args[0];
  double *out = args[1];
  ew_stats *st = args[2];
  atomic_fetch_add(&st->calls, 1);
  int whole = begin == 0 && end == n;
  if (partial != NULL || begin > end || end > n ||
      (!whole && (begin % 64 != 0 || (end != n && end % 64 != 0) ||
                  (end != n && end - begin < 2048))))
    atomic_fetch_add(&st->bad_bounds, 1);
  for (size_t i = begin; i < end; i++) {
    out[i] = 3 * in[i] + 1;
    atomic_fetch_add_explicit(&st->visits[i], 1, memory_order_relaxed);
  }
}

typedef struct ew_bufs {
  double *in, *out;
  ew_stats st;
} ew_bufs;

static void ew_bufs_init(ew_bufs *b, size_t nmax) {
  b->in = malloc(nmax * sizeof *b->in);
  b->out = malloc(nmax * sizeof *b->out);
  b->st.visits = malloc(nmax * sizeof *b->st.visits);
  for (size_t i = 0; i < nmax; i++) b->in[i] = input_at(i);
}

static void ew_bufs_free(ew_bufs *b) {
  free(b->in);
  free(b->out);
  free(b->st.visits);
}

/* Runs the fake kernel over n elements; returns 1 if every element was
 * visited once and holds the sequential result. */
static int ew_run_ok(ew_bufs *b, size_t n, unsigned flags) {
  for (size_t i = 0; i < n; i++) {
    atomic_init(&b->st.visits[i], 0);
    b->out[i] = -1;
  }
  atomic_init(&b->st.bad_bounds, 0);
  atomic_init(&b->st.calls, 0);
  void *args[3] = {b->in, b->out, &b->st};
  hk__par_elementwise(ew_range, args, n, flags);
  int ok =
      atomic_load(&b->st.bad_bounds) == 0 && atomic_load(&b->st.calls) >= 1;
  for (size_t i = 0; i < n; i++)
    if (atomic_load_explicit(&b->st.visits[i], memory_order_relaxed) != 1 ||
        b->out[i] != 3 * b->in[i] + 1)
      ok = 0;
  return ok;
}

/* ---- fake reduction: double sum, merged left to right ------------------ */

typedef struct red_stats {
  size_t block;          /* the expected block length */
  size_t align;          /* the alignment a partial slot needs */
  atomic_int bad_bounds; /* a partial's range is not a whole block */
  atomic_int bad_align;  /* a partial slot not aligned to align */
  atomic_int partial_calls;
} red_stats;

static void red_check(red_stats *st, size_t n, size_t begin, size_t end,
                      void *partial) {
  if (partial == NULL) {
    if (begin != 0 || end != n) atomic_fetch_add(&st->bad_bounds, 1);
    return;
  }
  atomic_fetch_add(&st->partial_calls, 1);
  if ((uintptr_t)partial % st->align != 0) atomic_fetch_add(&st->bad_align, 1);
  size_t want_end = n - begin > st->block ? begin + st->block : n;
  if (begin % st->block != 0 || end != want_end)
    atomic_fetch_add(&st->bad_bounds, 1);
}

static void sum_range(void *const *args, size_t n, size_t begin, size_t end,
                      void *partial) {
  const double *in = args[0];
  red_check(args[2], n, begin, end, partial);
  double s = 0;
  for (size_t i = begin; i < end; i++) s += in[i];
  if (partial != NULL)
    memcpy(partial, &s, sizeof s);
  else
    *(double *)args[1] = s;
}

static void sum_merge(void *const *args, size_t n, const void *partials,
                      size_t count) {
  (void)n;
  double s = 0, p;
  for (size_t k = 0; k < count; k++) {
    memcpy(&p, (const char *)partials + k * sizeof p, sizeof p);
    s += p;
  }
  *(double *)args[1] = s;
}

/* The reference: the same blocks, summed one after another. */
static double sum_reference(const double *in, size_t n) {
  size_t block, nblocks = hk__reduce_blocks(n, &block);
  if (nblocks == 1) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += in[i];
    return s;
  }
  double total = 0;
  for (size_t k = 0; k < nblocks; k++) {
    double s = 0;
    size_t end = n - k * block > block ? (k + 1) * block : n;
    for (size_t i = k * block; i < end; i++) s += in[i];
    total += s;
  }
  return total;
}

/* Runs the fake sum; returns its result, or NAN if a block was wrong. */
static double sum_run(const double *in, size_t n, unsigned flags) {
  red_stats st;
  hk__reduce_blocks(n, &st.block);
  st.align = sizeof(double);
  atomic_init(&st.bad_bounds, 0);
  atomic_init(&st.bad_align, 0);
  atomic_init(&st.partial_calls, 0);
  double out = -1;
  void *args[3] = {(void *)in, &out, &st};
  hk__par_reduce(sum_range, sum_merge, sizeof(double), args, n, flags);
  size_t block, nblocks = hk__reduce_blocks(n, &block);
  size_t want_calls = nblocks == 1 ? 0 : nblocks;
  if (atomic_load(&st.bad_bounds) || atomic_load(&st.bad_align) ||
      (size_t)atomic_load(&st.partial_calls) != want_calls)
    return NAN;
  return out;
}

/* A 16-byte accumulator {sum, count} over values computed on the fly (no
 * input array), so that reductions big enough for longer blocks fit in
 * memory. */
static double cheap_at(size_t i) {
  return (double)(i & 0xffff) * 1e-3 + ((i & 1) ? 1e7 : 0);
}

typedef struct mean_acc {
  double sum, count;
} mean_acc;

static void mean_range(void *const *args, size_t n, size_t begin, size_t end,
                       void *partial) {
  red_check(args[1], n, begin, end, partial);
  mean_acc a = {0, 0};
  for (size_t i = begin; i < end; i++) {
    a.sum += cheap_at(i);
    a.count += 1;
  }
  if (partial != NULL)
    memcpy(partial, &a, sizeof a);
  else
    *(double *)args[0] = a.count ? a.sum / a.count : 0;
}

static void mean_merge(void *const *args, size_t n, const void *partials,
                       size_t count) {
  (void)n;
  mean_acc a = {0, 0}, p;
  for (size_t k = 0; k < count; k++) {
    memcpy(&p, (const char *)partials + k * sizeof p, sizeof p);
    a.sum += p.sum;
    a.count += p.count;
  }
  *(double *)args[0] = a.sum / a.count;
}

static double mean_run(size_t n, int *blocks_ok) {
  red_stats st;
  size_t nblocks = hk__reduce_blocks(n, &st.block);
  st.align = 16; /* slots of a 16-byte accumulator take vector loads */
  atomic_init(&st.bad_bounds, 0);
  atomic_init(&st.bad_align, 0);
  atomic_init(&st.partial_calls, 0);
  double out = -1;
  void *args[2] = {&out, &st};
  hk__par_reduce(mean_range, mean_merge, sizeof(mean_acc), args, n, 0);
  *blocks_ok = !atomic_load(&st.bad_bounds) && !atomic_load(&st.bad_align) &&
               (size_t)atomic_load(&st.partial_calls) == nblocks;
  return out;
}

/* ---- tests ------------------------------------------------------------- */

static void test_block_rule(void) {
  const size_t B = HK_REDUCE_BLOCK, M = HK_REDUCE_MAX_BLOCKS;
  /* clang-format off */
  const size_t ns[] = {
      0, 1, B - 1, B, B + 1, 2 * B, 2 * B + 1, 100 * B + 7,
      M * B - 1, M * B, M * B + 1, 2 * M * B, 2 * M * B + 1, /* the cap */
      (size_t)1 << 30, ((size_t)1 << 30) + 1, (size_t)1 << 40, SIZE_MAX / 2,
      SIZE_MAX};
  /* clang-format on */
  for (size_t i = 0; i < COUNT(ns); i++) {
    size_t n = ns[i], len = 0;
    size_t count = hk__reduce_blocks(n, &len);
    CHECK_MSG(count >= 1 && count <= M, "n=%zu count=%zu", n, count);
    CHECK_MSG((count == 1) == (n <= B), "n=%zu count=%zu", n, count);
    /* len is B times a power of two, and the smallest that fits M blocks */
    CHECK_MSG(len >= B && len % B == 0 && ((len / B) & (len / B - 1)) == 0,
              "n=%zu len=%zu", n, len);
    if (len > B)
      CHECK_MSG(n / (len / 2) + (n % (len / 2) != 0) > M, "n=%zu", n);
    /* the blocks cover [0, n) exactly: all full but the last, none empty */
    if (n > 0)
      CHECK_MSG((count - 1) * len < n && (n - (count - 1) * len) <= len,
                "n=%zu count=%zu len=%zu", n, count, len);
    size_t len2 = 0;
    CHECK(hk__reduce_blocks(n, &len2) == count && len2 == len);
  }
  size_t len = 0;
  CHECK_INT_EQ(hk__reduce_blocks(0, &len), 1);
  CHECK_INT_EQ(len, B);
  CHECK_INT_EQ(hk__reduce_blocks(B + 1, &len), 2);
  CHECK_INT_EQ(hk__reduce_blocks(M * B, &len), M);
  CHECK_INT_EQ(len, B);
  CHECK_INT_EQ(hk__reduce_blocks(M * B + 1, &len), M / 2 + 1);
  CHECK_INT_EQ(len, 2 * B);
  CHECK_INT_EQ(hk__reduce_blocks((size_t)1 << 30, &len), 1024);
  CHECK_INT_EQ(len, (size_t)1 << 20);
  CHECK_INT_EQ(hk__reduce_blocks(((size_t)1 << 30) + 1, &len), 513);
  CHECK_INT_EQ(len, (size_t)1 << 21);
}

static void test_pool_direct_task(void *ctx, size_t t) {
  atomic_uint *hits = ctx;
  atomic_fetch_add(&hits[t], 1);
}

/* hk__tpool_run itself: each task exactly once, for any task count. */
static void test_pool_run(void) {
  enum { NT = 1000 };
  static atomic_uint hits[NT];
  const size_t counts[] = {0, 1, 2, 3, 7, 64, NT};
  const int threads[] = {1, 2, 5};
  for (size_t ti = 0; ti < COUNT(threads); ti++) {
    CHECK_INT_EQ(hk_set_threads(threads[ti]), HK_OK);
    for (size_t ci = 0; ci < COUNT(counts); ci++) {
      for (size_t t = 0; t < NT; t++) atomic_init(&hits[t], 0);
      int took = hk__tpool_run(test_pool_direct_task, hits, counts[ci]);
      int ok = 1;
      for (size_t t = 0; t < NT; t++)
        if (atomic_load(&hits[t]) != (t < counts[ci])) ok = 0;
      CHECK_MSG(ok, "threads=%d ntasks=%zu", threads[ti], counts[ci]);
      CHECK_MSG(took >= (counts[ci] > 0) && took <= threads[ti] &&
                    (size_t)took <= counts[ci],
                "took=%d threads=%d ntasks=%zu", took, threads[ti], counts[ci]);
    }
  }
}

/* ---- grid: every index once, in regions per thread --------------------- */

typedef struct grid_fake {
  size_t count;
  atomic_uint *visits;
  atomic_int bad_self; /* hk__tpool_self() outside [0, threads) */
  int threads;
} grid_fake;

static void grid_range(void *const *args, size_t n, size_t begin, size_t end,
                       void *partial) {
  (void)n;
  grid_fake *g = args[0];
  if (partial) { /* the extents query: one axis of count indices */
    int64_t *x = partial;
    x[0] = (int64_t)g->count;
    return;
  }
  int self = hk__tpool_self();
  if (self < 0 || self >= g->threads) atomic_fetch_add(&g->bad_self, 1);
  for (size_t i = begin; i < end; i++) atomic_fetch_add(&g->visits[i], 1);
}

/* hk__par_grid hands each thread a region of contiguous chunks first and
 * lets it take the others' when its own are done: every index still runs
 * exactly once, for any count and thread count; hk__tpool_self() names
 * the running thread (0: the caller, below the thread count). */
static void test_grid_regions(void) {
  enum { NG = 100000 };
  static atomic_uint visits[NG];
  const size_t counts[] = {0, 1, 2, 3, 9, 17, 1000, 4099, NG};
  const int threads[] = {1, 2, 3, 5};
  CHECK_INT_EQ(hk__tpool_self(), 0);
  for (size_t ti = 0; ti < COUNT(threads); ti++) {
    CHECK_INT_EQ(hk_set_threads(threads[ti]), HK_OK);
    for (size_t ci = 0; ci < COUNT(counts); ci++)
      for (int heavy = 0; heavy < 2; heavy++) {
        for (size_t i = 0; i < NG; i++) atomic_init(&visits[i], 0);
        grid_fake g = {counts[ci], visits, 0, threads[ti]};
        void *args[] = {&g};
        CHECK_INT_EQ(hk__par_grid(grid_range, args, 0,
                                  heavy ? HK_ABI_HEAVY : 0u),
                     HK_OK);
        int ok = 1;
        for (size_t i = 0; i < NG; i++)
          if (atomic_load(&visits[i]) != (i < counts[ci])) ok = 0;
        CHECK_MSG(ok, "grid: threads=%d count=%zu heavy=%d", threads[ti],
                  counts[ci], heavy);
        CHECK_MSG(atomic_load(&g.bad_self) == 0,
                  "grid: hk__tpool_self out of range, threads=%d",
                  threads[ti]);
      }
  }
  CHECK_INT_EQ(hk_set_threads(0), HK_OK);
}

static void test_elementwise_matrix(void) {
  ew_bufs b;
  ew_bufs_init(&b, NMAX);
  for (int forced = 1; forced >= 0; forced--) {
    if (forced)
      hk__par_set_min(1, 1);
    else
      hk__par_set_min(131072, 16384);
    for (size_t ti = 0; ti < COUNT(thread_counts); ti++) {
      CHECK_INT_EQ(hk_set_threads(thread_counts[ti]), HK_OK);
      CHECK_INT_EQ(hk_get_threads(), thread_counts[ti]);
      for (size_t si = 0; si < COUNT(sizes); si++)
        for (unsigned flags = 0; flags <= HK_ABI_HEAVY; flags++)
          CHECK_MSG(ew_run_ok(&b, sizes[si], flags),
                    "elementwise n=%zu threads=%d forced=%d flags=%u",
                    sizes[si], thread_counts[ti], forced, flags);
    }
  }
  ew_bufs_free(&b);
}

static void test_reduce_matrix(void) {
  const size_t extra[] = {HK_REDUCE_BLOCK, HK_REDUCE_BLOCK + 1,
                          3 * HK_REDUCE_BLOCK + 17, 40 * HK_REDUCE_BLOCK + 1};
  size_t ns[COUNT(sizes) + COUNT(extra)], nn = 0;
  for (size_t i = 0; i < COUNT(sizes); i++) ns[nn++] = sizes[i];
  for (size_t i = 0; i < COUNT(extra); i++) ns[nn++] = extra[i];
  size_t nmax = 40 * HK_REDUCE_BLOCK + 1;
  double *in = malloc(nmax * sizeof *in);
  for (size_t i = 0; i < nmax; i++) in[i] = input_at(i);

  for (size_t si = 0; si < nn; si++) {
    size_t n = ns[si];
    double want = sum_reference(in, n);
    for (int forced = 1; forced >= 0; forced--) {
      if (forced)
        hk__par_set_min(1, 1);
      else
        hk__par_set_min(131072, 16384);
      for (size_t ti = 0; ti < COUNT(thread_counts); ti++) {
        CHECK_INT_EQ(hk_set_threads(thread_counts[ti]), HK_OK);
        for (unsigned flags = 0; flags <= HK_ABI_HEAVY; flags++) {
          double got = sum_run(in, n, flags);
          /* bit-identical: compare the representations */
          CHECK_MSG(memcmp(&got, &want, sizeof got) == 0,
                    "sum n=%zu threads=%d forced=%d: %.17g != %.17g", n,
                    thread_counts[ti], forced, got, want);
        }
      }
    }
  }
  /* The blocks matter: a plain left-to-right sum differs for this input, so
   * the comparison above really checks the block order. */
  double plain = 0;
  for (size_t i = 0; i < 40 * HK_REDUCE_BLOCK + 1; i++) plain += in[i];
  CHECK(plain != sum_reference(in, 40 * HK_REDUCE_BLOCK + 1));
  free(in);

  /* Longer blocks (n > 1024 blocks of HK_REDUCE_BLOCK) and a 16-byte
   * accumulator; results bit-identical across thread counts. */
  hk__par_set_min(1, 1);
  size_t big = (size_t)HK_REDUCE_MAX_BLOCKS * HK_REDUCE_BLOCK + 5;
  double first = 0;
  const int ts[] = {1, 3};
  for (size_t ti = 0; ti < COUNT(ts); ti++) {
    CHECK_INT_EQ(hk_set_threads(ts[ti]), HK_OK);
    int blocks_ok = 0;
    double m = mean_run(big, &blocks_ok);
    CHECK_MSG(blocks_ok, "mean threads=%d", ts[ti]);
    if (ti == 0)
      first = m;
    else
      CHECK_MSG(memcmp(&m, &first, sizeof m) == 0,
                "mean threads=%d: %.17g != %.17g", ts[ti], m, first);
  }
  hk__par_set_min(131072, 16384);
}

/* Waits (bounded, never failing on time alone) until a second thread has
 * entered, so that a task can show that it shares the call. */
typedef struct par_probe {
  pthread_t seen[64];
  atomic_int nseen;
  pthread_mutex_t mu;
} par_probe;

static int probe_record(par_probe *p) {
  pthread_t self = pthread_self();
  pthread_mutex_lock(&p->mu);
  int found = 0, n = atomic_load(&p->nseen);
  for (int i = 0; i < n; i++)
    if (pthread_equal(p->seen[i], self)) found = 1;
  if (!found && n < 64) {
    p->seen[n] = self;
    atomic_store(&p->nseen, n + 1);
  }
  pthread_mutex_unlock(&p->mu);
  return atomic_load(&p->nseen);
}

static void probe_wait_for_two(par_probe *p) {
  struct timespec nap = {0, 1000000}; /* 1 ms, at most 10 s in all */
  for (int i = 0; i < 10000 && atomic_load(&p->nseen) < 2; i++)
    nanosleep(&nap, NULL);
}

static void probe_task(void *ctx, size_t t) {
  (void)t;
  probe_record(ctx);
  probe_wait_for_two(ctx);
}

static void probe_range(void *const *args, size_t n, size_t begin, size_t end,
                        void *partial) {
  (void)n;
  (void)begin;
  (void)end;
  (void)partial;
  probe_record(args[0]);
  probe_wait_for_two(args[0]);
}

static void test_really_parallel(void) {
  if (cpu_count() < 2) return; /* one CPU may legitimately run all inline */
  CHECK_INT_EQ(hk_set_threads(2), HK_OK);
  par_probe p;
  pthread_mutex_init(&p.mu, NULL);
  atomic_init(&p.nseen, 0);
  int took = hk__tpool_run(probe_task, &p, 2);
  CHECK_INT_EQ(atomic_load(&p.nseen), 2);
  CHECK_INT_EQ(took, 2);
  CHECK_INT_EQ(hk__tpool_workers(), 1);

  /* through the split as well */
  hk__par_set_min(1, 1);
  CHECK_INT_EQ(hk_set_threads(4), HK_OK);
  atomic_init(&p.nseen, 0);
  void *args[1] = {&p};
  hk__par_elementwise(probe_range, args, 1u << 16, 0);
  CHECK_MSG(atomic_load(&p.nseen) > 1, "distinct threads: %d",
            atomic_load(&p.nseen));
  CHECK_INT_EQ(hk__tpool_workers(), 3);
  hk__par_set_min(131072, 16384);
  pthread_mutex_destroy(&p.mu);
}

/* A range function that makes parallel calls of its own. */
typedef struct nested_ctx {
  ew_bufs *inner; /* one per outer task */
  atomic_int inner_bad;
  atomic_int inner_threads_bad;
} nested_ctx;

static void nested_inner_task(void *ctx, size_t t) {
  (void)t;
  pthread_t *owner = ctx;
  /* inline means: on the thread that made the nested call */
  if (!pthread_equal(*owner, pthread_self())) abort();
}

static void nested_task(void *ctx, size_t t) {
  nested_ctx *c = ctx;
  if (!ew_run_ok(&c->inner[t], 65536 + 3, 0))
    atomic_fetch_add(&c->inner_bad, 1);
  pthread_t self = pthread_self();
  if (hk__tpool_run(nested_inner_task, &self, 16) != 1)
    atomic_fetch_add(&c->inner_threads_bad, 1);
}

static void test_nested(void) {
  hk__par_set_min(1, 1);
  CHECK_INT_EQ(hk_set_threads(4), HK_OK);
  enum { OUTER = 8 };
  nested_ctx c;
  c.inner = malloc(OUTER * sizeof *c.inner);
  for (int i = 0; i < OUTER; i++) ew_bufs_init(&c.inner[i], 65536 + 3);
  atomic_init(&c.inner_bad, 0);
  atomic_init(&c.inner_threads_bad, 0);
  hk__tpool_run(nested_task, &c, OUTER);
  CHECK_INT_EQ(atomic_load(&c.inner_bad), 0);
  CHECK_INT_EQ(atomic_load(&c.inner_threads_bad), 0);
  for (int i = 0; i < OUTER; i++) ew_bufs_free(&c.inner[i]);
  free(c.inner);
  hk__par_set_min(131072, 16384);
}

static void set_threads_task(void *ctx, size_t t) {
  (void)t;
  atomic_int *rc = ctx;
  if (hk_set_threads(3) != HK_OK) atomic_fetch_add(rc, 1);
}

static void test_set_threads(void) {
  int def = hk__tpool_default_threads();
  CHECK(def >= 1 && def <= HK_MAX_THREADS);
  CHECK_INT_EQ(hk_set_threads(5), HK_OK);
  CHECK_INT_EQ(hk_set_threads(-1), HK_EINVAL);
  CHECK_INT_EQ(hk_set_threads(257), HK_EINVAL);
  CHECK_INT_EQ(hk_set_threads(-1000), HK_EINVAL);
  CHECK_INT_EQ(hk_get_threads(), 5);
  CHECK_INT_EQ(hk_set_threads(256), HK_OK);
  CHECK_INT_EQ(hk_get_threads(), 256);
  CHECK_INT_EQ(hk_set_threads(0), HK_OK);
  CHECK_INT_EQ(hk_get_threads(), def);
  CHECK_INT_EQ(hk_set_threads(1), HK_OK);
  CHECK_INT_EQ(hk_get_threads(), 1);
  CHECK_INT_EQ(hk__tpool_workers(), 0); /* shrinking stops the workers */

  /* from inside a task: recorded, applied by the next job, no deadlock */
  CHECK_INT_EQ(hk_set_threads(4), HK_OK);
  atomic_int rc;
  atomic_init(&rc, 0);
  hk__tpool_run(set_threads_task, &rc, 8);
  CHECK_INT_EQ(atomic_load(&rc), 0);
  CHECK_INT_EQ(hk_get_threads(), 3);
  static atomic_uint hits[8];
  hk__tpool_run(test_pool_direct_task, hits, 8);
  CHECK(hk__tpool_workers() <= 2);
}

/* ---- many user threads ------------------------------------------------- */

typedef struct user_arg {
  int iters;
  atomic_int *failures;
  atomic_int *stop; /* NULL: run iters times */
  ew_bufs *bufs;    /* NULL: the thread makes its own */
} user_arg;

static void *user_thread(void *p) {
  user_arg *a = p;
  ew_bufs own, *b = a->bufs ? a->bufs : &own;
  if (!a->bufs) ew_bufs_init(&own, 65536 + 3);
  for (int it = 0; a->stop ? !atomic_load(a->stop) : it < a->iters; it++) {
    size_t n = it % 2 ? 65536 + 3 : 4097;
    if (!ew_run_ok(b, n, it % 3 == 0 ? HK_ABI_HEAVY : 0))
      atomic_fetch_add(a->failures, 1);
    double got = sum_run(b->in, 65536 + 3, 0);
    double want = sum_reference(b->in, 65536 + 3);
    if (memcmp(&got, &want, sizeof got) != 0) atomic_fetch_add(a->failures, 1);
  }
  if (!a->bufs) ew_bufs_free(&own);
  return NULL;
}

static void test_concurrent_callers(void) {
  hk__par_set_min(1, 1);
  CHECK_INT_EQ(hk_set_threads(4), HK_OK);
  enum { USERS = 8 };
  pthread_t th[USERS];
  atomic_int failures;
  atomic_init(&failures, 0);
  user_arg a = {20, &failures, NULL, NULL};
  for (int i = 0; i < USERS; i++) pthread_create(&th[i], NULL, user_thread, &a);
  for (int i = 0; i < USERS; i++) pthread_join(th[i], NULL);
  CHECK_INT_EQ(atomic_load(&failures), 0);

  /* hk_set_threads while others call */
  atomic_int stop;
  atomic_init(&stop, 0);
  user_arg b = {0, &failures, &stop, NULL};
  for (int i = 0; i < 4; i++) pthread_create(&th[i], NULL, user_thread, &b);
  const int cycle[] = {1, 2, 8, 3, 0, 17, 4, 1, 2};
  for (int r = 0; r < 100; r++)
    CHECK_INT_EQ(hk_set_threads(cycle[r % COUNT(cycle)]), HK_OK);
  atomic_store(&stop, 1);
  for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
  CHECK_INT_EQ(atomic_load(&failures), 0);
  hk__par_set_min(131072, 16384);
}

/* ---- fork and environment ---------------------------------------------- */

static void test_fork(void) {
  hk__par_set_min(1, 1);
  CHECK_INT_EQ(hk_set_threads(4), HK_OK);
  /* fork while another thread is inside parallel calls */
  atomic_int failures, stop;
  atomic_init(&failures, 0);
  atomic_init(&stop, 0);
  /* (its buffers belong to this thread, so the child, which has no copy of
   * that thread, does not leak them) */
  ew_bufs bg;
  ew_bufs_init(&bg, 65536 + 3);
  user_arg a = {0, &failures, &stop, &bg};
  pthread_t th;
  pthread_create(&th, NULL, user_thread, &a);
  ew_bufs b;
  ew_bufs_init(&b, NMAX);
  CHECK(ew_run_ok(&b, NMAX, 0)); /* the pool is warm */
  pid_t pid = fork();
  if (pid == 0) {
    int ok = ew_run_ok(&b, NMAX, 0) && hk_get_threads() == 4;
    double got = sum_run(b.in, NMAX, 0);
    double want = sum_reference(b.in, NMAX);
    ok = ok && memcmp(&got, &want, sizeof got) == 0;
    if (cpu_count() >= 2) {
      par_probe p;
      pthread_mutex_init(&p.mu, NULL);
      atomic_init(&p.nseen, 0);
      ok = ok && hk__tpool_run(probe_task, &p, 2) == 2;
    }
    _exit(ok ? 0 : 1);
  }
  CHECK(pid > 0);
  int status = 0;
  CHECK(waitpid(pid, &status, 0) == pid);
  CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d",
            status);
  atomic_store(&stop, 1);
  pthread_join(th, NULL);
  CHECK_INT_EQ(atomic_load(&failures), 0);
  CHECK(ew_run_ok(&b, NMAX, 0)); /* the parent's pool still works */
  ew_bufs_free(&b);
  ew_bufs_free(&bg);
  hk__par_set_min(131072, 16384);
}

/* This binary's path: /proc/self/exe resolved once, because under valgrind
 * exec'ing /proc/self/exe itself would start valgrind, not this test. */
static char self_path[4096] = "/proc/self/exe";

static void find_self_path(void) {
  char buf[sizeof self_path];
  ssize_t len = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (len > 0) {
    buf[len] = '\0';
    memcpy(self_path, buf, (size_t)len + 1);
  }
}

/* Runs this binary again with name=value in its environment (value NULL:
 * unset) and the given sub-mode arguments; returns its exit status. */
static int run_self(const char *name, const char *value, const char *a1,
                    const char *a2, const char *a3) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
    char *argv[] = {"test_threadpool", (char *)a1, (char *)a2, (char *)a3, NULL};
    execv(self_path, argv);
    _exit(127);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif

static void test_environment(void) {
  char def[16];
  int ncpu = cpu_count();
  snprintf(def, sizeof def, "%d", ncpu < 256 ? ncpu : 256);
  CHECK_INT_EQ(run_self("HK_THREADS", "3", "threads", "3", NULL), 0);
  CHECK_INT_EQ(run_self("HK_THREADS", NULL, "exit-busy", NULL, NULL), 0);
#ifdef UNDER_TSAN
  /* The parsing of the variables is single-threaded, and each program
   * ThreadSanitizer starts takes half a second: 13 s for the 23 below. */
  printf("NOTE: under ThreadSanitizer: HK_THREADS and HK_PAR_MIN parsing "
         "not checked (the other suites do)\n");
  return;
#endif
  CHECK_INT_EQ(run_self("HK_THREADS", "1", "threads", "1", NULL), 0);
  CHECK_INT_EQ(run_self("HK_THREADS", "256", "threads", "256", NULL), 0);
  CHECK_INT_EQ(run_self("HK_THREADS", NULL, "threads", def, NULL), 0);
  const char *bad_threads[] = {"0", "257", "-2", "abc",
                               "",  "3x",  " 3", "99999999999999999999"};
  for (size_t i = 0; i < COUNT(bad_threads); i++)
    CHECK_MSG(run_self("HK_THREADS", bad_threads[i], "threads", def, NULL) == 0,
              "HK_THREADS=\"%s\"", bad_threads[i]);

  CHECK_INT_EQ(run_self("HK_PAR_MIN", "5,7", "parmin", "5", "7"), 0);
  CHECK_INT_EQ(run_self("HK_PAR_MIN", "9", "parmin", "9", "9"), 0);
  CHECK_INT_EQ(run_self("HK_PAR_MIN", "0,1", "parmin", "0", "1"), 0);
  CHECK_INT_EQ(run_self("HK_PAR_MIN", NULL, "parmin", "131072", "16384"), 0);
  const char *bad_min[] = {"x",  "5,", ",7",   "5,7,9",
                           "-1", "",   "5 ,7", "99999999999999999999999"};
  for (size_t i = 0; i < COUNT(bad_min); i++)
    CHECK_MSG(
        run_self("HK_PAR_MIN", bad_min[i], "parmin", "131072", "16384") == 0,
        "HK_PAR_MIN=\"%s\"", bad_min[i]);
}

static void *busy_caller(void *p) {
  atomic_int *calls = p;
  ew_bufs b;
  ew_bufs_init(&b, 65536 + 3);
  for (;;) {
    ew_run_ok(&b, 65536 + 3, 0);
    atomic_fetch_add(calls, 1);
  }
  return NULL;
}

/* Sub-modes: exit 0 when the environment had the expected effect. */
static int submode(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "exit-busy") == 0) {
    /* exit() while another thread is inside parallel calls must not hang */
    hk__par_set_min(1, 1);
    hk_set_threads(4);
    atomic_int calls;
    atomic_init(&calls, 0);
    pthread_t th;
    pthread_create(&th, NULL, busy_caller, &calls);
    struct timespec nap = {0, 1000000};
    while (atomic_load(&calls) < 3) nanosleep(&nap, NULL);
    exit(0);
  }
  if (argc == 3 && strcmp(argv[1], "threads") == 0) {
    int want = atoi(argv[2]);
    if (hk_get_threads() != want) return 1;
    ew_bufs b; /* and a shared call works with that many */
    ew_bufs_init(&b, 65536 + 3);
    hk__par_set_min(1, 1);
    int ok = ew_run_ok(&b, 65536 + 3, 0);
    ew_bufs_free(&b);
    return ok ? 0 : 1;
  }
  if (argc == 4 && strcmp(argv[1], "parmin") == 0) {
    return hk__par_min[0] == strtoull(argv[2], NULL, 10) &&
                   hk__par_min[1] == strtoull(argv[3], NULL, 10)
               ? 0
               : 1;
  }
  return 2;
}

int main(int argc, char **argv) {
  if (argc > 1) return submode(argc, argv);
  find_self_path();
  if (getenv("HK_PAR_MIN") == NULL) {
    CHECK_INT_EQ(hk__par_min[0], 131072);
    CHECK_INT_EQ(hk__par_min[1], 16384);
  }
  CHECK(hk_get_threads() >= 1);

  test_block_rule();
  test_pool_run();
  test_grid_regions();
  test_elementwise_matrix();
  test_reduce_matrix();
  test_really_parallel();
  test_nested();
  test_set_threads();
  test_concurrent_callers();
  test_fork();
  test_environment();
  CHECK_DONE();
}
