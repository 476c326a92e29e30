/* cli.c — helpers shared by the hk subcommands (see cli.h). */
#include "cli.h"
#include "fsutil.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void vmsg(const char *cmd, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
static void vmsg(const char *cmd, const char *fmt, va_list ap) {
  fprintf(stderr, "hk %s: ", cmd);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
}

int hk_cli_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vmsg(cmd, fmt, ap);
  va_end(ap);
  return HK_EXIT_USER;
}

int hk_cli_internal(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vmsg(cmd, fmt, ap);
  va_end(ap);
  return HK_EXIT_INTERNAL;
}

int hk_cli_usage(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vmsg(cmd, fmt, ap);
  va_end(ap);
  fprintf(stderr, "Try 'hk %s --help'.\n", cmd);
  return HK_EXIT_USER;
}

int hk_cli_is_help(const char *arg) {
  return !strcmp(arg, "-h") || !strcmp(arg, "--help");
}

int hk_cli_is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int hk_cli_write_file(const char *cmd, const char *path, const char *text,
                      size_t len) {
  hku_diags d = HKU_DIAGS_INIT;
  int rc = HK_EXIT_OK;
  if (hku_write_file_atomic(path, text, len, HKU_KEEP_MODE, &d)) {
    hku_buf b = HKU_BUF_INIT;
    hku_diags_first(&d, &b);
    rc = hk_cli_error(cmd, "%s", hku_buf_str(&b));
    hku_buf_free(&b);
  }
  hku_diags_free(&d);
  return rc;
}
