/* test_nvrtc.c — the CUDA that hk emits compiles with NVRTC (a plugin's:
 * no N-D entries, the stdlib's alone; a rows kernel's cooperative entry
 * from its "cuda" body, every row helper instantiated), and NVRTC's errors
 * are reported in the kernel file. Needs NVRTC (the CUDA toolkit),
 * not a GPU: compiles the plugins for sm_80 and sm_90, the stdlib's files
 * to PTX for compute_80 (NVRTC's front end and optimizer; nvcc compiles
 * them in the build too). Skipped (77) without NVRTC.
 *
 * Usage: test_nvrtc SOURCE_DIR (the stdlib_kernels/ and plugins/ there). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi.h" /* HK_ABI_CUDA_ND */
#include "build.h"
#include "codegen.h"
#include "compiler.h"
#include "cuda.h"
#include "diag.h"

static int checks, failures;

#define CHECK(cond, ...)                                   \
  do {                                                     \
    checks++;                                              \
    if (!(cond)) {                                         \
      failures++;                                          \
      fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                        \
      fputc('\n', stderr);                                 \
    }                                                      \
  } while (0)

static const char *const archs[] = {"sm_80", "sm_90"};
/* The stdlib's files: PTX (NVRTC's front end and optimizer, no back end,
 * which the plugins exercise for both machine architectures): 27 s of
 * the test's 40 were the stdlib's files through the back end. */
static const char *const ptx_arch[] = {"compute_80"};

/* 1 when the n bytes at p hold the string s (with its terminating 0, as
 * in an ELF string table). */
static int holds(const void *p, size_t n, const char *s) {
  size_t m = strlen(s) + 1;
  for (const char *c = p, *end = (const char *)p + n; c + m <= end; c++)
    if (*c == *s && !memcmp(c, s, m)) return 1;
  return 0;
}

/* 1 when the n bytes at p hold s (without its 0: a PTX name). */
static int holds_text(const void *p, size_t n, const char *s) {
  size_t m = strlen(s);
  for (const char *c = p, *end = (const char *)p + n; c + m <= end; c++)
    if (*c == *s && !memcmp(c, s, m)) return 1;
  return 0;
}

/* No elementwise instance of f has an N-D entry in its NVRTC cubin (or
 * PTX): the entries are the stdlib's, built by nvcc (codegen/emit_cuda.c),
 * where test_cuda calls them; in a plugin they would multiply its compile
 * time at its first GPU call. */
static void check_nd_entries(const hkc_file *f, const hk_object_t *cubin,
                             int ptx) {
  for (int i = 0; i < hkc_file_ninstances(f); i++) {
    const hkc_instance *in = hkc_file_instance(f, i);
    if (hkc_instance_kind(in) != HK_KIND_ELEMENTWISE ||
        !(hkc_instance_targets(in) & HK_TARGET_CUDA))
      continue;
    char name[256];
    snprintf(name, sizeof name, HK_ABI_CUDA_ND "%s", hkc_instance_name(in));
    CHECK(!(ptx ? holds_text : holds)(cubin->image, cubin->size, name),
          "%s: %s in a plugin's cubin", hkc_file_path(f), name);
  }
}

/* Compiles f's CUDA for each of the narch architectures as; returns the
 * diagnostics of the last failure (formatted, malloc'ed) or NULL when all
 * compiled. */
static char *compile_all(const hk_nvrtc_api_t *nv, hkc_file *f,
                         const char *const *as, size_t narch) {
  hkc_unit *u = NULL;
  char *fail = NULL;
  if (hkc_unit_emit(f, HKC_LANG_CUDA, 0, &u)) return strdup("emit failed");
  hk_compiler_t c = hk__compiler_nvrtc(nv);
  for (size_t a = 0; a < narch; a++) {
    hku_diags d = HKU_DIAGS_INIT;
    hk_compile_opts_t o = {.arch = as[a]};
    int ptx = !strncmp(as[a], "compute_", 8);
    hk_object_t cubin;
    if (hk__build_compile(&c, u, &o, NULL, &cubin, &d)) {
      hku_buf m = HKU_BUF_INIT;
      hku_diags_format(&d, &m);
      free(fail);
      fail = strdup(hku_buf_str(&m));
      hku_buf_free(&m);
    } else {
      /* a cubin is an ELF image; PTX text with its 0 */
      if (ptx)
        CHECK(cubin.size > 1 && ((char *)cubin.image)[cubin.size - 1] == 0 &&
                  holds_text(cubin.image, cubin.size, ".entry"),
              "%s: no PTX", hkc_file_path(f));
      else
        CHECK(cubin.size > 4 && !memcmp(cubin.image, "\x7f" "ELF", 4),
              "%s: no ELF cubin", hkc_file_path(f));
      check_nd_entries(f, &cubin, ptx);
      hk__object_free(&cubin);
    }
    hku_diags_free(&d);
  }
  hkc_unit_free(u);
  return fail;
}

static int has_cuda(const hkc_file *f) {
  return (hkc_file_targets(f) & HK_TARGET_CUDA) != 0;
}

static int compile_dir(const hk_nvrtc_api_t *nv, const char *dir,
                       const char *const *as, size_t narch) {
  DIR *d = opendir(dir);
  CHECK(d != NULL, "cannot open %s", dir);
  if (!d) return 0;
  int count = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t n = strlen(e->d_name);
    if (n < 6 || strcmp(e->d_name + n - 5, ".json")) continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    hku_diags dg = HKU_DIAGS_INIT;
    hkc_file *f = NULL;
    CHECK(hkc_file_load(path, &f, &dg) == 0, "%s does not load", path);
    if (f && has_cuda(f)) {
      char *fail = compile_all(nv, f, as, narch);
      CHECK(fail == NULL, "NVRTC rejects the CUDA of %s:\n%s", path, fail);
      free(fail);
      count++;
    }
    hkc_file_free(f);
    hku_diags_free(&dg);
  }
  closedir(d);
  return count;
}

/* A raw kernel whose CUDA body has an error on its second line: the error
 * is reported at that line of the kernel file, field cuda. */
/* fail, a failed compile's message about undeclared_thing in a "cuda"
 * body, is located at where ("FILE:LINE:"), names the field and the
 * identifier, and does not blame hk. */
static void check_undeclared(const char *fail, const char *where) {
  CHECK(fail != NULL, "%s", "an undeclared identifier compiled");
  if (!fail) return;
  CHECK(strstr(fail, where) != NULL, "the error is not located at %s:\n%s",
        where, fail);
  CHECK(strstr(fail, "cuda") != NULL, "the field is not named:\n%s", fail);
  CHECK(strstr(fail, "undeclared_thing") != NULL,
        "the message does not name the identifier:\n%s", fail);
  CHECK(strstr(fail, "bug in hk") == NULL, "blamed on hk:\n%s", fail);
}

static void compile_error_located(const hk_nvrtc_api_t *nv) {
  const char *text =
      "{\n"
      "  \"schema_version\": 1,\n"
      "  \"name\": \"broken\",\n"
      "  \"kind\": \"raw\",\n"
      "  \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"inout\"}],\n"
      "  \"cuda\": [\"size_t k = blockIdx.x;\",\n"
      "           \"x[k] = undeclared_thing + 1;\"]\n"
      "}\n";
  hku_diags d = HKU_DIAGS_INIT;
  hkc_file *f = NULL;
  CHECK(hkc_file_parse("broken.json", text, strlen(text), &f, &d) == 0,
        "broken.json does not parse");
  if (!f) return;
  char *fail = compile_all(nv, f, archs, 1);
  check_undeclared(fail, "broken.json:7:");
  free(fail);
  hkc_file_free(f);
  hku_diags_free(&d);
}

/* Compiles text (a kernel file) for sm_80 into *cubin; NULL, or the
 * diagnostics (formatted, malloc'ed). */
static char *compile_text(const hk_nvrtc_api_t *nv, const char *path,
                          const char *text, hk_object_t *cubin) {
  hku_diags d = HKU_DIAGS_INIT;
  hkc_file *f = NULL;
  hkc_unit *u = NULL;
  char *fail = NULL;
  memset(cubin, 0, sizeof *cubin);
  if (hkc_file_parse(path, text, strlen(text), &f, &d) ||
      hkc_unit_emit(f, HKC_LANG_CUDA, 0, &u)) {
    fail = strdup("does not parse or emit");
  } else {
    hk_compiler_t c = hk__compiler_nvrtc(nv);
    hk_compile_opts_t o = {.arch = archs[0]};
    if (hk__build_compile(&c, u, &o, NULL, cubin, &d)) {
      hku_buf m = HKU_BUF_INIT;
      hku_diags_format(&d, &m);
      fail = strdup(hku_buf_str(&m));
      hku_buf_free(&m);
    }
  }
  hkc_unit_free(u);
  hkc_file_free(f);
  hku_diags_free(&d);
  return fail;
}

/* A rows kernel's "cuda" body: every helper, on the types it is documented
 * for, compiles, and the cubin holds each instance's cooperative entry
 * (HK_ABI_CUDA_ROWS_COOP) besides its thread-a-row entry; a rows kernel
 * without one has none; an error in the body is located at its line of
 * the kernel file, field cuda. */
static void rows_cuda(const hk_nvrtc_api_t *nv) {
  static const char good[] =
      "{\"schema_version\": 1, \"kernels\": [\n"
      " {\"name\": \"coop\", \"kind\": \"rows\", \"types\": {\"T\": [\"f32\", "
      "\"f64\"]},\n"
      "  \"params\": [{\"name\": \"x\", \"type\": \"T\", \"role\": \"in\"},\n"
      "             {\"name\": \"y\", \"type\": \"T\", \"role\": \"out\"}],\n"
      "  \"body\": \"for (size_t i = 0; i < n; ++i) y[i] = x[i];\",\n"
      "  \"cuda\": [\"__shared__ T t[64];\",\n"
      "           \"T v = hk_lane < n ? x[hk_lane] : (T)0;\",\n"
      "           \"T s = hk_row_sum(v) + hk_row_max(v) + hk_row_min(v);\",\n"
      "           \"int a = hk_row_sum((int)hk_lane) + hk_row_max((int)row);\",\n"
      "           \"unsigned b = hk_row_min(hk_lane) + hk_row_bcast(hk_lanes, 3);\",\n"
      "           \"long long c = hk_row_sum((long long)n);\",\n"
      "           \"size_t d = hk_row_max(n) + hk_row_bcast(row, 0);\",\n"
      "           \"t[hk_lane % 64] = hk_row_tree16(s) + hk_row_bcast(v, 0);\",\n"
      "           \"hk_row_sync();\",\n"
      "           \"for (size_t i = hk_lane; i < n; i += hk_lanes)\",\n"
      "           \"    y[i] = x[i] + t[0] * (T)(a + (int)b + (int)c + (int)d);\"]},\n"
      " {\"name\": \"plain\", \"kind\": \"rows\",\n"
      "  \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},\n"
      "             {\"name\": \"y\", \"type\": \"f32\", \"role\": \"out\"}],\n"
      "  \"body\": \"y[0] = x[0];\"}]}\n";
  hk_object_t cubin;
  char *fail = compile_text(nv, "coop.json", good, &cubin);
  CHECK(fail == NULL, "a rows kernel's cuda body does not compile:\n%s",
        fail);
  if (!fail) {
    static const char *const has[] = {
        HK_ABI_CUDA_ROWS_COOP "coop_f32", HK_ABI_CUDA_ROWS_COOP "coop_f64",
        HK_ABI_CUDA_KERNEL "coop_f32", HK_ABI_CUDA_KERNEL "plain"};
    for (size_t i = 0; i < sizeof has / sizeof *has; i++)
      CHECK(holds(cubin.image, cubin.size, has[i]), "no %s in the cubin",
            has[i]);
    CHECK(!holds(cubin.image, cubin.size, HK_ABI_CUDA_ROWS_COOP "plain"),
          "%s", "a rows kernel without a cuda body has a cooperative entry");
    hk__object_free(&cubin);
  }
  free(fail);

  static const char broken[] =
      "{\"schema_version\": 1, \"name\": \"broken\", \"kind\": \"rows\",\n"
      "  \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},\n"
      "             {\"name\": \"y\", \"type\": \"f32\", \"role\": \"out\"}],\n"
      "  \"body\": \"y[0] = x[0];\",\n"
      "  \"cuda\": [\"float s = hk_row_sum(x[hk_lane]);\",\n"
      "           \"y[0] = s + undeclared_thing;\"]}\n";
  fail = compile_text(nv, "broken.json", broken, &cubin);
  check_undeclared(fail, "broken.json:6:");
  if (!fail) hk__object_free(&cubin);
  free(fail);
}

int main(int argc, char **argv) {
  const char *src = argc > 1 ? argv[1] : getenv("HK_SOURCE_DIR");
  if (!src) {
    fprintf(stderr, "usage: test_nvrtc SOURCE_DIR\n");
    return 2;
  }
  const hk_nvrtc_api_t *nv;
  int version;
  hku_diags why = HKU_DIAGS_INIT;
  if (hk__nvrtc_load(&nv, &version, &why)) {
    printf("SKIPPED: %s\n", hk__cuda_why(&why));
    hku_diags_free(&why);
    return 77;
  }
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/stdlib_kernels", src);
  /* the stdlib's files (as plugins) to PTX: the most code, and what
   * differs by architecture is NVRTC's back end, which the plugins
   * exercise for both */
  int nstd = compile_dir(nv, dir, ptx_arch, 1);
  snprintf(dir, sizeof dir, "%s/plugins", src);
  int nplug = compile_dir(nv, dir, archs, sizeof archs / sizeof *archs);
  CHECK(nstd >= 5, "only %d stdlib files target cuda", nstd);
  CHECK(nplug >= 3, "only %d plugin files target cuda", nplug);
  compile_error_located(nv);
  rows_cuda(nv);
  printf("NVRTC %d.%d: the CUDA of %d stdlib (compute_80 PTX) and %d plugin "
         "kernel files (sm_80, sm_90) compiles\n",
         version / 1000, version % 1000 / 10, nstd, nplug);
  printf("test_nvrtc: %d checks, %d failed\n", checks, failures);
  return failures ? 1 : 0;
}
