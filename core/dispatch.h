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
  hk_rowred_fn rowred; /* reductions; NULL from plugins built before it */
  hk_colred_fn colred; /* the same */
  hk_colpart_fn colpart; /* the same */
  uint32_t acc_size; /* reductions; rows: staged bytes an element (abi.h) */
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
 * space. Allocates nothing (but a thread's scratch for f16 and bf16 rows,
 * once, kept). Inline: it is the whole of a call through a
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
      if (e->acc_size) /* f16 or bf16 rows, staged in this thread's scratch */
        return hk__par_rows(e->range, args, 1, n, e->flags, e->acc_size,
                            NULL);
      e->range(args, n, 0, 1, NULL);
      return HK_OK;
    case HK_KIND_GRID: /* a bad extent: said by hk__par_grid */
      return hk__par_grid(e->range, args, n, e->flags);
  }
  return HK_OK;
}

/* ---- The stdlib's instruction-set variants ---------------------------------
 * With HK_STDLIB_ISA (CMake), hk_stdlib.c is compiled once per variant: for
 * baseline x86-64, x86-64-v3 (AVX2, FMA: contraction is off, hkmath.h
 * calls fmaf explicitly),
 * x86-64-v4 (AVX-512) and x86-64-v4 with Ice Lake's AVX-512 additions
 * (what tier opt's -march=native uses on Ice Lake, Sapphire Rapids, Zen 4:
 * byte permutes make bool and bf16 loops up to 1.3x faster). Every public
 * hk_NAME is then an ifunc whose resolver
 * (generated: hk_stdlib_isa.c) picks the variant hk__isa_level() names,
 * and hk__stdlib_entry() hands out the same variant's entry points. The
 * variants' tables hold the same instances in the same order. */
#define HK_ISA_BASE 0 /* baseline x86-64 (SSE2); any other CPU */
#define HK_ISA_V3 1   /* x86-64-v3: AVX, AVX2, BMI1/2, F16C, FMA, LZCNT, MOVBE */
#define HK_ISA_V4 2   /* x86-64-v4: v3 and AVX-512 F, BW, CD, DQ, VL */
#define HK_ISA_V4X 3  /* v4 and AVX-512 VBMI, VBMI2, BITALG, VPOPCNTDQ, IFMA,
                         VNNI, and GFNI */
#define HK_ISA_COUNT 4

/* The best variant this CPU and OS can run (HK_ISA_*), found once (cpuid
 * and xgetbv). Safe in an ifunc resolver: no libc call, no relocation. */
HK_INTERNAL int hk__isa_level(void);
/* "baseline", "x86-64-v3", "x86-64-v4", "x86-64-v4+icl"; NULL for
 * anything else. */
HK_INTERNAL const char *hk__isa_name(int level);

/* hk__stdlib_isa[l]: variant l's table, NULL where the build left variant l
 * out ([HK_ISA_BASE] is hk__stdlib itself). Generated (hk_stdlib_isa.c). */
extern HK_INTERNAL const hk_stdlib_entry_t *const hk__stdlib_isa[HK_ISA_COUNT];
/* The variant the stdlib runs: the best one both built and runnable. */
HK_INTERNAL int hk__stdlib_level(void);

/* The stdlib instance named name ("add_f32"), or NULL (a miss). */
HK_INTERNAL const hk_stdlib_entry_t *hk__stdlib_find(const char *name);
/* The entry of a stdlib instance (one of hk__stdlib[]): its entry points
 * in the variant hk__stdlib_level() names. */
HK_INTERNAL hk_entry_t hk__stdlib_entry(const hk_stdlib_entry_t *s);
/* Its typed function in that variant: the one the public hk_NAME runs. */
HK_INTERNAL void (*hk__stdlib_typed(const hk_stdlib_entry_t *s))(void);

#endif
