/* cmd_build.c — hk build: a kernel file compiled into a prebuilt plugin.
 *
 * The plugin is the generated C of every kernel of the file, compiled by
 * the system compiler like tier opt, plus two exports the loader checks
 * (abi.h: the ABI it was built for, and the kernel file itself, parsed
 * again at load time). build.c does it all (hk__build_prebuilt); its
 * imports are checked like the opt tier's before it is written.
 */
#include <stdio.h>
#include <string.h>

#include "build.h"
#include "cli.h"
#include "codegen.h"
#include "compiler_cc.h"

static const char *const help =
    "usage: hk build FILE.json -o OUT.so [--native]\n\n"
    "Compiles a kernel file into a prebuilt plugin: a shared object that a\n"
    "plugin folder loads as it is (tier so), without compiling anything.\n"
    "It embeds the kernel file and hk's ABI version; hk refuses to load it\n"
    "into an hk of another ABI. The compiler is $HK_CC, else cc; a big\n"
    "file is compiled in parts, $HK_JOBS processes at once (default: one\n"
    "per CPU), linked into one object.\n"
    "  --native   optimize for this machine's CPU (-march=native); the\n"
    "             plugin may then not run on other CPUs. By default the\n"
    "             plugin runs on any CPU of this architecture; on x86-64\n"
    "             it also holds a copy of its kernels for x86-64-v3 (AVX2,\n"
    "             FMA), which hk runs on CPUs that have it (same results).\n"
    "OUT.so is written only when everything succeeded (a temporary file\n"
    "renamed over it). Exit status: 0, 1 a bad kernel file or a compile\n"
    "error, 2 no usable compiler or another failure.\n";

enum { OPT_OUT, OPT_NATIVE };
static const hk_cli_opt options[] = {
    [OPT_OUT] = {NULL, 'o', "a file", HK_CLI_ONCE},
    [OPT_NATIVE] = {"native", 0, NULL, 0},
};

int hk_cmd_build(int argc, char **argv) {
  const char *file = NULL, *out = NULL;
  int native = 0;
  hk_cli_parser p;
  hk_cli_parser_init(&p, "build", help, options,
                     sizeof options / sizeof *options, argc, argv);
  for (int c; (c = hk_cli_next(&p)) != HK_CLI_END;) {
    if (c == HK_CLI_EXIT) return p.status;
    if (c == OPT_OUT) {
      out = p.value;
    } else if (c == OPT_NATIVE) {
      native = 1;
    } else if (file) {
      return hk_cli_usage("build", "one kernel file at a time");
    } else {
      file = p.value;
    }
  }
  if (!file) return hk_cli_usage("build", "no kernel file given");
  if (!out) return hk_cli_usage("build", "no output given (-o OUT.so)");
  if (hk_cli_same_file(file, out))
    return hk_cli_usage("build", "-o %s is the kernel file itself; it would "
                                 "be overwritten",
                        out);

  hku_diags d = HKU_DIAGS_INIT;
  hkc_file *f = NULL;
  hk_cc_t cc = {0};
  int rc = HK_EXIT_OK;
  if (hkc_file_load(file, &f, &d)) {
    rc = HK_EXIT_USER;
    goto report;
  }
  /* a plugin holding a stdlib kernel's name would be refused by every
   * load: say so now, not at the first load */
  hk_cli_check_stdlib_names(f, &d);
  if (d.nerrors) {
    rc = HK_EXIT_USER;
    goto report;
  }
  if (!(hkc_file_targets(f) & HK_TARGET_CPU)) {
    rc = hk_cli_error("build", "%s: no kernel in this file targets cpu",
                      file);
    goto done;
  }
  hk__cc_probe(NULL, NULL, &cc);
  if (cc.why_not) {
    rc = hk_cli_internal("build", "%s", cc.why_not);
    goto done;
  }
  int r = hk__build_prebuilt(
      f, &cc, native ? HK_FOR_PREBUILT_NATIVE : HK_FOR_PREBUILT, out, &d);
  if (r == HK_ENOMEM || d.oom) {
    rc = hk_cli_internal("build", "out of memory");
    goto done;
  }
  if (r == HK_EREFUSED) {
    rc = hk_cli_error("build", "%s: %s", file, d.v[0].msg);
    goto done;
  }
  if (r == HK_ECOMPILE && !hk__build_located(&d)) {
    fprintf(stderr, "hk build: %s", d.v[0].msg);
    rc = HK_EXIT_INTERNAL;
    goto done;
  }
  if (r) rc = r == HK_ECOMPILE || r == HK_EIO ? HK_EXIT_USER : HK_EXIT_INTERNAL;
report:
  if (d.n || d.oom) {
    hku_buf m = HKU_BUF_INIT;
    hku_diags_format(&d, &m);
    fputs(hku_buf_str(&m), stderr);
    hku_buf_free(&m);
  }
done:
  hk__cc_free(&cc);
  hkc_file_free(f);
  hku_diags_free(&d);
  return rc;
}
