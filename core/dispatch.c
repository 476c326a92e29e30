/* dispatch.c — finding stdlib kernels by name, and which instruction-set
 * variant of the stdlib runs (running any kernel through its uniform entry
 * points is hk__run, inline in dispatch.h). */
#include "dispatch.h"

#include <stdatomic.h>

#include "hk.h"
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>

/* XCR0, the register state the OS saves: AVX needs bits 1-2 (SSE, AVX),
 * AVX-512 bits 5-7 too (opmask, upper ZMM halves, ZMM16-31). */
static uint64_t xcr0(void) {
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (uint64_t)hi << 32 | lo;
}

/* The x86-64 psABI levels (gcc's -march=x86-64-v3 / -v4 assume these). */
static int detect(void) {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return HK_ISA_BASE;
  const unsigned c1 = c;
  /* FMA, MOVBE, OSXSAVE, AVX, F16C */
  const unsigned want1 = 1u << 12 | 1u << 22 | 1u << 27 | 1u << 28 | 1u << 29;
  if ((c1 & want1) != want1 || (xcr0() & 0x6) != 0x6) return HK_ISA_BASE;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return HK_ISA_BASE;
  const unsigned b7 = b, c7 = c;
  /* BMI1, AVX2, BMI2 */
  const unsigned want7 = 1u << 3 | 1u << 5 | 1u << 8;
  if ((b7 & want7) != want7) return HK_ISA_BASE;
  if (!__get_cpuid(0x80000001u, &a, &b, &c, &d) || !(c & 1u << 5)) /* LZCNT */
    return HK_ISA_BASE;
  /* AVX512F, DQ, CD, BW, VL */
  const unsigned want512 = 1u << 16 | 1u << 17 | 1u << 28 | 1u << 30 | 1u << 31;
  if ((b7 & want512) != want512 || (xcr0() & 0xe6) != 0xe6) return HK_ISA_V3;
  /* ECX: VBMI, VBMI2, GFNI, VNNI, BITALG, VPOPCNTDQ; EBX: IFMA */
  const unsigned wantx = 1u << 1 | 1u << 6 | 1u << 8 | 1u << 11 | 1u << 12 | 1u << 14;
  if ((c7 & wantx) != wantx || !(b7 & 1u << 21)) return HK_ISA_V4;
  return HK_ISA_V4X;
}
#else
static int detect(void) { return HK_ISA_BASE; }
#endif

int hk__isa_level(void) {
  /* -1: not known yet. Racing first calls compute the same value. */
  static atomic_int level = -1;
  int l = atomic_load_explicit(&level, memory_order_relaxed);
  if (l < 0) {
    l = detect();
    atomic_store_explicit(&level, l, memory_order_relaxed);
  }
  return l;
}

const char *hk__isa_name(int level) {
  switch (level) {
    case HK_ISA_BASE: return "baseline";
    case HK_ISA_V3: return "x86-64-v3";
    case HK_ISA_V4: return "x86-64-v4";
    case HK_ISA_V4X: return "x86-64-v4+icl";
  }
  return NULL;
}

int hk__stdlib_level(void) {
  int l = hk__isa_level();
  while (l > HK_ISA_BASE && !hk__stdlib_isa[l]) l--;
  return l;
}

const char *hk_stdlib_isa(void) { return hk__isa_name(hk__stdlib_level()); }

const hk_stdlib_entry_t *hk__stdlib_find(const char *name) {
  for (size_t i = 0; i < hk__stdlib_count; i++)
    if (strcmp(hk__stdlib[i].info.name, name) == 0) return &hk__stdlib[i];
  return NULL;
}

/* s's twin in the variant that runs. */
static const hk_stdlib_entry_t *variant_of(const hk_stdlib_entry_t *s) {
  HK_ASSERT(s >= hk__stdlib && s < hk__stdlib + hk__stdlib_count);
  return &hk__stdlib_isa[hk__stdlib_level()][s - hk__stdlib];
}

void (*hk__stdlib_typed(const hk_stdlib_entry_t *s))(void) {
  return variant_of(s)->typed;
}

hk_entry_t hk__stdlib_entry(const hk_stdlib_entry_t *s) {
  const hk_stdlib_entry_t *v = variant_of(s);
  hk_entry_t e = {.kind = v->info.kind, .range = v->range,
                  .merge = v->merge,    .lens = v->lens,
                  .rowred = v->rowred,  .colred = v->colred,
                  .colpart = v->colpart,
                  .acc_size = v->acc_size,
                  .flags = v->flags};
  return e;
}
