/* api.c — dlopen of the CUDA driver and of NVRTC (see api.h). */
#include "api.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hk.h"

/* Resolves names[i] into slots[i] from lib (libname, for the message).
 * HK_OK, or HK_EUNSUPPORTED naming the first missing symbol in d. */
static int resolve(void *lib, const char *const *names, void **slots,
                   size_t count, const char *libname, hku_diags *d) {
  for (size_t i = 0; i < count; i++) {
    slots[i] = dlsym(lib, names[i]);
    if (!slots[i]) {
      hku_diag_add(d, HKU_ERROR, NULL, 0, 0,
                   "%s has no %s (too old a driver or toolkit?)", libname,
                   names[i]);
      return HK_EUNSUPPORTED;
    }
  }
  return HK_OK;
}

/* In the order of hk_cuda_api_t's members. */
static const char *const driver_names[] = {
    "cuInit",
    "cuDriverGetVersion",
    "cuDeviceGetCount",
    "cuDeviceGet",
    "cuDeviceGetName",
    "cuDeviceGetAttribute",
    "cuDeviceTotalMem_v2",
    "cuDevicePrimaryCtxRetain",
    "cuCtxSetCurrent",
    "cuCtxGetCurrent",
    "cuGetErrorName",
    "cuGetErrorString",
    "cuModuleLoadData",
    "cuModuleUnload",
    "cuModuleGetFunction",
    "cuLaunchKernel",
    "cuMemAlloc_v2",
    "cuMemFree_v2",
    "cuMemHostAlloc",
    "cuMemFreeHost",
    "cuMemcpyHtoD_v2",
    "cuMemcpyDtoH_v2",
    "cuMemcpyHtoDAsync_v2",
    "cuMemcpyDtoHAsync_v2",
    "cuPointerGetAttribute",
    "cuStreamCreate",
    "cuStreamDestroy_v2",
    "cuStreamSynchronize",
    "cuEventCreate",
    "cuEventDestroy_v2",
    "cuEventRecord",
    "cuEventSynchronize",
};

int hk__cuda_api_load(hk_cuda_api_t *api, hku_diags *d) {
  _Static_assert(HK_COUNT(driver_names) ==
                     sizeof(hk_cuda_api_t) / sizeof(void (*)(void)),
                 "one name per entry point");
  const char *name = getenv("HK_LIBCUDA");
  if (!name || !*name) name = "libcuda.so.1";
  void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    hku_diag_add(d, HKU_ERROR, NULL, 0, 0,
                 "cannot load the NVIDIA driver library %s (%s)", name,
                 dlerror());
    return HK_EUNSUPPORTED;
  }
  /* The members are all function pointers of one size, in name order. */
  void *slots[HK_COUNT(driver_names)];
  int rc = resolve(lib, driver_names, slots, HK_COUNT(slots), name, d);
  if (rc) {
    dlclose(lib);
    return rc;
  }
  memcpy(api, slots, sizeof slots);
  return HK_OK; /* the library stays loaded for the life of the process */
}

static const char *const nvrtc_names[] = {
    "nvrtcVersion",           "nvrtcGetErrorString",
    "nvrtcCreateProgram",     "nvrtcDestroyProgram",
    "nvrtcCompileProgram",    "nvrtcGetProgramLogSize",
    "nvrtcGetProgramLog",     "nvrtcGetCUBINSize",
    "nvrtcGetCUBIN",
};

int hk__nvrtc_api_load(hk_nvrtc_api_t *api, hku_diags *d) {
  _Static_assert(HK_COUNT(nvrtc_names) ==
                     sizeof(hk_nvrtc_api_t) / sizeof(void (*)(void)),
                 "one name per entry point");
  char tried[1024] = "";
  const char *env = getenv("HK_LIBNVRTC");
  const char *home = getenv("CUDA_HOME");
  char candidates[8][512];
  int nc = 0;
  if (env && *env) snprintf(candidates[nc++], 512, "%s", env);
  static const char *const sonames[] = {"libnvrtc.so.13", "libnvrtc.so.12",
                                        "libnvrtc.so"};
  for (size_t i = 0; i < HK_COUNT(sonames); i++) snprintf(candidates[nc++], 512, "%s", sonames[i]);
  if (home && *home) snprintf(candidates[nc++], 512, "%s/lib64/libnvrtc.so", home);
  snprintf(candidates[nc++], 512, "/usr/local/cuda/lib64/libnvrtc.so");
  void *lib = NULL;
  const char *got = NULL;
  for (int i = 0; i < nc && !lib; i++) {
    lib = dlopen(candidates[i], RTLD_NOW | RTLD_LOCAL);
    if (lib)
      got = candidates[i];
    else if (strlen(tried) + strlen(candidates[i]) + 3 < sizeof tried)
      strcat(strcat(tried, tried[0] ? ", " : ""), candidates[i]);
  }
  if (!lib) {
    hku_diag_add(d, HKU_ERROR, NULL, 0, 0,
                 "NVRTC not found (tried %s; install the CUDA toolkit or set "
                 "HK_LIBNVRTC)",
                 tried);
    return HK_EUNSUPPORTED;
  }
  void *slots[HK_COUNT(nvrtc_names)];
  int rc = resolve(lib, nvrtc_names, slots, HK_COUNT(slots), got, d);
  if (rc) {
    dlclose(lib);
    return rc;
  }
  memcpy(api, slots, sizeof slots);
  return HK_OK;
}
