/* watch.c — reloading plugin folders when their files change (inotify).
 *
 * One thread per watching context waits on inotify and on an eventfd that
 * stops it. Events about *.json and *.so files start a short quiet period
 * (editors write, rename and touch in bursts); when it passes, the thread
 * runs hk_reload and sends what happened to the context's log.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>

#include "registry.h"

/* How long the folders must stay quiet before a reload. */
#define QUIET_MS 100

struct hk_watch {
  pthread_t thread;
  hk_context_t *ctx;
  int ifd;  /* inotify */
  int stop; /* eventfd */
};

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
  long due = -1; /* when to reload; -1: nothing pending */
  for (;;) {
    struct pollfd p[2] = {{w->ifd, POLLIN, 0}, {w->stop, POLLIN, 0}};
    int timeout = due < 0 ? -1 : (int)(due - now_ms() > 0 ? due - now_ms() : 0);
    int r = poll(p, 2, timeout);
    if (r < 0 && errno != EINTR) break;
    if (p[1].revents) break;
    if (r > 0 && (p[0].revents & POLLIN)) {
      _Alignas(struct inotify_event) char buf[8192];
      ssize_t n = read(w->ifd, buf, sizeof buf);
      for (char *q = buf; n > 0 && q < buf + n;) {
        const struct inotify_event *e = (const struct inotify_event *)q;
        if (relevant(e) || (e->mask & IN_Q_OVERFLOW)) due = now_ms() + QUIET_MS;
        q += sizeof *e + e->len;
      }
      continue;
    }
    if (due >= 0 && now_ms() >= due) {
      due = -1;
      if (hk_reload(ctx) != HK_OK)
        hk__log(ctx, "reload found problems:\n%s", hk_last_error());
    }
  }
  return NULL;
}

/* Adds every remembered folder to the watch (again is harmless). */
static void add_dirs(hk_context_t *ctx) {
  for (int i = 0; i < ctx->ndirs; i++)
    if (inotify_add_watch(ctx->watch->ifd, ctx->dirs[i],
                          IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM |
                              IN_DELETE | IN_CREATE | IN_ONLYDIR) < 0)
      hk__log(ctx, "%s: cannot watch: %s", ctx->dirs[i], strerror(errno));
}

int hk__watch_start(hk_context_t *ctx) {
  hk__load_lock(ctx);
  if (ctx->watch) { /* already watching: pick up folders added since */
    add_dirs(ctx);
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
  if (w->ifd < 0 || w->stop < 0) {
    rc = hk__fail(HK_EUNSUPPORTED, "cannot watch folders: %s",
                  strerror(errno));
    goto fail;
  }
  w->ctx = ctx;
  ctx->watch = w;
  add_dirs(ctx);
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
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
  if (w->ifd >= 0) close(w->ifd);
  if (w->stop >= 0) close(w->stop);
  free(w);
out:
  hk__load_unlock(ctx);
  return rc;
}

void hk__watch_stop(hk_context_t *ctx) {
  hk__load_lock(ctx);
  struct hk_watch *w = ctx->watch;
  ctx->watch = NULL;
  hk__load_unlock(ctx);
  if (!w) return;
  uint64_t one = 1;
  if (write(w->stop, &one, sizeof one) < 0) {
    /* an eventfd write cannot fail with a count of one; nothing to do */
  }
  pthread_join(w->thread, NULL); /* the thread may be inside hk_reload */
  close(w->ifd);
  close(w->stop);
  free(w);
}
