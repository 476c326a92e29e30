/* opt.c — tier opt: the system compiler's build of modules (build.c),
 * stored in and taken from the disk cache, and the background worker
 * that builds them and swaps each handle's implementation.
 *
 * The worker takes every module queued by the time a load finishes (a
 * folder is one load) and builds them in batches (build_batch.c): one
 * compiler process per batch, as many batches as there are CPUs, run at
 * once. A batch's object is stored once in the disk cache, under the key
 * of each kernel file it holds (each file's own key: a file that changes
 * misses alone), and loaded once (dl.c knows objects by file). A unit the
 * compiler complains about is built alone, in the next round, where its
 * errors are located as usual, and the rest of its batch again without it:
 * a bad kernel file costs the others one more compile, never their code.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "build.h"
#include "compiler_cc.h"
#include "loader.h"
#include "threadpool.h"

/* How long the system compiler may take for one kernel file or batch. */
#define OPT_TIMEOUT_S 300

/* The most instances one batch holds: a failing batch is built again, and
 * the time one batch takes is the time the last kernel waits. */
#define BATCH_MAX_INSTANCES 64
/* A file of this many instances is built alone, in parts (compiler_cc.c),
 * not in a batch. */
#define BIG_INSTANCES (BATCH_MAX_INSTANCES / 2)

void hk__need_cc(hk_context_t *ctx) {
  HK_ASSERT(hk__load_held(ctx));
  if (ctx->cc_probed) return;
  hk__cc_probe(ctx->opts.cc, ctx->cache ? hk__cache_dir(ctx->cache) : NULL,
               &ctx->cc);
  ctx->cc_probed = 1;
}

/* The meta text of the cache entry of the n modules ms: sources,
 * kernels, compiler, time. */
static char *cache_meta(const hk_context_t *ctx, hk_module_t *const *ms,
                        int n) {
  hku_buf b = HKU_BUF_INIT;
  char when[64];
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
  hku_buf_put(&b, "source:");
  for (int j = 0; j < n; j++) hku_buf_printf(&b, " %s", ms[j]->path);
  hku_buf_put(&b, "\nkernels:");
  for (int j = 0; j < n; j++)
    for (int i = 0; i < ms[j]->ninst; i++)
      if (hkc_instance_targets(ms[j]->inst[i]) & HK_TARGET_CPU)
        hku_buf_printf(&b, " %s", hkc_instance_name(ms[j]->inst[i]));
  const char *id = ctx->cc.identity ? ctx->cc.identity : "";
  const char *nl = strchr(id, '\n');
  hku_buf_printf(&b, "\ncompiler: %.*s\nbuilt: %s\n",
                 (int)(nl ? nl - id : (long)strlen(id)), id, when);
  return hku_buf_take(&b);
}

/* Loads the cache entry of m->key, checked. HK_OK and *h; HK_ENOTFOUND on
 * a miss (a damaged entry is logged: the cache removed it); else the
 * reason in d. */
static int cache_load(hk_context_t *ctx, hk_module_t *m, void **h,
                      hku_diags *d) {
  size_t size;
  int status;
  /* the entry of a batch another module loaded already: hold that */
  int fd = hk__cache_peek(ctx->cache, m->key);
  if (fd >= 0 && hk__dl_hold(fd, h)) return HK_OK;
  if (fd >= 0) close(fd);
  fd = hk__cache_get(ctx->cache, m->key, &size, NULL, &status);
  if (fd < 0) {
    if (status == HK_CACHE_CORRUPT)
      hk__log(ctx, "%s: a damaged disk cache entry was removed; compiling "
                   "again", m->path);
    return HK_ENOTFOUND;
  }
  int rc = hk__check_object(fd, size, m->path, d);
  if (rc) {
    close(fd);
    return rc;
  }
  return hk__dl_open(fd, m->path, h, d);
}

int hk__opt_from_cache(hk_context_t *ctx, hk_module_t *m) {
  if (!ctx->cache) return HK_ENOTFOUND;
  hku_diags d = HKU_DIAGS_INIT;
  void *h;
  int rc = cache_load(ctx, m, &h, &d);
  if (rc != HK_OK && rc != HK_ENOTFOUND)
    hk__log(ctx, "%s: the disk cache entry cannot be used (%s); compiling "
                 "again", m->path, hku_diags_words(&d, "unknown reason"));
  if (rc == HK_OK &&
      hk__resolve_all(m, hk__resolve_dl, h, HK_TIER_OPT, m->impls, &d)) {
    hk__dl_close(h);
    rc = HK_ENOTFOUND;
  }
  hku_diags_free(&d);
  if (rc) return HK_ENOTFOUND;
  m->dl = h;
  atomic_store(&m->opt_state, HK__OPT_DONE);
  return HK_OK;
}

int hk__opt_failed_before(hk_context_t *ctx, hk_module_t *m) {
  char *was = NULL;
  if (!ctx->cache || ctx->cc.why_not ||
      hk__cache_get_failure(ctx->cache, m->key, &was) != HK_OK)
    return 0;
  size_t l = strlen(was);
  while (l && was[l - 1] == '\n') was[--l] = '\0';
  hku_buf b = HKU_BUF_INIT;
  hku_buf_printf(&b, "%s\n(this failed on an earlier start and would again: "
                     "%s remembers it; hk cache clear, or a change to the "
                     "file or the compiler, tries again)",
                 was, hk__cache_dir(ctx->cache));
  free(was);
  free(m->opt_note);
  m->opt_note = b.oom ? strdup("failed on an earlier start") : hku_buf_take(&b);
  hku_buf_free(&b);
  atomic_store(&m->opt_state, HK__OPT_FAILED);
  hk__log(ctx, "%s: tier opt unavailable, staying on tier jit: %s", m->path,
          m->opt_note ? m->opt_note : "failed on an earlier start");
  return 1;
}

/* ---- Building ------------------------------------------------------------------ */

static void set_note(hk_context_t *ctx, hk_module_t *m, const char *note) {
  hk__load_lock(ctx);
  free(m->opt_note);
  m->opt_note = note ? strdup(note) : NULL;
  hk__load_unlock(ctx);
}

/* The note of a failed compile: located errors listed under a heading,
 * else the one message as it is. */
static void compile_note(hk_context_t *ctx, hk_module_t *m,
                         const hku_diags *d) {
  hku_buf note = HKU_BUF_INIT;
  if (hk__build_located(d)) {
    hku_buf_put(&note, "the system compiler failed:\n");
    hku_diags_format(d, &note);
  } else {
    hku_buf_put(&note, hku_diags_words(d, "unknown reason"));
  }
  set_note(ctx, m, note.oom ? "out of memory" : hku_buf_str(&note));
  hku_buf_free(&note);
}

/* Stores the checked object obj in the cache under the keys of the n
 * modules ms (one file); a failure is logged, and costs a later miss. */
static void store(hk_context_t *ctx, hk_module_t *const *ms, int n,
                  const hk_object_t *obj) {
  uint8_t(*keys)[32] = malloc((size_t)n * sizeof *keys);
  char *meta = cache_meta(ctx, ms, n);
  hku_diags quiet = HKU_DIAGS_INIT;
  if (keys) {
    for (int j = 0; j < n; j++) memcpy(keys[j], ms[j]->key, 32);
    if (hk__cache_put_keys(ctx->cache, (const uint8_t(*)[32])keys, n,
                           obj->image, obj->size, meta ? meta : "", &quiet))
      hk__log(ctx, "%s: cannot store in the disk cache: %s", ms[0]->path,
              hku_diags_words(&quiet, "unknown reason"));
  }
  free(keys);
  free(meta);
  hku_diags_free(&quiet);
}

/* Loads m's code from its cache entry (every context then shares one
 * file), else from the checked object open at fd, which stays open. HK_OK
 * and *h (one hold for m), or the reason in d. */
static int load_for(hk_context_t *ctx, hk_module_t *m, int fd, void **h,
                    hku_diags *d) {
  if (ctx->cache) {
    hku_diags quiet = HKU_DIAGS_INIT;
    int rc = cache_load(ctx, m, h, &quiet);
    hku_diags_free(&quiet);
    if (rc == HK_OK) return HK_OK;
  }
  int mine = dup(fd);
  if (mine < 0) {
    hku_diag_add(d, HKU_ERROR, m->path, 0, 0, "cannot load it: %s",
                 strerror(errno));
    return HK_EIO;
  }
  return hk__dl_open(mine, m->path, h, d);
}

/* Switches m's live handles to the opt code in h. */
static void publish(hk_context_t *ctx, hk_module_t *m, void *h) {
  hk__load_lock(ctx);
  m->dl = h;
  if (m->live)
    for (int i = 0; i < m->ninst; i++) {
      hk_kernel_t *k = m->kernels ? m->kernels[i] : NULL;
      if (k && k->mod == m && m->opt_impls[i].e.range)
        atomic_store_explicit(&k->impl, &m->opt_impls[i], memory_order_release);
    }
  free(m->opt_note);
  m->opt_note = NULL;
  atomic_store(&m->opt_state, HK__OPT_DONE);
  hk__load_unlock(ctx);
}

/* Remembers in the disk cache that m cannot be built for tier opt, with
 * its note (hk__opt_failed_before reads it on later starts). */
static void remember_failure(hk_context_t *ctx, hk_module_t *m) {
  if (!ctx->cache) return;
  hk__load_lock(ctx);
  char *note = m->opt_note ? strdup(m->opt_note) : NULL;
  hk__load_unlock(ctx);
  hku_diags quiet = HKU_DIAGS_INIT;
  if (note &&
      hk__cache_put_failure(ctx->cache, m->key, note, &quiet) != HK_OK)
    hk__log(ctx, "%s: cannot remember the failure in the disk cache: %s",
            m->path, hku_diags_words(&quiet, "unknown reason"));
  hku_diags_free(&quiet);
  free(note);
}

/* Compiles, checks, caches and loads m's opt code into *h; the reason of a
 * failure is set as m's note, and remembered when it will not change (the
 * compiler's complaints about the code, a refused object). */
static int build_opt(hk_context_t *ctx, hk_module_t *m, int jobs, void **h) {
  hk_compiler_t cc = hk__compiler_cc(&ctx->cc);
  /* on the watcher thread (a forced tier opt reload), the watch's flag:
   * its stop sets it, and so does hk_context_destroy (through the stop) */
  const _Atomic int *watch = hk__watch_cancel_flag();
  hk_compile_opts_t o = {.purpose = HK_FOR_OPT, .timeout_s = OPT_TIMEOUT_S,
                         .cancel = watch ? watch : &ctx->stopping,
                         .jobs = jobs};
  hk_object_t obj;
  hku_diags d = HKU_DIAGS_INIT;
  int fd = -1;
  int rc = hk__build_compile(&cc, m->unit, &o, "the system compiler failed: ",
                             &obj, &d);
  if (rc) {
    compile_note(ctx, m, &d);
    if (rc == HK_ECOMPILE && hk__build_located(&d)) remember_failure(ctx, m);
  } else {
    rc = hk__build_image_fd(&obj, m->path, &fd, &d);
    if (rc == HK_EREFUSED) {
      set_note(ctx, m, hku_diags_words(&d, "the object was refused"));
      remember_failure(ctx, m);
    }
    if (rc == HK_OK) {
      if (ctx->cache) store(ctx, &m, 1, &obj);
      rc = load_for(ctx, m, fd, h, &d);
      close(fd);
    }
    hk__object_free(&obj);
    if (rc == HK_OK &&
        (rc = hk__resolve_all(m, hk__resolve_dl, *h, HK_TIER_OPT,
                              m->opt_impls, &d)))
      hk__dl_close(*h);
    if (rc) set_note(ctx, m, hku_diags_words(&d, "unknown reason"));
  }
  hku_diags_free(&d);
  return rc;
}

int hk__opt_build(hk_context_t *ctx, hk_module_t *m, int jobs) {
  atomic_store(&m->opt_state, HK__OPT_RUNNING);
  void *h = NULL;
  int rc;
  if (ctx->cc.why_not) {
    set_note(ctx, m, ctx->cc.why_not);
    rc = HK_EUNSUPPORTED;
  } else if ((rc = build_opt(ctx, m, jobs, &h)) == HK_OK) {
    publish(ctx, m, h);
    return HK_OK;
  }
  /* logged before the state says so: who waited for it (hk_kernel_wait_opt)
   * finds it in the log. Forced tier opt fails the load instead, which
   * says why. */
  if (!atomic_load(&ctx->stopping) && ctx->opts.tier != HK_TIER_OPT)
    hk__log(ctx, "%s: tier opt unavailable, staying on tier jit: %s",
            m->path, m->opt_note ? m->opt_note : "unknown reason");
  atomic_store(&m->opt_state, HK__OPT_FAILED);
  return rc;
}

/* ---- Batches ------------------------------------------------------------------ */

/* A job of a round: n modules built as a batch, or alone when n is 1; redo
 * says, per module, what the next round does with it. */
enum { REDO_NONE, REDO_ALONE, REDO_BATCH };
typedef struct opt_job {
  hk_module_t **ms;
  char *redo;
  int n;
  int procs; /* compiler processes it may run at once (run_round) */
} opt_job;

typedef struct opt_round {
  hk_context_t *ctx;
  opt_job *jobs;
  int njobs;
  _Atomic int next; /* the next job to take */
} opt_round;

static void jobs_free_one(opt_job *job) {
  free(job->ms);
  free(job->redo);
}

static void jobs_free(opt_job *jobs, int n) {
  for (int j = 0; jobs && j < n; j++) jobs_free_one(&jobs[j]);
  free(jobs);
}

/* Makes jobs[j] able to hold cap modules. 0, or -1 when out of memory. */
static int job_init(opt_job *job, int cap) {
  job->ms = calloc((size_t)cap, sizeof *job->ms);
  job->redo = calloc((size_t)cap, 1);
  job->n = 0;
  return job->ms && job->redo ? 0 : -1;
}

/* 1 when a kernel of m has the name of one in job: one object cannot
 * define both (a file reloaded while its old version waits). */
static int collides(const opt_job *job, const hk_module_t *m) {
  for (int j = 0; j < job->n; j++)
    for (int a = 0; a < job->ms[j]->ninst; a++)
      for (int b = 0; b < m->ninst; b++)
        if (!strcmp(hkc_instance_name(job->ms[j]->inst[a]),
                    hkc_instance_name(m->inst[b])))
          return 1;
  return 0;
}

/* The size of m's own code: what it adds to a batch's compile. */
static size_t weight(const hk_module_t *m) {
  size_t off, len;
  hkc_unit_prelude(m->unit, &off, &len);
  return hkc_unit_len(m->unit) - len;
}

/* Adds the jobs of the n modules ms, all mergeable with the same flags,
 * to v (*nv of them, room for as many more as there are modules): as
 * many batches as there are CPUs (hk__cc_jobs) (fewer for few modules, more for big
 * ones: BATCH_MAX_INSTANCES), each module to the lightest batch so far
 * where no name collides, else alone. HK_OK or HK_ENOMEM. */
static int plan_group(hk_module_t **ms, int n, opt_job *v, int *nv) {
  int ninst = 0;
  for (int j = 0; j < n; j++) ninst += ms[j]->ninst;
  int nb = hk__cc_jobs();
  if (nb < (ninst + BATCH_MAX_INSTANCES - 1) / BATCH_MAX_INSTANCES)
    nb = (ninst + BATCH_MAX_INSTANCES - 1) / BATCH_MAX_INSTANCES;
  if (nb > n) nb = n;
  opt_job *bv = v + *nv;
  size_t *w = calloc((size_t)nb + 1, sizeof *w);
  if (!w) return HK_ENOMEM;
  int rc = HK_OK;
  for (int b = 0; rc == HK_OK && b < nb; b++)
    if (job_init(&bv[b], n)) rc = HK_ENOMEM;
  *nv += nb;
  for (int j = 0; rc == HK_OK && j < n; j++) {
    int best = -1;
    /* a big file is built alone, in parts (run_round): in a batch, one
     * process would compile it whole */
    for (int b = 0; b < nb && ms[j]->ninst < BIG_INSTANCES; b++)
      if ((best < 0 || w[b] < w[best]) && !collides(&bv[b], ms[j])) best = b;
    opt_job *to = best >= 0 ? &bv[best] : &v[(*nv)++];
    if (best < 0 && job_init(to, 1)) rc = HK_ENOMEM;
    if (rc == HK_OK) to->ms[to->n++] = ms[j];
    if (best >= 0) w[best] += weight(ms[j]);
  }
  free(w);
  return rc;
}

/* The first round's jobs for the n modules ms: those that can be merged
 * in batches of the same flags (plan_group), the others alone. HK_OK and
 * *jobs, *njobs (empty batches dropped), or HK_ENOMEM. */
static int plan(hk_module_t **ms, int n, opt_job **jobs, int *njobs) {
  opt_job *v = calloc(2 * (size_t)n, sizeof *v);
  hk_module_t **group = calloc((size_t)n, sizeof *group);
  const char **flags = calloc((size_t)n, sizeof *flags); /* NULL: alone */
  char *taken = calloc((size_t)n, 1);
  int nv = 0, rc = v && group && flags && taken ? HK_OK : HK_ENOMEM;
  for (int j = 0; rc == HK_OK && j < n; j++)
    if (hk__build_mergeable(ms[j]->unit))
      flags[j] = hk__cc_unit_flags(ms[j]->unit);
  for (int j = 0; rc == HK_OK && j < n; j++) {
    if (taken[j]) continue;
    if (!flags[j]) {
      opt_job *alone = &v[nv++];
      if (job_init(alone, 1)) rc = HK_ENOMEM;
      else alone->ms[alone->n++] = ms[j];
      continue;
    }
    int ng = 0;
    for (int i = j; i < n; i++)
      if (!taken[i] && flags[i] && !strcmp(flags[i], flags[j])) {
        group[ng++] = ms[i];
        taken[i] = 1;
      }
    rc = plan_group(group, ng, v, &nv);
  }
  free(group);
  free(flags);
  free(taken);
  int kept = 0;
  for (int j = 0; j < nv; j++) /* drop empty batches */
    if (v[j].n) v[kept++] = v[j];
    else jobs_free_one(&v[j]);
  if (rc) {
    jobs_free(v, kept);
    return rc;
  }
  *jobs = v;
  *njobs = kept;
  return HK_OK;
}

/* The next round's jobs from the redo marks of this round's: the modules
 * to batch again of each job as one batch, those to build alone alone.
 * HK_OK and *next, *nnext (0 when all is done), or HK_ENOMEM. */
static int replan(const opt_job *jobs, int njobs, opt_job **next,
                  int *nnext) {
  int cap = 0;
  for (int j = 0; j < njobs; j++) cap += jobs[j].n;
  opt_job *v = calloc((size_t)cap + 1, sizeof *v);
  int nv = 0;
  if (!v) return HK_ENOMEM;
  for (int j = 0; j < njobs; j++) {
    const opt_job *job = &jobs[j];
    int again = -1;
    for (int k = 0; k < job->n; k++) {
      if (job->redo[k] == REDO_NONE) continue;
      int to = job->redo[k] == REDO_BATCH && again >= 0 ? again : nv++;
      if (job->redo[k] == REDO_BATCH && again < 0) again = to;
      if (!v[to].ms && job_init(&v[to], job->n)) {
        jobs_free(v, nv);
        return HK_ENOMEM;
      }
      v[to].ms[v[to].n++] = job->ms[k];
    }
  }
  *next = v;
  *nnext = nv;
  return HK_OK;
}

/* Gives the n modules ms of a batch that built the checked object at fd
 * their code, or marks them to be built alone. */
static void publish_batch(hk_context_t *ctx, opt_job *job, int fd) {
  for (int k = 0; k < job->n; k++) {
    hk_module_t *m = job->ms[k];
    hku_diags d = HKU_DIAGS_INIT;
    void *h;
    int rc = load_for(ctx, m, fd, &h, &d);
    if (rc == HK_OK &&
        (rc = hk__resolve_all(m, hk__resolve_dl, h, HK_TIER_OPT,
                              m->opt_impls, &d)))
      hk__dl_close(h);
    hku_diags_free(&d);
    if (rc == HK_OK)
      publish(ctx, m, h);
    else
      job->redo[k] = REDO_ALONE;
  }
}

/* Runs one job: builds, checks, caches, loads and publishes; sets the redo
 * marks of what must be built again. */
static void run_job(hk_context_t *ctx, opt_job *job) {
  if (job->n == 1) { /* a big one alone: in parts on its processes */
    hk__opt_build(ctx, job->ms[0], job->procs);
    return;
  }
  const hkc_unit **units = calloc((size_t)job->n, sizeof *units);
  if (!units) {
    memset(job->redo, REDO_ALONE, (size_t)job->n);
    return;
  }
  for (int k = 0; k < job->n; k++) {
    units[k] = job->ms[k]->unit;
    atomic_store(&job->ms[k]->opt_state, HK__OPT_RUNNING);
  }
  hk_compile_opts_t o = {.purpose = HK_FOR_OPT, .timeout_s = OPT_TIMEOUT_S,
                         .cancel = &ctx->stopping};
  hk_object_t obj;
  hku_diags d = HKU_DIAGS_INIT;
  int fd, rc = hk__build_batch(&ctx->cc, units, job->n, &o, &obj, job->redo,
                               &d);
  free(units);
  if (rc == HK_ECOMPILE && memchr(job->redo, 1, (size_t)job->n)) {
    for (int k = 0; k < job->n; k++)
      job->redo[k] = job->redo[k] ? REDO_ALONE : REDO_BATCH;
  } else if (rc == HK_OK &&
             (rc = hk__build_image_fd(&obj, job->ms[0]->path, &fd, &d)) ==
                 HK_OK) {
    if (ctx->cache) store(ctx, job->ms, job->n, &obj);
    publish_batch(ctx, job, fd);
    close(fd);
  } else { /* not any one unit's fault, or a refused object: find out */
    memset(job->redo, REDO_ALONE, (size_t)job->n);
  }
  free(obj.image);
  hku_diags_free(&d);
}

/* Set on the threads of tier opt (the worker and its round threads),
 * where the log callback may run. */
static _Thread_local int tls_opt_thread;

int hk__opt_on_worker(void) { return tls_opt_thread; }

static void *round_thread(void *arg) {
  opt_round *r = arg;
  hk_context_t *ctx = r->ctx;
  tls_opt_thread = 1;
  for (int j; (j = atomic_fetch_add(&r->next, 1)) < r->njobs;) {
    if (atomic_load(&ctx->stopping)) {
      for (int k = 0; k < r->jobs[j].n; k++)
        atomic_store(&r->jobs[j].ms[k]->opt_state, HK__OPT_FAILED);
      continue;
    }
    run_job(ctx, &r->jobs[j]);
    pthread_mutex_lock(&ctx->opt_lock); /* who waits for one of them */
    pthread_cond_broadcast(&ctx->opt_idle);
    pthread_mutex_unlock(&ctx->opt_lock);
  }
  return NULL;
}

/* Runs the jobs of r on up to one thread per CPU (hk__cc_jobs), this one
 * among them; a job of one big file compiles it in parts on its share of
 * the CPUs, by instances (a file of 66 beside a batch of 5 gets both of 2
 * CPUs: the batch is done long before). */
static void run_round(opt_round *r) {
  int nt = hk__cc_jobs();
  long total = 0;
  for (int j = 0; j < r->njobs; j++)
    for (int k = 0; k < r->jobs[j].n; k++) total += r->jobs[j].ms[k]->ninst;
  for (int j = 0; j < r->njobs; j++) {
    long mine = r->jobs[j].ms[0]->ninst;
    long p = total ? (nt * mine + total / 2) / total : 1;
    r->jobs[j].procs = r->jobs[j].n > 1 || p < 1 ? 1 : p > nt ? nt : (int)p;
  }
  if (nt > r->njobs) nt = r->njobs;
  pthread_t *t = calloc((size_t)nt, sizeof *t);
  int started = 0;
  while (t && started + 1 < nt &&
         pthread_create(&t[started], NULL, round_thread, r) == 0)
    started++;
  round_thread(r);
  for (int i = 0; i < started; i++) pthread_join(t[i], NULL);
  free(t);
}

/* Builds the n modules ms for tier opt: rounds of batches until every one
 * is built or has failed alone. */
static void build_all(hk_context_t *ctx, hk_module_t **ms, int n) {
  opt_job *jobs = NULL;
  int njobs = 0;
  if (n < 2 || ctx->cc.why_not || plan(ms, n, &jobs, &njobs)) {
    for (int j = 0; j < n; j++) hk__opt_build(ctx, ms[j], hk__cc_jobs());
    return;
  }
  while (njobs) {
    opt_round r = {.ctx = ctx, .jobs = jobs, .njobs = njobs};
    atomic_init(&r.next, 0);
    run_round(&r);
    opt_job *next = NULL;
    int nnext = 0;
    if (replan(jobs, njobs, &next, &nnext)) { /* out of memory: one by one */
      for (int j = 0; j < njobs; j++)
        for (int k = 0; k < jobs[j].n; k++)
          if (jobs[j].redo[k]) hk__opt_build(ctx, jobs[j].ms[k], 1);
    }
    jobs_free(jobs, njobs);
    jobs = next;
    njobs = nnext;
  }
  jobs_free(jobs, njobs);
}

/* ---- The worker ------------------------------------------------------------------ */

/* Takes every queued module, once the load in progress, if any, has
 * queued all of its files (a folder is one load), into *ms (malloc'ed), or
 * when out of memory the first one into *one (*ms = one); *n of them.
 * opt_lock held, and held again on return; sets opt_busy. */
static void take_queue(hk_context_t *ctx, hk_module_t **one,
                       hk_module_t ***ms, int *n) {
  ctx->opt_busy = 1;
  pthread_mutex_unlock(&ctx->opt_lock);
  hk__load_lock(ctx); /* lock order: load_lock before opt_lock */
  hk__load_unlock(ctx);
  pthread_mutex_lock(&ctx->opt_lock);
  int count = 0;
  for (hk_module_t *m = ctx->opt_head; m; m = m->next_job) count++;
  hk_module_t **v = calloc((size_t)count, sizeof *v);
  if (!v) {
    count = 1;
    v = one;
  }
  for (int i = 0; i < count; i++) {
    v[i] = ctx->opt_head;
    ctx->opt_head = ctx->opt_head->next_job;
  }
  if (!ctx->opt_head) ctx->opt_tail = NULL;
  *ms = v;
  *n = count;
}

static void *opt_worker(void *arg) {
  hk_context_t *ctx = arg;
  tls_opt_thread = 1;
  pthread_mutex_lock(&ctx->opt_lock);
  while (!atomic_load(&ctx->stopping)) {
    if (!ctx->opt_head) {
      pthread_cond_wait(&ctx->opt_cond, &ctx->opt_lock);
      continue;
    }
    hk_module_t *one, **ms;
    int n;
    take_queue(ctx, &one, &ms, &n);
    pthread_mutex_unlock(&ctx->opt_lock);
    /* a version a reload replaced before its turn runs for nobody: not
     * compiled (50 quick rewrites of a file made 50 compiles) */
    hk__load_lock(ctx);
    int kept = 0;
    for (int j = 0; j < n; j++) {
      if (ms[j]->live) {
        ms[kept++] = ms[j];
        continue;
      }
      free(ms[j]->opt_note);
      ms[j]->opt_note = strdup("replaced by a newer version before its turn");
      atomic_store(&ms[j]->opt_state, HK__OPT_FAILED);
    }
    hk__load_unlock(ctx);
    build_all(ctx, ms, kept);
    if (ms != &one) free(ms);
    pthread_mutex_lock(&ctx->opt_lock);
    ctx->opt_busy = 0;
    pthread_cond_broadcast(&ctx->opt_idle);
  }
  /* jobs never started stay queued: nothing will run them */
  for (hk_module_t *m = ctx->opt_head; m; m = m->next_job)
    atomic_store(&m->opt_state, HK__OPT_FAILED);
  ctx->opt_head = ctx->opt_tail = NULL;
  pthread_cond_broadcast(&ctx->opt_idle);
  pthread_mutex_unlock(&ctx->opt_lock);
  return NULL;
}

/* Starts the worker with signals blocked (they belong to the app). 1 when
 * it runs. opt_lock held. */
static int start_worker(hk_context_t *ctx) {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  if (pthread_create(&ctx->opt_thread, NULL, opt_worker, ctx) == 0)
    ctx->opt_started = 1;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return ctx->opt_started;
}

void hk__opt_enqueue(hk_context_t *ctx, hk_module_t *m) {
  HK_ASSERT(hk__load_held(ctx));
  pthread_mutex_lock(&ctx->opt_lock);
  atomic_store(&m->opt_state, HK__OPT_QUEUED);
  m->next_job = NULL;
  if (ctx->opt_tail)
    ctx->opt_tail->next_job = m;
  else
    ctx->opt_head = m;
  ctx->opt_tail = m;
  if (!ctx->opt_started && !start_worker(ctx)) { /* the job cannot run */
    ctx->opt_head = ctx->opt_tail = NULL;
    atomic_store(&m->opt_state, HK__OPT_FAILED);
    free(m->opt_note);
    m->opt_note = strdup("cannot start the background compiler thread");
  }
  pthread_cond_signal(&ctx->opt_cond);
  pthread_mutex_unlock(&ctx->opt_lock);
}

void hk__opt_stop(hk_context_t *ctx) {
  pthread_mutex_lock(&ctx->opt_lock);
  atomic_store(&ctx->stopping, 1);
  pthread_cond_broadcast(&ctx->opt_cond);
  int started = ctx->opt_started;
  ctx->opt_started = 0;
  pthread_mutex_unlock(&ctx->opt_lock);
  if (started) pthread_join(ctx->opt_thread, NULL);
}
