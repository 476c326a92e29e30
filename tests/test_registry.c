/* test_registry.c — the registry (core/context.c): contexts, handles and
 * names, through the public API of hk.h.
 *
 *  1. eight threads finding and calling kernels (and asking for notes and
 *     tier opt) while the folder is rewritten and reloaded 200 times
 *     (HK_SOAK_RELOADS=N: N times; tools/soak.sh runs 1,000): tier
 *     jit, then tier auto with the opt worker and the cache. Every result
 *     is checked. Meant to be clean under ThreadSanitizer too.
 *  2. hk_last_error per thread, hk_kernel_foreach, hk_load_string,
 *     HK_PLUGIN_PATH, bad arguments.
 * The other parts of the runtime have their own tests: test_calls.c (every
 * tier's bits), test_loader.c (bad kernel files), test_opt.c (tier opt and
 * the disk cache), test_plugins.c (.so plugins, reload and watch). The temp
 * tree and the helpers: tests/registry_fixture.h.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "hk.h"
#include "registry_fixture.h"

/* ---- 1. Calls from 8 threads during reloads ------------------------------------ */

#define NTHREADS 8
static atomic_int g_stop;

typedef struct {
  hk_context_t *ctx;
  hk_kernel_t *k; /* c_mul, found before the threads start */
  unsigned id;
  long calls, saw2, saw3, wrong, failed, finds;
  char first_problem[256];
} worker_t;

static void worker_problem(worker_t *w, const char *what, const char *detail) {
  if (!w->first_problem[0])
    snprintf(w->first_problem, sizeof w->first_problem, "%s: %s", what,
             detail);
}

static void *worker(void *arg) {
  worker_t *w = arg;
  static const size_t wsizes[] = {1, 100, 5000, 70001};
  float *out = malloc(70001 * sizeof *out), *sum = malloc(70001 * sizeof *sum);
  uint64_t seed = 0x1234567ull + w->id * 77u;
  hk_kernel_t *add = NULL;
  if (!out || !sum || hk_kernel_find(w->ctx, "add_f32", &add) != HK_OK) {
    w->failed++;
    worker_problem(w, "setup", hk_last_error());
    free(out);
    free(sum);
    return NULL;
  }
  do {
    size_t n = wsizes[rnd(&seed) % COUNT(wsizes)];
    hk_kernel_t *k = w->k;
    if (rnd(&seed) % 2) { /* look it up again: the same handle */
      hk_kernel_t *f = NULL;
      w->finds++;
      if (hk_kernel_find(w->ctx, "c_mul", &f) != HK_OK || f != w->k) {
        w->failed++;
        worker_problem(w, "find", hk_last_error());
        continue;
      }
      k = f;
    }
    if (w->calls % 50 == 7) { /* the other per-kernel calls, meanwhile */
      char note[512];
      hk_kernel_note(k, note, sizeof note);
      int rc = hk_kernel_wait_opt(k);
      if (rc != HK_OK && rc != HK_EUNSUPPORTED) {
        w->failed++;
        worker_problem(w, "hk_kernel_wait_opt", hk_last_error());
      }
    }
    hk_tier_t t = hk_kernel_tier(k);
    if (t != HK_TIER_JIT && t != HK_TIER_OPT) {
      w->failed++;
      worker_problem(w, "tier", hk_tier_name(t));
    }
    const hk_kernel_info_t *in = hk_kernel_info(k);
    if (strcmp(in->name, "c_mul") || in->nparams != 2) {
      w->failed++;
      worker_problem(w, "info", in->name);
    }
    void *args[] = {gpos32, out};
    int rc = hk_call(k, n, args);
    w->calls++;
    if (rc != HK_OK) {
      w->failed++;
      worker_problem(w, "hk_call", hk_last_error());
      continue;
    }
    int all2 = 1, all3 = 1;
    for (size_t i = 0; i < n; i++) {
      all2 &= out[i] == gpos32[i] * 2.0f;
      all3 &= out[i] == gpos32[i] * 3.0f;
    }
    if (all2) w->saw2++;
    if (all3) w->saw3++;
    if (!all2 && !all3) {
      w->wrong++;
      worker_problem(w, "c_mul", "neither all 2x nor all 3x");
    }
    void *aargs[] = {gx32, gy32, sum};
    if (hk_call(add, n, aargs) != HK_OK) {
      w->failed++;
      worker_problem(w, "add_f32", hk_last_error());
      continue;
    }
    for (size_t i = 0; i < n; i++)
      if (sum[i] != gx32[i] + gy32[i]) {
        w->wrong++;
        worker_problem(w, "add_f32", "wrong sum");
        break;
      }
  } while ((!atomic_load(&g_stop) || w->calls < 20) && w->failed < 100);
  free(out);
  free(sum);
  return NULL;
}

static void write_cmul(const char *path, int k) {
  char body[64];
  snprintf(body, sizeof body, "out = x * %d.0f;", k);
  char text[2048];
  snprintf(text, sizeof text, GOOD_JSON_FMT, "c_mul", body);
  write_text(path, text);
}

static void stress(hk_tier_t tier, const char *label) {
  char dir[4200], file[4300], cache[4300];
  snprintf(dir, sizeof dir, "%s", P(label));
  snprintf(file, sizeof file, "%s/c_mul.json", dir);
  snprintf(cache, sizeof cache, "%s.cache", dir);
  check_make_dir(dir);
  check_make_dir(cache);
  write_cmul(file, 2);
  hk_context_t *ctx = mkctx(tier, dir, cache, 0, NULL);
  hk_kernel_t *k = ctx ? find(ctx, "c_mul") : NULL;
  if (!k) {
    hk_context_destroy(ctx);
    return;
  }
  worker_t w[NTHREADS];
  pthread_t th[NTHREADS];
  memset(w, 0, sizeof w);
  atomic_store(&g_stop, 0);
  int started = 0;
  for (int i = 0; i < NTHREADS; i++) {
    w[i].ctx = ctx;
    w[i].k = k;
    w[i].id = (unsigned)i;
    if (pthread_create(&th[i], NULL, worker, &w[i]) != 0) break;
    started++;
  }
  CHECK_INT_EQ(started, NTHREADS);
  int reloads = 0, failed = 0, kk = 2;
  /* HK_SOAK_RELOADS=N (tools/soak.sh): N reloads, however long they take;
   * the suite's run: 200, or 3 seconds */
  const char *soak = getenv("HK_SOAK_RELOADS");
  int want = soak ? atoi(soak) : 200;
  double limit = soak ? 1e9 : 3.0;
  if (want < 1) want = 200;
  double t0 = now_s();
  while (reloads < want && now_s() - t0 < limit) {
    kk = kk == 2 ? 3 : 2;
    write_cmul(file, kk);
    if (hk_reload(ctx) != HK_OK) {
      if (!failed) fprintf(stderr, "  reload: %s\n", hk_last_error());
      failed++;
    }
    reloads++;
    /* let the callers see each version; on tier auto also let the opt
     * worker compile some of them (it skips versions replaced before
     * their turn), so that handles switch tiers under the callers */
    if (tier == HK_TIER_AUTO) sleep_ms(5);
    else if (reloads % 8 == 0) sleep_ms(1);
  }
  atomic_store(&g_stop, 1);
  long calls = 0, saw2 = 0, saw3 = 0, finds = 0;
  for (int i = 0; i < started; i++) {
    pthread_join(th[i], NULL);
    CHECK_MSG(w[i].wrong == 0 && w[i].failed == 0,
              "%s thread %d: %ld wrong, %ld failed; first: %s", label, i,
              w[i].wrong, w[i].failed, w[i].first_problem);
    CHECK_MSG(w[i].calls > 0, "%s thread %d made no call", label, i);
    calls += w[i].calls;
    saw2 += w[i].saw2;
    saw3 += w[i].saw3;
    finds += w[i].finds;
  }
  CHECK_INT_EQ(failed, 0);
  CHECK_MSG(saw2 > 0 && saw3 > 0, "%s: 2x seen %ld times, 3x %ld times",
            label, saw2, saw3);
  /* after the last reload the handle runs the last version */
  CHECK(find(ctx, "c_mul") == k);
  CHECK(runs_times(ctx, "c_mul", (float)kk));
  hk_context_wait(ctx);
  CHECK(runs_times(ctx, "c_mul", (float)kk));
  printf("%s: %d reloads in %.2f s, %ld calls (%ld finds) from %d threads\n",
         label, reloads, now_s() - t0, calls, finds, NTHREADS);
  hk_context_destroy(ctx);
}

/* ---- 2. Misc ------------------------------------------------------------------- */

typedef struct {
  hk_context_t *ctx;
  char before[256], after[256];
} err_thread_t;

static void *err_thread(void *arg) {
  err_thread_t *e = arg;
  snprintf(e->before, sizeof e->before, "%s", hk_last_error());
  hk_kernel_t *k;
  hk_kernel_find(e->ctx, "thread_missing", &k);
  snprintf(e->after, sizeof e->after, "%s", hk_last_error());
  return NULL;
}

typedef struct {
  int n, sorted, stdlib, plugin;
  char last[256];
} foreach_t;

static int collect(hk_kernel_t *k, void *user) {
  foreach_t *f = user;
  const hk_kernel_info_t *in = hk_kernel_info(k);
  if (f->n && strcmp(f->last, in->name) >= 0) f->sorted = 0;
  snprintf(f->last, sizeof f->last, "%s", in->name);
  f->n++;
  if (!strcmp(in->origin, "stdlib")) f->stdlib++;
  if (!strcmp(in->origin, "json")) f->plugin++;
  return 0;
}

static int stop_at_third(hk_kernel_t *k, void *user) {
  (void)k;
  return ++*(int *)user == 3 ? 42 : 0;
}

/* hk_last_error is per thread. */
static void check_last_error(hk_context_t *c) {
  hk_kernel_t *k = NULL;
  CHECK_INT_EQ(hk_kernel_find(c, "main_missing", &k), HK_ENOTFOUND);
  char mine[256];
  snprintf(mine, sizeof mine, "%s", hk_last_error());
  CHECK_CONTAINS(mine, "main_missing");
  err_thread_t e;
  memset(&e, 0, sizeof e);
  e.ctx = c;
  pthread_t th;
  CHECK(pthread_create(&th, NULL, err_thread, &e) == 0);
  pthread_join(th, NULL);
  CHECK_STR_EQ(e.before, ""); /* a new thread has no error */
  CHECK_CONTAINS(e.after, "thread_missing");
  CHECK_STR_EQ(hk_last_error(), mine);
}

/* hk_kernel_foreach: every kernel, in name order (misc/ holds two). */
static void check_foreach(hk_context_t *c) {
  foreach_t f;
  memset(&f, 0, sizeof f);
  f.sorted = 1;
  CHECK_INT_EQ(hk_kernel_foreach(c, collect, &f), 0);
  CHECK(f.sorted);
  CHECK_INT_EQ(f.plugin, 2);
  CHECK(f.stdlib > 50);
  CHECK_INT_EQ(f.n, f.stdlib + f.plugin);
  int count = 0;
  CHECK_INT_EQ(hk_kernel_foreach(c, stop_at_third, &count), 42);
  CHECK_INT_EQ(count, 3);
}

/* hk_load_string: good and bad, loaded again under its name and with
 * other parameters, and under another name. */
static void check_load_string(hk_context_t *c) {
  hk_kernel_t *k = NULL;
  static const char good[] =
      "{\"schema_version\": 1, \"name\": \"str_k\", \"kind\": \"elementwise\","
      " \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},"
      " {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\"}],"
      " \"body\": \"out = x * 9.0f;\"}";
  CHECK_MSG(hk_load_string(c, good, strlen(good), "mystr") == HK_OK, "%s",
            hk_last_error());
  CHECK(runs_times(c, "str_k", 9.0f));
  k = find(c, "str_k");
  if (k) {
    CHECK_STR_EQ(hk_kernel_info(k)->source, "<mystr>");
    CHECK_STR_EQ(hk_kernel_info(k)->origin, "json");
  }
  static const char bad[] =
      "{\"schema_version\": 1,\n"
      " \"name\": \"str_bad\",\n"
      " \"kind\": \"elementwise\", \"params\": [}\n";
  CHECK_INT_EQ(hk_load_string(c, bad, strlen(bad), "bad string"),
               HK_ESCHEMA);
  int line, col;
  pos_of(bad, "}\n", &line, &col);
  check_at(hk_last_error(), "<bad string>", line, col, "invalid JSON");
  static const char bad2[] =
      "{\"schema_version\": 1, \"name\": \"str_bad2\", \"kind\": \"sideways\","
      " \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"}],"
      " \"body\": \"x;\"}";
  CHECK_INT_EQ(hk_load_string(c, bad2, strlen(bad2), NULL), HK_ESCHEMA);
  pos_of(bad2, "\"sideways\"", &line, &col);
  check_at(hk_last_error(), "<string>", line, col, "kind: ");
  CHECK(!found(c, "str_bad") && !found(c, "str_bad2"));
  /* a string loaded again under its name replaces the first */
  static const char good2[] =
      "{\"schema_version\": 1, \"name\": \"str_k\", \"kind\": \"elementwise\","
      " \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},"
      " {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\"}],"
      " \"body\": \"out = x * 10.0f;\"}";
  CHECK_MSG(hk_load_string(c, good2, strlen(good2), "mystr") == HK_OK, "%s",
            hk_last_error());
  CHECK(find(c, "str_k") == k);
  CHECK(runs_times(c, "str_k", 10.0f));
  /* a string loaded again with other parameters: a new handle */
  static const char sig1[] =
      "{\"schema_version\": 1, \"name\": \"str_sig\", \"kind\": \"elementwise\","
      " \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},"
      " {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\"}],"
      " \"body\": \"out = x;\"}";
  static const char sig2[] =
      "{\"schema_version\": 1, \"name\": \"str_sig\", \"kind\": \"elementwise\","
      " \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},"
      " {\"name\": \"s\", \"type\": \"f32\", \"role\": \"scalar\"},"
      " {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\"}],"
      " \"body\": \"out = x * s;\"}";
  CHECK_INT_EQ(hk_load_string(c, sig1, strlen(sig1), "sig"), HK_OK);
  hk_kernel_t *ks1 = find(c, "str_sig");
  CHECK_INT_EQ(hk_load_string(c, sig2, strlen(sig2), "sig"), HK_OK);
  hk_kernel_t *ks2 = NULL;
  CHECK_MSG(hk_kernel_find(c, "str_sig", &ks2) == HK_OK,
            "after a string changed its parameters: %s", hk_last_error());
  if (ks2) {
    CHECK(ks2 != ks1);
    CHECK_INT_EQ(hk_kernel_info(ks2)->nparams, 3);
  }
  if (ks1) CHECK_CONTAINS(note_of(ks1), "stale");

  /* the same string under another name collides */
  CHECK_INT_EQ(hk_load_string(c, good2, strlen(good2), "other"), HK_ESCHEMA);
  CHECK_CONTAINS(hk_last_error(), "<other>");
  CHECK_CONTAINS(hk_last_error(), "already defined in <mystr>");
}

/* A plugin folder that does not exist yet: a problem, then loaded by a
 * reload once it does; plugin_dirs NULL: HK_PLUGIN_PATH; an empty list:
 * no folder at all. */
static void check_plugin_dirs(void) {
  hk_context_t *cl = mkctx(HK_TIER_JIT, P("misc_later"), P("cache_misc"), 0,
                           NULL);
  if (cl) {
    CHECK_CONTAINS(hk_context_problems(cl), P("misc_later"));
    check_make_dir(P("misc_later"));
    write_kernel(P("misc_later/l.json"), "later_k", "out = x * 2.0f;");
    CHECK_MSG(hk_reload(cl) == HK_OK, "%s", hk_last_error());
    CHECK(runs_times(cl, "later_k", 2.0f));
    CHECK_STR_EQ(hk_context_problems(cl), "");
  }
  hk_context_destroy(cl);

  /* plugin_dirs NULL: HK_PLUGIN_PATH; an empty list: no folder at all */
  char env[8500];
  snprintf(env, sizeof env, "%s:%s", P("no_such_dir"), P("misc"));
  setenv("HK_PLUGIN_PATH", env, 1);
  hk_options_t po = {0};
  po.cache_dir = P("cache_misc");
  po.tier = HK_TIER_JIT;
  hk_context_t *ce = NULL;
  CHECK_INT_EQ(hk_context_create(&ce, &po), HK_OK);
  if (ce) CHECK(found(ce, "aaa_first") && found(ce, "zzz_last"));
  hk_context_destroy(ce);
  ce = mkctx(HK_TIER_JIT, NULL, P("cache_misc"), 0, NULL);
  if (ce) CHECK(!found(ce, "aaa_first"));
  hk_context_destroy(ce);
  unsetenv("HK_PLUGIN_PATH");
}

/* Bad arguments. */
static void check_bad_arguments(hk_context_t *c) {
  CHECK_INT_EQ(hk_load_file(c, P("misc/notes.txt")), HK_EINVAL);
  CHECK_INT_EQ(hk_load_file(c, P("misc/missing.json")), HK_EIO);
  CHECK_CONTAINS(hk_last_error(), P("misc/missing.json"));
  hk_context_t *bad_ctx = (hk_context_t *)1;
  hk_options_t o = {0};
  o.tier = HK_TIER_INLINE;
  o.cache_dir = P("cache_misc");
  CHECK_INT_EQ(hk_context_create(&bad_ctx, &o), HK_EINVAL);
  CHECK(bad_ctx == NULL);
  hk_context_destroy(NULL);
}

static void test_misc(void) {
  check_make_dir(P("misc"));
  write_kernel(P("misc/aaa.json"), "aaa_first", "out = x;");
  write_kernel(P("misc/zzz.json"), "zzz_last", "out = x;");
  hk_context_t *c = mkctx(HK_TIER_JIT, P("misc"), P("cache_misc"), 0, NULL);
  if (!c) return;
  check_last_error(c);
  check_foreach(c);
  check_load_string(c);
  check_plugin_dirs();
  check_bad_arguments(c);
  hk_context_destroy(c);
}

int main(int argc, char **argv) {
  umask(022);
  (void)argc;
  (void)argv;
  const char *why = fixture_setup("registry");
  if (why) CHECK_SKIP("%s", why);
  PART("threads (jit)", stress(HK_TIER_JIT, "stress_jit"));
  PART("threads (auto)", stress(HK_TIER_AUTO, "stress_auto"));
  PART("misc", test_misc());
  fixture_teardown();
  CHECK_DONE();
}
