/* gpt2_bench.c — hk bench --gpt2: the kernels of one GPT-2 small layer
 * (B = 4, T = 64, C = 768, NH = 12; softmax over rows of V = 50257; AdamW
 * over the model's 124,475,904 parameters), each written as a kernel file
 * (bench/gpt2/NAME.json, no host loops) and run through the registry on tier
 * opt, against the same loops in C compiled -O3 -Ofast -march=native
 * -fopenmp (gpt2_ref.c), on the same number of threads.
 *
 * Each kernel runs in both numeric modes: as written ("fp" strict, the
 * default: the same bits on every tier and thread count) and as a copy
 * marked "fp": "fast" (contraction and reassociation allowed). Outputs are
 * checked against C's before anything is timed; groups are timed as
 * timing.h says. The target (issue 10): the better mode ≤ 1.0× C.
 *
 * --isolated times every repetition of every variant in a fresh process
 * (this program, --only NAME --variant K), so that no variant's idle
 * threads share the CPUs with another's: see run_isolated().
 *
 * Usage: hk bench --gpt2 [--quick] [--threads N] [--json FILE]
 *        [--kernels DIR] [--only KERNEL] [--isolated]
 * (--smoke: small odd shapes, one untimed pass: every check)
 */
#include <cJSON.h>
#include <hk.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpt2_bench.h"
#include "timing.h"

#ifndef HK_GPT2_KERNELS
#define HK_GPT2_KERNELS "bench/gpt2"
#endif

static hk_context_t *ctx;
static int threads = 2;
static int fast_loaded;
/* --variant K (0: C, 1: hk strict, 2: hk fast): time that variant alone
 * and print its time; what --isolated runs in each child process. */
static int variant_only = -1;

/* The shapes: GPT-2 small's, or tiny ones for --smoke. */
static int64_t B = 4, T = 64, C = 768, NH = 12, V = 50257,
               NPARAMS = 124475904;

static float *copy_of(const float *p, size_t n) {
  float *q = bench_fbuf(n);
  memcpy(q, p, n * sizeof *p);
  return q;
}

/* ---- loading ----------------------------------------------------------- */

/* Loads DIR/NAME.json a second time as NAME_fast with "fp": "fast". */
static int load_fast(const char *dir, const char *name) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s.json", dir, name);
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  char *text = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&text, &len);
  char chunk[4096];
  size_t got;
  while (m && (got = fread(chunk, 1, sizeof chunk, f)) > 0) fwrite(chunk, 1, got, m);
  fclose(f);
  if (!m) return -1;
  fclose(m);
  cJSON *j = cJSON_Parse(text);
  free(text);
  if (!j) return -1;
  char fast_name[128];
  snprintf(fast_name, sizeof fast_name, "%s_fast", name);
  cJSON_ReplaceItemInObject(j, "name", cJSON_CreateString(fast_name));
  cJSON_AddStringToObject(j, "fp", "fast");
  char *out = cJSON_Print(j);
  cJSON_Delete(j);
  int rc = hk_load_string(ctx, out, strlen(out), path);
  free(out);
  return rc;
}

static hk_kernel_t *kernel(const char *name, int fast) {
  char full[128];
  snprintf(full, sizeof full, "%s%s", name, fast ? "_fast" : "");
  hk_kernel_t *k = NULL;
  if (hk_kernel_find(ctx, full, &k) != HK_OK) return NULL;
  if (hk_kernel_wait_opt(k) != HK_OK)
    fprintf(stderr, "%s: %s stays on tier %s: %s\n", bench_name, full,
            hk_tier_name(hk_kernel_tier(k)), hk_last_error());
  return k;
}

/* ---- one kernel against its C baseline ---------------------------------- */

typedef struct hk_run {
  hk_kernel_t *k;
  size_t n;
  void *args[16];
} hk_run;

static void run_hk(void *p) {
  hk_run *r = p;
  if (hk_call(r->k, r->n, r->args) != HK_OK) {
    fprintf(stderr, "%s: %s\n", bench_name, hk_last_error());
    exit(2);
  }
}

/* The buffers a case's C baseline reads and writes: p[0..] in the order of
 * the kernel file's buffer parameters. */
typedef struct ref_run {
  float *p[8];
} ref_run;

/* A case: the kernel's name, its buffers (nbuf, their lengths; the
 * bits of `written` say which to compare), the baseline's own buffers
 * after them (nextra), its scalars, and the C baseline. */
typedef struct gcase {
  const char *name, *shape;
  int nbuf, nextra;
  unsigned written;
  size_t len[8];
  unsigned nonneg; /* buffers whose values must be >= 0 (AdamW's v) */
  void *scalars[8];
  int nscalars;
  size_t n; /* hk_call's n */
  void (*ref)(void *);
  double tol;
} gcase;

/* The variants' names: C, hk strict, hk fast (--variant's 0, 1, 2). */
static const char *const variant_names[] = {"C -O3 -Ofast -fopenmp",
                                            "hk, fp strict", "hk, fp fast"};

/* Prints a case's timed variants under "NAME, SHAPE (HOW)" and records
 * its target, the better hk mode against C ("...: hk (best mode) / C"
 * then TAG). */
static void report_case(const gcase *g, variant *v, int nv, const char *how,
                        const char *tag) {
  char group[160];
  snprintf(group, sizeof group, "%s, %s (%s)", g->name, g->shape, how);
  bench_report(group, v, nv);
  double best = v[1].ns;
  if (nv == 3 && v[2].ns < best) best = v[2].ns;
  char w[96];
  snprintf(w, sizeof w, "%s: hk (best mode) / C%s", g->name, tag);
  bench_want(w, best / v[0].ns, 1.0, 1);
}

/* Runs C, strict and fast once from the same inputs and compares what
 * they write; then (timed) times the three on their own buffers. */
static void run_case(const gcase *g, int timed) {
  ref_run ref = {{0}};
  for (int i = 0; i < g->nbuf + g->nextra; i++) {
    ref.p[i] = bench_fbuf(g->len[i]);
    if (g->nonneg >> i & 1)
      for (size_t j = 0; j < g->len[i]; j++) ref.p[i][j] = fabsf(ref.p[i][j]);
  }
  hk_run hk[2] = {{0}, {0}};
  float *bufs[2][8];
  for (int m = 0; m < 2; m++) {
    hk[m].k = kernel(g->name, m);
    hk[m].n = g->n;
    for (int i = 0; i < g->nbuf; i++)
      hk[m].args[i] = bufs[m][i] = copy_of(ref.p[i], g->len[i]);
    for (int i = 0; i < g->nscalars; i++) hk[m].args[g->nbuf + i] = g->scalars[i];
  }
  if (!hk[0].k) {
    fprintf(stderr, "%s: no kernel %s: %s\n", bench_name, g->name, hk_last_error());
    exit(2);
  }
  g->ref(&ref);
  int nv = 1;
  variant v[3] = {{variant_names[0], g->ref, &ref, 0, 0}};
  for (int m = 0; m < 2; m++) {
    if (!hk[m].k) continue;
    run_hk(&hk[m]);
    char what[96];
    for (int i = 0; i < g->nbuf; i++) {
      if (!(g->written >> i & 1)) continue;
      snprintf(what, sizeof what, "%s (%s) buffer %d", g->name,
               m ? "fast" : "strict", i);
      if (!bench_close(bufs[m][i], ref.p[i], g->len[i], g->tol, what)) exit(1);
    }
    v[nv++] = (variant){variant_names[m + 1], run_hk, &hk[m], 0, 0};
  }
  if (timed) {
    bench_time_group(v, nv);
    char how[64];
    snprintf(how, sizeof how, "tier %s", hk_tier_name(hk_kernel_tier(hk[0].k)));
    report_case(g, v, nv, how, "");
  }
  for (int i = 0; i < g->nbuf + g->nextra; i++) free(ref.p[i]);
  for (int i = 0; i < g->nbuf; i++)
    for (int m = 0; m < 2; m++)
      if (hk[m].k) free(bufs[m][i]);
}

/* ---- --isolated: each variant in a process of its own ------------------ */

/* Why: on a 2-CPU machine, the variants of one process disturb each other
 * after they return. libgomp's idle workers spin for 2 to 6 ms of CPU
 * after each parallel region (GOMP_SPINCOUNT's default), so hk's pool,
 * timed next, shared the second CPU with them; and this VM runs two
 * threads at half speed for milliseconds after an idle pause. In one
 * process, layernorm_forward timed 1.4-1.55x C; the same loops timed in
 * processes of their own, 1.0x (2026-11-27, bench/README.md). Here every
 * repetition of every variant is a fresh process (this program with
 * --only NAME --variant K), in a shuffled order per repetition, so that
 * a slow phase of the machine still falls on all of them alike; each
 * child warms up (three calls, then calibration) before its one timed
 * repetition. */

/* A child of --isolated: variant_only of case g alone (its parent ran the
 * checks), on buffers of its own, timed once after its warm-up; prints
 * "isolated-ns NAME K NS". */
static void run_child(const gcase *g) {
  ref_run ref = {{0}};
  int nb = variant_only == 0 ? g->nbuf + g->nextra : g->nbuf;
  for (int i = 0; i < nb; i++) {
    ref.p[i] = bench_fbuf(g->len[i]);
    if (g->nonneg >> i & 1)
      for (size_t j = 0; j < g->len[i]; j++) ref.p[i][j] = fabsf(ref.p[i][j]);
  }
  hk_run h = {0};
  variant v = {"C", g->ref, &ref, 0, 0};
  if (variant_only > 0) {
    if (!(h.k = kernel(g->name, variant_only - 1))) {
      fprintf(stderr, "%s: no kernel %s%s: %s\n", bench_name, g->name,
              variant_only == 2 ? "_fast" : "", hk_last_error());
      exit(2);
    }
    h.n = g->n;
    for (int i = 0; i < g->nbuf; i++) h.args[i] = ref.p[i];
    for (int i = 0; i < g->nscalars; i++) h.args[g->nbuf + i] = g->scalars[i];
    v = (variant){"hk", run_hk, &h, 0, 0};
  }
  /* three untimed calls first: calibrating takes one call where a call
   * outlasts a repetition (AdamW's 40 ms), and in a fresh process the
   * first call took 93-198 ms and the second up to 50 (then 37-42) */
  for (int i = 0; i < 3; i++) v.fn(v.ctx);
  bench_time_group(&v, 1);
  printf("isolated-ns %s %d %.1f\n", g->name, variant_only, v.ns);
  for (int i = 0; i < nb; i++) free(ref.p[i]);
}

extern char **environ;

static char self_path[4096];
static char *child_base[16];
static int nchild_base;

/* Runs this program as the child for case name, variant k; returns its
 * time per call in ns (exits when the child fails). */
static double spawn_variant(const char *name, int k) {
  char kbuf[8];
  snprintf(kbuf, sizeof kbuf, "%d", k);
  char *argv[24];
  int n = 0;
  for (int i = 0; i < nchild_base; i++) argv[n++] = child_base[i];
  argv[n++] = "--only";
  argv[n++] = (char *)name;
  argv[n++] = "--variant";
  argv[n++] = kbuf;
  argv[n] = NULL;
  int fd[2];
  if (pipe(fd) != 0) {
    perror("pipe");
    exit(2);
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fd[1], 1);
  posix_spawn_file_actions_addclose(&fa, fd[0]);
  posix_spawn_file_actions_addclose(&fa, fd[1]);
  pid_t pid;
  int rc = posix_spawn(&pid, self_path, &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fd[1]);
  if (rc != 0) {
    fprintf(stderr, "%s: cannot run %s: %s\n", bench_name, self_path,
            strerror(rc));
    exit(2);
  }
  char out[4096], rest[512];
  size_t len = 0;
  ssize_t got;
  /* the first 4 KB kept (its line is near the top), the rest drained */
  while ((got = len < sizeof out - 1
                    ? read(fd[0], out + len, sizeof out - 1 - len)
                    : read(fd[0], rest, sizeof rest)) > 0)
    if (len < sizeof out - 1) len += (size_t)got;
  out[len] = '\0';
  close(fd[0]);
  int status;
  waitpid(pid, &status, 0);
  const char *line = strstr(out, "isolated-ns ");
  double ns = -1;
  if (line) {
    char nm[128];
    int kk;
    if (sscanf(line, "isolated-ns %127s %d %lf", nm, &kk, &ns) != 3) ns = -1;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || ns < 0) {
    fprintf(stderr, "%s: %s, variant %d: the child failed:\n%s\n", bench_name,
            name, k, out);
    exit(2);
  }
  return ns;
}

static void run_isolated(const gcase *g) {
  /* the kernels built and cached before any child looks for them */
  if (!kernel(g->name, 0)) {
    fprintf(stderr, "%s: no kernel %s: %s\n", bench_name, g->name, hk_last_error());
    exit(2);
  }
  int nv = fast_loaded && kernel(g->name, 1) ? 3 : 2;
  double s[3][64];
  int reps = bench_reps < 64 ? bench_reps : 64;
  uint64_t rng = 0x243f6a8885a308d3ull;
  for (int r = 0; r < reps; r++) {
    int order[3] = {0, 1, 2};
    for (int i = nv - 1; i > 0; i--) {
      rng = rng * 6364136223846793005ull + 1442695040888963407ull;
      int j = (int)((rng >> 33) % (uint64_t)(i + 1)), t = order[i];
      order[i] = order[j];
      order[j] = t;
    }
    for (int q = 0; q < nv; q++)
      s[order[q]][r] = spawn_variant(g->name, order[q]);
  }
  /* the outputs checked once, after the children: this process's OpenMP
   * workers would spin beside the first children for milliseconds */
  run_case(g, 0);
  variant v[3];
  for (int k = 0; k < nv; k++)
    v[k] = (variant){variant_names[k], NULL, NULL, bench_median(s[k], reps), 0};
  report_case(g, v, nv, "tier opt, isolated processes", ", isolated");
}

/* ---- the C baselines, over ref_run ------------------------------------- */

static float lr = 1e-4f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f,
             weight_decay = 0.0f;
static int32_t step = 1;
static int64_t BT, C3, C4, N4;

static void ref_matmul(void *p) {
  ref_run *r = p;
  ref_matmul_forward(r->p[0], r->p[1], r->p[2], r->p[3], BT, C, C3, threads);
}
static void ref_attention(void *p) {
  ref_run *r = p;
  ref_attention_forward(r->p[0], r->p[1], r->p[2], r->p[3], B, T, C, NH,
                        threads);
}
static void ref_ln_fwd(void *p) {
  ref_run *r = p;
  ref_layernorm_forward(r->p[0], r->p[1], r->p[2], r->p[3], r->p[4], r->p[5],
                        BT, C, threads);
}
/* The layernorm backward is two kernels (layernorm_backward_dinp: per row;
 * layernorm_backward_dweight: per column tile, over the rows in order); C
 * runs it as one. Their cases time each hk kernel against the whole C. */
static void ref_ln_bwd_dinp(void *p) {
  ref_run *r = p; /* dinp, dout, inp, weight, mean, rstd */
  float *dw = r->p[6], *db = r->p[7];
  ref_layernorm_backward(r->p[0], dw, db, r->p[1], r->p[2], r->p[3], r->p[4],
                         r->p[5], BT, C, threads);
}
static void ref_ln_bwd_dweight(void *p) {
  ref_run *r = p; /* dweight, dbias, dout, inp, mean, rstd */
  float *dinp = r->p[6], *weight = r->p[7];
  ref_layernorm_backward(dinp, r->p[0], r->p[1], r->p[2], r->p[3], weight,
                         r->p[4], r->p[5], BT, C, threads);
}
static void ref_softmax(void *p) {
  ref_run *r = p;
  ref_softmax_forward(r->p[0], r->p[1], BT, V, threads);
}
static void ref_gelu_fwd(void *p) {
  ref_run *r = p; /* inp, out: the kernel file's order */
  ref_gelu_forward(r->p[1], r->p[0], N4, threads);
}
static void ref_gelu_bwd(void *p) {
  ref_run *r = p; /* dinp, inp, dout */
  ref_gelu_backward(r->p[0], r->p[1], r->p[2], N4, threads);
}
static void ref_adamw_step(void *p) {
  ref_run *r = p;
  ref_adamw(r->p[0], r->p[1], r->p[2], r->p[3], NPARAMS, lr, beta1, beta2,
            eps, weight_decay, step, threads);
}

/* ---- main -------------------------------------------------------------- */

static const char *const KERNELS[] = {
    "matmul_forward", "attention_forward", "layernorm_forward",
    "layernorm_backward_dinp", "layernorm_backward_dweight",
    "softmax_forward", "gelu_forward", "gelu_backward", "adamw"};

static void usage(FILE *f) {
  fprintf(f,
          "usage: hk bench --gpt2 [--quick] [--threads N] [--json FILE]\n"
          "                [--kernels DIR] [--only KERNEL] [--isolated]\n\n"
          "Times the kernels of one GPT-2 small layer, as kernel files on\n"
          "tier opt in both fp modes (strict and fast), against llm.c's\n"
          "loops in C (-O3 -Ofast -march=native -fopenmp) on the same\n"
          "threads; outputs are checked against C's first. The figure is\n"
          "the median of 11 interleaved repetitions.\n"
          "  --quick         5 repetitions, each shorter\n"
          "  --threads N     threads for hk and for C (default 2)\n"
          "  --json FILE     one record per variant (group, variant, ns)\n"
          "  --kernels DIR   the kernel files (default %s)\n"
          "  --only KERNEL   that kernel alone\n"
          "  --isolated      each repetition of each variant in a process of\n"
          "                  its own, so that no variant's idle threads\n"
          "                  share the CPUs with another's\n"
          "  --smoke         small odd shapes, one untimed pass: every check,\n"
          "                  no figure worth reading (for tests)\n"
          "kernels:",
          HK_GPT2_KERNELS);
  int col = 8;
  for (size_t i = 0; i < sizeof KERNELS / sizeof *KERNELS; i++) {
    int w = 1 + (int)strlen(KERNELS[i]);
    if (col + w > 72) {
      fprintf(f, "\n        ");
      col = 8;
    }
    col += fprintf(f, " %s", KERNELS[i]);
  }
  fprintf(f, "\n");
}

int main(int argc, char **argv) {
  bench_name = "hk bench --gpt2";
  int quick = 0;
  const char *json_path = NULL, *dir = HK_GPT2_KERNELS, *only = NULL;
  int isolated = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick")) quick = 1;
    else if (!strcmp(argv[i], "--isolated")) isolated = 1;
    else if (!strcmp(argv[i], "--variant") && i + 1 < argc) {
      const char *k = argv[++i];
      variant_only = k[0] >= '0' && k[0] <= '2' && !k[1] ? k[0] - '0' : 3;
    }
    else if (!strcmp(argv[i], "--smoke")) quick = 2;
    else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--json") && i + 1 < argc) json_path = argv[++i];
    else if (!strcmp(argv[i], "--kernels") && i + 1 < argc) dir = argv[++i];
    else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
    else if (!strcmp(argv[i], "--hk") && i + 1 < argc) i++;
    else
      return bench_other_arg(argv[i], usage);
  }
  if (threads < 1) threads = 1;
  if (variant_only > 2 || (variant_only >= 0 && (!only || isolated))) {
    fprintf(stderr, "%s: --variant K (0, 1 or 2) needs --only and no "
                    "--isolated\n", bench_name);
    return 1;
  }
  if (isolated) {
    ssize_t n = readlink("/proc/self/exe", self_path, sizeof self_path - 1);
    if (n <= 0) {
      fprintf(stderr, "%s: --isolated: cannot find this program\n", bench_name);
      return 2;
    }
    self_path[n] = '\0';
    static char tbuf[16];
    snprintf(tbuf, sizeof tbuf, "%d", threads);
    child_base[nchild_base++] = self_path;
    child_base[nchild_base++] = "--threads";
    child_base[nchild_base++] = tbuf;
    child_base[nchild_base++] = "--kernels";
    child_base[nchild_base++] = (char *)dir;
    if (quick) child_base[nchild_base++] = quick == 1 ? "--quick" : "--smoke";
  }
  if (quick) {
    bench_reps = quick == 2 ? 1 : 5;
    bench_min_rep_ns = quick == 2 ? 1 : 5e6;
  }
  if (quick == 2) {
    /* odd sizes: every tail of the tiled loops runs */
    B = 3, T = 7, C = 70, NH = 5, V = 1001, NPARAMS = 10007;
  }
  BT = B * T, C3 = 3 * C, C4 = 4 * C, N4 = BT * C4;
  hk_set_threads(threads);
  const char *dirs[] = {dir, NULL};
  hk_options_t o = {.plugin_dirs = dirs};
  if (hk_context_create(&ctx, &o) != HK_OK) {
    fprintf(stderr, "%s: %s\n", bench_name, hk_last_error());
    return 2;
  }
  const char *problems = hk_context_problems(ctx);
  if (problems && *problems) {
    fprintf(stderr, "%s: %s: %s\n", bench_name, dir, problems);
    return 2;
  }
  fast_loaded = 1;
  for (size_t i = 0; i < sizeof KERNELS / sizeof *KERNELS; i++)
    if (load_fast(dir, KERNELS[i]) != HK_OK) {
      if (fast_loaded) {
        const char *e = hk_last_error();
        printf("(fp fast copies not loaded: %.*s)\n", (int)strcspn(e, "\n"), e);
      }
      fast_loaded = 0;
    }
  if (json_path && !(bench_json = fopen(json_path, "w"))) {
    perror(json_path);
    return 1;
  }
  if (bench_json) fputs("[\n", bench_json);
  printf("hk bench --gpt2: B=%lld T=%lld C=%lld NH=%lld V=%lld, AdamW over %lld "
         "parameters; %d threads, median of %d %s\n",
         (long long)B, (long long)T, (long long)C, (long long)NH, (long long)V,
         (long long)NPARAMS, threads, bench_reps,
         isolated ? "repetitions, each variant in a process of its own"
                  : "interleaved repetitions");

  char shape[8][64];
  snprintf(shape[0], 64, "(%lld, %lld) x (%lld, %lld)", (long long)BT,
           (long long)C, (long long)C, (long long)C3);
  snprintf(shape[1], 64, "B=%lld T=%lld C=%lld NH=%lld", (long long)B,
           (long long)T, (long long)C, (long long)NH);
  snprintf(shape[2], 64, "(%lld, %lld)", (long long)BT, (long long)C);
  snprintf(shape[3], 64, "(%lld, %lld)", (long long)BT, (long long)V);
  snprintf(shape[4], 64, "%lld elements", (long long)N4);
  snprintf(shape[5], 64, "%lld parameters", (long long)NPARAMS);
  size_t bt = (size_t)BT, c = (size_t)C, att = (size_t)(B * NH * T * T);
  gcase cases[] = {
      {.name = "matmul_forward", .shape = shape[0], .nbuf = 4, .written = 1,
       .len = {bt * (size_t)C3, bt * c, (size_t)C3 * c, (size_t)C3},
       .scalars = {&BT, &C, &C3}, .nscalars = 3, .n = bt * c,
       .ref = ref_matmul, .tol = 1e-4},
      {.name = "attention_forward", .shape = shape[1], .nbuf = 4, .written = 7,
       .len = {bt * c, att, att, bt * (size_t)C3},
       .scalars = {&B, &T, &C, &NH}, .nscalars = 4, .n = bt * (size_t)C3,
       .ref = ref_attention, .tol = 1e-4},
      {.name = "layernorm_forward", .shape = shape[2], .nbuf = 6, .written = 7,
       .len = {bt * c, bt, bt, bt * c, c, c},
       .scalars = {&BT, &C}, .nscalars = 2, .n = bt * c,
       .ref = ref_ln_fwd, .tol = 1e-4},
      /* len[6], len[7]: the gradients the other half of C's backward writes */
      {.name = "layernorm_backward_dinp", .shape = shape[2], .nbuf = 6,
       .nextra = 2, .written = 1,
       .len = {bt * c, bt * c, bt * c, c, bt, bt, c, c},
       .scalars = {&BT, &C}, .nscalars = 2, .n = bt * c,
       .ref = ref_ln_bwd_dinp, .tol = 1e-4},
      {.name = "layernorm_backward_dweight", .shape = shape[2], .nbuf = 6,
       .nextra = 2, .written = 3,
       .len = {c, c, bt * c, bt * c, bt, bt, bt * c, c},
       .scalars = {&BT, &C}, .nscalars = 2, .n = bt * c,
       .ref = ref_ln_bwd_dweight, .tol = 1e-4},
      {.name = "softmax_forward", .shape = shape[3], .nbuf = 2, .written = 1,
       .len = {bt * (size_t)V, bt * (size_t)V},
       .scalars = {&BT, &V}, .nscalars = 2, .n = bt * (size_t)V,
       .ref = ref_softmax, .tol = 1e-5},
      {.name = "gelu_forward", .shape = shape[4], .nbuf = 2, .written = 2,
       .len = {(size_t)N4, (size_t)N4}, .n = (size_t)N4,
       .ref = ref_gelu_fwd, .tol = 1e-5},
      {.name = "gelu_backward", .shape = shape[4], .nbuf = 3, .written = 1,
       .len = {(size_t)N4, (size_t)N4, (size_t)N4}, .n = (size_t)N4,
       .ref = ref_gelu_bwd, .tol = 1e-4},
      {.name = "adamw", .shape = shape[5], .nbuf = 4, .written = 15,
       .len = {(size_t)NPARAMS, (size_t)NPARAMS, (size_t)NPARAMS,
               (size_t)NPARAMS},
       .nonneg = 8, /* v */
       .scalars = {&NPARAMS, &lr, &beta1, &beta2, &eps, &weight_decay, &step},
       .nscalars = 7, .n = (size_t)NPARAMS, .ref = ref_adamw_step,
       .tol = 1e-4},
  };

  if (variant_only >= 0) bench_reps = 1; /* the parent repeats */
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    if (!only || !strcmp(only, cases[i].name)) {
      if (variant_only >= 0) run_child(&cases[i]);
      else if (isolated) run_isolated(&cases[i]);
      else run_case(&cases[i], 1);
    }
  if (variant_only >= 0) {
    hk_context_destroy(ctx);
    return 0;
  }
  if (bench_json) {
    fputs("\n]\n", bench_json);
    fclose(bench_json);
  }
  bench_print_targets("issue 10, GPT-2 layer");
  hk_context_destroy(ctx);
  return 0;
}
