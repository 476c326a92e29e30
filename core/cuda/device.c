/* device.c — the CUDA device, started once per process: the driver, the
 * device and its primary context, hk's default stream, the stdlib's GPU
 * module; NVRTC, loaded once on first use; driver errors into words and
 * codes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "registry.h" /* hk__fail */

_Atomic int hk__cuda_started;
hk_cuda_state_t hk__cuda;

/* The outcome of the one start, replayed by every hk__cuda_ready. */
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int init_rc;
static char init_why[600];

const char *hk__cuda_strerror(CUresult r, char *buf, size_t n) {
  const char *name = NULL, *text = NULL;
  if (hk__cuda.api.cuGetErrorName) hk__cuda.api.cuGetErrorName(r, &name);
  if (hk__cuda.api.cuGetErrorString) hk__cuda.api.cuGetErrorString(r, &text);
  snprintf(buf, n, "%s: %s", name ? name : "CUDA error",
           text ? text : "unknown");
  return buf;
}

int hk__cuda_code(CUresult r) {
  HK_ASSERT(r != HK_CUDA_SUCCESS);
  switch (r) {
    case HK_CUDA_ERROR_INVALID_VALUE: return HK_EINVAL;
    case HK_CUDA_ERROR_OUT_OF_MEMORY: return HK_ENOMEM;
    default: return HK_EDEVICE;
  }
}

int hk__cuda_fail(int code, CUresult r, const char *what) {
  char b[HK_CUDA_ERRLEN];
  return hk__fail(code, "%s: %s", what, hk__cuda_strerror(r, b, sizeof b));
}

/* Takes device ordinal (HK_CUDA_DEVICE, default 0) and its primary
 * context, current on this thread, and reads its description into
 * hk__cuda.info. HK_OK, or HK_EUNSUPPORTED with the reason in d. The
 * driver must be loaded and initialised. */
static int device_open(hk_cuda_state_t *c, hku_diags *d) {
  int count = 0;
  c->api.cuDeviceGetCount(&count);
  const char *want = getenv("HK_CUDA_DEVICE");
  int ordinal = want && *want ? atoi(want) : 0;
  if (ordinal < 0 || ordinal >= count) {
    hku_diag_add(d, HKU_ERROR, NULL, 0, 0,
                 "device %d asked for (HK_CUDA_DEVICE), %d found", ordinal,
                 count);
    return HK_EUNSUPPORTED;
  }
  CUresult r;
  if ((r = c->api.cuDeviceGet(&c->dev, ordinal)) ||
      (r = c->api.cuDevicePrimaryCtxRetain(&c->ctx, c->dev)) ||
      (r = c->api.cuCtxSetCurrent(c->ctx))) {
    char eb[HK_CUDA_ERRLEN];
    hku_diag_add(d, HKU_ERROR, NULL, 0, 0, "cannot use device %d (%s)",
                 ordinal, hk__cuda_strerror(r, eb, sizeof eb));
    return HK_EUNSUPPORTED;
  }
  hk_cuda_device_info_t *in = &c->info;
  in->ordinal = ordinal;
  c->api.cuDeviceGetName(in->name, sizeof in->name, c->dev);
  c->api.cuDeviceGetAttribute(&in->major,
                              HK_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                              c->dev);
  c->api.cuDeviceGetAttribute(&in->minor,
                              HK_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                              c->dev);
  c->api.cuDeviceGetAttribute(&in->sm_count,
                              HK_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                              c->dev);
  c->api.cuDeviceTotalMem(&in->total_memory, c->dev);
  c->api.cuDriverGetVersion(&in->driver_version);
  if (in->sm_count < 1) in->sm_count = 1;
  return HK_OK;
}

/* The stdlib's kernel named prefix + suffix, NULL when c has no stdlib
 * code or the code no such kernel. */
static CUfunction stdlib_fn(hk_cuda_state_t *c, const char *prefix,
                            const char *suffix) {
  char name[64];
  CUfunction f;
  snprintf(name, sizeof name, "%s%s", prefix, suffix);
  if (!c->stdlib || c->api.cuModuleGetFunction(&f, c->stdlib, name))
    return NULL;
  return f;
}

/* Loads the embedded stdlib fatbin into c->stdlib, or leaves it NULL
 * with the driver's refusal in c->stdlib_rc (0: there is no fatbin); the
 * stdlib then runs on the CPU only, which is no failure of the start. */
static void stdlib_open(hk_cuda_state_t *c) {
  if (hk__cuda_stdlib_fatbin &&
      (c->stdlib_rc = c->api.cuModuleLoadData(&c->stdlib,
                                              hk__cuda_stdlib_fatbin)))
    c->stdlib = NULL;
  static const char *const sizes[4] = {"1", "2", "4", "8"};
  for (int i = 0; i < 4; i++) {
    c->copy[i] = stdlib_fn(c, "hk_cuda_copy_", sizes[i]);
    c->copy32[i] = stdlib_fn(c, "hk_cuda_copy32_", sizes[i]);
    c->copyt[i] = stdlib_fn(c, "hk_cuda_copyt_", sizes[i]);
  }
}

int hk__cuda_stdlib_missing(const char *name) {
  HK_ASSERT(!hk__cuda.stdlib);
  if (!hk__cuda.stdlib_rc)
    return hk__fail(HK_EUNSUPPORTED,
                    "%s has no GPU code: libhk was built without the CUDA "
                    "toolkit (nvcc): the stdlib has no GPU code",
                    name);
  char eb[HK_CUDA_ERRLEN];
  return hk__fail(HK_EUNSUPPORTED,
                  "%s has no GPU code: the stdlib's GPU code does not load "
                  "on this device (sm_%d%d): %s",
                  name, hk__cuda.info.major, hk__cuda.info.minor,
                  hk__cuda_strerror(hk__cuda.stdlib_rc, eb, sizeof eb));
}

/* Starts the backend into hk__cuda; the result goes to init_rc and
 * init_why ("no CUDA device: REASON"). Run once, by pthread_once. */
static void init_once_fn(void) {
  hk_cuda_state_t *c = &hk__cuda;
  hku_diags d = HKU_DIAGS_INIT;
  char eb[HK_CUDA_ERRLEN];
  CUresult r;
  init_rc = hk__cuda_api_load(&c->api, &d);
  if (!init_rc && (r = c->api.cuInit(0))) {
    hku_diag_add(&d, HKU_ERROR, NULL, 0, 0, "cuInit failed (%s)",
                 hk__cuda_strerror(r, eb, sizeof eb));
    init_rc = HK_EUNSUPPORTED;
  }
  if (!init_rc) init_rc = device_open(c, &d);
  if (!init_rc && hk__stream_init(&c->dflt, &d)) {
    /* hk__stream_init's words are the driver's */
    char cause[HK_CUDA_ERRLEN];
    snprintf(cause, sizeof cause, "%s", hk__cuda_why(&d));
    hku_diags_free(&d);
    hku_diag_add(&d, HKU_ERROR, NULL, 0, 0, "cannot create a stream (%s)",
                 cause);
    init_rc = HK_EUNSUPPORTED;
  }
  if (init_rc) {
    snprintf(init_why, sizeof init_why, "no CUDA device: %s",
             hk__cuda_why(&d));
    hku_diags_free(&d);
    return;
  }
  stdlib_open(c);
  atomic_store(&hk__cuda_started, 1);
}

int hk__cuda_ready(void) {
  pthread_once(&init_once, init_once_fn);
  if (init_rc != HK_OK) return hk__fail(init_rc, "%s", init_why);
  /* The primary context must be current on the calling thread. */
  CUcontext cur = NULL;
  hk__cuda.api.cuCtxGetCurrent(&cur);
  if (cur != hk__cuda.ctx) hk__cuda.api.cuCtxSetCurrent(hk__cuda.ctx);
  return HK_OK;
}

HK_API int hk_cuda_init(void) { return hk__cuda_ready(); }

HK_API int hk_cuda_device_info(hk_cuda_device_info_t *info) {
  int rc = hk__cuda_ready();
  if (rc) return rc;
  *info = hk__cuda.info;
  const hk_nvrtc_api_t *nv;
  int v = 0;
  info->nvrtc_version = hk__nvrtc_load(&nv, &v, NULL) == HK_OK ? v : 0;
  return HK_OK;
}

HK_API const char *hk_backend_name(hk_backend_t b) {
  static const char *const names[] = {
      [HK_BACKEND_AUTO] = "auto", [HK_BACKEND_CPU] = "cpu",
      [HK_BACKEND_CUDA] = "cuda"};
  return (unsigned)b < HK_COUNT(names) ? names[b] : "invalid";
}

/* ---- NVRTC --------------------------------------------------------------- */

static pthread_once_t nvrtc_once = PTHREAD_ONCE_INIT;
static hk_nvrtc_api_t nvrtc_api;
static int nvrtc_rc = HK_EUNSUPPORTED, nvrtc_version;
static char nvrtc_why[512];

/* Loads NVRTC into nvrtc_api; the result goes to nvrtc_rc and nvrtc_why.
 * Run once, by pthread_once. */
static void nvrtc_once_fn(void) {
  hku_diags d = HKU_DIAGS_INIT;
  if ((nvrtc_rc = hk__nvrtc_api_load(&nvrtc_api, &d))) {
    snprintf(nvrtc_why, sizeof nvrtc_why, "%s", hk__cuda_why(&d));
    hku_diags_free(&d);
    return;
  }
  int major = 0, minor = 0;
  nvrtc_api.nvrtcVersion(&major, &minor);
  nvrtc_version = major * 1000 + minor * 10;
}

int hk__nvrtc_load(const hk_nvrtc_api_t **api, int *version, hku_diags *d) {
  pthread_once(&nvrtc_once, nvrtc_once_fn);
  if (nvrtc_rc) {
    hku_diag_add(d, HKU_ERROR, NULL, 0, 0, "%s", nvrtc_why);
    return nvrtc_rc;
  }
  *api = &nvrtc_api;
  *version = nvrtc_version;
  return HK_OK;
}
