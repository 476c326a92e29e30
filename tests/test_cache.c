/* test_cache.c — the disk cache: where it lives and who may own it, put and
 * get (byte-identical, verified), every kind of damage (a miss, the entry
 * removed), a sound entry of other keys under a key's name, symlinks and
 * other non-files, eight processes racing on one key, list and clear
 * (foreign files untouched), old temp files swept, and a real shared
 * object loaded through the returned fd. */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cache.h"
#include "fsutil.h"
#include "check.h"
#include "sha256.h"

static char g_tmp[] = "/tmp/hk_cache_XXXXXX";

static void key_of(int i, uint8_t key[32]) {
  char s[32];
  snprintf(s, sizeof s, "key %d", i);
  hk__sha256(s, strlen(s), key);
}

/* <dir>/<hex(key)>.so */
static void entry_path(const char *dir, const uint8_t key[32], char *out,
                       size_t n) {
  char hex[65];
  hk__hex(key, 32, hex);
  snprintf(out, n, "%s/%s.so", dir, hex);
}

/* A fake shared object: n bytes of a pattern picked by seed. */
static void fake_bytes(uint8_t *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++)
    p[i] = (uint8_t)(i * 31u + seed * 17u + (i >> 8));
}

static int write_file(const char *path, const void *p, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  size_t w = n ? fwrite(p, 1, n, f) : 0;
  return fclose(f) == 0 && w == n ? 0 : -1;
}

static int exists(const char *path) {
  struct stat st;
  return lstat(path, &st) == 0;
}

/* Files named like temp files in dir. */
static int count_temps(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  struct dirent *de;
  while (d && (de = readdir(d)) != NULL)
    n += strncmp(de->d_name, ".hk-", 4) == 0;
  if (d) closedir(d);
  return n;
}

/* hk__cache_open with the reason as text: 0, or -1 with it in err. */
static int open_cache(const char *dir, int unsafe, hk_cache_t **c, char *err,
                      size_t errlen) {
  hku_diags d = HKU_DIAGS_INIT;
  int rc = hk__cache_open(dir, unsafe, c, &d);
  snprintf(err, errlen, "%s", d.n ? d.v[0].msg : "");
  hku_diags_free(&d);
  return rc ? -1 : 0;
}

/* hk__cache_put of the file so's bytes: 0, or -1 with the reason in err. */
static int put_file(hk_cache_t *c, const uint8_t key[32], const char *so,
                    const char *meta, char *err, size_t errlen) {
  hku_diags d = HKU_DIAGS_INIT;
  char *bytes = NULL;
  size_t n = 0;
  int rc = hku_read_file(so, &bytes, &n, NULL, &d);
  if (rc == HK_OK) rc = hk__cache_put(c, key, bytes, n, meta, &d);
  hku_buf why = HKU_BUF_INIT;
  hku_diags_first(&d, &why);
  snprintf(err, errlen, "%s", hku_buf_str(&why));
  hku_buf_free(&why);
  free(bytes);
  hku_diags_free(&d);
  return rc ? -1 : 0;
}

static hk_cache_t *open_dir(const char *dir, int unsafe) {
  hk_cache_t *c = NULL;
  char err[512];
  int r = open_cache(dir, unsafe, &c, err, sizeof err);
  CHECK_MSG(r == 0 && c != NULL, "open %s: %s", dir, err);
  return r == 0 ? c : NULL;
}

static void test_open(void) {
  char dir[512], err[512];
  struct stat st;
  hk_cache_t *c = NULL;
  umask(022);

  /* Created with its parents, 0700. */
  snprintf(dir, sizeof dir, "%s/new/deeper/cache", g_tmp);
  c = open_dir(dir, 0);
  if (c) CHECK_STR_EQ(hk__cache_dir(c), dir);
  hk__cache_close(c);
  CHECK(stat(dir, &st) == 0 && S_ISDIR(st.st_mode) &&
        (st.st_mode & 0777) == 0700);
  snprintf(dir, sizeof dir, "%s/new", g_tmp);
  CHECK(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700);
  /* Opening again is fine; a trailing slash too. */
  snprintf(dir, sizeof dir, "%s/new/deeper/cache/", g_tmp);
  c = open_dir(dir, 0);
  hk__cache_close(c);
  /* Even a restrictive umask leaves a new directory exactly 0700. */
  mode_t old = umask(0077);
  snprintf(dir, sizeof dir, "%s/umask", g_tmp);
  c = open_dir(dir, 0);
  hk__cache_close(c);
  CHECK(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700);
  umask(old);

  /* Writable by others or group: refused unless allow_unsafe. */
  static const mode_t unsafe[] = {0777, 0770, 0702, 01777};
  for (size_t i = 0; i < sizeof unsafe / sizeof unsafe[0]; i++) {
    snprintf(dir, sizeof dir, "%s/open%zu", g_tmp, i);
    CHECK(mkdir(dir, 0700) == 0 && chmod(dir, unsafe[i]) == 0);
    c = (hk_cache_t *)1;
    CHECK_INT_EQ(open_cache(dir, 0, &c, err, sizeof err), -1);
    CHECK(c == NULL);
    CHECK_CONTAINS(err, "writable by group or others");
    CHECK_CONTAINS(err, dir);
    c = open_dir(dir, 1);
    hk__cache_close(c);
  }
  snprintf(dir, sizeof dir, "%s/shared755", g_tmp);
  CHECK(mkdir(dir, 0755) == 0 && chmod(dir, 0755) == 0);
  c = open_dir(dir, 0); /* readable by others is not unsafe */
  hk__cache_close(c);

  /* Owned by another user: refused unless allow_unsafe. */
  if (geteuid() == 0) {
    snprintf(dir, sizeof dir, "%s/nobody", g_tmp);
    CHECK(mkdir(dir, 0700) == 0 && chown(dir, 65534, 65534) == 0);
    CHECK_INT_EQ(open_cache(dir, 0, &c, err, sizeof err), -1);
    CHECK_CONTAINS(err, "owned by another user");
    c = open_dir(dir, 1);
    hk__cache_close(c);
  } else {
    printf(
        "note: not root, so the other-owner refusal is not exercised (cannot "
        "chown)\n");
  }

  /* A path through a regular file cannot be created. */
  snprintf(dir, sizeof dir, "%s/afile", g_tmp);
  CHECK(write_file(dir, "x", 1) == 0);
  snprintf(dir, sizeof dir, "%s/afile/cache", g_tmp);
  CHECK_INT_EQ(open_cache(dir, 0, &c, err, sizeof err), -1);
  CHECK(err[0] != '\0');
  /* The cache folder itself is a regular file: refused, and the file is
   * left as it was. */
  snprintf(dir, sizeof dir, "%s/afile", g_tmp);
  err[0] = '\0';
  CHECK_INT_EQ(open_cache(dir, 0, &c, err, sizeof err), -1);
  CHECK(strstr(err, strerror(ENOTDIR)) != NULL);
  struct stat fst;
  CHECK(stat(dir, &fst) == 0 && S_ISREG(fst.st_mode) && fst.st_size == 1);
}

/* Restores one environment variable to a saved value (NULL: unset). */
static void restore_env(const char *name, const char *saved) {
  if (saved)
    setenv(name, saved, 1);
  else
    unsetenv(name);
}

static char *dup_env(const char *name) {
  const char *v = getenv(name);
  return v ? strdup(v) : NULL;
}

/* The resolution rules, by setting the variables (single-threaded test). */
static void test_default_dir(void) {
  char *s_hk = dup_env("HK_CACHE_DIR"), *s_xdg = dup_env("XDG_CACHE_HOME"),
       *s_home = dup_env("HOME");
  char want[512], v[512];
  struct stat st;
  hk_cache_t *c;

  snprintf(v, sizeof v, "%s/env_hk", g_tmp);
  setenv("HK_CACHE_DIR", v, 1);
  snprintf(want, sizeof want, "%s/xdg", g_tmp);
  setenv("XDG_CACHE_HOME", want, 1);
  c = open_dir(NULL, 0);
  if (c) CHECK_STR_EQ(hk__cache_dir(c), v);
  hk__cache_close(c);
  CHECK(stat(v, &st) == 0 && S_ISDIR(st.st_mode));
  c = open_dir("", 0); /* "" means the default too */
  if (c) CHECK_STR_EQ(hk__cache_dir(c), v);
  hk__cache_close(c);

  /* Empty HK_CACHE_DIR: ignored; then $XDG_CACHE_HOME/hk. */
  setenv("HK_CACHE_DIR", "", 1);
  snprintf(v, sizeof v, "%s/xdg/hk", g_tmp);
  c = open_dir(NULL, 0);
  if (c) CHECK_STR_EQ(hk__cache_dir(c), v);
  hk__cache_close(c);
  CHECK(stat(v, &st) == 0 && (st.st_mode & 0777) == 0700);

  /* A relative XDG_CACHE_HOME is ignored (XDG spec); then $HOME/.cache/hk. */
  unsetenv("HK_CACHE_DIR");
  setenv("XDG_CACHE_HOME", "relative/path", 1);
  snprintf(v, sizeof v, "%s/home", g_tmp);
  setenv("HOME", v, 1);
  snprintf(want, sizeof want, "%s/home/.cache/hk", g_tmp);
  c = open_dir(NULL, 0);
  if (c) CHECK_STR_EQ(hk__cache_dir(c), want);
  hk__cache_close(c);
  CHECK(stat(want, &st) == 0 && S_ISDIR(st.st_mode));
  unsetenv("XDG_CACHE_HOME");
  c = open_dir(NULL, 0);
  if (c) CHECK_STR_EQ(hk__cache_dir(c), want);
  hk__cache_close(c);
  printf(
      "note: the getpwuid fallback (HOME unset) is not exercised: it would "
      "create "
      "~/.cache/hk in the real home\n");

  restore_env("HK_CACHE_DIR", s_hk);
  restore_env("XDG_CACHE_HOME", s_xdg);
  restore_env("HOME", s_home);
  free(s_hk);
  free(s_xdg);
  free(s_home);
}

/* Checks that get(key) hits with exactly so bytes and meta. */
static void expect_hit(hk_cache_t *c, const uint8_t key[32], const uint8_t *so,
                       size_t n, const char *meta) {
  size_t esz = 0;
  char *m = NULL;
  int st = -1;
  int fd = hk__cache_get(c, key, &esz, &m, &st);
  CHECK_MSG(fd >= 0 && st == HK_CACHE_HIT, "fd %d status %d", fd, st);
  if (fd < 0) return;
  CHECK_INT_EQ(esz, n);
  CHECK_STR_EQ(m, meta);
  uint8_t *back = malloc(n + 1);
  CHECK(back && pread(fd, back, n, 0) == (ssize_t)n &&
        memcmp(back, so, n) == 0);
  free(back);
  int fdflags = fcntl(fd, F_GETFD), flflags = fcntl(fd, F_GETFL);
  CHECK(fdflags != -1 && (fdflags & FD_CLOEXEC));
  CHECK(flflags != -1 && (flflags & O_ACCMODE) == O_RDONLY &&
        !(flflags & O_NONBLOCK));
  free(m);
  close(fd);
}

static void expect_status(hk_cache_t *c, const uint8_t key[32], int want) {
  int st = -1;
  char *m = (char *)"untouched";
  CHECK_INT_EQ(hk__cache_get(c, key, NULL, &m, &st), -1);
  CHECK_INT_EQ(st, want);
  CHECK(m == NULL);
}

static void test_put_get(void) {
  char dir[512], so[512], path[512], err[512];
  snprintf(dir, sizeof dir, "%s/pg", g_tmp);
  hk_cache_t *c = open_dir(dir, 0);
  if (!c) return;
  uint8_t key[32], key2[32], data[3000];
  key_of(1, key);
  key_of(2, key2);
  fake_bytes(data, sizeof data, 1);
  snprintf(so, sizeof so, "%s/fake.so", g_tmp);
  CHECK(write_file(so, data, sizeof data) == 0);
  const char *meta = "kernel=saxpy\ncompiler=gcc 12.2 \xc3\xbc\n";

  expect_status(c, key, HK_CACHE_MISS);
  CHECK_INT_EQ(put_file(c, key, so, meta, err, sizeof err), 0);
  expect_hit(c, key, data, sizeof data, meta);
  expect_hit(c, key, data, sizeof data, meta); /* a hit leaves the entry */
  expect_status(c, key2, HK_CACHE_MISS);
  CHECK_INT_EQ(count_temps(dir), 0);

  /* The file is exactly the documented format, checked independently. */
  entry_path(dir, key, path, sizeof path);
  struct stat st;
  CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
  size_t n = 0;
  uint8_t *f = (uint8_t *)check_read_file(path, &n);
  size_t msz = strlen(meta);
  CHECK(f != NULL && n == sizeof data + msz + 32 + HK_CACHE_TRAILER);
  if (f && n == sizeof data + msz + 32 + HK_CACHE_TRAILER) {
    CHECK(memcmp(f, data, sizeof data) == 0);
    CHECK(memcmp(f + sizeof data, meta, msz) == 0);
    CHECK(memcmp(f + sizeof data + msz, key, 32) == 0);
    const uint8_t *t = f + sizeof data + msz + 32;
    CHECK(memcmp(t, "HKCACHE2", 8) == 0);
    uint64_t e = 0, m = 0, k = 0;
    for (int i = 0; i < 8; i++) e |= (uint64_t)t[8 + i] << (8 * i);
    for (int i = 0; i < 8; i++) m |= (uint64_t)t[16 + i] << (8 * i);
    for (int i = 0; i < 8; i++) k |= (uint64_t)t[24 + i] << (8 * i);
    CHECK_INT_EQ(e, sizeof data);
    CHECK_INT_EQ(m, msz);
    CHECK_INT_EQ(k, 1);
    uint8_t d[32];
    hk__sha256(f, n - 32, d);
    CHECK(memcmp(d, f + n - 32, 32) == 0);
  }
  free(f);

  /* Without meta, and the lookup without asking for meta. */
  CHECK_INT_EQ(put_file(c, key2, so, NULL, err, sizeof err), 0);
  expect_hit(c, key2, data, sizeof data, "");
  int s = -1;
  size_t esz = 0;
  int fd = hk__cache_get(c, key2, &esz, NULL, &s);
  CHECK(fd >= 0 && s == HK_CACHE_HIT && esz == sizeof data);
  if (fd >= 0) close(fd);

  /* A new put replaces the entry. */
  fake_bytes(data, 77, 9);
  CHECK(write_file(so, data, 77) == 0);
  CHECK_INT_EQ(put_file(c, key, so, "second", err, sizeof err), 0);
  expect_hit(c, key, data, 77, "second");

  /* Bad sources: missing, empty, a directory. None leaves a temp file. */
  snprintf(path, sizeof path, "%s/missing.so", g_tmp);
  CHECK_INT_EQ(put_file(c, key, path, "", err, sizeof err), -1);
  CHECK_CONTAINS(err, path);
  snprintf(path, sizeof path, "%s/empty.so", g_tmp);
  CHECK(write_file(path, "", 0) == 0);
  CHECK_INT_EQ(put_file(c, key, path, "", err, sizeof err), -1);
  CHECK_CONTAINS(err, "empty");
  CHECK_INT_EQ(put_file(c, key, g_tmp, "", err, sizeof err), -1);
  CHECK_INT_EQ(count_temps(dir), 0);
  expect_hit(c, key, data, 77, "second"); /* failed puts left it alone */
  hk__cache_close(c);
}

/* A hand-made entry: the ELF, the meta, nkeys keys (the trailer says
 * nkeys_field), the magic and the trailer's size fields. */
typedef struct {
  const uint8_t *elf;
  size_t n;
  const char *meta;
  size_t msz;
  const uint8_t *keys; /* nkeys * 32 bytes */
  size_t nkeys;
  const char *magic;
  uint64_t esz_field, msz_field, nkeys_field;
} raw_t;

/* The raw_t of a sound entry of data (esz bytes) with meta, for key. */
static raw_t raw_ok(const uint8_t *data, size_t esz, const char *meta,
                    const uint8_t *key) {
  size_t msz = strlen(meta);
  return (raw_t){data, esz, meta, msz, key, 1, "HKCACHE2", esz, msz, 1};
}

/* Writes a hand-made entry:
 * [elf][meta][keys][magic][esz][msz][nkeys][digest], with the digest
 * computed over what is written (so only the other rules can reject it). */
static void write_raw(const char *path, raw_t r) {
  size_t kb = r.nkeys * 32, total = r.n + r.msz + kb + HK_CACHE_TRAILER;
  uint8_t *p = malloc(total);
  if (!p) return;
  memcpy(p, r.elf, r.n);
  memcpy(p + r.n, r.meta, r.msz);
  if (kb) memcpy(p + r.n + r.msz, r.keys, kb);
  uint8_t *t = p + r.n + r.msz + kb;
  memcpy(t, r.magic, 8);
  for (int i = 0; i < 8; i++) t[8 + i] = (uint8_t)(r.esz_field >> (8 * i));
  for (int i = 0; i < 8; i++) t[16 + i] = (uint8_t)(r.msz_field >> (8 * i));
  for (int i = 0; i < 8; i++)
    t[24 + i] = (uint8_t)(r.nkeys_field >> (8 * i));
  hk__sha256(p, total - 32, t + 32);
  CHECK(write_file(path, p, total) == 0);
  free(p);
}

static void test_corrupt(void) {
  char dir[512], so[512], path[512], err[512];
  snprintf(dir, sizeof dir, "%s/corrupt", g_tmp);
  hk_cache_t *c = open_dir(dir, 0);
  if (!c) return;
  uint8_t key[32], data[1500];
  key_of(3, key);
  fake_bytes(data, sizeof data, 3);
  snprintf(so, sizeof so, "%s/fake3.so", g_tmp);
  CHECK(write_file(so, data, sizeof data) == 0);
  const char *meta = "meta text";
  size_t msz = strlen(meta), esz = sizeof data,
         total = esz + msz + 32 + HK_CACHE_TRAILER;
  entry_path(dir, key, path, sizeof path);

  /* Cut short anywhere. */
  const size_t cuts[] = {0,          1,          31,         63,
                         64,         esz - 1,    esz,        esz + msz,
                         esz + msz + 31, total - 64, total - 33, total - 32,
                         total - 1};
  for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
    CHECK_INT_EQ(put_file(c, key, so, meta, err, sizeof err), 0);
    CHECK(truncate(path, (off_t)cuts[i]) == 0);
    expect_status(c, key, HK_CACHE_CORRUPT);
    CHECK_MSG(!exists(path), "cut at %zu: entry not removed", cuts[i]);
    expect_status(c, key, HK_CACHE_MISS);
  }
  /* One byte flipped: in the ELF, the meta, the magic, each size, the
   * digest. Also a byte appended. */
  const size_t flips[] = {
      0,          esz / 2,    esz - 1,    esz,        esz + msz - 1,
      esz + msz,  esz + msz + 31,         total - 64, total - 56,
      total - 49, total - 48, total - 40, total - 33, total - 32, total - 1};
  for (size_t i = 0; i < sizeof flips / sizeof flips[0]; i++) {
    CHECK_INT_EQ(put_file(c, key, so, meta, err, sizeof err), 0);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    uint8_t b = 0;
    CHECK(fd >= 0 && pread(fd, &b, 1, (off_t)flips[i]) == 1);
    b ^= 0x20;
    CHECK(pwrite(fd, &b, 1, (off_t)flips[i]) == 1);
    close(fd);
    expect_status(c, key, HK_CACHE_CORRUPT);
    CHECK_MSG(!exists(path), "flip at %zu: entry not removed", flips[i]);
  }
  CHECK_INT_EQ(put_file(c, key, so, meta, err, sizeof err), 0);
  int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
  CHECK(fd >= 0 && write(fd, "!", 1) == 1);
  close(fd);
  expect_status(c, key, HK_CACHE_CORRUPT);
  CHECK(!exists(path));

  /* Hand-made entries whose digest is right but whose trailer is not. */
  raw_t r = raw_ok(data, esz, meta, key);
  write_raw(path, r);
  expect_hit(c, key, data, esz, meta); /* the writer above is right */
  r.magic = "HKCACHE1"; /* the format before keys were bound */
  write_raw(path, r);
  expect_status(c, key, HK_CACHE_CORRUPT);
  r = raw_ok(data, esz, meta, key);
  r.msz_field = msz - 1;
  write_raw(path, r);
  expect_status(c, key, HK_CACHE_CORRUPT);
  r = raw_ok(data, esz, meta, key);
  r.esz_field = esz + 1;
  write_raw(path, r);
  expect_status(c, key, HK_CACHE_CORRUPT);
  r = raw_ok(data, esz, meta, key);
  r.esz_field = UINT64_MAX;
  r.msz_field = msz + 1;
  write_raw(path, r);
  expect_status(c, key, HK_CACHE_CORRUPT);
  r = raw_ok(data, 0, "", key); /* no ELF at all */
  write_raw(path, r);
  expect_status(c, key, HK_CACHE_CORRUPT);
  r = raw_ok(data, esz, meta, key);
  r.meta = "me\0ta"; /* NUL in meta */
  r.msz = r.msz_field = 5;
  write_raw(path, r);
  expect_status(c, key, HK_CACHE_CORRUPT);
  /* The key count: none, too many for the file, past the bound. */
  const uint64_t bad_counts[] = {0, 2, (uint64_t)HK_CACHE_MAX_KEYS + 1,
                                 UINT64_MAX / 16};
  for (size_t i = 0; i < sizeof bad_counts / sizeof *bad_counts; i++) {
    r = raw_ok(data, esz, meta, key);
    r.nkeys_field = bad_counts[i];
    write_raw(path, r);
    expect_status(c, key, HK_CACHE_CORRUPT);
  }
  CHECK(!exists(path));

  /* A sound entry of other keys under this key's name (renamed or linked
   * there): refused, removed. One that lists this key among others: a
   * hit. peek says the same without verifying. */
  uint8_t keys3[96];
  key_of(4, keys3);
  key_of(5, keys3 + 32);
  key_of(3, keys3 + 64);
  r = raw_ok(data, esz, meta, keys3);
  r.nkeys = r.nkeys_field = 2; /* keys 4 and 5 */
  write_raw(path, r);
  int pfd = hk__cache_peek(c, key);
  CHECK_MSG(pfd < 0, "peek gave an entry written for other keys");
  if (pfd >= 0) close(pfd);
  expect_status(c, key, HK_CACHE_CORRUPT);
  CHECK(!exists(path));
  r.nkeys = r.nkeys_field = 3; /* keys 4, 5 and 3 */
  write_raw(path, r);
  pfd = hk__cache_peek(c, key);
  CHECK(pfd >= 0);
  if (pfd >= 0) close(pfd);
  expect_hit(c, key, data, esz, meta);
  CHECK(unlink(path) == 0);

  /* A symlink in place of an entry, even to a valid entry: refused, the
   * link removed, its target untouched. */
  char target[512];
  snprintf(target, sizeof target, "%s/valid-elsewhere.so", g_tmp);
  write_raw(target, raw_ok(data, esz, meta, key));
  CHECK(symlink(target, path) == 0);
  expect_status(c, key, HK_CACHE_CORRUPT);
  CHECK(!exists(path) && exists(target));
  CHECK(symlink("/nonexistent/hk", path) == 0);
  expect_status(c, key, HK_CACHE_CORRUPT);
  CHECK(!exists(path));
  /* A FIFO (must not block) and a directory in its place. */
  CHECK(mkfifo(path, 0600) == 0);
  expect_status(c, key, HK_CACHE_CORRUPT);
  CHECK(!exists(path));
  CHECK(mkdir(path, 0700) == 0);
  /* a miss: it is left alone, so "a damaged entry was removed" would be
   * untrue, and the put after the compile says what is in the way */
  expect_status(c, key, HK_CACHE_MISS);
  CHECK(put_file(c, key, so, meta, err, sizeof err) != 0);
  CHECK_CONTAINS(err, "(a folder of that name is not hk's: remove it)");
  CHECK(rmdir(path) == 0); /* it was left alone */
  /* A put replaces whatever was there. */
  CHECK(symlink(target, path) == 0);
  CHECK_INT_EQ(put_file(c, key, so, meta, err, sizeof err), 0);
  expect_hit(c, key, data, esz, meta);
  struct stat st;
  CHECK(lstat(path, &st) == 0 && S_ISREG(st.st_mode));
  hk__cache_close(c);
}

/* --- processes racing on one key ------------------------------------------ */

#define RACERS 8
#define RACE_GETS 200
#define RACE_SIZE 20000

static void race_meta(int variant, char *m, size_t n) {
  snprintf(m, n, "variant=%d", variant);
}

/* One racer: puts its variant now and then, and gets the key RACE_GETS
 * times; every get must be a miss or a whole, self-consistent entry of one
 * of the two variants. Returns the number of bad gets. */
static int racer(const char *dir, const char *so, const uint8_t key[32],
                 int variant, int start_fd) {
  char err[512], m[32], buf[1];
  uint8_t *want = malloc(RACE_SIZE), *got = malloc(RACE_SIZE);
  hk_cache_t *c = NULL;
  if (!want || !got || open_cache(dir, 0, &c, err, sizeof err) != 0)
    return 1000;
  race_meta(variant, m, sizeof m);
  while (read(start_fd, buf, 1) > 0) continue; /* all start together */
  int bad = 0, hits = 0;
  for (int i = 0; i < RACE_GETS; i++) {
    if (i % 20 == 0 && put_file(c, key, so, m, err, sizeof err) != 0) {
      fprintf(stderr, "racer %d: put failed: %s\n", variant, err);
      bad++;
    }
    int st = -1;
    size_t esz = 0;
    char *meta = NULL;
    int fd = hk__cache_get(c, key, &esz, &meta, &st);
    if (fd < 0) {
      if (st != HK_CACHE_MISS) {
        fprintf(stderr, "racer %d: get %d: status %d\n", variant, i, st);
        bad++;
      }
      continue;
    }
    hits++;
    int v = -1;
    if (st != HK_CACHE_HIT || !meta || sscanf(meta, "variant=%d", &v) != 1 ||
        v < 0 || v > 1 || esz != RACE_SIZE) {
      fprintf(stderr, "racer %d: get %d: inconsistent hit\n", variant, i);
      bad++;
    } else {
      fake_bytes(want, RACE_SIZE, (unsigned)v + 100);
      if (pread(fd, got, RACE_SIZE, 0) != RACE_SIZE ||
          memcmp(want, got, RACE_SIZE) != 0) {
        fprintf(stderr, "racer %d: get %d: content does not match its meta\n",
                variant, i);
        bad++;
      }
    }
    free(meta);
    close(fd);
  }
  hk__cache_close(c);
  free(want);
  free(got);
  return bad || hits == 0 ? 1 + bad : 0;
}

static void test_race(void) {
  char dir[512], so[2][512], path[512];
  snprintf(dir, sizeof dir, "%s/race", g_tmp);
  hk_cache_t *c = open_dir(dir, 0);
  if (!c) return;
  uint8_t key[32];
  key_of(4, key);
  uint8_t *data = malloc(RACE_SIZE);
  CHECK(data != NULL);
  if (!data) return;
  for (int v = 0; v < 2; v++) {
    snprintf(so[v], sizeof so[v], "%s/race%d.so", g_tmp, v);
    fake_bytes(data, RACE_SIZE, (unsigned)v + 100);
    CHECK(write_file(so[v], data, RACE_SIZE) == 0);
  }
  int gate[2];
  CHECK(pipe(gate) == 0);
  fflush(NULL);
  pid_t pids[RACERS];
  for (int i = 0; i < RACERS; i++) {
    pids[i] = fork();
    if (pids[i] == 0) {
      close(gate[1]);
      hk__cache_close(c); /* the parent's copies: the racer opens its own */
      free(data);
      int bad = racer(dir, so[i % 2], key, i % 2, gate[0]);
      _exit(bad > 100 ? 100 : bad);
    }
    CHECK(pids[i] > 0);
  }
  close(gate[0]);
  close(gate[1]); /* opens the gate: every racer's read returns 0 */
  for (int i = 0; i < RACERS; i++) {
    int status = 0;
    if (pids[i] <= 0) continue;
    CHECK(waitpid(pids[i], &status, 0) == pids[i]);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "racer %d: status 0x%x", i, status);
  }
  /* At the end, a whole entry of one variant, and no temp file left. */
  size_t esz = 0;
  char *meta = NULL;
  int st = -1, v = -1;
  int fd = hk__cache_get(c, key, &esz, &meta, &st);
  CHECK(fd >= 0 && st == HK_CACHE_HIT && esz == RACE_SIZE);
  CHECK(meta && sscanf(meta, "variant=%d", &v) == 1 && (v == 0 || v == 1));
  free(meta);
  if (fd >= 0) close(fd);
  CHECK_INT_EQ(count_temps(dir), 0);
  entry_path(dir, key, path, sizeof path);
  CHECK(exists(path));
  hk__cache_close(c);
  free(data);
}

/* --- list and clear ---------------------------------------------------------
 */

typedef struct listed {
  int n, valid, with_meta;
  char metas[512];
  int bad_path, bad_size, bad_time;
  const char *dir;
} listed_t;

static void on_entry(void *ctx, const char *path, size_t size, time_t mtime,
                     const char *meta, int valid) {
  listed_t *l = ctx;
  struct stat st;
  l->n++;
  l->valid += valid != 0;
  if (strncmp(path, l->dir, strlen(l->dir)) != 0 || lstat(path, &st) != 0)
    l->bad_path++;
  else if ((size_t)st.st_size != size)
    l->bad_size++;
  time_t now = time(NULL);
  if (mtime < now - 3600 || mtime > now + 3600) l->bad_time++;
  if (meta) {
    l->with_meta++;
    size_t used = strlen(l->metas);
    snprintf(l->metas + used, sizeof l->metas - used, "[%s]", meta);
  }
  if (!valid && meta) l->bad_path += 1000; /* a corrupt entry has no meta */
}

static void test_list_clear(void) {
  char dir[512], so[512], path[600], err[512];
  snprintf(dir, sizeof dir, "%s/list", g_tmp);
  hk_cache_t *c = open_dir(dir, 0);
  if (!c) return;
  uint8_t data[500], key[32];
  fake_bytes(data, sizeof data, 5);
  snprintf(so, sizeof so, "%s/fake5.so", g_tmp);
  CHECK(write_file(so, data, sizeof data) == 0);
  listed_t l = {0};
  l.dir = dir;
  CHECK_INT_EQ(hk__cache_list(c, on_entry, &l), 0);

  for (int i = 0; i < 3; i++) {
    char m[16];
    snprintf(m, sizeof m, "m%d", i);
    key_of(10 + i, key);
    CHECK_INT_EQ(put_file(c, key, so, m, err, sizeof err), 0);
  }
  /* A corrupt entry, a stale temp file, and things that are not hk's. */
  key_of(20, key);
  entry_path(dir, key, path, sizeof path);
  CHECK(write_file(path, "garbage", 7) == 0);
  const char *const temps[] = {".hk-123-0123456789abcdef.tmp"};
  const char *const foreign[] = {
      "notes.txt",
      "0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef.so",
      "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde.so",
      "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.so.bak",
      ".hk-12x-0123456789abcdef.tmp",
      ".hk-123-0123456789abcdef.tmpx",
      ".hk--0123456789abcdef.tmp"};
  /* stale: older than HK_CACHE_TEMP_AGE (clear leaves a younger one to
   * its writer) */
  struct timespec old_ts[2] = {{time(NULL) - HK_CACHE_TEMP_AGE - 60, 0},
                               {time(NULL) - HK_CACHE_TEMP_AGE - 60, 0}};
  for (size_t i = 0; i < sizeof temps / sizeof temps[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, temps[i]);
    CHECK(write_file(path, "partial", 7) == 0);
    CHECK(utimensat(AT_FDCWD, path, old_ts, 0) == 0);
  }
  for (size_t i = 0; i < sizeof foreign / sizeof foreign[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, foreign[i]);
    CHECK(write_file(path, "mine", 4) == 0);
  }
  /* A directory bearing an entry's name: listed as invalid, never removed. */
  key_of(21, key);
  entry_path(dir, key, path, sizeof path);
  CHECK(mkdir(path, 0700) == 0);

  memset(&l, 0, sizeof l);
  l.dir = dir;
  CHECK_INT_EQ(hk__cache_list(c, on_entry, &l), 5);
  CHECK_INT_EQ(l.n, 5);
  CHECK_INT_EQ(l.valid, 3);
  CHECK_INT_EQ(l.with_meta, 3);
  CHECK(strstr(l.metas, "[m0]") && strstr(l.metas, "[m1]") &&
        strstr(l.metas, "[m2]"));
  CHECK_INT_EQ(l.bad_path, 0);
  CHECK_INT_EQ(l.bad_size, 0);
  CHECK_INT_EQ(l.bad_time, 0);
  CHECK_INT_EQ(hk__cache_list(c, NULL, NULL), 5); /* listing changed nothing */

  /* the directory is a miss to a lookup, not a damaged entry "removed" */
  key_of(21, key);
  expect_status(c, key, HK_CACHE_MISS);
  /* a compiler identity, here a FIFO (which a reader must not open:
   * compiler_cc.c) and a regular one: the cache's, cleared */
  snprintf(path, sizeof path, "%s/cc-0123456789abcdef0123456789abcdef.id",
           dir);
  CHECK(mkfifo(path, 0600) == 0);
  snprintf(path, sizeof path, "%s/cc-00000000000000000000000000000000.id",
           dir);
  CHECK(write_file(path, "gcc 12", 6) == 0);

  int kept = -1;
  hku_diags kd = HKU_DIAGS_INIT;
  CHECK_INT_EQ(hk__cache_clear(c, &kept, &kd),
               7); /* 3 entries, the corrupt one, the temp, 2 identities */
  CHECK_INT_EQ(kept, 1); /* the directory, said to stay */
  CHECK_CONTAINS(hku_diags_words(&kd, ""), "it is a folder, which hk leaves "
                                           "alone");
  hku_diags_free(&kd);
  CHECK(!exists(path));
  for (size_t i = 0; i < sizeof foreign / sizeof foreign[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, foreign[i]);
    CHECK_MSG(exists(path), "clear removed %s", foreign[i]);
  }
  entry_path(dir, key, path, sizeof path);
  CHECK(exists(path));               /* the directory */
  CHECK_INT_EQ(count_temps(dir), 3); /* only the foreign look-alikes */
  CHECK_INT_EQ(hk__cache_list(c, NULL, NULL), 1);
  key_of(10, key);
  expect_status(c, key, HK_CACHE_MISS);
  CHECK_INT_EQ(hk__cache_clear(c, &kept, NULL), 0);
  CHECK_INT_EQ(kept, 1);
  CHECK(rmdir(path) == 0);
  CHECK_INT_EQ(hk__cache_clear(c, &kept, NULL), 0);
  CHECK_INT_EQ(kept, 0);
  hk__cache_close(c);
}

/* Temp files a killed writer left: the first put of an open cache removes
 * those older than HK_CACHE_TEMP_AGE, and only those (a live writer's is
 * fresh); later puts do not look again. */
static void test_sweep(void) {
  char dir[512], so[512], err[512], old[600], fresh[600], late[600];
  snprintf(dir, sizeof dir, "%s/sweep", g_tmp);
  hk_cache_t *c = open_dir(dir, 0);
  if (!c) return;
  snprintf(old, sizeof old, "%s/.hk-1-00112233445566aa.tmp", dir);
  snprintf(fresh, sizeof fresh, "%s/.hk-2-00112233445566bb.tmp", dir);
  snprintf(late, sizeof late, "%s/.hk-3-00112233445566cc.tmp", dir);
  CHECK(write_file(old, "half", 4) == 0 && write_file(fresh, "half", 4) == 0);
  struct timespec ts[2] = {{time(NULL) - HK_CACHE_TEMP_AGE - 60, 0},
                           {time(NULL) - HK_CACHE_TEMP_AGE - 60, 0}};
  CHECK(utimensat(AT_FDCWD, old, ts, 0) == 0);
  uint8_t key[32], data[300];
  key_of(20, key);
  fake_bytes(data, sizeof data, 20);
  snprintf(so, sizeof so, "%s/fake20.so", g_tmp);
  CHECK(write_file(so, data, sizeof data) == 0);
  CHECK_INT_EQ(count_temps(dir), 2);
  CHECK_INT_EQ(put_file(c, key, so, "m", err, sizeof err), 0);
  CHECK_MSG(!exists(old), "the old temp file stayed");
  CHECK_MSG(exists(fresh), "a fresh temp file was removed");
  CHECK(write_file(late, "half", 4) == 0);
  CHECK(utimensat(AT_FDCWD, late, ts, 0) == 0);
  CHECK_INT_EQ(put_file(c, key, so, "m", err, sizeof err), 0);
  CHECK_MSG(exists(late), "the second put swept again");
  expect_hit(c, key, data, sizeof data, "m");
  /* A killed compile's build folder and a half-written compiler identity,
   * old: swept with their files; young, or only looking alike: left. */
  char bdir[600], bfile[700], young[600], alike[600], id[600];
  snprintf(bdir, sizeof bdir, "%s/.hk-build-aB3xY9", dir);
  snprintf(young, sizeof young, "%s/.hk-build-Qq1234", dir);
  snprintf(alike, sizeof alike, "%s/.hk-build-abc", dir);
  snprintf(id, sizeof id,
           "%s/.cc-0123456789abcdef0123456789abcdef.id.tmp-89abcdef", dir);
  CHECK(mkdir(bdir, 0700) == 0 && mkdir(young, 0700) == 0 &&
        mkdir(alike, 0700) == 0);
  snprintf(bfile, sizeof bfile, "%s/kernel.c", bdir);
  CHECK(write_file(bfile, "int x;", 6) == 0);
  snprintf(bfile, sizeof bfile, "%s/kernel.so", bdir);
  CHECK(write_file(bfile, "\177ELF", 4) == 0);
  CHECK(write_file(id, "gcc", 3) == 0);
  CHECK(utimensat(AT_FDCWD, bdir, ts, 0) == 0 &&
        utimensat(AT_FDCWD, alike, ts, 0) == 0 &&
        utimensat(AT_FDCWD, id, ts, 0) == 0);
  hk__cache_close(c);
  c = open_dir(dir, 0);
  if (!c) return;
  CHECK_INT_EQ(put_file(c, key, so, "m", err, sizeof err), 0);
  CHECK_MSG(!exists(bdir), "an old build folder stayed");
  CHECK_MSG(!exists(id), "an old identity temp file stayed");
  CHECK_MSG(exists(young), "a young build folder was removed");
  CHECK_MSG(exists(alike), "a folder that only looks like a build's was "
            "removed");
  /* clear takes the entry but not a young build folder: a compile may be
   * running in it (a clear beside one made it fail); an old one it takes */
  int kept = 0;
  CHECK_INT_EQ(hk__cache_clear(c, &kept, NULL), 1);
  CHECK_MSG(exists(young), "clear removed a young build folder");
  CHECK(utimensat(AT_FDCWD, young, ts, 0) == 0);
  CHECK_INT_EQ(hk__cache_clear(c, &kept, NULL), 1);
  CHECK_MSG(!exists(young), "clear left an old build folder");
  CHECK_MSG(exists(alike), "clear removed a look-alike");
  hk__cache_close(c);
}

/* Remembered failures: put and get the note; a damaged one is not one
 * (and removed); a new put replaces it; clear takes it; no entry is made. */
static void test_failures(void) {
  char dir[512], path[600], hex[65];
  snprintf(dir, sizeof dir, "%s/failures", g_tmp);
  hk_cache_t *c = open_dir(dir, 0);
  if (!c) return;
  uint8_t key[32], other[32];
  key_of(30, key);
  key_of(31, other);
  hku_diags d = HKU_DIAGS_INIT;
  char *note = NULL;
  CHECK_INT_EQ(hk__cache_get_failure(c, key, &note), HK_ENOTFOUND);
  CHECK(note == NULL);
  CHECK_INT_EQ(hk__cache_put_failure(c, key, "b.json:1:2: error: no\n", &d),
               HK_OK);
  CHECK_INT_EQ(hk__cache_get_failure(c, key, &note), HK_OK);
  CHECK_STR_EQ(note ? note : "", "b.json:1:2: error: no\n");
  free(note);
  CHECK_INT_EQ(hk__cache_get_failure(c, other, &note), HK_ENOTFOUND);
  expect_status(c, key, HK_CACHE_MISS); /* not an entry */
  CHECK_INT_EQ(count_temps(dir), 0);
  /* replaced */
  CHECK_INT_EQ(hk__cache_put_failure(c, key, "again", &d), HK_OK);
  CHECK_INT_EQ(hk__cache_get_failure(c, key, &note), HK_OK);
  CHECK_STR_EQ(note ? note : "", "again");
  free(note);
  /* damaged: a wrong magic, a NUL, too long; each removed */
  hk__hex(key, 32, hex);
  snprintf(path, sizeof path, "%s/%s.fail", dir, hex);
  static const struct {
    const char *bytes;
    size_t n;
  } bad[] = {{"HKFAIL2\nx", 9}, {"HKFAIL1\nx\0y", 11}, {"HKF", 3}};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    CHECK(write_file(path, bad[i].bytes, bad[i].n) == 0);
    CHECK_INT_EQ(hk__cache_get_failure(c, key, &note), HK_ENOTFOUND);
    CHECK_MSG(!exists(path), "damaged failure %zu not removed", i);
  }
  char *big = malloc(HK_CACHE_FAIL_MAX + 100);
  if (big) {
    memcpy(big, "HKFAIL1\n", 8);
    memset(big + 8, 'x', HK_CACHE_FAIL_MAX + 92);
    CHECK(write_file(path, big, HK_CACHE_FAIL_MAX + 100) == 0);
    CHECK_INT_EQ(hk__cache_get_failure(c, key, &note), HK_ENOTFOUND);
    /* a long note is cut to the bound when written */
    big[HK_CACHE_FAIL_MAX + 99] = '\0';
    CHECK_INT_EQ(hk__cache_put_failure(c, key, big + 8, &d), HK_OK);
    CHECK_INT_EQ(hk__cache_get_failure(c, key, &note), HK_OK);
    CHECK_INT_EQ(note ? strlen(note) : 0, HK_CACHE_FAIL_MAX);
    free(note);
    free(big);
  }
  int kept = 0;
  CHECK_INT_EQ(hk__cache_clear(c, &kept, NULL), 1);
  CHECK_INT_EQ(hk__cache_get_failure(c, key, &note), HK_ENOTFOUND);
  hku_diags_free(&d);
  hk__cache_close(c);
}

/* Real shared objects go through the cache and load from the fd: the
 * trailer does not bother the ELF loader. Two are loaded at once, each fd
 * kept open while its object is loaded (see hk__cache_get). Skipped
 * without cc. */
static void test_dlopen(void) {
  if (system("cc --version >/dev/null 2>&1") != 0) {
    printf("note: no cc command; the dlopen check is skipped\n");
    return;
  }
  char dir[512], err[512];
  snprintf(dir, sizeof dir, "%s/dl", g_tmp);
  hk_cache_t *c = open_dir(dir, 0);
  if (!c) return;
  for (int i = 0; i < 2; i++) {
    char src[512], so[512], cmd[1600], text[64];
    snprintf(src, sizeof src, "%s/k%d.c", g_tmp, i);
    snprintf(so, sizeof so, "%s/k%d.so", g_tmp, i);
    snprintf(text, sizeof text, "int hk_k(int x) { return %d * x; }\n", 3 + i);
    CHECK(write_file(src, text, strlen(text)) == 0);
    snprintf(cmd, sizeof cmd, "cc -O2 -fPIC -shared -nostdlib -o %s %s", so,
             src);
    if (system(cmd) != 0) {
      CHECK(!"cc failed");
      hk__cache_close(c);
      return;
    }
    uint8_t key[32];
    key_of(30 + i, key);
    CHECK_INT_EQ(put_file(c, key, so, "kernel hk_k", err, sizeof err), 0);
  }
  int fds[2];
  void *hs[2] = {NULL, NULL};
  for (int i = 0; i < 2; i++) {
    uint8_t key[32];
    key_of(30 + i, key);
    size_t esz = 0;
    int st = -1;
    char proc[64];
    fds[i] = hk__cache_get(c, key, &esz, NULL, &st);
    CHECK(fds[i] >= 0 && st == HK_CACHE_HIT);
    if (fds[i] < 0) continue;
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fds[i]);
    hs[i] = dlopen(proc, RTLD_NOW | RTLD_LOCAL);
    CHECK_MSG(hs[i] != NULL, "dlopen: %s", dlerror());
  }
  for (int i = 0; i < 2; i++) {
    if (!hs[i]) continue;
    int (*k)(int) = (int (*)(int))(uintptr_t)dlsym(hs[i], "hk_k");
    CHECK(k != NULL && k(14) == 14 * (3 + i));
    dlclose(hs[i]);
  }
  for (int i = 0; i < 2; i++)
    if (fds[i] >= 0) close(fds[i]);
  hk__cache_close(c);
}

int main(void) {
  if (!mkdtemp(g_tmp)) CHECK_SKIP("mkdtemp failed");
  test_open();
  test_default_dir();
  test_put_get();
  test_corrupt();
  test_race();
  test_list_clear();
  test_sweep();
  test_failures();
  test_dlopen();
  char cmd[600];
  snprintf(cmd, sizeof cmd, "chmod -R u+rwx %s; rm -rf %s", g_tmp, g_tmp);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_tmp);
  CHECK_DONE();
}
