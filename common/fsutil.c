/* fsutil.c — files and folders for every layer (see fsutil.h). */
#include "fsutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hk.h"

int hku_ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a > b && !strcmp(s + a - b, suffix);
}

size_t hku_edit_distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  if (la > 63 || lb > 63) return 99;
  size_t row[64];
  for (size_t j = 0; j <= lb; j++) row[j] = j;
  for (size_t i = 1; i <= la; i++) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= lb; j++) {
      size_t up = row[j], best = diag + (a[i - 1] != b[j - 1]);
      if (up + 1 < best) best = up + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      row[j] = best;
      diag = up;
    }
  }
  return row[lb];
}

int hku_write_all(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n > 0) {
    size_t chunk = n > (1u << 30) ? (1u << 30) : n;
    ssize_t w = write(fd, c, chunk);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      if (w == 0) errno = EIO;
      return HK_EIO;
    }
    c += w;
    n -= (size_t)w;
  }
  return HK_OK;
}

int hku_pread_all(int fd, void *p, size_t n, uint64_t off) {
  uint8_t *c = p;
  while (n) {
    ssize_t r = pread(fd, c, n, (off_t)off);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      if (r == 0) errno = EIO;
      return HK_EIO;
    }
    c += r;
    off += (uint64_t)r;
    n -= (size_t)r;
  }
  return HK_OK;
}

int hku_read_file(const char *path, char **out, size_t *len, struct stat *st,
                  hku_diags *d) {
  struct stat own;
  if (!st) st = &own;
  *out = NULL;
  /* O_NONBLOCK: a FIFO (or a device) named like a kernel file would
   * block open() until a writer came; so opened, it is refused below.
   * Reads of a regular file ignore the flag. */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    hku_diag_add(d, HKU_ERROR, path, 0, 0, "cannot read: %s", strerror(errno));
    return HK_EIO;
  }
  if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
    hku_diag_add(d, HKU_ERROR, path, 0, 0, "cannot read: not a regular file");
    close(fd);
    return HK_EIO;
  }
  size_t n = (size_t)st->st_size;
  char *buf = malloc(n + 1);
  if (!buf) {
    close(fd);
    hku_diag_add(d, HKU_ERROR, path, 0, 0, "cannot read: out of memory");
    return HK_ENOMEM;
  }
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, buf + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += (size_t)r;
  }
  int er = errno;
  close(fd);
  if (got != n) {
    free(buf);
    hku_diag_add(d, HKU_ERROR, path, 0, 0, "cannot read: %s",
                 got < n && er ? strerror(er)
                               : "the file changed while it was read");
    return HK_EIO;
  }
  buf[n] = '\0';
  *out = buf;
  *len = n;
  return HK_OK;
}

/* Creates a new, empty file next to path (same folder, so that rename()
 * over path is atomic), named ".BASE.tmp-XXXXXXXX" and opened O_EXCL so
 * that it is ours alone. Returns its fd and sets *tmpname (malloc'ed), or
 * -1 with errno set. It is created with mode (less the umask). The random
 * part needs no global state: pid, clock and a stack address. */
static int open_temp(const char *path, unsigned mode, char **tmpname) {
  const char *slash = strrchr(path, '/');
  size_t dirlen = slash ? (size_t)(slash - path) + 1 : 0;
  const char *base = path + dirlen;
  if (!*base) {
    errno = EISDIR;
    return -1;
  }
  size_t cap = dirlen + 240;
  char *name = malloc(cap);
  if (!name) return -1;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t seed = (uint64_t)getpid() * 0x9e3779b97f4a7c15u ^
                  (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^
                  (uint64_t)(uintptr_t)&ts;
  for (int attempt = 0; attempt < 100; attempt++) {
    seed = seed * 6364136223846793005u + 1442695040888963407u;
    /* base is cut to 200 bytes so that the name stays within NAME_MAX */
    snprintf(name, cap, "%.*s.%.200s.tmp-%08x", (int)dirlen, path, base,
             (unsigned)(seed >> 32));
    int fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
                  (mode_t)mode);
    if (fd >= 0) {
      *tmpname = name;
      return fd;
    }
    if (errno != EEXIST) break;
  }
  free(name);
  return -1;
}

/* Writes the parts into a new file beside target (open_temp), with mode
 * or (HKU_KEEP_MODE) target's permissions; *tmp its name. HK_OK, or an
 * error said in d about shown, nothing left behind. */
static int write_beside(const char *shown, const char *target,
                        const hku_part *parts, int nparts, unsigned mode,
                        char **tmp, hku_diags *d) {
  struct stat st;
  int keep = mode == HKU_KEEP_MODE && stat(target, &st) == 0 &&
             S_ISREG(st.st_mode);
  *tmp = NULL;
  int fd = open_temp(target, mode == HKU_KEEP_MODE ? 0666u : mode, tmp);
  if (fd < 0) {
    int er = errno;
    if (er == EISDIR)
      hku_diag_add(d, HKU_ERROR, shown, 0, 0,
                   "cannot write: not a file name (it ends with '/')");
    else
      hku_diag_add(d, HKU_ERROR, shown, 0, 0,
                   "cannot write: cannot create a file next to it: %s",
                   strerror(er));
    return er == ENOMEM ? HK_ENOMEM : HK_EIO;
  }
  /* Replacing a file keeps its permissions, as writing in place would. */
  int failed = keep && fchmod(fd, st.st_mode & 07777) != 0;
  for (int i = 0; i < nparts && !failed; i++)
    failed = hku_write_all(fd, parts[i].p, parts[i].n) != HK_OK;
  int er = errno;
  if (close(fd) != 0 && !failed) {
    failed = 1;
    er = errno;
  }
  if (failed) {
    unlink(*tmp);
    free(*tmp);
    *tmp = NULL;
    hku_diag_add(d, HKU_ERROR, shown, 0, 0,
                 "cannot write: %s (nothing was changed)", strerror(er));
    return HK_EIO;
  }
  return HK_OK;
}

/* Renames tmp over target (freed either way; removed on failure). */
static int rename_over(char *tmp, const char *target, hku_diags *d) {
  int rc = HK_OK;
  if (rename(tmp, target) != 0) {
    int er = errno;
    unlink(tmp);
    hku_diag_add(d, HKU_ERROR, target, 0, 0,
                 "cannot write: %s (nothing was changed)", strerror(er));
    rc = HK_EIO;
  }
  free(tmp);
  return rc;
}

int hku_write_parts_atomic(const char *path, const hku_part *parts,
                           int nparts, unsigned mode, hku_diags *d) {
  char *tmp;
  int rc = write_beside(path, path, parts, nparts, mode, &tmp, d);
  return rc ? rc : rename_over(tmp, path, d);
}

/* ---- Output files the user named ---------------------------------------- */

char *hku_follow_links(const char *path) {
  char *cur = strdup(path);
  for (int hops = 0; cur && hops <= 40; hops++) {
    struct stat st;
    if (lstat(cur, &st) != 0 || !S_ISLNK(st.st_mode)) return cur;
    char link[4096];
    ssize_t n = readlink(cur, link, sizeof link - 1);
    if (n < 0 || (size_t)n >= sizeof link - 1) {
      if (n >= 0) errno = ENAMETOOLONG;
      free(cur);
      return NULL;
    }
    link[n] = '\0';
    char *next;
    const char *slash = strrchr(cur, '/');
    if (link[0] == '/' || !slash) {
      next = strdup(link);
    } else { /* relative to the link's folder */
      size_t dl = (size_t)(slash - cur) + 1;
      next = malloc(dl + (size_t)n + 1);
      if (next) {
        memcpy(next, cur, dl);
        memcpy(next + dl, link, (size_t)n + 1);
      }
    }
    free(cur);
    cur = next;
  }
  if (cur) {
    free(cur);
    errno = ELOOP;
  }
  return NULL;
}

void hku_output_abort(hku_pending *p) {
  if (p->tmp) unlink(p->tmp);
  free(p->tmp);
  free(p->path);
  p->tmp = p->path = NULL;
}

int hku_output_prepare(const char *path, const hku_part *parts, int nparts,
                       unsigned mode, hku_pending *p, hku_diags *d) {
  p->tmp = p->path = NULL;
  struct stat st;
  if (stat(path, &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      hku_diag_add(d, HKU_ERROR, path, 0, 0,
                   "cannot write: it is a folder (nothing was changed)");
      return HK_EIO;
    }
    if (!S_ISREG(st.st_mode)) {
      /* a device, a FIFO or a socket (/dev/stdout, a pipe): written in
       * place, as a shell redirection would; it cannot be replaced */
      int fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
      int failed = fd < 0;
      for (int i = 0; i < nparts && !failed; i++)
        failed = hku_write_all(fd, parts[i].p, parts[i].n) != HK_OK;
      int er = errno;
      if (fd >= 0 && close(fd) != 0 && !failed) {
        failed = 1;
        er = errno;
      }
      if (!failed) return HK_OK;
      hku_diag_add(d, HKU_ERROR, path, 0, 0, "cannot write: %s",
                   strerror(er));
      return HK_EIO;
    }
    /* a file the caller may not write is not replaced either: the rename
     * below needs only the folder's permission, so a 0444 file, or root's
     * 0644 one in a folder the caller may write, would be swapped for a
     * new one where `echo > FILE` is refused */
    if (access(path, W_OK) != 0) {
      int er = errno;
      hku_diag_add(d, HKU_ERROR, path, 0, 0, "cannot write: %s (nothing was "
                   "changed)", strerror(er));
      return HK_EIO;
    }
  }
  /* a regular file, none yet, maybe through links (to none: it is
   * created): the file itself is replaced */
  char *real = hku_follow_links(path);
  if (!real) {
    int er = errno;
    hku_diag_add(d, HKU_ERROR, path, 0, 0, "cannot write: %s (nothing was "
                 "changed)", strerror(er));
    return er == ENOMEM ? HK_ENOMEM : HK_EIO;
  }
  int rc = write_beside(path, real, parts, nparts, mode, &p->tmp, d);
  if (rc) {
    free(real);
    return rc;
  }
  p->path = real;
  return HK_OK;
}

int hku_output_commit(hku_pending *p, hku_diags *d) {
  if (!p->tmp) return HK_OK; /* written in place already */
  int rc = rename_over(p->tmp, p->path, d);
  p->tmp = NULL;
  hku_output_abort(p);
  return rc;
}

int hku_write_output(const char *path, const hku_part *parts, int nparts,
                     unsigned mode, hku_diags *d) {
  hku_pending p;
  int rc = hku_output_prepare(path, parts, nparts, mode, &p, d);
  return rc ? rc : hku_output_commit(&p, d);
}

int hku_write_file_atomic(const char *path, const void *data, size_t n,
                          unsigned mode, hku_diags *d) {
  hku_part one = {data, n};
  return hku_write_parts_atomic(path, &one, 1, mode, d);
}

int hku_copy_file_atomic(const char *src, const char *path, unsigned mode,
                         hku_diags *d) {
  char *bytes;
  size_t n;
  int rc = hku_read_file(src, &bytes, &n, NULL, d);
  if (rc) return rc;
  rc = hku_write_file_atomic(path, bytes, n, mode, d);
  free(bytes);
  return rc;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int wanted(const char *name, const char *const *suffixes) {
  if (name[0] == '.') return 0;
  for (; *suffixes; suffixes++)
    if (hku_ends_with(name, *suffixes)) return 1;
  return 0;
}

int hku_list_dir(const char *dir, const char *const *suffixes, char ***out) {
  *out = NULL;
  DIR *dp = opendir(dir);
  if (!dp) return HK_EIO;
  int n = 0, cap = 0;
  char **v = NULL;
  const char *sep = hku_ends_with(dir, "/") || !*dir ? "" : "/";
  struct dirent *e;
  while ((e = readdir(dp))) {
    if (!wanted(e->d_name, suffixes)) continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 16;
      char **nv = realloc(v, (size_t)cap * sizeof *v);
      if (!nv) goto oom;
      v = nv;
    }
    size_t len = strlen(dir) + strlen(e->d_name) + 2;
    if (!(v[n] = malloc(len))) goto oom;
    snprintf(v[n], len, "%s%s%s", dir, sep, e->d_name);
    n++;
  }
  closedir(dp);
  if (n) qsort(v, (size_t)n, sizeof *v, cmp_str);
  *out = v;
  return n;
oom:
  closedir(dp);
  hku_free_list(v, n);
  errno = ENOMEM;
  return HK_ENOMEM;
}

void hku_free_list(char **v, int n) {
  for (int i = 0; i < n; i++) free(v[i]);
  free(v);
}

void hku_remove_flat_dir(int dirfd, const char *name) {
  int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  DIR *d = fdopendir(fd);
  if (!d) {
    close(fd);
    return;
  }
  struct dirent *de;
  while ((de = readdir(d)) != NULL)
    if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
      (void)unlinkat(fd, de->d_name, 0); /* files only: flags 0 */
  closedir(d);
  (void)unlinkat(dirfd, name, AT_REMOVEDIR);
}
