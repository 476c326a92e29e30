/* array.c — _hk.Array: an array in memory hk allocated (hk_buffer_t: host,
 * or GPU memory from hk's pool) or borrowed from a DLPack producer
 * (from_dlpack), and its exports: __dlpack__ (to_dlpack), and
 * __cuda_array_interface__ or __array_interface__, so that CuPy, PyTorch,
 * JAX and NumPy use it in place. Kernel calls take it as any DLPack
 * array. */
#include "hkpy.h"

#include <string.h>

#include "dlpack.h"

typedef struct {
  PyObject_HEAD
  hk_array_t a;       /* C-contiguous unless borrowed */
  int where;          /* HKPY_HOST or HKPY_DEVICE */
  hk_buffer_t *buf;   /* owned memory, or NULL */
  void *lent;         /* borrowed memory: the producer's DLPack tensor */
  int lent_v;         /* lent is a DLPack 1.0 (versioned) tensor */
  int readonly;       /* borrowed from a read-only source */
  PyObject *owner;    /* what keeps the borrowed memory alive */
} hkpy_Array;

static void array_dealloc(hkpy_Array *self) {
  hk_buffer_destroy(self->buf);
  dl_release(self->lent, self->lent_v);
  Py_XDECREF(self->owner);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Whether hk may not write self: a read-only source, or a NumPy owner made
 * read-only since (a.flags.writeable = False after from_dlpack(a)). */
static int array_readonly(const hkpy_Array *self) {
  return self->readonly ||
         (self->owner && PyArray_Check(self->owner) &&
          !PyArray_ISWRITEABLE((PyArrayObject *)self->owner));
}

static PyObject *array_get_readonly(hkpy_Array *self, void *u) {
  (void)u;
  return PyBool_FromLong(array_readonly(self));
}

static PyObject *tuple_of(const int64_t *v, int n) {
  PyObject *t = PyTuple_New(n);
  for (int i = 0; t && i < n; i++) {
    PyObject *o = PyLong_FromLongLong(v[i]);
    if (!o) {
      Py_CLEAR(t);
      break;
    }
    PyTuple_SET_ITEM(t, i, o);
  }
  return t;
}

static PyObject *array_shape(hkpy_Array *self, void *u) {
  (void)u;
  return tuple_of(self->a.shape, self->a.ndim);
}

static PyObject *array_dtype(hkpy_Array *self, void *u) {
  (void)u;
  return PyUnicode_FromString(hk_dtype_name(self->a.dtype));
}

static PyObject *array_device(hkpy_Array *self, void *u) {
  (void)u;
  return PyUnicode_FromString(self->where == HKPY_DEVICE ? "cuda" : "cpu");
}

static PyObject *array_ptr(hkpy_Array *self, void *u) {
  (void)u;
  return PyLong_FromVoidPtr(self->a.data);
}

/* Whether a is C-contiguous (hk.h has no call for it: core/arrays.c keeps
 * its own, internal). */
static int contiguous(const hk_array_t *a) {
  int64_t s = 1;
  for (int i = a->ndim - 1; i >= 0; i--) {
    if (a->shape[i] != 1 && a->strides[i] != s) return 0;
    s *= a->shape[i];
  }
  return 1;
}

/* strides in bytes, or None when C-contiguous */
static PyObject *byte_strides(hkpy_Array *self) {
  if (contiguous(&self->a)) Py_RETURN_NONE;
  int64_t b[HK_MAX_DIMS];
  size_t size = hk_dtype_size(self->a.dtype);
  for (int i = 0; i < self->a.ndim; i++)
    b[i] = self->a.strides[i] * (int64_t)size;
  return tuple_of(b, self->a.ndim);
}

static const char *typestr(hk_dtype_t t) {
  switch (t) {
  case HK_F32: return "<f4";
  case HK_F64: return "<f8";
  case HK_F16: return "<f2";
  case HK_BF16: return "<u2";
  case HK_I8: return "|i1";
  case HK_I16: return "<i2";
  case HK_I32: return "<i4";
  case HK_I64: return "<i8";
  case HK_U8: return "|u1";
  case HK_U16: return "<u2";
  case HK_U32: return "<u4";
  case HK_U64: return "<u8";
  case HK_BOOL: return "|b1";
  default: return "|V0";
  }
}

/* The dict of __array_interface__ (host) or __cuda_array_interface__. */
static PyObject *interface(hkpy_Array *self, int want) {
  if (self->where != want) {
    PyErr_SetString(PyExc_AttributeError,
                    want == HKPY_DEVICE ? "a host array has no "
                    "__cuda_array_interface__" : "a GPU array has no "
                    "__array_interface__");
    return NULL;
  }
  PyObject *strides = byte_strides(self);
  if (!strides) return NULL;
  return Py_BuildValue("{s:N,s:s,s:(N,O),s:N,s:i}", "shape",
                       tuple_of(self->a.shape, self->a.ndim), "typestr",
                       typestr(self->a.dtype), "data",
                       PyLong_FromVoidPtr(self->a.data),
                       array_readonly(self) ? Py_True : Py_False,
                       "strides", strides, "version", 3);
}

static PyObject *array_cai(hkpy_Array *self, void *u) {
  (void)u;
  return interface(self, HKPY_DEVICE);
}

static PyObject *array_ai(hkpy_Array *self, void *u) {
  (void)u;
  return interface(self, HKPY_HOST);
}

/* ---- DLPack export ------------------------------------------------------- */

typedef struct {
  dl_managed m;
  int64_t shape[HK_MAX_DIMS], strides[HK_MAX_DIMS];
} export_t;

static void export_deleter(dl_managed *m) {
  PyGILState_STATE st = PyGILState_Ensure();
  Py_XDECREF((PyObject *)m->manager_ctx);
  PyMem_RawFree(m);
  PyGILState_Release(st);
}

static void capsule_destructor(PyObject *cap) {
  /* never consumed: the tensor is still ours to delete */
  if (!PyCapsule_IsValid(cap, "dltensor")) return;
  dl_managed *m = PyCapsule_GetPointer(cap, "dltensor");
  if (m && m->deleter) m->deleter(m);
}

static PyObject *array_dlpack(hkpy_Array *self, PyObject *args,
                              PyObject *kw) {
  static char *names[] = {"stream", NULL};
  PyObject *stream = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|$O", names, &stream))
    return NULL;
  (void)stream; /* hk's calls return once their work is done */
  if (array_readonly(self)) {
    /* a "dltensor" capsule cannot say read-only: its consumer would write
     * (NumPy refuses the same) */
    PyErr_SetString(PyExc_BufferError, "__dlpack__: the array is read-only, "
                    "which a DLPack capsule cannot signal");
    return NULL;
  }
  export_t *e = PyMem_RawCalloc(1, sizeof *e);
  if (!e) return PyErr_NoMemory();
  memcpy(e->shape, self->a.shape, sizeof e->shape);
  memcpy(e->strides, self->a.strides, sizeof e->strides);
  dl_tensor *t = &e->m.t;
  t->data = self->a.data;
  if (self->where == HKPY_DEVICE) {
    hk_cuda_device_info_t info;
    t->device.device_type = DL_CUDA;
    t->device.device_id = hk_cuda_device_info(&info) == HK_OK
                              ? info.ordinal : 0;
  } else {
    t->device.device_type = DL_CPU;
  }
  t->ndim = self->a.ndim;
  t->dtype = dl_dtype_of(self->a.dtype);
  t->shape = e->shape;
  t->strides = e->strides;
  e->m.manager_ctx = self;
  e->m.deleter = export_deleter;
  Py_INCREF(self);
  PyObject *cap = PyCapsule_New(&e->m, "dltensor", capsule_destructor);
  if (!cap) {
    Py_DECREF(self);
    PyMem_RawFree(e);
  }
  return cap;
}

static PyObject *array_dlpack_device(hkpy_Array *self, PyObject *u) {
  (void)u;
  int id = 0;
  hk_cuda_device_info_t info;
  if (self->where == HKPY_DEVICE && hk_cuda_device_info(&info) == HK_OK)
    id = info.ordinal;
  return Py_BuildValue("(ii)", self->where == HKPY_DEVICE ? DL_CUDA : DL_CPU,
                       id);
}

/* ---- copies -------------------------------------------------------------- */

static int64_t nbytes_of(const hk_array_t *a) {
  return hk_array_size(a) * (int64_t)hk_dtype_size(a->dtype);
}

/* A NumPy copy of a contiguous array. */
static PyObject *array_numpy(hkpy_Array *self, PyObject *u) {
  (void)u;
  if (!contiguous(&self->a)) {
    PyErr_SetString(PyExc_ValueError, "numpy(): the array is not "
                    "contiguous (a borrowed view): use the producer's copy");
    return NULL;
  }
  npy_intp dims[HK_MAX_DIMS];
  for (int i = 0; i < self->a.ndim; i++) dims[i] = self->a.shape[i];
  PyObject *r = hkpy_new_ndarray(self->a.ndim, dims, self->a.dtype);
  if (!r) return NULL;
  size_t n = (size_t)nbytes_of(&self->a);
  int rc = HK_OK;
  void *dst = PyArray_DATA((PyArrayObject *)r);
  Py_BEGIN_ALLOW_THREADS
  if (self->where == HKPY_DEVICE)
    rc = hk_memcpy_to_host(dst, self->a.data, n, NULL);
  else
    memcpy(dst, self->a.data, n);
  Py_END_ALLOW_THREADS
  if (rc != HK_OK) {
    Py_DECREF(r);
    return hkpy_raise(rc, NULL);
  }
  return r;
}

/* copy_from(ndarray): the array's elements from a NumPy array of the same
 * shape and dtype (made contiguous first when it is not). */
static PyObject *array_copy_from(hkpy_Array *self, PyObject *src) {
  PyArrayObject *s = (PyArrayObject *)PyArray_FromAny(
      src, hkpy_descr(self->a.dtype), 0, 0,
      NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED, NULL);
  if (!s) return NULL;
  int ok = PyArray_NDIM(s) == self->a.ndim && contiguous(&self->a);
  for (int i = 0; ok && i < self->a.ndim; i++)
    ok = PyArray_DIM(s, i) == self->a.shape[i];
  if (!ok) {
    Py_DECREF(s);
    PyErr_SetString(PyExc_ValueError, "copy_from: the shapes differ (or "
                    "this array is a non-contiguous view)");
    return NULL;
  }
  if (array_readonly(self)) {
    Py_DECREF(s);
    PyErr_SetString(PyExc_ValueError, "copy_from: the array is read-only "
                    "(borrowed from read-only memory)");
    return NULL;
  }
  size_t n = (size_t)nbytes_of(&self->a);
  int rc = HK_OK;
  const void *from = PyArray_DATA(s);
  Py_BEGIN_ALLOW_THREADS
  if (self->where == HKPY_DEVICE)
    rc = hk_memcpy_to_device(self->a.data, from, n, NULL);
  else
    memcpy(self->a.data, from, n);
  Py_END_ALLOW_THREADS
  Py_DECREF(s);
  if (rc != HK_OK) return hkpy_raise(rc, NULL);
  Py_INCREF(self);
  return (PyObject *)self;
}

/* ---- making them ----------------------------------------------------------- */

PyObject *hkpy_array_empty(PyObject *shape, PyObject *dtype,
                           const char *device) {
  hk_dtype_t t;
  if (hkpy_dtype_arg(dtype, &t)) return NULL;
  int where;
  if (!strcmp(device, "cpu")) where = HKPY_HOST;
  else if (!strcmp(device, "cuda")) where = HKPY_DEVICE;
  else {
    PyErr_Format(PyExc_ValueError, "device must be 'cpu' or 'cuda': got "
                 "'%s'", device);
    return NULL;
  }
  PyObject *seq = PySequence_Fast(shape, "shape must be a tuple of ints");
  if (!seq) return NULL;
  int64_t dims[HK_MAX_DIMS];
  Py_ssize_t nd = PySequence_Fast_GET_SIZE(seq);
  char msg[160] = "";
  /* hk_array_init refuses with no message (hk_last_error() would be an
   * earlier call's): say what is wrong here */
  if (nd > HK_MAX_DIMS)
    snprintf(msg, sizeof msg, "empty: shape has %zd dimensions; hk takes at "
             "most %d", nd, HK_MAX_DIMS);
  for (Py_ssize_t i = 0; !*msg && i < nd; i++) {
    int over = 0;
    dims[i] = PyLong_AsLongLongAndOverflow(PySequence_Fast_GET_ITEM(seq, i),
                                           &over);
    if (dims[i] == -1 && PyErr_Occurred()) break;
    if (over)
      snprintf(msg, sizeof msg, "empty: shape[%zd] does not fit in 64 bits",
               i);
    else if (dims[i] < 0)
      snprintf(msg, sizeof msg, "empty: shape[%zd] is negative", i);
  }
  Py_DECREF(seq);
  if (PyErr_Occurred()) return NULL;
  /* hk_array_init's own rule: the strides (elements, from the last axis
   * on) and the size in bytes fit in an int64_t, zero lengths or not */
  int64_t count = 1;
  for (Py_ssize_t i = nd - 1; !*msg && i >= 0; i--) {
    if (dims[i] != 0 && count > INT64_MAX / dims[i])
      snprintf(msg, sizeof msg, "empty: the size overflows: more than 2**63 "
               "- 1 elements (from shape[%zd] on)", i);
    else
      count *= dims[i];
  }
  if (!*msg && count > INT64_MAX / (int64_t)hk_dtype_size(t))
    snprintf(msg, sizeof msg, "empty: the size overflows: %lld elements of "
             "%zu bytes", (long long)count, hk_dtype_size(t));
  if (*msg) return hkpy_raise(HK_EINVAL, msg);
  hkpy_Array *self = PyObject_New(hkpy_Array, &hkpy_ArrayType);
  if (!self) return NULL;
  self->buf = NULL;
  self->lent = NULL;
  self->lent_v = 0;
  self->readonly = 0;
  self->owner = NULL;
  self->where = where;
  int rc = hk_array_init(&self->a, NULL, t, (int)nd, dims);
  if (rc == HK_OK)
    rc = hk_buffer_create(&self->buf,
                          where == HKPY_DEVICE ? HK_MEM_DEVICE : HK_MEM_HOST,
                          (size_t)nbytes_of(&self->a));
  if (rc != HK_OK) {
    Py_DECREF(self);
    return hkpy_raise(rc, rc == HK_EINVAL ? "empty: hk refused the shape"
                                          : NULL);
  }
  self->a.data = hk_buffer_data(self->buf);
  self->a.base = NULL;
  self->a.nbytes = 0;
  return (PyObject *)self;
}

const hk_array_t *hkpy_array_desc(PyObject *arr) {
  return &((hkpy_Array *)arr)->a;
}

void hkpy_array_take(hkpy_arg *g, PyObject *arr) {
  hkpy_Array *self = (hkpy_Array *)arr;
  g->a = self->a;
  g->where = self->where;
  g->readonly = array_readonly(self);
  g->via = "hk.Array";
}

PyObject *hkpy_array_from_dlpack(PyObject *obj) {
  hkpy_arg g;
  memset(&g, 0, sizeof g);
  if (hkpy_arg_take(&g, obj, "from_dlpack", "obj", HK_ROLE_IN)) {
    hkpy_arg_release(&g);
    return NULL;
  }
  if (g.value) {
    PyErr_Format(PyExc_TypeError, "from_dlpack: %.80s is not an array",
                 Py_TYPE(obj)->tp_name);
    return NULL;
  }
  hkpy_Array *self = PyObject_New(hkpy_Array, &hkpy_ArrayType);
  if (!self) {
    hkpy_arg_release(&g);
    return NULL;
  }
  self->a = g.a;
  self->where = g.where;
  self->buf = NULL;
  self->lent = g.managed; /* deleted with self */
  self->lent_v = g.versioned;
  self->readonly = g.readonly;
  /* what keeps the memory alive: the capsule, NumPy's array, or the
   * __cuda_array_interface__ object itself */
  self->owner = g.capsule ? g.capsule : g.arr;
  if (!self->owner) {
    Py_INCREF(obj);
    self->owner = obj;
  }
  return (PyObject *)self;
}

static PyMethodDef array_methods[] = {
    {"__dlpack__", (PyCFunction)(void (*)(void))array_dlpack,
     METH_VARARGS | METH_KEYWORDS,
     "__dlpack__(*, stream=None)\n--\n\nA DLPack capsule of this array "
     "(hk.to_dlpack)."},
    {"__dlpack_device__", (PyCFunction)array_dlpack_device, METH_NOARGS,
     "(device_type, device_id): (1, 0) on the CPU, (2, GPU) on CUDA."},
    {"numpy", (PyCFunction)array_numpy, METH_NOARGS,
     "numpy()\n--\n\nA NumPy copy (from the GPU for a CUDA array)."},
    {"copy_from", (PyCFunction)array_copy_from, METH_O,
     "copy_from(a)\n--\n\nCopies a NumPy array's elements in (to the GPU for "
     "a CUDA array); returns self."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef array_getset[] = {
    {"shape", (getter)array_shape, NULL, "The shape.", NULL},
    {"dtype", (getter)array_dtype, NULL, "hk's dtype name ('f32' ...).",
     NULL},
    {"device", (getter)array_device, NULL, "'cpu' or 'cuda'.", NULL},
    {"ptr", (getter)array_ptr, NULL, "The address of element 0.", NULL},
    {"readonly", (getter)array_get_readonly, NULL,
     "True when borrowed from read-only memory: kernels refuse it as an "
     "out or inout array.", NULL},
    {"__cuda_array_interface__", (getter)array_cai, NULL,
     "CUDA arrays only (version 3).", NULL},
    {"__array_interface__", (getter)array_ai, NULL,
     "Host arrays only: NumPy views them in place.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject hkpy_ArrayType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "hk._hk.Array",
    .tp_basicsize = sizeof(hkpy_Array),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An array in hk's memory (hk.empty) or borrowed through "
              "DLPack (hk.from_dlpack); kernels take it in place.",
    .tp_dealloc = (destructor)array_dealloc,
    .tp_methods = array_methods,
    .tp_getset = array_getset,
};
