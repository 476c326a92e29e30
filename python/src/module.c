/* module.c — the _hk extension module: its types, its few functions, and
 * hk status codes turned into Python exceptions (by the factory that
 * hk/_errors.py registers, which parses "PATH:LINE:COL: error: FIELD: ..."
 * lines into hk.KernelError's fields). */
#define HKPY_IMPORT_ARRAY
#include "hkpy.h"

/* Measured (bench/py_bench.py): releasing and taking back the GIL costs
 * tens of ns, a tenth of a small call; from this many elements a call
 * lasts microseconds and other Python threads may run meanwhile. */
Py_ssize_t hkpy_gil_min = 4096;

static PyObject *error_factory;

PyObject *hkpy_raise(int code, const char *msg) {
  if (!msg) msg = hk_last_error();
  if (!msg || !*msg) msg = hk_strerror(code);
  if (!error_factory) {
    PyErr_Format(PyExc_RuntimeError, "%s: %s", hk_err_name(code), msg);
    return NULL;
  }
  const char *name = code == HKPY_ECLOSED ? "closed" : hk_err_name(code);
  PyObject *exc = PyObject_CallFunction(error_factory, "iss", code, name, msg);
  if (exc) {
    PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
    Py_DECREF(exc);
  }
  return NULL;
}

static PyObject *set_error_factory(PyObject *m, PyObject *fn) {
  (void)m;
  Py_INCREF(fn);
  Py_XSETREF(error_factory, fn);
  Py_RETURN_NONE;
}

static PyObject *make_function(PyObject *m, PyObject *args) {
  (void)m;
  PyObject *kernel;
  const char *name, *doc;
  if (!PyArg_ParseTuple(args, "Oss", &kernel, &name, &doc)) return NULL;
  return hkpy_make_function(kernel, name, doc);
}

static PyObject *set_gil_min(PyObject *m, PyObject *arg) {
  (void)m;
  Py_ssize_t v = PyLong_AsSsize_t(arg);
  if (v == -1 && PyErr_Occurred()) return NULL;
  Py_ssize_t old = hkpy_gil_min;
  hkpy_gil_min = v < 0 ? 0 : v;
  return PyLong_FromSsize_t(old);
}

static PyObject *cuda_init(PyObject *m, PyObject *unused) {
  (void)m;
  (void)unused;
  int rc = hk_cuda_init();
  if (rc != HK_OK) return hkpy_raise(rc, NULL);
  Py_RETURN_NONE;
}

/* hk.h: hk_set_threads refuses more (HK_EINVAL, with no message of its
 * own: hk_last_error() would be some earlier call's). */
#define HKPY_MAX_THREADS 256

static PyObject *set_threads(PyObject *m, PyObject *arg) {
  (void)m;
  int over = 0;
  long long n = PyLong_AsLongLongAndOverflow(arg, &over);
  if (n == -1 && PyErr_Occurred()) return NULL;
  if (over || n < 0 || n > HKPY_MAX_THREADS) {
    PyErr_Format(PyExc_ValueError, "threads must be 0..%d (0: every CPU): "
                 "got %.40R", HKPY_MAX_THREADS, arg);
    return NULL;
  }
  int rc = hk_set_threads((int)n);
  if (rc != HK_OK) return hkpy_raise(rc, hk_strerror(rc));
  Py_RETURN_NONE;
}

static PyObject *get_threads(PyObject *m, PyObject *unused) {
  (void)m;
  (void)unused;
  return PyLong_FromLong(hk_get_threads());
}

static PyObject *stop_compilers(PyObject *m, PyObject *unused) {
  (void)m;
  (void)unused;
  return PyLong_FromLong(hk_stop_compilers());
}

static PyObject *empty(PyObject *m, PyObject *args, PyObject *kw) {
  (void)m;
  static char *names[] = {"shape", "dtype", "device", NULL};
  PyObject *shape, *dtype;
  const char *device = "cpu";
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|s", names, &shape, &dtype,
                                   &device))
    return NULL;
  return hkpy_array_empty(shape, dtype, device);
}

static PyObject *from_dlpack(PyObject *m, PyObject *obj) {
  (void)m;
  return hkpy_array_from_dlpack(obj);
}

static PyMethodDef module_methods[] = {
    {"empty", (PyCFunction)(void (*)(void))empty,
     METH_VARARGS | METH_KEYWORDS,
     "empty(shape, dtype, device='cpu')\n--\n\nAn uninitialised hk.Array "
     "in host memory or, device='cuda', in GPU memory from hk's pool."},
    {"from_dlpack", from_dlpack, METH_O,
     "from_dlpack(obj)\n--\n\nobj's memory as an hk.Array, borrowed (no "
     "copy): any object with __dlpack__ or __cuda_array_interface__, or a "
     "NumPy array."},
    {"_set_error_factory", set_error_factory, METH_O,
     "Registers fn(code, name, message) -> exception."},
    {"make_function", make_function, METH_VARARGS,
     "make_function(kernel, name, doc)\n--\n\nA builtin function calling "
     "kernel, with name and doc (help() shows it)."},
    {"set_gil_min", set_gil_min, METH_O,
     "set_gil_min(n)\n--\n\nCalls of at least n elements release the GIL; "
     "returns the previous n."},
    {"cuda_init", cuda_init, METH_NOARGS,
     "cuda_init()\n--\n\nStarts the CUDA backend (hk_cuda_init)."},
    {"set_threads", set_threads, METH_O,
     "set_threads(n)\n--\n\nThreads sharing a large call (hk_set_threads)."},
    {"get_threads", get_threads, METH_NOARGS,
     "get_threads()\n--\n\nThreads sharing a large call."},
    {"stop_compilers", stop_compilers, METH_NOARGS,
     "stop_compilers()\n--\n\nKills the compilers hk runs, for good "
     "(hk_stop_compilers)."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_hk",
    "The C layer of hk: contexts, kernels and their calls over libhk.", -1,
    module_methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__hk(void); /* what Python looks up */
PyMODINIT_FUNC PyInit__hk(void) {
  import_array();
  if (PyType_Ready(&hkpy_ContextType) < 0 ||
      PyType_Ready(&hkpy_KernelType) < 0 ||
      PyType_Ready(&hkpy_ArrayType) < 0)
    return NULL;
  PyObject *m = PyModule_Create(&module_def);
  if (!m) return NULL;
  Py_INCREF(&hkpy_ContextType);
  Py_INCREF(&hkpy_KernelType);
  Py_INCREF(&hkpy_ArrayType);
  if (PyModule_AddObject(m, "Context", (PyObject *)&hkpy_ContextType) ||
      PyModule_AddObject(m, "Kernel", (PyObject *)&hkpy_KernelType) ||
      PyModule_AddObject(m, "Array", (PyObject *)&hkpy_ArrayType) ||
      PyModule_AddStringConstant(m, "version", HK_VERSION_STRING) ||
      PyModule_AddIntConstant(m, "ALLOW_UNSAFE_PERMISSIONS",
                              HK_ALLOW_UNSAFE_PERMISSIONS) ||
      PyModule_AddIntConstant(m, "NO_CACHE", HK_NO_CACHE) ||
      PyModule_AddIntConstant(m, "WATCH", HK_WATCH) ||
      hkpy_dtypes_init(m)) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
