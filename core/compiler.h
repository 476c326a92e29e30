/* compiler.h — hk's three compilers behind one interface: a unit of
 * generated source in, compiled code or located diagnostics out.
 *
 *   libtcc (compiler_tcc.c)  tier jit: C relocated into this process, in
 *                            about a millisecond;
 *   cc     (compiler_cc.c)   the system C compiler: tier opt and `hk
 *                            build`, a shared object's bytes;
 *   NVRTC  (cuda/nvrtc.c)    the GPU: a cubin's bytes.
 *
 * build.c is the only caller that drives a compile for the runtime and the
 * tools; it does what comes after (check the object, cache it, load it).
 * Errors follow common/internal.h.
 */
#ifndef HK_COMPILER_H
#define HK_COMPILER_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "codegen.h"
#include "diag.h"
#include "internal.h"

typedef struct hk_compiler hk_compiler_t;

/* What an object is for: the flags the system compiler uses (part of the
 * cache key). Only cc reads it. */
typedef enum hk_purpose {
  HK_FOR_OPT,             /* tier opt: -march=native, this machine only */
  HK_FOR_PREBUILT,        /* hk build: portable */
  HK_FOR_PREBUILT_NATIVE  /* hk build --native */
} hk_purpose_t;

/* How to compile. Zero-initialised means: tier opt, no deadline, no
 * cancel, no GPU architecture. */
typedef struct hk_compile_opts {
  hk_purpose_t purpose;      /* cc */
  const char *arch;          /* NVRTC: "sm_90" */
  int timeout_s;             /* cc: 0 is the compiler's default deadline */
  const _Atomic int *cancel; /* cc: gives up soon after *cancel != 0 */
  int jobs; /* cc: compiler processes it may run at once (0 or 1: one) */
} hk_compile_opts_t;

/* What a compile made; exactly one form, by compiler:
 *   libtcc  code: the relocated unit, alive as long as the object (its
 *           symbols through hk__object_symbol);
 *   cc      image/size: the shared object's bytes (not yet checked:
 *           elfcheck.h), to be loaded or written by the caller;
 *   NVRTC   image/size: the cubin (cuModuleLoadData). */
typedef struct hk_object {
  const hk_compiler_t *by;
  void *code;
  char *image;
  size_t size;
} hk_object_t;

struct hk_compiler {
  const char *name; /* "tcc", "cc", "NVRTC": messages, hkc_unit_report */
  /* Compiles u into *out. HK_OK; HK_ECOMPILE with the compiler's messages
   * in d, located in the kernel file (hkc_unit_report) where they can be;
   * HK_EUNSUPPORTED when the compiler cannot be used (why, in d); a
   * compile that ran past its deadline or was cancelled is HK_ECOMPILE
   * with that said in d; HK_ENOMEM; HK_EIO (a temporary file).
   * Thread-safe. */
  int (*compile)(const hk_compiler_t *c, const hkc_unit *u,
                 const hk_compile_opts_t *o, hk_object_t *out,
                 hku_diags *d);
  void (*release)(hk_object_t *o); /* frees what compile made */
  const void *state;               /* the compiler's own (cc: hk_cc_t) */
};

/* c->compile(c, u, o, out, d), with o NULL meaning all defaults. */
HK_INTERNAL int hk__compile(const hk_compiler_t *c, const hkc_unit *u,
                            const hk_compile_opts_t *o, hk_object_t *out,
                            hku_diags *d);
/* The address of a global symbol of an in-memory object (libtcc), or
 * NULL (not found, or an object that is an image). */
HK_INTERNAL void *hk__object_symbol(const hk_object_t *o, const char *name);
/* Frees the object's code or image; the object is then empty. Accepts an
 * empty object. */
HK_INTERNAL void hk__object_free(hk_object_t *o);

/* The release of a compiler whose objects are images (cc, NVRTC). */
HK_INTERNAL void hk__object_release_image(hk_object_t *o);

/* libtcc: always available (linked in). */
HK_INTERNAL extern const hk_compiler_t hk__compiler_tcc;

/* The system compiler: compiler_cc.h (hk__compiler_cc). */

/* NVRTC (cuda/nvrtc.c), through the library nv (cuda/api.h: loaded by
 * hk__nvrtc), which must outlive it. Needs o->arch; reads nothing else of
 * o. NVRTC's errors are located like the others'. */
struct hk_nvrtc_api;
HK_INTERNAL hk_compiler_t hk__compiler_nvrtc(const struct hk_nvrtc_api *nv);
/* The disk cache key of u's cubin from NVRTC version for arch: the ABI,
 * NVRTC's version, the architecture, the flags and the text. */
HK_INTERNAL void hk__nvrtc_key(const hkc_unit *u, int version,
                               const char *arch, uint8_t key[32]);

#endif /* HK_COMPILER_H */
