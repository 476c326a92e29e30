/* compiler_tcc.c — libtcc behind compiler.h: tier jit and `hk check`,
 * generated C compiled and relocated into this process.
 *
 * libtcc 0.9.27 is not thread-safe: every call into it happens under
 * hk__tcc_lock, the one process-wide lock hk keeps for it. A unit's
 * TCCState owns its code, so it lives until the unit is freed, which the
 * registry does only when nothing can run that code any more.
 */
#include "compiler.h"

#include <libtcc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbols.h"

/* The process-wide libtcc lock (documented global state). */
static pthread_mutex_t hk__tcc_lock = PTHREAD_MUTEX_INITIALIZER;

/* Debian ships libtcc only as a static archive built without -fPIC. Its
 * references to glibc's stdout, stderr and environ would need copy
 * relocations, which a shared library cannot have; the build renames them
 * (objcopy --redefine-sym, see CMakeLists.txt) to these hidden variables,
 * set before libtcc is first used. */
extern char **environ;
__attribute__((visibility("hidden"))) FILE *hk__tcc_stdout;
__attribute__((visibility("hidden"))) FILE *hk__tcc_stderr;
__attribute__((visibility("hidden"))) char **hk__tcc_environ;

/* tcc's warning for a store to a const object: gcc's (tier opt, hk build)
 * is an error. Generated code declares what kernel code must not change
 * const (an in buffer's element, a scalar), so tcc too must refuse it:
 * compiled, `s = s + 1` on a scalar ran on tier jit, with results that
 * depended on the thread count, and tier opt then failed. */
#define READ_ONLY_WARNING ": warning: assignment of read-only location"
/* tcc's warning for a pointer of one element type made from another, an
 * error for gcc and clang too (abi.h: -Werror=incompatible-pointer-types)
 * and in CUDA C++: a raw or grid body's f16 buffer is uint16_t storage,
 * and `const T *row = x;` with T float read its bits as floats. */
#define POINTER_WARNING ": warning: assignment from incompatible pointer type"

static void collect(void *opaque, const char *msg) {
  hku_buf *msgs = opaque;
  if (!msgs) return;
  const char *w = strstr(msg, READ_ONLY_WARNING);
  if (w) { /* as an error, in gcc's words */
    hku_buf_putn(msgs, msg, (size_t)(w - msg));
    hku_buf_put(msgs, ": error: assignment of read-only location: kernel "
                      "code cannot change an in buffer's element or a "
                      "scalar parameter\n");
    return;
  }
  if ((w = strstr(msg, POINTER_WARNING))) {
    hku_buf_putn(msgs, msg, (size_t)(w - msg));
    hku_buf_put(msgs, ": error: a pointer made from a pointer to another "
                      "type (an f16 or bf16 buffer is uint16_t storage in "
                      "raw and grid code: convert its elements with "
                      "hk_f16_to_f32 or hk_bf16_to_f32; in a rows body it "
                      "is a float copy of the row already)\n");
    return;
  }
  hku_buf_put(msgs, msg);
  hku_buf_putc(msgs, '\n');
}

/* 1 when collect turned a warning into an error. */
static int has_error(const hku_buf *msgs) {
  return msgs && msgs->len && strstr(hku_buf_str(msgs), ": error: ") != NULL;
}

/* Compiles src into a relocated state, or NULL with tcc's messages in
 * msgs. Takes the libtcc lock. */
static TCCState *tcc_build(const char *src, hku_buf *msgs) {
  size_t nsyms;
  const hk_symbol_t *syms = hk__jit_symbols(&nsyms);
  pthread_mutex_lock(&hk__tcc_lock);
  hk__tcc_stdout = stdout;
  hk__tcc_stderr = stderr;
  hk__tcc_environ = environ;
  TCCState *s = tcc_new();
  int ok = s != NULL;
  if (ok) {
    tcc_set_error_func(s, msgs, collect);
    /* No C library, no system headers: the prelude declares everything. */
    tcc_set_options(s, "-nostdlib -nostdinc");
    ok = tcc_set_output_type(s, TCC_OUTPUT_MEMORY) == 0;
    for (size_t i = 0; ok && i < nsyms; i++)
      ok = tcc_add_symbol(s, syms[i].name, syms[i].addr) == 0;
    ok = ok && tcc_compile_string(s, src) == 0 && !has_error(msgs);
    ok = ok && tcc_relocate(s, TCC_RELOCATE_AUTO) >= 0;
  } else {
    hku_buf_put(msgs, "tcc: error: cannot create a compiler state\n");
  }
  if (!ok && s) {
    tcc_delete(s);
    s = NULL;
  }
  pthread_mutex_unlock(&hk__tcc_lock);
  return s;
}

/* compiler.h: compile. Only the symbols of symbols.h are visible to the
 * unit; tcc's messages ("<string>:LINE: error: MSG") are located through
 * the unit's line map. */
static int tcc_compile(const hk_compiler_t *c, const hkc_unit *u,
                       const hk_compile_opts_t *o, hk_object_t *out,
                       hku_diags *d) {
  (void)o;
  hku_buf msgs = HKU_BUF_INIT;
  TCCState *s = tcc_build(hkc_unit_text(u), &msgs);
  int rc = HK_OK;
  if (!s) {
    if (!hkc_unit_report(u, hku_buf_str(&msgs), c->name, d))
      hku_diag_add(d, HKU_ERROR, hkc_file_path(hkc_unit_file(u)), 0, 0, "%s",
                   hku_buf_str(&msgs));
    rc = msgs.oom ? HK_ENOMEM : HK_ECOMPILE;
  }
  out->code = s;
  hku_buf_free(&msgs);
  return rc;
}

static void tcc_release(hk_object_t *o) {
  if (!o->code) return;
  pthread_mutex_lock(&hk__tcc_lock);
  tcc_delete(o->code);
  pthread_mutex_unlock(&hk__tcc_lock);
  o->code = NULL;
}

const hk_compiler_t hk__compiler_tcc = {"tcc", tcc_compile, tcc_release,
                                        NULL};

void *hk__object_symbol(const hk_object_t *o, const char *name) {
  if (o->by != &hk__compiler_tcc || !o->code) return NULL;
  pthread_mutex_lock(&hk__tcc_lock);
  void *p = tcc_get_symbol(o->code, name);
  pthread_mutex_unlock(&hk__tcc_lock);
  return p;
}
