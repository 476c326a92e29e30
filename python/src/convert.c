/* convert.c — Python objects made into hk_array_t descriptors, without
 * copying: NumPy arrays (and anything with the buffer protocol or
 * __array_interface__), objects with __cuda_array_interface__ (CuPy,
 * PyTorch, Numba, JAX) and objects with __dlpack__; Python values for
 * scalars and 0-d inputs. Every refusal names the kernel and the parameter. */
#include "hkpy.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "dlpack.h"

/* ---- dtypes ------------------------------------------------------------- */

/* hk.bfloat16: NumPy has no bf16, so bf16 arrays are uint16 arrays whose
 * dtype carries metadata {"hk": "bf16"}; a plain uint16 array is u16. */
static PyArray_Descr *bf16_descr;

int hkpy_dtypes_init(PyObject *m) {
  PyObject *np = PyImport_ImportModule("numpy");
  PyObject *dtype = np ? PyObject_GetAttrString(np, "dtype") : NULL;
  PyObject *args = Py_BuildValue("(s)", "=u2");
  PyObject *kw = Py_BuildValue("{s:{s:s}}", "metadata", "hk", "bf16");
  PyObject *d = dtype && args && kw ? PyObject_Call(dtype, args, kw) : NULL;
  Py_XDECREF(np);
  Py_XDECREF(dtype);
  Py_XDECREF(args);
  Py_XDECREF(kw);
  if (!d) return -1;
  if (!PyArray_DescrCheck(d)) {
    Py_DECREF(d);
    PyErr_SetString(PyExc_ImportError, "numpy.dtype made no dtype");
    return -1;
  }
  bf16_descr = (PyArray_Descr *)d;
  Py_INCREF(d); /* one for bf16_descr, one the module takes */
  if (PyModule_AddObject(m, "bfloat16", d)) {
    Py_DECREF(d);
    return -1;
  }
  return 0;
}

/* Whether uint16 dtype d is tagged bf16 (hk.bfloat16, or an equal dtype
 * made by pickling or np.dtype(..., metadata=...)). */
static int is_bf16(PyArray_Descr *d) {
  if (d == bf16_descr) return 1;
  PyObject *md = PyObject_GetAttrString((PyObject *)d, "metadata");
  int r = 0;
  if (md && md != Py_None) {
    PyObject *v = PyMapping_GetItemString(md, "hk");
    r = v && PyUnicode_Check(v) && !PyUnicode_CompareWithASCIIString(v, "bf16");
    Py_XDECREF(v);
  }
  Py_XDECREF(md);
  PyErr_Clear();
  return r;
}

PyArray_Descr *hkpy_descr(hk_dtype_t t) {
  if (t == HK_BF16 && bf16_descr) {
    Py_INCREF(bf16_descr);
    return bf16_descr;
  }
  return PyArray_DescrFromType(hkpy_typenum(t));
}

PyObject *hkpy_new_ndarray(int nd, npy_intp *dims, hk_dtype_t t) {
  PyArray_Descr *d = hkpy_descr(t);
  if (!d) return NULL;
  return PyArray_NewFromDescr(&PyArray_Type, d, nd, dims, NULL, NULL, 0,
                              NULL);
}

hk_dtype_t hkpy_dtype_from_descr(PyArray_Descr *d) {
  if (!PyArray_ISNBO(d->byteorder)) return HK_DTYPE_INVALID;
  npy_intp es = PyDataType_ELSIZE(d);
  switch (d->kind) {
  case 'f':
    return es == 4 ? HK_F32 : es == 8 ? HK_F64
           : es == 2 ? HK_F16 : HK_DTYPE_INVALID;
  case 'i':
    return es == 1 ? HK_I8 : es == 2 ? HK_I16
           : es == 4 ? HK_I32 : es == 8 ? HK_I64
           : HK_DTYPE_INVALID;
  case 'u':
    return es == 1 ? HK_U8 : es == 2 ? (is_bf16(d) ? HK_BF16 : HK_U16)
           : es == 4 ? HK_U32 : es == 8 ? HK_U64
           : HK_DTYPE_INVALID;
  case 'b':
    return es == 1 ? HK_BOOL : HK_DTYPE_INVALID;
  case 'V': /* ml_dtypes' bfloat16 */
    if (es == 2 && d->typeobj &&
        !strcmp(d->typeobj->tp_name, "bfloat16"))
      return HK_BF16;
    return HK_DTYPE_INVALID;
  default:
    return HK_DTYPE_INVALID;
  }
}

int hkpy_typenum(hk_dtype_t t) {
  switch (t) {
  case HK_F32: return NPY_FLOAT32;
  case HK_F64: return NPY_FLOAT64;
  case HK_F16: return NPY_FLOAT16;
  case HK_BF16: return NPY_UINT16;
  case HK_I8: return NPY_INT8;
  case HK_I16: return NPY_INT16;
  case HK_I32: return NPY_INT32;
  case HK_I64: return NPY_INT64;
  case HK_U8: return NPY_UINT8;
  case HK_U16: return NPY_UINT16;
  case HK_U32: return NPY_UINT32;
  case HK_U64: return NPY_UINT64;
  case HK_BOOL: return NPY_BOOL;
  default: return -1;
  }
}

int hkpy_dtype_arg(PyObject *o, hk_dtype_t *out) {
  if (PyUnicode_Check(o)) {
    hk_dtype_t t = hk_dtype_from_name(PyUnicode_AsUTF8(o));
    if (t != HK_DTYPE_INVALID) {
      *out = t;
      return 0;
    }
  }
  PyArray_Descr *d = NULL;
  if (!PyArray_DescrConverter(o, &d)) return -1;
  *out = hkpy_dtype_from_descr(d);
  Py_DECREF(d);
  if (*out == HK_DTYPE_INVALID) {
    PyErr_Format(PyExc_TypeError, "dtype %R: hk has no such element type "
                 "(f32 f64 f16 bf16 i8-i64 u8-u64 bool, native byte order)",
                 o);
    return -1;
  }
  return 0;
}

/* The hk dtype of an __array_interface__-style typestr ("<f4", "|b1"). */
static hk_dtype_t dtype_from_typestr(const char *s) {
  PyObject *str = PyUnicode_FromString(s);
  if (!str) return HK_DTYPE_INVALID;
  PyArray_Descr *d = NULL;
  hk_dtype_t t = HK_DTYPE_INVALID;
  if (PyArray_DescrConverter(str, &d)) {
    t = hkpy_dtype_from_descr(d);
    Py_DECREF(d);
  } else {
    PyErr_Clear();
  }
  Py_DECREF(str);
  return t;
}

/* ---- NumPy arrays ------------------------------------------------------- */

int hkpy_arg_ndarray(hkpy_arg *g, PyArrayObject *arr, const char *kname,
                     const char *pname) {
  PyArray_Descr *d = PyArray_DESCR(arr);
  hk_dtype_t t = hkpy_dtype_from_descr(d);
  if (t == HK_DTYPE_INVALID) {
    PyErr_Format(PyExc_TypeError,
                 "%s: parameter '%s': arrays of dtype %S are not supported "
                 "(hk takes f32 f64 f16 bf16 i8-i64 u8-u64 bool, native byte "
                 "order)", kname, pname, (PyObject *)d);
    return -1;
  }
  int nd = PyArray_NDIM(arr);
  if (nd > HK_MAX_DIMS) {
    PyErr_Format(PyExc_ValueError, "%s: parameter '%s': %d axes; hk takes "
                 "at most %d", kname, pname, nd, HK_MAX_DIMS);
    return -1;
  }
  npy_intp size = PyDataType_ELSIZE(d);
  const npy_intp *shape = PyArray_SHAPE(arr), *st = PyArray_STRIDES(arr);
  g->a.data = PyArray_DATA(arr);
  g->a.dtype = t;
  g->a.ndim = nd;
  g->a.base = NULL;
  g->a.nbytes = 0;
  for (int i = 0; i < nd; i++) {
    if (st[i] % size) {
      PyErr_Format(PyExc_ValueError, "%s: parameter '%s': a stride of %zd "
                   "bytes is not a whole number of %zd-byte elements",
                   kname, pname, (Py_ssize_t)st[i], (Py_ssize_t)size);
      return -1;
    }
    g->a.shape[i] = shape[i];
    g->a.strides[i] = st[i] / size;
  }
  Py_INCREF(arr);
  g->arr = (PyObject *)arr;
  g->readonly = !PyArray_ISWRITEABLE(arr);
  g->where = HKPY_HOST;
  g->via = "NumPy";
  return 0;
}

/* ---- __cuda_array_interface__ -------------------------------------------- */

static int tuple_of_ints(PyObject *o, int64_t *v, int max, int *n) {
  if (!PyTuple_Check(o) || PyTuple_GET_SIZE(o) > max) return -1;
  *n = (int)PyTuple_GET_SIZE(o);
  for (int i = 0; i < *n; i++) {
    v[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(o, i));
    if (v[i] == -1 && PyErr_Occurred()) return -1;
  }
  return 0;
}

/* Fills g from obj's __cuda_array_interface__ (version 2 or 3). */
static int take_cai(hkpy_arg *g, PyObject *cai, const char *kname,
                    const char *pname) {
  const char *what = NULL;
  if (!PyDict_Check(cai)) {
    what = "is not a dict";
    goto bad;
  }
  PyObject *shape = PyDict_GetItemString(cai, "shape");
  PyObject *typestr = PyDict_GetItemString(cai, "typestr");
  PyObject *data = PyDict_GetItemString(cai, "data");
  PyObject *strides = PyDict_GetItemString(cai, "strides");
  PyObject *mask = PyDict_GetItemString(cai, "mask");
  int nd, ns;
  if (!shape || tuple_of_ints(shape, g->a.shape, HK_MAX_DIMS, &nd)) {
    what = "'shape' is not a tuple of at most 8 ints";
    goto bad;
  }
  if (!typestr || !PyUnicode_Check(typestr)) {
    what = "'typestr' is missing";
    goto bad;
  }
  if (!data || !PyTuple_Check(data) || PyTuple_GET_SIZE(data) != 2) {
    what = "'data' is not (pointer, read_only)";
    goto bad;
  }
  if (mask && mask != Py_None) {
    what = "masked arrays are not supported";
    goto bad;
  }
  hk_dtype_t t = dtype_from_typestr(PyUnicode_AsUTF8(typestr));
  if (t == HK_DTYPE_INVALID) {
    PyErr_Format(PyExc_TypeError, "%s: parameter '%s': typestr %S is not "
                 "an hk element type", kname, pname, typestr);
    return -1;
  }
  size_t size = hk_dtype_size(t);
  void *ptr = PyLong_AsVoidPtr(PyTuple_GET_ITEM(data, 0));
  if (PyErr_Occurred()) {
    what = "'data' holds no pointer";
    goto bad;
  }
  int ro = PyObject_IsTrue(PyTuple_GET_ITEM(data, 1));
  if (ro < 0) {
    what = "'data' has no read_only flag";
    goto bad;
  }
  g->readonly = ro;
  g->a.data = ptr;
  g->a.dtype = t;
  g->a.ndim = nd;
  g->a.base = NULL;
  g->a.nbytes = 0;
  if (strides && strides != Py_None) {
    int64_t b[HK_MAX_DIMS];
    if (tuple_of_ints(strides, b, HK_MAX_DIMS, &ns) || ns != nd) {
      what = "'strides' does not match 'shape'";
      goto bad;
    }
    for (int i = 0; i < nd; i++) {
      if (b[i] % (int64_t)size) {
        what = "a stride is not a whole number of elements";
        goto bad;
      }
      g->a.strides[i] = b[i] / (int64_t)size;
    }
  } else {
    int64_t s = 1;
    for (int i = nd - 1; i >= 0; i--) {
      g->a.strides[i] = s;
      s *= g->a.shape[i];
    }
  }
  g->where = HKPY_DEVICE;
  g->via = "__cuda_array_interface__";
  return 0;
bad:
  PyErr_Clear();
  PyErr_Format(PyExc_ValueError, "%s: parameter '%s': bad "
               "__cuda_array_interface__: %s", kname, pname, what);
  return -1;
}

/* ---- DLPack (dlpack.h) ---------------------------------------------------- */

static hk_dtype_t dtype_from_dl(dl_dtype d) {
  if (d.lanes != 1) return HK_DTYPE_INVALID;
  static const hk_dtype_t ints[] = {HK_I8, HK_I16, HK_I32, HK_I64};
  static const hk_dtype_t uints[] = {HK_U8, HK_U16, HK_U32, HK_U64};
  int l = d.bits == 8 ? 0 : d.bits == 16 ? 1 : d.bits == 32 ? 2
          : d.bits == 64 ? 3 : -1;
  switch (d.code) {
  case DL_INT: return l < 0 ? HK_DTYPE_INVALID : ints[l];
  case DL_UINT: return l < 0 ? HK_DTYPE_INVALID : uints[l];
  case DL_FLOAT:
    return d.bits == 16 ? HK_F16 : d.bits == 32 ? HK_F32
           : d.bits == 64 ? HK_F64 : HK_DTYPE_INVALID;
  case DL_BFLOAT: return d.bits == 16 ? HK_BF16 : HK_DTYPE_INVALID;
  case DL_BOOL: return d.bits == 8 ? HK_BOOL : HK_DTYPE_INVALID;
  default: return HK_DTYPE_INVALID;
  }
}

/* The device an object with __dlpack_device__ is on: DL_CPU, DL_CUDA ...;
 * -1 with an exception. */
static int dlpack_device(PyObject *obj, const char *kname,
                         const char *pname) {
  PyObject *dev = PyObject_CallMethod(obj, "__dlpack_device__", NULL);
  long type = -1;
  if (dev && PyTuple_Check(dev) && PyTuple_GET_SIZE(dev) == 2)
    type = PyLong_AsLong(PyTuple_GET_ITEM(dev, 0));
  Py_XDECREF(dev);
  if (type < 0) {
    PyErr_Clear();
    PyErr_Format(PyExc_ValueError, "%s: parameter '%s': __dlpack_device__() "
                 "did not return (device_type, device_id)", kname, pname);
  }
  return (int)type;
}

/* obj.__dlpack__(max_version=(1, 0)): DLPack 1.0's versioned capsule,
 * whose flags say whether the memory is read-only; producers older than
 * 1.0 take no max_version (TypeError), and are asked again without it. */
static PyObject *call_dlpack(PyObject *obj) {
  PyObject *meth = PyObject_GetAttrString(obj, "__dlpack__");
  if (!meth) return NULL;
  PyObject *args = PyTuple_New(0);
  PyObject *kw = Py_BuildValue("{s:(ii)}", "max_version", 1, 0);
  PyObject *cap = args && kw ? PyObject_Call(meth, args, kw) : NULL;
  if (!cap && PyErr_ExceptionMatches(PyExc_TypeError)) {
    PyErr_Clear();
    cap = PyObject_CallObject(meth, NULL);
  }
  Py_XDECREF(args);
  Py_XDECREF(kw);
  Py_DECREF(meth);
  return cap;
}

/* Whether the producer of a pre-1.0 capsule (which cannot say) lends
 * read-only memory: what its buffer protocol says, when it has one. */
static int producer_readonly(PyObject *obj) {
  if (!PyObject_CheckBuffer(obj)) return 0;
  Py_buffer view;
  if (PyObject_GetBuffer(obj, &view, PyBUF_WRITABLE) == 0) {
    PyBuffer_Release(&view);
    return 0;
  }
  PyErr_Clear();
  return 1;
}

/* Consumes obj.__dlpack__() into g (kept until hkpy_arg_release). */
static int take_dlpack(hkpy_arg *g, PyObject *obj, int where,
                       const char *kname, const char *pname) {
  PyObject *cap = call_dlpack(obj);
  if (!cap) return -1;
  const dl_tensor *t;
  if (PyCapsule_IsValid(cap, "dltensor_versioned")) {
    dl_managed_v *m = PyCapsule_GetPointer(cap, "dltensor_versioned");
    if (m->version.major != 1) {
      /* a layout this file does not know: not even its deleter is safe */
      Py_DECREF(cap);
      PyErr_Format(PyExc_ValueError, "%s: parameter '%s': a DLPack %u.%u "
                   "tensor (hk reads DLPack 1.x and older)", kname, pname,
                   (unsigned)m->version.major, (unsigned)m->version.minor);
      return -1;
    }
    PyCapsule_SetName(cap, "used_dltensor_versioned");
    g->capsule = cap;
    g->managed = m;
    g->versioned = 1;
    g->readonly = (m->flags & DL_FLAG_READ_ONLY) != 0;
    t = &m->t;
  } else if (PyCapsule_IsValid(cap, "dltensor")) {
    dl_managed *m = PyCapsule_GetPointer(cap, "dltensor");
    PyCapsule_SetName(cap, "used_dltensor");
    g->capsule = cap;
    g->managed = m;
    g->readonly = producer_readonly(obj);
    t = &m->t;
  } else {
    Py_DECREF(cap);
    PyErr_Format(PyExc_ValueError, "%s: parameter '%s': __dlpack__() did "
                 "not return an unused \"dltensor\" capsule", kname, pname);
    return -1;
  }
  hk_dtype_t dt = dtype_from_dl(t->dtype);
  if (dt == HK_DTYPE_INVALID || t->ndim < 0 || t->ndim > HK_MAX_DIMS) {
    PyErr_Format(PyExc_TypeError, "%s: parameter '%s': DLPack tensor of "
                 "%d axes, dtype code %d bits %d lanes %d: not an hk array",
                 kname, pname, (int)t->ndim, t->dtype.code, t->dtype.bits,
                 t->dtype.lanes);
    return -1;
  }
  g->a.data = (char *)t->data + t->byte_offset;
  g->a.dtype = dt;
  g->a.ndim = t->ndim;
  g->a.base = NULL;
  g->a.nbytes = 0;
  int64_t s = 1;
  for (int i = t->ndim - 1; i >= 0; i--) {
    g->a.shape[i] = t->shape[i];
    g->a.strides[i] = t->strides ? t->strides[i] : s;
    s *= t->shape[i];
  }
  g->where = where;
  g->via = "DLPack";
  return 0;
}

/* ---- values ------------------------------------------------------------- */

static int is_value(PyObject *o) {
  return PyFloat_Check(o) || PyLong_Check(o) || PyBool_Check(o) ||
         PyArray_IsScalar(o, Generic);
}

/* repr(o) for a message, cut after 40 characters: a message names the
 * value, it need not print all 400 digits of 10**400. */
static PyObject *short_repr(PyObject *o) {
  PyObject *r = PyObject_Repr(o);
  if (!r) {
    PyErr_Clear();
    return PyUnicode_FromFormat("<%.80s object>", Py_TYPE(o)->tp_name);
  }
  if (PyUnicode_GET_LENGTH(r) <= 43) return r;
  PyObject *cut = PyUnicode_Substring(r, 0, 40);
  Py_DECREF(r);
  if (!cut) return NULL;
  r = PyUnicode_FromFormat("%U...", cut);
  Py_DECREF(cut);
  return r;
}

/* Raises exc (OverflowError, TypeError) for value o of parameter pname. */
static int bad_value(PyObject *exc, PyObject *o, hk_dtype_t t,
                     const char *kname, const char *pname) {
  PyObject *r = short_repr(o);
  if (!r) return -1;
  if (exc == PyExc_OverflowError)
    PyErr_Format(exc, "%s: parameter '%s': %U does not fit in %s", kname,
                 pname, r, hk_dtype_name(t));
  else
    PyErr_Format(exc, "%s: parameter '%s' is %s: %U is not a value of that "
                 "type", kname, pname, hk_dtype_name(t), r);
  Py_DECREF(r);
  return -1;
}

/* Stores o as one element of dtype t at dst. */
static int store_value(PyObject *o, hk_dtype_t t, void *dst,
                       const char *kname, const char *pname) {
  if (PyArray_Check(o)) { /* a 0-d array (hkpy_arg_take): its element */
    PyArrayObject *a = (PyArrayObject *)o;
    /* an object array's element may be any object, itself included */
    if (PyArray_TYPE(a) == NPY_OBJECT) goto bad;
    const hk_dtype_t at = hkpy_dtype_from_descr(PyArray_DESCR(a));
    if (at == HK_BF16) { /* bits: as bf16 is what they hold */
      uint16_t h;
      memcpy(&h, PyArray_DATA(a), 2);
      if (t == HK_BF16) {
        memcpy(dst, &h, 2);
        return 0;
      }
      PyObject *f = PyFloat_FromDouble(hk_bf16_to_double(h));
      if (!f) return -1;
      int rc = store_value(f, t, dst, kname, pname);
      Py_DECREF(f);
      return rc;
    }
    PyObject *item = PyArray_GETITEM(a, PyArray_DATA(a));
    if (!item) return -1;
    int rc = store_value(item, t, dst, kname, pname);
    Py_DECREF(item);
    return rc;
  }
  if (t == HK_F32 || t == HK_F64 || t == HK_F16 || t == HK_BF16) {
    /* a complex value (NumPy's complex scalars convert to float with only
     * a warning, dropping the imaginary part) is not a real one */
    if (!PyFloat_Check(o) && !PyLong_Check(o) &&
        PyObject_HasAttrString(o, "__complex__"))
      goto bad;
    double d = PyFloat_AsDouble(o);
    if (d == -1.0 && PyErr_Occurred()) {
      /* an int beyond any double (10**400) */
      if (!PyErr_ExceptionMatches(PyExc_OverflowError)) goto bad;
      PyErr_Clear();
      return bad_value(PyExc_OverflowError, o, t, kname, pname);
    }
    /* a finite value that rounds to infinity does not fit (as hk run
     * refuses it): 1e40 for an f32, 1e6 for an f16 */
    double back;
    if (t == HK_F32) {
      /* past FLT_MAX by half an ulp rounds to infinity; converting such a
       * double is undefined, so it is caught first */
      if (!isinf(d) && !isnan(d) && fabs(d) >= (double)FLT_MAX + 0x1p103)
        return bad_value(PyExc_OverflowError, o, t, kname, pname);
      *(float *)dst = (float)d;
      back = *(float *)dst;
    } else if (t == HK_F64) {
      *(double *)dst = back = d;
    } else if (t == HK_F16) {
      *(uint16_t *)dst = hk_f16_from_double(d);
      back = hk_f16_to_double(*(uint16_t *)dst);
    } else {
      *(uint16_t *)dst = hk_bf16_from_double(d);
      back = hk_bf16_to_double(*(uint16_t *)dst);
    }
    if (isinf(back) && !isinf(d))
      return bad_value(PyExc_OverflowError, o, t, kname, pname);
    return 0;
  }
  if (t == HK_BOOL) {
    int b = PyObject_IsTrue(o);
    if (b < 0) goto bad;
    *(uint8_t *)dst = (uint8_t)b;
    return 0;
  }
  PyObject *i = PyNumber_Index(o);
  if (!i) goto bad;
  int over = 0;
  long long v = PyLong_AsLongLongAndOverflow(i, &over);
  unsigned long long u = 0;
  if (over > 0 && (t == HK_U64)) {
    u = PyLong_AsUnsignedLongLong(i);
    over = PyErr_Occurred() != NULL;
    PyErr_Clear();
    v = 0;
  } else {
    u = (unsigned long long)v;
  }
  Py_DECREF(i);
  if (v == -1 && PyErr_Occurred()) goto bad;
  int ok = !over;
  switch (t) {
  case HK_I8: ok = ok && v >= INT8_MIN && v <= INT8_MAX; *(int8_t *)dst = (int8_t)v; break;
  case HK_I16: ok = ok && v >= INT16_MIN && v <= INT16_MAX; *(int16_t *)dst = (int16_t)v; break;
  case HK_I32: ok = ok && v >= INT32_MIN && v <= INT32_MAX; *(int32_t *)dst = (int32_t)v; break;
  case HK_I64: *(int64_t *)dst = v; break;
  case HK_U8: ok = ok && v >= 0 && v <= UINT8_MAX; *(uint8_t *)dst = (uint8_t)v; break;
  case HK_U16: ok = ok && v >= 0 && v <= UINT16_MAX; *(uint16_t *)dst = (uint16_t)v; break;
  case HK_U32: ok = ok && v >= 0 && v <= UINT32_MAX; *(uint32_t *)dst = (uint32_t)v; break;
  case HK_U64: ok = ok && (over == 0 ? v >= 0 : 1); *(uint64_t *)dst = u; break;
  default: ok = 0; break;
  }
  if (!ok) return bad_value(PyExc_OverflowError, o, t, kname, pname);
  return 0;
bad:
  PyErr_Clear();
  return bad_value(PyExc_TypeError, o, t, kname, pname);
}

/* ---- one argument --------------------------------------------------------- */

int hkpy_arg_take(hkpy_arg *g, PyObject *obj, const char *kname,
                  const char *pname, hk_role_t r) {
  g->obj = obj;
  int rc = -1;
  if (PyArray_Check(obj)) {
    if (r == HK_ROLE_SCALAR) {
      if (PyArray_NDIM((PyArrayObject *)obj) == 0) {
        g->value = 1;
        return 0;
      }
      PyErr_Format(PyExc_TypeError, "%s: parameter '%s' is a scalar: got an "
                   "array of %d axes", kname, pname,
                   PyArray_NDIM((PyArrayObject *)obj));
      return -1;
    }
    rc = hkpy_arg_ndarray(g, (PyArrayObject *)obj, kname, pname);
  } else if (hkpy_array_check(obj) && r != HK_ROLE_SCALAR) {
    hkpy_array_take(g, obj);
    rc = 0;
  } else if (r == HK_ROLE_IN && PyArray_IsScalar(obj, Generic)) {
    /* a NumPy scalar has a dtype: a 0-d array of it, not an untyped
     * Python number */
    PyObject *arr = PyArray_FromScalar(obj, NULL);
    if (!arr) return -1;
    rc = hkpy_arg_ndarray(g, (PyArrayObject *)arr, kname, pname);
    Py_DECREF(arr);
  } else if (is_value(obj) || (r == HK_ROLE_IN && (PyList_Check(obj) ||
                                                   PyTuple_Check(obj)))) {
    if (r == HK_ROLE_IN || r == HK_ROLE_SCALAR) {
      g->value = 1;
      return 0;
    }
  } else if (r == HK_ROLE_SCALAR) {
    PyErr_Format(PyExc_TypeError, "%s: parameter '%s' is a scalar: got %.80s",
                 kname, pname, Py_TYPE(obj)->tp_name);
    return -1;
  } else {
    PyObject *cai = PyObject_GetAttrString(obj, "__cuda_array_interface__");
    if (cai) {
      rc = take_cai(g, cai, kname, pname);
      Py_DECREF(cai);
      if (rc) return -1;
      goto taken;
    }
    PyErr_Clear();
    if (PyObject_HasAttrString(obj, "__dlpack__") &&
        PyObject_HasAttrString(obj, "__dlpack_device__")) {
      int dev = dlpack_device(obj, kname, pname);
      if (dev < 0) return -1;
      if (dev == DL_CPU || dev == DL_CUDA_HOST)
        rc = take_dlpack(g, obj, HKPY_HOST, kname, pname);
      else if (dev == DL_CUDA || dev == DL_CUDA_MANAGED)
        rc = take_dlpack(g, obj, HKPY_DEVICE, kname, pname);
      else
        PyErr_Format(PyExc_ValueError, "%s: parameter '%s': a DLPack array "
                     "on device type %d (hk runs on the CPU and CUDA GPUs)",
                     kname, pname, dev);
    } else if (PyObject_CheckBuffer(obj) ||
               PyObject_HasAttrString(obj, "__array_interface__") ||
               PyObject_HasAttrString(obj, "__array_struct__")) {
      /* read-only buffers too: refused below, with the parameter named */
      PyObject *arr = PyArray_FromAny(obj, NULL, 0, 0, 0, NULL);
      if (!arr) return -1;
      rc = hkpy_arg_ndarray(g, (PyArrayObject *)arr, kname, pname);
      Py_DECREF(arr);
    } else {
      goto wrong;
    }
  }
  if (g->value) return 0;
  if (rc) {
    if (!PyErr_Occurred()) goto wrong;
    return -1;
  }
taken:
  if (g->readonly && r != HK_ROLE_IN) {
    PyErr_Format(PyExc_ValueError, "%s: parameter '%s' is written (%s), but "
                 "the array is read-only (%s)", kname, pname, hk_role_name(r),
                 g->via);
    return -1;
  }
  return 0;
wrong:
  PyErr_Format(PyExc_TypeError, "%s: parameter '%s' (%s) must be %s: got "
               "%.80s", kname, pname, hk_role_name(r),
               r == HK_ROLE_IN ? "an array or a value" : "a writable array",
               Py_TYPE(obj)->tp_name);
  return -1;
}

/* A list (or tuple) made into a new C-contiguous ndarray of dtype t,
 * element by element as Python values are (store_value): a value the type
 * cannot hold (1.7 or 2**40 for an i32) is refused, never cast. */
static PyObject *list_array(PyObject *o, hk_dtype_t t, const char *kname,
                            const char *pname) {
  PyArrayObject *objs = (PyArrayObject *)PyArray_FromAny(
      o, PyArray_DescrFromType(NPY_OBJECT), 0, 0, NPY_ARRAY_CARRAY, NULL);
  if (!objs) return NULL;
  PyObject *arr = PyArray_SimpleNew(PyArray_NDIM(objs), PyArray_SHAPE(objs),
                                    hkpy_typenum(t));
  if (arr) {
    PyObject **src = PyArray_DATA(objs);
    char *dst = PyArray_DATA((PyArrayObject *)arr);
    npy_intp n = PyArray_SIZE(objs);
    size_t es = hk_dtype_size(t);
    for (npy_intp i = 0; i < n; i++)
      if (store_value(src[i], t, dst + (size_t)i * es, kname, pname)) {
        Py_CLEAR(arr);
        break;
      }
  }
  Py_DECREF(objs);
  return arr;
}

int hkpy_arg_finish(hkpy_arg *g, hk_dtype_t t, const char *kname,
                    const char *pname) {
  PyObject *o = g->obj;
  if (PyList_Check(o) || PyTuple_Check(o)) {
    PyObject *arr = list_array(o, t, kname, pname);
    if (!arr) return -1;
    int rc = hkpy_arg_ndarray(g, (PyArrayObject *)arr, kname, pname);
    Py_DECREF(arr);
    if (rc == 0) g->a.dtype = t; /* bf16 stays bf16 */
    return rc;
  }
  if (store_value(o, t, g->v.bytes, kname, pname)) return -1;
  g->a.data = g->v.bytes;
  g->a.dtype = t;
  g->a.ndim = 0;
  g->a.base = NULL;
  g->a.nbytes = 0;
  g->where = HKPY_NONE;
  return 0;
}

void hkpy_arg_release(hkpy_arg *g) {
  Py_CLEAR(g->arr);
  if (g->capsule) {
    dl_release(g->managed, g->versioned);
    Py_CLEAR(g->capsule);
    g->managed = NULL;
  }
}
