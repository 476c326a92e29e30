/* run_args.c — hk run's arguments bound to one kernel's parameters: names,
 * scalars, .npy inputs, n and every buffer's length (run_args.h).
 *
 * Everything the user gives is checked before the kernel runs: parameter
 * names, dtypes against the kernel's types, C order and little-endian data,
 * every buffer's element count against n (or its len expression), scalars
 * against their type's range.
 */
#include "run_args.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "cli.h"
#include "hk_lens.h"

/* A non-NULL address for empty buffers: kernels never read it, and pointer
 * arithmetic on NULL is undefined even by zero. */
static _Alignas(64) unsigned char empty_buffer[64];

/* --as bf16: .npy files of dtype <u2 hold bf16 bits (NumPy has no
 * bfloat16). Set once by hk run before anything is loaded. */
static int c_as_bf16;
void run_set_as_bf16(int on) { c_as_bf16 = on; }

/* ---- Scalars -------------------------------------------------------------- */

/* Reports that scalar parameter p's value is refused, for the reason why
 * ("is not a number"); returns the exit status. */
static int scalar_error(const run_param *p, const char *why) {
  return hk_cli_error("run", "%s=%s: the value %s (%s is a%s %s %s)",
                      p->info->name, p->value, why, p->info->name,
                      p->info->dtype == HK_F16 || p->info->dtype == HK_F32 ||
                              p->info->dtype == HK_F64 ||
                              p->info->dtype == HK_I8 ||
                              p->info->dtype == HK_I16 ||
                              p->info->dtype == HK_I32 ||
                              p->info->dtype == HK_I64
                          ? "n" : "",
                      hk_dtype_name(p->info->dtype),
                      p->info->role == HK_ROLE_SCALAR
                          ? "scalar"
                          : "in buffer, given a value");
}

/* Parses p's value as a float of p's type into p->s. */
static int parse_float(run_param *p) {
  const char *text = p->value;
  char *end;
  errno = 0;
  double v = strtod(text, &end);
  if (*end || end == text) return scalar_error(p, "is not a number");
  if (errno == ERANGE && (v == HUGE_VAL || v == -HUGE_VAL)) {
    char why[40];
    snprintf(why, sizeof why, "is too large for %s",
             hk_dtype_name(p->info->dtype));
    return scalar_error(p, why);
  }
  if (p->info->dtype == HK_F64) {
    p->s.f64 = v;
    return HK_EXIT_OK;
  }
  if (p->info->dtype == HK_F16 || p->info->dtype == HK_BF16) {
    /* rounded once, from the double, as NumPy rounds */
    uint16_t h = p->info->dtype == HK_F16 ? hk_f16_from_double(v)
                                          : hk_bf16_from_double(v);
    double back = p->info->dtype == HK_F16 ? hk_f16_to_double(h)
                                           : hk_bf16_to_double(h);
    if (isinf(back) && !isinf(v))
      return scalar_error(p, p->info->dtype == HK_F16 ? "is too large for f16"
                                                      : "is too large for bf16");
    p->s.u16 = h;
    return HK_EXIT_OK;
  }
  float f = strtof(text, &end);
  if (isinf(f) && !isinf(v)) return scalar_error(p, "is too large for f32");
  p->s.f32 = f;
  return HK_EXIT_OK;
}

/* Parses p's value, decimal digits only, as an unsigned integer of p's
 * type into p->s. */
static int parse_unsigned(run_param *p) {
  hk_dtype_t t = p->info->dtype;
  char *end;
  if (p->value[0] == '-')
    return scalar_error(p, "is negative, and the type is unsigned");
  errno = 0;
  unsigned long long v = strtoull(p->value, &end, 10);
  unsigned long long max = t == HK_U8    ? UINT8_MAX
                           : t == HK_U16 ? UINT16_MAX
                           : t == HK_U32 ? UINT32_MAX
                                         : UINT64_MAX;
  if (errno == ERANGE || v > max)
    return scalar_error(p, "is out of range for its type");
  if (t == HK_U8) p->s.u8 = (uint8_t)v;
  if (t == HK_U16) p->s.u16 = (uint16_t)v;
  if (t == HK_U32) p->s.u32 = (uint32_t)v;
  if (t == HK_U64) p->s.u64 = (uint64_t)v;
  return HK_EXIT_OK;
}

/* Parses p's value as a value of p's type into p->s. Integers are decimal
 * only, so that 010 is ten and not eight. */
static int parse_scalar(run_param *p) {
  const char *text = p->value;
  hk_dtype_t t = p->info->dtype;
  if (!*text) return scalar_error(p, "is empty");
  /* " 1" as "1 ": strtod would skip the leading space only */
  if (*text == ' ' || *text == '\t' || *text == '\n')
    return scalar_error(p, "begins with a space");
  if (t == HK_F32 || t == HK_F64 || t == HK_F16 || t == HK_BF16)
    return parse_float(p);
  if (t == HK_BOOL) {
    int one = !strcmp(text, "1") || !strcmp(text, "true") ||
              !strcmp(text, "True");
    if (!one && strcmp(text, "0") && strcmp(text, "false") &&
        strcmp(text, "False"))
      return scalar_error(p, "is not a bool (0, 1, true or false)");
    p->s.u8 = (uint8_t)one;
    return HK_EXIT_OK;
  }
  const char *d = text;
  if (*d == '+' || *d == '-') d++;
  if (*d < '0' || *d > '9') return scalar_error(p, "is not an integer");
  for (const char *q = d; *q; q++)
    if (*q < '0' || *q > '9')
      return scalar_error(p, "is not an integer (decimal digits only)");
  if (t == HK_U8 || t == HK_U16 || t == HK_U32 || t == HK_U64)
    return parse_unsigned(p);
  char *end;
  errno = 0;
  long long v = strtoll(text, &end, 10);
  long long lo = t == HK_I8 ? INT8_MIN : t == HK_I16 ? INT16_MIN
                 : t == HK_I32 ? INT32_MIN : INT64_MIN;
  long long hi = t == HK_I8 ? INT8_MAX : t == HK_I16 ? INT16_MAX
                 : t == HK_I32 ? INT32_MAX : INT64_MAX;
  if (errno == ERANGE || v < lo || v > hi)
    return scalar_error(p, "is out of range for its type");
  if (t == HK_I8) p->s.i8 = (int8_t)v;
  if (t == HK_I16) p->s.i16 = (int16_t)v;
  if (t == HK_I32) p->s.i32 = (int32_t)v;
  if (t == HK_I64) p->s.i64 = (int64_t)v;
  return HK_EXIT_OK;
}

/* ---- Names ---------------------------------------------------------------- */

/* The index of k's parameter whose name is the len bytes at name, or -1. */
static int param_index(const hk_kernel_info_t *k, const char *name,
                       size_t len) {
  for (int i = 0; i < k->nparams; i++)
    if (strlen(k->params[i].name) == len &&
        !strncmp(k->params[i].name, name, len))
      return i;
  return -1;
}

/* Reports that k has no parameter named by the len bytes at name, listing
 * those it has; returns the exit status. */
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

/* Binds one PARAM=VALUE argument. */
static int bind_assign(run_call *c, const char *assign) {
  const hk_kernel_info_t *k = c->k;
  const char *eq = strchr(assign, '=');
  size_t nlen = (size_t)(eq - assign);
  int i = param_index(k, assign, nlen);
  if (i < 0) return no_such_param(k, assign, nlen);
  run_param *p = &c->ps[i];
  if (p->value) return hk_cli_error("run", "%s is given twice", p->info->name);
  if (p->info->role == HK_ROLE_OUT)
    return hk_cli_error("run",
                        "%s is an out buffer of %s: it takes no input; name "
                        "its output file with --out %s=FILE.npy",
                        p->info->name, k->name, p->info->name);
  p->value = eq + 1;
  return HK_EXIT_OK;
}

/* Binds one --out PARAM=FILE argument. */
static int bind_out(run_call *c, const char *out) {
  const hk_kernel_info_t *k = c->k;
  const char *eq = strchr(out, '=');
  if (!eq || eq == out || !eq[1])
    return hk_cli_usage("run", "--out expects PARAM=FILE.npy, got '%s'", out);
  size_t nlen = (size_t)(eq - out);
  int i = param_index(k, out, nlen);
  if (i < 0) return no_such_param(k, out, nlen);
  run_param *p = &c->ps[i];
  if (p->info->role != HK_ROLE_OUT && p->info->role != HK_ROLE_INOUT)
    return hk_cli_error("run", "--out %s: %s is %s, not an output", out,
                        p->info->name, role_word(p->info->role));
  if (p->out_path)
    return hk_cli_error("run", "--out %s is given twice", p->info->name);
  p->out_path = eq + 1;
  return HK_EXIT_OK;
}

/* Says that parameter i was not given, and hint after it (may be ""):
 * returns the exit status. */
static int missing(const run_call *c, int i, const char *hint) {
  const hk_param_info_t *pi = c->ps[i].info;
  return hk_cli_error("run", "missing %s, %s of %s (%s): give %s=%s%s",
                      pi->name, role_word(pi->role), c->k->name,
                      hk_dtype_name(pi->dtype), pi->name,
                      pi->role == HK_ROLE_SCALAR ? "NUMBER" : "FILE.npy",
                      hint);
}

/* 1 for a scalar whose value an in buffer's shape may hint at, when it
 * is not given: a raw or grid kernel's integer scalar (missing_scalar). */
static int may_hint(const run_call *c, int i) {
  const hk_param_info_t *pi = c->ps[i].info;
  return pi->role == HK_ROLE_SCALAR &&
         (c->k->kind == HK_KIND_RAW || c->k->kind == HK_KIND_GRID) &&
         pi->dtype != HK_F16 && pi->dtype != HK_BF16 && pi->dtype != HK_F32 &&
         pi->dtype != HK_F64 && pi->dtype != HK_BOOL;
}

int run_call_bind(run_call *c, const char *const *assigns, int nassigns,
                  const char *const *outs, int nouts) {
  int rc = HK_EXIT_OK;
  for (int a = 0; a < nassigns && !rc; a++) rc = bind_assign(c, assigns[a]);
  for (int a = 0; a < nouts && !rc; a++) rc = bind_out(c, outs[a]);
  /* every in, inout and scalar must be given (SPEC §3; those that may_hint
   * are said to be missing once the files are read) */
  for (int i = 0; i < c->k->nparams && !rc; i++)
    if (c->ps[i].info->role != HK_ROLE_OUT && !c->ps[i].value &&
        !may_hint(c, i))
      rc = missing(c, i, "");
  return rc;
}

/* ---- Inputs --------------------------------------------------------------- */

/* Loads a buffer parameter's .npy and checks its dtype and layout. */
/* 1 when text is a number (or a bool's word) rather than a file name. */
static int looks_like_value(const char *text);

int hk_run_is_value(const char *text) {
  return looks_like_value(text) && access(text, F_OK) != 0;
}

static int looks_like_value(const char *text) {
  char *end;
  if (!strcmp(text, "true") || !strcmp(text, "false") ||
      !strcmp(text, "True") || !strcmp(text, "False"))
    return 1;
  (void)strtod(text, &end);
  return end != text && !*end;
}

/* An in parameter given a number (x=2.5, not a file that exists): a 0-d
 * array of its type holding the value, parsed as a scalar's is. */
static int value_buffer(run_param *p) {
  int rc = parse_scalar(p);
  if (rc) return rc;
  hk_npy_t *f = &p->npy;
  memset(f, 0, sizeof *f);
  f->itemsize = hk_dtype_size(p->info->dtype);
  if (!(f->data = malloc(f->itemsize)))
    return hk_cli_internal("run", "out of memory");
  memcpy(f->data, &p->s, f->itemsize);
  f->dtype = p->info->dtype;
  f->ndim = 0;
  f->count = 1;
  p->count = 1;
  return HK_EXIT_OK;
}

/* Files run_npy_peek read, kept for their first load. */
static struct peeked {
  char *path;
  hk_npy_t f;
} g_peeked[64];
static int g_npeeked;

/* *dst = a copy of src with data of its own, as hk_npy_read's (64-byte
 * aligned, NULL when empty); -1 when there is no memory for it. */
static int npy_copy(hk_npy_t *dst, const hk_npy_t *src) {
  size_t bytes = src->count * src->itemsize;
  *dst = *src;
  dst->data = NULL;
  if (bytes && posix_memalign(&dst->data, 64, bytes)) return -1;
  if (bytes) memcpy(dst->data, src->data, bytes);
  return 0;
}

int run_npy_peek(const char *path, hk_npy_t *f, hku_diags *d) {
  /* read before (an instance picked twice): a copy of what was kept, as
   * a pipe holds nothing the second time */
  for (int i = 0; i < g_npeeked; i++)
    if (!strcmp(g_peeked[i].path, path))
      return npy_copy(f, &g_peeked[i].f) ? hk_npy_read(path, f, d) : HK_OK;
  int rc = hk_npy_read(path, f, d);
  if (rc != HK_OK || g_npeeked == (int)(sizeof g_peeked / sizeof g_peeked[0]))
    return rc;
  struct peeked *k = &g_peeked[g_npeeked];
  if (!(k->path = strdup(path))) return rc; /* the load reads it again */
  if (npy_copy(&k->f, f)) {
    free(k->path);
    return rc;
  }
  g_npeeked++;
  return rc;
}

void run_npy_forget(void) {
  for (int i = 0; i < g_npeeked; i++) {
    free(g_peeked[i].path);
    hk_npy_free(&g_peeked[i].f);
  }
  g_npeeked = 0;
}

/* hk_npy_read, or what run_npy_peek kept of path (taken: once). */
static int read_npy(const char *path, hk_npy_t *f, hku_diags *d) {
  for (int i = 0; i < g_npeeked; i++)
    if (!strcmp(g_peeked[i].path, path)) {
      *f = g_peeked[i].f;
      free(g_peeked[i].path);
      g_peeked[i] = g_peeked[--g_npeeked];
      return HK_OK;
    }
  return hk_npy_read(path, f, d);
}

static int load_buffer(const hk_kernel_info_t *k, run_param *p,
                       int any_order) {
  char what[128];
  hku_diags diags = HKU_DIAGS_INIT;
  hku_buf err = HKU_BUF_INIT;
  int rc = HK_EXIT_OK;
  if (p->info->role == HK_ROLE_IN && hk_run_is_value(p->value))
    return value_buffer(p);
  /* an inout buffer is updated in place, which a number cannot be: say
   * that, rather than "1.5: cannot open" as if a file had been meant */
  if (p->info->role == HK_ROLE_INOUT && hk_run_is_value(p->value))
    return hk_cli_error("run", "%s=%s: %s is an inout buffer of %s, which "
                               "needs a .npy file (a number is taken only "
                               "for in buffers)",
                        p->info->name, p->value, p->info->name, k->name);
  if (read_npy(p->value, &p->npy, &diags) != HK_OK)
    rc = hk_cli_error("run", "%s=%s: %s", p->info->name, p->value,
                      hk_npy_error(&diags, &err));
  hku_buf_free(&err);
  hku_diags_free(&diags);
  if (rc) return rc;
  if (p->npy.dtype == HK_U16 && p->info->dtype == HK_BF16 && c_as_bf16)
    p->npy.dtype = HK_BF16; /* --as bf16: NumPy has no bfloat16 */
  if (p->npy.dtype != p->info->dtype) {
    const char *desc = hk_npy_describe(&p->npy, what, sizeof what);
    /* "uint16 ('<u2')", but "str (<U2)" names its descr already */
    char descr[80] = "";
    if (!strstr(desc, p->npy.descr))
      snprintf(descr, sizeof descr, " ('%s')", p->npy.descr);
    return hk_cli_error(
        "run", "%s=%s: parameter %s of %s has type %s, but the file holds "
               "%s%s%s",
        p->info->name, p->value, p->info->name, k->name,
        hk_dtype_name(p->info->dtype), desc, descr,
        p->npy.dtype == HK_U16 && p->info->dtype == HK_BF16
            ? " (NumPy has no bfloat16: --as bf16 reads <u2 files as bf16 "
              "bits)"
            : "");
  }
  if (p->npy.fortran_order && !any_order) {
    int big = 0;
    for (int d = 0; d < p->npy.ndim; d++) big += p->npy.shape[d] > 1;
    if (big > 1)
      return hk_cli_error("run",
                          "%s=%s: the array is in Fortran order; hk needs C "
                          "order (save np.ascontiguousarray(a))",
                          p->info->name, p->value);
  }
  p->count = p->npy.count;
  return HK_EXIT_OK;
}

/* Parses the scalars and loads the in/inout buffers into c->args; notes
 * the first buffer in c->first. */
static int npy_array(const run_param *p, hk_array_t *a);

/* Descriptors of the scalars (0-d) and the loaded in/inout buffers into
 * a[0..nparams), for the library's shape functions (a file of more axes
 * than an array has, which raw and grid kernels take, as one axis). */
static int flat_arrays(const run_call *c, hk_array_t *a) {
  for (int i = 0; i < c->k->nparams; i++) {
    const run_param *p = &c->ps[i];
    memset(&a[i], 0, sizeof a[i]);
    if (p->info->role == HK_ROLE_SCALAR) {
      hk_array_init(&a[i], (void *)&p->s, p->info->dtype, 0, NULL);
    } else if (p->info->role != HK_ROLE_OUT && p->npy.ndim > HK_MAX_DIMS) {
      int64_t count = (int64_t)p->npy.count;
      hk_array_init(&a[i], p->npy.data ? p->npy.data : empty_buffer,
                    p->info->dtype, 1, &count);
    } else if (p->info->role != HK_ROLE_OUT && npy_array(p, &a[i])) {
      return HK_EXIT_USER;
    }
  }
  return HK_EXIT_OK;
}

/* The first scalar not given (may_hint): missing, as every scalar must be
 * given (SPEC §3), with the value the in files' shapes give it where
 * they do (hk_kernel_scalar_from_shapes: x of shape (3, 4), len rows *
 * cols, gives rows=3), as the Python module would take it. */
static int missing_scalar(run_call *c) {
  hk_array_t *a = calloc((size_t)c->k->nparams + 1, sizeof *a);
  if (!a) return hk_cli_internal("run", "out of memory");
  int rc = flat_arrays(c, a);
  for (int i = 0; i < c->k->nparams && !rc; i++) {
    const run_param *p = &c->ps[i];
    if (p->info->role != HK_ROLE_SCALAR || p->value) continue;
    int64_t v;
    char hint[160] = "";
    if (hk_kernel_scalar_from_shapes(c->kh, a, i, &v) == HK_OK)
      snprintf(hint, sizeof hint, " (the in files' shapes give %s=%lld)",
               p->info->name, (long long)v);
    rc = missing(c, i, hint);
  }
  free(a);
  return rc;
}

static int load_inputs(run_call *c, int any_order) {
  c->first = -1;
  int left_out = 0;
  for (int i = 0; i < c->k->nparams; i++) {
    run_param *p = &c->ps[i];
    int rc;
    if (p->info->role == HK_ROLE_SCALAR && !p->value) {
      left_out = 1; /* may_hint: said after the buffers are read */
    } else if (p->info->role == HK_ROLE_SCALAR) {
      if ((rc = parse_scalar(p))) return rc;
      c->args[i] = &p->s;
    } else if (p->info->role != HK_ROLE_OUT) {
      if ((rc = load_buffer(c->k, p, any_order))) return rc;
      c->args[i] = p->npy.data ? p->npy.data : empty_buffer;
      if (c->first < 0) c->first = i;
    }
  }
  return left_out ? missing_scalar(c) : HK_EXIT_OK;
}

/* Sets c->n: the first buffer's element count (--n, when given, must agree),
 * or --n for a kernel without in/inout buffers. */
static int settle_n(run_call *c, const char *n_text) {
  char *end;
  if (c->first >= 0) {
    const run_param *f = &c->ps[c->first];
    c->n = f->count;
    if (n_text) {
      unsigned long long v = strtoull(n_text, &end, 10);
      if (*end || end == n_text || v != c->n)
        return hk_cli_error("run",
                            "--n %s: n is the element count of %s (%zu); --n "
                            "is only for kernels without an in/inout buffer",
                            n_text, f->info->name, c->n);
    }
    return HK_EXIT_OK;
  }
  if (!n_text && !c->k->uses_n) { /* n changes nothing: 0 */
    c->n = 0;
    return HK_EXIT_OK;
  }
  if (!n_text)
    return hk_cli_error("run", "%s has no in/inout buffer to take n from: give "
                               "--n N",
                        c->k->name);
  errno = 0;
  unsigned long long v = strtoull(n_text, &end, 10);
  if (*end || end == n_text || n_text[0] == '-' || errno == ERANGE)
    return hk_cli_usage("run", "--n: expected a count, got '%s'", n_text);
  c->n = (size_t)v;
  return HK_EXIT_OK;
}

/* Computes every buffer's length into c->lens (hk_kernel_lens). */
static int compute_lens(run_call *c) {
  const hk_kernel_info_t *k = c->k;
  /* lens stops at the first length it cannot compute, just after storing
   * it: the last entry written names the culprit */
  const int64_t unset = INT64_MIN;
  for (int i = 0; i < k->nparams; i++) c->lens[i] = unset;
  int lrc = hk_kernel_lens(c->kh, c->n, (void *const *)c->args, c->lens);
  if (lrc == HK_EUNSUPPORTED) return hk_cli_error("run", "%s", hk_last_error());
  if (lrc == HK_OK) return HK_EXIT_OK;
  int bad = k->nparams - 1;
  while (bad > 0 && c->lens[bad] == unset) bad--;
  if (k->params[bad].len)
    return hk_cli_error("run",
                        "the length of %s, %s, is negative, too large, "
                        "divides by zero or does not fit one of its casts "
                        "for these scalars",
                        k->params[bad].name, k->params[bad].len);
  return hk_cli_error("run", "%s: a buffer length cannot be computed",
                      k->name);
}

/* Every out buffer is followed by a guard zone: from its end, rounded up
 * to 64 bytes (the next buffer's alignment), GUARD_SIZE bytes more, all
 * GUARD_BYTE. A kernel body that writes a little past its out buffer
 * (y[j + 8]) then changes the guard rather than malloc's bookkeeping, which
 * glibc would find only at free() ("double free or corruption", after hk
 * had said the results were written); run_call_check_guards finds it
 * first. A write far past the end still faults, for hk.c's crash handler.
 * The cost is one page set and compared per out buffer. */
#define GUARD_SIZE 4096
#define GUARD_BYTE 0xA5

/* Where out buffer p's guard zone starts: the end of its data. */
static size_t guard_start(const run_param *p) {
  return p->count * hk_dtype_size(p->info->dtype);
}
/* Its length: to the next 64-byte boundary, then GUARD_SIZE bytes. */
static size_t guard_len(const run_param *p) {
  size_t bytes = guard_start(p);
  return (bytes + 63) / 64 * 64 - bytes + GUARD_SIZE;
}

/* Allocates out buffer i (want elements, zeroed, then its guard zone) into
 * c->args[i]. */
static int alloc_out(run_call *c, int i, size_t want) {
  run_param *p = &c->ps[i];
  p->count = want;
  size_t bytes = want * hk_dtype_size(p->info->dtype);
  if ((want && bytes / want != hk_dtype_size(p->info->dtype)) ||
      bytes > SIZE_MAX - 64 - GUARD_SIZE)
    return hk_cli_error("run", "%s: %zu elements is too many", p->info->name,
                        want);
  /* more than the machine holds is the request's fault (--n 1e17), not an
   * internal failure */
  long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
  if (pages > 0 && psz > 0 && bytes / (size_t)psz > (size_t)pages)
    return hk_cli_error("run", "%s: %zu elements need %zu bytes, more than "
                               "this machine's memory (%zu bytes)",
                        p->info->name, want, bytes,
                        (size_t)pages * (size_t)psz);
  /* an empty buffer gets its guard too: a raw kernel may write into it */
  if (posix_memalign(&p->owned, 64, bytes + guard_len(p)))
    return hk_cli_internal("run", "out of memory for %s (%zu bytes)",
                           p->info->name, bytes);
  memset(p->owned, 0, bytes);
  memset((unsigned char *)p->owned + bytes, GUARD_BYTE, guard_len(p));
  c->args[i] = p->owned;
  return HK_EXIT_OK;
}

int run_call_check_guards(const run_call *c, int status) {
  for (int i = 0; i < c->k->nparams; i++) {
    const run_param *p = &c->ps[i];
    if (p->info->role != HK_ROLE_OUT || !p->owned) continue;
    const unsigned char *g = (const unsigned char *)p->owned + guard_start(p);
    for (size_t j = 0, n = guard_len(p); j < n; j++)
      if (g[j] != GUARD_BYTE) {
        hk_cli_error("run", "%s wrote past the end of out buffer %s (%zu "
                            "elements)",
                     c->k->name, p->info->name, p->count);
        return status;
      }
  }
  return HK_EXIT_OK;
}

/* Checks every in/inout buffer's element count against its length, and
 * allocates the out buffers. */
static int settle_buffers(run_call *c) {
  const hk_kernel_info_t *k = c->k;
  for (int i = 0; i < k->nparams; i++) {
    run_param *p = &c->ps[i];
    if (p->info->role == HK_ROLE_SCALAR) continue;
    size_t want = (size_t)c->lens[i];
    int rc = HK_EXIT_OK;
    if (p->info->role == HK_ROLE_OUT)
      rc = alloc_out(c, i, want);
    else if (p->count != want && p->info->len)
      rc = hk_cli_error("run", "%s=%s has %zu elements, but %s needs %s = "
                               "%zu",
                        p->info->name, p->value, p->count, k->name,
                        p->info->len, want);
    else if (p->count != want)
      rc = hk_cli_error("run", "%s=%s has %zu elements, but %s needs n = "
                               "%zu (the element count of %s)",
                        p->info->name, p->value, p->count, k->name, want,
                        c->ps[c->first].info->name);
    if (rc) return rc;
  }
  return HK_EXIT_OK;
}

/* A raw or grid kernel's outputs: the shapes hk_call_out_shape gives
 * (out buffers; their lens' factors), the files' own (inout buffers). */
static int shape_outputs(run_call *c) {
  const hk_kernel_info_t *k = c->k;
  if (k->kind != HK_KIND_RAW && k->kind != HK_KIND_GRID) return HK_EXIT_OK;
  hk_array_t *a = calloc((size_t)k->nparams + 1, sizeof *a);
  if (!a) return hk_cli_internal("run", "out of memory");
  int rc = flat_arrays(c, a);
  for (int i = 0; i < k->nparams && !rc; i++) {
    run_param *p = &c->ps[i];
    int nd = 0;
    int64_t shape[HK_MAX_DIMS];
    if (p->info->role != HK_ROLE_OUT && p->info->role != HK_ROLE_INOUT)
      continue;
    /* a file of more axes than a shape here holds: write_outputs gives
     * an output of n elements the first file's shape (SPEC §3) */
    if (p->npy.ndim > HK_MAX_DIMS ||
        (c->first >= 0 && c->ps[c->first].npy.ndim > HK_MAX_DIMS))
      continue;
    if (p->info->role == HK_ROLE_INOUT) {
      nd = a[i].ndim;
      memcpy(shape, a[i].shape, sizeof(int64_t) * (size_t)nd);
    } else if (c->first < 0) {
      /* no in buffer: n is --n, which hk_call_out_shape cannot know */
      if (!hk__len_shape(k, i, a, c->n, (int64_t)p->count, &nd, shape)) {
        nd = 1;
        shape[0] = (int64_t)p->count;
      }
    } else {
      int lrc = hk_call_out_shape(c->kh, a, NULL, i, &nd, shape);
      if (lrc) {
        rc = run_lib_error(lrc);
        break;
      }
    }
    /* whatever the shape, it holds the elements allocated: else flat */
    int64_t total = 1;
    for (int d = 0; d < nd; d++) total *= shape[d];
    if (total != (int64_t)p->count) {
      nd = 1;
      shape[0] = (int64_t)p->count;
    }
    p->shaped = 1;
    p->ndim = nd;
    for (int d = 0; d < nd; d++) p->shape[d] = (size_t)shape[d];
  }
  free(a);
  return rc;
}

int run_call_prepare(run_call *c, const char *n_text) {
  int rc = load_inputs(c, 0);
  if (!rc) rc = settle_n(c, n_text);
  if (!rc) rc = compute_lens(c);
  if (!rc) rc = settle_buffers(c);
  if (!rc) rc = shape_outputs(c);
  return rc;
}

/* ---- The array path ------------------------------------------------------- */

/* Rewrites a Fortran-order array's data in C order (in place, through a
 * copy): element (i0, ..., ik) moves from sum i_d * F_d to sum i_d * C_d. */
static int to_c_order(hk_npy_t *a) {
  if (!a->fortran_order || a->count < 2) {
    a->fortran_order = 0;
    return HK_EXIT_OK;
  }
  size_t es = a->itemsize;
  unsigned char *c = malloc(a->count * es);
  if (!c) return hk_cli_internal("run", "out of memory");
  for (size_t k = 0; k < a->count; k++) { /* k: the C-order index */
    size_t rem = k, f = 0, fst = 1;
    size_t idx[HK_NPY_MAXDIM];
    for (int d = a->ndim - 1; d >= 0; d--) {
      idx[d] = rem % a->shape[d];
      rem /= a->shape[d];
    }
    for (int d = 0; d < a->ndim; d++) {
      f += idx[d] * fst;
      fst *= a->shape[d];
    }
    memcpy(c + k * es, (unsigned char *)a->data + f * es, es);
  }
  memcpy(a->data, c, a->count * es);
  free(c);
  a->fortran_order = 0;
  return HK_EXIT_OK;
}

/* The descriptor of a loaded .npy (C or Fortran order). */
static int npy_array(const run_param *p, hk_array_t *a) {
  const hk_npy_t *f = &p->npy;
  if (f->ndim > HK_MAX_DIMS)
    return hk_cli_error("run", "%s=%s: %d axes; hk takes at most %d",
                        p->info->name, p->value, f->ndim, HK_MAX_DIMS);
  memset(a, 0, sizeof *a);
  a->data = f->data ? f->data : empty_buffer;
  a->dtype = p->info->dtype;
  a->ndim = f->ndim;
  int64_t st = 1;
  for (int d = 0; d < f->ndim; d++) a->shape[d] = (int64_t)f->shape[d];
  if (f->fortran_order)
    for (int d = 0; d < f->ndim; d++) {
      a->strides[d] = st;
      st *= a->shape[d];
    }
  else
    for (int d = f->ndim - 1; d >= 0; d--) {
      a->strides[d] = st;
      st *= a->shape[d];
    }
  a->base = a->data;
  a->nbytes = f->count * f->itemsize;
  return HK_EXIT_OK;
}

/* A message from the library (hk_last_error) as hk run's error: bad
 * shapes, axes, dtypes or extents are the user's. */
int run_lib_error(int code) {
  if (code == HK_EINVAL || code == HK_EUNSUPPORTED || code == HK_ENOTFOUND)
    return hk_cli_error("run", "%s", hk_last_error());
  return hk_cli_internal("run", "%s", hk_last_error());
}

int run_call_prepare_arrays(run_call *c, const hk_call_opts_t *opts) {
  const hk_kernel_info_t *k = c->k;
  c->arr = calloc((size_t)k->nparams + 1, sizeof *c->arr);
  if (!c->arr) return hk_cli_internal("run", "out of memory");
  if (opts) c->opts = *opts;
  int rc = load_inputs(c, 1);
  for (int i = 0; i < k->nparams && !rc; i++) {
    run_param *p = &c->ps[i];
    if (p->info->role == HK_ROLE_SCALAR) {
      hk_array_init(&c->arr[i], &p->s, p->info->dtype, 0, NULL);
    } else if (p->info->role != HK_ROLE_OUT) {
      if (p->info->role == HK_ROLE_INOUT && (rc = to_c_order(&p->npy))) break;
      rc = npy_array(p, &c->arr[i]);
      /* an inout result of a whole reduction read from a file of one
       * element of shape (1,) (as hk run wrote them before 2026-11-30;
       * now they are 0-d) must be the 0-d array the call takes:
       * `dbias=r.npy --out dbias=r.npy` accumulates across runs */
      if (!rc && p->info->role == HK_ROLE_INOUT &&
          k->kind == HK_KIND_REDUCTION && !c->opts.axes && !c->opts.naxes &&
          !c->opts.keepdims && c->arr[i].ndim > 0 &&
          hk_array_size(&c->arr[i]) == 1)
        c->arr[i].ndim = 0;
      c->args[i] = c->arr[i].data;
      p->shaped = 1;
      p->ndim = p->npy.ndim;
      memcpy(p->shape, p->npy.shape, sizeof(size_t) * (size_t)p->ndim);
    }
  }
  for (int i = 0; i < k->nparams && !rc; i++) {
    run_param *p = &c->ps[i];
    if (p->info->role != HK_ROLE_OUT) continue;
    int nd;
    int64_t shape[HK_MAX_DIMS];
    int lrc = hk_call_out_shape(c->kh, c->arr, &c->opts, i, &nd, shape);
    if (lrc) return run_lib_error(lrc);
    size_t count = 1;
    for (int d = 0; d < nd; d++) {
      if (shape[d] && count > SIZE_MAX / (size_t)shape[d])
        return hk_cli_error("run", "%s: too many elements", p->info->name);
      count *= (size_t)shape[d];
      p->shape[d] = (size_t)shape[d];
    }
    p->shaped = 1;
    p->ndim = nd;
    if ((rc = alloc_out(c, i, count))) return rc;
    hk_array_init(&c->arr[i], c->args[i], p->info->dtype, nd, shape);
  }
  return rc;
}

int run_call_arrays(run_call *c) {
  int rc = hk_call_arrays(c->kh, c->arr, &c->opts);
  return rc ? run_lib_error(rc) : HK_EXIT_OK;
}

int run_call_arrays_gpu(run_call *c) {
  const hk_kernel_info_t *k = c->k;
  size_t np = (size_t)k->nparams;
  hk_array_t *dev = calloc(np + 1, sizeof *dev);
  void **mem = calloc(np + 1, sizeof *mem);
  int rc = HK_EXIT_OK;
  if (!dev || !mem) rc = hk_cli_internal("run", "out of memory");
  for (size_t i = 0; i < np && !rc; i++) {
    const hk_array_t *a = &c->arr[i];
    hk_role_t role = k->params[i].role;
    dev[i] = *a;
    if (role == HK_ROLE_SCALAR) continue;
    if (hk_device_alloc(&mem[i], a->nbytes) != HK_OK ||
        (role != HK_ROLE_OUT && a->nbytes &&
         hk_memcpy_to_device(mem[i], a->base, a->nbytes, NULL) != HK_OK)) {
      rc = hk_cli_internal("run", "--backend cuda: %s", hk_last_error());
      break;
    }
    dev[i].base = mem[i];
    dev[i].data = (char *)mem[i] + ((const char *)a->data -
                                    (const char *)a->base);
  }
  if (!rc) {
    hk_call_opts_t o = c->opts;
    o.backend = HK_BACKEND_CUDA;
    int r = hk_call_arrays(c->kh, dev, &o);
    if (r == HK_EDEVICE || r == HK_ECOMPILE)
      rc = hk_cli_error("run", "--backend cuda: %s", hk_last_error());
    else if (r)
      rc = run_lib_error(r);
  }
  for (size_t i = 0; i < np && !rc; i++) {
    hk_role_t role = k->params[i].role;
    if ((role == HK_ROLE_OUT || role == HK_ROLE_INOUT) && c->arr[i].nbytes &&
        hk_memcpy_to_host((void *)c->arr[i].base, mem[i], c->arr[i].nbytes,
                          NULL) != HK_OK)
      rc = hk_cli_internal("run", "--backend cuda: %s", hk_last_error());
  }
  for (size_t i = 0; mem && i < np; i++)
    if (mem[i]) hk_device_free(mem[i]);
  free(mem);
  free(dev);
  return rc;
}

/* ---- The call ------------------------------------------------------------- */

int run_call_init(run_call *c, hk_kernel_t *kh) {
  memset(c, 0, sizeof *c);
  c->kh = kh;
  c->k = hk_kernel_info(kh);
  c->first = -1;
  size_t np = (size_t)c->k->nparams;
  c->ps = calloc(np ? np : 1, sizeof *c->ps);
  c->args = calloc(np + 1, sizeof *c->args);
  c->lens = calloc(np + 1, sizeof *c->lens);
  if (!c->ps || !c->args || !c->lens)
    return hk_cli_internal("run", "out of memory");
  for (int i = 0; i < c->k->nparams; i++) c->ps[i].info = &c->k->params[i];
  return HK_EXIT_OK;
}

void run_call_free(run_call *c) {
  if (c->ps)
    for (int i = 0; i < c->k->nparams; i++) {
      hk_npy_free(&c->ps[i].npy);
      free(c->ps[i].owned);
    }
  free(c->ps);
  free(c->arr);
  free(c->args);
  free(c->lens);
  memset(c, 0, sizeof *c);
}
