/* threadpool.c — the process-wide CPU thread pool: lazily started workers that help
 * a caller run its tasks, and that fall back to the calling thread whenever
 * sharing could block or deadlock.
 *
 * One job at a time. A caller takes g_run with trylock and holds it for its
 * whole job; if it is taken (another caller's job, or a resize), the caller
 * runs its tasks itself, so no caller ever waits behind another. A thread
 * already inside a job (a worker, or a caller running its own tasks) runs
 * nested jobs itself too (tls_in_job).
 *
 * A job is published through one 64-bit atomic word, g_state:
 *     bits 33..63  generation, bumped for every job
 *     bit  32      open: workers may join
 *     bits  0..31  workers that joined the job and have not left it
 * A worker joins by a CAS that adds one to the count only while the word
 * still names the open job it saw, so it can never join a job after it was
 * closed; and the caller closes (CAS to count 0, not open) only once every
 * joined worker has left. So the job's fields (g_task, g_ctx, g_ntasks, which
 * may live on the caller's stack) are stable for every worker that reads
 * them, and no worker touches them once hk__tpool_run has returned.
 * Tasks are claimed with fetch_add on g_next. The caller claims too, so a job
 * completes even if no worker ever wakes: workers only help, and a lost or
 * late wakeup can cost speed but never progress.
 *
 * Waiting. A worker that found no job spins on g_state for up to
 * HK__POOL_SPIN_NS (pause instruction) after the job it left is closed
 * (and while it is still open, up to HK__POOL_TAIL_NS) so that
 * back-to-back calls find it awake, then sleeps on g_work_cv; the caller
 * waits for its helpers the same way on g_done_cv (spinning up to
 * HK__POOL_TAIL_NS). Spinning is skipped when there are more threads than CPUs,
 * where it would only steal time from the threads doing work. Sleepers and
 * wakers pair a seq_cst store with a seq_cst load on each side (g_sleepers /
 * g_waiter against g_state), so a wakeup is never lost.
 *
 * fork: the child starts with no workers and fresh locks (pthread_atfork),
 * and starts a new pool on its first shared call.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#endif

#include "threadpool.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* How long a thread spins before it sleeps: long enough to bridge the gap
 * between two back-to-back calls, short enough not to matter to other work. */
#define HK__POOL_SPIN_NS 5000u
/* ... counted from the end of the job. Before that, while the job a worker
 * has left is still open (its caller, or another worker, runs the last
 * tasks), and while a caller waits for the workers still inside its job,
 * they spin for up to this long: about one task's time, which a sleep
 * turned into a futex wakeup per job. Measured on the 2-vCPU EPYC, a
 * 2-thread attention_forward call (0.7 ms, 8 tasks of unequal size): with
 * the 5 us counted from the worker's last task, the worker slept and was
 * woken in every job (108 context switches in about 100 calls; 8 now),
 * and the call took 1.25-1.35x C's OpenMP loop instead of 1.17-1.18x. */
#define HK__POOL_TAIL_NS 1000000u

#define ST_OPEN ((uint64_t)1 << 32)
#define ST_ACTIVE ((uint64_t)ST_OPEN - 1u)
#define ST_GEN_SHIFT 33
#define ST_GEN(s) ((s) >> ST_GEN_SHIFT)
#define ST_MAKE(gen, flags) (((uint64_t)(gen) << ST_GEN_SHIFT) | (flags))

static pthread_mutex_t g_run = PTHREAD_MUTEX_INITIALIZER; /* one job/resize */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;  /* sleeping only */
static pthread_cond_t g_work_cv = PTHREAD_COND_INITIALIZER;
static pthread_cond_t g_done_cv = PTHREAD_COND_INITIALIZER;

static _Atomic uint64_t g_state;
static atomic_size_t g_next;  /* next task index to claim */
static atomic_int g_helpers;  /* workers that ran a task of this job */
static atomic_int g_sleepers; /* workers in (or entering) g_work_cv */
static atomic_int g_waiter;   /* the caller is in (or entering) g_done_cv */
static atomic_int g_quit;     /* workers exit (set only under g_run) */
static atomic_uint g_spin_ns; /* HK__POOL_SPIN_NS, or 0 if oversubscribed */

/* The current job: written under g_run while the state is closed. */
static hk__tpool_task_fn g_task;
static void *g_ctx;
static size_t g_ntasks;

static pthread_t g_workers[HK_MAX_THREADS - 1];
/* What worker i reads as it starts (written under g_run before it is
 * made; read once, before any later resize could rewrite it, as a resize
 * that rewrites entry i first joins worker i). */
typedef struct worker_start {
  uint64_t gen; /* the last job closed before it was made */
  int index;
} worker_start;
static worker_start g_start[HK_MAX_THREADS - 1];
static int g_nworkers;            /* under g_run */
static atomic_int g_nworkers_pub; /* a copy for hk__tpool_workers() */

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static atomic_int g_threads;  /* 0 until g_once has run */
static int g_default_threads; /* set by g_once */
static int g_ncpu;            /* set by g_once */

static _Thread_local int tls_in_job;
static _Thread_local int tls_self; /* 0: a caller; worker i: i + 1 */

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
  __asm__ __volatile__("yield");
#elif defined(__powerpc__) || defined(__powerpc64__)
  __asm__ __volatile__("or 27,27,27");
#endif
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- configuration ----------------------------------------------------- */

int hk__cpu_count(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    int c = CPU_COUNT(&set);
    if (c > 0) return c;
  }
  /* More CPUs than a cpu_set_t holds, or no affinity support. */
  long c = sysconf(_SC_NPROCESSORS_ONLN);
  if (c < 1) return 1;
  return c > INT_MAX ? INT_MAX : (int)c;
}

int hk__env_count(const char *s, int max) {
  if (s == NULL || *s == '\0') return 0;
  long v = 0;
  for (; *s; s++) {
    if (*s < '0' || *s > '9') return -1;
    v = v * 10 + (*s - '0');
    if (v > max) return -1;
  }
  return v >= 1 ? (int)v : -1;
}

/* HK_THREADS as a count, or 0 when it is unset or not a plain decimal
 * integer in 1..HK_MAX_THREADS (then it is ignored: the library never
 * prints; the hk command refuses it). */
static int env_threads(void) {
  int v = hk__env_count(getenv("HK_THREADS"), HK_MAX_THREADS);
  return v > 0 ? v : 0;
}

static void atfork_child(void);

static void pool_init(void) {
  g_ncpu = hk__cpu_count();
  int t = env_threads();
  if (t == 0) t = g_ncpu < HK_MAX_THREADS ? g_ncpu : HK_MAX_THREADS;
  g_default_threads = t;
  /* hk__tpool_set_threads stores after running g_once, so 0 means unset. */
  int unset = 0;
  atomic_compare_exchange_strong(&g_threads, &unset, t);
  pthread_atfork(NULL, NULL, atfork_child);
}

int hk__tpool_threads(void) {
  int t = atomic_load_explicit(&g_threads, memory_order_relaxed);
  if (t > 0) return t;
  pthread_once(&g_once, pool_init);
  return atomic_load(&g_threads);
}

int hk__tpool_default_threads(void) {
  pthread_once(&g_once, pool_init);
  return g_default_threads;
}

int hk__tpool_self(void) { return tls_self; }

int hk__tpool_workers(void) {
  return atomic_load_explicit(&g_nworkers_pub, memory_order_relaxed);
}

/* ---- workers ----------------------------------------------------------- */

static int job_ready(uint64_t s, uint64_t last_gen) {
  return (s & ST_OPEN) && ST_GEN(s) != last_gen;
}

/* Waits until a job other than last_gen is open or the pool quits; returns
 * the state word seen (the caller re-checks g_quit). */
static uint64_t wait_for_job(uint64_t last_gen) {
  uint64_t s;
  unsigned spin = atomic_load_explicit(&g_spin_ns, memory_order_relaxed);
  if (spin) {
    uint64_t start = now_ns(), first = start;
    for (unsigned i = 1;; i++) {
      s = atomic_load_explicit(&g_state, memory_order_acquire);
      if (job_ready(s, last_gen) ||
          atomic_load_explicit(&g_quit, memory_order_relaxed))
        return s;
      cpu_relax();
      if (i % 32 == 0) {
        uint64_t t = now_ns();
        if ((s & ST_OPEN) && ST_GEN(s) == last_gen &&
            t - first < HK__POOL_TAIL_NS)
          start = t; /* the job left is still open: its end counts */
        else if (t - start >= spin)
          break;
      }
    }
  }
  pthread_mutex_lock(&g_mu);
  atomic_fetch_add(&g_sleepers, 1);
  for (;;) {
    s = atomic_load(&g_state);
    if (job_ready(s, last_gen) || atomic_load(&g_quit)) break;
    pthread_cond_wait(&g_work_cv, &g_mu);
  }
  atomic_fetch_sub(&g_sleepers, 1);
  pthread_mutex_unlock(&g_mu);
  return s;
}

/* The stack a fault handler of the program (one that asks for SA_ONSTACK,
 * as the hk command's does) runs on in a worker whose own stack a kernel
 * overflowed (a huge local array); nothing else uses it. A thread that has
 * one already (a sanitizer's) keeps it. */
#define ALT_STACK_BYTES (64u * 1024u)

/* arg: its worker_start: its index, and the generation of the last job
 * closed before it was made; any later one is new to it (reading g_state
 * here instead could already see the job it was made for, and skip it). */
static void *worker_main(void *arg) {
  tls_in_job = 1; /* a task's own parallel calls run inline */
  const worker_start *st = arg;
  stack_t alt = {0}, cur;
  if (sigaltstack(NULL, &cur) == 0 && (cur.ss_flags & SS_DISABLE) &&
      (alt.ss_sp = malloc(ALT_STACK_BYTES))) {
    alt.ss_size = ALT_STACK_BYTES;
    if (sigaltstack(&alt, NULL) != 0) {
      free(alt.ss_sp);
      alt.ss_sp = NULL;
    }
  }
  uint64_t last_gen = st->gen;
  tls_self = st->index + 1;
  for (;;) {
    uint64_t s = wait_for_job(last_gen);
    if (atomic_load(&g_quit)) break;
    if (!job_ready(s, last_gen)) continue;
    if (!atomic_compare_exchange_strong_explicit(
            &g_state, &s, s + 1, memory_order_acq_rel, memory_order_relaxed))
      continue; /* another worker joined first, or the job closed: look again */
    last_gen = ST_GEN(s);

    hk__tpool_task_fn task = g_task;
    void *ctx = g_ctx;
    size_t ntasks = g_ntasks, t;
    int ran = 0;
    while ((t = atomic_fetch_add_explicit(&g_next, 1, memory_order_relaxed)) <
           ntasks) {
      task(ctx, t);
      ran = 1;
    }
    if (ran) atomic_fetch_add_explicit(&g_helpers, 1, memory_order_relaxed);

    /* Leave; the release half publishes the tasks' writes to the caller. */
    uint64_t prev = atomic_fetch_sub(&g_state, 1);
    if ((prev & ST_ACTIVE) == 1 && atomic_load(&g_waiter)) {
      pthread_mutex_lock(&g_mu);
      pthread_cond_signal(&g_done_cv);
      pthread_mutex_unlock(&g_mu);
    }
  }
  if (alt.ss_sp) {
    stack_t off = {.ss_flags = SS_DISABLE};
    sigaltstack(&off, NULL);
    free(alt.ss_sp);
  }
  return NULL;
}

/* Stops and joins every worker. Needs g_run (so no job is open). */
static void stop_workers(void) {
  if (g_nworkers == 0) return;
  atomic_store(&g_quit, 1);
  pthread_mutex_lock(&g_mu);
  pthread_cond_broadcast(&g_work_cv);
  pthread_mutex_unlock(&g_mu);
  for (int i = 0; i < g_nworkers; i++) pthread_join(g_workers[i], NULL);
  g_nworkers = 0;
  atomic_store_explicit(&g_nworkers_pub, 0, memory_order_relaxed);
  atomic_store(&g_quit, 0);
}

/* Makes the pool threads - 1 workers strong. Needs g_run. If a thread cannot
 * be created the pool runs with fewer (and tries again on the next job). */
static void resize_workers(int threads) {
  int want = threads - 1;
  if (g_nworkers > want) stop_workers();
  if (g_nworkers < want) {
    /* Workers take no signals: they belong to the threads the user made.
     * But for the faults their own code raises (a kernel's out-of-bounds
     * access, an integer division by zero): blocked, those kill the
     * process at once, whatever handler the program installed. */
    sigset_t all, old;
    sigfillset(&all);
    sigdelset(&all, SIGSEGV);
    sigdelset(&all, SIGBUS);
    sigdelset(&all, SIGFPE);
    sigdelset(&all, SIGILL);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    uint64_t gen = ST_GEN(atomic_load(&g_state));
    for (; g_nworkers < want; g_nworkers++) {
      worker_start *st = &g_start[g_nworkers];
      st->gen = gen;
      st->index = g_nworkers;
      if (pthread_create(&g_workers[g_nworkers], NULL, worker_main, st) != 0)
        break;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    atomic_store_explicit(&g_nworkers_pub, g_nworkers, memory_order_relaxed);
  }
  atomic_store_explicit(&g_spin_ns, threads <= g_ncpu ? HK__POOL_SPIN_NS : 0,
                        memory_order_relaxed);
}

void hk__tpool_set_threads(int threads) {
  pthread_once(&g_once, pool_init);
  atomic_store(&g_threads, threads == 0 ? g_default_threads : threads);
  if (tls_in_job) return; /* g_run may be ours, or our caller's: can't wait */
  pthread_mutex_lock(&g_run);
  /* Re-read: a concurrent hk__tpool_set_threads may have stored since. */
  int t = atomic_load(&g_threads);
  if (g_nworkers > t - 1) stop_workers(); /* growing waits for the next job */
  pthread_mutex_unlock(&g_run);
}

/* ---- running a job ----------------------------------------------------- */

static void run_inline(hk__tpool_task_fn task, void *ctx, size_t ntasks) {
  for (size_t t = 0; t < ntasks; t++) task(ctx, t);
}

/* Wakes up to want sleeping workers for the job just published. */
static void wake_workers(size_t want) {
  int sleepers = atomic_load(&g_sleepers);
  if (sleepers <= 0 || want == 0) return;
  pthread_mutex_lock(&g_mu);
  if (want >= (size_t)sleepers) {
    pthread_cond_broadcast(&g_work_cv);
  } else {
    for (size_t i = 0; i < want; i++) pthread_cond_signal(&g_work_cv);
  }
  pthread_mutex_unlock(&g_mu);
}

/* Waits until no worker is inside job gen, then closes it so that none can
 * join any more. Needs g_run. */
static void close_job(uint64_t gen) {
  for (;;) {
    /* the workers inside finish their tasks: up to HK__POOL_TAIL_NS */
    unsigned spin = atomic_load_explicit(&g_spin_ns, memory_order_relaxed)
                        ? HK__POOL_TAIL_NS
                        : 0;
    uint64_t start = spin ? now_ns() : 0;
    for (unsigned i = 1;
         atomic_load_explicit(&g_state, memory_order_relaxed) & ST_ACTIVE;
         i++) {
      if (!spin || (i % 32 == 0 && now_ns() - start >= spin)) {
        pthread_mutex_lock(&g_mu);
        atomic_store(&g_waiter, 1);
        while (atomic_load(&g_state) & ST_ACTIVE)
          pthread_cond_wait(&g_done_cv, &g_mu);
        atomic_store(&g_waiter, 0);
        pthread_mutex_unlock(&g_mu);
        break;
      }
      cpu_relax();
    }
    uint64_t idle = ST_MAKE(gen, ST_OPEN);
    if (atomic_compare_exchange_strong_explicit(
            &g_state, &idle, ST_MAKE(gen, 0), memory_order_acq_rel,
            memory_order_relaxed))
      return;
    /* A worker joined late; it finds no task and leaves at once. */
  }
}

int hk__tpool_run(hk__tpool_task_fn task, void *ctx, size_t ntasks) {
  if (ntasks == 0) return 0;
  if (ntasks == 1 || tls_in_job || hk__tpool_threads() <= 1 ||
      pthread_mutex_trylock(&g_run) != 0) {
    run_inline(task, ctx, ntasks);
    return 1;
  }
  tls_in_job = 1;
  int threads = atomic_load(&g_threads);
  if (g_nworkers != threads - 1) resize_workers(threads);
  if (g_nworkers == 0) {
    run_inline(task, ctx, ntasks);
    tls_in_job = 0;
    pthread_mutex_unlock(&g_run);
    return 1;
  }

  g_task = task;
  g_ctx = ctx;
  g_ntasks = ntasks;
  atomic_store_explicit(&g_next, 0, memory_order_relaxed);
  atomic_store_explicit(&g_helpers, 0, memory_order_relaxed);
  uint64_t gen =
      ST_GEN(atomic_load_explicit(&g_state, memory_order_relaxed)) + 1;
  atomic_store(&g_state, ST_MAKE(gen, ST_OPEN)); /* publishes the fields */
  wake_workers(ntasks - 1);

  size_t t;
  int ran = 0; /* fast workers may have taken every task */
  while ((t = atomic_fetch_add_explicit(&g_next, 1, memory_order_relaxed)) <
         ntasks) {
    task(ctx, t);
    ran = 1;
  }
  close_job(gen);

  int helpers = atomic_load_explicit(&g_helpers, memory_order_relaxed);
  tls_in_job = 0;
  pthread_mutex_unlock(&g_run);
  return ran + helpers;
}

/* ---- fork -------------------------------------------------------------- */

/* The child has only the forking thread: forget the parent's workers (their
 * stacks are reclaimed by the C library) and any lock they or other threads
 * held, so the child starts a new pool on its first shared call. */
static void atfork_child(void) {
  pthread_mutex_init(&g_run, NULL);
  pthread_mutex_init(&g_mu, NULL);
  pthread_cond_init(&g_work_cv, NULL);
  pthread_cond_init(&g_done_cv, NULL);
  g_nworkers = 0;
  atomic_store(&g_nworkers_pub, 0);
  atomic_store(&g_state, 0);
  atomic_store(&g_sleepers, 0);
  atomic_store(&g_waiter, 0);
  atomic_store(&g_quit, 0);
}
