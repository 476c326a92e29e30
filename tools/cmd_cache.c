/* cmd_cache.c — hk cache: what the disk cache of compiled kernels holds. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cache.h"
#include "cli.h"

static const char *const help =
    "usage: hk cache list [--cache-dir DIR]\n"
    "       hk cache clear [--cache-dir DIR]\n\n"
    "The disk cache holds the optimized (tier opt) builds of plugin kernel\n"
    "files, so that the next start needs no compiler. It lives in\n"
    "HK_CACHE_DIR, else $XDG_CACHE_HOME/hk, else ~/.cache/hk.\n"
    "  list    one line per entry: key, size, date, whether it verifies,\n"
    "          the kernel file it came from and its kernels\n"
    "  clear   removes every entry (and nothing else in the folder)\n";

static void meta_field(const char *meta, const char *key, char *out,
                       size_t n) {
  out[0] = '\0';
  if (!meta) return;
  size_t kl = strlen(key);
  for (const char *line = meta; *line;) {
    const char *nl = strchr(line, '\n');
    size_t len = nl ? (size_t)(nl - line) : strlen(line);
    if (len > kl + 1 && !strncmp(line, key, kl) && line[kl] == ':') {
      const char *v = line + kl + 1;
      while (*v == ' ') v++;
      snprintf(out, n, "%.*s", (int)(len - (size_t)(v - line)), v);
      return;
    }
    line += len + (nl ? 1 : 0);
  }
}

static void print_entry(void *ctx, const char *path, size_t size,
                        time_t mtime, const char *meta, int valid) {
  int *count = ctx;
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  char when[32], source[1024], kernels[1024];
  struct tm tm;
  localtime_r(&mtime, &tm);
  strftime(when, sizeof when, "%Y-%m-%d %H:%M", &tm);
  meta_field(meta, "source", source, sizeof source);
  meta_field(meta, "kernels", kernels, sizeof kernels);
  printf("%.16s  %8zu  %s  %-7s  %s  %s\n", base, size, when,
         valid ? "ok" : "corrupt", valid ? source : "-", kernels);
  (*count)++;
}

enum { OPT_CACHE_DIR };
static const hk_cli_opt options[] = {
    [OPT_CACHE_DIR] = {"cache-dir", 0, "a folder", HK_CLI_ONCE},
};

int hk_cmd_cache(int argc, char **argv) {
  const char *what = NULL, *dir = NULL;
  hk_cli_parser p;
  hk_cli_parser_init(&p, "cache", help, options,
                     sizeof options / sizeof *options, argc, argv);
  for (int c; (c = hk_cli_next(&p)) != HK_CLI_END;) {
    if (c == HK_CLI_EXIT) return p.status;
    if (c == OPT_CACHE_DIR) {
      dir = p.value;
    } else if (!what &&
               (!strcmp(p.value, "list") || !strcmp(p.value, "clear"))) {
      what = p.value;
    } else {
      return hk_cli_usage("cache", "unexpected argument '%s'", p.value);
    }
  }
  if (!what) return hk_cli_usage("cache", "say list or clear");
  hk_cache_t *c;
  hku_diags d = HKU_DIAGS_INIT;
  /* listing or clearing a cache that does not exist creates nothing (a
   * mistyped --cache-dir made the folder and its parents) */
  char *def = NULL;
  if (!dir && hk__cache_default_dir(&def, &d)) {
    int rc = hk_cli_error("cache", "%s", hku_diags_words(&d, "out of memory"));
    hku_diags_free(&d);
    return rc;
  }
  struct stat st;
  if (stat(dir ? dir : def, &st) != 0 && errno == ENOENT) {
    printf("%s %s (no cache there)\n",
           !strcmp(what, "list") ? "0 entries in" : "removed 0 files from",
           dir ? dir : def);
    free(def);
    return HK_EXIT_OK;
  }
  free(def);
  if (hk__cache_open(dir, 0, &c, &d)) {
    int rc = hk_cli_error("cache", "%s", hku_diags_words(&d, "out of memory"));
    hku_diags_free(&d);
    return rc;
  }
  int rc = HK_EXIT_OK;
  if (!strcmp(what, "list")) {
    int count = 0;
    printf("%-16s  %8s  %-16s  %-7s  %s  %s\n", "KEY", "BYTES", "BUILT",
           "STATE", "SOURCE", "KERNELS");
    if (hk__cache_list(c, print_entry, &count) < 0)
      rc = hk_cli_error("cache", "%s: cannot read the folder",
                        hk__cache_dir(c));
    else
      printf("%d entries in %s\n", count, hk__cache_dir(c));
  } else {
    int kept = 0;
    hku_diags kd = HKU_DIAGS_INIT;
    int n = hk__cache_clear(c, &kept, &kd);
    if (n < 0) {
      rc = hk_cli_error("cache", "%s: cannot read the folder",
                        hk__cache_dir(c));
    } else {
      printf("removed %d files from %s\n", n, hk__cache_dir(c));
      if (kept)
        rc = hk_cli_error("cache", "%d more could not be removed: %s", kept,
                          hku_diags_words(&kd, "(no reason given)"));
    }
    hku_diags_free(&kd);
  }
  hk__cache_close(c);
  return rc;
}
