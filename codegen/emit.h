/* emit.h — validated kernel descriptions to C and CUDA C source.
 *
 * One emitter for every path: the build-time generator emits the stdlib
 * (mode HKC_EMIT_STDLIB: typed public functions hk_NAME, a registry table,
 * static entry points, system headers), the JIT and `hk gen` emit plugins
 * (mode HKC_EMIT_PLUGIN: a self-contained translation unit with no #include
 * and no C library, exporting hk_range__NAME, hk_merge__NAME, hk_lens__NAME).
 * Entry points follow core/abi.h.
 */
#ifndef HKC_EMIT_H
#define HKC_EMIT_H

#include "buf.h"
#include "kernel.h"

typedef enum hkc_emit_mode { HKC_EMIT_PLUGIN, HKC_EMIT_STDLIB } hkc_emit_mode;

/* Lanes of a reduction's inner loop for an accumulator of this many bytes:
 * independent partial sums that the compiler turns into vector registers.
 * Part of the result's definition (it fixes the order of combination). */
int hkc_reduce_lanes(size_t acc_size);

/* Appends C for every instance of every kernel of the files. Returns 0, or
 * -1 when out of memory (the files are already valid). */
int hkc_emit_c(hkc_file *const *files, int nfiles, hkc_emit_mode mode,
               hkc_buf *out);
/* Appends CUDA C for every instance with the cuda target. */
int hkc_emit_cuda(hkc_file *const *files, int nfiles, hkc_emit_mode mode,
                  hkc_buf *out);
/* Appends the public header declaring the typed stdlib functions. */
int hkc_emit_stdlib_header(hkc_file *const *files, int nfiles, hkc_buf *out);
/* The C prototype of an instance's typed function, without ';'. */
void hkc_emit_typed_proto(const hkc_instance *in, hkc_buf *out);

/* The prelude every plugin translation unit starts with (types, math
 * declarations, constants); stdlib mode uses system headers instead of the
 * type and limit definitions. */
void hkc_emit_prelude(hkc_emit_mode mode, hkc_buf *out);
void hkc_emit_cuda_prelude(hkc_buf *out);

/* ---- Shared by the C and CUDA emitters ---- */
/* The C type of a parameter in an instance ("float", "int64_t"). */
const char *hkc_param_ctype(const hkc_instance *in, const hkc_param *p);
int hkc_is_buffer(const hkc_param *p);
/* The author's code, line by line, each indented by ind spaces. */
void hkc_put_code(hkc_buf *o, const hkc_src *s, int ind);
/* An expression on one line, in parentheses, comments removed. */
void hkc_put_expr(hkc_buf *o, const hkc_src *s);
/* "typedef float T;" for each placeholder the given code uses. */
void hkc_put_holders(hkc_buf *o, const hkc_instance *in,
                     const hkc_src *const *srcs, int nsrcs, int ind);
/* "const float *PREFIXx" for a buffer, "float alpha" for a scalar. */
void hkc_put_param(hkc_buf *o, const hkc_instance *in, const hkc_param *p,
                   const char *ptr_prefix);

/* Appends s as a C string literal. */
void hkc_emit_c_string(hkc_buf *out, const char *s);

#endif
