/* opt.c — tier opt: the system compiler's build of a module (build.c),
 * stored in and taken from the disk cache, and the background worker
 * that builds it and swaps each handle's implementation.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "build.h"
#include "loader.h"

/* How long the system compiler may take for one kernel file. */
#define OPT_TIMEOUT_S 300

void hk__need_cc(hk_context_t *ctx) {
  HK_ASSERT(hk__load_held(ctx));
  if (ctx->cc_probed) return;
  hk__cc_probe(ctx->opts.cc, ctx->cache ? hk__cache_dir(ctx->cache) : NULL,
               &ctx->cc);
  ctx->cc_probed = 1;
}

/* The meta text of m's cache entry: source, kernels, compiler, time. */
static char *cache_meta(const hk_context_t *ctx, const hk_module_t *m) {
  hku_buf b = HKU_BUF_INIT;
  char when[64];
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
  hku_buf_printf(&b, "source: %s\nkernels:", m->path);
  for (int i = 0; i < m->ninst; i++)
    if (hkc_instance_targets(m->inst[i]) & HK_TARGET_CPU)
      hku_buf_printf(&b, " %s", hkc_instance_name(m->inst[i]));
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
  int fd = hk__cache_get(ctx->cache, m->key, &size, NULL, &status);
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

/* Stores the checked object obj (open at fd) in the cache and loads the
 * entry back (every context then shares one file); without a cache, or
 * when that fails, loads fd itself. Takes fd. HK_OK and *h, or the
 * reason in d. */
static int store_and_load(hk_context_t *ctx, hk_module_t *m,
                          const hk_object_t *obj, int fd, void **h,
                          hku_diags *d) {
  if (ctx->cache) {
    char *meta = cache_meta(ctx, m);
    hku_diags quiet = HKU_DIAGS_INIT;
    if (hk__cache_put(ctx->cache, m->key, obj->image, obj->size,
                      meta ? meta : "", &quiet))
      hk__log(ctx, "%s: cannot store in the disk cache: %s", m->path,
              hku_diags_words(&quiet, "unknown reason"));
    free(meta);
    hku_diags_free(&quiet);
    int rc = cache_load(ctx, m, h, &quiet);
    hku_diags_free(&quiet);
    if (rc == HK_OK) {
      close(fd);
      return HK_OK;
    }
  }
  return hk__dl_open(fd, m->path, h, d);
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

/* Compiles, checks, caches and loads m's opt code into *h; the reason of a
 * failure is set as m's note. */
static int build_opt(hk_context_t *ctx, hk_module_t *m, void **h) {
  hk_compiler_t cc = hk__compiler_cc(&ctx->cc);
  hk_compile_opts_t o = {.purpose = HK_FOR_OPT, .timeout_s = OPT_TIMEOUT_S,
                         .cancel = &ctx->stopping};
  hk_object_t obj;
  hku_diags d = HKU_DIAGS_INIT;
  int fd = -1;
  int rc = hk__build_compile(&cc, m->unit, &o, "the system compiler failed: ",
                             &obj, &d);
  if (rc) {
    compile_note(ctx, m, &d);
  } else {
    rc = hk__build_image_fd(&obj, m->path, &fd, &d);
    if (rc == HK_OK) rc = store_and_load(ctx, m, &obj, fd, h, &d);
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

int hk__opt_build(hk_context_t *ctx, hk_module_t *m) {
  atomic_store(&m->opt_state, HK__OPT_RUNNING);
  void *h = NULL;
  int rc;
  if (ctx->cc.why_not) {
    set_note(ctx, m, ctx->cc.why_not);
    rc = HK_EUNSUPPORTED;
  } else if ((rc = build_opt(ctx, m, &h)) == HK_OK) {
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

/* ---- The worker ------------------------------------------------------------------ */

static void *opt_worker(void *arg) {
  hk_context_t *ctx = arg;
  pthread_mutex_lock(&ctx->opt_lock);
  while (!atomic_load(&ctx->stopping)) {
    hk_module_t *m = ctx->opt_head;
    if (!m) {
      pthread_cond_wait(&ctx->opt_cond, &ctx->opt_lock);
      continue;
    }
    ctx->opt_head = m->next_job;
    if (!ctx->opt_head) ctx->opt_tail = NULL;
    ctx->opt_busy = 1;
    pthread_mutex_unlock(&ctx->opt_lock);
    hk__opt_build(ctx, m);
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
