/* naive.c — the dynamic call path hk replaces ("naive").
 *
 * What the seed projects did on every call, here on purpose: take a global
 * mutex, look the kernel up by name in a list, marshal the arguments into a
 * fresh heap buffer, resolve the entry point with dlsym, call it, free. The
 * same compiled kernel (a prebuilt plugin) runs underneath, so the
 * difference from "registry" is the cost of the path alone.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

typedef void (*range_fn)(void *const *args, size_t n, size_t begin,
                         size_t end, void *partial);
typedef void (*merge_fn)(void *const *args, size_t n, const void *partials,
                         size_t count);

typedef struct entry {
  char name[64];
  int nparams;
  int is_reduction;
} entry;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static void *plugin;
static entry table[64];
static int ntable;

int naive_open(const char *so_path, char *err, size_t errlen) {
  plugin = dlopen(so_path, RTLD_NOW | RTLD_LOCAL);
  if (!plugin) {
    snprintf(err, errlen, "%s", dlerror());
    return -1;
  }
  return 0;
}

void naive_register(const char *name, int nparams, int is_reduction) {
  entry *e = &table[ntable++];
  snprintf(e->name, sizeof e->name, "%s", name);
  e->nparams = nparams;
  e->is_reduction = is_reduction;
}

int naive_call(const char *name, void *const *args, size_t n) {
  pthread_mutex_lock(&lock);
  entry *e = NULL;
  for (int i = 0; i < ntable && !e; i++)
    if (!strcmp(table[i].name, name)) e = &table[i];
  if (!e) {
    pthread_mutex_unlock(&lock);
    return -1;
  }
  /* marshal: a fresh copy of the argument array, as a generic FFI would */
  void **params = malloc((size_t)e->nparams * sizeof *params);
  memcpy(params, args, (size_t)e->nparams * sizeof *params);
  char sym[96];
  snprintf(sym, sizeof sym, "hk_range__%s", name);
  range_fn range;
  *(void **)&range = dlsym(plugin, sym);
  pthread_mutex_unlock(&lock);
  range((void *const *)params, n, 0, n, NULL);
  free(params);
  return 0;
}
