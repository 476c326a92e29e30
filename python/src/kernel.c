/* kernel.c — _hk.Kernel: a kernel name in a context (all its instances,
 * add_f32, add_f64 ...) and its call, NumPy style.
 *
 * A call binds the arguments to the parameters (in, inout and scalar ones
 * by position, out ones after them or by keyword; out= for the only out
 * parameter), makes each into an hk_array_t (convert.c), picks the
 * instance from the arrays' dtypes (hk_kernel_select, its answer cached per
 * dtype signature: the cached path is a few compares), allocates the out
 * arrays not given (hk_call_out_shape: NumPy arrays, or hk.Arrays in GPU
 * memory for a GPU call) and runs hk_call_arrays, without the
 * GIL from hkpy_gil_min elements. The hot path is vectorcall end to end:
 * no tuple, no dict, no Python frame. */
#include "hkpy.h"

#include <limits.h>
#include <string.h>

#define NCACHE 8

typedef struct {
  hk_kernel_t *k;
  hk_dtype_t dtype[HKPY_MAXP];
} instance;

typedef struct {
  hk_dtype_t key[HKPY_MAXP + 1]; /* given dtypes (INVALID: none), dtype= */
  hk_kernel_t *k;
} cache_entry;

typedef struct {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  hkpy_Context *ctx;
  PyObject *name;
  char cname[128];
  unsigned long gen; /* the context's generation the instances are of */
  hk_kind_t kind;
  int nparams, nout, out_param; /* out_param: out= goes there (-1: tuple) */
  hk_role_t role[HKPY_MAXP];
  hk_row_t row[HKPY_MAXP];
  PyObject *pname[HKPY_MAXP];
  const char *cpname[HKPY_MAXP];
  int order[HKPY_MAXP]; /* positional order: non-out params, then outs */
  int ninst;
  instance *inst;
  cache_entry cache[NCACHE];
  int ncache, next;
  hk_kernel_t *last;
  PyObject *weak;
} hkpy_Kernel;

/* ---- instances ------------------------------------------------------------ */

/* Whether kname is base itself or base_T1_T2... with hk dtype names. */
static int is_instance(const char *kname, const char *base) {
  size_t bl = strlen(base);
  if (strncmp(kname, base, bl)) return 0;
  const char *p = kname + bl;
  if (!*p) return 1;
  if (*p != '_') return 0;
  while (*p == '_') {
    p++;
    size_t m = strcspn(p, "_");
    char t[8];
    if (m == 0 || m >= sizeof t) return 0;
    memcpy(t, p, m);
    t[m] = 0;
    if (hk_dtype_from_name(t) == HK_DTYPE_INVALID) return 0;
    p += m;
  }
  return *p == 0;
}

typedef struct {
  hkpy_Kernel *K;
  int n, cap, err;
} gather_state;

static int gather_fn(hk_kernel_t *k, void *user) {
  gather_state *s = user;
  hkpy_Kernel *K = s->K;
  const hk_kernel_info_t *in = hk_kernel_info(k);
  if (!is_instance(in->name, K->cname)) return 0;
  if (s->n == 0) {
    if (in->nparams > HKPY_MAXP) {
      s->err = 1;
      return 1;
    }
    K->nparams = in->nparams;
    K->kind = in->kind;
    for (int p = 0; p < in->nparams; p++) {
      K->role[p] = in->params[p].role;
      K->row[p] = in->params[p].row;
    }
  } else {
    if (in->nparams != K->nparams || in->kind != K->kind) return 0;
    for (int p = 0; p < in->nparams; p++)
      if (in->params[p].role != K->role[p]) return 0;
  }
  if (s->n == s->cap) {
    int cap = s->cap ? 2 * s->cap : 8;
    instance *v = PyMem_Realloc(K->inst, (size_t)cap * sizeof *v);
    if (!v) {
      s->err = 2;
      return 1;
    }
    K->inst = v;
    s->cap = cap;
  }
  instance *ins = &K->inst[s->n++];
  ins->k = k;
  for (int p = 0; p < in->nparams; p++) ins->dtype[p] = in->params[p].dtype;
  return 0;
}

/* (Re)reads the kernel's instances from its context. */
static int gather(hkpy_Kernel *K) {
  hk_context_t *c = hkpy_context_get(K->ctx);
  if (!c) return -1;
  gather_state s = {.K = K};
  hk_kernel_foreach(c, gather_fn, &s);
  K->ninst = s.n;
  K->ncache = K->next = 0;
  K->last = NULL;
  K->gen = K->ctx->gen;
  if (s.err == 1) {
    PyErr_Format(PyExc_ValueError, "%s: more than %d parameters", K->cname,
                 HKPY_MAXP);
    return -1;
  }
  if (s.err == 2) {
    PyErr_NoMemory();
    return -1;
  }
  if (s.n == 0) {
    char msg[300];
    snprintf(msg, sizeof msg, "no kernel named %s (nor %s_TYPE)", K->cname,
             K->cname);
    hkpy_raise(HK_ENOTFOUND, msg);
    return -1;
  }
  /* the first instance names the parameters */
  const hk_kernel_info_t *in = hk_kernel_info(K->inst[0].k);
  int j = 0;
  K->nout = 0;
  K->out_param = -1;
  for (int p = 0; p < K->nparams; p++) {
    Py_XSETREF(K->pname[p], PyUnicode_InternFromString(in->params[p].name));
    if (!K->pname[p]) return -1;
    K->cpname[p] = PyUnicode_AsUTF8(K->pname[p]);
    if (K->role[p] != HK_ROLE_OUT) K->order[j++] = p;
  }
  for (int p = 0; p < K->nparams; p++)
    if (K->role[p] == HK_ROLE_OUT) {
      K->order[j++] = p;
      K->nout++;
      K->out_param = p;
    }
  if (K->nout != 1) K->out_param = -1;
  return 0;
}

/* ---- the type ------------------------------------------------------------- */

static PyObject *kernel_vectorcall(PyObject *self, PyObject *const *args,
                                   size_t nargsf, PyObject *kwnames);

static int kernel_init(hkpy_Kernel *self, PyObject *args, PyObject *kw) {
  static char *names[] = {"context", "name", NULL};
  hkpy_Context *ctx;
  PyObject *name;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O!U", names, &hkpy_ContextType,
                                   &ctx, &name))
    return -1;
  Py_ssize_t len;
  const char *cn = PyUnicode_AsUTF8AndSize(name, &len);
  if (!cn) return -1;
  if ((size_t)len >= sizeof self->cname) {
    PyErr_SetString(PyExc_ValueError, "kernel name too long");
    return -1;
  }
  memcpy(self->cname, cn, (size_t)len + 1);
  Py_INCREF(ctx);
  Py_XSETREF(self->ctx, ctx);
  Py_INCREF(name);
  Py_XSETREF(self->name, name);
  return gather(self);
}

static PyObject *kernel_new(PyTypeObject *t, PyObject *a, PyObject *kw) {
  hkpy_Kernel *self = (hkpy_Kernel *)PyType_GenericNew(t, a, kw);
  if (self) self->vectorcall = kernel_vectorcall;
  return (PyObject *)self;
}

static void kernel_dealloc(hkpy_Kernel *self) {
  if (self->weak) PyObject_ClearWeakRefs((PyObject *)self);
  for (int p = 0; p < HKPY_MAXP; p++) Py_XDECREF(self->pname[p]);
  PyMem_Free(self->inst);
  Py_XDECREF(self->ctx);
  Py_XDECREF(self->name);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

/* ---- picking the instance ----------------------------------------------- */

/* Whether instance ins takes the given dtypes (a uint16 array is u16, an
 * hk.bfloat16 one bf16: never one for the other). */
static int takes(const hkpy_Kernel *K, const instance *ins,
                 const hk_dtype_t *key) {
  for (int p = 0; p < K->nparams; p++) {
    hk_dtype_t g = key[p];
    if (g != HK_DTYPE_INVALID && g != ins->dtype[p]) return 0;
  }
  hk_dtype_t want = key[K->nparams];
  if (want != HK_DTYPE_INVALID)
    for (int p = 0; p < K->nparams; p++)
      if (K->role[p] == HK_ROLE_OUT && key[p] == HK_DTYPE_INVALID &&
          ins->dtype[p] != want)
        return 0;
  return 1;
}

/* Raises the error for dtypes no instance takes together, naming the
 * parameter where the instance that takes the longest run of them stops
 * (hk_kernel_select names a parameter only when no instance takes its
 * dtype at all), and the dtypes it may have there. */
static hk_kernel_t *no_instance(hkpy_Kernel *K, const hk_dtype_t *key) {
  int stop = -1;
  for (int i = 0; i < K->ninst; i++) {
    int p = 0;
    while (p < K->nparams && (key[p] == HK_DTYPE_INVALID ||
                              key[p] == K->inst[i].dtype[p]))
      p++;
    if (p > stop) stop = p;
  }
  char names[512] = "";
  for (int i = 0; i < K->ninst; i++) {
    size_t o = strlen(names);
    snprintf(names + o, sizeof names - o, "%s%s", i ? ", " : "",
             hk_kernel_info(K->inst[i].k)->name);
  }
  char msg[1024];
  if (stop < K->nparams) {
    int prev = -1;
    for (int p = 0; p < stop; p++)
      if (key[p] != HK_DTYPE_INVALID) prev = p;
    char with[160] = "";
    if (prev >= 0)
      snprintf(with, sizeof with, " with '%s' %s", K->cpname[prev],
               hk_dtype_name(key[prev]));
    /* the dtypes it may have with the parameters before it: those of the
     * instances that take those, each once, in the instances' order */
    char types[256] = "";
    unsigned seen = 0;
    int ntypes = 0;
    for (int i = 0; i < K->ninst; i++) {
      int p = 0;
      while (p < stop && (key[p] == HK_DTYPE_INVALID ||
                          key[p] == K->inst[i].dtype[p]))
        p++;
      const hk_dtype_t t = K->inst[i].dtype[stop];
      if (p < stop || (seen >> t & 1)) continue;
      seen |= 1u << t;
      size_t o = strlen(types);
      snprintf(types + o, sizeof types - o, "%s%s", ntypes++ ? ", " : "",
               hk_dtype_name(t));
    }
    snprintf(msg, sizeof msg, "%s: parameter '%s' is %s%s: no instance "
             "takes that ('%s' may be %s%s; arrays are never converted)%s",
             K->cname, K->cpname[stop], hk_dtype_name(key[stop]), with,
             K->cpname[stop], ntypes > 1 ? "one of " : "", types,
             key[stop] == HK_U16 && (seen >> HK_BF16 & 1)
                 ? ". A uint16 array is u16; for bf16 bits, view it as "
                   "hk.bfloat16 (x.view(hk.bfloat16))"
                 : "");
  } else {
    snprintf(msg, sizeof msg, "%s: no instance has out type %s (dtype=) for "
             "these arguments (instances: %s)", K->cname,
             hk_dtype_name(key[K->nparams]), names);
  }
  (void)names;
  hkpy_raise(HK_EINVAL, msg);
  return NULL;
}

/* The instance for the dtype signature key (see cache_entry); NULL with an
 * exception naming the parameter. */
static hk_kernel_t *pick_slow(hkpy_Kernel *K, const hk_dtype_t *key) {
  int hit = -1, nhit = 0;
  for (int i = 0; i < K->ninst; i++)
    if (takes(K, &K->inst[i], key)) {
      if (nhit == 0) hit = i;
      nhit++;
    }
  if (nhit == 0) return no_instance(K, key);
  hk_array_t a[HKPY_MAXP];
  memset(a, 0, sizeof a);
  const instance *ins = &K->inst[hit];
  for (int p = 0; p < K->nparams; p++) {
    if (nhit > 1 && key[p] == HK_DTYPE_INVALID)
      for (int i = hit + 1; i < K->ninst; i++)
        if (takes(K, &K->inst[i], key) &&
            K->inst[i].dtype[p] != ins->dtype[p]) {
          /* every type it could have, each once, in the instances' order */
          char types[256] = "";
          unsigned seen = 0;
          for (int j = 0, nt = 0; j < K->ninst; j++) {
            const hk_dtype_t t = K->inst[j].dtype[p];
            if (!takes(K, &K->inst[j], key) || (seen >> t & 1)) continue;
            seen |= 1u << t;
            size_t o = strlen(types);
            snprintf(types + o, sizeof types - o, "%s%s", nt++ ? ", " : "",
                     hk_dtype_name(t));
          }
          PyErr_Format(PyExc_TypeError,
                       "%s: cannot tell the type of parameter '%s' from the "
                       "arguments (it may be %s): pass arrays for it%s",
                       K->cname, K->cpname[p], types,
                       K->role[p] == HK_ROLE_OUT ? ", or dtype=" : "");
          return NULL;
        }
    a[p].dtype = key[p] == HK_DTYPE_INVALID ? ins->dtype[p] : key[p];
  }
  hk_context_t *c = hkpy_context_get(K->ctx);
  if (!c) return NULL;
  hk_kernel_t *k;
  int rc = hk_kernel_select(c, K->cname, a, K->nparams, &k);
  if (rc != HK_OK) {
    hkpy_raise(rc, NULL);
    return NULL;
  }
  cache_entry *e = &K->cache[K->next];
  K->next = (K->next + 1) % NCACHE;
  if (K->ncache < NCACHE) K->ncache++;
  memcpy(e->key, key, sizeof e->key);
  e->k = k;
  return k;
}

static inline hk_kernel_t *pick(hkpy_Kernel *K, const hk_dtype_t *key) {
  size_t bytes = (size_t)(K->nparams + 1) * sizeof *key;
  for (int i = 0; i < K->ncache; i++)
    if (!memcmp(K->cache[i].key, key, bytes)) return K->cache[i].k;
  return pick_slow(K, key);
}

/* ---- the call -------------------------------------------------------------- */

typedef struct {
  int axes[HK_MAX_DIMS];
  hk_call_opts_t opts;
  PyObject *axis;   /* borrowed; NULL when not given */
  hk_dtype_t dtype; /* dtype=; HK_DTYPE_INVALID when not given */
} call_kw;

static int bind_kw(hkpy_Kernel *K, PyObject *name, PyObject *value,
                   PyObject **slot, call_kw *kw) {
  for (int p = 0; p < K->nparams; p++)
    if (name == K->pname[p] || PyUnicode_Compare(name, K->pname[p]) == 0) {
      if (slot[p]) {
        PyErr_Format(PyExc_TypeError, "%s: parameter '%s' given twice",
                     K->cname, K->cpname[p]);
        return -1;
      }
      slot[p] = value;
      return 0;
    }
  const char *n = PyUnicode_AsUTF8(name);
  if (!n) return -1;
  if (!strcmp(n, "out") && K->nout > 0) {
    if (K->out_param >= 0) {
      if (slot[K->out_param]) goto twice;
      slot[K->out_param] = value == Py_None ? NULL : value;
      return 0;
    }
    if (value == Py_None) return 0;
    if (!PyTuple_Check(value) || PyTuple_GET_SIZE(value) != K->nout) {
      PyErr_Format(PyExc_TypeError, "%s: out= must be a tuple of %d arrays",
                   K->cname, K->nout);
      return -1;
    }
    int j = 0;
    for (int p = 0; p < K->nparams; p++)
      if (K->role[p] == HK_ROLE_OUT) {
        if (slot[p]) goto twice;
        PyObject *o = PyTuple_GET_ITEM(value, j++);
        slot[p] = o == Py_None ? NULL : o;
      }
    return 0;
  }
  if (!strcmp(n, "axis") &&
      (K->kind == HK_KIND_REDUCTION || K->kind == HK_KIND_ROWS)) {
    if (value == Py_None && K->kind == HK_KIND_ROWS) {
      /* NumPy's and SciPy's axis=None is the whole array; a rows kernel
       * runs over one axis: saying which is the caller's */
      PyErr_Format(PyExc_TypeError,
                   "%s: axis=None is not taken: a rows kernel runs over one "
                   "axis (-1, the last, by default); for the whole array as "
                   "one row, pass x.reshape(1, -1)",
                   K->cname);
      return -1;
    }
    kw->axis = value == Py_None ? NULL : value;
    return 0;
  }
  if (!strcmp(n, "keepdims") && K->kind == HK_KIND_REDUCTION) {
    int b = PyObject_IsTrue(value);
    if (b < 0) return -1;
    kw->opts.keepdims = b;
    return 0;
  }
  if (!strcmp(n, "dtype") && K->nout > 0) {
    if (value == Py_None) return 0;
    return hkpy_dtype_arg(value, &kw->dtype);
  }
  PyErr_Format(PyExc_TypeError, "%s: unexpected keyword argument '%s'",
               K->cname, n);
  return -1;
twice:
  PyErr_Format(PyExc_TypeError, "%s: an out parameter given twice",
               K->cname);
  return -1;
}

/* Whether g is an array by now: given as one, or a list made into one
 * (hkpy_arg_finish), not a Python value. */
static int is_array(const hkpy_arg *g) {
  return g->obj && g->where != HKPY_NONE;
}

/* One axis o of an input of nd axes (-1: not known, any int), into *out
 * (a C int: hk.h's type), checked as NumPy does: an int, not a bool, in
 * -nd..nd-1; one too large for a C int is out of range too, never cut to
 * fit. Out of range is hk.ArgumentError, in hk's words. 0, or -1 with an
 * exception. */
static int axis_value(const char *kname, PyObject *o, int nd, int *out,
                      const char *want) {
  PyObject *i = PyBool_Check(o) ? NULL : PyNumber_Index(o);
  if (!i) {
    PyErr_Clear();
    PyErr_Format(PyExc_TypeError, "%s: axis must be %s: got %.80s", kname,
                 want, Py_TYPE(o)->tp_name);
    return -1;
  }
  int over = 0;
  long long v = PyLong_AsLongLongAndOverflow(i, &over);
  long long lo = nd < 0 ? INT_MIN : -nd, hi = nd < 0 ? INT_MAX : nd - 1;
  if (!over && v >= lo && v <= hi) {
    Py_DECREF(i);
    *out = (int)v;
    return 0;
  }
  /* the axis as text, cut: 10**400 need not be printed whole */
  PyObject *str = PyObject_Str(i);
  Py_DECREF(i);
  const char *txt = str ? PyUnicode_AsUTF8(str) : NULL;
  if (!txt) {
    Py_XDECREF(str);
    return -1;
  }
  const char *cut = strlen(txt) > 40 ? "..." : "";
  char msg[300];
  if (nd == 0)
    snprintf(msg, sizeof msg, "%s: axis %.40s%s is out of range: the input "
             "is 0-d (one value), with no axis", kname, txt, cut);
  else if (nd < 0)
    snprintf(msg, sizeof msg, "%s: axis %.40s%s is out of range", kname,
             txt, cut);
  else
    snprintf(msg, sizeof msg, "%s: axis %.40s%s is out of range for an "
             "input of %d axes (allowed: %d to %d)", kname, txt, cut, nd,
             -nd, nd - 1);
  Py_DECREF(str);
  hkpy_raise(HK_EINVAL, msg);
  return -1;
}

/* Reads axis= of a reduction into kw->opts; k is the instance picked (its
 * name in messages), the axes those of the in arrays broadcast (hk's
 * rule: the most any of them has). */
static int reduction_axes(hkpy_Kernel *K, hk_kernel_t *k, hkpy_arg *g,
                          call_kw *kw) {
  if (!kw->axis) return 0;
  const char *kname = hk_kernel_info(k)->name;
  int nd = 0;
  for (int p = 0; p < K->nparams; p++)
    if (K->role[p] == HK_ROLE_IN && is_array(&g[p]) && g[p].a.ndim > nd)
      nd = g[p].a.ndim;
  PyObject *seq = PyTuple_Check(kw->axis) || PyList_Check(kw->axis)
                      ? kw->axis : NULL;
  Py_ssize_t n = seq ? PySequence_Fast_GET_SIZE(seq) : 1;
  if (n > HK_MAX_DIMS) {
    PyErr_Format(PyExc_ValueError, "%s: more than %d axes", K->cname,
                 HK_MAX_DIMS);
    return -1;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *o = seq ? PySequence_Fast_GET_ITEM(seq, i) : kw->axis;
    if (axis_value(kname, o, nd, &kw->axes[i], "an int or a tuple of ints"))
      return -1;
  }
  kw->opts.axes = kw->axes;
  kw->opts.naxes = (int)n;
  return 0;
}

/* Reads axis= of a rows kernel (the axis its rows run along; hk_call_arrays
 * takes it) into kw->opts: 0, or -1 with an exception. */
static int rows_axis(hkpy_Kernel *K, call_kw *kw, hkpy_arg *g) {
  if (!kw->axis) return 0;
  int nd = -1;
  for (int p = 0; p < K->nparams && nd < 0; p++)
    if (K->role[p] != HK_ROLE_SCALAR && K->row[p] == HK_ROW_FULL &&
        is_array(&g[p]))
      nd = g[p].a.ndim;
  /* no array to run over (a value): the axis is only checked to be an
   * int, and hk_call_arrays refuses the call for its 0-d lead */
  if (axis_value(K->cname, kw->axis, nd > 0 ? nd : -1, &kw->axes[0],
                 "an int"))
    return -1;
  if (nd > 0) {
    kw->opts.axes = kw->axes;
    kw->opts.naxes = 1;
  }
  return 0;
}

/* Allocates out parameter p (not given): a NumPy array, or for a call on
 * the GPU an hk.Array in GPU memory (hk's pool). */
static int alloc_out(hkpy_Kernel *K, hk_kernel_t *k, hkpy_arg *g,
                     const hk_call_opts_t *opts, int p, int device) {
  int nd;
  int64_t shape[HK_MAX_DIMS];
  hk_array_t a[HKPY_MAXP];
  for (int i = 0; i < K->nparams; i++) a[i] = g[i].a;
  int rc = hk_call_out_shape(k, a, opts, p, &nd, shape);
  if (rc != HK_OK) {
    hkpy_raise(rc, NULL);
    return -1;
  }
  npy_intp dims[HK_MAX_DIMS];
  for (int d = 0; d < nd; d++) dims[d] = shape[d];
  hk_dtype_t t = hk_kernel_info(k)->params[p].dtype;
  if (device) {
    PyObject *shp = PyTuple_New(nd), *arr = NULL;
    for (int d = 0; shp && d < nd; d++) {
      PyObject *v = PyLong_FromSsize_t(dims[d]);
      if (!v) Py_CLEAR(shp);
      else PyTuple_SET_ITEM(shp, d, v);
    }
    PyObject *dt = PyUnicode_FromString(hk_dtype_name(t));
    if (shp && dt) arr = hkpy_array_empty(shp, dt, "cuda");
    Py_XDECREF(shp);
    Py_XDECREF(dt);
    if (!arr) return -1;
    g[p].a = *hkpy_array_desc(arr);
    g[p].arr = arr;
    g[p].where = HKPY_DEVICE;
    g[p].via = "hk.Array";
  } else {
    PyObject *arr = hkpy_new_ndarray(nd, dims, t);
    if (!arr) return -1;
    rc = hkpy_arg_ndarray(&g[p], (PyArrayObject *)arr, K->cname,
                          K->cpname[p]);
    Py_DECREF(arr);
    if (rc) return -1;
  }
  g[p].a.dtype = t;
  g[p].obj = NULL; /* allocated here: returned from g->arr */
  return 0;
}

/* A call's arrays all on one side: names the first host and the first
 * device parameter when both exist; on the GPU, starts the CUDA backend
 * (hk_cuda_init recognises pointers allocated outside hk from then on).
 * 1 for a GPU call, 0 for the CPU, -1 with an exception. */
static int check_sides(hkpy_Kernel *K, hkpy_arg *g) {
  int host = -1, dev = -1, val = -1;
  for (int p = 0; p < K->nparams; p++) {
    if (!g[p].obj || K->role[p] == HK_ROLE_SCALAR) continue;
    if (g[p].value && val < 0) val = p;
    if (g[p].where == HKPY_HOST && host < 0) host = p;
    if (g[p].where == HKPY_DEVICE && dev < 0) dev = p;
  }
  if (dev >= 0 && host >= 0) {
    PyErr_Format(PyExc_ValueError, "%s: parameters '%s' (host memory, %s) "
                 "and '%s' (GPU memory, %s) are on different devices: a call "
                 "runs where all its arrays live", K->cname, K->cpname[host],
                 g[host].via, K->cpname[dev], g[dev].via);
    return -1;
  }
  if (dev >= 0 && val >= 0) {
    PyErr_Format(PyExc_ValueError, "%s: parameter '%s' is a Python value, "
                 "but the call runs on the GPU ('%s' is GPU memory): pass a "
                 "GPU array", K->cname, K->cpname[val], K->cpname[dev]);
    return -1;
  }
  if (dev >= 0) {
    int rc = hk_cuda_init();
    if (rc != HK_OK) {
      char msg[1024];
      snprintf(msg, sizeof msg, "%s: parameter '%s' is GPU memory (%s), but "
               "hk cannot use the GPU here: %s", K->cname, K->cpname[dev],
               g[dev].via, hk_last_error());
      hkpy_raise(rc, msg);
      return -1;
    }
  }
  return dev >= 0;
}

/* What a call returns: its out arrays (one, or a tuple), else its inout
 * arrays, else None. A whole reduction's 0-d result not given comes back
 * as a NumPy scalar, as NumPy's own reductions do. */
static PyObject *results(hkpy_Kernel *K, hkpy_arg *g) {
  int want = K->nout ? HK_ROLE_OUT : HK_ROLE_INOUT, n = 0;
  PyObject *r[HKPY_MAXP];
  for (int p = 0; p < K->nparams; p++) {
    if (K->role[p] != (hk_role_t)want) continue;
    PyObject *o = g[p].obj ? g[p].obj : g[p].arr;
    if (!g[p].obj && K->kind == HK_KIND_REDUCTION && PyArray_Check(o) &&
        PyArray_NDIM((PyArrayObject *)o) == 0) {
      Py_INCREF(o); /* PyArray_Return steals it */
      o = PyArray_Return((PyArrayObject *)o);
    } else {
      Py_INCREF(o);
    }
    r[n++] = o;
  }
  if (n == 0) Py_RETURN_NONE;
  if (n == 1) return r[0];
  PyObject *t = PyTuple_New(n);
  if (!t) {
    for (int i = 0; i < n; i++) Py_DECREF(r[i]);
    return NULL;
  }
  for (int i = 0; i < n; i++) PyTuple_SET_ITEM(t, i, r[i]);
  return t;
}

/* The scalars left out of a raw or grid kernel's call (g[p].obj NULL):
 * their values from the in arrays' shapes (hk_kernel_scalar_from_shapes:
 * row_sum(x) of a (3, 4) x has rows = 3, cols = 4), converted as if
 * given (made[p] holds each value object). 0, or -1 with an exception. */
static int infer_scalars(hkpy_Kernel *K, hk_kernel_t *k, hkpy_arg *g,
                         PyObject **made) {
  const hk_param_info_t *pi = hk_kernel_info(k)->params;
  hk_array_t a[HKPY_MAXP];
  for (int p = 0; p < K->nparams; p++) {
    if (g[p].obj) a[p] = g[p].a;
    else memset(&a[p], 0, sizeof a[p]);
  }
  for (int p = 0; p < K->nparams; p++) {
    if (g[p].obj || K->role[p] != HK_ROLE_SCALAR) continue;
    int64_t v = 0;
    hk_dtype_t t = pi[p].dtype;
    int integer = t != HK_F16 && t != HK_BF16 && t != HK_F32 &&
                  t != HK_F64 && t != HK_BOOL;
    int rc = integer ? hk_kernel_scalar_from_shapes(k, a, p, &v)
                     : HK_ENOTFOUND;
    if (rc == HK_ENOTFOUND) {
      PyErr_Format(PyExc_TypeError, "%s: missing argument '%s' (scalar)",
                   K->cname, K->cpname[p]);
      return -1;
    }
    if (rc != HK_OK) {
      hkpy_raise(rc, NULL);
      return -1;
    }
    if (!(made[p] = PyLong_FromLongLong((long long)v))) return -1;
    if (hkpy_arg_take(&g[p], made[p], K->cname, K->cpname[p],
                      HK_ROLE_SCALAR) ||
        hkpy_arg_finish(&g[p], t, K->cname, K->cpname[p]))
      return -1;
  }
  return 0;
}

static PyObject *call_once(hkpy_Kernel *K, PyObject *const *args,
                           Py_ssize_t nargs, PyObject *kwnames, int *stale) {
  if (!K->ctx) {
    PyErr_SetString(PyExc_TypeError, "Kernel.__init__ was not called");
    return NULL;
  }
  if (!K->ctx->ctx || K->ctx->closing)
    return hkpy_raise(HKPY_ECLOSED, "the context was closed");
  if (K->gen != K->ctx->gen && gather(K)) return NULL;
  const int np = K->nparams;
  PyObject *slot[HKPY_MAXP] = {0};
  call_kw kw = {.dtype = HK_DTYPE_INVALID};
  if (nargs > np) {
    PyErr_Format(PyExc_TypeError, "%s takes at most %d arguments (%zd given)",
                 K->cname, np, nargs);
    return NULL;
  }
  for (Py_ssize_t i = 0; i < nargs; i++) slot[K->order[i]] = args[i];
  if (kwnames) {
    Py_ssize_t nk = PyTuple_GET_SIZE(kwnames);
    for (Py_ssize_t i = 0; i < nk; i++)
      if (bind_kw(K, PyTuple_GET_ITEM(kwnames, i), args[nargs + i], slot,
                  &kw))
        return NULL;
  }
  hkpy_arg g[HKPY_MAXP];
  memset(g, 0, sizeof(hkpy_arg) * (size_t)np);
  PyObject *ret = NULL, *made[HKPY_MAXP] = {0};
  hk_dtype_t key[HKPY_MAXP + 1];
  int left_out = 0; /* scalars that the arrays' shapes may give */
  for (int p = 0; p < np; p++) {
    key[p] = HK_DTYPE_INVALID;
    if (!slot[p]) {
      if (K->role[p] == HK_ROLE_OUT) continue;
      if (K->role[p] == HK_ROLE_SCALAR &&
          (K->kind == HK_KIND_RAW || K->kind == HK_KIND_GRID)) {
        left_out = 1; /* infer_scalars, once the instance is known */
        continue;
      }
      PyErr_Format(PyExc_TypeError, "%s: missing argument '%s' (%s)",
                   K->cname, K->cpname[p], hk_role_name(K->role[p]));
      goto done;
    }
    if (hkpy_arg_take(&g[p], slot[p], K->cname, K->cpname[p], K->role[p]))
      goto done;
    if (!g[p].value) key[p] = g[p].a.dtype;
  }
  key[np] = kw.dtype;
  if (kw.dtype != HK_DTYPE_INVALID) {
    /* dtype= picks the type of an out not given: with every out given, it
     * must agree with one of them, not be dropped silently */
    int open = 0, agrees = 0, first = -1;
    for (int p = 0; p < np; p++)
      if (K->role[p] == HK_ROLE_OUT) {
        if (key[p] == HK_DTYPE_INVALID) open = 1;
        else if (key[p] == kw.dtype) agrees = 1;
        else if (first < 0) first = p;
      }
    if (!open && !agrees && first >= 0) {
      PyErr_Format(PyExc_TypeError,
                   "%s: dtype=%s, but out parameter '%s' is given as %s: "
                   "dtype= picks the type of an out not given (drop one, "
                   "or make them agree)",
                   K->cname, hk_dtype_name(kw.dtype), K->cpname[first],
                   hk_dtype_name(key[first]));
      goto done;
    }
  }
  int device = check_sides(K, g);
  if (device < 0) goto done;
  hk_kernel_t *k = pick(K, key);
  if (!k) goto done;
  K->last = k;
  const hk_param_info_t *pi = hk_kernel_info(k)->params;
  for (int p = 0; p < np; p++) {
    if (g[p].value &&
        hkpy_arg_finish(&g[p], pi[p].dtype, K->cname, K->cpname[p]))
      goto done;
  }
  if (left_out && infer_scalars(K, k, g, made)) goto done;
  if (K->kind == HK_KIND_REDUCTION && reduction_axes(K, k, g, &kw))
    goto done;
  if (K->kind == HK_KIND_ROWS && rows_axis(K, &kw, g)) goto done;
  for (int p = 0; p < np; p++)
    if (!g[p].obj && alloc_out(K, k, g, &kw.opts, p, device))
      goto done;
  hk_array_t a[HKPY_MAXP];
  int64_t big = 0;
  for (int p = 0; p < np; p++) {
    a[p] = g[p].a;
    int64_t s = hk_array_size(&a[p]);
    if (s > big) big = s;
  }
  int rc;
  K->ctx->busy++;
  if (big >= hkpy_gil_min) {
    Py_BEGIN_ALLOW_THREADS
    rc = hk_call_arrays(k, a, &kw.opts);
    Py_END_ALLOW_THREADS
  } else {
    rc = hk_call_arrays(k, a, &kw.opts);
  }
  K->ctx->busy--;
  if (rc == HK_ENOTFOUND) {
    /* unloaded by a reload (the watcher's, or another thread's): read the
     * instances again, and the caller tries once more */
    K->gen = K->ctx->gen - 1;
    *stale = 1;
  }
  if (rc != HK_OK) {
    hkpy_raise(rc, NULL);
    goto done;
  }
  ret = results(K, g);
done:
  for (int p = 0; p < np; p++) {
    hkpy_arg_release(&g[p]);
    Py_XDECREF(made[p]);
  }
  return ret;
}

static PyObject *call(hkpy_Kernel *K, PyObject *const *args, Py_ssize_t nargs,
                      PyObject *kwnames) {
  int stale = 0;
  PyObject *r = call_once(K, args, nargs, kwnames, &stale);
  if (!r && stale) {
    PyErr_Clear();
    r = call_once(K, args, nargs, kwnames, &stale);
  }
  return r;
}

static PyObject *kernel_vectorcall(PyObject *self, PyObject *const *args,
                                   size_t nargsf, PyObject *kwnames) {
  return call((hkpy_Kernel *)self, args, PyVectorcall_NARGS(nargsf),
              kwnames);
}

/* ---- attributes -------------------------------------------------------------- */

/* The kernel's instances, read again after a load or reload; -1 with an
 * exception when the context is closed (or the kernel was never made). */
static int current(hkpy_Kernel *K) {
  if (!K->ctx) {
    PyErr_SetString(PyExc_TypeError, "Kernel.__init__ was not called");
    return -1;
  }
  if (!hkpy_context_get(K->ctx)) return -1;
  return K->gen != K->ctx->gen ? gather(K) : 0;
}

static PyObject *kernel_tier(hkpy_Kernel *K, void *unused) {
  (void)unused;
  if (current(K)) return NULL;
  hk_kernel_t *k = K->last ? K->last : K->inst[0].k;
  return PyUnicode_FromString(hk_tier_name(hk_kernel_tier(k)));
}

static PyObject *kernel_instances(hkpy_Kernel *K, void *unused) {
  (void)unused;
  if (current(K)) return NULL;
  PyObject *l = PyList_New(K->ninst);
  if (!l) return NULL;
  for (int i = 0; i < K->ninst; i++) {
    PyObject *d = hkpy_kernel_dict(K->inst[i].k);
    if (!d) {
      Py_DECREF(l);
      return NULL;
    }
    PyList_SET_ITEM(l, i, d);
  }
  return l;
}

static PyObject *kernel_wait(hkpy_Kernel *K, PyObject *unused) {
  (void)unused;
  if (current(K)) return NULL;
  for (int i = 0; i < K->ninst; i++) {
    int rc;
    K->ctx->busy++;
    Py_BEGIN_ALLOW_THREADS
    rc = hk_kernel_wait_opt(K->inst[i].k);
    Py_END_ALLOW_THREADS
    K->ctx->busy--;
    if (rc != HK_OK) return hkpy_raise(rc, NULL);
  }
  Py_RETURN_NONE;
}

static PyObject *kernel_context(hkpy_Kernel *K, void *unused) {
  (void)unused;
  if (!K->ctx) Py_RETURN_NONE;
  Py_INCREF(K->ctx);
  return (PyObject *)K->ctx;
}

static PyObject *kernel_name(hkpy_Kernel *K, void *unused) {
  (void)unused;
  if (!K->name) Py_RETURN_NONE;
  Py_INCREF(K->name);
  return K->name;
}

static PyMethodDef kernel_methods[] = {
    {"wait_opt", (PyCFunction)kernel_wait, METH_NOARGS,
     "wait_opt()\n--\n\nWaits until every instance runs on tier opt (or opt "
     "failed: the error is raised)."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef kernel_getset[] = {
    {"tier", (getter)kernel_tier, NULL,
     "The tier the last call ran on (the first instance's before any "
     "call): 'inline', 'jit', 'opt', 'so'.", NULL},
    {"instances", (getter)kernel_instances, NULL,
     "Each instance's description, as `hk list --json`.", NULL},
    {"context", (getter)kernel_context, NULL, "The context.", NULL},
    {"name", (getter)kernel_name, NULL, "The kernel's name.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject hkpy_KernelType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "hk._hk.Kernel",
    .tp_basicsize = sizeof(hkpy_Kernel),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE |
                Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "The C side of hk.Kernel.",
    .tp_new = kernel_new,
    .tp_init = (initproc)kernel_init,
    .tp_dealloc = (destructor)kernel_dealloc,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(hkpy_Kernel, vectorcall),
    .tp_methods = kernel_methods,
    .tp_getset = kernel_getset,
    .tp_weaklistoffset = offsetof(hkpy_Kernel, weak),
};

/* ---- builtin functions over a kernel (hk.add, hk.sum ...) ------------------- */

static PyObject *function_call(PyObject *self, PyObject *const *args,
                               Py_ssize_t nargs, PyObject *kwnames) {
  return call((hkpy_Kernel *)self, args, nargs, kwnames);
}

PyObject *hkpy_make_function(PyObject *kernel, const char *name,
                             const char *doc) {
  if (!PyObject_TypeCheck(kernel, &hkpy_KernelType)) {
    PyErr_SetString(PyExc_TypeError, "make_function: not a Kernel");
    return NULL;
  }
  /* the PyMethodDef and its strings live as long as the process: these
   * functions are made once per stdlib op, at import */
  PyMethodDef *def = PyMem_Calloc(1, sizeof *def);
  char *n = PyMem_Malloc(strlen(name) + 1), *d = PyMem_Malloc(strlen(doc) + 1);
  if (!def || !n || !d) {
    PyMem_Free(def);
    PyMem_Free(n);
    PyMem_Free(d);
    return PyErr_NoMemory();
  }
  strcpy(n, name);
  strcpy(d, doc);
  def->ml_name = n;
  def->ml_meth = (PyCFunction)(void (*)(void))function_call;
  def->ml_flags = METH_FASTCALL | METH_KEYWORDS;
  def->ml_doc = d;
  return PyCFunction_NewEx(def, kernel, NULL);
}
