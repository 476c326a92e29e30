/* cuda_call.c — kernels on the GPU: their GPU entries (the stdlib's from the
 * embedded fatbin, plugins' compiled by NVRTC and cached on disk), launches,
 * and the calls that choose between CPU and GPU.
 *
 * A handle's GPU entry is made on its first GPU call (or by
 * hk_kernel_prepare) and cached in the handle: later calls load one atomic
 * pointer, build the kernel's argument array on the stack and launch. A
 * plugin module is compiled once for all its kernels (one NVRTC program),
 * under the context's load lock, so a reload never races a compile; the
 * CUDA module lives as long as the hk module (retired modules included),
 * so a handle never points at unloaded GPU code.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cuda.h"
#include "build.h"
#include "fsutil.h"
#include "registry.h"
#include "sha256.h"

#define BLOCK 256u
/* Partial results of a reduction: at most this many blocks. */
#define MAX_PARTS 1024u
/* Kernel arguments on the stack. */
#define MAX_ARGS 64

/* The per-module GPU code: one CUDA module, an entry per instance (fn NULL
 * for instances without the cuda target). */
struct hk_cuda_module {
  CUmodule mod;
  hk_cuda_entry_t *entries;
};

/* ---- Entries ------------------------------------------------------------------ */

static int resolve_entry(CUmodule mod, const hk_kernel_info_t *info,
                         unsigned lanes, hk_cuda_entry_t *e, char *why,
                         size_t n) {
  const hk_cuda_api_t *a = &hk__cuda.api;
  char fname[200];
  memset(e, 0, sizeof *e);
  e->kind = info->kind;
  e->info = info;
  e->vec_lanes = lanes ? lanes : 1;
  e->out_index = -1;
  if (info->nparams + 4 > MAX_ARGS) {
    snprintf(why, n, "%s has %d parameters; the GPU backend takes at most %d",
             info->name, info->nparams, MAX_ARGS - 4);
    return -1;
  }
  CUresult r;
  if (info->kind == HK_KIND_REDUCTION) {
    for (int i = 0; i < info->nparams; i++)
      if (info->params[i].role == HK_ROLE_OUT) e->out_index = i;
    e->acc_size = (uint32_t)hk_dtype_size(info->params[e->out_index].dtype);
    snprintf(fname, sizeof fname, "hk_cuda_part__%s", info->name);
    r = a->cuModuleGetFunction(&e->fn, mod, fname);
    if (!r) {
      snprintf(fname, sizeof fname, "hk_cuda_merge__%s", info->name);
      r = a->cuModuleGetFunction(&e->merge, mod, fname);
    }
  } else {
    snprintf(fname, sizeof fname, "hk_cuda__%s", info->name);
    r = a->cuModuleGetFunction(&e->fn, mod, fname);
  }
  if (r) {
    char b[256];
    snprintf(why, n, "GPU code has no %s (%s)", fname,
             hk__cuda_strerror(r, b, sizeof b));
    return -1;
  }
  return 0;
}

/* Lanes of the elementwise vector loop the emitter wrote. */
static unsigned lanes_of(const hk_kernel_info_t *info) {
  if (info->kind != HK_KIND_ELEMENTWISE) return 1;
  size_t widest = 1;
  for (int i = 0; i < info->nparams; i++)
    if (info->params[i].role != HK_ROLE_SCALAR &&
        hk_dtype_size(info->params[i].dtype) > widest)
      widest = hk_dtype_size(info->params[i].dtype);
  return hk_abi_cuda_lanes(widest);
}

static pthread_mutex_t stdlib_lock = PTHREAD_MUTEX_INITIALIZER;

/* A stdlib kernel's entry, from the embedded module. */
static int prepare_stdlib(hk_kernel_t *k) {
  const hk_kernel_info_t *info = atomic_load(&k->info);
  if (!hk__cuda.stdlib)
    return hk__fail(HK_EUNSUPPORTED, "%s has no GPU code: %s", info->name,
                    hk__cuda.stdlib_note);
  char why[512];
  int rc = HK_OK;
  pthread_mutex_lock(&stdlib_lock);
  if (!atomic_load(&k->cuda)) {
    if (resolve_entry(hk__cuda.stdlib, info, lanes_of(info), &k->stdlib_cuda,
                      why, sizeof why))
      rc = hk__fail(HK_EINTERNAL, "%s: %s", info->name, why);
    else
      atomic_store_explicit(&k->cuda, &k->stdlib_cuda, memory_order_release);
  }
  pthread_mutex_unlock(&stdlib_lock);
  return rc;
}

/* ---- NVRTC and the disk cache ------------------------------------------------------- */

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* Reads n bytes at the start of fd (malloc'ed), or NULL. */
static char *read_fd(int fd, size_t n) {
  char *b = malloc(n ? n : 1);
  if (b && hku_pread_all(fd, b, n, 0)) {
    free(b);
    b = NULL;
  }
  return b;
}

/* The cubin for key from the disk cache, or NULL (a miss; a corrupt entry
 * is logged and removed by the cache). */
static char *cache_lookup(hk_context_t *ctx, hk_module_t *m,
                          const uint8_t key[32], size_t *len) {
  if (!ctx->cache) return NULL;
  int status;
  size_t size = 0;
  int fd = hk__cache_get(ctx->cache, key, &size, NULL, &status);
  if (fd < 0) {
    if (status == HK_CACHE_CORRUPT)
      hk__log(ctx, "cuda: %s: disk cache entry was corrupt; compiling again",
              m->path);
    return NULL;
  }
  char *b = read_fd(fd, size);
  close(fd);
  *len = size;
  return b;
}

/* Stores cubin under key (best effort: a failure is logged). */
static void cache_store(hk_context_t *ctx, hk_module_t *m,
                        const uint8_t key[32], const hk_object_t *cubin,
                        const char *arch) {
  if (!ctx->cache) return;
  hku_diags d = HKU_DIAGS_INIT;
  char meta[4400];
  snprintf(meta, sizeof meta, "cuda %s %s", arch, m->path);
  if (hk__cache_put(ctx->cache, key, cubin->image, cubin->size, meta, &d))
    hk__log(ctx, "cuda: %s: not cached: %s", m->path,
            d.n ? d.v[0].msg : "out of memory");
  hku_diags_free(&d);
}

/* Loads the cubin of m's unit u: from the disk cache, else compiled by
 * NVRTC (and cached). HK_OK and *mod, or the failure said in msg. */
static int load_cubin(hk_context_t *ctx, hk_module_t *m, const hkc_unit *u,
                      const hk_nvrtc_api_t *nv, int nvv, const char *arch,
                      CUmodule *mod, hku_buf *msg) {
  uint8_t key[32];
  size_t len = 0;
  hk__nvrtc_key(u, nvv, arch, key);
  char *cached = cache_lookup(ctx, m, key, &len);
  if (cached) {
    CUresult r = hk__cuda.api.cuModuleLoadData(mod, cached);
    free(cached);
    if (!r) {
      hk__log(ctx, "cuda: %s: loaded from the disk cache", m->path);
      return HK_OK;
    }
  }
  double t0 = now_ms();
  hk_compiler_t c = hk__compiler_nvrtc(nv);
  hk_compile_opts_t o = {.arch = arch};
  hk_object_t cubin;
  hku_diags d = HKU_DIAGS_INIT;
  int rc = hk__build_compile(&c, u, &o, NULL, &cubin, &d);
  if (rc) {
    rc = d.oom ? HK_ENOMEM : HK_ECOMPILE;
    hku_diags_format(&d, msg);
    hku_diags_free(&d);
    return rc;
  }
  hku_diags_free(&d);
  CUresult r = hk__cuda.api.cuModuleLoadData(mod, cubin.image);
  if (r) {
    char b[256];
    hku_buf_printf(msg, "%s: the GPU code NVRTC made does not load: %s",
                   m->path, hk__cuda_strerror(r, b, sizeof b));
    rc = HK_EUNSUPPORTED;
  } else {
    hk__log(ctx, "cuda: %s: compiled by NVRTC for %s in %.0f ms", m->path,
            arch, now_ms() - t0);
    cache_store(ctx, m, key, &cubin, arch);
  }
  hk__object_free(&cubin);
  return rc;
}

/* Resolves the GPU entry of every CUDA instance of m in cm. HK_OK, or
 * HK_EUNSUPPORTED said in msg. */
static int resolve_cuda(hk_module_t *m, struct hk_cuda_module *cm,
                        hku_buf *msg) {
  char why[600];
  for (int i = 0; i < m->ninst; i++) {
    if (!(hkc_instance_targets(m->inst[i]) & HK_TARGET_CUDA)) continue;
    if (resolve_entry(cm->mod, m->infos[i], lanes_of(m->infos[i]),
                      &cm->entries[i], why, sizeof why)) {
      hku_buf_printf(msg, "%s: %s", m->path, why);
      return HK_EUNSUPPORTED;
    }
  }
  return HK_OK;
}

/* Everything before the compile: the module's kind, NVRTC, the unit.
 * HK_OK, or the failure said in msg. */
static int cuda_unit(hk_module_t *m, const hk_nvrtc_api_t **nv, int *nvv,
                     hkc_unit **u, hku_buf *msg) {
  char why[600];
  if (m->kind == HK__SRC_SO) {
    hku_buf_printf(msg, "%s: prebuilt plugins (.so) hold CPU code only; "
                   "load the kernel file (.json) to run it on the GPU",
                   m->path);
    return HK_EUNSUPPORTED;
  }
  if (hk__nvrtc(nv, nvv, why, sizeof why)) {
    hku_buf_printf(msg, "%s: cannot compile for the GPU: %s", m->path, why);
    return HK_EUNSUPPORTED;
  }
  if (hk__build_unit(m->file, HKC_LANG_CUDA, 0, u, NULL)) {
    hku_buf_put(msg, "out of memory");
    return HK_ENOMEM;
  }
  return HK_OK;
}

int hk__module_cuda(hk_context_t *ctx, hk_module_t *m) {
  if (m->cuda) return HK_OK;
  if (m->cuda_note) return hk__fail(m->cuda_rc, "%s", m->cuda_note);
  hku_buf msg = HKU_BUF_INIT;
  hkc_unit *u = NULL;
  const hk_nvrtc_api_t *nv = NULL;
  int nvv = 0, rc = HK_OK;
  char arch[32];
  snprintf(arch, sizeof arch, "sm_%d%d", hk__cuda.info.major,
           hk__cuda.info.minor);
  struct hk_cuda_module *cm = calloc(1, sizeof *cm);
  if (cm) cm->entries = calloc((size_t)m->ninst, sizeof *cm->entries);
  if (!cm || !cm->entries) {
    rc = HK_ENOMEM;
    hku_buf_put(&msg, "out of memory");
  }
  if (rc == HK_OK) rc = cuda_unit(m, &nv, &nvv, &u, &msg);
  if (rc == HK_OK) rc = load_cubin(ctx, m, u, nv, nvv, arch, &cm->mod, &msg);
  if (rc == HK_OK) rc = resolve_cuda(m, cm, &msg);
  if (rc == HK_OK) {
    m->cuda = cm;
    cm = NULL;
  }
  if (cm) {
    if (cm->mod) hk__cuda.api.cuModuleUnload(cm->mod);
    free(cm->entries);
    free(cm);
  }
  if (rc) {
    m->cuda_rc = rc;
    m->cuda_note = strdup(msg.oom ? "out of memory" : hku_buf_str(&msg));
    hk__fail(rc, "%s", msg.oom ? "out of memory" : hku_buf_str(&msg));
  }
  hkc_unit_free(u);
  hku_buf_free(&msg);
  return rc;
}

void hk__cuda_module_free(hk_module_t *m) {
  if (m->cuda) {
    if (m->cuda->mod && atomic_load(&hk__cuda_started))
      hk__cuda.api.cuModuleUnload(m->cuda->mod);
    free(m->cuda->entries);
    free(m->cuda);
  }
  free(m->cuda_note);
}

/* Why k cannot run at all (unloaded, stale), or HK_OK. */
static int check_state(const hk_kernel_t *k) {
  int s = atomic_load(&k->state);
  return s == HK__LIVE || s == HK__NO_CPU ? HK_OK : hk__call_failure(k);
}

/* Makes k's GPU entry. */
static int prepare_cuda(hk_kernel_t *k) {
  int rc = hk__cuda_ready();
  if (rc) return rc;
  if (atomic_load_explicit(&k->cuda, memory_order_acquire)) return HK_OK;
  const hk_kernel_info_t *info = atomic_load(&k->info);
  if (!(info->targets & HK_TARGET_CUDA))
    return hk__fail(HK_EUNSUPPORTED,
                    "kernel %s has no cuda target (its kernel file gives no "
                    "GPU code)",
                    info->name);
  if ((rc = check_state(k))) return rc;
  hk_context_t *ctx = k->ctx;
  pthread_mutex_lock(&ctx->load_lock);
  hk_module_t *m = k->mod;
  if (!m) {
    pthread_mutex_unlock(&ctx->load_lock);
    return prepare_stdlib(k);
  }
  rc = hk__module_cuda(ctx, m);
  if (!rc && !atomic_load(&k->cuda)) {
    for (int i = 0; i < m->ninst; i++)
      if (m->kernels[i] == k && m->cuda->entries[i].fn)
        atomic_store_explicit(&k->cuda, &m->cuda->entries[i],
                              memory_order_release);
    if (!atomic_load(&k->cuda))
      rc = hk__fail(HK_EINTERNAL, "kernel %s: no GPU entry in its module",
                    info->name);
  }
  pthread_mutex_unlock(&ctx->load_lock);
  return rc;
}

/* ---- Launches ------------------------------------------------------------------ */

static unsigned blocks_for(size_t work, unsigned cap) {
  size_t b = (work + BLOCK - 1) / BLOCK;
  if (b < 1) b = 1;
  return b > cap ? cap : (unsigned)b;
}

int hk__cuda_launch(const hk_cuda_entry_t *e, struct hk_stream *st, size_t n,
                    void *const *args) {
  const hk_cuda_api_t *a = &hk__cuda.api;
  const hk_kernel_info_t *in = e->info;
  const unsigned grid_cap = (unsigned)hk__cuda.info.sm_count * 16u;
  void *kp[MAX_ARGS];
  int np = 0;
  CUresult r;
  if (e->kind != HK_KIND_REDUCTION) {
    if (e->kind == HK_KIND_ELEMENTWISE && n == 0) return HK_OK;
    for (int i = 0; i < in->nparams; i++)
      kp[np++] = in->params[i].role == HK_ROLE_SCALAR ? args[i]
                                                      : (void *)&args[i];
    kp[np++] = &n;
    size_t work = e->kind == HK_KIND_ELEMENTWISE
                      ? (n + e->vec_lanes - 1) / e->vec_lanes
                      : n;
    r = a->cuLaunchKernel(e->fn, blocks_for(work, grid_cap), 1, 1, BLOCK, 1,
                          1, 0, st->s, kp, NULL);
  } else {
    /* part: ins and scalars, the partials, n; merge: the partials, their
     * count, out, the scalars, n. One stream lock: the partials buffer is
     * the stream's, and the two launches must not interleave with another
     * reduction's. */
    size_t parts = blocks_for(n, MAX_PARTS);
    for (int i = 0; i < in->nparams; i++) {
      if (i == e->out_index) continue;
      kp[np++] = in->params[i].role == HK_ROLE_SCALAR ? args[i]
                                                      : (void *)&args[i];
    }
    pthread_mutex_lock(&st->lock);
    kp[np++] = &st->scratch;
    kp[np++] = &n;
    r = a->cuLaunchKernel(e->fn, (unsigned)parts, 1, 1, BLOCK, 1, 1, 0, st->s,
                          kp, NULL);
    if (!r) {
      np = 0;
      kp[np++] = &st->scratch;
      kp[np++] = &parts;
      kp[np++] = (void *)&args[e->out_index];
      for (int i = 0; i < in->nparams; i++)
        if (in->params[i].role == HK_ROLE_SCALAR) kp[np++] = args[i];
      kp[np++] = &n;
      r = a->cuLaunchKernel(e->merge, 1, 1, 1, BLOCK, 1, 1, 0, st->s, kp,
                            NULL);
    }
    pthread_mutex_unlock(&st->lock);
  }
  if (r) {
    char b[256];
    return hk__fail(HK_EINVAL, "kernel %s: GPU launch failed: %s", in->name,
                    hk__cuda_strerror(r, b, sizeof b));
  }
  return HK_OK;
}

/* ---- Where a call runs --------------------------------------------------------- */

/* Checks that every buffer of the call lives on side want (HK_MEM_HOST or
 * HK_MEM_DEVICE; 0: either, the same for all) and returns the side found
 * (HK_MEM_HOST for a call without buffers), or an error. The backend must
 * be ready (hk__cuda_ready) on this thread. */
static int buffers_side(const hk_kernel_t *k, void *const *args, int want,
                        hk_mem_t *side) {
  const hk_kernel_info_t *info = atomic_load(&k->info);
  const char *host = NULL, *dev = NULL;
  const void *ptrs[MAX_ARGS] = {0};
  const char *names[MAX_ARGS];
  hk_mem_t where[MAX_ARGS];
  int nb = 0;
  for (int i = 0; i < info->nparams && nb < MAX_ARGS; i++) {
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

static int cuda_call(const hk_kernel_t *k, hk_stream_t *s, size_t n,
                     void *const *args, int sync) {
  const hk_cuda_entry_t *e = atomic_load_explicit(&k->cuda, memory_order_acquire);
  int rc;
  if (__builtin_expect(e == NULL, 0)) {
    if ((rc = prepare_cuda((hk_kernel_t *)k))) return rc;
    e = atomic_load_explicit(&k->cuda, memory_order_acquire);
  }
  if ((rc = check_state(k))) return rc;
  struct hk_stream *st = hk__stream(s);
  if ((rc = hk__cuda_launch(e, st, n, args))) return rc;
  if (sync) {
    CUresult r = hk__cuda.api.cuStreamSynchronize(st->s);
    if (r) {
      char b[256];
      return hk__fail(HK_EINVAL,
                      "kernel %s failed on the GPU: %s (the CUDA context may "
                      "be unusable now)",
                      atomic_load(&k->info)->name,
                      hk__cuda_strerror(r, b, sizeof b));
    }
  }
  return HK_OK;
}

int hk__call_auto(const hk_kernel_t *k, size_t n, void *const *args) {
  hk_mem_t side;
  int rc = hk__cuda_ready(); /* started: this only makes it current */
  if (rc) return rc;
  if ((rc = buffers_side(k, args, 0, &side))) return rc;
  if (rc) return rc;
  if (side == HK_MEM_DEVICE) return cuda_call(k, NULL, n, args, 1);
  return hk__call_cpu(k, n, args);
}

HK_API int hk_call_on(const hk_kernel_t *k, hk_backend_t b, size_t n,
                      void *const *args) {
  hk_mem_t side;
  int rc;
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
  int rc = hk__cuda_ready();
  if (rc) return rc;
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
  char why[512];
  if (strcmp(info->origin, "so") != 0 && hk__nvrtc(&nv, &v, why, sizeof why) == 0)
    b |= HK_TARGET_CUDA;
  return b;
}

HK_API int hk_kernel_prepare(hk_kernel_t *k, hk_backend_t b) {
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
