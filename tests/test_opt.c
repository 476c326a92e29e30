/* test_opt.c — tier opt (core/opt.c, core/compiler_cc.c), its worker and the disk cache
 * (core/cache.c) as the registry uses them, through the public API.
 *
 *  1. tier auto: jit first, opt after hk_kernel_wait_opt on the same
 *     handle; a second context takes opt from the disk cache at once; no
 *     usable cache folder; no system compiler (options.cc, HK_CC): jit
 *     stays, a note says why, and forced tier opt refuses the file.
 *  2. the disk cache: miss, hit (the entry is not rewritten), damaged
 *     entries (truncated; bytes altered in the image and in the trailer; a
 *     byte appended; a valid entry of other code, another file's or an
 *     earlier version's) never used but rebuilt, and two, then eight
 *     processes (this program, spawned) racing into one empty cache
 *     (HK_RACE_ROUNDS rounds; 1 unless set).
 *  3. shared objects: contexts sharing one cache entry, destroyed in turn.
 *  4. what compilers synthesise: sin and cos of one argument (f32, f64),
 *     which gcc and clang merge into sincosf/sincos, and loops they turn
 *     into memset/memmove reach tier opt (auto and forced) with HK_CC=gcc
 *     and HK_CC=clang (each skipped with a note when missing), and compute
 *     what tier jit computes, bit for bit. An object that is refused (a
 *     compiler that adds a call to puts) is said: forced tier opt fails
 *     with the reason; tier auto stays on jit, and the reason is in the
 *     note, in hk_kernel_wait_opt's error and in the log.
 *  5. batches: a folder of kernel files reaches tier opt in batches (the
 *     process pinned to two CPUs: two compiler runs), one of which holds a
 *     file the system compiler rejects (a wrapper of cc reports an error
 *     on one line of its body, as gcc would; libtcc is fine with it): the
 *     others all reach tier opt and compute what jit computes, it
 *     stays on jit with the compiler's complaint in its note; the cache
 *     holds one entry per good file, and files of one batch share one
 *     object (one inode); a second context takes them all at once, and the
 *     failed file's failure was remembered (no compile: its note says so);
 *     a file that changes is the only one built again; hk cache clear
 *     forgets the failure.
 *  6. "fp" modes and signed overflow: the flags each mode is built with
 *     (a compiler that logs its arguments): strict kernels -fwrapv and no
 *     contraction, "fp": "fast" contraction, reassociation and no -fwrapv
 *     (int index loops vectorise), but no reassociation for a kernel that
 *     calls exp (close to strict); a fast raw dot product on tier opt
 *     differs from the strict one in the last bits (it was vectorised),
 *     while the strict one on tier opt equals tier jit bit for bit; a bad
 *     "fp" is a located error. A for loop's int counter is 64 bits wide on
 *     both tiers, in both modes.
 *  7. big files in parts: a file of 32 instances reaches tier opt as 8
 *     parts compiled by 2 processes (HK_JOBS=2) and linked, and computes
 *     the same; with HK_JOBS=1 it is one compile; a part the compiler
 *     rejects makes the file compile whole again, whose error is located
 *     in the kernel file; in a folder on tier auto it is built in parts,
 *     not in a batch; hk build compiles both copies of a portable plugin
 *     in parts, and the object loads with both. Under HK_TEST_JIT_ONLY
 *     (the sanitizer suites) the first build alone.
 * `test_opt --race-child DIR CACHE` is the child process of part 2 (the
 * test spawns itself). The temp tree and the helpers:
 * tests/registry_fixture.h.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <sched.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cache.h"
#include "check.h"
#include "elfcheck.h"
#include "hk.h"
#include "registry_fixture.h"

/* ---- 1. Tier auto, and no system compiler -------------------------------------- */

static int cache_entries(const char *dir, char *path, size_t n);

static const char auto_json[] =
    "{\"schema_version\": 1, \"kernels\": [\n"
    " {\"name\": \"a_scale\", \"kind\": \"elementwise\",\n"
    "  \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},\n"
    "             {\"name\": \"alpha\", \"type\": \"f32\", \"role\": \"scalar\"},\n"
    "             {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\"}],\n"
    "  \"body\": \"out = x * alpha;\"},\n"
    " {\"name\": \"a_mean\", \"kind\": \"reduction\",\n"
    "  \"params\": [{\"name\": \"x\", \"type\": \"f64\", \"role\": \"in\"},\n"
    "             {\"name\": \"out\", \"type\": \"f64\", \"role\": \"out\"}],\n"
    "  \"map\": \"x\", \"combine\": \"a + b\", \"identity\": \"0\",\n"
    "  \"finalize\": \"acc / (double)n\"}]}\n";

static void test_auto(void) {
  check_make_dir(P("auto"));
  write_text(P("auto/auto.json"), auto_json);
  check_make_dir(P("cache_auto"));
  if (g_have_cc) {
    hk_context_t *c1 = mkctx(HK_TIER_AUTO, P("auto"), P("cache_auto"), 0, NULL);
    hk_kernel_t *k = c1 ? find(c1, "a_scale") : NULL;
    hk_kernel_t *m = c1 ? find(c1, "a_mean") : NULL;
    if (k && m) {
      /* a fresh cache: jit at once, opt compiling (unless it already
       * ended: then the tier is opt) */
      char note[512];
      hk_kernel_note(k, note, sizeof note);
      hk_tier_t t0 = hk_kernel_tier(k);
      CHECK_MSG((t0 == HK_TIER_JIT && strstr(note, "compiling")) ||
                    t0 == HK_TIER_OPT,
                "tier %s, note \"%s\"", hk_tier_name(t0), note);
      check_op("a_scale (auto, before opt)", k, OP_SCALE, HK_F32, sizes, 4);
      CHECK_INT_EQ(hk_kernel_wait_opt(k), HK_OK);
      CHECK_INT_EQ(hk_kernel_wait_opt(m), HK_OK);
      CHECK_INT_EQ(hk_kernel_tier(k), HK_TIER_OPT);
      CHECK_INT_EQ(hk_kernel_tier(m), HK_TIER_OPT);
      CHECK_STR_EQ(note_of(k), "");
      hk_kernel_t *again = find(c1, "a_scale");
      CHECK(again == k); /* the same handle, now on tier opt */
      check_op("a_scale (auto, opt)", k, OP_SCALE, HK_F32, sizes,
               COUNT(sizes));
      check_op("a_mean (auto, opt)", m, OP_MEAN, HK_F64, sizes, COUNT(sizes));
      CHECK_INT_EQ(hk_context_wait(c1), HK_OK);
      /* a second context on the same cache: opt at once */
      hk_context_t *c2 =
          mkctx(HK_TIER_AUTO, P("auto"), P("cache_auto"), 0, NULL);
      hk_kernel_t *k2 = c2 ? find(c2, "a_scale") : NULL;
      if (k2) {
        CHECK_MSG(hk_kernel_tier(k2) == HK_TIER_OPT, "second context: tier %s",
                  hk_tier_name(hk_kernel_tier(k2)));
        CHECK_STR_EQ(note_of(k2), "");
        check_op("a_scale (cached)", k2, OP_SCALE, HK_F32, sizes,
                 COUNT(sizes));
      }
      hk_context_destroy(c2);
    }
    hk_context_destroy(c1);
  } else {
    printf("NOTE: no system compiler 'cc': tier auto's opt step not tested\n");
  }

  /* No usable disk cache (a folder others can write to, or HK_NO_CACHE):
   * tier opt still comes, and nothing is written there. */
  if (g_have_cc) {
    check_make_dir(P("cache_open"));
    CHECK(chmod(P("cache_open"), 0777) == 0);
    check_make_dir(P("cache_unused"));
    static const struct {
      const char *cache;
      unsigned flags;
    } nc[] = {{"cache_open", 0}, {"cache_unused", HK_NO_CACHE}};
    for (size_t i = 0; i < COUNT(nc); i++) {
      hk_context_t *c = mkctx(HK_TIER_AUTO, P("auto"), P(nc[i].cache),
                              nc[i].flags, NULL);
      hk_kernel_t *k = c ? find(c, "a_scale") : NULL;
      if (k) {
        CHECK_INT_EQ(hk_kernel_wait_opt(k), HK_OK);
        CHECK_INT_EQ(hk_kernel_tier(k), HK_TIER_OPT);
        check_op("a_scale (no cache)", k, OP_SCALE, HK_F32, sizes, 4);
      }
      hk_context_destroy(c);
      CHECK_INT_EQ(cache_entries(P(nc[i].cache), NULL, 0), 0);
    }
    CHECK(chmod(P("cache_open"), 0700) == 0);
  }

  /* No system compiler (options.cc): jit, and a note saying why. */
  check_make_dir(P("cache_nocc"));
  hk_context_t *c3 = mkctx(HK_TIER_AUTO, P("auto"), P("cache_nocc"), 0,
                           "/nonexistent/cc");
  hk_kernel_t *k3 = c3 ? find(c3, "a_scale") : NULL;
  if (k3) {
    CHECK_INT_EQ(hk_kernel_tier(k3), HK_TIER_JIT);
    CHECK_CONTAINS(note_of(k3), "no system compiler");
    CHECK_CONTAINS(note_of(k3), "/nonexistent/cc");
    CHECK_INT_EQ(hk_kernel_wait_opt(k3), HK_EUNSUPPORTED);
    CHECK_CONTAINS(hk_last_error(), "no system compiler");
    CHECK_INT_EQ(hk_kernel_tier(k3), HK_TIER_JIT);
    check_op("a_scale (no cc)", k3, OP_SCALE, HK_F32, sizes, COUNT(sizes));
  }
  hk_context_destroy(c3);

  /* Tier jit never runs the system compiler (it used to run cc --version
   * once, to name it in tier opt's cache key): a compiler that leaves a
   * mark when run leaves none. */
  {
    char mark[4096];
    snprintf(mark, sizeof mark, "%s", P("jit_cc_ran"));
    char script[4400];
    snprintf(script, sizeof script, "#!/bin/sh\n: > '%s'\nexec cc \"$@\"\n",
             mark);
    write_text(P("jit_cc.sh"), script);
    CHECK(chmod(P("jit_cc.sh"), 0755) == 0);
    check_make_dir(P("cache_jit"));
    hk_context_t *cj = mkctx(HK_TIER_JIT, P("auto"), P("cache_jit"), 0,
                             P("jit_cc.sh"));
    hk_kernel_t *kj = cj ? find(cj, "a_scale") : NULL;
    if (kj) {
      CHECK_INT_EQ(hk_kernel_tier(kj), HK_TIER_JIT);
      check_op("a_scale (tier jit)", kj, OP_SCALE, HK_F32, sizes,
               COUNT(sizes));
    }
    hk_context_destroy(cj);
    CHECK_MSG(access(mark, F_OK) != 0, "tier jit ran the system compiler");
  }

  /* The same through HK_CC. */
  setenv("HK_CC", "/nonexistent/hk-cc", 1);
  hk_context_t *c4 = mkctx(HK_TIER_AUTO, P("auto"), P("cache_nocc"), 0, NULL);
  unsetenv("HK_CC");
  hk_kernel_t *k4 = c4 ? find(c4, "a_scale") : NULL;
  if (k4) {
    CHECK_INT_EQ(hk_kernel_tier(k4), HK_TIER_JIT);
    CHECK_CONTAINS(note_of(k4), "no system compiler");
    CHECK_CONTAINS(note_of(k4), "HK_CC");
    CHECK_INT_EQ(hk_kernel_wait_opt(k4), HK_EUNSUPPORTED);
  }
  hk_context_destroy(c4);

  /* Tier opt forced without a compiler: the file does not load, and says
   * why. */
  hk_context_t *c5 = mkctx(HK_TIER_OPT, P("auto"), P("cache_nocc"), 0,
                           "/nonexistent/cc");
  if (c5) {
    CHECK(!found(c5, "a_scale"));
    CHECK_CONTAINS(hk_context_problems(c5), P("auto/auto.json"));
    CHECK_CONTAINS(hk_context_problems(c5), "no system compiler");
  }
  hk_context_destroy(c5);
  hk_context_t *c6 =
      mkctx(HK_TIER_OPT, NULL, P("cache_nocc"), 0, "/nonexistent/cc");
  if (c6) {
    CHECK_INT_EQ(hk_load_file(c6, P("auto/auto.json")), HK_EUNSUPPORTED);
    CHECK_CONTAINS(hk_last_error(), P("auto/auto.json"));
    CHECK_CONTAINS(hk_last_error(), "tier opt failed: no system compiler");
    CHECK(!found(c6, "a_scale"));
  }
  hk_context_destroy(c6);
}

/* ---- 2. The disk cache --------------------------------------------------------- */

/* The entry files (<64 hex>.so) of a cache folder; the path of the last in
 * path. */
static int cache_entries(const char *dir, char *path, size_t n) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  int count = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t l = strlen(e->d_name);
    if (l != 67 || strcmp(e->d_name + 64, ".so")) continue;
    if (strspn(e->d_name, "0123456789abcdef") != 64) continue;
    count++;
    if (path) snprintf(path, n, "%s/%s", dir, e->d_name);
  }
  closedir(d);
  return count;
}

/* Files of unfinished writes or builds left in a cache folder. */
static int cache_leftovers(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  int count = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t l = strlen(e->d_name);
    if ((l > 4 && !strcmp(e->d_name + l - 4, ".tmp")) ||
        !strncmp(e->d_name, ".hk-build-", 10)) {
      fprintf(stderr, "  left over in the cache: %s\n", e->d_name);
      count++;
    }
  }
  closedir(d);
  return count;
}

static void count_valid(void *c, const char *path, size_t size, time_t mtime,
                        const char *meta, int valid) {
  (void)path;
  (void)size;
  (void)mtime;
  (void)meta;
  int *v = c;
  v[0]++;
  v[1] += valid != 0;
}

/* How many entries the cache folder holds, and how many verify. */
static void cache_validity(const char *dir, int *entries, int *valid) {
  hk_cache_t *c = NULL;
  hku_diags d = HKU_DIAGS_INIT;
  int v[2] = {0, 0};
  *entries = *valid = -1;
  if (hk__cache_open(dir, 0, &c, &d)) {
    CHECK_MSG(0, "cannot open the cache %s: %s", dir, d.n ? d.v[0].msg : "");
    hku_diags_free(&d);
    return;
  }
  hk__cache_list(c, count_valid, v);
  hk__cache_close(c);
  *entries = v[0];
  *valid = v[1];
}

/* Two processes racing: four copies of this program load the same file
 * with tier opt on one empty cache, started together. */
static const char race_json[] =
    "{\"schema_version\": 1, \"name\": \"race_scale\", \"kind\": "
    "\"elementwise\",\n"
    " \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},\n"
    "            {\"name\": \"alpha\", \"type\": \"f32\", \"role\": \"scalar\"},\n"
    "            {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\"}],\n"
    " \"body\": \"out = x * alpha;\"}\n";

static const char cache_json[] =
    "{\"schema_version\": 1, \"kernels\": [\n"
    " {\"name\": \"c_scale\", \"kind\": \"elementwise\",\n"
    "  \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},\n"
    "             {\"name\": \"alpha\", \"type\": \"f32\", \"role\": \"scalar\"},\n"
    "             {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\"}],\n"
    "  \"body\": \"out = x * alpha;\"},\n"
    " {\"name\": \"c_dot\", \"kind\": \"reduction\",\n"
    "  \"params\": [{\"name\": \"x\", \"type\": \"f64\", \"role\": \"in\"},\n"
    "             {\"name\": \"y\", \"type\": \"f64\", \"role\": \"in\"},\n"
    "             {\"name\": \"out\", \"type\": \"f64\", \"role\": \"out\"}],\n"
    "  \"map\": \"x * y\", \"combine\": \"a + b\", \"identity\": \"0\"}]}\n";

static const size_t few_sizes[] = {0, 7, 1000, 65536 + 3};

static void check_cache_kernels(hk_context_t *ctx, const char *what) {
  hk_kernel_t *k = find(ctx, "c_scale"), *d = find(ctx, "c_dot");
  char w[256];
  snprintf(w, sizeof w, "c_scale (%s)", what);
  if (k) check_op(w, k, OP_SCALE, HK_F32, few_sizes, COUNT(few_sizes));
  snprintf(w, sizeof w, "c_dot (%s)", what);
  if (d) check_op(w, d, OP_DOT, HK_F64, few_sizes, COUNT(few_sizes));
}

/* The ways an entry is damaged, each noticed (never loaded), removed and
 * rebuilt. */
static const struct {
  const char *what;
  int truncate; /* else flip */
  long at;      /* >= 0 from the start, < 0 from the end; size/2: 1<<30 */
} damage[] = {
    {"truncated to 0 bytes", 1, 0},
    {"truncated to 100 bytes", 1, 100},
    {"truncated to half", 1, 1L << 30},
    {"trailer cut off", 1, -HK_CACHE_TRAILER},
    {"last byte cut off", 1, -1},
    {"a byte flipped in the middle", 0, 1L << 30},
    {"a byte flipped in the ELF header", 0, 4},
    {"a byte flipped in the trailer's magic", 0, -HK_CACHE_TRAILER},
    {"a byte flipped in the trailer's elf size", 0, -HK_CACHE_TRAILER + 8},
    {"a byte flipped in the digest", 0, -1},
    {"one byte appended", 2, 0},
};

/* Damages the one entry of the cache folder as damage[i] says: 0, or -1
 * (after a failed check) when it cannot. */
static int damage_entry(const char *cache, size_t i) {
  char entry[4200];
  if (cache_entries(cache, entry, sizeof entry) != 1) {
    CHECK_MSG(0, "before '%s': not one cache entry", damage[i].what);
    return -1;
  }
  size_t size;
  char *bytes = check_read_file(entry, &size);
  if (!bytes) {
    CHECK_MSG(0, "cannot read %s", entry);
    return -1;
  }
  long at = damage[i].at == (1L << 30) ? (long)size / 2
            : damage[i].at < 0         ? (long)size + damage[i].at
                                       : damage[i].at;
  int fd = open(entry, O_WRONLY | O_CLOEXEC);
  CHECK(fd >= 0);
  if (damage[i].truncate == 1) {
    CHECK(ftruncate(fd, at) == 0);
  } else if (damage[i].truncate == 2) {
    CHECK(pwrite(fd, "x", 1, (off_t)size) == 1);
  } else {
    char b = (char)(bytes[at] ^ 0x40);
    CHECK(pwrite(fd, &b, 1, at) == 1);
  }
  if (fd >= 0) close(fd);
  free(bytes);
  return 0;
}

/* Every damage in turn: the entry is never used, but removed and rebuilt,
 * and the log says so. */
static void check_damaged_entries(const char *cache) {
  int entries, valid;
  for (size_t i = 0; i < COUNT(damage); i++) {
    if (damage_entry(cache, i) != 0) break;
    /* alternately tier auto (jit, then opt in the background) and opt */
    hk_tier_t tier = i % 2 ? HK_TIER_OPT : HK_TIER_AUTO;
    check_log_clear();
    hk_context_t *c = mkctx_logged(tier, P("cplug"), cache);
    hk_kernel_t *k = c ? find(c, "c_scale") : NULL;
    if (k) {
      CHECK_STR_EQ(hk_context_problems(c), "");
      if (tier == HK_TIER_AUTO)
        CHECK_MSG(hk_kernel_tier(k) == HK_TIER_JIT,
                  "%s: tier %s at once (the damaged entry was used?)",
                  damage[i].what, hk_tier_name(hk_kernel_tier(k)));
      CHECK_INT_EQ(hk_kernel_wait_opt(k), HK_OK);
      CHECK_MSG(hk_kernel_tier(k) == HK_TIER_OPT, "%s: tier %s",
                damage[i].what, hk_tier_name(hk_kernel_tier(k)));
      check_cache_kernels(c, damage[i].what);
      CHECK_MSG(check_log_has("damaged disk cache entry was removed") &&
                    check_log_has(P("cplug/c.json")),
                "%s: the log says \"%s\"", damage[i].what, check_log_text());
    }
    hk_context_destroy(c);
    cache_validity(cache, &entries, &valid);
    CHECK_MSG(entries == 1 && valid == 1,
              "after '%s': %d entries, %d valid", damage[i].what, entries,
              valid);
  }
}

/* An entry that verifies but holds other code, renamed over the entry:
 * another kernel file's object, and the object of an earlier version of
 * this very file (the same kernel names, other bodies: it would resolve
 * and compute the wrong thing). Neither is used; both are rebuilt. */
static void check_foreign_entry(const char *cache, const char *other_text,
                                const char *what) {
  char entry[4200];
  hk_context_t *c;
  hk_kernel_t *k;
  PATH(foreign, "cache_c_foreign");
  check_rm_rf(foreign);
  check_make_dir(foreign);
  PATH(other_json, "cplug_other/o.json");
  check_make_dir(P("cplug_other"));
  write_text(other_json, other_text);
  c = mkctx(HK_TIER_OPT, P("cplug_other"), foreign, 0, NULL);
  hk_context_destroy(c);
  char other_entry[4200];
  printf("foreign entry: %s\n", what);
  if (cache_entries(foreign, other_entry, sizeof other_entry) == 1 &&
      cache_entries(cache, entry, sizeof entry) == 1) {
    CHECK(rename(other_entry, entry) == 0);
    c = mkctx(HK_TIER_AUTO, P("cplug"), cache, 0, NULL);
    k = c ? find(c, "c_scale") : NULL;
    if (k) {
      CHECK_INT_EQ(hk_kernel_tier(k), HK_TIER_JIT);
      CHECK_INT_EQ(hk_kernel_wait_opt(k), HK_OK);
      CHECK_INT_EQ(hk_kernel_tier(k), HK_TIER_OPT);
      check_cache_kernels(c, "foreign entry");
    }
    hk_context_destroy(c);
  } else {
    CHECK_MSG(0, "no entry for the foreign-entry case");
  }
}

static void fifo_alarm(int sig) {
  (void)sig;
  static const char msg[] = "test_opt: a context waited on a FIFO kept as "
                            "the compiler's identity (cc-*.id)\n";
  (void)!write(2, msg, sizeof msg - 1);
  _exit(1);
}

/* The compiler's identity kept in the cache folder (cc-*.id) replaced by
 * a FIFO: a context must not open it (an open waits forever for a
 * writer), and takes its entries as before, the identity probed again
 * and stored as a file. */
static void check_fifo_identity(const char *cache) {
  DIR *d = opendir(cache);
  if (!d) return;
  char path[4300];
  int fifos = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    size_t l = strlen(de->d_name);
    if (strncmp(de->d_name, "cc-", 3) || l < 4 || strcmp(de->d_name + l - 3, ".id"))
      continue;
    snprintf(path, sizeof path, "%s/%s", cache, de->d_name);
    fifos += unlink(path) == 0 && mkfifo(path, 0600) == 0;
  }
  closedir(d);
  CHECK_MSG(fifos == 1, "%d compiler identities in %s", fifos, cache);
  void (*was)(int) = signal(SIGALRM, fifo_alarm);
  alarm(60);
  hk_context_t *c = mkctx(HK_TIER_AUTO, P("cplug"), cache, 0, NULL);
  alarm(0);
  signal(SIGALRM, was);
  hk_kernel_t *k = c ? find(c, "c_scale") : NULL;
  if (k) CHECK_INT_EQ(hk_kernel_tier(k), HK_TIER_OPT); /* still a hit */
  hk_context_destroy(c);
  struct stat st;
  if (fifos == 1)
    CHECK_MSG(stat(path, &st) == 0 && S_ISREG(st.st_mode),
              "%s was not replaced by a file", path);
}

static void test_cache(void) {
  if (!g_have_cc) {
    printf("NOTE: no system compiler 'cc': disk cache tests skipped\n");
    return;
  }
  check_make_dir(P("cplug"));
  write_text(P("cplug/c.json"), cache_json);
  PATH(cache, "cache_c");
  check_make_dir(cache);
  char entry[4200] = "";

  /* a miss: compiled and stored */
  CHECK_INT_EQ(cache_entries(cache, NULL, 0), 0);
  hk_context_t *c = mkctx(HK_TIER_OPT, P("cplug"), cache, 0, NULL);
  if (!c) return;
  CHECK_STR_EQ(hk_context_problems(c), "");
  check_cache_kernels(c, "opt, miss");
  hk_context_destroy(c);
  CHECK_INT_EQ(cache_entries(cache, entry, sizeof entry), 1);
  int entries, valid;
  cache_validity(cache, &entries, &valid);
  CHECK_INT_EQ(entries, 1);
  CHECK_INT_EQ(valid, 1);

  /* a hit: tier opt at once, and the entry is not written again */
  struct stat before, after;
  CHECK(stat(entry, &before) == 0);
  c = mkctx(HK_TIER_AUTO, P("cplug"), cache, 0, NULL);
  hk_kernel_t *k = c ? find(c, "c_scale") : NULL;
  if (k) CHECK_INT_EQ(hk_kernel_tier(k), HK_TIER_OPT);
  if (c) check_cache_kernels(c, "auto, hit");
  hk_context_destroy(c);
  CHECK(stat(entry, &after) == 0);
  CHECK(before.st_ino == after.st_ino &&
        before.st_mtim.tv_sec == after.st_mtim.tv_sec &&
        before.st_mtim.tv_nsec == after.st_mtim.tv_nsec);

  check_fifo_identity(cache);
  check_damaged_entries(cache);
  check_foreign_entry(cache, race_json, "another file's object");
  char *older = strdup(cache_json);
  char *at = older ? strstr(older, "out = x * alpha;") : NULL;
  if (at) memcpy(at, "out = x - alpha;", 16); /* the same length */
  CHECK_MSG(at != NULL, "no body to change in cache_json");
  if (at) check_foreign_entry(cache, older, "an earlier version's object");
  free(older);

  /* and the rebuilt entry is a hit again */
  c = mkctx(HK_TIER_AUTO, P("cplug"), cache, 0, NULL);
  k = c ? find(c, "c_scale") : NULL;
  if (k) CHECK_INT_EQ(hk_kernel_tier(k), HK_TIER_OPT);
  hk_context_destroy(c);
  CHECK_INT_EQ(cache_leftovers(cache), 0);
}

static int race_child(const char *dir, const char *cache) {
  char c;
  while (read(3, &c, 1) < 0 && errno == EINTR) {
  } /* the start: EOF when the parent closes its end */
  if (fixture_data() != 0) return 1;
  hk_context_t *ctx = mkctx(HK_TIER_OPT, dir, cache, 0, NULL);
  if (!ctx) return 1;
  CHECK_STR_EQ(hk_context_problems(ctx), "");
  hk_kernel_t *k = find(ctx, "race_scale");
  if (k) {
    CHECK_INT_EQ(hk_kernel_tier(k), HK_TIER_OPT);
    check_op("race_scale", k, OP_SCALE, HK_F32, few_sizes, COUNT(few_sizes));
  }
  hk_context_destroy(ctx);
  fixture_data_free();
  return check_failures ? 1 : 0;
}

/* n processes race into one empty cache folder; round says which. */
static void race_round(const char *self, int n, int round) {
  char name[64];
  snprintf(name, sizeof name, "cache_race_%d_%d", n, round);
  PATH(cache, name);
  check_make_dir(cache);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    CHECK_MSG(0, "pipe: %s", strerror(errno));
    return;
  }
  enum { NMAXCHILD = 8 };
  pid_t pids[NMAXCHILD];
  char logs[NMAXCHILD][4200];
  char dir[4200], cdir[4200];
  snprintf(dir, sizeof dir, "%s", P("race"));
  snprintf(cdir, sizeof cdir, "%s", cache);
  for (int i = 0; i < n && i < NMAXCHILD; i++) {
    snprintf(name, sizeof name, "race%d.log", i);
    snprintf(logs[i], sizeof logs[i], "%s", P(name));
    char *argv[] = {(char *)self, "--race-child", dir, cdir, NULL};
    pids[i] = spawn(argv, logs[i], fds[0]);
    CHECK_MSG(pids[i] > 0, "cannot start %s", self);
  }
  close(fds[0]);
  close(fds[1]); /* go */
  for (int i = 0; i < n && i < NMAXCHILD; i++) {
    if (pids[i] <= 0) continue;
    int rc = wait_exit(pids[i]);
    CHECK_MSG(rc == 0, "%d processes, round %d: process %d exited with %d",
              n, round, i, rc);
    if (rc != 0) print_log(logs[i]);
  }
  int entries, valid;
  cache_validity(cache, &entries, &valid);
  CHECK_INT_EQ(entries, 1);
  CHECK_INT_EQ(valid, 1);
  CHECK_INT_EQ(cache_leftovers(cache), 0);
  /* the entry they left is a hit */
  hk_context_t *c = mkctx(HK_TIER_AUTO, dir, cache, 0, NULL);
  hk_kernel_t *k = c ? find(c, "race_scale") : NULL;
  if (k) {
    CHECK_INT_EQ(hk_kernel_tier(k), HK_TIER_OPT);
    check_op("race_scale (after the race)", k, OP_SCALE, HK_F32, few_sizes,
             COUNT(few_sizes));
  }
  hk_context_destroy(c);
  check_rm_rf(cache);
}

/* Two, then eight copies of this program load the same file with tier opt
 * into one empty cache folder, started together; HK_RACE_ROUNDS times
 * each (1 unless set: tools/soak.sh repeats them). */
static void test_cache_race(const char *self) {
  if (!g_have_cc) return;
  check_make_dir(P("race"));
  write_text(P("race/race.json"), race_json);
  const char *env = getenv("HK_RACE_ROUNDS");
  int rounds = env && atoi(env) > 0 ? atoi(env) : 1;
  for (int r = 0; r < rounds; r++) {
    race_round(self, 2, r);
    race_round(self, 8, r);
  }
  if (rounds > 1)
    printf("cache race: %d rounds of 2 and 8 processes\n", rounds);
}

/* ---- 3. Shared objects --------------------------------------------------------- */

/* Two contexts hold one cache entry, the first is destroyed, then a third
 * loads another entry. glibc knows loaded objects by their name,
 * "/proc/self/fd/N", and by file identity (the second context got the
 * first one's link map): were fd N closed with the first context while the
 * second still holds the object, the third's entry, opened as the next free
 * fd N, would be "found" loaded and the wrong code run. Four threads making
 * contexts on one cache showed it ("does not define hk_range__..."). */
static void test_shared_objects(void) {
  if (!g_have_cc) return;
  check_make_dir(P("sh1"));
  check_make_dir(P("sh2"));
  PATH(ka, "sh1/a.json");
  PATH(kb, "sh2/b.json");
  PATH(cache, "sh_cache");
  write_kernel(ka, "sh_a", "out = x * 2.0f;");
  write_kernel(kb, "sh_b", "out = x * 3.0f;");
  /* the opt builds of both, into the cache */
  hk_context_destroy(mkctx(HK_TIER_OPT, P("sh1"), cache, 0, NULL));
  hk_context_destroy(mkctx(HK_TIER_OPT, P("sh2"), cache, 0, NULL));
  hk_context_t *a = mkctx(HK_TIER_AUTO, P("sh1"), cache, 0, NULL);
  hk_context_t *b = mkctx(HK_TIER_AUTO, P("sh1"), cache, 0, NULL);
  if (!a || !b) return;
  CHECK_INT_EQ(hk_kernel_tier(find(b, "sh_a")), HK_TIER_OPT);
  hk_context_destroy(a);
  for (int round = 0; round < 3; round++) {
    hk_context_t *c = mkctx(HK_TIER_AUTO, P("sh2"), cache, 0, NULL);
    if (!c) break;
    hk_kernel_t *k = find(c, "sh_b");
    CHECK_MSG(k && hk_kernel_tier(k) == HK_TIER_OPT,
              "round %d: sh_b from the cache is on tier %s: %s", round,
              k ? hk_tier_name(hk_kernel_tier(k)) : "-", k ? note_of(k) : "");
    CHECK_MSG(runs_times(c, "sh_b", 3.0f), "round %d: sh_b runs other code",
              round);
    CHECK(runs_times(b, "sh_a", 2.0f));
    hk_context_destroy(c);
  }
  hk_context_destroy(b);
}

/* ---- 4. What compilers synthesise ----------------------------------------------- */

/* sin and cos of one argument become one sincosf/sincos call under gcc
 * and clang; the raw kernel's loops become memset and memmove. The import
 * check once refused such objects, and tier auto stayed on jit silently. */
static const char synth_json[] =
    "{\"schema_version\": 1, \"kernels\": [\n"
    " {\"name\": \"syn_sc32\", \"kind\": \"elementwise\",\n"
    "  \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},\n"
    "             {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\"}],\n"
    "  \"body\": \"out = sin(x) + cos(x);\"},\n"
    " {\"name\": \"syn_sc64\", \"kind\": \"elementwise\",\n"
    "  \"params\": [{\"name\": \"x\", \"type\": \"f64\", \"role\": \"in\"},\n"
    "             {\"name\": \"out\", \"type\": \"f64\", \"role\": \"out\"}],\n"
    "  \"body\": \"out = sin(x) * cos(x);\"},\n"
    " {\"name\": \"syn_loops\", \"kind\": \"raw\",\n"
    "  \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},\n"
    "             {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\"}],\n"
    "  \"cpu\": [\"for (size_t i = 0; i < n; ++i) out[i] = 0;\",\n"
    "          \"for (size_t i = 0; i + 1 < n; i += 2) out[i] = x[i];\",\n"
    "          \"for (size_t i = 1; i < n; ++i) out[i - 1] = out[i];\"]}]}\n";

static const struct {
  const char *name;
  hk_dtype_t t;
} synth_kernels[] = {
    {"syn_sc32", HK_F32}, {"syn_sc64", HK_F64}, {"syn_loops", HK_F32}};

/* Is the program name in PATH? */
static int in_path(const char *name) {
  const char *path = getenv("PATH");
  if (!path || !*path) path = "/usr/bin:/bin";
  for (const char *p = path; *p;) {
    const char *e = strchr(p, ':');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    char buf[4200];
    snprintf(buf, sizeof buf, "%.*s/%s", (int)n, n ? p : ".", name);
    if (access(buf, X_OK) == 0) return 1;
    p += n + (e ? 1 : 0);
  }
  return 0;
}

static int record_import(const char *sym, void *ctx) {
  char *names = ctx;
  size_t used = strlen(names);
  snprintf(names + used, 1024 - used, " %s", sym);
  return 1;
}

/* The imports of the one entry of the cache folder, space-separated. */
static void entry_imports(const char *cache, char names[1024]) {
  char entry[4200];
  names[0] = '\0';
  if (cache_entries(cache, entry, sizeof entry) != 1) return;
  size_t size;
  char *bytes = check_read_file(entry, &size);
  uint64_t elf_size = 0;
  if (bytes && size > HK_CACHE_TRAILER)
    memcpy(&elf_size, bytes + size - HK_CACHE_TRAILER + 8, 8);
  free(bytes);
  int fd = open(entry, O_RDONLY | O_CLOEXEC);
  if (fd >= 0 && elf_size && elf_size < size)
    CHECK_INT_EQ(hk__elf_check_imports(fd, (size_t)elf_size, record_import,
                                       names, NULL, 0, NULL, NULL, 0, entry,
                                       NULL),
                 HK_OK);
  if (fd >= 0) close(fd);
}

/* Calls k on x (n elements of t) into out. */
static int call_on(hk_kernel_t *k, hk_dtype_t t, size_t n, void *out) {
  static double x64[1000];
  for (size_t i = 0; i < n && i < 1000; i++) x64[i] = (double)gx32[i] * 3;
  void *args[] = {t == HK_F64 ? (void *)x64 : (void *)gx32, out};
  return hk_call(k, n, args);
}

static void test_synthesised(void) {
  static const char *const ccs[] = {"gcc", "clang"};
  check_make_dir(P("syn"));
  write_text(P("syn/syn.json"), synth_json);
  check_make_dir(P("cache_syn_jit"));
  hk_context_t *jit = mkctx(HK_TIER_JIT, P("syn"), P("cache_syn_jit"), 0, NULL);
  if (!jit) return;
  for (size_t c = 0; c < COUNT(ccs); c++) {
    if (!in_path(ccs[c])) {
      printf("SKIP: no '%s' in PATH: what it synthesises is not tested\n",
             ccs[c]);
      continue;
    }
    char cache[4200];
    snprintf(cache, sizeof cache, "%s/cache_syn_%s", g_root, ccs[c]);
    check_make_dir(cache);
    /* forced tier opt (hk run --tier opt): the file loads */
    hk_context_t *opt = mkctx(HK_TIER_OPT, P("syn"), cache, HK_NO_CACHE,
                              ccs[c]);
    if (opt) CHECK_MSG(!*hk_context_problems(opt), "%s, tier opt: %s", ccs[c],
                       hk_context_problems(opt));
    /* tier auto: jit, then opt */
    check_log_clear();
    hk_options_t o = {0};
    const char *dirs[] = {P("syn"), NULL};
    o.plugin_dirs = dirs;
    o.tier = HK_TIER_AUTO;
    o.cache_dir = cache;
    o.cc = ccs[c];
    o.log = check_log;
    hk_context_t *aut = NULL;
    CHECK_INT_EQ(hk_context_create(&aut, &o), HK_OK);
    for (size_t i = 0; aut && i < COUNT(synth_kernels); i++) {
      hk_kernel_t *k = find(aut, synth_kernels[i].name);
      hk_kernel_t *j = find(jit, synth_kernels[i].name);
      if (!k || !j) continue;
      CHECK_MSG(hk_kernel_wait_opt(k) == HK_OK, "%s, %s: %s", ccs[c],
                synth_kernels[i].name, hk_last_error());
      CHECK_MSG(hk_kernel_tier(k) == HK_TIER_OPT, "%s, %s: tier %s: %s",
                ccs[c], synth_kernels[i].name,
                hk_tier_name(hk_kernel_tier(k)), note_of(k));
      CHECK_STR_EQ(note_of(k), "");
      hk_kernel_t *f = opt ? find(opt, synth_kernels[i].name) : NULL;
      if (f) CHECK_INT_EQ(hk_kernel_tier(f), HK_TIER_OPT);
      /* every tier computes the same bits */
      static const size_t ns[] = {0, 1, 2, 7, 64, 1000};
      for (size_t s = 0; s < COUNT(ns); s++) {
        size_t es = hk_dtype_size(synth_kernels[i].t);
        memset(g_ref, 0xA5, 1000 * es);
        memset(g_got, 0x5A, 1000 * es);
        CHECK_INT_EQ(call_on(j, synth_kernels[i].t, ns[s], g_ref), HK_OK);
        CHECK_INT_EQ(call_on(k, synth_kernels[i].t, ns[s], g_got), HK_OK);
        CHECK_MSG(!memcmp(g_ref, g_got, ns[s] * es),
                  "%s, %s n=%zu: tier opt differs from tier jit", ccs[c],
                  synth_kernels[i].name, ns[s]);
        if (f) {
          memset(g_got, 0x5A, 1000 * es);
          CHECK_INT_EQ(call_on(f, synth_kernels[i].t, ns[s], g_got), HK_OK);
          CHECK_MSG(!memcmp(g_ref, g_got, ns[s] * es),
                    "%s, %s n=%zu: forced tier opt differs from tier jit",
                    ccs[c], synth_kernels[i].name, ns[s]);
        }
      }
    }
    CHECK_MSG(!check_log_has("tier opt unavailable"), "%s: the log says %s",
              ccs[c], check_log_text());
    hk_context_destroy(aut);
    hk_context_destroy(opt);
    /* what the compiler made: said, so that the test's reach shows */
    char names[1024];
    entry_imports(cache, names);
    printf("note: %s's object imports:%s\n", ccs[c], names);
    if (!strstr(names, " sincos"))
      printf("note: %s merged no sin/cos pair into sincos here\n", ccs[c]);
  }
  hk_context_destroy(jit);
}

/* A compiler that slips a call to puts into every object: the import
 * check refuses it, and each way of asking says why. */
static void test_refused_said(void) {
  if (!g_have_cc) return;
  PATH(hdr, "syn_evil.h");
  write_text(hdr, "int puts(const char *);\n"
                  "__attribute__((used)) void hk_evil(void) {\n"
                  "  puts(\"x\");\n"
                  "}\n");
  char cc[4300];
  snprintf(cc, sizeof cc, "cc -include %s", hdr);
  check_make_dir(P("cache_syn_evil"));
  hk_context_t *opt =
      mkctx(HK_TIER_OPT, P("syn"), P("cache_syn_evil"), 0, cc);
  if (opt) {
    CHECK(!found(opt, "syn_sc32"));
    CHECK_CONTAINS(hk_context_problems(opt), P("syn/syn.json"));
    CHECK_CONTAINS(hk_context_problems(opt),
                   "tier opt failed: refused: the object imports 'puts'");
  }
  hk_context_destroy(opt);
  check_log_clear();
  hk_options_t o = {0};
  const char *dirs[] = {P("syn"), NULL};
  o.plugin_dirs = dirs;
  o.tier = HK_TIER_AUTO;
  o.cache_dir = P("cache_syn_evil");
  o.cc = cc;
  o.log = check_log;
  hk_context_t *aut = NULL;
  CHECK_INT_EQ(hk_context_create(&aut, &o), HK_OK);
  hk_kernel_t *k = aut ? find(aut, "syn_sc32") : NULL;
  if (k) {
    CHECK(hk_kernel_wait_opt(k) != HK_OK);
    show("wait_opt", hk_last_error());
    CHECK_CONTAINS(hk_last_error(), "imports 'puts'");
    CHECK_INT_EQ(hk_kernel_tier(k), HK_TIER_JIT);
    show("note", note_of(k));
    CHECK_CONTAINS(note_of(k), "opt: refused: the object imports 'puts'");
    /* logged by the time hk_kernel_wait_opt returns */
    show("log", check_log_text());
    CHECK_MSG(check_log_has("tier opt unavailable, staying on tier jit") &&
                  check_log_has("imports 'puts'") &&
                  check_log_has(P("syn/syn.json")),
              "the log says \"%s\"", check_log_text());
    float *out = g_got;
    void *args[] = {gx32, out};
    CHECK_INT_EQ(hk_call(k, 100, args), HK_OK); /* jit still runs it */
  }
  hk_context_destroy(aut);
  CHECK_INT_EQ(cache_entries(P("cache_syn_evil"), NULL, 0), 0);
}

/* ---- 5. Batches ------------------------------------------------------------------- */

#define NBATCH 7 /* kernel files; b3 is the one cc rejects */

static void write_batch_file(int i, float scale) {
  char path[64], name[32], body[128], text[1024];
  snprintf(path, sizeof path, "batch/b%d.json", i);
  snprintf(name, sizeof name, "b%d", i);
  if (i == 3) /* the test's compiler rejects reject_b3 (libtcc does not):
                 an error in the body, located in the kernel file */
    snprintf(text, sizeof text,
             "{\"schema_version\": 1, \"name\": \"b3\", \"kind\": "
             "\"elementwise\", \"params\": [\n"
             " {\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},\n"
             " {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\"}],\n"
             " \"body\": \"float reject_b3 = 1.0f; out = x * reject_b3;\"}\n");
  else {
    snprintf(body, sizeof body, "out = x * %.1ff + %d.0f;", scale, i);
    snprintf(text, sizeof text, GOOD_JSON_FMT, name, body);
  }
  write_text(P(path), text);
}

/* How many distinct files the cache entries in dir are. */
static int cache_inodes(const char *dir) {
  ino_t seen[64];
  int n = 0;
  DIR *d = opendir(dir);
  struct dirent *e;
  while (d && (e = readdir(d)))
    if (strlen(e->d_name) == 67 && !strcmp(e->d_name + 64, ".so")) {
      struct stat st;
      if (fstatat(dirfd(d), e->d_name, &st, 0) != 0) continue;
      int k = 0;
      while (k < n && seen[k] != st.st_ino) k++;
      if (k == n && n < 64) seen[n++] = st.st_ino;
    }
  if (d) closedir(d);
  return n;
}

/* Every good kernel of the batch folder on tier tier, computing
 * x * scale + i. */
static void check_batch_kernels(hk_context_t *c, hk_tier_t tier,
                                const char *what, float scale5) {
  for (int i = 0; i < NBATCH; i++) {
    if (i == 3) continue;
    char name[32];
    snprintf(name, sizeof name, "b%d", i);
    hk_kernel_t *k = find(c, name);
    if (!k) continue;
    CHECK_MSG(hk_kernel_tier(k) == tier, "%s: %s is on tier %d", what, name,
              (int)hk_kernel_tier(k));
    float *out = g_got;
    void *args[] = {gx32, out};
    CHECK_INT_EQ(hk_call(k, 1000, args), HK_OK);
    int bad = 0;
    float scale = i == 5 ? scale5 : 2.0f;
    for (int j = 0; j < 1000; j++)
      bad += out[j] != gx32[j] * scale + (float)i;
    CHECK_MSG(!bad, "%s: %s computes something else", what, name);
  }
}

static void test_batches(void) {
  if (!g_have_cc) return;
  cpu_set_t was, two;
  CHECK(sched_getaffinity(0, sizeof was, &was) == 0);
  CPU_ZERO(&two);
  for (int c = 0, got = 0; c < CPU_SETSIZE && got < 2; c++)
    if (CPU_ISSET(c, &was)) {
      CPU_SET(c, &two);
      got++;
    }
  CHECK(sched_setaffinity(0, sizeof two, &two) == 0);
  check_make_dir(P("batch"));
  for (int i = 0; i < NBATCH; i++) write_batch_file(i, 2.0f);
  /* a compiler that rejects the line of the source naming reject_b3, as
   * gcc reports an error, else is cc */
  PATH(cc, "batch_cc.sh");
  write_text(cc,
             "#!/bin/sh\n"
             "for a in \"$@\"; do case \"$a\" in *.c) src=$a;; esac; done\n"
             "line=$(grep -n reject_b3 \"$src\" | head -1 | cut -d: -f1)\n"
             "if [ -n \"$line\" ]; then\n"
             "  echo \"$src:$line:19: error: this compiler rejects reject_b3\"\n"
             "  exit 1\n"
             "fi\n"
             "exec cc \"$@\"\n");
  CHECK(chmod(cc, 0755) == 0);
  PATH(cache, "cache_batch");
  check_make_dir(cache);

  hk_context_t *c = mkctx(HK_TIER_AUTO, P("batch"), cache, 0, cc);
  if (c) {
    CHECK_STR_EQ(hk_context_problems(c), "");
    hk_context_wait(c);
    check_batch_kernels(c, HK_TIER_OPT, "cold", 2.0f);
    hk_kernel_t *k = find(c, "b3");
    if (k) {
      CHECK(hk_kernel_wait_opt(k) != HK_OK);
      CHECK_INT_EQ(hk_kernel_tier(k), HK_TIER_JIT);
      show("note", note_of(k));
      CHECK_CONTAINS(note_of(k), "opt: the system compiler failed");
    }
  }
  hk_context_destroy(c);
  CHECK_INT_EQ(cache_entries(cache, NULL, 0), NBATCH - 1);
  int files = cache_inodes(cache);
  CHECK_MSG(files >= 1 && files < NBATCH - 1,
            "%d objects for %d kernel files: no batch shares one", files,
            NBATCH - 1);
  CHECK_INT_EQ(cache_leftovers(cache), 0);

  /* warm: all at once from the cache; b3's failure was remembered, so it
   * is failed at once, without a compile (whose note would not say "an
   * earlier start"), with the compiler's complaint in its note */
  c = mkctx(HK_TIER_AUTO, P("batch"), cache, 0, cc);
  if (c) {
    check_batch_kernels(c, HK_TIER_OPT, "warm", 2.0f);
    hk_kernel_t *k = find(c, "b3");
    if (k) {
      CHECK_INT_EQ(hk_kernel_tier(k), HK_TIER_JIT);
      CHECK(hk_kernel_wait_opt(k) != HK_OK);
      show("note", note_of(k));
      CHECK_CONTAINS(note_of(k), "failed on an earlier start");
      CHECK_CONTAINS(note_of(k), "the system compiler failed");
    }
  }
  hk_context_destroy(c);

  /* one file changes: it alone is built again */
  sleep_ms(20);
  write_batch_file(5, 3.0f);
  c = mkctx(HK_TIER_AUTO, P("batch"), cache, 0, cc);
  if (c) {
    hk_kernel_t *k = find(c, "b0");
    if (k) CHECK_INT_EQ(hk_kernel_tier(k), HK_TIER_OPT);
    hk_context_wait(c);
    check_batch_kernels(c, HK_TIER_OPT, "one changed", 3.0f);
  }
  hk_context_destroy(c);
  CHECK_INT_EQ(cache_entries(cache, NULL, 0), NBATCH);
  /* hk cache clear forgets the failure: the compiler runs again */
  hku_diags d = HKU_DIAGS_INIT;
  hk_cache_t *hc = NULL;
  CHECK_INT_EQ(hk__cache_open(cache, 0, &hc, &d), HK_OK);
  hku_diags_free(&d);
  int kept = 0;
  if (hc) CHECK(hk__cache_clear(hc, &kept, NULL) > NBATCH && kept == 0); /* entries and the failure */
  hk__cache_close(hc);
  c = mkctx(HK_TIER_AUTO, P("batch"), cache, 0, cc);
  hk_kernel_t *k3 = c ? find(c, "b3") : NULL;
  if (k3) {
    CHECK(hk_kernel_wait_opt(k3) != HK_OK);
    CHECK(!strstr(note_of(k3), "earlier start"));
    CHECK_CONTAINS(note_of(k3), "the system compiler failed");
  }
  hk_context_destroy(c);
  CHECK(sched_setaffinity(0, sizeof was, &was) == 0);
}

/* ---- 6. fp modes and signed overflow ----------------------------------------- */

#define DOT_JSON_FMT                                                        \
  "{\"schema_version\": 1, \"name\": \"%s\", \"kind\": \"raw\",%s\n"     \
  " \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},\n"  \
  "  {\"name\": \"y\", \"type\": \"f32\", \"role\": \"in\"},\n"              \
  "  {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\", \"len\": "    \
  "\"1\"}],\n"                                                              \
  " \"cpu\": \"float s = 0; for (int i = 0; i < (int)n; i++) s += x[i] * "  \
  "y[i]; out[0] = s;\"}\n"

/* Loads text into c and returns the compiler's arguments (from the log
 * of the wrapper), in a static buffer ("" when it did not run). */
static const char *load_logged(hk_context_t *c, const char *text,
                               const char *label, const char *log) {
  static char args[8192];
  write_text(log, "");
  int rc = hk_load_string(c, text, strlen(text), label);
  CHECK_MSG(rc == HK_OK, "load: %s", hk_last_error());
  FILE *f = fopen(log, "r");
  size_t n = f ? fread(args, 1, sizeof args - 1, f) : 0;
  args[n] = '\0';
  if (f) fclose(f);
  return args;
}

static float dot_on(hk_context_t *c, const char *name) {
  hk_kernel_t *k = find(c, name);
  float out = 0;
  void *args[] = {gx32, gy32, &out};
  if (k) CHECK_INT_EQ(hk_call(k, 4099, args), HK_OK);
  return out;
}

static void test_fp_modes(void) {
  if (!g_have_cc) return;
  PATH(log, "cc_args.log");
  PATH(wrapper, "cc_logged.sh");
  char script[4400];
  snprintf(script, sizeof script,
           "#!/bin/sh\necho \"$*\" >> '%s'\nexec cc \"$@\"\n", log);
  write_text(wrapper, script);
  CHECK(chmod(wrapper, 0755) == 0);
  check_make_dir(P("cache_fp"));
  hk_context_t *opt = mkctx(HK_TIER_OPT, NULL, P("cache_fp"), 0, wrapper);
  hk_context_t *jit = mkctx(HK_TIER_JIT, NULL, NULL, HK_NO_CACHE, NULL);
  if (!opt || !jit) {
    hk_context_destroy(opt);
    hk_context_destroy(jit);
    return;
  }
  char text[2048];
  snprintf(text, sizeof text, GOOD_JSON_FMT, "fp_ew", "out = x * 2.0f;");
  const char *args = load_logged(opt, text, "ew.json", log);
  CHECK_CONTAINS(args, "-fwrapv");
  CHECK(!strstr(args, "-fno-wrapv") && !strstr(args, "-fassociative-math"));
  CHECK_CONTAINS(args, "-ffp-contract=off");

  snprintf(text, sizeof text, DOT_JSON_FMT, "dot_strict", "");
  args = load_logged(opt, text, "strict.json", log);
  CHECK_CONTAINS(args, "-fwrapv");
  CHECK(!strstr(args, "-fno-wrapv") && !strstr(args, "-fassociative-math"));
  CHECK_INT_EQ(hk_load_string(jit, text, strlen(text), "strict.json"), HK_OK);

  snprintf(text, sizeof text, DOT_JSON_FMT, "dot_fast", " \"fp\": \"fast\",");
  args = load_logged(opt, text, "fast.json", log);
  CHECK_CONTAINS(args, "-ffp-contract=fast -fno-wrapv -fassociative-math");
  CHECK_INT_EQ(hk_load_string(jit, text, strlen(text), "fast.json"), HK_OK);

  /* a fast kernel that calls exp: contraction only (hk's exp rounds with
   * exact steps that reassociation would fold away), close to strict */
  snprintf(text, sizeof text,
           "{\"schema_version\": 1, \"name\": \"fp_exp\", \"kind\": "
           "\"elementwise\", \"fp\": \"fast\",\n \"params\": [{\"name\": "
           "\"x\", \"type\": \"f32\", \"role\": \"in\"},\n {\"name\": "
           "\"out\", \"type\": \"f32\", \"role\": \"out\"}],\n \"body\": "
           "\"out = expf(x) * 0.5f + x * x;\"}\n");
  args = load_logged(opt, text, "exp.json", log);
  CHECK_CONTAINS(args, "-ffp-contract=fast -fno-wrapv");
  CHECK(!strstr(args, "-fassociative-math"));
  CHECK_INT_EQ(hk_load_string(jit, text, strlen(text), "exp.json"), HK_OK);
  hk_kernel_t *ke = find(opt, "fp_exp"), *kj = find(jit, "fp_exp");
  float *e_opt = g_got, *e_jit = (float *)g_ref;
  void *a_opt[] = {gx32, e_opt}, *a_jit[] = {gx32, e_jit};
  if (ke && kj) {
    CHECK_INT_EQ(hk_call(ke, 4099, a_opt), HK_OK);
    CHECK_INT_EQ(hk_call(kj, 4099, a_jit), HK_OK);
    int far = 0;
    for (int j = 0; j < 4099; j++)
      far += fabsf(e_opt[j] - e_jit[j]) > 1e-5f * fabsf(e_jit[j]);
    CHECK_MSG(!far, "fast exp: %d of 4099 results far from strict", far);
  }

  float strict_opt = dot_on(opt, "dot_strict"),
        strict_jit = dot_on(jit, "dot_strict"),
        fast_opt = dot_on(opt, "dot_fast"), fast_jit = dot_on(jit, "dot_fast");
  printf("note: dot of 4099: strict %.9g (jit %.9g), fast %.9g (jit %.9g)\n",
         strict_opt, strict_jit, fast_opt, fast_jit);
  CHECK(memcmp(&strict_opt, &strict_jit, sizeof(float)) == 0);
  CHECK(memcmp(&fast_jit, &strict_jit, sizeof(float)) == 0); /* tcc: strict */
  CHECK_MSG(fast_opt != strict_opt,
            "the fast dot product gave the strict bits: not vectorised?");
  CHECK(fabsf(fast_opt - strict_opt) <= 1e-3f * (1 + fabsf(strict_opt)));
  CHECK_STR_EQ(note_of(find(opt, "dot_fast")), "");

  /* a fast kernel in a file with a strict one is built strict: its note
   * says so (it looked fast, and was not) */
  char one[1024], two[1024];
  snprintf(one, sizeof one, DOT_JSON_FMT, "dot_mfast", " \"fp\": \"fast\",");
  snprintf(two, sizeof two, DOT_JSON_FMT, "dot_mstrict", "");
  one[strlen(one) - 1] = two[strlen(two) - 1] = '\0'; /* the newlines */
  snprintf(text, sizeof text, "{\"schema_version\": 1, \"kernels\": [%s,\n%s]}",
           one, two);
  (void)load_logged(opt, text, "mixed.json", log);
  CHECK_CONTAINS(note_of(find(opt, "dot_mfast")),
                 "opt: built strict, not fast: its file also holds strict "
                 "kernels");
  CHECK_STR_EQ(note_of(find(opt, "dot_mstrict")), "");
  const float mixed_fast = dot_on(opt, "dot_mfast");
  CHECK(memcmp(&mixed_fast, &strict_opt, sizeof(float)) == 0);

  /* A for loop's int counter is 64 bits wide (emit_common.c), on every
   * tier and in both modes: from INT_MAX - 2 to INT_MAX + 3 is 5 steps,
   * where a 32-bit counter would wrap and never get there (the loop stops
   * after 11). */
  static const char ctr_fmt[] =
      "{\"schema_version\": 1, \"name\": \"%s\", \"kind\": \"raw\",%s\n"
      " \"params\": [{\"name\": \"lo\", \"type\": \"i64\", \"role\": "
      "\"scalar\"},\n  {\"name\": \"hi\", \"type\": \"i64\", \"role\": "
      "\"scalar\"},\n  {\"name\": \"out\", \"type\": \"i64\", \"role\": "
      "\"out\", \"len\": \"1\"}],\n"
      " \"cpu\": \"int64_t c = 0; for (int i = (int)lo; i < hi; i++) "
      "if (++c > 10) break; out[0] = c;\"}\n";
  const char *modes[][2] = {{"ctr_strict", ""}, {"ctr_fast", " \"fp\": \"fast\","}};
  for (size_t m = 0; m < COUNT(modes); m++) {
    snprintf(text, sizeof text, ctr_fmt, modes[m][0], modes[m][1]);
    CHECK_INT_EQ(hk_load_string(opt, text, strlen(text), "ctr.json"), HK_OK);
    CHECK_INT_EQ(hk_load_string(jit, text, strlen(text), "ctr.json"), HK_OK);
    hk_context_t *on[] = {opt, jit};
    for (int c = 0; c < 2; c++) {
      hk_kernel_t *k = find(on[c], modes[m][0]);
      int64_t lo = 2147483645, hi = 2147483650, got = -1;
      void *cargs[] = {&lo, &hi, &got};
      if (k) CHECK_INT_EQ(hk_call(k, 1, cargs), HK_OK);
      CHECK_MSG(got == 5, "%s on tier %s: %lld steps from INT_MAX - 2 to "
                "INT_MAX + 3", modes[m][0], c ? "jit" : "opt", (long long)got);
    }
  }

  /* bad modes, located at the value */
  static const char *const bad[][2] = {
      {" \"fp\": \"fastest\",", "fp: unknown mode \"fastest\"; expected "
                                 "\"strict\" or \"fast\""},
      {" \"fp\": 1,", "fp: expected \"strict\" or \"fast\", got a number"}};
  for (size_t b = 0; b < COUNT(bad); b++) {
    snprintf(text, sizeof text, DOT_JSON_FMT, "dot_bad", bad[b][0]);
    CHECK(hk_load_string(jit, text, strlen(text), "bad_fp.json") != HK_OK);
    int line, col;
    pos_of(text, "\"fp\": ", &line, &col);
    check_at(hk_last_error(), "<bad_fp.json>", line, col + 6, bad[b][1]);
  }
  hk_context_destroy(opt);
  hk_context_destroy(jit);
}


/* ---- 7. Big files in parts ---------------------------------------------------- */

#define NPARTK 16 /* kernels of parts/big.json, each for f32 and f64 */

/* A file of NPARTK kernels out = x * (i + 1) + y; kernel bad (when >= 0)
 * also names reject_p, which the test's compiler rejects. */
static void write_parts_file(const char *path, int bad) {
  char text[16384];
  size_t n = (size_t)snprintf(text, sizeof text,
                              "{\"schema_version\": 1, \"kernels\": [\n");
  for (int i = 0; i < NPARTK; i++)
    n += (size_t)snprintf(
        text + n, sizeof text - n,
        " {\"name\": \"p%d\", \"kind\": \"elementwise\",\n"
        "  \"types\": {\"T\": [\"f32\", \"f64\"]},\n"
        "  \"params\": [{\"name\": \"x\", \"type\": \"T\", \"role\": "
        "\"in\"},\n"
        "   {\"name\": \"y\", \"type\": \"T\", \"role\": \"in\"},\n"
        "   {\"name\": \"out\", \"type\": \"T\", \"role\": \"out\"}],\n"
        "  \"body\": \"%sout = x * (T)%d + y;\"}%s\n",
        i, i == bad ? "T reject_p = 0; out = reject_p; " : "", i + 1,
        i + 1 < NPARTK ? "," : "]}");
  write_text(path, text);
}

/* Every kernel of parts/big.json on tier tier computes x * (i + 1) + y. */
static void check_parts_kernels(hk_context_t *c, hk_tier_t tier,
                                const char *what) {
  double *x = malloc(1000 * sizeof *x), *y = malloc(1000 * sizeof *y);
  for (int j = 0; j < 1000; j++) {
    x[j] = gx32[j];
    y[j] = gy32[j];
  }
  for (int i = 0; i < NPARTK && x && y; i++)
    for (int t = 0; t < 2; t++) {
      char name[32];
      snprintf(name, sizeof name, "p%d_%s", i, t ? "f64" : "f32");
      hk_kernel_t *k = find(c, name);
      if (!k) continue;
      CHECK_MSG(hk_kernel_tier(k) == tier, "%s: %s is on tier %s", what,
                name, hk_tier_name(hk_kernel_tier(k)));
      void *args[] = {t ? (void *)x : gx32, t ? (void *)y : gy32, g_got};
      CHECK_INT_EQ(hk_call(k, 1000, args), HK_OK);
      int bad = 0;
      for (int j = 0; j < 1000; j++)
        bad += t ? ((double *)g_got)[j] != x[j] * (i + 1) + y[j]
                 : ((float *)g_got)[j] != gx32[j] * (float)(i + 1) + gy32[j];
      CHECK_MSG(!bad, "%s: %s computes something else", what, name);
    }
  free(x);
  free(y);
}

/* Expects the compiler runs in the log (those --version aside) to be
 * want_parts compiles of parts (-c) and want_whole others; what names
 * the case. */
static void expect_runs(const char *log, const char *what, int want_parts,
                        int want_whole) {
  int parts = 0, whole = 0;
  FILE *f = fopen(log, "r");
  char line[8192];
  while (f && fgets(line, sizeof line, f)) {
    if (strstr(line, "--version")) continue;
    if (strstr(line, " -c ")) ++parts;
    else if (strstr(line, ".c ") || strstr(line, ".c\n")) ++whole;
  }
  if (f) fclose(f);
  CHECK_MSG(parts == want_parts && whole == want_whole,
            "%s: %d compiles of parts, %d others (%d and %d expected)", what,
            parts, whole, want_parts, want_whole);
}

static void test_parts(void) {
  if (!g_have_cc) return;
  check_make_dir(P("parts"));
  check_make_dir(P("parts_bad"));
  check_make_dir(P("parts_so"));
  write_parts_file(P("parts/big.json"), -1);
  write_parts_file(P("parts_bad/big.json"), 9);
  /* a compiler that logs its arguments and rejects the line naming
   * reject_p, as gcc reports an error, else is cc */
  PATH(cc, "parts_cc.sh");
  PATH(log, "parts_cc.log");
  char script[8192];
  snprintf(script, sizeof script,
           "#!/bin/sh\n"
           "echo \"$@\" >>%s\n"
           "for a in \"$@\"; do case \"$a\" in *.c) src=$a;; esac; done\n"
           "line=$(grep -n reject_p \"$src\" 2>/dev/null | head -1 | "
           "cut -d: -f1)\n"
           "if [ -n \"$line\" ]; then\n"
           "  echo \"$src:$line:19: error: this compiler rejects reject_p\"\n"
           "  exit 1\n"
           "fi\n"
           "exec cc \"$@\"\n",
           log);
  write_text(cc, script);
  CHECK(chmod(cc, 0755) == 0);
  /* 32 instances on 2 processes: 8 parts of 4 (HK_CC_PART_MIN), linked */
  setenv("HK_JOBS", "2", 1);
  write_text(log, "");
  hk_context_t *c = mkctx(HK_TIER_OPT, P("parts"), NULL, HK_NO_CACHE, cc);
  if (c) check_parts_kernels(c, HK_TIER_OPT, "in parts");
  hk_context_destroy(c);
  expect_runs(log, "HK_JOBS=2", 8, 0);

  /* the sanitizer suites (tools/test.sh): the threads of one build in
   * parts are theirs to check; the rest is the same compiles again (8 s
   * of test_opt under TSan), which the first suite checks */
  if (getenv("HK_TEST_JIT_ONLY")) {
    printf("NOTE: HK_TEST_JIT_ONLY: one build in parts only\n");
    unsetenv("HK_JOBS");
    return;
  }

  /* one process: one compile, as before */
  setenv("HK_JOBS", "1", 1);
  write_text(log, "");
  c = mkctx(HK_TIER_OPT, P("parts"), NULL, HK_NO_CACHE, cc);
  if (c) check_parts_kernels(c, HK_TIER_OPT, "HK_JOBS=1");
  hk_context_destroy(c);
  expect_runs(log, "HK_JOBS=1", 0, 1);

  /* a part the compiler rejects: the file is compiled whole again, so that
   * the complaint is located in the kernel file */
  setenv("HK_JOBS", "2", 1);
  write_text(log, "");
  c = mkctx(HK_TIER_AUTO, P("parts_bad"), NULL, HK_NO_CACHE, cc);
  hk_kernel_t *k = c ? find(c, "p0_f32") : NULL;
  if (k) {
    CHECK(hk_kernel_wait_opt(k) != HK_OK);
    CHECK_INT_EQ(hk_kernel_tier(k), HK_TIER_JIT);
    show("note", note_of(k));
    char at[4200];
    size_t len;
    char *text = check_read_file(P("parts_bad/big.json"), &len);
    int line = 0, col = 0;
    if (text) pos_of(text, "reject_p", &line, &col);
    free(text);
    snprintf(at, sizeof at, "%s:%d:", P("parts_bad/big.json"), line);
    CHECK_CONTAINS(note_of(k), "the system compiler failed");
    CHECK_CONTAINS(note_of(k), at);
    CHECK_CONTAINS(note_of(k), "this compiler rejects reject_p");
  }
  hk_context_destroy(c);
  expect_runs(log, "a rejected part", 8, 1);

  /* tier auto over a folder: the big file is not put in a batch (one
   * process would compile it whole) but built in parts on both processes,
   * the small one beside it */
  check_make_dir(P("parts_mix"));
  write_parts_file(P("parts_mix/big.json"), -1);
  write_kernel(P("parts_mix/small.json"), "p_small", "out = x * 3.0f;");
  write_text(log, "");
  c = mkctx(HK_TIER_AUTO, P("parts_mix"), NULL, HK_NO_CACHE, cc);
  if (c) {
    hk_context_wait(c);
    check_parts_kernels(c, HK_TIER_OPT, "a folder");
    CHECK(runs_times(c, "p_small", 3.0f));
  }
  hk_context_destroy(c);
  expect_runs(log, "a folder", 8, 1);

  /* hk build: both copies of a portable plugin in parts at once (4
   * processes: 2 each), linked into one object that loads */
  setenv("HK_JOBS", "4", 1);
  setenv("HK_CC", cc, 1);
  write_text(log, "");
  char in[4200], out[4200];
  snprintf(in, sizeof in, "%s", P("parts/big.json"));
  snprintf(out, sizeof out, "%s", P("parts_so/big.so"));
  char *argv[] = {g_hk, "build", in, "-o", out, NULL};
  PATH(blog, "parts_build.log");
  int rc = run_logged(argv, blog);
  CHECK_MSG(rc == 0, "hk build: exit %d", rc);
  if (rc) print_log(blog);
  unsetenv("HK_CC");
  expect_runs(log, "hk build, HK_JOBS=4", 16, 0);
  c = mkctx(HK_TIER_AUTO, P("parts_so"), NULL, HK_NO_CACHE, NULL);
  if (c) check_parts_kernels(c, HK_TIER_SO, "prebuilt in parts");
  hk_context_destroy(c);
#if defined(__x86_64__)
  void *h = dlopen(out, RTLD_NOW | RTLD_LOCAL);
  CHECK_MSG(h, "dlopen %s: %s", out, dlerror());
  if (h) {
    CHECK(dlsym(h, "hk_range__p0_f32") && dlsym(h, "hk_range__p11_f64"));
    CHECK(dlsym(h, "hk_range__p0_f32__v3") &&
          dlsym(h, "hk_range__p11_f64__v3"));
    dlclose(h);
  }
#endif
  unsetenv("HK_JOBS");
}

/* A watch stopped while its reload runs a forced tier-opt compile: the
 * compile is cancelled, not waited for (hk_watch(ctx, 0) used to wait for
 * it, up to the compile's timeout), the old code stays, and hk_reload
 * later builds the new. The compiler sleeps 30 s while a mark is there. */
static float w_times(hk_context_t *c) {
  hk_kernel_t *k = find(c, "w_k");
  float x = 2, out = 0;
  void *args[] = {&x, &out};
  return k && hk_call(k, 1, args) == HK_OK ? out / x : -1;
}

static void write_w(float f) {
  char text[512];
  snprintf(text, sizeof text,
           "{\"schema_version\": 1, \"name\": \"w_k\", \"kind\": "
           "\"elementwise\", \"params\": [{\"name\": \"x\", \"type\": "
           "\"f32\", \"role\": \"in\"}, {\"name\": \"out\", \"type\": "
           "\"f32\", \"role\": \"out\"}], \"body\": \"out = x * %.1ff;\"}\n",
           f);
  write_text(P("wcancel/w.json"), text);
}

static void test_watch_cancels(void) {
  check_make_dir(P("wcancel"));
  char slow[4096], started[4096], script[9000];
  snprintf(slow, sizeof slow, "%s", P("w_slow"));
  snprintf(started, sizeof started, "%s", P("w_started"));
  snprintf(script, sizeof script,
           "#!/bin/sh\n"
           "case \"$*\" in *--version*) exec cc \"$@\";; esac\n"
           "if [ -f '%s' ]; then echo $$ > '%s'; sleep 30; fi\n"
           "exec cc \"$@\"\n",
           slow, started);
  write_text(P("w_cc.sh"), script);
  CHECK(chmod(P("w_cc.sh"), 0755) == 0);
  write_w(2.0f);
  hk_context_t *c = mkctx(HK_TIER_OPT, P("wcancel"), NULL, HK_NO_CACHE,
                          P("w_cc.sh"));
  if (!c) return;
  CHECK(w_times(c) == 2.0f);
  CHECK_INT_EQ(hk_watch(c, 1), HK_OK);
  write_text(slow, "");
  sleep_ms(20);
  write_w(3.0f);
  double t0 = now_s();
  while (access(started, F_OK) != 0 && now_s() - t0 < 20) sleep_ms(20);
  CHECK_MSG(access(started, F_OK) == 0, "the watcher's compile never began");
  long pid = 0;
  FILE *pf = fopen(started, "r");
  for (double t1 = now_s(); pf && fscanf(pf, "%ld", &pid) != 1 &&
                            now_s() - t1 < 5;)
    rewind(pf), sleep_ms(10); /* the line may not be written yet */
  if (pf) fclose(pf);
  CHECK_INT_EQ(hk_watch(c, 0), HK_OK);
  /* stopped, not waited for: the compiler is gone and the file's old code
   * stays (waited for, the new code would have loaded) */
  CHECK_MSG(pid > 0 && kill((pid_t)pid, 0) != 0,
            "the watcher's compiler (pid %ld) still runs", pid);
  CHECK(w_times(c) == 2.0f);
  CHECK_STR_EQ(hk_context_problems(c), ""); /* no "cancelled" left there */
  unlink(slow);
  CHECK_INT_EQ(hk_reload(c), HK_OK);
  CHECK(w_times(c) == 3.0f);
  hk_context_destroy(c);
}

/* hk_stop_compilers: for good, so last. With no compile running it kills
 * none; then a forced tier-opt load fails at once, saying why, and the
 * kernel is not loaded, while tier jit still works. (Killing a running
 * compile: cli_test, through the hk command's handler.) */
static void test_stop_compilers(void) {
  if (!g_have_cc) return;
  CHECK_INT_EQ(hk_stop_compilers(), 0);
  hk_context_t *opt = mkctx(HK_TIER_OPT, NULL, NULL, HK_NO_CACHE, NULL);
  hk_context_t *jit = mkctx(HK_TIER_JIT, NULL, NULL, HK_NO_CACHE, NULL);
  char text[2048];
  snprintf(text, sizeof text, GOOD_JSON_FMT, "stopped", "out = x * 2.0f;");
  if (opt) {
    CHECK(hk_load_string(opt, text, strlen(text), "stopped.json") != HK_OK);
    CHECK_CONTAINS(hk_last_error(), "interrupted");
    hk_kernel_t *k = NULL;
    CHECK(hk_kernel_find(opt, "stopped", &k) != HK_OK);
  }
  if (jit)
    CHECK_INT_EQ(hk_load_string(jit, text, strlen(text), "stopped.json"),
                 HK_OK);
  hk_context_destroy(opt);
  hk_context_destroy(jit);
}

int main(int argc, char **argv) {
  umask(022);
  if (argc == 4 && !strcmp(argv[1], "--race-child"))
    return race_child(argv[2], argv[3]);
  const char *why = fixture_setup("opt");
  if (why) CHECK_SKIP("%s", why);
  PART("auto", test_auto());
  PART("cache", test_cache());
  PART("cache race", test_cache_race(g_self));
  PART("shared objects", test_shared_objects());
  PART("synthesised imports", test_synthesised());
  PART("refused objects said", test_refused_said());
  PART("batches", test_batches());
  PART("fp modes", test_fp_modes());
  PART("parts", test_parts());
  PART("watch cancels", test_watch_cancels());
  PART("stop compilers", test_stop_compilers()); /* last: for good */
  fixture_teardown();
  CHECK_DONE();
}
