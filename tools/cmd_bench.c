/* cmd_bench.c — hk bench: runs hk-bench, the benchmark program, which is
 * C++ (Google Benchmark) and lives next to the hk command.
 *
 * The options are read here, as every subcommand's are (cli.h: --NAME=VALUE,
 * abbreviations, "--"), and handed to hk-bench as --NAME VALUE, the one
 * spelling it reads; its help text and the checks of the values are its
 * own. The table below is hk-bench's options (bench/hk_bench.cc, main):
 * an option added there is added here too. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#define BENCH_OPTIONS(X)                                                 \
  X("help", 'h', NULL)                                                   \
  X("quick", 0, NULL)                                                    \
  X("arrays", 0, NULL)                                                   \
  X("gpt2", 0, NULL)                                                     \
  X("math", 0, NULL)                                                     \
  X("threads", 0, "a value")                                             \
  X("kernels", 0, "a value")                                             \
  X("only", 0, "a value")                                                \
  X("isolated", 0, NULL)                                                 \
  X("smoke", 0, NULL)                                                    \
  X("json", 0, "a value")                                                \
  X("plot", 0, "a value")                                                \
  X("no-numpy", 0, NULL)                                                 \
  X("no-extras", 0, NULL)                                                \
  X("hk", 0, "a value")                                                  \
  X("min-time", 0, "a value")                                            \
  X("repetitions", 0, "a value")                                         \
  X("ops", 0, "a value")                                                 \
  X("sizes", 0, "a value")                                               \
  X("variants", 0, "a value")
#define AS_OPT(name, c, needs) {name, c, needs, HK_CLI_ONCE},
#define AS_SPELLING(name, c, needs) "--" name,
static const hk_cli_opt options[] = {BENCH_OPTIONS(AS_OPT)};
static const char *const spelling[] = {BENCH_OPTIONS(AS_SPELLING)};

int hk_cmd_bench(int argc, char **argv) {
  /* hk-bench --hk SELF, then each option as --NAME [VALUE]; --arrays runs
   * hk-bench-arrays instead (bench/arrays_bench.c), --gpt2 hk-bench-gpt2
   * (bench/gpt2_bench.c), --math hk-bench-math (bench/math_bench.c) */
  char **args = calloc(2 * (size_t)argc + 4, sizeof *args);
  int nargs = 3;
  const char *program = "";
  if (!args) return hk_cli_internal("bench", "out of memory");
  hk_cli_parser p;
  hk_cli_parser_init(&p, "bench", NULL, options,
                     sizeof options / sizeof *options, argc, argv);
  for (int c; (c = hk_cli_next(&p)) != HK_CLI_END;) {
    if (c < 0) {
      free(args);
      if (c == HK_CLI_EXIT) return p.status;
      return hk_cli_usage("bench", "unexpected argument '%s'", p.value);
    }
    if (!strcmp(spelling[c], "--arrays") || !strcmp(spelling[c], "--gpt2") ||
        !strcmp(spelling[c], "--math")) {
      program = spelling[c] + 1; /* "-arrays": hk-bench-arrays */
      continue;
    }
    args[nargs++] = (char *)spelling[c];
    if (p.value) args[nargs++] = (char *)p.value;
  }
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) {
    free(args);
    return hk_cli_internal("bench", "cannot find the hk command");
  }
  self[n] = '\0';
  char prog[PATH_MAX + 16];
  char *slash = strrchr(self, '/');
  snprintf(prog, sizeof prog, "%.*s/hk-bench%s", (int)(slash - self), self,
           program);
  if (access(prog, X_OK) != 0) {
    free(args);
    return hk_cli_internal(
        "bench",
        "%s is not there: hk bench needs Google Benchmark (Debian's "
        "libbenchmark-dev) when hk is built; run tools/setup.sh and build "
        "again",
        prog);
  }
  args[0] = prog;
  args[1] = "--hk"; /* so that it finds this hk for hk build */
  args[2] = self;
  execv(prog, args);
  int e = errno;
  free(args);
  return hk_cli_internal("bench", "cannot run %s: %s", prog, strerror(e));
}
