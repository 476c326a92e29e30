/* emit.h — validated kernel descriptions to C and CUDA C source.
 *
 * One emitter for every path: the build-time generator emits the stdlib
 * (mode HKC_EMIT_STDLIB: typed public functions hk_NAME, a registry table,
 * static entry points, system headers), the JIT and `hk gen` emit plugins
 * (mode HKC_EMIT_PLUGIN: a self-contained translation unit with no #include
 * and no C library, exporting hk_range__NAME, hk_lens__NAME and, for
 * reductions, hk_merge__NAME and hk_rowred__NAME).
 * Entry points follow common/abi.h.
 */
#ifndef HKC_EMIT_H
#define HKC_EMIT_H

#include "buf.h"
#include "internal.h"
#include "kernel.h"

typedef enum hkc_emit_mode { HKC_EMIT_PLUGIN, HKC_EMIT_STDLIB } hkc_emit_mode;

/* Where the author's code landed in generated source, so that a compiler's
 * "LINE:COL: error" in generated code can be reported in the kernel file.
 * One entry per generated line that holds author code. */
typedef struct hkc_line_entry {
  unsigned gen_line;  /* 1-based line in the generated source */
  unsigned gen_col;   /* 1-based column where the author's text starts */
  const hkc_src *src; /* the body or expression it came from */
  size_t src_off;     /* offset in src->text of that text */
} hkc_line_entry;

typedef struct hkc_linemap {
  hkc_line_entry *v;
  size_t n, cap;
} hkc_linemap;

void hkc_linemap_free(hkc_linemap *m);
/* The author-code entry for generated line gen_line, or NULL. */
const hkc_line_entry *hkc_linemap_find(const hkc_linemap *m, unsigned gen_line);
/* Starts recording into map (which must be empty) where author code lands
 * in what is appended to o from now on; o->map = NULL stops it. */
void hkc_linemap_start(hku_buf *o, hkc_linemap *map);
/* Records that src text at src_off starts at the buffer's current end,
 * which is on a line after `col - 1` other characters (emitters only). */
void hkc_linemap_note(hku_buf *o, const hkc_src *src, size_t src_off,
                      unsigned col);

/* Lanes of a reduction's inner loop for an accumulator of this many bytes:
 * independent partial sums that the compiler turns into vector registers.
 * Part of the result's definition (it fixes the order of combination). */
int hkc_reduce_lanes(size_t acc_size);
/* argmax and argmin in vectors (emit_argsel.c): the form of a reduction
 * instance whose combine is the stdlib's argmax or argmin, written exactly
 * (HKC_ARGSEL_NONE otherwise), and the block reducer's body for that form
 * (for gcc and clang: HK_VEC_TREE). */
enum { HKC_ARGSEL_NONE, HKC_ARGSEL_MAX, HKC_ARGSEL_MIN };
int hkc_argsel_form(const hkc_instance *in);
void hkc_put_argsel_part(hku_buf *o, const hkc_instance *in, int form);
/* rowred's batch for that form, its value of 32 or 64 bits
 * (hk_rowb__NAME: a vector's width of rows at a time, one element of each
 * a step; after hk_rowfin__NAME, which stores a row's accumulator). */
void hkc_put_argsel_rowb(hku_buf *o, const hkc_instance *in, int form);

/* Appends C for every instance of every kernel of the files. HK_OK, or
 * HK_ENOMEM (the files are already valid, so nothing else can fail). */
int hkc_emit_c(hkc_file *const *files, int nfiles, hkc_emit_mode mode,
               hku_buf *out);
/* The same, recording where author code lands in map (which must be
 * empty; free it with hkc_linemap_free). */
int hkc_emit_c_mapped(hkc_file *const *files, int nfiles, hkc_emit_mode mode,
                      hku_buf *out, hkc_linemap *map);
/* The same, also storing where the prelude landed: prelude[0] its offset
 * in out, prelude[1] its length, and where the instances are (marks, as
 * for hkc_emit_instances); prelude, map and marks may be NULL. */
int hkc_emit_c_unit(hkc_file *const *files, int nfiles, hkc_emit_mode mode,
                    hku_buf *out, hkc_linemap *map, size_t prelude[2],
                    size_t *marks);
/* Appends CUDA C for every instance with the cuda target. */
int hkc_emit_cuda(hkc_file *const *files, int nfiles, hkc_emit_mode mode,
                  hku_buf *out);
/* The same, recording where author code lands in map (as for C). */
int hkc_emit_cuda_mapped(hkc_file *const *files, int nfiles,
                         hkc_emit_mode mode, hku_buf *out, hkc_linemap *map);
/* Appends the public header declaring the typed stdlib functions (HK_OK
 * or HK_ENOMEM). */
int hkc_emit_stdlib_header(hkc_file *const *files, int nfiles, hku_buf *out);
/* The C prototype of an instance's typed function, without ';'. */
void hkc_emit_typed_proto(const hkc_instance *in, hku_buf *out);

/* The prelude every plugin translation unit starts with (types, math
 * declarations, constants); stdlib mode uses system headers instead of the
 * type and limit definitions. */
void hkc_emit_prelude(hkc_emit_mode mode, hku_buf *out);
/* The prelude of mode, formatted once per process and kept: its text and
 * *len; NULL (*len 0) when out of memory. */
const char *hkc_prelude_get(hkc_emit_mode mode, size_t *len);
void hkc_emit_cuda_prelude(hku_buf *out);

/* ---- Shared by the C and CUDA emitters ---- */
/* The C type of a parameter in an instance as code sees it ("float",
 * "int64_t"; "float" for f16, see hkc_ctype). */
const char *hkc_param_ctype(const hkc_instance *in, const hkc_param *p);
/* The C type it is stored and passed as ("uint16_t" for f16, hkc_stype):
 * buffers point to it, scalars are passed as it. */
const char *hkc_param_stype(const hkc_instance *in, const hkc_param *p);
/* Storage and what code sees differ for f16, bf16 and bool (kernel.h):
 * every parameter list made by hkc_put_param passes scalars as stored, and
 * names every scalar "hk_s_NAME" (this prefix: "hk_s_" for scalars, ""
 * for buffers); a function holding author code then declares NAME, const
 * and converted, with hkc_put_scalar_locals (a line each, indented by
 * ind). */
const char *hkc_scalar_pre(const hkc_instance *in, const hkc_param *p);
void hkc_put_scalar_locals(hku_buf *o, const hkc_instance *in, int ind);
int hkc_is_buffer(const hkc_param *p);
/* The author's code, line by line, each indented by ind spaces; the int
 * of each plain `for (int NAME = ...;` counter is written hk_ (int64_t in
 * the preludes), so that such loops vectorise despite -fwrapv and agree on
 * every tier and target (hkc_code_int_counters). */
void hkc_put_code(hku_buf *o, const hkc_src *s, int ind);
/* An expression on one line, in parentheses, comments removed. */
void hkc_put_expr(hku_buf *o, const hkc_src *s);
/* The same without the parentheses (a type, a parameter list). */
void hkc_put_oneline(hku_buf *o, const hkc_src *s);
/* "typedef float T;" for each placeholder the given code uses. */
void hkc_put_holders(hku_buf *o, const hkc_instance *in,
                     const hkc_src *const *srcs, int nsrcs, int ind);
/* "const float *PREFIXx" for a buffer, "float alpha" for a scalar (types as
 * stored: "const uint16_t *PREFIXx", "uint16_t hk_s_alpha" for f16)
 * ("const float alpha" with const_scalar: code that runs per element must
 * not change a scalar, or results would depend on the thread count). */
void hkc_put_param(hku_buf *o, const hkc_instance *in, const hkc_param *p,
                   const char *ptr_prefix, int const_scalar);

/* Appends s for use inside a C comment: no comment end slips in, and
 * line breaks become spaces. */
void hkc_put_comment_text(hku_buf *o, const char *s);
/* Parameter i taken from the uniform argument array hk_args (as stored):
 * "*(const float *)hk_args[2]" for a scalar, "(const float *)hk_args[0]"
 * for an in buffer. */
void hkc_put_arg(hku_buf *o, const hkc_instance *in, int i);
/* hkc_put_param for every parameter in order (with skip_out, every one
 * but a reduction's results: its out and inout parameters), each followed
 * by ", ". */
void hkc_put_params(hku_buf *o, const hkc_instance *in,
                    const char *ptr_prefix, int const_scalar, int skip_out);
/* "(void)NAME;" on a line indented by ind spaces, for each parameter whose
 * role is in the mask roles (HKC_ROLE_BIT). */
void hkc_put_voids(hku_buf *o, const hkc_instance *in, unsigned roles,
                   int ind);
/* ---- Reductions (emit_common.c) ---- */
/* The C type of a reduction instance's accumulator: "float", or its
 * struct's name "hk_acc__NAME" (written into buf). */
#define HKC_ACC_CTYPE_MAX 160
const char *hkc_acc_ctype(const hkc_instance *in, char buf[HKC_ACC_CTYPE_MAX]);
/* A struct accumulator's typedef, with a check that the compiler lays it
 * out in hkc_acc_size() bytes (nothing for the other forms). */
void hkc_put_acc_struct(hku_buf *o, const hkc_instance *in);
/* A reduction's "QUAL ACC hk_combine__NAME(const ACC a, const ACC b)": its
 * combine expression as a function (qual "HK_INLINE " in C); with a struct
 * accumulator, its statements updating a copy of a, which it returns. */
void hkc_put_combine_fn(hku_buf *o, const hkc_instance *in, const char *qual);
/* A struct reduction's "QUAL ACC hk_identity__NAME(scalars...)". */
void hkc_put_identity_fn(hku_buf *o, const hkc_instance *in, const char *qual);
/* The neutral value: "(float)(EXPR)", or "hk_identity__NAME(scalars...)"
 * for a struct (the scalars by their names). */
void hkc_put_identity_call(hku_buf *o, const hkc_instance *in);
/* "QUAL ACC hk_map__NAME(const T x, ..., const size_t i, const size_t n)":
 * the value of element i from the in elements and scalars, in parameter
 * order. */
void hkc_put_map_fn(hku_buf *o, const hkc_instance *in, const char *qual);
/* "hk_map__NAME(PRE x POST, ..., alpha, AT, n)". */
void hkc_put_map_call(hku_buf *o, const hkc_instance *in, const char *pre,
                      const char *post, const char *at);
/* The locals a struct reduction's finalize assigns, indented by ind: "float
 * out = 0;" for each out, "float d = PRE d POST;" for each inout. And
 * their stores "PRE out POST = out;". */
void hkc_put_result_locals(hku_buf *o, const hkc_instance *in, const char *pre,
                           const char *post, int ind);
void hkc_put_result_stores(hku_buf *o, const hkc_instance *in, const char *pre,
                           const char *post, int ind);
/* A raw kernel's function: head, the instance's name, its parameters as
 * the author sees them, then the author's body (C or CUDA). head is
 * "static void hk_raw__" in C, the __global__ declaration in CUDA. */
void hkc_put_raw_function(hku_buf *o, const hkc_instance *in,
                          const char *head, const hkc_src *body);

/* Calls fn for every instance of every kernel of the files whose targets
 * include target, in file order (see hkc_file_instance). */
typedef void (*hkc_instance_fn)(hku_buf *o, const hkc_file *f,
                                const hkc_instance *in, void *arg);
void hkc_each_instance(hkc_file *const *files, int nfiles, unsigned target,
                       hkc_instance_fn fn, hku_buf *o, void *arg);

/* The per-language part of an emitter (after libuv's one contract, one
 * file per backend): the code of each kind of instance. */
typedef void (*hkc_kind_fn)(hku_buf *o, const hkc_instance *in,
                            hkc_emit_mode mode);
typedef struct hkc_emitter {
  unsigned target;       /* HK_TARGET_*: the kernels it writes code for */
  int banner_names_file; /* each instance's banner names its kernel file */
  hkc_kind_fn elementwise, reduction, raw;
  hkc_kind_fn every; /* after the kind's code, for every instance; or NULL */
  hkc_kind_fn rows;  /* rows kernels (emit_rows.c) */
  hkc_kind_fn grid;  /* grid kernels (emit_grid.c) */
} hkc_emitter;
/* The code of a grid instance, in C and in CUDA C (emit_grid.c). */
void hkc_emit_grid_c(hku_buf *o, const hkc_instance *in, hkc_emit_mode mode);
void hkc_emit_grid_cuda(hku_buf *o, const hkc_instance *in,
                        hkc_emit_mode mode);
/* An instance's consts and helpers before its code (cuda: as __device__
 * functions), and their macros undefined after it (emit_scope.c). */
void hkc_put_scope_open(hku_buf *o, const hkc_instance *in, int cuda);
void hkc_put_scope_close(hku_buf *o, const hkc_instance *in);
/* The code of a rows instance, in C and in CUDA C (emit_rows.c). */
void hkc_emit_rows_c(hku_buf *o, const hkc_instance *in, hkc_emit_mode mode);
void hkc_emit_rows_cuda(hku_buf *o, const hkc_instance *in,
                        hkc_emit_mode mode);
/* Appends, for each instance with e's target, a banner comment and e's
 * code for it; returns how many. Each instance's code stands alone (its
 * consts' and helpers' macros are undefined after it). marks, when not
 * NULL, has room for one more than there are instances: marks[i] is where
 * the i-th instance starts in o, the last where the last one ends. */
int hkc_emit_instances(hkc_file *const *files, int nfiles,
                       hkc_emit_mode mode, const hkc_emitter *e, hku_buf *o,
                       size_t *marks);

/* Reports the error lines of a C compiler's output about the generated
 * source of f (emitted with line map m) as diagnostics located in f's
 * kernel file: "NAME:LINE[:COL]: error: MSG" lines are mapped through m,
 * "undefined symbol 'X'" to the first use of X. compiler names the
 * compiler in the messages. Returns the number of errors reported. */
int hkc_report_compiler_output(const char *out, const hkc_linemap *m,
                               const hkc_file *f, const char *compiler,
                               hku_diags *d);

/* Appends a checked len expression of instance in (it needs `int hk_bad`
 * in scope, set on overflow). HK_OK, or HK_ENOMEM (or HK_ESCHEMA for an
 * invalid one: validated files never hold one). And the helpers it calls
 * (part of every prelude). */
int hkc_emit_len(const hkc_src *src, const hkc_instance *in, hku_buf *out);
void hkc_emit_len_helpers(hku_buf *o);
/* The same helpers as CUDA device functions (the CUDA prelude has none:
 * emit_cuda.c adds them to a unit holding a grid kernel). */
void hkc_emit_len_helpers_cuda(hku_buf *o);

/* Appends s as a C string literal. */
void hkc_emit_c_string(hku_buf *out, const char *s);

#endif
