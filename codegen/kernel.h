/* kernel.h — kernel descriptions: the one place that knows the format.
 *
 * hkc_file_parse() turns a kernel file (SPEC §1) into validated hkc_kernel
 * descriptions and their concrete instances; every problem becomes a located
 * diagnostic "PATH:LINE:COL: error: FIELD: what was expected". The emitters
 * (emit.h) turn instances into C or CUDA; the build-time generator, the JIT
 * and the hk command all go through here.
 */
#ifndef HKC_KERNEL_H
#define HKC_KERNEL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "diag.h"
#include "hk.h"
#include "json.h"

#define HKC_NAME_MAX 63
/* The largest kernel file read, in bytes. */
#define HKC_FILE_MAX (64u * 1024 * 1024)
/* Instance names add "_TYPE" per placeholder to the kernel's name. */
#define HKC_INSTANCE_NAME_MAX 127

/* A piece of C written by the kernel author (a body or an expression),
 * joined into one text, with what is needed to point back into the file. */
typedef struct hkc_seg {
  const hkj_node *node; /* a string node holding part of the text */
  size_t start;         /* where its decoded text begins in `text` */
} hkc_seg;

typedef struct hkc_src {
  char *text; /* NULL when the field is absent */
  size_t len;
  char *field; /* "body", "kernels[1].map", ... */
  hkc_seg *segs;
  size_t nsegs;
} hkc_src;

typedef struct hkc_param {
  char *name;       /* NULL when the name was refused */
  hk_dtype_t dtype; /* HK_DTYPE_INVALID when the type is a placeholder */
  char placeholder; /* 'A'..'Z', or 0 */
  hk_role_t role;
  hkc_src len; /* raw kernels: the element count expression, if given */
  hk_row_t row; /* rows kernels: how the buffer steps per row */
  char *doc;
  const hkj_node *node;
  /* 1 when its name, type or role was refused (reported), or its name
   * repeats an earlier one: then name may be NULL and type and role are
   * defaults, and checks that look it up must not judge by them. Only an
   * invalid file has such a parameter. */
  int refused;
} hkc_param;

/* Sets of roles, as bit masks: HKC_ROLE_BIT(HK_ROLE_IN) | ... */
#define HKC_ROLE_BIT(r) (1u << (r))
#define HKC_ROLES_BUFFERS                                      \
  (HKC_ROLE_BIT(HK_ROLE_IN) | HKC_ROLE_BIT(HK_ROLE_OUT) |      \
   HKC_ROLE_BIT(HK_ROLE_INOUT))
#define HKC_ROLES_ALL (HKC_ROLES_BUFFERS | HKC_ROLE_BIT(HK_ROLE_SCALAR))

typedef struct hkc_placeholder {
  char letter;
  hk_dtype_t types[HK_DTYPE_COUNT];
  int ntypes;
} hkc_placeholder;

struct hkc_kernel;

/* A reduction's accumulator: the result's type (no "acc"), another type
 * ("acc": "i64" or "T"), or a struct ("acc": {"v": "T", "idx": "i64"}). */
typedef enum hkc_acc_form {
  HKC_ACC_OUT,
  HKC_ACC_TYPE,
  HKC_ACC_STRUCT
} hkc_acc_form;

/* A field of a struct accumulator, with its entries of "identity" and
 * "map" (expressions). */
typedef struct hkc_acc_field {
  char *name;
  hk_dtype_t dtype; /* HK_DTYPE_INVALID when the type is a placeholder */
  char placeholder; /* 'A'..'Z', or 0 */
  hkc_src identity, map;
  const hkj_node *node; /* its member of "acc" */
} hkc_acc_field;

/* The fields of grid kernels and the kernel-wide definitions (parse_grid.c):
 * an index of the index space ("grid": {"b": "B", ...}), a per-call value
 * ("setup"), a per-index local array ("scratch"), a compile-time integer
 * ("consts") and a function code may call ("helpers"). */
#define HKC_GRID_MAX_RANK 3
/* The most bytes a grid kernel's scratch arrays may take together. */
#define HKC_SCRATCH_MAX 16384
typedef struct hkc_grid_dim {
  char *name;
  hkc_src ext; /* the extent: a len-style expression */
  const hkj_node *node;
} hkc_grid_dim;

typedef struct hkc_local {
  char *name;
  hk_dtype_t dtype; /* HK_DTYPE_INVALID when the type is a placeholder */
  char placeholder;
  hkc_src value;   /* setup: its expression; scratch: its len */
  int64_t count;   /* scratch: the element count */
  const hkj_node *node;
} hkc_local;

typedef struct hkc_const {
  char *name;
  int64_t value;
  const hkj_node *node;
} hkc_const;

typedef struct hkc_helper {
  char *name;
  hkc_src returns, params, body;
  const hkj_node *node;
} hkc_helper;

/* One concrete kernel: a kernel with every placeholder bound to a type. */
typedef struct hkc_instance {
  char *name; /* "add_f32"; the kernel's name when it has no placeholders */
  const struct hkc_kernel *k;
  hk_dtype_t bind[26]; /* placeholder letter - 'A' -> type */
} hkc_instance;

typedef struct hkc_kernel {
  char *name;
  char *doc; /* "" when absent */
  hk_kind_t kind;
  unsigned targets; /* HK_TARGET_* */
  int fp_fast;      /* "fp": "fast" (1), else "strict" (0) */
  hkc_param *params;
  int nparams;
  hkc_placeholder holders[26]; /* in declaration order */
  int nholders;
  hkc_src body;                              /* elementwise, rows */
  hkc_src map, combine, identity, finalize; /* reduction */
  hkc_src cpu, cuda;                         /* raw */
  /* reduction accumulator (reduce.c): with HKC_ACC_STRUCT, map and
   * identity are per field and combine and finalize are statements */
  hkc_acc_form acc_form;
  hk_dtype_t acc_dtype; /* HKC_ACC_TYPE: the type, or INVALID ... */
  char acc_placeholder; /* ... with this placeholder */
  hkc_acc_field *acc_fields; /* HKC_ACC_STRUCT, in file order */
  int nacc_fields;
  hkc_grid_dim grid[HKC_GRID_MAX_RANK]; /* grid kernels, outermost first */
  int grid_rank;
  hkc_local *setup, *scratch; /* grid kernels, in file order */
  int nsetup, nscratch;
  hkc_const *consts; /* every kind */
  int nconsts;
  hkc_helper *helpers; /* every kind */
  int nhelpers;
  hkc_instance *inst;
  int ninst;
  char *prefix; /* "" or "kernels[2]." for field names in messages */
  const hkj_node *node;
} hkc_kernel;

typedef struct hkc_file {
  char *path;
  hkj_doc *doc;
  hkc_kernel *kernels;
  int nkernels;
  /* every kernel's instances in file order: inst[i] is instance i of
   * hkc_file_instance (filled once the file is valid) */
  const hkc_instance **inst;
  int ninst;
} hkc_file;

/* Parses and validates a kernel file held in memory. HK_OK and *out, or
 * HK_ESCHEMA with at least one error in d (as many as could be found), or
 * HK_ENOMEM (codegen.h). */
int hkc_file_parse(const char *path, const char *text, size_t len,
                   hkc_file **out, hku_diags *d);
/* The same, reading the file (HK_EIO when it cannot be read). */
int hkc_file_load(const char *path, hkc_file **out, hku_diags *d);
void hkc_file_free(hkc_file *f);

/* The name the file gives parameter p: its name, or the text of a refused
 * "name"; NULL when there is none. */
const char *hkc_param_given_name(const hkc_param *p);
/* The concrete type of parameter p in instance in. */
hk_dtype_t hkc_param_type(const hkc_instance *in, const hkc_param *p);
/* The accumulator type of a reduction instance: its "acc" type, else its
 * result parameter's; HK_DTYPE_INVALID for a struct accumulator. */
hk_dtype_t hkc_acc_type(const hkc_instance *in);
/* The type of field f of a struct accumulator in instance in. */
hk_dtype_t hkc_acc_field_type(const hkc_instance *in, const hkc_acc_field *f);
/* A reduction instance's accumulator size in bytes (a struct's as C lays
 * it out: each field aligned to its size, the whole to its largest). */
size_t hkc_acc_size(const hkc_instance *in);
/* 1 when parameter p receives a reduction's result (out or inout). */
int hkc_is_result(const hkc_param *p);
/* The index of a reduction's first result parameter (out or inout). */
int hkc_result_index(const hkc_kernel *k);
/* The C type name of a dtype as kernel code sees it: "float", "int32_t",
 * ...; "float" for f16 and bf16 (computed in f32), "hk_bool" for bool
 * (_Bool in C, bool in CUDA; both preludes define it). */
const char *hkc_ctype(hk_dtype_t t);
/* The C type an element of t is stored as (in buffers, in hk_call's args,
 * in the typed stdlib functions): hkc_ctype but "uint16_t" for f16 and
 * bf16, "uint8_t" for bool. */
const char *hkc_stype(hk_dtype_t t);
/* sizeof the type code sees (4 for f16 and bf16): an accumulator's bytes. */
size_t hkc_compute_size(hk_dtype_t t);
/* 1 when t's stored and seen types differ (f16, bf16, bool): then values
 * pass through the prelude's conversions. */
int hkc_dtype_converts(hk_dtype_t t);
/* The conversions, as text around an expression: PRE expr POST.
 * load: a stored value to the seen one ("hk_f16_to_f32(", "(hk_bool)(");
 * store: a seen value to the stored one, rounded to nearest even
 * ("hk_f32_to_f16(", "(uint8_t)("); "" and "" for the other types. */
const char *hkc_load_pre(hk_dtype_t t);
const char *hkc_store_pre(hk_dtype_t t);
const char *hkc_conv_post(hk_dtype_t t);
/* 1 when buffer p of instance in is staged: an f16 or bf16 buffer of a
 * rows kernel, whose rows the body sees as float copies (emit_rows.c). */
int hkc_rows_staged(const hkc_instance *in, const hkc_param *p);
/* The number of in's staged buffers (0 for other kinds). */
int hkc_rows_nstaged(const hkc_instance *in);
/* 1 when any of the instance's code calls a math function. */
int hkc_is_heavy(const hkc_kernel *k);
/* Adds an error to d at PATH:LINE:COL: "FIELD: MESSAGE" (without the
 * field when it is NULL or ""), the message printf'ed from fmt and ap. */
void hkc_vreport(hku_diags *d, const char *path, int line, int col,
                 const char *field, const char *fmt, va_list ap)
    __attribute__((format(printf, 6, 0)));
/* The file position of byte off of a source text. */
void hkc_src_pos(const hkj_doc *doc, const hkc_src *s, size_t off, int *line,
                 int *col);

/* The public description of an instance, in one malloc'ed block that does
 * not point into the file (free() it). NULL when out of memory. */
hk_kernel_info_t *hkc_instance_info_new(const hkc_instance *in,
                                        const char *origin,
                                        const char *source);

/* The lexical checks on author code (lex.c). */
typedef enum hkc_code_mode {
  HKC_CODE_BODY,     /* elementwise statements, run once per element */
  HKC_CODE_RAW_CPU,  /* a raw kernel's C function body */
  HKC_CODE_RAW_CUDA, /* a raw kernel's CUDA __global__ body */
  HKC_CODE_EXPR,     /* a reduction expression or a len */
  HKC_CODE_STMTS,    /* a struct reduction's combine or finalize */
  HKC_CODE_ROWS,     /* a rows kernel's body: raw cpu rules, and shared with
                        CUDA when the kernel targets cuda */
  HKC_CODE_ROWS_CUDA /* a rows kernel's "cuda" body: the rows body's rules,
                        plus hk_lane, hk_lanes and the hk_row_* helpers */
} hkc_code_mode;

/* Checks src against the rules of its mode: no preprocessor lines, asm,
 * digraphs, trigraphs or line continuations; balanced brackets; calls only
 * to the allowed math functions (except CUDA bodies); for expressions, no
 * statements, and (when idents is not NULL) no names other than idents, the
 * math names and type names. `what` names the allowed names in messages.
 * Code shared by C and CUDA (bodies and expressions of kernels whose targets
 * include cuda) may not use C++ keywords as names.
 * HK_OK, HK_ESCHEMA (the problems reported into d), or HK_ENOMEM. */
int hkc_check_code(const hkj_doc *doc, const hkc_src *src, hkc_code_mode mode,
                   const char *const *idents, const char *what,
                   unsigned targets, hku_diags *d);
/* hkc_check_code, where the code may also call the functions named in
 * callables (NULL-terminated; a kernel's helpers), or none when NULL. */
int hkc_check_code_calls(const hkj_doc *doc, const hkc_src *src,
                         hkc_code_mode mode, const char *const *idents,
                         const char *what, unsigned targets,
                         const char *const *callables, hku_diags *d);
/* hkc_check_code_calls, where the parameters named in floats
 * (NULL-terminated, or NULL) hold floats: the f16 and bf16 conversions may
 * not take them or store into them. */
int hkc_check_code_floats(const hkj_doc *doc, const hkc_src *src,
                          hkc_code_mode mode, const char *const *idents,
                          const char *what, unsigned targets,
                          const char *const *callables,
                          const char *const *floats, hku_diags *d);
/* The offset of the first call of the function name in the code, or -1. */
long hkc_code_find_call(const hkc_src *src, const char *name);
/* The text with comments turned into spaces and newlines into spaces: an
 * expression that can be emitted on one line. malloc'ed; NULL on OOM. */
char *hkc_expr_oneline(const hkc_src *src);
/* Checks a raw kernel's len expression: integer arithmetic over integer
 * literals, integer scalars and n (lenexpr.c). HK_OK, HK_ESCHEMA (the
 * problems reported into d), or HK_ENOMEM. */
int hkc_check_len(const hkj_doc *doc, const hkc_src *src, const hkc_kernel *k,
                  hku_diags *d);

/* Evaluates a compile-time count (a scratch len): len grammar over integer
 * literals and k's consts only, in checked int64 arithmetic. HK_OK and
 * *value, HK_ESCHEMA (reported into d), or HK_ENOMEM. */
int hkc_const_len(const hkj_doc *doc, const hkc_src *src, const hkc_kernel *k,
                  int64_t *value, hku_diags *d);

/* The offset of the first use of identifier id in the code, or -1. */
long hkc_code_find(const hkc_src *src, const char *id);
/* The offsets (in *offs, malloc'ed; NULL when none) of the `int` of every
 * `for (int NAME = ...;` whose init clause declares that one plain int:
 * the counters the emitter widens to 64 bits. Their number, or (size_t)-1
 * without memory. */
size_t hkc_code_int_counters(const hkc_src *src, size_t **offs);
/* 1 when the code names identifier id outside comments and literals. */
int hkc_code_uses(const hkc_src *src, const char *id);
/* 1 unless k is a raw or grid kernel whose code, lens and extents do not
 * name n (hk_kernel_info_t.uses_n; info.c). */
int hkc_kernel_uses_n(const hkc_kernel *k);
/* 1 when the code calls a math function (a hint to split work sooner). */
int hkc_code_calls_math(const hkc_src *src);
/* 1 when it calls one that is more than a few instructions (not fabs,
 * sqrt, floor, fmin, copysign, ...: exp, tanh, erf, sigmoid, pow, ...). */
int hkc_code_calls_costly_math(const hkc_src *src);
/* 1 when name is a math function, macro or constant bodies may use. */
int hkc_is_math_name(const char *name);
int hkc_is_math_function(const char *name);
/* 1 when name is a C keyword (C11 and the GNU spellings). */
int hkc_is_c_keyword(const char *name);
int hkc_is_cxx_keyword(const char *name);
int hkc_is_type_name(const char *name);

#endif
