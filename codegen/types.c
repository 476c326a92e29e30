/* types.c — names and sizes of hk's element types, roles and kinds. */
#include <stdint.h>
#include <string.h>

#include "codegen.h"
#include "hk.h"

static const struct {
  const char *name;
  size_t size;
} dtypes[HK_DTYPE_COUNT] = {
    [HK_DTYPE_INVALID] = {"invalid", 0}, [HK_F32] = {"f32", 4},
    [HK_F64] = {"f64", 8},               [HK_I8] = {"i8", 1},
    [HK_I16] = {"i16", 2},               [HK_I32] = {"i32", 4},
    [HK_I64] = {"i64", 8},               [HK_U8] = {"u8", 1},
    [HK_U16] = {"u16", 2},               [HK_U32] = {"u32", 4},
    [HK_U64] = {"u64", 8},               [HK_F16] = {"f16", 2},
    [HK_BF16] = {"bf16", 2},             [HK_BOOL] = {"bool", 1},
};

HK_API const char *hk_dtype_name(hk_dtype_t t) {
  return (unsigned)t < HK_DTYPE_COUNT ? dtypes[t].name : "invalid";
}

HK_API hk_dtype_t hk_dtype_from_name(const char *name) {
  if (!name) return HK_DTYPE_INVALID;
  for (int t = 1; t < HK_DTYPE_COUNT; t++)
    if (!strcmp(dtypes[t].name, name)) return (hk_dtype_t)t;
  return HK_DTYPE_INVALID;
}

int hkc_is_instance_of(const char *name, const char *base) {
  size_t len = strlen(base);
  if (strncmp(name, base, len) || name[len] != '_') return 0;
  const char *s = name + len + 1;
  for (;;) { /* TYPE, then _TYPE ... to the end */
    const char *u = strchr(s, '_');
    size_t l = u ? (size_t)(u - s) : strlen(s);
    char t[16];
    if (l == 0 || l >= sizeof t) return 0;
    memcpy(t, s, l);
    t[l] = '\0';
    if (hk_dtype_from_name(t) == HK_DTYPE_INVALID) return 0;
    if (!u) return 1;
    s = u + 1;
  }
}

HK_API size_t hk_dtype_size(hk_dtype_t t) {
  return (unsigned)t < HK_DTYPE_COUNT ? dtypes[t].size : 0;
}

/* ---- f16 and bf16 on the host --------------------------------------------
 * The value of M * 2^E (M < 2^63) rounded to nearest even into a 16-bit
 * float of mbits mantissa bits whose smallest normal exponent is emin, as
 * bits (sign apart); past the largest finite, inf (0x7c00, 0x7f80). The
 * kernels' conversions (codegen/prelude.c) compute the same from f32. */
static uint16_t round16(uint64_t M, int E, int mbits, int emin) {
  const uint32_t inf = (uint32_t)(3 - 2 * emin) << mbits; /* exponent all ones */
  if (!M) return 0;
  int b = E; /* floor(log2 value) */
  for (uint64_t t = M; t > 1; t >>= 1) b++;
  int eh = b < emin ? emin : b;
  int sh = (eh - mbits) - E; /* the result's unit is 2^(eh - mbits) */
  uint64_t q;
  if (sh <= 0) {
    q = M << -sh; /* exact (M has at most 53 bits, -sh is small here) */
  } else if (sh >= 64) {
    q = 0; /* below half the smallest subnormal */
  } else {
    uint64_t rem = M & ((UINT64_C(1) << sh) - 1), half = UINT64_C(1) << (sh - 1);
    q = M >> sh;
    if (rem > half || (rem == half && (q & 1))) q++;
  }
  /* q in [2^mbits, 2^(mbits+1)] for normals (the top value carries into the
   * exponent), below 2^mbits for subnormals: one formula for both */
  uint64_t bits = (uint64_t)(eh - emin + 1) * (UINT64_C(1) << mbits) + q -
                  (UINT64_C(1) << mbits);
  return (uint16_t)(bits >= inf ? inf : bits);
}

/* d to a 16-bit float of mbits mantissa bits and smallest normal exponent
 * emin; a NaN keeps its sign and top payload bits (never 0). */
static uint16_t from_double(double d, int mbits, int emin) {
  uint64_t u;
  memcpy(&u, &d, 8);
  uint16_t s = (uint16_t)(u >> 48) & 0x8000u;
  uint64_t e = (u >> 52) & 0x7ffu, m = u & ((UINT64_C(1) << 52) - 1);
  const uint16_t inf = (uint16_t)((uint32_t)(3 - 2 * emin) << mbits);
  if (e == 0x7ff) {
    uint16_t p = (uint16_t)(m >> (52 - mbits));
    return (uint16_t)(s | inf | (m ? (p ? p : 1u) : 0u));
  }
  uint64_t M = e ? (m | (UINT64_C(1) << 52)) : m;
  int E = e ? (int)e - 1075 : -1074;
  return (uint16_t)(s | round16(M, E, mbits, emin));
}

/* A 16-bit float of mbits mantissa bits (emin as above) as a double: exact. */
static double to_double(uint16_t h, int mbits, int emin) {
  int ebits = 15 - mbits;
  unsigned e = (h >> mbits) & ((1u << ebits) - 1), m = h & ((1u << mbits) - 1);
  double v;
  if (e == (1u << ebits) - 1) {
    uint64_t u = UINT64_C(0x7ff) << 52 | (uint64_t)m << (52 - mbits);
    memcpy(&v, &u, 8); /* inf, or NaN with its payload */
  } else {
    /* (e ? 2^mbits + m : m) * 2^(max(e, 1) + emin - 1 - mbits), exactly */
    v = (double)(e ? (1u << mbits) + m : m);
    int x = (int)(e ? e : 1) + emin - 1 - mbits;
    for (; x > 0; x--) v *= 2;
    for (; x < 0; x++) v /= 2;
  }
  return h >> 15 ? -v : v;
}

HK_API uint16_t hk_f16_from_double(double d) { return from_double(d, 10, -14); }
HK_API double hk_f16_to_double(uint16_t h) { return to_double(h, 10, -14); }
HK_API uint16_t hk_bf16_from_double(double d) {
  return from_double(d, 7, -126);
}
HK_API double hk_bf16_to_double(uint16_t h) { return to_double(h, 7, -126); }

HK_API const char *hk_role_name(hk_role_t r) {
  switch (r) {
    case HK_ROLE_IN: return "in";
    case HK_ROLE_OUT: return "out";
    case HK_ROLE_INOUT: return "inout";
    case HK_ROLE_SCALAR: return "scalar";
  }
  return "invalid";
}

HK_API const char *hk_kind_name(hk_kind_t k) {
  switch (k) {
    case HK_KIND_ELEMENTWISE: return "elementwise";
    case HK_KIND_REDUCTION: return "reduction";
    case HK_KIND_RAW: return "raw";
    case HK_KIND_ROWS: return "rows";
    case HK_KIND_GRID: return "grid";
  }
  return "invalid";
}
