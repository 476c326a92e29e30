/* test_nvrtc.c — the CUDA that hk emits compiles with NVRTC (a plugin's:
 * no N-D entries, the stdlib's alone), and NVRTC's errors are reported
 * in the kernel file. Needs NVRTC (the CUDA toolkit),
 * not a GPU: compiles the plugins for sm_80 and sm_90, the stdlib's files
 * for sm_80. Skipped (77) without NVRTC.
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

/* 1 when the n bytes at p hold the string s (with its terminating 0, as
 * in an ELF string table). */
static int holds(const void *p, size_t n, const char *s) {
  size_t m = strlen(s) + 1;
  for (const char *c = p, *end = (const char *)p + n; c + m <= end; c++)
    if (*c == *s && !memcmp(c, s, m)) return 1;
  return 0;
}

/* No elementwise instance of f has an N-D entry in its NVRTC cubin: the
 * entries are the stdlib's, built by nvcc (codegen/emit_cuda.c), where
 * test_cuda calls them; in a plugin they would multiply its compile time
 * at its first GPU call. */
static void check_nd_entries(const hkc_file *f, const hk_object_t *cubin) {
  for (int i = 0; i < hkc_file_ninstances(f); i++) {
    const hkc_instance *in = hkc_file_instance(f, i);
    if (hkc_instance_kind(in) != HK_KIND_ELEMENTWISE ||
        !(hkc_instance_targets(in) & HK_TARGET_CUDA))
      continue;
    char name[256];
    snprintf(name, sizeof name, HK_ABI_CUDA_ND "%s", hkc_instance_name(in));
    CHECK(!holds(cubin->image, cubin->size, name),
          "%s: %s in a plugin's cubin", hkc_file_path(f), name);
  }
}

/* Compiles f's CUDA for the first narch of archs; returns the diagnostics
 * of the last failure (formatted, malloc'ed) or NULL when all compiled. */
static char *compile_all(const hk_nvrtc_api_t *nv, hkc_file *f,
                         size_t narch) {
  hkc_unit *u = NULL;
  char *fail = NULL;
  if (hkc_unit_emit(f, HKC_LANG_CUDA, 0, &u)) return strdup("emit failed");
  hk_compiler_t c = hk__compiler_nvrtc(nv);
  for (size_t a = 0; a < narch; a++) {
    hku_diags d = HKU_DIAGS_INIT;
    hk_compile_opts_t o = {.arch = archs[a]};
    hk_object_t cubin;
    if (hk__build_compile(&c, u, &o, NULL, &cubin, &d)) {
      hku_buf m = HKU_BUF_INIT;
      hku_diags_format(&d, &m);
      free(fail);
      fail = strdup(hku_buf_str(&m));
      hku_buf_free(&m);
    } else {
      /* a cubin is an ELF image */
      CHECK(cubin.size > 4 && !memcmp(cubin.image, "\x7f" "ELF", 4),
            "%s: no ELF cubin", hkc_file_path(f));
      check_nd_entries(f, &cubin);
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
                       size_t narch) {
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
      char *fail = compile_all(nv, f, narch);
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
  char *fail = compile_all(nv, f, 1);
  CHECK(fail != NULL, "an undeclared identifier compiled");
  if (fail) {
    CHECK(strstr(fail, "broken.json:7:") != NULL,
          "the error is not located at line 7 of the file:\n%s", fail);
    CHECK(strstr(fail, "cuda") != NULL, "the field is not named:\n%s", fail);
    CHECK(strstr(fail, "undeclared_thing") != NULL,
          "the message does not name the identifier:\n%s", fail);
    CHECK(strstr(fail, "bug in hk") == NULL, "blamed on hk:\n%s", fail);
  }
  free(fail);
  hkc_file_free(f);
  hku_diags_free(&d);
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
  /* the stdlib's files (as plugins) for sm_80 alone: the most code, and
   * what differs by architecture is NVRTC's back end, which the plugins
   * exercise for both */
  int nstd = compile_dir(nv, dir, 1);
  snprintf(dir, sizeof dir, "%s/plugins", src);
  int nplug = compile_dir(nv, dir, sizeof archs / sizeof *archs);
  CHECK(nstd >= 5, "only %d stdlib files target cuda", nstd);
  CHECK(nplug >= 3, "only %d plugin files target cuda", nplug);
  compile_error_located(nv);
  printf("NVRTC %d.%d: the CUDA of %d stdlib (sm_80) and %d plugin kernel "
         "files (sm_80, sm_90) compiles\n",
         version / 1000, version % 1000 / 10, nstd, nplug);
  printf("test_nvrtc: %d checks, %d failed\n", checks, failures);
  return failures ? 1 : 0;
}
