/* hkpy.h — what the files of the _hk extension module share.
 *
 * _hk is the C layer of `import hk`: contexts (context.c), kernels and their
 * calls (kernel.c), Python objects made into hk_array_t descriptors
 * (convert.c: NumPy arrays, values, __cuda_array_interface__, DLPack) and
 * the module with its errors (module.c). Everything runs through hk.h: no
 * second implementation of anything hk does. */
#ifndef HKPY_H
#define HKPY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL hkpy_ARRAY_API
#ifndef HKPY_IMPORT_ARRAY
#define NO_IMPORT_ARRAY
#endif
#include <numpy/arrayobject.h>
/* NumPy 2 hides the descriptor's item size behind an accessor, which
 * NumPy 1's headers lack. */
#if NPY_ABI_VERSION < 0x02000000
#define PyDataType_ELSIZE(d) ((d)->elsize)
#endif

#include <hk.h>

/* Most parameters a kernel may have here (kernels with more are refused
 * when made, with a message). */
#define HKPY_MAXP 32

/* ---- module.c ---------------------------------------------------------- */

/* Not an hk status: the code hkpy_raise takes for a closed context
 * (hk.ContextClosedError). */
#define HKPY_ECLOSED 1000

/* Raises the Python exception for hk status code (hk.Error and its
 * subclasses, made by the factory hk/_errors.py registers), with msg (NULL:
 * hk_last_error()). Returns NULL, for `return hkpy_raise(...)`. */
PyObject *hkpy_raise(int code, const char *msg);
/* Elements from which calls release the GIL (hk._hk.set_gil_min). */
extern Py_ssize_t hkpy_gil_min;

/* ---- context.c --------------------------------------------------------- */

typedef struct {
  PyObject_HEAD
  hk_context_t *ctx; /* NULL once closed */
  int busy;          /* calls and waits running without the GIL */
  int closing;       /* close() waits for busy calls: no new ones */
  unsigned long gen; /* bumped by every load and reload */
  PyObject *weak;
} hkpy_Context;

extern PyTypeObject hkpy_ContextType;
/* ctx->ctx, or NULL with hk.ContextClosedError raised. */
hk_context_t *hkpy_context_get(hkpy_Context *ctx);
/* One kernel's description as `hk list --json` prints it (a dict). */
PyObject *hkpy_kernel_dict(hk_kernel_t *k);

/* ---- kernel.c ---------------------------------------------------------- */

extern PyTypeObject hkpy_KernelType;
/* A builtin function (help() shows doc) calling kernel (a _hk.Kernel). */
PyObject *hkpy_make_function(PyObject *kernel, const char *name,
                             const char *doc);

/* ---- array.c ----------------------------------------------------------- */

extern PyTypeObject hkpy_ArrayType;
/* hk.empty: an array in host or GPU memory hk allocates. */
PyObject *hkpy_array_empty(PyObject *shape, PyObject *dtype,
                           const char *device);
/* An hk.Array's descriptor. */
const hk_array_t *hkpy_array_desc(PyObject *arr);
/* hk.from_dlpack: obj's memory (DLPack, __cuda_array_interface__, NumPy),
 * borrowed; a read-only source stays read-only. */
PyObject *hkpy_array_from_dlpack(PyObject *obj);
/* Whether obj is an hk.Array. */
#define hkpy_array_check(obj) (Py_TYPE(obj) == &hkpy_ArrayType)

/* ---- convert.c --------------------------------------------------------- */

enum { HKPY_NONE = 0, HKPY_HOST, HKPY_DEVICE };

/* One argument of a call, on its way to hk_call_arrays. */
typedef struct {
  hk_array_t a;       /* the descriptor hk sees */
  PyObject *obj;      /* borrowed: the object given; NULL when not given */
  PyObject *arr;      /* owned: the ndarray made or kept for it, or NULL */
  PyObject *capsule;  /* owned: a consumed DLPack capsule, or NULL */
  void *managed;      /* its DLManagedTensor (deleted by hkpy_arg_release) */
  int versioned;      /* managed is DLPack 1.0's DLManagedTensorVersioned */
  int readonly;       /* the memory may not be written (out/inout refused) */
  int where;          /* HKPY_NONE (a value not yet made), HOST, DEVICE */
  int value;          /* 1: a Python value, made once the dtype is known */
  const char *via;    /* "NumPy", "__cuda_array_interface__", "DLPack" */
  union {
    double f64;
    float f32;
    int64_t i64;
    uint64_t u64;
    unsigned char bytes[16];
  } v;                /* storage of a value (scalars, 0-d inputs) */
} hkpy_arg;

/* The hk dtype of a NumPy dtype; HK_DTYPE_INVALID when hk has none. */
hk_dtype_t hkpy_dtype_from_descr(PyArray_Descr *d);
/* The NumPy type number holding hk dtype t (bf16: uint16). */
int hkpy_typenum(hk_dtype_t t);
/* A new reference to the NumPy dtype of arrays of hk dtype t: for bf16,
 * hk.bfloat16 (uint16 tagged with metadata {"hk": "bf16"}). */
PyArray_Descr *hkpy_descr(hk_dtype_t t);
/* A new uninitialised C-order NumPy array of hk dtype t; NULL with an
 * exception. */
PyObject *hkpy_new_ndarray(int nd, npy_intp *dims, hk_dtype_t t);
/* Makes hk.bfloat16 and adds it to module m. -1 with an exception. */
int hkpy_dtypes_init(PyObject *m);
/* The hk dtype named by a NumPy dtype-like or an hk name ("f32"). */
int hkpy_dtype_arg(PyObject *o, hk_dtype_t *out);

/* Classifies obj given for parameter pname of role r: an array (NumPy, a
 * buffer, __cuda_array_interface__, DLPack) fills g->a and g->where; a
 * Python value or a list is left for hkpy_arg_finish (g->value). Returns
 * 0, or -1 with an exception naming the parameter. */
int hkpy_arg_take(hkpy_arg *g, PyObject *obj, const char *kname,
                  const char *pname, hk_role_t r);
/* Makes a value argument of dtype t (a 0-d descriptor over g->v, or an
 * ndarray for a list). 0, or -1 with an exception. */
int hkpy_arg_finish(hkpy_arg *g, hk_dtype_t t, const char *kname,
                    const char *pname);
/* Drops what g holds (arrays, DLPack tensors). */
void hkpy_arg_release(hkpy_arg *g);
/* Fills g->a from an ndarray (kept in g->arr, a new reference taken). */
int hkpy_arg_ndarray(hkpy_arg *g, PyArrayObject *arr, const char *kname,
                     const char *pname);
/* Fills g from an hk.Array (its descriptor, where, read-only); array.c. */
void hkpy_array_take(hkpy_arg *g, PyObject *arr);

#endif
