/* jit_tcc.c — tier jit: generated C compiled in memory by libtcc.
 *
 * libtcc 0.9.27 is not thread-safe: every call into it happens under
 * hk__tcc_lock, the one process-wide lock hk keeps for it. A unit's
 * TCCState owns its code, so it lives until the unit is freed, which the
 * registry does only when nothing can run that code any more.
 */
#include "jit_tcc.h"

#include <libtcc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

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

struct hk_tcc {
  TCCState *s;
};

static void collect(void *opaque, const char *msg) {
  hku_buf *msgs = opaque;
  if (!msgs) return;
  hku_buf_put(msgs, msg);
  hku_buf_putc(msgs, '\n');
}

hk_tcc_t *hk__tcc_compile(const char *src, hku_buf *msgs) {
  hk_tcc_t *u = calloc(1, sizeof *u);
  if (!u) {
    hku_buf_put(msgs, "tcc: error: out of memory\n");
    return NULL;
  }
  size_t nsyms;
  const hk_symbol_t *syms = hk__jit_symbols(&nsyms);
  pthread_mutex_lock(&hk__tcc_lock);
  hk__tcc_stdout = stdout;
  hk__tcc_stderr = stderr;
  hk__tcc_environ = environ;
  u->s = tcc_new();
  int ok = u->s != NULL;
  if (ok) {
    tcc_set_error_func(u->s, msgs, collect);
    /* No C library, no system headers: the prelude declares everything. */
    tcc_set_options(u->s, "-nostdlib -nostdinc");
    ok = tcc_set_output_type(u->s, TCC_OUTPUT_MEMORY) == 0;
    for (size_t i = 0; ok && i < nsyms; i++)
      ok = tcc_add_symbol(u->s, syms[i].name, syms[i].addr) == 0;
    ok = ok && tcc_compile_string(u->s, src) == 0;
    ok = ok && tcc_relocate(u->s, TCC_RELOCATE_AUTO) >= 0;
  } else {
    hku_buf_put(msgs, "tcc: error: cannot create a compiler state\n");
  }
  if (!ok && u->s) {
    tcc_delete(u->s);
    u->s = NULL;
  }
  pthread_mutex_unlock(&hk__tcc_lock);
  if (!ok) {
    free(u);
    return NULL;
  }
  return u;
}

void *hk__tcc_symbol(hk_tcc_t *u, const char *name) {
  pthread_mutex_lock(&hk__tcc_lock);
  void *p = tcc_get_symbol(u->s, name);
  pthread_mutex_unlock(&hk__tcc_lock);
  return p;
}

void hk__tcc_free(hk_tcc_t *u) {
  if (!u) return;
  pthread_mutex_lock(&hk__tcc_lock);
  tcc_delete(u->s);
  pthread_mutex_unlock(&hk__tcc_lock);
  free(u);
}
