/* hk_lens.h — raw and grid buffers' shapes from their lens (lens.c), for
 * the core (hk_call_out_shape) and the hk command (hk run). */
#ifndef HK_LENS_H
#define HK_LENS_H

#include <stddef.h>
#include <stdint.h>

#include "hk.h"
#include "internal.h"

/* When in->params[param]'s len is a product of integer literals, n and
 * integer scalars (their values in args' 0-d arrays) and makes count
 * elements, its factors' values as a shape: 1 with *ndim and shape;
 * 0 otherwise ("rows * cols" with rows = 3, cols = 4: (3, 4)). */
HK_INTERNAL int hk__len_shape(const hk_kernel_info_t *in, int param,
                              const hk_array_t *args, size_t n, int64_t count,
                              int *ndim, int64_t *shape);

#endif /* HK_LENS_H */
