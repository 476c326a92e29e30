/* threadpool.h — the process-wide CPU thread pool and the internal knobs of the
 * parallel split (core/threadpool.c runs tasks; core/par.c cuts kernel work into
 * tasks; abi.h declares what generated code calls).
 */
#ifndef HK_THREADPOOL_H
#define HK_THREADPOOL_H

#include <stddef.h>

#include "internal.h"

/* The most threads a call may be shared among (hk_set_threads, HK_THREADS). */
#define HK_MAX_THREADS 256

typedef void (*hk__tpool_task_fn)(void *ctx, size_t t);

/* Runs task(ctx, t) exactly once for every t in [0, ntasks), on the pool's
 * workers and the calling thread together, and returns when all are done
 * (every write a task made is then visible to the caller).
 *
 * Never blocks behind anyone: when the pool is busy with another caller's
 * job or being resized, when the caller is itself inside a pool task (a
 * nested call), or when hk_get_threads() == 1, every task runs on the calling
 * thread, in order. Takes no lock and allocates nothing in those cases; the
 * first shared call starts the workers.
 *
 * Returns the number of threads that ran at least one task (1 when inline,
 * 0 when ntasks == 0). Tasks must not call fork(). */
HK_INTERNAL int hk__tpool_run(hk__tpool_task_fn task, void *ctx, size_t ntasks);

/* The number of threads a call is shared among (hk_get_threads()); >= 1.
 * Cheap: one relaxed atomic load once initialized. */
HK_INTERNAL int hk__tpool_threads(void);

/* Sets the thread count: 0 = the default, 1..HK_MAX_THREADS (callers check
 * the range). Waits for a job in progress, then stops surplus workers; new
 * ones start lazily. Called from inside a pool task, it only records the
 * count and the next job applies it (waiting would deadlock). */
HK_INTERNAL void hk__tpool_set_threads(int threads);

/* The CPUs this process may run on (its affinity mask), >= 1; also how
 * many compiler processes tier opt runs at once (opt.c). */
HK_INTERNAL int hk__cpu_count(void);

/* The default thread count: HK_THREADS when it is a valid value, else the
 * CPUs this process may run on, capped at HK_MAX_THREADS. */
HK_INTERNAL int hk__tpool_default_threads(void);

/* Which thread of the pool runs this: 0 for any thread that is not a
 * worker (a caller), i + 1 for worker i, below hk__tpool_threads() while
 * the thread count is unchanged. A task may use it to start on work near
 * what the same thread did before (par.c's grid regions). */
HK_INTERNAL int hk__tpool_self(void);
/* The number of worker threads alive now (hk__tpool_threads() - 1 once the
 * pool has run a job; 0 before). For tests. */
HK_INTERNAL int hk__tpool_workers(void);

/* Overrides hk__par_min (abi.h) — for tests and benchmarks; not thread-safe
 * against concurrent kernel calls. */
HK_INTERNAL void hk__par_set_min(size_t cheap, size_t heavy);
/* HK_PAR_MIN's value s: "N" (both thresholds) or "N,M" (cheap, heavy),
 * decimal. 0 and the thresholds, or -1 when it is anything else. */
HK_INTERNAL int hk__par_parse(const char *s, size_t *cheap, size_t *heavy);
/* The value s of a count variable (HK_THREADS, HK_JOBS): 1..max, 0 when s
 * is NULL or empty (unset), -1 when it is not a plain decimal number in
 * 1..max. */
HK_INTERNAL int hk__env_count(const char *s, int max);

#endif /* HK_THREADPOOL_H */
