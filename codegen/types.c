/* types.c — names and sizes of hk's element types, roles and kinds. */
#include <string.h>

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

HK_API size_t hk_dtype_size(hk_dtype_t t) {
  return (unsigned)t < HK_DTYPE_COUNT ? dtypes[t].size : 0;
}

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
  }
  return "invalid";
}
