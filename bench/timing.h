/* timing.h — what the C benchmarks share (hk bench --arrays, --gpt2): data,
 * interleaved timing of variants, checks of results, the report and the
 * table of targets.
 *
 * A group's variants are timed in interleaved order (every repetition runs
 * each variant once, in a shuffled order), so that a slow phase of this
 * shared machine falls on all of them alike; the figure of a variant is the
 * median over the repetitions of its time per call. */
#ifndef HK_BENCH_TIMING_H
#define HK_BENCH_TIMING_H

#include <stddef.h>
#include <stdio.h>

typedef struct variant {
  const char *name;
  void (*fn)(void *);
  void *ctx;
  double ns; /* median per call */
  long iters;
} variant;

extern int bench_reps;          /* repetitions per group (11) */
extern double bench_min_rep_ns; /* the shortest repetition (20 ms) */
extern FILE *bench_json;        /* a JSON copy of the report, or NULL */
extern const char *bench_name;  /* "hk bench --arrays": error messages */

/* An argument main's own loop does not take: --help or -h prints usage
 * on stdout (status 0); anything else is named, with bench_name, and
 * usage goes to stderr (status 1). Returns the exit status. */
int bench_other_arg(const char *arg, void (*usage)(FILE *));

double bench_now_ns(void);
/* The Python that has NumPy, as hk bench's main table finds it:
 * $HK_NUMPY_PYTHON when set, else python3 on PATH (a virtual
 * environment's), else /usr/bin/python3 (Debian's python3-numpy), the
 * first that imports numpy; NULL when none does. Looked up once. */
const char *bench_numpy_python(void);
/* Uniform in [-2, 2), from a fixed seed. */
float bench_frand(void);
/* n floats aligned to 64 bytes, filled by bench_frand(); aborts when out of
 * memory. */
float *bench_fbuf(size_t n);

void bench_time_group(variant *v, int nv);
/* The median of s[0 .. n) (the upper one when n is even), s sorted. */
double bench_median(double *s, int n);
/* Prints the group's variants (time, ratio to the first) and their JSON. */
void bench_report(const char *group, variant *v, int nv);
/* Records a target: met when ratio <= limit (below) or >= limit. */
void bench_want(const char *what, double ratio, double limit, int below);
/* Prints the targets recorded, under the heading "targets (WHAT), this
 * run:". */
void bench_print_targets(const char *what);
/* 1 when a and b agree within the relative tolerance tol (relative to
 * |b| + 1), else 0 after saying which and by how much. */
int bench_close(const float *a, const float *b, size_t n, double tol,
                const char *what);

#endif
