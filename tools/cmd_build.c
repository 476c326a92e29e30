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

  hkc_diags d = HKC_DIAGS_INIT;
  hkc_file *f = NULL;
  hkc_linemap map = {0};
  hkc_buf src = HKC_BUF_INIT, msgs = HKC_BUF_INIT;
  hk_cc_t cc = {0};
  int rc = HK_EXIT_OK;
  char dir[] = "/tmp/hk-build-XXXXXX", csrc[64], so[64], tmp[4200] = "";
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
  hkc_buf_printf(&src,
                 "/* ---- prebuilt plugin: what the loader checks ---- */\n"
                 "const uint32_t %s = %uu;\n"
                 "const char %s[] = ",
                 HK_PLUGIN_ABI_SYMBOL, HK_ABI_VERSION, HK_PLUGIN_DESC_SYMBOL);
  hkc_emit_c_string(&src, f->doc->text);
  hkc_buf_put(&src, ";\n");
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
  char err[512];
  if (hk_cli_write_file(csrc, hkc_buf_str(&src), src.len, err, sizeof err)) {
    rc = hk_cli_internal("build", "%s", err);
    goto done;
  }
  if (hk__cc_build(&cc, native ? HK_CC_PREBUILT_NATIVE : HK_CC_PREBUILT, csrc,
                   so, &msgs, 600, NULL)) {
    if (!hkc_report_compiler_output(hkc_buf_str(&msgs), &map, f, "cc", &d)) {
      fprintf(stderr, "hk build: the compiler failed:\n%s", hkc_buf_str(&msgs));
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
  /* copy into place next to OUT, then rename over it */
  snprintf(tmp, sizeof tmp, "%s.%ld.tmp", out, (long)getpid());
  int ofd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
  int ok = ofd >= 0;
  char buf[65536];
  ssize_t n;
  while (ok && (n = read(fd, buf, sizeof buf)) > 0)
    ok = write(ofd, buf, (size_t)n) == n;
  close(fd);
  if (ofd >= 0) ok &= close(ofd) == 0;
  if (!ok || rename(tmp, out) != 0) {
    rc = hk_cli_error("build", "%s: cannot write: %s", out, strerror(errno));
    unlink(tmp);
  }
  goto done;
report:
  if (d.n || d.oom) {
    hkc_buf m = HKC_BUF_INIT;
    hkc_diags_format(&d, &m);
    fputs(hkc_buf_str(&m), stderr);
    hkc_buf_free(&m);
  }
done:
  if (made_dir) {
    unlink(csrc);
    unlink(so);
    rmdir(dir);
  }
  hk__cc_free(&cc);
  hkc_buf_free(&src);
  hkc_buf_free(&msgs);
  hkc_linemap_free(&map);
  hkc_file_free(f);
  hkc_diags_free(&d);
  return rc;
}
