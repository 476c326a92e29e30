/* context.c — the public face of the registry: contexts, loading and
 * reloading plugin folders, finding, describing and calling kernels.
 * (module.c loads one source, register.c registers it; registry.h has the
 * objects.)
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen.h"
#include "fsutil.h"
#include "registry.h"
#include "sha256.h"

/* ---- The load lock ------------------------------------------------------- */

/* ctx->load_lock is recursive (a load may build tier opt at once, which
 * publishes under it); its owner and depth are kept beside it, written
 * only by the owner, so that "load_lock held" can be asserted. */
void hk__load_lock(hk_context_t *ctx) {
  pthread_mutex_lock(&ctx->load_lock);
  if (atomic_load(&ctx->load_depth) == 0)
    atomic_store(&ctx->load_owner, pthread_self());
  atomic_fetch_add(&ctx->load_depth, 1); /* after the owner: see held */
}

void hk__load_unlock(hk_context_t *ctx) {
  HK_ASSERT(hk__load_held(ctx));
  atomic_fetch_sub(&ctx->load_depth, 1);
  pthread_mutex_unlock(&ctx->load_lock);
}

int hk__load_held(hk_context_t *ctx) {
  /* the owner is stored before the depth becomes non-zero, so a thread
   * that does not hold the lock never reads itself as the owner */
  return atomic_load(&ctx->load_depth) > 0 &&
         pthread_equal(atomic_load(&ctx->load_owner), pthread_self());
}

/* ---- Errors ------------------------------------------------------------- */

/* The last failure's message, per thread (like dlerror). */
static _Thread_local char last_error[8192];

HK_API const char *hk_last_error(void) { return last_error; }

HK_API void hk_clear_error(void) { last_error[0] = '\0'; }

int hk__fail(int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  if (n >= (int)sizeof last_error) /* say that it was cut */
    memcpy(last_error + sizeof last_error - 5, "...\n", 5);
  return code;
}

void hk__log(hk_context_t *ctx, const char *fmt, ...) {
  if (!ctx->opts.log) return;
  char msg[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  ctx->opts.log(ctx->opts.log_user, msg);
}

/* Turns d into the thread's last error and returns code (HK_OK when d
 * holds no error). oom beats everything. */
static int report(hku_diags *d, int code) {
  if (d->oom) return hk__fail(HK_ENOMEM, "out of memory");
  if (!d->nerrors) return HK_OK;
  hku_buf b = HKU_BUF_INIT;
  hku_diags_format(d, &b);
  hk__fail(code, "%s", hku_buf_str(&b));
  hku_buf_free(&b);
  return code;
}

HK_API const char *hk_tier_name(hk_tier_t t) {
  switch (t) {
    case HK_TIER_AUTO: return "auto";
    case HK_TIER_INLINE: return "inline";
    case HK_TIER_JIT: return "jit";
    case HK_TIER_OPT: return "opt";
    case HK_TIER_SO: return "so";
    case HK_TIER_NONE: return "none";
  }
  return "invalid";
}

static int load_dirs(hk_context_t *ctx, char **dirs, int n);

/* What a plugin folder's loader takes (SPEC.md §2). */
static const char *const plugin_suffixes[] = {".json", ".so", NULL};

/* ---- Creation -------------------------------------------------------------- */

static const char *kernel_name(const void *v) {
  const hk_kernel_t *k = v;
  return atomic_load(&k->info)->name;
}

/* A handle for every stdlib kernel. HK_OK or HK_ENOMEM. */
static int register_stdlib(hk_context_t *ctx) {
  if (hk__map_reserve(&ctx->names, hk__stdlib_count)) return HK_ENOMEM;
  for (size_t i = 0; i < hk__stdlib_count; i++) {
    hk_kernel_t *k = calloc(1, sizeof *k);
    if (!k) return HK_ENOMEM;
    k->ctx = ctx;
    k->stdlib_impl.e = hk__stdlib_entry(&hk__stdlib[i]);
    k->stdlib_impl.tier = HK_TIER_INLINE;
    atomic_init(&k->impl, &k->stdlib_impl);
    atomic_init(&k->cuda, NULL);
    atomic_init(&k->info, &hk__stdlib[i].info);
    atomic_init(&k->state, HK__LIVE);
    k->next_all = ctx->all;
    ctx->all = k;
    hk__map_put(&ctx->names, k);
  }
  return HK_OK;
}

static void set_problems(hk_context_t *ctx, const hku_diags *d) {
  hku_buf b = HKU_BUF_INIT;
  hku_diags_format(d, &b);
  free(ctx->problems);
  ctx->problems = hku_buf_take(&b);
}

HK_API int hk_context_create(hk_context_t **out, const hk_options_t *opts) {
  if (!out) return hk__fail(HK_EINVAL, "hk_context_create: NULL argument");
  *out = NULL;
  /* a flag this libhk does not know (a newer header's) is not ignored */
  const unsigned known = HK_ALLOW_UNSAFE_PERMISSIONS | HK_NO_CACHE | HK_WATCH;
  if (opts && (opts->flags & ~known))
    return hk__fail(HK_EINVAL,
                    "hk_context_create: opts->flags holds 0x%x, which is no "
                    "flag of this libhk (known: HK_ALLOW_UNSAFE_PERMISSIONS, "
                    "HK_NO_CACHE, HK_WATCH)",
                    opts->flags & ~known);
  hk_context_t *ctx = calloc(1, sizeof *ctx);
  if (!ctx) return hk__fail(HK_ENOMEM, "out of memory");
  pthread_mutexattr_t ma;
  pthread_mutexattr_init(&ma);
  /* loads may compile tier opt at once, which publishes under this lock */
  pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
  pthread_mutex_init(&ctx->load_lock, &ma);
  pthread_mutexattr_destroy(&ma);
  pthread_rwlock_init(&ctx->map_lock, NULL);
  pthread_mutex_init(&ctx->opt_lock, NULL);
  pthread_cond_init(&ctx->opt_cond, NULL);
  pthread_cond_init(&ctx->opt_idle, NULL);
  atomic_init(&ctx->stopping, 0);
  atomic_init(&ctx->watch_cancel, 0);
  hk__map_init(&ctx->names, kernel_name);
  if (opts) ctx->opts = *opts;
  ctx->opts.plugin_dirs = NULL; /* copied into ctx->dirs as they load */
  ctx->cache_dir_opt = opts && opts->cache_dir ? strdup(opts->cache_dir) : NULL;
  ctx->cc_opt = opts && opts->cc ? strdup(opts->cc) : NULL;
  ctx->opts.cache_dir = ctx->cache_dir_opt;
  ctx->opts.cc = ctx->cc_opt;
  if (ctx->opts.tier != HK_TIER_AUTO && ctx->opts.tier != HK_TIER_JIT &&
      ctx->opts.tier != HK_TIER_OPT) {
    hk_context_destroy(ctx);
    return hk__fail(HK_EINVAL, "hk_context_create: tier must be auto, jit "
                               "or opt");
  }
  if (register_stdlib(ctx)) {
    hk_context_destroy(ctx);
    return hk__fail(HK_ENOMEM, "out of memory");
  }
  if (!(ctx->opts.flags & HK_NO_CACHE)) {
    hku_diags d = HKU_DIAGS_INIT;
    if (hk__cache_open(ctx->opts.cache_dir,
                       (ctx->opts.flags & HK_ALLOW_UNSAFE_PERMISSIONS) != 0,
                       &ctx->cache, &d)) {
      const char *why = hku_diags_words(&d, "out of memory");
      ctx->cache = NULL;
      ctx->cache_note = strdup(why);
      hk__log(ctx, "no disk cache: %s", why);
    }
    hku_diags_free(&d);
  }

  /* The plugin folders: given, else HK_PLUGIN_PATH. Failures are kept as
   * problems (hk_context_problems); the context is made regardless. */
  char **dirs = NULL;
  int ndirs = 0;
  char *env = NULL;
  if (opts && opts->plugin_dirs) {
    while (opts->plugin_dirs[ndirs]) ndirs++;
    dirs = (char **)opts->plugin_dirs;
  } else if (getenv("HK_PLUGIN_PATH") && *getenv("HK_PLUGIN_PATH")) {
    env = strdup(getenv("HK_PLUGIN_PATH"));
    size_t cap = 1;
    for (const char *p = env; p && *p; p++) cap += *p == ':';
    dirs = env ? calloc(cap + 1, sizeof *dirs) : NULL;
    for (char *s = env, *tok; dirs && (tok = strsep(&s, ":"));)
      if (*tok) dirs[ndirs++] = tok;
  }
  if (ndirs) load_dirs(ctx, dirs, ndirs);
  if (env) free(dirs);
  free(env);
  if ((ctx->opts.flags & HK_WATCH) && hk__watch_start(ctx, 0) != HK_OK)
    hk__log(ctx, "cannot watch the plugin folders: %s", hk_last_error());
  *out = ctx;
  return HK_OK;
}

HK_API void hk_context_destroy(hk_context_t *ctx) {
  if (!ctx) return;
  /* first: a compile the watcher runs now (forced tier opt compiles on
   * the loading thread) is cancelled, not waited for, before its join */
  atomic_store(&ctx->stopping, 1);
  hk__watch_stop(ctx);
  hk__opt_stop(ctx);
  for (hk_kernel_t *k = ctx->all, *next; k; k = next) {
    next = k->next_all;
    free(k);
  }
  hk_module_t *lists[] = {ctx->modules, ctx->retired};
  for (int l = 0; l < 2; l++)
    for (hk_module_t *m = lists[l], *next; m; m = next) {
      next = m->next;
      hk__module_free(m);
    }
  hk__map_free(&ctx->names);
  for (int i = 0; i < ctx->ndirs; i++) free(ctx->dirs[i]);
  free(ctx->dirs);
  hk__cache_close(ctx->cache);
  hk__cc_free(&ctx->cc);
  free(ctx->cache_note);
  free(ctx->cache_dir_opt);
  free(ctx->cc_opt);
  free(ctx->problems);
  pthread_cond_destroy(&ctx->opt_idle);
  pthread_cond_destroy(&ctx->opt_cond);
  pthread_mutex_destroy(&ctx->opt_lock);
  pthread_rwlock_destroy(&ctx->map_lock);
  pthread_mutex_destroy(&ctx->load_lock);
  free(ctx);
}

/* hk_context_problems' copy for each thread, freed when the thread ends:
 * the context's own text is replaced by any load, which the watcher may
 * run at any time, so callers get a copy taken under the load lock. */
static pthread_key_t problems_key;
static pthread_once_t problems_once = PTHREAD_ONCE_INIT;
static int problems_key_ok;
static void problems_key_make(void) {
  problems_key_ok = pthread_key_create(&problems_key, free) == 0;
}

HK_API const char *hk_context_problems(hk_context_t *ctx) {
  if (!ctx) return "";
  pthread_once(&problems_once, problems_key_make);
  if (!problems_key_ok) return "out of memory (the problems cannot be kept)";
  hk__load_lock(ctx);
  char *copy = strdup(ctx->problems ? ctx->problems : "");
  hk__load_unlock(ctx);
  if (!copy) return "out of memory (the problems cannot be copied)";
  free(pthread_getspecific(problems_key));
  if (pthread_setspecific(problems_key, copy) != 0) {
    free(copy);
    return "out of memory (the problems cannot be kept)";
  }
  return copy;
}

/* ---- Loading ----------------------------------------------------------------- */

static hk_module_t *find_module(hk_context_t *ctx, const char *path) {
  for (hk_module_t *m = ctx->modules; m; m = m->next)
    if (!strcmp(m->path, path)) return m;
  return NULL;
}

/* Has the file changed since m was loaded? Same inode, size and time:
 * no; else its bytes decide. */
static int changed(const hk_module_t *m, struct stat *now) {
  if (stat(m->path, now) != 0) return 1;
  if (now->st_dev == m->st.st_dev && now->st_ino == m->st.st_ino &&
      now->st_size == m->st.st_size &&
      now->st_mtim.tv_sec == m->st.st_mtim.tv_sec &&
      now->st_mtim.tv_nsec == m->st.st_mtim.tv_nsec)
    return 0;
  if (m->kind == HK__SRC_SO || !S_ISREG(now->st_mode)) return 1;
  /* not blocking on a FIFO put there since the stat */
  int fd = open(m->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  FILE *f = fd < 0 ? NULL : fdopen(fd, "rb");
  if (!f) {
    if (fd >= 0) close(fd);
    return 1;
  }
  hk_sha256_t s;
  hk__sha256_init(&s);
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) hk__sha256_update(&s, buf, n);
  fclose(f);
  uint8_t d[32];
  hk__sha256_final(&s, d);
  return memcmp(d, m->digest, 32) != 0;
}

/* Loads (or reloads, when it changed) one file; problems go to d.
 * load_lock held. Returns HK_OK when the file is loaded and current, else
 * the kind of failure. */
static int load_path(hk_context_t *ctx, const char *path, int from_dir,
                     hku_diags *d) {
  HK_ASSERT(hk__load_held(ctx));
  hk_module_t *old = find_module(ctx, path);
  struct stat now;
  if (old && !changed(old, &now)) return HK_OK;
  if (hk__check_perms(ctx, path, d)) return HK_EIO; /* see scan_dir */
  hk_src_kind kind = hku_ends_with(path, ".so") ? HK__SRC_SO : HK__SRC_JSON;
  hk_module_t *m;
  int code = hk__module_load(ctx, path, NULL, 0, kind, &m, d);
  if (code) {
    if (old) hku_diag_add(d, HKU_NOTE, path, 0, 0,
                          "the previous version stays loaded");
    return code;
  }
  m->from_dir = from_dir || (old && old->from_dir);
  if ((code = hk__module_register(ctx, m, old, d))) {
    hk__module_free(m);
    return code;
  }
  if (old)
    hk__log(ctx, "%s: reloaded", path);
  return HK_OK;
}

/* Adds dir to the folders reload scans (once). HK_OK or HK_ENOMEM. */
static int remember_dir(hk_context_t *ctx, const char *dir) {
  for (int i = 0; i < ctx->ndirs; i++)
    if (!strcmp(ctx->dirs[i], dir)) return HK_OK;
  char **v = realloc(ctx->dirs, (size_t)(ctx->ndirs + 1) * sizeof *v);
  if (!v) return HK_ENOMEM;
  ctx->dirs = v;
  if (!(v[ctx->ndirs] = strdup(dir))) return HK_ENOMEM;
  ctx->ndirs++;
  return HK_OK;
}

/* Loads what is new or changed in dir; problems go to d. load_lock held.
 * Returns HK_OK, or the kind of the first failure. */
static int scan_dir(hk_context_t *ctx, const char *dir, hku_diags *d) {
  HK_ASSERT(hk__load_held(ctx));
  /* unsafe permissions are HK_EIO to the caller (hk.h): the file may not
   * be trusted; HK_EREFUSED is for compiled objects */
  if (hk__check_perms(ctx, dir, d)) return HK_EIO;
  char **paths;
  int n = hku_list_dir(dir, plugin_suffixes, &paths);
  if (n < 0) {
    hku_diag_add(d, HKU_ERROR, dir, 0, 0, "cannot read plugin folder: %s",
                 strerror(errno));
    return n;
  }
  int rc = HK_OK;
  for (int i = 0; i < n; i++) {
    int r = load_path(ctx, paths[i], 1, d);
    if (rc == HK_OK) rc = r;
  }
  hku_free_list(paths, n);
  return rc;
}

/* Loads the folders (remembered for reload); their problems become the
 * context's. Returns HK_OK or the kind of the first failure. */
static int load_dirs(hk_context_t *ctx, char **dirs, int n) {
  hku_diags d = HKU_DIAGS_INIT;
  int rc = HK_OK;
  hk__load_lock(ctx);
  for (int i = 0; i < n; i++) {
    /* a folder already known under another spelling (./dir/, a link, its
     * absolute path) is scanned under the first one: its files are then
     * the modules loaded already, not new ones clashing with them */
    const char *dir = dirs[i];
    struct stat st, known;
    if (stat(dir, &st) == 0)
      for (int j = 0; j < ctx->ndirs; j++)
        if (stat(ctx->dirs[j], &known) == 0 && known.st_dev == st.st_dev &&
            known.st_ino == st.st_ino) {
          dir = ctx->dirs[j];
          break;
        }
    if (remember_dir(ctx, dir)) d.oom = 1;
    int r = scan_dir(ctx, dir, &d);
    if (rc == HK_OK) rc = r;
  }
  set_problems(ctx, &d);
  int watching = ctx->watch != NULL;
  hk__load_unlock(ctx);
  if (watching) hk__watch_start(ctx, 0); /* watch the new folders too */
  if (rc != HK_OK || d.oom) rc = report(&d, d.oom ? HK_ENOMEM : rc);
  hku_diags_free(&d);
  return rc;
}

HK_API int hk_load_dir(hk_context_t *ctx, const char *dir) {
  if (!ctx || !dir) return hk__fail(HK_EINVAL, "hk_load_dir: NULL argument");
  char *dirs[1] = {(char *)dir};
  return load_dirs(ctx, dirs, 1);
}

HK_API int hk_load_file(hk_context_t *ctx, const char *path) {
  if (!ctx || !path) return hk__fail(HK_EINVAL, "hk_load_file: NULL argument");
  if (!hku_ends_with(path, ".json") && !hku_ends_with(path, ".so"))
    return hk__fail(HK_EINVAL, "%s: error: a plugin is a kernel file (.json) "
                               "or a prebuilt plugin (.so)", path);
  hku_diags d = HKU_DIAGS_INIT;
  hk__load_lock(ctx);
  /* the folder holding it matters as much as the file */
  char *dir = strdup(path);
  char *slash = dir ? strrchr(dir, '/') : NULL;
  if (dir && slash) *(slash == dir ? slash + 1 : slash) = '\0';
  int rc = HK_EIO;
  if (!dir)
    rc = HK_ENOMEM;
  else if (!hk__check_perms(ctx, slash ? dir : ".", &d))
    rc = load_path(ctx, path, 0, &d);
  free(dir);
  hk__load_unlock(ctx);
  if (rc != HK_OK) rc = report(&d, rc);
  hku_diags_free(&d);
  return rc;
}

HK_API int hk_load_string(hk_context_t *ctx, const char *json, size_t len,
                          const char *name) {
  if (!ctx || !json)
    return hk__fail(HK_EINVAL, "hk_load_string: NULL argument");
  char label[512];
  snprintf(label, sizeof label, "<%s>", name ? name : "string");
  hku_diags d = HKU_DIAGS_INIT;
  hk__load_lock(ctx);
  hk_module_t *old = find_module(ctx, label);
  hk_module_t *m;
  int rc = hk__module_load(ctx, label, json, len, HK__SRC_STRING, &m, &d);
  if (rc == HK_OK && (rc = hk__module_register(ctx, m, old, &d)))
    hk__module_free(m);
  hk__load_unlock(ctx);
  if (rc != HK_OK) rc = report(&d, rc);
  hku_diags_free(&d);
  return rc;
}

HK_API int hk_reload(hk_context_t *ctx) {
  if (!ctx) return hk__fail(HK_EINVAL, "hk_reload: NULL context");
  hku_diags d = HKU_DIAGS_INIT;
  int rc = HK_OK;
  hk__load_lock(ctx);
  /* files that are gone, and the paths of files loaded one by one (the
   * module list changes as they reload) */
  int nsingle = 0;
  for (hk_module_t *m = ctx->modules; m; m = m->next) nsingle++;
  char **single = calloc((size_t)nsingle + 1, sizeof *single);
  nsingle = 0;
  for (hk_module_t *m = ctx->modules, *next; m; m = next) {
    next = m->next;
    if (m->kind == HK__SRC_STRING) continue;
    if (access(m->path, F_OK) != 0) {
      hk__log(ctx, "%s: removed, its kernels are unloaded", m->path);
      hk__module_unload(ctx, m);
    } else if (!m->from_dir && single) {
      single[nsingle++] = strdup(m->path);
    }
  }
  if (!single) d.oom = 1;
  for (int i = 0; i < nsingle; i++) {
    int r = single[i] ? load_path(ctx, single[i], 0, &d) : HK_ENOMEM;
    if (rc == HK_OK) rc = r;
    free(single[i]);
  }
  free(single);
  for (int i = 0; i < ctx->ndirs; i++) {
    int r = scan_dir(ctx, ctx->dirs[i], &d);
    if (rc == HK_OK) rc = r;
  }
  /* a watcher's reload its stop cancelled says nothing of the files: their
   * problems stay those of the last reload that ran to its end */
  const _Atomic int *cancel = hk__watch_cancel_flag();
  if (!cancel || !atomic_load(cancel)) set_problems(ctx, &d);
  hk__load_unlock(ctx);
  if (rc != HK_OK || d.oom) rc = report(&d, d.oom ? HK_ENOMEM : rc);
  hku_diags_free(&d);
  return rc;
}

HK_API int hk_context_wait(hk_context_t *ctx) {
  if (!ctx) return hk__fail(HK_EINVAL, "hk_context_wait: NULL context");
  if (hk__opt_on_worker()) /* the log callback: it would wait for itself */
    return hk__fail(HK_EINVAL,
                    "hk_context_wait: called on hk's compiler thread (from "
                    "the log callback?), which it would wait for");
  pthread_mutex_lock(&ctx->opt_lock);
  while ((ctx->opt_head || ctx->opt_busy) && ctx->opt_started)
    pthread_cond_wait(&ctx->opt_idle, &ctx->opt_lock);
  pthread_mutex_unlock(&ctx->opt_lock);
  return HK_OK;
}

/* ---- Kernels --------------------------------------------------------------------- */

hk_kernel_t *hk__kernel_lookup(hk_context_t *ctx, const char *name) {
  pthread_rwlock_rdlock(&ctx->map_lock);
  hk_kernel_t *k = hk__map_get(&ctx->names, name);
  pthread_rwlock_unlock(&ctx->map_lock);
  return k;
}

HK_API int hk_kernel_find(hk_context_t *ctx, const char *name,
                          hk_kernel_t **out) {
  if (!ctx || !name || !out)
    return hk__fail(HK_EINVAL, "hk_kernel_find: NULL argument");
  pthread_rwlock_rdlock(&ctx->map_lock);
  hk_kernel_t *k = hk__map_get(&ctx->names, name);
  if (!k) {
    /* the name of a kernel with placeholders (conv2d for conv2d_f32,
     * conv2d_f64): say so, and how to have one */
    hku_buf inst = HKU_BUF_INIT;
    int count = 0;
    for (size_t i = 0; i < ctx->names.cap; i++) {
      const hk_kernel_t *c = ctx->names.slots[i];
      if (!c) continue;
      const char *cn = atomic_load(&c->info)->name;
      if (!hkc_is_instance_of(cn, name)) continue;
      if (count < 8) hku_buf_printf(&inst, "%s%s", count ? ", " : "", cn);
      count++;
    }
    pthread_rwlock_unlock(&ctx->map_lock);
    *out = NULL;
    int rc = count
        ? hk__fail(HK_ENOTFOUND,
                   "no kernel named '%s', but it has instances (%s%s): name "
                   "one, or let hk_kernel_select pick one by the arrays' "
                   "dtypes",
                   name, hku_buf_str(&inst), count > 8 ? ", ..." : "")
        : hk__fail(HK_ENOTFOUND, "no kernel named '%s'", name);
    hku_buf_free(&inst);
    return rc;
  }
  pthread_rwlock_unlock(&ctx->map_lock);
  *out = k;
  return HK_OK;
}

static int cmp_kernel(const void *a, const void *b) {
  const hk_kernel_t *x = *(hk_kernel_t *const *)a, *y = *(hk_kernel_t *const *)b;
  return strcmp(atomic_load(&x->info)->name, atomic_load(&y->info)->name);
}

HK_API int hk_kernel_foreach(hk_context_t *ctx,
                             int (*fn)(hk_kernel_t *k, void *user),
                             void *user) {
  if (!ctx || !fn)
    return hk__fail(HK_EINVAL, "hk_kernel_foreach: NULL argument");
  pthread_rwlock_rdlock(&ctx->map_lock);
  size_t n = 0;
  hk_kernel_t **v = malloc((ctx->names.count + 1) * sizeof *v);
  if (v)
    for (size_t i = 0; i < ctx->names.cap; i++)
      if (ctx->names.slots[i]) v[n++] = ctx->names.slots[i];
  pthread_rwlock_unlock(&ctx->map_lock);
  if (!v) return hk__fail(HK_ENOMEM, "out of memory");
  qsort(v, n, sizeof *v, cmp_kernel);
  int rc = 0;
  for (size_t i = 0; i < n && !rc; i++) rc = fn(v[i], user);
  free(v);
  return rc;
}

HK_API const hk_kernel_info_t *hk_kernel_info(const hk_kernel_t *k) {
  return k ? atomic_load(&k->info) : NULL;
}

HK_API hk_tier_t hk_kernel_tier(const hk_kernel_t *k) {
  if (!k) return HK_TIER_NONE;
  const hk_impl_t *im = atomic_load_explicit(&k->impl, memory_order_acquire);
  return im ? im->tier : HK_TIER_NONE;
}

HK_API const char *hk_kernel_note(const hk_kernel_t *k, char *buf, size_t n) {
  if (!n || !buf) return buf;
  buf[0] = '\0';
  if (!k) return buf;
  hk_context_t *ctx = k->ctx;
  hk__load_lock(ctx);
  int state = atomic_load(&k->state);
  const hk_module_t *m = k->mod;
  if (state == HK__REMOVED)
    snprintf(buf, n, "unloaded: its file was removed or no longer defines it");
  else if (state == HK__STALE)
    snprintf(buf, n, "stale: reloaded with other parameters; find it again");
  else if (state == HK__NO_CPU)
    snprintf(buf, n, "no cpu target");
  else if (m && m->kind != HK__SRC_SO)
    switch (atomic_load(&m->opt_state)) {
      case HK__OPT_QUEUED:
      case HK__OPT_RUNNING:
        snprintf(buf, n, "opt: compiling in the background");
        break;
      case HK__OPT_FAILED:
        snprintf(buf, n, "opt: %s", m->opt_note ? m->opt_note : "failed");
        break;
      case HK__OPT_NONE:
        if (ctx->opts.tier == HK_TIER_JIT)
          snprintf(buf, n, "opt: not wanted (tier jit)");
        break;
      case HK__OPT_DONE:
        /* a fast kernel in a file with strict ones is built strict
         * (schemas/README.md 8.1): say so, or it looks fast */
        if (m->file && !hkc_file_fp_fast(m->file, HK_TARGET_CPU))
          for (int i = 0; i < m->ninst; i++)
            if (m->kernels && m->kernels[i] == k &&
                hkc_instance_fp_fast(m->inst[i]))
              snprintf(buf, n, "opt: built strict, not fast: its file also "
                               "holds strict kernels (put the fast ones in "
                               "a file of their own)");
        break;
      default:
        break;
    }
  hk__load_unlock(ctx);
  return buf;
}

HK_API int hk_kernel_wait_opt(hk_kernel_t *k) {
  if (!k) return hk__fail(HK_EINVAL, "hk_kernel_wait_opt: NULL kernel");
  /* an unloaded or stale handle runs on no tier: say so, as a call does */
  const int st = atomic_load(&k->state);
  if (st == HK__REMOVED || st == HK__STALE) return hk__call_failure(k);
  hk_context_t *ctx = k->ctx;
  /* k->mod changes under load_lock when a reload gives k new code; the
   * module itself lives as long as the context. A module replaced while
   * waited on is not compiled (opt.c): wait on k's new one then. */
  hk_module_t *m;
  for (;;) {
    hk__load_lock(ctx);
    m = k->mod;
    hk__load_unlock(ctx);
    if (!m || m->kind == HK__SRC_SO) return HK_OK; /* stdlib, prebuilt */
    pthread_mutex_lock(&ctx->opt_lock);
    for (;;) {
      int s = atomic_load(&m->opt_state);
      if (s != HK__OPT_QUEUED && s != HK__OPT_RUNNING) break;
      if (!ctx->opt_started) break;
      pthread_cond_wait(&ctx->opt_idle, &ctx->opt_lock);
    }
    pthread_mutex_unlock(&ctx->opt_lock);
    hk__load_lock(ctx);
    const int moved = k->mod != m;
    hk__load_unlock(ctx);
    if (!moved) break;
  }
  const int now = atomic_load(&k->state); /* unloaded while waited on */
  if (now == HK__REMOVED || now == HK__STALE) return hk__call_failure(k);
  switch (atomic_load(&m->opt_state)) {
    case HK__OPT_DONE: return HK_OK;
    case HK__OPT_NONE:
      return hk__fail(HK_EUNSUPPORTED, "%s: tier opt is not used (tier jit "
                                       "was asked for)",
                      atomic_load(&k->info)->name);
    default: {
      char note[2048];
      hk_kernel_note(k, note, sizeof note);
      return hk__fail(ctx->cc.why_not ? HK_EUNSUPPORTED : HK_ECOMPILE,
                      "%s: %s", atomic_load(&k->info)->name, note);
    }
  }
}

/* Why a kernel cannot run (its implementation is NULL). */
int hk__call_failure(const hk_kernel_t *k) {
  const char *name = atomic_load(&k->info)->name;
  switch (atomic_load(&k->state)) {
    case HK__NO_CPU:
      return hk__fail(HK_EUNSUPPORTED, "kernel %s has no cpu target", name);
    case HK__STALE:
      return hk__fail(HK_ENOTFOUND,
                      "kernel %s was reloaded with other parameters: find it "
                      "again (hk_kernel_find)",
                      name);
    default:
      return hk__fail(HK_ENOTFOUND,
                      "kernel %s was unloaded (its file was removed, or no "
                      "longer defines it)",
                      name);
  }
}

/* rc, with the thread's last error prefixed by k's name when rc is an
 * error (a grid's bad extent, said without it by hk__run). */
int hk__named(const hk_kernel_t *k, int rc) {
  if (__builtin_expect(rc == HK_OK, 1)) return rc;
  char why[1024];
  snprintf(why, sizeof why, "%s", hk_last_error());
  return hk__fail(rc, "%s: %s", atomic_load(&k->info)->name, why);
}

int hk__call_cpu(const hk_kernel_t *k, size_t n, void *const *args) {
  const hk_impl_t *im = atomic_load_explicit(&k->impl, memory_order_acquire);
  if (__builtin_expect(im == NULL, 0)) return hk__call_failure(k);
  int rc = hk__run(&im->e, args, n);
  return __builtin_expect(rc == HK_OK, 1) ? rc : hk__named(k, rc);
}

int hk__call_rows_cpu(const hk_kernel_t *k, size_t rows, size_t n,
                      void *const *args) {
  const hk_impl_t *im = atomic_load_explicit(&k->impl, memory_order_acquire);
  if (__builtin_expect(im == NULL, 0)) return hk__call_failure(k);
  if (im->e.kind != HK_KIND_ROWS)
    return hk__fail(HK_EINVAL, "kernel %s is not a rows kernel",
                    atomic_load(&k->info)->name);
  int rc = hk__par_rows(im->e.range, args, rows, n, im->e.flags,
                        im->e.acc_size, NULL);
  return __builtin_expect(rc == HK_OK, 1) ? rc : hk__named(k, rc);
}

HK_API int hk_call(const hk_kernel_t *k, size_t n, void *const *args) {
  /* Until the CUDA backend starts, every buffer is host memory: one
   * relaxed load, and the CPU path. */
  if (__builtin_expect(
          atomic_load_explicit(&hk__cuda_started, memory_order_relaxed), 0))
    return hk__call_auto(k, n, args);
  const hk_impl_t *im = atomic_load_explicit(&k->impl, memory_order_acquire);
  if (__builtin_expect(im == NULL, 0)) return hk__call_failure(k);
  int rc = hk__run(&im->e, args, n);
  return __builtin_expect(rc == HK_OK, 1) ? rc : hk__named(k, rc);
}

HK_API int hk_kernel_lens(const hk_kernel_t *k, size_t n, void *const *args,
                          int64_t *lens) {
  if (!k || !lens) return hk__fail(HK_EINVAL, "hk_kernel_lens: NULL argument");
  const hk_impl_t *im = atomic_load_explicit(&k->impl, memory_order_acquire);
  if (!im) return hk__call_failure(k);
  const hk_kernel_info_t *info = atomic_load(&k->info);
  /* lens writes the counts in parameter order and stops at a bad one:
   * the last one written is it (a sentinel marks the rest) */
  const int64_t unset = INT64_MIN;
  for (int i = 0; i < info->nparams; i++) lens[i] = unset;
  if (im->e.lens(args, n, lens)) {
    int bad = -1;
    for (int i = 0; i < info->nparams && lens[i] != unset; i++) bad = i;
    if (bad >= 0 && info->params[bad].len)
      return hk__fail(HK_EINVAL,
                      "%s: parameter '%s': its length, %s, is negative, "
                      "overflows int64, divides by zero or does not fit one "
                      "of its casts for these scalars (and n = %zu)",
                      info->name, info->params[bad].name,
                      info->params[bad].len, n);
    return hk__fail(HK_EINVAL,
                    "%s: a buffer length expression is negative or overflows "
                    "int64", info->name);
  }
  return HK_OK;
}

HK_API int hk_watch(hk_context_t *ctx, int on) {
  if (!ctx) return hk__fail(HK_EINVAL, "hk_watch: NULL context");
  if (!on) {
    hk__watch_stop(ctx);
    return HK_OK;
  }
  /* a new watch reloads once: what changed while none ran (a change seen
   * by a watch stopped before its quiet period ended) */
  return hk__watch_start(ctx, 1);
}
