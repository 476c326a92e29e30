/* cmd_run.c — hk run: run one kernel on NumPy .npy files (SPEC §3).
 *
 * The command: options, the kernel (a name or a kernel file), the backend
 * and tier checks, the call, and the outputs. Binding the arguments to the
 * kernel's parameters and checking them is run_args.c's. Outputs named with
 * --out are written as .npy (atomically); the others are printed as one
 * JSON object on stdout.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "buf.h"
#include "cli.h"
#include "codegen.h"
#include "fsutil.h"
#include "npy.h"
#include "run_args.h"

static const char *const help =
    "usage: hk run KERNEL [PARAM=VALUE ...] [--out PARAM=FILE.npy ...]\n"
    "              [--n N] [--backend cpu|cuda|auto] [--tier "
    "inline|jit|opt|auto]\n"
    "              [--axis A[,A...]] [--keepdims] [--as bf16]\n"
    "              [--threads N] [--plugins DIR]... [--no-cache]\n"
    "              [--allow-unsafe-plugins] [-q]\n\n"
    "Runs one kernel. KERNEL is a kernel name (stdlib, or from the plugin\n"
    "folders: --plugins DIR, else HK_PLUGIN_PATH), or a kernel file\n"
    "(FILE.json, or FILE.json:NAME when it defines several kernels).\n"
    "  PARAM=FILE.npy   a buffer parameter (in or inout): a NumPy .npy file,\n"
    "                   little-endian, any shape, C or Fortran order (raw\n"
    "                   and grid kernels: C order only), whose\n"
    "                   dtype is the parameter's type (f32 = float32, i64 =\n"
    "                   int64, ...). Elementwise inputs broadcast by NumPy's\n"
    "                   rules. KERNEL may name a kernel with placeholders\n"
    "                   (saxpy for saxpy_f32 and saxpy_f64): the instance\n"
    "                   is picked from the files' dtypes\n"
    "  PARAM=NUMBER     a scalar parameter; or an in buffer (when no file\n"
    "                   has that name): a 0-d array of its type, broadcast\n"
    "                   (not an inout buffer: that needs a .npy file).\n"
    "                   Every scalar must be given (a raw or grid kernel's\n"
    "                   missing integer scalar is said with the value its\n"
    "                   in files' shapes give: \"rows * cols\" and x of\n"
    "                   shape (3, 4) give rows=3, cols=4); an out whose len\n"
    "                   is such a product is written in that shape\n"
    "  --out PARAM=FILE write out/inout PARAM to FILE.npy (the broadcast\n"
    "                   shape of the inputs; a reduction's kept axes: ()\n"
    "                   for a whole reduction, as NumPy's); outputs not named\n"
    "                   are printed to stdout as one JSON object {\"param\":\n"
    "                   [values...]}, nested lists for 2 axes or more (NaN\n"
    "                   and Infinity as in Python's json module). Each\n"
    "                   output needs a file of its own, neither the kernel\n"
    "                   file nor a plugin file, and one the caller may\n"
    "                   write (as `echo > FILE` needs): else exit 1 and\n"
    "                   nothing is written\n"
    "  --axis A[,A...]  reductions: the axes reduced (negative ones count\n"
    "                   from the end; default: all); repeatable. Rows\n"
    "                   kernels: the one axis the rows run along (default\n"
    "                   the last)\n"
    "  --keepdims       reductions: keep the reduced axes, with length 1\n"
    "  --as bf16        .npy files of dtype <u2 given to bf16 parameters hold\n"
    "                   bf16 bits (NumPy has no bfloat16; ml_dtypes' bfloat16\n"
    "                   arrays saved with .view(np.uint16)); bf16 outputs are\n"
    "                   written as <u2. f16 is NumPy's float16 (<f2), bool\n"
    "                   its bool (|b1), without --as\n"
    "  --n N            the element count, for a kernel with no in/inout\n"
    "                   buffer (otherwise n is the first one's element count;\n"
    "                   a raw or grid kernel whose code and lens do not use n\n"
    "                   needs none)\n"
    "  --backend B      cpu, cuda or auto (the default; .npy data is host\n"
    "                   memory, so auto runs on the CPU); cuda copies the\n"
    "                   buffers to the GPU, runs there and copies results\n"
    "                   back (no CUDA device: exit 1 with the reason)\n"
    "  --tier T         inline, jit, opt or auto (stdlib kernels are inline;\n"
    "                   plugin kernels: jit = libtcc, opt = the system\n"
    "                   compiler, waited for; auto = opt from the disk cache\n"
    "                   when there, else jit, and opt is built for next time)\n"
    "  --threads N      threads to share large calls (default, and 0: all\n"
    "                   CPUs; as hk_set_threads and Python's set_threads)\n"
    "  --allow-unsafe-plugins  load plugin files and folders others can\n"
    "                   write to or own\n"
    "  --no-cache       neither read nor write the disk cache (tier auto\n"
    "                   then runs jit, with no opt build beside it)\n"
    "  -q, --quiet      do not say each output's shape, dtype and where it\n"
    "                   went (one line each on stderr: \"hk run: out: shape\n"
    "                   (3, 4), f32, written to y.npy\")\n"
    "Every in/inout buffer and every scalar must be given; an option with\n"
    "a value is given once (but --out, --axis, --plugins). Exit status: 0\n"
    "success, 1 a user error (named on stderr; a crash in a plugin kernel's\n"
    "code too, or its writing past the end of an out buffer, found before\n"
    "anything is written), 2 an internal failure (no system compiler for\n"
    "--tier opt).\n";

/* ---- Output --------------------------------------------------------------- */

static void print_float(double v, int digits) {
  if (isnan(v))
    fputs("NaN", stdout);
  else if (isinf(v))
    fputs(v > 0 ? "Infinity" : "-Infinity", stdout);
  else
    printf("%.*g", digits, v);
}

static void print_values(const void *data, hk_dtype_t t, size_t count) {
  putchar('[');
  for (size_t i = 0; i < count; i++) {
    if (i) fputs(", ", stdout);
    switch (t) {
      case HK_F32: print_float(((const float *)data)[i], 9); break;
      case HK_F64: print_float(((const double *)data)[i], 17); break;
      case HK_I8: printf("%d", ((const int8_t *)data)[i]); break;
      case HK_I16: printf("%d", ((const int16_t *)data)[i]); break;
      case HK_I32: printf("%" PRId32, ((const int32_t *)data)[i]); break;
      case HK_I64: printf("%" PRId64, ((const int64_t *)data)[i]); break;
      case HK_U8: printf("%u", ((const uint8_t *)data)[i]); break;
      case HK_U16: printf("%u", ((const uint16_t *)data)[i]); break;
      case HK_U32: printf("%" PRIu32, ((const uint32_t *)data)[i]); break;
      case HK_U64: printf("%" PRIu64, ((const uint64_t *)data)[i]); break;
      case HK_F16:
        print_float(hk_f16_to_double(((const uint16_t *)data)[i]), 5);
        break;
      case HK_BF16:
        print_float(hk_bf16_to_double(((const uint16_t *)data)[i]), 4);
        break;
      case HK_BOOL:
        fputs(((const uint8_t *)data)[i] ? "true" : "false", stdout);
        break;
      default: break;
    }
  }
  putchar(']');
}

/* Values as nested lists, one level per axis (as ndarray.tolist()); a 0-d
 * or 1-d array as one flat list. */
static void print_nested(const void *data, hk_dtype_t t, int ndim,
                         const size_t *shape) {
  if (ndim <= 1) {
    print_values(data, t, ndim ? shape[0] : 1);
    return;
  }
  size_t inner = 1;
  for (int d = 1; d < ndim; d++) inner *= shape[d];
  putchar('[');
  for (size_t j = 0; j < shape[0]; j++) {
    if (j) fputs(", ", stdout);
    print_nested((const unsigned char *)data + j * inner * hk_dtype_size(t), t,
                 ndim - 1, shape + 1);
  }
  putchar(']');
}

/* ---- The command ------------------------------------------------------------ */

typedef struct run_opts {
  const char *kernel;
  const char **plugins; /* --plugins DIR */
  int nplugins;
  int allow_unsafe, no_cache;
  const char *backend, *tier;
  const char *n_text, *threads_text;
  const char **assigns; /* PARAM=VALUE */
  int nassigns;
  const char **outs; /* PARAM=FILE */
  int nouts;
  int axes[HK_MAX_DIMS];
  int naxes, keepdims;
  const char *as;
  int quiet;
} run_opts;

enum {
  OPT_OUT,
  OPT_BACKEND,
  OPT_TIER,
  OPT_N,
  OPT_THREADS,
  OPT_PLUGINS,
  OPT_UNSAFE,
  OPT_NO_CACHE,
  OPT_AXIS,
  OPT_KEEPDIMS,
  OPT_AS,
  OPT_QUIET
};
static const hk_cli_opt options[] = {
    [OPT_OUT] = {"out", 0, "PARAM=FILE.npy", HK_CLI_REPEAT},
    [OPT_BACKEND] = {"backend", 0, "a value", HK_CLI_ONCE},
    [OPT_TIER] = {"tier", 0, "a value", HK_CLI_ONCE},
    [OPT_N] = {"n", 0, "a value", HK_CLI_ONCE},
    [OPT_THREADS] = {"threads", 0, "a value", HK_CLI_ONCE},
    [OPT_PLUGINS] = {"plugins", 0, "a folder", HK_CLI_REPEAT},
    [OPT_UNSAFE] = {"allow-unsafe-plugins", 0, NULL, 0},
    [OPT_NO_CACHE] = {"no-cache", 0, NULL, 0},
    [OPT_AXIS] = {"axis", 0, "a list of axes", HK_CLI_REPEAT},
    [OPT_KEEPDIMS] = {"keepdims", 0, NULL, 0},
    [OPT_AS] = {"as", 0, "a type", HK_CLI_ONCE},
    [OPT_QUIET] = {"quiet", 'q', NULL, 0},
};

/* --axis A[,A...]: appends to o->axes. */
static int parse_axes(run_opts *o, const char *text) {
  const char *s = text;
  for (;;) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || errno || v < -HK_MAX_DIMS || v >= HK_MAX_DIMS ||
        (*end && *end != ','))
      return hk_cli_usage("run", "--axis: expected axes like 1 or 0,-1 "
                                 "(from %d to %d), got '%s'",
                          -HK_MAX_DIMS, HK_MAX_DIMS - 1, text);
    if (o->naxes == HK_MAX_DIMS)
      return hk_cli_usage("run", "--axis: more than %d axes", HK_MAX_DIMS);
    o->axes[o->naxes++] = (int)v;
    if (!*end) return 0;
    s = end + 1;
  }
}

/* Options may come anywhere, before, between or after the operands
 * (getopt_long's permutation): a parameter is one argument, PARAM=VALUE,
 * so nothing after the kernel needs the options to stop there. */
static int parse_args(int argc, char **argv, run_opts *o, int *help_shown) {
  hk_cli_parser p;
  hk_cli_parser_init(&p, "run", help, options,
                     sizeof options / sizeof *options, argc, argv);
  for (int c; (c = hk_cli_next(&p)) != HK_CLI_END;) {
    switch (c) {
      case HK_CLI_EXIT:
        *help_shown = p.status == HK_EXIT_OK;
        return p.status;
      case OPT_OUT: o->outs[o->nouts++] = p.value; break;
      case OPT_BACKEND: o->backend = p.value; break;
      case OPT_TIER: o->tier = p.value; break;
      case OPT_N: o->n_text = p.value; break;
      case OPT_THREADS: o->threads_text = p.value; break;
      case OPT_PLUGINS: o->plugins[o->nplugins++] = p.value; break;
      case OPT_UNSAFE: o->allow_unsafe = 1; break;
      case OPT_NO_CACHE: o->no_cache = 1; break;
      case OPT_AXIS: {
        int rc = parse_axes(o, p.value);
        if (rc) return rc;
        break;
      }
      case OPT_KEEPDIMS: o->keepdims = 1; break;
      case OPT_QUIET: o->quiet = 1; break;
      case OPT_AS:
        if (strcmp(p.value, "bf16"))
          return hk_cli_usage("run", "--as: only bf16 is known (for .npy "
                                     "files of <u2 holding bf16 bits), got "
                                     "'%s'",
                              p.value);
        o->as = p.value;
        run_set_as_bf16(1);
        break;
      default: /* an operand: the kernel, then PARAM=VALUE */
        if (!o->kernel)
          o->kernel = p.value;
        else if (strchr(p.value, '='))
          o->assigns[o->nassigns++] = p.value;
        else
          return hk_cli_usage("run",
                              "unexpected argument '%s' (parameters are "
                              "given as PARAM=VALUE)",
                              p.value);
    }
  }
  return 0;
}

typedef struct closest {
  const char *name;
  const char *best;
  size_t d;
  char buf[128];
} closest;

static int closest_fn(hk_kernel_t *k, void *user) {
  closest *c = user;
  const char *full = hk_kernel_info(k)->name;
  size_t d = hku_edit_distance(c->name, full);
  /* the instance's kernel name too ("softmx" -> softmax, which hk run
   * takes and picks the instance of by the files' dtypes) */
  char base[128];
  const char *us = strrchr(full, '_');
  size_t bl = us ? (size_t)(us - full) : 0;
  if (bl && bl < sizeof base && hk_dtype_from_name(us + 1) != HK_DTYPE_INVALID) {
    memcpy(base, full, bl);
    base[bl] = '\0';
    size_t db = hku_edit_distance(c->name, base);
    if (db < d) d = db, full = NULL;
  }
  /* close enough to be a typo: at most a third of the name's letters
   * (so that 'q' or 'sx' suggest nothing rather than 'all') */
  size_t len = strlen(c->name);
  if (d < c->d && d * 3 <= len && d < len) {
    c->d = d;
    if (full) {
      snprintf(c->buf, sizeof c->buf, "%s", full);
    } else {
      snprintf(c->buf, sizeof c->buf, "%.*s", (int)bl, hk_kernel_info(k)->name);
    }
    c->best = c->buf;
  }
  return 0;
}

/* 1 when name, whole, is a kernel file or prebuilt plugin that exists
 * ("a:b.json" is that file, not kernel b.json of file a). */
static int whole_file(const char *name) {
  struct stat st;
  return (hku_ends_with(name, ".json") || hku_ends_with(name, ".so")) &&
         stat(name, &st) == 0 && !S_ISDIR(st.st_mode);
}

static int is_kernel_file(const char *name) {
  if (whole_file(name)) return 1;
  const char *colon = strrchr(name, ':');
  size_t len = colon ? (size_t)(colon - name) : strlen(name);
  return strchr(name, '/') || (len > 5 && !strncmp(name + len - 5, ".json", 5)) ||
         (len > 3 && !strncmp(name + len - 3, ".so", 3));
}

/* The file of KERNEL when it names one (FILE.json of FILE.json:NAME),
 * malloc'ed; NULL on no memory. */
static char *kernel_path(const char *name) {
  char *path = strdup(name);
  if (!path) return NULL;
  char *colon = whole_file(path) ? NULL : strrchr(path, ':');
  if (colon && !strchr(colon, '/')) *colon = '\0';
  return path;
}

static int list_file_kernels(hk_kernel_t *k, void *user) {
  struct {
    const char *path;
    hku_buf *names;
    int n;
    const char *only;
  } *c = user;
  const hk_kernel_info_t *info = hk_kernel_info(k);
  if (strcmp(info->origin, "stdlib") && !strcmp(info->source, c->path)) {
    hku_buf_printf(c->names, "%s%s", c->n ? ", " : "", info->name);
    c->only = info->name;
    c->n++;
  }
  return 0;
}

/* ---- Dispatch by dtype ------------------------------------------------------ */

typedef struct pick_ctx {
  const char *name;
  const char *source; /* only kernels of this file, when not NULL */
  const hk_kernel_info_t *cand[64];
  hk_kernel_t *kh[64];
  int n;
} pick_ctx;

static int pick_fn(hk_kernel_t *k, void *user) {
  pick_ctx *p = user;
  const hk_kernel_info_t *in = hk_kernel_info(k);
  if (p->n < 64 && hkc_is_instance_of(in->name, p->name) &&
      (!p->source || !strcmp(in->source, p->source))) {
    p->cand[p->n] = in;
    p->kh[p->n++] = k;
  }
  return 0;
}

/* The dtypes of the .npy files PARAM=FILE gives to k's first np buffer
 * parameters: given[i] (as --as reads them; HK_DTYPE_INVALID for a dtype
 * hk has none for, said in words in what[i] when what is not NULL) and
 * file[i]; file[i] NULL where no file is given (a scalar, a number for an
 * in buffer) or it cannot be read. 1 when one could not be read (its own
 * error comes with the load), else 0. */
static int file_dtypes(const run_opts *o, const hk_kernel_info_t *k, int np,
                       hk_dtype_t *given, const char **file,
                       char (*what)[112]) {
  int unread = 0;
  for (int i = 0; i < np; i++) {
    given[i] = HK_DTYPE_INVALID;
    file[i] = NULL;
    if (k->params[i].role == HK_ROLE_SCALAR) continue;
    size_t l = strlen(k->params[i].name);
    for (int a = 0; a < o->nassigns; a++)
      if (!strncmp(o->assigns[a], k->params[i].name, l) &&
          o->assigns[a][l] == '=') {
        hk_npy_t f;
        hku_diags d = HKU_DIAGS_INIT;
        file[i] = o->assigns[a] + l + 1;
        /* a number for an in buffer (run_args.c): no file, so it decides
         * no type */
        if (hk_run_is_value(file[i])) {
          file[i] = NULL;
          continue;
        }
        if (run_npy_peek(file[i], &f, &d) == HK_OK) {
          given[i] = f.dtype == HK_U16 && o->as ? HK_BF16 : f.dtype;
          if (!given[i] && what) { /* named in words if no instance fits */
            char words[40];
            snprintf(what[i], sizeof what[i], "%s ('%s')",
                     hk_npy_describe(&f, words, sizeof words), f.descr);
          }
        } else {
          file[i] = NULL, unread = 1;
        }
        hk_npy_free(&f);
        hku_diags_free(&d);
      }
  }
  return unread;
}

/* KERNEL names a kernel with placeholders (saxpy for saxpy_f32, ...): picks
 * the instance whose buffer types are the dtypes of the .npy files given.
 * 1 and *out, 0 when name has no instances, -1 after printing why none
 * fits (quiet: 0, printing nothing). */
static int pick_instance(hk_context_t *ctx, const run_opts *o,
                         const char *name, const char *source,
                         hk_kernel_t **out, int quiet) {
  pick_ctx pc = {.name = name, .source = source};
  hk_kernel_foreach(ctx, pick_fn, &pc);
  if (!pc.n) return 0;
  const hk_kernel_info_t *k0 = pc.cand[0];
  /* a PARAM=... that names no parameter: that, before the instances */
  for (int a = 0; a < o->nassigns; a++) {
    const char *eq = strchr(o->assigns[a], '=');
    size_t l = eq ? (size_t)(eq - o->assigns[a]) : strlen(o->assigns[a]);
    int found = 0;
    for (int i = 0; i < k0->nparams && !found; i++)
      found = strlen(k0->params[i].name) == l &&
              !strncmp(o->assigns[a], k0->params[i].name, l);
    if (!found && quiet) return 0;
    if (!found) {
      hku_buf ps = HKU_BUF_INIT;
      for (int i = 0; i < k0->nparams; i++)
        hku_buf_printf(&ps, "%s%s", i ? ", " : "", k0->params[i].name);
      hk_cli_error("run", "%s has no parameter '%.*s' (its parameters: %s)",
                   name, (int)l, o->assigns[a], hku_buf_str(&ps));
      hku_buf_free(&ps);
      return -1;
    }
  }
  hk_dtype_t given[256];
  const char *file[256];
  char what[256][112]; /* a dtype hk has no type for, in words */
  int np = k0->nparams < 256 ? k0->nparams : 256;
  int unread = file_dtypes(o, k0, np, given, file, what);
  int hit = -1, nhit = 0;
  char fits[64];
  for (int c = 0; c < pc.n; c++) {
    int ok = pc.cand[c]->nparams == k0->nparams;
    for (int i = 0; ok && i < np; i++)
      ok = !file[i] || pc.cand[c]->params[i].dtype == given[i];
    fits[c] = (char)ok;
    if (ok && nhit++ == 0) hit = c;
  }
  hku_buf names = HKU_BUF_INIT;
  for (int c = 0; c < pc.n; c++)
    hku_buf_printf(&names, "%s%s", c ? ", " : "", pc.cand[c]->name);
  int rc = -1;
  if (nhit == 1 || (nhit > 1 && unread)) {
    *out = pc.kh[hit];
    rc = 1;
  } else if (quiet) {
    rc = 0;
  } else if (nhit > 1) {
    /* the fitting instances, and the parameters no file decides */
    hku_buf fit = HKU_BUF_INIT, open = HKU_BUF_INIT;
    for (int c = 0, m = 0; c < pc.n; c++)
      if (fits[c]) hku_buf_printf(&fit, "%s%s", m++ ? ", " : "", pc.cand[c]->name);
    for (int i = 0, m = 0; i < np; i++) {
      int differs = 0;
      for (int c = 0; c < pc.n && !file[i]; c++)
        differs |= fits[c] && pc.cand[c]->params[i].dtype !=
                                  pc.cand[hit]->params[i].dtype;
      if (differs)
        hku_buf_printf(&open, "%s%s", m++ ? ", " : "", k0->params[i].name);
    }
    if (open.len)
      hk_cli_error("run", "%s: the files' dtypes fit %d instances (%s): no "
                          "file gives the type of %s; name the instance",
                   name, nhit, hku_buf_str(&fit), hku_buf_str(&open));
    else /* a placeholder only the code uses */
      hk_cli_error("run", "%s: the files' dtypes fit %d instances (%s): "
                          "name the instance",
                   name, nhit, hku_buf_str(&fit));
    hku_buf_free(&fit);
    hku_buf_free(&open);
  } else {
    /* the first parameter whose file's dtype no instance takes */
    int bad = -1;
    for (int i = 0; i < np && bad < 0; i++) {
      if (!file[i]) continue;
      int any = 0;
      for (int c = 0; c < pc.n; c++)
        any |= pc.cand[c]->params[i].dtype == given[i];
      if (!any) bad = i;
    }
    if (bad >= 0) {
      /* a u16 file where an instance takes bf16: NumPy has no bf16, so
       * such data is often saved as <u2 */
      int bf16 = 0;
      for (int c = 0; c < pc.n && given[bad] == HK_U16; c++)
        bf16 |= pc.cand[c]->params[bad].dtype == HK_BF16;
      hk_cli_error("run", "%s=%s holds %s%s; no instance of %s takes it for "
                          "%s (instances: %s; arrays are never converted)%s",
                   k0->params[bad].name, file[bad],
                   given[bad] ? hk_dtype_name(given[bad]) : what[bad],
                   given[bad] ? "" : ", which is no hk type",
                   name, k0->params[bad].name, hku_buf_str(&names),
                   bf16 ? "; if it holds bf16 bits, add --as bf16" : "");
    } else {
      /* each type has an instance, but not together: name them all */
      hku_buf given_s = HKU_BUF_INIT;
      for (int i = 0, j = 0; i < np; i++)
        if (file[i])
          hku_buf_printf(&given_s, "%s%s=%s (%s)", j++ ? ", " : "",
                         k0->params[i].name, file[i],
                         hk_dtype_name(given[i]));
      hk_cli_error("run", "%s: no instance takes %s together (instances: "
                          "%s; arrays are never converted)",
                   name, hku_buf_str(&given_s), hku_buf_str(&names));
      hku_buf_free(&given_s);
    }
  }
  hku_buf_free(&names);
  return rc;
}

/* 1 unless a .npy file given to one of k's buffers holds another dtype
 * than the buffer's type (a file that cannot be read fits: its own error
 * comes with the load). */
static int files_fit(const run_opts *o, const hk_kernel_info_t *k) {
  hk_dtype_t given[256];
  const char *file[256];
  int np = k->nparams < 256 ? k->nparams : 256;
  (void)file_dtypes(o, k, np, given, file, NULL);
  for (int i = 0; i < np; i++)
    if (file[i] && given[i] != k->params[i].dtype) return 0;
  return 1;
}

/* The kernel name of an instance name ("saxpy" for "saxpy_f32",
 * "cast" for "cast_f32_f16"): the shortest prefix followed by type
 * suffixes only. 0 when name has no type suffix. */
static int instances_base(const char *name, char *out, size_t n) {
  for (const char *u = strchr(name, '_'); u; u = strchr(u + 1, '_')) {
    if (u == name || (size_t)(u - name) >= n) continue;
    memcpy(out, name, (size_t)(u - name));
    out[u - name] = '\0';
    if (hkc_is_instance_of(name, out)) return 1;
  }
  return 0;
}

/* Finds the kernel KERNEL names in ctx: a name, or a kernel file to load
 * (FILE.json or FILE.json:NAME). NULL after printing why. */
static hk_kernel_t *find_kernel(hk_context_t *ctx, const run_opts *o) {
  const char *name = o->kernel;
  hk_kernel_t *k;
  if (is_kernel_file(name)) {
    char *path = kernel_path(name);
    if (!path) return NULL;
    /* FILE.json:NAME: the kernel NAME of it */
    const char *want = strlen(path) < strlen(name) ? name + strlen(path) + 1
                                                   : NULL;
    if (hk_load_file(ctx, path) != HK_OK) {
      fputs(hk_last_error(), stderr);
      free(path);
      return NULL;
    }
    hku_buf names = HKU_BUF_INIT;
    struct {
      const char *path;
      hku_buf *names;
      int n;
      const char *only;
    } c = {path, &names, 0, NULL};
    hk_kernel_foreach(ctx, list_file_kernels, &c);
    if (!want && c.n == 1) want = c.only;
    /* the instances of one kernel (saxpy_f32, saxpy_f64): its name */
    char base[128];
    if (!want && c.n > 1 && instances_base(c.only, base, sizeof base)) {
      pick_ctx pc = {.name = base, .source = path};
      hk_kernel_foreach(ctx, pick_fn, &pc);
      if (pc.n == c.n) want = base;
    }
    k = NULL;
    int picked = 0;
    if (!want)
      hk_cli_error("run", "%s defines %d kernels (%s): name one as %s:NAME",
                   path, c.n, hku_buf_str(&names), path);
    else if ((hk_kernel_find(ctx, want, &k) != HK_OK ||
              strcmp(hk_kernel_info(k)->source, path)) &&
             (k = NULL, picked = pick_instance(ctx, o, want, path, &k, 0)) == 0) {
      hk_cli_error("run", "%s defines no kernel named '%s' (it defines: %s)",
                   path, want, hku_buf_str(&names));
      k = NULL;
    }
    if (picked < 0) k = NULL;
    hku_buf_free(&names);
    free(path);
    return k;
  }
  if (hk_kernel_find(ctx, name, &k) == HK_OK) {
    /* a kernel of this very name that the files' dtypes do not fit, beside
     * instances of the name (a plugin's exp taking f32, the stdlib's
     * exp_f64): the instance that fits, as hk_kernel_select picks */
    hk_kernel_t *inst = NULL;
    if (!files_fit(o, hk_kernel_info(k)) &&
        pick_instance(ctx, o, name, NULL, &inst, 1) == 1)
      return inst;
    return k;
  }
  int picked = pick_instance(ctx, o, name, NULL, &k, 0);
  if (picked == 1) return k;
  if (picked < 0) return NULL;
  closest c = {name, NULL, 4, ""};
  hk_kernel_foreach(ctx, closest_fn, &c);
  if (*hk_context_problems(ctx))
    /* the kernel may be one the failed files define: no guess */
    hk_cli_error("run", "no kernel named '%s' is loaded (the plugin "
                        "folders or files that failed above may define it)",
                 name);
  else if (c.best)
    hk_cli_error("run", "no kernel named '%s' (did you mean '%s'? hk list "
                        "shows them all)",
                 name, c.best);
  else
    hk_cli_error("run", "no kernel named '%s' (hk list shows them all)", name);
  return NULL;
}

/* --backend cuda: copies the buffers in args (host memory, counts in ps)
 * to the device, runs there and copies the out and inout buffers back
 * into args. */
static int run_on_gpu(hk_kernel_t *kh, const run_param *ps, void **args,
                      size_t n) {
  const hk_kernel_info_t *k = hk_kernel_info(kh);
  void **dev = calloc((size_t)k->nparams + 1, sizeof *dev);
  int rc = HK_EXIT_OK;
  if (!dev) return hk_cli_internal("run", "out of memory");
  for (int i = 0; i < k->nparams && !rc; i++) {
    const hk_param_info_t *p = &k->params[i];
    if (p->role == HK_ROLE_SCALAR) {
      dev[i] = args[i];
      continue;
    }
    size_t bytes = ps[i].count * hk_dtype_size(p->dtype);
    if (hk_device_alloc(&dev[i], bytes) != HK_OK)
      rc = hk_cli_internal("run", "--backend cuda: %s", hk_last_error());
    else if (p->role != HK_ROLE_OUT &&
             hk_memcpy_to_device(dev[i], args[i], bytes, NULL) != HK_OK)
      rc = hk_cli_internal("run", "--backend cuda: %s", hk_last_error());
  }
  if (!rc) {
    int c = hk_call_on(kh, HK_BACKEND_CUDA, n, (void *const *)dev);
    if (c == HK_EINVAL || c == HK_ECOMPILE || c == HK_EUNSUPPORTED ||
        c == HK_EDEVICE)
      rc = hk_cli_error("run", "--backend cuda: %s", hk_last_error());
    else if (c != HK_OK)
      rc = hk_cli_internal("run", "--backend cuda: %s", hk_last_error());
  }
  for (int i = 0; i < k->nparams && !rc; i++) {
    const hk_param_info_t *p = &k->params[i];
    if (p->role != HK_ROLE_OUT && p->role != HK_ROLE_INOUT) continue;
    size_t bytes = ps[i].count * hk_dtype_size(p->dtype);
    if (hk_memcpy_to_host(args[i], dev[i], bytes, NULL) != HK_OK)
      rc = hk_cli_internal("run", "--backend cuda: %s", hk_last_error());
  }
  for (int i = 0; i < k->nparams; i++)
    if (k->params[i].role != HK_ROLE_SCALAR) hk_device_free(dev[i]);
  free(dev);
  return rc;
}

/* Checks --backend, --tier and --threads against kernel kh (and sets the
 * thread count); on --backend cuda, readies the GPU and kh's GPU code. */
static int check_modes(hk_kernel_t *kh, const run_opts *o, const char *backend,
                       const char *tier) {
  const hk_kernel_info_t *k = hk_kernel_info(kh);
  int is_stdlib = !strcmp(k->origin, "stdlib");
  if (!strcmp(backend, "cuda") &&
      (hk_cuda_init() != HK_OK ||
       hk_kernel_prepare(kh, HK_BACKEND_CUDA) != HK_OK)) {
    /* no device, no GPU code, or a compile error in the kernel file */
    return hk_cli_error("run", "--backend cuda: %s", hk_last_error());
  }
  if (is_stdlib && (!strcmp(tier, "jit") || !strcmp(tier, "opt")))
    return hk_cli_error("run",
                        "--tier %s: %s is a stdlib kernel compiled into "
                        "libhk; it runs on tier inline (jit and opt are "
                        "tiers of plugin kernels)",
                        tier, k->name);
  if (!is_stdlib && !strcmp(tier, "inline"))
    return hk_cli_error("run", "--tier inline: %s is a plugin kernel; only "
                               "stdlib kernels are compiled into libhk",
                        k->name);
  if (!strcmp(k->origin, "so") && (!strcmp(tier, "jit") || !strcmp(tier, "opt")))
    return hk_cli_error("run", "--tier %s: %s is a prebuilt plugin (tier so)",
                        tier, k->name);
  if (o->threads_text) {
    char *end;
    long t = strtol(o->threads_text, &end, 10);
    if (*end || end == o->threads_text || t < 0 || t > 256 ||
        hk_set_threads((int)t) != HK_OK)
      return hk_cli_usage("run", "--threads: expected a number from 0 (every "
                                 "CPU, as without it) to 256, got '%s'",
                          o->threads_text);
  }
  return HK_EXIT_OK;
}

/* ---- Where the outputs go -------------------------------------------------- */

/* Where an output to path lands, as one string for every spelling of a
 * file not made yet ("a.npy", "./a.npy", "d/../a.npy"): links followed,
 * the folder as its real path. malloc'ed; NULL on no memory. */
static char *output_place(const char *path) {
  char *real = hku_follow_links(path);
  if (!real) return strdup(path); /* a loop of links: its write fails */
  char *slash = strrchr(real, '/');
  const char *base = slash ? slash + 1 : real;
  char *dir = slash ? strndup(real, slash == real ? 1 : (size_t)(slash - real))
                    : strdup(".");
  char *rdir = dir ? realpath(dir, NULL) : NULL;
  char *place = NULL;
  if (!rdir) { /* no such folder: its write fails; the path as it is */
    place = real;
    real = NULL;
  } else if ((place = malloc(strlen(rdir) + strlen(base) + 2))) {
    sprintf(place, "%s/%s", rdir, base);
  }
  free(rdir);
  free(dir);
  free(real);
  return place;
}

/* 1 when outputs to a and b would land in one file: the same regular
 * file when either exists (device and inode), else the same place. */
static int same_output(const char *a, const char *b) {
  struct stat sa, sb;
  int ea = stat(a, &sa) == 0, eb = stat(b, &sb) == 0;
  if (ea || eb)
    return ea && eb && S_ISREG(sa.st_mode) && S_ISREG(sb.st_mode) &&
           sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  char *pa = output_place(a), *pb = output_place(b);
  int same = pa && pb && !strcmp(pa, pb);
  free(pa);
  free(pb);
  return same;
}

/* The plugin file in folder dir that path is (device and inode), or NULL;
 * malloc'ed. */
static char *plugin_file_at(const char *dir, const char *path) {
  static const char *const suffixes[] = {".json", ".so", NULL};
  char **files;
  int n = hku_list_dir(dir, suffixes, &files);
  char *hit = NULL;
  for (int f = 0; f < n && !hit; f++)
    if (hk_cli_same_file(files[f], path)) hit = strdup(files[f]);
  if (n > 0) hku_free_list(files, n);
  return hit;
}

/* Refuses --out PARAM=out when it is a plugin file of folder dir (named
 * in the message after whose: "--plugins"); the exit status. */
static int plugin_clash(const char *param, const char *out, const char *dir,
                        const char *whose) {
  char *hit = plugin_file_at(dir, out);
  int rc = hit ? hk_cli_error("run", "--out %s=%s is %s, a plugin file of "
                                     "%s %s; it would be overwritten",
                              param, out, hit, whose, dir)
               : HK_EXIT_OK;
  free(hit);
  return rc;
}

/* Checks the --out files before anything runs: none may be the kernel
 * file or a plugin file (--plugins DIR, else HK_PLUGIN_PATH's folders),
 * which the .npy would replace, and no two outputs may go to one file,
 * where the second rename would drop the first output without a word. */
static int check_outputs(const run_call *c, const run_opts *o) {
  const hk_kernel_info_t *k = c->k;
  char *kfile = is_kernel_file(o->kernel) ? kernel_path(o->kernel) : NULL;
  const char *env = o->nplugins ? NULL : getenv("HK_PLUGIN_PATH");
  int rc = HK_EXIT_OK;
  for (int i = 0; i < k->nparams && !rc; i++) {
    const char *out = c->ps[i].out_path, *name = k->params[i].name;
    if (!out) continue;
    if (kfile && hk_cli_same_file(kfile, out)) {
      rc = hk_cli_error("run", "--out %s=%s is the kernel file itself; it "
                               "would be overwritten",
                        name, out);
      break;
    }
    for (int d = 0; d < o->nplugins && !rc; d++)
      rc = plugin_clash(name, out, o->plugins[d], "--plugins");
    if (env && *env) {
      char *list = strdup(env), *s = list;
      for (char *dir; !rc && s && (dir = strsep(&s, ":"));)
        if (*dir) rc = plugin_clash(name, out, dir, "HK_PLUGIN_PATH's folder");
      free(list);
    }
    for (int j = 0; j < i && !rc; j++)
      if (c->ps[j].out_path && same_output(c->ps[j].out_path, out))
        rc = hk_cli_error("run", "--out %s=%s and --out %s=%s are one file: "
                                 "one output would replace the other (give "
                                 "each its own file)",
                          k->params[j].name, c->ps[j].out_path, name, out);
  }
  free(kfile);
  return rc;
}

/* Writes the out and inout buffers of the call made: to their --out files
 * (shaped as the first in/inout buffer when they have its count, but a
 * reduction's result), the others as one JSON object on stdout. */
static int write_outputs(const run_call *c, int quiet) {
  const hk_kernel_info_t *k = c->k;
  int printed = 0;
  /* each output's shape, dtype and where it went, said on stderr once all
   * are written (stdout is the JSON object's) */
  hku_buf said = HKU_BUF_INIT;
  /* every --out file is written beside its target first, then all are
   * renamed into place: one that cannot be written leaves every target as
   * it was */
  hku_pending *pend = calloc((size_t)k->nparams + 1, sizeof *pend);
  int npend = 0;
  if (!pend) return hk_cli_internal("run", "out of memory");
  for (int i = 0; i < k->nparams; i++) {
    const run_param *p = &c->ps[i];
    if (p->info->role != HK_ROLE_OUT && p->info->role != HK_ROLE_INOUT)
      continue;
    const void *data = c->args[i];
    size_t shape[HK_NPY_MAXDIM];
    int ndim = 1;
    shape[0] = p->count;
    if (p->shaped) {
      /* the array path: its own shape (a whole reduction's is (), as
       * NumPy's; an inout result keeps its file's); a raw or grid
       * kernel's, from its len */
      ndim = p->ndim;
      memcpy(shape, p->shape, sizeof(size_t) * (size_t)ndim);
    } else if (!c->arr && c->first >= 0 && p->count == c->n &&
               k->kind != HK_KIND_REDUCTION) {
      ndim = c->ps[c->first].npy.ndim;
      memcpy(shape, c->ps[c->first].npy.shape, sizeof shape);
    } else if (k->kind == HK_KIND_REDUCTION &&
               p->info->role == HK_ROLE_OUT && p->count == 1) {
      ndim = 0; /* a whole reduction's result on the flat path (--n) too */
    }
    hku_buf_printf(&said, "hk run: %s: shape (", p->info->name);
    for (int d = 0; d < ndim; d++)
      hku_buf_printf(&said, "%s%zu", d ? ", " : "", shape[d]);
    hku_buf_printf(&said, "%s), %s, %s%s\n", ndim == 1 ? "," : "",
                   hk_dtype_name(p->info->dtype),
                   p->out_path ? "written to " : "printed on stdout",
                   p->out_path ? p->out_path : "");
    if (p->out_path) {
      hku_diags d = HKU_DIAGS_INIT;
      hku_buf err = HKU_BUF_INIT;
      int rc = HK_EXIT_OK;
      if (hk_npy_write_prepare(p->out_path, p->info->dtype, ndim, shape, data,
                               &pend[npend], &d))
        rc = hk_cli_error("run", "--out %s: %s%s", p->info->name,
                          hk_npy_error(&d, &err),
                          npend ? " (no --out file was changed)" : "");
      else
        npend++;
      hku_buf_free(&err);
      hku_diags_free(&d);
      if (rc) {
        while (npend) hku_output_abort(&pend[--npend]);
        free(pend);
        hku_buf_free(&said);
        return rc;
      }
    } else {
      printf(printed ? ", \"%s\": " : "{\"%s\": ", p->info->name);
      print_nested(data, p->info->dtype, ndim, shape);
      printed = 1;
    }
  }
  int rc = HK_EXIT_OK;
  for (int j = 0; j < npend; j++) {
    hku_diags d = HKU_DIAGS_INIT;
    hku_buf err = HKU_BUF_INIT;
    if (rc == HK_EXIT_OK && hku_output_commit(&pend[j], &d))
      rc = hk_cli_error("run", "--out: %s", hk_npy_error(&d, &err));
    else
      hku_output_abort(&pend[j]);
    hku_buf_free(&err);
    hku_diags_free(&d);
  }
  free(pend);
  if (!rc && printed) puts("}"); /* a failed write: said by main (hk.c) */
  if (!rc && !quiet && said.len) {
    fflush(stdout);
    fputs(said.data, stderr);
  }
  hku_buf_free(&said);
  return rc;
}

/* The array path (N-D, broadcasting, axes) serves elementwise, reduction
 * and rows kernels that take an in/inout buffer, on the CPU and the GPU;
 * raw and grid kernels and kernels that only write (their n comes from
 * --n) take the flat path (every buffer n elements, C order). */
static int choose_path(const run_call *c, const run_opts *o,
                       const char *backend, int *arrays) {
  const hk_kernel_info_t *k = c->k;
  int has_in = 0;
  for (int i = 0; i < k->nparams; i++)
    has_in |= k->params[i].role == HK_ROLE_IN ||
              k->params[i].role == HK_ROLE_INOUT;
  (void)backend;
  *arrays = k->kind != HK_KIND_RAW && k->kind != HK_KIND_GRID && has_in &&
            !o->n_text;
  const int rows = k->kind == HK_KIND_ROWS;
  if ((o->naxes || o->keepdims) && k->kind != HK_KIND_REDUCTION &&
      (!rows || o->keepdims))
    return hk_cli_error("run", "--%s: %s is %s kernel; only reductions take "
                               "%s",
                        o->keepdims ? "keepdims" : "axis", k->name,
                        k->kind == HK_KIND_ELEMENTWISE ? "an elementwise"
                        : rows                         ? "a rows"
                        : k->kind == HK_KIND_GRID      ? "a grid"
                                                       : "a raw",
                        rows ? "--keepdims (a rows kernel's one-a-row "
                               "outputs have the rows' shape)"
                             : "axes (and rows kernels one, their rows')");
  if (rows && o->naxes > 1)
    return hk_cli_error("run", "--axis: %s is a rows kernel: it takes one "
                               "axis, the one its rows run along; got %d",
                        k->name, o->naxes);
  if ((o->naxes || o->keepdims) && !*arrays)
    return hk_cli_error("run", "--%s: not with --n (a reduction over axes "
                               "takes its shape from its input files)",
                        o->naxes ? "axis" : "keepdims");
  return HK_EXIT_OK;
}

/* Runs the kernel o names in ctx with o's arguments, and writes its
 * outputs. */
static int run_kernel(hk_context_t *ctx, const run_opts *o) {
  const char *backend = o->backend ? o->backend : "auto";
  const char *tier = o->tier ? o->tier : "auto";
  if (strcmp(backend, "cpu") && strcmp(backend, "cuda") &&
      strcmp(backend, "auto"))
    return hk_cli_usage("run", "--backend: unknown backend '%s' (cpu, cuda "
                               "or auto)",
                        backend);
  if (strcmp(tier, "inline") && strcmp(tier, "jit") && strcmp(tier, "opt") &&
      strcmp(tier, "auto"))
    return hk_cli_usage("run", "--tier: unknown tier '%s' (inline, jit, opt "
                               "or auto)",
                        tier);
  hk_kernel_t *kh = find_kernel(ctx, o);
  /* with tier opt asked for and no system compiler, nothing could load:
   * the machine's failure, as hk build's (exit 2), not the user's */
  if (!kh)
    return !strcmp(tier, "opt") &&
                   strstr(hk_context_problems(ctx),
                          "tier opt failed: no system compiler")
               ? HK_EXIT_INTERNAL
               : HK_EXIT_USER;
  int rc = check_modes(kh, o, backend, tier);
  if (rc) return rc;
  run_call c;
  rc = run_call_init(&c, kh);
  if (!rc) rc = run_call_bind(&c, o->assigns, o->nassigns, o->outs, o->nouts);
  if (!rc) rc = check_outputs(&c, o);
  int arrays = 0;
  if (!rc) rc = choose_path(&c, o, backend, &arrays);
  hk_call_opts_t co = {.axes = o->naxes ? o->axes : NULL,
                       .naxes = o->naxes,
                       .keepdims = o->keepdims};
  /* a crash in the kernel's code names it (hk.c): set around the calls
   * only, not the loading and checking, which are hk's own */
  const hk_kernel_info_t *ki = hk_kernel_info(kh);
  char running[1024];
  snprintf(running, sizeof running, "%s (%s, tier %s)", ki->name, ki->source,
           hk_tier_name(hk_kernel_tier(kh)));
  const int crash_status =
      strcmp(ki->origin, "stdlib") ? HK_EXIT_USER : HK_EXIT_INTERNAL;
  if (!rc && arrays) {
    rc = run_call_prepare_arrays(&c, &co);
    if (!rc) {
      hk_cli_running(running, crash_status);
      rc = strcmp(backend, "cuda") ? run_call_arrays(&c)
                                   : run_call_arrays_gpu(&c);
    }
  } else if (!rc) {
    rc = run_call_prepare(&c, o->n_text);
    hk_cli_running(running, crash_status);
    if (!rc && !strcmp(backend, "cuda"))
      rc = run_on_gpu(kh, c.ps, c.args, c.n);
    else if (!rc) {
      /* a grid's extents come from the user's scalars: a bad one is
       * HK_EINVAL, the user's error */
      int r = hk_call(kh, c.n, (void *const *)c.args);
      if (r != HK_OK) rc = run_lib_error(r);
    }
  }
  hk_cli_running(NULL, 0);
  /* a body that wrote past an out buffer: its results are not to be
   * trusted, so nothing is written */
  if (!rc) rc = run_call_check_guards(&c, crash_status);
  if (!rc) rc = write_outputs(&c, o->quiet);
  run_call_free(&c);
  return rc;
}
/* The context's log (tier opt failing, the disk cache): on stderr. */
static void log_stderr(void *user, const char *msg) {
  (void)user;
  fprintf(stderr, "hk run: note: %s\n", msg);
}

int hk_cmd_run(int argc, char **argv) {
  run_opts o = {0};
  o.assigns = calloc((size_t)argc, sizeof *o.assigns);
  o.outs = calloc((size_t)argc, sizeof *o.outs);
  o.plugins = calloc((size_t)argc + 1, sizeof *o.plugins);
  int rc = HK_EXIT_OK, help_shown = 0;
  if (!o.assigns || !o.outs || !o.plugins)
    rc = hk_cli_internal("run", "out of memory");
  if (!rc) rc = parse_args(argc, argv, &o, &help_shown);
  if (!rc && !help_shown && !o.kernel) rc = hk_cli_usage("run", "no kernel given");
  const char *tier = o.tier ? o.tier : "auto";
  hk_context_t *ctx = NULL;
  if (!rc && !help_shown) {
    hk_options_t opts = {0};
    static const char *const none[] = {NULL};
    /* a kernel file runs alone; a name looks in the plugin folders */
    if (is_kernel_file(o.kernel))
      opts.plugin_dirs = none;
    else if (o.nplugins)
      opts.plugin_dirs = o.plugins;
    /* tier auto without the cache is tier jit: the run ends with its
     * result, and the opt build started beside it could be kept for
     * nothing (a run waited for it, up to the compile's time limit) */
    opts.tier = !strcmp(tier, "jit") || (!strcmp(tier, "auto") && o.no_cache)
                    ? HK_TIER_JIT
                : !strcmp(tier, "opt") ? HK_TIER_OPT
                                       : HK_TIER_AUTO;
    opts.log = log_stderr;
    /* a name with no plugin folder can only be the stdlib's: nothing
     * compiles, so no cache folder is opened (or made) */
    const char *pp = getenv("HK_PLUGIN_PATH");
    int stdlib_only =
        !is_kernel_file(o.kernel) && !o.nplugins && !(pp && *pp);
    opts.flags = (o.allow_unsafe ? HK_ALLOW_UNSAFE_PERMISSIONS : 0) |
                 (o.no_cache || stdlib_only ? HK_NO_CACHE : 0);
    if (hk_context_create(&ctx, &opts) != HK_OK)
      rc = hk_cli_internal("run", "%s", hk_last_error());
    else if (*hk_context_problems(ctx))
      /* other files of the folders failed: say so, and go on */
      fputs(hk_context_problems(ctx), stderr);
  }
  if (!rc && !help_shown) rc = run_kernel(ctx, &o);
  run_npy_forget();
  /* tier auto: let a pending opt build finish, so that the disk cache has
   * it for the next run */
  if (ctx && !rc && !strcmp(tier, "auto") && !o.no_cache) hk_context_wait(ctx);
  hk_context_destroy(ctx);
  free(o.assigns);
  free(o.outs);
  free(o.plugins);
  return rc;
}
