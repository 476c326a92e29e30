/* dl.c — loading shared objects through the fd they were checked by: the
 * process-wide table of loaded objects, and private copies of plugins.
 *
 * An object is dlopened as "/proc/self/fd/N", so that what was checked
 * through fd N is what gets loaded. glibc knows loaded objects by that
 * name, and by file identity: a second dlopen of the same file (another
 * context loading the same cache entry) returns the first link map, still
 * named after the first fd. So fd N must stay open as long as anyone in
 * the process holds that object, or a later, different file opened as fd N
 * would be "found" loaded already and the wrong code run (two contexts on
 * one cache did this). The table below (documented global state) keeps
 * one fd per loaded file, with a count of its holders.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "build.h"
#include "fsutil.h"
#include "loader.h"

typedef struct dl_entry {
  dev_t dev;
  ino_t ino;
  int fd;
  void *h;
  int refs;
  struct dl_entry *next;
} dl_entry;

static pthread_mutex_t dl_lock = PTHREAD_MUTEX_INITIALIZER;
static dl_entry *dl_loaded; /* under dl_lock */

/* The entry of the file (dev, ino), or NULL. dl_lock held. */
static dl_entry *dl_find(dev_t dev, ino_t ino) {
  for (dl_entry *e = dl_loaded; e; e = e->next)
    if (e->dev == dev && e->ino == ino) return e;
  return NULL;
}

int hk__dl_open(int fd, const char *path, void **h, hku_diags *d) {
  *h = NULL;
  struct stat st;
  if (fstat(fd, &st) != 0) {
    hku_diag_add(d, HKU_ERROR, path, 0, 0, "cannot load it: %s",
                 strerror(errno));
    close(fd);
    return HK_EREFUSED;
  }
  pthread_mutex_lock(&dl_lock);
  dl_entry *e = dl_find(st.st_dev, st.st_ino);
  if (e) {
    e->refs++;
    *h = e->h;
    pthread_mutex_unlock(&dl_lock);
    close(fd); /* the same file is loaded: its first fd stays */
    return HK_OK;
  }
  e = malloc(sizeof *e);
  char p[64];
  snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
  void *dl = e ? dlopen(p, RTLD_NOW | RTLD_LOCAL) : NULL;
  if (!dl) {
    pthread_mutex_unlock(&dl_lock);
    hku_diag_add(d, HKU_ERROR, path, 0, 0, "cannot load it: %s",
                 e ? dlerror() : "out of memory");
    free(e);
    close(fd);
    return HK_EREFUSED;
  }
  *e = (dl_entry){st.st_dev, st.st_ino, fd, dl, 1, dl_loaded};
  dl_loaded = e;
  pthread_mutex_unlock(&dl_lock);
  *h = dl;
  return HK_OK;
}

int hk__dl_hold(int fd, void **h) {
  struct stat st;
  if (fstat(fd, &st) != 0) return 0;
  pthread_mutex_lock(&dl_lock);
  dl_entry *e = dl_find(st.st_dev, st.st_ino);
  if (e) {
    e->refs++;
    *h = e->h;
  }
  pthread_mutex_unlock(&dl_lock);
  if (e) close(fd);
  return e != NULL;
}

void hk__dl_close(void *h) {
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

int hk__private_copy(const char *path, struct stat *st, int *fd,
                     hku_diags *d) {
  size_t len;
  char *bytes;
  int rc = hku_read_file(path, &bytes, &len, st, d);
  if (rc) return rc;
  rc = hk__memfd(bytes, len, path, "cannot copy it to load it", fd, d);
  free(bytes);
  return rc;
}
