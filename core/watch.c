/* watch.c — reloading plugin folders when their files change (inotify).
 *
 * One thread per watching context waits on inotify and on an eventfd that
 * stops it. Events about *.json and *.so files start a short quiet period
 * (editors write, rename and touch in bursts); when it passes, the thread
 * runs hk_reload and sends what happened to the context's log.
 *
 * A folder that is removed or renamed away (a deploy that replaces it:
 * rm -rf, mkdir, copy; or mv new old) takes its inotify watch with it. The
 * thread then reloads (its kernels go), and looks for the folder under its
 * name every RETRY_MS until it is there again, then watches and loads it;
 * so also for a folder that did not exist when the watch started. A
 * parent renamed or a symlink in the path switched sends the folder no
 * event: every CHECK_MS the thread checks each name still names the
 * folder it watches.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "registry.h"

/* How long the folders must stay quiet before a reload. */
#define QUIET_MS 100
/* How often a folder that is gone is looked for. */
#define RETRY_MS 200
/* How often each watched folder's name is checked to still be the folder
 * watched: a parent renamed, or a symlink switched (an atomic deploy:
 * ln -sfn new current.new && mv -T current.new current), sends the folder
 * no event. */
#define CHECK_MS 1000

struct hk_watch {
  pthread_t thread;
  hk_context_t *ctx;
  int ifd;  /* inotify */
  int stop; /* eventfd: the thread ends */
  int kick; /* eventfd: a folder added since cannot be watched */
  /* The watch descriptor of each of ctx->dirs (same index): -1 while the
   * folder cannot be watched (gone), -2 before the first try; under ctx's
   * load lock. */
  int *wd;
  int nwd;
  dev_t *dev; /* the folder watched under each name */
  ino_t *ino;
  int rescan; /* reload once at start (hk_watch: what changed meanwhile) */
  /* set when the thread itself stopped the watch (the log callback called
   * hk_watch(ctx, 0)): it cannot join itself, so it frees the watch as it
   * ends */
  _Atomic int detached;
};

/* The watcher thread's cancel flag (NULL on other threads). */
static _Thread_local const _Atomic int *tls_cancel;

const _Atomic int *hk__watch_cancel_flag(void) { return tls_cancel; }

static void watch_free(struct hk_watch *w) {
  if (w->ifd >= 0) close(w->ifd);
  if (w->stop >= 0) close(w->stop);
  if (w->kick >= 0) close(w->kick);
  free(w->wd);
  free(w->dev);
  free(w->ino);
  free(w);
}

/* The events that say a folder itself went away (its watch is then gone,
 * or, for a rename, follows it to where it is no longer looked for). */
#define GONE (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT)

/* IN_ATTRIB too: a file refused for its permissions (writable by others)
 * is loaded once they are fixed (chmod go-w, as the refusal says). */
static int watch_dir(struct hk_watch *w, const char *dir) {
  return inotify_add_watch(w->ifd, dir,
                           IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM |
                               IN_DELETE | IN_CREATE | IN_ATTRIB |
                               IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR);
}

/* Watches every remembered folder not watched yet (load lock held); a
 * folder that cannot be watched is looked for again later (the first
 * failure is logged). 1 when one that was gone came back, else 0. */
static int add_dirs(hk_context_t *ctx, struct hk_watch *w) {
  if (w->nwd < ctx->ndirs) {
    int *v = realloc(w->wd, (size_t)ctx->ndirs * sizeof *v);
    if (v) w->wd = v;
    dev_t *dv = v ? realloc(w->dev, (size_t)ctx->ndirs * sizeof *dv) : NULL;
    if (dv) w->dev = dv;
    ino_t *iv = dv ? realloc(w->ino, (size_t)ctx->ndirs * sizeof *iv) : NULL;
    if (iv) w->ino = iv;
    if (!iv) return 0; /* the new folders are watched on a later call */
    for (int i = w->nwd; i < ctx->ndirs; i++) v[i] = -2;
    w->nwd = ctx->ndirs;
  }
  int back = 0;
  for (int i = 0; i < ctx->ndirs; i++) {
    if (w->wd[i] >= 0) continue;
    struct stat st;
    int wd = stat(ctx->dirs[i], &st) == 0 ? watch_dir(w, ctx->dirs[i]) : -1;
    if (wd >= 0) {
      w->dev[i] = st.st_dev;
      w->ino[i] = st.st_ino;
    }
    if (wd >= 0 && w->wd[i] == -1) {
      hk__log(ctx, "%s: the folder is there again; loading it",
              ctx->dirs[i]);
      back = 1;
    } else if (wd < 0 && w->wd[i] == -2) {
      hk__log(ctx, "%s: cannot watch: %s; looking for it every %d ms",
              ctx->dirs[i], strerror(errno), RETRY_MS);
    }
    w->wd[i] = wd >= 0 ? wd : -1;
  }
  return back;
}

/* Forgets the watch wd of a folder that went away (load lock held); 1
 * when it was one of the folders' (then its kernels are to be reloaded). */
static int forget(hk_context_t *ctx, struct hk_watch *w, int wd,
                  uint32_t mask) {
  int hit = 0;
  for (int i = 0; i < w->nwd && i < ctx->ndirs; i++) {
    if (w->wd[i] != wd) continue;
    /* a renamed folder keeps its watch, under a name nobody looks for */
    if (mask & IN_MOVE_SELF) inotify_rm_watch(w->ifd, wd);
    w->wd[i] = -1;
    hk__log(ctx, "%s: the folder was %s; its kernels are unloaded, and it "
                 "is looked for every %d ms",
            ctx->dirs[i], mask & IN_MOVE_SELF ? "renamed" : "removed",
            RETRY_MS);
    hit = 1;
  }
  return hit;
}

/* Forgets the watch of each folder whose name now names another folder
 * or none (load lock held); 1 when there was one. */
static int check_names(hk_context_t *ctx, struct hk_watch *w) {
  int hit = 0;
  for (int i = 0; i < w->nwd && i < ctx->ndirs; i++) {
    struct stat st;
    if (w->wd[i] < 0 || (stat(ctx->dirs[i], &st) == 0 &&
                         st.st_dev == w->dev[i] && st.st_ino == w->ino[i]))
      continue;
    hit |= forget(ctx, w, w->wd[i], IN_MOVE_SELF);
  }
  return hit;
}

static int any_gone(const struct hk_watch *w) {
  for (int i = 0; i < w->nwd; i++)
    if (w->wd[i] < 0) return 1;
  return 0;
}

static int relevant(const struct inotify_event *e) {
  if (!e->len) return 0;
  size_t n = strlen(e->name);
  return (n > 5 && !strcmp(e->name + n - 5, ".json")) ||
         (n > 3 && !strcmp(e->name + n - 3, ".so"));
}

static long now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* The thread; arg is its watch (not ctx->watch, which hk__watch_stop
 * clears before the thread may even have started). */
static void *watcher(void *arg) {
  struct hk_watch *w = arg;
  hk_context_t *ctx = w->ctx;
  tls_cancel = &ctx->watch_cancel;
  long due = w->rescan ? now_ms() : -1; /* when to reload; -1: none */
  long retry = -1; /* when to look for folders that are gone; -1: none */
  long check = now_ms() + CHECK_MS; /* when to check the names */
  for (;;) {
    hk__load_lock(ctx);
    if (retry < 0 && any_gone(w)) retry = now_ms() + RETRY_MS;
    hk__load_unlock(ctx);
    struct pollfd p[3] = {
        {w->ifd, POLLIN, 0}, {w->stop, POLLIN, 0}, {w->kick, POLLIN, 0}};
    long next = due < 0 || (retry >= 0 && retry < due) ? retry : due;
    if (next < 0 || check < next) next = check;
    long left = next < 0 ? -1 : next - now_ms();
    int r = poll(p, 3, next < 0 ? -1 : left > 0 ? (int)left : 0);
    if (r < 0 && errno != EINTR) break;
    if (p[1].revents) break;
    if (p[2].revents) {
      uint64_t v;
      if (read(w->kick, &v, sizeof v) < 0) {
        /* another read took it: nothing to do */
      }
      continue;
    }
    if (r > 0 && (p[0].revents & POLLIN)) {
      _Alignas(struct inotify_event) char buf[8192];
      ssize_t n = read(w->ifd, buf, sizeof buf);
      for (char *q = buf; n > 0 && q < buf + n;) {
        const struct inotify_event *e = (const struct inotify_event *)q;
        if (relevant(e) || (e->mask & IN_Q_OVERFLOW)) due = now_ms() + QUIET_MS;
        if (e->mask & GONE) {
          hk__load_lock(ctx);
          if (forget(ctx, w, e->wd, e->mask)) {
            due = now_ms() + QUIET_MS;
            retry = now_ms() + RETRY_MS;
          }
          hk__load_unlock(ctx);
        }
        q += sizeof *e + e->len;
      }
      continue;
    }
    long t = now_ms();
    if (t >= check) {
      check = t + CHECK_MS;
      hk__load_lock(ctx);
      if (check_names(ctx, w)) retry = t; /* look under the name now */
      hk__load_unlock(ctx);
    }
    if (retry >= 0 && t >= retry) {
      hk__load_lock(ctx);
      if (add_dirs(ctx, w)) due = t + QUIET_MS;
      retry = any_gone(w) ? t + RETRY_MS : -1;
      hk__load_unlock(ctx);
    }
    if (due >= 0 && t >= due) {
      due = -1;
      /* a reload the stop cancelled is said by no log: the next reload
       * (hk_reload, or a watch started again) does it */
      if (hk_reload(ctx) != HK_OK && !atomic_load(&ctx->watch_cancel))
        hk__log(ctx, "reload found problems:\n%s", hk_last_error());
    }
  }
  if (atomic_load(&w->detached)) watch_free(w);
  return NULL;
}

int hk__watch_start(hk_context_t *ctx, int rescan) {
  hk__load_lock(ctx);
  if (ctx->watch) { /* already watching: pick up folders added since */
    add_dirs(ctx, ctx->watch);
    uint64_t one = 1;
    if (any_gone(ctx->watch) &&
        write(ctx->watch->kick, &one, sizeof one) < 0) {
      /* an eventfd write of one cannot fail; nothing to do */
    }
    hk__load_unlock(ctx);
    return HK_OK;
  }
  struct hk_watch *w = calloc(1, sizeof *w);
  int rc = HK_OK;
  if (!w) {
    rc = hk__fail(HK_ENOMEM, "out of memory");
    goto out;
  }
  w->ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  w->stop = eventfd(0, EFD_CLOEXEC);
  w->kick = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (w->ifd < 0 || w->stop < 0 || w->kick < 0) {
    rc = hk__fail(HK_EUNSUPPORTED, "cannot watch folders: %s",
                  strerror(errno));
    goto fail;
  }
  w->ctx = ctx;
  w->rescan = rescan;
  ctx->watch = w;
  add_dirs(ctx, w);
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  atomic_store(&ctx->watch_cancel, 0);
  int e = pthread_create(&w->thread, NULL, watcher, w);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (e) {
    ctx->watch = NULL;
    rc = hk__fail(HK_EINTERNAL, "cannot start the watcher thread: %s",
                  strerror(e));
    goto fail;
  }
  goto out;
fail:
  watch_free(w);
out:
  hk__load_unlock(ctx);
  return rc;
}

void hk__watch_stop(hk_context_t *ctx) {
  atomic_store(&ctx->watch_cancel, 1); /* before the lock a reload holds */
  hk__load_lock(ctx);
  struct hk_watch *w = ctx->watch;
  ctx->watch = NULL;
  hk__load_unlock(ctx);
  if (!w) return;
  uint64_t one = 1;
  int self = pthread_equal(pthread_self(), w->thread);
  if (self) { /* from the log callback, on the watcher thread */
    atomic_store(&w->detached, 1);
    pthread_detach(w->thread);
  }
  if (write(w->stop, &one, sizeof one) < 0) {
    /* an eventfd write cannot fail with a count of one; nothing to do */
  }
  if (self) return; /* it ends when the callback returns, and frees w */
  pthread_join(w->thread, NULL); /* the thread may be inside hk_reload */
  watch_free(w);
}
