/* cuda_call.c — the GPU code of plugin modules: NVRTC compiles a module's
 * CUDA (one program for all its kernels) and the disk cache keeps the
 * cubin (hk__module_cuda). This block moves to the common build path and
 * the compiler interface (core/build.c, core/cuda/nvrtc.c); the rest of
 * the backend is core/cuda/ (see cuda.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cuda.h"
#include "fsutil.h"
#include "registry.h"
#include "sha256.h"

/* ---- Adapters to core/cuda/ for the block below (they go with it) ------ */

/* hk__cuda_lanes, by the block's name. */
static unsigned lanes_of(const hk_kernel_info_t *info) {
  return hk__cuda_lanes(info);
}

/* hk__cuda_entry_make with the reason in why (n bytes): 0 or -1. lanes is
 * lanes_of(info), which the entry computes itself. */
static int resolve_entry(CUmodule mod, const hk_kernel_info_t *info,
                         unsigned lanes, hk_cuda_entry_t *e, char *why,
                         size_t n) {
  (void)lanes;
  hku_diags d = HKU_DIAGS_INIT;
  int rc = hk__cuda_entry_make(mod, info, e, &d);
  if (rc) snprintf(why, n, "%s", hk__cuda_why(&d));
  hku_diags_free(&d);
  return rc ? -1 : 0;
}

int hk__nvrtc(const hk_nvrtc_api_t **api, int *version, char *why,
              size_t n) {
  hku_diags d = HKU_DIAGS_INIT;
  int rc = hk__nvrtc_load(api, version, &d);
  if (rc) snprintf(why, n, "%s", hk__cuda_why(&d));
  hku_diags_free(&d);
  return rc ? -1 : 0;
}

/* Flags of every NVRTC compile: part of the cache key. Contraction into
 * FMAs is off, as for the CPU tiers and the nvcc-built stdlib, so that the
 * GPU computes what the CPU does. */
static const char *const nvrtc_flags[] = {"--std=c++17", "--fmad=false",
                                          "-default-device"};

/* ---- NVRTC and the disk cache ------------------------------------------------------- */

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void cuda_key(const char *src, int nvrtc_version, uint8_t key[32]) {
  hk_sha256_t s;
  hk__sha256_init(&s);
  char head[160];
  snprintf(head, sizeof head, "hk-cuda abi=%u nvrtc=%d arch=sm_%d%d;",
           HK_ABI_VERSION, nvrtc_version, hk__cuda.info.major,
           hk__cuda.info.minor);
  hk__sha256_update(&s, head, strlen(head));
  for (size_t i = 0; i < sizeof nvrtc_flags / sizeof *nvrtc_flags; i++)
    hk__sha256_update(&s, nvrtc_flags[i], strlen(nvrtc_flags[i]) + 1);
  hk__sha256_update(&s, src, strlen(src));
  hk__sha256_final(&s, key);
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
                        const uint8_t key[32], const char *cubin, size_t len,
                        const char *arch) {
  if (!ctx->cache) return;
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s/.hk-cubin-XXXXXX", hk__cache_dir(ctx->cache));
  int fd = mkstemp(tmp);
  char err[4400] = "";
  if (fd < 0 || hku_write_all(fd, cubin, len) != HK_OK)
    snprintf(err, sizeof err, "cannot write %s: %s", tmp, strerror(errno));
  if (fd >= 0) close(fd);
  if (!err[0]) {
    char meta[4400];
    snprintf(meta, sizeof meta, "cuda %s %s", arch, m->path);
    hk__cache_put(ctx->cache, key, tmp, meta, err, sizeof err);
  }
  if (fd >= 0) unlink(tmp);
  if (err[0]) hk__log(ctx, "cuda: %s: not cached: %s", m->path, err);
}

/* NVRTC's "NAME(LINE): error: MSG" lines as "NAME:LINE: error: MSG", the
 * form the line mapper reads. */
static char *gcc_style(const char *log) {
  size_t n = strlen(log);
  char *o = malloc(n + 1), *w = o;
  if (!o) return NULL;
  for (const char *p = log; *p;) {
    const char *nl = strchr(p, '\n');
    size_t len = nl ? (size_t)(nl - p) : strlen(p);
    const char *lp = memchr(p, '(', len);
    const char *rp = lp ? memchr(lp, ')', len - (size_t)(lp - p)) : NULL;
    if (lp && rp && rp[1] == ':' && rp > lp + 1 &&
        strspn(lp + 1, "0123456789") == (size_t)(rp - lp - 1)) {
      memcpy(w, p, (size_t)(lp - p));
      w += lp - p;
      *w++ = ':';
      memcpy(w, lp + 1, (size_t)(rp - lp - 1));
      w += rp - lp - 1;
      size_t rest = len - (size_t)(rp + 1 - p);
      memcpy(w, rp + 1, rest);
      w += rest;
    } else {
      memcpy(w, p, len);
      w += len;
    }
    if (nl) *w++ = '\n';
    p = nl ? nl + 1 : p + len;
  }
  *w = '\0';
  return o;
}

char *hk__nvrtc_compile(const hkc_file *f, const hk_nvrtc_api_t *nv,
                        const char *src, const hkc_linemap *map,
                        const char *arch, size_t *len, hku_diags *d) {
  char archopt[64];
  snprintf(archopt, sizeof archopt, "--gpu-architecture=%s", arch);
  const char *opts[8];
  int nopts = 0;
  opts[nopts++] = archopt;
  for (size_t i = 0; i < sizeof nvrtc_flags / sizeof *nvrtc_flags; i++)
    opts[nopts++] = nvrtc_flags[i];
  nvrtcProgram prog = NULL;
  nvrtcResult r = nv->nvrtcCreateProgram(&prog, src, "hk_kernel.cu", 0, NULL,
                                         NULL);
  if (r) {
    hku_diag_add(d, HKU_ERROR, f->path, 0, 0, "NVRTC cannot start: %s",
                 nv->nvrtcGetErrorString(r));
    return NULL;
  }
  r = nv->nvrtcCompileProgram(prog, nopts, opts);
  char *cubin = NULL;
  if (r) {
    size_t ls = 0;
    nv->nvrtcGetProgramLogSize(prog, &ls);
    char *log = malloc(ls + 1);
    if (log) {
      log[0] = '\0';
      nv->nvrtcGetProgramLog(prog, log);
      log[ls] = '\0';
      char *g = gcc_style(log);
      if (!g || !hkc_report_compiler_output(g, map, f, "NVRTC", d))
        hku_diag_add(d, HKU_ERROR, f->path, 0, 0,
                     "NVRTC failed (%s): %s", nv->nvrtcGetErrorString(r), log);
      free(g);
      free(log);
    } else {
      d->oom = 1;
    }
  } else if (nv->nvrtcGetCUBINSize(prog, len) == 0 &&
             (cubin = malloc(*len ? *len : 1)) != NULL) {
    if (nv->nvrtcGetCUBIN(prog, cubin)) {
      free(cubin);
      cubin = NULL;
      hku_diag_add(d, HKU_ERROR, f->path, 0, 0, "NVRTC gave no cubin");
    }
  }
  nv->nvrtcDestroyProgram(&prog);
  return cubin;
}

/* Makes m->cuda: the module's GPU code. ctx->load_lock held. HK_OK, or an
 * error (also remembered in m->cuda_note, so that it is not retried). */
int hk__module_cuda(hk_context_t *ctx, hk_module_t *m) {
  if (m->cuda) return HK_OK;
  if (m->cuda_note) return hk__fail(m->cuda_rc, "%s", m->cuda_note);
  hku_diags d = HKU_DIAGS_INIT;
  hku_buf src = HKU_BUF_INIT, msg = HKU_BUF_INIT;
  hkc_linemap map = {0};
  char *cubin = NULL;
  size_t len = 0;
  int rc = HK_OK;
  const hk_nvrtc_api_t *nv = NULL;
  int nvv = 0;
  char why[600], arch[32];
  snprintf(arch, sizeof arch, "sm_%d%d", hk__cuda.info.major,
           hk__cuda.info.minor);
  struct hk_cuda_module *cm = calloc(1, sizeof *cm);
  if (cm) cm->entries = calloc((size_t)m->ninst, sizeof *cm->entries);
  if (!cm || !cm->entries) {
    rc = HK_ENOMEM;
    hku_buf_put(&msg, "out of memory");
    goto out;
  }
  if (m->kind == HK__SRC_SO) {
    rc = HK_EUNSUPPORTED;
    hku_buf_printf(&msg, "%s: prebuilt plugins (.so) hold CPU code only; "
                   "load the kernel file (.json) to run it on the GPU",
                   m->path);
    goto out;
  }
  if (hk__nvrtc(&nv, &nvv, why, sizeof why)) {
    rc = HK_EUNSUPPORTED;
    hku_buf_printf(&msg, "%s: cannot compile for the GPU: %s", m->path, why);
    goto out;
  }
  hkc_file *files[] = {m->file};
  if (hkc_emit_cuda_mapped(files, 1, HKC_EMIT_PLUGIN, &src, &map) || src.oom) {
    rc = HK_ENOMEM;
    hku_buf_put(&msg, "out of memory");
    goto out;
  }
  uint8_t key[32];
  cuda_key(hku_buf_str(&src), nvv, key);
  CUresult r = 1;
  if ((cubin = cache_lookup(ctx, m, key, &len)) != NULL) {
    r = hk__cuda.api.cuModuleLoadData(&cm->mod, cubin);
    if (!r)
      hk__log(ctx, "cuda: %s: loaded from the disk cache", m->path);
    free(cubin);
    cubin = NULL;
  }
  if (r) {
    double t0 = now_ms();
    cubin = hk__nvrtc_compile(m->file, nv, hku_buf_str(&src), &map, arch,
                              &len, &d);
    if (!cubin) {
      rc = d.oom ? HK_ENOMEM : HK_ECOMPILE;
      hku_diags_format(&d, &msg);
      goto out;
    }
    if ((r = hk__cuda.api.cuModuleLoadData(&cm->mod, cubin))) {
      char b[256];
      rc = HK_EUNSUPPORTED;
      hku_buf_printf(&msg, "%s: the GPU code NVRTC made does not load: %s",
                     m->path, hk__cuda_strerror(r, b, sizeof b));
      goto out;
    }
    hk__log(ctx, "cuda: %s: compiled by NVRTC for %s in %.0f ms", m->path,
            arch, now_ms() - t0);
    cache_store(ctx, m, key, cubin, len, arch);
  }
  for (int i = 0; i < m->ninst; i++) {
    if (!(m->inst[i]->k->targets & HK_TARGET_CUDA)) continue;
    if (resolve_entry(cm->mod, m->infos[i], lanes_of(m->infos[i]),
                      &cm->entries[i], why, sizeof why)) {
      rc = HK_EUNSUPPORTED;
      hku_buf_printf(&msg, "%s: %s", m->path, why);
      goto out;
    }
  }
  m->cuda = cm;
  cm = NULL;
out:
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
  free(cubin);
  hku_buf_free(&src);
  hku_buf_free(&msg);
  hkc_linemap_free(&map);
  hku_diags_free(&d);
  return rc;
}
