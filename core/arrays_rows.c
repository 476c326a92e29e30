/* arrays_rows.c — hk_call_arrays for rows kernels (hk.h, "Arrays"): the
 * last axis is the row (or the one opts->axes names, moved last in views),
 * rows is the product of the other axes.
 *
 * The lead array is the first "full" in (or inout) parameter's, else the
 * first "full" out's: shape (..., n). Every "full" array has that shape,
 * every "one" array (...) or (..., 1), every "shared" array (n). The call
 * is then hk__call_rows_cpu (or hk__call_rows_cuda for device arrays) over
 * contiguous data: an array that is not contiguous in C order is copied
 * into a contiguous buffer first (and written arrays copied back after),
 * so a strided view gives the bits of its contiguous copy.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda.h"
#include "internal.h"
#include "registry.h"

static int is_buf(const hk_kernel_info_t *in, int i) {
  return in->params[i].role != HK_ROLE_SCALAR;
}
static int is_written(const hk_kernel_info_t *in, int i) {
  return in->params[i].role == HK_ROLE_OUT ||
         in->params[i].role == HK_ROLE_INOUT;
}

/* "(3, 4)" into buf. */
static const char *shape_str(int nd, const int64_t *shape, char *buf,
                             size_t len) {
  size_t o = (size_t)snprintf(buf, len, "(");
  for (int d = 0; d < nd && o < len; d++)
    o += (size_t)snprintf(buf + o, len - o, d ? ", %lld" : "%lld",
                          (long long)shape[d]);
  if (o < len) snprintf(buf + o, len - o, nd == 1 ? ",)" : ")");
  return buf;
}

/* The lead array: the first full in/inout parameter, else the first full
 * out; -1 when there is none. */
static int lead_of(const hk_kernel_info_t *in) {
  int out = -1;
  for (int i = 0; i < in->nparams; i++) {
    const hk_param_info_t *p = &in->params[i];
    if (p->role == HK_ROLE_SCALAR || p->row != HK_ROW_FULL) continue;
    if (p->role != HK_ROLE_OUT) return i;
    if (out < 0) out = i;
  }
  return out;
}

/* The shape parameter i must have, given the lead shape (ld dims) whose
 * rows run along axis: into *nd and shape; with alt, the other shape a
 * "one" parameter may have (the lead's with the axis as 1: keepdims). */
static void want_shape(const hk_kernel_info_t *in, int i, int ld,
                       const int64_t *lead, int axis, int alt, int *nd,
                       int64_t *shape) {
  *nd = 0;
  switch (in->params[i].row) {
    case HK_ROW_FULL:
      *nd = ld;
      memcpy(shape, lead, sizeof(int64_t) * (size_t)ld);
      return;
    case HK_ROW_ONE:
      *nd = alt ? ld : ld - 1;
      for (int d = 0, o = 0; d < ld; d++)
        if (d != axis) shape[o++] = lead[d];
        else if (alt) shape[o++] = 1;
      return;
    case HK_ROW_SHARED:
      *nd = 1;
      shape[0] = lead[axis];
      return;
  }
}

/* The axis the rows run along, from opts (default the last of the lead's
 * ld axes), as an index; -1 with the error set. */
static int rows_axis(const hk_kernel_info_t *in, const hk_call_opts_t *opts,
                     int lead, int ld) {
  if (opts && opts->keepdims)
    return hk__fail(HK_EINVAL, "%s: a rows kernel takes no keepdims (a "
                               "\"one\" parameter may have the kept axis: "
                               "give it that shape)",
                    in->name), -1;
  if (!opts || (!opts->axes && !opts->naxes)) return ld - 1;
  if (opts->naxes != 1 || !opts->axes)
    return hk__fail(HK_EINVAL, "%s: a rows kernel takes one axis, the one "
                               "its rows run along; got %d",
                    in->name, opts->naxes), -1;
  int ax = opts->axes[0];
  if (ax < -ld || ax >= ld)
    return hk__fail(HK_EINVAL, "%s: axis %d is out of range for parameter "
                               "'%s' of %d axes",
                    in->name, ax, in->params[lead].name, ld), -1;
  return ax < 0 ? ax + ld : ax;
}

/* a with axis moved to the end (a view: shape and strides permuted). */
static void move_to_last(hk_array_t *a, int axis) {
  int64_t sh = a->shape[axis], st = a->strides[axis];
  for (int d = axis; d < a->ndim - 1; d++) {
    a->shape[d] = a->shape[d + 1];
    a->strides[d] = a->strides[d + 1];
  }
  a->shape[a->ndim - 1] = sh;
  a->strides[a->ndim - 1] = st;
}

static int same_shape(const hk_array_t *a, int nd, const int64_t *shape) {
  return a->ndim == nd &&
         !memcmp(a->shape, shape, sizeof(int64_t) * (size_t)nd);
}

/* The lead array's 0-d refusal; HK_OK when it has an axis. */
static int check_lead(const hk_kernel_info_t *in, const hk_array_t *a,
                      int lead) {
  if (a[lead].ndim >= 1) return HK_OK;
  return hk__fail(HK_EINVAL,
                  "%s: parameter '%s': a rows kernel takes arrays of at "
                  "least one axis (the row); this one is 0-d",
                  in->name, in->params[lead].name);
}

/* Checks every buffer's shape against the lead's, whose rows run along
 * axis; HK_OK, or HK_EINVAL naming the parameter and both shapes (last
 * error set). */
static int check_shapes(const hk_kernel_info_t *in, const hk_array_t *a,
                        int lead, int axis) {
  const hk_array_t *L = &a[lead];
  for (int i = 0; i < in->nparams; i++) {
    if (!is_buf(in, i)) continue;
    int nd, nd2;
    int64_t s[HK_MAX_DIMS], s2[HK_MAX_DIMS];
    want_shape(in, i, L->ndim, L->shape, axis, 0, &nd, s);
    if (same_shape(&a[i], nd, s)) continue;
    int one = in->params[i].row == HK_ROW_ONE;
    if (one) {
      want_shape(in, i, L->ndim, L->shape, axis, 1, &nd2, s2);
      if (same_shape(&a[i], nd2, s2)) continue;
    }
    char got[128], want[128], want2[128], lt[128], along[48] = "";
    shape_str(a[i].ndim, a[i].shape, got, sizeof got);
    shape_str(nd, s, want, sizeof want);
    shape_str(L->ndim, L->shape, lt, sizeof lt);
    if (one) shape_str(nd2, s2, want2, sizeof want2);
    if (axis != L->ndim - 1)
      snprintf(along, sizeof along, " along axis %d", axis);
    return hk__fail(HK_EINVAL,
                    "%s: parameter '%s': the array's shape is %s; with "
                    "parameter '%s' of shape %s (rows of %lld%s) it must be "
                    "%s%s%s",
                    in->name, in->params[i].name, got, in->params[lead].name,
                    lt, (long long)L->shape[axis], along, want,
                    one ? " or " : "", one ? want2 : "");
  }
  return HK_OK;
}

/* The bytes a's elements span ([lo, hi)); lo == hi when it is empty. */
static void span(const hk_array_t *a, uintptr_t *lo, uintptr_t *hi) {
  size_t es = hk_dtype_size(a->dtype);
  intptr_t mn = 0, mx = 0;
  for (int d = 0; d < a->ndim; d++) {
    if (a->shape[d] == 0) {
      *lo = *hi = (uintptr_t)a->data;
      return;
    }
    intptr_t s = (intptr_t)(a->shape[d] - 1) * (intptr_t)a->strides[d];
    if (s < 0) mn += s;
    else mx += s;
  }
  *lo = (uintptr_t)a->data + (uintptr_t)(mn * (intptr_t)es);
  *hi = (uintptr_t)a->data + (uintptr_t)(mx * (intptr_t)es) + es;
}

/* An out or inout array may overlap another parameter's only when it is
 * the very same array (in place). */
static int check_overlaps(const hk_kernel_info_t *in, const hk_array_t *a) {
  for (int i = 0; i < in->nparams; i++) {
    if (!is_written(in, i)) continue;
    if (!hk__array_distinct(&a[i]))
      return hk__fail(HK_EINVAL,
                      "%s: parameter '%s': its elements overlap each other "
                      "(a 0 or repeating stride): it cannot be written",
                      in->name, in->params[i].name);
    uintptr_t lo, hi;
    span(&a[i], &lo, &hi);
    for (int j = 0; j < in->nparams; j++) {
      if (j == i || !is_buf(in, j)) continue;
      uintptr_t lo2, hi2;
      span(&a[j], &lo2, &hi2);
      if (lo >= hi2 || lo2 >= hi) continue;
      /* extents meet, elements may not (a[:, :4] and a[:, 4:]) */
      if (!hk__arrays_may_share(&a[i], &a[j])) continue;
      int same = a[i].data == a[j].data && a[i].dtype == a[j].dtype &&
                 a[i].ndim == a[j].ndim &&
                 !memcmp(a[i].shape, a[j].shape,
                         sizeof(int64_t) * (size_t)a[i].ndim) &&
                 !memcmp(a[i].strides, a[j].strides,
                         sizeof(int64_t) * (size_t)a[i].ndim) &&
                 in->params[i].row == in->params[j].row;
      if (!same || is_written(in, j))
        return hk__fail(HK_EINVAL,
                        "%s: parameter '%s' overlaps parameter '%s' (an out "
                        "or inout array may only be the very same array as "
                        "an in one)",
                        in->name, in->params[i].name, in->params[j].name);
    }
  }
  return HK_OK;
}

/* Copies between a strided array and a contiguous buffer (C order):
 * to_flat gathers a into flat, else scatters flat into a. */
static void copy_strided(const hk_array_t *a, unsigned char *flat,
                         int to_flat) {
  size_t es = hk_dtype_size(a->dtype);
  int64_t idx[HK_MAX_DIMS] = {0};
  int64_t count = hk_array_size(a);
  for (int64_t k = 0; k < count; k++) {
    int64_t off = 0;
    for (int d = 0; d < a->ndim; d++) off += idx[d] * a->strides[d];
    unsigned char *el = (unsigned char *)a->data + off * (int64_t)es;
    if (to_flat)
      memcpy(flat + (size_t)k * es, el, es);
    else
      memcpy(el, flat + (size_t)k * es, es);
    for (int d = a->ndim - 1; d >= 0; d--) {
      if (++idx[d] < a->shape[d]) break;
      idx[d] = 0;
    }
  }
}

int hk__arrays_rows(const hk_kernel_t *k, const hk_array_t *args,
                    const hk_call_opts_t *opts) {
  const hk_kernel_info_t *in = atomic_load(&k->info);
  HK_ASSERT(in->kind == HK_KIND_ROWS && in->nparams <= HK__ARRAYS_MAX_ARGS);
  int lead = lead_of(in), rc;
  if (lead < 0)
    return hk__fail(HK_EINVAL, "%s: no \"full\" parameter gives the rows' "
                               "length", in->name);
  if ((rc = check_lead(in, args, lead))) return rc;
  const int ld = args[lead].ndim, axis = rows_axis(in, opts, lead, ld);
  if (axis < 0) return HK_EINVAL;
  if ((rc = check_shapes(in, args, lead, axis)) ||
      (rc = check_overlaps(in, args)))
    return rc;
  /* rows along another axis than the last: views with it moved last (a
   * "one" array given with the kept axis too), as if the call were over
   * those */
  hk_array_t moved[HK__ARRAYS_MAX_ARGS];
  const hk_array_t *a = args;
  if (axis != ld - 1) {
    memcpy(moved, args, sizeof *moved * (size_t)in->nparams);
    for (int i = 0; i < in->nparams; i++)
      if (is_buf(in, i) && in->params[i].row != HK_ROW_SHARED &&
          moved[i].ndim == ld)
        move_to_last(&moved[i], axis);
    a = moved;
  }
  const hk_array_t *L = &a[lead];
  size_t n = (size_t)L->shape[L->ndim - 1], rows = 1;
  for (int d = 0; d + 1 < L->ndim; d++) rows *= (size_t)L->shape[d];

  hk_backend_t be = opts ? opts->backend : HK_BACKEND_AUTO;
  int gpu = be == HK_BACKEND_CUDA;
  if (be == HK_BACKEND_AUTO &&
      atomic_load_explicit(&hk__cuda_started, memory_order_relaxed))
    for (int i = 0; i < in->nparams; i++)
      gpu |= is_buf(in, i) && hk_mem_where(a[i].data) == HK_MEM_DEVICE;

  void *ptrs[HK__ARRAYS_MAX_ARGS];
  unsigned char *copies[HK__ARRAYS_MAX_ARGS] = {NULL};
  void *dev_copies[HK__ARRAYS_MAX_ARGS] = {NULL};
  for (int i = 0; i < in->nparams; i++) {
    ptrs[i] = a[i].data;
    if (!is_buf(in, i) || hk__array_contiguous(&a[i])) continue;
    size_t bytes = (size_t)hk_array_size(&a[i]) * hk_dtype_size(a[i].dtype);
    if (gpu) { /* a contiguous run in device memory, by the GPU's copy */
      if ((rc = hk_cuda_init())) goto done; /* no device: why */
      if (hk_mem_where(a[i].data) != HK_MEM_DEVICE) {
        rc = hk__fail(HK_EINVAL,
                      "%s: parameter '%s': the array is in host memory, and "
                      "the call runs on the GPU: give device memory",
                      in->name, in->params[i].name);
        goto done;
      }
      void *run = NULL;
      if ((rc = hk_device_alloc(&run, bytes))) goto done;
      dev_copies[i] = run;
      ptrs[i] = run;
      if (in->params[i].role != HK_ROLE_OUT &&
          (rc = hk__cuda_copy_strided(run, a[i].data,
                                      hk_dtype_size(a[i].dtype), a[i].ndim,
                                      a[i].shape, a[i].strides, 0,
                                      (size_t)hk_array_size(&a[i]))))
        goto done;
      continue;
    }
    if (!(copies[i] = malloc(bytes ? bytes : 1))) {
      rc = hk__fail(HK_ENOMEM, "%s: out of memory", in->name);
      goto done;
    }
    if (in->params[i].role != HK_ROLE_OUT) copy_strided(&a[i], copies[i], 1);
    ptrs[i] = copies[i];
  }
  rc = gpu ? hk__call_rows_cuda(k, NULL, rows, n, ptrs)
           : hk__call_rows_cpu(k, rows, n, ptrs);
  if (rc == HK_OK)
    for (int i = 0; i < in->nparams; i++) {
      if (copies[i] && is_written(in, i)) copy_strided(&a[i], copies[i], 0);
      if (dev_copies[i] && is_written(in, i) && rc == HK_OK)
        rc = hk__cuda_copy_strided(a[i].data, dev_copies[i],
                                   hk_dtype_size(a[i].dtype), a[i].ndim,
                                   a[i].shape, a[i].strides, 1,
                                   (size_t)hk_array_size(&a[i]));
    }
done:
  for (int i = 0; i < in->nparams; i++) free(copies[i]);
  for (int i = 0; i < in->nparams; i++)
    if (dev_copies[i]) {
      /* the copies queued must be done before their runs are reused */
      int src = hk__cuda_sync_default(in->name);
      if (rc == HK_OK) rc = src;
      break;
    }
  for (int i = 0; i < in->nparams; i++)
    if (dev_copies[i]) hk_device_free(dev_copies[i]);
  return rc;
}

int hk__arrays_rows_shape(const hk_kernel_t *k, const hk_array_t *a,
                          const hk_call_opts_t *opts, int param, int *ndim,
                          int64_t *shape) {
  const hk_kernel_info_t *in = atomic_load(&k->info);
  int lead = lead_of(in), rc;
  if (lead < 0 || is_written(in, lead))
    return hk__fail(HK_EINVAL,
                    "%s: no \"full\" in parameter gives the rows' shape",
                    in->name);
  if ((rc = check_lead(in, a, lead))) return rc;
  const int axis = rows_axis(in, opts, lead, a[lead].ndim);
  if (axis < 0) return HK_EINVAL;
  want_shape(in, param, a[lead].ndim, a[lead].shape, axis, 0, ndim, shape);
  return HK_OK;
}
