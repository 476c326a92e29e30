/* dlpack.h — the ABI of DLPack (dlpack.h v0.8), written out: the capsule
 * "dltensor" holds a DLManagedTensor; its consumer renames the capsule
 * "used_dltensor" and calls the deleter when done with the memory. */
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
