/* dispatch.h — running any kernel through its uniform entry points. */
#ifndef HK_DISPATCH_H
#define HK_DISPATCH_H

#include "abi.h"
#include "internal.h"

/* What the core needs to run one kernel instance on the CPU. */
typedef struct hk_entry {
  hk_kind_t kind;
  hk_range_fn range;
  hk_merge_fn merge; /* reductions */
  hk_lens_fn lens;
  uint32_t acc_size; /* reductions */
  uint32_t flags;    /* HK_ABI_* */
} hk_entry_t;

/* Records msg as this thread's last error and returns code (context.c;
 * registry.h declares it too). */
HK_INTERNAL int hk__fail(int code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Runs the kernel over n elements with args in parameter order (buffers as
 * pointers, scalars as pointers to their value). Elementwise and reduction
 * kernels are split over the thread pool as the typed stdlib functions do,
 * so both paths give bit-identical results; grid kernels over their index
 * space. Allocates nothing. Inline: it is the whole of a call through a
 * handle after the pointer load. HK_OK, or (grid kernels: a negative or
 * overflowing extent) an error set as the thread's last one. */
static inline int hk__run(const hk_entry_t *e, void *const *args, size_t n) {
  switch (e->kind) {
    case HK_KIND_ELEMENTWISE:
      if (n >= hk__par_min[e->flags & HK_ABI_HEAVY])
        hk__par_elementwise(e->range, args, n, e->flags);
      else
        e->range(args, n, 0, n, NULL);
      return HK_OK;
    case HK_KIND_REDUCTION:
      if (n > HK_REDUCE_BLOCK)
        hk__par_reduce(e->range, e->merge, e->acc_size, args, n, e->flags);
      else
        e->range(args, n, 0, n, NULL);
      return HK_OK;
    case HK_KIND_RAW:
      e->range(args, n, 0, n, NULL);
      return HK_OK;
    case HK_KIND_ROWS: /* a flat call: one row of n elements */
      e->range(args, n, 0, 1, NULL);
      return HK_OK;
    case HK_KIND_GRID:
      if (hk__par_grid(e->range, args, n, e->flags) != HK_OK)
        return hk__fail(HK_EINVAL,
                        "a grid kernel's extent is negative, or the index "
                        "count overflows int64");
      return HK_OK;
  }
  return HK_OK;
}

/* The stdlib instance named name ("add_f32"), or NULL (a miss). */
HK_INTERNAL const hk_stdlib_entry_t *hk__stdlib_find(const char *name);
/* The entry of a stdlib instance. */
HK_INTERNAL hk_entry_t hk__stdlib_entry(const hk_stdlib_entry_t *s);

#endif
