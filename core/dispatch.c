/* dispatch.c — finding stdlib kernels by name (running any kernel through
 * its uniform entry points is hk__run, inline in dispatch.h). */
#include "dispatch.h"

#include <string.h>

const hk_stdlib_entry_t *hk__stdlib_find(const char *name) {
  for (size_t i = 0; i < hk__stdlib_count; i++)
    if (strcmp(hk__stdlib[i].info.name, name) == 0) return &hk__stdlib[i];
  return NULL;
}

hk_entry_t hk__stdlib_entry(const hk_stdlib_entry_t *s) {
  hk_entry_t e = {s->info.kind, s->range,    s->merge,
                  s->lens,      s->acc_size, s->flags};
  return e;
}
