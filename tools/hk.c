/* hk.c — the hk command: check, generate, list and run kernels (SPEC §3). */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const struct {
  const char *name;
  int (*run)(int, char **);
  const char *what;
} commands[] = {
    {"check", hk_cmd_check, "validate kernel files"},
    {"gen", hk_cmd_gen, "print the C or CUDA generated from a kernel file"},
    {"list", hk_cmd_list, "list every kernel: stdlib and plugin folders"},
    {"run", hk_cmd_run, "run a kernel on NumPy .npy files"},
    {"build", hk_cmd_build, "compile a kernel file into a prebuilt plugin"},
    {"cache", hk_cmd_cache, "list or clear the disk cache of compiled kernels"},
    {"bench", hk_cmd_bench, "measure inline against dynamic kernels"},
};

static void usage(FILE *f) {
  fprintf(f,
          "usage: hk COMMAND [ARGS...]\n\n"
          "hk, the hybrid kernel system: a stdlib of compute kernels compiled "
          "into\nlibhk, and user kernels described in JSON kernel files.\n\n"
          "Commands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
    fprintf(f, "  %-7s %s\n", commands[i].name, commands[i].what);
  fprintf(f,
          "\n'hk COMMAND --help' tells more. Exit status: 0 success, 1 a "
          "user error\n(bad kernel file, bad arguments, bad input file), 2 "
          "an internal failure.\n");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return HK_EXIT_USER;
  }
  if (hk_cli_is_help(argv[1])) {
    usage(stdout);
    return HK_EXIT_OK;
  }
  if (!strcmp(argv[1], "--version")) {
    printf("hk %s\n", HK_VERSION_STRING);
    return HK_EXIT_OK;
  }
  for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
    if (!strcmp(argv[1], commands[i].name)) {
      int rc = commands[i].run(argc - 1, argv + 1);
      /* whatever a command printed must have been written (a full disk, a
       * closed pipe: `hk list > /dev/full` said nothing and exited 0) */
      if ((fflush(stdout) != 0 || ferror(stdout)) && rc == HK_EXIT_OK)
        rc = hk_cli_internal(commands[i].name,
                             "cannot write to standard output");
      return rc;
    }
  fprintf(stderr, "hk: unknown command '%s'\nTry 'hk --help'.\n", argv[1]);
  return HK_EXIT_USER;
}
