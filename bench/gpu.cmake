# gpu.cmake — hk-gpu-bench, the GPU benchmark of the CUDA backend
# (bench/gpu_bench.c), and the precompiled kernels of its raw side.
#
# Included by the root CMakeLists.txt only when the CUDA toolkit was found,
# in the root's directory scope. It uses what the root defines:
#   HK_NVCC          nvcc
#   HK_STDLIB_CU     the generated stdlib CUDA source (a custom command
#                    OUTPUT in the root directory; target hk_stdlib_gen)
#   HK_KERNEL_FLAGS  flags of generated kernel code (host side; unused here)
# Builds, next to the hk command:
#   hk-gpu-bench         links hk_static; CUDA only through dlopen
#   hk-gpu-bench.cubin   the stdlib's CUDA plus an empty kernel, by nvcc
#                        -cubin for HK_GPU_BENCH_ARCH
# tools/gpu_check.sh builds and runs it on a machine with a GPU.

# nvcc -arch=native fails on a machine without a GPU, so the architecture is
# named: sm_90 (H100, H200) unless configured otherwise, e.g.
# -DHK_GPU_BENCH_ARCH=sm_80 for an A100. A cubin runs only on its own
# architecture (hk-gpu-bench says so when it does not load).
set(HK_GPU_BENCH_ARCH sm_90 CACHE STRING
    "GPU architecture of hk-gpu-bench.cubin (sm_80, sm_90, ...)")

get_filename_component(HK_GPU_BENCH_GEN_DIR ${HK_STDLIB_CU} DIRECTORY)
set(HK_GPU_BENCH_CU ${CMAKE_CURRENT_LIST_DIR}/gpu_bench_kernels.cu)
set(HK_GPU_BENCH_CUBIN ${PROJECT_BINARY_DIR}/hk-gpu-bench.cubin)

# The cubin is a second nvcc compile of the whole stdlib (about 35 s on 2
# cores): tools/test.sh, which runs no GPU, turns it off; hk-gpu-bench then
# says it is missing when run.
option(HK_BUILD_GPU_BENCH_CUBIN "Build hk-gpu-bench.cubin (nvcc)" ON)

add_custom_command(
  OUTPUT ${HK_GPU_BENCH_CUBIN}
  COMMAND ${HK_NVCC} -cubin -arch=${HK_GPU_BENCH_ARCH} -O3
          -I${HK_GPU_BENCH_GEN_DIR} -o ${HK_GPU_BENCH_CUBIN} ${HK_GPU_BENCH_CU}
  DEPENDS ${HK_GPU_BENCH_CU} ${HK_STDLIB_CU}
  COMMENT "Building hk-gpu-bench.cubin (nvcc, ${HK_GPU_BENCH_ARCH})"
  VERBATIM)
if(HK_BUILD_GPU_BENCH_CUBIN)
  add_custom_target(hk_gpu_bench_cubin DEPENDS ${HK_GPU_BENCH_CUBIN})
  # hk_stdlib_gen runs the generator first: the make generators would
  # otherwise also run it from this target, at the same time.
  add_dependencies(hk_gpu_bench_cubin hk_stdlib_gen)
endif()

add_executable(hk_gpu_bench ${CMAKE_CURRENT_LIST_DIR}/gpu_bench.c)
target_link_libraries(hk_gpu_bench PRIVATE hk_static ${CMAKE_DL_LIBS} m)
hk_flags(hk_gpu_bench)
set_target_properties(hk_gpu_bench PROPERTIES
  OUTPUT_NAME hk-gpu-bench
  RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR})
if(HK_BUILD_GPU_BENCH_CUBIN)
  add_dependencies(hk_gpu_bench hk_gpu_bench_cubin)
endif()
