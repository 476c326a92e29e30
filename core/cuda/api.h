/* api.h — the CUDA driver API and NVRTC, reached through dlopen.
 *
 * libhk never links CUDA: it loads libcuda.so.1 (the driver) and libnvrtc
 * when the CUDA backend first starts, so that it builds without the toolkit
 * headers and runs on machines without a GPU. The few types and constants
 * used are declared here with the values of the CUDA headers (stable ABI).
 */
#ifndef HK_CUDA_API_H
#define HK_CUDA_API_H

#include <stddef.h>

#include "diag.h"
#include "internal.h"

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;

#define HK_CUDA_SUCCESS 0
#define HK_CUDA_ERROR_INVALID_VALUE 1
#define HK_CUDA_ERROR_OUT_OF_MEMORY 2
#define HK_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT 16
#define HK_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define HK_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76
#define HK_CU_POINTER_ATTRIBUTE_MEMORY_TYPE 2
#define HK_CU_POINTER_ATTRIBUTE_IS_MANAGED 8
#define HK_CU_MEMORYTYPE_HOST 1
#define HK_CU_MEMORYTYPE_DEVICE 2
#define HK_CU_MEMORYTYPE_UNIFIED 4
#define HK_CU_STREAM_NON_BLOCKING 1
#define HK_CU_MEMHOSTALLOC_PORTABLE 1
#define HK_CU_EVENT_DISABLE_TIMING 2

typedef int nvrtcResult;
typedef struct _nvrtcProgram *nvrtcProgram;

/* The driver entry points hk uses (the _v2 names where CUDA versioned
 * them). Filled by hk__cuda_api_load. */
typedef struct hk_cuda_api {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDriverGetVersion)(int *);
  CUresult (*cuDeviceGetCount)(int *);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDeviceGetName)(char *, int, CUdevice);
  CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
  CUresult (*cuDeviceTotalMem)(size_t *, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuCtxGetCurrent)(CUcontext *);
  CUresult (*cuGetErrorName)(CUresult, const char **);
  CUresult (*cuGetErrorString)(CUresult, const char **);
  CUresult (*cuModuleLoadData)(CUmodule *, const void *);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned,
                             unsigned, unsigned, unsigned, unsigned, CUstream,
                             void **, void **);
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemHostAlloc)(void **, size_t, unsigned);
  CUresult (*cuMemFreeHost)(void *);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
  CUresult (*cuMemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
  CUresult (*cuPointerGetAttribute)(void *, int, CUdeviceptr);
  CUresult (*cuStreamCreate)(CUstream *, unsigned);
  CUresult (*cuStreamDestroy)(CUstream);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuEventCreate)(CUevent *, unsigned);
  CUresult (*cuEventDestroy)(CUevent);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventSynchronize)(CUevent);
} hk_cuda_api_t;

/* NVRTC, loaded separately: a device without NVRTC still runs the stdlib. */
typedef struct hk_nvrtc_api {
  nvrtcResult (*nvrtcVersion)(int *, int *);
  const char *(*nvrtcGetErrorString)(nvrtcResult);
  nvrtcResult (*nvrtcCreateProgram)(nvrtcProgram *, const char *,
                                    const char *, int, const char *const *,
                                    const char *const *);
  nvrtcResult (*nvrtcDestroyProgram)(nvrtcProgram *);
  nvrtcResult (*nvrtcCompileProgram)(nvrtcProgram, int, const char *const *);
  nvrtcResult (*nvrtcGetProgramLogSize)(nvrtcProgram, size_t *);
  nvrtcResult (*nvrtcGetProgramLog)(nvrtcProgram, char *);
  nvrtcResult (*nvrtcGetCUBINSize)(nvrtcProgram, size_t *);
  nvrtcResult (*nvrtcGetCUBIN)(nvrtcProgram, char *);
  nvrtcResult (*nvrtcGetPTXSize)(nvrtcProgram, size_t *);
  nvrtcResult (*nvrtcGetPTX)(nvrtcProgram, char *);
} hk_nvrtc_api_t;

/* Loads the driver (libcuda.so.1, or $HK_LIBCUDA) and resolves every entry
 * point into *api. HK_OK, or HK_EUNSUPPORTED with the reason in d (no
 * library, or one without an entry point). Not thread-safe: called once. */
HK_INTERNAL int hk__cuda_api_load(hk_cuda_api_t *api, hku_diags *d);
/* Loads NVRTC: $HK_LIBNVRTC, else libnvrtc.so.13, .12, libnvrtc.so, also
 * under $CUDA_HOME/lib64 and /usr/local/cuda/lib64. HK_OK, or
 * HK_EUNSUPPORTED with the reason in d. Not thread-safe: called once. */
HK_INTERNAL int hk__nvrtc_api_load(hk_nvrtc_api_t *api, hku_diags *d);

#endif
