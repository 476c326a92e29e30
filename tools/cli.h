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

/* 1 when arg is -h or --help. */
int hk_cli_is_help(const char *arg);

/* 1 when path is a directory. */
int hk_cli_is_dir(const char *path);

/* Writes text to path atomically (hku_write_file_atomic; a file replaced
 * keeps its permissions). Returns HK_EXIT_OK, or the exit status of the
 * error it printed (hk_cli_error). */
int hk_cli_write_file(const char *cmd, const char *path, const char *text,
                      size_t len);

/* The subcommands; argv[0] is the subcommand's name. */
int hk_cmd_check(int argc, char **argv);
int hk_cmd_gen(int argc, char **argv);
int hk_cmd_list(int argc, char **argv);
int hk_cmd_run(int argc, char **argv);
int hk_cmd_build(int argc, char **argv);
int hk_cmd_cache(int argc, char **argv);
int hk_cmd_bench(int argc, char **argv);

#endif
