/* cmd_build.c — hk build: a kernel file compiled into a prebuilt plugin.
 *
 * The plugin is the generated C of every kernel of the file, compiled by
 * the system compiler like tier opt, plus two exports the loader checks:
 * hk_plugin_abi_version (the ABI it was built for) and
 * hk_plugin_description (the kernel file itself, parsed again at load
 * time). Its imports are checked like the opt tier's before it is written.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "fsutil.h"
#include "emit.h"
#include "jit_cc.h"
#include "kernel.h"
#include "registry.h"

static const char *const help =
    "usage: hk build FILE.json -o OUT.so [--native]\n\n"
    "Compiles a kernel file into a prebuilt plugin: a shared object that a\n"
    "plugin folder loads as it is (tier so), without compiling anything.\n"
    "It embeds the kernel file and hk's ABI version; hk refuses to load it\n"
    "into an hk of another ABI. The compiler is $HK_CC, else cc.\n"
    "  --native   optimize for this machine's CPU (-march=native); the\n"
    "             plugin may then not run on other CPUs. By default the\n"
    "             plugin runs on any CPU of this architecture.\n"
    "OUT.so is written only when everything succeeded (a temporary file\n"
    "renamed over it). Exit status: 0, 1 a bad kernel file or a compile\n"
    "error, 2 no usable compiler or another failure.\n";

int hk_cmd_build(int argc, char **argv) {
  const char *file = NULL, *out = NULL;
  int native = 0;
  for (int i = 1; i < argc; i++) {
    if (hk_cli_is_help(argv[i])) {
      fputs(help, stdout);
      return HK_EXIT_OK;
    } else if (!strcmp(argv[i], "-o")) {
      if (i + 1 >= argc) return hk_cli_usage("build", "-o needs a file");
      out = argv[++i];
    } else if (!strcmp(argv[i], "--native")) {
      native = 1;
    } else if (argv[i][0] == '-' && argv[i][1]) {
      return hk_cli_usage("build", "unknown option '%s'", argv[i]);
    } else if (file) {
      return hk_cli_usage("build", "one kernel file at a time");
    } else {
      file = argv[i];
    }
  }
  if (!file) return hk_cli_usage("build", "no kernel file given");
  if (!out) return hk_cli_usage("build", "no output given (-o OUT.so)");

  hku_diags d = HKU_DIAGS_INIT;
  hkc_file *f = NULL;
  hkc_linemap map = {0};
  hku_buf src = HKU_BUF_INIT, msgs = HKU_BUF_INIT;
  hk_cc_t cc = {0};
  int rc = HK_EXIT_OK;
  char dir[] = "/tmp/hk-build-XXXXXX", csrc[64], so[64];
  int made_dir = 0;
  if (hkc_file_load(file, &f, &d)) {
    rc = HK_EXIT_USER;
    goto report;
  }
  int any = 0;
  for (int i = 0; i < f->nkernels; i++)
    any |= (f->kernels[i].targets & HK_TARGET_CPU) != 0;
  if (!any) {
    rc = hk_cli_error("build", "%s: no kernel in this file targets cpu",
                      file);
    goto done;
  }
  if (hkc_emit_c_mapped(&f, 1, HKC_EMIT_PLUGIN, &src, &map)) {
    rc = hk_cli_internal("build", "out of memory");
    goto done;
  }
  hku_buf_printf(&src,
                 "/* ---- prebuilt plugin: what the loader checks ---- */\n"
                 "const uint32_t %s = %uu;\n"
                 "const char %s[] = ",
                 HK_ABI_PLUGIN_VERSION_SYMBOL, HK_ABI_VERSION, HK_ABI_PLUGIN_DESC_SYMBOL);
  hkc_emit_c_string(&src, f->doc->text);
  hku_buf_put(&src, ";\n");
  if (src.oom) {
    rc = hk_cli_internal("build", "out of memory");
    goto done;
  }
  hk__cc_probe(NULL, NULL, &cc);
  if (cc.why_not) {
    rc = hk_cli_internal("build", "%s", cc.why_not);
    goto done;
  }
  if (!mkdtemp(dir)) {
    rc = hk_cli_internal("build", "cannot create a temporary folder: %s",
                         strerror(errno));
    goto done;
  }
  made_dir = 1;
  snprintf(csrc, sizeof csrc, "%s/plugin.c", dir);
  snprintf(so, sizeof so, "%s/plugin.so", dir);
  if (hku_write_file_atomic(csrc, hku_buf_str(&src), src.len, 0600, &d)) {
    rc = HK_EXIT_INTERNAL;
    goto report;
  }
  if (hk__cc_build(&cc, native ? HK_CC_PREBUILT_NATIVE : HK_CC_PREBUILT, csrc,
                   so, &msgs, 600, NULL)) {
    if (!hkc_report_compiler_output(hku_buf_str(&msgs), &map, f, "cc", &d)) {
      fprintf(stderr, "hk build: the compiler failed:\n%s", hku_buf_str(&msgs));
      rc = HK_EXIT_INTERNAL;
      goto done;
    }
    rc = HK_EXIT_USER;
    goto report;
  }
  int fd = open(so, O_RDONLY | O_CLOEXEC);
  struct stat st;
  char why[1200];
  if (fd < 0 || fstat(fd, &st) != 0 ||
      hk__check_object(fd, (size_t)st.st_size, why, sizeof why)) {
    if (fd < 0) snprintf(why, sizeof why, "no object was built");
    rc = hk_cli_error("build", "%s: %s", file, why);
    if (fd >= 0) close(fd);
    goto done;
  }
  close(fd);
  if (hku_copy_file_atomic(so, out, 0755, &d)) rc = HK_EXIT_USER;
report:
  if (d.n || d.oom) {
    hku_buf m = HKU_BUF_INIT;
    hku_diags_format(&d, &m);
    fputs(hku_buf_str(&m), stderr);
    hku_buf_free(&m);
  }
done:
  if (made_dir) {
    unlink(csrc);
    unlink(so);
    rmdir(dir);
  }
  hk__cc_free(&cc);
  hku_buf_free(&src);
  hku_buf_free(&msgs);
  hkc_linemap_free(&map);
  hkc_file_free(f);
  hku_diags_free(&d);
  return rc;
}
