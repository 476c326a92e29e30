/* timing.c — what the C benchmarks share: see timing.h. */
#include "timing.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int bench_reps = 11;
double bench_min_rep_ns = 20e6;
FILE *bench_json;
const char *bench_name = "hk bench";

int bench_other_arg(const char *arg, void (*usage)(FILE *)) {
  if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
    usage(stdout);
    return 0;
  }
  fprintf(stderr, "%s: unknown argument '%s'\n", bench_name, arg);
  usage(stderr);
  return 1;
}

double bench_now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

const char *bench_numpy_python(void) {
  static const char *found;
  static int looked;
  if (looked) return found;
  looked = 1;
  const char *env = getenv("HK_NUMPY_PYTHON");
  const char *const tries[] = {env && *env ? env : NULL, "python3",
                               "/usr/bin/python3"};
  for (size_t i = 0; i < sizeof tries / sizeof tries[0] && !found; i++) {
    char cmd[512];
    if (!tries[i] || strchr(tries[i], '\'') ||
        snprintf(cmd, sizeof cmd, "'%s' -c 'import numpy' >/dev/null 2>&1",
                 tries[i]) >= (int)sizeof cmd)
      continue;
    if (system(cmd) == 0) found = tries[i];
  }
  return found;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

float bench_frand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (float)((double)(rng >> 11) / 9007199254740992.0 * 4 - 2);
}

float *bench_fbuf(size_t n) {
  float *p = NULL;
  if (posix_memalign((void **)&p, 64, (n ? n : 1) * sizeof *p)) abort();
  for (size_t j = 0; j < n; j++) p[j] = bench_frand();
  return p;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double bench_median(double *s, int n) {
  qsort(s, (size_t)n, sizeof *s, cmp_d);
  return s[n / 2];
}

void bench_time_group(variant *v, int nv) {
  for (int i = 0; i < nv; i++) { /* warm up, calibrate */
    long it = 1;
    for (;;) {
      double t0 = bench_now_ns();
      for (long k = 0; k < it; k++) v[i].fn(v[i].ctx);
      double dt = bench_now_ns() - t0;
      if (dt > bench_min_rep_ns || it > (1l << 30)) break;
      it = dt < bench_min_rep_ns / 100 ? it * 10
                                       : (long)(it * bench_min_rep_ns / dt) + 1;
    }
    v[i].iters = it;
  }
  double *s = calloc((size_t)(nv * bench_reps), sizeof *s);
  if (!s) abort();
  int order[16];
  for (int r = 0; r < bench_reps; r++) {
    for (int i = 0; i < nv; i++) order[i] = i;
    for (int i = nv - 1; i > 0; i--) {
      int j = (int)(rng % (uint64_t)(i + 1));
      rng = rng * 6364136223846793005ull + 1;
      int t = order[i]; order[i] = order[j]; order[j] = t;
    }
    for (int q = 0; q < nv; q++) {
      variant *x = &v[order[q]];
      double t0 = bench_now_ns();
      for (long k = 0; k < x->iters; k++) x->fn(x->ctx);
      s[order[q] * bench_reps + r] = (bench_now_ns() - t0) / (double)x->iters;
    }
  }
  for (int i = 0; i < nv; i++) v[i].ns = bench_median(s + i * bench_reps, bench_reps);
  free(s);
}

static int njson;

void bench_report(const char *group, variant *v, int nv) {
  printf("\n%s\n", group);
  for (int i = 0; i < nv; i++) {
    printf("  %-28s %12.0f ns   %6.2fx the first\n", v[i].name, v[i].ns,
           v[i].ns / v[0].ns);
    if (bench_json)
      fprintf(bench_json,
              "%s  {\"group\": \"%s\", \"variant\": \"%s\", \"ns\": %.1f}",
              njson++ ? ",\n" : "", group, v[i].name, v[i].ns);
  }
}

typedef struct target {
  char what[96];
  double ratio, limit;
  int below; /* met when ratio <= limit (else >= limit) */
} target;
static target targets[64];
static int ntargets;

void bench_want(const char *what, double ratio, double limit, int below) {
  if (ntargets == 64) return;
  target *t = &targets[ntargets++];
  snprintf(t->what, sizeof t->what, "%s", what);
  t->ratio = ratio;
  t->limit = limit;
  t->below = below;
}

void bench_print_targets(const char *what) {
  printf("\ntargets (%s), this run:\n", what);
  for (int i = 0; i < ntargets; i++)
    printf("  %-52s %6.2f  (%s %.2f)  %s\n", targets[i].what, targets[i].ratio,
           targets[i].below ? "<=" : ">=", targets[i].limit,
           (targets[i].below ? targets[i].ratio <= targets[i].limit
                             : targets[i].ratio >= targets[i].limit)
               ? "met"
               : "NOT MET");
}

int bench_close(const float *a, const float *b, size_t n, double tol,
                const char *what) {
  double worst = 0;
  for (size_t j = 0; j < n; j++) {
    double d = fabs((double)a[j] - b[j]) / (fabs((double)b[j]) + 1.0);
    if (d > worst || d != d) worst = d != d ? INFINITY : d;
  }
  if (worst > tol) {
    fprintf(stderr, "%s: %s: results differ (relative %g)\n", bench_name, what,
            worst);
    return 0;
  }
  return 1;
}
