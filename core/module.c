/* module.c — loading kernel files, prebuilt plugins and strings into the
 * registry: checks, compiles (tier jit), takes or builds tier opt, and
 * registers their kernels (see registry.h for the objects and locks).
 *
 * A kernel file's path through here:
 *   read + permission check -> parse and validate (codegen) -> generate C
 *   with a line map -> cache key = SHA-256(ABI, compiler identity, flags,
 *   CPU, prelude, C around the prelude) -> disk cache hit: dlopen, tier opt at once; else libtcc, tier
 *   jit, and the opt tier queued for the background worker, which builds,
 *   checks the object's imports, stores it in the cache, dlopens it and
 *   swaps each handle's implementation.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "elfcheck.h"
#include "fsutil.h"
#include "registry.h"
#include "sha256.h"
#include "symbols.h"

/* How long the system compiler may take for one kernel file. */
#define OPT_TIMEOUT_S 300

/* The exported symbols of a prebuilt plugin (hk build). */
#define SO_ABI_SYMBOL HK_ABI_PLUGIN_VERSION_SYMBOL
#define SO_DESC_SYMBOL HK_ABI_PLUGIN_DESC_SYMBOL

/* ---- Permissions -------------------------------------------------------- */

int hk__check_perms(hk_context_t *ctx, const char *path, hku_diags *d) {
  if (ctx->opts.flags & HK_ALLOW_UNSAFE_PERMISSIONS) return 0;
  struct stat st;
  if (stat(path, &st) != 0) {
    hku_diag_add(d, HKU_ERROR, path, 0, 0, "cannot read: %s", strerror(errno));
    return -1;
  }
  /* Whoever can write a plugin chooses the code this process runs. */
  if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    hku_diag_add(d, HKU_ERROR, path, 0, 0,
                 "refused: %s others can write to (mode %03o); run chmod "
                 "go-w on it, or allow unsafe permissions "
                 "(--allow-unsafe-plugins, HK_ALLOW_UNSAFE_PERMISSIONS)",
                 S_ISDIR(st.st_mode) ? "a folder" : "a file",
                 (unsigned)(st.st_mode & 0777));
    return -1;
  }
  if (st.st_uid != geteuid() && st.st_uid != 0) {
    hku_diag_add(d, HKU_ERROR, path, 0, 0,
                 "refused: owned by another user (uid %u); allow unsafe "
                 "permissions to load it anyway",
                 (unsigned)st.st_uid);
    return -1;
  }
  return 0;
}

/* ---- Small helpers ---------------------------------------------------------- */

/* Resolves an instance's entry points with sym (libtcc or dlsym). */
typedef void *(*resolve_fn)(void *owner, const char *name);

static void *resolve_tcc(void *owner, const char *name) {
  return hk__tcc_symbol(owner, name);
}

static void *resolve_dl(void *owner, const char *name) {
  return dlsym(owner, name);
}

/* Fills impl for instance in; returns the name of a missing symbol, or
 * NULL (the name is in a static buffer of this thread). */
static const char *resolve_impl(const hkc_instance *in, resolve_fn sym,
                                void *owner, hk_tier_t tier, hk_impl_t *impl) {
  static _Thread_local char missing[256];
  char name[256];
  memset(impl, 0, sizeof *impl);
  impl->tier = tier;
  impl->e.kind = in->k->kind;
  impl->e.flags = hkc_is_heavy(in->k) ? HK_ABI_HEAVY : 0;
  if (in->k->kind == HK_KIND_REDUCTION)
    impl->e.acc_size = (uint32_t)hk_dtype_size(hkc_acc_type(in));
  static const char *const prefixes[] = {"hk_range__", "hk_lens__",
                                         "hk_merge__"};
  for (int p = 0; p < 3; p++) {
    if (p == 2 && in->k->kind != HK_KIND_REDUCTION) break;
    snprintf(name, sizeof name, "%s%s", prefixes[p], in->name);
    void *addr = sym(owner, name);
    if (!addr) {
      snprintf(missing, sizeof missing, "%s", name);
      return missing;
    }
    /* the entry points are functions; the cast is how dlsym works */
    if (p == 0) *(void **)&impl->e.range = addr;
    if (p == 1) *(void **)&impl->e.lens = addr;
    if (p == 2) *(void **)&impl->e.merge = addr;
  }
  return NULL;
}

/* Resolves every CPU instance; 0, or -1 with an error in d. */
static int resolve_all(hk_module_t *m, resolve_fn sym, void *owner,
                       hk_tier_t tier, hk_impl_t *impls, hku_diags *d) {
  for (int i = 0; i < m->ninst; i++) {
    if (!(m->inst[i]->k->targets & HK_TARGET_CPU)) continue;
    const char *miss = resolve_impl(m->inst[i], sym, owner, tier, &impls[i]);
    if (miss) {
      hku_diag_add(d, HKU_ERROR, m->path, 0, 0,
                   "the compiled code does not define %s (for kernel \"%s\")",
                   miss, m->inst[i]->name);
      return -1;
    }
  }
  return 0;
}

static int has_cpu_code(const hk_module_t *m) {
  for (int i = 0; i < m->ninst; i++)
    if (m->inst[i]->k->targets & HK_TARGET_CPU) return 1;
  return 0;
}

static int allow_import(const char *sym, void *ctx) {
  (void)ctx;
  return hk__symbol_allowed(sym);
}

int hk__check_object(int fd, size_t size, char *why, size_t whylen) {
  char bad[256] = "", needed[512] = "", err[512] = "";
  int runs = 0;
  int rc = hk__elf_check_imports(fd, size, allow_import, NULL, bad, sizeof bad,
                                 &runs, needed, sizeof needed, err, sizeof err);
  if (rc < 0) {
    snprintf(why, whylen, "not a valid shared object: %s", err);
    return -1;
  }
  if (rc == 1) {
    snprintf(why, whylen,
             "the object imports '%s'; kernels may use only the math "
             "functions",
             bad);
    return -1;
  }
  if (runs) {
    snprintf(why, whylen, "the object runs code when it is loaded or "
                          "unloaded (constructors); hk refuses that");
    return -1;
  }
  if (needed[0]) {
    snprintf(why, whylen, "the object needs other libraries: %s", needed);
    return -1;
  }
  return 0;
}

/* ---- Loading objects through their fd ------------------------------------------
 *
 * An object is dlopened as "/proc/self/fd/N", so that what was checked
 * through fd N is what gets loaded. glibc knows loaded objects by that
 * name, and by file identity: a second dlopen of the same file (another
 * context loading the same cache entry) returns the first link map, still
 * named after the first fd. So fd N must stay open as long as anyone in
 * the process holds that object, or a later, different file opened as fd N
 * would be "found" loaded already and the wrong code run (two contexts on
 * one cache did this). The table below (documented global state) keeps
 * one fd per loaded file, with a count of its holders. */

typedef struct dl_entry {
  dev_t dev;
  ino_t ino;
  int fd;
  void *h;
  int refs;
  struct dl_entry *next;
} dl_entry;

static pthread_mutex_t dl_lock = PTHREAD_MUTEX_INITIALIZER;
static dl_entry *dl_loaded;

/* Loads the object open at fd, taking fd (kept open while the object is
 * loaded, or closed). Returns the handle, or NULL with the reason in why. */
static void *dl_open(int fd, char *why, size_t whylen) {
  struct stat st;
  if (fstat(fd, &st) != 0) {
    snprintf(why, whylen, "cannot load it: %s", strerror(errno));
    close(fd);
    return NULL;
  }
  pthread_mutex_lock(&dl_lock);
  for (dl_entry *e = dl_loaded; e; e = e->next)
    if (e->dev == st.st_dev && e->ino == st.st_ino) {
      e->refs++;
      pthread_mutex_unlock(&dl_lock);
      close(fd); /* the same file is loaded: its first fd stays */
      return e->h;
    }
  dl_entry *e = malloc(sizeof *e);
  char p[64];
  snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
  void *h = e ? dlopen(p, RTLD_NOW | RTLD_LOCAL) : NULL;
  if (!h) {
    pthread_mutex_unlock(&dl_lock);
    snprintf(why, whylen, "cannot load it: %s",
             e ? dlerror() : "out of memory");
    free(e);
    close(fd);
    return NULL;
  }
  *e = (dl_entry){st.st_dev, st.st_ino, fd, h, 1, dl_loaded};
  dl_loaded = e;
  pthread_mutex_unlock(&dl_lock);
  return h;
}

/* Drops one hold on h (from dl_open); the last one unloads it and closes
 * its fd. */
static void dl_close(void *h) {
  pthread_mutex_lock(&dl_lock);
  for (dl_entry **pp = &dl_loaded; *pp; pp = &(*pp)->next) {
    dl_entry *e = *pp;
    if (e->h != h) continue;
    if (--e->refs == 0) {
      *pp = e->next;
      dlclose(h);
      close(e->fd);
      free(e);
    }
    break;
  }
  pthread_mutex_unlock(&dl_lock);
}

/* ---- Cache keys ------------------------------------------------------------------ */

void hk__need_cc(hk_context_t *ctx) {
  if (ctx->cc_probed) return;
  hk__cc_probe(ctx->opts.cc, ctx->cache ? hk__cache_dir(ctx->cache) : NULL,
               &ctx->cc);
  ctx->cc_probed = 1;
}

/* A length-prefixed part of a cache key: no ambiguity between parts. */
static void key_part(hk_sha256_t *s, const char *p, size_t n) {
  uint64_t len = n;
  hk__sha256_update(s, &len, sizeof len);
  hk__sha256_update(s, p, n);
}

/* The prelude every plugin's generated C contains (made once). */
static pthread_once_t prelude_once = PTHREAD_ONCE_INIT;
static char *prelude; /* NULL when out of memory: keys then hash the C whole */
static size_t prelude_len;

static void make_prelude(void) {
  hku_buf b = HKU_BUF_INIT;
  hkc_emit_prelude(HKC_EMIT_PLUGIN, &b);
  size_t n = b.len;
  prelude = hku_buf_take(&b);
  prelude_len = prelude ? n : 0;
}

/* The hash state after the part of the key that all the kernels of a
 * compiler share: the ABI version, the compiler's identity, its flags, the
 * CPU, and the prelude. Hashing it once per process, not once per kernel,
 * halves the cost of a key (the prelude is most of a small kernel's C). */
static pthread_mutex_t key_memo_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
  char *id, *flags, *cpu; /* what the state was made from; NULL: none */
  hk_sha256_t s;
} key_memo; /* under key_memo_lock */

static int same_text(const char *a, const char *b) {
  return a && strcmp(a, b) == 0;
}

static void key_prefix(const char *id, const char *flags, const char *cpu,
                       hk_sha256_t *s) {
  pthread_mutex_lock(&key_memo_lock);
  if (same_text(key_memo.id, id) && same_text(key_memo.flags, flags) &&
      same_text(key_memo.cpu, cpu)) {
    *s = key_memo.s;
    pthread_mutex_unlock(&key_memo_lock);
    return;
  }
  char abi[64];
  hk__sha256_init(s);
  snprintf(abi, sizeof abi, "hk abi %u\n", HK_ABI_VERSION);
  hk__sha256_update(s, abi, strlen(abi));
  key_part(s, id, strlen(id));
  key_part(s, flags, strlen(flags));
  key_part(s, cpu, strlen(cpu));
  key_part(s, prelude ? prelude : "", prelude_len);
  free(key_memo.id);
  free(key_memo.flags);
  free(key_memo.cpu);
  key_memo.id = strdup(id);
  key_memo.flags = strdup(flags);
  key_memo.cpu = strdup(cpu);
  if (!key_memo.id || !key_memo.flags || !key_memo.cpu) {
    free(key_memo.id);
    free(key_memo.flags);
    free(key_memo.cpu);
    key_memo.id = key_memo.flags = key_memo.cpu = NULL;
  }
  key_memo.s = *s;
  pthread_mutex_unlock(&key_memo_lock);
}

/* The cache key of a module's generated C: SHA-256 of the shared prefix
 * above, then the C. Where the C holds the prelude (it always does), the
 * prelude is already hashed: the C goes in as the text before it and the
 * text after it, under a tag of its own; otherwise whole, under another.
 * Either way the key is a function of every byte of the C, and C that
 * differs gives different input. */
static void cache_key(const hk_context_t *ctx, const char *csrc,
                      uint8_t key[32]) {
  pthread_once(&prelude_once, make_prelude);
  hk_sha256_t s;
  key_prefix(ctx->cc.identity ? ctx->cc.identity : "", hk__cc_flags(HK_CC_OPT),
             ctx->cc.cpu ? ctx->cc.cpu : "", &s);
  size_t n = strlen(csrc);
  /* Find the prelude by its start, then check all of it. */
  const char *at = NULL;
  if (prelude_len >= 16) {
    const char *from = csrc;
    size_t left = n;
    while ((at = memmem(from, left, prelude, 16)) != NULL) {
      size_t off = (size_t)(at - csrc);
      if (n - off >= prelude_len && memcmp(at, prelude, prelude_len) == 0)
        break;
      from = at + 1;
      left = n - off - 1;
    }
  }
  if (at) {
    size_t off = (size_t)(at - csrc);
    hk__sha256_update(&s, "S", 1);
    key_part(&s, csrc, off);
    key_part(&s, at + prelude_len, n - off - prelude_len);
  } else {
    hk__sha256_update(&s, "W", 1);
    key_part(&s, csrc, n);
  }
  hk__sha256_final(&s, key);
}

static char *cache_meta(const hk_context_t *ctx, const hk_module_t *m) {
  hku_buf b = HKU_BUF_INIT;
  char when[64];
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
  hku_buf_printf(&b, "source: %s\nkernels:", m->path);
  for (int i = 0; i < m->ninst; i++)
    if (m->inst[i]->k->targets & HK_TARGET_CPU)
      hku_buf_printf(&b, " %s", m->inst[i]->name);
  const char *id = ctx->cc.identity ? ctx->cc.identity : "";
  const char *nl = strchr(id, '\n');
  hku_buf_printf(&b, "\ncompiler: %.*s\nbuilt: %s\n",
                 (int)(nl ? nl - id : (long)strlen(id)), id, when);
  return hku_buf_take(&b);
}

/* Takes tier opt from the disk cache; 0 on a hit. */
static int from_cache(hk_context_t *ctx, hk_module_t *m, hku_diags *d) {
  if (!ctx->cache) return -1;
  size_t size;
  int status;
  int fd = hk__cache_get(ctx->cache, m->key, &size, NULL, &status);
  if (fd < 0) {
    if (status == HK_CACHE_CORRUPT)
      hk__log(ctx, "%s: a damaged disk cache entry was removed; compiling "
                   "again", m->path);
    return -1;
  }
  char why[600];
  void *h = NULL;
  if (hk__check_object(fd, size, why, sizeof why) == 0)
    h = dl_open(fd, why, sizeof why);
  else
    close(fd);
  if (!h) {
    hk__log(ctx, "%s: the disk cache entry cannot be used (%s); compiling "
                 "again", m->path, why);
    return -1;
  }
  hku_diags quiet = HKU_DIAGS_INIT;
  if (resolve_all(m, resolve_dl, h, HK_TIER_OPT, m->impls, &quiet)) {
    hku_diags_free(&quiet);
    dl_close(h);
    return -1;
  }
  hku_diags_free(&quiet);
  (void)d;
  m->dl = h;
  atomic_store(&m->opt_state, HK__OPT_DONE);
  return 0;
}

/* ---- The opt tier ------------------------------------------------------------------ */

static void set_note(hk_context_t *ctx, hk_module_t *m, const char *note) {
  pthread_mutex_lock(&ctx->load_lock);
  free(m->opt_note);
  m->opt_note = note ? strdup(note) : NULL;
  pthread_mutex_unlock(&ctx->load_lock);
}

/* A private temporary folder for one build. */
static int make_workdir(const hk_context_t *ctx, char *dir, size_t n) {
  const char *base = ctx->cache ? hk__cache_dir(ctx->cache) : NULL;
  if (!base) base = getenv("TMPDIR");
  if (!base || !*base) base = "/tmp";
  snprintf(dir, n, "%s/.hk-build-XXXXXX", base);
  return mkdtemp(dir) ? 0 : -1;
}

int hk__opt_build(hk_context_t *ctx, hk_module_t *m) {
  atomic_store(&m->opt_state, HK__OPT_RUNNING);
  char dir[4096], src[4200], so[4200], why[5000];
  hku_buf msgs = HKU_BUF_INIT;
  void *h = NULL;
  int rc = -1;
  if (ctx->cc.why_not) {
    set_note(ctx, m, ctx->cc.why_not);
    goto out;
  }
  if (make_workdir(ctx, dir, sizeof dir)) {
    snprintf(why, sizeof why, "cannot create a build folder: %s",
             strerror(errno));
    set_note(ctx, m, why);
    goto out;
  }
  snprintf(src, sizeof src, "%s/kernel.c", dir);
  snprintf(so, sizeof so, "%s/kernel.so", dir);
  FILE *f = fopen(src, "wb");
  size_t n = strlen(m->csrc);
  if (!f || fwrite(m->csrc, 1, n, f) != n || fclose(f) != 0) {
    snprintf(why, sizeof why, "cannot write %s: %s", src, strerror(errno));
    set_note(ctx, m, why);
    goto clean;
  }
  if (hk__cc_build(&ctx->cc, HK_CC_OPT, src, so, &msgs, OPT_TIMEOUT_S,
                   &ctx->stopping)) {
    hku_diags d = HKU_DIAGS_INIT;
    hku_buf note = HKU_BUF_INIT;
    if (hkc_report_compiler_output(hku_buf_str(&msgs), &m->map, m->file,
                                   "cc", &d)) {
      hku_buf_put(&note, "the system compiler failed:\n");
      hku_diags_format(&d, &note);
    } else {
      hku_buf_printf(&note, "the system compiler failed: %s",
                     hku_buf_str(&msgs));
    }
    set_note(ctx, m, hku_buf_str(&note));
    hku_buf_free(&note);
    hku_diags_free(&d);
    goto clean;
  }
  int fd = open(so, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 ||
      hk__check_object(fd, (size_t)st.st_size, why, sizeof why)) {
    if (fd < 0) snprintf(why, sizeof why, "no object was built");
    set_note(ctx, m, why);
    if (fd >= 0) close(fd);
    goto clean;
  }
  close(fd);
  fd = -1;
  if (ctx->cache) {
    char *meta = cache_meta(ctx, m);
    char err[600];
    if (hk__cache_put(ctx->cache, m->key, so, meta, err, sizeof err))
      hk__log(ctx, "%s: cannot store in the disk cache: %s", m->path, err);
    free(meta);
    size_t size;
    int status;
    fd = hk__cache_get(ctx->cache, m->key, &size, NULL, &status);
    if (fd >= 0 && hk__check_object(fd, size, why, sizeof why) == 0)
      h = dl_open(fd, why, sizeof why);
    else if (fd >= 0)
      close(fd);
  }
  if (!h) { /* no cache, or it failed: load the built object itself */
    fd = open(so, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) h = dl_open(fd, why, sizeof why);
  }
  if (!h) {
    set_note(ctx, m, why);
    goto clean;
  }
  hku_diags d = HKU_DIAGS_INIT;
  if (resolve_all(m, resolve_dl, h, HK_TIER_OPT, m->opt_impls, &d)) {
    hku_buf note = HKU_BUF_INIT;
    hku_diags_first(&d, &note);
    set_note(ctx, m, hku_buf_str(&note));
    hku_buf_free(&note);
    hku_diags_free(&d);
    dl_close(h);
    goto clean;
  }
  hku_diags_free(&d);
  /* Publish: handles of this module switch to the optimized code. */
  pthread_mutex_lock(&ctx->load_lock);
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
  pthread_mutex_unlock(&ctx->load_lock);
  rc = 0;
clean:
  unlink(src);
  unlink(so);
  rmdir(dir);
out:
  if (rc) {
    atomic_store(&m->opt_state, HK__OPT_FAILED);
    if (!atomic_load(&ctx->stopping))
      hk__log(ctx, "%s: tier opt unavailable, staying on tier jit: %s",
              m->path, m->opt_note ? m->opt_note : "unknown reason");
  }
  hku_buf_free(&msgs);
  return rc;
}

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

void hk__opt_enqueue(hk_context_t *ctx, hk_module_t *m) {
  pthread_mutex_lock(&ctx->opt_lock);
  atomic_store(&m->opt_state, HK__OPT_QUEUED);
  m->next_job = NULL;
  if (ctx->opt_tail)
    ctx->opt_tail->next_job = m;
  else
    ctx->opt_head = m;
  ctx->opt_tail = m;
  if (!ctx->opt_started) {
    /* The worker starts with signals blocked: they belong to the app. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    if (pthread_create(&ctx->opt_thread, NULL, opt_worker, ctx) == 0)
      ctx->opt_started = 1;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (!ctx->opt_started) { /* no thread: the job cannot run */
      ctx->opt_head = ctx->opt_tail = NULL;
      atomic_store(&m->opt_state, HK__OPT_FAILED);
      free(m->opt_note);
      m->opt_note = strdup("cannot start the background compiler thread");
    }
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

/* ---- Loading ------------------------------------------------------------------------ */

static int flatten(hk_module_t *m, hku_diags *d) {
  int n = 0;
  for (int i = 0; i < m->file->nkernels; i++) n += m->file->kernels[i].ninst;
  m->ninst = n;
  m->inst = calloc((size_t)n + 1, sizeof *m->inst);
  m->infos = calloc((size_t)n + 1, sizeof *m->infos);
  m->kernels = calloc((size_t)n + 1, sizeof *m->kernels);
  m->impls = calloc((size_t)n + 1, sizeof *m->impls);
  m->opt_impls = calloc((size_t)n + 1, sizeof *m->opt_impls);
  if (!m->inst || !m->infos || !m->kernels || !m->impls || !m->opt_impls) {
    d->oom = 1;
    return -1;
  }
  const char *origin = m->kind == HK__SRC_SO ? "so" : "json";
  int j = 0;
  for (int i = 0; i < m->file->nkernels; i++)
    for (int k = 0; k < m->file->kernels[i].ninst; k++) {
      m->inst[j] = &m->file->kernels[i].inst[k];
      m->infos[j] = hkc_instance_info_new(m->inst[j], origin, m->path);
      if (!m->infos[j]) {
        d->oom = 1;
        return -1;
      }
      j++;
    }
  return 0;
}

/* Compiles the module's generated C with libtcc: tier jit. */
static int compile_jit(hk_module_t *m, hku_diags *d) {
  hku_buf msgs = HKU_BUF_INIT;
  m->tcc = hk__tcc_compile(m->csrc, &msgs);
  if (!m->tcc) {
    if (!hkc_report_compiler_output(hku_buf_str(&msgs), &m->map, m->file,
                                    "tcc", d))
      hku_diag_add(d, HKU_ERROR, m->path, 0, 0, "compiling failed: %s",
                   hku_buf_str(&msgs));
    hku_buf_free(&msgs);
    return -1;
  }
  hku_buf_free(&msgs);
  return resolve_all(m, resolve_tcc, m->tcc, HK_TIER_JIT, m->impls, d);
}

/* Returns 0, or the status code of the failure. */
static int load_json(hk_context_t *ctx, hk_module_t *m, const char *text,
                     size_t len, hku_diags *d) {
  if (hkc_file_parse(m->path, text, len, &m->file, d)) return HK_ESCHEMA;
  if (flatten(m, d)) return HK_ENOMEM;
  if (!has_cpu_code(m)) return 0;
  hku_buf src = HKU_BUF_INIT;
  if (hkc_emit_c_mapped(&m->file, 1, HKC_EMIT_PLUGIN, &src, &m->map)) {
    hku_buf_free(&src);
    d->oom = 1;
    return HK_ENOMEM;
  }
  m->csrc = hku_buf_take(&src);
  hk__need_cc(ctx);
  cache_key(ctx, m->csrc, m->key);
  hk_tier_t want = ctx->opts.tier;
  if (want != HK_TIER_JIT && from_cache(ctx, m, d) == 0) return 0;
  if (want == HK_TIER_OPT) {
    /* forced: wait for the optimizing compile, without the jit first */
    if (hk__opt_build(ctx, m)) {
      hku_diag_add(d, HKU_ERROR, m->path, 0, 0, "tier opt failed: %s",
                   m->opt_note ? m->opt_note : "unknown reason");
      return ctx->cc.why_not ? HK_EUNSUPPORTED : HK_ECOMPILE;
    }
    memcpy(m->impls, m->opt_impls, (size_t)m->ninst * sizeof *m->impls);
    return 0;
  }
  if (compile_jit(m, d)) return HK_ECOMPILE;
  if (want == HK_TIER_JIT) {
    atomic_store(&m->opt_state, HK__OPT_NONE);
  } else if (ctx->cc.why_not) {
    atomic_store(&m->opt_state, HK__OPT_FAILED);
    m->opt_note = strdup(ctx->cc.why_not);
  } else {
    atomic_store(&m->opt_state, HK__OPT_QUEUED); /* once registered */
  }
  return 0;
}

/* Returns 0, or the status code of the failure. */
/* A private copy of the plugin file in an anonymous memory file. The code
 * is mapped from the copy, not from the plugin file: a plugin rebuilt in
 * place (cp over it, same inode) would otherwise change the pages of code
 * that is running, and crash the process, before a reload could swap it.
 * Returns the memfd, or -1 with a diagnostic. */
static int private_copy(hk_module_t *m, struct stat *st, hku_diags *d) {
  size_t len;
  char *bytes;
  if (hku_read_file(m->path, &bytes, &len, st, d)) return -1;
  int fd = memfd_create("hk-plugin", MFD_CLOEXEC);
  int failed = fd < 0 || hku_write_all(fd, bytes, len) != HK_OK;
  free(bytes);
  if (failed) {
    hku_diag_add(d, HKU_ERROR, m->path, 0, 0, "cannot copy it to load it: %s",
                 strerror(errno));
    if (fd >= 0) close(fd);
    return -1;
  }
  return fd;
}

static int load_so(hk_context_t *ctx, hk_module_t *m, hku_diags *d) {
  (void)ctx;
  char why[1200];
  struct stat st;
  int fd = private_copy(m, &st, d);
  if (fd < 0) return d->oom ? HK_ENOMEM : HK_EIO;
  m->st = st;
  if (hk__check_object(fd, (size_t)st.st_size, why, sizeof why)) {
    close(fd);
    hku_diag_add(d, HKU_ERROR, m->path, 0, 0, "refused: %s", why);
    return HK_ESCHEMA;
  }
  if (!(m->dl = dl_open(fd, why, sizeof why))) {
    hku_diag_add(d, HKU_ERROR, m->path, 0, 0, "refused: %s", why);
    return HK_ESCHEMA;
  }
  const uint32_t *abi = dlsym(m->dl, SO_ABI_SYMBOL);
  const char *desc = dlsym(m->dl, SO_DESC_SYMBOL);
  if (!abi || !desc) {
    hku_diag_add(d, HKU_ERROR, m->path, 0, 0,
                 "not an hk plugin: it does not define %s and %s (make "
                 "plugins with hk build)",
                 SO_ABI_SYMBOL, SO_DESC_SYMBOL);
    return HK_ESCHEMA;
  }
  if (*abi != HK_ABI_VERSION) {
    hku_diag_add(d, HKU_ERROR, m->path, 0, 0,
                 "built for hk ABI %u, and this hk is ABI %u: build it again "
                 "with this hk (hk build)",
                 *abi, HK_ABI_VERSION);
    return HK_ESCHEMA;
  }
  hku_buf name = HKU_BUF_INIT;
  hku_buf_printf(&name, "%s(embedded description)", m->path);
  int rc = hkc_file_parse(hku_buf_str(&name), desc, strlen(desc), &m->file, d);
  hku_buf_free(&name);
  if (rc) return HK_ESCHEMA;
  if (flatten(m, d)) return HK_ENOMEM;
  if (resolve_all(m, resolve_dl, m->dl, HK_TIER_SO, m->impls, d))
    return HK_ESCHEMA;
  hk__sha256(desc, strlen(desc), m->digest);
  return 0;
}

hk_module_t *hk__module_load(hk_context_t *ctx, const char *path,
                             const char *text, size_t len, hk_src_kind kind,
                             hku_diags *d, int *code) {
  *code = HK_OK;
  hk_module_t *m = calloc(1, sizeof *m);
  if (!m || !(m->path = strdup(path))) {
    free(m);
    d->oom = 1;
    return NULL;
  }
  m->ctx = ctx;
  m->kind = kind;
  atomic_init(&m->opt_state, HK__OPT_NONE);
  int rc;
  if (kind == HK__SRC_SO) {
    rc = load_so(ctx, m, d);
  } else if (kind == HK__SRC_STRING) {
    hk__sha256(text, len, m->digest);
    rc = load_json(ctx, m, text, len, d);
  } else {
    char *buf;
    rc = hku_read_file(path, &buf, &len, &m->st, d);
    if (rc == HK_OK) {
      hk__sha256(buf, len, m->digest);
      rc = load_json(ctx, m, buf, len, d);
      free(buf);
    }
  }
  if (rc) {
    *code = d->oom ? HK_ENOMEM : rc;
    hk__module_free(m);
    return NULL;
  }
  return m;
}

void hk__module_free(hk_module_t *m) {
  if (!m) return;
  hk__cuda_module_free(m);
  if (m->dl) dl_close(m->dl);
  hk__tcc_free(m->tcc);
  for (int i = 0; i < m->ninst; i++) free(m->infos ? m->infos[i] : NULL);
  free(m->infos);
  free(m->inst);
  free(m->kernels);
  free(m->impls);
  free(m->opt_impls);
  free(m->csrc);
  hkc_linemap_free(&m->map);
  hkc_file_free(m->file);
  free(m->opt_note);
  free(m->path);
  free(m);
}

/* ---- Registration ---------------------------------------------------------------------- */

static int same_signature(const hk_kernel_info_t *a, const hk_kernel_info_t *b) {
  if (a->kind != b->kind || a->nparams != b->nparams) return 0;
  for (int i = 0; i < a->nparams; i++) {
    const hk_param_info_t *p = &a->params[i], *q = &b->params[i];
    if (p->dtype != q->dtype || p->role != q->role || strcmp(p->name, q->name))
      return 0;
    if ((p->len == NULL) != (q->len == NULL) ||
        (p->len && strcmp(p->len, q->len)))
      return 0;
  }
  return 1;
}

/* Where an instance's kernel is named in its file: "PATH:LINE:COL". */
static void where(const hk_module_t *m, const hkc_instance *in, char *buf,
                  size_t n) {
  const hkj_node *name = hkj_get(in->k->node, "name");
  int line = 0, col = 0;
  if (name) hkj_pos(m->file->doc, name->off, &line, &col);
  snprintf(buf, n, "%s:%d:%d", m->file->path, line, col);
}

static const hk_impl_t *impl_of(const hk_module_t *m, int i) {
  if (!(m->inst[i]->k->targets & HK_TARGET_CPU)) return NULL;
  if (atomic_load(&m->opt_state) == HK__OPT_DONE && m->opt_impls[i].e.range)
    return &m->opt_impls[i];
  return &m->impls[i];
}

int hk__module_register(hk_context_t *ctx, hk_module_t *mod, hk_module_t *old,
                        hku_diags *d) {
  pthread_rwlock_wrlock(&ctx->map_lock);
  int conflicts = 0;
  for (int i = 0; i < mod->ninst; i++) {
    hk_kernel_t *h = hk__map_get(&ctx->names, mod->inst[i]->name);
    if (!h || (old && h->mod == old)) continue;
    const hkj_node *nm = hkj_get(mod->inst[i]->k->node, "name");
    int line = 0, col = 0;
    if (nm) hkj_pos(mod->file->doc, nm->off, &line, &col);
    if (!h->mod) {
      hku_diag_add(d, HKU_ERROR, mod->file->path, line, col,
                   "%sname: \"%s\" is a stdlib kernel; a user kernel cannot "
                   "take its name",
                   mod->inst[i]->k->prefix, mod->inst[i]->name);
    } else {
      char other[4400] = "";
      for (int j = 0; j < h->mod->ninst; j++)
        if (!strcmp(h->mod->inst[j]->name, mod->inst[i]->name))
          where(h->mod, h->mod->inst[j], other, sizeof other);
      hku_diag_add(d, HKU_ERROR, mod->file->path, line, col,
                   "%sname: kernel \"%s\" is already defined in %s; this "
                   "file was not loaded",
                   mod->inst[i]->k->prefix, mod->inst[i]->name, other);
    }
    conflicts++;
  }
  if (conflicts) {
    pthread_rwlock_unlock(&ctx->map_lock);
    return -1;
  }
  /* Every allocation first, so that nothing is half registered. */
  hk_kernel_t **fresh = calloc((size_t)mod->ninst + 1, sizeof *fresh);
  int ok = fresh != NULL;
  for (int i = 0; ok && i < mod->ninst; i++) {
    hk_kernel_t *h = hk__map_get(&ctx->names, mod->inst[i]->name);
    if (old && h && h->mod == old &&
        same_signature(atomic_load(&h->info), mod->infos[i]))
      continue; /* reused */
    ok = (fresh[i] = calloc(1, sizeof **fresh)) != NULL;
  }
  /* puts below must not fail: room for every new handle now */
  if (ok) ok = hk__map_reserve(&ctx->names, (size_t)mod->ninst) == 0;
  if (!ok) {
    for (int i = 0; fresh && i < mod->ninst; i++) free(fresh[i]);
    free(fresh);
    pthread_rwlock_unlock(&ctx->map_lock);
    d->oom = 1;
    return -1;
  }
  for (int i = 0; i < mod->ninst; i++) {
    const hk_impl_t *impl = impl_of(mod, i);
    hk_kernel_t *h = fresh[i];
    if (!h) { /* same name, same parameters: the handle switches code */
      h = hk__map_get(&ctx->names, mod->inst[i]->name);
      atomic_store(&h->info, mod->infos[i]);
      h->mod = mod;
      atomic_store(&h->state, impl ? HK__LIVE : HK__NO_CPU);
      atomic_store_explicit(&h->impl, impl, memory_order_release);
      atomic_store_explicit(&h->cuda, NULL, memory_order_release);
    } else {
      hk_kernel_t *stale = hk__map_del(&ctx->names, mod->inst[i]->name);
      if (stale) { /* its parameters changed: old callers must look again */
        atomic_store(&stale->state, HK__STALE);
        atomic_store_explicit(&stale->impl, NULL, memory_order_release);
      }
      h->ctx = ctx;
      h->mod = mod;
      atomic_init(&h->info, mod->infos[i]);
      atomic_init(&h->state, impl ? HK__LIVE : HK__NO_CPU);
      atomic_init(&h->impl, impl);
      atomic_init(&h->cuda, NULL);
      h->next_all = ctx->all;
      ctx->all = h;
      hk__map_put(&ctx->names, h); /* cannot fail: the map has room */
    }
    mod->kernels[i] = h;
  }
  free(fresh);
  if (old) { /* old's kernels that mod does not define any more */
    for (int i = 0; i < old->ninst; i++) {
      hk_kernel_t *h = old->kernels[i];
      /* a stale handle's name already belongs to its successor */
      if (!h || h->mod != old || atomic_load(&h->state) == HK__STALE)
        continue;
      hk__map_del(&ctx->names, old->inst[i]->name);
      atomic_store(&h->state, HK__REMOVED);
      atomic_store_explicit(&h->impl, NULL, memory_order_release);
    }
  }
  pthread_rwlock_unlock(&ctx->map_lock);
  if (old) {
    hk_module_t **pp = &ctx->modules;
    while (*pp && *pp != old) pp = &(*pp)->next;
    if (*pp) *pp = old->next;
    old->live = 0;
    old->next = ctx->retired;
    ctx->retired = old;
  }
  mod->live = 1;
  mod->next = ctx->modules;
  ctx->modules = mod;
  if (atomic_load(&mod->opt_state) == HK__OPT_QUEUED) hk__opt_enqueue(ctx, mod);
  return 0;
}

void hk__module_unload(hk_context_t *ctx, hk_module_t *mod) {
  pthread_rwlock_wrlock(&ctx->map_lock);
  for (int i = 0; i < mod->ninst; i++) {
    hk_kernel_t *h = mod->kernels[i];
    if (!h || h->mod != mod) continue;
    hk__map_del(&ctx->names, mod->inst[i]->name);
    atomic_store(&h->state, HK__REMOVED);
    atomic_store_explicit(&h->impl, NULL, memory_order_release);
  }
  pthread_rwlock_unlock(&ctx->map_lock);
  hk_module_t **pp = &ctx->modules;
  while (*pp && *pp != mod) pp = &(*pp)->next;
  if (*pp) *pp = mod->next;
  mod->live = 0;
  mod->next = ctx->retired;
  ctx->retired = mod;
}
