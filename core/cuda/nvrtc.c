/* nvrtc.c — NVRTC behind compiler.h: a unit of generated CUDA compiled
 * into a cubin for one GPU architecture, and the cache key of that cubin.
 * Needs the NVRTC library (api.h), not a device. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "compiler.h"
#include "api.h"
#include "sha256.h"

/* Flags of every NVRTC compile: part of the cache key. */
static const char *const nvrtc_flags[] = {"--std=c++17", "-default-device"};

/* Contraction into FMAs is off, as for the CPU tiers and the nvcc-built
 * stdlib, so that the GPU computes what the CPU does; on for a file whose
 * CUDA kernels all ask for "fp": "fast". Part of the cache key. */
static const char *fmad_flag(const hkc_unit *u) {
  return hkc_file_fp_fast(hkc_unit_file(u), HK_TARGET_CUDA) ? "--fmad=true"
                                                            : "--fmad=false";
}

void hk__nvrtc_key(const hkc_unit *u, int version, const char *arch,
                   uint8_t key[32]) {
  hk_sha256_t s;
  hk__sha256_init(&s);
  char head[160];
  snprintf(head, sizeof head, "hk-cuda abi=%u nvrtc=%d arch=%s;",
           HK_ABI_VERSION, version, arch);
  hk__sha256_update(&s, head, strlen(head));
  for (size_t i = 0; i < HK_COUNT(nvrtc_flags); i++)
    hk__sha256_update(&s, nvrtc_flags[i], strlen(nvrtc_flags[i]) + 1);
  hk__sha256_update(&s, fmad_flag(u), strlen(fmad_flag(u)) + 1);
  hk__sha256_update(&s, hkc_unit_text(u), hkc_unit_len(u));
  hk__sha256_final(&s, key);
}

/* The column of the caret NVRTC prints under the source line it echoes
 * (indented by 2) after an error line: line 2 after p, when it is blanks
 * and a caret; else 0. */
static unsigned caret_column(const char *p) {
  const char *l1 = strchr(p, '\n');
  const char *l2 = l1 ? strchr(l1 + 1, '\n') : NULL;
  if (!l2) return 0;
  const char *c = l2 + 1;
  size_t blanks = strspn(c, " ");
  if (c[blanks] != '^' || blanks < 2 || (c[blanks + 1] && c[blanks + 1] != '\n'))
    return 0;
  return (unsigned)(blanks - 2 + 1);
}

/* NVRTC's "NAME(LINE): error: MSG" lines as "NAME:LINE:COL: error: MSG"
 * (COL from the caret under the echoed line, when there is one), the
 * form the line mapper reads. malloc'ed, or NULL. */
static char *gcc_style(const char *log) {
  size_t n = strlen(log);
  char *o = malloc(n + 32 * (n / 16 + 1)), *w = o;
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
      unsigned col = caret_column(p);
      if (col) w += sprintf(w, ":%u", col);
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

/* Reports a failed compile's log: located through the unit's line map
 * where it can be, else as it is. HK_ECOMPILE or HK_ENOMEM. */
static int report_log(const hk_nvrtc_api_t *nv, nvrtcProgram prog,
                      nvrtcResult r, const hkc_unit *u, hku_diags *d) {
  const char *path = hkc_file_path(hkc_unit_file(u));
  size_t ls = 0;
  nv->nvrtcGetProgramLogSize(prog, &ls);
  char *log = malloc(ls + 1);
  if (!log) {
    d->oom = 1;
    return HK_ENOMEM;
  }
  log[0] = '\0';
  nv->nvrtcGetProgramLog(prog, log);
  log[ls] = '\0';
  char *g = gcc_style(log);
  if (!g || !hkc_unit_report(u, g, "NVRTC", d))
    hku_diag_add(d, HKU_ERROR, path, 0, 0, "NVRTC failed (%s): %s",
                 nv->nvrtcGetErrorString(r), log);
  free(g);
  free(log);
  return HK_ECOMPILE;
}

/* The cubin of a compiled program into out (its PTX, with its ending 0,
 * for a virtual architecture: ptx). HK_OK or HK_ECOMPILE. */
static int take_cubin(const hk_nvrtc_api_t *nv, nvrtcProgram prog,
                      const char *path, int ptx, hk_object_t *out,
                      hku_diags *d) {
  if ((ptx ? nv->nvrtcGetPTXSize : nv->nvrtcGetCUBINSize)(prog, &out->size) ||
      !(out->image = malloc(out->size ? out->size : 1)) ||
      (ptx ? nv->nvrtcGetPTX : nv->nvrtcGetCUBIN)(prog, out->image)) {
    free(out->image);
    out->image = NULL;
    hku_diag_add(d, HKU_ERROR, path, 0, 0, "NVRTC gave no %s",
                 ptx ? "PTX" : "cubin");
    return HK_ECOMPILE;
  }
  return HK_OK;
}

/* compiler.h: compile, for o->arch ("sm_90"; a virtual one, "compute_90",
 * gives PTX and skips the back end: hk check --cuda, test_nvrtc). */
static int nvrtc_compile(const hk_compiler_t *c, const hkc_unit *u,
                         const hk_compile_opts_t *o, hk_object_t *out,
                         hku_diags *d) {
  const hk_nvrtc_api_t *nv = c->state;
  const char *path = hkc_file_path(hkc_unit_file(u));
  HK_ASSERT(o->arch);
  char archopt[64];
  snprintf(archopt, sizeof archopt, "--gpu-architecture=%s", o->arch);
  const char *opts[HK_COUNT(nvrtc_flags) + 2];
  int nopts = 0;
  opts[nopts++] = archopt;
  opts[nopts++] = fmad_flag(u);
  for (size_t i = 0; i < HK_COUNT(nvrtc_flags); i++)
    opts[nopts++] = nvrtc_flags[i];
  nvrtcProgram prog = NULL;
  nvrtcResult r = nv->nvrtcCreateProgram(&prog, hkc_unit_text(u),
                                         "hk_kernel.cu", 0, NULL, NULL);
  if (r) {
    hku_diag_add(d, HKU_ERROR, path, 0, 0, "NVRTC cannot start: %s",
                 nv->nvrtcGetErrorString(r));
    return HK_EUNSUPPORTED;
  }
  r = nv->nvrtcCompileProgram(prog, nopts, opts);
  int rc = r ? report_log(nv, prog, r, u, d)
             : take_cubin(nv, prog, path, !strncmp(o->arch, "compute_", 8),
                          out, d);
  nv->nvrtcDestroyProgram(&prog);
  return rc;
}

hk_compiler_t hk__compiler_nvrtc(const hk_nvrtc_api_t *nv) {
  return (hk_compiler_t){"NVRTC", nvrtc_compile, hk__object_release_image,
                         nv};
}
