/* api.c — dlopen of the CUDA driver and of NVRTC (see api.h). */
#include "api.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hk.h"

/* Resolves names[0..count) from lib (libname, for the message) into api,
 * a struct of count function pointers in name order. HK_OK; else closes
 * lib and returns HK_EUNSUPPORTED naming the first missing symbol in d. */
static int resolve(void *lib, const char *const *names, size_t count,
                   const char *libname, void *api, hku_diags *d) {
  void *slots[64];
  HK_ASSERT(count <= HK_COUNT(slots));
  for (size_t i = 0; i < count; i++) {
    slots[i] = dlsym(lib, names[i]);
    if (!slots[i]) {
      hku_diag_add(d, HKU_ERROR, NULL, 0, 0,
                   "%s has no %s (too old a driver or toolkit?)", libname,
                   names[i]);
      dlclose(lib);
      return HK_EUNSUPPORTED;
    }
  }
  /* The members are all function pointers of one size, in name order. */
  memcpy(api, slots, count * sizeof *slots);
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
  /* on success the library stays loaded for the life of the process */
  return resolve(lib, driver_names, HK_COUNT(driver_names), name, api, d);
}

static const char *const nvrtc_names[] = {
    "nvrtcVersion",           "nvrtcGetErrorString",
    "nvrtcCreateProgram",     "nvrtcDestroyProgram",
    "nvrtcCompileProgram",    "nvrtcGetProgramLogSize",
    "nvrtcGetProgramLog",     "nvrtcGetCUBINSize",
    "nvrtcGetCUBIN",          "nvrtcGetPTXSize",
    "nvrtcGetPTX",
};

int hk__nvrtc_api_load(hk_nvrtc_api_t *api, hku_diags *d) {
  _Static_assert(HK_COUNT(nvrtc_names) ==
                     sizeof(hk_nvrtc_api_t) / sizeof(void (*)(void)),
                 "one name per entry point");
  char tried[1024] = "";
  const char *env = getenv("HK_LIBNVRTC");
  const char *home = getenv("CUDA_HOME");
  char candidates[8][512];
  const size_t cl = sizeof candidates[0];
  int nc = 0;
  if (env && *env) snprintf(candidates[nc++], cl, "%s", env);
  static const char *const sonames[] = {"libnvrtc.so.13", "libnvrtc.so.12",
                                        "libnvrtc.so"};
  for (size_t i = 0; i < HK_COUNT(sonames); i++)
    snprintf(candidates[nc++], cl, "%s", sonames[i]);
  if (home && *home)
    snprintf(candidates[nc++], cl, "%s/lib64/libnvrtc.so", home);
  snprintf(candidates[nc], cl, "/usr/local/cuda/lib64/libnvrtc.so");
  /* (CUDA_HOME=/usr/local/cuda: tried, and named, once) */
  if (strcmp(candidates[nc], candidates[nc - 1])) nc++;
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
  return resolve(lib, nvrtc_names, HK_COUNT(nvrtc_names), got, api, d);
}
