/* fatbin.c — the stdlib's GPU code, embedded in libhk.
 *
 * At build time nvcc compiles the CUDA that hk-gen emits from
 * the stdlib kernel files into a fatbin (sm_80, sm_90 and PTX for later GPUs,
 * see CMakeLists.txt); .incbin puts its bytes here unchanged. Without the
 * CUDA toolkit there is none, and stdlib kernels run on the CPU only. */
#include "backend.h"

#ifdef HK_CUDA_FATBIN
__asm__(".section .rodata.hk_fatbin,\"a\"\n"
        ".balign 64\n"
        ".globl hk__fatbin_bytes\n"
        ".hidden hk__fatbin_bytes\n"
        ".type hk__fatbin_bytes, @object\n"
        "hk__fatbin_bytes:\n"
        ".incbin \"" HK_CUDA_FATBIN "\"\n"
        ".byte 0\n"
        ".previous\n");
extern const unsigned char hk__fatbin_bytes[]
    __attribute__((visibility("hidden")));
const unsigned char *const hk__cuda_stdlib_fatbin = hk__fatbin_bytes;
#else
const unsigned char *const hk__cuda_stdlib_fatbin = 0;
#endif
