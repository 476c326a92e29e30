/* dlpack.h — the ABI of DLPack (dlpack.h v0.8 and 1.0), written out: the
 * capsule "dltensor" holds a DLManagedTensor, "dltensor_versioned" (DLPack
 * 1.0, asked for with __dlpack__(max_version=...)) a
 * DLManagedTensorVersioned, which adds flags (read-only); the consumer
 * renames the capsule "used_..." and calls the deleter when done with the
 * memory. */
#ifndef HKPY_DLPACK_H
#define HKPY_DLPACK_H

#include <stdint.h>

#include <hk.h>

typedef struct {
  int32_t device_type, device_id;
} dl_device;
typedef struct {
  uint8_t code, bits;
  uint16_t lanes;
} dl_dtype;
typedef struct {
  void *data;
  dl_device device;
  int32_t ndim;
  dl_dtype dtype;
  int64_t *shape, *strides;
  uint64_t byte_offset;
} dl_tensor;
typedef struct dl_managed {
  dl_tensor t;
  void *manager_ctx;
  void (*deleter)(struct dl_managed *);
} dl_managed;

/* DLPack 1.0: what a versioned capsule holds. */
typedef struct {
  uint32_t major, minor;
} dl_version;
typedef struct dl_managed_v {
  dl_version version;
  void *manager_ctx;
  void (*deleter)(struct dl_managed_v *);
  uint64_t flags;
  dl_tensor t;
} dl_managed_v;

/* DLPACK_FLAG_BITMASK_READ_ONLY: the consumer must not write the memory. */
#define DL_FLAG_READ_ONLY 1u

/* Gives a consumed tensor back to its producer (versioned: a
 * dl_managed_v, else a dl_managed). NULL is ignored. */
static inline void dl_release(void *m, int versioned) {
  if (!m) return;
  if (versioned) {
    dl_managed_v *v = m;
    if (v->deleter) v->deleter(v);
  } else {
    dl_managed *l = m;
    if (l->deleter) l->deleter(l);
  }
}

enum { DL_CPU = 1, DL_CUDA = 2, DL_CUDA_HOST = 3, DL_CUDA_MANAGED = 13 };
enum { DL_INT = 0, DL_UINT = 1, DL_FLOAT = 2, DL_BFLOAT = 4, DL_BOOL = 6 };

/* DLPack's dtype of an hk dtype. */
static inline dl_dtype dl_dtype_of(hk_dtype_t t) {
  dl_dtype d = {DL_FLOAT, (uint8_t)(8 * hk_dtype_size(t)), 1};
  switch (t) {
  case HK_I8: case HK_I16: case HK_I32: case HK_I64: d.code = DL_INT; break;
  case HK_U8: case HK_U16: case HK_U32: case HK_U64: d.code = DL_UINT; break;
  case HK_BF16: d.code = DL_BFLOAT; break;
  case HK_BOOL: d.code = DL_BOOL; break;
  default: break;
  }
  return d;
}

#endif
