/* lens.c — raw and grid buffers' shapes from their lens (hk.h:
 * hk_call_out_shape, hk_kernel_scalar_from_shapes).
 *
 * A len written as a product of names and decimal literals ("rows * cols",
 * "B * T * 3 * C") reads as a shape, one axis per factor in order: an out
 * buffer's array takes it (a matmul's out is (M, N), not M * N flat), and
 * an in buffer's array with that many axes gives each scalar it names its
 * length (row_sum of a (3, 4) x: rows = 3, cols = 4). The names are the
 * kernel's integer scalars and n. Any other len (a sum, a quotient,
 * parentheses, a cast, a const) is one axis, and gives no scalar.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "hk.h"
#include "internal.h"
#include "hk_lens.h"
#include "registry.h"

/* One factor of a len: a literal (param -1, value lit), n (param -2) or
 * the integer scalar params[param]. */
typedef struct factor {
  int param;
  int64_t lit;
} factor;

static int is_int_dtype(hk_dtype_t t) {
  switch (t) {
    case HK_I8: case HK_I16: case HK_I32: case HK_I64:
    case HK_U8: case HK_U16: case HK_U32: case HK_U64: return 1;
    default: return 0;
  }
}

static int ident_char(char c, int first) {
  return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (!first && c >= '0' && c <= '9');
}

/* The factors of len into f (up to HK_MAX_DIMS): their count, or 0 when
 * len is not a product of literals, n and integer scalars. */
static int factors(const hk_kernel_info_t *in, const char *len, factor *f) {
  int nf = 0;
  const char *s = len;
  if (!s) return 0;
  for (;;) {
    while (*s == ' ' || *s == '\t') s++;
    factor x = {-1, 0};
    if (*s >= '0' && *s <= '9') {
      if (*s == '0' && s[1] >= '0' && s[1] <= '9') return 0; /* octal */
      for (; *s >= '0' && *s <= '9'; s++)
        if (__builtin_mul_overflow(x.lit, 10, &x.lit) ||
            __builtin_add_overflow(x.lit, *s - '0', &x.lit))
          return 0;
      if (ident_char(*s, 0)) return 0; /* 0x10, 10u: not plain decimal */
    } else if (ident_char(*s, 1)) {
      const char *b = s;
      while (ident_char(*s, 0)) s++;
      size_t l = (size_t)(s - b);
      if (l == 1 && *b == 'n') {
        x.param = -2;
      } else {
        x.param = -3;
        for (int i = 0; i < in->nparams; i++)
          if (in->params[i].role == HK_ROLE_SCALAR &&
              is_int_dtype(in->params[i].dtype) &&
              strlen(in->params[i].name) == l &&
              !memcmp(in->params[i].name, b, l))
            x.param = i;
        if (x.param == -3) return 0; /* a const, or not a name of ours */
      }
    } else {
      return 0;
    }
    if (nf == HK_MAX_DIMS) return 0;
    f[nf++] = x;
    while (*s == ' ' || *s == '\t') s++;
    if (!*s) return nf;
    if (*s++ != '*') return 0;
  }
}

/* The value of the integer scalar in the 0-d array a (dtype t), or -1
 * when it has none that a length could be. */
static int64_t scalar_value(const hk_array_t *a, hk_dtype_t t) {
  if (!a->data || a->dtype != t) return -1;
  const void *p = a->data;
  switch (t) {
    case HK_I8: return *(const int8_t *)p;
    case HK_I16: return *(const int16_t *)p;
    case HK_I32: return *(const int32_t *)p;
    case HK_I64: return *(const int64_t *)p;
    case HK_U8: return *(const uint8_t *)p;
    case HK_U16: return *(const uint16_t *)p;
    case HK_U32: return *(const uint32_t *)p;
    case HK_U64: {
      uint64_t v = *(const uint64_t *)p;
      return v > (uint64_t)INT64_MAX ? -1 : (int64_t)v;
    }
    default: return -1;
  }
}

/* hk_lens.h (hk run shapes with it the outputs of kernels without an in
 * buffer, whose n is --n) */
int hk__len_shape(const hk_kernel_info_t *in, int param,
                  const hk_array_t *args, size_t n, int64_t count, int *ndim,
                  int64_t *shape) {
  factor f[HK_MAX_DIMS];
  int nf = factors(in, in->params[param].len, f);
  if (nf < 2) return 0;
  int64_t total = 1;
  for (int d = 0; d < nf; d++) {
    int64_t v = f[d].param == -1   ? f[d].lit
                : f[d].param == -2 ? (int64_t)n
                                   : scalar_value(&args[f[d].param],
                                                  in->params[f[d].param].dtype);
    if (v < 0 || __builtin_mul_overflow(total, v, &total)) return 0;
    shape[d] = v;
  }
  if (total != count) return 0;
  *ndim = nf;
  return 1;
}

/* "(3, 4)" into buf. */
static const char *shape_text(const hk_array_t *a, char *buf, size_t len) {
  size_t o = (size_t)snprintf(buf, len, "(");
  for (int d = 0; d < a->ndim && o < len; d++)
    o += (size_t)snprintf(buf + o, len - o, d ? ", %lld" : "%lld",
                          (long long)a->shape[d]);
  if (o < len) snprintf(buf + o, len - o, a->ndim == 1 ? ",)" : ")");
  return buf;
}

HK_API int hk_kernel_scalar_from_shapes(const hk_kernel_t *k,
                                        const hk_array_t *args, int param,
                                        int64_t *value) {
  if (!k || !args || !value)
    return hk__fail(HK_EINVAL, "hk_kernel_scalar_from_shapes: NULL argument");
  const hk_kernel_info_t *in = atomic_load(&k->info);
  if (param < 0 || param >= in->nparams ||
      in->params[param].role != HK_ROLE_SCALAR ||
      !is_int_dtype(in->params[param].dtype))
    return hk__fail(HK_EINVAL, "%s: parameter %d is not an integer scalar",
                    in->name, param);
  const char *name = in->params[param].name;
  if (in->kind != HK_KIND_RAW && in->kind != HK_KIND_GRID)
    return hk__fail(HK_ENOTFOUND, "%s: a %s kernel's buffers do not give "
                    "scalars (only raw and grid kernels' lens do)",
                    in->name, hk_kind_name(in->kind));
  int from = -1, axis = 0; /* the first buffer that gives it, and where */
  int64_t v = 0;
  int names = -1; /* a buffer whose len names it, without its axes */
  for (int b = 0; b < in->nparams; b++) {
    const hk_param_info_t *p = &in->params[b];
    if (p->role != HK_ROLE_IN && p->role != HK_ROLE_INOUT) continue;
    factor f[HK_MAX_DIMS];
    int nf = factors(in, p->len, f), hits = 0;
    for (int d = 0; d < nf; d++) hits += f[d].param == param;
    if (!hits) continue;
    const hk_array_t *a = &args[b];
    if (a->ndim != nf) {
      if (names < 0) names = b;
      continue;
    }
    for (int d = 0; d < nf; d++) {
      if (f[d].param != param) continue;
      if (from < 0) {
        from = b, axis = d, v = a->shape[d];
        continue;
      }
      if (a->shape[d] == v) continue;
      char s1[96], s2[96];
      return hk__fail(HK_EINVAL,
                      "%s: scalar '%s' is %lld by axis %d of %s %s (len %s), "
                      "but %lld by axis %d of %s %s (len %s)",
                      in->name, name, (long long)v, axis,
                      in->params[from].name,
                      shape_text(&args[from], s1, sizeof s1),
                      in->params[from].len, (long long)a->shape[d], d, p->name,
                      shape_text(a, s2, sizeof s2), p->len);
    }
  }
  if (from < 0 && names >= 0) {
    const hk_param_info_t *p = &in->params[names];
    factor f[HK_MAX_DIMS];
    int nf = factors(in, p->len, f);
    return hk__fail(HK_EINVAL,
                    "%s: missing scalar '%s' (%s): give its value, or give %s "
                    "with one axis per factor of its len, %s (%d axes; it "
                    "has %d)",
                    in->name, name, hk_dtype_name(in->params[param].dtype),
                    p->name, p->len, nf, args[names].ndim);
  }
  if (from < 0)
    return hk__fail(HK_ENOTFOUND, "%s: no in or inout buffer's len names "
                    "scalar '%s': its value must be given", in->name, name);
  *value = v;
  return HK_OK;
}
