/* dispatch.c — running any kernel through its uniform entry points, and
 * finding stdlib kernels by name. */
#include "dispatch.h"

#include <string.h>

void hk__run(const hk_entry_t *e, void *const *args, size_t n) {
  switch (e->kind) {
    case HK_KIND_ELEMENTWISE:
      if (n >= hk__par_min[e->flags & HK_ABI_HEAVY])
        hk__par_elementwise(e->range, args, n, e->flags);
      else
        e->range(args, n, 0, n, NULL);
      return;
    case HK_KIND_REDUCTION:
      if (n > HK_REDUCE_BLOCK)
        hk__par_reduce(e->range, e->merge, e->acc_size, args, n, e->flags);
      else
        e->range(args, n, 0, n, NULL);
      return;
    case HK_KIND_RAW:
      e->range(args, n, 0, n, NULL);
      return;
  }
}

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
