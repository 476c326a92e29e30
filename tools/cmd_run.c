/* cmd_run.c — hk run: run one kernel on NumPy .npy files (SPEC §3).
 *
 * Everything the user gives is checked before the kernel runs: parameter
 * names, dtypes against the kernel's types, C order and little-endian data,
 * every buffer's element count against n (or its len expression), scalars
 * against their type's range. Outputs named with --out are written as .npy
 * (atomically); the others are printed as one JSON object on stdout.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "cli.h"
#include "fsutil.h"
#include "npy.h"

static const char *const help =
    "usage: hk run KERNEL [PARAM=VALUE ...] [--out PARAM=FILE.npy ...]\n"
    "              [--n N] [--backend cpu|cuda|auto] [--tier "
    "inline|jit|opt|auto]\n"
    "              [--threads N] [--plugins DIR]...\n\n"
    "Runs one kernel. KERNEL is a kernel name (stdlib, or from the plugin\n"
    "folders: --plugins DIR, else HK_PLUGIN_PATH), or a kernel file\n"
    "(FILE.json, or FILE.json:NAME when it defines several kernels).\n"
    "  PARAM=FILE.npy   a buffer parameter (in or inout): a NumPy .npy file,\n"
    "                   little-endian, C order, any shape, whose dtype is the\n"
    "                   parameter's type (f32 = float32, i64 = int64, ...)\n"
    "  PARAM=NUMBER     a scalar parameter\n"
    "  --out PARAM=FILE write out/inout PARAM to FILE.npy (shape of the first\n"
    "                   in/inout buffer; 1 element for a reduction's result);\n"
    "                   outputs not named are printed to stdout as one JSON\n"
    "                   object {\"param\": [values...]} (NaN and Infinity as\n"
    "                   in Python's json module)\n"
    "  --n N            the element count, for a kernel with no in/inout\n"
    "                   buffer (otherwise n is the first one's element count)\n"
    "  --backend B      cpu, cuda or auto (the default; .npy data is host\n"
    "                   memory, so auto runs on the CPU); cuda copies the\n"
    "                   buffers to the GPU, runs there and copies results\n"
    "                   back (no CUDA device: exit 1 with the reason)\n"
    "  --tier T         inline, jit, opt or auto (stdlib kernels are inline;\n"
    "                   plugin kernels: jit = libtcc, opt = the system\n"
    "                   compiler, waited for; auto = opt from the disk cache\n"
    "                   when there, else jit, and opt is built for next time)\n"
    "  --threads N      threads to share large calls (default: all CPUs)\n"
    "  --allow-unsafe-plugins  load plugin files and folders others can\n"
    "                   write to or own\n"
    "  --no-cache       neither read nor write the disk cache\n"
    "Every in/inout buffer and every scalar must be given. Exit status: 0\n"
    "success, 1 a user error (named on stderr), 2 an internal failure.\n";

typedef union scalar {
  float f32;
  double f64;
  int8_t i8;
  int16_t i16;
  int32_t i32;
  int64_t i64;
  uint8_t u8;
  uint16_t u16;
  uint32_t u32;
  uint64_t u64;
} scalar;

typedef struct run_param {
  const hk_param_info_t *info;
  const char *value;    /* PARAM=VALUE, or NULL */
  const char *out_path; /* --out PARAM=FILE, or NULL */
  hk_npy_t npy;         /* in/inout: the file */
  void *owned;          /* out: the buffer hk allocated */
  size_t count;         /* buffers: element count */
  scalar s;
} run_param;

/* A non-NULL address for empty buffers: kernels never read it, and pointer
 * arithmetic on NULL is undefined even by zero. */
static _Alignas(64) unsigned char empty_buffer[64];

/* ---- Scalars -------------------------------------------------------------- */

/* Parses text as a value of type t into *out. Returns 0, or -1 with the
 * reason in why. */
static int parse_scalar(const char *text, hk_dtype_t t, scalar *out,
                        const char **why) {
  char *end;
  errno = 0;
  if (!*text) {
    *why = "is empty";
    return -1;
  }
  if (t == HK_F32 || t == HK_F64) {
    double v = strtod(text, &end);
    if (*end || end == text) {
      *why = "is not a number";
      return -1;
    }
    if (errno == ERANGE && (v == HUGE_VAL || v == -HUGE_VAL)) {
      *why = "is too large for f64";
      return -1;
    }
    if (t == HK_F64) {
      out->f64 = v;
      return 0;
    }
    float f = strtof(text, &end);
    if (isinf(f) && !isinf(v)) {
      *why = "is too large for f32";
      return -1;
    }
    out->f32 = f;
    return 0;
  }
  /* integers: decimal only, so that 010 is ten and not eight */
  const char *p = text;
  if (*p == '+' || *p == '-') p++;
  if (*p < '0' || *p > '9') {
    *why = "is not an integer";
    return -1;
  }
  for (const char *q = p; *q; q++)
    if (*q < '0' || *q > '9') {
      *why = "is not an integer (decimal digits only)";
      return -1;
    }
  int is_unsigned = t == HK_U8 || t == HK_U16 || t == HK_U32 || t == HK_U64;
  if (is_unsigned) {
    if (text[0] == '-') {
      *why = "is negative, and the type is unsigned";
      return -1;
    }
    unsigned long long v = strtoull(text, &end, 10);
    unsigned long long max = t == HK_U8    ? UINT8_MAX
                             : t == HK_U16 ? UINT16_MAX
                             : t == HK_U32 ? UINT32_MAX
                                           : UINT64_MAX;
    if (errno == ERANGE || v > max) {
      *why = "is out of range for its type";
      return -1;
    }
    if (t == HK_U8) out->u8 = (uint8_t)v;
    if (t == HK_U16) out->u16 = (uint16_t)v;
    if (t == HK_U32) out->u32 = (uint32_t)v;
    if (t == HK_U64) out->u64 = (uint64_t)v;
    return 0;
  }
  long long v = strtoll(text, &end, 10);
  long long lo = t == HK_I8 ? INT8_MIN : t == HK_I16 ? INT16_MIN
                 : t == HK_I32 ? INT32_MIN : INT64_MIN;
  long long hi = t == HK_I8 ? INT8_MAX : t == HK_I16 ? INT16_MAX
                 : t == HK_I32 ? INT32_MAX : INT64_MAX;
  if (errno == ERANGE || v < lo || v > hi) {
    *why = "is out of range for its type";
    return -1;
  }
  if (t == HK_I8) out->i8 = (int8_t)v;
  if (t == HK_I16) out->i16 = (int16_t)v;
  if (t == HK_I32) out->i32 = (int32_t)v;
  if (t == HK_I64) out->i64 = (int64_t)v;
  return 0;
}

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
      default: break;
    }
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
} run_opts;

static int parse_args(int argc, char **argv, run_opts *o, int *help_shown) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char **slot = NULL;
    if (hk_cli_is_help(a)) {
      fputs(help, stdout);
      *help_shown = 1;
      return 0;
    }
    if (!strcmp(a, "--out")) {
      if (i + 1 >= argc) return hk_cli_usage("run", "--out needs PARAM=FILE.npy");
      o->outs[o->nouts++] = argv[++i];
      continue;
    }
    if (!strcmp(a, "--backend")) slot = &o->backend;
    if (!strcmp(a, "--tier")) slot = &o->tier;
    if (!strcmp(a, "--n")) slot = &o->n_text;
    if (!strcmp(a, "--threads")) slot = &o->threads_text;
    if (!strcmp(a, "--plugins")) {
      if (i + 1 >= argc) return hk_cli_usage("run", "--plugins needs a folder");
      o->plugins[o->nplugins++] = argv[++i];
      continue;
    }
    if (!strcmp(a, "--allow-unsafe-plugins")) {
      o->allow_unsafe = 1;
      continue;
    }
    if (!strcmp(a, "--no-cache")) {
      o->no_cache = 1;
      continue;
    }
    if (slot) {
      if (i + 1 >= argc) return hk_cli_usage("run", "%s needs a value", a);
      *slot = argv[++i];
      continue;
    }
    if (a[0] == '-' && a[1] == '-') {
      const char *eq = strchr(a, '=');
      if (eq && (!strncmp(a, "--out=", 6))) {
        o->outs[o->nouts++] = eq + 1;
        continue;
      }
      return hk_cli_usage("run", "unknown option '%s'", a);
    }
    if (!o->kernel) {
      o->kernel = a;
    } else if (strchr(a, '=')) {
      o->assigns[o->nassigns++] = a;
    } else {
      return hk_cli_usage("run",
                          "unexpected argument '%s' (parameters are given as "
                          "PARAM=VALUE)",
                          a);
    }
  }
  return 0;
}

static int closest_fn(hk_kernel_t *k, void *user) {
  struct {
    const char *name;
    const char *best;
    size_t d;
  } *c = user;
  size_t d = hku_edit_distance(c->name, hk_kernel_info(k)->name);
  if (d < c->d) c->d = d, c->best = hk_kernel_info(k)->name;
  return 0;
}

static int is_kernel_file(const char *name) {
  const char *colon = strrchr(name, ':');
  size_t len = colon ? (size_t)(colon - name) : strlen(name);
  return strchr(name, '/') || (len > 5 && !strncmp(name + len - 5, ".json", 5)) ||
         (len > 3 && !strncmp(name + len - 3, ".so", 3));
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

/* Finds the kernel KERNEL names in ctx: a name, or a kernel file to load
 * (FILE.json or FILE.json:NAME). NULL after printing why. */
static hk_kernel_t *find_kernel(hk_context_t *ctx, const char *name) {
  hk_kernel_t *k;
  if (is_kernel_file(name)) {
    char *path = strdup(name);
    if (!path) return NULL;
    char *colon = strrchr(path, ':');
    const char *want = NULL;
    if (colon && !strchr(colon, '/')) {
      *colon = '\0';
      want = colon + 1;
    }
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
    k = NULL;
    if (!want)
      hk_cli_error("run", "%s defines %d kernels (%s): name one as %s:NAME",
                   path, c.n, hku_buf_str(&names), path);
    else if (hk_kernel_find(ctx, want, &k) != HK_OK ||
             strcmp(hk_kernel_info(k)->source, path)) {
      hk_cli_error("run", "%s defines no kernel named '%s' (it defines: %s)",
                   path, want, hku_buf_str(&names));
      k = NULL;
    }
    hku_buf_free(&names);
    free(path);
    return k;
  }
  if (hk_kernel_find(ctx, name, &k) == HK_OK) return k;
  struct {
    const char *name;
    const char *best;
    size_t d;
  } c = {name, NULL, 4};
  hk_kernel_foreach(ctx, closest_fn, &c);
  if (c.best)
    hk_cli_error("run", "no kernel named '%s' (did you mean '%s'? hk list "
                        "shows them all)",
                 name, c.best);
  else
    hk_cli_error("run", "no kernel named '%s' (hk list shows them all)", name);
  return NULL;
}

static int param_index(const hk_kernel_info_t *k, const char *name,
                       size_t len) {
  for (int i = 0; i < k->nparams; i++)
    if (strlen(k->params[i].name) == len &&
        !strncmp(k->params[i].name, name, len))
      return i;
  return -1;
}

static int no_such_param(const hk_kernel_info_t *k, const char *name,
                         size_t len) {
  hku_buf names = HKU_BUF_INIT;
  for (int i = 0; i < k->nparams; i++)
    hku_buf_printf(&names, "%s%s", i ? ", " : "", k->params[i].name);
  int rc = hk_cli_error("run", "%s has no parameter '%.*s' (its parameters: %s)",
                        k->name, (int)len, name, hku_buf_str(&names));
  hku_buf_free(&names);
  return rc;
}

static const char *role_word(hk_role_t r) {
  return r == HK_ROLE_IN      ? "an in buffer"
         : r == HK_ROLE_INOUT ? "an inout buffer"
         : r == HK_ROLE_OUT   ? "an out buffer"
                              : "a scalar";
}

/* Loads a buffer parameter's .npy and checks its dtype and layout. */
static int load_buffer(const hk_kernel_info_t *k, run_param *p) {
  char err[1024], what[128];
  if (hk_npy_read(p->value, &p->npy, err, sizeof err))
    return hk_cli_error("run", "%s=%s: %s", p->info->name, p->value, err);
  if (p->npy.dtype != p->info->dtype)
    return hk_cli_error(
        "run", "%s=%s: parameter %s of %s has type %s, but the file holds %s "
               "('%s')",
        p->info->name, p->value, p->info->name, k->name,
        hk_dtype_name(p->info->dtype),
        hk_npy_describe(&p->npy, what, sizeof what), p->npy.descr);
  if (p->npy.fortran_order) {
    int big = 0;
    for (int d = 0; d < p->npy.ndim; d++) big += p->npy.shape[d] > 1;
    if (big > 1)
      return hk_cli_error("run",
                          "%s=%s: the array is in Fortran order; hk needs C "
                          "order (save np.ascontiguousarray(a))",
                          p->info->name, p->value);
  }
  p->count = p->npy.count;
  return 0;
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
  hk_kernel_t *kh = find_kernel(ctx, o->kernel);
  if (!kh) return HK_EXIT_USER;
  const hk_kernel_info_t *k = hk_kernel_info(kh);
  int is_stdlib = !strcmp(k->origin, "stdlib");
  int on_gpu = !strcmp(backend, "cuda");
  if (on_gpu && (hk_cuda_init() != HK_OK ||
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
    if (*end || end == o->threads_text || hk_set_threads((int)t) != HK_OK ||
        t < 1)
      return hk_cli_usage("run", "--threads: expected a number from 1 to 256, "
                                 "got '%s'",
                          o->threads_text);
  }

  run_param *ps = calloc((size_t)k->nparams, sizeof *ps);
  void **args = calloc((size_t)k->nparams + 1, sizeof *args);
  int64_t *lens = calloc((size_t)k->nparams + 1, sizeof *lens);
  int rc = HK_EXIT_OK;
  if (!ps || !args || !lens) {
    rc = hk_cli_internal("run", "out of memory");
    goto done;
  }
  for (int i = 0; i < k->nparams; i++) ps[i].info = &k->params[i];

  /* PARAM=VALUE */
  for (int a = 0; a < o->nassigns; a++) {
    const char *eq = strchr(o->assigns[a], '=');
    size_t nlen = (size_t)(eq - o->assigns[a]);
    int i = param_index(k, o->assigns[a], nlen);
    if (i < 0) {
      rc = no_such_param(k, o->assigns[a], nlen);
      goto done;
    }
    run_param *p = &ps[i];
    if (p->value) {
      rc = hk_cli_error("run", "%s is given twice", p->info->name);
      goto done;
    }
    if (p->info->role == HK_ROLE_OUT) {
      rc = hk_cli_error("run",
                        "%s is an out buffer of %s: it takes no input; name "
                        "its output file with --out %s=FILE.npy",
                        p->info->name, k->name, p->info->name);
      goto done;
    }
    p->value = eq + 1;
  }
  /* --out PARAM=FILE */
  for (int a = 0; a < o->nouts; a++) {
    const char *eq = strchr(o->outs[a], '=');
    if (!eq || eq == o->outs[a] || !eq[1]) {
      rc = hk_cli_usage("run", "--out expects PARAM=FILE.npy, got '%s'",
                        o->outs[a]);
      goto done;
    }
    size_t nlen = (size_t)(eq - o->outs[a]);
    int i = param_index(k, o->outs[a], nlen);
    if (i < 0) {
      rc = no_such_param(k, o->outs[a], nlen);
      goto done;
    }
    run_param *p = &ps[i];
    if (p->info->role != HK_ROLE_OUT && p->info->role != HK_ROLE_INOUT) {
      rc = hk_cli_error("run", "--out %s: %s is %s, not an output", o->outs[a],
                        p->info->name, role_word(p->info->role));
      goto done;
    }
    if (p->out_path) {
      rc = hk_cli_error("run", "--out %s is given twice", p->info->name);
      goto done;
    }
    p->out_path = eq + 1;
  }
  /* every in, inout and scalar must be given */
  for (int i = 0; i < k->nparams; i++) {
    const hk_param_info_t *pi = ps[i].info;
    if (pi->role != HK_ROLE_OUT && !ps[i].value) {
      rc = hk_cli_error("run", "missing %s, %s of %s (%s): give %s=%s",
                        pi->name, role_word(pi->role), k->name,
                        hk_dtype_name(pi->dtype), pi->name,
                        pi->role == HK_ROLE_SCALAR ? "NUMBER" : "FILE.npy");
      goto done;
    }
  }
  /* load buffers, parse scalars */
  int first = -1;
  for (int i = 0; i < k->nparams; i++) {
    run_param *p = &ps[i];
    if (p->info->role == HK_ROLE_SCALAR) {
      const char *why;
      if (parse_scalar(p->value, p->info->dtype, &p->s, &why)) {
        rc = hk_cli_error("run", "%s=%s: the value %s (%s is a %s scalar)",
                          p->info->name, p->value, why, p->info->name,
                          hk_dtype_name(p->info->dtype));
        goto done;
      }
      args[i] = &p->s;
    } else if (p->info->role != HK_ROLE_OUT) {
      if ((rc = load_buffer(k, p))) goto done;
      args[i] = p->npy.data ? p->npy.data : empty_buffer;
      if (first < 0) first = i;
    }
  }
  /* n */
  size_t n;
  if (first >= 0) {
    n = ps[first].count;
    if (o->n_text) {
      char *end;
      unsigned long long v = strtoull(o->n_text, &end, 10);
      if (*end || end == o->n_text || v != n) {
        rc = hk_cli_error("run",
                          "--n %s: n is the element count of %s (%zu); --n is "
                          "only for kernels without an in/inout buffer",
                          o->n_text, ps[first].info->name, n);
        goto done;
      }
    }
  } else {
    if (!o->n_text) {
      rc = hk_cli_error("run", "%s has no in/inout buffer to take n from: give "
                               "--n N",
                        k->name);
      goto done;
    }
    char *end;
    errno = 0;
    unsigned long long v = strtoull(o->n_text, &end, 10);
    if (*end || end == o->n_text || o->n_text[0] == '-' || errno == ERANGE) {
      rc = hk_cli_usage("run", "--n: expected a count, got '%s'", o->n_text);
      goto done;
    }
    n = (size_t)v;
  }
  /* every buffer's element count */
  /* lens stops at the first length it cannot compute, just after storing
   * it: the last entry written names the culprit */
  const int64_t unset = INT64_MIN;
  for (int i = 0; i < k->nparams; i++) lens[i] = unset;
  int lrc = hk_kernel_lens(kh, n, (void *const *)args, lens);
  if (lrc == HK_EUNSUPPORTED) {
    rc = hk_cli_error("run", "%s", hk_last_error());
    goto done;
  }
  if (lrc != HK_OK) {
    int bad = k->nparams - 1;
    while (bad > 0 && lens[bad] == unset) bad--;
    if (k->params[bad].len)
      rc = hk_cli_error("run",
                        "the length of %s, %s, is negative or too large for "
                        "these scalars",
                        k->params[bad].name, k->params[bad].len);
    else
      rc = hk_cli_error("run", "%s: a buffer length cannot be computed",
                        k->name);
    goto done;
  }
  for (int i = 0; i < k->nparams; i++) {
    run_param *p = &ps[i];
    if (p->info->role == HK_ROLE_SCALAR) continue;
    size_t want = (size_t)lens[i];
    if (p->info->role == HK_ROLE_OUT) {
      p->count = want;
      size_t bytes = want * hk_dtype_size(p->info->dtype);
      if (want && bytes / want != hk_dtype_size(p->info->dtype)) {
        rc = hk_cli_error("run", "%s: %zu elements is too many", p->info->name,
                          want);
        goto done;
      }
      if (bytes) {
        if (posix_memalign(&p->owned, 64, bytes)) {
          rc = hk_cli_internal("run", "out of memory for %s (%zu bytes)",
                               p->info->name, bytes);
          goto done;
        }
        memset(p->owned, 0, bytes);
      }
      args[i] = p->owned ? p->owned : empty_buffer;
    } else if (p->count != want) {
      if (p->info->len)
        rc = hk_cli_error("run", "%s=%s has %zu elements, but %s needs %s = "
                                 "%zu",
                          p->info->name, p->value, p->count, k->name,
                          p->info->len, want);
      else
        rc = hk_cli_error("run", "%s=%s has %zu elements, but %s needs n = "
                                 "%zu (the element count of %s)",
                          p->info->name, p->value, p->count, k->name, want,
                          ps[first].info->name);
      goto done;
    }
  }

  if (on_gpu) {
    if ((rc = run_on_gpu(kh, ps, args, n))) goto done;
  } else if (hk_call(kh, n, (void *const *)args) != HK_OK) {
    rc = hk_cli_internal("run", "%s", hk_last_error());
    goto done;
  }

  /* outputs */
  int printed = 0;
  for (int i = 0; i < k->nparams; i++) {
    run_param *p = &ps[i];
    if (p->info->role != HK_ROLE_OUT && p->info->role != HK_ROLE_INOUT)
      continue;
    const void *data = args[i];
    if (p->out_path) {
      size_t shape[HK_NPY_MAXDIM];
      int ndim = 1;
      shape[0] = p->count;
      if (first >= 0 && p->count == n && k->kind != HK_KIND_REDUCTION) {
        ndim = ps[first].npy.ndim;
        memcpy(shape, ps[first].npy.shape, sizeof shape);
      }
      char err[1024];
      if (hk_npy_write(p->out_path, p->info->dtype, ndim, shape, data, err,
                       sizeof err)) {
        rc = hk_cli_error("run", "--out %s: %s", p->info->name, err);
        goto done;
      }
    } else {
      printf(printed ? ", \"%s\": " : "{\"%s\": ", p->info->name);
      print_values(data, p->info->dtype, p->count);
      printed = 1;
    }
  }
  if (printed) puts("}");
  if (fflush(stdout) != 0)
    rc = hk_cli_internal("run", "cannot write to standard output");

done:
  if (ps)
    for (int i = 0; i < k->nparams; i++) {
      hk_npy_free(&ps[i].npy);
      free(ps[i].owned);
    }
  free(ps);
  free(args);
  free(lens);
  return rc;
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
    opts.tier = !strcmp(tier, "jit")   ? HK_TIER_JIT
                : !strcmp(tier, "opt") ? HK_TIER_OPT
                                       : HK_TIER_AUTO;
    opts.flags = (o.allow_unsafe ? HK_ALLOW_UNSAFE_PERMISSIONS : 0) |
                 (o.no_cache ? HK_NO_CACHE : 0);
    if (hk_context_create(&ctx, &opts) != HK_OK)
      rc = hk_cli_internal("run", "%s", hk_last_error());
    else if (*hk_context_problems(ctx))
      /* other files of the folders failed: say so, and go on */
      fputs(hk_context_problems(ctx), stderr);
  }
  if (!rc && !help_shown) rc = run_kernel(ctx, &o);
  /* tier auto: let a pending opt build finish, so that the disk cache has
   * it for the next run */
  if (ctx && !rc && !strcmp(tier, "auto")) hk_context_wait(ctx);
  hk_context_destroy(ctx);
  free(o.assigns);
  free(o.outs);
  free(o.plugins);
  return rc;
}
