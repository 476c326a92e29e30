/* cache.c — the disk cache of compiled kernels (format and rules in
 * cache.h).
 *
 * Safety rests on three things. The directory is ours alone (0700, our
 * uid), checked once at open and then reached only through the descriptor
 * opened there, so renaming or replacing the path later changes nothing.
 * Entries are published by rename of a complete, fsynced temp file, so a
 * reader never sees a partial entry and a published file never changes.
 * And a reader verifies the digest through the very descriptor it hands
 * out, so what is loaded is what was verified.
 */
#include "cache.h"
#include "fsutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sha256.h"

struct hk_cache {
  char *dir;        /* as resolved, for messages and list paths */
  int dfd;          /* the directory, O_DIRECTORY */
  atomic_int swept; /* the first put removed old temp files */
};

/* Bytes read or written per system call when streaming an entry. */
#define CHUNK 65536

/* Says fmt about the cache (path) in d; returns code. */
__attribute__((format(printf, 4, 5))) static int fail(hku_diags *d, int code,
                                                      const char *path,
                                                      const char *fmt, ...) {
  char msg[4400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  hku_diag_add(d, HKU_ERROR, path ? path : "disk cache", 0, 0, "%s", msg);
  return code;
}

static void put_le64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

/* --- the directory ------------------------------------------------------ */

/* malloc'ed a + b. */
static char *concat(const char *a, const char *b) {
  size_t na = strlen(a), nb = strlen(b);
  char *s = malloc(na + nb + 1);
  if (s) {
    memcpy(s, a, na);
    memcpy(s + na, b, nb + 1);
  }
  return s;
}

/* The default directory by the rules in cache.h: HK_OK and *out
 * (malloc'ed), or HK_EIO / HK_ENOMEM said in d. */
int hk__cache_default_dir(char **out, hku_diags *d) {
  const char *v = getenv("HK_CACHE_DIR");
  if (v && *v) {
    *out = concat(v, "");
  } else if ((v = getenv("XDG_CACHE_HOME")) && *v == '/') {
    *out = concat(v, "/hk");
  } else {
    v = getenv("HOME");
    if (!v || !*v) {
      struct passwd *pw = getpwuid(getuid());
      v = pw && pw->pw_dir && *pw->pw_dir ? pw->pw_dir : NULL;
    }
    if (!v)
      return fail(d, HK_EIO, NULL,
                  "no cache directory: HK_CACHE_DIR, XDG_CACHE_HOME and HOME "
                  "are unset and the user has no home directory");
    *out = concat(v, "/.cache/hk");
  }
  return *out ? HK_OK : fail(d, HK_ENOMEM, NULL, "out of memory");
}

/* mkdir -p with mode 0700 for every directory it creates; *created says
 * whether the last one was made here. */
static int make_dirs(char *path, int *created, hku_diags *d) {
  *created = 0;
  for (char *p = path + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    int r = mkdir(path, 0700);
    int e = errno;
    *p = '/';
    if (r != 0 && e != EEXIST) {
      *p = '\0';
      fail(d, HK_EIO, path, "cannot create cache directory %s: %s", path,
           strerror(e));
      *p = '/';
      return HK_EIO;
    }
  }
  if (mkdir(path, 0700) == 0) {
    *created = 1;
  } else if (errno != EEXIST) {
    return fail(d, HK_EIO, path, "cannot create cache directory %s: %s", path,
                strerror(errno));
  }
  return HK_OK;
}

/* Opens path (made 0700 when created here) and checks that it is ours
 * alone unless allow_unsafe. HK_OK and *dfd, or the failure said in d. */
static int open_dir(const char *path, int created, int allow_unsafe, int *dfd,
                    hku_diags *d) {
  *dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (*dfd < 0)
    return fail(d, HK_EIO, path, "cannot open cache directory %s: %s", path,
                strerror(errno));
  /* The umask may have taken bits off: make a new directory exactly 0700. */
  if (created) (void)fchmod(*dfd, 0700);
  struct stat st;
  int rc = HK_OK;
  if (fstat(*dfd, &st) != 0)
    rc = fail(d, HK_EIO, path, "cannot stat cache directory %s: %s", path,
              strerror(errno));
  else if (!allow_unsafe && st.st_uid != geteuid() && st.st_uid != 0)
    rc = fail(d, HK_EREFUSED, path,
              "cache directory %s is owned by another user (uid %u); refusing "
              "to load code from it",
              path, (unsigned)st.st_uid);
  else if (!allow_unsafe && (st.st_mode & (S_IWGRP | S_IWOTH)))
    rc = fail(d, HK_EREFUSED, path,
              "cache directory %s is writable by group or others (mode "
              "%03o); refusing to load code from it (chmod 700 it)",
              path, (unsigned)(st.st_mode & 0777));
  if (rc) {
    close(*dfd);
    *dfd = -1;
  }
  return rc;
}

HK_INTERNAL int hk__cache_open(const char *dir, int allow_unsafe,
                               hk_cache_t **out, hku_diags *d) {
  *out = NULL;
  char *path = NULL;
  int rc = HK_OK;
  if (dir && *dir)
    rc = (path = concat(dir, "")) ? HK_OK
                                  : fail(d, HK_ENOMEM, NULL, "out of memory");
  else
    rc = hk__cache_default_dir(&path, d);
  if (rc) return rc;
  /* Trailing slashes would make the last mkdir look like a parent's. */
  for (size_t n = strlen(path); n > 1 && path[n - 1] == '/'; n--)
    path[n - 1] = '\0';
  int created = 0, dfd = -1;
  hk_cache_t *c = NULL;
  if ((rc = make_dirs(path, &created, d)) == HK_OK &&
      (rc = open_dir(path, created, allow_unsafe, &dfd, d)) == HK_OK &&
      !(c = malloc(sizeof *c))) {
    close(dfd);
    rc = fail(d, HK_ENOMEM, NULL, "out of memory");
  }
  if (rc) {
    free(path);
    return rc;
  }
  c->dir = path;
  c->dfd = dfd;
  atomic_init(&c->swept, 0);
  *out = c;
  return HK_OK;
}

HK_INTERNAL void hk__cache_close(hk_cache_t *c) {
  if (!c) return;
  close(c->dfd);
  free(c->dir);
  free(c);
}

HK_INTERNAL const char *hk__cache_dir(const hk_cache_t *c) { return c->dir; }

/* --- names ---------------------------------------------------------------- */

static void entry_name(const uint8_t key[32], char name[68]) {
  hk__hex(key, 32, name);
  memcpy(name + 64, ".so", 4);
}

static int is_lower_hex(char ch) {
  return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f');
}

/* The key an entry name (is_entry_name) stands for. */
static void key_of_name(const char *s, uint8_t key[32]) {
  for (int i = 0; i < 32; i++) {
    int v = 0;
    for (int j = 0; j < 2; j++) {
      char ch = s[2 * i + j];
      v = v * 16 + (ch <= '9' ? ch - '0' : ch - 'a' + 10);
    }
    key[i] = (uint8_t)v;
  }
}

/* <64 lowercase hex>.so, exactly as entry_name writes it. */
static int is_entry_name(const char *s) {
  for (int i = 0; i < 64; i++)
    if (!is_lower_hex(s[i])) return 0;
  return strcmp(s + 64, ".so") == 0;
}

/* <64 lowercase hex>.fail: a remembered failure. */
static int is_fail_name(const char *s) {
  for (int i = 0; i < 64; i++)
    if (!is_lower_hex(s[i])) return 0;
  return strcmp(s + 64, ".fail") == 0;
}

/* .hk-<decimal pid>-<16 hex>.tmp, exactly as put writes it. */
static int is_temp_name(const char *s) {
  if (strncmp(s, ".hk-", 4) != 0) return 0;
  s += 4;
  int digits = 0;
  for (; *s >= '0' && *s <= '9'; s++) digits++;
  if (digits == 0 || digits > 10 || *s++ != '-') return 0;
  for (int i = 0; i < 16; i++)
    if (!is_lower_hex(*s++)) return 0;
  return strcmp(s, ".tmp") == 0;
}

/* --- reading ----------------------------------------------------------------
 */

/* The layout an entry's trailer describes. */
typedef struct {
  uint64_t esz, msz, nkeys; /* sizes of the ELF and the meta; keys */
  uint64_t keys_at;         /* offset of the keys */
} layout_t;

/* Reads and checks the trailer of the entry open at fd (fsize bytes): the
 * magic, and sizes that add up to the file. HK_OK and *l, or HK_EIO. */
static int read_trailer(int fd, uint64_t fsize, uint8_t tr[HK_CACHE_TRAILER],
                        layout_t *l) {
  if (fsize < HK_CACHE_TRAILER ||
      hku_pread_all(fd, tr, HK_CACHE_TRAILER, fsize - HK_CACHE_TRAILER) != 0)
    return HK_EIO;
  if (memcmp(tr, HK_CACHE_MAGIC, 8) != 0) return HK_EIO;
  l->esz = get_le64(tr + 8);
  l->msz = get_le64(tr + 16);
  l->nkeys = get_le64(tr + 24);
  uint64_t body = fsize - HK_CACHE_TRAILER; /* elf + meta + keys */
  if (l->nkeys == 0 || l->nkeys > HK_CACHE_MAX_KEYS) return HK_EIO;
  uint64_t kb = l->nkeys * 32;
  if (kb > body || l->esz == 0 || l->esz > body - kb ||
      l->msz != body - kb - l->esz)
    return HK_EIO;
  l->keys_at = l->esz + l->msz;
  return HK_OK;
}

/* Whether key is among the keys of a checked layout l, whose key bytes are
 * keys. */
static int key_listed(const uint8_t *keys, uint64_t nkeys,
                      const uint8_t key[32]) {
  for (uint64_t i = 0; i < nkeys; i++)
    if (memcmp(keys + 32 * i, key, 32) == 0) return 1;
  return 0;
}

/* Verifies the entry open at fd, whose size is fsize: the trailer is
 * consistent, meta holds no NUL, the digest matches every byte before it,
 * and key (unless NULL) is one of the keys it was written for. HK_OK with
 * *elf_size and, when meta is not NULL, *meta (malloc'ed); HK_EIO when the
 * entry is not sound (or cannot be read), HK_ENOMEM; on failure nothing is
 * left to free. */
static int verify(int fd, uint64_t fsize, const uint8_t *key,
                  size_t *elf_size, char **meta) {
  uint8_t tr[HK_CACHE_TRAILER];
  layout_t l;
  if (read_trailer(fd, fsize, tr, &l) != HK_OK) return HK_EIO;
  uint64_t esz = l.esz, msz = l.msz;

  char *m = NULL;
  if (meta) {
    m = malloc(msz + 1); /* msz < fsize: bounded by the file */
    if (!m) return HK_ENOMEM;
    m[msz] = '\0';
  }
  uint8_t *buf = malloc(CHUNK);
  uint8_t *keys = malloc(l.nkeys * 32); /* <= HK_CACHE_MAX_KEYS * 32 */
  if (!buf || !keys) {
    free(buf);
    free(keys);
    free(m);
    return HK_ENOMEM;
  }
  hk_sha256_t s;
  hk__sha256_init(&s);
  uint64_t hashed_end = fsize - 32; /* everything before the digest */
  int ok = 1;
  for (uint64_t off = 0; ok && off < hashed_end;) {
    size_t n = hashed_end - off < CHUNK ? (size_t)(hashed_end - off) : CHUNK;
    if (hku_pread_all(fd, buf, n, off) != 0) {
      ok = 0;
      break;
    }
    hk__sha256_update(&s, buf, n);
    /* The part of this chunk that is meta: no NUL, and copied out. */
    uint64_t lo = off > esz ? off : esz,
             hi = off + n < esz + msz ? off + n : esz + msz;
    if (lo < hi) {
      if (memchr(buf + (lo - off), '\0', (size_t)(hi - lo))) ok = 0;
      if (m) memcpy(m + (lo - esz), buf + (lo - off), (size_t)(hi - lo));
    }
    /* The part that is keys: copied out. */
    uint64_t kend = l.keys_at + l.nkeys * 32;
    lo = off > l.keys_at ? off : l.keys_at;
    hi = off + n < kend ? off + n : kend;
    if (lo < hi)
      memcpy(keys + (lo - l.keys_at), buf + (lo - off), (size_t)(hi - lo));
    off += n;
  }
  free(buf);
  uint8_t d[32];
  hk__sha256_final(&s, d);
  if (ok && key && !key_listed(keys, l.nkeys, key)) ok = 0;
  free(keys);
  if (!ok || memcmp(d, tr + HK_CACHE_TRAILER - 32, 32) != 0) {
    free(m);
    return HK_EIO;
  }
  *elf_size = (size_t)esz;
  if (meta) *meta = m;
  return HK_OK;
}

/* Removes the entry name if it is still the file described by st (st NULL:
 * whatever non-directory is there, for names that could not be opened). A
 * writer may rename a fresh entry over the name between the check and the
 * unlink; that entry is then lost, which costs a recompile, never a wrong
 * load. */
static void remove_entry(hk_cache_t *c, const char *name,
                         const struct stat *st) {
  struct stat now;
  if (fstatat(c->dfd, name, &now, AT_SYMLINK_NOFOLLOW) != 0 ||
      S_ISDIR(now.st_mode))
    return;
  if (st && (now.st_ino != st->st_ino || now.st_dev != st->st_dev)) return;
  (void)unlinkat(c->dfd, name, 0);
}

/* Opens an entry without following a symlink or blocking on a FIFO. */
static int open_entry(hk_cache_t *c, const char *name) {
  int fd = openat(c->dfd, name,
                  O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
  if (fd >= 0) {
    int fl = fcntl(fd, F_GETFL);
    if (fl != -1) (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  }
  return fd;
}

HK_INTERNAL int hk__cache_peek(hk_cache_t *c, const uint8_t key[32]) {
  char name[68];
  entry_name(key, name);
  int fd = open_entry(c, name);
  if (fd < 0) return -1;
  struct stat st;
  uint8_t tr[HK_CACHE_TRAILER];
  layout_t l;
  uint8_t *keys = NULL;
  int ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
           read_trailer(fd, (uint64_t)st.st_size, tr, &l) == HK_OK &&
           (keys = malloc(l.nkeys * 32)) != NULL &&
           hku_pread_all(fd, keys, l.nkeys * 32, l.keys_at) == HK_OK &&
           key_listed(keys, l.nkeys, key);
  free(keys);
  if (!ok) {
    close(fd);
    fd = -1;
  }
  return fd;
}

HK_INTERNAL int hk__cache_get(hk_cache_t *c, const uint8_t key[32],
                              size_t *elf_size, char **meta, int *status) {
  int dummy;
  if (!status) status = &dummy;
  if (meta) *meta = NULL;
  char name[68];
  entry_name(key, name);
  int fd = open_entry(c, name);
  if (fd < 0) {
    int e = errno;
    /* A symlink (ELOOP), a socket (ENXIO), a file we may not read: not an
     * entry hk wrote. Anything else (ENOENT, EMFILE, ENOMEM...) is a miss
     * and leaves the name alone. */
    if (e == ELOOP || e == ENXIO || e == EACCES || e == EPERM) {
      remove_entry(c, name, NULL);
      *status = HK_CACHE_CORRUPT;
    } else {
      *status = HK_CACHE_MISS;
    }
    return -1;
  }
  struct stat st;
  size_t esz = 0;
  if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    /* a folder bearing the name is not hk's and stays (the store that
     * follows says so): a miss, not a damaged entry removed */
    close(fd);
    *status = HK_CACHE_MISS;
    return -1;
  }
  int rc = fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)
               ? HK_EIO
               : verify(fd, (uint64_t)st.st_size, key, &esz, meta);
  if (rc == HK_ENOMEM) { /* says nothing about the entry: keep it */
    close(fd);
    *status = HK_CACHE_MISS;
    return -1;
  }
  if (rc) {
    if (fstat(fd, &st) == 0) remove_entry(c, name, &st);
    close(fd);
    *status = HK_CACHE_CORRUPT;
    return -1;
  }
  if (elf_size) *elf_size = esz;
  *status = HK_CACHE_HIT;
  return fd;
}

/* --- writing ----------------------------------------------------------------
 */

/* 64 bits for a temp file's name: getrandom, else the clock and a stack
 * address. Uniqueness comes from O_EXCL; randomness only avoids retries. */
static uint64_t random_bits(void) {
  uint64_t v = 0;
  if (getrandom(&v, sizeof v, GRND_NONBLOCK) == (ssize_t)sizeof v) return v;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  v = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15u ^ (uint64_t)ts.tv_sec ^
      (uint64_t)(uintptr_t)&ts;
  return v;
}

/* A fresh temp file name in tmp. */
static void temp_name(char tmp[64]) {
  uint8_t r[8];
  char hex[17];
  put_le64(r, random_bits());
  hk__hex(r, 8, hex);
  snprintf(tmp, 64, ".hk-%ld-%s.tmp", (long)getpid(), hex);
}

/* Creates the temp file (name in tmp); its fd or -1 with errno. */
static int create_temp(hk_cache_t *c, char tmp[64]) {
  for (int tries = 0; tries < 32; tries++) {
    temp_name(tmp);
    int fd = openat(c->dfd, tmp,
                    O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  errno = EEXIST;
  return -1;
}

/* What one entry holds. */
typedef struct {
  const void *elf;
  size_t size;
  const char *meta;
  const uint8_t (*keys)[32];
  int nkeys;
} entry_t;

/* Writes [elf][meta][keys][trailer] to out. HK_OK, or HK_EIO with errno. */
static int write_entry(int out, const entry_t *e) {
  hk_sha256_t s;
  hk__sha256_init(&s);
  size_t msz = strlen(e->meta), kb = (size_t)e->nkeys * 32;
  uint8_t tr[HK_CACHE_TRAILER];
  memcpy(tr, HK_CACHE_MAGIC, 8);
  put_le64(tr + 8, e->size);
  put_le64(tr + 16, msz);
  put_le64(tr + 24, (uint64_t)e->nkeys);
  hk__sha256_update(&s, e->elf, e->size);
  hk__sha256_update(&s, e->meta, msz);
  hk__sha256_update(&s, e->keys, kb);
  hk__sha256_update(&s, tr, HK_CACHE_TRAILER - 32);
  hk__sha256_final(&s, tr + HK_CACHE_TRAILER - 32);
  if (hku_write_all(out, e->elf, e->size) != HK_OK ||
      hku_write_all(out, e->meta, msz) != HK_OK ||
      hku_write_all(out, e->keys, kb) != HK_OK ||
      hku_write_all(out, tr, sizeof tr) != HK_OK)
    return HK_EIO;
  return HK_OK;
}

/* Publishes the fsynced temp file tmp under name: a link to it under a
 * fresh temp name renamed over name (rename replaces an entry, link does
 * not), or, where the file system has no hard links, a copy. HK_OK or
 * HK_EIO with errno. */
static int publish_link(hk_cache_t *c, const char *tmp, const char *name,
                        const entry_t *e) {
  char alias[64];
  temp_name(alias);
  if (linkat(c->dfd, tmp, c->dfd, alias, 0) != 0) {
    int out = create_temp(c, alias);
    if (out < 0) return HK_EIO;
    int rc = write_entry(out, e);
    if (rc == HK_OK && fsync(out) != 0) rc = HK_EIO;
    if (close(out) != 0) rc = HK_EIO;
    if (rc) {
      int er = errno;
      (void)unlinkat(c->dfd, alias, 0);
      errno = er;
      return rc;
    }
  }
  if (renameat(c->dfd, alias, c->dfd, name) != 0) {
    int er = errno;
    (void)unlinkat(c->dfd, alias, 0);
    errno = er;
    return HK_EIO;
  }
  return HK_OK;
}

static DIR *open_stream(hk_cache_t *c);

/* cc-<32 lowercase hex>.id: a compiler's identity (compiler_cc.c). */
static int is_id_name(const char *s) {
  if (strncmp(s, "cc-", 3) != 0) return 0;
  for (int i = 0; i < 32; i++)
    if (!is_lower_hex(s[3 + i])) return 0;
  return strcmp(s + 35, ".id") == 0;
}

/* .hk-build-XXXXXX (mkdtemp's letters and digits): a system compiler's
 * build folder (compiler_cc.c). */
static int is_build_dir_name(const char *s) {
  if (strncmp(s, ".hk-build-", 10) != 0) return 0;
  s += 10;
  for (int i = 0; i < 6; i++, s++)
    if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'z') ||
          (*s >= 'A' && *s <= 'Z')))
      return 0;
  return *s == '\0';
}

/* .cc-<32 hex>.id.tmp-<8 hex>: a compiler identity being written
 * (compiler_cc.c through hku_write_file_atomic). */
static int is_id_temp_name(const char *s) {
  if (strncmp(s, ".cc-", 4) != 0) return 0;
  s += 4;
  for (int i = 0; i < 32; i++)
    if (!is_lower_hex(*s++)) return 0;
  if (strncmp(s, ".id.tmp-", 8) != 0) return 0;
  s += 8;
  for (int i = 0; i < 8; i++)
    if (!is_lower_hex(*s++)) return 0;
  return *s == '\0';
}

/* Removes the build folder name (its files, then itself). */
static void remove_build_dir(hk_cache_t *c, const char *name) {
  hku_remove_flat_dir(c->dfd, name);
}

/* Removes what killed processes left, older than HK_CACHE_TEMP_AGE (a live
 * writer's file or a running compile's folder is minutes old at most): the
 * temp files of cache writes, the compiler's build folders and
 * half-written compiler identities. Failures change nothing but leave the
 * files. */
static void sweep_temps(hk_cache_t *c) {
  DIR *d = open_stream(c);
  if (!d) return;
  time_t now = time(NULL);
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    struct stat st;
    int file = is_temp_name(de->d_name) || is_id_temp_name(de->d_name);
    int dir = !file && is_build_dir_name(de->d_name);
    if ((!file && !dir) ||
        fstatat(c->dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        now - st.st_mtime <= HK_CACHE_TEMP_AGE)
      continue;
    if (file && S_ISREG(st.st_mode))
      (void)unlinkat(c->dfd, de->d_name, 0);
    else if (dir && S_ISDIR(st.st_mode))
      remove_build_dir(c, de->d_name);
  }
  closedir(d);
}

HK_INTERNAL int hk__cache_put_keys(hk_cache_t *c, const uint8_t (*keys)[32],
                                   int nkeys, const void *elf, size_t size,
                                   const char *meta, hku_diags *d) {
  if (!meta) meta = "";
  if (size == 0) return fail(d, HK_EINVAL, c->dir, "the object is empty");
  if (nkeys < 1 || nkeys > HK_CACHE_MAX_KEYS)
    return fail(d, HK_EINVAL, c->dir, "%d keys for one entry (1 to %d)",
                nkeys, HK_CACHE_MAX_KEYS);
  if (!atomic_exchange(&c->swept, 1)) sweep_temps(c);
  entry_t e = {elf, size, meta, keys, nkeys};
  char tmp[64], name[68];
  int out = create_temp(c, tmp);
  if (out < 0)
    return fail(d, HK_EIO, c->dir, "cannot create a temp file in %s: %s",
                c->dir, strerror(errno));
  int rc = HK_OK;
  if (write_entry(out, &e) != HK_OK)
    rc = fail(d, HK_EIO, c->dir, "cannot write a cache entry: %s",
              strerror(errno));
  /* The data must be on disk before the name points at it, or a crash
   * could leave a named entry with a hole in it. */
  if (rc == HK_OK && fsync(out) != 0)
    rc = fail(d, HK_EIO, c->dir, "cannot sync a cache entry: %s",
              strerror(errno));
  if (close(out) != 0 && rc == HK_OK)
    rc = fail(d, HK_EIO, c->dir, "cannot write a cache entry: %s",
              strerror(errno));
  for (int k = 1; rc == HK_OK && k < nkeys; k++) {
    entry_name(keys[k], name);
    if (publish_link(c, tmp, name, &e) != HK_OK)
      rc = fail(d, HK_EIO, c->dir, "cannot publish a cache entry in %s: %s",
                c->dir, strerror(errno));
  }
  entry_name(keys[0], name);
  if (rc == HK_OK && renameat(c->dfd, tmp, c->dfd, name) != 0) {
    int err = errno;
    rc = fail(d, HK_EIO, c->dir, "cannot rename a cache entry to %s/%s: %s%s",
              c->dir, name, strerror(err),
              err == EISDIR || err == ENOTEMPTY || err == EEXIST
                  ? " (a folder of that name is not hk's: remove it)"
                  : "");
  }
  if (rc) {
    (void)unlinkat(c->dfd, tmp, 0);
    return rc;
  }
  (void)fsync(c->dfd); /* the renames; losing them only costs misses */
  return HK_OK;
}

HK_INTERNAL int hk__cache_put(hk_cache_t *c, const uint8_t key[32],
                              const void *elf, size_t size, const char *meta,
                              hku_diags *d) {
  return hk__cache_put_keys(c, (const uint8_t(*)[32])key, 1, elf, size, meta,
                            d);
}

/* --- remembered failures ------------------------------------------------- */

#define FAIL_MAGIC "HKFAIL1\n"

static void fail_name(const uint8_t key[32], char name[72]) {
  hk__hex(key, 32, name);
  memcpy(name + 64, ".fail", 6);
}

HK_INTERNAL int hk__cache_put_failure(hk_cache_t *c, const uint8_t key[32],
                                      const char *note, hku_diags *d) {
  char tmp[64], name[72];
  size_t n = strlen(note);
  if (n > HK_CACHE_FAIL_MAX) n = HK_CACHE_FAIL_MAX;
  int out = create_temp(c, tmp);
  if (out < 0)
    return fail(d, HK_EIO, c->dir, "cannot create a temp file in %s: %s",
                c->dir, strerror(errno));
  int ok = hku_write_all(out, FAIL_MAGIC, 8) == HK_OK &&
           hku_write_all(out, note, n) == HK_OK;
  int er = errno;
  if (close(out) != 0 && ok) {
    ok = 0;
    er = errno;
  }
  fail_name(key, name);
  /* no fsync: a failure lost in a crash only costs one more compile */
  if (ok && renameat(c->dfd, tmp, c->dfd, name) != 0) {
    ok = 0;
    er = errno;
  }
  if (!ok) {
    (void)unlinkat(c->dfd, tmp, 0);
    return fail(d, HK_EIO, c->dir, "cannot write in %s: %s", c->dir,
                strerror(er));
  }
  return HK_OK;
}

HK_INTERNAL int hk__cache_get_failure(hk_cache_t *c, const uint8_t key[32],
                                      char **note) {
  *note = NULL;
  char name[72];
  fail_name(key, name);
  int fd = open_entry(c, name);
  if (fd < 0) return HK_ENOTFOUND;
  struct stat st;
  char *text = NULL;
  int rc = HK_ENOTFOUND;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= 8 &&
      st.st_size <= 8 + HK_CACHE_FAIL_MAX) {
    size_t n = (size_t)st.st_size;
    text = malloc(n + 1);
    if (!text) {
      close(fd);
      return HK_ENOMEM;
    }
    if (hku_pread_all(fd, text, n, 0) == HK_OK &&
        !memcmp(text, FAIL_MAGIC, 8) && !memchr(text, '\0', n)) {
      text[n] = '\0';
      memmove(text, text + 8, n - 8 + 1);
      rc = HK_OK;
    }
  }
  if (rc != HK_OK) {
    free(text);
    text = NULL;
    if (fstat(fd, &st) == 0) remove_entry(c, name, &st);
  }
  close(fd);
  *note = text;
  return rc;
}

/* --- listing and clearing ------------------------------------------------- */

/* A fresh stream over the directory (its own offset, so calls do not
 * disturb each other). */
static DIR *open_stream(hk_cache_t *c) {
  int fd = openat(c->dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return NULL;
  DIR *d = fdopendir(fd);
  if (!d) close(fd);
  return d;
}

HK_INTERNAL int hk__cache_list(hk_cache_t *c, hk_cache_list_fn fn, void *ctx) {
  DIR *d = open_stream(c);
  if (!d) return HK_EIO;
  int count = 0;
  size_t dirlen = strlen(c->dir);
  char *path = malloc(dirlen + 1 + 68);
  if (!path) {
    closedir(d);
    return HK_ENOMEM;
  }
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (!is_entry_name(de->d_name)) continue;
    struct stat st;
    if (fstatat(c->dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
      continue; /* gone */
    char *meta = NULL;
    size_t esz = 0;
    int valid = 0;
    if (S_ISREG(st.st_mode)) {
      int fd = open_entry(c, de->d_name);
      if (fd >= 0) {
        struct stat fst;
        uint8_t key[32];
        key_of_name(de->d_name, key);
        valid = fstat(fd, &fst) == 0 && S_ISREG(fst.st_mode) &&
                verify(fd, (uint64_t)fst.st_size, key, &esz, &meta) == 0;
        if (valid) st = fst; /* describe the file that was verified */
        close(fd);
      }
    }
    snprintf(path, dirlen + 1 + 68, "%s/%s", c->dir, de->d_name);
    if (fn)
      fn(ctx, path, (size_t)st.st_size, st.st_mtime, valid ? meta : NULL,
         valid);
    free(meta);
    count++;
  }
  free(path);
  closedir(d);
  return count;
}

HK_INTERNAL int hk__cache_clear(hk_cache_t *c, int *kept, hku_diags *why) {
  *kept = 0;
  DIR *d = open_stream(c);
  if (!d) return HK_EIO;
  int count = 0;
  time_t now = time(NULL);
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    struct stat st;
    /* what a process may be writing or compiling in now stays until it
     * is as old as sweep_temps' limit: a clear beside a running compile
     * removed its build folder from under it (the compile failed) */
    int temp = is_build_dir_name(de->d_name) || is_temp_name(de->d_name) ||
               is_id_temp_name(de->d_name);
    if (temp && (fstatat(c->dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
                 now - st.st_mtime <= HK_CACHE_TEMP_AGE))
      continue;
    if (is_build_dir_name(de->d_name)) {
      if (S_ISDIR(st.st_mode)) {
        remove_build_dir(c, de->d_name);
        count += fstatat(c->dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0;
      }
      continue;
    }
    if (!is_entry_name(de->d_name) && !temp && !is_fail_name(de->d_name) &&
        !is_id_name(de->d_name))
      continue;
    /* Flags 0: a directory that happens to bear such a name stays (and
     * is said to); a file that cannot be removed (a folder the caller
     * may not write) is said to, not counted as removed */
    if (unlinkat(c->dfd, de->d_name, 0) == 0) {
      count++;
    } else if (errno != ENOENT) {
      int e = errno;
      if (!*kept)
        (void)fail(why, HK_EIO, NULL, "cannot remove %s/%s: %s", c->dir,
                   de->d_name,
                   e == EISDIR ? "it is a folder, which hk leaves alone"
                               : strerror(e));
      ++*kept;
    }
  }
  closedir(d);
  return count;
}
