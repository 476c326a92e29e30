/* cmd_gen.c — hk gen: print the source generated from a kernel file. */
#include <stdio.h>
#include <string.h>

#include "build.h"
#include "cli.h"
#include "codegen.h"

static const char *const help =
    "usage: hk gen FILE [--target cpu|cuda] [-o OUT]\n\n"
    "Prints (or writes to OUT) the source hk generates from a kernel file:\n"
    "  --target cpu   C, self-contained (no #include, no C library): what the\n"
    "                 JIT compiles; `cc -O3 -shared -fPIC OUT.c` builds it.\n"
    "                 This is the default.\n"
    "  --target cuda  CUDA C for nvcc or NVRTC.\n"
    "Exits 1 when the file is invalid (as hk check finds it: the C of its\n"
    "bodies included) or has no kernel for the target.\n";

enum { OPT_TARGET, OPT_OUT };
static const hk_cli_opt options[] = {
    [OPT_TARGET] = {"target", 0, "a value", HK_CLI_ONCE},
    [OPT_OUT] = {NULL, 'o', "a value", HK_CLI_ONCE},
};

int hk_cmd_gen(int argc, char **argv) {
  const char *file = NULL, *out = NULL, *target = "cpu";
  hk_cli_parser p;
  hk_cli_parser_init(&p, "gen", help, options,
                     sizeof options / sizeof *options, argc, argv);
  for (int c; (c = hk_cli_next(&p)) != HK_CLI_END;) {
    if (c == HK_CLI_EXIT) return p.status;
    if (c == OPT_TARGET) {
      target = p.value;
    } else if (c == OPT_OUT) {
      out = p.value;
    } else if (file) {
      return hk_cli_usage("gen", "one kernel file at a time ('%s' and '%s')",
                          file, p.value);
    } else {
      file = p.value;
    }
  }
  if (!file) return hk_cli_usage("gen", "no kernel file given");
  if (out && hk_cli_same_file(file, out))
    return hk_cli_usage("gen", "-o %s is the kernel file itself; it would be "
                               "overwritten",
                        out);
  int cuda = !strcmp(target, "cuda");
  if (!cuda && strcmp(target, "cpu"))
    return hk_cli_usage("gen", "unknown target '%s' (expected cpu or cuda)",
                        target);

  hku_diags d = HKU_DIAGS_INIT;
  hkc_file *f = NULL;
  /* invalid as hk check finds it: the format, the C of the bodies (their
   * syntax and types: compiled by libtcc as tier jit does) and a stdlib
   * kernel's name; gen prints no source a load would refuse */
  int bad = hkc_file_load(file, &f, &d) != 0;
  if (!bad) {
    if (hk__build_check(f, &d) == HK_ENOMEM) d.oom = 1;
    hk_cli_check_stdlib_names(f, &d);
  }
  if (bad || d.nerrors || d.oom) {
    hkc_file_free(f);
    hku_buf msg = HKU_BUF_INIT;
    hku_diags_format(&d, &msg);
    fputs(hku_buf_str(&msg), stderr);
    hku_buf_free(&msg);
    int rc = d.oom && !d.nerrors ? HK_EXIT_INTERNAL : HK_EXIT_USER;
    hku_diags_free(&d);
    return rc;
  }
  hku_diags_free(&d);
  unsigned bit = cuda ? HK_TARGET_CUDA : HK_TARGET_CPU;
  int rc = HK_EXIT_OK;
  if (!(hkc_file_targets(f) & bit)) {
    fprintf(stderr, "%s: error: no kernel in this file targets %s\n", file,
            target);
    hkc_file_free(f);
    return HK_EXIT_USER;
  }
  hkc_unit *u = NULL;
  if (hkc_unit_emit(f, cuda ? HKC_LANG_CUDA : HKC_LANG_C, 0, &u)) {
    rc = hk_cli_internal("gen", "out of memory");
  } else if (out) {
    rc = hk_cli_write_file("gen", out, hkc_unit_text(u), hkc_unit_len(u));
  } else { /* a failed write is caught by main, for every command */
    (void)fwrite(hkc_unit_text(u), 1, hkc_unit_len(u), stdout);
  }
  hkc_unit_free(u);
  hkc_file_free(f);
  return rc;
}
