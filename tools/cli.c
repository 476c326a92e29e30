/* cli.c — helpers shared by the hk subcommands (see cli.h). */
#include "cli.h"

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

static int ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a > b && !strcmp(s + a - b, suffix);
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

int hk_cli_list_dir(const char *dir, int so, char ***paths) {
  *paths = NULL;
  DIR *d = opendir(dir);
  if (!d) return -1;
  int n = 0, cap = 0;
  char **v = NULL;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    if (!ends_with(e->d_name, ".json") && !(so && ends_with(e->d_name, ".so")))
      continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 16;
      char **nv = realloc(v, (size_t)cap * sizeof *v);
      if (!nv) goto oom;
      v = nv;
    }
    size_t len = strlen(dir) + strlen(e->d_name) + 2;
    v[n] = malloc(len);
    if (!v[n]) goto oom;
    snprintf(v[n], len, "%s%s%s", dir,
             dir[strlen(dir) - 1] == '/' ? "" : "/", e->d_name);
    n++;
  }
  closedir(d);
  if (n) qsort(v, (size_t)n, sizeof *v, cmp_str);
  *paths = v;
  return n;
oom:
  closedir(d);
  hk_cli_free_list(v, n);
  errno = ENOMEM;
  return -1;
}

void hk_cli_free_list(char **paths, int n) {
  for (int i = 0; i < n; i++) free(paths[i]);
  free(paths);
}

int hk_cli_write_file(const char *path, const char *text, size_t len,
                      char *err, size_t errlen) {
  size_t plen = strlen(path);
  char *tmp = malloc(plen + 32);
  if (!tmp) {
    snprintf(err, errlen, "%s: out of memory", path);
    return -1;
  }
  snprintf(tmp, plen + 32, "%s.tmp.%ld", path, (long)getpid());
  FILE *f = fopen(tmp, "wb");
  if (!f) {
    snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
    free(tmp);
    return -1;
  }
  int ok = fwrite(text, 1, len, f) == len;
  ok &= fflush(f) == 0;
  ok &= fclose(f) == 0;
  if (!ok || rename(tmp, path) != 0) {
    snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
    unlink(tmp);
    free(tmp);
    return -1;
  }
  free(tmp);
  return 0;
}
