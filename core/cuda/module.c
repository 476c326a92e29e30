/* module.c — the GPU code of a plugin module: its CUDA unit compiled by
 * NVRTC through the build path (core/build.c, cuda/nvrtc.c), the cubin
 * kept in the disk cache, loaded as one CUDA module, and an entry resolved
 * for each of its CUDA instances (hk__module_cuda).
 *
 * A module is compiled once for all its kernels (one NVRTC program), under
 * the context's load lock, so a reload never races a compile; the CUDA
 * module lives as long as the hk module (retired ones included, freed by
 * hk__cuda_module_free in launch.c), so a handle never points at unloaded
 * GPU code. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "build.h"
#include "fsutil.h"
#include "registry.h"

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* The cubin for key from the disk cache (malloc'ed, *len bytes), or NULL:
 * a miss (a corrupt entry is logged and removed by the cache). */
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
  char *b = malloc(size ? size : 1);
  if (b && hku_pread_all(fd, b, size, 0)) {
    free(b);
    b = NULL;
  }
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
    hk__log(ctx, "cuda: %s: not cached: %s", m->path, hk__cuda_why(&d));
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
    char b[HK_CUDA_ERRLEN];
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
  for (int i = 0; i < m->ninst; i++) {
    if (!(hkc_instance_targets(m->inst[i]) & HK_TARGET_CUDA)) continue;
    hku_diags d = HKU_DIAGS_INIT;
    int rc = hk__cuda_entry_make(cm->mod, m->infos[i], &cm->entries[i], &d);
    if (rc) hku_buf_printf(msg, "%s: %s", m->path, hk__cuda_why(&d));
    hku_diags_free(&d);
    if (rc) return rc;
  }
  return HK_OK;
}

/* Everything before the compile: the module's kind, NVRTC, the unit.
 * HK_OK, or the failure said in msg. */
static int cuda_unit(hk_module_t *m, const hk_nvrtc_api_t **nv, int *nvv,
                     hkc_unit **u, hku_buf *msg) {
  if (m->kind == HK__SRC_SO) {
    hku_buf_printf(msg, "%s: prebuilt plugins (.so) hold CPU code only; "
                   "load the kernel file (.json) to run it on the GPU",
                   m->path);
    return HK_EUNSUPPORTED;
  }
  hku_diags d = HKU_DIAGS_INIT;
  int rc = hk__nvrtc_load(nv, nvv, &d);
  if (rc)
    hku_buf_printf(msg, "%s: cannot compile for the GPU: %s", m->path,
                   hk__cuda_why(&d));
  hku_diags_free(&d);
  if (rc) return HK_EUNSUPPORTED;
  if (hk__build_unit(m->file, HKC_LANG_CUDA, 0, u, NULL)) {
    hku_buf_put(msg, "out of memory");
    return HK_ENOMEM;
  }
  return HK_OK;
}

int hk__module_cuda(hk_context_t *ctx, hk_module_t *m) {
  HK_ASSERT(hk__load_held(ctx));
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
    const char *why = msg.oom ? "out of memory" : hku_buf_str(&msg);
    m->cuda_rc = rc;
    m->cuda_note = strdup(why);
    hk__fail(rc, "%s", why);
  }
  hkc_unit_free(u);
  hku_buf_free(&msg);
  return rc;
}
