/* cli.h — what the hk subcommands share: exit codes, messages, arguments. */
/*
 * The subcommands are the hk command's edge, as hk.h's entry points are
 * libhk's: below them, fallible functions follow common/internal.h (HK_OK
 * or a negative HK_E* code, the words in an hku_diags list); a function of
 * the command itself that fails prints "hk CMD: MESSAGE" on stderr
 * (hk_cli_error, hk_cli_internal, hk_cli_usage) and returns the exit
 * status, HK_EXIT_OK when it did not fail. */
#ifndef HK_CLI_H
#define HK_CLI_H

#include <getopt.h>
#include <stddef.h>

#include "hk.h"

/* Exit status, SPEC §3. */
#define HK_EXIT_OK 0
#define HK_EXIT_USER 1     /* bad schema, bad arguments, bad input file */
#define HK_EXIT_INTERNAL 2 /* hk's own failure */

/* Prints "hk CMD: MESSAGE" on stderr; returns HK_EXIT_USER. */
int hk_cli_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The same for internal failures; returns HK_EXIT_INTERNAL. */
int hk_cli_internal(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A usage error: the message, then "Try 'hk CMD --help'." */
int hk_cli_usage(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ---- Options ---------------------------------------------------------------
 * Every subcommand reads its arguments with hk_cli_next, which is glibc's
 * getopt_long: --NAME VALUE and --NAME=VALUE, -C VALUE and -CVALUE, a long
 * name abbreviated to a unique prefix, options and operands in any order
 * (operands keep theirs), and "--" ending the options (what follows is an
 * operand even when it starts with '-'). -h and --help print the help. A
 * usage error is printed as every other one ("hk CMD: unknown option
 * '--x'", then "Try 'hk CMD --help'."; exit status 1, SPEC §3). */

/* One option of a subcommand. */
typedef struct hk_cli_opt {
  const char *name;  /* --NAME, or NULL when there is only -C */
  char short_name;   /* -C, or 0 */
  const char *needs; /* NULL: a flag; else it takes a value, and a missing
                      * one is reported as "--NAME needs NEEDS" */
  int repeat;        /* an option with a value: HK_CLI_ONCE or
                      * HK_CLI_REPEAT; a flag (0 here) may be repeated,
                      * which changes nothing */
} hk_cli_opt;

/* An option's value taken once: given twice, it is a usage error ("-o is
 * given twice"), since keeping either value silently would drop what the
 * user asked for (hk build k.json -o a.so -o b.so wrote only b.so). */
#define HK_CLI_ONCE 0
/* An option that collects its values (--plugins DIR, --out, --axis). */
#define HK_CLI_REPEAT 1

#define HK_CLI_MAXOPTS 32
#define HK_CLI_END (-1)     /* no more arguments */
#define HK_CLI_OPERAND (-2) /* an operand, in p->value */
#define HK_CLI_EXIT (-3)    /* the help or a usage error was printed: the
                             * command returns p->status */

/* The arguments of one subcommand being read. */
typedef struct hk_cli_parser {
  const char *cmd;  /* for the messages: "hk CMD: ..." */
  const char *help; /* printed for -h and --help; NULL: the command reads
                     * them itself (its own table has them) */
  const hk_cli_opt *opts;
  int nopts, argc;
  char **argv;
  const char *value; /* the option's value (NULL for a flag), or the operand */
  int status;        /* after HK_CLI_EXIT: the exit status */
  int rest;          /* after "--" or the end: the next operand's index */
  unsigned char given[HK_CLI_MAXOPTS]; /* HK_CLI_ONCE options seen */
  struct option longopts[HK_CLI_MAXOPTS + 2];
  char shortopts[3 * HK_CLI_MAXOPTS + 8];
} hk_cli_parser;

/* Starts reading argv (argv[0] is the subcommand's name) with the options
 * opts[0..nopts-1] (at most HK_CLI_MAXOPTS). Resets getopt's state, so
 * that every parse starts afresh. */
void hk_cli_parser_init(hk_cli_parser *p, const char *cmd, const char *help,
                        const hk_cli_opt *opts, int nopts, int argc,
                        char **argv);
/* The next argument, in command-line order: an option (its index in opts,
 * its value in p->value), HK_CLI_OPERAND, HK_CLI_END, or HK_CLI_EXIT. */
int hk_cli_next(hk_cli_parser *p);

/* 1 when arg is -h or --help. */
int hk_cli_is_help(const char *arg);

/* What runs now, for a crash's message (hk.c's handler of SIGSEGV, SIGBUS,
 * SIGFPE, SIGILL): what (e.g. "saxpy_f32 (plugins/saxpy.json, tier jit)"),
 * and the exit status the crash gives (1 for a user's kernel, 2 for hk's
 * own); NULL: nothing. */
void hk_cli_running(const char *what, int status);

/* 1 when path is a directory. */
int hk_cli_is_dir(const char *path);

/* 1 when out names the file in already (the same inode, through links
 * or another spelling of the path): an -o that would overwrite the kernel
 * file being read. */
int hk_cli_same_file(const char *in, const char *out);

/* Writes text to path as an output file (fsutil.h, hku_write_output:
 * atomically, a file replaced keeps its permissions, links are followed,
 * a device or FIFO is written in place). Returns HK_EXIT_OK, or the exit
 * status of the error it printed (hk_cli_error). */
int hk_cli_write_file(const char *cmd, const char *path, const char *text,
                      size_t len);

/* A kernel of f named as a stdlib instance (add_f32), which every load
 * refuses (register.c), is an error in d, located at its name; the
 * stdlib's own files (their path ending as the instance's source) are
 * not. */
struct hkc_file;
struct hku_diags;
void hk_cli_check_stdlib_names(const struct hkc_file *f, struct hku_diags *d);

/* The subcommands; argv[0] is the subcommand's name. */
int hk_cmd_check(int argc, char **argv);
int hk_cmd_gen(int argc, char **argv);
int hk_cmd_list(int argc, char **argv);
int hk_cmd_run(int argc, char **argv);
int hk_cmd_build(int argc, char **argv);
int hk_cmd_cache(int argc, char **argv);
int hk_cmd_bench(int argc, char **argv);

#endif
