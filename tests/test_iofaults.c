/* test_iofaults.c — I/O faults and SIGKILL against the disk cache
 * (core/cache.c) and the registry that uses it (core/opt.c).
 *
 * hk's own system calls on the cache folder are wrapped at link time
 * (-Wl,--wrap=write,..., tests/CMakeLists.txt): a call fails, or is cut
 * short, only when its descriptor is the cache folder or a file in it
 * (/proc/self/fd says), so the compiler, the plugin folder and the test's
 * own files are never touched.
 *
 *  1. every call, in turn: for each kind of fault (a write that finds the
 *     disk full or the quota spent or fails, a short write or read, a read
 *     that fails, fsync and close failing, openat refused or out of
 *     descriptors, rename and link refused (a link refused: the copy
 *     fallback), unlink refused, fstat failing) the Nth such call of a
 *     scenario fails, for N = 1, 2, ... until a run makes no Nth call. The
 *     scenario stores an object under one key and another under three (a
 *     batch's hard links), then reads the four back and a damaged entry
 *     (which it removes). Every put ends in
 *     HK_OK or HK_EIO naming the cause; afterwards, with no fault, a key is
 *     a hit with exactly its bytes or a miss, never a damaged entry (so
 *     nothing half-written was published); a put that said HK_OK is a hit;
 *     no temp file is left (unless unlinking was what failed); no
 *     descriptor is leaked.
 *  2. a context under lasting faults: the disk full for every cache write,
 *     every read of an entry failing, the folder refusing to open files,
 *     renames failing. The kernel still reaches tier opt (loaded from the
 *     checked object itself) and computes what the stdlib does; the log
 *     says why the cache was not used; nothing is left in the folder but
 *     whole entries. With the disk full for the compiler's files too, the
 *     kernel stays on tier jit, computes right, and its note says why.
 *  3. SIGKILL: a child process (this program) is killed in the middle of
 *     writing a cache entry, in the middle of writing the compiler's
 *     identity, while the compiler builds (a build folder in the cache),
 *     and between publishing the entries of one batch. The next start finds
 *     no damaged entry, loads nothing half-written, reaches tier opt and
 *     computes right; what the killed process left is removed by the first
 *     put once it is old (HK_CACHE_TEMP_AGE).
 * `test_iofaults --kill-child WHERE DIR CACHE` is the child of part 3.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cache.h"
#include "sha256.h"
#include "registry_fixture.h"

ssize_t __real_write(int fd, const void *p, size_t n);
ssize_t __real_pread(int fd, void *p, size_t n, off_t off);
int __real_fsync(int fd);
int __real_close(int fd);
int __real_openat(int dfd, const char *path, int flags, ...);
int __real_renameat(int od, const char *o, int nd, const char *n);
int __real_linkat(int od, const char *o, int nd, const char *n, int flags);
int __real_unlinkat(int dfd, const char *path, int flags);
int __real_fstat(int fd, struct stat *st);
pid_t __real_waitpid(pid_t pid, int *status, int options);
ssize_t __wrap_write(int fd, const void *p, size_t n);
ssize_t __wrap_pread(int fd, void *p, size_t n, off_t off);
int __wrap_fsync(int fd);
int __wrap_close(int fd);
int __wrap_openat(int dfd, const char *path, int flags, ...);
int __wrap_renameat(int od, const char *o, int nd, const char *n);
int __wrap_linkat(int od, const char *o, int nd, const char *n, int flags);
int __wrap_unlinkat(int dfd, const char *path, int flags);
int __wrap_fstat(int fd, struct stat *st);
pid_t __wrap_waitpid(pid_t pid, int *status, int options);

/* ---- The faults --------------------------------------------------------- */

typedef enum {
  C_NONE, C_WRITE, C_PREAD, C_FSYNC, C_CLOSE, C_OPENAT, C_RENAMEAT,
  C_LINKAT, C_UNLINKAT, C_FSTAT
} call_t;

typedef struct {
  const char *what;
  call_t call;
  int err;   /* errno of the failure; 0: the call is cut short instead */
} fault_t;

static const fault_t faults[] = {
    {"write: no space left (ENOSPC)", C_WRITE, ENOSPC},
    {"write: quota exceeded (EDQUOT)", C_WRITE, EDQUOT},
    {"write: I/O error (EIO)", C_WRITE, EIO},
    {"write: short (7 bytes at most)", C_WRITE, 0},
    {"pread: I/O error (EIO)", C_PREAD, EIO},
    {"pread: short (5 bytes at most)", C_PREAD, 0},
    {"fsync: I/O error (EIO)", C_FSYNC, EIO},
    {"close: I/O error after closing (as NFS reports)", C_CLOSE, EIO},
    {"openat: permission denied (EACCES)", C_OPENAT, EACCES},
    {"openat: no space left (ENOSPC)", C_OPENAT, ENOSPC},
    {"openat: too many open files (EMFILE)", C_OPENAT, EMFILE},
    {"renameat: no space left (ENOSPC)", C_RENAMEAT, ENOSPC},
    {"renameat: permission denied (EACCES)", C_RENAMEAT, EACCES},
    {"linkat: too many links (EMLINK: the copy fallback)", C_LINKAT, EMLINK},
    {"linkat: not permitted (EPERM: the copy fallback)", C_LINKAT, EPERM},
    {"unlinkat: permission denied (EACCES)", C_UNLINKAT, EACCES},
    {"fstat: I/O error (EIO)", C_FSTAT, EIO},
};

/* What is armed: calls of kind g_call on the folder g_dir fail (or are cut
 * short) as g_err says: the g_at-th of them, or every one when g_at < 0. */
static char g_dir[4200]; /* the cache folder, as /proc/self/fd shows it */
static _Atomic int g_call = C_NONE;
static _Atomic int g_err;
static _Atomic long g_at;
static _Atomic long g_seen;  /* calls of kind g_call on the folder */
static _Atomic long g_fired; /* faults injected since arming */
static long g_total;         /* faults injected by the whole test */

static _Atomic int g_deep; /* files in the folder's subfolders too */

/* Part 3's kill points: SIGKILL half-way through the first write of a
 * cache entry's temp file or of the compiler identity's, at the wait for
 * the compiler while a kernel is being built, or just after the first
 * rename in the folder. */
enum { KILL_NONE, KILL_WRITE, KILL_IDENTITY, KILL_COMPILE, KILL_RENAME };
static _Atomic int g_kill = KILL_NONE;

/* The path fd refers to, in path (cap bytes): its length, or 0. */
static size_t fd_path(int fd, char *path, size_t cap) {
  char link[64];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, path, cap - 1);
  if (n <= 0) return 0;
  path[n] = '\0';
  return (size_t)n;
}

/* Does fd refer to the folder (dir_itself) or a file in it (or deeper,
 * with g_deep)? */
static int in_dir(int fd, int dir_itself) {
  char path[4200];
  if (!g_dir[0] || fd < 0 || !fd_path(fd, path, sizeof path)) return 0;
  size_t l = strlen(g_dir);
  if (dir_itself) return strcmp(path, g_dir) == 0;
  return strncmp(path, g_dir, l) == 0 && path[l] == '/' &&
         (atomic_load(&g_deep) || !strchr(path + l + 1, '/'));
}

/* Is fd a file in the folder whose name starts with prefix? */
static int is_file(int fd, const char *prefix) {
  char path[4200];
  if (!in_dir(fd, 0) || !fd_path(fd, path, sizeof path)) return 0;
  const char *base = strrchr(path, '/') + 1;
  return strncmp(base, prefix, strlen(prefix)) == 0;
}

/* Is a kernel being built (a build folder in the cache folder)? */
static int building(void) {
  DIR *d = opendir(g_dir);
  if (!d) return 0;
  struct dirent *de;
  int found = 0;
  while (!found && (de = readdir(d)) != NULL)
    found = !strncmp(de->d_name, ".hk-build-", 10);
  closedir(d);
  return found;
}

/* Is this call (kind c on fd: the folder itself when dir_itself is 1, a
 * file in it when 0, either when 2) the one to fail? Counts it. */
static int hit(call_t c, int fd, int dir_itself) {
  if (atomic_load(&g_call) != (int)c) return 0;
  if (dir_itself == 2 ? !in_dir(fd, 0) && !in_dir(fd, 1)
                      : !in_dir(fd, dir_itself))
    return 0;
  long seen = atomic_fetch_add(&g_seen, 1) + 1, at = atomic_load(&g_at);
  if (at >= 0 && seen != at) return 0;
  atomic_fetch_add(&g_fired, 1);
  return 1;
}

static void arm(call_t c, int err, long at) {
  atomic_store(&g_deep, 0);
  atomic_store(&g_seen, 0);
  atomic_store(&g_fired, 0);
  atomic_store(&g_err, err);
  atomic_store(&g_at, at);
  atomic_store(&g_call, (int)c);
}

/* Disarms; returns the number of faults injected. */
static long disarm(void) {
  atomic_store(&g_call, C_NONE);
  long n = atomic_load(&g_fired);
  g_total += n;
  return n;
}

static int fail_with(void) {
  errno = atomic_load(&g_err);
  return -1;
}

ssize_t __wrap_write(int fd, const void *p, size_t n) {
  int k = atomic_load(&g_kill);
  if ((k == KILL_WRITE && is_file(fd, ".hk-")) ||
      (k == KILL_IDENTITY && is_file(fd, ".cc-"))) {
    (void)__real_write(fd, p, n / 2);
    raise(SIGKILL);
  }
  if (hit(C_WRITE, fd, 0)) {
    if (!atomic_load(&g_err)) return __real_write(fd, p, n < 7 ? n : 7);
    return fail_with();
  }
  return __real_write(fd, p, n);
}

ssize_t __wrap_pread(int fd, void *p, size_t n, off_t off) {
  if (hit(C_PREAD, fd, 0)) {
    if (!atomic_load(&g_err)) return __real_pread(fd, p, n < 5 ? n : 5, off);
    return fail_with();
  }
  return __real_pread(fd, p, n, off);
}

int __wrap_fsync(int fd) {
  return hit(C_FSYNC, fd, 2) ? fail_with() : __real_fsync(fd);
}

int __wrap_close(int fd) {
  int h = hit(C_CLOSE, fd, 0);
  int rc = __real_close(fd); /* closed either way, as close(2) does */
  return h ? fail_with() : rc;
}

int __wrap_openat(int dfd, const char *path, int flags, ...) {
  mode_t mode = 0;
  if (flags & (O_CREAT | __O_TMPFILE)) {
    va_list ap;
    va_start(ap, flags);
    mode = va_arg(ap, mode_t);
    va_end(ap);
  }
  if (hit(C_OPENAT, dfd, 1)) return fail_with();
  return __real_openat(dfd, path, flags, mode);
}

int __wrap_renameat(int od, const char *o, int nd, const char *n) {
  if (hit(C_RENAMEAT, od, 1)) return fail_with();
  int rc = __real_renameat(od, o, nd, n);
  if (rc == 0 && atomic_load(&g_kill) == KILL_RENAME && in_dir(od, 1))
    raise(SIGKILL);
  return rc;
}

int __wrap_linkat(int od, const char *o, int nd, const char *n, int flags) {
  return hit(C_LINKAT, od, 1) ? fail_with()
                              : __real_linkat(od, o, nd, n, flags);
}

int __wrap_unlinkat(int dfd, const char *path, int flags) {
  return hit(C_UNLINKAT, dfd, 1) ? fail_with()
                                 : __real_unlinkat(dfd, path, flags);
}

int __wrap_fstat(int fd, struct stat *st) {
  return hit(C_FSTAT, fd, 0) ? fail_with() : __real_fstat(fd, st);
}

pid_t __wrap_waitpid(pid_t pid, int *status, int options) {
  if (atomic_load(&g_kill) == KILL_COMPILE && building()) raise(SIGKILL);
  return __real_waitpid(pid, status, options);
}

/* ---- Helpers ------------------------------------------------------------ */

/* Makes dir empty and points the faults at it. */
static void fresh_dir(const char *dir) {
  check_rm_rf(dir);
  check_make_dir(dir);
  char *r = realpath(dir, NULL);
  CHECK_MSG(r != NULL, "realpath(%s)", dir);
  snprintf(g_dir, sizeof g_dir, "%s", r ? r : dir);
  free(r);
}

/* A leftover of hk's work in a cache folder: a temp file (.hk-*.tmp), a
 * build folder (.hk-build-*), an identity being written (.cc-*.tmp-*). */
static int is_leftover(const char *name) {
  return !strncmp(name, ".hk-", 4) ||
         (!strncmp(name, ".cc-", 4) && strstr(name, ".tmp-"));
}

/* Files in dir: entries (<hex>.so) and leftovers. */
static void count_files(const char *dir, int *entries, int *temps) {
  *entries = *temps = 0;
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    size_t l = strlen(de->d_name);
    if (l == 67 && !strcmp(de->d_name + 64, ".so")) ++*entries;
    if (is_leftover(de->d_name)) ++*temps;
  }
  closedir(d);
}

/* Makes every leftover in dir two hours old. */
static void age_leftovers(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct timespec ts[2] = {{time(NULL) - 2 * 3600, 0},
                           {time(NULL) - 2 * 3600, 0}};
  struct dirent *de;
  while ((de = readdir(d)) != NULL)
    if (is_leftover(de->d_name))
      CHECK(utimensat(dirfd(d), de->d_name, ts, AT_SYMLINK_NOFOLLOW) == 0);
  closedir(d);
}

static int open_fds(void) {
  int n = 0;
  DIR *d = opendir("/proc/self/fd");
  if (!d) return -1;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) n += de->d_name[0] != '.';
  closedir(d);
  return n;
}

static hk_cache_t *open_cache(const char *dir) {
  hk_cache_t *c = NULL;
  hku_diags d = HKU_DIAGS_INIT;
  int rc = hk__cache_open(dir, 0, &c, &d);
  CHECK_MSG(rc == HK_OK, "cannot open the cache %s: %s", dir,
            hku_diags_words(&d, "?"));
  hku_diags_free(&d);
  return c;
}

/* hk__cache_list's callback: counts entries and valid ones. */
static void count_valid(void *ctx, const char *path, size_t size,
                        time_t mtime, const char *meta, int valid) {
  (void)path, (void)size, (void)mtime, (void)meta;
  int *v = ctx;
  v[0]++;
  v[1] += valid != 0;
}

/* The number of valid entries in the cache folder dir. */
static int valid_entries(const char *dir) {
  int v[2] = {0, 0};
  hk_cache_t *c = open_cache(dir);
  if (c) {
    hk__cache_list(c, count_valid, v);
    hk__cache_close(c);
  }
  return v[1];
}

/* ---- 1. Every call in turn ------------------------------------------------ */

enum { NKEYS = 4, SZ1 = 5000, SZ2 = 70000 /* more than one read chunk */ };
static uint8_t g_keys[NKEYS + 1][32]; /* the last: a damaged entry */
static uint8_t g_d1[SZ1], g_d2[SZ2];

/* The bytes key k's entry must hold. */
static const uint8_t *want_of(int k, size_t *n) {
  *n = k == 0 ? SZ1 : SZ2;
  return k == 0 ? g_d1 : g_d2;
}

/* Looks key k up: its status, and whether a hit held exactly its bytes. */
static int lookup(hk_cache_t *c, int k, int *right) {
  size_t esz = 0, n;
  int status = -1;
  const uint8_t *want = want_of(k, &n);
  int fd = hk__cache_get(c, g_keys[k], &esz, NULL, &status);
  *right = 0;
  if (fd >= 0) {
    uint8_t *got = malloc(esz ? esz : 1);
    *right = got && esz == n && __real_pread(fd, got, n, 0) == (ssize_t)n &&
             memcmp(got, want, n) == 0;
    free(got);
    __real_close(fd);
  }
  return status;
}

/* A put's result: HK_OK, or HK_EIO whose message names the folder and,
 * for a failed call, its cause. */
static void check_put(int rc, hku_diags *d, const fault_t *f, long at,
                      const char *which) {
  CHECK_MSG(rc == HK_OK || rc == HK_EIO, "%s, call %ld: %s gave %d", f->what,
            at, which, rc);
  if (rc != HK_OK) {
    const char *msg = hku_diags_words(d, "");
    CHECK_MSG(strstr(msg, g_dir) != NULL || d->n > 0,
              "%s, call %ld: %s failed without saying where", f->what, at,
              which);
    if (f->err)
      CHECK_MSG(strstr(msg, strerror(f->err)) != NULL,
                "%s, call %ld: %s says '%s', not why", f->what, at, which,
                msg);
  }
}

/* One run with the at-th call of f's kind failing; whether it was made. */
static int every_call_run(const fault_t *f, long at) {
  PATH(dir, "every/cache");
  fresh_dir(dir);
  hk_cache_t *c = open_cache(dir);
  if (!c) return 0;
  int fds = open_fds();
  hku_diags d1 = HKU_DIAGS_INIT, d2 = HKU_DIAGS_INIT;
  int removed[NKEYS] = {0}, right;
  /* a damaged entry, which the lookup under faults removes */
  char damaged[4300], hex[65];
  hk__hex(g_keys[NKEYS], 32, hex);
  snprintf(damaged, sizeof damaged, "%s/%s.so", dir, hex);
  write_text(damaged, "not an entry");

  arm(f->call, f->err, at);
  int rc1 = hk__cache_put(c, g_keys[0], g_d1, SZ1, "one", &d1);
  int rc2 = hk__cache_put_keys(c, (const uint8_t(*)[32])g_keys + 1, 3, g_d2,
                               SZ2, "batch of three", &d2);
  for (int k = 0; k < NKEYS; k++) {
    int s = lookup(c, k, &right);
    CHECK_MSG(s != HK_CACHE_HIT || right,
              "%s, call %ld: key %d hit with other bytes", f->what, at, k);
    removed[k] = s == HK_CACHE_CORRUPT;
  }
  size_t esz;
  int st = -1, fd = hk__cache_get(c, g_keys[NKEYS], &esz, NULL, &st);
  CHECK_MSG(fd < 0 && st != HK_CACHE_HIT, "%s, call %ld: a damaged entry "
            "hit", f->what, at);
  if (fd >= 0) __real_close(fd);
  int fired = disarm() > 0;

  check_put(rc1, &d1, f, at, "put");
  check_put(rc2, &d2, f, at, "put of three keys");
  if (!fired)
    CHECK_MSG(rc1 == HK_OK && rc2 == HK_OK, "%s: puts failed with no fault",
              f->what);
  for (int k = 0; k < NKEYS; k++) {
    int s = lookup(c, k, &right);
    CHECK_MSG(s != HK_CACHE_CORRUPT,
              "%s, call %ld: key %d's entry is damaged (a partial write was "
              "published)", f->what, at, k);
    CHECK_MSG(s != HK_CACHE_HIT || right,
              "%s, call %ld: key %d holds other bytes", f->what, at, k);
    if ((k == 0 ? rc1 : rc2) == HK_OK && !removed[k])
      CHECK_MSG(s == HK_CACHE_HIT, "%s, call %ld: key %d was stored but is "
                "a miss", f->what, at, k);
  }
  /* the damaged entry: removed, or still refused */
  fd = hk__cache_get(c, g_keys[NKEYS], &esz, NULL, &st);
  CHECK_MSG(fd < 0 && st != HK_CACHE_HIT, "%s, call %ld: a damaged entry hit",
            f->what, at);
  if (fd >= 0) __real_close(fd);
  if (f->call != C_UNLINKAT)
    CHECK_MSG(access(damaged, F_OK) != 0, "%s, call %ld: the damaged entry "
              "stayed", f->what, at);
  int entries, temps;
  count_files(dir, &entries, &temps);
  if (f->call != C_UNLINKAT)
    CHECK_MSG(temps == 0, "%s, call %ld: %d temp files left", f->what, at,
              temps);
  CHECK_MSG(open_fds() == fds, "%s, call %ld: %d descriptors before, %d "
            "after", f->what, at, fds, open_fds());
  hku_diags_free(&d1);
  hku_diags_free(&d2);
  hk__cache_close(c);
  return fired;
}

static void test_every_call(void) {
  check_make_dir(P("every"));
  uint64_t s = 0x9e3779b97f4a7c15u;
  for (int k = 0; k <= NKEYS; k++)
    for (int i = 0; i < 32; i++) g_keys[k][i] = (uint8_t)rnd(&s);
  for (size_t i = 0; i < SZ1; i++) g_d1[i] = (uint8_t)rnd(&s);
  for (size_t i = 0; i < SZ2; i++) g_d2[i] = (uint8_t)rnd(&s);
  long runs = 0;
  for (size_t i = 0; i < COUNT(faults); i++) {
    long at = 1;
    while (at < 500 && every_call_run(&faults[i], at)) at++;
    CHECK_MSG(at > 1, "%s: the scenario makes no such call", faults[i].what);
    if (g_verbose) printf("  %s: %ld calls\n", faults[i].what, at - 1);
    runs += at - 1;
  }
  printf("every call: %ld faults injected, one per run, over %zu kinds\n",
         runs, COUNT(faults));
}

/* ---- 2. A context under lasting faults ---------------------------------- */

static const char kernel_json[] =
    "{\"schema_version\": 1, \"name\": \"io_scale\", \"kind\": "
    "\"elementwise\",\n"
    " \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},\n"
    "            {\"name\": \"alpha\", \"type\": \"f32\", \"role\": \"scalar\"},\n"
    "            {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\"}],\n"
    " \"body\": \"out = x * alpha;\"}\n";

static const size_t few[] = {0, 7, 1000, 65536 + 3};

/* A context on the plugin folder dir and cache; name reaches tier opt and
 * computes right. */
static void reaches_opt(const char *dir, const char *cache, const char *name,
                        const char *what) {
  hk_context_t *c = mkctx_logged(HK_TIER_AUTO, dir, cache);
  hk_kernel_t *k = c ? find(c, name) : NULL;
  if (k) {
    int rc = hk_kernel_wait_opt(k);
    CHECK_MSG(rc == HK_OK, "%s: %s did not reach tier opt (%d): %s", what,
              name, rc, note_of(k));
    CHECK_MSG(hk_kernel_tier(k) == HK_TIER_OPT, "%s: %s is on tier %d", what,
              name, (int)hk_kernel_tier(k));
    CHECK_MSG(check_op(what, k, OP_SCALE, HK_F32, few, COUNT(few)) == 0,
              "%s: %s computes wrong", what, name);
  }
  hk_context_destroy(c);
}

static const struct {
  const char *what;
  call_t call;
  int err;
  const char *log; /* what the log must say */
  int says_errno;  /* and the errno's words */
  int entries;     /* entries left when the fault lasted the whole run */
} lasting[] = {
    {"every cache write: no space left", C_WRITE, ENOSPC,
     "cannot store in the disk cache", 1, 0},
    {"every read of an entry fails", C_PREAD, EIO,
     "damaged disk cache entry was removed", 0, 0},
    {"the folder refuses to open files", C_OPENAT, EACCES,
     "cannot store in the disk cache", 1, 0},
    {"every rename fails", C_RENAMEAT, EIO, "cannot store in the disk cache",
     1, 0},
};

static void test_lasting(void) {
  if (!g_have_cc) {
    printf("NOTE: no system compiler 'cc': the context faults are skipped\n");
    return;
  }
  PATH(dir, "lasting/plugins");
  PATH(cache, "lasting/cache");
  check_make_dir(P("lasting"));
  check_make_dir(dir);
  write_text(P("lasting/plugins/io.json"), kernel_json);
  for (size_t i = 0; i < COUNT(lasting); i++) {
    fresh_dir(cache);
    /* reads fail only once there is an entry to read */
    if (lasting[i].call == C_PREAD)
      reaches_opt(dir, cache, "io_scale", "before the read faults");
    check_log_clear();
    arm(lasting[i].call, lasting[i].err, -1);
    reaches_opt(dir, cache, "io_scale", lasting[i].what);
    long n = disarm();
    CHECK_MSG(n > 0, "%s: no fault was injected", lasting[i].what);
    CHECK_MSG(check_log_has(lasting[i].log), "%s: the log does not say '%s':\n%s",
              lasting[i].what, lasting[i].log, check_log_text());
    if (lasting[i].says_errno)
      CHECK_MSG(check_log_has(strerror(lasting[i].err)),
                "%s: the log does not say '%s':\n%s", lasting[i].what,
                strerror(lasting[i].err), check_log_text());
    int entries, temps;
    count_files(cache, &entries, &temps);
    CHECK_MSG(entries == lasting[i].entries && temps == 0,
              "%s: %d entries and %d temp files left", lasting[i].what,
              entries, temps);
    /* and without faults the cache works again */
    reaches_opt(dir, cache, "io_scale", "after the faults");
    count_files(cache, &entries, &temps);
    CHECK_MSG(entries == 1 && temps == 0, "%s, then none: %d entries, %d temp "
              "files", lasting[i].what, entries, temps);
  }
}

/* The disk full for the compiler's files too: tier opt cannot be built, so
 * the kernel stays on tier jit, computes right, and its note says why. */
static void test_disk_full(void) {
  if (!g_have_cc) return;
  PATH(dir, "lasting/plugins");
  PATH(cache, "lasting/cache");
  fresh_dir(cache);
  arm(C_WRITE, ENOSPC, -1);
  atomic_store(&g_deep, 1);
  hk_context_t *c = mkctx_logged(HK_TIER_AUTO, dir, cache);
  hk_kernel_t *k = c ? find(c, "io_scale") : NULL;
  if (k) {
    CHECK(hk_kernel_wait_opt(k) != HK_OK);
    CHECK_INT_EQ(hk_kernel_tier(k), HK_TIER_JIT);
    CHECK_CONTAINS(note_of(k), strerror(ENOSPC));
    CHECK(check_op("disk full: tier jit", k, OP_SCALE, HK_F32, few,
                   COUNT(few)) == 0);
  }
  hk_context_destroy(c);
  CHECK(disarm() > 0);
  int entries, temps;
  count_files(cache, &entries, &temps);
  CHECK_MSG(entries == 0 && temps == 0, "disk full: %d entries and %d "
            "leftovers", entries, temps);
}

/* ---- 3. SIGKILL ----------------------------------------------------------- */

static int kill_child(const char *where, const char *dir, const char *cache) {
  if (fixture_data() != 0) return 1;
  if (!strcmp(where, "write")) g_kill = KILL_WRITE;
  else if (!strcmp(where, "identity")) g_kill = KILL_IDENTITY;
  else if (!strcmp(where, "compile")) g_kill = KILL_COMPILE;
  else if (!strcmp(where, "rename")) g_kill = KILL_RENAME;
  else return 2;
  /* one CPU: both files in one batch, one compiler run */
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(sched_getcpu() >= 0 ? sched_getcpu() : 0, &one);
  (void)sched_setaffinity(0, sizeof one, &one);
  char *r = realpath(cache, NULL);
  snprintf(g_dir, sizeof g_dir, "%s", r ? r : cache);
  free(r);
  hk_context_t *ctx = mkctx(HK_TIER_AUTO, dir, cache, 0, NULL);
  hk_kernel_t *k = ctx ? find(ctx, "io_scale") : NULL;
  if (k) (void)hk_kernel_wait_opt(k);
  return 3; /* should have been killed */
}

static const struct {
  const char *where, *what;
  int entries, temps; /* what the kill leaves in the cache */
} kills[] = {
    {"write", "in the middle of writing a cache entry", 0, 1},
    {"identity", "in the middle of writing the compiler's identity", 0, 1},
    {"compile", "while the compiler builds the kernels", 0, 1},
    {"rename", "between publishing the entries of one batch", 1, 1},
};

static void test_kill(void) {
  if (!g_have_cc) {
    printf("NOTE: no system compiler 'cc': the SIGKILL tests are skipped\n");
    return;
  }
  PATH(dir, "kill/plugins");
  PATH(cache, "kill/cache");
  PATH(tmp, "kill/tmp");
  check_make_dir(P("kill"));
  check_make_dir(dir);
  write_text(P("kill/plugins/io.json"), kernel_json);
  char second[sizeof kernel_json + 8];
  snprintf(second, sizeof second, "%s", kernel_json);
  char *at = strstr(second, "io_scale");
  if (at) memcpy(at, "io_scal2", 8);
  write_text(P("kill/plugins/io2.json"), second);
  for (size_t i = 0; i < COUNT(kills); i++) {
    fresh_dir(cache);
    check_rm_rf(tmp);
    check_make_dir(tmp);
    /* the compiler's temp folder: inside the test's tree */
    char *old_tmp = getenv("TMPDIR") ? strdup(getenv("TMPDIR")) : NULL;
    setenv("TMPDIR", tmp, 1);
    char log[4200];
    snprintf(log, sizeof log, "%s/kill_%s.log", g_root, kills[i].where);
    char *argv[] = {g_self, "--kill-child", (char *)kills[i].where, dir,
                    cache, NULL};
    pid_t pid = spawn(argv, log, -1);
    if (old_tmp) setenv("TMPDIR", old_tmp, 1);
    else unsetenv("TMPDIR");
    free(old_tmp);
    CHECK_MSG(pid > 0, "cannot start %s", g_self);
    if (pid <= 0) continue;
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    int killed = WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL;
    CHECK_MSG(killed, "killed %s: the child was not killed (status %#x)",
              kills[i].what, st);
    if (!killed) print_log(log);
    int entries, temps;
    count_files(cache, &entries, &temps);
    CHECK_MSG(entries == kills[i].entries && temps == kills[i].temps,
              "killed %s: %d entries and %d temp files (expected %d and %d)",
              kills[i].what, entries, temps, kills[i].entries,
              kills[i].temps);
    /* what was published is whole */
    CHECK_MSG(valid_entries(cache) == entries, "killed %s: a damaged entry",
              kills[i].what);
    char what[256];
    snprintf(what, sizeof what, "the start after a kill %s", kills[i].what);
    reaches_opt(dir, cache, "io_scale", what);
    reaches_opt(dir, cache, "io_scal2", what);
    int after;
    count_files(cache, &after, &temps);
    CHECK_MSG(after == 2, "%s: %d entries", what, after);
    CHECK_MSG(valid_entries(cache) == 2, "%s: a damaged entry", what);
    /* the leftovers are fresh: they stay until they are old, then the
     * first put of a start removes them */
    CHECK_MSG(temps == kills[i].temps, "%s: %d leftovers, expected %d", what,
              temps, kills[i].temps);
    age_leftovers(cache);
    hk_cache_t *c = open_cache(cache);
    hku_diags d = HKU_DIAGS_INIT;
    uint8_t key[32] = {1}, obj[16] = {2};
    if (c) CHECK_INT_EQ(hk__cache_put(c, key, obj, sizeof obj, "", &d), HK_OK);
    hku_diags_free(&d);
    hk__cache_close(c);
    count_files(cache, &after, &temps);
    CHECK_MSG(temps == 0, "%s: %d old leftovers not swept", what, temps);
    if (g_verbose) {
      char cmd[8500];
      snprintf(cmd, sizeof cmd, "ls -la %s %s", cache, tmp);
      if (system(cmd) != 0) printf("(ls failed)\n");
    }
  }
}

int main(int argc, char **argv) {
  umask(022);
  if (argc == 5 && !strcmp(argv[1], "--kill-child"))
    return kill_child(argv[2], argv[3], argv[4]);
  const char *why = fixture_setup("iofaults");
  if (why) CHECK_SKIP("%s", why);
  PART("every call", test_every_call());
  PART("lasting faults", test_lasting());
  PART("disk full", test_disk_full());
  PART("SIGKILL", test_kill());
  printf("%ld faults injected in all\n", g_total);
  fixture_teardown();
  CHECK_DONE();
}
