/* cmd_bench.c — hk bench: runs hk-bench, the benchmark program, which is
 * C++ (Google Benchmark) and lives next to the hk command. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

int hk_cmd_bench(int argc, char **argv) {
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return hk_cli_internal("bench", "cannot find the hk command");
  self[n] = '\0';
  char prog[PATH_MAX + 16];
  char *slash = strrchr(self, '/');
  snprintf(prog, sizeof prog, "%.*s/hk-bench", (int)(slash - self), self);
  if (access(prog, X_OK) != 0)
    return hk_cli_internal(
        "bench",
        "%s is not there: hk bench needs Google Benchmark (Debian's "
        "libbenchmark-dev) when hk is built; run tools/setup.sh and build "
        "again",
        prog);
  char **args = calloc((size_t)argc + 3, sizeof *args);
  if (!args) return hk_cli_internal("bench", "out of memory");
  args[0] = prog;
  args[1] = "--hk"; /* so that it finds this hk for hk build */
  args[2] = self;
  for (int i = 1; i < argc; i++) args[i + 2] = argv[i];
  execv(prog, args);
  int e = errno;
  free(args);
  return hk_cli_internal("bench", "cannot run %s: %s", prog, strerror(e));
}
