/* cli.h — what the hk subcommands share: exit codes, messages, arguments. */
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

/* The *.json and (with so != 0) *.so files directly in dir, sorted by name,
 * as malloc'ed paths "DIR/NAME". Returns the count, or -1 with errno set
 * when dir cannot be read. */
int hk_cli_list_dir(const char *dir, int so, char ***paths);
void hk_cli_free_list(char **paths, int n);
/* 1 when path is a directory. */
int hk_cli_is_dir(const char *path);

/* Writes text to path atomically (temp file in the same folder + rename).
 * Returns 0, or -1 with a message in err. */
int hk_cli_write_file(const char *path, const char *text, size_t len,
                      char *err, size_t errlen);

/* The subcommands; argv[0] is the subcommand's name. */
int hk_cmd_check(int argc, char **argv);
int hk_cmd_gen(int argc, char **argv);
int hk_cmd_list(int argc, char **argv);
int hk_cmd_run(int argc, char **argv);
int hk_cmd_build(int argc, char **argv);
int hk_cmd_cache(int argc, char **argv);
int hk_cmd_bench(int argc, char **argv);

#endif
