/* cli.c — helpers shared by the hk subcommands (see cli.h). */
#include "cli.h"
#include "codegen.h"
#include "dispatch.h" /* hk__stdlib_find */
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

/* ---- Options ------------------------------------------------------------- */

/* getopt_long's value for opts[i]: its short letter, else one past the
 * chars. */
#define LONG_ONLY 256
#define HELP_VAL 'h'

static int opt_val(const hk_cli_parser *p, int i) {
  return p->opts[i].short_name ? (unsigned char)p->opts[i].short_name
                               : LONG_ONLY + i;
}

/* The index in opts of getopt_long's value val, or -1. */
static int opt_index(const hk_cli_parser *p, int val) {
  for (int i = 0; i < p->nopts; i++)
    if (opt_val(p, i) == val) return i;
  return -1;
}

void hk_cli_parser_init(hk_cli_parser *p, const char *cmd, const char *help,
                        const hk_cli_opt *opts, int nopts, int argc,
                        char **argv) {
  HK_ASSERT(nopts >= 0 && nopts <= HK_CLI_MAXOPTS);
  memset(p, 0, sizeof *p);
  p->cmd = cmd;
  p->help = help;
  p->opts = opts;
  p->nopts = nopts;
  p->argc = argc;
  p->argv = argv;
  /* '-': operands come back in order (as 1), whatever POSIXLY_CORRECT
   * says, so that options may follow them; ':': a missing value is told
   * apart from an unknown option. */
  char *s = p->shortopts;
  *s++ = '-';
  *s++ = ':';
  int n = 0;
  for (int i = 0; i < nopts; i++) {
    if (opts[i].short_name) {
      *s++ = opts[i].short_name;
      if (opts[i].needs) *s++ = ':';
    }
    if (opts[i].name)
      p->longopts[n++] = (struct option){
          opts[i].name, opts[i].needs ? required_argument : no_argument, NULL,
          opt_val(p, i)};
  }
  if (help) {
    *s++ = 'h';
    p->longopts[n++] = (struct option){"help", no_argument, NULL, HELP_VAL};
  }
  *s = '\0';
  /* glibc: optind = 0 starts getopt afresh (its hidden state included) */
  optind = 0;
  opterr = 0; /* the messages are ours */
}

/* How the user spelt the option just read: "--NAME" or "-C". */
static void spelling(const hk_cli_parser *p, int i, char *buf, size_t n) {
  const char *arg = optind > 0 && optind <= p->argc ? p->argv[optind - 1] : "";
  if (p->opts[i].name && (!p->opts[i].short_name || !strncmp(arg, "--", 2)))
    snprintf(buf, n, "--%s", p->opts[i].name);
  else
    snprintf(buf, n, "-%c", p->opts[i].short_name);
}

/* An unknown or ambiguous long option, arg as given ("--NAME[=VALUE]"). */
static int bad_long(hk_cli_parser *p, const char *arg) {
  const char *name = arg + 2;
  size_t len = strcspn(name, "=");
  char matches[512] = "";
  size_t used = 0;
  int nmatch = 0;
  for (const struct option *o = p->longopts; o->name; o++)
    if (!strncmp(o->name, name, len) && used < sizeof matches) {
      used += (size_t)snprintf(matches + used, sizeof matches - used, "%s--%s",
                               nmatch ? ", " : "", o->name);
      nmatch++;
    }
  if (nmatch > 1)
    return hk_cli_usage(p->cmd, "ambiguous option '--%.*s' (%s)", (int)len,
                        name, matches);
  return hk_cli_usage(p->cmd, "unknown option '%s'", arg);
}

static int stop(hk_cli_parser *p, int status) {
  p->status = status;
  return HK_CLI_EXIT;
}

int hk_cli_next(hk_cli_parser *p) {
  if (p->rest) { /* after "--" or the end */
    if (p->rest >= p->argc) return HK_CLI_END;
    p->value = p->argv[p->rest++];
    return HK_CLI_OPERAND;
  }
  p->value = NULL;
  int c = getopt_long(p->argc, p->argv, p->shortopts, p->longopts, NULL);
  if (c == -1) { /* the end, or "--": the rest are operands */
    p->rest = optind > 0 && optind < p->argc ? optind : p->argc;
    return hk_cli_next(p);
  }
  if (c == 1) {
    p->value = optarg;
    return HK_CLI_OPERAND;
  }
  if (c == HELP_VAL && p->help) {
    fputs(p->help, stdout);
    return stop(p, HK_EXIT_OK);
  }
  char name[80];
  if (c == ':') { /* a value is missing */
    int i = opt_index(p, optopt);
    if (i < 0) return stop(p, hk_cli_usage(p->cmd, "missing value"));
    spelling(p, i, name, sizeof name);
    return stop(p,
                hk_cli_usage(p->cmd, "%s needs %s", name, p->opts[i].needs));
  }
  if (c == '?') {
    const char *arg =
        optind > 0 && optind <= p->argc ? p->argv[optind - 1] : "";
    if (optopt == 0) /* an unknown or ambiguous long option */
      return stop(p, strncmp(arg, "--", 2)
                         ? hk_cli_usage(p->cmd, "unknown option '%s'", arg)
                         : bad_long(p, arg));
    int i = opt_index(p, optopt);
    if (i >= 0 || (optopt == HELP_VAL && p->help)) /* --FLAG=VALUE */
      return stop(p, hk_cli_usage(p->cmd, "--%s takes no value",
                                  i >= 0 ? p->opts[i].name : "help"));
    return stop(p, hk_cli_usage(p->cmd, "unknown option '-%c'", optopt));
  }
  int i = opt_index(p, c);
  if (i < 0) return stop(p, hk_cli_internal(p->cmd, "getopt returned %d", c));
  if (p->opts[i].needs && p->opts[i].repeat == HK_CLI_ONCE && p->given[i]++) {
    spelling(p, i, name, sizeof name);
    return stop(p, hk_cli_usage(p->cmd, "%s is given twice", name));
  }
  p->value = optarg;
  return i;
}

int hk_cli_is_help(const char *arg) {
  return !strcmp(arg, "-h") || !strcmp(arg, "--help");
}

int hk_cli_is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int hk_cli_same_file(const char *in, const char *out) {
  struct stat a, b;
  return stat(in, &a) == 0 && stat(out, &b) == 0 && S_ISREG(b.st_mode) &&
         a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

int hk_cli_write_file(const char *cmd, const char *path, const char *text,
                      size_t len) {
  hku_diags d = HKU_DIAGS_INIT;
  int rc = HK_EXIT_OK;
  hku_part one = {text, len};
  if (hku_write_output(path, &one, 1, HKU_KEEP_MODE, &d)) {
    hku_buf b = HKU_BUF_INIT;
    hku_diags_first(&d, &b);
    rc = hk_cli_error(cmd, "%s", hku_buf_str(&b));
    hku_buf_free(&b);
  }
  hku_diags_free(&d);
  return rc;
}

/* A kernel named as a stdlib instance (add_f32) is refused by every load
 * (register.c), so check, gen and build say it too, but for the stdlib's own files:
 * those whose path ends as the instance's source does
 * ("stdlib_kernels/arith.json", relative to the source tree it was built
 * from). */
void hk_cli_check_stdlib_names(const hkc_file *f, hku_diags *d) {
  const char *path = hkc_file_path(f);
  for (int i = 0; i < hkc_file_ninstances(f); i++) {
    const hkc_instance *in = hkc_file_instance(f, i);
    const hk_stdlib_entry_t *s = hk__stdlib_find(hkc_instance_name(in));
    if (!s) continue;
    const char *src = s->info.source;
    size_t pl = strlen(path), sl = strlen(src);
    if (pl >= sl && !strcmp(path + pl - sl, src) &&
        (pl == sl || path[pl - sl - 1] == '/'))
      continue;
    int line, col;
    hkc_instance_name_pos(f, in, &line, &col);
    hku_diag_add(d, HKU_ERROR, path, line, col,
                 "%sname: \"%s\" is a stdlib kernel; a user kernel cannot "
                 "take its name (a plugin folder refuses this file)",
                 hkc_instance_field_prefix(in), hkc_instance_name(in));
  }
}
