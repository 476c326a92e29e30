/* context.c — _hk.Context: an hk_context_t (the registry of kernels) owned by
 * a Python object. Loads, reloads and waits release the GIL; a context in
 * use by a call on another thread cannot be closed under it (busy). */
#include "hkpy.h"

#include <string.h>
#include <time.h>

hk_context_t *hkpy_context_get(hkpy_Context *c) {
  if (!c->ctx || c->closing) {
    hkpy_raise(HKPY_ECLOSED, "the context was closed");
    return NULL;
  }
  return c->ctx;
}

/* A NULL-terminated copy of a sequence of str (or os.PathLike); one str,
 * bytes or os.PathLike is one folder (a str is a sequence too: of
 * characters, each no folder). */
static const char **str_list(PyObject *seq, PyObject **keep) {
  if (PyUnicode_Check(seq) || PyBytes_Check(seq) ||
      PyObject_HasAttrString(seq, "__fspath__"))
    *keep = PyTuple_Pack(1, seq);
  else
    *keep = PySequence_Fast(seq, "plugins must be a folder or a list of "
                                 "folders");
  if (!*keep) return NULL;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(*keep);
  const char **v = PyMem_Calloc((size_t)n + 1, sizeof *v);
  if (!v) {
    PyErr_NoMemory();
    return NULL;
  }
  PyObject *paths = PyList_New(n); /* the fsencoded bytes, kept alive */
  if (!paths) {
    PyMem_Free(v);
    return NULL;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *b = NULL;
    if (!PyUnicode_FSConverter(PySequence_Fast_GET_ITEM(*keep, i), &b)) {
      Py_DECREF(paths);
      PyMem_Free(v);
      return NULL;
    }
    PyList_SET_ITEM(paths, i, b);
    v[i] = PyBytes_AS_STRING(b);
  }
  Py_SETREF(*keep, paths);
  return v;
}

static int ctx_init(hkpy_Context *self, PyObject *args, PyObject *kw) {
  static char *names[] = {"plugins", "cache_dir", "tier", "cc", "flags",
                          NULL};
  PyObject *plugins = Py_None, *keep = NULL;
  const char *cache = NULL, *tier = "auto", *cc = NULL;
  unsigned flags = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|OzszI", names, &plugins,
                                   &cache, &tier, &cc, &flags))
    return -1;
  if (self->ctx) {
    PyErr_SetString(PyExc_RuntimeError, "Context.__init__ called twice");
    return -1;
  }
  hk_options_t o = {0};
  if (!strcmp(tier, "auto")) o.tier = HK_TIER_AUTO;
  else if (!strcmp(tier, "jit")) o.tier = HK_TIER_JIT;
  else if (!strcmp(tier, "opt")) o.tier = HK_TIER_OPT;
  else {
    PyErr_Format(PyExc_ValueError, "tier must be 'auto', 'jit' or 'opt': "
                 "got '%s'", tier);
    return -1;
  }
  const char **dirs = NULL;
  if (plugins != Py_None) {
    dirs = str_list(plugins, &keep);
    if (!dirs) {
      Py_XDECREF(keep);
      return -1;
    }
  }
  o.plugin_dirs = dirs;
  o.cache_dir = cache;
  o.cc = cc;
  o.flags = flags;
  hk_context_t *ctx = NULL;
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = hk_context_create(&ctx, &o);
  Py_END_ALLOW_THREADS
  PyMem_Free(dirs);
  Py_XDECREF(keep);
  if (rc != HK_OK) {
    hkpy_raise(rc, NULL);
    return -1;
  }
  self->ctx = ctx;
  return 0;
}

/* Closes the context: new calls are refused at once (ContextClosedError),
 * and the calls other threads run without the GIL are waited for (busy is
 * only changed with the GIL held) before hk_context_destroy. */
static void close_ctx(hkpy_Context *self) {
  if (!self->ctx || self->closing) return;
  self->closing = 1;
  while (self->busy) {
    Py_BEGIN_ALLOW_THREADS
    struct timespec ts = {0, 100000};
    nanosleep(&ts, NULL);
    Py_END_ALLOW_THREADS
  }
  hk_context_t *c = self->ctx;
  self->ctx = NULL;
  Py_BEGIN_ALLOW_THREADS
  hk_context_destroy(c);
  Py_END_ALLOW_THREADS
}

static void ctx_dealloc(hkpy_Context *self) {
  if (self->weak) PyObject_ClearWeakRefs((PyObject *)self);
  /* nothing can be busy: every call holds a reference */
  if (self->ctx) hk_context_destroy(self->ctx);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *ctx_close(hkpy_Context *self, PyObject *unused) {
  (void)unused;
  close_ctx(self);
  Py_RETURN_NONE;
}

/* Runs f(ctx, arg) without the GIL; the status, or -100 with an exception
 * when the context is closed. */
static int run_unlocked(hkpy_Context *self,
                        int (*f)(hk_context_t *, const void *),
                        const void *arg) {
  hk_context_t *c = hkpy_context_get(self);
  if (!c) return -100;
  int rc;
  self->busy++;
  Py_BEGIN_ALLOW_THREADS
  rc = f(c, arg);
  Py_END_ALLOW_THREADS
  self->busy--;
  self->gen++;
  return rc;
}

static int do_wait(hk_context_t *c, const void *a) {
  (void)a;
  return hk_context_wait(c);
}
static int do_reload(hk_context_t *c, const void *a) {
  (void)a;
  return hk_reload(c);
}
static int do_load_dir(hk_context_t *c, const void *a) {
  return hk_load_dir(c, a);
}
static int do_load_file(hk_context_t *c, const void *a) {
  return hk_load_file(c, a);
}

typedef struct {
  const char *text, *name;
  size_t len;
} load_str;
static int do_load_string(hk_context_t *c, const void *a) {
  const load_str *l = a;
  return hk_load_string(c, l->text, l->len, l->name);
}

static PyObject *status(int rc) {
  if (rc == -100) return NULL;
  if (rc != HK_OK) return hkpy_raise(rc, NULL);
  Py_RETURN_NONE;
}

static PyObject *ctx_wait(hkpy_Context *self, PyObject *unused) {
  (void)unused;
  return status(run_unlocked(self, do_wait, NULL));
}

static PyObject *ctx_reload(hkpy_Context *self, PyObject *unused) {
  (void)unused;
  return status(run_unlocked(self, do_reload, NULL));
}

static PyObject *path_call(hkpy_Context *self, PyObject *arg,
                           int (*f)(hk_context_t *, const void *)) {
  PyObject *b = NULL;
  if (!PyUnicode_FSConverter(arg, &b)) return NULL;
  PyObject *r = status(run_unlocked(self, f, PyBytes_AS_STRING(b)));
  Py_DECREF(b);
  return r;
}

static PyObject *ctx_load_dir(hkpy_Context *self, PyObject *arg) {
  return path_call(self, arg, do_load_dir);
}

static PyObject *ctx_load_file(hkpy_Context *self, PyObject *arg) {
  return path_call(self, arg, do_load_file);
}

static PyObject *ctx_load_string(hkpy_Context *self, PyObject *args) {
  load_str l = {.name = "string"};
  Py_ssize_t len;
  if (!PyArg_ParseTuple(args, "s#|s", &l.text, &len, &l.name)) return NULL;
  l.len = (size_t)len;
  return status(run_unlocked(self, do_load_string, &l));
}

static PyObject *ctx_problems(hkpy_Context *self, void *unused) {
  (void)unused;
  hk_context_t *c = hkpy_context_get(self);
  return c ? PyUnicode_FromString(hk_context_problems(c)) : NULL;
}

static PyObject *ctx_closed(hkpy_Context *self, void *unused) {
  (void)unused;
  return PyBool_FromLong(self->ctx == NULL || self->closing);
}

static PyObject *ctx_generation(hkpy_Context *self, void *unused) {
  (void)unused;
  return PyLong_FromUnsignedLong(self->gen);
}

/* ---- descriptions, as `hk list --json` prints them ---------------------- */

static int set_str(PyObject *d, const char *key, const char *v) {
  PyObject *s = PyUnicode_FromString(v ? v : "");
  if (!s) return -1;
  int rc = PyDict_SetItemString(d, key, s);
  Py_DECREF(s);
  return rc;
}

static PyObject *param_dict(const hk_kernel_info_t *k, int p) {
  static const char *const rows[] = {"full", "one", "shared"};
  const hk_param_info_t *pi = &k->params[p];
  PyObject *d = PyDict_New();
  if (!d || set_str(d, "name", pi->name) ||
      set_str(d, "type", hk_dtype_name(pi->dtype)) ||
      set_str(d, "role", hk_role_name(pi->role)) ||
      (pi->len && set_str(d, "len", pi->len)) ||
      (pi->doc && *pi->doc && set_str(d, "doc", pi->doc)) ||
      (k->kind == HK_KIND_ROWS && pi->role != HK_ROLE_SCALAR &&
       set_str(d, "row", rows[pi->row]))) {
    Py_XDECREF(d);
    return NULL;
  }
  return d;
}

PyObject *hkpy_kernel_dict(hk_kernel_t *k) {
  const hk_kernel_info_t *in = hk_kernel_info(k);
  char note[2048];
  hk_kernel_note(k, note, sizeof note);
  PyObject *d = PyDict_New(), *targets = PyList_New(0), *params = NULL;
  if (!d || !targets) goto fail;
  if (set_str(d, "name", in->name) ||
      set_str(d, "kind", hk_kind_name(in->kind)))
    goto fail;
  PyObject *t;
  if ((in->targets & HK_TARGET_CPU) &&
      ((t = PyUnicode_FromString("cpu")) == NULL ||
       PyList_Append(targets, t) || (Py_DECREF(t), 0)))
    goto fail;
  if ((in->targets & HK_TARGET_CUDA) &&
      ((t = PyUnicode_FromString("cuda")) == NULL ||
       PyList_Append(targets, t) || (Py_DECREF(t), 0)))
    goto fail;
  int gpu = (in->targets & HK_TARGET_CUDA) &&
            (hk_kernel_backends(k) & HK_TARGET_CUDA);
  if (PyDict_SetItemString(d, "targets", targets) ||
      set_str(d, "origin", in->origin) ||
      set_str(d, "tier", hk_tier_name(hk_kernel_tier(k))) ||
      PyDict_SetItemString(d, "gpu", gpu ? Py_True : Py_False) ||
      set_str(d, "note", note) || set_str(d, "source", in->source) ||
      set_str(d, "doc", in->doc))
    goto fail;
  params = PyList_New(in->nparams);
  if (!params) goto fail;
  for (int p = 0; p < in->nparams; p++) {
    PyObject *pd = param_dict(in, p);
    if (!pd) goto fail;
    PyList_SET_ITEM(params, p, pd);
  }
  if (PyDict_SetItemString(d, "params", params)) goto fail;
  Py_DECREF(params);
  Py_DECREF(targets);
  return d;
fail:
  Py_XDECREF(params);
  Py_XDECREF(targets);
  Py_XDECREF(d);
  return NULL;
}

static int add_kernel(hk_kernel_t *k, void *user) {
  PyObject *d = hkpy_kernel_dict(k);
  if (!d) return 1;
  int rc = PyList_Append(user, d);
  Py_DECREF(d);
  return rc ? 1 : 0;
}

static PyObject *ctx_kernels(hkpy_Context *self, PyObject *unused) {
  (void)unused;
  hk_context_t *c = hkpy_context_get(self);
  if (!c) return NULL;
  PyObject *list = PyList_New(0);
  if (!list) return NULL;
  if (hk_kernel_foreach(c, add_kernel, list)) {
    Py_DECREF(list);
    return NULL;
  }
  return list;
}

static PyMethodDef ctx_methods[] = {
    {"close", (PyCFunction)ctx_close, METH_NOARGS,
     "close()\n--\n\nFrees the context and its kernels, once the calls other "
     "threads are running end; later calls raise hk.ContextClosedError."},
    {"wait", (PyCFunction)ctx_wait, METH_NOARGS,
     "wait()\n--\n\nWaits until no tier-opt compile is pending."},
    {"reload", (PyCFunction)ctx_reload, METH_NOARGS,
     "reload()\n--\n\nScans the plugin folders again (hk_reload)."},
    {"load_dir", (PyCFunction)ctx_load_dir, METH_O,
     "load_dir(path)\n--\n\nLoads every kernel file of a folder."},
    {"load_file", (PyCFunction)ctx_load_file, METH_O,
     "load_file(path)\n--\n\nLoads one kernel file (.json) or plugin (.so)."},
    {"load_string", (PyCFunction)ctx_load_string, METH_VARARGS,
     "load_string(text, name='string')\n--\n\nLoads a kernel file held in "
     "a string; name stands for the file in messages."},
    {"kernels", (PyCFunction)ctx_kernels, METH_NOARGS,
     "kernels()\n--\n\nEvery kernel's description, as `hk list --json`."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef ctx_getset[] = {
    {"problems", (getter)ctx_problems, NULL,
     "Problems met loading plugin folders, one per line.", NULL},
    {"closed", (getter)ctx_closed, NULL, "True once closed.", NULL},
    {"generation", (getter)ctx_generation, NULL,
     "Bumped by every load and reload.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject hkpy_ContextType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "hk._hk.Context",
    .tp_basicsize = sizeof(hkpy_Context),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "The C side of hk.Context: a registry of kernels.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)ctx_init,
    .tp_dealloc = (destructor)ctx_dealloc,
    .tp_methods = ctx_methods,
    .tp_getset = ctx_getset,
    .tp_weaklistoffset = offsetof(hkpy_Context, weak),
};
