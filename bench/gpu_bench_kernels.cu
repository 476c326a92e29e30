/* gpu_bench_kernels.cu — the precompiled kernels of hk-gpu-bench's raw side.
 *
 * nvcc -cubin turns this into hk-gpu-bench.cubin (bench/gpu.cmake), which
 * hk-gpu-bench loads with cuModuleLoad and launches with cuLaunchKernel: the
 * baseline for hk's launch overhead. It holds the stdlib's generated CUDA
 * (hk_stdlib.cu, found through -I on the generated folder of the build),
 * so the raw side launches the very code of hk_cuda__add_f32, plus an empty
 * kernel. */
#include "hk_stdlib.cu"

extern "C" __global__ void hk_bench_empty(void) {}
