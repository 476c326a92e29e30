/* hk.c — the hk command: check, generate, list and run kernels (SPEC §3). */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "compiler_cc.h"
#include "threadpool.h"

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

/* The environment variables libhk reads. The library ignores a value it
 * cannot use (it never prints); the command refuses it, so that a typo
 * does not silently run on every CPU: HK_THREADS where kernels run (run
 * and bench), unless --threads sets the count instead; HK_JOBS where they
 * are compiled; HK_PAR_MIN where they run. HK_EXIT_OK or HK_EXIT_USER. */
static int check_env(const char *cmd, int argc, char **argv) {
  int runs = !strcmp(cmd, "run") || !strcmp(cmd, "bench");
  int compiles = runs || !strcmp(cmd, "build") || !strcmp(cmd, "list") ||
                 !strcmp(cmd, "check");
  /* --threads, or a prefix of it that getopt takes (--th, --thr=2) */
  int threads_given = 0;
  for (int a = 2; a < argc && runs; a++) {
    if (!strcmp(argv[a], "--")) break;
    size_t l = strcspn(argv[a], "=");
    threads_given |= l >= 4 && l <= 9 && !strncmp(argv[a], "--threads", l);
  }
  static const struct {
    const char *name;
    int max;
    const char *unset;
  } counts[] = {{"HK_THREADS", HK_MAX_THREADS, "to use every CPU"},
                {"HK_JOBS", HK_MAX_JOBS, "for one compiler process per CPU"}};
  for (size_t i = 0; i < sizeof counts / sizeof *counts; i++) {
    const char *v = getenv(counts[i].name);
    if (i == 0 ? !runs || threads_given : !compiles) continue;
    if (hk__env_count(v, counts[i].max) < 0)
      return hk_cli_error(cmd,
                          "%s='%s': expected a whole number from 1 to %d "
                          "(unset it %s)",
                          counts[i].name, v, counts[i].max, counts[i].unset);
  }
  const char *v = getenv("HK_PAR_MIN");
  size_t cheap, heavy;
  if (runs && v && *v && hk__par_parse(v, &cheap, &heavy) != 0)
    return hk_cli_error(cmd,
                        "HK_PAR_MIN='%s': expected N or CHEAP,HEAVY, whole "
                        "numbers of elements (unset it for the defaults)",
                        v);
  return HK_EXIT_OK;
}

/* SIGINT, SIGTERM, SIGHUP: the compilers hk runs lead process groups of
 * their own, so the terminal's Ctrl-C does not reach them. The first
 * signal stops them (hk__cc_interrupt), and hk then ends as after a failed
 * compile, having removed their build folders, and re-raises the signal
 * at the end; with no compiler running it ends hk at once. A second
 * signal ends hk at once (the default action is back). */
static volatile sig_atomic_t g_signal;
static const char *g_command = "";

static void on_signal(int sig) {
  g_signal = sig;
  signal(sig, SIG_DFL);
  if (hk__cc_interrupt() == 0) raise(sig);
  /* the compiles now fail: one line says why, and the failures that
   * follow from it (a kernel that did not load) are not reported */
  static const char what[] = ": interrupted\n";
  ssize_t w = write(STDERR_FILENO, "hk ", 3);
  w += write(STDERR_FILENO, g_command, strlen(g_command));
  w += write(STDERR_FILENO, what, sizeof what - 1);
  (void)w;
  int fd = open("/dev/null", O_WRONLY);
  if (fd >= 0) {
    dup2(fd, STDERR_FILENO);
    close(fd);
  }
}

/* SIGSEGV, SIGBUS, SIGFPE, SIGILL: a kernel's code crashed (kernel code
 * is C: an index past a buffer, an integer divided by zero). One line says
 * which kernel and what the signal usually means, and hk exits 1 (a
 * user's kernel) or 2, as every error does, rather than dying by the
 * signal with no word. Only write() and _exit(): the message is made
 * before the call (hk_cli_running). */
static char g_running[1024];
static volatile sig_atomic_t g_running_status = HK_EXIT_INTERNAL;

void hk_cli_running(const char *what, int status) {
  if (!what) {
    g_running[0] = '\0';
    return;
  }
  snprintf(g_running, sizeof g_running, "%s", what);
  g_running_status = status;
}

static void put_err(const char *s) {
  ssize_t w = write(STDERR_FILENO, s, strlen(s));
  (void)w;
}

static void on_crash(int sig) {
  const int kernel = g_running[0] != '\0';
  const char *name = sig == SIGSEGV   ? "SIGSEGV"
                     : sig == SIGBUS  ? "SIGBUS"
                     : sig == SIGFPE  ? "SIGFPE"
                                      : "SIGILL";
  const char *why = sig == SIGSEGV || sig == SIGBUS
                        ? ", an access outside the memory it may use: in raw "
                          "and grid code, check each index against its "
                          "buffer's len"
                    : sig == SIGFPE ? ", an integer division by zero (or "
                                      "INT_MIN / -1)"
                                    : ", an illegal instruction (often memory "
                                      "an earlier out-of-bounds write "
                                      "overwrote)";
  (void)hk__cc_interrupt(); /* compilers of ours still running: kill() */
  put_err("hk ");
  put_err(g_command);
  put_err(": ");
  if (kernel) {
    put_err(g_running);
    put_err(" crashed: ");
    put_err(name);
    put_err(why);
  } else { /* hk's own code: a bug to report */
    put_err("crashed (");
    put_err(name);
    put_err("): a bug in hk");
  }
  put_err("\n");
  _exit(kernel ? g_running_status : HK_EXIT_INTERNAL);
}

static void catch_crashes(void) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return; /* the sanitizer's own report says more */
#endif
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
  return;
#endif
#endif
  /* its own stack: a body's huge local array overflows the thread's */
  static char alt[64 * 1024];
  stack_t st = {.ss_sp = alt, .ss_size = sizeof alt, .ss_flags = 0};
  sigaltstack(&st, NULL);
  static const int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
  for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_crash;
    sa.sa_flags = SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(sigs[i], &sa, NULL);
  }
}

static void catch_signals(void) {
  catch_crashes();
  static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
  for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) {
    struct sigaction old, sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    /* an ignored signal (nohup's SIGHUP) stays ignored */
    if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
      sigaction(sigs[i], &sa, NULL);
  }
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return HK_EXIT_USER;
  }
  if (hk_cli_is_help(argv[1]) || !strcmp(argv[1], "--version")) {
    if (hk_cli_is_help(argv[1]))
      usage(stdout);
    else
      printf("hk %s\n", HK_VERSION_STRING);
    if (fflush(stdout) != 0 || ferror(stdout)) {
      fputs("hk: cannot write to standard output\n", stderr);
      return HK_EXIT_INTERNAL;
    }
    return HK_EXIT_OK;
  }
  for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
    if (!strcmp(argv[1], commands[i].name)) {
      int rc = check_env(commands[i].name, argc, argv);
      if (rc != HK_EXIT_OK) return rc;
      g_command = commands[i].name;
      catch_signals();
      rc = commands[i].run(argc - 1, argv + 1);
      if (g_signal) { /* its compiles were stopped: now hk ends */
        fflush(stdout);
        signal(g_signal, SIG_DFL);
        raise(g_signal);
      }
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
