/* stream.c — CUDA streams: hk's default one and those of hk_stream_create,
 * each with the buffers its launches and staged copies use. */
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "registry.h" /* hk__fail */

int hk__stream_init(struct hk_stream *st, hku_diags *d) {
  memset(st, 0, sizeof *st);
  pthread_mutex_init(&st->lock, NULL);
  CUresult r = hk__cuda.api.cuStreamCreate(&st->s, HK_CU_STREAM_NON_BLOCKING);
  if (!r) r = hk__cuda.api.cuMemAlloc(&st->scratch, HK_CUDA_SCRATCH_BYTES);
  if (r) {
    char eb[HK_CUDA_ERRLEN];
    hku_diag_add(d, HKU_ERROR, NULL, 0, 0, "%s",
                 hk__cuda_strerror(r, eb, sizeof eb));
    return hk__cuda_code(r);
  }
  return HK_OK;
}

void hk__stream_release(struct hk_stream *st) {
  const hk_cuda_api_t *a = &hk__cuda.api;
  if (st->s) a->cuStreamSynchronize(st->s);
  for (int i = 0; i < 2; i++) {
    if (st->staged[i]) a->cuEventDestroy(st->staged[i]);
    if (st->staging[i]) a->cuMemFreeHost(st->staging[i]);
  }
  if (st->scratch) a->cuMemFree(st->scratch);
  if (st->rows_scratch) a->cuMemFree(st->rows_scratch);
  if (st->s) a->cuStreamDestroy(st->s);
  pthread_mutex_destroy(&st->lock);
}

struct hk_stream *hk__stream(hk_stream_t *s) { return s ? s : &hk__cuda.dflt; }

HK_API int hk_stream_create(hk_stream_t **out) {
  *out = NULL;
  int rc = hk__cuda_ready();
  if (rc) return rc;
  struct hk_stream *st = malloc(sizeof *st);
  if (!st) return hk__fail(HK_ENOMEM, "out of memory");
  hku_diags d = HKU_DIAGS_INIT;
  if (hk__stream_init(st, &d)) {
    hk__stream_release(st);
    free(st);
    rc = hk__fail(HK_ENOMEM, "cannot create a CUDA stream: %s",
                  hk__cuda_why(&d));
    hku_diags_free(&d);
    return rc;
  }
  *out = st;
  return HK_OK;
}

HK_API void hk_stream_destroy(hk_stream_t *s) {
  if (!s || hk__cuda_ready()) return;
  hk__stream_release(s);
  free(s);
}

HK_API int hk_stream_sync(hk_stream_t *s) {
  int rc = hk__cuda_ready();
  if (rc) return rc;
  CUresult r = hk__cuda.api.cuStreamSynchronize(hk__stream(s)->s);
  if (r)
    return hk__cuda_fail(HK_EDEVICE, r,
                         "a kernel or copy on this stream failed (the CUDA "
                         "context may be unusable now)");
  return HK_OK;
}
