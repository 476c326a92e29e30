/* test_plugins.c — plugin folders and .so plugins (core/module.c,
 * core/elfcheck.c, core/watch.c) through the public API of hk.h.
 *
 *  1. hand-made .so files (tests/plugin_fixtures/fake_plugin.c: ABI,
 *     imports, constructors, no description), unsafe permissions (each
 *     allowed with HK_ALLOW_UNSAFE_PERMISSIONS); a .so replaced by rename
 *     and in place (in a child process: it may crash).
 *  2. reload: changed body (same handle), changed signature (old handle
 *     stale, new one found), removed file, kernel dropped from a file,
 *     syntax and compile errors (the previous version stays), new file, a
 *     folder that appears later; the inotify watcher and its log.
 * `test_plugins --so-inplace-child DIR SO` is the child process of part 1
 * (the test spawns itself). The temp tree and the helpers:
 * tests/registry_fixture.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include <dirent.h>

#include "hk.h"
#include "registry_fixture.h"

/* ---- 1. Bad .so plugins, permissions ------------------------------------------- */

/* Hand-made shared objects: a good one, and one per refusal. */
static void test_bad_so(void) {
  if (!g_have_cc) {
    printf("NOTE: no system compiler 'cc': hand-made plugins not tested\n");
    return;
  }
  char src[4200];
  snprintf(src, sizeof src, "%s/tests/plugin_fixtures/fake_plugin.c", g_src);
  check_make_dir(P("so"));
  static const struct {
    const char *file, *define, *message;
  } cases[] = {
      {"good.so", NULL, NULL},
      {"abi.so", "-DABI=999",
       "built for hk ABI 999, and this hk is ABI 1"},
      {"puts.so", "-DCALL_PUTS", "imports 'puts'"},
      {"ctor.so", "-DCTOR", "constructors"},
      {"nodesc.so", "-DNO_DESC", "not an hk plugin"},
  };
  for (size_t i = 0; i < COUNT(cases); i++) {
    char so[4200];
    snprintf(so, sizeof so, "%s/so/%s", g_root, cases[i].file);
    if (cc_shared(src, so, cases[i].define) != 0) {
      CHECK_MSG(0, "cc failed for %s", cases[i].file);
      continue;
    }
    hk_context_t *c = mkctx(HK_TIER_JIT, NULL, P("cache_bad"), 0, NULL);
    if (!c) continue;
    int rc = hk_load_file(c, so);
    if (!cases[i].message) {
      CHECK_MSG(rc == HK_OK, "%s: %s", so, hk_last_error());
      hk_kernel_t *k = find(c, "t_twice");
      if (k) {
        CHECK_INT_EQ(hk_kernel_tier(k), HK_TIER_SO);
        CHECK_STR_EQ(hk_kernel_info(k)->origin, "so");
        CHECK_STR_EQ(hk_kernel_info(k)->source, so);
        CHECK(runs_times(c, "t_twice", 2.0f));
        CHECK_INT_EQ(hk_kernel_wait_opt(k), HK_OK);
      }
    } else {
      CHECK_MSG(rc != HK_OK, "%s was loaded", so);
      CHECK_CONTAINS(hk_last_error(), so);
      CHECK_CONTAINS(hk_last_error(), cases[i].message);
      show(cases[i].file, hk_last_error());
      CHECK(!found(c, "t_twice"));
    }
    hk_context_destroy(c);
  }
  /* A folder of them: the good one loads, each bad one is a problem. */
  hk_context_t *c = mkctx(HK_TIER_JIT, P("so"), P("cache_bad"), 0, NULL);
  if (c) {
    CHECK(runs_times(c, "t_twice", 2.0f));
    for (size_t i = 1; i < COUNT(cases); i++)
      CHECK_CONTAINS(hk_context_problems(c), cases[i].message);
  }
  hk_context_destroy(c);

  /* A reduction built before the rowred and colred entry points (abi.h):
   * it loads, and sums over the last axis of (R, m) call its range per
   * row, over the first axis per column: the sums in order, for short
   * rows and long ones. */
  PATH(old, "old_reduction.so");
  if (cc_shared(src, old, "-DOLD_REDUCTION") == 0) {
    c = mkctx(HK_TIER_JIT, NULL, P("cache_bad"), 0, NULL);
    CHECK_MSG(c && hk_load_file(c, old) == HK_OK, "%s: %s", old,
              hk_last_error());
    hk_kernel_t *k = c ? find(c, "t_rsum") : NULL;
    static const int64_t shapes[][2] = {{1000, 3}, {40, 1000}};
    for (size_t s = 0; k && s < COUNT(shapes); s++) {
      const int64_t R = shapes[s][0], m = shapes[s][1];
      hk_array_t a[2];
      hk_array_init(&a[0], gx32, HK_F32, 2, shapes[s]);
      hk_array_init(&a[1], g_got, HK_F32, 1, &shapes[s][0]);
      static const int last[] = {-1};
      hk_call_opts_t o = {.axes = last, .naxes = 1};
      CHECK_MSG(hk_call_arrays(k, a, &o) == HK_OK, "%s", hk_last_error());
      int64_t bad = 0;
      for (int64_t r = 0; r < R; r++) {
        float want = 0;
        for (int64_t j = 0; j < m; j++) want = want + gx32[r * m + j];
        bad += memcmp(&want, (float *)g_got + r, 4) != 0;
      }
      CHECK_MSG(bad == 0, "t_rsum over (%lld, %lld): %lld rows wrong",
                (long long)R, (long long)m, (long long)bad);
      /* and over axis 0 (no colred entry either: each column gathered) */
      static const int first[] = {0};
      hk_call_opts_t o0 = {.axes = first, .naxes = 1};
      hk_array_init(&a[1], g_got, HK_F32, 1, &shapes[s][1]);
      CHECK_MSG(hk_call_arrays(k, a, &o0) == HK_OK, "%s", hk_last_error());
      bad = 0;
      for (int64_t j = 0; j < m; j++) {
        float want = 0;
        for (int64_t r = 0; r < R; r++) want = want + gx32[r * m + j];
        bad += memcmp(&want, (float *)g_got + j, 4) != 0;
      }
      CHECK_MSG(bad == 0, "t_rsum over the columns of (%lld, %lld): %lld "
                "wrong", (long long)R, (long long)m, (long long)bad);
    }
    hk_context_destroy(c);
  } else {
    CHECK_MSG(0, "cc failed for old_reduction.so");
  }

  /* A prebuilt plugin replaced by a new build (renamed over it, as hk
   * build does): the same handle runs the new code after hk_reload. */
  check_make_dir(P("so_rel"));
  PATH(so, "so_rel/t.so");
  PATH(next, "so_rel/t.so.next");
  if (cc_shared(src, so, NULL) != 0) return;
  c = mkctx(HK_TIER_JIT, P("so_rel"), P("cache_bad"), 0, NULL);
  hk_kernel_t *k = c ? find(c, "t_twice") : NULL;
  if (k) {
    CHECK(runs_times(c, "t_twice", 2.0f));
    CHECK_INT_EQ(hk_reload(c), HK_OK); /* unchanged */
    if (cc_shared(src, next, "-DFACTOR=3.0f") == 0) {
      CHECK(rename(next, so) == 0);
      CHECK_MSG(hk_reload(c) == HK_OK, "%s", hk_last_error());
      CHECK(find(c, "t_twice") == k);
      CHECK_INT_EQ(hk_kernel_tier(k), HK_TIER_SO);
      CHECK_MSG(runs_times(c, "t_twice", 3.0f),
                "a replaced .so still runs its old code");
    }
    CHECK(unlink(so) == 0);
    CHECK_INT_EQ(hk_reload(c), HK_OK);
    void *args[] = {gx32, g_got};
    CHECK_INT_EQ(hk_call(k, 10, args), HK_ENOTFOUND);
  }
  hk_context_destroy(c);

  /* The same, but the new build is copied over the loaded one in place
   * (cp, same inode): still a changed file, whose new code must run; and
   * nothing may crash. In a child process, as it may. */
  check_make_dir(P("so_cp"));
  PATH(cpso, "so_cp/t.so");
  PATH(v3, "so_v3.so");
  if (cc_shared(src, cpso, NULL) != 0 ||
      cc_shared(src, v3, "-DFACTOR=3.0f") != 0)
    return;
  char self[4096];
  ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
  self[sl > 0 ? sl : 0] = '\0';
  char *argv[] = {self, "--so-inplace-child", (char *)P("so_cp"), v3, NULL};
  PATH(log, "so_inplace.log");
  int rc = run_logged(argv, log);
  CHECK_MSG(rc == 0,
            "a prebuilt plugin copied over in place, then hk_reload: the "
            "child exited with %d (-1: killed by a signal)", rc);
  if (rc != 0) print_log(log);
}

/* The child of the in-place case: loads DIR/t.so (2 x), copies NEW over it
 * in place, reloads, expects 3 x. */
static int so_inplace_child(const char *dir, const char *newso) {
  if (fixture_data() != 0) return 1;
  hk_context_t *c = mkctx(HK_TIER_JIT, dir, NULL, HK_NO_CACHE, NULL);
  if (!c) return 1;
  CHECK(runs_times(c, "t_twice", 2.0f));
  char so[4200];
  snprintf(so, sizeof so, "%s/t.so", dir);
  size_t n;
  char *bytes = check_read_file(newso, &n);
  int fd = open(so, O_WRONLY | O_TRUNC | O_CLOEXEC); /* as cp does */
  CHECK(bytes && fd >= 0 && write(fd, bytes, n) == (ssize_t)n);
  if (fd >= 0) close(fd);
  free(bytes);
  printf("copied in place; reloading\n");
  fflush(stdout);
  int rc = hk_reload(c);
  CHECK_MSG(rc == HK_OK, "%s", hk_last_error());
  CHECK_MSG(runs_times(c, "t_twice", 3.0f), "still the old code");
  hk_context_destroy(c);
  fixture_data_free();
  return check_failures ? 1 : 0;
}

/* Unsafe permissions: refused, with the reason; allowed on request. */
static void test_permissions(void) {
  check_make_dir(P("perm"));
  PATH(file, "perm/perm.json");
  write_kernel(file, "perm_k", "out = x * 2.0f;");
  PATH(cache, "cache_perm");
  check_make_dir(cache);

  /* a kernel file others can write to */
  CHECK(chmod(file, 0666) == 0);
  hk_context_t *c = mkctx(HK_TIER_JIT, P("perm"), cache, 0, NULL);
  if (c) {
    CHECK(!found(c, "perm_k"));
    CHECK_CONTAINS(hk_context_problems(c), file);
    CHECK_CONTAINS(hk_context_problems(c), "others can write");
    show("0666 file", hk_context_problems(c));
    CHECK_INT_EQ(hk_load_file(c, file), HK_EIO);
    CHECK_CONTAINS(hk_last_error(), file);
    CHECK_CONTAINS(hk_last_error(), "others can write");
  }
  hk_context_destroy(c);
  c = mkctx(HK_TIER_JIT, P("perm"), cache, HK_ALLOW_UNSAFE_PERMISSIONS, NULL);
  if (c) {
    CHECK_STR_EQ(hk_context_problems(c), "");
    CHECK(runs_times(c, "perm_k", 2.0f));
  }
  hk_context_destroy(c);
  CHECK(chmod(file, 0644) == 0);

  /* a folder others can write to */
  CHECK(chmod(P("perm"), 0777) == 0);
  c = mkctx(HK_TIER_JIT, P("perm"), cache, 0, NULL);
  if (c) {
    CHECK(!found(c, "perm_k"));
    CHECK_CONTAINS(hk_context_problems(c), P("perm"));
    CHECK_CONTAINS(hk_context_problems(c), "others can write");
    CHECK_CONTAINS(hk_context_problems(c), "folder");
    show("0777 folder", hk_context_problems(c));
    CHECK(hk_load_file(c, file) != HK_OK);
    CHECK_CONTAINS(hk_last_error(), "others can write");
  }
  hk_context_destroy(c);
  c = mkctx(HK_TIER_JIT, P("perm"), cache, HK_ALLOW_UNSAFE_PERMISSIONS, NULL);
  if (c) CHECK(runs_times(c, "perm_k", 2.0f));
  hk_context_destroy(c);
  CHECK(chmod(P("perm"), 0700) == 0);

  /* a kernel file owned by another user */
  if (geteuid() != 0) {
    printf("NOTE: not root: the 'owned by another user' case is not "
           "tested\n");
  } else if (chown(file, 65534, 65534) != 0) {
    printf("NOTE: chown failed (%s): the 'owned by another user' case is not "
           "tested\n", strerror(errno));
  } else {
    c = mkctx(HK_TIER_JIT, P("perm"), cache, 0, NULL);
    if (c) {
      CHECK(!found(c, "perm_k"));
      CHECK_CONTAINS(hk_context_problems(c), file);
      CHECK_CONTAINS(hk_context_problems(c), "owned by another user");
      show("chown 65534", hk_context_problems(c));
    }
    hk_context_destroy(c);
    c = mkctx(HK_TIER_JIT, P("perm"), cache, HK_ALLOW_UNSAFE_PERMISSIONS,
              NULL);
    if (c) CHECK(runs_times(c, "perm_k", 2.0f));
    hk_context_destroy(c);
    CHECK(chown(file, 0, 0) == 0);
  }
  c = mkctx(HK_TIER_JIT, P("perm"), cache, 0, NULL);
  if (c) {
    CHECK_STR_EQ(hk_context_problems(c), "");
    CHECK(runs_times(c, "perm_k", 2.0f));
  }
  hk_context_destroy(c);
}

/* ---- 2. Reload and watch ------------------------------------------------------- */


static const char r2_v2[] =
    "{\"schema_version\": 1, \"name\": \"r_sig\", \"kind\": \"elementwise\",\n"
    " \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},\n"
    "            {\"name\": \"s\", \"type\": \"f32\", \"role\": \"scalar\"},\n"
    "            {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\"}],\n"
    " \"body\": \"out = x * s;\"}\n";

/* Waits up to 10 s for name to compute out = f * x (the watcher's reload). */
static int wait_runs_times(hk_context_t *c, const char *name, float f) {
  double t0 = now_s();
  int changed = 0;
  while (!changed && now_s() - t0 < 10) {
    sleep_ms(20);
    changed = runs_times(c, name, f);
  }
  return changed;
}

/* The watcher of c (plugin folder rel/, kernel r_k of r1 as k1): a rewrite
 * is picked up without hk_reload, and a new file too. */
static void check_watch(hk_context_t *c, hk_kernel_t *k1, const char *r1) {
  CHECK_INT_EQ(hk_watch(c, 1), HK_OK);
  write_kernel(r1, "r_k", "out = x * 5.0f;");
  CHECK_MSG(wait_runs_times(c, "r_k", 5.0f),
            "the watcher did not reload %s within 10 s", r1);
  CHECK(find(c, "r_k") == k1);
  /* and a new file */
  write_kernel(P("rel/r5.json"), "r_watched", "out = x * 8.0f;");
  CHECK_MSG(wait_runs_times(c, "r_watched", 8.0f),
            "the watcher did not load a new file within 10 s");
  /* a rewrite refused for its permissions (others may write it) keeps
   * the old code; the chmod its refusal asks for is seen (IN_ATTRIB) and
   * loads the new one */
  write_kernel(P("rel/r5.tmp"), "r_watched", "out = x * 9.0f;");
  CHECK(chmod(P("rel/r5.tmp"), 0666) == 0);
  CHECK(rename(P("rel/r5.tmp"), P("rel/r5.json")) == 0);
  sleep_ms(600);
  CHECK_MSG(wait_runs_times(c, "r_watched", 8.0f),
            "a file others can write was not refused");
  CHECK(chmod(P("rel/r5.json"), 0644) == 0);
  CHECK_MSG(wait_runs_times(c, "r_watched", 9.0f),
            "the watcher did not see the chmod within 10 s");
  CHECK_INT_EQ(hk_watch(c, 0), HK_OK);
  CHECK_INT_EQ(hk_watch(c, 0), HK_OK); /* twice is harmless */
  /* on and off at once, many times: the thread may not have started when
   * it is stopped (it read the context's watch, cleared by then, and
   * crashed) */
  for (int r = 0; r < 200; r++) {
    CHECK_INT_EQ(hk_watch(c, 1), HK_OK);
    CHECK_INT_EQ(hk_watch(c, 0), HK_OK);
  }
}

/* A context made with HK_WATCH watches from the start; what the watcher
 * finds goes to the log. */
static void check_watch_flag(void) {
  /* made and destroyed at once: the watcher may not have started */
  check_make_dir(P("relw_empty"));
  for (int r = 0; r < 50; r++) {
    const char *edirs[] = {P("relw_empty"), NULL};
    hk_options_t eo = {0};
    eo.plugin_dirs = edirs;
    eo.flags = HK_WATCH | HK_NO_CACHE;
    hk_context_t *e = NULL;
    CHECK_INT_EQ(hk_context_create(&e, &eo), HK_OK);
    hk_context_destroy(e);
  }
  check_make_dir(P("relw"));
  PATH(wfile, "relw/w.json");
  write_kernel(wfile, "w_k", "out = x * 2.0f;");
  const char *dirs[] = {P("relw"), NULL};
  hk_options_t o = {0};
  o.plugin_dirs = dirs;
  o.cache_dir = P("cache_rel");
  o.tier = HK_TIER_JIT;
  o.flags = HK_WATCH;
  o.log = check_log;
  hk_context_t *c = NULL;
  CHECK_INT_EQ(hk_context_create(&c, &o), HK_OK);
  if (c) {
    CHECK(runs_times(c, "w_k", 2.0f));
    write_kernel(wfile, "w_k", "out = x * 3.0f;");
    CHECK_MSG(wait_runs_times(c, "w_k", 3.0f),
              "HK_WATCH: no reload within 10 s");
    /* a broken version: the log says so, the previous one keeps running */
    write_text(wfile, "{\"schema_version\": 1, oops\n");
    double t0 = now_s();
    while (!check_log_has("oops") && now_s() - t0 < 10) sleep_ms(20);
    CHECK_MSG(check_log_has(wfile) && check_log_has("invalid JSON"),
              "the log did not report the broken file: \"%s\"",
              check_log_text());
    CHECK(runs_times(c, "w_k", 3.0f));
  }
  hk_context_destroy(c); /* while watching */
}

/* Waits up to 10 s for c to have no kernel name (the watcher's reload). */
static int wait_gone(hk_context_t *c, const char *name) {
  double t0 = now_s();
  hk_kernel_t *k = NULL;
  while (hk_kernel_find(c, name, &k) == HK_OK && now_s() - t0 < 10)
    sleep_ms(20);
  return hk_kernel_find(c, name, &k) != HK_OK;
}

/* Waits up to 10 s for the log to hold text. */
static int wait_log(const char *text) {
  double t0 = now_s();
  while (!check_log_has(text) && now_s() - t0 < 10) sleep_ms(20);
  return check_log_has(text);
}

/* A reload that changes how a rows buffer steps per row ("one" to
 * "full") changes the kernel's signature: the old handle stops working (it
 * kept running with the new code, writing a row's worth into what the
 * caller sized for one element a row). */
static void check_row_mode_reload(void) {
  check_make_dir(P("relrow"));
  static const char fmt[] =
      "{\"schema_version\": 1, \"name\": \"rm_k\", \"kind\": \"rows\",\n"
      " \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},\n"
      "  {\"name\": \"m\", \"type\": \"f32\", \"role\": \"out\", "
      "\"row\": \"%s\"}],\n"
      " \"body\": \"%s\"}\n";
  char text[1024];
  snprintf(text, sizeof text, fmt, "one", "m[0] = x[0];");
  write_text(P("relrow/rm.json"), text);
  hk_context_t *c = mkctx(HK_TIER_JIT, P("relrow"), NULL, HK_NO_CACHE, NULL);
  if (!c) return;
  hk_kernel_t *k = find(c, "rm_k");
  snprintf(text, sizeof text, fmt, "full",
           "for (size_t j = 0; j < n; j++) m[j] = x[j];");
  sleep_ms(20);
  write_text(P("relrow/rm.json"), text);
  CHECK_INT_EQ(hk_reload(c), HK_OK);
  hk_kernel_t *k2 = find(c, "rm_k");
  CHECK_MSG(k2 && k2 != k, "the handle of rm_k was kept across a change of "
            "m's row mode");
  hk_array_t a[2];
  int64_t xs[2] = {2, 8}, ms[1] = {2};
  float x[16] = {0}, m[2] = {0};
  CHECK_INT_EQ(hk_array_init(&a[0], x, HK_F32, 2, xs), HK_OK);
  CHECK_INT_EQ(hk_array_init(&a[1], m, HK_F32, 1, ms), HK_OK);
  if (k && k2 != k) {
    CHECK_INT_EQ(hk_call_arrays(k, a, NULL), HK_ENOTFOUND);
    CHECK_CONTAINS(hk_last_error(), "rm_k");
  }
  hk_context_destroy(c);
}

/* The log callback runs on hk's threads; one that stops the watch from
 * the watcher's own thread (it cannot join itself) or asks
 * hk_context_wait from the compiler's thread (it would wait for itself). */
static hk_context_t *g_cb_ctx;
static _Atomic int g_cb_stopped, g_cb_wait_rc = 1;
static void stop_from_log(void *user, const char *msg) {
  (void)user;
  if (strstr(msg, "reloaded") && !atomic_load(&g_cb_stopped)) {
    atomic_store(&g_cb_stopped, 1);
    hk_watch(g_cb_ctx, 0);
  }
  if (strstr(msg, "tier opt unavailable"))
    atomic_store(&g_cb_wait_rc, hk_context_wait(g_cb_ctx));
}

static void check_log_callback_calls(void) {
  check_make_dir(P("relcb"));
  write_kernel(P("relcb/a.json"), "cb_k", "out = x * 2.0f;");
  g_cb_ctx = mkctx_with(HK_TIER_JIT, P("relcb"), NULL,
                        HK_WATCH | HK_NO_CACHE, NULL, stop_from_log);
  if (!g_cb_ctx) return;
  sleep_ms(20);
  write_kernel(P("relcb/a.json"), "cb_k", "out = x * 3.0f;");
  CHECK(wait_runs_times(g_cb_ctx, "cb_k", 3.0f));
  for (int t = 0; t < 500 && !atomic_load(&g_cb_stopped); t++) sleep_ms(10);
  CHECK(atomic_load(&g_cb_stopped));
  sleep_ms(300); /* the watcher ends and frees its watch */
  write_kernel(P("relcb/a.json"), "cb_k", "out = x * 4.0f;");
  sleep_ms(500);
  CHECK(runs_times(g_cb_ctx, "cb_k", 3.0f)); /* not watched any more */
  CHECK_INT_EQ(hk_watch(g_cb_ctx, 1), HK_OK);
  hk_context_destroy(g_cb_ctx);
  /* hk_context_wait from the compiler's thread: refused, not a deadlock */
  if (!g_have_cc) return;
  PATH(cc, "relcb_fail.sh");
  write_text(cc, "#!/bin/sh\n"
                 "case \"$*\" in *--version*) exec cc \"$@\";; esac\n"
                 "echo 'this compiler compiles nothing'\nexit 1\n");
  CHECK(chmod(cc, 0755) == 0);
  g_cb_ctx = mkctx_with(HK_TIER_AUTO, P("relcb"), NULL, HK_NO_CACHE, cc,
                        stop_from_log);
  if (!g_cb_ctx) return;
  hk_kernel_t *k = find(g_cb_ctx, "cb_k");
  if (k) CHECK(hk_kernel_wait_opt(k) != HK_OK);
  for (int t = 0; t < 500 && atomic_load(&g_cb_wait_rc) == 1; t++)
    sleep_ms(10);
  CHECK_INT_EQ(atomic_load(&g_cb_wait_rc), HK_EINVAL);
  hk_context_destroy(g_cb_ctx);
}

/* Forced tier opt compiles on the loading thread, the watcher's too:
 * destroying the context cancels that compile instead of waiting for it
 * (a slow compiler: 5 s a compile). */
static void check_destroy_cancels_watch_compile(void) {
  if (!g_have_cc) return;
  check_make_dir(P("relslow"));
  write_kernel(P("relslow/a.json"), "sl_k", "out = x * 2.0f;");
  PATH(cc, "relslow_cc.sh");
  write_text(cc, "#!/bin/sh\n"
                 "case \"$*\" in *--version*) exec cc \"$@\";; esac\n"
                 "[ -f \"${0%.sh}.slow\" ] && sleep 5\n"
                 "exec cc \"$@\"\n");
  CHECK(chmod(cc, 0755) == 0);
  hk_context_t *c =
      mkctx(HK_TIER_OPT, P("relslow"), NULL, HK_WATCH | HK_NO_CACHE, cc);
  if (!c) return;
  CHECK(runs_times(c, "sl_k", 2.0f));
  write_text(P("relslow_cc.slow"), "");
  write_kernel(P("relslow/a.json"), "sl_k", "out = x * 3.0f;");
  sleep_ms(400); /* the watcher is compiling */
  double t0 = now_s();
  hk_context_destroy(c);
  double took = now_s() - t0;
  CHECK_MSG(took < 2.5, "hk_context_destroy took %.2f s: it waited for the "
            "watcher's compile", took);
}

/* The name of a watched folder switched under it with no event for the
 * folder itself (a symlink in its path replaced: the atomic deploy), and
 * a change seen by a watch stopped and started again within the quiet
 * period. */
static void check_watch_name_switch(void) {
  check_make_dir(P("relp"));
  check_make_dir(P("relp/v1"));
  check_make_dir(P("relp/v1/p"));
  check_make_dir(P("relp/v2"));
  check_make_dir(P("relp/v2/p"));
  write_kernel(P("relp/v1/p/a.json"), "ps_k", "out = x * 2.0f;");
  CHECK(symlink("v1", P("relp/current")) == 0);
  hk_context_t *c = mkctx(HK_TIER_JIT, P("relp/current/p"), NULL,
                          HK_WATCH | HK_NO_CACHE, NULL);
  if (!c) return;
  CHECK(runs_times(c, "ps_k", 2.0f));
  write_kernel(P("relp/v2/p/a.json"), "ps_k", "out = x * 3.0f;");
  CHECK(symlink("v2", P("relp/current.new")) == 0);
  CHECK(rename(P("relp/current.new"), P("relp/current")) == 0);
  CHECK_MSG(wait_runs_times(c, "ps_k", 3.0f),
            "a symlink switched in the folder's path was not followed");
  write_kernel(P("relp/v2/p/a.json"), "ps_k", "out = x * 4.0f;");
  CHECK_MSG(wait_runs_times(c, "ps_k", 4.0f),
            "the folder switched to is not watched");
  /* off and on within the quiet period: the change is not lost */
  write_kernel(P("relp/v2/p/a.json"), "ps_k", "out = x * 5.0f;");
  sleep_ms(30);
  CHECK_INT_EQ(hk_watch(c, 0), HK_OK);
  CHECK_INT_EQ(hk_watch(c, 1), HK_OK);
  CHECK_MSG(wait_runs_times(c, "ps_k", 5.0f),
            "a change seen before the watch was stopped and started again "
            "was lost");
  hk_context_destroy(c);
}

/* A watched folder replaced as deploys do (removed and made again; a new
 * one renamed over it), and one that does not exist yet: the watcher
 * follows the name, not the folder it first saw. */
static void check_watch_replaced(void) {
  check_make_dir(P("relr"));
  write_kernel(P("relr/a.json"), "rr_k", "out = x * 2.0f;");
  check_log_clear();
  hk_context_t *c = mkctx_with(HK_TIER_JIT, P("relr"), NULL,
                               HK_WATCH | HK_NO_CACHE, NULL, check_log);
  if (!c) return;
  CHECK(runs_times(c, "rr_k", 2.0f));
  /* rm -rf, then mkdir and copy */
  CHECK(unlink(P("relr/a.json")) == 0 && rmdir(P("relr")) == 0);
  CHECK_MSG(wait_gone(c, "rr_k"), "rr_k still there 10 s after its folder "
            "was removed");
  CHECK_MSG(wait_log("the folder was removed"), "the log says \"%s\"",
            check_log_text());
  check_make_dir(P("relr"));
  write_kernel(P("relr/a.json"), "rr_k", "out = x * 4.0f;");
  CHECK_MSG(wait_runs_times(c, "rr_k", 4.0f),
            "the folder made again was not loaded within 10 s");
  CHECK_MSG(wait_log("the folder is there again"), "the log says \"%s\"",
            check_log_text());
  /* and it is watched again */
  write_kernel(P("relr/a.json"), "rr_k", "out = x * 5.0f;");
  CHECK_MSG(wait_runs_times(c, "rr_k", 5.0f),
            "a rewrite in the folder made again was not reloaded");
  /* a new folder renamed over it */
  check_make_dir(P("relr_new"));
  write_kernel(P("relr_new/a.json"), "rr_k", "out = x * 6.0f;");
  CHECK(rename(P("relr"), P("relr_old")) == 0);
  CHECK(rename(P("relr_new"), P("relr")) == 0);
  CHECK_MSG(wait_runs_times(c, "rr_k", 6.0f),
            "the folder renamed over the watched one was not loaded");
  /* the old one, elsewhere now, is not watched any more */
  write_kernel(P("relr_old/b.json"), "rr_old", "out = x * 7.0f;");
  write_kernel(P("relr/a.json"), "rr_k", "out = x * 8.0f;");
  CHECK_MSG(wait_runs_times(c, "rr_k", 8.0f),
            "a rewrite in the renamed folder was not reloaded");
  CHECK(!found(c, "rr_old"));
  /* a folder that does not exist yet: a problem now, loaded when made */
  CHECK(hk_load_dir(c, P("relr_later")) != HK_OK);
  check_make_dir(P("relr_later"));
  write_kernel(P("relr_later/c.json"), "rr_later", "out = x * 9.0f;");
  CHECK_MSG(wait_runs_times(c, "rr_later", 9.0f),
            "a folder made after hk_load_dir was not loaded within 10 s");
  hk_context_destroy(c);
}

/* Reloads of c's folder rel/ after the first changes (k1 is r_k of r1p):
 * a kernel dropped from a file, syntax and compile errors, a new file r4,
 * and a file loaded by itself. */
static void check_reload_files(hk_context_t *c, hk_kernel_t *k1,
                               const char *r1p, const char *r4) {
  void *args1[] = {gx32, g_got};
  /* a kernel dropped from a file that stays: gone, the other one stays */
  PATH(r6, "rel/r6.json");
  static const char two[] =
      "{\"schema_version\": 1, \"kernels\": [\n"
      " {\"name\": \"r_keep\", \"kind\": \"elementwise\",\n"
      "  \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},\n"
      "             {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\"}],\n"
      "  \"body\": \"out = x * 2.0f;\"},\n"
      " {\"name\": \"r_drop\", \"kind\": \"elementwise\",\n"
      "  \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},\n"
      "             {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\"}],\n"
      "  \"body\": \"out = x * 2.0f;\"}]}\n";
  write_text(r6, two);
  CHECK_MSG(hk_reload(c) == HK_OK, "%s", hk_last_error());
  hk_kernel_t *keep = find(c, "r_keep"), *drop = find(c, "r_drop");
  write_kernel(r6, "r_keep", "out = x * 3.0f;");
  CHECK_MSG(hk_reload(c) == HK_OK, "%s", hk_last_error());
  CHECK(find(c, "r_keep") == keep && runs_times(c, "r_keep", 3.0f));
  if (drop) {
    CHECK_INT_EQ(hk_call(drop, 10, args1), HK_ENOTFOUND);
    CHECK_CONTAINS(note_of(drop), "unloaded");
  }
  CHECK(!found(c, "r_drop"));

  /* a syntax error: reported, and the previous version keeps working */
  write_text(r1p, "{\"schema_version\": 1, \"name\": \"r_k\",\n  oops }\n");
  CHECK_INT_EQ(hk_reload(c), HK_ESCHEMA);
  check_at(hk_last_error(), r1p, 2, 3, "invalid JSON");
  CHECK_CONTAINS(hk_context_problems(c), r1p);
  CHECK_CONTAINS(hk_context_problems(c), "the previous version stays loaded");
  CHECK(find(c, "r_k") == k1);
  CHECK(runs_times(c, "r_k", 3.0f));
  /* a compile error likewise */
  write_kernel(r1p, "r_k", "out = x * ;");
  CHECK_INT_EQ(hk_reload(c), HK_ECOMPILE);
  CHECK_CONTAINS(hk_last_error(), r1p);
  CHECK(runs_times(c, "r_k", 3.0f));

  /* a new file appears; the broken one, fixed, loads again */
  write_kernel(r4, "r_new", "out = x * 7.0f;");
  write_kernel(r1p, "r_k", "out = x * 4.0f;");
  CHECK_MSG(hk_reload(c) == HK_OK, "%s", hk_last_error());
  CHECK_STR_EQ(hk_context_problems(c), "");
  CHECK(runs_times(c, "r_new", 7.0f));
  CHECK(find(c, "r_k") == k1 && runs_times(c, "r_k", 4.0f));
  hk_kernel_t *kn = find(c, "r_new");
  if (kn) CHECK_STR_EQ(hk_kernel_info(kn)->source, r4);

  /* a file loaded by itself (not from a folder) reloads too */
  check_make_dir(P("rel_single"));
  PATH(single, "rel_single/one.json");
  write_kernel(single, "r_single", "out = x * 2.0f;");
  CHECK_MSG(hk_load_file(c, single) == HK_OK, "%s", hk_last_error());
  CHECK(runs_times(c, "r_single", 2.0f));
  write_kernel(single, "r_single", "out = x * 6.0f;");
  CHECK_MSG(hk_reload(c) == HK_OK, "%s", hk_last_error());
  CHECK(runs_times(c, "r_single", 6.0f));
}

/* A file rewritten and reloaded 20 times while its first version
 * compiles for tier opt: the versions replaced before their turn are not
 * compiled (each was, a cache entry and a compile apiece), and the last
 * one runs on tier opt. */
static void check_rewrites(void) {
  if (!g_have_cc) return;
  check_make_dir(P("rew"));
  check_make_dir(P("cache_rew"));
  PATH(f, "rew/w.json");
  write_kernel(f, "w_k", "out = x * 1.0f;");
  hk_context_t *c = mkctx(HK_TIER_AUTO, P("rew"), P("cache_rew"), 0, NULL);
  if (!c) return;
  for (int r = 2; r <= 21; r++) {
    char body[64];
    snprintf(body, sizeof body, "out = x * %d.0f;", r);
    write_kernel(f, "w_k", body);
    CHECK_MSG(hk_reload(c) == HK_OK, "%s", hk_last_error());
  }
  CHECK_INT_EQ(hk_context_wait(c), HK_OK);
  hk_kernel_t *k = find(c, "w_k");
  if (k) {
    CHECK_INT_EQ(hk_kernel_wait_opt(k), HK_OK);
    CHECK_INT_EQ(hk_kernel_tier(k), HK_TIER_OPT);
  }
  CHECK(runs_times(c, "w_k", 21.0f));
  int entries = 0;
  DIR *d = opendir(P("cache_rew"));
  for (struct dirent *e; d && (e = readdir(d));)
    entries += e->d_name[0] != '.';
  if (d) closedir(d);
  CHECK_MSG(entries >= 1 && entries < 10,
            "%d cache entries for 21 versions, the last 20 reloaded at once",
            entries);
  hk_context_destroy(c);
}

static void test_reload(void) {
  check_make_dir(P("rel"));
  PATH(r1, "rel/r1.json");
  PATH(r2, "rel/r2.json");
  PATH(r3, "rel/r3.json");
  PATH(r4, "rel/r4.json");
  const char *r1p = r1;
  write_kernel(r1, "r_k", "out = x * 2.0f;");
  write_kernel(r2, "r_sig", "out = x * 2.0f;");
  write_kernel(r3, "r_del", "out = x * 2.0f;");
  hk_context_t *c = mkctx(HK_TIER_JIT, P("rel"), P("cache_rel"), 0, NULL);
  if (!c) return;
  CHECK_STR_EQ(hk_context_problems(c), "");
  hk_kernel_t *k1 = find(c, "r_k"), *k2 = find(c, "r_sig"),
              *k3 = find(c, "r_del");
  if (!k1 || !k2 || !k3) {
    hk_context_destroy(c);
    return;
  }
  CHECK(runs_times(c, "r_k", 2.0f));
  /* nothing changed: nothing happens */
  CHECK_INT_EQ(hk_reload(c), HK_OK);
  CHECK(find(c, "r_k") == k1 && runs_times(c, "r_k", 2.0f));

  /* a new body, same parameters: the same handle runs the new code */
  write_kernel(r1, "r_k", "out = x * 3.0f;");
  CHECK_MSG(hk_reload(c) == HK_OK, "%s", hk_last_error());
  CHECK(find(c, "r_k") == k1);
  CHECK(runs_times(c, "r_k", 3.0f));
  CHECK_INT_EQ(hk_kernel_tier(k1), HK_TIER_JIT);

  /* new parameters: the old handle stops, a new one takes the name */
  write_text(r2, r2_v2);
  CHECK_MSG(hk_reload(c) == HK_OK, "%s", hk_last_error());
  void *args2[] = {gx32, g_got};
  CHECK_INT_EQ(hk_call(k2, 10, args2), HK_ENOTFOUND);
  CHECK_CONTAINS(hk_last_error(), "r_sig");
  CHECK_CONTAINS(hk_last_error(), "hk_kernel_find");
  CHECK_INT_EQ(hk_kernel_tier(k2), HK_TIER_NONE);
  CHECK_CONTAINS(note_of(k2), "stale");
  int64_t lens[4];
  CHECK_INT_EQ(hk_kernel_lens(k2, 10, args2, lens), HK_ENOTFOUND);
  /* nothing to wait for on a stale handle: said as a call says it */
  CHECK_INT_EQ(hk_kernel_wait_opt(k2), HK_ENOTFOUND);
  CHECK_CONTAINS(hk_last_error(), "reloaded with other parameters");
  hk_kernel_t *k2b = find(c, "r_sig");
  if (k2b) {
    CHECK(k2b != k2);
    CHECK_INT_EQ(hk_kernel_info(k2b)->nparams, 3);
    CHECK_STR_EQ(hk_kernel_info(k2b)->params[1].name, "s");
    float s = 4.0f;
    void *args3[] = {gx32, &s, g_got};
    CHECK_INT_EQ(hk_call(k2b, 1000, args3), HK_OK);
    int ok = 1;
    for (size_t i = 0; i < 1000; i++) ok &= ((float *)g_got)[i] == gx32[i] * s;
    CHECK(ok);
  }
  CHECK_INT_EQ(hk_kernel_info(k2)->nparams, 2); /* the old description */

  /* a removed file: its kernels are gone */
  CHECK(unlink(r3) == 0);
  CHECK_MSG(hk_reload(c) == HK_OK, "%s", hk_last_error());
  void *args1[] = {gx32, g_got};
  CHECK_INT_EQ(hk_call(k3, 10, args1), HK_ENOTFOUND);
  CHECK_CONTAINS(hk_last_error(), "r_del");
  CHECK_CONTAINS(note_of(k3), "unloaded");
  hk_kernel_t *gone = (hk_kernel_t *)1;
  CHECK_INT_EQ(hk_kernel_find(c, "r_del", &gone), HK_ENOTFOUND);
  CHECK(gone == NULL);
  CHECK_CONTAINS(hk_last_error(), "r_del");

  check_reload_files(c, k1, r1p, r4);
  check_watch(c, k1, r1p);
  hk_context_destroy(c);
  check_watch_flag();
  check_watch_replaced();
  check_row_mode_reload();
  check_log_callback_calls();
  check_destroy_cancels_watch_compile();
  check_watch_name_switch();
  check_rewrites();
}

int main(int argc, char **argv) {
  umask(022);
  if (argc == 4 && !strcmp(argv[1], "--so-inplace-child"))
    return so_inplace_child(argv[2], argv[3]);
  const char *why = fixture_setup("plugins");
  if (why) CHECK_SKIP("%s", why);
  PART("bad .so", test_bad_so());
  PART("permissions", test_permissions());
  PART("reload", test_reload());
  fixture_teardown();
  CHECK_DONE();
}
