/* test_loader.c — loading kernel files (core/module.c and the build path):
 * every bad file is refused with its message, located in the kernel file,
 * through the public API of hk.h.
 *
 *  1. bad kernel files, each with its message: JSON syntax, schema, compile
 *     errors that point into the kernel file (jit and opt), a forbidden
 *     call, one bad file among good ones, duplicate and stdlib names.
 * The temp tree and the helpers: tests/registry_fixture.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "hk.h"
#include "registry_fixture.h"

/* ---- 1. Bad kernel files ------------------------------------------------------- */

/* A compile error in a body that passes the lexical checks: the message
 * points into the kernel file, at the body, not at generated code. */
static void check_compile_error(hk_context_t *ctx, const char *path,
                                const char *text, const char *body_start,
                                const char *body_end, const char *compiler) {
  write_text(path, text);
  int rc = hk_load_file(ctx, path);
  const char *msg = hk_last_error();
  show(compiler, msg);
  CHECK_MSG(rc == HK_ECOMPILE, "%s: %d (%s)", path, rc, msg);
  int bl, bc, el, ec;
  pos_of(text, body_start, &bl, &bc);
  pos_of(text, body_end, &el, &ec);
  char prefix[4200];
  snprintf(prefix, sizeof prefix, "%s:%d:", path, bl);
  const char *at = strstr(msg, prefix);
  CHECK_MSG(at != NULL, "%s: no '%s' in \"%s\"", compiler, prefix, msg);
  if (at) {
    int col = atoi(at + strlen(prefix));
    CHECK_MSG(col >= bc && col < ec,
              "%s: column %d is not inside the body (columns %d..%d): %s",
              compiler, col, bc, ec - 1, msg);
    const char *rest = strchr(at + strlen(prefix), ':');
    CHECK_MSG(rest && !strncmp(rest, ": error: body: ", 15),
              "%s: not 'error: body:' in %s", compiler, msg);
  }
  char tag[32];
  snprintf(tag, sizeof tag, "(%s", compiler);
  CHECK_CONTAINS(msg, tag);
  CHECK_MSG(!strstr(msg, "generated") && !strstr(msg, "kernel.c") &&
                !strstr(msg, "bug in hk"),
            "the message points at generated code: %s", msg);
}

/* A kernel file with a JSON syntax error (a trailing comma). */
static const char bad_json[] =
    "{\"schema_version\": 1, \"name\": \"b_json\", \"kind\": \"elementwise\",\n"
    " \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},\n"
    "            {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\"},],\n"
    " \"body\": \"out = x;\"}\n";

/* Loads text as bad/NAME.json into cj: refused (HK_ESCHEMA) with the
 * message what located at needle (no_compiler: a message no compiler
 * wrote), and no kernel NAME. */
static void check_refused_file(hk_context_t *cj, const char *name,
                               const char *text, const char *needle,
                               const char *what, int no_compiler) {
  char rel[128];
  snprintf(rel, sizeof rel, "bad/%s.json", name);
  PATH(path, rel);
  write_text(path, text);
  CHECK_INT_EQ(hk_load_file(cj, path), HK_ESCHEMA);
  int line, col;
  pos_of(text, needle, &line, &col);
  check_at(hk_last_error(), path, line, col, what);
  if (no_compiler)
    CHECK(!strstr(hk_last_error(), "(tcc") && !strstr(hk_last_error(), "(cc"));
  CHECK(!found(cj, name));
}

/* Files refused by the checks, each with its located message: invalid
 * JSON, a schema error, a forbidden call (before any compiler runs). */
static void check_refused(hk_context_t *cj) {
  /* invalid JSON */
  check_refused_file(cj, "b_json", bad_json, "],\n \"body",
                     "invalid JSON: trailing comma before ']'", 0);

  /* a schema error: an unknown type */
  static const char bad_type[] =
      "{\"schema_version\": 1, \"name\": \"b_type\", \"kind\": \"elementwise\",\n"
      " \"params\": [{\"name\": \"x\", \"type\": \"float32\", \"role\": \"in\"},\n"
      "            {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\"}],\n"
      " \"body\": \"out = x;\"}\n";
  check_refused_file(cj, "b_type", bad_type, "\"float32\"",
                     "params[0].type: unknown type \"float32\"", 0);

  /* a forbidden call: refused by the checks, before any compiler runs */
  static const char bad_call[] =
      "{\"schema_version\": 1, \"name\": \"b_call\", \"kind\": \"elementwise\",\n"
      " \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},\n"
      "            {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\"}],\n"
      " \"body\": \"out = x; system(\\\"rm -rf /\\\");\"}\n";
  check_refused_file(cj, "b_call", bad_call, "system(",
                     "body: calls 'system', which is not allowed", 1);
}

/* Compile errors, on tier jit (libtcc) and tier opt (cc): the message
 * points into the kernel file. */
static void check_compile_errors(hk_context_t *cj) {
  /* compile errors, on tier jit (libtcc) and tier opt (cc) */
  static const char bad_syntax[] =
      "{\"schema_version\": 1, \"name\": \"b_syntax\", \"kind\": "
      "\"elementwise\",\n"
      " \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},\n"
      "            {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\"}],\n"
      " \"doc\": \"a C syntax error\",\n"
      " \"body\": \"out = x +;\"}\n";
  static const char bad_name[] =
      "{\"schema_version\": 1, \"name\": \"b_name\", \"kind\": \"elementwise\",\n"
      " \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},\n"
      "            {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\"}],\n"
      " \"body\": \"float t = x * 2; out = t + undeclared_thing;\"}\n";
  check_compile_error(cj, P("bad/b_syntax.json"), bad_syntax, "out = x +;",
                      "\"}\n", "tcc");
  check_compile_error(cj, P("bad/b_name.json"), bad_name, "float t",
                      "\"}\n", "tcc");
  /* tcc gives a line, no column: the identifier its message quotes,
   * found on that line, is the column */
  int ul, uc;
  pos_of(bad_name, "undeclared_thing", &ul, &uc);
  char at[4200];
  snprintf(at, sizeof at, "%s:%d:%d: error: body: 'undeclared_thing'",
           P("bad/b_name.json"), ul, uc);
  CHECK_CONTAINS(hk_last_error(), at);
  CHECK(!found(cj, "b_syntax") && !found(cj, "b_name"));
  if (g_have_cc) {
    check_make_dir(P("bad_opt"));
    hk_context_t *co = mkctx(HK_TIER_OPT, NULL, P("cache_bad"), 0, NULL);
    if (co) {
      check_compile_error(co, P("bad_opt/b_syntax.json"), bad_syntax,
                          "out = x +;", "\"}\n", "cc");
      CHECK_CONTAINS(hk_last_error(), "tier opt failed");
      check_compile_error(co, P("bad_opt/b_name.json"), bad_name, "float t",
                          "\"}\n", "cc");
      CHECK_CONTAINS(hk_last_error(), "undeclared_thing");
      CHECK(!found(co, "b_syntax") && !found(co, "b_name"));
    }
    hk_context_destroy(co);
  }
}

/* A folder with one bad file and two good ones: the good ones load. */
static void check_mixed_folder(void) {
  check_make_dir(P("mixed"));
  write_kernel(P("mixed/m_a.json"), "m_a", "out = x * 2.0f;");
  write_text(P("mixed/m_b.json"), bad_json);
  write_kernel(P("mixed/m_c.json"), "m_c", "out = x * 3.0f;");
  write_text(P("mixed/notes.txt"), "not a kernel file: ignored");
  hk_context_t *cm = mkctx(HK_TIER_JIT, P("mixed"), P("cache_bad"), 0, NULL);
  if (cm) {
    const char *pr = hk_context_problems(cm);
    CHECK_CONTAINS(pr, P("mixed/m_b.json"));
    CHECK_CONTAINS(pr, "invalid JSON");
    CHECK(!strstr(pr, "m_a.json") && !strstr(pr, "m_c.json") &&
          !strstr(pr, "notes.txt"));
    CHECK(runs_times(cm, "m_a", 2.0f));
    CHECK(runs_times(cm, "m_c", 3.0f));
  }
  hk_context_destroy(cm);
  /* hk_load_dir says so too */
  cm = mkctx(HK_TIER_JIT, NULL, P("cache_bad"), 0, NULL);
  if (cm) {
    CHECK_INT_EQ(hk_load_dir(cm, P("mixed")), HK_ESCHEMA);
    CHECK_CONTAINS(hk_last_error(), P("mixed/m_b.json"));
    CHECK_CONTAINS(hk_context_problems(cm), P("mixed/m_b.json"));
    CHECK(runs_times(cm, "m_a", 2.0f) && runs_times(cm, "m_c", 3.0f));
  }
  hk_context_destroy(cm);
}

/* The same kernel name in two files: the second file is refused, naming
 * both; a user kernel cannot take a stdlib name. */
static void check_duplicate_names(void) {
  int line, col;
  check_make_dir(P("dup"));
  write_kernel(P("dup/dup_a.json"), "d_same", "out = x * 2.0f;");
  static const char dup_b[] =
      "{\"schema_version\": 1, \"kernels\": [\n"
      " {\"name\": \"d_other\", \"kind\": \"elementwise\",\n"
      "  \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},\n"
      "             {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\"}],\n"
      "  \"body\": \"out = x;\"},\n"
      " {\"name\": \"d_same\", \"kind\": \"elementwise\",\n"
      "  \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},\n"
      "             {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\"}],\n"
      "  \"body\": \"out = x * 5.0f;\"}]}\n";
  write_text(P("dup/dup_b.json"), dup_b);
  hk_context_t *cd = mkctx(HK_TIER_JIT, P("dup"), P("cache_bad"), 0, NULL);
  if (cd) {
    const char *pr = hk_context_problems(cd);
    pos_of(dup_b, "\"d_same\"", &line, &col);
    check_at(pr, P("dup/dup_b.json"), line, col,
             "kernels[1].name: kernel \"d_same\" is already defined in ");
    int la, ca;
    char text[2048];
    snprintf(text, sizeof text, GOOD_JSON_FMT, "d_same", "out = x * 2.0f;");
    pos_of(text, "\"d_same\"", &la, &ca);
    char where[4300];
    snprintf(where, sizeof where, "%s:%d:%d", P("dup/dup_a.json"), la, ca);
    CHECK_CONTAINS(pr, where);
    CHECK(runs_times(cd, "d_same", 2.0f)); /* the first file's */
    hk_kernel_t *k = find(cd, "d_same");
    if (k) CHECK_STR_EQ(hk_kernel_info(k)->source, P("dup/dup_a.json"));
    CHECK(!found(cd, "d_other")); /* the whole file was refused */
    /* once the first file is gone, the second one loads */
    CHECK(unlink(P("dup/dup_a.json")) == 0);
    CHECK_MSG(hk_reload(cd) == HK_OK, "%s", hk_last_error());
    CHECK_STR_EQ(hk_context_problems(cd), "");
    CHECK(runs_times(cd, "d_same", 5.0f));
    CHECK(found(cd, "d_other"));
  }
  hk_context_destroy(cd);
  check_make_dir(P("stdname"));
  write_kernel(P("stdname/s.json"), "add_f32", "out = x;");
  hk_context_t *cs = mkctx(HK_TIER_JIT, P("stdname"), P("cache_bad"), 0, NULL);
  if (cs) {
    char text[2048];
    snprintf(text, sizeof text, GOOD_JSON_FMT, "add_f32", "out = x;");
    pos_of(text, "\"add_f32\"", &line, &col);
    check_at(hk_context_problems(cs), P("stdname/s.json"), line, col,
             "name: \"add_f32\" is a stdlib kernel");
    hk_kernel_t *k = find(cs, "add_f32");
    if (k) CHECK_STR_EQ(hk_kernel_info(k)->origin, "stdlib");
  }
  hk_context_destroy(cs);
}

static void test_bad_files(void) {
  check_make_dir(P("bad"));
  hk_context_t *cj = mkctx(HK_TIER_JIT, NULL, P("cache_bad"), 0, NULL);
  if (!cj) return;
  check_refused(cj);
  check_compile_errors(cj);
  check_mixed_folder();
  check_duplicate_names();
  hk_context_destroy(cj);
}

int main(int argc, char **argv) {
  umask(022);
  (void)argc;
  (void)argv;
  const char *why = fixture_setup("loader");
  if (why) CHECK_SKIP("%s", why);
  PART("bad files", test_bad_files());
  fixture_teardown();
  CHECK_DONE();
}
