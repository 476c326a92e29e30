/* call.c — where a kernel call runs (CPU or GPU, by where its buffers
 * live), GPU calls, and making a handle's GPU entry: the stdlib's from the
 * embedded fatbin, a plugin's from its module's GPU code (hk__module_cuda).
 *
 * A handle's GPU entry is made on its first GPU call (or by
 * hk_kernel_prepare) and cached in the handle: later calls load one atomic
 * pointer, build the kernel's argument array on the stack and launch. A
 * plugin module is compiled once for all its kernels (one NVRTC program),
 * under the context's load lock, so a reload never races a compile; the
 * CUDA module lives as long as the hk module (retired modules included),
 * so a handle never points at unloaded GPU code.
 */
#include <stdint.h>
#include <string.h>

#include "backend.h"
#include "registry.h"

/* Serializes the making of stdlib handles' entries. */
static pthread_mutex_t stdlib_lock = PTHREAD_MUTEX_INITIALIZER;

/* Makes k's entry from the stdlib's embedded module (k is a stdlib
 * handle). HK_OK; HK_EUNSUPPORTED when libhk has no GPU code for this
 * device; HK_EINTERNAL when the module lacks k's functions. The last error
 * is set. */
static int prepare_stdlib(hk_kernel_t *k) {
  const hk_kernel_info_t *info = atomic_load(&k->info);
  if (!hk__cuda.stdlib) return hk__cuda_stdlib_missing(info->name);
  int rc = HK_OK;
  pthread_mutex_lock(&stdlib_lock);
  if (!atomic_load(&k->cuda)) {
    hku_diags d = HKU_DIAGS_INIT;
    if (hk__cuda_entry_make(hk__cuda.stdlib, info, &k->stdlib_cuda, &d))
      rc = hk__fail(HK_EINTERNAL, "%s: %s", info->name, hk__cuda_why(&d));
    else
      atomic_store_explicit(&k->cuda, &k->stdlib_cuda, memory_order_release);
    hku_diags_free(&d);
  }
  pthread_mutex_unlock(&stdlib_lock);
  return rc;
}

/* Why k cannot run at all (unloaded, stale), with the last error set; or
 * HK_OK. */
static int check_state(const hk_kernel_t *k) {
  int s = atomic_load(&k->state);
  return s == HK__LIVE || s == HK__NO_CPU ? HK_OK : hk__call_failure(k);
}

/* Points k->cuda at its entry in m's GPU code, making that code first
 * (hk__module_cuda). HK_OK or the error, with the last error set.
 * ctx->load_lock held. */
static int prepare_plugin(hk_context_t *ctx, hk_kernel_t *k, hk_module_t *m) {
  HK_ASSERT(hk__load_held(ctx));
  int rc = hk__module_cuda(ctx, m);
  if (rc || atomic_load(&k->cuda)) return rc;
  for (int i = 0; i < m->ninst; i++)
    if (m->kernels[i] == k && m->cuda->entries[i].fn)
      atomic_store_explicit(&k->cuda, &m->cuda->entries[i],
                            memory_order_release);
  if (!atomic_load(&k->cuda))
    return hk__fail(HK_EINTERNAL, "kernel %s: no GPU entry in its module",
                    atomic_load(&k->info)->name);
  return HK_OK;
}

/* Makes k's GPU entry (k->cuda), once. HK_OK; HK_EUNSUPPORTED (no device,
 * no cuda target, no GPU code), HK_ECOMPILE and the others of
 * hk__module_cuda, or check_state's; the last error is set. */
static int prepare_cuda(hk_kernel_t *k) {
  int rc = hk__cuda_ready();
  if (rc) return rc;
  if (atomic_load_explicit(&k->cuda, memory_order_acquire)) return HK_OK;
  const hk_kernel_info_t *info = atomic_load(&k->info);
  if (!(info->targets & HK_TARGET_CUDA))
    return !strcmp(info->origin, "so")
               ? hk__fail(HK_EUNSUPPORTED,
                          "kernel %s: %s is a prebuilt plugin (.so), which "
                          "holds CPU code only; load the kernel file (.json) "
                          "to run it on the GPU",
                          info->name, info->source)
               : hk__fail(HK_EUNSUPPORTED,
                          "kernel %s has no cuda target (its kernel file "
                          "gives no GPU code)",
                          info->name);
  if ((rc = check_state(k))) return rc;
  hk_context_t *ctx = k->ctx;
  hk__load_lock(ctx);
  hk_module_t *m = k->mod;
  if (!m) {
    hk__load_unlock(ctx);
    return prepare_stdlib(k);
  }
  rc = prepare_plugin(ctx, k, m);
  hk__load_unlock(ctx);
  return rc;
}

/* Checks that every buffer of the call lives on side want (HK_MEM_HOST or
 * HK_MEM_DEVICE; 0: either, the same for all) and stores the side found
 * in *side (HK_MEM_HOST for a call without buffers). HK_OK, or HK_EINVAL
 * naming the buffers, with the last error set. The backend must be ready
 * (hk__cuda_ready) on this thread. */
static int buffers_side(const hk_kernel_t *k, void *const *args, int want,
                        hk_mem_t *side) {
  const hk_kernel_info_t *info = atomic_load(&k->info);
  const char *host = NULL, *dev = NULL;
  const void *ptrs[HK_CUDA_MAX_ARGS] = {0};
  const char *names[HK_CUDA_MAX_ARGS];
  hk_mem_t where[HK_CUDA_MAX_ARGS];
  int nb = 0;
  for (int i = 0; i < info->nparams && nb < HK_CUDA_MAX_ARGS; i++) {
    if (info->params[i].role == HK_ROLE_SCALAR || !args[i]) continue;
    names[nb] = info->params[i].name;
    ptrs[nb++] = args[i];
  }
  hk__mem_where_n(ptrs, nb, where);
  for (int i = 0; i < nb; i++) {
    if (where[i] == HK_MEM_DEVICE) {
      if (!dev) dev = names[i];
    } else if (!host) {
      host = names[i];
    }
  }
  if (host && dev)
    return hk__fail(HK_EINVAL,
                    "kernel %s: buffer %s is in host memory and buffer %s in "
                    "device memory; a call's buffers must all be on one side "
                    "(copy them with hk_memcpy_to_device or "
                    "hk_memcpy_to_host)",
                    info->name, host, dev);
  *side = dev ? HK_MEM_DEVICE : HK_MEM_HOST;
  if (want == HK_MEM_DEVICE && host)
    return hk__fail(HK_EINVAL,
                    "kernel %s on the GPU: buffer %s is in host memory; give "
                    "device memory (hk_device_alloc, hk_buffer_create)",
                    info->name, host);
  if (want == HK_MEM_HOST && dev)
    return hk__fail(HK_EINVAL,
                    "kernel %s on the CPU: buffer %s is in device memory; "
                    "copy it to the host or run on the GPU",
                    info->name, dev);
  return HK_OK;
}

/* cuda_call_rows's rows for a flat call (hk_call's n elements). */
#define FLAT SIZE_MAX

/* k's GPU entry into *e, made on first use (prepare_cuda), once k can
 * run (check_state). HK_OK or their errors. */
static int cuda_entry(const hk_kernel_t *k, const hk_cuda_entry_t **e) {
  int rc;
  *e = atomic_load_explicit(&k->cuda, memory_order_acquire);
  if (__builtin_expect(*e == NULL, 0)) {
    if ((rc = prepare_cuda((hk_kernel_t *)k))) return rc;
    *e = atomic_load_explicit(&k->cuda, memory_order_acquire);
  }
  return check_state(k);
}

/* How a grid kernel's call runs on the GPU, from its CPU code (whose
 * count query and lens entry read the scalars and n, host values, and
 * never the buffers): *count its index count, -1 when the kernel has no
 * CPU code (the GPU then finds the count itself); *noalias 1 when no
 * written buffer (out, inout) overlaps another buffer of the call, by the
 * buffers' lengths, so that the kernel's restrict variant may run.
 * HK_EINVAL, as on the CPU, when an extent is negative or the count
 * overflows: on the GPU such a call would run nothing. */
static int grid_plan(const hk_kernel_t *k, size_t n, void *const *args,
                     int64_t *count, int *noalias) {
  const hk_impl_t *im = atomic_load_explicit(&k->impl, memory_order_acquire);
  const hk_kernel_info_t *in = atomic_load(&k->info);
  *count = -1;
  *noalias = 0;
  if (!im) return HK_OK;
  int64_t x[4] = {-1, 1, 1, 1};
  im->e.range(args, n, 0, 0, x);
  if (x[0] < 0)
    return hk__fail(HK_EINVAL,
                    "kernel %s: a grid extent is negative, or the index "
                    "count overflows int64",
                    in->name);
  *count = x[0];
  int64_t lens[HK_CUDA_MAX_ARGS];
  if (in->nparams > HK_CUDA_MAX_ARGS || im->e.lens(args, n, lens))
    return HK_OK;
  for (int i = 0; i < in->nparams; i++) {
    const hk_param_info_t *p = &in->params[i];
    if (p->role != HK_ROLE_OUT && p->role != HK_ROLE_INOUT) continue;
    uintptr_t a0 = (uintptr_t)args[i];
    uintptr_t a1 = a0 + (uintptr_t)lens[i] * hk_dtype_size(p->dtype);
    for (int j = 0; j < in->nparams; j++) {
      const hk_param_info_t *q = &in->params[j];
      if (j == i || q->role == HK_ROLE_SCALAR) continue;
      uintptr_t b0 = (uintptr_t)args[j];
      uintptr_t b1 = b0 + (uintptr_t)lens[j] * hk_dtype_size(q->dtype);
      if (a0 < a1 && b0 < b1 && a0 < b1 && b0 < a1) return HK_OK;
    }
  }
  *noalias = 1;
  return HK_OK;
}

/* Waits for what k queued on st: HK_OK, or HK_EDEVICE with the last error
 * set. */
static int wait_kernel(const hk_kernel_t *k, struct hk_stream *st) {
  CUresult r = hk__cuda.api.cuStreamSynchronize(st->s);
  if (r) {
    char b[HK_CUDA_ERRLEN];
    return hk__fail(HK_EDEVICE,
                    "kernel %s failed on the GPU: %s (the CUDA context may "
                    "be unusable now)",
                    atomic_load(&k->info)->name,
                    hk__cuda_strerror(r, b, sizeof b));
  }
  return HK_OK;
}

/* Runs k on the GPU on stream s (NULL: the default): rows rows of n (a
 * rows kernel), or a flat call (rows FLAT), waiting for it when
 * sync. HK_OK; prepare_cuda's errors; HK_EDEVICE when the launch or (sync)
 * the kernel failed. The last error is set. The backend must be ready. */
static int cuda_call_rows(const hk_kernel_t *k, hk_stream_t *s, size_t rows,
                          size_t n, void *const *args, int sync) {
  const hk_cuda_entry_t *e;
  int rc = cuda_entry(k, &e);
  if (rc) return rc;
  struct hk_stream *st = hk__stream(s);
  int64_t count = -1;
  int noalias = 0;
  if (rows == FLAT && e->kind == HK_KIND_GRID &&
      (rc = grid_plan(k, n, args, &count, &noalias)))
    return rc;
  rc = rows == FLAT ? hk__cuda_launch(e, st, n, args, count, noalias)
                    : hk__cuda_launch_rows(e, st, rows, n, args);
  if (rc) return rc;
  return sync ? wait_kernel(k, st) : HK_OK;
}

/* A flat call on the GPU (as hk_call). */
static int cuda_call(const hk_kernel_t *k, hk_stream_t *s, size_t n,
                     void *const *args, int sync) {
  return cuda_call_rows(k, s, FLAT, n, args, sync);
}

/* The opening of the array paths' GPU calls (rows, axis reductions, N-D):
 * the backend ready on this thread, k of kind kind ("is not WHAT"
 * otherwise), every buffer in device memory, k's GPU entry into *e. HK_OK
 * or the error, with the last error set. */
static int cuda_array_entry(const hk_kernel_t *k, hk_kind_t kind,
                            const char *what, void *const *args,
                            const hk_cuda_entry_t **e) {
  hk_mem_t side;
  int rc = hk__cuda_ready();
  if (rc) return rc;
  const hk_kernel_info_t *info = atomic_load(&k->info);
  if (info->kind != kind)
    return hk__fail(HK_EINVAL, "kernel %s is not %s", info->name, what);
  if ((rc = buffers_side(k, args, HK_MEM_DEVICE, &side))) return rc;
  return cuda_entry(k, e);
}

int hk__call_rows_cuda(const hk_kernel_t *k, hk_stream_t *s, size_t rows,
                       size_t n, void *const *args) {
  const hk_cuda_entry_t *e = NULL;
  int rc = cuda_array_entry(k, HK_KIND_ROWS, "a rows kernel", args, &e);
  return rc ? rc : cuda_call_rows(k, s, rows, n, args, s == NULL);
}

int hk__call_reduce_rows_cuda(const hk_kernel_t *k, size_t rows, size_t m,
                              void *const *args, int how) {
  const hk_cuda_entry_t *e = NULL;
  int rc = cuda_array_entry(k, HK_KIND_REDUCTION, "a reduction", args, &e);
  return rc ? rc : hk__cuda_launch_reduce_rows(e, rows, m, args, how);
}

int hk__call_nd_cuda(const hk_kernel_t *k, int nd, const int64_t *shape,
                     const int64_t *const *st, size_t n, void *const *args,
                     unsigned flags) {
  const hk_cuda_entry_t *e = NULL;
  int rc = cuda_array_entry(k, HK_KIND_ELEMENTWISE, "elementwise", args, &e);
  if (rc) return rc;
  if (!e->nd) return HK__ND_NONE;
  struct hk_stream *s = hk__stream(NULL);
  rc = hk__cuda_launch_nd(e, s, nd, shape, st, n, args, flags);
  return rc ? rc : wait_kernel(k, s);
}

int hk__cuda_has_nd(const hk_kernel_t *k) {
  const hk_cuda_entry_t *e;
  int rc = cuda_entry(k, &e);
  return rc ? rc : e->nd != NULL;
}

int hk__call_auto(const hk_kernel_t *k, size_t n, void *const *args) {
  hk_mem_t side;
  int rc = hk__cuda_ready(); /* started: this only makes it current */
  if (rc) return rc;
  if ((rc = buffers_side(k, args, 0, &side))) return rc;
  if (side == HK_MEM_DEVICE) return cuda_call(k, NULL, n, args, 1);
  return hk__call_cpu(k, n, args);
}

/* HK_EINVAL for a NULL kernel, or NULL args to a kernel with
 * parameters (hk_call_on and hk_call_async check them; hk_call does not,
 * hk.h). */
static int call_args_ok(const char *fn, const hk_kernel_t *k,
                        void *const *args) {
  if (!k) return hk__fail(HK_EINVAL, "%s: NULL kernel", fn);
  const hk_kernel_info_t *info = atomic_load(&k->info);
  if (!args && info->nparams > 0)
    return hk__fail(HK_EINVAL,
                    "%s: NULL args, and kernel %s has %d parameters (args "
                    "holds one pointer each)",
                    fn, info->name, info->nparams);
  return HK_OK;
}

HK_API int hk_call_on(const hk_kernel_t *k, hk_backend_t b, size_t n,
                      void *const *args) {
  hk_mem_t side;
  int rc = call_args_ok("hk_call_on", k, args);
  if (rc) return rc;
  switch (b) {
    case HK_BACKEND_AUTO:
      return hk_call(k, n, args);
    case HK_BACKEND_CPU:
      if (atomic_load_explicit(&hk__cuda_started, memory_order_relaxed) &&
          ((rc = hk__cuda_ready()) ||
           (rc = buffers_side(k, args, HK_MEM_HOST, &side))))
        return rc;
      return hk__call_cpu(k, n, args);
    case HK_BACKEND_CUDA:
      if ((rc = hk__cuda_ready())) return rc;
      if ((rc = buffers_side(k, args, HK_MEM_DEVICE, &side))) return rc;
      return cuda_call(k, NULL, n, args, 1);
  }
  return hk__fail(HK_EINVAL, "hk_call_on: no backend %d", (int)b);
}

HK_API int hk_call_async(const hk_kernel_t *k, hk_stream_t *s, size_t n,
                         void *const *args) {
  hk_mem_t side;
  int rc = call_args_ok("hk_call_async", k, args);
  if (rc || (rc = hk__cuda_ready())) return rc;
  if ((rc = buffers_side(k, args, HK_MEM_DEVICE, &side))) return rc;
  return cuda_call(k, s, n, args, 0);
}

HK_API unsigned hk_kernel_backends(const hk_kernel_t *k) {
  unsigned b = 0;
  if (atomic_load_explicit(&k->impl, memory_order_acquire)) b |= HK_TARGET_CPU;
  const hk_kernel_info_t *info = atomic_load(&k->info);
  if (!(info->targets & HK_TARGET_CUDA) || check_state(k) != HK_OK) return b;
  if (atomic_load(&k->cuda)) return b | HK_TARGET_CUDA;
  if (hk__cuda_ready() != HK_OK) return b;
  if (!strcmp(info->origin, "stdlib"))
    return hk__cuda.stdlib ? b | HK_TARGET_CUDA : b;
  const hk_nvrtc_api_t *nv;
  int v;
  if (strcmp(info->origin, "so") != 0 &&
      hk__nvrtc_load(&nv, &v, NULL) == HK_OK)
    b |= HK_TARGET_CUDA;
  return b;
}

HK_API int hk_kernel_prepare(hk_kernel_t *k, hk_backend_t b) {
  if (!k) return hk__fail(HK_EINVAL, "hk_kernel_prepare: NULL kernel");
  switch (b) {
    case HK_BACKEND_CUDA:
      return prepare_cuda(k);
    case HK_BACKEND_CPU: /* compiled at load: ready, or never */
      return atomic_load(&k->impl) ? HK_OK : hk__call_failure(k);
    case HK_BACKEND_AUTO:
      return HK_OK;
  }
  return hk__fail(HK_EINVAL, "hk_kernel_prepare: no backend %d", (int)b);
}
